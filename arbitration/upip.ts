/**
 * A UPIP-style process record (Universal Process Integrity Protocol, L1–L5) of one test-suite replay.
 *
 * Only what is reproducible goes into it — no timestamps, hostnames, pids or temp paths — so two replays of
 * the same suite against the same deliverable on the same runtime give byte-identical records, and a judge
 * node can prove its replay matches another's by comparing stack hashes (L5, {@link verifyUpip}).
 *
 *   state_hash  = "files:sha256:" ‖ sha256(canon({suite, deliverable}))
 *   deps_hash   = "deps:sha256:"  ‖ sha256(sorted "name:version\n" lines, node included)
 *   result_hash = "sha256:"       ‖ sha256(String(exit_code) ‖ stdout ‖ stderr)      (raw bytes)
 *   stack_hash  = "upip:sha256:"  ‖ sha256(canon([state, deps, process, result]))
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import type { Hex } from "viem";

import { canon, canonBytes } from "../channel-client/canonical";
import { InvalidFieldError } from "../channel-client/errors";
import { expectLiteral, expectObject, expectString } from "../channel-client/validate";
import { bundleToJson, type Bundle } from "./bundle";
import { expectArray, expectBoolean, expectInt, expectNullable, expectPattern } from "./document";
import { InvalidUpipError } from "./errors";

export type UpipState = { state_type: "files"; state_hash: string };

export type UpipDeps = {
  runtime: "node";
  runtime_version: string;
  packages: Record<string, string>;
  deps_hash: string;
};

export type UpipSandbox = {
  network: "isolated";
  timeout_ms: number;
  max_output_bytes: number;
  node_flags: string[];
};

export type UpipProcess = {
  command: string[];
  intent: string;
  actor: string;
  env_vars: Record<string, string>;
  working_dir: ".";
  sandbox: UpipSandbox;
};

export type UpipResult = {
  success: boolean;
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
  output_truncated: boolean;
  stdout_sha256: string;
  stderr_sha256: string;
  result_hash: string;
};

/** The record itself; its TypeScript form is its JSON form. */
export type UpipRecord = {
  protocol: "UPIP";
  version: "1.1";
  state: UpipState;
  deps: UpipDeps;
  process: UpipProcess;
  result: UpipResult;
  stack_hash: string;
};

/** L5: did a reproduction give the same stack hash? */
export type UpipVerification = { match: boolean; original_hash: string; reproduced_hash: string };

const sha256Hex = (bytes: Uint8Array): string => bytesToHex(sha256(bytes));

/** L1: the input state of a replay, the test suite and the deliverable as one canonical document. */
export function upipState(suite: Bundle, deliverable: Bundle): UpipState {
  const digest = sha256Hex(canonBytes({ suite: bundleToJson(suite), deliverable: bundleToJson(deliverable) }));
  return { state_type: "files", state_hash: `files:sha256:${digest}` };
}

/** L2: the runtime and packages; `deps_hash` covers the sorted `name:version` lines, node included. */
export function upipDeps(runtimeVersion: string = process.versions.node, packages: Record<string, string> = {}): UpipDeps {
  const sorted = Object.fromEntries(Object.keys(packages).sort().map((name) => [name, packages[name]!]));
  return { runtime: "node", runtime_version: runtimeVersion, packages: sorted, deps_hash: depsHash(runtimeVersion, sorted) };
}

function depsHash(runtimeVersion: string, packages: Record<string, string>): string {
  const lines = [`node:${runtimeVersion}`, ...Object.entries(packages).map(([name, version]) => `${name}:${version}`)].sort();
  return `deps:sha256:${sha256Hex(utf8ToBytes(lines.map((line) => `${line}\n`).join("")))}`;
}

/** What a finished (or killed) process left behind, as raw bytes. */
export type ProcessOutcome = {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  outputTruncated: boolean;
  stdout: Uint8Array;
  stderr: Uint8Array;
};

/** L4: the result; `success` means exit code 0 with no limit hit. */
export function upipResult(outcome: ProcessOutcome): UpipResult {
  const { exitCode, signal, timedOut, outputTruncated, stdout, stderr } = outcome;
  const code = utf8ToBytes(String(exitCode));
  const all = new Uint8Array(code.length + stdout.length + stderr.length);
  all.set(code, 0);
  all.set(stdout, code.length);
  all.set(stderr, code.length + stdout.length);
  return {
    success: exitCode === 0 && !timedOut && !outputTruncated,
    exit_code: exitCode,
    signal,
    timed_out: timedOut,
    output_truncated: outputTruncated,
    stdout_sha256: `sha256:${sha256Hex(stdout)}`,
    stderr_sha256: `sha256:${sha256Hex(stderr)}`,
    result_hash: `sha256:${sha256Hex(all)}`,
  };
}

/** The stack hash of the four layers. */
export function upipStackHash(layers: Pick<UpipRecord, "state" | "deps" | "process" | "result">): string {
  return `upip:sha256:${sha256Hex(canonBytes([layers.state, layers.deps, layers.process, layers.result]))}`;
}

/** Assembles a record from its four layers and computes the stack hash. */
export function upipRecord(layers: { state: UpipState; deps: UpipDeps; process: UpipProcess; result: UpipResult }): UpipRecord {
  const record = {
    protocol: "UPIP" as const,
    version: "1.1" as const,
    state: layers.state,
    deps: layers.deps,
    process: layers.process,
    result: layers.result,
  };
  return { ...record, stack_hash: upipStackHash(record) };
}

/** The stack hash as a 0x-prefixed 32-byte hex (the form an objective check's `hash` takes). */
export function upipHashHex(record: UpipRecord): Hex {
  return `0x${record.stack_hash.slice("upip:sha256:".length)}` as Hex;
}

/**
 * UPIP L5: `match` is true only if both records' stack hashes are what their layers hash to and the
 * reproduced hash equals the original. The hashes returned are recomputed, not copied.
 */
export function verifyUpip(original: UpipRecord, reproduced: UpipRecord): UpipVerification {
  const originalHash = upipStackHash(original);
  const reproducedHash = upipStackHash(reproduced);
  return {
    match: originalHash === reproducedHash && original.stack_hash === originalHash && reproduced.stack_hash === reproducedHash,
    original_hash: originalHash,
    reproduced_hash: reproducedHash,
  };
}

/*//////////////////////////////////////////////////////////////
                             PARSING
//////////////////////////////////////////////////////////////*/

const STATE_HASH = /^files:sha256:[0-9a-f]{64}$/;
const DEPS_HASH = /^deps:sha256:[0-9a-f]{64}$/;
const SHA256 = /^sha256:[0-9a-f]{64}$/;
const STACK_HASH = /^upip:sha256:[0-9a-f]{64}$/;
const VERSION = /^[0-9A-Za-z.+_-]+$/;
const SIGNAL = /^SIG[A-Z0-9]+$/;

/**
 * Validates a record received from outside (e.g. inside a Resolution): every field, the deps hash and the
 * stack hash recomputed, and a result consistent with itself. The state and result hashes cover data the
 * record does not carry; they are checked by replaying.
 */
export function upipFromJson(value: unknown, path = "UpipRecord"): UpipRecord {
  const o = expectObject(value, path, ["protocol", "version", "state", "deps", "process", "result", "stack_hash"]);
  expectLiteral(o.protocol, `${path}.protocol`, ["UPIP"]);
  expectLiteral(o.version, `${path}.version`, ["1.1"]);

  const s = expectObject(o.state, `${path}.state`, ["state_type", "state_hash"]);
  const state: UpipState = {
    state_type: expectLiteral(s.state_type, `${path}.state.state_type`, ["files"]),
    state_hash: expectPattern(s.state_hash, `${path}.state.state_hash`, STATE_HASH, 80, "files:sha256: and 64 lowercase hex digits"),
  };

  const d = expectObject(o.deps, `${path}.deps`, ["runtime", "runtime_version", "packages", "deps_hash"]);
  expectLiteral(d.runtime, `${path}.deps.runtime`, ["node"]);
  const runtimeVersion = expectPattern(d.runtime_version, `${path}.deps.runtime_version`, VERSION, 64, "a version such as 20.19.0");
  const packages = stringRecord(d.packages, `${path}.deps.packages`, VERSION, 64);
  const deps = upipDeps(runtimeVersion, packages);
  const claimedDeps = expectPattern(d.deps_hash, `${path}.deps.deps_hash`, DEPS_HASH, 80, "deps:sha256: and 64 lowercase hex digits");
  if (claimedDeps !== deps.deps_hash) throw new InvalidUpipError(`${path}.deps.deps_hash`, `is ${claimedDeps}, but the dependencies hash to ${deps.deps_hash}.`);

  const p = expectObject(o.process, `${path}.process`, ["command", "intent", "actor", "env_vars", "working_dir", "sandbox"]);
  const sb = expectObject(p.sandbox, `${path}.process.sandbox`, ["network", "timeout_ms", "max_output_bytes", "node_flags"]);
  const processLayer: UpipProcess = {
    command: expectArray(p.command, `${path}.process.command`, 1, 16).map((arg, i) => expectString(arg, `${path}.process.command[${i}]`, 1024)),
    intent: expectString(p.intent, `${path}.process.intent`, 4096),
    actor: expectString(p.actor, `${path}.process.actor`, 256),
    env_vars: stringRecord(p.env_vars, `${path}.process.env_vars`, /^[^\u0000]*$/, 1024),
    working_dir: expectLiteral(p.working_dir, `${path}.process.working_dir`, ["."]),
    sandbox: {
      network: expectLiteral(sb.network, `${path}.process.sandbox.network`, ["isolated"]),
      timeout_ms: expectInt(sb.timeout_ms, `${path}.process.sandbox.timeout_ms`, 1, 3_600_000),
      max_output_bytes: expectInt(sb.max_output_bytes, `${path}.process.sandbox.max_output_bytes`, 1, 1 << 30),
      node_flags: expectArray(sb.node_flags, `${path}.process.sandbox.node_flags`, 0, 16).map((flag, i) =>
        expectString(flag, `${path}.process.sandbox.node_flags[${i}]`, 4096),
      ),
    },
  };

  const r = expectObject(o.result, `${path}.result`, [
    "success",
    "exit_code",
    "signal",
    "timed_out",
    "output_truncated",
    "stdout_sha256",
    "stderr_sha256",
    "result_hash",
  ]);
  const hash = (v: unknown, p2: string): string => expectPattern(v, p2, SHA256, 80, "sha256: and 64 lowercase hex digits");
  const result: UpipResult = {
    success: expectBoolean(r.success, `${path}.result.success`),
    exit_code: expectNullable(r.exit_code, `${path}.result.exit_code`, (v, p2) => expectInt(v, p2, 0, 255)),
    signal: expectNullable(r.signal, `${path}.result.signal`, (v, p2) => expectPattern(v, p2, SIGNAL, 16, "a signal name such as SIGKILL")),
    timed_out: expectBoolean(r.timed_out, `${path}.result.timed_out`),
    output_truncated: expectBoolean(r.output_truncated, `${path}.result.output_truncated`),
    stdout_sha256: hash(r.stdout_sha256, `${path}.result.stdout_sha256`),
    stderr_sha256: hash(r.stderr_sha256, `${path}.result.stderr_sha256`),
    result_hash: hash(r.result_hash, `${path}.result.result_hash`),
  };
  if ((result.exit_code === null) === (result.signal === null)) {
    throw new InvalidUpipError(`${path}.result`, "must have exactly one of exit_code and signal.");
  }
  if (result.success !== (result.exit_code === 0 && !result.timed_out && !result.output_truncated)) {
    throw new InvalidUpipError(`${path}.result.success`, "must be true exactly when exit_code is 0 and no limit was hit.");
  }
  if (result.timed_out && result.output_truncated) {
    throw new InvalidUpipError(`${path}.result`, "cannot be both timed out and truncated: the first limit hit ends the run.");
  }

  const stackHash = expectPattern(o.stack_hash, `${path}.stack_hash`, STACK_HASH, 80, "upip:sha256: and 64 lowercase hex digits");
  const record = upipRecord({ state, deps, process: processLayer, result });
  if (record.stack_hash !== stackHash) {
    throw new InvalidUpipError(`${path}.stack_hash`, `is ${stackHash}, but the layers hash to ${record.stack_hash}.`);
  }
  return record;
}

/** An object of string values (≤ 64 entries), each value matching `pattern`. */
function stringRecord(value: unknown, path: string, pattern: RegExp, maxLength: number): Record<string, string> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new InvalidFieldError(path, "an object of strings", value);
  const keys = Object.keys(value).sort();
  if (keys.length > 64) throw new InvalidFieldError(path, "an object of at most 64 entries", value);
  return Object.fromEntries(
    keys.map((key) => {
      const v = (value as Record<string, unknown>)[key];
      if (typeof v !== "string" || v.length > maxLength || !pattern.test(v)) {
        throw new InvalidFieldError(`${path}.${key}`, `a string of at most ${maxLength} characters`, v);
      }
      return [key, v];
    }),
  );
}

/** Canonical JSON of a record: how two records are compared byte for byte. */
export function upipCanonical(record: UpipRecord): string {
  return canon(record);
}
