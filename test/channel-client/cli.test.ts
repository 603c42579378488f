import { expect } from "chai";

import { runCli } from "../helpers/cli";

/** Runs the CLI in-process and captures what it prints. */
const run = runCli;

const COMMANDS = ["provider", "open", "stream", "status", "close", "challenge", "finalize", "watchtower", "export"];

describe("ioi CLI", () => {
  it("lists every command in its help", async () => {
    const { code, out } = await run(["--help"]);
    expect(code).to.equal(0);
    for (const command of COMMANDS) expect(out).to.contain(`  ${command} `);
  });

  for (const command of COMMANDS) {
    it(`has --help for ${command}`, async () => {
      const { code, out } = await run([command, "--help"]);
      expect(code).to.equal(0);
      expect(out).to.contain(`Usage: ioi ${command}`);
      expect(out).to.contain("--json");
    });
  }

  it("answers an unknown command and an unknown option with the usage, exit code 2", async () => {
    expect((await run(["teleport"])).code).to.equal(2);
    const bad = await run(["stream", "--frobnicate"]);
    expect(bad.code).to.equal(2);
    expect(bad.err).to.contain("Usage: ioi stream");
  });

  it("says which key is missing instead of failing deep inside", async () => {
    const { code, err, out } = await run(["open", "--json", "--provider", "0x90F79bf6EB2c4f870365E785982E1f101E93b906"], { IOI_PRIVATE_KEY: undefined });
    expect(code).to.equal(2);
    expect(err).to.contain("UsageError: Set IOI_PRIVATE_KEY");
    expect(JSON.parse(out.split("\n").pop()!)).to.deep.include({ ok: false, error: "UsageError" });
  });

  it("refuses a malformed key, session id and amount with a sentence naming the field", async () => {
    const key = { IOI_PRIVATE_KEY: "0x1234" };
    expect((await run(["finalize", "--session", "0xabc"], key)).err).to.contain("not a private key");
    const goodKey = { IOI_PRIVATE_KEY: "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a" };
    const session = await run(["status", "--session", "0xnothex", "--db", ":memory:"], goodKey);
    expect(session.code).to.equal(2);
    expect(session.err).to.contain("--session must be 0x and 64 hex digits");
  });
});
