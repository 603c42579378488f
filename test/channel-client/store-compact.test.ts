/**
 * Schema 7 (issue 31 item 4, decision 0008 amendment): a store written with the version-6 schema (its rows
 * exactly as the version-6 code wrote them) migrates to the compact form with every read unchanged; a provider's
 * store stays under 600 bytes per receipt on disk; the accumulator states between the stored ones are
 * recomputed exactly; a pruned channel is forgotten, its pages freed, and never stored again.
 */
import { expect } from "chai";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { getAddress, zeroAddress, type Hex } from "viem";

import { RootAccumulator } from "../../channel-client/core/accumulator";
import { canon } from "../../channel-client/core/canonical";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { signSessionReceipt, signedSessionReceiptToJson } from "../../channel-client/core/receipt";
import { sessionIdOf, type ChannelRef } from "../../channel-client/core/terms";
import { signPaymentTicket, signedPaymentTicketToJson } from "../../channel-client/core/ticket";
import { channelToJson, seqKey } from "../../channel-client/store/records";
import { ACCUMULATOR_STATE_INTERVAL, MIGRATIONS, SCHEMA_VERSION } from "../../channel-client/store/schema";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { AccumulatorState, ChannelRecord, ChannelRole, StepRecord } from "../../channel-client/store/store";
import { rejection } from "../helpers/assert";
import { hardhatAccount, makeTerms, POLICY_HASH, ROLE, TERMS_HASH } from "../helpers/fixtures";
import { h } from "../helpers/samples";
import { STEP_PRICE, stepWithSeq } from "../helpers/store-writer";

const payer = hardhatAccount(ROLE.payer);
const provider = hardhatAccount(ROLE.provider);
const ESCROW = getAddress("0x5fbdb2315678afecb367f032d93f642f64180aa3");
const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: ESCROW });
type Step = Required<StepRecord>;

function channel(nonce: bigint, role: ChannelRole = "provider"): ChannelRecord {
  const ref: ChannelRef = { terms: makeTerms(zeroAddress, { nonce }), openedAt: 100n + nonce };
  return {
    sessionId: sessionIdOf(domain, ref),
    role,
    ref,
    pricing: { version: "1", unit: "invocation", pricePerInvocation: STEP_PRICE },
    escrow: ESCROW,
    chainId: 31337,
    deposit: 10n ** 24n,
    status: "open",
  };
}

/** A really signed step for `sessionId`; `stepWithSeq` varies it (the store checks form, not signatures). */
async function template(sessionId: Hex): Promise<Step> {
  const ticket = await signPaymentTicket({
    account: payer,
    domain,
    ticket: { sessionId, provider: provider.address, termsHash: TERMS_HASH, seq: 1n, cumulativeAmount: STEP_PRICE, receiptRoot: h("root") },
  });
  const receipt = await signSessionReceipt({
    account: provider,
    receipt: { sessionId, seq: 1n, offloadPacketHash: h("offload"), outputHash: h("output"), policyHash: POLICY_HASH, modelSnapshotId: "model:demo@1", metering: { units: 1n, amount: STEP_PRICE }, prevReceiptHash: h("prev") },
  });
  return { seq: 1n, ticket, receipt, leaf: receiptLeaf(receipt.receipt, ticket.ticket) };
}

/** Steps 1..count with the accumulator state after each, as a provider writes them. */
function history(base: Step, count: number): { steps: Step[]; states: AccumulatorState[] } {
  const steps: Step[] = [];
  const states: AccumulatorState[] = [];
  const accumulator = new RootAccumulator();
  let charged = 0n;
  for (let seq = 1n; seq <= BigInt(count); seq++) {
    const step = stepWithSeq(base, seq);
    accumulator.append(step.leaf);
    charged += step.receipt.receipt.metering.amount;
    steps.push(step);
    states.push({ leafCount: accumulator.size, peaks: accumulator.peaks(), charged });
  }
  return { steps, states };
}

const stepText = (step: StepRecord) =>
  canon({ ticket: signedPaymentTicketToJson(step.ticket), receipt: step.receipt ? signedSessionReceiptToJson(step.receipt) : null, leaf: step.leaf ?? null });

describe("SqliteStore, schemas 7 and 8 (compact steps and results, pruning)", function () {
  this.timeout(120_000);
  let dir: string;
  let dbPath: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "ioi-compact-"));
    dbPath = path.join(dir, "channels.db");
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("migrates a version-6 store, rows as the version-6 code wrote them, with every read unchanged", async () => {
    const providerChannel = channel(1n);
    const payerChannel = channel(2n, "payer");
    const count = 150; // states at 1, 64 and 128 are kept; the others are recomputed
    const { steps, states } = history(await template(providerChannel.sessionId), count);
    const payerBase = await template(payerChannel.sessionId);
    const payerSteps = [stepWithSeq(payerBase, 1n), stepWithSeq(payerBase, 2n)];
    const unanswered = stepWithSeq(payerBase, 3n).ticket;

    // The version-6 schema and rows: canonical JSON artifacts, 20-digit seq keys, the accumulator after every step.
    const raw = new Database(dbPath);
    raw.pragma("journal_mode = WAL");
    for (const sql of MIGRATIONS.slice(0, 6)) raw.exec(sql);
    raw.pragma("user_version = 6");
    const insertChannel = raw.prepare("INSERT INTO channels (session_id, role, status, deposit, channel) VALUES (?, ?, ?, ?, ?)");
    for (const c of [providerChannel, payerChannel]) insertChannel.run(c.sessionId, c.role, c.status, c.deposit.toString(), canon(channelToJson(c)));
    const insertStep = raw.prepare("INSERT INTO steps (session_id, seq, ticket, receipt, leaf) VALUES (?, ?, ?, ?, ?)");
    const insertState = raw.prepare("INSERT INTO accumulator_states (session_id, leaf_count, seq, peaks, charged) VALUES (?, ?, ?, ?, ?)");
    raw.transaction(() => {
      steps.forEach((step, i) => {
        insertStep.run(providerChannel.sessionId, seqKey(step.seq), canon(signedPaymentTicketToJson(step.ticket)), canon(signedSessionReceiptToJson(step.receipt)), step.leaf);
        const state = states[i]!;
        insertState.run(providerChannel.sessionId, seqKey(BigInt(state.leafCount)), seqKey(step.seq), JSON.stringify(state.peaks), state.charged.toString());
      });
      for (const step of payerSteps) insertStep.run(payerChannel.sessionId, seqKey(step.seq), canon(signedPaymentTicketToJson(step.ticket)), canon(signedSessionReceiptToJson(step.receipt)), step.leaf);
      insertStep.run(payerChannel.sessionId, "00000000000000000003", canon(signedPaymentTicketToJson(unanswered)), null, null);
    })();
    raw.close();

    const store = SqliteStore.open(dbPath);
    try {
      expect(store.settings().schemaVersion).to.equal(SCHEMA_VERSION);
      expect(store.listChannels().map((c) => c.sessionId)).to.deep.equal([providerChannel.sessionId, payerChannel.sessionId]);
      expect(store.steps(providerChannel.sessionId).map(stepText)).to.deep.equal(steps.map(stepText));
      expect(store.leaves(providerChannel.sessionId)).to.deep.equal(steps.map((s) => s.leaf));
      expect(store.receiptCount(providerChannel.sessionId)).to.equal(count);
      expect(store.latestTicket(providerChannel.sessionId)).to.deep.equal(steps[count - 1]!.ticket);
      // Every state, stored or recomputed, is the one the version-6 store held.
      for (let leafCount = 1; leafCount <= count; leafCount++) {
        expect(store.accumulatorState(providerChannel.sessionId, { leafCount }), `state at ${leafCount}`).to.deep.equal({ ...states[leafCount - 1]!, seq: BigInt(leafCount) });
      }
      expect(store.accumulatorState(providerChannel.sessionId)).to.deep.equal({ ...states[count - 1]!, seq: BigInt(count) });
      expect(store.accumulatorState(providerChannel.sessionId, { leafCount: count + 1 })).to.equal(undefined);
      expect(store.accumulatorState(payerChannel.sessionId)).to.equal(undefined);
      const payerRead = store.steps(payerChannel.sessionId);
      expect(payerRead.map(stepText)).to.deep.equal([...payerSteps.map(stepText), stepText({ seq: 3n, ticket: unanswered })]);
      expect(store.latestAnsweredStep(payerChannel.sessionId)?.seq).to.equal(2n);
      // The payer's receipt for seq 3 still lands on the migrated ticket row; a different ticket is still refused.
      await store.putStep(payerChannel.sessionId, stepWithSeq(payerBase, 3n));
      expect(store.receiptCount(payerChannel.sessionId)).to.equal(3);
      const forged = { ...stepWithSeq(payerBase, 2n) };
      forged.ticket = { ...forged.ticket, ticket: { ...forged.ticket.ticket, cumulativeAmount: 1n } };
      expect((await rejection(store.putStep(payerChannel.sessionId, forged))).name).to.equal("TicketConflictError");
    } finally {
      await store.close();
    }
    const check = new Database(dbPath, { readonly: true });
    const kept = check.prepare("SELECT leaf_count FROM accumulator_states ORDER BY leaf_count").pluck().all();
    check.close();
    expect(kept).to.deep.equal([1, ACCUMULATOR_STATE_INTERVAL, 2 * ACCUMULATOR_STATE_INTERVAL]);
  });

  it("migrates a version-7 store's results to (channel number, seq − 2^63) keys without a rowid, every read and conflict check unchanged; a result without a channel number stops the migration", async () => {
    const c = channel(1n);
    const other = channel(2n, "payer");
    const results = [1n, 2n, 2n ** 63n, 2n ** 64n - 1n].map((seq) => ({ seq, request: `{"id":"${seq}"}`, output: `{"n":"${seq}"}` }));
    const writeVersion7 = (file: string, orphan: boolean) => {
      const raw = new Database(file);
      raw.pragma("journal_mode = WAL");
      raw.pragma("foreign_keys = OFF"); // only to plant the damaged row below
      // Migration 6 → 7 names its conversion functions; on empty tables they are never called.
      for (const name of ["ioi_seq", "ioi_ticket_blob", "ioi_terms_key", "ioi_receipt_blob", "ioi_policy_key", "ioi_peaks_blob"]) {
        raw.function(name, (_value: unknown) => {
          throw new Error(`${name} ran on an empty table`);
        });
      }
      for (const sql of MIGRATIONS.slice(0, 7)) raw.exec(sql);
      raw.pragma("user_version = 7");
      const insertChannel = raw.prepare("INSERT INTO channels (session_id, role, status, deposit, channel) VALUES (?, ?, ?, ?, ?)");
      for (const ch of [c, other]) {
        insertChannel.run(ch.sessionId, ch.role, ch.status, ch.deposit.toString(), canon(channelToJson(ch)));
        raw.prepare("INSERT INTO channel_numbers (session_id) VALUES (?)").run(ch.sessionId);
      }
      const insertResult = raw.prepare("INSERT INTO results (session_id, seq, request, output) VALUES (?, ?, ?, ?)");
      for (const r of results) insertResult.run(c.sessionId, seqKey(r.seq), r.request, r.output);
      insertResult.run(other.sessionId, seqKey(7n), "{}", "{}");
      if (orphan) insertResult.run(h("a channel without a number"), seqKey(1n), "{}", "{}");
      raw.close();
    };

    writeVersion7(dbPath, false);
    const store = SqliteStore.open(dbPath);
    try {
      expect(store.settings().schemaVersion).to.equal(SCHEMA_VERSION);
      expect(store.results(c.sessionId)).to.deep.equal(results);
      expect(store.results(c.sessionId, { fromSeq: 2n, limit: 2 })).to.deep.equal(results.slice(1, 3));
      expect(store.results(other.sessionId)).to.deep.equal([{ seq: 7n, request: "{}", output: "{}" }]);
      // A migrated result still refuses a different answer for its seq, and takes the same one again.
      expect((await rejection(store.putResult(c.sessionId, { ...results[3]!, output: "{}" }))).name).to.equal("ResultConflictError");
      await store.putResult(c.sessionId, results[3]!);
      await store.putResult(c.sessionId, { seq: 3n, request: "{}", output: "{}" });
      expect(store.results(c.sessionId).map((r) => r.seq)).to.deep.equal([1n, 2n, 3n, 2n ** 63n, 2n ** 64n - 1n]);
    } finally {
      await store.close();
    }
    const check = new Database(dbPath, { readonly: true });
    expect(check.prepare("SELECT sql FROM sqlite_schema WHERE name = 'results'").pluck().get()).to.contain("WITHOUT ROWID");
    check.close();

    const damaged = path.join(dir, "damaged.db");
    writeVersion7(damaged, true);
    expect(() => SqliteStore.open(damaged)).to.throw(/NOT NULL/);
    const untouched = new Database(damaged, { readonly: true });
    expect(untouched.pragma("user_version", { simple: true })).to.equal(7);
    expect(untouched.prepare("SELECT count(*) FROM results").pluck().get()).to.equal(6);
    untouched.close();
  });

  it("keeps a provider's store at most 600 bytes per receipt on disk (2,000 receipts, after a checkpoint)", async () => {
    const c = channel(3n);
    const count = 2000;
    const { steps, states } = history(await template(c.sessionId), count);
    const store = SqliteStore.open(dbPath);
    try {
      await store.putChannel(c);
      await Promise.all(steps.map((step, i) => store.putStep(c.sessionId, step, states[i])));
      const bytes = store.checkpoint();
      const perReceipt = bytes / count;
      console.log(`      ${count} receipts: ${bytes} bytes on disk, ${perReceipt.toFixed(1)} per receipt`);
      expect(perReceipt).to.be.at.most(600);
      // States are kept at the first receipt and every interval; the newest is recomputed from the leaves after it.
      expect(store.accumulatorState(c.sessionId)).to.deep.equal({ ...states[count - 1]!, seq: BigInt(count) });
      expect(store.accumulatorState(c.sessionId, { leafCount: 1000 })).to.deep.equal({ ...states[999]!, seq: 1000n });
    } finally {
      await store.close();
    }
  });

  it("deletes a channel with everything filed under it, records it as pruned, frees its pages, and refuses to store it again", async () => {
    const gone = channel(4n);
    const kept = channel(5n);
    const { steps, states } = history(await template(gone.sessionId), 1000);
    const keptSteps = history(await template(kept.sessionId), 10);
    const store = SqliteStore.open(dbPath);
    try {
      await Promise.all([store.putChannel(gone), store.putChannel(kept)]);
      await Promise.all(steps.map((step, i) => store.putStep(gone.sessionId, step, states[i])));
      await Promise.all(keptSteps.steps.map((step, i) => store.putStep(kept.sessionId, step, keptSteps.states[i])));
      await store.setCursor("gone", 1n);
      const before = store.checkpoint();
      await store.deleteChannel(gone.sessionId, { prunedAt: 1_800_000_000n, archive: "/archive/gone.jsonl" });
      const after = await store.reclaim();
      expect(after).to.be.below(before / 4);
      expect(store.getChannel(gone.sessionId)).to.equal(undefined);
      expect(store.steps(gone.sessionId)).to.deep.equal([]);
      expect(store.accumulatorState(gone.sessionId)).to.equal(undefined);
      expect(store.prunedChannel(gone.sessionId)).to.deep.equal({ prunedAt: 1_800_000_000n, archive: "/archive/gone.jsonl" });
      expect(store.prunedChannel(kept.sessionId)).to.equal(undefined);
      // The other channel and the cursors are untouched.
      expect(store.steps(kept.sessionId).map(stepText)).to.deep.equal(keptSteps.steps.map(stepText));
      expect(store.getCursor("gone")).to.equal(1n);
      // Nothing re-creates the pruned channel or files anything under it.
      const again = await rejection(store.putChannel(gone));
      expect(again.name).to.equal("ChannelPrunedError");
      expect((again as unknown as { archive: string }).archive).to.equal("/archive/gone.jsonl");
      expect(again.message).to.contain("pruned from this store at 1800000000");
      expect((await rejection(store.putStep(gone.sessionId, steps[0]!))).name).to.equal("UnknownChannelError");
      expect((await rejection(store.deleteChannel(gone.sessionId, { prunedAt: 1n, archive: "x" }))).name).to.equal("UnknownChannelError");
    } finally {
      await store.close();
    }
    const reopened = SqliteStore.open(dbPath);
    try {
      expect(reopened.prunedChannel(gone.sessionId)?.archive).to.equal("/archive/gone.jsonl");
      expect((await rejection(reopened.putChannel(gone))).name).to.equal("ChannelPrunedError");
      expect(reopened.listChannels().map((c) => c.sessionId)).to.deep.equal([kept.sessionId]);
    } finally {
      await reopened.close();
    }
  });
});
