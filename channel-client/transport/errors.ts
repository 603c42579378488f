/**
 * Typed errors of the payer ↔ provider transport. Like every error of the channel client they extend
 * {@link BaseError} and carry a literal `name` equal to the class name, so callers can match on
 * `err.name` without `instanceof` across module copies.
 *
 * Which error means what:
 * - before the connection is open: {@link HandshakeError} (the peer is not who it must be, refused, or sent
 *   a malformed message — the validation error is the `cause`), {@link KeyConfirmationError} (the two sides
 *   derived different keys), {@link HandshakeTimeoutError};
 * - at any time: {@link FrameTooLargeError}, {@link MalformedFrameError};
 * - on an open connection: {@link FrameAuthenticationError}, {@link FrameReplayError},
 *   {@link ConnectionClosedError}, {@link SendBufferFullError}.
 */
import { BaseError } from "../core/errors";

/** A length prefix announced a frame larger than the receiver accepts; refused before any body is buffered. */
export class FrameTooLargeError extends BaseError {
  override name = "FrameTooLargeError" as const;
  constructor(readonly size: number, readonly limit: number) {
    super(`A frame of ${size} bytes was announced; this connection accepts frames of at most ${limit} bytes.`, {
      details: "The connection is closed: a peer that ignores the size limit is faulty or hostile.",
    });
  }
}

/** A frame is shorter than its fixed header, or carries a record type that is not allowed at this point. */
export class MalformedFrameError extends BaseError {
  override name = "MalformedFrameError" as const;
}

/** The authentication tag of a sealed frame did not verify: the frame was tampered with or forged. */
export class FrameAuthenticationError extends BaseError {
  override name = "FrameAuthenticationError" as const;
  constructor(readonly counter: bigint) {
    super(`Sealed frame ${counter} failed authentication (tampered or forged); nothing from it was delivered.`, {
      details: "The connection is closed.",
    });
  }
}

/**
 * An authentic frame arrived out of sequence: replayed (counter below the next expected one), or reordered
 * or preceded by a dropped frame (counter above it).
 */
export class FrameReplayError extends BaseError {
  override name = "FrameReplayError" as const;
  constructor(readonly expected: bigint, readonly received: bigint) {
    super(
      `Expected sealed frame ${expected} but received frame ${received} ` +
        `(${received < expected ? "a replay" : "reordered, or an earlier frame was dropped"}).`,
      { details: "Frames must arrive exactly once and in order; the connection is closed." },
    );
  }
}

/**
 * The handshake failed: a message is malformed (its validation error is the `cause`), signed by a key other
 * than the expected one, refused by the responder's `authorize`, or the peer closed the connection.
 */
export class HandshakeError extends BaseError {
  override name = "HandshakeError" as const;
}

/** The peer's ChannelOpenAck / ChannelOpenConfirm did not prove it derived the same keys and transcript. */
export class KeyConfirmationError extends BaseError {
  override name = "KeyConfirmationError" as const;
}

/** The handshake did not complete within the allowed time. */
export class HandshakeTimeoutError extends BaseError {
  override name = "HandshakeTimeoutError" as const;
  constructor(readonly timeoutMs: number, readonly stage: string) {
    super(`The handshake did not complete within ${timeoutMs} ms (stalled ${stage}).`, {
      details: "The connection is closed.",
    });
  }
}

/**
 * The connection is closed or failed: `send` after `close`, the TCP connection reset, or the peer ended the
 * TCP stream without a sealed close (a truncation an attacker could also cause).
 */
export class ConnectionClosedError extends BaseError {
  override name = "ConnectionClosedError" as const;
}

/**
 * More sealed bytes are waiting in the socket than `maxBufferedBytes`: the caller sent without awaiting
 * `send()`. The message was not sent and the connection stays open; await each `send()` instead.
 */
export class SendBufferFullError extends BaseError {
  override name = "SendBufferFullError" as const;
  constructor(readonly buffered: number, readonly limit: number) {
    super(
      `${buffered} bytes are already waiting to be written; the limit is ${limit}. Await send() before sending more.`,
    );
  }
}

/** Every error the transport emits or rejects with. */
export type TransportError =
  | FrameTooLargeError
  | MalformedFrameError
  | FrameAuthenticationError
  | FrameReplayError
  | HandshakeError
  | KeyConfirmationError
  | HandshakeTimeoutError
  | ConnectionClosedError
  | SendBufferFullError;
