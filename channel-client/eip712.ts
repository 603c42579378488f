/**
 * The EIP-712 definitions the GasEscrow verifies, defined once here and mirrored in
 * `contracts/GasEscrow.sol` (a test proves the type hashes and digests are equal).
 */
import { invert } from "@noble/curves/abstract/modular.js";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import {
  hashTypedData,
  recoverPublicKey,
  keccak256,
  parseSignature,
  recoverAddress,
  serializeSignature,
  signatureToCompactSignature,
  stringToBytes,
  type Address,
  type Hex,
  type LocalAccount,
} from "viem";

import { InvalidSignatureError } from "./errors";

export const GAS_ESCROW_DOMAIN_NAME = "IOI GasEscrow";
export const GAS_ESCROW_DOMAIN_VERSION = "1";

export type GasEscrowDomain = {
  name: typeof GAS_ESCROW_DOMAIN_NAME;
  version: typeof GAS_ESCROW_DOMAIN_VERSION;
  chainId: number;
  verifyingContract: Address;
};

/** The domain every channel signature is bound to: this chain and this deployment of the GasEscrow. */
export function gasEscrowDomain(parameters: { chainId: number; verifyingContract: Address }): GasEscrowDomain {
  return {
    name: GAS_ESCROW_DOMAIN_NAME,
    version: GAS_ESCROW_DOMAIN_VERSION,
    chainId: parameters.chainId,
    verifyingContract: parameters.verifyingContract,
  };
}

/**
 * Field widths and why they suffice: `seq` is uint64 (2^64 tickets outlasts any channel), amounts are
 * uint128 (beyond any token's supply); in TypeScript both are bigint, in JSON decimal strings.
 */
export const eip712Types = {
  Session: [
    { name: "payer", type: "address" },
    { name: "provider", type: "address" },
    { name: "funder", type: "address" },
    { name: "asset", type: "address" },
    { name: "termsHash", type: "bytes32" },
    { name: "policyHash", type: "bytes32" },
    { name: "challengeDuration", type: "uint64" },
    { name: "nonce", type: "uint64" },
    { name: "openedAt", type: "uint64" },
  ],
  PaymentTicket: [
    { name: "sessionId", type: "bytes32" },
    { name: "provider", type: "address" },
    { name: "termsHash", type: "bytes32" },
    { name: "seq", type: "uint64" },
    { name: "cumulativeAmount", type: "uint128" },
    { name: "receiptRoot", type: "bytes32" },
  ],
  SettlementSummary: [
    { name: "sessionId", type: "bytes32" },
    { name: "provider", type: "address" },
    { name: "payer", type: "address" },
    { name: "termsHash", type: "bytes32" },
    { name: "finalSeq", type: "uint64" },
    { name: "finalAmount", type: "uint128" },
    { name: "finalReceiptRoot", type: "bytes32" },
    { name: "mode", type: "uint8" },
  ],
} as const;

export type Eip712PrimaryType = keyof typeof eip712Types;

/** `keccak256(encodeType(primaryType))`; every type here is flat, so encodeType is one struct. */
export function typeHash(primaryType: Eip712PrimaryType): Hex {
  const fields = eip712Types[primaryType].map((f) => `${f.type} ${f.name}`).join(",");
  return keccak256(stringToBytes(`${primaryType}(${fields})`));
}

/** The EIP-712 digest of `message` as `primaryType` in `domain`. */
export function hashTyped<T extends Eip712PrimaryType>(
  domain: GasEscrowDomain,
  primaryType: T,
  message: Record<string, unknown>,
): Hex {
  return hashTypedData({ domain, types: eip712Types, primaryType, message } as Parameters<typeof hashTypedData>[0]);
}

/** secp256k1 group order n and n/2: a signature with s > n/2 is the malleable twin of a low-s one. */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const SECP256K1_HALF_N = SECP256K1_N >> 1n;

/** Signs a digest with a local key; noble always produces the low-s form. */
export async function signDigest(account: LocalAccount, digest: Hex): Promise<Hex> {
  if (!account.sign) throw new InvalidSignatureError("This account cannot sign raw digests.");
  return account.sign({ hash: digest });
}

/**
 * Recovers the signer of `digest`, refusing malformed and high-s signatures so that one signer has exactly
 * one accepted signature per digest, as on-chain.
 */
export async function recoverDigestSigner(digest: Hex, signature: Hex): Promise<Address> {
  assertCanonicalV(signature);
  let parsed: ReturnType<typeof parseSignature>;
  try {
    parsed = parseSignature(signature);
  } catch (cause) {
    throw new InvalidSignatureError("The signature is not a 65-byte secp256k1 signature.", { cause });
  }
  const s = BigInt(parsed.s);
  const r = BigInt(parsed.r);
  if (r === 0n || r >= SECP256K1_N || s === 0n || s >= SECP256K1_N) {
    throw new InvalidSignatureError("The signature's r or s is outside the curve order.");
  }
  if (s > SECP256K1_HALF_N) {
    throw new InvalidSignatureError("The signature has a high s value (malleable form); only low-s signatures are accepted.");
  }
  try {
    return await recoverAddress({ hash: digest, signature });
  } catch (cause) {
    throw new InvalidSignatureError("The signature does not recover to any address.", { cause });
  }
}

/**
 * A 65-byte signature ends in v = 27 or 28 (0x1b, 0x1c). The same signature with v = 0 or 1 recovers the
 * same key, so accepting both would give one signer two spellings of one signature; ecrecover on-chain
 * takes only 27/28.
 */
function assertCanonicalV(signature: Hex): void {
  const v = typeof signature === "string" && signature.length === 132 ? signature.slice(130).toLowerCase() : undefined;
  if (v !== undefined && v !== "1b" && v !== "1c") {
    throw new InvalidSignatureError(`The signature's v is 0x${v}; only 27 or 28 (0x1b, 0x1c) is accepted.`);
  }
}

/**
 * Public keys of signers already seen, by lowercase address. A channel checks thousands of signatures by
 * the same two keys: verifying against the known key skips public-key recovery, the dearer half.
 */
const knownKeys = new Map<string, ReturnType<typeof secp256k1.Point.fromHex>>();

/**
 * ECDSA verification against a known public key that also checks the recovery bit, so that it accepts
 * exactly the signatures `ecrecover` (and so the contract) attributes to that key: R = u1·G + u2·Q must
 * have x = r (not merely r mod n) and the y parity the signature's v claims.
 */
function verifiesFor(publicKey: ReturnType<typeof secp256k1.Point.fromHex>, digest: Hex, signature: Hex): boolean {
  const { r, s, yParity } = parseSignature(signature);
  const rn = BigInt(r);
  const sn = BigInt(s);
  if (rn === 0n || rn >= SECP256K1_N || sn === 0n || sn > SECP256K1_HALF_N) return false;
  const w = invert(sn, SECP256K1_N);
  const z = BigInt(digest) % SECP256K1_N;
  // Two separate multiplications, each through its point's precomputed window table (the generator's and
  // the learned key's): about twice as fast as one joint multiplication without the key's table.
  const point = secp256k1.Point.BASE.multiplyUnsafe((z * w) % SECP256K1_N).add(publicKey.multiplyUnsafe((rn * w) % SECP256K1_N));
  if (point.is0()) return false;
  const { x, y } = point.toAffine();
  return x === rn && Number(y & 1n) === yParity;
}

/**
 * Throws {@link InvalidSignatureError} naming `role` unless `expected` made `signature` over `digest`
 * (low-s only). The first signature of a signer is recovered (which also learns its public key); later
 * ones are verified against that key.
 */
export async function assertDigestSigner(
  digest: Hex,
  signature: Hex,
  expected: Address,
  role: string,
): Promise<void> {
  assertCanonicalV(signature);
  const key = knownKeys.get(expected.toLowerCase());
  if (key) {
    let valid = false;
    try {
      valid = verifiesFor(key, digest, signature);
    } catch {
      valid = false; // malformed: the recovery path below reports exactly what is wrong
    }
    if (valid) return;
  }
  const recovered = await recoverDigestSigner(digest, signature);
  if (recovered.toLowerCase() !== expected.toLowerCase()) {
    throw new InvalidSignatureError(`The ${role} signature was not made by ${expected}.`, {
      details: `It recovers to ${recovered}: signed by another key, or for another chain, contract or message.`,
    });
  }
  if (!key) {
    const publicKey = secp256k1.Point.fromHex((await recoverPublicKey({ hash: digest, signature })).slice(2));
    publicKey.precompute(8, false);
    knownKeys.set(expected.toLowerCase(), publicKey);
  }
}

/**
 * A 65-byte signature in the ERC-2098 compact form the contract takes: `{ r, vs }`. A high-s signature
 * has no compact form (its s needs the bit that carries the parity), so this also refuses the malleable twin.
 */
export function toCompactSignature(signature: Hex): { r: Hex; vs: Hex } {
  try {
    const compact = signatureToCompactSignature(parseSignature(signature));
    return { r: compact.r, vs: compact.yParityAndS };
  } catch (cause) {
    throw new InvalidSignatureError("The signature has no ERC-2098 compact form (malformed or high s).", { cause });
  }
}

/** Flips a low-s signature into its high-s twin (same signer, same digest); only tests need this. */
export function toHighS(signature: Hex): Hex {
  const sig = parseSignature(signature);
  const s = SECP256K1_N - BigInt(sig.s);
  return serializeSignature({
    r: sig.r,
    s: `0x${s.toString(16).padStart(64, "0")}`,
    yParity: sig.yParity === 0 ? 1 : 0,
  });
}
