/**
 * The control API's OpenRPC 1.3 document, generated from the method table (channel-client/api/methods.ts) and published
 * as schemas/openrpc.json (shipped in the package; decision 0029). A test checks the file equals what this
 * module generates, and that every method the server answers is in it with its params schema and vice versa.
 *
 *   npx ts-node channel-client/api/openrpc.ts --write     regenerate schemas/openrpc.json
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

import { PACKAGE_ROOT } from "../core/package-root";
import { API_ERRORS } from "./errors";
import { API_VERSION, METHODS } from "./methods";
import { TOPICS } from "./subscriptions";

export const OPENRPC_PATH = path.join(PACKAGE_ROOT, "schemas", "openrpc.json");

export function openRpcDocument(): Record<string, unknown> {
  const errors = Object.entries(API_ERRORS).map(([reason, spec]) => ({
    code: spec.code,
    message: reason,
    data: { reason, retryable: spec.retryable },
  }));
  return {
    openrpc: "1.3.2",
    info: {
      title: "ioi-settlement control API",
      version: API_VERSION,
      description: [
        "JSON-RPC 2.0 over HTTP (POST /) and WebSocket (GET / with Upgrade), on loopback unless started with --allow-public.",
        "Every request carries `Authorization: Bearer <token>`; without it HTTP answers 401 and a WebSocket upgrade is refused with 401.",
        "Params are by name. Amounts, ids and times are decimal strings, never JSON numbers.",
        "Errors carry `data.reason` (a stable string) and `data.retryable` (whether the same request can succeed later).",
        `Over WebSocket, \`subscribe\` follows a topic (${TOPICS.join(", ")}); each event arrives as a notification`,
        '{"jsonrpc":"2.0","method":"subscription","params":{"subscription":ID,"topic":TOPIC,"event":{...}}}.',
      ].join(" "),
      license: { name: "MIT" },
    },
    servers: [{ name: "loopback", url: "http://127.0.0.1:8645/" }],
    methods: Object.entries(METHODS).map(([name, spec]) => ({
      name,
      summary: spec.summary,
      paramStructure: "by-name",
      params: spec.params.map((d) => ({ name: d.name, ...(d.description ? { description: d.description } : {}), required: d.required === true, schema: d.schema })),
      result: spec.result,
      ...(spec.websocketOnly ? { tags: [{ name: "websocket-only" }] } : {}),
      errors,
    })),
    components: {
      schemas: {
        Notification: {
          type: "object",
          required: ["jsonrpc", "method", "params"],
          properties: {
            jsonrpc: { const: "2.0" },
            method: { const: "subscription" },
            params: {
              type: "object",
              required: ["subscription", "topic", "event"],
              properties: { subscription: { type: "string" }, topic: { enum: [...TOPICS] }, event: { type: "object" } },
            },
          },
        },
        ErrorData: {
          type: "object",
          required: ["reason", "retryable"],
          properties: { reason: { enum: Object.keys(API_ERRORS) }, retryable: { type: "boolean" }, name: { type: "string" } },
        },
      },
    },
  };
}

/** The document as the file holds it: two-space JSON with a final newline. */
export function openRpcText(): string {
  return `${JSON.stringify(openRpcDocument(), null, 2)}\n`;
}

export function readPublishedOpenRpc(): Record<string, unknown> {
  return JSON.parse(readFileSync(OPENRPC_PATH, "utf8")) as Record<string, unknown>;
}

if (require.main === module) {
  if (process.argv.includes("--write")) {
    writeFileSync(OPENRPC_PATH, openRpcText());
    console.log(`wrote ${path.relative(process.cwd(), OPENRPC_PATH)}`);
  } else {
    process.stdout.write(openRpcText());
  }
}
