/**
 * Adversarial suite, issue 14 item 3: a provider breaks the channel's terms document (decision 0026) in a
 * receipt that the payer's signed root (or the co-signed settlement root) commits — it serves a model the terms
 * do not list, charges more than the terms price the call's metering at, or leaves out a receipt binding the
 * terms require. The payer proves the receipt into the committed root, three arbitrators run Lane 0 on what
 * they read from the chain and reach byte-identical resolutions, a drawn panel signs, and the verdict is
 * enforced: the refund (through the escrow, or from the SLA bond once the escrow has paid out) and the terms'
 * penalty for the violation as an SLA slash. Every scenario asserts the exact balance change of the payer, the
 * funder, the provider, its bond in the registry, the escrow, the DisputeManager, the treasury, the burn
 * address and every fixture arbitrator, in ETH and LaborGas, gas added back.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { getAddress, parseEther, zeroHash, type Hex } from "viem";

import { buildSessionPackage } from "../../arbitration/runner/build";
import { currentClosingState, loadCaseContext, openSessionCase } from "../../arbitration/runner/chain";
import { packageHash, packageToJson, parsePackage } from "../../arbitration/documents/package";
import { resolutionToJson } from "../../arbitration/lanes/resolution";
import { arbitrate, type ArbitrationRun } from "../../arbitration/runner/runner";
import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { canon } from "../../channel-client/core/canonical";
import { closeCooperative, closeUnilateral, finalizeClose } from "../../channel-client/chain/escrow";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { sessionReceiptHash, signSessionReceipt, type SessionReceipt, type SignedSessionReceipt } from "../../channel-client/core/receipt";
import { signSettlementSummary } from "../../channel-client/core/summary";
import { priceOf, termsHashOf, type TermsDocumentV2 } from "../../channel-client/core/terms";
import { paymentTicketHash, signPaymentTicket, type SignedPaymentTicket } from "../../channel-client/core/ticket";
import { DISPUTE_PARAMS, ETH_STAKE_RATE, KIND, PROVIDER_ROLE, STATUS, systemFixture, type System } from "../helpers/system";
import { BPS, expectDeltas, feeOf, fullBook, openSponsoredChannel, snapshot } from "./helpers";
import { deploymentOf, enforceByPanel, threeRuns } from "./panel";

const P = DISPUTE_PARAMS;
const burnOf = (x: bigint): bigint => (x * BigInt(P.burnBps)) / BPS;
const inStake = (wei: bigint): bigint => (wei * ETH_STAKE_RATE) / 10n ** 18n;

const MODEL = "model:llama-3.1-70b@2024-07-23";
const DEPOSIT = parseEther("1");
const PENALTY = { RECEIPT_MODEL_SWAP: parseEther("40"), RECEIPT_OVER_METERED: parseEther("10"), RECEIPT_REQUIRED_MISSING: parseEther("25") } as const;

/** 0.001 ETH per call + 0.0001 ETH per token, at most 0.01 ETH per call; one model; both hashes required. */
const TERMS: TermsDocumentV2 = {
  version: "2",
  pricing: { perInvocation: parseEther("0.001"), perUnit: { unit: "token", price: parseEther("0.0001") }, capPerCall: parseEther("0.01") },
  models: [MODEL],
  disputes: { windowAfterSettlement: BigInt(P.settledDisputeWindow), penalties: { ...PENALTY }, refundsFromBond: true },
  requiredReceipts: ["rrsa_request_binding", "rrsa_output_commitment"],
};

type Fault = "model" | "price" | "binding";
const CHECK: Record<Fault, string> = { model: "model", price: "metering", binding: "required_receipts" };


/**
 * A session of 4 metered calls (call n meters 10·n tokens) on TERMS, funded by the client for the payer;
 * receipt 2 carries `fault`. Closed by the provider with ticket 4 (the payer's root over receipts 1..3), or —
 * `settle` — settled cooperatively over all 4 receipts. The payer then opens a Lane 0 case on receipt 2 (exactly
 * `caseDelay` seconds after the settlement, when given).
 */
async function violatedSession(s: System, fault: Fault | "none", settle: boolean, doc: TermsDocumentV2 = TERMS, caseDelay?: bigint) {
  const { payer, provider, terms, escrow, opened, domain, sessionId } = await openSponsoredChannel(s, termsHashOf(doc), 11n, DEPOSIT);
  const tree = new ReceiptAccumulator();
  const steps: { ticket: SignedPaymentTicket; receipt: SignedSessionReceipt; index: number }[] = [];
  let prev: Hex = zeroHash;
  let charged = 0n;
  for (let seq = 1n; seq <= 4n; seq++) {
    // Each ticket prepays the cap per call; the receipt charges the metered price.
    const ticket = { sessionId, provider: provider.address, termsHash: terms.termsHash, seq, cumulativeAmount: doc.pricing.capPerCall * seq, receiptRoot: tree.root() };
    const units = 10n * seq;
    const bad = seq === 2n;
    const receipt: SessionReceipt = {
      sessionId,
      seq,
      offloadPacketHash: `0x${seq.toString(16).padStart(64, "0")}`,
      // A receipt without an output commitment proves nothing about what the payer received.
      outputHash: bad && fault === "binding" ? zeroHash : `0x${(seq + 100n).toString(16).padStart(64, "0")}`,
      policyHash: terms.policyHash,
      // The swap: a cheaper model than the one the terms name.
      modelSnapshotId: bad && fault === "model" ? "model:llama-3.1-8b@2024-07-23" : MODEL,
      // Over-priced: the cap per call, for a call whose metering the terms price at far less.
      metering: { units, amount: bad && fault === "price" ? doc.pricing.capPerCall : priceOf(doc, units) },
      prevReceiptHash: prev,
    };
    charged += receipt.metering.amount;
    const signedTicket = await signPaymentTicket({ account: payer, domain, ticket });
    const signedReceipt = await signSessionReceipt({ account: provider, receipt });
    prev = sessionReceiptHash(receipt);
    steps.push({ ticket: signedTicket, receipt: signedReceipt, index: tree.append(receiptLeaf(receipt, ticket)) });
  }
  let closing;
  let size: number;
  if (settle) {
    const summary = { sessionId, provider: provider.address, payer: payer.address, termsHash: terms.termsHash, finalSeq: 4n, finalAmount: charged, finalReceiptRoot: tree.root(), mode: "Cooperative" as const };
    await closeCooperative({
      wallet: s.watcher,
      publicClient: s.publicClient,
      escrow,
      ref: opened.ref,
      summary,
      payerSignature: await signSettlementSummary({ account: payer, domain, summary }),
      providerSignature: await signSettlementSummary({ account: provider, domain, summary }),
    });
    closing = await s.escrow.read.settledState([4n, charged, tree.root()]);
    size = 4;
  } else {
    closing = (await closeUnilateral({ wallet: s.provider, publicClient: s.publicClient, escrow, ref: opened.ref, ticket: steps[3]!.ticket })).state;
    size = 3;
  }
  const receipts = steps.slice(0, size).map((step) => ({ receipt: step.receipt, ticket: step.ticket, leafIndex: BigInt(step.index), merkleProof: tree.proof(step.index, size) }));
  const caseId = await s.disputes.read.nextCaseId([KIND.Session, sessionId]);
  const pkg = buildSessionPackage({
    caseId,
    chainId: s.chainId,
    disputeManager: getAddress(s.disputes.address),
    challenger: payer.address,
    lane: 0,
    gasEscrow: escrow,
    sessionId,
    ref: opened.ref,
    pricing: doc,
    closing,
    seq: 2n,
    receipts,
  });
  const challenged = steps[1]!;
  if (caseDelay !== undefined) {
    // The case's transaction lands exactly `caseDelay` seconds after the cooperative settlement.
    const [, settledAt] = await s.escrow.read.settledInfo([sessionId, closing]);
    await time.setNextBlockTimestamp(BigInt(settledAt) + caseDelay);
  }
  await openSessionCase({
    wallet: s.payerWallet,
    publicClient: s.publicClient,
    disputeManager: getAddress(s.disputes.address),
    lane: 0,
    packageHash: packageHash(pkg),
    ref: opened.ref,
    recorded: closing,
    receiptHash: sessionReceiptHash(challenged.receipt.receipt),
    ticketHash: paymentTicketHash(challenged.ticket.ticket),
    proof: tree.proof(challenged.index, size),
  });
  const receiptAmounts = steps.slice(0, size).map((step) => step.receipt.receipt.metering.amount);
  return { caseId, pkg, sessionId, ref: opened.ref, closing, receiptAmounts, doc, badAmount: challenged.receipt.receipt.metering.amount, badUnits: challenged.receipt.receipt.metering.units };
}

/** What a unilateral close on ticket 4 pays above receipts 1..3's metered sum plus one cap (decision 0026, amendment). */
function prepaidExcessOf(c: Awaited<ReturnType<typeof violatedSession>>): bigint {
  const metered = c.receiptAmounts.reduce((a, b) => a + b, 0n);
  return c.closing.amount - metered - (c.closing.seq - BigInt(c.receiptAmounts.length)) * c.doc.pricing.capPerCall;
}




/** Lane 0's verdict on the package: byte-identical from three arbitrators, a provider fault on `fault`'s check. */
async function decide(s: System, c: Awaited<ReturnType<typeof violatedSession>>, fault: Fault, alsoFailed: string[] = []): Promise<ArbitrationRun> {
  const runs = await threeRuns(s, c.caseId, c.pkg);
  expect(new Set(runs.map((r) => canon(resolutionToJson(r.resolution)))).size, "three arbitrators, one resolution").to.equal(1);
  const run = runs[0]!;
  expect(run.state).to.equal("deliver");
  expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
  const failed = run.resolution.lane0.checks.filter((check) => check.status !== "pass").map((check) => check.name);
  expect(failed).to.deep.equal([`receipt[seq 2].${CHECK[fault]}`, ...alsoFailed]);
  expect(run.resolution.lane0.checks.find((check) => check.name === "terms_binding")!.status).to.equal("pass");
  return run;
}

describe("adversarial: receipts that break the channel's terms document, decided by Lane 0 (issue 14)", function () {
  it("attack: the provider swaps in a cheaper model than the terms name — its receipt, under the payer's root, refunds the call through the escrow and slashes the terms' model-swap penalty", async function () {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const c = await violatedSession(s, "model", false);
    const run = await decide(s, c, "model", ["closing.prepaid_excess"]);
    // The whole call is refunded (the payer paid for a model it did not get), and the terms' penalty slashed; the
    // close on ticket 4 (4 caps) also pays more than receipts 1..3 charged plus one cap: that excess is refunded too.
    const excess = prepaidExcessOf(c);
    expect(excess).to.equal(parseEther("0.021")); // 0.04 − (0.002 + 0.003 + 0.004 + 0.01)
    expect(run.message).to.deep.include({ verdict: 1, refund: c.badAmount + excess, slash: PENALTY.RECEIPT_MODEL_SWAP });
    const { fee, shares, dust } = await enforceByPanel(s, run);
    expect((await s.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.Resolved);
    const recorded = await currentClosingState(s.publicClient, getAddress(s.escrow.address), c.sessionId);
    expect(recorded.amount).to.equal(c.closing.amount - c.badAmount - excess);
    await time.increase(3601);
    await finalizeClose({ wallet: s.watcher, publicClient: s.publicClient, escrow: getAddress(s.escrow.address), ref: c.ref, recorded });
    const paid = c.closing.amount - c.badAmount - excess;
    const routing = feeOf(paid, recorded.feeBps);
    await expectDeltas(s, snap, {
      ETH: {
        client: -paid, // the funder's deposit back, less what the provider keeps after the refund
        provider: paid - routing,
        escrow: routing, // accrued for the treasury
        payer: -fee, // uncontested: the panel's fee comes out of the winner's own bond (decision 0015)
        burn: dust,
        ...shares,
      },
      LGAS: { payer: PENALTY.RECEIPT_MODEL_SWAP - burnOf(PENALTY.RECEIPT_MODEL_SWAP), burn: burnOf(PENALTY.RECEIPT_MODEL_SWAP), registry: -PENALTY.RECEIPT_MODEL_SWAP },
    });
    expect((await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address])).active).to.equal(parseEther("500") - PENALTY.RECEIPT_MODEL_SWAP);
  });

  it("attack: terms whose model-swap penalty exceeds the DisputeManager's slash cap — the signed verdict slashes exactly the cap (value × stake rate × slashCapBps), the panel's verdict is accepted and enforced", async function () {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    // 300 LGAS for a swap: more than a 0.04 ETH case may slash (0.04 ETH × 1000 LGAS/ETH × 200% = 80 LGAS).
    const greedy: TermsDocumentV2 = { ...TERMS, disputes: { ...TERMS.disputes, penalties: { ...PENALTY, RECEIPT_MODEL_SWAP: parseEther("300") } } };
    const c = await violatedSession(s, "model", false, greedy);
    const caseValue = (await s.disputes.read.caseOf([c.caseId])).value;
    expect(caseValue).to.equal(parseEther("0.04"));
    const cap = (inStake(caseValue) * BigInt(P.slashCapBps)) / BPS;
    expect(cap).to.equal(parseEther("80"));
    const run = await decide(s, c, "model", ["closing.prepaid_excess"]);
    const excess = prepaidExcessOf(c);
    expect(run.message).to.deep.include({ verdict: 1, refund: c.badAmount + excess, slash: cap });
    const { fee, shares, dust } = await enforceByPanel(s, run);
    expect((await s.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.Resolved);
    const recorded = await currentClosingState(s.publicClient, getAddress(s.escrow.address), c.sessionId);
    await time.increase(3601);
    await finalizeClose({ wallet: s.watcher, publicClient: s.publicClient, escrow: getAddress(s.escrow.address), ref: c.ref, recorded });
    const paid = c.closing.amount - c.badAmount - excess;
    const routing = feeOf(paid, recorded.feeBps);
    await expectDeltas(s, snap, {
      ETH: { client: -paid, provider: paid - routing, escrow: routing, payer: -fee, burn: dust, ...shares },
      LGAS: { payer: cap - burnOf(cap), burn: burnOf(cap), registry: -cap },
    });
    expect((await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address])).active).to.equal(parseEther("500") - cap);
  });

  it("attack: the provider charges the cap for a call the terms price far lower, in a co-signed settlement — the excess is refunded to the funder from the SLA bond and the over-pricing penalty slashed", async function () {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const c = await violatedSession(s, "price", true);
    const excess = c.badAmount - priceOf(TERMS, c.badUnits);
    expect(excess).to.equal(parseEther("0.007")); // 0.01 charged for 20 tokens priced at 0.003
    const run = await decide(s, c, "price");
    expect(run.message).to.deep.include({ verdict: 1, refund: excess, slash: PENALTY.RECEIPT_OVER_METERED });
    const { fee, shares, dust } = await enforceByPanel(s, run);
    const settled = c.closing.amount;
    const routing = feeOf(settled, c.closing.feeBps);
    await expectDeltas(s, snap, {
      ETH: {
        client: -settled,
        provider: settled - routing,
        escrow: routing,
        payer: -fee,
        burn: dust,
        ...shares,
      },
      LGAS: {
        client: inStake(excess), // the escrow paid out already: the funder's refund comes from the bond
        payer: PENALTY.RECEIPT_OVER_METERED - burnOf(PENALTY.RECEIPT_OVER_METERED),
        burn: burnOf(PENALTY.RECEIPT_OVER_METERED),
        registry: -(inStake(excess) + PENALTY.RECEIPT_OVER_METERED),
      },
    });
  });

  it("attack: the provider leaves the output commitment the terms require out of a settled receipt (lying by omission) — the call is refunded from the SLA bond and the missing-receipt penalty slashed", async function () {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const c = await violatedSession(s, "binding", true);
    const run = await decide(s, c, "binding");
    expect(run.resolution.lane0.checks.find((check) => check.name === "receipt[seq 2].required_receipts")!.detail).to.include("rrsa_output_commitment");
    expect(run.message).to.deep.include({ verdict: 1, refund: c.badAmount, slash: PENALTY.RECEIPT_REQUIRED_MISSING });
    const { fee, shares, dust } = await enforceByPanel(s, run);
    const settled = c.closing.amount;
    const routing = feeOf(settled, c.closing.feeBps);
    await expectDeltas(s, snap, {
      ETH: {
        client: -settled,
        provider: settled - routing,
        escrow: routing,
        payer: -fee,
        burn: dust,
        ...shares,
      },
      LGAS: {
        client: inStake(c.badAmount),
        payer: PENALTY.RECEIPT_REQUIRED_MISSING - burnOf(PENALTY.RECEIPT_REQUIRED_MISSING),
        burn: burnOf(PENALTY.RECEIPT_REQUIRED_MISSING),
        registry: -(inStake(c.badAmount) + PENALTY.RECEIPT_REQUIRED_MISSING),
      },
    });
  });

  it("attack: an honest metered session closed unilaterally on its newest ticket pays the provider the prepaid caps — the payer proves every receipt and Lane 0 refunds the excess over the metered sum plus one in-flight cap (RECEIPT_PREPAID_EXCESS, no penalty)", async function () {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const c = await violatedSession(s, "none", false);
    const runs = await threeRuns(s, c.caseId, c.pkg);
    expect(new Set(runs.map((r) => canon(resolutionToJson(r.resolution)))).size).to.equal(1);
    const run = runs[0]!;
    expect(run.state).to.equal("deliver");
    expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    expect(run.resolution.lane0.checks.filter((check) => check.status !== "pass").map((check) => check.name)).to.deep.equal(["closing.prepaid_excess"]);
    const excess = prepaidExcessOf(c);
    expect(excess).to.equal(parseEther("0.021"));
    expect(run.message).to.deep.include({ verdict: 1, refund: excess, slash: 0n });
    const { fee, shares, dust } = await enforceByPanel(s, run);
    const recorded = await currentClosingState(s.publicClient, getAddress(s.escrow.address), c.sessionId);
    // What the provider keeps: what its receipts charged, plus the cap of the one call the ticket prepaid in flight.
    expect(recorded.amount).to.equal(c.receiptAmounts.reduce((a, b) => a + b, 0n) + TERMS.pricing.capPerCall);
    await time.increase(3601);
    await finalizeClose({ wallet: s.watcher, publicClient: s.publicClient, escrow: getAddress(s.escrow.address), ref: c.ref, recorded });
    const paid = recorded.amount;
    const routing = feeOf(paid, recorded.feeBps);
    await expectDeltas(s, snap, {
      ETH: { client: -paid, provider: paid - routing, escrow: routing, payer: -fee, burn: dust, ...shares },
      LGAS: {},
    });
  });

  it("a package without every receipt from 1 up cannot know the metered sum: the prepaid-excess check is not made (and the case, on an honest receipt, is the challenger's fault)", async function () {
    const s = await loadFixture(systemFixture);
    const c = await violatedSession(s, "none", false);
    // The same case, judged on a package that leaves receipt 1 out (a different package hash: judged off-chain only).
    const pkg = { ...c.pkg, evidence: c.pkg.evidence.filter((item) => !(item.kind === "receipt" && item.content.receipt.receipt.seq === 1n)) };
    const ctx = await loadCaseContext(s.publicClient, deploymentOf(s), c.caseId, pkg);
    const lane0 = await (await import("../../arbitration/lanes/lane0")).runLane0(pkg, { ...ctx, case: { ...ctx.case, packageHash: packageHash(pkg) } });
    expect(lane0.reasonCodes).to.deep.equal([]);
    expect(lane0.checks.map((check) => check.name)).to.not.include("closing.prepaid_excess");
    expect(lane0.violations).to.deep.equal([]);
  });

  describe("the terms' own dispute window after settlement (decision 0026, amendment)", function () {
    // One day: shorter than the DisputeManager's three, so the chain accepts a case the terms have closed.
    const DAY = 24n * 3600n;
    const shortWindow: TermsDocumentV2 = { ...TERMS, disputes: { ...TERMS.disputes, windowAfterSettlement: DAY } };

    it("attack: the payer opens a case on a settled session after the terms' window (but inside the chain's) — Lane 0 decides it against the challenger, who loses its bond; the provider keeps its bond", async function () {
      const s = await loadFixture(systemFixture);
      const snap = await snapshot(s, fullBook(s));
      expect(DAY < BigInt(P.settledDisputeWindow)).to.equal(true);
      const c = await violatedSession(s, "model", true, shortWindow, DAY + 1n);
      const runs = await threeRuns(s, c.caseId, c.pkg);
      expect(new Set(runs.map((r) => canon(resolutionToJson(r.resolution)))).size).to.equal(1);
      const run = runs[0]!;
      // Decided, not fail-safe: the settlement time and the case's block time are facts read from the chain.
      expect(run.state).to.equal("deliver");
      expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", reasonCodes: ["DISPUTE_WINDOW_CLOSED"] });
      const window = run.resolution.lane0.checks.find((check) => check.name === "dispute_window")!;
      expect(window.status).to.equal("fail");
      expect(window.detail).to.include(`until ${BigInt((await s.escrow.read.settledInfo([c.sessionId, c.closing]))[1]) + DAY}`);
      // The model swap in the receipt is not judged: the case was brought too late.
      expect(run.resolution.lane0.checks.some((check) => check.name.startsWith("receipt[seq 2].model"))).to.equal(false);
      expect(run.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });
      const bond = (await s.disputes.read.caseOf([c.caseId])).challengerBond;
      const { fee, shares, dust } = await enforceByPanel(s, run);
      const settled = c.closing.amount;
      const routing = feeOf(settled, c.closing.feeBps);
      await expectDeltas(s, snap, {
        ETH: {
          client: -settled,
          // The provider's payout, plus the challenger's bond less its burn and the panel's fee (decision 0015).
          provider: settled - routing + bond - burnOf(bond) - fee,
          escrow: routing,
          payer: -bond,
          burn: burnOf(bond) + dust,
          ...shares,
        },
        LGAS: {},
      });
      expect((await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address])).active).to.equal(parseEther("500"));
    });

    it("a case opened at exactly settlement + the terms' window is inside it (inclusive, as the contract's own window): the model swap is decided for the payer", async function () {
      const s = await loadFixture(systemFixture);
      const c = await violatedSession(s, "model", true, shortWindow, DAY);
      const run = await decide(s, c, "model");
      expect(run.resolution.lane0.checks.find((check) => check.name === "dispute_window")!.status).to.equal("pass");
      // The settled case's value is 0.014 ETH, so the slash cap (28 LGAS) binds the 40 LGAS penalty.
      const cap = (inStake(c.closing.amount) * BigInt(P.slashCapBps)) / BPS;
      expect(cap).to.equal(parseEther("28"));
      expect(run.message).to.deep.include({ verdict: 1, refund: c.badAmount, slash: cap });
    });

    it("a context that lacks the settlement time makes the arbitrator abstain (SETTLEMENT_TIME_UNKNOWN: its own read of the chain) rather than guess either way", async function () {
      const s = await loadFixture(systemFixture);
      const c = await violatedSession(s, "model", true, shortWindow, DAY + 1n);
      const received = parsePackage(canon(packageToJson(c.pkg)));
      const ctx = await loadCaseContext(s.publicClient, deploymentOf(s), c.caseId, received);
      const { settledAt: _dropped, ...session } = ctx.session!;
      const run = await arbitrate({ pkg: received, ctx: { ...ctx, session }, actor: "arbitrator-0" });
      expect(run.state).to.equal("abstain");
      expect(run.resolution.aggregate.reasonCodes).to.deep.equal(["SETTLEMENT_TIME_UNKNOWN"]);
      expect(run.audit.map((e) => e.phase).at(-1)).to.equal("abstain");
    });
  });

  it("an honest session on the same terms (the listed model, priced by its metering, every binding present) → challenger fault, no refund, no slash", async function () {
    const s = await loadFixture(systemFixture);
    const c = await violatedSession(s, "none", true);
    const runs = await threeRuns(s, c.caseId, c.pkg);
    expect(new Set(runs.map((r) => canon(resolutionToJson(r.resolution)))).size).to.equal(1);
    const run = runs[0]!;
    expect(run.state).to.equal("deliver");
    expect(run.resolution.aggregate.finalVerdict).to.equal("challenger_fault");
    expect(run.resolution.lane0.checks.every((check) => check.status === "pass")).to.equal(true);
    for (const seq of [1, 2, 3, 4]) for (const check of ["model", "metering", "required_receipts"]) {
      expect(run.resolution.lane0.checks.map((x) => x.name)).to.include(`receipt[seq ${seq}].${check}`);
    }
    expect(run.message).to.deep.include({ refund: 0n, slash: 0n });
  });
});

