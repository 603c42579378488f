/**
 * Calls into the GasEscrow contract with viem — open, deposit, cooperative close, unilateral close,
 * challenge, finalize, session keys — each returning what the caller needs next (the session id, the
 * recorded closing state, the gas used) decoded from the receipt's events.
 */
import {
  erc20Abi,
  parseEventLogs,
  zeroAddress,
  zeroHash,
  type Account,
  type Address,
  type Chain,
  type Hash,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from "viem";

import { gasEscrowAbi } from "../abi/GasEscrow";
import { gasEscrowDomain, toCompactSignature, type GasEscrowDomain } from "./eip712";
import { BaseError } from "./errors";
import type { SettlementSummary } from "./summary";
import type { SignedPaymentTicket } from "./ticket";
import type { ChannelRef, ChannelTerms } from "./terms";

export { gasEscrowAbi };

export type Wallet = WalletClient<Transport, Chain, Account>;

/** A transaction the escrow reverted or that did not emit what it must have. */
export class EscrowTransactionError extends BaseError {
  override name = "EscrowTransactionError" as const;
}

export type TxResult = { hash: Hash; gasUsed: bigint; blockNumber: bigint };

export async function escrowDomain(publicClient: PublicClient, escrow: Address): Promise<GasEscrowDomain> {
  return gasEscrowDomain({ chainId: await publicClient.getChainId(), verifyingContract: escrow });
}

async function confirm(publicClient: PublicClient, hash: Hash) {
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success") throw new EscrowTransactionError(`Transaction ${hash} reverted.`);
  return receipt;
}

export type OpenChannelParameters = {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  terms: ChannelTerms;
  amount: bigint;
};

export type OpenChannelReturnType = TxResult & { ref: ChannelRef; sessionId: Hex; deposit: bigint };

/**
 * Opens and funds a channel; for an ERC-20 the escrow must already be approved for `amount`. The wallet
 * must be the funder named in the terms: the escrow lets nobody else open them (`NotTheFunder`), so that a
 * copy of the terms cannot take the session id first.
 */
export async function openChannel(parameters: OpenChannelParameters): Promise<OpenChannelReturnType> {
  const { wallet, publicClient, escrow, terms, amount } = parameters;
  if (wallet.account.address.toLowerCase() !== terms.funder.toLowerCase()) {
    throw new EscrowTransactionError(`Only the funder named in the terms (${terms.funder}) may open the channel, not ${wallet.account.address}.`);
  }
  const hash = await wallet.writeContract({
    address: escrow,
    abi: gasEscrowAbi,
    functionName: "open",
    args: [terms, amount],
    value: terms.asset === zeroAddress ? amount : 0n,
  });
  const receipt = await confirm(publicClient, hash);
  const [opened] = parseEventLogs({ abi: gasEscrowAbi, eventName: "ChannelOpened", logs: receipt.logs });
  if (!opened) throw new EscrowTransactionError(`Transaction ${hash} opened no channel.`);
  return {
    hash,
    gasUsed: receipt.gasUsed,
    blockNumber: receipt.blockNumber,
    sessionId: opened.args.sessionId,
    deposit: opened.args.deposit,
    ref: { terms, openedAt: opened.args.openedAt },
  };
}

/** Approves the escrow to pull `amount` of an ERC-20 from the wallet. */
export async function approveEscrow(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  token: Address;
  amount: bigint;
}): Promise<TxResult> {
  const { wallet, publicClient, escrow, token, amount } = parameters;
  const hash = await wallet.writeContract({ address: token, abi: erc20Abi, functionName: "approve", args: [escrow, amount] });
  const receipt = await confirm(publicClient, hash);
  return { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber };
}

/**
 * Tops up an open channel and returns what it holds now. `minReceived` (default 0: no guard) is the least
 * this top-up must credit; it guards the caller against a fee-on-transfer token, and nobody else's deposit
 * can make it fail.
 */
export async function depositToChannel(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  ref: ChannelRef;
  amount: bigint;
  minReceived?: bigint;
}): Promise<TxResult & { deposit: bigint }> {
  const { wallet, publicClient, escrow, ref, amount } = parameters;
  const minReceived = parameters.minReceived ?? 0n;
  const hash = await wallet.writeContract({
    address: escrow,
    abi: gasEscrowAbi,
    functionName: "deposit",
    args: [ref.terms, ref.openedAt, amount, minReceived],
    value: ref.terms.asset === zeroAddress ? amount : 0n,
  });
  const receipt = await confirm(publicClient, hash);
  const [deposited] = parseEventLogs({ abi: gasEscrowAbi, eventName: "Deposited", logs: receipt.logs });
  if (!deposited) throw new EscrowTransactionError(`Transaction ${hash} deposited nothing.`);
  return { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber, deposit: deposited.args.deposit };
}

export type SettledChannel = TxResult & {
  paidToProvider: bigint;
  refundedToFunder: bigint;
  fee: bigint;
  receiptRoot: Hex;
};

/** Mirrors `IGasEscrow.ClosingState`: what a unilateral close recorded (committed on-chain by a fingerprint). */
export type ClosingState = { deposit: bigint; seq: bigint; amount: bigint; receiptRoot: Hex; feeBps: number };

export type ClosingChannel = TxResult & { state: ClosingState; finalizesAt: bigint };

/** A ticket as the contract takes it; `undefined` closes with no ticket (payer or funder walking away). */
function ticketArg(signed: SignedPaymentTicket | undefined) {
  if (!signed) return { seq: 0n, cumulativeAmount: 0n, receiptRoot: zeroHash, sig: { r: zeroHash, vs: zeroHash } };
  const { ticket, signature } = signed;
  return { seq: ticket.seq, cumulativeAmount: ticket.cumulativeAmount, receiptRoot: ticket.receiptRoot, sig: toCompactSignature(signature) };
}

function settledFrom(hash: Hash, receipt: Awaited<ReturnType<typeof confirm>>): SettledChannel {
  const [settled] = parseEventLogs({ abi: gasEscrowAbi, eventName: "ChannelSettled", logs: receipt.logs });
  if (!settled) throw new EscrowTransactionError(`Transaction ${hash} settled no channel.`);
  return {
    hash,
    gasUsed: receipt.gasUsed,
    blockNumber: receipt.blockNumber,
    paidToProvider: settled.args.paidToProvider,
    refundedToFunder: settled.args.refundedToFunder,
    fee: settled.args.fee,
    receiptRoot: settled.args.receiptRoot,
  };
}

/** Submits a cooperative close with both parties' signatures over `summary`. */
export async function closeCooperative(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  ref: ChannelRef;
  summary: SettlementSummary;
  payerSignature: Hex;
  providerSignature: Hex;
}): Promise<SettledChannel> {
  const { wallet, publicClient, escrow, ref, summary, payerSignature, providerSignature } = parameters;
  if (summary.mode !== "Cooperative") {
    throw new EscrowTransactionError(`A cooperative close needs a Cooperative summary, not ${summary.mode}.`);
  }
  const hash = await wallet.writeContract({
    address: escrow,
    abi: gasEscrowAbi,
    functionName: "closeCooperative",
    args: [
      ref.terms,
      ref.openedAt,
      summary.finalSeq,
      summary.finalAmount,
      summary.finalReceiptRoot,
      toCompactSignature(payerSignature),
      toCompactSignature(providerSignature),
    ],
  });
  return settledFrom(hash, await confirm(publicClient, hash));
}

/**
 * Closes unilaterally with the newest ticket the caller holds (or none), opening the challenge window.
 * The returned state is what `challenge` and `finalize` must re-supply.
 */
export async function closeUnilateral(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  ref: ChannelRef;
  ticket: SignedPaymentTicket | undefined;
}): Promise<ClosingChannel> {
  const { wallet, publicClient, escrow, ref, ticket } = parameters;
  const hash = await wallet.writeContract({
    address: escrow,
    abi: gasEscrowAbi,
    functionName: "closeUnilateral",
    args: [ref.terms, ref.openedAt, ticketArg(ticket)],
  });
  const receipt = await confirm(publicClient, hash);
  const [closing] = parseEventLogs({ abi: gasEscrowAbi, eventName: "ChannelClosing", logs: receipt.logs });
  if (!closing) throw new EscrowTransactionError(`Transaction ${hash} closed no channel.`);
  const { seq, amount, receiptRoot, deposit, feeBps, finalizesAt } = closing.args;
  return {
    hash,
    gasUsed: receipt.gasUsed,
    blockNumber: receipt.blockNumber,
    state: { deposit, seq, amount, receiptRoot, feeBps },
    finalizesAt: BigInt(finalizesAt),
  };
}

/** Replaces the recorded ticket with a strictly newer one; the window does not move. */
export async function challengeClose(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  ref: ChannelRef;
  recorded: ClosingState;
  ticket: SignedPaymentTicket;
}): Promise<ClosingChannel> {
  const { wallet, publicClient, escrow, ref, recorded, ticket } = parameters;
  const hash = await wallet.writeContract({
    address: escrow,
    abi: gasEscrowAbi,
    functionName: "challenge",
    args: [ref.terms, ref.openedAt, recorded, ticketArg(ticket)],
  });
  const receipt = await confirm(publicClient, hash);
  const [challenged] = parseEventLogs({ abi: gasEscrowAbi, eventName: "ChannelChallenged", logs: receipt.logs });
  if (!challenged) throw new EscrowTransactionError(`Transaction ${hash} challenged nothing.`);
  const { seq, amount, receiptRoot, finalizesAt } = challenged.args;
  return {
    hash,
    gasUsed: receipt.gasUsed,
    blockNumber: receipt.blockNumber,
    state: { ...recorded, seq, amount, receiptRoot },
    finalizesAt: BigInt(finalizesAt),
  };
}

/** Pays out a closing channel after its window. */
export async function finalizeClose(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  ref: ChannelRef;
  recorded: ClosingState;
}): Promise<SettledChannel> {
  const { wallet, publicClient, escrow, ref, recorded } = parameters;
  const hash = await wallet.writeContract({
    address: escrow,
    abi: gasEscrowAbi,
    functionName: "finalize",
    args: [ref.terms, ref.openedAt, recorded],
  });
  return settledFrom(hash, await confirm(publicClient, hash));
}

/** What `account` can claim in `asset`: payouts the token refused earlier (a blocklisted recipient). */
export async function claimableOf(parameters: { publicClient: PublicClient; escrow: Address; asset: Address; account: Address }): Promise<bigint> {
  const { publicClient, escrow, asset, account } = parameters;
  return publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "claimableOf", args: [asset, account] });
}

/** Withdraws the wallet's claimable balance of `asset`; returns what was paid (0 if nothing was owed). */
export async function claimPayout(parameters: { wallet: Wallet; publicClient: PublicClient; escrow: Address; asset: Address }): Promise<TxResult & { amount: bigint }> {
  const { wallet, publicClient, escrow, asset } = parameters;
  const hash = await wallet.writeContract({ address: escrow, abi: gasEscrowAbi, functionName: "claim", args: [asset] });
  const receipt = await confirm(publicClient, hash);
  const [claimed] = parseEventLogs({ abi: gasEscrowAbi, eventName: "Claimed", logs: receipt.logs });
  return { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber, amount: claimed?.args.amount ?? 0n };
}
