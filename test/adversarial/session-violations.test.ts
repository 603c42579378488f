/**
 * Adversarial suite, issue 12 item 4: every accepted receipt is provable against what settles. A pipelined
 * session's tickets carry lagging roots (at 16 in flight, tickets 1..5 of a 5-invocation session all carry
 * the root of no receipts), so the payer anchors the provider's EIP-712 signed ReceiptCommit
 * (`GasEscrow.anchorReceiptCommit`) and a session case proves a leaf against its root
 * (`DisputeRules.sessionSubject`). Every scenario asserts the exact balance change of every party, the
 * escrow, the DisputeManager, the registry, the treasury, the burn address and every fixture arbitrator
 * (ETH and LaborGas, gas added back).
 *
 * The Lane 0 verdicts decided end to end from real receipts are in terms-violations.test.ts (model, price,
 * bindings) and session-equivocation.test.ts (request/output mismatch against the delivered receipt, no fault).
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { getAddress, zeroAddress, zeroHash, type Address, type Hex, type LocalAccount } from "viem";

import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { toCompactSignature } from "../../channel-client/core/eip712";
import { receiptLeafFromHashes } from "../../channel-client/core/leaf";
import { receiptCommitDigest, signReceiptCommit } from "../../channel-client/core/receipt-commit";
import { expectRevert } from "../helpers/revert";
import { DISPUTE_PARAMS, KIND, quorumSignatures, systemFixture, VERDICT, drawPanel, type System } from "../helpers/system";
import {
  sortAsc,
  fullBook,
  arbName,
  BPS,
  blockTime,
  challenge,
  closeCooperative,
  closeUnilateral,
  ether,
  expectDeltas,
  feeOf,
  finalize,
  label,
  mined,
  openSession,
  PACKAGE_HASH,
  PAYER_KEY,
  PROVIDER_KEY,
  RESOLUTION_HASH,
  signSummary,
  signTicket,
  snapshot,
  stateOf,
  type ClosingState,
  type Session,
  type Wallet,
} from "./helpers";

const P = DISPUTE_PARAMS;
const burnOf = (x: bigint): bigint => (x * BigInt(P.burnBps)) / BPS;
const arbFeeOf = (x: bigint): bigint => (x * BigInt(P.feeBps)) / BPS;
const tenths = (n: bigint): bigint => (n * ether("1")) / 10n;
const WINDOW = 3600n; // makeTerms' challenge duration
const PHASE = { Open: 1, Finalizable: 3 } as const;

function walletOf(s: System, address: Address): Wallet {
  const wallet = s.wallets.find((w) => getAddress(w.account.address) === getAddress(address));
  if (!wallet) throw new Error(`no wallet for ${address}`);
  return wallet;
}

/** The provider's compact signature over ReceiptCommit(sessionId, leafCount, root) in the session's domain. */
async function providerCommit(session: Session, leafCount: bigint, root: Hex, signer: LocalAccount = PROVIDER_KEY) {
  const signed = await signReceiptCommit(signer, session.domain, { sessionId: session.sessionId, leafCount, root });
  return { leafCount, root, sig: toCompactSignature(signed.signature) };
}

function anchor(session: Session, commit: Awaited<ReturnType<typeof providerCommit>>, from: Wallet) {
  return session.escrow.write.anchorReceiptCommit(
    [session.ref.terms, session.ref.openedAt, commit.leafCount, commit.root, commit.sig],
    { account: from.account },
  );
}

/**
 * A 2-ETH channel of five invocations at 0.1 ETH streamed 16 in flight: every ticket 1..5 was signed before
 * any receipt came back, so each carries the root of no receipts; the five receipts and the provider's
 * signed commit over them arrive afterwards.
 */
async function pipelinedSession(s: System) {
  const session = await openSession(s, zeroAddress);
  const leaves = Array.from({ length: 5 }, (_, i) => ({ receiptHash: label(`pipelined receipt ${i + 1}`), ticketHash: label(`pipelined ticket ${i + 1}`) }));
  const tree = ReceiptAccumulator.fromLeaves(leaves.map((l) => receiptLeafFromHashes(l.receiptHash, l.ticketHash)));
  const tickets = [];
  for (let seq = 1n; seq <= 5n; seq++) tickets.push(await signTicket(session, seq, tenths(seq), { root: zeroHash }));
  const commit = await providerCommit(session, 5n, tree.root());
  return { session, leaves, tree, tickets, commit };
}
type Pipelined = Awaited<ReturnType<typeof pipelinedSession>>;

function openCase(s: System, t: Pipelined, recorded: ClosingState, index: number, bond: bigint, from: Wallet = s.payerWallet) {
  const leaf = t.leaves[index]!;
  return s.disputes.write.openSessionCase(
    [t.session.ref.terms, t.session.ref.openedAt, recorded, leaf.receiptHash, leaf.ticketHash, t.tree.proof(index), 1, PACKAGE_HASH],
    { account: from.account, value: bond },
  );
}

describe("adversarial: session violations proven against what settles (issue 12)", function () {
  async function system() {
    return systemFixture();
  }

  it("the ReceiptCommit digest is the GasEscrow's EIP-712 digest", async function () {
    const s = await loadFixture(system);
    const session = await openSession(s, zeroAddress);
    for (const [leafCount, root] of [[1n, label("r1")], [(1n << 64n) - 1n, label("r2")], [5n, zeroHash]] as const) {
      const commit = { sessionId: session.sessionId, leafCount, root };
      expect(await s.escrow.read.hashReceiptCommit([session.sessionId, leafCount, root])).to.equal(receiptCommitDigest(session.domain, commit));
    }
  });

  it("attack: a pipelined session (5 invocations, 16 in flight) closed on a ticket whose root proves nothing — the payer anchors the provider's signed commit and a drawn panel refunds a receipt proven against it", async function () {
    const s = await loadFixture(system);
    const snap = await snapshot(s, fullBook(s));
    const t = await pipelinedSession(s);
    const { session } = t;
    const newest = t.tickets[4]!; // seq 5, 0.5 ETH, root of no receipts

    // The provider closes with its newest ticket; the payer's same-amount closing ticket (seq 6, the root over
    // all five) cannot displace the recorded root (decision 0003: the root moves only when the amount rises).
    await mined(s, closeUnilateral(session, newest, s.provider));
    const recorded = stateOf(session, newest);
    const closingTicket = await signTicket(session, 6n, tenths(5n), { root: t.tree.root() });
    await expectRevert(challenge(session, recorded, closingTicket, s.payerWallet), "TicketNotNewer", [session.sessionId, 6n, 5n]);

    // Against the recorded (empty) root no receipt is provable.
    const value = tenths(5n);
    const bond = await s.disputes.read.bondFor([zeroAddress, value, 1]);
    await expectRevert(openCase(s, t, recorded, 2, bond), "InvalidMerkleProof", [session.sessionId, zeroHash]);

    // The payer anchors the provider's commit over the five receipts; receipt 3 is now provable.
    const anchored = await mined(s, anchor(session, t.commit, s.payerWallet));
    const events = await s.publicClient.getContractEvents({ address: s.escrow.address, abi: s.escrow.abi, eventName: "ReceiptCommitAnchored", fromBlock: anchored.blockNumber, toBlock: anchored.blockNumber });
    expect(events.map((e) => e.args)).to.deep.equal([{ sessionId: session.sessionId, by: getAddress(s.payerWallet.account.address), leafCount: 5n, root: t.tree.root() }]);
    expect(await s.escrow.read.anchoredCommitOf([session.sessionId, t.tree.root()])).to.equal(5n);

    const caseId = await s.disputes.read.nextCaseId([KIND.Session, session.sessionId]);
    await mined(s, openCase(s, t, recorded, 2, bond));
    const opened = await s.disputes.read.caseOf([caseId]);
    expect(opened.value).to.equal(value);
    await mined(s, s.disputes.write.respond([caseId], { account: s.provider.account, value: bond }));

    const panel = sortAsc(await drawPanel(s, caseId));
    const refund = tenths(1n); // the over-charged invocation
    const message = { caseId, verdict: VERDICT.ChallengerWins, refund, slash: 0n, resolutionHash: RESOLUTION_HASH };
    await mined(s, s.disputes.write.submitVerdict([message, await quorumSignatures(s, message, panel)], { account: s.watcher.account }));
    await time.increase(P.appealWindow + 1);
    await mined(s, s.disputes.write.finalize([caseId, recorded], { account: s.watcher.account }));
    const fee = arbFeeOf(bond); // the losing respondent's bond pays it
    const share = fee / BigInt(panel.length);
    for (const k of panel) await mined(s, s.disputes.write.claim([zeroAddress], { account: walletOf(s, k.address).account }));

    // The case froze the channel; it settles at the recorded amount less the refund.
    const settled = { ...recorded, amount: recorded.amount - refund };
    await mined(s, finalize(session, settled, s.watcher));
    const routingFee = feeOf(settled.amount, session.feeBps);
    const eth: Record<string, bigint> = {
      client: -session.deposit + (session.deposit - settled.amount),
      provider: settled.amount - routingFee - bond,
      escrow: routingFee, // accrued for the treasury
      payer: bond - burnOf(bond) - fee,
      burn: burnOf(bond) + (fee - share * BigInt(panel.length)),
    };
    for (const k of panel) eth[arbName(s, k.address)] = share;
    await expectDeltas(s, snap, { ETH: eth });
  });

  it("attack: anchoring refused for strangers, the provider, open and finalisable channels, forged and foreign commits; a second anchoring changes nothing", async function () {
    const s = await loadFixture(system);
    const t = await pipelinedSession(s);
    const { session } = t;
    const { sessionId } = session;
    const snap = await snapshot(s, fullBook(s));

    // While open nothing can be disputed, so nothing is anchored.
    await expectRevert(anchor(session, t.commit, s.payerWallet), "CommitNotAnchorable", [sessionId, PHASE.Open]);
    const closed = await mined(s, closeUnilateral(session, t.tickets[4]!, s.provider));
    // Only the side that can dispute anchors.
    await expectRevert(anchor(session, t.commit, s.stranger), "NotPayerOrFunder", [sessionId, getAddress(s.stranger.account.address)]);
    await expectRevert(anchor(session, t.commit, s.provider), "NotPayerOrFunder", [sessionId, getAddress(s.provider.account.address)]);
    // A commit the payer signed itself, one signed for another root, and an empty one.
    const selfSigned = await providerCommit(session, 5n, t.tree.root(), PAYER_KEY);
    await expectRevert(anchor(session, selfSigned, s.payerWallet), "SignerMismatch", [getAddress(PROVIDER_KEY.address), getAddress(PAYER_KEY.address)]);
    await expectRevert(anchor(session, { ...t.commit, root: label("a root the provider never signed") }, s.payerWallet), "SignerMismatch");
    await expectRevert(anchor(session, { ...t.commit, leafCount: 6n }, s.payerWallet), "SignerMismatch");
    await expectRevert(anchor(session, await providerCommit(session, 0n, zeroHash), s.payerWallet), "EmptyReceiptCommit", [sessionId]);
    // A commit the provider signed for another session of the same parties is foreign here.
    const other = await openSession(s, zeroAddress);
    const foreign = await providerCommit(other, 5n, t.tree.root());
    await expectRevert(anchor(session, foreign, s.payerWallet), "SignerMismatch");

    // The funder may anchor; anchoring again (by the payer) is a no-op without an event.
    await mined(s, anchor(session, t.commit, s.client));
    const again = await mined(s, anchor(session, t.commit, s.payerWallet));
    expect(await s.publicClient.getContractEvents({ address: s.escrow.address, abi: s.escrow.abi, eventName: "ReceiptCommitAnchored", fromBlock: again.blockNumber, toBlock: again.blockNumber })).to.deep.equal([]);
    // The anchored root is the session's only: the other session cannot prove against it.
    expect(await s.escrow.read.anchoredCommitOf([other.sessionId, t.tree.root()])).to.equal(0n);

    // After the window nothing new can be disputed, so nothing is anchored either.
    await time.increaseTo((await blockTime(s, closed)) + WINDOW);
    await expectRevert(anchor(session, await providerCommit(session, 4n, label("later")), s.payerWallet), "CommitNotAnchorable", [sessionId, PHASE.Finalizable]);
    await mined(s, finalize(session, stateOf(session, t.tickets[4]!), s.watcher));
    const routingFee = feeOf(tenths(5n), session.feeBps);
    await expectDeltas(s, snap, {
      ETH: {
        client: -other.deposit + (session.deposit - tenths(5n)),
        provider: tenths(5n) - routingFee,
        escrow: -session.deposit + routingFee + other.deposit,
      },
    });
  });

  it("attack: the payer swaps the recorded root with a same-amount ticket — refused, and a case still proves against the provider's anchored commit only", async function () {
    const s = await loadFixture(system);
    const t = await pipelinedSession(s);
    const { session } = t;
    const snap = await snapshot(s, fullBook(s));
    // The payer closes first, with a closing ticket over all five receipts.
    const closingTicket = await signTicket(session, 6n, tenths(5n), { root: t.tree.root() });
    await mined(s, closeUnilateral(session, closingTicket, s.payerWallet));
    const recorded = stateOf(session, closingTicket);
    // A higher-seq, same-amount ticket with a root of the payer's choosing cannot replace it.
    const forgedLeaves = [{ receiptHash: label("invented receipt"), ticketHash: label("invented ticket") }, ...t.leaves.slice(1)];
    const forgedTree = ReceiptAccumulator.fromLeaves(forgedLeaves.map((l) => receiptLeafFromHashes(l.receiptHash, l.ticketHash)));
    const swap = await signTicket(session, 7n, tenths(5n), { root: forgedTree.root() });
    await expectRevert(challenge(session, recorded, swap, s.payerWallet), "TicketNotNewer", [session.sessionId, 7n, 6n]);
    // An invented receipt proves against neither the recorded root nor an anchored one: the provider never
    // signed the forged root, so it cannot be anchored.
    const bond = await s.disputes.read.bondFor([zeroAddress, tenths(5n), 1]);
    await expectRevert(
      s.disputes.write.openSessionCase(
        [session.ref.terms, session.ref.openedAt, recorded, forgedLeaves[0]!.receiptHash, forgedLeaves[0]!.ticketHash, forgedTree.proof(0), 1, PACKAGE_HASH],
        { account: s.payerWallet.account, value: bond },
      ),
      "InvalidMerkleProof",
      [session.sessionId, t.tree.root()],
    );
    await expectRevert(anchor(session, { ...t.commit, root: forgedTree.root() }, s.payerWallet), "SignerMismatch");
    await expectDeltas(s, snap, {});
  });

  it("a cooperatively settled session: the payer anchors the provider's commit and disputes a receipt the summary's root omits (the case opens; its refund from the bond is settled-disputes.test.ts's path)", async function () {
    const s = await loadFixture(system);
    const t = await pipelinedSession(s);
    const { session } = t;
    // The co-signed summary's root covers only the first four receipts (the provider omitted the fifth).
    const four = ReceiptAccumulator.fromLeaves(t.leaves.slice(0, 4).map((l) => receiptLeafFromHashes(l.receiptHash, l.ticketHash)));
    const summary = await signSummary(session, 5n, tenths(5n), { root: four.root() });
    await mined(s, closeCooperative(session, summary, s.watcher));
    const settledState: ClosingState = await s.escrow.read.settledState([5n, tenths(5n), four.root()]);
    const bond = await s.disputes.read.bondFor([zeroAddress, tenths(5n), 1]);
    await expectRevert(openCase(s, t, settledState, 4, bond), "InvalidMerkleProof", [session.sessionId, four.root()]);
    const snap = await snapshot(s, fullBook(s));
    await mined(s, anchor(session, t.commit, s.payerWallet));
    const caseId = await s.disputes.read.nextCaseId([KIND.Session, session.sessionId]);
    await mined(s, openCase(s, t, settledState, 4, bond));
    expect((await s.disputes.read.caseOf([caseId])).value).to.equal(tenths(5n));
    await expectDeltas(s, snap, { ETH: { payer: -bond, disputes: bond } });
  });
});
