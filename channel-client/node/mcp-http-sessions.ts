/**
 * The MCP sessions a Streamable HTTP endpoint holds (`ioi mcp`'s gateway, the provider's x402 endpoint). Anyone who
 * reaches the endpoint may `initialize` one, and each holds a transport and an SDK server until its host closes it,
 * so they are bounded: past `max`, the least recently used session is closed (its host gets 404 "session is unknown"
 * and initializes again, as after a restart). A host that keeps using its session keeps it.
 */
import type { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

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

  async closeAll(): Promise<void> {
    for (const transport of [...this.#held.values()]) await transport.close().catch(() => undefined);
    this.#held.clear();
  }
}
