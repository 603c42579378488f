/**
 * Serves the in-process Hardhat network over JSON-RPC on 127.0.0.1, so that child processes (a provider
 * node, a watchtower) can use the same embedded devnet as the process that owns it. Nothing listens
 * beyond loopback, and the server stops with `close()` or with the process.
 */
import { TASK_NODE_CREATE_SERVER } from "hardhat/builtin-tasks/task-names";
import type { HardhatRuntimeEnvironment } from "hardhat/types";

export type EmbeddedRpc = { url: string; port: number; close: () => Promise<void> };

export async function serveEmbeddedNetwork(hre: HardhatRuntimeEnvironment, port = 0): Promise<EmbeddedRpc> {
  const server = (await hre.run(TASK_NODE_CREATE_SERVER, {
    hostname: "127.0.0.1",
    port,
    provider: hre.network.provider,
  })) as { listen(): Promise<{ address: string; port: number }>; close(): Promise<void> };
  const bound = await server.listen();
  return { url: `http://127.0.0.1:${bound.port}`, port: bound.port, close: () => server.close() };
}
