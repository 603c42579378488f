/**
 * The independent checker of `ioi export` (scripts/check-export.mjs, no project code): on lines written exactly as
 * `ioi export` writes them, over a v2 terms document, it recomputes the terms hash, every leaf and the root; a
 * changed terms document, receipt or root is named in one sentence with exit 1.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { zeroHash, type Hex } from "viem";

import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { canon } from "../../channel-client/core/canonical";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { sessionReceiptHash, signedSessionReceiptToJson, signSessionReceipt, type SessionReceipt } from "../../channel-client/core/receipt";
import { channelRefToJson, priceOf, pricingTermsToJson, termsHashOf, type TermsDocumentV2 } from "../../channel-client/core/terms";
import { paymentTicketHash, signedPaymentTicketToJson, signPaymentTicket } from "../../channel-client/core/ticket";
import { hardhatAccount } from "../helpers/fixtures";

const SCRIPT = path.join(__dirname, "..", "..", "scripts", "check-export.mjs");
const TERMS: TermsDocumentV2 = {
  version: "2",
  pricing: { perInvocation: 1000n, perUnit: { unit: "second", price: 3n }, capPerCall: 9000n },
  models: ["m@1"],
  disputes: { windowAfterSettlement: 3600n, penalties: {}, refundsFromBond: true },
  requiredReceipts: ["rrsa_output_commitment"],
};

async function exportLines(count: number): Promise<Record<string, any>[]> {
  const payer = hardhatAccount(2);
  const provider = hardhatAccount(3);
  const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
  const sessionId = `0x${"51".repeat(32)}` as Hex;
  const termsHash = termsHashOf(TERMS);
  const ref = { terms: { payer: payer.address, provider: provider.address, funder: payer.address, asset: "0x0000000000000000000000000000000000000000" as const, termsHash, policyHash: zeroHash, challengeDuration: 3600n, nonce: 1n }, openedAt: 5n };
  const lines: Record<string, any>[] = [{ type: "session", sessionId, escrow: domain.verifyingContract.toLowerCase(), ref: channelRefToJson(ref), pricing: pricingTermsToJson(TERMS), termsHash, leafDomain: "IOI_SESSION_LEAF_V1" }];
  const tree = new ReceiptAccumulator();
  let prev: Hex = zeroHash;
  for (let seq = 1n; seq <= BigInt(count); seq++) {
    const ticket = { sessionId, provider: provider.address, termsHash, seq, cumulativeAmount: 9000n * seq, receiptRoot: tree.root() };
    const receipt: SessionReceipt = { sessionId, seq, offloadPacketHash: `0x${"01".repeat(32)}`, outputHash: `0x${"02".repeat(32)}`, policyHash: zeroHash, modelSnapshotId: "m@1", metering: { units: seq, amount: priceOf(TERMS, seq) }, prevReceiptHash: prev };
    prev = sessionReceiptHash(receipt);
    const leaf = receiptLeaf(receipt, ticket);
    tree.append(leaf);
    lines.push({ type: "step", seq: seq.toString(), ticket: signedPaymentTicketToJson(await signPaymentTicket({ account: payer, domain, ticket })), receipt: signedSessionReceiptToJson(await signSessionReceipt({ account: provider, receipt })), ticketHash: paymentTicketHash(ticket), receiptHash: sessionReceiptHash(receipt), leaf });
  }
  lines.push({ type: "root", receipts: String(count), root: tree.root(), onChain: { event: "ChannelSettled", receiptRoot: tree.prefixRoot(count - 1), seq: String(count - 1), transactionHash: zeroHash }, coveredReceipts: String(count - 1), matches: false });
  return lines;
}

function check(lines: Record<string, any>[]): { status: number; out: string } {
  const dir = mkdtempSync(path.join(tmpdir(), "ioi-export-"));
  const file = path.join(dir, "export.jsonl");
  writeFileSync(file, lines.map((line) => canon(line)).join("\n") + "\n");
  try {
    return { status: 0, out: execFileSync(process.execPath, [SCRIPT, file], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }) };
  } catch (error) {
    const e = error as { status: number; stderr: string };
    return { status: e.status, out: e.stderr };
  }
}

describe("scripts/check-export.mjs: the export checked without our code", function () {
  this.timeout(30_000);

  it("recomputes the terms hash, every leaf and the root (5 receipts, the chain's root over the first 4)", async () => {
    const lines = await exportLines(5);
    const result = check(lines);
    expect(result.status).to.equal(0);
    expect(result.out).to.contain(`terms ${termsHashOf(TERMS)}, 5 receipts, root ${lines[6]!.root}, the chain's root covers 4`);
  });

  it("refuses a terms document that is not the one the channel binds", async () => {
    const lines = await exportLines(3);
    lines[0]!.pricing.pricing.capPerCall = "9001";
    const result = check(lines);
    expect(result.status).to.equal(1);
    expect(result.out).to.match(/^The terms document hashes to 0x[0-9a-f]{64}; the channel binds 0x[0-9a-f]{64}\.\n$/);
  });

  it("refuses a receipt changed after the fact, and a root that is not the leaves'", async () => {
    const lines = await exportLines(3);
    lines[2]!.receipt.receipt.metering.amount = "1";
    expect(check(lines).out).to.match(/^Step 2: the receipt hashes to/);
    const other = await exportLines(3);
    other[4]!.root = `0x${"ee".repeat(32)}`;
    expect(check(other).out).to.match(/^The 3 leaves give root/);
  });
});
