/**
 * The MCP sessions a Streamable HTTP endpoint holds (`ioi mcp`'s gateway, the provider's x402 endpoint). Anyone who
 * reaches the endpoint may `initialize` one, and each holds a transport and an SDK server until its host closes it,
 * so they are bounded: past `max`, the least recently used session is closed (its host gets 404 "session is unknown"
 * and initializes again, as after a restart). A host that keeps using its session keeps it.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";

/** Sessions an endpoint holds at once unless told otherwise. */
export const DEFAULT_MAX_MCP_SESSIONS = 256;

export class McpHttpSessions {
  readonly #held = new Map<string, StreamableHTTPServerTransport>();

  constructor(readonly max = DEFAULT_MAX_MCP_SESSIONS) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError("maxSessions must be a positive integer.");
  }

  get size(): number {
    return this.#held.size;
  }

  /** The session's transport, now the most recently used; undefined when unknown (or displaced). */
  use(id: string): StreamableHTTPServerTransport | undefined {
    const transport = this.#held.get(id);
    if (transport) {
      this.#held.delete(id);
      this.#held.set(id, transport);
    }
    return transport;
  }

  /** Holds a newly initialized session, closing the least recently used ones past the bound. */
  add(id: string, transport: StreamableHTTPServerTransport): void {
    for (const [oldest, held] of this.#held) {
      if (this.#held.size < this.max) break;
      this.#held.delete(oldest);
      void held.close().catch(() => undefined);
    }
    this.#held.set(id, transport);
  }

  forget(id: string): void {
    this.#held.delete(id);
  }

  /**
   * Serves one HTTP request of the endpoint at `/mcp`: a POST body of at most `maxBytes` (413 past it, unread), a
   * known `mcp-session-id` to its session, an unknown one 404 (`unknownSession` says why), anything else a new
   * session on a fresh SDK server from `server()`. A failure is answered 500 with `failure` and told to `onError`.
   */
  async serve(
    req: IncomingMessage,
    res: ServerResponse,
    options: { maxBytes: number; server: () => Server; unknownSession: string; failure: string; onError?: (error: unknown) => void },
  ): Promise<void> {
    const fail = (status: number, message: string): void => {
      if (res.headersSent) {
        res.end();
        return;
      }
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: ErrorCode.InvalidRequest, message } }));
    };
    try {
      if (!req.url || new URL(req.url, "http://localhost").pathname !== "/mcp") return fail(404, "The MCP endpoint is /mcp.");
      const header = req.headers["mcp-session-id"];
      const existing = typeof header === "string" ? this.use(header) : undefined;
      let body: unknown;
      if (req.method === "POST") {
        const bytes = await readBody(req, options.maxBytes);
        if (bytes === undefined) return fail(413, `The request is larger than ${options.maxBytes} bytes; it was not read.`);
        try {
          body = JSON.parse(bytes.toString("utf8"));
        } catch {
          return fail(400, "The request body is not JSON.");
        }
      }
      if (existing) return await existing.handleRequest(req, res, body);
      if (typeof header === "string") return fail(404, options.unknownSession);
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => this.add(id, transport),
      });
      transport.onclose = () => {
        if (transport.sessionId) this.forget(transport.sessionId);
      };
      await options.server().connect(transport);
      await transport.handleRequest(req, res, body);
    } catch (error) {
      options.onError?.(error);
      fail(500, options.failure);
    }
  }

  async closeAll(): Promise<void> {
    for (const transport of [...this.#held.values()]) await transport.close().catch(() => undefined);
    this.#held.clear();
  }
}

/** The body, or undefined once it passes `limit` bytes (the rest is not read). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners("data");
        req.resume();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.once("end", () => resolve(size > limit ? undefined : Buffer.concat(chunks)));
    req.once("error", reject);
  });
}
