/**
 * Structured logs (issue 16): one JSON object per line through pino, with a level, a timestamp (ISO 8601),
 * the component (`provider`, `payer`, `watchtower`) and an `event` name a log shipper can filter on:
 *
 *   session.accepted · session.phase (closes and settlements seen) · ticket.refused · session.refused ·
 *   close.countersigned · commit.agreed · watchtower.close_seen · watchtower.challenged ·
 *   watchtower.finalized · watchtower.cooperative_submitted · chain.error · peer.dropped · node.error
 *
 * Logs go to stderr (fd 2) or a file, never stdout: stdout is the commands' output.
 *
 * Never secrets. Nothing logs a key, seed or session secret on purpose; as a second line of defence every
 * field whose name says it holds one is censored (`redact`), and `assertNoSecrets` lets tests check a log
 * for the literal bytes of a key.
 */
import pino, { type DestinationStream, type Level, type Logger } from "pino";

import { BaseError } from "../core/errors";

export type { Logger } from "pino";

/** Levels accepted by `--log-level`. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Field names that would hold a secret, at the top level or one level down; their values are censored. */
const SECRET_FIELDS = ["privateKey", "key", "secret", "seed", "mnemonic", "password", "sessionKey", "sharedSecret", "sendKey", "receiveKey"];
export const REDACT_PATHS = SECRET_FIELDS.flatMap((name) => [name, `*.${name}`]);

export class LogOptionError extends BaseError {
  override name = "LogOptionError" as const;
}

export type CreateLoggerParameters = {
  /** Component name, written as `component` on every line. */
  component: string;
  level?: string;
  /** Append to this file instead of stderr. */
  file?: string;
  /** Write here instead (tests). */
  destination?: DestinationStream;
};

/** A pino logger writing JSON lines to stderr, a file or a given stream. */
export function createLogger(parameters: CreateLoggerParameters): Logger {
  const level = parameters.level ?? "info";
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new LogOptionError(`--log-level must be one of ${LOG_LEVELS.join(", ")}; received "${level}".`);
  }
  const destination =
    parameters.destination ??
    (parameters.file !== undefined ? pino.destination({ dest: parameters.file, sync: true, mkdir: true }) : pino.destination({ fd: 2, sync: true }));
  return pino(
    {
      level: level as Level | "silent",
      base: { component: parameters.component },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    },
    destination,
  );
}

/** The first line of an error's message, for a log field (never a stack trace). */
export function errorText(error: unknown): string {
  const e = error as BaseError;
  return `${e?.name ?? "Error"}: ${String(e?.shortMessage ?? e?.message ?? error).split("\n")[0]}`;
}

/** Throws if `text` (a log) contains any of `secrets` (hex keys, with or without 0x, any case). */
export function assertNoSecrets(text: string, secrets: readonly string[]): void {
  const haystack = text.toLowerCase();
  for (const secret of secrets) {
    const needle = secret.toLowerCase().replace(/^0x/, "");
    if (needle.length >= 16 && haystack.includes(needle)) throw new BaseError(`The log contains a secret (${needle.slice(0, 6)}…).`);
  }
}
