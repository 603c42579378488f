#!/usr/bin/env node
/**
 * `ioi` — one entry point for every user action on a channel.
 *
 *   npx ioi --help                 list the commands
 *   npx ioi <command> --help       what a command takes
 *
 * Keys never appear on the command line: the acting party's secp256k1 key is read from the environment
 * variable named by --key-env (default IOI_PRIVATE_KEY). Every command prints readable lines, or with
 * --json one JSON object on the last line.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  isAddress,
  isHex,
  keccak256,
  parseEventLogs,
  stringToBytes,
  zeroAddress,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";

import { ReceiptAccumulator } from "./accumulator";
import { artifactId, canon, parseJson } from "./canonical";
import { gasEscrowDomain, type GasEscrowDomain } from "./eip712";
import {
  challengeClose,
  closeCooperative,
  closeUnilateral,
  finalizeClose,
  gasEscrowAbi,
  openChannel,
  type Wallet,
} from "./escrow";
import { BaseError } from "./errors";
import {
  acceptGig,
  acceptGigDelivery,
  cancelGig,
  deliverGig,
  fundGig,
  gigViewToJson,
  MAX_DEADLINE,
  MAX_DISPUTE_WINDOW,
  MIN_DISPUTE_WINDOW,
  readGig,
  refundGig,
  releaseGig,
  type SettledGig,
} from "./gig";
import { fetchTermsOffer, PayerClient } from "./node/payer-client";
import { PayerSession } from "./payer-session";
import { ProviderNode, type McpHandler } from "./node/provider-node";
import { signedSessionReceiptToJson, sessionReceiptHash } from "./receipt";
import { SqliteStore } from "./store/sqlite-store";
import type { ChannelRecord, ChannelStore } from "./store/store";
import { channelRefToJson, NATIVE_ASSET, pricingTermsToJson, termsHashOf, type PricingTerms } from "./terms";
import { paymentTicketHash, signedPaymentTicketToJson } from "./ticket";
import { Watchtower } from "./watchtower";
import { LOG_OPTIONS, METRICS_OPTION, loggerFrom, startMetrics } from "./node/observability";
import { UI_COMMAND } from "../ui/command";
import { ARBITRATE_COMMAND, DISPUTE_GROUPS, DISPUTE_HELP, DISPUTE_OPTIONS, disputeGroupHelp } from "../arbitration/cli";
import { VET_COMMAND } from "../arbitration/vet";

/** A command-line mistake: printed as one sentence with the usage, never as a stack trace. */
export class UsageError extends BaseError {
  override name = "UsageError" as const;
}

/** `exitCode`: set by a command that ran but reports a negative outcome (a mismatch, a failing vet). */
export type Out = { json: boolean; lines: string[]; result: Record<string, unknown>; exitCode?: number };

const GLOBAL_OPTIONS = {
  rpc: { type: "string" },
  escrow: { type: "string" },
  db: { type: "string" },
  "key-env": { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

export type Command = {
  summary: string;
  usage: string;
  /** Extra lines of `--help` after the usage (what the options mean). */
  notes?: string[];
  options: ParseArgsConfig["options"];
  run: (values: Record<string, string | boolean | undefined>, out: Out) => Promise<void>;
};

const COMMANDS: Record<string, Command> = {
  provider: {
    summary: "start a provider node on 127.0.0.1 (with its watchtower) and serve until Ctrl-C",
    usage: "ioi provider [--port N] --price WEI [--model ID] [--rpc URL] [--escrow ADDR] [--db PATH] [--metrics HOST:PORT] [--log-level L] [--log-file PATH]",
    options: { port: { type: "string" }, price: { type: "string" }, model: { type: "string" }, "from-block": { type: "string" }, ...METRICS_OPTION, ...LOG_OPTIONS },
    run: runProvider,
  },
  open: {
    summary: "open and fund an ETH channel to a provider; the acting key is payer and funder",
    usage: "ioi open --provider ADDR --deposit WEI [--peer HOST:PORT] [--price WEI] [--challenge SECONDS]",
    options: {
      provider: { type: "string" },
      price: { type: "string" },
      deposit: { type: "string" },
      challenge: { type: "string" },
      peer: { type: "string" },
      policy: { type: "string" },
    },
    run: runOpen,
  },
  stream: {
    summary: "stream N paid invocations to the channel's provider over the sealed socket",
    usage: "ioi stream --session ID -n N [--inflight K] [--peer HOST:PORT] [--commit-every N] [--commit-seconds T]",
    options: { session: { type: "string" }, n: { type: "string", short: "n" }, inflight: { type: "string" }, peer: { type: "string" }, "commit-every": { type: "string" }, "commit-seconds": { type: "string" }, ...LOG_OPTIONS },
    run: runStream,
  },
  status: {
    summary: "show channels in the store, or one channel with its on-chain phase",
    usage: "ioi status [--session ID]",
    options: { session: { type: "string" } },
    run: runStatus,
  },
  close: {
    summary: "close a channel: cooperatively with the provider over the socket, or --unilateral",
    usage: "ioi close --session ID [--unilateral] [--peer HOST:PORT]",
    options: { session: { type: "string" }, unilateral: { type: "boolean" }, peer: { type: "string" }, ...LOG_OPTIONS },
    run: runClose,
  },
  challenge: {
    summary: "answer a stale unilateral close with the newest ticket in the store",
    usage: "ioi challenge --session ID",
    options: { session: { type: "string" } },
    run: runChallenge,
  },
  finalize: {
    summary: "pay out a unilaterally closed channel after its challenge window",
    usage: "ioi finalize --session ID",
    options: { session: { type: "string" } },
    run: runFinalize,
  },
  watchtower: {
    summary: "watch the escrow and answer stale closes of the store's channels; finalise when due",
    usage: "ioi watchtower [--from-block N] [--once] [--metrics HOST:PORT] [--log-level L] [--log-file PATH]",
    options: { "from-block": { type: "string" }, once: { type: "boolean" }, ...METRICS_OPTION, ...LOG_OPTIONS },
    run: runWatchtower,
  },
  export: {
    summary: "print a session's tickets and receipts as JSON lines, with the on-chain root",
    usage: "ioi export --session ID",
    options: { session: { type: "string" } },
    run: runExport,
  },
  // A getter: ui/command imports this module, so its command is read only once both are loaded.
  get ui() {
    return UI_COMMAND;
  },
};

/*//////////////////////////////////////////////////////////////
                              PLUMBING
//////////////////////////////////////////////////////////////*/

export function need(values: Record<string, unknown>, name: string, what: string): string {
  const value = values[name];
  if (typeof value !== "string" || value.length === 0) throw new UsageError(`--${name} is required: ${what}.`);
  return value;
}

export function uint(values: Record<string, unknown>, name: string, what: string, fallback?: bigint): bigint {
  const value = values[name];
  if (value === undefined && fallback !== undefined) return fallback;
  const text = need(values, name, what);
  if (!/^(0|[1-9][0-9]*)$/.test(text)) throw new UsageError(`--${name} must be a whole number (${what}); received "${text}".`);
  return BigInt(text);
}

export function sessionOf(values: Record<string, unknown>): Hex {
  const session = need(values, "session", "the session id (0x and 64 hex digits)");
  if (!isHex(session) || session.length !== 66) throw new UsageError(`--session must be 0x and 64 hex digits; received "${session}".`);
  return session.toLowerCase() as Hex;
}

export function loadAccount(values: Record<string, unknown>): LocalAccount {
  const name = (values["key-env"] as string | undefined) ?? "IOI_PRIVATE_KEY";
  const key = process.env[name];
  if (!key) throw new UsageError(`Set ${name} to the acting party's private key (0x and 64 hex digits).`);
  if (!isHex(key) || key.length !== 66) throw new UsageError(`${name} is not a private key: it must be 0x and 64 hex digits.`);
  return privateKeyToAccount(key);
}

/** A contract's address from its option, its environment variable, or deployments/localhost.json. */
export function deployedAddress(
  values: Record<string, unknown>,
  option: "escrow" | "gig-escrow" | "dispute-manager" | "registry",
  envName: "IOI_ESCROW" | "IOI_GIG_ESCROW" | "IOI_DISPUTE_MANAGER" | "IOI_REGISTRY",
  contract: "GasEscrow" | "GigEscrow" | "DisputeManager" | "ProviderRegistry",
): Address {
  const given = (values[option] as string | undefined) ?? process.env[envName];
  if (given) {
    if (!isAddress(given)) throw new UsageError(`--${option} must be an address; received "${given}".`);
    return getAddress(given);
  }
  const file = path.join(__dirname, "..", "deployments", "localhost.json");
  if (!existsSync(file)) throw new UsageError(`--${option} is required (or run \`npm run devnet\`, which writes deployments/localhost.json).`);
  const { contracts } = JSON.parse(readFileSync(file, "utf8")) as { contracts: Record<string, { address: string } | undefined> };
  const address = contracts[contract]?.address;
  if (!address) throw new UsageError(`deployments/localhost.json names no ${contract}; redeploy (\`npm run devnet\`) or pass --${option}.`);
  return getAddress(address);
}

/** The escrow address from --escrow, IOI_ESCROW, or deployments/localhost.json. */
function escrowAddress(values: Record<string, unknown>): Address {
  return deployedAddress(values, "escrow", "IOI_ESCROW", "GasEscrow");
}

/** The gig escrow address from --gig-escrow, IOI_GIG_ESCROW, or deployments/localhost.json. */
function gigEscrowAddress(values: Record<string, unknown>): Address {
  return deployedAddress(values, "gig-escrow", "IOI_GIG_ESCROW", "GigEscrow");
}

/** A public client (and a wallet for `account`) on the node at --rpc, with the chain id it reports. */
export async function rpcClients(values: Record<string, unknown>, account?: LocalAccount) {
  const url = (values.rpc as string | undefined) ?? process.env.IOI_RPC_URL ?? "http://127.0.0.1:8545";
  const probe = createPublicClient({ transport: http(url) });
  let chainId: number;
  try {
    chainId = await probe.getChainId();
  } catch (cause) {
    throw new UsageError(`No EVM node answers at ${url}; start one with \`npm run devnet\` or pass --rpc.`, { cause });
  }
  const chain = defineChain({ id: chainId, name: `chain-${chainId}`, nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [url] } } });
  const publicClient = createPublicClient({ chain, transport: http(url) }) as PublicClient;
  const wallet = account ? (createWalletClient({ account, chain, transport: http(url) }) as Wallet) : undefined;
  return { publicClient, wallet, chainId };
}

async function chainClients(values: Record<string, unknown>, account?: LocalAccount) {
  const { publicClient, wallet, chainId } = await rpcClients(values, account);
  const escrow = escrowAddress(values);
  const domain: GasEscrowDomain = gasEscrowDomain({ chainId, verifyingContract: escrow });
  return { publicClient, wallet, escrow, domain, chainId };
}

export function openStore(values: Record<string, unknown>, role: string): ChannelStore {
  const file = (values.db as string | undefined) ?? path.join(".data", `${role}.db`);
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  return SqliteStore.open(file);
}

export function channelOf(store: ChannelStore, sessionId: Hex): ChannelRecord {
  const channel = store.getChannel(sessionId);
  if (!channel) throw new UsageError(`The store holds no channel ${sessionId}; check --db and --session.`);
  return channel;
}

/** The close the store recorded for `channel`; a usage error if it has seen none yet. */
function closingOf(store: ChannelStore, channel: ChannelRecord) {
  const closing = store.getClosing(channel.sessionId);
  if (!closing) throw new UsageError("The store has seen no close of this channel; run `ioi watchtower --once` to catch up first.");
  return closing;
}

function peerOf(values: Record<string, unknown>, channel: ChannelRecord): { host: string; port: number } {
  const peer = (values.peer as string | undefined) ?? channel.peer;
  if (!peer) throw new UsageError("--peer HOST:PORT is required: where the provider node listens.");
  const match = /^(127\.0\.0\.1|localhost|\[::1\]):(\d{1,5})$/.exec(peer);
  if (!match) throw new UsageError(`--peer must be a loopback HOST:PORT such as 127.0.0.1:7000; received "${peer}".`);
  return { host: "127.0.0.1", port: Number(match[2]) };
}

/** A one-line progress bar on stderr (only when it is a terminal or IOI_PROGRESS=1). */
function progressBar(total: number): (done: number) => void {
  const enabled = process.stderr.isTTY || process.env.IOI_PROGRESS === "1";
  const started = performance.now();
  let last = 0;
  return (done) => {
    if (!enabled) return;
    const now = performance.now();
    if (done !== total && now - last < 100) return;
    last = now;
    const width = 30;
    const filled = Math.round((done / total) * width);
    const rate = Math.round(done / ((now - started) / 1000));
    process.stderr.write(`\r[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${done}/${total} ${rate}/s${done === total ? "\n" : ""}`);
  };
}

/** The default worker: answers `tools/echo` with the keccak of its params (deterministic, no I/O). */
export const echoHandler: McpHandler = async (request) => ({
  result: { digest: keccak256(stringToBytes(canon(request.params ?? null))) },
  units: 1n,
});

/*//////////////////////////////////////////////////////////////
                              COMMANDS
//////////////////////////////////////////////////////////////*/

async function runProvider(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const { publicClient, wallet, escrow, domain } = await chainClients(values, account);
  const store = openStore(values, "provider");
  const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: uint(values, "price", "wei per invocation") };
  const logger = loggerFrom(values, "provider");
  const metrics = await startMetrics(values);
  const node = await ProviderNode.start({
    logger,
    metrics: metrics?.metrics,
    account,
    publicClient,
    domain,
    store,
    pricing,
    handler: echoHandler,
    modelSnapshotId: (values.model as string | undefined) ?? "worker:echo-keccak@1",
    port: Number(uint(values, "port", "TCP port on 127.0.0.1 (0 = any free port)", 0n)),
  });
  const tower = new Watchtower({
    logger: logger.child({ component: "watchtower" }),
    metrics: metrics?.metrics,
    publicClient,
    wallet: wallet!,
    escrow,
    store,
    fromBlock: uint(values, "from-block", "first block to watch", 0n),
    name: `watchtower:${account.address.toLowerCase()}`,
    onAnswer: (a) => console.log(JSON.stringify({ event: "watchtower.answered", sessionId: a.sessionId, staleSeq: a.staleSeq.toString(), answeredSeq: a.answeredSeq.toString(), inWindow: a.inWindow, txHash: a.txHash })),
    // The node learns from the same events when a bound channel closes or settles, and stops serving it.
    onEvents: (events) => node.applyEscrowEvents(events),
  });
  tower.start();
  // The ready line is always JSON, so a supervising process can read the port.
  console.log(JSON.stringify({ event: "provider.ready", port: node.port, provider: account.address, escrow, termsHash: termsHashOf(pricing), ...(metrics ? { metrics: `http://${metrics.address}/metrics` } : {}) }));
  logger.info({ event: "provider.ready", port: node.port, provider: account.address, escrow }, "provider node listening");
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await metrics?.close();
  await tower.stop();
  await node.stop();
  await store.close();
  out.lines.push("Provider node stopped.");
}

async function runOpen(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const { publicClient, wallet, escrow, domain, chainId } = await chainClients(values, account);
  const provider = need(values, "provider", "the provider's address");
  if (!isAddress(provider)) throw new UsageError(`--provider must be an address; received "${provider}".`);
  const deposit = uint(values, "deposit", "wei to lock in the channel");
  // No funding before agreement (issue 12): with --peer, ask the provider for its signed terms first and
  // fund only a channel on them; without it, say what could not be checked.
  let pricing: PricingTerms;
  let termsChecked = false;
  if (values.peer !== undefined) {
    const peer = values.peer as string;
    const match = /^(127\.0\.0\.1|localhost|\[::1\]):(\d{1,5})$/.exec(peer);
    if (!match) throw new UsageError(`--peer must be a loopback HOST:PORT such as 127.0.0.1:7000; received "${peer}".`);
    const offer = await fetchTermsOffer({ account, domain, provider: getAddress(provider), host: match[1] === "[::1]" ? "::1" : match[1]!, port: Number(match[2]) });
    if (values.price !== undefined) {
      const wanted = uint(values, "price", "wei per invocation");
      if (wanted !== offer.pricing.pricePerInvocation) {
        throw new UsageError(`The provider at ${peer} charges ${offer.pricing.pricePerInvocation} wei per invocation, not ${wanted}; nothing was funded (open with --price ${offer.pricing.pricePerInvocation}, or not at all).`);
      }
    }
    pricing = offer.pricing;
    termsChecked = true;
  } else {
    pricing = { version: "1", unit: "invocation", pricePerInvocation: uint(values, "price", "wei per invocation, as the provider charges") };
    out.lines.push("Warning: without --peer the provider's terms were not checked; if it refuses this price, only a unilateral close and its full window return the deposit.");
  }
  const store = openStore(values, "payer");
  try {
    const opened = await openChannel({
      wallet: wallet!,
      publicClient,
      escrow,
      amount: deposit,
      terms: {
        payer: account.address,
        provider: getAddress(provider),
        funder: account.address,
        asset: NATIVE_ASSET,
        termsHash: termsHashOf(pricing),
        policyHash: keccak256(stringToBytes((values.policy as string | undefined) ?? "policy: default")),
        challengeDuration: uint(values, "challenge", "challenge window in seconds", 3600n),
        nonce: BigInt(Date.now()),
      },
    });
    await store.putChannel({ sessionId: opened.sessionId, role: "payer", ref: opened.ref, pricing, escrow, chainId, deposit: opened.deposit, status: "open", ...(values.peer ? { peer: values.peer as string } : {}) });
    out.lines.push(`Opened session ${opened.sessionId} with ${opened.deposit} wei (gas ${opened.gasUsed}).`);
    Object.assign(out.result, { sessionId: opened.sessionId, openedAt: opened.ref.openedAt.toString(), deposit: opened.deposit.toString(), gasUsed: Number(opened.gasUsed), domain: { chainId: domain.chainId, escrow }, pricePerInvocation: pricing.pricePerInvocation.toString(), termsChecked });
  } finally {
    await store.close();
  }
}

async function runStream(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const { domain } = await chainClients(values);
  const store = openStore(values, "payer");
  try {
    const channel = channelOf(store, sessionOf(values));
    const count = Number(uint(values, "n", "how many invocations to stream"));
    const inflight = Number(uint(values, "inflight", "invocations in flight at once", 16n));
    // Signed receipt commits mid-stream: every N receipts and/or T seconds (0 turns either off).
    const commitEvery = Number(uint(values, "commit-every", "receipts between two receipt commits (0: none mid-stream)", 100n));
    const commitIntervalMs = Number(uint(values, "commit-seconds", "seconds between two receipt commits (0: none)", 0n)) * 1000;
    const { host, port } = peerOf(values, channel);
    const client = await PayerClient.connect({ account, domain, store, channel, host, port, logger: loggerFrom(values, "payer") });
    const started = performance.now();
    const latencies = await client.stream({
      count,
      inflight,
      request: (i) => ({ jsonrpc: "2.0", id: `invoke-${i}`, method: "tools/echo", params: { text: `invocation ${i}` } }),
      onProgress: progressBar(count),
      commitEvery,
      commitIntervalMs,
    });
    const seconds = (performance.now() - started) / 1000;
    const { root, leafCount } = await client.commit();
    await client.close();
    latencies.sort((a, b) => a - b);
    const perSecond = Math.round(count / seconds);
    out.lines.push(`Streamed ${count} invocations in ${seconds.toFixed(2)} s (${perSecond}/s, p50 ${latencies[Math.floor(count / 2)]!.toFixed(1)} ms); root ${root} over ${leafCount} receipts, agreed with the provider.`);
    Object.assign(out.result, { sessionId: channel.sessionId, invocations: count, seconds, ticketsPerSecond: perSecond, finalSeq: client.session.seq.toString(), paid: client.session.cumulativeAmount.toString(), receiptRoot: root });
  } finally {
    await store.close();
  }
}

async function runStatus(values: Record<string, unknown>, out: Out): Promise<void> {
  const store = openStore(values, (values.db as string | undefined) ? "x" : "payer");
  try {
    if (!values.session) {
      const channels = store.listChannels();
      for (const c of channels) out.lines.push(`${c.sessionId}  ${c.role.padEnd(8)} ${c.status.padEnd(8)} deposit ${c.deposit}  seq ${store.latestTicket(c.sessionId)?.ticket.seq ?? 0n}`);
      if (channels.length === 0) out.lines.push("The store holds no channels.");
      out.result.channels = channels.map((c) => ({ sessionId: c.sessionId, role: c.role, status: c.status, deposit: c.deposit.toString() }));
      return;
    }
    const channel = channelOf(store, sessionOf(values));
    const { publicClient, escrow } = await chainClients(values);
    const phase = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [channel.sessionId] });
    const phases = ["None", "Open", "Closing", "Finalizable", "Frozen"];
    const latest = store.latestTicket(channel.sessionId);
    const closing = store.getClosing(channel.sessionId);
    out.lines.push(`session ${channel.sessionId} (${channel.role}), on-chain phase ${phases[phase]}, stored status ${channel.status}`);
    out.lines.push(`  deposit ${channel.deposit}, newest ticket seq ${latest?.ticket.seq ?? 0n} for ${latest?.ticket.cumulativeAmount ?? 0n}, receipts ${store.receiptCount(channel.sessionId)}`);
    if (closing) out.lines.push(`  closing with seq ${closing.state.seq} until ${closing.finalizesAt}`);
    Object.assign(out.result, {
      sessionId: channel.sessionId,
      role: channel.role,
      phase: phases[phase],
      status: channel.status,
      deposit: channel.deposit.toString(),
      newestSeq: (latest?.ticket.seq ?? 0n).toString(),
      receipts: store.receiptCount(channel.sessionId),
    });
  } finally {
    await store.close();
  }
}

async function runClose(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const { publicClient, wallet, escrow, domain } = await chainClients(values, account);
  const store = openStore(values, "payer");
  try {
    const channel = channelOf(store, sessionOf(values));
    if (values.unilateral) {
      // A payer closes with a ticket that drains the pipeline: the amount it already promised and the root
      // over every receipt it accepted, so each one is provable against what the close records (issue 12).
      let ticket = store.latestTicket(channel.sessionId);
      if (channel.role === "payer" && ticket) {
        const session = PayerSession.restore({ account, domain, ref: channel.ref, sessionId: channel.sessionId, pricing: channel.pricing, deposit: channel.deposit }, store.steps(channel.sessionId));
        ticket = await session.closingTicket();
      }
      const closed = await closeUnilateral({ wallet: wallet!, publicClient, escrow, ref: channel.ref, ticket });
      await store.putClosing(channel.sessionId, { state: closed.state, finalizesAt: closed.finalizesAt, closer: account.address, txHash: closed.hash });
      await store.updateChannel(channel.sessionId, { status: "closing" });
      out.lines.push(`Closed unilaterally with seq ${closed.state.seq}; the window ends at ${closed.finalizesAt} (gas ${closed.gasUsed}).`);
      Object.assign(out.result, { sessionId: channel.sessionId, seq: closed.state.seq.toString(), finalizesAt: closed.finalizesAt.toString(), gasUsed: Number(closed.gasUsed) });
      return;
    }
    const { host, port } = peerOf(values, channel);
    const logger = loggerFrom(values, "payer");
    const client = await PayerClient.connect({ account, domain, store, channel, host, port, logger });
    const { summary, payerSignature, providerSignature } = await client.cooperativeClose();
    await client.close();
    const settled = await closeCooperative({ wallet: wallet!, publicClient, escrow, ref: channel.ref, summary, payerSignature, providerSignature });
    await store.updateChannel(channel.sessionId, { status: "settled" });
    logger.info({ event: "channel.settled", sessionId: channel.sessionId, finalSeq: summary.finalSeq.toString(), paidToProvider: settled.paidToProvider.toString(), refundedToFunder: settled.refundedToFunder.toString(), txHash: settled.hash }, "settled cooperatively on-chain");
    out.lines.push(`Settled cooperatively: ${settled.paidToProvider} wei to the provider, ${settled.refundedToFunder} wei refunded (gas ${settled.gasUsed}).`);
    Object.assign(out.result, { sessionId: channel.sessionId, finalSeq: summary.finalSeq.toString(), paidToProvider: settled.paidToProvider.toString(), refundedToFunder: settled.refundedToFunder.toString(), receiptRoot: settled.receiptRoot, gasUsed: Number(settled.gasUsed) });
  } finally {
    await store.close();
  }
}

async function runChallenge(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const { publicClient, wallet, escrow } = await chainClients(values, account);
  const store = openStore(values, "provider");
  try {
    const channel = channelOf(store, sessionOf(values));
    const closing = closingOf(store, channel);
    const newest = store.latestTicket(channel.sessionId);
    if (!newest || newest.ticket.seq <= closing.state.seq) throw new UsageError(`The store holds no ticket newer than the recorded seq ${closing.state.seq}.`);
    const challenged = await challengeClose({ wallet: wallet!, publicClient, escrow, ref: channel.ref, recorded: closing.state, ticket: newest });
    await store.putClosing(channel.sessionId, { state: challenged.state, finalizesAt: challenged.finalizesAt, closer: account.address, txHash: challenged.hash });
    out.lines.push(`Challenged seq ${closing.state.seq} with seq ${challenged.state.seq} (gas ${challenged.gasUsed}).`);
    Object.assign(out.result, { sessionId: channel.sessionId, staleSeq: closing.state.seq.toString(), seq: challenged.state.seq.toString(), gasUsed: Number(challenged.gasUsed) });
  } finally {
    await store.close();
  }
}

async function runFinalize(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const { publicClient, wallet, escrow } = await chainClients(values, account);
  const store = openStore(values, "payer");
  try {
    const channel = channelOf(store, sessionOf(values));
    const closing = closingOf(store, channel);
    const settled = await finalizeClose({ wallet: wallet!, publicClient, escrow, ref: channel.ref, recorded: closing.state });
    await store.updateChannel(channel.sessionId, { status: "settled" });
    out.lines.push(`Finalised: ${settled.paidToProvider} wei to the provider, ${settled.refundedToFunder} wei refunded (gas ${settled.gasUsed}).`);
    Object.assign(out.result, { sessionId: channel.sessionId, paidToProvider: settled.paidToProvider.toString(), refundedToFunder: settled.refundedToFunder.toString(), gasUsed: Number(settled.gasUsed) });
  } finally {
    await store.close();
  }
}

async function runWatchtower(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const { publicClient, wallet, escrow } = await chainClients(values, account);
  const store = openStore(values, "provider");
  const logger = loggerFrom(values, "watchtower");
  const metrics = await startMetrics(values);
  const tower = new Watchtower({
    logger,
    metrics: metrics?.metrics,
    publicClient,
    wallet: wallet!,
    escrow,
    store,
    fromBlock: uint(values, "from-block", "first block to watch", 0n),
    name: `watchtower:${account.address.toLowerCase()}`,
    finalize: true,
    onAnswer: (a) => out.lines.push(`Answered the stale close of ${a.sessionId} (seq ${a.staleSeq}) with seq ${a.answeredSeq}${a.inWindow ? " inside the window" : ""}.`),
    onFinalized: (sessionId, hash) => out.lines.push(`Finalised ${sessionId} in ${hash}.`),
  });
  try {
    if (values.once) {
      await tower.runOnce();
    } else {
      tower.start();
      console.log(JSON.stringify({ event: "watchtower.ready", escrow, ...(metrics ? { metrics: `http://${metrics.address}/metrics` } : {}) }));
      await new Promise<void>((resolve) => {
        process.once("SIGINT", resolve);
        process.once("SIGTERM", resolve);
      });
      await tower.stop();
    }
    out.result.answers = tower.answers.map((a) => ({ sessionId: a.sessionId, staleSeq: a.staleSeq.toString(), answeredSeq: a.answeredSeq.toString(), inWindow: a.inWindow }));
  } finally {
    await metrics?.close();
    await store.close();
  }
}

async function runExport(values: Record<string, unknown>, out: Out): Promise<void> {
  const store = openStore(values, "provider");
  try {
    const channel = channelOf(store, sessionOf(values));
    const { publicClient, escrow } = await chainClients(values);
    const lines: string[] = [];
    lines.push(canon({ type: "session", sessionId: channel.sessionId, escrow: escrow.toLowerCase(), ref: channelRefToJson(channel.ref), pricing: pricingTermsToJson(channel.pricing), leafDomain: "IOI_SESSION_LEAF_V1" }));
    for (const step of store.steps(channel.sessionId)) {
      if (!step.receipt || !step.leaf) continue;
      lines.push(canon({
        type: "step",
        seq: step.seq.toString(),
        ticket: signedPaymentTicketToJson(step.ticket),
        receipt: signedSessionReceiptToJson(step.receipt),
        ticketHash: paymentTicketHash(step.ticket.ticket),
        receiptHash: sessionReceiptHash(step.receipt.receipt),
        leaf: step.leaf,
      }));
    }
    // The root the chain recorded: the cooperative settlement's, or the newest recorded ticket's.
    const logs = parseEventLogs({
      abi: gasEscrowAbi,
      logs: await publicClient.getLogs({ address: escrow, fromBlock: channel.ref.openedAt }),
    }).filter((log) => "sessionId" in log.args && log.args.sessionId === channel.sessionId);
    let onChain: Record<string, string> | null = null;
    for (const log of logs) {
      if (log.eventName === "ChannelSettled") onChain = { event: log.eventName, receiptRoot: log.args.receiptRoot, seq: log.args.finalSeq.toString(), transactionHash: log.transactionHash };
      else if (log.eventName === "ChannelClosing" || log.eventName === "ChannelChallenged") onChain = { event: log.eventName, receiptRoot: log.args.receiptRoot, seq: log.args.seq.toString(), transactionHash: log.transactionHash };
    }
    // The local root over every receipt, and how many of the first receipts the chain's root covers: after
    // any close they must be all of them (a provider serves nothing once a session is closed).
    const history = ReceiptAccumulator.fromLeaves(store.leaves(channel.sessionId));
    let covered: number | null = null;
    if (onChain) {
      for (let size = history.size; size >= 0 && covered === null; size--) if (history.prefixRoot(size) === onChain.receiptRoot) covered = size;
    }
    const root = history.root();
    lines.push(canon({
      type: "root",
      receipts: String(history.size),
      root,
      onChain,
      coveredReceipts: covered === null ? null : String(covered),
      matches: onChain !== null && onChain.receiptRoot === root,
    }));
    for (const line of lines) console.log(line);
    out.json = false; // the JSON lines are the output
  } finally {
    await store.close();
  }
}

/*//////////////////////////////////////////////////////////////
                                GIGS
//////////////////////////////////////////////////////////////*/

const GIG_OPTIONS = { "gig-escrow": { type: "string" } } as const satisfies ParseArgsConfig["options"];
const GIG_ID_OPTION = { gig: { type: "string" } } as const satisfies ParseArgsConfig["options"];

/** `ioi gig <subcommand>`: outcome-based work escrowed in the GigEscrow. */
const GIG_COMMANDS: Record<string, Command> = {
  fund: {
    summary: "escrow a bounty for a gig bound to an Intent Contract Schema; prints the gig id (the acting key is the client)",
    usage:
      "ioi gig fund --amount WEI (--ics HASH | --ics-file PATH) [--provider ADDR] [--asset ADDR] [--deadline SECONDS] [--dispute-window SECONDS]",
    options: {
      amount: { type: "string" },
      ics: { type: "string" },
      "ics-file": { type: "string" },
      provider: { type: "string" },
      asset: { type: "string" },
      deadline: { type: "string" },
      "dispute-window": { type: "string" },
    },
    run: runGigFund,
  },
  cancel: {
    summary: "take back a funded gig no provider accepted yet (the client)",
    usage: "ioi gig cancel --gig ID",
    options: GIG_ID_OPTION,
    run: (values, out) => runGigSettlement(values, out, cancelGig),
  },
  accept: {
    summary: "take a gig as a provider with an active bond in the ProviderRegistry",
    usage: "ioi gig accept --gig ID",
    options: GIG_ID_OPTION,
    run: runGigAccept,
  },
  deliver: {
    summary: "deliver a gig's result (the provider); the client's dispute window starts",
    usage: "ioi gig deliver --gig ID --deliverable HASH [--receipt-root HASH]",
    options: { ...GIG_ID_OPTION, deliverable: { type: "string" }, "receipt-root": { type: "string" } },
    run: runGigDeliver,
  },
  "accept-delivery": {
    summary: "accept the delivery and pay the provider at once (the client)",
    usage: "ioi gig accept-delivery --gig ID",
    options: GIG_ID_OPTION,
    run: (values, out) => runGigSettlement(values, out, acceptGigDelivery),
  },
  release: {
    summary: "pay the provider once the dispute window passed without a dispute (anyone)",
    usage: "ioi gig release --gig ID",
    options: GIG_ID_OPTION,
    run: (values, out) => runGigSettlement(values, out, releaseGig),
  },
  refund: {
    summary: "refund the client once the deadline passed without a delivery (anyone)",
    usage: "ioi gig refund --gig ID",
    options: GIG_ID_OPTION,
    run: (values, out) => runGigSettlement(values, out, refundGig),
  },
  show: {
    summary: "show a gig as stored on-chain (no key needed)",
    usage: "ioi gig show --gig ID",
    options: GIG_ID_OPTION,
    run: runGigShow,
  },
  // A getter: arbitration/vet.ts imports this module, so its command is read only once both are loaded.
  get vet(): Command {
    return VET_COMMAND;
  },
};

/** Largest --ics-file read: an Intent Contract Schema is a small JSON document. */
const MAX_ICS_FILE_BYTES = 1 << 20;

export function gigIdOf(values: Record<string, unknown>): bigint {
  const id = uint(values, "gig", "the gig id, a whole number from 1");
  if (id === 0n || id >= 1n << 64n) throw new UsageError(`--gig must be a gig id from 1 to 2^64 - 1; received "${values.gig as string}".`);
  return id;
}

export function hashOption(values: Record<string, unknown>, name: string, what: string): Hex {
  const value = need(values, name, what);
  if (!isHex(value) || value.length !== 66) throw new UsageError(`--${name} must be 0x and 64 hex digits (${what}); received "${value}".`);
  return value.toLowerCase() as Hex;
}

function addressOption(values: Record<string, unknown>, name: string, what: string): Address {
  const value = need(values, name, what);
  if (!isAddress(value)) throw new UsageError(`--${name} must be an address (${what}); received "${value}".`);
  return getAddress(value);
}

/** The ICS hash from --ics, or keccak256 of the canonical form of the JSON in --ics-file. */
function icsHashOf(values: Record<string, unknown>): { icsHash: Hex; icsFile?: string } {
  const hasHash = values.ics !== undefined;
  const file = values["ics-file"] as string | undefined;
  if (hasHash === (file !== undefined)) {
    throw new UsageError("Give exactly one of --ics HASH and --ics-file PATH: the Intent Contract Schema the gig is bound to.");
  }
  if (hasHash) return { icsHash: hashOption(values, "ics", "the hash of the Intent Contract Schema") };
  let bytes: Buffer;
  try {
    bytes = readFileSync(file!);
  } catch (cause) {
    throw new UsageError(`Cannot read --ics-file ${file}: ${(cause as Error).message.split("\n")[0]}`, { cause });
  }
  const icsHash = artifactId(parseJson(bytes, { maxBytes: MAX_ICS_FILE_BYTES, what: `The Intent Contract Schema in ${file}` }));
  return { icsHash, icsFile: file! };
}

async function gigClients(values: Record<string, unknown>, account?: LocalAccount) {
  const gigEscrow = gigEscrowAddress(values);
  const { publicClient, wallet } = await rpcClients(values, account);
  return { publicClient, wallet, gigEscrow };
}

const assetName = (asset: Address): string => (BigInt(asset) === 0n ? "ETH" : asset);

async function runGigFund(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const amount = uint(values, "amount", "the bounty in wei (or the token's smallest unit)");
  const { icsHash, icsFile } = icsHashOf(values);
  const provider = values.provider === undefined ? zeroAddress : addressOption(values, "provider", "the one provider who may accept");
  const assetText = values.asset as string | undefined;
  const asset = assetText === undefined || assetText.toLowerCase() === "eth" ? NATIVE_ASSET : addressOption(values, "asset", "the ERC-20 to escrow, or eth");
  const deadlineIn = uint(values, "deadline", "seconds from now until the gig must be delivered", 7n * 86_400n);
  if (deadlineIn === 0n || deadlineIn > MAX_DEADLINE) {
    throw new UsageError(`--deadline must be from 1 to ${MAX_DEADLINE} seconds from now; received ${deadlineIn}.`);
  }
  const disputeWindow = uint(values, "dispute-window", "seconds the client may dispute a delivery", 3_600n);
  if (disputeWindow < MIN_DISPUTE_WINDOW || disputeWindow > MAX_DISPUTE_WINDOW) {
    throw new UsageError(`--dispute-window must be from ${MIN_DISPUTE_WINDOW} to ${MAX_DISPUTE_WINDOW} seconds; received ${disputeWindow}.`);
  }
  const { publicClient, wallet, gigEscrow } = await gigClients(values, account);
  // "From now" on the chain's clock, which a devnet may have moved ahead of the wall clock.
  const now = (await publicClient.getBlock()).timestamp;
  const funded = await fundGig({ wallet: wallet!, publicClient, gigEscrow, provider, asset, amount, icsHash, deadline: now + deadlineIn, disputeWindow });
  const who = BigInt(provider) === 0n ? "any active provider" : provider;
  out.lines.push(
    `Funded gig ${funded.gigId}: ${funded.amount} of ${assetName(asset)} for ${who}, due by ${now + deadlineIn}, dispute window ${disputeWindow} s (gas ${funded.gasUsed}${funded.approval ? `, approval gas ${funded.approval.gasUsed}` : ""}).`,
  );
  Object.assign(out.result, {
    gigId: funded.gigId.toString(),
    amount: funded.amount.toString(),
    asset,
    provider,
    icsHash,
    ...(icsFile ? { icsFile } : {}),
    deadline: (now + deadlineIn).toString(),
    disputeWindow: disputeWindow.toString(),
    gasUsed: Number(funded.gasUsed),
    ...(funded.approval ? { approvalGasUsed: Number(funded.approval.gasUsed) } : {}),
  });
}

async function runGigSettlement(
  values: Record<string, unknown>,
  out: Out,
  settle: (parameters: { wallet: Wallet; publicClient: PublicClient; gigEscrow: Address; gigId: bigint }) => Promise<SettledGig>,
): Promise<void> {
  const account = loadAccount(values);
  const gigId = gigIdOf(values);
  const { publicClient, wallet, gigEscrow } = await gigClients(values, account);
  const settled = await settle({ wallet: wallet!, publicClient, gigEscrow, gigId });
  out.lines.push(`Gig ${gigId} ${settled.status}: ${settled.toProvider} to the provider, ${settled.toClient} to the client (gas ${settled.gasUsed}).`);
  Object.assign(out.result, {
    gigId: gigId.toString(),
    status: settled.status,
    toProvider: settled.toProvider.toString(),
    toClient: settled.toClient.toString(),
    gasUsed: Number(settled.gasUsed),
  });
}

async function runGigAccept(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const gigId = gigIdOf(values);
  const { publicClient, wallet, gigEscrow } = await gigClients(values, account);
  const accepted = await acceptGig({ wallet: wallet!, publicClient, gigEscrow, gigId });
  out.lines.push(`Accepted gig ${gigId} as ${accepted.provider} (gas ${accepted.gasUsed}).`);
  Object.assign(out.result, { gigId: gigId.toString(), provider: accepted.provider, gasUsed: Number(accepted.gasUsed) });
}

async function runGigDeliver(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const gigId = gigIdOf(values);
  const deliverableHash = hashOption(values, "deliverable", "the hash of the deliverable");
  const receiptRoot = values["receipt-root"] === undefined ? undefined : hashOption(values, "receipt-root", "the root of the work's receipts");
  const { publicClient, wallet, gigEscrow } = await gigClients(values, account);
  const delivered = await deliverGig({ wallet: wallet!, publicClient, gigEscrow, gigId, deliverableHash, ...(receiptRoot ? { receiptRoot } : {}) });
  out.lines.push(`Delivered gig ${gigId}; the client may dispute until ${delivered.windowEndsAt} (gas ${delivered.gasUsed}).`);
  Object.assign(out.result, { gigId: gigId.toString(), deliverableHash, receiptRoot: receiptRoot ?? `0x${"0".repeat(64)}`, windowEndsAt: delivered.windowEndsAt.toString(), gasUsed: Number(delivered.gasUsed) });
}

async function runGigShow(values: Record<string, unknown>, out: Out): Promise<void> {
  const gigId = gigIdOf(values);
  const { publicClient, gigEscrow } = await gigClients(values);
  const gig = await readGig({ publicClient, gigEscrow, gigId });
  if (gig.status === "None") throw new UsageError(`Gig ${gigId} does not exist in the GigEscrow at ${gigEscrow}.`);
  out.lines.push(`gig ${gigId}: ${gig.status}, ${gig.amount} of ${assetName(gig.asset)}`);
  out.lines.push(`  client ${gig.client}, provider ${BigInt(gig.provider) === 0n ? "(any active provider)" : gig.provider}`);
  out.lines.push(`  ICS ${gig.icsHash}, deadline ${gig.deadline}, dispute window ${gig.disputeWindow} s`);
  if (gig.windowEndsAt !== 0n) out.lines.push(`  delivered ${gig.deliverableHash} (receipts ${gig.receiptRoot}); window ends ${gig.windowEndsAt}`);
  if (gig.frozenAt !== 0n) out.lines.push(`  frozen by a dispute at ${gig.frozenAt}`);
  Object.assign(out.result, gigViewToJson(gig));
}

/*//////////////////////////////////////////////////////////////
                                MAIN
//////////////////////////////////////////////////////////////*/

export const GLOBAL_HELP = [
  "  --rpc URL        EVM JSON-RPC (default $IOI_RPC_URL or http://127.0.0.1:8545)",
  "  --escrow ADDR    GasEscrow (default $IOI_ESCROW or deployments/localhost.json)",
  "  --db PATH        the SQLite store (default .data/<role>.db)",
  "  --key-env NAME   environment variable holding the acting key (default IOI_PRIVATE_KEY)",
  "  --json           print one JSON object on the last line",
  "  -h, --help       this help",
];

const GIG_HELP = ["  --gig-escrow ADDR  GigEscrow (default $IOI_GIG_ESCROW or deployments/localhost.json)"];

function help(): string {
  const lines = ["Usage: ioi <command> [options]   (ioi <command> --help for a command's options)", "", "Commands:"];
  for (const [name, c] of Object.entries(COMMANDS)) lines.push(`  ${name.padEnd(11)} ${c.summary}`);
  lines.push(`  ${"gig".padEnd(11)} outcome-based gigs: fund, accept, deliver, settle (ioi gig --help)`);
  for (const [name, group] of Object.entries(DISPUTE_GROUPS)) lines.push(`  ${name.padEnd(11)} ${group.summary}`);
  lines.push(`  ${"arbitrate".padEnd(11)} ${ARBITRATE_COMMAND.summary}`);
  lines.push("", "Global options:", ...GLOBAL_HELP);
  return lines.join("\n");
}

function gigHelp(): string {
  const lines = ["Usage: ioi gig <subcommand> [options]   (ioi gig <subcommand> --help for its options)", "", "Subcommands:"];
  for (const [name, c] of Object.entries(GIG_COMMANDS)) lines.push(`  ${name.padEnd(16)} ${c.summary}`);
  lines.push("", "Gig options:", ...GIG_HELP, "", "Global options:", ...GLOBAL_HELP);
  return lines.join("\n");
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    console.log(help());
    return 0;
  }
  if (name === "gig") {
    const [sub, ...args] = rest;
    if (!sub || sub === "--help" || sub === "-h" || sub === "help") {
      console.log(gigHelp());
      return 0;
    }
    const command = GIG_COMMANDS[sub];
    if (!command) {
      console.error(`Unknown gig subcommand "${sub}".\n\n${gigHelp()}`);
      return 2;
    }
    return runCommand(`gig ${sub}`, command, GIG_OPTIONS, GIG_HELP, args);
  }
  const group = Object.hasOwn(DISPUTE_GROUPS, name) ? DISPUTE_GROUPS[name as keyof typeof DISPUTE_GROUPS] : undefined;
  if (group) {
    const [sub, ...args] = rest;
    if (!sub || sub === "--help" || sub === "-h" || sub === "help") {
      console.log(disputeGroupHelp(name as keyof typeof DISPUTE_GROUPS));
      return 0;
    }
    const command = Object.hasOwn(group.commands, sub) ? group.commands[sub] : undefined;
    if (!command) {
      console.error(`Unknown ${name} subcommand "${sub}".\n\n${disputeGroupHelp(name as keyof typeof DISPUTE_GROUPS)}`);
      return 2;
    }
    return runCommand(`${name} ${sub}`, command, DISPUTE_OPTIONS, DISPUTE_HELP, args, "Dispute options:");
  }
  if (name === "arbitrate") return runCommand(name, ARBITRATE_COMMAND, DISPUTE_OPTIONS, DISPUTE_HELP, rest, "Dispute options:");
  const command = COMMANDS[name];
  if (!command) {
    console.error(`Unknown command "${name}".\n\n${help()}`);
    return 2;
  }
  return runCommand(name, command, {}, [], rest);
}

/** Parses `args` for `command` (with the global and `extra` options), runs it, and prints the outcome. */
async function runCommand(
  name: string,
  command: Command,
  extra: ParseArgsConfig["options"],
  extraHelp: string[],
  args: string[],
  extraTitle = "Gig options:",
): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args, options: { ...GLOBAL_OPTIONS, ...extra, ...command.options }, strict: true, allowPositionals: false }) as { values: Record<string, string | boolean | undefined> });
  } catch (error) {
    console.error(`${(error as Error).message}\nUsage: ${command.usage}`);
    return 2;
  }
  if (values.help) {
    const sections = [command.summary, `Usage: ${command.usage}`];
    if (command.notes) sections.push(command.notes.join("\n"));
    if (extraHelp.length > 0) sections.push([extraTitle, ...extraHelp].join("\n"));
    sections.push(["Global options:", ...GLOBAL_HELP].join("\n"));
    console.log(sections.join("\n\n"));
    return 0;
  }
  const out: Out = { json: Boolean(values.json), lines: [], result: {} };
  try {
    await command.run(values, out);
  } catch (error) {
    const e = error as BaseError;
    const message = e instanceof BaseError ? `${e.name}: ${e.shortMessage}` : `${(error as Error).name ?? "Error"}: ${(error as Error).message}`;
    console.error(`ioi ${name} failed — ${message.split("\n")[0]}${e instanceof UsageError ? `\nUsage: ${command.usage}` : ""}`);
    if (out.json) console.log(JSON.stringify({ ok: false, error: e.name, message: e.shortMessage ?? e.message }));
    return e instanceof UsageError ? 2 : 1;
  }
  for (const line of out.lines) console.log(line);
  if (out.json) console.log(JSON.stringify({ ok: true, ...out.result }));
  return out.exitCode ?? 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
