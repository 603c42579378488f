/**
 * The handshake's socket reader and deadline, shared by both ends (`connect.ts`, the initiator; `secure-server.ts`,
 * the responder): complete frames queued one read at a time, one failure for EOF, socket and decoder errors, and the
 * key-confirmation record each side opens last.
 */

import * as net from "node:net";
import type { Hex } from "viem";

import { BaseError } from "../core/errors";
import {
  ConnectionClosedError,
  HandshakeError,
  HandshakeTimeoutError,
  KeyConfirmationError,
  type TransportError,
} from "./errors";
import { FrameDecoder } from "./frames";
import {
  checkKeyConfirmation,
  type KeyConfirmationType,
} from "./handshake";
import {
  RecordOpener,
  RecordType,
} from "./sealing";


// --- Handshake I/O ---------------------------------------------------------------------------------------

/**
 * Reads frames for the handshake: queues complete frames (pausing the socket while any wait unread, so at
 * most one socket read is buffered), turns EOF, socket errors and decoder errors into one failure.
 */
export class HandshakeIo {
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
export function asTransportError(error: unknown): TransportError {
  if (error instanceof BaseError && TRANSPORT_ERROR_NAMES.has(error.name)) return error as TransportError;
  const reason = error instanceof BaseError ? error.shortMessage : "an unexpected error";
  return new HandshakeError(`The handshake failed: ${reason}`, { cause: error });
}

/** Runs `body` against `io` with a deadline; on any failure the socket is destroyed and the first error thrown. */
export async function runHandshake<T>(io: HandshakeIo, timeoutMs: number, body: () => Promise<T>): Promise<T> {
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
export function openKeyConfirmation(opener: RecordOpener, frame: Uint8Array, type: KeyConfirmationType, transcript: Hex): void {
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
