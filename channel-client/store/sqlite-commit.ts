/**
 * The SQLite store's group commit (issue 33 item 2: moved out of `SqliteStore`, decision 0021): the pending batch,
 * its one immediate transaction, and the WAL's fsync off the event loop.
 *
 * Group commit: every write checks its input, claims its keys and enqueues a closure, returning a
 * promise. The queue is committed in ONE immediate transaction, or at once when it holds `batchLimit` writes.
 * When is adaptive (issue 15; issue 31 item 5). An idle store — no fsync in flight, and the previous batch held at
 * most `IDLE_BATCH_OPS` writes (one call at a time) — commits as soon as the code that enqueued the first write
 * is done (a microtask), so its fsync starts at once. A busy store commits at the end of the first turn of the
 * event loop that added no write to the queue, or once it holds `coalesceOps` writes, or `coalesceMs` after its
 * first write, whichever comes first, so it gathers the calls of several socket reads into one commit: a commit
 * costs about the same few hundred µs of CPU (its WAL frames, their writes, the fsync) whether it carries 8 calls
 * or 32, so a busy node's CPU per call falls when its batches grow past the 8 calls one fsync used to gather. A
 * committed batch is fsynced as soon as no other fsync is in flight; one committed while an fsync runs waits for
 * the next. Every promise of the batch resolves only after that COMMIT returned AND an `fdatasync` of the WAL
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
import { closeSync, fdatasync, openSync } from "node:fs";
import { resolve as resolvePath } from "node:path";
import type Database from "better-sqlite3";

import { StoreClosedError, StoreWriteError } from "./errors";

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

type Waiter = { resolve: () => void; reject: (error: unknown) => void };

/**
 * When a batch that is still growing is committed anyway: at this many writes (a paid call is two, its step and its
 * result), or this long after its first write. The delay bounds what coalescing adds to a call's latency.
 */
export const DEFAULT_COALESCE = { ops: 128, ms: 4 };

/** A previous batch of at most this many writes (a call's step, result and fault statement) leaves the store idle. */
const IDLE_BATCH_OPS = 4;

/** The writes waiting for the next group commit, and the keys they claim (for conflict checks before commit). */
export class Batch {
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

/** What the store learns of each commit: a committed batch (its caches note it), or a rolled-back one (they forget). */
export type GroupCommitHooks = {
  committed(batch: Batch): void;
  rolledBack(): void;
};

/** The pending batch of a SQLite store and its commit and fsync (see the file comment). */
export class SqliteGroupCommit {
  readonly #db: Database.Database;
  readonly #path: string;
  readonly #hooks: GroupCommitHooks;
  readonly #commitOps: Database.Transaction<(ops: Array<() => void>) => void>;
  readonly #batchLimit: number;
  readonly #stats: SqliteStoreStats = { commits: 0, failedCommits: 0, operations: 0, largestBatch: 0, syncs: 0 };
  #batch = new Batch();
  /** A microtask (idle) or an end-of-turn check (busy) will commit the pending batch (see the file comment). */
  #commitQueued = false;
  /** Writes the pending batch held at the last check, and when its first write came (performance.now()). */
  #seenOps = 0;
  #batchStarted = 0;
  /** Writes the last committed batch held: a store whose batches hold more is busy (see the file comment). */
  #lastBatchOps = 0;
  readonly #coalesceOps: number;
  readonly #coalesceMs: number;
  #closed = false;
  /** Waiters of committed batches whose WAL fsync has not started yet. */
  #unsynced: Waiter[] = [];
  /** The fsync in flight, if any; a new one starts when it ends and `#unsynced` is not empty. */
  #syncing: Promise<void> | undefined;
  /** File descriptor of the WAL, opened at the first sync; undefined for an in-memory store. */
  #walFd: number | undefined;

  constructor(db: Database.Database, path: string, batchLimit: number, hooks: GroupCommitHooks, coalesce: { ops: number; ms: number } = DEFAULT_COALESCE) {
    this.#db = db;
    this.#path = path;
    this.#hooks = hooks;
    this.#commitOps = db.transaction((ops: Array<() => void>) => {
      for (const op of ops) op();
    });
    this.#batchLimit = batchLimit;
    this.#coalesceOps = Math.min(coalesce.ops, batchLimit);
    this.#coalesceMs = coalesce.ms;
  }

  /** A snapshot of the commit counters. */
  get stats(): SqliteStoreStats {
    return { ...this.#stats };
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Stops taking writes, commits and syncs what is pending, then closes the database and the WAL's descriptor. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const flushed = this.whenCommitted();
    this.commit();
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
  write(operation: string, prepare: (batch: Batch) => () => void): Promise<void> {
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
    if (batch.ops.length >= this.#batchLimit) this.commit();
    else if (!this.#commitQueued) {
      this.#commitQueued = true;
      this.#seenOps = 0;
      this.#batchStarted = performance.now();
      if (this.#syncing === undefined && this.#lastBatchOps <= IDLE_BATCH_OPS) queueMicrotask(this.#commitNow);
      else setImmediate(this.#commitUnlessGrowing);
    }
    return done;
  }

  /** Resolves when the current batch has committed (at once if nothing is pending). */
  whenCommitted(): Promise<void> {
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
    this.commit();
  };

  /** At the end of a turn: commits the batch unless that turn added writes to it and it may still wait (see the file comment). */
  readonly #commitUnlessGrowing = (): void => {
    const size = this.#batch.ops.length;
    if (size === 0) {
      this.#commitQueued = false; // committed meanwhile (its limit, whenCommitted's caller, close)
      return;
    }
    const growing = size > this.#seenOps;
    this.#seenOps = size;
    if (growing && size < this.#coalesceOps && performance.now() - this.#batchStarted < this.#coalesceMs) {
      setImmediate(this.#commitUnlessGrowing);
      return;
    }
    this.#commitQueued = false;
    this.commit();
  };

  /** Commits the pending batch in one immediate transaction and starts the fsync that settles its promises. */
  commit(): void {
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
    this.#seenOps = 0;
    this.#batchStarted = performance.now();
    this.#lastBatchOps = batch.ops.length;
    try {
      // IMMEDIATE takes the write lock up front, so a busy database fails here, before any write.
      this.#commitOps.immediate(batch.ops);
    } catch (cause) {
      this.#stats.failedCommits++;
      // Numbers, ids and states first seen in the rolled-back transaction may not exist.
      this.#hooks.rolledBack();
      const error = new StoreWriteError(batch.ops.length, cause);
      for (const waiter of batch.waiters) waiter.reject(error);
      return false;
    }
    this.#hooks.committed(batch);
    this.#stats.commits++;
    this.#stats.operations += batch.ops.length;
    this.#stats.largestBatch = Math.max(this.#stats.largestBatch, batch.ops.length);
    if (this.#path === ":memory:") {
      for (const waiter of batch.waiters) waiter.resolve();
      return false;
    }
    this.#unsynced.push(...batch.waiters);
    return true;
  }

  /**
   * fdatasyncs the WAL on libuv's thread pool and then settles every waiter whose batch committed before
   * the sync started; loops while batches committed during an fsync wait for the next. A failed sync rejects its waiters
   * (their data may or may not be on disk, so nothing may act on it as acknowledged).
   */
  async #sync(): Promise<void> {
    for (;;) {
      if (this.#unsynced.length === 0) break;
      const waiters = this.#unsynced;
      this.#unsynced = [];
      try {
        this.#walFd ??= openSync(`${resolvePath(this.#path)}-wal`, "r");
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
}
