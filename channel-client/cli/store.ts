/**
 * `ioi store …`: the channel store's housekeeping (issue 31 item 2). `ioi store prune` archives every settled
 * channel that no dispute can reach any more to a file in the `ioi export` format, verifies it, and deletes the
 * channel from the store (decision 0008 amendment; the policy is in channel-client/node/prune.ts).
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { getAddress } from "viem";

import { disputeManagerAbi } from "../abi/DisputeManager";
import { pruneChannels } from "../node/prune";
import { SqliteStore } from "../store/sqlite-store";
import { deployedContract, readingOf, rpcClients } from "./chain";
import { openAnyStore, UsageError, type Command, type CommandGroup } from "./common";

export const STORE_PRUNE_COMMAND: Command = {
  summary: "archive settled channels no dispute can reach any more (ioi export format), then delete them from the store",
  usage: "ioi store prune --archive-dir DIR [--dry-run] [--dispute-manager ADDRESS] [--db PATH | --db postgres://…]",
  notes: [
    "  A channel is pruned only when the chain says so: the GasEscrow holds it as Settled, the newest block is past",
    "  its settlement plus the longest dispute window (the DisputeManager's settledDisputeWindow, scheduled rules",
    "  included, and the terms' windowAfterSettlement), and every case on it is Resolved or Expired. Its archive,",
    "  DIR/<session id>.jsonl, is written, read back and verified before the channel is deleted; a later message",
    "  for it is answered that it was pruned. --dry-run only reports. Check an archive with",
    "  `node scripts/check-export.mjs DIR/<session id>.jsonl`.",
  ],
  examples: ["ioi store prune --archive-dir ./archive --dry-run", "ioi store prune --archive-dir ./archive --json"],
  options: { "archive-dir": { type: "string" }, "dry-run": { type: "boolean" }, "dispute-manager": { type: "string" } },
  async run(values, out) {
    const dir = values["archive-dir"];
    if (typeof dir !== "string" || dir === "") throw new UsageError("--archive-dir is required: the directory the archives of pruned channels are written to.");
    const dryRun = values["dry-run"] === true;
    // A provider fleet's PostgreSQL too (--db postgres://…, decision 0036): written without a fencing epoch —
    // a prunable channel is settled and past every dispute window, so no process serves it any more.
    const store = await openAnyStore(values, "provider", { write: true });
    try {
      const { publicClient, chainId } = await rpcClients(values);
      const { address: disputeManager } = await deployedContract(values, publicClient, "dispute-manager", "IOI_DISPUTE_MANAGER", "DisputeManager");
      const escrow = getAddress(await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "gasEscrow" }));
      const reading = readingOf(values, chainId);
      const archiveDir = path.resolve(dir);
      if (!dryRun) mkdirSync(archiveDir, { recursive: true });
      const outcomes = await pruneChannels({ store, publicClient, disputeManager, escrow, chainId, archiveDir, dryRun, maxBlockRange: reading.batchBlocks, retry: reading.retry });
      const bytes = !dryRun && store instanceof SqliteStore ? await store.reclaim() : undefined;
      for (const o of outcomes) {
        if (o.action === "pruned") out.lines.push(`Pruned ${o.sessionId}: ${o.receipts} receipt(s) archived to ${o.archive}.`);
        else if (o.action === "prunable") out.lines.push(`Would prune ${o.sessionId} (${o.receipts} receipt(s)).`);
        else out.lines.push(`Kept ${o.sessionId}: ${o.reason}.`);
      }
      if (outcomes.length === 0) out.lines.push("The store holds no channel.");
      if (bytes !== undefined) out.lines.push(`The store file is ${bytes} bytes after pruning.`);
      out.result = {
        dryRun,
        archiveDir,
        channels: outcomes.map((o) => ({ ...o })),
        ...(bytes === undefined ? {} : { storeBytes: bytes }),
      };
    } finally {
      await store.close();
    }
  },
};

export const STORE_GROUP: CommandGroup = {
  summary: "the channel store: prune settled channels into archives (ioi store --help)",
  commands: { prune: STORE_PRUNE_COMMAND },
};
