/**
 * ChainFollower and Watchtower on the embedded devnet: the follower's durable cursor (resume after
 * downtime across many batches, at-least-once delivery when a handler throws) and the watchtower's defence
 * of a provider against stale unilateral closes (challenge with the store's newest ticket inside the
 * window, store view kept current, finalisation of due closes, catch-up after downtime), closed by a
 * property-style loop: a stale close is always answered in time.
 */
import { loadFixture, mine, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAddress, keccak256, parseEther, parseEventLogs, stringToBytes, zeroHash, type Hex, type PublicClient } from "viem";

import { RootAccumulator } from "../../channel-client/core/accumulator";
import { ChainFollower, type EscrowEvent } from "../../channel-client/chain/follower";
import {
  closeUnilateral,
  depositToChannel,
  gasEscrowAbi,
  openChannel,
  type ClosingState,
  type OpenChannelReturnType,
} from "../../channel-client/chain/escrow";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { sessionReceiptHash, signSessionReceipt } from "../../channel-client/core/receipt";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { ChannelRecord, StepRecord } from "../../channel-client/store/store";
import { NATIVE_ASSET, termsHashOf, type ChannelTerms, type PricingTerms } from "../../channel-client/core/terms";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import { Watchtower, type WatchtowerAnswer, type WatchtowerParameters } from "../../channel-client/node/watchtower";
import { rejection } from "../helpers/assert";
import { escrowFixture, makeTerms, ROLE } from "../helpers/fixtures";
import { mulberry32 } from "../helpers/prng";

const PRICE = parseEther("0.001");
const DEPOSIT = parseEther("1");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const h = (label: string): Hex => keccak256(stringToBytes(label));

async function towerFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const escrow = fx.escrow.address;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing) });
  // `a` is the provider's channel (in its store), `b` a channel of the same parties the store knows nothing of.
  const a = await openChannel({ wallet: fx.funder, publicClient, escrow, terms, amount: DEPOSIT });
  const b = await openChannel({ wallet: fx.funder, publicClient, escrow, terms: { ...terms, nonce: 2n }, amount: DEPOSIT });
  return {
    ...fx,
    publicClient,
    terms,
    a,
    b,
    payerWallet: fx.wallets[ROLE.payer]!,
    providerWallet: fx.wallets[ROLE.provider]!,
    fromBlock: a.blockNumber,
  };
}
type Fx = Awaited<ReturnType<typeof towerFixture>>;

/** Rejects if `promise` has not settled within `ms` (a bound, not a sleep: it resolves as soon as `promise` does). */
async function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A FIFO of values pushed by a callback, awaited one at a time. */
function queue<T>() {
  const queued: T[] = [];
  const waiting: Array<(value: T) => void> = [];
  return {
    push(value: T) {
      const w = waiting.shift();
      if (w) w(value);
      else queued.push(value);
    },
    next(what: string, ms = 10_000): Promise<T> {
      return within(ms, new Promise<T>((resolve) => (queued.length > 0 ? resolve(queued.shift()!) : waiting.push(resolve))), what);
    },
  };
}

const eventKey = (e: { blockNumber: bigint | null; logIndex: number | null }) => `${e.blockNumber}:${e.logIndex}`;

/** Every escrow event in [fromBlock, toBlock] straight from the node: the ground truth. */
async function escrowEvents(fx: Fx, fromBlock: bigint, toBlock: bigint) {
  const logs = await fx.publicClient.getLogs({ address: fx.escrow.address, fromBlock, toBlock });
  return parseEventLogs({ abi: gasEscrowAbi, logs, strict: true });
}

/**
 * `n` real steps of channel `opened`: ticket `s` pays `s × PRICE` and carries the root over leaves
 * 1..s-1; receipt `s` is signed by the provider and chained to receipt `s-1`.
 */
async function signSteps(fx: Fx, opened: OpenChannelReturnType, n: number): Promise<Array<Required<StepRecord>>> {
  const { sessionId, ref } = opened;
  const accumulator = new RootAccumulator();
  let prevReceiptHash: Hex = zeroHash;
  const steps: Array<Required<StepRecord>> = [];
  for (let s = 1n; s <= BigInt(n); s++) {
    const ticket = await signPaymentTicket({
      account: fx.payer,
      domain: fx.domain,
      ticket: { sessionId, provider: ref.terms.provider, termsHash: ref.terms.termsHash, seq: s, cumulativeAmount: s * PRICE, receiptRoot: accumulator.root() },
    });
    const receipt = await signSessionReceipt({
      account: fx.provider,
      receipt: {
        sessionId,
        seq: s,
        offloadPacketHash: h(`offload ${s}`),
        outputHash: h(`output ${s}`),
        policyHash: ref.terms.policyHash,
        modelSnapshotId: "worker:echo@1",
        metering: { units: 1n, amount: PRICE },
        prevReceiptHash,
      },
    });
    const leaf = receiptLeaf(receipt.receipt, ticket.ticket);
    accumulator.append(leaf);
    prevReceiptHash = sessionReceiptHash(receipt.receipt);
    steps.push({ seq: s, ticket, receipt, leaf });
  }
  return steps;
}

function providerRecord(fx: Fx, opened: OpenChannelReturnType): ChannelRecord {
  return { sessionId: opened.sessionId, role: "provider", ref: opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: opened.deposit, status: "open" };
}

describe("chain follower and watchtower", function () {
  let dir: string;
  const cleanup: Array<() => Promise<unknown>> = [];

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-tower-"));
  });
  afterEach(async () => {
    while (cleanup.length > 0) await cleanup.pop()!().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  function openStore(file: string) {
    const store = SqliteStore.open(path.join(dir, file));
    cleanup.push(() => store.close());
    return store;
  }

  /** A provider store holding `n` steps of channel `opened` (default: the fixture's channel `a`). */
  async function providerStore(fx: Fx, n: number, opened: OpenChannelReturnType = fx.a, file = "provider.db") {
    const store = openStore(file);
    await store.putChannel(providerRecord(fx, opened));
    const steps = await signSteps(fx, opened, n);
    await Promise.all(steps.map((step) => store.putStep(opened.sessionId, step)));
    expect(store.latestTicket(opened.sessionId)!.ticket.seq).to.equal(BigInt(n));
    return { store, steps };
  }

  function tower(fx: Fx, store: SqliteStore, overrides: Partial<WatchtowerParameters> = {}) {
    const errors: unknown[] = [];
    const answers = queue<WatchtowerAnswer>();
    const finalized = queue<Hex>();
    const watchtower = new Watchtower({
      publicClient: fx.publicClient,
      wallet: fx.providerWallet,
      escrow: fx.escrow.address,
      store,
      fromBlock: fx.fromBlock,
      pollMs: 20,
      onAnswer: (answer) => answers.push(answer),
      onFinalized: (sessionId) => finalized.push(sessionId),
      onError: (error) => errors.push(error),
      ...overrides,
    });
    // Registered after the store's close, so it runs first.
    cleanup.push(() => watchtower.stop());
    return { watchtower, errors, answers, finalized };
  }

  /** The payer closes `opened` unilaterally with its ticket `k` (none for k = 0). */
  function payerCloses(fx: Fx, opened: OpenChannelReturnType, steps: Array<Required<StepRecord>>, k: number) {
    return closeUnilateral({ wallet: fx.payerWallet, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: opened.ref, ticket: k === 0 ? undefined : steps[k - 1]!.ticket });
  }

  function stateOf(step: Required<StepRecord> | undefined, deposit = DEPOSIT): ClosingState {
    return step
      ? { deposit, seq: step.seq, amount: step.ticket.ticket.cumulativeAmount, receiptRoot: step.ticket.ticket.receiptRoot, feeBps: 0 }
      : { deposit, seq: 0n, amount: 0n, receiptRoot: zeroHash, feeBps: 0 };
  }

  async function closingInfo(fx: Fx, sessionId: Hex, state: ClosingState) {
    const [matches, finalizesAt, openCases] = await fx.publicClient.readContract({ address: fx.escrow.address, abi: gasEscrowAbi, functionName: "closingInfo", args: [sessionId, state] });
    return { matches, finalizesAt: BigInt(finalizesAt), openCases };
  }

  // ------------------------------------------------------------------------------------------------

  describe("ChainFollower", () => {
    /** Opens, deposits and closes over many blocks (some of them empty). */
    async function busyChain(fx: Fx) {
      const { publicClient } = fx;
      const escrow = fx.escrow.address;
      const c = await openChannel({ wallet: fx.funder, publicClient, escrow, terms: { ...fx.terms, nonce: 3n }, amount: DEPOSIT });
      await depositToChannel({ wallet: fx.funder, publicClient, escrow, ref: fx.b.ref, amount: 5n });
      await mine(7);
      await depositToChannel({ wallet: fx.funder, publicClient, escrow, ref: fx.b.ref, amount: 6n });
      await closeUnilateral({ wallet: fx.payerWallet, publicClient, escrow, ref: fx.a.ref, ticket: undefined });
      await mine(5);
      await closeUnilateral({ wallet: fx.funder, publicClient, escrow, ref: fx.b.ref, ticket: undefined });
      await depositToChannel({ wallet: fx.funder, publicClient, escrow, ref: c.ref, amount: 7n });
      await mine(4);
      return c;
    }

    it("resumes from the stored cursor after downtime: every missed event once, in order, over many batches", async () => {
      const fx = await loadFixture(towerFixture);
      const store = openStore("follower.db");
      const name = "follower:test";
      const escrow = fx.escrow.address;

      // Up: follow live until the deposit is seen, then stop.
      const seenA: EscrowEvent[] = [];
      const sawDeposit = queue<void>();
      const deposited = await depositToChannel({ wallet: fx.funder, publicClient: fx.publicClient, escrow, ref: fx.a.ref, amount: 1n });
      const followerA = new ChainFollower({
        publicClient: fx.publicClient,
        escrow,
        store,
        name,
        fromBlock: fx.fromBlock,
        pollMs: 10,
        onEvents: async (events) => {
          seenA.push(...events);
          if (events.some((e) => e.eventName === "Deposited")) sawDeposit.push();
        },
      });
      followerA.start();
      await sawDeposit.next("the first follower to see the deposit");
      await followerA.stop();
      const cursorA = store.getCursor(name)!;
      expect(cursorA >= deposited.blockNumber, `cursor ${cursorA}`).to.equal(true);
      expect(seenA.map(eventKey)).to.deep.equal((await escrowEvents(fx, fx.fromBlock, cursorA)).map(eventKey));
      expect(seenA.map((e) => e.eventName)).to.deep.equal(["ChannelOpened", "ChannelOpened", "Deposited"]);

      // Down: more than a batch of blocks with opens, deposits and closes.
      const c = await busyChain(fx);
      const head = await fx.publicClient.getBlockNumber();
      expect(head - cursorA > 12n, `${head - cursorA} blocks missed`).to.equal(true);

      // A new follower on the same store resumes from the cursor, in batches of 4 blocks.
      const seenB: EscrowEvent[] = [];
      const cursorWrites: bigint[] = [];
      const followerB = new ChainFollower({
        publicClient: fx.publicClient,
        escrow,
        store: {
          getCursor: (n) => store.getCursor(n),
          setCursor: async (n, block) => {
            cursorWrites.push(block);
            await store.setCursor(n, block);
          },
        },
        name,
        fromBlock: fx.fromBlock,
        batchBlocks: 4n,
        onEvents: async (events) => {
          seenB.push(...events);
        },
      });
      expect(followerB.cursor).to.equal(cursorA);
      expect(await followerB.catchUp()).to.equal(head);
      expect(store.getCursor(name)).to.equal(head);

      const missed = await escrowEvents(fx, cursorA + 1n, head);
      expect(seenB.map(eventKey)).to.deep.equal(missed.map(eventKey));
      expect(seenB.map((e) => e.eventName)).to.deep.equal(["ChannelOpened", "Deposited", "Deposited", "ChannelClosing", "ChannelClosing", "Deposited"]);
      expect(new Set(seenB.map(eventKey)).size).to.equal(seenB.length);
      const keysA = new Set(seenA.map(eventKey));
      expect(seenB.filter((e) => keysA.has(eventKey(e)))).to.deep.equal([]);
      // Together: exactly the whole history, in order.
      expect([...seenA, ...seenB].map(eventKey)).to.deep.equal((await escrowEvents(fx, fx.fromBlock, head)).map(eventKey));
      // Several batches, each at most 4 blocks, contiguous from the old cursor to the head.
      expect(cursorWrites.length).to.equal(Number((head - cursorA + 3n) / 4n));
      cursorWrites.forEach((block, i) => expect(block).to.equal(i === cursorWrites.length - 1 ? head : cursorA + 4n * BigInt(i + 1)));
      for (let i = 1; i < seenB.length; i++) {
        const [p, q] = [seenB[i - 1]!, seenB[i]!];
        expect(p.blockNumber < q.blockNumber || (p.blockNumber === q.blockNumber && p.logIndex! < q.logIndex!)).to.equal(true);
      }

      // Caught up: another catchUp delivers nothing.
      expect(await followerB.catchUp()).to.equal(head);
      expect(seenB).to.have.length(missed.length);

      // The first follower, started again after stop(), resumes from the (shared) cursor too.
      const more = await depositToChannel({ wallet: fx.funder, publicClient: fx.publicClient, escrow, ref: c.ref, amount: 2n });
      const before = seenA.length;
      followerA.start();
      cleanup.push(() => followerA.stop());
      await sawDeposit.next("the restarted follower to see the new deposit");
      await followerA.stop();
      expect(seenA.slice(before).map(eventKey)).to.deep.equal((await escrowEvents(fx, head + 1n, more.blockNumber)).map(eventKey));
      expect(store.getCursor(name)! >= more.blockNumber).to.equal(true);
      // And an explicit catchUp() after stop() still works (stop ends polling, not the follower).
      const last = await depositToChannel({ wallet: fx.funder, publicClient: fx.publicClient, escrow, ref: c.ref, amount: 3n });
      const count = seenA.length;
      expect(await followerA.catchUp()).to.equal(last.blockNumber);
      expect(seenA.slice(count).map(eventKey)).to.deep.equal((await escrowEvents(fx, last.blockNumber, last.blockNumber)).map(eventKey));
    });

    it("leaves the cursor where it was when a handler throws and re-delivers that batch (at-least-once)", async () => {
      const fx = await loadFixture(towerFixture);
      const store = openStore("follower.db");
      const name = "follower:flaky";
      await busyChain(fx);
      const head = await fx.publicClient.getBlockNumber();
      const truth = await escrowEvents(fx, fx.fromBlock, head);
      const closingBlock = truth.find((e) => e.eventName === "ChannelClosing")!.blockNumber;

      const batches: EscrowEvent[][] = [];
      let failures = 0;
      const failure = new Error("handler crashed");
      const follower = new ChainFollower({
        publicClient: fx.publicClient,
        escrow: fx.escrow.address,
        store,
        name,
        fromBlock: fx.fromBlock,
        batchBlocks: 3n,
        onEvents: async (events) => {
          batches.push(events);
          if (failures === 0 && events.some((e) => e.eventName === "ChannelClosing")) {
            failures++;
            throw failure;
          }
        },
      });

      expect(await rejection(follower.catchUp())).to.equal(failure);
      // The batches before the failing one were committed; the failing one was not.
      const stuck = store.getCursor(name)!;
      expect(stuck < closingBlock && closingBlock <= stuck + 3n, `cursor ${stuck}, close in block ${closingBlock}`).to.equal(true);
      expect(follower.cursor).to.equal(stuck);
      const failed = batches[batches.length - 1]!;
      expect(batches.slice(0, -1).flat().map(eventKey)).to.deep.equal(truth.filter((e) => e.blockNumber <= stuck).map(eventKey));

      // The next catchUp starts with exactly the batch that failed, then goes on to the head.
      const delivered = batches.length;
      expect(await follower.catchUp()).to.equal(head);
      expect(batches[delivered]!.map(eventKey)).to.deep.equal(failed.map(eventKey));
      expect(store.getCursor(name)).to.equal(head);

      // Every event was delivered; only the failed batch's events twice.
      const counts = new Map<string, number>();
      for (const e of batches.flat()) counts.set(eventKey(e), (counts.get(eventKey(e)) ?? 0) + 1);
      expect([...counts.keys()].sort()).to.deep.equal(truth.map(eventKey).sort());
      const twice = new Set(failed.map(eventKey));
      for (const [key, count] of counts) expect(count, key).to.equal(twice.has(key) ? 2 : 1);
    });

    it("a poll that fails goes to onError and the next poll retries from the same cursor", async () => {
      const fx = await loadFixture(towerFixture);
      const store = openStore("follower.db");
      const errors = queue<unknown>();
      const seen = queue<EscrowEvent[]>();
      let fail = true;
      const follower = new ChainFollower({
        publicClient: fx.publicClient,
        escrow: fx.escrow.address,
        store,
        name: "follower:poll",
        fromBlock: fx.fromBlock,
        pollMs: 10,
        onEvents: async (events) => {
          if (fail) {
            fail = false;
            throw new Error("transient");
          }
          seen.push(events);
        },
        onError: (error) => errors.push(error),
      });
      follower.start();
      cleanup.push(() => follower.stop());
      expect(((await errors.next("the failed poll")) as Error).message).to.equal("transient");
      const events = await seen.next("the retried poll");
      await follower.stop();
      expect(events.map((e) => e.eventName)).to.deep.equal(["ChannelOpened", "ChannelOpened"]);
      expect(events[0]!.blockNumber).to.equal(fx.fromBlock);
    });
  });

  // ------------------------------------------------------------------------------------------------

  describe("Watchtower", () => {
    it("challenges a stale close with the store's newest ticket inside the window", async () => {
      const fx = await loadFixture(towerFixture);
      const { store, steps } = await providerStore(fx, 6);
      const { watchtower, answers, errors } = tower(fx, store);
      const closed = await payerCloses(fx, fx.a, steps, 2);

      await watchtower.runOnce();
      expect(watchtower.answers).to.have.length(1);
      const answer = watchtower.answers[0]!;
      expect(answer).to.include({ sessionId: fx.a.sessionId, staleSeq: 2n, answeredSeq: 6n, inWindow: true, finalizesAt: closed.finalizesAt });
      expect(answer.answeredAt < closed.finalizesAt).to.equal(true);
      expect(await answers.next("onAnswer")).to.deep.equal(answer);

      // On-chain: the recorded state is now the newest ticket's, with the same window.
      expect(await closingInfo(fx, fx.a.sessionId, stateOf(steps[5]))).to.deep.equal({ matches: true, finalizesAt: closed.finalizesAt, openCases: 0 });
      expect((await closingInfo(fx, fx.a.sessionId, stateOf(steps[1]))).matches).to.equal(false);
      const receipt = await fx.publicClient.getTransactionReceipt({ hash: answer.txHash });
      const [challenged] = parseEventLogs({ abi: gasEscrowAbi, eventName: "ChannelChallenged", logs: receipt.logs });
      expect(challenged!.args).to.deep.include({ sessionId: fx.a.sessionId, seq: 6n, amount: 6n * PRICE, receiptRoot: steps[5]!.ticket.ticket.receiptRoot });
      expect(challenged!.args.challenger).to.equal(getAddress(fx.providerWallet.account.address));

      // The store: closing record replaced by the answer, channel closing.
      const record = store.getClosing(fx.a.sessionId)!;
      expect({ ...record, closer: getAddress(record.closer) }).to.deep.equal({ state: stateOf(steps[5]), finalizesAt: closed.finalizesAt, closer: getAddress(fx.providerWallet.account.address), txHash: answer.txHash });
      expect(store.getChannel(fx.a.sessionId)!.status).to.equal("closing");

      // Seeing its own challenge does not make it answer again.
      await watchtower.runOnce();
      expect(watchtower.answers).to.have.length(1);
      expect(store.getClosing(fx.a.sessionId)!.state).to.deep.equal(stateOf(steps[5]));
      expect(errors).to.deep.equal([]);
    });

    it("does not challenge a close with the newest ticket, and ignores channels it does not hold", async () => {
      const fx = await loadFixture(towerFixture);
      const { store, steps } = await providerStore(fx, 4);
      const { watchtower } = tower(fx, store);
      const closedA = await payerCloses(fx, fx.a, steps, 4);
      const closedB = await closeUnilateral({ wallet: fx.payerWallet, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.b.ref, ticket: undefined });

      await watchtower.runOnce();
      expect(watchtower.answers).to.deep.equal([]);
      expect(store.getClosing(fx.a.sessionId)).to.deep.equal({ state: stateOf(steps[3]), finalizesAt: closedA.finalizesAt, closer: fx.payer.address, txHash: closedA.hash });
      expect(store.getChannel(fx.a.sessionId)!.status).to.equal("closing");
      expect((await closingInfo(fx, fx.a.sessionId, stateOf(steps[3]))).matches).to.equal(true);
      // Channel b is none of the store's business: nothing recorded, nothing sent.
      expect(store.getChannel(fx.b.sessionId)).to.equal(undefined);
      expect(store.getClosing(fx.b.sessionId)).to.equal(undefined);
      expect(await closingInfo(fx, fx.b.sessionId, stateOf(undefined))).to.deep.equal({ matches: true, finalizesAt: closedB.finalizesAt, openCases: 0 });
      expect(store.listChannels()).to.have.length(1);
    });

    it("does not answer (and does not throw) when it sees a stale close only after the window", async () => {
      const fx = await loadFixture(towerFixture);
      const { store, steps } = await providerStore(fx, 5);
      const { watchtower } = tower(fx, store);
      const closed = await payerCloses(fx, fx.a, steps, 1);
      await time.increaseTo(closed.finalizesAt + 1n);

      await watchtower.runOnce();
      expect(watchtower.answers).to.deep.equal([]);
      // It recorded what happened; the stale state stands on-chain.
      expect(store.getClosing(fx.a.sessionId)!.state).to.deep.equal(stateOf(steps[0]));
      expect(store.getChannel(fx.a.sessionId)!.status).to.equal("closing");
      expect((await closingInfo(fx, fx.a.sessionId, stateOf(steps[0]))).matches).to.equal(true);
      expect(store.getCursor("watchtower")).to.equal(await fx.publicClient.getBlockNumber());
    });

    it("with finalize: true, finalises after the window and the store says settled", async () => {
      const fx = await loadFixture(towerFixture);
      const { store, steps } = await providerStore(fx, 7);
      const { watchtower, finalized, errors } = tower(fx, store, { finalize: true });
      const closed = await payerCloses(fx, fx.a, steps, 3);

      await watchtower.runOnce(); // answers; nothing is due yet
      expect(watchtower.answers.map((a) => a.answeredSeq)).to.deep.equal([7n]);
      expect(store.getChannel(fx.a.sessionId)!.status).to.equal("closing");

      await time.increaseTo(closed.finalizesAt);
      const providerBefore = await fx.publicClient.getBalance({ address: fx.provider.address });
      await watchtower.runOnce();
      expect(await finalized.next("onFinalized")).to.equal(fx.a.sessionId);
      expect(store.getChannel(fx.a.sessionId)!.status).to.equal("settled");
      // The provider is paid the newest ticket's amount (the tower's wallet, the provider's own, paid no gas here).
      const events = await escrowEvents(fx, fx.fromBlock, await fx.publicClient.getBlockNumber());
      const settled = events.find((e) => e.eventName === "ChannelSettled");
      expect(settled!.args).to.deep.include({ sessionId: fx.a.sessionId, finalSeq: 7n, paidToProvider: 7n * PRICE, refundedToFunder: DEPOSIT - 7n * PRICE });
      expect((await fx.publicClient.getBalance({ address: fx.provider.address })) > providerBefore).to.equal(true);

      // The ChannelSettled event is followed up idempotently; nothing more is due.
      await watchtower.runOnce();
      expect(store.getChannel(fx.a.sessionId)!.status).to.equal("settled");
      expect(store.listChannels({ status: "closing" })).to.deep.equal([]);
      expect(errors).to.deep.equal([]);
    });

    it("stop() waits for a finalisation in flight", async () => {
      const fx = await loadFixture(towerFixture);
      const { store, steps } = await providerStore(fx, 3);
      const closed = await payerCloses(fx, fx.a, steps, 3);
      await time.increaseTo(closed.finalizesAt);
      // Stop the tower at the moment finalizeDue checks the close on-chain (its last read before the transaction).
      // What stop() leaves behind: the channel's stored status at the moment it resolved.
      let stopping: Promise<string> | undefined;
      const publicClient: PublicClient = Object.create(fx.publicClient);
      const { watchtower, finalized, errors } = tower(fx, store, {
        finalize: true,
        publicClient: Object.assign(publicClient, {
          readContract: ((args: Parameters<PublicClient["readContract"]>[0]) => {
            if (args.functionName === "closingInfo") stopping ??= watchtower.stop().then(() => store.getChannel(fx.a.sessionId)!.status);
            return fx.publicClient.readContract(args);
          }) as PublicClient["readContract"],
        }),
      });
      watchtower.start();
      expect(await finalized.next("onFinalized")).to.equal(fx.a.sessionId);
      // By the time stop() resolved, the finalisation had landed and been recorded: closing the store is safe.
      expect(await within(10_000, stopping!, "stop()")).to.equal("settled");
      expect(await fx.publicClient.readContract({ address: fx.escrow.address, abi: gasEscrowAbi, functionName: "phaseOf", args: [fx.a.sessionId] })).to.equal(0);
      await store.close();
      expect(errors).to.deep.equal([]);
    });

    it("records a Deposited event in the stored channel", async () => {
      const fx = await loadFixture(towerFixture);
      const { store } = await providerStore(fx, 1);
      const { watchtower } = tower(fx, store);
      const escrow = fx.escrow.address;
      await depositToChannel({ wallet: fx.funder, publicClient: fx.publicClient, escrow, ref: fx.a.ref, amount: parseEther("0.5") });
      await depositToChannel({ wallet: fx.funder, publicClient: fx.publicClient, escrow, ref: fx.b.ref, amount: 1n });
      await watchtower.runOnce();
      expect(store.getChannel(fx.a.sessionId)!.deposit).to.equal(parseEther("1.5"));
      expect(store.getChannel(fx.a.sessionId)!.status).to.equal("open");
      expect(store.getChannel(fx.b.sessionId)).to.equal(undefined);
    });

    it("running with start(), answers a stale close in time", async () => {
      const fx = await loadFixture(towerFixture);
      const { store, steps } = await providerStore(fx, 9);
      const { watchtower, answers, errors } = tower(fx, store);
      watchtower.start();
      const closed = await payerCloses(fx, fx.a, steps, 0); // walks away with nothing
      const answer = await answers.next("the running tower's answer");
      await watchtower.stop();
      expect(answer).to.include({ sessionId: fx.a.sessionId, staleSeq: 0n, answeredSeq: 9n, inWindow: true, finalizesAt: closed.finalizesAt });
      expect((await closingInfo(fx, fx.a.sessionId, stateOf(steps[8]))).matches).to.equal(true);
      expect(errors).to.deep.equal([]);
    });

    it("answers a stale close made while it was down once it is back within the window", async () => {
      const fx = await loadFixture(towerFixture);
      const file = "provider.db";
      const first = await providerStore(fx, 5, fx.a, file);
      await first.store.putChannel(providerRecord(fx, fx.b));
      const stepsB = await signSteps(fx, fx.b, 3);
      for (const step of stepsB) await first.store.putStep(fx.b.sessionId, step);

      // Up: answers a stale close of a. Then the process stops (tower and store).
      const up = tower(fx, first.store, { name: "watchtower:provider" });
      up.watchtower.start();
      await payerCloses(fx, fx.a, first.steps, 1);
      expect(await up.answers.next("the answer for a")).to.include({ staleSeq: 1n, answeredSeq: 5n, inWindow: true });
      await up.watchtower.stop();

      // Down: the payer closes b stale; most of the window passes.
      const closedB = await payerCloses(fx, fx.b, stepsB, 1);
      await time.increase(3000); // of 3600 s
      await mine(3);

      // The same tower instance, started again, catches up and answers b.
      up.watchtower.start();
      const answerB = await up.answers.next("the restarted tower's answer for b");
      await up.watchtower.stop();
      expect(answerB).to.include({ sessionId: fx.b.sessionId, staleSeq: 1n, answeredSeq: 3n, inWindow: true, finalizesAt: closedB.finalizesAt });
      expect((await closingInfo(fx, fx.b.sessionId, stateOf(stepsB[2]))).matches).to.equal(true);
      expect(up.watchtower.answers.map((a) => a.sessionId)).to.deep.equal([fx.a.sessionId, fx.b.sessionId]);
      expect(up.errors).to.deep.equal([]);
    });

    it("a new process (store reopened from disk, new tower) catches up on a close made while it was down", async () => {
      const fx = await loadFixture(towerFixture);
      const file = "provider.db";
      const first = await providerStore(fx, 4, fx.a, file);
      const before = tower(fx, first.store, { name: "watchtower:provider" });
      await before.watchtower.runOnce();
      const cursor = first.store.getCursor("watchtower:provider")!;
      await before.watchtower.stop();
      await first.store.close();

      const closed = await payerCloses(fx, fx.a, first.steps, 2);
      await mine(10);
      await time.increase(3500); // of 3600 s

      const store = openStore(file);
      expect(store.getCursor("watchtower:provider")).to.equal(cursor);
      const after = tower(fx, store, { name: "watchtower:provider" });
      after.watchtower.start();
      const answer = await after.answers.next("the restarted process's answer");
      await after.watchtower.stop();
      expect(answer).to.include({ staleSeq: 2n, answeredSeq: 4n, inWindow: true, finalizesAt: closed.finalizesAt });
      expect(store.getClosing(fx.a.sessionId)!.state).to.deep.equal(stateOf(first.steps[3]));
      expect(after.errors).to.deep.equal([]);
    });

    it("two towers sharing a store both survive a close the other already answered", async () => {
      const fx = await loadFixture(towerFixture);
      const { store, steps } = await providerStore(fx, 5);
      const one = tower(fx, store, { name: "watchtower:node" });
      const two = tower(fx, store, { name: "watchtower:standalone", wallet: fx.stranger });
      await payerCloses(fx, fx.a, steps, 2);
      await one.watchtower.runOnce();
      expect(one.watchtower.answers.map((a) => a.answeredSeq)).to.deep.equal([5n]);
      // The second tower sees the (already answered) close first: it must not fail on it nor get stuck.
      await two.watchtower.runOnce();
      expect(two.watchtower.answers).to.deep.equal([]);
      const head = await fx.publicClient.getBlockNumber();
      expect(store.getCursor("watchtower:standalone")).to.equal(head);
      await one.watchtower.runOnce();
      expect(store.getClosing(fx.a.sessionId)!.state).to.deep.equal(stateOf(steps[4]));
      expect((await closingInfo(fx, fx.a.sessionId, stateOf(steps[4]))).matches).to.equal(true);
    });
  });

  // ------------------------------------------------------------------------------------------------

  it("a stale close is always answered in time (random k < N, windows and delays)", async () => {
    const seed = Number(process.env.WATCHTOWER_SEED ?? 0x70_3e_12);
    const rng = mulberry32(seed);
    for (let round = 0; round < 8; round++) {
      const fx = await loadFixture(towerFixture);
      const n = rng.int(1, 8);
      const k = rng.int(0, n - 1);
      const window = BigInt(rng.int(60, 7200));
      // The tower may see the close late, but with at least 10 s of the window left.
      const delay = rng.bigint(0n, window - 10n);
      const live = rng.chance(0.5);
      const context = `seed ${seed} round ${round}: N=${n} k=${k} window=${window}s delay=${delay}s ${live ? "start()" : "runOnce()"}`;

      const terms: ChannelTerms = { ...fx.terms, challengeDuration: window, nonce: 100n + BigInt(round) };
      const opened = await openChannel({ wallet: fx.funder, publicClient: fx.publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
      const { store, steps } = await providerStore(fx, n, opened, `round-${round}.db`);
      const { watchtower, answers, finalized } = tower(fx, store, { finalize: true, fromBlock: opened.blockNumber });

      const closed = await payerCloses(fx, opened, steps, k);
      if (delay > 0n) await time.increase(delay);
      let answer: WatchtowerAnswer;
      if (live) {
        watchtower.start();
        answer = await answers.next(`the answer (${context})`);
        await watchtower.stop();
      } else {
        await watchtower.runOnce();
        expect(watchtower.answers, context).to.have.length(1);
        answer = watchtower.answers[0]!;
      }
      expect(answer, context).to.include({ sessionId: opened.sessionId, staleSeq: BigInt(k), answeredSeq: BigInt(n), inWindow: true, finalizesAt: closed.finalizesAt });
      expect((await closingInfo(fx, opened.sessionId, stateOf(steps[n - 1]))).matches, context).to.equal(true);

      // After the window the tower settles it at the newest ticket's amount.
      await time.increaseTo(closed.finalizesAt);
      await watchtower.runOnce();
      expect(await finalized.next(`finalisation (${context})`), context).to.equal(opened.sessionId);
      expect(store.getChannel(opened.sessionId)!.status, context).to.equal("settled");
      const [settled] = parseEventLogs({
        abi: gasEscrowAbi,
        eventName: "ChannelSettled",
        logs: await fx.publicClient.getLogs({ address: fx.escrow.address, fromBlock: closed.blockNumber }),
      });
      expect(settled!.args, context).to.deep.include({ sessionId: opened.sessionId, finalSeq: BigInt(n), paidToProvider: BigInt(n) * PRICE });
      await store.close();
    }
  });
});
