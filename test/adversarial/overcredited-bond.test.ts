/**
 * Issue 28 item 4: a token that starts over-crediting after it was vetted (its dispute terms set, a gig funded in
 * it) cannot leave a surplus nobody owns in the DisputeManager: the bond is refused whole, and with honest
 * transfers the case opens and the DisputeManager holds exactly the bond. Exact balances of every party.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";

import { KIND, systemFixture, TOKEN_TERMS } from "../helpers/system";
import { expectRevert } from "../helpers/revert";
import { deliveredGig, ether, expectDeltas, mined, PACKAGE_HASH, snapshot, subjectOf, systemBook } from "./helpers";

async function toggleSystem() {
  const s = await systemFixture();
  const tbon = await hre.viem.deployContract("ToggleBonusToken");
  // Vetted: governance gives it dispute terms (an asset's first terms apply at once).
  await mined(s, s.disputes.write.setAssetTerms([tbon.address, TOKEN_TERMS]));
  for (const wallet of [s.client, s.provider]) {
    await mined(s, tbon.write.mint([wallet.account.address, ether("1000")]));
    for (const spender of [s.gigs.address, s.disputes.address]) await mined(s, tbon.write.approve([spender, ether("1000")], { account: wallet.account }));
  }
  return { ...s, tbon };
}

describe("issue 28 item 4: an over-crediting bond token leaves nothing stuck in the DisputeManager", function () {
  it("refuses the bond while the token over-credits (BondOvercredited), takes it exactly once it does not", async () => {
    const s = await loadFixture(toggleSystem);
    const tokens = { LGAS: s.token, TBON: s.tbon };
    const value = ether("10");
    const gigId = await deliveredGig(s, s.tbon.address, value);
    const bond = await s.disputes.read.bondFor([s.tbon.address, value, 1]);
    const snap = await snapshot(s, systemBook(s), tokens);

    await mined(s, s.tbon.write.setBonus([1n]));
    await expectRevert(s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account }), "BondOvercredited", [bond + 1n, bond]);
    await expectDeltas(s, snap, {});

    await mined(s, s.tbon.write.setBonus([0n]));
    const caseId = await s.disputes.read.nextCaseId([KIND.Gig, subjectOf(gigId)]);
    await mined(s, s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account }));
    await expectDeltas(s, snap, { TBON: { client: -bond, disputes: bond } });
    expect((await s.disputes.read.caseOf([caseId])).challengerBond).to.equal(bond);
  });
});
