/**
 * Helpers of the adversarial fuzz tests: the set of the project's typed error names, a seeded mutation
 * engine for JSON values, JSON text, raw bytes and YAML text, and the bookkeeping (counts, worst per-call
 * time, violations with enough detail to reproduce them).
 *
 * Everything random comes from a `Prng` (test/helpers/prng.ts), so a seed reproduces every input.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import * as arbitrationErrors from "../../arbitration/documents/errors";
import * as channelErrors from "../../channel-client/core/errors";
import { BaseError } from "../../channel-client/core/errors";
import * as payerClient from "../../channel-client/node/payer-client";
import * as storeErrors from "../../channel-client/store/errors";
import * as transportErrors from "../../channel-client/transport/errors";
import type { Prng } from "../helpers/prng";

/*//////////////////////////////////////////////////////////////
                        TYPED ERROR NAMES
//////////////////////////////////////////////////////////////*/

/**
 * The literal `name` of every error class the boundary modules export that extends BaseError (BaseError
 * itself excluded: a bare BaseError names no failure). Each class is instantiated with placeholder
 * arguments to read its `name`, which is an instance field; `mismatched` lists classes whose name differs
 * from the class name (the convention says they are equal).
 */
export function typedErrorNames(): { names: ReadonlySet<string>; mismatched: string[] } {
  const names = new Set<string>();
  const mismatched: string[] = [];
  for (const module of [channelErrors, transportErrors, storeErrors, arbitrationErrors, payerClient] as Array<Record<string, unknown>>) {
    for (const [exported, value] of Object.entries(module)) {
      if (typeof value !== "function" || !(value.prototype instanceof BaseError)) continue;
      let name: string;
      try {
        name = (new (value as new (...args: unknown[]) => Error)("placeholder", "placeholder", "placeholder")).name;
      } catch {
        name = exported;
      }
      if (name !== exported) mismatched.push(`${exported} has name ${name}`);
      names.add(name);
    }
  }
  return { names, mismatched };
}

/** True if `error` is one of the project's typed errors (a BaseError subclass with a listed literal name). */
export function isTyped(error: unknown, names: ReadonlySet<string>): boolean {
  return error instanceof BaseError && names.has(error.name);
}

/**
 * True for the refusals of canonical JSON itself (a lone surrogate, nesting beyond 64 levels, NaN or
 * ±Infinity): what a value parser may pass through when its caller is trusted to have parsed the text
 * with parseDocument / parseJson, which refuse these up front.
 */
export function isCanonicalRefusal(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false;
  if (error.name === "NonFiniteNumberError") return true;
  return error.name === "InvalidJsonError" && /lone UTF-16 surrogate|nests deeper than/.test(error.message);
}

/*//////////////////////////////////////////////////////////////
                          BOOKKEEPING
//////////////////////////////////////////////////////////////*/

export type Violation = {
  category: string;
  index: number;
  kind: string;
  detail: string;
  input: string;
  stack?: string;
  file?: string;
};

/** Counts, timings and violations of one fuzz run. */
export class FuzzLedger {
  readonly counts = new Map<string, number>();
  readonly maxMs = new Map<string, { ms: number; index: number }>();
  readonly outcomes = new Map<string, Map<string, number>>();
  readonly violations: Violation[] = [];
  /** Findings that are reported but do not fail a test (see the caller for why). */
  readonly latent: Violation[] = [];
  readonly #dir: string;

  constructor(readonly seed: number) {
    this.#dir = path.join(os.tmpdir(), `ioi-fuzz-${seed}`);
  }

  count(category: string, n = 1): void {
    this.counts.set(category, (this.counts.get(category) ?? 0) + n);
  }

  time(category: string, ms: number, index: number): void {
    const worst = this.maxMs.get(category);
    if (!worst || ms > worst.ms) this.maxMs.set(category, { ms, index });
  }

  outcome(category: string, label: string): void {
    let map = this.outcomes.get(category);
    if (!map) this.outcomes.set(category, (map = new Map()));
    map.set(label, (map.get(label) ?? 0) + 1);
  }

  /** Records a violation; the full input of the first few of each category (up to 2 MB) is written to a file. */
  violate(v: Omit<Violation, "input" | "file"> & { input: string | Uint8Array }): void {
    const inCategory = this.violations.filter((x) => x.category === v.category).length;
    let file: string | undefined;
    const size = typeof v.input === "string" ? v.input.length : v.input.byteLength;
    if (inCategory < 10 && size <= 2 * 1024 * 1024) {
      try {
        mkdirSync(this.#dir, { recursive: true });
        file = path.join(this.#dir, `${v.category.replace(/[^a-z0-9_.-]+/gi, "_")}-${v.index}.bin`);
        writeFileSync(file, typeof v.input === "string" ? Buffer.from(v.input, "utf8") : v.input);
      } catch {
        file = undefined;
      }
    }
    this.violations.push({ ...v, input: preview(v.input), file });
  }

  total(): number {
    let sum = 0;
    for (const n of this.counts.values()) sum += n;
    return sum;
  }

  /** Distinct violations (by category, kind and first line of detail), with a count and one example each. */
  summary(filter: (v: Violation) => boolean = () => true, limit = 25): string {
    const violations = this.violations.filter(filter);
    if (violations.length === 0) return "no violations";
    const groups = new Map<string, { n: number; example: Violation }>();
    for (const v of violations) {
      const error = v.detail.split("\n")[0]!.split("; ")[0]!;
      const key = `${v.category} | ${v.kind} | ${error.replace(/0x[0-9a-fA-F]{8,}/g, "0x…").replace(/\$[^\s;]*/g, "$…").replace(/\b\w+(\.\w+|\[\d+\])+/g, "<path>").replace(/\d{3,}/g, "N").slice(0, 140)}`;
      const g = groups.get(key);
      if (g) g.n++;
      else groups.set(key, { n: 1, example: v });
    }
    const lines = [`${violations.length} violations in ${groups.size} groups (seed ${this.seed}; reproduce with IOI_FUZZ_SEED=${this.seed}):`];
    for (const [key, { n, example }] of [...groups].slice(0, limit)) {
      lines.push(`- ${n}× ${key}`);
      lines.push(`    first: ${example.category} input #${example.index} (${example.detail.slice(0, 300)}): ${example.input}${example.file ? `\n    full input: ${example.file}` : ""}`);
      if (example.stack) lines.push(`    stack: ${example.stack.split("\n").slice(0, 6).join("\n           ")}`);
    }
    return lines.join("\n");
  }
}

/** A short, printable rendering of an input for reports. */
export function preview(input: string | Uint8Array, max = 240): string {
  if (typeof input !== "string") {
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(input);
    } catch {
      const hex = Buffer.from(input.subarray(0, max / 2)).toString("hex");
      return `<${input.length} bytes, not UTF-8> ${hex}${input.length > max / 2 ? "…" : ""}`;
    }
    return `<${input.length} bytes> ${preview(text, max)}`;
  }
  const shown = JSON.stringify(input.length > max ? input.slice(0, max) : input);
  return input.length > max ? `${shown}… (${input.length} chars)` : shown;
}

/** Runs `fn`, returning what it returned or threw and how long it took (ms). */
export function measure<T>(fn: () => T): { ok: true; value: T; ms: number } | { ok: false; error: unknown; ms: number } {
  const started = performance.now();
  try {
    const value = fn();
    return { ok: true, value, ms: performance.now() - started };
  } catch (error) {
    return { ok: false, error, ms: performance.now() - started };
  }
}

export async function measureAsync<T>(
  fn: () => Promise<T>,
): Promise<{ ok: true; value: T; ms: number } | { ok: false; error: unknown; ms: number }> {
  const started = performance.now();
  try {
    const value = await fn();
    return { ok: true, value, ms: performance.now() - started };
  } catch (error) {
    return { ok: false, error, ms: performance.now() - started };
  }
}

/** Name, first message line and top stack frames of an error, for reports. */
export function describeError(error: unknown): { detail: string; stack: string | undefined } {
  if (error instanceof Error) return { detail: `${error.name}: ${error.message.split("\n")[0]}`, stack: error.stack };
  return { detail: `non-Error thrown: ${String(error)}`, stack: undefined };
}

/** A PRNG seeded from another one's seed and a label, so each category is reproducible on its own. */
export function subSeed(seed: number, label: string): number {
  let h = seed >>> 0;
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x9e3779b1) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/*//////////////////////////////////////////////////////////////
                       JSON VALUE MUTATIONS
//////////////////////////////////////////////////////////////*/

type Container = Record<string, unknown> | unknown[];
type Slot = { parent: Container | undefined; key: string | number | undefined; value: unknown; depth: number; path: string };

/** Defines an own enumerable property (works for "__proto__" too, unlike assignment). */
export function setOwn(object: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
}

function slotsOf(root: unknown, limit = 5000): Slot[] {
  const out: Slot[] = [{ parent: undefined, key: undefined, value: root, depth: 0, path: "$" }];
  for (let i = 0; i < out.length && out.length < limit; i++) {
    const { value, depth, path: p } = out[i]!;
    if (Array.isArray(value)) {
      value.forEach((v, k) => out.push({ parent: value, key: k, value: v, depth: depth + 1, path: `${p}[${k}]` }));
    } else if (typeof value === "object" && value !== null) {
      for (const k of Object.keys(value)) {
        out.push({ parent: value as Record<string, unknown>, key: k, value: (value as Record<string, unknown>)[k], depth: depth + 1, path: `${p}.${k}` });
      }
    }
  }
  return out;
}

/** Strings that break parsers in interesting ways. */
export const WEIRD_STRINGS: readonly string[] = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udc00",
  "\ud83d",
  "\ufeff",
  "\u202e",
  "\u2028",
  "null",
  "true",
  "0",
  "-0",
  "NaN",
  "__proto__",
  "constructor",
  "toString",
  "%s%n%x",
  "../../etc/passwd",
  "\r\n",
  "😀",
  "0x",
  `0X${"ab".repeat(32)}`,
  `0x${"AB".repeat(32)}`,
  `0x${"ab".repeat(31)}`,
  `0x${"ab".repeat(33)}`,
  `0x${"gg".repeat(32)}`,
  `0x${"ab".repeat(20)}`,
  `0x${"ab".repeat(65)}`,
  "2026-02-22T10:16:00Z",
  "2026-02-30T25:61:61Z",
  "A".repeat(129),
  "A".repeat(1025),
  "A".repeat(4097),
];

/** Numbers that JSON, canonical JSON or the schemas refuse or mangle. */
export const SPECIAL_NUMBERS: readonly number[] = [NaN, Infinity, -Infinity, -0, 0, 0.5, -1, 1, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 2, 2 ** 64, 1e21, 1e-7, Number.MAX_VALUE, 5e-324];

/** Decimal-string look-alikes: amounts must be `^(0|[1-9][0-9]*)$` and fit their width. */
export const DECIMAL_VARIANTS: readonly string[] = [
  "",
  "00",
  "01",
  "+1",
  "-1",
  "1.0",
  "1e3",
  " 1",
  "1 ",
  "0x10",
  "١٢",
  "1_000",
  "18446744073709551615",
  "18446744073709551616",
  "340282366920938463463374607431768211455",
  "340282366920938463463374607431768211456",
  "9".repeat(80),
  "9".repeat(81),
  "NaN",
  "Infinity",
];

/** A random JSON-ish value (may include what JSON cannot hold when `exotic`). */
export function randomValue(prng: Prng, depth = 0, exotic = true): unknown {
  const kinds = depth > 3 ? ["null", "bool", "int", "string"] : ["null", "bool", "int", "float", "string", "array", "object", "weird"];
  switch (prng.pick(kinds)) {
    case "null":
      return null;
    case "bool":
      return prng.chance(0.5);
    case "int":
      return prng.int(-1000, 1_000_000);
    case "float":
      return exotic && prng.chance(0.3) ? prng.pick(SPECIAL_NUMBERS) : prng.next() * 1e6 - 5e5;
    case "string":
      return randomString(prng, exotic);
    case "array":
      return Array.from({ length: prng.int(0, 4) }, () => randomValue(prng, depth + 1, exotic));
    case "object": {
      const o: Record<string, unknown> = {};
      for (let i = prng.int(0, 4); i > 0; i--) setOwn(o, randomKey(prng, exotic), randomValue(prng, depth + 1, exotic));
      return o;
    }
    default:
      return exotic ? prng.pick([...WEIRD_STRINGS, ...DECIMAL_VARIANTS]) : randomString(prng, false);
  }
}

const ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./: \"\\\t\n\u00e9\u4e2d\u{1f600}";

export function randomString(prng: Prng, exotic = true): string {
  const chars = Array.from(ALPHABET);
  let s = "";
  for (let i = prng.int(0, 24); i > 0; i--) s += prng.pick(chars);
  if (exotic && prng.chance(0.1)) s += prng.pick(["\ud800", "\u0000", "\ufeff", "\udfff"]);
  return s;
}

export function randomKey(prng: Prng, exotic = true): string {
  if (exotic && prng.chance(0.2)) return prng.pick(["__proto__", "constructor", "", " ", "\ud800", "a\u0000", "😀", "$ref", "type", "packet_type"]);
  return `k_${prng.int(0, 99)}_${randomString(prng, false).replace(/[^a-z]/gi, "").slice(0, 6)}`;
}

/** Nests `value` `levels` deep in arrays or objects (as a JS value). */
export function nest(value: unknown, levels: number, prng: Prng): unknown {
  let v = value;
  const useArray = prng.chance(0.5);
  for (let i = 0; i < levels; i++) v = useArray ? [v] : { a: v };
  return v;
}

export type Mutation = { value: unknown; op: string };

const MUTATION_OPS = {
  delete: 12,
  rename: 8,
  addField: 8,
  swapType: 14,
  numberForString: 10,
  specialNumber: 8,
  decimalVariant: 8,
  string: 14,
  hexTweak: 10,
  nest: 3,
  array: 5,
  sibling: 6,
  proto: 2,
} as const;

/**
 * One to `max` random mutations of a deep copy of `root`: drop, rename or add keys, swap types, numbers
 * where decimal strings belong, NaN / ±Infinity / -0, decimal look-alikes, string damage (lone surrogates,
 * NUL, BOM, case, length), a changed hex digit (same shape, other value), nesting, array damage, a value
 * of another field, `__proto__` keys. `huge` allows 5 MB strings.
 */
export function mutateValue(
  prng: Prng,
  root: unknown,
  options: { max?: number; huge?: boolean; only?: ReadonlyArray<keyof typeof MUTATION_OPS>; where?: (value: unknown, path: string) => boolean } = {},
): Mutation {
  let value = structuredClone(root);
  const ops: string[] = [];
  const weights = options.only ? Object.fromEntries(options.only.map((k) => [k, MUTATION_OPS[k]])) as Record<string, number> : MUTATION_OPS;
  for (let n = prng.int(1, options.max ?? 2); n > 0; n--) {
    const all = slotsOf(value);
    const wanted = options.where ? all.filter((s) => options.where!(s.value, s.path)) : [];
    const slots = wanted.length > 0 ? wanted : all;
    const leaves = slots.filter((s) => typeof s.value !== "object" || s.value === null);
    const slot = prng.chance(0.7) && leaves.length > 0 ? prng.pick(leaves) : prng.pick(slots);
    const op = prng.weighted(weights);
    const result = applyMutation(prng, value, slot, op, all, options.huge === true);
    value = result.value;
    ops.push(`${result.op} at ${slot.path.length > 80 ? `${slot.path.slice(0, 80)}…` : slot.path}`);
  }
  return { value, op: ops.join("; ") };
}

function replaceAt(root: unknown, slot: Slot, replacement: unknown): unknown {
  if (!slot.parent) return replacement;
  if (Array.isArray(slot.parent)) slot.parent[slot.key as number] = replacement;
  else setOwn(slot.parent, slot.key as string, replacement);
  return root;
}

function applyMutation(prng: Prng, root: unknown, slot: Slot, op: string, slots: Slot[], huge: boolean): Mutation {
  const v = slot.value;
  switch (op) {
    case "delete": {
      if (!slot.parent) return { value: undefined, op: "delete root" };
      if (Array.isArray(slot.parent)) slot.parent.splice(slot.key as number, 1);
      else delete slot.parent[slot.key as string];
      return { value: root, op: "delete" };
    }
    case "rename": {
      if (!slot.parent || Array.isArray(slot.parent)) return applyMutation(prng, root, slot, "swapType", slots, huge);
      const key = slot.key as string;
      const renamed = prng.pick([
        `${key}_`,
        key.toUpperCase(),
        ` ${key}`,
        `${key}\u0000`,
        key.slice(0, -1),
        key.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()),
        key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
        "__proto__",
        "constructor",
        `${key}\ud800`,
        "",
      ]);
      const entries = Object.entries(slot.parent);
      for (const k of Object.keys(slot.parent)) delete slot.parent[k];
      for (const [k, item] of entries) setOwn(slot.parent, k === key ? renamed : k, item);
      return { value: root, op: `rename ${JSON.stringify(key)} → ${JSON.stringify(renamed)}` };
    }
    case "addField": {
      const target = typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : slot.parent && !Array.isArray(slot.parent) ? slot.parent : undefined;
      if (!target) return applyMutation(prng, root, slot, "swapType", slots, huge);
      const key = prng.chance(0.4) && slots.length > 1 ? String(prng.pick(slots).key ?? "x") : randomKey(prng);
      setOwn(target, key, randomValue(prng));
      return { value: root, op: `add field ${JSON.stringify(key)}` };
    }
    case "swapType": {
      const options: unknown[] = [null, true, false, 0, 1, -1, "", "x", [], {}, [v], { value: v }, randomValue(prng)];
      if (typeof v === "string" && /^-?\d+$/.test(v)) options.push(Number(v));
      if (typeof v === "number") options.push(String(v));
      const replacement = prng.pick(options);
      return { value: replaceAt(root, slot, replacement), op: `swap type → ${short(replacement)}` };
    }
    case "numberForString": {
      const replacement = typeof v === "string" && /^\d+$/.test(v) ? (prng.chance(0.8) ? Number(v) : Number(v) + 0.5) : prng.pick([1000, 1, 0, 1e21]);
      return { value: replaceAt(root, slot, replacement), op: `number for string → ${replacement}` };
    }
    case "specialNumber": {
      const replacement = prng.pick(SPECIAL_NUMBERS);
      return { value: replaceAt(root, slot, replacement), op: `special number → ${Object.is(replacement, -0) ? "-0" : replacement}` };
    }
    case "decimalVariant": {
      const replacement = prng.pick(DECIMAL_VARIANTS);
      return { value: replaceAt(root, slot, replacement), op: `decimal variant → ${JSON.stringify(replacement)}` };
    }
    case "string": {
      const s = typeof v === "string" ? v : String(v);
      const at = prng.int(0, s.length);
      const choices: Array<[string, () => string]> = [
        ["truncate", () => s.slice(0, prng.int(0, Math.max(0, s.length - 1)))],
        ["extend", () => s + randomString(prng)],
        ["upper", () => s.toUpperCase()],
        ["lone surrogate", () => s.slice(0, at) + prng.pick(["\ud800", "\udc00", "\udbff"]) + s.slice(at)],
        ["NUL", () => s.slice(0, at) + "\u0000" + s.slice(at)],
        ["BOM", () => "\ufeff" + s],
        ["whitespace", () => ` ${s}\t`],
        ["weird", () => prng.pick(WEIRD_STRINGS)],
        ["long", () => s.repeat(Math.max(2, Math.ceil(5000 / Math.max(1, s.length))))],
      ];
      if (huge) choices.push(["5 MB", () => "x".repeat(5 * 1024 * 1024)]);
      const [label, make] = prng.pick(choices);
      return { value: replaceAt(root, slot, make()), op: `string ${label}` };
    }
    case "hexTweak": {
      if (typeof v !== "string" || !/^0x[0-9a-f]+$/i.test(v) || v.length < 4) return applyMutation(prng, root, slot, "string", slots, huge);
      const i = prng.int(2, v.length - 1);
      const digit = "0123456789abcdef"[(parseInt(v[i]!, 16) + prng.int(1, 15)) % 16]!;
      return { value: replaceAt(root, slot, v.slice(0, i) + digit + v.slice(i + 1)), op: `hex digit ${i} changed` };
    }
    case "nest": {
      const levels = prng.pick([1, 2, 63, 64, 65, 200]);
      return { value: replaceAt(root, slot, nest(v, levels, prng)), op: `nest ${levels}` };
    }
    case "array": {
      const target = Array.isArray(v) ? v : Array.isArray(slot.parent) ? slot.parent : undefined;
      if (!target) return applyMutation(prng, root, slot, "swapType", slots, huge);
      const [label, act] = prng.pick<[string, () => void]>([
        ["empty", () => target.splice(0)],
        ["duplicate", () => target.length > 0 && target.push(structuredClone(target[prng.int(0, target.length - 1)]))],
        ["100 copies", () => target.length > 0 && target.push(...Array.from({ length: 100 }, () => structuredClone(target[0])))],
        ["reverse", () => target.reverse()],
        ["null item", () => target.splice(prng.int(0, target.length), 0, null)],
        ["sparse", () => (target.length += 2)],
      ]);
      act();
      return { value: root, op: `array ${label}` };
    }
    case "sibling": {
      const other = prng.pick(slots);
      return { value: replaceAt(root, slot, structuredClone(other.value)), op: `value of ${other.path.slice(0, 60)}` };
    }
    default: {
      const poisoned = JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}') as unknown;
      return { value: replaceAt(root, slot, poisoned), op: "__proto__ object" };
    }
  }
}

function short(value: unknown): string {
  if (Object.is(value, -0)) return "-0";
  try {
    const s = JSON.stringify(value);
    return s === undefined ? String(value) : s.length > 40 ? `${s.slice(0, 40)}…` : s;
  } catch {
    return String(value);
  }
}

/*//////////////////////////////////////////////////////////////
                         JSON RENDERING
//////////////////////////////////////////////////////////////*/

export type RenderStyle = {
  order: "asis" | "sorted" | "reversed" | "shuffled";
  space: "none" | "spaces" | "newlines" | "tabs" | "crlf";
  escapes: boolean;
  exoticNumbers: boolean;
  duplicateKeys: number;
};

export function randomStyle(prng: Prng): RenderStyle {
  return {
    order: prng.pick(["asis", "sorted", "reversed", "shuffled"] as const),
    space: prng.pick(["none", "spaces", "newlines", "tabs", "crlf"] as const),
    escapes: prng.chance(0.3),
    exoticNumbers: prng.chance(0.3),
    duplicateKeys: prng.chance(0.3) ? prng.int(1, 3) : 0,
  };
}

/**
 * JSON text of `value` in a chosen (usually non-canonical) spelling: key order, whitespace, `\u` escapes,
 * number spellings (1.0, 1e0, 1e400 for ±Infinity, bare NaN), and duplicated keys (the earlier copy
 * carries another value; JSON.parse keeps the last).
 */
export function renderJson(prng: Prng, value: unknown, style: RenderStyle): string {
  let duplicates = style.duplicateKeys;
  const gap = { none: ["", ""], spaces: [" ", " "], newlines: ["\n", "\n  "], tabs: ["\t", "\t"], crlf: ["\r\n", "\r\n "] }[style.space];
  const render = (v: unknown): string => {
    if (v === null || v === undefined) return "null";
    if (typeof v === "boolean") return String(v);
    if (typeof v === "number") {
      if (Number.isNaN(v)) return prng.pick(["NaN", "nan", "0/0"]);
      if (!Number.isFinite(v)) return v > 0 ? prng.pick(["1e400", "Infinity", "1E999"]) : prng.pick(["-1e400", "-Infinity"]);
      if (Object.is(v, -0)) return prng.pick(["-0", "-0.0", "-0e0"]);
      if (style.exoticNumbers && Number.isInteger(v) && prng.chance(0.5)) return prng.pick([`${v}.0`, `${v}e0`, `${v}E+00`, `${v}.000`]);
      return String(v);
    }
    if (typeof v === "string") return renderString(prng, v, style.escapes);
    if (Array.isArray(v)) return `[${gap[0]}${Array.from(v, (item) => render(item)).join(`,${gap[1]}`)}${gap[0]}]`;
    if (typeof v === "object") {
      let keys = Object.keys(v);
      if (style.order === "sorted") keys = [...keys].sort();
      else if (style.order === "reversed") keys = [...keys].reverse();
      else if (style.order === "shuffled") keys = shuffle(prng, keys);
      const parts: string[] = [];
      for (const k of keys) {
        if (duplicates > 0 && prng.chance(0.2)) {
          duplicates--;
          const decoy = `${renderString(prng, k, false)}:${gap[1]}${render(randomValue(prng, 3, false))}`;
          const real = `${renderString(prng, k, style.escapes)}:${gap[1]}${render((v as Record<string, unknown>)[k])}`;
          parts.push(...(prng.chance(0.7) ? [decoy, real] : [real, decoy]));
        } else {
          parts.push(`${renderString(prng, k, style.escapes)}:${gap[1]}${render((v as Record<string, unknown>)[k])}`);
        }
      }
      return `{${gap[0]}${parts.join(`,${gap[1]}`)}${gap[0]}}`;
    }
    return JSON.stringify(String(v));
  };
  return render(value);
}

function renderString(prng: Prng, s: string, escapes: boolean): string {
  let text = JSON.stringify(s);
  if (escapes && text.length > 2) {
    text = text.replace(/[a-zA-Z\/]/g, (c) => (prng.chance(0.15) ? (c === "/" ? "\\/" : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")[prng.chance(0.5) ? "toUpperCase" : "toLowerCase"]()}`) : c));
  }
  return text;
}

function shuffle<T>(prng: Prng, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = prng.int(0, i);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/*//////////////////////////////////////////////////////////////
                          TEXT MUTATIONS
//////////////////////////////////////////////////////////////*/

const TEXT_OPS = {
  truncate: 12,
  insertChar: 10,
  deleteChar: 6,
  duplicateSlice: 5,
  bom: 4,
  trailing: 5,
  leading: 3,
  numberToken: 10,
  unquoteDecimal: 10,
  deepNest: 6,
  unbalanced: 4,
  hexCase: 5,
  literal: 4,
  controlChars: 4,
  sliceSwap: 4,
} as const;

/** A random damage to JSON-like text (truncation, stray characters, number tokens, nesting, ...). */
export function mutateText(prng: Prng, text: string): { text: string; op: string } {
  const op = prng.weighted(TEXT_OPS);
  const at = prng.int(0, text.length);
  switch (op) {
    case "truncate":
      return { text: text.slice(0, prng.int(0, Math.max(0, text.length - 1))), op };
    case "insertChar": {
      const c = prng.pick(["{", "}", "[", "]", '"', ",", ":", "\\", "\u0000", "\ufeff", "\ud800", "\udc00", "\u2028", "\n", " ", "'", "x", "😀", "\u007f"]);
      return { text: text.slice(0, at) + c + text.slice(at), op: `insert ${JSON.stringify(c)} at ${at}` };
    }
    case "deleteChar":
      return { text: text.slice(0, at) + text.slice(at + 1), op: `delete at ${at}` };
    case "duplicateSlice": {
      const end = Math.min(text.length, at + prng.int(1, 64));
      return { text: text.slice(0, end) + text.slice(at, end) + text.slice(end), op: "duplicate slice" };
    }
    case "bom":
      return { text: prng.pick(["\ufeff", "\ufeff\ufeff", "\u00ef\u00bb\u00bf"]) + text, op: "BOM" };
    case "trailing":
      return { text: text + prng.pick(["x", "}", "]", ",", " garbage", "\u0000", "{}", "\n\n", "//c", "/* */"]), op: "trailing garbage" };
    case "leading":
      return { text: prng.pick([" ", "\n", "\t", "\r\n", "\u00a0", "\u2003"]) + text, op: "leading whitespace" };
    case "numberToken": {
      const replacement = prng.pick(["1e400", "-1e400", "-0", "NaN", "Infinity", "00", "1.5", "0x10", "123456789012345678901234567890", "9007199254740993", "1e-400", "-", "1.", ".5", "+1"]);
      const tokens = [...text.matchAll(/-?\d+(\.\d+)?([eE][+-]?\d+)?/g)];
      if (tokens.length === 0) return { text: text + replacement, op: "number token appended" };
      const t = prng.pick(tokens);
      return { text: text.slice(0, t.index!) + replacement + text.slice(t.index! + t[0].length), op: `number token → ${replacement}` };
    }
    case "unquoteDecimal": {
      const tokens = [...text.matchAll(/"(\d+)"/g)];
      if (tokens.length === 0) return mutateText(prng, text);
      const t = prng.pick(tokens);
      const replacement = prng.pick([t[1]!, `${t[1]}.0`, `${t[1]}e0`, "1e400", "-0", "NaN"]);
      return { text: text.slice(0, t.index!) + replacement + text.slice(t.index! + t[0].length), op: `amount ${t[0]} → ${replacement}` };
    }
    case "deepNest": {
      const n = prng.pick([65, 100, 1000, 10_000]);
      const inner = prng.chance(0.5) ? "[".repeat(n) + "]".repeat(n) : '{"a":'.repeat(n) + "1" + "}".repeat(n);
      const values = [...text.matchAll(/:(?=["\[{\dtfn-])/g)];
      if (values.length === 0 || prng.chance(0.3)) return { text: inner, op: `nesting ${n}` };
      const t = prng.pick(values);
      // Replace the value token after this colon with the nested text when it is a simple token.
      const rest = text.slice(t.index! + 1);
      const m = /^("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(rest);
      if (!m) return { text: text.slice(0, t.index! + 1) + inner + "," + rest, op: `nesting ${n} inserted` };
      return { text: text.slice(0, t.index! + 1) + inner + rest.slice(m[0].length), op: `nesting ${n} as a value` };
    }
    case "unbalanced": {
      const n = prng.pick([1, 64, 65, 10_000]);
      return { text: prng.chance(0.5) ? "[".repeat(n) + text : text + "]".repeat(n), op: `unbalanced ${n}` };
    }
    case "hexCase": {
      const tokens = [...text.matchAll(/0x[0-9a-f]{8,}/g)];
      if (tokens.length === 0) return mutateText(prng, text);
      const t = prng.pick(tokens);
      return { text: text.slice(0, t.index!) + t[0].toUpperCase().replace(/^0X/, prng.pick(["0x", "0X"])) + text.slice(t.index! + t[0].length), op: "hex upper case" };
    }
    case "literal": {
      const tokens = [...text.matchAll(/\b(true|false|null)\b/g)];
      const replacement = prng.pick(["True", "FALSE", "nul", "undefined", "0", '"true"', "None"]);
      if (tokens.length === 0) return { text: text.slice(0, at) + replacement + text.slice(at), op: `literal ${replacement}` };
      const t = prng.pick(tokens);
      return { text: text.slice(0, t.index!) + replacement + text.slice(t.index! + t[0].length), op: `literal → ${replacement}` };
    }
    case "controlChars": {
      const strings = [...text.matchAll(/"(?:[^"\\]|\\.)*"/g)];
      if (strings.length === 0) return mutateText(prng, text);
      const t = prng.pick(strings);
      const pos = t.index! + 1 + prng.int(0, Math.max(0, t[0].length - 2));
      const c = prng.pick(["\n", "\t", "\u0001", "\u001f", "\\x41", "\\u12", "\\ud800", "\\udc00\\ud800", "\\'", "\\a"]);
      return { text: text.slice(0, pos) + c + text.slice(pos), op: `in-string ${JSON.stringify(c)}` };
    }
    default: {
      const a = prng.int(0, text.length);
      const b = prng.int(0, text.length);
      const [lo, hi] = a < b ? [a, b] : [b, a];
      return { text: text.slice(hi) + text.slice(lo, hi) + text.slice(0, lo), op: "rotate slices" };
    }
  }
}

/** Byte-level damage: invalid UTF-8 (lone continuation, overlong, surrogate, truncated sequence), flips. */
export function mutateBytes(prng: Prng, bytes: Uint8Array): { bytes: Uint8Array; op: string } {
  const at = prng.int(0, bytes.length);
  const insert = (extra: number[], op: string) => {
    const out = new Uint8Array(bytes.length + extra.length);
    out.set(bytes.subarray(0, at));
    out.set(extra, at);
    out.set(bytes.subarray(at), at + extra.length);
    return { bytes: out, op };
  };
  switch (prng.int(0, 6)) {
    case 0:
      return insert([0xff], "byte 0xff");
    case 1:
      return insert([0xc0, 0xaf], "overlong '/'");
    case 2:
      return insert([0xed, 0xa0, 0x80], "UTF-8 encoded surrogate");
    case 3:
      return insert([0xe2, 0x82], "truncated sequence");
    case 4:
      return insert([0x80], "lone continuation byte");
    case 5: {
      const out = bytes.slice();
      for (let i = prng.int(1, 4); i > 0 && out.length > 0; i--) out[prng.int(0, out.length - 1)]! ^= 1 << prng.int(0, 7);
      return { bytes: out, op: "bit flips" };
    }
    default:
      return { bytes: randomBytes(prng, prng.int(0, 256)), op: "random bytes" };
  }
}

export function randomBytes(prng: Prng, length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = prng.int(0, 255);
  return out;
}

/*//////////////////////////////////////////////////////////////
                              YAML
//////////////////////////////////////////////////////////////*/

/**
 * Block YAML of `value` that reads back to the same JSON value: every string double-quoted (a JSON string
 * is a valid YAML double-quoted scalar), keys quoted, empty collections in flow form.
 */
export function toYaml(value: unknown, indent = ""): string {
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return value.map((item) => `\n${indent}- ${toYaml(item, `${indent}  `).replace(/^\n\s*/, "")}`).join("");
  }
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value);
    if (entries.length === 0) return "{}";
    return entries
      .map(([key, item]) => {
        const rendered = toYaml(item, `${indent}  `);
        return `\n${indent}${JSON.stringify(key)}:${rendered.startsWith("\n") ? rendered : ` ${rendered}`}`;
      })
      .join("");
  }
  if (typeof value === "number") {
    if (Number.isNaN(value)) return ".nan";
    if (!Number.isFinite(value)) return value > 0 ? ".inf" : "-.inf";
    if (Object.is(value, -0)) return "-0";
  }
  return JSON.stringify(value) ?? "null";
}

export function yamlDocument(value: unknown): string {
  return `${toYaml(value).replace(/^\n/, "")}\n`;
}

const YAML_OPS = {
  anchorAlias: 8,
  tag: 8,
  mergeKey: 6,
  directive: 6,
  multiDoc: 5,
  complexKey: 4,
  nonStringKey: 6,
  duplicateKey: 6,
  plainScalar: 12,
  blockScalar: 4,
  tabs: 4,
  crlf: 3,
  bom: 3,
  nul: 3,
  flowNest: 4,
  blockNest: 4,
  billionLaughs: 3,
  longKey: 2,
  manyTokens: 1,
  textDamage: 8,
} as const;

/**
 * One YAML-specific mutation of a YAML document (anchors, tags, merge keys, directives, ...). The costly
 * ones (60 000 keys, a 70 000-character key) only when `heavy`.
 */
export function mutateYaml(prng: Prng, yaml: string, heavy = false): { text: string; op: string } {
  const light = Object.fromEntries(Object.entries(YAML_OPS).filter(([k]) => k !== "manyTokens" && k !== "longKey")) as Record<string, number>;
  const op = heavy ? prng.pick(["manyTokens", "longKey"] as const) : prng.weighted(light);
  const lines = yaml.split("\n");
  const valueLines = lines.map((l, i) => [l, i] as const).filter(([l]) => /: ["\d\[{tfn-]/.test(l));
  const pickLine = () => (valueLines.length > 0 ? prng.pick(valueLines)[1] : 0);
  const withLine = (i: number, f: (line: string) => string) => lines.map((l, j) => (j === i ? f(l) : l)).join("\n");
  switch (op) {
    case "anchorAlias": {
      const a = pickLine();
      const b = pickLine();
      let text = withLine(a, (l) => l.replace(/: /, ": &anchor1 "));
      text = text.split("\n").map((l, j) => (j === b && j !== a ? l.replace(/: .*$/, ": *anchor1") : l)).join("\n");
      return { text, op };
    }
    case "tag": {
      const tag = prng.pick(["!!str", "!!int", "!!float", "!!binary", "!!map", "!!seq", "!!timestamp", "!custom", "!<tag:yaml.org,2002:str>", "!!python/object:os.system", "!"]);
      return { text: withLine(pickLine(), (l) => l.replace(/: /, `: ${tag} `)), op: `tag ${tag}` };
    }
    case "mergeKey": {
      const i = pickLine();
      const indent = /^\s*/.exec(lines[i] ?? "")![0];
      const merge = prng.pick([`${indent}"<<": {"x": 1}`, `${indent}<<: {x: 1}`, `${indent}<<: [{a: 1}, {b: 2}]`]);
      return { text: lines.slice(0, i).concat(merge, lines.slice(i)).join("\n"), op: "merge key" };
    }
    case "directive": {
      const d = prng.pick(["%YAML 1.1\n---\n", "%YAML 1.2\n---\n", "%YAML 2.0\n---\n", "%TAG ! tag:example.com,2000:\n---\n", "%FOO bar\n---\n", "---\n", "--- !!map\n"]);
      return { text: d + yaml, op: `directive ${JSON.stringify(d.split("\n")[0])}` };
    }
    case "multiDoc":
      return { text: yaml + prng.pick(["---\nfoo: 1\n", "...\n---\n{}\n", "...\n", "---\n"]), op: "multiple documents" };
    case "complexKey":
      return { text: `? [a, b]\n: 1\n${yaml}`, op: "complex key" };
    case "nonStringKey": {
      const key = prng.pick(["1", "null", "true", "~", "1.5", "[a]", "{a: 1}", "-1", "0x10"]);
      const i = pickLine();
      const indent = /^\s*/.exec(lines[i] ?? "")![0];
      return { text: lines.slice(0, i).concat(`${indent}${key}: "x"`, lines.slice(i)).join("\n"), op: `key ${key}` };
    }
    case "duplicateKey": {
      const i = pickLine();
      return { text: lines.slice(0, i + 1).concat(lines[i] ?? "", lines.slice(i + 1)).join("\n"), op: "duplicate line" };
    }
    case "plainScalar": {
      const quoted = [...yaml.matchAll(/"(\d+|0x[0-9a-f]+|[a-z_]+|[^"\\]*)"/g)];
      if (quoted.length === 0) return mutateYaml(prng, yaml, heavy);
      const t = prng.pick(quoted);
      const inner = t[1]!;
      const replacement = prng.pick([inner, `'${inner}'`, "1e400", ".nan", ".inf", "-.inf", "-0", "0x3e8", "0o17", "1_000", "+12", "1000.0", "2001-12-14", "yes", "~", "Null", "TRUE", "12:30:00", `"${inner}\\x41"`, `"${inner}\\ud800"`]);
      return { text: yaml.slice(0, t.index!) + replacement + yaml.slice(t.index! + t[0].length), op: `scalar ${t[0].slice(0, 30)} → ${replacement.slice(0, 30)}` };
    }
    case "blockScalar": {
      const i = pickLine();
      const indent = /^\s*/.exec(lines[i] ?? "")![0];
      return { text: withLine(i, (l) => l.replace(/: .*$/, `: ${prng.pick(["|", ">-", "|+", "|2"])}\n${indent}  block text`)), op: "block scalar" };
    }
    case "tabs":
      return { text: yaml.replace(/^( {2})/gm, () => (prng.chance(0.3) ? "\t" : "  ")), op: "tab indentation" };
    case "crlf":
      return { text: yaml.replace(/\n/g, "\r\n"), op: "CRLF" };
    case "bom":
      return { text: prng.chance(0.5) ? `\ufeff${yaml}` : withLine(pickLine(), (l) => `\ufeff${l}`), op: "BOM" };
    case "nul": {
      const at = prng.int(0, yaml.length);
      return { text: `${yaml.slice(0, at)}\u0000${yaml.slice(at)}`, op: "NUL" };
    }
    case "flowNest": {
      const n = prng.pick([63, 65, 1000, 10_000]);
      return { text: withLine(pickLine(), (l) => l.replace(/: .*$/, `: ${"[".repeat(n)}${"]".repeat(n)}`)), op: `flow nesting ${n}` };
    }
    case "blockNest": {
      const n = prng.pick([70, 200, 10_000]);
      if (prng.chance(0.5)) return { text: `a: ${"- ".repeat(n)}x\n`, op: `sequence nesting ${n} on one line` };
      let text = "";
      for (let i = 0; i < Math.min(n, 2000); i++) text += `${" ".repeat(i)}k${i}:\n`;
      return { text: `${text}${" ".repeat(Math.min(n, 2000))}v\n`, op: `indented nesting ${Math.min(n, 2000)}` };
    }
    case "billionLaughs": {
      let text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n';
      for (let i = 0; i < 8; i++) text += `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(9).fill(`*${String.fromCharCode(97 + i)}`).join(",")}]\n`;
      return { text, op: "billion laughs" };
    }
    case "longKey":
      return { text: `${"k".repeat(prng.pick([1024, 1025, 70_000]))}: 1\n${yaml}`, op: "long implicit key" };
    case "manyTokens": {
      const parts: string[] = [];
      for (let i = 0; i < 60_000; i++) parts.push(`k${i}: ${i}`);
      return { text: parts.join("\n"), op: "60 000 keys" };
    }
    default:
      return mutateText(prng, yaml);
  }
}
