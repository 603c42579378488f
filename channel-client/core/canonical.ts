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
import { keccak256Hex } from "./keccak";

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
  return keccak256Hex(canonBytes(value));
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
 * Walks `value` (without recursion) and rejects anything canonical JSON cannot represent exactly. A pending
 * value keeps only its parent's index and its key or index, and its path ("$.a[1].amount") is spelled out
 * only for the error message: a packet's walk builds no strings (issue 15, hot path).
 */
function assertJsonValue(value: unknown): void {
  const values: unknown[] = [value];
  const parents: number[] = [-1];
  const keys: (string | number)[] = [""];
  const depths: number[] = [0];
  const pending: number[] = [0];
  const add = (item: unknown, parent: number, key: string | number, depth: number) => {
    pending.push(values.length);
    values.push(item);
    parents.push(parent);
    keys.push(key);
    depths.push(depth);
  };
  while (pending.length > 0) {
    const at = pending.pop()!;
    const v = values[at];
    switch (typeof v) {
      case "string":
        if (!v.isWellFormed()) throw new InvalidJsonError(`${pathOf(at, parents, keys)} holds a lone UTF-16 surrogate.`);
        break;
      case "number":
        if (!Number.isFinite(v)) throw new NonFiniteNumberError(pathOf(at, parents, keys), v);
        break;
      case "boolean":
        break;
      case "object": {
        if (v === null) break;
        const depth = depths[at]!;
        if (depth >= MAX_JSON_DEPTH) throw new InvalidJsonError(`${pathOf(at, parents, keys)} nests deeper than ${MAX_JSON_DEPTH} levels.`);
        if (Array.isArray(v)) {
          v.forEach((item, i) => add(item, at, i, depth + 1)); // forEach skips a sparse array's holes, as before
        } else {
          const proto = Object.getPrototypeOf(v);
          if (proto !== Object.prototype && proto !== null) {
            throw new InvalidJsonError(`${pathOf(at, parents, keys)} is a ${proto?.constructor?.name ?? "non-plain"} object, not plain JSON.`);
          }
          const object = v as Record<string, unknown>;
          for (const key of Object.keys(object)) {
            if (!key.isWellFormed()) throw new InvalidJsonError(`${pathOf(at, parents, keys)} has a key with a lone UTF-16 surrogate.`);
            add(object[key], at, key, depth + 1);
          }
        }
        break;
      }
      case "bigint":
        throw new InvalidJsonError(`${pathOf(at, parents, keys)} is a bigint; encode it as a decimal string.`);
      default:
        throw new InvalidJsonError(`${pathOf(at, parents, keys)} is ${typeof v}, which has no JSON representation.`);
    }
  }
}

/** The path of value `at` in `assertJsonValue`'s walk: "$", then ".key" for an object's member and "[i]" for an array's element. */
function pathOf(at: number, parents: readonly number[], keys: readonly (string | number)[]): string {
  const segments: string[] = [];
  for (let i = at; parents[i]! !== -1; i = parents[i]!) {
    const key = keys[i]!;
    segments.push(typeof key === "number" ? `[${key}]` : `.${key}`);
  }
  return `$${segments.reverse().join("")}`;
}
