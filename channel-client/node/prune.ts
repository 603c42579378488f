/**
 * Archive and prune settled channels (issue 31 item 2, decision 0008 amendment).
 *
 * Policy: a channel is pruned only when the CHAIN says nothing can reach it any more — never on the store's
 * own status, which a message or a crash could have set early:
 *   1. the GasEscrow holds it as Settled (`phaseOf`), with the time it settled (`settledInfo`);
 *   2. that time plus the longest dispute window that could still open a case on it has passed, by the chain's
 *      clock (the newest block's timestamp, never the host's): the DisputeManager's `settledDisputeWindow`
 *      and, under v2 terms, the terms' `windowAfterSettlement` (a payer refuses terms promising more than the
 *      chain's, but the longer one is waited for regardless). A case is accepted while
 *      `block.timestamp <= settledAt + window`, so pruning needs the newest block strictly after that;
 *   3. no case on the channel is unresolved: every case the DisputeManager opened on the session
 *      (`nextCaseId` counts them) is Resolved or Expired.
 * The channel is then written to an archive in the `ioi export` format, the file is read back and verified,
 * and only then deleted from the store, which keeps a record that it was pruned (a late message for it is
 * answered, never re-creates it).
 *
 * `pruneDecision` is pure (the facts in, the decision out); `pruneChannels` reads the facts and acts.
 */
import { encodeAbiParameters, keccak256, type Address, type Hex, type PublicClient } from "viem";

import { disputeManagerAbi } from "../abi/DisputeManager";
import { gasEscrowAbi } from "../abi/GasEscrow";
import { readSettledDisputeWindow } from "../chain/dispute-window";
import type { RetryOptions } from "../chain/logs";
import { exportLines, writeArchive } from "./archive";
import type { ChannelRecord, ChannelStore } from "../store/store";

/** `IGasEscrow.Phase`, by index. */
const PHASES = ["None", "Open", "Closing", "Finalizable", "Frozen", "Settled"] as const;
/** `IDisputeManager.CaseStatus`, by index; Resolved and Expired are final. */
const CASE_STATUSES = ["None", "Open", "Deliberating", "Decided", "SlowPath", "Resolved", "Expired"] as const;
const FINAL_CASE_STATUSES: readonly string[] = ["Resolved", "Expired"];
/** `IDisputeManager.SubjectKind.Session`. */
const SESSION_SUBJECT = 2;

/** What the chain says of one channel, read for a prune decision. */
export type PruneFacts = {
  /** The GasEscrow's phase of the session. */
  phase: (typeof PHASES)[number];
  /** When it settled (unix seconds), if it did. */
  settledAt?: bigint;
  /** The DisputeManager's `settledDisputeWindow` (seconds): the longer of the rules in force and the newest scheduled. */
  chainWindow: bigint;
  /** Cases on the session that are not Resolved or Expired (their ids). */
  unresolvedCases: Hex[];
  /** The newest block's timestamp: the chain's clock. */
  now: bigint;
};

export type PruneDecision = { prune: true; after: bigint } | { prune: false; reason: string; after?: bigint };

/** Whether `channel` may be pruned given what the chain says (see the module comment); pure. */
export function pruneDecision(channel: ChannelRecord, facts: PruneFacts): PruneDecision {
  if (facts.phase !== "Settled") return { prune: false, reason: `it is ${facts.phase} on-chain, not Settled` };
  if (facts.settledAt === undefined) return { prune: false, reason: "the chain gave no settlement time" };
  if (facts.unresolvedCases.length > 0) return { prune: false, reason: `case ${facts.unresolvedCases.join(", ")} on it is not resolved` };
  const termsWindow = channel.pricing.version === "2" ? channel.pricing.disputes.windowAfterSettlement : 0n;
  const window = termsWindow > facts.chainWindow ? termsWindow : facts.chainWindow;
  const after = facts.settledAt + window;
  if (facts.now <= after) return { prune: false, reason: `a case may still open on it until ${after} (chain time now ${facts.now})`, after };
  return { prune: true, after };
}

/** The id of the `index`-th case the DisputeManager opened on a session (`DisputeManager._caseId`). */
export function sessionCaseId(sessionId: Hex, index: number): Hex {
  return keccak256(encodeAbiParameters([{ type: "uint8" }, { type: "bytes32" }, { type: "uint8" }], [SESSION_SUBJECT, sessionId, index]));
}

/** Reads the facts of {@link PruneFacts} for one session from the chain. */
export async function readPruneFacts(publicClient: PublicClient, escrow: Address, disputeManager: Address, sessionId: Hex): Promise<PruneFacts> {
  const zero = `0x${"00".repeat(32)}` as Hex;
  const [phaseIndex, settled, windowNow, [latest], next, block] = await Promise.all([
    publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [sessionId] }),
    // settledAt is the settlement's time whatever state is passed (only `matches` depends on it).
    publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "settledInfo", args: [sessionId, { deposit: 0n, seq: 0n, amount: 0n, receiptRoot: zero, feeBps: 0 }] }),
    readSettledDisputeWindow(publicClient, disputeManager),
    // Rules governance has scheduled: a longer window in them could reach the channel later.
    publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "latestParams" }),
    publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "nextCaseId", args: [SESSION_SUBJECT, sessionId] }),
    publicClient.getBlock({ blockTag: "latest" }),
  ]);
  const phase = PHASES[Number(phaseIndex)] ?? "None";
  const scheduled = BigInt(latest.settledDisputeWindow);
  const chainWindow = scheduled > windowNow ? scheduled : windowNow;
  const unresolvedCases: Hex[] = [];
  // Case ids are numbered per subject; the next one's id ends the list (at most 255 cases per subject).
  for (let index = 0; index < 256; index++) {
    const caseId = sessionCaseId(sessionId, index);
    if (caseId === next) break;
    const c = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] });
    const status = CASE_STATUSES[Number(c.status)] ?? "None";
    if (!FINAL_CASE_STATUSES.includes(status)) unresolvedCases.push(caseId);
  }
  const facts: PruneFacts = { phase, chainWindow, unresolvedCases, now: block.timestamp };
  if (phase === "Settled") facts.settledAt = BigInt(settled[1]);
  return facts;
}

export type PruneChannelsParameters = {
  store: Pick<ChannelStore, "listChannels" | "steps" | "leaves" | "deleteChannel">;
  publicClient: PublicClient;
  disputeManager: Address;
  archiveDir: string;
  /** The chain the client is on, and the GasEscrow the DisputeManager is wired to: channels elsewhere are kept. */
  chainId: number;
  escrow: Address;
  /** Decide and report, archive and delete nothing. */
  dryRun?: boolean;
  maxBlockRange?: bigint;
  retry?: RetryOptions;
  /** Facts for a channel (default: `readPruneFacts` against its escrow); tests and callers with their own reader. */
  facts?: (channel: ChannelRecord) => Promise<PruneFacts>;
};

export type PruneOutcome = {
  sessionId: Hex;
  /** pruned: archived and deleted; prunable: would be (dry run); kept: not yet, with why. */
  action: "pruned" | "prunable" | "kept";
  reason?: string;
  archive?: string;
  receipts?: number;
};

/**
 * Decides for every stored channel of the store and prunes those the policy allows: archive written and
 * verified, then the channel deleted in one store transaction (with its pruned record). A channel whose facts
 * cannot be read is kept (the error is its reason); the others go on.
 */
export async function pruneChannels(parameters: PruneChannelsParameters): Promise<PruneOutcome[]> {
  const { store, publicClient, disputeManager, archiveDir, dryRun = false } = parameters;
  const outcomes: PruneOutcome[] = [];
  for (const channel of store.listChannels()) {
    const { sessionId } = channel;
    let decision: PruneDecision;
    let facts: PruneFacts;
    if (channel.chainId !== parameters.chainId || channel.escrow.toLowerCase() !== parameters.escrow.toLowerCase()) {
      outcomes.push({ sessionId, action: "kept", reason: `it is held by the GasEscrow ${channel.escrow} on chain ${channel.chainId}, not by this DisputeManager's escrow on chain ${parameters.chainId}` });
      continue;
    }
    try {
      facts = await (parameters.facts ?? ((c) => readPruneFacts(publicClient, c.escrow, disputeManager, c.sessionId)))(channel);
      decision = pruneDecision(channel, facts);
    } catch (error) {
      outcomes.push({ sessionId, action: "kept", reason: `its chain state could not be read: ${(error as Error).message.split("\n")[0]}` });
      continue;
    }
    if (!decision.prune) {
      outcomes.push({ sessionId, action: "kept", reason: decision.reason });
      continue;
    }
    const leaves = store.leaves(sessionId);
    if (dryRun) {
      outcomes.push({ sessionId, action: "prunable", receipts: leaves.length });
      continue;
    }
    let archive: string;
    try {
      const lines = await exportLines({ store, channel, publicClient, escrow: channel.escrow, maxBlockRange: parameters.maxBlockRange, retry: parameters.retry });
      archive = writeArchive(archiveDir, sessionId, lines, leaves);
    } catch (error) {
      // Nothing is deleted without a verified archive; the next pass tries again.
      outcomes.push({ sessionId, action: "kept", reason: `its archive could not be written: ${(error as Error).message.split("\n")[0]}` });
      continue;
    }
    await store.deleteChannel(sessionId, { prunedAt: facts.now, archive });
    outcomes.push({ sessionId, action: "pruned", archive, receipts: leaves.length });
  }
  return outcomes;
}

export type PruneScheduleParameters = PruneChannelsParameters & {
  /** Between the end of one pass and the start of the next. */
  everyMs: number;
  onOutcomes?: (outcomes: PruneOutcome[]) => void;
  /** A pass that failed as a whole (the store, the RPC); the next pass runs on schedule. */
  onError?: (error: unknown) => void;
  /** After each pass that pruned something (e.g. `SqliteStore.reclaim`). */
  afterPrune?: () => Promise<unknown>;
};

/**
 * A daemon's prune duty (`ioi watchtower --prune-archive-dir D`): a pass at once, then one every `everyMs`.
 * Returns `stop`, which waits for a pass under way to end.
 */
export function schedulePrune(parameters: PruneScheduleParameters): { stop: () => Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const pass = async (): Promise<void> => {
    try {
      const outcomes = await pruneChannels(parameters);
      parameters.onOutcomes?.(outcomes);
      if (outcomes.some((o) => o.action === "pruned")) await parameters.afterPrune?.();
    } catch (error) {
      parameters.onError?.(error);
    }
    if (!stopped) timer = setTimeout(() => (running = pass()), parameters.everyMs);
  };
  running = pass();
  return {
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
