/**
 * What a `PgStore` learns of other processes' writes (issue 33 item 2: moved out of `PgStore`, decision 0021):
 * `refresh()` in duties mode, and `watch()`, the LISTEN connection whose notifications narrow the next refresh
 * and release a fleet channel another process took over.
 */
import pg from "pg";
import type { Hex } from "viem";

import { InvalidFieldError } from "../core/errors";
import { StoreOpenError, StoreWriteError } from "./errors";
import { type ChannelRow, type StepRow, addStepRow, bufHex } from "./pg-rows";
import type { PgStoreHooks } from "./pg-queues";
import type { PgState } from "./pg-state";

/** The change feed of one `PgStore` (see the file comment). */
export class PgWatch {
  readonly #s: PgState;
  readonly #hooks: Pick<PgStoreHooks, "release">;
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

  constructor(s: PgState, hooks: Pick<PgStoreHooks, "release">) {
    this.#s = s;
    this.#hooks = hooks;
  }

  /**
   * Duties mode: reads what the serving processes wrote since the last call — new channels, changed records
   * (a channel whose status or deposit moved is read again in full), and every step beyond the newest one held.
   */
  async refresh(): Promise<void> {
    this.#s.assertOpen("refresh");
    if (this.#listener && !this.#fullDue && Date.now() - this.#lastFull < this.#watching!.safetyMs) return this.#refreshChanged();
    this.#fullDue = false;
    this.#changed.clear();
    this.#lastFull = Date.now();
    this.#fullRefreshes++;
    const client = await this.#s.connect();
    try {
      const channels = await client.query<ChannelRow>("SELECT * FROM channels ORDER BY id");
      const reload: ChannelRow[] = [];
      for (const row of channels.rows) {
        const id = bufHex(row.session_id);
        const known = this.#s.records.get(id);
        if (!known || known.record.status !== row.status || known.record.deposit !== BigInt(row.deposit) || !this.#s.held.has(id)) reload.push(row);
      }
      await this.#s.loadChannels(client, reload);
      const ids: number[] = [];
      const tops: string[] = [];
      for (const [id, cache] of this.#s.held) {
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
        const byId = new Map([...this.#s.held].map(([id, cache]) => [cache.id, { id, cache }]));
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
    this.#s.assertOpen("watch");
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
    const client = new pg.Client({ connectionString: this.#s.url });
    client.on("notification", (n) => this.#notified(n.channel, n.payload ?? ""));
    const lost = () => {
      if (this.#listener !== client) return;
      this.#listener = undefined;
      this.#fullDue = true;
      void client.end().catch(() => undefined);
      if (this.#s.closed) return;
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
      throw new StoreOpenError(`Cannot listen for changes in the channel store at ${this.#s.where}.`, { cause, details: cause instanceof Error ? cause.message : String(cause) });
    }
    if (this.#s.closed) {
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
      const mine = this.#s.epochs.get(sessionId);
      // Another process took a channel this one holds: it leaves memory now (its writes would be fenced anyway).
      if (this.#s.mode === "fleet" && mine !== undefined && BigInt(epoch) > mine && owner.join(":") !== this.#s.owner) {
        this.#hooks.release(sessionId);
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
    const byId = new Map([...this.#s.held].map(([sessionId, cache]) => [cache.id, { sessionId, cache }]));
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
    const client = await this.#s.connect();
    try {
      if (full.length > 0) {
        const rows = await client.query<ChannelRow>("SELECT * FROM channels WHERE id = ANY($1) ORDER BY id", [full]);
        await this.#s.loadChannels(client, rows.rows);
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

  /** The store closes: no reconnect, and the listening connection ends. */
  async stop(): Promise<void> {
    if (this.#reconnect) clearTimeout(this.#reconnect);
    const listener = this.#listener;
    this.#listener = undefined;
    await listener?.end().catch(() => undefined);
  }
}
