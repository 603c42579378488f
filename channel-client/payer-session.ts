/**
 * The payer's side of one channel, transport-free: sign a ticket that prepays each invocation, check the
 * provider's receipt for it, and keep the receipt root (peaks only: the payer never needs proofs of its
 * own history to pay, and the provider keeps the full tree).
 */
import { keccak256, type Hex, type LocalAccount } from "viem";

import { RootAccumulator } from "./accumulator";
import type { GasEscrowDomain } from "./eip712";
import { BindingMismatchError, DepositExceededError, ReceiptMismatchError } from "./errors";
import { receiptLeafFromHashes } from "./leaf";
import { GENESIS_RECEIPT_HASH, sessionReceiptHash, verifySessionReceipt, type SignedSessionReceipt } from "./receipt";
import { signSettlementSummary, type SettlementSummary } from "./summary";
import type { ChannelRef, PricingTerms } from "./terms";
import { paymentTicketHash, signPaymentTicket, type PaymentTicket, type SignedPaymentTicket } from "./ticket";

export type PayerSessionParameters = {
  account: LocalAccount;
  domain: GasEscrowDomain;
  ref: ChannelRef;
  sessionId: Hex;
  pricing: PricingTerms;
  deposit: bigint;
};

export class PayerSession {
  readonly accumulator = new RootAccumulator();
  #seq = 0n;
  #amount = 0n;
  #prevReceiptHash: Hex = GENESIS_RECEIPT_HASH;
  /** Ticket awaiting its receipt, with the request it paid for. */
  #pending: { ticket: PaymentTicket; input: Uint8Array } | undefined;

  constructor(readonly parameters: PayerSessionParameters) {}

  get seq(): bigint {
    return this.#seq;
  }

  get cumulativeAmount(): bigint {
    return this.#amount;
  }

  /** Signs the ticket that prepays the next invocation of `input`. */
  async nextTicket(input: Uint8Array): Promise<SignedPaymentTicket> {
    if (this.#pending) throw new BindingMismatchError(`Ticket seq ${this.#pending.ticket.seq} still awaits its receipt.`);
    const { account, domain, ref, sessionId, pricing, deposit } = this.parameters;
    const amount = this.#amount + pricing.pricePerInvocation;
    if (amount > deposit) {
      throw new DepositExceededError(`Paying ${amount} in total would exceed the channel's deposit of ${deposit}.`);
    }
    const ticket: PaymentTicket = {
      sessionId,
      provider: ref.terms.provider,
      termsHash: ref.terms.termsHash,
      seq: this.#seq + 1n,
      cumulativeAmount: amount,
      receiptRoot: this.accumulator.root(),
    };
    const signed = await signPaymentTicket({ account, domain, ticket });
    this.#seq = ticket.seq;
    this.#amount = amount;
    this.#pending = { ticket, input };
    return signed;
  }

  /**
   * Accepts the provider's receipt for the pending ticket after checking its signature and that it
   * describes exactly that step (session, seq, request and output hashes, policy, receipt chain).
   */
  async acceptReceipt(signed: SignedSessionReceipt, output: Uint8Array): Promise<Hex> {
    const pending = this.#pending;
    if (!pending) throw new ReceiptMismatchError("No ticket is awaiting a receipt.");
    const { receipt } = signed;
    const expect = (ok: boolean, what: string) => {
      if (!ok) throw new ReceiptMismatchError(`Receipt seq ${receipt.seq}: ${what}.`);
    };
    expect(receipt.sessionId === this.parameters.sessionId, "it is for another session");
    expect(receipt.seq === pending.ticket.seq, `it answers seq ${receipt.seq}, not the pending ${pending.ticket.seq}`);
    expect(receipt.offloadPacketHash === keccak256(pending.input), "its request hash is not the request sent");
    expect(receipt.outputHash === keccak256(output), "its output hash is not the output received");
    expect(receipt.policyHash === this.parameters.ref.terms.policyHash, "it names another policy");
    expect(receipt.prevReceiptHash === this.#prevReceiptHash, "it does not chain to the previous receipt");
    await verifySessionReceipt({ signed, signer: this.parameters.ref.terms.provider });

    const receiptHash = sessionReceiptHash(receipt);
    const leaf = receiptLeafFromHashes(receiptHash, paymentTicketHash(pending.ticket));
    this.accumulator.append(leaf);
    this.#prevReceiptHash = receiptHash;
    this.#pending = undefined;
    return leaf;
  }

  /** Proposes the cooperative close of everything paid so far, signed by the payer. */
  async proposeCooperativeClose(): Promise<{ summary: SettlementSummary; signature: Hex }> {
    if (this.#pending) throw new ReceiptMismatchError(`Ticket seq ${this.#pending.ticket.seq} still awaits its receipt.`);
    const { account, domain, ref, sessionId } = this.parameters;
    const summary: SettlementSummary = {
      sessionId,
      provider: ref.terms.provider,
      payer: ref.terms.payer,
      termsHash: ref.terms.termsHash,
      finalSeq: this.#seq,
      finalAmount: this.#amount,
      finalReceiptRoot: this.accumulator.root(),
      mode: "Cooperative",
    };
    return { summary, signature: await signSettlementSummary({ account, domain, summary }) };
  }
}
