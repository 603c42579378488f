/**
 * A long channel history written straight into a provider's store (issue 28 item 6): `count` answered steps
 * with well-formed tickets and receipts, real receipt leaves, and the accumulator state of every step, as a
 * provider node that served them would have stored. Signatures are one real pair reused for every step: a
 * resume never re-verifies what its own store holds, and signing 100,000 steps would take minutes.
 */
import type { Hex, LocalAccount } from "viem";

import { RootAccumulator } from "../../channel-client/core/accumulator";
import type { GasEscrowDomain } from "../../channel-client/core/eip712";
import { keccak256Hex } from "../../channel-client/core/keccak";
import { receiptLeafFromHashes } from "../../channel-client/core/leaf";
import { GENESIS_RECEIPT_HASH, sessionReceiptHash, signSessionReceipt, type SessionReceipt } from "../../channel-client/core/receipt";
import { paymentTicketHash, signPaymentTicket, type PaymentTicket } from "../../channel-client/core/ticket";
import type { ChannelRef } from "../../channel-client/core/terms";
import type { ChannelStore } from "../../channel-client/store/store";

export type WriteHistoryParameters = {
  store: ChannelStore;
  sessionId: Hex;
  ref: ChannelRef;
  domain: GasEscrowDomain;
  payer: LocalAccount;
  provider: LocalAccount;
  count: number;
  price: bigint;
  modelSnapshotId: string;
  /** Store the accumulator state with each step (default true); false writes a store as before issue 28. */
  withState?: boolean;
};

/** Writes the history; resolves with the leaves in order (to check roots against) once it is durable. */
export async function writeHistory(parameters: WriteHistoryParameters): Promise<Hex[]> {
  const { store, sessionId, ref, domain, count, price, modelSnapshotId } = parameters;
  const first: PaymentTicket = { sessionId, provider: ref.terms.provider, termsHash: ref.terms.termsHash, seq: 1n, cumulativeAmount: price, receiptRoot: `0x${"00".repeat(32)}` };
  const ticketSignature = (await signPaymentTicket({ account: parameters.payer, domain, ticket: first })).signature;
  const receiptOf = (seq: bigint, prev: Hex): SessionReceipt => ({
    sessionId,
    seq,
    offloadPacketHash: keccak256Hex(new TextEncoder().encode(`request ${seq}`)),
    outputHash: keccak256Hex(new TextEncoder().encode(`output ${seq}`)),
    policyHash: ref.terms.policyHash,
    modelSnapshotId,
    metering: { units: 1n, amount: price },
    prevReceiptHash: prev,
  });
  const receiptSignature = (await signSessionReceipt({ account: parameters.provider, receipt: receiptOf(1n, GENESIS_RECEIPT_HASH) })).signature;
  const accumulator = new RootAccumulator();
  const leaves: Hex[] = [];
  let prev: Hex = GENESIS_RECEIPT_HASH;
  let pending: Promise<void>[] = [];
  for (let i = 1; i <= count; i++) {
    const seq = BigInt(i);
    const ticket: PaymentTicket = { ...first, seq, cumulativeAmount: price * seq, receiptRoot: accumulator.root() };
    const receipt = receiptOf(seq, prev);
    const receiptHash = sessionReceiptHash(receipt);
    const leaf = receiptLeafFromHashes(receiptHash, paymentTicketHash(ticket));
    accumulator.append(leaf);
    leaves.push(leaf);
    prev = receiptHash;
    pending.push(
      store.putStep(
        sessionId,
        { seq, ticket: { ticket, signature: ticketSignature }, receipt: { receipt, signature: receiptSignature }, leaf },
        parameters.withState === false ? undefined : { leafCount: i, peaks: accumulator.peaks(), charged: price * seq },
      ),
    );
    if (pending.length === 1000) {
      await Promise.all(pending);
      pending = [];
    }
  }
  await Promise.all(pending);
  return leaves;
}
