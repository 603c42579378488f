/**
 * `scripts/deploy.ts` on the in-process network: the deployer keeps no role, the Timelock holds every
 * governance role and is the DisputeManager's governance, the wiring roles sit exactly where they belong, and a
 * governance call succeeds only through schedule → delay → execute.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { decodeErrorResult, encodeFunctionData, getAddress, keccak256, stringToBytes, zeroAddress, type Abi, type Address, type Hex, type PublicClient } from "viem";

import { providerRegistryAbi } from "../../arbitration/runner/chain";
import { judgeRuntimeHash } from "../../arbitration/runner/runner";
import type { Wallet } from "../../channel-client/chain/escrow";
import { deployAll } from "../../scripts/deploy";
import { admitArbitratorCalls, executeCalls, scheduleCalls, timelockAbi } from "../../scripts/timelock";
import { expectRevert, rawRevertData } from "../helpers/revert";

const label = (s: string): Hex => keccak256(stringToBytes(s));
const ROLES = ["DEFAULT_ADMIN_ROLE", "GOVERNANCE_ROLE", "DISPUTE_ROLE", "SLASHER_ROLE", "LOCKER_ROLE", "HOLDER_ROLE"] as const;

async function deployedFixture() {
  const deployment = await deployAll(hre);
  const publicClient = (await hre.viem.getPublicClient()) as unknown as PublicClient;
  const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
  const c = deployment.contracts;
  const gasEscrow = await hre.viem.getContractAt("GasEscrow", c.GasEscrow.address);
  const gigEscrow = await hre.viem.getContractAt("GigEscrow", c.GigEscrow.address);
  const registry = await hre.viem.getContractAt("ProviderRegistry", c.ProviderRegistry.address);
  const disputes = await hre.viem.getContractAt("DisputeManager", c.DisputeManager.address);
  const timelock = await hre.viem.getContractAt("Timelock", c.Timelock.address);
  return { deployment, publicClient, wallets, gasEscrow, gigEscrow, registry, disputes, timelock };
}

type Fixture = Awaited<ReturnType<typeof deployedFixture>>;

/** Which of the five roles `who` holds on each role-based contract (a role a contract lacks counts as not held). */
async function rolesOf(f: Fixture, who: Address): Promise<Record<string, string[]>> {
  const held: Record<string, string[]> = {};
  for (const [name, contract] of [["GasEscrow", f.gasEscrow], ["GigEscrow", f.gigEscrow], ["ProviderRegistry", f.registry]] as const) {
    held[name] = [];
    for (const role of ROLES) {
      // The GigEscrow has no GOVERNANCE_ROLE (nor SLASHER_ROLE or LOCKER_ROLE).
      if (!contract.abi.some((item) => item.type === "function" && item.name === role)) continue;
      const id = (await f.publicClient.readContract({ address: contract.address, abi: contract.abi as Abi, functionName: role })) as Hex;
      if (await contract.read.hasRole([id, who])) held[name]!.push(role);
    }
  }
  return held;
}

describe("scripts/deploy.ts", () => {
  it("leaves the deployer with no role on any contract and the DisputeManager governed by the timelock", async () => {
    const f = await loadFixture(deployedFixture);
    const deployer = getAddress(f.wallets[0]!.account.address);
    expect(f.deployment.deployer).to.equal(deployer);
    expect(await rolesOf(f, deployer)).to.deep.equal({ GasEscrow: [], GigEscrow: [], ProviderRegistry: [] });
    expect(getAddress(await f.disputes.read.governance())).to.equal(f.deployment.timelock);
    // The deployer cannot administer the timelock either: it is only its proposer (as governance).
    expect(await f.timelock.read.hasRole([await f.timelock.read.DEFAULT_ADMIN_ROLE(), deployer])).to.equal(false);
    expect(await f.timelock.read.hasRole([await f.timelock.read.DEFAULT_ADMIN_ROLE(), f.deployment.timelock])).to.equal(true);
    expect(await f.timelock.read.hasRole([await f.timelock.read.PROPOSER_ROLE(), deployer])).to.equal(true);
    expect(await f.timelock.read.getMinDelay()).to.equal(60n);
  });

  it("gives the timelock the admin and governance roles, the DisputeManager exactly its roles, the GigEscrow LOCKER_ROLE", async () => {
    const f = await loadFixture(deployedFixture);
    const c = f.deployment.contracts;
    expect(await rolesOf(f, f.deployment.timelock)).to.deep.equal({
      GasEscrow: ["DEFAULT_ADMIN_ROLE", "GOVERNANCE_ROLE"],
      GigEscrow: ["DEFAULT_ADMIN_ROLE"],
      ProviderRegistry: ["DEFAULT_ADMIN_ROLE", "GOVERNANCE_ROLE"],
    });
    expect(await rolesOf(f, c.DisputeManager.address)).to.deep.equal({
      GasEscrow: ["DISPUTE_ROLE"],
      GigEscrow: ["DISPUTE_ROLE"],
      ProviderRegistry: ["SLASHER_ROLE", "LOCKER_ROLE"],
    });
    expect(await rolesOf(f, c.GigEscrow.address)).to.deep.equal({ GasEscrow: [], GigEscrow: [], ProviderRegistry: ["LOCKER_ROLE"] });
  });

  it("issue 28 item 2: the GasEscrow holds HOLDER_ROLE on its registry, sealed, and names that registry", async () => {
    const f = await loadFixture(deployedFixture);
    const c = f.deployment.contracts;
    expect(await rolesOf(f, c.GasEscrow.address)).to.deep.equal({ GasEscrow: [], GigEscrow: [], ProviderRegistry: ["HOLDER_ROLE"] });
    expect(getAddress(await f.gasEscrow.read.registry())).to.equal(c.ProviderRegistry.address);
    expect(await f.registry.read.rolesSealed()).to.equal(true);
  });

  it("records the randomness, libraries and default dispute parameters, and set both assets' terms", async () => {
    const f = await loadFixture(deployedFixture);
    const c = f.deployment.contracts;
    for (const name of ["BlockhashRandomness", "Panels", "DisputeRules", "Timelock"] as const) {
      expect(await f.publicClient.getCode({ address: c[name].address })).to.match(/^0x[0-9a-f]{2,}$/);
    }
    expect(getAddress(await f.disputes.read.randomness())).to.equal(c.BlockhashRandomness.address);
    const params = await f.disputes.read.params();
    expect({ panelSize: params.panelSize, maxAppeals: params.maxAppeals, feeBps: params.feeBps, burnBps: params.burnBps }).to.deep.equal({
      panelSize: 5,
      maxAppeals: 2,
      feeBps: 1_000,
      burnBps: 2_000,
    });
    expect(params.judgeRuntimeHash).to.equal(judgeRuntimeHash());
    expect((await f.disputes.read.assetTerms([zeroAddress])).stakeRate).to.equal(10n ** 21n);
    expect((await f.disputes.read.assetTerms([c.LaborGas.address])).stakeRate).to.equal(10n ** 18n);
    expect(await f.registry.read.unbondingDelay()).to.equal(30n * 24n * 3600n);
  });

  it("refuses admitArbitrator from the former governor and runs it only through schedule → delay → execute", async () => {
    const f = await loadFixture(deployedFixture);
    const deployer = f.wallets[0]!;
    const candidate = f.wallets[20]!;
    await f.registry.write.registerArbitrator([judgeRuntimeHash(), label("did"), label("mldsa")], { account: candidate.account });
    await expectRevert(f.registry.write.admitArbitrator([candidate.account.address], { account: deployer.account }), "AccessControlUnauthorizedAccount");
    // Nobody but the proposer can schedule.
    const calls = admitArbitratorCalls(f.registry.address, [candidate.account.address], providerRegistryAbi);
    const p = { publicClient: f.publicClient, wallet: deployer, timelock: f.deployment.timelock, calls, salt: "admit one" };
    await expectRevert(scheduleCalls({ ...p, wallet: f.wallets[4]! }), "AccessControlUnauthorizedAccount");
    const scheduled = await scheduleCalls(p);
    // Before the delay the operation is not ready.
    await expectRevert(executeCalls(p), "TimelockUnexpectedOperationState");
    expect(await f.registry.read.isAdmitted([candidate.account.address])).to.equal(false);
    await time.increaseTo(scheduled.readyAt);
    await executeCalls(p);
    expect(await f.registry.read.isAdmitted([candidate.account.address])).to.equal(true);
    expect(await f.publicClient.readContract({ address: f.deployment.timelock, abi: timelockAbi, functionName: "isOperationDone", args: [scheduled.id] })).to.equal(true);
  });

  it("seals the wiring roles before handing governance over: not even the timelock can grant SLASHER_ROLE or DISPUTE_ROLE", async () => {
    const f = await loadFixture(deployedFixture);
    expect([await f.gasEscrow.read.rolesSealed(), await f.gigEscrow.read.rolesSealed(), await f.registry.read.rolesSealed()]).to.deep.equal([true, true, true]);
    const deployer = f.wallets[0]!;
    const timelock = f.deployment.timelock;
    const slasher = await f.registry.read.SLASHER_ROLE();
    const dispute = await f.gasEscrow.read.DISPUTE_ROLE();
    const calls = [
      { target: f.registry.address, data: encodeFunctionData({ abi: f.registry.abi, functionName: "grantRole", args: [slasher, timelock] }) },
      { target: f.gasEscrow.address, data: encodeFunctionData({ abi: f.gasEscrow.abi, functionName: "grantRole", args: [dispute, timelock] }) },
    ];
    const p = { publicClient: f.publicClient, wallet: deployer, timelock, calls, salt: "grant the wiring to governance" };
    const scheduled = await scheduleCalls(p);
    await time.increaseTo(scheduled.readyAt);
    const error = await executeCalls(p).then(() => undefined, (e: unknown) => e as Error);
    expect(error, "the timelock granted itself a sealed role").to.be.instanceOf(Error);
    // The timelock bubbles the target's revert; Hardhat may report it only in its message.
    const data = rawRevertData(error) ?? (/return data: (0x[0-9a-f]+)/.exec(String(error))?.[1] as Hex | undefined);
    expect(data, String(error)).to.be.a("string");
    expect(decodeErrorResult({ abi: f.registry.abi, data: data! })).to.deep.include({ errorName: "RoleSealed", args: [slasher] });
    expect(await f.registry.read.hasRole([slasher, timelock])).to.equal(false);
    expect(await f.gasEscrow.read.hasRole([dispute, timelock])).to.equal(false);
  });

  it("leaves every deployed contract at least 2,048 bytes under EIP-170's 24,576 (issue 27 finding 10: room to grow)", async () => {
    const f = await loadFixture(deployedFixture);
    const LIMIT = 24_576;
    const HEADROOM = 2_048;
    const sizes: Record<string, number> = {};
    for (const [name, { address }] of Object.entries(f.deployment.contracts)) {
      const code = await f.publicClient.getCode({ address });
      expect(code, `${name} has code`).to.match(/^0x[0-9a-f]+$/);
      sizes[name] = (code!.length - 2) / 2;
    }
    // The contracts the issue names are all there, and each keeps the headroom.
    expect(Object.keys(sizes)).to.include.members(["DisputeManager", "GasEscrow", "GigEscrow", "ProviderRegistry", "Panels", "DisputeRules"]);
    for (const [name, size] of Object.entries(sizes)) {
      expect(size, `${name}: ${size} bytes, ${LIMIT - size} under the limit`).to.be.at.most(LIMIT - HEADROOM);
    }
    console.log(`      code sizes (bytes): ${Object.entries(sizes).map(([n, b]) => `${n} ${b}`).join(", ")}`);
  });

  it("refuses DisputeManager governance from anyone but the timelock", async () => {
    const f = await loadFixture(deployedFixture);
    const deployer = f.wallets[0]!;
    const error = await f.disputes.write
      .setAssetTerms([zeroAddress, { bondFloor: 1n, stakeRate: 1n }], { account: deployer.account })
      .then(() => undefined, (e: unknown) => e as Error);
    expect(error, "setAssetTerms from the deployer succeeded").to.be.instanceOf(Error);
    // Hardhat cannot attribute a library-linked contract deployed from raw bytecode, so it reports the revert
    // data only in its message.
    const data = /return data: (0x[0-9a-f]+)/.exec(String(error))?.[1] as Hex | undefined;
    expect(data, String(error)).to.be.a("string");
    const decoded = decodeErrorResult({ abi: f.disputes.abi, data: data! });
    expect(decoded.errorName).to.equal("NotGovernance");
    expect(decoded.args).to.deep.equal([getAddress(deployer.account.address)]);
  });
});
