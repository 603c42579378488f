/**
 * Builds ChallengePackages the way a challenger's node does: from the artifacts it holds and the case id the
 * DisputeManager will assign (`nextCaseId`), so that the package hash can be committed when the case opens.
 */
import type { SignedFaultStatement } from "../../channel-client/core/fault-statement";
import type { SignedReceiptCommit } from "../../channel-client/core/receipt-commit";
import { keccak256, stringToBytes, zeroHash, type Address, type Hex } from "viem";

import type { ClosingState } from "../../channel-client/chain/escrow";
import { sessionReceiptHash } from "../../channel-client/core/receipt";
import type { ChannelRef, PricingTerms } from "../../channel-client/core/terms";
import { bundleHash, type Bundle } from "../documents/bundle";
import { InvalidPackageError } from "../documents/errors";
import { icsHash, type Ics } from "../documents/ics";
import { makeEvidence, type ChallengePackage, type Claim, type DeliveredReceiptEvidence, type Evidence, type ProgressEvidence, type ReceiptEvidence } from "../documents/package";

type Common = {
  caseId: Hex;
  chainId: bigint;
  disputeManager: Address;
  challenger: Address;
  lane: 0 | 1;
  /** What the challenger asserts; defaults to one claim citing every evidence item. */
  description?: string;
};

function claimOver(evidence: Evidence[], claimId: string, description: string): Claim[] {
  return [{ claimId, description, evidenceRefs: evidence.map((e) => e.artifactId), objectiveFallback: true }];
}

/** A package disputing a gig's delivery: the ICS, the hash-anchored suite (if the rubric has one), the deliverable. */
export function buildGigPackage(
  parameters: Common & { gigEscrow: Address; gigId: bigint; ics: Ics; suite: Bundle | null; deliverable: Bundle },
): ChallengePackage {
  const { ics, suite, deliverable } = parameters;
  const evidence: Evidence[] = [makeEvidence("ics", ics)];
  if (suite) evidence.push(makeEvidence("test_suite", suite));
  evidence.push(makeEvidence("deliverable", deliverable));
  return {
    schema: "ioi.challenge_package/1",
    caseId: parameters.caseId,
    chainId: parameters.chainId,
    disputeManager: parameters.disputeManager,
    subject: { kind: "gig", gigEscrow: parameters.gigEscrow, gigId: parameters.gigId },
    graphId: icsHash(ics),
    stepId: bundleHash(deliverable),
    policyHash: icsHash(ics),
    policyVersion: 1,
    rubricVersion: ics.rubric.version,
    modelSnapshotId: zeroHash,
    lane: parameters.lane,
    challenger: parameters.challenger,
    claims: claimOver(evidence, "deliverable_fails_rubric", parameters.description ?? "The deliverable does not meet the ICS rubric."),
    evidence,
  };
}

/**
 * A package disputing one receipt step of a closing session: the channel (terms, pricing, closing state) and
 * the challenged receipt with its ticket and inclusion proof, plus any neighbouring receipts that show the
 * receipt chain.
 */
export function buildSessionPackage(
  parameters: Common & {
    gasEscrow: Address;
    sessionId: Hex;
    ref: ChannelRef;
    pricing: PricingTerms;
    closing: ClosingState;
    /** The provider's signed receipt commit the payer anchored, when a receipt is proven against its root. */
    commit?: SignedReceiptCommit;
    seq: bigint;
    receipts: ReceiptEvidence[];
    /**
     * The receipts as the payer received them, for the seqs it proves (Lane 0 compares their request and
     * output hashes with the proven receipts': issue 12 item 5). Only those whose seq a proven receipt has.
     */
    delivered?: DeliveredReceiptEvidence[];
    /** The provider's fault statement the payer holds for the challenged seq (the session no-fault path). */
    fault?: SignedFaultStatement;
  },
): ChallengePackage {
  const challenged = parameters.receipts.find((e) => e.receipt.receipt.seq === parameters.seq);
  if (!challenged) {
    throw new InvalidPackageError("receipts", `hold no receipt with seq ${parameters.seq}, the step being challenged.`);
  }
  const evidence: Evidence[] = [
    makeEvidence("channel", {
      ref: parameters.ref,
      pricing: parameters.pricing,
      closing: parameters.closing,
      ...(parameters.commit ? { commit: parameters.commit } : {}),
    }),
    ...parameters.receipts.map((e) => makeEvidence("receipt", e)),
  ];
  const proven = new Set(parameters.receipts.map((e) => e.receipt.receipt.seq));
  for (const d of parameters.delivered ?? []) if (proven.has(d.receipt.receipt.seq)) evidence.push(makeEvidence("delivered_receipt", d));
  if (parameters.fault) {
    if (parameters.fault.statement.seq !== parameters.seq) {
      throw new InvalidPackageError("fault", `is for seq ${parameters.fault.statement.seq}; the step being challenged is seq ${parameters.seq}.`);
    }
    evidence.push(makeEvidence("fault", parameters.fault));
  }
  const receipt = challenged.receipt.receipt;
  return {
    schema: "ioi.challenge_package/1",
    caseId: parameters.caseId,
    chainId: parameters.chainId,
    disputeManager: parameters.disputeManager,
    subject: { kind: "session", gasEscrow: parameters.gasEscrow, sessionId: parameters.sessionId, seq: parameters.seq },
    graphId: parameters.sessionId,
    stepId: sessionReceiptHash(receipt),
    policyHash: parameters.ref.terms.policyHash,
    policyVersion: 1,
    rubricVersion: 0,
    modelSnapshotId: keccak256(stringToBytes(receipt.modelSnapshotId)),
    lane: parameters.lane,
    challenger: parameters.challenger,
    claims: claimOver(evidence, "receipt_violates_session", parameters.description ?? `Receipt ${parameters.seq} breaks the session's binding.`),
    evidence,
  };
}

/**
 * A package disputing a streamed tranche (decision 0037), the session case shape "false progress claim": the
 * session package for the tranche's receipt plus its progress (the signed proof, the tranche request, and either
 * the revealed secret with the sampled claim the re-run disproved — carried with the bound suite and the repository
 * the proof is anchored to — or a second signed proof of the same tranche).
 */
export function buildStreamPackage(
  parameters: Parameters<typeof buildSessionPackage>[0] & {
    progress: ProgressEvidence;
    suite?: Bundle;
    repository?: Bundle;
  },
): ChallengePackage {
  const { progress, suite, repository, ...session } = parameters;
  if (progress.proof.proof.tranche !== parameters.seq) {
    throw new InvalidPackageError("progress", `is for tranche ${progress.proof.proof.tranche}; the step being challenged is seq ${parameters.seq}.`);
  }
  if (progress.sample !== undefined && (!suite || !repository || progress.secret === undefined)) {
    throw new InvalidPackageError("progress", "cites a sampled claim; the revealed secret, the bound suite and the repository must come with it.");
  }
  const base = buildSessionPackage({
    ...session,
    description:
      parameters.description ??
      (progress.conflicting
        ? `The provider signed two different Progress Proofs of tranche ${parameters.seq}.`
        : `Claim #${progress.sample} of tranche ${parameters.seq}'s Progress Proof is false when re-run.`),
  });
  const extra: Evidence[] = [makeEvidence("progress", progress)];
  if (progress.sample !== undefined) extra.push(makeEvidence("test_suite", suite!), makeEvidence("deliverable", repository!));
  const evidence = [...base.evidence, ...extra];
  const claimId = progress.conflicting ? "progress_proof_equivocation" : "false_progress_claim";
  return { ...base, claims: claimOver(evidence, claimId, base.claims[0]!.description), evidence };
}
