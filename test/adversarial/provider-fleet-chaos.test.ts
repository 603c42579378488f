/**
 * Chaos, with nothing lost (issue 31 item 3, decision 0036): three `ioi provider --db postgres://…` processes
 * of one provider over one PostgreSQL (started by the tests), several payers streaming at once, each on its own
 * channel. For a bounded time, at seeded random moments, a process is SIGKILLed and restarted, SIGSTOPped and
 * SIGCONTinued, or every database connection of the fleet is killed (`pg_terminate_backend`). A payer whose
 * call does not come back in time drops its connection and resumes on another process it finds in the
 * fleet's `endpoints` table.
 *
 * Afterwards: every receipt a payer holds is in the provider's store byte for byte (so no seq was answered
 * with two different receipts: the store keeps one per seq, and every payer's is that one), no payer ever saw a
 * conflicting receipt, and every channel settles cooperatively to the exact amounts (the provider's, the
 * funder's and the escrow's balances).
 *
 * IOI_FLEET_SEED=<seed> reproduces a run; IOI_FLEET_CHAOS_MS sets how long the chaos lasts (default 25 s;
 * the bench's `--fleet` runs it longer).
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import hre from "hardhat";
import pg from "pg";
import { parseEther, type Hex, type PublicClient } from "viem";

import { closeCooperative, openChannel } from "../../channel-client/chain/escrow";
import { connectToFleet } from "../../channel-client/node/fleet";
import type { PayerClient } from "../../channel-client/node/payer-client";
import { PgStore } from "../../channel-client/store/pg-store";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { ChannelRecord } from "../../channel-client/store/store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { escrowFixture, makeTerms } from "../helpers/fixtures";
import { sharedPostgres } from "../helpers/postgres";
import { mulberry32, seedFrom } from "../helpers/prng";
import { startProviderChild, type ProviderProcess } from "../helpers/provider-child";
import { within } from "../helpers/within";

const PROVIDER_KEY: Hex = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";
const PRICE = parseEther("0.0001");
const DEPOSIT = parseEther("1");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const PAYERS = 3;
const PROCESSES = 3;
const CHAOS_MS = Number(process.env.IOI_FLEET_CHAOS_MS ?? 25_000);
const SEED = seedFrom("IOI_FLEET_SEED");
const START_DEADLINE_MS = 90_000;
/** A call or a connect that takes longer than this is given up on (its process may be stopped). */
const CALL_PATIENCE_MS = 4_000;
const FINAL_DEADLINE_MS = 60_000;
/** Errors that would mean two receipts for one seq reached a payer. */
const CONFLICTS = ["ReceiptConflictError", "TicketConflictError", "ReceiptMismatchError"];
/** The test's own database connections; the chaos kills every other connection to the fleet's database. */
const ADMIN_APPLICATION = "ioi-fleet-chaos-test";

async function chaosFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const opened = [];
  for (let i = 0; i < PAYERS; i++) {
    const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce: 0xc4a05n + BigInt(i) });
    opened.push(await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT }));
  }
  return { ...fx, publicClient, opened };
}

describe("provider fleet chaos: SIGKILL, SIGSTOP/SIGCONT, restarts and killed database connections under load", function () {
  this.timeout(CHAOS_MS + 300_000);

  let rpc: EmbeddedRpc | undefined;
  let dir: string;
  const children = new Set<ChildProcess>();
  const closers: Array<() => Promise<unknown>> = [];

  before(async () => {
    rpc = await serveEmbeddedNetwork(hre);
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-fleet-chaos-"));
  });

  after(async () => {
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGCONT");
        child.kill("SIGKILL");
      }
    }
    await Promise.all([...children].map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once("exit", r)) : undefined)));
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    await rpc?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(`loses nothing and signs no seq twice across ${CHAOS_MS / 1000} s of chaos on ${PROCESSES} processes with ${PAYERS} payers, then settles every channel exactly (seed ${SEED}, IOI_FLEET_SEED reproduces)`, async () => {
    const prng = mulberry32(SEED);
    const fx = await loadFixture(chaosFixture);
    const db = await (await sharedPostgres()).createDatabase();
    const start = () =>
      startProviderChild({ rpcUrl: rpc!.url, escrow: fx.escrow.address, db, price: PRICE, key: PROVIDER_KEY, children, startDeadlineMs: START_DEADLINE_MS });
    const live: ProviderProcess[] = await Promise.all(Array.from({ length: PROCESSES }, start));
    // A pool: the payers read the endpoints concurrently. Its connections carry a name the chaos spares: the
    // test's own reads are not under test, and a read cut off by the chaos would otherwise end a payer's loop.
    const admin = new pg.Pool({ connectionString: db, max: 2, application_name: ADMIN_APPLICATION });
    admin.on("error", () => undefined);
    closers.push(() => admin.end());
    const log: string[] = [];

    // The endpoints the fleet publishes: what a payer resumes on.
    // A read that fails anyway (a connection the server dropped) is retried.
    const endpoints = async (): Promise<number[]> => {
      for (;;) {
        try {
          const rows = await admin.query<{ endpoint: string }>("SELECT endpoint FROM endpoints WHERE seen_at > now() - interval '20 seconds'");
          return rows.rows.map((r) => Number(r.endpoint.split(":").pop()));
        } catch (error) {
          log.push(`endpoints read failed: ${(error as Error).message}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    };

    // Payers: each streams on its channel until the chaos ends, resuming on another endpoint whenever stuck.
    let chaos = true;
    const errors: string[] = [];
    const payers = fx.opened.map((opened, i) => {
      const store = SqliteStore.open(path.join(dir, `payer-${i}.db`));
      closers.push(() => store.close());
      const record: ChannelRecord = { sessionId: opened.sessionId, role: "payer", ref: opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: opened.deposit, status: "open" };
      return { i, store, record, resumes: 0, calls: 0 };
    });
    for (const p of payers) await p.store.putChannel(p.record);
    // Resume through the fleet's published endpoints, starting one further along each time (`connectToFleet`).
    const connect = async (p: (typeof payers)[number]): Promise<PayerClient> => {
      for (;;) {
        const ports = await endpoints();
        const shift = p.i + p.resumes++;
        const order = ports.map((_, k) => `127.0.0.1:${ports[(shift + k) % ports.length]}`);
        if (order.length === 0) {
          await new Promise((r) => setTimeout(r, 200));
          continue;
        }
        try {
          const parameters = { account: fx.payer, domain: fx.domain, store: p.store, channel: p.store.getChannel(p.record.sessionId)!, timeoutMs: CALL_PATIENCE_MS };
          return await within(connectToFleet(parameters, order), CALL_PATIENCE_MS * 2 * Math.max(1, order.length), "connect to the fleet");
        } catch (error) {
          errors.push((error as Error).name);
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    };
    const streaming = payers.map(async (p) => {
      while (chaos) {
        const client = await connect(p);
        try {
          while (chaos) {
            await within(client.invoke({ jsonrpc: "2.0", id: `p${p.i}-${p.calls}`, method: "tools/echo", params: { text: `call ${p.calls}` } }), CALL_PATIENCE_MS, "a call");
            p.calls++;
          }
        } catch (error) {
          errors.push((error as Error).name);
        } finally {
          await client.close().catch(() => undefined);
        }
      }
    });

    // Chaos.
    const ended = Date.now() + CHAOS_MS;
    let kills = 0;
    let stops = 0;
    let dbKills = 0;
    while (Date.now() < ended) {
      await new Promise((r) => setTimeout(r, prng.int(800, 2500)));
      const action = prng.weighted({ kill: 1, stop: 2, db: 2 });
      const victim = prng.pick(live);
      if (action === "kill" && live.length > 1) {
        victim.child.kill("SIGKILL");
        await victim.exited;
        live.splice(live.indexOf(victim), 1);
        kills++;
        log.push(`kill ${victim.port}`);
        // Restarted in the background: the others serve meanwhile.
        void start().then((p) => live.push(p), (error: Error) => log.push(`restart failed: ${error.message.split("\n")[0]}`));
      } else if (action === "stop") {
        victim.child.kill("SIGSTOP");
        stops++;
        log.push(`stop ${victim.port}`);
        await new Promise((r) => setTimeout(r, prng.int(500, 3000)));
        victim.child.kill("SIGCONT");
      } else {
        const others = "datname = current_database() AND application_name <> $1";
        const killed = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE ${others}`, [ADMIN_APPLICATION]);
        dbKills++;
        log.push(`db kill ${killed.rowCount}`);
      }
    }
    chaos = false;
    for (const p of live) p.child.kill("SIGCONT");
    await within(Promise.all(streaming), FINAL_DEADLINE_MS, "the payers stopping");
    while (live.length < PROCESSES) await new Promise((r) => setTimeout(r, 200));

    // Settle every channel through whichever process the payer reaches.
    const balances = async () => ({
      provider: await fx.publicClient.getBalance({ address: fx.provider.address }),
      funder: await fx.publicClient.getBalance({ address: fx.funder.account.address }),
      escrow: await fx.publicClient.getBalance({ address: fx.escrow.address }),
    });
    const before = await balances();
    let paid = 0n;
    const finals: bigint[] = [];
    for (const p of payers) {
      const client = await within(connect(p), FINAL_DEADLINE_MS, "the final connect");
      await within(client.invoke({ jsonrpc: "2.0", id: `p${p.i}-final`, method: "tools/echo", params: { text: "final" } }), FINAL_DEADLINE_MS, "the final call");
      const { leafCount } = await within(client.commit(), FINAL_DEADLINE_MS, "the final commit");
      const finalSeq = client.session.seq;
      expect(leafCount).to.equal(finalSeq);
      expect(client.session.cumulativeAmount, "every seq paid one price").to.equal(finalSeq * PRICE);
      const { summary, payerSignature, providerSignature } = await within(client.cooperativeClose(), FINAL_DEADLINE_MS, "the cooperative close");
      expect(summary.finalAmount).to.equal(finalSeq * PRICE);
      const settled = await closeCooperative({ wallet: fx.stranger, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: p.record.ref, summary, payerSignature, providerSignature });
      expect(settled.paidToProvider).to.equal(finalSeq * PRICE);
      expect(settled.refundedToFunder).to.equal(DEPOSIT - finalSeq * PRICE);
      paid += finalSeq * PRICE;
      finals.push(finalSeq);
      await client.close();
    }
    const after = await balances();
    expect(after.provider - before.provider, "the provider's balance").to.equal(paid);
    expect(after.funder - before.funder, "the funder's balance").to.equal(BigInt(PAYERS) * DEPOSIT - paid);
    expect(before.escrow - after.escrow, "the escrow paid out exactly the deposits").to.equal(BigInt(PAYERS) * DEPOSIT);

    // Every receipt a payer holds is the store's, byte for byte; none of them saw a conflicting one.
    for (const p of live) p.child.kill("SIGTERM");
    await Promise.all(live.map((p) => p.exited));
    const view = await PgStore.open(db, { mode: "all", poolSize: 1 });
    closers.push(() => view.close());
    for (const p of payers) {
      const held = p.store.steps(p.record.sessionId);
      expect(held.every((s) => s.receipt), `payer ${p.i} holds a ticket without receipt`).to.equal(true);
      const text = (steps: typeof held) => steps.map((s) => `${s.seq}:${s.ticket.signature}:${s.receipt?.signature}:${s.leaf}`);
      expect(text(view.steps(p.record.sessionId)), `payer ${p.i}'s receipts against the store`).to.deep.equal(text(held));
      expect(view.getCooperativeClose(p.record.sessionId)?.summary.finalSeq).to.equal(BigInt(held.length));
    }
    expect(errors.filter((name) => CONFLICTS.includes(name)), "a payer saw a conflicting receipt").to.deep.equal([]);
    expect(finals.every((seq) => seq > 1n), "every payer got work done").to.equal(true);
    const owners = await admin.query<{ epoch: string }>("SELECT epoch FROM channel_owners");
    const takeovers = owners.rows.reduce((sum, r) => sum + Number(r.epoch) - 1, 0);
    if (process.env.IOI_FLEET_VERBOSE) {
      console.log(`      seed ${SEED}: ${kills} kills, ${stops} stops, ${dbKills} connection kills, ${takeovers} take-overs; final seqs ${finals.join(", ")}; ${errors.length} payer errors`);
      console.log(log.map((l) => `        ${l}`).join("\n"));
    }
  });
});
