/**
 * The provider node: listens on 127.0.0.1 for payers, binds each sealed connection to a channel it can
 * verify on-chain, checks every ticket before doing the work, persists the ticket and its receipt before
 * answering (group commit), and answers in order. A restarted node resumes every session from its store;
 * a ticket it already answered is answered again from the store, byte for byte the same receipt.
 */
import type { Address, Hex } from "viem";

import { ChainFollower, type EscrowEvent } from "../chain/follower";
import { eventArg } from "../chain/logs";
import type { SignedSessionKeyGrant } from "../core/session-key";
import { BaseError, BindingMismatchError } from "../core/errors";
import type { ActionInvokePacket, ActionResultPacket } from "../core/packets";
import { hasDocumentBody, modelAllowed } from "../core/terms";
import { signTermsOffer } from "../core/terms-offer";
import { isLimitRefusal, listenSecure, type SecureConnection, type SecureServer } from "../transport";
import type { JsonObject } from "../core/validate";
import type { SignedPaymentTicket } from "../core/ticket";
import type { ChannelRef } from "../core/terms";
import { decodeMessage, encodeMessage, isPacket, type NodeMessage, type RejectMessage } from "./protocol";
import { StreamService } from "./stream-service";
import { assertPaymentMayTakeOver, bind, bindSessionKey } from "./provider-bind";
import { invoke } from "./provider-invoke";
import { answeredSteps, commit, countersign, sample, tranche } from "./provider-messages";
import { DEFAULT_BIND_TIMEOUT_MS, DEFAULT_REFUSAL_SUMMARY_MS, type Bound, type ProviderContext, type ProviderNodeParameters, type SessionPhase } from "./provider-node-types";
import { RefusalLog } from "./refusal-log";

// The types and constants moved to provider-node-types.ts (issue 33 item 2); this module still exports them.
export {
  DEFAULT_BIND_TIMEOUT_MS,
  HANDLER_FAILED_CODE,
  REPLAYED_RESULT_CODE,
  type ChannelOwnership,
  type McpError,
  type McpHandler,
  type McpOutcome,
  type ProviderNodeParameters,
  type SessionPhase,
} from "./provider-node-types";

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

  /** What the message handlers (provider-bind, provider-invoke, provider-messages) may touch of this node. */
  readonly #context: ProviderContext;

  private constructor(readonly parameters: ProviderNodeParameters) {
    this.#refusalSummaryMs = parameters.refusalSummaryMs ?? DEFAULT_REFUSAL_SUMMARY_MS;
    this.#streams = new StreamService(parameters);
    this.#context = {
      parameters,
      sessions: this.#sessions,
      phases: this.#phases,
      streams: this.#streams,
      log: (line, event, fields) => this.#log(line, event, fields),
      after: (chain, step) => this.#after(chain, step),
      advance: (sessionId, b, phase, why) => this.#advance(sessionId, b, phase, why),
      fail: (b, error, drop) => this.#fail(b, error, drop),
    };
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
    node.#server.on("handshakeError", (error, remote) => {
      const line = `handshake refused from ${remote.address}: ${error.shortMessage}`;
      // A limit's refusal (no byte read): the source's first is logged, the rest summarised once a period.
      if (isLimitRefusal(error)) {
        const now = node.#refusals.note(remote.address ?? "unknown", line, error.shortMessage);
        if (now !== undefined) node.#log(now, "peer.refused", { remote: remote.address });
        return;
      }
      node.#log(line, "peer.refused", { remote: remote.address });
    });
    node.#refusalTimer = setInterval(() => node.#flushRefusals(), node.#refusalSummaryMs);
    node.#refusalTimer.unref();
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
    clearInterval(this.#refusalTimer);
    this.#flushRefusals();
    await this.#follower?.stop();
    await this.#server?.close();
    await Promise.all([...this.#sessions.values()].map((b) => b.answers.catch(() => undefined)));
  }

  readonly #refusals = new RefusalLog();
  readonly #refusalSummaryMs: number;
  #refusalTimer: NodeJS.Timeout | undefined;

  /** The period's summary of refused connections: one line per source refused more than once. */
  #flushRefusals(): void {
    for (const { address, refused, line } of this.#refusals.flush(Math.round(this.#refusalSummaryMs / 1000))) this.#log(line, "peer.refused_summary", { remote: address, refused });
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
    const send = (message: NodeMessage, mcpText?: string) => connection.send(encodeMessage(message, mcpText));
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
        void bind(this.#context, connection, message)
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
        b.work = this.#after(b.work, () => invoke(this.#context, b, message, send, () => void connection.close()));
      } else if (isPacket(message) && message.packet_type === "PKT_RECEIPT_COMMIT") {
        b.work = this.#after(b.work, () => commit(this.#context, b, message, send));
      } else if (!isPacket(message) && message.type === "stream.tranche") {
        b.work = this.#after(b.work, () => tranche(this.#context, b, message, send));
      } else if (!isPacket(message) && message.type === "stream.sample") {
        // Behind the work, so the tranche it samples is answered (and durable) first.
        b.work = this.#after(b.work, () => sample(this.#context, b, message, send));
      } else if (!isPacket(message) && message.type === "steps.request") {
        // Queued behind the work and the answers already under way, so every step answered before it is
        // durable, and so in the store, when it is read (decision 0009, issue 15).
        b.work = this.#after(b.work, () => {
          b.answers = this.#after(b.answers, () => send({ type: "steps", steps: answeredSteps(this.#context, b, message.fromSeq, message.limit) }));
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
            const signature = await countersign(this.#context, b, message.summary, message.signature);
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
      // In a fleet the payment must prove it may move the channel here before it joins (or starts) a bind, so a
      // forged or old payment fails alone and never the bind a concurrent payment of the payer awaits.
      const payment = { ticket, sessionKey: parameters.sessionKey };
      if (this.parameters.ownership) await assertPaymentMayTakeOver(this.#context, sessionId, ref, payment);
      let binding = this.#detachedBinds.get(sessionId);
      if (!binding) {
        // In a fleet the payment itself must prove it may move the channel here (its payer's, not older than stored).
        binding = bind(this.#context, { sessionId, peer: undefined, payment }, { ref, pricing: this.parameters.pricing }).finally(() => this.#detachedBinds.delete(sessionId));
        this.#detachedBinds.set(sessionId, binding);
      }
      b = await binding;
    }
    const bound = b;
    // A ticket signed by a session key comes with the payer's grant, checked and bound as at session.open.
    const grant = parameters.sessionKey;
    if (grant && bound.session.sessionKey?.signature !== grant.signature) await bindSessionKey(this.#context, bound, grant);
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
          await invoke(this.#context, bound, packet, send, unanswered);
        } finally {
          // The answer (or nothing, if a write failed) is queued on the answers chain by now.
          void bound.answers.then(unanswered);
        }
      });
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
}
