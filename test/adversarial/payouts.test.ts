/**
 * Adversarial suite, issue 12 (contracts): payouts one party cannot block, open gigs that cannot be sniped,
 * and griefing that is no longer cheap. Each scenario is mounted as the attacker would mount it and must
 * fail; afterwards the test asserts the exact balance change of every account of the system book (parties,
 * both escrows, the DisputeManager, the registry, the treasury and the burn address) in ETH, LaborGas and
 * the blocklist token, with the gas each account paid added back.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { getAddress, parseEventLogs, zeroAddress, type Hash } from "viem";

import { makeTerms } from "../helpers/fixtures";
import { expectRevert } from "../helpers/revert";
import { MIN_PROVIDER_BOND, PROVIDER_ROLE, SYS, systemFixture, TOKEN_TERMS, unsealedSystemFixture } from "../helpers/system";
import {
  blockTime,
  closeCooperative,
  closeUnilateral,
  DELIVERABLE,
  ether,
  expectDeltas,
  feeOf,
  finalize,
  ICS_HASH,
  label,
  mined,
  minedRevert,
  openSession,
  signSummary,
  signTicket,
  snapshot,
  stateOf,
  systemBook,
} from "./helpers";

const WINDOW = 3600n;
const FEE_BPS = 100;
const ZERO_ROOT = `0x${"00".repeat(32)}` as const;

/** The system with a 1 % routing fee and a blocklist token every party holds and approved everywhere. */
async function blocklistSystem() {
  // Unsealed: a test below has governance hold DISPUTE_ROLE on the GigEscrow to rule a split directly.
  const s = await unsealedSystemFixture();
  await mined(s, s.escrow.write.setRoutingFee([FEE_BPS, s.wallets[SYS.treasury]!.account.address]));
  const blk = await hre.viem.deployContract("BlocklistToken");
  // Escrows hold only assets with dispute terms (issue 28 item 4): a blocklist token is a vetted asset like USDC.
  await mined(s, s.disputes.write.setAssetTerms([blk.address, TOKEN_TERMS]));
  const supply = ether("1000");
  for (const wallet of [s.client, s.payerWallet, s.provider, s.stranger]) {
    await mined(s, blk.write.mint([wallet.account.address, supply]));
    for (const spender of [s.escrow.address, s.gigs.address, s.disputes.address]) {
      await mined(s, blk.write.approve([spender, supply], { account: wallet.account }));
    }
  }
  return { ...s, blk };
}

/** The system with a second bonded provider (the stranger), who will snipe open gigs. */
async function sniperSystem() {
  const s = await systemFixture();
  await mined(
    s,
    s.registry.write.registerProvider(["https://sniper.example/ioi", label("caps"), label("did:sniper"), label("mldsa:sniper")], {
      account: s.stranger.account,
    }),
  );
  await mined(s, s.registry.write.bond([PROVIDER_ROLE, MIN_PROVIDER_BOND], { account: s.stranger.account }));
  return s;
}

describe("adversarial: issue 12 — unblockable payouts, unsnipeable gigs, no cheap griefing", () => {
  /*//////////////////////////////////////////////////////////////
                        BLOCKLISTED RECIPIENTS
  //////////////////////////////////////////////////////////////*/

  it("attack: a blocklisted provider cannot freeze the funder's refund (unilateral close, finalize); it claims once unblocked", async () => {
    const s = await loadFixture(blocklistSystem);
    const tokens = { LGAS: s.token, BLK: s.blk };
    const session = await openSession(s, s.blk.address, { deposit: ether("2") });
    const ticket = await signTicket(session, 7n, ether("0.7"));
    const closed = await mined(s, closeUnilateral(session, ticket, s.payerWallet));
    const snap = await snapshot(s, systemBook(s), tokens);

    // The provider gets itself blocklisted (or is blocked by the issuer): before issue 12 finalize reverted
    // and the funder's 1.3 stayed frozen with it.
    await mined(s, s.blk.write.setBlocked([s.provider.account.address, true]));
    await time.increaseTo((await blockTime(s, closed)) + WINDOW + 1n);
    const receipt = await mined(s, finalize(session, stateOf(session, ticket), s.watcher));
    const fee = feeOf(ether("0.7"), FEE_BPS);
    const deferred = parseEventLogs({ abi: s.escrow.abi, eventName: "PayoutDeferred", logs: receipt.logs });
    expect(deferred.map((e) => e.args)).to.deep.equal([
      { asset: getAddress(s.blk.address), account: getAddress(s.provider.account.address), amount: ether("0.7") - fee },
    ]);
    expect(await s.escrow.read.claimableOf([s.blk.address, s.provider.account.address])).to.equal(ether("0.7") - fee);
    // Still blocked: the claim reverts and leaves the balance in place.
    await expectRevert(s.escrow.write.claim([s.blk.address], { account: s.provider.account }), "TransferFailed");
    expect(await s.escrow.read.claimableOf([s.blk.address, s.provider.account.address])).to.equal(ether("0.7") - fee);
    await expectDeltas(s, snap, { BLK: { client: ether("1.3"), escrow: -ether("1.3") } });

    await mined(s, s.blk.write.setBlocked([s.provider.account.address, false]));
    const claimed = await mined(s, s.escrow.write.claim([s.blk.address], { account: s.provider.account }));
    expect(parseEventLogs({ abi: s.escrow.abi, eventName: "Claimed", logs: claimed.logs }).map((e) => e.args.amount)).to.deep.equal([ether("0.7") - fee]);
    // Once only: a second claim pays nothing.
    await mined(s, s.escrow.write.claim([s.blk.address], { account: s.provider.account }));
    expect(await s.escrow.read.claimableOf([s.blk.address, s.provider.account.address])).to.equal(0n);
    expect(await s.escrow.read.accruedFees([s.blk.address])).to.equal(fee);
    expect(await s.blk.read.balanceOf([s.escrow.address])).to.equal(fee); // solvency: only the accrued fee is left
    await expectDeltas(s, snap, {
      BLK: { client: ether("1.3"), provider: ether("0.7") - fee, escrow: -ether("2") + fee },
    });
  });

  it("attack: a blocklisted funder cannot stop the provider's cooperative payout; it claims its refund once unblocked", async () => {
    const s = await loadFixture(blocklistSystem);
    const tokens = { LGAS: s.token, BLK: s.blk };
    const session = await openSession(s, s.blk.address, { deposit: ether("2") });
    const summary = await signSummary(session, 9n, ether("0.9"));
    const snap = await snapshot(s, systemBook(s), tokens);
    await mined(s, s.blk.write.setBlocked([s.client.account.address, true]));

    await mined(s, closeCooperative(session, summary, s.watcher));
    const fee = feeOf(ether("0.9"), FEE_BPS);
    expect(await s.escrow.read.claimableOf([s.blk.address, s.client.account.address])).to.equal(ether("1.1"));
    await expectDeltas(s, snap, { BLK: { provider: ether("0.9") - fee, escrow: -(ether("0.9") - fee) } });

    await mined(s, s.blk.write.setBlocked([s.client.account.address, false]));
    await mined(s, s.escrow.write.claim([s.blk.address], { account: s.client.account }));
    await expectDeltas(s, snap, { BLK: { provider: ether("0.9") - fee, client: ether("1.1"), escrow: -ether("2") + fee } });
  });

  it("attack: a blocklisted treasury's fee withdrawal is deferred to its claimable balance, not lost or stuck", async () => {
    const s = await loadFixture(blocklistSystem);
    const tokens = { LGAS: s.token, BLK: s.blk };
    const treasury = s.wallets[SYS.treasury]!;
    const session = await openSession(s, s.blk.address, { deposit: ether("2") });
    await mined(s, closeCooperative(session, await signSummary(session, 10n, ether("1")), s.watcher));
    const fee = feeOf(ether("1"), FEE_BPS);
    const snap = await snapshot(s, systemBook(s), tokens);
    await mined(s, s.blk.write.setBlocked([treasury.account.address, true]));
    await mined(s, s.escrow.write.withdrawFees([s.blk.address], { account: s.stranger.account }));
    expect(await s.escrow.read.accruedFees([s.blk.address])).to.equal(0n);
    expect(await s.escrow.read.claimableOf([s.blk.address, treasury.account.address])).to.equal(fee);
    await expectDeltas(s, snap, {});
    await mined(s, s.blk.write.setBlocked([treasury.account.address, false]));
    await mined(s, s.escrow.write.claim([s.blk.address], { account: treasury.account }));
    await expectDeltas(s, snap, { BLK: { treasury: fee, escrow: -fee } });
  });

  it("attack: in GigEscrow a blocklisted provider cannot block a split ruling's refund, nor a blocklisted client the provider's release", async () => {
    const s = await loadFixture(blocklistSystem);
    const tokens = { LGAS: s.token, BLK: s.blk };
    const gov = s.governance;
    await mined(s, s.gigs.write.grantRole([await s.gigs.read.DISPUTE_ROLE(), gov.account.address], { account: gov.account }));
    const fundBlk = async (amount: bigint) => {
      const now = (await s.publicClient.getBlock()).timestamp;
      await mined(s, s.gigs.write.fund([s.provider.account.address, s.blk.address, amount, ICS_HASH, Number(now + 86_400n), 3600], { account: s.client.account }));
      const gigId = await s.gigs.read.gigCount();
      await mined(s, s.gigs.write.accept([gigId], { account: s.provider.account }));
      await mined(s, s.gigs.write.deliver([gigId, DELIVERABLE, ZERO_ROOT], { account: s.provider.account }));
      return gigId;
    };
    const split = await fundBlk(ether("1"));
    const quiet = await fundBlk(ether("2"));
    const snap = await snapshot(s, systemBook(s), tokens);

    // A split ruling while the provider is blocked: the client's refund is paid, the provider's share deferred.
    await mined(s, s.blk.write.setBlocked([s.provider.account.address, true]));
    await mined(s, s.gigs.write.freeze([split], { account: gov.account }));
    await mined(s, s.gigs.write.resolve([split, ether("0.25")], { account: gov.account }));
    // A quiet window while the client is blocked: the provider (unblocked again) is paid in full.
    await mined(s, s.blk.write.setBlocked([s.provider.account.address, false]));
    await mined(s, s.blk.write.setBlocked([s.client.account.address, true]));
    await time.increase(3601);
    await mined(s, s.gigs.write.release([quiet], { account: s.stranger.account }));
    expect(await s.gigs.read.claimableOf([s.blk.address, s.provider.account.address])).to.equal(ether("0.75"));
    await expectDeltas(s, snap, { BLK: { client: ether("0.25"), provider: ether("2"), gigs: -ether("2.25") } });
    expect(await s.blk.read.balanceOf([s.gigs.address])).to.equal(ether("0.75")); // Σ live gigs (0) + claimables

    await mined(s, s.gigs.write.claim([s.blk.address], { account: s.provider.account }));
    await mined(s, s.gigs.write.claim([s.blk.address], { account: s.provider.account })); // nothing left: a no-op
    await expectDeltas(s, snap, { BLK: { client: ether("0.25"), provider: ether("2.75"), gigs: -ether("3") } });
  });

  /*//////////////////////////////////////////////////////////////
                            OPEN-GIG SNIPING
  //////////////////////////////////////////////////////////////*/

  it("attack: a bonded sniper accepts an open gig and never delivers — the client dismisses it, an honest provider is paid", async () => {
    const s = await loadFixture(sniperSystem);
    const sniper = s.stranger;
    const snap = await snapshot(s);
    const now = (await s.publicClient.getBlock()).timestamp;
    // An open gig (no provider named) with the longest deadline the escrow allows.
    await mined(s, s.gigs.write.fund([zeroAddress, zeroAddress, ether("1"), ICS_HASH, Number(now + 365n * 86_400n), 3600], { account: s.client.account, value: ether("1") }));
    const gigId = await s.gigs.read.gigCount();
    await mined(s, s.gigs.write.accept([gigId], { account: sniper.account }));
    expect(await s.gigs.read.isProviderTentative([gigId])).to.equal(true);

    // The sniper cannot confirm itself, and a stranger cannot dismiss it on the client's behalf.
    await expectRevert(s.gigs.write.confirmProvider([gigId], { account: sniper.account }), "NotTheClient", [gigId, getAddress(sniper.account.address)]);
    await expectRevert(s.gigs.write.dismissProvider([gigId], { account: s.provider.account }), "NotTheClient", [gigId, getAddress(s.provider.account.address)]);
    // The client dismisses it at once: the bounty is not frozen until the deadline.
    const dismissed = await mined(s, s.gigs.write.dismissProvider([gigId], { account: s.client.account }));
    expect(parseEventLogs({ abi: s.gigs.abi, eventName: "GigProviderDismissed", logs: dismissed.logs }).map((e) => e.args)).to.deep.equal([
      { gigId, provider: getAddress(sniper.account.address) },
    ]);
    // The dismissed sniper can no longer deliver, and its bond is no longer held for this gig.
    await expectRevert(s.gigs.write.deliver([gigId, DELIVERABLE, ZERO_ROOT], { account: sniper.account }), "WrongStatus", [gigId, 1]);
    expect(await s.registry.read.locksOf([0, sniper.account.address])).to.equal(0n);

    // An honest provider accepts, asks the client to confirm it before it works, delivers and is paid.
    await mined(s, s.gigs.write.accept([gigId], { account: s.provider.account }));
    expect(await s.registry.read.locksOf([0, s.provider.account.address])).to.equal(1n);
    await mined(s, s.gigs.write.confirmProvider([gigId], { account: s.client.account }));
    await expectRevert(s.gigs.write.dismissProvider([gigId], { account: s.client.account }), "ProviderNotTentative", [gigId]);
    await mined(s, s.gigs.write.deliver([gigId, DELIVERABLE, ZERO_ROOT], { account: s.provider.account }));
    await mined(s, s.gigs.write.acceptDelivery([gigId], { account: s.client.account }));
    await expectDeltas(s, snap, { ETH: { client: -ether("1"), provider: ether("1") } });
  });

  it("attack: a sniper that is dismissed cannot keep the client's bounty: the client cancels and is refunded in full", async () => {
    const s = await loadFixture(sniperSystem);
    const sniper = s.stranger;
    const snap = await snapshot(s);
    const now = (await s.publicClient.getBlock()).timestamp;
    await mined(s, s.gigs.write.fund([zeroAddress, s.token.address, ether("5"), ICS_HASH, Number(now + 365n * 86_400n), 3600], { account: s.client.account }));
    const gigId = await s.gigs.read.gigCount();
    await mined(s, s.gigs.write.accept([gigId], { account: sniper.account }));
    // Before the dismissal the client cannot cancel (a provider holds the gig)…
    await expectRevert(s.gigs.write.cancel([gigId], { account: s.client.account }), "WrongStatus", [gigId, 2]);
    await mined(s, s.gigs.write.dismissProvider([gigId], { account: s.client.account }));
    // …after it, at once, a year before the deadline.
    await mined(s, s.gigs.write.cancel([gigId], { account: s.client.account }));
    await expectDeltas(s, snap, {});
    expect(await s.token.read.balanceOf([s.gigs.address])).to.equal(0n);
  });

  /*//////////////////////////////////////////////////////////////
                     THE RECORDED ROOT ONLY MOVES FORWARD
  //////////////////////////////////////////////////////////////*/

  it("attack: the payer replaces the recorded receipt root with its own by challenging with a same-amount, higher-seq ticket", async () => {
    const s = await loadFixture(systemFixture);
    const session = await openSession(s, zeroAddress, { deposit: ether("2") });
    const honest = await signTicket(session, 8n, ether("0.8")); // root over the 8 receipts the provider answered
    const closed = await mined(s, closeUnilateral(session, honest, s.provider));
    const snap = await snapshot(s);
    // Same amount, higher seq, a root of the payer's choosing (signed by the payer, so the signature is valid).
    for (const seq of [9n, 2n ** 64n - 1n]) {
      const forged = await signTicket(session, seq, ether("0.8"), { root: label(`payer's own root ${seq}`) });
      await expectRevert(
        s.escrow.write.challenge([session.ref.terms, session.ref.openedAt, stateOf(session, honest), forged], { account: s.payerWallet.account }),
        "TicketNotNewer",
        [session.sessionId, seq, 8n],
      );
    }
    const [matches] = await s.escrow.read.closingInfo([session.sessionId, stateOf(session, honest)]);
    expect(matches, "the provider's root is still the recorded one").to.equal(true);
    await time.increaseTo((await blockTime(s, closed)) + WINDOW + 1n);
    const settled = await mined(s, finalize(session, stateOf(session, honest), s.watcher));
    const [event] = parseEventLogs({ abi: s.escrow.abi, eventName: "ChannelSettled", logs: settled.logs });
    expect(event!.args.receiptRoot).to.equal(honest.receiptRoot);
    await expectDeltas(s, snap, { ETH: { provider: ether("0.8"), client: ether("1.2"), escrow: -ether("2") } });
  });

  /*//////////////////////////////////////////////////////////////
                              GRIEFING
  //////////////////////////////////////////////////////////////*/

  /** Sends `first` and then `second` into one block (automine off), returns both hashes. */
  async function oneBlock(first: () => Promise<Hash>, second: () => Promise<Hash>): Promise<[Hash, Hash]> {
    await hre.network.provider.send("evm_setAutomine", [false]);
    try {
      const a = await first();
      const b = await second();
      await hre.network.provider.send("evm_mine", []);
      return [a, b];
    } finally {
      await hre.network.provider.send("evm_setAutomine", [true]);
    }
  }

  it("attack: a 1-wei front-run of a top-up no longer makes it revert (both are credited)", async () => {
    const s = await loadFixture(systemFixture);
    const session = await openSession(s, zeroAddress, { deposit: ether("2") });
    const snap = await snapshot(s);
    const [frontRun, topUp] = await oneBlock(
      () => s.escrow.write.deposit([session.ref.terms, session.ref.openedAt, 1n, 0n], { account: s.stranger.account, value: 1n, gas: 200_000n }),
      () => s.escrow.write.deposit([session.ref.terms, session.ref.openedAt, ether("1"), ether("1")], { account: s.client.account, value: ether("1"), gas: 200_000n }),
    );
    const [a, b] = [await mined(s, frontRun), await mined(s, topUp)];
    expect(a.blockNumber).to.equal(b.blockNumber);
    expect(a.transactionIndex).to.be.lessThan(b.transactionIndex);
    expect(await s.escrow.read.depositOf([session.sessionId])).to.equal(ether("3") + 1n);
    await expectDeltas(s, snap, { ETH: { stranger: -1n, client: -ether("1"), escrow: ether("1") + 1n } });
  });

  it("attack: a copy of the client's open, sent first in the same block, cannot take its session id", async () => {
    const s = await loadFixture(systemFixture);
    const terms = makeTerms(zeroAddress, { nonce: 77n });
    const snap = await snapshot(s);
    const [copy, original] = await oneBlock(
      () => s.escrow.write.open([terms, ether("2")], { account: s.stranger.account, value: ether("2"), gas: 300_000n }),
      () => s.escrow.write.open([terms, ether("2")], { account: s.client.account, value: ether("2"), gas: 300_000n }),
    );
    const { receipt, error } = await minedRevert(s, copy, s.escrow.abi);
    const opened = await mined(s, original);
    expect(receipt.blockNumber).to.equal(opened.blockNumber);
    expect(receipt.transactionIndex).to.be.lessThan(opened.transactionIndex);
    const sessionId = await s.escrow.read.sessionIdOf([terms, opened.blockNumber]);
    expect(error.errorName).to.equal("NotTheFunder");
    expect(error.args).to.deep.equal([sessionId, getAddress(s.stranger.account.address), getAddress(terms.funder)]);
    expect(await s.escrow.read.depositOf([sessionId])).to.equal(ether("2"));
    await expectDeltas(s, snap, { ETH: { client: -ether("2"), escrow: ether("2") } });
  });
});
