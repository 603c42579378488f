/**
 * x402's wire shapes for a payment by channel ticket (issue 30 item 4, decision 0034), in the pure core so both the
 * payer's gateway (`node/mcp-gateway.ts`) and the `ioi-settlement/x402` entry point (`roles/x402.ts`, the scheme
 * client and the provider's check) use them: the scheme's `PaymentRequirements`, x402's MCP answer to an unpaid
 * `tools/call`, and the settlement response that carries our ticket and receipt.
 */
import type { PaymentRequired, PaymentRequirements, SettleResponse } from "@x402/core/dist/cjs/types"; // types only (erased): TypeScript's node10 resolution does not read the exports map
import { zeroAddress, type Address, type Hex } from "viem";

import { BaseError } from "./errors";
import { sessionReceiptHash, signedSessionReceiptToJson, type SignedSessionReceipt } from "./receipt";
import { prepaidFor, type PricingTerms } from "./terms";
import { signedPaymentTicketToJson, type SignedPaymentTicket } from "./ticket";
import type { JsonObject } from "./validate";

/** The x402 scheme name of a payment by channel ticket. */
export const IOI_CHANNEL_SCHEME = "ioi-channel";
/** x402's MCP `_meta` keys and its payment-required code (specs/transports-v2/mcp.md). */
export const X402_PAYMENT_META = "x402/payment";
export const X402_PAYMENT_RESPONSE_META = "x402/payment-response";
export const X402_VERSION = 2;

/** The CAIP-2 network x402 names an EVM chain by. */
export function x402NetworkOf(chainId: number | bigint): `eip155:${string}` {
  return `eip155:${chainId}`;
}

/** An x402 payment that cannot be made or accepted; says why in one sentence. */
export class X402ChannelError extends BaseError {
  override name = "X402ChannelError" as const;
}

export type ChannelPaymentParameters = {
  chainId: number;
  escrow: Address;
  provider: Address;
  /** The channel, when the asker knows it; a provider answering a stranger's unpaid call names none (any of its channels). */
  sessionId?: Hex;
  termsHash: Hex;
  pricing: PricingTerms;
  /** The JSON-RPC request the payment is for (its tool decides the price under v3 terms). */
  request: JsonObject;
  maxTimeoutSeconds?: number;
};

/**
 * What the provider asks for one call, as x402 `PaymentRequirements`: scheme `ioi-channel`, the channel's
 * network and asset (the zero address: native ETH), the call's price (what its ticket must add) paid to the
 * provider; `extra` names the channel and carries the request, so the payer can price it itself.
 */
export function channelPaymentRequirements(p: ChannelPaymentParameters): PaymentRequirements {
  return {
    scheme: IOI_CHANNEL_SCHEME,
    network: x402NetworkOf(p.chainId),
    asset: zeroAddress,
    amount: prepaidFor(p.pricing, p.request).toString(),
    payTo: p.provider,
    maxTimeoutSeconds: p.maxTimeoutSeconds ?? 60,
    extra: { escrow: p.escrow, ...(p.sessionId ? { sessionId: p.sessionId } : {}), termsHash: p.termsHash, request: p.request },
  };
}

/**
 * The request a `tools/call` over x402's MCP transport is receipted as (decision 0034): the tool and its arguments in a
 * JSON-RPC request of fixed id, without `_meta`. The unpaid answer carries it (`extra.request`), the payer signs its
 * ticket over it, and the provider runs and hashes exactly it, so the receipt's request hash is the same on both sides
 * whatever JSON-RPC ids the host's retries use.
 */
export function x402ToolRequest(name: string, args: JsonObject | undefined): JsonObject {
  return { jsonrpc: "2.0", id: 0, method: "tools/call", params: { name, ...(args === undefined ? {} : { arguments: args }) } };
}

/** x402's MCP answer to an unpaid `tools/call`: `isError`, the `PaymentRequired` as structured content and as text. */
export function paymentRequiredResult(p: ChannelPaymentParameters & { tool: string; error?: string }): JsonObject {
  const required: PaymentRequired = {
    x402Version: X402_VERSION,
    error: p.error ?? "Payment required to call this tool",
    resource: { url: `mcp://tool/${p.tool}`, description: `MCP tool ${p.tool}, paid through an ioi-settlement channel` },
    accepts: [channelPaymentRequirements(p)],
  };
  return { isError: true, structuredContent: required as unknown as JsonObject, content: [{ type: "text", text: JSON.stringify(required) }] };
}

/**
 * x402's settlement response for a paid call (`_meta["x402/payment-response"]`): the channel settles off-chain, so
 * `transaction` is the signed receipt's hash, and the receipt and ticket themselves ride in `extensions`.
 */
export function paymentResponseOf(p: { chainId: number; payer: Address; ticket: SignedPaymentTicket; receipt: SignedSessionReceipt; failed?: boolean }): SettleResponse {
  return {
    success: p.failed !== true,
    // A call the tool failed is receipted at 0 (decision 0022): nothing settles, the receipt still rides along.
    ...(p.failed ? { errorReason: "tool_failed_not_charged" } : {}),
    transaction: sessionReceiptHash(p.receipt.receipt),
    network: x402NetworkOf(p.chainId),
    payer: p.payer,
    amount: p.receipt.receipt.metering.amount.toString(),
    extensions: { "ioi-settlement": { ticket: signedPaymentTicketToJson(p.ticket), receipt: signedSessionReceiptToJson(p.receipt) } },
  };
}
