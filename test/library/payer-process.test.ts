/**
 * The bench's payer process (scripts/payer-process.js, decision 0012): bad input gets one sentence and exit 2,
 * before it loads anything.
 */
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import path from "node:path";

const SCRIPT = path.join(__dirname, "..", "..", "scripts", "payer-process.js");

const run = (args: string[], key?: string) => {
  const { IOI_PRIVATE_KEY: _drop, ...env } = process.env;
  void _drop;
  return spawnSync(process.execPath, [SCRIPT, ...args], { env: key === undefined ? env : { ...env, IOI_PRIVATE_KEY: key }, encoding: "utf8" });
};

describe("The bench's payer process", () => {
  it("refuses a missing store file, an extra argument, and a missing or malformed key with its usage line and exit 2", () => {
    const key = `0x${"11".repeat(32)}`;
    for (const [args, k] of [[[], key], [["never-opened.db", "extra"], key], [["never-opened.db"], undefined], [["never-opened.db"], "0x12"]] as [string[], string | undefined][]) {
      const result = run(args, k);
      expect(result.status, JSON.stringify([args, k])).to.equal(2);
      expect(result.stderr.trim().split("\n")).to.deep.equal(["usage: IOI_PRIVATE_KEY=0x<64 hex digits> node scripts/payer-process.js <store file>"]);
      expect(result.stdout).to.equal("");
    }
  });
});
