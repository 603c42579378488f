/**
 * Adversarial suite, arbitration (issue 10): every attack on the drawn-panel dispute path below is mounted as a
 * real adversary would mount it — registering and bonding its own arbitrators, signing real EIP-712
 * resolutions with their keys, appealing, unbonding, waiting for expiry — and must fail. After each one the
 * test asserts the exact balance change of every account (parties, sybils, every arbitrator, both escrows, the
 * DisputeManager, the registry, the treasury and the burn address) in ETH and LaborGas, gas added back.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { getAddress, parseUnits, zeroAddress, type Address, type Hex, type LocalAccount } from "viem";

import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { receiptLeafFromHashes } from "../../channel-client/core/leaf";
import { hardhatAccount } from "../helpers/fixtures";
import { expectRevert } from "../helpers/revert";
import {
  ARBITRATOR_ROLE,
  ARBITRATOR_STAKE,
  DISPUTE_PARAMS,
  JUDGE_RUNTIME_HASH,
  KIND,
  MIN_PROVIDER_BOND,
  PROVIDER_ROLE,
  quorumSignatures,
  STATUS,
  SYS,
  systemFixture,
  UNBONDING_DELAY,
  VERDICT,
  drawPanel,
  keyOf,
  type ResolutionMessage,
  type System,
} from "../helpers/system";
import {
  sortAsc,
  fullBook,
  arbName,
  BPS,
  blockTime,
  closeUnilateral,
  deliveredGig,
  ether,
  expectDeltas,
  finalize,
  label,
  mined,
  NO_STATE,
  openSession,
  PACKAGE_HASH,
  RESOLUTION_HASH,
  signTicket,
  snapshot,
  stateOf,
  subjectOf,
  type ClosingState,
  type Wallet,
} from "./helpers";

const P = DISPUTE_PARAMS;
const burnOf = (x: bigint): bigint => (x * BigInt(P.burnBps)) / BPS;
const feeOf = (x: bigint): bigint => (x * BigInt(P.feeBps)) / BPS;
/** The provider's SLA bond in the fixture. */
const PROVIDER_BOND = MIN_PROVIDER_BOND * 5n;
/** A party's own arbitrator stake: twenty times an honest arbitrator's, so a draw that did not exclude it would
 * almost surely seat it. */
const PARTY_STAKE = ARBITRATOR_STAKE * 20n;
/** `makeTerms`' challenge window. */
const WINDOW = 3600n;

/*//////////////////////////////////////////////////////////////
                              HELPERS
//////////////////////////////////////////////////////////////*/

const msg = (caseId: Hex, verdict: number, refund = 0n, slash = 0n): ResolutionMessage => ({
  caseId,
  verdict,
  refund,
  slash,
  resolutionHash: RESOLUTION_HASH,
});

function walletOf(s: System, address: Address): Wallet {
  const w = s.wallets.find((x) => getAddress(x.account.address) === getAddress(address));
  if (!w) throw new Error(`no wallet for ${address}`);
  return w;
}

/** The system book plus every fixture arbitrator (and any extra accounts). */
/** Book name of a fixture arbitrator. */
/** Submits `message` signed by `signers` (sorted ascending) from `from`. */
async function submit(s: System, message: ResolutionMessage, signers: readonly LocalAccount[], from: Wallet = s.watcher) {
  const signatures = await quorumSignatures(s, message, sortAsc(signers));
  return s.disputes.write.submitVerdict([message, signatures], { account: from.account });
}

/** Registers, bonds (`stake`) and optionally has governance admit `wallet` as an arbitrator of the judge runtime. */
async function becomeArbitrator(s: System, wallet: Wallet, stake: bigint, admit: boolean, funder?: Wallet) {
  if (funder) {
    await mined(s, s.token.write.transfer([wallet.account.address, stake], { account: funder.account }));
    await mined(s, s.token.write.approve([s.registry.address, stake], { account: wallet.account }));
  }
  const id = wallet.account.address.toLowerCase();
  await mined(s, s.registry.write.registerArbitrator([JUDGE_RUNTIME_HASH, label(`did:${id}`), label(`mldsa:${id}`)], { account: wallet.account }));
  await mined(s, s.registry.write.bond([ARBITRATOR_ROLE, stake], { account: wallet.account }));
  if (admit) await mined(s, s.registry.write.admitArbitrator([wallet.account.address]));
}

async function bondAt(s: System, asset: Address, value: bigint, level: number): Promise<bigint> {
  return s.disputes.read.bondFor([asset, value, level]);
}

/** A delivered gig of `value` disputed by the client at `lane`, contested by the provider unless told not to. */
async function gigCase(s: System, asset: Address, value: bigint, options: { lane?: number; contest?: boolean } = {}) {
  const lane = options.lane ?? 1;
  const gigId = await deliveredGig(s, asset, value);
  const caseId = await s.disputes.read.nextCaseId([KIND.Gig, subjectOf(gigId)]);
  const bond = await bondAt(s, asset, value, lane);
  const eth = asset === zeroAddress ? bond : 0n;
  await mined(s, s.disputes.write.openGigCase([gigId, lane, PACKAGE_HASH], { account: s.client.account, value: eth }));
  if (options.contest ?? true) await mined(s, s.disputes.write.respond([caseId], { account: s.provider.account, value: eth }));
  return { gigId, caseId, bond };
}

/** An ETH channel of 2 whose provider closed with the payer's ticket for 1 over a root of 8 receipt leaves. */
async function treeSession(s: System, nonce = 1n) {
  const session = await openSession(s, zeroAddress, { terms: { nonce } });
  const leaves = Array.from({ length: 8 }, (_, i) => ({ receiptHash: label(`receipt ${nonce} ${i}`), ticketHash: label(`ticket ${nonce} ${i}`) }));
  const tree = ReceiptAccumulator.fromLeaves(leaves.map((l) => receiptLeafFromHashes(l.receiptHash, l.ticketHash)));
  const closing = await signTicket(session, 8n, ether("1"), { root: tree.root() });
  const receipt = await mined(s, closeUnilateral(session, closing, s.provider));
  return { session, leaves, tree, recorded: stateOf(session, closing), finalizesAt: (await blockTime(s, receipt)) + WINDOW };
}
type TreeSession = Awaited<ReturnType<typeof treeSession>>;

/** Opens a session case on leaf `index` from `from` (the payer or the funder), contested by the provider. */
async function sessionCase(s: System, t: TreeSession, from: Wallet, index = 3, lane = 1) {
  const caseId = await s.disputes.read.nextCaseId([KIND.Session, t.session.sessionId]);
  const bond = await bondAt(s, zeroAddress, ether("1"), lane);
  const leaf = t.leaves[index]!;
  await mined(
    s,
    s.disputes.write.openSessionCase(
      [t.session.ref.terms, t.session.ref.openedAt, t.recorded, leaf.receiptHash, leaf.ticketHash, t.tree.proof(index), lane, PACKAGE_HASH],
      { account: from.account, value: bond },
    ),
  );
  await mined(s, s.disputes.write.respond([caseId], { account: s.provider.account, value: bond }));
  return { caseId, bond };
}

async function finalizeCase(s: System, caseId: Hex, recorded: ClosingState = NO_STATE) {
  await time.increase(P.appealWindow + 1);
  await mined(s, s.disputes.write.finalize([caseId, recorded], { account: s.watcher.account }));
  expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Resolved);
}

/** Every signer claims its fee; returns the per-signer share and the dust burnt. */
async function claimFees(s: System, asset: Address, signers: readonly LocalAccount[], fee: bigint) {
  return (await claimAll(s, asset, [{ signers, fee }]))[0]!;
}

/** The coherent signers of several cases claim what they earned (an arbitrator may sit on more than one). */
async function claimAll(s: System, asset: Address, cases: readonly { signers: readonly LocalAccount[]; fee: bigint }[]) {
  const owed = new Map<Address, bigint>();
  const out = cases.map(({ signers, fee }) => {
    const share = fee / BigInt(signers.length);
    for (const k of signers) owed.set(getAddress(k.address), (owed.get(getAddress(k.address)) ?? 0n) + share);
    return { share, dust: fee - share * BigInt(signers.length) };
  });
  for (const [who, amount] of owed) {
    expect(await s.disputes.read.claimable([asset, who])).to.equal(amount);
    await mined(s, s.disputes.write.claim([asset], { account: walletOf(s, who).account }));
    expect(await s.disputes.read.claimable([asset, who])).to.equal(0n);
  }
  return out;
}

function credit(into: Record<string, bigint>, name: string, amount: bigint) {
  into[name] = (into[name] ?? 0n) + amount;
}

/** No address in `bound` sits on any panel of the case. */
async function expectNoneSeated(s: System, caseId: Hex, bound: readonly Address[]) {
  for (const round of [0, 1] as const) {
    const panel = (await s.disputes.read.panelOf([caseId, round])).map((a) => getAddress(a));
    for (const a of bound) expect(panel, `round ${round} panel`).to.not.include(getAddress(a));
  }
}

const addr = (w: Wallet): Address => getAddress(w.account.address);

/*//////////////////////////////////////////////////////////////
                              THE SUITE
//////////////////////////////////////////////////////////////*/

describe("adversarial: arbitration attacks that must fail (issue 10)", function () {
  async function system() {
    return systemFixture();
  }

  /*////////////////////////////// self-dealing arbitrators //////////////////////////////*/

  it("attack: the client's own bonded arbitrators sign a full refund plus the provider's whole SLA bond on a delivered gig", async function () {
    const s = await loadFixture(system);
    const sybils = [30, 31, 32].map((i) => s.wallets[i]!);
    for (const w of sybils) await becomeArbitrator(s, w, ARBITRATOR_STAKE, false, s.client);
    // Governance even admits the client's own address, with twenty times anyone's stake.
    await becomeArbitrator(s, s.client, PARTY_STAKE, true);
    const pool = (await s.registry.read.drawPool([JUDGE_RUNTIME_HASH]))[0].map((a) => getAddress(a));
    for (const w of sybils) expect(pool, "a non-admitted sybil is never in the draw pool").to.not.include(addr(w));
    expect(pool).to.include(addr(s.client));
    const book = fullBook(s, { sybil30: addr(sybils[0]!), sybil31: addr(sybils[1]!), sybil32: addr(sybils[2]!) });
    const snap = await snapshot(s, book);

    const value = ether("1");
    const { caseId, bond } = await gigCase(s, zeroAddress, value);
    const panel = await drawPanel(s, caseId);
    await expectNoneSeated(s, caseId, [addr(s.client), addr(s.provider), ...sybils.map(addr)]);
    const greedy = msg(caseId, VERDICT.ChallengerWins, value, PROVIDER_BOND);
    const sybilKeys = sybils.map((w) => keyOf(w.account.address));
    const first = (keys: LocalAccount[]) => getAddress(sortAsc(keys)[0]!.address);
    await expectRevert(submit(s, greedy, sybilKeys, s.client), "NotOnPanel", [caseId, first(sybilKeys)]);
    await expectRevert(submit(s, greedy, [keyOf(s.client.account.address), ...sybilKeys], s.client), "NotOnPanel", [caseId, first([keyOf(s.client.account.address), ...sybilKeys])]);
    // Even with two genuine panel signatures (a supermajority of 3) the client's own signature is refused.
    const clientKey = keyOf(s.client.account.address);
    await expectRevert(submit(s, greedy, [clientKey, ...panel.slice(0, 2)], s.client), "NotOnPanel", [caseId, addr(s.client)]);
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Deliberating);

    // The honest panel dismisses the challenge; it stands after the appeal window.
    await mined(s, submit(s, msg(caseId, VERDICT.RespondentWins), panel));
    await finalizeCase(s, caseId);
    const { share, dust } = await claimFees(s, zeroAddress, panel, feeOf(bond));
    const eth: Record<string, bigint> = {
      client: -value - bond,
      provider: value + bond - burnOf(bond) - feeOf(bond),
      burn: burnOf(bond) + dust,
    };
    for (const k of panel) credit(eth, arbName(s, k.address), share);
    await expectDeltas(s, snap, { ETH: eth });
    expect((await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address])).active).to.equal(PROVIDER_BOND);
  });

  it("attack: the provider's own bonded arbitrators sign RespondentWins to keep a failed gig's bounty and take the client's bond", async function () {
    const s = await loadFixture(system);
    const sybils = [33, 34, 35].map((i) => s.wallets[i]!);
    for (const w of sybils) await becomeArbitrator(s, w, ARBITRATOR_STAKE, false, s.provider);
    await becomeArbitrator(s, s.provider, PARTY_STAKE, true);
    const book = fullBook(s, { sybil33: addr(sybils[0]!), sybil34: addr(sybils[1]!), sybil35: addr(sybils[2]!) });
    const snap = await snapshot(s, book);

    const value = ether("1");
    const { caseId, bond } = await gigCase(s, zeroAddress, value);
    const panel = await drawPanel(s, caseId);
    await expectNoneSeated(s, caseId, [addr(s.client), addr(s.provider), ...sybils.map(addr)]);
    const keep = msg(caseId, VERDICT.RespondentWins);
    const sybilKeys = sortAsc(sybils.map((w) => keyOf(w.account.address)));
    await expectRevert(submit(s, keep, sybilKeys, s.provider), "NotOnPanel", [caseId, getAddress(sybilKeys[0]!.address)]);
    await expectRevert(submit(s, keep, [keyOf(s.provider.account.address), ...panel.slice(0, 2)], s.provider), "NotOnPanel", [caseId, addr(s.provider)]);

    const slash = ether("100");
    await mined(s, submit(s, msg(caseId, VERDICT.ChallengerWins, value, slash), panel.slice(0, 2)));
    await finalizeCase(s, caseId);
    const { share, dust } = await claimFees(s, zeroAddress, panel.slice(0, 2), feeOf(bond));
    const eth: Record<string, bigint> = {
      client: -value - bond + value + bond + bond - burnOf(bond) - feeOf(bond),
      provider: -bond,
      burn: burnOf(bond) + dust,
    };
    for (const k of panel.slice(0, 2)) credit(eth, arbName(s, k.address), share);
    await expectDeltas(s, snap, { ETH: eth, LGAS: { registry: -slash, client: slash - burnOf(slash), burn: burnOf(slash) } });
  });

  it("attack: a session case's payer and funder register and bond their own arbitrators (and are admitted themselves) and sign", async function () {
    const s = await loadFixture(system);
    const sybils = [36, 37, 38].map((i) => s.wallets[i]!);
    for (const w of sybils) await becomeArbitrator(s, w, ARBITRATOR_STAKE, false, s.payerWallet);
    await becomeArbitrator(s, s.payerWallet, PARTY_STAKE, true);
    await becomeArbitrator(s, s.client, PARTY_STAKE, true); // the funder
    const t = await treeSession(s);
    const book = fullBook(s, { sybil36: addr(sybils[0]!), sybil37: addr(sybils[1]!), sybil38: addr(sybils[2]!) });
    const snap = await snapshot(s, book);

    const { caseId, bond } = await sessionCase(s, t, s.payerWallet);
    const panel = await drawPanel(s, caseId);
    await expectNoneSeated(s, caseId, [addr(s.client), addr(s.payerWallet), addr(s.provider), ...sybils.map(addr)]);
    const greedy = msg(caseId, VERDICT.ChallengerWins, ether("1"), PROVIDER_BOND);
    const sybilKeys = sortAsc(sybils.map((w) => keyOf(w.account.address)));
    await expectRevert(submit(s, greedy, sybilKeys, s.payerWallet), "NotOnPanel", [caseId, getAddress(sybilKeys[0]!.address)]);
    for (const party of [s.payerWallet, s.client]) {
      await expectRevert(submit(s, greedy, [keyOf(party.account.address), ...panel.slice(0, 2)], party), "NotOnPanel", [caseId, addr(party)]);
    }
    // The honest panel dismisses it; the channel then pays the recorded amount.
    await mined(s, submit(s, msg(caseId, VERDICT.RespondentWins), panel));
    await finalizeCase(s, caseId, t.recorded);
    await mined(s, finalize(t.session, t.recorded, s.watcher));
    const { share, dust } = await claimFees(s, zeroAddress, panel, feeOf(bond));
    const eth: Record<string, bigint> = {
      payer: -bond,
      provider: ether("1") + bond - burnOf(bond) - feeOf(bond),
      client: ether("1"),
      escrow: -ether("2"),
      burn: burnOf(bond) + dust,
    };
    for (const k of panel) credit(eth, arbName(s, k.address), share);
    await expectDeltas(s, snap, { ETH: eth });
  });

  it("attack: the payer signs a session case the funder opened (and the funder one the payer opened): both are excluded from the draw", async function () {
    const s = await loadFixture(system);
    await becomeArbitrator(s, s.payerWallet, PARTY_STAKE, true);
    await becomeArbitrator(s, s.client, PARTY_STAKE, true);
    const byFunder = await treeSession(s, 1n);
    const byPayer = await treeSession(s, 2n);
    const snap = await snapshot(s, fullBook(s));

    // The funder opens; the payer (only `related` to the case) signs a full refund for the funder.
    const a = await sessionCase(s, byFunder, s.client);
    const panelA = await drawPanel(s, a.caseId);
    await expectNoneSeated(s, a.caseId, [addr(s.client), addr(s.payerWallet), addr(s.provider)]);
    expect(getAddress((await s.disputes.read.caseOf([a.caseId])).related)).to.equal(addr(s.payerWallet));
    await expectRevert(submit(s, msg(a.caseId, VERDICT.ChallengerWins, ether("1")), [keyOf(s.payerWallet.account.address), ...panelA.slice(0, 2)], s.payerWallet), "NotOnPanel", [a.caseId, addr(s.payerWallet)]);
    // The payer opens; the funder signs.
    const b = await sessionCase(s, byPayer, s.payerWallet);
    const panelB = await drawPanel(s, b.caseId);
    await expectNoneSeated(s, b.caseId, [addr(s.client), addr(s.payerWallet), addr(s.provider)]);
    await expectRevert(submit(s, msg(b.caseId, VERDICT.ChallengerWins, ether("1")), [keyOf(s.client.account.address), ...panelB.slice(0, 2)], s.client), "NotOnPanel", [b.caseId, addr(s.client)]);

    // Honest verdicts: A partly upheld (0.4 refunded), B dismissed.
    const refund = ether("0.4");
    await mined(s, submit(s, msg(a.caseId, VERDICT.ChallengerWins, refund), panelA));
    await mined(s, submit(s, msg(b.caseId, VERDICT.RespondentWins), panelB));
    await finalizeCase(s, a.caseId, byFunder.recorded);
    await mined(s, s.disputes.write.finalize([b.caseId, byPayer.recorded], { account: s.watcher.account }));
    const settledA = { ...byFunder.recorded, amount: byFunder.recorded.amount - refund };
    await mined(s, finalize(byFunder.session, settledA, s.watcher));
    await mined(s, finalize(byPayer.session, byPayer.recorded, s.watcher));
    const [fa, fb] = (await claimAll(s, zeroAddress, [
      { signers: panelA, fee: feeOf(a.bond) },
      { signers: panelB, fee: feeOf(b.bond) },
    ])) as [{ share: bigint; dust: bigint }, { share: bigint; dust: bigint }];
    const eth: Record<string, bigint> = {
      client: -a.bond + (a.bond + a.bond - burnOf(a.bond) - feeOf(a.bond)) + ether("1") + refund + ether("1"),
      payer: -b.bond,
      provider: -a.bond + ether("1") - refund + ether("1") + b.bond - burnOf(b.bond) - feeOf(b.bond),
      escrow: -ether("4"),
      burn: burnOf(a.bond) + fa.dust + burnOf(b.bond) + fb.dust,
    };
    for (const k of panelA) credit(eth, arbName(s, k.address), fa.share);
    for (const k of panelB) credit(eth, arbName(s, k.address), fb.share);
    await expectDeltas(s, snap, { ETH: eth });
  });

  /*////////////////////////////// the panel //////////////////////////////*/

  it("attack: a supermajority made of admitted, staked arbitrators who were not drawn (and a mix with drawn ones)", async function () {
    const s = await loadFixture(system);
    const snap = await snapshot(s, fullBook(s));
    const value = ether("1");
    const { caseId, bond } = await gigCase(s, zeroAddress, value);
    const panel = await drawPanel(s, caseId);
    const seated = new Set(panel.map((k) => getAddress(k.address)));
    const outsiders = sortAsc(SYS.arbitrators.map((i) => hardhatAccount(i)).filter((k) => !seated.has(getAddress(k.address))));
    expect(outsiders.length).to.equal(SYS.arbitrators.length - panel.length);
    const bad = msg(caseId, VERDICT.ChallengerWins, value, PROVIDER_BOND);
    // Seven admitted arbitrators with 35,000 at stake: not one is on the panel.
    await expectRevert(submit(s, bad, outsiders, s.client), "NotOnPanel", [caseId, getAddress(outsiders[0]!.address)]);
    await expectRevert(submit(s, bad, outsiders.slice(0, 3), s.client), "NotOnPanel", [caseId, getAddress(outsiders[0]!.address)]);
    for (const outsider of outsiders.slice(0, 3)) {
      await expectRevert(submit(s, bad, [panel[0]!, outsider], s.client), "NotOnPanel", [caseId, getAddress(outsider.address)]);
    }
    // The arbitrator pinned to another runtime is admitted and staked, and never drawn either.
    const other = hardhatAccount(SYS.otherRuntimeArbitrator);
    expect(seated.has(getAddress(other.address))).to.equal(false);
    await expectRevert(submit(s, bad, [panel[0]!, other], s.client), "NotOnPanel", [caseId, getAddress(other.address)]);
    // One drawn signer alone is not a supermajority.
    await expectRevert(submit(s, bad, [panel[0]!], s.client), "SupermajorityNotMet", [1n, 2n]);

    await mined(s, submit(s, msg(caseId, VERDICT.RespondentWins), panel.slice(1)));
    await finalizeCase(s, caseId);
    const { share, dust } = await claimFees(s, zeroAddress, panel.slice(1), feeOf(bond));
    const eth: Record<string, bigint> = { client: -value - bond, provider: value + bond - burnOf(bond) - feeOf(bond), burn: burnOf(bond) + dust };
    for (const k of panel.slice(1)) credit(eth, arbName(s, k.address), share);
    await expectDeltas(s, snap, { ETH: eth });
  });

  it("attack: an arbitrator unbonds (requestUnbond, withdraw) while on a panel: BondIsLocked until the case is final", async function () {
    const s = await loadFixture(system);
    // One arbitrator asked to unbond half its stake long ago; the delay has passed.
    const early = s.wallets[SYS.arbitrators[0]]!;
    await mined(s, s.registry.write.requestUnbond([ARBITRATOR_ROLE, ARBITRATOR_STAKE / 2n], { account: early.account }));
    await time.increase(UNBONDING_DELAY + 1n);
    const snap = await snapshot(s, fullBook(s));
    const value = ether("1");
    const { caseId, bond } = await gigCase(s, zeroAddress, value);
    const panel = await drawPanel(s, caseId);
    const members = panel.map((k) => walletOf(s, k.address));
    for (const m of members) {
      expect(await s.registry.read.locksOf([ARBITRATOR_ROLE, m.account.address])).to.equal(1n);
      await expectRevert(s.registry.write.requestUnbond([ARBITRATOR_ROLE, 1n], { account: m.account }), "BondIsLocked", [ARBITRATOR_ROLE, addr(m), 1n]);
      await expectRevert(s.registry.write.withdraw([ARBITRATOR_ROLE], { account: m.account }), "BondIsLocked", [ARBITRATOR_ROLE, addr(m), 1n]);
    }
    // Still locked while the verdict's appeal window runs.
    await mined(s, submit(s, msg(caseId, VERDICT.ChallengerWins, value), panel));
    for (const m of members) {
      await expectRevert(s.registry.write.requestUnbond([ARBITRATOR_ROLE, 1n], { account: m.account }), "BondIsLocked", [ARBITRATOR_ROLE, addr(m), 1n]);
    }
    await finalizeCase(s, caseId);
    const { share, dust } = await claimFees(s, zeroAddress, panel, feeOf(bond));
    // Final: every member may leave; each takes back exactly its stake.
    const lgas: Record<string, bigint> = {};
    for (const m of members) {
      expect(await s.registry.read.locksOf([ARBITRATOR_ROLE, m.account.address])).to.equal(0n);
      const b = await s.registry.read.bondOf([ARBITRATOR_ROLE, m.account.address]);
      if (b.active > 0n) await mined(s, s.registry.write.requestUnbond([ARBITRATOR_ROLE, b.active], { account: m.account }));
    }
    await time.increase(UNBONDING_DELAY + 1n);
    for (const m of members) {
      await mined(s, s.registry.write.withdraw([ARBITRATOR_ROLE], { account: m.account }));
      credit(lgas, arbName(s, m.account.address), ARBITRATOR_STAKE);
      credit(lgas, "registry", -ARBITRATOR_STAKE);
    }
    const eth: Record<string, bigint> = { client: -value - bond + value + bond + bond - burnOf(bond) - feeOf(bond), provider: -bond, burn: burnOf(bond) + dust };
    for (const k of panel) credit(eth, arbName(s, k.address), share);
    await expectDeltas(s, snap, { ETH: eth, LGAS: lgas });
  });

  /*////////////////////////////// liabilities outlive unbonding //////////////////////////////*/

  it("attack: the provider unbonds its SLA bond before a slash lands (a live gig and an open session case): BondIsLocked, the slash lands in full", async function () {
    const s = await loadFixture(system);
    const provider = s.provider;
    const me = addr(provider);
    // The provider asked to unbond 400 of its 500 long before; the delay is over — but it takes a gig.
    await mined(s, s.registry.write.requestUnbond([PROVIDER_ROLE, ether("400")], { account: provider.account }));
    await time.increase(UNBONDING_DELAY + 1n);
    const snap = await snapshot(s, fullBook(s));
    const value = ether("1");
    const gigId = await deliveredGig(s, zeroAddress, value);
    expect(await s.registry.read.locksOf([PROVIDER_ROLE, me])).to.equal(1n);
    await expectRevert(s.registry.write.withdraw([PROVIDER_ROLE], { account: provider.account }), "BondIsLocked", [PROVIDER_ROLE, me, 1n]);
    await expectRevert(s.registry.write.requestUnbond([PROVIDER_ROLE, ether("100")], { account: provider.account }), "BondIsLocked", [PROVIDER_ROLE, me, 1n]);
    const caseId = await s.disputes.read.nextCaseId([KIND.Gig, subjectOf(gigId)]);
    const bond = await bondAt(s, zeroAddress, value, 1);
    await mined(s, s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account, value: bond }));
    // And a session case on another subject, opened while the gig case is open: two locks.
    const t = await treeSession(s);
    const sc = await sessionCase(s, t, s.payerWallet);
    expect(await s.registry.read.locksOf([PROVIDER_ROLE, me])).to.equal(2n);
    await expectRevert(s.registry.write.withdraw([PROVIDER_ROLE], { account: provider.account }), "BondIsLocked", [PROVIDER_ROLE, me, 2n]);

    // Both panels sit. The gig case (uncontested) slashes the whole 500: it lands in full, active first, then
    // the pending part. The session case is decided for the payer and finalised later.
    await time.increase(P.respondWindow + 1);
    const panel = await drawPanel(s, caseId);
    const panel2 = await drawPanel(s, sc.caseId);
    await mined(s, submit(s, msg(caseId, VERDICT.ChallengerWins, value, PROVIDER_BOND), panel));
    await mined(s, submit(s, msg(sc.caseId, VERDICT.ChallengerWins, ether("0.5"), ether("50")), panel2));
    await expectRevert(s.registry.write.withdraw([PROVIDER_ROLE], { account: provider.account }), "BondIsLocked", [PROVIDER_ROLE, me, 2n]);
    await finalizeCase(s, caseId);
    expect(await s.registry.read.bondOf([PROVIDER_ROLE, me])).to.deep.include({ active: 0n, pending: 0n });
    // The session case is still open: still locked; when it ends, nothing is left to slash.
    expect(await s.registry.read.locksOf([PROVIDER_ROLE, me])).to.equal(1n);
    await expectRevert(s.registry.write.requestUnbond([PROVIDER_ROLE, 1n], { account: provider.account }), "BondIsLocked", [PROVIDER_ROLE, me, 1n]);
    await mined(s, s.disputes.write.finalize([sc.caseId, t.recorded], { account: s.watcher.account }));
    expect(await s.registry.read.locksOf([PROVIDER_ROLE, me])).to.equal(0n);
    await mined(s, finalize(t.session, { ...t.recorded, amount: t.recorded.amount - ether("0.5") }, s.watcher));
    // Uncontested: the gig case's fee comes out of the winner's bond.
    const [f, g] = (await claimAll(s, zeroAddress, [
      { signers: panel, fee: feeOf(bond) },
      { signers: panel2, fee: feeOf(sc.bond) },
    ])) as [{ share: bigint; dust: bigint }, { share: bigint; dust: bigint }];
    await expectRevert(s.registry.write.withdraw([PROVIDER_ROLE], { account: provider.account }), "NothingToWithdraw", [PROVIDER_ROLE, me]);

    const eth: Record<string, bigint> = {
      // the gig: funded, refunded in full, the uncontested bond back less the fee; the session: 2 in, 1.5 back.
      client: -value - bond + value + bond - feeOf(bond) - ether("2") + ether("1.5"),
      payer: -sc.bond + sc.bond + sc.bond - burnOf(sc.bond) - feeOf(sc.bond),
      provider: -sc.bond + ether("0.5"),
      escrow: 0n,
      burn: f.dust + burnOf(sc.bond) + g.dust,
    };
    for (const k of panel) credit(eth, arbName(s, k.address), f.share);
    for (const k of panel2) credit(eth, arbName(s, k.address), g.share);
    await expectDeltas(s, snap, {
      ETH: eth,
      LGAS: { registry: -PROVIDER_BOND, client: PROVIDER_BOND - burnOf(PROVIDER_BOND), burn: burnOf(PROVIDER_BOND) },
    });
  });

  /*////////////////////////////// exits that must not pay who forced them //////////////////////////////*/

  it("attack: double escalation in front of a signed verdict (appeal to the larger panel, which confirms, then to the slow path; governance silent; expire enforces it)", async function () {
    const s = await loadFixture(system);
    const snap = await snapshot(s, fullBook(s));
    const value = ether("1");
    const slash = ether("100");
    const { caseId, bond } = await gigCase(s, zeroAddress, value);
    const panel0 = await drawPanel(s, caseId);
    const verdict = msg(caseId, VERDICT.ChallengerWins, value, slash);
    await mined(s, submit(s, verdict, panel0));
    // The provider appeals: the next level's bond, a fresh panel of 5 excluding the first.
    const appeal1 = await bondAt(s, zeroAddress, value, 2);
    await expectRevert(s.disputes.write.appeal([caseId], { account: s.stranger.account, value: appeal1 }), "NotAParty", [caseId, addr(s.stranger)]);
    await mined(s, s.disputes.write.appeal([caseId], { account: s.provider.account, value: appeal1 }));
    const panel1 = await drawPanel(s, caseId);
    expect(panel1.length).to.equal(2 * P.panelSize - 1);
    for (const k of panel1) expect(panel0.map((x) => x.address)).to.not.include(k.address);
    // The larger panel confirms (4 of 5); the provider appeals again, to the slow path.
    await mined(s, submit(s, verdict, panel1.slice(0, 4)));
    const appeal2 = await bondAt(s, zeroAddress, value, 3);
    await mined(s, s.disputes.write.appeal([caseId], { account: s.provider.account, value: appeal2 }));
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.SlowPath);
    await expectRevert(s.disputes.write.appeal([caseId], { account: s.provider.account, value: appeal2 * 3n }), "WrongCaseStatus", [caseId, STATUS.SlowPath]);
    // Governance stays silent; before the deadline nothing can end it, after it anyone enforces the verdict.
    await expectRevert(s.disputes.write.expire([caseId, NO_STATE], { account: s.watcher.account }), "DeadlineNotPassed");
    await time.increase(P.slowPathTimeout + 1);
    await mined(s, s.disputes.write.expire([caseId, NO_STATE], { account: s.watcher.account }));
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Expired);
    const coherent = [...panel0, ...panel1.slice(0, 4)];
    const { share, dust } = await claimFees(s, zeroAddress, coherent, feeOf(bond));
    const eth: Record<string, bigint> = {
      client: -value - bond + bond + bond - burnOf(bond) - feeOf(bond) + value + appeal1 - burnOf(appeal1) + appeal2 - burnOf(appeal2),
      provider: -bond - appeal1 - appeal2,
      burn: burnOf(bond) + burnOf(appeal1) + burnOf(appeal2) + dust,
    };
    for (const k of coherent) credit(eth, arbName(s, k.address), share);
    await expectDeltas(s, snap, { ETH: eth, LGAS: { registry: -slash, client: slash - burnOf(slash), burn: burnOf(slash) } });
    // The provider lost both appeal bonds and is refunded against and slashed exactly as the verdict said.
    expect(eth.provider).to.equal(-(bond + appeal1 + appeal2));
  });

  it("attack: expiry after a provider-side appeal (the appeal panel stays silent, governance too): the standing verdict is enforced", async function () {
    const s = await loadFixture(system);
    const snap = await snapshot(s, fullBook(s));
    const value = ether("1");
    const refund = ether("0.7");
    const { caseId, bond } = await gigCase(s, zeroAddress, value);
    const panel0 = await drawPanel(s, caseId);
    await mined(s, submit(s, msg(caseId, VERDICT.ChallengerWins, refund), panel0.slice(0, 2)));
    const appeal1 = await bondAt(s, zeroAddress, value, 2);
    await mined(s, s.disputes.write.appeal([caseId], { account: s.provider.account, value: appeal1 }));
    const panel1 = await drawPanel(s, caseId);
    await time.increase(P.decisionWindow + 1);
    await expectRevert(submit(s, msg(caseId, VERDICT.RespondentWins), panel1), "DeadlinePassed");
    await mined(s, s.disputes.write.expire([caseId, NO_STATE], { account: s.provider.account })); // to the slow path
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.SlowPath);
    await time.increase(P.slowPathTimeout + 1);
    await mined(s, s.disputes.write.expire([caseId, NO_STATE], { account: s.provider.account }));
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Expired);
    const { share, dust } = await claimFees(s, zeroAddress, panel0.slice(0, 2), feeOf(bond));
    // The silent appeal panel: each member loses absentSlashBps of its stake, burnt.
    const absent = (ARBITRATOR_STAKE * BigInt(P.absentSlashBps)) / BPS;
    const eth: Record<string, bigint> = {
      client: -value - bond + bond + bond - burnOf(bond) - feeOf(bond) + refund + appeal1 - burnOf(appeal1),
      provider: -bond + value - refund - appeal1,
      burn: burnOf(bond) + burnOf(appeal1) + dust,
    };
    for (const k of panel0.slice(0, 2)) credit(eth, arbName(s, k.address), share);
    const lgas: Record<string, bigint> = { registry: -absent * BigInt(panel1.length), burn: absent * BigInt(panel1.length) };
    await expectDeltas(s, snap, { ETH: eth, LGAS: lgas });
    for (const k of panel1) {
      expect((await s.registry.read.bondOf([ARBITRATOR_ROLE, k.address])).active).to.equal(ARBITRATOR_STAKE - absent);
      expect(await s.registry.read.locksOf([ARBITRATOR_ROLE, k.address])).to.equal(0n);
    }
  });

  it("attack: an undecidable forced by the deliverable (the panel attributes it: ChallengerWins) and an Undecidable verdict that expires on the slow path", async function () {
    const s = await loadFixture(system);
    const snap = await snapshot(s, fullBook(s));
    const value = ether("1");
    // (a) The deliverable times out on every replay; by issue 11's attribution rule the panel signs
    // ChallengerWins with a full refund: the provider gains nothing and loses its bond.
    const a = await gigCase(s, zeroAddress, value);
    const panelA = await drawPanel(s, a.caseId);
    await mined(s, submit(s, msg(a.caseId, VERDICT.ChallengerWins, value), panelA));
    await finalizeCase(s, a.caseId);
    const fa = await claimFees(s, zeroAddress, panelA, feeOf(a.bond));
    // (b) A panel finds a case Undecidable: straight to the slow path (no appeal of it), governance silent,
    // no verdict ever stood: the gig ends as without a dispute (released to the provider, no half split either
    // side could force), both bonds come back, nobody is slashed, no fee is earned.
    const b = await gigCase(s, zeroAddress, value);
    const panelB = await drawPanel(s, b.caseId);
    await mined(s, submit(s, msg(b.caseId, VERDICT.Undecidable), panelB));
    expect((await s.disputes.read.caseOf([b.caseId])).status).to.equal(STATUS.SlowPath);
    await expectRevert(s.disputes.write.appeal([b.caseId], { account: s.provider.account, value: await bondAt(s, zeroAddress, value, 2) }), "WrongCaseStatus", [b.caseId, STATUS.SlowPath]);
    await time.increase(P.slowPathTimeout + 1);
    await mined(s, s.disputes.write.expire([b.caseId, NO_STATE], { account: s.watcher.account }));
    expect((await s.disputes.read.caseOf([b.caseId])).status).to.equal(STATUS.Expired);
    for (const k of panelB) expect(await s.disputes.read.claimable([zeroAddress, k.address])).to.equal(0n);
    const eth: Record<string, bigint> = {
      // (a): refund + the provider's bond less burn and fee; (b): nothing refunded, its own bond back.
      client: -2n * value - a.bond + value + a.bond + a.bond - burnOf(a.bond) - feeOf(a.bond),
      provider: -a.bond + value,
      burn: burnOf(a.bond) + fa.dust,
    };
    for (const k of panelA) credit(eth, arbName(s, k.address), fa.share);
    await expectDeltas(s, snap, { ETH: eth });
    // In (a) the provider is no better off than under any adverse verdict (it gets nothing of the gig and loses
    // its bond); in (b) the provider gets exactly what a quiet dispute window would have given it, and the client
    // gains nothing from a case that no one decided.
    const providerB = value;
    expect(providerB < value + a.bond - burnOf(a.bond) - feeOf(a.bond)).to.equal(true);
    expect(providerB > -a.bond).to.equal(true);
  });

  /*////////////////////////////// the slash cap //////////////////////////////*/

  it("attack: a slash above the cap (slashCapBps of the value) in a panel verdict and in resolveSlowPath: SlashAboveCap", async function () {
    const s = await loadFixture(system);
    const snap = await snapshot(s, fullBook(s));
    const value = ether("0.1"); // 100 LaborGas at the ETH stake rate: cap 200
    const cap = (((value * (await s.disputes.read.assetTerms([zeroAddress])).stakeRate) / ether("1")) * BigInt(P.slashCapBps)) / BPS;
    expect(cap).to.equal(ether("200"));
    const { caseId, bond } = await gigCase(s, zeroAddress, value);
    const panel = await drawPanel(s, caseId);
    await expectRevert(submit(s, msg(caseId, VERDICT.ChallengerWins, value, cap + 1n), panel), "SlashAboveCap", [caseId, cap + 1n, cap]);
    await expectRevert(submit(s, msg(caseId, VERDICT.ChallengerWins, value, PROVIDER_BOND), panel), "SlashAboveCap", [caseId, PROVIDER_BOND, cap]);
    // The panel cannot decide; governance may not exceed the cap either.
    await mined(s, submit(s, msg(caseId, VERDICT.Undecidable), panel));
    await expectRevert(s.disputes.write.resolveSlowPath([msg(caseId, VERDICT.ChallengerWins, value, cap + 1n), NO_STATE]), "SlashAboveCap", [caseId, cap + 1n, cap]);
    await mined(s, s.disputes.write.resolveSlowPath([msg(caseId, VERDICT.ChallengerWins, value, cap), NO_STATE]));
    // Nobody signed the outcome that stands: the fee goes back to the winner.
    for (const k of panel) expect(await s.disputes.read.claimable([zeroAddress, k.address])).to.equal(0n);
    await expectDeltas(s, snap, {
      ETH: { client: -value - bond + value + bond + bond - burnOf(bond), provider: -bond, burn: burnOf(bond) },
      LGAS: { registry: -cap, client: cap - burnOf(cap), burn: burnOf(cap) },
    });
  });

  /*////////////////////////////// per-asset floors //////////////////////////////*/

  it("attack: a 6-decimal-token dispute must be openable with a sensible bond", async function () {
    const s = await loadFixture(system);
    // A USDC-like token: amounts in 6-decimal units. The DisputeManager never reads decimals(): the asset's
    // governance-set terms (floor in the token's own units, stake rate) are what make its bonds sensible.
    const usdt = await hre.viem.deployContract("SixDecimalToken");
    expect(await usdt.read.decimals()).to.equal(6);
    const unit = (x: string) => parseUnits(x, 6);
    for (const w of [s.client, s.provider]) {
      await mined(s, usdt.write.mint([w.account.address, unit("10000")]));
      for (const spender of [s.gigs.address, s.disputes.address]) await mined(s, usdt.write.approve([spender, unit("10000")], { account: w.account }));
    }
    const value = unit("50"); // a 50-dollar gig
    // Without terms the asset is refused at funding (issue 28 item 4): no gig that could never get a case.
    await expectRevert(deliveredGig(s, usdt.address, value), "AssetWithoutDisputeTerms", [getAddress(usdt.address)]);
    // Governance sets a floor of 1 dollar and 1 LaborGas per dollar (10^18 per 10^6 units → 10^30 per 10^18); an
    // 18-decimal floor would ask a bond of 10^10 dollars. The asset's first terms apply at once.
    await mined(s, s.disputes.write.setAssetTerms([usdt.address, { bondFloor: unit("1"), stakeRate: parseUnits("1", 30) }]));
    const gigId = await deliveredGig(s, usdt.address, value);
    const bond = await bondAt(s, usdt.address, value, 1);
    expect(bond).to.equal(unit("15")); // max(5, 1) × 3
    // A later change (an 18-decimal floor that would ask a bond of 10^10 dollars) waits out the unbonding delay:
    // cases opened meanwhile keep the terms in force.
    await mined(s, s.disputes.write.setAssetTerms([usdt.address, { bondFloor: ether("0.01"), stakeRate: parseUnits("1", 30) }]));
    expect(await bondAt(s, usdt.address, value, 1)).to.equal(unit("15"));
    const snap = await snapshot(s, fullBook(s), { LGAS: s.token, USDT: usdt });
    const caseId = await s.disputes.read.nextCaseId([KIND.Gig, subjectOf(gigId)]);
    await mined(s, s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account }));
    await mined(s, s.disputes.write.respond([caseId], { account: s.provider.account }));
    const panel = await drawPanel(s, caseId);
    // The cap is in LaborGas: 50 dollars = 50 LaborGas, cap 100.
    await expectRevert(submit(s, msg(caseId, VERDICT.ChallengerWins, value, ether("100") + 1n), panel), "SlashAboveCap", [caseId, ether("100") + 1n, ether("100")]);
    const refund = unit("20");
    const slash = ether("100");
    await mined(s, submit(s, msg(caseId, VERDICT.ChallengerWins, refund, slash), panel));
    await finalizeCase(s, caseId);
    const { share, dust } = await claimFees(s, usdt.address, panel, feeOf(bond));
    const usd: Record<string, bigint> = {
      client: -bond + bond + bond - burnOf(bond) - feeOf(bond) + refund,
      provider: -bond + value - refund,
      gigs: -value,
      burn: burnOf(bond) + dust,
    };
    for (const k of panel) credit(usd, arbName(s, k.address), share);
    await expectDeltas(s, snap, { USDT: usd, LGAS: { registry: -slash, client: slash - burnOf(slash), burn: burnOf(slash) } });
  });
});
