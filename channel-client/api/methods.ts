/**
 * The control API's method table (decision 0029): one entry per JSON-RPC method, with its stable name, its
 * params as OpenRPC content descriptors (by name; each with a JSON Schema), its result, and what it runs. The
 * methods mirror the SDK's role entry points — `payer.*` (channel-client/roles/payer.ts), `gigs.*` (channel-client/roles/gigs.ts),
 * `cases.*` (channel-client/roles/disputes.ts), `milestones.check` and `streams.*` (issue 32) — plus `balances.get`, `node.info` and the WebSocket-only `subscribe` /
 * `unsubscribe`. schemas/openrpc.json is generated from this table (channel-client/api/openrpc.ts) and a test keeps them
 * equal. Amounts, ids and times are decimal strings on the wire, never JSON numbers.
 */
import { erc20Abi, getAddress, zeroAddress, type Address, type Hex, type PublicClient } from "viem";

import { providerRegistryAbi } from "../abi/ProviderRegistry";
import { claimableOf, gasEscrowAbi, type Wallet } from "../chain/escrow";
import { signedSessionReceiptToJson } from "../core/receipt";
import { progressProofHash, sampledIndices, signedProgressProofFromJson } from "../core/progress-proof";
import { bundleFromJson, bundleHash } from "../../arbitration/documents/bundle";
import { spotCheck, SpotCheckInputError, streamInputs } from "../../arbitration/lanes/stream-sample";
import type { JsonObject } from "../core/validate";
import type { InvocationOutcome, PayerClient } from "../node/payer-client";
import { contractAddress, type Deployment } from "../roles/deployment";
import { createDisputes, type Disputes } from "../roles/disputes";
import { createGigs, type Gigs } from "../roles/gigs";
import { createPayer, type Payer } from "../roles/payer";
import { CHANNEL_PHASES } from "../chain/escrow";
import { CHANNEL_ROLES, CHANNEL_STATUSES, type ChannelRecord, type ChannelStore } from "../store/store";
import { StreamJournal } from "../node/stream-journal";
import { STREAM_STATES, streamSummaryOf, streamViewOf, type StreamView } from "../node/stream-view";
import { ApiError } from "./errors";
import { TOPICS, wire, type ApiEvent, type SubscriptionFilter, type SubscriptionHub, type Topic } from "./subscriptions";

/** Bumped only for a change an integrator must react to; adding a method or an optional param is not one. */
export const API_VERSION = "1.0.0";

export type JsonSchema = Record<string, unknown>;
/** An OpenRPC content descriptor. */
export type ContentDescriptor = { name: string; description?: string; required?: boolean; schema: JsonSchema };

/** What a method runs against: the SDK's roles over one wallet, store and deployment, and the hub. */
export type ApiContext = {
  deployment: Deployment;
  publicClient: PublicClient;
  wallet: Wallet;
  store: ChannelStore;
  hub: SubscriptionHub;
  /** Gig ids whose status the `phases` topic follows. */
  gigs: Set<bigint>;
  /** Where the stream journals of this store live (`<db>.streams/`, as `ioi milestones stream` keeps them); without it only the store's view of a stream is known. */
  streamsDir?: string;
};

/** The connection a call came on: subscriptions live as long as it does. */
export type Connection = { subscribe?: (topic: Topic, filter: SubscriptionFilter) => string; unsubscribe?: (id: string) => boolean };

export type MethodSpec = {
  summary: string;
  params: ContentDescriptor[];
  result: ContentDescriptor;
  /** Only over WebSocket (subscriptions). */
  websocketOnly?: boolean;
  run: (api: ApiRuntime, params: Record<string, unknown>, connection: Connection) => Promise<unknown>;
};

/*//////////////////////////////////////////////////////////////
                              SCHEMAS
//////////////////////////////////////////////////////////////*/

const AMOUNT = { type: "string", pattern: "^(0|[1-9][0-9]{0,77})$", description: "a decimal string of the asset's base units (wei for ETH)" };
const POSITIVE = { type: "string", pattern: "^[1-9][0-9]{0,77}$", description: "a decimal string above zero" };
const ADDRESS = { type: "string", pattern: "^0x[0-9a-fA-F]{40}$", description: "an address (0x and 40 hex digits)" };
const HASH = { type: "string", pattern: "^0x[0-9a-fA-F]{64}$", description: "0x and 64 hex digits" };
const GIG_ID = { type: "string", pattern: "^[1-9][0-9]{0,19}$", description: "a gig id, a decimal string from 1" };
const TIME = { type: "string", pattern: "^[1-9][0-9]{0,12}$", description: "a unix time or a number of seconds, as a decimal string" };
const OBJECT = { type: "object", description: "a JSON object" };
const REQUEST = { type: "object", maxProperties: 64, description: "a JSON-RPC request object for the provider's worker" };

const p = (name: string, schema: JsonSchema, description: string, required = true): ContentDescriptor => ({ name, description, required, schema });
const result = (name: string, description: string, schema: JsonSchema = OBJECT): ContentDescriptor => ({ name, description, schema });
const SESSION = p("sessionId", HASH, "the channel's session id");
const GIG = p("gigId", GIG_ID, "the gig");
const CASE = p("caseId", HASH, "the case id");
const TX = "the transaction's hash, gas used and block, and what it changed (amounts as decimal strings)";

/*//////////////////////////////////////////////////////////////
                              RUNTIME
//////////////////////////////////////////////////////////////*/

const MAX_UINT64 = (1n << 64n) - 1n;

function gigIdOf(params: Record<string, unknown>): bigint {
  const id = BigInt(params.gigId as string);
  if (id > MAX_UINT64) throw new ApiError("INVALID_PARAMS", `params.gigId must be below 2^64; received ${id}.`);
  return id;
}

const addressOf = (value: unknown): Address | undefined => (value === undefined ? undefined : getAddress(value as string));

/** The SDK's roles over one context, and the live connections to provider nodes (one per session, reused). */
export class ApiRuntime {
  readonly payer: Payer;
  readonly gigs: Gigs | undefined;
  readonly disputes: Disputes | undefined;
  readonly #clients = new Map<Hex, Promise<PayerClient>>();

  constructor(readonly context: ApiContext) {
    const { deployment, publicClient, wallet, store } = context;
    this.payer = createPayer({ deployment, publicClient, wallet, store });
    this.gigs = deployment.contracts.GigEscrow ? createGigs({ deployment, publicClient, wallet }) : undefined;
    const caseContracts = ["DisputeManager", "GigEscrow", "ProviderRegistry"] as const;
    this.disputes = caseContracts.every((c) => deployment.contracts[c] !== undefined) ? createDisputes({ deployment, publicClient, wallet }) : undefined;
  }

  get address(): Address {
    return this.context.wallet.account.address;
  }

  requireGigs(): Gigs {
    if (!this.gigs) throw new ApiError("NOT_FOUND", `The deployment for chain ${this.context.deployment.chainId} names no GigEscrow.`);
    return this.gigs;
  }

  requireDisputes(): Disputes {
    if (!this.disputes) throw new ApiError("NOT_FOUND", `The deployment for chain ${this.context.deployment.chainId} names no DisputeManager, GigEscrow and ProviderRegistry.`);
    return this.disputes;
  }

  requireChannel(sessionId: Hex) {
    const channel = this.context.store.getChannel(sessionId);
    if (!channel) throw new ApiError("NOT_FOUND", `The store holds no session ${sessionId}.`);
    return channel;
  }

  /** The session's provider connection, opened on first use and kept; a failed one is dropped. */
  client(sessionId: Hex): Promise<PayerClient> {
    this.requireChannel(sessionId);
    let client = this.#clients.get(sessionId);
    if (!client) {
      client = this.payer.connect(sessionId);
      this.#clients.set(sessionId, client);
      client.catch(() => this.#clients.delete(sessionId));
    }
    return client;
  }

  /** Runs `fn` on the session's connection; a connection that failed is closed and forgotten. */
  async withClient<T>(sessionId: Hex, fn: (client: PayerClient) => Promise<T>): Promise<T> {
    const client = await this.client(sessionId);
    try {
      return await fn(client);
    } catch (error) {
      await this.disconnect(sessionId);
      throw error;
    }
  }

  async disconnect(sessionId: Hex): Promise<void> {
    const client = this.#clients.get(sessionId);
    this.#clients.delete(sessionId);
    if (client) await client.then((c) => c.close()).catch(() => undefined);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#clients.keys()].map((s) => this.disconnect(s)));
  }

  /** An outcome as the wire carries it, and as the `receipts` topic publishes it. */
  receiptEvent(sessionId: Hex, outcome: InvocationOutcome): ApiEvent {
    return {
      sessionId,
      seq: outcome.seq.toString(),
      charged: outcome.charged.toString(),
      leaf: outcome.leaf,
      ...(outcome.result !== undefined ? { result: outcome.result } : {}),
      ...(outcome.error !== undefined ? { error: outcome.error } : {}),
      receipt: signedSessionReceiptToJson(outcome.receipt),
    };
  }

  /** A milestone stream of the store as `streams.get` shows it: its steps and, when there is one, its journal. */
  streamView(channel: ChannelRecord): StreamView {
    if (channel.pricing.version !== "4") throw new ApiError("INVALID_PARAMS", `Session ${channel.sessionId} was opened on version ${channel.pricing.version} terms; it is not a milestone stream (version 4).`);
    const dir = this.context.streamsDir;
    const journal = dir === undefined ? undefined : StreamJournal.existing(dir, channel.sessionId);
    return streamViewOf({
      sessionId: channel.sessionId,
      provider: channel.ref.terms.provider,
      terms: channel.pricing,
      steps: this.context.store.steps(channel.sessionId),
      ...(journal ? { entries: journal.entries() } : {}),
    });
  }

  /** Status of a channel: the store's view and the chain's phase. */
  async status(sessionId: Hex): Promise<Record<string, unknown>> {
    const { store, publicClient } = this.context;
    const channel = this.requireChannel(sessionId);
    const phase = await publicClient.readContract({ address: channel.escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [sessionId] });
    const latest = store.latestTicket(sessionId);
    const closing = store.getClosing(sessionId);
    return {
      sessionId,
      role: channel.role,
      status: channel.status,
      phase: phase === 0 && channel.status === "settled" ? "Settled" : (CHANNEL_PHASES[phase] ?? "None"),
      provider: channel.ref.terms.provider,
      payer: channel.ref.terms.payer,
      asset: channel.ref.terms.asset,
      deposit: channel.deposit.toString(),
      newestSeq: (latest?.ticket.seq ?? 0n).toString(),
      spent: (latest?.ticket.cumulativeAmount ?? 0n).toString(),
      receipts: store.receiptCount(sessionId),
      pricing: wire(channel.pricing),
      ...(channel.peer ? { peer: channel.peer } : {}),
      ...(closing ? { closing: { seq: closing.state.seq.toString(), amount: closing.state.amount.toString(), finalizesAt: closing.finalizesAt.toString(), closer: closing.closer } } : {}),
    };
  }
}

/*//////////////////////////////////////////////////////////////
                              THE TABLE
//////////////////////////////////////////////////////////////*/

/** A gig write that takes only the gig id, mirrored as `gigs.<name>`; the gig is followed on `phases`. */
function gigAction(summary: string, action: (gigs: Gigs) => (p: { gigId: bigint; chainId?: number }) => Promise<unknown>): MethodSpec {
  return {
    summary,
    params: [GIG],
    result: result("transaction", TX),
    run: async (api, params) => {
      const gigId = gigIdOf(params);
      api.context.gigs.add(gigId);
      return wire(await action(api.requireGigs())({ gigId, chainId: api.context.deployment.chainId }));
    },
  };
}

/** A case write that takes only the case id, mirrored as `cases.<name>`. */
function caseAction(summary: string, action: (d: Disputes, caseId: Hex) => Promise<unknown>): MethodSpec {
  return { summary, params: [CASE], result: result("transaction", TX), run: async (api, params) => wire(await action(api.requireDisputes(), params.caseId as Hex)) };
}

export const METHODS: Record<string, MethodSpec> = {
  "node.info": {
    summary: "The API version, chain, acting account and contract addresses of this server.",
    params: [],
    result: result("info", "apiVersion, chainId, account, contracts, topics"),
    run: async (api) => ({
      apiVersion: API_VERSION,
      chainId: api.context.deployment.chainId,
      account: api.address,
      contracts: Object.fromEntries(Object.keys(api.context.deployment.contracts).map((name) => [name, contractAddress(api.context.deployment, name as never)])),
      topics: [...TOPICS],
    }),
  },

  // Payer: channel-client/roles/payer.ts
  "payer.open": {
    summary: "Fetches the provider node's signed terms, checks them, and opens and funds a native-ETH channel on them (Payer.openChannel).",
    params: [
      p("provider", ADDRESS, "the provider's address (its node must prove it in the handshake)"),
      p("port", { type: "integer", minimum: 1, maximum: 65535, description: "a TCP port from 1 to 65535" }, "the provider node's port"),
      p("host", { type: "string", minLength: 1, maxLength: 253, description: "a host name or IP address" }, "the provider node's host (default 127.0.0.1)", false),
      p("deposit", POSITIVE, "wei to lock in the channel"),
      p("expectedPrice", AMOUNT, "the flat price per invocation the payer expects; any other offer funds nothing", false),
      p("challengeDuration", TIME, "challenge window in seconds (default 3600)", false),
      p("policy", { type: "string", maxLength: 1024, description: "a policy text" }, "the policy the channel binds (default 'policy: default')", false),
    ],
    result: result("opened", "sessionId, deposit, pricing, transactionHash, gasUsed"),
    run: async (api, params) => {
      const opened = await api.payer.openChannel({
        provider: getAddress(params.provider as string),
        peer: { host: (params.host as string | undefined) ?? "127.0.0.1", port: params.port as number },
        deposit: BigInt(params.deposit as string),
        ...(params.expectedPrice !== undefined ? { expectedPrice: BigInt(params.expectedPrice as string) } : {}),
        ...(params.challengeDuration !== undefined ? { challengeDuration: BigInt(params.challengeDuration as string) } : {}),
        ...(params.policy !== undefined ? { policy: params.policy as string } : {}),
      });
      return wire({ sessionId: opened.sessionId, deposit: opened.deposit, pricing: opened.pricing, transactionHash: opened.hash, gasUsed: opened.gasUsed });
    },
  },
  "payer.invoke": {
    summary: "Pays for and sends one invocation over the channel; answers once its receipt is verified and durable (PayerClient.invoke).",
    params: [SESSION, p("request", REQUEST, "the request the provider's worker runs")],
    result: result("outcome", "seq, charged, leaf, result or error, and the provider's signed receipt"),
    run: async (api, params) => {
      const sessionId = params.sessionId as Hex;
      const outcome = await api.withClient(sessionId, (c) => c.invoke(params.request as JsonObject));
      const event = api.receiptEvent(sessionId, outcome);
      api.context.hub.publish("receipts", event);
      return event;
    },
  },
  "payer.stream": {
    summary: "Pays for and sends many invocations, pipelined with at most `inflight` awaiting receipts (PayerClient.stream).",
    params: [
      SESSION,
      p("requests", { type: "array", minItems: 1, maxItems: 256, items: REQUEST, description: "from 1 to 256 request objects" }, "the requests, in order"),
      p("inflight", { type: "integer", minimum: 1, maximum: 32, description: "a whole number from 1 to 32" }, "most invocations awaiting receipts at once (default 1)", false),
    ],
    result: result("outcomes", "one outcome per request, in order, and latencies in milliseconds"),
    run: async (api, params) => {
      const sessionId = params.sessionId as Hex;
      const requests = params.requests as JsonObject[];
      const outcomes: ApiEvent[] = new Array(requests.length);
      const latencies = await api.withClient(sessionId, (c) =>
        c.stream({
          count: requests.length,
          inflight: (params.inflight as number | undefined) ?? 1,
          request: (i) => requests[i]!,
          onOutcome: (i, outcome) => {
            outcomes[i] = api.receiptEvent(sessionId, outcome);
            api.context.hub.publish("receipts", outcomes[i]!);
          },
        }),
      );
      return { outcomes, latencies };
    },
  },
  "milestones.check": {
    summary:
      "The payer's spot-check of a streamed tranche's Progress Proof (decision 0037): the claims drawn from the revealed secret re-run in the sealed Lane 1 engine; outcome pass (release the next ticket), false_claim or repository_changed (pause).",
    params: [
      SESSION,
      p("proof", OBJECT, "the provider's signed Progress Proof (schemas/progress-proof.schema.json#/definitions/signedProof)"),
      p("secret", HASH, "the sampling secret committed in the tranche request"),
      p("suite", OBJECT, "the bound test suite as a bundle { files: { path: content } }"),
      p("repository", OBJECT, "the repository the provider answered the sample with, as a bundle"),
    ],
    result: result("check", "outcome, proofHash, the drawn indices and each sample's claimed and re-run outcome"),
    run: async (api, params) => {
      const sessionId = params.sessionId as Hex;
      const channel = api.requireChannel(sessionId);
      if (channel.pricing.version !== "4") throw new ApiError("INVALID_PARAMS", `Session ${sessionId} was opened on version ${channel.pricing.version} terms; milestone streaming needs version 4.`);
      const signed = signedProgressProofFromJson(params.proof, "params.proof");
      const suite = bundleFromJson(params.suite, "params.suite");
      const repository = bundleFromJson(params.repository, "params.repository");
      const proofHash = progressProofHash(signed.proof);
      if (bundleHash(repository) !== signed.proof.repoStateHash) return { outcome: "repository_changed", proofHash, indices: [], samples: [] };
      const indices = sampledIndices({ secret: params.secret as Hex, proofHash, total: signed.proof.tests.length, count: channel.pricing.stream.samplesPerTranche });
      const escrow = contractAddress(api.context.deployment, "GasEscrow");
      let checked;
      try {
        checked = await spotCheck({
          terms: channel.pricing,
          suite,
          repository,
          proof: signed.proof,
          indices,
          inputs: streamInputs({ chainId: BigInt(api.context.deployment.chainId), gasEscrow: escrow, sessionId, tranche: signed.proof.tranche }),
        });
      } catch (error) {
        if (error instanceof SpotCheckInputError) throw new ApiError("INVALID_PARAMS", error.message);
        throw error;
      }
      const outcome = checked.falseClaims.length ? "false_claim" : checked.suiteFault ? "suite_fault" : "pass";
      return { outcome, proofHash, indices, samples: checked.samples.map((x) => ({ index: x.index, name: x.name, claimed: x.claimed, actual: x.actual, status: x.status, detail: x.detail })) };
    },
  },
  "streams.list": {
    summary:
      "Every milestone stream (v4 channel) the payer's store holds: state (running, paused, finished), tranches released and checked, what the newest ticket pays, and the pause with its reason.",
    params: [p("state", { type: "string", enum: [...STREAM_STATES], description: "running, paused or finished" }, "only streams in this state", false)],
    result: result("streams", "sessionId, provider, state, released, checked, paid, tranchePrice, pause {tranche, reason, detail} or null, journal of each stream", { type: "array", items: OBJECT }),
    run: async (api, params) =>
      api.context.store
        .listChannels({ role: "payer" })
        .filter((c) => c.pricing.version === "4")
        .map((c) => streamSummaryOf(api.streamView(c)))
        .filter((v) => params.state === undefined || v.state === params.state),
  },
  "streams.get": {
    summary:
      "One milestone stream: each tranche's ticket, receipt, Progress Proof (hash and fields), the claims sampled and how their re-run went, every pause, and the case the pause makes (if it proves something).",
    params: [SESSION],
    result: result("stream", "the streams.list fields, terms, tranches [{tranche, state, ticket, sampleCommit, secret, receipt, proof, samples}], pauses and case"),
    run: async (api, params) => api.streamView(api.requireChannel(params.sessionId as Hex)),
  },
  "payer.status": {
    summary: "A channel's stored status, on-chain phase, deposit, newest ticket and receipt count.",
    params: [SESSION],
    result: result("status", "sessionId, role, status, phase, deposit, newestSeq, spent, receipts, closing"),
    run: (api, params) => api.status(params.sessionId as Hex),
  },
  "payer.list": {
    summary: "The channels in the store, optionally only those with a role and/or status.",
    params: [
      p("role", { type: "string", enum: [...CHANNEL_ROLES], description: "payer or provider" }, "only channels of this role", false),
      p("status", { type: "string", enum: [...CHANNEL_STATUSES], description: "open, closing or settled" }, "only channels with this status", false),
    ],
    result: result("channels", "sessionId, role, status, deposit of each channel", { type: "array", items: OBJECT }),
    run: async (api, params) =>
      api.context.store
        .listChannels({ ...(params.role ? { role: params.role as never } : {}), ...(params.status ? { status: params.status as never } : {}) })
        .map((c) => ({ sessionId: c.sessionId, role: c.role, status: c.status, deposit: c.deposit.toString(), provider: c.ref.terms.provider })),
  },
  "payer.deposit": {
    summary: "Tops the channel up (Payer.deposit).",
    params: [SESSION, p("amount", POSITIVE, "wei to add")],
    result: result("transaction", TX),
    run: async (api, params) => wire(await api.payer.deposit(params.sessionId as Hex, BigInt(params.amount as string))),
  },
  "payer.close": {
    summary: "Closes the channel: cooperatively with the provider node (settles at once), or unilaterally (a challenge window runs).",
    params: [SESSION, p("mode", { type: "string", enum: ["cooperative", "unilateral"], description: "cooperative or unilateral" }, "how to close (default cooperative)", false)],
    result: result("closed", "settled amounts (cooperative) or the recorded state and finalizesAt (unilateral)"),
    run: async (api, params) => {
      const sessionId = params.sessionId as Hex;
      api.requireChannel(sessionId);
      await api.disconnect(sessionId); // the close opens its own connection; the session ends with it
      if (params.mode === "unilateral") {
        return wire({ mode: "unilateral", ...(await api.payer.closeUnilateral(sessionId)) });
      }
      return wire({ mode: "cooperative", ...(await api.payer.closeCooperative(sessionId)) });
    },
  },
  "payer.finalize": {
    summary: "Pays out a unilaterally closed channel once its window has passed (Payer.finalize).",
    params: [SESSION],
    result: result("settled", TX),
    run: async (api, params) => wire(await api.payer.finalize(params.sessionId as Hex)),
  },

  // Gigs: channel-client/roles/gigs.ts
  "gigs.fund": {
    summary: "Escrows a gig's bounty (Gigs.fund); the gig is then followed on the phases topic.",
    params: [
      p("amount", POSITIVE, "the bounty in the asset's base units"),
      p("icsHash", HASH, "keccak256 of the canonical Intent Contract Schema"),
      p("deadline", TIME, "unix time after which an undelivered gig can be refunded"),
      p("disputeWindow", TIME, "seconds the client may dispute a delivery"),
      p("provider", ADDRESS, "the one provider who may accept (default: any bonded provider)", false),
      p("asset", ADDRESS, "the ERC-20 to escrow (default: native ETH)", false),
    ],
    result: result("funded", "gigId, amount and the transaction"),
    run: async (api, params) => {
      const funded = await api.requireGigs().fund({
        amount: BigInt(params.amount as string),
        icsHash: params.icsHash as Hex,
        deadline: BigInt(params.deadline as string),
        disputeWindow: BigInt(params.disputeWindow as string),
        ...(params.provider ? { provider: addressOf(params.provider)! } : {}),
        ...(params.asset ? { asset: addressOf(params.asset)! } : {}),
        chainId: api.context.deployment.chainId,
      });
      api.context.gigs.add(funded.gigId);
      return wire(funded);
    },
  },
  "gigs.read": {
    summary: "The gig as the GigEscrow stores it (status None for a gig never funded).",
    params: [GIG],
    result: result("gig", "gigId, status, client, provider, asset, amount, hashes and times"),
    run: async (api, params) => wire(await api.requireGigs().read({ gigId: gigIdOf(params) })),
  },
  "gigs.accept": gigAction("The provider accepts the gig (Gigs.accept).", (g) => g.accept),
  "gigs.confirmProvider": gigAction("The client confirms a tentative provider (Gigs.confirmProvider).", (g) => g.confirmProvider),
  "gigs.dismissProvider": gigAction("The client dismisses a tentative provider (Gigs.dismissProvider).", (g) => g.dismissProvider),
  "gigs.deliver": {
    summary: "The provider delivers (Gigs.deliver); answers with when the client's dispute window ends.",
    params: [GIG, p("deliverableHash", HASH, "hash of the deliverable"), p("receiptRoot", HASH, "receipt root of the work (default zero)", false)],
    result: result("delivered", "windowEndsAt and the transaction"),
    run: async (api, params) => {
      const gigId = gigIdOf(params);
      api.context.gigs.add(gigId);
      return wire(
        await api.requireGigs().deliver({
          gigId,
          deliverableHash: params.deliverableHash as Hex,
          ...(params.receiptRoot ? { receiptRoot: params.receiptRoot as Hex } : {}),
          chainId: api.context.deployment.chainId,
        }),
      );
    },
  },
  "gigs.acceptDelivery": gigAction("The client accepts the delivery: the provider is paid at once (Gigs.acceptDelivery).", (g) => g.acceptDelivery),
  "gigs.release": gigAction("Pays the provider once the dispute window passed quietly (Gigs.release).", (g) => g.release),
  "gigs.refund": gigAction("Refunds the client once the deadline passed without a delivery (Gigs.refund).", (g) => g.refund),
  "gigs.cancel": gigAction("The client cancels a gig nobody accepted (Gigs.cancel).", (g) => g.cancel),
  "gigs.claimPayout": {
    summary: "Withdraws what the GigEscrow holds for this account in an asset (Gigs.claimPayout).",
    params: [p("asset", ADDRESS, "the asset (the zero address for ETH)")],
    result: result("claimed", "amount and the transaction"),
    run: async (api, params) => wire(await api.requireGigs().claimPayout({ asset: getAddress(params.asset as string), chainId: api.context.deployment.chainId })),
  },

  // Cases: channel-client/roles/disputes.ts
  "cases.read": {
    summary: "The case as stored on the DisputeManager (Disputes.readCase).",
    params: [CASE],
    result: result("case", "kind, status, subject, parties, asset, value, lane, packageHash, leaf"),
    run: async (api, params) => wire(await api.requireDisputes().readCase(params.caseId as Hex)),
  },
  "cases.panel": {
    summary: "The case's current round and panel (Disputes.currentPanel).",
    params: [CASE],
    result: result("panel", "round and the panel's addresses"),
    run: async (api, params) => wire(await api.requireDisputes().currentPanel(params.caseId as Hex)),
  },
  "cases.openGig": {
    summary: "Disputes a delivered gig, paying the lane's bond in the gig's asset (Disputes.openGigCase).",
    params: [GIG, p("lane", { type: "integer", enum: [0, 1], description: "lane 0 or 1" }, "the arbitration lane"), p("packageHash", HASH, "hash of the ChallengePackage")],
    result: result("opened", "caseId, bond and the transaction"),
    run: async (api, params) => {
      const gigId = gigIdOf(params);
      api.context.gigs.add(gigId);
      return wire(await api.requireDisputes().openGigCase({ gigId, lane: params.lane as 0 | 1, packageHash: params.packageHash as Hex }));
    },
  },
  "cases.draw": caseAction("Draws the case's panel once its randomness is ready (Disputes.drawPanel).", (d, caseId) => d.drawPanel({ caseId })),
  "cases.appeal": caseAction("Appeals a decided case to a larger fresh panel (Disputes.appeal).", (d, caseId) => d.appeal({ caseId })),
  "cases.finalize": caseAction("Enforces the standing verdict once the appeal window has passed (Disputes.finalize).", (d, caseId) => d.finalize({ caseId })),

  "balances.get": {
    summary: "ETH and LaborGas balances, claimable escrow payouts, and registry bond and stake of an address (default: this server's account).",
    params: [p("address", ADDRESS, "whose balances (default: the acting account)", false)],
    result: result("balances", "eth, token, claimable, providerBond, arbitratorStake as decimal strings"),
    run: async (api, params) => {
      const { publicClient, deployment } = api.context;
      const address = addressOf(params.address) ?? api.address;
      const out: Record<string, unknown> = { address, eth: (await publicClient.getBalance({ address })).toString() };
      const escrow = api.payer.escrow;
      out.claimable = (await claimableOf({ publicClient, escrow, asset: zeroAddress, account: address })).toString();
      if (deployment.contracts.LaborGas) {
        const token = contractAddress(deployment, "LaborGas");
        out.token = { address: token, balance: (await publicClient.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [address] })).toString() };
      }
      if (deployment.contracts.ProviderRegistry) {
        const registry = contractAddress(deployment, "ProviderRegistry");
        const [provider, arbitrator] = await Promise.all(
          [0, 1].map((role) => publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondOf", args: [role, address] })),
        );
        out.providerBond = { active: provider!.active.toString(), pending: provider!.pending.toString() };
        out.arbitratorStake = { active: arbitrator!.active.toString(), pending: arbitrator!.pending.toString() };
      }
      return out;
    },
  },

  subscribe: {
    summary: "Follows a topic (receipts, phases, cases, alerts, streams) over this WebSocket; notifications arrive as `subscription` messages.",
    params: [
      p("topic", { type: "string", enum: [...TOPICS], description: "receipts, phases, cases, alerts or streams" }, "what to follow"),
      p(
        "filter",
        { type: "object", additionalProperties: false, properties: { sessionId: HASH, gigId: GIG_ID, caseId: HASH }, description: "an object with sessionId, gigId and/or caseId" },
        "only events about this session, gig or case",
        false,
      ),
    ],
    result: result("subscription", "the subscription id, for unsubscribe and in every notification", { type: "string" }),
    websocketOnly: true,
    run: async (_api, params, connection) => connection.subscribe!(params.topic as Topic, (params.filter as SubscriptionFilter | undefined) ?? {}),
  },
  unsubscribe: {
    summary: "Stops a subscription of this WebSocket.",
    params: [p("subscription", { type: "string", pattern: "^0x[0-9a-f]{8}$", description: "a subscription id" }, "the subscription id")],
    result: result("removed", "true when the subscription existed", { type: "boolean" }),
    websocketOnly: true,
    run: async (_api, params, connection) => {
      if (!connection.unsubscribe!(params.subscription as string)) throw new ApiError("NOT_FOUND", `This connection has no subscription ${params.subscription as string}.`);
      return true;
    },
  },
};

/** The params of a method as one JSON Schema object (what the server validates against). */
export function paramsSchema(spec: MethodSpec): JsonSchema {
  return {
    type: "object",
    additionalProperties: false,
    properties: Object.fromEntries(spec.params.map((d) => [d.name, d.schema])),
    required: spec.params.filter((d) => d.required).map((d) => d.name),
  };
}
