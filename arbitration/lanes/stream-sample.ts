/**
 * The spot-check of a Progress Proof (whitepaper 4.2.7, decision 0037): re-run each sampled claim — one test of
 * the bound suite against the repository the proof is anchored to — in the same sealed engine and harness Lane 1
 * uses (`replay.ts`), under inputs both the payer and every arbitrator derive from the session and tranche. The
 * payer's Flow Controller runs it before it releases the next ticket; Lane 1 runs the same function on a stream
 * case, so a sample that failed for the payer fails identically for every arbitrator.
 *
 * Pure in its inputs (suite, repository, proof, indices, engine): no clock, host or randomness enters a verdict.
 */
import { getAddress, type Address, type Hex } from "viem";

import { artifactId } from "../../channel-client/core/canonical";
import type { ClaimedOutcome, ProgressProof } from "../../channel-client/core/progress-proof";
import type { TermsDocumentV4 } from "../../channel-client/core/terms";
import { bundleHash, type Bundle } from "../documents/bundle";
import { EngineUnavailableError } from "../engine/engine";
import { InvalidBundleError, UnsupportedRunnerError } from "../documents/errors";
import type { Runner } from "../documents/ics";
import { DEFAULT_INPUTS } from "./pinned";
import { DEFAULT_MEMORY_BYTES, JudgeHostFaultError, replay as engineReplay, type PinnedInputs, type ReplayOutcome, type ReplayParameters } from "./replay";
import type { UpipRecord } from "../documents/upip";

/** The inputs (clock, seed) a tranche's samples run under, the same for the payer and every arbitrator. */
export function streamInputs(parameters: { chainId: bigint; gasEscrow: Address; sessionId: Hex; tranche: bigint }): PinnedInputs {
  const seed = artifactId({
    domain: "ioi.stream.inputs/1",
    chain_id: parameters.chainId.toString(),
    gas_escrow: getAddress(parameters.gasEscrow).toLowerCase(),
    session_id: parameters.sessionId,
    tranche: parameters.tranche.toString(),
  });
  return { clockMs: DEFAULT_INPUTS.clockMs, seed };
}

/** The runner of the terms' bound suite (the engine counts steps, never time; `timeoutMs` is only recorded). */
export function streamRunner(terms: TermsDocumentV4): Runner {
  return { command: [...terms.stream.suite.command], timeoutMs: 60_000, maxOutputBytes: terms.stream.suite.maxOutputBytes };
}

/**
 * One sampled claim's outcome. `true`: the re-run agrees with the claim. `false`: it does not — the test at that
 * index failed (or passed) where the proof claims otherwise, has another name, or the suite registers another
 * number of tests than the proof lists. `suite_fault`: the bound suite itself crashed or exhausted its own
 * budget; nothing is proven against the repository.
 */
export type SampleVerdict = {
  index: number;
  name: string;
  claimed: ClaimedOutcome;
  actual: ClaimedOutcome | "absent";
  status: "true" | "false" | "suite_fault";
  detail: string;
  record: UpipRecord;
  steps: { suite: number; deliverable: number };
};

export type SpotCheckResult = {
  samples: SampleVerdict[];
  /** Indices of the claims the re-run disproved. */
  falseClaims: number[];
  /** The first suite fault met (the suite's author's problem, never the provider's). */
  suiteFault: string | null;
};

/** The inputs do not allow a spot-check: the suite or repository is not the one bound (named, never a verdict). */
export class SpotCheckInputError extends Error {
  override name = "SpotCheckInputError" as const;
}

export type SpotCheckParameters = {
  terms: TermsDocumentV4;
  suite: Bundle;
  repository: Bundle;
  proof: ProgressProof;
  indices: number[];
  inputs: PinnedInputs;
  actor?: string;
  watchdogMs?: number;
  replay?: (parameters: ReplayParameters) => Promise<ReplayOutcome>;
};

/** The UPIP intent of a sampled claim's re-run: it names the one test that ran (`sampledTestOf` reads it back). */
export function sampleIntent(index: number, name: string, tranche: bigint): string {
  return `stream sample: test #${index} (${JSON.stringify(name)}) of tranche ${tranche}`;
}

const SAMPLE_INTENT = /^stream sample: test #(0|[1-9][0-9]{0,3}) \(/;

/**
 * The index of the one test a UPIP record re-ran, when its intent is a stream sample's (`sampleIntent`); undefined
 * for a record of a whole suite. `ioi arbitrate --verify-upip` re-runs exactly that test.
 */
export function sampledTestOf(intent: string): number | undefined {
  const match = SAMPLE_INTENT.exec(intent);
  return match ? Number(match[1]) : undefined;
}

/**
 * Re-runs each sampled claim. Throws {@link SpotCheckInputError} when the suite is not the terms' or the repository
 * not the proof's (the caller decides whose evidence that is), {@link JudgeHostFaultError} on a host fault.
 */
export async function spotCheck(parameters: SpotCheckParameters): Promise<SpotCheckResult> {
  const { terms, suite, repository, proof, indices, inputs, replay = engineReplay } = parameters;
  if (bundleHash(suite) !== terms.stream.suite.hash) throw new SpotCheckInputError(`The test suite hashes to ${bundleHash(suite)}; the terms bind ${terms.stream.suite.hash}.`);
  if (bundleHash(repository) !== proof.repoStateHash) {
    throw new SpotCheckInputError(`The repository hashes to ${bundleHash(repository)}; the proof is anchored to ${proof.repoStateHash}.`);
  }
  const samples: SampleVerdict[] = [];
  let suiteFault: string | null = null;
  for (const index of indices) {
    const claim = proof.tests[index];
    if (claim === undefined) throw new SpotCheckInputError(`Sample index ${index} is outside the proof's ${proof.tests.length} tests.`);
    let outcome: ReplayOutcome;
    try {
      outcome = await replay({
        suite,
        deliverable: repository,
        runner: streamRunner(terms),
        budgets: { stepsPerTest: terms.stream.suite.stepBudget, memoryBytes: DEFAULT_MEMORY_BYTES, outputBytes: terms.stream.suite.maxOutputBytes },
        inputs: { suite: inputs, deliverable: inputs },
        actor: parameters.actor ?? "ioi-stream/sampler",
        intent: sampleIntent(index, claim.name, proof.tranche),
        only: index,
        ...(parameters.watchdogMs === undefined ? {} : { watchdogMs: parameters.watchdogMs }),
      });
    } catch (error) {
      if (error instanceof UnsupportedRunnerError || error instanceof InvalidBundleError) throw new SpotCheckInputError(error.shortMessage);
      if (error instanceof EngineUnavailableError) throw new JudgeHostFaultError("The judge engine is unavailable.", { cause: error });
      throw error;
    }
    const base = { index, name: claim.name, claimed: claim.outcome, record: outcome.record, steps: outcome.steps };
    if (outcome.suiteFault) {
      suiteFault ??= outcome.suiteFault.code;
      samples.push({ ...base, actual: "absent", status: "suite_fault", detail: `${outcome.suiteFault.code}: ${outcome.suiteFault.detail}` });
      continue;
    }
    const ran = outcome.tests[0];
    if (outcome.registered !== proof.tests.length || ran === undefined || ran.name !== claim.name) {
      samples.push({
        ...base,
        actual: "absent",
        status: "false",
        detail: `the suite registers ${outcome.registered} tests${ran ? `, #${index} being ${JSON.stringify(ran.name)}` : ""}; the proof lists ${proof.tests.length}, #${index} being ${JSON.stringify(claim.name)}`,
      });
      continue;
    }
    const actual: ClaimedOutcome = ran.passed ? "pass" : "fail";
    samples.push({
      ...base,
      actual,
      status: actual === claim.outcome ? "true" : "false",
      detail: actual === claim.outcome ? `test #${index} ${JSON.stringify(claim.name)}: ${actual}, as claimed` : `test #${index} ${JSON.stringify(claim.name)}: claimed ${claim.outcome}, re-ran ${actual} (${ran.detail.split("\n")[0]})`,
    });
  }
  return { samples, falseClaims: samples.filter((s) => s.status === "false").map((s) => s.index), suiteFault };
}

/**
 * What an honest provider claims about `repository`: every test of the bound suite run once in the same engine
 * (the full suite; a sample re-runs one test under the same inputs and must agree). Throws on a suite fault.
 */
export async function claimsOf(parameters: { terms: TermsDocumentV4; suite: Bundle; repository: Bundle; inputs: PinnedInputs; watchdogMs?: number }): Promise<{ name: string; outcome: ClaimedOutcome }[]> {
  const { terms, suite, repository, inputs } = parameters;
  const outcome = await engineReplay({
    suite,
    deliverable: repository,
    runner: streamRunner(terms),
    budgets: { stepsPerTest: terms.stream.suite.stepBudget, memoryBytes: DEFAULT_MEMORY_BYTES, outputBytes: terms.stream.suite.maxOutputBytes },
    inputs: { suite: inputs, deliverable: inputs },
    actor: "ioi-stream/provider",
    intent: "the provider's run of the bound suite for a Progress Proof",
    ...(parameters.watchdogMs === undefined ? {} : { watchdogMs: parameters.watchdogMs }),
  });
  if (outcome.suiteFault) throw new SpotCheckInputError(`The bound suite cannot be run: ${outcome.suiteFault.code}: ${outcome.suiteFault.detail}`);
  return outcome.tests.map((t) => ({ name: t.name, outcome: t.passed ? "pass" : "fail" }));
}
