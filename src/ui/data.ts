/**
 * What `ioi ui` shows, read from the node's store and the chain (issue 16): channels with their figures,
 * a channel's receipts and leaves, the gigs and dispute cases the chain holds with the records (challenge
 * packages, resolutions, UPIP process records) found in a directory, and the bench results.
 *
 * Amounts are decimal strings (bigint in code), never JS numbers.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

import { getAddress, parseEventLogs, type Address, type Hex, type PublicClient } from "viem";

import { disputeManagerAbi } from "../arbitration/chain";
import { CASE_STATUSES } from "../arbitration/context";
import { packageFromJson, packageHash } from "../arbitration/package";
import { resolutionFromJson, resolutionHash, type Resolution } from "../arbitration/resolution";
import { getLogsPaged, type RetryOptions } from "../chain/logs";
import { CHANNEL_PHASES, gasEscrowAbi } from "../chain/escrow";
import { gigEscrowAbi, readGig } from "../chain/gig";
import { paymentTicketHash } from "../core/ticket";
import { sessionReceiptHash } from "../core/receipt";
import type { ChannelStore } from "../store/store";

/** `IDisputeManager.Verdict` by index: the challenger (client or payer) wins, the respondent wins, … */
const VERDICTS = ["none", "challenger_wins", "respondent_wins", "no_fault", "undecidable"] as const;

export type ChannelView = {
  sessionId: Hex;
  role: string;
  status: string;
  phase: string;
  counterparty: Address;
  deposit: string;
  paid: string;
  remaining: string;
  /** What the provider can be paid on-chain now: the recorded close's amount, else the newest ticket's. */
  claimable: string;
  seq: string;
  receipts: number;
  /** Seconds until a closing channel's window ends (0 once it passed), or null if no window runs. */
  windowSecondsLeft: number | null;
  finalizesAt: string | null;
  /** The newest receipt root both sides signed (PKT_RECEIPT_COMMIT), else the newest ticket's root. */
  latestRoot: { root: Hex; leafCount: string | null; source: "signed commit" | "ticket" } | null;
};

export async function listChannels(store: ChannelStore, publicClient: PublicClient, escrow: Address): Promise<ChannelView[]> {
  const channels = store.listChannels();
  const now = channels.length > 0 ? (await publicClient.getBlock()).timestamp : 0n;
  return Promise.all(
    channels.map(async (c) => {
      const phase = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [c.sessionId] });
      const latest = store.latestTicket(c.sessionId);
      const paid = latest?.ticket.cumulativeAmount ?? 0n;
      const closing = store.getClosing(c.sessionId);
      const commit = store.latestCommit(c.sessionId, c.role === "provider" ? "payer" : "provider") ?? store.latestCommit(c.sessionId, c.role);
      const open = phase === 1;
      return {
        sessionId: c.sessionId,
        role: c.role,
        status: c.status,
        // A channel the store knows that the escrow no longer holds has been paid out.
        phase: phase === 0 ? "Settled" : (CHANNEL_PHASES[phase] ?? "None"),
        counterparty: c.role === "provider" ? c.ref.terms.payer : c.ref.terms.provider,
        deposit: c.deposit.toString(),
        paid: paid.toString(),
        remaining: (c.deposit - paid).toString(),
        claimable: (phase === 0 || c.status === "settled" ? 0n : closing && !open ? closing.state.amount : paid).toString(),
        seq: (latest?.ticket.seq ?? 0n).toString(),
        receipts: store.receiptCount(c.sessionId),
        windowSecondsLeft: closing && !open && c.status !== "settled" ? Number(closing.finalizesAt > now ? closing.finalizesAt - now : 0n) : null,
        finalizesAt: closing ? closing.finalizesAt.toString() : null,
        latestRoot: commit
          ? { root: commit.commit.root, leafCount: commit.commit.leafCount.toString(), source: "signed commit" as const }
          : latest
            ? { root: latest.ticket.receiptRoot, leafCount: null, source: "ticket" as const }
            : null,
      };
    }),
  );
}

export type ReceiptView = { index: number; seq: string; amount: string; receiptHash: Hex; ticketHash: Hex; leaf: Hex; outputHash: Hex };

export function listReceipts(store: ChannelStore, sessionId: Hex, offset: number, limit: number): { total: number; receipts: ReceiptView[] } {
  const receipts: ReceiptView[] = [];
  let index = 0;
  for (const step of store.steps(sessionId)) {
    if (!step.receipt || !step.leaf) continue;
    if (index >= offset && receipts.length < limit) {
      receipts.push({
        index,
        seq: step.seq.toString(),
        amount: step.ticket.ticket.cumulativeAmount.toString(),
        receiptHash: sessionReceiptHash(step.receipt.receipt),
        ticketHash: paymentTicketHash(step.ticket.ticket),
        leaf: step.leaf,
        outputHash: step.receipt.receipt.outputHash,
      });
    }
    index++;
  }
  return { total: index, receipts };
}

/** Where the page starts reading events (the deployment block; default 0) and how large a page is. */
export type PageReading = { fromBlock?: bigint; maxBlockRange?: bigint; retry?: RetryOptions };

/** The contract's logs from the reading's first block to the head, in bounded pages with back-off. */
async function pagedLogs(publicClient: PublicClient, address: Address, reading: PageReading) {
  return getLogsPaged({ publicClient, address, fromBlock: reading.fromBlock ?? 0n, toBlock: await publicClient.getBlockNumber(), maxBlockRange: reading.maxBlockRange, retry: reading.retry });
}

/** The receipt root the chain recorded for a session (a settlement's, else the newest close or challenge). */
export async function onChainRoot(publicClient: PublicClient, escrow: Address, sessionId: Hex, fromBlock: bigint, reading: PageReading = {}) {
  const logs = parseEventLogs({ abi: gasEscrowAbi, logs: await pagedLogs(publicClient, escrow, { ...reading, fromBlock }) }).filter(
    (log) => "sessionId" in log.args && log.args.sessionId === sessionId,
  );
  let found: { root: Hex; event: string; seq: string; transactionHash: Hex; blockNumber: string } | null = null;
  for (const log of logs) {
    if (log.eventName === "ChannelSettled") {
      found = { root: log.args.receiptRoot, event: log.eventName, seq: log.args.finalSeq.toString(), transactionHash: log.transactionHash, blockNumber: log.blockNumber.toString() };
    } else if (log.eventName === "ChannelClosing" || log.eventName === "ChannelChallenged") {
      found = { root: log.args.receiptRoot, event: log.eventName, seq: log.args.seq.toString(), transactionHash: log.transactionHash, blockNumber: log.blockNumber.toString() };
    }
  }
  return found;
}

/*//////////////////////////////////////////////////////////////
                           GIGS AND CASES
//////////////////////////////////////////////////////////////*/

/** Records found in the records directory, by what they are. */
export type Records = {
  /** File name by package hash. */
  packages: Map<Hex, string>;
  /** Parsed resolution and its file name, by case id. */
  resolutions: Map<Hex, { file: string; resolution: Resolution; hash: Hex }>;
  files: Set<string>;
};

const RECORD_FILE = /^[A-Za-z0-9._-]{1,200}\.json$/;

/** Reads every `*.json` in `dir` that parses as a challenge package or a resolution; others are ignored. */
export function loadRecords(dir: string | undefined): Records {
  const records: Records = { packages: new Map(), resolutions: new Map(), files: new Set() };
  if (!dir || !existsSync(dir)) return records;
  for (const file of readdirSync(dir).sort()) {
    if (!RECORD_FILE.test(file)) continue;
    const full = path.join(dir, file);
    if (!statSync(full).isFile() || statSync(full).size > 16 * 1024 * 1024) continue;
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(full, "utf8"));
    } catch {
      continue;
    }
    try {
      const resolution = resolutionFromJson(json);
      records.resolutions.set(resolution.caseId.toLowerCase() as Hex, { file, resolution, hash: resolutionHash(resolution) });
      records.files.add(file);
      continue;
    } catch {
      // not a resolution
    }
    try {
      records.packages.set(packageHash(packageFromJson(json)).toLowerCase() as Hex, file);
      records.files.add(file);
    } catch {
      // neither
    }
  }
  return records;
}

/** Test names a Lane 1 check reports as failed ("3 of 12 tests failed: a, b, c"). */
export function failingTests(resolution: Resolution): string[] {
  const names: string[] = [];
  for (const check of resolution.objectiveChecks) {
    const match = /tests failed: (.*?)(?: \(|$)/.exec(check.detail ?? "");
    if (match) names.push(...match[1]!.split(", ").filter((n) => n.length > 0));
  }
  return [...new Set(names)];
}

export type CaseView = {
  caseId: Hex;
  kind: "gig" | "session";
  subjectId: Hex;
  status: string;
  lane: number;
  challenger: Address;
  respondent: Address;
  value: string;
  bond: string;
  packageHash: Hex;
  panels: { round: number; panel: Address[]; deadline: string }[];
  verdict: { round: number; verdict: string; refund: string; slash: string; resolutionHash: Hex; signers: Address[]; appealEndsAt: string } | null;
  appealSecondsLeft: number | null;
  resolved: {
    verdict: string;
    refunded: string;
    slashed: string;
    toChallenger: string;
    toRespondent: string;
    burned: string;
    arbitrationFees: string;
    fees: { arbitrator: Address; amount: string }[];
    transactionHash: Hex;
  } | null;
  /** Every balance change the resolution made, by party. */
  balanceChanges: { party: string; account: Address | null; change: string; what: string }[];
  failingTests: string[];
  checks: { name: string; status: boolean; detail: string | null }[];
  records: { package: string | null; resolution: string | null; upip: number };
};

export async function listCases(publicClient: PublicClient, disputeManager: Address, records: Records, reading: PageReading = {}): Promise<CaseView[]> {
  const logs = parseEventLogs({ abi: disputeManagerAbi, logs: await pagedLogs(publicClient, disputeManager, reading) });
  const now = (await publicClient.getBlock()).timestamp;
  const cases = new Map<Hex, CaseView>();
  for (const log of logs) {
    if (!("caseId" in log.args)) continue;
    const caseId = log.args.caseId as Hex;
    if (log.eventName === "CaseOpened") {
      const a = log.args;
      cases.set(caseId, {
        caseId,
        kind: a.kind === 1 ? "gig" : "session",
        subjectId: a.subjectId,
        status: "open",
        lane: a.lane,
        challenger: a.challenger,
        respondent: a.respondent,
        value: a.value.toString(),
        bond: a.bond.toString(),
        packageHash: a.packageHash,
        panels: [],
        verdict: null,
        appealSecondsLeft: null,
        resolved: null,
        balanceChanges: [],
        failingTests: [],
        checks: [],
        records: { package: null, resolution: null, upip: 0 },
      });
      continue;
    }
    const c = cases.get(caseId);
    if (!c) continue;
    if (log.eventName === "PanelDrawn") c.panels.push({ round: log.args.round, panel: [...log.args.panel], deadline: log.args.deadline.toString() });
    else if (log.eventName === "VerdictSubmitted") {
      const panel = c.panels.find((p) => p.round === log.args.round)?.panel ?? [];
      const mask = log.args.signedMask;
      c.verdict = {
        round: log.args.round,
        verdict: VERDICTS[log.args.verdict] ?? String(log.args.verdict),
        refund: log.args.refund.toString(),
        slash: log.args.slash.toString(),
        resolutionHash: log.args.resolutionHash,
        signers: panel.filter((_, i) => (mask >> i) & 1),
        appealEndsAt: log.args.appealEndsAt.toString(),
      };
    } else if (log.eventName === "CaseResolved") {
      const a = log.args;
      c.resolved = {
        verdict: VERDICTS[a.verdict] ?? String(a.verdict),
        refunded: a.refunded.toString(),
        slashed: a.slashed.toString(),
        toChallenger: a.toChallenger.toString(),
        toRespondent: a.toRespondent.toString(),
        burned: a.burned.toString(),
        arbitrationFees: a.arbitrationFees.toString(),
        fees: [],
        transactionHash: log.transactionHash,
      };
    } else if (log.eventName === "ArbitrationFeeEarned" && c.resolved) {
      c.resolved.fees.push({ arbitrator: getAddress(log.args.arbitrator), amount: log.args.amount.toString() });
    }
  }
  for (const c of cases.values()) {
    const stored = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [c.caseId] });
    c.status = CASE_STATUSES[stored.status] ?? String(stored.status);
    if (c.verdict && !c.resolved) c.appealSecondsLeft = Number(BigInt(c.verdict.appealEndsAt) > now ? BigInt(c.verdict.appealEndsAt) - now : 0n);
    if (c.resolved) {
      const r = c.resolved;
      c.balanceChanges.push(
        { party: "challenger", account: c.challenger, change: r.toChallenger, what: "bond back and remedy from the case" },
        { party: "respondent", account: c.respondent, change: r.toRespondent, what: "bond back from the case" },
        { party: c.kind === "gig" ? "client (refund from the gig escrow)" : "funder (refund from the channel)", account: null, change: r.refunded, what: "refunded from the subject" },
        { party: "respondent's SLA bond", account: c.respondent, change: `-${r.slashed}`, what: "slashed" },
        { party: "burn", account: "0x000000000000000000000000000000000000dEaD", change: r.burned, what: "burnt share" },
        ...r.fees.map((f) => ({ party: "arbitrator", account: f.arbitrator, change: f.amount, what: "fee for a coherent signature" })),
      );
    }
    const resolution = records.resolutions.get(c.caseId.toLowerCase() as Hex);
    if (resolution) {
      c.failingTests = failingTests(resolution.resolution);
      c.checks = resolution.resolution.objectiveChecks.map((k) => ({ name: k.name, status: k.status, detail: k.detail }));
      c.records.resolution = resolution.file;
      c.records.upip = resolution.resolution.replays.length;
    }
    c.records.package = records.packages.get(c.packageHash.toLowerCase() as Hex) ?? null;
  }
  return [...cases.values()];
}

export type GigRow = { gigId: string; status: string; client: Address; provider: Address; amount: string; asset: Address; windowEndsAt: string; cases: Hex[] };

export async function listGigs(publicClient: PublicClient, gigEscrow: Address, cases: CaseView[], reading: PageReading = {}): Promise<GigRow[]> {
  const funded = parseEventLogs({ abi: gigEscrowAbi, eventName: "GigFunded", logs: await pagedLogs(publicClient, gigEscrow, reading) });
  return Promise.all(
    funded.map(async (log) => {
      const gigId = BigInt(log.args.gigId);
      const view = await readGig({ publicClient, gigEscrow, gigId });
      const subject = `0x${gigId.toString(16).padStart(64, "0")}`;
      return {
        gigId: gigId.toString(),
        status: view.status,
        client: view.client,
        provider: view.provider,
        amount: view.amount.toString(),
        asset: view.asset,
        windowEndsAt: view.windowEndsAt.toString(),
        cases: cases.filter((c) => c.kind === "gig" && c.subjectId.toLowerCase() === subject).map((c) => c.caseId),
      };
    }),
  );
}

/** The resolution's UPIP record `i`, or undefined. */
export function upipRecord(records: Records, caseId: Hex, i: number): unknown {
  const resolution = records.resolutions.get(caseId.toLowerCase() as Hex);
  const record = resolution?.resolution.replays[i];
  return record === undefined ? undefined : JSON.parse(JSON.stringify(record));
}
