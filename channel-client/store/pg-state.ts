/**
 * What a `PgStore` holds and how it reads it (issue 33 item 2: moved out of `PgStore`, decision 0021): the pool,
 * every channel record known, the channels held in full, the fencing epochs, the write queues and their pending
 * claims, cursors and pruned channels, and the loaders that fill them from the database. The store, its write
 * queues (pg-queues.ts), its writes (pg-writes.ts) and its change feed (pg-watch.ts) share this one object.
 */
import type pg from "pg";
import type { Hex } from "viem";

import { InvalidFieldError } from "../core/errors";
import { signedFaultStatementFromJson } from "../core/fault-statement";
import { signedReceiptCommitFromJson } from "../core/receipt-commit";
import { signedSessionKeyGrantFromJson } from "../core/session-key";
import { expectLiteral, expectHash, expectUint } from "../core/validate";
import { StoreClosedError, StoreWriteError, UnknownChannelError } from "./errors";
import { ChannelCache, type Defaults, Pending, type Queue, type Tx } from "./pg-cache";
import { type ChannelRow, type StepRow, addStepRow, bufHex, decodeRow, defaultsOf } from "./pg-rows";
import { channelFromJson, closingRecordFromJson, cooperativeCloseFromJson, parseStored, seqKey } from "./records";
import { CHANNEL_ROLES, CHANNEL_STATUSES, type ChannelRecord, type PrunedChannelRecord } from "./store";

/** "all", "fleet" or "duties" (`PgStoreOptions.mode`). */
export type PgStoreMode = "all" | "fleet" | "duties";

/** The shared memory of one `PgStore` (see the file comment). */
export class PgState {
  /** Every channel record known (all of them in mode "all"; in "fleet", those seen at open or taken since), by id order. */
  readonly records = new Map<Hex, { id: number; record: ChannelRecord }>();
  /** Channels held in memory in full. */
  readonly held = new Map<Hex, ChannelCache>();
  /** Fleet: the epoch each held channel was taken under. */
  readonly epochs = new Map<Hex, bigint>();
  readonly pending = new Map<Hex, Pending>();
  readonly cursors = new Map<string, bigint>();
  /** Channels archived and pruned (all of them, read at open and by `take`/`refreshChannels`). */
  readonly pruned = new Map<Hex, PrunedChannelRecord>();
  readonly queues = new Map<string, Queue>();
  closed = false;

  constructor(
    readonly pool: pg.Pool,
    readonly mode: PgStoreMode,
    readonly owner: string,
    readonly where: string,
    readonly url: string,
  ) {}

  async connect(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (cause) {
      throw new StoreWriteError(1, cause);
    }
  }

  async query<T extends pg.QueryResultRow>(sql: string, parameters: unknown[] = []): Promise<T[]> {
    return (await this.pool.query<T>(sql, parameters)).rows;
  }

  noteRecord(row: ChannelRow): ChannelRecord {
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
    this.records.set(id, { id: row.id, record });
    return record;
  }

  async loadAll(client: pg.PoolClient): Promise<void> {
    const channels = await client.query<ChannelRow>("SELECT * FROM channels ORDER BY id");
    for (const row of channels.rows) this.noteRecord(row);
    await this.loadPruned(client);
    const cursors = await client.query<{ name: string; block: string }>("SELECT name, block FROM cursors");
    for (const row of cursors.rows) this.cursors.set(row.name, BigInt(row.block));
    if (this.mode !== "fleet") await this.loadChannels(client, channels.rows);
  }

  async loadPruned(client: pg.PoolClient): Promise<void> {
    const pruned = await client.query<{ session_id: Buffer; pruned_at: string; archive: string }>("SELECT session_id, pruned_at, archive FROM pruned_channels");
    for (const row of pruned.rows) this.pruned.set(bufHex(row.session_id), { prunedAt: BigInt(row.pruned_at), archive: row.archive });
  }

  /** Reads every row of the given channels into fresh caches (replacing what was held). */
  async loadChannels(client: pg.PoolClient, rows: ChannelRow[]): Promise<void> {
    if (rows.length === 0) return;
    const caches = new Map<number, { id: Hex; cache: ChannelCache }>();
    for (const row of rows) {
      const record = this.noteRecord(row);
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
    for (const { id, cache } of caches.values()) this.held.set(id, cache);
  }

  /** The channel's id if it is stored or pending; else {@link UnknownChannelError}. */
  knownChannel(pending: Pending, sessionId: Hex): Hex {
    const id = expectHash(sessionId, "sessionId");
    if (this.records.has(id) || pending.channel > 0) return id;
    throw new UnknownChannelError(id);
  }

  defaults(id: Hex, tx: Tx): Defaults {
    const cache = this.held.get(id);
    if (cache) return cache.defaults;
    const known = this.records.get(id);
    if (known) return defaultsOf(known.record);
    throw new UnknownChannelError(id);
    void tx;
  }

  async stepRow(tx: Tx, channel: number, seq: string): Promise<StepRow | undefined> {
    const row = await tx.client.query<StepRow>("SELECT * FROM steps WHERE channel_id = $1 AND seq = $2", [channel, seq]);
    return row.rows[0];
  }

  assertOpen(operation: string): void {
    if (this.closed) throw new StoreClosedError(operation);
  }
}
