/**
 * Prometheus metrics of a provider node and its watchtower (issue 16), with prom-client, served as text on
 * `GET /metrics` by `ioi provider --metrics HOST:PORT` and `ioi watchtower --metrics HOST:PORT`.
 *
 * | metric | type | meaning |
 * |---|---|---|
 * | `ioi_open_sessions` | gauge | bound sessions the node still serves (phase `open`) |
 * | `ioi_tickets_total` | counter | tickets accepted and answered with a receipt (`rate()` gives tickets/s) |
 * | `ioi_tickets_refused_total{error}` | counter | tickets refused, by error name |
 * | `ioi_ticket_verify_seconds` | histogram | one ticket in `ProviderSession.invoke`: signature, seq and amount checks, the work, the receipt's signature |
 * | `ioi_store_seconds` | histogram | one ticket + receipt made durable by the store (group commit included) |
 * | `ioi_unpaid_exposure_wei{session}` | gauge | what the newest ticket promises the provider and the chain has not paid out yet |
 * | `ioi_watchtower_lag_blocks` | gauge | chain head minus the last block the watchtower fully processed |
 * | `ioi_chain_rpc_errors_total{source}` | counter | failed chain reads or writes seen by the node or the watchtower |
 * | `ioi_alerts_active{kind}` | gauge | alerts holding now, by kind (`window_closing`, `bond_low`, `unclaimed_payout`, `unclaimed_fee`, `chain_stalled`, `runtime_pin`) |
 * | `ioi_alerts_raised_total{kind}` | counter | alerts raised (each condition once until it clears), by kind |
 * | `ioi_alert_webhook_failures_total` | counter | alert webhook POSTs that failed or timed out |
 * | `ioi_top_ups_total` | counter | deposits the top-up policy made |
 * | `ioi_top_up_amount_total` | counter | what they deposited, in the asset's base units (a double) |
 *
 * Labels carry only session ids, error names and sources, never secrets. Exposure is in wei as a JS
 * number (Prometheus samples are doubles); it is exact below 2^53 wei and approximate beyond.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { Hex, PublicClient } from "viem";

import { BaseError } from "../core/errors";

export class MetricsOptionError extends BaseError {
  override name = "MetricsOptionError" as const;
}

/** Latency buckets in seconds: 100 µs … 2.5 s. */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export class NodeMetrics {
  readonly registry = new Registry();
  readonly openSessions: Gauge;
  readonly tickets: Counter;
  readonly ticketsRefused: Counter<"error">;
  readonly verifySeconds: Histogram;
  readonly storeSeconds: Histogram;
  readonly unpaidExposure: Gauge<"session">;
  readonly watchtowerLag: Gauge;
  readonly rpcErrors: Counter<"source">;
  readonly alertsActive: Gauge<"kind">;
  readonly alertsRaised: Counter<"kind">;
  readonly alertWebhookFailures: Counter;
  readonly topUps: Counter;
  readonly topUpAmount: Counter;
  readonly #open = new Set<Hex>();
  #lag: (() => Promise<number | undefined>) | undefined;

  constructor(parameters: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.openSessions = new Gauge({ name: "ioi_open_sessions", help: "Bound sessions the provider node still serves (phase open).", registers });
    this.tickets = new Counter({ name: "ioi_tickets_total", help: "Tickets accepted and answered with a receipt; rate() gives tickets per second.", registers });
    this.ticketsRefused = new Counter({ name: "ioi_tickets_refused_total", help: "Tickets refused, by error name.", labelNames: ["error"], registers });
    this.verifySeconds = new Histogram({
      name: "ioi_ticket_verify_seconds",
      help: "One ticket checked (signature, seq, amount), its work run and its receipt signed, in seconds.",
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.storeSeconds = new Histogram({ name: "ioi_store_seconds", help: "One ticket and its receipt made durable by the store, in seconds.", buckets: LATENCY_BUCKETS, registers });
    this.unpaidExposure = new Gauge({
      name: "ioi_unpaid_exposure_wei",
      help: "Wei the newest ticket promises the provider that the chain has not paid out yet, per session.",
      labelNames: ["session"],
      registers,
    });
    const self = this;
    this.watchtowerLag = new Gauge({
      name: "ioi_watchtower_lag_blocks",
      help: "Chain head minus the last block the watchtower fully processed.",
      registers,
      async collect() {
        if (!self.#lag) return;
        const lag = await self.#lag();
        if (lag !== undefined) this.set(lag);
      },
    });
    this.rpcErrors = new Counter({ name: "ioi_chain_rpc_errors_total", help: "Failed chain reads or writes, by source.", labelNames: ["source"], registers });
    this.alertsActive = new Gauge({ name: "ioi_alerts_active", help: "Alerts holding now, by kind.", labelNames: ["kind"], registers });
    this.alertsRaised = new Counter({ name: "ioi_alerts_raised_total", help: "Alerts raised (once per condition until it clears), by kind.", labelNames: ["kind"], registers });
    this.alertWebhookFailures = new Counter({ name: "ioi_alert_webhook_failures_total", help: "Alert webhook POSTs that failed or timed out.", registers });
    this.topUps = new Counter({ name: "ioi_top_ups_total", help: "Channel deposits made by the top-up policy.", registers });
    this.topUpAmount = new Counter({ name: "ioi_top_up_amount_total", help: "Base units of the channels' assets the top-up policy deposited.", registers });
    if (parameters.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: "ioi_" });
  }

  /** A session is served (idempotent). */
  sessionOpen(sessionId: Hex): void {
    this.#open.add(sessionId);
    this.openSessions.set(this.#open.size);
  }

  /** A session is no longer served: closed, closing or settled (idempotent). */
  sessionEnded(sessionId: Hex, settled: boolean): void {
    this.#open.delete(sessionId);
    this.openSessions.set(this.#open.size);
    if (settled) this.unpaidExposure.set({ session: sessionId }, 0);
  }

  ticketAccepted(sessionId: Hex, cumulativeAmount: bigint): void {
    this.tickets.inc();
    this.unpaidExposure.set({ session: sessionId }, Number(cumulativeAmount));
  }

  ticketRefused(errorName: string): void {
    this.ticketsRefused.inc({ error: errorName });
  }

  rpcError(source: string): void {
    this.rpcErrors.inc({ source });
  }

  /** Reports the watchtower's lag on every scrape: the head block minus `cursor()`. */
  trackWatchtowerLag(publicClient: PublicClient, cursor: () => bigint): void {
    this.#lag = async () => {
      try {
        const head = await publicClient.getBlockNumber();
        const lag = head - cursor();
        return Number(lag < 0n ? 0n : lag);
      } catch {
        this.rpcError("metrics");
        return undefined;
      }
    };
  }

  /** The exposition text, as `GET /metrics` serves it. */
  async text(): Promise<string> {
    return this.registry.metrics();
  }
}

/** Parses `--metrics HOST:PORT`; only loopback unless the operator names another address explicitly. */
export function parseListenAddress(value: string, option = "--metrics"): { host: string; port: number } {
  const match = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[2]) : NaN;
  if (!match || port > 65535) throw new MetricsOptionError(`${option} must be HOST:PORT such as 127.0.0.1:9464; received "${value}".`);
  const host = match[1]!.startsWith("[") ? match[1]!.slice(1, -1) : match[1]!;
  return { host, port };
}

export type MetricsServer = { server: Server; host: string; port: number; close: () => Promise<void> };

/** Serves `GET /metrics` (and nothing else: 404) on host:port; resolves once listening. */
export async function serveMetrics(metrics: NodeMetrics, host: string, port: number): Promise<MetricsServer> {
  const server = createServer((request, response) => {
    if (request.method !== "GET" || (request.url ?? "").split("?")[0] !== "/metrics") {
      response.writeHead(404, { "content-type": "text/plain" }).end("Only GET /metrics is served here.\n");
      return;
    }
    metrics.text().then(
      (body) => response.writeHead(200, { "content-type": metrics.registry.contentType }).end(body),
      (error: unknown) => response.writeHead(500, { "content-type": "text/plain" }).end(`metrics failed: ${(error as Error).message.split("\n")[0]}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    server,
    host,
    port: address.port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
