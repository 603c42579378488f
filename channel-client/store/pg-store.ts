/**
 * The channel store on PostgreSQL (`pg`), for a provider that runs as several processes (decision 0036).
 *
 * Reads stay synchronous (the `ChannelStore` seam): the store is a write-through cache. A process holds in
 * memory every channel it serves — all of them when opened with `mode: "all"` (one process per provider,
 * and payers), or only those it took over with `take()` in `mode: "fleet"` — and serves reads from there.
 * A write is checked against the cache and the writes still pending, then committed in a Postgres
 * transaction; the cache changes only once that COMMIT returned, so a read sees only committed data and a
 * write's promise resolves only once Postgres made it durable (`synchronous_commit = on`, the default).
 *
 * Writes of one channel are committed in order, one transaction per batch (group commit per channel: what
 * queued while a commit was in flight goes in the next one), so "durable writes keep their order" holds as in
 * SQLite; different channels commit in parallel over the connection pool and Postgres shares their WAL
 * flushes.
 *
 * Fencing (mode "fleet"): each channel has a row in `channel_owners` with an epoch that `take()` raises by
 * one, under the row's lock, before it loads the channel. Every batch of that channel first reads the epoch
 * `FOR SHARE` inside its transaction and rolls back with a `FencedError` unless it is the epoch this process
 * took — so a process that was paused, partitioned or slow while another took the channel over can never
 * commit a step (and so never answer a receipt) for it. A take-over waits for a batch that passed its check to
 * commit, and then loads what it wrote.
 */

import os from "node:os";
import { randomBytes } from "node:crypto";
import pg from "pg";
import type { Address, Hex } from "viem";
import { InvalidFieldError } from "../core/errors";
import { signedFaultStatementFromJson, type SignedFaultStatement } from "../core/fault-statement";
import { signedReceiptCommitFromJson, type SignedReceiptCommit } from "../core/receipt-commit";
import type { SignedPaymentTicket } from "../core/ticket";
import { signedSessionKeyGrantFromJson, type SignedSessionKeyGrant } from "../core/session-key";
import { expectHash } from "../core/validate";
import { StoreCorruptionError, StoreOpenError, StoreWriteError, UnsupportedSchemaError } from "./errors";
import { pgMigrate } from "./pg-schema";
import { closingRecordFromJson, closingRecordToJson, cooperativeCloseFromJson } from "./records";
import {
  type AccumulatorState,
  type ChannelPatch,
  type ChannelRecord,
  type ChannelRole,
  type ChannelStore,
  type ClosingRecord,
  type CooperativeCloseRecord,
  type ListChannelsFilter,
  type PrunedChannelRecord,
  type ResultRecord,
  type StepRecord,
  type StepsOptions,
} from "./store";
import { lowerBound } from "./pg-cache";
import { type ChannelRow, bufHex, cloneRecord, hexBuf, redact, stepRecord } from "./pg-rows";
import { PgState, type PgStoreMode } from "./pg-state";
import { PgWriteQueues, type PgStoreStats } from "./pg-queues";
import { PgWatch } from "./pg-watch";
import * as writes from "./pg-writes";

// The channel cache and pending writes are in pg-cache.ts, the row types and codecs in pg-rows.ts; what the store
// holds and loads in pg-state.ts, its write queues (group commit, fencing) in pg-queues.ts, its writes in
// pg-writes.ts, and `watch()`/`refresh()` in pg-watch.ts (issue 33 item 2).
export type { PgStoreMode } from "./pg-state";
export type { PgStoreStats } from "./pg-queues";

export type PgStoreOptions = {
  /**
   * "all" (default): every channel is loaded at open and writes are not fenced — one process per store.
   * "fleet": several processes share the database; a process reads and writes only the channels it took
   * over with `take()`, and every write checks its fencing epoch.
   * "duties": the elected process's chain duties (watchtower, finalise, claim) over every channel: all are
   * loaded, `refresh()` reads what the serving processes wrote since, and every write checks the leader epoch
   * given to `lead()`.
   */
  mode?: PgStoreMode;
  /** This process's name in the fleet tables (default host:pid:random). */
  owner?: string;
  /** Connections in the pool (default 8). */
  poolSize?: number;
  /** Most writes one transaction of a channel carries (default 500). */
  batchLimit?: number;
  /** How long to wait for a connection, in ms (default 10 s). */
  connectionTimeoutMs?: number;
  /**
   * Every transaction read-only (`default_transaction_read_only`): for commands that only read every channel of
   * a fleet's database (`ioi channels`, `ioi export`); a write is refused by PostgreSQL. Takes no fencing epoch.
   */
  readOnly?: boolean;
};

/** What a store holds in memory (tests, metrics): channels held in full, records, epochs, write queues. */
export type PgStoreMemory = { held: number; records: number; epochs: number; queues: number; pending: number };

/** What `take()` returns: the epoch this process now holds the channel under. */
export type Ownership = { sessionId: Hex; epoch: bigint; owner: string };

const DEFAULT_POOL_SIZE = 8;
const DEFAULT_BATCH_LIMIT = 500;

export class PgStore implements ChannelStore {
  readonly owner: string;
  /** The pool, the channels held, the write queues' maps and the loaders (pg-state.ts). */
  readonly #s: PgState;
  /** The per-channel write queues: group commit, fencing and leader checks (pg-queues.ts). */
  readonly #writes: PgWriteQueues;
  /** `watch()` and `refresh()`: what other processes wrote (pg-watch.ts). */
  readonly #watch: PgWatch;

  private constructor(pool: pg.Pool, mode: PgStoreMode, owner: string, batchLimit: number, readonly where: string, url: string) {
    this.owner = owner;
    this.#s = new PgState(pool, mode, owner, where, url);
    const hooks = { release: (sessionId: Hex) => this.release(sessionId), load: (sessionId: Hex) => this.load(sessionId) };
    this.#writes = new PgWriteQueues(this.#s, batchLimit, hooks);
    this.#watch = new PgWatch(this.#s, hooks);
  }

  /**
   * Connects to the database at `url`, migrates its schema and loads what the mode says (every channel in
   * "all"; the channel list and cursors in "fleet"). Throws {@link StoreOpenError} if the database cannot be
   * reached and {@link UnsupportedSchemaError} if it is not a channel store or was written by a newer client.
   */
  static async open(url: string, options: PgStoreOptions = {}): Promise<PgStore> {
    const { mode = "all", poolSize = DEFAULT_POOL_SIZE, batchLimit = DEFAULT_BATCH_LIMIT, connectionTimeoutMs = 10_000 } = options;
    if (mode !== "all" && mode !== "fleet" && mode !== "duties") throw new InvalidFieldError("options.mode", '"all", "fleet" or "duties"', mode);
    if (!Number.isSafeInteger(poolSize) || poolSize < 1) throw new InvalidFieldError("options.poolSize", "a positive integer", poolSize);
    if (!Number.isSafeInteger(batchLimit) || batchLimit < 1) throw new InvalidFieldError("options.batchLimit", "a positive integer", batchLimit);
    const owner = options.owner ?? `${os.hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
    const where = redact(url);
    const pool = new pg.Pool({
      connectionString: url,
      max: poolSize,
      connectionTimeoutMillis: connectionTimeoutMs,
      ...(options.readOnly ? { options: "-c default_transaction_read_only=on" } : {}),
    });
    // An idle connection the server dropped (a restart, pg_terminate_backend) is replaced on next use; it must
    // not crash the process.
    pool.on("error", () => undefined);
    // Likewise a connection killed while checked out: its query rejects (the write fails); the client's own
    // error event must not crash the process either.
    pool.on("connect", (client) => client.on("error", () => undefined));
    let client: pg.PoolClient | undefined;
    try {
      client = await pool.connect();
      await pgMigrate(client, where);
      const store = new PgStore(pool, mode, owner, batchLimit, where, url);
      await store.#s.loadAll(client);
      client.release();
      return store;
    } catch (cause) {
      client?.release(true);
      await pool.end().catch(() => undefined);
      if (cause instanceof UnsupportedSchemaError || cause instanceof StoreCorruptionError) throw cause;
      throw new StoreOpenError(`Cannot open the channel store at ${where}.`, {
        cause,
        details: cause instanceof Error ? cause.message : String(cause),
      });
    }
  }

  get mode(): PgStoreMode {
    return this.#s.mode;
  }

  get stats(): PgStoreStats {
    return { ...this.#writes.stats };
  }

  /** What this process holds in memory: in fleet mode only the channels it serves (released ones leave it). */
  get memory(): PgStoreMemory {
    return { held: this.#s.held.size, records: this.#s.records.size, epochs: this.#s.epochs.size, queues: this.#s.queues.size, pending: this.#s.pending.size };
  }

  get closed(): boolean {
    return this.#s.closed;
  }

  // ------------------------------------------------------------------------------------------------
  // fleet: ownership

  /**
   * Takes the channel over (decision 0036): raises its fencing epoch by one under the row's lock and, in the
   * same transaction, loads everything stored for it into this process. From then on every write another
   * process makes to it is refused with `FencedError`, and so is every write this process made under an older
   * epoch that had not committed yet. Works for a channel that has no record yet (its first writer owns it).
   */
  async take(sessionId: Hex, leaseMs = 30_000): Promise<Ownership> {
    this.#s.assertOpen("take");
    const id = expectHash(sessionId, "sessionId");
    await this.#writes.drainChannel(id);
    const client = await this.#s.connect();
    let epoch: bigint;
    try {
      await client.query("BEGIN");
      const taken = await client.query<{ epoch: string }>(
        `INSERT INTO channel_owners (session_id, owner, epoch, lease_until) VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
         ON CONFLICT (session_id) DO UPDATE
         SET owner = excluded.owner, epoch = channel_owners.epoch + 1, lease_until = excluded.lease_until
         RETURNING epoch`,
        [hexBuf(id), this.owner, leaseMs],
      );
      epoch = BigInt(taken.rows[0]!.epoch);
      // Drop what this process held of it: the rows are read again, under the new epoch's lock.
      this.#s.held.delete(id);
      this.#s.epochs.delete(id);
      const channel = await client.query<ChannelRow>("SELECT * FROM channels WHERE session_id = $1", [hexBuf(id)]);
      if (channel.rows[0]) await this.#s.loadChannels(client, channel.rows);
      const gone = await client.query<{ pruned_at: string; archive: string }>("SELECT pruned_at, archive FROM pruned_channels WHERE session_id = $1", [hexBuf(id)]);
      if (gone.rows[0]) this.#s.pruned.set(id, { prunedAt: BigInt(gone.rows[0].pruned_at), archive: gone.rows[0].archive });
      await client.query("COMMIT");
      client.release();
    } catch (cause) {
      await client.query("ROLLBACK").catch(() => undefined);
      client.release(true);
      this.#s.held.delete(id);
      throw new StoreWriteError(1, cause);
    }
    this.#s.epochs.set(id, epoch);
    return { sessionId: id, epoch, owner: this.owner };
  }

  /** Duties mode: writes are fenced by this leader epoch from now on (undefined: every write is refused). */
  lead(leader: { name: string; epoch: bigint } | undefined): void {
    this.#writes.leader = leader;
  }

  /**
   * Duties mode: reads what the serving processes wrote since the last call — new channels, changed records
   * (a channel whose status or deposit moved is read again in full), and every step beyond the newest one held
   * (`PgWatch.refresh`).
   */
  async refresh(): Promise<void> {
    return this.#watch.refresh();
  }

  /**
   * Listens for what other processes write (decision 0036, issue 31 gaps; `PgWatch.watch`): `refresh()` then reads
   * only the channels notified since, and in fleet mode a channel another process took over is released at once
   * and `onTakenOver` is told. One extra connection, outside the pool.
   */
  async watch(options: { safetyMs?: number; onTakenOver?: (sessionId: Hex) => void } = {}): Promise<void> {
    return this.#watch.watch(options);
  }

  /** Counters of `refresh()`: full reads of every channel, and reads of only what was notified. */
  get refreshes(): { full: number; changed: number } {
    return this.#watch.refreshes;
  }

  /**
   * The newest ticket the database holds for a channel (its seq and signature), read without taking the channel:
   * what a payment over MCP (x402) must not be older than before it may move the channel to this process.
   */
  async newestTicket(sessionId: Hex): Promise<{ seq: bigint; signature: Hex } | undefined> {
    this.#s.assertOpen("newestTicket");
    const rows = await this.#s.query<{ seq: string; ticket_sig: Buffer }>(
      "SELECT s.seq, s.ticket_sig FROM steps s JOIN channels c ON c.id = s.channel_id WHERE c.session_id = $1 ORDER BY s.seq DESC LIMIT 1",
      [hexBuf(expectHash(sessionId, "sessionId"))],
    );
    const row = rows[0];
    return row ? { seq: BigInt(row.seq), signature: bufHex(row.ticket_sig) } : undefined;
  }

  /** The epoch this process holds the channel under, if it holds it (fleet mode). */
  epochOf(sessionId: Hex): bigint | undefined {
    return this.#s.epochs.get(sessionId);
  }

  /**
   * Forgets a channel this process no longer serves (it stays in the database): in fleet mode its rows, its
   * record and, once idle, its write queue leave memory, so a process holds only the channels it serves.
   */
  release(sessionId: Hex): void {
    this.#s.epochs.delete(sessionId);
    if (this.#s.mode !== "fleet") return;
    this.#s.held.delete(sessionId);
    this.#s.records.delete(sessionId);
    const queue = this.#s.queues.get(sessionId);
    if (!queue || (!queue.running && queue.ops.length === 0)) {
      this.#s.queues.delete(sessionId);
      this.#s.pending.delete(sessionId);
    }
  }

  /**
   * Loads (or reloads) a channel's rows into memory without taking it over: what the leader's chain duties
   * read (decision 0036). Writes to it stay fenced unless this process `take`s it.
   */
  async load(sessionId: Hex): Promise<void> {
    this.#s.assertOpen("load");
    const id = expectHash(sessionId, "sessionId");
    const client = await this.#s.connect();
    try {
      const channel = await client.query<ChannelRow>("SELECT * FROM channels WHERE session_id = $1", [hexBuf(id)]);
      if (channel.rows[0]) await this.#s.loadChannels(client, channel.rows);
      client.release();
    } catch (cause) {
      client.release(true);
      throw cause;
    }
  }

  /** Reloads the channel list (fleet: channels other processes stored since). */
  async refreshChannels(): Promise<void> {
    const rows = await this.#s.query<ChannelRow>("SELECT * FROM channels ORDER BY id");
    for (const row of rows) this.#s.noteRecord(row);
    const pruned = await this.#s.query<{ session_id: Buffer; pruned_at: string; archive: string }>("SELECT session_id, pruned_at, archive FROM pruned_channels");
    for (const row of pruned) {
      const id = bufHex(row.session_id);
      this.#s.pruned.set(id, { prunedAt: BigInt(row.pruned_at), archive: row.archive });
      this.#s.records.delete(id);
    }
  }

  /**
   * Runs `sql` on a pooled connection (fleet tables, diagnostics). Not for the channel tables: their writes
   * go through the store's methods.
   */
  async query<T extends pg.QueryResultRow>(sql: string, parameters: unknown[] = []): Promise<T[]> {
    this.#s.assertOpen("query");
    return this.#s.query<T>(sql, parameters);
  }

  /**
   * Bytes on disk (pg_total_relation_size: rows, indexes, TOAST) of the store's tables, and the receipts stored.
   * `bytes` is every table but `results`; `resultBytes` is `results`, the requests and outputs kept for replay: the
   * application's payload, sized by it and off with `--drop-results`, so not counted in the bound per receipt
   * (decision 0008; the SQLite figure leaves them out the same way).
   */
  async size(): Promise<{ bytes: number; resultBytes: number; receipts: number; steps: number }> {
    const [row] = await this.#s.query<{ bytes: string | null; result_bytes: string | null; receipts: string; steps: string }>(
      `SELECT (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname <> 'results') AS bytes,
              pg_total_relation_size('results') AS result_bytes,
              (SELECT count(*) FROM steps WHERE leaf IS NOT NULL) AS receipts,
              (SELECT count(*) FROM steps) AS steps`,
    );
    return { bytes: Number(row!.bytes ?? 0), resultBytes: Number(row!.result_bytes ?? 0), receipts: Number(row!.receipts), steps: Number(row!.steps) };
  }

  // ------------------------------------------------------------------------------------------------
  // channels

  putChannel(record: ChannelRecord): Promise<void> {
    return writes.putChannel(this.#s, this.#writes, record);
  }

  updateChannel(sessionId: Hex, patch: ChannelPatch): Promise<void> {
    return writes.updateChannel(this.#s, this.#writes, sessionId, patch);
  }

  deleteChannel(sessionId: Hex, pruned: PrunedChannelRecord): Promise<void> {
    return writes.deleteChannel(this.#s, this.#writes, sessionId, pruned);
  }

  prunedChannel(sessionId: Hex): PrunedChannelRecord | undefined {
    this.#s.assertOpen("prunedChannel");
    const pruned = this.#s.pruned.get(sessionId);
    return pruned && { ...pruned };
  }

  getChannel(sessionId: Hex): ChannelRecord | undefined {
    this.#s.assertOpen("getChannel");
    const known = this.#s.records.get(sessionId);
    return known && cloneRecord(known.record);
  }

  listChannels(filter: ListChannelsFilter = {}): ChannelRecord[] {
    this.#s.assertOpen("listChannels");
    return [...this.#s.records.values()]
      .sort((a, b) => a.id - b.id)
      .map((known) => known.record)
      .filter((r) => (filter.role === undefined || r.role === filter.role) && (filter.status === undefined || r.status === filter.status))
      .map(cloneRecord);
  }

  // ------------------------------------------------------------------------------------------------
  // tickets and steps

  putTicket(sessionId: Hex, signed: SignedPaymentTicket): Promise<void> {
    return writes.putTicket(this.#s, this.#writes, sessionId, signed);
  }

  putStep(sessionId: Hex, step: Required<StepRecord>, accumulator?: AccumulatorState): Promise<void> {
    return writes.putStep(this.#s, this.#writes, sessionId, step, accumulator);
  }

  accumulatorState(sessionId: Hex, at?: { leafCount: number }): (AccumulatorState & { seq: bigint }) | undefined {
    this.#s.assertOpen("accumulatorState");
    if (at !== undefined && (!Number.isSafeInteger(at.leafCount) || at.leafCount < 0)) {
      throw new InvalidFieldError("at.leafCount", "a non-negative integer", at.leafCount);
    }
    const cache = this.#s.held.get(sessionId);
    const state = at === undefined ? cache?.latestAccumulator : cache?.accumulators.get(at.leafCount);
    return state && { ...state, peaks: [...state.peaks] };
  }

  latestAnsweredStep(sessionId: Hex): StepRecord | undefined {
    this.#s.assertOpen("latestAnsweredStep");
    const steps = this.#s.held.get(sessionId)?.steps ?? [];
    for (let i = steps.length - 1; i >= 0; i--) if (steps[i]!.receipt) return stepRecord(steps[i]!);
    return undefined;
  }

  latestTicket(sessionId: Hex): SignedPaymentTicket | undefined {
    this.#s.assertOpen("latestTicket");
    const steps = this.#s.held.get(sessionId)?.steps;
    const last = steps?.[steps.length - 1];
    return last && last.ticket;
  }

  steps(sessionId: Hex, options: StepsOptions = {}): StepRecord[] {
    this.#s.assertOpen("steps");
    const { fromSeq = 0n, limit } = options;
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) throw new InvalidFieldError("options.limit", "a non-negative integer", limit);
    const steps = this.#s.held.get(sessionId)?.steps ?? [];
    const start = lowerBound(steps, fromSeq);
    return steps.slice(start, limit === undefined ? undefined : start + limit).map(stepRecord);
  }

  leaves(sessionId: Hex): Hex[] {
    this.#s.assertOpen("leaves");
    return (this.#s.held.get(sessionId)?.steps ?? []).flatMap((step) => (step.leaf ? [step.leaf] : []));
  }

  receiptCount(sessionId: Hex): number {
    this.#s.assertOpen("receiptCount");
    return this.#s.held.get(sessionId)?.answered ?? 0;
  }

  // ------------------------------------------------------------------------------------------------
  // receipt commits

  putCommit(sessionId: Hex, by: ChannelRole, signed: SignedReceiptCommit): Promise<void> {
    return writes.putCommit(this.#s, this.#writes, sessionId, by, signed);
  }

  latestCommit(sessionId: Hex, by: ChannelRole): SignedReceiptCommit | undefined {
    this.#s.assertOpen("latestCommit");
    let best: { leafCount: bigint; text: string } | undefined;
    for (const commit of this.#s.held.get(sessionId)?.commits.values() ?? []) {
      if (commit.role === by && (!best || commit.leafCount > best.leafCount)) best = commit;
    }
    return best && signedReceiptCommitFromJson(JSON.parse(best.text));
  }

  // ------------------------------------------------------------------------------------------------
  // closings, cooperative closes, fault statements, results, grants, cursors

  putClosing(sessionId: Hex, closing: ClosingRecord): Promise<void> {
    return writes.putClosing(this.#s, this.#writes, sessionId, closing);
  }

  getClosing(sessionId: Hex): ClosingRecord | undefined {
    this.#s.assertOpen("getClosing");
    const closing = this.#s.held.get(sessionId)?.closing;
    return closing && closingRecordFromJson(closingRecordToJson(closing));
  }

  putCooperativeClose(sessionId: Hex, close: CooperativeCloseRecord): Promise<void> {
    return writes.putCooperativeClose(this.#s, this.#writes, sessionId, close);
  }

  getCooperativeClose(sessionId: Hex): CooperativeCloseRecord | undefined {
    this.#s.assertOpen("getCooperativeClose");
    const close = this.#s.held.get(sessionId)?.cooperativeClose;
    return close && cooperativeCloseFromJson(JSON.parse(close.text));
  }

  putFaultStatement(sessionId: Hex, signed: SignedFaultStatement): Promise<void> {
    return writes.putFaultStatement(this.#s, this.#writes, sessionId, signed);
  }

  getFaultStatement(sessionId: Hex, seq: bigint): SignedFaultStatement | undefined {
    this.#s.assertOpen("getFaultStatement");
    const fault = this.#s.held.get(sessionId)?.faults.get(seq);
    return fault && signedFaultStatementFromJson(JSON.parse(fault.text));
  }

  putResult(sessionId: Hex, record: ResultRecord): Promise<void> {
    return writes.putResult(this.#s, this.#writes, sessionId, record);
  }

  results(sessionId: Hex, options: StepsOptions = {}): ResultRecord[] {
    this.#s.assertOpen("results");
    const { fromSeq = 0n, limit } = options;
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) throw new InvalidFieldError("options.limit", "a non-negative integer", limit);
    const all = [...(this.#s.held.get(sessionId)?.results.values() ?? [])].filter((r) => r.seq >= fromSeq).sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
    return (limit === undefined ? all : all.slice(0, limit)).map((r) => ({ ...r }));
  }

  putSessionKeyGrant(sessionId: Hex, signed: SignedSessionKeyGrant): Promise<void> {
    return writes.putSessionKeyGrant(this.#s, this.#writes, sessionId, signed);
  }

  sessionKeyGrants(sessionId: Hex, key?: Address): SignedSessionKeyGrant[] {
    this.#s.assertOpen("sessionKeyGrants");
    const wanted = key?.toLowerCase();
    return (this.#s.held.get(sessionId)?.grants ?? [])
      .filter((g) => wanted === undefined || g.key === wanted)
      .map((g) => signedSessionKeyGrantFromJson(JSON.parse(g.text)));
  }

  getCursor(name: string): bigint | undefined {
    this.#s.assertOpen("getCursor");
    return this.#s.cursors.get(name);
  }

  setCursor(name: string, block: bigint): Promise<void> {
    return writes.setCursor(this.#s, this.#writes, name, block);
  }

  // ------------------------------------------------------------------------------------------------
  // durability

  async flush(): Promise<void> {
    const waits = [...this.#s.queues.keys()].map((key) => this.#writes.drained(key));
    const results = await Promise.allSettled(waits);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }

  async close(): Promise<void> {
    if (this.#s.closed) return;
    this.#s.closed = true;
    await this.#watch.stop();
    await Promise.allSettled([...this.#s.queues.keys()].map((key) => this.#writes.drained(key)));
    await this.#s.pool.end().catch(() => undefined);
  }

  // ------------------------------------------------------------------------------------------------
  // internals

}
