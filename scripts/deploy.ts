/**
 * Deploys LaborGas, GasEscrow, ProviderRegistry, GigEscrow and DisputeManager, grants the DisputeManager its
 * roles, and records everything in `deployments/<network>.json`.
 *
 *   npx hardhat run scripts/deploy.ts --network localhost             # the devnet from `npm run devnet`
 *   IOI_RPC_URL=https://… IOI_DEPLOYER_KEY=0x… npx hardhat run scripts/deploy.ts --network remote
 *
 * The second form deploys to any EVM chain and writes `deployments/chain-<chainId>.json`.
 * IOI_GOVERNANCE (default: the deployer), IOI_TREASURY (default: governance) and IOI_ROUTING_FEE_BPS
 * (default 0, at most 1000) set the escrow's governance, fee recipient and routing fee; IOI_MIN_PROVIDER_BOND
 * and IOI_MIN_ARBITRATOR_STAKE (in whole LaborGas, default 100 and 1000) the registry's minimums.
 * GigEscrow gets the same governance and accepts providers active in that registry. IOI_DISPUTE_RISK_BPS,
 * _BURN_BPS, _LANE_MULTIPLIER, _QUORUM, _MAX_ESCALATIONS, _BOND_FLOOR and IOI_JUDGE_RUNTIME_HASH set the
 * DisputeManager's parameters; when the deployer is not governance, governance must grant its roles.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { getAddress, parseEther, type Abi, type Address, type Hash, type Hex } from "viem";

import { judgeRuntimeHash } from "../arbitration/runner";

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
    DisputeManager: DeployedContract;
  };
  /** The DisputeManager's parameters (bond amounts as decimal strings). */
  disputeParams: Record<string, string | number>;
  /** Whether the DisputeManager holds its roles on both escrows and the registry (only if governance deployed). */
  disputeRolesGranted: boolean;
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
  const disputeParams = {
    riskBps: envInt("IOI_DISPUTE_RISK_BPS", 500, 0, 10_000),
    burnBps: envInt("IOI_DISPUTE_BURN_BPS", 2_000, 0, 10_000),
    laneMultiplier: envInt("IOI_DISPUTE_LANE_MULTIPLIER", 3, 1, 10),
    quorum: envInt("IOI_DISPUTE_QUORUM", 3, 1, 16),
    maxEscalations: envInt("IOI_DISPUTE_MAX_ESCALATIONS", 2, 0, 2),
    decisionWindow: 24 * 3600,
    slowPathTimeout: 7 * 24 * 3600,
    bondFloor: parseEther(process.env.IOI_DISPUTE_BOND_FLOOR ?? "0.001"),
    // Arbitrators must run this judge runtime: the runner of this checkout on this Node version.
    judgeRuntimeHash: (process.env.IOI_JUDGE_RUNTIME_HASH as Hex | undefined) ?? judgeRuntimeHash(),
  };
  const disputeManager = await deploy("DisputeManager", [
    governance,
    gasEscrow.address,
    gigEscrow.address,
    providerRegistry.address,
    disputeParams,
  ]);
  // The DisputeManager freezes and releases both escrows and is the registry's only slasher. Only governance
  // can grant that; when another address governs, it must grant these three roles itself.
  const disputeRolesGranted = getAddress(deployer.account.address) === governance;
  if (disputeRolesGranted) {
    const grant = async (name: "GasEscrow" | "GigEscrow" | "ProviderRegistry", address: Address, role: string) => {
      const artifact = await hre.artifacts.readArtifact(name);
      const roleId = (await publicClient.readContract({ address, abi: artifact.abi as Abi, functionName: role })) as Hex;
      const hash = await deployer!.writeContract({
        address,
        abi: artifact.abi as Abi,
        functionName: "grantRole",
        args: [roleId, disputeManager.address],
        chain: deployer!.chain,
        account: deployer!.account,
      });
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      if (receipt.status !== "success") throw new Error(`Granting ${role} on ${name} failed in transaction ${hash}.`);
    };
    await grant("GasEscrow", gasEscrow.address, "DISPUTE_ROLE");
    await grant("GigEscrow", gigEscrow.address, "DISPUTE_ROLE");
    await grant("ProviderRegistry", providerRegistry.address, "SLASHER_ROLE");
  }
  return {
    network: hre.network.name,
    chainId: await publicClient.getChainId(),
    deployer: getAddress(deployer.account.address),
    governance,
    treasury,
    routingFeeBps,
    deployedAt: new Date().toISOString(),
    contracts: {
      LaborGas: laborGas,
      GasEscrow: gasEscrow,
      ProviderRegistry: providerRegistry,
      GigEscrow: gigEscrow,
      DisputeManager: disputeManager,
    },
    disputeParams: { ...disputeParams, bondFloor: disputeParams.bondFloor.toString() },
    disputeRolesGranted,
  };
}

function envInt(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be a whole number from ${min} to ${max}; received ${raw}.`);
  }
  return value;
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
  if (!deployment.disputeRolesGranted) {
    console.log(`Governance ${deployment.governance} must grant the DisputeManager DISPUTE_ROLE on both escrows and SLASHER_ROLE on the registry.`);
  }
  console.log(`Wrote ${path.relative(process.cwd(), file)}`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
