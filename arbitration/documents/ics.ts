/**
 * The Intent Contract Schema (ICS): what a gig's client asked for, decomposed into objective rubric items,
 * the hash-bound test suite and how it runs, and the penalty schedule. A GigEscrow binds `icsHash`; Lane 1
 * compiles the rubric into objective checks (`checks.ts`) and prices a provider fault with {@link penaltyFor}.
 *
 * JSON keys are snake_case; amounts and timestamps are decimal strings; small integers (basis points,
 * limits, versions) are JSON integers.
 */
import Ajv, { type ValidateFunction } from "ajv";
import { getAddress, type Address, type Hex } from "viem";

import { artifactId, canon } from "../../channel-client/core/canonical";
import { InvalidFieldError } from "../../channel-client/core/errors";
import { assertMatchesSchema } from "../../channel-client/core/schemas";
import {
  expectString,
  uintToJson,
  type JsonObject,
} from "../../channel-client/core/validate";
import { expectBundlePath } from "./bundle";
import { expectArray, expectInt, expectPattern } from "./document";
import { InvalidIcsError, UnsupportedRunnerError } from "./errors";

/** The only `ics_version` there is. */
export const ICS_VERSION = 1;

/** Languages a `language` rubric item can demand, and the file extensions that count as each. */
export const LANGUAGE_EXTENSIONS = {
  javascript: [".js", ".mjs", ".cjs"],
  typescript: [".ts"],
  python: [".py"],
  rust: [".rs"],
  json: [".json"],
  text: [".txt", ".md"],
} as const satisfies Record<string, readonly string[]>;

export type Language = keyof typeof LANGUAGE_EXTENSIONS;
export const LANGUAGES = Object.keys(LANGUAGE_EXTENSIONS) as Language[];

/** A JSON Schema (draft-07, as Ajv 8 reads it by default): an object or a boolean. */
export type JsonSchema = JsonObject | boolean;

/**
 * One atomic, objectively checkable requirement. The JSON form is identical. A `test_suite` item may state
 * `step_budget`: the interpreter steps (see `replay.ts`) the deliverable may use within one test, and the
 * suite likewise; absent means {@link DEFAULT_STEP_BUDGET} and stays absent (same bytes, same ICS hash).
 */
export type RubricItem =
  | { id: string; kind: "test_suite"; step_budget?: number }
  | { id: string; kind: "language"; expect: Language }
  | { id: string; kind: "max_lines"; limit: number }
  | { id: string; kind: "max_bytes"; limit: number }
  | { id: string; kind: "json_schema"; file: string; schema: JsonSchema }
  | { id: string; kind: "forbidden_content"; patterns: string[] }
  | { id: string; kind: "hash_match"; file: string; hash: Hex }
  | { id: string; kind: "semantic"; description: string };

export type RubricKind = RubricItem["kind"];
export const RUBRIC_KINDS: readonly RubricKind[] = [
  "test_suite",
  "language",
  "max_lines",
  "max_bytes",
  "json_schema",
  "forbidden_content",
  "hash_match",
  "semantic",
];

/**
 * How the test suite runs: `node <entry file of the suite>`, the entry run as a CommonJS module in the
 * sealed judge engine (`replay.ts`); `maxOutputBytes` is the output budget of each side. `timeoutMs` and
 * `callTimeoutMs` are wall-clock limits from the time replays ran as child processes: they stay valid (and
 * hashed) so that older ICS documents keep their hash, but no verdict depends on them any more — budgets are
 * counted in steps (the `test_suite` rubric item's `step_budget`) and bytes. `callTimeoutMs` is kept absent
 * rather than filled in so that an ICS without it round-trips to the same bytes (and the same `icsHash`).
 */
export type Runner = { command: string[]; timeoutMs: number; maxOutputBytes: number; callTimeoutMs?: number };
export type RunnerJson = { command: string[]; timeout_ms: number; max_output_bytes: number; call_timeout_ms?: number };

/** The per-call timeout of a runner that names none (legacy: not used for judging). */
export const DEFAULT_CALL_TIMEOUT_MS = 2_000;

/**
 * The per-test step budget of a `test_suite` item that states none: about 5 million simple loop iterations
 * of the engine (one step is one interrupt-handler call of QuickJS), a second or two of CPU on a laptop.
 */
export const DEFAULT_STEP_BUDGET = 1_000;

/** The step budget in force for a `test_suite` rubric item. */
export function stepBudgetOf(item: Extract<RubricItem, { kind: "test_suite" }>): number {
  return item.step_budget ?? DEFAULT_STEP_BUDGET;
}

export type TestSuiteBinding = { hash: Hex; runner: Runner };

export type Penalty = { refundBps: number; slash: bigint };
export type PenaltySchedule = {
  objectiveFailure: Penalty;
  perFailedTest: Penalty;
  unserviceable: { computeSpentBps: number };
};

/** A validated ICS (TypeScript form: camelCase, bigint amounts). */
export type Ics = {
  icsVersion: typeof ICS_VERSION;
  task: string;
  asset: Address;
  maxPrice: bigint;
  deadline: bigint;
  rubric: { version: number; items: RubricItem[] };
  testSuite: TestSuiteBinding | null;
  penaltySchedule: PenaltySchedule;
};

/** The JSON form of an ICS: snake_case keys, amounts and timestamps as decimal strings. */
export type IcsJson = {
  ics_version: typeof ICS_VERSION;
  task: string;
  asset: Hex;
  max_price: string;
  deadline: string;
  rubric: { version: number; items: RubricItem[] };
  test_suite: { hash: Hex; runner: RunnerJson } | null;
  penalty_schedule: {
    objective_failure: { refund_bps: number; slash: string };
    per_failed_test: { refund_bps: number; slash: string };
    unserviceable: { compute_spent_bps: number };
  };
};

/** Limits of the ICS fields. */
export const ICS_LIMITS = {
  maxTaskLength: 4096,
  maxRubricItems: 32,
  maxPatterns: 32,
  maxPatternLength: 256,
  maxDescriptionLength: 4096,
  minCommandLength: 2,
  maxCommandLength: 16,
  maxArgumentLength: 1024,
  minTimeoutMs: 100,
  maxTimeoutMs: 120_000,
  minOutputBytes: 1024,
  maxOutputBytes: 1024 * 1024,
  minCallTimeoutMs: 10,
  maxCallTimeoutMs: 60_000,
  minStepBudget: 1,
  maxStepBudget: 1_000_000,
  /** Canonical size of one json_schema item's schema: compiling costs ~1-2 ms per property, so it is bounded. */
  maxSchemaBytes: 8 * 1024,
  /** json_schema items per ICS (with maxSchemaBytes, caps the compile time an ICS can cost an arbitrator). */
  maxSchemaItems: 4,
} as const;

const BPS_MAX = 10_000;

/**
 * Validates an ICS received from outside. Throws a typed error naming the first bad field: first its
 * structure against the published `schemas/ics.schema.json`, then what a schema cannot say (integer
 * bounds held as decimal strings, size limits, runner rules, unique ids, rubric consistency).
 */
export function icsFromJson(value: unknown, path = "ICS"): Ics {
  assertMatchesSchema("ics", value, path);
  // The schema checked every field's presence, type and pattern; what follows converts and checks the limits
  // the schema leaves to the code (ICS_LIMITS, runner rules, bundle paths, unique ids).
  const o = value as JsonObject;
  const rubric = o.rubric as JsonObject;
  const rawItems = expectArray(rubric.items, `${path}.rubric.items`, 1, ICS_LIMITS.maxRubricItems);
  const schemaItems = rawItems.filter((item) => typeof item === "object" && item !== null && (item as { kind?: unknown }).kind === "json_schema").length;
  if (schemaItems > ICS_LIMITS.maxSchemaItems) {
    throw new InvalidIcsError(`${path}.rubric.items`, `hold ${schemaItems} json_schema items; an ICS may have at most ${ICS_LIMITS.maxSchemaItems}.`);
  }
  const items = rawItems.map((item, i) =>
    rubricItemFromJson(item, `${path}.rubric.items[${i}]`),
  );
  const testSuite = o.test_suite === null ? null : testSuiteFromJson(o.test_suite, `${path}.test_suite`);
  const ics: Ics = {
    icsVersion: ICS_VERSION,
    task: expectString(o.task, `${path}.task`, ICS_LIMITS.maxTaskLength),
    asset: getAddress(o.asset as string),
    maxPrice: BigInt(o.max_price as string),
    deadline: BigInt(o.deadline as string),
    rubric: { version: rubric.version as number, items },
    testSuite,
    penaltySchedule: penaltyScheduleFromJson(o.penalty_schedule),
  };
  assertRubricConsistent(ics, path);
  return ics;
}

/** A rubric item the ICS schema accepted (its kind's fields, id pattern and enums): converted, limits checked. */
function rubricItemFromJson(value: unknown, path: string): RubricItem {
  const o = value as JsonObject;
  const kind = o.kind as RubricKind;
  const id = o.id as string;
  switch (kind) {
    case "test_suite":
      return Object.hasOwn(o, "step_budget")
        ? { id, kind, step_budget: expectInt(o.step_budget, `${path}.step_budget`, ICS_LIMITS.minStepBudget, ICS_LIMITS.maxStepBudget) }
        : { id, kind };
    case "language":
      return { id, kind, expect: o.expect as (typeof LANGUAGES)[number] };
    case "max_lines":
    case "max_bytes":
      return { id, kind, limit: expectInt(o.limit, `${path}.limit`, 0, Number.MAX_SAFE_INTEGER) };
    case "json_schema": {
      const schema = expectJsonSchema(o.schema, `${path}.schema`);
      const size = canon(schema).length;
      if (size > ICS_LIMITS.maxSchemaBytes) {
        throw new InvalidIcsError(`${path}.schema`, `is ${size} bytes of canonical JSON; a rubric schema may have at most ${ICS_LIMITS.maxSchemaBytes}.`);
      }
      compileJsonSchema(schema, `${path}.schema`);
      return { id, kind, file: expectBundlePath(o.file, `${path}.file`), schema };
    }
    case "forbidden_content": {
      const patterns = expectArray(o.patterns, `${path}.patterns`, 1, ICS_LIMITS.maxPatterns).map((p, i) =>
        expectString(p, `${path}.patterns[${i}]`, ICS_LIMITS.maxPatternLength),
      );
      return { id, kind, patterns };
    }
    case "hash_match":
      return { id, kind, file: expectBundlePath(o.file, `${path}.file`), hash: o.hash as Hex };
    case "semantic":
      return { id, kind, description: expectString(o.description, `${path}.description`, ICS_LIMITS.maxDescriptionLength) };
  }
}

function expectJsonSchema(value: unknown, path: string): JsonSchema {
  if (typeof value === "boolean") return value;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidFieldError(path, "a JSON Schema (an object or a boolean)", value);
  }
  try {
    // A private copy in plain JSON: the ICS hash and the compiled validator see exactly the same schema.
    return JSON.parse(canon(value)) as JsonObject;
  } catch (cause) {
    throw new InvalidIcsError(path, "is not plain JSON.", { cause });
  }
}

const MAX_COMPILED_SCHEMAS = 256;
const compiledSchemas = new Map<string, ValidateFunction>();

/**
 * The Ajv validator of `schema` (`allErrors: false`, `strict: true`, no formats, no remote references),
 * memoised by canonical form. A schema Ajv refuses, or an asynchronous one, is an {@link InvalidIcsError}.
 */
export function compileJsonSchema(schema: JsonSchema, path = "schema"): ValidateFunction {
  const key = canon(schema);
  const known = compiledSchemas.get(key);
  if (known) return known;
  let validate: ValidateFunction;
  try {
    // One Ajv per schema: schemas with the same `$id` from different ICS documents must not collide.
    validate = new Ajv({ allErrors: false, strict: true, logger: false }).compile(JSON.parse(key) as JsonSchema);
  } catch (cause) {
    throw new InvalidIcsError(path, `is not a JSON Schema Ajv accepts in strict mode: ${(cause as Error).message}`, { cause });
  }
  if ((validate as { $async?: unknown }).$async) {
    throw new InvalidIcsError(path, "is an asynchronous schema ($async); only synchronous schemas can be checked.");
  }
  if (compiledSchemas.size >= MAX_COMPILED_SCHEMAS) compiledSchemas.clear();
  compiledSchemas.set(key, validate);
  return validate;
}

function testSuiteFromJson(value: unknown, path: string): TestSuiteBinding {
  const o = value as JsonObject;
  return { hash: o.hash as Hex, runner: runnerFromJson(o.runner, `${path}.runner`) };
}

/** Validates a runner: `["node", "<script path in the suite>", ...args]`, its limits and the optional `call_timeout_ms`. */
export function runnerFromJson(value: unknown, path = "Runner"): Runner {
  assertMatchesSchema("ics", value, path, "runner");
  const o = value as JsonObject;
  const raw = expectArray(o.command, `${path}.command`, ICS_LIMITS.minCommandLength, ICS_LIMITS.maxCommandLength);
  if (raw[0] !== "node") {
    throw new UnsupportedRunnerError(`${path}.command[0]`, `is ${JSON.stringify(raw[0])}; the only runner is "node".`);
  }
  const script = expectBundlePath(raw[1], `${path}.command[1]`);
  if (script === "deliverable" || script.startsWith("deliverable/")) {
    throw new UnsupportedRunnerError(`${path}.command[1]`, "names the deliverable; the script must be a file of the test suite.");
  }
  const args = raw.slice(2).map((arg, i) =>
    expectPattern(
      arg,
      `${path}.command[${i + 2}]`,
      /^[^\u0000-\u001f\u007f]*$/,
      ICS_LIMITS.maxArgumentLength,
      `an argument of 1 to ${ICS_LIMITS.maxArgumentLength} characters without control characters`,
    ),
  );
  const runner: Runner = {
    command: ["node", script, ...args],
    timeoutMs: expectInt(o.timeout_ms, `${path}.timeout_ms`, ICS_LIMITS.minTimeoutMs, ICS_LIMITS.maxTimeoutMs),
    maxOutputBytes: expectInt(o.max_output_bytes, `${path}.max_output_bytes`, ICS_LIMITS.minOutputBytes, ICS_LIMITS.maxOutputBytes),
  };
  if (Object.hasOwn(o, "call_timeout_ms")) {
    runner.callTimeoutMs = expectInt(o.call_timeout_ms, `${path}.call_timeout_ms`, ICS_LIMITS.minCallTimeoutMs, ICS_LIMITS.maxCallTimeoutMs);
  }
  return runner;
}

/** The JSON form of a runner (`call_timeout_ms` only if the runner names one). */
export function runnerToJson(runner: Runner): RunnerJson {
  const json: RunnerJson = { command: [...runner.command], timeout_ms: runner.timeoutMs, max_output_bytes: runner.maxOutputBytes };
  if (runner.callTimeoutMs !== undefined) json.call_timeout_ms = runner.callTimeoutMs;
  return json;
}

/** A penalty the schema accepted (refund_bps 0..10000, slash a uint128 decimal string). */
function penaltyFromJson(value: unknown): Penalty {
  const o = value as { refund_bps: number; slash: string };
  return { refundBps: o.refund_bps, slash: BigInt(o.slash) };
}

function penaltyScheduleFromJson(value: unknown): PenaltySchedule {
  const o = value as { objective_failure: unknown; per_failed_test: unknown; unserviceable: { compute_spent_bps: number } };
  return {
    objectiveFailure: penaltyFromJson(o.objective_failure),
    perFailedTest: penaltyFromJson(o.per_failed_test),
    unserviceable: { computeSpentBps: o.unserviceable.compute_spent_bps },
  };
}

/** Unique ids; one `test_suite` item at most, and only with a bound test suite. */
function assertRubricConsistent(ics: Ics, path: string): void {
  const seen = new Set<string>();
  let testSuiteItems = 0;
  ics.rubric.items.forEach((item, i) => {
    if (seen.has(item.id)) throw new InvalidIcsError(`${path}.rubric.items[${i}].id`, `repeats the id ${JSON.stringify(item.id)}; rubric ids are unique.`);
    seen.add(item.id);
    if (item.kind === "test_suite") {
      if (ics.testSuite === null) {
        throw new InvalidIcsError(`${path}.rubric.items[${i}]`, "is a test_suite item, but the ICS binds no test suite (test_suite is null).");
      }
      if (++testSuiteItems > 1) throw new InvalidIcsError(`${path}.rubric.items[${i}]`, "is a second test_suite item; the suite runs once per case.");
    }
  });
}

/** The JSON form of an ICS (what {@link icsHash} hashes). */
export function icsToJson(ics: Ics): IcsJson {
  const p = ics.penaltySchedule;
  return {
    ics_version: ics.icsVersion,
    task: ics.task,
    asset: ics.asset.toLowerCase() as Hex,
    max_price: uintToJson(ics.maxPrice),
    deadline: uintToJson(ics.deadline),
    rubric: { version: ics.rubric.version, items: ics.rubric.items.map(rubricItemToJson) },
    test_suite: ics.testSuite === null ? null : { hash: ics.testSuite.hash, runner: runnerToJson(ics.testSuite.runner) },
    penalty_schedule: {
      objective_failure: { refund_bps: p.objectiveFailure.refundBps, slash: uintToJson(p.objectiveFailure.slash) },
      per_failed_test: { refund_bps: p.perFailedTest.refundBps, slash: uintToJson(p.perFailedTest.slash) },
      unserviceable: { compute_spent_bps: p.unserviceable.computeSpentBps },
    },
  };
}

function rubricItemToJson(item: RubricItem): RubricItem {
  switch (item.kind) {
    case "forbidden_content":
      return { ...item, patterns: [...item.patterns] };
    case "json_schema":
      return { ...item, schema: JSON.parse(canon(item.schema)) as JsonSchema };
    default:
      return { ...item };
  }
}

/** `keccak256(canon(icsToJson(ics)))`: the hash a GigEscrow binds. */
export function icsHash(ics: Ics): Hex {
  return artifactId(icsToJson(ics));
}

/**
 * The remedy of a provider fault with `failedTests` failing tests on an escrow of `value`:
 *   refund = ⌊value × min(10000, objective_failure.refund_bps + per_failed_test.refund_bps × failedTests) / 10000⌋
 *   slash  = objective_failure.slash + per_failed_test.slash × failedTests
 * The refund never exceeds `value`; the slash is exact (the caller bounds it by what can be slashed).
 */
export function penaltyFor(ics: Ics, failedTests: number, value: bigint): { refund: bigint; slash: bigint } {
  if (!Number.isSafeInteger(failedTests) || failedTests < 0) {
    throw new InvalidFieldError("failedTests", "a non-negative integer", failedTests);
  }
  if (value < 0n) throw new InvalidFieldError("value", "a non-negative amount", value);
  const { objectiveFailure, perFailedTest } = ics.penaltySchedule;
  const failed = BigInt(failedTests);
  let bps = BigInt(objectiveFailure.refundBps) + BigInt(perFailedTest.refundBps) * failed;
  if (bps > BigInt(BPS_MAX)) bps = BigInt(BPS_MAX);
  return {
    refund: (value * bps) / BigInt(BPS_MAX),
    slash: objectiveFailure.slash + perFailedTest.slash * failed,
  };
}

/** An unserviceable request refunds `value` minus the compute already spent: `value − ⌊value × compute_spent_bps / 10000⌋`. */
export function unserviceableRefund(ics: Ics, value: bigint): bigint {
  if (value < 0n) throw new InvalidFieldError("value", "a non-negative amount", value);
  return value - (value * BigInt(ics.penaltySchedule.unserviceable.computeSpentBps)) / BigInt(BPS_MAX);
}
