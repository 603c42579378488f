/**
 * Lane 0's checks of a session case (split from arbitration/lanes/lane0.ts): the channel, the challenged receipt and
 * ticket, delivered and fault evidence, the receipt chain, prepaid excess, failed calls and the dispute window.
 */
import { getAddress, isAddressEqual, keccak256, zeroHash, type Hex } from "viem";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { verifyProof } from "../../channel-client/core/accumulator";
import { verifyReceiptCommit } from "../../channel-client/core/receipt-commit";
import { verifyFaultStatement, type FaultStatement } from "../../channel-client/core/fault-statement";
import { GENESIS_RECEIPT_HASH, sessionReceiptHash, verifySessionReceipt, type SessionReceipt } from "../../channel-client/core/receipt";
import {
  describePricing,
  hasDocumentBody,
  missingReceiptBindings,
  modelAllowed,
  penaltyOf,
  prepaidPerCall,
  priceFor,
  priceOf,
  sessionIdOf,
  termsHashOf,
  type PricingTerms,
} from "../../channel-client/core/terms";
import { verifyPaymentTicket } from "../../channel-client/core/ticket";
import { InvalidSignatureError } from "../../channel-client/core/errors";
import { assertWithinGrant, verifySessionKeyGrantSignature } from "../../channel-client/core/session-key";
import type { CaseContext, SessionOnChain } from "../documents/context";
import { evidenceOfKind, type ChallengePackage, type ChannelEvidence, type ReceiptEvidence } from "../documents/package";
import { Checks, signatureCheck } from "./lane0-checks";
import { streamConduct, streamEvidenceChecks } from "./lane0-stream";

/*//////////////////////////////////////////////////////////////
                               SESSIONS
//////////////////////////////////////////////////////////////*/

export async function sessionChecks(c: Checks, pkg: ChallengePackage, ctx: CaseContext): Promise<void> {
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
