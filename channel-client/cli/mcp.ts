/**
 * `ioi mcp` (issue 30, decision 0033): the payer's MCP gateway. A host adds it with one configuration entry and
 * sees the provider's tools, resources and prompts as the gateway's own; each call is paid through the channel
 * within the budgets given here. Over stdio (default) nothing but MCP is written to stdout; logs go to stderr.
 */
import path from "node:path";

import { getAddress, isAddress, type Hex } from "viem";

import { EndpointError, listenHost, parsePeer } from "../node/endpoints";
import { chainClients, sessionKeyOf } from "./channel-plumbing";
import { hashOption, loadAccount, need, openStore, storePath, uint, UsageError, weiAmount, type Command, type Out } from "./common";

export const MCP_COMMAND: Command = {
  summary: "serve an MCP gateway (stdio, or Streamable HTTP on 127.0.0.1) that pays each call through a channel",
  usage:
    "ioi mcp --provider ADDR --peer HOST:PORT --budget-call WEI --budget-channel WEI --budget-day WEI [--deposit WEI] [--terms-hash H] [--session-key FILE] [--http PORT [--host IP --allow-public]] [--state FILE] [--call-timeout MS]",
  notes: [
    "  --deposit WEI is what the channel is opened with and each top-up adds (default: the channel budget).",
    "  A tools/call with _meta[\"ioi-settlement/idempotency-key\"] is paid at most once, across retries and restarts.",
    "  Over stdio nothing but MCP is written to stdout; logs go to stderr.",
  ],
  examples: [
    "ioi mcp --provider 0xProv… --peer 127.0.0.1:7000 --budget-call 1000000000000000 --budget-channel 100000000000000000 --budget-day 50000000000000000",
  ],
  options: {
    provider: { type: "string" },
    peer: { type: "string" },
    "allow-remote": { type: "boolean" },
    "budget-call": { type: "string" },
    "budget-channel": { type: "string" },
    "budget-day": { type: "string" },
    deposit: { type: "string" },
    "terms-hash": { type: "string" },
    "session-key": { type: "string" },
    http: { type: "string" },
    host: { type: "string" },
    "allow-public": { type: "boolean" },
    state: { type: "string" },
    "call-timeout": { type: "string" },
  },
  run: runMcp,
};

async function runMcp(values: Record<string, unknown>, out: Out): Promise<void> {
  const provider = need(values, "provider", "the provider's address");
  if (!isAddress(provider)) throw new UsageError(`--provider must be an address; received "${provider}".`);
  const peerText = need(values, "peer", "where the provider node listens (HOST:PORT)");
  let peer: { host: string; port: number };
  let httpHost = "127.0.0.1";
  try {
    peer = parsePeer(peerText, values["allow-remote"] === true);
    if (values.host !== undefined) httpHost = listenHost(values.host as string, values["allow-public"] === true);
  } catch (error) {
    if (error instanceof EndpointError) throw new UsageError(error.shortMessage);
    throw error;
  }
  const budgets = {
    perCall: weiAmount(values, "budget-call", "most one call may prepay, in wei"),
    perChannel: weiAmount(values, "budget-channel", "most the channel may hold, in wei"),
    perDay: weiAmount(values, "budget-day", "most paid per UTC day, in wei"),
  };
  if (budgets.perChannel === 0n) throw new UsageError("--budget-channel must be more than zero: a channel with nothing in it can pay for nothing.");
  const deposit = values.deposit === undefined ? undefined : weiAmount(values, "deposit", "wei to open the channel with and to add per top-up");
  if (deposit !== undefined && (deposit === 0n || deposit > budgets.perChannel)) throw new UsageError(`--deposit must be more than 0 and at most --budget-channel (${budgets.perChannel}).`);
  const expectedTermsHash = values["terms-hash"] === undefined ? undefined : hashOption(values, "terms-hash", "the agreed terms hash");
  const callTimeoutMs = Number(uint(values, "call-timeout", "milliseconds a forwarded call may take", 60_000n));
  if (callTimeoutMs === 0 || callTimeoutMs > 3_600_000) throw new UsageError("--call-timeout must be between 1 and 3600000 milliseconds.");
  const httpPort = values.http === undefined ? undefined : Number(uint(values, "http", "TCP port for Streamable HTTP (0 = any free port)"));
  if (httpPort !== undefined && httpPort > 65535) throw new UsageError(`--http must be a port of at most 65535; received ${httpPort}.`);
  const statePath = (values.state as string | undefined) ?? path.join(path.dirname(path.resolve(storePath(values, "payer"))), "mcp-gateway.db");

  const account = loadAccount(values);
  const { publicClient, wallet, escrow, chainId } = await chainClients(values, account);
  const store = openStore(values, "payer");
  const { createPayer } = await import("../roles/payer");
  const { McpGateway } = await import("../node/mcp-gateway");
  const payer = createPayer({ deployment: { chainId, contracts: { GasEscrow: escrow } }, publicClient, wallet: wallet!, store });
  let sessionKey;
  const log = (line: string) => process.stderr.write(`ioi mcp: ${line}\n`);
  let gateway;
  try {
    if (values["session-key"] !== undefined) sessionKey = sessionKeyFor(values);
    gateway = await McpGateway.start({
      payer,
      provider: getAddress(provider),
      peer,
      budgets,
      ...(deposit !== undefined ? { deposit } : {}),
      ...(expectedTermsHash !== undefined ? { expectedTermsHash } : {}),
      ...(sessionKey ? { sessionKey } : {}),
      statePath,
      callTimeoutMs,
      log,
    });
  } catch (error) {
    await store.close();
    const e = error as Error;
    if (e.name === "McpError" || e.name === "GatewayRefusedError") throw new UsageError(e.message.replace(/^MCP error -?\d+: /, ""));
    throw error;
  }
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  if (httpPort !== undefined) {
    const { url } = await gateway.listenHttp(httpPort, httpHost);
    log(`serving ${url} for session ${gateway.sessionId}`);
    process.stderr.write(`${JSON.stringify({ event: "mcp.ready", url, sessionId: gateway.sessionId })}\n`);
  } else {
    const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js");
    const { MAX_HOST_REQUEST_BYTES } = await import("../node/mcp-gateway");
    // The same bound as over HTTP: a host line longer than 1 MiB is not buffered; the SDK's reader refuses it and
    // closes the transport, and the gateway stops with nothing paid for it (the host's own process is the only peer).
    const transport = new StdioServerTransport(process.stdin, process.stdout, { maxBufferSize: MAX_HOST_REQUEST_BYTES });
    transport.onerror = (error) => log(`refused a host message: ${error.message.split("\n")[0]}`);
    transport.onclose = stop;
    process.stdin.once("end", stop);
    await gateway.server().connect(transport);
    log(`serving over stdio for session ${gateway.sessionId}`);
  }
  await stopped;
  await gateway.stop();
  await store.close();
  // Over stdio, stdout belongs to MCP: nothing more is printed there.
  if (httpPort !== undefined) out.lines.push("MCP gateway stopped.");
}

/** `--session-key FILE`: the grant names its session; the file's key must be the granted one. */
function sessionKeyFor(values: Record<string, unknown>) {
  const { readFileSync } = require("node:fs") as typeof import("node:fs");
  let sessionId: Hex;
  try {
    sessionId = (JSON.parse(readFileSync(values["session-key"] as string, "utf8")) as { grant: { grant: { sessionId: Hex } } }).grant.grant.sessionId;
  } catch {
    throw new UsageError(`Cannot read --session-key ${String(values["session-key"])}: it must be the file \`ioi session-key authorize --out\` wrote.`);
  }
  return sessionKeyOf(values, sessionId);
}
