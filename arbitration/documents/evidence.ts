/**
 * Evidence by hash (decision 0031). A case commits its challenge package by `packageHash` (the keccak-256 of the
 * package's canonical JSON, which covers every evidence item); a party says where the bytes are with
 * `DisputeManager.publishEvidence(caseId, uri)`; an arbitrator fetches them from any such URI and keeps them only
 * if they hash to the committed value. The URI is a hint, never trusted: a host that is down, slow, or serves
 * other bytes makes the fetch fail (`EvidenceUnavailableError`, retryable), and the arbitrator signs nothing.
 *
 * URIs: `http://` or `https://` (a URI ending in `/` gets the package hash appended: `GET /<0xhash>`, as
 * `ioi evidence serve` answers), or `data:` carrying the bytes themselves (small packages, see the decision).
 */
import { createServer, type Server } from "node:http";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

import { keccak256, type Hex } from "viem";

import { BaseError } from "../../channel-client/core/errors";
import { packageHash, parsePackage, type ChallengePackage } from "./package";

/** Largest package an arbitrator downloads (a package holds at most 64 evidence items; code bundles are small). */
export const MAX_EVIDENCE_BYTES = 16 * 1024 * 1024;

/** Packages at most this large go on-chain as a `data:` URI in calldata; larger ones are served (decision 0031). */
export const INLINE_EVIDENCE_LIMIT = 4 * 1024;

/** The evidence could not be had from a URI: down, slow, too large, or not the committed bytes. Retryable. */
export class EvidenceUnavailableError extends BaseError {
  override name = "EvidenceUnavailableError" as const;
  readonly retryable = true;
  constructor(readonly uri: string, readonly reason: "unreachable" | "timeout" | "status" | "too_large" | "hash_mismatch" | "unparsable" | "scheme", detail: string) {
    super(`Evidence at ${uri} is unavailable (${reason}): ${detail}`);
  }
}

/** Where to GET the package `hash` from `uri` (a base ending in `/` is completed with the hash). */
export function evidenceLocation(uri: string, hash: Hex): string {
  return uri.endsWith("/") ? `${uri}${hash.toLowerCase()}` : uri;
}

/** A `data:` URI that carries `bytes` (base64), for a package small enough to publish in calldata. */
export function dataUri(bytes: Uint8Array): string {
  return `data:application/json;base64,${Buffer.from(bytes).toString("base64")}`;
}

function decodeDataUri(uri: string): Uint8Array {
  const comma = uri.indexOf(",");
  if (comma < 0) throw new EvidenceUnavailableError(uri.slice(0, 40), "unparsable", "a data: URI needs a comma before its payload.");
  const meta = uri.slice(5, comma);
  const payload = uri.slice(comma + 1);
  return meta.endsWith(";base64") ? new Uint8Array(Buffer.from(payload, "base64")) : new TextEncoder().encode(decodeURIComponent(payload));
}

export type FetchEvidenceParameters = {
  uri: string;
  /** The case's on-chain `packageHash`. */
  packageHash: Hex;
  /** Whole fetch, connection to last byte (default 10 s). */
  timeoutMs?: number;
  maxBytes?: number;
  fetch?: typeof globalThis.fetch;
};

/** The package at `uri`, only if its canonical hash is the committed one. */
export async function fetchPackage(parameters: FetchEvidenceParameters): Promise<{ pkg: ChallengePackage; bytes: Uint8Array }> {
  const { uri, packageHash: expected } = parameters;
  const maxBytes = parameters.maxBytes ?? MAX_EVIDENCE_BYTES;
  let bytes: Uint8Array;
  const shown = uri.startsWith("data:") ? `${uri.slice(0, 32)}…` : uri;
  if (uri.startsWith("data:")) {
    bytes = decodeDataUri(uri);
  } else if (/^https?:\/\//.test(uri)) {
    const location = evidenceLocation(uri, expected);
    const timeoutMs = parameters.timeoutMs ?? 10_000;
    let response: Response;
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      response = await (parameters.fetch ?? fetch)(location, { signal, redirect: "error" });
      if (!response.ok) throw new EvidenceUnavailableError(location, "status", `HTTP ${response.status}.`);
      const length = Number(response.headers.get("content-length") ?? "0");
      if (length > maxBytes) throw new EvidenceUnavailableError(location, "too_large", `${length} bytes; the limit is ${maxBytes}.`);
      bytes = await readAtMost(response, maxBytes, location);
    } catch (error) {
      if (error instanceof EvidenceUnavailableError) throw error;
      if (signal.aborted) throw new EvidenceUnavailableError(location, "timeout", `no complete answer within ${timeoutMs} ms.`);
      throw new EvidenceUnavailableError(location, "unreachable", error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error));
    }
  } else {
    throw new EvidenceUnavailableError(shown, "scheme", "only http, https and data URIs are fetched.");
  }
  if (bytes.length > maxBytes) throw new EvidenceUnavailableError(shown, "too_large", `${bytes.length} bytes; the limit is ${maxBytes}.`);
  let pkg: ChallengePackage;
  try {
    pkg = parsePackage(bytes);
  } catch (error) {
    throw new EvidenceUnavailableError(shown, "unparsable", error instanceof Error ? error.message.split("\n")[0]! : String(error));
  }
  const got = packageHash(pkg);
  if (got !== expected.toLowerCase() && got !== expected) {
    throw new EvidenceUnavailableError(shown, "hash_mismatch", `the package hashes to ${got}, the case committed ${expected}.`);
  }
  return { pkg, bytes };
}

/** The body, stopping (and refusing) as soon as it passes `maxBytes`, whatever Content-Length claimed. */
async function readAtMost(response: Response, maxBytes: number, location: string): Promise<Uint8Array> {
  if (!response.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > maxBytes) {
      await reader.cancel();
      throw new EvidenceUnavailableError(location, "too_large", `more than ${maxBytes} bytes.`);
    }
    chunks.push(value);
  }
  return new Uint8Array(Buffer.concat(chunks));
}

/** Every hash a file answers to: the keccak-256 of its bytes and, for a challenge package, its canonical hash. */
function hashesOf(bytes: Uint8Array): Hex[] {
  const hashes: Hex[] = [keccak256(bytes)];
  try {
    hashes.push(packageHash(parsePackage(bytes)));
  } catch {
    // Not a package: addressed by its raw hash only.
  }
  return hashes;
}

export type EvidenceServer = { url: string; port: number; close: () => Promise<void>; server: Server };

/**
 * `ioi evidence serve`: answers `GET /<0xhash>` with the file of `dir` whose bytes (or, for a challenge package,
 * canonical form) hash to it, and 404 otherwise. Loopback only; read-only; the folder is re-indexed when a
 * hash is not found, so files dropped in later are served.
 */
export async function serveEvidence(parameters: { dir: string; port?: number }): Promise<EvidenceServer> {
  const { dir } = parameters;
  const index = new Map<string, string>();
  const seen = new Map<string, number>();
  const reindex = () => {
    for (const name of readdirSync(dir)) {
      const file = path.join(dir, name);
      const stat = statSync(file);
      if (!stat.isFile() || stat.size > MAX_EVIDENCE_BYTES || seen.get(file) === stat.mtimeMs) continue;
      seen.set(file, stat.mtimeMs);
      for (const hash of hashesOf(readFileSync(file))) index.set(hash.toLowerCase(), file);
    }
  };
  reindex();
  const server = createServer((request, response) => {
    const match = /^\/(0x[0-9a-fA-F]{64})$/.exec(request.url ?? "");
    if (request.method !== "GET" || !match) {
      response.writeHead(request.method === "GET" ? 404 : 405, { "content-type": "text/plain" }).end("GET /<0x-prefixed 32-byte hash>\n");
      return;
    }
    const hash = match[1]!.toLowerCase();
    if (!index.has(hash)) reindex();
    const file = index.get(hash);
    if (!file) {
      response.writeHead(404, { "content-type": "text/plain" }).end(`No file in the folder hashes to ${hash}.\n`);
      return;
    }
    const bytes = readFileSync(file);
    response.writeHead(200, { "content-type": "application/json", "content-length": bytes.length, "cache-control": "public, max-age=31536000, immutable" }).end(bytes);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(parameters.port ?? 0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/`,
    port,
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
