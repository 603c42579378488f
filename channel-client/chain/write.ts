/**
 * Every write goes through {@link checkedWrite}: before anything is signed it checks that the RPC serves the
 * chain the caller expects (and the wallet's), that code exists at every address the call uses, that the
 * sender can pay any value it sends, and it simulates the call so that a revert is reported — decoded, with
 * its sentence — before a transaction exists. Only then is the transaction sent and its receipt awaited.
 */
import {
  type Abi,
  type Account,
  type Address,
  type Chain,
  type ContractFunctionArgs,
  type ContractFunctionName,
  type Hash,
  type PublicClient,
  type TransactionReceipt,
  type Transport,
  type WalletClient,
} from "viem";

import { BaseError } from "../core/errors";
import { ETH_UNIT, formatAmount, type AssetUnit } from "../core/format";
import { ContractRevertError, decodeRevert } from "./revert";

export type Wallet = WalletClient<Transport, Chain, Account>;

/** The RPC serves another chain than the deployment (or the wallet) is for. */
export class ChainMismatchError extends BaseError {
  override name = "ChainMismatchError" as const;
}

/** An address the call would use holds no contract on this chain. */
export class NoContractError extends BaseError {
  override name = "NoContractError" as const;
}

/** The sender cannot pay the value this call sends. */
export class InsufficientFundsError extends BaseError {
  override name = "InsufficientFundsError" as const;
}

/** A transaction was mined but reverted, or did not do what it must have. */
export class TransactionFailedError extends BaseError {
  override name = "TransactionFailedError" as const;
}

/** Addresses already seen to hold code, per client: code does not go away, so each is checked once. */
const withCode = new WeakMap<object, Set<string>>();
/** Chain ids already read, per client. */
const chainIds = new WeakMap<object, Promise<number>>();

function chainIdOf(publicClient: PublicClient): Promise<number> {
  let id = chainIds.get(publicClient);
  if (!id) {
    id = publicClient.getChainId();
    id.catch(() => chainIds.delete(publicClient));
    chainIds.set(publicClient, id);
  }
  return id;
}

/** Fails with one sentence unless the RPC's chain id is `expected` (and the wallet's chain, if it names one). */
export async function assertChain(publicClient: PublicClient, expected: number | undefined, wallet?: Wallet): Promise<number> {
  const actual = await chainIdOf(publicClient);
  if (expected !== undefined && actual !== expected) {
    throw new ChainMismatchError(`The RPC serves chain ${actual}, but the deployment is for chain ${expected}; nothing was sent.`);
  }
  if (wallet?.chain && wallet.chain.id !== actual) {
    throw new ChainMismatchError(`The wallet is set up for chain ${wallet.chain.id}, but the RPC serves chain ${actual}; nothing was sent.`);
  }
  return actual;
}

/** Fails with one sentence unless every address in `addresses` holds code on the RPC's chain. */
export async function assertCode(publicClient: PublicClient, addresses: Record<string, Address>): Promise<void> {
  let seen = withCode.get(publicClient);
  if (!seen) withCode.set(publicClient, (seen = new Set()));
  for (const [label, address] of Object.entries(addresses)) {
    if (seen.has(address.toLowerCase())) continue;
    const code = await publicClient.getCode({ address });
    if (!code || code === "0x") {
      const chainId = await chainIdOf(publicClient);
      throw new NoContractError(`No contract at ${address} (the ${label}) on chain ${chainId}; nothing was sent. Check --network, --deployment or the address given.`);
    }
    seen.add(address.toLowerCase());
  }
}

export type CheckedWriteParameters<abi extends Abi, functionName extends ContractFunctionName<abi, "nonpayable" | "payable">> = {
  publicClient: PublicClient;
  wallet: Wallet;
  address: Address;
  abi: abi;
  functionName: functionName;
  args: ContractFunctionArgs<abi, "nonpayable" | "payable", functionName>;
  value?: bigint;
  /** The chain id the addresses were deployed on (the deployment record's); checked against the RPC's. */
  chainId?: number;
  /** Names the call in messages, e.g. "GasEscrow.finalize". Default: the function name. */
  what?: string;
  /** Other addresses the call relies on (a token, the registry), checked for code too. */
  uses?: Record<string, Address>;
  /** The units of the amounts in a revert's sentence, when the call's asset is known. */
  asset?: AssetUnit;
};

export type CheckedWriteReturnType = { hash: Hash; receipt: TransactionReceipt };

/**
 * Checks, simulates, sends and confirms one contract write. Throws {@link ChainMismatchError},
 * {@link NoContractError}, {@link InsufficientFundsError} or {@link ContractRevertError} before anything is
 * sent, and {@link TransactionFailedError} for a transaction mined as reverted.
 */
export async function checkedWrite<abi extends Abi, functionName extends ContractFunctionName<abi, "nonpayable" | "payable">>(
  parameters: CheckedWriteParameters<abi, functionName>,
): Promise<CheckedWriteReturnType> {
  const { publicClient, wallet, address, abi, functionName, args, value = 0n, chainId, uses = {}, asset } = parameters;
  const what = parameters.what ?? String(functionName);
  await assertChain(publicClient, chainId, wallet);
  await assertCode(publicClient, { [what.split(".")[0] ?? "contract"]: address, ...uses });
  const sender = wallet.account.address;
  if (value > 0n) {
    const balance = await publicClient.getBalance({ address: sender });
    if (balance < value) {
      throw new InsufficientFundsError(`${sender} holds ${formatAmount(balance, ETH_UNIT)}, less than the ${formatAmount(value, ETH_UNIT)} ${what} sends; nothing was sent.`);
    }
  }
  const now = async () => (await publicClient.getBlock().catch(() => undefined))?.timestamp;
  const fail = async (error: unknown): Promise<never> => {
    const revert = decodeRevert(error, { now: await now(), asset });
    if (!revert) throw error;
    if (revert.errorName === "InsufficientFunds") {
      throw new InsufficientFundsError(`${sender} cannot pay for ${what}: ${revert.sentence.slice("InsufficientFunds: ".length)}; nothing was sent.`, { cause: error });
    }
    throw new ContractRevertError(what, revert, { cause: error });
  };
  const call = { address, abi, functionName, args, ...(value > 0n ? { value } : {}) } as never;
  try {
    // Against the pending block: the transaction lands in the next block, and a contract that reads the block
    // number or time (a randomness ticket, a window) must be simulated as there, not as in the last block.
    await publicClient.simulateContract({ ...(call as object), account: wallet.account, blockTag: "pending" } as never);
  } catch (error) {
    await fail(error);
  }
  let hash: Hash;
  try {
    hash = await wallet.writeContract(call);
  } catch (error) {
    return fail(error);
  }
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success") throw new TransactionFailedError(`${what} transaction ${hash} was mined but reverted (the chain changed between the simulation and the block).`);
  return { hash, receipt };
}
