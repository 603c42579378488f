/**
 * Labelled assertions for untrusted input (peer packets, files, CLI arguments). Each returns the value
 * with its checked type or throws a typed error naming the field, what it must be and what it was.
 * Inside the boundary, types are trusted and nothing is re-checked.
 */
import { getAddress, type Address, type Hex } from "viem";

import { AmountAsNumberError, InvalidFieldError, UnknownFieldError } from "./errors";

export type JsonObject = Record<string, unknown>;

/** An object with exactly the `required` keys and any of the `optional` ones; nothing else. */
export function expectObject(
  value: unknown,
  path: string,
  required: readonly string[],
  optional: readonly string[] = [],
): JsonObject {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidFieldError(path, "an object", value);
  }
  const object = value as JsonObject;
  for (const key of required) {
    if (!Object.hasOwn(object, key)) throw new InvalidFieldError(`${path}.${key}`, "present", undefined);
  }
  for (const key of Object.keys(object)) {
    if (!required.includes(key) && !optional.includes(key)) throw new UnknownFieldError(`${path}.${key}`);
  }
  return object;
}

const HEX32 = /^0x[0-9a-f]{64}$/;
const ADDRESS = /^0x[0-9a-f]{40}$/;
const SIGNATURE = /^0x[0-9a-f]{130}$/;
const DECIMAL = /^(0|[1-9][0-9]*)$/;

/** A 32-byte hash as `0x` and 64 lowercase hex digits (one spelling, so the canonical bytes are unique). */
export function expectHash(value: unknown, path: string): Hex {
  if (typeof value !== "string" || !HEX32.test(value)) {
    throw new InvalidFieldError(path, "a 32-byte hash: 0x and 64 lowercase hex digits", value);
  }
  return value as Hex;
}

/** An address as `0x` and 40 lowercase hex digits in JSON; returned checksummed for use in code. */
export function expectAddress(value: unknown, path: string): Address {
  if (typeof value !== "string" || !ADDRESS.test(value)) {
    throw new InvalidFieldError(path, "an address: 0x and 40 lowercase hex digits", value);
  }
  return getAddress(value);
}

/**
 * The longest signature a payer's contract wallet may make (decision 0035): bounds what a node takes from a peer and
 * forwards to the wallet's ERC-1271 `isValidSignature` in an `eth_call`.
 */
export const MAX_WALLET_SIGNATURE_BYTES = 4096;
const PAYER_SIGNATURE = /^0x(?:[0-9a-f]{2}){1,4096}$/;

/**
 * A signature the payer may have made (tickets, grants, receipt commits, cooperative summaries): 65 bytes for a plain
 * key, or the bytes of a contract wallet's own format, 1 to {@link MAX_WALLET_SIGNATURE_BYTES} (two owners' ECDSA
 * signatures, a WebAuthn assertion, a wrapped envelope), as lowercase hex. Which it must be is decided where it is
 * checked: recovery takes exactly 65 bytes; a wallet's ERC-1271 answer decides for the wallet.
 */
export function expectPayerSignatureHex(value: unknown, path: string): Hex {
  if (typeof value !== "string" || !PAYER_SIGNATURE.test(value)) {
    throw new InvalidFieldError(path, `a payer's signature: 0x and 2 to ${2 * MAX_WALLET_SIGNATURE_BYTES} lowercase hex digits (65 bytes for a key, a wallet's own format for a contract wallet)`, value);
  }
  return value as Hex;
}

/** A 65-byte secp256k1 signature (r ‖ s ‖ v) as lowercase hex. */
export function expectSignatureHex(value: unknown, path: string): Hex {
  if (typeof value !== "string" || !SIGNATURE.test(value)) {
    throw new InvalidFieldError(path, "a 65-byte signature: 0x and 130 lowercase hex digits", value);
  }
  return value as Hex;
}

/**
 * An unsigned integer of at most `bits` bits written as a decimal string without leading zeros.
 * A JSON number here is refused with {@link AmountAsNumberError}: it may already have lost precision.
 */
export function expectUint(value: unknown, path: string, bits: number): bigint {
  if (typeof value === "number" || typeof value === "bigint") throw new AmountAsNumberError(path, value);
  if (typeof value !== "string" || !DECIMAL.test(value) || value.length > 80) {
    throw new InvalidFieldError(path, `a decimal string (uint${bits}) such as "1000"`, value);
  }
  const parsed = BigInt(value);
  if (parsed >= 1n << BigInt(bits)) throw new InvalidFieldError(path, `at most 2^${bits} - 1`, value);
  return parsed;
}

/** A string of 1..`maxLength` characters. */
export function expectString(value: unknown, path: string, maxLength: number): string {
  if (typeof value !== "string" || value.length === 0 || value.length > maxLength) {
    throw new InvalidFieldError(path, `a non-empty string of at most ${maxLength} characters`, value);
  }
  return value;
}

/** One of the listed literal strings. */
export function expectLiteral<const T extends string>(value: unknown, path: string, allowed: readonly T[]): T {
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
    throw new InvalidFieldError(path, `one of ${allowed.map((a) => JSON.stringify(a)).join(", ")}`, value);
  }
  return value as T;
}

/** Decimal string of a bigint, the JSON form of every amount and counter. */
export function uintToJson(value: bigint): string {
  return value.toString(10);
}
