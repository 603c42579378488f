/**
 * Adversarial suite, issue 30 items 5 and 6 (decision 0033): `ioi mcp` between a host built from the MCP SDK and
 * `ioi provider`.
 *
 * - Exactly once: the gateway is SIGKILLed while the provider runs a paid call, and the provider is SIGKILLed while
 *   the worker runs one; the host retries each with the same idempotency key and gets the result, paid once.
 * - Hostile worker: it floods output, never answers, answers under another id, or exits mid-call; each call ends in
 *   one clear MCP error, is charged nothing, and the next call is served.
 * - Hostile host: malformed and oversized requests over Streamable HTTP get a JSON-RPC error each; the gateway keeps
 *   serving a well-formed host.
 *
 * Every scenario ends in a cooperative close and asserts the provider's, the payer's and the escrow's balances
 * exactly (the payer's gas added back from the blocks it sent transactions in).
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import Database from "better-sqlite3";
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createWalletClient, custom, parseEther, type Hex, type PublicClient } from "viem";
import { hardhat } from "viem/chains";

import { createPayer } from "../../channel-client/roles/payer";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { cliSandbox } from "../helpers/cli";
import { escrowFixture, ROLE } from "../helpers/fixtures";
import { EVERYTHING, gasPaidBy, gatewayArgs, hostWithGateway, keyOf, ROOT, startProvider, stopChild, v3Terms, writeTerms, type ProviderProcess } from "../helpers/mcp-parts";

const LONG = parseEther("0.004");
const FINE = parseEther("0.001");
const CAP = parseEther("0.005");
const KEY = "ioi-settlement/idempotency-key";
const LONG_TEXT = "Long running operation completed. Duration: 3 seconds, Steps: 3.";

type Fx = Awaited<ReturnType<typeof escrowFixture>>;
const receiptOf = (result: { _meta?: unknown }) => (result._meta as Record<string, { amount: string; seq: string; sessionId: Hex }>)["ioi-settlement/receipt"]!;

/** Resolves once `query` on the SQLite file at `file` returns a row (polled; bounded by `deadlineMs`). */
async function rowAppears(file: string, query: string, deadlineMs = 60_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      const db = new Database(file, { readonly: true, fileMustExist: true });
      try {
        if (db.prepare(query).get() !== undefined) return;
      } finally {
        db.close();
      }
    } catch {
      // not created yet
    }
    if (Date.now() > until) throw new Error(`no row for ${query} in ${file} within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Waits until a 3-second call that the gateway has just recorded is running at the provider. The gateway's row is
 * durable before its ticket is signed and sent, and nothing is durable at the provider until the worker answers, so
 * a kill right after the row could land before the ticket left (CI on 00fac85 failed once that way: the provider
 * never ran k1). A second is far more than signing and sending take, and well inside the call's three.
 */
const midCall = () => new Promise((resolve) => setTimeout(resolve, 1_000));

/** Closes the channel cooperatively (in-process payer on the gateway's store) and checks every balance exactly. */
async function settleAndCheck(fx: Fx, payerDb: string, provider: ProviderProcess, sessionId: Hex, before: { block: bigint; payer: bigint; provider: bigint }, paid: bigint) {
  const publicClient = fx.publicClient as unknown as PublicClient;
  const store = SqliteStore.open(payerDb);
  try {
    const payer = createPayer({
      deployment: { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } },
      publicClient,
      wallet: createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) }),
      store,
    });
    await payer.closeCooperative(sessionId, { host: "127.0.0.1", port: provider.port });
    const gas = await gasPaidBy(publicClient, fx.payer.address, before.block + 1n, await publicClient.getBlockNumber());
    expect(await publicClient.getBalance({ address: fx.provider.address })).to.equal(before.provider + paid);
    expect(await publicClient.getBalance({ address: fx.payer.address })).to.equal(before.payer - paid - gas);
    expect(await publicClient.getBalance({ address: fx.escrow.address })).to.equal(0n);
  } finally {
    await store.close();
  }
}

async function balances(fx: Fx) {
  const publicClient = fx.publicClient as unknown as PublicClient;
  return { block: await publicClient.getBlockNumber(), payer: await publicClient.getBalance({ address: fx.payer.address }), provider: await publicClient.getBalance({ address: fx.provider.address }) };
}

describe("adversarial: ioi mcp — exactly once, hostile workers, hostile hosts (issue 30)", function () {
  this.timeout(360_000);
  const box = cliSandbox("ioi-mcp-adv-");

  it("gateway SIGKILLed mid-call, then provider SIGKILLed mid-call: each retry with the same key gets the result, paid once", async () => {
    const fx = await loadFixture(escrowFixture);
    const model = "server-everything";
    const termsFile = writeTerms(box.dir, v3Terms({ "trigger-long-running-operation": LONG }, CAP, model));
    const providerDb = path.join(box.dir, "provider.db");
    const start = (port?: number) =>
      startProvider({ rpcUrl: box.rpc.url, escrow: fx.escrow.address, db: providerDb, termsFile, model, key: keyOf(ROLE.provider), worker: [process.execPath, EVERYTHING, "stdio"], ...(port ? { port } : {}) });
    let provider = await start();
    box.cleanup.push(() => stopChild(provider.child));
    const before = await balances(fx);
    const payerDb = path.join(box.dir, "payer.db");
    const gatewayDb = path.join(box.dir, "mcp-gateway.db");
    const args = gatewayArgs({ rpcUrl: box.rpc.url, escrow: fx.escrow.address, db: payerDb, provider: fx.provider.address, port: provider.port, budgets: { call: CAP, channel: parseEther("0.05"), day: parseEther("0.05") } });
    const long = (key: string) => ({ name: "trigger-long-running-operation", arguments: { duration: 3, steps: 3 }, _meta: { [KEY]: key } });

    // 1. The gateway dies while the provider runs call k1 (the provider answers into a closed socket).
    const first = await hostWithGateway(args, keyOf(ROLE.payer));
    const lost = first.client.callTool(long("k1")).then(() => "answered", (error: Error) => error.message);
    await rowAppears(gatewayDb, "SELECT 1 FROM calls WHERE key = 'key:k1'");
    await midCall();
    process.kill(first.transport.pid!, "SIGKILL");
    expect(await lost).to.not.equal("answered");
    await first.client.close().catch(() => undefined);
    // The provider finished the paid call and kept its output while no gateway was there to hear it.
    await rowAppears(providerDb, "SELECT 1 FROM results");

    // A new gateway, the same key: the step is taken back from the provider and its kept output checked and returned.
    const second = await hostWithGateway(args, keyOf(ROLE.payer));
    box.cleanup.push(() => second.client.close());
    const again = await second.client.callTool(long("k1"));
    expect(again.content).to.deep.equal([{ type: "text", text: LONG_TEXT }]);
    expect(receiptOf(again)).to.deep.include({ seq: "1", amount: LONG.toString() });
    // Asked once more, still the same paid call.
    expect(receiptOf(await second.client.callTool(long("k1")))).to.deep.include({ seq: "1" });

    // 2. The provider dies while its worker runs call k2: nothing durable, so nothing owed; the retry pays once.
    const dropped = second.client.callTool(long("k2")).then(() => "answered", (error: Error) => error.message);
    await rowAppears(gatewayDb, "SELECT 1 FROM calls WHERE key = 'key:k2'");
    await midCall();
    provider.child.kill("SIGKILL");
    await provider.exited;
    expect(await dropped).to.match(/never paid twice/);
    provider = await start(provider.port);
    const retried = await second.client.callTool(long("k2"));
    expect(retried.content).to.deep.equal([{ type: "text", text: LONG_TEXT }]);
    expect(receiptOf(retried)).to.deep.include({ seq: "2", amount: LONG.toString() });
    const sessionId = receiptOf(retried).sessionId;
    await second.client.close();

    // One charge per key: two receipts, each at the tool's price.
    const store = SqliteStore.open(payerDb);
    expect(store.steps(sessionId).map((s) => [s.seq, s.receipt!.receipt.metering.amount])).to.deep.equal([[1n, LONG], [2n, LONG]]);
    await store.close();
    await settleAndCheck(fx, payerDb, provider, sessionId, before, 2n * LONG);
  });

  it("a worker that floods, stays silent, answers another id or exits: one clear error each, charged nothing; the next call is served", async () => {
    const fx = await loadFixture(escrowFixture);
    const model = "hostile";
    const tools = { fine: FINE, flood: FINE, silent: FINE, "other-id": FINE, exit: FINE };
    const provider = await startProvider({
      rpcUrl: box.rpc.url,
      escrow: fx.escrow.address,
      db: path.join(box.dir, "provider.db"),
      termsFile: writeTerms(box.dir, v3Terms(tools, CAP, model)),
      model,
      key: keyOf(ROLE.provider),
      extra: ["--worker-timeout", "3000"],
      worker: [process.execPath, path.join(ROOT, "test/helpers/hostile-mcp-worker.js")],
    });
    box.cleanup.push(() => stopChild(provider.child));
    const before = await balances(fx);
    const payerDb = path.join(box.dir, "payer.db");
    const host = await hostWithGateway(
      gatewayArgs({ rpcUrl: box.rpc.url, escrow: fx.escrow.address, db: payerDb, provider: fx.provider.address, port: provider.port, budgets: { call: CAP, channel: parseEther("0.02"), day: parseEther("0.02") } }),
      keyOf(ROLE.payer),
    );
    box.cleanup.push(() => host.client.close());
    const expected: Record<string, RegExp> = {
      flood: /(wrote a line of \d+ bytes|wrote more than 524288 bytes without a newline).*not charged/,
      silent: /did not answer tools\/call within 3000 ms.*not charged/,
      "other-id": /answered id .*which no call awaits.*not charged/,
      exit: /worker exited \(code 9\).*not charged/,
    };
    for (const [tool, message] of Object.entries(expected)) {
      const error = await host.client.callTool({ name: tool, arguments: {} }).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(error, tool).to.be.instanceOf(Error);
      expect(error!.message, tool).to.match(message);
      // The host's one sentence: no stack, no multi-line dump.
      expect(error!.message.split("\n")).to.have.length(1);
    }
    const fine = await host.client.callTool({ name: "fine", arguments: {} });
    expect(fine.content).to.deep.equal([{ type: "text", text: "fine" }]);
    expect(receiptOf(fine)).to.deep.include({ seq: "5", amount: FINE.toString() });
    const sessionId = receiptOf(fine).sessionId;
    await host.client.close();
    const store = SqliteStore.open(payerDb);
    expect(store.steps(sessionId).map((s) => s.receipt!.receipt.metering.amount)).to.deep.equal([0n, 0n, 0n, 0n, FINE]);
    await store.close();
    await settleAndCheck(fx, payerDb, provider, sessionId, before, FINE);
  });

  it("a host writing a line over 1 MiB to the stdio gateway: the gateway refuses it, stops, and nothing is paid", async () => {
    const fx = await loadFixture(escrowFixture);
    const model = "hostile";
    const provider = await startProvider({
      rpcUrl: box.rpc.url,
      escrow: fx.escrow.address,
      db: path.join(box.dir, "provider-stdio.db"),
      termsFile: writeTerms(box.dir, v3Terms({ fine: FINE }, CAP, model)),
      model,
      key: keyOf(ROLE.provider),
      worker: [process.execPath, path.join(ROOT, "test/helpers/hostile-mcp-worker.js")],
    });
    box.cleanup.push(() => stopChild(provider.child));
    const before = await balances(fx);
    const payerDb = path.join(box.dir, "payer-stdio.db");
    const gateway: ChildProcess = spawn(
      process.execPath,
      gatewayArgs({ rpcUrl: box.rpc.url, escrow: fx.escrow.address, db: payerDb, provider: fx.provider.address, port: provider.port, budgets: { call: CAP, channel: parseEther("0.02"), day: parseEther("0.02") } }),
      { cwd: ROOT, env: { ...process.env, IOI_PRIVATE_KEY: keyOf(ROLE.payer), IOI_CLI_SOURCE: "1" }, stdio: ["pipe", "pipe", "pipe"] },
    );
    box.cleanup.push(() => stopChild(gateway));
    let stderr = "";
    const exited = new Promise<number | null>((resolve) => gateway.once("exit", resolve));
    const sessionId = await new Promise<Hex>((resolve, reject) => {
      gateway.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
        stderr += chunk;
        const match = /serving over stdio for session (0x[0-9a-f]{64})/.exec(stderr);
        if (match) resolve(match[1] as Hex);
      });
      void exited.then((code) => reject(new Error(`ioi mcp exited with ${code}: ${stderr}`)));
    });
    let stdout = "";
    gateway.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    const huge = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "fine", arguments: { pad: "x".repeat(2 * 1024 * 1024) } } });
    // The gateway stops reading once the line passes the bound: the rest of the write meets a closed pipe.
    gateway.stdin!.on("error", () => undefined);
    gateway.stdin!.write(`${huge}\n`);
    expect(await exited).to.equal(0);
    expect(stderr).to.match(/refused a host message: ReadBuffer exceeded maximum size of 1048576 bytes/);
    expect(stdout).to.equal(""); // no answer, no result
    await settleAndCheck(fx, payerDb, provider, sessionId, before, 0n);
  });

  it("a host sending malformed and oversized requests over Streamable HTTP gets an error each; a proper host is still served", async () => {
    const fx = await loadFixture(escrowFixture);
    const model = "hostile";
    const provider = await startProvider({
      rpcUrl: box.rpc.url,
      escrow: fx.escrow.address,
      db: path.join(box.dir, "provider.db"),
      termsFile: writeTerms(box.dir, v3Terms({ fine: FINE }, CAP, model)),
      model,
      key: keyOf(ROLE.provider),
      worker: [process.execPath, path.join(ROOT, "test/helpers/hostile-mcp-worker.js")],
    });
    box.cleanup.push(() => stopChild(provider.child));
    const before = await balances(fx);
    const payerDb = path.join(box.dir, "payer.db");
    const gateway: ChildProcess = spawn(
      process.execPath,
      [...gatewayArgs({ rpcUrl: box.rpc.url, escrow: fx.escrow.address, db: payerDb, provider: fx.provider.address, port: provider.port, budgets: { call: CAP, channel: parseEther("0.02"), day: parseEther("0.02") } }), "--http", "0"],
      { cwd: ROOT, env: { ...process.env, IOI_PRIVATE_KEY: keyOf(ROLE.payer), IOI_CLI_SOURCE: "1" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    box.cleanup.push(() => stopChild(gateway));
    const url = await new Promise<string>((resolve, reject) => {
      let text = "";
      gateway.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
        text += chunk;
        const line = text.split("\n").find((l) => l.includes('"mcp.ready"'));
        if (line) resolve((JSON.parse(line) as { url: string }).url);
      });
      gateway.once("exit", (code) => reject(new Error(`ioi mcp exited with ${code}: ${text}`)));
    });
    expect(url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const post = (body: string) => fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body });

    const notJson = await post("{ this is not json");
    expect(notJson.status).to.equal(400);
    expect(((await notJson.json()) as { error: { message: string } }).error.message).to.equal("The request body is not JSON.");
    const huge = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { pad: "x".repeat(2 * 1024 * 1024) } }));
    expect(huge.status).to.equal(413);
    expect(((await huge.json()) as { error: { message: string } }).error.message).to.match(/larger than 1048576 bytes/);
    const notRpc = await post(JSON.stringify({ hello: "world" }));
    expect(notRpc.status).to.be.within(400, 499);
    const unknownSession = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": "nope" }, body: "{}" });
    expect(unknownSession.status).to.equal(404);

    // A proper host, after all that: served and paid.
    const client = new Client({ name: "sdk-host", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const fine = await client.callTool({ name: "fine", arguments: {} });
    expect(fine.content).to.deep.equal([{ type: "text", text: "fine" }]);
    // A call to a tool with malformed arguments reaches the worker as it is and fails there: charged nothing.
    await client.callTool({ name: "no-such-tool", arguments: {} }).then(
      () => expect.fail("an unknown tool must not answer"),
      (e: Error) => expect(e.message).to.match(/unknown tool.*not charged/),
    );
    const sessionId = receiptOf(fine).sessionId;
    await client.close();
    await stopChild(gateway);
    await settleAndCheck(fx, payerDb, provider, sessionId, before, FINE);
  });
});
