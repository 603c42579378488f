/**
 * The provider's MCP endpoint for x402 clients (issue 30 item 4, decision 0034): `ioi provider --x402-mcp-port PORT`.
 * A Streamable HTTP MCP server on the SDK's `Server` (127.0.0.1 unless the operator allows more) that speaks x402's MCP
 * transport, tool-result binding (x402 specs `transports-v2/mcp.md`):
 *
 * - `tools/list` is free: the worker's own list.
 * - A `tools/call` without `_meta["x402/payment"]` runs nothing and answers `isError: true` with x402's
 *   `PaymentRequired` in `structuredContent` and, as JSON, in `content[0].text`: scheme `ioi-channel`, the call's
 *   price under the signed terms (a v3 tool's own price), the provider, the network (chain id), the escrow, the terms
 *   hash and the request to be receipted.
 * - A `tools/call` whose `_meta["x402/payment"]` is an x402 `PaymentPayload` of that scheme (a channel ticket) goes to
 *   `ProviderNode.invokeDetached`: the same checks, store, results table and replay as a ticket over the sealed
 *   socket. The answer is the worker's result with `_meta["x402/payment-response"]` (the signed receipt and ticket).
 * - A payment that is refused (underpaid, stale seq, another channel, a bad signature, other terms, a closing channel)
 *   is answered like an unpaid call, with the refusal as the `PaymentRequired`'s `error` (one sentence); nothing ran
 *   and nothing is charged.
 */
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { Address } from "viem";

import type { BaseError } from "../core/errors";
import { channelRefFromJson, termsHashOf, type PricingTerms } from "../core/terms";
import { signedSessionKeyGrantFromJson } from "../core/session-key";
import { signedPaymentTicketFromJson } from "../core/ticket";
import type { JsonObject } from "../core/validate";
import { IOI_CHANNEL_SCHEME, paymentRequiredResult, paymentResponseOf, X402_PAYMENT_META, X402_PAYMENT_RESPONSE_META, x402NetworkOf, x402ToolRequest } from "../core/x402";
import { McpHttpSessions } from "./mcp-http-sessions";
import type { McpHandler, ProviderNode } from "./provider-node";

/** Largest request body read, in bytes; a larger one is answered 413 and the endpoint keeps serving. */
export const MAX_X402_REQUEST_BYTES = 1 << 20;

export type X402McpEndpointParameters = {
  node: Pick<ProviderNode, "invokeDetached">;
  /** The worker, for the free listing (`tools/list`); paid calls go through `node`. */
  handler: McpHandler;
  pricing: PricingTerms;
  chainId: number;
  escrow: Address;
  provider: Address;
  host?: string;
  port?: number;
  /** MCP sessions held at once (default {@link DEFAULT_MAX_MCP_SESSIONS}); the least recently used one goes first. */
  maxSessions?: number;
  log?: (line: string) => void;
};

export class X402McpEndpoint {
  readonly #sessions: McpHttpSessions;
  #http: HttpServer | undefined;
  #port = 0;

  private constructor(readonly parameters: X402McpEndpointParameters) {
    this.#sessions = new McpHttpSessions(parameters.maxSessions);
  }

  static async start(parameters: X402McpEndpointParameters): Promise<X402McpEndpoint> {
    const endpoint = new X402McpEndpoint(parameters);
    const http = createServer((req, res) => void endpoint.#onHttp(req, res));
    endpoint.#http = http;
    await new Promise<void>((resolve, reject) => {
      http.once("error", reject);
      http.listen(parameters.port ?? 0, parameters.host ?? "127.0.0.1", () => resolve());
    });
    endpoint.#port = (http.address() as AddressInfo).port;
    return endpoint;
  }

  get url(): string {
    const host = this.parameters.host ?? "127.0.0.1";
    return `http://${host.includes(":") ? `[${host}]` : host}:${this.#port}/mcp`;
  }

  /** An SDK server for one host's MCP session. */
  #server(): Server {
    const server = new Server({ name: "ioi-provider-x402", version: "1" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async (request) => {
      const outcome = await this.parameters.handler({ jsonrpc: "2.0", id: 0, method: "tools/list", ...(request.params ? { params: request.params as JsonObject } : {}) });
      // A plain error with the worker's code: an McpError's message would reach the host with its prefix twice.
      if ("error" in outcome) throw Object.assign(new Error(outcome.error.message), { code: outcome.error.code });
      return outcome.result as never;
    });
    server.setRequestHandler(CallToolRequestSchema, async (request) => (await this.call(request.params as JsonObject)) as never);
    return server;
  }

  /** One `tools/call` (its `params`): the x402 answer, unpaid, refused or paid. */
  async call(params: JsonObject): Promise<JsonObject> {
    const { pricing, chainId, escrow, provider } = this.parameters;
    const name = params.name as string;
    const request = x402ToolRequest(name, params.arguments as JsonObject | undefined);
    const ask = (error?: string) => paymentRequiredResult({ chainId, escrow, provider, termsHash: termsHashOf(pricing), pricing, request, tool: name, ...(error ? { error } : {}) });
    const payment = (params._meta as JsonObject | undefined)?.[X402_PAYMENT_META] as JsonObject | undefined;
    if (payment === undefined) return ask();
    let paid;
    try {
      const accepted = payment.accepted as JsonObject | undefined;
      if (payment.x402Version !== 2 || typeof accepted !== "object" || accepted === null) throw new McpError(ErrorCode.InvalidParams, "The x402 payment is not an x402 version 2 PaymentPayload with the accepted requirements.");
      if (accepted.scheme !== IOI_CHANNEL_SCHEME || accepted.network !== x402NetworkOf(chainId)) {
        throw new McpError(ErrorCode.InvalidParams, `The payment is in scheme ${String(accepted.scheme)} on ${String(accepted.network)}; this provider takes ${IOI_CHANNEL_SCHEME} on ${x402NetworkOf(chainId)}.`);
      }
      const payload = (payment.payload ?? {}) as JsonObject;
      const ticket = signedPaymentTicketFromJson(payload.ticket, "x402/payment.payload.ticket");
      const leafCount = payload.leafCount;
      if (leafCount !== undefined && (typeof leafCount !== "number" || !Number.isSafeInteger(leafCount) || leafCount < 0)) throw new McpError(ErrorCode.InvalidParams, "x402/payment.payload.leafCount must be a non-negative integer.");
      const ref = payload.ref === undefined ? undefined : channelRefFromJson(payload.ref, "x402/payment.payload.ref");
      const sessionKey = payload.sessionKey === undefined ? undefined : signedSessionKeyGrantFromJson(payload.sessionKey, "x402/payment.payload.sessionKey");
      const detached = { request, ticket, ...(leafCount === undefined ? {} : { leafCount: leafCount as number }), ...(ref ? { ref } : {}), ...(sessionKey ? { sessionKey } : {}) };
      paid = { ticket, ...(await this.parameters.node.invokeDetached(detached)) };
    } catch (error) {
      return ask(`The payment was refused: ${sentence(error)}`);
    }
    const { answer, ticket, payer } = paid;
    if ("type" in answer) return ask(`The payment was refused (${answer.error}): ${answer.message}`);
    const { receipt, mcp } = answer.payload;
    if (mcp.result !== undefined) {
      const result = mcp.result as JsonObject;
      const response = paymentResponseOf({ chainId, payer, ticket, receipt });
      return { ...result, _meta: { ...((result._meta as JsonObject | undefined) ?? {}), [X402_PAYMENT_RESPONSE_META]: response as unknown as JsonObject } };
    }
    // The tool failed (or the answer is a replay whose output was not kept): receipted at 0, nothing charged.
    const error = (mcp.error ?? {}) as { message?: unknown };
    const message = typeof error.message === "string" ? error.message : "The tool failed.";
    const response = paymentResponseOf({ chainId, payer, ticket, receipt, failed: receipt.receipt.metering.amount === 0n });
    return { isError: true, content: [{ type: "text", text: `${message} (charged ${receipt.receipt.metering.amount}; receipt seq ${receipt.receipt.seq})` }], _meta: { [X402_PAYMENT_RESPONSE_META]: response as unknown as JsonObject } };
  }

  #onHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    return this.#sessions.serve(req, res, {
      maxBytes: MAX_X402_REQUEST_BYTES,
      server: () => this.#server(),
      unknownSession: "The MCP session is unknown (the provider restarted?); initialize again.",
      failure: "The provider could not serve this request.",
      onError: (error) => this.parameters.log?.(`x402 MCP request failed: ${sentence(error)}`),
    });
  }

  async stop(): Promise<void> {
    await this.#sessions.closeAll();
    if (this.#http) await new Promise<void>((resolve) => this.#http!.close(() => resolve()));
  }
}

function sentence(error: unknown): string {
  const e = error as BaseError & { message?: string };
  return (e.shortMessage ?? e.message ?? String(error)).split("\n")[0]!.replace(/^MCP error -?\d+: /, "");
}
