/**
 * Where a provider node listens and where a payer dials (decision 0022). Loopback is the default and
 * needs no flag; any other address must be asked for explicitly (`--allow-public` to listen on one,
 * `--allow-remote` to dial one), because it exposes the node or the payer's key-holding process to the
 * network. The sealed handshake authenticates the provider's key either way.
 */
import { isIP } from "node:net";

import { BaseError } from "../core/errors";

/** A host or HOST:PORT that is malformed, or not loopback without the flag that allows it. */
export class EndpointError extends BaseError {
  override name = "EndpointError" as const;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"]);
const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Parses HOST:PORT (IPv6 in brackets: [::1]:7000). A non-loopback host needs `allowRemote`.
 * Returns the host as `net.connect` takes it.
 */
export function parsePeer(peer: string, allowRemote: boolean): { host: string; port: number } {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]\s]+):(\d{1,5})$/.exec(peer);
  const port = match ? Number(match[2]) : NaN;
  if (!match || port < 1 || port > 65535) {
    throw new EndpointError(`--peer must be HOST:PORT such as 127.0.0.1:7000 (IPv6 as [::1]:7000); received "${peer}".`);
  }
  const host = match[1]!.startsWith("[") ? match[1]!.slice(1, -1) : match[1]!;
  if (match[1]!.startsWith("[") ? isIP(host) !== 6 : isIP(host) === 0 && !HOSTNAME.test(host)) {
    throw new EndpointError(`--peer names no valid host: "${peer}".`);
  }
  if (!isLoopback(host) && !allowRemote) {
    throw new EndpointError(`--peer ${peer} is not on this machine; add --allow-remote to dial a remote provider (its key is still checked by the sealed handshake).`);
  }
  return { host: host === "localhost" ? "127.0.0.1" : host, port };
}

/** The address a provider node listens on: loopback by default; anything else needs `allowPublic`. */
export function listenHost(host: string | undefined, allowPublic: boolean): string {
  const h = host ?? "127.0.0.1";
  if (isIP(h) === 0 && h !== "localhost") throw new EndpointError(`--host must be an IP address such as 127.0.0.1 or 0.0.0.0; received "${h}".`);
  if (!isLoopback(h) && !allowPublic) {
    throw new EndpointError(`--host ${h} exposes the provider node beyond this machine; add --allow-public to do so (see the README, "Serving real work").`);
  }
  return h === "localhost" ? "127.0.0.1" : h;
}

/** 0.0.0.0 or :: (any spelling): an address to listen on that no payer can dial. */
export function isWildcard(host: string): boolean {
  if (isIP(host) === 4) return host.split(".").every((part) => Number(part) === 0);
  return isIP(host) === 6 && /^[0:]+$/.test(host);
}

/**
 * What a process of a provider fleet publishes as its endpoints (decision 0036): the `--advertise` list (repeated
 * or comma-separated HOST:PORT, each a dialable address, given once), else the address it listens on — or nothing
 * when it listens on a wildcard address (0.0.0.0, ::), which no payer can dial. Never publishes a wildcard.
 */
export function advertisedEndpoints(listen: string, port: number, advertise: readonly string[] | string | undefined): string[] {
  const given = advertise === undefined ? [] : (Array.isArray(advertise) ? advertise : [advertise]).flatMap((a: string) => a.split(",")).map((a) => a.trim());
  if (given.length === 0) return isWildcard(listen) ? [] : [isIP(listen) === 6 ? `[${listen}]:${port}` : `${listen}:${port}`];
  const seen = new Set<string>();
  for (const entry of given) {
    if (entry === "") throw new EndpointError("--advertise has an empty entry: list the addresses payers dial as HOST:PORT,HOST:PORT.");
    let host: string;
    try {
      host = parsePeer(entry, true).host;
    } catch {
      throw new EndpointError(`--advertise must be HOST:PORT that payers can dial, such as 203.0.113.7:7000 (IPv6 as [2001:db8::1]:7000); received "${entry}".`);
    }
    if (isWildcard(host)) throw new EndpointError(`--advertise ${entry} is a wildcard address no payer can dial: give the address payers reach this process at.`);
    if (seen.has(entry)) throw new EndpointError(`--advertise names ${entry} twice: list each endpoint once.`);
    seen.add(entry);
  }
  return [...seen];
}
