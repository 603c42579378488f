/**
 * keccak256 for the hot paths (Merkle nodes, receipt leaves, artifact ids): hash-wasm's WebAssembly
 * keccak, about five times faster than the pure-JS one on 32- to 96-byte inputs. The WebAssembly module
 * compiles asynchronously when this module loads; until it is ready (and if it ever fails to load) the
 * same digest comes from @noble/hashes, so results never depend on which one ran.
 */
import { keccak_256 } from "@noble/hashes/sha3.js";
import { createKeccak, type IHasher } from "hash-wasm";
import type { Hex } from "viem";

let wasm: IHasher | undefined;

/** Settles once the WebAssembly hasher is ready (or failed to load, in which case the JS one stays). */
export const fastKeccakReady: Promise<void> = createKeccak(256).then(
  (hasher) => {
    wasm = hasher;
  },
  () => undefined,
);

/** keccak256 of `data` as 32 fresh bytes. */
export function keccak256Bytes(data: Uint8Array): Uint8Array {
  const hasher = wasm;
  if (hasher === undefined) return keccak_256(data);
  hasher.init();
  hasher.update(data);
  return hasher.digest("binary");
}

/** keccak256 of `data` as 0x-prefixed lowercase hex (hash-wasm writes the hex itself: no digest copy, no Buffer). */
export function keccak256Hex(data: Uint8Array): Hex {
  const hasher = wasm;
  if (hasher === undefined) return `0x${Buffer.from(keccak_256(data)).toString("hex")}`;
  hasher.init();
  hasher.update(data);
  return `0x${hasher.digest("hex")}`;
}

/**
 * One buffer the text hashes below write their UTF-8 into (hashing is synchronous, so calls cannot interleave):
 * `TextEncoder.encode` allocates a fresh backing store per call: 1.1–1.5 µs for a 550-byte text here, against
 * 0.2 µs to write it into this buffer (issue 31). It grows to the longest text hashed.
 */
let textScratch = Buffer.allocUnsafeSlow(4096);

/** The UTF-8 of `text` in the scratch buffer: valid until the next call. */
function scratchUtf8(text: string): Uint8Array {
  const most = 3 * text.length; // UTF-8 takes at most 3 bytes per UTF-16 code unit (a surrogate pair's 4 for 2 units)
  if (most > textScratch.length) textScratch = Buffer.allocUnsafeSlow(Math.max(most, 2 * textScratch.length));
  return textScratch.subarray(0, textScratch.write(text, 0, "utf8"));
}

/** keccak256 of `text`'s UTF-8 as 0x-prefixed hex (what `keccak256Hex(new TextEncoder().encode(text))` gives). */
export function keccak256TextHex(text: string): Hex {
  return keccak256Hex(scratchUtf8(text));
}

/** keccak256 of `text`'s UTF-8 as 32 fresh bytes. */
export function keccak256TextBytes(text: string): Uint8Array {
  return keccak256Bytes(scratchUtf8(text));
}

/**
 * `text`'s UTF-8 as a Buffer of its own (a Uint8Array): what `TextEncoder.encode` gives, but a short text's bytes
 * come from Node's buffer pool instead of a backing store allocated per call (the hot path's packets and outputs).
 */
export function utf8Bytes(text: string): Uint8Array {
  return Buffer.from(text, "utf8");
}

/** 32 bytes from 0x-prefixed hex that the caller already validated (Node's native hex decoder). */
export function hashBytes(hex: Hex): Uint8Array {
  return Buffer.from(hex.slice(2), "hex");
}

/**
 * Writes `hex` (0x-prefixed) as exactly `bytes` bytes at `offset` of a reused buffer: never past the field,
 * and a short or malformed value leaves zeros after what it wrote, as a fresh buffer would — so one bad
 * value can never leave bytes behind for the next digest written into the same buffer.
 */
export function writeHexField(buffer: Buffer, hex: string, offset: number, bytes: number): void {
  const written = buffer.write(hex.slice(2), offset, bytes, "hex");
  if (written !== bytes) buffer.fill(0, offset + written, offset + bytes);
}
