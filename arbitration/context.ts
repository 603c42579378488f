/**
 * What an arbitrator reads from the chain about a case before judging it. Built by `chain.ts` from the
 * DisputeManager, the escrows and the registry; plain data, so Lane 0 and the runner are pure functions of
 * (package, context, replays) and every arbitrator that reads the same chain reaches the same bytes.
 */
import type { Address, Hex } from "viem";

import type { ClosingState } from "../channel-client/escrow";

/** The case as the DisputeManager stores it. */
export type CaseOnChain = {
  chainId: bigint;
  disputeManager: Address;
  caseId: Hex;
  kind: "gig" | "session";
  status: "open" | "slow_path" | "resolved" | "expired";
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
  /** Whether the package's closing state was the session's recorded state in the block the case opened in. */
  closingMatchedAtOpen: boolean;
};

export type CaseContext = {
  case: CaseOnChain;
  gig: GigOnChain | null;
  session: SessionOnChain | null;
  /** The judge runtime the DisputeManager requires (what this runner's `JUDGE_RUNTIME_HASH` must equal). */
  judgeRuntimeHash: Hex;
  /** The respondent's identity anchor in the registry, if registered: checked against identity evidence. */
  respondentIdentity: { didHash: Hex; mldsaPublicKeyHash: Hex } | null;
};

export type { ClosingState };
