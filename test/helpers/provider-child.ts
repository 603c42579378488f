/**
 * Starts `bin/ioi.js provider` as a child process for the kill-and-resume tests and resolves with its port
 * once it prints its `provider.ready` line; a process that is not ready within `startDeadlineMs` is killed
 * and reported with its stderr.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Hex } from "viem";

import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";

export type ProviderProcess = {
  child: ChildProcess;
  port: number;
  /** The whole `provider.ready` line (e.g. `x402Mcp`, `owner`). */
  ready: Record<string, unknown>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
};

const ROOT = path.resolve(__dirname, "../..");

export async function startProviderChild(parameters: {
  rpcUrl: string;
  escrow: Hex;
  db: string;
  price: bigint;
  /** A terms document file offered instead of the flat `price` (`ioi provider --terms-file`). */
  termsFile?: string;
  key: Hex;
  /** Every live child is kept here until it exits, so the suite can kill what is left. */
  children: Set<ChildProcess>;
  startDeadlineMs: number;
  /** Further arguments, after the others (e.g. `--worker CMD…`, which must come last). */
  extraArgs?: string[];
}): Promise<ProviderProcess> {
  const { children } = parameters;
  const child = spawn(
    process.execPath,
    [path.join(ROOT, "bin/ioi.js"), "provider", "--rpc", parameters.rpcUrl, "--escrow", parameters.escrow, "--db", parameters.db, ...(parameters.termsFile ? ["--terms-file", parameters.termsFile] : ["--price", parameters.price.toString()]), "--port", "0", ...(parameters.extraArgs ?? [])],
    { cwd: ROOT, env: { ...process.env, IOI_PRIVATE_KEY: parameters.key, IOI_CLI_SOURCE: "1" }, stdio: ["ignore", "pipe", "pipe"] },
  );
  children.add(child);
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  const deadline = setTimeout(() => child.kill("SIGKILL"), parameters.startDeadlineMs);
  try {
    const ready = await new Promise<Record<string, unknown> & { port: number }>((resolve, reject) => {
      let partial = "";
      child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
        const lines = (partial + chunk).split("\n");
        partial = lines.pop()!;
        for (const line of lines) {
          let event: Record<string, unknown> & { event?: string; port?: number };
          try {
            event = JSON.parse(line) as typeof event;
          } catch {
            continue; // a human-readable line
          }
          if (event?.event === "provider.ready" && typeof event.port === "number") resolve(event as typeof event & { port: number });
        }
      });
      void exited.then(({ code, signal }) => reject(new Error(`the provider process exited (${code ?? signal}) before it was ready:\n${stderr}`)));
    });
    return { child, port: ready.port, ready, exited, stderr: () => stderr };
  } finally {
    clearTimeout(deadline);
  }
}

/**
 * The harness of a suite of provider child processes on the embedded devnet: registers mocha hooks that serve the
 * devnet over HTTP and make a temporary directory before the suite, and afterwards run `closers` (last first), kill
 * what is left of `children` and wait for it, stop the RPC and remove the directory.
 */
export function providerChildSuite(hre: Parameters<typeof serveEmbeddedNetwork>[0], prefix: string) {
  const suite = { rpc: undefined as EmbeddedRpc | undefined, dir: "", children: new Set<ChildProcess>(), closers: [] as Array<() => Promise<unknown>> };
  before(async () => {
    suite.rpc = await serveEmbeddedNetwork(hre);
    suite.dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  });
  after(async () => {
    for (const close of suite.closers.splice(0).reverse()) await close().catch(() => undefined);
    const live = [...suite.children].filter((child) => child.exitCode === null && child.signalCode === null);
    for (const child of live) child.kill("SIGKILL");
    await Promise.all(live.map((child) => new Promise((resolve) => child.once("exit", resolve))));
    await suite.rpc?.close();
    if (suite.dir) rmSync(suite.dir, { recursive: true, force: true });
  });
  return suite;
}
