/** Runs the `ioi` CLI in-process for tests, capturing what it prints and restoring the environment. */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import hre from "hardhat";

import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { main } from "../../channel-client/cli/ioi";

export async function runCli(argv: string[], env: Record<string, string | undefined> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const saved = { log: console.log, error: console.error };
  const savedEnv = { ...process.env };
  Object.assign(process.env, env);
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k];
  console.log = (...args: unknown[]) => out.push(args.join(" "));
  console.error = (...args: unknown[]) => err.push(args.join(" "));
  // In-process runs are never interactive, even when mocha runs at a terminal: no password prompt waits for a key.
  const stdinTTY = process.stdin.isTTY;
  process.stdin.isTTY = false as true;
  try {
    const code = await main(argv);
    return { code, out: out.join("\n"), err: err.join("\n") };
  } finally {
    console.log = saved.log;
    console.error = saved.error;
    process.env = savedEnv;
    process.stdin.isTTY = stdinTTY;
  }
}

/**
 * The sandbox of a CLI suite: one embedded devnet served over HTTP for the whole `describe`, a fresh
 * temporary folder per test, and clean-ups run (newest first, failures ignored) before the folder is removed.
 * Call it inside `describe`; read `rpc` and `dir` inside hooks and tests only.
 */
export function cliSandbox(prefix: string): { readonly rpc: EmbeddedRpc; readonly dir: string; cleanup: Array<() => Promise<unknown>> } {
  let rpc: EmbeddedRpc | undefined;
  let dir: string | undefined;
  const cleanup: Array<() => Promise<unknown>> = [];
  before(async () => {
    rpc = await serveEmbeddedNetwork(hre);
  });
  after(async () => {
    await rpc?.close();
  });
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  });
  afterEach(async () => {
    while (cleanup.length > 0) await cleanup.pop()!().catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return {
    get rpc() {
      if (!rpc) throw new Error("The embedded devnet is served only once the suite's before hook ran.");
      return rpc;
    },
    get dir() {
      if (!dir) throw new Error("The temporary folder exists only inside a test.");
      return dir;
    },
    cleanup,
  };
}
