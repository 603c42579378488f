/**
 * Arbitration end to end on the Hardhat network: a challenger builds a package and opens a case, three
 * arbitrators each run Lane 0 + Lane 1 independently on what they read from the chain, reach byte-identical
 * resolutions, a drawn panel's supermajority signs the resolution hash, and the verdict is finalised on-chain.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { getAddress, keccak256, parseEther, stringToBytes, zeroAddress, zeroHash, type Address, type Hex } from "viem";

import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import { buildGigPackage, buildSessionPackage } from "../../arbitration/runner/build";
import { currentClosingState, finalizeCase, loadCaseContext, openGigCase, openSessionCase, submitVerdict, type Deployment } from "../../arbitration/runner/chain";
import { canon } from "../../channel-client/core/canonical";
import { icsFromJson, icsHash, penaltyFor, unserviceableRefund, type Ics, type IcsJson } from "../../arbitration/documents/ics";
import { makeEvidence, packageHash, parsePackage, packageToJson, type ChallengePackage } from "../../arbitration/documents/package";
import { didHashOf, mldsaKeyPair, signIdentityAnchor } from "../../channel-client/core/identity";
import { disputeManagerDomain, resolutionDigest, resolutionToJson, signResolution } from "../../arbitration/lanes/resolution";
import { FAULT_RECEIPT_FILE } from "../../arbitration/lanes/lane0";
import { signSessionKeyGrant } from "../../channel-client/core/session-key";
import { arbitrate, AuditLog, type ArbitrationRun } from "../../arbitration/runner/runner";
import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { anchorReceiptCommit, closeCooperative, closeUnilateral, openChannel } from "../../channel-client/chain/escrow";
import { signReceiptCommit, type SignedReceiptCommit } from "../../channel-client/core/receipt-commit";
import { signSettlementSummary } from "../../channel-client/core/summary";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { paymentTicketHash, signPaymentTicket } from "../../channel-client/core/ticket";
import { sessionReceiptHash, signSessionReceipt, type SessionReceipt } from "../../channel-client/core/receipt";
import { sessionIdOf, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { hardhatAccount } from "../helpers/fixtures";
import { balanceOf, drawPanel, ETH_STAKE_RATE, KIND, STATUS, supermajority, SYS, systemFixture, type System } from "../helpers/system";
import { BAD_DELIVERABLE, GOOD_DELIVERABLE, sampleIcsJson, SUITE } from "./fixtures/samples";

const BURN: Address = "0x000000000000000000000000000000000000dEaD";
const GIG_AMOUNT = parseEther("1");

function deploymentOf(s: System): Deployment {
  return {
    disputeManager: getAddress(s.disputes.address),
    gasEscrow: getAddress(s.escrow.address),
    gigEscrow: getAddress(s.gigs.address),
    registry: getAddress(s.registry.address),
  };
}

/** Three arbitrators run the case independently (each reads the chain itself). */
async function threeRuns(s: System, caseId: Hex, pkg: ChallengePackage, replay?: Parameters<typeof arbitrate>[0]["replay"]) {
  const runs: ArbitrationRun[] = [];
  for (const i of [0, 1, 2]) {
    // Each arbitrator receives the package as bytes and parses it itself.
    const received = parsePackage(canon(packageToJson(pkg)));
    const ctx = await loadCaseContext(s.publicClient, deploymentOf(s), caseId, received);
    runs.push(await arbitrate({ pkg: received, ctx, actor: `arbitrator-${i}`, ...(replay ? { replay } : {}) }));
  }
  return runs;
}

/**
 * The case's panel is drawn (after the respond window if nobody contested), a supermajority of it signs the
 * agreed message and the watcher submits it; a decided verdict is finalised once the appeal window has passed.
 */
async function enforce(s: System, run: ArbitrationRun) {
  const domain = disputeManagerDomain(s.chainId, getAddress(s.disputes.address));
  expect(await s.disputes.read.hashResolution([run.message])).to.equal(resolutionDigest(domain, run.message));
  const caseId = run.message.caseId;
  const c = await s.disputes.read.caseOf([caseId]);
  if (c.respondentBond === 0n && BigInt(await time.latest()) <= BigInt(c.respondBy)) await time.increaseTo(BigInt(c.respondBy) + 1n);
  const panel = await drawPanel(s, caseId);
  const signatures = await Promise.all(
    panel.slice(0, supermajority(panel.length)).map(async (signer) => ({ signer: signer.address, signature: await signResolution(signer, domain, run.message) })),
  );
  const deployment = deploymentOf(s);
  const decided = await submitVerdict({ wallet: s.watcher, publicClient: s.publicClient, deployment, message: run.message, signatures });
  if (decided.outcome === "slow_path") return { outcome: "escalated" as const };
  await time.increaseTo(decided.deadline + 1n);
  return { outcome: "resolved" as const, ...(await finalizeCase({ wallet: s.watcher, publicClient: s.publicClient, deployment, caseId })) };
}

/*//////////////////////////////////////////////////////////////
                                 GIGS
//////////////////////////////////////////////////////////////*/

type GigCase = System & { gigId: bigint; caseId: Hex; pkg: ChallengePackage; ics: Ics };

async function gigCase(
  s: System,
  options: { deliverable?: Bundle; icsJson?: Partial<IcsJson>; suite?: Bundle | null; mutate?: (p: ChallengePackage) => ChallengePackage } = {},
): Promise<GigCase> {
  const deliverable = options.deliverable ?? BAD_DELIVERABLE;
  const ics = icsFromJson(sampleIcsJson({ asset: zeroAddress, ...options.icsJson }));
  const deadline = Math.floor(Date.now() / 1000) + 30 * 86_400;
  await s.gigs.write.fund([s.provider.account.address, zeroAddress, GIG_AMOUNT, icsHash(ics), deadline, 3600], {
    account: s.client.account,
    value: GIG_AMOUNT,
  });
  const gigId = await s.gigs.read.gigCount();
  await s.gigs.write.accept([gigId], { account: s.provider.account });
  await s.gigs.write.deliver([gigId, bundleHash(deliverable), zeroHash], { account: s.provider.account });
  const caseId = await s.disputes.read.nextCaseId([KIND.Gig, `0x${gigId.toString(16).padStart(64, "0")}`]);
  let pkg = buildGigPackage({
    caseId,
    chainId: s.chainId,
    disputeManager: getAddress(s.disputes.address),
    challenger: getAddress(s.client.account.address),
    lane: 1,
    gigEscrow: getAddress(s.gigs.address),
    gigId,
    ics,
    suite: options.suite === undefined ? SUITE : options.suite,
    deliverable,
  });
  if (options.mutate) pkg = options.mutate(pkg);
  await openGigCase({
    wallet: s.client,
    publicClient: s.publicClient,
    disputeManager: getAddress(s.disputes.address),
    gigEscrow: getAddress(s.gigs.address),
    gigId,
    lane: 1,
    packageHash: packageHash(pkg),
  });
  return { ...s, gigId, caseId, pkg, ics };
}

async function parties(s: System) {
  const who = [s.client.account.address, s.provider.account.address, BURN];
  return Promise.all(who.map((a) => balanceOf(s, zeroAddress, a)));
}

describe("arbitration: cases end to end", function () {
  this.timeout(120_000);

  it("Appendix A.4: code failing 3 of 12 tests → Lane 1 provider fault, partial refund and SLA slash per the ICS schedule", async function () {
    const s = await loadFixture(systemFixture);
    const c = await gigCase(s);
    const runs = await threeRuns(s, c.caseId, c.pkg);
    // Three independent runs: byte-identical resolutions.
    expect(new Set(runs.map((r) => canon(resolutionToJson(r.resolution)))).size).to.equal(1);
    const [run] = runs;
    expect(run!.state).to.equal("deliver");
    expect(run!.resolution.lane0.passed).to.equal(true);
    expect(run!.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    const tests = run!.resolution.objectiveChecks.find((check) => check.name === "passes_tests")!;
    expect(tests.status).to.equal(false);
    expect(tests.detail).to.match(/^3 of 12 tests failed/);
    const penalty = penaltyFor(c.ics, 3, GIG_AMOUNT);
    expect(run!.message).to.deep.include({ verdict: 1, refund: penalty.refund, slash: penalty.slash });
    // Every transition is in the audit log, ending in deliver.
    expect(run!.audit.map((e) => e.phase)).to.deep.equal(["intake", "plan", "execute", "verify", "deliver"]);

    const bond = (await s.disputes.read.caseOf([c.caseId])).challengerBond;
    const before = await parties(s);
    const slashBefore = await s.registry.read.bondOf([0, s.provider.account.address]);
    const resolved = await enforce(s, run!);
    expect(resolved.outcome).to.equal("resolved");
    const after = await parties(s);
    const burnt = (bond * 2_000n) / 10_000n;
    // Silent respondent: the client's bond back less the panel's fee (10%), which comes from it.
    expect(after[0]! - before[0]!).to.equal(penalty.refund + bond - (bond * 1_000n) / 10_000n);
    expect(after[1]! - before[1]!).to.equal(GIG_AMOUNT - penalty.refund);
    expect(after[2]! - before[2]!).to.equal(0n);
    expect(burnt > 0n).to.equal(true);
    const slashAfter = await s.registry.read.bondOf([0, s.provider.account.address]);
    expect(slashBefore.active - slashAfter.active).to.equal(penalty.slash);
  });

  it("a deliverable that passes every check → challenger fault: the provider is paid and wins the bond", async function () {
    const s = await loadFixture(systemFixture);
    const c = await gigCase(s, { deliverable: GOOD_DELIVERABLE });
    const [run] = await threeRuns(s, c.caseId, c.pkg);
    expect(run!.resolution.aggregate.finalVerdict).to.equal("challenger_fault");
    const before = await parties(s);
    await enforce(s, run!);
    const after = await parties(s);
    const bond = (await s.disputes.read.caseOf([c.caseId])).challengerBond;
    expect(after[1]! - before[1]!).to.equal(GIG_AMOUNT + bond - (bond * 2_000n) / 10_000n - (bond * 1_000n) / 10_000n); // burn and fee
  });

  it("a provider's fault receipt with evidence of work (the rest of the delivery passes tests of the bound suite) → no fault: refund less compute spent, no slash", async function () {
    const s = await loadFixture(systemFixture);
    const fault: Bundle = {
      files: { ...GOOD_DELIVERABLE.files, [FAULT_RECEIPT_FILE]: JSON.stringify({ code: "ERR_UPSTREAM_POLICY_VIOLATION", detail: "upstream refused the prompt" }) },
    };
    const c = await gigCase(s, { deliverable: fault });
    const [run] = await threeRuns(s, c.caseId, c.pkg);
    expect(run!.resolution.aggregate.finalVerdict).to.equal("no_fault");
    expect(run!.message.refund).to.equal(unserviceableRefund(c.ics, GIG_AMOUNT));
    const bondBefore = await s.registry.read.bondOf([0, s.provider.account.address]);
    await enforce(s, run!);
    expect(await s.registry.read.bondOf([0, s.provider.account.address])).to.deep.equal(bondBefore);
  });

  // Issue 27 finding 7 (intentional change): a bare declaration used to keep compute_spent_bps as no fault.
  it("a bare fault receipt (nothing else delivered) → provider fault: the bounty refunded in full, no slash (FAULT_RECEIPT_UNSUPPORTED)", async function () {
    const s = await loadFixture(systemFixture);
    const fault: Bundle = {
      files: { [FAULT_RECEIPT_FILE]: JSON.stringify({ code: "ERR_UPSTREAM_POLICY_VIOLATION", detail: "upstream refused the prompt" }) },
    };
    const c = await gigCase(s, { deliverable: fault });
    const [run] = await threeRuns(s, c.caseId, c.pkg);
    expect(run!.resolution.aggregate).to.deep.include({ finalVerdict: "provider_fault", reasonCodes: ["FAULT_RECEIPT_UNSUPPORTED"] });
    expect(run!.message).to.deep.include({ verdict: 1, refund: GIG_AMOUNT, slash: 0n });
    const bondBefore = await s.registry.read.bondOf([0, s.provider.account.address]);
    await enforce(s, run!);
    expect(await s.registry.read.bondOf([0, s.provider.account.address])).to.deep.equal(bondBefore);
  });

  // Issue 27: an invalid fault receipt is the provider's own evidence; it no longer makes the case undecidable.
  for (const [label, extra, failed] of [
    ["alone", {}, 0],
    ["beside code failing 3 of 12 tests", BAD_DELIVERABLE.files, 3],
  ] as const) {
    it(`an invalid fault receipt ${label} → provider fault (FAULT_RECEIPT_INVALID): the bounty refunded in full, slashed only for failing tests, exact balances`, async function () {
      const s = await loadFixture(systemFixture);
      const fault: Bundle = { files: { ...extra, [FAULT_RECEIPT_FILE]: JSON.stringify({ code: "ERR_NOT_A_CODE", detail: "trust me" }) } };
      const c = await gigCase(s, { deliverable: fault });
      const runs = await threeRuns(s, c.caseId, c.pkg);
      expect(new Set(runs.map((r) => r.resolutionHash)).size).to.equal(1);
      const run = runs[0]!;
      expect(run.state).to.equal("deliver");
      expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "provider_fault", unresolved: false, reasonCodes: ["FAULT_RECEIPT_INVALID"] });
      const slash = failed ? penaltyFor(c.ics, failed, GIG_AMOUNT).slash : 0n;
      expect(failed === 0 || slash > 0n).to.equal(true);
      expect(run.message).to.deep.include({ verdict: 1, refund: GIG_AMOUNT, slash });
      const bondBefore = await s.registry.read.bondOf([0, s.provider.account.address]);
      const before = await parties(s);
      await enforce(s, run);
      const after = await parties(s);
      const bond = (await s.disputes.read.caseOf([c.caseId])).challengerBond;
      // Uncontested: the panel's fee (10 % of the bond) comes out of the winning challenger's bond; the provider gets nothing.
      expect(after[0]! - before[0]!).to.equal(GIG_AMOUNT + bond - (bond * 1_000n) / 10_000n);
      expect(after[1]! - before[1]!).to.equal(0n);
      expect(bondBefore.active - (await s.registry.read.bondOf([0, s.provider.account.address])).active).to.equal(slash);
    });
  }

  // Issue 27 finding 5 (intentional change): the suite is evidence the challenger owes; this used to be undecidable.
  it("a test suite whose hash does not match the ICS → decided against the challenger (TEST_SUITE_HASH_MISMATCH), never undecidable", async function () {
    const s = await loadFixture(systemFixture);
    const tampered: Bundle = { files: { ...SUITE.files, "lib/cases.js": SUITE.files["lib/cases.js"]!.replace("[0, 0], 0]", "[0, 0], 1]") } };
    const c = await gigCase(s, { suite: tampered });
    const [run] = await threeRuns(s, c.caseId, c.pkg);
    expect(run!.state).to.equal("deliver");
    expect(run!.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", unresolved: false, reasonCodes: ["TEST_SUITE_HASH_MISMATCH"] });
    expect(run!.resolution.objectiveChecks).to.deep.equal([]); // Lane 1 never ran on a suite that is not the bound one
    expect(run!.audit.map((e) => e.phase).at(-1)).to.equal("deliver");
    expect(run!.resolution.lane0.checks.find((check) => check.name === "test_suite_binding")!.status).to.equal("fail");
    expect(run!.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });
    const resolved = await enforce(s, run!);
    expect(resolved.outcome).to.equal("resolved");
    expect((await s.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.Resolved);
  });

  it("a deliverable that loops forever → decided against the provider: every test fails by its step budget, exact balances", async function () {
    const s = await loadFixture(systemFixture);
    const hang: Bundle = { files: { "math.js": "while (true) {}\n" } };
    const base = sampleIcsJson();
    const c = await gigCase(s, {
      deliverable: hang,
      icsJson: { rubric: { version: 1, items: [{ id: "passes_tests", kind: "test_suite", step_budget: 10 }, ...base.rubric.items.slice(1)] } },
    });
    const [run] = await threeRuns(s, c.caseId, c.pkg);
    expect(run!.state).to.equal("deliver");
    expect(run!.resolution.aggregate).to.deep.include({ finalVerdict: "provider_fault", reasonCodes: ["DELIVERABLE_STEP_BUDGET"] });
    const penalty = penaltyFor(c.ics, 12, GIG_AMOUNT);
    expect(run!.message).to.deep.include({ verdict: 1, refund: penalty.refund, slash: penalty.slash });
    const before = await parties(s);
    await enforce(s, run!);
    const after = await parties(s);
    const bond = (await s.disputes.read.caseOf([c.caseId])).challengerBond;
    // Uncontested: the panel's fee (10 % of the bond) comes out of the winning challenger's bond.
    expect(after[0]! - before[0]!).to.equal(penalty.refund + bond - (bond * 1_000n) / 10_000n);
    expect(after[1]! - before[1]!).to.equal(GIG_AMOUNT - penalty.refund);
  });

  it("a rubric item that needs semantic judgement → escalation (Lane 2 is not built)", async function () {
    const s = await loadFixture(systemFixture);
    const base = sampleIcsJson();
    const c = await gigCase(s, {
      deliverable: GOOD_DELIVERABLE,
      icsJson: { rubric: { version: 1, items: [...base.rubric.items, { id: "readable", kind: "semantic", description: "The code is idiomatic." }] } },
    });
    const [run] = await threeRuns(s, c.caseId, c.pkg);
    expect(run!.state).to.equal("fail_safe");
    expect(run!.resolution.aggregate.reasonCodes).to.deep.equal(["NEEDS_LANE2:readable"]);
  });

  it("a package that is not the one the case committed → the arbitrator abstains (nobody's fault: it fetches the committed one)", async function () {
    const s = await loadFixture(systemFixture);
    const c = await gigCase(s);
    const other = { ...c.pkg, graphId: zeroHash };
    const ctx = await loadCaseContext(s.publicClient, deploymentOf(s), c.caseId, other);
    const run = await arbitrate({ pkg: other, ctx, actor: "arbitrator" });
    expect(run.state).to.equal("abstain");
    expect(run.resolution.aggregate.reasonCodes).to.deep.equal(["PACKAGE_HASH_MISMATCH"]);
    expect(run.audit.map((e) => e.phase)).to.deep.equal(["intake", "abstain"]);
  });

  it("Lane 0 checks the respondent's hybrid identity anchor (secp256k1 + ML-DSA-44) against the registry when present", async function () {
    const s = await loadFixture(systemFixture);
    const mldsa = mldsaKeyPair(new Uint8Array(32).fill(9));
    const did = "did:provider";
    // The provider registers the DID and the hash of its real ML-DSA-44 key.
    await s.registry.write.updateProvider(["https://provider.example/ioi", keccak256(stringToBytes("caps")), didHashOf(did), keccak256(mldsa.publicKey)], {
      account: s.provider.account,
    });
    const anchor = await signIdentityAnchor({ did, account: hardhatAccount(SYS.provider), mldsa });
    const good = await gigCase(s, { mutate: (p) => ({ ...p, evidence: [...p.evidence, makeEvidence("identity", anchor)] }) });
    const [run] = await threeRuns(s, good.caseId, good.pkg);
    expect(run!.resolution.lane0.checks.find((check) => check.name === "identity[0]")!.status).to.equal("pass");
    expect(run!.resolution.aggregate.finalVerdict).to.equal("provider_fault");

    // A forged ML-DSA-44 signature (the secp256k1 half still valid) in the challenger's package does not verify:
    // the challenger supplied invalid evidence, so it loses.
    const forgedSig = `0x${"00".repeat(2420)}` as Hex;
    const forged = await gigCase(s, { mutate: (p) => ({ ...p, evidence: [...p.evidence, makeEvidence("identity", { ...anchor, mldsaSignature: forgedSig })] }) });
    const [bad] = await threeRuns(s, forged.caseId, forged.pkg);
    expect(bad!.state).to.equal("deliver");
    expect(bad!.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", reasonCodes: ["IDENTITY_ANCHOR_INVALID"] });
  });

  it("the audit log refuses transitions UAICP does not allow", function () {
    const log = new AuditLog("arbitrator", zeroHash);
    expect(() => log.enter("plan", "ok", "")).to.throw(/Cannot move from start to plan/);
    log.enter("intake", "ok", "");
    expect(() => log.enter("deliver", "ok", "")).to.throw(/Cannot move from intake to deliver/);
    expect(log.entries[0]).to.include({ actor: "arbitrator", phase: "intake", trace_id: "0".repeat(32) });
  });

  /*//////////////////////////////////////////////////////////////
                               SESSIONS
  //////////////////////////////////////////////////////////////*/

  const PRICE = parseEther("0.01");

  /** What the provider does wrong at receipt `badSeq` (issue 12: Lane 0 decides each). */
  type Fault = "policy" | "overmeter" | "gap";

  /**
   * A 4-step session closed by the provider with ticket 4 (root over receipts 1..3), or — `settle` — settled
   * cooperatively with a summary over receipts 1..4; receipt `badSeq` carries `fault` (another policy by default).
   */
  async function sessionCase(s: System, badSeq: bigint | null, fault: Fault = "policy", settle = false, anchored = false, keyed: "no" | "granted" = "no") {
    const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE } as unknown as PricingTerms;
    const payer = hardhatAccount(SYS.payer);
    const provider = hardhatAccount(SYS.provider);
    const policyHash = `0x${"ab".repeat(32)}` as Hex;
    const terms = {
      payer: payer.address,
      provider: provider.address,
      funder: getAddress(s.client.account.address),
      asset: zeroAddress,
      termsHash: termsHashOf(pricing),
      policyHash,
      challengeDuration: 3600n,
      nonce: 7n,
    };
    const opened = await openChannel({ wallet: s.client, publicClient: s.publicClient, escrow: getAddress(s.escrow.address), terms, amount: parseEther("1") });
    const domain = gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: getAddress(s.escrow.address) });
    const sessionId = sessionIdOf(domain, opened.ref);
    const tree = new ReceiptAccumulator();
    const steps = [];
    // Issue 14: tickets signed by a session key under the payer's grant.
    const sessionKey = hardhatAccount(7);
    const grant =
      keyed === "no"
        ? undefined
        : await signSessionKeyGrant({ account: payer, domain, sessionId, key: sessionKey.address, expiry: 4_000_000_000n, spendCap: parseEther("1"), methods: ["tools/call"], epoch: 0n });
    let prev: Hex = zeroHash;
    for (let seq = 1n; seq <= 4n; seq++) {
      const ticket = { sessionId, provider: provider.address, termsHash: terms.termsHash, seq, cumulativeAmount: PRICE * seq, receiptRoot: tree.root() };
      const signedTicket = await signPaymentTicket({ account: grant ? sessionKey : payer, domain, ticket });
      const receipt: SessionReceipt = {
        sessionId,
        seq,
        offloadPacketHash: `0x${seq.toString(16).padStart(64, "0")}`,
        outputHash: `0x${(seq + 100n).toString(16).padStart(64, "0")}`,
        policyHash: seq === badSeq && fault === "policy" ? (`0x${"cd".repeat(32)}` as Hex) : policyHash,
        modelSnapshotId: "model:demo@1",
        metering: { units: 1n, amount: seq === badSeq && fault === "overmeter" ? PRICE * 3n : PRICE },
        // A gap: the provider links receipt `badSeq` to something other than its own previous receipt.
        prevReceiptHash: seq === badSeq && fault === "gap" ? (`0x${"ee".repeat(32)}` as Hex) : prev,
      };
      const signedReceipt = await signSessionReceipt({ account: provider, receipt });
      prev = sessionReceiptHash(receipt);
      const index = tree.append(receiptLeaf(receipt, ticket));
      steps.push({ ticket: signedTicket, receipt: signedReceipt, index });
    }
    let closing: { state: { deposit: bigint; seq: bigint; amount: bigint; receiptRoot: Hex; feeBps: number } };
    let size: number;
    if (settle) {
      // A cooperative summary over all 4 receipts, co-signed and settled; the case uses it as `settledState`.
      const summary = { sessionId, provider: provider.address, payer: payer.address, termsHash: terms.termsHash, finalSeq: 4n, finalAmount: PRICE * 4n, finalReceiptRoot: tree.root(), mode: "Cooperative" as const };
      const payerSignature = await signSettlementSummary({ account: payer, domain, summary });
      const providerSignature = await signSettlementSummary({ account: provider, domain, summary });
      await closeCooperative({ wallet: s.watcher, publicClient: s.publicClient, escrow: getAddress(s.escrow.address), ref: opened.ref, summary, payerSignature, providerSignature });
      closing = { state: await s.escrow.read.settledState([4n, PRICE * 4n, tree.root()]) };
      size = 4;
    } else {
      closing = await closeUnilateral({ wallet: s.provider, publicClient: s.publicClient, escrow: getAddress(s.escrow.address), ref: opened.ref, ticket: steps[3]!.ticket, grant });
      size = 3; // ticket 4 carries the root over receipts 1..3
    }
    // `anchored`: the payer anchors the provider's signed commit over all 4 receipts and proves against it.
    let commit: SignedReceiptCommit | undefined;
    if (anchored) {
      commit = await signReceiptCommit(provider, domain, { sessionId, leafCount: 4n, root: tree.root() });
      await anchorReceiptCommit({ wallet: s.payerWallet, publicClient: s.publicClient, escrow: getAddress(s.escrow.address), ref: opened.ref, commit });
      size = 4;
    }
    const challengedSeq = badSeq ?? 2n;
    const receipts = steps.slice(0, size).map((step) => ({ receipt: step.receipt, ticket: step.ticket, leafIndex: BigInt(step.index), merkleProof: tree.proof(step.index, size), ...(grant ? { sessionKey: grant } : {}) }));
    const caseId = await s.disputes.read.nextCaseId([KIND.Session, sessionId]);
    const pkg = buildSessionPackage({
      caseId,
      chainId: s.chainId,
      disputeManager: getAddress(s.disputes.address),
      challenger: payer.address,
      lane: 0,
      gasEscrow: getAddress(s.escrow.address),
      sessionId,
      ref: opened.ref,
      pricing,
      closing: closing.state,
      ...(commit ? { commit } : {}),
      seq: challengedSeq,
      receipts,
    });
    const challenged = steps[Number(challengedSeq) - 1]!;
    await openSessionCase({
      wallet: s.payerWallet,
      publicClient: s.publicClient,
      disputeManager: getAddress(s.disputes.address),
      lane: 0,
      packageHash: packageHash(pkg),
      ref: opened.ref,
      recorded: closing.state,
      receiptHash: sessionReceiptHash(challenged.receipt.receipt),
      ticketHash: paymentTicketHash(challenged.ticket.ticket),
      proof: tree.proof(challenged.index, size),
    });
    return { caseId, pkg, sessionId, ref: opened.ref, closing: closing.state };
  }

  it("session: a receipt under another policy, proven against the committed root → Lane 0 provider fault, its price refunded", async function () {
    const s = await loadFixture(systemFixture);
    const c = await sessionCase(s, 2n);
    const runs = await threeRuns(s, c.caseId, c.pkg);
    expect(new Set(runs.map((r) => r.resolutionHash)).size).to.equal(1);
    const [run] = runs;
    expect(run!.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    expect(run!.resolution.lane0.checks.find((check) => check.name === "receipt[seq 2].policy_hash")!.status).to.equal("fail");
    expect(run!.resolution.objectiveChecks).to.deep.equal([]);
    expect(run!.message).to.deep.include({ verdict: 1, refund: PRICE, slash: 0n });
    await enforce(s, run!);
    const now = await currentClosingState(s.publicClient, getAddress(s.escrow.address), c.sessionId);
    expect(now.amount).to.equal(c.closing.amount - PRICE);
    expect((await s.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.Resolved);
  });

  it("session: a receipt metering three times the terms' price → Lane 0 provider fault (RECEIPT_OVER_METERED), the excess refunded through a drawn panel", async function () {
    const s = await loadFixture(systemFixture);
    const c = await sessionCase(s, 2n, "overmeter");
    const runs = await threeRuns(s, c.caseId, c.pkg);
    expect(new Set(runs.map((r) => r.resolutionHash)).size).to.equal(1);
    const [run] = runs;
    expect(run!.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    expect(run!.resolution.lane0.checks.find((check) => check.name === "receipt[seq 2].metering")!.status).to.equal("fail");
    expect(run!.message).to.deep.include({ verdict: 1, refund: PRICE * 2n, slash: 0n });
    await enforce(s, run!);
    const now = await currentClosingState(s.publicClient, getAddress(s.escrow.address), c.sessionId);
    expect(now.amount).to.equal(c.closing.amount - PRICE * 2n);
  });

  it("session: a provider-signed receipt that skips its predecessor (RECEIPT_CHAIN_GAP) → Lane 0 provider fault, its metered amount refunded", async function () {
    const s = await loadFixture(systemFixture);
    const c = await sessionCase(s, 3n, "gap");
    const runs = await threeRuns(s, c.caseId, c.pkg);
    expect(new Set(runs.map((r) => r.resolutionHash)).size).to.equal(1);
    const [run] = runs;
    expect(run!.state).to.equal("deliver");
    expect(run!.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    expect(run!.resolution.lane0.checks.find((check) => check.name === "receipt[seq 3].chain")!.status).to.equal("fail");
    expect(run!.resolution.lane0.checks.find((check) => check.name === "receipt[seq 2].chain")!.status).to.equal("pass");
    expect(run!.message).to.deep.include({ verdict: 1, refund: PRICE, slash: 0n });
    await enforce(s, run!);
    expect((await s.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.Resolved);
  });

  it("session: a cooperatively settled session's over-metered receipt, proven against the co-signed root → refunded to the funder from the provider's SLA bond", async function () {
    const s = await loadFixture(systemFixture);
    const c = await sessionCase(s, 4n, "overmeter", true);
    // The CLI's replay of the escrow's events yields the same settled state the contract fingerprinted.
    expect(await currentClosingState(s.publicClient, getAddress(s.escrow.address), c.sessionId)).to.deep.equal(c.closing);
    const runs = await threeRuns(s, c.caseId, c.pkg);
    expect(new Set(runs.map((r) => r.resolutionHash)).size).to.equal(1);
    const [run] = runs;
    expect(run!.resolution.lane0.checks.find((check) => check.name === "committed_root")!.status).to.equal("pass");
    expect(run!.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    expect(run!.message).to.deep.include({ verdict: 1, refund: PRICE * 2n, slash: 0n });
    const funder = getAddress(s.client.account.address);
    const before = await s.token.read.balanceOf([funder]);
    const bondBefore = (await s.registry.read.bondOf([0, s.provider.account.address])).active;
    const result = await enforce(s, run!);
    expect(result.outcome).to.equal("resolved");
    const refundInStake = (PRICE * 2n * ETH_STAKE_RATE) / 10n ** 18n;
    expect((await s.token.read.balanceOf([funder])) - before).to.equal(refundInStake);
    expect((await s.registry.read.bondOf([0, s.provider.account.address])).active).to.equal(bondBefore - refundInStake);
  });

  it("session: an over-metered receipt the closing ticket's lagging root omits, proven against the provider's anchored receipt commit → Lane 0 provider fault, identical from three arbitrators", async function () {
    const s = await loadFixture(systemFixture);
    const c = await sessionCase(s, 4n, "overmeter", false, true);
    const runs = await threeRuns(s, c.caseId, c.pkg);
    expect(new Set(runs.map((r) => r.resolutionHash)).size).to.equal(1);
    const [run] = runs;
    expect(run!.resolution.lane0.checks.find((check) => check.name === "channel.commit_signature")!.status).to.equal("pass");
    expect(run!.resolution.lane0.checks.find((check) => check.name === "receipt[seq 4].merkle_proof")!.status).to.equal("pass");
    expect(run!.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    expect(run!.message).to.deep.include({ verdict: 1, refund: PRICE * 2n, slash: 0n });
    await enforce(s, run!);
    const now = await currentClosingState(s.publicClient, getAddress(s.escrow.address), c.sessionId);
    expect(now.amount).to.equal(c.closing.amount - PRICE * 2n);
  });

  it("session: a receipt commit signed by someone other than the provider → the challenger's fault (COMMIT_SIGNATURE_INVALID); handed over uncommitted, abstain", async function () {
    const s = await loadFixture(systemFixture);
    const c = await sessionCase(s, 4n, "overmeter", false, true);
    const forged = structuredClone(c.pkg);
    const item = forged.evidence.find((e) => e.kind === "channel")!;
    if (item.kind === "channel") item.content.commit = await signReceiptCommit(hardhatAccount(SYS.payer), gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: getAddress(s.escrow.address) }), item.content.commit!.commit);
    const ctx = await loadCaseContext(s.publicClient, deploymentOf(s), c.caseId, forged);
    const committed = await arbitrate({ pkg: forged, ctx: { ...ctx, case: { ...ctx.case, packageHash: packageHash(forged) } }, actor: "arbitrator" });
    expect(committed.state).to.equal("deliver");
    expect(committed.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", reasonCodes: ["COMMIT_SIGNATURE_INVALID", "MERKLE_PROOF_INVALID"] });
    const run = await arbitrate({ pkg: forged, ctx, actor: "arbitrator" });
    expect(run.state).to.equal("abstain");
    expect(run.resolution.aggregate.reasonCodes).to.deep.equal(["PACKAGE_HASH_MISMATCH"]);
  });

  it("session: tickets signed by a session key under the payer's grant → Lane 0 accepts them and decides the receipt (provider fault)", async function () {
    const s = await loadFixture(systemFixture);
    const c = await sessionCase(s, 2n, "policy", false, false, "granted");
    const runs = await threeRuns(s, c.caseId, c.pkg);
    expect(new Set(runs.map((r) => r.resolutionHash)).size).to.equal(1);
    const [run] = runs;
    expect(run!.resolution.lane0.checks.find((check) => check.name === "receipt[seq 2].ticket_signature")!.status).to.equal("pass");
    expect(run!.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    expect(run!.message).to.deep.include({ verdict: 1, refund: PRICE, slash: 0n });
    await enforce(s, run!);
    const now = await currentClosingState(s.publicClient, getAddress(s.escrow.address), c.sessionId);
    expect(now.amount).to.equal(c.closing.amount - PRICE);
  });

  it("session: receipts that all honour the policy → challenger fault", async function () {
    const s = await loadFixture(systemFixture);
    const c = await sessionCase(s, null);
    const [run] = await threeRuns(s, c.caseId, c.pkg);
    expect(run!.state).to.equal("deliver");
    expect(run!.resolution.aggregate.finalVerdict).to.equal("challenger_fault");
  });

  it("session: a receipt whose provider signature was swapped out after the case committed its package (e.g. by a relay) → the arbitrator abstains, not a fault of either party", async function () {
    const s = await loadFixture(systemFixture);
    const c = await sessionCase(s, 2n);
    const forged = structuredClone(c.pkg);
    const item = forged.evidence.find((e) => e.kind === "receipt")!;
    if (item.kind === "receipt") item.content.receipt.signature = `0x${"11".repeat(64)}1b`;
    const ctx = await loadCaseContext(s.publicClient, deploymentOf(s), c.caseId, forged);
    const run = await arbitrate({ pkg: forged, ctx, actor: "arbitrator" });
    expect(run.state).to.equal("abstain");
    expect(run.resolution.aggregate.reasonCodes).to.deep.equal(["PACKAGE_HASH_MISMATCH"]);
    // The committed package's signature was the provider's: judged from it, the case is decided.
    const [decided] = await threeRuns(s, c.caseId, c.pkg);
    expect(decided!.state).to.equal("deliver");
  });
});
