/**
 * The responder: {@link listenSecure} binds a provider's endpoint, runs the handshake for each accepted socket under
 * the limits a listener enforces on strangers (issue 28 item 5) and emits each open {@link SecureConnection}.
 */

import { EventEmitter } from "node:events";
import * as net from "node:net";
import type { Address, Hex, LocalAccount } from "viem";

import { InvalidFieldError } from "../core/errors";
import { asTransportError, HandshakeIo, openKeyConfirmation, runHandshake } from "./handshake-io";
import {
  DEFAULT_HOST,
  DEFAULT_HANDSHAKES_PER_SECOND_PER_SOURCE,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_MAX_CONNECTIONS_PER_SOURCE,
  DEFAULT_MAX_PENDING_HANDSHAKES,
  DEFAULT_MAX_PENDING_PER_SOURCE,
  DEFAULT_SERVER_HANDSHAKE_TIMEOUT_MS,
  DEFAULT_STRANGER_HANDSHAKES_PER_SECOND,
  emitSafely,
  SecureConnection,
  validateOptions,
  type ConnectionOptions,
  type RemoteEndpoint,
} from "./secure-connection";
import {
  HandshakeError,
  type TransportError,
} from "./errors";
import { encodeFrame, FrameDecoder } from "./frames";
import {
  createTry,
  decodeInit,
  encodeHandshakeMessage,
  encodeKeyConfirmation,
  MAX_HANDSHAKE_MESSAGE_BYTES,
  verifyInit,
} from "./handshake";
import {
  RecordOpener,
  RecordSealer,
  RecordType,
  SEALED_FRAME_OVERHEAD,
} from "./sealing";


export type AuthorizeResult = { ok: true } | { ok: false; reason: string };
/**
 * The responder's decision on an initiator whose signature has been verified: may `initiator` open
 * `sessionId`? (A provider node checks that it is that channel's payer.)
 */
export type AuthorizeInitiator = (sessionId: Hex, initiator: Address) => Promise<AuthorizeResult>;

export type ListenSecureParameters = ConnectionOptions & {
  /** Interface to listen on; default 127.0.0.1. Only this interface is bound. */
  host?: string;
  /** 0 (the default) picks an ephemeral port; read it from `server.port`. */
  port?: number;
  /** The provider's key: signs ChannelOpenTry. */
  account: LocalAccount;
  authorize: AuthorizeInitiator;
  /** Handshakes in progress at once (default {@link DEFAULT_MAX_PENDING_HANDSHAKES}). */
  maxPendingHandshakes?: number;
  /** The responder's handshake deadline (default {@link DEFAULT_SERVER_HANDSHAKE_TIMEOUT_MS}); `timeoutMs` still bounds a close. */
  handshakeTimeoutMs?: number;
  /** Handshakes in progress per source address (default {@link DEFAULT_MAX_PENDING_PER_SOURCE}). */
  maxPendingPerSource?: number;
  /** Open connections per source address (default {@link DEFAULT_MAX_CONNECTIONS_PER_SOURCE}). */
  maxConnectionsPerSource?: number;
  /** Open connections in all (default {@link DEFAULT_MAX_CONNECTIONS}). */
  maxConnections?: number;
  /** New connections per second per source address (default {@link DEFAULT_HANDSHAKES_PER_SECOND_PER_SOURCE}). */
  handshakesPerSecondPerSource?: number;
  /** Inactivity after which an open connection is closed (default {@link DEFAULT_IDLE_TIMEOUT_MS}; 0: never). */
  idleTimeoutMs?: number;
  /**
   * Handshakes of strangers whose crypto runs per second, in all (default
   * {@link DEFAULT_STRANGER_HANDSHAKES_PER_SECOND}), taken in turn from each waiting source.
   */
  strangerHandshakesPerSecond?: number;
  /**
   * Whether the (not yet verified) initiator of `sessionId` is an existing channel's payer: its handshake skips
   * the strangers' turns. A false claim costs one signature check and then fails.
   */
  prioritize?: (sessionId: Hex, initiator: Address) => boolean;
};

/** How the `handshakeError` of a connection the limits refused (before any byte of it was read) begins. */
const REFUSED = "Connection refused:";

/** Whether a `handshakeError` is a limit's refusal rather than a handshake that was admitted and failed. */
export function isLimitRefusal(error: TransportError): boolean {
  return error instanceof HandshakeError && error.shortMessage.startsWith(REFUSED);
}

/** Limits a listener enforces on strangers (issue 28 item 5). */
type ServerLimits = {
  handshakeTimeoutMs: number;
  maxPendingHandshakes: number;
  maxPendingPerSource: number;
  maxConnectionsPerSource: number;
  maxConnections: number;
  handshakesPerSecondPerSource: number;
  idleTimeoutMs: number;
  strangerHandshakesPerSecond: number;
};

function validateLimits(parameters: ListenSecureParameters): ServerLimits {
  const limits: ServerLimits = {
    handshakeTimeoutMs: parameters.handshakeTimeoutMs ?? DEFAULT_SERVER_HANDSHAKE_TIMEOUT_MS,
    maxPendingHandshakes: parameters.maxPendingHandshakes ?? DEFAULT_MAX_PENDING_HANDSHAKES,
    maxPendingPerSource: parameters.maxPendingPerSource ?? DEFAULT_MAX_PENDING_PER_SOURCE,
    maxConnectionsPerSource: parameters.maxConnectionsPerSource ?? DEFAULT_MAX_CONNECTIONS_PER_SOURCE,
    maxConnections: parameters.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    handshakesPerSecondPerSource: parameters.handshakesPerSecondPerSource ?? DEFAULT_HANDSHAKES_PER_SECOND_PER_SOURCE,
    idleTimeoutMs: parameters.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    strangerHandshakesPerSecond: parameters.strangerHandshakesPerSecond ?? DEFAULT_STRANGER_HANDSHAKES_PER_SECOND,
  };
  for (const [name, value] of Object.entries(limits)) {
    const min = name === "idleTimeoutMs" ? 0 : 1;
    if (!Number.isSafeInteger(value) || value < min) throw new InvalidFieldError(name, min === 0 ? "a non-negative integer" : "a positive integer", value);
  }
  return limits;
}

/** Per source address: handshakes in progress, open connections, and its token bucket of new connections. */
type SourceState = { pending: Set<HandshakeIo>; open: number; tokens: number; refilledAt: number };

// --- Responder -------------------------------------------------------------------------------------------

export interface SecureServer {
  /** A handshake completed; attach listeners to `connection` (delivery starts with the first `message` listener). */
  on(event: "connection", listener: (connection: SecureConnection) => void): this;
  /** A connection was dropped before it opened (bad or unauthorized peer, garbage, timeout). The server keeps accepting. */
  on(event: "handshakeError", listener: (error: TransportError, remote: RemoteEndpoint) => void): this;
  /** The listening socket failed (emitted only if listened for). */
  on(event: "error", listener: (error: Error) => void): this;
  once(event: "connection", listener: (connection: SecureConnection) => void): this;
  once(event: "handshakeError", listener: (error: TransportError, remote: RemoteEndpoint) => void): this;
  once(event: "error", listener: (error: Error) => void): this;
}

/** What {@link listenSecure} returns: a listening provider endpoint. */
export class SecureServer extends EventEmitter {
  readonly server: net.Server;
  readonly host: string;
  /** Resolved port (the ephemeral one when listening on port 0). */
  port = 0;

  private readonly account: LocalAccount;
  private readonly authorize: AuthorizeInitiator;
  private readonly options: ReturnType<typeof validateOptions>;
  private readonly limits: ServerLimits;
  private readonly pending = new Set<HandshakeIo>();
  private readonly sources = new Map<string, SourceState>();
  private readonly prioritize: ((sessionId: Hex, initiator: Address) => boolean) | undefined;
  /** Strangers waiting for a handshake turn, per source, in source order of first arrival (round robin). */
  private readonly turns = new Map<string, Array<{ io: HandshakeIo; go: () => void }>>();
  private turnTokens = 0;
  private turnsRefilledAt = performance.now();
  private turnTimer: NodeJS.Timeout | undefined;
  private readonly open = new Set<SecureConnection>();
  private closing: Promise<void> | undefined;

  /** @internal Use {@link listenSecure}. */
  constructor(parameters: ListenSecureParameters) {
    super();
    this.host = parameters.host ?? DEFAULT_HOST;
    this.account = parameters.account;
    this.authorize = parameters.authorize;
    this.options = validateOptions(parameters);
    this.limits = validateLimits(parameters);
    this.prioritize = parameters.prioritize;
    this.turnTokens = this.limits.strangerHandshakesPerSecond;
    this.server = net.createServer((socket) => void this.accept(socket));
    this.server.on("error", (error) => emitSafely(this, "error", error));
  }

  /** Connections that completed the handshake and are not yet closed. */
  get connections(): ReadonlySet<SecureConnection> {
    return this.open;
  }

  /** @internal */
  listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      this.server.once("error", onError);
      this.server.listen({ host: this.host, port }, () => {
        this.server.off("error", onError);
        this.port = (this.server.address() as net.AddressInfo).port;
        resolve();
      });
    });
  }

  /**
   * Stops accepting, aborts handshakes in progress, closes every open connection gracefully and resolves
   * when the listening socket is closed. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const serverClosed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      for (const io of this.pending) io.fail(new HandshakeError("The server is closing."));
      clearTimeout(this.turnTimer);
      this.turns.clear();
      await Promise.all([...this.open].map((connection) => connection.close()));
      await serverClosed;
    })();
    return this.closing;
  }

  /** Resolves when `address` may spend a stranger's handshake crypto: at most the configured rate, one source after another. */
  private handshakeTurn(address: string, io: HandshakeIo): Promise<void> {
    return new Promise<void>((go) => {
      let queue = this.turns.get(address);
      if (!queue) this.turns.set(address, (queue = []));
      queue.push({ io, go });
      this.pumpTurns();
    });
  }

  private readonly pumpTurns = (): void => {
    this.turnTimer = undefined;
    const rate = this.limits.strangerHandshakesPerSecond;
    const now = performance.now();
    this.turnTokens = Math.min(rate, this.turnTokens + ((now - this.turnsRefilledAt) / 1000) * rate);
    this.turnsRefilledAt = now;
    while (this.turnTokens >= 1 && this.turns.size > 0) {
      const [address, queue] = this.turns.entries().next().value as [string, Array<{ io: HandshakeIo; go: () => void }>];
      this.turns.delete(address);
      const job = queue.shift();
      if (queue.length > 0) this.turns.set(address, queue); // to the back of the round
      if (!job || job.io.failure) continue; // timed out or cut off while waiting: costs no turn
      this.turnTokens -= 1;
      job.go();
    }
    if (this.turns.size > 0 && !this.closing) {
      this.turnTimer = setTimeout(this.pumpTurns, Math.ceil(((1 - this.turnTokens) / rate) * 1000));
      this.turnTimer.unref();
    }
  };

  /** The state of `address`, created on first sight; dropped again once it holds nothing (see `release`). */
  private source(address: string): SourceState {
    let state = this.sources.get(address);
    if (!state) {
      state = { pending: new Set(), open: 0, tokens: this.limits.handshakesPerSecondPerSource, refilledAt: performance.now() };
      this.sources.set(address, state);
    }
    return state;
  }

  private release(address: string, state: SourceState): void {
    const full = state.tokens >= this.limits.handshakesPerSecondPerSource;
    if (state.pending.size === 0 && state.open === 0 && full) this.sources.delete(address);
  }

  /**
   * Why a newcomer from `state` is refused, or undefined to admit it (issue 28 item 5). Established
   * connections are never touched: every limit applies to newcomers. When every handshake slot is taken, the
   * newcomer takes the oldest slot of the source holding the most, provided that source holds more than the
   * newcomer's own — so a flood from some addresses cannot keep a payer at another address out.
   */
  private refusal(address: string, state: SourceState): string | undefined {
    const now = performance.now();
    const rate = this.limits.handshakesPerSecondPerSource;
    state.tokens = Math.min(rate, state.tokens + ((now - state.refilledAt) / 1000) * rate);
    state.refilledAt = now;
    if (state.tokens < 1) return `${address} starts more than ${rate} connections a second`;
    if (state.pending.size >= this.limits.maxPendingPerSource) return `${address} already has ${state.pending.size} handshakes in progress`;
    if (state.open >= this.limits.maxConnectionsPerSource) return `${address} already holds ${state.open} connections`;
    if (this.open.size + this.pending.size >= this.limits.maxConnections) return `the listener holds ${this.open.size} connections`;
    if (this.pending.size >= this.limits.maxPendingHandshakes) {
      let heaviest: SourceState | undefined;
      for (const other of this.sources.values()) if (!heaviest || other.pending.size > heaviest.pending.size) heaviest = other;
      if (!heaviest || heaviest.pending.size <= state.pending.size + 1) return `${this.pending.size} handshakes are already in progress`;
      const oldest = heaviest.pending.values().next().value as HandshakeIo;
      oldest.fail(new HandshakeError("The handshake was cut off: its source holds more handshake slots than any other."));
    }
    state.tokens -= 1;
    return undefined;
  }

  private async accept(socket: net.Socket): Promise<void> {
    const remote: RemoteEndpoint = { address: socket.remoteAddress, port: socket.remotePort };
    const address = socket.remoteAddress ?? "unknown";
    const state = this.source(address);
    const refused = this.closing ? "the server is closing" : this.refusal(address, state);
    if (refused !== undefined) {
      socket.destroy();
      this.release(address, state);
      emitSafely(this, "handshakeError", new HandshakeError(`${REFUSED} ${refused}.`), remote);
      return;
    }
    socket.setNoDelay(true);
    const decoder = new FrameDecoder({ maxFrameBytes: MAX_HANDSHAKE_MESSAGE_BYTES });
    const io = new HandshakeIo(socket, decoder, "waiting for ChannelOpenInit");
    this.pending.add(io);
    state.pending.add(io);
    try {
      const opened = await runHandshake(io, this.limits.handshakeTimeoutMs, () => this.respond(io, address));
      const { frames, eof } = io.detach();
      const connection = new SecureConnection({ ...opened, ...this.options, socket, decoder, frames, eof, role: "responder", idleTimeoutMs: this.limits.idleTimeoutMs });
      if (this.closing) {
        void connection.close();
        return;
      }
      this.open.add(connection);
      state.open += 1;
      void connection.closed.then(() => {
        this.open.delete(connection);
        state.open -= 1;
        this.release(address, state);
      });
      emitSafely(this, "connection", connection);
    } catch (error) {
      emitSafely(this, "handshakeError", asTransportError(error), remote);
    } finally {
      this.pending.delete(io);
      state.pending.delete(io);
      this.release(address, state);
    }
  }

  private async respond(io: HandshakeIo, address: string) {
    const initFrame = await io.read(
      () => new HandshakeError("The initiator closed the connection before sending ChannelOpenInit."),
    );
    const init = decodeInit(initFrame);
    // The signature check and the Try (a KEM encapsulation and a signature) are what a stranger costs: an
    // existing channel's payer goes first, everyone else takes a fair turn (issue 28 item 5).
    if (!this.prioritize?.(init.sessionId, init.initiator)) {
      io.stage = "waiting for a handshake turn";
      await this.handshakeTurn(address, io);
    }
    await verifyInit(init);

    io.stage = "authorizing the initiator";
    let verdict: AuthorizeResult;
    try {
      verdict = await this.authorize(init.sessionId, init.initiator);
    } catch (cause) {
      throw new HandshakeError(`authorize() threw for initiator ${init.initiator} and session ${init.sessionId}.`, {
        cause,
      });
    }
    if (!verdict.ok) {
      throw new HandshakeError(`Initiator ${init.initiator} may not open session ${init.sessionId}: ${verdict.reason}`);
    }

    io.stage = "sending ChannelOpenTry";
    const { tryMessage, keys, transcriptHash } = await createTry({ account: this.account, init });
    io.write(encodeFrame(encodeHandshakeMessage(tryMessage)));
    const sealer = new RecordSealer(keys.responderToInitiator);
    const opener = new RecordOpener(keys.initiatorToResponder);

    io.stage = "waiting for ChannelOpenAck";
    const ackFrame = await io.read(
      () =>
        new HandshakeError(
          "The initiator closed the connection before sending ChannelOpenAck: it refused our ChannelOpenTry " +
            "(it expected another responder, or the Try was altered in transit).",
        ),
    );
    openKeyConfirmation(opener, ackFrame, "ChannelOpenAck", transcriptHash);
    // The initiator has proved it is live and holds the keys: full-size frames may follow.
    io.decoder.maxFrameBytes = this.options.maxMessageBytes + SEALED_FRAME_OVERHEAD;
    io.write(encodeFrame(sealer.seal(RecordType.keyConfirmation, encodeKeyConfirmation("ChannelOpenConfirm", transcriptHash))));
    return { sealer, opener, transcriptHash, peer: init.initiator, sessionId: init.sessionId, version: tryMessage.version };
  }
}

/**
 * Listens for payers on `host` (default 127.0.0.1) and `port` (0 = ephemeral). Each accepted TCP connection
 * runs the handshake as responder; completed ones are emitted as `connection`, failed ones as
 * `handshakeError` (the server keeps accepting). Rejects with the OS error if the port cannot be bound.
 */
export async function listenSecure(parameters: ListenSecureParameters): Promise<SecureServer> {
  const server = new SecureServer(parameters);
  await server.listen(parameters.port ?? 0);
  return server;
}
