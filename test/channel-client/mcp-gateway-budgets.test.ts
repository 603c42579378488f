/**
 * `ioi mcp`'s budgets (issue 30 item 1, decision 0033), in-process: an SDK host over an in-memory MCP transport, the
 * gateway, a provider node on v3 terms. A call dearer than the per-call budget, a call past the day's budget (also
 * after a gateway restart: the day is persisted) and a call that would need the channel to hold more than its budget
 * are refused with one sentence and pay nothing; the gateway tops the channel up within the budget; balances exact.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { createWalletClient, custom, type PublicClient } from "viem";
import { hardhat } from "viem/chains";

import { signSessionKeyGrant } from "../../channel-client/core/session-key";
import { termsHashOf } from "../../channel-client/core/terms";
import { McpGateway } from "../../channel-client/node/mcp-gateway";
import { ProviderNode, type McpHandler } from "../../channel-client/node/provider-node";
import { createPayer } from "../../channel-client/roles/payer";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { cliSandbox, runCli } from "../helpers/cli";
import { escrowFixture, hardhatAccount, ROLE } from "../helpers/fixtures";
import { gasPaidBy, v3Terms } from "../helpers/mcp-parts";

const A = 100n;
const B = 1_000n;
const CAP = 500n;
const MODEL = "model:tools@1";
const DAY = 86_400_000;

/** A worker that answers every tool with its name, and lists two tools. */
const handler: McpHandler = async (request) => {
  if (request.method === "tools/list") return { result: { tools: [{ name: "a", inputSchema: { type: "object" } }, { name: "b", inputSchema: { type: "object" } }] }, units: 1n };
  const name = (request.params as { name: string }).name;
  return { result: { content: [{ type: "text", text: name }] }, units: 1n };
};

describe("ioi mcp budgets: per call, per UTC day (persisted), per channel; top-ups within the budget", function () {
  this.timeout(120_000);
  const box = cliSandbox("ioi-mcp-budgets-");

  it("refuses over-budget calls with one sentence and pays nothing for them; balances exact after settlement", async () => {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const providerStore = SqliteStore.open(path.join(box.dir, "provider.db"));
    const node = await ProviderNode.start({ account: fx.provider, publicClient, domain: fx.domain, store: providerStore, pricing: v3Terms({ a: A, b: B }, CAP, MODEL), handler, modelSnapshotId: MODEL, keepResults: true });
    const payerStore = SqliteStore.open(path.join(box.dir, "payer.db"));
    box.cleanup.push(async () => {
      await node.stop();
      await providerStore.close();
      await payerStore.close();
    });
    const payer = createPayer({
      deployment: { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } },
      publicClient,
      wallet: createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) }),
      store: payerStore,
    });
    const startBlock = await publicClient.getBlockNumber();
    const payerBefore = await publicClient.getBalance({ address: fx.payer.address });
    const providerBefore = await publicClient.getBalance({ address: fx.provider.address });
    let now = Date.UTC(2026, 10, 26, 12);
    const start = () =>
      McpGateway.start({
        payer,
        provider: fx.provider.address,
        peer: { host: "127.0.0.1", port: node.port },
        budgets: { perCall: CAP, perChannel: 1_200n, perDay: 1_000n },
        deposit: 600n,
        statePath: path.join(box.dir, "gateway.db"),
        now: () => now,
      });
    const connect = async (gateway: McpGateway) => {
      const [hostSide, gatewaySide] = InMemoryTransport.createLinkedPair();
      await gateway.server().connect(gatewaySide);
      const host = new Client({ name: "sdk-host", version: "1" });
      await host.connect(hostSide);
      return host;
    };
    const refusal = (host: Client, name: string) =>
      host.callTool({ name, arguments: {} }).then(
        () => expect.fail(`${name} must be refused`),
        (e: Error) => e.message,
      );

    let gateway = await start();
    let host = await connect(gateway);
    expect(await refusal(host, "b")).to.match(/prepays 1000 wei, over the per-call budget of 500 wei; nothing was paid\.$/);
    for (let i = 0; i < 10; i++) expect((await host.callTool({ name: "a", arguments: {} })).content).to.deep.equal([{ type: "text", text: "a" }]);
    expect(gateway.spentToday()).to.equal(1_000n);
    expect(await refusal(host, "a")).to.match(/would bring today's spending to 1100 wei, over the daily budget of 1000 wei; nothing was paid\.$/);
    // The channel was opened with 600 and topped up once (call 7), within the channel budget.
    const sessionId = gateway.sessionId!;
    expect(payerStore.getChannel(sessionId)!.deposit).to.equal(1_200n);

    // A restart does not reset the day.
    await host.close();
    await gateway.stop();
    gateway = await start();
    host = await connect(gateway);
    expect(gateway.sessionId).to.equal(sessionId);
    expect(await refusal(host, "a")).to.match(/over the daily budget of 1000 wei/);

    // The next UTC day: two more calls fit the channel; the third would need it to hold 1300 > 1200.
    now += DAY;
    await host.callTool({ name: "a", arguments: {} });
    await host.callTool({ name: "a", arguments: {} });
    expect(await refusal(host, "a")).to.match(/would need 1300 wei, over the per-channel budget of 1200 wei; nothing was paid\.$/);
    await host.close();
    await gateway.stop();

    expect(payerStore.steps(sessionId).map((s) => s.receipt!.receipt.metering.amount)).to.deep.equal(Array(12).fill(A));
    await payer.closeCooperative(sessionId, { host: "127.0.0.1", port: node.port });
    const gas = await gasPaidBy(publicClient, fx.payer.address, startBlock + 1n, await publicClient.getBlockNumber());
    expect(await publicClient.getBalance({ address: fx.provider.address })).to.equal(providerBefore + 12n * A);
    expect(await publicClient.getBalance({ address: fx.payer.address })).to.equal(payerBefore - 12n * A - gas);
    expect(await publicClient.getBalance({ address: fx.escrow.address })).to.equal(0n);
  });

  it("pays with a session key instead of the main key: its grant's channel, its spend cap; nothing is opened or topped up", async () => {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const providerStore = SqliteStore.open(path.join(box.dir, "provider.db"));
    const node = await ProviderNode.start({ account: fx.provider, publicClient, domain: fx.domain, store: providerStore, pricing: v3Terms({ a: A, b: B }, CAP, MODEL), handler, modelSnapshotId: MODEL, keepResults: true });
    const payerStore = SqliteStore.open(path.join(box.dir, "payer.db"));
    box.cleanup.push(async () => {
      await node.stop();
      await providerStore.close();
      await payerStore.close();
    });
    const payer = createPayer({
      deployment: { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } },
      publicClient,
      wallet: createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) }),
      store: payerStore,
    });
    const peer = { host: "127.0.0.1", port: node.port };
    const { sessionId } = await payer.openChannel({ provider: fx.provider.address, peer, deposit: 1_000n });
    const key = hardhatAccount(ROLE.sessionKey);
    const grant = await signSessionKeyGrant({ account: fx.payer, domain: fx.domain, sessionId, key: key.address, expiry: 2n ** 40n, spendCap: 250n, epoch: 0n, methods: ["*"] });
    const gateway = await McpGateway.start({
      payer,
      provider: fx.provider.address,
      peer,
      budgets: { perCall: CAP, perChannel: 10_000n, perDay: 10_000n },
      sessionKey: { account: key, grant },
      statePath: path.join(box.dir, "gateway.db"),
    });
    const [hostSide, gatewaySide] = InMemoryTransport.createLinkedPair();
    await gateway.server().connect(gatewaySide);
    const host = new Client({ name: "sdk-host", version: "1" });
    await host.connect(hostSide);
    expect(gateway.sessionId).to.equal(sessionId);
    await host.callTool({ name: "a", arguments: {} });
    await host.callTool({ name: "a", arguments: {} });
    // A third call would pass the key's spend cap of 250: refused before anything is signed.
    await host.callTool({ name: "a", arguments: {} }).then(
      () => expect.fail("past the key's cap"),
      (e: Error) => expect(e.message).to.match(/spend cap of 250.*Nothing was paid\.$/),
    );
    await host.close();
    await gateway.stop();
    const steps = payerStore.steps(sessionId);
    expect(steps.map((s) => s.receipt!.receipt.metering.amount)).to.deep.equal([A, A]);
    // The tickets were signed by the session key, not by the payer's main key.
    const { recoverDigestSigner } = await import("../../channel-client/core/eip712");
    const { paymentTicketDigest } = await import("../../channel-client/core/ticket");
    for (const step of steps) expect(await recoverDigestSigner(paymentTicketDigest(fx.domain, step.ticket.ticket), step.ticket.signature)).to.equal(key.address);
    expect(payerStore.getChannel(sessionId)!.deposit).to.equal(1_000n);
  });

  it("refuses to start on other terms than agreed (the price changed) or without a provider (gone): one sentence, nothing funded", async () => {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const providerStore = SqliteStore.open(path.join(box.dir, "provider.db"));
    const node = await ProviderNode.start({ account: fx.provider, publicClient, domain: fx.domain, store: providerStore, pricing: v3Terms({ a: A }, CAP, MODEL), handler, modelSnapshotId: MODEL });
    const payerStore = SqliteStore.open(path.join(box.dir, "payer.db"));
    box.cleanup.push(async () => {
      await providerStore.close();
      await payerStore.close();
    });
    const payer = createPayer({
      deployment: { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } },
      publicClient,
      wallet: createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) }),
      store: payerStore,
    });
    const escrowBefore = await publicClient.getBalance({ address: fx.escrow.address });
    const parameters = { payer, provider: fx.provider.address, budgets: { perCall: CAP, perChannel: 1_000n, perDay: 1_000n }, statePath: path.join(box.dir, "gateway.db") };
    const agreed = termsHashOf(v3Terms({ a: A - 1n }, CAP, MODEL));
    await McpGateway.start({ ...parameters, peer: { host: "127.0.0.1", port: node.port }, expectedTermsHash: agreed }).then(
      () => expect.fail("other terms must be refused"),
      (e: Error) => expect(e.message).to.match(/not the agreed 0x[0-9a-f]{64}: the price changed; nothing was paid\.$/),
    );
    const port = node.port;
    await node.stop();
    await McpGateway.start({ ...parameters, peer: { host: "127.0.0.1", port } }).then(
      () => expect.fail("a provider that is gone must be refused"),
      (e: Error) => expect(e.message).to.match(/^MCP error -32050: The provider at 127\.0\.0\.1:\d+ did not offer its terms \(.+\)\.$/),
    );
    expect(payerStore.listChannels()).to.deep.equal([]);
    expect(await publicClient.getBalance({ address: fx.escrow.address })).to.equal(escrowBefore);
  });

  it("ioi mcp: careless inputs end in one sentence and exit 2, before any key or RPC is used", async () => {
    const base = ["mcp", "--provider", "0x90F79bf6EB2c4f870365E785982E1f101E93b906", "--peer", "127.0.0.1:7000", "--budget-call", "10", "--budget-channel", "100", "--budget-day", "50"];
    const cases: Array<[string[], RegExp]> = [
      [["mcp", "--peer", "127.0.0.1:7000"], /--provider/],
      [[...base.slice(0, 2), "nobody", ...base.slice(3)], /--provider must be an address; received "nobody"/],
      [[...base, "--deposit", "101"], /--deposit must be more than 0 and at most --budget-channel \(100\)/],
      [[...base, "--http", "70000"], /--http must be a port of at most 65535/],
      [[...base.slice(0, 3), "--peer", "10.1.2.3:7000", ...base.slice(5)], /remote|loopback|allow-remote/i],
      [[...base, "--budget-channel", "0"], /--budget-channel must be more than zero/],
    ];
    for (const [argv, message] of cases) {
      const result = await runCli(argv, { IOI_PRIVATE_KEY: undefined });
      expect(result.code, argv.join(" ")).to.equal(2);
      expect(result.err, argv.join(" ")).to.match(message);
    }
  });
});
