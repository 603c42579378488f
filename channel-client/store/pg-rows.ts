/**
 * The PostgreSQL store's row types and codecs (split from channel-client/store/pg-store.ts): the columns a ticket, a
 * receipt and an accumulator state are stored in, and how a row is decoded back into the channel's cache (a row
 * that does not decode is a `StoreCorruptionError` naming it).
 */
import type { Hex } from "viem";
import { InvalidFieldError } from "../core/errors";
import { RootAccumulator } from "../core/accumulator";
import { sessionReceiptHash, type SessionReceipt, signedSessionReceiptFromJson, type SignedSessionReceiptJson } from "../core/receipt";
import { signedPaymentTicketFromJson, type SignedPaymentTicketJson } from "../core/ticket";
import { expectHash } from "../core/validate";
import { FencedError, InconsistentRecordError, StoreCorruptionError, StoreWriteError, UnknownChannelError } from "./errors";
import { type AccumulatorState, type ChannelRecord, type StepRecord } from "./store";
import { type CachedStep, ChannelCache, type Defaults, type Tx } from "./pg-cache";

export const hexBuf = (hex: string): Buffer => Buffer.from(hex.slice(2), "hex");
export const bufHex = (buffer: Buffer): Hex => `0x${buffer.toString("hex")}`;

export type ChannelRow = { id: number; session_id: Buffer; role: string; status: string; deposit: string; channel: string; provider: Buffer; terms_hash: Buffer; policy_hash: Buffer };
export type StepRow = {
  channel_id: number;
  seq: string;
  amount: string;
  root: Buffer;
  ticket_sig: Buffer;
  ticket_provider: Buffer | null;
  ticket_terms: Buffer | null;
  offload: Buffer | null;
  output: Buffer | null;
  policy: Buffer | null;
  model: string | null;
  units: string | null;
  charge: string | null;
  prev: Buffer | null;
  receipt_sig: Buffer | null;
  leaf: Buffer | null;
  acc_leaves: string | null;
  acc_peaks: Buffer | null;
  acc_charged: string | null;
};

// ---------------------------------------------------------------------------------------------------
// row codecs

/** Decodes a steps row into the channel's cache. */
export function addStepRow(cache: ChannelCache, id: Hex, row: StepRow): void {
  decodeRow("steps", `${id}#${row.seq}`, () => {
    const seq = BigInt(row.seq);
    const ticketText = ticketTextOf(row, id, cache.defaults);
    const step: CachedStep = { seq, ticketText, ticket: signedPaymentTicketFromJson(JSON.parse(ticketText)) };
    if (row.receipt_sig) {
      const receiptText = receiptTextOf(row, id, cache.defaults, cache.bySeq.get(seq - 1n)?.receipt?.receipt);
      step.receipt = signedSessionReceiptFromJson(JSON.parse(receiptText));
      step.leaf = bufHex(row.leaf!);
      step.receiptValue = `${receiptText}\n${step.leaf}`;
    }
    cache.addStep(step);
    if (row.acc_leaves !== null && row.acc_peaks !== null) {
      const peaks: Hex[] = [];
      for (let i = 0; i < row.acc_peaks.length; i += 32) peaks.push(bufHex(row.acc_peaks.subarray(i, i + 32)));
      cache.addAccumulator({ leafCount: Number(row.acc_leaves), peaks, charged: BigInt(row.acc_charged!), seq });
    } else if (row.acc_leaves !== null) {
      // Left out because the state before it and this step give it: derive it the same way.
      const leafCount = Number(row.acc_leaves);
      const before = cache.latestAccumulator;
      if (!step.leaf || (before ? before.leafCount !== leafCount - 1 : leafCount !== 1)) {
        throw new InvalidFieldError("steps.acc_leaves", `a state that follows the previous one (${before?.leafCount ?? 0} receipts)`, row.acc_leaves);
      }
      const next = before ? RootAccumulator.fromJSON({ size: String(before.leafCount), peaks: before.peaks }) : new RootAccumulator();
      next.append(step.leaf);
      cache.addAccumulator({ leafCount, peaks: next.peaks(), charged: (before?.charged ?? 0n) + step.receipt!.receipt.metering.amount, seq });
    }
  });
}

export function defaultsOf(record: ChannelRecord): Defaults {
  return { provider: record.ref.terms.provider.toLowerCase(), termsHash: record.ref.terms.termsHash, policyHash: record.ref.terms.policyHash };
}

export function channelId(tx: Tx, id: Hex): number {
  const known = tx.ids.get(id);
  if (known !== undefined) return known;
  throw new UnknownChannelError(id);
}

/** amount, root, ticket_sig, ticket_provider, ticket_terms */
export function ticketColumns(json: SignedPaymentTicketJson, defaults: Defaults): unknown[] {
  const t = json.ticket;
  return [
    t.cumulativeAmount,
    hexBuf(t.receiptRoot),
    hexBuf(json.signature),
    t.provider === defaults.provider ? null : hexBuf(t.provider),
    t.termsHash === defaults.termsHash ? null : hexBuf(t.termsHash),
  ];
}

/** offload, output, policy, model, units, charge, prev, receipt_sig */
export function receiptColumns(json: SignedSessionReceiptJson, defaults: Defaults, compact: { model: boolean; prev: boolean }): unknown[] {
  const r = json.receipt;
  return [
    hexBuf(r.offloadPacketHash),
    hexBuf(r.outputHash),
    r.policyHash === defaults.policyHash ? null : hexBuf(r.policyHash),
    compact.model ? null : r.modelSnapshotId,
    r.metering.units,
    r.metering.amount,
    compact.prev ? null : hexBuf(r.prevReceiptHash),
    hexBuf(json.signature),
  ];
}

/** True when `state` is exactly what `before` plus this step's leaf and charge give (its peaks may be left out). */
export function derivable(before: (AccumulatorState & { seq: bigint }) | undefined, state: AccumulatorState, leaf: Hex, charge: bigint, peaks: Hex[]): boolean {
  if (before ? before.leafCount !== state.leafCount - 1 : state.leafCount !== 1) return false;
  if ((before?.charged ?? 0n) + charge !== state.charged) return false;
  const next = before ? RootAccumulator.fromJSON({ size: String(before.leafCount), peaks: before.peaks }) : new RootAccumulator();
  next.append(leaf);
  const derived = next.peaks();
  return derived.length === peaks.length && derived.every((peak, i) => peak === peaks[i]);
}

/** `receiptTextOf`, or undefined when the row leaves out what only step seq - 1 gives and that is not known. */
export function receiptTextOrUndefined(row: StepRow, sessionId: Hex, defaults: Defaults, previous: SessionReceipt | undefined): string | undefined {
  if ((row.model === null || row.prev === null) && previous === undefined) return undefined;
  return receiptTextOf(row, sessionId, defaults, previous);
}

/** The canonical text of the row's signed ticket (keys in RFC 8785 order, as `canonicalSignedTicketText` writes it). */
export function ticketTextOf(row: StepRow, sessionId: Hex, defaults: Defaults): string {
  const provider = row.ticket_provider ? bufHex(row.ticket_provider) : defaults.provider;
  const terms = row.ticket_terms ? bufHex(row.ticket_terms) : defaults.termsHash;
  return (
    `{"signature":"${bufHex(row.ticket_sig)}","ticket":{"cumulativeAmount":"${row.amount}","provider":"${provider}",` +
    `"receiptRoot":"${bufHex(row.root)}","seq":"${row.seq}","sessionId":"${sessionId}","termsHash":"${terms}"}}`
  );
}

/**
 * The canonical text of the row's signed receipt (RFC 8785 key order). A row may leave out its model and its
 * prevReceiptHash when step seq - 1's receipt gives them: `previous` is that receipt.
 */
export function receiptTextOf(row: StepRow, sessionId: Hex, defaults: Defaults, previous: SessionReceipt | undefined): string {
  const policy = row.policy ? bufHex(row.policy) : defaults.policyHash;
  if ((row.model === null || row.prev === null) && previous === undefined) {
    throw new InvalidFieldError("steps.model/prev", "the receipt of step seq - 1, which this row refers to", undefined);
  }
  const model = row.model ?? previous!.modelSnapshotId;
  const prev = row.prev ? bufHex(row.prev) : sessionReceiptHash(previous!);
  return (
    `{"receipt":{"metering":{"amount":"${row.charge}","units":"${row.units}"},"modelSnapshotId":${JSON.stringify(model)},` +
    `"offloadPacketHash":"${bufHex(row.offload!)}","outputHash":"${bufHex(row.output!)}","policyHash":"${policy}",` +
    `"prevReceiptHash":"${prev}","seq":"${row.seq}","sessionId":"${sessionId}"},"signature":"${bufHex(row.receipt_sig!)}"}`
  );
}

export function accumulatorColumns(state: AccumulatorState, seq: bigint): { leafCount: number; leaves: string; peaks: Buffer; peakList: Hex[]; charged: string } {
  if (!Number.isSafeInteger(state.leafCount) || state.leafCount < 1) {
    throw new InvalidFieldError("accumulator.leafCount", "a positive integer (the step's receipt is counted)", state.leafCount);
  }
  let ones = 0;
  for (let rest = state.leafCount; rest > 0; rest = Math.floor(rest / 2)) ones += rest % 2;
  if (state.peaks.length !== ones) {
    throw new InconsistentRecordError(`The accumulator state of step ${seq} has ${state.peaks.length} peaks; ${state.leafCount} receipts make ${ones}.`);
  }
  if (typeof state.charged !== "bigint" || state.charged < 0n) throw new InvalidFieldError("accumulator.charged", "a non-negative bigint", state.charged);
  const peakList = state.peaks.map((peak, i) => expectHash(peak, `accumulator.peaks[${i}]`).toLowerCase() as Hex);
  return { leafCount: state.leafCount, leaves: String(state.leafCount), peaks: Buffer.concat(peakList.map(hexBuf)), peakList, charged: state.charged.toString() };
}

export function stepRecord(step: CachedStep): StepRecord {
  const record: StepRecord = { seq: step.seq, ticket: step.ticket };
  if (step.receipt) {
    record.receipt = step.receipt;
    record.leaf = step.leaf!;
  }
  return record;
}

export function cloneRecord(record: ChannelRecord): ChannelRecord {
  return { ...record };
}


export function decodeRow<T>(table: string, key: string, decode: () => T): T {
  try {
    return decode();
  } catch (cause) {
    throw new StoreCorruptionError(table, key, cause);
  }
}

/** Errors a write raised on purpose (a conflict another writer caused): the connection is still good. */
export function isLogicalError(error: unknown): boolean {
  return error instanceof FencedError || (error instanceof Error && "shortMessage" in error && !(error instanceof StoreWriteError));
}

/** The URL without its password, for messages. */
export function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "the given PostgreSQL URL";
  }
}
