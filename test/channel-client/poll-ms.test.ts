/**
 * Issue 28 item 7: `--poll-ms` means what it says. viem caches the block number for 4 s by default, so a
 * node polling every 250 ms re-read a stale head for 4 s. The CLI's client now caches it no longer than it
 * polls. A JSON-RPC stub on loopback whose head advances on every request shows what a poll sees.
 */
import { expect } from "chai";
import * as http from "node:http";
import type { AddressInfo } from "node:net";

import { rpcClients } from "../../channel-client/cli/chain";

async function stubNode(chainId: number): Promise<{ url: string; close: () => Promise<void>; head: () => number }> {
  let head = 100;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const calls = JSON.parse(body) as { id: number; method: string } | { id: number; method: string }[];
      const answer = (call: { id: number; method: string }) => {
        if (call.method === "eth_chainId") return { jsonrpc: "2.0", id: call.id, result: `0x${chainId.toString(16)}` };
        if (call.method === "eth_blockNumber") return { jsonrpc: "2.0", id: call.id, result: `0x${(head++).toString(16)}` };
        return { jsonrpc: "2.0", id: call.id, error: { code: -32601, message: "not in the stub" } };
      };
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(Array.isArray(calls) ? calls.map(answer) : answer(calls)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, head: () => head, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe("issue 28 item 7: --poll-ms means what it says", () => {
  it("issue 28 item 7: a 250 ms poll sees a new head on every poll, not the one viem cached for 4 s", async () => {
    const node = await stubNode(31337);
    try {
      const { publicClient } = await rpcClients({ rpc: node.url, "poll-ms": "250" });
      expect(publicClient.pollingInterval).to.equal(250);
      expect(publicClient.cacheTime).to.equal(250);
      const first = await publicClient.getBlockNumber();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const second = await publicClient.getBlockNumber();
      expect(second > first, `second poll read ${second}, first ${first}`).to.equal(true);
    } finally {
      await node.close();
    }
  });

  it("issue 28 item 7: without --poll-ms the chain's own interval is used (a devnet: 250 ms; $IOI_POLL_MS otherwise)", async () => {
    const node = await stubNode(31337);
    const saved = process.env.IOI_POLL_MS;
    delete process.env.IOI_POLL_MS;
    try {
      const { publicClient } = await rpcClients({ rpc: node.url });
      expect(publicClient.cacheTime).to.equal(250);
      expect(publicClient.pollingInterval).to.equal(250);
    } finally {
      if (saved !== undefined) process.env.IOI_POLL_MS = saved;
      await node.close();
    }
  });
});
