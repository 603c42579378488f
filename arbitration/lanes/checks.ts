/**
 * Lane 1: the rubric of an ICS compiled into deterministic objective checks over the deliverable.
 *
 * Each rubric item, in order, gives at most one check named by its id: `test_suite` replays the bound suite
 * in the sealed judge engine (`replay.ts`); the others are pure functions of the deliverable's files with
 * fixed detail strings; `semantic` items are not evaluated here but listed in `needsLane2`.
 *
 * The test suite is replayed three times: twice under the case's pinned inputs (clock and seed, `pinned.ts`)
 * for both sides, and once more with only the suite under the alternate inputs. Every outcome is decided and
 * attributed (UAICP: fail safe only on genuine uncertainty):
 * - to the **deliverable** (the provider): tests it failed, including tests where it exhausted its step,
 *   memory or output budget, and tests whose calls it answered differently in the two identical replays
 *   (`DELIVERABLE_NONDETERMINISTIC`);
 * - to the **suite** (the client, who bound it): a suite that crashed, exceeded its own budgets, registered
 *   no tests or never settled (`SUITE_*` from `replay.ts`), one whose verdict changed under the alternate
 *   clock and seed (`SUITE_INPUT_DEPENDENT`), or one that behaved differently in the two identical replays
 *   (`SUITE_NONDETERMINISTIC`). Its check passes (nothing is held against the deliverable) and names the
 *   fault; the runner then decides against the challenger.
 * - to the **challenger** (the client, who owes the bound suite): a package without the test suite, with a
 *   suite that is not the bound one, or one that cannot be run (`TEST_SUITE_MISSING`,
 *   `TEST_SUITE_HASH_MISMATCH`, `TEST_SUITE_INVALID`): nobody profits from their own missing evidence.
 * A verdict that changes under the alternate inputs is the suite's (`SUITE_INPUT_DEPENDENT`) only when the
 * suite asked the deliverable exactly the same questions and got exactly the same answers, yet judged them
 * differently; when its questions changed, the deliverable's answers to the pinned questions decide (the
 * pinned run is the verdict), so neither side can make its own behaviour the other's fault.
 * Only a fault of the arbitrator's own host (the engine could not run, the host watchdog fired) stops Lane 1:
 * it throws {@link JudgeHostFaultError} and the arbitrator abstains.
 * The same inputs always give a deep-equal result.
 */
import { keccak256, stringToBytes, type Hex } from "viem";

import { parseJson } from "../../channel-client/core/canonical";
import { BaseError } from "../../channel-client/core/errors";
import { bundleHash, bundlePaths, type Bundle } from "../documents/bundle";
import { EngineUnavailableError } from "../engine/engine";
import { InvalidBundleError, UnsupportedRunnerError } from "../documents/errors";
import { compileJsonSchema, LANGUAGE_EXTENSIONS, stepBudgetOf, type Ics, type Language, type RubricItem } from "../documents/ics";
import { alternateInputs } from "./pinned";
import {
  DEFAULT_MEMORY_BYTES,
  JudgeHostFaultError,
  replay as engineReplay,
  type ReplayOutcome,
  type ReplayParameters,
  type PinnedInputs,
} from "./replay";
import { upipCanonical, upipHashHex, type UpipRecord } from "../documents/upip";

/** One Lane 1 outcome, exactly as it appears in a Resolution's `objective_checks`. */
export type ObjectiveCheck = { name: string; status: boolean; hash: Hex | null; detail: string | null };

/** Evidence the challenger owed for the test suite and did not supply: decided against the challenger. */
export const REASON_CODES = {
  testSuiteMissing: "TEST_SUITE_MISSING",
  testSuiteHashMismatch: "TEST_SUITE_HASH_MISMATCH",
  testSuiteInvalid: "TEST_SUITE_INVALID",
  judgeHostFault: "JUDGE_HOST_FAULT",
} as const;

/** Attribution codes of a decided Lane 1 outcome that is not a plain test failure. */
export const ATTRIBUTION_CODES = {
  suiteInputDependent: "SUITE_INPUT_DEPENDENT",
  suiteNondeterministic: "SUITE_NONDETERMINISTIC",
  deliverableNondeterministic: "DELIVERABLE_NONDETERMINISTIC",
} as const;

export type ObjectiveChecksResult = {
  checks: ObjectiveCheck[];
  /** The UPIP records of the replays that decided the outcome (see {@link runObjectiveChecks}). */
  replays: UpipRecord[];
  /** Failing tests charged to the deliverable (0 otherwise): the `failedTests` of `penaltyFor`. */
  failedTests: number;
  /** Tests of the bound suite the deliverable passed in the deciding replay (evidence of work done). */
  passedTests: number;
  /** Ids of `semantic` rubric items, which need Lane 2. */
  needsLane2: string[];
  /** Sorted, unique {@link REASON_CODES}: the case is undecidable. */
  reasonCodes: string[];
  /** Sorted, unique codes saying whom a decided outcome is attributed to and why (`SUITE_*`, `DELIVERABLE_*`). */
  attribution: string[];
  /** The bound suite is at fault (its author, the client, loses the test_suite item). */
  suiteAtFault: boolean;
};

export type ObjectiveChecksParameters = {
  ics: Ics;
  /** The test suite from the package; null if the package carries none. */
  suite: Bundle | null;
  deliverable: Bundle;
  /** The case's pinned clock and seed (`pinned.ts`). */
  inputs: PinnedInputs;
  /** The engine replay; replaceable in tests. */
  replay?: (parameters: ReplayParameters) => Promise<ReplayOutcome>;
  /** UPIP actor of the replays; default "ioi-arbitration/lane1". */
  actor?: string;
  /** Host protection of each replay (never part of a verdict). */
  watchdogMs?: number;
};

/** Longest detail string a check carries. */
export const MAX_DETAIL_LENGTH = 4096;

/** Runs every rubric item of `parameters.ics` against the deliverable, in rubric order. */
export async function runObjectiveChecks(parameters: ObjectiveChecksParameters): Promise<ObjectiveChecksResult> {
  const { ics, deliverable } = parameters;
  const checks: ObjectiveCheck[] = [];
  const replays: UpipRecord[] = [];
  const needsLane2: string[] = [];
  const reasons = new Set<string>();
  const attribution = new Set<string>();
  let failedTests = 0;
  let passedTests = 0;
  let suiteAtFault = false;

  for (const item of ics.rubric.items) {
    if (item.kind === "semantic") {
      needsLane2.push(item.id);
      continue;
    }
    if (item.kind === "test_suite") {
      const outcome = await testSuiteCheck(item, parameters);
      checks.push(outcome.check);
      replays.push(...outcome.replays);
      failedTests += outcome.failedTests;
      passedTests += outcome.passedTests;
      if (outcome.reason) reasons.add(outcome.reason);
      outcome.attribution.forEach((code) => attribution.add(code));
      suiteAtFault ||= outcome.suiteAtFault;
      continue;
    }
    checks.push(pureCheck(item, deliverable));
  }
  return { checks, replays, failedTests, passedTests, needsLane2, reasonCodes: [...reasons].sort(), attribution: [...attribution].sort(), suiteAtFault };
}

/*//////////////////////////////////////////////////////////////
                           TEST SUITE
//////////////////////////////////////////////////////////////*/

type TestSuiteOutcome = {
  check: ObjectiveCheck;
  replays: UpipRecord[];
  failedTests: number;
  passedTests: number;
  reason: string | null;
  attribution: string[];
  suiteAtFault: boolean;
};

async function testSuiteCheck(item: Extract<RubricItem, { kind: "test_suite" }>, parameters: ObjectiveChecksParameters): Promise<TestSuiteOutcome> {
  const { ics, suite, deliverable, inputs, replay = engineReplay, actor = "ioi-arbitration/lane1" } = parameters;
  const name = item.id;
  // Evidence the challenger owed: its absence or invalidity is held against the challenger, never the deliverable.
  const inconclusive = (reason: string, detail: string): TestSuiteOutcome => ({
    check: { name, status: true, hash: null, detail: clip(`evidence fault (${reason}): ${detail}; nothing is held against the deliverable`) },
    replays: [],
    failedTests: 0,
    passedTests: 0,
    reason: null,
    attribution: [reason],
    suiteAtFault: true,
  });
  const binding = ics.testSuite!; // icsFromJson refuses a test_suite item without a binding
  if (suite === null) return inconclusive(REASON_CODES.testSuiteMissing, "the package carries no test suite.");
  const actual = bundleHash(suite);
  if (actual !== binding.hash) {
    return inconclusive(REASON_CODES.testSuiteHashMismatch, `the test suite hashes to ${actual}, but the ICS binds ${binding.hash}.`);
  }

  const budgets = { stepsPerTest: stepBudgetOf(item), memoryBytes: DEFAULT_MEMORY_BYTES, outputBytes: binding.runner.maxOutputBytes };
  const alternate = alternateInputs(inputs);
  const plan: Array<[string, ReplayParameters["inputs"]]> = [
    [`Lane 1 replay of rubric item ${name}`, { suite: inputs, deliverable: inputs }],
    [`Lane 1 replay of rubric item ${name}`, { suite: inputs, deliverable: inputs }],
    [`Lane 1 replay of rubric item ${name}, suite under the alternate clock and seed`, { suite: alternate, deliverable: inputs }],
  ];
  const runs: ReplayOutcome[] = [];
  try {
    for (const [intent, pinned] of plan) {
      runs.push(
        await replay({
          suite,
          deliverable,
          runner: binding.runner,
          budgets,
          inputs: pinned,
          actor,
          intent,
          ...(parameters.watchdogMs === undefined ? {} : { watchdogMs: parameters.watchdogMs }),
        }),
      );
    }
  } catch (error) {
    if (error instanceof UnsupportedRunnerError || error instanceof InvalidBundleError) {
      return inconclusive(REASON_CODES.testSuiteInvalid, (error as BaseError).shortMessage);
    }
    if (error instanceof EngineUnavailableError) throw new JudgeHostFaultError("The judge engine is unavailable.", { cause: error });
    throw error;
  }
  const [first, second, shifted] = runs as [ReplayOutcome, ReplayOutcome, ReplayOutcome];

  const suiteFault = (code: string, detail: string, records: UpipRecord[]): TestSuiteOutcome => ({
    check: { name, status: true, hash: upipHashHex(records[0]!), detail: clip(`suite fault (${code}): ${detail}; nothing is held against the deliverable`) },
    replays: records,
    failedTests: 0,
    passedTests: 0,
    reason: null,
    attribution: [code],
    suiteAtFault: true,
  });

  if (upipCanonical(first.record) !== upipCanonical(second.record)) {
    const side = divergence(first, second);
    if (side === "suite") {
      return suiteFault(ATTRIBUTION_CODES.suiteNondeterministic, "two identical replays of the suite behaved differently", [first.record, second.record]);
    }
    const failed = new Set([...failedNames(first), ...failedNames(second), ...side.tests.map((i) => first.tests[i]?.name ?? `#${i + 1}`)]);
    const names = [...failed].sort(compareStrings);
    return {
      check: {
        name,
        status: false,
        hash: upipHashHex(first.record),
        detail: clip(`${names.length} of ${first.tests.length} tests failed: ${names.join(", ")} (the deliverable answered differently in two identical replays)`),
      },
      replays: [first.record, second.record],
      failedTests: names.length,
      passedTests: first.tests.filter((test) => test.passed && !failed.has(test.name)).length,
      reason: null,
      attribution: [ATTRIBUTION_CODES.deliverableNondeterministic],
      suiteAtFault: false,
    };
  }
  if (first.suiteFault) return suiteFault(first.suiteFault.code, first.suiteFault.detail, [first.record]);
  if ((shifted.suiteFault || verdictOf(shifted) !== verdictOf(first)) && sameExchanges(first, shifted)) {
    const what = shifted.suiteFault
      ? `${shifted.suiteFault.code}: ${shifted.suiteFault.detail}`
      : `${failedNames(shifted).length} of ${shifted.tests.length} tests failed instead of ${failedNames(first).length} of ${first.tests.length}`;
    return suiteFault(
      ATTRIBUTION_CODES.suiteInputDependent,
      `the suite's verdict depends on its clock or seed (under clock ${shifted.record.process.inputs.suite.clock_ms} ms and the alternate seed: ${what})`,
      [first.record, shifted.record],
    );
  }

  const names = failedNames(first).sort(compareStrings);
  const faults = first.tests.filter((test) => test.fault !== null);
  let detail = names.length === 0 ? `all ${first.tests.length} tests passed` : `${names.length} of ${first.tests.length} tests failed: ${names.join(", ")}`;
  if (faults.length) detail += `; over budget: ${faults.map((test) => `${test.name} (${test.fault})`).join(", ")}`;
  return {
    check: { name, status: names.length === 0, hash: upipHashHex(first.record), detail: clip(detail) },
    replays: [first.record],
    failedTests: names.length,
    passedTests: first.tests.length - names.length,
    reason: null,
    attribution: [...new Set(faults.map((test) => test.fault!))].sort(),
    suiteAtFault: false,
  };
}

/**
 * Whether, in every test, the suite asked the deliverable the same questions and got the same answers in
 * both replays (up to where it stopped asking in the shorter one): then any difference in the verdicts is
 * the suite's own judgement changing with its inputs.
 */
function sameExchanges(a: ReplayOutcome, b: ReplayOutcome): boolean {
  // Per test: the calls both replays made agree (same request, same answer); one may have asked fewer.
  const byTest = (outcome: ReplayOutcome) => {
    const map = new Map<number, CallTraceLike[]>();
    for (const call of outcome.calls) map.set(call.test, [...(map.get(call.test) ?? []), call]);
    return map;
  };
  const [x, y] = [byTest(a), byTest(b)];
  for (const [test, calls] of x) {
    const other = y.get(test) ?? [];
    for (let i = 0; i < Math.min(calls.length, other.length); i++) {
      if (calls[i]!.request !== other[i]!.request || calls[i]!.answer !== other[i]!.answer) return false;
    }
  }
  return true;
}

type CallTraceLike = { test: number; request: string; answer: string };

function failedNames(outcome: ReplayOutcome): string[] {
  return outcome.tests.filter((test) => !test.passed).map((test) => test.name);
}

/** The verdict of a replay, as compared between inputs: the tests, which failed and why, and any suite fault. */
function verdictOf(outcome: ReplayOutcome): string {
  return JSON.stringify([outcome.tests.map((test) => [test.name, test.passed, test.fault]), outcome.suiteFault?.code ?? null]);
}

/**
 * Which side made two replays of identical inputs differ: the deliverable if, at the first call that
 * differs, the suite asked the same and the deliverable answered differently (the tests of every such call
 * are returned); the suite in every other case.
 */
function divergence(a: ReplayOutcome, b: ReplayOutcome): "suite" | { tests: number[] } {
  const tests = new Set<number>();
  const length = Math.min(a.calls.length, b.calls.length);
  for (let i = 0; i < length; i++) {
    const [x, y] = [a.calls[i]!, b.calls[i]!];
    if (x.test !== y.test || x.request !== y.request) return tests.size ? { tests: [...tests] } : "suite";
    if (x.answer !== y.answer) tests.add(x.test);
  }
  if (tests.size) return { tests: [...tests] };
  if (a.calls.length === b.calls.length && a.stdout === b.stdout && a.stderr !== b.stderr) return { tests: [] };
  return "suite";
}

/*//////////////////////////////////////////////////////////////
                          PURE CHECKS
//////////////////////////////////////////////////////////////*/

type PureItem = Exclude<RubricItem, { kind: "test_suite" } | { kind: "semantic" }>;

/** One rubric item other than `test_suite` and `semantic`, evaluated on the deliverable alone. */
export function pureCheck(item: PureItem, deliverable: Bundle): ObjectiveCheck {
  const name = item.id;
  const paths = bundlePaths(deliverable);
  const files = deliverable.files;
  switch (item.kind) {
    case "language":
      return languageCheck(name, item.expect, paths);
    case "max_lines": {
      const total = paths.reduce((sum, path) => sum + lineCount(files[path]!), 0);
      return { name, status: total <= item.limit, hash: null, detail: `${total} lines (limit ${item.limit})` };
    }
    case "max_bytes": {
      const total = paths.reduce((sum, path) => sum + Buffer.byteLength(files[path]!, "utf8"), 0);
      return { name, status: total <= item.limit, hash: null, detail: `${total} bytes (limit ${item.limit})` };
    }
    case "json_schema":
      return jsonSchemaCheck(name, item.file, item.schema, deliverable);
    case "forbidden_content":
      return forbiddenContentCheck(name, item.patterns, deliverable);
    case "hash_match": {
      if (!Object.hasOwn(files, item.file)) return missingFile(name, item.file);
      const actual = keccak256(stringToBytes(files[item.file]!));
      return {
        name,
        status: actual === item.hash,
        hash: actual,
        detail: actual === item.hash ? `${item.file} has keccak256 ${actual}` : `${item.file} has keccak256 ${actual}, not ${item.hash}`,
      };
    }
  }
}

function languageCheck(name: string, language: Language, paths: string[]): ObjectiveCheck {
  const extensions: readonly string[] = LANGUAGE_EXTENSIONS[language];
  const others = paths.filter((path) => !extensions.some((extension) => path.endsWith(extension)));
  return others.length === 0
    ? { name, status: true, hash: null, detail: `all ${paths.length} files are ${language} (${extensions.join(", ")})` }
    : { name, status: false, hash: null, detail: clip(`${others.length} of ${paths.length} files are not ${language} (${extensions.join(", ")}): ${others.join(", ")}`) };
}

/** Lines of a file: 0 if empty, else newline count, plus one for a last line without a newline. */
export function lineCount(content: string): number {
  if (content.length === 0) return 0;
  let newlines = 0;
  for (let i = content.indexOf("\n"); i >= 0; i = content.indexOf("\n", i + 1)) newlines++;
  return content.endsWith("\n") ? newlines : newlines + 1;
}

function jsonSchemaCheck(name: string, file: string, schema: Parameters<typeof compileJsonSchema>[0], deliverable: Bundle): ObjectiveCheck {
  if (!Object.hasOwn(deliverable.files, file)) return missingFile(name, file);
  let data: unknown;
  try {
    data = parseJson(deliverable.files[file]!, { maxBytes: 1 << 20, what: file });
  } catch (error) {
    const reason = error instanceof BaseError ? error.shortMessage : `${file} is not valid JSON.`;
    return { name, status: false, hash: null, detail: clip(reason) };
  }
  const validate = compileJsonSchema(schema);
  if (validate(data)) return { name, status: true, hash: null, detail: `${file} matches the schema` };
  const first = validate.errors?.[0];
  const where = first?.instancePath ? first.instancePath : "/";
  return { name, status: false, hash: null, detail: clip(`${file} does not match the schema: ${where} ${first?.message ?? "is invalid"}`) };
}

function forbiddenContentCheck(name: string, patterns: string[], deliverable: Bundle): ObjectiveCheck {
  const paths = bundlePaths(deliverable);
  const found: string[] = [];
  patterns.forEach((pattern, i) => {
    const hits = paths.filter((path) => deliverable.files[path]!.includes(pattern));
    if (hits.length > 0) found.push(`pattern ${i} ${JSON.stringify(pattern)} found in ${hits.join(", ")}`);
  });
  return found.length === 0
    ? { name, status: true, hash: null, detail: `none of ${patterns.length} forbidden patterns found` }
    : { name, status: false, hash: null, detail: clip(found.join("; ")) };
}

function missingFile(name: string, file: string): ObjectiveCheck {
  return { name, status: false, hash: null, detail: `${file} is not in the deliverable` };
}

/** Cuts a detail to {@link MAX_DETAIL_LENGTH} characters (never inside a surrogate pair), marking the cut. */
function clip(detail: string): string {
  if (detail.length <= MAX_DETAIL_LENGTH) return detail;
  let end = MAX_DETAIL_LENGTH - 3;
  const code = detail.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${detail.slice(0, end)}...`;
}

/** Code-unit order, the same on every node and locale. */
function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
