/**
 * Sealed records: how one direction of an open connection encrypts and authenticates its frames.
 *
 * Frame body (inside the length prefix of `frames.ts`):
 *
 *     counter: uint64 big-endian ‖ XChaCha20-Poly1305(key, nonce(counter), recordType: uint8 ‖ payload)
 *
 *     nonce(counter) = 16 zero bytes ‖ counter as uint64 big-endian            (24 bytes)
 *
 * Each direction has its own key (derived per connection from fresh ephemeral keys, see `handshake.ts`) and
 * its own counter, starting at 0 with the handshake's key-confirmation record and increasing by one per
 * frame, so a (key, nonce) pair is never used twice. The counter travels in clear so that the receiver can
 * tell a replay or reordering (an authentic frame with another counter: {@link FrameReplayError}) from a
 * forgery ({@link FrameAuthenticationError}); it is authenticated through the nonce, and the receiver only
 * ever accepts exactly the next counter. The record type is inside the ciphertext, so it is authenticated
 * and hidden.
 */
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";

import { ConnectionClosedError, FrameAuthenticationError, FrameReplayError, MalformedFrameError } from "./errors";

/** Largest message `send` accepts by default (1 MiB). */
export const MAX_MESSAGE_BYTES = 1 << 20;

export const COUNTER_BYTES = 8;
export const RECORD_TYPE_BYTES = 1;
/** Poly1305 tag. */
export const TAG_BYTES = 16;
export const NONCE_BYTES = 24;
export const KEY_BYTES = 32;
/** Bytes a sealed frame body adds to its payload: counter, record type and tag (25). */
export const SEALED_FRAME_OVERHEAD = COUNTER_BYTES + RECORD_TYPE_BYTES + TAG_BYTES;

/** Record types (first plaintext byte). */
export const RecordType = {
  /** Application bytes, delivered to the `message` listener. */
  data: 0x00,
  /** Sealed close (empty payload): the sender will send nothing more; distinguishes a close from a truncation. */
  close: 0x01,
  /** ChannelOpenAck / ChannelOpenConfirm (canonical JSON): counter 0 of each direction, and only there. */
  keyConfirmation: 0x02,
} as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];

const COUNTER_LIMIT = 1n << 64n;

/** The 24-byte XChaCha20 nonce of frame `counter`: 16 zero bytes, then the counter as uint64 big-endian. */
export function nonceFor(counter: bigint): Uint8Array {
  const nonce = new Uint8Array(NONCE_BYTES);
  new DataView(nonce.buffer).setBigUint64(NONCE_BYTES - COUNTER_BYTES, counter, false);
  return nonce;
}

/** Seals one record as frame `counter` under `key`; returns the frame body. */
export function sealRecord(key: Uint8Array, counter: bigint, type: RecordType, payload: Uint8Array): Uint8Array {
  const plaintext = new Uint8Array(RECORD_TYPE_BYTES + payload.length);
  plaintext[0] = type;
  plaintext.set(payload, RECORD_TYPE_BYTES);
  const sealed = xchacha20poly1305(key, nonceFor(counter)).encrypt(plaintext);
  const body = new Uint8Array(COUNTER_BYTES + sealed.length);
  new DataView(body.buffer).setBigUint64(0, counter, false);
  body.set(sealed, COUNTER_BYTES);
  return body;
}

/** Decrypts `body` as frame `counter`; undefined when the tag does not verify. */
function tryOpen(key: Uint8Array, counter: bigint, body: Uint8Array): Uint8Array | undefined {
  try {
    return xchacha20poly1305(key, nonceFor(counter)).decrypt(body.subarray(COUNTER_BYTES));
  } catch {
    return undefined;
  }
}

/** The sending half of a direction: assigns counters and seals. */
export class RecordSealer {
  private counter = 0n;

  constructor(private readonly key: Uint8Array) {}

  /** Counter the next sealed frame will carry. */
  get nextCounter(): bigint {
    return this.counter;
  }

  seal(type: RecordType, payload: Uint8Array): Uint8Array {
    if (this.counter >= COUNTER_LIMIT) {
      throw new ConnectionClosedError("This direction has used all 2^64 nonces; open a new connection.");
    }
    return sealRecord(this.key, this.counter++, type, payload);
  }
}

export type OpenedRecord = { counter: bigint; type: number; payload: Uint8Array };

/** The receiving half of a direction: accepts exactly the next counter, authentic, once. */
export class RecordOpener {
  private counter = 0n;

  constructor(private readonly key: Uint8Array) {}

  /** Counter the next frame must carry. */
  get expectedCounter(): bigint {
    return this.counter;
  }

  /**
   * Authenticates and decrypts the next frame body. Throws {@link MalformedFrameError} (too short),
   * {@link FrameReplayError} (authentic but out of sequence) or {@link FrameAuthenticationError}; after a
   * throw the direction must be abandoned. The record type is returned unchecked.
   */
  open(body: Uint8Array): OpenedRecord {
    if (body.length < SEALED_FRAME_OVERHEAD) {
      throw new MalformedFrameError(
        `A sealed frame of ${body.length} bytes is shorter than its ${SEALED_FRAME_OVERHEAD}-byte overhead.`,
      );
    }
    const counter = new DataView(body.buffer, body.byteOffset, body.byteLength).getBigUint64(0, false);
    if (counter !== this.counter) {
      // Authentic under its own counter → a genuine frame out of sequence; otherwise a forgery.
      if (tryOpen(this.key, counter, body) !== undefined) throw new FrameReplayError(this.counter, counter);
      throw new FrameAuthenticationError(counter);
    }
    const plaintext = tryOpen(this.key, counter, body);
    if (plaintext === undefined) throw new FrameAuthenticationError(counter);
    this.counter++;
    return { counter, type: plaintext[0]!, payload: plaintext.subarray(RECORD_TYPE_BYTES) };
  }
}
