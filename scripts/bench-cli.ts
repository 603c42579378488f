/**
 * Start-up of the built CLI: `node bin/ioi.js --help` as a user runs it right after `npm ci` (dist/ built
 * by `prepare`, no TypeScript tooling), wall time per run (median and worst) and the process's peak memory.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { quantiles } from "./quantiles";

/** `nodeBaselineMs`: the median start-up of `node -e ""` in the same runs, so a loaded machine shows as such. */
export type CliBench = { runs: number; medianMs: number; maxMs: number; peakRssMiB: number; nodeBaselineMs: number; command: string };

const ROOT = path.join(__dirname, "..");

export function benchCliStartup(runs = 10): CliBench {
  if (!existsSync(path.join(ROOT, "dist", "channel-client", "cli", "channel.js"))) {
    throw new Error("dist/ is not built: run `npm run build` before measuring the CLI's start-up.");
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-bench-cli-"));
  // Reports the process's peak resident memory on exit, without changing what the CLI loads.
  const probe = path.join(dir, "rss.js");
  writeFileSync(probe, 'process.on("exit", () => require("node:fs").writeSync(2, `\\nIOI_MAX_RSS_KB=${process.resourceUsage().maxRSS}\\n`));\n');
  const times: number[] = [];
  const baseline: number[] = [];
  let peakKb = 0;
  const env = { ...process.env };
  delete env.IOI_CLI_SOURCE;
  try {
    for (let i = 0; i <= runs; i++) {
      const started = performance.now();
      const run = spawnSync(process.execPath, ["--require", probe, path.join(ROOT, "bin", "ioi.js"), "--help"], { encoding: "utf8", env });
      const ms = performance.now() - started;
      if (run.status !== 0) throw new Error(`ioi --help exited with ${run.status}: ${run.stderr.split("\n")[0]}`);
      const bare = performance.now();
      spawnSync(process.execPath, ["-e", ""]);
      const bareMs = performance.now() - bare;
      if (i === 0) continue; // the first run warms the file-system cache
      times.push(ms);
      baseline.push(bareMs);
      peakKb = Math.max(peakKb, Number(/IOI_MAX_RSS_KB=(\d+)/.exec(run.stderr)?.[1] ?? 0));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const round = (x: number) => Math.round(x * 10) / 10;
  return { runs, medianMs: round(quantiles(times, 0.5)[0]!), maxMs: round(Math.max(...times)), peakRssMiB: round(peakKb / 1024), nodeBaselineMs: round(quantiles(baseline, 0.5)[0]!), command: "node bin/ioi.js --help" };
}
