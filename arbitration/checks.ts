/**
 * Lane 1: the rubric of an ICS compiled into deterministic objective checks over the deliverable.
 *
 * Each rubric item, in order, gives at most one check named by its id: `test_suite` replays the bound suite
 * twice in the sandbox and compares the UPIP records; the others are pure functions of the deliverable's
 * files with fixed detail strings; `semantic` items are not evaluated here but listed in `needsLane2`.
 * When a check cannot be decided honestly (suite hash mismatch, no sandbox, non-reproducible replay, a
 * limit hit, unreadable summary) its status is false, its detail starts with "inconclusive", and a reason
 * code says why: such a check is no evidence of provider fault, and the case is undecidable.
 * The same inputs always give a deep-equal result.
 */
import { keccak256, stringToBytes, type Hex } from "viem";

import { parseJson } from "../channel-client/canonical";
import { BaseError } from "../channel-client/errors";
import { bundleHash, bundlePaths, type Bundle } from "./bundle";
import { InvalidBundleError, SandboxUnavailableError, UnsupportedRunnerError } from "./errors";
import { compileJsonSchema, LANGUAGE_EXTENSIONS, type Ics, type Language, type RubricItem } from "./ics";
import { replay as sandboxReplay, type ReplayOutcome } from "./sandbox";
import { upipCanonical, upipHashHex, type UpipRecord } from "./upip";

/** One Lane 1 outcome, exactly as it appears in a Resolution's `objective_checks`. */
export type ObjectiveCheck = { name: string; status: boolean; hash: Hex | null; detail: string | null };

/** Why Lane 1 could not decide; every code makes the case undecidable rather than a fault of either party. */
export const REASON_CODES = {
  testSuiteMissing: "TEST_SUITE_MISSING",
  testSuiteHashMismatch: "TEST_SUITE_HASH_MISMATCH",
  testSuiteInvalid: "TEST_SUITE_INVALID",
  sandboxUnavailable: "SANDBOX_UNAVAILABLE",
  replayNondeterministic: "REPLAY_NONDETERMINISTIC",
  replayTimeout: "REPLAY_TIMEOUT",
  replayOutputLimit: "REPLAY_OUTPUT_LIMIT",
  replayOutputUnparseable: "REPLAY_OUTPUT_UNPARSEABLE",
} as const;

export type ObjectiveChecksResult = {
  checks: ObjectiveCheck[];
  /** The UPIP records of the replays: one when both runs matched, both when they did not. */
  replays: UpipRecord[];
  /** Failing tests reported by a conclusive replay (0 otherwise): the `failedTests` of `penaltyFor`. */
  failedTests: number;
  /** Ids of `semantic` rubric items, which need Lane 2. */
  needsLane2: string[];
  /** Sorted, unique {@link REASON_CODES}. */
  reasonCodes: string[];
};

export type ObjectiveChecksParameters = {
  ics: Ics;
  /** The test suite from the package; null if the package carries none. */
  suite: Bundle | null;
  deliverable: Bundle;
  /** The sandbox replay; replaceable in tests. */
  replay?: (parameters: Parameters<typeof sandboxReplay>[0]) => Promise<ReplayOutcome>;
  /** UPIP actor of the replays; default "ioi-arbitration/lane1". */
  actor?: string;
};

/** Longest detail string a check carries. */
export const MAX_DETAIL_LENGTH = 4096;

/** Runs every rubric item of `parameters.ics` against the deliverable, in rubric order. */
export async function runObjectiveChecks(parameters: ObjectiveChecksParameters): Promise<ObjectiveChecksResult> {
  const { ics, suite, deliverable, replay = sandboxReplay, actor = "ioi-arbitration/lane1" } = parameters;
  const checks: ObjectiveCheck[] = [];
  const replays: UpipRecord[] = [];
  const needsLane2: string[] = [];
  const reasons = new Set<string>();
  let failedTests = 0;

  for (const item of ics.rubric.items) {
    if (item.kind === "semantic") {
      needsLane2.push(item.id);
      continue;
    }
    if (item.kind === "test_suite") {
      const outcome = await testSuiteCheck(item.id, ics, suite, deliverable, replay, actor);
      checks.push(outcome.check);
      replays.push(...outcome.replays);
      failedTests += outcome.failedTests;
      if (outcome.reason) reasons.add(outcome.reason);
      continue;
    }
    checks.push(pureCheck(item, deliverable));
  }
  return { checks, replays, failedTests, needsLane2, reasonCodes: [...reasons].sort() };
}

/*//////////////////////////////////////////////////////////////
                           TEST SUITE
//////////////////////////////////////////////////////////////*/

type TestSuiteOutcome = { check: ObjectiveCheck; replays: UpipRecord[]; failedTests: number; reason: string | null };

async function testSuiteCheck(
  name: string,
  ics: Ics,
  suite: Bundle | null,
  deliverable: Bundle,
  replay: NonNullable<ObjectiveChecksParameters["replay"]>,
  actor: string,
): Promise<TestSuiteOutcome> {
  const inconclusive = (reason: string, detail: string, records: UpipRecord[] = []): TestSuiteOutcome => ({
    check: { name, status: false, hash: records[0] ? upipHashHex(records[0]) : null, detail: clip(`inconclusive (${reason}): ${detail}`) },
    replays: records,
    failedTests: 0,
    reason,
  });
  const binding = ics.testSuite!; // icsFromJson refuses a test_suite item without a binding
  if (suite === null) return inconclusive(REASON_CODES.testSuiteMissing, "the package carries no test suite.");
  const actual = bundleHash(suite);
  if (actual !== binding.hash) {
    return inconclusive(REASON_CODES.testSuiteHashMismatch, `the test suite hashes to ${actual}, but the ICS binds ${binding.hash}.`);
  }

  const intent = `Lane 1 replay of rubric item ${name}`;
  const runs: ReplayOutcome[] = [];
  try {
    for (let i = 0; i < 2; i++) runs.push(await replay({ suite, deliverable, runner: binding.runner, actor, intent }));
  } catch (error) {
    if (error instanceof SandboxUnavailableError || nameOf(error) === "SandboxUnavailableError") {
      return inconclusive(REASON_CODES.sandboxUnavailable, "no isolated sandbox is available to replay the suite.");
    }
    if (error instanceof UnsupportedRunnerError || error instanceof InvalidBundleError) {
      return inconclusive(REASON_CODES.testSuiteInvalid, (error as BaseError).shortMessage);
    }
    throw error;
  }
  const [first, second] = runs as [ReplayOutcome, ReplayOutcome];
  if (upipCanonical(first.record) !== upipCanonical(second.record)) {
    return inconclusive(
      REASON_CODES.replayNondeterministic,
      `two replays gave different records (${first.record.stack_hash} and ${second.record.stack_hash}).`,
      [first.record, second.record],
    );
  }
  const records = [first.record];
  const result = first.record.result;
  if (result.timed_out) {
    return inconclusive(REASON_CODES.replayTimeout, `the suite ran longer than ${binding.runner.timeoutMs} ms.`, records);
  }
  if (result.output_truncated) {
    return inconclusive(REASON_CODES.replayOutputLimit, `the suite wrote more than ${binding.runner.maxOutputBytes} bytes.`, records);
  }
  if (first.summary === null) {
    return inconclusive(REASON_CODES.replayOutputUnparseable, 'the last line of stdout is not {"total": n, "failed": [...]}.', records);
  }
  const { total, failed } = first.summary;
  const names = [...failed].sort(compareStrings);
  const passed = names.length === 0 && result.exit_code === 0;
  let detail: string;
  if (names.length > 0) detail = `${names.length} of ${total} tests failed: ${names.join(", ")}`;
  else if (result.exit_code === 0) detail = `all ${total} tests passed`;
  else detail = `0 of ${total} tests failed, but the suite ended with ${result.exit_code === null ? `signal ${result.signal}` : `exit code ${result.exit_code}`}`;
  return {
    check: { name, status: passed, hash: upipHashHex(first.record), detail: clip(detail) },
    replays: records,
    failedTests: names.length,
    reason: null,
  };
}

function nameOf(error: unknown): string | undefined {
  return typeof error === "object" && error !== null ? (error as { name?: string }).name : undefined;
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
