/**
 * `ioi dispute`, `ioi arbitrate` and `ioi case` driven through `main()` against the in-process Hardhat
 * network (served over JSON-RPC), on contracts deployed by `scripts/deploy.ts`, with the Appendix A.4 code
 * gig of `scripts/examples/code-gig.ts` and a session whose provider signed one receipt under another policy.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { erc20Abi, getAddress, keccak256, pad, parseEther, stringToBytes, toHex, zeroAddress, zeroHash, type Address, type Hex, type LocalAccount } from "viem";

import { bundleHash, type Bundle } from "../../arbitration/bundle";
import { disputeManagerAbi, gigEscrowAbi, providerRegistryAbi } from "../../arbitration/chain";
import { icsHash, icsToJson, penaltyFor, type Ics } from "../../arbitration/ics";
import { packageHash, packageToJson, parsePackage } from "../../arbitration/package";
import { disputeManagerDomain, resolutionFromJson, resolutionHash, verifyResolutionSignature } from "../../arbitration/resolution";
import { judgeRuntimeHash } from "../../arbitration/runner";
import { canon } from "../../channel-client/canonical";
import { gasEscrowDomain } from "../../channel-client/eip712";
import { closeUnilateral, openChannel, type Wallet } from "../../channel-client/escrow";
import { receiptLeaf } from "../../channel-client/leaf";
import { signSessionReceipt, sessionReceiptHash, type SessionReceipt } from "../../channel-client/receipt";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { sessionIdOf, termsHashOf, type PricingTerms } from "../../channel-client/terms";
import { signPaymentTicket } from "../../channel-client/ticket";
import { ReceiptAccumulator } from "../../channel-client/accumulator";
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
const ARBITRATORS = [10, 11, 12] as const;
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
 * Everything deployed as `scripts/deploy.ts` deploys it; a provider with an SLA bond and three arbitrators
 * (accounts 10..12) pinned to this judge runtime, registered as `scripts/demo-disputes.ts` does; and the code
 * gig funded by the client, accepted and delivered (with the failing deliverable) by the provider.
 */
async function disputeFixture() {
  const deployment = await deployAll(hre);
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
  const minStake = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "minArbitratorStake" });
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
  for (const index of ARBITRATORS) {
    const wallet = wallets[index]!;
    await write(governance, { address: token, abi: mintAbi, functionName: "mint", args: [wallet.account.address, minStake] });
    await write(wallet, { address: token, abi: erc20Abi, functionName: "approve", args: [registry, minStake] });
    await write(wallet, {
      address: registry,
      abi: providerRegistryAbi,
      functionName: "registerArbitrator",
      args: [judgeRuntimeHash(), label(`did:ioi:arbitrator-${index}`), label(`mldsa: arbitrator-${index}`)],
    });
    await write(wallet, { address: registry, abi: providerRegistryAbi, functionName: "bond", args: [1, minStake] });
  }

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
      ["dispute", "escalate"],
      ["dispute", "expire"],
      ["case", "show"],
    ];

    it("lists the dispute, case and arbitrate commands in the top-level help and each group's subcommands in its own", async () => {
      const top = await run(["--help"]);
      expect(top.code).to.equal(0);
      for (const name of ["dispute", "case", "arbitrate", "gig", "open"]) expect(top.out).to.contain(`  ${name} `);
      for (const group of ["dispute", "case"]) {
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
      for (const option of ["--key-env NAME", "--devnet-quorum N", "--submit", "--out FILE", "--audit FILE", "--dispute-manager", "--json"]) {
        expect(out).to.contain(option);
      }
      const build = (await run(["dispute", "build-gig", "--help"])).out;
      for (const option of ["--gig ID", "--ics-file PATH", "--suite-dir DIR", "--deliverable-dir DIR", "--lane 0|1", "--out FILE"]) {
        expect(build).to.contain(option);
      }
      expect((await run(["dispute", "build-session", "--help"])).out).to.contain("--session ID --seq N");
    });

    it("answers an unknown subcommand and an unknown option with the usage, exit code 2", async () => {
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
      ["escalate without --case", ["dispute", "escalate"], "--case is required"],
      ["expire with a malformed case id", ["dispute", "expire", "--case", "0x12"], '--case must be 0x and 64 hex digits (the case id); received "0x12"'],
      ["case show without --case", ["case", "show"], "--case is required"],
      ["case show with a case id that is not hex", ["case", "show", "--case", `0x${"zz".repeat(32)}`], "--case must be 0x and 64 hex digits"],
      ["arbitrate without --case", ["arbitrate", "--package", "p.json"], "--case is required"],
      ["arbitrate without --package", ["arbitrate", "--case", HASH], "--package is required"],
      ["arbitrate with a quorum of 0", ["arbitrate", "--case", HASH, "--package", "p.json", "--devnet-quorum", "0"], "--devnet-quorum must be from 1 to 10"],
      ["arbitrate with a quorum beyond account 19", ["arbitrate", "--case", HASH, "--package", "p.json", "--devnet-quorum", "11"], "--devnet-quorum must be from 1 to 10"],
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
    const bondFor = (f: Fixture, value: bigint, lane: number) =>
      f.publicClient.readContract({ address: f.deployment.contracts.DisputeManager.address, abi: disputeManagerAbi, functionName: "bondFor", args: [value, lane] });

    it("disputes the code gig end to end: build-gig, open, respond, a devnet quorum arbitrates and submits, the client is refunded", async () => {
      const f = await loadFixture(disputeFixture);
      const dm = f.deployment.contracts.DisputeManager.address;
      const files = gigFiles(f.ics, "gig-e2e");
      const notYet = await cli(f, ROLE.stranger, ["case", "show", "--case", HASH]);
      expectTypedFailure(notYet, 2, "UsageError", `Case ${HASH} does not exist`);

      const built = await cli(f, ROLE.client, [
        "dispute", "build-gig", "--gig", "1", "--ics-file", files.icsFile, "--suite-dir", files.suiteDir, "--deliverable-dir", files.deliverableDir, "--out", files.out,
      ]);
      expect(built.code, built.err).to.equal(0);
      const expectedCaseId = await f.publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "nextCaseId", args: [1, pad(toHex(1n), { size: 32 })] });
      const text = readFileSync(files.out, "utf8");
      const pkg = parsePackage(text);
      expect(text).to.equal(canon(packageToJson(pkg)));
      expect(jsonOf(built)).to.deep.include({ ok: true, caseId: expectedCaseId, packageHash: packageHash(pkg), kind: "gig", lane: 1, gigId: "1" });
      expect(pkg).to.deep.include({ caseId: expectedCaseId, challenger: addressOf(ROLE.client), lane: 1 });
      expect(pkg.evidence.map((e) => e.kind)).to.deep.equal(["ics", "test_suite", "deliverable"]);
      expect(built.out).to.contain(`case ${expectedCaseId}`);

      // Only the client can dispute, and only with the delivered files.
      const stranger = await cli(f, ROLE.stranger, [
        "dispute", "build-gig", "--gig", "1", "--ics-file", files.icsFile, "--suite-dir", files.suiteDir, "--deliverable-dir", files.deliverableDir, "--out", files.out,
      ]);
      expectTypedFailure(stranger, 1, "PackageMismatchError", "Only gig 1's client");

      const opened = await cli(f, ROLE.client, ["dispute", "open", "--package", files.out]);
      expect(opened.code, opened.err).to.equal(0);
      const bond = await bondFor(f, BOUNTY, 1);
      expect(jsonOf(opened)).to.deep.include({ ok: true, caseId: expectedCaseId, kind: "gig", lane: 1, bond: bond.toString(), asset: zeroAddress, packageHash: packageHash(pkg) });

      // The same package again names a case id the DisputeManager will not assign: refused before sending.
      const nonce = await f.publicClient.getTransactionCount({ address: addressOf(ROLE.client) });
      const stale = await cli(f, ROLE.client, ["dispute", "open", "--package", files.out]);
      expectTypedFailure(stale, 1, "StaleCaseIdError", `The package names case ${expectedCaseId}`);
      expect(await f.publicClient.getTransactionCount({ address: addressOf(ROLE.client) })).to.equal(nonce);

      const responded = await cli(f, ROLE.provider, ["dispute", "respond", "--case", expectedCaseId]);
      expect(jsonOf(responded)).to.deep.include({ ok: true, caseId: expectedCaseId, respondent: addressOf(ROLE.provider), bond: bond.toString() });
      const again = await cli(f, ROLE.provider, ["dispute", "respond", "--case", expectedCaseId]);
      expectTypedFailure(again, 1, "DisputeTransactionError", `Case ${expectedCaseId} is already contested`);
      expectTypedFailure(await cli(f, ROLE.stranger, ["dispute", "respond", "--case", expectedCaseId]), 1, "DisputeTransactionError", "Only case");

      const shown = await cli(f, ROLE.stranger, ["case", "show", "--case", expectedCaseId], { IOI_PRIVATE_KEY: undefined });
      expect(jsonOf(shown)).to.deep.include({
        ok: true,
        caseId: expectedCaseId,
        kind: "gig",
        gigId: "1",
        status: "open",
        lane: 1,
        challenger: addressOf(ROLE.client),
        respondent: addressOf(ROLE.provider),
        value: BOUNTY.toString(),
        challengerBond: bond.toString(),
        respondentBond: bond.toString(),
        packageHash: packageHash(pkg),
      });
      expect(shown.out).to.contain("gig dispute of gig 1, open at lane 1");

      const clientBefore = await ethOf(f, addressOf(ROLE.client));
      const resolutionFile = path.join(dir, "resolution.json");
      const auditFile = path.join(dir, "audit.jsonl");
      const arbitrated = await cli(f, ROLE.watcher, [
        "arbitrate", "--case", expectedCaseId, "--package", files.out, "--devnet-quorum", "3", "--submit", "--out", resolutionFile, "--audit", auditFile,
      ]);
      expect(arbitrated.code, arbitrated.err).to.equal(0);
      const result = jsonOf(arbitrated);
      const { refund, slash } = penaltyFor(f.ics, 3, BOUNTY); // 3 of the 12 tests fail
      expect(result).to.deep.include({ ok: true, caseId: expectedCaseId, kind: "gig", state: "deliver", verdict: "provider_fault", reasonCodes: [], arbitrators: 3 });
      expect(result.remedy).to.deep.equal({ verdict: 1, refund: refund.toString(), slash: slash.toString() });
      expect(result.signatures.map((s: { signer: string }) => s.signer)).to.deep.equal(ARBITRATORS.map(addressOf));
      const burned = (bond * 2_000n) / 10_000n;
      expect(result.submitted).to.deep.include({
        outcome: "resolved",
        refunded: refund.toString(),
        slashed: slash.toString(),
        toChallenger: (2n * bond - burned).toString(),
        toRespondent: "0",
        burned: burned.toString(),
      });
      expect(arbitrated.out).to.contain("verdict provider_fault");
      expect(arbitrated.out).to.contain("Submitted: case resolved");

      // The client paid nothing here (the watcher submitted): its balance grew by the refund and the bonds won.
      expect(await ethOf(f, addressOf(ROLE.client))).to.equal(clientBefore + refund + 2n * bond - burned);
      const gig = await f.publicClient.readContract({ address: f.deployment.contracts.GigEscrow.address, abi: gigEscrowAbi, functionName: "gigOf", args: [1n] });
      expect(gig.status).to.equal(5); // Released: the rest of the bounty went to the provider

      const written = readFileSync(resolutionFile, "utf8");
      const resolution = resolutionFromJson(JSON.parse(written));
      expect(canon(JSON.parse(written))).to.equal(written);
      expect(resolutionHash(resolution)).to.equal(result.resolutionHash);
      const audit = readFileSync(auditFile, "utf8").trim().split("\n").map((line) => JSON.parse(line) as { phase: string; actor: string });
      expect(audit).to.have.length(15); // 3 arbitrators × intake, plan, execute, verify, deliver
      expect(audit.filter((entry) => entry.phase === "deliver").map((entry) => entry.actor)).to.deep.equal(ARBITRATORS.map((i) => `arbitrator:${addressOf(i)}`));

      expect(jsonOf(await cli(f, ROLE.stranger, ["case", "show", "--case", expectedCaseId]))).to.deep.include({ status: "resolved" });
      const resubmit = await cli(f, ROLE.watcher, ["arbitrate", "--case", expectedCaseId, "--package", files.out, "--devnet-quorum", "3", "--submit"]);
      expectTypedFailure(resubmit, 1, "DisputeTransactionError", "WrongCaseStatus");
    });

    it("signs as the acting arbitrator, escalates with a top-up, and expires the case to the slow path and out", async () => {
      const f = await loadFixture(disputeFixture);
      const files = gigFiles(f.ics, "gig-lanes");
      const built = jsonOf(await cli(f, ROLE.client, [
        "dispute", "build-gig", "--gig", "1", "--ics-file", files.icsFile, "--suite-dir", files.suiteDir, "--deliverable-dir", files.deliverableDir, "--lane", "0", "--out", files.out,
      ]));
      const caseId = built.caseId as Hex;
      expect(built).to.deep.include({ ok: true, lane: 0 });
      const lane0 = await bondFor(f, BOUNTY, 0);
      expect(jsonOf(await cli(f, ROLE.client, ["dispute", "open", "--package", files.out]))).to.deep.include({ ok: true, caseId, lane: 0, bond: lane0.toString() });

      // One arbitrator alone: signs the resolution with the acting key and prints the signature.
      const solo = await cli(f, ARBITRATORS[0], ["arbitrate", "--case", caseId, "--package", files.out]);
      expect(solo.code, solo.err).to.equal(0);
      const soloJson = jsonOf(solo);
      expect(soloJson).to.deep.include({ state: "deliver", verdict: "provider_fault", arbitrators: 1 });
      expect(soloJson).to.not.have.property("submitted");
      const [signed] = soloJson.signatures as { signer: Address; signature: Hex }[];
      expect(signed!.signer).to.equal(addressOf(ARBITRATORS[0]));
      const message = { caseId, verdict: 1 as const, refund: BigInt(soloJson.remedy.refund), slash: BigInt(soloJson.remedy.slash), resolutionHash: soloJson.resolutionHash as Hex };
      const domain = disputeManagerDomain(31337n, getAddress(f.deployment.contracts.DisputeManager.address));
      await verifyResolutionSignature(domain, message, signed!.signature, signed!.signer);
      expect(solo.out).to.contain(`signed by ${signed!.signer}: ${signed!.signature}`);

      expectTypedFailure(await cli(f, ROLE.stranger, ["dispute", "escalate", "--case", caseId]), 1, "DisputeTransactionError", "neither the challenger nor the respondent");
      const lane1 = await bondFor(f, BOUNTY, 1);
      const escalated = await cli(f, ROLE.client, ["dispute", "escalate", "--case", caseId]);
      expect(jsonOf(escalated)).to.deep.include({ ok: true, by: "challenger", lane: 1, status: "open", topUp: (lane1 - lane0).toString(), bond: lane1.toString() });
      expect(jsonOf(await cli(f, ROLE.stranger, ["case", "show", "--case", caseId]))).to.deep.include({ lane: 1, challengerBond: lane1.toString(), respondentBond: "0" });

      expectTypedFailure(await cli(f, ROLE.stranger, ["dispute", "expire", "--case", caseId]), 1, "DisputeTransactionError", "DisputeManager.expire reverted with DeadlineNotPassed(");
      const params = await f.publicClient.readContract({ address: f.deployment.contracts.DisputeManager.address, abi: disputeManagerAbi, functionName: "params" });
      await time.increase(params.decisionWindow + 1);
      expect(jsonOf(await cli(f, ROLE.stranger, ["dispute", "expire", "--case", caseId]))).to.deep.include({ ok: true, outcome: "slow_path", lane: 2 });
      expectTypedFailure(await cli(f, ROLE.client, ["dispute", "escalate", "--case", caseId]), 1, "DisputeTransactionError", "is slow_path");
      await time.increase(params.slowPathTimeout + 1);
      const clientBefore = await ethOf(f, addressOf(ROLE.client));
      const expired = await cli(f, ROLE.stranger, ["dispute", "expire", "--case", caseId]);
      expect(jsonOf(expired)).to.deep.include({ ok: true, outcome: "expired", toChallenger: lane1.toString(), toRespondent: "0" });
      expect(await ethOf(f, addressOf(ROLE.client))).to.equal(clientBefore + lane1);
      const shown = jsonOf(await cli(f, ROLE.stranger, ["case", "show", "--case", caseId]));
      expect(shown).to.deep.include({ status: "expired", lane: 2 });
    });

    it("disputes a session receipt from the payer's store: build-session, open, a devnet quorum resolves it", async () => {
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
      expect(receipts.map((r) => r.leafIndex)).to.deep.equal([0n, 1n]);
      expect(receipts[1]!.merkleProof).to.deep.equal(tree.proof(1, 3));

      const openedCase = await cli(f, ROLE.payer, ["dispute", "open", "--package", out]);
      expect(openedCase.code, openedCase.err).to.equal(0);
      const caseId = jsonOf(openedCase).caseId as Hex;
      expect(caseId).to.equal(pkg.caseId);
      expect(jsonOf(await cli(f, ROLE.stranger, ["case", "show", "--case", caseId]))).to.deep.include({ kind: "session", sessionId, status: "open", lane: 0 });

      const arbitrated = await cli(f, ROLE.watcher, ["arbitrate", "--case", caseId, "--package", out, "--devnet-quorum", "3", "--submit"]);
      expect(arbitrated.code, arbitrated.err).to.equal(0);
      const result = jsonOf(arbitrated);
      expect(result).to.deep.include({ kind: "session", state: "deliver", verdict: "provider_fault" });
      expect(result.submitted).to.deep.include({ outcome: "resolved", refunded: pricing.pricePerInvocation.toString(), slashed: "0" });
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
      expectTypedFailure(noContract, 2, "UsageError", `No contract at ${addressOf(ROLE.stranger)}`);
    });
  });
});
