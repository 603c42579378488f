/**
 * Issue 29 item 6 (decision 0019, amendment): a new chain is usable at once. `deployAll` sets the asset terms
 * and admits the initial arbitrators before governance passes to the timelock, so a gig case opens and draws
 * its panel with no timelock operation waited out — here with a public chain's 2-day delay, of which the case
 * uses only its own 1-day respond window. A list naming an unregistered or unstaked account admits nobody.
 */
import { mine, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { erc20Abi, getAddress, keccak256, parseEther, stringToBytes, zeroAddress, type Address, type PublicClient } from "viem";

import { DEVNET_ARBITRATORS, registerDevnetArbitrators } from "../../scripts/arbitrators";
import { deployAll, type DeployOptions } from "../../scripts/deploy";
import { timelockAbi } from "../../scripts/timelock";
import { blocksUntilReady, drawPanel, openGigCase, providerRegistryAbi } from "../../arbitration/runner/chain";
import type { Wallet } from "../../channel-client/chain/escrow";
import { gigEscrowAbi } from "../../channel-client/abi/GigEscrow";

const TWO_DAYS = 2 * 24 * 3600;

async function deployWith(options: (wallets: Wallet[], publicClient: PublicClient) => DeployOptions) {
  const publicClient = (await hre.viem.getPublicClient()) as unknown as PublicClient;
  const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
  const saved = process.env.IOI_TIMELOCK_DELAY;
  process.env.IOI_TIMELOCK_DELAY = String(TWO_DAYS);
  try {
    return { deployment: await deployAll(hre, options(wallets, publicClient)), wallets, publicClient };
  } finally {
    if (saved === undefined) delete process.env.IOI_TIMELOCK_DELAY;
    else process.env.IOI_TIMELOCK_DELAY = saved;
  }
}

describe("scripts/deploy.ts: initial arbitrators and immediate asset terms", function () {
  this.timeout(180_000);

  it("admits the listed arbitrators in the deployment, so a case draws a panel before any timelock delay could pass", async () => {
    const indices = DEVNET_ARBITRATORS.slice(0, 8);
    const { deployment, wallets, publicClient } = await deployWith((wallets, publicClient) => ({
      initialArbitrators: indices.map((i) => getAddress(wallets[i]!.account.address)),
      beforeAdmission: async (contracts) => {
        await registerDevnetArbitrators({ publicClient, wallets, contracts, indices });
      },
    }));
    const c = deployment.contracts;
    const deployedAt = (await publicClient.getBlock()).timestamp;
    const listed = indices.map((i) => getAddress(wallets[i]!.account.address));
    expect(deployment.initialArbitrators).to.deep.equal(listed);
    expect(await publicClient.readContract({ address: deployment.timelock, abi: timelockAbi, functionName: "getMinDelay" })).to.equal(BigInt(TWO_DAYS));
    const admitted = await publicClient.readContract({ address: c.ProviderRegistry.address, abi: providerRegistryAbi, functionName: "admittedArbitrators" });
    expect([...admitted].map((a) => getAddress(a)).sort()).to.deep.equal([...listed].sort());
    // The deployer keeps no governance role on the registry: the admissions happened before the hand-over.
    const gov = await publicClient.readContract({ address: c.ProviderRegistry.address, abi: providerRegistryAbi, functionName: "GOVERNANCE_ROLE" });
    expect(await publicClient.readContract({ address: c.ProviderRegistry.address, abi: providerRegistryAbi, functionName: "hasRole", args: [gov, deployment.deployer] })).to.equal(false);

    // A provider bonds, a client funds a 1 ETH gig, the provider delivers, the client disputes (the ETH terms are
    // in force: bondFor answers), and after the case's own respond window the panel is drawn.
    const [governance, client, , provider, , , , , watcher] = wallets;
    const registry = c.ProviderRegistry.address;
    const label = (s: string) => keccak256(stringToBytes(s));
    const send = async (wallet: Wallet, request: Record<string, unknown>) => {
      const receipt = await publicClient.waitForTransactionReceipt({ hash: await wallet.writeContract(request as Parameters<Wallet["writeContract"]>[0]) });
      expect(receipt.status).to.equal("success");
    };
    const providerBond = parseEther("300");
    const mintAbi = [{ type: "function", name: "mint", stateMutability: "nonpayable", inputs: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }], outputs: [] }] as const;
    await send(governance!, { address: c.LaborGas.address, abi: mintAbi, functionName: "mint", args: [provider!.account.address, providerBond] });
    await send(provider!, { address: c.LaborGas.address, abi: erc20Abi, functionName: "approve", args: [registry, providerBond] });
    await send(provider!, { address: registry, abi: providerRegistryAbi, functionName: "registerProvider", args: ["tcp://127.0.0.1", label("caps"), label("did"), label("mldsa")] });
    await send(provider!, { address: registry, abi: providerRegistryAbi, functionName: "bond", args: [0, providerBond] });
    const now = (await publicClient.getBlock()).timestamp;
    await send(client!, {
      address: c.GigEscrow.address,
      abi: gigEscrowAbi,
      functionName: "fund",
      args: [provider!.account.address, zeroAddress, parseEther("1"), label("ics"), Number(now + 86_400n), 3600],
      value: parseEther("1"),
    });
    const gigId = await publicClient.readContract({ address: c.GigEscrow.address, abi: gigEscrowAbi, functionName: "gigCount" });
    await send(provider!, { address: c.GigEscrow.address, abi: gigEscrowAbi, functionName: "accept", args: [gigId] });
    await send(provider!, { address: c.GigEscrow.address, abi: gigEscrowAbi, functionName: "deliver", args: [gigId, label("deliverable"), label("none")] });
    const opened = await openGigCase({ wallet: client!, publicClient, disputeManager: c.DisputeManager.address, gigEscrow: c.GigEscrow.address, gigId, lane: 0, packageHash: label("package") });
    expect(opened.bond > 0n).to.equal(true);

    const respondBy = (await publicClient.readContract({ address: c.DisputeManager.address, abi: (await hre.artifacts.readArtifact("DisputeManager")).abi, functionName: "caseOf", args: [opened.caseId] })) as { respondBy: number };
    await time.increaseTo(BigInt(respondBy.respondBy) + 1n);
    const requested = await drawPanel({ wallet: watcher!, publicClient, disputeManager: c.DisputeManager.address, caseId: opened.caseId });
    expect(requested.outcome).to.equal("requested");
    if (requested.outcome !== "requested") throw new Error("unreachable");
    const wait = await blocksUntilReady(publicClient, requested.ticket);
    if (wait > 0n) await mine(wait);
    const drawn = await drawPanel({ wallet: watcher!, publicClient, disputeManager: c.DisputeManager.address, caseId: opened.caseId });
    expect(drawn.outcome).to.equal("drawn");
    if (drawn.outcome !== "drawn") throw new Error("unreachable");
    expect(drawn.panel).to.have.length(5);
    for (const member of drawn.panel) expect(listed).to.include(member);
    // Drawn before a single timelock delay could have elapsed since the deployment.
    const drawnAt = (await publicClient.getBlock({ blockNumber: drawn.blockNumber })).timestamp;
    expect(drawnAt - deployedAt < BigInt(TWO_DAYS), `drawn ${drawnAt - deployedAt} s after the deployment`).to.equal(true);
  });

  it("with governance other than the deployer: the asset terms are in force at once and the deployer keeps no timelock role", async () => {
    const governor = getAddress("0x00000000000000000000000000000000000000bb");
    const saved = process.env.IOI_GOVERNANCE;
    process.env.IOI_GOVERNANCE = governor;
    try {
      const { deployment, publicClient } = await deployWith(() => ({}));
      const dm = await hre.viem.getContractAt("DisputeManager", deployment.contracts.DisputeManager.address);
      expect(await dm.read.assetTerms([zeroAddress])).to.deep.equal({ bondFloor: parseEther("0.001"), stakeRate: parseEther("1000") });
      expect(await dm.read.assetTerms([deployment.contracts.LaborGas.address])).to.deep.equal({ bondFloor: parseEther("1"), stakeRate: parseEther("1") });
      const read = (functionName: string, args: unknown[] = []) => publicClient.readContract({ address: deployment.timelock, abi: timelockAbi, functionName: functionName as never, args: args as never });
      expect(await read("getMinDelay")).to.equal(BigInt(TWO_DAYS));
      for (const role of ["PROPOSER_ROLE", "CANCELLER_ROLE", "EXECUTOR_ROLE", "DEFAULT_ADMIN_ROLE"]) {
        const id = await read(role);
        expect(await read("hasRole", [id, deployment.deployer]), `deployer ${role}`).to.equal(false);
        if (role !== "DEFAULT_ADMIN_ROLE") expect(await read("hasRole", [id, governor]), `governance ${role}`).to.equal(true);
      }
    } finally {
      if (saved === undefined) delete process.env.IOI_GOVERNANCE;
      else process.env.IOI_GOVERNANCE = saved;
    }
  });

  it("admits nobody and names the account when one listed arbitrator is not registered", async () => {
    const indices = DEVNET_ARBITRATORS.slice(0, 3);
    let registryAddress: Address | undefined;
    const stranger = getAddress("0x00000000000000000000000000000000000000aa");
    const error = await deployWith((wallets, publicClient) => ({
      initialArbitrators: [...indices.map((i) => getAddress(wallets[i]!.account.address)), stranger],
      beforeAdmission: async (contracts) => {
        registryAddress = contracts.ProviderRegistry.address;
        await registerDevnetArbitrators({ publicClient, wallets, contracts, indices });
      },
    })).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error, "the deployment admitted a list with an unregistered account").to.be.instanceOf(Error);
    expect(error!.message).to.contain(`Admitted no initial arbitrator: ${stranger} is not registered as an arbitrator`);
    expect(error!.message.split(" is not").length, "only the stranger is named").to.equal(2);
    const publicClient = (await hre.viem.getPublicClient()) as unknown as PublicClient;
    const admitted = await publicClient.readContract({ address: registryAddress!, abi: providerRegistryAbi, functionName: "admittedArbitrators" });
    expect(admitted).to.deep.equal([]);
  });
});
