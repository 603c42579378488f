/**
 * The SQLite schema of the channel store and its migrations.
 *
 * The version lives in `PRAGMA user_version`; `PRAGMA application_id` marks the file as a channel store
 * so that opening some other SQLite database fails loudly instead of adding tables to it. Migration `i`
 * takes the schema from version `i` to `i + 1`; all pending migrations run in one transaction with the
 * version bump, so a crash mid-migration leaves the previous version intact.
 *
 * Conventions (see README.md): every table is STRICT (no silent type coercion, so an amount can never
 * become a REAL); amounts and block numbers are decimal TEXT; seq and leaf-count keys of the older tables are
 * 20-digit zero-padded decimal TEXT so that text order is numeric order over the whole uint64 range, and
 * artifacts there are their canonical JSON text. Steps, accumulator states (version 7) and results (version 8)
 * are keyed by (channel number, seq − 2^63) as INTEGERs in WITHOUT ROWID tables, steps as bytes (records.ts).
 */
import type { Database } from "better-sqlite3";

import { canonicalSignedReceiptText, signedSessionReceiptFromJson } from "../core/receipt";
import { signedPaymentTicketFromJson } from "../core/ticket";
import { expectHash } from "../core/validate";
import { UnsupportedSchemaError } from "./errors";
import {
  encodeReceiptBlob,
  encodeTicketBlob,
  parseStored,
  peaksToBlob,
  receiptPolicyKey,
  seqFromKey,
  seqToInteger,
  ticketTermsKey,
} from "./records";

/** "IOIC" */
export const APPLICATION_ID = 0x494f4943;

const DECIMAL = (column: string) => `${column} <> '' AND ${column} NOT GLOB '*[^0-9]*'`;
const SEQ_KEY = (column: string) => `length(${column}) = 20 AND ${column} NOT GLOB '*[^0-9]*'`;
const ROLE = (column: string) => `${column} IN ('payer', 'provider')`;

/**
 * The accumulator state is stored after every this many receipts (and at a channel's first stored state);
 * any other state is recomputed from the nearest one below it and the leaves after it, at most this many
 * appends (schema version 7, decision 0008 amendment).
 */
export const ACCUMULATOR_STATE_INTERVAL = 64;

/** `MIGRATIONS[i]` migrates version `i` to `i + 1`. Never edit a released entry; append a new one. */
export const MIGRATIONS: readonly string[] = [
  // 0 → 1: the initial schema.
  `
  CREATE TABLE channels (
    session_id TEXT NOT NULL PRIMARY KEY CHECK (length(session_id) = 66),
    role       TEXT NOT NULL CHECK (${ROLE("role")}),
    status     TEXT NOT NULL CHECK (status IN ('open', 'closing', 'settled')),
    deposit    TEXT NOT NULL CHECK (${DECIMAL("deposit")}),
    channel    TEXT NOT NULL              -- canon(ChannelJson): the fixed part of the record
  ) STRICT;
  CREATE INDEX channels_by_role_status ON channels (role, status);

  CREATE TABLE steps (
    session_id TEXT NOT NULL REFERENCES channels (session_id),
    seq        TEXT NOT NULL CHECK (${SEQ_KEY("seq")}),
    ticket     TEXT NOT NULL,             -- canon(SignedPaymentTicketJson)
    receipt    TEXT,                      -- canon(SignedSessionReceiptJson), once answered
    leaf       TEXT,                      -- receipt leaf, 0x + 64 hex, exactly when receipt is set
    PRIMARY KEY (session_id, seq),
    CHECK ((receipt IS NULL) = (leaf IS NULL))
  ) STRICT;
  -- Covers leaves() and receiptCount() without reading the artifact text.
  CREATE INDEX steps_leaves ON steps (session_id, seq, leaf) WHERE leaf IS NOT NULL;

  CREATE TABLE commits (
    session_id    TEXT NOT NULL REFERENCES channels (session_id),
    signer_role   TEXT NOT NULL CHECK (${ROLE("signer_role")}),
    leaf_count    TEXT NOT NULL CHECK (${SEQ_KEY("leaf_count")}),
    signed_commit TEXT NOT NULL,          -- canon(SignedReceiptCommitJson)
    PRIMARY KEY (session_id, signer_role, leaf_count)
  ) STRICT;

  CREATE TABLE closings (
    session_id TEXT NOT NULL PRIMARY KEY REFERENCES channels (session_id),
    closing    TEXT NOT NULL              -- canon(ClosingRecordJson)
  ) STRICT;

  CREATE TABLE cursors (
    name  TEXT NOT NULL PRIMARY KEY,
    block TEXT NOT NULL CHECK (${DECIMAL("block")})
  ) STRICT;

  PRAGMA application_id = ${APPLICATION_ID};
  `,
  // 1 → 2 (issue 12): the cooperative close a party co-signed. Written before the co-signature leaves, so
  // that a restarted provider still knows the session ended and refuses work on it.
  `
  CREATE TABLE cooperative_closes (
    session_id TEXT NOT NULL PRIMARY KEY REFERENCES channels (session_id),
    close      TEXT NOT NULL              -- canon(CooperativeCloseJson)
  ) STRICT;
  `,
  // 2 → 3 (issue 12 item 5): the provider's signed fault statements the payer received with failed calls,
  // one per step: the evidence of the session no-fault path (decision 0015).
  `
  CREATE TABLE fault_statements (
    session_id TEXT NOT NULL REFERENCES channels (session_id),
    seq        TEXT NOT NULL CHECK (${SEQ_KEY("seq")}),
    statement  TEXT NOT NULL,             -- canon(SignedFaultStatementJson)
    PRIMARY KEY (session_id, seq)
  ) STRICT;
  `,
  // 3 → 4 (issue 14, decision 0025): the payer's session-key grants a provider accepted tickets under. A
  // key-signed ticket is worthless on-chain without its grant (closeUnilateralWithKey / challengeWithKey), so
  // the grant is stored before the first ticket under it is accepted, and a watchtower finds it by the key
  // that signed the newest ticket. Several grants may name one key (a payer may re-grant it): all are kept.
  `
  CREATE TABLE session_key_grants (
    session_id TEXT NOT NULL REFERENCES channels (session_id),
    key        TEXT NOT NULL CHECK (length(key) = 42),   -- the granted key, lower-case 0x address
    grant      TEXT NOT NULL,                            -- canon(SignedSessionKeyGrantJson)
    PRIMARY KEY (session_id, key, grant)
  ) STRICT;
  `,
  // 4 → 5 (issue 28 item 6, decision 0009): the provider's receipt accumulator after each step it answered —
  // the peaks over its first leaf_count receipts and what they charged — written in the step's transaction,
  // so a channel resumes from its newest row in constant time and a ticket naming an older prefix is checked
  // with one indexed lookup instead of a rebuild from every leaf.
  `
  CREATE TABLE accumulator_states (
    session_id TEXT NOT NULL REFERENCES channels (session_id),
    leaf_count TEXT NOT NULL CHECK (${SEQ_KEY("leaf_count")}),
    seq        TEXT NOT NULL CHECK (${SEQ_KEY("seq")}),
    peaks      TEXT NOT NULL,             -- JSON array of 0x + 64 hex, lowest level first
    charged    TEXT NOT NULL CHECK (${DECIMAL("charged")}),
    PRIMARY KEY (session_id, leaf_count)
  ) STRICT;
  `,
  // 5 → 6 (issue 28 item 8): what a payer paid for. The request it sent and the output (result or error) it was
  // answered with, per seq, written in the same group commit as — and before — the step's receipt, so a receipt
  // the payer counts always has its output beside it; \`ioi results\` prints them again after Ctrl-C or a crash.
  `
  CREATE TABLE results (
    session_id TEXT NOT NULL REFERENCES channels (session_id),
    seq        TEXT NOT NULL CHECK (${SEQ_KEY("seq")}),
    request    TEXT NOT NULL,             -- canon(the JSON-RPC request sent): keccak256 is the receipt's offloadPacketHash
    output     TEXT NOT NULL,             -- canon(result) or canon({error}): keccak256 is the receipt's outputHash
    PRIMARY KEY (session_id, seq)
  ) STRICT;
  `,
  // 6 → 7 (issue 31 item 4, decision 0008 amendment): compact steps. A channel gets a number; a step is keyed
  // by (channel number, seq − 2^63) in a WITHOUT ROWID table (no second copy of the key in an index); its ticket
  // and receipt are bytes (records.ts: hashes, signatures and amounts as bytes, the session id and seq only in
  // the key), and the values a channel repeats in every step — the ticket's provider and terms hash, the
  // receipt's policy hash and model id — are interned once. The accumulator is kept every
  // ACCUMULATOR_STATE_INTERVAL receipts (and at a channel's first stored state) as one blob of peaks; the
  // states in between are recomputed from the leaves that follow (at most that many appends). The ioi_*
  // functions are registered by `migrate` for this conversion only.
  `
  CREATE TABLE channel_numbers (
    no         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE REFERENCES channels (session_id)
  ) STRICT;
  INSERT INTO channel_numbers (session_id) SELECT session_id FROM channels ORDER BY rowid;

  CREATE TABLE interned (
    id    INTEGER PRIMARY KEY,
    value BLOB NOT NULL UNIQUE
  ) STRICT;
  INSERT INTO interned (value) SELECT DISTINCT ioi_terms_key(ticket) FROM steps ORDER BY rowid;
  INSERT INTO interned (value) SELECT DISTINCT ioi_policy_key(receipt) FROM steps WHERE receipt IS NOT NULL
    ON CONFLICT (value) DO NOTHING;

  CREATE TABLE steps_v7 (
    channel INTEGER NOT NULL REFERENCES channel_numbers (no),
    seq     INTEGER NOT NULL,            -- seq − 2^63: every uint64, in numeric order
    ticket  BLOB NOT NULL CHECK (length(ticket) BETWEEN 97 AND 113),
    terms   INTEGER NOT NULL REFERENCES interned (id),
    receipt BLOB CHECK (length(receipt) BETWEEN 162 AND 194),
    policy  INTEGER REFERENCES interned (id),
    leaf    BLOB CHECK (length(leaf) = 32),
    PRIMARY KEY (channel, seq),
    CHECK ((receipt IS NULL) = (leaf IS NULL) AND (receipt IS NULL) = (policy IS NULL))
  ) STRICT, WITHOUT ROWID;
  INSERT INTO steps_v7 (channel, seq, ticket, terms, receipt, policy, leaf)
    SELECT n.no, ioi_seq(s.seq), ioi_ticket_blob(s.ticket), t.id, ioi_receipt_blob(s.receipt), p.id, unhex(substr(s.leaf, 3))
    FROM steps s
    JOIN channel_numbers n ON n.session_id = s.session_id
    JOIN interned t ON t.value = ioi_terms_key(s.ticket)
    LEFT JOIN interned p ON p.value = ioi_policy_key(s.receipt);
  DROP TABLE steps;
  ALTER TABLE steps_v7 RENAME TO steps;

  CREATE TABLE accumulator_states_v7 (
    channel    INTEGER NOT NULL REFERENCES channel_numbers (no),
    leaf_count INTEGER NOT NULL CHECK (leaf_count > 0),
    seq        INTEGER NOT NULL,          -- seq − 2^63 of the step after which the accumulator held leaf_count receipts
    peaks      BLOB NOT NULL CHECK (length(peaks) % 32 = 0),
    charged    TEXT NOT NULL CHECK (${DECIMAL("charged")}),
    PRIMARY KEY (channel, leaf_count)
  ) STRICT, WITHOUT ROWID;
  INSERT INTO accumulator_states_v7 (channel, leaf_count, seq, peaks, charged)
    SELECT n.no, CAST(a.leaf_count AS INTEGER), ioi_seq(a.seq), ioi_peaks_blob(a.peaks), a.charged
    FROM accumulator_states a JOIN channel_numbers n ON n.session_id = a.session_id
    WHERE CAST(a.leaf_count AS INTEGER) % ${ACCUMULATOR_STATE_INTERVAL} = 0
       OR a.leaf_count = (SELECT min(b.leaf_count) FROM accumulator_states b WHERE b.session_id = a.session_id);
  DROP TABLE accumulator_states;
  ALTER TABLE accumulator_states_v7 RENAME TO accumulator_states;

  -- The channels archived and pruned (issue 31 item 2): a late message for one is answered, never re-creates it.
  CREATE TABLE pruned_channels (
    session_id TEXT NOT NULL PRIMARY KEY CHECK (length(session_id) = 66),
    pruned_at  INTEGER NOT NULL,          -- unix seconds (chain time) when it was pruned
    archive    TEXT NOT NULL              -- where its export was written
  ) STRICT;
  `,
  // 7 → 8 (issue 31 item 4, third session; decision 0008 amendment): results keyed as steps are, by (channel
  // number, seq − 2^63) in a WITHOUT ROWID table. Keyed by the session id and a 20-digit seq, each row carried
  // its 86-character key twice (the table's rowid b-tree and the primary-key index): 374 bytes on disk for an
  // echo call's 110 bytes of request and output, 201 now, and one b-tree fewer to write per paid call. A result
  // whose channel has no number stops the migration (NOT NULL), as a damaged row stopped 6 → 7.
  `
  CREATE TABLE results_v8 (
    channel INTEGER NOT NULL REFERENCES channel_numbers (no),
    seq     INTEGER NOT NULL,             -- seq − 2^63
    request TEXT NOT NULL,                -- canon(the JSON-RPC request sent): keccak256 is the receipt's offloadPacketHash
    output  TEXT NOT NULL,                -- canon(result) or canon({error}): keccak256 is the receipt's outputHash
    PRIMARY KEY (channel, seq)
  ) STRICT, WITHOUT ROWID;
  INSERT INTO results_v8 (channel, seq, request, output)
    SELECT n.no, ioi_seq(r.seq), r.request, r.output
    FROM results r LEFT JOIN channel_numbers n ON n.session_id = r.session_id;
  DROP TABLE results;
  ALTER TABLE results_v8 RENAME TO results;
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings the database to {@link SCHEMA_VERSION} in one immediate transaction (so two processes opening a
 * new file at once cannot both migrate it). Refuses a database written by a newer client, or one that is
 * not a channel store at all, with {@link UnsupportedSchemaError}.
 */
export function migrate(db: Database, path: string): void {
  db.transaction(() => {
    const applicationId = db.pragma("application_id", { simple: true }) as number;
    const version = db.pragma("user_version", { simple: true }) as number;
    if (applicationId !== APPLICATION_ID) {
      const objects = db.prepare("SELECT count(*) FROM sqlite_schema").pluck().get() as number;
      if (applicationId !== 0 || version !== 0 || objects !== 0) {
        throw new UnsupportedSchemaError(`${path} is an SQLite database but not a channel store.`, {
          details: "Give the store a file of its own (a new path is created on first open).",
        });
      }
    }
    if (version > SCHEMA_VERSION) {
      throw new UnsupportedSchemaError(
        `${path} has store schema version ${version}; this client reads versions up to ${SCHEMA_VERSION}.`,
        { details: "Upgrade the client; do not open the file with an older one." },
      );
    }
    if (version < 8) registerConversions(db);
    for (let from = version; from < SCHEMA_VERSION; from++) db.exec(MIGRATIONS[from]!);
    if (version !== SCHEMA_VERSION) db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}

/**
 * The functions migration 6 → 7 converts rows with: each reads a version-6 column (canonical JSON, a seq key)
 * through the same validators the store's reads use, so a damaged row stops the migration (and the open)
 * instead of being converted into something else.
 */
function registerConversions(db: Database): void {
  const ticket = (text: string) => signedPaymentTicketFromJson(parseStored(text, "SignedPaymentTicket"));
  const receipt = (text: string) => signedSessionReceiptFromJson(parseStored(text, "SignedSessionReceipt"));
  db.function("ioi_seq", { deterministic: true, safeIntegers: true }, (key: unknown) => seqToInteger(seqFromKey(key, "seq")));
  db.function("ioi_ticket_blob", { deterministic: true }, (text: unknown) => encodeTicketBlob(ticket(String(text))));
  db.function("ioi_terms_key", { deterministic: true }, (text: unknown) => ticketTermsKey(ticket(String(text)).ticket));
  db.function("ioi_receipt_blob", { deterministic: true }, (text: unknown) => {
    if (text === null) return null;
    const signed = receipt(String(text));
    if (canonicalSignedReceiptText(signed) === undefined) throw new Error("a stored receipt has no compact form");
    return encodeReceiptBlob(signed);
  });
  db.function("ioi_policy_key", { deterministic: true }, (text: unknown) => (text === null ? null : receiptPolicyKey(receipt(String(text)).receipt)));
  db.function("ioi_peaks_blob", { deterministic: true }, (text: unknown) => {
    const peaks = JSON.parse(String(text)) as unknown;
    if (!Array.isArray(peaks)) throw new Error("stored peaks are not a JSON array");
    return peaksToBlob(peaks.map((peak, i) => expectHash(peak, `accumulator_states.peaks[${i}]`)));
  });
}
