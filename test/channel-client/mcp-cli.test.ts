/**
 * The CLI of real work (issue 13 item 3, decision 0022): `ioi provider --worker node
 * examples/mcp-test-worker.js` as a process, `ioi open --peer`, `ioi call`, `ioi stream --request-file`,
 * and the flags that guard non-loopback addresses; careless inputs end in one sentence and exit 2.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { keccak256, parseEther, toHex, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { canonBytes } from "../../channel-client/core/canonical";
import { listenHost, parsePeer } from "../../channel-client/node/endpoints";
import { DEFAULT_WORKER_ENV } from "../../channel-client/node/mcp-worker";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { cliSandbox, runCli } from "../helpers/cli";
import { escrowFixture, HARDHAT_MNEMONIC, ROLE } from "../helpers/fixtures";

const ROOT = path.join(__dirname, "..", "..");
const WORKER = path.join(ROOT, "examples", "mcp-test-worker.js");
const PRICE = parseEther("0.002");
const keyOf = (index: number) => ({ IOI_PRIVATE_KEY: toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) as Hex });
const lastJson = (result: { out: string }) => JSON.parse(result.out.trim().split("\n").pop()!) as Record<string, unknown>;

/** Starts `ioi provider … --worker node examples/mcp-test-worker.js` and resolves with its ready line. */
async function startProviderProcess(args: string[]): Promise<{ child: ChildProcessWithoutNullStreams; ready: Record<string, unknown>; stderr: string[] }> {
  const child = spawn(process.execPath, [path.join(ROOT, "bin", "ioi.js"), "provider", ...args, "--worker", process.execPath, WORKER], {
    // The sources, never a stale dist/ build (bin/ioi.js).
    env: { ...process.env, IOI_CLI_SOURCE: "1", ...keyOf(ROLE.provider) },
    cwd: ROOT,
  });
  const stderr: string[] = [];
  child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    let buffered = "";
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      const line = buffered.split("\n").find((l) => l.includes('"provider.ready"'));
      if (line) resolve(JSON.parse(line) as Record<string, unknown>);
    });
    child.once("exit", (code) => reject(new Error(`ioi provider exited with ${code}: ${stderr.join("")}`)));
  });
  return { child, ready, stderr };
}

describe("ioi provider --worker, ioi call, ioi stream --request-file", function () {
  const box = cliSandbox("ioi-mcp-cli-");
  const cleanup = box.cleanup;

  it("sells the worker's calls: the payer prints each result, paid and receipted, and closes cooperatively", async () => {
    const fx = await loadFixture(escrowFixture);
    const common = ["--rpc", box.rpc.url, "--escrow", fx.escrow.address];
    const { child, ready } = await startProviderProcess(["--price", PRICE.toString(), "--worker-timeout", "2000", "--db", path.join(box.dir, "provider.db"), ...common]);
    cleanup.push(
      () =>
        new Promise((resolve) => {
          child.once("exit", resolve);
          child.kill("SIGINT");
        }),
    );
    expect(ready).to.include({ host: "127.0.0.1" });
    const worker = ready.worker as { tools: string[]; env: string[] };
    expect(worker.tools).to.deep.equal(["add", "upper", "crash", "hang", "garbage", "big", "refuse", "slow"]);
    // The worker's environment is the allow-list only (issue 28 item 3): never the node's key.
    expect(worker.env).to.not.include("IOI_PRIVATE_KEY");
    expect(worker.env.every((name) => (DEFAULT_WORKER_ENV as readonly string[]).includes(name))).to.equal(true);
    const peer = `127.0.0.1:${ready.port as number}`;
    const payer = [...common, "--db", path.join(box.dir, "payer.db")];

    const opened = await runCli(["open", "--json", "--provider", fx.provider.address, "--deposit", parseEther("0.1").toString(), "--peer", peer, ...payer], keyOf(ROLE.payer));
    expect(opened.code, opened.err).to.equal(0);
    const sessionId = lastJson(opened).sessionId as Hex;

    const called = await runCli(["call", "--json", "--session", sessionId, "--method", "tools/call", "--params", '{"name":"add","arguments":{"a":2,"b":3}}', ...payer], keyOf(ROLE.payer));
    expect(called.code, called.err).to.equal(0);
    const result = { content: [{ type: "text", text: "5" }], isError: false, structuredContent: { sum: 5 } };
    expect(JSON.parse(called.out.split('\n{"ok"')[0]!)).to.deep.equal(result);
    expect(lastJson(called)).to.deep.include({ ok: true, id: "call-1", seq: "1", result, charged: PRICE.toString(), outputHash: keccak256(canonBytes(result)) });

    const streamed = await runCli(["stream", "--json", "--session", sessionId, "--request-file", path.join(ROOT, "examples", "mcp-requests.jsonl"), "--inflight", "2", ...payer], keyOf(ROLE.payer));
    expect(streamed.code, streamed.err).to.equal(0);
    const lines = streamed.out.split("\n").filter((l) => l.startsWith('{"id"')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.id, l.seq, (l.result as { content: Array<{ text: string }> }).content[0]!.text, l.charged])).to.deep.equal([
      [1, "2", "5", PRICE.toString()],
      [2, "3", "PAID WORK", PRICE.toString()],
    ]);
    expect(lastJson(streamed)).to.deep.include({ ok: true, paid: (3n * PRICE).toString(), charged: (3n * PRICE).toString() });

    const crashed = await runCli(["call", "--json", "--session", sessionId, "--method", "tools/call", "--params", '{"name":"crash"}', ...payer], keyOf(ROLE.payer));
    expect(crashed.code).to.equal(1);
    expect(crashed.out).to.contain("The provider's worker failed (not charged)");
    expect(lastJson(crashed)).to.deep.include({ seq: "4", charged: "0" });

    // Everything the payer holds is receipted by the provider; the close pays the three charged calls.
    const store = SqliteStore.open(path.join(box.dir, "payer.db"));
    const steps = store.steps(sessionId);
    await store.close();
    expect(steps.map((s) => s.receipt?.receipt.metering.amount)).to.deep.equal([PRICE, PRICE, PRICE, 0n]);
    const providerBefore = await fx.publicClient.getBalance({ address: fx.provider.address });
    const closed = await runCli(["close", "--json", "--session", sessionId, ...payer], keyOf(ROLE.payer));
    expect(closed.code, closed.err).to.equal(0);
    expect((await fx.publicClient.getBalance({ address: fx.provider.address })) - providerBefore).to.equal(3n * PRICE);
  });

  describe("careless inputs: one sentence, exit 2, nothing sent", function () {
    const cases: Array<[string, string[], string]> = [
      ["a remote --peer without --allow-remote", ["call", "--session", `0x${"11".repeat(32)}`, "--method", "ping", "--peer", "203.0.113.7:7000"], "--peer 203.0.113.7:7000 is not on this machine; add --allow-remote"],
      ["a --peer without a port", ["stream", "--session", `0x${"11".repeat(32)}`, "-n", "1", "--peer", "localhost"], "--peer must be HOST:PORT"],
      ["both --method and --request-file", ["call", "--session", `0x${"11".repeat(32)}`, "--method", "ping", "--request-file", "x.jsonl"], "(one of them)"],
      ["--params that is not JSON", ["call", "--session", `0x${"11".repeat(32)}`, "--method", "tools/call", "--params", "{name:add}"], "--params is not valid JSON"],
      ["--params that is an array", ["call", "--session", `0x${"11".repeat(32)}`, "--method", "tools/call", "--params", "[1]"], "has \"params\" that is not an object"],
      ["a request file that does not exist", ["stream", "--session", `0x${"11".repeat(32)}`, "--request-file", "/nonexistent/requests.jsonl"], "Cannot read the request file /nonexistent/requests.jsonl: ENOENT"],
      ["-n together with --request-file", ["stream", "--session", `0x${"11".repeat(32)}`, "-n", "2", "--request-file", "x.jsonl"], "either -n (synthetic requests) or --request-file"],
      ["--host 0.0.0.0 without --allow-public", ["provider", "--price", "1", "--host", "0.0.0.0"], "--host 0.0.0.0 exposes the provider node beyond this machine; add --allow-public"],
      ["--host that is not an IP", ["provider", "--price", "1", "--host", "my laptop"], "--host must be an IP address"],
      ["--worker with no command", ["provider", "--price", "1", "--worker"], "--worker needs the command"],
      ["--worker-timeout 0", ["provider", "--price", "1", "--worker-timeout", "0", "--worker", "node"], "--worker-timeout must be between 1 and 3600000"],
    ];
    for (const [what, argv, sentence] of cases) {
      it(what, async () => {
        // The common options go first: everything after --worker is the worker's command line.
        const result = await runCli([argv[0]!, "--db", path.join(box.dir, "payer.db"), "--rpc", "http://127.0.0.1:1", ...argv.slice(1)], keyOf(ROLE.payer));
        expect(result.code, result.err).to.equal(2);
        expect(result.err).to.contain(sentence);
        expect(result.err).not.to.match(/\n\s+at /);
      });
    }

    it("a request file with a bad line names the line", async () => {
      const file = path.join(box.dir, "bad.jsonl");
      writeFileSync(file, '{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","method":"tools/call"}\n');
      const result = await runCli(["stream", "--session", `0x${"11".repeat(32)}`, "--request-file", file, "--db", path.join(box.dir, "payer.db"), "--rpc", "http://127.0.0.1:1"], keyOf(ROLE.payer));
      expect(result.code).to.equal(2);
      expect(result.err).to.contain(`${file} line 2 needs an "id"`);
    });
  });

  it("endpoints: loopback needs no flag; anything else needs --allow-remote / --allow-public", () => {
    expect(parsePeer("127.0.0.1:7000", false)).to.deep.equal({ host: "127.0.0.1", port: 7000 });
    expect(parsePeer("localhost:7000", false)).to.deep.equal({ host: "127.0.0.1", port: 7000 });
    expect(parsePeer("[::1]:7000", false)).to.deep.equal({ host: "::1", port: 7000 });
    expect(parsePeer("provider.example.org:7000", true)).to.deep.equal({ host: "provider.example.org", port: 7000 });
    expect(parsePeer("[2001:db8::1]:443", true)).to.deep.equal({ host: "2001:db8::1", port: 443 });
    expect(() => parsePeer("provider.example.org:7000", false)).to.throw("add --allow-remote");
    expect(() => parsePeer("127.0.0.1:0", false)).to.throw("HOST:PORT");
    expect(() => parsePeer("127.0.0.1:70000", false)).to.throw("HOST:PORT");
    expect(() => parsePeer("bad_host!:7000", true)).to.throw("no valid host");
    expect(listenHost(undefined, false)).to.equal("127.0.0.1");
    expect(listenHost("0.0.0.0", true)).to.equal("0.0.0.0");
    expect(() => listenHost("192.0.2.1", false)).to.throw("--allow-public");
  });
});
