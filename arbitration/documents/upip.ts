/**
 * A UPIP process record (Universal Process Integrity Protocol, L1–L5) of one Lane 1 replay in the sealed
 * judge engine (`replay.ts`).
 *
 * It captures everything the replay is a function of, so a second arbitrator reproduces it bit for bit
 * (`ioi arbitrate --verify-upip`): the bundles (L1), the engine's WebAssembly hash, the harness's hash and the
 * runner version (L2), the entry command, the pinned clock and seed of each side and the budgets (L3), and
 * the result — failed test ids, the deliverable's budget faults, the suite's fault, steps used and the
 * output hashes (L4). No timestamps, hostnames, pids or paths; nothing of the host (not even Node's version).
 *
 *   state_hash  = "files:sha256:" ‖ sha256(canon({suite, deliverable}))
 *   deps_hash   = "deps:sha256:"  ‖ sha256(the lines "name:version\n" of `packages` and "engine:<engine_sha256>\n",
 *                                           "harness:<harness_sha256>\n", "runner:<runner>\n", sorted by UTF-16 code units)
 *   result_hash = "sha256:"       ‖ sha256(String(exit_code) ‖ stdout ‖ stderr)     (the output hash)
 *   stack_hash  = "upip:sha256:"  ‖ sha256(canon([state, deps, process, result]))
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import type { Hex } from "viem";

import { canon, canonBytes } from "../../channel-client/core/canonical";
import { assertMatchesSchema } from "../../channel-client/core/schemas";
import { bundleHash, bundleToJson, type Bundle } from "./bundle";
import { ENGINE, engineWasmSha256 } from "../engine/engine";
import { InvalidUpipError } from "./errors";
import { HARNESS_SHA256 } from "../engine/prelude";

/** The runner version a record names (bumped whenever the replay's semantics change). */
export const RUNNER_VERSION = "ioi-arbitration/3";

export type UpipState = { state_type: "files"; state_hash: string; suite_hash: Hex; deliverable_hash: Hex };

export type UpipDeps = {
  runtime: "quickjs-wasm";
  engine_sha256: string;
  harness_sha256: string;
  runner: string;
  packages: Record<string, string>;
  deps_hash: string;
};

export type UpipInputs = { clock_ms: number; seed: Hex };
export type UpipBudgets = { steps_per_test: number; memory_bytes: number; max_output_bytes: number };

export type UpipProcess = {
  command: string[];
  intent: string;
  actor: string;
  env_vars: Record<string, never>;
  working_dir: ".";
  inputs: { suite: UpipInputs; deliverable: UpipInputs };
  budgets: UpipBudgets;
};

export type UpipDeliverableFault = { test: string; fault: string };

export type UpipResult = {
  success: boolean;
  /** 0: every test passed; 1: some failed; 2: the suite is at fault. */
  exit_code: 0 | 1 | 2;
  tests: number;
  failed_tests: string[];
  deliverable_faults: UpipDeliverableFault[];
  suite_fault: string | null;
  steps: { suite: number; deliverable: number };
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

/** L1: the input state of a replay, the test suite and the deliverable as one canonical document, and each bundle's hash. */
export function upipState(suite: Bundle, deliverable: Bundle): UpipState {
  const digest = sha256Hex(canonBytes({ suite: bundleToJson(suite), deliverable: bundleToJson(deliverable) }));
  return { state_type: "files", state_hash: `files:sha256:${digest}`, suite_hash: bundleHash(suite), deliverable_hash: bundleHash(deliverable) };
}

/** L2 of a replay by this process: the engine's wasm hash, the harness hash, the runner version and the pinned engine package. */
export function judgeDeps(): UpipDeps {
  return upipDeps({ engineSha256: engineWasmSha256(), harnessSha256: HARNESS_SHA256, runner: RUNNER_VERSION });
}

/** L2 from its parts; `deps_hash` covers the sorted `name:version` lines of the packages plus engine, harness and runner. */
export function upipDeps(parts: { engineSha256: string; harnessSha256: string; runner: string }): UpipDeps {
  const packages: Record<string, string> = { [ENGINE.package]: ENGINE.version, [ENGINE.variant]: ENGINE.version };
  const lines = [
    ...Object.entries(packages).map(([name, version]) => `${name}:${version}`),
    `engine:${parts.engineSha256}`,
    `harness:${parts.harnessSha256}`,
    `runner:${parts.runner}`,
  ].sort();
  return {
    runtime: "quickjs-wasm",
    engine_sha256: parts.engineSha256,
    harness_sha256: parts.harnessSha256,
    runner: parts.runner,
    packages: Object.fromEntries(Object.keys(packages).sort().map((name) => [name, packages[name]!])),
    deps_hash: `deps:sha256:${sha256Hex(utf8ToBytes(lines.map((line) => `${line}\n`).join("")))}`,
  };
}

/** What a replay produced. */
export type ReplayResultParameters = {
  tests: number;
  failedTests: string[];
  deliverableFaults: UpipDeliverableFault[];
  suiteFault: string | null;
  steps: { suite: number; deliverable: number };
  stdout: string;
  stderr: string;
};

/** L4: the result, with failed test ids sorted and the output hashed. */
export function upipResultOf(parameters: ReplayResultParameters): UpipResult {
  const exitCode = parameters.suiteFault !== null ? 2 : parameters.failedTests.length > 0 ? 1 : 0;
  const stdout = utf8ToBytes(parameters.stdout);
  const stderr = utf8ToBytes(parameters.stderr);
  return {
    success: exitCode === 0,
    exit_code: exitCode,
    tests: parameters.tests,
    failed_tests: [...parameters.failedTests].sort(compareStrings),
    deliverable_faults: [...parameters.deliverableFaults].sort((a, b) => compareStrings(a.test, b.test)),
    suite_fault: parameters.suiteFault,
    steps: { ...parameters.steps },
    stdout_sha256: `sha256:${sha256Hex(stdout)}`,
    stderr_sha256: `sha256:${sha256Hex(stderr)}`,
    result_hash: `sha256:${sha256Hex(utf8ToBytes(`${exitCode}${parameters.stdout}${parameters.stderr}`))}`,
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

/**
 * Validates a record received from outside (e.g. inside a Resolution): its structure against the published
 * `schemas/upip.schema.json` first (every field, pattern and bound: one sentence naming the first bad
 * field), then what a schema cannot state — the judge's package list and deps hash recomputed, a result
 * consistent with itself (exit code, success, failed tests), and the stack hash recomputed. The state and
 * result hashes cover data the record does not carry; they are checked by replaying.
 */
export function upipFromJson(value: unknown, path = "UpipRecord"): UpipRecord {
  assertMatchesSchema("upip", value, path);
  const o = value as UpipRecord;

  const deps = upipDeps({ engineSha256: o.deps.engine_sha256, harnessSha256: o.deps.harness_sha256, runner: o.deps.runner });
  if (canon(o.deps.packages) !== canon(deps.packages)) {
    throw new InvalidUpipError(`${path}.deps.packages`, `are ${canon(o.deps.packages)}; a record of this judge names ${canon(deps.packages)}.`);
  }
  if (o.deps.deps_hash !== deps.deps_hash) throw new InvalidUpipError(`${path}.deps.deps_hash`, `is ${o.deps.deps_hash}, but the dependencies hash to ${deps.deps_hash}.`);

  const result = o.result;
  const expectedExit = result.suite_fault !== null ? 2 : result.failed_tests.length > 0 ? 1 : 0;
  if (result.exit_code !== expectedExit) {
    throw new InvalidUpipError(`${path}.result.exit_code`, `is ${result.exit_code}; it must be 2 with a suite fault, else 1 with failed tests, else 0.`);
  }
  if (result.success !== (result.exit_code === 0)) throw new InvalidUpipError(`${path}.result.success`, "must be true exactly when exit_code is 0.");
  if (result.failed_tests.length > result.tests) throw new InvalidUpipError(`${path}.result.failed_tests`, "list more tests than the suite has.");

  // A private copy in plain JSON, rebuilt layer by layer, whose stack hash is recomputed.
  const layers = JSON.parse(canon({ state: o.state, process: o.process, result: o.result })) as Pick<UpipRecord, "state" | "process" | "result">;
  const record = upipRecord({ ...layers, deps });
  if (record.stack_hash !== o.stack_hash) {
    throw new InvalidUpipError(`${path}.stack_hash`, `is ${o.stack_hash}, but the layers hash to ${record.stack_hash}.`);
  }
  return record;
}

/** Canonical JSON of a record: how two records are compared byte for byte. */
export function upipCanonical(record: UpipRecord): string {
  return canon(record);
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
