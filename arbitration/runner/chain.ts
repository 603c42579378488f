/**
 * The arbitration package's view of the chain: reads a case and its subject into a {@link CaseContext},
 * reconstructs a closing session's current recorded state from the escrow's events, opens cases, draws panels,
 * submits a panel's verdict, appeals, finalises and claims fees — all through viem, each write confirmed and
 * decoded.
 */
import {
  erc20Abi,
  getAddress,
  parseEventLogs,
  zeroAddress,
  zeroHash,
  type Address,
  type Hash,
  type Abi,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
} from "viem";

import { disputeManagerAbi, gigEscrowAbi, providerRegistryAbi } from "../../channel-client/abi";
import { gasEscrowDomain, toCompactSignature } from "../../channel-client/core/eip712";
import { sessionKeyGrantDigest } from "../../channel-client/core/session-key";
import { eventArg, getLogsPaged } from "../../channel-client/chain/logs";
import { checkedWrite } from "../../channel-client/chain/write";
import { BaseError } from "../../channel-client/core/errors";
import { gasEscrowAbi, type ClosingState, type TxResult, type Wallet } from "../../channel-client/chain/escrow";
import type { ChannelRef } from "../../channel-client/core/terms";
import { CASE_STATUSES, slashCapOf, type CaseContext, type CaseOnChain } from "../documents/context";
import type { ChallengePackage } from "../documents/package";
import { readGigFunding } from "../lanes/pinned";
import type { ResolutionMessage } from "../lanes/resolution";

export { disputeManagerAbi, gigEscrowAbi, providerRegistryAbi };

/** A dispute transaction reverted, or a case or subject is not what the caller assumed. */
export class DisputeTransactionError extends BaseError {
  override name = "DisputeTransactionError" as const;
}

const KINDS = ["none", "gig", "session"] as const;

/** `IGasEscrow.Phase.Settled`: a cooperatively settled channel (its word stays for good). */
const PHASE_SETTLED = 5;

export type Deployment = {
  disputeManager: Address;
  gasEscrow: Address;
  gigEscrow: Address;
  registry: Address;
  /** The first block holding these contracts: event scans start there (default 0). */
  deploymentBlock?: bigint;
};

/** One write, checked before it is sent (chain, code, funds, simulation: see `checkedWrite`). */
async function send(
  wallet: Wallet,
  publicClient: PublicClient,
  call: { address: Address; abi: Abi; functionName: string; args: readonly unknown[]; value?: bigint; what: string },
): Promise<{ hash: Hash; receipt: TransactionReceipt }> {
  return checkedWrite({ publicClient, wallet, address: call.address, abi: call.abi, functionName: call.functionName as never, args: call.args as never, value: call.value ?? 0n, what: call.what });
}

/** The case as stored, with the leaf its `CaseOpened` event proved (zero for a gig). */
export async function readCase(publicClient: PublicClient, disputeManager: Address, caseId: Hex, fromBlock = 0n): Promise<CaseOnChain & { openedInBlock: bigint }> {
  const stored = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] });
  if (stored.status === 0) throw new DisputeTransactionError(`No case ${caseId} exists on ${disputeManager}.`);
  // From the deployment block, in bounded pages with back-off (decision 0019).
  const logs = await getLogsPaged({ publicClient, address: disputeManager, fromBlock, toBlock: await publicClient.getBlockNumber() });
  const [opened] = parseEventLogs({ abi: disputeManagerAbi, eventName: "CaseOpened", logs, strict: true }).filter((e) => e.args.caseId === caseId);
  if (!opened) throw new DisputeTransactionError(`Case ${caseId} has no CaseOpened event.`);
  return {
    chainId: BigInt(await publicClient.getChainId()),
    disputeManager: getAddress(disputeManager),
    caseId,
    kind: KINDS[stored.kind] as "gig" | "session",
    status: CASE_STATUSES[stored.status] as CaseOnChain["status"],
    subjectId: stored.subjectId,
    challenger: stored.challenger,
    respondent: stored.respondent,
    asset: stored.asset,
    value: stored.value,
    lane: stored.lane,
    packageHash: stored.packageHash,
    leaf: opened.args.leaf,
    openedInBlock: opened.blockNumber,
  };
}

/**
 * A payer that is a contract wallet (decision 0035): Lane 0 takes its approvals from the escrow's record, read here
 * at the block the case opened in — whether the channel's payer held code, and which of the package's wallet
 * grants the escrow had registered (`walletSessionKeyRegistered`). Undefined for a plain-key payer (or a package
 * without a channel).
 */
export async function readWalletPayer(parameters: {
  publicClient: PublicClient;
  gasEscrow: Address;
  chainId: bigint;
  sessionId: Hex;
  pkg: ChallengePackage;
  blockNumber: bigint;
}): Promise<{ payerIsContract: true; registeredWalletGrants: Hex[] } | undefined> {
  const { publicClient, gasEscrow, chainId, sessionId, pkg, blockNumber } = parameters;
  const channel = pkg.evidence.find((item) => item.kind === "channel");
  if (channel?.kind !== "channel") return undefined;
  const code = await publicClient.getCode({ address: channel.content.ref.terms.payer, blockNumber });
  if (code === undefined || code === "0x") return undefined;
  const domain = gasEscrowDomain({ chainId: Number(chainId), verifyingContract: getAddress(gasEscrow) });
  const digests = new Set<Hex>();
  for (const item of pkg.evidence) {
    if (item.kind === "receipt" && item.content.sessionKey) digests.add(sessionKeyGrantDigest(domain, item.content.sessionKey.grant));
  }
  const registeredWalletGrants: Hex[] = [];
  for (const digest of [...digests].sort()) {
    const registered = await publicClient.readContract({ address: gasEscrow, abi: gasEscrowAbi, functionName: "walletSessionKeyRegistered", args: [sessionId, digest], blockNumber });
    if (registered) registeredWalletGrants.push(digest);
  }
  return { payerIsContract: true, registeredWalletGrants };
}

/** Everything Lane 0 compares the package with, read from the chain (state at the case's opening block where it matters). */
export async function loadCaseContext(
  publicClient: PublicClient,
  deployment: Deployment,
  caseId: Hex,
  pkg: ChallengePackage,
): Promise<CaseContext> {
  const onChain = await readCase(publicClient, deployment.disputeManager, caseId, deployment.deploymentBlock);
  const { openedInBlock, ...caseOnChain } = onChain;
  // The rules the case opened under (fixed per case, decision 0014), not whatever governance set since.
  const params = await publicClient.readContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "caseParams", args: [caseId] });
  const provider = await publicClient.readContract({
    address: deployment.registry,
    abi: providerRegistryAbi,
    functionName: "providerOf",
    args: [onChain.respondent],
  });
  const respondentIdentity = provider.didHash === zeroHash ? null : { didHash: provider.didHash, mldsaPublicKeyHash: provider.mldsaPublicKeyHash };
  // The contract refuses a slash above this cap, so a verdict asking for more (an ICS or terms penalty larger
  // than governance allows) is capped here rather than signed and reverted.
  const { stakeRate } = await publicClient.readContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] });
  const slashCap = slashCapOf(onChain.value, stakeRate, params.slashCapBps);
  const base = { case: caseOnChain, judgeRuntimeHash: params.judgeRuntimeHash, respondentIdentity, slashCap };

  if (onChain.kind === "gig") {
    const gigId = BigInt(onChain.subjectId);
    const gig = await publicClient.readContract({ address: deployment.gigEscrow, abi: gigEscrowAbi, functionName: "gigOf", args: [gigId] });
    const funding = await readGigFunding(publicClient, deployment.gigEscrow, gigId, { fromBlock: deployment.deploymentBlock ?? 0n });
    return {
      ...base,
      gig: {
        gigEscrow: getAddress(deployment.gigEscrow),
        gigId,
        client: gig.client,
        provider: gig.provider,
        asset: gig.asset,
        amount: gig.amount,
        icsHash: gig.icsHash,
        deliverableHash: gig.deliverableHash,
        receiptRoot: gig.receiptRoot,
        ...funding,
      },
      session: null,
    };
  }
  // The root is read from the chain: was the package's closing state the recorded one when the case opened?
  const channel = pkg.evidence.find((item) => item.kind === "channel");
  let closingMatchedAtOpen = false;
  let settledAtOpen = false;
  let settledAt: bigint | undefined;
  if (channel?.kind === "channel") {
    const [matches] = await publicClient.readContract({
      address: deployment.gasEscrow,
      abi: gasEscrowAbi,
      functionName: "closingInfo",
      args: [onChain.subjectId, channel.content.closing],
      blockNumber: openedInBlock,
    });
    closingMatchedAtOpen = matches;
    if (!matches) {
      // A cooperatively settled session (issue 12): the package's state is the co-signed summary as a ClosingState.
      const [settled, at] = await publicClient.readContract({
        address: deployment.gasEscrow,
        abi: gasEscrowAbi,
        functionName: "settledInfo",
        args: [onChain.subjectId, channel.content.closing],
        blockNumber: openedInBlock,
      });
      closingMatchedAtOpen = settled;
      settledAtOpen = settled;
      if (settled) settledAt = BigInt(at);
    }
  }
  const wallet = channel?.kind === "channel" ? await readWalletPayer({ publicClient, gasEscrow: deployment.gasEscrow, chainId: onChain.chainId, sessionId: onChain.subjectId, pkg, blockNumber: openedInBlock }) : undefined;
  // The terms' own dispute window (decision 0026) is judged against the time of the block the case opened in.
  const caseOpenedAt = (await publicClient.getBlock({ blockNumber: openedInBlock })).timestamp;
  return {
    ...base,
    gig: null,
    session: {
      gasEscrow: getAddress(deployment.gasEscrow),
      sessionId: onChain.subjectId,
      closingMatchedAtOpen,
      settledAtOpen,
      ...(settledAt === undefined ? {} : { settledAt }),
      caseOpenedAt,
      ...wallet,
    },
  };
}

/**
 * A closing session's recorded state now, replayed from the escrow's ChannelClosing/Challenged/Released events;
 * for a cooperatively settled session, its summary as the ClosingState a settled-session case takes.
 */
export async function currentClosingState(publicClient: PublicClient, gasEscrow: Address, sessionId: Hex, fromBlock = 0n): Promise<ClosingState> {
  const logs = await getLogsPaged({ publicClient, address: gasEscrow, fromBlock, toBlock: await publicClient.getBlockNumber() });
  const events = parseEventLogs({ abi: gasEscrowAbi, logs }).filter(
    (e) => eventArg(e, "sessionId") === sessionId,
  );
  let state: ClosingState | undefined;
  for (const event of events) {
    if (event.eventName === "ChannelClosing") {
      const { deposit, seq, amount, receiptRoot, feeBps } = event.args;
      state = { deposit, seq, amount, receiptRoot, feeBps };
    } else if (event.eventName === "ChannelChallenged" && state) {
      state = { ...state, seq: event.args.seq, amount: event.args.amount, receiptRoot: event.args.receiptRoot };
    } else if (event.eventName === "ChannelReleased" && state) {
      state = { ...state, amount: event.args.amount };
    } else if (event.eventName === "ChannelSettled" && event.args.mode === 0) {
      // A cooperative settlement (issue 12): its summary as `IGasEscrow.settledState`. The summary's amount
      // never exceeds the deposit, so the provider's payout plus the fee is exactly the co-signed amount.
      const amount = event.args.paidToProvider + event.args.fee;
      state = { deposit: amount, seq: event.args.finalSeq, amount, receiptRoot: event.args.receiptRoot, feeBps: 0 };
    }
  }
  if (!state) throw new DisputeTransactionError(`Session ${sessionId} was never closed unilaterally on ${gasEscrow}.`);
  return state;
}

/** What an open-case call needs in common. */
type OpenCommon = { wallet: Wallet; publicClient: PublicClient; disputeManager: Address; lane: 0 | 1; packageHash: Hex };

export type OpenedCase = TxResult & { caseId: Hex; bond: bigint };

async function payBond(parameters: OpenCommon & { asset: Address; bond: bigint }): Promise<bigint> {
  const { wallet, publicClient, asset, bond, disputeManager } = parameters;
  if (asset === zeroAddress) return bond;
  await send(wallet, publicClient, { address: asset, abi: erc20Abi, functionName: "approve", args: [disputeManager, bond], what: "ERC-20.approve" });
  return 0n;
}

function openedCase({ receipt, hash }: { receipt: TransactionReceipt; hash: Hash }): OpenedCase {
  const [event] = parseEventLogs({ abi: disputeManagerAbi, eventName: "CaseOpened", logs: receipt.logs });
  if (!event) throw new DisputeTransactionError(`Transaction ${hash} opened no case.`);
  return { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber, caseId: event.args.caseId, bond: event.args.bond };
}

/** The client disputes a delivered gig, paying the lane's bond in the gig's asset. */
export async function openGigCase(parameters: OpenCommon & { gigEscrow: Address; gigId: bigint }): Promise<OpenedCase> {
  const { wallet, publicClient, disputeManager, gigEscrow, gigId, lane, packageHash } = parameters;
  const gig = await publicClient.readContract({ address: gigEscrow, abi: gigEscrowAbi, functionName: "gigOf", args: [gigId] });
  const bond = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "bondFor", args: [gig.asset, gig.amount, lane] });
  const value = await payBond({ ...parameters, asset: gig.asset, bond });
  return openedCase(
    await send(wallet, publicClient, { address: disputeManager, abi: disputeManagerAbi, functionName: "openGigCase", args: [gigId, lane, packageHash], value, what: "DisputeManager.openGigCase" }),
  );
}

/** The payer (or funder) disputes one receipt step of a closing session, proving its leaf on-chain. */
export async function openSessionCase(
  parameters: OpenCommon & {
    ref: ChannelRef;
    recorded: ClosingState;
    receiptHash: Hex;
    ticketHash: Hex;
    proof: Hex[];
  },
): Promise<OpenedCase> {
  const { wallet, publicClient, disputeManager, ref, recorded, receiptHash, ticketHash, proof, lane, packageHash } = parameters;
  const value = recorded.amount < recorded.deposit ? recorded.amount : recorded.deposit;
  const bond = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "bondFor", args: [ref.terms.asset, value, lane] });
  const ethValue = await payBond({ ...parameters, asset: ref.terms.asset, bond });
  return openedCase(
    await send(wallet, publicClient, {
      address: disputeManager,
      abi: disputeManagerAbi,
      functionName: "openSessionCase",
      args: [ref.terms, ref.openedAt, recorded, receiptHash, ticketHash, proof, lane, packageHash],
      value: ethValue,
      what: "DisputeManager.openSessionCase",
    }),
  );
}

/** The state `finalize`, `expire` and `resolveSlowPath` must be given: a session's recorded close, zeros for a gig. */
export async function recordedStateOf(publicClient: PublicClient, deployment: Deployment, caseId: Hex): Promise<ClosingState> {
  const onChain = await readCase(publicClient, deployment.disputeManager, caseId, deployment.deploymentBlock);
  const none: ClosingState = { deposit: 0n, seq: 0n, amount: 0n, receiptRoot: zeroHash, feeBps: 0 };
  if (onChain.kind !== "session") return none;
  // A cooperatively settled session's case takes its refund from the bond and ignores the state.
  const phase = await publicClient.readContract({ address: deployment.gasEscrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [onChain.subjectId] });
  if (phase === PHASE_SETTLED) return none;
  return currentClosingState(publicClient, deployment.gasEscrow, onChain.subjectId, deployment.deploymentBlock);
}

/** The panel of a case's current round, in ascending address order (empty before the draw). */
export async function currentPanel(publicClient: PublicClient, disputeManager: Address, caseId: Hex): Promise<{ round: number; panel: Address[] }> {
  const c = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] });
  const panel = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "panelOf", args: [caseId, c.round] });
  return { round: c.round, panel: [...panel].map((a) => getAddress(a)).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1)) };
}

/** Blocks still to be mined before a draw ticket's randomness can be used (a draw sent now lands in the next block). */
export async function blocksUntilReady(publicClient: PublicClient, ticket: bigint): Promise<bigint> {
  const head = await publicClient.getBlockNumber();
  return ticket > head ? ticket - head : 0n;
}

export type DrawResult = TxResult &
  (
    | { outcome: "requested"; round: number; ticket: bigint }
    | { outcome: "drawn"; round: number; panel: Address[]; deadline: bigint }
    | { outcome: "slow_path"; round: number; deadline: bigint }
  );

/**
 * One `drawPanel` call: the first after the respond window (uncontested) only requests randomness; once the
 * ticket's block is mined the next one draws the panel (or sends the case to the slow path when too few
 * arbitrators are eligible, or requests again when the randomness expired).
 */
export async function drawPanel(parameters: { wallet: Wallet; publicClient: PublicClient; disputeManager: Address; caseId: Hex }): Promise<DrawResult> {
  const { wallet, publicClient, disputeManager, caseId } = parameters;
  const { hash, receipt } = await send(wallet, publicClient, { address: disputeManager, abi: disputeManagerAbi, functionName: "drawPanel", args: [caseId], what: "DisputeManager.drawPanel" });
  const base = { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber };
  const logs = parseEventLogs({ abi: disputeManagerAbi, logs: receipt.logs });
  for (const log of logs) {
    if (log.eventName === "PanelDrawn") {
      const panel = [...log.args.panel].map((a) => getAddress(a)).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
      return { ...base, outcome: "drawn", round: log.args.round, panel, deadline: BigInt(log.args.deadline) };
    }
    if (log.eventName === "CaseToSlowPath") return { ...base, outcome: "slow_path", round: log.args.round, deadline: BigInt(log.args.deadline) };
  }
  const requested = logs.find((log) => log.eventName === "PanelRequested");
  if (requested && requested.eventName === "PanelRequested") return { ...base, outcome: "requested", round: requested.args.round, ticket: requested.args.ticket };
  throw new DisputeTransactionError(`Transaction ${hash} neither requested nor drew a panel for case ${caseId}.`);
}

export type SubmittedVerdict = TxResult & {
  outcome: "decided" | "slow_path";
  round: number;
  verdict: number;
  refund: bigint;
  slash: bigint;
  signedMask: number;
  /** Unix seconds when the appeal window closes (decided), or the slow path's deadline. */
  deadline: bigint;
};

/**
 * Submits a panel's verdict with its members' 65-byte signatures (sorted here by signer address, as the
 * contract requires). Anyone may send it; an undecidable verdict sends the case to the slow path.
 */
export async function submitVerdict(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  deployment: Deployment;
  message: ResolutionMessage;
  signatures: { signer: Address; signature: Hex }[];
}): Promise<SubmittedVerdict> {
  const { wallet, publicClient, deployment, message } = parameters;
  const sorted = [...parameters.signatures].sort((a, b) => (BigInt(a.signer) < BigInt(b.signer) ? -1 : 1));
  const args = [message, sorted.map((s) => toCompactSignature(s.signature))] as const;
  // Simulated first (checkedWrite), so a refusal names the contract's error before any gas is spent.
  const { hash, receipt } = await send(wallet, publicClient, { address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "submitVerdict", args, what: "DisputeManager.submitVerdict" });
  const base = { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber };
  const logs = parseEventLogs({ abi: disputeManagerAbi, logs: receipt.logs });
  // An undecidable verdict is recorded too (VerdictSubmitted) but sends the case to the slow path: check that first.
  const recorded = logs.find((log) => log.eventName === "VerdictSubmitted");
  const signedMask = recorded && recorded.eventName === "VerdictSubmitted" ? recorded.args.signedMask : 0;
  const slow = logs.find((log) => log.eventName === "CaseToSlowPath");
  if (slow && slow.eventName === "CaseToSlowPath") {
    return { ...base, outcome: "slow_path", round: slow.args.round, verdict: message.verdict, refund: 0n, slash: 0n, signedMask, deadline: BigInt(slow.args.deadline) };
  }
  if (recorded && recorded.eventName === "VerdictSubmitted") {
    const a = recorded.args;
    return { ...base, outcome: "decided", round: a.round, verdict: a.verdict, refund: a.refund, slash: a.slash, signedMask: a.signedMask, deadline: BigInt(a.appealEndsAt) };
  }
  throw new DisputeTransactionError(`Transaction ${hash} recorded no verdict for case ${message.caseId}.`);
}

export type AppealResult = TxResult & { round: number; bond: bigint; status: CaseOnChain["status"]; deadline: bigint };

/** A party appeals the standing verdict, posting `bondFor(asset, value, lane + round + 1)` (approved first for a token). */
export async function appealCase(parameters: { wallet: Wallet; publicClient: PublicClient; disputeManager: Address; caseId: Hex }): Promise<AppealResult> {
  const { wallet, publicClient, disputeManager, caseId } = parameters;
  const c = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] });
  const bond = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "bondFor", args: [c.asset, c.value, c.lane + c.round + 1] });
  const value = await payBond({ wallet, publicClient, disputeManager, asset: c.asset, bond, lane: 0, packageHash: zeroHash });
  const { hash, receipt } = await send(wallet, publicClient, { address: disputeManager, abi: disputeManagerAbi, functionName: "appeal", args: [caseId], value, what: "DisputeManager.appeal" });
  const [appealed] = parseEventLogs({ abi: disputeManagerAbi, eventName: "CaseAppealed", logs: receipt.logs });
  if (!appealed) throw new DisputeTransactionError(`Transaction ${hash} appealed no case.`);
  return {
    hash,
    gasUsed: receipt.gasUsed,
    blockNumber: receipt.blockNumber,
    round: appealed.args.round,
    bond: appealed.args.bond,
    status: CASE_STATUSES[appealed.args.status] as CaseOnChain["status"],
    deadline: BigInt(appealed.args.deadline),
  };
}

export type FinalizedCase = TxResult & {
  verdict: number;
  refunded: bigint;
  slashed: bigint;
  toChallenger: bigint;
  toRespondent: bigint;
  burned: bigint;
  arbitrationFees: bigint;
  /** Fee credited to each coherent signer, in the case's asset. */
  fees: { arbitrator: Address; amount: bigint }[];
};

/** Enforces the standing verdict once the appeal window has passed (anyone). */
export async function finalizeCase(parameters: { wallet: Wallet; publicClient: PublicClient; deployment: Deployment; caseId: Hex }): Promise<FinalizedCase> {
  const { wallet, publicClient, deployment, caseId } = parameters;
  const recorded = await recordedStateOf(publicClient, deployment, caseId);
  const { hash, receipt } = await send(wallet, publicClient, { address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "finalize", args: [caseId, recorded], what: "DisputeManager.finalize" });
  const [resolved] = parseEventLogs({ abi: disputeManagerAbi, eventName: "CaseResolved", logs: receipt.logs });
  if (!resolved) throw new DisputeTransactionError(`Transaction ${hash} finalised no case.`);
  const fees = parseEventLogs({ abi: disputeManagerAbi, eventName: "ArbitrationFeeEarned", logs: receipt.logs }).map((e) => ({
    arbitrator: getAddress(e.args.arbitrator),
    amount: e.args.amount,
  }));
  const a = resolved.args;
  return {
    hash,
    gasUsed: receipt.gasUsed,
    blockNumber: receipt.blockNumber,
    verdict: a.verdict,
    refunded: a.refunded,
    slashed: a.slashed,
    toChallenger: a.toChallenger,
    toRespondent: a.toRespondent,
    burned: a.burned,
    arbitrationFees: a.arbitrationFees,
    fees,
  };
}

/** Claims what the DisputeManager credited to the wallet in `asset` (arbitration fees, deferred payouts). */
export async function claimFees(parameters: { wallet: Wallet; publicClient: PublicClient; disputeManager: Address; asset: Address }): Promise<TxResult & { amount: bigint }> {
  const { wallet, publicClient, disputeManager, asset } = parameters;
  const { hash, receipt } = await send(wallet, publicClient, { address: disputeManager, abi: disputeManagerAbi, functionName: "claim", args: [asset], what: "DisputeManager.claim" });
  const [claimed] = parseEventLogs({ abi: disputeManagerAbi, eventName: "Claimed", logs: receipt.logs });
  if (!claimed) throw new DisputeTransactionError(`Transaction ${hash} claimed nothing.`);
  return { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber, amount: claimed.args.amount };
}
