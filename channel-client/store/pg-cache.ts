/**
 * What the PostgreSQL store holds in the process (split from channel-client/store/pg-store.ts): each channel's cache of
 * committed records, the writes claimed but not committed yet (the conflict checks), and a channel's queue of
 * transactions.
 */
import pg from "pg";
import type { Hex } from "viem";
import type { SignedFaultStatement } from "../core/fault-statement";
import type { SignedReceiptCommit } from "../core/receipt-commit";
import { type SessionReceipt, type SignedSessionReceipt } from "../core/receipt";
import type { SignedPaymentTicket } from "../core/ticket";
import type { SignedSessionKeyGrant } from "../core/session-key";
import { type AccumulatorState, type ChannelRole, type ClosingRecord, type CooperativeCloseRecord, type ResultRecord } from "./store";

type Waiter = { resolve: () => void; reject: (error: unknown) => void };
/** One transaction's view: its connection and the channel ids known so far (a channel inserted earlier in it too). */
export type Tx = { client: pg.PoolClient; ids: Map<string, number> };
export type Op = { run: (tx: Tx) => Promise<void>; apply: (tx: Tx) => void; settle: () => void; waiter: Waiter };
export type Queue = { ops: Op[]; running: boolean };

export type CachedStep = {
  seq: bigint;
  ticketText: string;
  ticket: SignedPaymentTicket;
  /** `receiptText + "\n" + leaf`, as the conflict checks compare it. */
  receiptValue?: string;
  receipt?: SignedSessionReceipt;
  leaf?: Hex;
};

export type Defaults = { provider: string; termsHash: string; policyHash: string };

/** Everything of one channel the process holds. */
export class ChannelCache {
  steps: CachedStep[] = [];
  readonly bySeq = new Map<bigint, CachedStep>();
  answered = 0;
  /** Accumulator states by leaf count, and the newest. */
  readonly accumulators = new Map<number, AccumulatorState & { seq: bigint }>();
  latestAccumulator: (AccumulatorState & { seq: bigint }) | undefined;
  /** `role:leafCount` → canonical text and the signed commit. */
  readonly commits = new Map<string, { text: string; signed: SignedReceiptCommit; leafCount: bigint; role: ChannelRole }>();
  closing: ClosingRecord | undefined;
  cooperativeClose: { text: string; record: CooperativeCloseRecord } | undefined;
  readonly faults = new Map<bigint, { text: string; signed: SignedFaultStatement }>();
  readonly results = new Map<bigint, ResultRecord>();
  readonly grants: Array<{ key: string; text: string; signed: SignedSessionKeyGrant }> = [];

  constructor(readonly id: number, readonly defaults: Defaults) {}

  addStep(step: CachedStep): void {
    const known = this.bySeq.get(step.seq);
    if (known) {
      if (step.receipt && !known.receipt) {
        known.receipt = step.receipt;
        known.receiptValue = step.receiptValue;
        known.leaf = step.leaf;
        this.answered++;
      }
      return;
    }
    this.bySeq.set(step.seq, step);
    const last = this.steps[this.steps.length - 1];
    if (!last || last.seq < step.seq) this.steps.push(step);
    else this.steps.splice(lowerBound(this.steps, step.seq), 0, step);
    if (step.receipt) this.answered++;
  }

  addAccumulator(state: AccumulatorState & { seq: bigint }): void {
    if (this.accumulators.has(state.leafCount)) return;
    this.accumulators.set(state.leafCount, state);
    if (!this.latestAccumulator || state.leafCount > this.latestAccumulator.leafCount) this.latestAccumulator = state;
  }
}

/** First index whose seq is ≥ `seq`. */
export function lowerBound(steps: readonly CachedStep[], seq: bigint): number {
  let lo = 0;
  let hi = steps.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (steps[mid]!.seq < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Writes claimed but not committed yet, per channel, for the conflict checks (SqliteStore's `Batch`). */
export class Pending {
  channel = 0;
  readonly tickets = new Map<bigint, string>();
  readonly receipts = new Map<bigint, string>();
  readonly commits = new Map<string, string>();
  cooperativeClose: string | undefined;
  readonly faults = new Map<bigint, string>();
  readonly results = new Map<bigint, string>();
  /** Receipts claimed, by seq (what the next step's row may leave out: its model, its prevReceiptHash). */
  readonly receiptObjects = new Map<bigint, SessionReceipt>();
  /** The newest accumulator state claimed (what the next one may be derived from). */
  accumulator: (AccumulatorState & { seq: bigint }) | undefined;
}
