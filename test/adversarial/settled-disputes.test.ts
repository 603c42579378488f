/**
 * Adversarial suite, issue 12 item 5: a cooperatively settled session stays disputable for the DisputeManager's
 * `settledDisputeWindow`, against the co-signed summary root, and the refund comes out of the provider's SLA
 * bond (in the registry's bond token, at the asset's stake rate) because the escrow has already paid out.
 * Every scenario asserts the exact balance change of every party, both escrows, the DisputeManager, the
 * registry, the treasury, the burn address and every fixture arbitrator, in ETH and LaborGas, gas added back.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { getAddress, parseEventLogs, zeroAddress } from "viem";

import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { receiptLeafFromHashes } from "../../channel-client/core/leaf";
import { expectRevert } from "../helpers/revert";
import {
  DISPUTE_PARAMS,
  ETH_STAKE_RATE,
  KIND,
  MIN_PROVIDER_BOND,
  PROVIDER_ROLE,
  quorumSignatures,
  STATUS,
  systemFixture,
  VERDICT,
  drawPanel,
  type System,
} from "../helpers/system";
import {
  sortAsc,
  fullBook,
  arbName,
  BPS,
  closeCooperative,
  ether,
  expectDeltas,
  feeOf,
  label,
  mined,
  openSession,
  PACKAGE_HASH,
  RESOLUTION_HASH,
  signSummary,
  snapshot,
  type ClosingState,
} from "./helpers";

const P = DISPUTE_PARAMS;
const burnOf = (x: bigint): bigint => (x * BigInt(P.burnBps)) / BPS;
const arbFeeOf = (x: bigint): bigint => (x * BigInt(P.feeBps)) / BPS;
const PROVIDER_BOND = MIN_PROVIDER_BOND * 5n;
/** ETH → LaborGas at the test stake rate. */
const inStake = (wei: bigint): bigint => (wei * ETH_STAKE_RATE) / 10n ** 18n;

/** An ETH channel of 2 settled cooperatively for 1 ETH over a root of 8 receipt leaves. */
async function settledSession(s: System) {
  const session = await openSession(s, zeroAddress);
  const leaves = Array.from({ length: 8 }, (_, i) => ({ receiptHash: label(`settled receipt ${i}`), ticketHash: label(`settled ticket ${i}`) }));
  const tree = ReceiptAccumulator.fromLeaves(leaves.map((l) => receiptLeafFromHashes(l.receiptHash, l.ticketHash)));
  const amount = ether("1");
  const summary = await signSummary(session, 8n, amount, { root: tree.root() });
  await mined(s, closeCooperative(session, summary, s.watcher));
  const settled: ClosingState = await s.escrow.read.settledState([8n, amount, tree.root()]);
  return { session, leaves, tree, amount, settled };
}
type Settled = Awaited<ReturnType<typeof settledSession>>;

/** The end of the bond hold a cooperative close at `settledAt` asks for: `hold` later, rounded up to a whole hour. */
const HOUR = 3600n;
const holdEnd = (settledAt: bigint, hold: bigint): bigint => ((settledAt + hold + HOUR - 1n) / HOUR) * HOUR;

function openSettledCase(s: System, t: Settled, from: System["watcher"], bond: bigint, recorded: ClosingState = t.settled, index = 3) {
  const leaf = t.leaves[index]!;
  return s.disputes.write.openSessionCase(
    [t.session.ref.terms, t.session.ref.openedAt, recorded, leaf.receiptHash, leaf.ticketHash, t.tree.proof(index), 1, PACKAGE_HASH],
    { account: from.account, value: bond },
  );
}

describe("adversarial: disputes on a cooperatively settled session (issue 12)", function () {
  async function system() {
    return systemFixture();
  }

  it("attack: a provider over-charges in a co-signed summary and walks away — the payer's case, decided by a drawn panel, refunds the funder from the provider's SLA bond", async function () {
    const s = await loadFixture(system);
    const snap = await snapshot(s, fullBook(s));
    const t = await settledSession(s);
    const { sessionId } = t.session;
    const routingFee = feeOf(t.amount, t.session.feeBps);

    // The settlement paid out at once, and the word stays: Settled, never open again.
    expect(await s.escrow.read.phaseOf([sessionId])).to.equal(5);
    expect(await s.escrow.read.depositOf([sessionId])).to.equal(0n);
    const [matches] = await s.escrow.read.settledInfo([sessionId, t.settled]);
    expect(matches).to.equal(true);
    expect((await s.escrow.read.closingInfo([sessionId, t.settled]))[0]).to.equal(false);

    const caseId = await s.disputes.read.nextCaseId([KIND.Session, sessionId]);
    const bond = await s.disputes.read.bondFor([zeroAddress, t.amount, 1]);
    await mined(s, openSettledCase(s, t, s.payerWallet, bond));
    const opened = await s.disputes.read.caseOf([caseId]);
    expect(opened.value).to.equal(t.amount);
    expect(getAddress(opened.related)).to.equal(getAddress(s.client.account.address));
    // Nothing to freeze (the escrow paid out); the provider's bond is locked until the case ends.
    expect(await s.escrow.read.phaseOf([sessionId])).to.equal(5);
    await expectRevert(
      s.registry.write.requestUnbond([PROVIDER_ROLE, 1n], { account: s.provider.account }),
      "BondIsLocked",
    );
    await mined(s, s.disputes.write.respond([caseId], { account: s.provider.account, value: bond }));

    const panel = await drawPanel(s, caseId);
    const refund = ether("0.4");
    const slash = ether("50");
    const message = { caseId, verdict: VERDICT.ChallengerWins, refund, slash, resolutionHash: RESOLUTION_HASH };
    const signatures = await quorumSignatures(s, message, sortAsc(panel));
    await mined(s, s.disputes.write.submitVerdict([message, signatures], { account: s.watcher.account }));
    await time.increase(P.appealWindow + 1);
    await mined(s, s.disputes.write.finalize([caseId, t.settled], { account: s.watcher.account }));
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Resolved);

    const fee = arbFeeOf(bond);
    const share = fee / BigInt(panel.length);
    for (const k of panel) await mined(s, s.disputes.write.claim([zeroAddress], { account: s.wallets.find((w) => getAddress(w.account.address) === getAddress(k.address))!.account }));
    const dust = fee - share * BigInt(panel.length);

    const refundInStake = inStake(refund); // 400 LaborGas
    const eth: Record<string, bigint> = {
      client: -ether("2") + (ether("2") - t.amount), // funded 2, the settlement refunded 1
      provider: t.amount - routingFee - bond,
      escrow: routingFee, // accrued for the treasury
      payer: bond - burnOf(bond) - fee, // wins the provider's bond less the burnt share and the panel's fee
      burn: burnOf(bond) + dust,
    };
    for (const k of panel) eth[arbName(s, k.address)] = share;
    await expectDeltas(s, snap, {
      ETH: eth,
      LGAS: {
        client: refundInStake, // the funder's refund, from the bond
        payer: slash - burnOf(slash), // the SLA slash to the challenger
        burn: burnOf(slash),
        registry: -(refundInStake + slash),
      },
    });
    const left = await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address]);
    expect(left.active).to.equal(PROVIDER_BOND - refundInStake - slash);
    expect(await s.escrow.read.phaseOf([sessionId])).to.equal(5);
  });

  it("attack: a settled session is disputed after its window — refused, nobody's balance moves but the gas", async function () {
    const s = await loadFixture(system);
    const t = await settledSession(s);
    const bond = await s.disputes.read.bondFor([zeroAddress, t.amount, 1]);
    await time.increase(P.settledDisputeWindow);
    const snap = await snapshot(s, fullBook(s));
    const leaf = t.leaves[0]!;
    const args = [t.session.ref.terms, t.session.ref.openedAt, t.settled, leaf.receiptHash, leaf.ticketHash, t.tree.proof(0), 1, PACKAGE_HASH] as const;
    await time.increase(1);
    const settledAt = (await s.escrow.read.settledInfo([t.session.sessionId, t.settled]))[1];
    await expectRevert(s.disputes.write.openSessionCase(args, { account: s.payerWallet.account, value: bond }), "SettledDisputeWindowClosed", [
      t.session.sessionId,
      BigInt(settledAt) + BigInt(P.settledDisputeWindow),
    ]);
    await expectDeltas(s, snap, {});
  });

  it("attack: the funder, a forged summary, a forged proof and a second settlement are all refused on a settled session; its id never reopens", async function () {
    const s = await loadFixture(system);
    const t = await settledSession(s);
    const { sessionId } = t.session;
    const bond = await s.disputes.read.bondFor([zeroAddress, t.amount, 1]);
    const snap = await snapshot(s, fullBook(s));

    // Only the payer disputes a settled session (the funder it named receives the refund).
    await expectRevert(openSettledCase(s, t, s.client, bond), "NotTheChallengerSide", [sessionId, getAddress(s.client.account.address)]);
    await expectRevert(openSettledCase(s, t, s.stranger, bond), "NotTheChallengerSide", [sessionId, getAddress(s.stranger.account.address)]);
    // A summary the parties did not settle (a larger amount, another root) matches nothing.
    const inflated: ClosingState = { ...t.settled, amount: ether("2"), deposit: ether("2") };
    await expectRevert(openSettledCase(s, t, s.payerWallet, bond, inflated), "ClosingStateMismatch", [sessionId]);
    const otherRoot: ClosingState = { ...t.settled, receiptRoot: label("another root") };
    await expectRevert(openSettledCase(s, t, s.payerWallet, bond, otherRoot), "ClosingStateMismatch", [sessionId]);
    // A leaf that is not in the settled root.
    const leaf = t.leaves[1]!;
    await expectRevert(
      s.disputes.write.openSessionCase(
        [t.session.ref.terms, t.session.ref.openedAt, t.settled, leaf.receiptHash, leaf.ticketHash, t.tree.proof(2), 1, PACKAGE_HASH],
        { account: s.payerWallet.account, value: bond },
      ),
      "InvalidMerkleProof",
      [sessionId, t.tree.root()],
    );
    // The channel cannot be settled, closed or topped up again.
    const again = await signSummary(t.session, 9n, ether("2"), { root: t.tree.root() });
    await expectRevert(closeCooperative(t.session, again, s.watcher), "ChannelNotOpen", [sessionId]);
    await expectRevert(
      s.escrow.write.deposit([t.session.ref.terms, t.session.ref.openedAt, 1n, 0n], { account: s.client.account, value: 1n }),
      "ChannelNotOpen",
      [sessionId],
    );
    await expectDeltas(s, snap, {});
    expect(await s.escrow.read.phaseOf([sessionId])).to.equal(5);
  });

  it("attack: the refund exceeds what the provider's bond still holds — the funder gets the whole bond, nothing else moves", async function () {
    const s = await loadFixture(system);
    const t = await settledSession(s);
    const caseId = await s.disputes.read.nextCaseId([KIND.Session, t.session.sessionId]);
    const bond = await s.disputes.read.bondFor([zeroAddress, t.amount, 1]);
    await mined(s, openSettledCase(s, t, s.payerWallet, bond));
    // The full amount refunded is worth 1,000 LaborGas; the bond holds 500.
    const snap = await snapshot(s, fullBook(s));
    await time.increase(P.respondWindow + 1); // the provider does not contest
    const panel = await drawPanel(s, caseId);
    const message = { caseId, verdict: VERDICT.ChallengerWins, refund: t.amount, slash: 0n, resolutionHash: RESOLUTION_HASH };
    await mined(s, s.disputes.write.submitVerdict([message, await quorumSignatures(s, message, sortAsc(panel))], { account: s.watcher.account }));
    await time.increase(P.appealWindow + 1);
    const receipt = await mined(s, s.disputes.write.finalize([caseId, t.settled], { account: s.watcher.account }));
    expect(receipt.status).to.equal("success");
    const resolved = await s.publicClient.getContractEvents({ address: s.disputes.address, abi: s.disputes.abi, eventName: "CaseResolved", args: { caseId }, fromBlock: receipt.blockNumber });
    // The bond covered half of the refund: 500 LaborGas is worth 0.5 ETH.
    expect(resolved[0]!.args.refunded).to.equal(ether("0.5"));
    // Uncontested: the panel's fee comes out of the winner's own bond (decision 0015).
    const fee = arbFeeOf(bond);
    const share = fee / BigInt(panel.length);
    for (const k of panel) await mined(s, s.disputes.write.claim([zeroAddress], { account: s.wallets.find((w) => getAddress(w.account.address) === getAddress(k.address))!.account }));
    const eth: Record<string, bigint> = {
      payer: bond - fee,
      disputes: -bond,
      burn: fee - share * BigInt(panel.length),
    };
    for (const k of panel) eth[arbName(s, k.address)] = share;
    await expectDeltas(s, snap, { ETH: eth, LGAS: { client: PROVIDER_BOND, registry: -PROVIDER_BOND } });
    expect((await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address])).active).to.equal(0n);
  });
  it("attack: a provider settles cooperatively again within the hour to shorten its hold — the hold's end is rounded up to the hour, covers every close's window and is rewritten (BondHeld) only when an hour later", async function () {
    const s = await loadFixture(system);
    const HOLD = BigInt(await s.escrow.read.SETTLED_BOND_HOLD());
    const provider = s.provider.account.address;
    const heldLogs = (receipt: Awaited<ReturnType<typeof mined>>) =>
      parseEventLogs({ abi: s.registry.abi, logs: receipt.logs, eventName: "BondHeld" }).filter((log) => getAddress(log.address) === getAddress(s.registry.address));
    const closeAt = async () => {
      const t = await settledSession(s);
      const [, settledAt] = await s.escrow.read.settledInfo([t.session.sessionId, t.settled]);
      return BigInt(settledAt);
    };
    // Early in an hour, so that the next close falls in the same one.
    await time.setNextBlockTimestamp(((BigInt(await time.latest()) / HOUR) + 1n) * HOUR + 60n);
    const first = await closeAt();
    const heldAfterFirst = await s.registry.read.heldUntilOf([PROVIDER_ROLE, provider]);
    expect(heldAfterFirst).to.equal(holdEnd(first, HOLD));
    const session = await openSession(s, zeroAddress);
    const summary = await signSummary(session, 1n, ether("0.1"));
    const second = await mined(s, closeCooperative(session, summary, s.watcher));
    const secondAt = (await s.publicClient.getBlock({ blockNumber: second.blockNumber })).timestamp;
    expect(secondAt / HOUR, "the second close is in the first one's hour").to.equal(first / HOUR);
    expect(heldLogs(second), "the registry wrote nothing").to.deep.equal([]);
    expect(await s.registry.read.heldUntilOf([PROVIDER_ROLE, provider])).to.equal(heldAfterFirst);
    expect(heldAfterFirst >= secondAt + HOLD, "the second close's window is covered").to.equal(true);
    // An hour later the end moves: one BondHeld with the new rounded end.
    await time.increase(Number(HOUR));
    const session3 = await openSession(s, zeroAddress);
    const third = await mined(s, closeCooperative(session3, await signSummary(session3, 1n, ether("0.1")), s.watcher));
    const thirdAt = (await s.publicClient.getBlock({ blockNumber: third.blockNumber })).timestamp;
    const logs = heldLogs(third);
    expect(logs.map((log) => log.args.heldUntil)).to.deep.equal([holdEnd(thirdAt, HOLD)]);
    expect(await s.registry.read.heldUntilOf([PROVIDER_ROLE, provider])).to.equal(logs[0]!.args.heldUntil);
  });

  it("issue 28 item 2: the provider asks to unbond before a cooperative settlement and the unbonding matures inside the settled window — the bond stays until the window ends, and the payer's winning case is refunded from it", async function () {
    const s = await loadFixture(system);
    const DAY = 24 * 3600;
    // 29 days before the settlement, the provider asks for its whole bond back (no case, no lock yet).
    await mined(s, s.registry.write.requestUnbond([PROVIDER_ROLE, PROVIDER_BOND], { account: s.provider.account }));
    const { unlockAt } = await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address]);
    await time.increase(29 * DAY);
    const t = await settledSession(s);
    const [, settledAt] = await s.escrow.read.settledInfo([t.session.sessionId, t.settled]);
    // The hold's end is asked in whole hours, rounded up: never shorter than SETTLED_BOND_HOLD, at most an hour longer.
    const heldUntil = holdEnd(BigInt(settledAt), BigInt(await s.escrow.read.SETTLED_BOND_HOLD()));
    expect(await s.registry.read.heldUntilOf([PROVIDER_ROLE, s.provider.account.address])).to.equal(heldUntil);
    const snap = await snapshot(s, fullBook(s));

    // The unbonding matures a day later, inside the 3-day settled window: the withdrawal is refused.
    await time.increaseTo(unlockAt + 60);
    expect(BigInt(unlockAt) + 60n < BigInt(settledAt) + BigInt(P.settledDisputeWindow), "matures inside the window").to.equal(true);
    expect(await s.registry.read.unbondPhaseOf([PROVIDER_ROLE, s.provider.account.address])).to.equal(1); // Unbonding
    await expectRevert(s.registry.write.withdraw([PROVIDER_ROLE], { account: s.provider.account }), "BondHeldUntil");

    // The payer's case, uncontested, decided by a drawn panel: 0.4 ETH refunded from the (pending) bond.
    const caseId = await s.disputes.read.nextCaseId([KIND.Session, t.session.sessionId]);
    const bond = await s.disputes.read.bondFor([zeroAddress, t.amount, 1]);
    await mined(s, openSettledCase(s, t, s.payerWallet, bond));
    await time.increase(P.respondWindow + 1);
    const panel = await drawPanel(s, caseId);
    const refund = ether("0.4");
    const message = { caseId, verdict: VERDICT.ChallengerWins, refund, slash: 0n, resolutionHash: RESOLUTION_HASH };
    await mined(s, s.disputes.write.submitVerdict([message, await quorumSignatures(s, message, sortAsc(panel))], { account: s.watcher.account }));
    await time.increase(P.appealWindow + 1);
    await mined(s, s.disputes.write.finalize([caseId, t.settled], { account: s.watcher.account }));
    const fee = arbFeeOf(bond);
    const share = fee / BigInt(panel.length);
    for (const k of panel) await mined(s, s.disputes.write.claim([zeroAddress], { account: s.wallets.find((w) => getAddress(w.account.address) === getAddress(k.address))!.account }));

    // Until the hold ends the rest stays; from then on it is the provider's to withdraw.
    if (BigInt(await time.latest()) < heldUntil - 1n) {
      await expectRevert(s.registry.write.withdraw([PROVIDER_ROLE], { account: s.provider.account }), "BondHeldUntil");
    }
    await time.increaseTo(heldUntil);
    await mined(s, s.registry.write.withdraw([PROVIDER_ROLE], { account: s.provider.account }));

    const refundInStake = inStake(refund); // 400 LaborGas
    const eth: Record<string, bigint> = { payer: -fee, burn: fee - share * BigInt(panel.length) };
    for (const k of panel) eth[arbName(s, k.address)] = share;
    await expectDeltas(s, snap, {
      ETH: eth,
      LGAS: { client: refundInStake, provider: PROVIDER_BOND - refundInStake, registry: -PROVIDER_BOND },
    });
  });
});
