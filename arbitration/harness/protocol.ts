/**
 * The deliverable-call protocol between the trusted test suite (process A), the replay code (the parent)
 * and the deliverable host (process B). One JSON object per line, UTF-8:
 *
 *   A → parent (A's fd 3)      {"id": n, "fn": "slugify", "args": [...], "module": "strings.js"}   (module optional)
 *   parent → B (B's stdin)     {"id": n, "module": "strings.js", "fn": "slugify", "args": [...]}
 *   B → parent (B's fd 3)      {"ready": true} once, before any deliverable code is loaded; then
 *                              {"id": n, "ok": <JSON result>}  or  {"id": n, "error": "<message>"}
 *   parent → A (A's stdin)     the same answer, re-serialised by the parent
 *
 * The parent validates everything B says: only an answer to the call in flight, well-formed and at most
 * {@link MAX_MESSAGE_BYTES} long, reaches A; anything else B writes on fd 3 is ignored, and whatever B writes
 * on its stdout/stderr is diagnostics only.
 */

/** Where the trusted harness (the suite's side) is written inside the suite's directory. No bundle path starts with ".". */
export const HARNESS_PATH = ".ioi/harness.js";

/** Where the trusted host script is written inside the deliverable host's directory. */
export const HOST_PATH = ".ioi/host.js";

/** Longest protocol line (request or answer), in bytes, newline excluded. */
export const MAX_MESSAGE_BYTES = 1024 * 1024;

/** Longest error message an answer carries, in UTF-16 code units; longer ones are cut. */
export const MAX_ERROR_LENGTH = 4096;

/** Deepest nesting of arrays and objects in call arguments and results. */
export const MAX_JSON_DEPTH = 64;

/** Longest function name a call may name. */
export const MAX_FN_LENGTH = 256;

/** What `Date.now()` and `new Date()` return inside the host: 2000-01-01T00:00:00.000Z. */
export const PINNED_TIME_MS = 946_684_800_000;

/** What `performance.now()` returns inside the host. */
export const PINNED_PERFORMANCE_NOW = 0;

/** Seed of the host's PRNG (`Math.random`, `crypto.getRandomValues`, `crypto.randomBytes`, ...). */
export const PRNG_SEED = 0x1d15_7e5e;

/** How long a fresh host may take to boot (before any deliverable code runs) before it counts as crashed. */
export const HOST_START_TIMEOUT_MS = 10_000;

/** Error messages the parent answers with on the deliverable's behalf. */
export const CALL_ERRORS = {
  timeout: "timeout",
  crashed: "host crashed",
  tooLarge: "response too large",
  closed: "host closed",
  unavailable: "host unavailable",
} as const;

export type CallRequest = { id: number; module: string; fn: string; args: unknown[] };
export type CallAnswer = { id: number; ok: unknown } | { id: number; error: string };

/**
 * The module a call that names none goes to: `index.js` if the deliverable has one, else its only
 * `.js`/`.cjs`/`.mjs` file; null if neither exists.
 */
export function defaultModule(files: readonly string[]): string | null {
  if (files.includes("index.js")) return "index.js";
  const scripts = files.filter((name) => /\.(c|m)?js$/.test(name));
  return scripts.length === 1 ? scripts[0]! : null;
}

/** A request line from the suite, checked: either a request to forward, an error to answer at once, or nothing (no usable id). */
export type ParsedRequest = { id: number; request: CallRequest } | { id: number; error: string } | null;

/**
 * Parses one request line from the suite. `files` are the deliverable's paths; `outstanding` the ids of
 * calls not yet answered (an id may not be reused while its call is open).
 */
export function parseRequest(line: string, files: ReadonlySet<string>, fallback: string | null, outstanding: ReadonlySet<number>): ParsedRequest {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (!isPlainObject(value)) return null;
  const { id } = value;
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 0) return null;
  const bad = (reason: string): ParsedRequest => ({ id, error: `bad call: ${reason}` });
  for (const key of Object.keys(value)) {
    if (!["id", "module", "fn", "args"].includes(key)) return bad(`unknown field ${JSON.stringify(key)}`);
  }
  if (outstanding.has(id)) return bad(`id ${id} is already in use`);
  const { fn, args, module } = value;
  if (typeof fn !== "string" || fn.length === 0 || fn.length > MAX_FN_LENGTH) return bad(`fn must be a string of 1 to ${MAX_FN_LENGTH} characters`);
  if (!Array.isArray(args)) return bad("args must be an array");
  if (jsonDepth(args) > MAX_JSON_DEPTH) return bad(`args nest deeper than ${MAX_JSON_DEPTH} levels`);
  let target: string;
  if (module === undefined) {
    if (fallback === null) return bad("no module named, and the deliverable has no index.js and not exactly one .js file");
    target = fallback;
  } else if (typeof module !== "string" || !files.has(module)) {
    return bad(`module ${JSON.stringify(module)} is not a file of the deliverable`);
  } else {
    target = module;
  }
  return { id, request: { id, module: target, fn, args } };
}

/**
 * Parses one line the host wrote on its answer channel: `"ready"`, an answer (with `rewrite` applied to
 * every string in it, keys included), or null for anything else (junk is ignored, never forwarded).
 */
export function parseHostLine(line: string, rewrite: (text: string) => string): "ready" | CallAnswer | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (!isPlainObject(value)) return null;
  const keys = Object.keys(value).sort();
  if (keys.length === 1 && keys[0] === "ready" && value.ready === true) return "ready";
  if (keys.length !== 2 || !keys.includes("id")) return null;
  const { id } = value;
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 0) return null;
  if (keys.includes("error")) {
    if (typeof value.error !== "string") return null;
    return { id, error: clipMessage(rewrite(value.error)) };
  }
  if (!keys.includes("ok")) return null;
  if (jsonDepth(value.ok) > MAX_JSON_DEPTH) return { id, error: `result nests deeper than ${MAX_JSON_DEPTH} levels` };
  return { id, ok: rewriteStrings(value.ok, rewrite) };
}

/** Cuts a message to {@link MAX_ERROR_LENGTH} code units without splitting a surrogate pair. */
export function clipMessage(message: string): string {
  if (message.length <= MAX_ERROR_LENGTH) return message.toWellFormed();
  let end = MAX_ERROR_LENGTH;
  const code = message.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return message.slice(0, end).toWellFormed();
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Nesting depth of a parsed JSON value, counted without recursion (parsed JSON can be arbitrarily deep). */
function jsonDepth(value: unknown): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item !== "object" || item === null) continue;
    if (depth + 1 > deepest) deepest = depth + 1;
    if (deepest > MAX_JSON_DEPTH) return deepest;
    for (const child of Array.isArray(item) ? item : Object.values(item)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** A copy of a (depth-checked) parsed JSON value with `rewrite` applied to every string and key. */
function rewriteStrings(value: unknown, rewrite: (text: string) => string): unknown {
  if (typeof value === "string") return rewrite(value);
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map((item) => rewriteStrings(item, rewrite));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    Object.defineProperty(out, rewrite(key), { value: rewriteStrings(item, rewrite), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
