/**
 * A provider's worker reached over MCP's Streamable HTTP transport (issue 30 item 2, decision 0022 amended): any
 * MCP server listening at a URL, driven by `@modelcontextprotocol/sdk`'s own `Client`. The node's limits stay
 * ours: an answer larger than the limit (counted as it streams in), an answer that never comes, or a server that
 * goes away ends that call with the same typed errors as a stdio worker's, and the node keeps serving.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError, ResultSchema } from "@modelcontextprotocol/sdk/types.js";

import { BaseError } from "../core/errors";
import type { JsonObject } from "../core/validate";
import { FORWARDED_METHODS, MethodNotForwardedError, WORKER_ERROR_CODES, WorkerCrashedError, WorkerOutputError, WorkerTimeoutError, workerRpcError, type WorkerInfo } from "./mcp-worker";
import type { McpHandler } from "./provider-node";

export type McpHttpWorkerParameters = {
  /** The server's MCP endpoint, e.g. http://127.0.0.1:3001/mcp. */
  url: string;
  /** Longest time one call may take. Default 30 s. */
  timeoutMs?: number;
  /** Largest answer body, in bytes. Default 512 KiB (an answer must fit in one packet). */
  maxAnswerBytes?: number;
  log?: (line: string) => void;
};

export class McpHttpWorker {
  #client: Client | undefined;
  #info: WorkerInfo | undefined;
  #stopped = false;

  private constructor(readonly parameters: McpHttpWorkerParameters) {}

  /** Connects (initialize, then tools/list when offered); rejects with WorkerCrashedError if it cannot. */
  static async start(parameters: McpHttpWorkerParameters): Promise<McpHttpWorker> {
    const worker = new McpHttpWorker(parameters);
    await worker.#connect();
    return worker;
  }

  get info(): WorkerInfo | undefined {
    return this.#info;
  }

  async #connect(): Promise<Client> {
    if (this.#client) return this.#client;
    const { url, maxAnswerBytes = 512 * 1024 } = this.parameters;
    const client = new Client({ name: "ioi-provider-node", version: "1" });
    const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: limitedFetch(maxAnswerBytes) });
    try {
      await client.connect(transport, { timeout: this.parameters.timeoutMs ?? 30_000 });
      const tools = client.getServerCapabilities()?.tools ? ((await client.listTools(undefined, { timeout: this.parameters.timeoutMs ?? 30_000 })).tools as unknown as JsonObject[]) : [];
      const version = client.getServerVersion();
      this.#info = { protocolVersion: "streamable-http", serverInfo: version as unknown as JsonObject | undefined, tools };
      this.parameters.log?.(`worker ready at ${url} (tools: ${tools.map((t) => String(t.name)).join(", ") || "none"})`);
    } catch (error) {
      await client.close().catch(() => undefined);
      throw new WorkerCrashedError(`The MCP server at ${url} could not be reached: ${(error as Error).message.split("\n")[0]}.`);
    }
    client.onclose = () => {
      if (this.#client === client) this.#client = undefined;
    };
    this.#client = client;
    return client;
  }

  /** The node's handler: one payer request forwarded; a failure becomes a JSON-RPC error, never a throw. */
  readonly handler: McpHandler = async (request) => {
    try {
      const method = request.method;
      if (typeof method !== "string" || !(FORWARDED_METHODS as readonly string[]).includes(method)) {
        throw new MethodNotForwardedError(`The method ${JSON.stringify(method)} is not forwarded to the worker; forwarded are ${FORWARDED_METHODS.join(", ")}.`);
      }
      if (this.#stopped) throw new WorkerCrashedError("The provider node is stopping.");
      const client = await this.#connect();
      const timeout = this.parameters.timeoutMs ?? 30_000;
      let result: JsonObject;
      try {
        result = (await client.request({ method, params: (request.params ?? {}) as Record<string, unknown> } as never, ResultSchema, { timeout })) as JsonObject;
      } catch (error) {
        if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) throw new WorkerTimeoutError(`The worker did not answer ${method} within ${timeout} ms.`);
        if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) return { error: workerRpcError({ code: error.code, message: error.message.replace(/^MCP error -?\d+: /, ""), data: error.data }) };
        const cause = (error as { cause?: unknown }).cause ?? error;
        if (cause instanceof WorkerOutputError) throw cause;
        // The transport failed (the server went away): connect afresh on the next call.
        void client.close().catch(() => undefined);
        if (this.#client === client) this.#client = undefined;
        throw new WorkerCrashedError(`The MCP server did not complete ${method}: ${(error as Error).message.split("\n")[0]}.`);
      }
      return { result, units: 1n };
    } catch (error) {
      const e = error instanceof BaseError ? error : new WorkerCrashedError(String((error as Error).message ?? error));
      return { error: { code: WORKER_ERROR_CODES[e.name as keyof typeof WORKER_ERROR_CODES] ?? -32000, message: e.shortMessage, data: { error: e.name } } };
    }
  };

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#client?.close().catch(() => undefined);
    this.#client = undefined;
  }
}

/** fetch whose POST answers are cut at `limit` bytes (a JSON body or an SSE stream), failing with WorkerOutputError. */
function limitedFetch(limit: number): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (init?.method !== "POST" || !response.body) return response;
    const declared = Number(response.headers.get("content-length") ?? "0");
    if (declared > limit) {
      await response.body.cancel().catch(() => undefined);
      throw new WorkerOutputError(`The worker's answer is ${declared} bytes; the limit is ${limit}.`);
    }
    let seen = 0;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > limit) controller.error(new WorkerOutputError(`The worker's answer passed ${limit} bytes; the limit.`));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
