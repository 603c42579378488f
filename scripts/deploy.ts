/**
 * Deploys LaborGas, GasEscrow, ProviderRegistry and GigEscrow and records them in `deployments/<network>.json`.
 *
 *   npx hardhat run scripts/deploy.ts --network localhost             # the devnet from `npm run devnet`
 *   IOI_RPC_URL=https://… IOI_DEPLOYER_KEY=0x… npx hardhat run scripts/deploy.ts --network remote
 *
 * The second form deploys to any EVM chain and writes `deployments/chain-<chainId>.json`.
 * IOI_GOVERNANCE (default: the deployer), IOI_TREASURY (default: governance) and IOI_ROUTING_FEE_BPS
 * (default 0, at most 1000) set the escrow's governance, fee recipient and routing fee; IOI_MIN_PROVIDER_BOND
 * and IOI_MIN_ARBITRATOR_STAKE (in whole LaborGas, default 100 and 1000) the registry's minimums.
 * GigEscrow gets the same governance and accepts providers active in that registry; governance grants its
 * DISPUTE_ROLE to the DisputeManager once that is deployed.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { getAddress, parseEther, type Abi, type Address, type Hash, type Hex } from "viem";

export type DeployedContract = { address: Address; transactionHash: Hash; blockNumber: string; gasUsed: string };

export type Deployment = {
  network: string;
  chainId: number;
  deployer: Address;
  governance: Address;
  treasury: Address;
  routingFeeBps: number;
  deployedAt: string;
  contracts: {
    LaborGas: DeployedContract;
    GasEscrow: DeployedContract;
    ProviderRegistry: DeployedContract;
    GigEscrow: DeployedContract;
  };
};

/** Deploys every contract with the network's first account and returns the record (not yet written). */
export async function deployAll(hre: HardhatRuntimeEnvironment): Promise<Deployment> {
  const publicClient = await hre.viem.getPublicClient();
  const [deployer] = await hre.viem.getWalletClients();
  if (!deployer) throw new Error(`No deployer account on network "${hre.network.name}"; set IOI_DEPLOYER_KEY.`);

  async function deploy(name: keyof Deployment["contracts"], args: unknown[]): Promise<DeployedContract> {
    const artifact = await hre.artifacts.readArtifact(name);
    const hash = await deployer!.deployContract({ abi: artifact.abi as Abi, bytecode: artifact.bytecode as Hex, args });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success" || !receipt.contractAddress) {
      throw new Error(`Deploying ${name} failed in transaction ${hash}.`);
    }
    return {
      address: getAddress(receipt.contractAddress),
      transactionHash: receipt.transactionHash,
      blockNumber: receipt.blockNumber.toString(),
      gasUsed: receipt.gasUsed.toString(),
    };
  }

  const governance = getAddress(process.env.IOI_GOVERNANCE ?? deployer.account.address);
  const treasury = getAddress(process.env.IOI_TREASURY ?? governance);
  const routingFeeBps = Number(process.env.IOI_ROUTING_FEE_BPS ?? 0);
  if (!Number.isInteger(routingFeeBps) || routingFeeBps < 0 || routingFeeBps > 1_000) {
    throw new Error(`IOI_ROUTING_FEE_BPS must be a whole number from 0 to 1000; received ${process.env.IOI_ROUTING_FEE_BPS}.`);
  }
  const laborGas = await deploy("LaborGas", [deployer.account.address]);
  const gasEscrow = await deploy("GasEscrow", [governance, treasury, routingFeeBps]);
  // Bonds in LaborGas. The unbonding delay (14 days) outlasts a default challenge window plus arbitration,
  // so a provider cannot withdraw its bond out from under a dispute.
  const providerRegistry = await deploy("ProviderRegistry", [
    governance,
    laborGas.address,
    parseEther(process.env.IOI_MIN_PROVIDER_BOND ?? "100"),
    parseEther(process.env.IOI_MIN_ARBITRATOR_STAKE ?? "1000"),
    14n * 24n * 3600n,
  ]);
  const gigEscrow = await deploy("GigEscrow", [governance, providerRegistry.address]);
  return {
    network: hre.network.name,
    chainId: await publicClient.getChainId(),
    deployer: getAddress(deployer.account.address),
    governance,
    treasury,
    routingFeeBps,
    deployedAt: new Date().toISOString(),
    contracts: { LaborGas: laborGas, GasEscrow: gasEscrow, ProviderRegistry: providerRegistry, GigEscrow: gigEscrow },
  };
}

/** Writes the record to `deployments/` and returns the file's path. */
export function writeDeployment(deployment: Deployment, directory = path.join(__dirname, "..", "deployments")): string {
  mkdirSync(directory, { recursive: true });
  const name = deployment.network === "remote" ? `chain-${deployment.chainId}` : deployment.network;
  const file = path.join(directory, `${name}.json`);
  writeFileSync(file, `${JSON.stringify(deployment, null, 2)}\n`);
  return file;
}

async function main(): Promise<void> {
  const hre = (await import("hardhat")).default;
  const deployment = await deployAll(hre);
  const file = writeDeployment(deployment);
  console.log(`Deployed to ${deployment.network} (chain ${deployment.chainId}):`);
  for (const [name, c] of Object.entries(deployment.contracts)) console.log(`  ${name.padEnd(16)} ${c.address}  block ${c.blockNumber}`);
  console.log(`Wrote ${path.relative(process.cwd(), file)}`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
