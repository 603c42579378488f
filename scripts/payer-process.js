/**
 * The payer node of the socket bench in a process of its own, run from the built dist/ as users run a payer:
 * its heap holds the payer and nothing else, not the bench's devnet, Hardhat and ts-node, whose hundreds of
 * megabytes every full garbage collection of the payer would otherwise mark (issue 31 item 5). Plain
 * JavaScript for the same reason: ts-node would load the TypeScript compiler into this heap.
 *
 *   node scripts/payer-process.js <store file>        (IOI_PRIVATE_KEY: the payer's key)
 *
 * Reads one JSON command per line on stdin and answers each with one JSON line on stdout, in order:
 *   {"op":"connect","port":N,"channel":ChannelJson,"deposit":"wei"} → {"ok":true}
 *   {"op":"stream","count":N,"inflight":K}  → {"ok":true,"seconds":S,"cpuUs":C,"latencies":[ms…],"commits":N,"syncs":N}
 *   {"op":"close"}                          → {"ok":true} (the connection closed)
 *   {"op":"exit"}                           → closes the store and exits 0 (a --cpu-prof profile is written then)
 * A failed command answers {"error":"…"}; the process keeps serving the next one.
 */
"use strict";
const { existsSync } = require("node:fs");
const path = require("node:path");
const { createInterface } = require("node:readline");

const [storeFile, extra] = process.argv.slice(2);
if (!storeFile || extra !== undefined || !/^0x[0-9a-fA-F]{64}$/.test(process.env.IOI_PRIVATE_KEY ?? "")) {
  console.error("usage: IOI_PRIVATE_KEY=0x<64 hex digits> node scripts/payer-process.js <store file>");
  process.exit(2);
}
const DIST = path.join(__dirname, "..", "dist", "channel-client");
if (!existsSync(path.join(DIST, "node", "payer-client.js"))) {
  console.error("dist/ is not built: run `npx tsc -p tsconfig.build.json` (npm run bench does) before starting the payer process.");
  process.exit(2);
}
const dist = (module) => require(path.join(DIST, `${module}.js`));
const { PayerClient } = dist("node/payer-client");
const { SqliteStore } = dist("store/sqlite-store");
const { channelFromJson } = dist("store/records");
const { gasEscrowDomain, signingAccount } = dist("core/eip712");

/** The invocation every bench ticket pays for: the echo tool (as bench-socket.ts's own). */
const echo = (n) => ({ jsonrpc: "2.0", id: n, method: "tools/echo", params: { n } });
// signingAccount, as `ioi` builds every acting account: its digests are signed with the configured secp256k1 backend.
const account = signingAccount(process.env.IOI_PRIVATE_KEY);
const store = SqliteStore.open(storeFile);
let client;

const commands = {
  async connect({ port, channel: json, deposit }) {
    if (client) throw new Error("A channel is already connected: close it first.");
    const fixed = channelFromJson(json);
    const channel = { ...fixed, role: "payer", status: "open", deposit: BigInt(deposit) };
    await store.putChannel(channel);
    client = await PayerClient.connect({ account, domain: gasEscrowDomain({ chainId: fixed.chainId, verifyingContract: fixed.escrow }), store, channel, port });
    return {};
  },
  async stream({ count, inflight }) {
    if (!client) throw new Error("No channel is connected.");
    const before = store.stats;
    const cpu = process.cpuUsage();
    const started = performance.now();
    const latencies = await client.stream({ count, inflight, request: echo });
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    const after = store.stats;
    return { seconds, cpuUs: used.user + used.system, latencies, commits: after.commits - before.commits, syncs: after.syncs - before.syncs };
  },
  async close() {
    await client?.close();
    client = undefined;
    return {};
  },
  async exit() {
    await client?.close();
    await store.close();
    process.exit(0);
  },
};

// One command at a time, in order: each answer is written before the next command starts.
let queue = Promise.resolve();
createInterface({ input: process.stdin }).on("line", (line) => {
  queue = queue.then(async () => {
    let answer;
    try {
      const command = JSON.parse(line);
      if (typeof command?.op !== "string" || !Object.hasOwn(commands, command.op)) throw new Error(`Unknown command ${JSON.stringify(command?.op)}.`);
      const run = commands[command.op];
      answer = { ok: true, ...(await run(command)) };
    } catch (error) {
      answer = { error: error instanceof Error ? error.message : String(error) };
    }
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  });
});
process.stdin.on("end", () => queue.then(() => commands.exit()));
