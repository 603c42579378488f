/**
 * DisputeManager.postSignatures and publishEvidence (decision 0031): posted signatures reach the chain as
 * events only from members of the deliberating round's panel; evidence URIs only from a party, before the
 * case ends; neither stores anything a verdict depends on.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { getAddress, keccak256, parseEther, parseEventLogs, stringToBytes, zeroAddress, zeroHash, type Hex } from "viem";

import { disputeManagerAbi } from "../../channel-client/abi/DisputeManager";
import { hardhatAccount } from "../helpers/fixtures";
import { expectRevert } from "../helpers/revert";
import { drawPanel, KIND, quorumSignatures, STATUS, SYS, systemFixture, type ResolutionMessage, type System } from "../helpers/system";

const PACKAGE_HASH = keccak256(stringToBytes("package"));

async function openCase(s: System): Promise<Hex> {
  const now = await time.latest();
  await s.gigs.write.fund([s.provider.account.address, zeroAddress, parseEther("1"), keccak256(stringToBytes("ics")), now + 86_400 * 30, 3600], { account: s.client.account, value: parseEther("1") });
  const gigId = await s.gigs.read.gigCount();
  await s.gigs.write.accept([gigId], { account: s.provider.account });
  await s.gigs.write.deliver([gigId, keccak256(stringToBytes("d")), zeroHash], { account: s.provider.account });
  const caseId = await s.disputes.read.nextCaseId([KIND.Gig, `0x${gigId.toString(16).padStart(64, "0")}`]);
  const bond = await s.disputes.read.bondFor([zeroAddress, parseEther("1"), 1]);
  await s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account, value: bond });
  return caseId;
}

const verdictOf = (caseId: Hex): ResolutionMessage => ({ caseId, verdict: 2, refund: 0n, slash: 0n, resolutionHash: keccak256(stringToBytes("challenger at fault")) });

describe("DisputeManager: postSignatures and publishEvidence", function () {
  it("publishEvidence: either party, any time before the case ends; emits the URI; anyone else is refused", async function () {
    const s = await loadFixture(systemFixture);
    const caseId = await openCase(s);
    const hash = await s.disputes.write.publishEvidence([caseId, "http://127.0.0.1:1/"], { account: s.client.account });
    const receipt = await s.publicClient.waitForTransactionReceipt({ hash });
    const [event] = parseEventLogs({ abi: disputeManagerAbi, logs: receipt.logs, eventName: "EvidencePublished" });
    expect(event!.args).to.deep.equal({ caseId, party: getAddress(s.client.account.address), uri: "http://127.0.0.1:1/" });
    await s.disputes.write.publishEvidence([caseId, "data:application/json,{}"], { account: s.provider.account });
    await expectRevert(s.disputes.write.publishEvidence([caseId, "x"], { account: s.stranger.account }), "NotAParty", [caseId, getAddress(s.stranger.account.address)]);
    await expectRevert(s.disputes.write.publishEvidence([keccak256(stringToBytes("none")), "x"], { account: s.client.account }), "UnknownCase", [keccak256(stringToBytes("none"))]);
  });

  it("postSignatures: only while deliberating, only panel members, emitted with the round; a supermajority posted is then submitted by anyone", async function () {
    const s = await loadFixture(systemFixture);
    const caseId = await openCase(s);
    const message = verdictOf(caseId);
    // Before a panel sits: refused.
    await expectRevert(s.disputes.write.postSignatures([message, []]), "WrongCaseStatus", [caseId, STATUS.Open]);
    await time.increaseTo(BigInt((await s.disputes.read.caseOf([caseId])).respondBy) + 1n);
    const panel = await drawPanel(s, caseId);
    // A key off the panel: refused, whoever sends it.
    const outsider = SYS.arbitrators.map(hardhatAccount).find((a) => !panel.some((m) => m.address === a.address))!;
    const [outsiderSig] = await quorumSignatures(s, message, [outsider]);
    await expectRevert(s.disputes.write.postSignatures([message, [outsiderSig!]], { account: s.stranger.account }), "NotOnPanel", [caseId, getAddress(outsider.address)]);
    // Each member's signature is posted (here relayed by a stranger: who sends it does not matter).
    const sigs = await quorumSignatures(s, message, panel);
    const posted: { round: number; signatures: readonly { r: Hex; vs: Hex }[] }[] = [];
    for (const i of panel.keys()) {
      const hash = await s.disputes.write.postSignatures([message, [sigs[i]!]], { account: s.stranger.account });
      const receipt = await s.publicClient.waitForTransactionReceipt({ hash });
      const [e] = parseEventLogs({ abi: disputeManagerAbi, logs: receipt.logs, eventName: "SignaturesPosted" });
      posted.push({ round: e!.args.round, signatures: e!.args.signatures });
      expect(e!.args.resolution).to.deep.equal(message);
    }
    expect(posted.map((p) => p.round)).to.deep.equal([0, 0, 0]);
    expect(posted.map((p) => p.signatures[0])).to.deep.equal(sigs);
    // Posting stores nothing: the case is still deliberating until someone submits the posted signatures.
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Deliberating);
    await s.disputes.write.submitVerdict([message, sigs.slice(0, 2)], { account: s.stranger.account });
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Decided);
    // After the decision: refused.
    await expectRevert(s.disputes.write.postSignatures([message, [sigs[2]!]]), "WrongCaseStatus", [caseId, STATUS.Decided]);
  });

  it("postSignatures: refused after the round's deadline", async function () {
    const s = await loadFixture(systemFixture);
    const caseId = await openCase(s);
    await time.increaseTo(BigInt((await s.disputes.read.caseOf([caseId])).respondBy) + 1n);
    const panel = await drawPanel(s, caseId);
    const c = await s.disputes.read.caseOf([caseId]);
    await time.increaseTo(BigInt(c.deadline) + 1n);
    const [sig] = await quorumSignatures(s, verdictOf(caseId), [panel[0]!]);
    await expectRevert(s.disputes.write.postSignatures([verdictOf(caseId), [sig!]]), "DeadlinePassed", [caseId, Number(c.deadline)]);
  });
});
