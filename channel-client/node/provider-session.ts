/**
 * The provider's side of one channel, transport-free: check each ticket before doing the work, run the
 * work, sign the receipt, fold the step into the receipt accumulator. A later layer puts this behind a
 * socket and a durable store; everything that decides whether a ticket is acceptable lives here.
 */
import type { Hex, LocalAccount } from "viem";

import { peaksHex, PrefixRootAccumulator, type PrefixPeaksLookup } from "../core/accumulator";
import type { GasEscrowDomain, SignatureCheck } from "../core/eip712";
import { BindingMismatchError, DepositExceededError, TicketUnderpaidError } from "../core/errors";
import { receiptLeafFromHashes } from "../core/leaf";
import {
  GENESIS_RECEIPT_HASH,
  sessionReceiptDigest,
  sessionReceiptHash,
  type SessionReceipt,
  type SignedSessionReceipt,
} from "../core/receipt";
import { settlementSummaryDigest, signSettlementSummary, type SettlementSummary } from "../core/summary";
import type { AccumulatorState, ChannelStore, StepRecord } from "../store/store";
import { prepaidFor, priceFor, type ChannelRef, type PricingTerms } from "../core/terms";
import {
  assertTicketAdvances,
  paymentTicketHash,
  verifyPaymentTicket,
  type PaymentTicket,
  type SignedPaymentTicket,
} from "../core/ticket";
import { keccak256Hex } from "../core/keccak";
import { assertDigestSigner, signDigest } from "../core/eip712";
import {
  assertSessionKeyLive,
  assertWithinGrant,
  verifySessionKeyGrant,
  type SessionKeyChainState,
  type SignedSessionKeyGrant,
} from "../core/session-key";

/**
 * The work a provider sells: bytes in, bytes out, and how many metered units it consumed. `charged: false`
 * marks a failed call (decision 0022): it is receipted with amount 0 and its price is not part of the
 * cooperative close.
 */
export type WorkHandler = (
  input: Uint8Array,
  /** The request `input` is the canonical bytes of, when the caller holds it parsed (saves a parse). */
  request?: unknown,
) => Promise<{ output: Uint8Array; units: bigint; charged?: boolean; value?: unknown }>;

export type ProviderSessionParameters = {
  account: LocalAccount;
  domain: GasEscrowDomain;
  ref: ChannelRef;
  sessionId: Hex;
  pricing: PricingTerms;
  /** What the channel holds on-chain; no ticket may authorise more. */
  deposit: bigint;
  modelSnapshotId: string;
  handler: WorkHandler;
  /**
   * How the payer's own signatures (tickets, its grant) are checked: by recovery when omitted; for a payer that
   * is a contract wallet, `payerSignatureCheck(...).check` (its ERC-1271 answer, decision 0035).
   */
  payerSignatures?: SignatureCheck;
  /** Unix seconds now, for session-key expiry (default: the system clock). */
  now?: () => bigint;
  /**
   * Peaks of an older prefix than the accumulator keeps in memory (a ticket or commit naming it): the
   * store's `accumulatorState(sessionId, { leafCount })` (issue 28 item 6).
   */
  olderPeaks?: PrefixPeaksLookup;
};

/** Steps replayed per turn of the event loop when a channel must be rebuilt from its leaves (a legacy store). */
const REBUILD_PAGE = 250;

/**
 * What the receipt of a successful call charges: under v1 terms what its ticket added (one invocation, one
 * price, as before issue 14); under v2 the price of its metering (`priceOf`), never more than the ticket added.
 */
export function chargeFor(pricing: PricingTerms, units: bigint, added: bigint, request?: unknown): bigint {
  if (pricing.version === "1") return added;
  // v3 (decision 0033): the price of the tool the request names, 0 for a listing call.
  const price = priceFor(pricing, request, units);
  return price < added ? price : added;
}

/** `value`: what the handler passed along with `output` (the parsed answer, so that nobody parses it again). */
export type InvocationResult = {
  output: Uint8Array;
  value?: unknown;
  charged: boolean;
  step: Required<StepRecord>;
  /** The accumulator after the step: stored with it, so the channel resumes from it (issue 28 item 6). */
  state: AccumulatorState;
};

export class ProviderSession {
  readonly accumulator: PrefixRootAccumulator;
  #latest: SignedPaymentTicket | undefined;
  #prevReceiptHash: Hex = GENESIS_RECEIPT_HASH;
  #deposit: bigint;
  /** What the receipts charged in total: the cooperative close's amount (failed calls charge 0). */
  #charged = 0n;
  /** The payer's session-key grant bound to this session, and what the chain says of it (decision 0025). */
  #grant: SignedSessionKeyGrant | undefined;
  #keyChain: SessionKeyChainState = { revokedAt: 0n, currentEpoch: 0n };
  /** The grant the newest accepted ticket was signed under (undefined: signed by the payer itself). */
  #latestGrant: SignedSessionKeyGrant | undefined;

  constructor(readonly parameters: ProviderSessionParameters, state?: { size: string; peaks: Hex[] }) {
    this.#deposit = parameters.deposit;
    this.accumulator = new PrefixRootAccumulator({ state, olderPeaks: parameters.olderPeaks });
  }

  /**
   * Resumes the session from the store in time that does not grow with its receipts (issue 28 item 6): the
   * newest answered step and the accumulator state stored with it. A store whose newest step has no state
   * (written before peaks were kept) is rebuilt from its steps a page per turn of the event loop, so other
   * channels keep being served meanwhile, and the state is then stored so the next resume is immediate.
   */
  static async resume(
    parameters: ProviderSessionParameters,
    store: Pick<ChannelStore, "latestAnsweredStep" | "accumulatorState" | "steps" | "putStep">,
  ): Promise<ProviderSession> {
    const { sessionId } = parameters;
    const latest = store.latestAnsweredStep(sessionId);
    if (!latest?.receipt || !latest.leaf) return new ProviderSession(parameters);
    const state = store.accumulatorState(sessionId);
    if (state && state.seq === latest.seq) {
      const session = new ProviderSession(parameters, { size: String(state.leafCount), peaks: state.peaks });
      session.#latest = latest.ticket;
      session.#prevReceiptHash = sessionReceiptHash(latest.receipt.receipt);
      session.#charged = state.charged;
      return session;
    }
    const session = new ProviderSession(parameters);
    for (let fromSeq = 0n; ; ) {
      const page = store.steps(sessionId, { fromSeq, limit: REBUILD_PAGE });
      session.#replay(page);
      if (page.length < REBUILD_PAGE) break;
      fromSeq = page[page.length - 1]!.seq + 1n;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    const rebuilt = { leafCount: session.accumulator.size, peaks: session.accumulator.peaks(), charged: session.#charged };
    await store.putStep(sessionId, latest as Required<StepRecord>, rebuilt);
    return session;
  }

  /** Rebuilds the session from the steps the store kept (every one the provider ever answered). */
  static restore(parameters: ProviderSessionParameters, steps: readonly StepRecord[]): ProviderSession {
    const session = new ProviderSession(parameters);
    session.#replay(steps);
    return session;
  }

  #replay(steps: readonly StepRecord[]): void {
    for (const step of steps) {
      if (!step.receipt || !step.leaf) continue; // a provider stores a step only with its receipt
      this.accumulator.append(step.leaf);
      this.#latest = step.ticket;
      this.#charged += step.receipt.receipt.metering.amount;
    }
    const last = this.#latestReceipt(steps);
    if (last) this.#prevReceiptHash = sessionReceiptHash(last);
  }

  /** The receipt of the last answered step in `steps` (hashed once, not once per step). */
  #latestReceipt(steps: readonly StepRecord[]): SessionReceipt | undefined {
    for (let i = steps.length - 1; i >= 0; i--) if (steps[i]!.receipt && steps[i]!.leaf) return steps[i]!.receipt!.receipt;
    return undefined;
  }

  /** The newest ticket accepted: what the provider would close or challenge with. */
  get latestTicket(): SignedPaymentTicket | undefined {
    return this.#latest;
  }

  /** The session-key grant the newest ticket needs on-chain (`closeUnilateralWithKey`), if a key signed it. */
  get latestGrant(): SignedSessionKeyGrant | undefined {
    return this.#latestGrant;
  }

  /** The session-key grant bound to this session, if any. */
  get sessionKey(): SignedSessionKeyGrant | undefined {
    return this.#grant;
  }

  #now(): bigint {
    return this.parameters.now?.() ?? BigInt(Math.floor(Date.now() / 1000));
  }

  /**
   * Binds the payer's grant after checking it (payer's signature, this session, not revoked or expired, the
   * payer's current epoch as `chain` reports it); from now on tickets signed by its key are accepted within
   * its cap, expiry and capabilities. Throws a typed error and changes nothing otherwise.
   */
  async bindSessionKey(signed: SignedSessionKeyGrant, chain: SessionKeyChainState): Promise<void> {
    const { domain, ref, sessionId } = this.parameters;
    await verifySessionKeyGrant({ domain, signed, payer: ref.terms.payer, sessionId, now: this.#now(), chain, check: this.parameters.payerSignatures });
    this.#grant = signed;
    this.#keyChain = { ...chain };
    const latest = this.#latest;
    if (latest) {
      try {
        await verifyPaymentTicket({ domain, signed: latest, signer: signed.grant.key });
        this.#latestGrant = signed;
      } catch {
        // the newest ticket was the payer's own
      }
    }
  }

  /**
   * The chain follower saw `SessionKeyRevoked(sessionId, key, revokedAt)`: the key's tickets are refused from
   * now on. Those accepted before stay valid on-chain for the challenge duration after `revokedAt`.
   */
  noteKeyRevoked(key: string, revokedAt: bigint): void {
    if (this.#grant && this.#grant.grant.key.toLowerCase() === key.toLowerCase() && this.#keyChain.revokedAt === 0n) {
      this.#keyChain = { ...this.#keyChain, revokedAt };
    }
  }

  /** The chain follower saw `SessionKeysRevoked(payer, epoch)`: grants of older epochs are refused. */
  noteKeyEpoch(epoch: bigint): void {
    if (epoch > this.#keyChain.currentEpoch) this.#keyChain = { ...this.#keyChain, currentEpoch: epoch };
  }

  /** Raise the known deposit after a top-up was seen on-chain. */
  set deposit(value: bigint) {
    this.#deposit = value;
  }

  /**
   * Checks `signed` and, only if it is acceptable, runs the work and returns the signed receipt as the
   * step to persist before answering. `leafCount` is how many receipts the ticket's root covers (the
   * payer's hint; default: all so far). Throws a typed error (BindingMismatchError, TicketNotNewerError,
   * TicketUnderpaidError, DepositExceededError, InvalidSignatureError) and changes nothing otherwise.
   */
  async invoke(signed: SignedPaymentTicket, input: Uint8Array, leafCount?: number, method?: string, request?: unknown): Promise<InvocationResult> {
    const grant = await this.checkTicket(signed, leafCount, method, request);
    const { output, units, charged = true, value } = await this.parameters.handler(input, request);
    const ticket = signed.ticket;
    const previousAmount = this.#latest?.ticket.cumulativeAmount ?? 0n;
    const receipt: SessionReceipt = {
      sessionId: this.parameters.sessionId,
      seq: ticket.seq,
      offloadPacketHash: keccak256Hex(input),
      outputHash: keccak256Hex(output),
      policyHash: this.parameters.ref.terms.policyHash,
      modelSnapshotId: this.parameters.modelSnapshotId,
      metering: { units, amount: charged ? chargeFor(this.parameters.pricing, units, ticket.cumulativeAmount - previousAmount, request) : 0n },
      prevReceiptHash: this.#prevReceiptHash,
    };
    // The receipt's hash is computed once: it is signed (under the receipt domain) and it is the leaf's half.
    const receiptHash = sessionReceiptHash(receipt);
    const signedReceipt: SignedSessionReceipt = { receipt, signature: await signDigest(this.parameters.account, sessionReceiptDigest(receiptHash)) };
    const leaf = receiptLeafFromHashes(receiptHash, paymentTicketHash(ticket));
    this.accumulator.append(leaf);
    this.#latest = signed;
    this.#latestGrant = grant;
    this.#prevReceiptHash = receiptHash;
    this.#charged += receipt.metering.amount;
    // The peaks are written out as hex only if the store asks for them (it keeps a state every few receipts).
    const nodes = this.accumulator.peakNodes();
    let peaks: Hex[] | undefined;
    const state: AccumulatorState = {
      leafCount: this.accumulator.size,
      charged: this.#charged,
      get peaks() {
        return (peaks ??= peaksHex(nodes));
      },
    };
    return { output, ...(value === undefined ? {} : { value }), charged, step: { seq: ticket.seq, ticket: signed, receipt: signedReceipt, leaf }, state };
  }

  /**
   * Every rule a ticket must meet before the provider spends anything on it. `method` is the MCP method the
   * ticket pays for, checked against a session key's capabilities. Returns the grant whose key signed the
   * ticket (undefined: the payer signed it).
   */
  async checkTicket(
    signed: SignedPaymentTicket,
    leafCount: number = this.accumulator.size,
    method?: string,
    request?: unknown,
  ): Promise<SignedSessionKeyGrant | undefined> {
    const { ref, sessionId, pricing, domain } = this.parameters;
    const ticket: PaymentTicket = signed.ticket;
    if (ticket.sessionId !== sessionId) {
      throw new BindingMismatchError(`The ticket is for session ${ticket.sessionId}, not ${sessionId}.`);
    }
    if (ticket.provider.toLowerCase() !== ref.terms.provider.toLowerCase()) {
      throw new BindingMismatchError(`The ticket pays provider ${ticket.provider}, not ${ref.terms.provider}.`);
    }
    if (ticket.termsHash !== ref.terms.termsHash) {
      throw new BindingMismatchError(`The ticket binds terms ${ticket.termsHash}, not the channel's ${ref.terms.termsHash}.`);
    }
    assertTicketAdvances(this.#latest?.ticket, ticket);
    const previousAmount = this.#latest?.ticket.cumulativeAmount ?? 0n;
    // Under v3 terms the request decides what the ticket must prepay: its tool's price, 0 for a listing call.
    const prepaid = prepaidFor(pricing, request);
    if (ticket.cumulativeAmount - previousAmount < prepaid) {
      throw new TicketUnderpaidError(
        `Ticket seq ${ticket.seq} adds ${ticket.cumulativeAmount - previousAmount}; ${pricing.version === "3" ? "this call" : "one invocation"} ${pricing.version === "1" ? "costs" : "prepays"} ${prepaid}.`,
      );
    }
    if (ticket.cumulativeAmount > this.#deposit) {
      throw new DepositExceededError(
        `Ticket seq ${ticket.seq} authorises ${ticket.cumulativeAmount} but the channel holds ${this.#deposit}.`,
      );
    }
    // The ticket's root covers the receipts the payer had accepted when it signed: a prefix of ours.
    if (!Number.isInteger(leafCount) || leafCount < 0 || leafCount > this.accumulator.size) {
      throw new BindingMismatchError(
        `Ticket seq ${ticket.seq} claims a root over ${leafCount} receipts; the provider has issued ${this.accumulator.size}.`,
      );
    }
    const root = this.accumulator.prefixRoot(leafCount);
    if (ticket.receiptRoot !== root) {
      throw new BindingMismatchError(
        `Ticket seq ${ticket.seq} commits receipt root ${ticket.receiptRoot}; the provider's root over the first ${leafCount} receipts is ${root}.`,
      );
    }
    const grant = this.#grant;
    if (grant) {
      try {
        await verifyPaymentTicket({ domain, signed, signer: grant.grant.key });
      } catch {
        await verifyPaymentTicket({ domain, signed, signer: ref.terms.payer, check: this.parameters.payerSignatures });
        return undefined;
      }
      // Every ticket, not only the first: a revocation or the expiry may have come since the last one.
      assertSessionKeyLive(grant, this.#now(), this.#keyChain);
      assertWithinGrant(grant, ticket.cumulativeAmount, method);
      return grant;
    }
    await verifyPaymentTicket({ domain, signed, signer: ref.terms.payer, check: this.parameters.payerSignatures });
    return undefined;
  }

  /** What the receipts issued so far charged in total (the newest ticket's amount minus failed calls). */
  get charged(): bigint {
    return this.#charged;
  }

  /** The cooperative summary of everything accepted so far: what the receipts charged, not the newest ticket. */
  cooperativeSummary(): SettlementSummary {
    const { ref, sessionId } = this.parameters;
    return {
      sessionId,
      provider: ref.terms.provider,
      payer: ref.terms.payer,
      termsHash: ref.terms.termsHash,
      finalSeq: this.#latest?.ticket.seq ?? 0n,
      finalAmount: this.#charged,
      finalReceiptRoot: this.accumulator.root(),
      mode: "Cooperative",
    };
  }

  /**
   * Co-signs a cooperative close proposed by the payer, after checking the payer signed it and that it
   * is exactly the provider's own view (same seq, amount and receipt root).
   */
  async countersign(summary: SettlementSummary, payerSignature: Hex): Promise<Hex> {
    const mine = this.cooperativeSummary();
    for (const key of Object.keys(mine) as (keyof SettlementSummary)[]) {
      if (String(mine[key]).toLowerCase() !== String(summary[key]).toLowerCase()) {
        throw new BindingMismatchError(`The proposed summary's ${key} is ${summary[key]}; the provider's is ${mine[key]}.`);
      }
    }
    const { domain, ref, account } = this.parameters;
    const check = this.parameters.payerSignatures ?? assertDigestSigner;
    await check(settlementSummaryDigest(domain, summary), payerSignature, ref.terms.payer, "payer's settlement summary");
    return signSettlementSummary({ account, domain, summary });
  }
}
