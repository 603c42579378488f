/**
 * `ioi ui`: serves the operator's page (channel-client/ui/server.ts) until Ctrl-C. Read-only unless --allow-actions.
 */
import { getAddress, isAddress, type Address, type PublicClient } from "viem";

import { deployedContract, readingOf, rpcClients } from "./chain";
import { existsSync } from "node:fs";

import { loadAccount, openStore, storePath, uint, UsageError, type Command } from "./common";
import { SqliteStore } from "../store/sqlite-store";
import { DeploymentError } from "../chain/deployment";
import { EndpointError, listenHost } from "../node/endpoints";

/** The address of an optional contract, or undefined when neither the option nor a deployment names it. */
async function optionalAddress(
  values: Record<string, unknown>,
  publicClient: PublicClient,
  option: "gig-escrow" | "dispute-manager",
  env: "IOI_GIG_ESCROW" | "IOI_DISPUTE_MANAGER",
  contract: "GigEscrow" | "DisputeManager",
): Promise<{ address: Address; fromBlock: bigint } | undefined> {
  try {
    return await deployedContract(values, publicClient, option, env, contract);
  } catch (error) {
    // Only a deployment record that names no such contract leaves it out; a bad address the user gave is an error.
    if (error instanceof DeploymentError && values[option] === undefined && process.env[env] === undefined) return undefined;
    throw error;
  }
}

export const UI_COMMAND: Command = {
  summary: "serve a local web page of the store's channels, receipts (proved in the browser), gigs, cases and bench results",
  usage: "ioi ui [--host 127.0.0.1] [--port 7070] [--db PATH] [--records DIR] [--bench FILE] [--metrics-url URL] [--dispute-manager ADDR] [--gig-escrow ADDR] [--account ADDR] [--allow-actions]",
  notes: [
    "  --host H            address to bind (default 127.0.0.1; anything else exposes the page and needs --allow-public)",
    "  --port N            TCP port (default 7070; 0 = any free port)",
    "  --db PATH           the node's store (default .data/provider.db)",
    "  --records DIR       challenge packages and resolutions (JSON) to show and offer for download with their cases",
    "  --bench FILE        bench results to chart (default bench/results.json)",
    "  --metrics-url URL   the provider's /metrics (ioi provider --metrics), for live latency",
    "  --account ADDR      the key whose wallet, bond, stake and claimable payouts the health panel shows (default: the --allow-actions key);",
    "                      with --password-file, the keystore (address, name or file) that signs --allow-actions",
    "IOI_EXPLORER_URL (e.g. https://sepolia.etherscan.io) links addresses to an explorer; known chains have one by default, devnets none.",
    "  --allow-actions     allow close, challenge, finalize and claim from the page, signed with the key in --key-env",
    "Without --allow-actions the page changes nothing.",
  ],
  options: {
    host: { type: "string" },
    port: { type: "string" },
    records: { type: "string" },
    bench: { type: "string" },
    "metrics-url": { type: "string" },
    "dispute-manager": { type: "string" },
    "gig-escrow": { type: "string" },
    "allow-actions": { type: "boolean" },
    account: { type: "string" },
    "allow-public": { type: "boolean" },
  },
  run: async (values, out) => {
    let host: string;
    try {
      host = listenHost(values.host as string | undefined, values["allow-public"] === true);
    } catch (error) {
      throw new UsageError((error as EndpointError).shortMessage.replace("the provider node", "the page"));
    }
    // With --password-file, --account is the keystore that signs the page's actions (and is the one shown);
    // without, it is only the address the health panel shows.
    const keystore = values["password-file"] !== undefined;
    if (keystore && !values["allow-actions"]) throw new UsageError("--password-file goes with --allow-actions: it unlocks the keystore that signs the page's actions.");
    const account = values["allow-actions"] ? loadAccount(keystore ? values : { ...values, account: undefined }) : undefined;
    const shown = keystore ? account!.address : (values.account as string | undefined);
    if (shown !== undefined && !isAddress(shown)) throw new UsageError(`--account must be an address (0x and 40 hex digits); received "${shown.slice(0, 80)}".`);
    const { publicClient, wallet, chainId } = await rpcClients(values, account);
    const reading = readingOf(values, chainId);
    const { address: escrow, fromBlock: escrowBlock } = await deployedContract(values, publicClient, "escrow", "IOI_ESCROW", "GasEscrow");
    const disputeManager = await optionalAddress(values, publicClient, "dispute-manager", "IOI_DISPUTE_MANAGER", "DisputeManager");
    const gigEscrow = await optionalAddress(values, publicClient, "gig-escrow", "IOI_GIG_ESCROW", "GigEscrow");
    // Cases and gigs are read from the earliest deployment block of the contracts shown, in bounded pages.
    const fromBlock = [escrowBlock, disputeManager?.fromBlock, gigEscrow?.fromBlock].reduce<bigint>((a, b) => (b !== undefined && b < a ? b : a), escrowBlock);
    const metricsUrl = values["metrics-url"] as string | undefined;
    if (metricsUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(metricsUrl)) throw new UsageError(`--metrics-url must be an http URL such as http://127.0.0.1:9464/metrics; received "${metricsUrl}".`);
    // A read-only page creates no store file (issue 28 item 9): without one it shows the chain and an empty store.
    const file = storePath(values, "provider");
    const stored = existsSync(file);
    const store = stored ? openStore(values, "provider") : SqliteStore.open(":memory:");
    if (!stored) process.stderr.write(`ui: no store at ${file}; the page shows the chain only (give --db to show a node's channels).\n`);
    try {
      // The page server (fastify) loads only when the page is served: `ioi --help` stays fast.
      const { startUi } = await import("../ui/server");
      const ui = await startUi({
        store,
        publicClient,
        escrow,
        disputeManager: disputeManager?.address,
        gigEscrow: gigEscrow?.address,
        reading: { fromBlock, maxBlockRange: reading.batchBlocks, retry: reading.retry },
        recordsDir: values.records as string | undefined,
        ...(stored ? { streamsDir: (await import("../node/stream-journal")).StreamJournal.dirOfStore(file) } : {}),
        benchFile: values.bench as string | undefined,
        metricsUrl,
        host,
        port: Number(uint(values, "port", "TCP port (0 = any free port)", 7070n)),
        ...(wallet ? { actions: { wallet } } : {}),
        ...(shown !== undefined ? { account: getAddress(shown) } : {}),
      });
      console.log(JSON.stringify({ event: "ui.ready", url: ui.url, actions: wallet !== undefined }));
      await new Promise<void>((resolve) => {
        process.once("SIGINT", resolve);
        process.once("SIGTERM", resolve);
      });
      await ui.close();
      out.lines.push("The page is stopped.");
    } finally {
      await store.close();
    }
  },
};
