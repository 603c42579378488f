/**
 * Adversarial suite: every attack below is mounted as a real adversary would mount it — signing with the
 * attacker's own key, sending from the attacker's wallet, replaying real signed artifacts — and must fail.
 * After each attack the test asserts the exact balance change of every account involved (parties, both
 * escrows, the DisputeManager, the registry, the treasury and the burn address) in every asset, with the
 * gas each account paid added back, and where it helps carries the honest flow to its end.
 *
 * An attack that succeeds is a bug: its test asserts the correct behaviour, is skipped, and says `BUG:`.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import {
  concat,
  encodeFunctionData,
  getAddress,
  keccak256,
  parseEventLogs,
  toFunctionSelector,
  zeroAddress,
  zeroHash,
  type Address,
  type Hash,
  type Hex,
  type LocalAccount,
} from "viem";

import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { receiptLeafFromHashes } from "../../channel-client/core/leaf";
import { sessionIdOf } from "../../channel-client/core/terms";
import { hardhatAccount, makeTerms } from "../helpers/fixtures";
import { expectRevert } from "../helpers/revert";
import {
  arbitratorKeys,
  ARBITRATOR_ROLE,
  ARBITRATOR_STAKE,
  DISPUTE_PARAMS,
  drawPanel,
  keyOf,
  GIG_STATUS,
  KIND,
  MIN_ARBITRATOR_STAKE,
  MIN_PROVIDER_BOND,
  PROVIDER_ROLE,
  quorumSignatures,
  STATUS,
  SYS,
  systemFixture,
  unsealedSystemFixture,
  UNBONDING_DELAY,
  TOKEN_TERMS,
  ETH_STAKE_RATE,
  VERDICT,
  type ResolutionMessage,
  type System,
} from "../helpers/system";
import {
  assetOf,
  bondFor,
  burnOf,
  challenge,
  closeCooperative,
  closeUnilateral,
  deliveredGig,
  deployHostileReceiver,
  escrowDomain,
  ether,
  expectDeltas,
  feeOf,
  finalize,
  fundGig,
  GIG_WINDOW,
  highSTwins,
  HOSTILE_RECEIVER_ABI,
  hostileState,
  ICS_HASH,
  label,
  MAX_UINT64,
  mined,
  minedRevert,
  NO_STATE,
  openSession,
  PACKAGE_HASH,
  parityFlipped,
  recoverCompact,
  RESOLUTION_HASH,
  signSummary,
  signTicket,
  smallestHighS,
  snapshot,
  stateOf,
  subjectOf,
  systemBook,
  ticketDigest,
  blockTime,
  type ClosingState,
  type Kind,
  type Session,
  type Sig,
  type SignedSummary,
  type Ticket,
  type Wallet,
} from "./helpers";

const KINDS = ["ETH", "LGAS"] as const;
/** `makeTerms`' challenge window, in seconds. */
const WINDOW = 3600n;
const FEE_BPS = 100;
const REENTRANCY: Hex = toFunctionSelector("Reentrancy()");

/** 0.1 per invocation: ticket `seq` authorises `seq` tenths. */
const tenths = (seq: bigint): bigint => ether("0.1") * seq;

/*//////////////////////////////////////////////////////////////
                              FIXTURES
//////////////////////////////////////////////////////////////*/

async function system() {
  return systemFixture();
}

/** For a test whose setup needs governance to hold a wiring role (a test slasher). */
async function unsealedSystem() {
  return unsealedSystemFixture();
}

/** The system with a 1 % routing fee in force before any channel opens. */
async function feeSystem() {
  const s = await systemFixture();
  await mined(s, s.escrow.write.setRoutingFee([FEE_BPS, s.wallets[SYS.treasury]!.account.address]));
  return s;
}

/** The system plus every hostile token double, minted to the parties and approved to every contract. */
async function hostileTokens() {
  const s = await feeSystem();
  const reentrant = await hre.viem.deployContract("ReentrantToken");
  const feeToken = await hre.viem.deployContract("FeeOnTransferToken", [100n]); // 1 %
  const noReturn = await hre.viem.deployContract("NoReturnToken");
  for (const token of [reentrant, feeToken, noReturn]) await mined(s, s.disputes.write.setAssetTerms([token.address, TOKEN_TERMS]));
  const supply = ether("1000");
  const spenders = [s.escrow.address, s.gigs.address, s.disputes.address];
  for (const wallet of [s.client, s.payerWallet, s.provider]) {
    const account = wallet.account;
    await reentrant.write.mint([account.address, supply]);
    await feeToken.write.mint([account.address, supply]);
    await noReturn.write.mint([account.address, supply]);
    for (const spender of spenders) {
      await reentrant.write.approve([spender, supply], { account });
      await feeToken.write.approve([spender, supply], { account });
      await noReturn.write.approve([spender, supply], { account });
    }
  }
  return { ...s, reentrant, feeToken, noReturn };
}

/**
 * An ETH channel of 2 whose provider closed with the payer's ticket seq 8 (1 ETH) over a root of 8 receipt
 * leaves: the subject of the Merkle-proof attacks.
 */
async function merkleSession() {
  const s = await systemFixture();
  return { ...s, ...(await treeSession(s, "ETH")) };
}

async function treeSession(s: System, kind: Kind) {
  const session = await openSession(s, assetOf(s, kind));
  const leaves = Array.from({ length: 8 }, (_, i) => ({
    receiptHash: label(`receipt ${i}`),
    ticketHash: label(`ticket ${i}`),
  }));
  const tree = ReceiptAccumulator.fromLeaves(leaves.map((l) => receiptLeafFromHashes(l.receiptHash, l.ticketHash)));
  const closing = await signTicket(session, 8n, ether("1"), { root: tree.root() });
  const receipt = await mined(s, closeUnilateral(session, closing, s.provider));
  return { session, leaves, tree, closing, recorded: stateOf(session, closing), finalizesAt: (await blockTime(s, receipt)) + WINDOW };
}

/*//////////////////////////////////////////////////////////////
                              HELPERS
//////////////////////////////////////////////////////////////*/

const addressOf = (w: Wallet): Address => getAddress(w.account.address);

/** The error the escrow must raise for a ticket whose signature recovers as `outcome`. */
async function ticketError(session: Session, ticket: Ticket): Promise<[string, unknown[]]> {
  const outcome = await recoverCompact(ticketDigest(session, ticket), ticket.sig);
  if (outcome.kind === "highS") return ["SignatureNotLowS", [outcome.s]];
  if (outcome.kind === "invalid") return ["InvalidSignature", []];
  expect(outcome.signer).to.not.equal(getAddress(session.ref.terms.payer));
  return ["UnauthorizedTicketSigner", [session.sessionId, outcome.signer]];
}

async function summaryDigest(session: Session, summary: SignedSummary): Promise<Hex> {
  const t = session.ref.terms;
  return session.escrow.read.hashSettlementSummary([
    session.sessionId,
    t.provider,
    t.payer,
    t.termsHash,
    summary.finalSeq,
    summary.finalAmount,
    summary.root,
    0,
  ]);
}

/** The error `closeCooperative` must raise when `sig` stands in for `expected`'s signature. */
async function summaryError(digest: Hex, sig: Sig, expected: Address): Promise<[string, unknown[]]> {
  const outcome = await recoverCompact(digest, sig);
  if (outcome.kind === "highS") return ["SignatureNotLowS", [outcome.s]];
  if (outcome.kind === "invalid") return ["InvalidSignature", []];
  expect(outcome.signer).to.not.equal(getAddress(expected));
  return ["SignerMismatch", [getAddress(expected), outcome.signer]];
}

/** Every malleated form of `sig` an attacker can submit. */
function mutations(sig: Sig): Sig[] {
  return [...highSTwins(sig), parityFlipped(sig), smallestHighS(sig, 0n), smallestHighS(sig, 1n)];
}

function resolution(caseId: Hex, verdict: number, refund = 0n, slash = 0n): ResolutionMessage {
  return { caseId, verdict, refund, slash, resolutionHash: RESOLUTION_HASH };
}

/**
 * The drawn panel of the case's current round (drawn now if need be, after the respond window when nobody
 * contested), its keys in ascending address order.
 */
async function panelKeys(s: System, caseId: Hex): Promise<LocalAccount[]> {
  const c = await s.disputes.read.caseOf([caseId]);
  if (c.status === STATUS.Deliberating) return sorted((await s.disputes.read.panelOf([caseId, c.round])).map((a) => keyOf(a)));
  const r = await s.disputes.read.roundOf([caseId, c.round]);
  if (r.drawTicket === 0n && c.respondentBond === 0n) await time.increaseTo(Number(c.respondBy) + 1);
  return drawPanel(s, caseId);
}

/** Submits a verdict signed by `signers` (default: the whole drawn panel) from `from`. */
async function submitVerdict(s: System, message: ResolutionMessage, signers?: LocalAccount[], from: Wallet = s.watcher) {
  const keys = signers ?? (await panelKeys(s, message.caseId));
  return s.disputes.write.submitVerdict([message, await quorumSignatures(s, message, keys)], { account: from.account });
}

/**
 * What the old one-shot `resolve` became: the whole drawn panel signs, the verdict stands through the appeal
 * window, anyone finalises it, and the three signers claim the arbitration fee (feeBps of the losing side's
 * bond, or of the challenger's when uncontested). Returns the fee and the rounding dust that was burnt.
 */
async function decide(s: System, message: ResolutionMessage, recorded: ClosingState = NO_STATE, feeBase?: bigint) {
  const panel = await panelKeys(s, message.caseId);
  await mined(s, submitVerdict(s, message, panel));
  await time.increase(DISPUTE_PARAMS.appealWindow + 1);
  await mined(s, s.disputes.write.finalize([message.caseId, recorded], { account: s.watcher.account }));
  const c = await s.disputes.read.caseOf([message.caseId]);
  const base = feeBase ?? (message.verdict === VERDICT.ChallengerWins && c.respondentBond !== 0n ? c.respondentBond : c.challengerBond);
  const fee = feeOfBond(base);
  return { fee, dust: await claimFees(s, c.asset, panel, fee) };
}

/** The arbitration fee a bond pays (feeBps of it). */
const feeOfBond = (bond: bigint): bigint => (bond * BigInt(DISPUTE_PARAMS.feeBps)) / 10_000n;

/** The wallet of a Hardhat account by address. */
function walletOf(s: System, address: Address): Wallet {
  const wallet = s.wallets.find((w) => getAddress(w.account.address) === getAddress(address));
  if (!wallet) throw new Error(`no wallet for ${address}`);
  return wallet;
}

/**
 * Every coherent signer claims its equal share of `fee` in `asset` (each share checked first, and gone after);
 * returns the rounding dust, which the DisputeManager burnt.
 */
async function claimFees(s: System, asset: Address, signers: readonly LocalAccount[], fee: bigint): Promise<bigint> {
  const share = fee / BigInt(signers.length);
  for (const k of signers) {
    expect(await s.disputes.read.claimable([asset, k.address]), `claimable of ${k.address}`).to.equal(share);
    await mined(s, s.disputes.write.claim([asset], { account: walletOf(s, k.address).account }));
    expect(await s.disputes.read.claimable([asset, k.address])).to.equal(0n);
  }
  return fee - share * BigInt(signers.length);
}

const sorted = (accounts: LocalAccount[]): LocalAccount[] =>
  [...accounts].sort((a, b) => (BigInt(a.address) < BigInt(b.address) ? -1 : 1));

/** Opens a gig case at `lane` from the client, paying the bond in the gig's asset; returns the case id. */
async function openGigCase(s: System, gigId: bigint, asset: Address, value: bigint, lane = 1, from: Wallet = s.client) {
  const caseId = await s.disputes.read.nextCaseId([KIND.Gig, subjectOf(gigId)]);
  const bond = bondFor(value, lane);
  await mined(s, s.disputes.write.openGigCase([gigId, lane, PACKAGE_HASH], { account: from.account, value: asset === zeroAddress ? bond : 0n }));
  return { caseId, bond };
}

/** Opens a session case on leaf `index` of `tree` from the payer; returns the case id. */
async function openSessionCase(
  s: System,
  t: { session: Session; recorded: ClosingState; leaves: { receiptHash: Hex; ticketHash: Hex }[]; tree: ReceiptAccumulator },
  index: number,
  lane = 1,
  from: Wallet = s.payerWallet,
) {
  const caseId = await s.disputes.read.nextCaseId([KIND.Session, t.session.sessionId]);
  const bond = bondFor(t.recorded.amount < t.recorded.deposit ? t.recorded.amount : t.recorded.deposit, lane);
  const leaf = t.leaves[index]!;
  await mined(
    s,
    s.disputes.write.openSessionCase(
      [t.session.ref.terms, t.session.ref.openedAt, t.recorded, leaf.receiptHash, leaf.ticketHash, t.tree.proof(index), lane, PACKAGE_HASH],
      { account: from.account, value: t.session.ref.terms.asset === zeroAddress ? bond : 0n },
    ),
  );
  return { caseId, bond };
}


/** Parent of two nodes in the receipt tree: keccak256 of the sorted 64-byte pair. */
function parentOf(a: Hex, b: Hex): Hex {
  return BigInt(a) < BigInt(b) ? keccak256(concat([a, b])) : keccak256(concat([b, a]));
}

/*//////////////////////////////////////////////////////////////
                              THE SUITE
//////////////////////////////////////////////////////////////*/

describe("adversarial: attacks that must fail", function () {
  /*////////////////////////////// channel closing //////////////////////////////*/

  it("attack: stale unilateral close (the payer closes with an old ticket; the provider's newest wins)", async function () {
    for (const kind of KINDS) {
      const s = await loadFixture(feeSystem);
      const asset = assetOf(s, kind);
      const session = await openSession(s, asset);
      const tickets: Ticket[] = [];
      for (let seq = 1n; seq <= 9n; seq++) tickets.push(await signTicket(session, seq, tenths(seq)));
      const stale = tickets[2]!; // seq 3
      const newest = tickets[8]!; // seq 9, what the provider holds
      const snap = await snapshot(s);

      // The payer closes with ticket 3 and hopes the provider is asleep.
      const closed = await mined(s, closeUnilateral(session, stale, s.payerWallet));
      const finalizesAt = (await blockTime(s, closed)) + WINDOW;
      const staleState = stateOf(session, stale);
      await expectRevert(finalize(session, staleState, s.payerWallet), "ChallengeWindowOpen", [session.sessionId, Number(finalizesAt)]);

      // The provider answers inside the window with the newest ticket.
      await mined(s, challenge(session, staleState, newest, s.provider));
      const current = stateOf(session, newest);
      // The payer cannot push an older ticket back in, nor finalize the stale state after the window.
      await expectRevert(challenge(session, current, tickets[7]!, s.payerWallet), "TicketAmountDecreased", [session.sessionId, tenths(8n), tenths(9n)]);
      await expectRevert(challenge(session, staleState, tickets[7]!, s.payerWallet), "ClosingStateMismatch", [session.sessionId]);
      await time.increaseTo(finalizesAt);
      await expectRevert(finalize(session, staleState, s.payerWallet), "ClosingStateMismatch", [session.sessionId]);

      await mined(s, finalize(session, current, s.watcher));
      await mined(s, s.escrow.write.withdrawFees([asset], { account: s.watcher.account }));
      const fee = feeOf(tenths(9n), FEE_BPS);
      await expectDeltas(s, snap, {
        [kind]: { provider: tenths(9n) - fee, treasury: fee, client: session.deposit - tenths(9n), escrow: -session.deposit },
      });
    }
  });

  // Found by this suite: the escrow once ranked tickets by `seq` alone, which the payer signs, so a payer
  // holding back nothing could close with a fresh ticket (seq 2^64−1, amount 0) that no genuine ticket could
  // beat. The escrow now ranks by cumulative amount, seq breaking ties (decision 0005, amended).
  it("attack: stale close disguised as the newest (the payer signs a fresh ticket with seq 2^64-1 and amount 0)", async function () {
    for (const kind of KINDS) {
      const s = await loadFixture(system);
      const asset = assetOf(s, kind);
      const session = await openSession(s, asset);
      const newest = await signTicket(session, 9n, tenths(9n)); // the provider served nine invocations
      const snap = await snapshot(s);

      const forged = await signTicket(session, MAX_UINT64, 0n, { root: zeroHash }); // the payer's own key
      const closed = await mined(s, closeUnilateral(session, forged, s.payerWallet));
      const finalizesAt = (await blockTime(s, closed)) + WINDOW;

      // Correct behaviour: the provider's newest genuine ticket still wins inside the window.
      await mined(s, challenge(session, stateOf(session, forged), newest, s.provider));
      await time.increaseTo(finalizesAt);
      await mined(s, finalize(session, stateOf(session, newest), s.watcher));
      await expectDeltas(s, snap, {
        [kind]: { provider: tenths(9n), client: session.deposit - tenths(9n), escrow: -session.deposit },
      });
    }
  });

  /*////////////////////////////// replay //////////////////////////////*/

  it("attack: ticket replay across sessions (session A's ticket and summary submitted to session B with the same terms)", async function () {
    const s = await loadFixture(system);
    const A = await openSession(s, zeroAddress, { deposit: ether("1") });
    const ticketA = await signTicket(A, 5n, ether("0.5"));
    const summaryA = await signSummary(A, 5n, ether("0.5"));
    await mined(s, closeCooperative(A, summaryA, s.watcher)); // A settles; its word is deleted
    // The same parties reopen on identical terms (even the nonce): only the opening block differs.
    const B = await openSession(s, zeroAddress, { deposit: ether("1") });
    expect(B.ref.terms).to.deep.equal(A.ref.terms);
    expect(B.sessionId).to.not.equal(A.sessionId);
    const snap = await snapshot(s);

    // The provider replays A's high ticket and A's summary on B.
    // (The expected error is computed before the call starts: a call's rejection must have a handler before
    // anything else is awaited, or it surfaces as an unhandled rejection.)
    const replayedTicket = await ticketError(B, ticketA);
    await expectRevert(closeUnilateral(B, ticketA, s.provider), ...replayedTicket);
    const replayedSummary = await summaryError(await summaryDigest(B, summaryA), summaryA.payerSig, B.ref.terms.payer);
    await expectRevert(closeCooperative(B, summaryA, s.provider), ...replayedSummary);
    // …and on A again, which is settled.
    await expectRevert(closeCooperative(A, summaryA, s.provider), "ChannelNotOpen", [A.sessionId]);
    await expectRevert(closeUnilateral(A, ticketA, s.provider), "ChannelNotOpen", [A.sessionId]);

    // B's own ticket closes B; A's ticket cannot supersede it as a challenge either.
    const ticketB = await signTicket(B, 1n, ether("0.1"));
    const closed = await mined(s, closeUnilateral(B, ticketB, s.provider));
    await expectRevert(challenge(B, stateOf(B, ticketB), ticketA, s.provider), ...replayedTicket);
    await time.increaseTo((await blockTime(s, closed)) + WINDOW);
    await mined(s, finalize(B, stateOf(B, ticketB), s.watcher));
    await expectDeltas(s, snap, { ETH: { provider: ether("0.1"), client: ether("0.9"), escrow: -ether("1") } });
  });

  it("attack: ticket replay across chains (tickets and summaries signed under another chainId)", async function () {
    const s = await loadFixture(system);
    const session = await openSession(s, s.token.address, { deposit: ether("1") });
    const snap = await snapshot(s);
    for (const chainId of [1, 31_338]) {
      const otherChain = gasEscrowDomain({ chainId, verifyingContract: getAddress(s.escrow.address) });
      // The same channel, signed for the same contract address on another chain: with this chain's
      // session id, and with the id that chain would derive.
      const sameId = await signTicket(session, 4n, ether("0.4"), { domain: otherChain });
      const theirId = await signTicket(session, 4n, ether("0.4"), { domain: otherChain, sessionId: sessionIdOf(otherChain, session.ref) });
      for (const ticket of [sameId, theirId]) {
        const expected = await ticketError(session, ticket);
        await expectRevert(closeUnilateral(session, ticket, s.provider), ...expected);
      }
      const summary = await signSummary(session, 4n, ether("0.4"), { domain: otherChain });
      const digest = await summaryDigest(session, summary);
      const expected = await summaryError(digest, summary.payerSig, session.ref.terms.payer);
      await expectRevert(closeCooperative(session, summary, s.provider), ...expected);
    }
    const genuine = await signTicket(session, 2n, ether("0.2"));
    const closed = await mined(s, closeUnilateral(session, genuine, s.provider));
    await time.increaseTo((await blockTime(s, closed)) + WINDOW);
    await mined(s, finalize(session, stateOf(session, genuine), s.watcher));
    await expectDeltas(s, snap, { LGAS: { provider: ether("0.2"), client: ether("0.8"), escrow: -ether("1") } });
  });

  it("attack: ticket replay across deployments (tickets and summaries signed for another GasEscrow)", async function () {
    const s = await loadFixture(system);
    // Another deployment has its own registry (this one's wiring is sealed), holding its settled providers' bonds.
    const registry2 = await hre.viem.deployContract("ProviderRegistry", [s.governance.account.address, s.token.address, MIN_PROVIDER_BOND, MIN_ARBITRATOR_STAKE, UNBONDING_DELAY]);
    const escrow2 = await hre.viem.deployContract("GasEscrow", [s.governance.account.address, s.wallets[SYS.treasury]!.account.address, 0, registry2.address]);
    await mined(s, registry2.write.grantRole([await registry2.read.HOLDER_ROLE(), escrow2.address]));
    const here = await openSession(s, zeroAddress, { deposit: ether("1") });
    const there = await openSession(s, zeroAddress, { deposit: ether("1"), escrow: escrow2 });
    const snap = await snapshot(s, systemBook(s, { escrow2: escrow2.address }));

    const theirs = await signTicket(there, 6n, ether("0.6")); // genuine over there
    const mixed = await signTicket(here, 6n, ether("0.6"), { domain: there.domain }); // this id, their domain
    for (const ticket of [theirs, mixed]) {
      const expected = await ticketError(here, ticket);
      await expectRevert(closeUnilateral(here, ticket, s.provider), ...expected);
    }
    const theirSummary = await signSummary(there, 6n, ether("0.6"));
    const summaryExpected = await summaryError(await summaryDigest(here, theirSummary), theirSummary.payerSig, here.ref.terms.payer);
    await expectRevert(closeCooperative(here, theirSummary, s.provider), ...summaryExpected);
    // And the other way round: this deployment's ticket on the other one.
    const ours = await signTicket(here, 7n, ether("0.7"));
    const oursExpected = await ticketError(there, ours);
    await expectRevert(closeUnilateral(there, ours, s.provider), ...oursExpected);

    // Each settles with its own artifacts.
    await mined(s, closeCooperative(there, theirSummary, s.watcher));
    const genuine = await signTicket(here, 1n, ether("0.1"));
    const closed = await mined(s, closeUnilateral(here, genuine, s.provider));
    await time.increaseTo((await blockTime(s, closed)) + WINDOW);
    await mined(s, finalize(here, stateOf(here, genuine), s.watcher));
    await expectDeltas(s, snap, {
      ETH: { provider: ether("0.7"), client: ether("1.3"), escrow: -ether("1"), escrow2: -ether("1") },
    });
  });

  /*////////////////////////////// signatures //////////////////////////////*/

  it("attack: signature malleability (high-s twins and flipped ERC-2098 parity) on tickets, summaries and resolutions", async function () {
    const s = await loadFixture(system);
    // Tickets (ETH): as a close and as a challenge.
    const session = await openSession(s, zeroAddress);
    const first = await signTicket(session, 4n, tenths(4n));
    const second = await signTicket(session, 6n, tenths(6n));
    // Summaries (LaborGas).
    const coop = await openSession(s, s.token.address);
    const summary = await signSummary(coop, 3n, tenths(3n));
    // Resolutions: an ETH gig case, challenger silent respondent.
    const gigId = await deliveredGig(s, zeroAddress, ether("1"));
    const { caseId, bond } = await openGigCase(s, gigId, zeroAddress, ether("1"));
    const message = resolution(caseId, VERDICT.ChallengerWins, ether("0.4"));
    const panel = await panelKeys(s, caseId);
    const signatures = await quorumSignatures(s, message, panel);
    const resolutionDigest = await s.disputes.read.hashResolution([message]);
    const snap = await snapshot(s);

    for (const sig of mutations(first.sig)) {
      const bad = { ...first, sig };
      const expected = await ticketError(session, bad);
      await expectRevert(closeUnilateral(session, bad, s.provider), ...expected);
    }
    await mined(s, closeUnilateral(session, first, s.provider));
    for (const sig of mutations(second.sig)) {
      const bad = { ...second, sig };
      const expected = await ticketError(session, bad);
      await expectRevert(challenge(session, stateOf(session, first), bad, s.provider), ...expected);
    }
    await mined(s, challenge(session, stateOf(session, first), second, s.provider));

    const digest = await summaryDigest(coop, summary);
    for (const sig of mutations(summary.payerSig)) {
      const expected = await summaryError(digest, sig, coop.ref.terms.payer);
      await expectRevert(closeCooperative(coop, summary, s.provider, { payer: sig }), ...expected);
    }
    for (const sig of mutations(summary.providerSig)) {
      const expected = await summaryError(digest, sig, coop.ref.terms.provider);
      await expectRevert(closeCooperative(coop, summary, s.payerWallet, { provider: sig }), ...expected);
    }
    await mined(s, closeCooperative(coop, summary, s.watcher));

    for (const sig of mutations(signatures[0]!)) {
      const outcome = await recoverCompact(resolutionDigest, sig);
      const bad = [sig, ...signatures.slice(1)];
      const expected: [string, unknown[]] =
        outcome.kind === "signer" ? ["NotOnPanel", [caseId, outcome.signer]] : ["InvalidSignature", [0n]];
      await expectRevert(s.disputes.write.submitVerdict([message, bad], { account: s.provider.account }), ...expected);
    }
    await mined(s, s.disputes.write.submitVerdict([message, signatures], { account: s.watcher.account }));
    await time.increase(DISPUTE_PARAMS.appealWindow + 1);
    await mined(s, s.disputes.write.finalize([caseId, NO_STATE], { account: s.watcher.account }));
    const fee = (bond * BigInt(DISPUTE_PARAMS.feeBps)) / 10_000n; // uncontested: out of the winner's bond

    await mined(s, finalize(session, stateOf(session, second), s.watcher)); // the window ended long ago
    await expectDeltas(s, snap, {
      ETH: {
        provider: tenths(6n) + ether("0.6"),
        client: session.deposit - tenths(6n) + ether("0.4") + bond - fee,
        escrow: -session.deposit,
        gigs: -ether("1"),
        disputes: -bond + fee, // the fee waits in the DisputeManager until the signers claim it
      },
      LGAS: { provider: tenths(3n), client: coop.deposit - tenths(3n), escrow: -coop.deposit },
    });
  });

  // Session-key attacks live in session-keys.test.ts (decision 0025).

  /*////////////////////////////// Merkle proofs //////////////////////////////*/

  /** The payer's openSessionCase with arbitrary leaf hashes and proof (lane 1, bond in ETH). */
  function attemptCase(c: Awaited<ReturnType<typeof merkleSession>>, receiptHash: Hex, ticketHash: Hex, proof: Hex[], recorded = c.recorded) {
    return c.disputes.write.openSessionCase(
      [c.session.ref.terms, c.session.ref.openedAt, recorded, receiptHash, ticketHash, proof, 1, PACKAGE_HASH],
      { account: c.payerWallet.account, value: bondFor(ether("1"), 1) },
    );
  }

  /** Nothing was opened or frozen; after the window the provider is paid the recorded ether. */
  async function expectUntouchedThenFinalize(c: Awaited<ReturnType<typeof merkleSession>>, snap: Awaited<ReturnType<typeof snapshot>>) {
    const caseId = await c.disputes.read.nextCaseId([KIND.Session, c.session.sessionId]);
    expect((await c.disputes.read.caseOf([caseId])).status).to.equal(STATUS.None);
    expect(await c.escrow.read.closingInfo([c.session.sessionId, c.recorded])).to.deep.equal([true, Number(c.finalizesAt), 0]);
    await time.increaseTo(c.finalizesAt);
    await mined(c, finalize(c.session, c.recorded, c.watcher));
    await expectDeltas(c, snap, { ETH: { provider: ether("1"), client: ether("1"), escrow: -ether("2") } });
  }

  it("attack: a forged Merkle proof against DisputeManager.openSessionCase", async function () {
    const c = await loadFixture(merkleSession);
    const snap = await snapshot(c);
    const invalid = ["InvalidMerkleProof", [c.session.sessionId, c.recorded.receiptRoot]] as const;
    const leaf = c.leaves[3]!;
    const proof = c.tree.proof(3);
    // A forged sibling; a fabricated receipt with the genuine path; the path of another leaf.
    for (let i = 0; i < proof.length; i++) {
      const forged = [...proof];
      forged[i] = label(`forged sibling ${i}`);
      await expectRevert(attemptCase(c, leaf.receiptHash, leaf.ticketHash, forged), ...invalid);
    }
    await expectRevert(attemptCase(c, label("fabricated receipt"), leaf.ticketHash, proof), ...invalid);
    await expectRevert(attemptCase(c, leaf.receiptHash, label("fabricated ticket"), proof), ...invalid);
    await expectRevert(attemptCase(c, leaf.receiptHash, leaf.ticketHash, c.tree.proof(4)), ...invalid);
    // A whole tree of the payer's own making: its proof against the real root, and its root passed off as
    // the recorded one.
    const fake = Array.from({ length: 8 }, (_, i) => ({ receiptHash: label(`fake receipt ${i}`), ticketHash: label(`fake ticket ${i}`) }));
    const fakeTree = ReceiptAccumulator.fromLeaves(fake.map((l) => receiptLeafFromHashes(l.receiptHash, l.ticketHash)));
    await expectRevert(attemptCase(c, fake[3]!.receiptHash, fake[3]!.ticketHash, fakeTree.proof(3)), ...invalid);
    await expectRevert(
      attemptCase(c, fake[3]!.receiptHash, fake[3]!.ticketHash, fakeTree.proof(3), { ...c.recorded, receiptRoot: fakeTree.root() }),
      "ClosingStateMismatch",
      [c.session.sessionId],
    );
    await expectUntouchedThenFinalize(c, snap);
  });

  it("attack: a truncated Merkle proof against DisputeManager.openSessionCase", async function () {
    const c = await loadFixture(merkleSession);
    const snap = await snapshot(c);
    const invalid = ["InvalidMerkleProof", [c.session.sessionId, c.recorded.receiptRoot]] as const;
    for (const index of [0, 5, 7]) {
      const leaf = c.leaves[index]!;
      const proof = c.tree.proof(index);
      expect(proof.length).to.equal(3);
      for (const truncated of [proof.slice(0, -1), proof.slice(0, 1), proof.slice(1), []]) {
        await expectRevert(attemptCase(c, leaf.receiptHash, leaf.ticketHash, truncated), ...invalid);
      }
      // Padded with one more step (a proof one level too deep) fails the same way.
      await expectRevert(attemptCase(c, leaf.receiptHash, leaf.ticketHash, [...proof, proof[0]!]), ...invalid);
    }
    await expectUntouchedThenFinalize(c, snap);
  });

  it("attack: a leaf passed off as an inner node, and an inner node passed off as a leaf", async function () {
    const c = await loadFixture(merkleSession);
    const snap = await snapshot(c);
    const invalid = ["InvalidMerkleProof", [c.session.sessionId, c.recorded.receiptRoot]] as const;
    const L = (i: number) => c.tree.leaf(i);
    const parent23 = parentOf(L(2), L(3));
    const quad0 = parentOf(parentOf(L(0), L(1)), parentOf(L(2), L(3)));
    expect(parentOf(quad0, parentOf(parentOf(L(4), L(5)), parentOf(L(6), L(7))))).to.equal(c.recorded.receiptRoot);

    // Inner node as a leaf: its two children as (receiptHash, ticketHash), in either order, with the
    // proof of the node above them; the node itself in either slot.
    const [lo, hi] = BigInt(L(2)) < BigInt(L(3)) ? [L(2), L(3)] : [L(3), L(2)];
    for (const [a, b] of [[lo, hi], [hi, lo], [parent23, zeroHash], [zeroHash, parent23], [parent23, parent23]] as const) {
      await expectRevert(attemptCase(c, a, b, c.tree.proof(2).slice(1)), ...invalid);
    }
    await expectRevert(attemptCase(c, quad0, zeroHash, c.tree.proof(0).slice(2)), ...invalid);
    // Leaf as an inner node: a real leaf's own hashes placed one and two levels up (the proofs of its
    // ancestors), and a leaf hash standing in for a child pair.
    await expectRevert(attemptCase(c, c.leaves[2]!.receiptHash, c.leaves[2]!.ticketHash, c.tree.proof(2).slice(1)), ...invalid);
    await expectRevert(attemptCase(c, c.leaves[2]!.receiptHash, c.leaves[2]!.ticketHash, c.tree.proof(2).slice(2)), ...invalid);
    await expectRevert(attemptCase(c, L(2), L(3), c.tree.proof(2)), ...invalid);
    await expectRevert(attemptCase(c, L(2), zeroHash, c.tree.proof(2)), ...invalid);

    // Control: the genuine leaf and proof do open a case, which a quorum dismisses.
    const { caseId, bond } = await openSessionCase(c, c, 2);
    const { fee, dust } = await decide(c, resolution(caseId, VERDICT.RespondentWins), c.recorded);
    await mined(c, finalize(c.session, c.recorded, c.watcher));
    await expectDeltas(c, snap, {
      ETH: { provider: ether("1") + bond - burnOf(bond) - fee, client: ether("1"), payer: -bond, burn: burnOf(bond) + dust, escrow: -ether("2") },
    });
  });

  /*////////////////////////////// double settlement //////////////////////////////*/

  it("attack: double finalisation (unilateral finalize, cooperative close, gig release, each replayed)", async function () {
    for (const kind of KINDS) {
      const s = await loadFixture(feeSystem);
      const asset = assetOf(s, kind);
      const A = await openSession(s, asset, { terms: { nonce: 1n } });
      const B = await openSession(s, asset, { terms: { nonce: 2n } });
      const ticketA = await signTicket(A, 7n, tenths(7n));
      const summaryB = await signSummary(B, 4n, tenths(4n));
      const gigId = await deliveredGig(s, asset, ether("1"));
      const snap = await snapshot(s);

      const closed = await mined(s, closeUnilateral(A, ticketA, s.provider));
      await time.increaseTo((await blockTime(s, closed)) + WINDOW);
      await mined(s, finalize(A, stateOf(A, ticketA), s.watcher));
      await mined(s, closeCooperative(B, summaryB, s.watcher));
      await mined(s, s.gigs.write.acceptDelivery([gigId], { account: s.client.account }));

      // The provider (who gains from a second payout) replays everything.
      await expectRevert(finalize(A, stateOf(A, ticketA), s.provider), "ChannelNotClosing", [A.sessionId]);
      await expectRevert(closeUnilateral(A, ticketA, s.provider), "ChannelNotOpen", [A.sessionId]);
      await expectRevert(challenge(A, stateOf(A, ticketA), await signTicket(A, 8n, tenths(8n)), s.provider), "ChannelNotClosing", [A.sessionId]);
      await expectRevert(closeCooperative(B, summaryB, s.provider), "ChannelNotOpen", [B.sessionId]);
      await expectRevert(finalize(B, stateOf(B, { seq: 4n, cumulativeAmount: tenths(4n), receiptRoot: summaryB.root }), s.provider), "ChannelNotClosing", [B.sessionId]);
      await expectRevert(s.gigs.write.release([gigId], { account: s.provider.account }), "WrongStatus", [gigId, GIG_STATUS.Released]);
      await expectRevert(s.gigs.write.acceptDelivery([gigId], { account: s.client.account }), "WrongStatus", [gigId, GIG_STATUS.Released]);
      await expectRevert(s.gigs.write.refund([gigId], { account: s.client.account }), "WrongStatus", [gigId, GIG_STATUS.Released]);

      await mined(s, s.escrow.write.withdrawFees([asset], { account: s.watcher.account }));
      await mined(s, s.escrow.write.withdrawFees([asset], { account: s.watcher.account })); // nothing left: a no-op
      const fee = feeOf(tenths(7n), FEE_BPS) + feeOf(tenths(4n), FEE_BPS);
      await expectDeltas(s, snap, {
        [kind]: {
          provider: tenths(11n) - fee + ether("1"),
          treasury: fee,
          client: A.deposit - tenths(7n) + B.deposit - tenths(4n),
          escrow: -(A.deposit + B.deposit),
          gigs: -ether("1"),
        },
      });
    }
  });

  it("attack: double resolution (the same verdict resubmitted; a second, different verdict; finalize, appeal and expire replayed)", async function () {
    // A contested gig case in ETH, then an uncontested session case in LaborGas.
    const s = await loadFixture(system);
    const gigId = await deliveredGig(s, zeroAddress, ether("1"));
    const gigCase = await openGigCase(s, gigId, zeroAddress, ether("1"));
    await mined(s, s.disputes.write.respond([gigCase.caseId], { account: s.provider.account, value: gigCase.bond }));
    const snap = await snapshot(s);

    const panel = await panelKeys(s, gigCase.caseId);
    const first = resolution(gigCase.caseId, VERDICT.RespondentWins);
    await mined(s, submitVerdict(s, first, panel));
    // While it stands in its appeal window, neither the same verdict nor another can be put over it, and it
    // cannot be enforced early.
    const decided = ["WrongCaseStatus", [gigCase.caseId, STATUS.Decided]] as const;
    await expectRevert(submitVerdict(s, first, panel, s.provider), ...decided);
    await expectRevert(submitVerdict(s, resolution(gigCase.caseId, VERDICT.ChallengerWins, ether("1"), ether("50")), panel, s.client), ...decided);
    await expectRevert(submitVerdict(s, resolution(gigCase.caseId, VERDICT.Undecidable), panel, s.client), ...decided);
    const { deadline } = await s.disputes.read.caseOf([gigCase.caseId]);
    await expectRevert(s.disputes.write.finalize([gigCase.caseId, NO_STATE], { account: s.provider.account }), "DeadlineNotPassed", [gigCase.caseId, deadline]);
    await time.increase(DISPUTE_PARAMS.appealWindow + 1);
    await mined(s, s.disputes.write.finalize([gigCase.caseId, NO_STATE], { account: s.watcher.account }));

    const resolved = ["WrongCaseStatus", [gigCase.caseId, STATUS.Resolved]] as const;
    await expectRevert(submitVerdict(s, first, panel, s.provider), ...resolved);
    await expectRevert(submitVerdict(s, resolution(gigCase.caseId, VERDICT.ChallengerWins, ether("1"), ether("50")), panel, s.client), ...resolved);
    await expectRevert(s.disputes.write.finalize([gigCase.caseId, NO_STATE], { account: s.provider.account }), ...resolved);
    await expectRevert(s.disputes.write.appeal([gigCase.caseId], { account: s.client.account, value: bondFor(ether("1"), 2) }), ...resolved);
    await expectRevert(s.disputes.write.resolveSlowPath([resolution(gigCase.caseId, VERDICT.ChallengerWins, ether("1")), NO_STATE]), ...resolved);
    await expectRevert(s.disputes.write.expire([gigCase.caseId, NO_STATE], { account: s.client.account }), ...resolved);
    const gigFee = feeOfBond(gigCase.bond); // the loser (challenger) pays the fee
    const gigDust = await claimFees(s, zeroAddress, panel, gigFee);

    // The session refund comes off the provider's payout once, however often the verdict is replayed.
    const t = await treeSession(s, "LGAS");
    const sessionCase = await openSessionCase(s, t, 4);
    const sessionPanel = await panelKeys(s, sessionCase.caseId);
    const refund = ether("0.25");
    const sessionResolution = resolution(sessionCase.caseId, VERDICT.ChallengerWins, refund);
    await mined(s, submitVerdict(s, sessionResolution, sessionPanel));
    await time.increase(DISPUTE_PARAMS.appealWindow + 1);
    await mined(s, s.disputes.write.finalize([sessionCase.caseId, t.recorded], { account: s.watcher.account }));
    const after = { ...t.recorded, amount: t.recorded.amount - refund };
    const again = ["WrongCaseStatus", [sessionCase.caseId, STATUS.Resolved]] as const;
    await expectRevert(submitVerdict(s, sessionResolution, sessionPanel, s.payerWallet), ...again);
    await expectRevert(submitVerdict(s, resolution(sessionCase.caseId, VERDICT.ChallengerWins, ether("1")), sessionPanel, s.payerWallet), ...again);
    await expectRevert(s.disputes.write.finalize([sessionCase.caseId, after], { account: s.payerWallet.account }), ...again);
    await expectRevert(s.disputes.write.finalize([sessionCase.caseId, t.recorded], { account: s.payerWallet.account }), ...again);
    await expectRevert(s.disputes.write.expire([sessionCase.caseId, after], { account: s.payerWallet.account }), ...again);
    const sessionFee = feeOfBond(sessionCase.bond); // uncontested: out of the winner's bond
    const sessionDust = await claimFees(s, s.token.address, sessionPanel, sessionFee);
    await mined(s, finalize(t.session, after, s.watcher)); // the refund ended the window
    await expectRevert(finalize(t.session, after, s.provider), "ChannelNotClosing", [t.session.sessionId]);
    await expectDeltas(s, snap, {
      ETH: {
        provider: ether("1") + 2n * gigCase.bond - burnOf(gigCase.bond) - gigFee,
        burn: burnOf(gigCase.bond) + gigDust,
        gigs: -ether("1"),
        disputes: -2n * gigCase.bond,
      },
      LGAS: { provider: after.amount, client: -after.amount, payer: -sessionFee, burn: sessionDust },
    });
  });

  /*////////////////////////////// the arbitrator quorum //////////////////////////////*/

  it("attack: a resolution signed by a duplicated arbitrator", async function () {
    const s = await loadFixture(system);
    const gigId = await deliveredGig(s, s.token.address, ether("1"));
    const { caseId, bond } = await openGigCase(s, gigId, s.token.address, ether("1"));
    const snap = await snapshot(s);
    const [a, b] = await panelKeys(s, caseId);
    // A corrupt arbitrator wants a full refund plus a slash, and has only one colleague.
    const message = resolution(caseId, VERDICT.ChallengerWins, ether("1"), ether("2")); // the cap: 2 × a 1-LGAS gig
    await expectRevert(submitVerdict(s, message, [a!, b!, b!], s.client), "SignersNotAscending", [2n, getAddress(b!.address)]);
    await expectRevert(submitVerdict(s, message, [a!, a!, b!], s.client), "SignersNotAscending", [1n, getAddress(a!.address)]);
    await expectRevert(submitVerdict(s, message, [b!, b!, b!], s.client), "SignersNotAscending", [1n, getAddress(b!.address)]);
    // The same signature by b twice, with a malleated copy in between, does not count twice either.
    const sigs = await quorumSignatures(s, message, [a!, b!]);
    const twin = highSTwins(sigs[1]!)[0]!;
    const twinSigner = await recoverCompact(await s.disputes.read.hashResolution([message]), twin);
    expect(twinSigner.kind).to.equal("signer");
    const twinAddress = (twinSigner as { signer: Address }).signer;
    const twinError: [string, unknown[]] =
      BigInt(twinAddress) > BigInt(b!.address) ? ["NotOnPanel", [caseId, twinAddress]] : ["SignersNotAscending", [2n, twinAddress]];
    await expectRevert(s.disputes.write.submitVerdict([message, [sigs[0]!, sigs[1]!, twin]], { account: s.client.account }), ...twinError);
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Deliberating);

    // The honest quorum decides otherwise.
    const { fee, dust } = await decide(s, resolution(caseId, VERDICT.RespondentWins));
    await expectDeltas(s, snap, { LGAS: { provider: ether("1") + bond - burnOf(bond) - fee, burn: burnOf(bond) + dust, gigs: -ether("1"), disputes: -bond } });
  });

  it("attack: a resolution signed by an unregistered signer, a registered unbonded one, and admitted arbitrators not drawn", async function () {
    const s = await loadFixture(system);
    const gigId = await deliveredGig(s, zeroAddress, ether("1"));
    const { caseId, bond } = await openGigCase(s, gigId, zeroAddress, ether("1"));
    // A key that registered as an arbitrator but never bonded the minimum stake.
    const unbonded = s.wallets[18]!;
    await mined(s, s.registry.write.registerArbitrator([DISPUTE_PARAMS.judgeRuntimeHash, label("did:unbonded"), label("mldsa:unbonded")], { account: unbonded.account }));
    const snap = await snapshot(s);
    const panel = await panelKeys(s, caseId);
    const [a, b] = panel;
    const message = resolution(caseId, VERDICT.ChallengerWins, ether("1"), ether("100"));
    for (const outsider of [hardhatAccount(SYS.unregistered), hardhatAccount(18)]) {
      const notOnPanel = ["NotOnPanel", [caseId, getAddress(outsider.address)]] as const;
      await expectRevert(submitVerdict(s, message, sorted([a!, b!, outsider]), s.client), ...notOnPanel);
      await expectRevert(submitVerdict(s, message, sorted([...panel, outsider]), s.client), ...notOnPanel);
    }
    // Admitted, bonded arbitrators pinned to the runtime, but not drawn for this case: a bought quorum of
    // them, and one of them completing two panel members.
    const drawn = new Set(panel.map((k) => getAddress(k.address)));
    const undrawn = arbitratorKeys().filter((k) => !drawn.has(getAddress(k.address)));
    expect(undrawn.length).to.equal(SYS.arbitrators.length - panel.length);
    await expectRevert(submitVerdict(s, message, undrawn.slice(0, 3), s.client), "NotOnPanel", [caseId, getAddress(undrawn[0]!.address)]);
    await expectRevert(submitVerdict(s, message, undrawn, s.client), "NotOnPanel", [caseId, getAddress(undrawn[0]!.address)]);
    await expectRevert(submitVerdict(s, message, sorted([a!, b!, undrawn[0]!]), s.client), "NotOnPanel", [caseId, getAddress(undrawn[0]!.address)]);
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Deliberating);

    const { fee, dust } = await decide(s, resolution(caseId, VERDICT.NoFault, ether("0.5")));
    expect(fee).to.equal(feeOfBond(bond));
    await expectDeltas(s, snap, { ETH: { client: ether("0.5") + bond - fee, provider: ether("0.5"), gigs: -ether("1"), disputes: -bond, burn: dust } });
  });

  it("attack: a resolution signed by a slashed arbitrator (slashed before the draw: never drawn; slashed on the panel: its lost stake backs nothing)", async function () {
    const s = await loadFixture(unsealedSystem);
    const gov = s.governance.account.address;
    // Governance grants a test slasher (itself).
    await mined(s, s.registry.write.grantRole([await s.registry.read.SLASHER_ROLE(), gov]));
    const gigId = await deliveredGig(s, zeroAddress, ether("1"));
    const { caseId, bond } = await openGigCase(s, gigId, zeroAddress, ether("1"));
    const victim = arbitratorKeys()[0]!;
    const victimWallet = walletOf(s, victim.address);
    const snap = await snapshot(s);

    // Slashed to one wei below the minimum stake before the draw: inactive, out of the draw pool.
    const below = ARBITRATOR_STAKE - MIN_ARBITRATOR_STAKE + 1n;
    await mined(s, s.registry.write.slash([ARBITRATOR_ROLE, victim.address, below, gov, 10_000]));
    expect(await s.registry.read.isActiveArbitrator([victim.address])).to.equal(false);
    const [pool] = await s.registry.read.drawPool([DISPUTE_PARAMS.judgeRuntimeHash]);
    expect(pool.map((x) => getAddress(x))).to.not.include(getAddress(victim.address));
    expect(pool.length).to.equal(SYS.arbitrators.length - 1);
    const panel = await panelKeys(s, caseId);
    expect(panel.map((k) => getAddress(k.address))).to.not.include(getAddress(victim.address));

    // The slashed arbitrator still signs (it is a party's friend) with two drawn members, from its own wallet.
    const slash = ether("1600"); // under the cap of 2 × 1,000 LGAS
    const bought = resolution(caseId, VERDICT.ChallengerWins, ether("1"), slash);
    await expectRevert(submitVerdict(s, bought, sorted([victim, panel[0]!, panel[1]!]), victimWallet), "NotOnPanel", [caseId, getAddress(victim.address)]);

    // A drawn member slashed after the draw keeps its seat, but the stake it lost backs no verdict: with one
    // colleague it is a supermajority, yet what the two put at risk no longer exceeds what the case moves.
    const [member, colleague] = panel;
    expect((await s.registry.read.bondOf([ARBITRATOR_ROLE, member!.address])).active).to.equal(ARBITRATOR_STAKE);
    const cut = ARBITRATOR_STAKE - ether("1");
    await mined(s, s.registry.write.slash([ARBITRATOR_ROLE, member!.address, cut, gov, 10_000]));
    const overturn = BigInt(DISPUTE_PARAMS.overturnSlashBps);
    const moved = ETH_STAKE_RATE + slash; // 1 ETH in LGAS plus the slash
    const atRisk = ((ether("1") + ARBITRATOR_STAKE) * overturn) / 10_000n;
    expect((2n * ARBITRATOR_STAKE * overturn) / 10_000n > moved, "whole, the two would have carried it").to.equal(true);
    await expectRevert(submitVerdict(s, bought, [member!, colleague!], walletOf(s, member!.address)), "StakeAtRiskTooLow", [atRisk, moved]);
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Deliberating);

    // The whole panel decides honestly.
    const { fee, dust } = await decide(s, resolution(caseId, VERDICT.ChallengerWins, ether("0.3")));
    expect(fee).to.equal(feeOfBond(bond));
    await expectDeltas(s, snap, {
      ETH: { client: ether("0.3") + bond - fee, provider: ether("0.7"), gigs: -ether("1"), disputes: -bond, burn: dust },
      LGAS: { registry: -(below + cut), burn: below + cut },
    });
  });

  /*////////////////////////////// disputes and challenges //////////////////////////////*/

  it("attack: a challenge during an open dispute (the payer closes stale and freezes with a case; the newest ticket still supersedes and the verdict applies to it)", async function () {
    for (const kind of KINDS) {
      const s = await loadFixture(system);
      const asset = assetOf(s, kind);
      // A week-long challenge window, so the whole case (respond, draw, appeal window) fits inside it.
      const duration = 7n * 24n * 3600n;
      const session = await openSession(s, asset, { terms: { challengeDuration: duration } });
      const leaves = Array.from({ length: 9 }, (_, i) => ({ receiptHash: label(`r${i}`), ticketHash: label(`t${i}`) }));
      const tree = ReceiptAccumulator.fromLeaves(leaves.map((l) => receiptLeafFromHashes(l.receiptHash, l.ticketHash)));
      // Ticket n carries the root over receipts 1..n-1 (docs/decisions/0003).
      const stale = await signTicket(session, 5n, tenths(5n), { root: tree.prefixRoot(4) });
      const newest = await signTicket(session, 9n, tenths(9n), { root: tree.prefixRoot(8) });
      const snap = await snapshot(s);

      // The payer closes with ticket 5 and at once disputes receipt 2 to freeze the channel.
      const closed = await mined(s, closeUnilateral(session, stale, s.payerWallet));
      const finalizesAt = (await blockTime(s, closed)) + duration;
      const staleState = stateOf(session, stale);
      const value = tenths(5n);
      const bond = bondFor(value, 1);
      const caseId = await s.disputes.read.nextCaseId([KIND.Session, session.sessionId]);
      await mined(
        s,
        s.disputes.write.openSessionCase(
          [session.ref.terms, session.ref.openedAt, staleState, leaves[2]!.receiptHash, leaves[2]!.ticketHash, tree.proof(2, 4), 1, PACKAGE_HASH],
          { account: s.payerWallet.account, value: kind === "ETH" ? bond : 0n },
        ),
      );
      await mined(s, s.disputes.write.respond([caseId], { account: s.provider.account, value: kind === "ETH" ? bond : 0n }));

      // The freeze does not stop the provider's newest ticket.
      await mined(s, challenge(session, staleState, newest, s.provider));
      const current = stateOf(session, newest);
      const refund = ether("0.2");
      const message = resolution(caseId, VERDICT.ChallengerWins, refund);
      const panel = await panelKeys(s, caseId);
      await mined(s, submitVerdict(s, message, panel));
      await time.increase(DISPUTE_PARAMS.appealWindow + 1);
      // Enforcing the verdict against the stale state no longer fits; against the current state it does.
      await expectRevert(s.disputes.write.finalize([caseId, staleState], { account: s.payerWallet.account }), "ClosingStateMismatch", [session.sessionId], s.escrow.abi);
      await mined(s, s.disputes.write.finalize([caseId, current], { account: s.watcher.account }));
      const fee = feeOfBond(bond); // the losing respondent's bond pays it
      const dust = await claimFees(s, asset, panel, fee);
      const settled = { ...current, amount: current.amount - refund };
      // The verdict ended the window early: no later ticket can undo it.
      const later = await signTicket(session, 10n, tenths(10n));
      expect(BigInt(await time.latest()) < finalizesAt).to.equal(true);
      await expectRevert(challenge(session, settled, later, s.provider), "ChallengeWindowClosed");
      await mined(s, finalize(session, settled, s.watcher));
      await expectDeltas(s, snap, {
        [kind]: {
          provider: settled.amount - bond,
          client: session.deposit - settled.amount,
          payer: bond - burnOf(bond) - fee,
          burn: burnOf(bond) + dust,
          escrow: -session.deposit,
        },
      });
    }
  });

  /*////////////////////////////// re-entrancy //////////////////////////////*/

  it("attack: re-entrancy through a hostile ERC-20 (ReentrantToken) into GasEscrow, GigEscrow and DisputeManager", async function () {
    const s = await loadFixture(hostileTokens);
    const ree = s.reentrant;
    const tokens = { LGAS: s.token, REE: ree };
    const arm = async (target: Address, data: Hex) => mined(s, ree.write.arm([target, data], { account: s.stranger.account }));
    const expectBlocked = async (returnData: Hex = REENTRANCY) => {
      expect(await ree.read.target()).to.equal(zeroAddress); // the callback ran and disarmed
      expect(await ree.read.lastCallSucceeded()).to.equal(false);
      expect(await ree.read.lastReturnData()).to.equal(returnData);
    };

    // GasEscrow: while finalize pays out, re-enter finalize of another channel and withdrawFees; while
    // open pulls the deposit, re-enter open.
    const A = await openSession(s, ree.address, { terms: { nonce: 1n } });
    const B = await openSession(s, ree.address, { terms: { nonce: 2n } });
    const tA = await signTicket(A, 5n, tenths(5n));
    const tB = await signTicket(B, 6n, tenths(6n));
    const closedA = await mined(s, closeUnilateral(A, tA, s.provider));
    await mined(s, closeUnilateral(B, tB, s.provider));
    let snap = await snapshot(s, systemBook(s), tokens);
    await time.increaseTo((await blockTime(s, closedA)) + WINDOW + 5n);
    const finalizeData = (session: Session, t: Ticket) =>
      encodeFunctionData({ abi: s.escrow.abi, functionName: "finalize", args: [session.ref.terms, session.ref.openedAt, stateOf(session, t)] });
    await arm(s.escrow.address, finalizeData(B, tB));
    await mined(s, finalize(A, stateOf(A, tA), s.watcher));
    await expectBlocked();
    expect((await s.escrow.read.closingInfo([B.sessionId, stateOf(B, tB)]))[0]).to.equal(true); // B untouched
    await arm(s.escrow.address, encodeFunctionData({ abi: s.escrow.abi, functionName: "withdrawFees", args: [ree.address] }));
    await mined(s, finalize(B, stateOf(B, tB), s.watcher));
    await expectBlocked();
    const fees = feeOf(tenths(5n), FEE_BPS) + feeOf(tenths(6n), FEE_BPS);
    expect(await s.escrow.read.accruedFees([ree.address])).to.equal(fees);
    await mined(s, s.escrow.write.withdrawFees([ree.address], { account: s.watcher.account }));
    // The token is the inner call's sender, so it names itself funder to get past NotTheFunder to the guard.
    const inner = { ...A.ref.terms, nonce: 9n, funder: ree.address };
    await arm(s.escrow.address, encodeFunctionData({ abi: s.escrow.abi, functionName: "open", args: [inner, ether("1")] }));
    const D = await openSession(s, ree.address, { deposit: ether("1"), terms: { nonce: 4n } });
    await expectBlocked();
    expect(await s.escrow.read.depositOf([sessionIdOf(D.domain, { terms: inner, openedAt: D.ref.openedAt })])).to.equal(0n);
    await expectDeltas(s, snap, {
      REE: {
        provider: tenths(11n) - fees,
        treasury: fees,
        client: A.deposit - tenths(5n) + B.deposit - tenths(6n) - D.deposit,
        escrow: -(A.deposit + B.deposit) + D.deposit,
      },
    });

    // GigEscrow: while acceptDelivery pays, re-enter release of another releasable gig; while fund pulls,
    // re-enter refund of an expired gig.
    const releasable = await deliveredGig(s, ree.address, ether("1"), { window: 60 });
    const expired = await fundGig(s, ree.address, ether("1"), { deadlineIn: 120n });
    const accepted = await deliveredGig(s, ree.address, ether("1"));
    snap = await snapshot(s, systemBook(s), tokens);
    await time.increase(200);
    await arm(s.gigs.address, encodeFunctionData({ abi: s.gigs.abi, functionName: "release", args: [releasable] }));
    await mined(s, s.gigs.write.acceptDelivery([accepted], { account: s.client.account }));
    await expectBlocked();
    expect((await s.gigs.read.gigOf([releasable])).status).to.equal(GIG_STATUS.Delivered);
    await arm(s.gigs.address, encodeFunctionData({ abi: s.gigs.abi, functionName: "refund", args: [expired] }));
    const later = await fundGig(s, ree.address, ether("1"));
    await expectBlocked();
    expect((await s.gigs.read.gigOf([expired])).status).to.equal(GIG_STATUS.Funded);
    expect((await s.gigs.read.gigOf([later])).amount).to.equal(ether("1"));
    await mined(s, s.gigs.write.release([releasable], { account: s.watcher.account }));
    await mined(s, s.gigs.write.refund([expired], { account: s.watcher.account }));
    await expectDeltas(s, snap, { REE: { provider: ether("2"), client: ether("1") - ether("1"), gigs: -ether("2") } });

    // DisputeManager: re-entered while it pulls the challenger's bond (open → submitVerdict), the
    // respondent's (respond → appeal) and an appeal bond (appeal → finalize), while the verdict is enforced
    // (finalize → claim) and while a fee is claimed (claim → claim).
    const gigId = await deliveredGig(s, ree.address, ether("1"));
    const caseId = await s.disputes.read.nextCaseId([KIND.Gig, subjectOf(gigId)]);
    const message = resolution(caseId, VERDICT.ChallengerWins, ether("0.25"));
    const bond = bondFor(ether("1"), 1);
    const appealBond = bondFor(ether("1"), 2);
    const dmData = (functionName: "appeal" | "finalize" | "claim" | "submitVerdict", args: readonly unknown[]) =>
      encodeFunctionData({ abi: s.disputes.abi, functionName, args } as Parameters<typeof encodeFunctionData>[0]);
    snap = await snapshot(s, systemBook(s), tokens);
    await arm(s.disputes.address, dmData("submitVerdict", [message, await quorumSignatures(s, message)]));
    await mined(s, s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account }));
    await expectBlocked();
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Open);
    await arm(s.disputes.address, dmData("appeal", [caseId]));
    await mined(s, s.disputes.write.respond([caseId], { account: s.provider.account }));
    await expectBlocked();
    expect((await s.disputes.read.caseOf([caseId])).respondentBond).to.equal(bond);
    const panel0 = await panelKeys(s, caseId);
    await mined(s, submitVerdict(s, message, panel0));
    // The provider appeals; while its bond is pulled the token tries to enforce the verdict at once.
    await arm(s.disputes.address, dmData("finalize", [caseId, NO_STATE]));
    await mined(s, s.disputes.write.appeal([caseId], { account: s.provider.account }));
    await expectBlocked();
    let c = await s.disputes.read.caseOf([caseId]);
    expect([c.status, c.round]).to.deep.equal([STATUS.Open, 1]);
    expect((await s.disputes.read.roundOf([caseId, 1])).appealBond).to.equal(appealBond);
    const panel1 = await panelKeys(s, caseId);
    expect(panel1.length).to.equal(2 * DISPUTE_PARAMS.panelSize - 1);
    await mined(s, submitVerdict(s, message, panel1)); // the appeal panel upholds
    await time.increase(DISPUTE_PARAMS.appealWindow + 1);
    await arm(s.disputes.address, dmData("claim", [ree.address]));
    await mined(s, s.disputes.write.finalize([caseId, NO_STATE], { account: s.watcher.account }));
    await expectBlocked();
    c = await s.disputes.read.caseOf([caseId]);
    expect(c.status).to.equal(STATUS.Resolved);
    const fee = feeOfBond(bond);
    await arm(s.disputes.address, dmData("claim", [ree.address]));
    const dust = await claimFees(s, ree.address, [...panel0, ...panel1], fee);
    await expectBlocked();
    await expectDeltas(s, snap, {
      REE: {
        client: ether("0.25") + bond - burnOf(bond) - fee + appealBond - burnOf(appealBond),
        provider: ether("0.75") - bond - appealBond,
        burn: burnOf(bond) + burnOf(appealBond) + dust,
        gigs: -ether("1"),
      },
    });

    // …and while expire pays out (re-entering expire itself): nobody ever decided, so the gig ends as without a
    // dispute (released to the provider).
    const gig2 = await deliveredGig(s, ree.address, ether("1"));
    const case2 = await s.disputes.read.nextCaseId([KIND.Gig, subjectOf(gig2)]);
    snap = await snapshot(s, systemBook(s), tokens);
    await mined(s, s.disputes.write.openGigCase([gig2, 0, PACKAGE_HASH], { account: s.client.account }));
    await time.increaseTo((await s.disputes.read.caseOf([case2])).deadline + 1);
    await mined(s, s.disputes.write.expire([case2, NO_STATE], { account: s.watcher.account })); // to the slow path
    expect((await s.disputes.read.caseOf([case2])).status).to.equal(STATUS.SlowPath);
    await time.increase(DISPUTE_PARAMS.slowPathTimeout + 1);
    await arm(s.disputes.address, encodeFunctionData({ abi: s.disputes.abi, functionName: "expire", args: [case2, NO_STATE] }));
    await mined(s, s.disputes.write.expire([case2, NO_STATE], { account: s.watcher.account }));
    await expectBlocked();
    expect((await s.disputes.read.caseOf([case2])).status).to.equal(STATUS.Expired);
    // The client's lane-0 bond came back whole (no panel signed, so no fee), the value went to the provider.
    await expectDeltas(s, snap, { REE: { client: 0n, provider: ether("1"), gigs: -ether("1") } });
  });

  it("attack: re-entrancy through a hostile ETH receiver (a contract payee that re-enters on receive)", async function () {
    const s = await loadFixture(system);
    const attacker = s.stranger;
    const hostile = await deployHostileReceiver(s, attacker);
    const rejecter = await hre.viem.deployContract("EthRejecter");
    const book = systemBook(s, { hostile, rejecter: rejecter.address });
    const exec = (target: Address, data: Hex, value = 0n) =>
      mined(s, attacker.writeContract({ address: hostile, abi: HOSTILE_RECEIVER_ABI, functionName: "exec", args: [target, data, value], value, account: attacker.account, chain: attacker.chain }));
    const arm = (target: Address, data: Hex) =>
      mined(s, attacker.writeContract({ address: hostile, abi: HOSTILE_RECEIVER_ABI, functionName: "arm", args: [target, data], account: attacker.account, chain: attacker.chain }));
    let reentries = 1n;
    const expectReentered = async (errorData: Hex) => {
      const state = await hostileState(s, hostile);
      reentries += 1n;
      expect(state.armed).to.equal(false);
      expect(state.attempts).to.equal(reentries); // the re-entrant call ran inside the 100k stipend…
      expect(state.outcome).to.equal(3); // …and reverted
      expect(state.lastError.slice(0, 10)).to.equal(errorData.slice(0, 10));
    };

    // GasEscrow: the hostile contract funds two channels as their funder; each refund re-enters the
    // settlement that pays it.
    const hostileOpen = async (nonce: bigint) => {
      const terms = makeTerms(zeroAddress, { funder: hostile, nonce });
      const receipt = await exec(s.escrow.address, encodeFunctionData({ abi: s.escrow.abi, functionName: "open", args: [terms, ether("2")] }), ether("2"));
      const ref = { terms, openedAt: receipt.blockNumber };
      return { escrow: s.escrow, ref, sessionId: sessionIdOf(escrowDomain(s), ref), domain: escrowDomain(s), deposit: ether("2"), feeBps: 0 } satisfies Session;
    };
    const A = await hostileOpen(1n);
    const B = await hostileOpen(2n);
    const tA = await signTicket(A, 3n, tenths(3n));
    const closed = await mined(s, closeUnilateral(A, tA, s.provider));
    const summaryB = await signSummary(B, 4n, tenths(4n));
    // EthRejecter as a funder: the unilateral path force-sends its refund too.
    const R = await openSession(s, zeroAddress, { terms: { funder: rejecter.address, nonce: 3n } });
    const tR = await signTicket(R, 5n, tenths(5n));
    await mined(s, closeUnilateral(R, tR, s.provider));
    let snap = await snapshot(s, book);
    await time.increaseTo((await blockTime(s, closed)) + WINDOW + 5n);
    await arm(s.escrow.address, encodeFunctionData({ abi: s.escrow.abi, functionName: "finalize", args: [A.ref.terms, A.ref.openedAt, stateOf(A, tA)] }));
    await mined(s, finalize(A, stateOf(A, tA), s.watcher));
    await expectReentered(toFunctionSelector("ChannelNotClosing(bytes32)"));
    const coopArgs = [B.ref.terms, B.ref.openedAt, summaryB.finalSeq, summaryB.finalAmount, summaryB.root, summaryB.payerSig, summaryB.providerSig] as const;
    await arm(s.escrow.address, encodeFunctionData({ abi: s.escrow.abi, functionName: "closeCooperative", args: coopArgs }));
    await mined(s, closeCooperative(B, summaryB, s.watcher));
    await expectReentered(toFunctionSelector("ChannelNotOpen(bytes32)"));
    await mined(s, finalize(R, stateOf(R, tR), s.watcher));
    await expectDeltas(s, snap, {
      ETH: {
        provider: tenths(3n) + tenths(4n) + tenths(5n),
        hostile: ether("4") - tenths(7n),
        rejecter: ether("2") - tenths(5n),
        escrow: -ether("6"),
      },
    });

    // GigEscrow: the hostile contract is the client; its refunds re-enter cancel (as the client itself,
    // so only the guard and the status stop it) and refund.
    const now = (await s.publicClient.getBlock()).timestamp;
    const fundData = (deadline: bigint) =>
      encodeFunctionData({ abi: s.gigs.abi, functionName: "fund", args: [s.provider.account.address, zeroAddress, ether("1"), label("ics"), Number(deadline), 3600] });
    await exec(s.gigs.address, fundData(now + 86_400n), ether("1"));
    const cancelled = await s.gigs.read.gigCount();
    await exec(s.gigs.address, fundData(now + 120n), ether("1"));
    const expiring = await s.gigs.read.gigCount();
    snap = await snapshot(s, book);
    await arm(s.gigs.address, encodeFunctionData({ abi: s.gigs.abi, functionName: "cancel", args: [cancelled] }));
    await exec(s.gigs.address, encodeFunctionData({ abi: s.gigs.abi, functionName: "cancel", args: [cancelled] }));
    await expectReentered(REENTRANCY);
    await time.increase(200);
    await arm(s.gigs.address, encodeFunctionData({ abi: s.gigs.abi, functionName: "refund", args: [expiring] }));
    await mined(s, s.gigs.write.refund([expiring], { account: s.watcher.account }));
    await expectReentered(REENTRANCY);
    await expectDeltas(s, snap, { ETH: { hostile: ether("2"), gigs: -ether("2") } });

    // DisputeManager: the hostile client wins a case; its refund (paid inside finalize) re-enters finalize.
    const when = (await s.publicClient.getBlock()).timestamp;
    await exec(s.gigs.address, fundData(when + 86_400n), ether("1"));
    const gigId = await s.gigs.read.gigCount();
    await mined(s, s.gigs.write.accept([gigId], { account: s.provider.account }));
    await mined(s, s.gigs.write.deliver([gigId, label("deliverable"), zeroHash], { account: s.provider.account }));
    const caseId = await s.disputes.read.nextCaseId([KIND.Gig, subjectOf(gigId)]);
    const bond = bondFor(ether("1"), 1);
    await exec(s.disputes.address, encodeFunctionData({ abi: s.disputes.abi, functionName: "openGigCase", args: [gigId, 1, PACKAGE_HASH] }), bond);
    await mined(s, s.disputes.write.respond([caseId], { account: s.provider.account, value: bond }));
    const message = resolution(caseId, VERDICT.ChallengerWins, ether("0.25"));
    const panel = await panelKeys(s, caseId);
    await mined(s, submitVerdict(s, message, panel));
    await time.increase(DISPUTE_PARAMS.appealWindow + 1);
    snap = await snapshot(s, book);
    await arm(s.disputes.address, encodeFunctionData({ abi: s.disputes.abi, functionName: "finalize", args: [caseId, NO_STATE] }));
    await mined(s, s.disputes.write.finalize([caseId, NO_STATE], { account: s.watcher.account }));
    await expectReentered(REENTRANCY);
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Resolved);
    const fee = feeOfBond(bond);
    const dust = await claimFees(s, zeroAddress, panel, fee);
    await expectDeltas(s, snap, {
      ETH: {
        hostile: ether("0.25") + 2n * bond - burnOf(bond) - fee,
        provider: ether("0.75"),
        burn: burnOf(bond) + dust,
        gigs: -ether("1"),
        disputes: -2n * bond,
      },
    });
  });

  /*////////////////////////////// misbehaving tokens //////////////////////////////*/

  it("issue 28 item 4: a fee-on-transfer token, even with dispute terms, is refused at funding (TransferAmountMismatch) — no channel or gig that could never get a case; nothing moves", async function () {
    const s = await loadFixture(hostileTokens);
    const fot = s.feeToken;
    const net = (x: bigint) => x - (x * 100n) / 10_000n;
    const tokens = { LGAS: s.token, FOT: fot };
    expect((await s.disputes.read.assetTerms([fot.address])).stakeRate).to.equal(TOKEN_TERMS.stakeRate);
    const snap = await snapshot(s, systemBook(s), tokens);
    const terms = makeTerms(fot.address);
    await expectRevert(
      s.escrow.write.open([terms, ether("1")], { account: s.client.account }),
      "TransferAmountMismatch",
      [getAddress(fot.address), ether("1"), net(ether("1"))],
    );
    const now = (await s.publicClient.getBlock()).timestamp;
    await expectRevert(
      s.gigs.write.fund([s.provider.account.address, fot.address, ether("1"), ICS_HASH, Number(now + 86_400n), GIG_WINDOW], { account: s.client.account }),
      "TransferAmountMismatch",
      [getAddress(fot.address), ether("1"), net(ether("1"))],
    );
    expect(await s.gigs.read.gigCount()).to.equal(0n);
    await expectDeltas(s, snap, {});
  });

  it("issue 28 item 4: an asset without dispute terms is refused at funding (AssetWithoutDisputeTerms) for channels and gigs, sponsored or not; nothing moves", async function () {
    const s = await loadFixture(hostileTokens);
    const bare = await hre.viem.deployContract("LaborGas", [s.governance.account.address]); // a plain ERC-20, no terms
    await mined(s, bare.write.mint([s.client.account.address, ether("10")]));
    for (const spender of [s.escrow.address, s.gigs.address]) await mined(s, bare.write.approve([spender, ether("10")], { account: s.client.account }));
    expect((await s.disputes.read.assetTerms([bare.address])).stakeRate).to.equal(0n);
    const snap = await snapshot(s, systemBook(s), { LGAS: s.token, BARE: bare });
    await expectRevert(s.escrow.write.open([makeTerms(bare.address), ether("1")], { account: s.client.account }), "AssetWithoutDisputeTerms", [getAddress(bare.address)]);
    const now = (await s.publicClient.getBlock()).timestamp;
    const gig = [s.provider.account.address, bare.address, ether("1"), ICS_HASH, Number(now + 86_400n), GIG_WINDOW] as const;
    await expectRevert(s.gigs.write.fund([...gig], { account: s.client.account }), "AssetWithoutDisputeTerms", [getAddress(bare.address)]);
    await expectRevert(s.gigs.write.fundFor([s.payerWallet.account.address, ...gig], { account: s.client.account }), "AssetWithoutDisputeTerms", [getAddress(bare.address)]);
    expect(await s.gigs.read.gigCount()).to.equal(0n);
    await expectDeltas(s, snap, {});
    // The wiring cannot be changed to dodge the rule: the terms source is sealed with the roles.
    await expectRevert(s.escrow.write.setDisputeTermsSource([zeroAddress]), "WiringSealed", []);
    await expectRevert(s.gigs.write.setDisputeTermsSource([zeroAddress]), "WiringSealed", []);
  });

  it("issue 28 item 4: surplus a token credited the GasEscrow beyond what it owes is swept to the treasury by anyone; nothing owed moves, and the channel still settles exactly", async function () {
    const s = await loadFixture(hostileTokens);
    const snap = await snapshot(s, systemBook(s));
    const session = await openSession(s, s.token.address, { deposit: ether("1") });
    // A token crediting the escrow outside a funding transfer (here: a plain transfer, as an airdrop or a positive
    // rebase would) leaves a balance above what the escrow owes.
    await mined(s, s.token.write.transfer([s.escrow.address, ether("5")], { account: s.stranger.account }));
    expect(await s.escrow.read.liabilitiesOf([s.token.address])).to.equal(ether("1"));
    await mined(s, s.escrow.write.sweep([s.token.address], { account: s.watcher.account }));
    await mined(s, s.escrow.write.sweep([s.token.address], { account: s.watcher.account })); // nothing left: a no-op
    expect(await s.token.read.balanceOf([s.escrow.address])).to.equal(ether("1"));
    const summary = await signSummary(session, 4n, ether("0.4"));
    await mined(s, closeCooperative(session, summary, s.watcher));
    await mined(s, s.escrow.write.withdrawFees([s.token.address], { account: s.watcher.account }));
    const fee = feeOf(ether("0.4"), FEE_BPS);
    expect(await s.escrow.read.liabilitiesOf([s.token.address])).to.equal(0n);
    await expectDeltas(s, snap, {
      LGAS: { stranger: -ether("5"), treasury: ether("5") + fee, provider: ether("0.4") - fee, client: -ether("0.4") },
    });
  });

  it("attack: non-returning tokens (end to end)", async function () {
    const s = await loadFixture(hostileTokens);
    const nrt = s.noReturn;
    const tokens = { LGAS: s.token, NRT: nrt };
    // Non-returning token: a stale close answered by a challenge, and a gig disputed with bonds in it.
    const snap = await snapshot(s, systemBook(s), tokens);
    const Nn = await openSession(s, nrt.address);
    const stale = await signTicket(Nn, 3n, tenths(3n));
    const newest = await signTicket(Nn, 7n, tenths(7n));
    const closedN = await mined(s, closeUnilateral(Nn, stale, s.payerWallet));
    await mined(s, challenge(Nn, stateOf(Nn, stale), newest, s.provider));
    await time.increaseTo((await blockTime(s, closedN)) + WINDOW);
    await mined(s, finalize(Nn, stateOf(Nn, newest), s.watcher));
    await mined(s, s.escrow.write.withdrawFees([nrt.address], { account: s.watcher.account }));
    const nGig = await deliveredGig(s, nrt.address, ether("1"));
    const { caseId, bond } = await openGigCase(s, nGig, nrt.address, ether("1"));
    await mined(s, s.disputes.write.respond([caseId], { account: s.provider.account }));
    const { fee: arbitrationFee, dust } = await decide(s, resolution(caseId, VERDICT.ChallengerWins, ether("0.4")));
    expect(arbitrationFee).to.equal(feeOfBond(bond)); // the losing respondent's bond pays it
    const fee = feeOf(tenths(7n), FEE_BPS);
    await expectDeltas(s, snap, {
      NRT: {
        provider: tenths(7n) - fee + ether("0.6") - bond,
        treasury: fee,
        client: -tenths(7n) - ether("1") + ether("0.4") + bond - burnOf(bond) - arbitrationFee,
        burn: burnOf(bond) + dust,
      },
    });
  });

  /*////////////////////////////// griefing //////////////////////////////*/

  it("attack: griefing by repeated appeal (appeals capped per case, each bond forfeited when the outcome stands, the freeze bounded)", async function () {
    const s = await loadFixture(system);
    const t = await treeSession(s, "ETH"); // provider closed for 1 ETH of a 2 ETH deposit
    const subject = t.session.sessionId;
    const value = ether("1");
    const b = [0, 1, 2].map((lane) => bondFor(value, lane)); // 0.1, 0.3, 0.9
    const snap = await snapshot(s);
    /** The payer's ETH change (gas added back) across `step`. */
    const payerCost = async (step: () => Promise<unknown>) => {
      const before = await snapshot(s);
      await step();
      const after = await snapshot(s);
      return after.balances.ETH!.payer! - before.balances.ETH!.payer! + (await gasOfPayer(s, before.block, after.block));
    };

    // The payer opens at lane 0 and the provider contests; the drawn panel dismisses the case.
    const caseId = await s.disputes.read.nextCaseId([KIND.Session, subject]);
    expect(await payerCost(() => openSessionCase(s, t, 3, 0))).to.equal(-b[0]!);
    const openedAt = BigInt(await time.latest());
    await mined(s, s.disputes.write.respond([caseId], { account: s.provider.account, value: b[0]! }));
    // One case at a time: the griefer cannot stack a second one on the subject.
    const leaf = t.leaves[4]!;
    await expectRevert(
      s.disputes.write.openSessionCase(
        [t.session.ref.terms, t.session.ref.openedAt, t.recorded, leaf.receiptHash, leaf.ticketHash, t.tree.proof(4), 0, PACKAGE_HASH],
        { account: s.payerWallet.account, value: b[0]! },
      ),
      "CaseAlreadyOpen",
      [subject, caseId],
    );
    const dismiss = resolution(caseId, VERDICT.RespondentWins);
    const panel0 = await panelKeys(s, caseId);
    await mined(s, submitVerdict(s, dismiss, panel0));

    // At the last second of each appeal window the payer appeals, each time with the next level's bond: a
    // larger panel that excludes the first, then the slow path.
    let c = await s.disputes.read.caseOf([caseId]);
    await time.setNextBlockTimestamp(c.deadline);
    expect(await payerCost(() => mined(s, s.disputes.write.appeal([caseId], { account: s.payerWallet.account, value: b[1]! })))).to.equal(-b[1]!);
    const panel1 = await panelKeys(s, caseId);
    expect(panel1.length).to.equal(2 * DISPUTE_PARAMS.panelSize - 1);
    const first = new Set(panel0.map((k) => getAddress(k.address)));
    expect(panel1.filter((k) => first.has(getAddress(k.address)))).to.deep.equal([]);
    await mined(s, submitVerdict(s, dismiss, panel1));
    c = await s.disputes.read.caseOf([caseId]);
    await time.setNextBlockTimestamp(c.deadline);
    expect(await payerCost(() => mined(s, s.disputes.write.appeal([caseId], { account: s.payerWallet.account, value: b[2]! })))).to.equal(-b[2]!);
    c = await s.disputes.read.caseOf([caseId]);
    expect([c.status, c.round]).to.deep.equal([STATUS.SlowPath, 2]);

    // The appeals are spent, for both sides.
    const slow = ["WrongCaseStatus", [caseId, STATUS.SlowPath]] as const;
    await expectRevert(s.disputes.write.appeal([caseId], { account: s.payerWallet.account, value: b[2]! * 3n }), ...slow);
    await expectRevert(s.disputes.write.appeal([caseId], { account: s.provider.account, value: b[2]! * 3n }), ...slow);
    // The subject stays frozen, but never past the longest case the parameters allow.
    const p = DISPUTE_PARAMS;
    const longest = BigInt(p.respondWindow + 2 * (2 * p.decisionWindow + p.appealWindow) + p.slowPathTimeout);
    expect(BigInt(c.deadline) - openedAt <= longest).to.equal(true);
    await expectRevert(finalize(t.session, t.recorded, s.watcher), "FrozenByDispute", [subject, 1]);
    await expectRevert(s.disputes.write.expire([caseId, t.recorded], { account: s.watcher.account }), "DeadlineNotPassed", [caseId, c.deadline]);
    // Governance stays silent; anyone expires the case, and the dismissal that stood before the appeal stands.
    await time.increaseTo(c.deadline + 1);
    const expired = await mined(s, s.disputes.write.expire([caseId, t.recorded], { account: s.watcher.account }));
    const ends = parseEventLogs({ abi: s.disputes.abi, eventName: "CaseExpired", logs: expired.logs });
    expect(ends.map((e) => e.args.verdictStood)).to.deep.equal([true]);
    expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Expired);
    // The provider's funds were never stuck: the channel finalises for the recorded amount.
    await mined(s, finalize(t.session, t.recorded, s.watcher));
    // Both panels signed the outcome that stood: they share the fee from the losing challenger's bond.
    const fee = feeOfBond(b[0]!);
    const dust = await claimFees(s, zeroAddress, [...panel0, ...panel1], fee);
    const burnt = burnOf(b[0]!) + burnOf(b[1]!) + burnOf(b[2]!);
    await expectDeltas(s, snap, {
      ETH: {
        payer: -(b[0]! + b[1]! + b[2]!),
        provider: ether("1") + b[0]! + b[1]! + b[2]! - burnt - fee,
        burn: burnt + dust,
        client: ether("1"),
        escrow: -ether("2"),
      },
    });
  });

  /*////////////////////////////// front-running //////////////////////////////*/

  it("attack: front-running a cooperative close with a unilateral one (stale ticket, higher priority fee)", async function () {
    for (const kind of KINDS) {
      const s = await loadFixture(feeSystem);
      const asset = assetOf(s, kind);
      const session = await openSession(s, asset);
      const stale = await signTicket(session, 2n, tenths(2n));
      const newest = await signTicket(session, 7n, tenths(7n));
      const summary = await signSummary(session, 7n, tenths(7n), { root: newest.receiptRoot });
      const snap = await snapshot(s);

      // The provider broadcasts the cooperative close; the payer sees it in the mempool and outbids it.
      let coopHash: Hash;
      let frontHash: Hash;
      await hre.network.provider.send("evm_setAutomine", [false]);
      try {
        coopHash = await s.escrow.write.closeCooperative(
          [session.ref.terms, session.ref.openedAt, summary.finalSeq, summary.finalAmount, summary.root, summary.payerSig, summary.providerSig],
          { account: s.provider.account, gas: 300_000n, maxFeePerGas: 100_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n },
        );
        frontHash = await s.escrow.write.closeUnilateral([session.ref.terms, session.ref.openedAt, stale], {
          account: s.payerWallet.account,
          gas: 300_000n,
          maxFeePerGas: 200_000_000_000n,
          maxPriorityFeePerGas: 50_000_000_000n,
        });
        await hre.network.provider.send("evm_mine", []);
      } finally {
        await hre.network.provider.send("evm_setAutomine", [true]);
      }
      const front = await mined(s, frontHash);
      const { receipt: coop, error } = await minedRevert(s, coopHash, s.escrow.abi);
      expect(coop.blockNumber).to.equal(front.blockNumber);
      expect(front.transactionIndex).to.be.lessThan(coop.transactionIndex);
      expect([error.errorName, error.args]).to.deep.equal(["ChannelNotOpen", [session.sessionId]]);
      const closing = parseEventLogs({ abi: s.escrow.abi, eventName: "ChannelClosing", logs: front.logs });
      expect(closing.map((e) => [e.args.closer, e.args.seq])).to.deep.equal([[addressOf(s.payerWallet), 2n]]);
      // The co-signed summary cannot settle a closing channel; the provider's newest ticket does.
      await expectRevert(closeCooperative(session, summary, s.provider), "ChannelNotOpen", [session.sessionId]);
      await mined(s, challenge(session, stateOf(session, stale), newest, s.provider));
      await time.increaseTo((await blockTime(s, front)) + WINDOW);
      await mined(s, finalize(session, stateOf(session, newest), s.watcher));
      await mined(s, s.escrow.write.withdrawFees([asset], { account: s.watcher.account }));
      const fee = feeOf(tenths(7n), FEE_BPS);
      await expectDeltas(s, snap, {
        [kind]: { provider: tenths(7n) - fee, treasury: fee, client: session.deposit - tenths(7n), escrow: -session.deposit },
      });
    }
  });

  /*////////////////////////////// roles //////////////////////////////*/

  it("attack: slashing, freezing, releasing and resolving by anyone but the dispute contract", async function () {
    const s = await loadFixture(system);
    const t = await treeSession(s, "LGAS");
    const gigId = await deliveredGig(s, zeroAddress, ether("1"));
    const arbitrator = s.wallets[SYS.arbitrators[0]]!;
    const snap = await snapshot(s);
    const slasher = await s.registry.read.SLASHER_ROLE();
    const escrowRole = await s.escrow.read.DISPUTE_ROLE();
    const gigRole = await s.gigs.read.DISPUTE_ROLE();
    const providerAddress = s.provider.account.address;

    for (const wallet of [s.governance, s.provider, arbitrator, s.stranger, s.client, s.payerWallet]) {
      const who = addressOf(wallet);
      for (const [role, account] of [
        [PROVIDER_ROLE, providerAddress],
        [ARBITRATOR_ROLE, arbitrator.account.address],
      ] as const) {
        await expectRevert(
          s.registry.write.slash([role, account, MIN_PROVIDER_BOND, who, 0], { account: wallet.account }),
          "AccessControlUnauthorizedAccount",
          [who, slasher],
        );
      }
      await expectRevert(s.escrow.write.freeze([t.session.sessionId, t.recorded], { account: wallet.account }), "AccessControlUnauthorizedAccount", [who, escrowRole]);
      await expectRevert(
        s.escrow.write.release([t.session.sessionId, t.recorded, t.recorded.amount], { account: wallet.account }),
        "AccessControlUnauthorizedAccount",
        [who, escrowRole],
      );
      await expectRevert(s.gigs.write.freeze([gigId], { account: wallet.account }), "AccessControlUnauthorizedAccount", [who, gigRole]);
      await expectRevert(s.gigs.write.resolve([gigId, ether("1")], { account: wallet.account }), "AccessControlUnauthorizedAccount", [who, gigRole]);
    }
    // Nothing moved and nothing froze: the provider's bond is whole, the session and the gig settle.
    expect((await s.registry.read.bondOf([PROVIDER_ROLE, providerAddress])).active).to.equal(MIN_PROVIDER_BOND * 5n);
    expect((await s.registry.read.bondOf([ARBITRATOR_ROLE, arbitrator.account.address])).active).to.equal(ARBITRATOR_STAKE);
    expect(await s.escrow.read.closingInfo([t.session.sessionId, t.recorded])).to.deep.equal([true, Number(t.finalizesAt), 0]);
    expect((await s.gigs.read.gigOf([gigId])).status).to.equal(GIG_STATUS.Delivered);
    await time.increaseTo(t.finalizesAt);
    await mined(s, finalize(t.session, t.recorded, s.watcher));
    await time.increaseTo((await s.gigs.read.gigOf([gigId])).windowEndsAt);
    await mined(s, s.gigs.write.release([gigId], { account: s.watcher.account }));
    await expectDeltas(s, snap, {
      ETH: { provider: ether("1"), gigs: -ether("1") },
      LGAS: { provider: t.recorded.amount, client: t.session.deposit - t.recorded.amount, escrow: -t.session.deposit },
    });
  });
});

/*//////////////////////////////////////////////////////////////
                          LOCAL UTILITIES
//////////////////////////////////////////////////////////////*/

/** Gas the payer paid in blocks (from, to]. */
async function gasOfPayer(s: System, from: bigint, to: bigint): Promise<bigint> {
  let paid = 0n;
  for (let n = from + 1n; n <= to; n++) {
    const block = await s.publicClient.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) {
      if (getAddress(tx.from) !== addressOf(s.payerWallet)) continue;
      const receipt = await s.publicClient.getTransactionReceipt({ hash: tx.hash });
      paid += receipt.gasUsed * receipt.effectiveGasPrice;
    }
  }
  return paid;
}
