/**
 * Several processes, one provider (issue 31 item 2, decision 0036): two `ioi provider --db postgres://…`
 * processes over one PostgreSQL (started by the tests) and the embedded devnet served over JSON-RPC.
 *
 * The focused fencing case: process A serves the channel and is SIGSTOPped while a paid call is in flight
 * (its worker is still running the call). The payer resumes on process B, which takes the channel over (the
 * fencing epoch moves on) and answers the same seq for another request. A is then SIGCONTinued: its worker
 * answers, A signs its receipt for that seq and tries to store the step — the store refuses it with
 * `FencedError` before anything is answered, A drops its connection, and the payer never holds a second
 * receipt for the seq. Afterwards every receipt the payer holds is in the store byte for byte, every seq
 * has exactly one receipt, and a cooperative close settles exactly (provider, funder and escrow balances).
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import hre from "hardhat";
import { parseEther, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";

import { closeUnilateral, gasEscrowAbi, openChannel } from "../../channel-client/chain/escrow";
import { connectToFleet } from "../../channel-client/node/fleet";
import { PayerClient } from "../../channel-client/node/payer-client";
import { PgStore } from "../../channel-client/store/pg-store";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { ChannelRecord } from "../../channel-client/store/store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { closeCooperativelyExact, escrowFixture, gasPaidBy, makeTerms } from "../helpers/fixtures";
import { sharedPostgres } from "../helpers/postgres";
import { startProviderChild, type ProviderProcess } from "../helpers/provider-child";
import { within } from "../helpers/within";

/** Hardhat's well-known key for account #3 (ROLE.provider). */
const PROVIDER_KEY: Hex = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";
const PRICE = parseEther("0.0001");
const DEPOSIT = parseEther("1");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const START_DEADLINE_MS = 60_000;
const STEP_DEADLINE_MS = 60_000;
const WORKER = path.join(__dirname, "..", "..", "examples", "mcp-test-worker.js");

const ROLE_PAYER = 2; // test/helpers/fixtures ROLE.payer
const call = (id: string, name: string, args: Record<string, unknown>) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });

async function dutiesFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce: 0xd071e5n });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
  return { ...fx, publicClient, opened };
}

async function fleetFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce: 0xf1ee7n });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
  return { ...fx, publicClient, opened };
}

/** Resolves once `predicate` holds, checking every 50 ms; rejects after `ms`. */
async function until(predicate: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("provider fleet: two processes over one PostgreSQL, fenced channel ownership", function () {
  this.timeout(240_000);

  let rpc: EmbeddedRpc | undefined;
  let dir: string;
  const children = new Set<ChildProcess>();
  const closers: Array<() => Promise<unknown>> = [];

  before(async () => {
    rpc = await serveEmbeddedNetwork(hre);
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-fleet-"));
  });

  after(async () => {
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGCONT");
        child.kill("SIGKILL");
      }
    }
    await Promise.all([...children].map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once("exit", r)) : undefined)));
    for (const close of closers.splice(0)) await close().catch(() => undefined);
    await rpc?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function startProvider(escrow: Hex, db: string, worker = true): Promise<ProviderProcess> {
    return startProviderChild({
      rpcUrl: rpc!.url,
      escrow,
      db,
      price: PRICE,
      key: PROVIDER_KEY,
      children,
      startDeadlineMs: START_DEADLINE_MS,
      extraArgs: worker ? ["--worker", process.execPath, WORKER] : [],
    });
  }

  it("a SIGSTOPped process that lost the channel cannot store (so never answers) its receipt for a seq another process signed; the payer resumes on the other process and the channel settles exactly", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    closers.push(async () => process.off("unhandledRejection", onUnhandled));
    const fx = await loadFixture(fleetFixture);
    expect(privateKeyToAccount(PROVIDER_KEY).address).to.equal(fx.provider.address);
    const sessionId = fx.opened.sessionId;
    const db = await (await sharedPostgres()).createDatabase();
    const [a, b] = await Promise.all([startProvider(fx.escrow.address, db), startProvider(fx.escrow.address, db)]);

    const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
    closers.push(() => payerStore.close());
    const record: ChannelRecord = { sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" };
    await payerStore.putChannel(record);
    const connect = (port: number) =>
      within(PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(sessionId)!, port, timeoutMs: 20_000 }), STEP_DEADLINE_MS, `connect to ${port}`);

    // A serves seqs 1..3.
    const onA = await connect(a.port);
    for (let i = 1; i <= 3; i++) await within(onA.invoke(call(`a${i}`, "upper", { text: `call ${i}` })), STEP_DEADLINE_MS, `call ${i} on A`);
    expect(onA.session.seq).to.equal(3n);

    // Seq 4 on A: its worker takes 3 s. Once the worker has the call, A is paused.
    const mark = path.join(dir, "slow-started");
    const stale = onA.invoke(call("a4", "slow", { ms: 3000, mark }));
    const staleOutcome = stale.then(
      (outcome) => ({ outcome }),
      (error: Error) => ({ error }),
    );
    await until(() => existsSync(mark), STEP_DEADLINE_MS, "A's worker starting seq 4");
    a.child.kill("SIGSTOP");

    // The payer resumes on B; B takes the channel over and signs seq 4 for another call.
    const onB = await connect(b.port);
    expect(onB.ready.lastSeq, "B resumes from what the store holds").to.equal(3n);
    const fresh = await within(onB.invoke(call("b4", "upper", { text: "on B" })), STEP_DEADLINE_MS, "seq 4 on B");
    expect(fresh.seq).to.equal(4n);

    // A wakes up: its worker answered long ago; its step for seq 4 is fenced and A drops the connection.
    a.child.kill("SIGCONT");
    await until(() => a.stderr().includes("FencedError"), STEP_DEADLINE_MS, "A reporting its fenced write");
    const seen = await within(staleOutcome, STEP_DEADLINE_MS, "the call A never answered");
    expect("error" in seen, "A answered seq 4 after losing the channel").to.equal(true);
    await onA.close().catch(() => undefined);

    // B serves on; then a commit and a cooperative close through B.
    for (let i = 5; i <= 8; i++) await within(onB.invoke(call(`b${i}`, "upper", { text: `call ${i}` })), STEP_DEADLINE_MS, `call ${i} on B`);
    const { leafCount, root } = await within(onB.commit(), STEP_DEADLINE_MS, "the receipt commit on B");
    const finalSeq = onB.session.seq;
    expect(finalSeq).to.equal(8n);
    expect(leafCount).to.equal(finalSeq);

    // Every receipt the payer holds is in the store, byte for byte; one receipt per seq, none from A for seq 4.
    const payerSteps = payerStore.steps(sessionId);
    expect(payerSteps.map((s) => s.seq)).to.deep.equal([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n]);
    expect(payerSteps[3]!.receipt!.signature).to.equal(fresh.receipt.signature);
    const view = await PgStore.open(db, { mode: "all", poolSize: 1 });
    closers.push(() => view.close());
    const stored = view.steps(sessionId);
    expect(stored.map((s) => `${s.seq}:${s.ticket.signature}:${s.receipt?.signature}:${s.leaf}`)).to.deep.equal(
      payerSteps.map((s) => `${s.seq}:${s.ticket.signature}:${s.receipt?.signature}:${s.leaf}`),
    );
    const owners = await view.query<{ owner: string; epoch: string }>("SELECT owner, epoch FROM channel_owners WHERE session_id = $1", [Buffer.from(sessionId.slice(2), "hex")]);
    expect(owners.length).to.equal(1);
    expect(BigInt(owners[0]!.epoch), "A took the channel (1), then B (2)").to.equal(2n);

    const { summary, payerSignature, providerSignature } = await within(onB.cooperativeClose(), STEP_DEADLINE_MS, "the cooperative close");
    expect(summary.finalSeq).to.equal(finalSeq);
    expect(summary.finalAmount).to.equal(finalSeq * PRICE);
    expect(summary.finalReceiptRoot).to.equal(root);
    const settled = await closeCooperativelyExact(fx, { ref: fx.opened.ref, summary, payerSignature, providerSignature }, finalSeq * PRICE, DEPOSIT);
    expect(settled.fee).to.equal(0n);
    await onB.close();
    for (const p of [a, b]) p.child.kill("SIGTERM");
    await Promise.all([a.exited, b.exited]);
    expect(unhandled.map((r) => String((r as Error)?.message ?? r)), "unhandled promise rejections").to.deep.equal([]);
  });

  it("the chain duties survive the leader: SIGKILLed, the other process takes the lead (a higher epoch), answers a stale unilateral close with the newest ticket and finalises it exactly", async () => {
    const fx = await loadFixture(dutiesFixture);
    const sessionId = fx.opened.sessionId;
    const db = await (await sharedPostgres()).createDatabase();
    const processes = await Promise.all([startProvider(fx.escrow.address, db, false), startProvider(fx.escrow.address, db, false)]);
    const admin = await PgStore.open(db, { mode: "fleet", poolSize: 1 });
    closers.push(() => admin.close());
    const leaderRow = async () => (await admin.query<{ owner: string; epoch: string }>("SELECT owner, epoch FROM leader"))[0];
    let first: { owner: string; epoch: string } | undefined;
    for (let tries = 0; !first && tries < 600; tries++) {
      first = await leaderRow();
      if (!first) await new Promise((r) => setTimeout(r, 100));
    }
    expect(first, "a leader was elected").to.not.equal(undefined);
    const leaderPid = Number(first!.owner.split(":")[1]);
    const leader = processes.find((p) => p.child.pid === leaderPid)!;
    const follower = processes.find((p) => p !== leader)!;
    expect(leader, "the leader is one of the two processes").to.not.equal(undefined);

    // The payer streams through the fleet, then the leader dies.
    const payerStore = SqliteStore.open(path.join(dir, "payer-duties.db"));
    closers.push(() => payerStore.close());
    await payerStore.putChannel({ sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" });
    const client = await within(
      connectToFleet({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(sessionId)!, timeoutMs: 20_000 }, [`127.0.0.1:${leader.port}`, `127.0.0.1:${follower.port}`]),
      STEP_DEADLINE_MS,
      "connect to the fleet",
    );
    for (let i = 1; i <= 5; i++) await within(client.invoke({ jsonrpc: "2.0", id: `d${i}`, method: "tools/echo", params: { text: `call ${i}` } }), STEP_DEADLINE_MS, `call ${i}`);
    await client.close();
    leader.child.kill("SIGKILL");
    await leader.exited;

    // The payer closes with a stale ticket (seq 2). The follower must take the lead and challenge with seq 5.
    const stale = payerStore.steps(sessionId)[1]!.ticket;
    expect(stale.ticket.seq).to.equal(2n);
    const closing = await closeUnilateral({ wallet: fx.wallets[ROLE_PAYER]!, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.opened.ref, ticket: stale });
    const closingSeq = async () => {
      const events = await fx.publicClient.getContractEvents({ address: fx.escrow.address, abi: gasEscrowAbi, eventName: "ChannelChallenged", args: { sessionId }, fromBlock: 0n });
      return events.reduce((top, e) => ((e.args.seq ?? 0n) > top ? e.args.seq! : top), 0n);
    };
    let answered = 0n;
    for (let tries = 0; answered !== 5n && tries < 900; tries++) {
      answered = await closingSeq();
      if (answered !== 5n) await new Promise((r) => setTimeout(r, 100));
    }
    expect(answered, "the new leader answered the stale close with the newest ticket").to.equal(5n);
    const second = await leaderRow();
    expect(Number(second!.owner.split(":")[1])).to.equal(follower.child.pid);
    expect(BigInt(second!.epoch)).to.equal(BigInt(first!.epoch) + 1n);

    // After the window the leader finalises: exact payouts.
    const balances = async (blockNumber?: bigint) => ({
      provider: await fx.publicClient.getBalance({ address: fx.provider.address, blockNumber }),
      funder: await fx.publicClient.getBalance({ address: fx.funder.account.address, blockNumber }),
      escrow: await fx.publicClient.getBalance({ address: fx.escrow.address, blockNumber }),
    });
    const before = await balances();
    const fromBlock = (await fx.publicClient.getBlockNumber()) + 1n;
    await time.increaseTo(closing.finalizesAt + 1n);
    let after = await balances();
    // Finalising pays the funder and credits the provider, whose claim may come in a later transaction: wait until
    // the escrow paid out the whole deposit, then read balances and gas at one block.
    for (let tries = 0; before.escrow - after.escrow !== DEPOSIT && tries < 900; tries++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await balances();
    }
    const end = await fx.publicClient.getBlockNumber();
    after = await balances(end);
    // The leader sends the finalisation (and any claim) from the provider's own key: its gas is the only other change.
    const gas = await gasPaidBy(fx.publicClient as unknown as PublicClient, fx.provider.address, fromBlock, end);
    expect(gas > 0n, "the new leader sent the finalisation").to.equal(true);
    expect(after.provider - before.provider + gas, "the provider's balance, plus the gas it paid").to.equal(5n * PRICE);
    expect(after.funder - before.funder, "the funder's balance").to.equal(DEPOSIT - 5n * PRICE);
    expect(before.escrow - after.escrow, "the escrow paid out exactly the deposit").to.equal(DEPOSIT);
    follower.child.kill("SIGTERM");
    await follower.exited;
  });
});
