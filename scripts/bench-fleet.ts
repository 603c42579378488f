/**
 * Issue 31 figures for `npm run bench -- --fleet` (decision 0036): tickets/s of one provider identity served by
 * 1 process on SQLite, 1 process on PostgreSQL and 2 processes on PostgreSQL, in the same run, with the same
 * payers (in this process, several channels streaming at once, 16 in flight each) against `ioi provider`
 * processes on the embedded devnet served over JSON-RPC; and bytes on disk per receipt in PostgreSQL.
 * `--fleet-chaos` also runs the fleet chaos test for longer (IOI_FLEET_CHAOS_MS, default 120 s).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { parseEther, type Hex, type PublicClient } from "viem";

import { openChannel } from "../channel-client/chain/escrow";
import { PayerClient } from "../channel-client/node/payer-client";
import { PgStore } from "../channel-client/store/pg-store";
import { SqliteStore } from "../channel-client/store/sqlite-store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../channel-client/core/terms";
import { escrowFixture, makeTerms } from "../test/helpers/fixtures";
import { startPostgres } from "../test/helpers/postgres";
import { serveEmbeddedNetwork } from "./embedded-rpc";
import { startProviderProcess, stopProcess } from "./provider-process";

const PROVIDER_KEY: Hex = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";
const PRICE = 1_000n;
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const request = (i: number) => ({ jsonrpc: "2.0", id: `f-${i}`, method: "tools/echo", params: { text: `call ${i}` } });

export type FleetRun = { store: "sqlite" | "postgres"; processes: number; payers: number; tickets: number; seconds: number; ticketsPerSecond: number };
/**
 * `postgresBytesPerReceipt`: every table but `results`, per receipt (the bound of issue 31 item 4, as SQLite's figure);
 * `postgresResultBytesPerCall`: the kept requests and outputs (`results`, the application's payload, decision 0008).
 */
export type FleetBench = { runs: FleetRun[]; postgresBytesPerReceipt: number; postgresResultBytesPerCall: number; postgresReceipts: number; chaos?: { ms: number; passed: boolean } };

export async function benchFleet(hre: HardhatRuntimeEnvironment, quick: boolean, log: (line: string) => void): Promise<FleetBench> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-bench-fleet-"));
  const rpc = await serveEmbeddedNetwork(hre);
  const server = await startPostgres();
  try {
    const fx = await escrowFixture();
    const publicClient = fx.publicClient as unknown as PublicClient;
    const payers = quick ? 4 : 8;
    const seconds = quick ? 5 : 15;
    let nonce = 0x31f1n;
    const runs: FleetRun[] = [];
    let postgresUrl = "";
    for (const [store, processes] of [["sqlite", 1], ["postgres", 1], ["postgres", 2]] as const) {
      const db = store === "sqlite" ? path.join(dir, `provider-${runs.length}.db`) : await server.createDatabase();
      if (store === "postgres") postgresUrl = db;
      log(`  ${processes} provider process(es) on ${store === "sqlite" ? "SQLite" : "PostgreSQL"}, ${payers} payers for ${seconds} s …`);
      const children = await Promise.all(
        Array.from({ length: processes }, () => startProviderProcess({ rpc: rpc.url, escrow: fx.escrow.address, db, price: PRICE, key: PROVIDER_KEY, fromBlock: 0n, onLine: () => undefined })),
      );
      try {
        const clients: PayerClient[] = [];
        for (let i = 0; i < payers; i++) {
          const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms: makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce: nonce++ }), amount: parseEther("100") });
          const payerStore = SqliteStore.open(path.join(dir, `payer-${runs.length}-${i}.db`));
          await payerStore.putChannel({ sessionId: opened.sessionId, role: "payer", ref: opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: opened.deposit, status: "open" });
          // Payers spread over the processes, as a fleet's endpoints spread them.
          clients.push(await PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(opened.sessionId)!, port: children[i % processes]!.port }));
        }
        await Promise.all(clients.map((client) => client.stream({ count: 50, inflight: 16, request }))); // warm
        const started = performance.now();
        const deadline = started + seconds * 1000;
        const counts = await Promise.all(
          clients.map(async (client) => {
            let n = 0;
            while (performance.now() < deadline) n += (await client.stream({ count: 100, inflight: 16, request })).length;
            return n;
          }),
        );
        const elapsed = (performance.now() - started) / 1000;
        const tickets = counts.reduce((a, b) => a + b, 0);
        runs.push({ store, processes, payers, tickets, seconds: Number(elapsed.toFixed(2)), ticketsPerSecond: Math.round(tickets / elapsed) });
        for (const client of clients) await client.close();
      } finally {
        await Promise.all(children.map((c) => stopProcess(c.child)));
      }
    }
    const view = await PgStore.open(postgresUrl, { mode: "fleet", poolSize: 1 });
    await view.query("VACUUM ANALYZE");
    const size = await view.size();
    await view.close();
    const perReceipt = (bytes: number) => Math.round(bytes / Math.max(1, size.receipts));
    const result: FleetBench = { runs, postgresBytesPerReceipt: perReceipt(size.bytes), postgresResultBytesPerCall: perReceipt(size.resultBytes), postgresReceipts: size.receipts };
    if (process.argv.includes("--fleet-chaos")) {
      const ms = Number(process.env.IOI_FLEET_CHAOS_MS ?? 120_000);
      log(`  the fleet chaos test for ${ms / 1000} s …`);
      const run = spawnSync("npx", ["hardhat", "test", "test/adversarial/provider-fleet-chaos.test.ts"], { stdio: "inherit", env: { ...process.env, IOI_FLEET_CHAOS_MS: String(ms), IOI_FLEET_VERBOSE: "1" } });
      result.chaos = { ms, passed: run.status === 0 };
    }
    return result;
  } finally {
    await server.stop();
    await rpc.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function fleetRows(bench: FleetBench, row: (name: string, value: string, target: string, met: boolean | null) => void): void {
  const sqlite = bench.runs.find((r) => r.store === "sqlite")!;
  for (const run of bench.runs) {
    const label = `${run.processes} provider process${run.processes > 1 ? "es" : ""} on ${run.store === "sqlite" ? "SQLite" : "PostgreSQL"}, ${run.payers} payers: tickets/s`;
    row(label, String(run.ticketsPerSecond), run === sqlite ? "" : `÷ SQLite ${(run.ticketsPerSecond / sqlite.ticketsPerSecond).toFixed(2)}`, null);
  }
  row(`PostgreSQL bytes on disk per receipt (${bench.postgresReceipts.toLocaleString("en-US")} receipts)`, String(bench.postgresBytesPerReceipt), "≤ 600", bench.postgresBytesPerReceipt <= 600);
  row("PostgreSQL bytes on disk per kept request and output (results; payload, not bounded)", String(bench.postgresResultBytesPerCall), "", null);
  if (bench.chaos) row(`fleet chaos test, ${bench.chaos.ms / 1000} s`, bench.chaos.passed ? "passed" : "FAILED", "passes", bench.chaos.passed);
}
