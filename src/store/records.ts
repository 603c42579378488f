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
import { expectSignatureHex } from "../core/validate";
import type { ChannelRecord, ClosingRecord, CooperativeCloseRecord } from "./store";

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
    payerSignature: expectSignatureHex(o.payerSignature, `${path}.payerSignature`),
    providerSignature: expectSignatureHex(o.providerSignature, `${path}.providerSignature`),
  };
}

// ---------------------------------------------------------------------------------------------------

/** Canonical text of a JSON form, after checking it decodes again (the store never writes what it cannot read). */
export function canonChecked<T>(json: T, fromJson: (value: unknown) => unknown): string {
  fromJson(json);
  return canon(json);
}

function lower(address: Address): Hex {
  return address.toLowerCase() as Hex;
}
