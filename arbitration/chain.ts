/**
 * The arbitration package's view of the chain: reads a case and its subject into a {@link CaseContext},
 * reconstructs a closing session's current recorded state from the escrow's events, opens cases, and
 * submits quorum resolutions — all through viem, each write confirmed and decoded.
 */
import {
  erc20Abi,
  getAddress,
  parseEventLogs,
  zeroAddress,
  zeroHash,
  type Address,
  type Hash,
  type Hex,
  type PublicClient,
} from "viem";

import DisputeManagerArtifact from "../artifacts/contracts/DisputeManager.sol/DisputeManager.json";
import type { DisputeManager$Type } from "../artifacts/contracts/DisputeManager.sol/DisputeManager";
import GigEscrowArtifact from "../artifacts/contracts/GigEscrow.sol/GigEscrow.json";
import type { GigEscrow$Type } from "../artifacts/contracts/GigEscrow.sol/GigEscrow";
import ProviderRegistryArtifact from "../artifacts/contracts/ProviderRegistry.sol/ProviderRegistry.json";
import type { ProviderRegistry$Type } from "../artifacts/contracts/ProviderRegistry.sol/ProviderRegistry";
import { toCompactSignature } from "../channel-client/eip712";
import { BaseError } from "../channel-client/errors";
import { gasEscrowAbi, type ClosingState, type TxResult, type Wallet } from "../channel-client/escrow";
import type { ChannelRef } from "../channel-client/terms";
import type { CaseContext, CaseOnChain } from "./context";
import type { ChallengePackage } from "./package";
import { readGigFunding } from "./pinned";
import type { ResolutionMessage } from "./resolution";

export const disputeManagerAbi = DisputeManagerArtifact.abi as DisputeManager$Type["abi"];
export const gigEscrowAbi = GigEscrowArtifact.abi as GigEscrow$Type["abi"];
export const providerRegistryAbi = ProviderRegistryArtifact.abi as ProviderRegistry$Type["abi"];

/** A dispute transaction reverted, or a case or subject is not what the caller assumed. */
export class DisputeTransactionError extends BaseError {
  override name = "DisputeTransactionError" as const;
}

const KINDS = ["none", "gig", "session"] as const;
const STATUSES = ["none", "open", "slow_path", "resolved", "expired"] as const;

export type Deployment = { disputeManager: Address; gasEscrow: Address; gigEscrow: Address; registry: Address };

async function confirm(publicClient: PublicClient, hash: Hash) {
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success") throw new DisputeTransactionError(`Transaction ${hash} reverted.`);
  return receipt;
}

/** The case as stored, with the leaf its `CaseOpened` event proved (zero for a gig). */
export async function readCase(publicClient: PublicClient, disputeManager: Address, caseId: Hex): Promise<CaseOnChain & { openedInBlock: bigint }> {
  const stored = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] });
  if (stored.status === 0) throw new DisputeTransactionError(`No case ${caseId} exists on ${disputeManager}.`);
  const [opened] = await publicClient.getContractEvents({
    address: disputeManager,
    abi: disputeManagerAbi,
    eventName: "CaseOpened",
    args: { caseId },
    fromBlock: 0n,
    strict: true,
  });
  if (!opened) throw new DisputeTransactionError(`Case ${caseId} has no CaseOpened event.`);
  return {
    chainId: BigInt(await publicClient.getChainId()),
    disputeManager: getAddress(disputeManager),
    caseId,
    kind: KINDS[stored.kind] as "gig" | "session",
    status: STATUSES[stored.status] as CaseOnChain["status"],
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

/** Everything Lane 0 compares the package with, read from the chain (state at the case's opening block where it matters). */
export async function loadCaseContext(
  publicClient: PublicClient,
  deployment: Deployment,
  caseId: Hex,
  pkg: ChallengePackage,
): Promise<CaseContext> {
  const onChain = await readCase(publicClient, deployment.disputeManager, caseId);
  const { openedInBlock, ...caseOnChain } = onChain;
  const params = await publicClient.readContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "params" });
  const provider = await publicClient.readContract({
    address: deployment.registry,
    abi: providerRegistryAbi,
    functionName: "providerOf",
    args: [onChain.respondent],
  });
  const respondentIdentity = provider.didHash === zeroHash ? null : { didHash: provider.didHash, mldsaPublicKeyHash: provider.mldsaPublicKeyHash };
  const base = { case: caseOnChain, judgeRuntimeHash: params.judgeRuntimeHash, respondentIdentity };

  if (onChain.kind === "gig") {
    const gigId = BigInt(onChain.subjectId);
    const gig = await publicClient.readContract({ address: deployment.gigEscrow, abi: gigEscrowAbi, functionName: "gigOf", args: [gigId] });
    const funding = await readGigFunding(publicClient, deployment.gigEscrow, gigId);
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
  if (channel?.kind === "channel") {
    const [matches] = await publicClient.readContract({
      address: deployment.gasEscrow,
      abi: gasEscrowAbi,
      functionName: "closingInfo",
      args: [onChain.subjectId, channel.content.closing],
      blockNumber: openedInBlock,
    });
    closingMatchedAtOpen = matches;
  }
  return {
    ...base,
    gig: null,
    session: { gasEscrow: getAddress(deployment.gasEscrow), sessionId: onChain.subjectId, closingMatchedAtOpen },
  };
}

/** A closing session's recorded state now, replayed from the escrow's ChannelClosing/Challenged/Released events. */
export async function currentClosingState(publicClient: PublicClient, gasEscrow: Address, sessionId: Hex): Promise<ClosingState> {
  const logs = await publicClient.getLogs({ address: gasEscrow, fromBlock: 0n });
  const events = parseEventLogs({ abi: gasEscrowAbi, logs }).filter(
    (e) => "sessionId" in e.args && (e.args as { sessionId: Hex }).sessionId === sessionId,
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
  const hash = await wallet.writeContract({ address: asset, abi: erc20Abi, functionName: "approve", args: [disputeManager, bond] });
  await confirm(publicClient, hash);
  return 0n;
}

function openedCase(receipt: Awaited<ReturnType<typeof confirm>>, hash: Hash): OpenedCase {
  const [event] = parseEventLogs({ abi: disputeManagerAbi, eventName: "CaseOpened", logs: receipt.logs });
  if (!event) throw new DisputeTransactionError(`Transaction ${hash} opened no case.`);
  return { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber, caseId: event.args.caseId, bond: event.args.bond };
}

/** The client disputes a delivered gig, paying the lane's bond in the gig's asset. */
export async function openGigCase(parameters: OpenCommon & { gigEscrow: Address; gigId: bigint }): Promise<OpenedCase> {
  const { wallet, publicClient, disputeManager, gigEscrow, gigId, lane, packageHash } = parameters;
  const gig = await publicClient.readContract({ address: gigEscrow, abi: gigEscrowAbi, functionName: "gigOf", args: [gigId] });
  const bond = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "bondFor", args: [gig.amount, lane] });
  const value = await payBond({ ...parameters, asset: gig.asset, bond });
  const hash = await wallet.writeContract({
    address: disputeManager,
    abi: disputeManagerAbi,
    functionName: "openGigCase",
    args: [gigId, lane, packageHash],
    value,
  });
  return openedCase(await confirm(publicClient, hash), hash);
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
  const bond = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "bondFor", args: [value, lane] });
  const ethValue = await payBond({ ...parameters, asset: ref.terms.asset, bond });
  const hash = await wallet.writeContract({
    address: disputeManager,
    abi: disputeManagerAbi,
    functionName: "openSessionCase",
    args: [ref.terms, ref.openedAt, recorded, receiptHash, ticketHash, proof, lane, packageHash],
    value: ethValue,
  });
  return openedCase(await confirm(publicClient, hash), hash);
}

export type ResolvedCase = TxResult & {
  outcome: "resolved" | "escalated";
  refunded: bigint;
  slashed: bigint;
  toChallenger: bigint;
  toRespondent: bigint;
  burned: bigint;
};

/**
 * Submits a resolution with the arbitrators' 65-byte signatures (sorted here by signer address, as the
 * contract requires). For a session case the current closing state is read from the chain.
 */
export async function submitResolution(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  deployment: Deployment;
  message: ResolutionMessage;
  signatures: { signer: Address; signature: Hex }[];
}): Promise<ResolvedCase> {
  const { wallet, publicClient, deployment, message } = parameters;
  const onChain = await readCase(publicClient, deployment.disputeManager, message.caseId);
  const recorded: ClosingState =
    onChain.kind === "session"
      ? await currentClosingState(publicClient, deployment.gasEscrow, onChain.subjectId)
      : { deposit: 0n, seq: 0n, amount: 0n, receiptRoot: zeroHash, feeBps: 0 };
  const sorted = [...parameters.signatures].sort((a, b) => (BigInt(a.signer) < BigInt(b.signer) ? -1 : 1));
  const hash = await wallet.writeContract({
    address: deployment.disputeManager,
    abi: disputeManagerAbi,
    functionName: "resolve",
    args: [message, recorded, sorted.map((s) => toCompactSignature(s.signature))],
  });
  const receipt = await confirm(publicClient, hash);
  const [resolved] = parseEventLogs({ abi: disputeManagerAbi, eventName: "CaseResolved", logs: receipt.logs });
  const base = { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber };
  if (!resolved) return { ...base, outcome: "escalated", refunded: 0n, slashed: 0n, toChallenger: 0n, toRespondent: 0n, burned: 0n };
  const { refunded, slashed, toChallenger, toRespondent, burned } = resolved.args;
  return { ...base, outcome: "resolved", refunded, slashed, toChallenger, toRespondent, burned };
}
