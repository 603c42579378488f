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
import { signedFaultStatementFromJson, signedFaultStatementToJson, type SignedFaultStatement } from "../core/fault-statement";
import { signedReceiptCommitFromJson, type SignedReceiptCommit } from "../core/receipt-commit";
import {
  canonicalSignedReceiptText,
  sessionReceiptHash,
  signedSessionReceiptFromJson,
  signedSessionReceiptToJson,
  type SignedSessionReceiptJson,
} from "../core/receipt";
import { signedPaymentTicketFromJson, type SignedPaymentTicket, type SignedPaymentTicketJson } from "../core/ticket";
import { signedSessionKeyGrantFromJson, signedSessionKeyGrantToJson, type SignedSessionKeyGrant } from "../core/session-key";
import { MAX_PACKET_BYTES } from "../core/packets";
import { expectHash, expectLiteral, expectString, expectUint, uintToJson } from "../core/validate";
import {
  ChannelPrunedError,
  CommitConflictError,
  CooperativeCloseConflictError,
  FaultStatementConflictError,
  FencedError,
  InconsistentRecordError,
  ReceiptConflictError,
  ResultConflictError,
  StoreClosedError,
  StoreCorruptionError,
  StoreOpenError,
  StoreWriteError,
  TicketConflictError,
  UnknownChannelError,
  UnsupportedSchemaError,
} from "./errors";
import { pgMigrate } from "./pg-schema";
import {
  canonChecked,
  channelFromJson,
  channelToJson,
  closingRecordFromJson,
  closingRecordToJson,
  cooperativeCloseFromJson,
  cooperativeCloseToJson,
  parseStored,
  seqKey,
  signedReceiptCommitToJson,
} from "./records";
import {
  CHANNEL_ROLES,
  CHANNEL_STATUSES,
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
import { type CachedStep, ChannelCache, type Defaults, type Op, Pending, type Queue, type Tx, lowerBound } from "./pg-cache";
import {
  type ChannelRow,
  type StepRow,
  accumulatorColumns,
  addStepRow,
  bufHex,
  channelId,
  cloneRecord,
  decodeRow,
  defaultsOf,
  derivable,
  hexBuf,
  isLogicalError,
  receiptColumns,
  receiptTextOf,
  receiptTextOrUndefined,
  redact,
  signedTicketText,
  stepRecord,
  ticketColumns,
  ticketTextOf,
} from "./pg-rows";

// The channel cache and pending writes are in pg-cache.ts, the row types and codecs in pg-rows.ts.

export type PgStoreMode = "all" | "fleet" | "duties";

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

/** Counters for tests, metrics and the bench. */
export type PgStoreStats = { commits: number; failedCommits: number; fenced: number; operations: number; largestBatch: number };

const DEFAULT_POOL_SIZE = 8;
const DEFAULT_BATCH_LIMIT = 500;

export class PgStore implements ChannelStore {
  readonly #pool: pg.Pool;
  readonly #mode: PgStoreMode;
  readonly owner: string;
  readonly #batchLimit: number;
  readonly #stats: PgStoreStats = { commits: 0, failedCommits: 0, fenced: 0, operations: 0, largestBatch: 0 };
  /** Every channel record known (all of them in mode "all"; in "fleet", those seen at open or taken since), by id order. */
  readonly #records = new Map<Hex, { id: number; record: ChannelRecord }>();
  /** Channels held in memory in full. */
  readonly #held = new Map<Hex, ChannelCache>();
  /** Fleet: the epoch each held channel was taken under. */
  readonly #epochs = new Map<Hex, bigint>();
  readonly #pending = new Map<Hex, Pending>();
  readonly #cursors = new Map<string, bigint>();
  /** Channels archived and pruned (all of them, read at open and by `take`/`refreshChannels`). */
  readonly #pruned = new Map<Hex, PrunedChannelRecord>();
  readonly #queues = new Map<string, Queue>();
  #closed = false;
  #url = "";
  /** `watch()`: the connection that LISTENs, what changed since the last refresh, when everything was last read. */
  #listener: pg.Client | undefined;
  #watching: { safetyMs: number; onTakenOver?: (sessionId: Hex) => void } | undefined;
  /** Channel id → read it again in full (true) or only its steps past the newest held (false). */
  readonly #changed = new Map<number, boolean>();
  #fullDue = true;
  #lastFull = 0;
  #reconnect: NodeJS.Timeout | undefined;
  #fullRefreshes = 0;
  #changedRefreshes = 0;

  private constructor(pool: pg.Pool, mode: PgStoreMode, owner: string, batchLimit: number, readonly where: string) {
    this.#pool = pool;
    this.#mode = mode;
    this.owner = owner;
    this.#batchLimit = batchLimit;
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
      const store = new PgStore(pool, mode, owner, batchLimit, where);
      store.#url = url;
      await store.#loadAll(client);
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
    return this.#mode;
  }

  get stats(): PgStoreStats {
    return { ...this.#stats };
  }

  /** What this process holds in memory: in fleet mode only the channels it serves (released ones leave it). */
  get memory(): PgStoreMemory {
    return { held: this.#held.size, records: this.#records.size, epochs: this.#epochs.size, queues: this.#queues.size, pending: this.#pending.size };
  }

  get closed(): boolean {
    return this.#closed;
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
    this.#assertOpen("take");
    const id = expectHash(sessionId, "sessionId");
    await this.#drainChannel(id);
    const client = await this.#connect();
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
      this.#held.delete(id);
      this.#epochs.delete(id);
      const channel = await client.query<ChannelRow>("SELECT * FROM channels WHERE session_id = $1", [hexBuf(id)]);
      if (channel.rows[0]) await this.#loadChannels(client, channel.rows);
      const gone = await client.query<{ pruned_at: string; archive: string }>("SELECT pruned_at, archive FROM pruned_channels WHERE session_id = $1", [hexBuf(id)]);
      if (gone.rows[0]) this.#pruned.set(id, { prunedAt: BigInt(gone.rows[0].pruned_at), archive: gone.rows[0].archive });
      await client.query("COMMIT");
      client.release();
    } catch (cause) {
      await client.query("ROLLBACK").catch(() => undefined);
      client.release(true);
      this.#held.delete(id);
      throw new StoreWriteError(1, cause);
    }
    this.#epochs.set(id, epoch);
    return { sessionId: id, epoch, owner: this.owner };
  }

  #leader: { name: string; epoch: bigint } | undefined;

  /** Duties mode: writes are fenced by this leader epoch from now on (undefined: every write is refused). */
  lead(leader: { name: string; epoch: bigint } | undefined): void {
    this.#leader = leader;
  }

  /**
   * Duties mode: reads what the serving processes wrote since the last call — new channels, changed records
   * (a channel whose status or deposit moved is read again in full), and every step beyond the newest one held.
   */
  async refresh(): Promise<void> {
    this.#assertOpen("refresh");
    if (this.#listener && !this.#fullDue && Date.now() - this.#lastFull < this.#watching!.safetyMs) return this.#refreshChanged();
    this.#fullDue = false;
    this.#changed.clear();
    this.#lastFull = Date.now();
    this.#fullRefreshes++;
    const client = await this.#connect();
    try {
      const channels = await client.query<ChannelRow>("SELECT * FROM channels ORDER BY id");
      const reload: ChannelRow[] = [];
      for (const row of channels.rows) {
        const id = bufHex(row.session_id);
        const known = this.#records.get(id);
        if (!known || known.record.status !== row.status || known.record.deposit !== BigInt(row.deposit) || !this.#held.has(id)) reload.push(row);
      }
      await this.#loadChannels(client, reload);
      const ids: number[] = [];
      const tops: string[] = [];
      for (const [id, cache] of this.#held) {
        if (reload.some((row) => bufHex(row.session_id) === id)) continue;
        ids.push(cache.id);
        tops.push((cache.steps[cache.steps.length - 1]?.seq ?? -1n).toString());
      }
      if (ids.length > 0) {
        const rows = await client.query<StepRow>(
          `SELECT s.* FROM steps s JOIN unnest($1::integer[], $2::numeric[]) AS t (id, top) ON s.channel_id = t.id AND s.seq > t.top
           ORDER BY s.channel_id, s.seq`,
          [ids, tops],
        );
        const byId = new Map([...this.#held].map(([id, cache]) => [cache.id, { id, cache }]));
        for (const row of rows.rows) {
          const { id, cache } = byId.get(row.channel_id)!;
          addStepRow(cache, id, row);
        }
      }
      client.release();
    } catch (cause) {
      client.release(true);
      this.#fullDue = true;
      throw new StoreWriteError(1, cause);
    }
  }

  /**
   * Listens for what other processes write (decision 0036, issue 31 gaps): the schema's triggers notify
   * `ioi_channels` for each channel whose rows changed and `ioi_owners` for each change of a channel's owner.
   * From then on `refresh()` (duties mode) reads only the channels named since the last call — a new or changed
   * channel in full, one that only gained steps from the newest step held — and everything again every
   * `safetyMs` (default 30 s) and after the listening connection was lost (notifications may have been missed).
   * In fleet mode, a channel this process holds that another process took over is released at once and
   * `onTakenOver` is told. One extra connection, outside the pool.
   */
  async watch(options: { safetyMs?: number; onTakenOver?: (sessionId: Hex) => void } = {}): Promise<void> {
    this.#assertOpen("watch");
    const safetyMs = options.safetyMs ?? 30_000;
    if (!Number.isSafeInteger(safetyMs) || safetyMs < 1) throw new InvalidFieldError("options.safetyMs", "a positive integer", safetyMs);
    this.#watching = { safetyMs, ...(options.onTakenOver ? { onTakenOver: options.onTakenOver } : {}) };
    await this.#listen();
  }

  /** Counters of `refresh()`: full reads of every channel, and reads of only what was notified. */
  get refreshes(): { full: number; changed: number } {
    return { full: this.#fullRefreshes, changed: this.#changedRefreshes };
  }

  async #listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#url });
    client.on("notification", (n) => this.#notified(n.channel, n.payload ?? ""));
    const lost = () => {
      if (this.#listener !== client) return;
      this.#listener = undefined;
      this.#fullDue = true;
      void client.end().catch(() => undefined);
      if (this.#closed) return;
      // Reconnect; until then `refresh()` reads everything, as without `watch()`.
      this.#reconnect = setTimeout(() => void this.#listen().catch(() => lost()), 1_000);
      this.#reconnect.unref();
    };
    client.on("error", lost);
    client.on("end", lost);
    try {
      await client.connect();
      await client.query("LISTEN ioi_channels; LISTEN ioi_owners");
    } catch (cause) {
      await client.end().catch(() => undefined);
      throw new StoreOpenError(`Cannot listen for changes in the channel store at ${this.where}.`, { cause, details: cause instanceof Error ? cause.message : String(cause) });
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    // Anything written before LISTEN took effect is read by the next full refresh.
    this.#fullDue = true;
    this.#listener = client;
  }

  #notified(channel: string, payload: string): void {
    if (channel === "ioi_channels") {
      const at = payload.indexOf(":");
      const id = Number(payload.slice(at + 1));
      if (at < 1 || !Number.isSafeInteger(id)) return;
      const table = payload.slice(0, at);
      const full = table !== "steps";
      this.#changed.set(id, (this.#changed.get(id) ?? false) || full);
    } else if (channel === "ioi_owners") {
      const [hex, epoch, ...owner] = payload.split(":");
      if (!hex || !epoch || !/^[0-9a-f]{64}$/.test(hex) || !/^[0-9]+$/.test(epoch)) return;
      const sessionId = `0x${hex}` as Hex;
      const mine = this.#epochs.get(sessionId);
      // Another process took a channel this one holds: it leaves memory now (its writes would be fenced anyway).
      if (this.#mode === "fleet" && mine !== undefined && BigInt(epoch) > mine && owner.join(":") !== this.owner) {
        this.release(sessionId);
        this.#watching?.onTakenOver?.(sessionId);
      }
    }
  }

  /** Duties mode with `watch()`: reads only the channels notified since the last refresh. */
  async #refreshChanged(): Promise<void> {
    if (this.#changed.size === 0) return;
    const changed = new Map(this.#changed);
    this.#changed.clear();
    this.#changedRefreshes++;
    const byId = new Map([...this.#held].map(([sessionId, cache]) => [cache.id, { sessionId, cache }]));
    const full: number[] = [];
    const ids: number[] = [];
    const tops: string[] = [];
    for (const [id, whole] of changed) {
      const held = byId.get(id);
      if (whole || !held) full.push(id);
      else {
        ids.push(id);
        tops.push((held.cache.steps[held.cache.steps.length - 1]?.seq ?? -1n).toString());
      }
    }
    const client = await this.#connect();
    try {
      if (full.length > 0) {
        const rows = await client.query<ChannelRow>("SELECT * FROM channels WHERE id = ANY($1) ORDER BY id", [full]);
        await this.#loadChannels(client, rows.rows);
      }
      if (ids.length > 0) {
        const rows = await client.query<StepRow>(
          `SELECT s.* FROM steps s JOIN unnest($1::integer[], $2::numeric[]) AS t (id, top) ON s.channel_id = t.id AND s.seq > t.top
           ORDER BY s.channel_id, s.seq`,
          [ids, tops],
        );
        for (const row of rows.rows) {
          const { sessionId, cache } = byId.get(row.channel_id)!;
          addStepRow(cache, sessionId, row);
        }
      }
      client.release();
    } catch (cause) {
      client.release(true);
      this.#fullDue = true;
      throw new StoreWriteError(1, cause);
    }
  }

  /** The epoch this process holds the channel under, if it holds it (fleet mode). */
  epochOf(sessionId: Hex): bigint | undefined {
    return this.#epochs.get(sessionId);
  }

  /**
   * Forgets a channel this process no longer serves (it stays in the database): in fleet mode its rows, its
   * record and, once idle, its write queue leave memory, so a process holds only the channels it serves.
   */
  release(sessionId: Hex): void {
    this.#epochs.delete(sessionId);
    if (this.#mode !== "fleet") return;
    this.#held.delete(sessionId);
    this.#records.delete(sessionId);
    const queue = this.#queues.get(sessionId);
    if (!queue || (!queue.running && queue.ops.length === 0)) {
      this.#queues.delete(sessionId);
      this.#pending.delete(sessionId);
    }
  }

  /**
   * Loads (or reloads) a channel's rows into memory without taking it over: what the leader's chain duties
   * read (decision 0036). Writes to it stay fenced unless this process `take`s it.
   */
  async load(sessionId: Hex): Promise<void> {
    this.#assertOpen("load");
    const id = expectHash(sessionId, "sessionId");
    const client = await this.#connect();
    try {
      const channel = await client.query<ChannelRow>("SELECT * FROM channels WHERE session_id = $1", [hexBuf(id)]);
      if (channel.rows[0]) await this.#loadChannels(client, channel.rows);
      client.release();
    } catch (cause) {
      client.release(true);
      throw cause;
    }
  }

  /** Reloads the channel list (fleet: channels other processes stored since). */
  async refreshChannels(): Promise<void> {
    const rows = await this.#query<ChannelRow>("SELECT * FROM channels ORDER BY id");
    for (const row of rows) this.#noteRecord(row);
    const pruned = await this.#query<{ session_id: Buffer; pruned_at: string; archive: string }>("SELECT session_id, pruned_at, archive FROM pruned_channels");
    for (const row of pruned) {
      const id = bufHex(row.session_id);
      this.#pruned.set(id, { prunedAt: BigInt(row.pruned_at), archive: row.archive });
      this.#records.delete(id);
    }
  }

  /**
   * Runs `sql` on a pooled connection (fleet tables, diagnostics). Not for the channel tables: their writes
   * go through the store's methods.
   */
  async query<T extends pg.QueryResultRow>(sql: string, parameters: unknown[] = []): Promise<T[]> {
    this.#assertOpen("query");
    return this.#query<T>(sql, parameters);
  }

  /** Bytes the store's tables and indexes take on disk (pg_total_relation_size), and receipts stored. */
  async size(): Promise<{ bytes: number; receipts: number; steps: number }> {
    const [row] = await this.#query<{ bytes: string; receipts: string; steps: string }>(
      `SELECT (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = current_schema() AND c.relkind = 'r') AS bytes,
              (SELECT count(*) FROM steps WHERE leaf IS NOT NULL) AS receipts,
              (SELECT count(*) FROM steps) AS steps`,
    );
    return { bytes: Number(row!.bytes), receipts: Number(row!.receipts), steps: Number(row!.steps) };
  }

  // ------------------------------------------------------------------------------------------------
  // channels

  putChannel(record: ChannelRecord): Promise<void> {
    return this.#write("putChannel", record.sessionId, (pending) => {
      const sessionId = expectHash(record.sessionId, "ChannelRecord.sessionId");
      const pruned = this.#pruned.get(sessionId);
      if (pruned) throw new ChannelPrunedError(sessionId, pruned.prunedAt, pruned.archive);
      const role = expectLiteral(record.role, "ChannelRecord.role", CHANNEL_ROLES);
      const status = expectLiteral(record.status, "ChannelRecord.status", CHANNEL_STATUSES);
      const deposit = uintToJson(expectUint(uintToJson(record.deposit), "ChannelRecord.deposit", 128));
      const text = canonChecked(channelToJson(record), (value) => channelFromJson(value));
      const stored = channelFromJson(parseStored(text, "Channel"));
      const copy: ChannelRecord = { ...stored, role, status, deposit: BigInt(deposit) };
      pending.channel++;
      let id = 0;
      return {
        run: async (tx) => {
          // Another process may have pruned it since this one read the list: the database decides.
          const gone = await tx.client.query<{ pruned_at: string; archive: string }>("SELECT pruned_at, archive FROM pruned_channels WHERE session_id = $1", [hexBuf(sessionId)]);
          if (gone.rows[0]) throw new ChannelPrunedError(sessionId, BigInt(gone.rows[0].pruned_at), gone.rows[0].archive);
          const row = await tx.client.query<{ id: number }>(
            `INSERT INTO channels (session_id, role, status, deposit, channel, provider, terms_hash, policy_hash)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (session_id) DO UPDATE SET role = excluded.role, status = excluded.status, deposit = excluded.deposit, channel = excluded.channel
             RETURNING id`,
            [hexBuf(sessionId), role, status, deposit, text, hexBuf(record.ref.terms.provider.toLowerCase()), hexBuf(record.ref.terms.termsHash), hexBuf(record.ref.terms.policyHash)],
          );
          id = row.rows[0]!.id;
          tx.ids.set(sessionId, id);
        },
        apply: () => {
          this.#records.set(sessionId, { id, record: copy });
          if (!this.#held.has(sessionId) && (this.#mode !== "fleet" || this.#epochs.has(sessionId))) {
            this.#held.set(sessionId, new ChannelCache(id, defaultsOf(copy)));
          }
        },
        settle: () => {
          pending.channel--;
        },
      };
    });
  }

  updateChannel(sessionId: Hex, patch: ChannelPatch): Promise<void> {
    return this.#write("updateChannel", sessionId, (pending) => {
      const id = this.#knownChannel(pending, sessionId);
      const deposit = patch.deposit === undefined ? null : uintToJson(expectUint(uintToJson(patch.deposit), "patch.deposit", 128));
      const status = patch.status === undefined ? null : expectLiteral(patch.status, "patch.status", CHANNEL_STATUSES);
      return {
        run: async (tx) => {
          const result = await tx.client.query(
            "UPDATE channels SET deposit = coalesce($1, deposit), status = coalesce($2, status) WHERE id = $3",
            [deposit, status, channelId(tx, id)],
          );
          if (result.rowCount === 0) throw new UnknownChannelError(id);
        },
        apply: () => {
          const known = this.#records.get(id);
          if (!known) return;
          const record = { ...known.record };
          if (deposit !== null) record.deposit = BigInt(deposit);
          if (status !== null) record.status = status;
          known.record = record;
        },
      };
    });
  }

  deleteChannel(sessionId: Hex, pruned: PrunedChannelRecord): Promise<void> {
    return this.#write("deleteChannel", sessionId, (pending) => {
      const id = this.#knownChannel(pending, sessionId);
      const prunedAt = expectUint(uintToJson(pruned.prunedAt), "pruned.prunedAt", 40);
      const archive = expectString(pruned.archive, "pruned.archive", 4096);
      return {
        run: async (tx) => {
          const no = channelId(tx, id);
          for (const table of ["steps", "commits", "closings", "cooperative_closes", "fault_statements", "session_key_grants", "results"]) {
            await tx.client.query(`DELETE FROM ${table} WHERE channel_id = $1`, [no]);
          }
          await tx.client.query("DELETE FROM channels WHERE id = $1", [no]);
          await tx.client.query("DELETE FROM channel_owners WHERE session_id = $1", [hexBuf(id)]);
          await tx.client.query("INSERT INTO pruned_channels (session_id, pruned_at, archive) VALUES ($1, $2, $3)", [hexBuf(id), prunedAt.toString(), archive]);
        },
        apply: () => {
          this.#records.delete(id);
          this.#held.delete(id);
          this.#epochs.delete(id);
          this.#pruned.set(id, { prunedAt, archive });
        },
      };
    });
  }

  prunedChannel(sessionId: Hex): PrunedChannelRecord | undefined {
    this.#assertOpen("prunedChannel");
    const pruned = this.#pruned.get(sessionId);
    return pruned && { ...pruned };
  }

  getChannel(sessionId: Hex): ChannelRecord | undefined {
    this.#assertOpen("getChannel");
    const known = this.#records.get(sessionId);
    return known && cloneRecord(known.record);
  }

  listChannels(filter: ListChannelsFilter = {}): ChannelRecord[] {
    this.#assertOpen("listChannels");
    return [...this.#records.values()]
      .sort((a, b) => a.id - b.id)
      .map((known) => known.record)
      .filter((r) => (filter.role === undefined || r.role === filter.role) && (filter.status === undefined || r.status === filter.status))
      .map(cloneRecord);
  }

  // ------------------------------------------------------------------------------------------------
  // tickets and steps

  putTicket(sessionId: Hex, signed: SignedPaymentTicket): Promise<void> {
    return this.#write("putTicket", sessionId, (pending) => {
      const id = expectHash(sessionId, "sessionId");
      if (signed.ticket.sessionId !== id) throw new InconsistentRecordError(`The ticket is for session ${signed.ticket.sessionId}, not ${id}.`);
      seqKey(signed.ticket.seq);
      const text = signedTicketText(signed);
      this.#knownChannel(pending, id);
      const seq = signed.ticket.seq;
      const existing = pending.tickets.get(seq) ?? this.#held.get(id)?.bySeq.get(seq)?.ticketText;
      if (existing !== undefined && existing !== text) throw new TicketConflictError(id, seq);
      pending.tickets.set(seq, text);
      const json = JSON.parse(text) as SignedPaymentTicketJson;
      let cached: CachedStep | undefined;
      return {
        run: async (tx) => {
          const channel = channelId(tx, id);
          const defaults = this.#defaults(id, tx);
          const columns = ticketColumns(json, defaults);
          const inserted = await tx.client.query(
            `INSERT INTO steps (channel_id, seq, amount, root, ticket_sig, ticket_provider, ticket_terms) VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (channel_id, seq) DO NOTHING`,
            [channel, json.ticket.seq, ...columns],
          );
          if (inserted.rowCount === 0) {
            const row = await this.#stepRow(tx, channel, json.ticket.seq);
            if (!row || ticketTextOf(row, id, defaults) !== text) throw new TicketConflictError(id, seq);
          }
          cached = { seq, ticketText: text, ticket: signedPaymentTicketFromJson(json) };
        },
        apply: () => {
          if (cached) this.#held.get(id)?.addStep(cached);
        },
        settle: () => {
          if (pending.tickets.get(seq) === text) pending.tickets.delete(seq);
        },
      };
    });
  }

  putStep(sessionId: Hex, step: Required<StepRecord>, accumulator?: AccumulatorState): Promise<void> {
    return this.#write("putStep", sessionId, (pending) => {
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
      seqKey(step.seq);
      const leaf = expectHash(step.leaf, "step.leaf").toLowerCase() as Hex;
      const ticketText = signedTicketText(ticket);
      const receiptText =
        canonicalSignedReceiptText(receipt) ?? canonChecked(signedSessionReceiptToJson(receipt), (value) => signedSessionReceiptFromJson(value));
      this.#knownChannel(pending, id);
      const seq = step.seq;
      const cachedStep = this.#held.get(id)?.bySeq.get(seq);
      const existingTicket = pending.tickets.get(seq) ?? cachedStep?.ticketText;
      const existingReceipt = pending.receipts.get(seq) ?? cachedStep?.receiptValue;
      const receiptValue = `${receiptText}\n${leaf}`;
      if (existingTicket !== undefined && existingTicket !== ticketText) throw new TicketConflictError(id, seq);
      if (existingReceipt !== undefined && existingReceipt !== receiptValue) throw new ReceiptConflictError(id, seq);
      const state = accumulator === undefined ? undefined : accumulatorColumns(accumulator, seq);
      const cache = this.#held.get(id);
      // What the row may leave out because the previous step (seq - 1) or state gives it (decision 0036).
      const previous = pending.receiptObjects.get(seq - 1n) ?? cache?.bySeq.get(seq - 1n)?.receipt?.receipt;
      const compact = {
        model: previous !== undefined && previous.modelSnapshotId === receipt.receipt.modelSnapshotId,
        prev: previous !== undefined && sessionReceiptHash(previous) === receipt.receipt.prevReceiptHash,
        accumulator: state !== undefined && derivable(pending.accumulator ?? cache?.latestAccumulator, accumulator!, leaf, receipt.receipt.metering.amount, state.peakList),
      };
      pending.tickets.set(seq, ticketText);
      pending.receipts.set(seq, receiptValue);
      pending.receiptObjects.set(seq, receipt.receipt);
      if (accumulator && state) pending.accumulator = { leafCount: accumulator.leafCount, peaks: state.peakList, charged: accumulator.charged, seq };
      const ticketJson = JSON.parse(ticketText) as SignedPaymentTicketJson;
      const receiptJson = JSON.parse(receiptText) as SignedSessionReceiptJson;
      let cached: CachedStep | undefined;
      return {
        run: async (tx) => {
          const channel = channelId(tx, id);
          const defaults = this.#defaults(id, tx);
          const t = ticketColumns(ticketJson, defaults);
          const r = receiptColumns(receiptJson, defaults, compact);
          const acc = state && !this.#held.get(id)?.accumulators.has(state.leafCount) ? state : undefined;
          // Inserts the step, or adds the receipt to a stored ticket with none; anything else changes nothing.
          const upserted = await tx.client.query({
            // Named: prepared once per connection (the hot path).
            name: "ioi-put-step",
            text: `INSERT INTO steps (channel_id, seq, amount, root, ticket_sig, ticket_provider, ticket_terms,
                                offload, output, policy, model, units, charge, prev, receipt_sig, leaf, acc_leaves, acc_peaks, acc_charged)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
             ON CONFLICT (channel_id, seq) DO UPDATE SET
               offload = excluded.offload, output = excluded.output, policy = excluded.policy, model = excluded.model,
               units = excluded.units, charge = excluded.charge, prev = excluded.prev, receipt_sig = excluded.receipt_sig,
               leaf = excluded.leaf, acc_leaves = excluded.acc_leaves, acc_peaks = excluded.acc_peaks, acc_charged = excluded.acc_charged
             WHERE steps.receipt_sig IS NULL AND steps.amount = excluded.amount AND steps.root = excluded.root
               AND steps.ticket_sig = excluded.ticket_sig AND steps.ticket_provider IS NOT DISTINCT FROM excluded.ticket_provider
               AND steps.ticket_terms IS NOT DISTINCT FROM excluded.ticket_terms`,
            values: [channel, ticketJson.ticket.seq, ...t, ...r, hexBuf(leaf), acc?.leaves ?? null, acc && !compact.accumulator ? acc.peaks : null, acc && !compact.accumulator ? acc.charged : null],
          });
          if (upserted.rowCount === 0) {
            // The identical step is stored already (maybe without this state), or another writer stored a different one.
            const row = await this.#stepRow(tx, channel, ticketJson.ticket.seq);
            if (!row || ticketTextOf(row, id, defaults) !== ticketText) throw new TicketConflictError(id, seq);
            const before = this.#held.get(id)?.bySeq.get(seq - 1n)?.receipt?.receipt ?? pending.receiptObjects.get(seq - 1n);
            if (!row.receipt_sig || receiptTextOrUndefined(row, id, defaults, before) === undefined || `${receiptTextOf(row, id, defaults, before)}\n${bufHex(row.leaf!)}` !== receiptValue) {
              throw new ReceiptConflictError(id, seq);
            }
            if (acc && row.acc_leaves === null) {
              // Added to a stored step: always explicit (the state before it may not be the one it follows).
              await tx.client.query("UPDATE steps SET acc_leaves = $3, acc_peaks = $4, acc_charged = $5 WHERE channel_id = $1 AND seq = $2", [
                channel,
                ticketJson.ticket.seq,
                acc.leaves,
                acc.peaks,
                acc.charged,
              ]);
            }
          }
          cached = {
            seq,
            ticketText,
            ticket: signedPaymentTicketFromJson(ticketJson),
            receiptValue,
            receipt: signedSessionReceiptFromJson(receiptJson),
            leaf,
          };
        },
        apply: () => {
          const cache = this.#held.get(id);
          if (!cache || !cached) return;
          cache.addStep(cached);
          if (accumulator && state) cache.addAccumulator({ leafCount: accumulator.leafCount, peaks: [...state.peakList], charged: accumulator.charged, seq });
        },
        settle: () => {
          if (pending.tickets.get(seq) === ticketText) pending.tickets.delete(seq);
          if (pending.receipts.get(seq) === receiptValue) pending.receipts.delete(seq);
          if (pending.receiptObjects.get(seq) === receipt.receipt) pending.receiptObjects.delete(seq);
          if (pending.accumulator?.seq === seq) pending.accumulator = undefined;
        },
      };
    });
  }

  accumulatorState(sessionId: Hex, at?: { leafCount: number }): (AccumulatorState & { seq: bigint }) | undefined {
    this.#assertOpen("accumulatorState");
    if (at !== undefined && (!Number.isSafeInteger(at.leafCount) || at.leafCount < 0)) {
      throw new InvalidFieldError("at.leafCount", "a non-negative integer", at.leafCount);
    }
    const cache = this.#held.get(sessionId);
    const state = at === undefined ? cache?.latestAccumulator : cache?.accumulators.get(at.leafCount);
    return state && { ...state, peaks: [...state.peaks] };
  }

  latestAnsweredStep(sessionId: Hex): StepRecord | undefined {
    this.#assertOpen("latestAnsweredStep");
    const steps = this.#held.get(sessionId)?.steps ?? [];
    for (let i = steps.length - 1; i >= 0; i--) if (steps[i]!.receipt) return stepRecord(steps[i]!);
    return undefined;
  }

  latestTicket(sessionId: Hex): SignedPaymentTicket | undefined {
    this.#assertOpen("latestTicket");
    const steps = this.#held.get(sessionId)?.steps;
    const last = steps?.[steps.length - 1];
    return last && last.ticket;
  }

  steps(sessionId: Hex, options: StepsOptions = {}): StepRecord[] {
    this.#assertOpen("steps");
    const { fromSeq = 0n, limit } = options;
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) throw new InvalidFieldError("options.limit", "a non-negative integer", limit);
    const steps = this.#held.get(sessionId)?.steps ?? [];
    const start = lowerBound(steps, fromSeq);
    return steps.slice(start, limit === undefined ? undefined : start + limit).map(stepRecord);
  }

  leaves(sessionId: Hex): Hex[] {
    this.#assertOpen("leaves");
    return (this.#held.get(sessionId)?.steps ?? []).flatMap((step) => (step.leaf ? [step.leaf] : []));
  }

  receiptCount(sessionId: Hex): number {
    this.#assertOpen("receiptCount");
    return this.#held.get(sessionId)?.answered ?? 0;
  }

  // ------------------------------------------------------------------------------------------------
  // receipt commits

  putCommit(sessionId: Hex, by: ChannelRole, signed: SignedReceiptCommit): Promise<void> {
    return this.#write("putCommit", sessionId, (pending) => {
      const id = expectHash(sessionId, "sessionId");
      const role = expectLiteral(by, "by", CHANNEL_ROLES);
      if (signed.commit.sessionId !== id) throw new InconsistentRecordError(`The receipt commit is for session ${signed.commit.sessionId}, not ${id}.`);
      const leafCount = seqKey(signed.commit.leafCount);
      const text = canonChecked(signedReceiptCommitToJson(signed), (value) => signedReceiptCommitFromJson(value));
      this.#knownChannel(pending, id);
      const key = `${role}:${leafCount}`;
      const existing = pending.commits.get(key) ?? this.#held.get(id)?.commits.get(key)?.text;
      if (existing !== undefined && existing !== text) throw new CommitConflictError(id, role, signed.commit.leafCount);
      pending.commits.set(key, text);
      return {
        run: async (tx) => {
          const channel = channelId(tx, id);
          const count = signed.commit.leafCount.toString();
          const inserted = await tx.client.query(
            "INSERT INTO commits (channel_id, signer_role, leaf_count, signed) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            [channel, role, count, text],
          );
          if (inserted.rowCount === 0) {
            const row = await tx.client.query<{ signed: string }>("SELECT signed FROM commits WHERE channel_id = $1 AND signer_role = $2 AND leaf_count = $3", [channel, role, count]);
            if (row.rows[0]?.signed !== text) throw new CommitConflictError(id, role, signed.commit.leafCount);
          }
        },
        apply: () => {
          this.#held.get(id)?.commits.set(key, { text, signed: signedReceiptCommitFromJson(JSON.parse(text)), leafCount: signed.commit.leafCount, role });
        },
        settle: () => {
          if (pending.commits.get(key) === text) pending.commits.delete(key);
        },
      };
    });
  }

  latestCommit(sessionId: Hex, by: ChannelRole): SignedReceiptCommit | undefined {
    this.#assertOpen("latestCommit");
    let best: { leafCount: bigint; text: string } | undefined;
    for (const commit of this.#held.get(sessionId)?.commits.values() ?? []) {
      if (commit.role === by && (!best || commit.leafCount > best.leafCount)) best = commit;
    }
    return best && signedReceiptCommitFromJson(JSON.parse(best.text));
  }

  // ------------------------------------------------------------------------------------------------
  // closings, cooperative closes, fault statements, results, grants, cursors

  putClosing(sessionId: Hex, closing: ClosingRecord): Promise<void> {
    return this.#write("putClosing", sessionId, (pending) => {
      const id = this.#knownChannel(pending, sessionId);
      const text = canonChecked(closingRecordToJson(closing), (value) => closingRecordFromJson(value));
      return {
        run: async (tx) => {
          await tx.client.query(
            "INSERT INTO closings (channel_id, closing) VALUES ($1, $2) ON CONFLICT (channel_id) DO UPDATE SET closing = excluded.closing",
            [channelId(tx, id), text],
          );
        },
        apply: () => {
          const cache = this.#held.get(id);
          if (cache) cache.closing = closingRecordFromJson(JSON.parse(text));
        },
      };
    });
  }

  getClosing(sessionId: Hex): ClosingRecord | undefined {
    this.#assertOpen("getClosing");
    const closing = this.#held.get(sessionId)?.closing;
    return closing && closingRecordFromJson(closingRecordToJson(closing));
  }

  putCooperativeClose(sessionId: Hex, close: CooperativeCloseRecord): Promise<void> {
    return this.#write("putCooperativeClose", sessionId, (pending) => {
      const id = this.#knownChannel(pending, sessionId);
      if (close.summary.sessionId !== id) throw new InconsistentRecordError(`The cooperative close is for session ${close.summary.sessionId}, not ${id}.`);
      const text = canonChecked(cooperativeCloseToJson(close), (value) => cooperativeCloseFromJson(value));
      const existing = pending.cooperativeClose ?? this.#held.get(id)?.cooperativeClose?.text;
      if (existing !== undefined && existing !== text) throw new CooperativeCloseConflictError(id);
      pending.cooperativeClose = text;
      return {
        run: async (tx) => {
          const channel = channelId(tx, id);
          const inserted = await tx.client.query("INSERT INTO cooperative_closes (channel_id, close) VALUES ($1, $2) ON CONFLICT DO NOTHING", [channel, text]);
          if (inserted.rowCount === 0) {
            const row = await tx.client.query<{ close: string }>("SELECT close FROM cooperative_closes WHERE channel_id = $1", [channel]);
            if (row.rows[0]?.close !== text) throw new CooperativeCloseConflictError(id);
          }
        },
        apply: () => {
          const cache = this.#held.get(id);
          if (cache) cache.cooperativeClose = { text, record: cooperativeCloseFromJson(JSON.parse(text)) };
        },
        settle: () => {
          if (pending.cooperativeClose === text) pending.cooperativeClose = undefined;
        },
      };
    });
  }

  getCooperativeClose(sessionId: Hex): CooperativeCloseRecord | undefined {
    this.#assertOpen("getCooperativeClose");
    const close = this.#held.get(sessionId)?.cooperativeClose;
    return close && cooperativeCloseFromJson(JSON.parse(close.text));
  }

  putFaultStatement(sessionId: Hex, signed: SignedFaultStatement): Promise<void> {
    return this.#write("putFaultStatement", sessionId, (pending) => {
      const id = this.#knownChannel(pending, sessionId);
      if (signed.statement.sessionId !== id) throw new InconsistentRecordError(`The fault statement is for session ${signed.statement.sessionId}, not ${id}.`);
      const seq = signed.statement.seq;
      seqKey(seq);
      const text = canonChecked(signedFaultStatementToJson(signed), (value) => signedFaultStatementFromJson(value));
      const existing = pending.faults.get(seq) ?? this.#held.get(id)?.faults.get(seq)?.text;
      if (existing !== undefined && existing !== text) throw new FaultStatementConflictError(id, seq);
      pending.faults.set(seq, text);
      return {
        run: async (tx) => {
          const channel = channelId(tx, id);
          const inserted = await tx.client.query("INSERT INTO fault_statements (channel_id, seq, statement) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", [channel, seq.toString(), text]);
          if (inserted.rowCount === 0) {
            const row = await tx.client.query<{ statement: string }>("SELECT statement FROM fault_statements WHERE channel_id = $1 AND seq = $2", [channel, seq.toString()]);
            if (row.rows[0]?.statement !== text) throw new FaultStatementConflictError(id, seq);
          }
        },
        apply: () => {
          this.#held.get(id)?.faults.set(seq, { text, signed: signedFaultStatementFromJson(JSON.parse(text)) });
        },
        settle: () => {
          if (pending.faults.get(seq) === text) pending.faults.delete(seq);
        },
      };
    });
  }

  getFaultStatement(sessionId: Hex, seq: bigint): SignedFaultStatement | undefined {
    this.#assertOpen("getFaultStatement");
    const fault = this.#held.get(sessionId)?.faults.get(seq);
    return fault && signedFaultStatementFromJson(JSON.parse(fault.text));
  }

  putResult(sessionId: Hex, record: ResultRecord): Promise<void> {
    return this.#write("putResult", sessionId, (pending) => {
      const id = this.#knownChannel(pending, sessionId);
      const seq = expectUint(uintToJson(record.seq), "result.seq", 64);
      const request = expectString(record.request, "result.request", MAX_PACKET_BYTES);
      const output = expectString(record.output, "result.output", MAX_PACKET_BYTES);
      const value = `${request}\n${output}`;
      const stored = this.#held.get(id)?.results.get(seq);
      const existing = pending.results.get(seq) ?? (stored ? `${stored.request}\n${stored.output}` : undefined);
      if (existing !== undefined && existing !== value) throw new ResultConflictError(id, seq);
      pending.results.set(seq, value);
      return {
        run: async (tx) => {
          const channel = channelId(tx, id);
          const inserted = await tx.client.query("INSERT INTO results (channel_id, seq, request, output) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING", [channel, seq.toString(), request, output]);
          if (inserted.rowCount === 0) {
            const row = await tx.client.query<{ request: string; output: string }>("SELECT request, output FROM results WHERE channel_id = $1 AND seq = $2", [channel, seq.toString()]);
            if (row.rows[0]?.request !== request || row.rows[0]?.output !== output) throw new ResultConflictError(id, seq);
          }
        },
        apply: () => {
          this.#held.get(id)?.results.set(seq, { seq, request, output });
        },
        settle: () => {
          if (pending.results.get(seq) === value) pending.results.delete(seq);
        },
      };
    });
  }

  results(sessionId: Hex, options: StepsOptions = {}): ResultRecord[] {
    this.#assertOpen("results");
    const { fromSeq = 0n, limit } = options;
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) throw new InvalidFieldError("options.limit", "a non-negative integer", limit);
    const all = [...(this.#held.get(sessionId)?.results.values() ?? [])].filter((r) => r.seq >= fromSeq).sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
    return (limit === undefined ? all : all.slice(0, limit)).map((r) => ({ ...r }));
  }

  putSessionKeyGrant(sessionId: Hex, signed: SignedSessionKeyGrant): Promise<void> {
    return this.#write("putSessionKeyGrant", sessionId, (pending) => {
      const id = this.#knownChannel(pending, sessionId);
      if (signed.grant.sessionId !== id) throw new InconsistentRecordError(`The session-key grant is for session ${signed.grant.sessionId}, not ${id}.`);
      const text = canonChecked(signedSessionKeyGrantToJson(signed), (value) => signedSessionKeyGrantFromJson(value));
      const key = signed.grant.key.toLowerCase();
      return {
        run: async (tx) => {
          await tx.client.query("INSERT INTO session_key_grants (channel_id, key, grant_text) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", [channelId(tx, id), hexBuf(key), text]);
        },
        apply: () => {
          const cache = this.#held.get(id);
          if (cache && !cache.grants.some((g) => g.key === key && g.text === text)) {
            cache.grants.push({ key, text, signed: signedSessionKeyGrantFromJson(JSON.parse(text)) });
          }
        },
      };
    });
  }

  sessionKeyGrants(sessionId: Hex, key?: Address): SignedSessionKeyGrant[] {
    this.#assertOpen("sessionKeyGrants");
    const wanted = key?.toLowerCase();
    return (this.#held.get(sessionId)?.grants ?? [])
      .filter((g) => wanted === undefined || g.key === wanted)
      .map((g) => signedSessionKeyGrantFromJson(JSON.parse(g.text)));
  }

  getCursor(name: string): bigint | undefined {
    this.#assertOpen("getCursor");
    return this.#cursors.get(name);
  }

  setCursor(name: string, block: bigint): Promise<void> {
    return this.#write("setCursor", undefined, () => {
      const key = expectString(name, "cursor name", 256);
      if (key === "") throw new InvalidFieldError("cursor name", "a non-empty string", name);
      const value = expectUint(uintToJson(block), "block", 64);
      return {
        run: async (tx) => {
          await tx.client.query("INSERT INTO cursors (name, block) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET block = excluded.block", [key, value.toString()]);
        },
        apply: () => {
          this.#cursors.set(key, value);
        },
      };
    });
  }

  // ------------------------------------------------------------------------------------------------
  // durability

  async flush(): Promise<void> {
    const waits = [...this.#queues.keys()].map((key) => this.#drained(key));
    const results = await Promise.allSettled(waits);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#reconnect) clearTimeout(this.#reconnect);
    const listener = this.#listener;
    this.#listener = undefined;
    await listener?.end().catch(() => undefined);
    await Promise.allSettled([...this.#queues.keys()].map((key) => this.#drained(key)));
    await this.#pool.end().catch(() => undefined);
  }

  // ------------------------------------------------------------------------------------------------
  // internals

  /**
   * Validates and claims a write now (anything `prepare` throws rejects this write alone), then queues it on
   * its channel (or the global queue for cursors). The queue commits what it holds in one transaction.
   */
  #write(
    operation: string,
    sessionId: Hex | undefined,
    prepare: (pending: Pending) => { run: Op["run"]; apply: Op["apply"]; settle?: () => void },
  ): Promise<void> {
    if (this.#closed) return Promise.reject(new StoreClosedError(operation));
    let key = "";
    let pending = new Pending();
    let op: Omit<Op, "waiter">;
    try {
      if (sessionId !== undefined) {
        key = expectHash(sessionId, "sessionId");
        if (this.#mode === "fleet" && !this.#epochs.has(key as Hex)) {
          this.#stats.fenced++;
          throw new FencedError(key as Hex, undefined, undefined);
        }
        pending = this.#pendingOf(key as Hex);
      }
      const prepared = prepare(pending);
      op = { run: prepared.run, apply: prepared.apply, settle: prepared.settle ?? (() => undefined) };
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<void>((resolve, reject) => {
      let queue = this.#queues.get(key);
      if (!queue) this.#queues.set(key, (queue = { ops: [], running: false }));
      queue.ops.push({ ...op, waiter: { resolve, reject } });
      if (!queue.running) {
        queue.running = true;
        queueMicrotask(() => void this.#drain(key, queue));
      }
    });
  }

  #pendingOf(id: Hex): Pending {
    let pending = this.#pending.get(id);
    if (!pending) this.#pending.set(id, (pending = new Pending()));
    return pending;
  }

  /** Commits the queue's writes batch by batch until it is empty. */
  async #drain(key: string, queue: Queue): Promise<void> {
    while (queue.ops.length > 0) {
      const ops = queue.ops.splice(0, this.#batchLimit);
      const tx: Tx = { client: undefined as unknown as pg.PoolClient, ids: new Map() };
      let broken = false;
      try {
        if (key !== "") {
          const known = this.#records.get(key as Hex);
          if (known) tx.ids.set(key, known.id);
        }
        tx.client = await this.#pool.connect();
        if (key !== "" && this.#mode === "fleet") await this.#beginFenced(tx, key as Hex);
        else await tx.client.query("BEGIN");
        if (this.#mode === "duties") await this.#checkLeader(tx);
        for (const op of ops) await op.run(tx);
        await tx.client.query("COMMIT");
      } catch (cause) {
        broken = !isLogicalError(cause);
        if (tx.client) await tx.client.query("ROLLBACK").catch(() => (broken = true));
        tx.client?.release(broken);
        this.#stats.failedCommits++;
        let error: unknown;
        if (cause instanceof FencedError) {
          this.#stats.fenced++;
          this.release(key as Hex);
          error = cause;
        } else error = new StoreWriteError(ops.length, cause);
        // Writes of a channel keep their order: what was queued behind a failed batch was prepared as if it
        // had committed, so it fails too (never a step n+1 durable without step n).
        const tail = key === "" ? [] : queue.ops.splice(0);
        for (const op of [...ops, ...tail]) {
          op.settle();
          op.waiter.reject(error);
        }
        // The failure may have hidden a COMMIT that did happen (the connection died after it): read the
        // channel again so the cache is the database's (a fleet process takes it over again instead).
        if (key !== "" && this.#mode !== "fleet" && !this.#closed && !(cause instanceof FencedError)) await this.load(key as Hex).catch(() => undefined);
        continue;
      }
      tx.client.release();
      this.#stats.commits++;
      this.#stats.operations += ops.length;
      this.#stats.largestBatch = Math.max(this.#stats.largestBatch, ops.length);
      for (const op of ops) {
        try {
          op.apply(tx);
        } finally {
          op.settle();
        }
        op.waiter.resolve();
      }
    }
    queue.running = false;
    // A fleet channel released while this queue ran leaves memory now that the queue is idle.
    if (key !== "" && this.#mode === "fleet" && !this.#epochs.has(key as Hex) && this.#queues.get(key) === queue && queue.ops.length === 0) {
      this.#queues.delete(key);
      this.#pending.delete(key as Hex);
    }
  }

  /**
   * BEGIN and the epoch check in one round trip (the simple protocol takes both statements at once; the
   * session id is a checked 32-byte hash, written as a bytea literal).
   */
  async #beginFenced(tx: Tx, id: Hex): Promise<void> {
    const mine = this.#epochs.get(id);
    const results = (await tx.client.query(`BEGIN; SELECT epoch FROM channel_owners WHERE session_id = '\\x${expectHash(id, "sessionId").slice(2)}'::bytea FOR SHARE`)) as unknown as pg.QueryResult<{ epoch: string }>[];
    const row = results[1]?.rows[0];
    const current = row ? BigInt(row.epoch) : undefined;
    if (mine === undefined || current !== mine) throw new FencedError(id, mine, current);
  }

  /** Inside a duties transaction: the leader row must still carry the epoch `lead()` was given. */
  async #checkLeader(tx: Tx): Promise<void> {
    const lead = this.#leader;
    const row = lead && (await tx.client.query<{ epoch: string }>("SELECT epoch FROM leader WHERE name = $1 FOR SHARE", [lead.name])).rows[0];
    const current = row ? BigInt(row.epoch) : undefined;
    if (!lead || current !== lead.epoch) throw new FencedError(`0x${"00".repeat(32)}`, lead?.epoch, current);
  }

  /** Resolves once the queue `key` is empty (rejects if its last batch failed? no: flush reports only its own wait). */
  async #drained(key: string): Promise<void> {
    const queue = this.#queues.get(key);
    if (!queue || (!queue.running && queue.ops.length === 0)) return;
    // A no-op write queued last: it settles after everything queued before it on this channel.
    await new Promise<void>((resolve, reject) => {
      queue.ops.push({ run: async () => undefined, apply: () => undefined, settle: () => undefined, waiter: { resolve, reject } });
      if (!queue.running) {
        queue.running = true;
        queueMicrotask(() => void this.#drain(key, queue));
      }
    });
  }

  async #drainChannel(id: Hex): Promise<void> {
    await this.#drained(id).catch(() => undefined);
  }

  /** The channel's id if it is stored or pending; else {@link UnknownChannelError}. */
  #knownChannel(pending: Pending, sessionId: Hex): Hex {
    const id = expectHash(sessionId, "sessionId");
    if (this.#records.has(id) || pending.channel > 0) return id;
    throw new UnknownChannelError(id);
  }

  #defaults(id: Hex, tx: Tx): Defaults {
    const cache = this.#held.get(id);
    if (cache) return cache.defaults;
    const known = this.#records.get(id);
    if (known) return defaultsOf(known.record);
    throw new UnknownChannelError(id);
    void tx;
  }

  async #stepRow(tx: Tx, channel: number, seq: string): Promise<StepRow | undefined> {
    const row = await tx.client.query<StepRow>("SELECT * FROM steps WHERE channel_id = $1 AND seq = $2", [channel, seq]);
    return row.rows[0];
  }

  async #connect(): Promise<pg.PoolClient> {
    try {
      return await this.#pool.connect();
    } catch (cause) {
      throw new StoreWriteError(1, cause);
    }
  }

  async #query<T extends pg.QueryResultRow>(sql: string, parameters: unknown[] = []): Promise<T[]> {
    return (await this.#pool.query<T>(sql, parameters)).rows;
  }

  #noteRecord(row: ChannelRow): ChannelRecord {
    const id = bufHex(row.session_id);
    const record = decodeRow("channels", id, () => {
      const fixed = channelFromJson(parseStored(row.channel, "Channel"));
      if (fixed.sessionId !== id) throw new InvalidFieldError("Channel.sessionId", `${id} (the key of its row)`, fixed.sessionId);
      return {
        ...fixed,
        role: expectLiteral(row.role, "channels.role", CHANNEL_ROLES),
        status: expectLiteral(row.status, "channels.status", CHANNEL_STATUSES),
        deposit: expectUint(row.deposit, "channels.deposit", 128),
      };
    });
    this.#records.set(id, { id: row.id, record });
    return record;
  }

  async #loadAll(client: pg.PoolClient): Promise<void> {
    const channels = await client.query<ChannelRow>("SELECT * FROM channels ORDER BY id");
    for (const row of channels.rows) this.#noteRecord(row);
    await this.#loadPruned(client);
    const cursors = await client.query<{ name: string; block: string }>("SELECT name, block FROM cursors");
    for (const row of cursors.rows) this.#cursors.set(row.name, BigInt(row.block));
    if (this.#mode !== "fleet") await this.#loadChannels(client, channels.rows);
  }

  async #loadPruned(client: pg.PoolClient): Promise<void> {
    const pruned = await client.query<{ session_id: Buffer; pruned_at: string; archive: string }>("SELECT session_id, pruned_at, archive FROM pruned_channels");
    for (const row of pruned.rows) this.#pruned.set(bufHex(row.session_id), { prunedAt: BigInt(row.pruned_at), archive: row.archive });
  }

  /** Reads every row of the given channels into fresh caches (replacing what was held). */
  async #loadChannels(client: pg.PoolClient, rows: ChannelRow[]): Promise<void> {
    if (rows.length === 0) return;
    const caches = new Map<number, { id: Hex; cache: ChannelCache }>();
    for (const row of rows) {
      const record = this.#noteRecord(row);
      const defaults: Defaults = { provider: bufHex(row.provider), termsHash: bufHex(row.terms_hash), policyHash: bufHex(row.policy_hash) };
      caches.set(row.id, { id: record.sessionId, cache: new ChannelCache(row.id, defaults) });
    }
    const ids = [...caches.keys()];
    const of = (channelId: number) => caches.get(channelId)!;
    const steps = await client.query<StepRow>("SELECT * FROM steps WHERE channel_id = ANY($1) ORDER BY channel_id, seq", [ids]);
    for (const row of steps.rows) {
      const { id, cache } = of(row.channel_id);
      addStepRow(cache, id, row);
    }
    const commits = await client.query<{ channel_id: number; signer_role: string; leaf_count: string; signed: string }>(
      "SELECT channel_id, signer_role, leaf_count, signed FROM commits WHERE channel_id = ANY($1)",
      [ids],
    );
    for (const row of commits.rows) {
      const { id, cache } = of(row.channel_id);
      decodeRow("commits", `${id}#${row.signer_role}#${row.leaf_count}`, () => {
        const signed = signedReceiptCommitFromJson(parseStored(row.signed, "SignedReceiptCommit"));
        const role = expectLiteral(row.signer_role, "commits.signer_role", CHANNEL_ROLES);
        cache.commits.set(`${role}:${seqKey(BigInt(row.leaf_count))}`, { text: row.signed, signed, leafCount: BigInt(row.leaf_count), role });
      });
    }
    const closings = await client.query<{ channel_id: number; closing: string }>("SELECT channel_id, closing FROM closings WHERE channel_id = ANY($1)", [ids]);
    for (const row of closings.rows) {
      const { id, cache } = of(row.channel_id);
      cache.closing = decodeRow("closings", id, () => closingRecordFromJson(parseStored(row.closing, "ClosingRecord")));
    }
    const closes = await client.query<{ channel_id: number; close: string }>("SELECT channel_id, close FROM cooperative_closes WHERE channel_id = ANY($1)", [ids]);
    for (const row of closes.rows) {
      const { id, cache } = of(row.channel_id);
      cache.cooperativeClose = { text: row.close, record: decodeRow("cooperative_closes", id, () => cooperativeCloseFromJson(parseStored(row.close, "CooperativeClose"))) };
    }
    const faults = await client.query<{ channel_id: number; seq: string; statement: string }>("SELECT channel_id, seq, statement FROM fault_statements WHERE channel_id = ANY($1)", [ids]);
    for (const row of faults.rows) {
      const { id, cache } = of(row.channel_id);
      const signed = decodeRow("fault_statements", `${id}#${row.seq}`, () => signedFaultStatementFromJson(parseStored(row.statement, "SignedFaultStatement")));
      cache.faults.set(BigInt(row.seq), { text: row.statement, signed });
    }
    const results = await client.query<{ channel_id: number; seq: string; request: string; output: string }>("SELECT channel_id, seq, request, output FROM results WHERE channel_id = ANY($1)", [ids]);
    for (const row of results.rows) of(row.channel_id).cache.results.set(BigInt(row.seq), { seq: BigInt(row.seq), request: row.request, output: row.output });
    const grants = await client.query<{ channel_id: number; key: Buffer; grant_text: string }>("SELECT channel_id, key, grant_text FROM session_key_grants WHERE channel_id = ANY($1) ORDER BY id", [ids]);
    for (const row of grants.rows) {
      const { id, cache } = of(row.channel_id);
      const signed = decodeRow("session_key_grants", id, () => signedSessionKeyGrantFromJson(parseStored(row.grant_text, "SignedSessionKeyGrant")));
      cache.grants.push({ key: bufHex(row.key), text: row.grant_text, signed });
    }
    for (const { id, cache } of caches.values()) this.#held.set(id, cache);
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw new StoreClosedError(operation);
  }
}
