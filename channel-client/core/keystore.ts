/**
 * Encrypted key files in the Web3 Secret Storage v3 format that geth, Clef and Foundry write (issue 29 item 5):
 * a KDF (scrypt by default, pbkdf2-hmac-sha256 read too) derives 32 bytes from the password; the first 16 key
 * aes-128-ctr over the private key, the last 16 prefix the ciphertext under keccak-256 to form the MAC.
 *
 * Pure: no files, no prompts. Randomness (salt, iv, id) may be injected, so a test can pin it.
 */
import { ctr } from "@noble/ciphers/aes.js";
import { pbkdf2 } from "@noble/hashes/pbkdf2.js";
import { scrypt } from "@noble/hashes/scrypt.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes, randomBytes, utf8ToBytes } from "@noble/hashes/utils.js";
import { getAddress, keccak256, type Address, type Hex } from "viem";
import { privateKeyToAddress } from "viem/accounts";

import { BaseError } from "./errors";

/** A key file that is not a v3 keystore, uses a KDF or cipher this reader does not support, or is damaged. */
export class KeystoreFormatError extends BaseError {
  override name = "KeystoreFormatError" as const;
}

/** The MAC does not match: the password is wrong (or the ciphertext was altered). Not retryable without a new password. */
export class WrongPasswordError extends BaseError {
  override name = "WrongPasswordError" as const;
}

export type ScryptParams = { n: number; r: number; p: number };

/** geth's and Foundry's "standard" scrypt cost: n = 2^18, r = 8, p = 1 (256 MiB, about a second). */
export const STANDARD_SCRYPT: ScryptParams = { n: 262144, r: 8, p: 1 };

export type KeystoreV3 = {
  address?: string;
  crypto: {
    cipher: "aes-128-ctr";
    cipherparams: { iv: string };
    ciphertext: string;
    kdf: "scrypt" | "pbkdf2";
    kdfparams: Record<string, unknown>;
    mac: string;
  };
  id: string;
  version: 3;
};

export type EncryptOptions = {
  scrypt?: ScryptParams;
  /** Injected randomness (tests): 32-byte salt, 16-byte iv, 16 bytes for the UUID. */
  salt?: Uint8Array;
  iv?: Uint8Array;
  uuid?: Uint8Array;
};

/** A UUID v4 string from 16 random bytes (version and variant bits set). */
export function uuidV4(bytes: Uint8Array = randomBytes(16)): string {
  const b = Uint8Array.from(bytes);
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = bytesToHex(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function strip0x(hex: Hex): string {
  return hex.slice(2).toLowerCase();
}

function macOf(derived: Uint8Array, ciphertext: Uint8Array): string {
  const body = new Uint8Array(16 + ciphertext.length);
  body.set(derived.subarray(16, 32), 0);
  body.set(ciphertext, 16);
  return strip0x(keccak256(body));
}

/** Encrypts a private key under a password: scrypt (standard cost unless given), aes-128-ctr, keccak-256 MAC. */
export function encryptKeystore(privateKey: Hex, password: string, options: EncryptOptions = {}): KeystoreV3 {
  if (!/^0x[0-9a-fA-F]{64}$/.test(privateKey)) throw new KeystoreFormatError("A private key is 0x and 64 hex digits.");
  const address = privateKeyToAddress(privateKey);
  const { n, r, p } = options.scrypt ?? STANDARD_SCRYPT;
  const salt = options.salt ?? randomBytes(32);
  const iv = options.iv ?? randomBytes(16);
  const derived = scrypt(utf8ToBytes(password), salt, { N: n, r, p, dkLen: 32, maxmem: 2 ** 31 });
  const ciphertext = ctr(derived.subarray(0, 16), iv).encrypt(hexToBytes(strip0x(privateKey)));
  return {
    address: strip0x(address),
    crypto: {
      cipher: "aes-128-ctr",
      cipherparams: { iv: bytesToHex(iv) },
      ciphertext: bytesToHex(ciphertext),
      kdf: "scrypt",
      kdfparams: { dklen: 32, n, p, r, salt: bytesToHex(salt) },
      mac: macOf(derived, ciphertext),
    },
    id: uuidV4(options.uuid),
    version: 3,
  };
}

const HEX = /^(0x)?[0-9a-fA-F]*$/;

function hexField(value: unknown, what: string, bytes?: number): Uint8Array {
  if (typeof value !== "string" || !HEX.test(value) || value.length % 2 !== 0) throw new KeystoreFormatError(`The keystore's ${what} is not hex.`);
  const out = hexToBytes(value.replace(/^0x/, ""));
  if (bytes !== undefined && out.length !== bytes) throw new KeystoreFormatError(`The keystore's ${what} is not ${bytes} bytes.`);
  return out;
}

function positiveInt(value: unknown, what: string, max: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1 || value > max) throw new KeystoreFormatError(`The keystore's ${what} is not a whole number from 1 to ${max}.`);
  return value;
}

/** The 32 bytes the keystore's KDF derives from the password (scrypt or pbkdf2-hmac-sha256). */
function derive(crypto: Record<string, unknown>, password: string): Uint8Array {
  const params = crypto.kdfparams as Record<string, unknown> | undefined;
  if (typeof params !== "object" || params === null) throw new KeystoreFormatError("The keystore has no kdfparams.");
  const dklen = positiveInt(params.dklen, "kdfparams.dklen", 64);
  if (dklen < 32) throw new KeystoreFormatError("The keystore's kdfparams.dklen is below 32.");
  const salt = hexField(params.salt, "kdfparams.salt");
  const pw = utf8ToBytes(password);
  const kdf = String(crypto.kdf).toLowerCase();
  if (kdf === "scrypt") {
    const n = positiveInt(params.n, "kdfparams.n", 2 ** 24);
    if ((n & (n - 1)) !== 0 || n < 2) throw new KeystoreFormatError("The keystore's kdfparams.n is not a power of two.");
    const r = positiveInt(params.r, "kdfparams.r", 64);
    const p = positiveInt(params.p, "kdfparams.p", 64);
    return scrypt(pw, salt, { N: n, r, p, dkLen: dklen, maxmem: 2 ** 32 });
  }
  if (kdf === "pbkdf2") {
    if (params.prf !== "hmac-sha256") throw new KeystoreFormatError(`The keystore's pbkdf2 prf ${String(params.prf)} is not supported (only hmac-sha256).`);
    const c = positiveInt(params.c, "kdfparams.c", 2 ** 26);
    return pbkdf2(sha256, pw, salt, { c, dkLen: dklen });
  }
  throw new KeystoreFormatError(`The keystore's kdf ${String(crypto.kdf)} is not supported (scrypt or pbkdf2).`);
}

/** Checks the shape of a parsed key file (v3, aes-128-ctr) and returns the address it claims, if any. */
export function keystoreAddress(json: unknown): Address | undefined {
  const file = json as Record<string, unknown>;
  if (typeof file !== "object" || file === null || file.version !== 3) throw new KeystoreFormatError("The file is not a version 3 keystore.");
  const crypto = (file.crypto ?? file.Crypto) as Record<string, unknown> | undefined;
  if (typeof crypto !== "object" || crypto === null) throw new KeystoreFormatError("The keystore has no crypto section.");
  if (file.address === undefined) return undefined;
  if (typeof file.address !== "string" || !/^(0x)?[0-9a-fA-F]{40}$/.test(file.address)) throw new KeystoreFormatError("The keystore's address is not 40 hex digits.");
  return getAddress(`0x${file.address.replace(/^0x/, "")}`);
}

/** Decrypts a v3 keystore; a MAC mismatch is {@link WrongPasswordError}, a malformed file {@link KeystoreFormatError}. */
export function decryptKeystore(json: unknown, password: string): { privateKey: Hex; address: Address } {
  const claimed = keystoreAddress(json);
  const file = json as Record<string, unknown>;
  const crypto = (file.crypto ?? file.Crypto) as Record<string, unknown>;
  if (crypto.cipher !== "aes-128-ctr") throw new KeystoreFormatError(`The keystore's cipher ${String(crypto.cipher)} is not supported (only aes-128-ctr).`);
  const iv = hexField((crypto.cipherparams as Record<string, unknown> | undefined)?.iv, "cipherparams.iv", 16);
  const ciphertext = hexField(crypto.ciphertext, "ciphertext", 32);
  const mac = hexField(crypto.mac, "mac", 32);
  const derived = derive(crypto, password);
  if (macOf(derived, ciphertext) !== bytesToHex(mac)) throw new WrongPasswordError("Wrong password: the keystore's MAC does not match.");
  const privateKey = `0x${bytesToHex(ctr(derived.subarray(0, 16), iv).decrypt(ciphertext))}` as Hex;
  let address: Address;
  try {
    address = privateKeyToAddress(privateKey);
  } catch (cause) {
    throw new KeystoreFormatError("The keystore decrypts to a value that is not a secp256k1 private key.", { cause });
  }
  if (claimed !== undefined && claimed !== address) throw new KeystoreFormatError(`The keystore claims the address ${claimed} but holds the key of ${address}.`);
  return { privateKey, address };
}
