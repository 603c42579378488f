/**
 * Issue 30 items 1–3 (decision 0033), with parts nobody here wrote: a host built only from the MCP SDK's `Client`
 * starts `ioi mcp` over stdio (as a host's `mcpServers` entry does), lists and calls tools of
 * `@modelcontextprotocol/server-everything`, sold by `ioi provider` on v3 terms (a price per tool, listing free),
 * and every party's balance is exact after the cooperative close. `@modelcontextprotocol/server-filesystem` is
 * sold the same way.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import path from "node:path";
import { createWalletClient, custom, keccak256, parseEther, type Hex, type PublicClient } from "viem";
import { hardhat } from "viem/chains";

import { canonBytes } from "../../channel-client/core/canonical";
import { sessionReceiptHash } from "../../channel-client/core/receipt";
import { createPayer } from "../../channel-client/roles/payer";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { cliSandbox } from "../helpers/cli";
import { escrowFixture, ROLE } from "../helpers/fixtures";
import { EVERYTHING, FILESYSTEM, gasPaidBy, gatewayArgs, hostWithGateway, keyOf, startProvider, stopChild, v3Terms, writeTerms } from "../helpers/mcp-parts";

const ECHO = parseEther("0.001");
const SUM = parseEther("0.002");
const CAP = parseEther("0.005");
const MODEL = "server-everything@2026.8.31";

describe("ioi mcp: an SDK host pays server-everything's tools through the channel (v3 per-tool terms)", function () {
  this.timeout(300_000);
  const box = cliSandbox("ioi-mcp-gateway-");

  it("lists (free) and calls echo and get-sum at their own prices; provider and payer balances exact after settlement", async () => {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const terms = v3Terms({ echo: ECHO, "get-sum": SUM }, CAP, MODEL);
    const provider = await startProvider({
      rpcUrl: box.rpc.url,
      escrow: fx.escrow.address,
      db: path.join(box.dir, "provider.db"),
      termsFile: writeTerms(box.dir, terms),
      model: MODEL,
      key: keyOf(ROLE.provider),
      worker: [process.execPath, EVERYTHING, "stdio"],
    });
    box.cleanup.push(() => stopChild(provider.child));
    expect(provider.ready.worker).to.have.property("tools").that.includes("echo");

    const startBlock = await publicClient.getBlockNumber();
    const payerBefore = await publicClient.getBalance({ address: fx.payer.address });
    const providerBefore = await publicClient.getBalance({ address: fx.provider.address });
    const payerDb = path.join(box.dir, "payer.db");
    const args = gatewayArgs({
      rpcUrl: box.rpc.url,
      escrow: fx.escrow.address,
      db: payerDb,
      provider: fx.provider.address,
      port: provider.port,
      budgets: { call: CAP, channel: parseEther("0.05"), day: parseEther("0.02") },
      extra: ["--deposit", parseEther("0.01").toString()],
    });
    const host = await hostWithGateway(args, keyOf(ROLE.payer));
    box.cleanup.push(() => host.client.close());

    // The provider's tools, presented as the gateway's own; listing is free under v3.
    const listed = await host.client.listTools();
    expect(listed.tools.map((t) => t.name)).to.include.members(["echo", "get-sum", "get-env"]);
    const listReceipt = (listed._meta as Record<string, { amount: string; seq: string }>)["ioi-settlement/receipt"]!;
    expect(listReceipt).to.deep.include({ amount: "0", seq: "1" });

    const echoed = await host.client.callTool({ name: "echo", arguments: { message: "paid hello" } });
    expect(echoed.content).to.deep.equal([{ type: "text", text: "Echo: paid hello" }]);
    const echoReceipt = (echoed._meta as Record<string, { amount: string; seq: string; sessionId: Hex; receiptHash: Hex }>)["ioi-settlement/receipt"]!;
    expect(echoReceipt).to.deep.include({ amount: ECHO.toString(), seq: "2" });

    const summed = await host.client.callTool({ name: "get-sum", arguments: { a: 2, b: 3 } });
    expect(summed.content).to.deep.equal([{ type: "text", text: "The sum of 2 and 3 is 5." }]);
    expect((summed._meta as Record<string, { amount: string }>)["ioi-settlement/receipt"]).to.deep.include({ amount: SUM.toString(), seq: "3" });
    // x402's MCP key carries the same receipt reference (decision 0034).
    const x402 = (summed._meta as Record<string, { success: boolean; network: string; extensions: Record<string, { receipt: { receipt: { seq: string } } }> }>)["x402/payment-response"]!;
    expect(x402).to.deep.include({ success: true, network: "eip155:31337" });
    expect(x402.extensions["ioi-settlement"]!.receipt.receipt.seq).to.equal("3");
    await host.client.close();

    // The receipt the host was told of is the one the payer's store holds, and its output hash is the result's.
    const sessionId = echoReceipt.sessionId;
    const payerStore = SqliteStore.open(payerDb);
    box.cleanup.push(() => payerStore.close());
    const steps = payerStore.steps(sessionId);
    expect(steps.map((s) => s.receipt!.receipt.metering.amount)).to.deep.equal([0n, ECHO, SUM]);
    expect(sessionReceiptHash(steps[1]!.receipt!.receipt)).to.equal(echoReceipt.receiptHash);
    const { _meta: _m, ...echoResult } = echoed;
    void _m;
    expect(steps[1]!.receipt!.receipt.outputHash).to.equal(keccak256(canonBytes(echoResult as never)));

    // Settle cooperatively with the provider node; then every balance is exact.
    const payer = createPayer({
      deployment: { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } },
      publicClient,
      wallet: createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) }),
      store: payerStore,
    });
    const settled = await payer.closeCooperative(sessionId, { host: "127.0.0.1", port: provider.port });
    const endBlock = await publicClient.getBlockNumber();
    const paid = ECHO + SUM;
    expect(settled).to.not.equal(undefined);
    expect(await publicClient.getBalance({ address: fx.provider.address })).to.equal(providerBefore + paid);
    const gas = await gasPaidBy(publicClient, fx.payer.address, startBlock + 1n, endBlock);
    expect(await publicClient.getBalance({ address: fx.payer.address })).to.equal(payerBefore - paid - gas);
    expect(await publicClient.getBalance({ address: fx.escrow.address })).to.equal(0n);
  });

  it("sells a Streamable HTTP MCP server (the SDK's own, on loopback) through ioi provider --worker-url; balances exact", async () => {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    // An MCP server built from the SDK alone, stateless Streamable HTTP on 127.0.0.1.
    const http = createServer((req, res) => {
      const server = new Server({ name: "sdk-http-server", version: "1" }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: "shout", inputSchema: { type: "object" as const, properties: { text: { type: "string" } } } }] }));
      server.setRequestHandler(CallToolRequestSchema, async (request) => ({ content: [{ type: "text" as const, text: String((request.params.arguments as { text?: string }).text ?? "").toUpperCase() }] }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on("close", () => void transport.close());
      void server.connect(transport).then(() => transport.handleRequest(req, res));
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    box.cleanup.push(() => new Promise((resolve) => http.close(resolve)));
    const SHOUT = parseEther("0.0015");
    const model = "sdk-http-server";
    const provider = await startProvider({
      rpcUrl: box.rpc.url,
      escrow: fx.escrow.address,
      db: path.join(box.dir, "provider.db"),
      termsFile: writeTerms(box.dir, v3Terms({ shout: SHOUT }, CAP, model)),
      model,
      key: keyOf(ROLE.provider),
      workerUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    });
    box.cleanup.push(() => stopChild(provider.child));
    expect(provider.ready.worker).to.have.property("tools").that.deep.equals(["shout"]);
    const startBlock = await publicClient.getBlockNumber();
    const payerBefore = await publicClient.getBalance({ address: fx.payer.address });
    const providerBefore = await publicClient.getBalance({ address: fx.provider.address });
    const payerDb = path.join(box.dir, "payer.db");
    const host = await hostWithGateway(
      gatewayArgs({ rpcUrl: box.rpc.url, escrow: fx.escrow.address, db: payerDb, provider: fx.provider.address, port: provider.port, budgets: { call: CAP, channel: parseEther("0.02"), day: parseEther("0.02") } }),
      keyOf(ROLE.payer),
    );
    box.cleanup.push(() => host.client.close());
    const shouted = await host.client.callTool({ name: "shout", arguments: { text: "paid over http" } });
    expect(shouted.content).to.deep.equal([{ type: "text", text: "PAID OVER HTTP" }]);
    const sessionId = (shouted._meta as Record<string, { sessionId: Hex; amount: string }>)["ioi-settlement/receipt"]!.sessionId;
    expect((shouted._meta as Record<string, { amount: string }>)["ioi-settlement/receipt"]!.amount).to.equal(SHOUT.toString());
    await host.client.close();
    const payerStore = SqliteStore.open(payerDb);
    box.cleanup.push(() => payerStore.close());
    const payer = createPayer({
      deployment: { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } },
      publicClient,
      wallet: createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) }),
      store: payerStore,
    });
    await payer.closeCooperative(sessionId, { host: "127.0.0.1", port: provider.port });
    const gas = await gasPaidBy(publicClient, fx.payer.address, startBlock + 1n, await publicClient.getBlockNumber());
    expect(await publicClient.getBalance({ address: fx.provider.address })).to.equal(providerBefore + SHOUT);
    expect(await publicClient.getBalance({ address: fx.payer.address })).to.equal(payerBefore - SHOUT - gas);
  });

  it("sells server-filesystem through ioi provider: read_text_file at its price; a path outside its root is an isError result, charged as one (decision 0022)", async () => {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const shared = path.join(box.dir, "shared");
    mkdirSync(shared);
    writeFileSync(path.join(shared, "note.txt"), "sold by the line\n");
    const READ = parseEther("0.003");
    const model = "server-filesystem";
    const provider = await startProvider({
      rpcUrl: box.rpc.url,
      escrow: fx.escrow.address,
      db: path.join(box.dir, "provider.db"),
      termsFile: writeTerms(box.dir, v3Terms({ read_text_file: READ }, CAP, model)),
      model,
      key: keyOf(ROLE.provider),
      worker: [process.execPath, FILESYSTEM, shared],
    });
    box.cleanup.push(() => stopChild(provider.child));
    const startBlock = await publicClient.getBlockNumber();
    const payerBefore = await publicClient.getBalance({ address: fx.payer.address });
    const providerBefore = await publicClient.getBalance({ address: fx.provider.address });
    const payerDb = path.join(box.dir, "payer.db");
    const host = await hostWithGateway(
      gatewayArgs({ rpcUrl: box.rpc.url, escrow: fx.escrow.address, db: payerDb, provider: fx.provider.address, port: provider.port, budgets: { call: CAP, channel: parseEther("0.02"), day: parseEther("0.02") } }),
      keyOf(ROLE.payer),
    );
    box.cleanup.push(() => host.client.close());
    const read = await host.client.callTool({ name: "read_text_file", arguments: { path: path.join(shared, "note.txt") } });
    expect(JSON.stringify(read.content)).to.include("sold by the line");
    expect((read._meta as Record<string, { amount: string }>)["ioi-settlement/receipt"]).to.deep.include({ amount: READ.toString() });
    // Outside the allowed directory: the server answers with isError (the tool ran) — charged as a result, at its price.
    const outside = await host.client.callTool({ name: "read_text_file", arguments: { path: "/etc/hostname" } });
    expect(outside.isError).to.equal(true);
    expect((outside._meta as Record<string, { amount: string }>)["ioi-settlement/receipt"]).to.deep.include({ amount: READ.toString() });
    const sessionId = (read._meta as Record<string, { sessionId: Hex }>)["ioi-settlement/receipt"]!.sessionId;
    await host.client.close();

    const payerStore = SqliteStore.open(payerDb);
    box.cleanup.push(() => payerStore.close());
    const payer = createPayer({
      deployment: { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } },
      publicClient,
      wallet: createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) }),
      store: payerStore,
    });
    await payer.closeCooperative(sessionId, { host: "127.0.0.1", port: provider.port });
    const endBlock = await publicClient.getBlockNumber();
    expect(await publicClient.getBalance({ address: fx.provider.address })).to.equal(providerBefore + 2n * READ);
    const gas = await gasPaidBy(publicClient, fx.payer.address, startBlock + 1n, endBlock);
    expect(await publicClient.getBalance({ address: fx.payer.address })).to.equal(payerBefore - 2n * READ - gas);
  });
});
