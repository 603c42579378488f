/**
 * Issue 28 item 8: every paid result is kept. `ioi stream --request-file` prints each result the moment it is
 * durable, Ctrl-C stops paying and waits for the calls already paid for, and `ioi results` prints every paid
 * call's request, result and receipt again from the payer's store; a long request file is streamed line by line.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { spawn } from "node:child_process";
import { openSync, writeSync, closeSync, statSync } from "node:fs";
import path from "node:path";
import { getAddress, parseEther, toHex, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { MAX_REQUEST_LINE_BYTES, RequestFileReader } from "../../channel-client/node/requests";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { cliSandbox, runCli } from "../helpers/cli";
import { escrowFixture, HARDHAT_MNEMONIC, ROLE } from "../helpers/fixtures";

const ROOT = path.join(__dirname, "..", "..");
const PRICE = 1000n;
const keyOf = (index: number) => ({ IOI_PRIVATE_KEY: toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) as Hex });
const lastJson = (result: { out: string }) => JSON.parse(result.out.trim().split("\n").pop()!) as Record<string, unknown>;

/** Writes `count` echo requests, one per line, padded to about `lineBytes` bytes each, without holding them. */
function writeRequests(file: string, count: number, lineBytes = 80): void {
  const fd = openSync(file, "w");
  try {
    let batch = "";
    for (let i = 0; i < count; i++) {
      const head = `{"jsonrpc":"2.0","id":${i},"method":"tools/echo","params":{"text":"`;
      batch += `${head}${"x".repeat(Math.max(1, lineBytes - head.length - 4))}"}}\n`;
      if (batch.length > 1 << 20) {
        writeSync(fd, batch);
        batch = "";
      }
    }
    writeSync(fd, batch);
  } finally {
    closeSync(fd);
  }
}

/** Runs `ioi …` as its own process (IOI_CLI_SOURCE=1: the TypeScript sources). */
function ioiProcess(args: string[], env: Record<string, string>) {
  return spawn(process.execPath, [path.join(ROOT, "bin", "ioi.js"), ...args], { env: { ...process.env, IOI_CLI_SOURCE: "1", ...env }, cwd: ROOT });
}

describe("issue 28 item 8: every paid result kept", function () {
  const box = cliSandbox("ioi-results-");

  it("issue 28 item 8: SIGINT mid-stream, then `ioi results` prints every paid call's result with its receipt; the close pays exactly those", async function () {
    this.timeout(240_000);
    const fx = await loadFixture(escrowFixture);
    const common = ["--rpc", box.rpc.url, "--escrow", fx.escrow.address];
    const provider = ioiProcess(["provider", "--price", PRICE.toString(), "--db", path.join(box.dir, "provider.db"), ...common], keyOf(ROLE.provider));
    box.cleanup.push(() => new Promise((resolve) => (provider.exitCode !== null ? resolve(undefined) : (provider.once("exit", resolve), provider.kill("SIGINT")))));
    const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
      let buffered = "";
      provider.stdout.on("data", (chunk: Buffer) => {
        buffered += chunk.toString();
        const line = buffered.split("\n").find((l) => l.includes('"provider.ready"'));
        if (line) resolve(JSON.parse(line) as Record<string, unknown>);
      });
      provider.once("exit", (code) => reject(new Error(`ioi provider exited with ${code}`)));
    });
    const peer = `127.0.0.1:${ready.port as number}`;
    const payerDb = path.join(box.dir, "payer.db");
    const payer = [...common, "--db", payerDb];
    const deposit = parseEther("0.001");
    const opened = await runCli(["open", "--json", "--provider", fx.provider.address, "--deposit", deposit.toString(), "--peer", peer, ...payer], keyOf(ROLE.payer));
    expect(opened.code, opened.err).to.equal(0);
    const sessionId = lastJson(opened).sessionId as Hex;

    // 20,000 requests: far more than are answered before the interrupt.
    const file = path.join(box.dir, "requests.jsonl");
    writeRequests(file, 20_000);
    const stream = ioiProcess(["stream", "--json", "--session", sessionId, "--request-file", file, "--inflight", "8", ...payer], keyOf(ROLE.payer));
    const printed: Record<string, unknown>[] = [];
    let pending = "";
    let interrupted = false;
    stream.stdout.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) if (line.startsWith('{"id"')) printed.push(JSON.parse(line) as Record<string, unknown>);
      // Interrupted once results are flowing: they were printed as they arrived, not held to the end.
      if (!interrupted && printed.length >= 40) {
        interrupted = true;
        stream.kill("SIGINT");
      }
    });
    const stderr: string[] = [];
    stream.stderr.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
    const code = await new Promise<number | null>((resolve) => stream.once("exit", resolve));
    for (const line of pending.split("\n")) if (line.startsWith('{"id"')) printed.push(JSON.parse(line) as Record<string, unknown>);
    expect(interrupted, stderr.join("")).to.equal(true);
    expect(code, stderr.join("")).to.equal(130);
    expect(stderr.join("")).to.contain("Interrupted");

    // Every ticket the payer signed (every paid call) has its receipt and its stored result.
    const store = SqliteStore.open(payerDb);
    const steps = store.steps(sessionId);
    const stored = store.results(sessionId);
    await store.close();
    expect(steps.length).to.be.greaterThan(40).and.lessThan(20_000);
    expect(steps.every((s) => s.receipt !== undefined), "a paid call without its receipt").to.equal(true);
    expect(stored.map((r) => r.seq)).to.deep.equal(steps.map((s) => s.seq));
    expect(printed.map((p) => p.seq)).to.deep.equal(steps.map((s) => s.seq.toString()));

    const results = await runCli(["results", "--session", sessionId, "--db", payerDb]);
    expect(results.code, results.err).to.equal(0);
    const lines = results.out.split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).to.equal(steps.length);
    lines.forEach((line, i) => {
      const step = steps[i]!;
      expect(line.seq).to.equal(step.seq.toString());
      expect(line.id).to.equal(i); // the file's i-th request paid for seq i + 1
      expect(line.verified).to.equal(true);
      expect(line.result).to.deep.equal(printed[i]!.result);
      expect((line.receipt as { receipt: { outputHash: Hex } }).receipt.outputHash).to.equal(step.receipt!.receipt.outputHash);
      expect(line.charged).to.equal(PRICE.toString());
    });

    // The cooperative close pays the provider (and treasury) exactly the calls whose results were kept.
    const paid = PRICE * BigInt(steps.length);
    const balances = async () => ({
      provider: await fx.publicClient.getBalance({ address: fx.provider.address }),
      payer: await fx.publicClient.getBalance({ address: fx.payer.address }),
      treasury: await fx.publicClient.getBalance({ address: fx.treasury.account.address }),
      escrow: await fx.publicClient.getBalance({ address: fx.escrow.address }),
    });
    const before = await balances();
    const closed = await runCli(["close", "--json", "--session", sessionId, ...payer], keyOf(ROLE.payer));
    expect(closed.code, closed.err).to.equal(0);
    const after = await balances();
    const settled = lastJson(closed);
    const block = await fx.publicClient.getBlock({ includeTransactions: true });
    const tx = block.transactions.find((t) => getAddress(t.from) === getAddress(fx.payer.address))!;
    const receipt = await fx.publicClient.getTransactionReceipt({ hash: tx.hash });
    const gas = receipt.gasUsed * receipt.effectiveGasPrice;
    expect(BigInt(settled.paidToProvider as string) + (after.treasury - before.treasury)).to.equal(paid);
    expect(after.provider - before.provider).to.equal(BigInt(settled.paidToProvider as string));
    expect(after.escrow - before.escrow).to.equal(-deposit);
    expect(after.payer - before.payer).to.equal(deposit - paid - gas);
  });

  it("issue 28 item 8: a 100,000-line request file is streamed without holding it (bounded buffer, every request in order)", () => {
    const file = path.join(box.dir, "long.jsonl");
    writeRequests(file, 100_000, 400);
    const size = statSync(file).size;
    expect(size).to.be.greaterThan(39_000_000);
    const heapBefore = process.memoryUsage().heapUsed;
    const reader = RequestFileReader.open(file);
    expect(reader.count).to.equal(100_000);
    let peakHeap = 0;
    for (let i = 0; i < reader.count; i++) {
      const request = reader.next();
      if (i % 997 === 0) expect(request.id).to.equal(i);
      if (i % 10_000 === 0) peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed - heapBefore);
    }
    expect(() => reader.next()).to.throw("read to its end");
    reader.close();
    // The reader held one 64 KiB chunk and one line at a time; the file is 40 MB.
    expect(reader.peakBufferedBytes).to.be.at.most(64 * 1024 + MAX_REQUEST_LINE_BYTES);
    expect(reader.peakBufferedBytes).to.be.below(size / 100);
    expect(peakHeap).to.be.below(size / 2);
  });
});
