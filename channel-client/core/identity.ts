/**
 * The identity anchor (whitepaper 7, 6.4): a DID bound to a secp256k1 account and an ML-DSA-44 public key,
 * signed by both keys, so the binding survives a break of either scheme. The ProviderRegistry stores
 * `didHash = keccak256(did)` and `mldsaPublicKeyHash = keccak256(mldsaPublicKey)`; arbitration checks an
 * anchor against those.
 */
import { ml_dsa44 } from "@noble/post-quantum/ml-dsa.js";
import { concat, hexToBytes, isAddressEqual, keccak256, stringToBytes, toHex, type Address, type Hex, type LocalAccount } from "viem";

import { artifactId } from "./canonical";
import { assertDigestSigner, signDigest } from "./eip712";
import { InvalidFieldError, InvalidSignatureError } from "./errors";
import { expectAddress, expectObject, expectSignatureHex, expectString } from "./validate";

/** Domain tag of identity anchor signatures; also the ML-DSA context string. */
export const IDENTITY_SIGNATURE_DOMAIN = "IOI_SIG_DOMAIN_IDENTITY_V1";
const DOMAIN_HASH = keccak256(stringToBytes(IDENTITY_SIGNATURE_DOMAIN));
const CONTEXT = stringToBytes(IDENTITY_SIGNATURE_DOMAIN);

export type IdentityAnchor = { did: string; account: Address; mldsaPublicKey: Hex };
export type SignedIdentityAnchor = { anchor: IdentityAnchor; secp256k1Signature: Hex; mldsaSignature: Hex };
export type SignedIdentityAnchorJson = {
  anchor: { did: string; account: Hex; mldsa_public_key: Hex };
  secp256k1_signature: Hex;
  mldsa_signature: Hex;
};

const MLDSA44_PUBLIC_KEY_BYTES = 1312;
const MLDSA44_SIGNATURE_BYTES = 2420;

/** `keccak256(keccak256(domain) ‖ artifactId(anchor))`: what both keys sign. */
export function identityAnchorDigest(anchor: IdentityAnchor): Hex {
  return keccak256(concat([DOMAIN_HASH, artifactId(identityAnchorToJson(anchor))]));
}

export function identityAnchorToJson(anchor: IdentityAnchor): SignedIdentityAnchorJson["anchor"] {
  return { did: anchor.did, account: anchor.account.toLowerCase() as Hex, mldsa_public_key: anchor.mldsaPublicKey };
}

export function didHashOf(did: string): Hex {
  return keccak256(stringToBytes(did));
}

/** An ML-DSA-44 key pair from a 32-byte seed (deterministic). */
export function mldsaKeyPair(seed: Uint8Array): { publicKey: Hex; secretKey: Uint8Array } {
  const { publicKey, secretKey } = ml_dsa44.keygen(seed);
  return { publicKey: toHex(publicKey), secretKey };
}

/** Signs the anchor with both keys. */
export async function signIdentityAnchor(parameters: {
  did: string;
  account: LocalAccount;
  mldsa: { publicKey: Hex; secretKey: Uint8Array };
}): Promise<SignedIdentityAnchor> {
  const anchor: IdentityAnchor = { did: parameters.did, account: parameters.account.address, mldsaPublicKey: parameters.mldsa.publicKey };
  const digest = identityAnchorDigest(anchor);
  const secp256k1Signature = await signDigest(parameters.account, digest);
  const mldsaSignature = toHex(ml_dsa44.sign(hexToBytes(digest), parameters.mldsa.secretKey, { context: CONTEXT }));
  return { anchor, secp256k1Signature, mldsaSignature };
}

/**
 * Throws unless both signatures verify, the account is `expected.account`, and the DID and ML-DSA key are
 * the ones whose hashes the registry holds.
 */
export async function verifyIdentityAnchor(
  signed: SignedIdentityAnchor,
  expected: { account: Address; didHash: Hex; mldsaPublicKeyHash: Hex },
): Promise<void> {
  const { anchor } = signed;
  if (!isAddressEqual(anchor.account, expected.account)) {
    throw new InvalidSignatureError(`The identity anchor names ${anchor.account}, not ${expected.account}.`);
  }
  if (didHashOf(anchor.did) !== expected.didHash) throw new InvalidSignatureError("The anchor's DID is not the registered one.");
  if (keccak256(anchor.mldsaPublicKey) !== expected.mldsaPublicKeyHash) {
    throw new InvalidSignatureError("The anchor's ML-DSA-44 public key is not the registered one.");
  }
  const digest = identityAnchorDigest(anchor);
  await assertDigestSigner(digest, signed.secp256k1Signature, anchor.account, "identity anchor");
  let valid = false;
  try {
    valid = ml_dsa44.verify(hexToBytes(signed.mldsaSignature), hexToBytes(digest), hexToBytes(anchor.mldsaPublicKey), { context: CONTEXT });
  } catch {
    valid = false;
  }
  if (!valid) throw new InvalidSignatureError("The identity anchor's ML-DSA-44 signature does not verify.");
}

export function signedIdentityAnchorToJson(signed: SignedIdentityAnchor): SignedIdentityAnchorJson {
  return {
    anchor: identityAnchorToJson(signed.anchor),
    secp256k1_signature: signed.secp256k1Signature,
    mldsa_signature: signed.mldsaSignature,
  };
}

function expectBytesHex(value: unknown, path: string, bytes: number): Hex {
  if (typeof value !== "string" || value.length !== 2 + 2 * bytes || !/^0x[0-9a-f]*$/.test(value)) {
    throw new InvalidFieldError(path, `${bytes} bytes of lowercase 0x-prefixed hex`, value);
  }
  return value as Hex;
}

export function signedIdentityAnchorFromJson(value: unknown, path = "SignedIdentityAnchor"): SignedIdentityAnchor {
  const o = expectObject(value, path, ["anchor", "secp256k1_signature", "mldsa_signature"]);
  const a = expectObject(o.anchor, `${path}.anchor`, ["did", "account", "mldsa_public_key"]);
  return {
    anchor: {
      did: expectString(a.did, `${path}.anchor.did`, 256),
      account: expectAddress(a.account, `${path}.anchor.account`),
      mldsaPublicKey: expectBytesHex(a.mldsa_public_key, `${path}.anchor.mldsa_public_key`, MLDSA44_PUBLIC_KEY_BYTES),
    },
    secp256k1Signature: expectSignatureHex(o.secp256k1_signature, `${path}.secp256k1_signature`),
    mldsaSignature: expectBytesHex(o.mldsa_signature, `${path}.mldsa_signature`, MLDSA44_SIGNATURE_BYTES),
  };
}
