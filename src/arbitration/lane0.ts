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
import { getAddress, isAddressEqual, keccak256, zeroHash, type Hex } from "viem";

import { gasEscrowDomain } from "../core/eip712";
import { verifyIdentityAnchor } from "../core/identity";
import { receiptLeaf } from "../core/leaf";
import { verifyProof } from "../core/accumulator";
import { verifyReceiptCommit } from "../core/receipt-commit";
import { verifyFaultStatement, type FaultStatement } from "../core/fault-statement";
import { GENESIS_RECEIPT_HASH, sessionReceiptHash, verifySessionReceipt, type SessionReceipt } from "../core/receipt";
import { describePricing, hasDocumentBody, isStreamTerms, missingReceiptBindings, modelAllowed, penaltyOf, prepaidPerCall, priceFor, priceOf, sessionIdOf, termsHashOf, type PricingTerms } from "../core/terms";
import { verifyPaymentTicket } from "../core/ticket";
import { InvalidSignatureError } from "../core/errors";
import { assertWithinGrant, verifySessionKeyGrantSignature } from "../core/session-key";
import { bundleHash } from "./bundle";
import type { CaseContext, SessionOnChain } from "./context";
import { icsHash } from "./ics";
import { evidenceOfKind, packageHash, type ChallengePackage, type ChannelEvidence, type ProgressEvidence, type ReceiptEvidence } from "./package";
import { progressProofHash, sampleCommitOf, sampledIndices, trancheRequestHash, verifyProgressProof } from "../core/progress-proof";
import type { Lane0Check } from "./resolution";

type CheckStatus = Lane0Check["status"];

/** A provider violation that Lane 0 proved: decides the case for the challenger. */
export type Lane0Violation = {
  code: string;
  detail: string;
  refund: bigint;
  /** The receipt it concerns: refunds of one receipt's violations are not added up (at most its whole amount). */
  seq?: bigint;
  /** The SLA bond slash the session's terms attach to this kind of violation (v2 terms; 0 otherwise). */
  slash?: bigint;
};

export type Lane0Result = {
  checks: Lane0Check[];
  /**
   * Reason codes of every evidence or host check that did not pass (sorted, unique): non-empty means the
   * respondent's conduct was not judged. Each is also in `abstainCodes` or `challengerFaults`.
   */
  reasonCodes: string[];
  /** Codes of the arbitrator's own problems (sorted, unique): non-empty means it abstains (signs nothing). */
  abstainCodes: string[];
  /** Proven violations by the respondent, in check order. */
  violations: Lane0Violation[];
  /**
   * A session case's no-fault claim: the provider's verified fault statement for the challenged receipt (same
   * seq and request hash as the receipt proven into the root). `refund` = the receipt's metered amount less the
   * compute the statement declares spent, 0 if that is not positive. Violations take precedence (runner).
   */
  noFault: { seq: bigint; code: string; refund: bigint } | null;
  /**
   * Codes of what Lane 0 proved against the challenger (sorted, unique): evidence it owed and did not supply or
   * supplied invalid (`MISSING_CHANNEL`, `RECEIPT_SIGNATURE_INVALID`, …), or a case it should not have brought
   * (`DISPUTE_WINDOW_CLOSED`: opened after the terms' dispute window). Non-empty decides the case for the
   * respondent, whatever the receipts show (unless the arbitrator abstains).
   */
  challengerFaults: string[];
};

/** A file in a gig's deliverable by which the provider declares the request unserviceable (whitepaper 8.3.1.3). */
export const FAULT_RECEIPT_FILE = "FAULT_RECEIPT.json";

class Checks {
  readonly checks: Lane0Check[] = [];
  readonly reasons = new Set<string>();
  readonly abstain = new Set<string>();
  readonly violations: Lane0Violation[] = [];
  noFault: Lane0Result["noFault"] = null;
  readonly challengerFaults = new Set<string>();

  /**
   * Records a check of evidence the challenger owes (it built and committed the package): evidence missing or
   * invalid is proven against the challenger with `reason`, and the respondent's conduct is not judged.
   */
  evidence(name: string, reason: string, ok: boolean | "missing", detail: string | null = null): boolean {
    const status: CheckStatus = ok === "missing" ? "missing" : ok ? "pass" : "fail";
    this.checks.push({ name, status, detail: status === "pass" ? null : detail });
    if (status !== "pass") {
      this.reasons.add(reason);
      this.challengerFaults.add(reason);
    }
    return status === "pass";
  }

  /**
   * Records a check of the arbitrator's own inputs (the package it was handed, the case's status, what it read
   * from the chain): a failure makes it abstain with `reason`. Recorded only when it fails, so a run that
   * passes keeps the bytes it had before these checks were split out (`package_hash` keeps its place: `ok`
   * records it whatever the outcome).
   */
  host(name: string, reason: string, ok: boolean, detail: string, always = false): boolean {
    if (ok && !always) return true;
    this.checks.push({ name, status: ok ? "pass" : "fail", detail: ok ? null : detail });
    if (!ok) {
      this.reasons.add(reason);
      this.abstain.add(reason);
    }
    return ok;
  }

  /** Records a check of the respondent's conduct: a failure is a proven violation. */
  respondent(name: string, ok: boolean, violation: Lane0Violation): boolean {
    this.checks.push({ name, status: ok ? "pass" : "fail", detail: ok ? null : violation.detail });
    if (!ok) this.violations.push(violation);
    return ok;
  }

  /** Records a check of the challenger's case: a failure proves the case should not have been brought. */
  challenger(name: string, ok: boolean, code: string, detail: string): boolean {
    this.checks.push({ name, status: ok ? "pass" : "fail", detail: ok ? null : detail });
    if (!ok) this.challengerFaults.add(code);
    return ok;
  }

  result(): Lane0Result {
    return {
      checks: this.checks,
      reasonCodes: [...this.reasons].sort(),
      abstainCodes: [...this.abstain].sort(),
      violations: this.violations,
      noFault: this.noFault,
      challengerFaults: [...this.challengerFaults].sort(),
    };
  }
}

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

/*//////////////////////////////////////////////////////////////
                               SESSIONS
//////////////////////////////////////////////////////////////*/

async function sessionChecks(c: Checks, pkg: ChallengePackage, ctx: CaseContext): Promise<void> {
  const session = ctx.session;
  if (!c.host("session_context", "CONTEXT_INCOMPLETE", session !== null, "the arbitrator's context lacks the case's session (read it from the chain again)")) return;
  const subject = pkg.subject;
  const bound =
    session !== null &&
    subject.kind === "session" &&
    isAddressEqual(subject.gasEscrow, session.gasEscrow) &&
    subject.sessionId === session.sessionId &&
    ctx.case.subjectId === session.sessionId;
  if (!c.evidence("subject_binding", "SUBJECT_MISMATCH", bound, "the package's subject is not the case's session") || !session) return;
  if (subject.kind !== "session") return;

  const channels = evidenceOfKind(pkg, "channel");
  if (!c.evidence("channel_present", "MISSING_CHANNEL", channels.length === 1 ? true : "missing", "exactly one channel is required")) return;
  const channel: ChannelEvidence = channels[0]!.content;
  const { terms } = channel.ref;
  const domain = gasEscrowDomain({ chainId: Number(ctx.case.chainId), verifyingContract: getAddress(session.gasEscrow) });
  c.evidence(
    "channel_binding",
    "CHANNEL_MISMATCH",
    sessionIdOf(domain, channel.ref) === session.sessionId,
    "the channel's terms and opening block do not derive the session id",
  );
  c.evidence(
    "terms_binding",
    "TERMS_HASH_MISMATCH",
    termsHashOf(channel.pricing) === terms.termsHash,
    `the pricing document hashes to ${termsHashOf(channel.pricing)}; the channel binds ${terms.termsHash}`,
  );
  c.evidence(
    "policy_binding",
    "POLICY_HASH_MISMATCH",
    pkg.policyHash === terms.policyHash,
    "the package's policy_hash is not the policy the channel bound",
  );
  c.evidence(
    "respondent_binding",
    "RESPONDENT_MISMATCH",
    isAddressEqual(terms.provider, ctx.case.respondent),
    "the channel's provider is not the case's respondent",
  );
  c.evidence(
    "committed_root",
    "ROOT_NOT_COMMITTED",
    session.closingMatchedAtOpen,
    "the package's closing state (and so its receipt root) was not the session's recorded state when the case opened",
  );

  // The provider's signed receipt commit the payer anchored (decision 0003): a receipt may be proven against
  // its root instead of the recorded one. Only a commit this provider signed for this session counts.
  let commitRoot: Hex | null = null;
  if (channel.commit) {
    const commit = channel.commit;
    const forSession = c.evidence(
      "channel.commit_binding",
      "COMMIT_BINDING_MISMATCH",
      commit.commit.sessionId === session.sessionId && commit.commit.leafCount > 0n,
      `the receipt commit names session ${commit.commit.sessionId} over ${commit.commit.leafCount} receipts`,
    );
    const before = c.reasons.size;
    await signatureCheck(c, "channel.commit_signature", "COMMIT_SIGNATURE_INVALID", () => verifyReceiptCommit(domain, commit, terms.provider));
    if (forSession && c.reasons.size === before) commitRoot = commit.commit.root;
  }

  const receipts = evidenceOfKind(pkg, "receipt")
    .map((item) => item.content)
    .sort((a, b) => (a.receipt.receipt.seq < b.receipt.receipt.seq ? -1 : a.receipt.receipt.seq > b.receipt.receipt.seq ? 1 : 0));
  const challenged = receipts.find((e) => e.receipt.receipt.seq === subject.seq);
  if (!c.evidence("challenged_receipt", "MISSING_RECEIPT", challenged ? true : "missing", `no receipt with seq ${subject.seq}`)) return;

  for (const e of receipts) {
    const at = `receipt[seq ${e.receipt.receipt.seq}]`;
    await receiptEvidenceChecks(c, at, e, channel, domain, session, commitRoot);
  }
  const leaf = receiptLeaf(challenged!.receipt.receipt, challenged!.ticket.ticket);
  c.evidence(
    "challenged_leaf",
    "LEAF_MISMATCH",
    leaf === ctx.case.leaf,
    `the challenged receipt's leaf ${leaf} is not the leaf the contract proved (${ctx.case.leaf})`,
  );
  c.evidence(
    "receipt_seqs",
    "DUPLICATE_RECEIPT",
    receipts.every((e, i) => i === 0 || receipts[i - 1]!.receipt.receipt.seq !== e.receipt.receipt.seq),
    "the package carries two receipts with the same seq",
  );

  const stream = await streamEvidenceChecks(c, pkg, channel, challenged!, session.sessionId);
  const delivered = await deliveredEvidenceChecks(c, pkg, terms.provider, session.sessionId);
  const fault = await faultEvidenceChecks(c, pkg, terms.provider, session.sessionId, challenged!.receipt.receipt, delivered);

  // Only now, on evidence that verified (every receipt signed by the provider and proven into the committed
  // root), judge the provider's conduct.
  if (c.reasons.size > 0) return;
  const pricing = channel.pricing;
  if (!termsDisputeWindow(c, pricing, session)) return;
  const requests = pricing.version === "3" ? requestsInEvidence(pkg) : new Map<Hex, unknown>();
  for (const e of receipts) {
    const r = e.receipt.receipt;
    c.respondent(`receipt[seq ${r.seq}].policy_hash`, r.policyHash === terms.policyHash, {
      code: "RECEIPT_POLICY_MISMATCH",
      seq: r.seq,
      slash: penaltyOf(pricing, "RECEIPT_POLICY_MISMATCH"),
      detail: `receipt ${r.seq} was signed under policy ${r.policyHash}; the session binds ${terms.policyHash}`,
      refund: r.metering.amount,
    });
    // The receipt's amount against what the terms price its metering at (v1: one invocation, one price). Under v3
    // the price depends on the tool the request names (decision 0033): the receipt binds the request through its
    // offloadPacketHash, so the request's bytes in evidence (hashing to it) name the tool; without them the
    // receipt is held to the most any call costs under the terms.
    const price = pricing.version === "3" ? priceFor(pricing, requests.get(r.offloadPacketHash), r.metering.units) : priceOf(pricing, r.metering.units);
    c.respondent(`receipt[seq ${r.seq}].metering`, r.metering.amount <= price, {
      code: "RECEIPT_OVER_METERED",
      seq: r.seq,
      slash: penaltyOf(pricing, "RECEIPT_OVER_METERED"),
      detail:
        pricing.version === "1"
          ? `receipt ${r.seq} meters ${r.metering.amount}; the terms price an invocation at ${price}`
          : `receipt ${r.seq} charges ${r.metering.amount} for ${r.metering.units} units; the terms price that at ${price} (${describePricing(pricing)})`,
      refund: r.metering.amount > price ? r.metering.amount - price : 0n,
    });
    // Terms that bind models or receipt bindings (v2) are judged only under v2, so v1 cases keep their bytes.
    if (hasDocumentBody(pricing)) {
      c.respondent(`receipt[seq ${r.seq}].model`, modelAllowed(pricing, r.modelSnapshotId), {
        code: "RECEIPT_MODEL_SWAP",
      seq: r.seq,
      slash: penaltyOf(pricing, "RECEIPT_MODEL_SWAP"),
        detail: `receipt ${r.seq} was served by model ${JSON.stringify(r.modelSnapshotId)}; the terms expect ${pricing.models.map((m) => JSON.stringify(m)).join(" or ")}`,
        refund: r.metering.amount,
      });
      const missing = missingReceiptBindings(pricing, r);
      c.respondent(`receipt[seq ${r.seq}].required_receipts`, missing.length === 0, {
        code: "RECEIPT_REQUIRED_MISSING",
      seq: r.seq,
      slash: penaltyOf(pricing, "RECEIPT_REQUIRED_MISSING"),
        detail: `receipt ${r.seq} lacks the required ${missing.join(", ")} (an empty commitment proves nothing about that part of the call)`,
        refund: r.metering.amount,
      });
    }
  }
  receiptChain(c, receipts, pricing);
  if (stream) streamConduct(c, stream, pricing, challenged!);
  deliveredComparison(c, receipts, delivered, pricing);
  if (!prepaidExcess(c, receipts, channel, session)) failedCallsPaid(c, receipts, channel, session);

  // The session no-fault path (decision 0015): a verified fault statement for the challenged receipt as proven.
  const proven = challenged!.receipt.receipt;
  if (fault && fault.offloadPacketHash === proven.offloadPacketHash) {
    const metered = proven.metering.amount;
    c.noFault = { seq: proven.seq, code: fault.code, refund: metered > fault.computeSpent ? metered - fault.computeSpent : 0n };
  }
}

/**
 * The requests whose bytes the package carries (beside a delivered receipt), by their hash: what a receipt's
 * `offloadPacketHash` names. Bytes that are not canonical JSON of an object are left out (priced as unknown).
 */
function requestsInEvidence(pkg: ChallengePackage): Map<Hex, unknown> {
  const requests = new Map<Hex, unknown>();
  for (const { content } of evidenceOfKind(pkg, "delivered_receipt")) {
    if (!content.request) continue;
    try {
      const parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(content.request)) as unknown;
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) requests.set(keccak256(content.request), parsed);
    } catch {
      // not a JSON request: the receipt is priced as if its request were unknown
    }
  }
  return requests;
}

/**
 * Receipts as the payer received them (evidence checks): each signed by the channel's provider, for this
 * session, at most one per seq, and — when the package carries the request or output bytes — the bytes hash
 * to the receipt's `offloadPacketHash` / `outputHash`. Returns them by seq.
 */
async function deliveredEvidenceChecks(c: Checks, pkg: ChallengePackage, provider: Hex, sessionId: Hex): Promise<Map<bigint, SessionReceipt>> {
  const bySeq = new Map<bigint, SessionReceipt>();
  const items = evidenceOfKind(pkg, "delivered_receipt")
    .map((item) => item.content)
    .sort((a, b) => (a.receipt.receipt.seq < b.receipt.receipt.seq ? -1 : a.receipt.receipt.seq > b.receipt.receipt.seq ? 1 : 0));
  for (const d of items) {
    const r = d.receipt.receipt;
    const at = `delivered[seq ${r.seq}]`;
    await signatureCheck(c, `${at}.signature`, "DELIVERED_RECEIPT_SIGNATURE_INVALID", () => verifySessionReceipt({ signed: d.receipt, signer: provider }));
    c.evidence(`${at}.binding`, "DELIVERED_RECEIPT_BINDING_MISMATCH", r.sessionId === sessionId && !bySeq.has(r.seq), bySeq.has(r.seq) ? `a second delivered receipt with seq ${r.seq}` : `the delivered receipt names session ${r.sessionId}`);
    if (d.request) {
      const hash = keccak256(d.request);
      c.evidence(`${at}.request_bytes`, "DELIVERED_BYTES_MISMATCH", hash === r.offloadPacketHash, `the request bytes hash to ${hash}; the delivered receipt binds ${r.offloadPacketHash}`);
    }
    if (d.output) {
      const hash = keccak256(d.output);
      c.evidence(`${at}.output_bytes`, "DELIVERED_BYTES_MISMATCH", hash === r.outputHash, `the output bytes hash to ${hash}; the delivered receipt binds ${r.outputHash}`);
    }
    if (!bySeq.has(r.seq)) bySeq.set(r.seq, r);
  }
  return bySeq;
}

/**
 * The provider's fault statement (evidence checks): at most one, signed by the channel's provider, for this
 * session and the challenged seq, naming the request of the challenged receipt as proven or as delivered (a
 * statement for the delivered request of an equivocated step still verifies; the mismatch then decides).
 */
async function faultEvidenceChecks(
  c: Checks,
  pkg: ChallengePackage,
  provider: Hex,
  sessionId: Hex,
  challenged: SessionReceipt,
  delivered: Map<bigint, SessionReceipt>,
): Promise<FaultStatement | null> {
  const items = evidenceOfKind(pkg, "fault");
  if (items.length === 0) return null;
  if (!c.evidence("fault.count", "FAULT_STATEMENT_INVALID", items.length === 1, `${items.length} fault statements; a case is judged on at most one`)) return null;
  const signed = items[0]!.content;
  const s = signed.statement;
  const before = c.reasons.size;
  await signatureCheck(c, "fault.signature", "FAULT_STATEMENT_INVALID", () => verifyFaultStatement({ signed, signer: provider }));
  const request = [challenged.offloadPacketHash, delivered.get(challenged.seq)?.offloadPacketHash];
  c.evidence(
    "fault.binding",
    "FAULT_STATEMENT_MISMATCH",
    s.sessionId === sessionId && s.seq === challenged.seq && request.includes(s.offloadPacketHash),
    `the fault statement names session ${s.sessionId} seq ${s.seq} request ${s.offloadPacketHash}; the challenged receipt is seq ${challenged.seq} for request ${challenged.offloadPacketHash}`,
  );
  return c.reasons.size === before ? s : null;
}

/**
 * A receipt proven into the committed root against the receipt the provider delivered for the same seq
 * (respondent checks): both carry the provider's verified signature, so a different request or output hash
 * means it signed two statements of one step, and the root commits the one the payer never accepted. The
 * refund is the proven receipt's metered amount; the slash the terms' penalty for the code.
 */
function deliveredComparison(c: Checks, receipts: ReceiptEvidence[], delivered: Map<bigint, SessionReceipt>, pricing: PricingTerms): void {
  for (const e of receipts) {
    const r = e.receipt.receipt;
    const d = delivered.get(r.seq);
    if (!d) continue;
    c.respondent(`receipt[seq ${r.seq}].request`, r.offloadPacketHash === d.offloadPacketHash, {
      code: "RECEIPT_REQUEST_MISMATCH",
      seq: r.seq,
      slash: penaltyOf(pricing, "RECEIPT_REQUEST_MISMATCH"),
      detail: `receipt ${r.seq} in the committed root answers request ${r.offloadPacketHash}; the receipt the provider delivered for seq ${r.seq} answers ${d.offloadPacketHash}`,
      refund: r.metering.amount,
    });
    c.respondent(`receipt[seq ${r.seq}].output`, r.outputHash === d.outputHash, {
      code: "RECEIPT_OUTPUT_MISMATCH",
      seq: r.seq,
      slash: penaltyOf(pricing, "RECEIPT_OUTPUT_MISMATCH"),
      detail: `receipt ${r.seq} in the committed root commits output ${r.outputHash}; the receipt the provider delivered for seq ${r.seq} commits ${d.outputHash}`,
      refund: r.metering.amount,
    });
  }
}

/**
 * RECEIPT_PREPAID_EXCESS (decision 0026, amendment): under v2 terms every ticket prepays the cap per call, so a
 * unilateral close on the newest ticket pays the provider the caps, not what its own receipts charged. When the
 * package carries *every* receipt from 1 up (a complete prefix 1..m, each signed by the provider and proven into
 * the committed root or its anchored commit), what the recorded ticket (seq k) may keep is known exactly: the
 * receipts' metered sum plus, for the calls k − m whose receipts are not in evidence, the cap each. Anything the
 * close pays above that is refunded; there is no penalty (the payer's ticket authorised the amount; the provider's
 * receipts prove it was not owed). Not judged: v1 terms (a ticket adds what the receipt charges), a cooperatively
 * settled session (the co-signed amount is the receipts' sum), a package without a complete prefix (the sum is
 * not known; the check is not recorded, so such a case's bytes do not change).
 */
function prepaidExcess(c: Checks, receipts: ReceiptEvidence[], channel: ChannelEvidence, session: SessionOnChain): boolean {
  const pricing = channel.pricing;
  if (!hasDocumentBody(pricing) || session.settledAtOpen === true) return false;
  const { seq: k, amount, deposit } = channel.closing;
  const paid = amount < deposit ? amount : deposit;
  const counted = receipts.filter((e) => e.receipt.receipt.seq <= k);
  if (!counted.every((e, i) => e.receipt.receipt.seq === BigInt(i + 1))) return false;
  const m = BigInt(counted.length);
  const metered = counted.reduce((sum, e) => sum + e.receipt.receipt.metering.amount, 0n);
  // A call without a receipt in evidence may keep what one call can prepay: the cap (v3: or a dearer tool's price).
  const most = prepaidPerCall(pricing);
  const owed = metered + (k - m) * most;
  const excess = paid > owed ? paid - owed : 0n;
  c.respondent("closing.prepaid_excess", excess === 0n, {
    code: "RECEIPT_PREPAID_EXCESS",
    detail: `the close pays ${paid} on ticket ${k}; receipts 1..${m} charged ${metered}${k > m ? ` and ${k - m} call(s) without a receipt in evidence may keep ${pricing.version === "3" ? "" : "the cap "}${most} each` : ""}, so ${owed} is owed`,
    refund: excess,
    slash: 0n,
  });
  return true;
}

/**
 * FAILED_CALL_PAID (decision 0022, amendment "failed calls cannot be sold"): a failed call is receipted with a
 * zero charge, but its ticket prepaid it (ticket n prepays call n, decision 0003), and a unilateral close on a
 * ticket k ≥ n pays the provider what ticket n prepaid. For every zero-charge receipt n ≤ k in evidence whose
 * predecessor's ticket is in evidence too (or n = 1), what the close paid for call n is known exactly:
 * `min(t_n, paid) − min(t_{n−1}, paid)`, where `t` is a ticket's cumulative amount and `paid` what the recorded
 * close pays (its amount, at most the deposit). That is refunded (a respondent violation, one per receipt, no
 * penalty: the provider's own receipt proves nothing was owed). A failed call nothing paid for — after the
 * recorded ticket, a ticket that added 0, a cooperatively settled session (the co-signed amount is the receipts'
 * sum) — records a passing check and stays the provider's defence. Not recorded for receipts that charge
 * something, so cases without a failed call keep their bytes; not judged where `prepaidExcess` judged (v2 with a
 * complete prefix: its excess already counts each failed call's prepaid cap).
 */
function failedCallsPaid(c: Checks, receipts: ReceiptEvidence[], channel: ChannelEvidence, session: SessionOnChain): void {
  if (session.settledAtOpen === true) return;
  const { seq: k, amount, deposit } = channel.closing;
  const paid = amount < deposit ? amount : deposit;
  const upToPaid = (x: bigint): bigint => (x < paid ? x : paid);
  const bySeq = new Map(receipts.map((e) => [e.receipt.receipt.seq, e] as const));
  for (const e of receipts) {
    const r = e.receipt.receipt;
    if (r.metering.amount !== 0n || r.seq > k) continue;
    const previous = r.seq === 1n ? 0n : bySeq.get(r.seq - 1n)?.ticket.ticket.cumulativeAmount;
    if (previous === undefined) continue; // what call n − 1's ticket had paid is not in evidence
    const through = upToPaid(e.ticket.ticket.cumulativeAmount);
    const before = upToPaid(previous);
    const prepaid = through > before ? through - before : 0n;
    c.respondent(`receipt[seq ${r.seq}].failed_call_paid`, prepaid === 0n, {
      code: "FAILED_CALL_PAID",
      seq: r.seq,
      slash: 0n,
      detail: `receipt ${r.seq} charges 0 (a failed call), but its ticket prepaid ${prepaid} of the ${paid} the close on ticket ${k} pays`,
      refund: prepaid,
    });
  }
}

/**
 * The terms' dispute window (decision 0026, amendment): a case on a cooperatively settled session must open
 * within `disputes.windowAfterSettlement` of the settlement. The chain enforces only its own
 * `settledDisputeWindow`, so the effective window is the shorter of the two and Lane 0 judges the terms' part.
 * A case opened after it is decided against the challenger — a decidable fact, never a fail-safe; only a
 * context without the two times (not read from the chain: the arbitrator's own problem) makes it abstain. The bounds are inclusive,
 * as the contract's (`block.timestamp > settledAt + window` is late). Judged under v2 terms only (v1 has no
 * window) and only for settled sessions (a closing session's window is the chain's challenge period).
 */
function termsDisputeWindow(c: Checks, pricing: PricingTerms, session: SessionOnChain): boolean {
  if (!hasDocumentBody(pricing) || session.settledAtOpen !== true) return true;
  const { settledAt, caseOpenedAt } = session;
  if (settledAt === undefined || caseOpenedAt === undefined) {
    c.host("dispute_window", "SETTLEMENT_TIME_UNKNOWN", false, "the arbitrator's context lacks the settlement time or the case's opening time");
    return false;
  }
  const until = settledAt + pricing.disputes.windowAfterSettlement;
  return c.challenger(
    "dispute_window",
    caseOpenedAt <= until,
    "DISPUTE_WINDOW_CLOSED",
    `the case opened at ${caseOpenedAt}; the terms allow disputes of this settlement (at ${settledAt}) until ${until}`,
  );
}

async function receiptEvidenceChecks(
  c: Checks,
  at: string,
  e: ReceiptEvidence,
  channel: ChannelEvidence,
  domain: ReturnType<typeof gasEscrowDomain>,
  session: SessionOnChain,
  commitRoot: Hex | null,
): Promise<void> {
  const { sessionId } = session;
  const { terms } = channel.ref;
  const r = e.receipt.receipt;
  const t = e.ticket.ticket;
  const leaf = receiptLeaf(r, t);
  const recordedProof = session.closingMatchedAtOpen && verifyProof(e.merkleProof, channel.closing.receiptRoot, leaf);
  await signatureCheck(c, `${at}.receipt_signature`, "RECEIPT_SIGNATURE_INVALID", () =>
    verifySessionReceipt({ signed: e.receipt, signer: terms.provider }),
  );
  // A ticket signed by a session key (decision 0025) counts as the payer's when the payer's grant for this
  // session names its signer and covers its amount. Expiry and revocation are not judged here: the chain
  // accepted the ticket within the key's grace when the close or challenge recorded it.
  //
  // A payer that is a contract wallet (decision 0035) signs with whatever its ERC-1271 `isValidSignature` accepts,
  // which no arbitrator can judge from the package alone, and may answer differently at another block. Its
  // approval is therefore taken from the chain, never from the host: the escrow recorded the closing root only
  // after the wallet approved (at that block, by ERC-1271) the ticket or summary carrying it — or the grant of the
  // key that signed it — so a ticket proven under that recorded root is the wallet's. A wallet's grant counts when
  // the escrow had registered it by the case's block or when its ticket is so proven. Anything else (a leaf only
  // under the provider's own anchored commit) is not the wallet's.
  const grant = e.sessionKey;
  const wallet = session.payerIsContract === true;
  const walletApproval = async (digest: Hex): Promise<void> => {
    if (recordedProof || (grant !== undefined && session.registeredWalletGrants?.includes(digest) === true)) return;
    throw new InvalidSignatureError(
      `Payer ${terms.payer} is a contract wallet: its signature counts only through the escrow's record (a leaf under the recorded root, or a registered grant).`,
    );
  };
  await signatureCheck(c, `${at}.ticket_signature`, "TICKET_SIGNATURE_INVALID", async () => {
    if (!grant) {
      if (wallet) return walletApproval(zeroHash);
      return verifyPaymentTicket({ domain, signed: e.ticket, signer: terms.payer });
    }
    await verifySessionKeyGrantSignature({ domain, signed: grant, payer: terms.payer, sessionId, ...(wallet ? { check: walletApproval } : {}) });
    await verifyPaymentTicket({ domain, signed: e.ticket, signer: grant.grant.key });
    assertWithinGrant(grant, t.cumulativeAmount, undefined);
  });
  c.evidence(
    `${at}.binding`,
    "RECEIPT_BINDING_MISMATCH",
    r.sessionId === sessionId &&
      t.sessionId === sessionId &&
      isAddressEqual(t.provider, terms.provider) &&
      t.termsHash === terms.termsHash &&
      t.seq === r.seq,
    "the receipt and ticket must name this session, its provider and terms, and the same seq",
  );
  c.evidence(
    `${at}.merkle_proof`,
    "MERKLE_PROOF_INVALID",
    verifyProof(e.merkleProof, channel.closing.receiptRoot, leaf) || (commitRoot !== null && verifyProof(e.merkleProof, commitRoot, leaf)),
    commitRoot === null
      ? `the leaf is not in the committed root ${channel.closing.receiptRoot}`
      : `the leaf is in neither the committed root ${channel.closing.receiptRoot} nor the provider's anchored commit root ${commitRoot}`,
  );
}

/**
 * The receipt chain (a respondent check): receipt 1 must start at genesis, and each receipt whose predecessor
 * (seq − 1) is in the evidence must link to it by `prevReceiptHash`. Both receipts carry the provider's verified
 * signature, so a link that skips its own previous receipt (whitepaper 9.2.6, lying by omission) is the
 * provider's fault; it needs no reference to leaf positions. The refund is the broken receipt's metered amount.
 */
function receiptChain(c: Checks, receipts: ReceiptEvidence[], pricing: PricingTerms): void {
  receipts.forEach((e, i) => {
    const r = e.receipt.receipt;
    const previous = receipts[i - 1]?.receipt.receipt;
    let expected: Hex | null = null;
    if (r.seq === 1n) expected = GENESIS_RECEIPT_HASH;
    else if (previous && previous.seq + 1n === r.seq) expected = sessionReceiptHash(previous);
    if (expected === null) return;
    c.respondent(`receipt[seq ${r.seq}].chain`, r.prevReceiptHash === expected, {
      code: "RECEIPT_CHAIN_GAP",
      seq: r.seq,
      slash: penaltyOf(pricing, "RECEIPT_CHAIN_GAP"),
      detail:
        r.seq === 1n
          ? `receipt 1 links to ${r.prevReceiptHash}, not to genesis`
          : `receipt ${r.seq} links to ${r.prevReceiptHash}, not to receipt ${r.seq - 1n} (${expected})`,
      refund: r.metering.amount,
    });
  });
}

async function signatureCheck(c: Checks, name: string, reason: string, verify: () => Promise<void>): Promise<void> {
  try {
    await verify();
    c.evidence(name, reason, true);
  } catch (error) {
    c.evidence(name, reason, false, error instanceof Error ? (error as { shortMessage?: string }).shortMessage ?? error.message : String(error));
  }
}

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
async function streamEvidenceChecks(c: Checks, pkg: ChallengePackage, channel: ChannelEvidence, challenged: ReceiptEvidence, sessionId: Hex): Promise<StreamEvidence | null> {
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
function streamConduct(c: Checks, stream: StreamEvidence, pricing: PricingTerms, challenged: ReceiptEvidence): void {
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
