/**
 * Issue 27 finding 8: rules that move mid-case. Governance could change the dispute parameters and an asset's
 * stake rate while a case was open, faster than a bond holder could leave, and one proposer key could grant itself
 * the escrows' DISPUTE_ROLE or the registry's SLASHER_ROLE to zero a closing channel's payout or slash any bond.
 *
 * (a) Every rule that moves money changes while a case is open — and is already in force for new cases before
 *     this one settles — yet the case settles under the rules it opened with, to the wei.
 * (b) A queued change reaches only cases opened at or after its `effectiveAt`; a provider and an arbitrator who
 *     start unbonding when the change is scheduled on the deployment's timelock withdraw before it applies.
 * (c) Once sealed, governance cannot grant (or revoke) the wiring roles, so it can neither zero a payout nor slash
 *     a bond; unsealed, it could (the attack the seal closes).
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { encodeFunctionData, getAddress, keccak256, parseEther, stringToBytes, zeroHash, type Address, type Hex, type LocalAccount, type PublicClient } from "viem";

import { deployAll } from "../../scripts/deploy";
import { executeCalls, scheduleCalls } from "../../scripts/timelock";
import type { Wallet } from "../../channel-client/chain/escrow";
import { gasEscrowDomain, toCompactSignature } from "../../channel-client/core/eip712";
import { sessionIdOf, type ChannelRef } from "../../channel-client/core/terms";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import { hardhatAccount, makeTerms } from "../helpers/fixtures";
import { expectRevert } from "../helpers/revert";
import {
  ARBITRATOR_ROLE,
  ARBITRATOR_STAKE,
  DISPUTE_PARAMS,
  drawPanel,
  KIND,
  PROVIDER_ROLE,
  quorumSignatures,
  STATUS,
  SYS,
  systemFixture,
  TOKEN_TERMS,
  UNBONDING_DELAY,
  unsealedSystemFixture,
  VERDICT,
  type DisputeParams,
  type System,
} from "../helpers/system";

const BURN: Address = "0x000000000000000000000000000000000000dEaD";
const BPS = 10_000n;
const P = DISPUTE_PARAMS;
const GIG = parseEther("1");
const ICS_HASH: Hex = keccak256(stringToBytes("intent contract schema"));
const DELIVERABLE: Hex = keccak256(stringToBytes("deliverable bundle"));
const PACKAGE_HASH: Hex = keccak256(stringToBytes("challenge package"));
const RESOLUTION_HASH: Hex = keccak256(stringToBytes("resolution document"));
const OTHER_RESOLUTION_HASH: Hex = keccak256(stringToBytes("the appeal panel's resolution document"));
const NO_STATE = { deposit: 0n, seq: 0n, amount: 0n, receiptRoot: zeroHash, feeBps: 0 };

/** What governance moves mid-case: every rule that decides who is paid what (each far from the opening one). */
const MOVED: DisputeParams = { ...P, slashCapBps: 1, overturnSlashBps: 10_000, feeBps: 3_000, burnBps: 7_000, panelSize: 5 };
/** LaborGas's stake rate moved a million-fold: stake at risk that covered a case no longer does. */
const MOVED_TERMS = { bondFloor: TOKEN_TERMS.bondFloor, stakeRate: parseEther("1000000") };

const gigSubject = (gigId: bigint): Hex => `0x${gigId.toString(16).padStart(64, "0")}`;

/** A LaborGas gig of 1 funded, accepted and delivered. */
async function deliveredTokenGig(s: System): Promise<bigint> {
  const deadline = BigInt(await time.latest()) + 86_400n;
  await s.gigs.write.fund([s.provider.account.address, s.token.address, GIG, ICS_HASH, Number(deadline), 3600], { account: s.client.account });
  const gigId = await s.gigs.read.gigCount();
  await s.gigs.write.accept([gigId], { account: s.provider.account });
  await s.gigs.write.deliver([gigId, DELIVERABLE, zeroHash], { account: s.provider.account });
  return gigId;
}

async function openTokenCase(s: System, gigId: bigint): Promise<Hex> {
  const caseId = await s.disputes.read.nextCaseId([KIND.Gig, gigSubject(gigId)]);
  await s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account });
  return caseId;
}

async function submit(s: System, caseId: Hex, m: { verdict: number; refund: bigint; slash: bigint; resolutionHash?: Hex }, signers: LocalAccount[]) {
  const message = { caseId, resolutionHash: RESOLUTION_HASH, ...m };
  await s.disputes.write.submitVerdict([message, await quorumSignatures(s, message, signers)], { account: s.watcher.account });
}

async function deployedSystem() {
  return deployAll(hre);
}

describe("issue 27 finding 8: rules that move mid-case", function () {
  /*//////////////////////////////////////////////////////////////
                (a) A CASE KEEPS THE RULES IT OPENED WITH
  //////////////////////////////////////////////////////////////*/

  it("(a) cap, overturn slash, fee, burn, panel size and stake rate all move while a case is open: it settles under its opening rules, every balance exact", async function () {
    const s = await loadFixture(systemFixture);
    const minedAt = async (hash: Hex) =>
      (await s.publicClient.getBlock({ blockNumber: (await s.publicClient.waitForTransactionReceipt({ hash })).blockNumber })).timestamp;
    const paramsAt = await minedAt(await s.disputes.write.setParams([MOVED]));
    const termsAt = await minedAt(await s.disputes.write.setAssetTerms([s.token.address, MOVED_TERMS]));
    // Each applies the unbonding delay after it was set; both are in force from the later one on.
    const effectiveAt = Number(termsAt + UNBONDING_DELAY);
    expect(termsAt > paramsAt).to.equal(true);

    // Parties' LaborGas from here on (the case is all in LaborGas, so every wei shows).
    const who: Record<string, Address> = {
      client: s.client.account.address,
      provider: s.provider.account.address,
      burn: BURN,
      manager: s.disputes.address,
      gigs: s.gigs.address,
      registry: s.registry.address,
      ...Object.fromEntries(SYS.arbitrators.map((i) => [`arb${i}`, hardhatAccount(i).address])),
    };
    const book = async () => Object.fromEntries(await Promise.all(Object.entries(who).map(async ([k, a]) => [k, await s.token.read.balanceOf([a])] as const)));

    // The case opens two hours before the change applies, and is contested and drawn under the old rules.
    await time.increaseTo(effectiveAt - 7200);
    const before = await book();
    const gigId = await deliveredTokenGig(s);
    const caseId = await openTokenCase(s, gigId);
    const bond = (await s.disputes.read.caseOf([caseId])).challengerBond;
    expect(bond).to.equal(parseEther("0.3")); // max(1 × 10 %, 0.01) × 3
    await s.disputes.write.respond([caseId], { account: s.provider.account });
    const panel0 = await drawPanel(s, caseId);
    expect(panel0).to.have.length(P.panelSize);

    // The change is now in force for new cases; this one is still deliberating.
    await time.increaseTo(effectiveAt);
    expect(await s.disputes.read.params()).to.deep.equal(MOVED);
    expect(await s.disputes.read.assetTerms([s.token.address])).to.deep.equal(MOVED_TERMS);

    // Round 0: ChallengerWins with a slash of 2 (inside the opening cap of 200 % of 1 at 1:1; the moved cap is
    // 0.0001 and the moved stake rate would make the signers' stake at risk far too low).
    const refund = parseEther("0.75");
    await submit(s, caseId, { verdict: VERDICT.ChallengerWins, refund, slash: parseEther("2") }, panel0.slice(0, 2));
    // The provider appeals at lane 1 + 1 under the opening multiplier; round 1 seats 2 × 3 − 1 = 5 (the moved
    // size would need 9, more than the pool holds outside round 0).
    const appealBond = bond * 3n;
    const providerBefore = await s.token.read.balanceOf([s.provider.account.address]);
    await s.disputes.write.appeal([caseId], { account: s.provider.account });
    expect(providerBefore - (await s.token.read.balanceOf([s.provider.account.address]))).to.equal(appealBond);
    const panel1 = await drawPanel(s, caseId);
    expect(panel1).to.have.length(2 * P.panelSize - 1);
    await submit(s, caseId, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n, resolutionHash: OTHER_RESOLUTION_HASH }, panel1.slice(0, 4));
    const { deadline } = await s.disputes.read.caseOf([caseId]);
    await time.increaseTo(deadline + 1);
    await s.disputes.write.finalize([caseId, NO_STATE], { account: s.watcher.account });
    for (const k of panel1.slice(0, 4)) await s.disputes.write.claim([s.token.address], { account: k.address });
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Resolved);

    // Under the opening rules: the client's bond goes to the provider less 20 % burnt and 10 % fee (the four
    // coherent signers' shares); the appellant's bond comes back; the two overturned round-0 signers lose 50 % of
    // their stake to the appellant, 20 % of it burnt.
    const burnt = (bond * BigInt(P.burnBps)) / BPS;
    const fee = (bond * BigInt(P.feeBps)) / BPS;
    const share = fee / 4n;
    const overturn = (ARBITRATOR_STAKE * BigInt(P.overturnSlashBps)) / BPS;
    const overturnBurnt = (overturn * BigInt(P.burnBps)) / BPS;
    const expected: Record<string, bigint> = {
      client: -GIG - bond,
      // Its own bond and the client's less burn and fee; its appeal bond back; the overturned signers' slashes.
      provider: GIG + bond - burnt - fee + 2n * (overturn - overturnBurnt),
      burn: burnt + 2n * overturnBurnt,
      manager: fee - 4n * share,
      gigs: 0n,
      registry: -2n * overturn,
    };
    const signers1 = new Set(panel1.slice(0, 4).map((k) => getAddress(k.address)));
    for (const i of SYS.arbitrators) expected[`arb${i}`] = signers1.has(getAddress(hardhatAccount(i).address)) ? share : 0n;
    const after = await book();
    expect(Object.fromEntries(Object.keys(who).map((k) => [k, after[k]! - before[k]!]))).to.deep.equal(expected);
    for (const k of panel0.slice(0, 2)) {
      const b = await s.registry.read.bondOf([ARBITRATOR_ROLE, k.address]);
      expect(b.active + b.pending).to.equal(ARBITRATOR_STAKE - overturn);
    }
    expect(await s.disputes.read.caseParams([caseId])).to.deep.equal(P);
    expect((await s.disputes.read.caseOf([caseId])).stakeRate).to.equal(TOKEN_TERMS.stakeRate);
  });

  /*//////////////////////////////////////////////////////////////
                 (b) WHO A CHANGE REACHES, AND WHO CAN LEAVE
  //////////////////////////////////////////////////////////////*/

  it("(b) a queued change reaches no case opened before effectiveAt and every case opened from it on", async function () {
    const s = await loadFixture(systemFixture);
    const next: DisputeParams = { ...P, riskBps: 2_000, laneMultiplier: 2 };
    const nextTerms = { bondFloor: parseEther("0.5"), stakeRate: parseEther("2") };
    await s.disputes.write.setParams([next]);
    const [queued, paramsFrom] = await s.disputes.read.latestParams();
    expect(queued).to.deep.equal(next);
    const hash = await s.disputes.write.setAssetTerms([s.token.address, nextTerms]);
    const termsSetAt = (await s.publicClient.getBlock({ blockNumber: (await s.publicClient.waitForTransactionReceipt({ hash })).blockNumber })).timestamp;
    const termsFrom = Number(termsSetAt + UNBONDING_DELAY);
    expect(termsFrom).to.be.greaterThan(paramsFrom);
    // Gigs delivered shortly before (a gig is disputable for an hour after delivery).
    await time.increaseTo(paramsFrom - 600);
    const gigs = [await deliveredTokenGig(s), await deliveredTokenGig(s), await deliveredTokenGig(s)];
    // The last second before the parameters apply: old parameters, old terms.
    await time.setNextBlockTimestamp(paramsFrom - 1);
    const early = await openTokenCase(s, gigs[0]!);
    // From paramsFrom: the new parameters; the terms, set a block later, apply from termsFrom.
    await time.setNextBlockTimestamp(paramsFrom);
    const paramsOnly = await openTokenCase(s, gigs[1]!);
    await time.setNextBlockTimestamp(termsFrom);
    const both = await openTokenCase(s, gigs[2]!);
    await time.increase(7 * 24 * 3600);
    const late = await openTokenCase(s, await deliveredTokenGig(s));
    const ids = [early, paramsOnly, both, late];
    expect(await Promise.all(ids.map((id) => s.disputes.read.caseParams([id])))).to.deep.equal([P, next, next, next]);
    // Bonds: max(1 × 10 %, 0.01) × 3 = 0.3; max(1 × 20 %, 0.01) × 2 = 0.4; max(1 × 20 %, 0.5) × 2 = 1.
    const cases = await Promise.all(ids.map((id) => s.disputes.read.caseOf([id])));
    expect(cases.map((c) => c.challengerBond)).to.deep.equal([parseEther("0.3"), parseEther("0.4"), parseEther("1"), parseEther("1")]);
    expect(cases.map((c) => c.stakeRate)).to.deep.equal([TOKEN_TERMS.stakeRate, TOKEN_TERMS.stakeRate, nextTerms.stakeRate, nextTerms.stakeRate]);
    // A queued change superseded before it applies never applies.
    await s.disputes.write.setParams([{ ...P, riskBps: 3_000 }]);
    await s.disputes.write.setParams([P]);
    const [, later] = await s.disputes.read.latestParams();
    await time.increaseTo(later);
    expect(await s.disputes.read.params()).to.deep.equal(P);
  });

  it("(b) on the deployment (timelock governance): a provider and an arbitrator who start unbonding when the change is scheduled withdraw before it applies", async function () {
    const deployment = await loadFixture(deployedSystem);
    const publicClient = (await hre.viem.getPublicClient()) as unknown as PublicClient;
    const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
    const c = deployment.contracts;
    const token = await hre.viem.getContractAt("LaborGas", c.LaborGas.address);
    const registry = await hre.viem.getContractAt("ProviderRegistry", c.ProviderRegistry.address);
    const disputes = await hre.viem.getContractAt("DisputeManager", c.DisputeManager.address);
    const deployer = wallets[0]!;
    const [provider, arbitrator] = [wallets[SYS.provider]!, wallets[SYS.arbitrators[0]]!];
    const amount = parseEther("5000");
    for (const w of [provider, arbitrator]) {
      await token.write.mint([w.account.address, amount], { account: deployer.account });
      await token.write.approve([registry.address, amount], { account: w.account });
    }
    const label = (x: string): Hex => keccak256(stringToBytes(x));
    await registry.write.registerProvider(["https://p.example", label("caps"), label("did:p"), label("pk:p")], { account: provider.account });
    await registry.write.registerArbitrator([(await disputes.read.params()).judgeRuntimeHash, label("did:a"), label("pk:a")], { account: arbitrator.account });
    await registry.write.bond([PROVIDER_ROLE, amount], { account: provider.account });
    await registry.write.bond([ARBITRATOR_ROLE, amount], { account: arbitrator.account });

    const old = await disputes.read.params();
    const moved = { ...old, slashCapBps: 50_000, overturnSlashBps: 10_000 };
    const calls = [{ target: disputes.address, data: encodeFunctionData({ abi: disputes.abi, functionName: "setParams", args: [moved] }) }];
    const p = { publicClient, wallet: deployer, timelock: deployment.timelock, calls, salt: "issue 27 finding 8" };
    const scheduled = await scheduleCalls(p);
    // Both see the scheduled call and start leaving at once.
    await registry.write.requestUnbond([PROVIDER_ROLE, amount], { account: provider.account });
    await registry.write.requestUnbond([ARBITRATOR_ROLE, amount], { account: arbitrator.account });
    await time.increaseTo(scheduled.readyAt);
    await executeCalls(p);
    const [, effectiveAt] = await disputes.read.latestParams();
    const unlocks = await Promise.all([
      registry.read.bondOf([PROVIDER_ROLE, provider.account.address]),
      registry.read.bondOf([ARBITRATOR_ROLE, arbitrator.account.address]),
    ]);
    for (const b of unlocks) expect(Number(b.unlockAt)).to.be.lessThan(effectiveAt);
    await time.increaseTo(Math.max(...unlocks.map((b) => Number(b.unlockAt))));
    const before = await Promise.all([provider, arbitrator].map((w) => token.read.balanceOf([w.account.address])));
    await registry.write.withdraw([PROVIDER_ROLE], { account: provider.account });
    await registry.write.withdraw([ARBITRATOR_ROLE], { account: arbitrator.account });
    const after = await Promise.all([provider, arbitrator].map((w) => token.read.balanceOf([w.account.address])));
    expect(after.map((a, i) => a - before[i]!)).to.deep.equal([amount, amount]);
    expect(await time.latest()).to.be.lessThan(effectiveAt);
    // Gone before the new rules apply to any case: the rules in force are still the old ones.
    expect(await disputes.read.params()).to.deep.equal(old);
    expect(await token.read.balanceOf([registry.address])).to.equal(0n);
  });

  /*//////////////////////////////////////////////////////////////
                      (c) THE WIRING ROLES ARE SEALED
  //////////////////////////////////////////////////////////////*/

  /** A LaborGas session of 2 whose provider closed unilaterally with a ticket for 1 (challenge window open). */
  async function closing(s: System) {
    const terms = makeTerms(s.token.address, { challengeDuration: 3600n });
    const hash = await s.escrow.write.open([terms, parseEther("2")], { account: s.client.account });
    const ref: ChannelRef = { terms, openedAt: (await s.publicClient.waitForTransactionReceipt({ hash })).blockNumber };
    const domain = gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: getAddress(s.escrow.address) });
    const sessionId = sessionIdOf(domain, ref);
    const amount = parseEther("1");
    const ticket = { sessionId, provider: terms.provider, termsHash: terms.termsHash, seq: 1n, cumulativeAmount: amount, receiptRoot: zeroHash };
    const { signature } = await signPaymentTicket({ account: hardhatAccount(SYS.payer), domain, ticket });
    await s.escrow.write.closeUnilateral([terms, ref.openedAt, { seq: 1n, cumulativeAmount: amount, receiptRoot: zeroHash, sig: toCompactSignature(signature) }], {
      account: s.provider.account,
    });
    const recorded = { deposit: parseEther("2"), seq: 1n, amount, receiptRoot: zeroHash, feeBps: 0 };
    return { ref, sessionId, recorded };
  }

  /** Governance's attempt: take DISPUTE_ROLE and SLASHER_ROLE, zero the closing channel's payout, slash the provider's bond. */
  async function governanceAttempt(s: System, sessionId: Hex, recorded: typeof NO_STATE) {
    const gov = s.governance.account.address;
    await s.escrow.write.grantRole([await s.escrow.read.DISPUTE_ROLE(), gov]);
    await s.registry.write.grantRole([await s.registry.read.SLASHER_ROLE(), gov]);
    await s.escrow.write.freeze([sessionId, recorded]);
    await s.escrow.write.release([sessionId, recorded, recorded.amount]);
    await s.registry.write.slash([PROVIDER_ROLE, s.provider.account.address, parseEther("500"), gov, 0]);
  }

  async function balances(s: System) {
    const who = [s.client.account.address, s.provider.account.address, s.governance.account.address, s.escrow.address, s.registry.address];
    const tokens = await Promise.all(who.map((a) => s.token.read.balanceOf([a])));
    const bond = await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address]);
    return { client: tokens[0]!, provider: tokens[1]!, governance: tokens[2]!, escrow: tokens[3]!, registry: tokens[4]!, providerBond: bond.active + bond.pending };
  }

  it("(c) sealed: governance cannot grant itself DISPUTE_ROLE or SLASHER_ROLE (RoleSealed), nor revoke the DisputeManager's; the payout and the bond stand", async function () {
    const s = await loadFixture(systemFixture);
    const { ref, sessionId, recorded } = await closing(s);
    const start = await balances(s);
    const gov = s.governance.account.address;
    const roles = {
      escrowDispute: await s.escrow.read.DISPUTE_ROLE(),
      gigDispute: await s.gigs.read.DISPUTE_ROLE(),
      slasher: await s.registry.read.SLASHER_ROLE(),
      locker: await s.registry.read.LOCKER_ROLE(),
    };
    expect([await s.escrow.read.rolesSealed(), await s.gigs.read.rolesSealed(), await s.registry.read.rolesSealed()]).to.deep.equal([true, true, true]);
    await expectRevert(s.escrow.write.grantRole([roles.escrowDispute, gov]), "RoleSealed", [roles.escrowDispute], s.escrow.abi);
    await expectRevert(s.gigs.write.grantRole([roles.gigDispute, gov]), "RoleSealed", [roles.gigDispute], s.gigs.abi);
    await expectRevert(s.registry.write.grantRole([roles.slasher, gov]), "RoleSealed", [roles.slasher], s.registry.abi);
    await expectRevert(s.registry.write.grantRole([roles.locker, gov]), "RoleSealed", [roles.locker], s.registry.abi);
    // Nor unwire the DisputeManager (which would freeze every case it holds).
    await expectRevert(s.escrow.write.revokeRole([roles.escrowDispute, s.disputes.address]), "RoleSealed", [roles.escrowDispute], s.escrow.abi);
    await expectRevert(s.registry.write.revokeRole([roles.slasher, s.disputes.address]), "RoleSealed", [roles.slasher], s.registry.abi);
    // Without the roles the powers themselves are refused.
    await expectRevert(s.escrow.write.release([sessionId, recorded, recorded.amount]), "AccessControlUnauthorizedAccount", [getAddress(gov), roles.escrowDispute], s.escrow.abi);
    await expectRevert(
      s.registry.write.slash([PROVIDER_ROLE, s.provider.account.address, parseEther("500"), gov, 0]),
      "AccessControlUnauthorizedAccount",
      [getAddress(gov), roles.slasher],
      s.registry.abi,
    );
    // Sealing again changes nothing (idempotent), and only the admin may seal.
    await s.escrow.write.sealRoles();
    await expectRevert(s.escrow.write.sealRoles({ account: s.stranger.account }), "AccessControlUnauthorizedAccount", undefined, s.escrow.abi);
    expect(await balances(s)).to.deep.equal(start);
    expect(await s.escrow.read.hasRole([roles.escrowDispute, s.disputes.address])).to.equal(true);
    expect(await s.registry.read.hasRole([roles.slasher, s.disputes.address])).to.equal(true);

    // The channel finalises as recorded: the provider is paid 1, the client refunded 1, the bond untouched.
    await time.increase(3601);
    await s.escrow.write.finalize([ref.terms, ref.openedAt, recorded], { account: s.watcher.account });
    const end = await balances(s);
    expect({ ...end }).to.deep.equal({
      ...start,
      provider: start.provider + parseEther("1"),
      client: start.client + parseEther("1"),
      escrow: start.escrow - parseEther("2"),
    });
  });

  it("(c) unsealed (before sealRoles): the same key zeroes the payout and slashes the bond — the power the seal removes", async function () {
    const s = await loadFixture(unsealedSystemFixture);
    const { ref, sessionId, recorded } = await closing(s);
    const start = await balances(s);
    expect(await s.escrow.read.rolesSealed()).to.equal(false);
    await governanceAttempt(s, sessionId, recorded);
    await s.escrow.write.finalize([ref.terms, ref.openedAt, { ...recorded, amount: 0n }], { account: s.watcher.account });
    const end = await balances(s);
    expect(end).to.deep.equal({
      ...start,
      client: start.client + parseEther("2"),
      governance: start.governance + parseEther("500"),
      escrow: start.escrow - parseEther("2"),
      registry: start.registry - parseEther("500"),
      providerBond: start.providerBond - parseEther("500"),
    });
  });
});
