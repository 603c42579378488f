/**
 * `ioi dispute`, `ioi arbitrate` and `ioi case` driven through `main()` against the in-process Hardhat
 * network (served over JSON-RPC), on contracts deployed by `scripts/deploy.ts`, with the Appendix A.4 code
 * gig of `scripts/examples/code-gig.ts` and a session whose provider signed one receipt under another policy.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { erc20Abi, getAddress, keccak256, pad, parseEther, stringToBytes, toHex, zeroAddress, zeroHash, type Address, type Hex, type LocalAccount } from "viem";

import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import { disputeManagerAbi, gigEscrowAbi, providerRegistryAbi } from "../../arbitration/runner/chain";
import { icsHash, icsToJson, penaltyFor, type Ics } from "../../arbitration/documents/ics";
import { packageHash, packageToJson, parsePackage } from "../../arbitration/documents/package";
import { disputeManagerDomain, resolutionFromJson, resolutionHash, verifyResolutionSignature } from "../../arbitration/lanes/resolution";
import { judgeRuntimeHash } from "../../arbitration/runner/runner";
import { canon } from "../../channel-client/core/canonical";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { closeUnilateral, openChannel, type Wallet } from "../../channel-client/chain/escrow";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { signSessionReceipt, sessionReceiptHash, type SessionReceipt } from "../../channel-client/core/receipt";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { sessionIdOf, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { admitDevnetArbitrators } from "../../scripts/arbitrators";
import { deployAll } from "../../scripts/deploy";
import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { codeGigIcs, FAILING_DELIVERABLE, SUITE } from "../../scripts/examples/code-gig";
import { hardhatAccount } from "../helpers/fixtures";
import { runCli } from "../helpers/cli";

/** Runs the CLI in-process and captures what it prints. */
const run = runCli;

type Result = Awaited<ReturnType<typeof run>>;

/** The JSON object a `--json` run printed on its last line. */
function jsonOf(result: Result): Record<string, any> {
  return JSON.parse(result.out.split("\n").pop()!) as Record<string, any>;
}

/** Hardhat's account `index` as the private key the CLI reads from the environment. */
function keyOf(index: number): { IOI_PRIVATE_KEY: Hex } {
  const account = hardhatAccount(index) as LocalAccount & { getHdKey(): { privateKey: Uint8Array | null } };
  return { IOI_PRIVATE_KEY: toHex(account.getHdKey().privateKey!) };
}

/** A typed failure: one line naming the error, never a stack trace. */
function expectTypedFailure(result: Result, code: number, name: string, message?: string): void {
  expect(result.code, result.err).to.equal(code);
  expect(result.err).to.contain(`— ${name}: `);
  if (message) expect(result.err).to.contain(message);
  expect(result.err).to.not.match(/\n\s+at /);
  expect(jsonOf(result)).to.deep.include({ ok: false, error: name });
}

/** Hardhat account indices: as in scripts/demo-disputes.ts. */
const ROLE = { governance: 0, client: 1, payer: 2, provider: 3, stranger: 4, watcher: 8 } as const;
/** Hardhat account that is no arbitrator yet, for the `ioi arbitrator` lifecycle. */
const NEWCOMER = 36;
const HASH: Hex = keccak256(stringToBytes("a hash"));
const BOUNTY = parseEther("1");
/** Nothing listens here: usage errors must be found before the CLI reaches for a node. */
const NO_NODE = ["--rpc", "http://127.0.0.1:9"];

const mintAbi = [
  { type: "function", name: "mint", stateMutability: "nonpayable", inputs: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }], outputs: [] },
] as const;

/** Writes `bundle` as files under `directory`. */
function writeBundle(directory: string, bundle: Bundle): string {
  for (const [name, content] of Object.entries(bundle.files)) {
    const file = path.join(directory, ...name.split("/"));
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
  return directory;
}

/**
 * Everything deployed as `scripts/deploy.ts` deploys it (panels of 3, so two signatures decide and an appeal
 * draws 5); a provider with an SLA bond; the devnet's 16 arbitrators (accounts 20..35) registered, staked and
 * admitted through the timelock as `npm run devnet` admits them; and the code gig funded by the client,
 * accepted and delivered (with the failing deliverable) by the provider.
 */
async function disputeFixture() {
  const previous = process.env.IOI_DISPUTE_PANEL_SIZE;
  process.env.IOI_DISPUTE_PANEL_SIZE = "3";
  const deployment = await deployAll(hre).finally(() => {
    if (previous === undefined) delete process.env.IOI_DISPUTE_PANEL_SIZE;
    else process.env.IOI_DISPUTE_PANEL_SIZE = previous;
  });
  const publicClient = await hre.viem.getPublicClient();
  const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
  const c = deployment.contracts;
  const write = async (wallet: Wallet, request: Record<string, unknown>) => {
    const hash = await wallet.writeContract(request as Parameters<Wallet["writeContract"]>[0]);
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`Transaction ${hash} reverted.`);
  };
  const label = (s: string) => keccak256(stringToBytes(s));
  const token = c.LaborGas.address;
  const registry = c.ProviderRegistry.address;
  const governance = wallets[ROLE.governance]!;
  const provider = wallets[ROLE.provider]!;
  const minProvider = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "minProviderBond" });
  const providerBond = minProvider * 3n;
  await write(governance, { address: token, abi: mintAbi, functionName: "mint", args: [provider.account.address, providerBond] });
  await write(provider, { address: token, abi: erc20Abi, functionName: "approve", args: [registry, providerBond] });
  await write(provider, {
    address: registry,
    abi: providerRegistryAbi,
    functionName: "registerProvider",
    args: ["tcp://127.0.0.1", label("caps: js-runner"), label("did:ioi:provider-cli"), label("mldsa: provider-cli")],
  });
  await write(provider, { address: registry, abi: providerRegistryAbi, functionName: "bond", args: [0, providerBond] });
  await admitDevnetArbitrators({ publicClient: publicClient as never, wallets, deployment });

  const deadline = (await publicClient.getBlock()).timestamp + 86_400n;
  const ics = codeGigIcs({ asset: zeroAddress, maxPrice: BOUNTY, deadline });
  const gigEscrow = c.GigEscrow.address;
  await write(wallets[ROLE.client]!, {
    address: gigEscrow,
    abi: gigEscrowAbi,
    functionName: "fund",
    args: [provider.account.address, zeroAddress, BOUNTY, icsHash(ics), Number(deadline), 3600],
    value: BOUNTY,
  });
  await write(provider, { address: gigEscrow, abi: gigEscrowAbi, functionName: "accept", args: [1n] });
  await write(provider, { address: gigEscrow, abi: gigEscrowAbi, functionName: "deliver", args: [1n, bundleHash(FAILING_DELIVERABLE), zeroHash] });
  return { deployment, publicClient, wallets, ics, providerBond };
}

type Fixture = Awaited<ReturnType<typeof disputeFixture>>;

describe("ioi dispute, arbitrate and case CLI", function () {
  this.timeout(120_000);

  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-dispute-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** The gig's inputs as a challenger holds them: the ICS file (not canonical on disk) and both directories. */
  function gigFiles(ics: Ics, name: string) {
    const base = path.join(dir, name);
    mkdirSync(base, { recursive: true });
    const icsFile = path.join(base, "ics.json");
    writeFileSync(icsFile, JSON.stringify(icsToJson(ics), null, 2));
    return {
      icsFile,
      suiteDir: writeBundle(path.join(base, "suite"), SUITE),
      deliverableDir: writeBundle(path.join(base, "deliverable"), FAILING_DELIVERABLE),
      out: path.join(base, "package.json"),
    };
  }

  describe("help and usage errors (no chain)", () => {
    const SUBCOMMANDS: [group: string, sub: string][] = [
      ["dispute", "build-gig"],
      ["dispute", "build-session"],
      ["dispute", "open"],
      ["dispute", "respond"],
      ["dispute", "expire"],
      ["case", "show"],
      ["case", "draw"],
      ["case", "submit"],
      ["case", "appeal"],
      ["case", "finalize"],
      ["arbitrator", "register"],
      ["arbitrator", "stake"],
      ["arbitrator", "unstake"],
      ["arbitrator", "withdraw"],
      ["arbitrator", "repin"],
      ["arbitrator", "show"],
      ["arbitrator", "cases"],
      ["arbitrator", "claim"],
    ];

    it("lists the dispute, case and arbitrate commands in the top-level help and each group's subcommands in its own", async () => {
      const top = await run(["--help"]);
      expect(top.code).to.equal(0);
      for (const name of ["dispute", "case", "arbitrator", "arbitrate", "gig", "open"]) expect(top.out).to.contain(`  ${name} `);
      for (const group of ["dispute", "case", "arbitrator"]) {
        const help = await run([group, "--help"]);
        expect(help.code).to.equal(0);
        expect(help.out).to.contain(`Usage: ioi ${group} <subcommand>`);
        for (const [g, sub] of SUBCOMMANDS) if (g === group) expect(help.out).to.contain(`  ${sub} `);
        expect(help.out).to.contain("--dispute-manager ADDR");
        expect((await run([group])).out).to.contain(`Usage: ioi ${group} <subcommand>`);
      }
    });

    for (const [group, sub] of SUBCOMMANDS) {
      it(`has --help for ${group} ${sub}`, async () => {
        const { code, out } = await run([group, sub, "--help"]);
        expect(code).to.equal(0);
        expect(out).to.contain(`Usage: ioi ${group} ${sub}`);
        expect(out).to.contain("Dispute options:");
        expect(out).to.contain("--dispute-manager");
        expect(out).to.contain("--json");
      });
    }

    it("has --help for arbitrate, documenting every option", async () => {
      const { code, out } = await run(["arbitrate", "--help"]);
      expect(code).to.equal(0);
      expect(out).to.contain("Usage: ioi arbitrate --case ID --package FILE");
      for (const option of ["--key-env NAME", "--sign-only", "--devnet-quorum N", "--submit", "--out FILE", "--audit FILE", "--dispute-manager", "--json"]) {
        expect(out).to.contain(option);
      }
      const build = (await run(["dispute", "build-gig", "--help"])).out;
      for (const option of ["--gig ID", "--ics-file PATH", "--suite-dir DIR", "--deliverable-dir DIR", "--lane 0|1", "--out FILE"]) {
        expect(build).to.contain(option);
      }
      expect((await run(["dispute", "build-session", "--help"])).out).to.contain("--session ID --seq N");
    });

    it("answers an unknown subcommand and an unknown option with the usage, exit code 2", async () => {
      // Escalation is gone: the group's help says an appeal replaces it.
      const escalate = await run(["dispute", "escalate", "--case", HASH]);
      expect(escalate.code).to.equal(2);
      expect(escalate.err).to.contain('Unknown dispute subcommand "escalate"');
      expect(escalate.err).to.contain("`ioi dispute escalate` is gone: a party appeals a decided case with `ioi case appeal`");
      expect((await run(["dispute", "expire", "--help"])).out).to.contain("`ioi case appeal` replaces it");
      const unknown = await run(["dispute", "settle"]);
      expect(unknown.code).to.equal(2);
      expect(unknown.err).to.contain('Unknown dispute subcommand "settle"');
      expect((await run(["case", "list"])).code).to.equal(2);
      const bad = await run(["arbitrate", "--frobnicate"]);
      expect(bad.code).to.equal(2);
      expect(bad.err).to.contain("Usage: ioi arbitrate");
      expect((await run(["case", "show", "--session", HASH])).err).to.contain("Usage: ioi case show");
    });

    const usageCases: [name: string, argv: string[], message: string][] = [
      ["respond without --case", ["dispute", "respond"], "--case is required"],
      ["case draw without --case", ["case", "draw"], "--case is required"],
      ["case appeal without --case", ["case", "appeal"], "--case is required"],
      ["case finalize with a malformed case id", ["case", "finalize", "--case", "12"], "--case must be 0x and 64 hex digits"],
      ["case submit without a signature", ["case", "submit"], "--signature is required"],
      ["case submit with a signature file that does not exist", ["case", "submit", "--signature", "/nonexistent/a.json"], "Cannot read --signature /nonexistent/a.json"],
      ["arbitrate --sign-only without --out", ["arbitrate", "--case", HASH, "--package", "p.json", "--sign-only"], "--out is required"],
      ["arbitrate --sign-only with --submit", ["arbitrate", "--case", HASH, "--package", "p.json", "--sign-only", "--submit", "--out", "s.json"], "--sign-only and --submit exclude each other"],
      ["arbitrator stake without an amount", ["arbitrator", "stake"], "--amount is required"],
      ["arbitrator stake with an amount in wei notation", ["arbitrator", "stake", "--amount", "1e21"], "--amount must be a decimal number of bond tokens"],
      ["arbitrator unstake of nothing", ["arbitrator", "unstake", "--amount", "0"], "--amount must be more than zero"],
      ["arbitrator register without --did-hash", ["arbitrator", "register", "--mldsa-hash", HASH], "--did-hash is required"],
      ["arbitrator claim of an asset that is no address", ["arbitrator", "claim", "--asset", "lgas"], "--asset must be an ERC-20 address or eth"],
      ["arbitrator cases from a negative block", ["arbitrator", "cases", "--address", HASH.slice(0, 42), "--from-block", "1.5"], "--from-block must be a whole number"],
      ["expire with a malformed case id", ["dispute", "expire", "--case", "0x12"], '--case must be 0x and 64 hex digits (the case id); received "0x12"'],
      ["case show without --case", ["case", "show"], "--case is required"],
      ["case show with a case id that is not hex", ["case", "show", "--case", `0x${"zz".repeat(32)}`], "--case must be 0x and 64 hex digits"],
      ["arbitrate without --case", ["arbitrate", "--package", "p.json"], "--case is required"],
      ["arbitrate without --package", ["arbitrate", "--case", HASH], "--package is required"],
      ["arbitrate with a quorum of 0", ["arbitrate", "--case", HASH, "--package", "p.json", "--devnet-quorum", "0"], "--devnet-quorum must be from 1 to 15"],
      ["arbitrate with a quorum beyond the largest panel", ["arbitrate", "--case", HASH, "--package", "p.json", "--devnet-quorum", "16"], "--devnet-quorum must be from 1 to 15"],
      ["arbitrate with a package that does not exist", ["arbitrate", "--case", HASH, "--package", "/nonexistent/p.json"], "Cannot read --package /nonexistent/p.json"],
      ["arbitrate writing into a missing directory", ["arbitrate", "--case", HASH, "--package", "p.json", "--out", "/nonexistent/r.json"], "--out /nonexistent/r.json: the directory"],
      ["open without --package", ["dispute", "open"], "--package is required"],
      ["build-gig without --gig", ["dispute", "build-gig", "--ics-file", "i.json"], "--gig is required"],
      ["build-gig without --ics-file", ["dispute", "build-gig", "--gig", "1"], "--ics-file is required"],
      ["build-gig without --deliverable-dir", ["dispute", "build-gig", "--gig", "1", "--ics-file", "i.json"], "--deliverable-dir is required"],
      ["build-gig at lane 2", ["dispute", "build-gig", "--gig", "1", "--ics-file", "i", "--deliverable-dir", "d", "--lane", "2"], "--lane must be 0 or 1"],
      ["build-gig without --out", ["dispute", "build-gig", "--gig", "1", "--ics-file", "i", "--deliverable-dir", "d"], "--out is required"],
      ["build-session without --session", ["dispute", "build-session", "--seq", "1", "--out", "p.json"], "--session is required"],
      ["build-session at seq 0", ["dispute", "build-session", "--session", HASH, "--seq", "0", "--out", "p.json"], "--seq must be a receipt seq from 1"],
      ["build-session without --out", ["dispute", "build-session", "--session", HASH, "--seq", "1"], "--out is required"],
    ];
    for (const [name, argv, message] of usageCases) {
      it(`refuses ${name} with a sentence naming the field (exit code 2)`, async () => {
        const result = await run([...argv, "--json", ...NO_NODE], keyOf(ROLE.client));
        expectTypedFailure(result, 2, "UsageError", message);
      });
    }

    it("says which key is missing instead of failing deep inside", async () => {
      const result = await run(["dispute", "respond", "--json", "--case", HASH, ...NO_NODE], { IOI_PRIVATE_KEY: undefined });
      expectTypedFailure(result, 2, "UsageError", "Set IOI_PRIVATE_KEY");
      const other = await run(["arbitrate", "--case", HASH, "--package", "p.json", "--key-env", "ARBITRATOR_KEY", ...NO_NODE], { ARBITRATOR_KEY: undefined });
      expect(other.err).to.contain("Set ARBITRATOR_KEY");
    });

    it("refuses a package file holding garbage with a typed error and no stack trace (exit code 1)", async () => {
      const cases: [content: string, error: string][] = [
        ["{ not json", "InvalidJsonError"],
        ["schema: [unclosed", "InvalidYamlError"],
        ['{"schema": "ioi.challenge_package/1"}', "InvalidFieldError"],
        ['{"case_id": "0x00", "surprise": true}', "InvalidFieldError"],
        ["[1, 2, 3]", "InvalidFieldError"],
        ["\u0000\u00ff\u00fe binary", "InvalidFieldError"],
      ];
      for (const [i, [content, error]] of cases.entries()) {
        const file = path.join(dir, `garbage-${i}.json`);
        writeFileSync(file, content);
        expectTypedFailure(await run(["dispute", "open", "--json", "--package", file, ...NO_NODE], keyOf(ROLE.client)), 1, error);
        expectTypedFailure(await run(["arbitrate", "--json", "--case", HASH, "--package", file, ...NO_NODE], keyOf(ROLE.client)), 1, error);
      }
      const invalidUtf8 = path.join(dir, "garbage-utf8.json");
      writeFileSync(invalidUtf8, Buffer.from([0x7b, 0xff, 0xfe, 0x7d]));
      expect((await run(["dispute", "open", "--package", invalidUtf8, ...NO_NODE], keyOf(ROLE.client))).code).to.equal(1);
    });

    it("refuses bundle directories holding a symlink, a hidden file or a non-UTF-8 file, before reaching for a node", async () => {
      const ics = codeGigIcs({ asset: zeroAddress, maxPrice: BOUNTY, deadline: 2_000_000_000n });
      const build = (files: ReturnType<typeof gigFiles>) => [
        "dispute", "build-gig", "--json", "--gig", "1", "--ics-file", files.icsFile, "--suite-dir", files.suiteDir,
        "--deliverable-dir", files.deliverableDir, "--out", files.out, ...NO_NODE,
      ];
      const linked = gigFiles(ics, "symlink");
      symlinkSync(path.join(linked.suiteDir, "run.js"), path.join(linked.deliverableDir, "run.js"));
      expectTypedFailure(await run(build(linked), keyOf(ROLE.client)), 1, "InvalidBundleError", "is a symbolic link");

      const hidden = gigFiles(ics, "hidden");
      writeFileSync(path.join(hidden.deliverableDir, ".env"), "SECRET=1");
      expectTypedFailure(await run(build(hidden), keyOf(ROLE.client)), 1, "InvalidFieldError", '".env"');

      const binary = gigFiles(ics, "binary");
      writeFileSync(path.join(binary.deliverableDir, "blob.bin"), Buffer.from([0xc3, 0x28]));
      expectTypedFailure(await run(build(binary), keyOf(ROLE.client)), 1, "InvalidBundleError", "is not valid UTF-8");

      const tampered = gigFiles(ics, "tampered-suite");
      writeFileSync(path.join(tampered.suiteDir, "cases.js"), "exports.cases = [];\n");
      expectTypedFailure(await run(build(tampered), keyOf(ROLE.client)), 1, "BundleHashMismatchError");

      const noSuite = gigFiles(ics, "no-suite");
      const withoutSuite = build(noSuite).filter((arg, i, all) => arg !== "--suite-dir" && all[i - 1] !== "--suite-dir");
      expectTypedFailure(await run(withoutSuite, keyOf(ROLE.client)), 2, "UsageError", "--suite-dir is required");
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

    /** Runs `ioi <argv> --json` against the fixture's DisputeManager as Hardhat account `index`. */
    function cli(f: Fixture, index: number, argv: string[], env: Record<string, string | undefined> = {}) {
      return run([...argv, "--json", "--rpc", rpc!.url, "--dispute-manager", f.deployment.contracts.DisputeManager.address], {
        ...keyOf(index),
        ...env,
      });
    }

    const ethOf = (f: Fixture, who: Address) => f.publicClient.getBalance({ address: who });
    const addressOf = (index: number) => getAddress(hardhatAccount(index).address);
    /** The Hardhat account index of a devnet address (panel members are among 0..39). */
    const indexOf = (who: Address) => {
      const index = Array.from({ length: 40 }, (_, i) => i).find((i) => addressOf(i) === getAddress(who));
      if (index === undefined) throw new Error(`${who} is not a Hardhat account.`);
      return index;
    };
    const bondFor = (f: Fixture, value: bigint, level: number) =>
      f.publicClient.readContract({ address: f.deployment.contracts.DisputeManager.address, abi: disputeManagerAbi, functionName: "bondFor", args: [zeroAddress, value, level] });
    const paramsOf = (f: Fixture) => f.publicClient.readContract({ address: f.deployment.contracts.DisputeManager.address, abi: disputeManagerAbi, functionName: "params" });

    /** Builds the code gig's package as the client and opens the case at `lane`; returns its id and package file. */
    async function openGigCase(f: Fixture, name: string, lane: "0" | "1" = "1") {
      const files = gigFiles(f.ics, name);
      const built = await cli(f, ROLE.client, [
        "dispute", "build-gig", "--gig", "1", "--ics-file", files.icsFile, "--suite-dir", files.suiteDir, "--deliverable-dir", files.deliverableDir, "--lane", lane, "--out", files.out,
      ]);
      expect(built.code, built.err).to.equal(0);
      const opened = await cli(f, ROLE.client, ["dispute", "open", "--package", files.out]);
      expect(opened.code, opened.err).to.equal(0);
      return { caseId: jsonOf(opened).caseId as Hex, files, built: jsonOf(built), opened: jsonOf(opened) };
    }

    it("disputes the code gig end to end: open, respond, draw, two members sign without submitting, anyone submits, finalise, claim", async () => {
      const f = await loadFixture(disputeFixture);
      const dm = f.deployment.contracts.DisputeManager.address;
      const notYet = await cli(f, ROLE.stranger, ["case", "show", "--case", HASH]);
      expectTypedFailure(notYet, 2, "UsageError", `Case ${HASH} does not exist`);

      const files = gigFiles(f.ics, "gig-e2e");
      const built = await cli(f, ROLE.client, [
        "dispute", "build-gig", "--gig", "1", "--ics-file", files.icsFile, "--suite-dir", files.suiteDir, "--deliverable-dir", files.deliverableDir, "--out", files.out,
      ]);
      expect(built.code, built.err).to.equal(0);
      const expectedCaseId = await f.publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "nextCaseId", args: [1, pad(toHex(1n), { size: 32 })] });
      const text = readFileSync(files.out, "utf8");
      const pkg = parsePackage(text);
      expect(text).to.equal(canon(packageToJson(pkg)));
      expect(jsonOf(built)).to.deep.include({ ok: true, caseId: expectedCaseId, packageHash: packageHash(pkg), kind: "gig", lane: 1, gigId: "1" });
      expect(pkg.evidence.map((e) => e.kind)).to.deep.equal(["ics", "test_suite", "deliverable"]);

      // Only the client can dispute, and only with the delivered files.
      const stranger = await cli(f, ROLE.stranger, [
        "dispute", "build-gig", "--gig", "1", "--ics-file", files.icsFile, "--suite-dir", files.suiteDir, "--deliverable-dir", files.deliverableDir, "--out", files.out,
      ]);
      expectTypedFailure(stranger, 1, "PackageMismatchError", "Only gig 1's client");

      const opened = await cli(f, ROLE.client, ["dispute", "open", "--package", files.out]);
      expect(opened.code, opened.err).to.equal(0);
      const bond = await bondFor(f, BOUNTY, 1);
      expect(jsonOf(opened)).to.deep.include({ ok: true, caseId: expectedCaseId, kind: "gig", lane: 1, bond: bond.toString(), asset: zeroAddress });

      // The same package again names a case id the DisputeManager will not assign: refused before sending.
      const nonce = await f.publicClient.getTransactionCount({ address: addressOf(ROLE.client) });
      expectTypedFailure(await cli(f, ROLE.client, ["dispute", "open", "--package", files.out]), 1, "StaleCaseIdError", `The package names case ${expectedCaseId}`);
      expect(await f.publicClient.getTransactionCount({ address: addressOf(ROLE.client) })).to.equal(nonce);

      // Nobody arbitrates before the panel is drawn.
      expectTypedFailure(await cli(f, 20, ["arbitrate", "--case", expectedCaseId, "--package", files.out]), 1, "CaseStateError", "draw its panel first");

      const responded = await cli(f, ROLE.provider, ["dispute", "respond", "--case", expectedCaseId]);
      expect(jsonOf(responded)).to.deep.include({ ok: true, caseId: expectedCaseId, respondent: addressOf(ROLE.provider), bond: bond.toString() });
      expectTypedFailure(await cli(f, ROLE.provider, ["dispute", "respond", "--case", expectedCaseId]), 1, "DisputeTransactionError", `Case ${expectedCaseId} is already contested`);
      expectTypedFailure(await cli(f, ROLE.stranger, ["dispute", "respond", "--case", expectedCaseId]), 1, "DisputeTransactionError", "Only case");

      // Contesting requested the randomness; `case draw` mines to it and draws a panel of three.
      const drawn = await cli(f, ROLE.watcher, ["case", "draw", "--case", expectedCaseId]);
      expect(drawn.code, drawn.err).to.equal(0);
      const draw = jsonOf(drawn);
      expect(draw).to.deep.include({ ok: true, caseId: expectedCaseId, outcome: "drawn", round: 0 });
      const panel = draw.panel as Address[];
      expect(panel).to.have.length(3);
      // As drawn (stored order), shown ascending by address.
      const stored = await f.publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "panelOf", args: [expectedCaseId, 0] });
      expect(panel).to.deep.equal([...stored].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1)));
      // The contract's signed mask counts members in stored order.
      const maskOf = (signers: Address[]) => stored.reduce((mask, member, i) => (signers.includes(getAddress(member)) ? mask | (1 << i) : mask), 0);
      expect(panel.map(indexOf).every((i) => i >= 20 && i <= 35)).to.equal(true);
      expectTypedFailure(await cli(f, ROLE.watcher, ["case", "draw", "--case", expectedCaseId]), 1, "CaseStateError", "is deliberating; only an open case");

      const cases = jsonOf(await cli(f, ROLE.stranger, ["arbitrator", "cases", "--address", panel[0]!], { IOI_PRIVATE_KEY: undefined }));
      expect(cases.cases).to.deep.equal([
        { caseId: expectedCaseId, round: 0, drawnInBlock: cases.cases[0].drawnInBlock, status: "deliberating", currentRound: 0, deadline: cases.cases[0].deadline },
      ]);

      // A package for another case and a key that is not on the panel are refused.
      const otherCase = await cli(f, indexOf(panel[0]!), ["arbitrate", "--case", HASH, "--package", files.out]);
      expectTypedFailure(otherCase, 1, "PackageMismatchError", `is for case ${expectedCaseId}, not case ${HASH}`);
      // A package for this case that is not the one it committed (a relay changed a byte): the member abstains,
      // a fault of its own inputs, and signs nothing (issue 27; decision 0014, amendment).
      const swapped = path.join(dir, "swapped-package.json");
      writeFileSync(swapped, canon(packageToJson({ ...pkg, claims: pkg.claims.map((c) => ({ ...c, description: `${c.description} (relayed)` })) })));
      const abstained = await cli(f, indexOf(panel[0]!), ["arbitrate", "--case", expectedCaseId, "--package", swapped, "--sign-only", "--out", path.join(dir, "abstained.json")]);
      expectTypedFailure(abstained, 1, "ArbitratorAbstainedError", `abstains from case ${expectedCaseId} (PACKAGE_HASH_MISMATCH)`);
      expect(existsSync(path.join(dir, "abstained.json"))).to.equal(false);
      const outsider = [...Array(16).keys()].map((i) => 20 + i).find((i) => !panel.includes(addressOf(i)))!;
      const notOnPanel = await cli(f, outsider, ["arbitrate", "--case", expectedCaseId, "--package", files.out, "--sign-only", "--out", path.join(dir, "x.json")]);
      expectTypedFailure(notOnPanel, 1, "NotOnPanelError", `${addressOf(outsider)} is not on case ${expectedCaseId}'s round 0 panel`);

      // Two members each sign on their own machine, without submitting.
      const sigFiles = [path.join(dir, "sig-a.json"), path.join(dir, "sig-b.json")];
      const resolutionFile = path.join(dir, "resolution-e2e.json");
      const signedRuns = [];
      for (const [i, member] of panel.slice(0, 2).entries()) {
        const signed = await cli(f, indexOf(member), ["arbitrate", "--case", expectedCaseId, "--package", files.out, "--sign-only", "--out", sigFiles[i]!]);
        expect(signed.code, signed.err).to.equal(0);
        signedRuns.push(jsonOf(signed));
        expect(jsonOf(signed)).to.not.have.property("submitted");
      }
      const { refund, slash } = penaltyFor(f.ics, 3, BOUNTY); // 3 of the 12 tests fail
      expect(signedRuns[0]).to.deep.include({ ok: true, caseId: expectedCaseId, round: 0, state: "deliver", verdict: "provider_fault", arbitrators: 1 });
      expect(signedRuns[0].resolution).to.deep.equal(signedRuns[1].resolution);
      const sigA = JSON.parse(readFileSync(sigFiles[0]!, "utf8"));
      expect(sigA).to.deep.equal({
        caseId: expectedCaseId,
        signer: panel[0],
        resolution: { caseId: expectedCaseId, verdict: 1, refund: refund.toString(), slash: slash.toString(), resolutionHash: signedRuns[0].resolutionHash },
        signature: signedRuns[0].signatures[0].signature,
      });
      const domain = disputeManagerDomain(31337n, getAddress(dm));
      await verifyResolutionSignature(domain, { ...sigA.resolution, refund, slash }, sigA.signature, sigA.signer);

      // One signature is not a supermajority of three; a tampered file does not recover to its signer.
      expectTypedFailure(await cli(f, ROLE.watcher, ["case", "submit", "--signature", sigFiles[0]!]), 1, "SignatureFileError", "needs a supermajority of 2");
      const forged = path.join(dir, "sig-forged.json");
      writeFileSync(forged, JSON.stringify({ ...sigA, signer: panel[2] }));
      expectTypedFailure(await cli(f, ROLE.watcher, ["case", "submit", "--signature", sigFiles[0]!, "--signature", forged]), 1, "SignatureFileError", `does not recover to ${panel[2]}`);

      // Anyone combines them.
      const clientBefore = await ethOf(f, addressOf(ROLE.client));
      await cli(f, indexOf(panel[0]!), ["arbitrate", "--case", expectedCaseId, "--package", files.out, "--out", resolutionFile]);
      expect(resolutionHash(resolutionFromJson(JSON.parse(readFileSync(resolutionFile, "utf8"))))).to.equal(signedRuns[0].resolutionHash);
      const submitted = await cli(f, ROLE.watcher, ["case", "submit", "--signature", sigFiles[1]!, "--signature", sigFiles[0]!, "--resolution", resolutionFile]);
      expect(submitted.code, submitted.err).to.equal(0);
      expect(jsonOf(submitted).submitted).to.deep.include({ outcome: "decided", round: 0, verdict: 1, refund: refund.toString(), slash: slash.toString(), signedMask: maskOf(panel.slice(0, 2)) });
      expect(submitted.out).to.contain("the appeal window ends");

      const params = await paramsOf(f);
      const shown = await cli(f, ROLE.stranger, ["case", "show", "--case", expectedCaseId], { IOI_PRIVATE_KEY: undefined });
      const show = jsonOf(shown);
      expect(show).to.deep.include({ ok: true, caseId: expectedCaseId, kind: "gig", gigId: "1", status: "decided", lane: 1, round: 0, panel, signers: panel.slice(0, 2) });
      expect(Date.parse(show.appealWindowEnds) / 1000 - Number((await f.publicClient.getBlock()).timestamp)).to.equal(Number(params.appealWindow));
      expect(shown.out).to.contain("appeal window ends");

      // Finalising waits for the appeal window.
      expectTypedFailure(await cli(f, ROLE.watcher, ["case", "finalize", "--case", expectedCaseId]), 1, "CaseStateError", "appeal window runs until");
      await time.increase(params.appealWindow + 1);
      expectTypedFailure(await cli(f, ROLE.provider, ["case", "appeal", "--case", expectedCaseId]), 1, "CaseStateError", "appeal window closed");
      const finalized = await cli(f, ROLE.watcher, ["case", "finalize", "--case", expectedCaseId]);
      expect(finalized.code, finalized.err).to.equal(0);
      const burned = (bond * 2_000n) / 10_000n;
      const fee = (bond * 1_000n) / 10_000n;
      expect(jsonOf(finalized)).to.deep.include({
        verdict: 1,
        refunded: refund.toString(),
        slashed: slash.toString(),
        toChallenger: (2n * bond - burned - fee).toString(),
        toRespondent: "0",
        arbitrationFees: fee.toString(),
        fees: { [panel[0]!]: (fee / 2n).toString(), [panel[1]!]: (fee / 2n).toString() },
      });
      expect(await ethOf(f, addressOf(ROLE.client))).to.equal(clientBefore + refund + 2n * bond - burned - fee);
      const gig = await f.publicClient.readContract({ address: f.deployment.contracts.GigEscrow.address, abi: gigEscrowAbi, functionName: "gigOf", args: [1n] });
      expect(gig.status).to.equal(5); // Released: the rest of the bounty went to the provider
      expect(jsonOf(await cli(f, ROLE.stranger, ["case", "show", "--case", expectedCaseId])).claimableFees).to.deep.equal({
        [panel[0]!]: (fee / 2n).toString(),
        [panel[1]!]: (fee / 2n).toString(),
      });

      // A coherent signer claims its fee; the silent member has none.
      const claimed = await cli(f, indexOf(panel[0]!), ["arbitrator", "claim", "--asset", "eth"]);
      expect(jsonOf(claimed)).to.deep.include({ ok: true, arbitrator: panel[0], asset: zeroAddress, amount: (fee / 2n).toString() });
      expectTypedFailure(await cli(f, indexOf(panel[2]!), ["arbitrator", "claim", "--asset", "eth"]), 2, "UsageError", "has nothing to claim in ETH");
      const member = jsonOf(await cli(f, indexOf(panel[1]!), ["arbitrator", "show"]));
      expect(member).to.deep.include({ registered: true, admitted: true, active: true, runtimeMatches: true, locks: "0", unbondPhase: "none" });
      expect(member.claimable[zeroAddress]).to.equal((fee / 2n).toString());
      expect(jsonOf(await cli(f, ROLE.stranger, ["case", "show", "--case", expectedCaseId]))).to.deep.include({ status: "resolved" });
    });

    it("appeals through the CLI: a devnet quorum decides, the respondent appeals, a fresh panel of five decides, finalise", async () => {
      const f = await loadFixture(disputeFixture);
      const { caseId, files } = await openGigCase(f, "gig-appeal", "0");
      const params = await paramsOf(f);
      // Uncontested: the draw waits for the respond window.
      expectTypedFailure(await cli(f, ROLE.watcher, ["case", "draw", "--case", caseId]), 1, "CaseStateError", "its respond window runs until");
      await time.increase(params.respondWindow + 1);
      expectTypedFailure(await cli(f, ROLE.provider, ["dispute", "respond", "--case", caseId]), 1, "DisputeTransactionError", "respond window closed");
      const first = jsonOf(await cli(f, ROLE.watcher, ["case", "draw", "--case", caseId]));
      expect(first).to.deep.include({ ok: true, outcome: "drawn", round: 0 });
      expectTypedFailure(await cli(f, ROLE.watcher, ["arbitrate", "--case", caseId, "--package", files.out, "--devnet-quorum", "1", "--submit"]), 2, "UsageError", "below the supermajority of 2");
      const quorum = await cli(f, ROLE.watcher, ["arbitrate", "--case", caseId, "--package", files.out, "--devnet-quorum", "2", "--submit"]);
      expect(quorum.code, quorum.err).to.equal(0);
      expect(jsonOf(quorum)).to.deep.include({ arbitrators: 2, verdict: "provider_fault" });
      expect(jsonOf(quorum).signatures.map((s: { signer: Address }) => s.signer)).to.deep.equal(first.panel.slice(0, 2));
      expect(jsonOf(quorum).submitted).to.deep.include({ outcome: "decided", round: 0 });

      expectTypedFailure(await cli(f, ROLE.stranger, ["case", "appeal", "--case", caseId]), 1, "DisputeTransactionError", "neither the challenger nor the respondent");
      const bond = await bondFor(f, BOUNTY, 1); // lane 0 + round 0 + 1
      const providerBefore = await ethOf(f, addressOf(ROLE.provider));
      const appealed = await cli(f, ROLE.provider, ["case", "appeal", "--case", caseId]);
      expect(appealed.code, appealed.err).to.equal(0);
      expect(jsonOf(appealed)).to.deep.include({ ok: true, by: "respondent", round: 1, bond: bond.toString(), status: "open" });
      // The provider paid the bond (and gas) in ETH.
      expect(providerBefore - (await ethOf(f, addressOf(ROLE.provider))) > bond).to.equal(true);

      const second = jsonOf(await cli(f, ROLE.watcher, ["case", "draw", "--case", caseId]));
      expect(second).to.deep.include({ outcome: "drawn", round: 1 });
      expect(second.panel).to.have.length(5);
      expect(second.panel.filter((a: Address) => first.panel.includes(a))).to.deep.equal([]);
      // The first panel can no longer sign: the case's current panel is the fresh one.
      expectTypedFailure(await cli(f, indexOf(first.panel[0]), ["arbitrate", "--case", caseId, "--package", files.out]), 1, "NotOnPanelError", "round 1 panel");
      const again = await cli(f, ROLE.watcher, ["arbitrate", "--case", caseId, "--package", files.out, "--devnet-quorum", "4", "--submit"]);
      expect(again.code, again.err).to.equal(0);
      expect(jsonOf(again).submitted).to.deep.include({ outcome: "decided", round: 1 });
      const shown = jsonOf(await cli(f, ROLE.stranger, ["case", "show", "--case", caseId]));
      expect(shown).to.deep.include({ status: "decided", round: 1, panel: second.panel, signers: second.panel.slice(0, 4) });
      expect(shown.rounds.map((r: { signers: Address[] }) => r.signers.length)).to.deep.equal([2, 4]);

      await time.increase(params.appealWindow + 1);
      const finalized = await cli(f, ROLE.stranger, ["case", "finalize", "--case", caseId]);
      expect(finalized.code, finalized.err).to.equal(0);
      // Both rounds reached the same outcome: all six signers are coherent and share the fee.
      expect(Object.keys(jsonOf(finalized).fees).sort()).to.deep.equal([...first.panel.slice(0, 2), ...second.panel.slice(0, 4)].sort());
      expect(jsonOf(await cli(f, ROLE.stranger, ["case", "show", "--case", caseId]))).to.deep.include({ status: "resolved", round: 1 });
    });

    it("expires an undecided case to the slow path and out: no verdict ever, so the gig is released as without a dispute (no refund)", async () => {
      const f = await loadFixture(disputeFixture);
      const { caseId } = await openGigCase(f, "gig-expire", "0");
      const params = await paramsOf(f);
      expectTypedFailure(await cli(f, ROLE.stranger, ["dispute", "expire", "--case", caseId]), 1, "CaseStateError", "it cannot expire before");
      await time.increase(params.respondWindow + params.decisionWindow + 1);
      expect(jsonOf(await cli(f, ROLE.stranger, ["dispute", "expire", "--case", caseId]))).to.deep.include({ ok: true, outcome: "slow_path" });
      expectTypedFailure(await cli(f, ROLE.stranger, ["dispute", "expire", "--case", caseId]), 1, "CaseStateError", "(slow_path) has until");
      await time.increase(params.slowPathTimeout + 1);
      const expired = await cli(f, ROLE.stranger, ["dispute", "expire", "--case", caseId]);
      expect(expired.code, expired.err).to.equal(0);
      expect(jsonOf(expired)).to.deep.include({ ok: true, outcome: "expired", verdictStood: false, refunded: "0", slashed: "0" });
      expect(expired.out).to.contain("no verdict ever reached");
      expect(jsonOf(await cli(f, ROLE.stranger, ["case", "show", "--case", caseId]))).to.deep.include({ status: "expired" });
    });

    it("runs an arbitrator's lifecycle: register, stake, show, re-pin, unstake, withdraw after the unbonding delay", async () => {
      const f = await loadFixture(disputeFixture);
      const token = f.deployment.contracts.LaborGas.address;
      const registry = f.deployment.contracts.ProviderRegistry.address;
      const me = addressOf(NEWCOMER);
      const registered = await cli(f, NEWCOMER, ["arbitrator", "register", "--did-hash", label("did:newcomer"), "--mldsa-hash", label("mldsa:newcomer")]);
      expect(jsonOf(registered)).to.deep.include({ ok: true, arbitrator: me, judgeRuntimeHash: judgeRuntimeHash() });
      expectTypedFailure(await cli(f, NEWCOMER, ["arbitrator", "stake", "--amount", "2000"]), 2, "UsageError", "holds 0 LGAS, less than the 2000 LGAS to stake");
      await f.wallets[0]!.writeContract({ address: token, abi: mintAbi, functionName: "mint", args: [me, parseEther("2000")] });
      const staked = await cli(f, NEWCOMER, ["arbitrator", "stake", "--amount", "2000"]);
      expect(jsonOf(staked)).to.deep.include({ ok: true, staked: parseEther("2000").toString(), active: parseEther("2000").toString(), token });
      expect(staked.out).to.contain("Staked 2000 LGAS");
      const shown = await cli(f, NEWCOMER, ["arbitrator", "show"]);
      expect(jsonOf(shown)).to.deep.include({ registered: true, admitted: false, active: false, runtimeMatches: true, stake: parseEther("2000").toString() });
      expect(shown.out).to.contain("not admitted");
      // Issue 28 item 9: a re-pin to the same runtime with the same hashes is a no-op and is refused; a new DID hash is not.
      expectTypedFailure(await cli(f, NEWCOMER, ["arbitrator", "repin"]), 2, "UsageError", "is pinned to this build's judge runtime");
      expect(jsonOf(await cli(f, NEWCOMER, ["arbitrator", "repin", "--did-hash", label("did:newcomer:2")]))).to.deep.include({ ok: true, previousJudgeRuntimeHash: judgeRuntimeHash(), judgeRuntimeHash: judgeRuntimeHash() });
      const unstaked = await cli(f, NEWCOMER, ["arbitrator", "unstake", "--amount", "500.5"]);
      expect(jsonOf(unstaked)).to.deep.include({ ok: true, unbonding: parseEther("500.5").toString(), pending: parseEther("500.5").toString() });
      expectTypedFailure(await cli(f, NEWCOMER, ["arbitrator", "withdraw"]), 2, "UsageError", "500.5 LGAS unbonds at");
      await time.increase(Number(await f.publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "unbondingDelay" })) + 1);
      const withdrawn = await cli(f, NEWCOMER, ["arbitrator", "withdraw"]);
      expect(jsonOf(withdrawn)).to.deep.include({ ok: true, withdrawn: parseEther("500.5").toString() });
      expect(await f.publicClient.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [me] })).to.equal(parseEther("500.5"));
      expect(jsonOf(await cli(f, NEWCOMER, ["arbitrator", "cases"]))).to.deep.include({ ok: true, cases: [] });
    });

    it("disputes a session receipt from the payer's store: build-session, open, a devnet quorum of the drawn panel decides it", async () => {
      const f = await loadFixture(disputeFixture);
      const c = f.deployment.contracts;
      const payer = hardhatAccount(ROLE.payer);
      const provider = hardhatAccount(ROLE.provider);
      const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: parseEther("0.001") };
      const policyHash = keccak256(stringToBytes("policy: echo worker, no network"));
      const terms = {
        payer: payer.address,
        provider: provider.address,
        funder: addressOf(ROLE.client),
        asset: zeroAddress,
        termsHash: termsHashOf(pricing),
        policyHash,
        challengeDuration: 3600n,
        nonce: 7n,
      };
      const gasEscrow = getAddress(c.GasEscrow.address);
      const opened = await openChannel({ wallet: f.wallets[ROLE.client]!, publicClient: f.publicClient, escrow: gasEscrow, terms, amount: parseEther("0.01") });
      const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: gasEscrow });
      const sessionId = sessionIdOf(domain, opened.ref);
      const dbFile = path.join(dir, "payer.db");
      const store = SqliteStore.open(dbFile);
      await store.putChannel({ sessionId, role: "payer", ref: opened.ref, pricing, escrow: gasEscrow, chainId: 31337, deposit: opened.deposit, status: "open" });
      // A provider build with a stale policy signs receipt 2 under another policy hash.
      const tree = new ReceiptAccumulator();
      let prev: Hex = zeroHash;
      let last;
      for (let seq = 1n; seq <= 4n; seq++) {
        const ticket = await signPaymentTicket({
          account: payer,
          domain,
          ticket: { sessionId, provider: provider.address, termsHash: terms.termsHash, seq, cumulativeAmount: pricing.pricePerInvocation * seq, receiptRoot: tree.root() },
        });
        await store.putTicket(sessionId, ticket);
        const receipt: SessionReceipt = {
          sessionId,
          seq,
          offloadPacketHash: keccak256(stringToBytes(`request ${seq}`)),
          outputHash: keccak256(stringToBytes(`output ${seq}`)),
          policyHash: seq === 2n ? keccak256(stringToBytes("policy: stale build, network allowed")) : policyHash,
          modelSnapshotId: "model:echo@1",
          metering: { units: 1n, amount: pricing.pricePerInvocation },
          prevReceiptHash: prev,
        };
        const signed = await signSessionReceipt({ account: provider, receipt });
        prev = sessionReceiptHash(receipt);
        const leaf = receiptLeaf(receipt, ticket.ticket);
        tree.append(leaf);
        await store.putStep(sessionId, { seq, ticket, receipt: signed, leaf });
        last = ticket;
      }
      await store.close();
      // The provider closes with ticket 4, committing the root over receipts 1..3.
      await closeUnilateral({ wallet: f.wallets[ROLE.provider]!, publicClient: f.publicClient, escrow: gasEscrow, ref: opened.ref, ticket: last });

      const out = path.join(dir, "session-package.json");
      const base = ["dispute", "build-session", "--session", sessionId, "--db", dbFile, "--out", out];
      expectTypedFailure(await cli(f, ROLE.payer, [...base, "--seq", "4"]), 2, "UsageError", "--seq must name a receipt the recorded close commits (1 to 3");
      expectTypedFailure(await cli(f, ROLE.stranger, [...base, "--seq", "2"]), 1, "PackageMismatchError", "Only the session's payer");
      const built = await cli(f, ROLE.payer, [...base, "--seq", "2"]);
      expect(built.code, built.err).to.equal(0);
      const pkg = parsePackage(readFileSync(out));
      expect(jsonOf(built)).to.deep.include({ ok: true, kind: "session", lane: 0, sessionId, seq: "2", closingSeq: "4", committedReceipts: 3, packageHash: packageHash(pkg) });
      const receipts = pkg.evidence.flatMap((e) => (e.kind === "receipt" ? [e.content] : []));
      expect(receipts.map((r) => r.receipt.receipt.seq)).to.deep.equal([1n, 2n]);
      expect(receipts[1]!.merkleProof).to.deep.equal(tree.proof(1, 3));
      // The receipts as the provider delivered them ride beside the proven ones (issue 12 item 5); no call failed.
      expect(pkg.evidence.flatMap((e) => (e.kind === "delivered_receipt" ? [e.content.receipt.receipt.seq] : []))).to.deep.equal([1n, 2n]);
      expect(pkg.evidence.some((e) => e.kind === "fault")).to.equal(false);

      const openedCase = await cli(f, ROLE.payer, ["dispute", "open", "--package", out]);
      expect(openedCase.code, openedCase.err).to.equal(0);
      const caseId = jsonOf(openedCase).caseId as Hex;
      expect(caseId).to.equal(pkg.caseId);
      expect(jsonOf(await cli(f, ROLE.stranger, ["case", "show", "--case", caseId]))).to.deep.include({ kind: "session", sessionId, status: "open", lane: 0 });

      await time.increase(Number((await paramsOf(f)).respondWindow) + 1);
      expect(jsonOf(await cli(f, ROLE.watcher, ["case", "draw", "--case", caseId]))).to.deep.include({ outcome: "drawn" });
      const arbitrated = await cli(f, ROLE.watcher, ["arbitrate", "--case", caseId, "--package", out, "--devnet-quorum", "3", "--submit"]);
      expect(arbitrated.code, arbitrated.err).to.equal(0);
      const result = jsonOf(arbitrated);
      expect(result).to.deep.include({ kind: "session", state: "deliver", verdict: "provider_fault", arbitrators: 3 });
      expect(result.submitted).to.deep.include({ outcome: "decided", refund: pricing.pricePerInvocation.toString(), slash: "0", signedMask: 7 });
      await time.increase(Number((await paramsOf(f)).appealWindow) + 1);
      const finalized = await cli(f, ROLE.stranger, ["case", "finalize", "--case", caseId]);
      expect(finalized.code, finalized.err).to.equal(0);
      expect(jsonOf(finalized)).to.deep.include({ refunded: pricing.pricePerInvocation.toString(), slashed: "0" });
      expect(jsonOf(await cli(f, ROLE.stranger, ["case", "show", "--case", caseId]))).to.deep.include({ status: "resolved" });
    });

    it("names the escrow's error when the DisputeManager's call into it reverts (a dispute after the window)", async () => {
      const f = await loadFixture(disputeFixture);
      const files = gigFiles(f.ics, "gig-late");
      const built = await cli(f, ROLE.client, [
        "dispute", "build-gig", "--gig", "1", "--ics-file", files.icsFile, "--suite-dir", files.suiteDir, "--deliverable-dir", files.deliverableDir, "--out", files.out,
      ]);
      expect(built.code, built.err).to.equal(0);
      await time.increase(3_601);
      const late = await cli(f, ROLE.client, ["dispute", "open", "--package", files.out]);
      expectTypedFailure(late, 1, "DisputeTransactionError", "DisputeManager.openGigCase reverted with DisputeWindowClosed(1, ");
    });

    it("reads the DisputeManager from the environment and refuses escrow addresses it is not wired to", async () => {
      const f = await loadFixture(disputeFixture);
      const dm = f.deployment.contracts.DisputeManager.address;
      const viaEnv = await run(["case", "show", "--json", "--case", HASH, "--rpc", rpc!.url], { IOI_DISPUTE_MANAGER: dm });
      expectTypedFailure(viaEnv, 2, "UsageError", `does not exist on the DisputeManager at ${getAddress(dm)}`);
      const wrong = await cli(f, ROLE.stranger, ["case", "show", "--case", HASH, "--gig-escrow", f.deployment.contracts.GasEscrow.address]);
      expectTypedFailure(wrong, 2, "UsageError", `but the DisputeManager at ${getAddress(dm)} uses ${getAddress(f.deployment.contracts.GigEscrow.address)}`);
      const wrongEnv = await cli(f, ROLE.stranger, ["case", "show", "--case", HASH], { IOI_ESCROW: f.deployment.contracts.GigEscrow.address });
      expectTypedFailure(wrongEnv, 2, "UsageError", "$IOI_ESCROW is");
      const noContract = await run(["case", "show", "--json", "--case", HASH, "--rpc", rpc!.url, "--dispute-manager", addressOf(ROLE.stranger)]);
      expectTypedFailure(noContract, 1, "NoContractError", `No contract at ${addressOf(ROLE.stranger)}`);
    });
  });
});

const label = (s: string): Hex => keccak256(stringToBytes(s));
