import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { getAddress, zeroAddress, type Hex } from "viem";

import { canon } from "../../channel-client/core/canonical";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { signReceiptCommit, type SignedReceiptCommit } from "../../channel-client/core/receipt-commit";
import { signSessionReceipt, signedSessionReceiptToJson } from "../../channel-client/core/receipt";
import * as storeErrors from "../../channel-client/store/errors";
import { MIGRATIONS, SCHEMA_VERSION } from "../../channel-client/store/schema";
import { channelToJson, encodeTicketBlob, ticketTermsKey } from "../../channel-client/store/records";
import { signFaultStatement } from "../../channel-client/core/fault-statement";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { PgStore } from "../../channel-client/store/pg-store";
import { sharedPostgres } from "../helpers/postgres";
import type { ChannelStore, ChannelRecord, ChannelRole, ChannelStatus, ClosingRecord, StepRecord } from "../../channel-client/store/store";
import { sessionIdOf, type ChannelRef } from "../../channel-client/core/terms";
import { signPaymentTicket, signedPaymentTicketToJson, type SignedPaymentTicket } from "../../channel-client/core/ticket";
import { signSessionKeyGrant } from "../../channel-client/core/session-key";
import { rejection, thrown } from "../helpers/assert";
import { hardhatAccount, makeTerms, POLICY_HASH, ROLE, TERMS_HASH } from "../helpers/fixtures";
import { mulberry32 } from "../helpers/prng";
import { h } from "../helpers/samples";
import { STEP_PRICE, stepTemplateToJson, stepWithSeq } from "../helpers/store-writer";

const payer = hardhatAccount(ROLE.payer);
const provider = hardhatAccount(ROLE.provider);
const ESCROW = getAddress("0x5fbdb2315678afecb367f032d93f642f64180aa3");
const CHAIN_ID = 31337;
const domain = gasEscrowDomain({ chainId: CHAIN_ID, verifyingContract: ESCROW });
/** Beyond 2^53, so a value that passed through a JS number would come back wrong. */
const BIG = 2n ** 60n + 7n;
/** A step as one canonical string, for fast exact comparison of thousands of steps. */
function stepText(step: StepRecord): string {
  return canon({
    ticket: signedPaymentTicketToJson(step.ticket),
    receipt: step.receipt ? signedSessionReceiptToJson(step.receipt) : null,
    leaf: step.leaf ?? null,
  });
}

/** Crash-test writers still running; killed after each test whatever happened. */
const writers = new Set<ChildProcess>();
const WRITER_DEADLINE_MS = 25_000;

type Step = Required<StepRecord>;

function channel(
  nonce: bigint,
  overrides: { role?: ChannelRole; status?: ChannelStatus; deposit?: bigint; peer?: string } = {},
): ChannelRecord {
  const ref: ChannelRef = { terms: makeTerms(zeroAddress, { nonce, challengeDuration: BIG }), openedAt: BIG + nonce };
  const record: ChannelRecord = {
    sessionId: sessionIdOf(domain, ref),
    role: overrides.role ?? "provider",
    ref,
    pricing: { version: "1", unit: "invocation", pricePerInvocation: STEP_PRICE },
    escrow: ESCROW,
    chainId: CHAIN_ID,
    deposit: overrides.deposit ?? 2n ** 127n + 1n,
    status: overrides.status ?? "open",
  };
  if (overrides.peer !== undefined) record.peer = overrides.peer;
  return record;
}

const signedTickets = new Map<string, Promise<SignedPaymentTicket>>();

/** A ticket really signed by the payer (memoised: signing costs milliseconds). */
function signedTicket(sessionId: Hex, seq: bigint, variant = ""): Promise<SignedPaymentTicket> {
  const key = `${sessionId}:${seq}:${variant}`;
  let signed = signedTickets.get(key);
  if (!signed) {
    signed = signPaymentTicket({
      account: payer,
      domain,
      ticket: {
        sessionId,
        provider: provider.address,
        termsHash: TERMS_HASH,
        seq,
        cumulativeAmount: seq * STEP_PRICE + (variant === "" ? 0n : 1n),
        receiptRoot: h(`root before ${seq}`),
      },
    });
    signedTickets.set(key, signed);
  }
  return signed;
}

/** A step with a really signed ticket and receipt. */
async function signedStep(sessionId: Hex, seq: bigint, variant = ""): Promise<Step> {
  const ticket = await signedTicket(sessionId, seq);
  const receipt = await signSessionReceipt({
    account: provider,
    receipt: {
      sessionId,
      seq,
      offloadPacketHash: h(`offload ${seq}`),
      outputHash: h(`output ${seq}${variant}`),
      policyHash: POLICY_HASH,
      modelSnapshotId: "model:demo@1",
      metering: { units: seq, amount: STEP_PRICE },
      prevReceiptHash: h(`receipt ${seq - 1n}`),
    },
  });
  return { seq, ticket, receipt, leaf: receiptLeaf(receipt.receipt, ticket.ticket) };
}

async function signedCommit(sessionId: Hex, leafCount: bigint, by: ChannelRole, root = h(`root ${leafCount}`)) {
  return signReceiptCommit(by === "payer" ? payer : provider, domain, { sessionId, leafCount, root });
}

function closingRecord(seq: bigint): ClosingRecord {
  return {
    state: { deposit: 2n ** 127n + 1n, seq, amount: seq * STEP_PRICE, receiptRoot: h(`root ${seq}`), feeBps: 65535 },
    finalizesAt: BIG,
    closer: payer.address,
    txHash: h(`close tx ${seq}`),
  };
}

/** One behaviour suite, run against both backends (STYLE.md 21; issue 31 item 1). */
type Backend = {
  name: string;
  /** A new, empty place for a store: an SQLite file path, or a PostgreSQL database URL. */
  fresh(): Promise<string>;
  open(location: string): Promise<ChannelStore & { stats: { commits: number } }>;
  cleanup?(location: string): void;
};

const backends: Backend[] = [
  {
    name: "SQLite",
    fresh: async () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "ioi-store-")), "channels.db"),
    open: async (location) => SqliteStore.open(location),
    cleanup: (location) => fs.rmSync(path.dirname(location), { recursive: true, force: true }),
  },
  {
    name: "PostgreSQL",
    fresh: async () => (await sharedPostgres()).createDatabase(),
    open: (location) => PgStore.open(location),
  },
];

for (const backend of backends) {
  describe(`ChannelStore behaviour: ${backend.name}`, function () {
    this.timeout(60_000);
    let location: string;
    const open: ChannelStore[] = [];
    const openStore = async () => {
      const store = await backend.open(location);
      open.push(store);
      return store;
    };

    before(async function () {
      this.timeout(180_000); // the first PostgreSQL start on a loaded machine
      if (backend.name === "PostgreSQL") await sharedPostgres();
    });

    beforeEach(async () => {
      location = await backend.fresh();
    });

    afterEach(async () => {
      for (const store of open.splice(0)) await store.close().catch(() => undefined);
      backend.cleanup?.(location);
    });

    describe("round trips", () => {
      it("channels, with and without a peer, bigints beyond 2^53 intact", async () => {
        const store = await openStore();
        const withPeer = channel(1n, { peer: "127.0.0.1:7000", role: "payer" });
        const withoutPeer = channel(2n);
        await Promise.all([store.putChannel(withPeer), store.putChannel(withoutPeer)]);
        expect(store.getChannel(withPeer.sessionId)).to.deep.equal(withPeer);
        expect(store.getChannel(withoutPeer.sessionId)).to.deep.equal(withoutPeer);
        expect(store.getChannel(h("no such channel"))).to.equal(undefined);
      });

      it("tickets, steps, commits, closings and cursors", async () => {
        const store = await openStore();
        const c = channel(1n);
        await store.putChannel(c);
        const ticket = await signedTicket(c.sessionId, BIG);
        const step = await signedStep(c.sessionId, 3n);
        const payerCommit = await signedCommit(c.sessionId, BIG, "payer");
        const providerCommit = await signedCommit(c.sessionId, 3n, "provider");
        const closing = closingRecord(BIG);
        await Promise.all([
          store.putTicket(c.sessionId, ticket),
          store.putStep(c.sessionId, step),
          store.putCommit(c.sessionId, "payer", payerCommit),
          store.putCommit(c.sessionId, "provider", providerCommit),
          store.putClosing(c.sessionId, closing),
          store.setCursor("escrow-events", 2n ** 64n - 1n),
        ]);
        expect(store.latestTicket(c.sessionId)).to.deep.equal(ticket);
        expect(store.steps(c.sessionId)).to.deep.equal([step, { seq: BIG, ticket }]);
        expect(store.latestCommit(c.sessionId, "payer")).to.deep.equal(payerCommit);
        expect(store.latestCommit(c.sessionId, "provider")).to.deep.equal(providerCommit);
        expect(store.getClosing(c.sessionId)).to.deep.equal(closing);
        expect(store.getCursor("escrow-events")).to.equal(2n ** 64n - 1n);

        expect(store.latestTicket(h("other"))).to.equal(undefined);
        expect(store.latestCommit(h("other"), "payer")).to.equal(undefined);
        expect(store.getClosing(h("other"))).to.equal(undefined);
        expect(store.getCursor("other")).to.equal(undefined);
      });
    });

    it("makes a write visible to reads when its promise resolves, not before", async () => {
      const store = await openStore();
      const c = channel(1n);
      const written = store.putChannel(c);
      expect(store.getChannel(c.sessionId)).to.equal(undefined);
      await written;
      expect(store.getChannel(c.sessionId)).to.deep.equal(c);
    });

    describe("putTicket", () => {
      it("is idempotent for the same bytes, within one batch and across batches", async () => {
        const store = await openStore();
        const c = channel(1n);
        await store.putChannel(c);
        const ticket = await signedTicket(c.sessionId, 1n);
        await Promise.all([store.putTicket(c.sessionId, ticket), store.putTicket(c.sessionId, ticket)]);
        await store.putTicket(c.sessionId, { ...ticket, ticket: { ...ticket.ticket } });
        expect(store.steps(c.sessionId)).to.deep.equal([{ seq: 1n, ticket }]);
      });

      it("rejects a different ticket for a seq that has one, stored or pending, and keeps the first", async () => {
        const store = await openStore();
        const c = channel(1n);
        await store.putChannel(c);
        const first = await signedTicket(c.sessionId, 1n);
        const other = await signedTicket(c.sessionId, 1n, "other");
        const pending = store.putTicket(c.sessionId, first);
        const inSameBatch = await rejection(store.putTicket(c.sessionId, other));
        await pending;
        const afterCommit = await rejection(store.putTicket(c.sessionId, other));
        for (const error of [inSameBatch, afterCommit]) {
          expect(error.name).to.equal("TicketConflictError");
          expect(error.message).to.contain("seq 1");
        }
        // Only a signature differs: still a different ticket.
        const resigned = { ...first, signature: other.signature };
        expect((await rejection(store.putTicket(c.sessionId, resigned))).name).to.equal("TicketConflictError");
        expect(store.latestTicket(c.sessionId)).to.deep.equal(first);
      });

      it("rejects a ticket for another session or for an unknown channel", async () => {
        const store = await openStore();
        const c = channel(1n);
        await store.putChannel(c);
        const foreign = await signedTicket(h("another session"), 1n);
        expect((await rejection(store.putTicket(c.sessionId, foreign))).name).to.equal("InconsistentRecordError");
        const unknown = await rejection(store.putTicket(foreign.ticket.sessionId, foreign));
        expect(unknown.name).to.equal("UnknownChannelError");
        expect(store.stats.commits).to.equal(1);
      });
    });

    describe("putStep", () => {
      it("stores a provider's ticket, receipt and leaf atomically in one commit", async () => {
        const store = await openStore();
        const c = channel(1n);
        await store.putChannel(c);
        const step = await signedStep(c.sessionId, 1n);
        const before = store.stats.commits;
        await store.putStep(c.sessionId, step);
        expect(store.stats.commits).to.equal(before + 1);
        expect(store.steps(c.sessionId)).to.deep.equal([step]);
        expect(store.leaves(c.sessionId)).to.deep.equal([step.leaf]);
        expect(store.receiptCount(c.sessionId)).to.equal(1);
        // The same step again is a no-op.
        await store.putStep(c.sessionId, step);
        expect(store.steps(c.sessionId)).to.deep.equal([step]);
      });

      it("adds the payer's accepted receipt to the ticket it stored before sending it", async () => {
        const store = await openStore();
        const c = channel(1n, { role: "payer" });
        await store.putChannel(c);
        const step = await signedStep(c.sessionId, 1n);
        await store.putTicket(c.sessionId, step.ticket);
        expect(store.steps(c.sessionId)).to.deep.equal([{ seq: 1n, ticket: step.ticket }]);
        expect(store.receiptCount(c.sessionId)).to.equal(0);
        await store.putStep(c.sessionId, step);
        expect(store.steps(c.sessionId)).to.deep.equal([step]);
        // A ticket stored later for a receipted step changes nothing.
        await store.putTicket(c.sessionId, step.ticket);
        expect(store.steps(c.sessionId)).to.deep.equal([step]);
      });

      it("rejects a receipt for a different ticket, a second different receipt, and mismatched parts", async () => {
        const store = await openStore();
        const c = channel(1n);
        await store.putChannel(c);
        const step = await signedStep(c.sessionId, 1n);
        await store.putStep(c.sessionId, step);

        const otherTicket = { ...step, ticket: await signedTicket(c.sessionId, 1n, "other") };
        expect((await rejection(store.putStep(c.sessionId, otherTicket))).name).to.equal("TicketConflictError");
        const otherReceipt = await signedStep(c.sessionId, 1n, "other output");
        expect((await rejection(store.putStep(c.sessionId, otherReceipt))).name).to.equal("ReceiptConflictError");
        const otherLeaf = { ...step, leaf: h("wrong leaf") };
        expect((await rejection(store.putStep(c.sessionId, otherLeaf))).name).to.equal("ReceiptConflictError");

        const step2 = await signedStep(c.sessionId, 2n);
        const mismatches: Step[] = [
          { ...step2, seq: 3n },
          { ...step2, receipt: step.receipt },
          { ...step2, ticket: step.ticket },
        ];
        for (const bad of mismatches) {
          expect((await rejection(store.putStep(c.sessionId, bad))).name).to.equal("InconsistentRecordError");
        }
        const foreign = await signedStep(h("another session"), 2n);
        expect((await rejection(store.putStep(c.sessionId, foreign))).name).to.equal("InconsistentRecordError");
        expect(store.steps(c.sessionId)).to.deep.equal([step]);
      });

      it("checks a write against steps an earlier instance wrote, none of them in its memory (the recent-steps cache)", async () => {
        const first = await openStore();
        const c = channel(1n);
        await first.putChannel(c);
        const steps = [await signedStep(c.sessionId, 1n), await signedStep(c.sessionId, 2n), await signedStep(c.sessionId, 3n)];
        for (const step of steps) await first.putStep(c.sessionId, step);
        await first.close();
        const second = await openStore();
        // Nothing of these rows is in the new instance's memory: the checks must read the file.
        expect((await rejection(second.putTicket(c.sessionId, await signedTicket(c.sessionId, 2n, "other")))).name).to.equal("TicketConflictError");
        expect((await rejection(second.putStep(c.sessionId, await signedStep(c.sessionId, 3n, "other output")))).name).to.equal("ReceiptConflictError");
        await second.putTicket(c.sessionId, steps[1]!.ticket); // the same ticket again changes nothing
        const fourth = await signedStep(c.sessionId, 4n);
        await second.putStep(c.sessionId, fourth);
        expect((await rejection(second.putStep(c.sessionId, await signedStep(c.sessionId, 4n, "other output")))).name).to.equal("ReceiptConflictError");
        expect(second.steps(c.sessionId)).to.deep.equal([...steps, fourth]);
      });

      it("catches conflicting steps within one pending batch", async () => {
        const store = await openStore();
        const c = channel(1n);
        await store.putChannel(c);
        const step = await signedStep(c.sessionId, 1n);
        const otherReceipt = await signedStep(c.sessionId, 1n, "other output");
        const first = store.putStep(c.sessionId, step);
        const second = rejection(store.putStep(c.sessionId, otherReceipt));
        await first;
        expect((await second).name).to.equal("ReceiptConflictError");
        expect(store.steps(c.sessionId)).to.deep.equal([step]);
      });
    });

    describe("reading steps", () => {
      it("orders by seq numerically, pages with fromSeq and limit, and lists only receipted leaves", async () => {
        const store = await openStore();
        const c = channel(1n);
        await store.putChannel(c);
        const seqs = [9n, 10n, 2n, 100n, BIG, 1n];
        const steps = new Map<bigint, StepRecord>();
        for (const seq of seqs) {
          if (seq === 10n || seq === BIG) {
            const ticket = await signedTicket(c.sessionId, seq);
            steps.set(seq, { seq, ticket });
            await store.putTicket(c.sessionId, ticket);
          } else {
            const step = await signedStep(c.sessionId, seq);
            steps.set(seq, step);
            await store.putStep(c.sessionId, step);
          }
        }
        const ascending = [...steps.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        expect(ascending).to.deep.equal([1n, 2n, 9n, 10n, 100n, BIG]);
        const expected = ascending.map((seq) => steps.get(seq)!);
        expect(store.steps(c.sessionId)).to.deep.equal(expected);
        expect(store.steps(c.sessionId, { fromSeq: 9n })).to.deep.equal(expected.slice(2));
        expect(store.steps(c.sessionId, { fromSeq: 3n, limit: 2 })).to.deep.equal(expected.slice(2, 4));
        expect(store.steps(c.sessionId, { limit: 0 })).to.deep.equal([]);
        expect(store.steps(c.sessionId, { fromSeq: BIG + 1n })).to.deep.equal([]);
        expect(store.steps(c.sessionId, { fromSeq: 2n ** 64n })).to.deep.equal([]);
        expect(thrown(() => store.steps(c.sessionId, { limit: -1 })).name).to.equal("InvalidFieldError");
        expect(store.latestTicket(c.sessionId)).to.deep.equal(steps.get(BIG)!.ticket);
        const receipted = expected.filter((s) => s.leaf !== undefined);
        expect(store.leaves(c.sessionId)).to.deep.equal(receipted.map((s) => s.leaf));
        expect(store.receiptCount(c.sessionId)).to.equal(4);
        expect(store.steps(h("other"))).to.deep.equal([]);
        expect(store.leaves(h("other"))).to.deep.equal([]);
        expect(store.receiptCount(h("other"))).to.equal(0);
      });
    });

    describe("receipt commits", () => {
      it("keeps each party's commits, returns the one over the most leaves, and rejects a different one for the same count", async () => {
        const store = await openStore();
        const c = channel(1n);
        await store.putChannel(c);
        const commits: SignedReceiptCommit[] = [];
        for (const leafCount of [2n, 10n, 3n]) commits.push(await signedCommit(c.sessionId, leafCount, "provider"));
        for (const commit of commits) await store.putCommit(c.sessionId, "provider", commit);
        await store.putCommit(c.sessionId, "provider", commits[0]!);
        expect(store.latestCommit(c.sessionId, "provider")).to.deep.equal(commits[1]);
        expect(store.latestCommit(c.sessionId, "payer")).to.equal(undefined);
        const equivocation = await signedCommit(c.sessionId, 10n, "provider", h("another root"));
        expect((await rejection(store.putCommit(c.sessionId, "provider", equivocation))).name).to.equal("CommitConflictError");
        // The same commit filed as the payer's is a separate record.
        await store.putCommit(c.sessionId, "payer", equivocation);
        expect(store.latestCommit(c.sessionId, "payer")).to.deep.equal(equivocation);
        const foreign = await signedCommit(h("another session"), 1n, "payer");
        expect((await rejection(store.putCommit(c.sessionId, "payer", foreign))).name).to.equal("InconsistentRecordError");
      });
    });

    describe("channels, closings and cursors", () => {
      it("filters listChannels by role and status, in the order channels were first stored", async () => {
        const store = await openStore();
        const records = [
          channel(1n, { role: "payer", status: "open" }),
          channel(2n, { role: "provider", status: "open" }),
          channel(3n, { role: "payer", status: "closing" }),
          channel(4n, { role: "provider", status: "settled" }),
        ];
        for (const record of records) await store.putChannel(record);
        const ids = (list: ChannelRecord[]) => list.map((r) => r.ref.terms.nonce);
        expect(store.listChannels()).to.deep.equal(records);
        expect(ids(store.listChannels({ role: "payer" }))).to.deep.equal([1n, 3n]);
        expect(ids(store.listChannels({ status: "open" }))).to.deep.equal([1n, 2n]);
        expect(ids(store.listChannels({ role: "provider", status: "settled" }))).to.deep.equal([4n]);
        expect(store.listChannels({ role: "provider", status: "closing" })).to.deep.equal([]);
      });

      it("updates deposit and status, replaces a channel without losing its steps, and rejects unknown channels", async () => {
        const store = await openStore();
        const c = channel(1n, { peer: "peer-a:1" });
        const other = channel(2n);
        await store.putChannel(c);
        await store.putChannel(other);
        const step = await signedStep(c.sessionId, 1n);
        await store.putStep(c.sessionId, step);
        await store.updateChannel(c.sessionId, { deposit: 2n ** 128n - 1n });
        await store.updateChannel(c.sessionId, { status: "closing" });
        expect(store.getChannel(c.sessionId)).to.deep.equal({ ...c, deposit: 2n ** 128n - 1n, status: "closing" });
        const replaced = { ...channel(1n), status: "settled" as const, deposit: 0n };
        await store.putChannel(replaced);
        expect(store.getChannel(c.sessionId)).to.deep.equal(replaced);
        expect(store.steps(c.sessionId)).to.deep.equal([step]);
        expect(store.listChannels().map((r) => r.sessionId)).to.deep.equal([c.sessionId, other.sessionId]);

        const unknown = h("no such channel");
        expect((await rejection(store.updateChannel(unknown, { status: "settled" }))).name).to.equal("UnknownChannelError");
        expect((await rejection(store.putClosing(unknown, closingRecord(1n)))).name).to.equal("UnknownChannelError");
        expect((await rejection(store.putStep(unknown, await signedStep(unknown, 1n)))).name).to.equal("UnknownChannelError");
        expect((await rejection(store.updateChannel(c.sessionId, { deposit: -1n }))).name).to.equal("InvalidFieldError");
      });

      it("deletes a pruned channel with everything filed under it, keeps it pruned across a reopen and never stores it again (issue 31 item 2)", async () => {
        const store = await openStore();
        const gone = channel(1n);
        const kept = channel(2n);
        await store.putChannel(gone);
        await store.putChannel(kept);
        const goneSteps = [await signedStep(gone.sessionId, 1n), await signedStep(gone.sessionId, 2n)];
        for (const step of goneSteps) await store.putStep(gone.sessionId, step);
        await store.putCommit(gone.sessionId, "payer", await signedCommit(gone.sessionId, 2n, "payer"));
        await store.putClosing(gone.sessionId, closingRecord(2n));
        await store.putResult(gone.sessionId, { seq: 1n, request: "{}", output: "{}" });
        const keptStep = await signedStep(kept.sessionId, 1n);
        await store.putStep(kept.sessionId, keptStep);
        const keptResult = { seq: 1n, request: "{\"kept\":true}", output: "{}" };
        await store.putResult(kept.sessionId, keptResult);
        await store.setCursor("watch", 7n);

        await store.deleteChannel(gone.sessionId, { prunedAt: 1_800_000_000n, archive: "/archive/gone.jsonl" });
        const check = (s: ChannelStore) => {
          expect(s.getChannel(gone.sessionId)).to.equal(undefined);
          expect(s.steps(gone.sessionId)).to.deep.equal([]);
          expect(s.latestCommit(gone.sessionId, "payer")).to.equal(undefined);
          expect(s.getClosing(gone.sessionId)).to.equal(undefined);
          expect(s.results(gone.sessionId)).to.deep.equal([]);
          expect(s.results(kept.sessionId)).to.deep.equal([keptResult]);
          expect(s.prunedChannel(gone.sessionId)).to.deep.equal({ prunedAt: 1_800_000_000n, archive: "/archive/gone.jsonl" });
          expect(s.prunedChannel(kept.sessionId)).to.equal(undefined);
          expect(s.listChannels().map((r) => r.sessionId)).to.deep.equal([kept.sessionId]);
          expect(s.steps(kept.sessionId)).to.deep.equal([keptStep]);
          expect(s.getCursor("watch")).to.equal(7n);
        };
        check(store);
        const again = await rejection(store.putChannel(gone));
        expect(again.name).to.equal("ChannelPrunedError");
        expect(again.message).to.contain("pruned from this store at 1800000000");
        expect((await rejection(store.putStep(gone.sessionId, goneSteps[0]!))).name).to.equal("UnknownChannelError");
        expect((await rejection(store.deleteChannel(gone.sessionId, { prunedAt: 1n, archive: "x" }))).name).to.equal("UnknownChannelError");
        await store.close();

        const reopened = await openStore();
        check(reopened);
        expect((await rejection(reopened.putChannel(gone))).name).to.equal("ChannelPrunedError");
      });

      it("keeps the co-signed cooperative close across a reopen, idempotently, and refuses a different one (issue 12)", async () => {
        const store = await openStore();
        const c = channel(1n);
        await store.putChannel(c);
        const summary = {
          sessionId: c.sessionId,
          provider: c.ref.terms.provider,
          payer: c.ref.terms.payer,
          termsHash: c.ref.terms.termsHash,
          finalSeq: BIG,
          finalAmount: 2n ** 128n - 1n,
          finalReceiptRoot: h("root"),
          mode: "Cooperative" as const,
        };
        const close = { summary, payerSignature: `0x${"11".repeat(64)}1b` as Hex, providerSignature: `0x${"22".repeat(64)}1c` as Hex };
        expect(store.getCooperativeClose(c.sessionId)).to.equal(undefined);
        await store.putCooperativeClose(c.sessionId, close);
        await store.putCooperativeClose(c.sessionId, close); // the same close again: a no-op
        const other = { ...close, summary: { ...summary, finalAmount: 0n } };
        expect((await rejection(store.putCooperativeClose(c.sessionId, other))).name).to.equal("CooperativeCloseConflictError");
        expect((await rejection(store.putCooperativeClose(h("no such channel"), { ...close, summary: { ...summary, sessionId: h("no such channel") } }))).name).to.equal("UnknownChannelError");
        expect((await rejection(store.putCooperativeClose(c.sessionId, { ...close, summary: { ...summary, sessionId: h("x") } }))).name).to.equal("InconsistentRecordError");
        await store.close();
        expect((await openStore()).getCooperativeClose(c.sessionId)).to.deep.equal(close);
      });

      it("keeps the provider's fault statements per step (issue 12 item 5): idempotent, a second different one refused, across a reopen", async () => {
        const store = await openStore();
        const c = channel(1n, { role: "payer" });
        await store.putChannel(c);
        const statement = { sessionId: c.sessionId, seq: BIG, offloadPacketHash: h("request"), code: "ERR_UPSTREAM_FAILURE" as const, computeSpent: 2n ** 128n - 1n };
        const fault = await signFaultStatement({ account: provider, statement });
        expect(store.getFaultStatement(c.sessionId, BIG)).to.equal(undefined);
        await Promise.all([store.putFaultStatement(c.sessionId, fault), store.putFaultStatement(c.sessionId, fault)]); // the same, twice in one batch
        await store.putFaultStatement(c.sessionId, fault); // and again later: a no-op
        const other = await signFaultStatement({ account: provider, statement: { ...statement, computeSpent: 0n } });
        expect((await rejection(store.putFaultStatement(c.sessionId, other))).name).to.equal("FaultStatementConflictError");
        const foreign = await signFaultStatement({ account: provider, statement: { ...statement, sessionId: h("x") } });
        expect((await rejection(store.putFaultStatement(c.sessionId, foreign))).name).to.equal("InconsistentRecordError");
        expect((await rejection(store.putFaultStatement(h("x"), foreign))).name).to.equal("UnknownChannelError");
        await store.close();
        const reopened = await openStore();
        expect(reopened.getFaultStatement(c.sessionId, BIG)).to.deep.equal(fault);
        expect(reopened.getFaultStatement(c.sessionId, BIG - 1n)).to.equal(undefined);
      });

      it("replaces the closing after a challenge", async () => {
        const store = await openStore();
        const c = channel(1n);
        await store.putChannel(c);
        await store.putClosing(c.sessionId, closingRecord(5n));
        await store.putClosing(c.sessionId, closingRecord(BIG));
        expect(store.getClosing(c.sessionId)).to.deep.equal(closingRecord(BIG));
      });

      it("sets cursors per name, moving forwards or back", async () => {
        const store = await openStore();
        await Promise.all([store.setCursor("a", 10n), store.setCursor("b", BIG)]);
        await store.setCursor("a", 7n);
        expect(store.getCursor("a")).to.equal(7n);
        expect(store.getCursor("b")).to.equal(BIG);
        expect((await rejection(store.setCursor("a", -1n))).name).to.equal("InvalidFieldError");
        expect((await rejection(store.setCursor("a", 2n ** 64n))).name).to.equal("InvalidFieldError");
        expect((await rejection(store.setCursor("", 1n))).name).to.equal("InvalidFieldError");
      });
    });

    describe("durability", () => {
      it("sees everything after close and reopen, including writes close flushed", async () => {
        const store = await openStore();
        const c = channel(1n, { peer: "127.0.0.1:7000" });
        await store.putChannel(c);
        const step = await signedStep(c.sessionId, 1n);
        const ticket = await signedTicket(c.sessionId, 2n);
        const commit = await signedCommit(c.sessionId, 1n, "payer");
        // Not awaited: close must flush them.
        const writes = [
          store.putStep(c.sessionId, step),
          store.putTicket(c.sessionId, ticket),
          store.putCommit(c.sessionId, "payer", commit),
          store.putClosing(c.sessionId, closingRecord(2n)),
          store.setCursor("blocks", BIG),
          store.updateChannel(c.sessionId, { status: "closing" }),
        ];
        await store.close();
        await Promise.all(writes);

        const reopened = await openStore();
        expect(reopened.getChannel(c.sessionId)).to.deep.equal({ ...c, status: "closing" });
        expect(reopened.steps(c.sessionId)).to.deep.equal([step, { seq: 2n, ticket }]);
        expect(reopened.leaves(c.sessionId)).to.deep.equal([step.leaf]);
        expect(reopened.latestCommit(c.sessionId, "payer")).to.deep.equal(commit);
        expect(reopened.getClosing(c.sessionId)).to.deep.equal(closingRecord(2n));
        expect(reopened.getCursor("blocks")).to.equal(BIG);
      });

      it("rejects writes and reads after close; close is idempotent", async () => {
        const store = await openStore();
        const c = channel(1n);
        await store.putChannel(c);
        await store.close();
        await store.close();
        const ticket = await signedTicket(c.sessionId, 1n);
        // Each write's rejection is taken as the write starts, so none is left unhandled while another is awaited.
        const writes = [
          rejection(store.putChannel(c)),
          rejection(store.putTicket(c.sessionId, ticket)),
          rejection(store.setCursor("a", 1n)),
          rejection(store.updateChannel(c.sessionId, { status: "settled" })),
        ];
        for (const write of writes) {
          const error = await write;
          expect(error.name).to.equal("StoreClosedError");
          expect(error.message).to.contain("the store is closed");
        }
        expect(thrown(() => store.getChannel(c.sessionId)).name).to.equal("StoreClosedError");
        expect(thrown(() => store.steps(c.sessionId)).name).to.equal("StoreClosedError");
        await store.flush(); // nothing pending: resolves
      });
    });

    describe("session-key grants (decision 0025)", () => {
      const grantFor = (sessionId: Hex, keyIndex: number, spendCap: bigint) =>
        signSessionKeyGrant({ account: payer, domain, sessionId, key: hardhatAccount(keyIndex).address, expiry: BIG, spendCap, methods: ["*"], epoch: 0n });

      it("keeps every grant of a session (idempotently), finds them by key, survives a reopen, refuses one for another session", async () => {
        const store = await openStore();
        const c = channel(1n);
        await store.putChannel(c);
        const first = await grantFor(c.sessionId, ROLE.sessionKey, 10n);
        const regranted = await grantFor(c.sessionId, ROLE.sessionKey, 20n); // the same key, a higher cap
        const other = await grantFor(c.sessionId, ROLE.stranger, 5n);
        for (const g of [first, regranted, first, other]) await store.putSessionKeyGrant(c.sessionId, g);
        expect(store.sessionKeyGrants(c.sessionId)).to.deep.equal([first, regranted, other]);
        expect(store.sessionKeyGrants(c.sessionId, getAddress(hardhatAccount(ROLE.sessionKey).address))).to.deep.equal([first, regranted]);
        expect(store.sessionKeyGrants(c.sessionId, zeroAddress)).to.deep.equal([]);
        const foreign = await grantFor(h("another session"), ROLE.sessionKey, 1n);
        expect((await rejection(store.putSessionKeyGrant(c.sessionId, foreign))).name).to.equal("InconsistentRecordError");
        expect((await rejection(store.putSessionKeyGrant(h("unknown"), foreign))).name).to.equal("UnknownChannelError");
        await store.close();
        expect((await openStore()).sessionKeyGrants(c.sessionId)).to.deep.equal([first, regranted, other]);
      });
    });

    describe("paid-call results (decision 0033)", () => {
      const result = (seq: bigint, output = `{"digest":"${h(`out ${seq}`)}"}`) => ({ seq, request: `{"id":${seq},"jsonrpc":"2.0","method":"tools/echo"}`, output });

      it("keeps each call's request and output once (an equal re-put is a no-op, a different one is refused), pages them in seq order across the whole uint64 range, survives a reopen", async () => {
        const store = await openStore();
        const c = channel(1n);
        const other = channel(2n);
        // A channel and its first result in one batch: the result lands although the channel had no row before it.
        await Promise.all([store.putChannel(c), store.putResult(c.sessionId, result(1n))]);
        await store.putChannel(other);
        const seqs = [2n, 3n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n, BIG];
        await Promise.all(seqs.map((seq) => store.putResult(c.sessionId, result(seq))));
        await store.putResult(other.sessionId, result(2n, "{}"));
        await store.putResult(c.sessionId, result(3n)); // the same again
        expect((await rejection(store.putResult(c.sessionId, result(3n, "{\"forged\":true}")))).name).to.equal("ResultConflictError");
        expect((await rejection(store.putResult(c.sessionId, result(BIG, "{}")))).name).to.equal("ResultConflictError");
        expect((await rejection(store.putResult(h("unknown"), result(1n)))).name).to.equal("UnknownChannelError");
        const all = [1n, 2n, 3n, BIG, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n].map((seq) => result(seq)); // numeric order
        expect(store.results(c.sessionId)).to.deep.equal(all);
        expect(store.results(c.sessionId, { fromSeq: 3n, limit: 2 })).to.deep.equal([result(3n), result(BIG)]);
        expect(store.results(c.sessionId, { fromSeq: 2n ** 63n })).to.deep.equal([result(2n ** 63n), result(2n ** 64n - 1n)]);
        expect(store.results(c.sessionId, { fromSeq: 2n ** 64n })).to.deep.equal([]);
        expect(store.results(other.sessionId)).to.deep.equal([result(2n, "{}")]);
        expect(store.results(h("unknown"))).to.deep.equal([]);
        await store.close();
        const reopened = await openStore();
        expect(reopened.results(c.sessionId)).to.deep.equal(all);
        expect((await rejection(reopened.putResult(c.sessionId, result(2n, "{}")))).name).to.equal("ResultConflictError");
      });
    });
  });
}

describe("SqliteStore", function () {
  let dir: string;
  let dbPath: string;
  const open: SqliteStore[] = [];
  const openStore = (options?: Parameters<typeof SqliteStore.open>[1]) => {
    const store = SqliteStore.open(dbPath, options);
    open.push(store);
    return store;
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "ioi-store-"));
    dbPath = path.join(dir, "channels.db");
  });

  afterEach(async () => {
    for (const writer of writers) writer.kill("SIGKILL");
    for (const store of open.splice(0)) await store.close().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("names every error class by its class name", () => {
    const instances = [
      new storeErrors.StoreClosedError("putTicket"),
      new storeErrors.StoreOpenError("x"),
      new storeErrors.UnsupportedSchemaError("x"),
      new storeErrors.StoreWriteError(1, new Error("x")),
      new storeErrors.StoreCorruptionError("steps", "k", new Error("x")),
      new storeErrors.UnknownChannelError(h("s")),
      new storeErrors.TicketConflictError(h("s"), 1n),
      new storeErrors.ReceiptConflictError(h("s"), 1n),
      new storeErrors.CommitConflictError(h("s"), "payer", 1n),
      new storeErrors.CooperativeCloseConflictError(h("s")),
      new storeErrors.FaultStatementConflictError(h("s"), 1n),
      new storeErrors.ResultConflictError(h("s"), 1n),
      new storeErrors.InconsistentRecordError("x"),
      new storeErrors.ChannelPrunedError(h("s"), 1n, "/a"),
      new storeErrors.FencedError(h("s"), 1n, 2n),
    ];
    expect(instances.map((e) => e.name).sort()).to.deep.equal(Object.keys(storeErrors).sort());
    for (const error of instances) expect(error.name).to.equal(error.constructor.name);
  });

  describe("opening", () => {
    it("uses WAL, synchronous = NORMAL (the store fsyncs the WAL itself), foreign keys and a busy timeout, at the current schema version", async () => {
      const store = openStore({ busyTimeoutMs: 1234 });
      expect(store.settings()).to.deep.equal({
        journalMode: "wal",
        synchronous: "normal",
        foreignKeys: true,
        busyTimeoutMs: 1234,
        schemaVersion: SCHEMA_VERSION,
      });
      expect(SCHEMA_VERSION).to.equal(8); // issue 28: the accumulator states (5), the results table (6); issue 31: compact steps (7), compact results (8)
      await store.close();
      // Reopening an up-to-date file migrates nothing and keeps the version.
      expect(openStore().settings().schemaVersion).to.equal(SCHEMA_VERSION);
    });

    it("refuses a file that is not SQLite, another SQLite database, and a newer schema", () => {
      fs.writeFileSync(dbPath, "this is not a database, just some text that is long enough to look like a header...");
      const notSqlite = thrown(() => SqliteStore.open(dbPath));
      expect(notSqlite.name).to.equal("StoreOpenError");

      const other = path.join(dir, "other.db");
      const foreign = new Database(other);
      foreign.exec("CREATE TABLE t (x)");
      foreign.close();
      expect(thrown(() => SqliteStore.open(other)).name).to.equal("UnsupportedSchemaError");

      const newer = path.join(dir, "newer.db");
      SqliteStore.open(newer).close();
      const raw = new Database(newer);
      raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
      raw.close();
      const tooNew = thrown(() => SqliteStore.open(newer));
      expect(tooNew.name).to.equal("UnsupportedSchemaError");
      expect(tooNew.message).to.contain(`version ${SCHEMA_VERSION + 1}`);

      expect(thrown(() => SqliteStore.open(path.join(dir, "missing", "x.db"))).name).to.equal("StoreOpenError");
      expect(thrown(() => SqliteStore.open(dbPath, { batchLimit: 0 })).name).to.equal("InvalidFieldError");
    });

    it("opens an in-memory store (not durable) for callers that need no file", async () => {
      const store = SqliteStore.open(":memory:");
      open.push(store);
      expect(store.settings()).to.deep.include({ journalMode: "memory", synchronous: "full", schemaVersion: SCHEMA_VERSION });
      const c = channel(1n);
      await store.putChannel(c);
      expect(store.getChannel(c.sessionId)).to.deep.equal(c);
    });
  });

  describe("round trips", () => {


    it("stores amounts as decimal TEXT outside steps, and steps as bytes keyed by (channel number, seq − 2^63) (schema 7)", async () => {
      const store = openStore();
      const c = channel(1n);
      await store.putChannel(c);
      await store.putStep(c.sessionId, await signedStep(c.sessionId, 5n));
      await store.setCursor("blocks", BIG);
      await store.close();
      const raw = new Database(dbPath, { readonly: true });
      const types = raw
        .prepare(
          `SELECT typeof(deposit) FROM channels UNION ALL SELECT typeof(seq) FROM steps
           UNION ALL SELECT typeof(block) FROM cursors`,
        )
        .pluck()
        .all();
      expect(types).to.deep.equal(["text", "integer", "text"]);
      const row = raw.prepare("SELECT seq, ticket, typeof(receipt) AS receipt, length(leaf) AS leaf FROM steps").safeIntegers(true).get() as { seq: bigint; ticket: Buffer; receipt: string; leaf: bigint };
      expect(row.seq).to.equal(5n - (1n << 63n));
      // receiptRoot (32) ‖ signature (65) ‖ 5 × 10^18 as big-endian bytes (0x4563918244f40000)
      expect(row.ticket.length).to.equal(105);
      expect(row.ticket.subarray(97).toString("hex")).to.equal("4563918244f40000");
      expect([row.receipt, row.leaf]).to.deep.equal(["blob", 32n]);
      expect(raw.prepare("SELECT block FROM cursors").pluck().get()).to.equal(BIG.toString());
      raw.close();
    });
  });


  describe("putTicket", () => {


  });

  describe("durability", () => {
    it("acknowledges a batch only after an fsync of the WAL that started after its commit", async () => {
      const store = openStore();
      const c = channel(1n);
      const before = store.stats.syncs;
      let acknowledged = false;
      const write = store.putChannel(c).then(() => {
        acknowledged = true;
      });
      // The commit happens on the next macrotask; the acknowledgement only after the fsync that follows it.
      await new Promise((resolve) => setImmediate(resolve));
      expect(store.stats.commits).to.be.greaterThan(0);
      if (!acknowledged) expect(store.stats.syncs).to.equal(before);
      await write;
      expect(store.stats.syncs).to.be.greaterThan(before);
      // flush() with nothing pending but a sync in flight waits for a sync too.
      const more = store.updateChannel(c.sessionId, { deposit: 5n });
      await new Promise((resolve) => setImmediate(resolve));
      const syncs = store.stats.syncs;
      await store.flush();
      expect(store.stats.syncs).to.be.greaterThan(syncs);
      await more;
    });
  });

  describe("putStep", () => {




  });

  describe("reading steps", () => {
  });

  describe("receipt commits", () => {
  });

  describe("session-key grants (decision 0025)", () => {
    const grantFor = (sessionId: Hex, keyIndex: number, spendCap: bigint) =>
      signSessionKeyGrant({ account: payer, domain, sessionId, key: hardhatAccount(keyIndex).address, expiry: BIG, spendCap, methods: ["*"], epoch: 0n });

    it("migrates a version-2 store (channels and steps kept) to one that holds grants", async () => {
      const c = channel(1n);
      const raw = new Database(dbPath);
      raw.exec(MIGRATIONS[0]!);
      raw.exec(MIGRATIONS[1]!);
      raw.pragma("user_version = 2");
      // The channel as the version-2 code wrote it.
      raw.prepare("INSERT INTO channels (session_id, role, status, deposit, channel) VALUES (?, ?, ?, ?, ?)").run(c.sessionId, c.role, c.status, c.deposit.toString(), canon(channelToJson(c)));
      raw.close();
      const store = openStore();
      expect(store.settings().schemaVersion).to.equal(SCHEMA_VERSION);
      expect(store.getChannel(c.sessionId)).to.deep.equal(c);
      const g = await grantFor(c.sessionId, ROLE.sessionKey, 10n);
      await store.putSessionKeyGrant(c.sessionId, g);
      expect(store.sessionKeyGrants(c.sessionId)).to.deep.equal([g]);
    });
  });

  describe("channels, closings and cursors", () => {




    it("migrates a version-2 store to the current version, keeping what it held", async () => {
      const raw = new Database(dbPath);
      raw.exec(MIGRATIONS[0]!);
      raw.exec(MIGRATIONS[1]!);
      raw.pragma("user_version = 2");
      raw.close();
      const store = openStore();
      expect(store.settings().schemaVersion).to.equal(SCHEMA_VERSION);
      const c = channel(2n, { role: "payer" });
      await store.putChannel(c);
      const fault = await signFaultStatement({ account: provider, statement: { sessionId: c.sessionId, seq: 1n, offloadPacketHash: h("r"), code: "ERR_UPSTREAM_POLICY_VIOLATION", computeSpent: 0n } });
      await store.putFaultStatement(c.sessionId, fault);
      expect(store.getFaultStatement(c.sessionId, 1n)).to.deep.equal(fault);
    });


  });

  describe("durability", () => {


    it("surfaces a corrupted row as StoreCorruptionError naming the row", async () => {
      const store = openStore();
      const c = channel(1n);
      await store.putChannel(c);
      const step1 = await signedStep(c.sessionId, 1n);
      const step2 = await signedStep(c.sessionId, 2n);
      await store.putStep(c.sessionId, step1);
      await store.putStep(c.sessionId, step2);
      await store.putClosing(c.sessionId, closingRecord(1n));
      await store.setCursor("a", 1n);
      await store.close();

      const raw = new Database(dbPath);
      // An amount with a leading zero byte, a receipt whose units run past its row, non-canonical bytes, an
      // out-of-range fee, a cursor beyond uint64. (Schema 7 keeps the session id and seq only in the key, so a
      // row moved under another key is no longer caught by the store: its signatures no longer verify.)
      raw.prepare("UPDATE steps SET ticket = unhex(hex(substr(ticket, 1, 97)) || '00' || hex(substr(ticket, 98))) WHERE seq = ?").run(1n - (1n << 63n));
      raw.prepare("UPDATE steps SET receipt = unhex(hex(substr(receipt, 1, 161)) || 'FF' || hex(substr(receipt, 163))) WHERE seq = ?").run(2n - (1n << 63n));
      raw.prepare("UPDATE channels SET channel = replace(channel, '{', '{ ')").run();
      raw.prepare("UPDATE closings SET closing = replace(closing, '\"feeBps\":\"65535\"', '\"feeBps\":\"65536\"')").run();
      raw.prepare("UPDATE cursors SET block = '18446744073709551616'").run();
      raw.close();

      const reopened = openStore();
      const cases: Array<[() => unknown, string, string]> = [
        [() => reopened.steps(c.sessionId, { limit: 1 }), "InvalidFieldError", `${c.sessionId}#00000000000000000001`],
        [() => reopened.latestAnsweredStep(c.sessionId), "InvalidFieldError", `${c.sessionId}#00000000000000000002`],
        [() => reopened.getChannel(c.sessionId), "NonCanonicalJsonError", c.sessionId],
        [() => reopened.getClosing(c.sessionId), "InvalidFieldError", c.sessionId],
        [() => reopened.getCursor("a"), "InvalidFieldError", "a"],
      ];
      for (const [read, causeName, key] of cases) {
        const error = thrown(read) as storeErrors.StoreCorruptionError;
        expect(error.name).to.equal("StoreCorruptionError");
        expect(error.key).to.equal(key);
        expect((error.cause as Error).name).to.equal(causeName);
      }
      // The leaves index is intact: leaves are plain hashes and still read.
      expect(reopened.leaves(c.sessionId)).to.deep.equal([step1.leaf, step2.leaf]);
    });
  });

  describe("group commit", () => {
    it("commits 1,000 concurrent putSteps in one transaction and resolves them all", async () => {
      const store = openStore();
      const c = channel(1n);
      await store.putChannel(c);
      const template = await signedStep(c.sessionId, 1n);
      const steps = Array.from({ length: 1000 }, (_, i) => stepWithSeq(template, BigInt(i + 1)));
      const before = store.stats;
      const settled = await Promise.allSettled(steps.map((step) => store.putStep(c.sessionId, step)));
      expect(settled.every((s) => s.status === "fulfilled")).to.equal(true);
      expect(store.stats.commits - before.commits).to.equal(1);
      expect(store.stats.largestBatch).to.equal(1000);
      expect(store.receiptCount(c.sessionId)).to.equal(1000);
      expect(store.leaves(c.sessionId)).to.deep.equal(steps.map((s) => s.leaf));
      expect(store.steps(c.sessionId, { fromSeq: 500n, limit: 1 })).to.deep.equal([steps[499]]);
    });

    it("commits at once when a batch reaches batchLimit", async () => {
      const store = openStore({ batchLimit: 100 });
      const c = channel(1n);
      await store.putChannel(c);
      const template = await signedStep(c.sessionId, 1n);
      const writes: Promise<void>[] = [];
      for (let seq = 1n; seq <= 250n; seq++) writes.push(store.putStep(c.sessionId, stepWithSeq(template, seq)));
      // Two full batches committed synchronously; the last 50 wait for the next macrotask.
      expect(store.stats.commits).to.equal(3);
      await Promise.all(writes);
      expect(store.stats).to.deep.include({ commits: 4, largestBatch: 100, failedCommits: 0 });
      expect(store.receiptCount(c.sessionId)).to.equal(250);
    });

    it("rejects every write of a batch that cannot commit (database locked), and recovers", async () => {
      const store = openStore({ busyTimeoutMs: 20 });
      const c = channel(1n);
      await store.putChannel(c);
      const step = await signedStep(c.sessionId, 1n);
      const locker = new Database(dbPath);
      locker.prepare("BEGIN IMMEDIATE").run();
      const writes = [
        store.putStep(c.sessionId, step),
        store.setCursor("a", 1n),
        store.updateChannel(c.sessionId, { status: "closing" }),
      ];
      const flushed = store.flush();
      const errors = await Promise.all([...writes, flushed].map((w) => rejection(w)));
      locker.prepare("ROLLBACK").run();
      locker.close();
      expect(errors[0]!.name).to.equal("StoreWriteError");
      expect((errors[0]!.cause as { code?: string }).code).to.equal("SQLITE_BUSY");
      for (const error of errors) expect(error).to.equal(errors[0]); // one failure, shared by the batch
      expect(store.stats.failedCommits).to.equal(1);
      expect(store.steps(c.sessionId)).to.deep.equal([]);
      expect(store.getCursor("a")).to.equal(undefined);
      expect(store.getChannel(c.sessionId)!.status).to.equal("open");
      // The failed batch released its claims: the same writes now succeed.
      await Promise.all([store.putStep(c.sessionId, step), store.setCursor("a", 1n)]);
      expect(store.steps(c.sessionId)).to.deep.equal([step]);
    });

    it("rolls back the whole batch when a write fails after others in it succeeded", async () => {
      const store = openStore();
      const c = channel(1n);
      await store.putChannel(c);
      const step1 = await signedStep(c.sessionId, 1n);
      const ticket2 = await signedTicket(c.sessionId, 2n);
      const other2 = await signedTicket(c.sessionId, 2n, "other");
      const writes = [store.putStep(c.sessionId, step1), store.putTicket(c.sessionId, ticket2), store.setCursor("a", 1n)];
      // Another process slips a different ticket for seq 2 in before the batch commits.
      const intruder = new Database(dbPath);
      intruder.prepare("INSERT INTO interned (value) VALUES (?) ON CONFLICT DO NOTHING").run(ticketTermsKey(other2.ticket));
      intruder
        .prepare(
          `INSERT INTO steps (channel, seq, ticket, terms) VALUES
           ((SELECT no FROM channel_numbers WHERE session_id = ?), ?, ?, (SELECT id FROM interned WHERE value = ?))`,
        )
        .run(c.sessionId, 2n - (1n << 63n), encodeTicketBlob(other2), ticketTermsKey(other2.ticket));
      intruder.close();
      const errors = await Promise.all(writes.map((w) => rejection(w)));
      for (const error of errors) {
        expect(error.name).to.equal("StoreWriteError");
        expect(error).to.equal(errors[0]);
      }
      expect((errors[0]!.cause as Error).name).to.equal("TicketConflictError");
      // step 1, written before the conflicting write in the same transaction, was rolled back too.
      expect(store.receiptCount(c.sessionId)).to.equal(0);
      expect(store.getCursor("a")).to.equal(undefined);
    });
  });

  describe("crash safety", function () {
    this.timeout(60_000);

    it("keeps every acknowledged write when the writer is SIGKILLed mid-stream (5 rounds)", async () => {
      const seed = Number(process.env.STORE_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 32));
      const prng = mulberry32(seed);
      const context = `(seed ${seed}; rerun with STORE_CRASH_SEED=${seed})`;
      const c = channel(1n);
      const setup = openStore();
      await setup.putChannel(c);
      await setup.close();
      const template = await signedStep(c.sessionId, 1n);
      const templatePath = path.join(dir, "template.json");
      fs.writeFileSync(templatePath, JSON.stringify(stepTemplateToJson(c.sessionId, template)));

      // Canonical text of the step each acknowledged seq must hold, computed once per seq.
      const expected = new Map<bigint, string>();
      for (let round = 0; round < 5; round++) {
        const killAfter = prng.int(1, 1500);
        const delayMs = prng.int(0, 30);
        const acks = await runWriterUntilKilled(dbPath, templatePath, killAfter, delayMs, context);
        expect(acks.length, `round ${round} acknowledged nothing ${context}`).to.be.greaterThan(0);
        for (const seq of acks) expected.set(seq, stepText(stepWithSeq(template, seq)));

        const store = SqliteStore.open(dbPath);
        try {
          const stored = store.steps(c.sessionId);
          const actual = new Map(stored.map((step) => [step.seq, stepText(step)]));
          const lost = [...expected].filter(([seq, text]) => actual.get(seq) !== text).map(([seq]) => seq);
          expect(lost, `acknowledged seqs missing or altered after round ${round} ${context}`).to.deep.equal([]);
          // Batches commit whole and in order: what survived is exactly seqs 1..n.
          expect(stored.every((step, i) => step.seq === BigInt(i + 1)), `a gap in the stored seqs ${context}`).to.equal(true);
          expect(store.receiptCount(c.sessionId)).to.equal(stored.length);
        } finally {
          await store.close();
        }
        const raw = new Database(dbPath, { readonly: true });
        expect(raw.pragma("integrity_check", { simple: true })).to.equal("ok");
        raw.close();
      }
    });
  });
});

/**
 * Runs test/helpers/store-writer.ts until it has acknowledged `killAfter` writes, waits `delayMs`, SIGKILLs
 * it and returns the seqs it acknowledged (every complete line it printed).
 */
async function runWriterUntilKilled(
  dbPath: string,
  templatePath: string,
  killAfter: number,
  delayMs: number,
  context: string,
): Promise<bigint[]> {
  const root = path.resolve(__dirname, "../..");
  const child = spawn(
    process.execPath,
    ["-r", "ts-node/register/transpile-only", path.join(root, "test/helpers/store-writer.ts"), dbPath, templatePath],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
  );
  writers.add(child);
  const acks: bigint[] = [];
  let partial = "";
  let stderr = "";
  let killing = false;
  // A writer that never gets going (or a stuck test) must not outlive the test.
  const deadline = setTimeout(() => child.kill("SIGKILL"), WRITER_DEADLINE_MS);
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop()!;
    for (const line of lines) acks.push(BigInt(line));
    if (!killing && acks.length >= killAfter) {
      killing = true;
      setTimeout(() => child.kill("SIGKILL"), delayMs);
    }
  });
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.on("close", (exitCode, exitSignal) => resolve([exitCode, exitSignal])),
  );
  clearTimeout(deadline);
  writers.delete(child);
  expect(killing, `the writer acknowledged ${acks.length} of ${killAfter} writes before its deadline ${context}:\n${stderr}`).to.equal(true);
  expect(signal, `the writer exited on its own (code ${code}) ${context}:\n${stderr}`).to.equal("SIGKILL");
  return acks;
}
