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
