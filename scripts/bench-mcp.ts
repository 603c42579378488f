/**
 * Issue 30 item 7 figures for `npm run bench -- --mcp`:
 *   - the gateway's overhead per call: an SDK host calling `server-everything`'s `echo` through `ioi mcp` (in this
 *     process, an in-memory MCP transport), the channel and a provider node fronting the server, against the same
 *     server called directly by an SDK client over stdio — at 1 and 16 calls in flight (p50, p99, calls/s);
 *   - what a call costs in gas: a channel (open + cooperative close, from this run's measurement) spread over 1, 10,
 *     1,000 and 100,000 calls, against one ERC-20 transfer per call (measured here on LaborGas; x402's `exact`
 *     scheme settles each call with an EIP-3009 `transferWithAuthorization`, which LaborGas does not implement —
 *     its gas is a transfer plus an ECDSA recovery and a nonce write, so the measured transfer is a lower bound).
 * Everything runs on the in-process Hardhat network.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import hre from "hardhat";
import { createWalletClient, custom, parseEther, type PublicClient } from "viem";
import { hardhat } from "viem/chains";

import { openChannel, closeCooperative } from "../channel-client/chain/escrow";
import { NATIVE_ASSET, termsHashOf, type TermsDocumentV3 } from "../channel-client/core/terms";
import { McpGateway } from "../channel-client/node/mcp-gateway";
import { McpWorker } from "../channel-client/node/mcp-worker";
import { ProviderNode } from "../channel-client/node/provider-node";
import { createPayer } from "../channel-client/roles/payer";
import { SqliteStore } from "../channel-client/store/sqlite-store";
import { escrowFixture, makeTerms, signedCooperativeSummary } from "../test/helpers/fixtures";

const EVERYTHING = path.join(__dirname, "..", "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const MODEL = "server-everything";
const TERMS: TermsDocumentV3 = {
  version: "3",
  pricing: { perInvocation: 1_000n, perUnit: null, capPerCall: 1_000n, tools: { echo: 1_000n } },
  models: [MODEL],
  disputes: { windowAfterSettlement: 3600n, penalties: {}, refundsFromBond: false },
  requiredReceipts: [],
};

export type LatencyFigures = { inflight: number; calls: number; p50Ms: number; p99Ms: number; callsPerSecond: number };
export type McpBench = {
  direct: LatencyFigures[];
  gateway: LatencyFigures[];
  overheadP50Ms: number[];
  gas: { channelOpenAndClose: number; erc20Transfer: number; transferSource: string; perCall: Array<{ calls: number; channelGasPerCall: number; transferGasPerCall: number; ratio: number }> };
};

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/** `calls` echo calls through `client`, `inflight` at a time; latency of each and the throughput. */
async function measure(client: Client, calls: number, inflight: number): Promise<LatencyFigures> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (next < calls) {
        const i = next++;
        const t = performance.now();
        await client.callTool({ name: "echo", arguments: { message: `call ${i}` } });
        latencies.push(performance.now() - t);
      }
    }),
  );
  const ms = performance.now() - started;
  latencies.sort((a, b) => a - b);
  return { inflight, calls, p50Ms: round(quantile(latencies, 0.5)), p99Ms: round(quantile(latencies, 0.99)), callsPerSecond: Math.round((calls / ms) * 1000) };
}

const round = (x: number) => Math.round(x * 100) / 100;

export async function benchMcp(quick: boolean, log: (line: string) => void): Promise<McpBench> {
  const calls = quick ? 100 : 400;
  const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-bench-mcp-"));
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  try {
    // The same server, called directly.
    const direct = new Client({ name: "bench-direct", version: "1" });
    await direct.connect(new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, "stdio"], stderr: "ignore" }));
    const directFigures: LatencyFigures[] = [];
    for (const inflight of [1, 16]) directFigures.push(await measure(direct, calls, inflight));
    await direct.close();

    // Through ioi mcp → channel → provider node → the server.
    const worker = await McpWorker.start({ command: process.execPath, args: [EVERYTHING, "stdio"] });
    const providerStore = SqliteStore.open(path.join(dir, "provider.db"));
    const node = await ProviderNode.start({ account: fx.provider, publicClient, domain: fx.domain, store: providerStore, pricing: TERMS, handler: worker.handler, modelSnapshotId: MODEL, keepResults: true });
    const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
    const payer = createPayer({
      deployment: { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } },
      publicClient,
      wallet: createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) }),
      store: payerStore,
    });
    const gateway = await McpGateway.start({
      payer,
      provider: fx.provider.address,
      peer: { host: "127.0.0.1", port: node.port },
      budgets: { perCall: 1_000n, perChannel: parseEther("1"), perDay: parseEther("1") },
      deposit: parseEther("1"),
      statePath: path.join(dir, "gateway.db"),
    });
    const [hostSide, gatewaySide] = InMemoryTransport.createLinkedPair();
    await gateway.server().connect(gatewaySide);
    const host = new Client({ name: "bench-host", version: "1" });
    await host.connect(hostSide);
    const gatewayFigures: LatencyFigures[] = [];
    for (const inflight of [1, 16]) gatewayFigures.push(await measure(host, calls, inflight));
    await host.close();
    await gateway.stop();
    await node.stop();
    await worker.stop();
    await providerStore.close();
    await payerStore.close();

    // Gas: a channel opened and closed cooperatively, against one ERC-20 transfer per call.
    const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms: makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(TERMS), nonce: 77n }), amount: parseEther("1") });
    // Paid to both sides (a close that pays the provider part and refunds the rest), as in gas-report.json.
    const agreed = await signedCooperativeSummary({ domain: fx.domain, sessionId: opened.sessionId, ref: opened.ref, finalSeq: 100n, finalAmount: parseEther("0.4") });
    const closed = await closeCooperative({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, ref: opened.ref, ...agreed });
    const channelOpenAndClose = Number(opened.gasUsed + closed.gasUsed);
    const hash = await fx.token.write.transfer([fx.stranger.account.address, 1_000n], { account: fx.funder.account });
    const erc20Transfer = Number((await publicClient.getTransactionReceipt({ hash })).gasUsed);
    const perCall = [1, 10, 1_000, 100_000].map((n) => ({
      calls: n,
      channelGasPerCall: Math.round(channelOpenAndClose / n),
      transferGasPerCall: erc20Transfer,
      ratio: Number((channelOpenAndClose / n / erc20Transfer).toPrecision(3)),
    }));
    const result: McpBench = {
      direct: directFigures,
      gateway: gatewayFigures,
      overheadP50Ms: gatewayFigures.map((g, i) => round(g.p50Ms - directFigures[i]!.p50Ms)),
      gas: { channelOpenAndClose, erc20Transfer, transferSource: "LaborGas transfer measured here (x402 exact = EIP-3009 transferWithAuthorization: this plus signature recovery and a nonce write)", perCall },
    };
    log(`  ${calls} echo calls each way`);
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function mcpRows(b: McpBench, log: (line: string) => void): void {
  for (const [i, g] of b.gateway.entries()) {
    const d = b.direct[i]!;
    log(`  in flight ${String(g.inflight).padStart(2)}: direct p50 ${d.p50Ms} ms p99 ${d.p99Ms} ms ${d.callsPerSecond}/s; via ioi mcp p50 ${g.p50Ms} ms p99 ${g.p99Ms} ms ${g.callsPerSecond}/s`);
  }
  log(`  gas: channel open + cooperative close ${b.gas.channelOpenAndClose}; ERC-20 transfer ${b.gas.erc20Transfer}`);
  for (const r of b.gas.perCall) log(`  ${String(r.calls).padStart(7)} calls: channel ${r.channelGasPerCall} gas/call vs transfer ${r.transferGasPerCall} gas/call (×${r.ratio})`);
}
