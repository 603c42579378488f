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
  type Address,
  type Hash,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
} from "viem";

import { gasEscrowAbi } from "../abi/GasEscrow";
import { gasEscrowDomain, toCompactSignature, type GasEscrowDomain } from "../core/eip712";
import { unitsOf } from "./revert";
import { checkedWrite, type Wallet } from "./write";
import { BaseError } from "../core/errors";
import type { SignedReceiptCommit } from "../core/receipt-commit";
import type { SettlementSummary } from "../core/summary";
import type { SignedPaymentTicket } from "../core/ticket";
import { sessionKeyGrantArg, type SessionKeyChainState, type SignedSessionKeyGrant } from "../core/session-key";
import type { ChannelRef, ChannelTerms } from "../core/terms";
import type { ClosingState } from "../core/summary";

/**
 * `IGasEscrow.Phase` by index. `Settled` is a cooperatively settled channel (its word stays, decision 0005);
 * `None` is a channel never opened or paid out by `finalize`.
 */
export const CHANNEL_PHASES = ["None", "Open", "Closing", "Finalizable", "Frozen", "Settled"] as const;
export type ChannelPhase = (typeof CHANNEL_PHASES)[number];

export { gasEscrowAbi };

export type { Wallet } from "./write";

/** A transaction the escrow reverted or that did not emit what it must have. */
export class EscrowTransactionError extends BaseError {
  override name = "EscrowTransactionError" as const;
}

export type TxResult = { hash: Hash; gasUsed: bigint; blockNumber: bigint };

export async function escrowDomain(publicClient: PublicClient, escrow: Address): Promise<GasEscrowDomain> {
  return gasEscrowDomain({ chainId: await publicClient.getChainId(), verifyingContract: escrow });
}

type EscrowWrite =
  | "open"
  | "deposit"
  | "closeCooperative"
  | "closeUnilateral"
  | "closeUnilateralWithKey"
  | "anchorReceiptCommit"
  | "challenge"
  | "challengeWithKey"
  | "finalize"
  | "claim"
  | "revokeSessionKey"
  | "revokeAllSessionKeys"
  | "closeCooperativeByWallet"
  | "closeUnilateralByWallet"
  | "challengeByWallet"
  | "registerWalletSessionKey"
  | "closeUnilateralWithWalletKey"
  | "challengeWithWalletKey";

/**
 * One GasEscrow write, checked before it is sent (chain, code, funds, simulation: see `checkedWrite`); a
 * revert comes back as a `ContractRevertError` with the contract's error and a sentence.
 */
async function send(
  parameters: { wallet: Wallet; publicClient: PublicClient; escrow: Address; chainId?: number },
  functionName: EscrowWrite,
  args: readonly unknown[],
  options: { value?: bigint; asset?: Address } = {},
): Promise<{ hash: Hash; receipt: TransactionReceipt }> {
  const { wallet, publicClient, escrow, chainId } = parameters;
  return checkedWrite({
    publicClient,
    wallet,
    address: escrow,
    abi: gasEscrowAbi,
    functionName,
    args: args as never,
    value: options.value ?? 0n,
    chainId,
    what: `GasEscrow.${functionName}`,
    asset: unitsOf(options.asset),
  });
}

export type OpenChannelParameters = {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  /** The deployment's chain id, checked against the RPC's before anything is sent. */
  chainId?: number;
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
  const { wallet, terms, amount } = parameters;
  if (wallet.account.address.toLowerCase() !== terms.funder.toLowerCase()) {
    throw new EscrowTransactionError(`Only the funder named in the terms (${terms.funder}) may open the channel, not ${wallet.account.address}.`);
  }
  const { hash, receipt } = await send(parameters, "open", [terms, amount], { value: terms.asset === zeroAddress ? amount : 0n, asset: terms.asset });
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
  /** The deployment's chain id, checked against the RPC's before anything is sent. */
  chainId?: number;
  token: Address;
  amount: bigint;
}): Promise<TxResult> {
  const { wallet, publicClient, escrow, token, amount } = parameters;
  const { hash, receipt } = await checkedWrite({ publicClient, wallet, address: token, abi: erc20Abi, functionName: "approve", args: [escrow, amount], chainId: parameters.chainId, what: "ERC-20.approve" });
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
  /** The deployment's chain id, checked against the RPC's before anything is sent. */
  chainId?: number;
  ref: ChannelRef;
  amount: bigint;
  minReceived?: bigint;
}): Promise<TxResult & { deposit: bigint }> {
  const { ref, amount } = parameters;
  const minReceived = parameters.minReceived ?? 0n;
  const { hash, receipt } = await send(parameters, "deposit", [ref.terms, ref.openedAt, amount, minReceived], {
    value: ref.terms.asset === zeroAddress ? amount : 0n,
    asset: ref.terms.asset,
  });
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

export type { ClosingState };

export type ClosingChannel = TxResult & { state: ClosingState; finalizesAt: bigint };

/** A ticket as the contract takes it; `undefined` closes with no ticket (payer or funder walking away). */
function ticketArg(signed: SignedPaymentTicket | undefined) {
  if (!signed) return { seq: 0n, cumulativeAmount: 0n, receiptRoot: zeroHash, sig: { r: zeroHash, vs: zeroHash } };
  const { ticket, signature } = signed;
  return { seq: ticket.seq, cumulativeAmount: ticket.cumulativeAmount, receiptRoot: ticket.receiptRoot, sig: toCompactSignature(signature) };
}

/** A contract-wallet payer's ticket as `IGasEscrow.WalletTicket`: the wallet's signature bytes unchanged. */
function walletTicketArg(signed: SignedPaymentTicket) {
  const { ticket, signature } = signed;
  return { seq: ticket.seq, cumulativeAmount: ticket.cumulativeAmount, receiptRoot: ticket.receiptRoot, sig: signature };
}

/** A contract-wallet payer's grant as `IGasEscrow.WalletSessionKeyGrant`. */
function walletGrantArg(signed: SignedSessionKeyGrant) {
  const { grant, signature } = signed;
  return { key: grant.key, expiry: grant.expiry, spendCap: grant.spendCap, capabilities: grant.capabilities, epoch: grant.epoch, sig: signature };
}

function settledFrom(hash: Hash, receipt: TransactionReceipt): SettledChannel {
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
  /** The deployment's chain id, checked against the RPC's before anything is sent. */
  chainId?: number;
  ref: ChannelRef;
  summary: SettlementSummary;
  payerSignature: Hex;
  providerSignature: Hex;
  /** The payer is a contract wallet: its signature goes unchanged to `closeCooperativeByWallet` (decision 0035). */
  payerWallet?: boolean;
}): Promise<SettledChannel> {
  const { ref, summary, payerSignature, providerSignature, payerWallet } = parameters;
  if (summary.mode !== "Cooperative") {
    throw new EscrowTransactionError(`A cooperative close needs a Cooperative summary, not ${summary.mode}.`);
  }
  const { hash, receipt } = await send(
    parameters,
    payerWallet ? "closeCooperativeByWallet" : "closeCooperative",
    [
      ref.terms,
      ref.openedAt,
      summary.finalSeq,
      summary.finalAmount,
      summary.finalReceiptRoot,
      payerWallet ? payerSignature : toCompactSignature(payerSignature),
      toCompactSignature(providerSignature),
    ],
    { asset: ref.terms.asset },
  );
  return settledFrom(hash, receipt);
}

/**
 * Closes unilaterally with the newest ticket the caller holds (or none), opening the challenge window.
 * The returned state is what `challenge` and `finalize` must re-supply.
 */
export async function closeUnilateral(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  /** The deployment's chain id, checked against the RPC's before anything is sent. */
  chainId?: number;
  ref: ChannelRef;
  ticket: SignedPaymentTicket | undefined;
  /** The payer's grant when a session key signed `ticket` (decision 0025): closes with `closeUnilateralWithKey`. */
  grant?: SignedSessionKeyGrant;
  /** The payer is a contract wallet (decision 0035): its ticket or grant goes to the `…ByWallet`/`…WalletKey` entry. */
  payerWallet?: boolean;
}): Promise<ClosingChannel> {
  const { ref, ticket, grant, payerWallet } = parameters;
  const { hash, receipt } = payerWallet && grant
    ? await send(parameters, "closeUnilateralWithWalletKey", [ref.terms, ref.openedAt, ticketArg(ticket), walletGrantArg(grant)], { asset: ref.terms.asset })
    : payerWallet && ticket
    ? await send(parameters, "closeUnilateralByWallet", [ref.terms, ref.openedAt, walletTicketArg(ticket)], { asset: ref.terms.asset })
    : grant
    ? await send(parameters, "closeUnilateralWithKey", [ref.terms, ref.openedAt, ticketArg(ticket), sessionKeyGrantArg(grant, toCompactSignature)], { asset: ref.terms.asset })
    : await send(parameters, "closeUnilateral", [ref.terms, ref.openedAt, ticketArg(ticket)], { asset: ref.terms.asset });
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

export type AnchoredCommit = TxResult & { leafCount: bigint; root: Hex; anchored: boolean };

/**
 * Anchors the provider's signed receipt commit on a closing or cooperatively settled channel (payer or
 * funder only), so a dispute case can prove any receipt it covers (decision 0003). `anchored` is false when
 * the same root was anchored before (the call is then a no-op on-chain).
 */
export async function anchorReceiptCommit(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  /** The deployment's chain id, checked against the RPC's before anything is sent. */
  chainId?: number;
  ref: ChannelRef;
  commit: SignedReceiptCommit;
}): Promise<AnchoredCommit> {
  const { ref, commit } = parameters;
  const { leafCount, root } = commit.commit;
  const { hash, receipt } = await send(
    parameters,
    "anchorReceiptCommit",
    [ref.terms, ref.openedAt, leafCount, root, toCompactSignature(commit.signature)],
    { asset: ref.terms.asset },
  );
  const [anchored] = parseEventLogs({ abi: gasEscrowAbi, eventName: "ReceiptCommitAnchored", logs: receipt.logs });
  return { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber, leafCount, root, anchored: anchored !== undefined };
}

/** Replaces the recorded ticket with a strictly newer one; the window does not move. */
export async function challengeClose(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  /** The deployment's chain id, checked against the RPC's before anything is sent. */
  chainId?: number;
  ref: ChannelRef;
  recorded: ClosingState;
  ticket: SignedPaymentTicket;
  /** The payer's grant when a session key signed `ticket` (decision 0025): challenges with `challengeWithKey`. */
  grant?: SignedSessionKeyGrant;
  /** The payer is a contract wallet (decision 0035). */
  payerWallet?: boolean;
}): Promise<ClosingChannel> {
  const { ref, recorded, ticket, grant, payerWallet } = parameters;
  const { hash, receipt } = payerWallet && grant
    ? await send(parameters, "challengeWithWalletKey", [ref.terms, ref.openedAt, recorded, ticketArg(ticket), walletGrantArg(grant)], { asset: ref.terms.asset })
    : payerWallet
    ? await send(parameters, "challengeByWallet", [ref.terms, ref.openedAt, recorded, walletTicketArg(ticket)], { asset: ref.terms.asset })
    : grant
    ? await send(parameters, "challengeWithKey", [ref.terms, ref.openedAt, recorded, ticketArg(ticket), sessionKeyGrantArg(grant, toCompactSignature)], { asset: ref.terms.asset })
    : await send(parameters, "challenge", [ref.terms, ref.openedAt, recorded, ticketArg(ticket)], { asset: ref.terms.asset });
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

/**
 * Records a contract-wallet payer's session-key grant while the wallet approves it (decision 0035), so that the
 * key's tickets settle later even if the wallet then refuses the same signature. Idempotent; anyone may send it.
 */
export async function registerWalletSessionKey(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  chainId?: number;
  ref: ChannelRef;
  grant: SignedSessionKeyGrant;
}): Promise<TxResult & { registered: boolean }> {
  const { ref, grant } = parameters;
  const { hash, receipt } = await send(parameters, "registerWalletSessionKey", [ref.terms, ref.openedAt, walletGrantArg(grant)], { asset: ref.terms.asset });
  const [registered] = parseEventLogs({ abi: gasEscrowAbi, eventName: "WalletSessionKeyRegistered", logs: receipt.logs });
  return { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber, registered: registered !== undefined };
}

/** Pays out a closing channel after its window. */
export async function finalizeClose(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  /** The deployment's chain id, checked against the RPC's before anything is sent. */
  chainId?: number;
  ref: ChannelRef;
  recorded: ClosingState;
}): Promise<SettledChannel> {
  const { ref, recorded } = parameters;
  const { hash, receipt } = await send(parameters, "finalize", [ref.terms, ref.openedAt, recorded], { asset: ref.terms.asset });
  return settledFrom(hash, receipt);
}

/** What `account` can claim in `asset`: payouts the token refused earlier (a blocklisted recipient). */
export async function claimableOf(parameters: { publicClient: PublicClient; escrow: Address; asset: Address; account: Address }): Promise<bigint> {
  const { publicClient, escrow, asset, account } = parameters;
  return publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "claimableOf", args: [asset, account] });
}

/** Withdraws the wallet's claimable balance of `asset`; returns what was paid (0 if nothing was owed). */
export async function claimPayout(parameters: { wallet: Wallet; publicClient: PublicClient; escrow: Address; asset: Address; chainId?: number }): Promise<TxResult & { amount: bigint }> {
  const { asset } = parameters;
  const { hash, receipt } = await send(parameters, "claim", [asset], { asset });
  const [claimed] = parseEventLogs({ abi: gasEscrowAbi, eventName: "Claimed", logs: receipt.logs });
  return { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber, amount: claimed?.args.amount ?? 0n };
}

/**
 * Revokes one session key of the channel from this block on (only the payer may). Revoking it again is a
 * no-op on-chain and returns the first revocation's time.
 */
export async function revokeSessionKey(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  chainId?: number;
  ref: ChannelRef;
  key: Address;
}): Promise<TxResult & { revokedAt: bigint }> {
  const { ref, key, publicClient, escrow } = parameters;
  if (parameters.wallet.account.address.toLowerCase() !== ref.terms.payer.toLowerCase()) {
    throw new EscrowTransactionError(`Only the channel's payer (${ref.terms.payer}) may revoke its session keys, not ${parameters.wallet.account.address}.`);
  }
  const { hash, receipt } = await send(parameters, "revokeSessionKey", [ref.terms, ref.openedAt, key], { asset: ref.terms.asset });
  const [revoked] = parseEventLogs({ abi: gasEscrowAbi, eventName: "SessionKeyRevoked", logs: receipt.logs });
  const sessionId = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "sessionIdOf", args: [ref.terms, ref.openedAt] });
  const revokedAt = revoked
    ? BigInt(revoked.args.revokedAt)
    : BigInt(await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "sessionKeyRevokedAt", args: [sessionId, key] }));
  return { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber, revokedAt };
}

/** Revokes every session key the wallet granted in its current epoch, on every channel; returns the new epoch. */
export async function revokeAllSessionKeys(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  chainId?: number;
}): Promise<TxResult & { epoch: bigint; revokedAt: bigint }> {
  const { hash, receipt } = await send(parameters, "revokeAllSessionKeys", [], { asset: zeroAddress });
  const [revoked] = parseEventLogs({ abi: gasEscrowAbi, eventName: "SessionKeysRevoked", logs: receipt.logs });
  if (!revoked) throw new EscrowTransactionError(`Transaction ${hash} revoked no session keys.`);
  return { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber, epoch: revoked.args.epoch, revokedAt: BigInt(revoked.args.revokedAt) };
}

/** What the chain says of a session key now: its revocation time on the session (0n: none) and the payer's epoch. */
export async function readSessionKeyChainState(parameters: {
  publicClient: PublicClient;
  escrow: Address;
  sessionId: Hex;
  payer: Address;
  key: Address;
}): Promise<SessionKeyChainState> {
  const { publicClient, escrow, sessionId, payer, key } = parameters;
  const [revokedAt, currentEpoch] = await Promise.all([
    publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "sessionKeyRevokedAt", args: [sessionId, key] }),
    publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "keyEpochOf", args: [payer] }),
  ]);
  return { revokedAt: BigInt(revokedAt), currentEpoch };
}
