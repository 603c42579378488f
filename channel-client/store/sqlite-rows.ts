/**
 * The SQLite store's prepared statements and row codecs (split from channel-client/store/sqlite-store.ts, which holds the
 * group commit and the store's operations): what a row holds, how an accumulator state and a step are encoded
 * for it, and how a row is decoded back (a row that does not decode is a `StoreCorruptionError` naming it).
 */
import Database from "better-sqlite3";
import type { Hex } from "viem";
import { InvalidFieldError } from "../core/errors";
import { signedSessionReceiptFromJson } from "../core/receipt";
import { signedPaymentTicketFromJson, type SignedPaymentTicket } from "../core/ticket";
import { expectHash, expectLiteral, expectUint, uintToJson } from "../core/validate";
import { InconsistentRecordError, StoreCorruptionError } from "./errors";
import { channelFromJson, decodeReceiptBlob, decodeTicketBlob, peaksToBlob, seqFromInteger, parseStored, seqKey } from "./records";
import { CHANNEL_ROLES, CHANNEL_STATUSES, type ChannelRecord, type StepRecord, type AccumulatorState } from "./store";

type ChannelRow = { session_id: string; role: string; status: string; deposit: string; channel: string };
/** Validates an accumulator state before it is queued: its columns as the schema stores them. */
export function accumulatorStateRow(state: AccumulatorState, seq: bigint): { leafCount: number; peaks: Buffer; charged: string } {
  if (!Number.isSafeInteger(state.leafCount) || state.leafCount < 1) {
    throw new InvalidFieldError("accumulator.leafCount", "a positive integer (the step's receipt is counted)", state.leafCount);
  }
  if (state.peaks.length !== popcount(state.leafCount)) {
    throw new InconsistentRecordError(`The accumulator state of step ${seq} has ${state.peaks.length} peaks; ${state.leafCount} receipts make ${popcount(state.leafCount)}.`);
  }
  if (typeof state.charged !== "bigint" || state.charged < 0n) throw new InvalidFieldError("accumulator.charged", "a non-negative bigint", state.charged);
  const peaks = state.peaks.map((peak, i) => expectHash(peak, `accumulator.peaks[${i}]`).toLowerCase());
  return { leafCount: state.leafCount, peaks: peaksToBlob(peaks as Hex[]), charged: state.charged.toString() };
}

function popcount(n: number): number {
  let count = 0;
  for (let rest = n; rest > 0; rest = Math.floor(rest / 2)) count += rest % 2;
  return count;
}

type AccumulatorRow = { leaf_count: bigint; seq: bigint; peaks: Buffer; charged: string };
/** A step row with its interned parts joined in (`terms`, `policy` are their values). */
type StepRow = { seq: bigint; ticket: Buffer; terms: Buffer; receipt: Buffer | null; policy: Buffer | null; leaf: Buffer | null };
/** A step row as stored (`terms`, `policy` are ids): what a commit-time conflict check compares. */
type RawStepRow = { ticket: Buffer; terms: bigint; receipt: Buffer | null; policy: bigint | null; leaf: Buffer | null };
const STEP_COLUMNS = `s.seq, s.ticket, t.value AS terms, s.receipt, p.value AS policy, s.leaf
       FROM steps s JOIN interned t ON t.id = s.terms LEFT JOIN interned p ON p.id = s.policy`;

/**
 * The prepared statements, typed by hand so that the declaration emitted for this module can name them
 * (better-sqlite3's statement interface lives in a namespace its types do not export).
 */
export type Statements = {
upsertChannel: Database.Statement<[string, string, string, string, string], unknown>;
  updateChannel: Database.Statement<[string | null, string | null, string], unknown>;
  channelExists: Database.Statement<[string], number>;
  getChannel: Database.Statement<[string], ChannelRow>;
  listChannels: Database.Statement<[{ role: string | null; status: string | null; }], ChannelRow>;
  insertChannelNumber: Database.Statement<[string], unknown>;
  channelNo: Database.Statement<[string], bigint>;
  internedId: Database.Statement<[Buffer], bigint>;
  intern: Database.Statement<[Buffer], unknown>;
  insertTicket: Database.Statement<[bigint, bigint, Buffer, bigint], unknown>;
  upsertStep: Database.Statement<[bigint, bigint, Buffer, bigint, Buffer, bigint, Buffer], unknown>;
  rawStep: Database.Statement<[bigint, bigint], RawStepRow>;
  getStep: Database.Statement<[bigint, bigint], StepRow>;
  latestTicket: Database.Statement<[bigint], StepRow>;
  latestSeq: Database.Statement<[bigint], bigint>;
  steps: Database.Statement<[bigint, bigint, number], StepRow>;
  leaves: Database.Statement<[bigint], Buffer>;
  leavesAfter: Database.Statement<[bigint, bigint, number], { seq: bigint; receipt: Buffer; leaf: Buffer; }>;
  insertAccumulatorState: Database.Statement<[bigint, number, bigint, Buffer, string], unknown>;
  hasAccumulatorState: Database.Statement<[bigint], number>;
  latestAccumulatorState: Database.Statement<[bigint], AccumulatorRow>;
  accumulatorStateAtMost: Database.Statement<[bigint, number], AccumulatorRow>;
  latestAnsweredStep: Database.Statement<[bigint], StepRow>;
  receiptCount: Database.Statement<[bigint], number>;
  getPruned: Database.Statement<[string], { pruned_at: bigint; archive: string; }>;
  deleteChannel: Database.Statement<[{ no: bigint; id: string; }], unknown>[];
  insertPruned: Database.Statement<[string, bigint, string], unknown>;
  insertCommit: Database.Statement<[string, string, string, string], unknown>;
  getCommit: Database.Statement<[string, string, string], string>;
  latestCommit: Database.Statement<[string, string], { leaf_count: string; signed_commit: string; }>;
  upsertClosing: Database.Statement<[string, string], unknown>;
  getClosing: Database.Statement<[string], string>;
  insertCooperativeClose: Database.Statement<[string, string], unknown>;
  getCooperativeClose: Database.Statement<[string], string>;
  insertFaultStatement: Database.Statement<[string, string, string], unknown>;
  getFaultStatement: Database.Statement<[string, string], string>;
  insertResult: Database.Statement<[bigint, bigint, string, string], unknown>;
  getResult: Database.Statement<[bigint, bigint], { request: string; output: string; }>;
  latestResultSeq: Database.Statement<[bigint], bigint>;
  results: Database.Statement<[bigint, bigint, number], { seq: bigint; request: string; output: string; }>;
  insertGrant: Database.Statement<[string, string, string], unknown>;
  grants: Database.Statement<[string], { key: string; grant: string; }>;
  grantsOfKey: Database.Statement<[string, string], { key: string; grant: string; }>;
  upsertCursor: Database.Statement<[string, string], unknown>;
  getCursor: Database.Statement<[string], string>;
};

export function prepareStatements(db: Database.Database): Statements {
  return {
    upsertChannel: db.prepare<[string, string, string, string, string]>(
      `INSERT INTO channels (session_id, role, status, deposit, channel) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (session_id) DO UPDATE
       SET role = excluded.role, status = excluded.status, deposit = excluded.deposit, channel = excluded.channel`,
    ),
    updateChannel: db.prepare<[string | null, string | null, string]>(
      "UPDATE channels SET deposit = coalesce(?, deposit), status = coalesce(?, status) WHERE session_id = ?",
    ),
    channelExists: db.prepare<[string], number>("SELECT 1 FROM channels WHERE session_id = ?").pluck(),
    getChannel: db.prepare<[string], ChannelRow>(
      "SELECT session_id, role, status, deposit, channel FROM channels WHERE session_id = ?",
    ),
    listChannels: db.prepare<{ role: string | null; status: string | null }, ChannelRow>(
      `SELECT c.session_id, c.role, c.status, c.deposit, c.channel FROM channels c JOIN channel_numbers n ON n.session_id = c.session_id
       WHERE (@role IS NULL OR c.role = @role) AND (@status IS NULL OR c.status = @status) ORDER BY n.no`,
    ),
    insertChannelNumber: db.prepare<[string]>("INSERT INTO channel_numbers (session_id) VALUES (?) ON CONFLICT (session_id) DO NOTHING"),
    channelNo: db.prepare<[string], bigint>("SELECT no FROM channel_numbers WHERE session_id = ?").pluck().safeIntegers(true),
    internedId: db.prepare<[Buffer], bigint>("SELECT id FROM interned WHERE value = ?").pluck().safeIntegers(true),
    intern: db.prepare<[Buffer]>("INSERT INTO interned (value) VALUES (?) ON CONFLICT (value) DO NOTHING"),
    insertTicket: db.prepare<[bigint, bigint, Buffer, bigint]>(
      "INSERT INTO steps (channel, seq, ticket, terms) VALUES (?, ?, ?, ?) ON CONFLICT (channel, seq) DO NOTHING",
    ),
    // Adds the receipt to a step that holds the same ticket and no receipt yet; anything else changes nothing.
    upsertStep: db.prepare<[bigint, bigint, Buffer, bigint, Buffer, bigint, Buffer]>(
      `INSERT INTO steps (channel, seq, ticket, terms, receipt, policy, leaf) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (channel, seq) DO UPDATE SET receipt = excluded.receipt, policy = excluded.policy, leaf = excluded.leaf
       WHERE steps.ticket = excluded.ticket AND steps.terms = excluded.terms AND steps.receipt IS NULL`,
    ),
    rawStep: db.prepare<[bigint, bigint], RawStepRow>("SELECT ticket, terms, receipt, policy, leaf FROM steps WHERE channel = ? AND seq = ?").safeIntegers(true),
    getStep: db.prepare<[bigint, bigint], StepRow>(`SELECT ${STEP_COLUMNS} WHERE s.channel = ? AND s.seq = ?`).safeIntegers(true),
    latestTicket: db.prepare<[bigint], StepRow>(`SELECT ${STEP_COLUMNS} WHERE s.channel = ? ORDER BY s.seq DESC LIMIT 1`).safeIntegers(true),
    latestSeq: db.prepare<[bigint], bigint>("SELECT seq FROM steps WHERE channel = ? ORDER BY seq DESC LIMIT 1").pluck().safeIntegers(true),
    steps: db.prepare<[bigint, bigint, number], StepRow>(`SELECT ${STEP_COLUMNS} WHERE s.channel = ? AND s.seq >= ? ORDER BY s.seq LIMIT ?`).safeIntegers(true),
    leaves: db.prepare<[bigint], Buffer>("SELECT leaf FROM steps WHERE channel = ? AND leaf IS NOT NULL ORDER BY seq").pluck(),
    leavesAfter: db.prepare<[bigint, bigint, number], { seq: bigint; receipt: Buffer; leaf: Buffer }>(
      "SELECT seq, receipt, leaf FROM steps WHERE channel = ? AND seq > ? AND leaf IS NOT NULL ORDER BY seq LIMIT ?",
    ).safeIntegers(true),
    insertAccumulatorState: db.prepare<[bigint, number, bigint, Buffer, string]>(
      `INSERT INTO accumulator_states (channel, leaf_count, seq, peaks, charged) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (channel, leaf_count) DO NOTHING`,
    ),
    hasAccumulatorState: db.prepare<[bigint], number>("SELECT 1 FROM accumulator_states WHERE channel = ? LIMIT 1").pluck(),
    latestAccumulatorState: db.prepare<[bigint], AccumulatorRow>(
      "SELECT leaf_count, seq, peaks, charged FROM accumulator_states WHERE channel = ? ORDER BY leaf_count DESC LIMIT 1",
    ).safeIntegers(true),
    accumulatorStateAtMost: db.prepare<[bigint, number], AccumulatorRow>(
      "SELECT leaf_count, seq, peaks, charged FROM accumulator_states WHERE channel = ? AND leaf_count <= ? ORDER BY leaf_count DESC LIMIT 1",
    ).safeIntegers(true),
    latestAnsweredStep: db.prepare<[bigint], StepRow>(
      `SELECT ${STEP_COLUMNS} WHERE s.channel = ? AND s.leaf IS NOT NULL ORDER BY s.seq DESC LIMIT 1`,
    ).safeIntegers(true),
    receiptCount: db.prepare<[bigint], number>("SELECT count(*) FROM steps WHERE channel = ? AND leaf IS NOT NULL").pluck(),
    getPruned: db.prepare<[string], { pruned_at: bigint; archive: string }>("SELECT pruned_at, archive FROM pruned_channels WHERE session_id = ?").safeIntegers(true),
    deleteChannel: [
      "DELETE FROM steps WHERE channel = @no",
      "DELETE FROM accumulator_states WHERE channel = @no",
      "DELETE FROM commits WHERE session_id = @id",
      "DELETE FROM closings WHERE session_id = @id",
      "DELETE FROM cooperative_closes WHERE session_id = @id",
      "DELETE FROM fault_statements WHERE session_id = @id",
      "DELETE FROM results WHERE channel = @no",
      "DELETE FROM session_key_grants WHERE session_id = @id",
      "DELETE FROM channel_numbers WHERE no = @no",
      "DELETE FROM channels WHERE session_id = @id",
    ].map((sql) => db.prepare<{ no: bigint; id: string }>(sql)),
    insertPruned: db.prepare<[string, bigint, string]>("INSERT INTO pruned_channels (session_id, pruned_at, archive) VALUES (?, ?, ?)"),
    insertCommit: db.prepare<[string, string, string, string]>(
      `INSERT INTO commits (session_id, signer_role, leaf_count, signed_commit) VALUES (?, ?, ?, ?)
       ON CONFLICT (session_id, signer_role, leaf_count) DO NOTHING`,
    ),
    getCommit: db.prepare<[string, string, string], string>(
      "SELECT signed_commit FROM commits WHERE session_id = ? AND signer_role = ? AND leaf_count = ?",
    ).pluck(),
    latestCommit: db.prepare<[string, string], { leaf_count: string; signed_commit: string }>(
      `SELECT leaf_count, signed_commit FROM commits WHERE session_id = ? AND signer_role = ?
       ORDER BY leaf_count DESC LIMIT 1`,
    ),
    upsertClosing: db.prepare<[string, string]>(
      "INSERT INTO closings (session_id, closing) VALUES (?, ?) ON CONFLICT (session_id) DO UPDATE SET closing = excluded.closing",
    ),
    getClosing: db.prepare<[string], string>("SELECT closing FROM closings WHERE session_id = ?").pluck(),
    insertCooperativeClose: db.prepare<[string, string]>(
      "INSERT INTO cooperative_closes (session_id, close) VALUES (?, ?) ON CONFLICT (session_id) DO NOTHING",
    ),
    getCooperativeClose: db.prepare<[string], string>("SELECT close FROM cooperative_closes WHERE session_id = ?").pluck(),
    insertFaultStatement: db.prepare<[string, string, string]>(
      "INSERT INTO fault_statements (session_id, seq, statement) VALUES (?, ?, ?) ON CONFLICT (session_id, seq) DO NOTHING",
    ),
    getFaultStatement: db.prepare<[string, string], string>("SELECT statement FROM fault_statements WHERE session_id = ? AND seq = ?").pluck(),
    insertResult: db.prepare<[bigint, bigint, string, string]>(
      "INSERT INTO results (channel, seq, request, output) VALUES (?, ?, ?, ?) ON CONFLICT (channel, seq) DO NOTHING",
    ),
    getResult: db.prepare<[bigint, bigint], { request: string; output: string }>("SELECT request, output FROM results WHERE channel = ? AND seq = ?"),
    latestResultSeq: db.prepare<[bigint], bigint>("SELECT seq FROM results WHERE channel = ? ORDER BY seq DESC LIMIT 1").pluck().safeIntegers(true),
    results: db.prepare<[bigint, bigint, number], { seq: bigint; request: string; output: string }>(
      "SELECT seq, request, output FROM results WHERE channel = ? AND seq >= ? ORDER BY seq LIMIT ?",
    ).safeIntegers(true),
    insertGrant: db.prepare<[string, string, string]>(
      "INSERT INTO session_key_grants (session_id, key, grant) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
    ),
    grants: db.prepare<[string], { key: string; grant: string }>("SELECT key, grant FROM session_key_grants WHERE session_id = ? ORDER BY rowid"),
    grantsOfKey: db.prepare<[string, string], { key: string; grant: string }>(
      "SELECT key, grant FROM session_key_grants WHERE session_id = ? AND key = ? ORDER BY rowid",
    ),
    upsertCursor: db.prepare<[string, string]>(
      "INSERT INTO cursors (name, block) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET block = excluded.block",
    ),
    getCursor: db.prepare<[string], string>("SELECT block FROM cursors WHERE name = ?").pluck(),
  };
}


export function depositText(deposit: bigint, path: string): string {
  return uintToJson(expectUint(uintToJson(deposit), path, 128));
}

/** Runs `decode`, turning any failure into a {@link StoreCorruptionError} naming the row. */
export function decodeRow<T>(table: string, key: string, decode: () => T): T {
  try {
    return decode();
  } catch (cause) {
    throw new StoreCorruptionError(table, key, cause);
  }
}

/** A decoded field must repeat its row's key; a mismatch means a row was moved or edited. */
export function expectRowKey<T extends string | bigint>(value: T, key: T, path: string): void {
  if (value !== key) throw new InvalidFieldError(path, `${String(key)} (the key of its row)`, value);
}

export function decodeChannel(row: ChannelRow): ChannelRecord {
  return decodeRow("channels", row.session_id, () => {
    const fixed = channelFromJson(parseStored(row.channel, "Channel"));
    expectRowKey<string>(fixed.sessionId, row.session_id, "Channel.sessionId");
    return {
      ...fixed,
      role: expectLiteral(row.role, "channels.role", CHANNEL_ROLES),
      status: expectLiteral(row.status, "channels.status", CHANNEL_STATUSES),
      deposit: expectUint(row.deposit, "channels.deposit", 128),
    };
  });
}

/** A stored ticket through the ticket's validators (schema 7: bytes, with the session id and seq from the key). */
export function decodeTicket(sessionId: Hex, seq: bigint, blob: Buffer, terms: Buffer): SignedPaymentTicket {
  return signedPaymentTicketFromJson(decodeTicketBlob(sessionId, seq, blob, terms));
}

export function decodeStepRow(sessionId: Hex, row: StepRow): StepRecord {
  const seq = seqFromInteger(row.seq);
  return decodeRow("steps", `${sessionId}#${seqKey(seq)}`, () => {
    const step: StepRecord = { seq, ticket: decodeTicket(sessionId, seq, row.ticket, row.terms) };
    if (row.receipt !== null || row.policy !== null || row.leaf !== null) {
      if (row.receipt === null || row.policy === null || row.leaf === null) throw new InvalidFieldError("steps.receipt", "a receipt, its policy and its leaf, all or none", null);
      step.receipt = signedSessionReceiptFromJson(decodeReceiptBlob(sessionId, seq, row.receipt, row.policy));
      step.leaf = expectHash(`0x${row.leaf.toString("hex")}`, "steps.leaf");
    }
    return step;
  });
}

