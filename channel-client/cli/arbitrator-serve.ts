/**
 * `ioi arbitrator serve` (the arbitrator daemon, `channel-client/node/arbitrator-daemon.ts`), `ioi evidence serve` (a
 * content-addressed, loopback-only evidence host) and `ioi evidence publish` (a party records where its
 * evidence is: `DisputeManager.publishEvidence`). Decision 0031.
 */
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";

import type { Hex, LocalAccount, PublicClient } from "viem";

import type { Deployment } from "../../arbitration/runner/chain";
import type { Wallet } from "../chain/write";

import { disputeManagerAbi } from "../abi/DisputeManager";
import { dataUri, INLINE_EVIDENCE_LIMIT, serveEvidence } from "../../arbitration/documents/evidence";
import { packageHash, packageToJson, parsePackage } from "../../arbitration/documents/package";
import { checkedWrite } from "../chain/write";
import { canon } from "../core/canonical";
import { AlertState, AlertStateError } from "../node/alert-state";
import { AlertEmitter, AlertOptionError, parseWebhookUrl, type Alert } from "../node/alerts";
import { ArbitratorDaemon } from "../node/arbitrator-daemon";
import { LOG_OPTIONS, loggerFrom, METRICS_OPTION, startMetrics } from "../node/observability";
import { readingOf } from "./chain";
import { boundedUint, loadAccount, need, uint, UsageError, type Command, type Out } from "./common";

type Values = Record<string, unknown>;

/** How `./arbitration` reaches the DisputeManager and its wiring (given to {@link arbitratorServeCommands}, so this module does not import it back). */
export type DisputeClientsOf = (values: Values, account: LocalAccount) => Promise<{ publicClient: PublicClient; wallet: Wallet | undefined; chainId: number; deployment: Deployment }>;

/** Runs until SIGINT/SIGTERM, or `--max-runtime-ms` when given (tests: a daemon that stops by itself). */
function untilStopped(values: Values): { signal: AbortSignal; done: () => void } {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const max = values["max-runtime-ms"] === undefined ? undefined : Number(uint(values, "max-runtime-ms", "milliseconds before the daemon stops by itself"));
  const timer = max === undefined ? undefined : setTimeout(stop, max);
  return {
    signal: controller.signal,
    done: () => {
      if (timer) clearTimeout(timer);
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
    },
  };
}

/**
 * The keys one `ioi arbitrator serve` process serves: `--key-env A,B,C` (several environment variables) or
 * `--account X,Y` (several keystores, one `--password-file`), else the one key `loadAccount` finds. Each key is an
 * admitted arbitrator of its own; the process runs one daemon per key, each with its own state file.
 */
export function loadArbitratorAccounts(values: Values): LocalAccount[] {
  const list = (name: "account" | "key-env") => (values[name] as string | undefined)?.split(",").map((x) => x.trim());
  const accounts = list("account");
  const envs = list("key-env");
  const names = accounts ?? envs;
  if (!names || names.length === 1) return [loadAccount(values)];
  if (names.some((n) => n === "")) throw new UsageError(`--${accounts ? "account" : "key-env"} lists an empty name; give names separated by commas, such as A,B,C.`);
  const loaded = names.map((n) => loadAccount({ ...values, ...(accounts ? { account: n } : { "key-env": n }) }));
  const seen = new Set<string>();
  for (const a of loaded) {
    if (seen.has(a.address.toLowerCase())) throw new UsageError(`The key ${a.address} is listed twice; one daemon serves each key once.`);
    seen.add(a.address.toLowerCase());
  }
  return loaded;
}

/** `--alerts` / `--alert-webhook URL [--alert-webhook-timeout MS]`, checked before any RPC call; undefined without them. */
function alertsWanted(values: Values): { webhook?: URL; webhookTimeoutMs: number } | undefined {
  const text = values["alert-webhook"] as string | undefined;
  if (values.alerts !== true && text === undefined) {
    if (values["alert-webhook-timeout"] !== undefined) throw new UsageError("--alert-webhook-timeout tunes the webhook: add --alert-webhook URL.");
    return undefined;
  }
  let webhook: URL | undefined;
  try {
    webhook = text === undefined ? undefined : parseWebhookUrl(text);
  } catch (error) {
    if (error instanceof AlertOptionError) throw new UsageError(error.shortMessage, { cause: error });
    throw error;
  }
  return { ...(webhook ? { webhook } : {}), webhookTimeoutMs: Number(boundedUint(values, "alert-webhook-timeout", "milliseconds a webhook POST may take", 1n, 60_000n, 5_000n)) };
}

function alertStateAt(file: string): AlertState {
  try {
    return AlertState.open(file);
  } catch (error) {
    if (error instanceof AlertStateError) throw new UsageError(error.shortMessage, { cause: error });
    throw error;
  }
}

async function runArbitratorServe(disputeClientsFor: DisputeClientsOf, values: Values, out: Out): Promise<void> {
  const retryMs = Number(uint(values, "retry-ms", "milliseconds between judging attempts of a round", 15_000n));
  const fetchTimeoutMs = Number(uint(values, "fetch-timeout-ms", "milliseconds an evidence fetch may take", 10_000n));
  const graceMs = Number(uint(values, "grace-ms", "milliseconds to wait for the rest of the panel once a supermajority is posted", 10_000n));
  const accounts = loadArbitratorAccounts(values);
  // One key: --state FILE (or --state-dir DIR). Several: --state-dir DIR, one file per key inside it.
  if (values.state !== undefined && values["state-dir"] !== undefined) throw new UsageError("Pass either --state FILE or --state-dir DIR, not both.");
  if (accounts.length > 1 && values.state !== undefined) throw new UsageError(`--state names one file, and ${accounts.length} keys are served; give --state-dir DIR (one state file per key inside it).`);
  const stateDir = values["state-dir"] === undefined ? undefined : path.resolve(values["state-dir"] as string);
  const stateFiles = accounts.map((a) =>
    stateDir ? path.join(stateDir, `arbitrator-${a.address.toLowerCase()}.json`) : path.resolve(need(values, "state", "the daemon's state file (JSON, created if missing), or --state-dir DIR")),
  );
  // Alerts (issue 29 item 4): each key's standing warnings, as one set for the process's emitter (log line,
  // ioi_alerts_* metrics with --metrics, a POST with --alert-webhook). Kept beside the state: a restart raises nothing anew.
  const alerting = alertsWanted(values);
  const metrics = await startMetrics(values);
  const logger = loggerFrom(values, "arbitrator");
  const emitter =
    alerting || metrics
      ? new AlertEmitter({
          logger,
          ...(metrics ? { metrics: metrics.metrics } : {}),
          ...(alerting?.webhook ? { webhook: alerting.webhook, webhookTimeoutMs: alerting.webhookTimeoutMs } : {}),
          state: alertStateAt(stateDir ? path.join(stateDir, "alerts.json") : `${stateFiles[0]}.alerts.json`),
        })
      : undefined;
  const standing = new Map<string, Alert[]>();
  const onWarnings = emitter
    ? async (arbitrator: string, alerts: Alert[]) => {
        standing.set(arbitrator, alerts);
        await emitter.update([...standing.values()].flat());
      }
    : undefined;
  const daemons: ArbitratorDaemon[] = [];
  let chainIdOf = 0;
  let deploymentOf: Deployment | undefined;
  for (const [i, account] of accounts.entries()) {
    const { publicClient, wallet, deployment, chainId } = await disputeClientsFor(values, account);
    chainIdOf = chainId;
    deploymentOf = deployment;
    const reading = readingOf(values, chainId);
    mkdirSync(path.dirname(stateFiles[i]!), { recursive: true });
    daemons.push(
      new ArbitratorDaemon({
        publicClient,
        wallet: wallet!,
        deployment,
        stateFile: stateFiles[i]!,
        retryMs,
        fetchTimeoutMs,
        graceMs,
        confirmations: BigInt(reading.confirmations),
        maxBlockRange: BigInt(reading.batchBlocks),
        ...(onWarnings ? { onWarnings } : {}),
        // Fault injection for the restart test only: the process dies between storing and posting a signature.
        ...(process.env.IOI_FAULT_KILL_AFTER_SIGN === "1" ? { afterSignaturePersisted: () => process.kill(process.pid, "SIGKILL") } : {}),
      }),
    );
  }
  const pollMs = readingOf(values, chainIdOf).pollMs;
  const opened: ArbitratorDaemon[] = [];
  try {
    for (const daemon of daemons) {
      await daemon.open();
      opened.push(daemon);
    }
  } catch (error) {
    for (const daemon of daemons) daemon.close();
    throw new UsageError((error as Error).message.split("\n")[0]!, { cause: error });
  }
  try {
    if (values.once) {
      const actions = (await Promise.all(daemons.map((d) => d.tick()))).flat();
      out.lines.push(`One pass: ${actions.length} action(s): ${actions.map((a) => a.kind).join(", ") || "none"}.`);
    } else {
      const { signal, done } = untilStopped(values);
      const reading = readingOf(values, chainIdOf);
      console.error(
        JSON.stringify({
          event: "arbitrator.ready",
          arbitrator: daemons[0]!.me,
          arbitrators: daemons.map((d) => d.me),
          disputeManager: deploymentOf!.disputeManager,
          stateFile: stateFiles[0],
          stateFiles,
          confirmations: reading.confirmations.toString(),
          pollMs,
          ...(metrics ? { metrics: `http://${metrics.address}/metrics` } : {}),
        }),
      );
      try {
        await Promise.all(daemons.map((d) => d.run(signal, pollMs)));
      } finally {
        done();
      }
      const kept = daemons.reduce((n, d) => n + Object.keys(d.signedRecords()).length, 0);
      out.lines.push(`Stopped; ${kept} signature(s) kept in ${stateDir ?? stateFiles[0]}.`);
    }
  } finally {
    for (const daemon of daemons) daemon.close();
    await metrics?.close();
  }
  Object.assign(out.result, {
    arbitrator: daemons[0]!.me,
    arbitrators: daemons.map((d) => d.me),
    stateFile: stateFiles[0],
    stateFiles,
    signed: daemons.flatMap((d) => Object.keys(d.signedRecords())),
    rpcCalls: daemons.reduce((n, d) => n + d.rpcCalls, 0),
  });
}

async function runEvidenceServe(values: Values, out: Out): Promise<void> {
  const dir = path.resolve(need(values, "dir", "the folder of evidence files to serve"));
  const port = Number(uint(values, "port", "the loopback port (0: any free one)", 0n));
  if (port > 65_535) throw new UsageError(`--port must be at most 65535; received ${port}.`);
  let server;
  try {
    server = await serveEvidence({ dir, port });
  } catch (cause) {
    throw new UsageError(`Cannot serve ${dir} on 127.0.0.1:${port}: ${(cause as Error).message}`, { cause });
  }
  const { signal, done } = untilStopped(values);
  console.error(JSON.stringify({ event: "evidence.ready", url: server.url, dir }));
  await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve(), { once: true })));
  done();
  await server.close();
  out.lines.push(`Stopped serving ${dir}.`);
  Object.assign(out.result, { url: server.url, dir });
}

async function runEvidencePublish(disputeClientsFor: DisputeClientsOf, values: Values, out: Out): Promise<void> {
  const caseId = need(values, "case", "the case id (0x and 64 hex digits)") as Hex;
  if (!/^0x[0-9a-fA-F]{64}$/.test(caseId)) throw new UsageError(`--case must be 0x and 64 hex digits; received "${caseId}".`);
  let uri = values.uri as string | undefined;
  if (values.inline !== undefined) {
    const file = need(values, "inline", "the package file to publish inline");
    const pkg = parsePackage(readFileSync(file));
    const bytes = new TextEncoder().encode(canon(packageToJson(pkg)));
    if (bytes.length > INLINE_EVIDENCE_LIMIT) {
      throw new UsageError(`${file} is ${bytes.length} bytes in canonical form; inline evidence is for packages up to ${INLINE_EVIDENCE_LIMIT} bytes — serve it (ioi evidence serve) and publish its URI.`);
    }
    uri = dataUri(bytes);
    out.result.packageHash = packageHash(pkg);
  }
  if (!uri) throw new UsageError("Give --uri URI (http, https) or --inline PACKAGE_FILE.");
  if (!/^(https?:\/\/|data:)/.test(uri)) throw new UsageError(`--uri must be an http, https or data URI; received "${uri.slice(0, 60)}".`);
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClientsFor(values, account);
  const { hash, receipt } = await checkedWrite({ publicClient, wallet: wallet!, address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "publishEvidence", args: [caseId, uri], what: "DisputeManager.publishEvidence" });
  out.lines.push(`Published evidence for case ${caseId}: ${uri.length > 80 ? `${uri.slice(0, 77)}…` : uri} (gas ${receipt.gasUsed}).`);
  Object.assign(out.result, { caseId, uri, transactionHash: hash, gasUsed: Number(receipt.gasUsed) });
}

const RUNTIME_OPTION = { "max-runtime-ms": { type: "string" } } as const;

/** `ioi arbitrator serve` and the `ioi evidence` commands, reaching the chain through `clients`. */
export function arbitratorServeCommands(clients: DisputeClientsOf): { serve: Command; evidence: Record<string, Command> } {
  const serve: Command = {
    summary: "run the arbitrator daemon: draws, evidence by hash, replay, sign, post, submit, finalise, claim",
    usage: "ioi arbitrator serve (--state FILE | --state-dir DIR) [--key-env A,B,… | --account X,Y,…] [--poll-ms N] [--retry-ms N] [--fetch-timeout-ms N] [--grace-ms N] [--once] [--alerts] [--alert-webhook URL] [--metrics HOST:PORT] [--max-runtime-ms N]",
    notes: [
      "  --state FILE           its own state (JSON, replaced atomically): logs read, signatures made; keep it",
      "  --state-dir DIR        one state file per key, DIR/arbitrator-<address>.json (needed with several keys)",
      "  --key-env A,B,…        several admitted arbitrators' keys in one process (or --account X,Y,… with one",
      "                         --password-file): one daemon per key, each with its own state, run side by side",
      "  --poll-ms N            between passes (default: 250 on a devnet, 12000 elsewhere; --confirmations and",
      "                         --log-range as for every chain reader, decision 0019)",
      "  --retry-ms N           between judging attempts of a round whose evidence or run failed (default 15000)",
      "  --fetch-timeout-ms N   an evidence fetch slower than this fails: nothing is signed (default 10000)",
      "  --grace-ms N           once a supermajority is posted, wait this long for the rest of the panel (default 10000)",
      "  --once                 one pass, then exit",
      "  --alerts               its warnings (stake below the minimum: bond_low; runtime pin: runtime_pin) as alerts:",
      "                         a log line and, with --metrics HOST:PORT, ioi_alerts_active{kind} / ioi_alerts_raised_total",
      "  --alert-webhook URL    also POST each raise and clear as JSON (implies --alerts; --alert-webhook-timeout MS,",
      "                         default 5000; a failed POST is logged, never fatal). Alerts are kept beside the state:",
      "                         a restart raises nothing anew",
      "  --max-runtime-ms N     stop by itself after N ms (otherwise on SIGINT/SIGTERM)",
      "Follows the DisputeManager from its deployment block; for each panel that seats the acting key it fetches",
      "the package from the URIs the parties published (ioi evidence publish), keeps it only if it hashes to the",
      "case's packageHash, replays it, signs and posts the signature; stores the signature before posting, and",
      "never signs a second resolution for a case and round. Warns when its stake or runtime pin would keep it",
      "off panels.",
    ],
    options: { state: { type: "string" }, "state-dir": { type: "string" }, "retry-ms": { type: "string" }, "fetch-timeout-ms": { type: "string" }, "grace-ms": { type: "string" }, once: { type: "boolean" }, alerts: { type: "boolean" }, "alert-webhook": { type: "string" }, "alert-webhook-timeout": { type: "string" }, ...METRICS_OPTION, ...LOG_OPTIONS, ...RUNTIME_OPTION },
    run: (values, out) => runArbitratorServe(clients, values, out),
  };

  const evidence: Record<string, Command> = {
    serve: {
      summary: "serve evidence files by hash on loopback (GET /<0xhash>): any file of the folder, by its bytes' or its package's hash",
      usage: "ioi evidence serve --dir DIR [--port N] [--max-runtime-ms N]",
      notes: ["Files added later are found on the next request for a hash not yet indexed. Only 127.0.0.1 listens."],
      options: { dir: { type: "string" }, port: { type: "string" }, ...RUNTIME_OPTION },
      run: runEvidenceServe,
    },
    publish: {
      summary: "record on-chain where the case's evidence is (a party): an http(s) URI, or the package inline as a data URI",
      usage: "ioi evidence publish --case ID (--uri URI | --inline PACKAGE_FILE)",
      notes: [
        "  --uri URI              where the package is; a URI ending in / gets the package hash appended",
        `  --inline FILE          the package itself in calldata (data: URI), for packages up to ${INLINE_EVIDENCE_LIMIT} bytes`,
      ],
      options: { case: { type: "string" }, uri: { type: "string" }, inline: { type: "string" } },
      run: (values, out) => runEvidencePublish(clients, values, out),
    },
  };
  return { serve, evidence };
}
