/**
 * Length-prefixed framing over a byte stream (TCP):
 *
 *     frame = length: uint32 big-endian ‖ body: `length` bytes
 *
 * {@link FrameDecoder} reassembles frames from chunks split at arbitrary boundaries (one byte at a time
 * works) and refuses an announced length above its limit as soon as the 4-byte prefix is complete, before
 * buffering or allocating any of the body. A body is then buffered only as its bytes arrive, in a buffer
 * that grows geometrically up to the announced length, so memory tracks what the peer actually sent.
 */
import { FrameTooLargeError } from "./errors";
import { MAX_MESSAGE_BYTES, SEALED_FRAME_OVERHEAD } from "./sealing";

/** Bytes of the length prefix. */
export const FRAME_HEADER_BYTES = 4;

/** Largest body the uint32 prefix can describe. */
const UINT32_MAX = 0xffff_ffff;

/** Default limit: a maximal message once sealed (1 MiB of data + counter, record type and AEAD tag). */
export const DEFAULT_MAX_FRAME_BYTES = MAX_MESSAGE_BYTES + SEALED_FRAME_OVERHEAD;

/** First allocation for a body that arrives in pieces; doubled as needed up to the announced length. */
const INITIAL_BODY_CAPACITY = 4096;

/** Prefixes `body` with its length. */
export function encodeFrame(body: Uint8Array): Uint8Array {
  if (body.length > UINT32_MAX) throw new FrameTooLargeError(body.length, UINT32_MAX);
  const frame = new Uint8Array(FRAME_HEADER_BYTES + body.length);
  new DataView(frame.buffer).setUint32(0, body.length, false);
  frame.set(body, FRAME_HEADER_BYTES);
  return frame;
}

export type FrameDecoderParameters = {
  /** Largest body accepted; larger announced lengths throw {@link FrameTooLargeError}. */
  maxFrameBytes?: number;
};

/**
 * Streaming decoder: `push` each received chunk and get back the frames it completed, in order.
 * After it has thrown once, every later `push` throws the same error: the stream is unrecoverable.
 */
export class FrameDecoder {
  /** May be changed between pushes (the transport lowers it while the peer is unauthenticated). */
  maxFrameBytes: number;

  private readonly header = new Uint8Array(FRAME_HEADER_BYTES);
  private headerFilled = 0;
  /** Announced length of the frame being read, once its prefix is complete. */
  private bodyLength: number | undefined;
  private body = new Uint8Array(0);
  private bodyFilled = 0;
  private failure: FrameTooLargeError | undefined;

  constructor(parameters: FrameDecoderParameters = {}) {
    this.maxFrameBytes = parameters.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
  }

  /** Bytes received but not yet returned as a frame (prefix included). */
  get bufferedBytes(): number {
    return this.bodyLength === undefined ? this.headerFilled : FRAME_HEADER_BYTES + this.bodyFilled;
  }

  /** Consumes `chunk`; returns the frames it completed. The caller may reuse `chunk` afterwards. */
  push(chunk: Uint8Array): Uint8Array[] {
    if (this.failure) throw this.failure;
    const frames: Uint8Array[] = [];
    let offset = 0;
    while (offset < chunk.length) {
      if (this.bodyLength === undefined) {
        const n = Math.min(FRAME_HEADER_BYTES - this.headerFilled, chunk.length - offset);
        this.header.set(chunk.subarray(offset, offset + n), this.headerFilled);
        this.headerFilled += n;
        offset += n;
        if (this.headerFilled < FRAME_HEADER_BYTES) break;
        this.headerFilled = 0;
        const length = new DataView(this.header.buffer).getUint32(0, false);
        if (length > this.maxFrameBytes) {
          this.failure = new FrameTooLargeError(length, this.maxFrameBytes);
          throw this.failure;
        }
        if (length === 0) {
          frames.push(new Uint8Array(0));
          continue;
        }
        // Fast path: the whole body is in this chunk; copy it out (a plain Uint8Array, never a view that
        // would pin a socket's Buffer) without an intermediate buffer.
        if (chunk.length - offset >= length) {
          frames.push(new Uint8Array(chunk.subarray(offset, offset + length)));
          offset += length;
          continue;
        }
        this.bodyLength = length;
        this.body = new Uint8Array(Math.min(length, INITIAL_BODY_CAPACITY));
        this.bodyFilled = 0;
      }
      const n = Math.min(this.bodyLength - this.bodyFilled, chunk.length - offset);
      this.reserve(this.bodyFilled + n);
      this.body.set(chunk.subarray(offset, offset + n), this.bodyFilled);
      this.bodyFilled += n;
      offset += n;
      if (this.bodyFilled === this.bodyLength) {
        frames.push(this.body.length === this.bodyLength ? this.body : this.body.slice(0, this.bodyLength));
        this.bodyLength = undefined;
        this.body = new Uint8Array(0);
        this.bodyFilled = 0;
      }
    }
    return frames;
  }

  /** Grows the body buffer to hold `needed` bytes: doubling, never beyond the announced length. */
  private reserve(needed: number): void {
    if (needed <= this.body.length) return;
    const grown = new Uint8Array(Math.min(this.bodyLength!, Math.max(needed, this.body.length * 2)));
    grown.set(this.body.subarray(0, this.bodyFilled));
    this.body = grown;
  }
}
