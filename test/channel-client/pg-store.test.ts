/**
 * What only the PostgreSQL store has (decision 0036); the behaviour it shares with SQLite is in store.test.ts.
 * Schema versioning and refusals, fencing epochs (take-over, a stale writer, a write in flight during a
 * take-over), writes of a channel kept in order when one fails, a killed connection, the duties store's leader
 * fence and refresh, the fleet election, and bytes on disk per receipt.
 */
import { expect } from "chai";
import pg from "pg";
import { getAddress, zeroAddress } from "viem";

import { RootAccumulator } from "../../channel-client/core/accumulator";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { signSessionReceipt } from "../../channel-client/core/receipt";
import { sessionIdOf, type ChannelRef } from "../../channel-client/core/terms";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import { FleetMember } from "../../channel-client/node/fleet";
import { PG_SCHEMA_VERSION } from "../../channel-client/store/pg-schema";
import { PgStore } from "../../channel-client/store/pg-store";
import type { ChannelRecord, StepRecord } from "../../channel-client/store/store";
import { rejection } from "../helpers/assert";
import { hardhatAccount, makeTerms, POLICY_HASH, ROLE } from "../helpers/fixtures";
import { sharedPostgres } from "../helpers/postgres";
import { h } from "../helpers/samples";
import { writeHistory } from "../helpers/history";
import { STEP_PRICE, stepWithSeq } from "../helpers/store-writer";

const payer = hardhatAccount(ROLE.payer);
const provider = hardhatAccount(ROLE.provider);
const ESCROW = getAddress("0x5fbdb2315678afecb367f032d93f642f64180aa3");
const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: ESCROW });

function channel(nonce: bigint): ChannelRecord {
  const ref: ChannelRef = { terms: makeTerms(zeroAddress, { nonce, provider: provider.address }), openedAt: 1000n + nonce };
  return {
    sessionId: sessionIdOf(domain, ref),
    role: "provider",
    ref,
    pricing: { version: "1", unit: "invocation", pricePerInvocation: STEP_PRICE },
    escrow: ESCROW,
    chainId: 31337,
    deposit: 10n ** 24n,
    status: "open",
  };
}

/** A really signed step 1 for the channel; later seqs vary it (`stepWithSeq`). */
async function template(c: ChannelRecord, variant = ""): Promise<Required<StepRecord>> {
  const ticket = await signPaymentTicket({
    account: payer,
    domain,
    ticket: { sessionId: c.sessionId, provider: c.ref.terms.provider, termsHash: c.ref.terms.termsHash, seq: 1n, cumulativeAmount: STEP_PRICE, receiptRoot: h("root") },
  });
  const receipt = await signSessionReceipt({
    account: provider,
    receipt: {
      sessionId: c.sessionId,
      seq: 1n,
      offloadPacketHash: h("request"),
      outputHash: h(`output${variant}`),
      policyHash: c.ref.terms.policyHash ?? POLICY_HASH,
      modelSnapshotId: "worker:echo-keccak@1",
      metering: { units: 1n, amount: STEP_PRICE },
      prevReceiptHash: h("prev"),
    },
  });
  return { seq: 1n, ticket, receipt, leaf: receiptLeaf(receipt.receipt, ticket.ticket) };
}

describe("PgStore (PostgreSQL only)", function () {
  this.timeout(120_000);
  let url: string;
  const open: PgStore[] = [];
  const openStore = async (options?: Parameters<typeof PgStore.open>[1]) => {
    const store = await PgStore.open(url, options);
    open.push(store);
    return store;
  };

  before(async function () {
    this.timeout(180_000);
    await sharedPostgres();
  });

  beforeEach(async () => {
    url = await (await sharedPostgres()).createDatabase();
  });

  afterEach(async () => {
    for (const store of open.splice(0)) await store.close().catch(() => undefined);
  });

  describe("schema", () => {
    it("versions the schema in schema_version, migrates once when several processes open a new database at once, and reopens without migrating", async () => {
      const stores = await Promise.all([openStore(), openStore(), openStore()]);
      const rows = await stores[0]!.query<{ version: number; application: string }>("SELECT version, application FROM schema_version");
      expect(rows).to.deep.equal([{ version: PG_SCHEMA_VERSION, application: "ioi-channel-store" }]);
      await openStore();
      expect((await stores[0]!.query("SELECT * FROM schema_version")).length).to.equal(1);
    });

    it("refuses a database that is not a channel store, and one written by a newer client", async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query("CREATE TABLE other (x integer)");
      const foreign = await rejection(PgStore.open(url));
      expect(foreign.name).to.equal("UnsupportedSchemaError");
      await client.query("DROP TABLE other");
      (await PgStore.open(url)).close();
      await client.query("UPDATE schema_version SET version = version + 1");
      const newer = await rejection(PgStore.open(url));
      expect(newer.name).to.equal("UnsupportedSchemaError");
      expect(newer.message).to.contain(`version ${PG_SCHEMA_VERSION + 1}`);
      await client.end();
      const unreachable = await rejection(PgStore.open("postgres://nobody:x@127.0.0.1:1/none", { connectionTimeoutMs: 2000 }));
      expect(unreachable.name).to.equal("StoreOpenError");
      expect(unreachable.message).not.to.contain(":x@");
    });
  });

  describe("fencing (decision 0036)", () => {
    it("refuses every write of a channel this process does not hold, and of one another process took over; the taker loads what was written", async () => {
      const a = await openStore({ mode: "fleet", owner: "a" });
      const b = await openStore({ mode: "fleet", owner: "b" });
      const c = channel(1n);
      const t = await template(c);
      const notHeld = await rejection(a.putChannel(c));
      expect(notHeld.name).to.equal("FencedError");
      expect((await a.take(c.sessionId)).epoch).to.equal(1n);
      await a.putChannel(c);
      await a.putStep(c.sessionId, t);
      await a.putStep(c.sessionId, stepWithSeq(t, 2n));
      expect(b.steps(c.sessionId)).to.deep.equal([]); // b holds nothing of it yet

      expect((await b.take(c.sessionId)).epoch).to.equal(2n);
      expect(b.getChannel(c.sessionId)).to.deep.equal(c);
      expect(b.steps(c.sessionId)).to.deep.equal([t, stepWithSeq(t, 2n)]);
      // a still believes it holds epoch 1: its write reaches the database and is refused there.
      const stale = await rejection(a.putStep(c.sessionId, stepWithSeq(t, 3n)));
      expect(stale.name).to.equal("FencedError");
      expect(stale.message).to.contain("epoch 2");
      expect(a.epochOf(c.sessionId)).to.equal(undefined); // and it forgot the channel
      expect((await rejection(a.putStep(c.sessionId, stepWithSeq(t, 3n)))).name).to.equal("FencedError");
      await b.putStep(c.sessionId, stepWithSeq(t, 3n));
      const view = await openStore();
      expect(view.steps(c.sessionId).map((s) => s.seq)).to.deep.equal([1n, 2n, 3n]);
    });

    it("a write in flight during a take-over is either committed and loaded by the taker, or refused — never lost and never both", async () => {
      const a = await openStore({ mode: "fleet", owner: "a" });
      const b = await openStore({ mode: "fleet", owner: "b" });
      const c = channel(2n);
      const t = await template(c);
      await a.take(c.sessionId);
      await a.putChannel(c);
      for (let round = 0; round < 10; round++) {
        const seq = BigInt(round + 1);
        const writing = a.putStep(c.sessionId, stepWithSeq(t, seq)).then(
          () => "committed",
          (error: Error) => error.name,
        );
        const taker = round % 2 === 0 ? b : a;
        const other = taker === a ? b : a;
        await taker.take(c.sessionId);
        const outcome = await writing;
        const loaded = taker.steps(c.sessionId).some((s) => s.seq === seq);
        expect(outcome === "committed" ? loaded : !loaded && outcome === "FencedError", `round ${round}: ${outcome}, loaded ${loaded}`).to.equal(true);
        if (!loaded) await taker.putStep(c.sessionId, stepWithSeq(t, seq));
        // Hand the channel back to a for the next round's write.
        if (taker !== a) await a.take(c.sessionId);
        void other;
      }
      const view = await openStore();
      expect(view.steps(c.sessionId).map((s) => s.seq)).to.deep.equal(Array.from({ length: 10 }, (_, i) => BigInt(i + 1)));
    });
  });

  describe("failures", () => {
    it("keeps a channel's writes in order: when a commit fails, the writes queued behind it fail too", async () => {
      const store = await openStore();
      const intruder = await openStore();
      const c = channel(3n);
      await store.putChannel(c);
      const t = await template(c);
      // Another writer stores a different step 2, unknown to `store`'s memory: its step 2 fails in the database.
      await intruder.refresh().catch(() => undefined);
      await intruder.load(c.sessionId);
      await intruder.putStep(c.sessionId, { ...stepWithSeq(await template(c, " other"), 2n) });
      const second = store.putStep(c.sessionId, stepWithSeq(t, 2n)).then(() => "ok", (e: Error) => e.name);
      await new Promise((resolve) => setImmediate(resolve)); // its transaction is under way
      const third = store.putStep(c.sessionId, stepWithSeq(t, 3n)).then(() => "ok", (e: Error) => e.name);
      expect(await second).to.equal("StoreWriteError");
      expect(await third).to.equal("StoreWriteError");
      const view = await openStore();
      expect(view.steps(c.sessionId).map((s) => s.seq)).to.deep.equal([2n]);
      // The failed channel was read again: `store` now knows the intruder's step and refuses its own.
      expect((await rejection(store.putStep(c.sessionId, stepWithSeq(t, 2n)))).name).to.equal("ReceiptConflictError");
    });

    it("rejects the writes of a connection the server killed (pg_terminate_backend) with StoreWriteError, and recovers", async () => {
      const store = await openStore({ poolSize: 2 });
      const c = channel(4n);
      await store.putChannel(c);
      const t = await template(c);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      let failures = 0;
      for (let i = 1; i <= 20; i++) {
        // The outcome is taken at once, so a rejection during the kill below is never unhandled for a moment.
        const write = store.putStep(c.sessionId, stepWithSeq(t, BigInt(i))).then(() => undefined, (error: Error) => error);
        if (i % 5 === 0) await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()");
        const error = await write;
        if (error) {
          expect(error.name).to.equal("StoreWriteError");
          failures++;
          await store.putStep(c.sessionId, stepWithSeq(t, BigInt(i))); // retried on a fresh connection
        }
      }
      await admin.end();
      expect(store.steps(c.sessionId).map((s) => s.seq)).to.deep.equal(Array.from({ length: 20 }, (_, i) => BigInt(i + 1)));
      const view = await openStore();
      expect(view.receiptCount(c.sessionId)).to.equal(20);
      expect(failures).to.be.at.most(20);
    });
  });

  describe("chain duties", () => {
    it("fences the duties store by the leader epoch, and refresh() reads what the serving processes wrote since", async () => {
      const serving = await openStore({ mode: "fleet", owner: "serving" });
      const duties = await openStore({ mode: "duties", owner: "duties" });
      const c = channel(5n);
      const t = await template(c);
      await serving.take(c.sessionId);
      await serving.putChannel(c);
      await serving.putStep(c.sessionId, t);
      await duties.refresh();
      expect(duties.latestTicket(c.sessionId)).to.deep.equal(t.ticket);
      await serving.putStep(c.sessionId, stepWithSeq(t, 2n));
      await serving.updateChannel(c.sessionId, { status: "closing" });
      await duties.refresh();
      expect(duties.latestTicket(c.sessionId)).to.deep.equal(stepWithSeq(t, 2n).ticket);
      expect(duties.getChannel(c.sessionId)?.status).to.equal("closing");

      expect((await rejection(duties.setCursor("watchtower", 5n))).name).to.equal("FencedError"); // not leading
      const member = new FleetMember({ store: serving, endpoints: ["127.0.0.1:1"], leaseMs: 60_000 });
      await member.heartbeat();
      expect(member.leaderEpoch).to.equal(1n);
      duties.lead({ name: "chain-duties", epoch: 1n });
      await duties.setCursor("watchtower", 5n);
      await serving.query("UPDATE leader SET epoch = epoch + 1"); // another process took the lead
      expect((await rejection(duties.setCursor("watchtower", 6n))).name).to.equal("FencedError");
      expect(duties.getCursor("watchtower")).to.equal(5n);
    });

    it("elects one leader; a stopped leader hands over at once with a higher epoch; endpoints list the live processes", async () => {
      const stores = [await openStore({ mode: "fleet", owner: "p1" }), await openStore({ mode: "fleet", owner: "p2" })];
      const leads: string[] = [];
      const members = stores.map(
        (store, i) => new FleetMember({ store, endpoints: [`127.0.0.1:${7001 + i}`], leaseMs: 60_000, onLead: (epoch) => void leads.push(`${store.owner}@${epoch}`), onFollow: () => void leads.push(`${store.owner} follows`) }),
      );
      await members[0]!.heartbeat();
      await members[1]!.heartbeat();
      expect(leads).to.deep.equal(["p1@1"]);
      expect(await members[1]!.endpoints()).to.have.members(["127.0.0.1:7001", "127.0.0.1:7002"]);
      expect((await members[1]!.endpoints())[0]).to.equal("127.0.0.1:7002");
      await members[0]!.stop();
      await members[1]!.heartbeat();
      expect(leads).to.deep.equal(["p1@1", "p1 follows", "p2@2"]);
      expect(await members[1]!.endpoints()).to.deep.equal(["127.0.0.1:7002"]);
      await members[1]!.stop();
    });
  });

  it("measures bytes on disk per receipt of a real history (chained receipts with their accumulator states), and reads it back whole", async () => {
    const store = await openStore();
    const c = channel(6n);
    await store.putChannel(c);
    const N = 2000;
    const leaves = await writeHistory({ store, sessionId: c.sessionId, ref: c.ref, domain, payer, provider, count: N, price: STEP_PRICE, modelSnapshotId: "worker:echo-keccak@1" });
    await store.query("VACUUM ANALYZE");
    const size = await store.size();
    expect(size.receipts).to.equal(N);
    const perReceipt = size.bytes / size.receipts;
    console.log(`      PgStore: ${Math.round(perReceipt)} bytes per receipt on disk over ${N} receipts (pg_total_relation_size of every table)`);
    // Read back from the rows alone (what was left out is derived again): the same steps, leaves and states.
    const view = await openStore();
    expect(view.leaves(c.sessionId)).to.deep.equal(leaves);
    expect(view.steps(c.sessionId)).to.deep.equal(store.steps(c.sessionId));
    const accumulator = new RootAccumulator();
    for (const leaf of leaves.slice(0, 77)) accumulator.append(leaf);
    expect(view.accumulatorState(c.sessionId, { leafCount: 77 })).to.deep.equal({ leafCount: 77, peaks: accumulator.peaks(), charged: 77n * STEP_PRICE, seq: 77n });
    expect(view.accumulatorState(c.sessionId)).to.deep.equal(store.accumulatorState(c.sessionId));
    const rows = await view.query<{ explicit: string }>("SELECT count(*) AS explicit FROM steps WHERE model IS NOT NULL OR prev IS NOT NULL OR acc_peaks IS NOT NULL");
    expect(Number(rows[0]!.explicit), "only the first step carries what the others derive").to.equal(1);
    expect(perReceipt).to.be.at.most(600);
  });
});
