/**
 * Typed errors of the channel store. Each has a literal `name` equal to its class name, like the
 * errors in `../errors`, so callers can match on it without `instanceof`.
 */
import type { Hex } from "viem";

import { BaseError } from "../core/errors";

/** The store was asked to read or write after `close()`. */
export class StoreClosedError extends BaseError {
  override name = "StoreClosedError" as const;
  constructor(readonly operation: string) {
    super(`Cannot ${operation}: the store is closed.`, {
      details: "Open the store again (SqliteStore.open) before reading or writing.",
    });
  }
}

/** The database file could not be opened or prepared for use (unreadable, not SQLite, locked). */
export class StoreOpenError extends BaseError {
  override name = "StoreOpenError" as const;
}

/** The database was written by a newer version of this client, or by something that is not this store. */
export class UnsupportedSchemaError extends BaseError {
  override name = "UnsupportedSchemaError" as const;
}

/**
 * A group commit failed, so none of its writes happened. Every write of the batch rejects with this
 * error (the same instance); `cause` is what SQLite (or a conflicting concurrent writer) reported.
 */
export class StoreWriteError extends BaseError {
  override name = "StoreWriteError" as const;
  constructor(readonly operations: number, cause: unknown) {
    super(`A batch of ${operations} store write(s) failed and was rolled back; none of them is durable.`, {
      cause,
      details: cause instanceof Error ? cause.message : String(cause),
    });
  }
}

/** A stored row does not decode to a valid record: the file was damaged or edited by hand. */
export class StoreCorruptionError extends BaseError {
  override name = "StoreCorruptionError" as const;
  constructor(readonly table: string, readonly key: string, cause: unknown) {
    super(`The ${table} row ${key} is corrupt; refusing to return it.`, {
      cause,
      details: cause instanceof Error ? cause.message : String(cause),
    });
  }
}

/** A write names a channel the store has no record of; store the channel first with `putChannel`. */
export class UnknownChannelError extends BaseError {
  override name = "UnknownChannelError" as const;
  constructor(readonly sessionId: Hex) {
    super(`No channel ${sessionId} is stored; call putChannel before writing its tickets, receipts or closing.`);
  }
}

/** A different ticket was offered for a seq that already has one: the payer would be equivocating. */
export class TicketConflictError extends BaseError {
  override name = "TicketConflictError" as const;
  constructor(readonly sessionId: Hex, readonly seq: bigint) {
    super(`Session ${sessionId} already holds a different ticket for seq ${seq}; a seq is signed once.`);
  }
}

/** A different receipt (or leaf) was offered for a step that already has one. */
export class ReceiptConflictError extends BaseError {
  override name = "ReceiptConflictError" as const;
  constructor(readonly sessionId: Hex, readonly seq: bigint) {
    super(`Session ${sessionId} already holds a different receipt for seq ${seq}; a step is receipted once.`);
  }
}

/** A different receipt commit was offered by the same party for a leaf count that already has one. */
export class CommitConflictError extends BaseError {
  override name = "CommitConflictError" as const;
  constructor(readonly sessionId: Hex, readonly by: string, readonly leafCount: bigint) {
    super(`Session ${sessionId} already holds a different ${by} commit over ${leafCount} leaves.`);
  }
}

/** A different cooperative close was offered for a session that already holds one: a provider co-signs once. */
export class CooperativeCloseConflictError extends BaseError {
  override name = "CooperativeCloseConflictError" as const;
  constructor(readonly sessionId: Hex) {
    super(`Session ${sessionId} already holds a different co-signed cooperative close; a session is closed once.`);
  }
}

/** A different fault statement was offered for a step that already holds one (the provider signed two). */
export class FaultStatementConflictError extends BaseError {
  override name = "FaultStatementConflictError" as const;
  constructor(readonly sessionId: Hex, readonly seq: bigint) {
    super(`Session ${sessionId} already holds a different fault statement for seq ${seq}; a step fails once.`);
  }
}

/**
 * The parts of a write disagree with each other or with the session they are filed under (a ticket for
 * another session, a receipt for another seq). This is a bug in the caller, not in the peer.
 */
export class ResultConflictError extends BaseError {
  override name = "ResultConflictError" as const;
  constructor(readonly sessionId: Hex, readonly seq: bigint) {
    super(`Session ${sessionId} already holds a different result for seq ${seq}; a paid call is answered once.`);
  }
}

export class InconsistentRecordError extends BaseError {
  override name = "InconsistentRecordError" as const;
}

/** A channel that was archived and pruned (issue 31 item 2) is never stored again: a late message must not re-create it. */
export class ChannelPrunedError extends BaseError {
  override name = "ChannelPrunedError" as const;
  constructor(readonly sessionId: Hex, readonly prunedAt: bigint, readonly archive: string) {
    // The archive's path stays out of the sentence: a node may send it to a peer.
    super(`Session ${sessionId} was settled and pruned from this store at ${prunedAt} (unix time, chain clock); it cannot be resumed or stored again.`);
  }
}

/**
 * A write of a channel this process no longer holds (decision 0036): another process of the provider's fleet
 * took the channel over (its fencing epoch moved on), or this process never took it. Nothing of the write
 * happened; the step must not be answered. Not retryable here: the payer resumes on the process that holds it.
 */
export class FencedError extends BaseError {
  override name = "FencedError" as const;
  constructor(readonly sessionId: Hex, readonly epoch: bigint | undefined, readonly currentEpoch: bigint | undefined) {
    super(
      epoch === undefined
        ? `This process does not hold session ${sessionId}; take it over before writing it.`
        : `Session ${sessionId} was taken over (epoch ${currentEpoch ?? "none"}, this process holds ${epoch}); the write is refused.`,
      { details: "Another process of the provider serves the channel now; drop the connection so the payer resumes there." },
    );
  }
}
