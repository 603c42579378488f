/**
 * The embedded channel store: one SQLite file (better-sqlite3) in WAL mode, written by group commit, with
 * the WAL's fsync taken off the event loop.
 *
 * Group commit (every write enqueued, one immediate transaction per batch, each promise settled only after the
 * COMMIT and an fdatasync of the WAL that started after it) is `SqliteGroupCommit` in sqlite-commit.ts, which
 * explains it; the key and record caches the conflict checks read are `SqliteKeys` in sqlite-keys.ts.
 */

import { statSync } from "node:fs";
import Database from "better-sqlite3";
import type { Address, Hex } from "viem";
import { InvalidFieldError } from "../core/errors";
import { signedFaultStatementFromJson, signedFaultStatementToJson, type SignedFaultStatement } from "../core/fault-statement";
import { signedReceiptCommitFromJson, type SignedReceiptCommit } from "../core/receipt-commit";
import { type SignedPaymentTicket } from "../core/ticket";
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
  TicketConflictError,
  UnknownChannelError,
  UnsupportedSchemaError,
} from "./errors";
import {
  canonChecked,
  channelFromJson,
  encodeReceiptBlob,
  encodeTicketBlob,
  peaksFromBlob,
  receiptBlobAmount,
  seqFromInteger,
  seqToInteger,
  channelToJson,
  closingRecordFromJson,
  closingRecordToJson,
  cooperativeCloseFromJson,
  cooperativeCloseToJson,
  parseStored,
  seqFromKey,
  seqKey,
  signedReceiptCommitToJson,
  assertStepParts,
  signedReceiptText,
  signedTicketText,
} from "./records";
import { ACCUMULATOR_STATE_INTERVAL, migrate } from "./schema";
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
} from "./sqlite-rows";

import { SqliteGroupCommit, type SqliteStoreStats } from "./sqlite-commit";
import { SqliteKeys } from "./sqlite-keys";

// The prepared statements and the row codecs are in sqlite-rows.ts, the group commit in sqlite-commit.ts.
export type { SqliteStoreStats } from "./sqlite-commit";

export type SqliteStoreOptions = {
  /** Most writes one group commit carries; reaching it commits at once. Default 1000. */
  batchLimit?: number;
  /** How long a commit waits for another connection's write lock before failing, in ms. Default 5000. */
  busyTimeoutMs?: number;
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
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;


export class SqliteStore implements ChannelStore {
  readonly #db: Database.Database;
  readonly #sql: Statements;
  /** The pending batch, its commit and the WAL's fsync (sqlite-commit.ts). */
  readonly #commits: SqliteGroupCommit;
  /** Channels, recent steps, numbers and interned ids the conflict checks and commits read (sqlite-keys.ts). */
  readonly #keys: SqliteKeys;

  private constructor(db: Database.Database, readonly path: string, batchLimit: number) {
    this.#db = db;
    this.#sql = prepareStatements(db);
    const keys = new SqliteKeys(this.#sql);
    this.#keys = keys;
    this.#commits = new SqliteGroupCommit(db, path, batchLimit, {
      committed: (batch) => keys.noteCommitted(batch),
      rolledBack: () => keys.rolledBack(),
    });
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
    return this.#commits.stats;
  }

  get closed(): boolean {
    return this.#commits.closed;
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
    return this.#commits.write("putChannel", (batch) => {
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
    return this.#commits.write("updateChannel", (batch) => {
      const id = this.#keys.knownChannel(batch, sessionId);
      const deposit = patch.deposit === undefined ? null : depositText(patch.deposit, "patch.deposit");
      const status = patch.status === undefined ? null : expectLiteral(patch.status, "patch.status", CHANNEL_STATUSES);
      return () => {
        if (this.#sql.updateChannel.run(deposit, status, id).changes === 0) throw new UnknownChannelError(id);
      };
    });
  }

  deleteChannel(sessionId: Hex, pruned: PrunedChannelRecord): Promise<void> {
    return this.#commits.write("deleteChannel", (batch) => {
      const id = this.#keys.knownChannel(batch, sessionId);
      const prunedAt = expectUint(uintToJson(pruned.prunedAt), "pruned.prunedAt", 40);
      const archive = expectString(pruned.archive, "pruned.archive", 4096);
      batch.deleted.add(id);
      return () => {
        const no = this.#keys.channelNoIn(id);
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
    return this.#commits.write("putTicket", (batch) => {
      const id = expectHash(sessionId, "sessionId");
      if (signed.ticket.sessionId !== id) {
        throw new InconsistentRecordError(`The ticket is for session ${signed.ticket.sessionId}, not ${id}.`);
      }
      const seq = seqKey(signed.ticket.seq);
      const text = signedTicketText(signed);
      this.#keys.knownChannel(batch, id);
      const key = `${id}:${seq}`;
      const existing = batch.tickets.get(key) ?? this.#keys.storedStep(id, seq, key)?.ticket;
      if (existing !== undefined && existing !== text) throw new TicketConflictError(id, signed.ticket.seq);
      batch.tickets.set(key, text);
      const blob = encodeTicketBlob(signed);
      const seqInt = seqToInteger(signed.ticket.seq);
      const t = signed.ticket;
      return () => {
        const no = this.#keys.channelNoIn(id);
        const terms = this.#keys.termsId(t.provider, t.termsHash);
        if (this.#sql.insertTicket.run(no, seqInt, blob, terms).changes === 0) {
          const row = this.#sql.rawStep.get(no, seqInt);
          // Only a writer outside this store (another process) can get here; it fails the whole batch.
          if (!row || !row.ticket.equals(blob) || row.terms !== terms) throw new TicketConflictError(id, signed.ticket.seq);
        }
      };
    });
  }

  putStep(sessionId: Hex, step: Required<StepRecord>, accumulator?: AccumulatorState): Promise<void> {
    return this.#commits.write("putStep", (batch) => {
      const id = expectHash(sessionId, "sessionId");
      const { ticket, receipt } = step;
      assertStepParts(id, step);
      const seq = seqKey(step.seq);
      const leaf = expectHash(step.leaf, "step.leaf");
      const ticketText = signedTicketText(ticket);
      const receiptText = signedReceiptText(receipt);
      this.#keys.knownChannel(batch, id);
      const key = `${id}:${seq}`;
      let existingTicket = batch.tickets.get(key);
      let existingReceipt = batch.receipts.get(key);
      if (existingTicket === undefined || existingReceipt === undefined) {
        const stored = this.#keys.storedStep(id, seq, key);
        existingTicket ??= stored?.ticket;
        existingReceipt ??= stored?.receipt;
      }
      const receiptValue = `${receiptText}\n${leaf}`;
      if (existingTicket !== undefined && existingTicket !== ticketText) throw new TicketConflictError(id, step.seq);
      if (existingReceipt !== undefined && existingReceipt !== receiptValue) throw new ReceiptConflictError(id, step.seq);
      // A state is kept every ACCUMULATOR_STATE_INTERVAL receipts and at a channel's first (below): one that
      // will not be kept is neither encoded nor asked for its peaks.
      const kept = accumulator !== undefined && (accumulator.leafCount % ACCUMULATOR_STATE_INTERVAL === 0 || !this.#keys.stateKnown(id));
      const state = kept ? accumulatorStateRow(accumulator, step.seq) : undefined;
      batch.tickets.set(key, ticketText);
      batch.receipts.set(key, receiptValue);
      const seqInt = seqToInteger(step.seq);
      const ticketBlob = encodeTicketBlob(ticket);
      const receiptBlob = encodeReceiptBlob(receipt);
      const leafBlob = Buffer.from(leaf.slice(2), "hex");
      const t = ticket.ticket;
      const r = receipt.receipt;
      return () => {
        const no = this.#keys.channelNoIn(id);
        const terms = this.#keys.termsId(t.provider, t.termsHash);
        const policy = this.#keys.policyId(r.policyHash, r.modelSnapshotId);
        // In the step's own transaction. States are kept every ACCUMULATOR_STATE_INTERVAL receipts and at a
        // channel's first; `accumulatorState` recomputes the others from the leaves after the nearest one.
        if (state && (state.leafCount % ACCUMULATOR_STATE_INTERVAL === 0 || !this.#keys.hasState(no))) {
          this.#sql.insertAccumulatorState.run(no, state.leafCount, seqInt, state.peaks, state.charged);
          this.#keys.withState.add(no);
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
    const no = this.#keys.channelNo(sessionId);
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
    const no = this.#keys.channelNo(sessionId);
    if (no === undefined) return [];
    // SQLite reads a negative LIMIT as "no limit".
    const rows = this.#sql.steps.all(no, seqToInteger(fromSeq < 0n ? 0n : fromSeq), limit ?? -1);
    return rows.map((row) => decodeStepRow(sessionId, row));
  }

  leaves(sessionId: Hex): Hex[] {
    this.#assertOpen("leaves");
    const no = this.#keys.channelNo(sessionId);
    if (no === undefined) return [];
    return this.#sql.leaves.all(no).map((leaf) => `0x${leaf.toString("hex")}` as Hex);
  }

  accumulatorState(sessionId: Hex, at?: { leafCount: number }): (AccumulatorState & { seq: bigint }) | undefined {
    this.#assertOpen("accumulatorState");
    if (at !== undefined && (!Number.isSafeInteger(at.leafCount) || at.leafCount < 0)) {
      throw new InvalidFieldError("at.leafCount", "a non-negative integer", at.leafCount);
    }
    const no = this.#keys.channelNo(sessionId);
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
    const no = this.#keys.channelNo(sessionId);
    const row = no === undefined ? undefined : this.#sql.latestAnsweredStep.get(no);
    return row ? decodeStepRow(sessionId, row) : undefined;
  }

  receiptCount(sessionId: Hex): number {
    this.#assertOpen("receiptCount");
    const no = this.#keys.channelNo(sessionId);
    return no === undefined ? 0 : (this.#sql.receiptCount.get(no) ?? 0);
  }

  // ------------------------------------------------------------------------------------------------
  // receipt commits

  putCommit(sessionId: Hex, by: ChannelRole, signed: SignedReceiptCommit): Promise<void> {
    return this.#commits.write("putCommit", (batch) => {
      const id = expectHash(sessionId, "sessionId");
      const role = expectLiteral(by, "by", CHANNEL_ROLES);
      if (signed.commit.sessionId !== id) {
        throw new InconsistentRecordError(`The receipt commit is for session ${signed.commit.sessionId}, not ${id}.`);
      }
      const leafCount = seqKey(signed.commit.leafCount);
      const text = canonChecked(signedReceiptCommitToJson(signed), (value) => signedReceiptCommitFromJson(value));
      this.#keys.knownChannel(batch, id);
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
    return this.#commits.write("putClosing", (batch) => {
      const id = this.#keys.knownChannel(batch, sessionId);
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
    return this.#commits.write("putCooperativeClose", (batch) => {
      const id = this.#keys.knownChannel(batch, sessionId);
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
    return this.#commits.write("putFaultStatement", (batch) => {
      const id = this.#keys.knownChannel(batch, sessionId);
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
    return this.#commits.write("putResult", (batch) => {
      const id = this.#keys.knownChannel(batch, sessionId);
      const seq = seqKey(expectUint(uintToJson(record.seq), "result.seq", 64));
      // Both are the canonical JSON the payer hashed (a packet holds at most MAX_PACKET_BYTES); not re-parsed on
      // the hot path: `ioi results` checks each against its receipt's hashes when it prints it.
      const request = expectString(record.request, "result.request", MAX_PACKET_BYTES);
      const output = expectString(record.output, "result.output", MAX_PACKET_BYTES);
      const key = `${id}:${seq}`;
      const value = `${request}\n${output}`;
      const seqInteger = seqToInteger(record.seq);
      // resultMayExist is false for a channel with no number yet (first stored in this batch): nothing to read.
      const stored = batch.results.has(key) || !this.#keys.resultMayExist(id, seq) ? undefined : this.#sql.getResult.get(this.#keys.channelNoIn(id), seqInteger);
      const existing = batch.results.get(key) ?? (stored ? `${stored.request}\n${stored.output}` : undefined);
      if (existing !== undefined && existing !== value) throw new ResultConflictError(id, record.seq);
      batch.results.set(key, value);
      return () => {
        const no = this.#keys.channelNoIn(id);
        if (this.#sql.insertResult.run(no, seqInteger, request, output).changes === 0) {
          const row = this.#sql.getResult.get(no, seqInteger);
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
    const no = this.#keys.channelNo(sessionId);
    if (no === undefined) return [];
    return this.#sql.results
      .all(no, seqToInteger(fromSeq < 0n ? 0n : fromSeq), limit ?? -1)
      .map((row) => ({ seq: seqFromInteger(row.seq), request: row.request, output: row.output }));
  }

  putSessionKeyGrant(sessionId: Hex, signed: SignedSessionKeyGrant): Promise<void> {
    return this.#commits.write("putSessionKeyGrant", (batch) => {
      const id = this.#keys.knownChannel(batch, sessionId);
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
    return this.#commits.write("setCursor", () => {
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
    return this.#commits.whenCommitted();
  }

  close(): Promise<void> {
    return this.#commits.close();
  }


  #assertOpen(operation: string): void {
    if (this.#commits.closed) throw new StoreClosedError(operation);
  }
}
