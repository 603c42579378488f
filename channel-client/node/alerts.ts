/**
 * Alerts and top-ups of a node that runs by itself (issue 29 item 4; decision 0024, amended).
 *
 * Pure core, imperative shell (STYLE 20): `evaluateAlerts` turns chain state + store state + now into the alerts
 * that hold, `diffAlerts` says which were raised and which cleared since the last poll, `advanceHead` counts polls
 * the head stood still, and `planTopUps` decides what to deposit under a policy and its daily cap. None of them
 * touches a chain or a socket; `AlertEmitter` and the watchtower (`readAlertChainState`, its top-up step) act.
 *
 * An alert has a stable key (kind + subject); it is raised once when its condition starts to hold and cleared
 * once when it stops, so a condition that lasts a week is one log line, one webhook, one counter increment.
 */
import type { Address, Hex, PublicClient } from "viem";

import { disputeManagerAbi } from "../abi/DisputeManager";
import { gasEscrowAbi } from "../abi/GasEscrow";
import { providerRegistryAbi } from "../abi/ProviderRegistry";
import { BaseError } from "../core/errors";
import { errorText, type Logger } from "./log";
import type { NodeMetrics } from "./metrics";

export class AlertOptionError extends BaseError {
  override name = "AlertOptionError" as const;
}

export type AlertKind = "window_closing" | "bond_low" | "unclaimed_payout" | "unclaimed_fee" | "chain_stalled" | "runtime_pin";
/** `runtime_pin`: an arbitrator daemon's key is pinned to another judge runtime than the cases' (it is not drawn). */
export const ALERT_KINDS: readonly AlertKind[] = ["window_closing", "bond_low", "unclaimed_payout", "unclaimed_fee", "chain_stalled", "runtime_pin"];

export type Alert = {
  /** Stable per condition: kind and subject (session, role and account, asset and account). */
  key: string;
  kind: AlertKind;
  message: string;
  details: Record<string, string>;
};

/** What the chain says, read once per poll by the shell. */
export type AlertChainState = {
  /** The head block's number. */
  head: bigint;
  /** Polls in a row the head has not moved (see `advanceHead`). */
  unchangedPolls: number;
  /** The node's registrations only: its active bond or stake and the registry's minimum for that role. */
  bonds: { role: "provider" | "arbitrator"; account: Address; active: bigint; minimum: bigint }[];
  /** Non-zero or zero balances the node's account may claim. */
  claimable: { source: "escrow" | "disputeManager"; asset: Address; account: Address; amount: bigint }[];
};

/** What the store says: channels whose challenge window is running. */
export type AlertStoreState = {
  closing: { sessionId: Hex; role: "payer" | "provider"; finalizesAt: bigint }[];
};

export type AlertPolicy = {
  /** Raise `window_closing` when a closing channel's window ends within this many seconds. */
  windowMarginSeconds: bigint;
  /** Raise `chain_stalled` once the head stood still for this many polls in a row. */
  stallPolls: number;
};

export const DEFAULT_ALERT_POLICY: AlertPolicy = { windowMarginSeconds: 600n, stallPolls: 20 };

/** The alerts that hold now (`now`: the chain's time, the head block's timestamp, in seconds). */
export function evaluateAlerts(parameters: { chain: AlertChainState; store: AlertStoreState; now: bigint; policy: AlertPolicy }): Alert[] {
  const { chain, store, now, policy } = parameters;
  const alerts: Alert[] = [];
  for (const { sessionId, role, finalizesAt } of store.closing) {
    if (now >= finalizesAt || finalizesAt - now > policy.windowMarginSeconds) continue;
    alerts.push({
      key: `window_closing:${sessionId}`,
      kind: "window_closing",
      message: `the challenge window of ${sessionId} (${role}) closes in ${finalizesAt - now} s`,
      details: { sessionId, role, finalizesAt: finalizesAt.toString(), secondsLeft: (finalizesAt - now).toString() },
    });
  }
  for (const { role, account, active, minimum } of chain.bonds) {
    if (active >= minimum) continue;
    alerts.push({
      key: `bond_low:${role}:${account.toLowerCase()}`,
      kind: "bond_low",
      message: `${account}'s active ${role === "provider" ? "bond" : "stake"} ${active} is below the registry's minimum ${minimum}`,
      details: { role, account, active: active.toString(), minimum: minimum.toString() },
    });
  }
  for (const { source, asset, account, amount } of chain.claimable) {
    if (amount === 0n) continue;
    const kind = source === "escrow" ? "unclaimed_payout" : "unclaimed_fee";
    alerts.push({
      key: `${kind}:${asset.toLowerCase()}:${account.toLowerCase()}`,
      kind,
      message: `${amount} of ${asset} waits unclaimed for ${account} in the ${source === "escrow" ? "GasEscrow" : "DisputeManager"}`,
      details: { source, asset, account, amount: amount.toString() },
    });
  }
  if (chain.unchangedPolls >= policy.stallPolls) {
    alerts.push({
      key: "chain_stalled",
      kind: "chain_stalled",
      message: `the chain head stayed at block ${chain.head} for ${chain.unchangedPolls} polls`,
      details: { head: chain.head.toString(), unchangedPolls: String(chain.unchangedPolls) },
    });
  }
  return alerts;
}

/** The head tracker: how many polls in a row the head stayed where it was (0 when it moved). */
export function advanceHead(previous: { head: bigint; unchangedPolls: number } | undefined, head: bigint): { head: bigint; unchangedPolls: number } {
  if (!previous || previous.head !== head) return { head, unchangedPolls: 0 };
  return { head, unchangedPolls: previous.unchangedPolls + 1 };
}

/**
 * Compares the alerts that hold now with those active before: new keys are raised, missing keys cleared; a key
 * that holds in both is neither (its message may change, e.g. the seconds left, and is not re-sent).
 */
export function diffAlerts(active: ReadonlyMap<string, Alert>, current: readonly Alert[]): { raised: Alert[]; cleared: Alert[]; active: Map<string, Alert> } {
  const next = new Map<string, Alert>();
  for (const alert of current) next.set(alert.key, active.get(alert.key) ?? alert);
  const raised = current.filter((alert, i) => !active.has(alert.key) && current.findIndex((a) => a.key === alert.key) === i);
  const cleared = [...active.values()].filter((alert) => !next.has(alert.key));
  return { raised, cleared, active: next };
}

/*//////////////////////////////////////////////////////////////
                              TOP-UPS
//////////////////////////////////////////////////////////////*/

/** `--top-up-below B --top-up-to T --top-up-max-per-day C`: amounts in the channel's asset's base units. */
export type TopUpPolicy = { below: bigint; to: bigint; maxPerDay: bigint };

export const DAY_SECONDS = 86_400n;

/** Checks a policy: 0 < below <= to, maxPerDay > 0. */
export function checkTopUpPolicy(policy: TopUpPolicy): TopUpPolicy {
  if (policy.below === 0n) throw new AlertOptionError("--top-up-below must be more than zero: a remaining deposit is never below zero.");
  if (policy.to < policy.below) throw new AlertOptionError(`--top-up-to (${policy.to}) must be at least --top-up-below (${policy.below}).`);
  if (policy.maxPerDay === 0n) throw new AlertOptionError("--top-up-max-per-day must be more than zero.");
  return policy;
}

/** One top-up made: when (chain time, seconds) and how much. */
export type TopUpRecord = { at: bigint; amount: bigint };

/** What the rolling 24 hours before `now` (chain time) already deposited. */
export function spentInLastDay(history: readonly TopUpRecord[], now: bigint): bigint {
  return history.filter((r) => r.at > now - DAY_SECONDS && r.at <= now).reduce((sum, r) => sum + r.amount, 0n);
}

/**
 * The deposits to make now: every open channel whose remaining deposit (deposit minus what the newest ticket
 * spent) is below `policy.below` gets what brings it back to `policy.to`, in the order given, until the rolling
 * day's total reaches `policy.maxPerDay`; the channel that meets the cap gets what is left of it (never more).
 */
export function planTopUps(parameters: {
  channels: readonly { sessionId: Hex; deposit: bigint; spent: bigint }[];
  policy: TopUpPolicy;
  history: readonly TopUpRecord[];
  now: bigint;
}): { sessionId: Hex; amount: bigint; remaining: bigint; capped: boolean }[] {
  const { channels, policy, history, now } = parameters;
  let allowance = policy.maxPerDay - spentInLastDay(history, now);
  const plan: { sessionId: Hex; amount: bigint; remaining: bigint; capped: boolean }[] = [];
  for (const { sessionId, deposit, spent } of channels) {
    const remaining = deposit > spent ? deposit - spent : 0n;
    if (remaining >= policy.below) continue;
    const wanted = policy.to - remaining;
    if (allowance <= 0n) break;
    const amount = wanted < allowance ? wanted : allowance;
    plan.push({ sessionId, amount, remaining, capped: amount < wanted });
    allowance -= amount;
  }
  return plan;
}

/*//////////////////////////////////////////////////////////////
                               SHELL
//////////////////////////////////////////////////////////////*/

/** Reads what `evaluateAlerts` needs about `account` from the chain (the registry is the escrow's). */
export async function readAlertChainState(parameters: {
  publicClient: PublicClient;
  escrow: Address;
  disputeManager?: Address;
  account: Address;
  assets: readonly Address[];
  head: bigint;
  unchangedPolls: number;
}): Promise<AlertChainState> {
  const { publicClient, escrow, disputeManager, account, assets } = parameters;
  const registry = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "registry" });
  const bonds: AlertChainState["bonds"] = [];
  const roles = [
    { role: "provider" as const, id: 0, minimum: "minProviderBond" as const },
    { role: "arbitrator" as const, id: 1, minimum: "minArbitratorStake" as const },
  ];
  for (const { role, id, minimum } of roles) {
    const registered = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "isRegistered", args: [id, account] });
    if (!registered) continue;
    const [bond, min] = await Promise.all([
      publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondOf", args: [id, account] }),
      publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: minimum }),
    ]);
    bonds.push({ role, account, active: BigInt(bond.active), minimum: min });
  }
  const claimable: AlertChainState["claimable"] = [];
  for (const asset of assets) {
    const owed = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "claimableOf", args: [asset, account] });
    claimable.push({ source: "escrow", asset, account, amount: owed });
    if (disputeManager) {
      const fee = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "claimable", args: [asset, account] });
      claimable.push({ source: "disputeManager", asset, account, amount: fee });
    }
  }
  return { head: parameters.head, unchangedPolls: parameters.unchangedPolls, bonds, claimable };
}

/** Checks `--alert-webhook URL`: http or https only. */
export function parseWebhookUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new AlertOptionError(`--alert-webhook must be an http(s) URL such as http://127.0.0.1:9000/alerts; received "${value}".`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new AlertOptionError(`--alert-webhook must be an http(s) URL; received "${value}".`);
  return url;
}

export type AlertEmitterParameters = {
  logger?: Logger;
  metrics?: NodeMetrics;
  /** POSTs `{ event, alert, at }` as JSON here on every raise and clear. */
  webhook?: URL;
  /** Per POST (default 5,000 ms); a slow or failing receiver is logged and never stops the node. */
  webhookTimeoutMs?: number;
  /** Sees every raise and clear (the control API streams them). */
  onChange?: (change: { event: "alert.raised" | "alert.cleared"; alert: Alert }) => void;
  /**
   * Where the active alerts survive a restart: loaded at construction, saved on every raise or clear (an
   * `AlertState` of ./alert-state, named by its shape here because that module imports this one's types).
   */
  state?: { alerts: Alert[]; save(): void };
};

/** Keeps the active alerts; each raise and clear becomes a log line, a metric and (optionally) a webhook POST. */
export class AlertEmitter {
  #active = new Map<string, Alert>();

  constructor(readonly parameters: AlertEmitterParameters = {}) {
    // Alerts active before a restart stay active: not raised again, cleared once their condition stops.
    for (const alert of parameters.state?.alerts ?? []) this.#active.set(alert.key, alert);
    for (const kind of ALERT_KINDS) parameters.metrics?.alertsActive.set({ kind }, this.active.filter((a) => a.kind === kind).length);
  }

  get active(): Alert[] {
    return [...this.#active.values()];
  }

  /** Applies the alerts that hold now; resolves once every webhook POST has answered, failed or timed out (in turn). */
  async update(current: readonly Alert[]): Promise<{ raised: Alert[]; cleared: Alert[] }> {
    const { raised, cleared, active } = diffAlerts(this.#active, current);
    this.#active = active;
    const { logger, metrics } = this.parameters;
    for (const alert of raised) {
      logger?.warn({ event: "alert.raised", key: alert.key, kind: alert.kind, ...alert.details }, alert.message);
      metrics?.alertsRaised.inc({ kind: alert.kind });
    }
    for (const alert of cleared) logger?.info({ event: "alert.cleared", key: alert.key, kind: alert.kind }, `cleared: ${alert.message}`);
    if (metrics) {
      for (const kind of ALERT_KINDS) metrics.alertsActive.set({ kind }, this.active.filter((a) => a.kind === kind).length);
    }
    const changes = [...raised.map((alert) => ({ event: "alert.raised" as const, alert })), ...cleared.map((alert) => ({ event: "alert.cleared" as const, alert }))];
    if (changes.length > 0 && this.parameters.state) {
      this.parameters.state.alerts = this.active;
      this.parameters.state.save();
    }
    for (const change of changes) this.parameters.onChange?.(change);
    // One after another, so a receiver sees them in the order they happened; each is bounded by the timeout.
    for (const change of changes) await this.#post(change);
    return { raised, cleared };
  }

  async #post(change: { event: string; alert: Alert }): Promise<void> {
    const { webhook, webhookTimeoutMs = 5_000, logger, metrics } = this.parameters;
    if (!webhook) return;
    const body = JSON.stringify({ event: change.event, alert: change.alert, at: new Date().toISOString() });
    try {
      const response = await fetch(webhook, { method: "POST", headers: { "content-type": "application/json" }, body, signal: AbortSignal.timeout(webhookTimeoutMs) });
      await response.arrayBuffer().catch(() => undefined);
      if (!response.ok) throw new Error(`the receiver answered HTTP ${response.status}`);
    } catch (error) {
      metrics?.alertWebhookFailures.inc();
      logger?.warn({ event: "alert.webhook_failed", key: change.alert.key, url: webhook.origin + webhook.pathname, error: errorText(error) }, "alert webhook POST failed");
    }
  }
}
