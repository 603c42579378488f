/**
 * The command-line side of issue 16's logs and metrics: `--log-level`, `--log-file` and
 * `--metrics HOST:PORT`, shared by `ioi provider`, `ioi watchtower`, `ioi stream` and `ioi close`.
 */
import type { ParseArgsConfig } from "node:util";

import { createLogger, type Logger } from "./log";
import { NodeMetrics, parseListenAddress, serveMetrics } from "./metrics";

export const LOG_OPTIONS = {
  "log-level": { type: "string" },
  "log-file": { type: "string" },
} as const satisfies ParseArgsConfig["options"];

export const METRICS_OPTION = { metrics: { type: "string" } } as const satisfies ParseArgsConfig["options"];

/** A JSON-line logger to stderr (or `--log-file`), at `--log-level` (default info). */
export function loggerFrom(values: Record<string, unknown>, component: string): Logger {
  return createLogger({ component, level: values["log-level"] as string | undefined, file: values["log-file"] as string | undefined });
}

/** With `--metrics HOST:PORT`: a registry and its `GET /metrics` server, listening. */
export async function startMetrics(values: Record<string, unknown>): Promise<{ metrics: NodeMetrics; address: string; close: () => Promise<void> } | undefined> {
  const option = values.metrics as string | undefined;
  if (option === undefined) return undefined;
  const { host, port } = parseListenAddress(option);
  const metrics = new NodeMetrics();
  const server = await serveMetrics(metrics, host, port);
  return { metrics, address: `${host.includes(":") ? `[${host}]` : host}:${server.port}`, close: server.close };
}
