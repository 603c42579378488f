/**
 * What the fleet leader's duties store asks of PostgreSQL per minute (issue 31 gaps, decision 0036): `refresh()`
 * every 250 ms (the duties' poll) over CHANNELS stored channels, one of which gains a step every second, first
 * re-reading the channel list each round (no `watch()`), then reading only what the database notified (`watch()`).
 * Counts transactions and rows read from pg_stat_database over the window. Not a test: a figure for the record.
 *
 *   npx ts-node --transpile-only scripts/measure-leader-reads.ts [CHANNELS] [SECONDS]
 */
import pg from "pg";
import { getAddress, zeroAddress } from "viem";

import { gasEscrowDomain } from "../channel-client/core/eip712";
import { receiptLeaf } from "../channel-client/core/leaf";
import { signSessionReceipt } from "../channel-client/core/receipt";
import { sessionIdOf, type ChannelRef } from "../channel-client/core/terms";
import { signPaymentTicket } from "../channel-client/core/ticket";
import { PgStore } from "../channel-client/store/pg-store";
import type { ChannelRecord, StepRecord } from "../channel-client/store/store";
import { hardhatAccount, makeTerms, ROLE } from "../test/helpers/fixtures";
import { startPostgres } from "../test/helpers/postgres";
import { h } from "../test/helpers/samples";
import { STEP_PRICE, stepWithSeq } from "../test/helpers/store-writer";

const CHANNELS = Number(process.argv[2] ?? 100);
const SECONDS = Number(process.argv[3] ?? 30);
const ESCROW = getAddress("0x5fbdb2315678afecb367f032d93f642f64180aa3");
const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: ESCROW });
const payer = hardhatAccount(ROLE.payer);
const provider = hardhatAccount(ROLE.provider);

function channel(nonce: bigint): ChannelRecord {
  const ref: ChannelRef = { terms: makeTerms(zeroAddress, { nonce, provider: provider.address }), openedAt: 1000n + nonce };
  return { sessionId: sessionIdOf(domain, ref), role: "provider", ref, pricing: { version: "1", unit: "invocation", pricePerInvocation: STEP_PRICE }, escrow: ESCROW, chainId: 31337, deposit: 10n ** 24n, status: "open" };
}

async function step1(c: ChannelRecord): Promise<Required<StepRecord>> {
  const ticket = await signPaymentTicket({ account: payer, domain, ticket: { sessionId: c.sessionId, provider: c.ref.terms.provider, termsHash: c.ref.terms.termsHash, seq: 1n, cumulativeAmount: STEP_PRICE, receiptRoot: h("root") } });
  const receipt = await signSessionReceipt({ account: provider, receipt: { sessionId: c.sessionId, seq: 1n, offloadPacketHash: h("request"), outputHash: h("output"), policyHash: c.ref.terms.policyHash, modelSnapshotId: "m@1", metering: { units: 1n, amount: STEP_PRICE }, prevReceiptHash: h("prev") } });
  return { seq: 1n, ticket, receipt, leaf: receiptLeaf(receipt.receipt, ticket.ticket) };
}

async function stats(url: string): Promise<{ xact: number; rows: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("SELECT pg_stat_force_next_flush()").catch(() => undefined);
  await client.query("SELECT pg_stat_clear_snapshot()");
  const { rows } = await client.query<{ xact: string; rows: string }>("SELECT xact_commit + xact_rollback AS xact, tup_returned + tup_fetched AS rows FROM pg_stat_database WHERE datname = current_database()");
  await client.end();
  return { xact: Number(rows[0]!.xact), rows: Number(rows[0]!.rows) };
}

async function run(url: string, watch: boolean): Promise<{ xactPerMinute: number; rowsPerMinute: number; refreshes: { full: number; changed: number } }> {
  const serving = await PgStore.open(url, { mode: "fleet", owner: `serving-${watch}` });
  const duties = await PgStore.open(url, { mode: "duties", owner: `duties-${watch}`, poolSize: 2 });
  if (watch) await duties.watch();
  const active = channel(1n);
  await serving.take(active.sessionId);
  const template = await step1(active);
  let seq = BigInt(serving.steps(active.sessionId).length);
  await duties.refresh();
  await new Promise((r) => setTimeout(r, 1500));
  const before = await stats(url);
  const until = Date.now() + SECONDS * 1000;
  let nextStep = Date.now();
  while (Date.now() < until) {
    if (Date.now() >= nextStep) {
      await serving.putStep(active.sessionId, stepWithSeq(template, ++seq));
      nextStep += 1000;
    }
    await duties.refresh();
    await new Promise((r) => setTimeout(r, 250));
  }
  await new Promise((r) => setTimeout(r, 1500));
  const after = await stats(url);
  const refreshes = duties.refreshes;
  await duties.close();
  await serving.close();
  // The stats connections themselves and the active channel's writes are in both runs alike.
  return { xactPerMinute: Math.round(((after.xact - before.xact) * 60) / SECONDS), rowsPerMinute: Math.round(((after.rows - before.rows) * 60) / SECONDS), refreshes };
}

async function main(): Promise<void> {
  const server = await startPostgres();
  try {
    const url = await server.createDatabase();
    const seed = await PgStore.open(url, { mode: "fleet", owner: "seed" });
    for (let i = 1; i <= CHANNELS; i++) {
      const c = channel(BigInt(i));
      await seed.take(c.sessionId);
      await seed.putChannel(c);
      const t = await step1(c);
      for (let s = 1n; s <= 20n; s++) await seed.putStep(c.sessionId, s === 1n ? t : stepWithSeq(t, s));
      seed.release(c.sessionId);
    }
    await seed.close();
    const polling = await run(url, false);
    const watching = await run(url, true);
    console.log(JSON.stringify({ channels: CHANNELS, seconds: SECONDS, pollMs: 250, activeStepsPerSecond: 1, polling, watching }));
  } finally {
    await server.stop();
  }
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
