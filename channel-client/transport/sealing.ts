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
 *
 * Implementation (decision 0023): XChaCha20-Poly1305(key, nonce) is, by definition, ChaCha20-Poly1305 (RFC 8439)
 * under the subkey HChaCha20(key, nonce[0..16]) with the 12-byte nonce 0⁴ ‖ nonce[16..24]. Every nonce here
 * starts with 16 zero bytes, so a direction's subkey is one HChaCha20 (from @noble/ciphers) computed when the
 * direction opens, and each frame is sealed by Node's built-in (OpenSSL) ChaCha20-Poly1305 under the nonce
 * 0⁴ ‖ counter. The frames are byte-identical to @noble/ciphers' `xchacha20poly1305` (known-answer tests).
 */
import { createCipheriv, createDecipheriv } from "node:crypto";
import { hchacha } from "@noble/ciphers/chacha.js";

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
  /**
   * Several application messages sealed as one record, on connections opened at handshake version 2 or
   * later ({@link encodeDataBatch}): delivered in order, exactly as if each had come in its own data record.
   */
  dataBatch: 0x03,
} as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];

const COUNTER_LIMIT = 1n << 64n;

/** The 24-byte XChaCha20 nonce of frame `counter`: 16 zero bytes, then the counter as uint64 big-endian. */
export function nonceFor(counter: bigint): Uint8Array {
  const nonce = new Uint8Array(NONCE_BYTES);
  new DataView(nonce.buffer).setBigUint64(NONCE_BYTES - COUNTER_BYTES, counter, false);
  return nonce;
}

/** "expand 32-byte k", the ChaCha constants HChaCha20 starts from. */
const SIGMA = new Uint32Array([0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]);

/** HChaCha20(key, 0¹⁶): the ChaCha20 key of every frame sealed under `key` (their nonces start with 16 zero bytes). */
export function frameSubkey(key: Uint8Array): Buffer {
  if (key.length !== KEY_BYTES) throw new RangeError(`A frame key is ${KEY_BYTES} bytes, not ${key.length}.`);
  const k = new Uint32Array(8);
  const view = Buffer.from(key.buffer, key.byteOffset, key.byteLength);
  for (let i = 0; i < 8; i++) k[i] = view.readUInt32LE(4 * i);
  const out = new Uint32Array(8);
  hchacha(SIGMA, k, new Uint32Array(4), out);
  const subkey = Buffer.alloc(KEY_BYTES);
  for (let i = 0; i < 8; i++) subkey.writeUInt32LE(out[i]!, 4 * i);
  return subkey;
}

/** The RFC 8439 nonce of frame `counter` under the subkey: 4 zero bytes, then the counter as uint64 big-endian. */
function ietfNonce(counter: bigint): Buffer {
  const nonce = Buffer.alloc(12);
  nonce.writeBigUInt64BE(counter, 4);
  return nonce;
}

const TYPE_BYTE = [Buffer.from([0]), Buffer.from([1]), Buffer.from([2]), Buffer.from([3])];

/** Bytes of each message's length prefix inside a data-batch record. */
export const BATCH_LENGTH_BYTES = 4;

/**
 * Largest data-batch payload, sent or accepted (64 KiB). It bounds what one record can unpack into: at most
 * 16,384 messages (empty ones) however large `maxMessageBytes` is, so the inbox limit, checked between
 * records, keeps a peer's batches from growing the receiver's memory much beyond what they occupied on the wire.
 */
export const MAX_BATCH_PAYLOAD_BYTES = 64 * 1024;

/**
 * The payload of a data-batch record: each message as uint32 big-endian length ‖ bytes, in order. A batch
 * holds at least two messages (one message travels as a data record, so that it has one encoding only).
 */
export function encodeDataBatch(messages: readonly Uint8Array[]): Buffer {
  if (messages.length < 2) throw new RangeError(`A data batch holds at least two messages, not ${messages.length}.`);
  let total = 0;
  for (const message of messages) total += BATCH_LENGTH_BYTES + message.length;
  const payload = Buffer.allocUnsafe(total);
  let at = 0;
  for (const message of messages) {
    payload.writeUInt32BE(message.length, at);
    payload.set(message, at + BATCH_LENGTH_BYTES);
    at += BATCH_LENGTH_BYTES + message.length;
  }
  return payload;
}

/**
 * The messages of a data-batch payload, as views into it. Throws {@link MalformedFrameError} unless the
 * payload is at most {@link MAX_BATCH_PAYLOAD_BYTES} and two or more length-prefixed messages of at most
 * `maxMessageBytes` each that fill it exactly;
 * nothing is returned from a batch that fails anywhere, so a malformed batch delivers no message at all.
 */
export function decodeDataBatch(payload: Uint8Array, maxMessageBytes: number): Uint8Array[] {
  if (payload.length > MAX_BATCH_PAYLOAD_BYTES) {
    throw new MalformedFrameError(`A data batch of ${payload.length} bytes is larger than the ${MAX_BATCH_PAYLOAD_BYTES} a batch may hold.`);
  }
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const messages: Uint8Array[] = [];
  let at = 0;
  while (at < payload.length) {
    if (payload.length - at < BATCH_LENGTH_BYTES) {
      throw new MalformedFrameError(`A data batch ends with ${payload.length - at} bytes where a 4-byte length was due.`);
    }
    const length = view.getUint32(at, false);
    if (length > maxMessageBytes) {
      throw new MalformedFrameError(`A data batch holds a message of ${length} bytes; messages are at most ${maxMessageBytes}.`);
    }
    const start = at + BATCH_LENGTH_BYTES;
    if (length > payload.length - start) {
      throw new MalformedFrameError(`A data batch announces a message of ${length} bytes but only ${payload.length - start} remain.`);
    }
    messages.push(payload.subarray(start, start + length));
    at = start + length;
  }
  if (messages.length < 2) {
    throw new MalformedFrameError(`A data batch holds at least two messages; this one holds ${messages.length}.`);
  }
  return messages;
}

/** Seals with the subkey already derived (the hot path). */
function sealWithSubkey(subkey: Buffer, counter: bigint, type: RecordType, payload: Uint8Array): Uint8Array {
  const cipher = createCipheriv("chacha20-poly1305", subkey, ietfNonce(counter), { authTagLength: TAG_BYTES });
  const body = Buffer.allocUnsafe(COUNTER_BYTES + RECORD_TYPE_BYTES + payload.length + TAG_BYTES);
  body.writeBigUInt64BE(counter, 0);
  cipher.update(TYPE_BYTE[type] ?? Buffer.from([type])).copy(body, COUNTER_BYTES);
  cipher.update(payload).copy(body, COUNTER_BYTES + RECORD_TYPE_BYTES);
  cipher.final();
  cipher.getAuthTag().copy(body, body.length - TAG_BYTES);
  return body;
}

/** Decrypts `body` as frame `counter` under the subkey; undefined when the tag does not verify. */
function openWithSubkey(subkey: Buffer, counter: bigint, body: Uint8Array): Uint8Array | undefined {
  const sealed = Buffer.from(body.buffer, body.byteOffset + COUNTER_BYTES, body.byteLength - COUNTER_BYTES);
  const decipher = createDecipheriv("chacha20-poly1305", subkey, ietfNonce(counter), { authTagLength: TAG_BYTES });
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  const plaintext = decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES));
  try {
    decipher.final();
  } catch {
    return undefined;
  }
  return plaintext;
}

/** Seals one record as frame `counter` under `key`; returns the frame body. */
export function sealRecord(key: Uint8Array, counter: bigint, type: RecordType, payload: Uint8Array): Uint8Array {
  return sealWithSubkey(frameSubkey(key), counter, type, payload);
}

/** The sending half of a direction: assigns counters and seals. */
export class RecordSealer {
  private counter = 0n;
  private readonly subkey: Buffer;

  constructor(key: Uint8Array) {
    this.subkey = frameSubkey(key);
  }

  /** Counter the next sealed frame will carry. */
  get nextCounter(): bigint {
    return this.counter;
  }

  seal(type: RecordType, payload: Uint8Array): Uint8Array {
    if (this.counter >= COUNTER_LIMIT) {
      throw new ConnectionClosedError("This direction has used all 2^64 nonces; open a new connection.");
    }
    return sealWithSubkey(this.subkey, this.counter++, type, payload);
  }
}

export type OpenedRecord = { counter: bigint; type: number; payload: Uint8Array };

/** The receiving half of a direction: accepts exactly the next counter, authentic, once. */
export class RecordOpener {
  private counter = 0n;
  private readonly subkey: Buffer;

  constructor(key: Uint8Array) {
    this.subkey = frameSubkey(key);
  }

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
      if (openWithSubkey(this.subkey, counter, body) !== undefined) throw new FrameReplayError(this.counter, counter);
      throw new FrameAuthenticationError(counter);
    }
    const plaintext = openWithSubkey(this.subkey, counter, body);
    if (plaintext === undefined) throw new FrameAuthenticationError(counter);
    this.counter++;
    return { counter, type: plaintext[0]!, payload: plaintext.subarray(RECORD_TYPE_BYTES) };
  }
}
