/**
 * Replays a test suite against a deliverable in isolated child processes and captures a UPIP record.
 *
 * Two processes, so the deliverable never shares one with the suite:
 * - **A, the suite** (the client's code, bound by hash): `node <command[1]>` in a directory holding only
 *   the suite's files and the trusted harness at `.ioi/harness.js`. The suite reaches the deliverable only
 *   through `require("./.ioi/harness.js").call(fn, args, { module })`, which writes a request on A's fd 3
 *   and reads the answer on A's stdin. A's stdout is the suite's own output; its last non-empty line is the
 *   summary, which no deliverable code can print, patch or pre-empt.
 * - **B, the deliverable host** (the provider's untrusted code): `node .ioi/host.js` in another directory
 *   holding only the deliverable under `deliverable/` and the host script. The host pins time and
 *   randomness, then loads deliverable modules on demand and answers calls on its fd 3 (so the
 *   deliverable's own stdout/stderr can never pass for an answer). A call that runs past `callTimeoutMs`
 *   kills B's process group and answers "timeout"; a B that dies answers "host crashed"; the next call
 *   starts a fresh B. See `harness/protocol.ts` for the wire format and `harness/relay.ts` for the relay.
 *
 * Isolation of both, all of it required (if any piece is missing the replay throws
 * {@link SandboxUnavailableError} and the caller fails safe; nothing ever runs without it):
 * - no network, no signals out: `unshare -rn --pid --fork` puts each child in a fresh user, network and PID
 *   namespace (loopback down; no process outside its own namespace can be seen or signalled, not the other
 *   child and not the arbitrator);
 * - no ambient authority: a pinned minimal environment, `shell: false`, cwd a fresh temp dir of its own;
 * - Node's permission model: each child may read only its own directory, and may not write files, spawn
 *   processes, start workers or load addons; `eval`/`new Function` are disabled;
 * - resources: `prlimit` caps data memory at 1 GiB and open files at 256, V8's heap at 256 MiB; the replay's
 *   timeout and A's output limit SIGKILL both process groups. B's output is captured as diagnostics up to
 *   the same limit and dropped beyond it, never counted against the suite.
 *
 * Determinism: the record holds no timestamps, pids or paths; occurrences of either temp dir's path in the
 * output (and in the deliverable's answers) are replaced by `.` before hashing, and a run cut short by a
 * limit records no output at all (how much was printed before the kill depends on timing), only which
 * limit ended it. The result layer covers A only (exit code, stdout, stderr): B's own output is returned
 * as diagnostics and never hashed. What B pins and what it cannot is listed in `harness/sources.ts` and
 * docs/decisions/0011.
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { constants as fsConstants } from "node:fs";
import { access, mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { bundleFromJson, type Bundle } from "./bundle";
import { InvalidBundleError, SandboxUnavailableError, UnsupportedRunnerError } from "./errors";
import { DEFAULT_CALL_TIMEOUT_MS, ICS_LIMITS, type Runner } from "./ics";
import { defaultModule, HARNESS_PATH, HOST_PATH, HOST_START_TIMEOUT_MS, MAX_MESSAGE_BYTES, parseRequest, type CallAnswer } from "./harness/protocol";
import { DeliverableHost, LineReader } from "./harness/relay";
import { HARNESS_SHA256, HARNESS_SOURCE, HOST_SOURCE } from "./harness/sources";
import { upipDeps, upipRecord, upipResult, upipState, type UpipProcess, type UpipRecord } from "./upip";

/** The suite's verdict: the last non-empty stdout line, `{"total": n, "failed": ["name", ...]}`. */
export type TestSummary = { total: number; failed: string[] };

export type ReplayParameters = {
  suite: Bundle;
  deliverable: Bundle;
  runner: Runner;
  /** Who runs the replay (UPIP L3 `actor`), e.g. the arbitrator's id. */
  actor: string;
  /** Why (UPIP L3 `intent`), e.g. "Lane 1 replay of case 0x...". */
  intent: string;
};

export type ReplayOutcome = {
  record: UpipRecord;
  /** The suite's captured output (temp dirs' paths replaced by `.`), at most `maxOutputBytes` in all; diagnostics only. */
  stdout: string;
  stderr: string;
  /** Null when the run hit a limit or its last stdout line is not a well-formed summary. */
  summary: TestSummary | null;
  /** The deliverable host's own stdout/stderr over all its restarts (paths replaced), at most `maxOutputBytes` in all; never hashed. */
  hostStdout?: string;
  hostStderr?: string;
  /** Calls the suite made that reached a host, and how many hosts were started (1 + restarts after timeouts and crashes). */
  calls?: number;
  hostStarts?: number;
};

/** Where the isolation tools live; tests may point these elsewhere to see the sandbox refuse to run. */
export type SandboxTools = { unshare: string; prlimit: string };

/** The environment of every replay; HOME is the process's own directory (shown as "." in the record). */
export const PINNED_ENV = { PATH: "/usr/bin:/bin", LANG: "C", LC_ALL: "C", TZ: "UTC", NODE_OPTIONS: "" } as const;

/** Directory the deliverable's files are written under, inside the deliverable host's directory. */
export const DELIVERABLE_DIR = "deliverable";

/** What the suite's environment (and so the record's `env_vars`) adds to {@link PINNED_ENV}: how the deliverable is reached. */
export const DELIVERABLE_HOST = "separate-process";

const PRLIMITS = ["--data=1073741824", "--nofile=256", "--core=0"];

/** `unshare` flags: own user, network and PID namespaces; the child dies with `unshare`. */
const UNSHARE = ["-rn", "--pid", "--fork", "--kill-child"];

/** Node flags of every replay process, suite and host alike (recorded in the UPIP process layer). Paths are relative to each process's directory. */
export const NODE_FLAGS: readonly string[] = [
  "--max-old-space-size=256",
  "--disallow-code-generation-from-strings",
  process.allowedNodeEnvironmentFlags.has("--permission") ? "--permission" : "--experimental-permission",
  "--allow-fs-read=.",
  "--disable-warning=ExperimentalWarning",
];

/** How long to wait for a killed process's pipes to close before settling anyway. */
const KILL_GRACE_MS = 5_000;

const SUMMARY_LIMITS = { maxTotal: 1_000_000, maxNameLength: 256 } as const;

/**
 * Runs `runner.command` (`node <script> ...args`) with the suite at the root of a fresh directory and the
 * deliverable in a separate host process (see the module comment), and returns the UPIP record, the
 * suite's output and its test summary. Both directories are removed afterwards whatever happens. Rejects
 * with {@link UnsupportedRunnerError} or {@link InvalidBundleError} for a runner or suite it cannot run,
 * and {@link SandboxUnavailableError} when isolation cannot be set up; a failing, crashing, looping or
 * flooding suite or deliverable is a result, not an error.
 */
export async function replay(parameters: ReplayParameters, tools?: SandboxTools): Promise<ReplayOutcome> {
  const { runner, actor, intent } = parameters;
  const suite = bundleFromJson(parameters.suite, "suite");
  const deliverable = bundleFromJson(parameters.deliverable, "deliverable");
  const callTimeoutMs = assertRunnable(runner, suite);
  const resolved = await isolationTools(tools);
  const harnessEnv = { IOI_DELIVERABLE_HOST: DELIVERABLE_HOST, IOI_CALL_TIMEOUT_MS: String(callTimeoutMs), IOI_HARNESS_SHA256: HARNESS_SHA256 };

  const dirs: string[] = [];
  try {
    let suiteDir: string;
    let hostDir: string;
    try {
      suiteDir = await mkdtemp(join(tmpdir(), "ioi-replay-"));
      dirs.push(suiteDir);
      hostDir = await mkdtemp(join(tmpdir(), "ioi-replay-host-"));
      dirs.push(hostDir);
    } catch (cause) {
      throw new SandboxUnavailableError("Could not create a temporary directory for the replay.", { cause });
    }
    try {
      await writeBundle(suiteDir, suite);
      await writeFiles(suiteDir, { [HARNESS_PATH]: HARNESS_SOURCE });
      await writeBundle(join(hostDir, DELIVERABLE_DIR), deliverable);
      await writeFiles(hostDir, { [HOST_PATH]: HOST_SOURCE });
    } catch (cause) {
      throw new SandboxUnavailableError("Could not write the replay's files.", { cause });
    }
    const aliases = [...new Set(await Promise.all(dirs.flatMap((dir) => [dir, realpath(dir).catch(() => dir)])))];
    const run = await runReplay({
      suiteDir,
      hostDir,
      runner,
      callTimeoutMs,
      tools: resolved,
      suiteEnv: harnessEnv,
      deliverableFiles: Object.keys(deliverable.files),
      aliases,
    });
    const stdout = replacePaths(run.stdout, aliases);
    const stderr = replacePaths(run.stderr, aliases);
    const limited = run.timedOut || run.outputTruncated;
    const empty = new Uint8Array(0);
    const result = upipResult({
      exitCode: limited ? null : run.exitCode,
      signal: limited ? "SIGKILL" : run.signal,
      timedOut: run.timedOut,
      outputTruncated: run.outputTruncated,
      stdout: limited ? empty : stdout,
      stderr: limited ? empty : stderr,
    });
    const processLayer: UpipProcess = {
      command: [...runner.command],
      intent,
      actor,
      env_vars: { ...PINNED_ENV, HOME: ".", ...harnessEnv },
      working_dir: ".",
      sandbox: {
        network: "isolated",
        timeout_ms: runner.timeoutMs,
        max_output_bytes: runner.maxOutputBytes,
        node_flags: [...NODE_FLAGS],
      },
    };
    const record = upipRecord({ state: upipState(suite, deliverable), deps: upipDeps(), process: processLayer, result });
    const stdoutText = Buffer.from(stdout).toString("utf8");
    return {
      record,
      stdout: stdoutText,
      stderr: Buffer.from(stderr).toString("utf8"),
      summary: limited ? null : parseTestSummary(stdoutText),
      hostStdout: Buffer.from(replacePaths(run.hostStdout, aliases)).toString("utf8"),
      hostStderr: Buffer.from(replacePaths(run.hostStderr, aliases)).toString("utf8"),
      calls: run.calls,
      hostStarts: run.hostStarts,
    };
  } finally {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }).catch(() => undefined)));
  }
}

/**
 * The runner must be `node <a file of the suite>` with a call timeout in range, and no suite file may sit
 * under `deliverable/` (where suites written for in-process replays expected the deliverable: such a suite
 * would silently test nothing). Returns the call timeout in force.
 */
function assertRunnable(runner: Runner, suite: Bundle): number {
  if (runner.command[0] !== "node") {
    throw new UnsupportedRunnerError("runner.command[0]", `is ${JSON.stringify(runner.command[0])}; the only runner is "node".`);
  }
  const script = runner.command[1];
  if (script === undefined || !Object.hasOwn(suite.files, script)) {
    throw new UnsupportedRunnerError("runner.command[1]", `is ${JSON.stringify(script)}, which is not a file of the test suite.`);
  }
  for (const name of Object.keys(suite.files)) {
    if (name === DELIVERABLE_DIR || name.startsWith(`${DELIVERABLE_DIR}/`)) {
      throw new InvalidBundleError(`suite.files[${JSON.stringify(name)}]`, `is under ${DELIVERABLE_DIR}/, where the deliverable is placed.`);
    }
  }
  const callTimeoutMs = runner.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  if (!Number.isSafeInteger(callTimeoutMs) || callTimeoutMs < ICS_LIMITS.minCallTimeoutMs || callTimeoutMs > ICS_LIMITS.maxCallTimeoutMs) {
    throw new UnsupportedRunnerError(
      "runner.callTimeoutMs",
      `is ${callTimeoutMs}; a call timeout is an integer from ${ICS_LIMITS.minCallTimeoutMs} to ${ICS_LIMITS.maxCallTimeoutMs} ms.`,
    );
  }
  return callTimeoutMs;
}

async function writeBundle(root: string, bundle: Bundle): Promise<void> {
  await writeFiles(root, bundle.files);
}

async function writeFiles(root: string, files: Record<string, string>): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    const target = join(root, ...name.split("/"));
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, content, { encoding: "utf8", flag: "wx" });
  }
}

const DEFAULT_TOOL_DIRS = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"];
const toolChecks = new Map<string, Promise<SandboxTools>>();

/**
 * Finds `unshare` and `prlimit` and proves once (per tool pair) that `prlimit ... unshare -rn --pid --fork true` runs;
 * rejects with {@link SandboxUnavailableError} otherwise.
 */
export function isolationTools(tools?: SandboxTools): Promise<SandboxTools> {
  const key = tools ? `${tools.unshare}\0${tools.prlimit}` : "";
  let check = toolChecks.get(key);
  if (!check) {
    check = probeTools(tools);
    toolChecks.set(key, check);
    // A failed probe is not cached forever: the next replay looks again.
    check.catch(() => toolChecks.delete(key));
  }
  return check;
}

async function probeTools(tools?: SandboxTools): Promise<SandboxTools> {
  const found = tools ?? { unshare: await findTool("unshare"), prlimit: await findTool("prlimit") };
  await new Promise<void>((resolve, reject) => {
    execFile(
      found.prlimit,
      [...PRLIMITS, "--", found.unshare, ...UNSHARE, "--", "true"],
      { env: { PATH: PINNED_ENV.PATH }, timeout: 10_000, shell: false },
      (error) =>
        error
          ? reject(new SandboxUnavailableError("`prlimit ... unshare -rn --pid --fork true` failed: no isolated sandbox here.", { cause: error }))
          : resolve(),
    );
  });
  return found;
}

async function findTool(name: string): Promise<string> {
  for (const directory of DEFAULT_TOOL_DIRS) {
    const candidate = join(directory, name);
    try {
      await access(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // try the next directory
    }
  }
  throw new SandboxUnavailableError(`\`${name}\` (util-linux) was not found in ${DEFAULT_TOOL_DIRS.join(", ")}.`);
}

type RawRun = {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  outputTruncated: boolean;
  stdout: Uint8Array;
  stderr: Uint8Array;
  hostStdout: Uint8Array;
  hostStderr: Uint8Array;
  calls: number;
  hostStarts: number;
};

type RunSetup = {
  suiteDir: string;
  hostDir: string;
  runner: Runner;
  callTimeoutMs: number;
  tools: SandboxTools;
  suiteEnv: Record<string, string>;
  deliverableFiles: string[];
  aliases: string[];
};

/** Spawns `node <flags> <args>` isolated in `dir`, its own process group, with stdin, stdout, stderr and fd 3 as pipes. */
function spawnIsolated(dir: string, args: readonly string[], env: Record<string, string>, tools: SandboxTools): ChildProcess {
  return spawn(tools.prlimit, [...PRLIMITS, "--", tools.unshare, ...UNSHARE, "--", process.execPath, ...NODE_FLAGS, ...args], {
    cwd: dir,
    env: { ...PINNED_ENV, HOME: dir, ...env },
    stdio: ["pipe", "pipe", "pipe", "pipe"],
    detached: true,
    shell: false,
    windowsHide: true,
  });
}

/**
 * Runs the suite (A) and relays its calls to deliverable hosts (B); settles exactly once, after A has
 * ended (or been killed) and every B has been killed, whatever either does.
 */
function runReplay(setup: RunSetup): Promise<RawRun> {
  const { runner, tools } = setup;
  return new Promise<RawRun>((resolve, reject) => {
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const hostOut: Record<"stdout" | "stderr", Buffer[]> = { stdout: [], stderr: [] };
    let captured = 0;
    let hostCaptured = 0;
    let timedOut = false;
    let outputTruncated = false;
    let killed = false;
    let settled = false;
    let suiteEnded = false;
    let unavailable: string | null = null;
    let graceTimer: NodeJS.Timeout | undefined;

    const hostPaths = setup.aliases;
    const host = new DeliverableHost({
      spawn: () => spawnIsolated(setup.hostDir, [HOST_PATH], {}, tools),
      callTimeoutMs: setup.callTimeoutMs,
      startTimeoutMs: HOST_START_TIMEOUT_MS,
      rewrite: (text) => replaceInString(text, hostPaths),
      onOutput: (stream, chunk) => {
        // Diagnostics only: kept up to the output limit, then drained and dropped (B is never blocked on a full pipe).
        const room = runner.maxOutputBytes - hostCaptured;
        if (room <= 0) return;
        const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
        hostOut[stream].push(kept);
        hostCaptured += kept.length;
      },
      killGraceMs: KILL_GRACE_MS,
      onUnavailable: (reason) => {
        unavailable ??= reason;
        killAll();
      },
    });

    const child = (() => {
      try {
        return spawnIsolated(setup.suiteDir, runner.command.slice(1), setup.suiteEnv, tools);
      } catch (cause) {
        return cause as Error;
      }
    })();
    if (child instanceof Error) {
      reject(new SandboxUnavailableError("The sandboxed process could not be spawned.", { cause: child }));
      return;
    }

    const finish = (outcome: RawRun | Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (graceTimer) clearTimeout(graceTimer);
      // Whatever happened to A, no host outlives the replay.
      void host.close().then(() => {
        if (outcome instanceof Error) reject(outcome);
        else if (unavailable !== null) reject(new SandboxUnavailableError(`The replay could not run: ${unavailable}.`));
        else resolve({ ...outcome, calls: host.calls, hostStarts: host.starts, hostStdout: Buffer.concat(hostOut.stdout), hostStderr: Buffer.concat(hostOut.stderr) });
      });
    };
    const snapshot = (exitCode: number | null, signal: string | null): RawRun => ({
      exitCode,
      signal,
      timedOut,
      outputTruncated,
      stdout: Buffer.concat(stdout),
      stderr: Buffer.concat(stderr),
      hostStdout: new Uint8Array(0),
      hostStderr: new Uint8Array(0),
      calls: 0,
      hostStarts: 0,
    });
    const killAll = (): void => {
      if (killed) return;
      killed = true;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
      void host.close();
      // If the pipes never close (they should: the whole group is dead), settle anyway.
      graceTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish(snapshot(null, "SIGKILL"));
      }, KILL_GRACE_MS);
    };
    const collect = (sink: Buffer[]) => (chunk: Buffer) => {
      if (outputTruncated || timedOut) return;
      const room = runner.maxOutputBytes - captured;
      if (chunk.length > room) {
        sink.push(chunk.subarray(0, room));
        captured = runner.maxOutputBytes;
        outputTruncated = true;
        killAll();
        return;
      }
      sink.push(chunk);
      captured += chunk.length;
    };

    const timer = setTimeout(() => {
      if (outputTruncated) return;
      timedOut = true;
      killAll();
    }, runner.timeoutMs);

    // The relay: requests from A's fd 3, answers to A's stdin, one line each.
    const files = new Set(setup.deliverableFiles);
    const fallback = defaultModule(setup.deliverableFiles);
    const outstanding = new Set<number>();
    const answer = (message: CallAnswer): void => {
      outstanding.delete(message.id);
      if (suiteEnded || killed || child.stdin === null || child.stdin.destroyed) return;
      child.stdin.write(`${JSON.stringify(message)}\n`);
    };
    const requests = new LineReader(MAX_MESSAGE_BYTES, (line) => {
      if (suiteEnded || killed) return;
      const parsed = parseRequest(line, files, fallback, outstanding);
      if (parsed === null) return;
      outstanding.add(parsed.id);
      if ("error" in parsed) answer({ id: parsed.id, error: parsed.error });
      else void host.request(parsed.request).then(answer);
    });
    const channel = child.stdio[3] as NodeJS.ReadableStream | null;
    channel?.on("data", (chunk: Buffer) => requests.push(chunk));
    channel?.on("error", () => undefined);
    child.stdin?.on("error", () => undefined);

    child.stdout!.on("data", collect(stdout));
    child.stderr!.on("data", collect(stderr));
    child.stdout!.on("error", () => undefined);
    child.stderr!.on("error", () => undefined);
    child.on("error", (error) => {
      if (child.pid === undefined) {
        finish(new SandboxUnavailableError("The sandboxed process could not be spawned.", { cause: error }));
      }
    });
    child.on("close", (code, signal) => {
      suiteEnded = true;
      finish(snapshot(code, signal));
    });
    host.prestart();
  });
}

/** Replaces every occurrence of each alias in a string with `.`, longest first. */
function replaceInString(text: string, aliases: string[]): string {
  let out = text;
  for (const alias of [...aliases].sort((a, b) => b.length - a.length)) out = out.split(alias).join(".");
  return out;
}

/** Replaces every occurrence of each alias (a temp dir's path) with `.`, longest first. */
function replacePaths(bytes: Uint8Array, aliases: string[]): Uint8Array {
  let buffer = Buffer.from(bytes);
  for (const alias of [...aliases].sort((a, b) => b.length - a.length)) {
    const needle = Buffer.from(alias, "utf8");
    const parts: Buffer[] = [];
    let from = 0;
    for (let at = buffer.indexOf(needle, from); at >= 0; at = buffer.indexOf(needle, from)) {
      parts.push(buffer.subarray(from, at), Buffer.from("."));
      from = at + needle.length;
    }
    if (parts.length === 0) continue;
    parts.push(buffer.subarray(from));
    buffer = Buffer.concat(parts);
  }
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

/**
 * Reads the test summary from a suite's stdout: the last non-empty line must be exactly
 * `{"total": <int>, "failed": [<unique test names>]}` with no more failures than tests. Anything else → null.
 */
export function parseTestSummary(stdout: string): TestSummary | null {
  const lines = stdout.split("\n").map((line) => line.replace(/\r$/, ""));
  const last = [...lines].reverse().find((line) => line.trim().length > 0);
  if (last === undefined) return null;
  let value: unknown;
  try {
    value = JSON.parse(last);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const keys = Object.keys(value).sort();
  if (keys.length !== 2 || keys[0] !== "failed" || keys[1] !== "total") return null;
  const { total, failed } = value as { total: unknown; failed: unknown };
  if (typeof total !== "number" || !Number.isSafeInteger(total) || total < 0 || total > SUMMARY_LIMITS.maxTotal) return null;
  if (!Array.isArray(failed) || failed.length > total) return null;
  const names = new Set<string>();
  for (const name of failed) {
    if (typeof name !== "string" || name.length === 0 || name.length > SUMMARY_LIMITS.maxNameLength || !name.isWellFormed()) return null;
    if (names.has(name)) return null;
    names.add(name);
  }
  return { total, failed: [...(failed as string[])] };
}
