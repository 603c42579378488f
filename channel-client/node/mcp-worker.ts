/**
 * A provider's worker: any MCP server run as a child process over stdio (MCP 2025-06-18, "stdio"
 * transport: one JSON-RPC message per line, UTF-8, no embedded newlines). The node starts it once, runs
 * the lifecycle handshake (initialize → notifications/initialized, then tools/list), and forwards each
 * paid invocation's JSON-RPC request to it under the worker's own request ids.
 *
 * The worker is the provider's own program, but it is fed the payer's requests, so everything it says is
 * checked at this boundary: a line longer than the limit, a line that is not JSON-RPC, an answer that
 * never comes, or an exit ends that call with a typed error; the worker is then restarted, a bounded
 * number of times in a row (docs/decisions/0022).
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";

import { BaseError } from "../core/errors";
import { NO_FAULT_CODES } from "../core/fault-statement";
import type { JsonObject } from "../core/validate";
import type { McpError, McpHandler } from "./provider-node";

/** The MCP revision this client speaks (the worker may answer with another it supports). */
export const MCP_PROTOCOL_VERSION = "2025-06-18";

/** Methods a payer may have forwarded: the server features of MCP, never its lifecycle. */
export const FORWARDED_METHODS = [
  "tools/call",
  "tools/list",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "prompts/list",
  "prompts/get",
  "completion/complete",
  "ping",
] as const;

/**
 * The environment a worker gets by default (issue 28 item 3, decision 0022): enough to find programs, write
 * temporary files and format text — never the node's keys, tokens or settings. Everything else must be passed
 * by name (`ioi provider --worker-env NAME`).
 */
export const DEFAULT_WORKER_ENV = ["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT"] as const;

/** Variables never handed to a worker, even by name: the node's signing keys. */
const NEVER_PASSED = /^IOI_(PRIVATE_KEY|.*KEY.*|.*SECRET.*|.*TOKEN.*|.*PASSWORD.*|.*KEYSTORE.*)$/i;

/** A name `--worker-env` cannot pass on. */
export class WorkerEnvError extends BaseError {
  override name = "WorkerEnvError" as const;
}

/**
 * The worker's environment: the default allow-list plus `extra` names, each copied from `source` when it is set.
 * A name that is not a variable name, or that names a key of the node (IOI_PRIVATE_KEY, the variable `--key-env`
 * names, any IOI_*KEY*, *SECRET*, *TOKEN*, *PASSWORD*), is refused with WorkerEnvError.
 */
export function workerEnvironment(extra: readonly string[] = [], source: NodeJS.ProcessEnv = process.env, keyVariable = "IOI_PRIVATE_KEY"): NodeJS.ProcessEnv {
  for (const name of extra) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new WorkerEnvError(`--worker-env ${JSON.stringify(name)} is not an environment variable name (letters, digits and _).`);
    if (name === keyVariable || NEVER_PASSED.test(name)) {
      throw new WorkerEnvError(`--worker-env ${name} would hand the worker a key of the node; it is never passed (the worker serves strangers).`);
    }
  }
  const env: NodeJS.ProcessEnv = {};
  for (const name of [...DEFAULT_WORKER_ENV, ...extra]) {
    const value = source[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** JSON-RPC error codes of the failures the node reports instead of a worker's answer. */
export const WORKER_ERROR_CODES = {
  WorkerCrashedError: -32010,
  WorkerTimeoutError: -32011,
  WorkerOutputError: -32012,
  WorkerUnavailableError: -32013,
  MethodNotForwardedError: -32014,
} as const;

/** The worker exited (or could not be started) while a call was in flight. */
export class WorkerCrashedError extends BaseError {
  override name = "WorkerCrashedError" as const;
}

/** The worker did not answer a call in time; it is killed and restarted. */
export class WorkerTimeoutError extends BaseError {
  override name = "WorkerTimeoutError" as const;
}

/** The worker wrote a line that is too long, not JSON, or not a JSON-RPC answer to the call. */
export class WorkerOutputError extends BaseError {
  override name = "WorkerOutputError" as const;
}

/** The worker failed too many times in a row; the node serves no more work until it is restarted. */
export class WorkerUnavailableError extends BaseError {
  override name = "WorkerUnavailableError" as const;
}

/** The payer asked for a method the node does not forward (lifecycle, notifications, anything unknown). */
export class MethodNotForwardedError extends BaseError {
  override name = "MethodNotForwardedError" as const;
}

export type WorkerError = WorkerCrashedError | WorkerTimeoutError | WorkerOutputError | WorkerUnavailableError | MethodNotForwardedError;

export type McpWorkerParameters = {
  command: string;
  args?: readonly string[];
  /** Longest time one call may take. Default 30 s. */
  timeoutMs?: number;
  /** Longest time the start (spawn and handshake) may take. Default 15 s. */
  startTimeoutMs?: number;
  /** Longest line the worker may write, in bytes. Default 512 KiB (an answer must fit in one packet). */
  maxLineBytes?: number;
  /**
   * Consecutive failed starts after which the worker is given up. Default 3. A call that crashes the
   * worker only costs a restart: counting failed calls would let one payer disable the worker for all.
   */
  maxRestarts?: number;
  /**
   * Environment of the child, exactly; default {@link workerEnvironment}() — the allow-list only, never the node's
   * whole environment (its keys). Build it with `workerEnvironment(names)` to pass more.
   */
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
};

type Pending = { resolve: (message: JsonObject) => void; reject: (error: Error) => void; timer: NodeJS.Timeout };

/** Everything the worker told us at start: who it is and what it offers. */
export type WorkerInfo = { protocolVersion: string; serverInfo: JsonObject | undefined; tools: JsonObject[] };

/**
 * One MCP server over stdio. Calls are sent as they come (the worker may answer out of order; answers are
 * matched by id). Start with `McpWorker.start`, serve with `handler`, end with `stop`.
 */
export class McpWorker {
  #child: ChildProcessWithoutNullStreams | undefined;
  #ready: Promise<WorkerInfo> | undefined;
  #info: WorkerInfo | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #failures = 0;
  #stopped = false;
  #buffer: Buffer[] = [];
  #buffered = 0;

  private constructor(readonly parameters: McpWorkerParameters) {}

  /** Spawns the worker and completes the MCP handshake; rejects with a typed error if it cannot. */
  static async start(parameters: McpWorkerParameters): Promise<McpWorker> {
    const worker = new McpWorker(parameters);
    await worker.#ensure();
    return worker;
  }

  get info(): WorkerInfo | undefined {
    return this.#info;
  }

  /** The node's handler: forwards one payer request; a failure becomes a JSON-RPC error, never a throw. */
  readonly handler: McpHandler = async (request) => {
    try {
      const answer = await this.call(request);
      if (answer.error !== undefined) return { error: workerRpcError(answer.error) };
      return { result: answer.result as JsonObject, units: 1n };
    } catch (error) {
      const e = error instanceof BaseError ? error : new WorkerCrashedError(String((error as Error).message ?? error));
      return { error: { code: WORKER_ERROR_CODES[e.name as keyof typeof WORKER_ERROR_CODES] ?? -32000, message: e.shortMessage, data: { error: e.name } } };
    }
  };

  /**
   * Forwards `request` (its method and params; the id is the worker's own) and resolves with the worker's
   * answer: an object with either `result` (an object) or `error`.
   */
  async call(request: JsonObject): Promise<{ result?: JsonObject; error?: unknown }> {
    const method = request.method;
    if (typeof method !== "string" || !(FORWARDED_METHODS as readonly string[]).includes(method)) {
      throw new MethodNotForwardedError(`The method ${JSON.stringify(method)} is not forwarded to the worker; forwarded are ${FORWARDED_METHODS.join(", ")}.`);
    }
    if (request.params !== undefined && (typeof request.params !== "object" || request.params === null || Array.isArray(request.params))) {
      throw new MethodNotForwardedError("MCP params must be an object.");
    }
    await this.#ensure();
    return this.#send(method, request.params as JsonObject | undefined);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#kill(new WorkerCrashedError("The provider node is stopping."));
  }

  /** Starts (or restarts) the worker if it is not running; bounded by `maxRestarts` failures in a row. */
  async #ensure(): Promise<WorkerInfo> {
    if (this.#stopped) throw new WorkerUnavailableError("The worker was stopped.");
    if (this.#ready) return this.#ready;
    const limit = this.parameters.maxRestarts ?? 3;
    if (this.#failures >= limit) {
      throw new WorkerUnavailableError(`The worker failed to start ${this.#failures} times in a row; no more work is served until the provider restarts it.`);
    }
    const ready = this.#spawn();
    this.#ready = ready;
    ready.then(
      () => (this.#failures = 0),
      () => {
        this.#failures += 1;
        if (this.#ready === ready) this.#ready = undefined;
      },
    );
    return ready;
  }

  async #spawn(): Promise<WorkerInfo> {
    const { command, args = [], env } = this.parameters;
    const child = spawn(command, [...args], { stdio: ["pipe", "pipe", "pipe"], env: env ?? workerEnvironment() });
    this.#child = child;
    this.#buffer = [];
    this.#buffered = 0;
    child.stdout.on("data", (chunk: Buffer) => this.#onData(child, chunk));
    // The worker's log goes to the node's log, line by line, never into the protocol.
    child.stderr.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n")) if (line.trim()) this.parameters.log?.(`worker: ${line.slice(0, 500)}`);
    });
    child.stdin.on("error", () => undefined); // a write to a dead worker surfaces as its exit
    const exited = new Promise<never>((_, reject) => {
      child.once("error", (error) => {
        this.#onExit(child, new WorkerCrashedError(`The worker "${command}" could not be started: ${error.message}.`));
        reject(new WorkerCrashedError(`The worker "${command}" could not be started: ${error.message}.`));
      });
      child.once("exit", (code, signal) => {
        const why = new WorkerCrashedError(`The worker exited (${signal ? `signal ${signal}` : `code ${code}`}).`);
        this.#onExit(child, why);
        reject(why);
      });
    });
    exited.catch(() => undefined);
    const handshake = (async () => {
      const startTimeoutMs = this.parameters.startTimeoutMs ?? 15_000;
      const init = await this.#send("initialize", {
        protocolVersion: MCP_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: "ioi-provider-node", version: "1" },
      }, startTimeoutMs);
      if (init.error !== undefined || typeof init.result?.protocolVersion !== "string") {
        throw new WorkerOutputError(`The worker refused to initialize: ${JSON.stringify(init.error ?? init.result).slice(0, 200)}.`);
      }
      this.#write({ jsonrpc: "2.0", method: "notifications/initialized" });
      const capabilities = init.result.capabilities as JsonObject | undefined;
      let tools: JsonObject[] = [];
      if (capabilities && typeof capabilities === "object" && "tools" in capabilities) {
        const listed = await this.#send("tools/list", {}, startTimeoutMs);
        const list = listed.result?.tools;
        if (!Array.isArray(list)) throw new WorkerOutputError("The worker's tools/list answer has no tools array.");
        tools = list as JsonObject[];
      }
      const info: WorkerInfo = { protocolVersion: init.result.protocolVersion, serverInfo: init.result.serverInfo as JsonObject | undefined, tools };
      this.#info = info;
      this.parameters.log?.(`worker ready (MCP ${info.protocolVersion}; tools: ${tools.map((t) => String(t.name)).join(", ") || "none"})`);
      return info;
    })();
    return Promise.race([handshake, exited]).catch((error: unknown) => {
      this.#kill(error as Error);
      throw error;
    });
  }

  #send(method: string, params: JsonObject | undefined, timeoutMs = this.parameters.timeoutMs ?? 30_000): Promise<{ result?: JsonObject; error?: unknown }> {
    const id = this.#nextId++;
    // The worker may have died between the start check and this call: fail now, not at the timeout.
    if (!this.#child) return Promise.reject(new WorkerCrashedError(`The worker exited before ${method} could be sent.`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new WorkerTimeoutError(`The worker did not answer ${method} within ${timeoutMs} ms; it is restarted.`));
        // A worker that hangs on one call may hang on all: restart it (the other calls fail as crashed).
        this.#kill(new WorkerCrashedError(`The worker was restarted after a ${method} call timed out.`));
      }, timeoutMs);
      this.#pending.set(id, { resolve: resolve as (m: JsonObject) => void, reject, timer });
      this.#write({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });
    });
  }

  #write(message: JsonObject): void {
    this.#child?.stdin.write(`${JSON.stringify(message)}\n`);
  }

  #onData(child: ChildProcessWithoutNullStreams, chunk: Buffer): void {
    if (child !== this.#child) return;
    const limit = this.parameters.maxLineBytes ?? 512 * 1024;
    let start = 0;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, start)) {
      this.#buffer.push(chunk.subarray(start, i));
      const line = Buffer.concat(this.#buffer);
      this.#buffer = [];
      this.#buffered = 0;
      start = i + 1;
      if (line.length > limit) return this.#fault(new WorkerOutputError(`The worker wrote a line of ${line.length} bytes; the limit is ${limit}.`));
      if (line.toString("utf8").trim() === "") continue;
      this.#onLine(line.toString("utf8"));
      if (child !== this.#child) return;
    }
    const rest = chunk.subarray(start);
    this.#buffer.push(rest);
    this.#buffered += rest.length;
    if (this.#buffered > limit) this.#fault(new WorkerOutputError(`The worker wrote more than ${limit} bytes without a newline.`));
  }

  #onLine(line: string): void {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      return this.#fault(new WorkerOutputError(`The worker wrote a line that is not JSON: ${line.slice(0, 80)}`));
    }
    if (typeof message !== "object" || message === null || Array.isArray(message) || (message as JsonObject).jsonrpc !== "2.0") {
      return this.#fault(new WorkerOutputError(`The worker wrote something that is not a JSON-RPC 2.0 message: ${line.slice(0, 80)}`));
    }
    const m = message as JsonObject;
    if (m.method !== undefined) {
      // A request or notification from the worker (logging, progress, sampling…): this client offers no
      // client features, so requests get "method not found" and notifications are dropped.
      if (m.id !== undefined) this.#write({ jsonrpc: "2.0", id: m.id as never, error: { code: -32601, message: "The provider node offers no client features." } });
      return;
    }
    const pending = typeof m.id === "number" ? this.#pending.get(m.id) : undefined;
    if (!pending) return this.#fault(new WorkerOutputError(`The worker answered id ${JSON.stringify(m.id)}, which no call awaits.`));
    const hasResult = m.result !== undefined;
    const hasError = m.error !== undefined;
    const resultIsObject = typeof m.result === "object" && m.result !== null && !Array.isArray(m.result);
    if (hasResult === hasError || (hasResult && !resultIsObject)) {
      return this.#fault(new WorkerOutputError("The worker's answer has neither an object result nor an error."));
    }
    this.#pending.delete(m.id as number);
    clearTimeout(pending.timer);
    pending.resolve(hasResult ? { result: m.result } : { error: m.error });
  }

  /** The worker broke the protocol: every call in flight fails with `error` and the worker is restarted. */
  #fault(error: WorkerOutputError): void {
    this.parameters.log?.(`${error.shortMessage} Restarting the worker.`);
    this.#kill(error);
  }

  #kill(error: Error): void {
    const child = this.#child;
    if (!child) return;
    this.#onExit(child, error);
    child.kill("SIGKILL");
  }

  #onExit(child: ChildProcessWithoutNullStreams, error: Error): void {
    if (child !== this.#child) return;
    this.#child = undefined;
    this.#ready = undefined;
    for (const [id, pending] of this.#pending) {
      clearTimeout(pending.timer);
      this.#pending.delete(id);
      pending.reject(error);
    }
  }
}

/** A worker's own JSON-RPC error, kept as it said it (bounded), so the payer sees why its call failed. */
export function workerRpcError(error: unknown): McpError {
  const e = (typeof error === "object" && error !== null ? error : {}) as JsonObject;
  const code = typeof e.code === "number" && Number.isInteger(e.code) ? e.code : -32000;
  const message = typeof e.message === "string" ? e.message.slice(0, 1024) : "The worker answered with an error.";
  // Codes the node reserves for its own meanings are not the worker's to use.
  const reserved = code === -32001 || (Object.values(WORKER_ERROR_CODES) as number[]).includes(code);
  // A worker may declare a no-fault code (its upstream refused on policy): the only `data` passed on, so the
  // provider's fault statement can name it (decision 0015). Anything else in `data` stays with the worker.
  const data = typeof e.data === "object" && e.data !== null ? (e.data as JsonObject) : {};
  const fault = typeof data.fault === "string" && (NO_FAULT_CODES as readonly string[]).includes(data.fault) ? data.fault : undefined;
  return { code: reserved ? -32000 : code, message, ...(fault ? { data: { fault } } : {}) };
}

/**
 * `ioi provider … --worker CMD [ARGS…]`: everything after `--worker` is the worker's command line.
 * Returns the node's own arguments and the worker's (undefined when there is no `--worker`).
 */
export function splitWorkerArgv(args: readonly string[]): { own: string[]; worker: string[] | undefined } {
  const at = args.indexOf("--worker");
  if (at === -1) return { own: [...args], worker: undefined };
  return { own: args.slice(0, at), worker: args.slice(at + 1) };
}
