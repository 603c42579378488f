/**
 * Issue 13, item 7: the `ioi` CLI never surprises. A table of careless inputs across every command group, each
 * run in-process: each must end in one sentence on stderr, a non-zero exit and no stack trace (and with --json,
 * one `ok: false` object). The chain cases share one embedded devnet and one fixture.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAddress, parseEther, toHex, type Hex, type LocalAccount } from "viem";

import { SqliteStore } from "../../channel-client/store/sqlite-store";
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
  let fifo: string;
  let folder: string;
  let bigTerms: string;
  let bigIcs: string;
  let existingOut: string;
  let junkKey: string;
  let arrayKey: string;
  let badRequests: string;
  const missingDb = () => path.join(dir, "nowhere", "missing.db");

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
    // Issue 28 item 9: a FIFO (nobody writes it: reading it would hang), a directory, files past their bounds.
    fifo = path.join(dir, "fifo");
    expect(spawnSync("mkfifo", [fifo]).status).to.equal(0);
    folder = path.join(dir, "folder");
    mkdirSync(folder);
    bigTerms = path.join(dir, "big-terms.json");
    writeFileSync(bigTerms, `{"pad":"${"x".repeat(70 * 1024)}"}`);
    bigIcs = path.join(dir, "big-ics.json");
    writeFileSync(bigIcs, `{"pad":"${"x".repeat((1 << 20) + 10)}"}`);
    existingOut = path.join(dir, "key.json");
    writeFileSync(existingOut, '{"grant":{},"privateKey":"0x01"}\n');
    junkKey = path.join(dir, "junk-key.json");
    writeFileSync(junkKey, "not json at all");
    arrayKey = path.join(dir, "array-key.json");
    writeFileSync(arrayKey, "[1,2,3]");
    badRequests = path.join(dir, "bad-requests.jsonl");
    writeFileSync(badRequests, `${'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'.repeat(3)}{"jsonrpc":"2.0","id":4,"method":"ping","extra":1}\n`);
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
    // Issue 28 item 9: files must be regular and bounded — FIFOs, directories and oversized files refused at once.
    ["open --terms-file on a FIFO", () => ["open", "--provider", ADDR, "--deposit", "5", "--terms-file", fifo], GOOD_KEY, "is not a regular file"],
    ["gig fund --ics-file on a FIFO", () => ["gig", "fund", "--amount", "1", "--ics-file", fifo], GOOD_KEY, "is not a regular file"],
    ["provider --terms-file on a FIFO", () => ["provider", "--terms-file", fifo], GOOD_KEY, "is not a regular file"],
    ["import --terms-file on a FIFO", () => ["import", "--session", SESSION, "--terms-file", fifo], GOOD_KEY, "is not a regular file"],
    ["stream --request-file on a FIFO", () => ["stream", "--session", SESSION, "--request-file", fifo], GOOD_KEY, "is not a regular file"],
    ["call --request-file on a FIFO", () => ["call", "--session", SESSION, "--request-file", fifo], GOOD_KEY, "is not a regular file"],
    ["stream --session-key on a FIFO", () => ["stream", "--session", SESSION, "-n", "1", "--session-key", fifo], GOOD_KEY, "is not a regular file"],
    ["call --session-key on a FIFO", () => ["call", "--session", SESSION, "--method", "ping", "--session-key", fifo], GOOD_KEY, "is not a regular file"],
    ["open --terms-file on a directory", () => ["open", "--provider", ADDR, "--deposit", "5", "--terms-file", folder], GOOD_KEY, "is not a regular file"],
    ["gig fund --ics-file on a directory", () => ["gig", "fund", "--amount", "1", "--ics-file", folder], GOOD_KEY, "is not a regular file"],
    ["stream --request-file on a directory", () => ["stream", "--session", SESSION, "--request-file", folder], GOOD_KEY, "is not a regular file"],
    ["call --request-file on a directory", () => ["call", "--session", SESSION, "--request-file", folder], GOOD_KEY, "is not a regular file"],
    ["a terms file past 64 KiB", () => ["open", "--provider", ADDR, "--deposit", "5", "--terms-file", bigTerms], GOOD_KEY, /terms-file .*big-terms\.json.*(bytes|limit|at most)/],
    ["an ICS file past 1 MiB", () => ["gig", "fund", "--amount", "1", "--ics-file", bigIcs], GOOD_KEY, /ics-file .*big-ics\.json.*(bytes|limit|at most)/],
    ["a session-key file past 64 KiB", () => ["stream", "--session", SESSION, "-n", "1", "--session-key", bigIcs], GOOD_KEY, /session-key .*(bytes|limit|at most)/],
    ["a session-key file that is not JSON", () => ["stream", "--session", SESSION, "-n", "1", "--session-key", junkKey], GOOD_KEY, "it must be the file `ioi session-key authorize --out` wrote"],
    ["a session-key file holding an array", () => ["call", "--session", SESSION, "--method", "ping", "--session-key", arrayKey], GOOD_KEY, "it must be the file `ioi session-key authorize --out` wrote"],
    ["a session-key file that does not exist", () => ["stream", "--session", SESSION, "-n", "1", "--session-key", "/nonexistent/key.json"], GOOD_KEY, "Cannot read --session-key"],
    ["a request file with an unknown key on line 4", () => ["stream", "--session", SESSION, "--request-file", badRequests], GOOD_KEY, 'line 4 has an unknown key "extra"'],
    ["a session-key grant file as --terms-file", () => ["open", "--provider", ADDR, "--deposit", "5", "--terms-file", existingOut], GOOD_KEY, /terms/i],
    // Nothing secret overwritten without --force.
    ["session-key authorize --out over an existing key file", () => ["session-key", "authorize", "--session", SESSION, "--cap", "1", "--out", existingOut], GOOD_KEY, "exists (it may hold another session key's grant and private key)"],
    ["session-key authorize --out over an existing file, --key given", () => ["session-key", "authorize", "--session", SESSION, "--cap", "1", "--key", ADDR, "--out", existingOut], GOOD_KEY, "add --force to overwrite it"],
    // On-chain writes validate their inputs first: nothing is sent.
    ["provider register --capabilities that is not JSON", () => ["provider", "register", "--endpoint", "tcp://h:1", "--did-hash", HASH, "--mldsa-hash", HASH, "--capabilities", "{not json"], GOOD_KEY, "--capabilities is not valid JSON"],
    ["provider register --capabilities that is an array", () => ["provider", "register", "--endpoint", "tcp://h:1", "--did-hash", HASH, "--mldsa-hash", HASH, "--capabilities", "[1,2]"], GOOD_KEY, "--capabilities must be a JSON object"],
    ["provider register --capabilities that is a string", () => ["provider", "register", "--endpoint", "tcp://h:1", "--did-hash", HASH, "--mldsa-hash", HASH, "--capabilities", '"gpu"'], GOOD_KEY, "--capabilities must be a JSON object"],
    ["provider register --capabilities that is a number", () => ["provider", "register", "--endpoint", "tcp://h:1", "--did-hash", HASH, "--mldsa-hash", HASH, "--capabilities", "42"], GOOD_KEY, "--capabilities must be a JSON object"],
    ["provider register --capabilities with a trailing comma", () => ["provider", "register", "--endpoint", "tcp://h:1", "--did-hash", HASH, "--mldsa-hash", HASH, "--capabilities", '{"gpu":"none",}'], GOOD_KEY, "--capabilities is not valid JSON"],
    ["provider register with both capabilities options", () => ["provider", "register", "--endpoint", "tcp://h:1", "--did-hash", HASH, "--mldsa-hash", HASH, "--capabilities", "{}", "--capabilities-hash", HASH], GOOD_KEY, "not both"],
    ["provider register with an empty endpoint", () => ["provider", "register", "--endpoint", "", "--did-hash", HASH, "--mldsa-hash", HASH, "--capabilities", "{}"], GOOD_KEY, /--endpoint (is required|must be)/],
    // Workers get a clean environment: the node's keys are never passed (issue 28 item 3).
    ["--worker-env IOI_PRIVATE_KEY", () => ["provider", "--price", "1", "--worker-env", "IOI_PRIVATE_KEY", "--worker", "node", "x.js"], GOOD_KEY, "--worker-env IOI_PRIVATE_KEY would hand the worker a key of the node"],
    ["--worker-env naming the --key-env variable", () => ["provider", "--price", "1", "--key-env", "MY_NODE_KEY", "--worker-env", "MY_NODE_KEY", "--worker", "node", "x.js"], { MY_NODE_KEY: GOOD_KEY.IOI_PRIVATE_KEY }, "--worker-env MY_NODE_KEY would hand the worker a key of the node"],
    ["--worker-env IOI_KEYSTORE_PASSWORD", () => ["provider", "--price", "1", "--worker-env", "IOI_KEYSTORE_PASSWORD", "--worker", "node", "x.js"], GOOD_KEY, "would hand the worker a key of the node"],
    ["--worker-env IOI_API_TOKEN", () => ["provider", "--price", "1", "--worker-env", "IOI_API_TOKEN", "--worker", "node", "x.js"], GOOD_KEY, "would hand the worker a key of the node"],
    ["--worker-env that is not a variable name", () => ["provider", "--price", "1", "--worker-env", "BAD NAME", "--worker", "node", "x.js"], GOOD_KEY, "is not an environment variable name"],
    ["--worker-env with a value", () => ["provider", "--price", "1", "--worker-env", "FOO=bar", "--worker", "node", "x.js"], GOOD_KEY, "is not an environment variable name"],
    ["--worker-env without --worker", () => ["provider", "--price", "1", "--worker-env", "PATH"], GOOD_KEY, "--worker-env goes with --worker CMD"],
    // Stores: commands that act on a stored channel never create a store.
    ["status --session on a store that does not exist", () => ["status", "--session", SESSION, "--db", missingDb()], {}, "does not exist; check --db"],
    ["results on a store that does not exist", () => ["results", "--session", SESSION, "--db", missingDb()], {}, "does not exist; check --db"],
    ["status with a PostgreSQL --db (only `ioi provider` serves from one)", () => ["status", "--session", SESSION, "--db", "postgres://ioi:s3cret@127.0.0.1:5432/ioi"], {}, "only `ioi provider` serves from PostgreSQL"],
    ["export on a store that does not exist", () => ["export", "--session", SESSION, "--db", missingDb()], {}, "does not exist; check --db"],
    ["deposit on a store that does not exist", () => ["deposit", "--session", SESSION, "--amount", "5", "--db", missingDb()], GOOD_KEY, "does not exist; check --db"],
    ["close on a store that does not exist", () => ["close", "--session", SESSION, "--db", missingDb(), ...DEAD_RPC], GOOD_KEY, "does not exist; check --db"],
    ["finalize on a store that does not exist", () => ["finalize", "--session", SESSION, "--db", missingDb(), ...DEAD_RPC], GOOD_KEY, "does not exist; check --db"],
    ["challenge on a store that does not exist", () => ["challenge", "--session", SESSION, "--db", missingDb(), ...DEAD_RPC], GOOD_KEY, "does not exist; check --db"],
    ["anchor on a store that does not exist", () => ["anchor", "--session", SESSION, "--db", missingDb(), ...DEAD_RPC], GOOD_KEY, "does not exist; check --db"],
    ["session-key authorize on a store that does not exist", () => ["session-key", "authorize", "--session", SESSION, "--cap", "1", "--key", ADDR, "--db", missingDb()], GOOD_KEY, "does not exist; check --db"],
    ["session-key list on a store that does not exist", () => ["session-key", "list", "--session", SESSION, "--db", missingDb()], {}, "does not exist; check --db"],
    ["results of a session the store does not hold", () => ["results", "--session", SESSION, ...DB()], {}, "The store holds no channel"],
    ["results from a negative seq", () => ["results", "--session", SESSION, "--from-seq", "-1", ...DB()], {}, "--from-seq must be a whole number"],
    ["results from a fractional seq", () => ["results", "--session", SESSION, "--from-seq", "1.5", ...DB()], {}, "--from-seq must be a whole number"],
    // Confirmations before consequences.
    ["session-key revoke --all without --yes", () => ["session-key", "revoke", "--all", ...DEAD_RPC], GOOD_KEY, "Revoking every session key ends each channel"],
    ["session-key revoke --all with --key", () => ["session-key", "revoke", "--all", "--key", ADDR], GOOD_KEY, "give it alone"],
    ["session-key revoke without --key", () => ["session-key", "revoke", "--session", SESSION, ...DB()], GOOD_KEY, "--key is required"],
    ["session-key revoke with a malformed key", () => ["session-key", "revoke", "--session", SESSION, "--key", "0x12", ...DB()], GOOD_KEY, "--key must be an address"],
    ["session-key authorize with --methods of empty names", () => ["session-key", "authorize", "--session", SESSION, "--cap", "1", "--methods", "tools/call,,ping", "--key", ADDR, ...DB()], GOOD_KEY, /--methods must be|holds no channel/],
    ["session-key authorize for a year and a day", () => ["session-key", "authorize", "--session", SESSION, "--cap", "1", "--expires-in", String(366 * 86400), "--key", ADDR, ...DB()], GOOD_KEY, "--expires-in must be from 1"],
    ["session-key authorize with a cap in btc", () => ["session-key", "authorize", "--session", SESSION, "--cap", "1btc", "--key", ADDR, ...DB()], GOOD_KEY, /--cap must be|holds no channel/],
    ["session-key authorize with both --ref and --session", () => ["session-key", "authorize", "--session", SESSION, "--ref", garbage, "--cap", "1", "--key", ADDR], GOOD_KEY, "not both"],
    ["session-key list with a --ref that is not a reference", () => ["session-key", "list", "--ref", garbage], {}, "is not a channel reference"],
    ["session-key list with a --ref on a FIFO", () => ["session-key", "list", "--ref", badIcs], {}, /is not a channel reference|Cannot read --ref/],
    ["stream with --peer and a bad port", () => ["stream", "--session", SESSION, "-n", "1", "--peer", "127.0.0.1:99999"], GOOD_KEY, "--peer must be HOST:PORT"],
    ["stream with more in flight than allowed", () => ["stream", "--session", SESSION, "-n", "5", "--inflight", "5000"], GOOD_KEY, "--inflight must be from 1"],
    ["stream with a commit interval that is not a number", () => ["stream", "--session", SESSION, "-n", "5", "--commit-every", "often"], GOOD_KEY, "--commit-every must be a whole number"],
    ["stream more than ten million", () => ["stream", "--session", SESSION, "-n", "10000001"], GOOD_KEY, "-n must be from 1"],
    ["dispute open without a package, with --yes", () => ["dispute", "open", "--yes"], GOOD_KEY, "--package is required"],
    ["dispute open with a package on a FIFO", () => ["dispute", "open", "--package", fifo], GOOD_KEY, /not a regular file/],
    ["arbitrate with a package on a FIFO", () => ["arbitrate", "--case", HASH, "--package", fifo], GOOD_KEY, /not a regular file/],
    ["arbitrator repin with a short DID hash", () => ["arbitrator", "repin", "--did-hash", "0x12"], GOOD_KEY, /--did-hash must be 0x and 64 hex digits|No EVM node/],
  ];

  // Issue 28 item 9: the same careless values, tried on every command that takes them (each is one input).
  const SESSION_COMMANDS: [string, string[], Record<string, string>][] = [
    ["status", ["status", ...[]], {}],
    ["export", ["export"], {}],
    ["results", ["results"], {}],
    ["stream", ["stream", "-n", "1"], GOOD_KEY],
    ["call", ["call", "--method", "ping"], GOOD_KEY],
    ["close", ["close"], GOOD_KEY],
    ["anchor", ["anchor"], GOOD_KEY],
    ["challenge", ["challenge"], GOOD_KEY],
    ["finalize", ["finalize"], GOOD_KEY],
    ["deposit", ["deposit", "--amount", "5"], GOOD_KEY],
    ["import", ["import", "--price", "5"], GOOD_KEY],
    ["session-key authorize", ["session-key", "authorize", "--cap", "1", "--key", ADDR], GOOD_KEY],
    ["session-key list", ["session-key", "list"], {}],
  ];
  const BAD_SESSIONS: [string, string][] = [
    ["63 hex digits", `0x${"a".repeat(63)}`],
    ["65 hex digits", `0x${"a".repeat(65)}`],
    ["no 0x", "ab".repeat(32)],
    ["a non-hex digit", `0x${"g".repeat(64)}`],
    ["a decimal number", "12345"],
  ];
  for (const [name, argv, env] of SESSION_COMMANDS) {
    for (const [what, value] of BAD_SESSIONS) {
      CASES.push([`${name} with a session id of ${what}`, () => [...argv, "--session", value, ...DB(), ...DEAD_RPC], env, "--session must be 0x and 64 hex digits"]);
    }
  }
  const KEYED_COMMANDS: [string, string[]][] = [
    ["open", ["open", "--provider", ADDR, "--deposit", "5"]],
    ["import", ["import", "--session", SESSION, "--price", "5"]],
    ["stream", ["stream", "--session", SESSION, "-n", "1"]],
    ["call", ["call", "--session", SESSION, "--method", "ping"]],
    ["close", ["close", "--session", SESSION]],
    ["anchor", ["anchor", "--session", SESSION]],
    ["challenge", ["challenge", "--session", SESSION]],
    ["finalize", ["finalize", "--session", SESSION]],
    ["watchtower", ["watchtower", "--once"]],
    ["provider", ["provider", "--price", "5"]],
    ["gig fund", ["gig", "fund", "--amount", "1", "--ics", HASH]],
    ["gig cancel", ["gig", "cancel", "--gig", "1"]],
    ["gig deliver", ["gig", "deliver", "--gig", "1", "--deliverable", HASH]],
    ["gig release", ["gig", "release", "--gig", "1"]],
    ["gig refund", ["gig", "refund", "--gig", "1"]],
    ["gig accept-delivery", ["gig", "accept-delivery", "--gig", "1"]],
    ["session-key authorize", ["session-key", "authorize", "--session", SESSION, "--cap", "1"]],
    ["session-key revoke", ["session-key", "revoke", "--session", SESSION, "--key", ADDR]],
    ["arbitrator repin", ["arbitrator", "repin"]],
  ];
  for (const [name, argv] of KEYED_COMMANDS) {
    CASES.push([`${name} with a key of 63 hex digits`, () => [...argv, ...DB(), ...DEAD_RPC], { IOI_PRIVATE_KEY: `0x${"1".repeat(63)}` }, "not a private key"]);
    CASES.push([`${name} with the key in a --key-env left unset`, () => [...argv, "--key-env", "IOI_UNSET_28", ...DB(), ...DEAD_RPC], {}, "Set IOI_UNSET_28"]);
  }

  // Read-only commands on a store that does not exist: exit 0, and no file or directory is created (issue 28 item 9).
  const READ_ONLY: [string, (db: string) => string[]][] = [
    ["status without a store", (db) => ["status", "--db", db]],
    ["status --json without a store", (db) => ["status", "--json", "--db", db]],
    ["channels without a store", (db) => ["channels", "--db", db]],
  ];

  it(`covers at least 200 careless inputs (${CASES.length} refused + ${READ_ONLY.length} read-only)`, () => {
    expect(CASES.length + READ_ONLY.length).to.be.at.least(200);
  });

  for (const [what, argv] of READ_ONLY) {
    it(`issue 28 item 9: ${what} creates nothing`, async () => {
      const db = path.join(dir, `ro-${what.replace(/\W+/g, "-")}`, "store.db");
      const result = await runCli(argv(db));
      expect(result.code, result.err).to.equal(0);
      expect(result.out).to.contain("holds no channels");
      expect(existsSync(path.dirname(db)), "a store directory was created").to.equal(false);
    });
  }

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
    const script = `for (let i = 0; i < 100000; i++) console.log("line " + i + " ${"x".repeat(40)}"); require("./channel-client/cli/ioi").runProcess(["--version"]);`;
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
