/**
 * Several processes, one provider (decision 0036): what each process of a fleet does besides serving the
 * channels its payers bind — publish where it listens, and take part in electing the one process that runs
 * the chain duties (watchtower, finalise, claim).
 *
 * Election is a lease with a fencing epoch in the `leader` row: a process becomes leader only when the row is
 * free or its lease ran out, and the epoch then grows by one; the leader renews its lease well before it
 * ends. A paused leader that wakes after its lease ran out finds another epoch: its duties store refuses
 * every write (`FencedError`), and it stops its duties at its next renewal. Chain transactions are not
 * fenced by the database; the ones the duties send are idempotent on-chain (a second challenge with the
 * same ticket, a second finalise or claim, reverts in simulation and is never sent).
 */
import { BaseError } from "../core/errors";
import type { PgStore } from "../store/pg-store";
import { PayerClient, type PayerClientParameters } from "./payer-client";

/** The duty set's name in the `leader` table. */
export const DUTIES = "chain-duties";

export type FleetMemberParameters = {
  store: PgStore;
  /** host:port this process listens on, as payers reach it. */
  endpoint: string;
  /** Lease of the leader and of the endpoint row, in ms (default 10 s); renewed every third of it. */
  leaseMs?: number;
  /** This process became the leader under `epoch`: start the duties. */
  onLead?: (epoch: bigint) => void | Promise<void>;
  /** This process is no longer the leader (its lease was lost or taken): stop the duties. */
  onFollow?: () => void | Promise<void>;
  onError?: (error: unknown) => void;
};

export class FleetMember {
  #timer: NodeJS.Timeout | undefined;
  #epoch: bigint | undefined;
  #stopped = false;
  #beat: Promise<void> = Promise.resolve();

  constructor(readonly parameters: FleetMemberParameters) {}

  get leaseMs(): number {
    return this.parameters.leaseMs ?? 10_000;
  }

  /** The epoch this process leads under, if it leads. */
  get leaderEpoch(): bigint | undefined {
    return this.#epoch;
  }

  /** Publishes the endpoint and runs the first election round; then renews every third of the lease. */
  async start(): Promise<void> {
    await this.heartbeat();
    this.#timer = setInterval(() => {
      this.#beat = this.#beat.then(() => this.heartbeat()).catch((error: unknown) => this.parameters.onError?.(error));
    }, Math.max(50, Math.floor(this.leaseMs / 3)));
  }

  /** One round: refresh the endpoint row, renew or try to take the lead. */
  async heartbeat(): Promise<void> {
    if (this.#stopped) return;
    const { store, endpoint } = this.parameters;
    await store.query(
      `INSERT INTO endpoints (owner, endpoint, seen_at) VALUES ($1, $2, now())
       ON CONFLICT (owner) DO UPDATE SET endpoint = excluded.endpoint, seen_at = excluded.seen_at`,
      [store.owner, endpoint],
    );
    let epoch: bigint | undefined;
    if (this.#epoch !== undefined) {
      const renewed = await store.query<{ epoch: string }>(
        `UPDATE leader SET lease_until = now() + $3 * interval '1 millisecond'
         WHERE name = $1 AND owner = $2 AND epoch = $4 AND lease_until > now() RETURNING epoch`,
        [DUTIES, store.owner, this.leaseMs, this.#epoch.toString()],
      );
      if (renewed[0]) epoch = this.#epoch;
    }
    if (epoch === undefined) {
      const taken = await store.query<{ epoch: string }>(
        `INSERT INTO leader (name, owner, epoch, lease_until) VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
         ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, epoch = leader.epoch + 1, lease_until = excluded.lease_until
         WHERE leader.lease_until <= now()
         RETURNING epoch`,
        [DUTIES, store.owner, this.leaseMs],
      );
      if (taken[0]) epoch = BigInt(taken[0].epoch);
    }
    const was = this.#epoch;
    this.#epoch = epoch;
    if (was !== undefined && epoch !== was) await this.parameters.onFollow?.();
    if (epoch !== undefined && epoch !== was && !this.#stopped) await this.parameters.onLead?.(epoch);
  }

  /** Every endpoint of the fleet seen within two leases, this process's first. */
  async endpoints(): Promise<string[]> {
    const { store } = this.parameters;
    const rows = await store.query<{ endpoint: string; owner: string }>(
      "SELECT owner, endpoint FROM endpoints WHERE seen_at > now() - $1 * interval '1 millisecond' ORDER BY seen_at DESC",
      [this.leaseMs * 2],
    );
    const mine = rows.filter((r) => r.owner === store.owner).map((r) => r.endpoint);
    return [...mine, ...rows.filter((r) => r.owner !== store.owner).map((r) => r.endpoint)];
  }

  /** Stops renewing; gives up the lead and the endpoint row so another process takes over at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#beat.catch(() => undefined);
    const { store } = this.parameters;
    if (this.#epoch !== undefined) {
      await store.query("UPDATE leader SET lease_until = now() WHERE name = $1 AND owner = $2 AND epoch = $3", [DUTIES, store.owner, this.#epoch.toString()]).catch(() => undefined);
      this.#epoch = undefined;
      await this.parameters.onFollow?.();
    }
    await store.query("DELETE FROM endpoints WHERE owner = $1", [store.owner]).catch(() => undefined);
  }
}

/**
 * The payer's side (decision 0036): binds the session on the first of the fleet's `endpoints` (`host:port`)
 * that answers, trying them in order. Whichever process it reaches takes the channel over and serves it from
 * the shared store, so a payer whose connection dropped resumes on any of them. Rejects with the last error
 * when none answers.
 */
export async function connectToFleet(
  parameters: Omit<PayerClientParameters, "host" | "port">,
  endpoints: readonly string[],
): Promise<PayerClient> {
  if (endpoints.length === 0) throw new BaseError("The provider fleet lists no endpoint to connect to.");
  let last: unknown;
  for (const endpoint of endpoints) {
    const at = endpoint.lastIndexOf(":");
    const port = Number(endpoint.slice(at + 1));
    if (at < 1 || !Number.isInteger(port) || port < 1 || port > 65535) throw new BaseError(`"${endpoint}" is not a host:port endpoint.`);
    try {
      return await PayerClient.connect({ ...parameters, host: endpoint.slice(0, at), port });
    } catch (error) {
      last = error;
    }
  }
  throw last;
}
