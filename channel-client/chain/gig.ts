/**
 * Calls into the GigEscrow contract with viem — fund (approving an ERC-20 first when the allowance is
 * short), cancel, accept, deliver, accept the delivery, release, refund — each returning what the caller
 * needs next (the gig id, the end of the dispute window, the payouts) decoded from the receipt's events; and
 * `readGig`, the stored gig with its status by name. Inputs are checked before anything is sent, and a
 * revert comes back as a {@link GigTransactionError} naming the contract's custom error.
 */
import {
  erc20Abi,
  isAddress,
  isHex,
  parseEventLogs,
  zeroAddress,
  type Address,
  type Hash,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
} from "viem";

import { gigEscrowAbi } from "../abi/GigEscrow";
import { ContractRevertError, unitsOf } from "./revert";
import { checkedWrite } from "./write";
import { BaseError, InvalidFieldError, InvalidHexError, type BaseErrorParameters } from "../core/errors";
import type { TxResult, Wallet } from "./escrow";

export { gigEscrowAbi };

/** `IGigEscrow.Status` by name, in the contract's order. `Released` and `Refunded` are final. */
export const GIG_STATUSES = ["None", "Funded", "Accepted", "Delivered", "Disputed", "Released", "Refunded"] as const;
export type GigStatus = (typeof GIG_STATUSES)[number];

/** Mirrors `GigEscrow.MIN_DISPUTE_WINDOW`, `MAX_DISPUTE_WINDOW` and `MAX_DEADLINE` (seconds). */
export const MIN_DISPUTE_WINDOW = 60n;
export const MAX_DISPUTE_WINDOW = 30n * 86_400n;
export const MAX_DEADLINE = 365n * 86_400n;

const MAX_UINT40 = (1n << 40n) - 1n;
const MAX_UINT64 = (1n << 64n) - 1n;
const MAX_UINT128 = (1n << 128n) - 1n;

/** A gig transaction the contract reverted, or that did not emit what it must have. */
export class GigTransactionError extends BaseError {
  override name = "GigTransactionError" as const;
  /** The contract's custom error, when the revert could be decoded. */
  readonly revert: { errorName: string; args: readonly unknown[] } | undefined;

  constructor(shortMessage: string, parameters: BaseErrorParameters & { revert?: { errorName: string; args: readonly unknown[] } } = {}) {
    super(shortMessage, parameters);
    this.revert = parameters.revert;
  }
}

/** What every write needs: who sends, where to read receipts, and the GigEscrow's address. */
export type GigWriteParameters = {
  wallet: Wallet;
  publicClient: PublicClient;
  gigEscrow: Address;
  /** The deployment's chain id, checked against the RPC's before anything is sent. */
  chainId?: number;
};

/** A settlement as `GigSettled` reported it. */
export type SettledGig = TxResult & { gigId: bigint; status: GigStatus; toProvider: bigint; toClient: bigint };

/** A gig as `gigOf` returns it, with its id and the status by name; times are unix seconds. */
export type GigView = {
  gigId: bigint;
  status: GigStatus;
  client: Address;
  provider: Address;
  asset: Address;
  amount: bigint;
  icsHash: Hex;
  deliverableHash: Hex;
  receiptRoot: Hex;
  deadline: bigint;
  disputeWindow: bigint;
  windowEndsAt: bigint;
  frozenAt: bigint;
};

/*//////////////////////////////////////////////////////////////
                              VALIDATION
//////////////////////////////////////////////////////////////*/

function addressArg(value: unknown, path: string): Address {
  if (typeof value !== "string" || !isAddress(value, { strict: false })) {
    throw new InvalidHexError(`${path} must be an address (0x and 40 hex digits); received ${JSON.stringify(value)}.`);
  }
  return value as Address;
}

function hashArg(value: unknown, path: string, nonZero: boolean): Hex {
  if (typeof value !== "string" || !isHex(value) || value.length !== 66) {
    throw new InvalidHexError(`${path} must be a 32-byte hash (0x and 64 hex digits); received ${JSON.stringify(value)}.`);
  }
  if (nonZero && BigInt(value) === 0n) throw new InvalidFieldError(path, "a non-zero 32-byte hash", value);
  return value.toLowerCase() as Hex;
}

function uintArg(value: unknown, path: string, min: bigint, max: bigint): bigint {
  if (typeof value !== "bigint" || value < min || value > max) {
    throw new InvalidFieldError(path, `a bigint from ${min} to ${max}`, value);
  }
  return value;
}

function gigIdArg(value: unknown): bigint {
  return uintArg(value, "gigId", 1n, MAX_UINT64);
}

/*//////////////////////////////////////////////////////////////
                              PLUMBING
//////////////////////////////////////////////////////////////*/

/**
 * Sends one GigEscrow call, checked first (chain, code, funds, simulation: see `checkedWrite`); a revert
 * becomes a GigTransactionError naming the error, its arguments and what it means.
 */
async function send(
  parameters: GigWriteParameters,
  functionName: "fund" | "fundFor" | "cancel" | "accept" | "confirmProvider" | "dismissProvider" | "deliver" | "acceptDelivery" | "release" | "refund" | "claim",
  args: readonly unknown[],
  value = 0n,
  asset?: Address,
): Promise<{ hash: Hash; receipt: TransactionReceipt }> {
  const { wallet, publicClient, gigEscrow, chainId } = parameters;
  try {
    return await checkedWrite({
      publicClient,
      wallet,
      address: gigEscrow,
      abi: gigEscrowAbi,
      functionName,
      args: args as never,
      value,
      chainId,
      what: `GigEscrow.${functionName}`,
      asset: unitsOf(asset),
    });
  } catch (error) {
    if (!(error instanceof ContractRevertError)) throw error;
    const { errorName, args: revertArgs } = error.revert;
    throw new GigTransactionError(error.shortMessage, { cause: error, revert: { errorName, args: revertArgs } });
  }
}

function txResult(hash: Hash, receipt: TransactionReceipt): TxResult {
  return { hash, gasUsed: receipt.gasUsed, blockNumber: receipt.blockNumber };
}

function settledFrom(hash: Hash, receipt: TransactionReceipt): SettledGig {
  const [settled] = parseEventLogs({ abi: gigEscrowAbi, eventName: "GigSettled", logs: receipt.logs });
  if (!settled) throw new GigTransactionError(`Transaction ${hash} settled no gig.`);
  const { gigId, status, toProvider, toClient } = settled.args;
  return { ...txResult(hash, receipt), gigId, status: GIG_STATUSES[status]!, toProvider, toClient };
}

/*//////////////////////////////////////////////////////////////
                              CLIENT AND PROVIDER
//////////////////////////////////////////////////////////////*/

export type FundGigParameters = GigWriteParameters & {
  /**
   * A sponsored gig (issue 14): the client who alone acts on the gig, when it is not the wallet. The wallet
   * pays (`GigEscrow.fundFor`) and receives every refund; omitted: the wallet is the client.
   */
  client?: Address;
  /** The one provider who may accept; omitted or zero: any provider with an active bond. */
  provider?: Address;
  /** The ERC-20 to escrow; omitted or zero: native ETH. */
  asset?: Address;
  amount: bigint;
  /** keccak256 of the canonical Intent Contract Schema (see `artifactId` in canonical.ts). */
  icsHash: Hex;
  /** Absolute unix time after which an undelivered gig can be refunded. */
  deadline: bigint;
  /** Seconds the client may dispute a delivery, from MIN_DISPUTE_WINDOW to MAX_DISPUTE_WINDOW. */
  disputeWindow: bigint;
};

export type FundGigReturnType = TxResult & {
  gigId: bigint;
  /** What the escrow received (less than asked for a fee-on-transfer token). */
  amount: bigint;
  /** The ERC-20 approval sent first, if the allowance was short. */
  approval: TxResult | undefined;
};

/** Escrows a gig's bounty. For an ERC-20 it first approves exactly `amount` when the allowance is short. */
export async function fundGig(parameters: FundGigParameters): Promise<FundGigReturnType> {
  const { wallet, publicClient, gigEscrow } = parameters;
  const provider = addressArg(parameters.provider ?? zeroAddress, "provider");
  const asset = addressArg(parameters.asset ?? zeroAddress, "asset");
  const amount = uintArg(parameters.amount, "amount", 1n, MAX_UINT128);
  const icsHash = hashArg(parameters.icsHash, "icsHash", true);
  const deadline = uintArg(parameters.deadline, "deadline", 1n, MAX_UINT40);
  const disputeWindow = uintArg(parameters.disputeWindow, "disputeWindow", MIN_DISPUTE_WINDOW, MAX_DISPUTE_WINDOW);
  addressArg(gigEscrow, "gigEscrow");

  let approval: TxResult | undefined;
  const isEth = BigInt(asset) === 0n;
  if (!isEth) {
    const allowance = await publicClient.readContract({
      address: asset,
      abi: erc20Abi,
      functionName: "allowance",
      args: [wallet.account.address, gigEscrow],
    });
    if (allowance < amount) {
      const approved = await checkedWrite({ publicClient, wallet, address: asset, abi: erc20Abi, functionName: "approve", args: [gigEscrow, amount], chainId: parameters.chainId, what: "ERC-20.approve" });
      approval = txResult(approved.hash, approved.receipt);
    }
  }
  const client = parameters.client === undefined ? undefined : addressArg(parameters.client, "client");
  if (client !== undefined && BigInt(client) === 0n) throw new GigTransactionError("A sponsored gig needs a client address, not the zero address.");
  const { hash, receipt } =
    client === undefined
      ? await send(parameters, "fund", [provider, asset, amount, icsHash, Number(deadline), Number(disputeWindow)], isEth ? amount : 0n, asset)
      : await send(parameters, "fundFor", [client, provider, asset, amount, icsHash, Number(deadline), Number(disputeWindow)], isEth ? amount : 0n, asset);
  const [funded] = parseEventLogs({ abi: gigEscrowAbi, eventName: "GigFunded", logs: receipt.logs });
  if (!funded) throw new GigTransactionError(`Transaction ${hash} funded no gig.`);
  return { ...txResult(hash, receipt), gigId: funded.args.gigId, amount: funded.args.amount, approval };
}

/** `fundGig` for `client`, paid by the wallet (a sponsored gig: refunds go to the wallet). */
export async function fundGigFor(parameters: FundGigParameters & { client: Address }): Promise<FundGigReturnType> {
  return fundGig(parameters);
}

/** Who receives the gig's refunds: its funder (the client unless it was sponsored). */
export async function readGigFunder(parameters: { publicClient: PublicClient; gigEscrow: Address; gigId: bigint }): Promise<Address> {
  const { publicClient, gigEscrow, gigId } = parameters;
  return publicClient.readContract({ address: gigEscrow, abi: gigEscrowAbi, functionName: "funderOf", args: [gigIdArg(gigId)] });
}

/** The client takes a gig no provider accepted yet back at once (the refund goes to the funder). */
export async function cancelGig(parameters: GigWriteParameters & { gigId: bigint }): Promise<SettledGig> {
  const { hash, receipt } = await send(parameters, "cancel", [gigIdArg(parameters.gigId)]);
  return settledFrom(hash, receipt);
}

/** A provider with an active bond takes the gig (the named one, or anyone for an open gig). */
export async function acceptGig(parameters: GigWriteParameters & { gigId: bigint }): Promise<TxResult & { provider: Address }> {
  const { hash, receipt } = await send(parameters, "accept", [gigIdArg(parameters.gigId)]);
  const [accepted] = parseEventLogs({ abi: gigEscrowAbi, eventName: "GigAccepted", logs: receipt.logs });
  if (!accepted) throw new GigTransactionError(`Transaction ${hash} accepted no gig.`);
  return { ...txResult(hash, receipt), provider: accepted.args.provider };
}

/** The client confirms the tentative provider of its open gig, which can then no longer be dismissed. */
export async function confirmGigProvider(parameters: GigWriteParameters & { gigId: bigint }): Promise<TxResult & { provider: Address }> {
  const { hash, receipt } = await send(parameters, "confirmProvider", [gigIdArg(parameters.gigId)]);
  const [confirmed] = parseEventLogs({ abi: gigEscrowAbi, eventName: "GigProviderConfirmed", logs: receipt.logs });
  if (!confirmed) throw new GigTransactionError(`Transaction ${hash} confirmed no provider.`);
  return { ...txResult(hash, receipt), provider: confirmed.args.provider };
}

/** The client dismisses the tentative provider of its open gig before it delivers; the gig is open again. */
export async function dismissGigProvider(parameters: GigWriteParameters & { gigId: bigint }): Promise<TxResult & { provider: Address }> {
  const { hash, receipt } = await send(parameters, "dismissProvider", [gigIdArg(parameters.gigId)]);
  const [dismissed] = parseEventLogs({ abi: gigEscrowAbi, eventName: "GigProviderDismissed", logs: receipt.logs });
  if (!dismissed) throw new GigTransactionError(`Transaction ${hash} dismissed no provider.`);
  return { ...txResult(hash, receipt), provider: dismissed.args.provider };
}

/** Withdraws the wallet's claimable balance of `asset` (payouts the token refused); 0 if nothing was owed. */
export async function claimGigPayout(parameters: GigWriteParameters & { asset: Address }): Promise<TxResult & { amount: bigint }> {
  const { hash, receipt } = await send(parameters, "claim", [addressArg(parameters.asset, "asset")]);
  const [claimed] = parseEventLogs({ abi: gigEscrowAbi, eventName: "Claimed", logs: receipt.logs });
  return { ...txResult(hash, receipt), amount: claimed?.args.amount ?? 0n };
}

/** The provider delivers; returns when the client's dispute window ends. `receiptRoot` defaults to zero. */
export async function deliverGig(
  parameters: GigWriteParameters & { gigId: bigint; deliverableHash: Hex; receiptRoot?: Hex },
): Promise<TxResult & { windowEndsAt: bigint }> {
  const gigId = gigIdArg(parameters.gigId);
  const deliverableHash = hashArg(parameters.deliverableHash, "deliverableHash", true);
  const receiptRoot = hashArg(parameters.receiptRoot ?? `0x${"0".repeat(64)}`, "receiptRoot", false);
  const { hash, receipt } = await send(parameters, "deliver", [gigId, deliverableHash, receiptRoot]);
  const [delivered] = parseEventLogs({ abi: gigEscrowAbi, eventName: "GigDelivered", logs: receipt.logs });
  if (!delivered) throw new GigTransactionError(`Transaction ${hash} delivered no gig.`);
  return { ...txResult(hash, receipt), windowEndsAt: BigInt(delivered.args.windowEndsAt) };
}

/** The client accepts the delivery: the provider is paid at once. */
export async function acceptGigDelivery(parameters: GigWriteParameters & { gigId: bigint }): Promise<SettledGig> {
  const { hash, receipt } = await send(parameters, "acceptDelivery", [gigIdArg(parameters.gigId)]);
  return settledFrom(hash, receipt);
}

/** Anyone pays the provider once the dispute window passed quietly (or a freeze outlived its backstop). */
export async function releaseGig(parameters: GigWriteParameters & { gigId: bigint }): Promise<SettledGig> {
  const { hash, receipt } = await send(parameters, "release", [gigIdArg(parameters.gigId)]);
  return settledFrom(hash, receipt);
}

/** Anyone refunds the client once the deadline passed without a delivery. */
export async function refundGig(parameters: GigWriteParameters & { gigId: bigint }): Promise<SettledGig> {
  const { hash, receipt } = await send(parameters, "refund", [gigIdArg(parameters.gigId)]);
  return settledFrom(hash, receipt);
}

/*//////////////////////////////////////////////////////////////
                                 VIEWS
//////////////////////////////////////////////////////////////*/

/** The gig as stored; a gig that was never funded comes back with status `None` and zero fields. */
export async function readGig(parameters: { publicClient: PublicClient; gigEscrow: Address; gigId: bigint }): Promise<GigView> {
  const { publicClient } = parameters;
  const gigEscrow = addressArg(parameters.gigEscrow, "gigEscrow");
  const gigId = uintArg(parameters.gigId, "gigId", 0n, MAX_UINT64);
  const g = await publicClient.readContract({ address: gigEscrow, abi: gigEscrowAbi, functionName: "gigOf", args: [gigId] });
  return {
    gigId,
    status: GIG_STATUSES[g.status]!,
    client: g.client,
    provider: g.provider,
    asset: g.asset,
    amount: g.amount,
    icsHash: g.icsHash,
    deliverableHash: g.deliverableHash,
    receiptRoot: g.receiptRoot,
    deadline: BigInt(g.deadline),
    disputeWindow: BigInt(g.disputeWindow),
    windowEndsAt: BigInt(g.windowEndsAt),
    frozenAt: BigInt(g.frozenAt),
  };
}

/** The JSON form of a {@link GigView}: amounts and times as decimal strings. */
export function gigViewToJson(view: GigView): Record<string, string> {
  return {
    gigId: view.gigId.toString(),
    status: view.status,
    client: view.client,
    provider: view.provider,
    asset: view.asset,
    amount: view.amount.toString(),
    icsHash: view.icsHash,
    deliverableHash: view.deliverableHash,
    receiptRoot: view.receiptRoot,
    deadline: view.deadline.toString(),
    disputeWindow: view.disputeWindow.toString(),
    windowEndsAt: view.windowEndsAt.toString(),
    frozenAt: view.frozenAt.toString(),
  };
}
