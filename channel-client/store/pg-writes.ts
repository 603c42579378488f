/**
 * The writes of a `PgStore` (issue 33 item 2: moved out of `PgStore`, decision 0021): each checks its input against
 * the cache and the writes still pending, claims its keys, and returns what runs inside the channel's transaction
 * (`run`), what changes the cache once COMMIT returned (`apply`) and what releases its claims (`settle`).
 */
import type { Hex } from "viem";

import { InvalidFieldError } from "../core/errors";
import { signedFaultStatementFromJson, signedFaultStatementToJson, type SignedFaultStatement } from "../core/fault-statement";
import { signedReceiptCommitFromJson, type SignedReceiptCommit } from "../core/receipt-commit";
import { sessionReceiptHash, signedSessionReceiptFromJson, type SignedSessionReceiptJson } from "../core/receipt";
import { signedPaymentTicketFromJson, type SignedPaymentTicket, type SignedPaymentTicketJson } from "../core/ticket";
import { signedSessionKeyGrantFromJson, signedSessionKeyGrantToJson, type SignedSessionKeyGrant } from "../core/session-key";
import { MAX_PACKET_BYTES } from "../core/packets";
import { expectHash, expectLiteral, expectString, expectUint, uintToJson } from "../core/validate";
import {
  ChannelPrunedError,
  CommitConflictError,
  CooperativeCloseConflictError,
  FaultStatementConflictError,
  InconsistentRecordError,
  ReceiptConflictError,
  ResultConflictError,
  TicketConflictError,
  UnknownChannelError,
} from "./errors";
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
  assertStepParts,
  signedReceiptText,
  signedTicketText,
} from "./records";
import {
  CHANNEL_ROLES,
  CHANNEL_STATUSES,
  type AccumulatorState,
  type ChannelPatch,
  type ChannelRecord,
  type ChannelRole,
  type ClosingRecord,
  type CooperativeCloseRecord,
  type PrunedChannelRecord,
  type ResultRecord,
  type StepRecord,
} from "./store";
import { type CachedStep, ChannelCache } from "./pg-cache";
import {
  accumulatorColumns,
  bufHex,
  channelId,
  defaultsOf,
  derivable,
  hexBuf,
  receiptColumns,
  receiptTextOf,
  receiptTextOrUndefined,
  ticketColumns,
  ticketTextOf,
} from "./pg-rows";
import type { PgWriteQueues } from "./pg-queues";
import type { PgState } from "./pg-state";

export function putChannel(s: PgState, q: PgWriteQueues, record: ChannelRecord): Promise<void> {
  return q.write("putChannel", record.sessionId, (pending) => {
    const sessionId = expectHash(record.sessionId, "ChannelRecord.sessionId");
    const pruned = s.pruned.get(sessionId);
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
        s.records.set(sessionId, { id, record: copy });
        if (!s.held.has(sessionId) && (s.mode !== "fleet" || s.epochs.has(sessionId))) {
          s.held.set(sessionId, new ChannelCache(id, defaultsOf(copy)));
        }
      },
      settle: () => {
        pending.channel--;
      },
    };
  });
}

export function updateChannel(s: PgState, q: PgWriteQueues, sessionId: Hex, patch: ChannelPatch): Promise<void> {
  return q.write("updateChannel", sessionId, (pending) => {
    const id = s.knownChannel(pending, sessionId);
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
        const known = s.records.get(id);
        if (!known) return;
        const record = { ...known.record };
        if (deposit !== null) record.deposit = BigInt(deposit);
        if (status !== null) record.status = status;
        known.record = record;
      },
    };
  });
}

export function deleteChannel(s: PgState, q: PgWriteQueues, sessionId: Hex, pruned: PrunedChannelRecord): Promise<void> {
  return q.write("deleteChannel", sessionId, (pending) => {
    const id = s.knownChannel(pending, sessionId);
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
        s.records.delete(id);
        s.held.delete(id);
        s.epochs.delete(id);
        s.pruned.set(id, { prunedAt, archive });
      },
    };
  });
}

export function putTicket(s: PgState, q: PgWriteQueues, sessionId: Hex, signed: SignedPaymentTicket): Promise<void> {
  return q.write("putTicket", sessionId, (pending) => {
    const id = expectHash(sessionId, "sessionId");
    if (signed.ticket.sessionId !== id) throw new InconsistentRecordError(`The ticket is for session ${signed.ticket.sessionId}, not ${id}.`);
    seqKey(signed.ticket.seq);
    const text = signedTicketText(signed);
    s.knownChannel(pending, id);
    const seq = signed.ticket.seq;
    const existing = pending.tickets.get(seq) ?? s.held.get(id)?.bySeq.get(seq)?.ticketText;
    if (existing !== undefined && existing !== text) throw new TicketConflictError(id, seq);
    pending.tickets.set(seq, text);
    const json = JSON.parse(text) as SignedPaymentTicketJson;
    let cached: CachedStep | undefined;
    return {
      run: async (tx) => {
        const channel = channelId(tx, id);
        const defaults = s.defaults(id, tx);
        const columns = ticketColumns(json, defaults);
        const inserted = await tx.client.query(
          `INSERT INTO steps (channel_id, seq, amount, root, ticket_sig, ticket_provider, ticket_terms) VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (channel_id, seq) DO NOTHING`,
          [channel, json.ticket.seq, ...columns],
        );
        if (inserted.rowCount === 0) {
          const row = await s.stepRow(tx, channel, json.ticket.seq);
          if (!row || ticketTextOf(row, id, defaults) !== text) throw new TicketConflictError(id, seq);
        }
        cached = { seq, ticketText: text, ticket: signedPaymentTicketFromJson(json) };
      },
      apply: () => {
        if (cached) s.held.get(id)?.addStep(cached);
      },
      settle: () => {
        if (pending.tickets.get(seq) === text) pending.tickets.delete(seq);
      },
    };
  });
}

export function putStep(s: PgState, q: PgWriteQueues, sessionId: Hex, step: Required<StepRecord>, accumulator?: AccumulatorState): Promise<void> {
  return q.write("putStep", sessionId, (pending) => {
    const id = expectHash(sessionId, "sessionId");
    const { ticket, receipt } = step;
    assertStepParts(id, step);
    seqKey(step.seq);
    const leaf = expectHash(step.leaf, "step.leaf").toLowerCase() as Hex;
    const ticketText = signedTicketText(ticket);
    const receiptText = signedReceiptText(receipt);
    s.knownChannel(pending, id);
    const seq = step.seq;
    const cachedStep = s.held.get(id)?.bySeq.get(seq);
    const existingTicket = pending.tickets.get(seq) ?? cachedStep?.ticketText;
    const existingReceipt = pending.receipts.get(seq) ?? cachedStep?.receiptValue;
    const receiptValue = `${receiptText}\n${leaf}`;
    if (existingTicket !== undefined && existingTicket !== ticketText) throw new TicketConflictError(id, seq);
    if (existingReceipt !== undefined && existingReceipt !== receiptValue) throw new ReceiptConflictError(id, seq);
    const state = accumulator === undefined ? undefined : accumulatorColumns(accumulator, seq);
    const cache = s.held.get(id);
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
        const defaults = s.defaults(id, tx);
        const t = ticketColumns(ticketJson, defaults);
        const r = receiptColumns(receiptJson, defaults, compact);
        const acc = state && !s.held.get(id)?.accumulators.has(state.leafCount) ? state : undefined;
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
          const row = await s.stepRow(tx, channel, ticketJson.ticket.seq);
          if (!row || ticketTextOf(row, id, defaults) !== ticketText) throw new TicketConflictError(id, seq);
          const before = s.held.get(id)?.bySeq.get(seq - 1n)?.receipt?.receipt ?? pending.receiptObjects.get(seq - 1n);
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
        const cache = s.held.get(id);
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

export function putCommit(s: PgState, q: PgWriteQueues, sessionId: Hex, by: ChannelRole, signed: SignedReceiptCommit): Promise<void> {
  return q.write("putCommit", sessionId, (pending) => {
    const id = expectHash(sessionId, "sessionId");
    const role = expectLiteral(by, "by", CHANNEL_ROLES);
    if (signed.commit.sessionId !== id) throw new InconsistentRecordError(`The receipt commit is for session ${signed.commit.sessionId}, not ${id}.`);
    const leafCount = seqKey(signed.commit.leafCount);
    const text = canonChecked(signedReceiptCommitToJson(signed), (value) => signedReceiptCommitFromJson(value));
    s.knownChannel(pending, id);
    const key = `${role}:${leafCount}`;
    const existing = pending.commits.get(key) ?? s.held.get(id)?.commits.get(key)?.text;
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
        s.held.get(id)?.commits.set(key, { text, signed: signedReceiptCommitFromJson(JSON.parse(text)), leafCount: signed.commit.leafCount, role });
      },
      settle: () => {
        if (pending.commits.get(key) === text) pending.commits.delete(key);
      },
    };
  });
}

export function putClosing(s: PgState, q: PgWriteQueues, sessionId: Hex, closing: ClosingRecord): Promise<void> {
  return q.write("putClosing", sessionId, (pending) => {
    const id = s.knownChannel(pending, sessionId);
    const text = canonChecked(closingRecordToJson(closing), (value) => closingRecordFromJson(value));
    return {
      run: async (tx) => {
        await tx.client.query(
          "INSERT INTO closings (channel_id, closing) VALUES ($1, $2) ON CONFLICT (channel_id) DO UPDATE SET closing = excluded.closing",
          [channelId(tx, id), text],
        );
      },
      apply: () => {
        const cache = s.held.get(id);
        if (cache) cache.closing = closingRecordFromJson(JSON.parse(text));
      },
    };
  });
}

export function putCooperativeClose(s: PgState, q: PgWriteQueues, sessionId: Hex, close: CooperativeCloseRecord): Promise<void> {
  return q.write("putCooperativeClose", sessionId, (pending) => {
    const id = s.knownChannel(pending, sessionId);
    if (close.summary.sessionId !== id) throw new InconsistentRecordError(`The cooperative close is for session ${close.summary.sessionId}, not ${id}.`);
    const text = canonChecked(cooperativeCloseToJson(close), (value) => cooperativeCloseFromJson(value));
    const existing = pending.cooperativeClose ?? s.held.get(id)?.cooperativeClose?.text;
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
        const cache = s.held.get(id);
        if (cache) cache.cooperativeClose = { text, record: cooperativeCloseFromJson(JSON.parse(text)) };
      },
      settle: () => {
        if (pending.cooperativeClose === text) pending.cooperativeClose = undefined;
      },
    };
  });
}

export function putFaultStatement(s: PgState, q: PgWriteQueues, sessionId: Hex, signed: SignedFaultStatement): Promise<void> {
  return q.write("putFaultStatement", sessionId, (pending) => {
    const id = s.knownChannel(pending, sessionId);
    if (signed.statement.sessionId !== id) throw new InconsistentRecordError(`The fault statement is for session ${signed.statement.sessionId}, not ${id}.`);
    const seq = signed.statement.seq;
    seqKey(seq);
    const text = canonChecked(signedFaultStatementToJson(signed), (value) => signedFaultStatementFromJson(value));
    const existing = pending.faults.get(seq) ?? s.held.get(id)?.faults.get(seq)?.text;
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
        s.held.get(id)?.faults.set(seq, { text, signed: signedFaultStatementFromJson(JSON.parse(text)) });
      },
      settle: () => {
        if (pending.faults.get(seq) === text) pending.faults.delete(seq);
      },
    };
  });
}

export function putResult(s: PgState, q: PgWriteQueues, sessionId: Hex, record: ResultRecord): Promise<void> {
  return q.write("putResult", sessionId, (pending) => {
    const id = s.knownChannel(pending, sessionId);
    const seq = expectUint(uintToJson(record.seq), "result.seq", 64);
    const request = expectString(record.request, "result.request", MAX_PACKET_BYTES);
    const output = expectString(record.output, "result.output", MAX_PACKET_BYTES);
    const value = `${request}\n${output}`;
    const stored = s.held.get(id)?.results.get(seq);
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
        s.held.get(id)?.results.set(seq, { seq, request, output });
      },
      settle: () => {
        if (pending.results.get(seq) === value) pending.results.delete(seq);
      },
    };
  });
}

export function putSessionKeyGrant(s: PgState, q: PgWriteQueues, sessionId: Hex, signed: SignedSessionKeyGrant): Promise<void> {
  return q.write("putSessionKeyGrant", sessionId, (pending) => {
    const id = s.knownChannel(pending, sessionId);
    if (signed.grant.sessionId !== id) throw new InconsistentRecordError(`The session-key grant is for session ${signed.grant.sessionId}, not ${id}.`);
    const text = canonChecked(signedSessionKeyGrantToJson(signed), (value) => signedSessionKeyGrantFromJson(value));
    const key = signed.grant.key.toLowerCase();
    return {
      run: async (tx) => {
        await tx.client.query("INSERT INTO session_key_grants (channel_id, key, grant_text) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", [channelId(tx, id), hexBuf(key), text]);
      },
      apply: () => {
        const cache = s.held.get(id);
        if (cache && !cache.grants.some((g) => g.key === key && g.text === text)) {
          cache.grants.push({ key, text, signed: signedSessionKeyGrantFromJson(JSON.parse(text)) });
        }
      },
    };
  });
}

export function setCursor(s: PgState, q: PgWriteQueues, name: string, block: bigint): Promise<void> {
  return q.write("setCursor", undefined, () => {
    const key = expectString(name, "cursor name", 256);
    if (key === "") throw new InvalidFieldError("cursor name", "a non-empty string", name);
    const value = expectUint(uintToJson(block), "block", 64);
    return {
      run: async (tx) => {
        await tx.client.query("INSERT INTO cursors (name, block) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET block = excluded.block", [key, value.toString()]);
      },
      apply: () => {
        s.cursors.set(key, value);
      },
    };
  });
}
