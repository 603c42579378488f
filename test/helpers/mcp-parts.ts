/**
 * Parts of the MCP tests (issue 30): a provider process selling an MCP server (`ioi provider --terms-file …
 * --worker …`), the `ioi mcp` gateway as a host's SDK `Client` starts it (stdio), a v3 terms document, and the
 * gas a party spent in a range of blocks (so balances can be asserted exactly).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { toHex, type Address, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { pricingTermsToJson, type TermsDocumentV3 } from "../../channel-client/core/terms";
import { HARDHAT_MNEMONIC } from "./fixtures";

export { gasPaidBy } from "./fixtures";

export const ROOT = path.resolve(__dirname, "../..");
export const EVERYTHING = path.join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
export const FILESYSTEM = path.join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

export const keyOf = (index: number) => toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) as Hex;

/** A v3 terms document: `tools` priced by name, everything else at `cap`, listing free. */
export function v3Terms(tools: Record<string, bigint>, cap: bigint, model: string): TermsDocumentV3 {
  return {
    version: "3",
    pricing: { perInvocation: cap, perUnit: null, capPerCall: cap, tools },
    models: [model],
    disputes: { windowAfterSettlement: 3600n, penalties: {}, refundsFromBond: false },
    requiredReceipts: ["rrsa_request_binding", "rrsa_output_commitment"],
  };
}

export function writeTerms(dir: string, terms: TermsDocumentV3): string {
  const file = path.join(dir, "terms.json");
  writeFileSync(file, JSON.stringify(pricingTermsToJson(terms)));
  return file;
}

export type ProviderProcess = { child: ChildProcess; port: number; ready: Record<string, unknown>; stderr: () => string; exited: Promise<unknown> };

/** `ioi provider` selling `worker` (argv) or `--worker-url`; resolves with its ready line. */
export async function startProvider(parameters: {
  rpcUrl: string;
  escrow: Address;
  db: string;
  termsFile: string;
  model: string;
  key: Hex;
  worker?: string[];
  workerUrl?: string;
  extra?: string[];
  port?: number;
}): Promise<ProviderProcess> {
  const args = [
    path.join(ROOT, "bin/ioi.js"),
    "provider",
    "--rpc", parameters.rpcUrl,
    "--escrow", parameters.escrow,
    "--db", parameters.db,
    "--terms-file", parameters.termsFile,
    "--model", parameters.model,
    "--port", String(parameters.port ?? 0),
    ...(parameters.extra ?? []),
    ...(parameters.workerUrl ? ["--worker-url", parameters.workerUrl] : []),
    ...(parameters.worker ? ["--worker", ...parameters.worker] : []),
  ];
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, IOI_PRIVATE_KEY: parameters.key, IOI_CLI_SOURCE: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const deadline = setTimeout(() => child.kill("SIGKILL"), 180_000); // a bound on a loaded machine, not a timing assertion
  try {
    const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
      let partial = "";
      child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
        const lines = (partial + chunk).split("\n");
        partial = lines.pop()!;
        for (const line of lines) if (line.includes('"provider.ready"')) resolve(JSON.parse(line) as Record<string, unknown>);
      });
      child.once("exit", (code) => reject(new Error(`ioi provider exited with ${code}: ${stderr}`)));
    });
    return { child, port: ready.port as number, ready, stderr: () => stderr, exited };
  } finally {
    clearTimeout(deadline);
  }
}

/** Stops a child: SIGINT, then SIGKILL if it has not exited within 20 s. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGINT");
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  await exited;
  clearTimeout(timer);
}

/** The `ioi mcp` command line (for StdioClientTransport or spawn). */
export function gatewayArgs(parameters: { rpcUrl: string; escrow: Address; db: string; provider: Address; port: number; budgets: { call: bigint; channel: bigint; day: bigint }; extra?: string[] }): string[] {
  return [
    path.join(ROOT, "bin/ioi.js"),
    "mcp",
    "--rpc", parameters.rpcUrl,
    "--escrow", parameters.escrow,
    "--db", parameters.db,
    "--provider", parameters.provider,
    "--peer", `127.0.0.1:${parameters.port}`,
    "--budget-call", parameters.budgets.call.toString(),
    "--budget-channel", parameters.budgets.channel.toString(),
    "--budget-day", parameters.budgets.day.toString(),
    ...(parameters.extra ?? []),
  ];
}

/** A host built from the SDK alone: its `Client` starts `ioi mcp` over stdio, as a host's `mcpServers` entry does. */
export async function hostWithGateway(args: string[], key: Hex): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string }> {
  const transport = new StdioClientTransport({ command: process.execPath, args, cwd: ROOT, env: { ...(process.env as Record<string, string>), IOI_PRIVATE_KEY: key, IOI_CLI_SOURCE: "1" }, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: "sdk-host", version: "1" });
  await client.connect(transport, { timeout: 120_000 });
  return { client, transport, stderr: () => stderr };
}

