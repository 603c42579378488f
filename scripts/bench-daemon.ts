/**
 * `npm run bench -- --daemon [--blocks N]` (issue 29): what one `ioi arbitrator serve` process costs while it
 * follows a devnet. The system is deployed on the in-process Hardhat network with one admitted arbitrator (Hardhat
 * account 20), served over HTTP; a counting proxy stands in front of that RPC and counts every JSON-RPC request
 * the daemon makes (each element of a batch counts), by method. The daemon (bin/ioi.js from the TypeScript
 * sources, as `IOI_CLI_SOURCE=1` runs it, polling every 250 ms) first catches up; then N blocks are mined, one
 * every 500 ms, and the requests made during them are divided by N. Its resident memory (VmRSS) and peak
 * (VmHWM) are read from /proc at the end.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";

import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { toHex, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import type { Wallet } from "../channel-client/chain/escrow";
import { admitDevnetArbitrators } from "./arbitrators";
import { deployAll } from "./deploy";
import { serveEmbeddedNetwork } from "./embedded-rpc";

export type DaemonBench = {
  blocks: number;
  blockIntervalMs: number;
  pollMs: number;
  rpcRequests: number;
  rpcRequestsPerBlock: number;
  byMethod: Record<string, number>;
  rssMiB: number;
  peakRssMiB: number;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A loopback HTTP proxy to `target` that counts the JSON-RPC requests passing through it, by method. */
async function countingProxy(target: string) {
  const upstream = new URL(target);
  const counts: Record<string, number> = {};
  let counting = false;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (counting) {
        try {
          const parsed = JSON.parse(body.toString("utf8")) as { method?: string } | { method?: string }[];
          for (const call of Array.isArray(parsed) ? parsed : [parsed]) counts[call.method ?? "?"] = (counts[call.method ?? "?"] ?? 0) + 1;
        } catch {
          counts["(unparsable)"] = (counts["(unparsable)"] ?? 0) + 1;
        }
      }
      const forward = httpRequest({ hostname: upstream.hostname, port: upstream.port, path: upstream.pathname, method: "POST", headers: { "content-type": "application/json", "content-length": body.length } }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, { "content-type": "application/json" });
        answer.pipe(res);
      });
      forward.on("error", () => res.writeHead(502).end());
      forward.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    start: () => {
      for (const k of Object.keys(counts)) delete counts[k];
      counting = true;
    },
    stop: () => {
      counting = false;
    },
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

export async function benchDaemon(hre: HardhatRuntimeEnvironment, blocks: number, log: (line: string) => void): Promise<DaemonBench> {
  const publicClient = await hre.viem.getPublicClient();
  const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
  const deployment = await deployAll(hre);
  await admitDevnetArbitrators({ publicClient: publicClient as never, wallets, deployment, indices: [20] });
  const rpc = await serveEmbeddedNetwork(hre);
  const proxy = await countingProxy(rpc.url);
  const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-bench-daemon-"));
  const key = toHex(mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex: 20 }).getHdKey().privateKey!) as Hex;
  const pollMs = 250;
  const blockIntervalMs = 500;
  const child = spawn(
    process.execPath,
    [path.join(__dirname, "..", "bin", "ioi.js"), "arbitrator", "serve", "--rpc", proxy.url, "--dispute-manager", deployment.contracts.DisputeManager.address, "--state", path.join(dir, "arbitrator.json"), "--poll-ms", String(pollMs), "--max-runtime-ms", "600000"],
    { env: { ...process.env, IOI_CLI_SOURCE: "1", IOI_PRIVATE_KEY: key }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  try {
    await new Promise<void>((resolve, reject) => {
      child.stderr!.setEncoding("utf8").on("data", (c: string) => {
        stderr += c;
        if (stderr.includes('"event":"arbitrator.ready"')) resolve();
      });
      child.once("exit", (code) => reject(new Error(`the daemon exited (${code}) before it was ready:\n${stderr.slice(-2000)}`)));
    });
    await sleep(3 * pollMs); // caught up with the deployment's logs
    log(`  following ${blocks} blocks, one every ${blockIntervalMs} ms …`);
    proxy.start();
    for (let i = 0; i < blocks; i++) {
      await hre.network.provider.send("evm_mine", []);
      await sleep(blockIntervalMs);
    }
    proxy.stop();
    const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
    const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
    const rpcRequests = Object.values(proxy.counts).reduce((a, b) => a + b, 0);
    return {
      blocks,
      blockIntervalMs,
      pollMs,
      rpcRequests,
      rpcRequestsPerBlock: Number((rpcRequests / blocks).toFixed(1)),
      byMethod: { ...proxy.counts },
      rssMiB: Math.round(kib("VmRSS") / 1024),
      peakRssMiB: Math.round(kib("VmHWM") / 1024),
    };
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once("exit", r)));
    await proxy.close();
    await rpc.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
