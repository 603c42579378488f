/**
 * Issue 27 finding 5: a challenger profits from its own missing evidence. The challenger builds the package
 * and commits its hash when it opens the case, so leaving out evidence it owes (the bound test suite of a gig,
 * the channel of a session) or including evidence that does not verify (a receipt whose provider signature is
 * not the provider's) used to make honest arbitrators sign `Undecidable`: the slow path, and if governance
 * missed its deadline, half the value to the challenger and every bond back. Now Lane 0 decides such a case
 * against the challenger (`challenger_fault`, the reason code in the attribution): it loses its bond, and the
 * subject pays exactly as it would have without a dispute.
 *
 * Played end to end on the in-process network: three arbitrators read the chain and reach one resolution, a
 * drawn panel signs it, the case is finalised, the subject settles; exact balances of the client or payer and
 * funder, the provider, its SLA bond in the registry, the GigEscrow or GasEscrow, the DisputeManager, the
 * treasury, the burn address and every fixture arbitrator (ETH and LaborGas, gas added back).
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { getAddress, keccak256, parseEther, zeroAddress, zeroHash, type Hex } from "viem";

import { bundleHash } from "../../arbitration/documents/bundle";
import { buildGigPackage, buildSessionPackage } from "../../arbitration/runner/build";
import { currentClosingState, openGigCase, openSessionCase } from "../../arbitration/runner/chain";
import { icsFromJson, icsHash } from "../../arbitration/documents/ics";
import { makeEvidence, packageHash, type ChallengePackage, type ReceiptEvidence } from "../../arbitration/documents/package";
import { resolutionToJson } from "../../arbitration/lanes/resolution";
import type { ArbitrationRun } from "../../arbitration/runner/runner";
import { closeUnilateral, finalizeClose } from "../../channel-client/chain/escrow";
import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { canon, canonBytes } from "../../channel-client/core/canonical";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { sessionReceiptHash, signSessionReceipt, type SessionReceipt, type SignedSessionReceipt } from "../../channel-client/core/receipt";
import { termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { paymentTicketHash, signPaymentTicket, type SignedPaymentTicket } from "../../channel-client/core/ticket";
import { GOOD_DELIVERABLE, sampleIcsJson, SUITE } from "../arbitration/fixtures/samples";
import { hardhatAccount } from "../helpers/fixtures";
import { KIND, PROVIDER_ROLE, SYS, systemFixture, type System } from "../helpers/system";
import { burnOf, expectDeltas, feeOf, fullBook, openSponsoredChannel, snapshot } from "./helpers";
import { enforceByPanel, threeRuns } from "./panel";

const PRICE = parseEther("0.001");
const PRICING: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const DEPOSIT = parseEther("1");
const GIG_AMOUNT = parseEther("1");

const requestOf = (seq: bigint) => canonBytes({ jsonrpc: "2.0", id: Number(seq), method: "tools/call", params: { name: "echo", arguments: { n: Number(seq) } } });
const outputOf = (seq: bigint) => canonBytes({ content: [{ type: "text", text: `echo ${seq}` }] });

/** The package with `evidence` in place of its own, its claims citing exactly that evidence (a well-formed package). */
const withEvidence = (pkg: ChallengePackage, evidence: ChallengePackage["evidence"]): ChallengePackage => ({
  ...pkg,
  evidence,
  claims: pkg.claims.map((claim) => ({ ...claim, evidenceRefs: evidence.map((e) => e.artifactId) })),
});

/** Three arbitrators, each reading the chain: one resolution, delivered (never fail safe). */
async function decide(s: System, caseId: Hex, pkg: ChallengePackage): Promise<ArbitrationRun> {
  const runs = await threeRuns(s, caseId, pkg);
  expect(new Set(runs.map((r) => canon(resolutionToJson(r.resolution)))).size, "three arbitrators, one resolution").to.equal(1);
  const run = runs[0]!;
  expect(run.state, run.resolution.aggregate.reasonCodes.join(",")).to.equal("deliver");
  return run;
}

/**
 * A gig the provider delivered correctly (GOOD_DELIVERABLE passes the bound suite); the client opens a case
 * with a package that leaves the suite out.
 */
async function suiteLeftOut(s: System) {
  const ics = icsFromJson(sampleIcsJson({ asset: zeroAddress }));
  const deadline = (await time.latest()) + 30 * 86_400;
  await s.gigs.write.fund([s.provider.account.address, zeroAddress, GIG_AMOUNT, icsHash(ics), deadline, 3600], { account: s.client.account, value: GIG_AMOUNT });
  const gigId = await s.gigs.read.gigCount();
  await s.gigs.write.accept([gigId], { account: s.provider.account });
  await s.gigs.write.deliver([gigId, bundleHash(GOOD_DELIVERABLE), zeroHash], { account: s.provider.account });
  const caseId = await s.disputes.read.nextCaseId([KIND.Gig, `0x${gigId.toString(16).padStart(64, "0")}`]);
  const pkg = buildGigPackage({
    caseId,
    chainId: s.chainId,
    disputeManager: getAddress(s.disputes.address),
    challenger: getAddress(s.client.account.address),
    lane: 1,
    gigEscrow: getAddress(s.gigs.address),
    gigId,
    ics,
    suite: null, // the ICS anchors SUITE, and the rubric replays it: the client owes it
    deliverable: GOOD_DELIVERABLE,
  });
  expect(ics.testSuite?.hash).to.equal(bundleHash(SUITE));
  await openGigCase({ wallet: s.client, publicClient: s.publicClient, disputeManager: getAddress(s.disputes.address), gigEscrow: getAddress(s.gigs.address), gigId, lane: 1, packageHash: packageHash(pkg) });
  return { caseId, pkg, gigId };
}

/**
 * Four honest calls, one at a time (ticket n carries the root over receipts 1..n−1, each receipt charges the
 * price). The provider closes with ticket 4; the payer opens a case on receipt 2 with a package `tamper` may
 * change before its hash is committed.
 */
async function disputedSession(s: System, tamper: (pkg: ChallengePackage, steps: { receipt: SignedSessionReceipt }[]) => Promise<ChallengePackage>) {
  const c = await openSponsoredChannel(s, termsHashOf(PRICING), 5n, DEPOSIT);
  const { payer, provider, terms, domain, sessionId } = c;
  const tree = new ReceiptAccumulator();
  const steps: { ticket: SignedPaymentTicket; receipt: SignedSessionReceipt; index: number }[] = [];
  let prev: Hex = zeroHash;
  for (let seq = 1n; seq <= 4n; seq++) {
    const ticket = { sessionId, provider: provider.address, termsHash: terms.termsHash, seq, cumulativeAmount: PRICE * seq, receiptRoot: tree.root() };
    const receipt: SessionReceipt = {
      sessionId,
      seq,
      offloadPacketHash: keccak256(requestOf(seq)),
      outputHash: keccak256(outputOf(seq)),
      policyHash: terms.policyHash,
      modelSnapshotId: "model:echo@1",
      metering: { units: 1n, amount: PRICE },
      prevReceiptHash: prev,
    };
    const signedTicket = await signPaymentTicket({ account: payer, domain, ticket });
    const signedReceipt = await signSessionReceipt({ account: provider, receipt });
    prev = sessionReceiptHash(receipt);
    steps.push({ ticket: signedTicket, receipt: signedReceipt, index: tree.append(receiptLeaf(receipt, ticket)) });
  }
  const closed = await closeUnilateral({ wallet: s.provider, publicClient: s.publicClient, escrow: c.escrow, ref: c.opened.ref, ticket: steps[3]!.ticket });
  const receipts: ReceiptEvidence[] = steps.slice(0, 2).map((step) => ({ receipt: step.receipt, ticket: step.ticket, leafIndex: BigInt(step.index), merkleProof: tree.proof(step.index, 3) }));
  const caseId = await s.disputes.read.nextCaseId([KIND.Session, sessionId]);
  const honest = buildSessionPackage({
    caseId,
    chainId: s.chainId,
    disputeManager: getAddress(s.disputes.address),
    challenger: payer.address,
    lane: 0,
    gasEscrow: c.escrow,
    sessionId,
    ref: c.opened.ref,
    pricing: PRICING,
    closing: closed.state,
    seq: 2n,
    receipts,
  });
  const pkg = await tamper(honest, steps);
  await openSessionCase({
    wallet: s.payerWallet,
    publicClient: s.publicClient,
    disputeManager: getAddress(s.disputes.address),
    lane: 0,
    packageHash: packageHash(pkg),
    ref: c.opened.ref,
    recorded: closed.state,
    receiptHash: sessionReceiptHash(steps[1]!.receipt.receipt),
    ticketHash: paymentTicketHash(steps[1]!.ticket.ticket),
    proof: tree.proof(steps[1]!.index, 3),
  });
  return { ...c, caseId, pkg, closing: closed.state };
}

/** Finalises the channel once the case is over; what the provider was paid and the treasury's fee. */
async function settle(s: System, c: Awaited<ReturnType<typeof disputedSession>>) {
  const recorded = await currentClosingState(s.publicClient, c.escrow, c.sessionId);
  await time.increase(3601);
  await finalizeClose({ wallet: s.watcher, publicClient: s.publicClient, escrow: c.escrow, ref: c.opened.ref, recorded });
  return { paid: recorded.amount, routing: feeOf(recorded.amount, recorded.feeBps) };
}

/** The balance changes of a session case its payer lost, the channel settled at its recorded amount. */
async function expectPayerLost(s: System, snap: Awaited<ReturnType<typeof snapshot>>, c: Awaited<ReturnType<typeof disputedSession>>, run: ArbitrationRun) {
  const { bond, fee, shares, dust } = await enforceByPanel(s, run);
  const { paid, routing } = await settle(s, c);
  expect(paid).to.equal(c.closing.amount); // as without a dispute
  await expectDeltas(s, snap, {
    ETH: {
      client: -paid, // the funder's deposit back less what the provider was paid
      provider: paid - routing + bond - burnOf(bond) - fee, // the loser's bond, less the burnt share and the panel's fee
      escrow: routing, // accrued for the treasury
      payer: -bond,
      burn: burnOf(bond) + dust,
      ...shares,
    },
  });
  expect((await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address])).active).to.equal(parseEther("500"));
  expect(await s.registry.read.locksOf([PROVIDER_ROLE, s.provider.account.address])).to.equal(0n);
}

describe("issue 27 finding 5: no profit from one's own missing evidence", function () {
  this.timeout(300_000);

  it("attack: the client disputes a passing delivery with a package that leaves the bound test suite out — decided against the client (MISSING_TEST_SUITE), not undecidable: it loses its bond and the provider is paid the whole bounty", async function () {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const c = await suiteLeftOut(s);
    const run = await decide(s, c.caseId, c.pkg);
    expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", unresolved: false, reasonCodes: ["MISSING_TEST_SUITE"] });
    expect(run.resolution.lane0.checks.find((check) => check.name === "test_suite_binding")!.status).to.equal("missing");
    expect(run.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });

    const { bond, fee, shares, dust } = await enforceByPanel(s, run);
    await expectDeltas(s, snap, {
      ETH: {
        client: -GIG_AMOUNT - bond,
        provider: GIG_AMOUNT + bond - burnOf(bond) - fee, // the bounty as without a dispute, and the client's bond less burn and fee
        burn: burnOf(bond) + dust,
        ...shares,
      },
    });
    expect(await s.registry.read.locksOf([PROVIDER_ROLE, s.provider.account.address])).to.equal(0n);
  });

  it("attack: the payer disputes an honest receipt with a package that leaves the channel (terms, pricing, closing state) out — decided against the payer (MISSING_CHANNEL): it loses its bond, the channel pays the recorded amount", async function () {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const c = await disputedSession(s, async (pkg) => withEvidence(pkg, pkg.evidence.filter((e) => e.kind !== "channel")));
    const run = await decide(s, c.caseId, c.pkg);
    expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", reasonCodes: ["MISSING_CHANNEL"] });
    expect(run.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });
    await expectPayerLost(s, snap, c, run);
  });

  it("attack: the payer commits a package whose challenged receipt carries a signature that is not the provider's — decided against the payer (RECEIPT_SIGNATURE_INVALID): it loses its bond, the channel pays the recorded amount", async function () {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const c = await disputedSession(s, async (pkg, steps) => {
      // The payer re-signs the provider's receipt 2 with its own key: the leaf (which binds the receipt's
      // content, not its signature) still proves on-chain, but the receipt no longer verifies as the provider's.
      const forged = await signSessionReceipt({ account: hardhatAccount(SYS.payer), receipt: steps[1]!.receipt.receipt });
      return withEvidence(pkg, pkg.evidence.map((e) => (e.kind === "receipt" && e.content.receipt.receipt.seq === 2n ? makeEvidence("receipt", { ...e.content, receipt: forged }) : e)));
    });
    const run = await decide(s, c.caseId, c.pkg);
    expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", reasonCodes: ["RECEIPT_SIGNATURE_INVALID"] });
    expect(run.resolution.lane0.checks.find((check) => check.name === "receipt[seq 2].receipt_signature")!.status).to.equal("fail");
    expect(run.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });
    await expectPayerLost(s, snap, c, run);
  });
});
