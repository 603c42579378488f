// A host built only from the MCP SDK: starts `ioi mcp` as its mcpServers entry would, lists the provider's
// tools and calls two of them, printing what each call was charged (the receipt reference in _meta).
// Run after the provider (see README.md "Agents: any MCP host pays per tool call"):
//   IOI_PRIVATE_KEY=0x… node examples/mcp-gateway/host.mjs
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const entry = JSON.parse(readFileSync(new URL("./mcp-servers.json", import.meta.url), "utf8")).mcpServers["paid-everything"];
const transport = new StdioClientTransport({ command: entry.command, args: entry.args, env: { ...process.env } });
const client = new Client({ name: "example-host", version: "1" });
await client.connect(transport);
const { tools } = await client.listTools();
console.log("tools:", tools.map((t) => t.name).join(", "));
for (const [name, args] of [["echo", { message: "paid hello" }], ["get-sum", { a: 2, b: 3 }]]) {
  const result = await client.callTool({ name, arguments: args, _meta: { "ioi-settlement/idempotency-key": `example-${name}` } });
  const receipt = result._meta["ioi-settlement/receipt"];
  console.log(`${name}: ${result.content[0].text}  (seq ${receipt.seq}, charged ${receipt.amount} wei, receipt ${receipt.receiptHash})`);
}
await client.close();
