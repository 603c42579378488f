/**
 * The payer's side of one channel, transport-free: sign a ticket that prepays each invocation, check the
 * provider's receipt for it, and keep the receipt root (peaks only: the payer never needs proofs of its
 * own history to pay, and the provider keeps the full tree).
 *
 * Invocations may be pipelined: many tickets can await their receipts at once. Receipts are accepted in
 * seq order. Ticket `n` carries the root over the receipts accepted when it was signed (`leafCount` of
 * them), which with nothing in flight is leaves `1..n-1` (docs/decisions/0003).
 */
import type { Hex, LocalAccount } from "viem";

import { RootAccumulator } from "../core/accumulator";
import { keccak256Hex } from "../core/keccak";
import type { GasEscrowDomain } from "../core/eip712";
import { BindingMismatchError, DepositExceededError, InvalidSignatureError, ModelMismatchError, TicketNotNewerError, ReceiptMismatchError, ReceiptOverpricedError, RequiredReceiptMissingError } from "../core/errors";
import { receiptLeafFromHashes } from "../core/leaf";
import { assertDigestSigner, recoverDigestSigner } from "../core/eip712";
import { GENESIS_RECEIPT_HASH, sessionReceiptDigest, sessionReceiptHash, type SignedSessionReceipt } from "../core/receipt";
import type { StepRecord } from "../store/store";
import { signSettlementSummary, type SettlementSummary } from "../core/summary";
import { describePricing, hasDocumentBody, missingReceiptBindings, modelAllowed, prepaidFor, priceFor, type ChannelRef, type PricingTerms } from "../core/terms";
import { paymentTicketDigest, paymentTicketHash, signPaymentTicket, type PaymentTicket, type SignedPaymentTicket } from "../core/ticket";
import { SessionKeyCapExceededError } from "../core/errors";
import type { SignedSessionKeyGrant } from "../core/session-key";

export type PayerSessionParameters = {
  /** The payer: signs the cooperative close, the closing ticket, and tickets when no session key is set. */
  account: LocalAccount;
  /**
   * A session key and the payer's grant for it (decision 0025): tickets are signed by `account` here, so the
   * payer's funding key stays out of the hot loop. The session refuses to sign past the grant's cap.
   */
  sessionKey?: { account: LocalAccount; grant: SignedSessionKeyGrant };
  domain: GasEscrowDomain;
  ref: ChannelRef;
  sessionId: Hex;
  pricing: PricingTerms;
  deposit: bigint;
  /**
   * Signs what only the payer itself may sign — the closing ticket and the cooperative summary — when that is not
   * `account`'s own 65-byte signature: a contract wallet's signer, whose signature is the wallet's own format
   * (decision 0035, e.g. two owners' signatures). Default `account`.
   */
  payerSigner?: LocalAccount;
};

/** A signed ticket with the number of receipts its root covers (sent beside it as a hint). */
export type NextTicket = { signed: SignedPaymentTicket; leafCount: number };

/** `signed` is set once signing completes; the seq is reserved before, so concurrent calls never collide. */
type Pending = { ticket: PaymentTicket; signed: SignedPaymentTicket | undefined; input: Uint8Array | undefined; request?: unknown };

export class PayerSession {
  readonly accumulator = new RootAccumulator();
  #seq = 0n;
  #amount = 0n;
  #prevReceiptHash: Hex = GENESIS_RECEIPT_HASH;
  /** The cumulative amount of the newest ticket whose receipt was accepted. */
  #acceptedAmount = 0n;
  /** What the accepted receipts charged in total (failed calls charge 0, decision 0022). */
  #charged = 0n;
  /** Tickets awaiting their receipts, by seq, in ascending order. */
  readonly #pending = new Map<bigint, Pending>();

  constructor(readonly parameters: PayerSessionParameters) {}

  /**
   * Rebuilds the session from what the store kept: every ticket signed, and the receipts accepted.
   * Tickets without a receipt become pending again; their requests are unknown after a restart, so their
   * receipts are checked against everything except the request hash.
   */
  static restore(parameters: PayerSessionParameters, steps: readonly StepRecord[]): PayerSession {
    const session = new PayerSession(parameters);
    for (const step of steps) {
      session.#seq = step.seq;
      session.#amount = step.ticket.ticket.cumulativeAmount;
      if (step.receipt && step.leaf) {
        if (session.#pending.size > 0) {
          throw new ReceiptMismatchError(`Stored receipt seq ${step.seq} follows a ticket that has none.`);
        }
        session.accumulator.append(step.leaf);
        session.#prevReceiptHash = sessionReceiptHash(step.receipt.receipt);
        session.#acceptedAmount = step.ticket.ticket.cumulativeAmount;
        session.#charged += step.receipt.receipt.metering.amount;
      } else {
        session.#pending.set(step.seq, { ticket: step.ticket.ticket, signed: step.ticket, input: undefined });
      }
    }
    return session;
  }

  get seq(): bigint {
    return this.#seq;
  }

  get cumulativeAmount(): bigint {
    return this.#amount;
  }

  /** What the accepted receipts charged: the cumulative amount minus failed calls (and refused tickets in flight). */
  get charged(): bigint {
    return this.#charged;
  }

  /** Tickets sent (or about to be) that have no receipt yet, ascending seq. */
  get pending(): SignedPaymentTicket[] {
    return [...this.#pending.values()].flatMap((p) => (p.signed ? [p.signed] : []));
  }

  /**
   * Forgets a pending ticket the provider refused. Its amount stays counted (tickets are cumulative and
   * the next one must exceed it), so a refused invocation costs the payer its price: refusals are for
   * faulty payers, not a flow to rely on.
   */
  dropPending(seq: bigint): void {
    this.#pending.delete(seq);
  }

  /** What the next ticket must add to pay for `request` (v3 terms price each tool; decision 0033). */
  prepaidFor(request?: unknown): bigint {
    return prepaidFor(this.parameters.pricing, request ?? undefined);
  }

  /**
   * Signs the ticket that prepays the next invocation of `input` (`request`, its parsed form: under v3 terms it
   * decides the price; without it the canonical bytes are parsed).
   */
  async nextTicket(input: Uint8Array, request?: unknown): Promise<NextTicket> {
    const { domain, ref, sessionId, pricing, deposit, sessionKey } = this.parameters;
    const account = sessionKey?.account ?? this.parameters.account;
    const parsed = pricing.version === "3" && request === undefined ? (JSON.parse(new TextDecoder().decode(input)) as unknown) : request;
    const amount = this.#amount + prepaidFor(pricing, parsed);
    if (amount > deposit) {
      throw new DepositExceededError(`Paying ${amount} in total would exceed the channel's deposit of ${deposit}.`);
    }
    if (sessionKey && amount > sessionKey.grant.grant.spendCap) {
      throw new SessionKeyCapExceededError(
        `Paying ${amount} in total would exceed session key ${sessionKey.account.address}'s spend cap of ${sessionKey.grant.grant.spendCap}.`,
      );
    }
    const ticket: PaymentTicket = {
      sessionId,
      provider: ref.terms.provider,
      termsHash: ref.terms.termsHash,
      seq: this.#seq + 1n,
      cumulativeAmount: amount,
      receiptRoot: this.accumulator.root(),
    };
    const leafCount = this.accumulator.size;
    // Reserve the seq before the first await: concurrent callers get consecutive seqs in call order.
    this.#seq = ticket.seq;
    this.#amount = amount;
    const entry: Pending = { ticket, signed: undefined, input, ...(pricing.version === "3" ? { request: parsed } : {}) };
    this.#pending.set(ticket.seq, entry);
    entry.signed = await signPaymentTicket({ account, domain, ticket });
    return { signed: entry.signed, leafCount };
  }

  /**
   * Takes back a ticket this payer signed and sent but did not make durable before it crashed, as the provider
   * handed it back with its receipt (decision 0009, issue 15): the ticket becomes pending again with its
   * request unknown, so `acceptReceipt` then checks its receipt as it checks a replayed one. Only a ticket this
   * payer could have signed is taken: bound to this channel, signed by the payer or by its session key, past
   * the session's seq and at least one call's price past its amount, within the deposit; nothing may still
   * await a receipt.
   * BindingMismatchError, TicketNotNewerError, DepositExceededError, InvalidSignatureError otherwise, and
   * nothing changes.
   */
  async adoptTicket(signed: SignedPaymentTicket): Promise<void> {
    const { account, domain, ref, sessionId, deposit, sessionKey } = this.parameters;
    const { ticket } = signed;
    if (this.#pending.size > 0) {
      throw new TicketNotNewerError(`Ticket seq ${ticket.seq} was handed back while ${this.#pending.size} sent ticket(s) still await receipts.`);
    }
    if (ticket.sessionId !== sessionId || ticket.provider.toLowerCase() !== ref.terms.provider.toLowerCase() || ticket.termsHash !== ref.terms.termsHash) {
      throw new BindingMismatchError(`The ticket handed back as seq ${ticket.seq} is not bound to this channel (session, provider and terms).`);
    }
    // What this payer's own tickets always do (`nextTicket`): a later seq, and at least one call's price more.
    if (ticket.seq <= this.#seq || ticket.cumulativeAmount - this.#amount < prepaidFor(this.parameters.pricing, undefined)) {
      throw new TicketNotNewerError(
        `The ticket handed back as seq ${ticket.seq} (amount ${ticket.cumulativeAmount}) does not advance past seq ${this.#seq} (amount ${this.#amount}) by one call's price.`,
      );
    }
    if (ticket.cumulativeAmount > deposit) {
      throw new DepositExceededError(`The ticket handed back as seq ${ticket.seq} authorises ${ticket.cumulativeAmount}; the channel holds ${deposit}.`);
    }
    const signer = await recoverDigestSigner(paymentTicketDigest(domain, ticket), signed.signature);
    const ours = [account.address, ...(sessionKey ? [sessionKey.account.address] : [])];
    if (!ours.some((address) => address.toLowerCase() === signer.toLowerCase())) {
      throw new InvalidSignatureError(`The ticket handed back as seq ${ticket.seq} was signed by ${signer}, not by this payer (${ours.join(" or ")}).`);
    }
    if (ticket.seq <= this.#seq || this.#pending.size > 0) {
      throw new TicketNotNewerError(`Ticket seq ${ticket.seq} was handed back while this session signed others.`);
    }
    this.#seq = ticket.seq;
    this.#amount = ticket.cumulativeAmount;
    this.#pending.set(ticket.seq, { ticket, signed, input: undefined });
  }

  /**
   * Accepts the provider's receipt for the oldest pending ticket after checking its signature and that it
   * describes exactly that step (session, seq, request and output hashes, policy, receipt chain) under the
   * channel's terms (a model they list, a price their pricing gives for the metering, the required bindings):
   * ModelMismatchError, ReceiptOverpricedError, RequiredReceiptMissingError, ReceiptMismatchError otherwise. Returns
   * the step to persist. `output` undefined skips the output check (a receipt replayed after a restart).
   * `failed`: the answer was a JSON-RPC error, so the receipt must charge nothing (decision 0022); a result
   * may charge at most what its ticket added.
   */
  async acceptReceipt(signed: SignedSessionReceipt, output: Uint8Array | undefined, failed = false): Promise<Required<StepRecord>> {
    const [oldest] = this.#pending.keys();
    const pending = oldest === undefined ? undefined : this.#pending.get(oldest);
    const { receipt } = signed;
    if (!pending) throw new ReceiptMismatchError(`Receipt seq ${receipt.seq} arrived but no ticket awaits one.`);
    // Sentences that name amounts are built only when a check fails (this runs once per receipt).
    const expect = (ok: boolean, what: string | (() => string)) => {
      if (!ok) throw new ReceiptMismatchError(`Receipt seq ${receipt.seq}: ${typeof what === "string" ? what : what()}.`);
    };
    const ticket = pending.ticket;
    if (!pending.signed) throw new ReceiptMismatchError(`Receipt seq ${receipt.seq} arrived before its ticket was signed.`);
    expect(receipt.sessionId === this.parameters.sessionId, "it is for another session");
    expect(receipt.seq === ticket.seq, () => `it answers seq ${receipt.seq}, but the oldest pending ticket is seq ${ticket.seq}`);
    if (pending.input) expect(receipt.offloadPacketHash === keccak256Hex(pending.input), "its request hash is not the request sent");
    if (output) expect(receipt.outputHash === keccak256Hex(output), "its output hash is not the output received");
    expect(receipt.policyHash === this.parameters.ref.terms.policyHash, "it names another policy");
    expect(receipt.prevReceiptHash === this.#prevReceiptHash, "it does not chain to the previous receipt");
    const added = ticket.cumulativeAmount - this.#acceptedAmount;
    if (failed) expect(receipt.metering.amount === 0n, () => `it charges ${receipt.metering.amount} for a call that failed`);
    else expect(receipt.metering.amount <= added, () => `it charges ${receipt.metering.amount}, more than the ${added} its ticket added`);
    // The terms document (decision 0026): the model served, the price of what was metered, the bindings required.
    const { pricing } = this.parameters;
    if (!modelAllowed(pricing, receipt.modelSnapshotId)) {
      throw new ModelMismatchError(`Receipt seq ${receipt.seq} was served by model ${JSON.stringify(receipt.modelSnapshotId)}; the terms allow ${hasDocumentBody(pricing) ? pricing.models.map((m) => JSON.stringify(m)).join(", ") : "any"}.`);
    }
    // Under v1 a receipt charges what its ticket added (checked above), as before issue 14.
    // v3 (decision 0033): the price of the tool the request named (the most any call costs when it is unknown).
    const price = priceFor(pricing, pending.request, receipt.metering.units);
    if (hasDocumentBody(pricing) && !failed && receipt.metering.amount > price) {
      throw new ReceiptOverpricedError(`Receipt seq ${receipt.seq} charges ${receipt.metering.amount} for ${receipt.metering.units} units; the terms (${describePricing(pricing)}) price that at ${price}.`);
    }
    const missing = missingReceiptBindings(pricing, receipt);
    if (missing.length) throw new RequiredReceiptMissingError(`Receipt seq ${receipt.seq} lacks the required ${missing.join(", ")}.`);
    // The receipt's hash is computed once: its signature is checked over it and it is the leaf's half.
    const receiptHash = sessionReceiptHash(receipt);
    await assertDigestSigner(sessionReceiptDigest(receiptHash), signed.signature, this.parameters.ref.terms.provider, "session receipt");

    const leaf = receiptLeafFromHashes(receiptHash, paymentTicketHash(ticket));
    this.accumulator.append(leaf);
    this.#prevReceiptHash = receiptHash;
    this.#acceptedAmount = ticket.cumulativeAmount;
    this.#charged += receipt.metering.amount;
    this.#pending.delete(ticket.seq);
    return { seq: ticket.seq, ticket: pending.signed, receipt: signed, leaf };
  }

  /**
   * The ticket a payer closes unilaterally with (issue 12): seq + 1, the cumulative amount already promised
   * (nothing new is paid), and the root over every receipt it accepted. A pipelined ticket's root lags the
   * receipts behind it (decision 0003), so closing with the newest ticket would leave the last receipts
   * unprovable; this one drains the pipeline. It is never sent to the provider (it prepays nothing) nor
   * stored as a step, and the provider's newest ticket (same amount) cannot displace it on-chain.
   */
  async closingTicket(): Promise<SignedPaymentTicket> {
    const { domain, ref, sessionId } = this.parameters;
    const account = this.parameters.payerSigner ?? this.parameters.account;
    const ticket: PaymentTicket = {
      sessionId,
      provider: ref.terms.provider,
      termsHash: ref.terms.termsHash,
      seq: this.#seq + 1n,
      cumulativeAmount: this.#amount,
      receiptRoot: this.accumulator.root(),
    };
    return signPaymentTicket({ account, domain, ticket });
  }

  /** Proposes the cooperative close of everything paid so far, signed by the payer. */
  async proposeCooperativeClose(): Promise<{ summary: SettlementSummary; signature: Hex }> {
    if (this.#pending.size > 0) {
      throw new ReceiptMismatchError(`${this.#pending.size} ticket(s) still await their receipts; close after they arrive.`);
    }
    const { domain, ref, sessionId } = this.parameters;
    const account = this.parameters.payerSigner ?? this.parameters.account;
    const summary: SettlementSummary = {
      sessionId,
      provider: ref.terms.provider,
      payer: ref.terms.payer,
      termsHash: ref.terms.termsHash,
      finalSeq: this.#seq,
      // What the receipts charged: failed calls are not paid for (decision 0022).
      finalAmount: this.#charged,
      finalReceiptRoot: this.accumulator.root(),
      mode: "Cooperative",
    };
    return { summary, signature: await signSettlementSummary({ account, domain, summary }) };
  }
}
