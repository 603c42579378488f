/**
 * Vetting before delivery (`ioi gig vet`): the ICS's objective rubric run against a deliverable exactly as
 * Lane 1 arbitrators will run it — the same code path (`runObjectiveChecks` of `checks.ts`), so the same
 * sealed engine, preludes, budgets (the `test_suite` item's step budget, the runner's output limit) and the
 * same three replays: twice under the pinned inputs and once with only the suite under the alternate clock
 * and seed (`pinned.ts`). A suite whose verdict changes under the alternate inputs is one Lane 1 attributes
 * to its author, the client (`SUITE_INPUT_DEPENDENT`); a provider learns that before accepting the gig.
 *
 * One more replay, with both sides under the alternate inputs, is vetting's own: it tells the provider
 * whether the deliverable's results depend on the clock or seed (arbitrators will pin them to the gig's
 * funding block, so a vet under other inputs would not predict the verdict). It never changes the verdict.
 *
 * The pinned inputs are the gig's (`--gig ID`: read from its `GigFunded` event, or given offline with
 * `--funded-at` and `--chain-id`), else {@link DEFAULT_INPUTS}.
 */
import { assertBundleHash, type Bundle } from "../documents/bundle";
import { runObjectiveChecks, type ObjectiveCheck } from "./checks";
import type { Ics } from "../documents/ics";
import { alternateInputs, DEFAULT_INPUTS } from "./pinned";
import { JudgeHostFaultError, replay as engineReplay, type PinnedInputs, type ReplayOutcome, type ReplayParameters } from "./replay";
import type { UpipRecord } from "../documents/upip";

/** Exit status of a vet that ran and found the deliverable failing or the suite at fault (1 is an error, 2 a usage error). */
export const VET_FAILED_EXIT_CODE = 3;

/** What Lane 1 would decide about the test suite and the deliverable. */
export type VetVerdict =
  /** Every objective check passes: no objective ground for a dispute. */
  | "pass"
  /** Some objective check fails: Lane 1 would decide against the provider. */
  | "deliverable_fails"
  /** The suite is at fault (crashes, budgets, clock- or seed-dependent verdict): Lane 1 would attribute it to the client. */
  | "suite_at_fault"
  /** Lane 1 could not decide (e.g. a rubric item that needs Lane 2). */
  | "undecidable"
  /** This machine could not finish the replay (the watchdog fired or the engine failed): arbitrators would not judge on it. */
  | "host_fault";

/** The host watchdog of one vetting replay (wall clock; the budgets themselves are deterministic). */
export const VET_WATCHDOG_MS = 120_000;

export type VetParameters = {
  ics: Ics;
  /** The bound suite; null when the ICS binds none. Must hash to the ICS's binding. */
  suite: Bundle | null;
  deliverable: Bundle;
  /** The pinned inputs arbitrators will use (`gigInputs`), or {@link DEFAULT_INPUTS}. */
  inputs: PinnedInputs;
  /** Host protection of each replay; never part of a verdict. */
  watchdogMs?: number;
};

export type VetReturnType = {
  verdict: VetVerdict;
  inputs: PinnedInputs;
  alternate: PinnedInputs;
  /** Every objective check, exactly as a Resolution's `objective_checks` would hold it. */
  checks: ObjectiveCheck[];
  /** Tests failed under the pinned inputs (sorted); empty without a test suite. */
  failedTests: string[];
  /** Tests failed with the suite under the alternate inputs (sorted); null without a replay. */
  alternateFailedTests: string[] | null;
  /** Lane 1's attribution codes (`SUITE_*`, `DELIVERABLE_*`), sorted. */
  attribution: string[];
  /** Lane 1's undecidable reason codes, sorted. */
  reasonCodes: string[];
  /** The suite's verdict changes with its clock or seed. */
  suiteInputDependent: boolean;
  /** The deliverable's results change when both sides get the alternate inputs (a warning only). */
  deliverableInputDependent: boolean;
  /** Rubric items that need Lane 2 (not vetted here). */
  needsLane2: string[];
  /** The UPIP records Lane 1 would put in the resolution. */
  records: UpipRecord[];
};

const failedOf = (outcome: ReplayOutcome): string[] =>
  outcome.tests
    .filter((test) => !test.passed)
    .map((test) => test.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

const verdictKey = (outcome: ReplayOutcome): string => JSON.stringify([outcome.tests.map((t) => [t.name, t.passed, t.fault]), outcome.suiteFault?.code ?? null]);

/**
 * Vets `deliverable` against the ICS's rubric. Rejects with `BundleHashMismatchError` when the suite is not
 * the one the ICS binds; everything the suite or the deliverable does is part of the result.
 */
export async function vetGig(parameters: VetParameters): Promise<VetReturnType> {
  const { ics, suite, deliverable, inputs } = parameters;
  if (suite !== null && ics.testSuite) assertBundleHash(suite, ics.testSuite.hash, "the test suite");
  const watchdog = { watchdogMs: parameters.watchdogMs ?? VET_WATCHDOG_MS };
  const outcomes: ReplayOutcome[] = [];
  const replays: ReplayParameters[] = [];
  const recording = async (p: ReplayParameters): Promise<ReplayOutcome> => {
    const outcome = await engineReplay(p);
    replays.push(p);
    outcomes.push(outcome);
    return outcome;
  };
  const alternate = alternateInputs(inputs);
  let lane1: Awaited<ReturnType<typeof runObjectiveChecks>>;
  try {
    lane1 = await runObjectiveChecks({ ics, suite, deliverable, inputs, replay: recording, actor: "ioi-arbitration/lane1", ...watchdog });
  } catch (error) {
    if (!(error instanceof JudgeHostFaultError)) throw error;
    return {
      verdict: "host_fault",
      inputs,
      alternate,
      checks: [],
      failedTests: [],
      alternateFailedTests: null,
      attribution: [],
      reasonCodes: [`JUDGE_HOST_FAULT: ${error.shortMessage}`],
      suiteInputDependent: false,
      deliverableInputDependent: false,
      needsLane2: [],
      records: [],
    };
  }

  // Replays come in threes per test_suite item: pinned, pinned again, suite under the alternate inputs.
  const [pinned, , shifted] = outcomes;
  let deliverableInputDependent = false;
  if (pinned && replays[0]) {
    // Advisory only: a host fault here leaves the warning unset rather than failing the vet.
    const both = await engineReplay({ ...replays[0], inputs: { suite: alternate, deliverable: alternate }, intent: "ioi gig vet: both sides under the alternate clock and seed" }).catch((error: unknown) => {
      if (error instanceof JudgeHostFaultError) return null;
      throw error;
    });
    // Only the deliverable's part of the verdict: the suite's own dependence is reported separately.
    deliverableInputDependent = both !== null && shifted !== undefined && verdictKey(both) !== verdictKey(shifted);
  }
  const suiteInputDependent = lane1.attribution.includes("SUITE_INPUT_DEPENDENT");
  const verdict: VetVerdict = lane1.reasonCodes.length
    ? "undecidable"
    : lane1.suiteAtFault
      ? "suite_at_fault"
      : lane1.checks.some((check) => !check.status)
        ? "deliverable_fails"
        : "pass";
  return {
    verdict,
    inputs,
    alternate,
    checks: lane1.checks,
    failedTests: pinned ? failedOf(pinned) : [],
    alternateFailedTests: shifted ? failedOf(shifted) : null,
    attribution: lane1.attribution,
    reasonCodes: lane1.reasonCodes,
    suiteInputDependent,
    deliverableInputDependent,
    needsLane2: lane1.needsLane2,
    records: lane1.replays,
  };
}
