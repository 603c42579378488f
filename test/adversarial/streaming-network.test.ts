/**
 * Adversarial suite, issue 32 second pass (decision 0037): milestone streaming over the sealed socket. A provider
 * node (`ProviderNode` with stream work, its own SQLite store) listens on 127.0.0.1; the payer's Flow Controller
 * talks to it through `NetworkStreamLink` (session.open, stream.tranche → stream.result, stream.sample →
 * stream.repository) with its own store and stream journal. Honest stream, a provider lying at tranche 2, and a
 * payer that restarts mid-tranche — each ends with the exact balance change of every party (gas added back).
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import hre from "hardhat";
import { createWalletClient, custom, getAddress, keccak256, parseEther, stringToBytes, type Hex, type PublicClient } from "viem";
import { hardhat } from "viem/chains";

import { buildStreamPackage } from "../../arbitration/runner/build";
import { currentClosingState, openSessionCase } from "../../arbitration/runner/chain";
import { packageHash, type ChallengePackage } from "../../arbitration/documents/package";
import { resolutionToJson } from "../../arbitration/lanes/resolution";
import { claimsOf } from "../../arbitration/lanes/stream-sample";
import type { ArbitrationRun } from "../../arbitration/runner/runner";
import { canon } from "../../channel-client/core/canonical";
import { anchorReceiptCommit, closeUnilateral, finalizeClose } from "../../channel-client/chain/escrow";
import { sessionReceiptHash } from "../../channel-client/core/receipt";
import { termsHashOf, type TermsDocumentV4 } from "../../channel-client/core/terms";
import { paymentTicketHash } from "../../channel-client/core/ticket";
import { echoHandler } from "../../channel-client/node/echo-worker";
import { FlowController, type StreamEvent, type StreamProviderLink } from "../../channel-client/node/flow-controller";
import { sampledIndices, progressProofHash } from "../../channel-client/core/progress-proof";
import { signSessionKeyGrant } from "../../channel-client/core/session-key";
import { privateKeyToAccount } from "viem/accounts";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { PayerClient, ProviderRejectedError } from "../../channel-client/node/payer-client";
import { StreamJournal } from "../../channel-client/node/stream-journal";
import { NetworkStreamLink } from "../../channel-client/node/stream-link";
import type { StreamWork } from "../../channel-client/node/stream-service";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { createPayer } from "../../channel-client/roles/payer";
import type { Bundle } from "../../arbitration/documents/bundle";
import { BROKEN_REPOSITORY, codeStreamTerms, REPOSITORY_BY_TRANCHE, STREAM_MODEL, SUITE } from "../../scripts/examples/code-stream";
import { DISPUTE_PARAMS, KIND, PROVIDER_ROLE, systemFixture, type System } from "../helpers/system";
import { burnOf, expectDeltas, feeOf, fullBook, openSponsoredChannel, snapshot } from "./helpers";
import { enforceByPanel, threeRuns } from "./panel";

const DEPOSIT = parseEther("1");
const TERMS: TermsDocumentV4 = codeStreamTerms({ windowAfterSettlement: BigInt(DISPUTE_PARAMS.settledDisputeWindow) });
const PRICE = TERMS.pricing.capPerCall;
const PENALTY = TERMS.stream.falseClaimPenalty;
/** The same stream with two tranches in flight: a ticket goes out while the previous proof's claims re-run. */
const PIPELINED: TermsDocumentV4 = codeStreamTerms({ windowAfterSettlement: BigInt(DISPUTE_PARAMS.settledDisputeWindow), tranchesInFlight: 2 });
const secretOf = (tranche: bigint): Hex => keccak256(stringToBytes(`network stream secret ${tranche}`));

/** Honest work (the suite's real outcomes on the tranche's repository), or claims that all 12 pass on a broken one at `lieAt`. */
function work(lieAt?: bigint): StreamWork {
  return async ({ tranche, terms, inputs }) => {
    const lying = tranche === lieAt;
    const repository = lying ? BROKEN_REPOSITORY : REPOSITORY_BY_TRANCHE[Number(tranche) - 1]!;
    const tests = await claimsOf({ terms, suite: SUITE, repository, inputs });
    return { repository, tests: lying ? tests.map((t) => ({ ...t, outcome: "pass" as const })) : tests, coverageDeltaBps: 500, lint: "clean" };
  };
}

/** A provider node and a payer (store, journal) for a freshly opened v4 channel; `stop` ends both and removes the files. */
async function network(s: System, nonce: bigint, lieAt?: bigint, terms: TermsDocumentV4 = TERMS) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-stream-net-"));
  const opened = await openSponsoredChannel(s, termsHashOf(terms), nonce, DEPOSIT);
  const { payer, provider, domain, sessionId } = opened;
  const providerStore = SqliteStore.open(path.join(dir, "provider.db"));
  const startNode = (repositoryOf?: (p: { tranche: bigint }) => Bundle | undefined) =>
    ProviderNode.start({
      account: provider,
      publicClient: s.publicClient as unknown as PublicClient,
      domain,
      store: providerStore,
      pricing: terms,
      handler: echoHandler,
      modelSnapshotId: STREAM_MODEL,
      stream: { work: work(lieAt), ...(repositoryOf ? { repositoryOf } : {}) },
    });
  let node = await startNode();
  const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
  const channel = { sessionId, role: "payer" as const, ref: opened.opened.ref, pricing: terms, escrow: opened.escrow, chainId: domain.chainId, deposit: DEPOSIT, status: "open" as const };
  await payerStore.putChannel(channel);
  const journal = StreamJournal.open(path.join(dir, "payer.db.streams"), sessionId);
  const links: NetworkStreamLink[] = [];
  const connect = async (grant?: Parameters<typeof NetworkStreamLink.connect>[0]["grant"]) => {
    const link = await NetworkStreamLink.connect({ account: payer, domain, channel, port: node.port, timeoutMs: 60_000, ...(grant ? { grant } : {}) });
    links.push(link);
    return link;
  };
  const controller = async (link: StreamProviderLink, withJournal = true, onEvent?: (event: StreamEvent) => void) =>
    FlowController.resume({ terms, ref: opened.opened.ref, sessionId, domain, signer: payer, link, suite: SUITE, secretOf, store: payerStore, ...(withJournal ? { journal } : {}), ...(onEvent ? { onEvent } : {}) });
  /** The provider node stops (its memory of recent repositories with it) and a new one starts on the same store. */
  const restartProvider = async (repositoryOf?: (p: { tranche: bigint }) => Bundle | undefined) => {
    for (const link of links.splice(0)) await link.close();
    await node.stop();
    node = await startNode(repositoryOf);
  };
  const stop = async () => {
    for (const link of links) await link.close();
    await node.stop();
    await providerStore.close();
    await payerStore.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { ...opened, providerStore, payerStore, journal, connect, controller, restartProvider, stop, port: () => node.port };
}

/** The payer's close on the newest ticket, finalised after the window: what the provider was paid and the fee. */
async function finalizeAfterWindow(s: System, sessionId: Hex, escrow: Hex, ref: Awaited<ReturnType<typeof openSponsoredChannel>>["opened"]["ref"]) {
  const recorded = await currentClosingState(s.publicClient, getAddress(s.escrow.address), sessionId);
  await time.increase(3601);
  await finalizeClose({ wallet: s.watcher, publicClient: s.publicClient, escrow: getAddress(escrow), ref, recorded });
  return { paid: recorded.amount, routing: feeOf(recorded.amount, recorded.feeBps) };
}

async function decide(s: System, caseId: Hex, pkg: ChallengePackage): Promise<ArbitrationRun> {
  const runs = await threeRuns(s, caseId, pkg);
  expect(new Set(runs.map((r) => canon(resolutionToJson(r.resolution)))).size, "three arbitrators, one resolution").to.equal(1);
  return runs[0]!;
}

describe("adversarial: milestone streaming over the sealed socket — a provider node and the payer's Flow Controller on loopback (issue 32, second pass)", function () {
  this.timeout(240_000);

  it("an honest stream over the network (the SDK's Payer.streamMilestones, no link given): three tranches, two claims of each proof re-run true, the provider node stores every step, request and proof; paid exactly three tranches", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const n = await network(s, 41n);
    try {
      // The SDK: Payer.streamMilestones without a link talks to the provider node over the sealed socket.
      const wallet = createWalletClient({ account: n.payer, chain: hardhat, transport: custom(hre.network.provider) });
      const sdk = createPayer({ deployment: { chainId: Number(s.chainId), contracts: { GasEscrow: n.escrow } }, publicClient: s.publicClient as unknown as PublicClient, wallet, store: n.payerStore });
      const flow = await sdk.streamMilestones(n.sessionId, { suite: SUITE, tranches: 3n, journal: n.journal, secretOf, peer: { host: "127.0.0.1", port: n.port() } });
      const pause = flow.state.paused!;
      expect(pause).to.deep.include({ reason: "done", tranche: 3n });
      expect(flow.events.filter((e) => e.kind === "sample").map((e) => e.kind === "sample" && e.status)).to.deep.equal(["true", "true", "true", "true", "true", "true"]);
      expect(flow.events.filter((e) => e.kind === "proof").map((e) => e.kind === "proof" && `${e.passed}/${e.total}`)).to.deep.equal(["9/12", "12/12", "12/12"]);
      // Both stores hold the same three receipts; the provider's results are the requests and proofs the receipts bind.
      expect(n.providerStore.leaves(n.sessionId)).to.deep.equal(n.payerStore.leaves(n.sessionId));
      const results = n.providerStore.results(n.sessionId);
      expect(results.map((r) => keccak256(stringToBytes(r.output)))).to.deep.equal(n.providerStore.steps(n.sessionId).map((st) => st.receipt!.receipt.outputHash));
      expect(results.map((r) => keccak256(stringToBytes(r.request)))).to.deep.equal(n.providerStore.steps(n.sessionId).map((st) => st.receipt!.receipt.offloadPacketHash));
      // A plain invocation on a stream channel is refused and does no work: a tranche must come with its request.
      const client = await PayerClient.connect({ account: n.payer, domain: n.domain, store: n.payerStore, channel: n.payerStore.getChannel(n.sessionId)!, port: n.port() });
      const refused = await client.invoke({ jsonrpc: "2.0", id: 1, method: "tools/echo", params: {} }).catch((error: Error) => error);
      await client.close();
      expect(refused).to.be.instanceOf(ProviderRejectedError);
      expect((refused as ProviderRejectedError).error).to.equal("StreamRefusedError");
      const newest = n.providerStore.latestTicket(n.sessionId)!;
      expect(newest.ticket.seq).to.equal(3n);
      await closeUnilateral({ wallet: s.provider, publicClient: s.publicClient, escrow: n.escrow, ref: n.opened.ref, ticket: newest });
      const { paid, routing } = await finalizeAfterWindow(s, n.sessionId, n.escrow, n.opened.ref);
      expect(paid).to.equal(3n * PRICE);
      await expectDeltas(s, snap, { ETH: { client: -paid, provider: paid - routing, escrow: routing } });
    } finally {
      await n.stop();
    }
  });

  it("attack: the provider node claims a failing test passed at tranche 2 — the payer's sample over the socket re-runs it failing, the stream pauses with no ticket 3, and the case refunds the tranche and slashes the penalty", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const n = await network(s, 42n, 2n);
    try {
      const flow = await n.controller(await n.connect());
      const pause = await flow.run(3n);
      expect(pause).to.deep.include({ reason: "false_claim", tranche: 2n });
      expect(flow.state.released).to.equal(2n);
      expect(n.providerStore.latestTicket(n.sessionId)!.ticket.seq).to.equal(2n); // the provider never saw ticket 3
      const evidence = flow.caseEvidence()!;
      expect(evidence.seq).to.equal(2n);
      const closing = (await closeUnilateral({ wallet: s.payerWallet, publicClient: s.publicClient, escrow: n.escrow, ref: n.opened.ref, ticket: flow.tranches.get(2n)!.ticket })).state;
      await anchorReceiptCommit({ wallet: s.payerWallet, publicClient: s.publicClient, escrow: n.escrow, ref: n.opened.ref, commit: evidence.commit });
      const caseId = await s.disputes.read.nextCaseId([KIND.Session, n.sessionId]);
      const pkg = buildStreamPackage({
        caseId,
        chainId: s.chainId,
        disputeManager: getAddress(s.disputes.address),
        challenger: n.payer.address,
        lane: 1,
        gasEscrow: n.escrow,
        sessionId: n.sessionId,
        ref: n.opened.ref,
        pricing: TERMS,
        closing,
        commit: evidence.commit,
        seq: evidence.seq,
        receipts: [evidence.receipt],
        progress: evidence.progress,
        suite: evidence.suite!,
        repository: evidence.repository!,
      });
      await openSessionCase({
        wallet: s.payerWallet,
        publicClient: s.publicClient,
        disputeManager: getAddress(s.disputes.address),
        lane: 1,
        packageHash: packageHash(pkg),
        ref: n.opened.ref,
        recorded: closing,
        receiptHash: sessionReceiptHash(evidence.receipt.receipt.receipt),
        ticketHash: paymentTicketHash(evidence.receipt.ticket.ticket),
        proof: evidence.receipt.merkleProof,
      });
      const run = await decide(s, caseId, pkg);
      expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
      expect(run.message).to.deep.include({ verdict: 1, refund: PRICE, slash: PENALTY });
      const { fee, shares, dust } = await enforceByPanel(s, run);
      const { paid, routing } = await finalizeAfterWindow(s, n.sessionId, n.escrow, n.opened.ref);
      expect(paid).to.equal(PRICE); // two tranches released, the false one refunded
      await expectDeltas(s, snap, {
        ETH: { client: -paid, provider: paid - routing, escrow: routing, payer: -fee, burn: dust, ...shares },
        LGAS: { payer: PENALTY - burnOf(PENALTY), burn: burnOf(PENALTY), registry: -PENALTY },
      });
      expect((await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address])).active).to.equal(parseEther("500") - PENALTY);
    } finally {
      await n.stop();
    }
  });

  it("attack, pipelined (two tranches in flight): the provider node lies at tranche 2 — ticket 3 goes out while tranche 2's claims re-run, never ticket 4; at no ticket has the payer paid more than two tranches past its newest verified proof; the case refunds tranche 2 and slashes the penalty: paid exactly two tranches", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const n = await network(s, 46n, 2n, PIPELINED);
    try {
      // At each ticket: how many released tranches have no verified proof (the payer's exposure, in tranches).
      const exposure: bigint[] = [];
      let flow: FlowController | undefined;
      flow = await n.controller(await n.connect(), true, (event) => {
        if (event.kind === "ticket") exposure.push(flow!.state.released - flow!.state.checked);
      });
      const pause = await flow.run(4n);
      expect(pause).to.deep.include({ reason: "false_claim", tranche: 2n });
      expect(flow.state).to.deep.include({ released: 3n, checked: 1n });
      expect(exposure).to.deep.equal([1n, 2n, 2n]); // ticket 1; ticket 2 before proof 1 was checked; ticket 3 before proof 2 was
      const order = flow.events.map((e) => `${e.kind}:${e.tranche}`);
      expect(order.indexOf("ticket:2")).to.be.below(order.indexOf("sample:1")); // pipelined: released while tranche 1 re-ran
      expect(order.indexOf("ticket:3")).to.be.below(order.indexOf("sample:2"));
      expect(order.filter((e) => e.startsWith("ticket"))).to.deep.equal(["ticket:1", "ticket:2", "ticket:3"]);
      expect(n.providerStore.latestTicket(n.sessionId)!.ticket.seq).to.equal(3n); // never ticket 4
      // The journal says tranche 1 checked, and the pause on 2 with its evidence (the resumed payer would build the case).
      expect(n.journal.entries().filter((e) => e.kind === "checked").map((e) => e.tranche)).to.deep.equal([1n]);
      const resumed = await n.controller({ tranche: async () => null, sample: async () => null });
      expect(resumed.state).to.deep.include({ released: 3n, checked: 1n });
      expect(resumed.state.paused).to.deep.include({ reason: "false_claim", tranche: 2n });

      const evidence = flow.caseEvidence()!;
      expect(evidence.seq).to.equal(2n);
      const closing = (await closeUnilateral({ wallet: s.payerWallet, publicClient: s.publicClient, escrow: n.escrow, ref: n.opened.ref, ticket: flow.tranches.get(3n)!.ticket })).state;
      expect(closing.amount).to.equal(3n * PRICE);
      await anchorReceiptCommit({ wallet: s.payerWallet, publicClient: s.publicClient, escrow: n.escrow, ref: n.opened.ref, commit: evidence.commit });
      const caseId = await s.disputes.read.nextCaseId([KIND.Session, n.sessionId]);
      const pkg = buildStreamPackage({
        caseId,
        chainId: s.chainId,
        disputeManager: getAddress(s.disputes.address),
        challenger: n.payer.address,
        lane: 1,
        gasEscrow: n.escrow,
        sessionId: n.sessionId,
        ref: n.opened.ref,
        pricing: PIPELINED,
        closing,
        commit: evidence.commit,
        seq: evidence.seq,
        receipts: [evidence.receipt],
        progress: evidence.progress,
        suite: evidence.suite!,
        repository: evidence.repository!,
      });
      await openSessionCase({
        wallet: s.payerWallet,
        publicClient: s.publicClient,
        disputeManager: getAddress(s.disputes.address),
        lane: 1,
        packageHash: packageHash(pkg),
        ref: n.opened.ref,
        recorded: closing,
        receiptHash: sessionReceiptHash(evidence.receipt.receipt.receipt),
        ticketHash: paymentTicketHash(evidence.receipt.ticket.ticket),
        proof: evidence.receipt.merkleProof,
      });
      const run = await decide(s, caseId, pkg);
      expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
      expect(run.message).to.deep.include({ verdict: 1, refund: PRICE, slash: PENALTY });
      const { fee, shares, dust } = await enforceByPanel(s, run);
      const { paid, routing } = await finalizeAfterWindow(s, n.sessionId, n.escrow, n.opened.ref);
      expect(paid).to.equal(2n * PRICE); // three tranches released, the false one refunded
      await expectDeltas(s, snap, {
        ETH: { client: -paid, provider: paid - routing, escrow: routing, payer: -fee, burn: dust, ...shares },
        LGAS: { payer: PENALTY - burnOf(PENALTY), burn: burnOf(PENALTY), registry: -PENALTY },
      });
      expect((await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address])).active).to.equal(parseEther("500") - PENALTY);
    } finally {
      await n.stop();
    }
  });

  it("offline means pause, over the socket: the delegated sampling node's session key signs the tranche tickets the provider node accepts under the payer's grant, and stops at its cap; a sample outside the agreed draw is refused; paid exactly two tranches", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const n = await network(s, 44n);
    try {
      const delegate = privateKeyToAccount(keccak256(stringToBytes("network delegated sampling node")));
      const grant = await signSessionKeyGrant({ account: n.payer, domain: n.domain, sessionId: n.sessionId, key: delegate.address, expiry: (await s.publicClient.getBlock()).timestamp + 86_400n, spendCap: 2n * PRICE, methods: ["*"], epoch: 0n });
      const link = await n.connect(grant);
      const flow = await FlowController.resume({ terms: TERMS, ref: n.opened.ref, sessionId: n.sessionId, domain: n.domain, signer: delegate, grant, link, suite: SUITE, secretOf, store: n.payerStore, journal: n.journal });
      expect(await flow.run(3n)).to.deep.include({ reason: "cap_reached", tranche: 3n });
      expect(flow.state).to.deep.include({ released: 2n, checked: 2n });
      const newest = n.providerStore.latestTicket(n.sessionId)!;
      expect(newest.ticket.seq).to.equal(2n);
      // The payer asks for claims the draw did not pick: refused, the stream would pause.
      const held = flow.tranches.get(2n)!;
      const proof = held.result!.proof.proof;
      const drawn = sampledIndices({ secret: held.secret!, proofHash: progressProofHash(proof), total: proof.tests.length, count: TERMS.stream.samplesPerTranche });
      const undrawn = [0, 1, 2, 3].filter((i) => !drawn.includes(i)).slice(0, drawn.length);
      let refusal: Error | undefined;
      await link.sample({ tranche: 2n, secret: held.secret!, indices: undrawn }).catch((error: Error) => (refusal = error));
      expect(refusal?.message).to.match(/not the agreed draw/);
      await closeUnilateral({ wallet: s.provider, publicClient: s.publicClient, escrow: n.escrow, ref: n.opened.ref, ticket: newest, grant });
      const { paid, routing } = await finalizeAfterWindow(s, n.sessionId, n.escrow, n.opened.ref);
      expect(paid).to.equal(2n * PRICE);
      await expectDeltas(s, snap, { ETH: { client: -paid, provider: paid - routing, escrow: routing } });
    } finally {
      await n.stop();
    }
  });

  it("a payer that restarts mid-tranche resumes from its store and journal: the secret of tranche 2 was durable before its request left, so the restarted payer reveals it, checks the sample and goes on; without the journal it pauses (secret_lost); paid exactly three tranches", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const n = await network(s, 43n);
    try {
      const first = await n.connect();
      // The payer dies once tranche 2's request has left and the provider answered, before it handled the answer.
      const dying: StreamProviderLink = {
        tranche: async (p) => {
          const answered = await first.tranche(p);
          if (p.request.tranche === 2n) throw new Error("the payer process died here");
          return answered;
        },
        sample: (p) => first.sample(p),
      };
      const before = await n.controller(dying);
      expect((await before.run(3n)).tranche).to.equal(2n);
      await first.close();
      expect(n.payerStore.latestTicket(n.sessionId)!.ticket.seq).to.equal(2n);
      expect(n.payerStore.latestAnsweredStep(n.sessionId)!.seq).to.equal(1n); // tranche 2's answer was never stored
      const journaled = n.journal.entries();
      expect(journaled.find((e) => e.kind === "request" && e.tranche === 2n)).to.deep.include({ secret: secretOf(2n) });

      // Without the journal the secret is gone: nothing can be revealed, nothing more is paid.
      const amnesiac = await n.controller(await n.connect(), false);
      await amnesiac.step();
      expect(amnesiac.state.paused).to.deep.include({ reason: "secret_lost", tranche: 2n });
      expect(amnesiac.state.released).to.equal(2n);

      // With it: tranche 2's ticket and request are sent again (answered again from the provider's store), its secret
      // revealed, its two claims re-run true, and tranches 3 follows.
      const after = await n.controller(await n.connect());
      expect(after.state).to.deep.include({ released: 2n, checked: 1n, paused: null });
      const pause = await after.run(3n);
      expect(pause).to.deep.include({ reason: "done", tranche: 3n });
      expect(after.events.filter((e) => e.kind === "ticket").map((e) => e.kind === "ticket" && e.tranche)).to.deep.equal([3n]);
      expect(after.events.filter((e) => e.kind === "sample").map((e) => e.kind === "sample" && `${e.tranche}:${e.status}`)).to.deep.equal(["2:true", "2:true", "3:true", "3:true"]);
      expect(n.payerStore.leaves(n.sessionId)).to.deep.equal(n.providerStore.leaves(n.sessionId));
      // The journal holds each tranche's signed proof (what a case on it needs after a restart).
      expect(n.journal.entries().filter((e) => e.kind === "proof").map((e) => e.tranche)).to.deep.equal([1n, 2n, 3n]);

      await closeUnilateral({ wallet: s.provider, publicClient: s.publicClient, escrow: n.escrow, ref: n.opened.ref, ticket: n.providerStore.latestTicket(n.sessionId)! });
      const { paid, routing } = await finalizeAfterWindow(s, n.sessionId, n.escrow, n.opened.ref);
      expect(paid).to.equal(3n * PRICE);
      await expectDeltas(s, snap, { ETH: { client: -paid, provider: paid - routing, escrow: routing } });
    } finally {
      await n.stop();
    }
  });
  it("a provider node that restarts between a tranche and its sample: without the repository it refuses the sample (the payer pauses, nothing more is paid); with its repository still at hand (repositoryOf) the resumed payer's sample is answered and the stream goes on; paid exactly three tranches", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const n = await network(s, 45n);
    try {
      const first = await n.connect();
      // The provider node goes down once it answered tranche 2, before the payer's sample reaches it.
      const crashing: StreamProviderLink = {
        tranche: (p) => first.tranche(p),
        sample: async (p) => {
          if (p.tranche === 2n) throw new Error("the provider node went down");
          return first.sample(p);
        },
      };
      const before = await n.controller(crashing);
      expect(await before.run(3n)).to.deep.include({ reason: "no_answer", tranche: 2n });
      expect(n.payerStore.latestAnsweredStep(n.sessionId)!.seq).to.equal(2n); // tranche 2 answered and stored, not checked

      await n.restartProvider(); // memory only: tranche 2's repository is gone
      const forgotten = await n.controller(await n.connect());
      expect(await forgotten.run(3n)).to.deep.include({ reason: "no_answer", tranche: 2n });
      expect(forgotten.state.released).to.equal(2n);

      await n.restartProvider(({ tranche }) => REPOSITORY_BY_TRANCHE[Number(tranche) - 1]);
      const after = await n.controller(await n.connect());
      expect(await after.run(3n)).to.deep.include({ reason: "done", tranche: 3n });
      expect(after.events.filter((e) => e.kind === "sample").map((e) => e.kind === "sample" && `${e.tranche}:${e.status}`)).to.deep.equal(["2:true", "2:true", "3:true", "3:true"]);

      await closeUnilateral({ wallet: s.provider, publicClient: s.publicClient, escrow: n.escrow, ref: n.opened.ref, ticket: n.providerStore.latestTicket(n.sessionId)! });
      const { paid, routing } = await finalizeAfterWindow(s, n.sessionId, n.escrow, n.opened.ref);
      expect(paid).to.equal(3n * PRICE);
      await expectDeltas(s, snap, { ETH: { client: -paid, provider: paid - routing, escrow: routing } });
    } finally {
      await n.stop();
    }
  });
});
