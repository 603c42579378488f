/**
 * The embedded channel store: one SQLite file (better-sqlite3) in WAL mode, written by group commit, with
 * the WAL's fsync taken off the event loop.
 *
 * Group commit: every write checks its input, claims its keys and enqueues a closure, returning a
 * promise. The queue is committed in ONE immediate transaction, or at once when it holds `batchLimit` writes.
 * When is adaptive (issue 15): with no fsync in flight the queue is committed as soon as the code that
 * enqueued its first write is done (a microtask), so its fsync starts at once; while an fsync is in flight
 * the queue grows and is committed when that fsync ends, as it could not start syncing earlier anyway. An
 * idle node therefore waits for no turn of the event loop, and a busy one commits and fsyncs one batch per
 * fsync. Every promise of the batch resolves only after that COMMIT returned AND an `fdatasync` of the WAL
 * that started after it completed — so an acknowledged write survives a crash and a power loss — or every
 * one of them rejects with the same `StoreWriteError`. Durability costs one fsync per batch, not one per
 * ticket.
 *
 * Why not `synchronous = FULL`: it fsyncs inside COMMIT, on the event loop thread, which then can do
 * nothing else for the fsync's duration (a fifth of a provider's time under load). With `synchronous =
 * NORMAL` COMMIT only writes the WAL into the page cache — already safe from a process crash — and the
 * fsync runs on libuv's thread pool while the loop verifies and signs the next tickets. SQLite still
 * fsyncs the WAL before a checkpoint copies it into the database and the database after, so nothing
 * acknowledged can be lost when the WAL restarts.
 *
 * Reads are synchronous and see committed data, which is safe from a process crash at once and from a
 * power loss as soon as the batch's promises resolved (one fsync later). Callers act — send, answer,
 * submit on-chain — on a write only after awaiting its promise. Conflict checks at enqueue time do look at
 * the pending batch, so two different tickets for one seq in the same batch are caught before either is
 * written.
 */

import { closeSync, fdatasync, openSync, statSync } from "node:fs";
import { resolve as resolvePath } from "node:path";
import Database from "better-sqlite3";
import type { Address, Hex } from "viem";
import { InvalidFieldError } from "../core/errors";
import { signedFaultStatementFromJson, signedFaultStatementToJson, type SignedFaultStatement } from "../core/fault-statement";
import { signedReceiptCommitFromJson, type SignedReceiptCommit } from "../core/receipt-commit";
import { canonicalSignedReceiptText, signedSessionReceiptFromJson, signedSessionReceiptToJson, type SessionReceipt } from "../core/receipt";
import { type PaymentTicket, type SignedPaymentTicket } from "../core/ticket";
import { signedSessionKeyGrantFromJson, signedSessionKeyGrantToJson, type SignedSessionKeyGrant } from "../core/session-key";
import { MAX_PACKET_BYTES } from "../core/packets";
import { expectHash, expectLiteral, expectString, expectUint, uintToJson } from "../core/validate";
import {
  CommitConflictError,
  ChannelPrunedError,
  CooperativeCloseConflictError,
  FaultStatementConflictError,
  InconsistentRecordError,
  ReceiptConflictError,
  ResultConflictError,
  StoreClosedError,
  StoreOpenError,
  StoreWriteError,
  TicketConflictError,
  UnknownChannelError,
  UnsupportedSchemaError,
} from "./errors";
import {
  canonChecked,
  channelFromJson,
  decodeReceiptBlob,
  decodeTicketBlob,
  encodeReceiptBlob,
  encodeTicketBlob,
  peaksFromBlob,
  receiptBlobAmount,
  seqFromInteger,
  seqToInteger,
  ticketTermsKey,
  receiptPolicyKey,
  channelToJson,
  closingRecordFromJson,
  closingRecordToJson,
  cooperativeCloseFromJson,
  cooperativeCloseToJson,
  parseStored,
  seqFromKey,
  seqKey,
  signedReceiptCommitToJson,
} from "./records";
import { ACCUMULATOR_STATE_INTERVAL, migrate } from "./schema";
import { canon } from "../core/canonical";
import { RootAccumulator } from "../core/accumulator";
import {
  CHANNEL_ROLES,
  CHANNEL_STATUSES,
  type ChannelPatch,
  type ChannelRecord,
  type ChannelRole,
  type ChannelStore,
  type ClosingRecord,
  type CooperativeCloseRecord,
  type ListChannelsFilter,
  type ResultRecord,
  type StepRecord,
  type AccumulatorState,
  type PrunedChannelRecord,
  type StepsOptions,
} from "./store";
import {
  type Statements,
  accumulatorStateRow,
  decodeChannel,
  decodeRow,
  decodeStepRow,
  decodeTicket,
  depositText,
  expectRowKey,
  prepareStatements,
  signedTicketText,
} from "./sqlite-rows";

// The prepared statements and the row codecs are in sqlite-rows.ts.

export type SqliteStoreOptions = {
  /** Most writes one group commit carries; reaching it commits at once. Default 1000. */
  batchLimit?: number;
  /** How long a commit waits for another connection's write lock before failing, in ms. Default 5000. */
  busyTimeoutMs?: number;
};

/** Counters for tests and metrics. */
export type SqliteStoreStats = {
  /** Group commits that committed. */
  commits: number;
  /** Group commits that failed and were rolled back. */
  failedCommits: number;
  /** Writes made durable. */
  operations: number;
  /** Most writes a single commit carried. */
  largestBatch: number;
  /** fdatasyncs of the WAL that made committed batches durable. */
  syncs: number;
};

/** The connection's settings as SQLite reports them. */
export type SqliteStoreSettings = {
  journalMode: string;
  synchronous: "off" | "normal" | "full" | "extra";
  foreignKeys: boolean;
  busyTimeoutMs: number;
  schemaVersion: number;
};

export const DEFAULT_BATCH_LIMIT = 1000;
/** How many recently committed steps the store remembers for its conflict checks. */
const RECENT_STEPS = 4096;
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;


type Waiter = { resolve: () => void; reject: (error: unknown) => void };

/** The writes waiting for the next group commit, and the keys they claim (for conflict checks before commit). */
class Batch {
  readonly ops: Array<() => void> = [];
  readonly waiters: Waiter[] = [];
  readonly channels = new Set<string>();
  /** Channels this batch deletes (`deleteChannel`): nothing may be filed under them after it. */
  readonly deleted = new Set<string>();
  /** `sessionId:seqKey` → canonical ticket text. */
  readonly tickets = new Map<string, string>();
  /** `sessionId:seqKey` → canonical receipt text and leaf. */
  readonly receipts = new Map<string, string>();
  /** `sessionId:role:leafCountKey` → canonical commit text. */
  readonly commits = new Map<string, string>();
  /** `close:sessionId` → canonical cooperative close text. */
  readonly cooperativeCloses = new Map<string, string>();
  /** `sessionId:seqKey` → canonical fault statement text. */
  readonly faults = new Map<string, string>();
  /** `sessionId:seqKey` → request and output text of a paid call. */
  readonly results = new Map<string, string>();
}

export class SqliteStore implements ChannelStore {
  readonly #db: Database.Database;
  readonly #sql: Statements;
  readonly #commitOps: Database.Transaction<(ops: Array<() => void>) => void>;
  readonly #batchLimit: number;
  readonly #stats: SqliteStoreStats = { commits: 0, failedCommits: 0, operations: 0, largestBatch: 0, syncs: 0 };
  /** Channels seen committed; the store never deletes one, so this saves a query per write. */
  readonly #storedChannels = new Set<string>();
  /**
   * The steps this store committed most recently (`sessionId:seqKey` → ticket text, receipt text and leaf),
   * and the highest seq key stored per session: a write's conflict check reads them instead of querying
   * (two queries per ticket on the hot path, issue 15). Another process writing the same file is still
   * caught by the checks that run inside the commit.
   */
  readonly #recentSteps = new Map<string, { ticket: string; receipt: string | undefined }>();
  readonly #topSeq = new Map<string, string>();
  /**
   * Committed channel numbers by session id and interned ids by value (`provider + termsHash`, `policyHash +
   * model`): looked up inside a commit, cleared when a commit fails (its new rows were rolled back).
   */
  readonly #channelNos = new Map<string, bigint>();
  readonly #internedIds = new Map<string, bigint>();
  /** Channel numbers known to hold an accumulator state (so the next is stored only every interval). */
  readonly #withState = new Set<bigint>();
  #batch = new Batch();
  /** A microtask will commit the pending batch (no fsync was in flight when its first write came). */
  #commitQueued = false;
  #closed = false;
  /** Waiters of committed batches whose WAL fsync has not started yet. */
  #unsynced: Waiter[] = [];
  /** The fsync in flight, if any; a new one starts when it ends and `#unsynced` is not empty. */
  #syncing: Promise<void> | undefined;
  /** File descriptor of the WAL, opened at the first sync; undefined for an in-memory store. */
  #walFd: number | undefined;

  private constructor(db: Database.Database, readonly path: string, batchLimit: number) {
    this.#db = db;
    this.#sql = prepareStatements(db);
    this.#commitOps = db.transaction((ops: Array<() => void>) => {
      for (const op of ops) op();
    });
    this.#batchLimit = batchLimit;
  }

  /**
   * Opens (creating if needed) the store at `path` — or `":memory:"`, which is not durable — and migrates
   * its schema. Throws {@link StoreOpenError} if the file cannot be used and {@link UnsupportedSchemaError}
   * if it is not a channel store or was written by a newer client.
   */
  static open(path: string, options: SqliteStoreOptions = {}): SqliteStore {
    const { batchLimit = DEFAULT_BATCH_LIMIT, busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS } = options;
    if (!Number.isSafeInteger(batchLimit) || batchLimit < 1) {
      throw new InvalidFieldError("options.batchLimit", "a positive integer", batchLimit);
    }
    if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
      throw new InvalidFieldError("options.busyTimeoutMs", "a non-negative integer (milliseconds)", busyTimeoutMs);
    }
    let db: Database.Database | undefined;
    try {
      db = new Database(path, { timeout: busyTimeoutMs });
      // A new file frees the pages of pruned channels back to the file system (`reclaim`); on a file made before
      // schema 7 this takes effect only after a VACUUM, and freed pages are reused instead (decision 0008).
      db.pragma("auto_vacuum = INCREMENTAL");
      const mode = db.pragma("journal_mode = WAL", { simple: true });
      if (mode !== "wal" && path !== ":memory:") {
        throw new StoreOpenError(`${path} cannot use write-ahead logging (journal mode stayed "${String(mode)}").`);
      }
      // NORMAL: COMMIT writes the WAL without fsyncing it; the store fsyncs it off the event loop before
      // acknowledging (see the header). An in-memory store is never durable and keeps FULL, which is moot.
      db.pragma(path === ":memory:" ? "synchronous = FULL" : "synchronous = NORMAL");
      db.pragma("foreign_keys = ON");
      migrate(db, path);
    } catch (cause) {
      db?.close();
      if (cause instanceof StoreOpenError || cause instanceof UnsupportedSchemaError) throw cause;
      throw new StoreOpenError(`Cannot open the channel store at ${path}.`, {
        cause,
        details: cause instanceof Error ? cause.message : String(cause),
      });
    }
    return new SqliteStore(db, path, batchLimit);
  }

  /**
   * Returns the pages freed by deleted channels to the file system (`PRAGMA incremental_vacuum`, for a store
   * created with schema 7 or later; an older file keeps them for reuse) after checkpointing the WAL into the
   * database, and returns the file's size in bytes afterwards. Waits for pending writes first.
   */
  async reclaim(): Promise<number> {
    await this.flush();
    this.#assertOpen("reclaim");
    this.#db.pragma("incremental_vacuum");
    return this.checkpoint();
  }

  /** Copies the WAL into the database and truncates it (`wal_checkpoint(TRUNCATE)`); returns the database file's size in bytes. */
  checkpoint(): number {
    this.#assertOpen("checkpoint");
    if (this.path === ":memory:") return 0;
    this.#db.pragma("wal_checkpoint(TRUNCATE)");
    return statSync(this.path).size;
  }

  /** A snapshot of the commit counters. */
  get stats(): SqliteStoreStats {
    return { ...this.#stats };
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The durability settings read back from SQLite (diagnostics; tests check them). */
  settings(): SqliteStoreSettings {
    this.#assertOpen("settings");
    const pragma = (name: string) => this.#db.pragma(name, { simple: true });
    // SQLite reports synchronous as 0..3.
    const synchronous = (["off", "normal", "full", "extra"] as const)[pragma("synchronous") as number]!;
    return {
      journalMode: String(pragma("journal_mode")),
      synchronous,
      foreignKeys: pragma("foreign_keys") === 1,
      busyTimeoutMs: pragma("busy_timeout") as number,
      schemaVersion: pragma("user_version") as number,
    };
  }

  // ------------------------------------------------------------------------------------------------
  // channels

  putChannel(record: ChannelRecord): Promise<void> {
    return this.#write("putChannel", (batch) => {
      const sessionId = expectHash(record.sessionId, "ChannelRecord.sessionId");
      const role = expectLiteral(record.role, "ChannelRecord.role", CHANNEL_ROLES);
      const status = expectLiteral(record.status, "ChannelRecord.status", CHANNEL_STATUSES);
      const deposit = depositText(record.deposit, "ChannelRecord.deposit");
      const channel = canonChecked(channelToJson(record), (value) => channelFromJson(value));
      const pruned = this.prunedChannel(sessionId);
      if (pruned) throw new ChannelPrunedError(sessionId, pruned.prunedAt, pruned.archive);
      if (batch.deleted.has(sessionId)) throw new UnknownChannelError(sessionId);
      batch.channels.add(sessionId);
      return () => {
        this.#sql.upsertChannel.run(sessionId, role, status, deposit, channel);
        this.#sql.insertChannelNumber.run(sessionId);
      };
    });
  }

  updateChannel(sessionId: Hex, patch: ChannelPatch): Promise<void> {
    return this.#write("updateChannel", (batch) => {
      const id = this.#knownChannel(batch, sessionId);
      const deposit = patch.deposit === undefined ? null : depositText(patch.deposit, "patch.deposit");
      const status = patch.status === undefined ? null : expectLiteral(patch.status, "patch.status", CHANNEL_STATUSES);
      return () => {
        if (this.#sql.updateChannel.run(deposit, status, id).changes === 0) throw new UnknownChannelError(id);
      };
    });
  }

  deleteChannel(sessionId: Hex, pruned: PrunedChannelRecord): Promise<void> {
    return this.#write("deleteChannel", (batch) => {
      const id = this.#knownChannel(batch, sessionId);
      const prunedAt = expectUint(uintToJson(pruned.prunedAt), "pruned.prunedAt", 40);
      const archive = expectString(pruned.archive, "pruned.archive", 4096);
      batch.deleted.add(id);
      return () => {
        const no = this.#channelNoIn(id);
        for (const statement of this.#sql.deleteChannel) statement.run({ no, id });
        this.#sql.insertPruned.run(id, prunedAt, archive);
      };
    });
  }

  prunedChannel(sessionId: Hex): PrunedChannelRecord | undefined {
    this.#assertOpen("prunedChannel");
    const row = this.#sql.getPruned.get(sessionId);
    return row && { prunedAt: BigInt(row.pruned_at), archive: row.archive };
  }

  getChannel(sessionId: Hex): ChannelRecord | undefined {
    this.#assertOpen("getChannel");
    const row = this.#sql.getChannel.get(sessionId);
    return row && decodeChannel(row);
  }

  listChannels(filter: ListChannelsFilter = {}): ChannelRecord[] {
    this.#assertOpen("listChannels");
    return this.#sql.listChannels
      .all({ role: filter.role ?? null, status: filter.status ?? null })
      .map((row) => decodeChannel(row));
  }

  // ------------------------------------------------------------------------------------------------
  // tickets and steps

  putTicket(sessionId: Hex, signed: SignedPaymentTicket): Promise<void> {
    return this.#write("putTicket", (batch) => {
      const id = expectHash(sessionId, "sessionId");
      if (signed.ticket.sessionId !== id) {
        throw new InconsistentRecordError(`The ticket is for session ${signed.ticket.sessionId}, not ${id}.`);
      }
      const seq = seqKey(signed.ticket.seq);
      const text = signedTicketText(signed);
      this.#knownChannel(batch, id);
      const key = `${id}:${seq}`;
      const existing = batch.tickets.get(key) ?? this.#storedStep(id, seq, key)?.ticket;
      if (existing !== undefined && existing !== text) throw new TicketConflictError(id, signed.ticket.seq);
      batch.tickets.set(key, text);
      const blob = encodeTicketBlob(signed);
      const seqInt = seqToInteger(signed.ticket.seq);
      const t = signed.ticket;
      return () => {
        const no = this.#channelNoIn(id);
        const terms = this.#termsId(t.provider, t.termsHash);
        if (this.#sql.insertTicket.run(no, seqInt, blob, terms).changes === 0) {
          const row = this.#sql.rawStep.get(no, seqInt);
          // Only a writer outside this store (another process) can get here; it fails the whole batch.
          if (!row || !row.ticket.equals(blob) || row.terms !== terms) throw new TicketConflictError(id, signed.ticket.seq);
        }
      };
    });
  }

  putStep(sessionId: Hex, step: Required<StepRecord>, accumulator?: AccumulatorState): Promise<void> {
    return this.#write("putStep", (batch) => {
      const id = expectHash(sessionId, "sessionId");
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
      const seq = seqKey(step.seq);
      const leaf = expectHash(step.leaf, "step.leaf");
      const ticketText = signedTicketText(ticket);
      const receiptText =
        canonicalSignedReceiptText(receipt) ?? canonChecked(signedSessionReceiptToJson(receipt), (value) => signedSessionReceiptFromJson(value));
      this.#knownChannel(batch, id);
      const key = `${id}:${seq}`;
      let existingTicket = batch.tickets.get(key);
      let existingReceipt = batch.receipts.get(key);
      if (existingTicket === undefined || existingReceipt === undefined) {
        const stored = this.#storedStep(id, seq, key);
        existingTicket ??= stored?.ticket;
        existingReceipt ??= stored?.receipt;
      }
      const receiptValue = `${receiptText}\n${leaf}`;
      if (existingTicket !== undefined && existingTicket !== ticketText) throw new TicketConflictError(id, step.seq);
      if (existingReceipt !== undefined && existingReceipt !== receiptValue) throw new ReceiptConflictError(id, step.seq);
      const state = accumulator === undefined ? undefined : accumulatorStateRow(accumulator, step.seq);
      batch.tickets.set(key, ticketText);
      batch.receipts.set(key, receiptValue);
      const seqInt = seqToInteger(step.seq);
      const ticketBlob = encodeTicketBlob(ticket);
      const receiptBlob = encodeReceiptBlob(receipt);
      const leafBlob = Buffer.from(leaf.slice(2), "hex");
      const t = ticket.ticket;
      const r = receipt.receipt;
      return () => {
        const no = this.#channelNoIn(id);
        const terms = this.#termsId(t.provider, t.termsHash);
        const policy = this.#policyId(r.policyHash, r.modelSnapshotId);
        // In the step's own transaction. States are kept every ACCUMULATOR_STATE_INTERVAL receipts and at a
        // channel's first; `accumulatorState` recomputes the others from the leaves after the nearest one.
        if (state && (state.leafCount % ACCUMULATOR_STATE_INTERVAL === 0 || !this.#hasState(no))) {
          this.#sql.insertAccumulatorState.run(no, state.leafCount, seqInt, state.peaks, state.charged);
          this.#withState.add(no);
        }
        if (this.#sql.upsertStep.run(no, seqInt, ticketBlob, terms, receiptBlob, policy, leafBlob).changes > 0) return;
        // Nothing changed: the identical step is already stored, or another process wrote a different one.
        const row = this.#sql.rawStep.get(no, seqInt);
        if (!row || !row.ticket.equals(ticketBlob) || row.terms !== terms) throw new TicketConflictError(id, step.seq);
        if (!row.receipt?.equals(receiptBlob) || row.policy !== policy || !row.leaf?.equals(leafBlob)) throw new ReceiptConflictError(id, step.seq);
      };
    });
  }

  latestTicket(sessionId: Hex): SignedPaymentTicket | undefined {
    this.#assertOpen("latestTicket");
    const no = this.#channelNo(sessionId);
    const row = no === undefined ? undefined : this.#sql.latestTicket.get(no);
    if (!row) return undefined;
    const seq = seqFromInteger(row.seq);
    return decodeRow("steps", `${sessionId}#${seqKey(seq)}`, () => decodeTicket(sessionId, seq, row.ticket, row.terms));
  }

  steps(sessionId: Hex, options: StepsOptions = {}): StepRecord[] {
    this.#assertOpen("steps");
    const { fromSeq = 0n, limit } = options;
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) {
      throw new InvalidFieldError("options.limit", "a non-negative integer", limit);
    }
    if (fromSeq >= 1n << 64n) return [];
    const no = this.#channelNo(sessionId);
    if (no === undefined) return [];
    // SQLite reads a negative LIMIT as "no limit".
    const rows = this.#sql.steps.all(no, seqToInteger(fromSeq < 0n ? 0n : fromSeq), limit ?? -1);
    return rows.map((row) => decodeStepRow(sessionId, row));
  }

  leaves(sessionId: Hex): Hex[] {
    this.#assertOpen("leaves");
    const no = this.#channelNo(sessionId);
    if (no === undefined) return [];
    return this.#sql.leaves.all(no).map((leaf) => `0x${leaf.toString("hex")}` as Hex);
  }

  accumulatorState(sessionId: Hex, at?: { leafCount: number }): (AccumulatorState & { seq: bigint }) | undefined {
    this.#assertOpen("accumulatorState");
    if (at !== undefined && (!Number.isSafeInteger(at.leafCount) || at.leafCount < 0)) {
      throw new InvalidFieldError("at.leafCount", "a non-negative integer", at.leafCount);
    }
    const no = this.#channelNo(sessionId);
    if (no === undefined) return undefined;
    const row = at === undefined ? this.#sql.latestAccumulatorState.get(no) : this.#sql.accumulatorStateAtMost.get(no, at.leafCount);
    if (!row) return undefined;
    return decodeRow("accumulator_states", `${sessionId}#${row.leaf_count}`, () => {
      const stored = { leafCount: Number(row.leaf_count), seq: seqFromInteger(row.seq), peaks: peaksFromBlob(row.peaks), charged: expectUint(row.charged, "accumulator_states.charged", 256) };
      // The states between stored ones: the nearest one below, and the receipts after it appended (schema 7).
      const missing = at === undefined ? -1 : at.leafCount - stored.leafCount;
      if (missing === 0) return stored;
      const rest = this.#sql.leavesAfter.all(no, row.seq, missing);
      if (rest.length === 0) return stored;
      if (missing > 0 && rest.length < missing) return undefined; // fewer receipts stored than asked for
      const accumulator = RootAccumulator.fromJSON({ size: String(stored.leafCount), peaks: stored.peaks });
      let charged = stored.charged;
      for (const step of rest) {
        accumulator.append(step.leaf);
        charged += receiptBlobAmount(step.receipt);
      }
      return { leafCount: accumulator.size, seq: seqFromInteger(rest[rest.length - 1]!.seq), peaks: accumulator.peaks(), charged };
    });
  }

  latestAnsweredStep(sessionId: Hex): StepRecord | undefined {
    this.#assertOpen("latestAnsweredStep");
    const no = this.#channelNo(sessionId);
    const row = no === undefined ? undefined : this.#sql.latestAnsweredStep.get(no);
    return row ? decodeStepRow(sessionId, row) : undefined;
  }

  receiptCount(sessionId: Hex): number {
    this.#assertOpen("receiptCount");
    const no = this.#channelNo(sessionId);
    return no === undefined ? 0 : (this.#sql.receiptCount.get(no) ?? 0);
  }

  // ------------------------------------------------------------------------------------------------
  // receipt commits

  putCommit(sessionId: Hex, by: ChannelRole, signed: SignedReceiptCommit): Promise<void> {
    return this.#write("putCommit", (batch) => {
      const id = expectHash(sessionId, "sessionId");
      const role = expectLiteral(by, "by", CHANNEL_ROLES);
      if (signed.commit.sessionId !== id) {
        throw new InconsistentRecordError(`The receipt commit is for session ${signed.commit.sessionId}, not ${id}.`);
      }
      const leafCount = seqKey(signed.commit.leafCount);
      const text = canonChecked(signedReceiptCommitToJson(signed), (value) => signedReceiptCommitFromJson(value));
      this.#knownChannel(batch, id);
      const key = `${id}:${role}:${leafCount}`;
      const existing = batch.commits.get(key) ?? this.#sql.getCommit.get(id, role, leafCount);
      if (existing !== undefined && existing !== text) throw new CommitConflictError(id, role, signed.commit.leafCount);
      batch.commits.set(key, text);
      return () => {
        if (
          this.#sql.insertCommit.run(id, role, leafCount, text).changes === 0 &&
          this.#sql.getCommit.get(id, role, leafCount) !== text
        ) {
          throw new CommitConflictError(id, role, signed.commit.leafCount);
        }
      };
    });
  }

  latestCommit(sessionId: Hex, by: ChannelRole): SignedReceiptCommit | undefined {
    this.#assertOpen("latestCommit");
    const row = this.#sql.latestCommit.get(sessionId, by);
    if (!row) return undefined;
    return decodeRow("commits", `${sessionId}#${by}#${row.leaf_count}`, () => {
      const signed = signedReceiptCommitFromJson(parseStored(row.signed_commit, "SignedReceiptCommit"));
      expectRowKey(signed.commit.sessionId, sessionId, "SignedReceiptCommit.commit.sessionId");
      expectRowKey(signed.commit.leafCount, seqFromKey(row.leaf_count, "commits.leaf_count"), "SignedReceiptCommit.commit.leafCount");
      return signed;
    });
  }

  // ------------------------------------------------------------------------------------------------
  // closings and cursors

  putClosing(sessionId: Hex, closing: ClosingRecord): Promise<void> {
    return this.#write("putClosing", (batch) => {
      const id = this.#knownChannel(batch, sessionId);
      const text = canonChecked(closingRecordToJson(closing), (value) => closingRecordFromJson(value));
      return () => {
        this.#sql.upsertClosing.run(id, text);
      };
    });
  }

  getClosing(sessionId: Hex): ClosingRecord | undefined {
    this.#assertOpen("getClosing");
    const text = this.#sql.getClosing.get(sessionId);
    if (text === undefined) return undefined;
    return decodeRow("closings", sessionId, () => closingRecordFromJson(parseStored(text, "ClosingRecord")));
  }

  putCooperativeClose(sessionId: Hex, close: CooperativeCloseRecord): Promise<void> {
    return this.#write("putCooperativeClose", (batch) => {
      const id = this.#knownChannel(batch, sessionId);
      if (close.summary.sessionId !== id) {
        throw new InconsistentRecordError(`The cooperative close is for session ${close.summary.sessionId}, not ${id}.`);
      }
      const text = canonChecked(cooperativeCloseToJson(close), (value) => cooperativeCloseFromJson(value));
      const key = `close:${id}`;
      const existing = batch.cooperativeCloses.get(key) ?? this.#sql.getCooperativeClose.get(id);
      if (existing !== undefined && existing !== text) throw new CooperativeCloseConflictError(id);
      batch.cooperativeCloses.set(key, text);
      return () => {
        if (this.#sql.insertCooperativeClose.run(id, text).changes === 0 && this.#sql.getCooperativeClose.get(id) !== text) {
          throw new CooperativeCloseConflictError(id);
        }
      };
    });
  }

  getCooperativeClose(sessionId: Hex): CooperativeCloseRecord | undefined {
    this.#assertOpen("getCooperativeClose");
    const text = this.#sql.getCooperativeClose.get(sessionId);
    if (text === undefined) return undefined;
    return decodeRow("cooperative_closes", sessionId, () => {
      const close = cooperativeCloseFromJson(parseStored(text, "CooperativeClose"));
      expectRowKey(close.summary.sessionId, sessionId, "CooperativeClose.summary.sessionId");
      return close;
    });
  }

  putFaultStatement(sessionId: Hex, signed: SignedFaultStatement): Promise<void> {
    return this.#write("putFaultStatement", (batch) => {
      const id = this.#knownChannel(batch, sessionId);
      if (signed.statement.sessionId !== id) {
        throw new InconsistentRecordError(`The fault statement is for session ${signed.statement.sessionId}, not ${id}.`);
      }
      const seq = seqKey(signed.statement.seq);
      const text = canonChecked(signedFaultStatementToJson(signed), (value) => signedFaultStatementFromJson(value));
      const key = `${id}:${seq}`;
      const existing = batch.faults.get(key) ?? this.#sql.getFaultStatement.get(id, seq);
      if (existing !== undefined && existing !== text) throw new FaultStatementConflictError(id, signed.statement.seq);
      batch.faults.set(key, text);
      return () => {
        if (this.#sql.insertFaultStatement.run(id, seq, text).changes === 0 && this.#sql.getFaultStatement.get(id, seq) !== text) {
          throw new FaultStatementConflictError(id, signed.statement.seq);
        }
        };
      });
    }

  putResult(sessionId: Hex, record: ResultRecord): Promise<void> {
    return this.#write("putResult", (batch) => {
      const id = this.#knownChannel(batch, sessionId);
      const seq = seqKey(expectUint(uintToJson(record.seq), "result.seq", 64));
      // Both are the canonical JSON the payer hashed (a packet holds at most MAX_PACKET_BYTES); not re-parsed on
      // the hot path: `ioi results` checks each against its receipt's hashes when it prints it.
      const request = expectString(record.request, "result.request", MAX_PACKET_BYTES);
      const output = expectString(record.output, "result.output", MAX_PACKET_BYTES);
      const key = `${id}:${seq}`;
      const value = `${request}\n${output}`;
      const stored = this.#sql.getResult.get(id, seq);
      const existing = batch.results.get(key) ?? (stored ? `${stored.request}\n${stored.output}` : undefined);
      if (existing !== undefined && existing !== value) throw new ResultConflictError(id, record.seq);
      batch.results.set(key, value);
      return () => {
        if (this.#sql.insertResult.run(id, seq, request, output).changes === 0) {
          const row = this.#sql.getResult.get(id, seq);
          if (row?.request !== request || row.output !== output) throw new ResultConflictError(id, record.seq);
        }
      };
    });
  }

  results(sessionId: Hex, options: StepsOptions = {}): ResultRecord[] {
    this.#assertOpen("results");
    const { fromSeq = 0n, limit } = options;
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) {
      throw new InvalidFieldError("options.limit", "a non-negative integer", limit);
    }
    if (fromSeq >= 1n << 64n) return [];
    return this.#sql.results
      .all(sessionId, seqKey(fromSeq < 0n ? 0n : fromSeq), limit ?? -1)
      .map((row) => decodeRow("results", `${sessionId}#${row.seq}`, () => ({ seq: BigInt(row.seq), request: row.request, output: row.output })));
  }

  putSessionKeyGrant(sessionId: Hex, signed: SignedSessionKeyGrant): Promise<void> {
    return this.#write("putSessionKeyGrant", (batch) => {
      const id = this.#knownChannel(batch, sessionId);
      if (signed.grant.sessionId !== id) {
        throw new InconsistentRecordError(`The session-key grant is for session ${signed.grant.sessionId}, not ${id}.`);
      }
      const text = canonChecked(signedSessionKeyGrantToJson(signed), (value) => signedSessionKeyGrantFromJson(value));
      const key = signed.grant.key.toLowerCase();
      return () => {
        this.#sql.insertGrant.run(id, key, text);
      };
    });
  }

  getFaultStatement(sessionId: Hex, seq: bigint): SignedFaultStatement | undefined {
    this.#assertOpen("getFaultStatement");
    const text = this.#sql.getFaultStatement.get(sessionId, seqKey(seq));
    if (text === undefined) return undefined;
    return decodeRow("fault_statements", `${sessionId}#${seq}`, () => {
      const signed = signedFaultStatementFromJson(parseStored(text, "SignedFaultStatement"));
      expectRowKey(signed.statement.sessionId, sessionId, "SignedFaultStatement.statement.sessionId");
      expectRowKey(signed.statement.seq, seq, "SignedFaultStatement.statement.seq");
      return signed;
    });
  }

  sessionKeyGrants(sessionId: Hex, key?: Address): SignedSessionKeyGrant[] {
    this.#assertOpen("sessionKeyGrants");
    const rows = key === undefined ? this.#sql.grants.all(sessionId) : this.#sql.grantsOfKey.all(sessionId, key.toLowerCase());
    return rows.map((row) =>
      decodeRow("session_key_grants", sessionId, () => {
        const signed = signedSessionKeyGrantFromJson(parseStored(row.grant, "SignedSessionKeyGrant"));
        expectRowKey<string>(signed.grant.sessionId, sessionId, "SignedSessionKeyGrant.grant.sessionId");
        expectRowKey<string>(signed.grant.key.toLowerCase(), row.key, "SignedSessionKeyGrant.grant.key");
        return signed;
      }),
    );
  }

  getCursor(name: string): bigint | undefined {
    this.#assertOpen("getCursor");
    const block = this.#sql.getCursor.get(name);
    if (block === undefined) return undefined;
    return decodeRow("cursors", name, () => expectUint(block, "cursors.block", 64));
  }

  setCursor(name: string, block: bigint): Promise<void> {
    return this.#write("setCursor", () => {
      const key = expectString(name, "cursor name", 256);
      const text = uintToJson(expectUint(uintToJson(block), "block", 64));
      return () => {
        this.#sql.upsertCursor.run(key, text);
      };
    });
  }

  // ------------------------------------------------------------------------------------------------
  // durability

  flush(): Promise<void> {
    return this.#whenCommitted();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const flushed = this.#whenCommitted();
    this.#commit();
    await flushed.catch(() => undefined);
    while (this.#syncing) await this.#syncing;
    this.#db.close();
    if (this.#walFd !== undefined) closeSync(this.#walFd);
    this.#walFd = undefined;
    await flushed;
  }

  /**
   * Runs `prepare` now — it validates the input, checks it against stored and pending data, claims its
   * keys in the batch and returns the closure that writes it — and enqueues the closure. Anything
   * `prepare` throws rejects this write alone; a failing commit rejects the whole batch.
   */
  #write(operation: string, prepare: (batch: Batch) => () => void): Promise<void> {
    if (this.#closed) return Promise.reject(new StoreClosedError(operation));
    let op: () => void;
    try {
      op = prepare(this.#batch);
    } catch (error) {
      return Promise.reject(error);
    }
    const batch = this.#batch;
    const done = new Promise<void>((resolve, reject) => batch.waiters.push({ resolve, reject }));
    batch.ops.push(op);
    if (batch.ops.length >= this.#batchLimit) this.#commit();
    else if (this.#syncing === undefined && !this.#commitQueued) {
      // The disk is idle: commit once the code enqueuing now is done, so the batch's fsync starts at once.
      // Otherwise the running `#sync` commits the batch when its fsync ends (see the file comment).
      this.#commitQueued = true;
      queueMicrotask(this.#commitNow);
    }
    return done;
  }

  /** Resolves when the current batch has committed (at once if nothing is pending). */
  #whenCommitted(): Promise<void> {
    const batch = this.#batch;
    if (batch.ops.length > 0) return new Promise<void>((resolve, reject) => batch.waiters.push({ resolve, reject }));
    if (this.#unsynced.length === 0 && this.#syncing === undefined) return Promise.resolve();
    // Committed batches still waiting for their fsync: wait for one that starts after them.
    return new Promise<void>((resolve, reject) => {
      this.#unsynced.push({ resolve, reject });
      this.#syncing ??= this.#sync();
    });
  }

  readonly #commitNow = (): void => {
    this.#commitQueued = false;
    this.#commit();
  };

  /** Commits the pending batch in one immediate transaction and starts the fsync that settles its promises. */
  #commit(): void {
    if (this.#commitBatch()) this.#syncing ??= this.#sync();
  }

  /**
   * Commits the pending batch in one immediate transaction; true if its waiters now wait for an fsync. A
   * failed commit rejects them all at once.
   */
  #commitBatch(): boolean {
    const batch = this.#batch;
    if (batch.ops.length === 0) return false;
    this.#batch = new Batch();
    try {
      // IMMEDIATE takes the write lock up front, so a busy database fails here, before any write.
      this.#commitOps.immediate(batch.ops);
    } catch (cause) {
      this.#stats.failedCommits++;
      // Numbers, ids and states first seen in the rolled-back transaction may not exist.
      this.#channelNos.clear();
      this.#internedIds.clear();
      this.#withState.clear();
      const error = new StoreWriteError(batch.ops.length, cause);
      for (const waiter of batch.waiters) waiter.reject(error);
      return false;
    }
    this.#noteCommitted(batch);
    this.#stats.commits++;
    this.#stats.operations += batch.ops.length;
    this.#stats.largestBatch = Math.max(this.#stats.largestBatch, batch.ops.length);
    if (this.path === ":memory:") {
      for (const waiter of batch.waiters) waiter.resolve();
      return false;
    }
    this.#unsynced.push(...batch.waiters);
    return true;
  }

  /**
   * fdatasyncs the WAL on libuv's thread pool and then settles every waiter whose batch committed before
   * the sync started; loops, committing the batch that grew meanwhile, until nothing waits. A failed sync rejects its waiters
   * (their data may or may not be on disk, so nothing may act on it as acknowledged).
   */
  async #sync(): Promise<void> {
    for (;;) {
      // The batch that grew while the previous fsync ran: writes enqueued then scheduled no commit of their own.
      this.#commitBatch();
      if (this.#unsynced.length === 0) break;
      const waiters = this.#unsynced;
      this.#unsynced = [];
      try {
        this.#walFd ??= openSync(`${resolvePath(this.path)}-wal`, "r");
        const fd = this.#walFd;
        await new Promise<void>((resolve, reject) => fdatasync(fd, (error) => (error ? reject(error) : resolve())));
        this.#stats.syncs++;
        for (const waiter of waiters) waiter.resolve();
      } catch (cause) {
        this.#stats.failedCommits++;
        const error = new StoreWriteError(waiters.length, cause);
        for (const waiter of waiters) waiter.reject(error);
      }
    }
    this.#syncing = undefined;
  }

  /** The committed step at `seq` (`key` = `sessionId:seq`), from the recent writes, the known top seq, or a query. */
  #storedStep(id: string, seq: string, key: string): { ticket: string; receipt: string | undefined } | undefined {
    const recent = this.#recentSteps.get(key);
    if (recent !== undefined) return recent;
    const no = this.#channelNo(id as Hex);
    if (no === undefined) return undefined;
    let top = this.#topSeq.get(id);
    if (top === undefined) {
      const latest = this.#sql.latestSeq.get(no);
      top = latest === undefined ? "" : seqKey(seqFromInteger(latest));
      this.#topSeq.set(id, top);
    }
    if (seq > top) return undefined; // seq keys have one width, so text order is numeric order
    const seqValue = seqFromKey(seq, "seq");
    const row = this.#sql.getStep.get(no, seqToInteger(seqValue));
    if (!row) return undefined;
    // The texts the step was written from: what the enqueue-time checks compare.
    return decodeRow("steps", `${id}#${seq}`, () => {
      const ticket = canon(decodeTicketBlob(id as Hex, seqValue, row.ticket, row.terms));
      if (row.receipt === null || row.policy === null || row.leaf === null) return { ticket, receipt: undefined };
      return { ticket, receipt: `${canon(decodeReceiptBlob(id as Hex, seqValue, row.receipt, row.policy))}\n0x${row.leaf.toString("hex")}` };
    });
  }

  /** Remembers a committed batch's steps for the next conflict checks (the newest few thousand). */
  #noteCommitted(batch: Batch): void {
    for (const id of batch.deleted) this.#forget(id);
    for (const [key, ticket] of batch.tickets) {
      const id = key.slice(0, key.indexOf(":"));
      const seq = key.slice(id.length + 1);
      const known = this.#recentSteps.get(key);
      const top = this.#topSeq.get(id);
      const fresh = top !== undefined && seq > top;
      this.#recentSteps.delete(key); // re-inserted last, so the map stays oldest-first
      // Only a row whose whole content is known is remembered: a new step, a known one, or one with its receipt.
      const receipt = batch.receipts.get(key);
      if (receipt !== undefined || known !== undefined || fresh) this.#recentSteps.set(key, { ticket, receipt: receipt ?? known?.receipt });
      if (fresh) this.#topSeq.set(id, seq);
    }
    for (const key of this.#recentSteps.keys()) {
      if (this.#recentSteps.size <= RECENT_STEPS) break;
      this.#recentSteps.delete(key);
    }
  }

  /** Drops a deleted channel from every cache. */
  #forget(id: string): void {
    this.#storedChannels.delete(id);
    this.#topSeq.delete(id);
    const no = this.#channelNos.get(id);
    if (no !== undefined) this.#withState.delete(no);
    this.#channelNos.delete(id);
    for (const key of [...this.#recentSteps.keys()]) if (key.startsWith(`${id}:`)) this.#recentSteps.delete(key);
  }

  /** The committed number of a channel, or undefined if it is not stored (reads). */
  #channelNo(sessionId: Hex): bigint | undefined {
    let no = this.#channelNos.get(sessionId);
    if (no === undefined) {
      no = this.#sql.channelNo.get(sessionId);
      if (no !== undefined) this.#channelNos.set(sessionId, no);
    }
    return no;
  }

  /** Inside a commit: the channel's number, which an earlier write of the same batch may have just created. */
  #channelNoIn(id: string): bigint {
    const no = this.#channelNo(id as Hex);
    if (no === undefined) throw new UnknownChannelError(id as Hex);
    return no;
  }

  /** Inside a commit: the id of an interned value, inserting it the first time it is seen. */
  #internedId(key: string, value: () => Buffer): bigint {
    let id = this.#internedIds.get(key);
    if (id === undefined) {
      const bytes = value();
      this.#sql.intern.run(bytes);
      id = this.#sql.internedId.get(bytes)!;
      this.#internedIds.set(key, id);
    }
    return id;
  }

  #termsId(provider: Address, termsHash: Hex): bigint {
    return this.#internedId(`t${provider.toLowerCase()}${termsHash}`, () => ticketTermsKey({ provider, termsHash } as PaymentTicket));
  }

  #policyId(policyHash: Hex, model: string): bigint {
    return this.#internedId(`p${policyHash}${model}`, () => receiptPolicyKey({ policyHash, modelSnapshotId: model } as SessionReceipt));
  }

  #hasState(no: bigint): boolean {
    if (this.#withState.has(no)) return true;
    if (this.#sql.hasAccumulatorState.get(no) === undefined) return false;
    this.#withState.add(no);
    return true;
  }

  /** The session id, checked, if the channel is stored or pending in `batch`; else {@link UnknownChannelError}. */
  #knownChannel(batch: Batch, sessionId: Hex): Hex {
    const id = expectHash(sessionId, "sessionId");
    if (batch.deleted.has(id)) throw new UnknownChannelError(id);
    if (this.#storedChannels.has(id) || batch.channels.has(id)) return id;
    if (this.#sql.channelExists.get(id) === undefined) throw new UnknownChannelError(id);
    this.#storedChannels.add(id);
    return id;
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw new StoreClosedError(operation);
  }
}
