/**
 * UPIP L5 for Lane 1: `ioi arbitrate --verify-upip FILE` replays the process a UPIP record (`upip.ts`)
 * describes — the same bundles, runner command, pinned clocks and seeds, budgets, actor and intent, in this
 * process's sealed judge engine — and reports whether the reproduction is the record, bit for bit.
 *
 * The record names its bundles only by hash, so the verifier supplies them: either the case's
 * ChallengePackage (`--package FILE`: its `test_suite` and `deliverable` evidence) or two directories read as
 * `ioi dispute build-gig` reads them (`--suite-dir DIR --deliverable-dir DIR`). Bundles that do not hash to
 * the record's `state` are bad input, not a mismatch.
 *
 * FILE is either one record or a Resolution (as `ioi arbitrate --out` writes it): then every record in its
 * `replays` is verified. A mismatch names the fields that differ (e.g. `result.failed_tests`,
 * `deps.engine_sha256`): a record made by another engine or harness never reproduces here.
 */
import { canon } from "../core/canonical";
import { UsageError, type Out } from "./common";
import { BaseError } from "../core/errors";
import { assertBundleHash, bundleHash, type Bundle } from "../arbitration/bundle";
import { MAX_DOCUMENT_BYTES, parseDocument } from "../arbitration/document";
import { InvalidUpipError } from "../arbitration/errors";
import { readBundleDirectory, readOptionFile } from "./input-file";
import { evidenceOfKind, parsePackage } from "../arbitration/package";
import { DEFAULT_WATCHDOG_MS, replay } from "../arbitration/replay";
import { resolutionFromJson } from "../arbitration/resolution";
import { upipFromJson, verifyUpip, type UpipRecord, type UpipVerification } from "../arbitration/upip";

/** The bundles a record names are not among those supplied (`--package` evidence). */
export class UpipBundleNotFoundError extends BaseError {
  override name = "UpipBundleNotFoundError" as const;
}

/** Exit status of a verification that ran and found a mismatch (1 is an error, 2 a usage error). */
export const MISMATCH_EXIT_CODE = 3;

/** At most this many differing fields are listed per record. */
const MAX_DIFFERENCES = 16;

export type VerifyUpipParameters = {
  record: UpipRecord;
  suite: Bundle;
  deliverable: Bundle;
  /** Host protection of the replay; never part of the result. */
  watchdogMs?: number;
};

export type VerifyUpipReturnType = UpipVerification & {
  /** The record as this process reproduced it. */
  reproduced: UpipRecord;
  /** Dotted paths of the fields that differ (`state`, `deps`, `process` and `result` layers), sorted. */
  differences: string[];
};

/**
 * Replays `record` with `suite` and `deliverable`. Rejects with `BundleHashMismatchError` when a bundle is
 * not the one the record names, and with the replay's own typed errors when the host cannot run it
 * (`JudgeHostFaultError`) or the record's command names no file of the suite (`UnsupportedRunnerError`).
 */
export async function verifyUpipRecord(parameters: VerifyUpipParameters): Promise<VerifyUpipReturnType> {
  const { record, suite, deliverable } = parameters;
  assertBundleHash(suite, record.state.suite_hash, "the test suite");
  assertBundleHash(deliverable, record.state.deliverable_hash, "the deliverable");
  const { process: p } = record;
  const outcome = await replay({
    suite,
    deliverable,
    runner: { command: [...p.command], timeoutMs: DEFAULT_WATCHDOG_MS, maxOutputBytes: p.budgets.max_output_bytes },
    budgets: { stepsPerTest: p.budgets.steps_per_test, memoryBytes: p.budgets.memory_bytes, outputBytes: p.budgets.max_output_bytes },
    inputs: {
      suite: { clockMs: p.inputs.suite.clock_ms, seed: p.inputs.suite.seed },
      deliverable: { clockMs: p.inputs.deliverable.clock_ms, seed: p.inputs.deliverable.seed },
    },
    actor: p.actor,
    intent: p.intent,
    ...(parameters.watchdogMs === undefined ? {} : { watchdogMs: parameters.watchdogMs }),
  });
  const reproduced = outcome.record;
  return { ...verifyUpip(record, reproduced), reproduced, differences: differencesOf(record, reproduced) };
}

/** The dotted paths at which two records' layers differ (arrays compared whole). */
export function differencesOf(a: UpipRecord, b: UpipRecord): string[] {
  const found: string[] = [];
  const walk = (x: unknown, y: unknown, at: string) => {
    const plain = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
    if (plain(x) && plain(y)) {
      for (const key of [...new Set([...Object.keys(x), ...Object.keys(y)])].sort()) walk(x[key], y[key], `${at}.${key}`);
    } else if (canon(x ?? null) !== canon(y ?? null)) {
      found.push(at);
    }
  };
  for (const layer of ["state", "deps", "process", "result"] as const) walk(a[layer], b[layer], layer);
  return found;
}

/**
 * The records in a `--verify-upip` file: one UPIP record, or every record in a Resolution's `replays`.
 * Throws {@link InvalidUpipError} (or the Resolution's own errors) naming the first bad field.
 */
export function upipRecordsOf(document: unknown): UpipRecord[] {
  if (typeof document === "object" && document !== null && !Array.isArray(document)) {
    if (Object.hasOwn(document, "protocol")) return [upipFromJson(document)];
    if (Object.hasOwn(document, "replays")) {
      const { replays } = resolutionFromJson(document);
      if (replays.length === 0) throw new InvalidUpipError("Resolution.replays", "is empty: this resolution ran no Lane 1 replay to verify.");
      return replays;
    }
  }
  throw new InvalidUpipError("The document", "is neither a UPIP record (with `protocol`) nor a Resolution (with `replays`).");
}

/*//////////////////////////////////////////////////////////////
                               COMMAND
//////////////////////////////////////////////////////////////*/

type Values = Record<string, unknown>;

/** Where the bundles come from: a package's evidence or two directories. */
function bundleSource(values: Values): (record: UpipRecord) => { suite: Bundle; deliverable: Bundle } {
  const packageFile = values.package as string | undefined;
  const suiteDir = values["suite-dir"] as string | undefined;
  const deliverableDir = values["deliverable-dir"] as string | undefined;
  if (packageFile !== undefined && (suiteDir !== undefined || deliverableDir !== undefined)) {
    throw new UsageError("Give either --package FILE or --suite-dir DIR with --deliverable-dir DIR, not both: they are two ways to supply the record's bundles.");
  }
  if (packageFile !== undefined) {
    const pkg = parsePackage(readOptionFile("package", packageFile, MAX_DOCUMENT_BYTES));
    const bundles = [...evidenceOfKind(pkg, "test_suite"), ...evidenceOfKind(pkg, "deliverable")].map((item) => item.content);
    const find = (hash: string, what: string) => {
      const bundle = bundles.find((candidate) => bundleHash(candidate) === hash);
      if (!bundle) throw new UpipBundleNotFoundError(`The package ${packageFile} holds no bundle hashing to ${hash}, the record's ${what}.`);
      return bundle;
    };
    return (record) => ({ suite: find(record.state.suite_hash, "test suite"), deliverable: find(record.state.deliverable_hash, "deliverable") });
  }
  if (suiteDir === undefined || deliverableDir === undefined) {
    throw new UsageError("--verify-upip needs the record's bundles: --package FILE, or --suite-dir DIR with --deliverable-dir DIR.");
  }
  const bundles = { suite: readBundleDirectory(suiteDir, "suite-dir"), deliverable: readBundleDirectory(deliverableDir, "deliverable-dir") };
  return () => bundles;
}

/** `ioi arbitrate --verify-upip FILE …`: sets exit status {@link MISMATCH_EXIT_CODE} when any record does not reproduce. */
export async function runVerifyUpip(values: Values, out: Out): Promise<void> {
  const file = values["verify-upip"] as string;
  if (file.length === 0) throw new UsageError("--verify-upip needs a file: a UPIP record or a Resolution.");
  const records = upipRecordsOf(parseDocument(readOptionFile("verify-upip", file, MAX_DOCUMENT_BYTES), { what: `--verify-upip ${file}` }));
  const bundlesFor = bundleSource(values);
  const results = [];
  for (const record of records) results.push(await verifyUpipRecord({ record, ...bundlesFor(record) }));

  const matched = results.filter((r) => r.match).length;
  results.forEach((r, i) => {
    const label = records.length === 1 ? "UPIP record" : `UPIP record ${i + 1} of ${records.length}`;
    const result = r.reproduced.result;
    const summary = `${result.failed_tests.length} of ${result.tests} tests failed${result.failed_tests.length ? ` (${result.failed_tests.join(", ")})` : ""}${result.suite_fault ? `, suite fault ${result.suite_fault}` : ""}`;
    if (r.match) {
      out.lines.push(`${label} ${r.original_hash}: match — reproduced bit for bit (${summary}).`);
    } else {
      const listed = r.differences.slice(0, MAX_DIFFERENCES).join(", ") + (r.differences.length > MAX_DIFFERENCES ? ", …" : "");
      out.lines.push(`${label} ${r.original_hash}: MISMATCH — the reproduction hashes to ${r.reproduced_hash}; differing fields: ${listed || "none (the record's stack hash is wrong)"} (reproduced: ${summary}).`);
    }
  });
  out.lines.push(matched === results.length ? `All ${results.length} record(s) reproduced: match.` : `${results.length - matched} of ${results.length} record(s) did not reproduce: mismatch.`);
  if (matched !== results.length) out.exitCode = MISMATCH_EXIT_CODE;
  Object.assign(out.result, {
    match: matched === results.length,
    records: results.map((r) => ({
      match: r.match,
      originalHash: r.original_hash,
      reproducedHash: r.reproduced_hash,
      differences: r.differences,
      failedTests: r.reproduced.result.failed_tests,
    })),
  });
}
