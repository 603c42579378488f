/**
 * What a payer node knows about its milestone streams (issue 32, decision 0037), as the control API shows it
 * (`streams.list`, `streams.get`, the `streams` topic) — pure: it reads nothing, it folds what the store holds
 * (the channel, its tickets and receipts) and what the stream journal holds (requests, signed proofs, checks with
 * their samples, pauses with their evidence) into one view. The Flow Controller writes both; a stream driven by
 * `ioi milestones stream` in another process on the same store is seen the same way.
 *
 * State: `finished` when the newest journal entry is a `done` pause, `paused` when it is any other pause,
 * `running` otherwise (tranches released since the last pause, or none yet). A journal says what the controller
 * did, not whether its process is alive: a stream whose payer went away shows `running` and, by construction,
 * pays nothing more (offline means pause).
 */
import type { Hex } from "viem";

import { progressProofHash, testsPassed, type SignedProgressProof } from "../core/progress-proof";
import { sessionReceiptHash } from "../core/receipt";
import { tranchePriceOf, type TermsDocumentV4 } from "../core/terms";
import type { StepRecord } from "../store/store";
import type { JournalEntry, JournalSample } from "./stream-journal";

export const STREAM_STATES = ["running", "paused", "finished"] as const;
export type StreamState = (typeof STREAM_STATES)[number];

/** Pause reasons that prove something to an arbitrator: the controller keeps the case's evidence. */
const CASE_REASONS: Record<string, { kind: string; code: string }> = {
  false_claim: { kind: "false progress claim", code: "provider_fault (Lane 1 re-runs the sampled claim)" },
  equivocation: { kind: "two proofs of one tranche", code: "STREAM_PROOF_EQUIVOCATION (Lane 0)" },
  wrong_suite: { kind: "a proof about another suite", code: "STREAM_FALSE_CLAIM (Lane 0)" },
};

export type StreamPauseView = { tranche: string; reason: string; detail: string };

export type StreamTrancheView = {
  tranche: string;
  /** released: ticket out, no result yet; proved: result in, not yet checked; checked: every sample re-ran true; paused: the stream paused on it. */
  state: "released" | "proved" | "checked" | "paused";
  ticket: { seq: string; cumulativeAmount: string };
  sampleCommit?: Hex;
  /** The sampling secret, once revealed to the provider (the tranche was sampled). */
  secret?: Hex;
  receipt?: { hash: Hex; leaf: Hex };
  proof?: {
    hash: Hex;
    repoStateHash: Hex;
    suiteHash: Hex;
    passed: number;
    total: number;
    tests: { name: string; outcome: string }[];
    coverageDeltaBps: number;
    lint: string;
    artifactHash: Hex;
    prevProofHash: Hex;
    signature: Hex;
  };
  /** The drawn claims and how their re-run went (empty until sampled). */
  samples: JournalSample[];
  /** The drawn indices when the samples' verdicts were not recorded (a pause before the re-run finished). */
  indices?: number[];
  conflictingProofHash?: Hex;
};

export type StreamCaseView = { tranche: string; reason: string; kind: string; decidedBy: string; proofHash?: Hex; claim?: number; conflictingProofHash?: Hex };

export type StreamSummary = {
  sessionId: Hex;
  provider: Hex;
  state: StreamState;
  /** Tranches whose ticket was signed. */
  released: string;
  /** Tranches whose sampled claims all re-ran true (the tranches done). */
  checked: string;
  /** What the newest ticket authorises (wei or token base units). */
  paid: string;
  tranchePrice: string;
  pause: StreamPauseView | null;
  /** Whether a stream journal exists for it (without one only the store's tickets and receipts are known). */
  journal: boolean;
};

export type StreamView = StreamSummary & {
  terms: { trancheSeconds: string; tranchesInFlight: number; samplesPerTranche: number; suiteHash: Hex; falseClaimPenalty: string };
  tranches: StreamTrancheView[];
  /** Every pause the journal records, in order (a stream resumed after a pause that proves nothing pauses again later). */
  pauses: StreamPauseView[];
  /** The session case the controller built, when the pause proves something (`ioi milestones case` writes its package). */
  case: StreamCaseView | null;
};

export type StreamViewInput = {
  sessionId: Hex;
  provider: Hex;
  terms: TermsDocumentV4;
  /** The store's steps of the session, in seq order (tickets, and receipts with leaves once answered). */
  steps: StepRecord[];
  /** The journal's entries in order; undefined when there is no journal. */
  entries?: JournalEntry[];
};

function proofView(signed: SignedProgressProof): NonNullable<StreamTrancheView["proof"]> {
  const p = signed.proof;
  return {
    hash: progressProofHash(p),
    repoStateHash: p.repoStateHash,
    suiteHash: p.suiteHash,
    ...testsPassed(p),
    tests: p.tests.map((t) => ({ name: t.name, outcome: t.outcome })),
    coverageDeltaBps: p.coverageDeltaBps,
    lint: p.lint,
    artifactHash: p.artifactHash,
    prevProofHash: p.prevProofHash,
    signature: signed.signature,
  };
}

/** The state the newest journal entry gives. */
function stateOf(entries: readonly JournalEntry[]): { state: StreamState; pause: StreamPauseView | null } {
  const last = entries[entries.length - 1];
  if (!last || last.kind !== "pause") return { state: "running", pause: null };
  return { state: last.reason === "done" ? "finished" : "paused", pause: { tranche: last.tranche.toString(), reason: last.reason, detail: last.detail } };
}

/** One stream as the API's `streams.get` answers it. */
export function streamViewOf(input: StreamViewInput): StreamView {
  const { sessionId, terms, steps } = input;
  const entries = input.entries ?? [];
  const byTranche = new Map<bigint, StreamTrancheView>();
  const view = (tranche: bigint): StreamTrancheView | undefined => byTranche.get(tranche);
  for (const step of steps) {
    byTranche.set(step.seq, {
      tranche: step.seq.toString(),
      state: step.receipt ? "proved" : "released",
      ticket: { seq: step.ticket.ticket.seq.toString(), cumulativeAmount: step.ticket.ticket.cumulativeAmount.toString() },
      ...(step.receipt && step.leaf ? { receipt: { hash: sessionReceiptHash(step.receipt.receipt), leaf: step.leaf } } : {}),
      samples: [],
    });
  }
  const pauses: StreamPauseView[] = [];
  const secrets = new Map<bigint, Hex>();
  let checked = 0n;
  for (const e of entries) {
    const t = view(e.tranche);
    switch (e.kind) {
      case "request":
        secrets.set(e.tranche, e.secret);
        if (t) t.sampleCommit = e.request.sampleCommit;
        break;
      case "proof":
        if (t) t.proof = proofView(e.signed);
        break;
      case "checked":
        if (e.tranche > checked) checked = e.tranche;
        if (t) {
          t.state = "checked";
          const secret = secrets.get(e.tranche);
          if (secret) t.secret = secret;
          t.samples = e.samples ?? [];
        }
        break;
      case "pause":
        pauses.push({ tranche: e.tranche.toString(), reason: e.reason, detail: e.detail });
        if (t && e.reason !== "done") {
          t.state = "paused";
          if (e.samples) t.samples = e.samples;
          if (e.samples || e.indices) {
            const secret = secrets.get(e.tranche);
            if (secret) t.secret = secret;
          }
          if (e.indices && !e.samples) t.indices = e.indices;
          if (e.conflicting) t.conflictingProofHash = progressProofHash(e.conflicting.proof);
        }
        break;
    }
  }
  const { state, pause } = input.entries ? stateOf(entries) : { state: "running" as const, pause: null };
  const newest = steps[steps.length - 1];
  const released = newest?.seq ?? 0n;
  let caseView: StreamCaseView | null = null;
  if (pause && CASE_REASONS[pause.reason]) {
    const t = view(BigInt(pause.tranche));
    const lastPause = [...entries].reverse().find((e): e is Extract<JournalEntry, { kind: "pause" }> => e.kind === "pause");
    const evidenced = pause.reason !== "false_claim" || lastPause?.sample !== undefined;
    if (t?.proof && evidenced && (pause.reason !== "equivocation" || t.conflictingProofHash)) {
      caseView = {
        tranche: pause.tranche,
        reason: pause.reason,
        kind: CASE_REASONS[pause.reason]!.kind,
        decidedBy: CASE_REASONS[pause.reason]!.code,
        proofHash: t.proof.hash,
        ...(lastPause?.sample !== undefined ? { claim: lastPause.sample } : {}),
        ...(t.conflictingProofHash ? { conflictingProofHash: t.conflictingProofHash } : {}),
      };
    }
  }
  return {
    sessionId,
    provider: input.provider,
    state,
    released: released.toString(),
    checked: checked.toString(),
    paid: (newest?.ticket.ticket.cumulativeAmount ?? 0n).toString(),
    tranchePrice: tranchePriceOf(terms).toString(),
    pause,
    journal: input.entries !== undefined,
    terms: {
      trancheSeconds: terms.stream.trancheSeconds.toString(),
      tranchesInFlight: terms.stream.tranchesInFlight,
      samplesPerTranche: terms.stream.samplesPerTranche,
      suiteHash: terms.stream.suite.hash,
      falseClaimPenalty: terms.stream.falseClaimPenalty.toString(),
    },
    tranches: [...byTranche.values()],
    pauses,
    case: caseView,
  };
}

/** One stream as `streams.list` answers it. */
export function streamSummaryOf(v: StreamView): StreamSummary {
  return { sessionId: v.sessionId, provider: v.provider, state: v.state, released: v.released, checked: v.checked, paid: v.paid, tranchePrice: v.tranchePrice, pause: v.pause, journal: v.journal };
}

/**
 * The `streams` topic's events for journal entries appended since the last read, in order: `ticket` (a tranche
 * released), `proof` (its signed result accepted), `sample` (one per drawn claim, with the re-run's outcome),
 * `pause` (with its reason; `done` when the planned tranches were all paid and checked). `price` is the tranche price.
 */
export function streamEventsOf(sessionId: Hex, price: bigint, entries: readonly JournalEntry[]): Record<string, unknown>[] {
  const events: Record<string, unknown>[] = [];
  for (const e of entries) {
    const tranche = e.tranche.toString();
    switch (e.kind) {
      case "request":
        events.push({ sessionId, event: "ticket", tranche, cumulativeAmount: (price * e.tranche).toString(), sampleCommit: e.request.sampleCommit });
        break;
      case "proof":
        events.push({ sessionId, event: "proof", tranche, proofHash: progressProofHash(e.signed.proof), ...testsPassed(e.signed.proof), repoStateHash: e.signed.proof.repoStateHash });
        break;
      case "checked":
        for (const s of e.samples ?? []) events.push({ sessionId, event: "sample", tranche, ...s });
        break;
      case "pause":
        for (const s of e.samples ?? []) events.push({ sessionId, event: "sample", tranche, ...s });
        events.push({ sessionId, event: "pause", tranche, reason: e.reason, detail: e.detail, ...(e.sample !== undefined ? { claim: e.sample } : {}) });
        break;
    }
  }
  return events;
}

/**
 * A stream of the store in the shape of a stream record (`ioi.stream_record/1`, what `writeStreamRecord` writes and
 * the page's Streams panel lists), from its view and journal: the page shows a stream the payer runs on its store
 * without a records directory. Sample events carry no replay timing (the journal does not keep it).
 */
export function streamRecordOfView(v: StreamView, entries: readonly JournalEntry[]): Record<string, unknown> {
  const events = streamEventsOf(v.sessionId, BigInt(v.tranchePrice), entries).map(({ event, sessionId: _s, cumulativeAmount, sampleCommit: _c, ...rest }) => ({
    kind: event,
    ...rest,
    ...(cumulativeAmount === undefined ? {} : { cumulative: cumulativeAmount }),
  }));
  return {
    schema: "ioi.stream_record/1",
    sessionId: v.sessionId,
    tranchePrice: v.tranchePrice,
    trancheSeconds: v.terms.trancheSeconds,
    samplesPerTranche: v.terms.samplesPerTranche,
    released: v.released,
    checked: v.checked,
    paused: v.pause,
    state: v.state,
    events,
  };
}
