/**
 * `npm run devnet`: starts `hardhat node` on 127.0.0.1:8545 (40 funded accounts), deploys every contract to it,
 * writes `deployments/localhost.json` — the deployment itself registers, stakes and admits 16 arbitrators
 * (accounts 20..35) before it hands governance to the timelock — and keeps the node running until Ctrl-C.
 */
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";

const HOST = "127.0.0.1";
const PORT = Number(process.env.IOI_DEVNET_PORT ?? 8545);
const root = path.join(__dirname, "..");
const hardhatBin = require.resolve("hardhat/internal/cli/bootstrap");

async function waitForRpc(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`The devnet did not answer on ${url} within ${timeoutMs / 1000} s.`);
}

async function main(): Promise<void> {
  const compile = spawnSync(process.execPath, [hardhatBin, "compile", "--quiet"], { cwd: root, stdio: "inherit" });
  if (compile.status !== 0) throw new Error("Compiling the contracts failed.");

  const node = spawn(process.execPath, [hardhatBin, "node", "--hostname", HOST, "--port", String(PORT)], {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
  });
  node.stdout.on("data", (chunk: Buffer) => {
    if (process.env.IOI_DEVNET_VERBOSE) process.stdout.write(chunk);
  });
  const stop = () => node.kill("SIGTERM");
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  node.on("exit", (code) => process.exit(code ?? 0));

  const url = `http://${HOST}:${PORT}`;
  await waitForRpc(url, 60_000);
  // The deployment registers, stakes and admits the 16 devnet arbitrators before it hands governance over.
  const deploy = spawnSync(process.execPath, [hardhatBin, "run", "scripts/deploy.ts", "--network", "localhost"], {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, IOI_DEVNET_ARBITRATORS: "1" },
  });
  if (deploy.status !== 0) {
    stop();
    throw new Error("Deploying to the devnet failed.");
  }
  console.log(`Devnet running at ${url} (chain 31337). Ctrl-C stops it.`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
