/**
 * A session case built entirely off-chain (deterministic keys and bytes) with the CaseContext an arbitrator
 * would read for it: for pure Lane 0 and runner tests that need no devnet. Four calls, one at a time (ticket n
 * carries the root over receipts 1..n-1), closed with ticket 4, so receipts 1..3 are provable against the
 * recorded root; the case disputes `seq`.
 */
import { keccak256, type Hex } from "viem";

import { buildSessionPackage } from "../../arbitration/runner/build";
import type { CaseContext } from "../../arbitration/documents/context";
import { packageHash, type ChallengePackage } from "../../arbitration/documents/package";
import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { canonBytes } from "../../channel-client/core/canonical";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { sessionReceiptHash, signSessionReceipt, type SessionReceipt, type SignedSessionReceipt } from "../../channel-client/core/receipt";
import { sessionIdOf, termsHashOf, type ChannelRef, type PricingTerms } from "../../channel-client/core/terms";
import { signPaymentTicket, type SignedPaymentTicket } from "../../channel-client/core/ticket";
import { mnemonicToAccount } from "viem/accounts";

// Hardhat's default mnemonic (test/helpers/fixtures), without loading hardhat: these tests need no network.
const MNEMONIC = "test test test test test test test test test test test junk";
export const PAYER = mnemonicToAccount(MNEMONIC, { addressIndex: 1 });
export const PROVIDER = mnemonicToAccount(MNEMONIC, { addressIndex: 2 });
export const PRICE = 1_000_000n;
export const PRICING: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
export const ESCROW = "0x5FbDB2315678afecb367f032d93F642f64180aa3" as const;
export const DISPUTE_MANAGER = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512" as const;
export const DOMAIN = gasEscrowDomain({ chainId: 31337, verifyingContract: ESCROW });
export const POLICY: Hex = `0x${"ab".repeat(32)}`;
export const REF: ChannelRef = {
  terms: {
    payer: PAYER.address,
    provider: PROVIDER.address,
    funder: PAYER.address,
    asset: "0x0000000000000000000000000000000000000000",
    termsHash: termsHashOf(PRICING),
    policyHash: POLICY,
    challengeDuration: 3600n,
    nonce: 5n,
  },
  openedAt: 42n,
};
export const SESSION_ID = sessionIdOf(DOMAIN, REF);

export const requestOf = (seq: bigint): Uint8Array => canonBytes({ jsonrpc: "2.0", id: Number(seq), method: "tools/call", params: { name: "echo", arguments: { n: Number(seq) } } });
export const outputOf = (seq: bigint): Uint8Array => canonBytes({ content: [{ type: "text", text: `echo ${seq}` }] });

export type Step = { ticket: SignedPaymentTicket; receipt: SignedSessionReceipt; index: number };

/**
 * The session's four steps. `tamper(receipt)` may change the receipt of any seq before the provider signs it
 * (the one the root then commits); the chain links on from whatever was signed. `cumulative(seq)` is ticket
 * seq's cumulative amount (default: each ticket prepays one call at PRICE).
 */
export async function sessionSteps(
  tamper: (r: SessionReceipt) => SessionReceipt = (r) => r,
  cumulative: (seq: bigint) => bigint = (seq) => PRICE * seq,
): Promise<{ steps: Step[]; tree: ReceiptAccumulator }> {
  const tree = new ReceiptAccumulator();
  const steps: Step[] = [];
  let prev: Hex = `0x${"00".repeat(32)}`;
  for (let seq = 1n; seq <= 4n; seq++) {
    const ticket = { sessionId: SESSION_ID, provider: PROVIDER.address, termsHash: REF.terms.termsHash, seq, cumulativeAmount: cumulative(seq), receiptRoot: tree.root() };
    const receipt = tamper({
      sessionId: SESSION_ID,
      seq,
      offloadPacketHash: keccak256(requestOf(seq)),
      outputHash: keccak256(outputOf(seq)),
      policyHash: POLICY,
      modelSnapshotId: "model:echo@1",
      metering: { units: 1n, amount: PRICE },
      prevReceiptHash: prev,
    });
    const signedTicket = await signPaymentTicket({ account: PAYER, domain: DOMAIN, ticket });
    const signedReceipt = await signSessionReceipt({ account: PROVIDER, receipt });
    prev = sessionReceiptHash(receipt);
    steps.push({ ticket: signedTicket, receipt: signedReceipt, index: tree.append(receiptLeaf(receipt, ticket)) });
  }
  return { steps, tree };
}

/**
 * A package disputing `seq` (with its predecessor) against the recorded root of ticket 4 (closed at `amount`,
 * ticket 4's cumulative amount), and its context.
 */
export function sessionCase(
  steps: Step[],
  tree: ReceiptAccumulator,
  seq: bigint,
  extend: (pkg: ChallengePackage) => ChallengePackage = (pkg) => pkg,
  amount: bigint = PRICE * 4n,
): { pkg: ChallengePackage; ctx: CaseContext } {
  const caseId: Hex = `0x${"c0".repeat(32)}`;
  const closing = { deposit: PRICE * 10n, seq: 4n, amount, receiptRoot: tree.prefixRoot(3), feeBps: 0 };
  const i = Number(seq) - 1;
  const receipts = steps.slice(i - 1, i + 1).map((step) => ({ receipt: step.receipt, ticket: step.ticket, leafIndex: BigInt(step.index), merkleProof: tree.proof(step.index, 3) }));
  const pkg = extend(
    buildSessionPackage({
      caseId,
      chainId: 31337n,
      disputeManager: DISPUTE_MANAGER,
      challenger: PAYER.address,
      lane: 0,
      gasEscrow: ESCROW,
      sessionId: SESSION_ID,
      ref: REF,
      pricing: PRICING,
      closing,
      seq,
      receipts,
    }),
  );
  const challenged = steps[i]!;
  const ctx: CaseContext = {
    case: {
      chainId: 31337n,
      disputeManager: DISPUTE_MANAGER,
      caseId,
      kind: "session",
      status: "open",
      subjectId: SESSION_ID,
      challenger: PAYER.address,
      respondent: PROVIDER.address,
      asset: REF.terms.asset,
      value: closing.amount,
      lane: 0,
      packageHash: packageHash(pkg),
      leaf: receiptLeaf(challenged.receipt.receipt, challenged.ticket.ticket),
    },
    gig: null,
    session: { gasEscrow: ESCROW, sessionId: SESSION_ID, closingMatchedAtOpen: true, settledAtOpen: false },
    judgeRuntimeHash: `0x${"00".repeat(32)}`,
    respondentIdentity: null,
    slashCap: null,
  };
  return { pkg, ctx };
}
