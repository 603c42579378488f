/**
 * The provider node's side of a milestone stream over the sealed socket (issue 32, decision 0037): what one tranche's
 * work is, how its Progress Proof is built and signed, and which repositories the node keeps to answer samples.
 * `ProviderNode` carries the messages (`stream.tranche` → `stream.result`, `stream.sample` → `stream.repository`);
 * the ticket rules, the receipt, its persistence and replay are the node's ordinary ones (`ProviderSession`): a
 * tranche is one invocation whose input is the tranche request and whose output is the proof.
 */
import { zeroHash, type Hex, type LocalAccount } from "viem";

import { BaseError } from "../core/errors";
import { keccak256Hex } from "../core/keccak";
import { signProgressProof, type ProgressProof, type SignedProgressProof } from "../core/progress-proof";
import type { TermsDocumentV4 } from "../core/terms";
import { bundleHash, type Bundle } from "../arbitration/bundle";
import type { PinnedInputs } from "../arbitration/replay";
import { claimsOf } from "../arbitration/stream-sample";
import type { ChannelStore } from "../store/store";

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
