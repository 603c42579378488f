/**
 * Runs `ioi provider` as a child process against an RPC URL, for the demo and the benchmarks: the provider
 * node (sealed socket, SQLite store, watchtower) in a process of its own, as users run it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import type { Hex } from "viem";

/** Starts `ioi provider` as a child process and resolves with its port once it is listening. */
export async function startProviderProcess(parameters: {
  rpc: string;
  escrow: string;
  db: string;
  price: bigint;
  key: Hex;
  fromBlock: bigint;
  onLine: (event: Record<string, unknown>) => void;
  /** Writes a V8 CPU profile of the whole process into `dir` when it exits (`stopProcess`), samples `intervalUs` apart. */
  cpuProfile?: { dir: string; intervalUs: number };
  /** Pins the process to these CPUs (a `taskset -c` list such as "0"); taskset execs node, so the pid is node's. */
  cpus?: string;
  /**
   * Runs the built `dist/` (what users run) instead of the TypeScript sources through ts-node, whose compiler would
   * stay in the process's heap. Only for a caller that has just built it (`npm run bench` runs `tsc` first).
   */
  built?: boolean;
}) {
  // IOI_CPU_PROF_DIR=<dir> profiles every provider process a script starts (for performance work).
  const profile = parameters.cpuProfile ?? (process.env.IOI_CPU_PROF_DIR ? { dir: process.env.IOI_CPU_PROF_DIR, intervalUs: 1000 } : undefined);
  const command = parameters.cpus === undefined ? process.execPath : "taskset";
  if (parameters.built && !existsSync(path.join(__dirname, "..", "dist", "channel-client", "cli", "ioi.js"))) {
    throw new Error("dist/ is not built: run `npx tsc -p tsconfig.build.json` (npm run bench does) before measuring the built provider.");
  }
  const { IOI_CLI_SOURCE: _source, ...inherited } = process.env;
  void _source;
  const child = spawn(
    command,
    [
      ...(parameters.cpus === undefined ? [] : ["-c", parameters.cpus, process.execPath]),
      ...(profile ? ["--cpu-prof", "--cpu-prof-dir", profile.dir, "--cpu-prof-interval", String(profile.intervalUs)] : []),
      path.join(__dirname, "..", "bin", "ioi.js"), "provider", "--rpc", parameters.rpc, "--escrow", parameters.escrow, "--db", parameters.db, "--price", parameters.price.toString(), "--port", "0", "--from-block", parameters.fromBlock.toString()],
    // IOI_CLI_SOURCE=1: the child runs the TypeScript sources, as the tests and the demo do, never a stale dist/.
    { env: { ...inherited, IOI_PRIVATE_KEY: parameters.key, ...(parameters.built ? {} : { IOI_CLI_SOURCE: "1" }) }, stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stderr.on("data", (chunk: Buffer) => {
    if (process.env.IOI_DEMO_VERBOSE) process.stderr.write(chunk);
  });
  const lines = createInterface({ input: child.stdout });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("The provider process did not start within 60 s.")), 60_000);
    child.once("exit", (code) => reject(new Error(`The provider process exited (code ${code}) before it was ready.`)));
    lines.on("line", (line) => {
      let event: Record<string, unknown>;
      try {
        event = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      // Every line reaches onLine, the ready line too (it names the crypto backend the node uses).
      parameters.onLine(event);
      if (event.event === "provider.ready") {
        clearTimeout(timer);
        resolve(Number(event.port));
      }
    });
  });
  return { child, port };
}

/** Stops `child` (SIGTERM, then SIGKILL after 5 s); at once if it has already exited, by a code or a signal. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

