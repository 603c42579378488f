/**
 * Verifies every contract of a deployment on the chain's block explorer with @nomicfoundation/hardhat-verify
 * (decision 0019, amendment): reads `deployments/chain-<chainId>.json` (or $IOI_DEPLOYMENT), and for each
 * contract runs `verify:verify` with the constructor arguments the deployment recorded and, for the
 * DisputeManager, its linked libraries. A contract the explorer already knows counts as verified.
 *
 *   IOI_RPC_URL=https://… IOI_EXPLORER_API_KEY=… npx hardhat run scripts/verify.ts --network remote
 *
 * The explorer is Etherscan's (one API key serves every chain it indexes); for another Etherscan-compatible
 * explorer set IOI_EXPLORER_API_URL and IOI_EXPLORER_URL too (hardhat.config.ts). Refused on a devnet.
 */
import { readFileSync } from "node:fs";
import path from "node:path";

import type { Deployment } from "./deploy";

async function main(): Promise<void> {
  const hre = (await import("hardhat")).default;
  const publicClient = await hre.viem.getPublicClient();
  const chainId = await publicClient.getChainId();
  if ([31337, 31338, 1337].includes(chainId)) throw new Error(`Chain ${chainId} is a devnet: there is no explorer to verify on.`);
  if (!process.env.IOI_EXPLORER_API_KEY) throw new Error("IOI_EXPLORER_API_KEY must hold the block explorer's API key.");
  const file = process.env.IOI_DEPLOYMENT || path.join(process.env.IOI_DEPLOYMENTS_DIR || path.join(__dirname, "..", "deployments"), `chain-${chainId}.json`);
  const deployment = JSON.parse(readFileSync(file, "utf8")) as Deployment;
  if (deployment.chainId !== chainId) throw new Error(`${file} is for chain ${deployment.chainId}, but the RPC serves chain ${chainId}.`);
  const failed: string[] = [];
  for (const [name, contract] of Object.entries(deployment.contracts)) {
    if (!contract.constructorArgs) {
      failed.push(`${name} (the record has no constructor arguments: deployed before they were recorded)`);
      continue;
    }
    const libraries = name === "DisputeManager" ? { Panels: deployment.contracts.Panels.address, DisputeRules: deployment.contracts.DisputeRules.address } : {};
    try {
      await hre.run("verify:verify", { address: contract.address, constructorArguments: contract.constructorArgs, libraries, contract: `contracts/${sourceOf(name)}:${name}` });
      console.log(`Verified ${name} at ${contract.address}.`);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (/already verified/i.test(message)) console.log(`${name} at ${contract.address} was already verified.`);
      else failed.push(`${name} (${message.split("\n")[0]})`);
    }
  }
  if (failed.length > 0) throw new Error(`Not verified: ${failed.join("; ")}.`);
}

/** The source file of each deployed contract, under contracts/. */
function sourceOf(name: string): string {
  const folders: Record<string, string> = { Timelock: "governance/", BlockhashRandomness: "randomness/", Panels: "libraries/", DisputeRules: "libraries/" };
  return `${folders[name] ?? ""}${name}.sol`;
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
