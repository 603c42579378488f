/**
 * The deployment object every role entry point takes: which chain, and where each contract lives. A library
 * user builds it from wherever it keeps addresses (a `deployments/chain-<id>.json` record, its own config);
 * no entry point reads files.
 *
 * Minimal on purpose: issue 13's chain work defines the full per-chain deployment record
 * (`channel-client/chain/deployment.ts`); this type is the subset the roles need and stays compatible with it.
 */
import { getAddress, isAddress, type Address, type PublicClient } from "viem";

import { BaseError } from "../core/errors";

export type ContractName = "GasEscrow" | "GigEscrow" | "DisputeManager" | "ProviderRegistry" | "LaborGas" | "Timelock";

export type Deployment = {
  chainId: number;
  contracts: Partial<Record<ContractName, Address | { address: Address; blockNumber?: bigint | string | number }>>;
  /** First block worth reading events from (the earliest contract's deployment block). Default 0. */
  deploymentBlock?: bigint;
};

export class DeploymentError extends BaseError {
  override name = "DeploymentError" as const;
}

/** The checksummed address of `name` in the deployment; a sentence naming the contract when it is absent. */
export function contractAddress(deployment: Deployment, name: ContractName): Address {
  const entry = deployment.contracts[name];
  const address = typeof entry === "string" ? entry : entry?.address;
  if (address === undefined) throw new DeploymentError(`The deployment for chain ${deployment.chainId} names no ${name} address.`);
  if (!isAddress(address)) throw new DeploymentError(`The deployment's ${name} address is not an address: "${String(address)}".`);
  return getAddress(address);
}

/** The block to start reading events from: `deploymentBlock`, else the lowest contract `blockNumber`, else 0. */
export function deploymentBlockOf(deployment: Deployment): bigint {
  if (deployment.deploymentBlock !== undefined) return deployment.deploymentBlock;
  const blocks = Object.values(deployment.contracts)
    .map((entry) => (typeof entry === "object" && entry.blockNumber !== undefined ? BigInt(entry.blockNumber) : undefined))
    .filter((b): b is bigint => b !== undefined);
  return blocks.length === 0 ? 0n : blocks.reduce((a, b) => (a < b ? a : b));
}

/**
 * Checks that the client's chain is the deployment's and that `name` has code there, so that no write goes
 * to an address on the wrong chain or to one where nothing is deployed.
 */
export async function assertDeployed(publicClient: PublicClient, deployment: Deployment, name: ContractName): Promise<Address> {
  const address = contractAddress(deployment, name);
  const chainId = await publicClient.getChainId();
  if (chainId !== deployment.chainId) {
    throw new DeploymentError(`The RPC serves chain ${chainId}, but the deployment is for chain ${deployment.chainId}; nothing was sent.`);
  }
  const code = await publicClient.getCode({ address });
  if (code === undefined || code === "0x") throw new DeploymentError(`No contract code at the deployment's ${name} address ${address} on chain ${chainId}; nothing was sent.`);
  return address;
}
