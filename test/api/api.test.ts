/**
 * Issue 29 item 7 — the control API, driven the way an integrator drives it: a client that knows only
 * schemas/openrpc.json, plain `fetch` and a plain WebSocket (test/api/schema-client.ts imports nothing from src/).
 * The server side (the API server, an in-process provider node on the embedded devnet) is started with the SDK.
 *
 * - a channel opened, paid and closed through the API: receipts stream over the subscription, status and
 *   balances read back, phases Open → Settled, and the exact balance change of every account of the book;
 * - a unilateral close through the API: the `alerts` topic warns of the closing window, then says it passed,
 *   `payer.finalize` pays out, exact balances again;
 * - auth (no token, a wrong token, over HTTP and the WebSocket upgrade; the token file's mode), a refused
 *   non-loopback bind, and bad input of every kind answered with one-sentence JSON-RPC errors, the server alive.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { mkdtempSync, rmSync, statSync, writeFileSync, chmodSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createWalletClient, custom, defineChain, getAddress, parseEther, type PublicClient } from "viem";
import WebSocket from "ws";

import { loadOrCreateToken, startApiServer, isLoopback, type RunningApiServer } from "../../channel-client/api/server";
import { SubscriptionHub } from "../../channel-client/api/subscriptions";
import { echoHandler } from "../../channel-client/node/echo-worker";
import type { Deployment } from "../../channel-client/roles/deployment";
import { startProvider, type RunningProvider } from "../../channel-client/roles/provider";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { PricingTerms } from "../../channel-client/core/terms";
import type { Wallet } from "../../channel-client/chain/escrow";
import { hardhatAccount } from "../helpers/fixtures";
import { SYS, systemFixture } from "../helpers/system";
import { expectDeltas, snapshot } from "../adversarial/helpers";
import { DOCUMENT, httpCall, httpRaw, RpcCallError, WsSession } from "./schema-client";

const PRICE = parseEther("0.001");
const DEPOSIT = parseEther("1");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const TOKEN = "t".repeat(16) + "0123456789abcdef0123456789abcdef";
const hardhat = defineChain({ id: 31337, name: "Hardhat", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: ["http://127.0.0.1:8545"] } } });
const echo = (i: number) => ({ jsonrpc: "2.0", id: `call-${i}`, method: "tools/echo", params: { text: `call ${i}` } });

async function rejected(promise: Promise<unknown>): Promise<RpcCallError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof RpcCallError) return error;
    throw error;
  }
  throw new Error("the call was expected to fail");
}

describe("control API (issue 29 item 7)", function () {
  this.timeout(120_000);
  let dir: string;
  const cleanup: Array<() => Promise<unknown>> = [];

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-api-"));
  });
  afterEach(async () => {
    while (cleanup.length > 0) await cleanup.pop()!().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  /** The system, a provider node on it, and the API server acting as the payer. */
  async function apiSystem(options: { warnSeconds?: bigint } = {}) {
    const s = await loadFixture(systemFixture);
    const publicClient = s.publicClient as unknown as PublicClient;
    const deployment: Deployment = {
      chainId: 31337,
      contracts: { GasEscrow: s.escrow.address, GigEscrow: s.gigs.address, DisputeManager: s.disputes.address, ProviderRegistry: s.registry.address, LaborGas: s.token.address },
    };
    const wallet = (account: ReturnType<typeof hardhatAccount>) => createWalletClient({ account, chain: hardhat, transport: custom(hre.network.provider) }) as unknown as Wallet;
    const providerStore = SqliteStore.open(path.join(dir, "provider.db"));
    const provider: RunningProvider = await startProvider({
      deployment,
      publicClient,
      wallet: wallet(hardhatAccount(SYS.provider)),
      store: providerStore,
      pricing,
      handler: echoHandler,
      modelSnapshotId: "worker:echo@1",
      port: 0,
      watch: false,
    });
    cleanup.push(async () => {
      await provider.stop();
      await providerStore.close();
    });
    const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
    const server: RunningApiServer = await startApiServer({
      context: { deployment, publicClient, wallet: wallet(hardhatAccount(SYS.payer)), store: payerStore, hub: new SubscriptionHub(), gigs: new Set() },
      token: TOKEN,
      port: 0,
      pollMs: 50,
      stallMs: 0,
      ...(options.warnSeconds !== undefined ? { warnSeconds: options.warnSeconds } : {}),
    });
    cleanup.push(async () => {
      await server.close();
      await payerStore.close();
    });
    return { s, server, provider, payer: hardhatAccount(SYS.payer).address, providerAddress: getAddress(hardhatAccount(SYS.provider).address) };
  }

  it("opens a channel, pays five calls with receipts streamed over the subscription, reads status and balances, closes: exact balances", async () => {
    const { s, server, provider, payer, providerAddress } = await apiSystem();
    const snap = await snapshot(s);
    const ws = await WsSession.open(server.wsUrl, TOKEN);
    cleanup.push(() => ws.close());

    const info = await httpCall(server.url, TOKEN, "node.info");
    expect(info).to.deep.include({ apiVersion: "1.0.0", chainId: 31337, account: getAddress(payer) });
    const receiptsSub = await ws.call("subscribe", { topic: "receipts" });
    const phasesSub = await ws.call("subscribe", { topic: "phases" });
    expect(receiptsSub).to.match(/^0x[0-9a-f]{8}$/);
    expect(phasesSub).to.not.equal(receiptsSub);

    const opened = await httpCall(server.url, TOKEN, "payer.open", { provider: providerAddress, port: provider.port, deposit: DEPOSIT.toString(), expectedPrice: PRICE.toString() });
    expect(opened.sessionId).to.match(/^0x[0-9a-f]{64}$/);
    expect(opened.deposit).to.equal(DEPOSIT.toString());
    const sessionId: string = opened.sessionId;
    const open = await ws.next((n) => n.topic === "phases" && n.event.sessionId === sessionId);
    expect(open.subscription).to.equal(phasesSub);
    expect(open.event).to.deep.include({ kind: "channel", phase: "Open", previous: null });

    // Three single calls over HTTP, two pipelined over the WebSocket.
    for (let i = 1; i <= 3; i++) {
      const outcome = await httpCall(server.url, TOKEN, "payer.invoke", { sessionId, request: echo(i) });
      expect(outcome.seq).to.equal(String(i));
      expect(outcome.charged).to.equal(PRICE.toString());
      expect(outcome.receipt.receipt.seq).to.equal(String(i));
    }
    const streamed = await ws.call("payer.stream", { sessionId, requests: [echo(4), echo(5)], inflight: 2 });
    expect(streamed.outcomes.map((o: { seq: string }) => o.seq)).to.deep.equal(["4", "5"]);

    // One receipt notification per paid call, on the receipts subscription, in seq order, each the same leaf the call answered.
    const receipts = ws.notifications.filter((n) => n.topic === "receipts");
    expect(receipts.map((n) => n.event.seq)).to.deep.equal(["1", "2", "3", "4", "5"]);
    expect(receipts.every((n) => n.subscription === receiptsSub && n.event.sessionId === sessionId && n.event.charged === PRICE.toString())).to.equal(true);
    expect(receipts[4]!.event.leaf).to.equal(streamed.outcomes[1].leaf);

    const status = await httpCall(server.url, TOKEN, "payer.status", { sessionId });
    expect(status).to.deep.include({ sessionId, role: "payer", status: "open", phase: "Open", deposit: DEPOSIT.toString(), newestSeq: "5", spent: (5n * PRICE).toString(), receipts: 5, provider: providerAddress });
    const listed = await httpCall(server.url, TOKEN, "payer.list", { status: "open" });
    expect(listed.map((c: { sessionId: string }) => c.sessionId)).to.deep.equal([sessionId]);

    const closed = await ws.call("payer.close", { sessionId });
    expect(closed).to.deep.include({ mode: "cooperative", paidToProvider: (5n * PRICE).toString(), refundedToFunder: (DEPOSIT - 5n * PRICE).toString(), fee: "0" });
    const settled = await ws.next((n) => n.topic === "phases" && n.event.sessionId === sessionId && n.event.phase === "Settled");
    expect(settled.event.previous).to.equal("Open");

    // Balances as the API reports them are the chain's, and every account of the book moved by exactly this much.
    const balances = await httpCall(server.url, TOKEN, "balances.get", {});
    expect(balances.address).to.equal(getAddress(payer));
    expect(balances.eth).to.equal((await s.publicClient.getBalance({ address: payer })).toString());
    expect(balances.claimable).to.equal("0");
    const providerBalances = await httpCall(server.url, TOKEN, "balances.get", { address: providerAddress });
    expect(providerBalances.eth).to.equal((await s.publicClient.getBalance({ address: providerAddress })).toString());
    expect(providerBalances.providerBond.active).to.equal(parseEther("500").toString());
    await expectDeltas(s, snap, { ETH: { payer: -5n * PRICE, provider: 5n * PRICE } });

    expect(await ws.call("unsubscribe", { subscription: receiptsSub })).to.equal(true);
    const again = await rejected(ws.call("unsubscribe", { subscription: receiptsSub }));
    expect(again.error.data).to.deep.equal({ reason: "NOT_FOUND", retryable: false });
  });

  it("a unilateral close through the API: alerts say the window is closing, then that it passed; payer.finalize pays out exactly", async () => {
    const { s, server, provider, providerAddress } = await apiSystem({ warnSeconds: 3600n });
    const snap = await snapshot(s);
    const ws = await WsSession.open(server.wsUrl, TOKEN);
    cleanup.push(() => ws.close());
    const opened = await ws.call("payer.open", { provider: providerAddress, port: provider.port, deposit: DEPOSIT.toString(), challengeDuration: "3600" });
    const sessionId: string = opened.sessionId;
    await ws.call("subscribe", { topic: "alerts", filter: { sessionId } });
    await ws.call("payer.stream", { sessionId, requests: [echo(1), echo(2)] });
    const closed = await ws.call("payer.close", { sessionId, mode: "unilateral" });
    expect(closed.mode).to.equal("unilateral");
    // The closing ticket is one past the last paid call and covers every receipt: it pays for the two calls, nothing more.
    expect(closed.state).to.deep.include({ seq: "3", amount: (2n * PRICE).toString() });

    const closing = await ws.next((n) => n.topic === "alerts" && n.event.alert === "window.closing");
    expect(closing.event).to.deep.include({ sessionId, severity: "warning", finalizesAt: closed.finalizesAt });
    const early = await rejected(ws.call("payer.finalize", { sessionId }));
    expect(early.error.data!.reason).to.equal("REFUSED");
    expect(early.error.data!.retryable).to.equal(false);

    await time.increaseTo(BigInt(closed.finalizesAt) + 1n);
    const passed = await ws.next((n) => n.topic === "alerts" && n.event.alert === "window.passed");
    expect(passed.event).to.deep.include({ sessionId, severity: "action" });
    const settled = await ws.call("payer.finalize", { sessionId });
    expect(settled).to.deep.include({ paidToProvider: (2n * PRICE).toString(), refundedToFunder: (DEPOSIT - 2n * PRICE).toString() });
    expect((await ws.call("payer.status", { sessionId })).status).to.equal("settled");
    // Each alert was raised once.
    expect(ws.notifications.filter((n) => n.event.alert === "window.closing")).to.have.length(1);
    expect(ws.notifications.filter((n) => n.event.alert === "window.passed")).to.have.length(1);
    await expectDeltas(s, snap, { ETH: { payer: -2n * PRICE, provider: 2n * PRICE } });
  });

  it("auth: no token or a wrong one gets 401 over HTTP and a refused upgrade; the token file is created with mode 0600", async () => {
    const { server } = await apiSystem();
    const request = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "node.info" });
    const headerSets: Record<string, string>[] = [{}, { authorization: `Bearer ${TOKEN.slice(0, -1)}x` }, { authorization: `Basic ${TOKEN}` }, { authorization: "Bearer" }];
    for (const headers of headerSets) {
      const answer = await httpRaw(server.url, request, headers);
      expect(answer.status).to.equal(401);
      expect(answer.body.error).to.deep.equal({ code: -32004, message: "A valid bearer token is required (Authorization: Bearer <token>).", data: { reason: "UNAUTHORIZED", retryable: false } });
    }
    let refused = "";
    await WsSession.open(server.wsUrl, undefined).catch((e: Error) => (refused = e.message));
    expect(refused).to.equal("upgrade refused with HTTP 401");
    await WsSession.open(server.wsUrl, "wrong-token-wrong-token-wrong-token").catch((e: Error) => (refused = `${e.message}!`));
    expect(refused).to.equal("upgrade refused with HTTP 401!");
    expect((await httpRaw(server.url, request, { authorization: `Bearer ${TOKEN}` })).status).to.equal(200);

    const file = path.join(dir, "sub", "api.token");
    const created = loadOrCreateToken(file);
    expect(created.created).to.equal(true);
    expect(created.token).to.match(/^[0-9a-f]{64}$/);
    expect(statSync(file).mode & 0o777).to.equal(0o600);
    expect(loadOrCreateToken(file)).to.deep.equal({ token: created.token, created: false });
    chmodSync(file, 0o644);
    expect(() => loadOrCreateToken(file)).to.throw(`The token file ${file} can be read by others (mode 644): chmod 600 it or remove it.`);
    writeFileSync(path.join(dir, "short.token"), "short\n", { mode: 0o600 });
    expect(() => loadOrCreateToken(path.join(dir, "short.token"))).to.throw(/holds fewer than 32 characters/);
  });

  it("refuses a non-loopback bind unless told to listen publicly", async () => {
    expect(["127.0.0.1", "127.3.4.5", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"].every(isLoopback)).to.equal(true);
    expect(["0.0.0.0", "::", "192.168.1.2", "10.0.0.1", "example.com", "128.0.0.1"].some(isLoopback)).to.equal(false);
    const context = { hub: new SubscriptionHub() } as never;
    let message = "";
    await startApiServer({ context, token: TOKEN, host: "0.0.0.0", port: 0 }).catch((e: Error) => (message = e.message));
    expect(message).to.equal("Refusing to listen on 0.0.0.0, which is not loopback: pass --allow-public to expose the API beyond this machine.");
  });

  it("bad input: one-sentence JSON-RPC errors with stable reasons and retry hints; garbage never takes the server down", async () => {
    const { server, providerAddress } = await apiSystem();
    const auth = { authorization: `Bearer ${TOKEN}` };
    const post = (body: string | Uint8Array) => httpRaw(server.url, body, auth);
    const err = async (body: unknown) => (await post(JSON.stringify(body))).body.error;

    expect((await post("{not json")).body.error).to.deep.equal({ code: -32700, message: "The request is not valid JSON.", data: { reason: "PARSE_ERROR", retryable: false } });
    expect((await post(new Uint8Array([0xff, 0xfe, 0x00, 0x01]))).body.error.data.reason).to.equal("PARSE_ERROR");
    expect((await err({ jsonrpc: "1.0", id: 1, method: "node.info" })).message).to.equal('A request must carry jsonrpc "2.0".');
    expect((await err([])).data.reason).to.equal("INVALID_REQUEST");
    expect((await err(42)).code).to.equal(-32600);
    expect(await err({ jsonrpc: "2.0", id: 1, method: "payer.steal" })).to.deep.equal({
      code: -32601,
      message: 'There is no method "payer.steal"; node.info and schemas/openrpc.json list them.',
      data: { reason: "METHOD_NOT_FOUND", retryable: false },
    });
    expect((await err({ jsonrpc: "2.0", id: 1, method: "toString" })).data.reason).to.equal("METHOD_NOT_FOUND");
    const invalid = [
      [{ method: "payer.open", params: { port: 1, deposit: "1" } }, "payer.open: params.provider is required."],
      [{ method: "payer.open", params: { provider: providerAddress, port: 70000, deposit: "1" } }, "payer.open: params.port must be a TCP port from 1 to 65535; received 70000."],
      [{ method: "payer.open", params: { provider: providerAddress, port: 1, deposit: 1 } }, "payer.open: params.deposit must be a decimal string above zero; received 1."],
      [{ method: "payer.open", params: { provider: providerAddress, port: 1, deposit: "0" } }, 'payer.open: params.deposit must be a decimal string above zero; received "0".'],
      [{ method: "payer.open", params: { provider: "0x12", port: 1, deposit: "1" } }, 'payer.open: params.provider must be an address (0x and 40 hex digits); received "0x12".'],
      [{ method: "payer.status", params: { sessionId: `0x${"a".repeat(64)}`, extra: 1 } }, 'payer.status: params has an unknown field "extra".'],
      [{ method: "payer.status", params: [`0x${"a".repeat(64)}`] }, "payer.status: params must be an object of named parameters."],
      [{ method: "payer.stream", params: { sessionId: `0x${"a".repeat(64)}`, requests: [] } }, "payer.stream: params.requests must be from 1 to 256 request objects; received []."],
      [{ method: "gigs.read", params: { gigId: "99999999999999999999" } }, "params.gigId must be below 2^64; received 99999999999999999999."],
    ] as const;
    for (const [request, message] of invalid) {
      const error = await err({ jsonrpc: "2.0", id: 7, ...request });
      expect(error.message).to.equal(message);
      expect(error.code).to.equal(-32602);
      expect(error.data).to.deep.equal({ reason: "INVALID_PARAMS", retryable: false });
    }
    expect(await err({ jsonrpc: "2.0", id: 1, method: "payer.status", params: { sessionId: `0x${"a".repeat(64)}` } })).to.deep.equal({
      code: -32002,
      message: `The store holds no session 0x${"a".repeat(64)}.`,
      data: { reason: "NOT_FOUND", retryable: false },
    });
    expect((await err({ jsonrpc: "2.0", id: 1, method: "subscribe", params: { topic: "receipts" } })).data.reason).to.equal("NEEDS_WEBSOCKET");
    // A provider node that is not there: the SDK could not reach it, and saying so tells the client to retry later.
    const down = await err({ jsonrpc: "2.0", id: 1, method: "payer.open", params: { provider: providerAddress, port: 9, deposit: "1" } });
    expect(down.code).to.equal(-32001);
    expect(down.data).to.deep.include({ reason: "UNAVAILABLE", retryable: true });
    expect(down.message.split(". ").length).to.equal(1);

    // Sizes: an oversized body is refused with 413, a batch is bounded; a notification gets no answer.
    const huge = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "node.info", params: { pad: "x".repeat(1 << 20) } });
    const tooLarge = await post(huge);
    expect(tooLarge.status).to.equal(413);
    expect(tooLarge.body.error.data.reason).to.equal("TOO_LARGE");
    const batch = Array.from({ length: 65 }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "node.info" }));
    expect((await err(batch)).message).to.equal("A batch may hold at most 64 requests; it held 65.");
    const mixed = (await post(JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "node.info" }, { jsonrpc: "2.0", method: "node.info" }, { nope: true }]))).body;
    expect(mixed.map((a: { id: unknown }) => a.id)).to.deep.equal([1, null]);
    expect(mixed[1].error.data.reason).to.equal("INVALID_REQUEST");
    expect((await post(JSON.stringify({ jsonrpc: "2.0", method: "node.info" }))).status).to.equal(204);

    // WebSocket garbage: a text frame that is not JSON, a binary frame, a subscribe with a bad topic — answered, connection kept.
    const ws = await WsSession.open(server.wsUrl, TOKEN);
    cleanup.push(() => ws.close());
    ws.socket.send("}}}");
    ws.socket.send(Buffer.from([1, 2, 3]), { binary: true } as never);
    const badTopic = await ws.send({ jsonrpc: "2.0", id: 900, method: "subscribe", params: { topic: "everything" } });
    expect(badTopic.error!.message).to.equal('subscribe: params.topic must be receipts, phases, cases, alerts or streams; received "everything".');
    expect((await ws.call("node.info")).chainId).to.equal(31337);
    expect(ws.raw.map((r) => r.error!.data!.reason)).to.deep.equal(["PARSE_ERROR", "PARSE_ERROR"]);
    // An over-long frame closes that socket with 1009 (message too big); the server goes on serving others.
    const big = new WebSocket(server.wsUrl, { headers: auth });
    const code = await new Promise<number>((resolve) => {
      big.on("open", () => big.send("x".repeat((1 << 20) + 1)));
      big.on("close", (c: number) => resolve(c));
      big.on("error", () => undefined);
    });
    expect(code).to.equal(1009);
    expect((await httpCall(server.url, TOKEN, "node.info")).chainId).to.equal(31337);
  });

  it("the published OpenRPC document and the server agree: every method the document lists is answered, and every method answered is listed", async () => {
    const { server } = await apiSystem();
    expect(DOCUMENT.openrpc).to.match(/^1\.\d+\.\d+$/);
    const listed = DOCUMENT.methods.map((m) => m.name);
    expect(new Set(listed).size).to.equal(listed.length);
    const ws = await WsSession.open(server.wsUrl, TOKEN);
    cleanup.push(() => ws.close());
    for (const method of DOCUMENT.methods) {
      // With no params, every listed method is known: it answers, or names what is missing — never METHOD_NOT_FOUND.
      const answer = await ws.send({ jsonrpc: "2.0", id: 10_000 + listed.indexOf(method.name), method: method.name, params: {} });
      const required = method.params.filter((d) => d.required).map((d) => d.name);
      if (required.length > 0) expect(answer.error?.message, method.name).to.equal(`${method.name}: params.${required[0]} is required.`);
      else expect(answer.error?.data?.reason ?? "ok", method.name).to.not.equal("METHOD_NOT_FOUND");
    }
  });
});
