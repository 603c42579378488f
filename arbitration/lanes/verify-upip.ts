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
 * `replays` is verified. A stream sample's record (its intent `stream sample: test #N …`) re-ran only test N of the
 * suite, and so does its reproduction. A mismatch names the fields that differ (e.g. `result.failed_tests`,
 * `deps.engine_sha256`): a record made by another engine or harness never reproduces here.
 */
import { canon } from "../../channel-client/core/canonical";
import { BaseError } from "../../channel-client/core/errors";
import { assertBundleHash, type Bundle } from "../documents/bundle";
import { InvalidUpipError } from "../documents/errors";
import { DEFAULT_WATCHDOG_MS, replay } from "./replay";
import { resolutionFromJson } from "./resolution";
import { sampledTestOf } from "./stream-sample";
import { upipFromJson, verifyUpip, type UpipRecord, type UpipVerification } from "../documents/upip";

/** The bundles a record names are not among those supplied (`--package` evidence). */
export class UpipBundleNotFoundError extends BaseError {
  override name = "UpipBundleNotFoundError" as const;
}

/** Exit status of a verification that ran and found a mismatch (1 is an error, 2 a usage error). */
export const MISMATCH_EXIT_CODE = 3;

/** At most this many differing fields are listed per record. */
export const MAX_DIFFERENCES = 16;

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
  // A stream sample's record re-ran one test of the suite (decision 0037): its intent names it; so does the reproduction.
  const only = sampledTestOf(p.intent);
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
    ...(only === undefined ? {} : { only }),
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
