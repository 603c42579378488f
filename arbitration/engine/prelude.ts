/**
 * The judge's trusted JavaScript, run inside the sealed engine before any bundle code (the "harness
 * source" the judge runtime hash commits to). Two preludes, one per engine instance:
 *
 * - {@link SUITE_PRELUDE}, in the suite's instance: a CommonJS shim over the suite's files, `console`, a
 *   seeded `Math.random`, and the harness module `require("ioi:harness")` with `test(name, fn)` to register
 *   tests, `call(fn, args, { module })` to reach the deliverable, and `ok`/`equal`/`fail` assertions;
 * - {@link DELIVERABLE_PRELUDE}, in the deliverable's instance: the same shim over the deliverable's files,
 *   `console`, a seeded `Math.random`, and `invoke`, which runs one exported function on JSON arguments
 *   and answers with JSON.
 *
 * Only strings cross between an instance and the host (and so between suite and deliverable): a call is
 * `JSON.stringify`-ed in the suite, parsed and checked by the host, re-parsed in the deliverable, and the
 * answer travels back the same way. Neither instance holds an object of the other or of the host.
 *
 * Module semantics: `.js`/`.cjs` files are CommonJS (`require`, `module.exports`, `exports`, `__filename`,
 * `__dirname`); `require` resolves only relative paths to files of the same bundle (`./x`, `./x.js`,
 * `./dir/index.js`); there are no built-in modules (`fs`, `net`, `os`, `child_process`... all fail with
 * "Cannot find module"). ES module syntax is not supported.
 *
 * How a test ends (the suite instance classifies it; the host decides attribution):
 * - it returns (or its promise fulfils): passed;
 * - it throws a harness assertion (`ok`, `equal`, `fail`) or a deliverable's error from `call` it did not
 *   catch: failed (`kind: "assertion"` / `"deliverable"`);
 * - it throws anything else after a call into the deliverable returned: failed (`"error_after_call"`: the
 *   deliverable's answer may be what broke it);
 * - it throws anything else before any call, a ReferenceError or SyntaxError, or misuses the harness: the
 *   suite crashed (`"crash"`); an `InternalError` "out of memory"/"stack overflow": `"resource"`.
 */
import { createHash } from "node:crypto";

/** Longest request or answer string that crosses the bridge, in UTF-16 code units. */
export const MAX_MESSAGE_LENGTH = 1024 * 1024;

/** Longest error message an answer carries. */
export const MAX_ERROR_LENGTH = 4096;

/** Deepest nesting of arrays and objects in call arguments and results. */
export const MAX_JSON_DEPTH = 64;

/** Longest test name and function name. */
export const MAX_NAME_LENGTH = 256;

/** Most tests one suite may register. */
export const MAX_TESTS = 10_000;

/** The specifier of the harness module inside the suite's instance. */
export const HARNESS_MODULE = "ioi:harness";

/** Shared by both preludes: primordials, the seeded PRNG, console, the CommonJS shim. `host` is the host's object. */
const COMMON = String.raw`
"use strict";
const MAX_ERROR_LENGTH = ${MAX_ERROR_LENGTH};
const MAX_JSON_DEPTH = ${MAX_JSON_DEPTH};
const stringify = JSON.stringify;
const parse = JSON.parse;
const apply = Reflect.apply;
const ownKeys = Object.keys;
const getPrototypeOf = Object.getPrototypeOf;
const defineProperty = Object.defineProperty;
const freeze = Object.freeze;
const create = Object.create;
const hasOwn = Object.prototype.hasOwnProperty;
const isArray = Array.isArray;
const arrayPush = Array.prototype.push;
const arrayJoin = Array.prototype.join;
const stringSlice = String.prototype.slice;
const stringSplit = String.prototype.split;
const stringEndsWith = String.prototype.endsWith;
const ObjectProto = Object.prototype;
const ErrorCtor = Error;
const InternalErrorCtor = InternalError;
const ReferenceErrorCtor = ReferenceError;
const SyntaxErrorCtor = SyntaxError;
const promiseResolve = (value) => Promise.resolve(value);
const promiseThen = Promise.prototype.then;
const numberIsFinite = Number.isFinite;
const mathImul = Math.imul;
const StringCtor = String;
const print = host.print;
const compile = host.compile;
const files = parse(host.files);

// sfc32 over the 128-bit seed: every instance with the same seed draws the same sequence.
let s0 = host.seed[0] >>> 0, s1 = host.seed[1] >>> 0, s2 = host.seed[2] >>> 0, s3 = host.seed[3] >>> 0;
function next32() {
  const t = (((s0 + s1) >>> 0) + s3) >>> 0;
  s3 = (s3 + 1) >>> 0;
  s0 = s1 ^ (s1 >>> 9);
  s1 = (s2 + (s2 << 3)) >>> 0;
  s2 = (s2 << 21) | (s2 >>> 11);
  s2 = (s2 + t) >>> 0;
  return t;
}
for (let i = 0; i < 12; i++) next32();
function random() { return ((next32() >>> 5) * 67108864 + (next32() >>> 6)) / 9007199254740992; }
defineProperty(Math, "random", { value: random, writable: true, configurable: true, enumerable: false });

function clip(text) { return text.length <= MAX_ERROR_LENGTH ? text : apply(stringSlice, text, [0, MAX_ERROR_LENGTH]); }
function messageOf(error) {
  try {
    if (typeof error === "object" && error !== null && typeof error.message === "string") {
      const name = typeof error.name === "string" ? error.name : "Error";
      return clip(name + ": " + error.message);
    }
    return clip(StringCtor(error));
  } catch (e) {
    return "an error whose message cannot be read";
  }
}
function describe(value) {
  if (typeof value === "string") return value;
  try { const text = stringify(value); return text === undefined ? StringCtor(value) : text; } catch (e) { try { return StringCtor(value); } catch (e2) { return "[unprintable]"; } }
}
function format(args) {
  const parts = [];
  for (let i = 0; i < args.length; i++) apply(arrayPush, parts, [describe(args[i])]);
  return apply(arrayJoin, parts, [" "]);
}
const consoleObject = {};
for (const key of ["log", "info", "warn", "error", "debug"]) {
  defineProperty(consoleObject, key, { value: function (...args) { print(format(args) + "\n"); }, writable: true, configurable: true, enumerable: true });
}
defineProperty(globalThis, "console", { value: consoleObject, writable: true, configurable: true, enumerable: false });

class ModuleNotFoundError extends ErrorCtor {
  constructor(specifier) { super("Cannot find module '" + specifier + "': only files of the bundle can be required"); this.name = "ModuleNotFoundError"; }
}
function dirname(path) {
  const parts = apply(stringSplit, path, ["/"]);
  parts.length = parts.length - 1;
  return apply(arrayJoin, parts, ["/"]);
}
function resolvePath(dir, specifier) {
  if (typeof specifier !== "string" || !(specifier[0] === "." && (specifier[1] === "/" || (specifier[1] === "." && specifier[2] === "/")))) return null;
  const out = dir === "" ? [] : apply(stringSplit, dir, ["/"]);
  for (const part of apply(stringSplit, specifier, ["/"])) {
    if (part === "" || part === ".") continue;
    if (part === "..") { if (out.length === 0) return null; out.length = out.length - 1; continue; }
    apply(arrayPush, out, [part]);
  }
  const path = apply(arrayJoin, out, ["/"]);
  for (const candidate of [path, path + ".js", path + ".cjs", path + "/index.js"]) {
    if (apply(hasOwn, files, [candidate]) && !apply(stringEndsWith, candidate, [".mjs"])) return candidate;
  }
  return null;
}
const cache = create(null);
function loadModule(path, builtins) {
  if (cache[path] !== undefined) return cache[path].exports;
  const module = { exports: {} };
  cache[path] = module;
  const dir = dirname(path);
  const requireHere = function require(specifier) {
    if (builtins !== null && apply(hasOwn, builtins, [specifier])) return builtins[specifier];
    const target = resolvePath(dir, specifier);
    if (target === null) throw new ModuleNotFoundError(StringCtor(specifier));
    return loadModule(target, builtins);
  };
  const fn = compile(path);
  apply(fn, module.exports, [module.exports, requireHere, module, path, dir]);
  return module.exports;
}
`;

/**
 * The suite's prelude: evaluated as a script whose value is a function of the host object, returning the
 * host's handles `{ runEntry, runTest, collect }`.
 */
export const SUITE_PRELUDE = String.raw`(function (host) {
${COMMON}
const MAX_NAME_LENGTH = ${MAX_NAME_LENGTH};
const register = host.register;
const invoke = host.invoke;
const weakSetAdd = WeakSet.prototype.add;
const weakSetHas = WeakSet.prototype.has;
const branded = new WeakSet();
const tests = [];
let phase = "load";
let calls = 0;
let state = null;

class AssertionError extends ErrorCtor { constructor(message) { super(message); this.name = "AssertionError"; } }
class DeliverableError extends ErrorCtor { constructor(message) { super(message); this.name = "DeliverableError"; } }
class HarnessUsageError extends ErrorCtor { constructor(message) { super(message); this.name = "HarnessUsageError"; } }

function fail(message) {
  const error = new AssertionError(message === undefined ? "failed" : StringCtor(message));
  apply(weakSetAdd, branded, [error]);
  throw error;
}
function ok(value, message) { if (!value) fail(message === undefined ? "expected a truthy value" : message); }
function canonical(value, depth) {
  if (depth > MAX_JSON_DEPTH) return "...";
  if (value === undefined) return "undefined";
  if (typeof value === "number") return numberIsFinite(value) ? (value === 0 && 1 / value < 0 ? "-0" : StringCtor(value)) : StringCtor(value);
  if (typeof value === "bigint") return StringCtor(value) + "n";
  if (typeof value !== "object" || value === null) return stringify(value) === undefined ? StringCtor(value) : stringify(value);
  const parts = [];
  if (isArray(value)) {
    for (let i = 0; i < value.length; i++) apply(arrayPush, parts, [canonical(value[i], depth + 1)]);
    return "[" + apply(arrayJoin, parts, [","]) + "]";
  }
  const keys = ownKeys(value);
  keys.sort();
  for (const key of keys) apply(arrayPush, parts, [stringify(key) + ":" + canonical(value[key], depth + 1)]);
  return "{" + apply(arrayJoin, parts, [","]) + "}";
}
function equal(actual, expected, message) {
  const a = canonical(actual, 0);
  const b = canonical(expected, 0);
  if (a !== b) fail((message === undefined ? "" : StringCtor(message) + ": ") + "expected " + b + ", got " + a);
}
function test(name, fn) {
  if (phase !== "load") throw new HarnessUsageError("test() registers tests while the suite loads, not inside a test");
  if (typeof name !== "string" || name.length === 0 || name.length > MAX_NAME_LENGTH) throw new HarnessUsageError("test(name, fn): name must be a string of 1 to " + MAX_NAME_LENGTH + " characters");
  if (typeof fn !== "function") throw new HarnessUsageError("test(name, fn): fn must be a function");
  register(name);
  apply(arrayPush, tests, [fn]);
}
function call(fn, args, options) {
  if (phase !== "test") throw new HarnessUsageError("call() reaches the deliverable only inside a test");
  if (typeof fn !== "string") throw new HarnessUsageError("call(fn, args): fn must be a string");
  if (args === undefined) args = [];
  if (!isArray(args)) throw new HarnessUsageError("call(fn, args): args must be an array");
  const module = options === undefined || options === null ? undefined : options.module;
  if (module !== undefined && typeof module !== "string") throw new HarnessUsageError("call(fn, args, options): options.module must be a string");
  const request = stringify({ module: module === undefined ? null : module, fn: fn, args: args });
  const answer = parse(invoke(request));
  calls++;
  if (apply(hasOwn, answer, ["ok"])) return answer.ok;
  const error = new DeliverableError(answer.error);
  apply(weakSetAdd, branded, [error]);
  throw error;
}
const harness = freeze({ test, call, ok, equal, fail, AssertionError, DeliverableError });

function outcome(error) {
  let kind;
  if (typeof error === "object" && error !== null && apply(weakSetHas, branded, [error])) kind = error instanceof DeliverableError ? "deliverable" : "assertion";
  else if (error instanceof InternalErrorCtor && (error.message === "out of memory" || error.message === "stack overflow")) kind = "resource";
  else if (error instanceof ReferenceErrorCtor || error instanceof SyntaxErrorCtor || error instanceof HarnessUsageError || error instanceof ModuleNotFoundError) kind = "crash";
  else kind = calls > 0 ? "error_after_call" : "crash";
  return { passed: false, kind, message: messageOf(error) };
}
function isThenable(value) {
  return (typeof value === "object" || typeof value === "function") && value !== null && typeof value.then === "function";
}
function runEntry(path) {
  loadModule(path, { "${HARNESS_MODULE}": harness });
  phase = "ready";
  return tests.length;
}
function runTest(index) {
  phase = "test";
  calls = 0;
  state = null;
  let result;
  try {
    result = apply(tests[index], undefined, []);
  } catch (error) {
    phase = "ready";
    return stringify(outcome(error));
  }
  if (isThenable(result)) {
    apply(promiseThen, promiseResolve(result), [() => { state = { passed: true }; }, (error) => { state = outcome(error); }]);
    return "pending";
  }
  phase = "ready";
  return stringify({ passed: true });
}
function collect() {
  phase = "ready";
  return state === null ? "" : stringify(state);
}
function crashOutcome(error) { return stringify(outcome(error)); }
return { runEntry, runTest, collect, crashOutcome };
})`;

/**
 * The deliverable's prelude: evaluated as a script whose value is a function of the host object, returning
 * the host's handles `{ invoke, collect }`.
 */
export const DELIVERABLE_PRELUDE = String.raw`(function (host) {
${COMMON}
class NotJsonError extends ErrorCtor {}
function kindOf(value) {
  if (value === undefined) return "undefined";
  if (typeof value === "number") return StringCtor(value);
  if (typeof value === "object" && value !== null) return "an object that is not plain";
  return "a " + typeof value;
}
function toJson(value, where, depth) {
  if (value === null || typeof value === "boolean" || typeof value === "string") return value;
  if (typeof value === "number") {
    if (!numberIsFinite(value)) throw new NotJsonError(where + " is " + kindOf(value) + ", which is not JSON");
    return value;
  }
  if (typeof value !== "object") throw new NotJsonError(where + " is " + kindOf(value) + ", which is not JSON");
  if (depth >= MAX_JSON_DEPTH) throw new NotJsonError(where + " nests deeper than " + MAX_JSON_DEPTH + " levels");
  if (isArray(value)) {
    const out = [];
    for (let i = 0; i < value.length; i++) apply(arrayPush, out, [toJson(value[i], where + "[" + i + "]", depth + 1)]);
    return out;
  }
  const proto = getPrototypeOf(value);
  if (proto !== ObjectProto && proto !== null) throw new NotJsonError(where + " is " + kindOf(value) + ", which is not JSON");
  const out = {};
  for (const key of ownKeys(value)) defineProperty(out, key, { value: toJson(value[key], where + "." + key, depth + 1), enumerable: true, writable: true, configurable: true });
  return out;
}
let state = null;
let currentFn = "";
function answer(value) {
  try {
    return stringify({ ok: toJson(value, "the result", 0) });
  } catch (error) {
    if (error instanceof NotJsonError) return stringify({ error: currentFn + " returned a value that is not JSON: " + error.message });
    throw error;
  }
}
function failure(error) {
  if (error instanceof InternalErrorCtor && (error.message === "out of memory" || error.message === "stack overflow")) return stringify({ fault: "memory" });
  return stringify({ error: messageOf(error) });
}
function exported(exportsValue, fn) {
  if (exportsValue === null || (typeof exportsValue !== "object" && typeof exportsValue !== "function")) return undefined;
  if (apply(hasOwn, exportsValue, [fn])) return exportsValue[fn];
  if (fn in ObjectProto || fn in Function.prototype) return undefined;
  return exportsValue[fn];
}
function invoke(request) {
  state = null;
  const { module, fn, args } = parse(request);
  currentFn = fn;
  try {
    const exportsValue = loadModule(module, null);
    const target = exported(exportsValue, fn);
    if (typeof target !== "function") return stringify({ error: module + " does not export a function " + stringify(fn) });
    const result = apply(target, exportsValue, args);
    if ((typeof result === "object" || typeof result === "function") && result !== null && typeof result.then === "function") {
      apply(promiseThen, promiseResolve(result), [(value) => { state = answer(value); }, (error) => { state = failure(error); }]);
      return "pending";
    }
    return answer(result);
  } catch (error) {
    return failure(error);
  }
}
function collect() { return state === null ? "" : state; }
return { invoke, collect };
})`;

/** sha256 (hex) of both preludes: which harness a replay ran with (part of the judge runtime hash and every UPIP record). */
export const HARNESS_SHA256: string = createHash("sha256").update(SUITE_PRELUDE).update("\0").update(DELIVERABLE_PRELUDE).digest("hex");
