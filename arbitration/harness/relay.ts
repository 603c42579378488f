/**
 * The parent's side of the deliverable host (process B): starts B on demand, forwards one call at a time,
 * and turns whatever B does into exactly one answer per call — its own well-formed answer, or "timeout"
 * (the call ran past the per-call limit: B's process group is killed), "host crashed" (B died after it
 * became ready) or "response too large". A B that cannot be spawned or dies before it is ready (before any
 * deliverable code ran) is the sandbox failing: it is reported through `onUnavailable`, not blamed on the
 * deliverable. A dead or killed B is replaced by a fresh one at the next call, so
 * module state never survives a timeout or a crash. Calls are served strictly in the order they arrive.
 */
import type { ChildProcess } from "node:child_process";

import { CALL_ERRORS, MAX_MESSAGE_BYTES, parseHostLine, type CallAnswer, type CallRequest } from "./protocol";

/** Splits a byte stream into lines; a line longer than `maxBytes` is dropped whole and reported. */
export class LineReader {
  private parts: Buffer[] = [];
  private size = 0;
  private skipping = false;

  constructor(
    private readonly maxBytes: number,
    private readonly onLine: (line: string) => void,
    private readonly onOversize: () => void = () => undefined,
  ) {}

  push(chunk: Buffer): void {
    let from = 0;
    for (;;) {
      const newline = chunk.indexOf(0x0a, from);
      const piece = chunk.subarray(from, newline < 0 ? chunk.length : newline);
      if (!this.skipping) {
        if (this.size + piece.length > this.maxBytes) {
          this.parts = [];
          this.size = 0;
          this.skipping = true;
          this.onOversize();
        } else if (piece.length > 0) {
          this.parts.push(piece);
          this.size += piece.length;
        }
      }
      if (newline < 0) return;
      if (!this.skipping) {
        const line = Buffer.concat(this.parts).toString("utf8");
        this.parts = [];
        this.size = 0;
        this.onLine(line);
      }
      this.skipping = false;
      from = newline + 1;
    }
  }
}

export type DeliverableHostOptions = {
  /** Spawns a fresh, isolated B: stdio [stdin, stdout, stderr, answers] all pipes, in its own process group. */
  spawn: () => ChildProcess;
  callTimeoutMs: number;
  startTimeoutMs: number;
  /** Applied to every string of an answer (replaces B's directory with "."). */
  rewrite: (text: string) => string;
  /** B's own stdout/stderr: diagnostics, never answers. */
  onOutput: (stream: "stdout" | "stderr", chunk: Buffer) => void;
  /** How long to wait for killed hosts' pipes to close in {@link DeliverableHost.close}. */
  killGraceMs: number;
  /**
   * Called when a host could not be spawned or died before it was ready. No deliverable code runs before
   * "ready", so this is the sandbox failing, never the deliverable: the replay must not count it against anyone.
   */
  onUnavailable: (reason: string) => void;
};

type InFlight = { id: number; settle: (answer: CallAnswer) => void };

type Instance = {
  child: ChildProcess;
  alive: boolean;
  /** Why it never became ready, if it did not. */
  failure?: string;
  ready: Promise<boolean>;
  inflight: InFlight | null;
  closed: Promise<void>;
};

export class DeliverableHost {
  /** Hosts started so far (the first, plus one per restart after a timeout or crash). */
  starts = 0;
  /** Calls forwarded to a ready host. */
  calls = 0;

  private readonly queue: Array<{ request: CallRequest; resolve: (answer: CallAnswer) => void }> = [];
  private readonly instances = new Set<Instance>();
  private current: Instance | null = null;
  private running = false;
  private closed = false;

  constructor(private readonly options: DeliverableHostOptions) {}

  /** Boots a host ahead of the first call (no deliverable code is loaded until a call names a module). */
  prestart(): void {
    if (!this.closed && this.current === null) this.current = this.launch();
  }

  /** Queues a call; resolves with its answer, never rejects. */
  request(request: CallRequest): Promise<CallAnswer> {
    if (this.closed) return Promise.resolve({ id: request.id, error: CALL_ERRORS.closed });
    return new Promise((resolve) => {
      this.queue.push({ request, resolve });
      void this.pump();
    });
  }

  /** Kills every host, answers the call in flight and queued calls with "host closed", and waits (bounded) for the hosts' pipes to close. */
  async close(): Promise<void> {
    this.closed = true;
    for (const item of this.queue.splice(0)) item.resolve({ id: item.request.id, error: CALL_ERRORS.closed });
    const waits = [...this.instances].map((instance) => {
      const inflight = instance.inflight;
      if (inflight) inflight.settle({ id: inflight.id, error: CALL_ERRORS.closed });
      this.discard(instance);
      return instance.closed;
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(waits), new Promise<void>((resolve) => (timer = setTimeout(resolve, this.options.killGraceMs)))]);
    clearTimeout(timer);
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const item = this.queue.shift()!;
        item.resolve(this.closed ? { id: item.request.id, error: CALL_ERRORS.closed } : await this.dispatch(item.request));
      }
    } finally {
      this.running = false;
    }
  }

  private async dispatch(request: CallRequest): Promise<CallAnswer> {
    const instance = this.current !== null && this.current.alive ? this.current : (this.current = this.launch());
    const ready = await instance.ready;
    if (this.closed) return { id: request.id, error: CALL_ERRORS.closed };
    if (!ready) {
      this.discard(instance);
      this.options.onUnavailable(instance.failure ?? "the deliverable host did not start");
      return { id: request.id, error: CALL_ERRORS.unavailable };
    }
    if (!instance.alive) {
      // It was ready, so deliverable code may have run in it (e.g. a timer left by an earlier call that exited).
      this.discard(instance);
      return { id: request.id, error: CALL_ERRORS.crashed };
    }
    this.calls++;
    return new Promise<CallAnswer>((resolve) => {
      const timer = setTimeout(() => {
        if (instance.inflight?.id !== request.id) return;
        instance.inflight = null;
        this.discard(instance);
        resolve({ id: request.id, error: CALL_ERRORS.timeout });
      }, this.options.callTimeoutMs);
      instance.inflight = {
        id: request.id,
        settle: (answer) => {
          clearTimeout(timer);
          instance.inflight = null;
          resolve(answer);
        },
      };
      instance.child.stdin!.write(`${JSON.stringify(request)}\n`);
    });
  }

  /** Marks a host dead and kills its process group; a later call starts a fresh one. */
  private discard(instance: Instance): void {
    instance.alive = false;
    if (this.current === instance) this.current = null;
    try {
      if (instance.child.pid !== undefined) process.kill(-instance.child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }

  private launch(): Instance {
    this.starts++;
    let markReady: (ready: boolean) => void = () => undefined;
    let markClosed: () => void = () => undefined;
    const ready = new Promise<boolean>((resolve) => (markReady = resolve));
    const closed = new Promise<void>((resolve) => (markClosed = resolve));
    let child: ChildProcess;
    try {
      child = this.options.spawn();
    } catch (error) {
      const failure = `the deliverable host could not be spawned: ${(error as Error).message}`;
      return { child: { pid: undefined } as ChildProcess, alive: false, failure, ready: Promise.resolve(false), inflight: null, closed: Promise.resolve() };
    }
    const instance: Instance = { child, alive: true, ready, inflight: null, closed };
    this.instances.add(instance);
    let isReady = false;

    const startTimer = setTimeout(() => {
      if (isReady) return;
      instance.failure = `the deliverable host did not start within ${this.options.startTimeoutMs} ms`;
      this.discard(instance);
      markReady(false);
    }, this.options.startTimeoutMs);

    const onLine = (line: string): void => {
      if (!instance.alive) return;
      const message = parseHostLine(line, this.options.rewrite);
      if (message === null) return;
      if (message === "ready") {
        if (!isReady) {
          isReady = true;
          clearTimeout(startTimer);
          markReady(true);
        }
        return;
      }
      if (instance.inflight !== null && message.id === instance.inflight.id) instance.inflight.settle(message);
    };
    const onOversize = (): void => {
      if (!instance.alive) return;
      const inflight = instance.inflight;
      this.discard(instance);
      if (inflight) inflight.settle({ id: inflight.id, error: CALL_ERRORS.tooLarge });
      markReady(false);
    };
    const reader = new LineReader(MAX_MESSAGE_BYTES, onLine, onOversize);
    const answers = child.stdio[3] as NodeJS.ReadableStream | null;
    answers?.on("data", (chunk: Buffer) => reader.push(chunk));
    answers?.on("error", () => undefined);
    child.stdin?.on("error", () => undefined);
    child.stdout?.on("data", (chunk: Buffer) => this.options.onOutput("stdout", chunk));
    child.stderr?.on("data", (chunk: Buffer) => this.options.onOutput("stderr", chunk));
    child.stdout?.on("error", () => undefined);
    child.stderr?.on("error", () => undefined);

    let ended = false;
    const onEnd = (): void => {
      if (ended) return;
      ended = true;
      clearTimeout(startTimer);
      if (!isReady) instance.failure ??= "the deliverable host exited before it was ready";
      instance.alive = false;
      if (this.current === instance) this.current = null;
      markReady(false);
      const inflight = instance.inflight;
      if (inflight) inflight.settle({ id: inflight.id, error: CALL_ERRORS.crashed });
      this.instances.delete(instance);
      markClosed();
    };
    // "close" comes after B's pipes are drained, so an answer written just before B exits is still read.
    child.on("close", onEnd);
    child.on("error", () => {
      if (child.pid === undefined) onEnd();
    });
    return instance;
  }
}
