/**
 * `ioi-settlement/x402` (issue 30 item 4, decision 0034): a channel scheme for x402's client library. An
 * application that already pays through `@x402/core`'s `x402Client` registers {@link IoiChannelSchemeClient} for
 * the chain's CAIP-2 network and then pays a provider's `PaymentRequired` (scheme `ioi-channel`) with a ticket of
 * our channel instead of an on-chain transfer per call. The provider checks the payload with
 * {@link verifyChannelPayment} (every rule a ticket over the sealed socket meets) and answers in x402's MCP shape:
 * `paymentRequiredResult` for an unpaid `tools/call`, `paymentResponseOf` in `_meta["x402/payment-response"]` with
 * the signed receipt (both from `core/x402.ts`, re-exported here).
 *
 * ```ts
 * import { x402Client } from "@x402/core/client";
 * import { IoiChannelSchemeClient, x402NetworkOf } from "ioi-settlement/x402";
 * const client = new x402Client().register(x402NetworkOf(chainId), new IoiChannelSchemeClient({ session }));
 * const payment = await client.createPaymentPayload(paymentRequired); // → _meta["x402/payment"]
 * ```
 */
import type { PaymentPayloadResult, PaymentRequirements, SchemeNetworkClient } from "@x402/core/dist/cjs/types"; // types only (erased): TypeScript's node10 resolution does not read the exports map

import { canonBytes } from "../core/canonical";
import { signedSessionReceiptFromJson } from "../core/receipt";
import { signedSessionKeyGrantToJson } from "../core/session-key";
import { channelRefToJson, prepaidFor } from "../core/terms";
import { signedPaymentTicketFromJson, signedPaymentTicketToJson, type SignedPaymentTicket } from "../core/ticket";
import type { JsonObject } from "../core/validate";
import { IOI_CHANNEL_SCHEME, X402_PAYMENT_RESPONSE_META, X402ChannelError, x402NetworkOf } from "../core/x402";
import type { StepRecord } from "../store/store";
import type { PayerSession } from "../node/payer-session";
import type { ProviderSession } from "../node/provider-session";

export * from "../core/x402";

/**
 * The payer's side of the scheme, registered with `x402Client.register(network, scheme)`. It pays only
 * requirements for its own channel (session, provider, network) whose amount is exactly what the channel's terms
 * price the carried request at, by signing the next ticket of `session` (the same seq discipline as the sealed
 * socket: the provider must receive the tickets in order).
 */
export class IoiChannelSchemeClient implements SchemeNetworkClient {
  readonly scheme = IOI_CHANNEL_SCHEME;

  constructor(readonly parameters: { session: PayerSession }) {}

  async createPaymentPayload(x402Version: number, requirements: PaymentRequirements): Promise<PaymentPayloadResult> {
    const session = this.parameters.session;
    const { domain, ref, sessionId, pricing } = session.parameters;
    const extra = requirements.extra ?? {};
    if (requirements.scheme !== IOI_CHANNEL_SCHEME) throw new X402ChannelError(`The requirements are for scheme ${requirements.scheme}, not ${IOI_CHANNEL_SCHEME}.`);
    if (requirements.network !== x402NetworkOf(domain.chainId)) throw new X402ChannelError(`The requirements are for network ${requirements.network}; this channel is on ${x402NetworkOf(domain.chainId)}.`);
    // A provider answering a host it does not know names no session: any channel with it on these terms pays.
    if ((extra.sessionId !== undefined && extra.sessionId !== sessionId) || String(requirements.payTo).toLowerCase() !== ref.terms.provider.toLowerCase()) {
      throw new X402ChannelError(`The requirements name session ${String(extra.sessionId)} paying ${requirements.payTo}; this payer's channel is ${sessionId} with ${ref.terms.provider}.`);
    }
    if (extra.termsHash !== ref.terms.termsHash || String(extra.escrow).toLowerCase() !== domain.verifyingContract.toLowerCase()) {
      throw new X402ChannelError(`The requirements are for terms ${String(extra.termsHash)} at escrow ${String(extra.escrow)}; this channel is on ${ref.terms.termsHash} at ${domain.verifyingContract}: the price list changed; nothing was signed.`);
    }
    const request = extra.request;
    if (typeof request !== "object" || request === null || Array.isArray(request)) throw new X402ChannelError("The requirements carry no request to price; nothing was signed.");
    const price = prepaidFor(pricing, request);
    if (BigInt(requirements.amount) !== price) {
      throw new X402ChannelError(`The provider asks ${requirements.amount} for this call; the channel's terms price it at ${price}; nothing was signed.`);
    }
    const next = await session.nextTicket(canonBytes(request as JsonObject), request);
    // The channel's terms ride along, so a provider meeting the channel first over x402 can bind it.
    // A session key's ticket brings the payer's grant for it (decision 0025), as session.open does on the socket.
    const grant = session.parameters.sessionKey?.grant;
    return {
      x402Version,
      payload: {
        ticket: signedPaymentTicketToJson(next.signed),
        leafCount: next.leafCount,
        ref: channelRefToJson(ref) as unknown as Record<string, unknown>,
        ...(grant ? { sessionKey: signedSessionKeyGrantToJson(grant) as unknown as Record<string, unknown> } : {}),
      },
    };
  }

  /**
   * Takes the provider's answer to a paid call (an MCP `CallToolResult` with `_meta["x402/payment-response"]`) into the
   * channel: the signed receipt it carries must be the one for the oldest ticket awaiting one and must bind exactly the
   * result received (its output hash over the result without the x402 key) — `PayerSession.acceptReceipt`'s checks.
   * Returns the step for the payer's store. A refused payment (a `PaymentRequired` answer) carries no receipt: call
   * {@link IoiChannelSchemeClient.forgetRefused} instead.
   */
  async acceptPaidResult(result: Record<string, unknown>): Promise<Required<StepRecord>> {
    const meta = (result._meta ?? {}) as Record<string, unknown>;
    const response = meta[X402_PAYMENT_RESPONSE_META] as { success?: unknown; extensions?: Record<string, { receipt?: unknown }> } | undefined;
    const carried = response?.extensions?.["ioi-settlement"]?.receipt;
    if (carried === undefined) throw new X402ChannelError(`The answer carries no ioi-settlement receipt in _meta["${X402_PAYMENT_RESPONSE_META}"].`);
    const receipt = signedSessionReceiptFromJson(carried, "x402/payment-response.extensions.ioi-settlement.receipt");
    const rest: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(meta)) if (k !== X402_PAYMENT_RESPONSE_META) rest[k] = v;
    const { _meta: _dropped, ...body } = result;
    void _dropped;
    const failed = response?.success === false;
    // A failed call's receipt binds `{ error }`, which the provider does not repeat: only its charge (0) is checked.
    const output = failed ? undefined : canonBytes((Object.keys(rest).length ? { ...body, _meta: rest } : body) as JsonObject);
    return this.parameters.session.acceptReceipt(receipt, output, failed);
  }

  /** The provider refused the payment for ticket `seq` (nothing was run): it stops awaiting a receipt. */
  forgetRefused(seq: bigint): void {
    this.parameters.session.dropPending(seq);
  }
}

/**
 * The provider's check of an x402 payment by ticket (`_meta["x402/payment"]`'s `payload`) for `request`: the same
 * rules as a ticket over the sealed socket (`ProviderSession.checkTicket`: session, provider, terms, seq, the call's
 * price, deposit, root, signature or session key). Resolves with the ticket; throws a typed error otherwise.
 */
export async function verifyChannelPayment(session: ProviderSession, payload: Record<string, unknown>, request: JsonObject): Promise<SignedPaymentTicket> {
  const ticket = signedPaymentTicketFromJson(payload.ticket, "x402/payment.payload.ticket");
  const leafCount = payload.leafCount;
  if (leafCount !== undefined && (typeof leafCount !== "number" || !Number.isSafeInteger(leafCount))) throw new X402ChannelError("x402/payment.payload.leafCount must be an integer.");
  await session.checkTicket(ticket, leafCount as number | undefined, typeof request.method === "string" ? request.method : undefined, request);
  return ticket;
}
