/**
 * The password prompt (issue 29 item 4): a signing command given `--account` and no `--password-file` asks for
 * the password at the terminal without echoing it; without a terminal on stdin it refuses in one sentence with
 * exit 2. The terminal is a real pseudo-terminal (util-linux `script`), the command a real `bin/ioi.js` process.
 * The RPC is a closed port, so a command that got as far as the chain proves the key was unlocked.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";

import { expect } from "chai";
import { toHex, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { runCli } from "../helpers/cli";
import { HARDHAT_MNEMONIC } from "../helpers/fixtures";

const ROOT = path.join(__dirname, "..", "..");
const PASSWORD = "correct horse battery staple";
const PAYEE = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

describe("ioi --account without --password-file: a prompt that does not echo, or one sentence without a terminal", function () {
  this.timeout(120_000);
  let dir: string;
  let env: Record<string, string>;
  let closedRpc: string;

  before(async function () {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-prompt-"));
    const pw = path.join(dir, "pw");
    writeFileSync(pw, `${PASSWORD}\n`);
    env = { IOI_KEYSTORE_DIR: path.join(dir, "keystore"), IOI_CLI_SOURCE: "1" };
    const key = toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: 2 }).getHdKey().privateKey!) as Hex;
    const imported = await runCli(["account", "import", "--key-env", "PAYER_KEY", "--name", "payer", "--password-file", pw, "--scrypt-n", "1024"], { ...env, PAYER_KEY: key, IOI_PRIVATE_KEY: undefined });
    expect(imported.code, imported.err).to.equal(0);
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    closedRpc = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    await new Promise((r) => server.close(r));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const openArgs = () => ["open", "--account", "payer", "--provider", PAYEE, "--deposit", "1000", "--price", "1", "--rpc", closedRpc, "--db", path.join(dir, "payer.db")];

  /** Runs `ioi open --account payer` on a pseudo-terminal, types `typed` once asked, and returns all the terminal showed. */
  function atTerminal(typed: string): Promise<{ code: number | null; screen: string }> {
    const command = [process.execPath, path.join(ROOT, "bin", "ioi.js"), ...openArgs()].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
    const child = spawn("script", ["-qec", command, "/dev/null"], { cwd: ROOT, env: { ...process.env, ...env, IOI_PRIVATE_KEY: "" }, stdio: ["pipe", "pipe", "pipe"] });
    let screen = "";
    let answered = false;
    const onData = (chunk: Buffer) => {
      screen += chunk.toString("utf8");
      if (!answered && screen.includes("Password for payer: ")) {
        answered = true;
        child.stdin!.write(`${typed}\r`);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    return new Promise((resolve) => child.once("exit", (code) => resolve({ code, screen })));
  }

  it("asks at a terminal, shows nothing typed, and unlocks the keystore (the command reaches the chain)", async function () {
    const { code, screen } = await atTerminal(PASSWORD);
    expect(screen).to.contain("Password for payer: ");
    expect(screen).not.to.contain("horse"); // not echoed
    expect(screen).to.contain("No EVM node answers at"); // unlocked: it went on to the RPC
    expect(code).to.equal(2);
  });

  it("a wrong password typed at the prompt is refused in one sentence", async function () {
    const { code, screen } = await atTerminal("not the password");
    expect(screen).not.to.contain("not the password");
    expect(screen).to.contain("Wrong password for the account payer: the keystore's MAC does not match.");
    expect(screen).not.to.contain("    at ");
    expect(code).to.equal(2);
  });

  it("without a terminal on stdin and without --password-file: one sentence, exit 2, nothing asked", async function () {
    const child = spawnSync(process.execPath, [path.join(ROOT, "bin", "ioi.js"), ...openArgs()], { cwd: ROOT, env: { ...process.env, ...env, IOI_PRIVATE_KEY: "" }, input: "", encoding: "utf8" });
    expect(child.status).to.equal(2);
    expect(child.stderr).not.to.contain("Password for");
    expect(child.stderr.split("\n")[0]).to.equal("ioi open failed — UsageError: --account needs --password-file FILE: stdin is not a terminal, so the password of payer cannot be asked for.");
  });
});
