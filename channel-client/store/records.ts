/**
 * JSON forms of what the store keeps beyond the signed artifacts — the channel's fixed description, a
 * closing, a signed receipt commit — and the fixed-width key a seq is indexed by.
 *
 * Every record is written as canonical JSON (`canon`) with amounts and counters as decimal strings and
 * read back through the `...FromJson` validators, exactly like the artifacts, so a damaged row fails with
 * a typed error instead of decoding to a wrong value.
 */
import type { Address, Hex } from "viem";

import { canon, parseCanonical } from "../core/canonical";
import type { ClosingState } from "../core/summary";
import { InvalidFieldError } from "../core/errors";
import { receiptCommitToJson, type ReceiptCommitJson, type SignedReceiptCommit } from "../core/receipt-commit";
import { channelRefFromJson, channelRefToJson, pricingTermsFromJson, pricingTermsToJson, type ChannelRefJson, type PricingTermsJson } from "../core/terms";
import {
  expectAddress,
  expectHash,
  expectObject,
  expectString,
  expectUint,
  uintToJson,
} from "../core/validate";
import { settlementSummaryFromJson, settlementSummaryToJson, type SettlementSummaryJson } from "../core/summary";
import { expectPayerSignatureHex, expectSignatureHex } from "../core/validate";
import {
  canonicalSignedReceiptText,
  signedSessionReceiptFromJson,
  signedSessionReceiptToJson,
  type SessionReceipt,
  type SignedSessionReceipt,
  type SignedSessionReceiptJson,
} from "../core/receipt";
import {
  canonicalSignedTicketText,
  signedPaymentTicketFromJson,
  signedPaymentTicketToJson,
  type PaymentTicket,
  type SignedPaymentTicket,
  type SignedPaymentTicketJson,
} from "../core/ticket";
import { InconsistentRecordError } from "./errors";
import type { ChannelRecord, ClosingRecord, CooperativeCloseRecord, StepRecord } from "./store";

/** Largest row text the store decodes; real records are under 2 kB. */
export const MAX_RECORD_BYTES = 64 * 1024;

/** Parses a stored row's text, which must be canonical JSON (it was written by `canon`). */
export function parseStored(text: string, what: string): unknown {
  return parseCanonical(text, { maxBytes: MAX_RECORD_BYTES, what });
}

// ---------------------------------------------------------------------------------------------------
// seq keys

/** Digits of the largest uint64, 18446744073709551615. */
const SEQ_KEY_DIGITS = 20;
const SEQ_KEY = /^[0-9]{20}$/;

/**
 * The indexed form of a uint64 counter: decimal, zero-padded to 20 digits, so that text order is numeric
 * order (SQLite's INTEGER is signed 64-bit and cannot hold the top half of uint64).
 */
export function seqKey(seq: bigint): string {
  if (seq < 0n || seq >= 1n << 64n) throw new InvalidFieldError("seq", "a uint64", seq);
  return seq.toString(10).padStart(SEQ_KEY_DIGITS, "0");
}

export function seqFromKey(key: unknown, path: string): bigint {
  if (typeof key !== "string" || !SEQ_KEY.test(key)) throw new InvalidFieldError(path, "a 20-digit decimal seq key", key);
  return BigInt(key);
}

// ---------------------------------------------------------------------------------------------------
// channels

/**
 * The fixed part of a `ChannelRecord`. `role`, `status` and `deposit` live in their own columns (they are
 * filtered on or change); the session id is repeated here so a row swapped under another key is caught.
 */
export type ChannelJson = {
  sessionId: Hex;
  chainId: string;
  escrow: Hex;
  ref: ChannelRefJson;
  pricing: PricingTermsJson;
  peer?: string;
};

export function channelToJson(record: ChannelRecord): ChannelJson {
  const json: ChannelJson = {
    sessionId: record.sessionId,
    chainId: uintToJson(BigInt(record.chainId)),
    escrow: lower(record.escrow),
    ref: channelRefToJson(record.ref),
    pricing: pricingTermsToJson(record.pricing),
  };
  if (record.peer !== undefined) json.peer = record.peer;
  return json;
}

/** The fixed part of a channel, validated; the caller adds the column fields. */
export type ChannelFixed = Omit<ChannelRecord, "role" | "status" | "deposit">;

export function channelFromJson(value: unknown, path = "Channel"): ChannelFixed {
  const o = expectObject(value, path, ["sessionId", "chainId", "escrow", "ref", "pricing"], ["peer"]);
  const fixed: ChannelFixed = {
    sessionId: expectHash(o.sessionId, `${path}.sessionId`),
    ref: channelRefFromJson(o.ref, `${path}.ref`),
    pricing: pricingTermsFromJson(o.pricing, `${path}.pricing`),
    escrow: expectAddress(o.escrow, `${path}.escrow`),
    // 53 bits: a chain id is a JS number in viem, so it must be a safe integer.
    chainId: Number(expectUint(o.chainId, `${path}.chainId`, 53)),
  };
  if (o.peer !== undefined) fixed.peer = expectString(o.peer, `${path}.peer`, 256);
  return fixed;
}

// ---------------------------------------------------------------------------------------------------
// receipt commits

export type SignedReceiptCommitJson = { commit: ReceiptCommitJson; signature: Hex };

export function signedReceiptCommitToJson(signed: SignedReceiptCommit): SignedReceiptCommitJson {
  return { commit: receiptCommitToJson(signed.commit), signature: signed.signature };
}

// ---------------------------------------------------------------------------------------------------
// closings

export type ClosingStateJson = { deposit: string; seq: string; amount: string; receiptRoot: Hex; feeBps: string };
export type ClosingRecordJson = { state: ClosingStateJson; finalizesAt: string; closer: Hex; txHash: Hex };

export function closingStateToJson(state: ClosingState): ClosingStateJson {
  return {
    deposit: uintToJson(state.deposit),
    seq: uintToJson(state.seq),
    amount: uintToJson(state.amount),
    receiptRoot: state.receiptRoot,
    feeBps: uintToJson(BigInt(state.feeBps)),
  };
}

/** Widths follow `IGasEscrow.ClosingState`: uint128 deposit and amount, uint64 seq, uint16 feeBps. */
export function closingStateFromJson(value: unknown, path = "ClosingState"): ClosingState {
  const o = expectObject(value, path, ["deposit", "seq", "amount", "receiptRoot", "feeBps"]);
  return {
    deposit: expectUint(o.deposit, `${path}.deposit`, 128),
    seq: expectUint(o.seq, `${path}.seq`, 64),
    amount: expectUint(o.amount, `${path}.amount`, 128),
    receiptRoot: expectHash(o.receiptRoot, `${path}.receiptRoot`),
    feeBps: Number(expectUint(o.feeBps, `${path}.feeBps`, 16)),
  };
}

export function closingRecordToJson(closing: ClosingRecord): ClosingRecordJson {
  return {
    state: closingStateToJson(closing.state),
    finalizesAt: uintToJson(closing.finalizesAt),
    closer: lower(closing.closer),
    txHash: closing.txHash,
  };
}

export function closingRecordFromJson(value: unknown, path = "ClosingRecord"): ClosingRecord {
  const o = expectObject(value, path, ["state", "finalizesAt", "closer", "txHash"]);
  return {
    state: closingStateFromJson(o.state, `${path}.state`),
    finalizesAt: expectUint(o.finalizesAt, `${path}.finalizesAt`, 64),
    closer: expectAddress(o.closer, `${path}.closer`),
    txHash: expectHash(o.txHash, `${path}.txHash`),
  };
}

// ---------------------------------------------------------------------------------------------------
// cooperative closes

export type CooperativeCloseJson = { summary: SettlementSummaryJson; payerSignature: Hex; providerSignature: Hex };

export function cooperativeCloseToJson(close: CooperativeCloseRecord): CooperativeCloseJson {
  return { summary: settlementSummaryToJson(close.summary), payerSignature: close.payerSignature, providerSignature: close.providerSignature };
}

export function cooperativeCloseFromJson(value: unknown, path = "CooperativeClose"): CooperativeCloseRecord {
  const o = expectObject(value, path, ["summary", "payerSignature", "providerSignature"]);
  return {
    summary: settlementSummaryFromJson(o.summary, `${path}.summary`),
    payerSignature: expectPayerSignatureHex(o.payerSignature, `${path}.payerSignature`),
    providerSignature: expectSignatureHex(o.providerSignature, `${path}.providerSignature`),
  };
}

// ---------------------------------------------------------------------------------------------------

/** Canonical text of a JSON form, after checking it decodes again (the store never writes what it cannot read). */
export function canonChecked<T>(json: T, fromJson: (value: unknown) => unknown): string {
  fromJson(json);
  return canon(json);
}

/**
 * The stored text of a signed ticket: written out directly when it is well formed (issue 15: no
 * object → validate → canonicalize round trip on the hot path), through the validating path otherwise,
 * which refuses what it must. Both give the same bytes. Both backends store and compare this text.
 */
export function signedTicketText(signed: SignedPaymentTicket): string {
  return canonicalSignedTicketText(signed) ?? canonChecked(signedPaymentTicketToJson(signed), (value) => signedPaymentTicketFromJson(value));
}

/** The stored text of a signed receipt, as `signedTicketText` writes a ticket's. */
export function signedReceiptText(signed: SignedSessionReceipt): string {
  return canonicalSignedReceiptText(signed) ?? canonChecked(signedSessionReceiptToJson(signed), (value) => signedSessionReceiptFromJson(value));
}

/**
 * A step's parts agree before either backend files it: the ticket and the receipt are for session `id` and
 * for the step's seq (`InconsistentRecordError` otherwise).
 */
export function assertStepParts(id: Hex, step: Required<StepRecord>): void {
  const { ticket, receipt } = step;
  if (ticket.ticket.sessionId !== id || receipt.receipt.sessionId !== id) {
    throw new InconsistentRecordError(
      `The step filed under session ${id} holds a ticket for ${ticket.ticket.sessionId} and a receipt for ${receipt.receipt.sessionId}.`,
    );
  }
  if (ticket.ticket.seq !== step.seq || receipt.receipt.seq !== step.seq) {
    throw new InconsistentRecordError(
      `Step ${step.seq} holds ticket seq ${ticket.ticket.seq} and receipt seq ${receipt.receipt.seq}; all three must be equal.`,
    );
  }
}

function lower(address: Address): Hex {
  return address.toLowerCase() as Hex;
}

// ---------------------------------------------------------------------------------------------------
// compact step encoding (schema version 7, issue 31)
//
// A step row keeps only what no other row or key already holds. The session id and seq are the row's key
// (a channel number and the seq), the ticket's provider and terms hash and the receipt's policy hash and
// model id repeat across a channel and are stored once in `interned`, and hashes, signatures and amounts
// are bytes, not hex or decimal text:
//
//   ticket  = receiptRoot (32) ‖ signature (65) ‖ cumulativeAmount (0–16, big-endian, no leading zero byte)
//   receipt = offloadPacketHash (32) ‖ outputHash (32) ‖ prevReceiptHash (32) ‖ signature (65)
//             ‖ length of units (1) ‖ units (0–16) ‖ amount (0–16, the rest)
//   terms   = provider (20) ‖ termsHash (32)            (interned)
//   policy  = policyHash (32) ‖ modelSnapshotId (UTF-8) (interned)
//
// Decoding rebuilds the JSON forms and runs them through the artifacts' validators, as the text rows did.

export const TICKET_BLOB_MIN = 97;
export const TICKET_BLOB_MAX = 113;
export const RECEIPT_BLOB_MIN = 162;
export const RECEIPT_BLOB_MAX = 194;

/** The smallest big-endian bytes of a uint (none for zero), written at `offset`; returns the new offset. */
function writeUint(buffer: Buffer, offset: number, value: bigint): number {
  if (value === 0n) return offset;
  let hex = value.toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  return offset + buffer.write(hex, offset, "hex");
}

function uintBytes(value: bigint): number {
  if (value === 0n) return 0;
  return (value.toString(16).length + 1) >> 1;
}

function readUint(bytes: Buffer, start: number, end: number, path: string): string {
  if (end - start > 16) throw new InvalidFieldError(path, "at most 16 bytes", end - start);
  if (end > start && bytes[start] === 0) throw new InvalidFieldError(path, "big-endian bytes without a leading zero byte", bytes.subarray(start, end).toString("hex"));
  return end === start ? "0" : BigInt(`0x${bytes.toString("hex", start, end)}`).toString(10);
}

const hexOf = (bytes: Buffer, start: number, end: number): Hex => `0x${bytes.toString("hex", start, end)}`;

/** The ticket's own bytes; `signed` has passed the ticket validators (hashes and signature are well-formed hex). */
export function encodeTicketBlob(signed: SignedPaymentTicket): Buffer {
  const { ticket } = signed;
  const blob = Buffer.allocUnsafe(97 + uintBytes(ticket.cumulativeAmount));
  blob.write(ticket.receiptRoot.slice(2), 0, "hex");
  blob.write(signed.signature.slice(2), 32, "hex");
  writeUint(blob, 97, ticket.cumulativeAmount);
  return blob;
}

/** The ticket's interned part: provider ‖ termsHash. */
export function ticketTermsKey(ticket: PaymentTicket): Buffer {
  const key = Buffer.allocUnsafe(52);
  key.write(ticket.provider.slice(2), 0, "hex");
  key.write(ticket.termsHash.slice(2), 20, "hex");
  return key;
}

export function encodeReceiptBlob(signed: SignedSessionReceipt): Buffer {
  const r = signed.receipt;
  const units = uintBytes(r.metering.units);
  const blob = Buffer.allocUnsafe(RECEIPT_BLOB_MIN + units + uintBytes(r.metering.amount));
  blob.write(r.offloadPacketHash.slice(2), 0, "hex");
  blob.write(r.outputHash.slice(2), 32, "hex");
  blob.write(r.prevReceiptHash.slice(2), 64, "hex");
  blob.write(signed.signature.slice(2), 96, "hex");
  blob[161] = units;
  writeUint(blob, writeUint(blob, 162, r.metering.units), r.metering.amount);
  return blob;
}

/** The receipt's interned part: policyHash ‖ modelSnapshotId. */
export function receiptPolicyKey(receipt: SessionReceipt): Buffer {
  const model = Buffer.from(receipt.modelSnapshotId, "utf8");
  const key = Buffer.allocUnsafe(32 + model.length);
  key.write(receipt.policyHash.slice(2), 0, "hex");
  model.copy(key, 32);
  return key;
}

export function decodeTicketBlob(sessionId: Hex, seq: bigint, blob: Buffer, terms: Buffer): SignedPaymentTicketJson {
  if (blob.length < TICKET_BLOB_MIN || blob.length > TICKET_BLOB_MAX) throw new InvalidFieldError("steps.ticket", `${TICKET_BLOB_MIN}–${TICKET_BLOB_MAX} bytes`, blob.length);
  if (terms.length !== 52) throw new InvalidFieldError("steps.terms", "52 bytes (provider ‖ terms hash)", terms.length);
  return {
    ticket: {
      sessionId,
      provider: hexOf(terms, 0, 20),
      termsHash: hexOf(terms, 20, 52),
      seq: seq.toString(10),
      cumulativeAmount: readUint(blob, 97, blob.length, "steps.ticket.cumulativeAmount"),
      receiptRoot: hexOf(blob, 0, 32),
    },
    signature: hexOf(blob, 32, 97),
  };
}

export function decodeReceiptBlob(sessionId: Hex, seq: bigint, blob: Buffer, policy: Buffer): SignedSessionReceiptJson {
  if (blob.length < RECEIPT_BLOB_MIN || blob.length > RECEIPT_BLOB_MAX) throw new InvalidFieldError("steps.receipt", `${RECEIPT_BLOB_MIN}–${RECEIPT_BLOB_MAX} bytes`, blob.length);
  if (policy.length < 32) throw new InvalidFieldError("steps.policy", "32 bytes or more (policy hash ‖ model id)", policy.length);
  const unitsEnd = RECEIPT_BLOB_MIN + blob[161]!;
  if (unitsEnd > blob.length) throw new InvalidFieldError("steps.receipt.metering.units", "a length within the row", blob[161]);
  return {
    receipt: {
      sessionId,
      seq: seq.toString(10),
      offloadPacketHash: hexOf(blob, 0, 32),
      outputHash: hexOf(blob, 32, 64),
      policyHash: hexOf(policy, 0, 32),
      modelSnapshotId: policy.toString("utf8", 32),
      metering: { units: readUint(blob, RECEIPT_BLOB_MIN, unitsEnd, "steps.receipt.metering.units"), amount: readUint(blob, unitsEnd, blob.length, "steps.receipt.metering.amount") },
      prevReceiptHash: hexOf(blob, 64, 96),
    },
    signature: hexOf(blob, 96, 161),
  };
}

/** What a receipt blob says the step charged (`metering.amount`), without decoding the rest. */
export function receiptBlobAmount(blob: Buffer): bigint {
  const start = RECEIPT_BLOB_MIN + blob[161]!;
  return start >= blob.length ? 0n : BigInt(`0x${blob.toString("hex", start)}`);
}

/**
 * A uint64 seq as the signed 64-bit INTEGER key SQLite orders numerically: seq − 2^63. Every uint64 fits
 * and the order is kept (the old 20-digit text keys served the same purpose, at 21 bytes a key).
 */
export const SEQ_OFFSET = 1n << 63n;
export function seqToInteger(seq: bigint): bigint {
  if (seq < 0n || seq >= 1n << 64n) throw new InvalidFieldError("seq", "a uint64", seq);
  return seq - SEQ_OFFSET;
}
export function seqFromInteger(value: bigint | number): bigint {
  return BigInt(value) + SEQ_OFFSET;
}

/** Peaks (lowest level first) as one blob of 32-byte hashes. */
export function peaksToBlob(peaks: readonly Hex[]): Buffer {
  const blob = Buffer.allocUnsafe(32 * peaks.length);
  peaks.forEach((peak, i) => blob.write(peak.slice(2), 32 * i, "hex"));
  return blob;
}
export function peaksFromBlob(blob: Buffer): Hex[] {
  if (blob.length % 32 !== 0) throw new InvalidFieldError("accumulator_states.peaks", "a multiple of 32 bytes", blob.length);
  const peaks: Hex[] = [];
  for (let i = 0; i < blob.length; i += 32) peaks.push(hexOf(blob, i, i + 32));
  return peaks;
}
