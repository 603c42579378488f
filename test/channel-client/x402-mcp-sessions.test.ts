/**
 * The x402 MCP endpoint holds a bounded number of MCP sessions (decision 0034): anyone who reaches it may initialize
 * one, so past `maxSessions` the least recently used session is closed and its host must initialize again. A host
 * flooding initializations cannot grow the provider's memory, and a host that keeps using its session keeps it.
 * Hosts are the MCP SDK's own `Client` over Streamable HTTP.
 */
import { expect } from "chai";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { zeroAddress } from "viem";

import type { PricingTerms } from "../../channel-client/core/terms";
import { NATIVE_ASSET } from "../../channel-client/core/terms";
import type { McpHandler } from "../../channel-client/node/provider-node";
import { X402McpEndpoint } from "../../channel-client/node/x402-mcp-endpoint";

const TOOLS = { tools: [{ name: "echo", inputSchema: { type: "object" } }] };

describe("x402 MCP endpoint: bounded sessions (decision 0034)", function () {
  this.timeout(60_000);
  let endpoint: X402McpEndpoint | undefined;
  const hosts: Client[] = [];

  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.close().catch(() => undefined);
    await endpoint?.stop();
    endpoint = undefined;
  });

  async function host(): Promise<Client> {
    const client = new Client({ name: "host", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(endpoint!.url)));
    hosts.push(client);
    return client;
  }

  it("closes the least recently used session past maxSessions; the others keep working", async () => {
    const handler: McpHandler = async (request) => (request.method === "tools/list" ? { result: TOOLS, units: 0n } : { error: { code: -32601, message: "no such method" } });
    const pricing = { version: "1", asset: NATIVE_ASSET, pricePerInvocation: 1n } as unknown as PricingTerms;
    endpoint = await X402McpEndpoint.start({
      node: { invokeDetached: async () => Promise.reject(new Error("no payment expected in this test")) },
      handler,
      pricing,
      chainId: 31337,
      escrow: zeroAddress,
      provider: zeroAddress,
      maxSessions: 2,
    });
    const a = await host();
    const b = await host();
    expect((await a.listTools()).tools.map((t) => t.name)).to.deep.equal(["echo"]); // a is now the most recent
    const c = await host(); // displaces b, the least recently used
    await expect(b.listTools()).to.be.rejectedWith(/session is unknown|404/);
    expect((await c.listTools()).tools).to.have.length(1);
    expect((await a.listTools()).tools).to.have.length(1);
    const d = await host(); // displaces c now (a was used after c)
    await expect(c.listTools()).to.be.rejectedWith(/session is unknown|404/);
    expect((await a.listTools()).tools).to.have.length(1);
    expect((await d.listTools()).tools).to.have.length(1);
  });
});
