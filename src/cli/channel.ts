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
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  decodeFunctionData,
  getAddress,
  isAddress,
  isAddressEqual,
  keccak256,
  stringToBytes,
  zeroAddress,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from "viem";
import type { SettlementSummary } from "../core/summary";

import { BaseError } from "../core/errors";
import { gasEscrowDomain, signingAccount, type GasEscrowDomain } from "../core/eip712";
import { signedSessionKeyGrantFromJson, type SignedSessionKeyGrant } from "../core/session-key";
import { secp256k1Backend } from "../core/secp256k1";
import {
  challengeClose,
  closeCooperative,
  closeUnilateral,
  finalizeClose,
  gasEscrowAbi,
  openChannel,
  type Wallet,
  CHANNEL_PHASES,
} from "../chain/escrow";
import { readSettledDisputeWindow } from "../chain/dispute-window";
import { isContractAccount, walletSessionKey } from "../chain/wallet-signature";
import { anchorIfLagging, leafCountOfRoot, type AnchorOutcome } from "../node/receipt-anchor";
import { readPaged } from "../chain/logs";
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
} from "../chain/gig";
import type { InvocationOutcome, PayerClient, PayerClientParameters } from "../node/payer-client";
import { PayerSession } from "../node/payer-session";
import { grantForTicket } from "../node/key-tickets";
import { echoHandler } from "../node/echo-worker";
import { advertisedEndpoints, EndpointError, listenHost, parsePeer } from "../node/endpoints";
import type { McpWorker } from "../node/mcp-worker";
import type { McpHandler } from "../node/provider-node";
import { readRequestFile, RequestFileReader, requestFrom, RequestFileError } from "../node/requests";
import { signedSessionReceiptToJson } from "../core/receipt";
import type { ChannelRecord, ChannelStore } from "../store/store";
import { exportLines } from "../node/archive";
import { schedulePrune } from "../node/prune";
import { SqliteStore } from "../store/sqlite-store";
import { channelRefToJson, describePricing, hasDocumentBody, disputeWindowProblem, sessionIdOf, type ChannelRef, modelAllowed, NATIVE_ASSET, prepaidPerCall, pricingTermsFromJson, termsHashOf, type PricingTerms } from "../core/terms";
import { signedPaymentTicketToJson } from "../core/ticket";
import type { JsonObject } from "../core/validate";
import {
  addressOption,
  assetUnitOf,
  boundedUint,
  channelOf,
  gigIdOf,
  hashOption,
  loadAccount,
  need,
  assertStoreExists,
  openAnyStore,
  openExistingStore,
  isPostgresStore,
  openStore,
  sessionOf,
  storedChannelOn,
  storePath,
  uint,
  UsageError,
  weiAmount,
  type Command,
  type CommandOptions,
  type Out,
} from "./common";
import { deployedAddress, deployedContract, givenAddress, readingOf, rpcClients } from "./chain";
import { readOptionFile } from "./input-file";
import { formatAmountWithBase, formatDate, formatDuration, formatMoment } from "../core/format";
import { parseDocument } from "../arbitration/document";
import { icsFromJson, icsHash, type Ics } from "../arbitration/ics";
import { LOG_OPTIONS, METRICS_OPTION, loggerFrom, startMetrics } from "../node/observability";
import { ALERT_NOTES, ALERT_OPTIONS, alertSettingsFrom, alertStateFor, TOP_UP_NOTES, TOP_UP_OPTIONS, topUpPolicyFrom, watchtowerAlerts } from "./alert-options";

// The node, the payer client (with the sealed transport and ML-KEM/ML-DSA) and the watchtower load only when
// a command that runs one is called, so `ioi --help` and the quick commands start fast (`npm run bench -- --cli`).
const nodeModules = {
  payerClient: () => import("../node/payer-client"),
  providerNode: () => import("../node/provider-node"),
  mcpWorker: () => import("../node/mcp-worker"),
  watchtower: () => import("../node/watchtower"),
  pgStore: () => import("../store/pg-store"),
  fleet: () => import("../node/fleet"),
};

/** `--db postgres://…`: the provider runs as one of several processes over PostgreSQL (decision 0036). */
export function isPostgresUrl(db: unknown): db is string {
  return typeof db === "string" && /^postgres(ql)?:\/\//.test(db);
}

// The plumbing moved to src/cli/common.ts (issue 13); re-exported for modules that import it from here.
export { addressOption, channelOf, gigIdOf, GLOBAL_HELP, hashOption, loadAccount, need, openStore, sessionOf, uint, UsageError, type Command, type Out } from "./common";

/** The channel commands of `ioi` (src/cli/ioi.ts composes them with the gig and dispute commands). */
export const COMMANDS: Record<string, Command> = {
  provider: {
    summary: "start a provider node on 127.0.0.1 (with its watchtower) and serve until Ctrl-C",
    usage: "ioi provider [--port N] (--price WEI | --terms-file FILE) [--model ID] [--host IP --allow-public] [--worker-timeout MS] [--worker-env NAME]… [--x402-mcp-port PORT] [--metrics HOST:PORT] [--log-level L] [--log-file PATH] [--worker CMD [ARGS…]]   |   ioi provider register|bond|unbond|withdraw|show",
    notes: [
      "  --db postgres://…     serve from PostgreSQL as one of several processes of this provider (decision 0036):",
      "                        each channel is served by the process its payer binds, under a fencing epoch; one",
      "                        elected process runs the watchtower and the finalise/claim duties",
      "  --advertise HOST:PORT the address(es) payers dial this process at, published for the fleet and listed in",
      "                        the signed offer (repeatable or A,B); needed when --host is 0.0.0.0 or ::, which is",
      "                        never published (without --advertise such a process publishes no endpoint)",
      "  --worker CMD [ARGS…]  run this MCP server over stdio and sell its calls (must come last: everything",
      "                        after it is the worker's command line); without it, the demo's echo worker",
      "  --worker-timeout MS   longest a worker call may take (default 30000); a call that fails is not charged",
      "  --worker-env NAME     pass this variable to the worker (repeatable). A worker gets only PATH, HOME, LANG,",
      "                        LC_ALL, LC_CTYPE, TZ, TMPDIR and SYSTEMROOT by default, never the node's key",
      "                        (IOI_PRIVATE_KEY, --key-env) or any IOI_*KEY*/SECRET/TOKEN/PASSWORD variable",
      "  --worker-url URL      sell the MCP server at this Streamable HTTP endpoint instead (SDK client; same limits)",
      "  --x402-mcp-port PORT  also serve x402 clients: an MCP endpoint (Streamable HTTP, http://HOST:PORT/mcp, on --host)",
      "                        answering an unpaid tools/call with x402's PaymentRequired (scheme ioi-channel) and taking",
      "                        the channel ticket in _meta[\"x402/payment\"]; tools/list is free (0 = any free port)",
      "  --host IP             address to listen on (default 127.0.0.1); a non-loopback one needs --allow-public",
      "  --terms-file FILE     the terms document offered (schemas/terms.schema.json: metered pricing with a cap per",
      "                        call, model snapshot ids, dispute rules, required receipts); --model must be one it lists",
      "  --suite-dir DIR --repository-dir DIR",
      "                        with version 4 terms (milestone streaming): serve tranches; each tranche's Progress Proof",
      "                        reports the bound suite's outcomes on the repository directory as it stands then",
      ...ALERT_NOTES,
    ],
    options: {
      port: { type: "string" },
      price: { type: "string" },
      "terms-file": { type: "string" },
      model: { type: "string" },
      "from-block": { type: "string" },
      host: { type: "string" },
      "allow-public": { type: "boolean" },
      advertise: { type: "string", multiple: true },
      "worker-timeout": { type: "string" },
      "worker-env": { type: "string", multiple: true },
      "suite-dir": { type: "string" },
      "repository-dir": { type: "string" },
      "worker-url": { type: "string" },
      "drop-results": { type: "boolean" },
      "x402-mcp-port": { type: "string" },
      ...METRICS_OPTION,
      ...LOG_OPTIONS,
      ...ALERT_OPTIONS,
    },
    run: runProvider,
  },
  open: {
    summary: "open and fund an ETH channel to a provider; the acting key is the funder and, unless --payer names another, the payer",
    usage: "ioi open --provider ADDR --deposit WEI [--peer HOST:PORT[,HOST:PORT…]] [--price WEI | --terms-file FILE] [--challenge SECONDS] [--payer ADDR [--ref-out FILE] | --payer-wallet W]",
    notes: [
      "  --payer ADDR     a sponsored channel: ADDR signs the tickets (it needs no funds); the acting key funds it and",
      "                   receives every refund; the channel is not stored as the acting key's to stream on",
      "  --payer-wallet W the payer is contract wallet W (ERC-1271) and the acting key signs for it (an owner-key wallet",
      "                   accepts its owner's signature of a digest); the key funds the channel and streams on it",
      "                   (ioi stream --payer-wallet W); decision 0035",
      "  --peer A,B       several endpoints of one provider fleet (or --peer repeated): the terms are asked of the first",
      "                   that answers; the list is stored for ioi stream, call and close (decision 0036)",
    ],
    options: {
      payer: { type: "string" },
      "payer-wallet": { type: "string" },
      "ref-out": { type: "string" },
      provider: { type: "string" },
      price: { type: "string" },
      "terms-file": { type: "string" },
      deposit: { type: "string" },
      challenge: { type: "string" },
      peer: { type: "string", multiple: true },
      "allow-remote": { type: "boolean" },
      policy: { type: "string" },
    },
    run: runOpen,
  },
  import: {
    summary: "store a channel a sponsor opened for you (ioi open --payer): its opening is read from the chain and checked, then you stream on it",
    usage: "ioi import --session ID (--price WEI | --terms-file FILE) [--peer HOST:PORT [--allow-remote]]",
    notes: [
      "  The channel's terms are read from the transaction that opened it; it must name you (the acting key) as payer,",
      "  and its terms hash must be the hash of --price / --terms-file. Nothing is sent: a sponsored payer needs no funds.",
    ],
    options: { session: { type: "string" }, price: { type: "string" }, "terms-file": { type: "string" }, peer: { type: "string" }, "allow-remote": { type: "boolean" } },
    run: runImport,
  },
  stream: {
    summary: "stream paid invocations to the channel's provider over the sealed socket (synthetic, or a request file)",
    usage: "ioi stream --session ID (-n N | --request-file F) [--inflight K] [--peer HOST:PORT[,HOST:PORT…] [--allow-remote]] [--commit-every N] [--commit-seconds T] [--payer-wallet W]",
    notes: [
      "  --request-file F  JSON-RPC requests, one per line; each result (or error) is printed as a JSON line",
      "  --payer-wallet W  the channel's payer is contract wallet W and the acting key signs for it (ioi open --payer-wallet)",
      "  --peer A,B        several endpoints of one provider (or --peer repeated): if the connection drops, the stream resumes on the next",
      "                    one, and on those the provider's signed terms offer lists (decision 0036)",
    ],
    options: { "payer-wallet": { type: "string" }, session: { type: "string" }, n: { type: "string", short: "n" }, inflight: { type: "string" }, peer: { type: "string", multiple: true }, "allow-remote": { type: "boolean" }, "request-file": { type: "string" }, "commit-every": { type: "string" }, "commit-seconds": { type: "string" }, "session-key": { type: "string" }, ...LOG_OPTIONS },
    run: runStream,
  },
  call: {
    summary: "send one paid MCP request to the channel's provider and print its result",
    usage: "ioi call --session ID (--request-file F | --method M [--params JSON]) [--peer HOST:PORT[,HOST:PORT…] [--allow-remote]]",
    notes: ["  e.g. ioi call --session 0x… --method tools/call --params '{\"name\":\"add\",\"arguments\":{\"a\":2,\"b\":3}}'"],
    options: { session: { type: "string" }, "request-file": { type: "string" }, method: { type: "string" }, params: { type: "string" }, peer: { type: "string", multiple: true }, "allow-remote": { type: "boolean" }, "session-key": { type: "string" } },
    run: runCall,
  },
  status: {
    summary: "show channels in the store, or one channel with its on-chain phase",
    usage: "ioi status [--session ID]",
    options: { session: { type: "string" } },
    run: runStatus,
  },
  close: {
    summary: "close a channel: cooperatively with the provider over the socket, or --unilateral",
    usage: "ioi close --session ID [--unilateral] [--peer HOST:PORT[,HOST:PORT…] [--allow-remote]]",
    notes: [
      "  --peer A,B  several endpoints of one provider fleet (or --peer repeated): tried in order; a connection that fails",
      "              moves to the next, which is sent the very same signed close proposal (never a new one), so a close",
      "              the failed process may have co-signed is answered with that co-signature (decision 0036)",
    ],
    options: { session: { type: "string" }, unilateral: { type: "boolean" }, peer: { type: "string", multiple: true }, "allow-remote": { type: "boolean" }, ...LOG_OPTIONS },
    run: runClose,
  },
  anchor: {
    summary: "anchor the provider's newest signed receipt commit when the recorded root lags it (payer or funder)",
    usage: "ioi anchor --session ID [--db PATH]",
    notes: [
      "Reads the channel's recorded close (or cooperative settlement) from the chain. When its root covers fewer of",
      "the payer's receipts than the provider's newest signed receipt commit in the store, anchors that commit, so",
      "`ioi dispute build-session` can prove every receipt it covers. A no-op when nothing lags or it is anchored.",
    ],
    options: { session: { type: "string" } },
    run: runAnchor,
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
    usage: "ioi watchtower [--from-block N] [--once] [--metrics HOST:PORT] [--log-level L] [--log-file PATH] [--alerts] [--alert-webhook URL] [--top-up-below A --top-up-to A --top-up-max-per-day A] [--prune-archive-dir DIR [--prune-every SECONDS] [--dispute-manager ADDRESS]]",
    notes: [
      ...ALERT_NOTES,
      ...TOP_UP_NOTES,
      "  --prune-archive-dir DIR: also archive and prune settled channels no dispute can reach any more, as",
      "  `ioi store prune` does, at start and every --prune-every seconds (default 3600).",
    ],
    options: { "from-block": { type: "string" }, once: { type: "boolean" }, ...METRICS_OPTION, ...LOG_OPTIONS, ...ALERT_OPTIONS, ...TOP_UP_OPTIONS, "prune-archive-dir": { type: "string" }, "prune-every": { type: "string" }, "dispute-manager": { type: "string" } },
    run: runWatchtower,
  },
  results: {
    summary: "print again every paid call's request, result (or error) and receipt from the payer's store, as JSON lines",
    usage: "ioi results --session ID [--from-seq N] [--db PATH]",
    notes: [
      "  Each result is stored before its receipt counts (ioi call, ioi stream), so after Ctrl-C or a crash every",
      "  answered paid call is here. `verified` says the stored request and output hash to the receipt's hashes.",
    ],
    options: { session: { type: "string" }, "from-seq": { type: "string" } },
    run: runResults,
  },
  export: {
    summary: "print a session's tickets and receipts as JSON lines, with the on-chain root",
    usage: "ioi export --session ID [--db PATH | --db postgres://…]",
    options: { session: { type: "string" } },
    run: runExport,
  },
};

/*//////////////////////////////////////////////////////////////
                              PLUMBING
//////////////////////////////////////////////////////////////*/

export async function chainClients(values: Record<string, unknown>, account?: LocalAccount) {
  givenAddress(values, "escrow", "IOI_ESCROW"); // a malformed address is refused before any RPC call
  const { publicClient, wallet, chainId } = await rpcClients(values, account);
  const { address: escrow, fromBlock } = await deployedContract(values, publicClient, "escrow", "IOI_ESCROW", "GasEscrow");
  const domain: GasEscrowDomain = gasEscrowDomain({ chainId, verifyingContract: escrow });
  return { publicClient, wallet, escrow, domain, chainId, fromBlock };
}

/** The close the store recorded for `channel`; a usage error if it has seen none yet. */
function closingOf(store: ChannelStore, channel: ChannelRecord) {
  const closing = store.getClosing(channel.sessionId);
  if (!closing) throw new UsageError("The store has seen no close of this channel; run `ioi watchtower --once` to catch up first.");
  return closing;
}

/**
 * The provider's endpoints for `ioi stream` / `ioi call` (decision 0036): `--peer a:1,b:2` or `--peer` repeated, else
 * the channel's stored peer. Each is checked like one --peer; an empty entry or one given twice is a careless list.
 */
function peersOf(values: Record<string, unknown>, channel: ChannelRecord | undefined): string[] {
  const given = values.peer as string[] | string | undefined;
  const raw = given === undefined ? channel?.peer : Array.isArray(given) ? given.join(",") : given;
  if (!raw) throw new UsageError("--peer HOST:PORT is required: where the provider node listens.");
  const peers = raw.split(",").map((p) => p.trim());
  const allowRemote = values["allow-remote"] === true;
  const seen = new Set<string>();
  for (const peer of peers) {
    if (peer === "") throw new UsageError(`--peer "${raw}" has an empty entry: list endpoints as HOST:PORT,HOST:PORT.`);
    const { host, port } = asUsage(() => parsePeer(peer, allowRemote));
    const key = `${host}:${port}`;
    if (seen.has(key)) throw new UsageError(`--peer "${raw}" names ${peer} twice: list each endpoint once.`);
    seen.add(key);
  }
  return peers;
}

/** Connects a payer to the first of `peers` that answers; it learns the fleet's other endpoints from the signed offer. */
async function fleetPayer(values: Record<string, unknown>, peers: string[], parameters: Omit<PayerClientParameters, "host" | "port">) {
  const allowRemote = values["allow-remote"] === true;
  return (await nodeModules.fleet()).FleetPayer.connect(parameters, peers, {
    dial: (e) => parsePeer(e, allowRemote),
    onResume: (endpoint, cause) => process.stderr.write(`The connection failed (${(cause as Error).message?.split("\n")[0] ?? String(cause)}); resumed on ${endpoint} from the store.\n`),
  });
}

/**
 * `ioi open --peer A,B` (decision 0036): the signed terms offer of the first endpoint that answers. An endpoint that
 * cannot be reached (or fails its handshake) is passed over with a line on stderr; the last failure is thrown.
 */
async function firstOffer<T>(peers: string[], allowRemote: boolean, fetch: (host: string, port: number) => Promise<T>): Promise<{ peer: string; offer: T }> {
  let last: unknown;
  for (const [k, peer] of peers.entries()) {
    const { host, port } = asUsage(() => parsePeer(peer, allowRemote));
    try {
      return { peer, offer: await fetch(host, port) };
    } catch (error) {
      last = error;
      if (k < peers.length - 1) console.error(`${peer} did not offer terms (${(error as Error).message?.split("\n")[0] ?? String(error)}); trying ${peers[k + 1]}.`);
    }
  }
  throw last;
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

/** The demo's default worker (no --worker): answers with the keccak of the params (deterministic, no I/O). */
export { echoHandler };

/** A bad --peer/--host or request file is a usage mistake: one sentence, exit 2. */
function asUsage<T>(f: () => T): T {
  try {
    return f();
  } catch (error) {
    if (error instanceof EndpointError || error instanceof RequestFileError) throw new UsageError(error.shortMessage);
    throw error;
  }
}

/*//////////////////////////////////////////////////////////////
                              COMMANDS
//////////////////////////////////////////////////////////////*/

async function runProvider(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const pricing = termsOption(values, "wei per invocation");
  const modelSnapshotId = (values.model as string | undefined) ?? (hasDocumentBody(pricing) && pricing.models.length === 1 ? pricing.models[0]! : undefined);
  if (modelSnapshotId !== undefined && !modelAllowed(pricing, modelSnapshotId)) {
    throw new UsageError(`--model ${modelSnapshotId} is not among the models the terms document lists (${hasDocumentBody(pricing) ? pricing.models.join(", ") : ""}); every receipt would prove a model swap.`);
  }
  if (modelSnapshotId === undefined && hasDocumentBody(pricing)) throw new UsageError(`The terms document lists ${pricing.models.length} models; say which one this node serves with --model.`);
  const host = asUsage(() => listenHost(values.host as string | undefined, values["allow-public"] === true));
  const port = Number(uint(values, "port", "TCP port to listen on (0 = any free port)", 0n));
  if (port > 65535) throw new UsageError(`--port must be at most 65535; received ${port}.`);
  if (values.advertise !== undefined) {
    if (!isPostgresUrl(values.db)) throw new UsageError("--advertise goes with --db postgres://…: it is where the other processes of a provider fleet and its payers reach this one.");
    asUsage(() => advertisedEndpoints(host, port, values.advertise as string[]));
  }
  const workerTimeout = Number(uint(values, "worker-timeout", "milliseconds a worker call may take", 30_000n));
  if (workerTimeout === 0 || workerTimeout > 3_600_000) throw new UsageError("--worker-timeout must be between 1 and 3600000 milliseconds.");
  // `--worker CMD [ARGS…]` arrives as the worker's argv (main splits it off before parsing).
  const argv = values.worker as string[] | undefined;
  if (argv !== undefined && (argv.length === 0 || argv[0] === "")) throw new UsageError("--worker needs the command that runs the MCP server, e.g. --worker node server.js.");
  const envNames = (values["worker-env"] as unknown as string[] | undefined) ?? [];
  if (envNames.length > 0 && argv === undefined) throw new UsageError("--worker-env goes with --worker CMD: it names variables passed to the worker.");
  const { workerEnvironment, WorkerEnvError } = await nodeModules.mcpWorker();
  let workerEnv: NodeJS.ProcessEnv;
  try {
    // The worker serves strangers: it gets an allow-list of variables, never the node's keys (issue 28 item 3).
    workerEnv = workerEnvironment(envNames, process.env, (values["key-env"] as string | undefined) ?? "IOI_PRIVATE_KEY");
  } catch (error) {
    if (error instanceof WorkerEnvError) throw new UsageError(error.shortMessage);
    throw error;
  }
  const stream = await streamWorkOf(values, pricing);
  const alertSettings = alertSettingsFrom(values);
  const { publicClient, wallet, escrow, domain, chainId, fromBlock } = await chainClients(values, account);
  const reading = readingOf(values, chainId);
  const log = (line: string) => process.stderr.write(`provider: ${line}\n`);
  const workerUrl = values["worker-url"] as string | undefined;
  if (workerUrl !== undefined && argv !== undefined) throw new UsageError("Give either --worker CMD (a stdio MCP server) or --worker-url URL (a Streamable HTTP one), not both.");
  if (workerUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(workerUrl)) throw new UsageError(`--worker-url must be an http(s) URL of an MCP endpoint; received ${JSON.stringify(workerUrl)}.`);
  const x402Port = values["x402-mcp-port"] === undefined ? undefined : Number(uint(values, "x402-mcp-port", "TCP port of the x402 MCP endpoint (0 = any free port)", 0n));
  if (x402Port !== undefined && x402Port > 65535) throw new UsageError(`--x402-mcp-port must be at most 65535; received ${x402Port}.`);
  if (x402Port !== undefined && isPostgresUrl(values.db)) throw new UsageError("--x402-mcp-port is served by a single-process provider (a SQLite --db) in this version, not by a fleet.");
  if (isPostgresUrl(values.db)) return runProviderFleet(values, out, { account, pricing, modelSnapshotId, host, port, argv, workerEnv, workerTimeout, publicClient, wallet: wallet!, escrow, domain, fromBlock, reading, log, alertSettings, stream, workerUrl });
  let worker: Pick<McpWorker, "handler" | "info" | "stop"> | undefined;
  let handler: McpHandler = echoHandler;
  if (argv !== undefined) {
    worker = await (await nodeModules.mcpWorker()).McpWorker.start({ command: argv[0]!, args: argv.slice(1), timeoutMs: workerTimeout, env: workerEnv, log });
    handler = worker.handler;
  } else if (workerUrl !== undefined) {
    const { McpHttpWorker } = await import("../node/mcp-http-worker");
    worker = await McpHttpWorker.start({ url: workerUrl, timeoutMs: workerTimeout, log });
    handler = worker.handler;
  }
  const store = openStore(values, "provider");
  const alertState = alertStateFor(storePath(values, "provider"));
  const logger = loggerFrom(values, "provider");
  const metrics = await startMetrics(values);
  const node = await (await nodeModules.providerNode()).ProviderNode.start({
    logger,
    metrics: metrics?.metrics,
    account,
    publicClient,
    domain,
    store,
    pricing,
    handler,
    modelSnapshotId: modelSnapshotId ?? (argv ? `worker:${path.basename(argv[0]!)}` : workerUrl ? `worker:${workerUrl}` : "worker:echo-keccak@1"),
    // Outputs are kept so a payer's retry gets its paid result again (decision 0033, exactly once).
    keepResults: values["drop-results"] !== true,
    ...(stream ? { stream } : {}),
    host,
    port,
    log,
  }).catch(async (error: unknown) => {
    await worker?.stop();
    throw error;
  });
  const tower = new (await nodeModules.watchtower()).Watchtower({
    logger: logger.child({ component: "watchtower" }),
    metrics: metrics?.metrics,
    publicClient,
    wallet: wallet!,
    escrow,
    store,
    fromBlock: uint(values, "from-block", "first block to watch", fromBlock),
    ...reading,
    name: `watchtower:${account.address.toLowerCase()}`,
    // The provider collects by itself (issue 28 item 7): due closes are finalised and payouts claimed.
    finalize: true,
    ...(alertSettings ? { alerts: await watchtowerAlerts(alertSettings, values, publicClient, logger.child({ component: "alerts" }), metrics?.metrics, alertState) } : {}),
    ...(alertState ? { alertState } : {}),
    onAnswer: (a) => console.log(JSON.stringify({ event: "watchtower.answered", sessionId: a.sessionId, staleSeq: a.staleSeq.toString(), answeredSeq: a.answeredSeq.toString(), inWindow: a.inWindow, txHash: a.txHash })),
    // The node learns from the same events when a bound channel closes or settles, and stops serving it.
    onEvents: (events) => node.applyEscrowEvents(events),
  });
  tower.start();
  // x402 clients (decision 0034): their MCP endpoint, on the node's host, paid through the same node and store.
  const x402 =
    x402Port === undefined
      ? undefined
      : await (await import("../node/x402-mcp-endpoint")).X402McpEndpoint.start({ node, handler, pricing, chainId: domain.chainId, escrow, provider: account.address, host, port: x402Port, log });
  // The ready line is always JSON, so a supervising process can read the port.
  console.log(JSON.stringify({ event: "provider.ready", host, port: node.port, provider: account.address, escrow, confirmations: reading.confirmations.toString(), termsHash: termsHashOf(pricing), worker: worker ? { tools: worker.info?.tools.map((t) => t.name) ?? [], env: Object.keys(workerEnv).sort() } : "echo", crypto: secp256k1Backend().implementation, ...(metrics ? { metrics: `http://${metrics.address}/metrics` } : {}), ...(x402 ? { x402Mcp: x402.url } : {}) }));
  logger.info({ event: "provider.ready", host, port: node.port, provider: account.address, escrow }, "provider node listening");
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await metrics?.close();
  await x402?.stop();
  await tower.stop();
  await node.stop();
  await worker?.stop();
  await store.close();
  out.lines.push("Provider node stopped.");
}

/**
 * `ioi provider --db postgres://…` (decision 0036): one process of a provider fleet. It serves the channels
 * its payers bind (taking each over under a fencing epoch), publishes its endpoint, and runs the chain duties
 * only while it is the elected leader, from a duties store fenced by the leader epoch.
 */
async function runProviderFleet(
  values: Record<string, unknown>,
  out: Out,
  c: {
    account: LocalAccount;
    pricing: ReturnType<typeof termsOption>;
    modelSnapshotId: string | undefined;
    host: string;
    port: number;
    argv: string[] | undefined;
    workerEnv: NodeJS.ProcessEnv;
    workerTimeout: number;
    publicClient: Awaited<ReturnType<typeof chainClients>>["publicClient"];
    wallet: NonNullable<Awaited<ReturnType<typeof chainClients>>["wallet"]>;
    escrow: Awaited<ReturnType<typeof chainClients>>["escrow"];
    domain: Awaited<ReturnType<typeof chainClients>>["domain"];
    fromBlock: bigint;
    reading: ReturnType<typeof readingOf>;
    log: (line: string) => void;
    alertSettings: ReturnType<typeof alertSettingsFrom>;
    stream: Awaited<ReturnType<typeof streamWorkOf>>;
    workerUrl: string | undefined;
  },
): Promise<void> {
  const url = values.db as string;
  const { PgStore } = await nodeModules.pgStore();
  const { FleetMember } = await nodeModules.fleet();
  let store: Awaited<ReturnType<typeof PgStore.open>>;
  try {
    store = await PgStore.open(url, { mode: "fleet" });
  } catch (cause) {
    if (cause instanceof BaseError) throw new UsageError(`Cannot use the PostgreSQL store: ${cause.shortMessage}`, { cause });
    throw cause;
  }
  let member: InstanceType<typeof FleetMember> | undefined;
  let worker: Pick<McpWorker, "handler" | "info" | "stop"> | undefined;
  let handler: McpHandler = echoHandler;
  if (c.argv !== undefined) {
    worker = await (await nodeModules.mcpWorker()).McpWorker.start({ command: c.argv[0]!, args: c.argv.slice(1), timeoutMs: c.workerTimeout, env: c.workerEnv, log: c.log });
    handler = worker.handler;
  } else if (c.workerUrl !== undefined) {
    const { McpHttpWorker } = await import("../node/mcp-http-worker");
    worker = await McpHttpWorker.start({ url: c.workerUrl, timeoutMs: c.workerTimeout, log: c.log });
    handler = worker.handler;
  }
  const logger = loggerFrom(values, "provider");
  const metrics = await startMetrics(values);
  const node = await (await nodeModules.providerNode()).ProviderNode.start({
    logger,
    metrics: metrics?.metrics,
    account: c.account,
    publicClient: c.publicClient,
    domain: c.domain,
    store,
    ownership: store,
    pricing: c.pricing,
    // The signed terms offer lists the fleet's live endpoints (decision 0036): a payer resumes on any of them.
    endpoints: async () => (member ? member.endpoints() : []),
    handler,
    ...(c.stream ? { stream: c.stream } : {}),
    modelSnapshotId: c.modelSnapshotId ?? (c.argv ? `worker:${path.basename(c.argv[0]!)}` : c.workerUrl ? `worker:${c.workerUrl}` : "worker:echo-keccak@1"),
    keepResults: values["drop-results"] !== true,
    host: c.host,
    port: c.port,
    log: c.log,
    // Every process learns from the chain when a channel it serves closes; the duties are the leader's alone.
    follow: { fromBlock: uint(values, "from-block", "first block to watch", c.fromBlock), pollMs: c.reading.pollMs },
  }).catch(async (error: unknown) => {
    await worker?.stop();
    await store.close();
    throw error;
  });
  // A channel another process took over leaves this one at once (notified by the database), not at its next write.
  // Without the notice (LISTEN refused), a channel taken over still leaves at its next write, which is fenced.
  await store.watch({ onTakenOver: (sessionId) => node.release(sessionId) }).catch((error: unknown) => logger.warn({ event: "fleet.listen_failed" }, `no change notices from the database: ${(error as Error).message.split("\n")[0]}`));
  // The chain duties, while this process leads: a store of every channel, refreshed before each round and
  // fenced by the leader epoch, and the watchtower run round by round (never two leaders' writes at once).
  let duties: { stop: () => Promise<void> } | undefined;
  const startDuties = async (epoch: bigint) => {
    const dutyStore = await PgStore.open(url, { mode: "duties", owner: `${store.owner}:duties`, poolSize: 2 });
    dutyStore.lead({ name: (await nodeModules.fleet()).DUTIES, epoch });
    // Each round reads only the channels the database notified as changed (and all of them every 30 s).
    // Without it (LISTEN refused), each round reads every channel again, as before.
    await dutyStore.watch().catch((error: unknown) => logger.warn({ event: "fleet.listen_failed" }, `no change notices from the database: ${(error as Error).message.split("\n")[0]}`));
    const tower = new (await nodeModules.watchtower()).Watchtower({
      logger: logger.child({ component: "watchtower" }),
      publicClient: c.publicClient,
      wallet: c.wallet,
      escrow: c.escrow,
      store: dutyStore,
      fromBlock: uint(values, "from-block", "first block to watch", c.fromBlock),
      ...c.reading,
      name: `watchtower:${c.account.address.toLowerCase()}`,
      finalize: true,
      ...(c.alertSettings ? { alerts: await watchtowerAlerts(c.alertSettings, values, c.publicClient, logger.child({ component: "alerts" }), metrics?.metrics) } : {}),
      onAnswer: (a) => console.log(JSON.stringify({ event: "watchtower.answered", sessionId: a.sessionId, staleSeq: a.staleSeq.toString(), answeredSeq: a.answeredSeq.toString(), inWindow: a.inWindow, txHash: a.txHash })),
    });
    let running = true;
    const loop = (async () => {
      while (running) {
        try {
          await dutyStore.refresh();
          await tower.runOnce();
        } catch (error) {
          logger.warn({ event: "duties.error", error: (error as Error).name }, `chain duties round failed: ${(error as Error).message.split("\n")[0]}`);
        }
        await new Promise((resolve) => setTimeout(resolve, c.reading.pollMs ?? 250));
      }
    })();
    console.log(JSON.stringify({ event: "fleet.leader", owner: store.owner, epoch: epoch.toString() }));
    duties = {
      stop: async () => {
        running = false;
        await loop;
        await dutyStore.close();
      },
    };
  };
  // Never publish 0.0.0.0 or :: (no payer can dial it): --advertise says where payers reach this process.
  const endpoints = advertisedEndpoints(c.host, node.port, values.advertise as string[] | undefined);
  if (endpoints.length === 0) {
    const line = `listening on ${c.host}, which no payer can dial: this process publishes no endpoint, so payers reach it only when given its address (--peer); add --advertise HOST:PORT to publish where it is reached`;
    logger.warn({ event: "fleet.no_endpoint", host: c.host }, line);
  }
  member = new FleetMember({
    store,
    endpoints,
    onLead: (epoch) => startDuties(epoch),
    onFollow: async () => {
      const d = duties;
      duties = undefined;
      await d?.stop();
    },
    onError: (error) => logger.warn({ event: "fleet.error", error: (error as Error).name }, `fleet heartbeat failed: ${(error as Error).message.split("\n")[0]}`),
  });
  await member.start();
  console.log(JSON.stringify({ event: "provider.ready", host: c.host, port: node.port, provider: c.account.address, escrow: c.escrow, termsHash: termsHashOf(c.pricing), worker: worker ? { tools: worker.info?.tools.map((t) => t.name) ?? [], env: Object.keys(c.workerEnv).sort() } : "echo", crypto: secp256k1Backend().implementation, store: "postgres", owner: store.owner, advertised: endpoints, endpoints: await member.endpoints(), ...(metrics ? { metrics: `http://${metrics.address}/metrics` } : {}) }));
  logger.info({ event: "provider.ready", host: c.host, port: node.port, provider: c.account.address, escrow: c.escrow, owner: store.owner }, "provider node listening (fleet)");
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await member.stop();
  await metrics?.close();
  await node.stop();
  await worker?.stop();
  await store.close();
  out.lines.push("Provider node stopped.");
}

/**
 * Milestone streaming (issue 32): with v4 terms the node serves tranches, each proof reporting the bound suite's
 * outcomes on `--repository-dir` as it stands when the tranche ends (what the provider's agent left there).
 */
async function streamWorkOf(values: Record<string, unknown>, pricing: PricingTerms) {
  const suiteDir = values["suite-dir"] as string | undefined;
  const repositoryDir = values["repository-dir"] as string | undefined;
  if (pricing.version !== "4") {
    if (suiteDir !== undefined || repositoryDir !== undefined) throw new UsageError("--suite-dir and --repository-dir go with version 4 terms (milestone streaming): give them with --terms-file of a v4 document.");
    return undefined;
  }
  if (suiteDir === undefined || repositoryDir === undefined) throw new UsageError("Version 4 terms stream milestones: give --suite-dir (the bound test suite) and --repository-dir (the repository each tranche's proof reports on).");
  const { readBundleDirectory } = await import("./input-file");
  const { bundleHash } = await import("../arbitration/bundle");
  const { suiteStreamWork } = await import("../node/stream-service");
  const suite = readBundleDirectory(suiteDir, "suite-dir");
  if (bundleHash(suite) !== pricing.stream.suite.hash) throw new UsageError(`--suite-dir hashes to ${bundleHash(suite)}; the terms bind the suite ${pricing.stream.suite.hash}.`);
  readBundleDirectory(repositoryDir, "repository-dir"); // readable now; read again at each tranche
  const read = () => readBundleDirectory(repositoryDir, "repository-dir");
  // After a restart a sample is answered from the directory if it still is the repository the proof is anchored to.
  return { work: suiteStreamWork({ suite, read }), repositoryOf: read };
}

async function runOpen(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const provider = need(values, "provider", "the provider's address");
  if (!isAddress(provider)) throw new UsageError(`--provider must be an address; received "${provider}".`);
  // A sponsored channel (issue 14): the acting key funds it for another payer.
  if (values.payer !== undefined && values["payer-wallet"] !== undefined) throw new UsageError("Give either --payer ADDR (a sponsored payer's key) or --payer-wallet W (a contract wallet your key signs for), not both.");
  const payerWallet = values["payer-wallet"] === undefined ? undefined : addressOption(values, "payer-wallet", "the contract wallet your key signs for");
  const payer = payerWallet ?? (values.payer === undefined ? account.address : addressOption(values, "payer", "the payer who signs the tickets"));
  const sponsored = payerWallet === undefined && payer.toLowerCase() !== account.address.toLowerCase();
  if (values["ref-out"] !== undefined && !sponsored) throw new UsageError("--ref-out is for a sponsored channel (--payer ADDR): the payer's own store keeps its channels.");
  const deposit = weiAmount(values, "deposit", "wei to lock in the channel");
  if (deposit === 0n) throw new UsageError("--deposit must be more than zero: a channel with nothing in it can pay for nothing.");
  // Every option is checked before reaching for a node.
  if (values.price !== undefined && values["terms-file"] !== undefined) throw new UsageError("Give either --price WEI (a flat price per invocation) or --terms-file FILE (a terms document), not both.");
  if (values.price !== undefined) weiAmount(values, "price", "wei per invocation");
  const agreed = values["terms-file"] !== undefined ? termsOption(values, "wei per invocation") : undefined;
  uint(values, "challenge", "challenge window in seconds", 3600n);
  const { publicClient, wallet, escrow, domain, chainId } = await chainClients(values, account);
  if (payerWallet !== undefined && !(await isContractAccount({ publicClient, address: payerWallet }))) {
    throw new UsageError(`--payer-wallet ${payerWallet} holds no code on chain ${chainId}: it is not a contract wallet (a plain key pays as itself, or as --payer).`);
  }
  // No funding before agreement (issue 12): with --peer, ask the provider for its signed terms first and
  // fund only a channel on them; without it, say what could not be checked.
  let pricing: PricingTerms;
  let termsChecked = false;
  const peers = values.peer === undefined ? undefined : peersOf(values, undefined);
  if (peers !== undefined) {
    // A fleet (decision 0036): the offer of the first endpoint that answers; each is signed by the provider's key.
    const { peer, offer } = await firstOffer(peers, values["allow-remote"] === true, (host, port) => nodeModules.payerClient().then((m) => m.fetchTermsOffer({ account, domain, provider: getAddress(provider), host, port })));
    if (values.price !== undefined) {
      const wanted = weiAmount(values, "price", "wei per invocation");
      if (offer.pricing.version !== "1") {
        throw new UsageError(`The provider at ${peer} offers a terms document (${describePricing(offer.pricing)}), not a flat price of ${wanted} wei; nothing was funded (open with --terms-file holding the document you agree to).`);
      }
      if (wanted !== offer.pricing.pricePerInvocation) {
        throw new UsageError(`The provider at ${peer} charges ${offer.pricing.pricePerInvocation} wei per invocation, not ${wanted}; nothing was funded (open with --price ${offer.pricing.pricePerInvocation}, or not at all).`);
      }
    }
    if (agreed !== undefined && termsHashOf(agreed) !== offer.termsHash) {
      throw new UsageError(
        `The provider at ${peer} offers terms ${offer.termsHash} (${describePricing(offer.pricing)}); the document in --terms-file ${String(values["terms-file"])} hashes to ${termsHashOf(agreed)} (${describePricing(agreed)}); nothing was funded.`,
      );
    }
    pricing = offer.pricing;
    termsChecked = true;
  } else {
    pricing = agreed ?? { version: "1", unit: "invocation", pricePerInvocation: weiAmount(values, "price", "wei per invocation, as the provider charges") };
    out.lines.push("Warning: without --peer the provider's terms were not checked; if it refuses this price, only a unilateral close and its full window return the deposit.");
  }
  // Terms promising a longer dispute window than the chain enforces would mislead the payer (decision 0026): refused.
  if (hasDocumentBody(pricing)) {
    const disputeManager = await deployedContract(values, publicClient, "dispute-manager", "IOI_DISPUTE_MANAGER", "DisputeManager").catch(() => undefined);
    if (disputeManager === undefined) {
      out.lines.push("Warning: no DisputeManager is known for this chain (deployment record or $IOI_DISPUTE_MANAGER), so the terms' dispute window was not compared with the chain's.");
    } else {
      const problem = disputeWindowProblem(pricing, await readSettledDisputeWindow(publicClient, disputeManager.address));
      if (problem) throw new UsageError(`Refusing the terms: ${problem}; nothing was funded.`);
    }
  }
  const store = openStore(values, "payer");
  try {
    const opened = await openChannel({
      wallet: wallet!,
      publicClient,
      escrow,
      amount: deposit,
      terms: {
        payer,
        provider: getAddress(provider),
        funder: account.address,
        asset: NATIVE_ASSET,
        termsHash: termsHashOf(pricing),
        policyHash: keccak256(stringToBytes((values.policy as string | undefined) ?? "policy: default")),
        challengeDuration: uint(values, "challenge", "challenge window in seconds", 3600n),
        nonce: BigInt(Date.now()),
      },
    });
    if (!sponsored) {
      await store.putChannel({ sessionId: opened.sessionId, role: "payer", ref: opened.ref, pricing, escrow, chainId, deposit: opened.deposit, status: "open", ...(peers ? { peer: peers.join(",") } : {}) });
    }
    out.lines.push(`Opened session ${opened.sessionId} with ${formatAmountWithBase(opened.deposit)} ${pricing.version === "1" ? ` at ${formatAmountWithBase(pricing.pricePerInvocation)} per invocation` : ` on terms ${termsHashOf(pricing)} (${describePricing(pricing)})`} (gas ${opened.gasUsed}).`);
    const ref = channelRefToJson(opened.ref);
    if (sponsored) {
      out.lines.push(`Sponsored: ${payer} signs the tickets (it holds no funds); refunds come back to ${account.address}.`);
      const refOut = values["ref-out"] as string | undefined;
      if (refOut) {
        try {
          writeFileSync(refOut, `${JSON.stringify(ref, null, 2)}\n`);
        } catch (cause) {
          throw new UsageError(`Cannot write --ref-out ${refOut}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
        }
        out.lines.push(`Wrote the channel reference for the payer to ${refOut} (ioi session-key authorize --ref ${refOut}).`);
      }
    }
    Object.assign(out.result, { sessionId: opened.sessionId, openedAt: opened.ref.openedAt.toString(), deposit: opened.deposit.toString(), gasUsed: Number(opened.gasUsed), domain: { chainId: domain.chainId, escrow }, ...(pricing.version === "1" ? { pricePerInvocation: pricing.pricePerInvocation.toString() } : {}), termsHash: termsHashOf(pricing), termsChecked, payer, funder: account.address, ref });
  } finally {
    await store.close();
  }
}

/**
 * `ioi import` (issue 14): a sponsored payer's way in. The sponsor opened the channel (`ioi open --payer`), so the
 * payer's store has no record of it. Everything is read from the chain, never taken on trust: the escrow must hold
 * code; the `ChannelOpened` event for the session (paged logs) gives the opening block and the transaction, whose
 * calldata (`GasEscrow.open(terms, amount)`) gives the terms; those terms must derive the session id, name the
 * acting key as payer, and bind the hash of the terms document the payer agrees to; the channel must be open.
 */
async function runImport(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const sessionId = sessionOf(values);
  if (values.price === undefined && values["terms-file"] === undefined) throw new UsageError("Give --price WEI or --terms-file FILE: the terms you agree to pay on (their hash must be the channel's).");
  const pricing = termsOption(values, "wei per invocation");
  if (values.peer !== undefined) asUsage(() => parsePeer(values.peer as string, values["allow-remote"] === true));
  const { publicClient, escrow, domain, chainId, fromBlock } = await chainClients(values, account);
  const code = await publicClient.getCode({ address: escrow });
  if (code === undefined || code === "0x") throw new UsageError(`No contract code at the escrow ${escrow}; nothing was imported.`);
  const head = await publicClient.getBlockNumber();
  const read = (from: bigint, to: bigint) =>
    publicClient.getContractEvents({ address: escrow, abi: gasEscrowAbi, eventName: "ChannelOpened", args: { sessionId }, fromBlock: from, toBlock: to });
  const reading = readingOf(values, chainId);
  const found = await readPaged<Awaited<ReturnType<typeof read>>[number]>(
    { fromBlock, toBlock: head, maxBlockRange: reading.batchBlocks, retry: reading.retry, done: (items) => items.length > 0 },
    read,
  );
  const opened = found[0];
  if (!opened) throw new UsageError(`No channel ${sessionId} was opened on the escrow ${escrow} (blocks ${fromBlock}–${head}); check --session and the chain.`);
  const tx = await publicClient.getTransaction({ hash: opened.transactionHash });
  let terms: ChannelRef["terms"];
  try {
    if (!tx.to || !isAddressEqual(tx.to, escrow)) throw new Error("not sent to the escrow");
    const call = decodeFunctionData({ abi: gasEscrowAbi, data: tx.input });
    if (call.functionName !== "open") throw new Error(`a ${call.functionName} call`);
    terms = call.args[0];
  } catch (cause) {
    throw new UsageError(`The channel was opened by transaction ${opened.transactionHash}, which is not a direct GasEscrow.open call (${(cause as Error).message.split("\n")[0]}); its terms cannot be read from the chain.`, { cause });
  }
  const ref: ChannelRef = { terms: { ...terms, payer: getAddress(terms.payer), provider: getAddress(terms.provider), funder: getAddress(terms.funder), asset: getAddress(terms.asset) }, openedAt: BigInt(opened.args.openedAt!) };
  if (sessionIdOf(domain, ref) !== sessionId) throw new UsageError(`The terms in transaction ${opened.transactionHash} do not derive session ${sessionId}; nothing was imported.`);
  if (!isAddressEqual(ref.terms.payer, account.address)) {
    throw new UsageError(`Session ${sessionId} names ${ref.terms.payer} as its payer, not you (${account.address}); only the payer streams on it.`);
  }
  if (termsHashOf(pricing) !== ref.terms.termsHash) {
    throw new UsageError(`The channel binds terms ${ref.terms.termsHash}; ${values["terms-file"] !== undefined ? `the document in --terms-file ${String(values["terms-file"])}` : `--price ${String(values.price)}`} hashes to ${termsHashOf(pricing)} (${describePricing(pricing)}); nothing was imported.`);
  }
  const [phase, deposit] = await Promise.all([
    publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [sessionId] }),
    publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "depositOf", args: [sessionId] }),
  ]);
  if (phase !== 1) throw new UsageError(`Session ${sessionId} is not open on-chain (phase ${phase}); nothing was imported.`);
  const store = openStore(values, "payer");
  try {
    const known = store.getChannel(sessionId);
    if (known && (known.role !== "payer" || termsHashOf(known.pricing) !== ref.terms.termsHash)) {
      throw new UsageError(`The store already holds session ${sessionId} as a ${known.role} channel on other terms; use another --db.`);
    }
    const peer = (values.peer as string | undefined) ?? known?.peer;
    await store.putChannel({ sessionId, role: "payer", ref, pricing, escrow, chainId, deposit, status: "open", ...(peer ? { peer } : {}) });
    out.lines.push(
      `Imported session ${sessionId}: you (${account.address}) pay ${ref.terms.provider} from a deposit of ${formatAmountWithBase(deposit)} funded by ${ref.terms.funder} (refunds go there); terms ${describePricing(pricing)}.`,
    );
    Object.assign(out.result, { sessionId, payer: ref.terms.payer, funder: ref.terms.funder, provider: ref.terms.provider, deposit: deposit.toString(), termsHash: ref.terms.termsHash, openedAt: ref.openedAt.toString(), ref: channelRefToJson(ref) });
  } finally {
    await store.close();
  }
}

/**
 * `--session-key FILE` (decision 0025): the grant and private key `ioi session-key authorize --out` wrote; the
 * tickets are then signed by that key, and the grant must be for this session.
 */
export function sessionKeyOf(values: Record<string, unknown>, sessionId: Hex): { account: LocalAccount; grant: SignedSessionKeyGrant } | undefined {
  const file = values["session-key"] as string | undefined;
  if (file === undefined) return undefined;
  let raw: { grant?: unknown; privateKey?: unknown };
  const bytes = readOptionFile("session-key", file, 64 * 1024);
  try {
    raw = JSON.parse(bytes.toString("utf8")) as typeof raw;
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new Error("not an object");
  } catch {
    throw new UsageError(`Cannot read --session-key ${file}: it must be the file \`ioi session-key authorize --out\` wrote.`);
  }
  const grant = asUsage(() => signedSessionKeyGrantFromJson(raw.grant, "session-key.grant"));
  if (typeof raw.privateKey !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(raw.privateKey)) {
    throw new UsageError(`--session-key ${file} holds no private key (a grant for a key you hold elsewhere cannot sign here).`);
  }
  const account = signingAccount(raw.privateKey as Hex);
  if (account.address !== grant.grant.key) throw new UsageError(`--session-key ${file}: its private key is not the granted key ${grant.grant.key}.`);
  if (grant.grant.sessionId !== sessionId) throw new UsageError(`--session-key ${file} is a grant for session ${grant.grant.sessionId}, not ${sessionId}.`);
  return { account, grant };
}

/**
 * `--payer-wallet W` (decision 0035): the channel's payer is contract wallet W and the acting key signs for it; the
 * key connects as the session key of the wallet's grant (signed once, kept in the store). Without the option, a
 * channel whose payer is not the acting key is refused with the option to use.
 */
async function walletKeyOf(
  values: Record<string, unknown>,
  account: LocalAccount,
  channel: ChannelRecord,
  store: ChannelStore,
): Promise<{ account: LocalAccount; grant: SignedSessionKeyGrant } | undefined> {
  const payer = channel.ref.terms.payer;
  const named = values["payer-wallet"] === undefined ? undefined : addressOption(values, "payer-wallet", "the contract wallet your key signs for");
  if (named === undefined) {
    if (channel.role === "payer" && !isAddressEqual(payer, account.address)) {
      throw new UsageError(`Session ${channel.sessionId}'s payer is ${payer}, not your key ${account.address}: if it is the contract wallet your key signs for, pass --payer-wallet ${payer}.`);
    }
    return undefined;
  }
  if (!isAddressEqual(named, payer)) throw new UsageError(`--payer-wallet ${named} is not session ${channel.sessionId}'s payer (${payer}).`);
  const { publicClient, domain } = await chainClients(values);
  return walletSessionKey({ account, domain, publicClient, wallet: named, sessionId: channel.sessionId, store });
}

/** The method of `ioi stream -n`'s synthetic calls. */
const SYNTHETIC_METHOD = "tools/echo";

/** Why a session key's grant cannot pay for `method`, or undefined when it can. */
function methodCheck(grant: SignedSessionKeyGrant): (method: string) => string | undefined {
  const methods = grant.methods;
  return (method) =>
    methods.includes("*") || methods.includes(method) ? undefined : `its method ${method} is not one the session key may pay for (${methods.join(", ")}); nothing was paid.`;
}

async function runStream(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  // Every option is checked before the chain or the store is touched.
  if (values.n !== undefined && values["request-file"] !== undefined) throw new UsageError("Give either -n (synthetic requests) or --request-file, not both.");
  // A request file is streamed line by line (issue 28 item 8): checked once in full here, then read again as sent.
  const sessionId = sessionOf(values);
  const sessionKey = sessionKeyOf(values, sessionId);
  // A session key pays only for the methods its grant names (decision 0025): a request it cannot pay for is named
  // before anything is paid (issue 28 item 9: the README's sequence used to fail mid-stream).
  const allowed = sessionKey ? methodCheck(sessionKey.grant) : undefined;
  const requests = values["request-file"] === undefined ? undefined : asUsage(() => RequestFileReader.open(values["request-file"] as string, allowed));
  if (!requests && allowed?.(SYNTHETIC_METHOD)) {
    throw new UsageError(`-n streams synthetic ${SYNTHETIC_METHOD} calls, but --session-key ${String(values["session-key"])} may pay only for ${sessionKey!.grant.methods.join(", ")}; stream a --request-file of those methods, or authorize the key with --methods ${SYNTHETIC_METHOD}.`);
  }
  const count = requests ? requests.count : Number(boundedUint(values, "n", "how many invocations to stream (or give --request-file)", 1n, 10_000_000n));
  const inflight = Number(boundedUint(values, "inflight", "invocations in flight at once", 1n, 4_096n, 16n));
  // Signed receipt commits mid-stream: every N receipts and/or T seconds (0 turns either off).
  const commitEvery = Number(boundedUint(values, "commit-every", "receipts between two receipt commits (0: none mid-stream)", 0n, 10_000_000n, 100n));
  const commitIntervalMs = Number(boundedUint(values, "commit-seconds", "seconds between two receipt commits (0: none)", 0n, 86_400n, 0n)) * 1000;
  if (values.peer !== undefined) peersOf(values, undefined);
  const { domain, chainId } = await chainClients(values);
  const store = openExistingStore(values, "payer");
  // Ctrl-C stops sending; every call already paid for is awaited, its result stored and printed (issue 28 item 8).
  const interrupt = new AbortController();
  const onSignal = () => {
    process.stderr.write("\nInterrupted: no new calls are paid for; waiting for the answers to those already paid (Ctrl-C again quits at once).\n");
    interrupt.abort();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const channel = storedChannelOn(store, sessionId, chainId, domain.verifyingContract);
    const peers = peersOf(values, channel);
    const walletKey = await walletKeyOf(values, account, channel, store);
    if (walletKey && sessionKey) throw new UsageError("Give either --session-key FILE or --payer-wallet W: a wallet payer's key is its own session key.");
    const key = walletKey ?? sessionKey;
    const fleet = await fleetPayer(values, peers, { account, domain, store, channel, logger: loggerFrom(values, "payer"), ...(key ? { sessionKey: key } : {}) });
    await assertAffordable(fleet.client, channel, count);
    const started = performance.now();
    // Ids of requests in flight, by index: what an answer is printed under (the file itself is never held).
    const ids = new Map<number, JsonObject["id"]>();
    let answered = 0;
    const latencies = await fleet.stream({
      count,
      inflight,
      request: (i) => {
        if (!requests) return { jsonrpc: "2.0", id: `invoke-${i}`, method: SYNTHETIC_METHOD, params: { text: `invocation ${i}` } };
        const request = requests.next();
        ids.set(i, request.id);
        return request;
      },
      onProgress: progressBar(count),
      commitEvery,
      commitIntervalMs,
      signal: interrupt.signal,
      // With a request file, each answer is printed the moment it is durable (stored with its receipt): one
      // JSON line per request, on stdout at once — never held until the stream ends.
      onOutcome: (i: number, o: InvocationOutcome) => {
        answered += 1;
        if (!requests) return;
        const id = ids.get(i);
        ids.delete(i);
        console.log(JSON.stringify(outcomeJson({ id: id ?? null }, o)));
      },
    });
    requests?.close();
    const seconds = (performance.now() - started) / 1000;
    const client = fleet.client;
    const { root, leafCount } = await client.commit();
    await client.close();
    latencies.sort((a, b) => a - b);
    const perSecond = Math.round(answered / seconds);
    const p50 = latencies.length ? `${latencies[Math.floor(latencies.length / 2)]!.toFixed(1)} ms` : "n/a";
    if (interrupt.signal.aborted) {
      out.lines.push(`Interrupted after ${answered} of ${count} invocations; every paid call's result is stored (\`ioi results --session ${channel.sessionId}\`); root ${root} over ${leafCount} receipts, agreed with the provider.`);
      out.exitCode = 130;
    } else {
      out.lines.push(`Streamed ${count} invocations in ${seconds.toFixed(2)} s (${perSecond}/s, p50 ${p50}); root ${root} over ${leafCount} receipts, agreed with the provider.`);
    }
    Object.assign(out.result, { sessionId: channel.sessionId, invocations: answered, requested: count, interrupted: interrupt.signal.aborted, seconds, ticketsPerSecond: perSecond, endpoint: fleet.endpoint, finalSeq: client.session.seq.toString(), paid: client.session.cumulativeAmount.toString(), charged: client.session.charged.toString(), receiptRoot: root });
  } finally {
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
    requests?.close();
    await store.close();
  }
}

/** Refuses, before anything is signed, a run that what is left of the channel's deposit cannot pay for. */
async function assertAffordable(client: PayerClient, channel: ChannelRecord, count: number): Promise<void> {
  const promised = client.session.cumulativeAmount;
  // A ticket prepays the most a call can cost (v2: the cap per call); metered receipts may charge less.
  const price = prepaidPerCall(channel.pricing);
  const cost = price * BigInt(count);
  if (promised + cost > channel.deposit) {
    await client.close();
    const fits = price === 0n ? 0n : (channel.deposit - promised) / price;
    throw new UsageError(
      `${count} invocations at ${formatAmountWithBase(price)} would pay ${formatAmountWithBase(promised + cost)} in total, past the deposit of ${formatAmountWithBase(channel.deposit)}; at most ${fits} more fit (top up with \`ioi deposit\`).`,
    );
  }
}

/** One answer as printed by `ioi call` / `ioi stream --request-file`: the request's id, result or error, receipt. */
function outcomeJson(request: JsonObject, o: InvocationOutcome): Record<string, unknown> {
  return {
    id: request.id,
    seq: o.seq.toString(),
    ...(o.error ? { error: o.error } : { result: o.result ?? null }),
    charged: o.charged.toString(),
    outputHash: o.receipt.receipt.outputHash,
  };
}

async function runCall(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  if ((values["request-file"] === undefined) === (values.method === undefined)) throw new UsageError("Give the request as --request-file F or as --method M [--params JSON] (one of them).");
  if (values.params !== undefined && values.method === undefined) throw new UsageError("--params goes with --method.");
  const request = asUsage(() => {
    if (values.method !== undefined) return requestFrom(values.method as string, values.params as string | undefined, "call-1");
    const requests = readRequestFile(values["request-file"] as string);
    if (requests.length !== 1) throw new RequestFileError(`${values["request-file"] as string} holds ${requests.length} requests; \`ioi call\` sends one (use \`ioi stream --request-file\` for many).`);
    return requests[0]!;
  });
  const sessionId = sessionOf(values);
  const sessionKey = sessionKeyOf(values, sessionId);
  const refused = sessionKey ? methodCheck(sessionKey.grant)(request.method as string) : undefined;
  if (refused) throw new UsageError(`The request: ${refused}`);
  if (values.peer !== undefined) peersOf(values, undefined);
  const { domain, chainId } = await chainClients(values);
  const store = openExistingStore(values, "payer");
  try {
    const channel = storedChannelOn(store, sessionId, chainId, domain.verifyingContract);
    const fleet = await fleetPayer(values, peersOf(values, channel), { account, domain, store, channel, ...(sessionKey ? { sessionKey } : {}) });
    await assertAffordable(fleet.client, channel, 1);
    try {
      // One call, resumed on the next endpoint if its process goes away before the answer is stored.
      let answered: InvocationOutcome | undefined;
      await fleet.stream({ count: 1, request: () => request, onOutcome: (_i, o) => (answered = o) });
      if (!answered) throw new BaseError("The call was not answered.");
      const outcome: InvocationOutcome = answered;
      const printed = outcomeJson(request, outcome);
      if (outcome.error) {
        out.lines.push(`The provider's worker failed (not charged): ${outcome.error.message}`);
        out.exitCode = 1;
      } else {
        out.lines.push(JSON.stringify(outcome.result ?? null, null, 2));
      }
      Object.assign(out.result, { sessionId: channel.sessionId, endpoint: fleet.endpoint, ...printed });
    } finally {
      await fleet.client.close();
    }
  } finally {
    await store.close();
  }
}

async function runStatus(values: Record<string, unknown>, out: Out): Promise<void> {
  // Which secp256k1 implementation signs and checks on this machine (decision 0023).
  out.lines.push(`secp256k1 backend: ${secp256k1Backend().implementation}`);
  out.result.crypto = secp256k1Backend().implementation;
  // A read-only command creates no store (issue 28 item 9): without one there is nothing to list.
  const file = storePath(values, "payer");
  if (!values.session && !existsSync(file)) {
    out.lines.push(`No store at ${file}: it holds no channels.`);
    out.result.channels = [];
    return;
  }
  const sessionId = values.session === undefined ? undefined : sessionOf(values);
  const store = openExistingStore(values, "payer");
  try {
    if (!values.session) {
      const channels = store.listChannels();
      for (const c of channels) out.lines.push(`${c.sessionId}  ${c.role.padEnd(8)} ${c.status.padEnd(8)} deposit ${formatAmountWithBase(c.deposit)}  seq ${store.latestTicket(c.sessionId)?.ticket.seq ?? 0n}`);
      if (channels.length === 0) out.lines.push("The store holds no channels.");
      out.result.channels = channels.map((c) => ({ sessionId: c.sessionId, role: c.role, status: c.status, deposit: c.deposit.toString() }));
      return;
    }
    channelOf(store, sessionId!);
    const { publicClient, escrow, chainId } = await chainClients(values);
    const channel = storedChannelOn(store, sessionId!, chainId, escrow);
    const phase = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [channel.sessionId] });
    const phases = CHANNEL_PHASES;
    const latest = store.latestTicket(channel.sessionId);
    const closing = store.getClosing(channel.sessionId);
    out.lines.push(`session ${channel.sessionId} (${channel.role}), on-chain phase ${phases[phase]}, stored status ${channel.status}`);
    out.lines.push(`  deposit ${formatAmountWithBase(channel.deposit)}, newest ticket seq ${latest?.ticket.seq ?? 0n} for ${formatAmountWithBase(latest?.ticket.cumulativeAmount ?? 0n)}, receipts ${store.receiptCount(channel.sessionId)}`);
    if (closing) out.lines.push(`  closing with seq ${closing.state.seq} until ${formatMoment(closing.finalizesAt, (await publicClient.getBlock()).timestamp)}`);
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
  // Inputs first (issue 28 item 9): the session id and the store, before the chain is reached for.
  const sessionId = sessionOf(values);
  assertStoreExists(values, "payer");
  const { publicClient, wallet, escrow, domain, chainId, fromBlock } = await chainClients(values, account);
  const store = openExistingStore(values, "payer");
  try {
    const channel = storedChannelOn(store, sessionId, chainId, escrow);
    if (values.unilateral) {
      // A payer closes with a ticket that drains the pipeline: the amount it already promised and the root
      // over every receipt it accepted, so each one is provable against what the close records (issue 12).
      let ticket = store.latestTicket(channel.sessionId);
      if (channel.role === "payer" && ticket) {
        const session = PayerSession.restore({ account, domain, ref: channel.ref, sessionId: channel.sessionId, pricing: channel.pricing, deposit: channel.deposit }, store.steps(channel.sessionId));
        ticket = await session.closingTicket();
      }
      // A provider's newest ticket may be signed by the payer's session key: it closes with the grant it kept.
      const grant = channel.role === "provider" && ticket ? await grantForTicket({ channel, store, ticket }) : undefined;
      const payerWallet = await isContractAccount({ publicClient, address: channel.ref.terms.payer });
      const closed = await closeUnilateral({ wallet: wallet!, publicClient, escrow, ref: channel.ref, ticket, ...(grant ? { grant } : {}), payerWallet });
      await store.putClosing(channel.sessionId, { state: closed.state, finalizesAt: closed.finalizesAt, closer: account.address, txHash: closed.hash });
      await store.updateChannel(channel.sessionId, { status: "closing" });
      out.lines.push(`Closed unilaterally with seq ${closed.state.seq}; the challenge window ends at ${formatDate(closed.finalizesAt)} (in ${formatDuration(channel.ref.terms.challengeDuration)}); then \`ioi finalize\` (gas ${closed.gasUsed}).`);
      Object.assign(out.result, { sessionId: channel.sessionId, seq: closed.state.seq.toString(), finalizesAt: closed.finalizesAt.toString(), gasUsed: Number(closed.gasUsed) });
      // The payer anchors the provider's newest signed receipt commit whenever the recorded root lags it, so
      // every receipt it covers stays provable (decision 0003, amendment "anchoring"; issue 27 finding 9).
      if (channel.role === "payer") {
        const anchoring = await anchorIfLagging({ wallet: wallet!, publicClient, escrow, store, channel, recordedRoot: closed.state.receiptRoot });
        reportAnchoring(out, anchoring);
      }
      return;
    }
    const peers = peersOf(values, channel);
    const allowRemote = values["allow-remote"] === true;
    const logger = loggerFrom(values, "payer");
    const payerWallet = await isContractAccount({ publicClient, address: channel.ref.terms.payer });
    // A wallet payer's key connects as the wallet's session key (decision 0035); its summary is the wallet's signature.
    const walletKey = payerWallet ? await walletSessionKey({ account, domain, publicClient, wallet: channel.ref.terms.payer, sessionId: channel.sessionId, store }) : undefined;
    const { PayerClient: Client } = await nodeModules.payerClient();
    const { isFinal } = await nodeModules.fleet();
    // Several endpoints of one provider fleet (decision 0036): tried in order. The proposal is signed once; a
    // process that failed may have co-signed it already, so the next one is sent the very same proposal (never a
    // new one) and answers with the co-signature the shared store holds, or co-signs it now.
    let proposal: { summary: SettlementSummary; signature: Hex } | undefined;
    let cosigned: Awaited<ReturnType<PayerClient["cooperativeClose"]>> | undefined;
    let last: unknown;
    for (const [k, peer] of peers.entries()) {
      const { host, port } = asUsage(() => parsePeer(peer, allowRemote));
      let client: PayerClient | undefined;
      try {
        client = await Client.connect({ account, domain, store, channel: store.getChannel(channel.sessionId) ?? channel, host, port, logger, ...(walletKey ? { sessionKey: walletKey } : {}) });
        proposal ??= await client.session.proposeCooperativeClose();
        cosigned = await client.cooperativeClose(proposal);
        await client.close();
        break;
      } catch (error) {
        await client?.close().catch(() => undefined);
        if (isFinal(error) || k === peers.length - 1) throw error;
        last = error;
        console.error(`${peer} failed (${(error as Error).message?.split("\n")[0] ?? String(error)}); ${proposal ? "sending the same close proposal to" : "trying"} ${peers[k + 1]}.`);
      }
    }
    if (!cosigned) throw last;
    const { summary, payerSignature, providerSignature } = cosigned;
    const settled = await closeCooperative({ wallet: wallet!, publicClient, escrow, ref: channel.ref, summary, payerSignature, providerSignature, payerWallet }).catch(async (error: unknown) => {
      // The provider holds the co-signed close too and may have sent it first (its watchtower submits the co-signed
      // closes it stores): the chain settled this very close once; that is the outcome, not a failure.
      // Read in bounded pages (a public chain refuses a range from the deployment to the head), stopping at the first.
      const read = (from: bigint, to: bigint) =>
        publicClient.getContractEvents({ address: escrow, abi: gasEscrowAbi, eventName: "ChannelSettled", args: { sessionId: channel.sessionId }, fromBlock: from, toBlock: to, strict: true });
      const reading = readingOf(values, chainId);
      const head = await publicClient.getBlockNumber();
      const [event] = await readPaged<Awaited<ReturnType<typeof read>>[number]>(
        { fromBlock, toBlock: head, maxBlockRange: reading.batchBlocks, retry: reading.retry, done: (items) => items.length > 0 },
        read,
      ).catch(() => []);
      if (!event || event.args.mode !== 0 || event.args.finalSeq !== summary.finalSeq || event.args.receiptRoot !== summary.finalReceiptRoot) throw error;
      out.lines.push(`The provider already submitted this co-signed close (block ${event.blockNumber}); it settled once.`);
      return { hash: event.transactionHash, blockNumber: event.blockNumber, paidToProvider: event.args.paidToProvider, refundedToFunder: event.args.refundedToFunder, fee: event.args.fee, receiptRoot: event.args.receiptRoot, gasUsed: 0n };
    });
    await store.updateChannel(channel.sessionId, { status: "settled" });
    logger.info({ event: "channel.settled", sessionId: channel.sessionId, finalSeq: summary.finalSeq.toString(), paidToProvider: settled.paidToProvider.toString(), refundedToFunder: settled.refundedToFunder.toString(), txHash: settled.hash }, "settled cooperatively on-chain");
    out.lines.push(`Settled cooperatively: ${formatAmountWithBase(settled.paidToProvider)} to the provider, ${formatAmountWithBase(settled.refundedToFunder)} refunded (gas ${settled.gasUsed}).`);
    Object.assign(out.result, { sessionId: channel.sessionId, finalSeq: summary.finalSeq.toString(), paidToProvider: settled.paidToProvider.toString(), refundedToFunder: settled.refundedToFunder.toString(), receiptRoot: settled.receiptRoot, gasUsed: Number(settled.gasUsed) });
  } finally {
    await store.close();
  }
}

async function runAnchor(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  // Inputs first (issue 28 item 9): the session id and the store, before the chain is reached for.
  const sessionId = sessionOf(values);
  assertStoreExists(values, "payer");
  const { publicClient, wallet, escrow, fromBlock, chainId } = await chainClients(values, account);
  const store = openExistingStore(values, "payer");
  try {
    const channel = storedChannelOn(store, sessionId, chainId, escrow);
    if (channel.role !== "payer") {
      throw new UsageError(`The store holds ${sessionId} as the ${channel.role}'s channel; \`ioi anchor\` runs on the payer's store (--db), whose receipts a case would prove.`);
    }
    const { payer, funder } = channel.ref.terms;
    if (!isAddressEqual(account.address, payer) && !isAddressEqual(account.address, funder)) {
      throw new UsageError(`Only the channel's payer ${payer} or funder ${funder} may anchor a receipt commit; the acting key is ${account.address}.`);
    }
    const phase = CHANNEL_PHASES[await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [sessionId] })];
    if (phase !== "Closing" && phase !== "Settled") {
      throw new UsageError(
        `Session ${sessionId} is ${phase} on-chain; a receipt commit is anchored while the channel is closing (inside its challenge window) or after a cooperative settlement.`,
      );
    }
    const { currentClosingState } = await import("../arbitration/chain");
    const recorded = await currentClosingState(publicClient, escrow, sessionId, fromBlock);
    const anchoring = await anchorIfLagging({ wallet: wallet!, publicClient, escrow, store, channel, recordedRoot: recorded.receiptRoot });
    reportAnchoring(out, anchoring);
    Object.assign(out.result, { sessionId, recordedSeq: recorded.seq.toString(), recordedRoot: recorded.receiptRoot, recordedReceipts: leafCountOfRoot(store.leaves(sessionId), recorded.receiptRoot) ?? null });
  } finally {
    await store.close();
  }
}

/** What `anchorIfLagging` did, as lines and the JSON result's `anchoring` (and `anchoredCommit` when it sent one). */
function reportAnchoring(out: Out, anchoring: AnchorOutcome): void {
  if (anchoring.status === "not_lagging") {
    out.lines.push("The recorded root covers every receipt the provider's newest signed commit covers; nothing to anchor.");
  } else if (anchoring.status === "already_anchored") {
    out.lines.push(`The provider's receipt commit over ${anchoring.commit.commit.leafCount} receipts (root ${anchoring.commit.commit.root}) is anchored already.`);
  } else {
    const { anchored } = anchoring;
    out.lines.push(`Anchored the provider's receipt commit over ${anchored.leafCount} receipts (root ${anchored.root}, gas ${anchored.gasUsed}).`);
    Object.assign(out.result, { anchoredCommit: { leafCount: anchored.leafCount.toString(), root: anchored.root, gasUsed: Number(anchored.gasUsed), transactionHash: anchored.hash } });
  }
  out.result.anchoring = anchoring.status;
}

async function runChallenge(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  // Inputs first (issue 28 item 9): the session id and the store, before the chain is reached for.
  const sessionId = sessionOf(values);
  assertStoreExists(values, "provider");
  const { publicClient, wallet, escrow, chainId } = await chainClients(values, account);
  const store = openExistingStore(values, "provider");
  try {
    const channel = storedChannelOn(store, sessionId, chainId, escrow);
    const closing = closingOf(store, channel);
    const newest = store.latestTicket(channel.sessionId);
    if (!newest || newest.ticket.seq <= closing.state.seq) throw new UsageError(`The store holds no ticket newer than the recorded seq ${closing.state.seq}.`);
    const grant = await grantForTicket({ channel, store, ticket: newest });
    const payerWallet = await isContractAccount({ publicClient, address: channel.ref.terms.payer });
    const challenged = await challengeClose({ wallet: wallet!, publicClient, escrow, ref: channel.ref, recorded: closing.state, ticket: newest, ...(grant ? { grant } : {}), payerWallet });
    await store.putClosing(channel.sessionId, { state: challenged.state, finalizesAt: challenged.finalizesAt, closer: account.address, txHash: challenged.hash });
    out.lines.push(`Challenged seq ${closing.state.seq} with seq ${challenged.state.seq} (gas ${challenged.gasUsed}).`);
    Object.assign(out.result, { sessionId: channel.sessionId, staleSeq: closing.state.seq.toString(), seq: challenged.state.seq.toString(), gasUsed: Number(challenged.gasUsed) });
  } finally {
    await store.close();
  }
}

async function runFinalize(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  // Inputs first (issue 28 item 9): the session id and the store, before the chain is reached for.
  const sessionId = sessionOf(values);
  assertStoreExists(values, "payer");
  const { publicClient, wallet, escrow, chainId } = await chainClients(values, account);
  const store = openExistingStore(values, "payer");
  try {
    const channel = storedChannelOn(store, sessionId, chainId, escrow);
    const closing = closingOf(store, channel);
    const settled = await finalizeClose({ wallet: wallet!, publicClient, escrow, ref: channel.ref, recorded: closing.state });
    await store.updateChannel(channel.sessionId, { status: "settled" });
    out.lines.push(`Finalised: ${formatAmountWithBase(settled.paidToProvider)} to the provider, ${formatAmountWithBase(settled.refundedToFunder)} refunded (gas ${settled.gasUsed}).`);
    Object.assign(out.result, { sessionId: channel.sessionId, paidToProvider: settled.paidToProvider.toString(), refundedToFunder: settled.refundedToFunder.toString(), gasUsed: Number(settled.gasUsed) });
  } finally {
    await store.close();
  }
}

async function runWatchtower(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const alertSettings = alertSettingsFrom(values);
  const topUp = topUpPolicyFrom(values);
  const { publicClient, wallet, escrow, chainId, fromBlock } = await chainClients(values, account);
  const reading = readingOf(values, chainId);
  // A provider fleet's PostgreSQL (decision 0036): every channel loaded, what other processes wrote read again
  // before each round (only the channels the database notified), no fencing epoch. Alert state beside a file only.
  const postgres = isPostgresStore(values);
  const store = postgres ? await openAnyStore(values, "provider", { write: true }) : openStore(values, "provider");
  if (postgres) await (store as import("../store/pg-store").PgStore).watch().catch(() => undefined); // else: full reads each round
  const alertState = postgres ? undefined : alertStateFor(storePath(values, "provider"));
  const logger = loggerFrom(values, "watchtower");
  const metrics = await startMetrics(values);
  const tower = new (await nodeModules.watchtower()).Watchtower({
    logger,
    metrics: metrics?.metrics,
    publicClient,
    wallet: wallet!,
    escrow,
    store,
    fromBlock: uint(values, "from-block", "first block to watch", fromBlock),
    ...reading,
    name: `watchtower:${account.address.toLowerCase()}`,
    finalize: true,
    ...(postgres ? { beforeRound: () => (store as import("../store/pg-store").PgStore).refresh() } : {}),
    ...(alertSettings ? { alerts: await watchtowerAlerts(alertSettings, values, publicClient, logger.child({ component: "alerts" }), metrics?.metrics, alertState) } : {}),
    ...(alertState ? { alertState } : {}),
    ...(topUp ? { topUp } : {}),
    onTopUp: (sessionId, amount, hash) => out.lines.push(`Topped up ${sessionId} by ${amount} in ${hash}.`),
    onAnswer: (a) => out.lines.push(`Answered the stale close of ${a.sessionId} (seq ${a.staleSeq}) with seq ${a.answeredSeq}${a.inWindow ? " inside the window" : ""}.`),
    onFinalized: (sessionId, hash) => out.lines.push(`Finalised ${sessionId} in ${hash}.`),
  });
  const pruneDir = values["prune-archive-dir"] as string | undefined;
  const pruneEvery = uint(values, "prune-every", "seconds between prune passes", 3600n);
  if (pruneDir !== undefined && (pruneDir === "" || pruneEvery === 0n)) throw new UsageError("--prune-archive-dir needs a directory and --prune-every at least 1 second.");
  let pruner: { stop: () => Promise<void> } | undefined;
  try {
    if (pruneDir !== undefined) {
      const { address: disputeManager } = await deployedContract(values, publicClient, "dispute-manager", "IOI_DISPUTE_MANAGER", "DisputeManager");
      const archiveDir = path.resolve(pruneDir);
      mkdirSync(archiveDir, { recursive: true });
      const pruned: unknown[] = [];
      out.result.pruned = pruned;
      const settled = new Promise<void>((resolve) => {
        pruner = schedulePrune({
          store,
          publicClient,
          disputeManager,
          escrow,
          chainId,
          archiveDir,
          everyMs: Number(pruneEvery) * 1000,
          maxBlockRange: reading.batchBlocks,
          retry: reading.retry,
          afterPrune: () => (store instanceof SqliteStore ? store.reclaim() : Promise.resolve()),
          onOutcomes: (outcomes) => {
            for (const o of outcomes.filter((x) => x.action === "pruned")) {
              pruned.push(o);
              out.lines.push(`Pruned ${o.sessionId}: ${o.receipts} receipt(s) archived to ${o.archive}.`);
              logger.info({ event: "channel.pruned", sessionId: o.sessionId, archive: o.archive, receipts: o.receipts }, "settled channel archived and pruned");
            }
            resolve();
          },
          onError: (error) => {
            logger.warn({ event: "prune.failed", error: (error as Error).message.split("\n")[0] }, "prune pass failed; retried on schedule");
            resolve();
          },
        });
      });
      if (values.once) await settled;
    }
    if (values.once) {
      await tower.runOnce();
    } else {
      tower.start();
      console.log(JSON.stringify({ event: "watchtower.ready", escrow, confirmations: reading.confirmations.toString(), ...(metrics ? { metrics: `http://${metrics.address}/metrics` } : {}) }));
      await new Promise<void>((resolve) => {
        process.once("SIGINT", resolve);
        process.once("SIGTERM", resolve);
      });
      await tower.stop();
    }
    out.result.answers = tower.answers.map((a) => ({ sessionId: a.sessionId, staleSeq: a.staleSeq.toString(), answeredSeq: a.answeredSeq.toString(), inWindow: a.inWindow }));
  } finally {
    await pruner?.stop();
    await metrics?.close();
    await store.close();
  }
}

/** Results printed per store read: `ioi results` holds one page, never a whole session. */
const RESULTS_PAGE = 1000;

/**
 * `ioi results` (issue 28 item 8): every stored result of a payer's channel with the ticket that paid for it and
 * the provider's signed receipt, one JSON line each, read page by page. Offline: nothing is sent.
 */
async function runResults(values: Record<string, unknown>, out: Out): Promise<void> {
  const sessionId = sessionOf(values);
  let fromSeq = uint(values, "from-seq", "the first seq to print", 1n);
  const store = openExistingStore(values, "payer");
  try {
    const channel = channelOf(store, sessionId);
    if (channel.role !== "payer") throw new UsageError(`Session ${sessionId} is stored as a ${channel.role} channel; results are kept by the payer's store.`);
    let printed = 0;
    let unverified = 0;
    for (;;) {
      const page = store.results(sessionId, { fromSeq, limit: RESULTS_PAGE });
      if (page.length === 0) break;
      const steps = new Map(store.steps(sessionId, { fromSeq: page[0]!.seq, limit: Number(page[page.length - 1]!.seq - page[0]!.seq) + 1 }).map((step) => [step.seq, step]));
      for (const stored of page) {
        const step = steps.get(stored.seq);
        const request = JSON.parse(stored.request) as JsonObject;
        const output = JSON.parse(stored.output) as JsonObject;
        const receipt = step?.receipt;
        const verified =
          receipt !== undefined &&
          receipt.receipt.outputHash === keccak256(stringToBytes(stored.output)) &&
          receipt.receipt.offloadPacketHash === keccak256(stringToBytes(stored.request));
        if (!verified) unverified += 1;
        const failed = receipt !== undefined && Object.keys(output).length === 1 && "error" in output && receipt.receipt.metering.amount === 0n;
        console.log(JSON.stringify({
          seq: stored.seq.toString(),
          id: request.id ?? null,
          method: request.method,
          ...(failed ? { error: output.error } : { result: output }),
          charged: receipt ? receipt.receipt.metering.amount.toString() : null,
          verified,
          ...(step ? { ticket: signedPaymentTicketToJson(step.ticket) } : {}),
          ...(receipt ? { receipt: signedSessionReceiptToJson(receipt) } : {}),
        }));
        printed += 1;
      }
      fromSeq = page[page.length - 1]!.seq + 1n;
    }
    const paid = store.latestTicket(sessionId)?.ticket.seq ?? 0n;
    const answered = store.receiptCount(sessionId);
    process.stderr.write(`${printed} stored result(s) of session ${sessionId}; ${answered} receipted call(s), newest ticket seq ${paid}${unverified ? `; ${unverified} do not match their receipt` : ""}.\n`);
    if (unverified > 0) out.exitCode = 3;
    out.json = false; // the JSON lines are the output
  } finally {
    await store.close();
  }
}

async function runExport(values: Record<string, unknown>, out: Out): Promise<void> {
  const store = await openAnyStore(values, "provider");
  try {
    const sessionId = sessionOf(values);
    channelOf(store, sessionId);
    const { publicClient, escrow, chainId } = await chainClients(values);
    const channel = storedChannelOn(store, sessionId, chainId, escrow);
    const reading = readingOf(values, chainId);
    const lines = await exportLines({ store, channel, publicClient, escrow, maxBlockRange: reading.batchBlocks, retry: reading.retry });
    for (const line of lines) console.log(line);
    out.json = false; // the JSON lines are the output
  } finally {
    await store.close();
  }
}

/*//////////////////////////////////////////////////////////////
                                GIGS
//////////////////////////////////////////////////////////////*/

export const GIG_OPTIONS = { "gig-escrow": { type: "string" } } as const satisfies CommandOptions;
const GIG_ID_OPTION = { gig: { type: "string" } } as const satisfies CommandOptions;

/** `ioi gig <subcommand>`: outcome-based work escrowed in the GigEscrow. */
export const GIG_COMMANDS: Record<string, Command> = {
  fund: {
    summary: "escrow a bounty for a gig bound to an Intent Contract Schema; prints the gig id (the acting key is the client)",
    usage:
      "ioi gig fund --amount WEI (--ics HASH | --ics-file PATH) [--provider ADDR] [--asset ADDR] [--deadline SECONDS] [--dispute-window SECONDS] [--client ADDR]",
    notes: ["  --client ADDR    a sponsored gig: ADDR is the client who alone acts on it; the acting key pays and receives every refund"],
    options: {
      client: { type: "string" },
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
};

/** Largest --terms-file read: a terms document is a small JSON (or YAML) document. */
const MAX_TERMS_FILE_BYTES = 64 * 1024;

/**
 * The terms document of --terms-file (validated against schemas/terms.schema.json), or the flat v1 price
 * list of --price; exactly one of the two.
 */
function termsOption(values: Record<string, unknown>, priceWhat: string): PricingTerms {
  const file = values["terms-file"] as string | undefined;
  if (file === undefined) return { version: "1", unit: "invocation", pricePerInvocation: weiAmount(values, "price", priceWhat) };
  if (values.price !== undefined) throw new UsageError("Give either --price WEI (a flat price per invocation) or --terms-file FILE (a terms document), not both.");
  // A regular file of bounded size (issue 28 item 9): a FIFO or a device would hang the command.
  const bytes = readOptionFile("terms-file", file, MAX_TERMS_FILE_BYTES);
  return pricingTermsFromJson(parseDocument(bytes, { maxBytes: MAX_TERMS_FILE_BYTES, what: `The terms document in ${file}` }), `terms in ${file}`);
}

/** Largest --ics-file read: an Intent Contract Schema is a small JSON document. */
const MAX_ICS_FILE_BYTES = 1 << 20;

/**
 * The ICS hash from --ics, or the hash of the Intent Contract Schema in --ics-file (JSON or YAML), which must be
 * a valid ICS (src/arbitration/ics.ts): a gig bound to a document arbitrators cannot read could never be judged.
 */
function icsHashOf(values: Record<string, unknown>): { icsHash: Hex; icsFile?: string; ics?: Ics } {
  const hasHash = values.ics !== undefined;
  const file = values["ics-file"] as string | undefined;
  if (hasHash === (file !== undefined)) {
    throw new UsageError("Give exactly one of --ics HASH and --ics-file PATH: the Intent Contract Schema the gig is bound to.");
  }
  if (hasHash) return { icsHash: hashOption(values, "ics", "the hash of the Intent Contract Schema") };
  const bytes = readOptionFile("ics-file", file!, MAX_ICS_FILE_BYTES);
  const ics = icsFromJson(parseDocument(bytes, { maxBytes: MAX_ICS_FILE_BYTES, what: `The Intent Contract Schema in ${file}` }), `ICS in ${file}`);
  return { icsHash: icsHash(ics), icsFile: file!, ics };
}

/** A gig must fit its ICS: the same asset, no more than its max_price, due no later than its deadline. */
function checkGigAgainstIcs(ics: Ics, file: string, gig: { asset: Address; amount: bigint; deadline: bigint }): void {
  if (!isAddressEqual(ics.asset, gig.asset)) {
    throw new UsageError(`The ICS in ${file} is priced in ${assetName(ics.asset)}, but the gig escrows ${assetName(gig.asset)}; pass --asset ${BigInt(ics.asset) === 0n ? "eth" : ics.asset}.`);
  }
  if (gig.amount > ics.maxPrice) {
    throw new UsageError(`--amount ${gig.amount} exceeds the ICS's max_price of ${ics.maxPrice} (${file}).`);
  }
  if (gig.deadline > ics.deadline) {
    throw new UsageError(`The gig would be due at ${formatDate(gig.deadline)}, after the ICS's deadline ${formatDate(ics.deadline)} (${file}); shorten --deadline.`);
  }
}

async function gigClients(values: Record<string, unknown>, account?: LocalAccount) {
  givenAddress(values, "gig-escrow", "IOI_GIG_ESCROW"); // a malformed address is refused before any RPC call
  const { publicClient, wallet, chainId } = await rpcClients(values, account);
  const gigEscrow = await deployedAddress(values, publicClient, "gig-escrow", "IOI_GIG_ESCROW", "GigEscrow");
  return { publicClient, wallet, gigEscrow, chainId };
}

const assetName = (asset: Address): string => (BigInt(asset) === 0n ? "ETH" : asset);

async function runGigFund(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const amount = uint(values, "amount", "the bounty in wei (or the token's smallest unit)");
  const { icsHash, icsFile, ics } = icsHashOf(values);
  const provider = values.provider === undefined ? zeroAddress : addressOption(values, "provider", "the one provider who may accept");
  const client = values.client === undefined ? undefined : addressOption(values, "client", "the gig's client, who alone acts on it");
  if (client !== undefined && BigInt(client) === 0n) throw new UsageError("--client must be a real address, not the zero address.");
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
  if (ics) checkGigAgainstIcs(ics, icsFile!, { asset, amount, deadline: now + deadlineIn });
  const funded = await fundGig({ wallet: wallet!, publicClient, gigEscrow, provider, asset, amount, icsHash, deadline: now + deadlineIn, disputeWindow, ...(client ? { client } : {}) });
  const who = BigInt(provider) === 0n ? "any active provider" : provider;
  if (client) out.lines.push(`Sponsored: ${client} is the gig's client; refunds come back to ${account.address}.`);
  out.lines.push(
    `Funded gig ${funded.gigId}: ${formatAmountWithBase(funded.amount, await assetUnitOf(publicClient, asset))} for ${who}, due by ${formatMoment(now + deadlineIn, now)}, dispute window ${formatDuration(disputeWindow)} (gas ${funded.gasUsed}${funded.approval ? `, approval gas ${funded.approval.gasUsed}` : ""}).`,
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
    client: client ?? account.address,
    funder: account.address,
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
  const unit = await assetUnitOf(publicClient, (await readGig({ publicClient, gigEscrow, gigId })).asset);
  out.lines.push(`Gig ${gigId} ${settled.status}: ${formatAmountWithBase(settled.toProvider, unit)} to the provider, ${formatAmountWithBase(settled.toClient, unit)} to the client (gas ${settled.gasUsed}).`);
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
  out.lines.push(`Delivered gig ${gigId}; the client may dispute until ${formatMoment(delivered.windowEndsAt, (await publicClient.getBlock()).timestamp)} (gas ${delivered.gasUsed}).`);
  Object.assign(out.result, { gigId: gigId.toString(), deliverableHash, receiptRoot: receiptRoot ?? `0x${"0".repeat(64)}`, windowEndsAt: delivered.windowEndsAt.toString(), gasUsed: Number(delivered.gasUsed) });
}

async function runGigShow(values: Record<string, unknown>, out: Out): Promise<void> {
  const gigId = gigIdOf(values);
  const { publicClient, gigEscrow } = await gigClients(values);
  const gig = await readGig({ publicClient, gigEscrow, gigId });
  if (gig.status === "None") throw new UsageError(`Gig ${gigId} does not exist in the GigEscrow at ${gigEscrow}.`);
  const now = (await publicClient.getBlock()).timestamp;
  out.lines.push(`gig ${gigId}: ${gig.status}, ${formatAmountWithBase(gig.amount, await assetUnitOf(publicClient, gig.asset))}`);
  out.lines.push(`  client ${gig.client}, provider ${BigInt(gig.provider) === 0n ? "(any active provider)" : gig.provider}`);
  out.lines.push(`  ICS ${gig.icsHash}, deadline ${formatMoment(gig.deadline, now)}, dispute window ${formatDuration(gig.disputeWindow)}`);
  if (gig.windowEndsAt !== 0n) out.lines.push(`  delivered ${gig.deliverableHash} (receipts ${gig.receiptRoot}); window ends ${formatMoment(gig.windowEndsAt, now)}`);
  if (gig.frozenAt !== 0n) out.lines.push(`  frozen by a dispute at ${formatDate(gig.frozenAt)}`);
  Object.assign(out.result, gigViewToJson(gig));
}

export const GIG_HELP = ["  --gig-escrow ADDR  GigEscrow (default $IOI_GIG_ESCROW, else the deployment record)"];
