/**
 * `ioi arbitrator serve` (issue 29 item 1, decision 0031): the imperative shell around `arbitrator-core.ts`.
 * Each tick it follows the DisputeManager's logs from where it left off (from the deployment block the first
 * time; paged, `getLogsPaged`), reads the cases it knows that are not over, asks the pure core what to do, and
 * does it: draws panels, fetches a case's evidence by hash and replays it (`arbitrate`), signs and posts its
 * signature (`postSignatures`), submits a verdict once posted signatures form a supermajority, finalises or
 * expires cases it sat on and claims its fees.
 *
 * Restart-safe: everything it must not forget lives in one JSON state file, replaced atomically (written
 * beside, fsynced, renamed). The signature for a (case, round) is written there BEFORE it is posted, and a
 * (case, round) with a stored signature is never judged again: whatever happens, one key signs at most one
 * resolution per case and round. Chain errors are logged and retried on the next tick (they are retryable);
 * a state file of another key, chain or DisputeManager stops the daemon (not retryable).
 */
import { closeSync, existsSync, openSync, readFileSync, unlinkSync, writeFileSync, writeSync } from "node:fs";

import {
  compactSignatureToSignature,
  getAddress,
  parseEventLogs,
  recoverAddress,
  serializeSignature,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from "viem";

import { disputeManagerAbi } from "../abi/DisputeManager";
import { providerRegistryAbi } from "../abi/ProviderRegistry";
import { claimFees, drawPanel, finalizeCase, loadCaseContext, recordedStateOf, submitVerdict, type Deployment } from "../../arbitration/runner/chain";
import { EvidenceUnavailableError, fetchPackage } from "../../arbitration/documents/evidence";
import { disputeManagerDomain, resolutionDigest, signResolution, FINAL_VERDICTS, VERDICT_CODES } from "../../arbitration/lanes/resolution";
import { arbitrate, judgeRuntimeHash, type ArbitrationRun } from "../../arbitration/runner/runner";
import type { ChallengePackage } from "../../arbitration/documents/package";
import { eventArg, getLogsPaged } from "../chain/logs";
import { checkedWrite, type Wallet } from "../chain/write";
import { toCompactSignature } from "../core/eip712";
import { BaseError } from "../core/errors";
import { bigintReplacer, bigintReviver, writeFileAtomic } from "./atomic-file";
import type { Alert } from "./alerts";
import { decide, roundKey, type Action, type CaseStatusName, type CaseView, type ChainView, type LocalView, type PostedSignature, type ResolutionMessage, type SignedRecord } from "./arbitrator-core";

const STATUS_NAMES: CaseStatusName[] = ["open", "open", "deliberating", "decided", "slow_path", "resolved", "expired"];
const VERDICT_NAMES = Object.fromEntries(FINAL_VERDICTS.map((v) => [VERDICT_CODES[v], v])) as Record<number, string>;

/** The state file does not belong to this daemon (another key, chain or DisputeManager), or is unreadable. Not retryable. */
export class ArbitratorStateError extends BaseError {
  override name = "ArbitratorStateError" as const;
  readonly retryable = false;
}

/** What one case's logs told the daemon. */
type CaseRecord = {
  asset: Address;
  packageHash: Hex;
  challenger: Address;
  respondent: Address;
  /** Published evidence URIs, the challenger's first. */
  uris: { party: Address; uri: string }[];
  /** Panels by round. */
  panels: Record<string, Address[]>;
  posted: PostedSignature[];
  /** Seen resolved or expired: no more reads. */
  over: boolean;
};

type StateFile = {
  version: 1;
  chainId: number;
  disputeManager: Address;
  arbitrator: Address;
  /** Last block whose logs were folded in. */
  cursor: string | null;
  cases: Record<string, CaseRecord>;
  signed: Record<string, SignedRecord>;
  /** Warnings standing when last saved, code → message (absent in files written before they were kept). */
  warnings?: Record<string, string>;
};

export type ArbitratorDaemonParameters = {
  publicClient: PublicClient;
  wallet: Wallet;
  deployment: Deployment;
  stateFile: string;
  /** One line per event (default: stderr). */
  log?: (line: string) => void;
  /** Between failed judging attempts of a round (default 15 s). */
  retryMs?: number;
  fetchTimeoutMs?: number;
  /** After a supermajority is posted, how long to wait for the rest of the panel before submitting (default 10 s). */
  graceMs?: number;
  maxBlockRange?: bigint;
  /** Logs are folded in only this many blocks behind the head (a reorg cannot take back what it acted on). */
  confirmations?: bigint;
  /**
   * Its standing warnings as alerts (issue 29 item 4), every time they change and once at start: a stake below the
   * registry's minimum is `bond_low`, a runtime pin other than the cases' is `runtime_pin`. The CLI hands them to an
   * `AlertEmitter` (log, Prometheus, webhook). Warnings are kept in the state file: a restart raises nothing anew.
   */
  onWarnings?: (arbitrator: Address, alerts: Alert[]) => Promise<void> | void;
  /** Fault injection for tests: called right after a signature is stored and before it is posted. */
  afterSignaturePersisted?: (record: SignedRecord) => void;
};

export class ArbitratorDaemon {
  readonly me: Address;
  private readonly account: LocalAccount;
  private state!: StateFile;
  private readonly attempts: LocalView["attempts"] = {};
  private readonly quorumSeenAtMs: LocalView["quorumSeenAtMs"] = {};
  private readonly warned = new Set<string>();
  private readonly log: (line: string) => void;
  private chainId = 0;
  /** RPC requests made (for the resource note). */
  rpcCalls = 0;
  private locked: string | undefined;

  constructor(private readonly p: ArbitratorDaemonParameters) {
    this.account = p.wallet.account as LocalAccount;
    this.me = getAddress(this.account.address);
    this.log = p.log ?? ((line) => process.stderr.write(`${new Date().toISOString()} arbitrator ${this.me.slice(0, 10)} ${line}\n`));
  }

  /**
   * Takes `<state>.lock` (this process's pid, created exclusively): one daemon per state file, so two processes
   * never judge from the same record. A lock whose process is gone (a SIGKILL) is taken over.
   */
  private lock(): void {
    const file = `${this.p.stateFile}.lock`;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(file, "wx", 0o600);
        writeSync(fd, String(process.pid));
        closeSync(fd);
        this.locked = file;
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        const pid = Number(readFileSync(file, "utf8").trim());
        if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
          throw new ArbitratorStateError(`Another daemon (pid ${pid}) is using ${this.p.stateFile}; stop it first, or give this one its own --state.`);
        }
        if (pid === process.pid) throw new ArbitratorStateError(`This process already runs a daemon on ${this.p.stateFile}.`);
        writeFileSync(file, String(process.pid)); // the holder is gone: take it over
        this.locked = file;
        return;
      }
    }
  }

  /** Releases the state file's lock (the state itself is always on disk). */
  close(): void {
    if (!this.locked) return;
    try {
      unlinkSync(this.locked);
    } catch {
      // already gone
    }
    this.locked = undefined;
  }

  /** Loads (or creates) the state file and checks it is this key's, on this chain and DisputeManager. */
  async open(): Promise<void> {
    this.lock();
    this.chainId = await this.p.publicClient.getChainId();
    const dm = getAddress(this.p.deployment.disputeManager);
    if (existsSync(this.p.stateFile)) {
      let loaded: StateFile;
      try {
        loaded = JSON.parse(readFileSync(this.p.stateFile, "utf8"), bigintReviver) as StateFile;
      } catch (cause) {
        throw new ArbitratorStateError(`The state file ${this.p.stateFile} is not readable JSON; move it away to start afresh.`, { cause });
      }
      if (loaded.version !== 1 || loaded.chainId !== this.chainId || !sameAddress(loaded.disputeManager, dm) || !sameAddress(loaded.arbitrator, this.me)) {
        throw new ArbitratorStateError(
          `The state file ${this.p.stateFile} belongs to ${loaded.arbitrator} on chain ${loaded.chainId} at ${loaded.disputeManager}, not ${this.me} on chain ${this.chainId} at ${dm}.`,
        );
      }
      this.state = loaded;
      for (const code of Object.keys(loaded.warnings ?? {})) this.warned.add(code);
      this.log(`resumed from ${this.p.stateFile}: ${Object.keys(loaded.signed).length} signature(s) kept, logs read to block ${loaded.cursor ?? "none"}`);
    } else {
      this.state = { version: 1, chainId: this.chainId, disputeManager: dm, arbitrator: this.me, cursor: null, cases: {}, signed: {} };
      this.save();
      this.log(`started afresh: following ${dm} from block ${this.p.deployment.deploymentBlock ?? 0n}`);
    }
    await this.p.onWarnings?.(this.me, this.warningAlerts());
  }

  /** The standing warnings as alerts (stable keys per kind and key). */
  warningAlerts(): Alert[] {
    return Object.entries(this.state.warnings ?? {}).map(([code, message]) => {
      const kind = code === "STAKE_BELOW_MINIMUM" ? ("bond_low" as const) : ("runtime_pin" as const);
      return { key: `${kind}:arbitrator:${this.me.toLowerCase()}`, kind, message: `arbitrator ${this.me}: ${message}`, details: { role: "arbitrator", account: this.me, code } };
    });
  }

  private save(): void {
    writeFileAtomic(this.p.stateFile, JSON.stringify(this.state, bigintReplacer, 1));
  }

  /** Signatures kept for (case, round) keys, as stored. */
  signedRecords(): Record<string, SignedRecord> {
    return { ...this.state.signed };
  }

  /** One pass: follow logs, read, decide, act. Returns the actions decided. */
  async tick(): Promise<Action[]> {
    const view = await this.readChain();
    const local: LocalView = { signed: this.state.signed, attempts: this.attempts, warned: [...this.warned], quorumSeenAtMs: this.quorumSeenAtMs };
    const actions = decide(view, local, Date.now(), { retryMs: this.p.retryMs ?? 15_000, graceMs: this.p.graceMs ?? 10_000 });
    for (const action of actions) {
      try {
        await this.act(action, view);
      } catch (error) {
        // A chain error, a race another member won (simulation refused), a node that went away: retried next tick.
        this.log(`${action.kind} ${"caseId" in action ? action.caseId.slice(0, 10) : ""} failed, retried next tick: ${firstLine(error)}`);
      }
    }
    return actions;
  }

  /** Ticks every `pollMs` until `signal` aborts. */
  async run(signal: AbortSignal, pollMs = 1_000): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.tick();
      } catch (error) {
        if (error instanceof ArbitratorStateError) throw error;
        this.log(`tick failed, retried: ${firstLine(error)}`);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, pollMs);
        signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
      });
    }
  }

  private async read<T>(call: () => Promise<T>): Promise<T> {
    this.rpcCalls++;
    return call();
  }

  private async follow(head: bigint): Promise<void> {
    const from = this.state.cursor === null ? (this.p.deployment.deploymentBlock ?? 0n) : BigInt(this.state.cursor) + 1n;
    if (from > head) return;
    const domain = disputeManagerDomain(BigInt(this.chainId), getAddress(this.p.deployment.disputeManager));
    await getLogsPaged({
      publicClient: this.p.publicClient,
      address: this.p.deployment.disputeManager,
      fromBlock: from,
      toBlock: head,
      ...(this.p.maxBlockRange ? { maxBlockRange: this.p.maxBlockRange } : {}),
      onPage: async ({ toBlock, logs }) => {
        this.rpcCalls++;
        for (const log of parseEventLogs({ abi: disputeManagerAbi, logs })) {
          const id = eventArg<Hex>(log, "caseId")?.toLowerCase();
          if (log.eventName === "CaseOpened") {
            const a = log.args;
            const stored = await this.read(() => this.p.publicClient.readContract({ address: this.p.deployment.disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [a.caseId] }));
            this.state.cases[id!] = { asset: getAddress(stored.asset), packageHash: a.packageHash, challenger: getAddress(a.challenger), respondent: getAddress(a.respondent), uris: [], panels: {}, posted: [], over: false };
            continue;
          }
          const record = id ? this.state.cases[id] : undefined;
          if (!record) continue;
          if (log.eventName === "EvidencePublished") {
            const entry = { party: getAddress(log.args.party), uri: log.args.uri };
            if (sameAddress(entry.party, record.challenger)) record.uris.unshift(entry);
            else record.uris.push(entry);
          } else if (log.eventName === "PanelDrawn") {
            record.panels[String(log.args.round)] = log.args.panel.map((m) => getAddress(m));
            if (log.args.panel.some((m) => sameAddress(m, this.me))) this.log(`seated on case ${id!.slice(0, 10)} round ${log.args.round} (decide by ${new Date(Number(log.args.deadline) * 1000).toISOString()})`);
          } else if (log.eventName === "SignaturesPosted") {
            const r = log.args.resolution;
            const message: ResolutionMessage = { caseId: r.caseId, verdict: r.verdict, refund: r.refund, slash: r.slash, resolutionHash: r.resolutionHash };
            const digest = resolutionDigest(domain, message as never);
            for (const s of log.args.signatures) {
              const signature = serializeSignature(compactSignatureToSignature({ r: s.r, yParityAndS: s.vs }));
              const signer = getAddress(await recoverAddress({ hash: digest, signature }));
              record.posted.push({ round: log.args.round, signer, digest, message, signature });
            }
          } else if (log.eventName === "CaseResolved" || log.eventName === "CaseExpired") {
            record.over = true;
          }
        }
        this.state.cursor = toBlock.toString();
      },
    });
    this.save();
  }

  private async readChain(): Promise<ChainView> {
    const pc = this.p.publicClient;
    const dm = this.p.deployment.disputeManager;
    const registry = this.p.deployment.registry;
    const head = await this.read(() => pc.getBlockNumber({ cacheTime: 0 })); // never viem's cached head
    const block = await this.read(() => pc.getBlock({ blockNumber: head }));
    const confirmed = head - (this.p.confirmations ?? 0n);
    if (confirmed >= 0n) await this.follow(confirmed);
    const cases: CaseView[] = [];
    const assets = new Set<Address>();
    for (const [id, record] of Object.entries(this.state.cases)) {
      const sat = Object.values(record.panels).some((panel) => panel.some((m) => sameAddress(m, this.me)));
      if (sat) assets.add(record.asset);
      if (record.over) continue;
      const caseId = id as Hex;
      const c = await this.read(() => pc.readContract({ address: dm, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] }));
      const status = STATUS_NAMES[c.status] ?? "open";
      if (status === "resolved" || status === "expired") {
        record.over = true;
        continue;
      }
      const round = await this.read(() => pc.readContract({ address: dm, abi: disputeManagerAbi, functionName: "roundOf", args: [caseId, c.round] }));
      cases.push({
        caseId,
        status,
        round: c.round,
        deadline: BigInt(c.deadline),
        respondBy: BigInt(c.respondBy),
        contested: c.respondentBond > 0n,
        asset: record.asset,
        drawTicket: round.drawTicket,
        panel: record.panels[String(c.round)] ?? [],
        sat,
        posted: record.posted.filter((p) => p.round === c.round),
      });
    }
    const claimable: ChainView["claimable"] = [];
    for (const asset of assets) {
      claimable.push({ asset, amount: await this.read(() => pc.readContract({ address: dm, abi: disputeManagerAbi, functionName: "claimable", args: [asset, this.me] })) });
    }
    const bond = await this.read(() => pc.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondOf", args: [1, this.me] }));
    const minStake = await this.read(() => pc.readContract({ address: registry, abi: providerRegistryAbi, functionName: "minArbitratorStake" }));
    const record = await this.read(() => pc.readContract({ address: registry, abi: providerRegistryAbi, functionName: "arbitratorOf", args: [this.me] }));
    const params = await this.read(() => pc.readContract({ address: dm, abi: disputeManagerAbi, functionName: "params" }));
    return {
      me: this.me,
      head,
      now: block.timestamp,
      cases,
      claimable,
      stake: bond.active,
      minStake,
      followedTo: this.state.cursor === null ? -1n : BigInt(this.state.cursor),
      runtime: judgeRuntimeHash(),
      pinnedRuntime: record.judgeRuntimeHash,
      requiredRuntime: params.judgeRuntimeHash,
    };
  }

  private async act(action: Action, view: ChainView): Promise<void> {
    const { publicClient, wallet, deployment } = this.p;
    switch (action.kind) {
      case "warn":
        this.warned.add(action.code);
        this.state.warnings = { ...this.state.warnings, [action.code]: action.message };
        this.save();
        this.log(`WARNING ${action.code}: ${action.message}`);
        await this.p.onWarnings?.(this.me, this.warningAlerts());
        return;
      case "note_quorum":
        this.quorumSeenAtMs[action.key] = Date.now();
        return;
      case "clear_warning": {
        this.warned.delete(action.code);
        const { [action.code]: _cleared, ...rest } = this.state.warnings ?? {};
        this.state.warnings = rest;
        this.save();
        this.log(`cleared ${action.code}`);
        await this.p.onWarnings?.(this.me, this.warningAlerts());
        return;
      }
      case "draw": {
        const drawn = await drawPanel({ wallet, publicClient, disputeManager: deployment.disputeManager, caseId: action.caseId });
        this.log(`drawPanel on case ${action.caseId.slice(0, 10)}: ${drawn.outcome}${drawn.outcome === "drawn" ? ` ${drawn.panel.length} members` : ""}`);
        return;
      }
      case "judge":
        return this.judge(action.caseId, action.round);
      case "post":
        return this.post(action.record);
      case "submit": {
        const submitted = await submitVerdict({ wallet, publicClient, deployment, message: action.message as never, signatures: action.signatures });
        this.log(`submitted the verdict of case ${action.caseId.slice(0, 10)} round ${action.round} with ${action.signatures.length} posted signatures: ${submitted.outcome}`);
        return;
      }
      case "finalize": {
        const done = await finalizeCase({ wallet, publicClient, deployment, caseId: action.caseId });
        this.log(`finalised case ${action.caseId.slice(0, 10)}: refund ${done.refunded}, slash ${done.slashed}, fees to ${done.fees.length} signers`);
        return;
      }
      case "expire": {
        const recorded = await recordedStateOf(publicClient, deployment, action.caseId);
        await checkedWrite({ publicClient, wallet, address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "expire", args: [action.caseId, recorded], what: "DisputeManager.expire" });
        this.log(`expired case ${action.caseId.slice(0, 10)} past its deadline`);
        return;
      }
      case "claim": {
        const claimed = await claimFees({ wallet, publicClient, disputeManager: deployment.disputeManager, asset: action.asset });
        this.log(`claimed ${claimed.amount} of ${action.asset === "0x0000000000000000000000000000000000000000" ? "ETH" : action.asset}`);
        return;
      }
    }
    void view;
  }

  /** Fetches and verifies the evidence, replays the case and, unless the run abstains, signs, stores, posts. */
  private async judge(caseId: Hex, round: number): Promise<void> {
    const key = roundKey(caseId, round);
    if (this.state.signed[key]) return; // never a second resolution for one (case, round)
    const record = this.state.cases[caseId.toLowerCase()];
    if (!record) return;
    const failed = (reason: string) => {
      this.attempts[key] = { atMs: Date.now(), reason };
      this.log(`abstained on case ${caseId.slice(0, 10)} round ${round} (nothing signed; retried later): ${reason}`);
    };
    let pkg: ChallengePackage | undefined;
    const reasons: string[] = [];
    for (const { uri } of record.uris) {
      try {
        pkg = (await fetchPackage({ uri, packageHash: record.packageHash, ...(this.p.fetchTimeoutMs ? { timeoutMs: this.p.fetchTimeoutMs } : {}) })).pkg;
        break;
      } catch (error) {
        if (!(error instanceof EvidenceUnavailableError)) throw error;
        reasons.push(error.shortMessage);
      }
    }
    if (!pkg) return failed(record.uris.length ? `EVIDENCE_UNAVAILABLE: ${reasons.join("; ")}` : "EVIDENCE_UNAVAILABLE: no party published a URI");
    const ctx = await loadCaseContext(this.p.publicClient, this.p.deployment, caseId, pkg);
    const run: ArbitrationRun = await arbitrate({ pkg, ctx, actor: this.me });
    if (run.state === "abstain") return failed(`ABSTAIN: ${run.resolution.aggregate.reasonCodes.join(",") || "host fault"}`);
    if (this.state.signed[key]) return;
    const domain = disputeManagerDomain(BigInt(this.chainId), getAddress(this.p.deployment.disputeManager));
    const signature = await signResolution(this.account, domain, run.message);
    const signed: SignedRecord = { caseId, round, digest: resolutionDigest(domain, run.message), message: run.message, signature, verdict: VERDICT_NAMES[run.message.verdict] ?? String(run.message.verdict) };
    // Stored before it leaves this process: a restart finds it and posts it, never signs anew.
    this.state.signed[key] = signed;
    this.save();
    this.log(`signed case ${caseId.slice(0, 10)} round ${round}: ${signed.verdict}, resolution ${run.resolutionHash.slice(0, 18)}…`);
    this.p.afterSignaturePersisted?.(signed);
    await this.post(signed);
  }

  private async post(record: SignedRecord): Promise<void> {
    const { publicClient, wallet, deployment } = this.p;
    const { receipt } = await checkedWrite({
      publicClient,
      wallet,
      address: deployment.disputeManager,
      abi: disputeManagerAbi,
      functionName: "postSignatures",
      args: [record.message as never, [toCompactSignature(record.signature)]],
      what: "DisputeManager.postSignatures",
    });
    // Not posted again until the logs have been read past this block without it (a reorg dropped it).
    const kept = this.state.signed[roundKey(record.caseId, record.round)];
    if (kept) {
      kept.postedInBlock = receipt.blockNumber;
      this.save();
    }
    this.log(`posted its signature for case ${record.caseId.slice(0, 10)} round ${record.round}`);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

function firstLine(error: unknown): string {
  if (error instanceof BaseError) return error.shortMessage;
  return (error instanceof Error ? error.message : String(error)).split("\n")[0]!;
}
