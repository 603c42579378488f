/**
 * The MCP requests a payer sends with `ioi call` / `ioi stream --request-file`: a file of JSON-RPC
 * requests, one per line (JSON lines; blank lines and lines starting with `#` are skipped), or one built
 * from `--method` and `--params`. Each is checked here, at the boundary, so a bad line is named before
 * anything is paid for.
 */
import { readFileSync } from "node:fs";

import { parseJson } from "../core/canonical";
import { BaseError } from "../core/errors";
import { MAX_PACKET_BYTES } from "../core/packets";
import type { JsonObject } from "../core/validate";

/** A request file or `--params` that is not a list of JSON-RPC requests. */
export class RequestFileError extends BaseError {
  override name = "RequestFileError" as const;
}

/** Most requests one file may hold (each is a paid invocation). */
export const MAX_REQUESTS = 100_000;

/** Checks one JSON-RPC request; `where` names it in the error ("request-file line 3"). */
export function checkRequest(raw: unknown, where: string): JsonObject {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new RequestFileError(`${where} is not a JSON object.`);
  const r = raw as JsonObject;
  if (r.jsonrpc !== "2.0") throw new RequestFileError(`${where} must have "jsonrpc": "2.0".`);
  if (typeof r.method !== "string" || r.method.length === 0) throw new RequestFileError(`${where} has no "method" string.`);
  if (r.id === undefined || (typeof r.id !== "string" && typeof r.id !== "number")) throw new RequestFileError(`${where} needs an "id" (a string or a number): a notification gets no answer to pay for.`);
  if (r.params !== undefined && (typeof r.params !== "object" || r.params === null || Array.isArray(r.params))) {
    throw new RequestFileError(`${where} has "params" that is not an object.`);
  }
  for (const key of Object.keys(r)) if (!["jsonrpc", "id", "method", "params"].includes(key)) throw new RequestFileError(`${where} has an unknown key "${key}".`);
  return r;
}

/** Reads a JSON-lines file of requests (a file holding one JSON object is one request). */
export function readRequestFile(file: string): JsonObject[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new RequestFileError(`Cannot read the request file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  }
  const requests: JsonObject[] = [];
  const trimmed = text.trim();
  // A single pretty-printed object is one request.
  const lines = trimmed.startsWith("{") && !trimmed.includes("\n{") ? [trimmed] : text.split("\n");
  lines.forEach((line, i) => {
    if (line.trim() === "" || line.trim().startsWith("#")) return;
    const where = lines.length === 1 ? `The request in ${file}` : `${file} line ${i + 1}`;
    let raw: unknown;
    try {
      raw = parseJson(line, { maxBytes: MAX_PACKET_BYTES / 2, what: where });
    } catch (error) {
      throw new RequestFileError(`${where} is not valid JSON: ${(error as BaseError).shortMessage ?? (error as Error).message}`);
    }
    requests.push(checkRequest(raw, where));
    if (requests.length > MAX_REQUESTS) throw new RequestFileError(`${file} holds more than ${MAX_REQUESTS} requests.`);
  });
  if (requests.length === 0) throw new RequestFileError(`${file} holds no request.`);
  return requests;
}

/** One request from `--method` and `--params` (a JSON object, default none). */
export function requestFrom(method: string, params: string | undefined, id: string): JsonObject {
  let parsed: unknown;
  if (params !== undefined) {
    try {
      parsed = parseJson(params, { maxBytes: MAX_PACKET_BYTES / 2, what: "--params" });
    } catch (error) {
      throw new RequestFileError(`--params is not valid JSON: ${(error as BaseError).shortMessage ?? (error as Error).message}`);
    }
  }
  return checkRequest({ jsonrpc: "2.0", id, method, ...(parsed === undefined ? {} : { params: parsed }) }, "The request");
}
