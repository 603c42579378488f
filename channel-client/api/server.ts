/**
 * The control API server (decision 0029): JSON-RPC 2.0 over HTTP (POST /) and WebSocket (upgrade on /), one
 * port, loopback unless `listenPublic`, every request authenticated by a bearer token compared in constant time.
 *
 * The boundary: a body or frame is bounded (`maxRequestBytes`), parsed, checked to be a JSON-RPC 2.0 request
 * (or a bounded batch of them), its method looked up in the table and its params validated with Ajv against the
 * method's published schema — before any SDK code runs. Anything wrong is answered with a JSON-RPC error whose
 * message is one sentence and whose `data` says `reason` and `retryable` (channel-client/api/errors.ts); no frame, however
 * malformed, ends the process or the connection (only an over-long WebSocket frame closes it, with 1009).
 */
import Ajv, { type ErrorObject, type ValidateFunction } from "ajv";
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { isIP } from "node:net";
import path from "node:path";
import { WebSocketServer, type RawData, type WebSocket } from "ws";

import { ApiError, oneSentence, toWireError, type WireError } from "./errors";
import { ApiRuntime, METHODS, paramsSchema, type ApiContext, type Connection, type MethodSpec } from "./methods";
import { StreamWatch } from "./stream-watch";
import { ChainWatch, type ApiEvent, type Topic } from "./subscriptions";

export const DEFAULT_API_PORT = 8645;
/** Largest HTTP body or WebSocket frame accepted (1 MiB). */
export const DEFAULT_MAX_REQUEST_BYTES = 1 << 20;
/** Most requests in one batch. */
export const MAX_BATCH = 64;
/** Most subscriptions one WebSocket may hold. */
export const MAX_SUBSCRIPTIONS = 64;

export type StartApiServerParameters = {
  context: ApiContext;
  token: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Allow a bind address that is not loopback (the operator said so explicitly). */
  listenPublic?: boolean;
  maxRequestBytes?: number;
  /** Poll interval of the chain watch behind the phases, cases and alerts topics. */
  pollMs?: number;
  /** Seconds before a closing window ends that `window.closing` is raised (default 600). */
  warnSeconds?: bigint;
  /** No new block for this long raises `chain.stalled` (default 60 s; 0 disables). */
  stallMs?: number;
  onError?: (error: unknown) => void;
};

export type RunningApiServer = { host: string; port: number; url: string; wsUrl: string; runtime: ApiRuntime; close(): Promise<void> };

/** Whether `host` names only this machine: 127.0.0.0/8, ::1, ::ffff:127.x, or localhost. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (h === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6) return h === "::1" || /^::ffff:127\./.test(h);
  return false;
}

/** The token from `file` (created with 32 random bytes, mode 0600, when absent); refuses a file others can read. */
export function loadOrCreateToken(file: string): { token: string; created: boolean } {
  if (existsSync(file)) {
    const mode = statSync(file).mode & 0o777;
    if ((mode & 0o077) !== 0) throw new ApiError("INVALID_REQUEST", `The token file ${file} can be read by others (mode ${mode.toString(8)}): chmod 600 it or remove it.`);
    const token = readFileSync(file, "utf8").trim();
    if (token.length < 32) throw new ApiError("INVALID_REQUEST", `The token file ${file} holds fewer than 32 characters: remove it to have a new token generated.`);
    return { token, created: false };
  }
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const token = randomBytes(32).toString("hex");
  writeFileSync(file, `${token}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600); // against a umask that widened nothing, and to be explicit
  return { token, created: true };
}

/** Constant-time comparison of the presented bearer token with the server's (hashed first: equal lengths). */
export function tokenMatches(presented: string | undefined, token: string): boolean {
  if (presented === undefined) return false;
  const a = createHash("sha256").update(presented).digest();
  const b = createHash("sha256").update(token).digest();
  return timingSafeEqual(a, b);
}

function bearerOf(request: IncomingMessage): string | undefined {
  const header = request.headers.authorization;
  const match = typeof header === "string" ? /^Bearer (\S+)$/i.exec(header.trim()) : null;
  return match?.[1];
}

type JsonRpcResponse = { jsonrpc: "2.0"; id: string | number | null; result?: unknown; error?: WireError };

const ajv = new Ajv({ strict: true, allErrors: false, verbose: true });
const validators = new Map<string, ValidateFunction>(Object.entries(METHODS).map(([name, spec]) => [name, ajv.compile(paramsSchema(spec))]));

/** One sentence naming the first broken rule of a method's params. */
function paramsProblem(method: string, error: ErrorObject): string {
  const field = `params${error.instancePath.replace(/\/(\d+)(?=\/|$)/g, "[$1]").replace(/\//g, ".")}`;
  if (error.keyword === "required") return `${method}: params.${(error.params as { missingProperty: string }).missingProperty} is required.`;
  if (error.keyword === "additionalProperties") return `${method}: ${field} has an unknown field "${(error.params as { additionalProperty: string }).additionalProperty}".`;
  const description = (error.parentSchema as { description?: string } | undefined)?.description;
  const received = JSON.stringify(error.data);
  return oneSentence(`${method}: ${field} must be ${description ?? error.message ?? "valid"}; received ${received && received.length > 60 ? `${received.slice(0, 57)}...` : received}`);
}

const failure = (id: JsonRpcResponse["id"], error: unknown): JsonRpcResponse => ({ jsonrpc: "2.0", id, error: toWireError(error) });

/** Starts the API; rejects (binding nothing) a non-loopback host unless `listenPublic`. */
export async function startApiServer(parameters: StartApiServerParameters): Promise<RunningApiServer> {
  const { context, token, host = "127.0.0.1", port = DEFAULT_API_PORT, listenPublic = false, maxRequestBytes = DEFAULT_MAX_REQUEST_BYTES, onError } = parameters;
  if (!isLoopback(host) && !listenPublic) {
    throw new ApiError("INVALID_REQUEST", `Refusing to listen on ${host}, which is not loopback: pass --allow-public to expose the API beyond this machine.`);
  }
  if (token.length < 16) throw new ApiError("INVALID_REQUEST", "The API token must be at least 16 characters.");
  const runtime = new ApiRuntime(context);
  const escrow = runtime.payer.escrow;
  const contract = (name: "GigEscrow" | "DisputeManager") => {
    const entry = context.deployment.contracts[name];
    return entry === undefined ? undefined : typeof entry === "string" ? entry : entry.address;
  };
  const watch = new ChainWatch({
    publicClient: context.publicClient,
    store: context.store,
    hub: context.hub,
    escrow,
    ...(contract("GigEscrow") ? { gigEscrow: contract("GigEscrow")! } : {}),
    ...(contract("DisputeManager") ? { disputeManager: contract("DisputeManager")! } : {}),
    gigs: context.gigs,
    pollMs: parameters.pollMs ?? 1000,
    ...(parameters.warnSeconds !== undefined ? { warnSeconds: parameters.warnSeconds } : {}),
    ...(parameters.stallMs !== undefined ? { stallMs: parameters.stallMs } : {}),
    ...(onError ? { onError } : {}),
  });

  const streams = context.streamsDir === undefined ? undefined : new StreamWatch({ store: context.store, hub: context.hub, dir: context.streamsDir, pollMs: parameters.pollMs ?? 1000, ...(onError ? { onError } : {}) });

  /** Answers one parsed request object (never throws); undefined for a notification (no id). */
  async function answerOne(message: unknown, connection: Connection, overWebSocket: boolean): Promise<JsonRpcResponse | undefined> {
    if (message === null || typeof message !== "object" || Array.isArray(message)) {
      return failure(null, new ApiError("INVALID_REQUEST", "A request must be a JSON object with jsonrpc \"2.0\", a method and an id."));
    }
    const { jsonrpc, method, params, id } = message as Record<string, unknown>;
    const validId = id === undefined || id === null || typeof id === "string" || (typeof id === "number" && Number.isSafeInteger(id));
    const replyId = validId && id !== undefined ? (id as JsonRpcResponse["id"]) : null;
    if (jsonrpc !== "2.0") return failure(replyId, new ApiError("INVALID_REQUEST", 'A request must carry jsonrpc "2.0".'));
    if (!validId) return failure(null, new ApiError("INVALID_REQUEST", "A request id must be a string, a safe integer or null."));
    if (typeof method !== "string") return failure(replyId, new ApiError("INVALID_REQUEST", "A request must name its method as a string."));
    const spec: MethodSpec | undefined = Object.prototype.hasOwnProperty.call(METHODS, method) ? METHODS[method] : undefined;
    if (!spec) return failure(replyId, new ApiError("METHOD_NOT_FOUND", `There is no method "${method.slice(0, 80)}"; node.info and schemas/openrpc.json list them.`));
    if (spec.websocketOnly && !overWebSocket) return failure(replyId, new ApiError("NEEDS_WEBSOCKET", `${method} needs a WebSocket connection: subscriptions stream over one.`));
    const named = params === undefined ? {} : params;
    if (named === null || typeof named !== "object" || Array.isArray(named)) {
      return failure(replyId, new ApiError("INVALID_PARAMS", `${method}: params must be an object of named parameters.`));
    }
    const validate = validators.get(method)!;
    if (!validate(named)) return failure(replyId, new ApiError("INVALID_PARAMS", paramsProblem(method, validate.errors![0]!)));
    let response: JsonRpcResponse;
    try {
      response = { jsonrpc: "2.0", id: replyId, result: await spec.run(runtime, named as Record<string, unknown>, connection) };
    } catch (error) {
      response = failure(replyId, error);
      if (response.error!.data.reason === "INTERNAL") onError?.(error);
    }
    return id === undefined ? undefined : response;
  }

  /** Answers a body or frame: one request, or a batch; undefined when nothing is owed (notifications only). */
  async function answerText(text: string, connection: Connection, overWebSocket: boolean): Promise<unknown> {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return failure(null, new ApiError("PARSE_ERROR", "The request is not valid JSON."));
    }
    if (!Array.isArray(message)) return answerOne(message, connection, overWebSocket);
    if (message.length === 0) return failure(null, new ApiError("INVALID_REQUEST", "A batch must hold at least one request."));
    if (message.length > MAX_BATCH) return failure(null, new ApiError("TOO_LARGE", `A batch may hold at most ${MAX_BATCH} requests; it held ${message.length}.`));
    const answers = (await Promise.all(message.map((m) => answerOne(m, connection, overWebSocket)))).filter((a) => a !== undefined);
    return answers.length > 0 ? answers : undefined;
  }

  const send = (response: ServerResponse, status: number, body: unknown) => {
    const text = body === undefined ? "" : JSON.stringify(body);
    response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), "cache-control": "no-store" });
    response.end(text);
  };

  const server: Server = createServer((request, response) => {
    request.on("error", () => undefined);
    if (!tokenMatches(bearerOf(request), token)) {
      response.setHeader("www-authenticate", 'Bearer realm="ioi"');
      send(response, 401, failure(null, new ApiError("UNAUTHORIZED", "A valid bearer token is required (Authorization: Bearer <token>).")));
      request.resume();
      return;
    }
    if (request.method !== "POST") {
      response.setHeader("allow", "POST");
      send(response, 405, failure(null, new ApiError("INVALID_REQUEST", "Send JSON-RPC requests with POST, or upgrade to a WebSocket.")));
      request.resume();
      return;
    }
    const declared = Number(request.headers["content-length"] ?? 0);
    const tooLarge = () => send(response, 413, failure(null, new ApiError("TOO_LARGE", `A request may be at most ${maxRequestBytes} bytes.`)));
    if (declared > maxRequestBytes) {
      tooLarge();
      request.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let aborted = false;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxRequestBytes && !aborted) {
        aborted = true;
        tooLarge();
        request.destroy();
        return;
      }
      if (!aborted) chunks.push(chunk);
    });
    request.on("end", () => {
      if (aborted) return;
      void answerText(Buffer.concat(chunks).toString("utf8"), {}, false).then(
        (answer) => (answer === undefined ? send(response, 204, undefined) : send(response, 200, answer)),
        (error: unknown) => send(response, 500, failure(null, error)),
      );
    });
  });
  server.on("clientError", (_error, socket) => socket.destroy());

  const wss = new WebSocketServer({ noServer: true, maxPayload: maxRequestBytes });
  server.on("upgrade", (request, socket, head) => {
    socket.on("error", () => undefined);
    if (!tokenMatches(bearerOf(request), token)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm="ioi"\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => serveSocket(ws));
  });

  function serveSocket(ws: WebSocket): void {
    const mine = new Set<string>();
    const connection: Connection = {
      subscribe: (topic: Topic, filter) => {
        if (mine.size >= MAX_SUBSCRIPTIONS) throw new ApiError("TOO_LARGE", `A connection may hold at most ${MAX_SUBSCRIPTIONS} subscriptions.`);
        const id: string = context.hub.subscribe(topic, filter, (event: ApiEvent) => {
          if (ws.readyState === 1) ws.send(JSON.stringify({ jsonrpc: "2.0", method: "subscription", params: { subscription: id, topic, event } }));
        });
        mine.add(id);
        return id;
      },
      unsubscribe: (id: string) => mine.delete(id) && context.hub.unsubscribe(id),
    };
    ws.on("error", () => undefined);
    ws.on("close", () => {
      for (const id of mine) context.hub.unsubscribe(id);
      mine.clear();
    });
    ws.on("message", (data: RawData, isBinary: boolean) => {
      const text = isBinary ? undefined : Buffer.isBuffer(data) ? data.toString("utf8") : Array.isArray(data) ? Buffer.concat(data).toString("utf8") : Buffer.from(data).toString("utf8");
      const answer =
        text === undefined
          ? Promise.resolve(failure(null, new ApiError("PARSE_ERROR", "Frames must be text holding JSON; a binary frame was received.")))
          : answerText(text, connection, true);
      void answer.then(
        (a) => {
          if (a !== undefined && ws.readyState === 1) ws.send(JSON.stringify(a));
        },
        () => undefined,
      );
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  await watch.start();
  streams?.start();
  const address = server.address();
  const boundPort = typeof address === "object" && address ? address.port : port;
  const urlHost = isIP(host) === 6 ? `[${host}]` : host;
  return {
    host,
    port: boundPort,
    url: `http://${urlHost}:${boundPort}/`,
    wsUrl: `ws://${urlHost}:${boundPort}/`,
    runtime,
    async close() {
      await watch.stop();
      await streams?.stop();
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await runtime.close();
    },
  };
}
