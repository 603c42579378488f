/**
 * What `ioi ui` shows, read from the node's store and the chain (issue 16): channels with their figures,
 * a channel's receipts and leaves, the gigs and dispute cases the chain holds with the records (challenge
 * packages, resolutions, UPIP process records) found in a directory, and the bench results.
 *
 * Amounts are decimal strings (bigint in code), never JS numbers; each also goes out as a `Money` with its asset's
 * unit and the text the page shows (`./money.ts`, issue 28 item 10).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

import { parseEventLogs, type Address, type Hex, type PublicClient } from "viem";

import { disputeManagerAbi } from "../../arbitration/runner/chain";
import { CASE_STATUSES } from "../../arbitration/documents/context";
import { packageFromJson, packageHash } from "../../arbitration/documents/package";
import { resolutionFromJson, resolutionHash, type Resolution } from "../../arbitration/lanes/resolution";
import { eventArg, getLogsPaged, readPaged, type RetryOptions } from "../chain/logs";
import { providerRegistryAbi } from "../abi/ProviderRegistry";
import { CHANNEL_PHASES, gasEscrowAbi } from "../chain/escrow";
import { gigEscrowAbi, readGig } from "../chain/gig";
import { paymentTicketHash } from "../core/ticket";
import { sessionReceiptHash } from "../core/receipt";
import { ETH_UNIT, formatAmountAdaptive, type AssetUnit } from "../core/format";
import type { ChannelStore } from "../store/store";
import { STREAM_RECORD_SCHEMA, type StreamRecord } from "../node/flow-controller";
import { StreamJournal } from "../node/stream-journal";
import { streamRecordOfView, streamViewOf } from "../node/stream-view";
import { gigProviderOf, money, resolutionChanges, unitOf, verdictName, type BalanceChange, type GigProvider, type Money } from "./money";

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
  /** The channel's asset (zero: ETH) and the figures above as the page shows them, in that asset's unit. */
  asset: Address;
  money: { deposit: Money; paid: Money; remaining: Money; claimable: Money };
  /** What the settlement paid, from `ChannelSettled`: to the provider, to the treasury's fees, back to the funder. */
  settlement: { paidToProvider: Money; fee: Money; refundedToFunder: Money; transactionHash: Hex } | null;
};

/** Settlements are final: read once per escrow and session. */
const settlements = new Map<string, ChannelView["settlement"]>();

async function settlementOf(publicClient: PublicClient, escrow: Address, sessionId: Hex, fromBlock: bigint, asset: Address, unit: AssetUnit): Promise<ChannelView["settlement"]> {
  const key = `${escrow.toLowerCase()}:${sessionId}`;
  if (settlements.has(key)) return settlements.get(key)!;
  // Paged and bounded like every range query (public-chain-safe reading); stops at the first page that has it.
  const toBlock = await publicClient.getBlockNumber();
  const read = (from: bigint, to: bigint) =>
    publicClient.getContractEvents({ address: escrow, abi: gasEscrowAbi, eventName: "ChannelSettled", args: { sessionId }, fromBlock: from, toBlock: to, strict: true });
  const logs = await readPaged<Awaited<ReturnType<typeof read>>[number]>({ fromBlock, toBlock, done: (found) => found.length > 0 }, read);
  const log = logs[0];
  if (!log) return null;
  const found = {
    paidToProvider: money(log.args.paidToProvider, asset, unit),
    fee: money(log.args.fee, asset, unit),
    refundedToFunder: money(log.args.refundedToFunder, asset, unit),
    transactionHash: log.transactionHash,
  };
  settlements.set(key, found);
  return found;
}

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
      const asset = c.ref.terms.asset;
      const unit = await unitOf(publicClient, asset);
      // Settled (or gone from the escrow): nothing is left to claim, whatever the store's status says.
      const settled = phase === 0 || CHANNEL_PHASES[phase] === "Settled";
      const claimable = settled || c.status === "settled" ? 0n : closing && !open ? closing.state.amount : paid;
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
        claimable: claimable.toString(),
        seq: (latest?.ticket.seq ?? 0n).toString(),
        receipts: store.receiptCount(c.sessionId),
        windowSecondsLeft: closing && !open && c.status !== "settled" ? Number(closing.finalizesAt > now ? closing.finalizesAt - now : 0n) : null,
        finalizesAt: closing ? closing.finalizesAt.toString() : null,
        latestRoot: commit
          ? { root: commit.commit.root, leafCount: commit.commit.leafCount.toString(), source: "signed commit" as const }
          : latest
            ? { root: latest.ticket.receiptRoot, leafCount: null, source: "ticket" as const }
            : null,
        asset,
        money: { deposit: money(c.deposit, asset, unit), paid: money(paid, asset, unit), remaining: money(c.deposit - paid, asset, unit), claimable: money(claimable, asset, unit) },
        settlement: settled ? await settlementOf(publicClient, escrow, c.sessionId, c.ref.openedAt, asset, unit) : null,
      };
    }),
  );
}

export type ReceiptView = { index: number; seq: string; amount: string; amountText: string; receiptHash: Hex; ticketHash: Hex; leaf: Hex; outputHash: Hex };

/** A page of the channel's receipts; `unit` is the channel's asset's (ETH by default). */
export function listReceipts(store: ChannelStore, sessionId: Hex, offset: number, limit: number, unit: AssetUnit = ETH_UNIT): { total: number; receipts: ReceiptView[] } {
  const receipts: ReceiptView[] = [];
  let index = 0;
  for (const step of store.steps(sessionId)) {
    if (!step.receipt || !step.leaf) continue;
    if (index >= offset && receipts.length < limit) {
      receipts.push({
        index,
        seq: step.seq.toString(),
        amount: step.ticket.ticket.cumulativeAmount.toString(),
        amountText: formatAmountAdaptive(step.ticket.ticket.cumulativeAmount, unit),
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
    (log) => eventArg(log, "sessionId") === sessionId,
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
  /** Stream records (issue 32: tranches, proofs, samples, pauses) by session id. */
  streams: Map<Hex, { file: string; record: StreamRecord }>;
  files: Set<string>;
};

const RECORD_FILE = /^[A-Za-z0-9._-]{1,200}\.json$/;

/** A stream record as the Flow Controller writes it (`writeStreamRecord`); shape-checked, as it is only displayed. */
function isStreamRecord(json: unknown): json is StreamRecord {
  if (typeof json !== "object" || json === null) return false;
  const o = json as Partial<StreamRecord>;
  return o.schema === STREAM_RECORD_SCHEMA && typeof o.sessionId === "string" && /^0x[0-9a-fA-F]{64}$/.test(o.sessionId) && Array.isArray(o.events);
}

/** The streams in the records directory, newest session id order irrelevant: by file name. */
export function listStreams(records: Records): (StreamRecord & { file: string })[] {
  return [...records.streams.values()].sort((a, b) => (a.file < b.file ? -1 : 1)).map((s) => ({ ...s.record, file: s.file }));
}

/** The milestone streams (v4 channels) of the store that have a stream journal in `dir`, as stream records. */
export function storeStreams(store: ChannelStore, dir: string): Record<string, unknown>[] {
  return store.listChannels({ role: "payer" }).flatMap((c) => {
    if (c.pricing.version !== "4") return [];
    const journal = StreamJournal.existing(dir, c.sessionId);
    if (!journal) return [];
    const entries = journal.entries();
    const view = streamViewOf({ sessionId: c.sessionId, provider: c.ref.terms.provider, terms: c.pricing, steps: store.steps(c.sessionId), entries });
    return [{ ...streamRecordOfView(view, entries), file: null }];
  });
}

/** Reads every `*.json` in `dir` that parses as a challenge package, a resolution or a stream record; others are ignored. */
export function loadRecords(dir: string | undefined): Records {
  const records: Records = { packages: new Map(), resolutions: new Map(), streams: new Map(), files: new Set() };
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
    if (isStreamRecord(json)) {
      records.streams.set(json.sessionId.toLowerCase() as Hex, { file, record: json });
      records.files.add(file);
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
  /** The case's asset (its value, bonds, refund and fees) and the figures as the page shows them. */
  asset: Address;
  /** The registry's bond token (LGAS on devnets): what a slash is counted in. */
  bondToken: Address;
  money: { value: Money; bond: Money };
  panels: { round: number; panel: Address[]; deadline: string }[];
  /** Verdicts are named as the CLI names them: provider_fault, challenger_fault, no_fault, undecidable. */
  verdict: {
    round: number;
    verdict: string;
    refund: string;
    slash: string;
    money: { refund: Money; slash: Money };
    resolutionHash: Hex;
    signers: Address[];
    appealEndsAt: string;
  } | null;
  appealSecondsLeft: number | null;
  resolved: {
    verdict: string;
    refunded: string;
    slashed: string;
    toChallenger: string;
    toRespondent: string;
    burned: string;
    arbitrationFees: string;
    transactionHash: Hex;
    money: { refunded: Money; slashed: Money; toChallenger: Money; toRespondent: Money; burned: Money; arbitrationFees: Money };
  } | null;
  /** Every balance change the resolving transaction made, burns included, each in its own asset (`./money.ts`). */
  balanceChanges: BalanceChange[];
  failingTests: string[];
  checks: { name: string; status: boolean; detail: string | null }[];
  records: { package: string | null; resolution: string | null; upip: number };
};

export async function listCases(publicClient: PublicClient, disputeManager: Address, records: Records, reading: PageReading = {}): Promise<CaseView[]> {
  const logs = parseEventLogs({ abi: disputeManagerAbi, logs: await pagedLogs(publicClient, disputeManager, reading) });
  const now = (await publicClient.getBlock()).timestamp;
  const registry = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "registry" });
  const bondToken = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondToken" });
  const bondUnit = await unitOf(publicClient, bondToken);
  // Amounts are kept as bigint while the logs are read and given their units once the case's asset is known.
  type Raw = {
    view: CaseView;
    value: bigint;
    bond: bigint;
    verdict?: { round: number; code: number; refund: bigint; slash: bigint; resolutionHash: Hex; signers: Address[]; appealEndsAt: bigint };
    resolved?: { code: number; refunded: bigint; slashed: bigint; toChallenger: bigint; toRespondent: bigint; burned: bigint; fees: bigint; transactionHash: Hex };
  };
  const cases = new Map<Hex, Raw>();
  for (const log of logs) {
    const caseId = eventArg<Hex>(log, "caseId");
    if (caseId === undefined) continue;
    if (log.eventName === "CaseOpened") {
      const a = log.args;
      cases.set(caseId, {
        value: a.value,
        bond: a.bond,
        view: {
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
          asset: "0x0000000000000000000000000000000000000000",
          bondToken,
          money: { value: money(a.value, bondToken, bondUnit), bond: money(a.bond, bondToken, bondUnit) },
          panels: [],
          verdict: null,
          appealSecondsLeft: null,
          resolved: null,
          balanceChanges: [],
          failingTests: [],
          checks: [],
          records: { package: null, resolution: null, upip: 0 },
        },
      });
      continue;
    }
    const raw = cases.get(caseId);
    if (!raw) continue;
    if (log.eventName === "PanelDrawn") raw.view.panels.push({ round: log.args.round, panel: [...log.args.panel], deadline: log.args.deadline.toString() });
    else if (log.eventName === "VerdictSubmitted") {
      const panel = raw.view.panels.find((p) => p.round === log.args.round)?.panel ?? [];
      const mask = log.args.signedMask;
      raw.verdict = {
        round: log.args.round,
        code: log.args.verdict,
        refund: log.args.refund,
        slash: log.args.slash,
        resolutionHash: log.args.resolutionHash,
        signers: panel.filter((_, i) => (mask >> i) & 1),
        appealEndsAt: BigInt(log.args.appealEndsAt),
      };
    } else if (log.eventName === "CaseResolved") {
      const a = log.args;
      raw.resolved = { code: a.verdict, refunded: a.refunded, slashed: a.slashed, toChallenger: a.toChallenger, toRespondent: a.toRespondent, burned: a.burned, fees: a.arbitrationFees, transactionHash: log.transactionHash };
    }
  }
  for (const { view: c, value, bond, verdict, resolved } of cases.values()) {
    const stored = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [c.caseId] });
    const asset = stored.asset;
    const unit = await unitOf(publicClient, asset);
    c.asset = asset;
    c.money = { value: money(value, asset, unit), bond: money(bond, asset, unit) };
    c.status = CASE_STATUSES[stored.status] ?? String(stored.status);
    if (verdict) {
      c.verdict = {
        round: verdict.round,
        verdict: verdictName(verdict.code),
        refund: verdict.refund.toString(),
        slash: verdict.slash.toString(),
        money: { refund: money(verdict.refund, asset, unit), slash: money(verdict.slash, bondToken, bondUnit) },
        resolutionHash: verdict.resolutionHash,
        signers: verdict.signers,
        appealEndsAt: verdict.appealEndsAt.toString(),
      };
      if (!resolved) c.appealSecondsLeft = Number(verdict.appealEndsAt > now ? verdict.appealEndsAt - now : 0n);
    }
    if (resolved) {
      const r = resolved;
      c.resolved = {
        verdict: verdictName(r.code),
        refunded: r.refunded.toString(),
        slashed: r.slashed.toString(),
        toChallenger: r.toChallenger.toString(),
        toRespondent: r.toRespondent.toString(),
        burned: r.burned.toString(),
        arbitrationFees: r.fees.toString(),
        transactionHash: r.transactionHash,
        money: {
          refunded: money(r.refunded, asset, unit),
          slashed: money(r.slashed, bondToken, bondUnit),
          toChallenger: money(r.toChallenger, asset, unit),
          toRespondent: money(r.toRespondent, asset, unit),
          burned: money(r.burned, asset, unit),
          arbitrationFees: money(r.fees, asset, unit),
        },
      };
      c.balanceChanges = await resolutionChanges({
        publicClient,
        disputeManager,
        caseId: c.caseId,
        kind: c.kind,
        subjectId: c.subjectId,
        challenger: c.challenger,
        respondent: c.respondent,
        related: stored.related,
        asset,
        transactionHash: r.transactionHash,
      });
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
  return [...cases.values()].map((raw) => raw.view);
}

/**
 * `provider` is who the chain holds: null while an open gig waits for a taker (never the zero address), with its
 * standing — named at funding, tentative (took an open gig, not yet confirmed) or confirmed.
 */
export type GigRow = {
  gigId: string;
  status: string;
  client: Address;
  provider: Address | null;
  providerStanding: GigProvider["standing"];
  amount: string;
  asset: Address;
  money: { amount: Money };
  windowEndsAt: string;
  cases: Hex[];
};

export async function listGigs(publicClient: PublicClient, gigEscrow: Address, cases: CaseView[], reading: PageReading = {}): Promise<GigRow[]> {
  const funded = parseEventLogs({ abi: gigEscrowAbi, eventName: "GigFunded", logs: await pagedLogs(publicClient, gigEscrow, reading) });
  return Promise.all(
    funded.map(async (log) => {
      const gigId = BigInt(log.args.gigId);
      const view = await readGig({ publicClient, gigEscrow, gigId });
      const subject = `0x${gigId.toString(16).padStart(64, "0")}`;
      const provider = await gigProviderOf(publicClient, gigEscrow, gigId, log.args.provider, view.provider);
      return {
        gigId: gigId.toString(),
        status: view.status,
        client: view.client,
        provider: provider.address,
        providerStanding: provider.standing,
        amount: view.amount.toString(),
        asset: view.asset,
        money: { amount: money(view.amount, view.asset, await unitOf(publicClient, view.asset)) },
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
