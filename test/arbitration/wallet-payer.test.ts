/**
 * Lane 0 for a payer that is a contract wallet (decision 0035), off-chain: the wallet's signature (here an
 * owner-key wallet's, the owner's signature of the digest) is never judged by recovery or by asking a node; a
 * ticket counts as the wallet's when its leaf is proven under the root the escrow recorded (which the escrow did
 * only after the wallet's ERC-1271 approval), and `payerIsContract` is the arbitrator's chain read at the case's
 * block, as `closingMatchedAtOpen` is. The chain-backed flows are in test/adversarial/smart-account-payers.test.ts.
 */
import { expect } from "chai";
import { concat, keccak256, type Address, type Hex } from "viem";

import { buildSessionPackage } from "../../arbitration/runner/build";
import type { CaseContext } from "../../arbitration/documents/context";
import { packageHash, packageToJson, parsePackage, type ChallengePackage } from "../../arbitration/documents/package";
import { resolutionHash } from "../../arbitration/lanes/resolution";
import { arbitrate, type ArbitrationRun } from "../../arbitration/runner/runner";
import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { canon } from "../../channel-client/core/canonical";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { sessionReceiptHash, signSessionReceipt, type SessionReceipt } from "../../channel-client/core/receipt";
import { sessionKeyGrantDigest, signSessionKeyGrant, type SignedSessionKeyGrant } from "../../channel-client/core/session-key";
import { sessionIdOf, type ChannelRef } from "../../channel-client/core/terms";
import { signDigest } from "../../channel-client/core/eip712";
import { paymentTicketDigest, signPaymentTicket } from "../../channel-client/core/ticket";
import { mnemonicToAccount } from "viem/accounts";
import { DISPUTE_MANAGER, DOMAIN, ESCROW, PAYER, POLICY, PRICE, PRICING, PROVIDER, REF, outputOf, requestOf, type Step } from "./session-fixtures";

const RUNTIME = `0x${"11".repeat(32)}` as const;
/** A contract wallet's address (Lane 0 never calls it: whether it is a contract comes in the context). */
const WALLET: Address = "0x4c5859f0F772848b2D91F1D83E2Fe57935348029";
const KEY = mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex: 7 });
const WALLET_REF: ChannelRef = { ...REF, terms: { ...REF.terms, payer: WALLET } };
const SESSION = sessionIdOf(DOMAIN, WALLET_REF);

/** Four steps paid by the wallet (signed by its owner key, or by a session key under `grant`); receipt 2 breaks the policy. */
async function walletSteps(grant?: SignedSessionKeyGrant): Promise<{ steps: Step[]; tree: ReceiptAccumulator }> {
  const tree = new ReceiptAccumulator();
  const steps: Step[] = [];
  let prev: Hex = `0x${"00".repeat(32)}`;
  for (let seq = 1n; seq <= 4n; seq++) {
    const ticket = { sessionId: SESSION, provider: PROVIDER.address, termsHash: WALLET_REF.terms.termsHash, seq, cumulativeAmount: PRICE * seq, receiptRoot: tree.root() };
    const receipt: SessionReceipt = {
      sessionId: SESSION,
      seq,
      offloadPacketHash: keccak256(requestOf(seq)),
      outputHash: keccak256(outputOf(seq)),
      policyHash: seq === 2n ? `0x${"cd".repeat(32)}` : POLICY,
      modelSnapshotId: "model:echo@1",
      metering: { units: 1n, amount: PRICE },
      prevReceiptHash: prev,
    };
    const signedTicket = await signPaymentTicket({ account: grant ? KEY : PAYER, domain: DOMAIN, ticket });
    const signedReceipt = await signSessionReceipt({ account: PROVIDER, receipt });
    prev = sessionReceiptHash(receipt);
    steps.push({ ticket: signedTicket, receipt: signedReceipt, index: tree.append(receiptLeaf(receipt, ticket)) });
  }
  return { steps, tree };
}

/** The case disputing seq 2 against the root ticket 4 recorded, and the context the arbitrator read. */
function walletCase(steps: Step[], tree: ReceiptAccumulator, session: Partial<NonNullable<CaseContext["session"]>>, grant?: SignedSessionKeyGrant) {
  const caseId: Hex = `0x${"c1".repeat(32)}`;
  const closing = { deposit: PRICE * 10n, seq: 4n, amount: PRICE * 4n, receiptRoot: tree.prefixRoot(3), feeBps: 0 };
  const receipts = steps.slice(0, 2).map((step) => ({ receipt: step.receipt, ticket: step.ticket, leafIndex: BigInt(step.index), merkleProof: tree.proof(step.index, 3), ...(grant ? { sessionKey: grant } : {}) }));
  const pkg: ChallengePackage = buildSessionPackage({
    caseId, chainId: 31337n, disputeManager: DISPUTE_MANAGER, challenger: WALLET, lane: 0, gasEscrow: ESCROW, sessionId: SESSION,
    ref: WALLET_REF, pricing: PRICING, closing, seq: 2n, receipts,
  });
  const ctx: CaseContext = {
    case: {
      chainId: 31337n, disputeManager: DISPUTE_MANAGER, caseId, kind: "session", status: "open", subjectId: SESSION, challenger: WALLET,
      respondent: PROVIDER.address, asset: WALLET_REF.terms.asset, value: closing.amount, lane: 0, packageHash: packageHash(pkg),
      leaf: receiptLeaf(steps[1]!.receipt.receipt, steps[1]!.ticket.ticket),
    },
    gig: null,
    session: { gasEscrow: ESCROW, sessionId: SESSION, closingMatchedAtOpen: true, settledAtOpen: false, ...session },
    judgeRuntimeHash: `0x${"00".repeat(32)}`,
    respondentIdentity: null,
    slashCap: null,
  };
  return { pkg, ctx };
}

async function judge(pkg: ChallengePackage, ctx: CaseContext): Promise<ArbitrationRun> {
  return arbitrate({ pkg: parsePackage(canon(packageToJson(pkg))), ctx, actor: "arbitrator", judgeRuntime: RUNTIME });
}
const failed = (run: ArbitrationRun) => run.resolution.lane0.checks.filter((c) => c.status !== "pass").map((c) => c.name);

describe("arbitration: Lane 0 with a contract-wallet payer (decision 0035)", function () {
  it("a wallet's tickets under the recorded root count as the wallet's: the provider's broken receipt is its fault, identically on every run", async () => {
    const { steps, tree } = await walletSteps();
    const { pkg, ctx } = walletCase(steps, tree, { payerIsContract: true });
    const first = await judge(pkg, ctx);
    expect(failed(first).filter((n) => n.endsWith("ticket_signature"))).to.deep.equal([]);
    expect(first.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    const second = await judge(pkg, ctx);
    expect(resolutionHash(second.resolution)).to.equal(resolutionHash(first.resolution));
  });

  it("a wallet whose signature is 130 bytes (two owners' concatenated): the package parses and Lane 0 judges its tickets by the recorded root", async () => {
    const { steps, tree } = await walletSteps();
    // The wallet's own format on every ticket: the owner's signature, then a second owner's (decision 0035 amendment).
    const long = await Promise.all(
      steps.map(async (step) => ({ ...step, ticket: { ...step.ticket, signature: concat([step.ticket.signature, await signDigest(KEY, paymentTicketDigest(DOMAIN, step.ticket.ticket))]) } })),
    );
    const { pkg, ctx } = walletCase(long, tree, { payerIsContract: true });
    expect(JSON.stringify(packageToJson(pkg))).to.contain(long[0]!.ticket.signature);
    const run = await judge(pkg, ctx);
    expect(failed(run).filter((n) => n.endsWith("ticket_signature"))).to.deep.equal([]);
    expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    // Read as a plain key, a 130-byte signature is no key's: every ticket signature fails, nothing crashes.
    const plain = await judge(...(Object.values(walletCase(long, tree, {})) as [ChallengePackage, CaseContext]));
    expect(failed(plain)).to.include.members(["receipt[seq 1].ticket_signature", "receipt[seq 2].ticket_signature"]);
    // Past 4,096 bytes a signature is refused where the package is read, in one sentence.
    const huge = { ...long[0]!, ticket: { ...long[0]!.ticket, signature: `0x${"ab".repeat(4097)}` as Hex } };
    const { pkg: oversized } = walletCase([huge, ...long.slice(1)], tree, { payerIsContract: true });
    const error = (() => {
      try {
        parsePackage(canon(packageToJson(oversized)));
      } catch (e) {
        return e as Error;
      }
      return undefined;
    })();
    expect(error?.message.split("\n")[0]).to.match(/signature/);
  });

  it("attack: the same package with the payer read as a plain key fails every ticket signature (recovery finds the owner, not the wallet)", async () => {
    const { steps, tree } = await walletSteps();
    const { pkg, ctx } = walletCase(steps, tree, {});
    const run = await judge(pkg, ctx);
    expect(failed(run)).to.include.members(["receipt[seq 1].ticket_signature", "receipt[seq 2].ticket_signature"]);
    expect(run.resolution.aggregate.finalVerdict).to.not.equal("provider_fault");
  });

  it("attack: a wallet's ticket whose root the escrow never recorded is not the wallet's", async () => {
    const { steps, tree } = await walletSteps();
    const { pkg, ctx } = walletCase(steps, tree, { payerIsContract: true, closingMatchedAtOpen: false });
    const run = await judge(pkg, ctx);
    expect(failed(run)).to.include.members(["committed_root", "receipt[seq 1].ticket_signature", "receipt[seq 2].ticket_signature"]);
    expect(run.resolution.aggregate.finalVerdict).to.not.equal("provider_fault");
  });

  it("a wallet's session-key grant counts through the recorded root; its key must still have signed the ticket", async () => {
    const grant = await signSessionKeyGrant({ account: PAYER, domain: DOMAIN, sessionId: SESSION, key: KEY.address, expiry: 2n ** 40n, spendCap: PRICE * 100n, methods: ["tools/call"], epoch: 0n });
    const { steps, tree } = await walletSteps(grant);
    const ok = await judge(...(Object.values(walletCase(steps, tree, { payerIsContract: true, registeredWalletGrants: [sessionKeyGrantDigest(DOMAIN, grant.grant)] }, grant)) as [ChallengePackage, CaseContext]));
    expect(failed(ok).filter((n) => n.endsWith("ticket_signature"))).to.deep.equal([]);
    expect(ok.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    // A grant naming another key: the tickets were not signed by it, whatever the wallet approved.
    const other = await signSessionKeyGrant({ account: PAYER, domain: DOMAIN, sessionId: SESSION, key: PROVIDER.address, expiry: 2n ** 40n, spendCap: PRICE * 100n, methods: ["tools/call"], epoch: 0n });
    const bad = await judge(...(Object.values(walletCase(steps, tree, { payerIsContract: true }, other)) as [ChallengePackage, CaseContext]));
    expect(failed(bad)).to.include.members(["receipt[seq 1].ticket_signature", "receipt[seq 2].ticket_signature"]);
  });
});
