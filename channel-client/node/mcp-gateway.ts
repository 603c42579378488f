/**
 * `ioi mcp`, the payer's gateway (issue 30, decision 0033): an MCP server on `@modelcontextprotocol/sdk` that a
 * host (a desktop assistant, an IDE, an agent framework) adds with one configuration entry. It presents the
 * provider's tools, resources and prompts as its own — every request is forwarded through the paid channel —
 * pays each call with a ticket, and answers with the provider's result and, in `_meta`, the receipt that binds it.
 *
 * Budgets the operator sets (per call, per channel, per UTC day) are checked before a ticket is signed; the
 * day's spending and every call's idempotency record live in a small SQLite file of the gateway's own, so a
 * restart resets neither. A call refused for any reason (over budget, price changed, provider gone, channel
 * closing) is an MCP error of one sentence and pays nothing; a result whose receipt fails the payer's checks is
 * never handed over as good (`isError` with the reason).
 *
 * Exactly once: a `tools/call` carrying `_meta["ioi-settlement/idempotency-key"]` (or, without one, the host's
 * JSON-RPC id on the same connection) is paid at most once. The key is recorded with the seq of the ticket that
 * pays it before the ticket leaves; a retry (after a timeout, a reconnect or a gateway restart) is answered from
 * the payer's results, the provider's kept output, or — when the provider never saw the ticket — by paying anew.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import Database from "better-sqlite3";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { Address, Hex, LocalAccount } from "viem";

import { canon } from "../core/canonical";
import { BaseError } from "../core/errors";
import { sessionReceiptHash, type SignedSessionReceipt } from "../core/receipt";
import type { SignedPaymentTicket } from "../core/ticket";
import { paymentResponseOf, X402_PAYMENT_META, X402_PAYMENT_RESPONSE_META } from "../core/x402";
import type { SignedSessionKeyGrant } from "../core/session-key";
import { describePricing, termsHashOf } from "../core/terms";
import type { JsonObject } from "../core/validate";
import type { GasEscrowDomain } from "../core/eip712";
import type { PricingTerms } from "../core/terms";
import type { ChannelStore } from "../store/store";
import { McpHttpSessions } from "./mcp-http-sessions";
import { fetchTermsOffer, PayerClient, ProviderRejectedError, type InvocationOutcome } from "./payer-client";

/** The `_meta` key a host puts on a `tools/call` to make retries of it idempotent. */
export const IDEMPOTENCY_KEY_META = "ioi-settlement/idempotency-key";
/** The `_meta` key of the receipt reference on every forwarded answer. */
export const RECEIPT_META = "ioi-settlement/receipt";

/** Largest request a host may send over HTTP, in bytes; larger ones are refused with 413 (the gateway keeps serving). */
export const MAX_HOST_REQUEST_BYTES = 1 << 20;

export type GatewayBudgets = {
  /** Most one call may prepay. */
  perCall: bigint;
  /** Most the channel may ever hold (its deposits in total): the gateway tops up only within it. */
  perChannel: bigint;
  /** Most the gateway may pay in one UTC day (what tickets prepay, less what failed calls returned). */
  perDay: bigint;
};

/** Where the provider node listens. */
export type Peer = { host: string; port: number };

/**
 * What the gateway needs of a payer: `createPayer(…)` from `ioi-settlement/payer` is one (typed structurally here so
 * the node folder does not import the role entry points).
 */
export type GatewayPayer = {
  readonly account: LocalAccount;
  readonly domain: GasEscrowDomain;
  readonly parameters: { store: ChannelStore };
  openChannel(parameters: { provider: Address; peer: Peer; deposit: bigint; expectedTerms?: PricingTerms }): Promise<{ sessionId: Hex }>;
  deposit(sessionId: Hex, amount: bigint): Promise<unknown>;
};

export type McpGatewayParameters = {
  payer: GatewayPayer;
  provider: Address;
  peer: Peer;
  budgets: GatewayBudgets;
  /** What a new channel is opened with and each top-up adds (default: the channel budget). */
  deposit?: bigint;
  /** The terms hash the operator agreed to; a provider offering other terms is refused ("price changed"). */
  expectedTermsHash?: Hex;
  /** Pay with a session key under this grant (its session is the channel used; nothing is opened or topped up). */
  sessionKey?: { account: LocalAccount; grant: SignedSessionKeyGrant };
  /** The gateway's own SQLite file: the day's spending and the idempotency records. */
  statePath: string;
  /** How long one forwarded call may take before the host hears a timeout (default 60 s; the call stays paid-for). */
  callTimeoutMs?: number;
  log?: (line: string) => void;
  /** UTC day of a time (tests move the clock). */
  now?: () => number;
};

/** The receipt reference a forwarded answer carries in `_meta[RECEIPT_META]`. */
export type ReceiptReference = { sessionId: Hex; seq: string; receiptHash: Hex; amount: string };

/** A refusal: said to the host as one sentence; nothing was paid for it. */
export class GatewayRefusedError extends BaseError {
  override name = "GatewayRefusedError" as const;
}

type CallRow = { key: string; seq: string; request: string; prepaid: string; charged: string | null; status: "pending" | "done"; day: string };

/** Error code the gateway answers refusals with (JSON-RPC server-error range; stable, part of its protocol). */
export const GATEWAY_REFUSED_CODE = -32050;

export class McpGateway {
  readonly #db: Database.Database;
  #client: PayerClient | undefined;
  #connecting: Promise<PayerClient> | undefined;
  #sessionId: Hex | undefined;
  /** Calls of this process by key, so concurrent duplicates share one payment. */
  readonly #inflight = new Map<string, Promise<JsonObject>>();
  /** Invocations sent and not answered yet, by key: they outlive a host's timeout, so a retry awaits them. */
  readonly #paying = new Map<string, Promise<InvocationOutcome>>();
  /** Top-ups and reconnects run one at a time, with no call being signed meanwhile. */
  #gate: Promise<void> = Promise.resolve();
  #nextId = 1;
  #stopped = false;
  #http: HttpServer | undefined;
  readonly #httpSessions = new McpHttpSessions();

  private constructor(readonly parameters: McpGatewayParameters) {
    this.#db = new Database(parameters.statePath);
    this.#db.pragma("journal_mode = WAL");
    this.#db.pragma("synchronous = FULL"); // an idempotency record is durable before its ticket leaves
    this.#db.exec(`CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, session_id TEXT NOT NULL, seq TEXT NOT NULL, request TEXT NOT NULL,
      prepaid TEXT NOT NULL, charged TEXT, status TEXT NOT NULL, day TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS calls_day ON calls (day);
      CREATE TABLE IF NOT EXISTS channel (provider TEXT PRIMARY KEY, session_id TEXT NOT NULL);`);
  }

  /** Opens the gateway's state, finds (or opens) the channel with the provider, and connects to it. */
  static async start(parameters: McpGatewayParameters): Promise<McpGateway> {
    const gateway = new McpGateway(parameters);
    try {
      await gateway.#prepareChannel();
      await gateway.#connected();
    } catch (error) {
      gateway.#db.close();
      throw error;
    }
    return gateway;
  }

  get sessionId(): Hex | undefined {
    return this.#sessionId;
  }

  /** What the gateway has paid today (UTC): done calls' charges plus what pending calls prepaid. */
  spentToday(): bigint {
    const rows = this.#db.prepare<[string], Pick<CallRow, "prepaid" | "charged" | "status">>("SELECT prepaid, charged, status FROM calls WHERE day = ?").all(this.#day());
    return rows.reduce((sum, r) => sum + BigInt(r.status === "done" ? (r.charged ?? "0") : r.prepaid), 0n);
  }

  /**
   * An SDK `Server` that serves one host connection: every request it gets is forwarded through the channel.
   * Connect it to a transport (stdio, Streamable HTTP, or an in-memory pair).
   */
  server(): Server {
    const server = new Server({ name: "ioi-mcp-gateway", version: "1" }, { capabilities: { tools: {}, resources: {}, prompts: {} } });
    const connection = randomUUID();
    const forward = (method: string) => async (request: { params?: unknown }, extra: { requestId: string | number }) =>
      this.forward(method, (request.params ?? {}) as JsonObject, `${connection}:${String(extra.requestId)}`).catch((error: unknown) => {
        throw onTheWire(error);
      });
    server.setRequestHandler(ListToolsRequestSchema, forward("tools/list"));
    server.setRequestHandler(ListResourcesRequestSchema, forward("resources/list"));
    server.setRequestHandler(ListResourceTemplatesRequestSchema, forward("resources/templates/list"));
    server.setRequestHandler(ReadResourceRequestSchema, forward("resources/read"));
    server.setRequestHandler(ListPromptsRequestSchema, forward("prompts/list"));
    server.setRequestHandler(GetPromptRequestSchema, forward("prompts/get"));
    server.setRequestHandler(CallToolRequestSchema, forward("tools/call"));
    return server;
  }

  /**
   * Forwards one host request through the channel and resolves with the answer to give the host (the provider's
   * result with the receipt reference in `_meta`). `hostKey` identifies the request on its connection; a
   * `tools/call` with an idempotency key in `_meta` uses that instead, across connections and restarts.
   */
  async forward(method: string, params: JsonObject, hostKey: string): Promise<JsonObject> {
    if (this.#stopped) throw refusal("The gateway is stopping; nothing was paid.");
    const meta = (params._meta ?? undefined) as JsonObject | undefined;
    const given = meta && typeof meta[IDEMPOTENCY_KEY_META] === "string" ? (meta[IDEMPOTENCY_KEY_META] as string) : undefined;
    if (given !== undefined && (given.length === 0 || given.length > 200)) throw new McpError(ErrorCode.InvalidParams, "The idempotency key must be 1 to 200 characters.");
    const key = given !== undefined ? `key:${given}` : `host:${hostKey}`;
    // Our own _meta keys are not forwarded: the request the provider sees (and the receipt binds) is the host's call.
    const forwarded = stripOwnMeta(params);
    const running = this.#inflight.get(key);
    if (running) return running;
    const call = this.#call(key, method, forwarded).finally(() => this.#inflight.delete(key));
    this.#inflight.set(key, call);
    return call;
  }

  async #call(key: string, method: string, params: JsonObject): Promise<JsonObject> {
    const paying = this.#paying.get(key);
    if (paying) return this.#outcomeToHost(key, method, paying);
    await this.#gate;
    const row = this.#db.prepare<[string], CallRow>("SELECT * FROM calls WHERE key = ?").get(key);
    if (row) {
      const again = await this.#answerAgain(row);
      if (again) return again;
    }
    const request: JsonObject = { jsonrpc: "2.0", id: `gw-${this.#nextId++}`, method, params };
    return this.#payAndCall(key, request);
  }

  /** A call paid before (this process or an earlier one): its stored or kept output, or undefined if never paid. */
  async #answerAgain(row: CallRow): Promise<JsonObject | undefined> {
    const client = await this.#connected();
    const seq = BigInt(row.seq);
    // The payer's store holds the step once the receipt was accepted (or taken back from the provider at connect).
    const [step] = this.parameters.payer.parameters.store.steps(client.parameters.channel.sessionId, { fromSeq: seq, limit: 1 });
    if (!step || step.seq !== seq || !step.receipt) return undefined; // the provider never answered it: not paid for
    let output: JsonObject | undefined;
    try {
      output = await client.fetchResult(seq, row.request);
    } catch (error) {
      this.#drop(client);
      throw refusal(`The output of the call paid with seq ${seq} could not be recovered: ${messageOf(error)}`);
    }
    if (output === undefined) throw refusal(`The call was paid with seq ${seq}, but neither this gateway nor the provider kept its output.`);
    this.#finish(row.key, step.receipt.receipt.metering.amount);
    const answer = { result: ("error" in output && Object.keys(output).length === 1 ? undefined : output) as JsonObject | undefined, error: output.error as JsonObject | undefined };
    return this.#toHost(answer, { ticket: step.ticket, receipt: step.receipt });
  }

  async #payAndCall(key: string, request: JsonObject): Promise<JsonObject> {
    let client = await this.#connected();
    const { budgets } = this.parameters;
    const prepaid = client.session.prepaidFor(request);
    const method = request.method as string;
    if (prepaid > budgets.perCall) throw refusal(`The call ${describeCall(request)} prepays ${prepaid} wei, over the per-call budget of ${budgets.perCall} wei; nothing was paid.`);
    const spent = this.spentToday();
    if (spent + prepaid > budgets.perDay) {
      throw refusal(`The call ${describeCall(request)} would bring today's spending to ${spent + prepaid} wei, over the daily budget of ${budgets.perDay} wei; nothing was paid.`);
    }
    if (client.session.cumulativeAmount + prepaid > client.session.parameters.deposit) client = await this.#topUp(client, prepaid);
    // The seq the ticket will carry is reserved synchronously by invoke; the record is durable before it leaves.
    const seq = client.session.seq + 1n;
    const requestText = canon(request);
    this.#db
      .prepare("INSERT INTO calls (key, session_id, seq, request, prepaid, charged, status, day) VALUES (?, ?, ?, ?, ?, NULL, 'pending', ?) ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, prepaid = excluded.prepaid, status = 'pending', day = excluded.day")
      .run(key, client.parameters.channel.sessionId, seq.toString(), requestText, prepaid.toString(), this.#day());
    const invocation = client.invoke(request);
    this.#paying.set(key, invocation);
    invocation.then(
      () => this.#paying.delete(key),
      (error: unknown) => {
        this.#paying.delete(key);
        // Refused before any work (the provider refused the ticket, or it was never signed): nothing was charged,
        // so the day's spending does not count it and a retry pays anew. A dropped connection stays pending: the
        // provider may have done the work, and the retry finds out.
        const name = (error as Error).name;
        if (name === "ProviderRejectedError" || name === "DepositExceededError" || name === "SessionKeyCapExceededError") this.#finish(key, 0n);
        else this.#drop(client);
      },
    );
    return this.#outcomeToHost(key, method, invocation);
  }

  /** Awaits a sent invocation (at most the call timeout; it stays paid-for and a retry finds it) and answers the host. */
  async #outcomeToHost(key: string, method: string, invocation: Promise<InvocationOutcome>): Promise<JsonObject> {
    const ms = this.parameters.callTimeoutMs ?? 60_000;
    let outcome: InvocationOutcome;
    try {
      outcome = await withTimeout(invocation, ms, `The provider did not answer ${method} within ${ms} ms; retry with the same idempotency key to get the paid result (it is not paid again).`);
    } catch (error) {
      if (error instanceof GatewayRefusedError) throw refusal(error.shortMessage);
      throw refusal(this.#why(error, method));
    }
    this.#finish(key, outcome.charged);
    // The step is durable once the invocation resolved: its ticket goes to the host beside the receipt (x402 key).
    const [step] = this.parameters.payer.parameters.store.steps(outcome.receipt.receipt.sessionId, { fromSeq: outcome.seq, limit: 1 });
    return this.#toHost(outcome, { ticket: step!.ticket, receipt: outcome.receipt });
  }

  /** The answer a host gets: the result with our `_meta`, or an MCP error for a failed call (charged 0). */
  #toHost(outcome: { result?: JsonObject | undefined; error?: JsonObject | { code: number; message: string } | undefined }, step: { ticket: SignedPaymentTicket; receipt: SignedSessionReceipt }): JsonObject {
    const r = step.receipt.receipt;
    const seq = r.seq;
    const reference: ReceiptReference = { sessionId: r.sessionId, seq: seq.toString(), receiptHash: sessionReceiptHash(r), amount: r.metering.amount.toString() };
    if (outcome.result === undefined) {
      const e = (outcome.error ?? {}) as { code?: unknown; message?: unknown };
      const message = typeof e.message === "string" ? e.message : "The provider's worker failed.";
      throw new McpError(typeof e.code === "number" ? e.code : ErrorCode.InternalError, `${message} (not charged; receipt seq ${seq})`, { [RECEIPT_META]: reference });
    }
    const x402 = paymentResponseOf({ chainId: this.parameters.payer.domain.chainId, payer: this.parameters.payer.account.address, ...step });
    const meta = { ...((outcome.result._meta as JsonObject | undefined) ?? {}), [RECEIPT_META]: reference, [X402_PAYMENT_RESPONSE_META]: x402 as unknown as JsonObject };
    return { ...outcome.result, _meta: meta };
  }

  #finish(key: string, charged: bigint): void {
    this.#db.prepare("UPDATE calls SET status = 'done', charged = ? WHERE key = ?").run(charged.toString(), key);
  }

  /** Why a paid call failed, as one sentence for the host. */
  #why(error: unknown, method: string): string {
    if (error instanceof ProviderRejectedError) {
      if (error.error === "ChannelNotOpenError") return `The channel is closing or closed, so the provider refused ${method}; nothing was paid.`;
      if (error.error === "TicketUnderpaidError") return `The provider asks more for ${method} than its signed terms say (the price changed); nothing was paid.`;
      return `The provider refused the payment for ${method} (${error.error}); nothing was paid.`;
    }
    const e = error as BaseError;
    if (e.name === "ReceiptMismatchError" || e.name === "ReceiptOverpricedError" || e.name === "ModelMismatchError" || e.name === "RequiredReceiptMissingError") {
      return `The provider's answer to ${method} failed the receipt checks, so it is not returned: ${messageOf(error)}`;
    }
    if (e.name === "DepositExceededError" || e.name === "SessionKeyCapExceededError") return `${messageOf(error)} Nothing was paid.`;
    return `The provider could not be reached or dropped the call to ${method} (${messageOf(error)}); retry with the same idempotency key — a paid call is never paid twice.`;
  }

  /** Adds a deposit within the channel budget (after the calls in flight), then reconnects on the new deposit. */
  async #topUp(client: PayerClient, prepaid: bigint): Promise<PayerClient> {
    const { payer, budgets, sessionKey } = this.parameters;
    const channel = payer.parameters.store.getChannel(client.parameters.channel.sessionId)!;
    const need = client.session.cumulativeAmount + prepaid - channel.deposit;
    if (sessionKey) throw refusal(`The channel holds ${channel.deposit} wei and this call needs ${need} wei more; a gateway paying with a session key does not top up (the payer must).`);
    const add = maxOf(this.parameters.deposit ?? budgets.perChannel, need);
    if (channel.deposit + add > budgets.perChannel) {
      if (channel.deposit + need > budgets.perChannel) throw refusal(`The channel would need ${channel.deposit + need} wei, over the per-channel budget of ${budgets.perChannel} wei; nothing was paid.`);
    }
    const amount = channel.deposit + add > budgets.perChannel ? budgets.perChannel - channel.deposit : add;
    const gate = this.#gate.then(async () => {
      await client.close();
      this.#client = undefined;
      await payer.deposit(channel.sessionId, amount);
      this.parameters.log?.(`topped up session ${channel.sessionId} by ${amount} wei`);
    });
    this.#gate = gate.catch(() => undefined);
    await gate;
    return this.#connected();
  }

  /** The channel to pay on: the session key's, the one recorded for this provider if still open, or a new one. */
  async #prepareChannel(): Promise<void> {
    const { payer, provider, peer, sessionKey, expectedTermsHash, budgets } = this.parameters;
    const offer = await fetchTermsOffer({ account: payer.account, domain: payer.domain, provider, host: peer.host, port: peer.port }).catch((error: unknown) => {
      throw refusal(`The provider at ${peer.host}:${peer.port} did not offer its terms (${messageOf(error)}).`);
    });
    if (expectedTermsHash !== undefined && offer.termsHash !== expectedTermsHash) {
      throw refusal(`The provider now offers terms ${offer.termsHash} (${describePricing(offer.pricing)}), not the agreed ${expectedTermsHash}: the price changed; nothing was paid.`);
    }
    const store = payer.parameters.store;
    if (sessionKey) {
      this.#sessionId = sessionKey.grant.grant.sessionId;
    } else {
      const recorded = this.#db.prepare<[string], { session_id: Hex }>("SELECT session_id FROM channel WHERE provider = ?").get(provider.toLowerCase());
      const channel = recorded ? store.getChannel(recorded.session_id) : undefined;
      if (channel && channel.status === "open") this.#sessionId = channel.sessionId;
      else {
        const deposit = minOf(this.parameters.deposit ?? budgets.perChannel, budgets.perChannel);
        const opened = await payer.openChannel({ provider, peer, deposit, expectedTerms: offer.pricing });
        this.#db.prepare("INSERT INTO channel (provider, session_id) VALUES (?, ?) ON CONFLICT (provider) DO UPDATE SET session_id = excluded.session_id").run(provider.toLowerCase(), opened.sessionId);
        this.#sessionId = opened.sessionId;
        this.parameters.log?.(`opened session ${opened.sessionId} with ${deposit} wei on terms ${offer.termsHash} (${describePricing(offer.pricing)})`);
      }
    }
    const channel = store.getChannel(this.#sessionId);
    if (!channel) throw refusal(`The payer's store holds no session ${this.#sessionId}.`);
    if (channel.ref.terms.termsHash !== offer.termsHash) {
      throw refusal(`The provider now offers terms ${offer.termsHash}, but the channel was opened on ${channel.ref.terms.termsHash}: the price changed; close the channel and open a new one.`);
    }
    if (termsHashOf(channel.pricing) !== channel.ref.terms.termsHash) throw refusal(`The stored terms of session ${channel.sessionId} do not hash to its terms hash.`);
  }

  /** The live connection to the provider, (re)connecting when there is none. */
  async #connected(): Promise<PayerClient> {
    if (this.#client) return this.#client;
    if (this.#connecting) return this.#connecting;
    const { payer, peer, sessionKey } = this.parameters;
    const channel = payer.parameters.store.getChannel(this.#sessionId!)!;
    this.#connecting = PayerClient.connect({
      account: payer.account,
      domain: payer.domain,
      store: payer.parameters.store,
      channel,
      host: peer.host,
      port: peer.port,
      ...(sessionKey ? { sessionKey } : {}),
    })
      .then((client) => {
        this.#client = client;
        return client;
      })
      .catch((error: unknown) => {
        throw refusal(`The provider at ${peer.host}:${peer.port} cannot be reached (${messageOf(error)}); nothing was paid.`);
      })
      .finally(() => (this.#connecting = undefined));
    return this.#connecting;
  }

  /** Forgets a connection that failed; the next call reconnects (and takes back what the provider answered). */
  #drop(client: PayerClient): void {
    if (this.#client === client) this.#client = undefined;
    void client.close().catch(() => undefined);
  }

  #day(): string {
    return new Date(this.parameters.now?.() ?? Date.now()).toISOString().slice(0, 10);
  }

  /**
   * Serves Streamable HTTP on `host:port` (127.0.0.1 by default): one MCP session per host, each with its own
   * SDK server over this gateway. Requests over {@link MAX_HOST_REQUEST_BYTES} or not JSON get a JSON-RPC error.
   */
  async listenHttp(port = 0, host = "127.0.0.1"): Promise<{ url: string; port: number }> {
    const http = createServer((req, res) => void this.#onHttp(req, res));
    this.#http = http;
    await new Promise<void>((resolve, reject) => {
      http.once("error", reject);
      http.listen(port, host, () => resolve());
    });
    const bound = (http.address() as AddressInfo).port;
    return { url: `http://${host}:${bound}/mcp`, port: bound };
  }

  #onHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    return this.#httpSessions.serve(req, res, {
      maxBytes: MAX_HOST_REQUEST_BYTES,
      server: () => this.server(),
      unknownSession: "The MCP session is unknown (the gateway restarted?); initialize again.",
      failure: "The gateway could not serve this request.",
      onError: (error) => this.parameters.log?.(`http request failed: ${messageOf(error)}`),
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.allSettled([...this.#inflight.values()]);
    await this.#httpSessions.closeAll();
    if (this.#http) await new Promise<void>((resolve) => this.#http!.close(() => resolve()));
    await this.#client?.close().catch(() => undefined);
    this.#client = undefined;
    this.#db.close();
  }
}

function stripOwnMeta(params: JsonObject): JsonObject {
  const meta = params._meta as JsonObject | undefined;
  if (!meta || typeof meta !== "object") return params;
  const rest: JsonObject = {};
  for (const [k, v] of Object.entries(meta)) if (k !== IDEMPOTENCY_KEY_META && k !== X402_PAYMENT_META && k !== "progressToken") rest[k] = v;
  const { _meta: _dropped, ...others } = params;
  void _dropped;
  return Object.keys(rest).length ? { ...others, _meta: rest } : others;
}

function describeCall(request: JsonObject): string {
  const params = request.params as JsonObject | undefined;
  return request.method === "tools/call" && typeof params?.name === "string" ? `to tool ${JSON.stringify(params.name)}` : String(request.method);
}

/**
 * An `McpError` as the SDK's server sends it: `McpError` puts "MCP error CODE: " before its message and the host's
 * client puts it there again, so the host would read the prefix twice. The sentence goes out bare, with its code and
 * data; the host's client adds the prefix once.
 */
function onTheWire(error: unknown): unknown {
  if (!(error instanceof McpError)) return error;
  return Object.assign(new Error(error.message.replace(/^MCP error -?\d+: /, "")), { code: error.code, ...(error.data === undefined ? {} : { data: error.data }) });
}

function refusal(message: string): McpError {
  return new McpError(GATEWAY_REFUSED_CODE, message);
}

function messageOf(error: unknown): string {
  const e = error as BaseError & { message?: string };
  return (e.shortMessage ?? e.message ?? String(error)).split("\n")[0]!.replace(/^MCP error -?\d+: /, "");
}

const maxOf = (a: bigint, b: bigint) => (a > b ? a : b);
const minOf = (a: bigint, b: bigint) => (a < b ? a : b);

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new GatewayRefusedError(message)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
