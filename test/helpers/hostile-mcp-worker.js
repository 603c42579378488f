#!/usr/bin/env node
/**
 * A hostile MCP server over stdio for test/adversarial/mcp-gateway.test.ts (issue 30 item 6): `fine` answers,
 * `flood` writes one line of 2 MB, `silent` never answers, `other-id` answers under an id nobody asked for,
 * `exit` dies mid-call. Everything else follows MCP 2025-06-18 (one JSON-RPC message per line).
 */
"use strict";

const TOOLS = ["fine", "flood", "silent", "other-id", "exit"].map((name) => ({ name, inputSchema: { type: "object" } }));
const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
let buffer = "";

function handle({ id, method, params }) {
  if (method === "initialize") {
    return send({ jsonrpc: "2.0", id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "hostile", version: "1" } } });
  }
  if (id === undefined) return;
  if (method === "tools/list") return send({ jsonrpc: "2.0", id, result: { tools: TOOLS } });
  if (method !== "tools/call") return send({ jsonrpc: "2.0", id, error: { code: -32601, message: "method not found" } });
  switch (params.name) {
    case "fine":
      return send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "fine" }] } });
    case "flood":
      return send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "x".repeat(2 * 1024 * 1024) }] } });
    case "silent":
      return undefined;
    case "other-id":
      return send({ jsonrpc: "2.0", id: typeof id === "number" ? id + 1000 : `${id}-other`, result: { content: [{ type: "text", text: "not yours" }] } });
    case "exit":
      return process.exit(9);
    default:
      return send({ jsonrpc: "2.0", id, error: { code: -32602, message: "unknown tool" } });
  }
}

process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  for (let nl = buffer.indexOf("\n"); nl !== -1; nl = buffer.indexOf("\n")) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    if (line.trim()) handle(JSON.parse(line));
  }
});
