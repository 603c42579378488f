/**
 * What an arbitrator reads from the chain about a case before judging it. Built by `chain.ts` from the
 * DisputeManager, the escrows and the registry; plain data, so Lane 0 and the runner are pure functions of
 * (package, context, replays) and every arbitrator that reads the same chain reaches the same bytes.
 */
import type { Address, Hex } from "viem";

import type { ClosingState } from "../../channel-client/chain/escrow";

/** `IDisputeManager.CaseStatus` by name, in the enum's order (index = the on-chain value). */
export const CASE_STATUSES = ["none", "open", "deliberating", "decided", "slow_path", "resolved", "expired"] as const;
export type CaseStatusName = Exclude<(typeof CASE_STATUSES)[number], "none">;

/** The case as the DisputeManager stores it. */
export type CaseOnChain = {
  chainId: bigint;
  disputeManager: Address;
  caseId: Hex;
  kind: "gig" | "session";
  status: CaseStatusName;
  subjectId: Hex;
  challenger: Address;
  respondent: Address;
  asset: Address;
  value: bigint;
  lane: number;
  packageHash: Hex;
  /** The receipt leaf the contract proved against the committed root when the case opened (zero for a gig). */
  leaf: Hex;
};

/** The gig a gig case is about, as the GigEscrow stores it. */
export type GigOnChain = {
  gigEscrow: Address;
  gigId: bigint;
  client: Address;
  provider: Address;
  asset: Address;
  amount: bigint;
  icsHash: Hex;
  deliverableHash: Hex;
  receiptRoot: Hex;
  /** Timestamp (seconds) of the block the gig was funded in: pins the clock and seed of its Lane 1 replays (`pinned.ts`). */
  fundedAt: bigint;
  /** The block its `GigFunded` event is in. */
  fundedInBlock: bigint;
};

/** The session a session case is about. */
export type SessionOnChain = {
  gasEscrow: Address;
  sessionId: Hex;
  /** Whether the package's closing state was the session's recorded state in the block the case opened in (or,
   * for a cooperatively settled session, its co-signed summary as `IGasEscrow.settledState`). */
  closingMatchedAtOpen: boolean;
  /** Whether that state was the co-signed summary of a cooperatively settled session (the escrow has paid out,
   * so a refund can only come from the provider's SLA bond). Absent: not known (treated as false). */
  settledAtOpen?: boolean;
  /** When the session settled cooperatively (unix seconds, `settledInfo`), if `settledAtOpen`; absent: not known. */
  settledAt?: bigint;
  /** The timestamp of the block the case was opened in; absent: not known. */
  caseOpenedAt?: bigint;
  /**
   * Whether the channel's payer held code (a contract wallet, decision 0035) in the block the case opened in;
   * absent: a plain key. A wallet's signatures are judged only through the escrow's record (Lane 0).
   */
  payerIsContract?: boolean;
  /** EIP-712 digests of the package's wallet session-key grants the escrow had registered by the case's block. */
  registeredWalletGrants?: Hex[];
};

export type CaseContext = {
  case: CaseOnChain;
  gig: GigOnChain | null;
  session: SessionOnChain | null;
  /** The judge runtime the DisputeManager requires (what this runner's `JUDGE_RUNTIME_HASH` must equal). */
  judgeRuntimeHash: Hex;
  /** The respondent's identity anchor in the registry, if registered: checked against identity evidence. */
  respondentIdentity: { didHash: Hex; mldsaPublicKeyHash: Hex } | null;
  /**
   * The largest SLA slash the DisputeManager accepts for this case ({@link slashCapOf}), in the registry's bond
   * token; null when unknown (then the ICS schedule alone bounds it and the contract refuses an excess).
   */
  slashCap?: bigint | null;
};

/**
 * The DisputeManager's slash cap for a case over `value` of an asset: the value in the bond token at the asset's
 * stake rate (bond-token units per 10^18 asset units), times `slashCapBps` — both roundings down, exactly as the
 * contract computes it.
 */
export function slashCapOf(value: bigint, stakeRate: bigint, slashCapBps: number): bigint {
  return (((value * stakeRate) / 10n ** 18n) * BigInt(slashCapBps)) / 10_000n;
}

export type { ClosingState };
