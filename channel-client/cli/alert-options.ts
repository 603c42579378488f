/**
 * Command-line options of issue 29 item 4, shared by `ioi watchtower` (alerts and the payer's top-up policy) and
 * `ioi provider` (alerts): parsed and checked before any RPC call, turned into the watchtower's `alerts` and
 * `topUp` parameters.
 */
import type { ParseArgsConfig } from "node:util";
import type { PublicClient } from "viem";

import { AlertEmitter, AlertOptionError, checkTopUpPolicy, DEFAULT_ALERT_POLICY, parseWebhookUrl, type AlertPolicy, type TopUpPolicy } from "../node/alerts";
import { AlertState, AlertStateError } from "../node/alert-state";
import type { Logger } from "../node/log";
import type { NodeMetrics } from "../node/metrics";
import { deployedAddress, givenAddress } from "./chain";
import { boundedUint, UsageError, weiAmount } from "./common";

export const ALERT_OPTIONS = {
  alerts: { type: "boolean" },
  "alert-webhook": { type: "string" },
  "alert-webhook-timeout": { type: "string" },
  "alert-window-margin": { type: "string" },
  "alert-stall-polls": { type: "string" },
  /** Where arbitration fees are claimable (default $IOI_DISPUTE_MANAGER, else the chain's deployment record). */
  "dispute-manager": { type: "string" },
} as const satisfies ParseArgsConfig["options"];

export const TOP_UP_OPTIONS = {
  "top-up-below": { type: "string" },
  "top-up-to": { type: "string" },
  "top-up-max-per-day": { type: "string" },
} as const satisfies ParseArgsConfig["options"];

export const ALERT_NOTES = [
  "  --alerts                  raise and clear alerts on every poll (log line, ioi_alerts_* metrics): a closing",
  "                            window within --alert-window-margin SECONDS (default 600), a bond or stake below the",
  "                            registry's minimum, an unclaimed escrow payout or DisputeManager fee, a head that",
  "                            stood still for --alert-stall-polls N polls (default 20)",
  "  --alert-webhook URL       also POST each raise and clear as JSON (implies --alerts); --alert-webhook-timeout MS",
  "                            (default 5000); a failed POST is logged, never fatal",
  "  --dispute-manager ADDR    where fees are claimable (default $IOI_DISPUTE_MANAGER, else the deployment record)",
];

export const TOP_UP_NOTES = [
  "  --top-up-below AMOUNT --top-up-to AMOUNT --top-up-max-per-day AMOUNT   (all three, in the asset's base units",
  "                            or with a unit, e.g. 0.5eth): an open payer channel whose deposit minus the newest",
  "                            ticket falls below the first is topped up to the second from this key, at most the",
  "                            third per asset in any 24 hours of chain time; each deposit is simulated first",
];

/** The top-up policy, or undefined when none of its options is given; some but not all is refused. */
export function topUpPolicyFrom(values: Record<string, unknown>): TopUpPolicy | undefined {
  const names = Object.keys(TOP_UP_OPTIONS);
  const given = names.filter((name) => values[name] !== undefined);
  if (given.length === 0) return undefined;
  if (given.length < names.length) throw new UsageError(`A top-up policy needs all of --top-up-below, --top-up-to and --top-up-max-per-day; received only ${given.map((n) => `--${n}`).join(", ")}.`);
  const policy = {
    below: weiAmount(values, "top-up-below", "top up a channel whose remaining deposit is below this"),
    to: weiAmount(values, "top-up-to", "the remaining deposit a top-up restores"),
    maxPerDay: weiAmount(values, "top-up-max-per-day", "most deposited per asset in 24 hours"),
  };
  try {
    return checkTopUpPolicy(policy);
  } catch (error) {
    if (error instanceof AlertOptionError) throw new UsageError(error.shortMessage, { cause: error });
    throw error;
  }
}

/**
 * The node's alert and top-up state beside its store (`<store>.alerts.json`), so a restart neither raises an
 * active alert again nor forgets the day's top-ups; an unreadable file is one sentence.
 */
export function alertStateFor(storeFile: string): AlertState | undefined {
  if (storeFile === ":memory:") return undefined; // a store that does not outlive the process: nothing to keep
  try {
    return AlertState.open(`${storeFile}.alerts.json`);
  } catch (error) {
    if (error instanceof AlertStateError) throw new UsageError(error.shortMessage, { cause: error });
    throw error;
  }
}

/** The alert settings checked, or undefined without `--alerts` or `--alert-webhook`. */
export function alertSettingsFrom(values: Record<string, unknown>): { policy: AlertPolicy; webhook?: URL; webhookTimeoutMs: number } | undefined {
  const webhookText = values["alert-webhook"] as string | undefined;
  const wanted = values.alerts === true || webhookText !== undefined;
  const tuned = ["alert-webhook-timeout", "alert-window-margin", "alert-stall-polls"].filter((name) => values[name] !== undefined);
  if (!wanted) {
    if (tuned.length > 0) throw new UsageError(`--${tuned[0]} tunes alerts: add --alerts (or --alert-webhook URL).`);
    return undefined;
  }
  givenAddress(values, "dispute-manager", "IOI_DISPUTE_MANAGER"); // a malformed address is refused before any RPC call
  let webhook: URL | undefined;
  try {
    webhook = webhookText === undefined ? undefined : parseWebhookUrl(webhookText);
  } catch (error) {
    if (error instanceof AlertOptionError) throw new UsageError(error.shortMessage, { cause: error });
    throw error;
  }
  return {
    policy: {
      windowMarginSeconds: boundedUint(values, "alert-window-margin", "seconds before a closing window ends to alert", 1n, 365n * 86_400n, DEFAULT_ALERT_POLICY.windowMarginSeconds),
      stallPolls: Number(boundedUint(values, "alert-stall-polls", "polls the head may stand still before an alert", 1n, 1_000_000n, BigInt(DEFAULT_ALERT_POLICY.stallPolls))),
    },
    ...(webhook ? { webhook } : {}),
    webhookTimeoutMs: Number(boundedUint(values, "alert-webhook-timeout", "milliseconds a webhook POST may take", 1n, 60_000n, 5_000n)),
  };
}

/** The watchtower's `alerts` parameter: an emitter on the node's logger and metrics, and the DisputeManager if known. */
export async function watchtowerAlerts(
  settings: NonNullable<ReturnType<typeof alertSettingsFrom>>,
  values: Record<string, unknown>,
  publicClient: PublicClient,
  logger: Logger,
  metrics: NodeMetrics | undefined,
  state?: AlertState,
) {
  // Fees are looked up where a DisputeManager is known; without one, only escrow payouts are watched.
  // One named by --dispute-manager must be right (a wrong one is an error, not a silent gap).
  const lookup = deployedAddress(values, publicClient, "dispute-manager", "IOI_DISPUTE_MANAGER", "DisputeManager");
  const disputeManager = values["dispute-manager"] !== undefined ? await lookup : await lookup.catch(() => undefined);
  if (!disputeManager) logger.info({ event: "alerts.no_dispute_manager" }, "no DisputeManager known for this chain: unclaimed arbitration fees are not watched");
  const emitter = new AlertEmitter({ logger, metrics, ...(settings.webhook ? { webhook: settings.webhook } : {}), webhookTimeoutMs: settings.webhookTimeoutMs, ...(state ? { state } : {}) });
  return { emitter, policy: settings.policy, ...(disputeManager ? { disputeManager } : {}) };
}
