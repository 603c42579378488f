/**
 * Adversarial suite, issue 32 (decision 0037): milestone streaming. A client funds a channel for the payer under v4
 * terms (0.01 ETH per tranche, one tranche in flight, 2 of 12 claims sampled, 30 LGAS per false claim); the
 * payer's Flow Controller releases tranche k+1's ticket only after the sampled claims of proof k re-ran true in the
 * sealed Lane 1 engine. Each attack ends with the exact balance change of the payer, the funder, the provider, its
 * bond in the registry, the escrow, the DisputeManager, the treasury, the burn address and every fixture
 * arbitrator, in ETH and LaborGas, gas added back.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { getAddress, keccak256, parseEther, stringToBytes, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";

import { buildStreamPackage } from "../../arbitration/runner/build";
import { currentClosingState, openSessionCase } from "../../arbitration/runner/chain";
import { packageHash, packageToJson, parsePackage, type ChallengePackage } from "../../arbitration/documents/package";
import { resolutionToJson } from "../../arbitration/lanes/resolution";
import { claimsOf, streamInputs } from "../../arbitration/lanes/stream-sample";
import type { ArbitrationRun } from "../../arbitration/runner/runner";
import { canon } from "../../channel-client/core/canonical";
import { anchorReceiptCommit, closeUnilateral, finalizeClose } from "../../channel-client/chain/escrow";
import { progressProofHash, sampledIndices, signProgressProof } from "../../channel-client/core/progress-proof";
import { sessionReceiptHash } from "../../channel-client/core/receipt";
import { signSessionKeyGrant } from "../../channel-client/core/session-key";
import { termsHashOf, type TermsDocumentV4 } from "../../channel-client/core/terms";
import { paymentTicketHash } from "../../channel-client/core/ticket";
import { FlowController, type StreamPause } from "../../channel-client/node/flow-controller";
import { InProcessStreamProvider, type TrancheWork } from "../../channel-client/node/stream-provider";
import { BROKEN_REPOSITORY, codeStreamTerms, REPOSITORY_BY_TRANCHE, STREAM_MODEL, SUITE } from "../../scripts/examples/code-stream";
import { DISPUTE_PARAMS, KIND, PROVIDER_ROLE, STATUS, systemFixture, type System } from "../helpers/system";
import { burnOf, expectDeltas, feeOf, fullBook, openSponsoredChannel, snapshot } from "./helpers";
import { enforceByPanel, threeRuns } from "./panel";

const DEPOSIT = parseEther("1");
const TERMS: TermsDocumentV4 = codeStreamTerms({ windowAfterSettlement: BigInt(DISPUTE_PARAMS.settledDisputeWindow) });
const PRICE = TERMS.pricing.capPerCall;
const PENALTY = TERMS.stream.falseClaimPenalty;
/** The payer's sampling secrets: fixed per tranche so that every run draws the same claims. */
const secretOf = (tranche: bigint): Hex => keccak256(stringToBytes(`stream attack secret ${tranche}`));
const DELEGATE = privateKeyToAccount(keccak256(stringToBytes("stream delegated sampling node")));

type Liar = "none" | "false_claim" | "repository_changed" | "silent" | "equivocate";

/**
 * Opens the stream and runs up to 3 tranches. The provider is honest (its claims are the suite's real outcomes on
 * its repository) except at tranche 2, where `liar` says what it does: claims every test passes on a repository
 * that fails all 12 (`false_claim`: any draw samples a false claim), answers the sample with another repository, stops answering samples, or signs a
 * second proof of the tranche.
 */
async function stream(s: System, liar: Liar, nonce: bigint, delegate?: { cap: bigint }) {
  const opened = await openSponsoredChannel(s, termsHashOf(TERMS), nonce, DEPOSIT);
  const { payer, provider, domain, sessionId } = opened;
  // The payer's delegated sampling node: a session key whose grant caps what its tickets may authorise.
  const grant = delegate
    ? await signSessionKeyGrant({ account: payer, domain, sessionId, key: DELEGATE.address, expiry: (await s.publicClient.getBlock()).timestamp + 86_400n, spendCap: delegate.cap, methods: ["*"], epoch: 0n })
    : undefined;
  const inputs = (tranche: bigint) => streamInputs({ chainId: s.chainId, gasEscrow: opened.escrow, sessionId, tranche });
  const work: TrancheWork = async (tranche) => {
    const lying = liar === "false_claim" && tranche === 2n;
    const repository = lying ? BROKEN_REPOSITORY : REPOSITORY_BY_TRANCHE[Number(tranche) - 1]!;
    const tests = await claimsOf({ terms: TERMS, suite: SUITE, repository, inputs: inputs(tranche) });
    return { repository, tests: lying ? tests.map((t) => ({ ...t, outcome: "pass" as const })) : tests, coverageDeltaBps: 500, lint: "clean" };
  };
  const node = new InProcessStreamProvider({ account: provider, domain, terms: TERMS, ref: opened.opened.ref, sessionId, work, modelSnapshotId: STREAM_MODEL, ...(grant ? { grant } : {}) });
  const link = {
    tranche: node.tranche.bind(node),
    sample: async (p: { tranche: bigint; secret: Hex; indices: number[] }) => {
      if (p.tranche === 2n && liar === "silent") return null;
      if (p.tranche === 2n && liar === "repository_changed") return REPOSITORY_BY_TRANCHE[0]!;
      return node.sample(p);
    },
  };
  const flow = new FlowController({ terms: TERMS, ref: opened.opened.ref, sessionId, domain, signer: grant ? DELEGATE : payer, ...(grant ? { grant } : {}), link, suite: SUITE, secretOf });
  let pause: StreamPause;
  if (liar === "equivocate") {
    await flow.step();
    await flow.step();
    const first = node.results.get(2n)!.proof.proof;
    // The same tranche, another claim set: signed by the same provider key.
    flow.noteProof(await signProgressProof({ account: provider, proof: { ...first, coverageDeltaBps: first.coverageDeltaBps + 100 } }));
    pause = flow.state.paused!;
  } else {
    pause = await flow.run(3n);
  }
  return { ...opened, flow, node, pause, grant };
}

type Streamed = Awaited<ReturnType<typeof stream>>;

/**
 * The payer closes with its newest ticket, anchors the provider's newest receipt commit, and opens the stream case
 * the Flow Controller's evidence gives (or `tamper`'s variant of it) on the paused tranche.
 */
async function streamCase(s: System, st: Streamed, tamper?: (e: NonNullable<ReturnType<FlowController["caseEvidence"]>>) => void) {
  const evidence = st.flow.caseEvidence();
  expect(evidence, "the pause proves something").to.not.equal(null);
  tamper?.(evidence!);
  const newest = st.flow.tranches.get(st.flow.state.released)!.ticket;
  const closing = (await closeUnilateral({ wallet: s.payerWallet, publicClient: s.publicClient, escrow: st.escrow, ref: st.opened.ref, ticket: newest })).state;
  await anchorReceiptCommit({ wallet: s.payerWallet, publicClient: s.publicClient, escrow: st.escrow, ref: st.opened.ref, commit: evidence!.commit });
  const caseId = await s.disputes.read.nextCaseId([KIND.Session, st.sessionId]);
  const pkg = buildStreamPackage({
    caseId,
    chainId: s.chainId,
    disputeManager: getAddress(s.disputes.address),
    challenger: st.payer.address,
    lane: 1,
    gasEscrow: st.escrow,
    sessionId: st.sessionId,
    ref: st.opened.ref,
    pricing: TERMS,
    closing,
    commit: evidence!.commit,
    seq: evidence!.seq,
    receipts: [evidence!.receipt],
    progress: evidence!.progress,
    ...(evidence!.suite ? { suite: evidence!.suite } : {}),
    ...(evidence!.repository ? { repository: evidence!.repository } : {}),
  });
  // The package survives its own JSON round trip (what the DisputeManager's hash commits).
  expect(packageHash(parsePackage(JSON.stringify(packageToJson(pkg))))).to.equal(packageHash(pkg));
  await openSessionCase({
    wallet: s.payerWallet,
    publicClient: s.publicClient,
    disputeManager: getAddress(s.disputes.address),
    lane: 1,
    packageHash: packageHash(pkg),
    ref: st.opened.ref,
    recorded: closing,
    receiptHash: sessionReceiptHash(evidence!.receipt.receipt.receipt),
    ticketHash: paymentTicketHash(evidence!.receipt.ticket.ticket),
    proof: evidence!.receipt.merkleProof,
  });
  return { caseId, pkg, closing };
}

/** Three arbitrators on what they read from the chain: one resolution, byte for byte. */
async function decide(s: System, caseId: Hex, pkg: ChallengePackage): Promise<ArbitrationRun> {
  const runs = await threeRuns(s, caseId, pkg);
  expect(new Set(runs.map((r) => canon(resolutionToJson(r.resolution)))).size, "three arbitrators, one resolution").to.equal(1);
  expect(runs[0]!.state).to.equal("deliver");
  return runs[0]!;
}

/** The payer's close on the newest ticket, finalised after the window: what the provider was paid and the fee. */
async function finalizeAfterWindow(s: System, st: Streamed) {
  const recorded = await currentClosingState(s.publicClient, getAddress(s.escrow.address), st.sessionId);
  await time.increase(3601);
  await finalizeClose({ wallet: s.watcher, publicClient: s.publicClient, escrow: st.escrow, ref: st.opened.ref, recorded });
  return { paid: recorded.amount, routing: feeOf(recorded.amount, recorded.feeBps) };
}

describe("adversarial: milestone streaming — money flows only while sampled progress re-runs true (issue 32)", function () {
  this.timeout(240_000);

  it("an honest stream: three tranches, each proof's two sampled claims re-run true, every ticket released; the provider is paid three tranches", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const st = await stream(s, "none", 31n);
    expect(st.pause).to.deep.include({ reason: "done", tranche: 3n });
    expect(st.flow.events.filter((e) => e.kind === "ticket").map((e) => e.kind === "ticket" && e.cumulative)).to.deep.equal([PRICE, 2n * PRICE, 3n * PRICE]);
    const samples = st.flow.events.filter((e) => e.kind === "sample");
    expect(samples).to.have.length(6);
    expect(samples.every((e) => e.kind === "sample" && e.status === "true")).to.equal(true);
    expect(st.flow.events.filter((e) => e.kind === "proof").map((e) => e.kind === "proof" && `${e.passed}/${e.total}`)).to.deep.equal(["9/12", "12/12", "12/12"]);
    await closeUnilateral({ wallet: s.provider, publicClient: s.publicClient, escrow: st.escrow, ref: st.opened.ref, ticket: st.flow.tranches.get(3n)!.ticket });
    const { paid, routing } = await finalizeAfterWindow(s, st);
    expect(paid).to.equal(3n * PRICE);
    await expectDeltas(s, snap, { ETH: { client: -paid, provider: paid - routing, escrow: routing } });
  });

  it("attack: the provider claims a failing test passed — the sample re-runs it failing, the stream pauses at tranche 2 (no ticket 3), and the case refunds the tranche and slashes the false-claim penalty", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const st = await stream(s, "false_claim", 32n);
    expect(st.pause.reason).to.equal("false_claim");
    expect(st.pause.tranche).to.equal(2n);
    expect(st.flow.state.released).to.equal(2n); // no ticket for tranche 3
    const { caseId, pkg } = await streamCase(s, st);
    const run = await decide(s, caseId, pkg);
    expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    expect(run.resolution.objectiveChecks).to.have.length(1);
    expect(run.resolution.objectiveChecks[0]!.status).to.equal(false);
    expect(run.resolution.replays).to.have.length(1);
    expect(run.resolution.lane0.checks.filter((c) => c.name.startsWith("stream.")).every((c) => c.status === "pass")).to.equal(true);
    expect(run.message).to.deep.include({ verdict: 1, refund: PRICE, slash: PENALTY });
    const { fee, shares, dust } = await enforceByPanel(s, run);
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Resolved);
    const { paid, routing } = await finalizeAfterWindow(s, st);
    expect(paid).to.equal(PRICE); // two tranches released, the false one refunded
    await expectDeltas(s, snap, {
      ETH: { client: -paid, provider: paid - routing, escrow: routing, payer: -fee, burn: dust, ...shares },
      LGAS: { payer: PENALTY - burnOf(PENALTY), burn: burnOf(PENALTY), registry: -PENALTY },
    });
    expect((await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address])).active).to.equal(parseEther("500") - PENALTY);
  });

  it("attack: the provider signs two different proofs of one tranche — the stream pauses and Lane 0 refunds the tranche and slashes the penalty", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const st = await stream(s, "equivocate", 33n);
    expect(st.pause).to.deep.include({ reason: "equivocation", tranche: 2n });
    const { caseId, pkg } = await streamCase(s, st);
    const run = await decide(s, caseId, pkg);
    expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    expect(run.resolution.lane0.checks.find((c) => c.name === "stream[tranche 2].single_proof")!.status).to.equal("fail");
    expect(run.message).to.deep.include({ verdict: 1, refund: PRICE, slash: PENALTY });
    const { fee, shares, dust } = await enforceByPanel(s, run);
    const { paid, routing } = await finalizeAfterWindow(s, st);
    expect(paid).to.equal(PRICE);
    await expectDeltas(s, snap, {
      ETH: { client: -paid, provider: paid - routing, escrow: routing, payer: -fee, burn: dust, ...shares },
      LGAS: { payer: PENALTY - burnOf(PENALTY), burn: burnOf(PENALTY), registry: -PENALTY },
    });
  });

  for (const liar of ["repository_changed", "silent"] as const) {
    const what = liar === "silent" ? "stops answering samples" : "answers the sample with another repository than the proof's";
    it(`attack: the provider ${what} — the stream pauses at tranche 2 with no further ticket; the provider keeps exactly the two tranches the payer released`, async () => {
      const s = await loadFixture(systemFixture);
      const snap = await snapshot(s, fullBook(s));
      const st = await stream(s, liar, liar === "silent" ? 34n : 35n);
      expect(st.pause).to.deep.include({ reason: liar === "silent" ? "no_answer" : "repository_changed", tranche: 2n });
      expect(st.flow.state.released).to.equal(2n);
      expect(st.flow.caseEvidence(), "silence proves nothing to an arbitrator").to.equal(null);
      await closeUnilateral({ wallet: s.provider, publicClient: s.publicClient, escrow: st.escrow, ref: st.opened.ref, ticket: st.flow.tranches.get(2n)!.ticket });
      const { paid, routing } = await finalizeAfterWindow(s, st);
      expect(paid).to.equal(2n * PRICE); // bounded by tranchesInFlight: the unchecked tranche was prepaid
      await expectDeltas(s, snap, { ETH: { client: -paid, provider: paid - routing, escrow: routing } });
    });
  }

  it("attack: the payer refuses to pay for a passing sample and disputes it — Lane 1 re-runs the claim true, the case is lost by the payer, its bond goes to the provider", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const st = await stream(s, "none", 36n);
    expect(st.pause.reason).to.equal("done");
    const held = st.flow.tranches.get(2n)!;
    // The payer pretends the stream paused on tranche 2's first sampled claim, which re-ran true.
    st.flow.state = { ...st.flow.state, paused: { tranche: 2n, reason: "false_claim", detail: "claimed by the payer" } };
    held.samples = held.samples!.map((x, i) => (i === 0 ? { ...x, status: "false" as const } : x));
    const { caseId, pkg, closing } = await streamCase(s, st);
    expect(closing.seq).to.equal(3n);
    const run = await decide(s, caseId, pkg);
    expect(run.resolution.aggregate.finalVerdict).to.equal("challenger_fault");
    expect(run.resolution.objectiveChecks[0]!.status).to.equal(true);
    expect(run.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });
    const { bond, fee, shares, dust } = await enforceByPanel(s, run);
    const { paid, routing } = await finalizeAfterWindow(s, st);
    expect(paid).to.equal(3n * PRICE);
    await expectDeltas(s, snap, {
      ETH: { client: -paid, provider: paid - routing + bond - burnOf(bond) - fee, escrow: routing, payer: -bond, burn: burnOf(bond) + dust, ...shares },
    });
  });

  it("attack: the payer samples outside the agreed rate — the provider refuses the undrawn sample, and a case citing an undrawn false claim is lost by the payer (SAMPLE_OUTSIDE_RATE)", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const st = await stream(s, "false_claim", 37n);
    expect(st.pause.reason).to.equal("false_claim");
    const held = st.flow.tranches.get(2n)!;
    const proof = held.result!.proof.proof;
    const drawn = sampledIndices({ secret: held.secret!, proofHash: progressProofHash(proof), total: 12, count: TERMS.stream.samplesPerTranche });
    expect(drawn).to.deep.equal(held.indices);
    // The repository fails all 12 tests (all claimed passing); pick a false claim the agreed draw did not sample.
    const failing = (await claimsOf({ terms: TERMS, suite: SUITE, repository: held.repository!, inputs: streamInputs({ chainId: s.chainId, gasEscrow: st.escrow, sessionId: st.sessionId, tranche: 2n }) }))
      .map((t, i) => (t.outcome === "fail" ? i : -1))
      .filter((i) => i >= 0);
    expect(failing).to.have.length(12);
    const undrawn = failing.find((i) => !drawn.includes(i));
    expect(undrawn, "a false claim outside the draw").to.not.equal(undefined);
    // Asking the provider for it outside the draw gets nothing.
    expect(await st.node.sample({ tranche: 2n, secret: held.secret!, indices: [undrawn!] })).to.equal(null);
    expect(st.node.refusedSamples).to.deep.equal([{ tranche: 2n, indices: [undrawn!] }]);
    const { caseId, pkg } = await streamCase(s, st, (e) => {
      e.progress.sample = undrawn!;
    });
    const run = await decide(s, caseId, pkg);
    expect(run.resolution.aggregate.finalVerdict).to.equal("challenger_fault");
    expect(run.resolution.aggregate.reasonCodes).to.deep.equal(["SAMPLE_OUTSIDE_RATE"]);
    expect(run.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });
    const { bond, fee, shares, dust } = await enforceByPanel(s, run);
    const { paid, routing } = await finalizeAfterWindow(s, st);
    expect(paid).to.equal(2n * PRICE);
    await expectDeltas(s, snap, {
      ETH: { client: -paid, provider: paid - routing + bond - burnOf(bond) - fee, escrow: routing, payer: -bond, burn: burnOf(bond) + dust, ...shares },
    });
  });

  it("offline means pause: the payer's delegated sampling node keeps checking and funding with a session key, and stops at the key's cap — the provider is paid exactly the capped tranches", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const st = await stream(s, "none", 38n, { cap: 2n * PRICE });
    expect(st.pause).to.deep.include({ reason: "cap_reached", tranche: 3n });
    expect(st.flow.state).to.deep.include({ released: 2n, checked: 2n });
    expect(st.flow.events.filter((e) => e.kind === "sample").every((e) => e.kind === "sample" && e.status === "true")).to.equal(true);
    // The provider closes on the key-signed ticket 2 (the grant travels with it).
    await closeUnilateral({ wallet: s.provider, publicClient: s.publicClient, escrow: st.escrow, ref: st.opened.ref, ticket: st.flow.tranches.get(2n)!.ticket, grant: st.grant! });
    const { paid, routing } = await finalizeAfterWindow(s, st);
    expect(paid).to.equal(2n * PRICE);
    await expectDeltas(s, snap, { ETH: { client: -paid, provider: paid - routing, escrow: routing } });
  });
});
