/**
 * Canonical JSON (RFC 8785, JCS) — the one byte representation every IOI artifact is hashed and signed in.
 *
 * `canonicalize` does the serialisation. This module adds what the whitepaper (6.3.1) demands on top:
 * values JSON cannot carry exactly are refused instead of being silently dropped or rounded, and bytes
 * received from a peer can be required to already be canonical.
 */
import canonicalize from "canonicalize";
import { stringToBytes, type Hex } from "viem";

import { InvalidJsonError, NonCanonicalJsonError, NonFiniteNumberError, SizeLimitError } from "./errors";
import { keccak256TextHex } from "./keccak";

/** Deepest nesting a parsed document may have; real artifacts use fewer than ten levels. */
export const MAX_JSON_DEPTH = 64;

/**
 * Returns the RFC 8785 canonical form of `value`.
 *
 * Throws rather than guess when `value` holds something JSON cannot represent exactly: NaN or ±Infinity
 * ({@link NonFiniteNumberError}), a bigint, `undefined`, a function or symbol, a lone surrogate, or a
 * nesting deeper than {@link MAX_JSON_DEPTH} ({@link InvalidJsonError}). Schema rules such as "amounts are
 * decimal strings" belong to the artifact modules, which validate before they canonicalize.
 */
export function canon(value: unknown): string {
  assertJsonValue(value);
  const text = canonicalize(value);
  if (text === undefined) throw new InvalidJsonError("The value has no JSON representation.");
  return text;
}

/** UTF-8 bytes of {@link canon}. */
export function canonBytes(value: unknown): Uint8Array {
  return stringToBytes(canon(value));
}

/** `keccak256(canon(value))`: the id of an artifact (whitepaper 6.3.2). */
export function artifactId(value: unknown): Hex {
  return keccak256TextHex(canon(value));
}

export type ParseCanonicalParameters = {
  /** Largest input accepted, in bytes of UTF-8. */
  maxBytes?: number;
  /** Name used in error messages, e.g. "PaymentTicket". */
  what?: string;
};

/**
 * Parses JSON that must already be in canonical form, as every signed artifact received from a peer must
 * be: the same bytes are hashed on both sides, so a document that re-serialises differently (whitespace,
 * key order, number or string spelling, a duplicated key) is refused with {@link NonCanonicalJsonError}.
 */
export function parseCanonical(input: string | Uint8Array, parameters: ParseCanonicalParameters = {}): unknown {
  const { maxBytes = 1 << 20, what = "The document" } = parameters;
  const value = parseJson(input, { maxBytes, what });
  // ignoreBOM keeps a leading byte-order mark in the text, so the comparison below refuses it: canonical
  // JSON never starts with one, and one document must have exactly one accepted spelling.
  const text = typeof input === "string" ? input : new TextDecoder("utf-8", { ignoreBOM: true }).decode(input);
  if (canon(value) !== text) {
    throw new NonCanonicalJsonError(`${what} is not in RFC 8785 canonical form.`, {
      details: "Serialise it with canon() (sorted keys, no whitespace, shortest number and string forms).",
    });
  }
  return value;
}

/** One decoder for every parse: without `stream`, each `decode` call is independent. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Parses JSON from an untrusted source with a size and a nesting limit, turning every failure into an
 * {@link InvalidJsonError} or {@link SizeLimitError}.
 */
export function parseJson(input: string | Uint8Array, parameters: Required<ParseCanonicalParameters>): unknown {
  const { maxBytes, what } = parameters;
  const size = typeof input === "string" ? Buffer.byteLength(input, "utf8") : input.byteLength;
  if (size > maxBytes) throw new SizeLimitError(what, size, maxBytes);
  let text: string;
  try {
    text = typeof input === "string" ? input : strictUtf8.decode(input);
  } catch (cause) {
    throw new InvalidJsonError(`${what} is not valid UTF-8.`, { cause });
  }
  assertNestingWithin(text, MAX_JSON_DEPTH, what);
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (cause) {
    throw new InvalidJsonError(`${what} is not valid JSON.`, { cause, details: (cause as Error).message });
  }
  // Refuse at the boundary what canonical JSON cannot hold (a number that overflows to Infinity such as
  // 1e400, a lone surrogate written as an escape), so nothing accepted here can fail later when hashed.
  assertJsonValue(value);
  return value;
}

const OPENING_BRACKETS = ["{", "["] as const;

/** Opening brackets in `text`, strings included, counting no further than `limit` + 1 (`indexOf` is fast). */
function openingBrackets(text: string, limit: number): number {
  let count = 0;
  for (const bracket of OPENING_BRACKETS) {
    for (let at = text.indexOf(bracket); at !== -1 && count <= limit; at = text.indexOf(bracket, at + 1)) count++;
  }
  return count;
}

/**
 * Rejects deep nesting before JSON.parse spends time on it; skips brackets inside strings. A text with no
 * more opening brackets than `limit` anywhere cannot nest deeper, so it is passed without the walk (every
 * message of the hot path: about 3 µs saved on a 1 KB packet).
 */
function assertNestingWithin(text: string, limit: number, what: string): void {
  if (openingBrackets(text, limit) <= limit) return;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) throw new InvalidJsonError(`${what} nests deeper than ${limit} levels.`);
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
}

/**
 * The key or index of each value on the path being checked (`walkKeys[d]`: that of the value at depth d), so a
 * path ("$.a[1].amount") is spelled out only for an error message: the walk allocates no strings and no
 * per-value records (issue 15, issue 31 item 5: it ran on every packet and every canon()).
 */
const walkKeys: (string | number)[] = [];

/**
 * Rejects anything in `value` canonical JSON cannot represent exactly. Depth-first, last member first (the order
 * of the stack-based walk it replaced, so the same value is reported when there are several); recursion stays
 * within MAX_JSON_DEPTH + 1 frames because deeper nesting is refused before it is entered.
 */
function assertJsonValue(value: unknown): void {
  checkJsonValue(value, 0);
}

function checkJsonValue(v: unknown, depth: number): void {
  switch (typeof v) {
    case "string":
      if (!v.isWellFormed()) throw new InvalidJsonError(`${walkPath(depth)} holds a lone UTF-16 surrogate.`);
      return;
    case "number":
      if (!Number.isFinite(v)) throw new NonFiniteNumberError(walkPath(depth), v);
      return;
    case "boolean":
      return;
    case "object": {
      if (v === null) return;
      if (depth >= MAX_JSON_DEPTH) throw new InvalidJsonError(`${walkPath(depth)} nests deeper than ${MAX_JSON_DEPTH} levels.`);
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) {
          if (!(i in v)) continue; // a sparse array's holes are skipped, as forEach skips them
          walkKeys[depth + 1] = i;
          checkJsonValue(v[i], depth + 1);
        }
        return;
      }
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) {
        throw new InvalidJsonError(`${walkPath(depth)} is a ${proto?.constructor?.name ?? "non-plain"} object, not plain JSON.`);
      }
      const object = v as Record<string, unknown>;
      const keys = Object.keys(object);
      for (const key of keys) {
        if (!key.isWellFormed()) throw new InvalidJsonError(`${walkPath(depth)} has a key with a lone UTF-16 surrogate.`);
      }
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        walkKeys[depth + 1] = key;
        checkJsonValue(object[key], depth + 1);
      }
      return;
    }
    case "bigint":
      throw new InvalidJsonError(`${walkPath(depth)} is a bigint; encode it as a decimal string.`);
    default:
      throw new InvalidJsonError(`${walkPath(depth)} is ${typeof v}, which has no JSON representation.`);
  }
}

/** The path of the value at `depth` of the current walk: "$", then ".key" for an object's member and "[i]" for an array's element. */
function walkPath(depth: number): string {
  let path = "$";
  for (let d = 1; d <= depth; d++) {
    const key = walkKeys[d]!;
    path += typeof key === "number" ? `[${key}]` : `.${key}`;
  }
  return path;
}
