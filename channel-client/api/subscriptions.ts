/**
 * The control API's subscriptions (decision 0029): five topics a WebSocket client follows with `subscribe`.
 *
 * - `receipts` — every receipt the API's payer accepted (`payer.invoke`, `payer.stream`), once it is durable.
 * - `phases`   — a channel's on-chain phase (Open, Closing, Finalizable, Frozen, Settled) or a gig's status
 *   changed, for the channels in the store and the gigs this API touched.
 * - `cases`    — every DisputeManager event (CaseOpened, PanelDrawn, …) from the block the server started at.
 * - `alerts`   — a closing window about to end, a window that passed (the close can be finalised), a chain
 *   that stopped advancing; other daemons in the process publish theirs with `hub.publish("alerts", …)`.
 * - `streams`  — what the Flow Controller of a milestone stream in the store did (issue 32): `ticket`, `proof`,
 *   `sample`, `pause`, read from the stream journals as they grow (channel-client/api/stream-watch.ts).
 *
 * The decisions are pure (`phaseChanges`, `closingAlerts`, `stallAlert`): they take what was read and what was
 * seen before and return the events, so they are tested without a chain. `ChainWatch` is the shell that reads.
 */
import { parseEventLogs, type Address, type Hex, type PublicClient } from "viem";

import { disputeManagerAbi } from "../abi/DisputeManager";
import { CHANNEL_PHASES, gasEscrowAbi } from "../chain/escrow";
import { readGig } from "../chain/gig";
import type { ChannelStore } from "../store/store";

export const TOPICS = ["receipts", "phases", "cases", "alerts", "streams"] as const;
export type Topic = (typeof TOPICS)[number];

/** What a subscriber may narrow a topic to; an event matches when every given field equals the event's. */
export type SubscriptionFilter = { sessionId?: string; gigId?: string; caseId?: string };

export type ApiEvent = Record<string, unknown>;
type Subscriber = { topic: Topic; filter: SubscriptionFilter; deliver: (event: ApiEvent) => void };

/** Topic → subscribers. Delivery is synchronous and never throws into the publisher. */
export class SubscriptionHub {
  readonly #subscribers = new Map<string, Subscriber>();
  #next = 0;

  subscribe(topic: Topic, filter: SubscriptionFilter, deliver: (event: ApiEvent) => void): string {
    const id = `0x${(++this.#next).toString(16).padStart(8, "0")}`;
    this.#subscribers.set(id, { topic, filter, deliver });
    return id;
  }

  /** True when `id` was subscribed (and is no longer). */
  unsubscribe(id: string): boolean {
    return this.#subscribers.delete(id);
  }

  /** How many subscribers follow `topic` (all topics when omitted): the watch polls only while someone listens. */
  count(topic?: Topic): number {
    let n = 0;
    for (const s of this.#subscribers.values()) if (topic === undefined || s.topic === topic) n++;
    return n;
  }

  publish(topic: Topic, event: ApiEvent): void {
    for (const s of this.#subscribers.values()) {
      if (s.topic !== topic || !matches(s.filter, event)) continue;
      try {
        s.deliver(event);
      } catch {
        // A subscriber whose socket broke is removed by its connection's close handler; others still get it.
      }
    }
  }
}

function matches(filter: SubscriptionFilter, event: ApiEvent): boolean {
  for (const [key, want] of Object.entries(filter)) {
    if (want === undefined) continue;
    const have = event[key];
    if (typeof have !== "string" || have.toLowerCase() !== want.toLowerCase()) return false;
  }
  return true;
}

/*//////////////////////////////////////////////////////////////
                          PURE DECISIONS
//////////////////////////////////////////////////////////////*/

/** Phase events for what changed since `seen` (which the caller then replaces with `now`); first sightings are events too. */
export function phaseChanges(kind: "channel" | "gig", seen: ReadonlyMap<string, string>, now: ReadonlyMap<string, string>, blockNumber: bigint): ApiEvent[] {
  const events: ApiEvent[] = [];
  for (const [id, phase] of now) {
    const previous = seen.get(id);
    if (previous === phase) continue;
    const key = kind === "channel" ? "sessionId" : "gigId";
    events.push({ kind, [key]: id, phase, previous: previous ?? null, blockNumber: blockNumber.toString() });
  }
  return events;
}

export type ClosingView = { sessionId: Hex; finalizesAt: bigint; phase: string };

/**
 * Alerts for closing channels at chain time `now`: `window.closing` once fewer than `warnSeconds` remain,
 * `window.passed` once the window is over and the channel still is not settled (someone must finalise).
 * `sent` holds "<alert>:<sessionId>" of alerts already raised, so each is raised once.
 */
export function closingAlerts(closings: readonly ClosingView[], now: bigint, warnSeconds: bigint, sent: ReadonlySet<string>): ApiEvent[] {
  const alerts: ApiEvent[] = [];
  for (const c of closings) {
    if (c.phase === "Settled" || c.phase === "Frozen") continue;
    const left = c.finalizesAt - now;
    const alert = left <= 0n ? "window.passed" : left <= warnSeconds ? "window.closing" : undefined;
    if (alert === undefined || sent.has(`${alert}:${c.sessionId}`)) continue;
    alerts.push({
      alert,
      severity: alert === "window.passed" ? "action" : "warning",
      sessionId: c.sessionId,
      finalizesAt: c.finalizesAt.toString(),
      message: alert === "window.passed" ? `The challenge window of ${c.sessionId} has passed: finalise it to pay out.` : `The challenge window of ${c.sessionId} ends in ${left} seconds.`,
    });
  }
  return alerts;
}

/** `chain.stalled` once the head has not moved for `stallMs` (raised once per stalled head). */
export function stallAlert(head: bigint, lastHead: bigint | undefined, lastMovedAt: number, nowMs: number, stallMs: number, alreadyRaised: boolean): ApiEvent | undefined {
  if (lastHead === undefined || head !== lastHead || alreadyRaised || nowMs - lastMovedAt < stallMs) return undefined;
  return { alert: "chain.stalled", severity: "warning", blockNumber: head.toString(), message: `The chain has not advanced past block ${head} for ${Math.round((nowMs - lastMovedAt) / 1000)} seconds.` };
}

/*//////////////////////////////////////////////////////////////
                              THE SHELL
//////////////////////////////////////////////////////////////*/

export type ChainWatchParameters = {
  publicClient: PublicClient;
  store: ChannelStore;
  hub: SubscriptionHub;
  escrow: Address;
  gigEscrow?: Address;
  disputeManager?: Address;
  /** Gig ids whose status is followed (the API adds every gig it funds or acts on). */
  gigs: Set<bigint>;
  pollMs: number;
  /** Alert once fewer seconds than this remain in a closing window (default 600). */
  warnSeconds?: bigint;
  /** Alert when the head has not moved for this long (default 60 s; 0 disables). */
  stallMs?: number;
  onError?: (error: unknown) => void;
};

/** Polls the chain while anyone is subscribed and publishes what changed. */
export class ChainWatch {
  readonly #p: ChainWatchParameters;
  readonly #phases = new Map<string, string>();
  readonly #gigStatuses = new Map<string, string>();
  readonly #sent = new Set<string>();
  #casesFrom: bigint | undefined;
  #lastHead: bigint | undefined;
  #lastMovedAt = Date.now();
  #stallRaised = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #tick: Promise<void> = Promise.resolve();

  constructor(parameters: ChainWatchParameters) {
    this.#p = parameters;
  }

  /** Starts polling; case events are read from the current head on. */
  async start(): Promise<void> {
    this.#casesFrom = (await this.#p.publicClient.getBlockNumber()) + 1n;
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#tick;
  }

  /** One poll, now (what the timer runs; tests and callers may await it). */
  poll(): Promise<void> {
    this.#tick = this.#tick.then(() => this.#poll()).catch((error: unknown) => this.#p.onError?.(error));
    return this.#tick;
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.poll().finally(() => this.#schedule());
    }, this.#p.pollMs);
    this.#timer.unref();
  }

  async #poll(): Promise<void> {
    const { publicClient, store, hub, escrow } = this.#p;
    if (this.#stopped || hub.count() === 0) return;
    const block = await publicClient.getBlock();
    const head = block.number;
    const stall = stallAlert(head, this.#lastHead, this.#lastMovedAt, Date.now(), this.#p.stallMs ?? 60_000, this.#stallRaised);
    if (this.#lastHead === undefined || head !== this.#lastHead) {
      this.#lastHead = head;
      this.#lastMovedAt = Date.now();
      this.#stallRaised = false;
    }
    if (stall && (this.#p.stallMs ?? 60_000) > 0) {
      this.#stallRaised = true;
      hub.publish("alerts", stall);
    }

    // Channel phases (those this store knows and has not seen settle) and the closings' alerts.
    const channels = store.listChannels().filter((c) => this.#phases.get(c.sessionId) !== "Settled");
    const phases = new Map<string, string>();
    for (const c of channels) {
      const phase = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [c.sessionId] });
      // A settled channel's storage is cleared: phase 0 of a channel seen before, or settled in the store, is Settled.
      const settled = phase === 0 && (this.#phases.has(c.sessionId) || c.status === "settled");
      phases.set(c.sessionId, settled ? "Settled" : (CHANNEL_PHASES[phase] ?? "None"));
    }
    for (const event of phaseChanges("channel", this.#phases, phases, head)) hub.publish("phases", event);
    for (const [id, phase] of phases) this.#phases.set(id, phase);
    const closings: ClosingView[] = [];
    for (const c of channels) {
      const closing = store.getClosing(c.sessionId);
      if (closing) closings.push({ sessionId: c.sessionId, finalizesAt: closing.finalizesAt, phase: phases.get(c.sessionId) ?? "None" });
    }
    for (const alert of closingAlerts(closings, block.timestamp, this.#p.warnSeconds ?? 600n, this.#sent)) {
      this.#sent.add(`${alert.alert as string}:${alert.sessionId as string}`);
      hub.publish("alerts", alert);
    }

    // Gig statuses.
    if (this.#p.gigEscrow) {
      const statuses = new Map<string, string>();
      for (const gigId of this.#p.gigs) statuses.set(gigId.toString(), (await readGig({ publicClient, gigEscrow: this.#p.gigEscrow, gigId })).status);
      for (const event of phaseChanges("gig", this.#gigStatuses, statuses, head)) hub.publish("phases", event);
      for (const [id, status] of statuses) this.#gigStatuses.set(id, status);
    }

    // Case events since the last poll.
    if (this.#p.disputeManager && this.#casesFrom !== undefined && head >= this.#casesFrom) {
      const logs = await publicClient.getLogs({ address: this.#p.disputeManager, fromBlock: this.#casesFrom, toBlock: head });
      for (const log of parseEventLogs({ abi: disputeManagerAbi, logs })) {
        const args = wire(log.args) as Record<string, unknown>;
        hub.publish("cases", { event: log.eventName, ...args, blockNumber: log.blockNumber.toString(), transactionHash: log.transactionHash });
      }
      this.#casesFrom = head + 1n;
    }
  }
}

/** A value as JSON carries it: bigints as decimal strings, everything else as is (recursively). */
export function wire(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return value.map(wire);
  if (value instanceof Uint8Array) return `0x${Buffer.from(value).toString("hex")}`;
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = wire(v);
    return out;
  }
  return value;
}
