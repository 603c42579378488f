/**
 * The arbitrator daemon's decisions (STYLE 20): given what the chain says now and what this arbitrator keeps
 * locally, the actions to take. Pure: no chain, no clock, no file; `arbitrator-daemon.ts` reads the chain,
 * performs the actions and records their outcome.
 *
 * Policy (decision 0031):
 * - draw: any daemon calls `drawPanel` for any case waiting for a panel (requests randomness once the respond
 *   window is over or the case is contested; draws once the ticket's block is mined). Cheap, and without it no
 *   panel ever sits.
 * - judge: a member of the deliberating round with no signature of its own for (case, round) fetches the
 *   evidence, replays and signs; after a failed attempt (evidence unavailable, an abstaining run) it retries
 *   every `retryMs` until the round's deadline. It never judges a (case, round) it already signed.
 * - post: a signature it keeps but whose `SignaturesPosted` the chain does not show yet is posted (again).
 * - submit: once posted signatures of distinct members over one resolution reach the supermajority, any member
 *   that has had its own say submits them all, after every member posted or `graceMs` passed.
 * - finalize / expire: on cases it sat on, once their deadline has passed (its fee depends on it).
 * - claim: whatever the DisputeManager credits it, per asset.
 * - warn: stake below the registry's minimum, or a runtime pin other than the cases' judge runtime.
 */
import type { Address, Hex } from "viem";

export type CaseStatusName = "open" | "deliberating" | "decided" | "slow_path" | "resolved" | "expired";

/** What arbitrators sign, as the contract's Resolution struct. */
export type ResolutionMessage = { caseId: Hex; verdict: number; refund: bigint; slash: bigint; resolutionHash: Hex };

/** A signature the chain shows posted (`SignaturesPosted`), its signer recovered. */
export type PostedSignature = { round: number; signer: Address; digest: Hex; message: ResolutionMessage; signature: Hex };

/** One case as the chain shows it now. */
export type CaseView = {
  caseId: Hex;
  status: CaseStatusName;
  round: number;
  /** Unix seconds. */
  deadline: bigint;
  respondBy: bigint;
  contested: boolean;
  asset: Address;
  /** The current round's randomness ticket (0: none requested). */
  drawTicket: bigint;
  /** The current round's panel (empty before its draw). */
  panel: Address[];
  /** Whether this arbitrator sat on any round's panel of the case. */
  sat: boolean;
  /** Signatures posted for the current round. */
  posted: PostedSignature[];
};

export type ChainView = {
  me: Address;
  /** Latest block and its timestamp (unix seconds). */
  head: bigint;
  now: bigint;
  /** The last block whose logs the view includes (posted signatures are known up to here). */
  followedTo: bigint;
  cases: CaseView[];
  /** What the DisputeManager credits this arbitrator, per asset. */
  claimable: { asset: Address; amount: bigint }[];
  stake: bigint;
  minStake: bigint;
  /** The judge runtime this build runs, the one the registry pins for this key, the one the DisputeManager requires. */
  runtime: Hex;
  pinnedRuntime: Hex;
  requiredRuntime: Hex;
};

/** A signature this arbitrator made, kept (on disk, before posting) so it never signs another for the round. */
export type SignedRecord = {
  caseId: Hex;
  round: number;
  digest: Hex;
  message: ResolutionMessage;
  signature: Hex;
  verdict: string;
  /** The block its `postSignatures` landed in, once posted. */
  postedInBlock?: bigint;
};

export type LocalView = {
  /** By `roundKey(caseId, round)`. */
  signed: Record<string, SignedRecord>;
  /** The last failed judging attempt per round key: when (ms) and why. */
  attempts: Record<string, { atMs: number; reason: string }>;
  /** Warning codes currently raised (logged once until the condition clears). */
  warned: string[];
  /** When (ms) this daemon first saw a supermajority of posted signatures for a round key. */
  quorumSeenAtMs: Record<string, number>;
};

export type Action =
  | { kind: "draw"; caseId: Hex }
  | { kind: "judge"; caseId: Hex; round: number }
  | { kind: "post"; caseId: Hex; round: number; record: SignedRecord }
  | { kind: "submit"; caseId: Hex; round: number; message: ResolutionMessage; signatures: { signer: Address; signature: Hex }[] }
  | { kind: "finalize"; caseId: Hex }
  | { kind: "expire"; caseId: Hex }
  | { kind: "note_quorum"; key: string }
  | { kind: "claim"; asset: Address; amount: bigint }
  | { kind: "warn"; code: WarningCode; message: string }
  | { kind: "clear_warning"; code: WarningCode };

export type WarningCode = "STAKE_BELOW_MINIMUM" | "RUNTIME_PIN_MISMATCH";

export const roundKey = (caseId: Hex, round: number): string => `${caseId.toLowerCase()}:${round}`;

/** Two thirds of the panel, rounded up, as the contract counts it. */
export const supermajority = (size: number): number => Math.floor((2 * size + 2) / 3);

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The actions to take now, in order (warnings, then per case, then claims). */
export type DecideOptions = {
  /** Between failed judging attempts of a round. */
  retryMs: number;
  /** How long after a supermajority first shows to wait for the rest of the panel before submitting. */
  graceMs: number;
};

export function decide(chain: ChainView, local: LocalView, nowMs: number, options: DecideOptions): Action[] {
  const actions: Action[] = [];
  const warn = (code: WarningCode, raised: boolean, message: string) => {
    const was = local.warned.includes(code);
    if (raised && !was) actions.push({ kind: "warn", code, message });
    if (!raised && was) actions.push({ kind: "clear_warning", code });
  };
  warn("STAKE_BELOW_MINIMUM", chain.stake < chain.minStake, `stake ${chain.stake} is below the registry's minimum ${chain.minStake}: this key is not drawn`);
  const pinMismatch = !same(chain.pinnedRuntime, chain.runtime) || (BigInt(chain.requiredRuntime) !== 0n && !same(chain.requiredRuntime, chain.runtime));
  warn(
    "RUNTIME_PIN_MISMATCH",
    pinMismatch,
    `this build runs judge runtime ${chain.runtime}; the registry pins ${chain.pinnedRuntime} for this key and the DisputeManager requires ${chain.requiredRuntime}`,
  );

  for (const c of chain.cases) actions.push(...decideCase(chain, local, c, nowMs, options));

  for (const { asset, amount } of chain.claimable) if (amount > 0n) actions.push({ kind: "claim", asset, amount });
  return actions;
}

function decideCase(chain: ChainView, local: LocalView, c: CaseView, nowMs: number, options: DecideOptions): Action[] {
  const past = chain.now > c.deadline;
  switch (c.status) {
    case "open": {
      if (past) return c.sat ? [{ kind: "expire", caseId: c.caseId }] : [];
      if (c.drawTicket === 0n) return c.contested || chain.now > c.respondBy ? [{ kind: "draw", caseId: c.caseId }] : [];
      // The ticket's block must be mined before the draw (a draw sent now lands in the next block).
      return c.drawTicket <= chain.head ? [{ kind: "draw", caseId: c.caseId }] : [];
    }
    case "deliberating": {
      const seated = c.panel.some((m) => same(m, chain.me));
      if (!seated) return [];
      if (past) return [{ kind: "expire", caseId: c.caseId }];
      const actions: Action[] = [];
      const key = roundKey(c.caseId, c.round);
      const mine = local.signed[key];
      if (mine) {
        const onChain = c.posted.some((p) => p.round === c.round && same(p.signer, chain.me) && same(p.digest, mine.digest));
        // Posted already but the logs are not read that far yet: wait, rather than post twice.
        const pending = mine.postedInBlock !== undefined && chain.followedTo < mine.postedInBlock;
        if (!onChain && !pending) actions.push({ kind: "post", caseId: c.caseId, round: c.round, record: mine });
      } else {
        const attempt = local.attempts[key];
        if (!attempt || nowMs >= attempt.atMs + options.retryMs) actions.push({ kind: "judge", caseId: c.caseId, round: c.round });
      }
      // Submit once a supermajority over one resolution is posted, every member has posted or the grace has
      // passed (a member whose signature is left out counts as absent), and this daemon has had its own say
      // (posted, or failed to judge): never with a view that misses the signature it is about to post.
      const quorum = quorumOf(c);
      if (quorum) {
        const seenAt = local.quorumSeenAtMs[key];
        if (seenAt === undefined) actions.push({ kind: "note_quorum", key });
        const everyone = quorum.signatures.length === c.panel.length;
        const ready = everyone || nowMs >= (seenAt ?? nowMs) + options.graceMs;
        const hadSay = c.posted.some((p) => same(p.signer, chain.me)) || local.attempts[key] !== undefined;
        if (ready && hadSay) actions.push({ kind: "submit", caseId: c.caseId, round: c.round, ...quorum });
      }
      return actions;
    }
    case "decided":
      return past && c.sat ? [{ kind: "finalize", caseId: c.caseId }] : [];
    case "slow_path":
      return past && c.sat ? [{ kind: "expire", caseId: c.caseId }] : [];
    default:
      return [];
  }
}

/** Posted signatures of distinct current-panel members over one resolution, if they reach the supermajority. */
export function quorumOf(c: CaseView): { message: ResolutionMessage; signatures: { signer: Address; signature: Hex }[] } | null {
  const needed = supermajority(c.panel.length);
  const byDigest = new Map<string, { message: ResolutionMessage; signers: Map<string, { signer: Address; signature: Hex }> }>();
  for (const p of c.posted) {
    if (p.round !== c.round || !c.panel.some((m) => same(m, p.signer))) continue;
    const group = byDigest.get(p.digest.toLowerCase()) ?? { message: p.message, signers: new Map() };
    group.signers.set(p.signer.toLowerCase(), { signer: p.signer, signature: p.signature });
    byDigest.set(p.digest.toLowerCase(), group);
  }
  for (const group of byDigest.values()) {
    if (group.signers.size >= needed) return { message: group.message, signatures: [...group.signers.values()] };
  }
  return null;
}
