/**
 * Adversarial suite, issue 12 item 5: session disputes that reach real violations, decided by Lane 0 from
 * real signed artifacts and enforced through the real contracts.
 *
 * - **Equivocation.** The provider delivers receipt 2 (which the payer checks against the request it sent and
 *   the output it got) but signs a receipt commit whose leaf for seq 2 is another receipt — another output
 *   hash, or another request hash. The payer anchors the commit (`GasEscrow.anchorReceiptCommit`), proves the
 *   committed receipt against its root and puts the delivered one beside it: `RECEIPT_OUTPUT_MISMATCH` /
 *   `RECEIPT_REQUEST_MISMATCH`, the committed receipt's amount refunded through the escrow and the terms'
 *   penalty slashed from the SLA bond.
 * - **The session no-fault path** (decision 0015): a failed call the provider charged, with its signed fault
 *   statement declaring less compute spent → `NoFault`, the difference refunded, no slash; an honest failed
 *   call charged 0 (decision 0022) → the challenger loses its case (RespondentWins).
 *
 * Three arbitrators each read the chain and reach byte-identical resolutions; a drawn panel signs; every
 * scenario asserts the exact balance change of the payer, the funder, the provider, its bond in the registry,
 * the escrow, the DisputeManager, the treasury, the burn address and every fixture arbitrator (ETH and
 * LaborGas, gas added back).
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { getAddress, keccak256, parseEther, zeroHash, type Hex } from "viem";

import { buildSessionPackage } from "../../arbitration/runner/build";
import { currentClosingState, loadCaseContext, openSessionCase } from "../../arbitration/runner/chain";
import { makeEvidence, packageHash, type ChallengePackage, type DeliveredReceiptEvidence, type ReceiptEvidence } from "../../arbitration/documents/package";
import { resolutionToJson } from "../../arbitration/lanes/resolution";
import { arbitrate, type ArbitrationRun } from "../../arbitration/runner/runner";
import { anchorReceiptCommit, closeUnilateral, finalizeClose } from "../../channel-client/chain/escrow";
import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { canon, canonBytes } from "../../channel-client/core/canonical";
import { signFaultStatement, type SignedFaultStatement } from "../../channel-client/core/fault-statement";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { signReceiptCommit } from "../../channel-client/core/receipt-commit";
import { sessionReceiptHash, signSessionReceipt, type SessionReceipt, type SignedSessionReceipt } from "../../channel-client/core/receipt";
import { priceOf, termsHashOf, type TermsDocumentV2 } from "../../channel-client/core/terms";
import { paymentTicketHash, signPaymentTicket, type SignedPaymentTicket } from "../../channel-client/core/ticket";
import { hardhatAccount } from "../helpers/fixtures";
import { DISPUTE_PARAMS, KIND, PROVIDER_ROLE, SYS, systemFixture, type System } from "../helpers/system";
import { BPS, expectDeltas, feeOf, fullBook, openSponsoredChannel, snapshot } from "./helpers";
import { deploymentOf, enforceByPanel, threeRuns } from "./panel";

const P = DISPUTE_PARAMS;
const burnOf = (x: bigint): bigint => (x * BigInt(P.burnBps)) / BPS;

const MODEL = "model:llama-3.1-70b@2024-07-23";
const DEPOSIT = parseEther("1");
const PENALTY = { RECEIPT_OUTPUT_MISMATCH: parseEther("12"), RECEIPT_REQUEST_MISMATCH: parseEther("8") } as const;

/** 0.001 ETH per call + 0.0001 ETH per token, at most 0.01 ETH per call; one model; both hashes required. */
const TERMS: TermsDocumentV2 = {
  version: "2",
  pricing: { perInvocation: parseEther("0.001"), perUnit: { unit: "token", price: parseEther("0.0001") }, capPerCall: parseEther("0.01") },
  models: [MODEL],
  disputes: { windowAfterSettlement: BigInt(P.settledDisputeWindow), penalties: { ...PENALTY }, refundsFromBond: true },
  requiredReceipts: ["rrsa_request_binding", "rrsa_output_commitment"],
};

/** The request the payer sent for call `seq`, and the output it received (as canonical JSON bytes). */
const requestOf = (seq: bigint) => canonBytes({ jsonrpc: "2.0", id: Number(seq), method: "tools/call", params: { name: "summarise", arguments: { doc: Number(seq) } } });
const outputOf = (seq: bigint) => canonBytes({ content: [{ type: "text", text: `summary ${seq}` }], isError: false });
const FAILED = canonBytes({ error: { code: -32010, message: "The worker exited (code 7).", data: { error: "WorkerCrashedError" } } });

type Equivocation = "output" | "request";
type Failure = "charged" | "honest";


/** A channel on TERMS funded by the client for the payer. */
const openV2 = (s: System) => openSponsoredChannel(s, termsHashOf(TERMS), 12n, DEPOSIT);

/** Receipt `seq` of a chain, for the request/output bytes given; call n meters 10·n tokens. */
function receiptFor(sessionId: Hex, policyHash: Hex, seq: bigint, request: Uint8Array, output: Uint8Array, prev: Hex, amount?: bigint): SessionReceipt {
  const units = 10n * seq;
  return {
    sessionId,
    seq,
    offloadPacketHash: keccak256(request),
    outputHash: keccak256(output),
    policyHash,
    modelSnapshotId: MODEL,
    metering: { units, amount: amount ?? priceOf(TERMS, units) },
    prevReceiptHash: prev,
  };
}

/**
 * Four calls pipelined (every ticket signed before any receipt came back, so each carries the root of no
 * receipts). The provider delivers honest receipts 1..4, but signs a commit over four leaves whose receipt 2
 * has another output (or request) hash, chained on from there. It closes unilaterally with ticket 4; the payer
 * anchors the commit and opens a Lane 0 case on the committed receipt 2, with the delivered receipts 1 and 2
 * (and the bytes it sent and got for 2) beside the committed ones.
 */
async function equivocatedSession(s: System, kind: Equivocation) {
  const c = await openV2(s);
  const { payer, provider, terms, escrow, opened, domain, sessionId } = c;
  const empty = new ReceiptAccumulator().root();
  const tickets: SignedPaymentTicket[] = [];
  // Each ticket pays exactly the metered price of its call (no prepaid cap left over: the case is about the
  // equivocation alone, not RECEIPT_PREPAID_EXCESS).
  let cumulative = 0n;
  for (let seq = 1n; seq <= 4n; seq++) {
    cumulative += priceOf(TERMS, 10n * seq);
    const ticket = { sessionId, provider: provider.address, termsHash: terms.termsHash, seq, cumulativeAmount: cumulative, receiptRoot: empty };
    tickets.push(await signPaymentTicket({ account: payer, domain, ticket }));
  }
  const delivered: SignedSessionReceipt[] = [];
  const committed: SignedSessionReceipt[] = [];
  let prevDelivered: Hex = zeroHash;
  let prevCommitted: Hex = zeroHash;
  for (let seq = 1n; seq <= 4n; seq++) {
    const honest = receiptFor(sessionId, terms.policyHash, seq, requestOf(seq), outputOf(seq), prevDelivered);
    delivered.push(await signSessionReceipt({ account: provider, receipt: honest }));
    prevDelivered = sessionReceiptHash(honest);
    const lie = seq === 2n;
    const request = lie && kind === "request" ? canonBytes({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "summarise", arguments: { doc: 999 } } }) : requestOf(seq);
    const output = lie && kind === "output" ? canonBytes({ content: [{ type: "text", text: "a summary the payer never saw" }], isError: false }) : outputOf(seq);
    const other = receiptFor(sessionId, terms.policyHash, seq, request, output, prevCommitted);
    committed.push(await signSessionReceipt({ account: provider, receipt: other }));
    prevCommitted = sessionReceiptHash(other);
  }
  expect(committed[0]!.signature).to.equal(delivered[0]!.signature); // receipt 1 is the same in both
  const tree = ReceiptAccumulator.fromLeaves(committed.map((r, i) => receiptLeaf(r.receipt, tickets[i]!.ticket)));
  const commit = await signReceiptCommit(provider, domain, { sessionId, leafCount: 4n, root: tree.root() });

  const closed = await closeUnilateral({ wallet: s.provider, publicClient: s.publicClient, escrow, ref: opened.ref, ticket: tickets[3]! });
  await anchorReceiptCommit({ wallet: s.payerWallet, publicClient: s.publicClient, escrow, ref: opened.ref, commit });

  const receipts: ReceiptEvidence[] = [0, 1].map((i) => ({ receipt: committed[i]!, ticket: tickets[i]!, leafIndex: BigInt(i), merkleProof: tree.proof(i, 4) }));
  const deliveredEvidence: DeliveredReceiptEvidence[] = [{ receipt: delivered[0]! }, { receipt: delivered[1]!, request: requestOf(2n), output: outputOf(2n) }];
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
    pricing: TERMS,
    closing: closed.state,
    commit,
    seq: 2n,
    receipts,
    delivered: deliveredEvidence,
  });
  await openSessionCase({
    wallet: s.payerWallet,
    publicClient: s.publicClient,
    disputeManager: getAddress(s.disputes.address),
    lane: 0,
    packageHash: packageHash(pkg),
    ref: opened.ref,
    recorded: closed.state,
    receiptHash: sessionReceiptHash(committed[1]!.receipt),
    ticketHash: paymentTicketHash(tickets[1]!.ticket),
    proof: tree.proof(1, 4),
  });
  return { caseId, pkg, sessionId, ref: opened.ref, closing: closed.state, lied: committed[1]!.receipt };
}

/**
 * Four calls, one at a time (ticket n carries the root over receipts 1..n-1). Call 2 failed: its receipt binds
 * `{ error }` and, with it, the provider signed a fault statement. `charged`: the receipt charges the metered
 * price (0.003 ETH) and the statement declares 0.001 ETH of compute spent; `honest`: the receipt charges 0
 * (decision 0022) and the statement declares 0. The provider closes with ticket 4 and the payer opens a case on
 * receipt 2 with the receipts as delivered and the fault statement.
 */
async function failedCallSession(s: System, failure: Failure) {
  const c = await openV2(s);
  const { payer, provider, terms, escrow, opened, domain, sessionId } = c;
  const tree = new ReceiptAccumulator();
  const steps: { ticket: SignedPaymentTicket; receipt: SignedSessionReceipt; index: number }[] = [];
  let prev: Hex = zeroHash;
  let cumulative = 0n;
  for (let seq = 1n; seq <= 4n; seq++) {
    const failed = seq === 2n;
    const receipt = receiptFor(sessionId, terms.policyHash, seq, requestOf(seq), failed ? FAILED : outputOf(seq), prev, failed && failure === "honest" ? 0n : undefined);
    // Each ticket pays exactly what its receipt charges (no prepaid cap left over, so no RECEIPT_PREPAID_EXCESS).
    cumulative += receipt.metering.amount;
    const ticket = { sessionId, provider: provider.address, termsHash: terms.termsHash, seq, cumulativeAmount: cumulative, receiptRoot: tree.root() };
    const signedTicket = await signPaymentTicket({ account: payer, domain, ticket });
    const signedReceipt = await signSessionReceipt({ account: provider, receipt });
    prev = sessionReceiptHash(receipt);
    steps.push({ ticket: signedTicket, receipt: signedReceipt, index: tree.append(receiptLeaf(receipt, ticket)) });
  }
  const failedReceipt = steps[1]!.receipt.receipt;
  const computeSpent = failure === "charged" ? parseEther("0.001") : 0n;
  const fault: SignedFaultStatement = await signFaultStatement({
    account: provider,
    statement: { sessionId, seq: 2n, offloadPacketHash: failedReceipt.offloadPacketHash, code: "ERR_UPSTREAM_FAILURE", computeSpent },
  });
  const closed = await closeUnilateral({ wallet: s.provider, publicClient: s.publicClient, escrow, ref: opened.ref, ticket: steps[3]!.ticket });
  const receipts = steps.slice(0, 2).map((step) => ({ receipt: step.receipt, ticket: step.ticket, leafIndex: BigInt(step.index), merkleProof: tree.proof(step.index, 3) }));
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
    pricing: TERMS,
    closing: closed.state,
    seq: 2n,
    receipts,
    delivered: steps.slice(0, 2).map((step, i) => (i === 1 ? { receipt: step.receipt, request: requestOf(2n), output: FAILED } : { receipt: step.receipt })),
    fault,
  });
  await openSessionCase({
    wallet: s.payerWallet,
    publicClient: s.publicClient,
    disputeManager: getAddress(s.disputes.address),
    lane: 0,
    packageHash: packageHash(pkg),
    ref: opened.ref,
    recorded: closed.state,
    receiptHash: sessionReceiptHash(failedReceipt),
    ticketHash: paymentTicketHash(steps[1]!.ticket.ticket),
    proof: tree.proof(1, 3),
  });
  return { caseId, pkg, sessionId, ref: opened.ref, closing: closed.state, metered: failedReceipt.metering.amount, computeSpent };
}

/** Three arbitrators, each handed the package as bytes, each reading the chain itself: one resolution. */
async function decide(s: System, caseId: Hex, pkg: ChallengePackage): Promise<ArbitrationRun> {
  const runs = await threeRuns(s, caseId, pkg);
  expect(new Set(runs.map((r) => canon(resolutionToJson(r.resolution)))).size, "three arbitrators, one resolution").to.equal(1);
  expect(runs[0]!.state).to.equal("deliver");
  return runs[0]!;
}


/** Finalises the channel once its window has passed; returns what the provider was paid. */
async function settle(s: System, sessionId: Hex, ref: Awaited<ReturnType<typeof openV2>>["opened"]["ref"]) {
  const recorded = await currentClosingState(s.publicClient, getAddress(s.escrow.address), sessionId);
  await time.increase(3601);
  await finalizeClose({ wallet: s.watcher, publicClient: s.publicClient, escrow: getAddress(s.escrow.address), ref, recorded });
  return { paid: recorded.amount, routing: feeOf(recorded.amount, recorded.feeBps) };
}

describe("adversarial: the provider's committed receipts contradict what it delivered; the session no-fault path (issue 12 item 5)", function () {
  for (const kind of ["output", "request"] as const) {
    const code = kind === "output" ? "RECEIPT_OUTPUT_MISMATCH" : "RECEIPT_REQUEST_MISMATCH";
    it(`attack: the provider signs a receipt commit whose receipt 2 has another ${kind} hash than the receipt it delivered — the payer anchors it, Lane 0 finds ${code}, the receipt is refunded through the escrow and the terms' penalty slashed`, async function () {
      const s = await loadFixture(systemFixture);
      const snap = await snapshot(s, fullBook(s));
      const c = await equivocatedSession(s, kind);
      const run = await decide(s, c.caseId, c.pkg);
      expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
      const failed = run.resolution.lane0.checks.filter((check) => check.status !== "pass").map((check) => check.name);
      expect(failed).to.deep.equal([`receipt[seq 2].${kind}`]);
      // The delivered receipts verified (signature, session, the bytes of call 2) and receipt 1 agrees in both.
      for (const name of ["delivered[seq 1].signature", "delivered[seq 2].signature", "delivered[seq 2].request_bytes", "delivered[seq 2].output_bytes", "receipt[seq 1].request", "receipt[seq 1].output"]) {
        expect(run.resolution.lane0.checks.find((check) => check.name === name)?.status, name).to.equal("pass");
      }
      const refund = c.lied.metering.amount;
      expect(refund).to.equal(parseEther("0.003")); // 0.001 + 20 tokens at 0.0001
      expect(run.message).to.deep.include({ verdict: 1, refund, slash: PENALTY[code] });

      const { fee, shares, dust } = await enforceByPanel(s, run);
      const { paid, routing } = await settle(s, c.sessionId, c.ref);
      expect(paid).to.equal(c.closing.amount - refund);
      await expectDeltas(s, snap, {
        ETH: {
          client: -paid, // the funder's deposit back, less what the provider keeps after the refund
          provider: paid - routing,
          escrow: routing, // accrued for the treasury
          payer: -fee, // uncontested: the panel's fee comes out of the winner's own bond (decision 0015)
          burn: dust,
          ...shares,
        },
        LGAS: { payer: PENALTY[code] - burnOf(PENALTY[code]), burn: burnOf(PENALTY[code]), registry: -PENALTY[code] },
      });
      expect((await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address])).active).to.equal(parseEther("500") - PENALTY[code]);
    });
  }

  it("attack: the provider charged a failed call and signed a fault statement declaring less compute spent — NoFault, the difference refunded through the escrow, no slash, the challenger's bond back less the fee", async function () {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const c = await failedCallSession(s, "charged");
    const run = await decide(s, c.caseId, c.pkg);
    expect(run.resolution.aggregate.finalVerdict).to.equal("no_fault");
    expect(run.resolution.lane0.checks.every((check) => check.status === "pass")).to.equal(true);
    expect(run.resolution.lane0.checks.map((check) => check.name)).to.include.members(["fault.signature", "fault.binding", "receipt[seq 2].output", "delivered[seq 2].output_bytes"]);
    const refund = c.metered - c.computeSpent;
    expect(refund).to.equal(parseEther("0.002"));
    expect(run.message).to.deep.include({ verdict: 3, refund, slash: 0n });

    const { fee, shares, dust } = await enforceByPanel(s, run);
    const { paid, routing } = await settle(s, c.sessionId, c.ref);
    expect(paid).to.equal(c.closing.amount - refund);
    await expectDeltas(s, snap, {
      ETH: { client: -paid, provider: paid - routing, escrow: routing, payer: -fee, burn: dust, ...shares },
    });
    expect((await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address])).active).to.equal(parseEther("500"));
  });

  it("an honest failed call charged 0 (decision 0022) with its fault statement — nothing to refund, so the challenger loses its case and its bond; the channel pays the recorded amount", async function () {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const c = await failedCallSession(s, "honest");
    expect(c.metered).to.equal(0n);
    const run = await decide(s, c.caseId, c.pkg);
    expect(run.resolution.aggregate.finalVerdict).to.equal("challenger_fault");
    expect(run.resolution.lane0.checks.every((check) => check.status === "pass")).to.equal(true);
    expect(run.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });

    const { bond, fee, shares, dust } = await enforceByPanel(s, run);
    const { paid, routing } = await settle(s, c.sessionId, c.ref);
    expect(paid).to.equal(c.closing.amount);
    await expectDeltas(s, snap, {
      ETH: {
        client: -paid,
        provider: paid - routing + bond - burnOf(bond) - fee, // the loser's bond, less the burnt share and the panel's fee
        escrow: routing,
        payer: -bond,
        burn: burnOf(bond) + dust,
        ...shares,
      },
    });
  });

  it("attack: a fault statement the provider did not sign (or for another seq) in the challenger's package decides the case against the challenger (it supplied it); handed to an arbitrator as another package than the case committed, it abstains", async function () {
    const s = await loadFixture(systemFixture);
    const c = await failedCallSession(s, "charged");
    const ctx = await loadCaseContext(s.publicClient, deploymentOf(s), c.caseId, c.pkg);
    const fault = c.pkg.evidence.find((e) => e.kind === "fault")!;
    const payer = hardhatAccount(SYS.payer);
    const statement = (fault.content as SignedFaultStatement).statement;
    const forged = await signFaultStatement({ account: payer, statement });
    const otherSeq = await signFaultStatement({ account: hardhatAccount(SYS.provider), statement: { ...statement, seq: 3n } });
    for (const [bad, reason, check] of [[forged, "FAULT_STATEMENT_INVALID", "fault.signature"], [otherSeq, "FAULT_STATEMENT_MISMATCH", "fault.binding"]] as const) {
      const evidence = c.pkg.evidence.map((e) => (e.kind === "fault" ? makeEvidence("fault", bad) : e));
      const pkg = { ...c.pkg, evidence };
      // Had the challenger committed this package, it would have lost: judged against a context whose case
      // committed its hash.
      const committed = await arbitrate({ pkg, ctx: { ...ctx, case: { ...ctx.case, packageHash: packageHash(pkg) } }, actor: "arbitrator" });
      expect(committed.state).to.equal("deliver");
      expect(committed.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", reasonCodes: [reason] });
      expect(committed.resolution.lane0.checks.find((x) => x.name === check)!.status).to.equal("fail");
      expect(committed.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });
      // Handed to an arbitrator for the real case (whose package hash differs), it is nobody's fault: abstain.
      const run = await arbitrate({ pkg, ctx, actor: "arbitrator" });
      expect(run.state).to.equal("abstain");
      expect(run.resolution.aggregate.reasonCodes).to.deep.equal(["PACKAGE_HASH_MISMATCH"]);
    }
  });
});
