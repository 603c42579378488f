/**
 * Adversarial suite, issue 12 (nodes): a provider serves only open channels. A payer tries to get work
 * for free after the channel stopped being open — after the provider co-signed a close, after a
 * cooperative settlement, inside a unilateral close's window, after finalisation — over the real sealed
 * socket against a real provider node and watchtower on the system fixture. Every attempt must be refused
 * with a typed `ChannelNotOpenError`; afterwards the test asserts the exact balance change of every account
 * of the system book, that the provider was paid for every receipt it answered, and that the provider's
 * receipt root (what `ioi export` prints) is the root the chain settled.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAddress, parseEther, parseEventLogs, type Hex, type PublicClient } from "viem";

import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { echoHandler } from "../../channel-client/cli/channel";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { anchorReceiptCommit, closeCooperative as submitCooperative, closeUnilateral as submitUnilateral, finalizeClose, openChannel } from "../../channel-client/chain/escrow";
import { PayerClient, ProviderRejectedError } from "../../channel-client/node/payer-client";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { sessionReceiptHash } from "../../channel-client/core/receipt";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { ChannelStore } from "../../channel-client/store/store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { paymentTicketHash } from "../../channel-client/core/ticket";
import { Watchtower } from "../../channel-client/node/watchtower";
import { hardhatAccount, makeTerms } from "../helpers/fixtures";
import { KIND, SYS, systemFixture } from "../helpers/system";
import { expectDeltas, PACKAGE_HASH, snapshot, type Wallet } from "./helpers";

const PRICE = parseEther("0.001");
const DEPOSIT = parseEther("1");
const WINDOW = 3600n;
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const request = (i: number) => ({ jsonrpc: "2.0", id: `call-${i}`, method: "tools/echo", params: { text: `call ${i}` } });
const PAYER = hardhatAccount(SYS.payer);
const PROVIDER = hardhatAccount(SYS.provider);

/** The system plus an ETH channel on the provider's price list, opened by the client (its funder). */
async function channelSystem() {
  const s = await systemFixture();
  const publicClient = s.publicClient as unknown as PublicClient;
  const domain = gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: getAddress(s.escrow.address) });
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), challengeDuration: WINDOW });
  const fromBlock = await publicClient.getBlockNumber();
  const opened = await openChannel({ wallet: s.client as Wallet, publicClient, escrow: s.escrow.address, terms, amount: DEPOSIT });
  return { ...s, pc: publicClient, channelDomain: domain, opened, fromBlock };
}

type Sys = Awaited<ReturnType<typeof channelSystem>>;

describe("adversarial: issue 12 — no work after a close", function () {
  let dir: string;
  const cleanup: Array<() => Promise<unknown>> = [];

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-lifecycle-"));
  });
  afterEach(async () => {
    while (cleanup.length > 0) await cleanup.pop()!().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  /** A provider node on its own store, and (optionally) a watchtower on the same store that feeds it events. */
  async function startProvider(s: Sys, options: { file?: string; feedNode?: boolean; finalize?: boolean; cooperativeGraceMs?: number; onFinalized?: (sessionId: Hex, txHash: Hex) => void } = {}) {
    const store = SqliteStore.open(path.join(dir, options.file ?? "provider.db"));
    const node = await ProviderNode.start({ account: PROVIDER, publicClient: s.pc, domain: s.channelDomain, store, pricing, handler: echoHandler, modelSnapshotId: "worker:echo@1" });
    const errors: unknown[] = [];
    const tower = new Watchtower({
      publicClient: s.pc,
      wallet: s.watcher as Wallet,
      escrow: s.escrow.address,
      store,
      fromBlock: s.fromBlock,
      name: "tower",
      finalize: options.finalize ?? false,
      ...(options.cooperativeGraceMs !== undefined ? { cooperativeGraceMs: options.cooperativeGraceMs } : {}),
      onFinalized: options.onFinalized,
      onError: (error) => errors.push(error),
      ...(options.feedNode === false ? {} : { onEvents: (events) => node.applyEscrowEvents(events) }),
    });
    const stop = async () => {
      await tower.stop();
      await node.stop();
      await store.close();
    };
    cleanup.push(stop);
    return { node, store, tower, errors, stop };
  }

  async function startPayer(s: Sys, port: number, file = "payer.db") {
    const store = SqliteStore.open(path.join(dir, file));
    if (!store.getChannel(s.opened.sessionId)) {
      await store.putChannel({ sessionId: s.opened.sessionId, role: "payer", ref: s.opened.ref, pricing, escrow: s.escrow.address, chainId: s.channelDomain.chainId, deposit: s.opened.deposit, status: "open" });
    }
    const client = await PayerClient.connect({ account: PAYER, domain: s.channelDomain, store, channel: store.getChannel(s.opened.sessionId)!, port });
    const stop = async () => {
      await client.close();
      await store.close();
    };
    cleanup.push(stop);
    return { client, store, stop };
  }

  /** Invokes `count` times and expects every one refused with ChannelNotOpenError; returns the messages. */
  async function expectAllRefused(client: PayerClient, count: number): Promise<string[]> {
    const messages: string[] = [];
    for (let i = 0; i < count; i++) {
      const error = await client.invoke(request(1000 + i)).then(
        () => expect.fail("the provider served an invocation on a channel that is not open"),
        (e: unknown) => e as ProviderRejectedError,
      );
      expect(error).to.be.instanceOf(ProviderRejectedError);
      expect(error.error).to.equal("ChannelNotOpenError");
      messages.push(error.message);
    }
    return messages;
  }

  /** The provider's receipt root over everything it answered: the `root` line of `ioi export`. */
  const providerRoot = (store: ChannelStore, sessionId: Hex): Hex => ReceiptAccumulator.fromLeaves(store.leaves(sessionId)).root();

  it("attack: the payer has a {seq 0, amount 0} close co-signed, then streams paid invocations — all refused, the stale settlement pays for nothing served", async () => {
    const s = await loadFixture(channelSystem);
    const snap = await snapshot(s);
    const provider = await startProvider(s);
    const { client } = await startPayer(s, provider.node.port);

    const close = await client.cooperativeClose();
    expect(close.summary.finalAmount).to.equal(0n);
    expect(provider.node.phaseOf(s.opened.sessionId)).to.equal("closed");
    expect(provider.store.getChannel(s.opened.sessionId)!.status).to.equal("closing");
    expect(provider.store.getCooperativeClose(s.opened.sessionId)!.providerSignature).to.equal(close.providerSignature);
    const messages = await expectAllRefused(client, 60);
    expect(messages[0]).to.contain("is closed");
    expect(provider.store.receiptCount(s.opened.sessionId)).to.equal(0);

    // The payer settles with its stale summary: the provider answered nothing, so nothing is owed.
    const settled = await submitCooperative({ wallet: s.payerWallet as Wallet, publicClient: s.pc, escrow: s.escrow.address, ref: s.opened.ref, ...close });
    expect(settled.paidToProvider).to.equal(0n);
    expect(providerRoot(provider.store, s.opened.sessionId)).to.equal(settled.receiptRoot);
    // The snapshot was taken after the open: the funder gets its whole deposit back.
    await expectDeltas(s, snap, { ETH: { client: DEPOSIT, escrow: -DEPOSIT } });
  });

  it("attack: invocations after co-signing a close of real work are refused, and the provider is paid for every receipt it answered", async () => {
    const s = await loadFixture(channelSystem);
    const snap = await snapshot(s);
    const provider = await startProvider(s);
    const payer = await startPayer(s, provider.node.port);
    const client = payer.client;
    await client.stream({ count: 7, inflight: 4, request });
    const close = await client.cooperativeClose();
    await expectAllRefused(client, 5);
    // The provider restarts on the same store: the close is remembered.
    await provider.stop();
    const again = await startProvider(s);
    await payer.stop(); // the payer reconnects too, resuming from its store
    const { client: second } = await startPayer(s, again.node.port);
    expect(again.node.phaseOf(s.opened.sessionId)).to.equal("closed");
    await expectAllRefused(second, 3);
    expect(again.store.receiptCount(s.opened.sessionId)).to.equal(7);

    const settled = await submitCooperative({ wallet: s.stranger as Wallet, publicClient: s.pc, escrow: s.escrow.address, ref: s.opened.ref, ...close });
    expect(settled.paidToProvider).to.equal(7n * PRICE);
    expect(providerRoot(again.store, s.opened.sessionId)).to.equal(settled.receiptRoot);
    await expectDeltas(s, snap, { ETH: { provider: 7n * PRICE, client: DEPOSIT - 7n * PRICE, escrow: -DEPOSIT } });
  });

  it("attack: the payer gets a close of real work co-signed and never submits it — the provider's watchtower submits it after its grace", async () => {
    const s = await loadFixture(channelSystem);
    const snap = await snapshot(s);
    const settledAt: Hex[] = [];
    const provider = await startProvider(s, { finalize: true, cooperativeGraceMs: 300, onFinalized: (_sessionId, txHash) => void settledAt.push(txHash) });
    const { client } = await startPayer(s, provider.node.port);
    await client.stream({ count: 6, inflight: 3, request });
    const close = await client.cooperativeClose();
    await expectAllRefused(client, 4); // no more work, and the payer walks away with the summary
    await provider.tower.runOnce(); // within the grace: the payer's turn to submit
    expect(settledAt).to.have.length(0);
    expect(await s.escrow.read.phaseOf([s.opened.sessionId])).to.equal(1); // Open
    await new Promise((r) => setTimeout(r, 350));
    await provider.tower.runOnce();
    expect(settledAt).to.have.length(1);
    expect((await s.pc.getTransaction({ hash: settledAt[0]! })).from.toLowerCase(), "the tower's wallet sent it").to.equal(s.watcher.account.address.toLowerCase());
    expect(provider.store.getChannel(s.opened.sessionId)!.status).to.equal("settled");
    expect(await s.escrow.read.phaseOf([s.opened.sessionId])).to.equal(5); // Settled: the word stays (issue 12)
    await provider.tower.runOnce(); // idempotent: nothing left to submit
    expect(settledAt).to.have.length(1);
    const [event] = parseEventLogs({ abi: s.escrow.abi, eventName: "ChannelSettled", logs: (await s.pc.getTransactionReceipt({ hash: settledAt[0]! })).logs });
    expect(event!.args.receiptRoot).to.equal(close.summary.finalReceiptRoot);
    expect(providerRoot(provider.store, s.opened.sessionId)).to.equal(event!.args.receiptRoot);
    await expectDeltas(s, snap, { ETH: { provider: 6n * PRICE, client: DEPOSIT - 6n * PRICE, escrow: -DEPOSIT } });
  });

  it("attack: after a cooperative settlement on-chain, a reconnecting payer is refused (the chain says the channel is gone)", async () => {
    const s = await loadFixture(channelSystem);
    const snap = await snapshot(s);
    const provider = await startProvider(s);
    const payer = await startPayer(s, provider.node.port);
    const client = payer.client;
    await client.stream({ count: 4, inflight: 2, request });
    const close = await client.cooperativeClose();
    const settled = await submitCooperative({ wallet: s.stranger as Wallet, publicClient: s.pc, escrow: s.escrow.address, ref: s.opened.ref, ...close });
    await provider.tower.runOnce();
    expect(provider.store.getChannel(s.opened.sessionId)!.status).to.equal("settled");
    expect(provider.node.phaseOf(s.opened.sessionId)).to.equal("settled");
    // A brand-new provider process on the same store binds the known channel and refuses 20 invocations.
    await provider.stop();
    const again = await startProvider(s);
    await payer.stop();
    const { client: second } = await startPayer(s, again.node.port);
    expect(again.node.phaseOf(s.opened.sessionId)).to.equal("settled");
    await expectAllRefused(second, 20);
    expect(again.store.receiptCount(s.opened.sessionId)).to.equal(4);
    expect(settled.paidToProvider).to.equal(4n * PRICE);
    expect(providerRoot(again.store, s.opened.sessionId)).to.equal(settled.receiptRoot);
    await expectDeltas(s, snap, { ETH: { provider: 4n * PRICE, client: DEPOSIT - 4n * PRICE, escrow: -DEPOSIT } });
  });

  it("attack: the payer closes unilaterally with a stale ticket and keeps invoking in the window — refused; the watchtower submits the newest ticket; after finalize still refused", async () => {
    const s = await loadFixture(channelSystem);
    const snap = await snapshot(s);
    const provider = await startProvider(s);
    const { client, store: payerStore } = await startPayer(s, provider.node.port);
    await client.stream({ count: 5, inflight: 3, request });
    const stale = payerStore.steps(s.opened.sessionId)[1]!.ticket; // seq 2
    const closing = await submitUnilateral({ wallet: s.payerWallet as Wallet, publicClient: s.pc, escrow: s.escrow.address, ref: s.opened.ref, ticket: stale });
    expect(closing.state.seq).to.equal(2n);

    await provider.tower.runOnce(); // sees ChannelClosing: the node stops serving, the tower challenges with seq 5
    expect(provider.node.phaseOf(s.opened.sessionId)).to.equal("closing");
    expect(provider.tower.answers.map((a) => [a.staleSeq, a.answeredSeq, a.inWindow])).to.deep.equal([[2n, 5n, true]]);
    await expectAllRefused(client, 30);
    await provider.tower.runOnce(); // nothing newer to submit
    expect(provider.tower.answers).to.have.length(1);

    const recorded = provider.store.getClosing(s.opened.sessionId)!;
    await time.increaseTo(recorded.finalizesAt);
    const settled = await finalizeClose({ wallet: s.stranger as Wallet, publicClient: s.pc, escrow: s.escrow.address, ref: s.opened.ref, recorded: recorded.state });
    expect(settled.paidToProvider).to.equal(5n * PRICE);
    await provider.tower.runOnce();
    expect(provider.node.phaseOf(s.opened.sessionId)).to.equal("settled");
    await expectAllRefused(client, 3);
    expect(provider.store.receiptCount(s.opened.sessionId)).to.equal(5);
    // The tower's challenge carried the seq-5 ticket, whose root covers the receipts accepted when it was
    // signed (pipelined: a prefix); every receipt the provider answered is paid for.
    const history = ReceiptAccumulator.fromLeaves(provider.store.leaves(s.opened.sessionId));
    const covered = [...Array(history.size + 1).keys()].find((n) => history.prefixRoot(n) === settled.receiptRoot);
    expect(covered, "the settled root is a prefix root of the provider's receipts").to.not.equal(undefined);
    await expectDeltas(s, snap, { ETH: { provider: 5n * PRICE, client: DEPOSIT - 5n * PRICE, escrow: -DEPOSIT } });
  });

  it("attack: a standalone watchtower (not feeding the node) re-checks the closing channel on every poll and submits tickets accepted after its last challenge", async () => {
    const s = await loadFixture(channelSystem);
    const snap = await snapshot(s);
    const provider = await startProvider(s, { feedNode: false });
    const { client, store: payerStore } = await startPayer(s, provider.node.port);
    await client.stream({ count: 3, inflight: 1, request });
    const stale = payerStore.steps(s.opened.sessionId)[0]!.ticket; // seq 1
    await submitUnilateral({ wallet: s.payerWallet as Wallet, publicClient: s.pc, escrow: s.escrow.address, ref: s.opened.ref, ticket: stale });
    await provider.tower.runOnce();
    expect(provider.tower.answers.map((a) => a.answeredSeq)).to.deep.equal([3n]);
    // This node was told nothing (the tower runs apart from it, as `ioi watchtower` in another process can),
    // so it serves two more tickets inside the window: the tower must still get them paid, although no new
    // event arrives to react to.
    await client.stream({ count: 2, inflight: 1, request: (i) => request(100 + i) });
    expect(provider.store.receiptCount(s.opened.sessionId)).to.equal(5);
    await provider.tower.runOnce();
    expect(provider.tower.answers.map((a) => a.answeredSeq)).to.deep.equal([3n, 5n]);

    const recorded = provider.store.getClosing(s.opened.sessionId)!;
    await time.increaseTo(recorded.finalizesAt);
    const settled = await finalizeClose({ wallet: s.stranger as Wallet, publicClient: s.pc, escrow: s.escrow.address, ref: s.opened.ref, recorded: recorded.state });
    expect(settled.paidToProvider).to.equal(5n * PRICE);
    const logs = parseEventLogs({ abi: s.escrow.abi, eventName: "ChannelChallenged", logs: await s.pc.getLogs({ address: s.escrow.address, fromBlock: s.fromBlock }) });
    expect(logs.map((l) => l.args.seq)).to.deep.equal([3n, 5n]);
    await expectDeltas(s, snap, { ETH: { provider: 5n * PRICE, client: DEPOSIT - 5n * PRICE, escrow: -DEPOSIT } });
  });

  it("attack surface: a pipelined session of 5 invocations at 16 in flight, closed unilaterally by the payer, leaves every accepted receipt provable on-chain", async () => {
    const s = await loadFixture(channelSystem);
    const snap = await snapshot(s);
    const provider = await startProvider(s);
    const { client, store: payerStore } = await startPayer(s, provider.node.port);
    await client.stream({ count: 5, inflight: 16, request });
    const steps = payerStore.steps(s.opened.sessionId);
    expect(steps.map((st) => st.receipt !== undefined)).to.deep.equal([true, true, true, true, true]);
    // All five were signed before any receipt arrived: every ticket's root is the root of no receipts, so
    // closing with the newest ticket would leave none provable (the complaint).
    const history = ReceiptAccumulator.fromLeaves(payerStore.leaves(s.opened.sessionId));
    expect(steps.map((st) => st.ticket.ticket.receiptRoot)).to.deep.equal(Array(5).fill(history.prefixRoot(0)));

    // The payer closes alone with the ticket that drains the pipeline (what `ioi close --unilateral` sends).
    const closing = await client.session.closingTicket();
    expect([closing.ticket.seq, closing.ticket.cumulativeAmount, closing.ticket.receiptRoot]).to.deep.equal([6n, 5n * PRICE, history.root()]);
    const closed = await submitUnilateral({ wallet: s.payerWallet as Wallet, publicClient: s.pc, escrow: s.escrow.address, ref: s.opened.ref, ticket: closing });
    await provider.tower.runOnce();
    expect(provider.tower.answers, "the provider's newest ticket owes no more: nothing to challenge").to.deep.equal([]);
    expect(provider.node.phaseOf(s.opened.sessionId)).to.equal("closing");
    await expectAllRefused(client, 2);

    // Every accepted receipt proves against the recorded root, with the on-chain leaf library.
    const [matches] = await s.escrow.read.closingInfo([s.opened.sessionId, closed.state]);
    expect(matches).to.equal(true);
    const harness = await hre.viem.deployContract("ReceiptLeafHarness");
    for (const [i, step] of steps.entries()) {
      const proof = history.proof(i, history.size);
      const ok = await harness.read.verify([proof, closed.state.receiptRoot, sessionReceiptHash(step.receipt!.receipt), paymentTicketHash(step.ticket.ticket)]);
      expect(ok, `receipt ${step.seq} is provable against the recorded root`).to.equal(true);
    }
    expect(providerRoot(provider.store, s.opened.sessionId), "the provider's export root is the recorded root").to.equal(closed.state.receiptRoot);

    await time.increaseTo(closed.finalizesAt);
    const settled = await finalizeClose({ wallet: s.stranger as Wallet, publicClient: s.pc, escrow: s.escrow.address, ref: s.opened.ref, recorded: closed.state });
    expect(settled.paidToProvider).to.equal(5n * PRICE);
    expect(settled.receiptRoot).to.equal(history.root());
    await expectDeltas(s, snap, { ETH: { provider: 5n * PRICE, client: DEPOSIT - 5n * PRICE, escrow: -DEPOSIT } });
  });

  it("attack surface: the provider closes a pipelined session (16 in flight) with its newest ticket, whose root proves nothing — the payer anchors the provider's signed receipt commit and a session case proves a receipt against it", async () => {
    const s = await loadFixture(channelSystem);
    const snap = await snapshot(s);
    const provider = await startProvider(s);
    const { client, store: payerStore } = await startPayer(s, provider.node.port);
    await client.stream({ count: 5, inflight: 16, request });
    await client.commit(); // PKT_RECEIPT_COMMIT: both sides sign the root over the five receipts
    const steps = payerStore.steps(s.opened.sessionId);
    const history = ReceiptAccumulator.fromLeaves(payerStore.leaves(s.opened.sessionId));
    const newest = provider.store.latestTicket(s.opened.sessionId)!;
    expect([newest.ticket.seq, newest.ticket.receiptRoot]).to.deep.equal([5n, history.prefixRoot(0)]);

    // The provider closes first with its newest ticket: the recorded root is the root of no receipts, and the
    // payer's same-amount closing ticket cannot replace it.
    const closed = await submitUnilateral({ wallet: s.provider as Wallet, publicClient: s.pc, escrow: s.escrow.address, ref: s.opened.ref, ticket: newest });
    const commit = payerStore.latestCommit(s.opened.sessionId, "provider")!;
    expect([commit.commit.leafCount, commit.commit.root]).to.deep.equal([5n, history.root()]);
    // The payer's watchtower sees the close and anchors the provider's newest signed commit.
    const payerTower = new Watchtower({ publicClient: s.pc, wallet: s.payerWallet as Wallet, escrow: s.escrow.address, store: payerStore, fromBlock: s.fromBlock, name: "payer-tower", defend: ["payer"] });
    await payerTower.runOnce();
    await payerTower.runOnce(); // sees its own ReceiptCommitAnchored
    expect(payerTower.anchoredCommits.map((a) => [a.leafCount, a.root, getAddress(a.by)])).to.deep.equal([[5n, history.root(), getAddress(s.payerWallet.account.address)]]);
    // Anchoring the same root again (what `ioi close --unilateral` would do) is a no-op.
    const anchored = await anchorReceiptCommit({ wallet: s.payerWallet as Wallet, publicClient: s.pc, escrow: s.escrow.address, ref: s.opened.ref, commit });
    expect(anchored.anchored).to.equal(false);
    expect(await s.escrow.read.anchoredCommitOf([s.opened.sessionId, history.root()])).to.equal(5n);

    // Receipt 3, with its real artifacts, opens a case on the DisputeManager against the anchored root.
    const step = steps[2]!;
    const receiptHash = sessionReceiptHash(step.receipt!.receipt);
    const ticketHash = paymentTicketHash(step.ticket.ticket);
    const bond = await s.disputes.read.bondFor([NATIVE_ASSET, closed.state.amount, 1]);
    const caseId = await s.disputes.read.nextCaseId([KIND.Session, s.opened.sessionId]);
    const opened = await s.pc.waitForTransactionReceipt({
      hash: await s.disputes.write.openSessionCase(
        [s.opened.ref.terms, s.opened.ref.openedAt, closed.state, receiptHash, ticketHash, history.proof(2, history.size), 1, PACKAGE_HASH],
        { account: s.payerWallet.account, value: bond },
      ),
    });
    const [event] = parseEventLogs({ abi: s.disputes.abi, eventName: "CaseOpened", logs: opened.logs });
    expect([event!.args.caseId, event!.args.leaf]).to.deep.equal([caseId, history.leaf(2)]);
    await expectDeltas(s, snap, { ETH: { payer: -bond, disputes: bond } }); // the channel stays frozen in the escrow
  });
});
