/**
 * Devnet arbitrators: Hardhat accounts 20..35 each get LaborGas, register pinned to this build's judge runtime,
 * stake, and are admitted to the pool — by governance, through the Timelock (one scheduled batch, the clock
 * advanced past the delay, executed), for a deployment made without them. `npm run devnet` instead has the
 * deployment itself register and admit them (`IOI_DEVNET_ARBITRATORS=1`, {@link registerDevnetArbitrators});
 * the demo and the CLI tests call {@link admitDevnetArbitrators} directly.
 *
 *   npx hardhat run scripts/arbitrators.ts --network localhost
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { erc20Abi, formatEther, keccak256, parseEther, stringToBytes, type Address, type PublicClient } from "viem";

import { providerRegistryAbi } from "../arbitration/runner/chain";
import { judgeRuntimeHash } from "../arbitration/runner/runner";
import type { Wallet } from "../channel-client/chain/escrow";
import type { Deployment } from "./deploy";
import { admitArbitratorCalls, governThroughTimelock, hardhatTimeTravel } from "./timelock";

/** Hardhat account indices of the devnet's arbitrators. */
export const DEVNET_ARBITRATORS: readonly number[] = Array.from({ length: 16 }, (_, i) => 20 + i);

/**
 * What each devnet arbitrator stakes, in LaborGas: four of a 5-member panel (its supermajority) put
 * 4 × 5,000 × 50% = 10,000 LGAS at risk, more than a 1 ETH case moves at 1,000 LGAS per ETH plus its largest
 * slash (twice the value).
 */
export const DEVNET_ARBITRATOR_STAKE = parseEther("5000");

const mintAbi = [
  { type: "function", name: "mint", stateMutability: "nonpayable", inputs: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }], outputs: [] },
] as const;

export type AdmitDevnetArbitratorsParameters = {
  publicClient: PublicClient;
  /** Every Hardhat account's wallet: [0] deployed (mints LaborGas, proposes on the timelock). */
  wallets: readonly Wallet[];
  deployment: Pick<Deployment, "timelock" | "contracts">;
  indices?: readonly number[];
  stake?: bigint;
};

export type RegisterDevnetArbitratorsParameters = Omit<AdmitDevnetArbitratorsParameters, "deployment"> & {
  contracts: Pick<Deployment["contracts"], "LaborGas" | "ProviderRegistry">;
};

/**
 * Mints each devnet arbitrator its stake (wallets[0] owns LaborGas), registers it pinned to this build's judge
 * runtime and stakes it; returns their addresses. Admission is governance's: the deployment's own (before the
 * hand-over, `IOI_DEVNET_ARBITRATORS=1`) or the timelock's ({@link admitDevnetArbitrators}).
 */
export async function registerDevnetArbitrators(p: RegisterDevnetArbitratorsParameters): Promise<Address[]> {
  const { publicClient, wallets } = p;
  const indices = p.indices ?? DEVNET_ARBITRATORS;
  const stake = p.stake ?? DEVNET_ARBITRATOR_STAKE;
  const governance = wallets[0]!;
  const token = p.contracts.LaborGas.address;
  const registry = p.contracts.ProviderRegistry.address;
  const runtime = judgeRuntimeHash();
  const send = async (wallet: Wallet, request: Record<string, unknown>) => {
    const hash = await wallet.writeContract(request as Parameters<Wallet["writeContract"]>[0]);
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`Transaction ${hash} reverted.`);
  };
  const accounts: Address[] = [];
  for (const index of indices) {
    const wallet = wallets[index];
    if (!wallet) throw new Error(`The network has no account ${index}; Hardhat must fund at least ${Math.max(...indices) + 1} accounts.`);
    const label = (s: string) => keccak256(stringToBytes(`${s}:${index}`));
    await send(governance, { address: token, abi: mintAbi, functionName: "mint", args: [wallet.account.address, stake] });
    await send(wallet, { address: token, abi: erc20Abi, functionName: "approve", args: [registry, stake] });
    await send(wallet, { address: registry, abi: providerRegistryAbi, functionName: "registerArbitrator", args: [runtime, label("did:ioi:arbitrator"), label("mldsa:arbitrator")] });
    await send(wallet, { address: registry, abi: providerRegistryAbi, functionName: "bond", args: [1, stake] });
    accounts.push(wallet.account.address);
  }
  return accounts;
}

/** Registers, stakes and admits the devnet arbitrators through the timelock; returns their addresses. */
export async function admitDevnetArbitrators(p: AdmitDevnetArbitratorsParameters): Promise<Address[]> {
  const { publicClient, wallets, deployment } = p;
  const accounts = await registerDevnetArbitrators({ ...p, contracts: deployment.contracts });
  await governThroughTimelock({
    publicClient,
    wallet: wallets[0]!,
    timelock: deployment.timelock,
    calls: admitArbitratorCalls(deployment.contracts.ProviderRegistry.address, accounts, providerRegistryAbi),
    salt: `admit devnet arbitrators ${accounts.join(",")}`,
    wait: hardhatTimeTravel(publicClient),
  });
  return accounts;
}

async function main(): Promise<void> {
  const hre = (await import("hardhat")).default;
  const publicClient = (await hre.viem.getPublicClient()) as unknown as PublicClient;
  const chainId = await publicClient.getChainId();
  if (chainId !== 31337) throw new Error(`Devnet arbitrators use Hardhat's well-known keys and run only on chain 31337; this is chain ${chainId}.`);
  const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
  const deployment = JSON.parse(readFileSync(path.join(__dirname, "..", "deployments", `${hre.network.name}.json`), "utf8")) as Deployment;
  const accounts = await admitDevnetArbitrators({ publicClient, wallets, deployment });
  console.log(
    `Registered, staked (${formatEther(DEVNET_ARBITRATOR_STAKE)} LGAS each) and admitted ${accounts.length} arbitrators (accounts ${DEVNET_ARBITRATORS[0]}..${DEVNET_ARBITRATORS.at(-1)}) through the timelock ${deployment.timelock}.`,
  );
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
