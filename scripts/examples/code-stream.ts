/**
 * A streamed coding job (issue 32, decision 0037): the same hash-anchored 12-test suite as the code gig, paid per
 * tranche under v4 terms. Tranche 1 leaves the repository passing 9 of 12 tests, tranche 2 passes all 12.
 */
import { parseEther, type Hex } from "viem";

import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import type { TermsDocumentV4 } from "../../channel-client/core/terms";
import { FAILING_DELIVERABLE, PASSING_DELIVERABLE, SUITE } from "./code-gig";

export { SUITE };

/** The repository after each tranche of honest work. */
export const REPOSITORY_BY_TRANCHE: readonly Bundle[] = [FAILING_DELIVERABLE, PASSING_DELIVERABLE, PASSING_DELIVERABLE, PASSING_DELIVERABLE];

/** A repository whose every function answers null: it fails all 12 tests (what a lying provider claims passes). */
export const BROKEN_REPOSITORY: Bundle = {
  files: { "strings.js": '"use strict";\nexports.slugify = () => null;\nexports.capitalize = () => null;\nexports.truncate = () => null;\n' },
};

export const STREAM_MODEL = "agent:coder@2026-11";

/** 0.01 ETH per 60-second tranche, one tranche in flight, 2 of 12 claims sampled, 30 LGAS per false claim. */
export function codeStreamTerms(parameters: { windowAfterSettlement: bigint; price?: bigint; penalty?: bigint; samplesPerTranche?: number; tranchesInFlight?: number }): TermsDocumentV4 {
  const price = parameters.price ?? parseEther("0.01");
  return {
    version: "4",
    pricing: { perInvocation: price, perUnit: null, capPerCall: price },
    models: [STREAM_MODEL],
    disputes: { windowAfterSettlement: parameters.windowAfterSettlement, penalties: {}, refundsFromBond: true },
    requiredReceipts: ["rrsa_request_binding", "rrsa_output_commitment"],
    stream: {
      trancheSeconds: 60n,
      tranchesInFlight: parameters.tranchesInFlight ?? 1,
      samplesPerTranche: parameters.samplesPerTranche ?? 2,
      suite: { hash: bundleHash(SUITE) as Hex, command: ["node", "run.js"], stepBudget: 1_000, maxOutputBytes: 65_536 },
      falseClaimPenalty: parameters.penalty ?? parseEther("30"),
    },
  };
}
