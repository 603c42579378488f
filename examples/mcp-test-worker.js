#!/usr/bin/env node
/**
 * A small MCP server over stdio (MCP 2025-06-18: one JSON-RPC message per line), written for the tests
 * of `ioi provider --worker`. Tools: `add` and `upper` do real work; `crash` exits mid-call, `hang`
 * never answers, `garbage` writes a line that is not JSON, `big` writes one line of `bytes` bytes, `refuse`
 * answers with a JSON-RPC error declaring an upstream policy refusal (`data.fault`, decision 0015).
 * It refuses every request before the lifecycle handshake, as the specification asks.
 * Set MCP_TEST_EXIT_AT_START=1 to make it die before answering anything (a worker that cannot start).
 */
"use strict";

if (process.env.MCP_TEST_EXIT_AT_START === "1") process.exit(3);

const TOOLS = [
  { name: "add", description: "a + b", inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] } },
  { name: "upper", description: "text in capitals", inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } },
  { name: "crash", description: "exits while answering", inputSchema: { type: "object" } },
  { name: "hang", description: "never answers", inputSchema: { type: "object" } },
  { name: "garbage", description: "answers with a line that is not JSON", inputSchema: { type: "object" } },
  { name: "big", description: "answers with one line of `bytes` bytes", inputSchema: { type: "object", properties: { bytes: { type: "number" } } } },
  { name: "refuse", description: "answers with an error: the upstream refused on policy", inputSchema: { type: "object" } },
  { name: "slow", description: "answers after `ms` milliseconds; first writes a file at `mark` if given", inputSchema: { type: "object", properties: { ms: { type: "number" }, mark: { type: "string" } } } },
];

let initialized = false;
let buffer = "";

const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const fail = (id, code, message) => send({ jsonrpc: "2.0", id, error: { code, message } });
const text = (value) => ({ content: [{ type: "text", text: String(value) }], isError: false });

function handle(message) {
  const { id, method, params } = message;
  if (method === "initialize") {
    initialized = true;
    return send({
      jsonrpc: "2.0",
      id,
      result: { protocolVersion: params && params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "ioi-test-server", version: "1.0.0" } },
    });
  }
  if (method === "notifications/initialized") return; // a notification: no answer
  if (id === undefined) return;
  if (!initialized) return fail(id, -32002, "not initialized");
  if (method === "ping") return send({ jsonrpc: "2.0", id, result: {} });
  if (method === "tools/list") return send({ jsonrpc: "2.0", id, result: { tools: TOOLS } });
  if (method !== "tools/call") return fail(id, -32601, `method not found: ${method}`);
  const args = (params && params.arguments) || {};
  switch (params && params.name) {
    case "add":
      if (typeof args.a !== "number" || typeof args.b !== "number") return fail(id, -32602, "add needs numbers a and b");
      return send({ jsonrpc: "2.0", id, result: { ...text(args.a + args.b), structuredContent: { sum: args.a + args.b } } });
    case "upper":
      if (typeof args.text !== "string") return fail(id, -32602, "upper needs a string text");
      return send({ jsonrpc: "2.0", id, result: text(args.text.toUpperCase()) });
    case "crash":
      process.stderr.write("test server: crashing as asked\n");
      return process.exit(7);
    case "hang":
      return undefined;
    case "garbage":
      return process.stdout.write("this is not JSON\n");
    case "big":
      return send({ jsonrpc: "2.0", id, result: text("x".repeat(Number(args.bytes) || 1_000_000)) });
    case "refuse":
      return send({ jsonrpc: "2.0", id, error: { code: -32003, message: "upstream refused the prompt", data: { fault: "ERR_UPSTREAM_POLICY_VIOLATION" } } });
    case "slow":
      if (typeof args.mark === "string") require("node:fs").writeFileSync(args.mark, "started\n");
      return void setTimeout(() => send({ jsonrpc: "2.0", id, result: text("slow done") }), Number(args.ms) || 1000);
    default:
      return fail(id, -32602, `unknown tool: ${params && params.name}`);
  }
}

process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  for (let nl = buffer.indexOf("\n"); nl !== -1; nl = buffer.indexOf("\n")) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    if (line.trim() === "") continue;
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      send({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } });
      continue;
    }
    handle(message);
  }
});
process.stdin.on("end", () => process.exit(0));
