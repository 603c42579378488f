/**
 * The arbitration runner: one run per case, moving through intake → plan → execute → verify → deliver |
 * fail_safe (UAICP), each transition appended to an audit log with request id, trace id, time, actor and
 * outcome. A verdict is delivered only when every piece of evidence it rests on verified. Evidence the
 * challenger owed and did not supply (or supplied invalid) is itself a verdict: `challenger_fault` (decision
 * 0014, "evidence owed, evidence missing"). A problem of the arbitrator's own (a package that is not the one the
 * case committed, another judge runtime, an incomplete chain context) ends in `abstain`: no verdict, nothing
 * to sign. What remains undecided (a rubric item that needs Lane 2…) ends in fail_safe: an `undecidable`
 * resolution with reason codes, which on-chain moves the case to the slow path. Nothing is guessed.
 *
 * The resolution is a pure function of (package, chain context, replay records, judge runtime): no clock,
 * host or random value enters it, so independent arbitrators produce byte-identical resolutions and sign the
 * same hash. Times and request ids live only in the audit log.
 */
import { randomUUID } from "node:crypto";

import type { Hex } from "viem";

import { artifactId } from "../../channel-client/core/canonical";
import { BaseError } from "../../channel-client/core/errors";
import { NO_FAULT_CODES } from "../../channel-client/core/fault-statement";
import { hasDocumentBody, isStreamTerms, penaltyOf } from "../../channel-client/core/terms";
import { spotCheck, SpotCheckInputError, streamInputs, type SpotCheckResult } from "../lanes/stream-sample";
import { upipHashHex } from "../documents/upip";
import type { Bundle } from "../documents/bundle";
import { runObjectiveChecks, type ObjectiveChecksParameters, type ObjectiveChecksResult } from "../lanes/checks";
import { EngineUnavailableError } from "../engine/engine";
import { JudgeHostFaultError } from "../lanes/replay";
import type { CaseContext } from "../documents/context";
import { ENGINE, engineWasmSha256 } from "../engine/engine";
import { FUEL_METER_VERSION } from "../engine/fuel";
import { gigInputs } from "../lanes/pinned";
import { HARNESS_SHA256 } from "../engine/prelude";
import { penaltyFor, unserviceableRefund, type Ics } from "../documents/ics";
import { FAULT_RECEIPT_FILE, runLane0, type Lane0Result, type Lane0Violation } from "../lanes/lane0";
import { evidenceOfKind, packageHash, type ChallengePackage } from "../documents/package";
import {
  resolutionHash,
  resolutionMessage,
  VERDICT_CODES,
  type FinalVerdict,
  type Resolution,
  type ResolutionMessage,
} from "../lanes/resolution";

/** The judge runtime this runner is: what arbitrators pin in the registry (whitepaper 8.3.1.4). */
export const JUDGE_RUNTIME = { runner: "ioi-arbitration", version: "5", lanes: [0, 1], runtime: "quickjs-wasm" } as const;

/**
 * The hash arbitrators register: the runner's identity and version, the judge engine's WebAssembly bytes
 * (sha256 of the `.wasm` this process compiles, `engine.ts`) and the harness (sha256 of the preludes,
 * `prelude.ts`). Not the host: two arbitrators on different Node versions, machines or operating systems run
 * the same judge and get the same hash.
 */
export function judgeRuntimeHash(): Hex {
  return artifactId({
    ...JUDGE_RUNTIME,
    lanes: [...JUDGE_RUNTIME.lanes],
    engine: { package: ENGINE.package, version: ENGINE.version, variant: ENGINE.variant, wasm_sha256: engineWasmSha256(), fuel_meter: FUEL_METER_VERSION },
    harness_sha256: HARNESS_SHA256,
  });
}

/** Fault codes a provider's fault receipt (gigs) or fault statement (sessions) may carry (whitepaper 8.3.1.3). */
export { NO_FAULT_CODES };

export type Phase = "intake" | "plan" | "execute" | "verify" | "deliver" | "fail_safe" | "abstain";

/** One audit log line (UAICP 5.4). */
export type AuditEntry = {
  request_id: string;
  trace_id: string;
  timestamp: string;
  actor: string;
  phase: Phase;
  outcome: "ok" | "fail";
  detail: string;
};

/** The run did not reach a terminal state in the order UAICP requires (a bug, never an input problem). */
export class IllegalTransitionError extends BaseError {
  override name = "IllegalTransitionError" as const;
}

const NEXT: Record<Phase, readonly Phase[]> = {
  intake: ["plan", "fail_safe", "abstain"],
  plan: ["execute", "fail_safe", "abstain"],
  execute: ["verify", "fail_safe", "abstain"],
  verify: ["deliver", "fail_safe"],
  deliver: [],
  fail_safe: [],
  abstain: [],
};

/** Appends transitions in order, refusing any UAICP does not allow, and forwards each line to `sink`. */
export class AuditLog {
  readonly entries: AuditEntry[] = [];
  readonly requestId: string;
  readonly traceId: string;
  #phase: Phase | null = null;

  constructor(
    readonly actor: string,
    caseId: Hex,
    readonly sink: (line: string) => void = () => {},
    readonly now: () => Date = () => new Date(),
  ) {
    this.requestId = randomUUID();
    // W3C trace ids are 16 bytes of hex: the case id's first 16 bytes tie every arbitrator's log to the case.
    this.traceId = caseId.slice(2, 34);
  }

  get phase(): Phase | null {
    return this.#phase;
  }

  enter(phase: Phase, outcome: "ok" | "fail", detail: string): void {
    const allowed = this.#phase === null ? phase === "intake" : NEXT[this.#phase].includes(phase);
    if (!allowed) throw new IllegalTransitionError(`Cannot move from ${this.#phase ?? "start"} to ${phase}.`);
    this.#phase = phase;
    const entry: AuditEntry = {
      request_id: this.requestId,
      trace_id: this.traceId,
      timestamp: this.now().toISOString(),
      actor: this.actor,
      phase,
      outcome,
      detail,
    };
    this.entries.push(entry);
    this.sink(JSON.stringify(entry));
  }
}

export type ArbitrationParameters = {
  pkg: ChallengePackage;
  ctx: CaseContext;
  /** Who runs this arbitration (audit log only; never part of the resolution). */
  actor: string;
  audit?: AuditLog;
  /** Replaces the engine replay in tests. */
  replay?: ObjectiveChecksParameters["replay"];
  /** Host protection of each replay (`replay.ts`); never part of a verdict. */
  watchdogMs?: number;
  /** The judge runtime hash this runner claims; defaults to {@link judgeRuntimeHash} of this process. */
  judgeRuntime?: Hex;
};

/**
 * A run's end. `deliver`: a verdict; `fail_safe`: an `undecidable` resolution (the slow path); `abstain`: the
 * arbitrator could not judge for a reason of its own (`resolution.aggregate.reasonCodes` says which) — its
 * resolution is a record for the audit trail only and must never be signed (`ioi arbitrate` refuses to).
 */
export type ArbitrationRun = {
  state: "deliver" | "fail_safe" | "abstain";
  resolution: Resolution;
  resolutionHash: Hex;
  message: ResolutionMessage;
  audit: AuditEntry[];
};

/** Why an arbitrator abstained: a fault of its own host, never of a party. */
export const ABSTAIN_REASON = "JUDGE_HOST_FAULT" as const;

type Decision = {
  verdict: FinalVerdict;
  refund: bigint;
  slash: bigint;
  reasonCodes: string[];
  /** Codes that explain whom a decided verdict is attributed to (Lane 1's `attribution`, Lane 0's challenger faults). */
  attribution: string[];
  /** The arbitrator's own problems (host faults): non-empty means it abstains, whatever else was found. */
  abstain: string[];
  lane0: Lane0Result;
  lane1: ObjectiveChecksResult | null;
};

/**
 * Runs one arbitration of `pkg` against `ctx` to a delivered verdict, a fail-safe undecidable resolution, or an
 * abstention (state `abstain`: the arbitrator's own host or inputs failed; nothing may be signed).
 */
export async function arbitrate(parameters: ArbitrationParameters): Promise<ArbitrationRun> {
  const { pkg, ctx } = parameters;
  const audit = parameters.audit ?? new AuditLog(parameters.actor, ctx.case.caseId);
  const runtime = parameters.judgeRuntime ?? judgeRuntimeHash();

  // intake: is this a case this runtime may judge, and is the package the one the case committed? Neither is
  // either party's doing: the arbitrator abstains (it runs Lane 0 only, for the record, and signs nothing).
  const intakeReasons: string[] = [];
  if (ctx.judgeRuntimeHash !== runtime && BigInt(ctx.judgeRuntimeHash) !== 0n) intakeReasons.push("JUDGE_RUNTIME_MISMATCH");
  if (packageHash(pkg) !== ctx.case.packageHash) intakeReasons.push("PACKAGE_HASH_MISMATCH");
  audit.enter("intake", intakeReasons.length ? "fail" : "ok", intakeReasons.join(",") || `case ${ctx.case.caseId} (${ctx.case.kind})`);
  if (intakeReasons.length) {
    const lane0 = await runLane0(pkg, ctx);
    const decision: Decision = { verdict: "undecidable", refund: 0n, slash: 0n, reasonCodes: [], attribution: [], abstain: intakeReasons, lane0, lane1: null };
    return abstain(pkg, ctx, runtime, decision, audit);
  }

  // plan: Lane 0 always; Lane 1 from the rubric of a gig's ICS; semantic items would need Lane 2.
  const ics = soleIcs(pkg);
  const plan = ["lane0", ...(ctx.case.kind === "gig" && ics ? ics.rubric.items.map((item) => `lane1:${item.kind}:${item.id}`) : [])];
  audit.enter("plan", "ok", plan.join(" "));

  // execute: a fault of this arbitrator's own host (the watchdog, the engine) is never a verdict; it abstains.
  let decision: Decision;
  try {
    decision = await execute(parameters, ics, runtime);
  } catch (error) {
    if (!(error instanceof JudgeHostFaultError || error instanceof EngineUnavailableError)) throw error;
    const detail = `${error.shortMessage}${error.cause instanceof Error ? ` (${error.cause.message})` : ""}`;
    audit.enter("execute", "fail", `${ABSTAIN_REASON}: ${detail}`);
    const lane0 = await runLane0(pkg, ctx);
    return abstain(pkg, ctx, runtime, { verdict: "undecidable", refund: 0n, slash: 0n, reasonCodes: [], attribution: [], abstain: [ABSTAIN_REASON], lane0, lane1: null }, audit);
  }
  audit.enter("execute", "ok", `lane0 ${decision.lane0.checks.length} checks; lane1 ${decision.lane1?.checks.length ?? 0} checks`);
  if (decision.abstain.length) return abstain(pkg, ctx, runtime, decision, audit);
  decision.reasonCodes = [...new Set(decision.reasonCodes)].sort();
  if (decision.reasonCodes.length) decision.verdict = "undecidable";

  // verify: deliver only if every required invariant holds.
  const verified = decision.verdict !== "undecidable";
  audit.enter("verify", verified ? "ok" : "fail", verified ? `verdict ${decision.verdict}` : decision.reasonCodes.join(","));

  const resolution = buildResolution(pkg, ctx, runtime, decision);
  const hash = resolutionHash(resolution);
  const state = verified ? "deliver" : "fail_safe";
  audit.enter(state, verified ? "ok" : "fail", `resolution ${hash}`);
  return { state, resolution, resolutionHash: hash, message: resolutionMessage(resolution), audit: audit.entries };
}

/** A fault receipt with no evidence of work behind it: refunded in full, decided against the provider. */
export const FAULT_RECEIPT_UNSUPPORTED = "FAULT_RECEIPT_UNSUPPORTED";

/** Ends a run the arbitrator cannot judge for a reason of its own: no verdict, a record that is never signed. */
function abstain(pkg: ChallengePackage, ctx: CaseContext, runtime: Hex, decision: Decision, audit: AuditLog): ArbitrationRun {
  const reasons = [...new Set(decision.abstain)].sort();
  const record: Decision = { ...decision, verdict: "undecidable", refund: 0n, slash: 0n, reasonCodes: reasons, attribution: [] };
  const resolution = buildResolution(pkg, ctx, runtime, record);
  const hash = resolutionHash(resolution);
  audit.enter("abstain", "fail", `host fault ${reasons.join(",")}; nothing signed`);
  return { state: "abstain", resolution, resolutionHash: hash, message: resolutionMessage(resolution), audit: audit.entries };
}

/** A fault receipt that is not `{code, detail}` with a known code: decided against the provider, refunded in full. */
export const FAULT_RECEIPT_INVALID = "FAULT_RECEIPT_INVALID";

function withoutFaultReceipt(deliverable: Bundle): Bundle {
  return { files: Object.fromEntries(Object.entries(deliverable.files).filter(([path]) => path !== FAULT_RECEIPT_FILE)) };
}

function soleIcs(pkg: ChallengePackage): Ics | null {
  const items = evidenceOfKind(pkg, "ics");
  return items.length === 1 ? items[0]!.content : null;
}

async function execute(parameters: ArbitrationParameters, ics: Ics | null, runtime: Hex): Promise<Decision> {
  const { pkg, ctx } = parameters;
  const value = ctx.case.value;
  const lane0 = await runLane0(pkg, ctx);
  const decision: Decision = { verdict: "undecidable", refund: 0n, slash: 0n, reasonCodes: [], attribution: [], abstain: [], lane0, lane1: null };
  // The arbitrator's own problem (incomplete context, a case not undecided): abstain, whatever else was found.
  if (lane0.abstainCodes.length) return { ...decision, abstain: [...lane0.abstainCodes] };
  // Evidence the challenger owed and did not supply (or supplied invalid), or a case Lane 0 proved should not
  // have been brought (opened after the terms' dispute window): lost by its challenger, the codes attributed.
  if (lane0.challengerFaults.length) return { ...decision, verdict: "challenger_fault", attribution: [...lane0.challengerFaults] };
  // Every evidence check is owed by the challenger or the arbitrator; none is left to fail safe on.
  if (lane0.reasonCodes.length) return { ...decision, reasonCodes: [...lane0.reasonCodes] };

  // A Lane 0 violation on verified evidence decides the case at once.
  if (lane0.violations.length) {
    const { refund: owed, slash } = lane0Remedy(pkg, ctx, lane0.violations);
    const cap = ctx.slashCap ?? null;
    return { ...decision, verdict: "provider_fault", refund: owed < value ? owed : value, slash: cap !== null && slash > cap ? cap : slash };
  }
  if (ctx.case.kind === "session") {
    // A streamed tranche's sampled claim (decision 0037): Lane 1 re-runs it exactly as the payer's Flow Controller
    // did; a claim the re-run disproves refunds the tranche and slashes the terms' false-claim penalty.
    const stream = await streamSample(parameters, runtime);
    if (stream) return { ...decision, ...stream };
    // The session no-fault path (decision 0015): the provider's verified fault statement for the challenged
    // receipt, which metered more than the compute it declares spent → NoFault, the difference refunded, no
    // slash. A failed call charged no more than that (decision 0022 charges 0) and that no ticket paid for
    // gives the challenger nothing; one a ticket paid for is a FAILED_CALL_PAID violation (above).
    const noFault = lane0.noFault;
    if (noFault && noFault.refund > 0n) {
      const owed = refundAllowed(pkg, ctx) ? noFault.refund : 0n;
      return { ...decision, verdict: "no_fault", refund: owed < value ? owed : value };
    }
    return { ...decision, verdict: "challenger_fault" };
  }

  // Gig: Lane 0 guaranteed exactly one ICS and one deliverable, both bound on-chain.
  const deliverable = evidenceOfKind(pkg, "deliverable")[0]!.content;
  const fault = faultReceipt(deliverable);
  const suites = evidenceOfKind(pkg, "test_suite");
  const suite = suites.length === 1 ? suites[0]!.content : null;
  const gig = ctx.gig!; // Lane 0 refuses a gig case without the gig
  /** Lane 1 on `bundle` as the deliverable, under the gig's pinned inputs. */
  const lane1Of = (bundle: Bundle) =>
    runObjectiveChecks({
      ics: ics!,
      suite,
      deliverable: bundle,
      inputs: gigInputs({ chainId: ctx.case.chainId, gigEscrow: gig.gigEscrow, gigId: gig.gigId, fundedAt: gig.fundedAt }),
      ...(parameters.replay ? { replay: parameters.replay } : {}),
      ...(parameters.watchdogMs === undefined ? {} : { watchdogMs: parameters.watchdogMs }),
      actor: `ioi-arbitration/lane1@${runtime}`,
    });
  /** Lane 1 on what the deliverable holds besides its fault receipt: the evidence of work behind a declaration. */
  const workBesideFaultReceipt = async () => {
    const rest = withoutFaultReceipt(deliverable);
    return Object.keys(rest.files).length === 0 || !ics!.testSuite ? null : lane1Of(rest);
  };
  if (fault === "invalid") {
    // An invalid fault receipt is the provider's own evidence (the deliverable's hash is on-chain): it never
    // stops the case. Decided against the provider: the bounty refunded in full; the slash is only what the
    // terms give for the tests the rest of the delivery fails (none for a bare receipt, none when the
    // client's suite is itself at fault), never more.
    const evidence = await workBesideFaultReceipt();
    const failed = evidence && !evidence.suiteAtFault && evidence.reasonCodes.length === 0 ? evidence.failedTests : 0;
    const { slash } = failed > 0 ? penaltyFor(ics!, failed, value) : { slash: 0n };
    const cap = ctx.slashCap ?? null;
    return {
      ...decision,
      lane1: evidence,
      verdict: "provider_fault",
      refund: value,
      slash: cap !== null && slash > cap ? cap : slash,
      attribution: [...new Set([FAULT_RECEIPT_INVALID, ...(evidence?.attribution ?? [])])].sort(),
    };
  }
  if (fault) {
    // Unserviceable (decision 0015, amended by issue 27): the terms' compute_spent_bps is kept only with
    // evidence of work the terms name: the rest of the delivery passes at least one test of the bound suite (or
    // the client's own suite is at fault, so the provider cannot be asked to prove it). A bare declaration keeps
    // nothing: the bounty is refunded in full, no slash, and the provider, who contested with nothing but its
    // own word, bears the case (ChallengerWins: its bond pays the fee).
    const evidence = await workBesideFaultReceipt();
    if (evidence && (evidence.passedTests > 0 || evidence.suiteAtFault)) {
      return { ...decision, lane1: evidence, verdict: "no_fault", refund: unserviceableRefund(ics!, value), attribution: evidence.attribution };
    }
    return { ...decision, lane1: evidence, verdict: "provider_fault", refund: value, slash: 0n, attribution: [FAULT_RECEIPT_UNSUPPORTED] };
  }

  const lane1 = await lane1Of(deliverable);
  decision.lane1 = lane1;
  decision.attribution = lane1.attribution;
  if (lane1.reasonCodes.length) return { ...decision, reasonCodes: lane1.reasonCodes };
  if (lane1.checks.some((check) => !check.status)) {
    const { refund, slash } = penaltyFor(ics!, lane1.failedTests, value);
    // The ICS may ask for more than the governance cap allows; the contract would refuse it, so cap it here.
    const cap = ctx.slashCap ?? null;
    return {
      ...decision,
      verdict: "provider_fault",
      refund: refund < value ? refund : value,
      slash: cap !== null && slash > cap ? cap : slash,
    };
  }
  // Every objective check passed. Items that need semantic judgement go up, never decided here.
  if (lane1.needsLane2.length) return { ...decision, reasonCodes: lane1.needsLane2.map((id) => `NEEDS_LANE2:${id}`) };
  return { ...decision, verdict: "challenger_fault" };
}

/**
 * Lane 1 of a stream case that cites a sampled claim: the claim re-run in the sealed engine under the tranche's
 * inputs (`stream-sample.ts`). Lane 0 has verified the proof, the request, the reveal, the draw, the suite and the
 * repository. Null when the package cites no sample (the case is then a plain session case).
 */
async function streamSample(parameters: ArbitrationParameters, runtime: Hex): Promise<Partial<Decision> | null> {
  const { pkg, ctx } = parameters;
  const progress = evidenceOfKind(pkg, "progress")[0]?.content;
  const channel = evidenceOfKind(pkg, "channel")[0]?.content;
  if (!progress || progress.sample === undefined || !channel || !isStreamTerms(channel.pricing) || pkg.subject.kind !== "session") return null;
  const terms = channel.pricing;
  const suite = evidenceOfKind(pkg, "test_suite")[0]!.content;
  const repository = evidenceOfKind(pkg, "deliverable")[0]!.content;
  const proof = progress.proof.proof;
  let result: SpotCheckResult;
  try {
    result = await spotCheck({
      terms,
      suite,
      repository,
      proof,
      indices: [progress.sample],
      inputs: streamInputs({ chainId: ctx.case.chainId, gasEscrow: pkg.subject.gasEscrow, sessionId: pkg.subject.sessionId, tranche: proof.tranche }),
      actor: `ioi-arbitration/lane1@${runtime}`,
      ...(parameters.replay ? { replay: parameters.replay } : {}),
      ...(parameters.watchdogMs === undefined ? {} : { watchdogMs: parameters.watchdogMs }),
    });
  } catch (error) {
    // The suite cannot be run (its runner or bundle is unusable): the challenger's evidence, never the provider's.
    if (!(error instanceof SpotCheckInputError)) throw error;
    return { verdict: "challenger_fault", attribution: ["TEST_SUITE_INVALID"] };
  }
  const sample = result.samples[0]!;
  const lane1: ObjectiveChecksResult = {
    checks: [{ name: `stream.sample[#${sample.index}]`, status: sample.status !== "false", hash: upipHashHex(sample.record), detail: sample.detail }],
    replays: [sample.record],
    failedTests: sample.status === "false" ? 1 : 0,
    passedTests: sample.actual === "pass" ? 1 : 0,
    needsLane2: [],
    reasonCodes: [],
    attribution: result.suiteFault ? [result.suiteFault] : [],
    suiteAtFault: sample.status === "suite_fault",
  };
  if (sample.status !== "false") return { lane1, verdict: "challenger_fault", attribution: lane1.attribution };
  const receipt = evidenceOfKind(pkg, "receipt").find((e) => e.content.receipt.receipt.seq === proof.tranche)!.content.receipt.receipt;
  const value = ctx.case.value;
  const owed = refundAllowed(pkg, ctx) ? receipt.metering.amount : 0n;
  const slash = penaltyOf(terms, "STREAM_FALSE_CLAIM");
  const cap = ctx.slashCap ?? null;
  return { lane1, verdict: "provider_fault", refund: owed < value ? owed : value, slash: cap !== null && slash > cap ? cap : slash, attribution: [] };
}

/**
 * The remedy of Lane 0 violations. Refund: the violations of one receipt refund the largest of their amounts
 * (never more than the receipt charged), summed over receipts; violations without a receipt add up. Slash: the
 * session terms' penalty per violation (decision 0026), summed. A session whose terms say refunds do not come
 * from the SLA bond (`disputes.refundsFromBond: false`) and that had settled when the case opened (the escrow
 * paid out, so the bond is the only source) gets no refund, only the penalty.
 */
function lane0Remedy(pkg: ChallengePackage, ctx: CaseContext, violations: Lane0Violation[]): { refund: bigint; slash: bigint } {
  const perReceipt = new Map<bigint, bigint>();
  let refund = 0n;
  let slash = 0n;
  for (const v of violations) {
    slash += v.slash ?? 0n;
    if (v.seq === undefined) refund += v.refund;
    else perReceipt.set(v.seq, (perReceipt.get(v.seq) ?? 0n) > v.refund ? perReceipt.get(v.seq)! : v.refund);
  }
  for (const amount of perReceipt.values()) refund += amount;
  return { refund: refundAllowed(pkg, ctx) ? refund : 0n, slash };
}

/** False for a session settled when the case opened whose v2 terms say refunds do not come from the SLA bond. */
function refundAllowed(pkg: ChallengePackage, ctx: CaseContext): boolean {
  const channel = evidenceOfKind(pkg, "channel")[0]?.content;
  return !(channel !== undefined && hasDocumentBody(channel.pricing) && !channel.pricing.disputes.refundsFromBond && ctx.session?.settledAtOpen === true);
}

/**
 * The provider's fault receipt in the deliverable, if any: `{"code": <NO_FAULT_CODES>, "detail": string}`.
 * The deliverable's hash is on-chain, so the provider committed to this declaration when it delivered.
 */
function faultReceipt(deliverable: Bundle): { code: string } | null | "invalid" {
  const text = deliverable.files[FAULT_RECEIPT_FILE];
  if (text === undefined) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return "invalid";
    const { code, detail, ...rest } = parsed as Record<string, unknown>;
    if (Object.keys(rest).length || typeof detail !== "string") return "invalid";
    return typeof code === "string" && (NO_FAULT_CODES as readonly string[]).includes(code) ? { code } : "invalid";
  } catch {
    return "invalid";
  }
}

function buildResolution(pkg: ChallengePackage, ctx: CaseContext, runtime: Hex, d: Decision): Resolution {
  const undecidable = d.verdict === "undecidable";
  return {
    schema: "ioi.resolution/1",
    caseId: ctx.case.caseId,
    chainId: ctx.case.chainId,
    disputeManager: ctx.case.disputeManager,
    packageHash: packageHash(pkg),
    graphId: pkg.graphId,
    stepId: pkg.stepId,
    policyHash: pkg.policyHash,
    policyVersion: pkg.policyVersion,
    rubricVersion: pkg.rubricVersion,
    modelSnapshotId: pkg.modelSnapshotId,
    judgeRuntimeHash: runtime,
    evidence: pkg.evidence.map((item) => ({
      artifactId: item.artifactId,
      kind: item.kind,
      merkleProof: item.kind === "receipt" ? item.content.merkleProof : [],
    })),
    lane0: { passed: d.lane0.reasonCodes.length === 0 && d.lane0.violations.length === 0, checks: d.lane0.checks },
    objectiveChecks: d.lane1?.checks ?? [],
    replays: d.lane1?.replays ?? [],
    claims: pkg.claims.map((claim) => ({ ...claim, prosecutor: null, defender: null, resolver: null })),
    aggregate: {
      finalVerdict: d.verdict,
      aggregateConfidence: undecidable ? 0 : 1,
      unresolved: undecidable,
      // Undecidable: why; decided: whom Lane 1 attributed a budget, nondeterminism or suite fault to.
      reasonCodes: undecidable ? d.reasonCodes : d.attribution,
    },
    remedy: {
      verdict: VERDICT_CODES[d.verdict],
      refund: undecidable ? 0n : d.refund,
      slash: d.verdict === "provider_fault" ? d.slash : 0n,
    },
  };
}
