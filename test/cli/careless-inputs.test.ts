/**
 * Issue 13, item 7: the `ioi` CLI never surprises. A table of careless inputs across every command group, each
 * run in-process: each must end in one sentence on stderr, a non-zero exit and no stack trace (and with --json,
 * one `ok: false` object). The chain cases share one embedded devnet and one fixture.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAddress, parseEther, toHex, type Hex, type LocalAccount } from "viem";

import { SqliteStore } from "../../src/store/sqlite-store";
import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { runCli } from "../helpers/cli";
import { GIG_MIN_PROVIDER_BOND, GIG_ROLE, gigFixture, hardhatAccount } from "../helpers/fixtures";

const HASH: Hex = `0x${"ab".repeat(32)}`;
const SESSION: Hex = `0x${"cd".repeat(32)}`;
const ADDR = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const GOOD_KEY = { IOI_PRIVATE_KEY: "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a" };
/** Nothing listens here: every command that reaches for a node meets a dead RPC. */
const DEAD_RPC = ["--rpc", "http://127.0.0.1:9"];

function keyOf(index: number): Record<string, string> {
  const account = hardhatAccount(index) as LocalAccount & { getHdKey(): { privateKey: Uint8Array | null } };
  return { IOI_PRIVATE_KEY: toHex(account.getHdKey().privateKey!) };
}

type Result = Awaited<ReturnType<typeof runCli>>;

/** One sentence: stderr's first line ends a sentence, no line looks like a stack frame, the exit is non-zero. */
function expectOneSentenceFailure(result: Result, expected: string | RegExp, context: string): void {
  expect(result.code, `${context}: exit code (stderr: ${result.err})`).to.be.greaterThan(0);
  expect(result.err, `${context}: a stack trace`).to.not.match(/\n\s+at /);
  expect(result.err, `${context}: a stack trace`).to.not.match(/^\s+at .*:\d+:\d+/m);
  const first = result.err.split("\n")[0]!;
  expect(first, `${context}: no sentence`).to.match(/[.?!`)"]$/);
  if (typeof expected === "string") expect(result.err, context).to.contain(expected);
  else expect(result.err, context).to.match(expected);
  const last = result.out.split("\n").pop() ?? "";
  if (last.startsWith("{")) expect(JSON.parse(last), `${context}: JSON`).to.include({ ok: false });
}

describe("ioi: careless inputs end in one sentence and a non-zero exit", () => {
  let dir: string;
  let emptyDb: string;
  let badIcs: string;
  let notIcs: string;
  let garbage: string;

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-careless-"));
    emptyDb = path.join(dir, "empty.db");
    SqliteStore.open(emptyDb).close();
    badIcs = path.join(dir, "bad.json");
    writeFileSync(badIcs, "{ not json");
    notIcs = path.join(dir, "not-ics.json");
    writeFileSync(notIcs, JSON.stringify({ deadline: "1 day", maxPrice: "5", rubric: { tests: "all pass" }, version: "1" }));
    garbage = path.join(dir, "garbage.json");
    writeFileSync(garbage, JSON.stringify({ hello: "world" }));
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  const DB = () => ["--db", emptyDb];

  // [what, argv, env, expected fragment]
  const CASES: [string, () => string[], Record<string, string | undefined>, string | RegExp][] = [
    // Unknown things
    ["an unknown command", () => ["teleport"], {}, "unknown command 'teleport'"],
    ["a typo of a command", () => ["opne"], {}, "did you mean open?"],
    ["a typo of stream", () => ["steam"], {}, "did you mean stream?"],
    ["an unknown option", () => ["stream", "--frobnicate"], {}, "unknown option '--frobnicate'"],
    ["a typo of an option", () => ["open", "--deposti", "5"], {}, /unknown option '--deposti'; did you mean --deposit\?/],
    ["a positional argument", () => ["status", "extra"], {}, "too many arguments for 'status'"],
    ["an unknown gig subcommand", () => ["gig", "fnd"], {}, 'Did you mean "fund"?'],
    ["an unknown dispute subcommand", () => ["dispute", "settle"], {}, 'Unknown dispute subcommand "settle"'],
    ["the removed dispute escalate", () => ["dispute", "escalate"], {}, "`ioi dispute escalate` is gone"],
    ["an unknown case subcommand", () => ["case", "list"], {}, 'Unknown case subcommand "list"'],
    ["an unknown arbitrator subcommand", () => ["arbitrator", "stak"], {}, 'Did you mean "stake"?'],
    ["an unknown provider subcommand", () => ["provider", "regster"], {}, 'Did you mean "register"?'],
    ["an option missing its value", () => ["status", "--session"], {}, "argument missing"],
    ["an unknown gig option", () => ["gig", "fund", "--ammount", "5"], {}, "unknown option '--ammount'"],
    // Keys
    ["a missing key variable", () => ["open", "--provider", ADDR, "--deposit", "5"], { IOI_PRIVATE_KEY: undefined }, "Set IOI_PRIVATE_KEY"],
    ["a short key", () => ["open", "--provider", ADDR], { IOI_PRIVATE_KEY: "0x1234" }, "not a private key"],
    ["a key without 0x", () => ["close", "--session", SESSION], { IOI_PRIVATE_KEY: "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a" }, "not a private key"],
    ["a zero key", () => ["finalize", "--session", SESSION], { IOI_PRIVATE_KEY: `0x${"0".repeat(64)}` }, "not a valid secp256k1 private key"],
    ["a key above the curve order", () => ["finalize", "--session", SESSION], { IOI_PRIVATE_KEY: `0x${"f".repeat(64)}` }, "not a valid secp256k1 private key"],
    ["a mnemonic instead of a key", () => ["challenge", "--session", SESSION], { IOI_PRIVATE_KEY: "test test test test test test test test test test test junk" }, "not a private key"],
    ["a --key-env naming an unset variable", () => ["open", "--key-env", "NO_SUCH_VAR_13", "--provider", ADDR], {}, "Set NO_SUCH_VAR_13"],
    ["a missing key for provider bond", () => ["provider", "bond", "--amount", "5"], { IOI_PRIVATE_KEY: undefined }, "Set IOI_PRIVATE_KEY"],
    ["a missing key for deposit", () => ["deposit", "--session", SESSION, "--amount", "5"], { IOI_PRIVATE_KEY: undefined }, "Set IOI_PRIVATE_KEY"],
    ["a missing key for gig accept", () => ["gig", "accept", "--gig", "1"], { IOI_PRIVATE_KEY: undefined }, "Set IOI_PRIVATE_KEY"],
    ["a missing key for case appeal", () => ["case", "appeal", "--case", HASH], { IOI_PRIVATE_KEY: undefined }, "Set IOI_PRIVATE_KEY"],
    // Sessions
    ["a malformed session id", () => ["status", "--session", "0xnothex", ...DB()], GOOD_KEY, "--session must be 0x and 64 hex digits"],
    ["a short session id", () => ["export", "--session", "0xabc", ...DB()], {}, "--session must be 0x and 64 hex digits"],
    ["an unknown session (status)", () => ["status", "--session", SESSION, ...DB()], {}, "The store holds no channel"],
    ["an unknown session (export)", () => ["export", "--session", SESSION, ...DB()], {}, "The store holds no channel"],
    ["an unknown session (deposit)", () => ["deposit", "--session", SESSION, "--amount", "5", ...DB()], GOOD_KEY, "The store holds no channel"],
    ["a missing session for stream", () => ["stream", "-n", "5"], GOOD_KEY, "--session is required"],
    ["a missing session for close", () => ["close", ...DB()], GOOD_KEY, /--session is required|No EVM node/],
    // Streams
    ["streaming zero invocations", () => ["stream", "--session", SESSION, "-n", "0"], GOOD_KEY, "-n must be from 1"],
    ["streaming a negative count", () => ["stream", "--session", SESSION, "-n", "-5"], GOOD_KEY, "-n must be a whole number"],
    ["streaming a fraction", () => ["stream", "--session", SESSION, "-n", "2.5"], GOOD_KEY, "-n must be a whole number"],
    ["streaming without -n", () => ["stream", "--session", SESSION], GOOD_KEY, "-n is required"],
    ["zero invocations in flight", () => ["stream", "--session", SESSION, "-n", "5", "--inflight", "0"], GOOD_KEY, "--inflight must be from 1"],
    ["a commit interval beyond a day", () => ["stream", "--session", SESSION, "-n", "5", "--commit-seconds", "100000"], GOOD_KEY, "--commit-seconds must be from 0"],
    // Amounts and units
    ["a negative deposit", () => ["open", "--provider", ADDR, "--deposit", "-5"], GOOD_KEY, "--deposit must be a whole number of wei"],
    ["a zero deposit", () => ["open", "--provider", ADDR, "--deposit", "0"], GOOD_KEY, "--deposit must be more than zero"],
    ["a decimal deposit without a unit", () => ["open", "--provider", ADDR, "--deposit", "0.5"], GOOD_KEY, "an amount with its unit such as 0.5eth"],
    ["a deposit in an unknown unit", () => ["open", "--provider", ADDR, "--deposit", "5 btc"], GOOD_KEY, "--deposit must be a whole number of wei"],
    ["a deposit with too many decimals", () => ["open", "--provider", ADDR, "--deposit", "1.0000000001gwei"], GOOD_KEY, "more decimals than the unit allows"],
    ["a price in hex", () => ["open", "--provider", ADDR, "--deposit", "5", "--price", "0x10"], GOOD_KEY, "--price must be a whole number of wei"],
    ["a missing deposit", () => ["open", "--provider", ADDR], GOOD_KEY, "--deposit is required"],
    ["a malformed provider address", () => ["open", "--provider", "0x1234", "--deposit", "5"], GOOD_KEY, "--provider must be an address"],
    ["a missing provider", () => ["open", "--deposit", "5"], GOOD_KEY, "--provider is required"],
    ["a challenge window that is not a number", () => ["open", "--provider", ADDR, "--deposit", "5", "--challenge", "1h", ...DEAD_RPC], GOOD_KEY, /--challenge must be a whole number|No EVM node/],
    ["a zero top-up", () => ["deposit", "--session", SESSION, "--amount", "0"], GOOD_KEY, "--amount must be more than zero"],
    ["a negative top-up", () => ["deposit", "--session", SESSION, "--amount", "-1"], GOOD_KEY, "--amount must be a whole number of wei"],
    ["a min-received above the amount", () => ["deposit", "--session", SESSION, "--amount", "5", "--min-received", "6"], GOOD_KEY, "cannot exceed --amount"],
    ["a top-up in ether without a unit", () => ["deposit", "--session", SESSION, "--amount", "0.1"], GOOD_KEY, "an amount with its unit"],
    ["a zero gig amount", () => ["gig", "fund", "--amount", "-3", "--ics", HASH], GOOD_KEY, "--amount must be a whole number"],
    ["a gig amount with a unit", () => ["gig", "fund", "--amount", "1eth", "--ics", HASH], GOOD_KEY, "--amount must be a whole number"],
    ["a zero provider bond", () => ["provider", "bond", "--amount", "0", ...DEAD_RPC], GOOD_KEY, /--amount must be more than zero|No EVM node/],
    ["a negative arbitrator stake", () => ["arbitrator", "stake", "--amount", "-5"], GOOD_KEY, "--amount must be a decimal number of bond tokens"],
    ["a stake with 19 decimals", () => ["arbitrator", "stake", "--amount", "0.1234567890123456789"], GOOD_KEY, "at most 18 decimals"],
    ["a zero arbitrator unstake", () => ["arbitrator", "unstake", "--amount", "0"], GOOD_KEY, "--amount must be more than zero"],
    // Gigs
    ["a gig id that is not a number", () => ["gig", "release", "--gig", "one"], GOOD_KEY, "--gig must be a whole number"],
    ["gig id 0", () => ["gig", "show", "--gig", "0"], {}, "--gig must be a gig id from 1"],
    ["a gig id above uint64", () => ["gig", "refund", "--gig", (1n << 64n).toString()], GOOD_KEY, "--gig must be a gig id from 1"],
    ["a missing gig id", () => ["gig", "cancel"], GOOD_KEY, "--gig is required"],
    ["a malformed deliverable hash", () => ["gig", "deliver", "--gig", "1", "--deliverable", "0x12"], GOOD_KEY, "--deliverable must be 0x and 64 hex digits"],
    ["both --ics and --ics-file", () => ["gig", "fund", "--amount", "1", "--ics", HASH, "--ics-file", "x.json"], GOOD_KEY, "Give exactly one of --ics HASH and --ics-file PATH"],
    ["neither --ics nor --ics-file", () => ["gig", "fund", "--amount", "1"], GOOD_KEY, "Give exactly one of --ics HASH and --ics-file PATH"],
    ["an ICS file that does not exist", () => ["gig", "fund", "--amount", "1", "--ics-file", "/nonexistent/ics.json"], GOOD_KEY, "Cannot read --ics-file"],
    ["an ICS file that is not JSON", () => ["gig", "fund", "--amount", "1", "--ics-file", badIcs], GOOD_KEY, /JSON|YAML|document/i],
    ["a JSON file that is not an ICS", () => ["gig", "fund", "--amount", "1", "--ics-file", notIcs], GOOD_KEY, /ICS in .*not-ics\.json/],
    ["a zero deadline", () => ["gig", "fund", "--amount", "1", "--ics", HASH, "--deadline", "0"], GOOD_KEY, "--deadline must be from 1"],
    ["a dispute window of a second", () => ["gig", "fund", "--amount", "1", "--ics", HASH, "--dispute-window", "1"], GOOD_KEY, "--dispute-window must be from"],
    ["a malformed gig asset", () => ["gig", "fund", "--amount", "1", "--ics", HASH, "--asset", "usdc"], GOOD_KEY, "--asset must be an address"],
    ["a malformed --gig-escrow", () => ["gig", "show", "--gig", "1", "--gig-escrow", "0x12"], {}, "--gig-escrow must be an address"],
    ["gig vet without a deliverable", () => ["gig", "vet", "--ics-file", notIcs], {}, /--deliverable-dir is required|ICS/],
    // Disputes, cases, arbitrators
    ["respond without --case", () => ["dispute", "respond"], GOOD_KEY, "--case is required"],
    ["a malformed case id", () => ["case", "finalize", "--case", "12"], GOOD_KEY, "--case must be 0x and 64 hex digits"],
    ["case draw without --case", () => ["case", "draw"], GOOD_KEY, "--case is required"],
    ["a malformed package", () => ["dispute", "open", "--package", garbage, ...DEAD_RPC], GOOD_KEY, /package|ChallengePackage|No EVM node/i],
    ["a package file that does not exist", () => ["dispute", "open", "--package", "/nonexistent/case.json"], GOOD_KEY, /Cannot read|does not exist|no such file/i],
    ["build-gig at lane 2", () => ["dispute", "build-gig", "--gig", "1", "--ics-file", notIcs, "--suite-dir", dir, "--deliverable-dir", dir, "--lane", "2", "--out", "x.json"], GOOD_KEY, "--lane"],
    ["build-session at seq 0", () => ["dispute", "build-session", "--session", SESSION, "--seq", "0", "--out", "x.json"], GOOD_KEY, "--seq"],
    ["arbitrator register with a short DID hash", () => ["arbitrator", "register", "--did-hash", "0x12", "--mldsa-hash", HASH], GOOD_KEY, "--did-hash must be 0x and 64 hex digits"],
    ["arbitrator show with a malformed address", () => ["arbitrator", "show", "--address", "bob"], {}, "--address must be an address"],
    ["arbitrator claim of an unknown asset", () => ["arbitrator", "claim", "--asset", "btc"], GOOD_KEY, "--asset must be an ERC-20 address or eth"],
    ["arbitrate without a package", () => ["arbitrate", "--case", HASH], GOOD_KEY, /--package is required/],
    ["arbitrate with a negative quorum", () => ["arbitrate", "--case", HASH, "--package", garbage, "--devnet-quorum", "-1"], GOOD_KEY, /--devnet-quorum|package/i],
    // Registry and listings
    ["provider register without an endpoint", () => ["provider", "register", "--did-hash", HASH, "--mldsa-hash", HASH], GOOD_KEY, "--endpoint is required"],
    ["provider register with an endpoint over 256 bytes", () => ["provider", "register", "--endpoint", "x".repeat(257)], GOOD_KEY, "--endpoint must be 1 to 256 bytes"],
    ["provider register with a short capabilities hash", () => ["provider", "register", "--endpoint", "tcp://h:1", "--did-hash", HASH, "--mldsa-hash", HASH, "--capabilities-hash", "0x1"], GOOD_KEY, "--capabilities-hash must be 0x and 64 hex digits"],
    ["provider show with a malformed address", () => ["provider", "show", "--address", "0x1"], {}, "--address must be an address"],
    ["provider unbond without an amount", () => ["provider", "unbond", ...DEAD_RPC], GOOD_KEY, /--amount is required|No EVM node/],
    ["balance of a malformed address", () => ["balance", "--address", "alice"], {}, "--address must be an address"],
    ["gigs --mine from a fractional block", () => ["gigs", "--mine", "--from-block", "1.5", "--address", ADDR, ...DEAD_RPC, "--gig-escrow", ADDR], {}, /--from-block must be a whole number|No EVM node/],
    ["cases with a malformed DisputeManager", () => ["cases", "--dispute-manager", "0x12"], {}, "--dispute-manager must be an address"],
    // Dead RPC and dead peer
    ["a dead RPC for status", () => ["status", "--session", SESSION, ...DEAD_RPC, ...DB()], {}, /No EVM node|holds no channel/],
    ["a dead RPC for gig show", () => ["gig", "show", "--gig", "1", "--gig-escrow", ADDR, ...DEAD_RPC], {}, "No EVM node answers at http://127.0.0.1:9"],
    ["a dead RPC for balance", () => ["balance", "--address", ADDR, "--escrow", ADDR, ...DEAD_RPC], {}, "No EVM node answers"],
    ["a dead RPC for provider show", () => ["provider", "show", "--address", ADDR, "--registry", ADDR, ...DEAD_RPC], {}, "No EVM node answers"],
    ["a non-loopback peer", () => ["open", "--provider", ADDR, "--deposit", "5", "--peer", "example.com:7000", ...DEAD_RPC], GOOD_KEY, /--peer must be|No EVM node/],
    ["a malformed RPC URL", () => ["gig", "show", "--gig", "1", "--gig-escrow", ADDR, "--rpc", "not a url"], {}, /No EVM node|URL/],
    ["--json on a usage mistake", () => ["gig", "show", "--gig", "0", "--json"], {}, "--gig must be a gig id from 1"],
  ];

  it(`covers at least 80 careless inputs (${CASES.length})`, () => {
    expect(CASES.length).to.be.at.least(80);
  });

  for (const [what, argv, env, expected] of CASES) {
    it(`refuses ${what}`, async () => {
      const result = await runCli(argv(), env);
      expectOneSentenceFailure(result, expected, what);
    });
  }

  it("prints --version and per-option help with defaults and examples, exit 0", async () => {
    const version = await runCli(["--version"]);
    expect(version.code).to.equal(0);
    expect(version.out).to.match(/^\d+\.\d+\.\d+/);
    const help = await runCli(["deposit", "--help"]);
    expect(help.code).to.equal(0);
    expect(help.out).to.contain("--min-received WEI");
    expect(help.out).to.contain("Examples:");
    expect((await runCli(["stream", "--help"])).out).to.contain("(default: 16)");
  });

  describe("piped output", () => {
    const ROOT = path.join(__dirname, "..", "..");
    // 100,000 lines (several MB, far beyond a pipe's buffer) printed before `ioi --version` exits through
    // runProcess, the entry bin/ioi.js uses: the reader must get every line, and a reader that leaves early
    // must not make the process print EPIPE.
    const script = `for (let i = 0; i < 100000; i++) console.log("line " + i + " ${"x".repeat(40)}"); require("./src/cli/ioi").runProcess(["--version"]);`;
    const sh = (pipe: string) =>
      spawnSync("bash", ["-c", `set -o pipefail; node --require tsx/cjs -e '${script}' ${pipe}`], { cwd: ROOT, encoding: "utf8", maxBuffer: 64 << 20 });

    it("loses nothing when piped to cat", () => {
      const result = sh("| cat");
      expect(result.status, result.stderr).to.equal(0);
      const lines = result.stdout.trimEnd().split("\n");
      expect(lines.length).to.equal(100_001);
      expect(lines[99_999]).to.match(/^line 99999 /);
      expect(lines[100_000]).to.match(/^\d+\.\d+\.\d+/);
    });

    it("ends quietly when the reader leaves after one byte", () => {
      const result = sh("| head -c 1");
      expect(result.stdout).to.equal("l");
      expect(result.stderr).to.not.contain("EPIPE");
      expect(result.stderr).to.not.match(/\n\s+at /);
      expect(result.status).to.equal(0);
    });
  });

  describe("against a node", () => {
    let rpc: EmbeddedRpc | undefined;

    before(async () => {
      rpc = await serveEmbeddedNetwork(hre);
    });

    after(async () => {
      await rpc?.close();
    });

    it("registers, bonds, shows, unbonds a provider and lists gigs, moving exactly the bonded tokens", async () => {
      const c = await loadFixture(gigFixture);
      const idle = getAddress(c.idleProvider.account.address);
      const base = ["--json", "--rpc", rpc!.url, "--registry", c.registry.address];
      const run = (argv: string[], index: number) => runCli([...argv, ...base], keyOf(index));
      const json = (r: Result) => JSON.parse(r.out.split("\n").pop()!) as Record<string, unknown>;

      const shown = await run(["provider", "show"], GIG_ROLE.idleProvider);
      expect(shown.code, shown.err).to.equal(0);
      expect(json(shown)).to.include({ provider: idle, registered: true, active: false, bond: "0" });

      const walletBefore = await c.token.read.balanceOf([idle]);
      const registryBefore = await c.token.read.balanceOf([c.registry.address]);
      const bonded = await run(["provider", "bond", "--amount", "100"], GIG_ROLE.idleProvider);
      expect(bonded.code, bonded.err).to.equal(0);
      expect(json(bonded)).to.include({ bonded: GIG_MIN_PROVIDER_BOND.toString(), activeProvider: true });
      expect(await c.token.read.balanceOf([idle])).to.equal(walletBefore - GIG_MIN_PROVIDER_BOND);
      expect(await c.token.read.balanceOf([c.registry.address])).to.equal(registryBefore + GIG_MIN_PROVIDER_BOND);

      // Bonding more than the wallet holds: one sentence, nothing sent.
      const tooMuch = await run(["provider", "bond", "--amount", "1000000"], GIG_ROLE.idleProvider);
      expectOneSentenceFailure(tooMuch, "less than the 1000000 LGAS to bond", "bond beyond the wallet");
      expect(await c.token.read.balanceOf([c.registry.address])).to.equal(registryBefore + GIG_MIN_PROVIDER_BOND);

      const unbonded = await run(["provider", "unbond", "--amount", "40.5"], GIG_ROLE.idleProvider);
      expect(unbonded.code, unbonded.err).to.equal(0);
      expect(json(unbonded)).to.include({ unbonding: parseEther("40.5").toString(), pending: parseEther("40.5").toString() });
      expect(unbonded.out).to.contain("40.5 LGAS");
      const early = await run(["provider", "withdraw"], GIG_ROLE.idleProvider);
      expectOneSentenceFailure(early, "40.5 LGAS unbonds at", "withdraw before the delay");

      // Unbonding more than is active: refused before sending.
      const over = await run(["provider", "unbond", "--amount", "100"], GIG_ROLE.idleProvider);
      expectOneSentenceFailure(over, "less than the 100 LGAS to unbond", "unbond beyond the active bond");
      expect(await c.token.read.balanceOf([c.registry.address])).to.equal(registryBefore + GIG_MIN_PROVIDER_BOND);
      expect(await c.token.read.balanceOf([idle])).to.equal(walletBefore - GIG_MIN_PROVIDER_BOND);

      const balance = await runCli(["balance", "--address", idle, ...base, "--gig-escrow", c.gig.address, "--escrow", c.gig.address, "--db", path.join(dir, "balance.db")]);
      expect(balance.code, balance.err).to.equal(0);
      expect(balance.out).to.contain("provider bond 59.5 LGAS active, 40.5 LGAS unbonding");

      // A gig the client funds shows up in its --mine list, not in a stranger's.
      const funded = await runCli(["gig", "fund", "--json", "--amount", "5000", "--ics", HASH, "--rpc", rpc!.url, "--gig-escrow", c.gig.address], keyOf(GIG_ROLE.client));
      expect(funded.code, funded.err).to.equal(0);
      expect(funded.out).to.contain("0.000000000000005 ETH (5000 wei)");
      const mine = await runCli(["gigs", "--mine", "--json", "--rpc", rpc!.url, "--gig-escrow", c.gig.address], keyOf(GIG_ROLE.client));
      expect(mine.code, mine.err).to.equal(0);
      expect((json(mine).gigs as unknown[]).length).to.equal(1);
      const theirs = await runCli(["gigs", "--mine", "--json", "--rpc", rpc!.url, "--gig-escrow", c.gig.address], keyOf(GIG_ROLE.stranger));
      expect((json(theirs).gigs as unknown[]).length).to.equal(0);
    });
  });
});
