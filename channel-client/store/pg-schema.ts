/**
 * The PostgreSQL schema of the channel store and its migrations (decision 0036), versioned like the SQLite
 * schema (./schema): `PG_MIGRATIONS[i]` takes version `i` to `i + 1`, and all pending migrations run in one
 * transaction together with the version bump, under an advisory lock, so two processes opening a new
 * database at once cannot both migrate it and a crash mid-migration leaves the previous version intact.
 * The version lives in the one-row `schema_version` table, which also names the database as a channel store
 * (`application`), so opening some other database fails loudly instead of adding tables to it.
 *
 * Compact from the start (issue 31 item 4): the hot table, `steps`, holds one row per step with hashes and
 * signatures as `bytea` and integers as `numeric`, and repeats nothing its channel already says — the
 * session id is a 4-byte channel id, and the ticket's provider and terms hash and the receipt's policy hash
 * are stored only when they differ from the channel's (`NULL` otherwise). The provider's accumulator state
 * after a step lives in the step's own row. Rare records (closings, cooperative closes, fault statements,
 * grants) are their canonical JSON text, as in SQLite.
 *
 * Fleet tables (several processes serving one provider identity): `channel_owners` (which process serves a
 * channel, under which fencing epoch), `leader` (which process runs the chain duties, under which epoch),
 * `endpoints` (where each live process listens).
 */
import type { PoolClient } from "pg";

import { UnsupportedSchemaError } from "./errors";

/** What `schema_version.application` holds in a channel store. */
export const PG_APPLICATION = "ioi-channel-store";

/** Any advisory lock key of our own: serialises migrations of one database. */
const MIGRATION_LOCK = 0x494f4943;

const ROLE = (column: string) => `${column} IN ('payer', 'provider')`;
const UINT = (column: string, bits: number) => `${column} >= 0 AND ${column} < ${(1n << BigInt(bits)).toString()}`;
const HASH = (column: string) => `length(${column}) = 32`;

/** `PG_MIGRATIONS[i]` migrates version `i` to `i + 1`. Never edit a released entry; append a new one. */
export const PG_MIGRATIONS: readonly string[] = [
  // 0 → 1: the initial schema (the SQLite schema at its version 6, compacted), and the fleet tables.
  `
  CREATE TABLE channels (
    id          integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id  bytea NOT NULL UNIQUE CHECK (${HASH("session_id")}),
    role        text NOT NULL CHECK (${ROLE("role")}),
    status      text NOT NULL CHECK (status IN ('open', 'closing', 'settled')),
    deposit     numeric NOT NULL CHECK (${UINT("deposit", 128)}),
    channel     text NOT NULL,                               -- canon(ChannelJson), the fixed part
    -- What every step of the channel would repeat, from its first record (never changed afterwards).
    provider    bytea NOT NULL CHECK (length(provider) = 20),
    terms_hash  bytea NOT NULL CHECK (${HASH("terms_hash")}),
    policy_hash bytea NOT NULL CHECK (${HASH("policy_hash")})
  );
  CREATE INDEX channels_by_role_status ON channels (role, status);

  CREATE TABLE steps (
    channel_id      integer NOT NULL REFERENCES channels (id),
    seq             numeric NOT NULL CHECK (${UINT("seq", 64)}),
    -- the ticket
    amount          numeric NOT NULL CHECK (${UINT("amount", 128)}),     -- cumulativeAmount
    root            bytea NOT NULL CHECK (${HASH("root")}),              -- receiptRoot
    ticket_sig      bytea NOT NULL CHECK (length(ticket_sig) = 65),
    ticket_provider bytea CHECK (length(ticket_provider) = 20),         -- NULL: the channel's
    ticket_terms    bytea CHECK (${HASH("ticket_terms")}),               -- NULL: the channel's
    -- the receipt, once answered (all NULL before)
    offload         bytea CHECK (${HASH("offload")}),
    output          bytea CHECK (${HASH("output")}),
    policy          bytea CHECK (${HASH("policy")}),                     -- NULL: the channel's
    model           text,                                               -- NULL: step seq - 1's
    units           numeric CHECK (${UINT("units", 64)}),
    charge          numeric CHECK (${UINT("charge", 128)}),              -- metering.amount
    prev            bytea CHECK (${HASH("prev")}),                       -- NULL: the hash of step seq - 1's receipt
    receipt_sig     bytea CHECK (length(receipt_sig) = 65),
    leaf            bytea CHECK (${HASH("leaf")}),
    -- the provider's receipt accumulator right after this step (decision 0009), when stored: its leaf count, and
    -- its peaks and charged total — both NULL when they are what the previous state and this step's leaf and
    -- charge give (the store checks that before it leaves them out, and derives them when it loads)
    acc_leaves      bigint CHECK (acc_leaves > 0),
    acc_peaks       bytea CHECK (length(acc_peaks) % 32 = 0),
    acc_charged     numeric CHECK (acc_charged >= 0),
    PRIMARY KEY (channel_id, seq),
    CHECK ((receipt_sig IS NULL) = (leaf IS NULL)),
    CHECK (CASE WHEN receipt_sig IS NULL
                THEN offload IS NULL AND output IS NULL AND policy IS NULL AND model IS NULL AND units IS NULL AND charge IS NULL AND prev IS NULL
                ELSE offload IS NOT NULL AND output IS NOT NULL AND units IS NOT NULL AND charge IS NOT NULL END),
    CHECK ((acc_peaks IS NULL) = (acc_charged IS NULL) AND (acc_peaks IS NULL OR acc_leaves IS NOT NULL))
  );

  CREATE TABLE commits (
    channel_id  integer NOT NULL REFERENCES channels (id),
    signer_role text NOT NULL CHECK (${ROLE("signer_role")}),
    leaf_count  numeric NOT NULL CHECK (${UINT("leaf_count", 64)}),
    signed      text NOT NULL,                                -- canon(SignedReceiptCommitJson)
    PRIMARY KEY (channel_id, signer_role, leaf_count)
  );

  CREATE TABLE closings (
    channel_id integer NOT NULL PRIMARY KEY REFERENCES channels (id),
    closing    text NOT NULL                                  -- canon(ClosingRecordJson)
  );

  CREATE TABLE cooperative_closes (
    channel_id integer NOT NULL PRIMARY KEY REFERENCES channels (id),
    close      text NOT NULL                                  -- canon(CooperativeCloseJson)
  );

  CREATE TABLE fault_statements (
    channel_id integer NOT NULL REFERENCES channels (id),
    seq        numeric NOT NULL CHECK (${UINT("seq", 64)}),
    statement  text NOT NULL,                                 -- canon(SignedFaultStatementJson)
    PRIMARY KEY (channel_id, seq)
  );

  CREATE TABLE session_key_grants (
    id         integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id integer NOT NULL REFERENCES channels (id),
    key        bytea NOT NULL CHECK (length(key) = 20),
    grant_text text NOT NULL,                                 -- canon(SignedSessionKeyGrantJson)
    UNIQUE (channel_id, key, grant_text)
  );

  CREATE TABLE results (
    channel_id integer NOT NULL REFERENCES channels (id),
    seq        numeric NOT NULL CHECK (${UINT("seq", 64)}),
    request    text NOT NULL,
    output     text NOT NULL,
    PRIMARY KEY (channel_id, seq)
  );

  CREATE TABLE cursors (
    name  text NOT NULL PRIMARY KEY CHECK (name <> ''),
    block numeric NOT NULL CHECK (${UINT("block", 64)})
  );

  -- Which process serves a channel. The epoch grows by one at every take-over; every write of the channel
  -- checks it inside its own transaction (SELECT … FOR SHARE), so a process that lost the channel can
  -- never commit a step for it. No foreign key: a channel is owned before its first record is written.
  CREATE TABLE channel_owners (
    session_id  bytea NOT NULL PRIMARY KEY CHECK (${HASH("session_id")}),
    owner       text NOT NULL,
    epoch       bigint NOT NULL CHECK (epoch > 0),
    lease_until timestamptz NOT NULL
  );

  -- Which process runs the chain duties (watchtower, finalise, claim); one row per duty set.
  CREATE TABLE leader (
    name        text NOT NULL PRIMARY KEY,
    owner       text NOT NULL,
    epoch       bigint NOT NULL CHECK (epoch > 0),
    lease_until timestamptz NOT NULL
  );

  -- Where each live process of the fleet listens, refreshed while it runs.
  CREATE TABLE endpoints (
    owner    text NOT NULL PRIMARY KEY,
    endpoint text NOT NULL,
    seen_at  timestamptz NOT NULL
  );
  `,
  // 1 → 2: the channels archived and pruned (issue 31 item 2, decision 0008): a late message for one is
  // answered, never re-creates it.
  `
  CREATE TABLE pruned_channels (
    session_id bytea NOT NULL PRIMARY KEY CHECK (${HASH("session_id")}),
    pruned_at  numeric NOT NULL CHECK (${UINT("pruned_at", 40)}),  -- unix seconds (chain time) when it was pruned
    archive    text NOT NULL CHECK (length(archive) BETWEEN 1 AND 4096)
  );
  `,
  // 2 → 3: the leader's duties store reads what changed instead of re-reading every channel (issue 31 gaps,
  // decision 0036): each write of a channel's rows (but its results and receipt commits, which the duties never
  // read) notifies 'ioi_channels' with "<table>:<channel id>" (Postgres
  // folds identical notifications of one transaction into one, delivered at COMMIT), and each change of a
  // channel's owner notifies 'ioi_owners' with "<session id hex>:<epoch>:<owner>", so a process that lost a
  // channel forgets it at once. And a process may publish several endpoints.
  `
  CREATE FUNCTION ioi_channel_changed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_TABLE_NAME = 'channels' THEN
      PERFORM pg_notify('ioi_channels', 'channels:' || NEW.id);
    ELSE
      PERFORM pg_notify('ioi_channels', TG_TABLE_NAME || ':' || NEW.channel_id);
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER channels_changed AFTER INSERT OR UPDATE ON channels FOR EACH ROW EXECUTE FUNCTION ioi_channel_changed();
  CREATE TRIGGER steps_changed AFTER INSERT OR UPDATE ON steps FOR EACH ROW EXECUTE FUNCTION ioi_channel_changed();
  CREATE TRIGGER closings_changed AFTER INSERT OR UPDATE ON closings FOR EACH ROW EXECUTE FUNCTION ioi_channel_changed();
  CREATE TRIGGER cooperative_closes_changed AFTER INSERT OR UPDATE ON cooperative_closes FOR EACH ROW EXECUTE FUNCTION ioi_channel_changed();
  CREATE TRIGGER fault_statements_changed AFTER INSERT OR UPDATE ON fault_statements FOR EACH ROW EXECUTE FUNCTION ioi_channel_changed();
  CREATE TRIGGER session_key_grants_changed AFTER INSERT OR UPDATE ON session_key_grants FOR EACH ROW EXECUTE FUNCTION ioi_channel_changed();

  CREATE FUNCTION ioi_owner_changed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_notify('ioi_owners', encode(NEW.session_id, 'hex') || ':' || NEW.epoch || ':' || NEW.owner);
    RETURN NULL;
  END $$;
  CREATE TRIGGER channel_owners_changed AFTER INSERT OR UPDATE ON channel_owners FOR EACH ROW EXECUTE FUNCTION ioi_owner_changed();

  -- A process may publish several endpoints (--advertise a,b), or none (a wildcard listen address).
  ALTER TABLE endpoints DROP CONSTRAINT endpoints_pkey, ADD PRIMARY KEY (owner, endpoint);
  `,
];

export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

/**
 * Brings the database to {@link PG_SCHEMA_VERSION} in one transaction under an advisory lock. Refuses a
 * database written by a newer client, or one that holds tables but is not a channel store, with
 * {@link UnsupportedSchemaError}. Returns the version it left the database at.
 */
export async function pgMigrate(client: PoolClient, where: string): Promise<number> {
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    const marker = await client.query<{ present: boolean }>("SELECT to_regclass('schema_version') IS NOT NULL AS present");
    let version = 0;
    if (marker.rows[0]!.present) {
      const row = await client.query<{ version: number; application: string }>("SELECT version, application FROM schema_version");
      if (row.rows.length !== 1 || row.rows[0]!.application !== PG_APPLICATION) {
        throw new UnsupportedSchemaError(`The database at ${where} has a schema_version table but is not a channel store.`, {
          details: "Give the store a database of its own.",
        });
      }
      version = row.rows[0]!.version;
    } else {
      const tables = await client.query<{ n: string }>(
        "SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = current_schema()",
      );
      if (Number(tables.rows[0]!.n) !== 0) {
        throw new UnsupportedSchemaError(`The database at ${where} holds tables but is not a channel store.`, {
          details: "Give the store a database of its own (an empty database is set up on first open).",
        });
      }
      await client.query("CREATE TABLE schema_version (version integer NOT NULL, application text NOT NULL)");
      await client.query("INSERT INTO schema_version (version, application) VALUES (0, $1)", [PG_APPLICATION]);
    }
    if (version > PG_SCHEMA_VERSION) {
      throw new UnsupportedSchemaError(
        `The database at ${where} has store schema version ${version}; this client reads versions up to ${PG_SCHEMA_VERSION}.`,
        { details: "Upgrade the client; do not open the database with an older one." },
      );
    }
    for (let from = version; from < PG_SCHEMA_VERSION; from++) await client.query(PG_MIGRATIONS[from]!);
    if (version !== PG_SCHEMA_VERSION) await client.query("UPDATE schema_version SET version = $1", [PG_SCHEMA_VERSION]);
    await client.query("COMMIT");
    return PG_SCHEMA_VERSION;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}
