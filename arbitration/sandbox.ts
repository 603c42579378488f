/**
 * Replays a test suite against a deliverable in an isolated child process and captures a UPIP record.
 *
 * Isolation, all of it required (if any piece is missing the replay throws {@link SandboxUnavailableError}
 * and the caller fails safe; nothing ever runs without it):
 * - no network: `unshare -rn` puts the child in a fresh user and network namespace (loopback down);
 * - no ambient authority: a pinned minimal environment, `shell: false`, stdin closed, cwd a fresh temp dir;
 * - Node's permission model: the child may read only its own directory, and may not write files, spawn
 *   processes, start workers or load addons; `eval`/`new Function` are disabled;
 * - resources: `prlimit` caps data memory at 1 GiB and open files at 256, V8's heap at 256 MiB; a timeout
 *   and an output limit SIGKILL the whole process group.
 *
 * Determinism: the record holds no timestamps, pids or paths; occurrences of the temp dir's path in the
 * output are replaced by `.` before hashing, and a run cut short by a limit records no output at all (how
 * much was printed before the kill depends on timing), only which limit ended it.
 */
import { spawn, execFile } from "node:child_process";
import { constants as fsConstants } from "node:fs";
import { access, mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { bundleFromJson, type Bundle } from "./bundle";
import { InvalidBundleError, SandboxUnavailableError, UnsupportedRunnerError } from "./errors";
import type { Runner } from "./ics";
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
  /** Captured output (with the temp dir's path replaced by `.`), at most `maxOutputBytes` in all; diagnostics only. */
  stdout: string;
  stderr: string;
  /** Null when the run hit a limit or its last stdout line is not a well-formed summary. */
  summary: TestSummary | null;
};

/** Where the isolation tools live; tests may point these elsewhere to see the sandbox refuse to run. */
export type SandboxTools = { unshare: string; prlimit: string };

/** The environment of every replay; HOME is the replay's own directory (shown as "." in the record). */
export const PINNED_ENV = { PATH: "/usr/bin:/bin", LANG: "C", LC_ALL: "C", TZ: "UTC", NODE_OPTIONS: "" } as const;

/** Directory the deliverable's files are written under, inside the replay directory. */
export const DELIVERABLE_DIR = "deliverable";

const PRLIMITS = ["--data=1073741824", "--nofile=256", "--core=0"];

/** Node flags of every replay (recorded in the UPIP process layer). Paths are relative to the replay dir. */
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
 * deliverable under `deliverable/`, and returns its UPIP record, output and test summary. The directory
 * is removed afterwards whatever happens. Rejects with {@link UnsupportedRunnerError} or
 * {@link InvalidBundleError} for a runner or suite it cannot run, and {@link SandboxUnavailableError} when
 * isolation cannot be set up; a failing, crashing, looping or flooding suite is a result, not an error.
 */
export async function replay(parameters: ReplayParameters, tools?: SandboxTools): Promise<ReplayOutcome> {
  const { runner, actor, intent } = parameters;
  const suite = bundleFromJson(parameters.suite, "suite");
  const deliverable = bundleFromJson(parameters.deliverable, "deliverable");
  assertRunnable(runner, suite);
  const resolved = await isolationTools(tools);

  let dir: string;
  try {
    dir = await mkdtemp(join(tmpdir(), "ioi-replay-"));
  } catch (cause) {
    throw new SandboxUnavailableError("Could not create a temporary directory for the replay.", { cause });
  }
  try {
    try {
      await writeBundle(dir, suite);
      await writeBundle(join(dir, DELIVERABLE_DIR), deliverable);
    } catch (cause) {
      throw new SandboxUnavailableError("Could not write the replay's files.", { cause });
    }
    const aliases = [...new Set([dir, await realpath(dir).catch(() => dir)])];
    const run = await runIsolated(dir, runner, resolved);
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
      env_vars: { ...PINNED_ENV, HOME: "." },
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
    };
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** The runner must be `node <a file of the suite>`, and no suite file may sit where the deliverable goes. */
function assertRunnable(runner: Runner, suite: Bundle): void {
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
}

async function writeBundle(root: string, bundle: Bundle): Promise<void> {
  for (const [name, content] of Object.entries(bundle.files)) {
    const target = join(root, ...name.split("/"));
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, content, { encoding: "utf8", flag: "wx" });
  }
}

const DEFAULT_TOOL_DIRS = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"];
const toolChecks = new Map<string, Promise<SandboxTools>>();

/**
 * Finds `unshare` and `prlimit` and proves once (per tool pair) that `prlimit ... unshare -rn true` runs;
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
      [...PRLIMITS, "--", found.unshare, "-rn", "--", "true"],
      { env: { PATH: PINNED_ENV.PATH }, timeout: 10_000, shell: false },
      (error) =>
        error
          ? reject(new SandboxUnavailableError("`prlimit ... unshare -rn true` failed: no isolated sandbox here.", { cause: error }))
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
};

/** Spawns the isolated child and collects its output; settles exactly once, whatever the child does. */
function runIsolated(dir: string, runner: Runner, tools: SandboxTools): Promise<RawRun> {
  const args = [...PRLIMITS, "--", tools.unshare, "-rn", "--", process.execPath, ...NODE_FLAGS, ...runner.command.slice(1)];
  return new Promise<RawRun>((resolve, reject) => {
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let captured = 0;
    let timedOut = false;
    let outputTruncated = false;
    let killed = false;
    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;

    const child = (() => {
      try {
        return spawn(tools.prlimit, args, {
          cwd: dir,
          env: { ...PINNED_ENV, HOME: dir },
          stdio: ["ignore", "pipe", "pipe"],
          detached: true,
          shell: false,
          windowsHide: true,
        });
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
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const snapshot = (exitCode: number | null, signal: string | null): RawRun => ({
      exitCode,
      signal,
      timedOut,
      outputTruncated,
      stdout: Buffer.concat(stdout),
      stderr: Buffer.concat(stderr),
    });
    const killGroup = (): void => {
      if (killed) return;
      killed = true;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
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
        killGroup();
        return;
      }
      sink.push(chunk);
      captured += chunk.length;
    };

    const timer = setTimeout(() => {
      if (outputTruncated) return;
      timedOut = true;
      killGroup();
    }, runner.timeoutMs);

    child.stdout!.on("data", collect(stdout));
    child.stderr!.on("data", collect(stderr));
    child.stdout!.on("error", () => undefined);
    child.stderr!.on("error", () => undefined);
    child.on("error", (error) => {
      if (child.pid === undefined) {
        finish(new SandboxUnavailableError("The sandboxed process could not be spawned.", { cause: error }));
      }
    });
    child.on("close", (code, signal) => finish(snapshot(code, signal)));
  });
}

/** Replaces every occurrence of each alias (the replay dir's path) with `.`, longest first. */
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
