/**
 * Issue 27 finding 6: failed calls cannot be sold. Under decision 0022 a failed call is receipted with a zero
 * charge, but tickets prepay (ticket n prepays call n, decision 0003), so a provider that fails every call and
 * closes unilaterally with the newest ticket is paid the price of every call. The payer's session case over the
 * zero-charge receipts is decided `FAILED_CALL_PAID`: what each ticket paid for its failed call is refunded
 * through the escrow, and the payer's bond comes back (ChallengerWins). An honest failed call nothing paid for
 * stays the provider's defence (the payer loses its case: session-equivocation.test.ts, "honest").
 *
 * Played end to end on the in-process network: the provider's real signed receipts, commit and fault
 * statements, three arbitrators reading the chain to one resolution, a drawn panel, the channel finalised;
 * exact balances of the payer, the funder, the provider, the escrow, the DisputeManager, the registry (the SLA
 * bond), the treasury, the burn address and every fixture arbitrator (ETH and LaborGas, gas added back).
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { getAddress, keccak256, parseEther, zeroHash, type Hex } from "viem";

import { buildSessionPackage } from "../../arbitration/runner/build";
import { currentClosingState, openSessionCase } from "../../arbitration/runner/chain";
import { packageHash, type ReceiptEvidence } from "../../arbitration/documents/package";
import { resolutionFromJson, resolutionToJson } from "../../arbitration/lanes/resolution";
import { anchorReceiptCommit, closeUnilateral, finalizeClose } from "../../channel-client/chain/escrow";
import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { canon, canonBytes } from "../../channel-client/core/canonical";
import { signFaultStatement } from "../../channel-client/core/fault-statement";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { signReceiptCommit } from "../../channel-client/core/receipt-commit";
import { sessionReceiptHash, signSessionReceipt, type SessionReceipt, type SignedSessionReceipt } from "../../channel-client/core/receipt";
import { termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { paymentTicketHash, signPaymentTicket, type SignedPaymentTicket } from "../../channel-client/core/ticket";
import { KIND, PROVIDER_ROLE, systemFixture, type System } from "../helpers/system";
import { expectDeltas, feeOf, fullBook, openSponsoredChannel, snapshot } from "./helpers";
import { enforceByPanel, threeRuns } from "./panel";

const PRICE = parseEther("0.001");
const PRICING: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const DEPOSIT = parseEther("1");
const CALLS = 40n;

const requestOf = (seq: bigint) => canonBytes({ jsonrpc: "2.0", id: Number(seq), method: "tools/call", params: { name: "summarise", arguments: { doc: Number(seq) } } });
/** What a failed call answers (decision 0022): a JSON-RPC error, bound by the receipt's output hash. */
const FAILED = canonBytes({ error: { code: -32010, message: "The worker exited (code 7).", data: { error: "WorkerCrashedError" } } });

/**
 * `CALLS` calls, one at a time, every one failed: ticket n prepays call n at the price (cumulative n × PRICE)
 * and carries the root over receipts 1..n−1; receipt n charges 0 and binds the error; the provider signs a
 * fault statement for each and a receipt commit over all of them. `prepaid(n)` says whether ticket n added the
 * price (false: it added nothing — an honest provider's payer that stopped prepaying failed calls).
 */
async function failedSession(s: System, prepaid: (seq: bigint) => boolean = () => true) {
  const c = await openSponsoredChannel(s, termsHashOf(PRICING), 27n, DEPOSIT);
  const { payer, provider, terms, domain, sessionId } = c;
  const tree = new ReceiptAccumulator();
  const steps: { ticket: SignedPaymentTicket; receipt: SignedSessionReceipt; index: number }[] = [];
  let prev: Hex = zeroHash;
  let cumulative = 0n;
  for (let seq = 1n; seq <= CALLS; seq++) {
    if (prepaid(seq)) cumulative += PRICE;
    const ticket = { sessionId, provider: provider.address, termsHash: terms.termsHash, seq, cumulativeAmount: cumulative, receiptRoot: tree.root() };
    const receipt: SessionReceipt = {
      sessionId,
      seq,
      offloadPacketHash: keccak256(requestOf(seq)),
      outputHash: keccak256(FAILED),
      policyHash: terms.policyHash,
      modelSnapshotId: "model:echo@1",
      metering: { units: 0n, amount: 0n },
      prevReceiptHash: prev,
    };
    const signedTicket = await signPaymentTicket({ account: payer, domain, ticket });
    const signedReceipt = await signSessionReceipt({ account: provider, receipt });
    prev = sessionReceiptHash(receipt);
    steps.push({ ticket: signedTicket, receipt: signedReceipt, index: tree.append(receiptLeaf(receipt, ticket)) });
  }
  const commit = await signReceiptCommit(provider, domain, { sessionId, leafCount: CALLS, root: tree.root() });
  return { ...c, steps, tree, commit };
}
type Failed = Awaited<ReturnType<typeof failedSession>>;

/**
 * The provider closes with the newest ticket (seq `CALLS`, root over 1..CALLS−1); the payer anchors the
 * provider's commit over all `CALLS` receipts and opens a case on the last one, with every receipt (proven
 * against the commit) and the provider's fault statement for the challenged call.
 */
async function closeAndDispute(s: System, f: Failed) {
  const closed = await closeUnilateral({ wallet: s.provider, publicClient: s.publicClient, escrow: f.escrow, ref: f.opened.ref, ticket: f.steps.at(-1)!.ticket });
  await anchorReceiptCommit({ wallet: s.payerWallet, publicClient: s.publicClient, escrow: f.escrow, ref: f.opened.ref, commit: f.commit });
  const receipts: ReceiptEvidence[] = f.steps.map((step) => ({ receipt: step.receipt, ticket: step.ticket, leafIndex: BigInt(step.index), merkleProof: f.tree.proof(step.index) }));
  const challenged = f.steps.at(-1)!;
  const fault = await signFaultStatement({
    account: f.provider,
    statement: { sessionId: f.sessionId, seq: CALLS, offloadPacketHash: challenged.receipt.receipt.offloadPacketHash, code: "ERR_UPSTREAM_FAILURE", computeSpent: 0n },
  });
  const caseId = await s.disputes.read.nextCaseId([KIND.Session, f.sessionId]);
  const pkg = buildSessionPackage({
    caseId,
    chainId: s.chainId,
    disputeManager: getAddress(s.disputes.address),
    challenger: f.payer.address,
    lane: 0,
    gasEscrow: f.escrow,
    sessionId: f.sessionId,
    ref: f.opened.ref,
    pricing: PRICING,
    closing: closed.state,
    commit: f.commit,
    seq: CALLS,
    receipts,
    fault,
  });
  await openSessionCase({
    wallet: s.payerWallet,
    publicClient: s.publicClient,
    disputeManager: getAddress(s.disputes.address),
    lane: 0,
    packageHash: packageHash(pkg),
    ref: f.opened.ref,
    recorded: closed.state,
    receiptHash: sessionReceiptHash(challenged.receipt.receipt),
    ticketHash: paymentTicketHash(challenged.ticket.ticket),
    proof: f.tree.proof(challenged.index),
  });
  return { caseId, pkg, closing: closed.state };
}

/** Three arbitrators, one resolution (which round-trips through its schema), delivered. */
async function decide(s: System, caseId: Hex, pkg: Parameters<typeof threeRuns>[2]) {
  const runs = await threeRuns(s, caseId, pkg);
  expect(new Set(runs.map((r) => canon(resolutionToJson(r.resolution)))).size, "three arbitrators, one resolution").to.equal(1);
  const run = runs[0]!;
  expect(run.state).to.equal("deliver");
  expect(canon(resolutionToJson(resolutionFromJson(JSON.parse(canon(resolutionToJson(run.resolution))))))).to.equal(canon(resolutionToJson(run.resolution)));
  return run;
}

/** Finalises the frozen channel once the case is over; what the provider was paid and the treasury's fee. */
async function settle(s: System, f: Failed) {
  const recorded = await currentClosingState(s.publicClient, f.escrow, f.sessionId);
  await time.increase(3601);
  await finalizeClose({ wallet: s.watcher, publicClient: s.publicClient, escrow: f.escrow, ref: f.opened.ref, recorded });
  return { paid: recorded.amount, routing: feeOf(recorded.amount, recorded.feeBps) };
}

describe("issue 27 finding 6: failed calls cannot be sold", function () {
  this.timeout(300_000);

  it("attack: a provider fails all 40 calls (receipts charge 0) and closes unilaterally on the newest prepaid ticket — the payer's case refunds what the tickets prepaid (0.04 ETH), its bond back less the panel's fee; the provider is paid nothing", async function () {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const f = await failedSession(s);
    const c = await closeAndDispute(s, f);
    expect(c.closing.amount).to.equal(PRICE * CALLS); // 0.04 ETH for 40 failed calls

    const run = await decide(s, c.caseId, c.pkg);
    expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    const failed = run.resolution.lane0.checks.filter((check) => check.status !== "pass").map((check) => check.name);
    expect(failed).to.deep.equal(Array.from({ length: Number(CALLS) }, (_, i) => `receipt[seq ${i + 1}].failed_call_paid`));
    expect(run.message).to.deep.include({ verdict: 1, refund: PRICE * CALLS, slash: 0n });

    const { fee, shares, dust } = await enforceByPanel(s, run);
    const { paid, routing } = await settle(s, f);
    expect(paid).to.equal(0n);
    expect(routing).to.equal(0n);
    await expectDeltas(s, snap, {
      ETH: {
        client: 0n, // the funder's whole deposit back
        payer: -fee, // its bond back, less the panel's fee (uncontested: the winner's own bond pays it, decision 0015)
        burn: dust,
        ...shares,
      },
    });
    expect((await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address])).active).to.equal(parseEther("500"));
    expect(await s.registry.read.locksOf([PROVIDER_ROLE, s.provider.account.address])).to.equal(0n);
  });

  it("the refund is exact per receipt: only the failed calls a ticket prepaid are refunded (the payer stopped prepaying after call 30); the provider keeps nothing it was not owed", async function () {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    // Tickets 31..40 added nothing: those ten failed calls were never paid for, so nothing is refunded for them.
    const f = await failedSession(s, (seq) => seq <= 30n);
    const c = await closeAndDispute(s, f);
    expect(c.closing.amount).to.equal(PRICE * 30n);

    const run = await decide(s, c.caseId, c.pkg);
    const checks = run.resolution.lane0.checks.filter((check) => check.name.endsWith(".failed_call_paid"));
    expect(checks).to.have.length(Number(CALLS));
    expect(checks.filter((check) => check.status === "fail").map((check) => check.name)).to.deep.equal(Array.from({ length: 30 }, (_, i) => `receipt[seq ${i + 1}].failed_call_paid`));
    expect(run.message).to.deep.include({ verdict: 1, refund: PRICE * 30n, slash: 0n });

    const { fee, shares, dust } = await enforceByPanel(s, run);
    const { paid } = await settle(s, f);
    expect(paid).to.equal(0n);
    await expectDeltas(s, snap, { ETH: { payer: -fee, burn: dust, ...shares } });
  });
});
