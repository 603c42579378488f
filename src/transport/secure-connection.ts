/**
 * The payer ↔ provider connection over TCP: the four-way handshake of `handshake.ts`, then sealed frames
 * (`sealing.ts`) inside length-prefixed frames (`frames.ts`).
 *
 * API (EventEmitter, in the style of `net.Socket`):
 *
 * ```ts
 * const server = await listenSecure({ port: 0, account: provider, authorize: async (sessionId, payer) =>
 *   isPayerOf(sessionId, payer) ? { ok: true } : { ok: false, reason: "not this channel's payer" } });
 * server.on("connection", (conn) => conn.on("message", (bytes) => conn.send(bytes)));
 * server.on("handshakeError", (err, remote) => log(err.name, remote));
 *
 * const conn = await connectSecure({ host: "127.0.0.1", port: server.port, account: payer, sessionId,
 *   expectedPeer: provider.address });
 * conn.on("message", (bytes) => ...);         // in order, each once (see Delivery)
 * await conn.send(new Uint8Array([1, 2, 3])); // resolves once the socket can take more (backpressure)
 * await conn.close();                         // sealed close, then TCP FIN
 * const error = await conn.closed;            // undefined after a graceful close
 * ```
 *
 * - **Delivery.** The socket is always read, so the sealed close and protocol violations are handled whether
 *   or not the application listens. Messages go to `message` listeners in order; while there are none (for
 *   instance between `await connectSecure()` and attaching one), or after `pause()`, they wait in an inbox
 *   of about `maxMessageBytes`, beyond which reading stops and TCP flow control slows the peer. A graceful
 *   `close` is emitted only after the inbox has been delivered.
 * - **Failures.** Any protocol violation — a frame that fails authentication, arrives out of sequence, is
 *   oversized or malformed, or a truncated stream — closes the connection at once and discards undelivered
 *   messages. The error is emitted once as `error` (only if an `error` listener is attached: the process
 *   never crashes for want of one), then `close` is emitted with it, and `closed` resolves with it. Nothing
 *   from a failing frame is delivered. No socket or timer callback of this module throws; an exception
 *   thrown by a `message` listener closes the connection with a {@link ConnectionClosedError} (its `cause`).
 * - **Backpressure.** `send()` resolves when the socket accepted the frame below its high-water mark, or
 *   after the next `drain`. Await it. Sends made without awaiting are refused with {@link SendBufferFullError}
 *   once more than `maxBufferedBytes` wait in the socket (or in the burst below), so memory stays bounded.
 * - **Bursts.** On a connection opened at handshake version 2 (the default; `handshakeVersion: "1"` offers 1),
 *   the messages sent in one turn of the event loop are sealed together as data-batch records of up to
 *   {@link MAX_BATCH_PAYLOAD_BYTES} at the end of the turn; at version 1 each message is a record of its own.
 *   Either way the peer receives the same messages in the same order.
 * - **Server.** `listenSecure` resolves with a {@link SecureServer}: `port`, `server` (the `net.Server`),
 *   `connections`, events `connection` / `handshakeError` / `error`, and `close()`.
 */
import { EventEmitter } from "node:events";
import * as net from "node:net";
import { isAddress, type Address, type Hex, type LocalAccount } from "viem";

import { BaseError, InvalidFieldError, SizeLimitError } from "../core/errors";
import { expectHash, expectLiteral } from "../core/validate";
import {
  ConnectionClosedError,
  HandshakeError,
  HandshakeTimeoutError,
  KeyConfirmationError,
  MalformedFrameError,
  SendBufferFullError,
  type TransportError,
} from "./errors";
import { encodeFrame, FrameDecoder } from "./frames";
import {
  acceptTry,
  checkKeyConfirmation,
  createInit,
  createTry,
  decodeInit,
  decodeTry,
  encodeHandshakeMessage,
  encodeKeyConfirmation,
  HANDSHAKE_VERSION,
  HANDSHAKE_VERSIONS,
  MAX_HANDSHAKE_MESSAGE_BYTES,
  verifyInit,
  versionHasBatches,
  type HandshakeVersion,
  type KeyConfirmationType,
} from "./handshake";
import {
  BATCH_LENGTH_BYTES,
  decodeDataBatch,
  encodeDataBatch,
  MAX_BATCH_PAYLOAD_BYTES,
  MAX_MESSAGE_BYTES,
  RecordOpener,
  RecordSealer,
  RecordType,
  SEALED_FRAME_OVERHEAD,
} from "./sealing";

export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;
/** Sealed bytes allowed to wait in the socket before unawaited sends are refused (8 maximal messages). */
export const DEFAULT_MAX_BUFFERED_BYTES = 8 * (MAX_MESSAGE_BYTES + SEALED_FRAME_OVERHEAD);
/** Handshakes a listener runs at once; past it, a newcomer takes the slot of the source holding the most. */
export const DEFAULT_MAX_PENDING_HANDSHAKES = 128;
/**
 * The responder's deadline for a whole handshake (issue 28 item 5): a peer that has not proved its keys by
 * then is cut off. A payer on loopback or a LAN finishes in milliseconds; 5 s leaves room for a slow link.
 */
export const DEFAULT_SERVER_HANDSHAKE_TIMEOUT_MS = 5_000;
/** Handshakes one source address may have in progress at once. */
export const DEFAULT_MAX_PENDING_PER_SOURCE = 8;
/** Open (handshaken) connections one source address may hold at once; established ones are never evicted. */
export const DEFAULT_MAX_CONNECTIONS_PER_SOURCE = 64;
/** Open connections a listener holds at once. */
export const DEFAULT_MAX_CONNECTIONS = 4_096;
/** New connections one source may start per second (a token bucket of this size, refilled continuously). */
export const DEFAULT_HANDSHAKES_PER_SECOND_PER_SOURCE = 20;
/**
 * Handshakes of strangers (not an existing channel's payer) whose crypto runs per second: each costs the
 * responder a signature check, a KEM encapsulation and a signature, a few ms of CPU that the streams of
 * existing channels would otherwise lose.
 */
export const DEFAULT_STRANGER_HANDSHAKES_PER_SECOND = 16;
/** An open connection on which nothing arrives or leaves for this long is closed. */
export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;
export const DEFAULT_HOST = "127.0.0.1";

export type AuthorizeResult = { ok: true } | { ok: false; reason: string };
/**
 * The responder's decision on an initiator whose signature has been verified: may `initiator` open
 * `sessionId`? (A provider node checks that it is that channel's payer.)
 */
export type AuthorizeInitiator = (sessionId: Hex, initiator: Address) => Promise<AuthorizeResult>;

type ConnectionOptions = {
  /** Handshake deadline; also bounds a graceful close. Default 10 s. */
  timeoutMs?: number;
  /**
   * Largest message `send` accepts and the peer may send (default 1 MiB); frames may be
   * {@link SEALED_FRAME_OVERHEAD} bytes larger. Both ends must use the same value.
   */
  maxMessageBytes?: number;
  /** See {@link SendBufferFullError}. Default {@link DEFAULT_MAX_BUFFERED_BYTES}. */
  maxBufferedBytes?: number;
};

export type ConnectSecureParameters = ConnectionOptions & {
  host: string;
  port: number;
  /** Local address to connect from (default: the OS picks). */
  localAddress?: string;
  /** The payer's key: signs ChannelOpenInit. */
  account: LocalAccount;
  sessionId: Hex;
  /** The provider's address: ChannelOpenTry must be signed by this key. */
  expectedPeer: Address;
  /**
   * The handshake version offered (default: the newest). "1" reaches a provider that speaks only version 1,
   * at the cost of data-batch records.
   */
  handshakeVersion?: HandshakeVersion;
};

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

export type RemoteEndpoint = { address: string | undefined; port: number | undefined };

// --- Handshake I/O ---------------------------------------------------------------------------------------

/**
 * Reads frames for the handshake: queues complete frames (pausing the socket while any wait unread, so at
 * most one socket read is buffered), turns EOF, socket errors and decoder errors into one failure.
 */
class HandshakeIo {
  stage: string;
  /** Rejects with the first failure; never resolves. */
  readonly failed: Promise<never>;
  failure: TransportError | undefined;

  private rejectFailed!: (error: TransportError) => void;
  private readonly frames: Uint8Array[] = [];
  private eof = false;
  private waiter: { resolve: (frame: Uint8Array) => void; onEof: () => TransportError } | undefined;

  constructor(readonly socket: net.Socket, readonly decoder: FrameDecoder, stage: string) {
    this.stage = stage;
    this.failed = new Promise<never>((_, reject) => (this.rejectFailed = reject));
    this.failed.catch(() => {}); // observed through Promise.race; never an unhandled rejection
    socket.on("data", this.onData);
    socket.on("end", this.onEnd);
    socket.on("error", this.onError);
    socket.on("close", this.onClose);
  }

  /** The next frame; `onEof` names the failure if the peer ends the stream first. */
  read(onEof: () => TransportError): Promise<Uint8Array> {
    if (this.failure) return Promise.reject(this.failure);
    const frame = this.frames.shift();
    if (frame) {
      if (this.frames.length === 0) this.socket.resume();
      return Promise.resolve(frame);
    }
    if (this.eof) {
      this.fail(onEof());
      return Promise.reject(this.failure);
    }
    return new Promise((resolve) => {
      this.waiter = { resolve, onEof };
      this.socket.resume();
    });
  }

  write(bytes: Uint8Array): void {
    if (this.failure) throw this.failure;
    this.socket.write(bytes);
  }

  /** Records the first failure, rejects `failed` and destroys the socket. Idempotent. */
  fail(error: TransportError): void {
    if (this.failure) return;
    this.failure = error;
    this.waiter = undefined;
    this.rejectFailed(error);
    this.socket.destroy();
  }

  /** Hands the socket over: removes the listeners, returns frames already received and whether EOF was seen. */
  detach(): { frames: Uint8Array[]; eof: boolean } {
    this.socket.off("data", this.onData);
    this.socket.off("end", this.onEnd);
    this.socket.off("error", this.onError);
    this.socket.off("close", this.onClose);
    return { frames: this.frames.splice(0), eof: this.eof };
  }

  private readonly onData = (chunk: Buffer): void => {
    if (this.failure) return;
    try {
      this.frames.push(...this.decoder.push(chunk));
    } catch (error) {
      this.fail(asTransportError(error));
      return;
    }
    const waiter = this.waiter;
    if (waiter && this.frames.length > 0) {
      this.waiter = undefined;
      waiter.resolve(this.frames.shift()!);
    }
    if (this.frames.length > 0) this.socket.pause();
  };

  private readonly onEnd = (): void => {
    this.eof = true;
    if (this.waiter && this.frames.length === 0) this.fail(this.waiter.onEof());
  };

  /** A reset or close while a read waits is the peer going away at that step: the read names the failure. */
  private readonly onError = (error: Error): void => {
    const code = (error as NodeJS.ErrnoException).code ?? error.message;
    if (this.waiter && this.frames.length === 0) this.fail(this.waiter.onEof());
    else if (this.stage === "connecting") this.fail(new ConnectionClosedError(`Could not connect (${code}).`, { cause: error }));
    else this.fail(new HandshakeError(`The TCP connection failed during the handshake, ${this.stage} (${code}).`, { cause: error }));
  };

  private readonly onClose = (): void => {
    if (this.waiter && this.frames.length === 0) this.fail(this.waiter.onEof());
    else this.fail(new HandshakeError(`The connection closed during the handshake, ${this.stage}.`));
  };
}

const TRANSPORT_ERROR_NAMES: ReadonlySet<string> = new Set([
  "FrameTooLargeError",
  "MalformedFrameError",
  "FrameAuthenticationError",
  "FrameReplayError",
  "HandshakeError",
  "KeyConfirmationError",
  "HandshakeTimeoutError",
  "ConnectionClosedError",
  "SendBufferFullError",
]);

/** Transport errors pass through; anything else (e.g. an account that cannot sign) becomes the cause of one. */
function asTransportError(error: unknown): TransportError {
  if (error instanceof BaseError && TRANSPORT_ERROR_NAMES.has(error.name)) return error as TransportError;
  const reason = error instanceof BaseError ? error.shortMessage : "an unexpected error";
  return new HandshakeError(`The handshake failed: ${reason}`, { cause: error });
}

/** Runs `body` against `io` with a deadline; on any failure the socket is destroyed and the first error thrown. */
async function runHandshake<T>(io: HandshakeIo, timeoutMs: number, body: () => Promise<T>): Promise<T> {
  const timer = setTimeout(() => io.fail(new HandshakeTimeoutError(timeoutMs, io.stage)), timeoutMs);
  const run = body();
  run.catch(() => {}); // if `failed` wins the race, this one's later rejection is expected
  try {
    return await Promise.race([run, io.failed]);
  } catch (error) {
    io.fail(asTransportError(error));
    throw io.failure;
  } finally {
    clearTimeout(timer);
  }
}

/** Opens the counter-0 record of a direction and checks it is the expected key confirmation. */
function openKeyConfirmation(opener: RecordOpener, frame: Uint8Array, type: KeyConfirmationType, transcript: Hex): void {
  let record: ReturnType<RecordOpener["open"]>;
  try {
    record = opener.open(frame);
  } catch (cause) {
    throw new KeyConfirmationError(
      `The ${type} did not open under the derived key: the two sides derived different keys ` +
        "(the handshake was altered in transit).",
      { cause },
    );
  }
  if (record.type !== RecordType.keyConfirmation) {
    throw new KeyConfirmationError(`Expected the ${type} record, received a record of type ${record.type}.`);
  }
  checkKeyConfirmation(record.payload, type, transcript);
}

function validateOptions(options: ConnectionOptions) {
  const timeoutMs = options.timeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
  const maxMessageBytes = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
  const maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) {
    throw new InvalidFieldError("timeoutMs", "a positive integer of milliseconds", timeoutMs);
  }
  if (!Number.isSafeInteger(maxMessageBytes) || maxMessageBytes <= 0 || maxMessageBytes > 0xffff_ffff - SEALED_FRAME_OVERHEAD) {
    throw new InvalidFieldError("maxMessageBytes", "a positive integer below 2^32 - 25", maxMessageBytes);
  }
  if (!Number.isSafeInteger(maxBufferedBytes) || maxBufferedBytes < 0) {
    throw new InvalidFieldError("maxBufferedBytes", "a non-negative integer", maxBufferedBytes);
  }
  return { timeoutMs, maxMessageBytes, maxBufferedBytes };
}

// --- Initiator -------------------------------------------------------------------------------------------

/**
 * Connects to a provider and runs the handshake as initiator. Resolves with an open connection once the
 * provider has proved it holds `expectedPeer`'s key and the session keys (ChannelOpenConfirm). Rejects with
 * {@link HandshakeError}, {@link KeyConfirmationError}, {@link HandshakeTimeoutError},
 * {@link FrameTooLargeError} or {@link ConnectionClosedError} (could not connect); the socket is then closed.
 */
export async function connectSecure(parameters: ConnectSecureParameters): Promise<SecureConnection> {
  const { host, port, account } = parameters;
  const options = validateOptions(parameters);
  const sessionId = expectHash(parameters.sessionId, "sessionId");
  if (!isAddress(parameters.expectedPeer, { strict: false })) {
    throw new InvalidFieldError("expectedPeer", "the provider's address", parameters.expectedPeer);
  }
  const expectedPeer = parameters.expectedPeer;
  const version = expectLiteral(parameters.handshakeVersion ?? HANDSHAKE_VERSION, "handshakeVersion", HANDSHAKE_VERSIONS);
  const decoder = new FrameDecoder({ maxFrameBytes: MAX_HANDSHAKE_MESSAGE_BYTES });
  const socket = net.connect({ host, port, ...(parameters.localAddress ? { localAddress: parameters.localAddress } : {}) });
  socket.setNoDelay(true);
  const io = new HandshakeIo(socket, decoder, "connecting");

  const opened = await runHandshake(io, options.timeoutMs, async () => {
    if (socket.connecting) await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    io.stage = "sending ChannelOpenInit";
    const { init, secrets } = await createInit({ account, sessionId, version });
    io.write(encodeFrame(encodeHandshakeMessage(init)));

    io.stage = "waiting for ChannelOpenTry";
    const tryFrame = await io.read(
      () =>
        new HandshakeError(
          "The responder closed the connection before sending ChannelOpenTry: it refused this initiator or session.",
        ),
    );
    const tryMessage = decodeTry(tryFrame);
    const { keys, transcriptHash } = await acceptTry({ init, secrets, tryMessage, expectedResponder: expectedPeer });
    // The responder has proved its identity over this transcript: full-size frames may follow its Confirm.
    decoder.maxFrameBytes = options.maxMessageBytes + SEALED_FRAME_OVERHEAD;
    const sealer = new RecordSealer(keys.initiatorToResponder);
    const opener = new RecordOpener(keys.responderToInitiator);
    io.write(encodeFrame(sealer.seal(RecordType.keyConfirmation, encodeKeyConfirmation("ChannelOpenAck", transcriptHash))));

    io.stage = "waiting for ChannelOpenConfirm";
    const confirmFrame = await io.read(
      () =>
        new KeyConfirmationError(
          "The responder closed the connection instead of sending ChannelOpenConfirm: it could not open our " +
            "ChannelOpenAck, so the two sides derived different keys.",
        ),
    );
    openKeyConfirmation(opener, confirmFrame, "ChannelOpenConfirm", transcriptHash);
    return { sealer, opener, transcriptHash, peer: tryMessage.responder, version: tryMessage.version };
  });

  const { frames, eof } = io.detach();
  return new SecureConnection({
    ...opened,
    ...options,
    socket,
    decoder,
    frames,
    eof,
    role: "initiator",
    sessionId,
  });
}

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
      emitSafely(this, "handshakeError", new HandshakeError(`Connection refused: ${refused}.`), remote);
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

// --- The open connection ---------------------------------------------------------------------------------

export type SecureConnectionState = "open" | "closing" | "closed";

type ConnectionParts = ReturnType<typeof validateOptions> & {
  socket: net.Socket;
  decoder: FrameDecoder;
  /** Frames received with the end of the handshake, not yet opened. */
  frames: Uint8Array[];
  eof: boolean;
  sealer: RecordSealer;
  opener: RecordOpener;
  role: "initiator" | "responder";
  sessionId: Hex;
  peer: Address;
  transcriptHash: Hex;
  version: HandshakeVersion;
  /** Inactivity after which the connection is closed (0 or absent: never). */
  idleTimeoutMs?: number;
};

/** Bookkeeping cost counted per buffered message, so that many empty messages also reach the inbox limit. */
const INBOX_ENTRY_COST = 64;

/**
 * Most messages delivered in one turn of the event loop; the rest wait in the inbox for the next turn.
 * Without a bound, a burst of 64 pipelined messages was handled whole before anything the handlers wrote
 * (a group commit, its fsync, the answers) could leave, so the two peers took turns instead of working at
 * once (issue 15: each was idle about 45 % of the time). Slices let one slice's answers be committed and
 * sent while the next is handled.
 */
export const MESSAGES_PER_TURN = 8;

export interface SecureConnection {
  /** One message, exactly as the peer passed it to `send`, in order, each once. */
  on(event: "message", listener: (data: Uint8Array) => void): this;
  /** Emitted at most once, just before `close`, and only if a listener is attached. */
  on(event: "error", listener: (error: TransportError) => void): this;
  /** Emitted once; `error` is undefined after a graceful close. */
  on(event: "close", listener: (error: TransportError | undefined) => void): this;
  once(event: "message", listener: (data: Uint8Array) => void): this;
  once(event: "error", listener: (error: TransportError) => void): this;
  once(event: "close", listener: (error: TransportError | undefined) => void): this;
}

/**
 * An open, authenticated, encrypted connection. Built by {@link connectSecure} and {@link listenSecure}.
 *
 * The socket is always read (the sealed close and protocol violations are handled whether or not the
 * application listens). Messages go to `message` listeners; while there are none, or after `pause()`, they
 * wait in an inbox of at most about `maxMessageBytes`, beyond which reading stops (TCP flow control then
 * slows the peer). A graceful `close` is emitted after the inbox has been delivered; a failure discards it.
 */
export class SecureConnection extends EventEmitter {
  readonly role: "initiator" | "responder";
  readonly sessionId: Hex;
  /** The peer's address, proved by its handshake signature. */
  readonly peer: Address;
  /** Hash of the handshake transcript (the same on both ends); identifies this connection. */
  readonly transcriptHash: Hex;
  /** The handshake version both ends agreed on (signed by both); from "2" on, bursts travel as data batches. */
  readonly handshakeVersion: HandshakeVersion;
  readonly maxMessageBytes: number;
  /** Resolves once closed, with the error that closed it or undefined for a graceful close. Never rejects. */
  readonly closed: Promise<TransportError | undefined>;

  private _state: SecureConnectionState = "open";
  private _error: TransportError | undefined;
  private readonly socket: net.Socket;
  private readonly decoder: FrameDecoder;
  private readonly sealer: RecordSealer;
  private readonly opener: RecordOpener;
  private readonly maxBufferedBytes: number;
  private readonly closeTimeoutMs: number;
  /** Whether bursts are sealed as data batches (both ends speak handshake version 2 or later). */
  private readonly batches: boolean;
  /** Largest batch payload this end seals: {@link MAX_BATCH_PAYLOAD_BYTES}, and never above `maxMessageBytes`. */
  private readonly batchLimit: number;
  /** Messages sent in the current burst, sealed together at its end (batching connections only). */
  private burst: Uint8Array[] = [];
  private burstBytes = 0;
  private readonly inbox: Uint8Array[] = [];
  private inboxCost = 0;
  private readonly inboxLimit: number;
  private explicitlyPaused = false;
  /** close() was called: messages nobody listens for are dropped instead of kept. */
  private closeRequested = false;
  /** The peer's sealed close was received: nothing more is read. */
  private peerClosed = false;
  /** Closed gracefully, but `close` waits until the inbox is delivered. */
  private closeEventPending = false;
  private drainWaiters: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  private closeTimer: NodeJS.Timeout | undefined;
  /** Frames received with the handshake have been processed; before that the socket must stay paused. */
  private started = false;
  private resolveClosed!: (error: TransportError | undefined) => void;

  /** @internal */
  constructor(parts: ConnectionParts) {
    super();
    this.role = parts.role;
    this.sessionId = parts.sessionId;
    this.peer = parts.peer;
    this.transcriptHash = parts.transcriptHash;
    this.handshakeVersion = parts.version;
    this.batches = versionHasBatches(parts.version);
    this.maxMessageBytes = parts.maxMessageBytes;
    this.batchLimit = Math.min(parts.maxMessageBytes, MAX_BATCH_PAYLOAD_BYTES);
    this.maxBufferedBytes = parts.maxBufferedBytes;
    this.closeTimeoutMs = parts.timeoutMs;
    this.inboxLimit = Math.max(parts.maxMessageBytes, 64 * 1024);
    this.socket = parts.socket;
    this.decoder = parts.decoder;
    this.sealer = parts.sealer;
    this.opener = parts.opener;
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));

    this.socket.pause();
    this.socket.on("data", this.onData);
    this.socket.on("end", this.onEnd);
    this.socket.on("error", this.onSocketError);
    this.socket.on("close", this.onSocketClose);
    this.socket.on("drain", this.onDrain);
    if (parts.idleTimeoutMs) {
      const idleMs = parts.idleTimeoutMs;
      this.socket.setTimeout(idleMs);
      this.socket.on("timeout", () => this.finish(new ConnectionClosedError(`Nothing arrived or left for ${idleMs} ms; the idle connection is closed.`)));
    }
    super.on("newListener", (event: string | symbol) => {
      // The listener is added after this event: deliver the inbox to it on the next tick.
      if (event === "message") process.nextTick(() => this.drainInbox());
    });
    // Frames that came with the handshake are handled once the caller has had the connection in hand
    // (after its `await` or `connection` handler), so that its listeners see them.
    setImmediate(() => {
      this.started = true;
      this.processFrames(parts.frames);
      if (parts.eof) this.onEnd();
      else if (!this.isClosed() && !this.inboxFull()) this.socket.resume();
    });
  }

  get state(): SecureConnectionState {
    return this._state;
  }

  /** Sealed records this end has sent (the key confirmation included): with batches, fewer than its messages. */
  get recordsSent(): number {
    return Number(this.sealer.nextCounter);
  }

  /** Sealed records this end has opened (the key confirmation included). */
  get recordsReceived(): number {
    return Number(this.opener.expectedCounter);
  }

  /** The error that closed the connection, if any. */
  get error(): TransportError | undefined {
    return this._error;
  }

  /**
   * Seals and sends one message (0..maxMessageBytes bytes). Resolves when the socket can take more;
   * rejects with {@link ConnectionClosedError}, {@link SizeLimitError} or {@link SendBufferFullError}
   * (the connection stays open after the last two). Messages are delivered in the order `send` was called.
   * The returned promise is already observed, so an ignored rejection never crashes the process.
   */
  send(data: Uint8Array): Promise<void> {
    const sent = this.sendNow(data);
    sent.catch(() => {}); // fire-and-forget sends must not crash the process; failures also reach `close`
    return sent;
  }

  private async sendNow(data: Uint8Array): Promise<void> {
    if (this._state !== "open") {
      throw new ConnectionClosedError(
        `The connection is ${this._state}; nothing more can be sent${this._error ? ` (closed by ${this._error.name})` : ""}.`,
        { cause: this._error },
      );
    }
    if (!(data instanceof Uint8Array)) throw new InvalidFieldError("data", "a Uint8Array", data);
    if (data.length > this.maxMessageBytes) throw new SizeLimitError("The message", data.length, this.maxMessageBytes);
    const buffered = this.socket.writableLength + this.burstBytes;
    if (buffered > this.maxBufferedBytes) throw new SendBufferFullError(buffered, this.maxBufferedBytes);
    if (this.batches) {
      // Messages sent in one burst (the same turn of the event loop) are sealed together at its end: one
      // record, one AEAD, one frame for the lot (issue 15). Order and content are exactly as sent. As with a
      // direct write, `send` resolves at once while the socket's buffer, this burst included, stays below its
      // high-water mark, so callers that chain their sends (to keep answers in order) still send in one
      // burst; past it, `send` waits for the drain that writing the burst is then certain to cause (the
      // sealed bytes are more than the messages' bytes counted here).
      if (this.burst.length === 0) process.nextTick(this.writeBurst);
      this.burst.push(data);
      this.burstBytes += data.length;
      if (this.socket.writableLength + this.burstBytes < this.socket.writableHighWaterMark) return;
      await new Promise<void>((resolve, reject) => this.drainWaiters.push({ resolve, reject }));
      return;
    }
    // Frames sent in one burst (the same turn of the event loop) leave in one write: the socket is corked
    // at the first and uncorked once the current callbacks and promise reactions have run. The bytes on the
    // wire are the same frames in the same order; only the number of syscalls changes (issue 15).
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(this.uncork);
    }
    if (this.socket.write(encodeFrame(this.sealer.seal(RecordType.data, data)))) return;
    await new Promise<void>((resolve, reject) => this.drainWaiters.push({ resolve, reject }));
  }

  /**
   * Graceful close: sends a sealed close record and ends the TCP stream; messages still arriving are
   * delivered to `message` listeners (dropped if there are none) until the peer's close. Resolves when the
   * connection is closed, at the latest `timeoutMs` later. Idempotent.
   */
  async close(): Promise<void> {
    this.closeRequested = true;
    if (this._state === "open") {
      this._state = "closing";
      this.endWithClose();
    }
    this.explicitlyPaused = false;
    this.drainInbox();
    this.discardUndeliverable();
    await this.closed;
  }

  /** Closes at once without a sealed close (the peer sees a truncation), optionally with `error`. */
  destroy(error?: TransportError): void {
    this.closeRequested = true;
    if (this.isClosed()) {
      // Already closed gracefully with messages still undelivered: drop them and emit `close` now.
      this.inbox.length = 0;
      this.inboxCost = 0;
      if (this.closeEventPending) this.emitClose(undefined);
      return;
    }
    this.finish(error);
  }

  /** Stops delivering messages until {@link resume}; they wait in the inbox (and then in TCP). */
  pause(): void {
    this.explicitlyPaused = true;
  }

  /** Resumes delivery. */
  resume(): void {
    this.explicitlyPaused = false;
    this.drainInbox();
  }

  /** Methods, not field reads, so that TypeScript keeps no narrowing across calls that may close. */
  private isClosed(): boolean {
    return this._state === "closed";
  }

  private inboxFull(): boolean {
    return this.inboxCost > this.inboxLimit;
  }

  private delivering(): boolean {
    return !this.explicitlyPaused && this.listenerCount("message") > 0;
  }

  private readonly onData = (chunk: Buffer): void => {
    if (this.isClosed() || this.peerClosed) return;
    let frames: Uint8Array[];
    try {
      frames = this.decoder.push(chunk);
    } catch (error) {
      this.finish(asTransportError(error));
      return;
    }
    this.processFrames(frames);
  };

  private processFrames(frames: Uint8Array[]): void {
    for (const frame of frames) {
      if (this.isClosed() || this.peerClosed) return;
      this.accept(frame);
    }
  }

  private accept(frame: Uint8Array): void {
    let record: ReturnType<RecordOpener["open"]>;
    try {
      record = this.opener.open(frame);
    } catch (error) {
      this.finish(asTransportError(error));
      return;
    }
    switch (record.type) {
      case RecordType.data:
        this.deliver(record.payload);
        return;
      case RecordType.dataBatch: {
        if (!this.batches) break;
        let messages: Uint8Array[];
        try {
          messages = decodeDataBatch(record.payload, this.maxMessageBytes);
        } catch (error) {
          this.finish(asTransportError(error));
          return;
        }
        for (const message of messages) {
          if (this.isClosed()) return;
          this.deliver(message);
        }
        return;
      }
      case RecordType.close:
        if (record.payload.length !== 0) {
          this.finish(new MalformedFrameError(`A close record has no payload; this one has ${record.payload.length} bytes.`));
          return;
        }
        this.peerClosed = true;
        if (this._state === "open") {
          this._state = "closing";
          this.endWithClose();
        }
        this.socket.resume(); // only the peer's FIN is left to read; it lets the socket close
        return;
    }
    this.finish(
      new MalformedFrameError(
        `Record type ${record.type} is not allowed on an open connection at handshake version ${this.handshakeVersion} ` +
          `(only data 0x00${this.batches ? ", data batch 0x03" : ""} and close 0x01 are).`,
      ),
    );
  }

  /** Messages delivered in the current turn, and whether the turn that resets the count is scheduled. */
  private deliveredThisTurn = 0;
  private nextTurnScheduled = false;

  private readonly nextTurn = (): void => {
    this.nextTurnScheduled = false;
    this.deliveredThisTurn = 0;
    this.drainInbox();
  };

  /** Whether another message may be delivered in this turn; counts it if so. */
  private takeTurnBudget(): boolean {
    if (this.deliveredThisTurn >= MESSAGES_PER_TURN) return false;
    this.deliveredThisTurn++;
    if (!this.nextTurnScheduled) {
      this.nextTurnScheduled = true;
      setImmediate(this.nextTurn);
    }
    return true;
  }

  private deliver(payload: Uint8Array): void {
    if (this.inbox.length === 0 && this.delivering() && this.takeTurnBudget()) {
      this.emitMessage(payload);
      return;
    }
    if (this.closeRequested && !this.delivering()) return;
    this.inbox.push(payload);
    this.inboxCost += payload.length + INBOX_ENTRY_COST;
    if (this.inboxFull()) this.socket.pause();
  }

  private emitMessage(payload: Uint8Array): void {
    try {
      this.emit("message", payload);
    } catch (cause) {
      this.finish(new ConnectionClosedError("A 'message' listener threw; the connection is closed.", { cause }));
    }
  }

  private drainInbox(): void {
    while (this.inbox.length > 0 && this.delivering() && this.takeTurnBudget()) {
      const payload = this.inbox.shift()!;
      this.inboxCost -= payload.length + INBOX_ENTRY_COST;
      this.emitMessage(payload);
    }
    if (this.inbox.length > 0) return;
    if (this.closeEventPending) this.emitClose(undefined);
    else if (this.started && !this.isClosed()) this.socket.resume();
  }

  private discardUndeliverable(): void {
    if (this.delivering()) return;
    this.inbox.length = 0;
    this.inboxCost = 0;
    if (this.closeEventPending) this.emitClose(undefined);
  }

  /**
   * Seals the burst's messages and writes them in one go: runs of messages whose batch payload fits
   * `batchLimit` become one data-batch record, a message alone becomes a data record.
   */
  private readonly writeBurst = (): void => {
    const messages = this.burst;
    if (messages.length === 0) return; // written already, by a close, or dropped by a failure
    this.burst = [];
    this.burstBytes = 0;
    this.socket.cork();
    for (let first = 0; first < messages.length; ) {
      let end = first + 1;
      let bytes = BATCH_LENGTH_BYTES + messages[first]!.length;
      while (end < messages.length && bytes + BATCH_LENGTH_BYTES + messages[end]!.length <= this.batchLimit) {
        bytes += BATCH_LENGTH_BYTES + messages[end]!.length;
        end++;
      }
      const record =
        end - first === 1
          ? this.sealer.seal(RecordType.data, messages[first]!)
          : this.sealer.seal(RecordType.dataBatch, encodeDataBatch(messages.slice(first, end)));
      this.socket.write(encodeFrame(record));
      first = end;
    }
    this.socket.uncork();
  };

  private endWithClose(): void {
    this.writeBurst(); // what was sent before the close goes out before it
    this.socket.end(encodeFrame(this.sealer.seal(RecordType.close, new Uint8Array(0))));
    this.closeTimer = setTimeout(() => this.finish(undefined), this.closeTimeoutMs);
    this.closeTimer.unref();
  }

  private readonly onEnd = (): void => {
    if (this.peerClosed || this._state !== "open") return; // the socket's `close` finishes it
    this.finish(
      new ConnectionClosedError(
        this.decoder.bufferedBytes > 0
          ? "The peer ended the TCP connection in the middle of a frame."
          : "The peer ended the TCP connection without a sealed close: the stream may have been truncated.",
      ),
    );
  };

  private readonly onSocketError = (error: Error): void => {
    if (this._state === "closing") return this.finish(undefined); // a reset after a close was under way
    const code = (error as NodeJS.ErrnoException).code ?? error.message;
    this.finish(new ConnectionClosedError(`The TCP connection failed (${code}).`, { cause: error }));
  };

  private readonly onSocketClose = (): void => {
    this.finish(
      this._state === "closing" ? undefined : new ConnectionClosedError("The TCP connection closed without a sealed close."),
    );
  };

  /** The socket is corked until the end of the current burst of sends. */
  private corked = false;

  private readonly uncork = (): void => {
    this.corked = false;
    this.socket.uncork();
  };

  private readonly onDrain = (): void => {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const waiter of waiters) waiter.resolve();
  };

  /**
   * The one place a connection ends; idempotent. A failure discards undelivered messages and emits at
   * once; a graceful end emits `close` after the inbox is delivered.
   */
  private finish(error: TransportError | undefined): void {
    if (this._state === "closed") return;
    this._state = "closed";
    this._error = error;
    clearTimeout(this.closeTimer);
    this.socket.destroy();
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    // A burst not yet written (the connection failed or was destroyed within its turn) is never sent.
    this.burst = [];
    this.burstBytes = 0;
    for (const waiter of waiters) {
      if (error) waiter.reject(new ConnectionClosedError("The connection failed before the message was written.", { cause: error }));
      else waiter.resolve();
    }
    if (error || this.closeRequested) {
      this.inbox.length = 0;
      this.inboxCost = 0;
    }
    if (this.inbox.length === 0) this.emitClose(error);
    else this.closeEventPending = true;
  }

  private emitClose(error: TransportError | undefined): void {
    this.closeEventPending = false;
    if (error) emitSafely(this, "error", error);
    emitSafely(this, "close", error);
    this.resolveClosed(error);
  }
}

/** Emits without letting a listener's exception escape into a socket callback (which would crash the process). */
function emitSafely(emitter: EventEmitter, event: string, ...args: unknown[]): void {
  if (event === "error" && emitter.listenerCount("error") === 0) return;
  try {
    emitter.emit(event, ...args);
  } catch (error) {
    process.emitWarning(`A '${event}' listener threw: ${error instanceof Error ? error.message : String(error)}`);
  }
}
