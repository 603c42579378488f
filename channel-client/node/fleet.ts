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
import { canonBytes } from "../core/canonical";
import { keccak256Hex } from "../core/keccak";
import { BaseError, BindingMismatchError, InvalidSignatureError, ReceiptMismatchError } from "../core/errors";
import type { JsonObject } from "../core/validate";
import type { PgStore } from "../store/pg-store";
import { parsePeer } from "./endpoints";
import { fetchTermsOffer, PayerClient, ProviderRejectedError, type InvocationOutcome, type PayerClientParameters } from "./payer-client";

/** The duty set's name in the `leader` table. */
export const DUTIES = "chain-duties";

export type FleetMemberParameters = {
  store: PgStore;
  /**
   * host:port where payers reach this process (`--advertise`, else the listen address). Empty: the process
   * publishes no endpoint (it listens on a wildcard address and was given no `--advertise`); it still serves
   * payers that dial it and takes part in the election.
   */
  endpoints: readonly string[];
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

  /** Publishes the endpoints and runs the first election round; then renews every third of the lease. */
  async start(): Promise<void> {
    await this.heartbeat();
    this.#timer = setInterval(() => {
      this.#beat = this.#beat.then(() => this.heartbeat()).catch((error: unknown) => this.parameters.onError?.(error));
    }, Math.max(50, Math.floor(this.leaseMs / 3)));
  }

  /** One round: refresh the endpoint rows, renew or try to take the lead. */
  async heartbeat(): Promise<void> {
    if (this.#stopped) return;
    const { store, endpoints } = this.parameters;
    await store.query(
      `WITH gone AS (DELETE FROM endpoints WHERE owner = $1 AND NOT (endpoint = ANY($2::text[])))
       INSERT INTO endpoints (owner, endpoint, seen_at) SELECT $1, e, now() FROM unnest($2::text[]) AS e
       ON CONFLICT (owner, endpoint) DO UPDATE SET seen_at = excluded.seen_at`,
      [store.owner, [...endpoints]],
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

/** What {@link FleetPayer.stream} takes: {@link PayerClient.stream}'s parameters. */
export type FleetStreamParameters = Parameters<PayerClient["stream"]>[0];

export type FleetPayerOptions = {
  /**
   * Turns an endpoint into where to dial, or throws to skip it (default: any `host:port`). The CLI passes its
   * `--allow-remote` policy: a learned remote endpoint is skipped unless remote peers are allowed.
   */
  dial?: (endpoint: string) => { host: string; port: number };
  /** Ask each process bound for the provider's signed terms offer and add the endpoints it lists (default true). */
  learn?: boolean;
  /** How many times a stream resumes after its connection failed (default 8); each resume tries every endpoint. */
  maxResumes?: number;
  /** Told each time the payer moves to another process, with what ended the previous connection. */
  onResume?: (endpoint: string, cause: unknown) => void;
};

/**
 * Errors that end a stream for good: the provider refused a ticket, or sent something that does not check out.
 * Moving to another process of the same provider would not change them. Anything else (a connection refused,
 * reset or closed, a process gone) is met by resuming on the next endpoint.
 */
export function isFinal(error: unknown): boolean {
  return error instanceof ProviderRejectedError || error instanceof ReceiptMismatchError || error instanceof InvalidSignatureError || error instanceof BindingMismatchError;
}

/**
 * A payer of a provider fleet (decision 0036). It binds on the first endpoint that answers, learns the rest of the
 * fleet from the provider's signed terms offer (its signature covers the list; each process is still dialled
 * through the sealed handshake, which proves the provider's key), and when the connection drops mid-stream it
 * resumes on the next endpoint from its own store: the new process takes the channel over from the shared
 * database, answers tickets from the seq both sides hold, and nothing answered is asked or paid for again.
 */
export class FleetPayer {
  #client: PayerClient;
  #endpoint: string;
  readonly #endpoints: string[];

  private constructor(
    readonly parameters: Omit<PayerClientParameters, "host" | "port">,
    endpoints: string[],
    readonly options: FleetPayerOptions,
    client: PayerClient,
    endpoint: string,
  ) {
    this.#endpoints = endpoints;
    this.#client = client;
    this.#endpoint = endpoint;
  }

  /** The client of the process currently bound. */
  get client(): PayerClient {
    return this.#client;
  }

  /** The endpoint currently bound. */
  get endpoint(): string {
    return this.#endpoint;
  }

  /** Every endpoint known: those given, then those learned from the provider's offers. */
  get endpoints(): readonly string[] {
    return this.#endpoints;
  }

  static async connect(parameters: Omit<PayerClientParameters, "host" | "port">, endpoints: readonly string[], options: FleetPayerOptions = {}): Promise<FleetPayer> {
    if (endpoints.length === 0) throw new BaseError("The provider fleet lists no endpoint to connect to.");
    const known = [...new Set(endpoints)];
    const { client, endpoint } = await FleetPayer.#bindFirst(parameters, known, 0, options);
    const payer = new FleetPayer(parameters, known, options, client, endpoint);
    await payer.#learn();
    return payer;
  }

  static async #bindFirst(
    parameters: Omit<PayerClientParameters, "host" | "port">,
    endpoints: readonly string[],
    from: number,
    options: FleetPayerOptions,
  ): Promise<{ client: PayerClient; endpoint: string }> {
    const dial = options.dial ?? ((e: string) => parsePeer(e, true));
    let last: unknown;
    for (let k = 0; k < endpoints.length; k++) {
      const endpoint = endpoints[(from + k) % endpoints.length]!;
      try {
        const { host, port } = dial(endpoint);
        return { client: await PayerClient.connect({ ...parameters, host, port }), endpoint };
      } catch (error) {
        if (isFinal(error)) throw error;
        last = error;
      }
    }
    throw last;
  }

  /** Adds the endpoints the bound process's signed offer lists (an offer that does not check out is ignored). */
  async #learn(): Promise<void> {
    if (this.options.learn === false) return;
    const { account, domain, channel, timeoutMs } = this.parameters;
    const dial = this.options.dial ?? ((e: string) => parsePeer(e, true));
    try {
      const { host, port } = dial(this.#endpoint);
      const offer = await fetchTermsOffer({ account, domain, provider: channel.ref.terms.provider, host, port, ...(timeoutMs ? { timeoutMs } : {}) });
      for (const e of offer.endpoints ?? []) {
        if (this.#endpoints.includes(e)) continue;
        try {
          dial(e);
          this.#endpoints.push(e);
        } catch (error) {
          this.parameters.logger?.warn({ event: "fleet.endpoint_skipped", endpoint: e }, `skipping the offered endpoint ${e}: ${(error as Error).message.split("\n")[0]}`);
        }
      }
    } catch (error) {
      this.parameters.logger?.warn({ event: "fleet.offer_failed", endpoint: this.#endpoint }, `no endpoints learned from ${this.#endpoint}: ${(error as Error).message.split("\n")[0]}`);
    }
  }

  /** Closes the current connection (after its accepted receipts are stored) and binds on the next endpoint. */
  async #resume(cause: unknown): Promise<void> {
    await this.#client.close().catch(() => undefined);
    const channel = this.parameters.store.getChannel(this.parameters.channel.sessionId) ?? this.parameters.channel;
    const parameters = { ...this.parameters, channel };
    const at = this.#endpoints.indexOf(this.#endpoint);
    const { client, endpoint } = await FleetPayer.#bindFirst(parameters, this.#endpoints, at + 1, this.options);
    this.#client = client;
    this.#endpoint = endpoint;
    this.options.onResume?.(endpoint, cause);
    await this.#learn();
  }

  /**
   * {@link PayerClient.stream} over the fleet: when the connection fails, resumes on the next endpoint and sends
   * again only the requests that were not answered. A request whose receipt (and result) reached the store
   * before the connection failed is told to `onOutcome` from the store and not sent again; the indices given to
   * `request` and `onOutcome` are the caller's, as with one process.
   */
  async stream(parameters: FleetStreamParameters): Promise<number[]> {
    const { count, request, onOutcome, onProgress, signal } = parameters;
    const latencies: number[] = [];
    const held = new Map<number, JsonObject>();
    let fresh = 0;
    let done = 0;
    let again: number[] = [];
    for (let resumes = 0; ; resumes++) {
      const plan = again;
      again = [];
      const total = plan.length + (count - fresh);
      if (total === 0 || signal?.aborted) break;
      const indexOf = new Map<number, number>();
      const seqStart = this.#client.session.seq;
      const told = new Set<bigint>();
      let callerError: { error: unknown } | undefined;
      try {
        latencies.push(
          ...(await this.#client.stream({
            ...parameters,
            count: total,
            request: (k) => {
              const i = k < plan.length ? plan[k]! : fresh++;
              const r = held.get(i) ?? request(i);
              held.set(i, r);
              indexOf.set(k, i);
              return r;
            },
            onOutcome: (k, outcome) => {
              const i = indexOf.get(k)!;
              held.delete(i);
              told.add(outcome.seq);
              try {
                onOutcome?.(i, outcome);
              } catch (error) {
                callerError ??= { error };
                throw error;
              }
            },
            onProgress: () => onProgress?.(++done),
          })),
        );
        break;
      } catch (error) {
        // The caller's own callback failing is not the connection's: no resume.
        if (callerError || isFinal(error) || resumes >= (this.options.maxResumes ?? 8)) throw callerError ? callerError.error : error;
        await this.#resume(error);
        // What the store holds past the seq this attempt started from was answered: it is not asked again.
        for (const i of this.#answeredFromStore([...held.keys()].sort((a, b) => a - b), held, seqStart, told)) {
          held.delete(i.index);
          onOutcome?.(i.index, i.outcome);
          onProgress?.(++done);
        }
        again = [...held.keys()].sort((a, b) => a - b);
        if (again.length === 0 && fresh >= count) break;
      }
    }
    return latencies;
  }

  /**
   * Of the `pending` requests (caller's indices, in order), those the store holds a receipt for past `seqStart` (the
   * seq the failed attempt started from) that was never told to the caller (`told`): stored just as the connection
   * failed, or taken back from the provider at the new bind. A receipt answers the request whose canonical bytes
   * hash to its `offloadPacketHash`; each request is matched at most once, in seq order.
   */
  #answeredFromStore(pending: number[], held: Map<number, JsonObject>, seqStart: bigint, told: Set<bigint>): Array<{ index: number; outcome: InvocationOutcome }> {
    const { store, channel } = this.parameters;
    const steps = store.steps(channel.sessionId, { fromSeq: seqStart + 1n }).filter((s) => s.receipt && s.seq > seqStart && !told.has(s.seq));
    if (steps.length === 0) return [];
    const results = new Map(store.results(channel.sessionId, { fromSeq: seqStart + 1n }).map((r) => [r.seq, r.output]));
    const hashes = new Map(pending.map((i) => [i, keccak256Hex(canonBytes(held.get(i)!))]));
    const found: Array<{ index: number; outcome: InvocationOutcome }> = [];
    for (const step of steps) {
      const receipt = step.receipt!;
      const index = pending.find((i) => hashes.get(i) === receipt.receipt.offloadPacketHash);
      if (index === undefined) continue;
      hashes.delete(index);
      pending = pending.filter((i) => i !== index);
      const output = results.get(step.seq);
      const parsed = output === undefined ? undefined : (JSON.parse(output) as JsonObject);
      const charged = receipt.receipt.metering.amount;
      const failed = parsed !== undefined && charged === 0n && Object.keys(parsed).length === 1 && "error" in parsed;
      found.push({
        index,
        outcome: {
          seq: step.seq,
          result: failed ? undefined : parsed,
          ...(failed ? { error: parsed.error as NonNullable<InvocationOutcome["error"]> } : {}),
          leaf: step.leaf!,
          receipt,
          charged,
        },
      });
    }
    return found;
  }
}
