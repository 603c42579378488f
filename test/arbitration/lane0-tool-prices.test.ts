/**
 * Lane 0 under v3 terms (issue 30 item 2, decision 0033), off-chain: a price per MCP tool. The receipt binds the
 * tool through its request hash (`offloadPacketHash = keccak256(canon(request))`); with the request's bytes in
 * evidence, a receipt charging more than the price of the tool it names is RECEIPT_OVER_METERED and the excess is
 * refunded; a listing call charged anything likewise. Without the bytes, a receipt is held only to the dearest
 * call the terms allow.
 */
import { expect } from "chai";
import { keccak256, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { buildSessionPackage } from "../../arbitration/runner/build";
import type { CaseContext } from "../../arbitration/documents/context";
import { makeEvidence, packageHash, packageToJson, parsePackage, type ChallengePackage } from "../../arbitration/documents/package";
import { arbitrate } from "../../arbitration/runner/runner";
import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { canon, canonBytes } from "../../channel-client/core/canonical";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { sessionReceiptHash, signSessionReceipt, type SignedSessionReceipt } from "../../channel-client/core/receipt";
import { callPricingOf, prepaidFor, priceFor, pricingTermsFromJson, pricingTermsToJson, sessionIdOf, termsHashOf, type ChannelRef, type TermsDocumentV3, type TermsDocumentV3Json } from "../../channel-client/core/terms";
import { signPaymentTicket, type SignedPaymentTicket } from "../../channel-client/core/ticket";

const MNEMONIC = "test test test test test test test test test test test junk";
const PAYER = mnemonicToAccount(MNEMONIC, { addressIndex: 1 });
const PROVIDER = mnemonicToAccount(MNEMONIC, { addressIndex: 2 });
const ESCROW = "0x5FbDB2315678afecb367f032d93F642f64180aa3" as const;
const DISPUTE_MANAGER = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512" as const;
const DOMAIN = gasEscrowDomain({ chainId: 31337, verifyingContract: ESCROW });
const POLICY: Hex = `0x${"ab".repeat(32)}`;
const CHEAP = 100n;
const DEAR = 500n;
const CAP = 300n;
const TERMS: TermsDocumentV3 = {
  version: "3",
  pricing: { perInvocation: CAP, perUnit: null, capPerCall: CAP, tools: { cheap: CHEAP, dear: DEAR } },
  models: ["model:tools@1"],
  disputes: { windowAfterSettlement: 3600n, penalties: {}, refundsFromBond: false },
  requiredReceipts: ["rrsa_request_binding"],
};
const REF: ChannelRef = {
  terms: { payer: PAYER.address, provider: PROVIDER.address, funder: PAYER.address, asset: "0x0000000000000000000000000000000000000000", termsHash: termsHashOf(TERMS), policyHash: POLICY, challengeDuration: 3600n, nonce: 9n },
  openedAt: 42n,
};
const SESSION_ID = sessionIdOf(DOMAIN, REF);
const RUNTIME = `0x${"11".repeat(32)}` as const;

const requestOf = (seq: bigint, method = "tools/call", tool = "cheap"): Uint8Array =>
  canonBytes({ jsonrpc: "2.0", id: Number(seq), method, params: method === "tools/call" ? { name: tool, arguments: { n: Number(seq) } } : {} });

type Step = { ticket: SignedPaymentTicket; receipt: SignedSessionReceipt; index: number; request: Uint8Array };

/** Four calls of `cheap`; call 2 is `second` (its request) and charges `charge2`. Ticket n prepays CHEAP, ticket 2 also `charge2`. */
async function steps(second: Uint8Array, charge2: bigint) {
  const tree = new ReceiptAccumulator();
  const out: Step[] = [];
  let prev: Hex = `0x${"00".repeat(32)}`;
  for (let seq = 1n; seq <= 4n; seq++) {
    const request = seq === 2n ? second : requestOf(seq);
    const cumulative = CHEAP * seq + (seq >= 2n ? charge2 : 0n);
    const ticket = { sessionId: SESSION_ID, provider: PROVIDER.address, termsHash: REF.terms.termsHash, seq, cumulativeAmount: cumulative, receiptRoot: tree.root() };
    const receipt = {
      sessionId: SESSION_ID,
      seq,
      offloadPacketHash: keccak256(request),
      outputHash: keccak256(canonBytes({ content: [{ type: "text", text: `r${seq}` }] })),
      policyHash: POLICY,
      modelSnapshotId: "model:tools@1",
      metering: { units: 1n, amount: seq === 2n ? charge2 : CHEAP },
      prevReceiptHash: prev,
    };
    const signedTicket = await signPaymentTicket({ account: PAYER, domain: DOMAIN, ticket });
    const signedReceipt = await signSessionReceipt({ account: PROVIDER, receipt });
    prev = sessionReceiptHash(receipt);
    out.push({ ticket: signedTicket, receipt: signedReceipt, index: tree.append(receiptLeaf(receipt, ticket)), request });
  }
  return { steps: out, tree };
}

/** A Lane 0 case on receipt 2 (closed on ticket 4); `bytes`: the delivered receipts carry their requests. */
async function judge(s: { steps: Step[]; tree: ReceiptAccumulator }, bytes: boolean) {
  const caseId: Hex = `0x${"c3".repeat(32)}`;
  const t4 = s.steps[3]!.ticket.ticket.cumulativeAmount;
  const closing = { deposit: 10_000n, seq: 4n, amount: t4, receiptRoot: s.tree.prefixRoot(3), feeBps: 0 };
  const receipts = s.steps.slice(0, 2).map((step) => ({ receipt: step.receipt, ticket: step.ticket, leafIndex: BigInt(step.index), merkleProof: s.tree.proof(step.index, 3) }));
  const base = buildSessionPackage({ caseId, chainId: 31337n, disputeManager: DISPUTE_MANAGER, challenger: PAYER.address, lane: 0, gasEscrow: ESCROW, sessionId: SESSION_ID, ref: REF, pricing: TERMS, closing, seq: 2n, receipts });
  const delivered = s.steps.slice(0, 2).map((step) => makeEvidence("delivered_receipt", { receipt: step.receipt, ...(bytes ? { request: step.request } : {}) }));
  const pkg: ChallengePackage = parsePackage(canon(packageToJson({ ...base, evidence: [...base.evidence, ...delivered] })));
  const challenged = s.steps[1]!;
  const ctx: CaseContext = {
    case: { chainId: 31337n, disputeManager: DISPUTE_MANAGER, caseId, kind: "session", status: "open", subjectId: SESSION_ID, challenger: PAYER.address, respondent: PROVIDER.address, asset: REF.terms.asset, value: t4, lane: 0, packageHash: packageHash(pkg), leaf: receiptLeaf(challenged.receipt.receipt, challenged.ticket.ticket) },
    gig: null,
    session: { gasEscrow: ESCROW, sessionId: SESSION_ID, closingMatchedAtOpen: true, settledAtOpen: false },
    judgeRuntimeHash: `0x${"00".repeat(32)}`,
    respondentIdentity: null,
    slashCap: null,
  };
  return arbitrate({ pkg, ctx, actor: "arbitrator", judgeRuntime: RUNTIME });
}

const failed = (run: Awaited<ReturnType<typeof judge>>) => run.resolution.lane0.checks.filter((c) => c.status !== "pass").map((c) => c.name);

describe("terms v3: a price per MCP tool (decision 0033)", function () {
  it("prices a call by the tool its request names; listing calls are free; round-trips through the schema", function () {
    const call = (name: string) => ({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name } });
    expect(callPricingOf(TERMS, call("dear"))).to.deep.equal({ kind: "tool", tool: "dear", price: DEAR });
    expect(prepaidFor(TERMS, call("cheap"))).to.equal(CHEAP);
    expect(prepaidFor(TERMS, call("unlisted"))).to.equal(CAP);
    expect(prepaidFor(TERMS, { method: "tools/list" })).to.equal(0n);
    expect(priceFor(TERMS, { method: "prompts/list" }, 9n)).to.equal(0n);
    expect(priceFor(TERMS, call("toString"), 1n)).to.equal(CAP); // an inherited property is no tool
    expect(priceFor(TERMS, undefined, 1n)).to.equal(DEAR); // request unknown: the dearest call
    const json = pricingTermsToJson(TERMS) as TermsDocumentV3Json;
    expect(json.version).to.equal("3");
    expect(termsHashOf(pricingTermsFromJson(JSON.parse(JSON.stringify(json))))).to.equal(termsHashOf(TERMS));
    // Published bounds = code's: a price beyond uint128, or a tool name over 128 characters, is refused.
    const tooDear = { ...json, pricing: { ...json.pricing, tools: { cheap: (1n << 128n).toString() } } };
    expect(() => pricingTermsFromJson(tooDear)).to.throw(/tools\.cheap/);
    const longName = { ...json, pricing: { ...json.pricing, tools: { ["x".repeat(129)]: "1" } } };
    expect(() => pricingTermsFromJson(longName)).to.throw();
  });

  it("a receipt charging the dear tool's price for a call of the cheap one → RECEIPT_OVER_METERED, the excess refunded", async function () {
    const run = await judge(await steps(requestOf(2n, "tools/call", "cheap"), DEAR), true);
    expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    expect(failed(run)).to.deep.equal(["receipt[seq 2].metering"]);
    expect(run.message).to.deep.include({ verdict: 1, refund: DEAR - CHEAP, slash: 0n });
  });

  it("a listing call (tools/list) charged anything → RECEIPT_OVER_METERED, all of it refunded", async function () {
    const run = await judge(await steps(requestOf(2n, "tools/list"), 7n), true);
    expect(failed(run)).to.deep.equal(["receipt[seq 2].metering"]);
    expect(run.message).to.deep.include({ verdict: 1, refund: 7n });
  });

  it("the same receipts at their tools' prices pass; without the request bytes a receipt is held to the dearest call", async function () {
    const honest = await judge(await steps(requestOf(2n, "tools/call", "dear"), DEAR), true);
    expect(failed(honest)).to.deep.equal([]);
    expect(honest.resolution.aggregate.finalVerdict).to.equal("challenger_fault");
    // No bytes: the charge of DEAR for a cheap call cannot be told from an honest dear call (decision 0033).
    const blind = await judge(await steps(requestOf(2n, "tools/call", "cheap"), DEAR), false);
    expect(failed(blind)).to.deep.equal([]);
    const over = await judge(await steps(requestOf(2n, "tools/call", "cheap"), DEAR + 1n), false);
    expect(failed(over)).to.deep.equal(["receipt[seq 2].metering"]);
    expect(over.message).to.deep.include({ refund: 1n });
  });
});
