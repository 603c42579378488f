/**
 * Errors that cross the control API's wire (decision 0029). Every JSON-RPC error carries a numeric `code`
 * (JSON-RPC 2.0's own where one fits, else -32000…-32099), a one-sentence `message`, and `data` with a stable
 * string `reason` and `retryable`: whether sending the same request again later can succeed (an RPC outage, a
 * provider node that is down) or cannot (bad params, a refused ticket, a revert). Both strings are protocol.
 */
import { BaseError } from "../core/errors";

/** Stable reasons, with their JSON-RPC code and whether a retry can help. */
export const API_ERRORS = {
  PARSE_ERROR: { code: -32700, retryable: false },
  INVALID_REQUEST: { code: -32600, retryable: false },
  METHOD_NOT_FOUND: { code: -32601, retryable: false },
  INVALID_PARAMS: { code: -32602, retryable: false },
  INTERNAL: { code: -32603, retryable: false },
  /** The SDK refused the action (a typed error: a revert, a refused ticket, a wrong state); retrying repeats it. */
  REFUSED: { code: -32000, retryable: false },
  /** Something it depends on did not answer (the chain's RPC, a provider node): retry later. */
  UNAVAILABLE: { code: -32001, retryable: true },
  /** The session, gig, case or subscription named does not exist here. */
  NOT_FOUND: { code: -32002, retryable: false },
  /** The request or frame is larger than the server accepts. */
  TOO_LARGE: { code: -32003, retryable: false },
  /** No valid bearer token (HTTP 401; a WebSocket upgrade is refused with 401). */
  UNAUTHORIZED: { code: -32004, retryable: false },
  /** The method needs a WebSocket connection (subscriptions). */
  NEEDS_WEBSOCKET: { code: -32005, retryable: false },
} as const;

export type ApiErrorReason = keyof typeof API_ERRORS;

export type WireError = { code: number; message: string; data: { reason: ApiErrorReason; retryable: boolean; name?: string } };

/** An error the API answers with as it is: its reason picks the code and the retry hint. */
export class ApiError extends BaseError {
  override name = "ApiError" as const;
  constructor(readonly reason: ApiErrorReason, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
  }
}

/** Node and viem error names and codes that mean "could not reach it", not "it said no". */
const UNAVAILABLE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);
const UNAVAILABLE_NAMES = new Set(["HttpRequestError", "TimeoutError", "WebSocketRequestError", "SocketClosedError", "TransportError", "ConnectTimeoutError"]);

function isUnavailable(error: unknown, depth = 0): boolean {
  if (depth > 5 || !(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === "string" && UNAVAILABLE_CODES.has(code)) return true;
  if (UNAVAILABLE_NAMES.has(error.name)) return true;
  return isUnavailable(error.cause, depth + 1);
}

/** The first line of a message, ending in one full stop: what crosses the wire. */
export function oneSentence(text: string): string {
  const line = (text.split("\n")[0] ?? "").trim().replace(/\s+/g, " ");
  const bounded = line.length > 400 ? `${line.slice(0, 397)}...` : line;
  return /[.?!]$/.test(bounded) ? bounded : `${bounded}.`;
}

/** What any thrown value becomes on the wire; a stack never leaves the process. */
export function toWireError(error: unknown): WireError {
  if (error instanceof ApiError) {
    const spec = API_ERRORS[error.reason];
    return { code: spec.code, message: oneSentence(error.shortMessage), data: { reason: error.reason, retryable: spec.retryable } };
  }
  if (isUnavailable(error)) {
    const text = error instanceof BaseError ? error.shortMessage : (error as Error).message;
    return { code: API_ERRORS.UNAVAILABLE.code, message: oneSentence(`Not reachable now: ${text}`), data: { reason: "UNAVAILABLE", retryable: true, name: (error as Error).name } };
  }
  if (error instanceof Error) {
    const text = (error as Error & { shortMessage?: string }).shortMessage ?? error.message;
    // Typed SDK errors (BaseError subclasses, viem's contract errors) are refusals: the same request fails again.
    const typed = error instanceof BaseError || typeof (error as { shortMessage?: unknown }).shortMessage === "string";
    if (typed) return { code: API_ERRORS.REFUSED.code, message: oneSentence(text), data: { reason: "REFUSED", retryable: false, name: error.name } };
    return { code: API_ERRORS.INTERNAL.code, message: oneSentence(`The server failed: ${text}`), data: { reason: "INTERNAL", retryable: false, name: error.name } };
  }
  return { code: API_ERRORS.INTERNAL.code, message: "The server failed with a value that is not an error.", data: { reason: "INTERNAL", retryable: false } };
}
