/**
 * `ioi provider`: a provider node on SQLite, or one process of a fleet over PostgreSQL (decision 0036).
 */
import path from "node:path";
import type { LocalAccount } from "viem";

import { BaseError } from "../core/errors";
import { secp256k1Backend } from "../core/secp256k1";
import { echoHandler } from "../node/echo-worker";
import { advertisedEndpoints, listenHost } from "../node/endpoints";
import type { McpWorker } from "../node/mcp-worker";
import type { McpHandler } from "../node/provider-node";
import { hasDocumentBody, modelAllowed, termsHashOf, type PricingTerms } from "../core/terms";
import { loadAccount, openStore, storePath, uint, UsageError, type Out } from "./common";
import { readingOf } from "./chain";
import { loggerFrom, startMetrics } from "../node/observability";
import { alertSettingsFrom, alertStateFor, watchtowerAlerts } from "./alert-options";
import { asUsage, chainClients, isPostgresUrl, termsOption } from "./channel-plumbing";
import { nodeModules } from "./channel-plumbing";

export async function runProvider(values: Record<string, unknown>, out: Out): Promise<void> {
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
  if (isPostgresUrl(values.db)) return runProviderFleet(values, out, { account, pricing, modelSnapshotId, host, port, argv, workerEnv, workerTimeout, publicClient, wallet: wallet!, escrow, domain, fromBlock, reading, log, alertSettings, stream, workerUrl, x402Port });
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
export async function runProviderFleet(
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
    x402Port: number | undefined;
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
  // x402 clients (decision 0034) on any process of the fleet: a payment moves its channel here only when it proves
  // it is the payer's and not older than what the fleet stored (decision 0036, amended).
  const x402 =
    c.x402Port === undefined
      ? undefined
      : await (await import("../node/x402-mcp-endpoint")).X402McpEndpoint.start({ node, handler, pricing: c.pricing, chainId: c.domain.chainId, escrow: c.escrow, provider: c.account.address, host: c.host, port: c.x402Port, log: c.log });
  console.log(JSON.stringify({ event: "provider.ready", host: c.host, port: node.port, provider: c.account.address, escrow: c.escrow, termsHash: termsHashOf(c.pricing), worker: worker ? { tools: worker.info?.tools.map((t) => t.name) ?? [], env: Object.keys(c.workerEnv).sort() } : "echo", crypto: secp256k1Backend().implementation, store: "postgres", owner: store.owner, advertised: endpoints, endpoints: await member.endpoints(), ...(metrics ? { metrics: `http://${metrics.address}/metrics` } : {}), ...(x402 ? { x402Mcp: x402.url } : {}) }));
  logger.info({ event: "provider.ready", host: c.host, port: node.port, provider: c.account.address, escrow: c.escrow, owner: store.owner }, "provider node listening (fleet)");
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await member.stop();
  await metrics?.close();
  await x402?.stop();
  await node.stop();
  await worker?.stop();
  await store.close();
  out.lines.push("Provider node stopped.");
}

/**
 * Milestone streaming (issue 32): with v4 terms the node serves tranches, each proof reporting the bound suite's
 * outcomes on `--repository-dir` as it stands when the tranche ends (what the provider's agent left there).
 */
export async function streamWorkOf(values: Record<string, unknown>, pricing: PricingTerms) {
  const suiteDir = values["suite-dir"] as string | undefined;
  const repositoryDir = values["repository-dir"] as string | undefined;
  if (pricing.version !== "4") {
    if (suiteDir !== undefined || repositoryDir !== undefined) throw new UsageError("--suite-dir and --repository-dir go with version 4 terms (milestone streaming): give them with --terms-file of a v4 document.");
    return undefined;
  }
  if (suiteDir === undefined || repositoryDir === undefined) throw new UsageError("Version 4 terms stream milestones: give --suite-dir (the bound test suite) and --repository-dir (the repository each tranche's proof reports on).");
  const { readBundleDirectory } = await import("./input-file");
  const { bundleHash } = await import("../../arbitration/documents/bundle");
  const { suiteStreamWork } = await import("../node/stream-service");
  const suite = readBundleDirectory(suiteDir, "suite-dir");
  if (bundleHash(suite) !== pricing.stream.suite.hash) throw new UsageError(`--suite-dir hashes to ${bundleHash(suite)}; the terms bind the suite ${pricing.stream.suite.hash}.`);
  readBundleDirectory(repositoryDir, "repository-dir"); // readable now; read again at each tranche
  const read = () => readBundleDirectory(repositoryDir, "repository-dir");
  // After a restart a sample is answered from the directory if it still is the repository the proof is anchored to.
  return { work: suiteStreamWork({ suite, read }), repositoryOf: read };
}
