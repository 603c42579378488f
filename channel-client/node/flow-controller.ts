/**
 * The payer's Flow Controller for milestone streaming (whitepaper 4.2.7, issue 32, decision 0037).
 *
 * Pure core: {@link mayRelease}, {@link acceptTranche} and {@link judgeSample} decide — from the terms, what was
 * released and what was checked — whether the next tranche's ticket may be signed and what a tranche's result or
 * sample means. A ticket is released only while fewer than `tranchesInFlight` released tranches are unchecked and
 * the stream is not paused; every failure pauses for good (no more tickets), so a payer that goes away, or a
 * result that never comes, stops funding by construction.
 *
 * Imperative shell: {@link FlowController} drives one stream over a {@link StreamProviderLink}: it signs ticket k
 * (with the payer's key, or with a capped session key when it runs as the payer's delegated sampling node), sends
 * the tranche request with a fresh sampling commitment, verifies the receipt, proof and receipt commit, reveals the
 * secret, fetches the repository for the drawn claims and re-runs them in the sealed Lane 1 engine. Pipelined: while
 * tranche k's claims re-run, tickets k+1… go out as the in-flight window allows, so the payer has never paid more than
 * `tranchesInFlight` tranches past its newest verified proof, and a failed check stops all further tickets. What it saw is kept as events (for the CLI, API and page) and, on a
 * false claim, two proofs of one tranche or a proof about another suite, as the evidence a stream case needs.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

import { bytesToHex, type Hex, type LocalAccount } from "viem";

import { ReceiptAccumulator } from "../core/accumulator";
import type { GasEscrowDomain } from "../core/eip712";
import { canon } from "../core/canonical";
import { receiptLeaf } from "../core/leaf";
import type { ChannelStore } from "../store/store";
import type { JournalEntry, JournalSample, StreamJournal } from "./stream-journal";
import {
  progressProofHash,
  progressProofToJson,
  sampleCommitOf,
  sampledIndices,
  testsPassed,
  trancheRequestFromJson,
  trancheRequestHash,
  trancheRequestToJson,
  verifyProgressProof,
  type SignedProgressProof,
  type TrancheRequest,
} from "../core/progress-proof";
import { verifyReceiptCommit, type SignedReceiptCommit } from "../core/receipt-commit";
import { GENESIS_RECEIPT_HASH, sessionReceiptHash, verifySessionReceipt, type SignedSessionReceipt } from "../core/receipt";
import type { SignedSessionKeyGrant } from "../core/session-key";
import { tranchePriceOf, type ChannelRef, type TermsDocumentV4 } from "../core/terms";
import { signPaymentTicket, type SignedPaymentTicket } from "../core/ticket";
import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import type { ProgressEvidence, ReceiptEvidence } from "../../arbitration/documents/package";
import { JudgeHostFaultError } from "../../arbitration/lanes/replay";
import { spotCheck, SpotCheckInputError, streamInputs, type SampleVerdict, type SpotCheckResult } from "../../arbitration/lanes/stream-sample";

/*//////////////////////////////////////////////////////////////
                            PURE CORE
//////////////////////////////////////////////////////////////*/

export const PAUSE_REASONS = [
  "false_claim", // a sampled claim re-ran otherwise than the proof says
  "equivocation", // two different signed proofs of one tranche
  "repository_changed", // the repository answered for a sample is not the one the proof is anchored to
  "no_answer", // the provider did not answer the tranche or the sample
  "invalid_result", // the receipt, proof or commit does not verify or is not bound to the request
  "wrong_suite", // the signed proof, bound to its receipt, reports on another suite than the terms bind (a case: Lane 0)
  "suite_fault", // the bound suite itself could not be run (its author's problem; nothing is proven)
  "cap_reached", // the next ticket would exceed the session key's spend cap (delegated sampling node)
  "host_fault", // this machine could not run the check (engine, watchdog): nothing is decided, nothing more is paid
  "secret_lost", // the payer restarted without the sampling secret of the tranche in flight (no journal): it cannot reveal
  "done", // the planned tranches were all paid and checked
] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];

export type StreamPause = { tranche: bigint; reason: PauseReason; detail: string };

export type FlowState = {
  terms: TermsDocumentV4;
  /** Tranches whose ticket was signed (1..released). */
  released: bigint;
  /** Tranches whose proof's samples all re-ran true (1..checked). */
  checked: bigint;
  /** Proof hash per tranche, as first received. */
  proofs: Map<bigint, Hex>;
  paused: StreamPause | null;
};

export function initialFlowState(terms: TermsDocumentV4): FlowState {
  return { terms, released: 0n, checked: 0n, proofs: new Map(), paused: null };
}

/**
 * Whether ticket `released + 1` may be signed: not paused, fewer than `tranchesInFlight` released tranches
 * unchecked, and its cumulative amount within `cap` (a session key's spend cap) when given.
 */
export function mayRelease(state: FlowState, cap?: bigint): { ok: true; tranche: bigint; cumulative: bigint } | { ok: false; pause: StreamPause | null } {
  if (state.paused) return { ok: false, pause: state.paused };
  const tranche = state.released + 1n;
  if (state.released - state.checked >= BigInt(state.terms.stream.tranchesInFlight)) return { ok: false, pause: null };
  const cumulative = tranchePriceOf(state.terms) * tranche;
  if (cap !== undefined && cumulative > cap) {
    return { ok: false, pause: { tranche, reason: "cap_reached", detail: `ticket ${tranche} would authorise ${cumulative}; the session key's cap is ${cap}` } };
  }
  return { ok: true, tranche, cumulative };
}

export function paused(state: FlowState, pause: StreamPause): FlowState {
  return state.paused ? state : { ...state, paused: pause };
}

/**
 * A tranche's result as the provider signed it, against the request the payer sent: the proof is for this
 * session and tranche, about the bound suite, its hash is the receipt's output and the request's hash its input.
 * A second, different proof for a tranche already seen pauses as an equivocation; a bound proof about another suite is
 * accepted as evidence and pauses (`wrong_suite`).
 */
export function acceptTranche(
  state: FlowState,
  input: { sessionId: Hex; request: TrancheRequest; receipt: SignedSessionReceipt; proof: SignedProgressProof },
): { state: FlowState; ok: boolean } {
  const { request, receipt, proof } = input;
  const tranche = request.tranche;
  const hash = progressProofHash(proof.proof);
  const seen = state.proofs.get(tranche);
  if (seen !== undefined && seen !== hash) {
    return { state: paused(state, { tranche, reason: "equivocation", detail: `a second proof of tranche ${tranche}: ${hash}, after ${seen}` }), ok: false };
  }
  const problems: string[] = [];
  const p = proof.proof;
  const r = receipt.receipt;
  if (p.sessionId !== input.sessionId || p.tranche !== tranche) problems.push(`the proof is for tranche ${p.tranche} of ${p.sessionId}`);
  if (r.seq !== tranche || r.outputHash !== hash) problems.push(`receipt ${r.seq} carries output ${r.outputHash}, not the proof ${hash}`);
  if (r.offloadPacketHash !== trancheRequestHash(request)) problems.push(`receipt ${r.seq} binds request ${r.offloadPacketHash}, not the one sent`);
  if (r.metering.amount !== tranchePriceOf(state.terms)) problems.push(`receipt ${r.seq} charges ${r.metering.amount}, not the tranche price ${tranchePriceOf(state.terms)}`);
  if (problems.length) return { state: paused(state, { tranche, reason: "invalid_result", detail: problems.join("; ") }), ok: false };
  const proofs = new Map(state.proofs);
  proofs.set(tranche, hash);
  const accepted = { ...state, proofs };
  // Bound to its receipt but about another suite: a false claim the provider signed. The result is kept (it is the
  // case's evidence, Lane 0 decides it) and the stream pauses; nothing is sampled.
  if (p.suiteHash !== state.terms.stream.suite.hash) {
    return { state: paused(accepted, { tranche, reason: "wrong_suite", detail: `the proof reports on suite ${p.suiteHash}, not the bound ${state.terms.stream.suite.hash}` }), ok: true };
  }
  return { state: accepted, ok: true };
}

/** A tranche's spot-check outcome: all sampled claims true → checked; otherwise the stream pauses. */
export function judgeSample(
  state: FlowState,
  tranche: bigint,
  outcome: SpotCheckResult | { failure: "repository_changed" | "no_answer"; detail: string },
): FlowState {
  if ("failure" in outcome) return paused(state, { tranche, reason: outcome.failure, detail: outcome.detail });
  const lie = outcome.samples.find((s) => s.status === "false");
  if (lie) return paused(state, { tranche, reason: "false_claim", detail: lie.detail });
  if (outcome.suiteFault) return paused(state, { tranche, reason: "suite_fault", detail: outcome.suiteFault });
  return { ...state, checked: tranche > state.checked ? tranche : state.checked };
}

/*//////////////////////////////////////////////////////////////
                          IMPERATIVE SHELL
//////////////////////////////////////////////////////////////*/

/** What the provider returns for one tranche. */
export type TrancheResult = { receipt: SignedSessionReceipt; proof: SignedProgressProof; commit: SignedReceiptCommit };

/**
 * The provider as the Flow Controller sees it (a socket, a process, or in-process). `null` is no answer.
 * `sample` gets the revealed secret and the drawn indices and answers with the repository the proof is anchored to.
 */
export interface StreamProviderLink {
  tranche(parameters: { ticket: SignedPaymentTicket; request: TrancheRequest }): Promise<TrancheResult | null>;
  sample(parameters: { tranche: bigint; secret: Hex; indices: number[] }): Promise<Bundle | null>;
}

export type StreamEvent =
  | { kind: "ticket"; tranche: bigint; cumulative: bigint }
  | { kind: "proof"; tranche: bigint; proofHash: Hex; passed: number; total: number; repoStateHash: Hex }
  | { kind: "sample"; tranche: bigint; index: number; name: string; claimed: string; actual: string; status: SampleVerdict["status"]; replayMs: number; repositoryBytes: number }
  | { kind: "pause"; tranche: bigint; reason: PauseReason; detail: string };

/** One tranche as the payer holds it: enough to build a stream case. */
export type HeldTranche = {
  request: TrancheRequest;
  /** Undefined only for a tranche released before a restart that left no journal: it cannot be revealed. */
  secret?: Hex;
  ticket: SignedPaymentTicket;
  result?: TrancheResult;
  indices?: number[];
  repository?: Bundle;
  samples?: SampleVerdict[];
  /** The first sampled claim the re-run disproved. */
  lie?: number;
  conflicting?: SignedProgressProof;
};

export type FlowControllerParameters = {
  terms: TermsDocumentV4;
  ref: ChannelRef;
  sessionId: Hex;
  domain: GasEscrowDomain;
  /** Signs tickets: the payer, or (delegated sampling node) the session key `grant` names. */
  signer: LocalAccount;
  grant?: SignedSessionKeyGrant;
  link: StreamProviderLink;
  /** The bound test suite (its hash is the terms'). */
  suite: Bundle;
  onEvent?: (event: StreamEvent) => void;
  /** The sampling secret of each tranche; default 32 random bytes (tests pass their own). */
  secretOf?: (tranche: bigint) => Hex;
  watchdogMs?: number;
  /**
   * The payer's store (optional): each ticket is persisted before it is sent, each accepted tranche as a step with
   * its receipt, the provider's receipt commit, and the tranche request and proof as the step's result (their
   * keccak256 are the receipt's offloadPacketHash and outputHash), so `Payer.closeUnilateral` and the page see the
   * stream like any other channel. No schema change (decision 0037).
   */
  store?: ChannelStore;
  /**
   * The stream's journal (optional): each tranche's sampling secret, durable before its request leaves; each
   * proof's signature; checked tranches; the pause and its evidence. With `store`, what `FlowController.resume`
   * continues from after a restart.
   */
  journal?: StreamJournal;
};

export class FlowController {
  state: FlowState;
  readonly events: StreamEvent[] = [];
  readonly tranches = new Map<bigint, HeldTranche>();
  readonly accumulator = new ReceiptAccumulator();
  /** The provider's newest verified receipt commit (what the payer anchors before a case). */
  commit: SignedReceiptCommit | null = null;
  #prevReceipt: Hex = GENESIS_RECEIPT_HASH;
  /** The pause already written to the journal. */
  #journaledPause: StreamPause | null = null;

  constructor(readonly parameters: FlowControllerParameters) {
    if (bundleHash(parameters.suite) !== parameters.terms.stream.suite.hash) {
      throw new SpotCheckInputError(`The test suite hashes to ${bundleHash(parameters.suite)}; the terms bind ${parameters.terms.stream.suite.hash}.`);
    }
    this.state = initialFlowState(parameters.terms);
  }

  /**
   * A controller that continues the stream the store and journal hold (a payer that restarted): every accepted
   * tranche is taken back (its ticket, receipt and leaf from the store, its request, secret and signed proof from the
   * journal), checked tranches count as checked, and a pause that proves something (a false claim, two proofs, a
   * proof about another suite) is restored with its evidence. A tranche released but not yet checked is finished by
   * the next `step`: its ticket and request are sent again (the provider answers them again from its store) and its secret revealed. Without a
   * journal the secret of that tranche is lost and the stream pauses (`secret_lost`). With neither store nor
   * journal, the same as `new FlowController`.
   */
  static async resume(parameters: FlowControllerParameters): Promise<FlowController> {
    const flow = new FlowController(parameters);
    const { store, journal, sessionId } = parameters;
    if (!store) return flow;
    const entries = journal?.entries() ?? [];
    const requests = new Map<bigint, { secret: Hex; request: TrancheRequest }>();
    const proofs = new Map<bigint, SignedProgressProof>();
    let checked = 0n;
    let pause: Extract<JournalEntry, { kind: "pause" }> | undefined;
    for (const e of entries) {
      if (e.kind === "request") requests.set(e.tranche, { secret: e.secret, request: e.request });
      else if (e.kind === "proof") proofs.set(e.tranche, e.signed);
      else if (e.kind === "checked" && e.tranche > checked) checked = e.tranche;
      else if (e.kind === "pause") pause = e;
    }
    const commit = store.latestCommit(sessionId, "provider") ?? null;
    const results = new Map(store.results(sessionId).map((r) => [r.seq, r]));
    let state = flow.state;
    let lost: bigint | undefined;
    for (const step of store.steps(sessionId)) {
      const tranche = step.seq;
      const journaled = requests.get(tranche);
      const stored = results.get(tranche);
      const request = journaled?.request ?? (stored ? trancheRequestFromJson(JSON.parse(stored.request), "stored request") : undefined);
      if (!request) {
        // Released before a restart that left no journal: neither the request nor its secret survived.
        if (step.receipt) throw new StreamResumeError(`Tranche ${tranche}'s receipt is in the store but its tranche request is in neither the journal nor the store.`);
        state = { ...state, released: tranche };
        lost = tranche;
        continue;
      }
      const held: HeldTranche = { request, ticket: step.ticket, ...(journaled ? { secret: journaled.secret } : {}) };
      flow.tranches.set(tranche, held);
      state = { ...state, released: tranche };
      if (step.receipt && step.leaf) {
        const signed = proofs.get(tranche);
        // The proof's signature is journaled before the step is stored; without a journal only the hash is known.
        if (signed) held.result = { receipt: step.receipt, proof: signed, commit: commit! };
        else if (journaled) throw new StreamResumeError(`Tranche ${tranche}'s receipt is in the store but its signed proof is not in the journal.`);
        flow.accumulator.append(step.leaf);
        flow.#prevReceipt = sessionReceiptHash(step.receipt.receipt);
        state.proofs.set(tranche, signed ? progressProofHash(signed.proof) : step.receipt.receipt.outputHash);
      }
    }
    flow.commit = commit;
    // Ticket k is signed only while fewer than `tranchesInFlight` released tranches are unchecked: every tranche up to
    // the newest released less the window was checked (the journal may know more).
    const window = BigInt(parameters.terms.stream.tranchesInFlight);
    const floor = state.released > window ? state.released - window : 0n;
    state = { ...state, checked: checked > floor ? (checked < state.released ? checked : state.released) : floor };
    if (lost !== undefined) {
      state = { ...state, paused: { tranche: lost, reason: "secret_lost", detail: `this payer restarted without tranche ${lost}'s sampling secret (no journal): it cannot reveal, so it pays nothing more` } };
    } else if (pause && (pause.reason === "false_claim" || pause.reason === "equivocation" || pause.reason === "wrong_suite")) {
      const held = flow.tranches.get(pause.tranche);
      if (held) {
        if (pause.indices) held.indices = pause.indices;
        if (pause.repository) held.repository = pause.repository;
        if (pause.sample !== undefined) held.lie = pause.sample;
        if (pause.conflicting) held.conflicting = pause.conflicting;
        state = { ...state, paused: { tranche: pause.tranche, reason: pause.reason, detail: pause.detail } };
        flow.#journaledPause = state.paused;
      }
    }
    flow.state = state;
    return flow;
  }

  #emit(event: StreamEvent): void {
    this.events.push(event);
    this.parameters.onEvent?.(event);
  }

  /** Pauses and says so, unless already paused (the first pause stands). */
  #pause(pause: StreamPause | null): void {
    if (!pause || this.state.paused) return;
    this.state = paused(this.state, pause);
    this.#emit({ kind: "pause", ...this.state.paused! });
  }

  /**
   * Runs tranches until `tranches` are paid and checked, or the stream pauses. Returns the pause. Pipelined: while a
   * tranche's sampled claims re-run, the next tranches (up to `tranchesInFlight` released and unchecked, never past
   * `tranches`) are released and received.
   */
  async run(tranches: bigint): Promise<StreamPause> {
    while (!this.state.paused) {
      if (this.state.checked >= tranches) {
        this.#pause({ tranche: this.state.checked, reason: "done", detail: `${tranches} tranches paid and checked` });
        break;
      }
      await this.step(tranches);
    }
    await this.#journalPause();
    return this.state.paused!;
  }

  /**
   * Finishes the oldest released, unchecked tranche (after a restart, or one released ahead), or releases, receives
   * and checks the next one (or pauses). With `upTo`, tranches up to `upTo` are released and received ahead while the
   * check re-runs, as the in-flight window allows (without it, one tranche at a time).
   */
  async step(upTo?: bigint): Promise<void> {
    await this.#step(upTo);
    await this.#journalPause();
  }

  async #step(upTo: bigint | undefined): Promise<void> {
    if (this.state.paused) return;
    const unfinished = this.state.checked + 1n;
    if (unfinished <= this.state.released) {
      const held = this.tranches.get(unfinished)!;
      if (held.secret === undefined) {
        return this.#pause({ tranche: unfinished, reason: "secret_lost", detail: `this payer restarted without tranche ${unfinished}'s sampling secret (no journal): it cannot reveal, so it pays nothing more` });
      }
      if (!held.result && !(await this.#receive(unfinished, held))) return;
      return this.#check(unfinished, held, upTo);
    }
    const held = await this.#release();
    if (!held) return;
    if (!(await this.#receive(held.request.tranche, held))) return;
    await this.#check(held.request.tranche, held, upTo);
  }

  /**
   * Releases and receives tranches after the newest released one while the window allows (`mayRelease`: fewer than
   * `tranchesInFlight` released and unchecked, not paused, within a session key's cap) and up to `upTo`. It stops,
   * without pausing, when the window is full or the cap would be passed: the next `step` pauses on the cap once every
   * released tranche is checked, as an unpipelined controller would. Runs beside a spot-check; the link carries one
   * message at a time, and the spot-check uses none.
   */
  async #ahead(upTo: bigint): Promise<void> {
    while (!this.state.paused && this.state.released < upTo) {
      const next = mayRelease(this.state, this.parameters.grant?.grant.spendCap);
      if (!next.ok) return;
      const held = await this.#release();
      if (!held || !(await this.#receive(held.request.tranche, held))) return;
    }
  }

  /** Signs the next tranche's ticket with a fresh sampling commitment; the secret is durable before anything leaves. */
  async #release(): Promise<HeldTranche | undefined> {
    const { sessionId, domain, signer, grant } = this.parameters;
    const next = mayRelease(this.state, grant?.grant.spendCap);
    if (!next.ok) {
      this.#pause(next.pause ?? { tranche: this.state.released + 1n, reason: "no_answer", detail: "tranches in flight are unchecked" });
      return undefined;
    }
    const { tranche, cumulative } = next;
    const secret = this.parameters.secretOf?.(tranche) ?? bytesToHex(randomBytes(32));
    const request: TrancheRequest = { sessionId, tranche, sampleCommit: sampleCommitOf(secret) };
    const ticket = await signPaymentTicket({
      account: signer,
      domain,
      ticket: { sessionId, provider: this.parameters.ref.terms.provider, termsHash: this.parameters.ref.terms.termsHash, seq: tranche, cumulativeAmount: cumulative, receiptRoot: this.accumulator.root() },
    });
    const held: HeldTranche = { request, secret, ticket };
    await this.parameters.journal?.append({ kind: "request", tranche, secret, request });
    await this.parameters.store?.putTicket(sessionId, ticket);
    this.tranches.set(tranche, held);
    this.state = { ...this.state, released: tranche };
    this.#emit({ kind: "ticket", tranche, cumulative });
    return held;
  }

  /** Sends tranche `tranche`'s ticket and request and takes its result (receipt, proof, commit) or pauses. */
  async #receive(tranche: bigint, held: HeldTranche): Promise<boolean> {
    const { sessionId, domain, link } = this.parameters;
    const ticket = held.ticket;
    const request = held.request;
    // A provider that fails, refuses or throws has not answered: the stream pauses (the ticket is already out).
    const result = await link.tranche({ ticket, request }).catch((error: unknown) => {
      this.#pause({ tranche, reason: "no_answer", detail: `the provider did not answer tranche ${tranche}: ${(error as Error).message}` });
      return null;
    });
    if (this.state.paused) return false;
    if (!result) return this.#pause({ tranche, reason: "no_answer", detail: `no result for tranche ${tranche}` }), false;
    const provider = this.parameters.ref.terms.provider;
    try {
      await verifySessionReceipt({ signed: result.receipt, signer: provider });
      await verifyProgressProof({ signed: result.proof, signer: provider });
    } catch (error) {
      return this.#pause({ tranche, reason: "invalid_result", detail: (error as Error).message }), false;
    }
    if (result.receipt.receipt.prevReceiptHash !== this.#prevReceipt) {
      return this.#pause({ tranche, reason: "invalid_result", detail: `receipt ${tranche} does not link to receipt ${tranche - 1n}` }), false;
    }
    const before = this.state.paused;
    const accepted = acceptTranche(this.state, { sessionId, request, receipt: result.receipt, proof: result.proof });
    this.state = accepted.state;
    // The pause this result itself caused (equivocation, invalid, wrong suite), not one a pipelined check made meanwhile.
    const caused = this.state.paused !== before ? this.state.paused : null;
    if (!accepted.ok) return caused && this.#emit({ kind: "pause", ...caused }), false;
    held.result = result;
    this.accumulator.append(receiptLeaf(result.receipt.receipt, ticket.ticket));
    this.#prevReceipt = sessionReceiptHash(result.receipt.receipt);
    const commit = result.commit.commit;
    try {
      await verifyReceiptCommit(domain, result.commit, provider);
      if (commit.sessionId !== sessionId || commit.leafCount !== tranche || commit.root !== this.accumulator.root()) throw new Error(`the commit covers ${commit.leafCount} receipts with root ${commit.root}`);
    } catch (error) {
      return this.#pause({ tranche, reason: "invalid_result", detail: `receipt commit: ${(error as Error).message}` }), false;
    }
    this.commit = result.commit;
    const proof = result.proof.proof;
    // The proof's signature first: a step the store holds always has its signed proof in the journal.
    await this.parameters.journal?.append({ kind: "proof", tranche, signed: result.proof });
    const store = this.parameters.store;
    if (store) {
      // Request and proof before the step (as a paid call's result): a receipt that counts has its output stored.
      await store.putResult(sessionId, { seq: tranche, request: canon(trancheRequestToJson(request)), output: canon(progressProofToJson(proof)) });
      await store.putStep(sessionId, { seq: tranche, ticket, receipt: result.receipt, leaf: receiptLeaf(result.receipt.receipt, ticket.ticket) });
      await store.putCommit(sessionId, "provider", result.commit);
    }
    this.#emit({ kind: "proof", tranche, proofHash: progressProofHash(proof), ...testsPassed(proof), repoStateHash: proof.repoStateHash });
    if (caused) return this.#emit({ kind: "pause", ...caused }), false; // wrong_suite: nothing to sample
    return !this.state.paused;
  }

  /**
   * Reveals the secret, fetches the repository for the drawn claims and re-runs them; checked or paused. With `upTo`,
   * the next tranches are released and received (`#ahead`) while the claims re-run.
   */
  async #check(tranche: bigint, held: HeldTranche, upTo?: bigint): Promise<void> {
    const { terms, sessionId, domain, link } = this.parameters;
    const secret = held.secret!;
    const proof = held.result!.proof.proof;
    const proofHash = progressProofHash(proof);
    // Reveal: the draw is fixed by the committed secret and the proof; the provider answers with the repository.
    const indices = sampledIndices({ secret, proofHash, total: proof.tests.length, count: terms.stream.samplesPerTranche });
    held.indices = indices;
    const repository = await link.sample({ tranche, secret, indices }).catch(() => null);
    if (!repository) {
      this.state = judgeSample(this.state, tranche, { failure: "no_answer", detail: `no repository for the samples of tranche ${tranche}` });
      return this.#emit({ kind: "pause", ...this.state.paused! });
    }
    if (bundleHash(repository) !== proof.repoStateHash) {
      this.state = judgeSample(this.state, tranche, { failure: "repository_changed", detail: `the repository answered hashes to ${bundleHash(repository)}; the proof is anchored to ${proof.repoStateHash}` });
      return this.#emit({ kind: "pause", ...this.state.paused! });
    }
    held.repository = repository;
    const started = performance.now();
    let checked: SpotCheckResult;
    // Pipelining: the next tranches go out and come back while this one's claims re-run (always awaited below).
    let aheadError: { error: unknown } | undefined;
    const ahead = upTo === undefined ? Promise.resolve() : this.#ahead(upTo).catch((error: unknown) => void (aheadError = { error }));
    try {
      checked = await spotCheck({
        terms,
        suite: this.parameters.suite,
        repository,
        proof,
        indices,
        inputs: streamInputs({ chainId: BigInt(domain.chainId), gasEscrow: domain.verifyingContract, sessionId, tranche }),
        ...(this.parameters.watchdogMs === undefined ? {} : { watchdogMs: this.parameters.watchdogMs }),
      });
    } catch (error) {
      await ahead;
      // Never a crash and never a payment: the check did not pass.
      if (error instanceof SpotCheckInputError) return this.#pause({ tranche, reason: "suite_fault", detail: error.message });
      if (error instanceof JudgeHostFaultError) return this.#pause({ tranche, reason: "host_fault", detail: error.shortMessage });
      throw error;
    }
    await ahead;
    if (aheadError) throw aheadError.error;
    const replayMs = (performance.now() - started) / Math.max(1, checked.samples.length);
    const repositoryBytes = Buffer.byteLength(JSON.stringify(repository));
    held.samples = checked.samples;
    const lie = checked.samples.find((s) => s.status === "false");
    if (lie) held.lie = lie.index;
    for (const s of checked.samples) {
      this.#emit({ kind: "sample", tranche, index: s.index, name: s.name, claimed: s.claimed, actual: s.actual, status: s.status, replayMs, repositoryBytes });
    }
    const before = this.state.paused;
    // A tranche released ahead may have paused meanwhile (no answer, an invalid result); this earlier tranche's failed
    // check is what the stream pauses on (it is what an unpipelined controller would have seen first).
    if (before && before.tranche > tranche && (lie || checked.suiteFault)) this.state = { ...this.state, paused: null };
    this.state = judgeSample(this.state, tranche, checked);
    if (this.state.paused && this.state.paused !== before) return this.#emit({ kind: "pause", ...this.state.paused });
    if (this.state.checked >= tranche) await this.parameters.journal?.append({ kind: "checked", tranche, samples: checked.samples.map(journalSample) });
  }

  /** Writes the pause (once) with what a case on it needs: the drawn claims, the repository and the lie, or the second proof. */
  async #journalPause(): Promise<void> {
    const pause = this.state.paused;
    const journal = this.parameters.journal;
    if (!journal || !pause || this.#journaledPause === pause) return;
    this.#journaledPause = pause;
    const held = this.tranches.get(pause.tranche);
    const evidence = pause.reason === "false_claim" || pause.reason === "equivocation";  // wrong_suite: the proof is journaled already
    await journal.append({
      kind: "pause",
      tranche: pause.tranche,
      reason: pause.reason,
      detail: pause.detail,
      ...(evidence && held?.indices ? { indices: held.indices } : {}),
      ...(pause.reason === "false_claim" && held?.repository ? { repository: held.repository } : {}),
      ...(pause.reason === "false_claim" && held?.lie !== undefined ? { sample: held.lie } : {}),
      ...(pause.reason === "equivocation" && held?.conflicting ? { conflicting: held.conflicting } : {}),
      ...(held?.samples && held.samples.length > 0 ? { samples: held.samples.map(journalSample) } : {}),
    });
  }

  /** Records a second proof the provider sent for a tranche (e.g. a resend that differs): pauses on a difference. */
  async noteProof(proof: SignedProgressProof): Promise<void> {
    const held = this.tranches.get(proof.proof.tranche);
    const first = this.state.proofs.get(proof.proof.tranche);
    if (!held || first === undefined || first === progressProofHash(proof.proof)) return;
    held.conflicting = proof;
    this.state = paused(this.state, { tranche: proof.proof.tranche, reason: "equivocation", detail: `a second proof of tranche ${proof.proof.tranche}` });
    this.#emit({ kind: "pause", ...this.state.paused! });
    await this.#journalPause();
  }

  /**
   * The evidence of a stream case on the paused tranche (a false claim: the proof, the request, the reveal, the
   * first disproved claim, the suite and the repository; an equivocation: both proofs), with the receipt proven
   * against the provider's newest commit (`anchorReceiptCommit` it first), or null when the pause proves nothing.
   */
  caseEvidence(): { seq: bigint; progress: ProgressEvidence; suite?: Bundle; repository?: Bundle; receipt: ReceiptEvidence; commit: SignedReceiptCommit } | null {
    const pause = this.state.paused;
    if (!pause || (pause.reason !== "false_claim" && pause.reason !== "equivocation" && pause.reason !== "wrong_suite") || !this.commit) return null;
    const held = this.tranches.get(pause.tranche);
    if (!held?.result || (pause.reason === "equivocation" && !held.conflicting)) return null;
    const index = Number(pause.tranche) - 1;
    const receipt: ReceiptEvidence = {
      receipt: held.result.receipt,
      ticket: held.ticket,
      leafIndex: BigInt(index),
      merkleProof: this.accumulator.proof(index, Number(this.commit.commit.leafCount)),
      ...(this.parameters.grant ? { sessionKey: this.parameters.grant } : {}),
    };
    if (pause.reason === "equivocation") {
      return { seq: pause.tranche, progress: { proof: held.result.proof, request: held.request, conflicting: held.conflicting! }, receipt, commit: this.commit };
    }
    // The signed proof alone shows it reports on another suite (Lane 0: STREAM_FALSE_CLAIM).
    if (pause.reason === "wrong_suite") return { seq: pause.tranche, progress: { proof: held.result.proof, request: held.request }, receipt, commit: this.commit };
    const lie = held.samples?.find((s) => s.status === "false")?.index ?? held.lie;
    if (lie === undefined || held.secret === undefined || !held.repository) return null;
    return {
      seq: pause.tranche,
      progress: { proof: held.result.proof, request: held.request, secret: held.secret, sample: lie },
      suite: this.parameters.suite,
      repository: held.repository,
      receipt,
      commit: this.commit,
    };
  }
}

/** A sampled claim's verdict as the journal keeps it (without the UPIP record and step counts). */
function journalSample(s: SampleVerdict): JournalSample {
  return { index: s.index, name: s.name, claimed: s.claimed, actual: s.actual, status: s.status };
}

/** The store and journal do not hold a stream that can be resumed (named what is missing). */
export class StreamResumeError extends Error {
  override name = "StreamResumeError" as const;
}

/*//////////////////////////////////////////////////////////////
                RECORD (for `ioi ui --records`, the API)
//////////////////////////////////////////////////////////////*/

export const STREAM_RECORD_SCHEMA = "ioi.stream_record/1";

/** A stream as JSON: its terms' figures, every event (amounts and tranches as decimal strings) and the pause. */
export type StreamRecord = {
  schema: typeof STREAM_RECORD_SCHEMA;
  sessionId: Hex;
  tranchePrice: string;
  trancheSeconds: string;
  samplesPerTranche: number;
  released: string;
  checked: string;
  paused: { tranche: string; reason: PauseReason; detail: string } | null;
  events: Record<string, string | number>[];
};

export function streamRecordOf(flow: FlowController): StreamRecord {
  const { terms, sessionId } = flow.parameters;
  const flat = (event: StreamEvent): Record<string, string | number> =>
    Object.fromEntries(Object.entries(event).map(([k, v]) => [k, typeof v === "bigint" ? v.toString() : (v as string | number)]));
  const paused = flow.state.paused;
  return {
    schema: STREAM_RECORD_SCHEMA,
    sessionId,
    tranchePrice: tranchePriceOf(terms).toString(),
    trancheSeconds: terms.stream.trancheSeconds.toString(),
    samplesPerTranche: terms.stream.samplesPerTranche,
    released: flow.state.released.toString(),
    checked: flow.state.checked.toString(),
    paused: paused ? { tranche: paused.tranche.toString(), reason: paused.reason, detail: paused.detail } : null,
    events: flow.events.map(flat),
  };
}

/** Writes `stream-<session id's first 12 hex digits>.json` into `dir` (what `ioi ui --records` shows). */
export function writeStreamRecord(dir: string, flow: FlowController): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `stream-${flow.parameters.sessionId.slice(2, 14)}.json`);
  writeFileSync(file, JSON.stringify(streamRecordOf(flow), null, 2) + "\n");
  return file;
}
