/**
 * The write queues of a `PgStore` (issue 33 item 2: moved out of `PgStore`, decision 0021): a write is validated and
 * claimed at once, then queued on its channel (or the global queue for cursors); each queue commits what it holds in
 * one transaction at a time, in order, with the fencing epoch (mode "fleet") or the leader epoch (mode "duties")
 * checked inside that same transaction, and the cache changes only once COMMIT returned.
 */
import pg from "pg";
import type { Hex } from "viem";

import { expectHash } from "../core/validate";
import { FencedError, StoreClosedError, StoreWriteError } from "./errors";
import { type Op, Pending, type Queue, type Tx } from "./pg-cache";
import { isLogicalError } from "./pg-rows";
import type { PgState } from "./pg-state";

/** Counters for tests, metrics and the bench. */
export type PgStoreStats = { commits: number; failedCommits: number; fenced: number; operations: number; largestBatch: number };

/** What the queues ask of the store: forget a fenced channel, read one again after a failed commit. */
export type PgStoreHooks = { release(sessionId: Hex): void; load(sessionId: Hex): Promise<void> };

/** The per-channel write queues of one `PgStore` (see the file comment). */
export class PgWriteQueues {
  readonly #s: PgState;
  readonly #batchLimit: number;
  readonly #hooks: PgStoreHooks;
  readonly stats: PgStoreStats = { commits: 0, failedCommits: 0, fenced: 0, operations: 0, largestBatch: 0 };
  /** Duties mode: the leader epoch every write is fenced by (`PgStore.lead`). */
  leader: { name: string; epoch: bigint } | undefined;

  constructor(s: PgState, batchLimit: number, hooks: PgStoreHooks) {
    this.#s = s;
    this.#batchLimit = batchLimit;
    this.#hooks = hooks;
  }

  /**
   * Validates and claims a write now (anything `prepare` throws rejects this write alone), then queues it on
   * its channel (or the global queue for cursors). The queue commits what it holds in one transaction.
   */
  write(
    operation: string,
    sessionId: Hex | undefined,
    prepare: (pending: Pending) => { run: Op["run"]; apply: Op["apply"]; settle?: () => void },
  ): Promise<void> {
    if (this.#s.closed) return Promise.reject(new StoreClosedError(operation));
    let key = "";
    let pending = new Pending();
    let op: Omit<Op, "waiter">;
    try {
      if (sessionId !== undefined) {
        key = expectHash(sessionId, "sessionId");
        if (this.#s.mode === "fleet" && !this.#s.epochs.has(key as Hex)) {
          this.stats.fenced++;
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
      let queue = this.#s.queues.get(key);
      if (!queue) this.#s.queues.set(key, (queue = { ops: [], running: false }));
      queue.ops.push({ ...op, waiter: { resolve, reject } });
      if (!queue.running) {
        queue.running = true;
        queueMicrotask(() => void this.#drain(key, queue));
      }
    });
  }

  #pendingOf(id: Hex): Pending {
    let pending = this.#s.pending.get(id);
    if (!pending) this.#s.pending.set(id, (pending = new Pending()));
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
          const known = this.#s.records.get(key as Hex);
          if (known) tx.ids.set(key, known.id);
        }
        tx.client = await this.#s.pool.connect();
        if (key !== "" && this.#s.mode === "fleet") await this.#beginFenced(tx, key as Hex);
        else await tx.client.query("BEGIN");
        if (this.#s.mode === "duties") await this.#checkLeader(tx);
        for (const op of ops) await op.run(tx);
        await tx.client.query("COMMIT");
      } catch (cause) {
        broken = !isLogicalError(cause);
        if (tx.client) await tx.client.query("ROLLBACK").catch(() => (broken = true));
        tx.client?.release(broken);
        this.stats.failedCommits++;
        let error: unknown;
        if (cause instanceof FencedError) {
          this.stats.fenced++;
          this.#hooks.release(key as Hex);
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
        if (key !== "" && this.#s.mode !== "fleet" && !this.#s.closed && !(cause instanceof FencedError)) await this.#hooks.load(key as Hex).catch(() => undefined);
        continue;
      }
      tx.client.release();
      this.stats.commits++;
      this.stats.operations += ops.length;
      this.stats.largestBatch = Math.max(this.stats.largestBatch, ops.length);
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
    if (key !== "" && this.#s.mode === "fleet" && !this.#s.epochs.has(key as Hex) && this.#s.queues.get(key) === queue && queue.ops.length === 0) {
      this.#s.queues.delete(key);
      this.#s.pending.delete(key as Hex);
    }
  }

  /**
   * BEGIN and the epoch check in one round trip (the simple protocol takes both statements at once; the
   * session id is a checked 32-byte hash, written as a bytea literal).
   */
  async #beginFenced(tx: Tx, id: Hex): Promise<void> {
    const mine = this.#s.epochs.get(id);
    const results = (await tx.client.query(`BEGIN; SELECT epoch FROM channel_owners WHERE session_id = '\\x${expectHash(id, "sessionId").slice(2)}'::bytea FOR SHARE`)) as unknown as pg.QueryResult<{ epoch: string }>[];
    const row = results[1]?.rows[0];
    const current = row ? BigInt(row.epoch) : undefined;
    if (mine === undefined || current !== mine) throw new FencedError(id, mine, current);
  }

  /** Inside a duties transaction: the leader row must still carry the epoch `lead()` was given. */
  async #checkLeader(tx: Tx): Promise<void> {
    const lead = this.leader;
    const row = lead && (await tx.client.query<{ epoch: string }>("SELECT epoch FROM leader WHERE name = $1 FOR SHARE", [lead.name])).rows[0];
    const current = row ? BigInt(row.epoch) : undefined;
    if (!lead || current !== lead.epoch) throw new FencedError(`0x${"00".repeat(32)}`, lead?.epoch, current);
  }

  /** Resolves once the queue `key` is empty (rejects if its last batch failed? no: flush reports only its own wait). */
  async drained(key: string): Promise<void> {
    const queue = this.#s.queues.get(key);
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

  async drainChannel(id: Hex): Promise<void> {
    await this.drained(id).catch(() => undefined);
  }
}
