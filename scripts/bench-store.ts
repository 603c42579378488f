/**
 * Storage on disk per receipt (issue 31 item 4, decision 0012): a provider's store (each step with its ticket,
 * receipt, leaf and the accumulator state the provider passes) and a payer's store (each step written as the payer
 * writes it, with no state), `count` receipts on one channel, measured as the database file's size after a
 * checkpoint that truncates the WAL, divided by the receipts. Real signed artifacts, varied per seq (the store
 * checks form, not signatures); sizes do not depend on the machine or its load.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { keccak256, toHex, zeroAddress, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";

import { RootAccumulator } from "../channel-client/core/accumulator";
import { gasEscrowDomain } from "../channel-client/core/eip712";
import { receiptLeaf } from "../channel-client/core/leaf";
import { signSessionReceipt, type SignedSessionReceipt } from "../channel-client/core/receipt";
import { sessionIdOf, type ChannelRef } from "../channel-client/core/terms";
import { signPaymentTicket, type SignedPaymentTicket } from "../channel-client/core/ticket";
import { SqliteStore } from "../channel-client/store/sqlite-store";
import type { ChannelRecord, StepRecord } from "../channel-client/store/store";

export type StorageFigure = {
  receipts: number;
  providerBytes: number;
  providerBytesPerReceipt: number;
  payerBytes: number;
  payerBytesPerReceipt: number;
  /** The bound of issue 31 (bytes per receipt), and whether both stores are within it. */
  bound: number;
  withinBound: boolean;
};

const PRICE = 10n ** 15n;
const h = (text: string): Hex => keccak256(toHex(text));

async function template(sessionId: Hex): Promise<{ ticket: SignedPaymentTicket; receipt: SignedSessionReceipt }> {
  const payer = privateKeyToAccount(h("bench payer"));
  const provider = privateKeyToAccount(h("bench provider"));
  const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
  const ticket = await signPaymentTicket({ account: payer, domain, ticket: { sessionId, provider: provider.address, termsHash: h("terms"), seq: 1n, cumulativeAmount: PRICE, receiptRoot: h("root") } });
  const receipt = await signSessionReceipt({ account: provider, receipt: { sessionId, seq: 1n, offloadPacketHash: h("offload"), outputHash: h("output"), policyHash: h("policy"), modelSnapshotId: "model:bench@1", metering: { units: 120n, amount: PRICE }, prevReceiptHash: h("prev") } });
  return { ticket, receipt };
}

/** Step `seq` of the channel: the template's signatures, its own amounts, roots and hashes. */
function stepAt(base: { ticket: SignedPaymentTicket; receipt: SignedSessionReceipt }, seq: bigint, root: Hex): Required<StepRecord> {
  const ticket = { ...base.ticket, ticket: { ...base.ticket.ticket, seq, cumulativeAmount: PRICE * seq, receiptRoot: root } };
  const receipt = { ...base.receipt, receipt: { ...base.receipt.receipt, seq, outputHash: h(`output ${seq}`), prevReceiptHash: h(`receipt ${seq - 1n}`) } };
  return { seq, ticket, receipt, leaf: receiptLeaf(receipt.receipt, ticket.ticket) };
}

async function fill(file: string, role: "payer" | "provider", count: number): Promise<number> {
  const ref: ChannelRef = { terms: { payer: zeroAddress, provider: zeroAddress, funder: zeroAddress, asset: zeroAddress, termsHash: h("terms"), policyHash: h("policy"), challengeDuration: 3600n, nonce: 1n }, openedAt: 1n };
  const sessionId = sessionIdOf(gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" }), ref);
  const channel: ChannelRecord = { sessionId, role, ref, pricing: { version: "1", unit: "invocation", pricePerInvocation: PRICE }, escrow: "0x5FbDB2315678afecb367f032d93F642f64180aa3", chainId: 31337, deposit: 10n ** 24n, status: "open" };
  const base = await template(sessionId);
  const store = SqliteStore.open(file);
  try {
    await store.putChannel(channel);
    const accumulator = new RootAccumulator();
    let charged = 0n;
    for (let from = 1; from <= count; from += 1000) {
      const writes: Promise<void>[] = [];
      for (let seq = from; seq < from + 1000 && seq <= count; seq++) {
        const step = stepAt(base, BigInt(seq), accumulator.root());
        accumulator.append(step.leaf);
        charged += step.receipt.receipt.metering.amount;
        writes.push(store.putStep(sessionId, step, role === "provider" ? { leafCount: accumulator.size, peaks: accumulator.peaks(), charged } : undefined));
      }
      await Promise.all(writes);
    }
    return store.checkpoint();
  } finally {
    await store.close();
  }
}

export async function benchStorage(counts: readonly number[], bound = 600): Promise<Record<string, StorageFigure>> {
  const figures: Record<string, StorageFigure> = {};
  for (const count of counts) {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-bench-store-"));
    try {
      const providerBytes = await fill(path.join(dir, "provider.db"), "provider", count);
      const payerBytes = await fill(path.join(dir, "payer.db"), "payer", count);
      const providerBytesPerReceipt = Number((providerBytes / count).toFixed(1));
      const payerBytesPerReceipt = Number((payerBytes / count).toFixed(1));
      figures[String(count)] = { receipts: count, providerBytes, providerBytesPerReceipt, payerBytes, payerBytesPerReceipt, bound, withinBound: providerBytesPerReceipt <= bound && payerBytesPerReceipt <= bound };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return figures;
}

if (require.main === module) {
  benchStorage([10_000]).then(
    (figures) => {
      console.log(JSON.stringify(figures, null, 2));
      process.exit(0);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
