/** Lane 0's checks of a streamed tranche (issue 32, decision 0037; split from arbitration/lanes/lane0.ts). */
import type { Hex } from "viem";
import { isStreamTerms, penaltyOf, type PricingTerms } from "../../channel-client/core/terms";
import { bundleHash } from "../documents/bundle";
import { evidenceOfKind, type ChallengePackage, type ChannelEvidence, type ProgressEvidence, type ReceiptEvidence } from "../documents/package";
import { progressProofHash, sampleCommitOf, sampledIndices, trancheRequestHash, verifyProgressProof } from "../../channel-client/core/progress-proof";
import { Checks, signatureCheck } from "./lane0-checks";

/*//////////////////////////////////////////////////////////////
              STREAMED TRANCHES (issue 32, decision 0037)
//////////////////////////////////////////////////////////////*/

/** The verified progress evidence of a stream case, for the respondent checks and Lane 1's re-run. */
export type StreamEvidence = { progress: ProgressEvidence; proofHash: Hex };

/**
 * A stream case's evidence (v4 terms, a `progress` item): every check here is owed by the challenger. The proof is
 * the provider's (signature) and the one the challenged receipt carries (`outputHash`), the request is the one the
 * receipt signed (`offloadPacketHash`); a false-claim case also reveals the secret the request committed to, cites
 * a claim the agreed draw sampled (else `SAMPLE_OUTSIDE_RATE`: the payer sampled outside the agreed rate), and
 * brings the bound suite and the repository the proof is anchored to. Returns null for a case without progress.
 */
export async function streamEvidenceChecks(c: Checks, pkg: ChallengePackage, channel: ChannelEvidence, challenged: ReceiptEvidence, sessionId: Hex): Promise<StreamEvidence | null> {
  const items = evidenceOfKind(pkg, "progress");
  if (items.length === 0) return null;
  const terms = channel.pricing;
  if (!c.evidence("stream.terms", "STREAM_TERMS_MISSING", isStreamTerms(terms), "progress evidence needs streaming (v4) terms")) return null;
  if (!c.evidence("stream.progress", "PROGRESS_EVIDENCE_INVALID", items.length === 1, "exactly one progress item is allowed")) return null;
  if (!isStreamTerms(terms)) return null;
  const progress = items[0]!.content;
  const provider = channel.ref.terms.provider;
  const receipt = challenged.receipt.receipt;
  const proof = progress.proof.proof;
  const proofHash = progressProofHash(proof);
  await signatureCheck(c, "stream.proof_signature", "PROGRESS_SIGNATURE_INVALID", () => verifyProgressProof({ signed: progress.proof, signer: provider }));
  c.evidence(
    "stream.proof_binding",
    "PROGRESS_PROOF_UNBOUND",
    proof.sessionId === sessionId && proof.tranche === receipt.seq && proofHash === receipt.outputHash,
    `the proof (tranche ${proof.tranche}, hash ${proofHash}) is not the output of receipt ${receipt.seq} (${receipt.outputHash})`,
  );
  const request = progress.request;
  c.evidence(
    "stream.request_binding",
    "TRANCHE_REQUEST_UNBOUND",
    request.sessionId === sessionId && request.tranche === receipt.seq && trancheRequestHash(request) === receipt.offloadPacketHash,
    `the tranche request hashes to ${trancheRequestHash(request)}; receipt ${receipt.seq} signed ${receipt.offloadPacketHash}`,
  );
  if (progress.conflicting) {
    const other = progress.conflicting;
    await signatureCheck(c, "stream.conflicting_signature", "PROGRESS_SIGNATURE_INVALID", () => verifyProgressProof({ signed: other, signer: provider }));
    c.evidence(
      "stream.conflicting_binding",
      "PROGRESS_PROOF_UNBOUND",
      other.proof.sessionId === sessionId && other.proof.tranche === receipt.seq,
      `the second proof is for tranche ${other.proof.tranche} of session ${other.proof.sessionId}`,
    );
  }
  if (progress.sample !== undefined) {
    const secret = progress.secret;
    const revealed = c.evidence(
      "stream.sample_reveal",
      "SAMPLE_REVEAL_INVALID",
      secret === undefined ? "missing" : sampleCommitOf(secret) === request.sampleCommit,
      `the revealed secret does not hash to the request's commitment ${request.sampleCommit}`,
    );
    if (revealed && secret !== undefined) {
      const drawn = sampledIndices({ secret, proofHash, total: proof.tests.length, count: terms.stream.samplesPerTranche });
      c.evidence(
        "stream.sample_rate",
        "SAMPLE_OUTSIDE_RATE",
        drawn.includes(progress.sample),
        `claim #${progress.sample} was not sampled: the agreed draw (${terms.stream.samplesPerTranche} per tranche) picked ${drawn.map((i) => `#${i}`).join(", ")}`,
      );
    }
    const suites = evidenceOfKind(pkg, "test_suite");
    c.evidence(
      "stream.suite_binding",
      "TEST_SUITE_HASH_MISMATCH",
      suites.length !== 1 ? "missing" : bundleHash(suites[0]!.content) === terms.stream.suite.hash,
      `the package must carry the suite the terms bind (${terms.stream.suite.hash})`,
    );
    const repositories = evidenceOfKind(pkg, "deliverable");
    c.evidence(
      "stream.repository_binding",
      "REPOSITORY_MISMATCH",
      repositories.length !== 1 ? "missing" : bundleHash(repositories[0]!.content) === proof.repoStateHash,
      `the package must carry the repository the proof is anchored to (${proof.repoStateHash})`,
    );
  }
  return { progress, proofHash };
}

/**
 * The provider's conduct on a streamed tranche: a proof about another suite than the terms bind is a false claim;
 * two different signed proofs of one tranche are an equivocation. Each refunds the tranche and slashes the terms'
 * `falseClaimPenalty`. (A false test outcome is Lane 1's: the runner re-runs the sampled claim.)
 */
export function streamConduct(c: Checks, stream: StreamEvidence, pricing: PricingTerms, challenged: ReceiptEvidence): void {
  const r = challenged.receipt.receipt;
  const proof = stream.progress.proof.proof;
  if (!isStreamTerms(pricing)) return;
  c.respondent(`stream[tranche ${r.seq}].suite`, proof.suiteHash === pricing.stream.suite.hash, {
    code: "STREAM_FALSE_CLAIM",
    seq: r.seq,
    slash: penaltyOf(pricing, "STREAM_FALSE_CLAIM"),
    detail: `the proof of tranche ${r.seq} reports on suite ${proof.suiteHash}; the terms bind ${pricing.stream.suite.hash}`,
    refund: r.metering.amount,
  });
  const other = stream.progress.conflicting;
  if (other) {
    const otherHash = progressProofHash(other.proof);
    c.respondent(`stream[tranche ${r.seq}].single_proof`, otherHash === stream.proofHash, {
      code: "STREAM_PROOF_EQUIVOCATION",
      seq: r.seq,
      slash: penaltyOf(pricing, "STREAM_PROOF_EQUIVOCATION"),
      detail: `the provider signed two different proofs of tranche ${r.seq}: ${stream.proofHash} (in its receipt) and ${otherHash}`,
      refund: r.metering.amount,
    });
  }
}
