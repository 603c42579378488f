/**
 * The channel client's durable store: what a payer or provider must not forget across a crash — its
 * channels, every ticket it signed or accepted, every receipt, the receipt commits, the closing it saw
 * on-chain and how far its chain followers got.
 *
 * `ChannelStore` is the seam; `SqliteStore` (./sqlite-store) is the embedded default. The durability rule
 * every implementation keeps: a write's promise resolves only once the write would survive a crash (and,
 * for the SQLite store, a power loss), and a rejected write left nothing behind. Callers therefore await
 * the write BEFORE they act on it — send the ticket, answer with the receipt, submit the close.
 *
 * Reads are synchronous and return committed data: safe from a process crash at once, and from a power
 * loss once the write's promise resolved (docs/decisions/0008). Act on a write only after awaiting it.
 */
import type { Address, Hex } from "viem";

import type { ClosingState } from "../core/summary";
import type { SettlementSummary } from "../core/summary";
import type { SignedFaultStatement } from "../core/fault-statement";
import type { SignedReceiptCommit } from "../core/receipt-commit";
import type { SignedSessionReceipt } from "../core/receipt";
import type { ChannelRef, PricingTerms } from "../core/terms";
import type { SignedPaymentTicket } from "../core/ticket";
import type { SignedSessionKeyGrant } from "../core/session-key";

/** Which side of the channel this client is. */
export type ChannelRole = "payer" | "provider";

/**
 * Lifecycle of a channel as this client last saw it: on-chain, or `closing` once it co-signed a cooperative
 * close (the session ended off-chain; the settlement may not be mined yet).
 */
export type ChannelStatus = "open" | "closing" | "settled";

export const CHANNEL_ROLES: readonly ChannelRole[] = ["payer", "provider"];
export const CHANNEL_STATUSES: readonly ChannelStatus[] = ["open", "closing", "settled"];

export type ChannelRecord = {
  sessionId: Hex;
  role: ChannelRole;
  ref: ChannelRef;
  pricing: PricingTerms;
  /** The GasEscrow deployment holding the channel. */
  escrow: Address;
  chainId: number;
  /** What the channel holds on-chain, as last seen. */
  deposit: bigint;
  status: ChannelStatus;
  /** Where the counterparty is reached, e.g. "127.0.0.1:7000". */
  peer?: string;
};

/** One step of a session: the ticket that paid for it and, once the provider answered, its receipt and leaf. */
export type StepRecord = {
  seq: bigint;
  ticket: SignedPaymentTicket;
  receipt?: SignedSessionReceipt;
  /** `receiptLeaf(receipt, ticket)`; present exactly when `receipt` is. */
  leaf?: Hex;
};

/** A unilateral close (or the latest challenge of it) as recorded on-chain. */
export type ClosingRecord = {
  state: ClosingState;
  finalizesAt: bigint;
  /** Who submitted the close. */
  closer: Address;
  /** The transaction that recorded `state` (the close, or the challenge that replaced it). */
  txHash: Hex;
};

/** A cooperative close both parties signed (mode Cooperative): what either can submit on-chain. */
export type CooperativeCloseRecord = { summary: SettlementSummary; payerSignature: Hex; providerSignature: Hex };

/**
 * The provider's receipt accumulator right after a step (issue 28 item 6, decision 0009): how many receipts,
 * the peaks over them (lowest level first) and what the receipts charged in total. Stored with the step, so
 * a channel resumes from its newest state in constant time and an older prefix root is one lookup.
 */
export type AccumulatorState = { leafCount: number; peaks: Hex[]; charged: bigint };

/**
 * Payer: what one paid call sent and got back (issue 28 item 8), as canonical JSON text: the request (its
 * keccak256 is the receipt's offloadPacketHash) and the output, the result or `{error}` (its keccak256 is the
 * receipt's outputHash).
 */
export type ResultRecord = { seq: bigint; request: string; output: string };

/**
 * A channel archived and pruned (issue 31 item 2, decision 0008 amendment): when (unix seconds, chain time)
 * and the archive file its `ioi export` lines were written to. Kept forever (a few dozen bytes), so that a late
 * message for the channel is answered, never re-creates it.
 */
export type PrunedChannelRecord = { prunedAt: bigint; archive: string };

export type ChannelPatch = { deposit?: bigint; status?: ChannelStatus };
export type ListChannelsFilter = { role?: ChannelRole; status?: ChannelStatus };
export type StepsOptions = {
  /** Smallest seq returned (inclusive). */
  fromSeq?: bigint;
  /** Most steps returned. */
  limit?: number;
};

export interface ChannelStore {
  /**
   * Inserts the channel, or replaces every field of the stored one (its steps are kept). A pruned channel is
   * refused with `ChannelPrunedError`.
   */
  putChannel(record: ChannelRecord): Promise<void>;
  /**
   * Removes the channel and everything filed under it (steps, states, commits, closings, results, grants) and
   * records it as pruned, in one transaction. Rejects with `UnknownChannelError` if it is not stored. The
   * caller decides whether it may be pruned (channel-client/node/prune.ts); the store only forgets.
   */
  deleteChannel(sessionId: Hex, pruned: PrunedChannelRecord): Promise<void>;
  /** The record of a pruned channel, if this store pruned it. `putChannel` refuses it with `ChannelPrunedError`. */
  prunedChannel(sessionId: Hex): PrunedChannelRecord | undefined;
  /** Changes the mutable fields of a stored channel; rejects with `UnknownChannelError` if there is none. */
  updateChannel(sessionId: Hex, patch: ChannelPatch): Promise<void>;
  getChannel(sessionId: Hex): ChannelRecord | undefined;
  /** Channels in the order they were first stored, optionally only those with the given role and/or status. */
  listChannels(filter?: ListChannelsFilter): ChannelRecord[];

  /**
   * Payer: a ticket it signed, persisted BEFORE it is sent. Idempotent for the same (sessionId, seq,
   * bytes); a different ticket for a seq that already has one rejects with `TicketConflictError`.
   */
  putTicket(sessionId: Hex, signed: SignedPaymentTicket): Promise<void>;
  /**
   * Provider: an accepted ticket with its signed receipt and leaf, atomically, persisted BEFORE the
   * answer. Payer: the receipt it accepted for a ticket it stored earlier (the ticket must be the same
   * bytes, else `TicketConflictError`). Idempotent for identical steps; a different receipt or leaf for a
   * step that has one rejects with `ReceiptConflictError`.
   */
  putStep(sessionId: Hex, step: Required<StepRecord>, accumulator?: AccumulatorState): Promise<void>;
  /**
   * Provider: the accumulator state stored with the step of seq `seq`, or with the step after which the
   * accumulator held `leafCount` receipts (`{ leafCount }`); by default the newest. Undefined if none was
   * stored (steps written before issue 28, or by a payer).
   */
  accumulatorState(sessionId: Hex, at?: { leafCount: number }): (AccumulatorState & { seq: bigint }) | undefined;
  /** The step with the highest seq that has a receipt. */
  latestAnsweredStep(sessionId: Hex): StepRecord | undefined;
  /** The ticket with the highest seq. */
  latestTicket(sessionId: Hex): SignedPaymentTicket | undefined;
  /** Steps in ascending seq. */
  steps(sessionId: Hex, options?: StepsOptions): StepRecord[];
  /** Leaves of the steps that have receipts, in ascending seq: what rebuilds the receipt accumulator. */
  leaves(sessionId: Hex): Hex[];
  /** Number of steps that have receipts. */
  receiptCount(sessionId: Hex): number;

  /**
   * A receipt commit signed `by` one party. Commits are kept per leaf count (the history is evidence);
   * a different commit by the same party for the same leaf count rejects with `CommitConflictError`.
   */
  putCommit(sessionId: Hex, by: ChannelRole, signed: SignedReceiptCommit): Promise<void>;
  /** The commit by `by` over the most leaves. */
  latestCommit(sessionId: Hex, by: ChannelRole): SignedReceiptCommit | undefined;

  /** Records (or replaces, after a challenge) the channel's on-chain closing. */
  putClosing(sessionId: Hex, closing: ClosingRecord): Promise<void>;
  getClosing(sessionId: Hex): ClosingRecord | undefined;

  /**
   * The cooperative close this client co-signed, persisted BEFORE its co-signature leaves. Idempotent for the
   * same close; a different one for the same session rejects with `CooperativeCloseConflictError`.
   */
  putCooperativeClose(sessionId: Hex, close: CooperativeCloseRecord): Promise<void>;
  getCooperativeClose(sessionId: Hex): CooperativeCloseRecord | undefined;

  /**
   * Payer: the provider's signed fault statement that came with a failed call's receipt (decision 0015), kept
   * as dispute evidence; written before the step's receipt. Idempotent for the same statement; a different
   * one for the same seq rejects with `FaultStatementConflictError`.
   */
  putFaultStatement(sessionId: Hex, signed: SignedFaultStatement): Promise<void>;
  getFaultStatement(sessionId: Hex, seq: bigint): SignedFaultStatement | undefined;

  /**
   * Payer: the request and output of a paid call (issue 28 item 8), written BEFORE the step's receipt (durable
   * writes keep their order, so a durable receipt implies its result). Idempotent for the same record; a
   * different one for the same seq rejects with `ResultConflictError`.
   */
  putResult(sessionId: Hex, record: ResultRecord): Promise<void>;
  /** Stored results in ascending seq (from `fromSeq`, at most `limit`). */
  results(sessionId: Hex, options?: StepsOptions): ResultRecord[];

  /**
   * A payer's session-key grant for the session (decision 0025). Provider: persisted BEFORE any ticket signed
   * by its key is accepted, so the ticket can always be submitted on-chain with it. Payer: persisted when it
   * signs the grant (`ioi session-key authorize --session`) and before it signs a ticket with the key, so a
   * session case can show the ticket is the payer's (issue 27 finding 9). Idempotent.
   */
  putSessionKeyGrant(sessionId: Hex, signed: SignedSessionKeyGrant): Promise<void>;
  /** The session's stored grants (only those naming `key`, if given), in the order they were stored. */
  sessionKeyGrants(sessionId: Hex, key?: Address): SignedSessionKeyGrant[];

  /** A chain follower's cursor: the last block it fully processed. */
  getCursor(name: string): bigint | undefined;
  /** Sets a cursor (it may move backwards, e.g. to re-process after a reorg). */
  setCursor(name: string, block: bigint): Promise<void>;

  /** Resolves when everything written so far is durable (rejects if that batch failed). */
  flush(): Promise<void>;
  /** Flushes, then closes. Later reads throw and later writes reject with `StoreClosedError`. Idempotent. */
  close(): Promise<void>;
}
