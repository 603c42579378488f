/**
 * The provider node's parameter and result types and constants (issue 33 item 2, decision 0021), and the narrow
 * context its message handlers (`provider-bind.ts`, `provider-invoke.ts`, `provider-messages.ts`) receive instead of
 * the node itself.
 */
import type { Hex, LocalAccount, PublicClient } from "viem";

import type { GasEscrowDomain } from "../core/eip712";
import type { PricingTerms } from "../core/terms";
import type { JsonObject } from "../core/validate";
import type { ChannelRecord, ChannelStore } from "../store/store";
import type { ListenSecureParameters } from "../transport";
import type { Logger } from "./log";
import type { NodeMetrics } from "./metrics";
import type { ProviderSession } from "./provider-session";
import type { StreamService, StreamServiceParameters } from "./stream-service";


/** A JSON-RPC error object as the payer receives it. */
export type McpError = { code: number; message: string; data?: JsonObject };

/**
 * What one invocation produced: its result and the units it consumed, or an error — a call that failed
 * (worker crash, timeout, bad output, a JSON-RPC error) is receipted but not charged (decision 0022).
 */
export type McpOutcome = { result: JsonObject; units: bigint } | { error: McpError };

/** The provider's work: one JSON-RPC (MCP) request in, its outcome out. */
export type McpHandler = (request: JsonObject) => Promise<McpOutcome>;

/** JSON-RPC error code of a result replayed from the store after a restart (its output was not kept). */
export const REPLAYED_RESULT_CODE = -32001;

/** JSON-RPC error code of a handler that threw instead of answering. */
export const HANDLER_FAILED_CODE = -32000;

/**
 * Channel ownership for a provider that runs as several processes over one database (decision 0036): the
 * node takes a channel over when its payer binds it here — the store then fences every write another process
 * (or this one, under an older epoch) makes to it — and forgets it when a write was fenced. `PgStore` in
 * mode "fleet" is one.
 */
export type ChannelOwnership = {
  take(sessionId: Hex): Promise<unknown>;
  release(sessionId: Hex): void;
  /** The newest ticket stored for the channel by any process: a payment over MCP older than it takes nothing. */
  newestTicket(sessionId: Hex): Promise<{ seq: bigint; signature: Hex } | undefined>;
};

export type ProviderNodeParameters = {
  account: LocalAccount;
  publicClient: PublicClient;
  domain: GasEscrowDomain;
  store: ChannelStore;
  /** Several processes serve this provider from one database: take each channel over at bind (decision 0036). */
  ownership?: ChannelOwnership;
  /** What this provider charges; a payer must open the channel on exactly these terms. */
  pricing: PricingTerms;
  /**
   * The live endpoints of this provider's processes (decision 0036), listed in the signed terms offer so a payer
   * can resume on another process. If it fails, the offer goes out without them.
   */
  endpoints?: () => Promise<readonly string[]>;
  handler: McpHandler;
  modelSnapshotId: string;
  host?: string;
  port?: number;
  log?: (line: string) => void;
  /** Structured JSON-line logs (issue 16): accepted sessions, phases seen, refusals, co-signed closes. */
  logger?: Logger;
  /** Prometheus metrics (issue 16): open sessions, tickets, latencies, unpaid exposure, RPC errors. */
  metrics?: NodeMetrics;
  /**
   * Follow the escrow's events to learn when a bound channel closes or settles on-chain (cursor
   * `provider-node:<address>` in the store). Omit it when something else feeds `applyEscrowEvents` (the
   * watchtower's `onEvents`, as `ioi provider` does).
   */
  follow?: { fromBlock: bigint; pollMs?: number };
  /**
   * A handshaken connection that has not bound a channel (session.open) within this many ms is closed
   * (default 10 s; issue 28 item 5): a valid handshake with a throw-away key holds nothing for long.
   */
  bindTimeoutMs?: number;
  /**
   * How often (ms) connections the listener's limits refused are summarised in the log: a source's first refusal
   * is logged at once, the rest of the period counted, then one line per source (`peer.refused_summary`). Default
   * one minute. A flood never writes a line per connection.
   */
  refusalSummaryMs?: number;
  /**
   * Milestone streaming (issue 32, decision 0037): the work of one tranche, for a node whose terms are version 4.
   * Such a node serves tranches (`stream.tranche`, `stream.sample`) and refuses plain invocations. `repositoryOf`: the
   * repository tranche k left, when the node no longer holds it in memory (it restarted); answered for a sample only
   * if it still hashes to what the proof is anchored to (e.g. the repository directory, unchanged since).
   */
  stream?: StreamServiceParameters["stream"];
  /** Limits on strangers passed to the listener (handshake deadline, per-source and global caps, idle timeout). */
  limits?: Pick<
    ListenSecureParameters,
    "handshakeTimeoutMs" | "maxPendingHandshakes" | "maxPendingPerSource" | "maxConnectionsPerSource" | "maxConnections" | "handshakesPerSecondPerSource" | "idleTimeoutMs" | "strangerHandshakesPerSecond"
  >;
  /**
   * Keep each answered call's request and output in the store (decision 0033, exactly once), durable before the
   * answer leaves: a re-sent ticket is answered with its output, and a payer that lost an output asks for it
   * (`result.request`). Default false (only receipts are kept, decision 0028); `ioi provider` turns it on.
   */
  keepResults?: boolean;
};

export const DEFAULT_BIND_TIMEOUT_MS = 10_000;
export const DEFAULT_REFUSAL_SUMMARY_MS = 60_000;

/**
 * What the node knows of a bound channel's lifecycle. Only `open` is served: `closed` once the provider
 * co-signed a cooperative close, `closing` once a unilateral close is on-chain, `settled` once it paid out.
 */
export type SessionPhase = "open" | "closed" | "closing" | "settled";


/** A channel bound on this node: its session, answer and work chains, and phase (internal to the node's modules). */
export type Bound = {
  record: ChannelRecord;
  session: ProviderSession;
  /** Answers leave in seq order: each waits for the previous one and for its own step to be durable. */
  answers: Promise<void>;
  /** Invocations are checked and run one at a time, in arrival order. */
  work: Promise<void>;
  /** Set (synchronously, before anything else runs) the moment the channel stops being open. */
  phase: SessionPhase;
  /**
   * A write of this session failed (the store refused or lost it, or another process took the channel over):
   * nothing more is answered from this in-memory state, which may be ahead of the store; the payer's next
   * bind resumes from the store.
   */
  failed?: boolean;
};

/**
 * What the node's handlers may touch of it: its parameters, the bound sessions and phases learnt for unbound ones,
 * the stream service, and its ordering, phase and failure steps (each handler's parameter names the few it needs).
 */
export type ProviderContext = {
  readonly parameters: ProviderNodeParameters;
  readonly sessions: Map<Hex, Bound>;
  readonly phases: Map<Hex, SessionPhase>;
  readonly streams: StreamService;
  /** A refusal or failure: free text to `log`, and a `warn` line with `event` to `logger`. */
  log(line: string, event?: string, fields?: Record<string, unknown>): void;
  /** Runs `step` after `chain`; a failing step is logged and never breaks the chain. */
  after(chain: Promise<void>, step: () => Promise<void> | void): Promise<void>;
  /** Moves a session's phase forward only (open → closed/closing → settled), in memory. */
  advance(sessionId: Hex, b: Bound | undefined, phase: SessionPhase, why: string): void;
  /** A write of the session failed: answer nothing more from this state, forget it, drop the connection. */
  fail(b: Bound, error: unknown, drop: () => void): void;
};
