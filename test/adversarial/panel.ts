/**
 * The dispute side shared by the adversarial Lane 0 suites: three arbitrators judging one package from the
 * chain, and a drawn panel enforcing the verdict nobody contests, every signer claiming its fee.
 */
import { time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { getAddress, zeroAddress, type Hex } from "viem";

import { finalizeCase, loadCaseContext, submitVerdict, type Deployment } from "../../arbitration/runner/chain";
import { packageToJson, parsePackage, type ChallengePackage } from "../../arbitration/documents/package";
import { disputeManagerDomain, signResolution } from "../../arbitration/lanes/resolution";
import { arbitrate, type ArbitrationRun } from "../../arbitration/runner/runner";
import { canon } from "../../channel-client/core/canonical";
import { DISPUTE_PARAMS, drawPanel, STATUS, supermajority, SYS, type System } from "../helpers/system";
import { BPS } from "./helpers";

export function deploymentOf(s: System): Deployment {
  return { disputeManager: getAddress(s.disputes.address), gasEscrow: getAddress(s.escrow.address), gigEscrow: getAddress(s.gigs.address), registry: getAddress(s.registry.address) };
}

/** Three arbitrators, each handed the package as bytes, each reading the chain itself. */
export async function threeRuns(s: System, caseId: Hex, pkg: ChallengePackage): Promise<ArbitrationRun[]> {
  const runs: ArbitrationRun[] = [];
  for (const i of [0, 1, 2]) {
    const received = parsePackage(canon(packageToJson(pkg)));
    const ctx = await loadCaseContext(s.publicClient, deploymentOf(s), caseId, received);
    runs.push(await arbitrate({ pkg: received, ctx, actor: `arbitrator-${i}` }));
  }
  return runs;
}

/** The fixture's arbitrators by address, named `arb<i>` for balance books. */
export function arbNames(s: System): Map<string, string> {
  const names = new Map<string, string>();
  for (const i of SYS.arbitrators) names.set(getAddress(s.wallets[i]!.account.address), `arb${i}`);
  return names;
}

/**
 * Nobody contests: the drawn panel's supermajority signs, the verdict stands past the appeal window, the case
 * is finalised and every signer claims its share of the fee (in ETH). Returns the challenger's bond, the fee
 * taken from it, each signer's share and the rounding dust the shares leave of the fee (burnt).
 */
export async function enforceByPanel(s: System, run: ArbitrationRun): Promise<{ bond: bigint; fee: bigint; shares: Record<string, bigint>; dust: bigint }> {
  const caseId = run.message.caseId;
  const c = await s.disputes.read.caseOf([caseId]);
  await time.increaseTo(BigInt(c.respondBy) + 1n);
  const panel = await drawPanel(s, caseId);
  const domain = disputeManagerDomain(s.chainId, getAddress(s.disputes.address));
  const signatures = await Promise.all(
    panel.slice(0, supermajority(panel.length)).map(async (signer) => ({ signer: signer.address, signature: await signResolution(signer, domain, run.message) })),
  );
  const decided = await submitVerdict({ wallet: s.watcher, publicClient: s.publicClient, deployment: deploymentOf(s), message: run.message, signatures });
  expect(decided.outcome).to.not.equal("slow_path");
  if (decided.outcome === "slow_path") throw new Error("unreachable");
  await time.increaseTo(decided.deadline + 1n);
  const finalized = await finalizeCase({ wallet: s.watcher, publicClient: s.publicClient, deployment: deploymentOf(s), caseId });
  expect(finalized.slashed).to.equal(run.message.slash);
  const names = arbNames(s);
  const shares: Record<string, bigint> = {};
  for (const { arbitrator, amount } of finalized.fees) {
    const wallet = s.wallets.find((w) => getAddress(w.account.address) === arbitrator)!;
    await s.publicClient.waitForTransactionReceipt({ hash: await s.disputes.write.claim([zeroAddress], { account: wallet.account }) });
    shares[names.get(arbitrator)!] = (shares[names.get(arbitrator)!] ?? 0n) + amount;
  }
  expect(Object.keys(shares).length).to.be.greaterThan(0);
  const fee = (c.challengerBond * BigInt(DISPUTE_PARAMS.feeBps)) / BPS;
  const paid = Object.values(shares).reduce((a, b) => a + b, 0n);
  expect(paid <= fee).to.equal(true);
  expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Resolved);
  return { bond: c.challengerBond, fee, shares, dust: fee - paid };
}
