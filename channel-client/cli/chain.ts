/**
 * The chain a command acts on, shared by every command set (channel, gig, money, dispute, arbitration,
 * page): the RPC's clients and chain id, the deployment record chosen by that chain id, each contract's
 * address and first block (an option or variable, else the record), and how to read the chain. Nothing here
 * imports a command set, so `channel-client/cli/channel.ts`, `channel-client/cli/arbitration.ts`, `channel-client/cli/money.ts` and `ui/` all
 * import it and none imports another's CLI module.
 */
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  isAddress,
  isAddressEqual,
  zeroAddress,
  type Address,
  type LocalAccount,
  type PublicClient,
} from "viem";

import { contractOf, resolveDeployment, type ContractName, type ResolvedDeployment } from "../chain/deployment";
import { chainReading } from "../chain/logs";
import { assertCode } from "../chain/write";
import type { Wallet } from "../chain/escrow";
import { rawKeyWarning, uint, UsageError } from "./common";

/**
 * The deployment record for the chain the RPC serves (decision 0019): --deployment FILE (or $IOI_DEPLOYMENT),
 * else --network NAME (or $IOI_NETWORK), else deployments/chain-<chainId>.json; its chain id must be the RPC's.
 */
export function cliDeployment(values: Record<string, unknown>, publicClient: PublicClient): Promise<ResolvedDeployment> {
  return resolveDeployment({
    publicClient,
    network: (values.network as string | undefined) ?? process.env.IOI_NETWORK,
    deploymentFile: (values.deployment as string | undefined) ?? process.env.IOI_DEPLOYMENT,
  });
}

/**
 * A contract's address and the block to read its events from: from its option or environment variable
 * (checked to hold code on the RPC's chain), else from the chain's deployment record.
 */
export async function deployedContract(
  values: Record<string, unknown>,
  publicClient: PublicClient,
  option: "escrow" | "gig-escrow" | "dispute-manager" | "registry",
  envName: "IOI_ESCROW" | "IOI_GIG_ESCROW" | "IOI_DISPUTE_MANAGER" | "IOI_REGISTRY",
  contract: ContractName,
): Promise<{ address: Address; fromBlock: bigint }> {
  const given = givenAddress(values, option, envName);
  if (given) {
    await assertCode(publicClient, { [`${contract} given by ${given.source}`]: given.address });
    // The chain's deployment record knows where this address's history starts if it lists it; otherwise
    // nothing does, and scans start at block 0 (still paged; --from-block narrows them where offered).
    const known = await cliDeployment(values, publicClient).catch(() => undefined);
    const listed = known && isAddressEqual(known.contracts[contract] ?? zeroAddress, given.address);
    return { address: given.address, fromBlock: listed ? (known.blocks[contract] ?? known.deploymentBlock) : 0n };
  }
  const deployment = await cliDeployment(values, publicClient);
  return { address: contractOf(deployment, contract), fromBlock: deployment.blocks[contract] ?? deployment.deploymentBlock };
}

/** The address given by option or environment variable (checked to be one), or undefined. */
export function givenAddress(values: Record<string, unknown>, option: string, envName: string): { address: Address; source: string } | undefined {
  const fromOption = values[option] as string | undefined;
  const given = fromOption ?? process.env[envName];
  if (given === undefined || given === "") return undefined;
  const source = fromOption !== undefined ? `--${option}` : `$${envName}`;
  if (!isAddress(given)) throw new UsageError(`${source} must be an address; received "${given}".`);
  return { address: getAddress(given), source };
}

/** A contract's address: see {@link deployedContract}. */
export async function deployedAddress(
  values: Record<string, unknown>,
  publicClient: PublicClient,
  option: "escrow" | "gig-escrow" | "dispute-manager" | "registry",
  envName: "IOI_ESCROW" | "IOI_GIG_ESCROW" | "IOI_DISPUTE_MANAGER" | "IOI_REGISTRY",
  contract: ContractName,
): Promise<Address> {
  return (await deployedContract(values, publicClient, option, envName, contract)).address;
}

/**
 * How to read the chain (decision 0019): the chain's defaults (a devnet: no confirmations, 250 ms polls; any
 * other chain: 12 confirmations, 12 s polls), then $IOI_CONFIRMATIONS, $IOI_LOG_RANGE, $IOI_POLL_MS, then
 * --confirmations, --log-range and --poll-ms.
 */
export function readingOf(values: Record<string, unknown>, chainId: number) {
  let reading;
  try {
    reading = chainReading(chainId);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const confirmations = values.confirmations === undefined ? reading.confirmations : uint(values, "confirmations", "blocks to stay behind the head");
  const batchBlocks = values["log-range"] === undefined ? reading.maxBlockRange : uint(values, "log-range", "most blocks per eth_getLogs call");
  if (batchBlocks === 0n) throw new UsageError("--log-range must be at least 1 block.");
  const pollMs = values["poll-ms"] === undefined ? reading.pollMs : Number(uint(values, "poll-ms", "milliseconds between polls"));
  if (pollMs < 10) throw new UsageError("--poll-ms must be at least 10.");
  return { confirmations, batchBlocks, pollMs, retry: reading.retry };
}

/** A public client (and a wallet for `account`) on the node at --rpc, with the chain id it reports. */
export async function rpcClients(values: Record<string, unknown>, account?: LocalAccount) {
  const url = (values.rpc as string | undefined) ?? process.env.IOI_RPC_URL ?? "http://127.0.0.1:8545";
  const probe = createPublicClient({ transport: http(url) });
  let chainId: number;
  try {
    chainId = await probe.getChainId();
  } catch (cause) {
    throw new UsageError(`No EVM node answers at ${url}; start one with \`npm run devnet\` or pass --rpc.`, { cause });
  }
  const chain = defineChain({ id: chainId, name: `chain-${chainId}`, nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [url] } } });
  // viem caches the block number for 4 s by default: a --poll-ms below that would re-read a stale head
  // (issue 28 item 7). The client polls and caches exactly as often as the chain is read.
  const { pollMs } = readingOf(values, chainId);
  const publicClient = createPublicClient({ chain, transport: http(url), pollingInterval: pollMs, cacheTime: pollMs }) as PublicClient;
  const warning = rawKeyWarning(account, chainId);
  if (warning !== undefined) console.error(warning);
  const wallet = account ? (createWalletClient({ account, chain, transport: http(url) }) as Wallet) : undefined;
  return { publicClient, wallet, chainId };
}
