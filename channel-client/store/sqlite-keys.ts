/**
 * The SQLite store's caches of keys and recent records (issue 33 item 2: moved out of `SqliteStore`, decision 0021):
 * channels known to be stored, the newest committed steps and top seq per session (for the enqueue-time conflict
 * checks), channel numbers and interned ids (looked up inside a commit), and which channels hold an accumulator
 * state. A rolled-back commit clears what it may have created.
 */
import type { Address, Hex } from "viem";

import { canon } from "../core/canonical";
import type { SessionReceipt } from "../core/receipt";
import type { PaymentTicket } from "../core/ticket";
import { expectHash } from "../core/validate";
import { UnknownChannelError } from "./errors";
import { decodeReceiptBlob, decodeTicketBlob, receiptPolicyKey, seqFromInteger, seqFromKey, seqKey, seqToInteger, ticketTermsKey } from "./records";
import type { Batch } from "./sqlite-commit";
import { decodeRow, type Statements } from "./sqlite-rows";

/**
 * How many recently committed steps the store remembers for its conflict checks: a write of a new seq needs none
 * (it is above the session's top seq), so these serve a step written again soon after (a pipeline's window, at
 * most 64 calls). Kept small because every remembered text outlives a young-generation GC (issue 31 item 5): an
 * older step is read from the database instead.
 */
const RECENT_STEPS = 256;

/** The key and record caches of one `SqliteStore` (see the file comment). */
export class SqliteKeys {
  readonly #sql: Statements;
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
  /** The highest seq key with a stored result, per session: a result above it needs no lookup (one query per ticket). */
  readonly #topResult = new Map<string, string>();
  /**
   * Committed channel numbers by session id and interned ids by value (`provider + termsHash`, `policyHash +
   * model`): looked up inside a commit, cleared when a commit fails (its new rows were rolled back).
   */
  readonly #channelNos = new Map<string, bigint>();
  readonly #internedIds = new Map<string, bigint>();
  /** Channel numbers known to hold an accumulator state (so the next is stored only every interval). */
  readonly withState = new Set<bigint>();

  constructor(sql: Statements) {
    this.#sql = sql;
  }

  /** A commit failed: numbers, ids and states first seen in the rolled-back transaction may not exist. */
  rolledBack(): void {
    this.#channelNos.clear();
    this.#internedIds.clear();
    this.withState.clear();
  }

  /** The committed step at `seq` (`key` = `sessionId:seq`), from the recent writes, the known top seq, or a query. */
  storedStep(id: string, seq: string, key: string): { ticket: string; receipt: string | undefined } | undefined {
    const recent = this.#recentSteps.get(key);
    if (recent !== undefined) return recent;
    const no = this.channelNo(id as Hex);
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

  /**
   * Whether a result may already be stored for `seq` (a seq key) of session `id`: not when `seq` is above the
   * session's highest stored result, which is every new call's case. A writer outside this store (another
   * process on the same file) is still caught inside the commit.
   */
  resultMayExist(id: string, seq: string): boolean {
    let top = this.#topResult.get(id);
    if (top === undefined) {
      const no = this.channelNo(id as Hex);
      if (no === undefined) return false; // a channel first stored in the pending batch has no results yet
      const latest = this.#sql.latestResultSeq.get(no);
      top = latest === undefined ? "" : seqKey(seqFromInteger(latest));
      this.#topResult.set(id, top);
    }
    return seq <= top; // seq keys have one width, so text order is numeric order
  }

  /** Remembers a committed batch's steps for the next conflict checks (the newest few thousand). */
  noteCommitted(batch: Batch): void {
    for (const id of batch.deleted) this.forget(id);
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
    for (const key of batch.results.keys()) {
      const id = key.slice(0, key.indexOf(":"));
      const seq = key.slice(id.length + 1);
      const top = this.#topResult.get(id);
      if (top !== undefined && seq > top) this.#topResult.set(id, seq);
    }
    for (const key of this.#recentSteps.keys()) {
      if (this.#recentSteps.size <= RECENT_STEPS) break;
      this.#recentSteps.delete(key);
    }
  }

  /** Drops a deleted channel from every cache. */
  forget(id: string): void {
    this.#storedChannels.delete(id);
    this.#topSeq.delete(id);
    this.#topResult.delete(id);
    const no = this.#channelNos.get(id);
    if (no !== undefined) this.withState.delete(no);
    this.#channelNos.delete(id);
    for (const key of [...this.#recentSteps.keys()]) if (key.startsWith(`${id}:`)) this.#recentSteps.delete(key);
  }

  /** The committed number of a channel, or undefined if it is not stored (reads). */
  channelNo(sessionId: Hex): bigint | undefined {
    let no = this.#channelNos.get(sessionId);
    if (no === undefined) {
      no = this.#sql.channelNo.get(sessionId);
      if (no !== undefined) this.#channelNos.set(sessionId, no);
    }
    return no;
  }

  /** Inside a commit: the channel's number, which an earlier write of the same batch may have just created. */
  channelNoIn(id: string): bigint {
    const no = this.channelNo(id as Hex);
    if (no === undefined) throw new UnknownChannelError(id as Hex);
    return no;
  }

  /** Inside a commit: the id of an interned value, inserting it the first time it is seen. */
  internedId(key: string, value: () => Buffer): bigint {
    let id = this.#internedIds.get(key);
    if (id === undefined) {
      const bytes = value();
      this.#sql.intern.run(bytes);
      id = this.#sql.internedId.get(bytes)!;
      this.#internedIds.set(key, id);
    }
    return id;
  }

  termsId(provider: Address, termsHash: Hex): bigint {
    return this.internedId(`t${provider.toLowerCase()}${termsHash}`, () => ticketTermsKey({ provider, termsHash } as PaymentTicket));
  }

  policyId(policyHash: Hex, model: string): bigint {
    return this.internedId(`p${policyHash}${model}`, () => receiptPolicyKey({ policyHash, modelSnapshotId: model } as SessionReceipt));
  }

  /** Whether channel `id` is known, without a query, to hold a committed accumulator state. */
  stateKnown(id: string): boolean {
    const no = this.#channelNos.get(id);
    return no !== undefined && this.withState.has(no);
  }

  hasState(no: bigint): boolean {
    if (this.withState.has(no)) return true;
    if (this.#sql.hasAccumulatorState.get(no) === undefined) return false;
    this.withState.add(no);
    return true;
  }

  /** The session id, checked, if the channel is stored or pending in `batch`; else {@link UnknownChannelError}. */
  knownChannel(batch: Batch, sessionId: Hex): Hex {
    const id = expectHash(sessionId, "sessionId");
    if (batch.deleted.has(id)) throw new UnknownChannelError(id);
    if (this.#storedChannels.has(id) || batch.channels.has(id)) return id;
    if (this.#sql.channelExists.get(id) === undefined) throw new UnknownChannelError(id);
    this.#storedChannels.add(id);
    return id;
  }
}
