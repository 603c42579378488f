/**
 * Adversarial suite, issue 31 item 2: archive and prune settled channels (decision 0008 amendment).
 *
 * A provider's store holds three channels: A settled cooperatively, B that an adversary made look settled in
 * the store while it is still Open on-chain, and C settled with a case the payer opened on it. Pruning takes
 * the chain's word only: B is never pruned and its stored ticket still closes it for exactly what the payer
 * signed; A is kept until the DisputeManager's window (longer than its terms' window) has passed by chain time,
 * then archived — the archive passes the independent checker — and deleted, and it can never be stored again;
 * C is kept while its case is unresolved. Every prune pass moves no one's balance.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAddress, zeroAddress, type Hex } from "viem";

import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { toCompactSignature } from "../../channel-client/core/eip712";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { sessionReceiptHash, signSessionReceipt } from "../../channel-client/core/receipt";
import { termsHashOf, type TermsDocumentV2 } from "../../channel-client/core/terms";
import { paymentTicketHash, signPaymentTicket } from "../../channel-client/core/ticket";
import { pruneChannels, pruneDecision } from "../../channel-client/node/prune";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { ChannelRecord, StepRecord } from "../../channel-client/store/store";
import { DISPUTE_PARAMS, KIND, systemFixture, type System } from "../helpers/system";
import {
  closeCooperative,
  closeUnilateral,
  ether,
  expectDeltas,
  feeOf,
  finalize,
  fullBook,
  mined,
  openSession,
  PACKAGE_HASH,
  PAYER_KEY,
  PROVIDER_KEY,
  signSummary,
  snapshot,
  stateOf,
  type ClosingState,
} from "./helpers";

const CHECKER = path.join(__dirname, "..", "..", "scripts", "check-export.mjs");
const PRICE = ether("0.1");
/** The terms promise one day of disputes after a settlement; the chain accepts cases for three. */
const TERMS: TermsDocumentV2 = {
  version: "2",
  pricing: { perInvocation: PRICE, perUnit: null, capPerCall: PRICE },
  models: ["m@1"],
  disputes: { windowAfterSettlement: 24n * 3600n, penalties: {}, refundsFromBond: true },
  requiredReceipts: [],
};
const CHAIN_WINDOW = BigInt(DISPUTE_PARAMS.settledDisputeWindow);

type Session = Awaited<ReturnType<typeof openSession>>;

/** A provider channel with `count` really signed steps in `store`; returns its record, steps and receipt tree. */
async function storedChannel(s: System, store: SqliteStore, nonce: bigint, count: number) {
  const session = await openSession(s, zeroAddress, { terms: { termsHash: termsHashOf(TERMS), nonce } });
  const record: ChannelRecord = { sessionId: session.sessionId, role: "provider", ref: session.ref, pricing: TERMS, escrow: getAddress(s.escrow.address), chainId: Number(s.chainId), deposit: session.deposit, status: "open" };
  await store.putChannel(record);
  const tree = new ReceiptAccumulator();
  const steps: Required<StepRecord>[] = [];
  let prev: Hex = `0x${"00".repeat(32)}`;
  for (let seq = 1n; seq <= BigInt(count); seq++) {
    const ticket = await signPaymentTicket({ account: PAYER_KEY, domain: session.domain, ticket: { sessionId: session.sessionId, provider: session.ref.terms.provider, termsHash: session.ref.terms.termsHash, seq, cumulativeAmount: PRICE * seq, receiptRoot: tree.root() } });
    const receipt = await signSessionReceipt({ account: PROVIDER_KEY, receipt: { sessionId: session.sessionId, seq, offloadPacketHash: `0x${"01".repeat(32)}`, outputHash: `0x${"02".repeat(32)}`, policyHash: session.ref.terms.policyHash, modelSnapshotId: "m@1", metering: { units: 1n, amount: PRICE }, prevReceiptHash: prev } });
    prev = sessionReceiptHash(receipt.receipt);
    const leaf = receiptLeaf(receipt.receipt, ticket.ticket);
    tree.append(leaf);
    const step = { seq, ticket, receipt, leaf };
    steps.push(step);
    await store.putStep(session.sessionId, step, { leafCount: tree.size, peaks: tree.peaks(), charged: PRICE * seq });
  }
  return { session, record, steps, tree };
}

/** Settles `session` cooperatively over its stored receipts; returns the settled ClosingState. */
async function settle(s: System, session: Session, tree: ReceiptAccumulator, count: number): Promise<ClosingState> {
  const amount = PRICE * BigInt(count);
  const summary = await signSummary(session, BigInt(count), amount, { root: tree.root() });
  await mined(s, closeCooperative(session, summary, s.watcher));
  return s.escrow.read.settledState([BigInt(count), amount, tree.root()]);
}

describe("adversarial: archive and prune settled channels (issue 31)", function () {
  this.timeout(180_000);
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "ioi-prune-"));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("attack: a fake settled status, an open case and an unexpired window never get a channel pruned; a pruned one is archived, verifies and never comes back — exact balances", async function () {
    const s = await loadFixture(systemFixture);
    const store = SqliteStore.open(path.join(dir, "provider.db"));
    const archiveDir = path.join(dir, "archive");
    fs.mkdirSync(archiveDir);
    const prune = (dryRun = false, into = archiveDir) =>
      pruneChannels({ store, publicClient: s.publicClient, disputeManager: getAddress(s.disputes.address), escrow: getAddress(s.escrow.address), chainId: Number(s.chainId), archiveDir: into, dryRun });
    const byId = (outcomes: Awaited<ReturnType<typeof prune>>) => new Map(outcomes.map((o) => [o.sessionId, o]));
    try {
      const snapAll = await snapshot(s, fullBook(s));
      const a = await storedChannel(s, store, 11n, 4);
      const b = await storedChannel(s, store, 12n, 2);
      const c = await storedChannel(s, store, 13n, 3);
      await settle(s, a.session, a.tree, 4);
      const settledC = await settle(s, c.session, c.tree, 3);
      // The adversary's claim: the store says B settled. On-chain it is Open.
      await store.updateChannel(b.session.sessionId, { status: "settled" });
      // The payer opens a case on C's third receipt; nobody answers it yet.
      const caseId = await s.disputes.read.nextCaseId([KIND.Session, c.session.sessionId]);
      const bond = await s.disputes.read.bondFor([zeroAddress, PRICE * 3n, 1]);
      const leafC = c.steps[2]!;
      await mined(s, s.disputes.write.openSessionCase(
        [c.session.ref.terms, c.session.ref.openedAt, settledC, sessionReceiptHash(leafC.receipt.receipt), paymentTicketHash(leafC.ticket.ticket), c.tree.proof(2), 1, PACKAGE_HASH],
        { account: s.payerWallet.account, value: bond },
      ));

      const snap = await snapshot(s, fullBook(s));
      // Right after settlement nothing goes: A and C are inside the window, B is Open on-chain.
      let outcomes = byId(await prune());
      expect(outcomes.get(a.session.sessionId)).to.deep.include({ action: "kept" });
      expect(outcomes.get(a.session.sessionId)!.reason).to.match(/a case may still open on it until \d+/);
      expect(outcomes.get(b.session.sessionId)).to.deep.equal({ sessionId: b.session.sessionId, action: "kept", reason: "it is Open on-chain, not Settled" });
      // The terms' own window (one day) has passed; the chain's (three days) has not: still kept.
      await time.increase(Number(TERMS.disputes.windowAfterSettlement) + 1);
      outcomes = byId(await prune());
      expect(outcomes.get(a.session.sessionId)!.action).to.equal("kept");
      // Past the chain's window: A is prunable; C is not (its case is unresolved); B still is not.
      await time.increase(Number(CHAIN_WINDOW));
      outcomes = byId(await prune(true));
      expect(outcomes.get(a.session.sessionId)).to.deep.equal({ sessionId: a.session.sessionId, action: "prunable", receipts: 4 });
      expect(store.getChannel(a.session.sessionId)).to.not.equal(undefined); // a dry run deletes nothing
      // An archive that cannot be written keeps the channel (nothing is deleted without a verified archive).
      outcomes = byId(await prune(false, path.join(dir, "no", "such", "dir")));
      expect(outcomes.get(a.session.sessionId)!.action).to.equal("kept");
      expect(outcomes.get(a.session.sessionId)!.reason).to.match(/^its archive could not be written: .*ENOENT/);
      expect(store.steps(a.session.sessionId)).to.have.length(4);
      outcomes = byId(await prune());
      const archive = path.join(archiveDir, `${a.session.sessionId}.jsonl`);
      expect(outcomes.get(a.session.sessionId)).to.deep.equal({ sessionId: a.session.sessionId, action: "pruned", archive, receipts: 4 });
      expect(outcomes.get(c.session.sessionId)).to.deep.equal({ sessionId: c.session.sessionId, action: "kept", reason: `case ${caseId} on it is not resolved` });
      expect(outcomes.get(b.session.sessionId)!.reason).to.equal("it is Open on-chain, not Settled");
      // Nothing any pass did moved anyone's money.
      await expectDeltas(s, snap, {});

      // The archive verifies independently and holds the settled root; A is gone and cannot come back.
      const checked = execFileSync(process.execPath, [CHECKER, archive], { encoding: "utf8" });
      expect(checked).to.match(/^export checked/);
      const lines = fs.readFileSync(archive, "utf8").trim().split("\n").map((line) => JSON.parse(line) as Record<string, any>);
      expect(lines.at(-1)).to.deep.include({ type: "root", receipts: "4", root: a.tree.root(), matches: true });
      expect(store.getChannel(a.session.sessionId)).to.equal(undefined);
      expect(store.steps(a.session.sessionId)).to.deep.equal([]);
      expect(store.prunedChannel(a.session.sessionId)?.archive).to.equal(archive);
      expect((await (store.putChannel(a.record).catch((e: Error) => e)) as Error).name).to.equal("ChannelPrunedError");
      // C keeps its evidence for the case; B keeps the ticket that pays the provider.
      expect(store.steps(c.session.sessionId)).to.have.length(3);
      const latest = store.latestTicket(b.session.sessionId)!;
      expect(latest.ticket.seq).to.equal(2n);

      // B closes with the ticket the store kept, and pays exactly what the payer signed for.
      const ticket = { seq: latest.ticket.seq, cumulativeAmount: latest.ticket.cumulativeAmount, receiptRoot: latest.ticket.receiptRoot, sig: toCompactSignature(latest.signature) };
      await mined(s, closeUnilateral(b.session, ticket, s.provider));
      await time.increase(Number(b.session.ref.terms.challengeDuration) + 1);
      await mined(s, finalize(b.session, stateOf(b.session, ticket), s.watcher));
      const earned = PRICE * 4n + PRICE * 3n + PRICE * 2n;
      const fees = feeOf(PRICE * 4n, a.session.feeBps) + feeOf(PRICE * 3n, c.session.feeBps) + feeOf(PRICE * 2n, b.session.feeBps);
      await expectDeltas(s, snapAll, {
        ETH: {
          client: -earned, // funded three channels of 2 ETH, refunded all but what the receipts earned
          provider: earned - fees,
          escrow: fees, // routing fees accrued for the treasury
          payer: -bond, // the case on C, still open
          disputes: bond,
        },
      });
    } finally {
      await store.close();
    }
  });

  it("decides from the chain's facts only: phase, settlement time, the longer window, unresolved cases (pure)", () => {
    const record = { pricing: TERMS } as ChannelRecord;
    const facts = { phase: "Settled" as const, settledAt: 1000n, chainWindow: 100n, unresolvedCases: [] as Hex[], now: 1101n };
    expect(pruneDecision(record, facts)).to.deep.equal({ prune: false, reason: `a case may still open on it until ${1000n + TERMS.disputes.windowAfterSettlement} (chain time now 1101)`, after: 1000n + TERMS.disputes.windowAfterSettlement });
    const v1 = { pricing: { version: "1", unit: "invocation", pricePerInvocation: 1n } } as ChannelRecord;
    expect(pruneDecision(v1, { ...facts, now: 1100n })).to.deep.equal({ prune: false, reason: "a case may still open on it until 1100 (chain time now 1100)", after: 1100n });
    expect(pruneDecision(v1, facts)).to.deep.equal({ prune: true, after: 1100n });
    for (const phase of ["None", "Open", "Closing", "Finalizable", "Frozen"] as const) {
      expect(pruneDecision(v1, { ...facts, phase, now: 10n ** 12n }).prune, phase).to.equal(false);
    }
    expect(pruneDecision(v1, { ...facts, settledAt: undefined }).prune).to.equal(false);
    expect(pruneDecision(v1, { ...facts, unresolvedCases: [`0x${"ab".repeat(32)}`] })).to.deep.equal({ prune: false, reason: `case 0x${"ab".repeat(32)} on it is not resolved` });
  });
});
