/**
 * Lane 0, the hard-constraint gate (whitepaper 8.3.1.2): signatures, bindings to the case, the subject, the
 * terms and the policy, the receipt chain, Merkle inclusion against the root the chain committed, and the
 * completeness of the evidence a verdict needs.
 *
 * Every check is attributed to the party that owes it (decision 0014, "evidence owed, evidence missing"):
 * - An *evidence* check covers what the challenger must supply: it built the package and committed its hash
 *   when it opened the case, so evidence it owed and left out, or supplied invalid (a receipt whose provider
 *   signature does not verify, a proof that does not verify against the committed root, a ticket not signed by
 *   the payer or its granted key, the wrong terms preimage…), is proven against it: a `challengerFaults` code
 *   that decides the case `challenger_fault`, never `undecidable` — nobody profits from their own omission.
 * - A *host* check covers the arbitrator's own problem (the package it was handed is not the one the case
 *   committed, the case is not open, the context it read from the chain is incomplete): it abstains (no
 *   signature), never a verdict.
 * - A *respondent* check that fails on evidence that did verify is a proven violation by the provider (for
 *   example a receipt it signed under another policy): it decides the case at once.
 */

import { isAddressEqual, zeroHash } from "viem";
import { verifyIdentityAnchor } from "../../channel-client/core/identity";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { verifyProof } from "../../channel-client/core/accumulator";
import { verifySessionReceipt } from "../../channel-client/core/receipt";
import { bundleHash } from "../documents/bundle";
import type { CaseContext } from "../documents/context";
import { icsHash } from "../documents/ics";
import { evidenceOfKind, packageHash, type ChallengePackage } from "../documents/package";
import { Checks, type Lane0Result, signatureCheck } from "./lane0-checks";
import { sessionChecks } from "./lane0-session";

// The checks are split by subject: lane0-checks.ts (the result and who owes each check), this file (the case's
// identity and gigs), lane0-session.ts (session steps) and lane0-stream.ts (streamed tranches).
export type { Lane0Result, Lane0Violation } from "./lane0-checks";

/** A file in a gig's deliverable by which the provider declares the request unserviceable (whitepaper 8.3.1.3). */
export const FAULT_RECEIPT_FILE = "FAULT_RECEIPT.json";

/** Runs Lane 0 on a parsed package against what the chain says about the case. */
export async function runLane0(pkg: ChallengePackage, ctx: CaseContext): Promise<Lane0Result> {
  const c = new Checks();
  const onChain = ctx.case;

  // The arbitrator's own inputs: a package that is not the committed one says nothing about either party (the
  // arbitrator fetches the right one); a case that is not undecided is not this arbitrator's to judge.
  c.host(
    "package_hash",
    "PACKAGE_HASH_MISMATCH",
    packageHash(pkg) === onChain.packageHash,
    `the package hashes to ${packageHash(pkg)}; the case committed ${onChain.packageHash}`,
    true,
  );
  c.evidence(
    "case_binding",
    "CASE_MISMATCH",
    pkg.caseId === onChain.caseId && pkg.chainId === onChain.chainId && isAddressEqual(pkg.disputeManager, onChain.disputeManager),
    "the package names another case, chain or dispute manager",
  );
  c.evidence("challenger_binding", "CHALLENGER_MISMATCH", isAddressEqual(pkg.challenger, onChain.challenger), "the package names another challenger");
  // Judged while undecided: before the draw (an arbitrator may run early) or while its panel deliberates.
  c.host("case_open", "CASE_NOT_OPEN", onChain.status === "open" || onChain.status === "deliberating", `the case is ${onChain.status}`, true);

  await identityChecks(c, pkg, ctx);
  if (onChain.kind === "gig") await gigChecks(c, pkg, ctx);
  else await sessionChecks(c, pkg, ctx);
  return c.result();
}

/**
 * The respondent's identity anchor, when the package carries one: both signatures (secp256k1 by the
 * respondent's account, ML-DSA-44 by the key whose hash the registry holds) over the DID the registry holds.
 */
async function identityChecks(c: Checks, pkg: ChallengePackage, ctx: CaseContext): Promise<void> {
  for (const [i, item] of evidenceOfKind(pkg, "identity").entries()) {
    const registered = ctx.respondentIdentity;
    if (!registered) {
      c.evidence(`identity[${i}]`, "IDENTITY_NOT_REGISTERED", "missing", "the respondent has no identity anchor in the registry");
      continue;
    }
    await signatureCheck(c, `identity[${i}]`, "IDENTITY_ANCHOR_INVALID", () =>
      verifyIdentityAnchor(item.content, { account: ctx.case.respondent, ...registered }),
    );
  }
}

/*//////////////////////////////////////////////////////////////
                                 GIGS
//////////////////////////////////////////////////////////////*/

async function gigChecks(c: Checks, pkg: ChallengePackage, ctx: CaseContext): Promise<void> {
  const gig = ctx.gig;
  if (!c.host("gig_context", "CONTEXT_INCOMPLETE", gig !== null, "the arbitrator's context lacks the case's gig (read it from the chain again)")) return;
  const subject = pkg.subject;
  const bound =
    gig !== null &&
    subject.kind === "gig" &&
    isAddressEqual(subject.gigEscrow, gig.gigEscrow) &&
    subject.gigId === gig.gigId &&
    BigInt(ctx.case.subjectId) === gig.gigId;
  if (!c.evidence("subject_binding", "SUBJECT_MISMATCH", bound, "the package's subject is not the case's gig") || !gig) return;

  const icsItems = evidenceOfKind(pkg, "ics");
  const ics = icsItems.length === 1 ? icsItems[0]!.content : null;
  c.evidence(
    "ics_binding",
    icsItems.length === 1 ? "ICS_HASH_MISMATCH" : "MISSING_ICS",
    icsItems.length === 1 ? icsHash(ics!) === gig.icsHash : "missing",
    ics ? `the ICS hashes to ${icsHash(ics)}; the gig is bound to ${gig.icsHash}` : "exactly one ICS is required",
  );
  if (ics) {
    c.evidence(
      "ics_terms",
      "ICS_TERMS_MISMATCH",
      isAddressEqual(ics.asset, gig.asset) && gig.amount <= ics.maxPrice,
      `the gig escrows ${gig.amount} of ${gig.asset}; the ICS allows at most ${ics.maxPrice} of ${ics.asset}`,
    );
  }
  c.evidence(
    "policy_binding",
    "POLICY_HASH_MISMATCH",
    pkg.policyHash === gig.icsHash,
    "a gig's policy_hash is the hash of the ICS it was funded under",
  );
  if (ics) {
    c.evidence(
      "rubric_version",
      "RUBRIC_VERSION_MISMATCH",
      pkg.rubricVersion === ics.rubric.version,
      `the package names rubric version ${pkg.rubricVersion}; the ICS has ${ics.rubric.version}`,
    );
  }

  const deliverables = evidenceOfKind(pkg, "deliverable");
  c.evidence(
    "deliverable_binding",
    deliverables.length === 1 ? "DELIVERABLE_HASH_MISMATCH" : "MISSING_DELIVERABLE",
    deliverables.length === 1 ? bundleHash(deliverables[0]!.content) === gig.deliverableHash : "missing",
    deliverables.length === 1
      ? `the deliverable hashes to ${bundleHash(deliverables[0]!.content)}; the provider delivered ${gig.deliverableHash}`
      : "exactly one deliverable is required",
  );

  const needsSuite = ics?.rubric.items.some((item) => item.kind === "test_suite") ?? false;
  if (ics && needsSuite) {
    const suites = evidenceOfKind(pkg, "test_suite");
    const expected = ics.testSuite?.hash ?? null;
    c.evidence(
      "test_suite_binding",
      suites.length === 1 ? "TEST_SUITE_HASH_MISMATCH" : "MISSING_TEST_SUITE",
      suites.length === 1 && expected !== null ? bundleHash(suites[0]!.content) === expected : "missing",
      suites.length === 1
        ? `the test suite hashes to ${bundleHash(suites[0]!.content)}; the ICS anchors ${expected ?? "none"}`
        : "the rubric requires the hash-anchored test suite",
    );
  }

  // Receipts a gig's provider committed to (optional evidence): each must verify against the gig's root.
  for (const [i, item] of evidenceOfKind(pkg, "receipt").entries()) {
    const e = item.content;
    const leaf = receiptLeaf(e.receipt.receipt, e.ticket.ticket);
    c.evidence(
      `receipt[${i}].merkle_proof`,
      "MERKLE_PROOF_INVALID",
      gig.receiptRoot !== zeroHash && verifyProof(e.merkleProof, gig.receiptRoot, leaf),
      `the receipt's leaf is not in the gig's receipt root ${gig.receiptRoot}`,
    );
    await signatureCheck(c, `receipt[${i}].signature`, "RECEIPT_SIGNATURE_INVALID", () =>
      verifySessionReceipt({ signed: e.receipt, signer: gig.provider }),
    );
  }
}
