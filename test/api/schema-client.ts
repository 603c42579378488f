/**
 * An integrator's client of the control API that knows only the published document (schemas/openrpc.json),
 * plain `fetch` and a plain WebSocket (the `ws` package: Node 20 has no global WebSocket). It imports nothing
 * from src/: it refuses to call a method the document does not list and checks its own params against the
 * document's schema before sending, as a generated client would.
 */
import Ajv, { type ValidateFunction } from "ajv";
import { readFileSync } from "node:fs";
import path from "node:path";
import WebSocket from "ws";

type Descriptor = { name: string; required: boolean; schema: Record<string, unknown> };
type MethodDoc = { name: string; params: Descriptor[]; tags?: { name: string }[] };
export type OpenRpcDoc = { openrpc: string; methods: MethodDoc[] };

export const DOCUMENT: OpenRpcDoc = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "schemas", "openrpc.json"), "utf8")) as OpenRpcDoc;

const ajv = new Ajv({ strict: false });
const validators = new Map<string, ValidateFunction>(
  DOCUMENT.methods.map((m) => [
    m.name,
    ajv.compile({
      type: "object",
      additionalProperties: false,
      properties: Object.fromEntries(m.params.map((d) => [d.name, d.schema])),
      required: m.params.filter((d) => d.required).map((d) => d.name),
    }),
  ]),
);

export type RpcError = { code: number; message: string; data?: { reason: string; retryable: boolean; name?: string } };
export type RpcResponse = { jsonrpc: "2.0"; id: string | number | null; result?: any; error?: RpcError };

/** Thrown for a JSON-RPC error answer. */
export class RpcCallError extends Error {
  constructor(readonly error: RpcError) {
    super(error.message);
  }
}

function checked(method: string, params: Record<string, unknown>): void {
  const validate = validators.get(method);
  if (!validate) throw new Error(`The published document lists no method ${method}.`);
  if (!validate(params)) throw new Error(`Params for ${method} do not match the published schema: ${ajv.errorsText(validate.errors)}`);
}

let nextId = 1;

/** One JSON-RPC call over HTTP, params checked against the document first. */
export async function httpCall(url: string, token: string, method: string, params: Record<string, unknown> = {}): Promise<any> {
  checked(method, params);
  const response = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }) });
  const body = (await response.json()) as RpcResponse;
  if (body.error) throw new RpcCallError(body.error);
  return body.result;
}

/** A raw HTTP exchange: whatever body and headers, for auth and bad-input tests. */
export async function httpRaw(url: string, body: string | Uint8Array, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : new Blob([Uint8Array.from(body)]) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

export type Notification = { subscription: string; topic: string; event: Record<string, any> };

/** A WebSocket session: calls, and notifications collected as they arrive. */
export class WsSession {
  readonly notifications: Notification[] = [];
  readonly #pending = new Map<number, (response: RpcResponse) => void>();
  readonly #waiters: { match: (n: Notification) => boolean; resolve: (n: Notification) => void }[] = [];
  readonly raw: RpcResponse[] = [];
  closed: { code: number } | undefined;

  private constructor(readonly socket: WebSocket) {
    socket.on("message", (data: Buffer) => {
      const message = JSON.parse(data.toString("utf8")) as RpcResponse & { method?: string; params?: Notification };
      if (message.method === "subscription") {
        const n = message.params!;
        this.notifications.push(n);
        for (let i = this.#waiters.length - 1; i >= 0; i--) {
          if (this.#waiters[i]!.match(n)) this.#waiters.splice(i, 1)[0]!.resolve(n);
        }
        return;
      }
      const waiter = typeof message.id === "number" ? this.#pending.get(message.id) : undefined;
      if (waiter) {
        this.#pending.delete(message.id as number);
        waiter(message);
      } else this.raw.push(message);
    });
    socket.on("close", (code: number) => (this.closed = { code }));
  }

  static open(url: string, token: string | undefined): Promise<WsSession> {
    const socket = new WebSocket(url, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
    return new Promise((resolve, reject) => {
      socket.on("open", () => resolve(new WsSession(socket)));
      socket.on("unexpected-response", (_request: unknown, response: { statusCode?: number }) => reject(new Error(`upgrade refused with HTTP ${response.statusCode}`)));
      socket.on("error", reject);
    });
  }

  /** A call over the socket, params checked against the document first. */
  async call(method: string, params: Record<string, unknown> = {}): Promise<any> {
    checked(method, params);
    const response = await this.send({ jsonrpc: "2.0", id: nextId++, method, params });
    if (response.error) throw new RpcCallError(response.error);
    return response.result;
  }

  /** Sends a request object as it is (no checking) and awaits its answer. */
  send(request: { id: number } & Record<string, unknown>): Promise<RpcResponse> {
    return new Promise((resolve) => {
      this.#pending.set(request.id, resolve);
      this.socket.send(JSON.stringify(request));
    });
  }

  /** The next notification (already received or future) that `match` accepts, within `ms`. */
  next(match: (n: Notification) => boolean, ms = 30_000): Promise<Notification> {
    const seen = this.notifications.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`No matching notification within ${ms} ms.`)), ms);
      this.#waiters.push({ match, resolve: (n) => (clearTimeout(timer), resolve(n)) });
    });
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.once("close", () => resolve());
      this.socket.close();
    });
  }
}
