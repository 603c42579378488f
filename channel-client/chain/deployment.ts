/**
 * Which contracts a client talks to, chosen by the chain the RPC serves: one deployment record per chain id,
 * `deployments/chain-<chainId>.json`, written by `scripts/deploy.ts` (decision 0019). `--network NAME` picks
 * `deployments/NAME.json` instead and `--deployment FILE` any record; whichever is used, its chain id must be
 * the RPC's, or nothing is done.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { getAddress, isAddress, type Address, type PublicClient } from "viem";

import { BaseError } from "../core/errors";
import { PACKAGE_ROOT } from "../core/package-root";

/** The contracts a client may need, by the names the deployment record keys them. */
export const CONTRACT_NAMES = [
  "GasEscrow",
  "GigEscrow",
  "ProviderRegistry",
  "DisputeManager",
  "LaborGas",
  "Timelock",
  "BlockhashRandomness",
] as const;
export type ContractName = (typeof CONTRACT_NAMES)[number];

/** One chain's deployment, as a client uses it. */
export type ResolvedDeployment = {
  chainId: number;
  /** The record's network name ("localhost", "remote", …) or `chain-<id>`. */
  name: string;
  /** Where the record was read from (undefined for one built in code). */
  file: string | undefined;
  /** The first block holding any of the contracts: where a follower starts reading events. */
  deploymentBlock: bigint;
  contracts: Partial<Record<ContractName, Address>>;
  /** The block each contract was deployed in. */
  blocks: Partial<Record<ContractName, bigint>>;
};

/** No record for the chain, a record for another chain, or a record that is not one. */
export class DeploymentError extends BaseError {
  override name = "DeploymentError" as const;
}

/** The folder holding the records: `IOI_DEPLOYMENTS_DIR`, else the repository's `deployments/`. */
export function deploymentsDirectory(): string {
  return process.env.IOI_DEPLOYMENTS_DIR || path.join(PACKAGE_ROOT, "deployments");
}

/** The record's file for a chain id: `deployments/chain-<chainId>.json`. */
export function deploymentFileFor(chainId: number, directory = deploymentsDirectory()): string {
  return path.join(directory, `chain-${chainId}.json`);
}

/** Parses and checks a deployment record (the JSON `scripts/deploy.ts` writes); `where` names it in errors. */
export function parseDeploymentRecord(json: unknown, where: string): ResolvedDeployment {
  const record = json as { network?: unknown; chainId?: unknown; contracts?: unknown } | null;
  if (typeof record !== "object" || record === null || typeof record.contracts !== "object" || record.contracts === null) {
    throw new DeploymentError(`${where} is not a deployment record: it has no "contracts" object.`);
  }
  if (typeof record.chainId !== "number" || !Number.isSafeInteger(record.chainId) || record.chainId <= 0) {
    throw new DeploymentError(`${where} is not a deployment record: "chainId" must be a positive whole number.`);
  }
  const contracts: Partial<Record<ContractName, Address>> = {};
  const blocks: Partial<Record<ContractName, bigint>> = {};
  for (const name of CONTRACT_NAMES) {
    const entry = (record.contracts as Record<string, unknown>)[name];
    if (entry === undefined) continue;
    const { address, blockNumber } = (entry ?? {}) as { address?: unknown; blockNumber?: unknown };
    if (typeof address !== "string" || !isAddress(address)) throw new DeploymentError(`${where}: contracts.${name}.address is not an address.`);
    contracts[name] = getAddress(address);
    if (blockNumber !== undefined) {
      if ((typeof blockNumber !== "string" && typeof blockNumber !== "number") || !/^(0|[1-9][0-9]*)$/.test(String(blockNumber))) {
        throw new DeploymentError(`${where}: contracts.${name}.blockNumber must be a whole number.`);
      }
      blocks[name] = BigInt(blockNumber);
    }
  }
  const known = Object.values(blocks);
  const deploymentBlock = known.length === 0 ? 0n : known.reduce((a, b) => (b < a ? b : a));
  return {
    chainId: record.chainId,
    name: typeof record.network === "string" && record.network !== "remote" ? record.network : `chain-${record.chainId}`,
    file: undefined,
    deploymentBlock,
    contracts,
    blocks,
  };
}

function readRecord(file: string, what: string): ResolvedDeployment {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (cause) {
    throw new DeploymentError(`Cannot read ${what} ${file}: ${(cause as Error).message.split("\n")[0]}`, { cause });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new DeploymentError(`${file} is not JSON: ${(cause as Error).message.split("\n")[0]}`, { cause });
  }
  return { ...parseDeploymentRecord(json, file), file };
}

export type ResolveDeploymentParameters = {
  publicClient: PublicClient;
  /** A network name: reads `deployments/<network>.json`. */
  network?: string;
  /** A record's path; wins over `network`. */
  deploymentFile?: string;
  /** Where records live (default {@link deploymentsDirectory}). */
  directory?: string;
};

/**
 * The deployment for the chain the RPC serves: `deploymentFile`, else `deployments/<network>.json`, else
 * `deployments/chain-<chainId>.json`. Fails with one sentence when there is no record or when the record's
 * chain id is not the RPC's.
 */
export async function resolveDeployment(parameters: ResolveDeploymentParameters): Promise<ResolvedDeployment> {
  const { publicClient, network, deploymentFile } = parameters;
  const directory = parameters.directory ?? deploymentsDirectory();
  const chainId = await publicClient.getChainId();
  let deployment: ResolvedDeployment;
  if (deploymentFile !== undefined && deploymentFile !== "") {
    deployment = readRecord(deploymentFile, "the deployment record");
  } else if (network !== undefined && network !== "") {
    if (!/^[A-Za-z0-9_.-]+$/.test(network) || network.startsWith(".")) {
      throw new DeploymentError(`--network must be a network name such as localhost or chain-${chainId}; received "${network}".`);
    }
    const file = path.join(directory, `${network}.json`);
    if (!existsSync(file)) throw new DeploymentError(`There is no deployment record for network "${network}" (${file}); deploy with scripts/deploy.ts or pass --deployment FILE.`);
    deployment = readRecord(file, "the deployment record");
  } else {
    const file = deploymentFileFor(chainId, directory);
    if (!existsSync(file)) {
      throw new DeploymentError(
        `There is no deployment record for chain ${chainId} (${file}); deploy there (\`npm run devnet\` on a devnet, scripts/deploy.ts elsewhere), or pass --deployment FILE or the contract's address.`,
      );
    }
    deployment = readRecord(file, "the deployment record");
  }
  if (deployment.chainId !== chainId) {
    throw new DeploymentError(`The deployment record ${deployment.file} is for chain ${deployment.chainId}, but the RPC serves chain ${chainId}; nothing was done.`);
  }
  return deployment;
}

/** The address of `name` in `deployment`, or one sentence saying the record names none. */
export function contractOf(deployment: ResolvedDeployment, name: ContractName): Address {
  const address = deployment.contracts[name];
  if (!address) throw new DeploymentError(`The deployment record for chain ${deployment.chainId}${deployment.file ? ` (${deployment.file})` : ""} names no ${name}.`);
  return address;
}
