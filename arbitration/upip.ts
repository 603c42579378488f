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
 *   deps_hash   = "deps:sha256:"  ‖ sha256(sorted "name:version\n" lines of `packages`)
 *   result_hash = "sha256:"       ‖ sha256(String(exit_code) ‖ stdout ‖ stderr)     (the output hash)
 *   stack_hash  = "upip:sha256:"  ‖ sha256(canon([state, deps, process, result]))
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import type { Hex } from "viem";

import { canon, canonBytes } from "../channel-client/canonical";
import { expectHash, expectLiteral, expectObject, expectString } from "../channel-client/validate";
import { bundleHash, bundleToJson, type Bundle } from "./bundle";
import { expectArray, expectBoolean, expectInt, expectNullable, expectPattern } from "./document";
import { ENGINE, engineWasmSha256 } from "./engine";
import { InvalidUpipError } from "./errors";
import { HARNESS_SHA256 } from "./prelude";

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

const STATE_HASH = /^files:sha256:[0-9a-f]{64}$/;
const DEPS_HASH = /^deps:sha256:[0-9a-f]{64}$/;
const HEX64 = /^[0-9a-f]{64}$/;
const SHA256 = /^sha256:[0-9a-f]{64}$/;
const STACK_HASH = /^upip:sha256:[0-9a-f]{64}$/;
const VERSION = /^[0-9A-Za-z.+_/@-]+$/;
const CODE = /^[A-Z0-9_]{1,64}$/;
const MAX_STEPS = Number.MAX_SAFE_INTEGER;

function inputsFromJson(value: unknown, path: string): UpipInputs {
  const o = expectObject(value, path, ["clock_ms", "seed"]);
  return { clock_ms: expectInt(o.clock_ms, `${path}.clock_ms`, 0, 8_640_000_000_000_000), seed: expectHash(o.seed, `${path}.seed`) };
}

/**
 * Validates a record received from outside (e.g. inside a Resolution): every field, the deps hash and the
 * stack hash recomputed, and a result consistent with itself. The state and result hashes cover data the
 * record does not carry; they are checked by replaying.
 */
export function upipFromJson(value: unknown, path = "UpipRecord"): UpipRecord {
  const o = expectObject(value, path, ["protocol", "version", "state", "deps", "process", "result", "stack_hash"]);
  expectLiteral(o.protocol, `${path}.protocol`, ["UPIP"]);
  expectLiteral(o.version, `${path}.version`, ["1.1"]);

  const s = expectObject(o.state, `${path}.state`, ["state_type", "state_hash", "suite_hash", "deliverable_hash"]);
  const state: UpipState = {
    state_type: expectLiteral(s.state_type, `${path}.state.state_type`, ["files"]),
    state_hash: expectPattern(s.state_hash, `${path}.state.state_hash`, STATE_HASH, 80, "files:sha256: and 64 lowercase hex digits"),
    suite_hash: expectHash(s.suite_hash, `${path}.state.suite_hash`),
    deliverable_hash: expectHash(s.deliverable_hash, `${path}.state.deliverable_hash`),
  };

  const d = expectObject(o.deps, `${path}.deps`, ["runtime", "engine_sha256", "harness_sha256", "runner", "packages", "deps_hash"]);
  expectLiteral(d.runtime, `${path}.deps.runtime`, ["quickjs-wasm"]);
  const deps = upipDeps({
    engineSha256: expectPattern(d.engine_sha256, `${path}.deps.engine_sha256`, HEX64, 64, "64 lowercase hex digits"),
    harnessSha256: expectPattern(d.harness_sha256, `${path}.deps.harness_sha256`, HEX64, 64, "64 lowercase hex digits"),
    runner: expectPattern(d.runner, `${path}.deps.runner`, VERSION, 64, "a runner version such as ioi-arbitration/3"),
  });
  if (canon(d.packages) !== canon(deps.packages)) {
    throw new InvalidUpipError(`${path}.deps.packages`, `are ${canon(d.packages)}; a record of this judge names ${canon(deps.packages)}.`);
  }
  const claimedDeps = expectPattern(d.deps_hash, `${path}.deps.deps_hash`, DEPS_HASH, 80, "deps:sha256: and 64 lowercase hex digits");
  if (claimedDeps !== deps.deps_hash) throw new InvalidUpipError(`${path}.deps.deps_hash`, `is ${claimedDeps}, but the dependencies hash to ${deps.deps_hash}.`);

  const p = expectObject(o.process, `${path}.process`, ["command", "intent", "actor", "env_vars", "working_dir", "inputs", "budgets"]);
  const envVars = expectObject(p.env_vars, `${path}.process.env_vars`, []);
  if (Object.keys(envVars).length) throw new InvalidUpipError(`${path}.process.env_vars`, "must be empty: the engine has no environment.");
  const inputs = expectObject(p.inputs, `${path}.process.inputs`, ["suite", "deliverable"]);
  const budgets = expectObject(p.budgets, `${path}.process.budgets`, ["steps_per_test", "memory_bytes", "max_output_bytes"]);
  const processLayer: UpipProcess = {
    command: expectArray(p.command, `${path}.process.command`, 2, 16).map((arg, i) => expectString(arg, `${path}.process.command[${i}]`, 1024)),
    intent: expectString(p.intent, `${path}.process.intent`, 4096),
    actor: expectString(p.actor, `${path}.process.actor`, 256),
    env_vars: {},
    working_dir: expectLiteral(p.working_dir, `${path}.process.working_dir`, ["."]),
    inputs: { suite: inputsFromJson(inputs.suite, `${path}.process.inputs.suite`), deliverable: inputsFromJson(inputs.deliverable, `${path}.process.inputs.deliverable`) },
    budgets: {
      steps_per_test: expectInt(budgets.steps_per_test, `${path}.process.budgets.steps_per_test`, 1, 1 << 30),
      memory_bytes: expectInt(budgets.memory_bytes, `${path}.process.budgets.memory_bytes`, 1, 2 ** 32),
      max_output_bytes: expectInt(budgets.max_output_bytes, `${path}.process.budgets.max_output_bytes`, 1, 1 << 30),
    },
  };

  const r = expectObject(o.result, `${path}.result`, [
    "success",
    "exit_code",
    "tests",
    "failed_tests",
    "deliverable_faults",
    "suite_fault",
    "steps",
    "stdout_sha256",
    "stderr_sha256",
    "result_hash",
  ]);
  const hash = (v: unknown, p2: string): string => expectPattern(v, p2, SHA256, 80, "sha256: and 64 lowercase hex digits");
  const steps = expectObject(r.steps, `${path}.result.steps`, ["suite", "deliverable"]);
  const result: UpipResult = {
    success: expectBoolean(r.success, `${path}.result.success`),
    exit_code: expectInt(r.exit_code, `${path}.result.exit_code`, 0, 2) as 0 | 1 | 2,
    tests: expectInt(r.tests, `${path}.result.tests`, 0, 10_000),
    failed_tests: expectArray(r.failed_tests, `${path}.result.failed_tests`, 0, 10_000).map((name, i) => expectString(name, `${path}.result.failed_tests[${i}]`, 256)),
    deliverable_faults: expectArray(r.deliverable_faults, `${path}.result.deliverable_faults`, 0, 10_000).map((item, i) => {
      const f = expectObject(item, `${path}.result.deliverable_faults[${i}]`, ["test", "fault"]);
      return {
        test: expectString(f.test, `${path}.result.deliverable_faults[${i}].test`, 256),
        fault: expectPattern(f.fault, `${path}.result.deliverable_faults[${i}].fault`, CODE, 64, "a fault code"),
      };
    }),
    suite_fault: expectNullable(r.suite_fault, `${path}.result.suite_fault`, (v, p2) => expectPattern(v, p2, CODE, 64, "a fault code")),
    steps: { suite: expectInt(steps.suite, `${path}.result.steps.suite`, 0, MAX_STEPS), deliverable: expectInt(steps.deliverable, `${path}.result.steps.deliverable`, 0, MAX_STEPS) },
    stdout_sha256: hash(r.stdout_sha256, `${path}.result.stdout_sha256`),
    stderr_sha256: hash(r.stderr_sha256, `${path}.result.stderr_sha256`),
    result_hash: hash(r.result_hash, `${path}.result.result_hash`),
  };
  const expectedExit = result.suite_fault !== null ? 2 : result.failed_tests.length > 0 ? 1 : 0;
  if (result.exit_code !== expectedExit) {
    throw new InvalidUpipError(`${path}.result.exit_code`, `is ${result.exit_code}; it must be 2 with a suite fault, else 1 with failed tests, else 0.`);
  }
  if (result.success !== (result.exit_code === 0)) throw new InvalidUpipError(`${path}.result.success`, "must be true exactly when exit_code is 0.");
  if (result.failed_tests.length > result.tests) throw new InvalidUpipError(`${path}.result.failed_tests`, "list more tests than the suite has.");

  const stackHash = expectPattern(o.stack_hash, `${path}.stack_hash`, STACK_HASH, 80, "upip:sha256: and 64 lowercase hex digits");
  const record = upipRecord({ state, deps, process: processLayer, result });
  if (record.stack_hash !== stackHash) {
    throw new InvalidUpipError(`${path}.stack_hash`, `is ${stackHash}, but the layers hash to ${record.stack_hash}.`);
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
