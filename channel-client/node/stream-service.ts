/**
 * The provider node's side of a milestone stream over the sealed socket (issue 32, decision 0037): what one tranche's
 * work is, how its Progress Proof is built and signed, and which repositories the node keeps to answer samples.
 * `ProviderNode` carries the messages (`stream.tranche` → `stream.result`, `stream.sample` → `stream.repository`);
 * the ticket rules, the receipt, its persistence and replay are the node's ordinary ones (`ProviderSession`): a
 * tranche is one invocation whose input is the tranche request and whose output is the proof.
 */
import { zeroHash, type Hex, type LocalAccount } from "viem";

import { canon, parseJson } from "../core/canonical";
import type { GasEscrowDomain } from "../core/eip712";
import { BaseError, BindingMismatchError, ChannelNotOpenError } from "../core/errors";
import { keccak256Hex } from "../core/keccak";
import { MAX_PACKET_BYTES } from "../core/packets";
import {
  progressProofFromJson,
  progressProofHash,
  progressProofToJson,
  sampleCommitOf,
  sampledIndices,
  signProgressProof,
  trancheRequestFromJson,
  trancheRequestToJson,
  type ProgressProof,
  type SignedProgressProof,
} from "../core/progress-proof";
import { signReceiptCommit } from "../core/receipt-commit";
import { tranchePriceOf, type PricingTerms, type TermsDocumentV4 } from "../core/terms";
import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import type { PinnedInputs } from "../../arbitration/lanes/replay";
import { claimsOf, streamInputs } from "../../arbitration/lanes/stream-sample";
import type { ChannelStore } from "../store/store";
import type { ProviderSession } from "./provider-session";
import type { StreamRepositoryMessage, StreamResultMessage, StreamSampleMessage, StreamTrancheMessage } from "./protocol";

/** What one tranche of work left: the repository and the claims about it (an honest worker runs the bound suite). */
export type TrancheOutcome = {
  repository: Bundle;
  tests: ProgressProof["tests"];
  coverageDeltaBps?: number;
  lint?: ProgressProof["lint"];
  artifactHash?: Hex;
  /**
   * The suite the claims come from (default: the bound one). A worker that ran another suite must say so: the proof
   * then reports on it, the payer pauses (`wrong_suite`) and holds a case Lane 0 decides.
   */
  suiteHash?: Hex;
};

/** The provider's work for tranche `tranche` of `sessionId`; `inputs` are the clock and seed the samples run under. */
export type StreamWork = (parameters: { sessionId: Hex; tranche: bigint; terms: TermsDocumentV4; inputs: PinnedInputs }) => Promise<TrancheOutcome>;

/** The node refused a tranche or a sample (typed name and sentence travel in a `reject`). */
export class StreamRefusedError extends BaseError {
  override name = "StreamRefusedError" as const;
}

/**
 * Honest work on a repository that something else (the provider's agent) changes: at the end of each tranche the
 * repository is read as it stands (`read`) and the bound suite is run on it in the sealed engine; the proof claims
 * exactly those outcomes.
 */
export function suiteStreamWork(parameters: { suite: Bundle; read: (tranche: bigint) => Bundle | Promise<Bundle>; watchdogMs?: number }): StreamWork {
  return async ({ tranche, terms, inputs }) => {
    const repository = await parameters.read(tranche);
    const tests = await claimsOf({ terms, suite: parameters.suite, repository, inputs, ...(parameters.watchdogMs === undefined ? {} : { watchdogMs: parameters.watchdogMs }) });
    return { repository, tests };
  };
}

/**
 * The proof hash of tranche `tranche - 1` as the store holds it (the zero hash for tranche 1): the keccak256 of the
 * canonical proof the node stored as that step's output, which is exactly its `progressProofHash`.
 */
export function previousProofHash(store: Pick<ChannelStore, "results">, sessionId: Hex, tranche: bigint): Hex {
  if (tranche <= 1n) return zeroHash;
  const [previous] = store.results(sessionId, { fromSeq: tranche - 1n, limit: 1 });
  if (!previous || previous.seq !== tranche - 1n) throw new StreamRefusedError(`The store holds no proof of tranche ${tranche - 1n}; tranche ${tranche} cannot chain to it.`);
  return keccak256Hex(new TextEncoder().encode(previous.output));
}

/** Builds and signs tranche `tranche`'s Progress Proof from the work's outcome. */
export async function signTrancheProof(parameters: {
  account: LocalAccount;
  terms: TermsDocumentV4;
  sessionId: Hex;
  tranche: bigint;
  outcome: TrancheOutcome;
  prevProofHash: Hex;
}): Promise<SignedProgressProof> {
  const { outcome } = parameters;
  return signProgressProof({
    account: parameters.account,
    proof: {
      sessionId: parameters.sessionId,
      tranche: parameters.tranche,
      repoStateHash: bundleHash(outcome.repository),
      suiteHash: outcome.suiteHash ?? parameters.terms.stream.suite.hash,
      tests: outcome.tests,
      coverageDeltaBps: outcome.coverageDeltaBps ?? 0,
      lint: outcome.lint ?? "clean",
      artifactHash: outcome.artifactHash ?? zeroHash,
      prevProofHash: parameters.prevProofHash,
    },
  });
}

/** Repositories kept per session to answer samples: the newest `keep` tranches (memory only; a restart forgets them). */
export class RepositoryMemory {
  readonly #bySession = new Map<Hex, Map<bigint, Bundle>>();
  constructor(readonly keep = 16) {}

  put(sessionId: Hex, tranche: bigint, repository: Bundle): void {
    let held = this.#bySession.get(sessionId);
    if (!held) this.#bySession.set(sessionId, (held = new Map()));
    held.set(tranche, repository);
    for (const key of held.keys()) if (key + BigInt(this.keep) <= tranche) held.delete(key);
  }

  get(sessionId: Hex, tranche: bigint): Bundle | undefined {
    return this.#bySession.get(sessionId)?.get(tranche);
  }
}

/**
 * One tranche as the session's handler sees it: it carries its own work, so the ordinary ticket checks, receipt and
 * accumulator of `ProviderSession.invoke` apply unchanged. Only the stream service makes one; a request from the wire
 * is plain JSON, never an instance.
 */
export class TrancheCall {
  constructor(readonly run: () => Promise<{ output: Uint8Array; units: bigint; value: { signed: SignedProgressProof; repository: Bundle } }>) {}
}

export type StreamServiceParameters = {
  account: LocalAccount;
  domain: GasEscrowDomain;
  store: ChannelStore;
  pricing: PricingTerms;
  stream?: {
    work: StreamWork;
    repositoryOf?: (parameters: { sessionId: Hex; tranche: bigint }) => Bundle | undefined | Promise<Bundle | undefined>;
  };
};

/**
 * What a provider node decides for tranches and samples (the node only keeps answers in order): each method returns
 * the answer, or throws a typed refusal the node sends as a `reject`.
 */
export class StreamService {
  readonly #repositories = new RepositoryMemory();

  constructor(readonly parameters: StreamServiceParameters) {}

  /**
   * Tranche k: the ticket is checked like any invocation's (and must pay exactly k tranches), the work runs, the proof
   * is signed and its hash becomes the receipt's output (the request's hash its input). Returns the answer with the
   * writes it must wait for (request and proof, step, receipt commit). A ticket already answered is answered again from
   * the store: the same receipt, proof and commit (`fresh` false, nothing written).
   */
  async tranche(session: ProviderSession, phase: string, message: StreamTrancheMessage): Promise<{ answer: StreamResultMessage; durable: Promise<unknown>; fresh: boolean }> {
    const { store, account, domain, pricing, stream } = this.parameters;
    const sessionId = session.parameters.sessionId;
    const signed = message.ticket;
    const seq = signed.ticket.seq;
    if (pricing.version !== "4" || !stream) {
      throw new StreamRefusedError(`This provider serves no milestone streams (its terms are version ${pricing.version}${pricing.version === "4" ? " but it was started without stream work" : ""}).`);
    }
    const terms = pricing;
    const { request } = message;
    const requestText = canon(trancheRequestToJson(request));
    if (request.sessionId !== sessionId || request.tranche !== seq) {
      throw new BindingMismatchError(`The tranche request is for tranche ${request.tranche} of ${request.sessionId}; the ticket pays seq ${seq} of ${sessionId}.`);
    }
    const latest = session.latestTicket;
    if (latest && seq <= latest.ticket.seq) {
      const [step] = store.steps(sessionId, { fromSeq: seq, limit: 1 });
      const [result] = store.results(sessionId, { fromSeq: seq, limit: 1 });
      if (!step?.receipt || step.seq !== seq || step.ticket.signature !== signed.signature || result?.seq !== seq || result.request !== requestText) {
        throw new StreamRefusedError(`Tranche ${seq} was answered for another ticket or request; the provider answers it again only for the same ones.`);
      }
      // Re-signed from the stored proof: the same proof (a local key signs deterministically), the same receipt.
      const proof = await signProgressProof({ account, proof: progressProofFromJson(parseJson(result.output, { maxBytes: MAX_PACKET_BYTES, what: "The stored proof" })) });
      const commit = await signReceiptCommit(account, domain, { sessionId, leafCount: seq, root: session.accumulator.prefixRoot(Number(seq)) });
      return { answer: { type: "stream.result", receipt: step.receipt, proof, commit }, durable: Promise.resolve(), fresh: false };
    }
    if (phase !== "open") throw new ChannelNotOpenError(`Session ${sessionId} is ${phase}; tranche ${seq} is refused and no work is done.`);
    const price = tranchePriceOf(terms);
    if (signed.ticket.cumulativeAmount !== price * seq) {
      throw new StreamRefusedError(`Ticket ${seq} authorises ${signed.ticket.cumulativeAmount}; ${seq} tranches cost exactly ${price * seq}.`);
    }
    const call = new TrancheCall(async () => {
      const outcome = await stream.work({ sessionId, tranche: seq, terms, inputs: streamInputs({ chainId: BigInt(domain.chainId), gasEscrow: domain.verifyingContract, sessionId, tranche: seq }) });
      const proof = await signTrancheProof({ account, terms, sessionId, tranche: seq, outcome, prevProofHash: previousProofHash(store, sessionId, seq) });
      return { output: new TextEncoder().encode(canon(progressProofToJson(proof.proof))), units: 0n, value: { signed: proof, repository: outcome.repository } };
    });
    const leafCount = message.leafCount === undefined ? undefined : Number(message.leafCount);
    const invoked = await session.invoke(signed, new TextEncoder().encode(requestText), leafCount, "stream/tranche", call);
    const { signed: proof, repository } = invoked.value as { signed: SignedProgressProof; repository: Bundle };
    this.#repositories.put(sessionId, seq, repository);
    const commit = await signReceiptCommit(account, domain, { sessionId, leafCount: BigInt(session.accumulator.size), root: session.accumulator.root() });
    // The request and proof first, then the step: durable writes keep their order (the payer's invariant too).
    const durable = Promise.all([
      store.putResult(sessionId, { seq, request: requestText, output: new TextDecoder().decode(invoked.output) }),
      store.putStep(sessionId, invoked.step, invoked.state),
      store.putCommit(sessionId, "provider", commit),
    ]);
    durable.catch(() => undefined); // the node's answer chain reports a failed write
    return { answer: { type: "stream.result", receipt: invoked.step.receipt, proof, commit }, durable, fresh: true };
  }

  /**
   * A sample of tranche k: the repository the proof is anchored to, only when the revealed secret opens the stored
   * request's commitment and the indices are exactly the agreed draw (a payer sampling outside the agreed rate is
   * refused). A repository no longer held (the node restarted) comes from `repositoryOf` if it still hashes to the
   * proof's; otherwise the sample is refused and the payer pauses.
   */
  async sample(sessionId: Hex, message: StreamSampleMessage): Promise<StreamRepositoryMessage> {
    const { store, pricing, stream } = this.parameters;
    const { tranche, secret, indices } = message;
    const [result] = store.results(sessionId, { fromSeq: tranche, limit: 1 });
    if (!result || result.seq !== tranche || pricing.version !== "4") throw new StreamRefusedError(`The provider answered no tranche ${tranche}.`);
    const request = trancheRequestFromJson(parseJson(result.request, { maxBytes: MAX_PACKET_BYTES, what: "The stored request" }));
    const proof = progressProofFromJson(parseJson(result.output, { maxBytes: MAX_PACKET_BYTES, what: "The stored proof" }));
    if (sampleCommitOf(secret) !== request.sampleCommit) throw new StreamRefusedError(`The secret does not open tranche ${tranche}'s sampling commitment.`);
    const agreed = sampledIndices({ secret, proofHash: progressProofHash(proof), total: proof.tests.length, count: pricing.stream.samplesPerTranche });
    if (indices.length !== agreed.length || indices.some((i, k) => agreed[k] !== i)) {
      throw new StreamRefusedError(`Claims ${indices.join(", ")} are not the agreed draw of tranche ${tranche} (${agreed.join(", ")}).`);
    }
    let repository = this.#repositories.get(sessionId, tranche);
    if (!repository) repository = await Promise.resolve(stream?.repositoryOf?.({ sessionId, tranche })).catch(() => undefined);
    if (!repository || bundleHash(repository) !== proof.repoStateHash) throw new StreamRefusedError(`The provider no longer holds tranche ${tranche}'s repository.`);
    return { type: "stream.repository", tranche, repository };
  }
}
