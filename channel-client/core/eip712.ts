/**
 * The EIP-712 definitions the GasEscrow verifies, defined once here and mirrored in
 * `contracts/GasEscrow.sol` (a test proves the type hashes and digests are equal).
 */
import {
  domainSeparator,
  getAddress,
  hashTypedData,
  hexToBytes,
  keccak256,
  parseSignature,
  serializeSignature,
  signatureToCompactSignature,
  stringToBytes,
  type Address,
  type Hex,
  type LocalAccount,
} from "viem";
import { privateKeyToAccount, type HDAccount, type PrivateKeyAccount } from "viem/accounts";

import { InvalidSignatureError } from "./errors";
import { keccak256Bytes, keccak256Hex } from "./keccak";
import { secp256k1Backend } from "./secp256k1";

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
  /** A payer's delegation to a session key (decision 0025); `session-key.ts` owns its JSON form. */
  SessionKey: [
    { name: "sessionId", type: "bytes32" },
    { name: "key", type: "address" },
    { name: "expiry", type: "uint64" },
    { name: "spendCap", type: "uint128" },
    { name: "capabilities", type: "bytes32" },
    { name: "epoch", type: "uint64" },
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
  /** A party's signed receipt root over a session's first `leafCount` leaves; the provider's is anchorable. */
  ReceiptCommit: [
    { name: "sessionId", type: "bytes32" },
    { name: "leafCount", type: "uint64" },
    { name: "root", type: "bytes32" },
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
const N_BYTES = Buffer.from(SECP256K1_N.toString(16), "hex");
const HALF_N_BYTES = Buffer.from((SECP256K1_N >> 1n).toString(16), "hex");
const ZERO_32 = Buffer.alloc(32);

/** Private keys of accounts made by {@link signingAccount}, so that signing goes through the backend. */
const privateKeys = new WeakMap<object, Uint8Array>();

/**
 * A viem local account for `privateKey` whose digests `signDigest` signs with the configured secp256k1
 * backend (libsecp256k1 by default, see `secp256k1.ts`); everything else is viem's `privateKeyToAccount`.
 */
export function signingAccount(privateKey: Hex): PrivateKeyAccount {
  const account = privateKeyToAccount(privateKey);
  privateKeys.set(account, hexToBytes(privateKey));
  return account;
}

function privateKeyOf(account: LocalAccount): Uint8Array | undefined {
  const known = privateKeys.get(account);
  if (known) return known;
  const hd = (account as Partial<HDAccount>).getHdKey?.().privateKey ?? undefined;
  if (hd) privateKeys.set(account, hd);
  return hd;
}

/**
 * Signs a digest: 65 bytes r ‖ s ‖ v, low-s, v = 27 or 28, RFC 6979 — byte-identical to viem's `sign`.
 * Accounts whose key is known (made by {@link signingAccount} or derived from a mnemonic) sign through the
 * secp256k1 backend; any other local account signs through its own `sign`.
 */
export async function signDigest(account: LocalAccount, digest: Hex): Promise<Hex> {
  const privateKey = privateKeyOf(account);
  if (privateKey) {
    const { signature, recovery } = secp256k1Backend().sign(digestBytes(digest), privateKey);
    return `0x${Buffer.from(signature.buffer, signature.byteOffset, 64).toString("hex")}${recovery === 0 ? "1b" : "1c"}`;
  }
  if (!account.sign) throw new InvalidSignatureError("This account cannot sign raw digests.");
  return account.sign({ hash: digest });
}

const DIGEST_HEX = /^0x[0-9a-fA-F]{64}$/;

/** A 32-byte digest's bytes: Node's native hex decoder for a well-formed one, viem's (and its errors) otherwise. */
function digestBytes(digest: Hex): Uint8Array {
  return typeof digest === "string" && DIGEST_HEX.test(digest) ? Buffer.from(digest.slice(2), "hex") : hexToBytes(digest);
}

/** A signature that passed the contract's form checks: r ‖ s (64 bytes) and the recovery id. */
type CheckedSignature = { rs: Buffer; recovery: number };

/**
 * The checks `ECDSA.tryRecover(digest, r, vs)` makes before `ecrecover`, in the same terms: 65 bytes,
 * v = 27 or 28, 0 < r < n, 0 < s ≤ n/2 (low-s, so one signer has exactly one accepted signature per digest).
 */
function checkSignatureForm(signature: Hex): CheckedSignature {
  if (typeof signature !== "string" || signature.length !== 132 || !/^0x[0-9a-fA-F]{130}$/.test(signature)) {
    throw new InvalidSignatureError("The signature is not a 65-byte secp256k1 signature.");
  }
  const v = signature.slice(130).toLowerCase();
  if (v !== "1b" && v !== "1c") throw new InvalidSignatureError(`The signature's v is 0x${v}; only 27 or 28 (0x1b, 0x1c) is accepted.`);
  const rs = Buffer.from(signature.slice(2, 130), "hex");
  const r = rs.subarray(0, 32);
  const s = rs.subarray(32, 64);
  if (r.equals(ZERO_32) || r.compare(N_BYTES) >= 0 || s.equals(ZERO_32) || s.compare(N_BYTES) >= 0) {
    throw new InvalidSignatureError("The signature's r or s is outside the curve order.");
  }
  if (s.compare(HALF_N_BYTES) > 0) {
    throw new InvalidSignatureError("The signature has a high s value (malleable form); only low-s signatures are accepted.");
  }
  return { rs, recovery: v === "1b" ? 0 : 1 };
}

/** The lowercase address of a 65-byte uncompressed public key (WebAssembly keccak). */
function addressOfPublicKey(publicKey: Uint8Array): string {
  const hash = keccak256Bytes(publicKey.subarray(1));
  return `0x${Buffer.from(hash.buffer, hash.byteOffset + 12, 20).toString("hex")}`;
}

/** `ecrecover` with the contract's form checks: the public key that made `signature` over `digest`. */
function recoverPublicKeyChecked(digest: Hex, signature: Hex): Uint8Array {
  const { rs, recovery } = checkSignatureForm(signature);
  const publicKey = secp256k1Backend().recover(digestBytes(digest), rs, recovery);
  if (!publicKey) throw new InvalidSignatureError("The signature does not recover to any address.");
  return publicKey;
}

/**
 * Recovers the signer of `digest`, refusing malformed and high-s signatures so that one signer has exactly
 * one accepted signature per digest, as on-chain.
 */
export async function recoverDigestSigner(digest: Hex, signature: Hex): Promise<Address> {
  return getAddress(addressOfPublicKey(recoverPublicKeyChecked(digest, signature)));
}

/**
 * Public keys of signers already seen, by lowercase address. A channel checks thousands of signatures by
 * the same two keys: comparing the recovered key with the known one skips hashing it into an address.
 */
const knownKeys = new Map<string, Buffer>();

/**
 * Throws {@link InvalidSignatureError} naming `role` unless `expected` made `signature` over `digest`. It
 * accepts exactly what the contract accepts: the contract's form checks (low-s, v 27/28, r and s in range)
 * and then public-key recovery with recovery id v − 27, which is `ecrecover`.
 */
export async function assertDigestSigner(
  digest: Hex,
  signature: Hex,
  expected: Address,
  role: string,
): Promise<void> {
  const publicKey = recoverPublicKeyChecked(digest, signature);
  const address = expected.toLowerCase();
  const known = knownKeys.get(address);
  if (known && known.equals(publicKey)) return;
  const recovered = addressOfPublicKey(publicKey);
  if (recovered !== address) {
    throw new InvalidSignatureError(`The ${role} signature was not made by ${expected}.`, {
      details: `It recovers to ${getAddress(recovered)}: signed by another key, or for another chain, contract or message.`,
    });
  }
  if (!known) knownKeys.set(address, Buffer.from(publicKey));
}

/**
 * How a signature over a digest is checked against the party expected to have made it: {@link assertDigestSigner}
 * (recovery) for a plain key, or the contract wallet's ERC-1271 answer for a payer that is a wallet (decision
 * 0035, `chain/wallet-signature.ts`). Throws {@link InvalidSignatureError} naming `role` when it does not hold.
 */
export type SignatureCheck = (digest: Hex, signature: Hex, expected: Address, role: string) => Promise<void>;

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

const domainSeparators = new Map<string, Uint8Array>();
/**
 * The separator last used with each domain object, with the values it was computed from: a hit costs two
 * comparisons instead of a lower-cased key and a map lookup (issue 15, hot path), and a domain object whose
 * fields changed since simply misses.
 */
const separatorOfDomain = new WeakMap<GasEscrowDomain, { chainId: number; verifyingContract: string; separator: Uint8Array }>();
/** `0x1901 ‖ domainSeparator ‖ structHash`, rewritten by each call (hashing is synchronous, so calls cannot interleave). */
const digestMessage = new Uint8Array(66);
digestMessage[0] = 0x19;
digestMessage[1] = 0x01;

function separatorOf(domain: GasEscrowDomain): Uint8Array {
  const cached = separatorOfDomain.get(domain);
  if (cached !== undefined && cached.chainId === domain.chainId && cached.verifyingContract === domain.verifyingContract) return cached.separator;
  const key = `${domain.chainId}:${domain.verifyingContract.toLowerCase()}`;
  let separator = domainSeparators.get(key);
  if (!separator) {
    separator = hexToBytes(domainSeparator({ domain }));
    domainSeparators.set(key, separator);
  }
  separatorOfDomain.set(domain, { chainId: domain.chainId, verifyingContract: domain.verifyingContract, separator });
  return separator;
}

/**
 * The EIP-712 digest `keccak256(0x1901 ‖ domainSeparator ‖ keccak256(structWords))` of a struct already encoded
 * as its 32-byte words (type hash first), for the hand-encoded hot-path digests (tickets, receipt commits:
 * decision 0023). The domain's separator is computed once per chain and contract.
 */
export function structDigest(domain: GasEscrowDomain, structWords: Uint8Array): Hex {
  digestMessage.set(separatorOf(domain), 2);
  digestMessage.set(keccak256Bytes(structWords), 34);
  return keccak256Hex(digestMessage);
}
