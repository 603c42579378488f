/**
 * The provider node: listens on 127.0.0.1 for payers, binds each sealed connection to a channel it can
 * verify on-chain, checks every ticket before doing the work, persists the ticket and its receipt before
 * answering (group commit), and answers in order. A restarted node resumes every session from its store;
 * a ticket it already answered is answered again from the store, byte for byte the same receipt.
 */
import type { Address, Hex, LocalAccount, PublicClient } from "viem";

import { ChainFollower, type EscrowEvent } from "../chain/follower";
import { eventArg } from "../chain/logs";
import type { GasEscrowDomain } from "../core/eip712";
import { CHANNEL_PHASES, gasEscrowAbi, readSessionKeyChainState } from "../chain/escrow";
import type { SignedSessionKeyGrant } from "../core/session-key";
import { BaseError, BindingMismatchError, ChannelNotOpenError, DepositExceededError } from "../core/errors";
import type { ActionInvokePacket, ActionResultPacket, ReceiptCommitPacket } from "../core/packets";
import { ProviderSession } from "./provider-session";
import { faultCodeOf, signFaultStatement, type SignedFaultStatement } from "../core/fault-statement";
import type { SessionReceipt } from "../core/receipt";
import { signReceiptCommit, verifyReceiptCommit } from "../core/receipt-commit";
import { payerSignatureCheck } from "../chain/wallet-signature";
import type { ChannelRecord, ChannelStore } from "../store/store";
import { ChannelPrunedError } from "../store/errors";
import type { SettlementSummary } from "../core/summary";
import { hasDocumentBody, modelAllowed, sessionIdOf, termsHashOf, type PricingTerms } from "../core/terms";
import { signTermsOffer } from "../core/terms-offer";
import { listenSecure, type ListenSecureParameters, type SecureConnection, type SecureServer } from "../transport";
import type { JsonObject } from "../core/validate";
import type { Logger } from "./log";
import type { NodeMetrics } from "./metrics";
import type { SignedPaymentTicket } from "../core/ticket";
import type { ChannelRef } from "../core/terms";
import { decodeMessage, encodeMessage, isPacket, STEPS_PAGE, type NodeMessage, type RejectMessage, type SessionOpenMessage, type StepsMessage, type StreamSampleMessage, type StreamTrancheMessage } from "./protocol";
import { canonBytes } from "../core/canonical";
import { progressProofHash } from "../core/progress-proof";
import { StreamRefusedError, StreamService, TrancheCall, type StreamServiceParameters } from "./stream-service";

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
  /** Limits on strangers passed to the listener (handshake deadline, per-source and global caps, idle timeout). */
  /**
   * Milestone streaming (issue 32, decision 0037): the work of one tranche, for a node whose terms are version 4.
   * Such a node serves tranches (`stream.tranche`, `stream.sample`) and refuses plain invocations. `repositoryOf`: the
   * repository tranche k left, when the node no longer holds it in memory (it restarted); answered for a sample only
   * if it still hashes to what the proof is anchored to (e.g. the repository directory, unchanged since).
   */
  stream?: StreamServiceParameters["stream"];
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

/**
 * What the node knows of a bound channel's lifecycle. Only `open` is served: `closed` once the provider
 * co-signed a cooperative close, `closing` once a unilateral close is on-chain, `settled` once it paid out.
 */
export type SessionPhase = "open" | "closed" | "closing" | "settled";


type Bound = {
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

export class ProviderNode {
  readonly #sessions = new Map<Hex, Bound>();
  #server: SecureServer | undefined;
  #follower: ChainFollower | undefined;
  /** Phases learnt from events for channels not bound yet (a bind reads the chain anyway; this only narrows the race). */
  readonly #phases = new Map<Hex, SessionPhase>();
  /** Milestone streaming: tranches and samples of v4 channels. */
  readonly #streams: StreamService;
  /** Binds under way for payments without a connection (x402), so two payments for one channel bind it once. */
  readonly #detachedBinds = new Map<Hex, Promise<Bound>>();

  private constructor(readonly parameters: ProviderNodeParameters) {
    this.#streams = new StreamService(parameters);
  }

  /** Starts listening; resolves once the port is bound. */
  static async start(parameters: ProviderNodeParameters): Promise<ProviderNode> {
    // A provider that serves a model its own terms do not list would sign a provable model swap on every call.
    if (!modelAllowed(parameters.pricing, parameters.modelSnapshotId)) {
      throw new BindingMismatchError(
        `The provider serves model ${JSON.stringify(parameters.modelSnapshotId)}, which its terms do not list (${hasDocumentBody(parameters.pricing) ? parameters.pricing.models.join(", ") : ""}).`,
      );
    }
    const node = new ProviderNode(parameters);
    node.#server = await listenSecure({
      host: parameters.host ?? "127.0.0.1",
      port: parameters.port ?? 0,
      account: parameters.account,
      authorize: async (sessionId, payer) => node.#authorize(sessionId, payer),
      // Existing channels first (issue 28 item 5): their payers' handshakes skip the strangers' turns.
      prioritize: (sessionId, payer) => parameters.store.getChannel(sessionId)?.ref.terms.payer.toLowerCase() === payer.toLowerCase(),
      ...parameters.limits,
    });
    node.#server.on("connection", (connection) => node.#serve(connection));
    node.#server.on("handshakeError", (error, remote) => node.#log(`handshake refused from ${remote.address}: ${error.shortMessage}`, "peer.refused", { remote: remote.address }));
    node.#server.on("error", (error) => node.#log(`listener error: ${error.message}`));
    if (parameters.follow) {
      node.#follower = new ChainFollower({
        publicClient: parameters.publicClient,
        escrow: parameters.domain.verifyingContract,
        store: parameters.store,
        name: `provider-node:${parameters.account.address.toLowerCase()}`,
        fromBlock: parameters.follow.fromBlock,
        pollMs: parameters.follow.pollMs,
        onEvents: async (events) => node.applyEscrowEvents(events),
        onError: (error) => {
          parameters.metrics?.rpcError("provider-node");
          node.#log(`chain follower: ${(error as Error).message.split("\n")[0]}`, "chain.error");
        },
      });
      node.#follower.start();
    }
    return node;
  }

  /** How many sessions this node holds in memory (bound, and phases learnt for channels not bound). */
  get held(): { sessions: number; phases: number } {
    return { sessions: this.#sessions.size, phases: this.#phases.size };
  }

  /**
   * Several processes (decision 0036): forgets a channel this process no longer serves — its payer left, it
   * settled, or another process took it over. The session stops answering (a connection still bound to it is
   * dropped at its next write), and the store releases its rows. A later bind takes it over again from the store.
   */
  release(sessionId: Hex): void {
    if (!this.parameters.ownership) return;
    const b = this.#sessions.get(sessionId);
    if (b) {
      b.failed = true;
      this.#sessions.delete(sessionId);
    }
    this.#phases.delete(sessionId);
    this.parameters.ownership.release(sessionId);
  }

  /** The phase of a bound session as the node sees it, or undefined if it is not bound. */
  phaseOf(sessionId: Hex): SessionPhase | undefined {
    return this.#sessions.get(sessionId)?.phase;
  }

  /**
   * Learns from the escrow's events: a `ChannelClosing` stops work on the channel at once (a unilateral
   * close is on-chain; the watchtower defends the newest ticket), a `ChannelSettled` ends it, a `Deposited`
   * raises the deposit the next ticket is checked against. Idempotent, so a re-delivered batch is harmless.
   */
  applyEscrowEvents(events: readonly EscrowEvent[]): void {
    for (const event of events) {
      if (event.eventName === "SessionKeysRevoked") {
        // The payer left an epoch (decision 0025): its older grants are refused from this block on.
        for (const b of this.#sessions.values()) {
          if (b.record.ref.terms.payer.toLowerCase() === event.args.payer.toLowerCase()) b.session.noteKeyEpoch(event.args.epoch);
        }
        continue;
      }
      const sessionId = eventArg<Hex>(event, "sessionId");
      if (sessionId === undefined) continue;
      const b = this.#sessions.get(sessionId);
      if (event.eventName === "SessionKeyRevoked") {
        b?.session.noteKeyRevoked(event.args.key, BigInt(event.args.revokedAt));
        continue;
      }
      if (event.eventName === "ChannelClosing" || event.eventName === "ChannelChallenged" || event.eventName === "ChannelFrozen") {
        this.#advance(sessionId, b, "closing", `it is closing on-chain (${event.eventName} in block ${event.blockNumber})`);
      } else if (event.eventName === "ChannelSettled") {
        this.#advance(sessionId, b, "settled", `it settled on-chain in block ${event.blockNumber}`);
        // A fleet process keeps nothing of a settled channel it does not serve right now; a bound one leaves
        // memory when its payer disconnects.
        if (this.parameters.ownership && !b) this.#phases.delete(sessionId);
      } else if (event.eventName === "Deposited" && b && event.args.deposit > b.record.deposit) {
        b.record = { ...b.record, deposit: event.args.deposit };
        b.session.deposit = event.args.deposit;
      }
    }
  }

  /** Moves a session's phase forward only (open → closed/closing → settled), in memory. */
  #advance(sessionId: Hex, b: Bound | undefined, phase: SessionPhase, why: string): void {
    const rank = (p: SessionPhase | undefined) => (p === undefined || p === "open" ? 0 : p === "settled" ? 2 : 1);
    const current = b?.phase ?? this.#phases.get(sessionId);
    if (rank(phase) <= rank(current)) return;
    if (b) b.phase = phase;
    else this.#phases.set(sessionId, phase);
    this.parameters.log?.(`session ${sessionId.slice(0, 10)} is ${phase}: ${why}; no more work is served on it`);
    this.parameters.logger?.info({ event: "session.phase", sessionId, phase, why }, `session is ${phase}; no more work is served on it`);
    this.parameters.metrics?.sessionEnded(sessionId, phase === "settled");
  }

  get port(): number {
    if (!this.#server) throw new BaseError("The provider node is not listening.");
    return this.#server.port;
  }

  async stop(): Promise<void> {
    await this.#follower?.stop();
    await this.#server?.close();
    await Promise.all([...this.#sessions.values()].map((b) => b.answers.catch(() => undefined)));
  }

  /** A refusal or failure: free text to `log`, and a `warn` line with `event` to `logger`. */
  #log(line: string, event = "node.error", fields: Record<string, unknown> = {}): void {
    this.parameters.log?.(line);
    this.parameters.logger?.warn({ event, ...fields }, line);
  }

  /** Known channel: only its payer may connect. Unknown: accepted provisionally, checked at session.open. */
  async #authorize(sessionId: Hex, payer: Address) {
    const record = this.parameters.store.getChannel(sessionId);
    // A contract-wallet payer connects through the key its grant names (decision 0035): that key may reconnect.
    const walletKey = record !== undefined && this.parameters.store.sessionKeyGrants(sessionId, payer).length > 0;
    if (record && record.ref.terms.payer.toLowerCase() !== payer.toLowerCase() && !walletKey) {
      return { ok: false as const, reason: `${payer} is not the payer of session ${sessionId}` };
    }
    return { ok: true as const };
  }

  #serve(connection: SecureConnection): void {
    let bound: Bound | undefined;
    let binding = false;
    const send = (message: NodeMessage) => connection.send(encodeMessage(message));
    // Issue 28 item 5: a connection that binds no channel in time is a stranger holding a slot.
    const bindTimeoutMs = this.parameters.bindTimeoutMs ?? DEFAULT_BIND_TIMEOUT_MS;
    const bindTimer = setTimeout(() => {
      if (bound || binding) return;
      this.#log(`closing connection ${connection.sessionId.slice(0, 10)}: no channel bound within ${bindTimeoutMs} ms`, "peer.dropped", { sessionId: connection.sessionId });
      void connection.close();
    }, bindTimeoutMs);
    bindTimer.unref();
    void connection.closed.then(() => {
      clearTimeout(bindTimer);
      // Several processes (decision 0036): a channel whose payer left leaves this process's memory once its
      // work is answered; its next bind, here or elsewhere, takes it over again from the store.
      const b = bound;
      if (!b || !this.parameters.ownership) return;
      void (async () => {
        // Work queued answers, answers may have been queued meanwhile: wait until both chains stand still.
        for (;;) {
          const work = b.work;
          const answers = b.answers;
          await Promise.allSettled([work, answers]);
          if (work === b.work && answers === b.answers) break;
        }
        if (this.#sessions.get(b.record.sessionId) === b) this.release(b.record.sessionId);
      })();
    });
    connection.on("error", (error) => this.#log(`connection ${connection.sessionId.slice(0, 10)} closed: ${error.name}: ${error.shortMessage}`));
    connection.on("message", (bytes) => {
      let message: NodeMessage;
      try {
        message = decodeMessage(bytes);
      } catch (error) {
        // A peer that sends garbage is cut off; the node carries on.
        this.#log(`dropping a peer that sent an invalid message: ${(error as Error).message.split("\n")[0]}`, "peer.dropped", { sessionId: connection.sessionId });
        void connection.close();
        return;
      }
      if (!bound) {
        if (!isPacket(message) && message.type === "terms.request") {
          // Before any channel exists: the price list this provider serves, signed (issue 12).
          const listed = this.parameters.endpoints?.().catch((error: unknown) => {
            this.#log(`could not list the fleet's endpoints for the terms offer: ${(error as Error).message.split("\n")[0]}`);
            return undefined;
          });
          void Promise.resolve(listed)
            .then((endpoints) => signTermsOffer(this.parameters.account, this.parameters.domain, this.parameters.pricing, endpoints))
            .then((offer) => send({ type: "terms.offer", offer }))
            .catch((error: unknown) => this.#log(`could not send the terms offer: ${(error as Error).message.split("\n")[0]}`));
          return;
        }
        if (isPacket(message) || message.type !== "session.open") {
          void connection.close();
          return;
        }
        binding = true;
        void this.#bind(connection, message)
          .then(
            (b) => {
              bound = b;
              this.parameters.logger?.info(
                { event: "session.accepted", sessionId: b.record.sessionId, payer: b.record.ref.terms.payer, deposit: b.record.deposit.toString(), phase: b.phase, lastSeq: (b.session.latestTicket?.ticket.seq ?? 0n).toString() },
                b.phase === "open" ? "session accepted" : `session bound while ${b.phase}: answered tickets are replayed, new ones refused`,
              );
              return send({ type: "session.ready", lastSeq: b.session.latestTicket?.ticket.seq ?? 0n, leafCount: BigInt(b.session.accumulator.size), deposit: b.record.deposit });
            },
            (error: unknown) => {
              this.#log(`refused session ${connection.sessionId}: ${(error as Error).message.split("\n")[0]}`, "session.refused", { sessionId: connection.sessionId, error: (error as Error).name });
              void connection.close();
            },
          )
          // The payer may be gone before it hears session.ready; that is its loss, never the node's.
          .catch((error: unknown) => this.#log(`could not confirm session ${connection.sessionId.slice(0, 10)}: ${(error as Error).message.split("\n")[0]}`));
        return;
      }
      const b = bound;
      if (isPacket(message) && message.packet_type === "PKT_ACTION_INVOKE") {
        b.work = this.#after(b.work, () => this.#invoke(b, message, send, () => void connection.close()));
      } else if (isPacket(message) && message.packet_type === "PKT_RECEIPT_COMMIT") {
        b.work = this.#after(b.work, () => this.#commit(b, message, send));
      } else if (!isPacket(message) && message.type === "stream.tranche") {
        b.work = this.#after(b.work, () => this.#tranche(b, message, send));
      } else if (!isPacket(message) && message.type === "stream.sample") {
        // Behind the work, so the tranche it samples is answered (and durable) first.
        b.work = this.#after(b.work, () => this.#sample(b, message, send));
      } else if (!isPacket(message) && message.type === "steps.request") {
        // Queued behind the work and the answers already under way, so every step answered before it is
        // durable, and so in the store, when it is read (decision 0009, issue 15).
        b.work = this.#after(b.work, () => {
          b.answers = this.#after(b.answers, () => send({ type: "steps", steps: this.#answeredSteps(b, message.fromSeq, message.limit) }));
        });
      } else if (!isPacket(message) && message.type === "result.request") {
        // Behind the work under way, like steps.request: an answered step's output is durable when it is read.
        b.work = this.#after(b.work, () => {
          const [kept] = this.parameters.store.results(b.record.sessionId, { fromSeq: message.seq, limit: 1 });
          const output = kept && kept.seq === message.seq ? kept.output : null;
          b.answers = this.#after(b.answers, () => send({ type: "result", seq: message.seq, output }));
        });
      } else if (!isPacket(message) && message.type === "close.propose") {
        b.work = this.#after(b.work, async () => {
          try {
            const signature = await this.#countersign(b, message.summary, message.signature);
            this.parameters.logger?.info(
              { event: "close.countersigned", sessionId: b.record.sessionId, finalSeq: message.summary.finalSeq.toString(), finalAmount: message.summary.finalAmount.toString() },
              "cooperative close co-signed",
            );
            await b.answers;
            await send({ type: "close.countersign", signature });
          } catch (error) {
            this.#log(`refused to co-sign a close: ${(error as Error).message.split("\n")[0]}`, "close.refused", { sessionId: b.record.sessionId, error: (error as Error).name });
            await send({ type: "reject", seq: message.summary.finalSeq, error: (error as Error).name, message: (error as BaseError).shortMessage ?? String(error) });
          }
        });
      } else {
        void connection.close();
      }
    });
  }

  /**
   * One paid request that arrived without a sealed connection: an x402 payment over MCP (decision 0034). The channel
   * is bound as a connection binds it (the provider, the terms hash of this node's price list, the on-chain phase and
   * deposit; `ref` is needed only while this node's store does not hold the channel), and the ticket then takes
   * exactly the path of a `PKT_ACTION_INVOKE` on the socket: queued behind the session's other work, checked by the
   * same rules, run, stored (step and kept output) before the answer is released, and a ticket already answered is
   * answered again from the store. Resolves with the result packet or the refusal; throws a typed error when the
   * channel cannot be bound, or when a write failed (nothing was answered: the same payment may be sent again).
   */
  async invokeDetached(parameters: { request: JsonObject; ticket: SignedPaymentTicket; leafCount?: number; ref?: ChannelRef; sessionKey?: SignedSessionKeyGrant }): Promise<{ answer: ActionResultPacket | RejectMessage; payer: Address }> {
    const { request, ticket, leafCount } = parameters;
    const sessionId = ticket.ticket.sessionId;
    let b = this.#sessions.get(sessionId);
    if (!b || b.failed) {
      const ref = this.parameters.store.getChannel(sessionId)?.ref ?? parameters.ref;
      if (!ref) throw new BindingMismatchError(`This provider holds no channel ${sessionId}, and the payment does not carry its terms.`);
      let binding = this.#detachedBinds.get(sessionId);
      if (!binding) {
        binding = this.#bind({ sessionId, peer: undefined }, { ref, pricing: this.parameters.pricing }).finally(() => this.#detachedBinds.delete(sessionId));
        this.#detachedBinds.set(sessionId, binding);
      }
      b = await binding;
    }
    const bound = b;
    // A ticket signed by a session key comes with the payer's grant, checked and bound as at session.open.
    const grant = parameters.sessionKey;
    if (grant && bound.session.sessionKey?.signature !== grant.signature) await this.#bindSessionKey(bound, grant);
    const packet: ActionInvokePacket = {
      pkt_version: "1",
      packet_type: "PKT_ACTION_INVOKE",
      issued_at: new Date().toISOString(),
      session_id: sessionId,
      payload: { mcp: request, ticket, ...(leafCount === undefined ? {} : { leaf_count: String(leafCount) }) },
    };
    return new Promise((resolve, reject) => {
      let settled = false;
      const unanswered = () => {
        if (settled) return;
        settled = true;
        reject(new BaseError(`A write of session ${sessionId} failed, so ticket seq ${ticket.ticket.seq} was not answered; send the same payment again.`));
      };
      const send = async (message: NodeMessage) => {
        if (settled) return;
        settled = true;
        resolve({ answer: message as ActionResultPacket | RejectMessage, payer: bound.record.ref.terms.payer });
      };
      bound.work = this.#after(bound.work, async () => {
        try {
          await this.#invoke(bound, packet, send, unanswered);
        } finally {
          // The answer (or nothing, if a write failed) is queued on the answers chain by now.
          void bound.answers.then(unanswered);
        }
      });
    });
  }

  /** Verifies the channel the payer names (terms, pricing, on-chain deposit) and loads or creates its session. */
  /** Checks the payer's grant against the chain now (revocation, epoch) and binds it (decision 0025). */
  async #bindSessionKey(b: Bound, grant: SignedSessionKeyGrant): Promise<void> {
    const chain = await readSessionKeyChainState({
      publicClient: this.parameters.publicClient,
      escrow: this.parameters.domain.verifyingContract,
      sessionId: b.record.sessionId,
      payer: b.record.ref.terms.payer,
      key: grant.grant.key,
    });
    await b.session.bindSessionKey(grant, chain);
    // Durable before any ticket under it is accepted: without the grant a key-signed ticket cannot go on-chain.
    await this.parameters.store.putSessionKeyGrant(b.record.sessionId, grant);
  }

  /**
   * `connection`: the sealed connection's session and authenticated key. `peer` undefined: an x402 payment over MCP
   * (decision 0034), where no key is authenticated and every ticket is checked against the payer's signature (or its
   * bound grant's key) alone, as a ticket over the socket also is.
   */
  async #bind(connection: { sessionId: Hex; peer: Address | undefined }, message: Pick<SessionOpenMessage, "ref" | "pricing" | "sessionKey">): Promise<Bound> {
    const { domain, account, pricing, publicClient, store } = this.parameters;
    const { ref } = message;
    const sessionId = sessionIdOf(domain, ref);
    if (sessionId !== connection.sessionId) throw new BindingMismatchError(`The terms name session ${sessionId}, not ${connection.sessionId}.`);
    if (ref.terms.provider.toLowerCase() !== account.address.toLowerCase()) throw new BindingMismatchError(`The channel pays ${ref.terms.provider}, not this provider.`);
    // A payer that is a contract wallet cannot hold the connection's key: it connects through the session key its
    // grant names (decision 0035), and its own signatures (that grant, its summaries) are checked by its ERC-1271.
    const payerSignatures = await payerSignatureCheck({ publicClient, payer: ref.terms.payer });
    const peer = connection.peer?.toLowerCase();
    const peerIsPayer = peer === undefined || ref.terms.payer.toLowerCase() === peer;
    const peerIsWalletKey = payerSignatures.wallet && peer !== undefined && message.sessionKey?.grant.key.toLowerCase() === peer;
    if (!peerIsPayer && !peerIsWalletKey) {
      throw new BindingMismatchError(
        payerSignatures.wallet
          ? `${connection.peer} is not a key the channel's wallet payer ${ref.terms.payer} granted in this session.open.`
          : `${connection.peer} is not the channel's payer.`,
      );
    }
    if (termsHashOf(message.pricing) !== ref.terms.termsHash || ref.terms.termsHash !== termsHashOf(pricing)) {
      throw new BindingMismatchError("The channel's terms hash is not this provider's price list.");
    }
    const existing = this.#sessions.get(sessionId);
    if (existing && !this.parameters.ownership) {
      if (message.sessionKey) await this.#bindSessionKey(existing, message.sessionKey);
      return existing;
    }
    // A channel archived and pruned (issue 31) is answered in one sentence and never stored again.
    const pruned = store.prunedChannel(sessionId);
    if (pruned) throw new ChannelPrunedError(sessionId, pruned.prunedAt, pruned.archive);
    if (this.parameters.ownership) {
      // Decision 0036: the payer came here, so this process serves the channel now. Taking it over raises its
      // fencing epoch — every write still in flight under the old one, here or in another process, is refused —
      // and loads what the store holds; the session is rebuilt from that, never from older memory.
      if (existing) {
        existing.failed = true;
        this.#sessions.delete(sessionId);
      }
      await this.parameters.ownership.take(sessionId);
    }

    const escrow = domain.verifyingContract;
    const [deposit, onChain] = await Promise.all([
      publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "depositOf", args: [sessionId] }),
      publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [sessionId] }),
    ]);
    const onChainPhase = CHANNEL_PHASES[onChain] ?? "None";
    let record = store.getChannel(sessionId);
    if (!record) {
      if (onChainPhase !== "Open" || deposit === 0n) throw new BindingMismatchError(`Session ${sessionId} is not open on-chain (${onChainPhase}).`);
      record = { sessionId, role: "provider", ref, pricing, escrow: domain.verifyingContract, chainId: domain.chainId, deposit, status: "open" };
      await store.putChannel(record);
    } else if (deposit > record.deposit) {
      await store.updateChannel(sessionId, { deposit });
      record = { ...record, deposit };
    }
    const session = await ProviderSession.resume(
      {
        account,
        domain,
        ref,
        sessionId,
        pricing,
        deposit: record.deposit,
        modelSnapshotId: this.parameters.modelSnapshotId,
        ...(payerSignatures.wallet ? { payerSignatures: payerSignatures.check } : {}),
        // A ticket or commit naming an older prefix than the session keeps in memory (issue 28 item 6).
        olderPeaks: (leafCount) => store.accumulatorState(sessionId, { leafCount })?.peaks,
        handler: async (input, request) => {
          if (request instanceof TrancheCall) return request.run();
          // The node passes the request it parsed from the packet (`input` is its canonical bytes).
          const outcome = await this.#run((request as JsonObject | undefined) ?? (JSON.parse(new TextDecoder().decode(input)) as JsonObject));
          // The receipt binds the bytes the payer receives: the result, or `{ error }` for a failed call.
          if ("error" in outcome) {
            const value = { error: outcome.error };
            return { output: canonBytes(value), value, units: 0n, charged: false };
          }
          return { output: outcome.bytes, value: outcome.result, units: outcome.units };
        },
      },
      store,
    );
    // A known channel still binds when it is no longer open, so that the payer can hear its answered
    // tickets again (they were paid) and a typed refusal for anything new.
    const bound: Bound = { record, session, answers: Promise.resolve(), work: Promise.resolve(), phase: "open" };
    if (record.status === "settled" || onChainPhase === "None" || onChainPhase === "Settled") this.#advance(sessionId, bound, "settled", "it is settled");
    else if (onChainPhase !== "Open") this.#advance(sessionId, bound, "closing", `it is ${onChainPhase} on-chain`);
    else if (store.getCooperativeClose(sessionId) || record.status === "closing") this.#advance(sessionId, bound, "closed", "the store holds its close");
    const learnt = this.#phases.get(sessionId);
    if (learnt) this.#advance(sessionId, bound, learnt, "an escrow event said so");
    if (message.sessionKey) await this.#bindSessionKey(bound, message.sessionKey);
    this.#sessions.set(sessionId, bound);
    if (bound.phase === "open") {
      this.parameters.metrics?.sessionOpen(sessionId);
      const newest = session.latestTicket;
      if (newest) this.parameters.metrics?.ticketAccepted(sessionId, newest.ticket.cumulativeAmount);
    }
    return bound;
  }

  /**
   * Co-signs the payer's cooperative close, and with it ends the session: the phase changes before this
   * returns (and before anything queued after it runs), and the close is durable in the store before the
   * co-signature can leave. The same close proposed again (a payer that lost the answer) gets the same
   * co-signature; anything else on a session that is no longer open is refused.
   */
  async #countersign(b: Bound, summary: SettlementSummary, payerSignature: Hex): Promise<Hex> {
    const { store } = this.parameters;
    const sessionId = b.record.sessionId;
    const stored = store.getCooperativeClose(sessionId);
    if (stored && stored.payerSignature === payerSignature) return stored.providerSignature;
    if (b.phase !== "open") throw new ChannelNotOpenError(`Session ${sessionId} is ${b.phase}; it cannot be closed again.`);
    const providerSignature = await b.session.countersign(summary, payerSignature);
    this.#advance(sessionId, b, "closed", "the provider co-signed its cooperative close");
    await store.putCooperativeClose(sessionId, { summary, payerSignature, providerSignature });
    await store.updateChannel(sessionId, { status: "closing" });
    return providerSignature;
  }

  async #invoke(b: Bound, packet: ActionInvokePacket, send: (m: NodeMessage) => Promise<void>, drop: () => void): Promise<void> {
    const { store } = this.parameters;
    const signed = packet.payload.ticket;
    const seq = signed.ticket.seq;
    const reply = (result: JsonObject, receipt: ActionResultPacket["payload"]["receipt"]): ActionResultPacket => ({
      pkt_version: "1",
      packet_type: "PKT_ACTION_RESULT",
      issued_at: new Date().toISOString(),
      session_id: packet.session_id,
      ...(packet.lease_id ? { lease_id: packet.lease_id } : {}),
      action_result_id: `res_${seq}`,
      payload: { mcp: { jsonrpc: "2.0", id: packet.payload.mcp.id ?? null, ...result }, receipt },
    });
    const reject = (error: unknown) => {
      const e = error as BaseError;
      this.parameters.metrics?.ticketRefused(e.name ?? "Error");
      this.parameters.logger?.warn({ event: "ticket.refused", sessionId: b.record.sessionId, seq: seq.toString(), error: e.name ?? "Error" }, e.shortMessage ?? e.message);
      b.answers = this.#after(b.answers, () => send({ type: "reject", seq, error: e.name ?? "Error", message: e.shortMessage ?? e.message }));
    };

    // Already answered (the payer re-sends after a reconnect): answer again from the store.
    const latest = b.session.latestTicket;
    if (latest && seq <= latest.ticket.seq) {
      const [step] = store.steps(b.record.sessionId, { fromSeq: seq, limit: 1 });
      if (step && step.seq === seq && step.receipt && step.ticket.signature === signed.signature) {
        // The output itself when it was kept (decision 0033), else the receipt alone.
        const [kept] = this.parameters.keepResults ? store.results(b.record.sessionId, { fromSeq: seq, limit: 1 }) : [];
        const output = kept && kept.seq === seq ? (JSON.parse(kept.output) as JsonObject) : undefined;
        const charged = step.receipt.receipt.metering.amount > 0n || (output !== undefined && !("error" in output && Object.keys(output).length === 1));
        const replay = output
          ? reply(charged ? { result: output } : output, step.receipt)
          : reply({ error: { code: REPLAYED_RESULT_CODE, message: "output not retained; receipt replayed from the store" } }, step.receipt);
        b.answers = this.#after(b.answers, () => send(replay));
        return;
      }
    }

    if (b.phase !== "open") {
      return reject(new ChannelNotOpenError(`Session ${b.record.sessionId} is ${b.phase}; ticket seq ${seq} is refused and no work is done.`));
    }
    if (b.failed) return drop(); // the payer resumes on a fresh bind, from what the store holds
    if (this.parameters.pricing.version === "4") {
      return reject(new StreamRefusedError(`Session ${b.record.sessionId} is a milestone stream (terms version 4): ticket seq ${seq} must come with a tranche request (stream.tranche), not an invocation.`));
    }

    let input: Uint8Array;
    try {
      input = canonBytes(packet.payload.mcp);
    } catch (error) {
      return reject(error); // an mcp canonical JSON cannot hold (NaN, ±Infinity, a lone surrogate): typed refusal
    }
    const leafCount = packet.payload.leaf_count === undefined ? undefined : Number(packet.payload.leaf_count);
    // What a session key's capabilities are checked against (decision 0025).
    const method = typeof packet.payload.mcp.method === "string" ? packet.payload.mcp.method : undefined;
    let result;
    const started = performance.now();
    try {
      result = await b.session.invoke(signed, input, leafCount, method, packet.payload.mcp);
    } catch (error) {
      if (!(error instanceof DepositExceededError) || !(await this.#refreshDeposit(b))) return reject(error);
      if (b.phase !== "open") {
        return reject(new ChannelNotOpenError(`Session ${b.record.sessionId} is ${b.phase}; ticket seq ${seq} is refused and no work is done.`));
      }
      try {
        result = await b.session.invoke(signed, input, leafCount, method, packet.payload.mcp);
      } catch (retryError) {
        return reject(retryError);
      }
    }
    const metrics = this.parameters.metrics;
    metrics?.verifySeconds.observe((performance.now() - started) / 1000);
    const stored = performance.now();
    // The output first (decision 0033): writes are durable in order, so the step's durability implies it.
    const kept = this.parameters.keepResults
      ? store.putResult(b.record.sessionId, { seq, request: new TextDecoder().decode(input), output: new TextDecoder().decode(result.output) })
      : undefined;
    const stepWrite = store.putStep(b.record.sessionId, result.step, result.state);
    const durable = kept ? Promise.all([kept, stepWrite]).then(() => undefined) : stepWrite;
    if (metrics) {
      void durable.then(
        () => {
          metrics.storeSeconds.observe((performance.now() - stored) / 1000);
          metrics.ticketAccepted(b.record.sessionId, signed.ticket.cumulativeAmount);
        },
        () => undefined, // the answer chain reports the failure
      );
    }
    // A failed call's output is `{ error }` (charged nothing, decision 0022); a result is the result itself.
    const output = (result.value ?? JSON.parse(new TextDecoder().decode(result.output))) as JsonObject;
    const answer = reply(result.charged ? { result: output } : output, result.step.receipt);
    // Only a failed call carries a signed fault statement; a successful one signs nothing more.
    const fault = result.charged ? undefined : this.#faultStatement(result.step.receipt.receipt, output.error as McpError | undefined);
    fault?.catch(() => undefined); // a signing failure surfaces in the answer chain below, not as an unhandled rejection
    b.answers = this.#after(b.answers, async () => {
      if (b.failed) return; // an earlier step of the session was not stored: nothing after it is answered
      try {
        await durable; // never acknowledge what a crash could lose
      } catch (error) {
        this.#fail(b, error, drop);
        throw error;
      }
      if (fault) answer.payload.fault = await fault;
      await send(answer);
    });
  }

  /**
   * A write of the session failed: answer nothing more from this state, forget the session (a fenced one is
   * another process's now) and drop the connection, so that the payer resumes from what the store holds —
   * here after a reload, or on the process that took the channel over.
   */
  #fail(b: Bound, error: unknown, drop: () => void): void {
    if (b.failed) return;
    b.failed = true;
    const sessionId = b.record.sessionId;
    if (this.#sessions.get(sessionId) === b) this.#sessions.delete(sessionId);
    if ((error as Error).name === "FencedError") this.parameters.ownership?.release(sessionId);
    this.#log(`session ${sessionId.slice(0, 10)}: a write failed (${(error as Error).name}); dropping the connection, the payer resumes from the store`, "session.write_failed", { sessionId, error: (error as Error).name });
    drop();
  }

  /**
   * Tranche k of a milestone stream (issue 32, decision 0037; `StreamService.tranche` decides): the answer leaves in
   * order, once the step, the request and proof, and the receipt commit are durable; a refusal is a `reject`.
   */
  async #tranche(b: Bound, message: StreamTrancheMessage, send: (m: NodeMessage) => Promise<void>): Promise<void> {
    const sessionId = b.record.sessionId;
    const seq = message.ticket.ticket.seq;
    let answered;
    try {
      answered = await this.#streams.tranche(b.session, b.phase, message);
    } catch (error) {
      const e = error as BaseError;
      this.parameters.metrics?.ticketRefused(e.name ?? "Error");
      this.parameters.logger?.warn({ event: "tranche.refused", sessionId, seq: seq.toString(), error: e.name ?? "Error" }, e.shortMessage ?? e.message);
      b.answers = this.#after(b.answers, () => send({ type: "reject", seq, error: e.name ?? "Error", message: e.shortMessage ?? e.message }));
      return;
    }
    const { answer, durable, fresh } = answered;
    if (fresh) {
      void durable.then(() => this.parameters.metrics?.ticketAccepted(sessionId, message.ticket.ticket.cumulativeAmount), () => undefined);
      this.parameters.logger?.info({ event: "tranche.answered", sessionId, tranche: seq.toString(), proofHash: progressProofHash(answer.proof.proof) }, "tranche answered with its progress proof");
    }
    b.answers = this.#after(b.answers, async () => {
      await durable; // never acknowledge what a crash could lose
      await send(answer);
    });
  }

  /** A sample of tranche k (`StreamService.sample` decides): the repository, or a `reject` the payer pauses on. */
  async #sample(b: Bound, message: StreamSampleMessage, send: (m: NodeMessage) => Promise<void>): Promise<void> {
    const sessionId = b.record.sessionId;
    const { tranche } = message;
    try {
      const answer = await this.#streams.sample(sessionId, message);
      b.answers = this.#after(b.answers, () => send(answer));
    } catch (error) {
      const e = error as BaseError;
      this.#log(`sample of tranche ${tranche} refused: ${e.shortMessage ?? e.message}`, "sample.refused", { sessionId, tranche: tranche.toString() });
      b.answers = this.#after(b.answers, () => send({ type: "reject", seq: tranche, error: e.name ?? "Error", message: e.shortMessage ?? e.message }));
    }
  }

  /**
   * The provider's signed statement that the call receipted by `receipt` failed (decision 0015, the session
   * no-fault path): the step, its request hash, the fault code the error declares (`faultCodeOf`) and the
   * compute spent — what the receipt charged, which for a failed call is 0 (decision 0022).
   */
  #faultStatement(receipt: SessionReceipt, error: McpError | undefined): Promise<SignedFaultStatement> {
    return signFaultStatement({
      account: this.parameters.account,
      statement: {
        sessionId: receipt.sessionId,
        seq: receipt.seq,
        offloadPacketHash: receipt.offloadPacketHash,
        code: faultCodeOf(error),
        computeSpent: receipt.metering.amount,
      },
    });
  }

  /**
   * Runs the handler; one that throws (or answers with no object) is a failed call, never a node crash. A
   * result comes back with its canonical bytes (what the receipt's output hash binds), computed once.
   */
  async #run(request: JsonObject): Promise<{ error: McpError } | { result: JsonObject; units: bigint; bytes: Uint8Array }> {
    try {
      const outcome = await this.parameters.handler(request);
      if ("error" in outcome) return outcome;
      if (typeof outcome.result !== "object" || outcome.result === null || Array.isArray(outcome.result)) {
        return { error: { code: HANDLER_FAILED_CODE, message: "The worker's result is not an object." } };
      }
      // Throws on what canonical JSON cannot hold (1e400, a lone surrogate): a failed call.
      return { result: outcome.result, units: outcome.units, bytes: canonBytes(outcome.result) };
    } catch (error) {
      const e = error as BaseError;
      this.#log(`handler failed: ${e.name ?? "Error"}: ${(e.shortMessage ?? e.message ?? String(error)).split("\n")[0]}`);
      return { error: { code: HANDLER_FAILED_CODE, message: "The provider's handler failed; the call is not charged." } };
    }
  }

  /**
   * The answered steps of the session from `fromSeq` on, at most `limit` (at most `STEPS_PAGE`): what a payer
   * that lost tickets it had sent but not yet made durable needs back. It signed every ticket and already
   * holds a receipt for each earlier one, so nothing here is new to the only peer that may ask (the
   * session's authenticated payer).
   */
  #answeredSteps(b: Bound, fromSeq: bigint, limit: number): StepsMessage["steps"] {
    const steps = this.parameters.store.steps(b.record.sessionId, { fromSeq, limit: Math.min(limit, STEPS_PAGE) });
    return steps.flatMap((step) => (step.receipt ? [{ ticket: step.ticket, receipt: step.receipt }] : []));
  }

  /**
   * Runs `step` after `chain`. A step that fails (an answer to a connection that closed meanwhile, a
   * handler that threw) is logged and never breaks the chain, so later messages of the session — on this
   * connection or the payer's next one — are still served.
   */
  #after(chain: Promise<void>, step: () => Promise<void> | void): Promise<void> {
    return chain.then(step).catch((error: unknown) => {
      const e = error as BaseError;
      this.#log(`session step failed: ${e.name ?? "Error"}: ${(e.shortMessage ?? e.message ?? String(error)).split("\n")[0]}`, "session.step_failed");
    });
  }

  /**
   * Re-reads the on-chain deposit (a top-up may have landed) and phase; true if the deposit grew. A
   * channel that left `Open` meanwhile reads as deposit 0 and has its phase advanced.
   */
  async #refreshDeposit(b: Bound): Promise<boolean> {
    const { publicClient, domain, store } = this.parameters;
    const [deposit, onChain] = await Promise.all([
      publicClient.readContract({ address: domain.verifyingContract, abi: gasEscrowAbi, functionName: "depositOf", args: [b.record.sessionId] }),
      publicClient.readContract({ address: domain.verifyingContract, abi: gasEscrowAbi, functionName: "phaseOf", args: [b.record.sessionId] }),
    ]);
    const onChainPhase = CHANNEL_PHASES[onChain] ?? "None";
    if (onChainPhase === "None" || onChainPhase === "Settled") this.#advance(b.record.sessionId, b, "settled", "it is settled on-chain");
    else if (onChainPhase !== "Open") this.#advance(b.record.sessionId, b, "closing", `it is ${onChainPhase} on-chain`);
    if (deposit <= b.record.deposit) return false;
    b.record = { ...b.record, deposit };
    b.session.deposit = deposit;
    await store.updateChannel(b.record.sessionId, { deposit });
    return true;
  }

  /** Checks the payer's signed root against ours at that leaf count, stores it, and answers with ours. */
  async #commit(b: Bound, packet: ReceiptCommitPacket, send: (m: NodeMessage) => Promise<void>): Promise<void> {
    const { commit } = packet.payload;
    const seq = commit.commit.leafCount;
    try {
      await verifyReceiptCommit(this.parameters.domain, commit, b.record.ref.terms.payer, b.session.parameters.payerSignatures);
      if (commit.commit.leafCount > BigInt(b.session.accumulator.size)) {
        throw new BindingMismatchError(`The payer commits ${commit.commit.leafCount} receipts; the provider issued ${b.session.accumulator.size}.`);
      }
      const ours = b.session.accumulator.prefixRoot(Number(commit.commit.leafCount));
      if (ours !== commit.commit.root) throw new BindingMismatchError(`The payer's root over ${seq} receipts is ${commit.commit.root}; the provider's is ${ours}.`);
      const mine = await signReceiptCommit(this.parameters.account, this.parameters.domain, commit.commit);
      this.parameters.logger?.debug({ event: "commit.agreed", sessionId: b.record.sessionId, leafCount: commit.commit.leafCount.toString(), root: commit.commit.root }, "receipt root agreed");
      await Promise.all([
        this.parameters.store.putCommit(b.record.sessionId, "payer", commit),
        this.parameters.store.putCommit(b.record.sessionId, "provider", mine),
      ]);
      const answer: ReceiptCommitPacket = { pkt_version: "1", packet_type: "PKT_RECEIPT_COMMIT", issued_at: new Date().toISOString(), session_id: packet.session_id, payload: { commit: mine } };
      b.answers = this.#after(b.answers, () => send(answer));
    } catch (error) {
      const e = error as BaseError;
      b.answers = this.#after(b.answers, () => send({ type: "reject", seq, error: e.name, message: e.shortMessage ?? e.message }));
    }
  }
}
