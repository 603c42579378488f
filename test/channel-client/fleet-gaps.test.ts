/**
 * Issue 31 gaps (decision 0036): what a provider fleet publishes, what its leader reads, what a process forgets.
 *
 * - `advertisedEndpoints`: a wildcard listen address (0.0.0.0, ::) is never published; `--advertise` is checked
 *   (one sentence each for an empty entry, a malformed one, a wildcard, a duplicate).
 * - `FleetMember` publishes every advertised endpoint, and none for a process that has none.
 * - The duties store with `watch()`: a refresh reads only the channels the database notified (a new channel, new
 *   steps, a status change), and nothing when nothing changed; a full read happens once at the start.
 * - A fleet store forgets a channel another process took over as soon as the database says so, and one it
 *   released: after serving N channels and releasing them it holds none (rows, records, epochs, write queues).
 * - A read-only store (the commands that read a fleet's database) takes no epoch and is refused every write.
 */
import { expect } from "chai";
import { getAddress, zeroAddress, type Hex } from "viem";

import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { signSessionReceipt } from "../../channel-client/core/receipt";
import { sessionIdOf, type ChannelRef } from "../../channel-client/core/terms";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import { advertisedEndpoints, isWildcard } from "../../channel-client/node/endpoints";
import { FleetMember } from "../../channel-client/node/fleet";
import { PgStore } from "../../channel-client/store/pg-store";
import type { ChannelRecord, StepRecord } from "../../channel-client/store/store";
import { rejection } from "../helpers/assert";
import { hardhatAccount, makeTerms, POLICY_HASH, ROLE } from "../helpers/fixtures";
import { sharedPostgres } from "../helpers/postgres";
import { h } from "../helpers/samples";
import { STEP_PRICE, stepWithSeq } from "../helpers/store-writer";

const payer = hardhatAccount(ROLE.payer);
const provider = hardhatAccount(ROLE.provider);
const ESCROW = getAddress("0x5fbdb2315678afecb367f032d93f642f64180aa3");
const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: ESCROW });

function channel(nonce: bigint): ChannelRecord {
  const ref: ChannelRef = { terms: makeTerms(zeroAddress, { nonce, provider: provider.address }), openedAt: 1000n + nonce };
  return { sessionId: sessionIdOf(domain, ref), role: "provider", ref, pricing: { version: "1", unit: "invocation", pricePerInvocation: STEP_PRICE }, escrow: ESCROW, chainId: 31337, deposit: 10n ** 24n, status: "open" };
}

async function step1(c: ChannelRecord): Promise<Required<StepRecord>> {
  const ticket = await signPaymentTicket({ account: payer, domain, ticket: { sessionId: c.sessionId, provider: c.ref.terms.provider, termsHash: c.ref.terms.termsHash, seq: 1n, cumulativeAmount: STEP_PRICE, receiptRoot: h("root") } });
  const receipt = await signSessionReceipt({
    account: provider,
    receipt: { sessionId: c.sessionId, seq: 1n, offloadPacketHash: h("request"), outputHash: h("output"), policyHash: c.ref.terms.policyHash ?? POLICY_HASH, modelSnapshotId: "worker:echo-keccak@1", metering: { units: 1n, amount: STEP_PRICE }, prevReceiptHash: h("prev") },
  });
  return { seq: 1n, ticket, receipt, leaf: receiptLeaf(receipt.receipt, ticket.ticket) };
}

/** Resolves once `check` holds, polling (notifications arrive asynchronously); fails after `ms`. */
async function eventually(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("advertised endpoints of a fleet process (pure)", () => {
  it("publishes the listen address, or nothing for a wildcard; never a wildcard", () => {
    expect(advertisedEndpoints("127.0.0.1", 7000, undefined)).to.deep.equal(["127.0.0.1:7000"]);
    expect(advertisedEndpoints("::1", 7000, undefined)).to.deep.equal(["[::1]:7000"]);
    expect(advertisedEndpoints("0.0.0.0", 7000, undefined)).to.deep.equal([]);
    expect(advertisedEndpoints("::", 7000, undefined)).to.deep.equal([]);
    expect(advertisedEndpoints("0.0.0.0", 7000, ["203.0.113.7:7000", "node-b.example:7001,[2001:db8::1]:7002"])).to.deep.equal(["203.0.113.7:7000", "node-b.example:7001", "[2001:db8::1]:7002"]);
    expect([isWildcard("0.0.0.0"), isWildcard("::"), isWildcard("0:0::0"), isWildcard("127.0.0.1"), isWildcard("::1")]).to.deep.equal([true, true, true, false, false]);
  });

  for (const [given, message] of [
    [["a:1,,b:2"], "--advertise has an empty entry"],
    [["203.0.113.7"], '--advertise must be HOST:PORT that payers can dial, such as 203.0.113.7:7000 (IPv6 as [2001:db8::1]:7000); received "203.0.113.7".'],
    [["0.0.0.0:7000"], "--advertise 0.0.0.0:7000 is a wildcard address no payer can dial"],
    [["[::]:7000"], "--advertise [::]:7000 is a wildcard address no payer can dial"],
    [["a.example:1", "a.example:1"], "--advertise names a.example:1 twice"],
    [["a.example:70000"], "--advertise must be HOST:PORT"],
  ] as const) {
    it(`refuses --advertise ${JSON.stringify(given)} in one sentence`, () => {
      expect(() => advertisedEndpoints("0.0.0.0", 7000, [...given])).to.throw(message);
    });
  }
});

describe("provider fleet gaps on PostgreSQL (issue 31, decision 0036)", function () {
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

  it("publishes every advertised endpoint, and none for a process without one (a wildcard listen address)", async () => {
    const a = await openStore({ mode: "fleet", owner: "a" });
    const b = await openStore({ mode: "fleet", owner: "b" });
    const withTwo = new FleetMember({ store: a, endpoints: ["203.0.113.7:7000", "[2001:db8::1]:7000"], leaseMs: 60_000 });
    const withNone = new FleetMember({ store: b, endpoints: [], leaseMs: 60_000 });
    await withTwo.heartbeat();
    await withNone.heartbeat();
    expect(await withNone.endpoints()).to.have.members(["203.0.113.7:7000", "[2001:db8::1]:7000"]);
    const rows = await a.query<{ owner: string; endpoint: string }>("SELECT owner, endpoint FROM endpoints ORDER BY endpoint");
    expect(rows.map((r) => `${r.owner} ${r.endpoint}`)).to.deep.equal(["a 203.0.113.7:7000", "a [2001:db8::1]:7000"]);
    expect(rows.some((r) => /^(0\.0\.0\.0|\[::\]):/.test(r.endpoint))).to.equal(false);
    await withTwo.stop();
    await withNone.stop();
    expect(await a.query("SELECT * FROM endpoints")).to.deep.equal([]);
  });

  it("the leader's duties store reads only what the database notified: a new channel, new steps, a status change; nothing when idle", async () => {
    const serving = await openStore({ mode: "fleet", owner: "serving" });
    const duties = await openStore({ mode: "duties", owner: "duties" });
    await duties.watch({ safetyMs: 3_600_000 });
    await duties.refresh(); // the first refresh after LISTEN reads everything once
    expect(duties.refreshes).to.deep.equal({ full: 1, changed: 0 });
    const c = channel(1n);
    const t = await step1(c);
    await serving.take(c.sessionId);
    await serving.putChannel(c);
    await serving.putStep(c.sessionId, t);
    // Notifications arrive after COMMIT, asynchronously: refresh until the duties store sees them.
    await eventually(async () => (await duties.refresh(), duties.latestTicket(c.sessionId)?.ticket.seq === 1n), "the new channel");
    await serving.putStep(c.sessionId, stepWithSeq(t, 2n));
    await eventually(async () => (await duties.refresh(), duties.latestTicket(c.sessionId)?.ticket.seq === 2n), "the new step");
    await serving.updateChannel(c.sessionId, { status: "closing" });
    await eventually(async () => (await duties.refresh(), duties.getChannel(c.sessionId)?.status === "closing"), "the status change");
    await new Promise((r) => setTimeout(r, 200));
    await duties.refresh();
    const before = duties.refreshes;
    expect(before.full).to.equal(1); // never the whole list again within the safety period
    for (let i = 0; i < 5; i++) await duties.refresh(); // idle: no query at all
    expect(duties.refreshes).to.deep.equal(before);
    expect(duties.steps(c.sessionId)).to.deep.equal(serving.steps(c.sessionId));
  });

  it("a fleet process forgets a channel another process took over at once, and holds nothing of the channels it released", async () => {
    const a = await openStore({ mode: "fleet", owner: "a" });
    const b = await openStore({ mode: "fleet", owner: "b" });
    const takenOver: Hex[] = [];
    await a.watch({ onTakenOver: (id) => void takenOver.push(id) });
    const N = 6;
    const channels = await Promise.all(Array.from({ length: N }, (_, i) => channel(BigInt(10 + i))));
    for (const c of channels) {
      await a.take(c.sessionId);
      await a.putChannel(c);
      await a.putStep(c.sessionId, await step1(c));
    }
    expect(a.memory).to.deep.include({ held: N, records: N, epochs: N });
    // B takes the first channel over: A is told by the database and lets it go without writing to it.
    await b.take(channels[0]!.sessionId);
    await eventually(() => takenOver.length === 1, "the take-over notice");
    expect(takenOver).to.deep.equal([channels[0]!.sessionId]);
    expect(a.getChannel(channels[0]!.sessionId)).to.equal(undefined);
    expect(a.memory).to.deep.include({ held: N - 1, epochs: N - 1 });
    // Its own re-take is not a take-over.
    await a.take(channels[1]!.sessionId);
    await new Promise((r) => setTimeout(r, 200));
    expect(takenOver).to.have.length(1);
    for (const c of channels.slice(1)) a.release(c.sessionId);
    expect(a.memory).to.deep.equal({ held: 0, records: 0, epochs: 0, queues: 0, pending: 0 });
    // Released is not lost: the database still holds every channel, and B serves the first one.
    const all = await openStore({ mode: "all", readOnly: true });
    expect(all.listChannels()).to.have.length(N);
    expect(b.steps(channels[0]!.sessionId)).to.have.length(1);
  });

  it("a read-only store (a command that only reads a fleet's database) takes no epoch and is refused every write", async () => {
    const writer = await openStore({ mode: "all" });
    const c = channel(30n);
    await writer.putChannel(c);
    const reader = await openStore({ mode: "all", readOnly: true });
    expect(reader.listChannels().map((r) => r.sessionId)).to.deep.equal([c.sessionId]);
    const refused = await rejection(reader.updateChannel(c.sessionId, { status: "closing" }));
    expect(refused.name).to.equal("StoreWriteError");
    expect(String((refused as Error & { details?: string }).details ?? (refused as Error).message)).to.match(/read-only transaction/);
    expect(await writer.query("SELECT * FROM channel_owners")).to.deep.equal([]);
    expect((await openStore({ mode: "all" })).getChannel(c.sessionId)?.status).to.equal("open");
  });
});
