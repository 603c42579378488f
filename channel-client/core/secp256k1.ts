/**
 * The secp256k1 backend every signature the nodes make or check goes through (decision 0023).
 *
 *   - `native` (the default): libsecp256k1, the library Bitcoin Core and the Ethereum clients use, through
 *     the N-API binding of the `secp256k1` package (pinned; its linux-x64, darwin-arm64 and win32-x64
 *     builds ship inside the package). It is loaded through `secp256k1/bindings`, never the package's main
 *     entry, which silently falls back to `elliptic` (pure JavaScript, slower, not constant-time) when the
 *     native build is missing: here a missing build is a {@link CryptoBackendUnavailableError}.
 *   - `noble`: `@noble/curves` (pure JavaScript, audited, about 20 times slower): the documented fall-back
 *     for platforms without the native build, chosen explicitly with `IOI_SECP256K1_BACKEND=noble` or
 *     {@link selectSecp256k1Backend} — never silently.
 *
 * Both backends sign with RFC 6979 deterministic nonces and no extra entropy, low-s, exactly as viem's
 * `sign` does, so a signature is byte-for-byte the same whichever backend made it. Both check a signature by
 * public-key recovery with the recovery id v − 27 (v ∈ {27, 28}), which is what the EVM's `ecrecover`
 * computes; the low-s and v rules of the contract (OpenZeppelin `ECDSA.tryRecover`) are applied by the
 * caller (`eip712.ts`). The backend is chosen once, on first use, and a self-test (a known-answer signature
 * and its recovery) runs before it is used.
 */
import { secp256k1 as noble } from "@noble/curves/secp256k1.js";

import { BaseError } from "./errors";

/** No usable backend: the native build is missing or failed its self-test, or the configuration names none. */
export class CryptoBackendUnavailableError extends BaseError {
  override name = "CryptoBackendUnavailableError" as const;
}

export type Secp256k1BackendName = "native" | "noble";

export type Secp256k1Backend = {
  readonly name: Secp256k1BackendName;
  /** Human-readable implementation, e.g. "libsecp256k1 (secp256k1@5.0.2, N-API)". */
  readonly implementation: string;
  /** 64-byte r ‖ s (low-s) and the recovery id (0 or 1) of `digest` (32 bytes) under `privateKey`. */
  sign(digest: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recovery: number };
  /**
   * The 65-byte uncompressed public key (0x04 ‖ x ‖ y) that `ecrecover` finds for `signature` (64-byte
   * r ‖ s, each in [1, n)) over `digest` with recovery id `recovery` (0 or 1), or undefined if none.
   */
  recover(digest: Uint8Array, signature: Uint8Array, recovery: number): Uint8Array | undefined;
  /** 65-byte uncompressed public key of `privateKey`. */
  publicKey(privateKey: Uint8Array): Uint8Array;
};

/** The N-API surface of `secp256k1/bindings` this module uses. */
type NativeBinding = {
  ecdsaSign(message: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recid: number };
  ecdsaRecover(signature: Uint8Array, recid: number, message: Uint8Array, compressed: boolean): Uint8Array;
  publicKeyCreate(privateKey: Uint8Array, compressed: boolean): Uint8Array;
};

function nativeBackend(): Secp256k1Backend {
  let binding: NativeBinding;
  let version = "?";
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    binding = require("secp256k1/bindings") as NativeBinding;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    version = (require("secp256k1/package.json") as { version: string }).version;
  } catch (cause) {
    throw new CryptoBackendUnavailableError(
      `libsecp256k1's native build for ${process.platform}-${process.arch} could not be loaded; set IOI_SECP256K1_BACKEND=noble to use the pure-JavaScript @noble/curves instead (about 20 times slower).`,
      { cause },
    );
  }
  return {
    name: "native",
    implementation: `libsecp256k1 (secp256k1@${version}, N-API)`,
    sign(digest, privateKey) {
      const { signature, recid } = binding.ecdsaSign(digest, privateKey);
      return { signature, recovery: recid };
    },
    recover(digest, signature, recovery) {
      try {
        return binding.ecdsaRecover(signature, recovery, digest, false);
      } catch {
        return undefined; // no point with x = r, or r/s out of range: ecrecover returns 0 too
      }
    },
    publicKey(privateKey) {
      return binding.publicKeyCreate(privateKey, false);
    },
  };
}

function nobleBackend(): Secp256k1Backend {
  return {
    name: "noble",
    implementation: "@noble/curves (pure JavaScript)",
    sign(digest, privateKey) {
      // The options viem's `sign` uses: RFC 6979 without extra entropy, low-s.
      const recovered = noble.sign(digest, privateKey, { prehash: false, lowS: true, extraEntropy: false, format: "recovered" });
      return { signature: recovered.subarray(1), recovery: recovered[0]! };
    },
    recover(digest, signature, recovery) {
      try {
        const recovered = new Uint8Array(65);
        recovered[0] = recovery;
        recovered.set(signature, 1);
        return noble.Point.fromBytes(noble.recoverPublicKey(recovered, digest, { prehash: false })).toBytes(false);
      } catch {
        return undefined;
      }
    },
    publicKey(privateKey) {
      return noble.getPublicKey(privateKey, false);
    },
  };
}

/**
 * Known answer (checked at selection): private key 1, digest keccak256("") — signature and recovery computed
 * by viem's `sign` (noble) and pinned, so a backend that disagrees with viem by one bit never gets used.
 */
const SELF_TEST = {
  privateKey: "0000000000000000000000000000000000000000000000000000000000000001",
  digest: "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470",
  signature:
    "03925438bf9bdfed9cb8d9d9467f8fc624f389846f0db71f4f5c84b483077da62ca68cb1027ace392bc6a84fe0ba29288aa07942f571f56201dd33c009ee3886",
  recovery: 1,
} as const;

function selfTest(backend: Secp256k1Backend): void {
  const key = Buffer.from(SELF_TEST.privateKey, "hex");
  const digest = Buffer.from(SELF_TEST.digest, "hex");
  const { signature, recovery } = backend.sign(digest, key);
  const recovered = backend.recover(digest, signature, recovery);
  const publicKey = backend.publicKey(key);
  const ok =
    Buffer.from(signature).toString("hex") === SELF_TEST.signature &&
    recovery === SELF_TEST.recovery &&
    recovered !== undefined &&
    Buffer.from(recovered).equals(Buffer.from(publicKey)) &&
    // A tampered digest must not recover the same key.
    !Buffer.from(backend.recover(Buffer.alloc(32, 7), signature, recovery) ?? []).equals(Buffer.from(publicKey));
  if (!ok) throw new CryptoBackendUnavailableError(`The secp256k1 backend ${backend.implementation} failed its start-up self-test; it is not used.`);
}

let selected: Secp256k1Backend | undefined;

function build(name: string): Secp256k1Backend {
  if (name === "native") return nativeBackend();
  if (name === "noble") return nobleBackend();
  throw new CryptoBackendUnavailableError(`IOI_SECP256K1_BACKEND is "${name}"; it must be "native" (libsecp256k1) or "noble" (@noble/curves).`);
}

/** Chooses the backend explicitly (for tests, benches and platforms without the native build); self-tests it. */
export function selectSecp256k1Backend(name: Secp256k1BackendName): Secp256k1Backend {
  const backend = build(name);
  selfTest(backend);
  selected = backend;
  return backend;
}

/** The backend in use: `IOI_SECP256K1_BACKEND` (default `native`), loaded and self-tested on first call. */
export function secp256k1Backend(): Secp256k1Backend {
  if (selected) return selected;
  const backend = build(process.env.IOI_SECP256K1_BACKEND?.trim() || "native");
  selfTest(backend);
  selected = backend;
  return backend;
}

/** Builds a backend without selecting it (the bench compares them side by side). */
export function loadSecp256k1Backend(name: Secp256k1BackendName): Secp256k1Backend {
  const backend = build(name);
  selfTest(backend);
  return backend;
}
