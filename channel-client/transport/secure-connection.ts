/**
 * The payer ↔ provider connection over TCP: the four-way handshake of `handshake.ts`, then sealed frames
 * (`sealing.ts`) inside length-prefixed frames (`frames.ts`). This module is the open connection; the initiator's
 * `connectSecure` is in `connect.ts`, the responder's `listenSecure` in `secure-server.ts`, and the handshake's
 * socket reader both use in `handshake-io.ts`.
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
import type { Address, Hex, LocalAccount } from "viem";

import { InvalidFieldError, SizeLimitError } from "../core/errors";
import {
  ConnectionClosedError,
  MalformedFrameError,
  SendBufferFullError,
  type TransportError,
} from "./errors";
import { asTransportError } from "./handshake-io";
import { encodeFrame, FrameDecoder } from "./frames";
import {
  versionHasBatches,
  type HandshakeVersion,
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

export type ConnectionOptions = {
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

export function validateOptions(options: ConnectionOptions) {
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

export type RemoteEndpoint = { address: string | undefined; port: number | undefined };

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
export function emitSafely(emitter: EventEmitter, event: string, ...args: unknown[]): void {
  if (event === "error" && emitter.listenerCount("error") === 0) return;
  try {
    emitter.emit(event, ...args);
  } catch (error) {
    process.emitWarning(`A '${event}' listener threw: ${error instanceof Error ? error.message : String(error)}`);
  }
}
