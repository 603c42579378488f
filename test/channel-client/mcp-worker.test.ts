/**
 * `ioi provider --worker`: a real MCP server over stdio (examples/mcp-test-worker.js, written for these
 * tests) behind the provider node. The client alone first (handshake, forwarding, every failure and the
 * restart bound), then on the devnet: the payer receives the worker's results, each paid by a ticket and
 * bound by a receipt, failed calls are receipted but not charged, and the channel closes cooperatively
 * with exact balances.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { keccak256, parseEther, type PublicClient } from "viem";

import { canonBytes } from "../../channel-client/core/canonical";
import { closeCooperative, openChannel } from "../../channel-client/chain/escrow";
import {
  McpWorker,
  MethodNotForwardedError,
  splitWorkerArgv,
  WORKER_ERROR_CODES,
  WorkerCrashedError,
  WorkerOutputError,
  WorkerTimeoutError,
  WorkerUnavailableError,
} from "../../channel-client/node/mcp-worker";
import { PayerClient, type InvocationOutcome } from "../../channel-client/node/payer-client";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import type { JsonObject } from "../../channel-client/core/validate";
import { escrowFixture, makeTerms } from "../helpers/fixtures";

const SERVER = path.join(__dirname, "..", "..", "examples", "mcp-test-worker.js");
const call = (id: number, name: string, args: JsonObject = {}): JsonObject => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });

describe("MCP worker over stdio (decision 0022)", function () {
  const workers: McpWorker[] = [];
  const start = async (extra: Partial<Parameters<typeof McpWorker.start>[0]> = {}) => {
    const worker = await McpWorker.start({ command: process.execPath, args: [SERVER], timeoutMs: 2_000, ...extra });
    workers.push(worker);
    return worker;
  };
  afterEach(async () => {
    while (workers.length > 0) await workers.pop()!.stop();
  });

  it("runs the MCP handshake and lists the worker's tools", async () => {
    const worker = await start();
    expect(worker.info!.protocolVersion).to.equal("2025-06-18");
    expect(worker.info!.serverInfo).to.deep.equal({ name: "ioi-test-server", version: "1.0.0" });
    expect(worker.info!.tools.map((t) => t.name)).to.deep.equal(["add", "upper", "crash", "hang", "garbage", "big", "refuse", "slow"]);
  });

  it("forwards tools/call and returns the worker's result; a worker's JSON-RPC error stays an error", async () => {
    const worker = await start();
    const sum = await worker.handler(call(1, "add", { a: 2, b: 40 }));
    expect(sum).to.deep.equal({ result: { content: [{ type: "text", text: "42" }], isError: false, structuredContent: { sum: 42 } }, units: 1n });
    const upper = await worker.handler(call(2, "upper", { text: "paid work" }));
    expect(upper).to.deep.equal({ result: { content: [{ type: "text", text: "PAID WORK" }], isError: false }, units: 1n });
    expect(await worker.handler(call(3, "nope"))).to.deep.equal({ error: { code: -32602, message: "unknown tool: nope" } });
  });

  it("refuses lifecycle and unknown methods without bothering the worker", async () => {
    const worker = await start();
    await expect(worker.call({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} })).to.be.rejectedWith(MethodNotForwardedError);
    const outcome = await worker.handler({ jsonrpc: "2.0", id: 2, method: "notifications/initialized" });
    expect(outcome).to.have.nested.property("error.code", WORKER_ERROR_CODES.MethodNotForwardedError);
  });

  it("a worker that exits mid-call fails that call with WorkerCrashedError and is restarted for the next", async () => {
    const logs: string[] = [];
    const worker = await start({ log: (line) => logs.push(line) });
    await expect(worker.call(call(1, "crash"))).to.be.rejectedWith(WorkerCrashedError, "exited (code 7)");
    expect(logs).to.include("worker: test server: crashing as asked");
    expect(await worker.handler(call(2, "add", { a: 1, b: 1 }))).to.have.nested.property("result.structuredContent.sum", 2);
    expect(logs.filter((l) => l.startsWith("worker ready"))).to.have.length(2);
  });

  it("a call that hangs fails with WorkerTimeoutError; the worker is restarted", async () => {
    const worker = await start({ timeoutMs: 300 });
    await expect(worker.call(call(1, "hang"))).to.be.rejectedWith(WorkerTimeoutError, "within 300 ms");
    expect(await worker.handler(call(2, "upper", { text: "again" }))).to.have.nested.property("result.content[0].text", "AGAIN");
  });

  it("output that is not JSON-RPC, or a line over the limit, fails with WorkerOutputError", async () => {
    const worker = await start({ maxLineBytes: 4_096 });
    await expect(worker.call(call(1, "garbage"))).to.be.rejectedWith(WorkerOutputError, "not JSON");
    await expect(worker.call(call(2, "big", { bytes: 10_000 }))).to.be.rejectedWith(WorkerOutputError, "the limit is 4096");
    expect(await worker.handler(call(3, "big", { bytes: 100 }))).to.have.nested.property("result.content[0].text", "x".repeat(100));
  });

  it("crashing calls only cost restarts; a worker that no longer starts is given up after the bound (WorkerUnavailableError); one that cannot start fails start()", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-worker-"));
    const script = path.join(dir, "server.js");
    copyFileSync(SERVER, script);
    try {
      const worker = await start({ args: [script], maxRestarts: 2 });
      for (let i = 0; i < 4; i++) await expect(worker.call(call(i, "crash"))).to.be.rejectedWith(WorkerCrashedError);
      expect(await worker.handler(call(5, "add", { a: 1, b: 2 }))).to.have.nested.property("result.structuredContent.sum", 3);
      await expect(worker.call(call(6, "crash"))).to.be.rejectedWith(WorkerCrashedError);
      rmSync(script); // from now on every restart fails
      await expect(worker.call(call(7, "add", { a: 1, b: 2 }))).to.be.rejectedWith(WorkerCrashedError, "code 1");
      await expect(worker.call(call(8, "add", { a: 1, b: 2 }))).to.be.rejectedWith(WorkerCrashedError, "code 1");
      await expect(worker.call(call(9, "add", { a: 1, b: 2 }))).to.be.rejectedWith(WorkerUnavailableError, "failed to start 2 times in a row");
      expect(await worker.handler(call(10, "ping"))).to.deep.equal({ error: { code: WORKER_ERROR_CODES.WorkerUnavailableError, message: "The worker failed to start 2 times in a row; no more work is served until the provider restarts it.", data: { error: "WorkerUnavailableError" } } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await expect(McpWorker.start({ command: process.execPath, args: [SERVER], env: { ...process.env, MCP_TEST_EXIT_AT_START: "1" } })).to.be.rejectedWith(WorkerCrashedError, "code 3");
    await expect(McpWorker.start({ command: "/nonexistent/mcp-server" })).to.be.rejectedWith(WorkerCrashedError, "could not be started");
  });

  it("splits `--worker CMD ARGS…` off the provider's own options", () => {
    expect(splitWorkerArgv(["--price", "5", "--worker", "node", "s.js", "--flag"])).to.deep.equal({ own: ["--price", "5"], worker: ["node", "s.js", "--flag"] });
    expect(splitWorkerArgv(["--price", "5"])).to.deep.equal({ own: ["--price", "5"], worker: undefined });
  });

  describe("behind the provider node, paid and receipted", function () {
    const PRICE = parseEther("0.001");
    const DEPOSIT = parseEther("1");
    const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
    let dir: string;
    const cleanup: Array<() => Promise<unknown>> = [];

    async function mcpFixture() {
      const fx = await escrowFixture();
      const publicClient = fx.publicClient as unknown as PublicClient;
      const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing) });
      const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
      return { ...fx, publicClient, opened };
    }

    beforeEach(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), "ioi-mcp-"));
    });
    afterEach(async () => {
      while (cleanup.length > 0) await cleanup.pop()!().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    });

    async function serve(fx: Awaited<ReturnType<typeof mcpFixture>>) {
      const worker = await start({ timeoutMs: 500 });
      const providerStore = SqliteStore.open(path.join(dir, "provider.db"));
      const node = await ProviderNode.start({ account: fx.provider, publicClient: fx.publicClient, domain: fx.domain, store: providerStore, pricing, handler: worker.handler, modelSnapshotId: "worker:mcp-test@1" });
      const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
      await payerStore.putChannel({ sessionId: fx.opened.sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" });
      const client = await PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(fx.opened.sessionId)!, port: node.port });
      cleanup.push(async () => {
        await client.close();
        await node.stop();
        await providerStore.close();
        await payerStore.close();
      });
      return { client, node, providerStore, payerStore };
    }

    it("the payer receives the worker's results, each paid and receipted; failed calls are receipted, not charged; the close pays exactly the charged calls", async () => {
      const fx = await loadFixture(mcpFixture);
      const { client, providerStore, payerStore } = await serve(fx);

      const requests = [call(1, "add", { a: 2, b: 3 }), call(2, "upper", { text: "paid work" }), call(3, "crash"), call(4, "hang"), call(5, "add", { a: 10, b: 20 })];
      const outcomes: InvocationOutcome[] = [];
      for (const r of requests) outcomes.push(await client.invoke(r));

      expect(outcomes.map((o) => o.result?.content)).to.deep.equal([[{ type: "text", text: "5" }], [{ type: "text", text: "PAID WORK" }], undefined, undefined, [{ type: "text", text: "30" }]]);
      expect(outcomes[2]!.error).to.deep.include({ code: WORKER_ERROR_CODES.WorkerCrashedError, data: { error: "WorkerCrashedError" } });
      expect(outcomes[3]!.error).to.deep.include({ code: WORKER_ERROR_CODES.WorkerTimeoutError, data: { error: "WorkerTimeoutError" } });
      expect(outcomes.map((o) => o.charged)).to.deep.equal([PRICE, PRICE, 0n, 0n, PRICE]);

      // Each call was paid by a ticket (seq i+1, cumulative (i+1)·price) and bound by a receipt over the
      // request sent and the bytes received: the result, or `{ error }` for a failed call.
      const steps = payerStore.steps(fx.opened.sessionId);
      expect(steps).to.have.length(5);
      steps.forEach((step, i) => {
        const o = outcomes[i]!;
        expect(step.ticket.ticket.seq).to.equal(BigInt(i + 1));
        expect(step.ticket.ticket.cumulativeAmount).to.equal(BigInt(i + 1) * PRICE);
        expect(step.receipt!.receipt.offloadPacketHash).to.equal(keccak256(canonBytes(requests[i]!)));
        expect(step.receipt!.receipt.outputHash).to.equal(keccak256(canonBytes(o.error ? { error: o.error } : o.result!)));
        expect(step.receipt!.receipt.metering).to.deep.equal(o.error ? { units: 0n, amount: 0n } : { units: 1n, amount: PRICE });
        expect(step.receipt!.signature).to.equal(o.receipt.signature);
      });
      expect(providerStore.receiptCount(fx.opened.sessionId)).to.equal(5);
      expect(client.session.charged).to.equal(3n * PRICE);

      const { summary, payerSignature, providerSignature } = await client.cooperativeClose();
      expect(summary.finalSeq).to.equal(5n);
      expect(summary.finalAmount).to.equal(3n * PRICE);
      const escrowBefore = await fx.publicClient.getBalance({ address: fx.escrow.address });
      const providerBefore = await fx.publicClient.getBalance({ address: fx.provider.address });
      const funderBefore = await fx.publicClient.getBalance({ address: fx.funder.account.address });
      const treasuryBefore = await fx.publicClient.getBalance({ address: fx.treasury.account.address });
      const settled = await closeCooperative({ wallet: fx.stranger, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.opened.ref, summary, payerSignature, providerSignature });
      expect(settled.paidToProvider).to.equal(3n * PRICE);
      expect(settled.refundedToFunder).to.equal(DEPOSIT - 3n * PRICE);
      expect((await fx.publicClient.getBalance({ address: fx.provider.address })) - providerBefore).to.equal(3n * PRICE);
      expect((await fx.publicClient.getBalance({ address: fx.funder.account.address })) - funderBefore).to.equal(DEPOSIT - 3n * PRICE);
      expect(escrowBefore - (await fx.publicClient.getBalance({ address: fx.escrow.address }))).to.equal(DEPOSIT);
      expect(await fx.publicClient.getBalance({ address: fx.treasury.account.address })).to.equal(treasuryBefore);
    });

    it("pipelined calls through the worker answer in order, with a failure in the middle", async () => {
      const fx = await loadFixture(mcpFixture);
      const { client } = await serve(fx);
      const seen: Array<string | undefined> = [];
      await client.stream({
        count: 12,
        inflight: 4,
        request: (i) => (i === 5 ? call(i, "crash") : call(i, "add", { a: i, b: 100 })),
        onOutcome: (i, o) => seen[i] = o.error ? o.error.data?.error as string : String((o.result!.structuredContent as JsonObject).sum),
      });
      expect(seen).to.deep.equal(["100", "101", "102", "103", "104", "WorkerCrashedError", "106", "107", "108", "109", "110", "111"]);
      expect(client.session.charged).to.equal(11n * PRICE);
      expect(client.session.cumulativeAmount).to.equal(12n * PRICE);
      const { summary } = await client.cooperativeClose();
      expect(summary.finalAmount).to.equal(11n * PRICE);
    });
  });
});
