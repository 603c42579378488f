/**
 * The two trusted scripts the sandbox writes next to untrusted code, as JavaScript source text (they run
 * inside the isolated child processes, not in this process):
 *
 * - {@link HARNESS_SOURCE}, written at `.ioi/harness.js` in the suite's directory (process A): the only way
 *   the suite reaches the deliverable, `call(fn, args, { module })`, a Promise of the JSON result;
 * - {@link HOST_SOURCE}, written at `.ioi/host.js` in the deliverable's directory (process B): pins the
 *   sources of nondeterminism it can, then loads deliverable modules on demand and answers calls.
 *
 * What the host pins, before any deliverable code runs (best effort; each fresh host starts over):
 * - `Math.random`, `crypto.randomBytes`/`randomFill(Sync)`/`randomInt`/`randomUUID`/`getRandomValues` and
 *   `globalThis.crypto.getRandomValues`/`randomUUID`: one seeded PRNG (mulberry32, {@link PRNG_SEED});
 * - `Date.now()`, `new Date()`, `Date()`: {@link PINNED_TIME_MS}; `performance.now()`: 0 and
 *   `performance.timeOrigin`: the same instant; `process.hrtime()`: [1, 0], `hrtime.bigint()`: 1e9;
 *   `process.uptime()`: 1; `process.pid` is 1 anyway (own PID namespace).
 * What it does not pin: OpenSSL's own randomness (key generation, `crypto.subtle`), `Intl` formatting
 * with no date, OS and memory statistics (`os.*`, `process.memoryUsage()`, `process.cpuUsage()`), how
 * much work fits in a timer or before a call timeout, and any fresh realm (`vm.runInNewContext` gets a
 * real `Date` and `Math.random`). Nor can it stop the deliverable undoing the pins: code that wants
 * nondeterminism gets it, and its replays fail safe as `REPLAY_NONDETERMINISTIC` when answers differ.
 *
 * Both are plain CommonJS with no dependencies. {@link HARNESS_SHA256} covers both texts and is recorded in
 * every UPIP record (`IOI_HARNESS_SHA256`), so replays with another harness never look identical.
 */
import { createHash } from "node:crypto";

import {
  MAX_ERROR_LENGTH,
  MAX_FN_LENGTH,
  MAX_JSON_DEPTH,
  MAX_MESSAGE_BYTES,
  PINNED_PERFORMANCE_NOW,
  PINNED_TIME_MS,
  PRNG_SEED,
} from "./protocol";

/** `toJson(value, where)`: a plain-JSON copy of `value`, or a thrown Error naming the first part that is not JSON. */
const TO_JSON = String.raw`
const MAX_JSON_DEPTH = ${MAX_JSON_DEPTH};
class NotJsonError extends Error {}
function describe(value) {
  if (value === undefined) return "undefined";
  if (typeof value === "number") return String(value);
  if (typeof value === "object" && value !== null) {
    let name = "an object";
    try { const proto = Object.getPrototypeOf(value); if (proto && proto.constructor && typeof proto.constructor.name === "string") name = "a " + proto.constructor.name; } catch (e) {}
    return name;
  }
  return "a " + typeof value;
}
function toJson(value, where, depth, seen) {
  if (depth === undefined) { depth = 0; seen = new Set(); }
  if (value === null || typeof value === "boolean" || typeof value === "string") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new NotJsonError(where + " is " + describe(value) + ", which is not JSON");
    return value;
  }
  if (typeof value !== "object") throw new NotJsonError(where + " is " + describe(value) + ", which is not JSON");
  if (depth >= MAX_JSON_DEPTH) throw new NotJsonError(where + " nests deeper than " + MAX_JSON_DEPTH + " levels");
  if (seen.has(value)) throw new NotJsonError(where + " is circular");
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      const out = [];
      for (let i = 0; i < value.length; i++) out.push(toJson(value[i], where + "[" + i + "]", depth + 1, seen));
      return out;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw new NotJsonError(where + " is " + describe(value) + ", not a plain object");
    const out = {};
    for (const key of Object.keys(value)) {
      Object.defineProperty(out, key, { value: toJson(value[key], where + "." + key, depth + 1, seen), enumerable: true, writable: true, configurable: true });
    }
    return out;
  } finally {
    seen.delete(value);
  }
}
`;

/** The suite's side, `.ioi/harness.js` (process A). */
export const HARNESS_SOURCE = String.raw`"use strict";
// ioi-harness/1, suite side. Written by the sandbox; the suite reaches the deliverable only through call().
// The deliverable runs in another process: nothing it does can touch this process, its output or its summary.
const net = require("node:net");
const MAX_MESSAGE_BYTES = ${MAX_MESSAGE_BYTES};
const MAX_FN_LENGTH = ${MAX_FN_LENGTH};
${TO_JSON}
const pending = new Map();
let nextId = 1;
let requests = null;
let received = "";
let closedReason = null;

function refresh() {
  if (pending.size > 0) process.stdin.ref();
  else process.stdin.unref();
}

function failAll(reason) {
  if (closedReason === null) closedReason = reason;
  const waiting = [...pending.values()];
  pending.clear();
  for (const { reject } of waiting) reject(new Error(reason));
  refresh();
}

function onAnswer(line) {
  let message;
  try { message = JSON.parse(line); } catch (e) { return; }
  if (typeof message !== "object" || message === null) return;
  const waiting = pending.get(message.id);
  if (waiting === undefined) return;
  pending.delete(message.id);
  refresh();
  if (Object.prototype.hasOwnProperty.call(message, "ok")) waiting.resolve(message.ok);
  else waiting.reject(new Error(String(message.error)));
}

function channel() {
  if (requests !== null) return requests;
  requests = new net.Socket({ fd: 3, readable: false, writable: true });
  requests.on("error", (error) => failAll("harness channel failed: " + error.message));
  requests.unref();
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk) => {
    received += chunk;
    let newline;
    while ((newline = received.indexOf("\n")) >= 0) {
      const line = received.slice(0, newline);
      received = received.slice(newline + 1);
      onAnswer(line);
    }
    if (received.length > 2 * MAX_MESSAGE_BYTES) { received = ""; failAll("harness protocol error"); }
  });
  process.stdin.on("end", () => failAll("harness closed"));
  process.stdin.on("error", (error) => failAll("harness channel failed: " + error.message));
  refresh();
  return requests;
}

/**
 * Calls the deliverable's exported function fn with args (an array of JSON values) in the deliverable host,
 * in options.module (a file of the deliverable; default index.js, or the deliverable's only .js file).
 * Resolves to the function's result (awaited if it is a promise) as JSON; rejects with an Error whose message
 * is the deliverable's error message, or "timeout", "host crashed", "response too large".
 */
function call(fn, args, options) {
  return new Promise((resolve, reject) => {
    if (typeof fn !== "string" || fn.length === 0 || fn.length > MAX_FN_LENGTH) {
      throw new TypeError("call(fn, args): fn must be a string of 1 to " + MAX_FN_LENGTH + " characters");
    }
    if (args === undefined) args = [];
    if (!Array.isArray(args)) throw new TypeError("call(fn, args): args must be an array");
    const module = options === undefined || options === null ? undefined : options.module;
    if (module !== undefined && typeof module !== "string") throw new TypeError("call(fn, args, options): options.module must be a string");
    if (closedReason !== null) throw new Error(closedReason);
    const request = { id: nextId++, fn: fn, args: toJson(args, "args") };
    if (module !== undefined) request.module = module;
    const line = JSON.stringify(request) + "\n";
    if (Buffer.byteLength(line, "utf8") > MAX_MESSAGE_BYTES) throw new RangeError("call(fn, args): the request is larger than " + MAX_MESSAGE_BYTES + " bytes");
    const out = channel();
    pending.set(request.id, { resolve, reject });
    refresh();
    out.write(line);
  });
}

module.exports = Object.freeze({ call });
`;

/** The deliverable's side, `.ioi/host.js` (process B). */
export const HOST_SOURCE = String.raw`"use strict";
// ioi-harness/1, deliverable host. Written by the sandbox. Runs before any deliverable code: pins what it
// can of time and randomness, then loads deliverable modules on demand and answers one call at a time.
const path = require("node:path");
const net = require("node:net");
const nodeCrypto = require("node:crypto");
const nodeModule = require("node:module");
const { pathToFileURL } = require("node:url");

const MAX_ERROR_LENGTH = ${MAX_ERROR_LENGTH};
const PINNED_TIME_MS = ${PINNED_TIME_MS};
const PINNED_PERFORMANCE_NOW = ${PINNED_PERFORMANCE_NOW};
const BUNDLE_PATH = /^[A-Za-z0-9_][A-Za-z0-9._-]*(\/[A-Za-z0-9_][A-Za-z0-9._-]*)*$/;
const ROOT = path.join(process.cwd(), "deliverable");
// Captured before any deliverable code runs (which may patch globals: that can break its own answers, never the suite).
const stringify = JSON.stringify;
const parse = JSON.parse;
${TO_JSON}

/* ---------------------------- determinism ---------------------------- */

// mulberry32, fixed seed: every fresh host draws the same sequence.
let prngState = ${PRNG_SEED} >>> 0;
function nextUint32() {
  prngState = (prngState + 0x6d2b79f5) >>> 0;
  let t = prngState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return (t ^ (t >>> 14)) >>> 0;
}
function random() {
  return ((nextUint32() >>> 5) * 67108864 + (nextUint32() >>> 6)) / 9007199254740992;
}
function fillRandom(view) {
  if (!ArrayBuffer.isView(view)) throw new TypeError("The data argument must be a TypedArray, DataView or Buffer");
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  for (let i = 0; i < bytes.length; i++) bytes[i] = nextUint32() & 0xff;
  return view;
}
function define(target, key, value) {
  try { Object.defineProperty(target, key, { value, writable: true, configurable: true, enumerable: false }); } catch (e) {}
}

define(Math, "random", random);

const RealDate = Date;
function PinnedDate(...args) {
  if (new.target === undefined) return new RealDate(PINNED_TIME_MS).toString();
  return Reflect.construct(RealDate, args.length === 0 ? [PINNED_TIME_MS] : args, new.target);
}
define(PinnedDate, "name", "Date");
define(PinnedDate, "length", 7);
PinnedDate.prototype = RealDate.prototype;
define(PinnedDate, "now", function now() { return PINNED_TIME_MS; });
define(PinnedDate, "parse", RealDate.parse);
define(PinnedDate, "UTC", RealDate.UTC);
define(RealDate.prototype, "constructor", PinnedDate);
define(globalThis, "Date", PinnedDate);

if (typeof performance === "object" && performance !== null) {
  define(performance, "now", function now() { return PINNED_PERFORMANCE_NOW; });
  define(performance, "timeOrigin", PINNED_TIME_MS);
}
function hrtime(previous) {
  if (previous === undefined) return [1, 0];
  let seconds = 1 - previous[0];
  let nanos = 0 - previous[1];
  if (nanos < 0) { seconds -= 1; nanos += 1e9; }
  return [seconds, nanos];
}
define(hrtime, "bigint", function bigint() { return 1000000000n; });
define(process, "hrtime", hrtime);
define(process, "uptime", function uptime() { return 1; });

function randomBytes(size, callback) {
  const bytes = fillRandom(Buffer.alloc(size));
  if (typeof callback === "function") { process.nextTick(callback, null, bytes); return undefined; }
  return bytes;
}
function randomFillSync(buffer, offset, size) {
  const start = offset === undefined ? 0 : offset;
  const end = size === undefined ? buffer.byteLength : start + size;
  fillRandom(new Uint8Array(buffer.buffer || buffer, (buffer.byteOffset || 0) + start, end - start));
  return buffer;
}
function randomFill(buffer, ...rest) {
  const callback = rest.pop();
  randomFillSync(buffer, rest[0], rest[1]);
  process.nextTick(callback, null, buffer);
}
function randomUUID() {
  const b = fillRandom(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = Buffer.from(b).toString("hex");
  return hex.slice(0, 8) + "-" + hex.slice(8, 12) + "-" + hex.slice(12, 16) + "-" + hex.slice(16, 20) + "-" + hex.slice(20);
}
function randomInt(min, max, callback) {
  if (typeof max !== "number") { callback = max; max = min; min = 0; }
  const range = max - min;
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || range <= 0) throw new RangeError("randomInt: invalid range");
  const value = min + Math.floor(random() * range);
  if (typeof callback === "function") { process.nextTick(callback, null, value); return undefined; }
  return value;
}
function getRandomValues(view) { return fillRandom(view); }
for (const [key, value] of [["randomBytes", randomBytes], ["pseudoRandomBytes", randomBytes], ["randomFillSync", randomFillSync],
  ["randomFill", randomFill], ["randomUUID", randomUUID], ["randomInt", randomInt], ["getRandomValues", getRandomValues]]) {
  define(nodeCrypto, key, value);
}
for (const webcrypto of [nodeCrypto.webcrypto, globalThis.crypto]) {
  if (typeof webcrypto === "object" && webcrypto !== null) {
    define(webcrypto, "getRandomValues", getRandomValues);
    define(webcrypto, "randomUUID", randomUUID);
  }
}
try { nodeModule.syncBuiltinESMExports(); } catch (e) {}

/* ------------------------------- calls ------------------------------- */

class HostError extends Error {}

function clip(message) {
  return message.length <= MAX_ERROR_LENGTH ? message : message.slice(0, MAX_ERROR_LENGTH);
}
function messageOf(error) {
  try {
    if (typeof error === "object" && error !== null && typeof error.message === "string") return clip(String(error.message));
    return clip(String(error));
  } catch (e) {
    return "an error whose message cannot be read";
  }
}

const answers = new net.Socket({ fd: 3, readable: false, writable: true });
answers.on("error", () => process.exit(70));
function send(message) {
  answers.write(stringify(message) + "\n");
}

function resolveModule(name) {
  if (typeof name !== "string" || name.length > 256 || !BUNDLE_PATH.test(name) || name.split("/").includes("..")) {
    throw new HostError("module " + stringify(name) + " is not a path of the deliverable");
  }
  return ROOT + "/" + name;
}

async function load(file) {
  if (file.endsWith(".mjs")) return import(pathToFileURL(file).href);
  try {
    return require(file);
  } catch (error) {
    if (error && error.code === "ERR_REQUIRE_ESM") return import(pathToFileURL(file).href);
    throw error;
  }
}

function exported(exports, fn) {
  if (exports === null || (typeof exports !== "object" && typeof exports !== "function")) return undefined;
  if (Object.prototype.hasOwnProperty.call(exports, fn)) return exports[fn];
  if (fn in Object.prototype || fn in Function.prototype) return undefined;
  return exports[fn];
}

async function handle(request) {
  const id = request.id;
  try {
    const { module: name, fn, args } = request;
    if (typeof fn !== "string" || !Array.isArray(args)) throw new HostError("malformed call");
    const exports = await load(resolveModule(name));
    const target = exported(exports, fn);
    if (typeof target !== "function") throw new HostError(name + " does not export a function " + stringify(fn));
    let result = Reflect.apply(target, exports, args);
    if (result !== null && (typeof result === "object" || typeof result === "function") && typeof result.then === "function") result = await result;
    let ok;
    try {
      ok = toJson(result, "the result");
    } catch (error) {
      throw error instanceof NotJsonError ? new HostError(fn + " returned a value that is not JSON: " + error.message) : error;
    }
    send({ id, ok });
  } catch (error) {
    send({ id, error: messageOf(error) });
  }
}

// Errors the deliverable leaves behind (a rejected promise nobody awaits, a throw in a timer) go to stderr;
// the call in flight, if any, still gets its own answer or times out.
process.on("uncaughtException", (error) => { try { process.stderr.write("uncaught: " + messageOf(error) + "\n"); } catch (e) {} });
process.on("unhandledRejection", (error) => { try { process.stderr.write("unhandled rejection: " + messageOf(error) + "\n"); } catch (e) {} });

let queue = Promise.resolve();
let received = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  received += chunk;
  let newline;
  while ((newline = received.indexOf("\n")) >= 0) {
    const line = received.slice(0, newline);
    received = received.slice(newline + 1);
    let request;
    try { request = parse(line); } catch (e) { continue; }
    if (typeof request !== "object" || request === null || !Number.isSafeInteger(request.id)) continue;
    queue = queue.then(() => handle(request));
  }
});
process.stdin.on("end", () => process.exit(0));

send({ ready: true });
`;

/** sha256 over both scripts: which harness a record's replay ran with. */
export const HARNESS_SHA256: string = createHash("sha256").update(HARNESS_SOURCE).update("\0").update(HOST_SOURCE).digest("hex");
