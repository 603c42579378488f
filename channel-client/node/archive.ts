/**
 * A channel's archive: its tickets and receipts as the canonical JSON lines `ioi export` prints (a session line,
 * one step line per answered step, a root line with what the chain recorded), written to a file before the
 * channel is pruned (issue 31 item 2, decision 0008 amendment) and checked by reading it back.
 *
 * The checker in scripts/check-export.mjs verifies the same lines with nothing of this project's code.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import path from "node:path";
import { parseEventLogs, type Address, type Hex, type PublicClient } from "viem";

import { gasEscrowAbi } from "../abi/GasEscrow";
import { eventArg, getLogsPaged } from "../chain/logs";
import type { RetryOptions } from "../chain/logs";
import { ReceiptAccumulator } from "../core/accumulator";
import { canon } from "../core/canonical";
import { BaseError } from "../core/errors";
import { receiptLeaf } from "../core/leaf";
import { sessionReceiptHash, signedSessionReceiptFromJson, signedSessionReceiptToJson } from "../core/receipt";
import { channelRefToJson, pricingTermsToJson, termsHashOf } from "../core/terms";
import { paymentTicketHash, signedPaymentTicketFromJson, signedPaymentTicketToJson } from "../core/ticket";
import type { ChannelRecord, ChannelStore } from "../store/store";

export type ExportLinesParameters = {
  store: Pick<ChannelStore, "steps" | "leaves">;
  channel: ChannelRecord;
  publicClient: PublicClient;
  escrow: Address;
  /** Most blocks per eth_getLogs call, and how a refused call is retried (decision 0019). */
  maxBlockRange?: bigint;
  retry?: RetryOptions;
};

/** The lines `ioi export` prints for `channel`, each canonical JSON, without newlines. */
export async function exportLines(parameters: ExportLinesParameters): Promise<string[]> {
  const { store, channel, publicClient, escrow } = parameters;
  const lines: string[] = [];
  lines.push(canon({ type: "session", sessionId: channel.sessionId, escrow: escrow.toLowerCase(), ref: channelRefToJson(channel.ref), pricing: pricingTermsToJson(channel.pricing), termsHash: termsHashOf(channel.pricing), leafDomain: "IOI_SESSION_LEAF_V1" }));
  for (const step of store.steps(channel.sessionId)) {
    if (!step.receipt || !step.leaf) continue;
    lines.push(canon({
      type: "step",
      seq: step.seq.toString(),
      ticket: signedPaymentTicketToJson(step.ticket),
      receipt: signedSessionReceiptToJson(step.receipt),
      ticketHash: paymentTicketHash(step.ticket.ticket),
      receiptHash: sessionReceiptHash(step.receipt.receipt),
      leaf: step.leaf,
    }));
  }
  // The root the chain recorded: the cooperative settlement's, or the newest recorded ticket's.
  const logs = parseEventLogs({
    abi: gasEscrowAbi,
    // From the channel's opening block to the head, in bounded pages with back-off (decision 0019).
    logs: await getLogsPaged({ publicClient, address: escrow, fromBlock: channel.ref.openedAt, toBlock: await publicClient.getBlockNumber(), maxBlockRange: parameters.maxBlockRange, retry: parameters.retry }),
  }).filter((log) => eventArg(log, "sessionId") === channel.sessionId);
  let onChain: Record<string, string> | null = null;
  // Provider-signed receipt commits anchored on the session: a case may prove receipts against their roots.
  const anchored: { leafCount: bigint; root: Hex; transactionHash: Hex }[] = [];
  for (const log of logs) {
    if (log.eventName === "ReceiptCommitAnchored") anchored.push({ leafCount: log.args.leafCount, root: log.args.root, transactionHash: log.transactionHash });
    if (log.eventName === "ChannelSettled") onChain = { event: log.eventName, receiptRoot: log.args.receiptRoot, seq: log.args.finalSeq.toString(), transactionHash: log.transactionHash };
    else if (log.eventName === "ChannelClosing" || log.eventName === "ChannelChallenged") onChain = { event: log.eventName, receiptRoot: log.args.receiptRoot, seq: log.args.seq.toString(), transactionHash: log.transactionHash };
  }
  // The local root over every receipt, and how many of the first receipts the chain's root covers: after
  // any close they must be all of them (a provider serves nothing once a session is closed).
  const history = ReceiptAccumulator.fromLeaves(store.leaves(channel.sessionId));
  let covered: number | null = null;
  if (onChain) {
    for (let size = history.size; size >= 0 && covered === null; size--) if (history.prefixRoot(size) === onChain.receiptRoot) covered = size;
  }
  const root = history.root();
  lines.push(canon({
    type: "root",
    receipts: String(history.size),
    root,
    onChain,
    coveredReceipts: covered === null ? null : String(covered),
    matches: onChain !== null && onChain.receiptRoot === root,
    anchoredCommits: anchored.map((a) => ({
      leafCount: a.leafCount.toString(),
      root: a.root,
      transactionHash: a.transactionHash,
      // Whether the anchored root is this store's root over the same first receipts.
      matches: a.leafCount <= BigInt(history.size) && history.prefixRoot(Number(a.leafCount)) === a.root,
    })),
  }));
  return lines;
}

/** An archive that could not be written or does not verify: the channel is not pruned. */
export class ArchiveError extends BaseError {
  override name = "ArchiveError" as const;
}

/**
 * Checks archive lines the way scripts/check-export.mjs does, with this project's validators: every step's
 * ticket and receipt are well-formed and for the session, its hashes and leaf recompute, the root line's root is
 * the root over the leaves, and the receipts are exactly `expected` (the store's leaves, in order).
 */
export function verifyArchiveLines(lines: readonly string[], sessionId: Hex, expected: readonly Hex[]): void {
  const fail = (message: string): never => {
    throw new ArchiveError(message);
  };
  if (lines.length < 2) fail(`The archive of ${sessionId} has ${lines.length} line(s); a session line and a root line at least.`);
  const first = JSON.parse(lines[0]!) as { type?: string; sessionId?: string };
  if (first.type !== "session" || first.sessionId !== sessionId) fail(`The archive's first line is not the session line of ${sessionId}.`);
  const accumulator = new ReceiptAccumulator();
  for (const [i, line] of lines.slice(1, -1).entries()) {
    const step = JSON.parse(line) as { type?: string; ticket?: unknown; receipt?: unknown; ticketHash?: string; receiptHash?: string; leaf?: string };
    if (step.type !== "step") fail(`Line ${i + 2} of the archive is not a step line.`);
    const ticket = signedPaymentTicketFromJson(step.ticket).ticket;
    const receipt = signedSessionReceiptFromJson(step.receipt).receipt;
    if (ticket.sessionId !== sessionId || receipt.sessionId !== sessionId) fail(`Line ${i + 2} of the archive is for another session.`);
    const leaf = receiptLeaf(receipt, ticket);
    if (step.ticketHash !== paymentTicketHash(ticket) || step.receiptHash !== sessionReceiptHash(receipt) || step.leaf !== leaf) {
      fail(`Line ${i + 2} of the archive holds hashes or a leaf that do not recompute.`);
    }
    if (expected[i] !== leaf) fail(`Receipt ${i + 1} of the archive is not the store's receipt ${i + 1}.`);
    accumulator.append(leaf);
  }
  if (accumulator.size !== expected.length) fail(`The archive holds ${accumulator.size} receipts; the store holds ${expected.length}.`);
  const last = JSON.parse(lines[lines.length - 1]!) as { type?: string; root?: string; receipts?: string };
  if (last.type !== "root" || last.root !== accumulator.root() || last.receipts !== String(accumulator.size)) {
    fail("The archive's root line does not hold the root over its receipts.");
  }
}

/**
 * Writes `lines` to `<dir>/<sessionId>.jsonl` durably (a temporary file fsynced, renamed over, the directory
 * fsynced), reads it back and verifies it against the store's leaves; returns its path. Throws
 * {@link ArchiveError} if the file does not read back as written.
 */
export function writeArchive(dir: string, sessionId: Hex, lines: readonly string[], leaves: readonly Hex[]): string {
  verifyArchiveLines(lines, sessionId, leaves);
  const file = path.resolve(dir, `${sessionId}.jsonl`);
  const text = lines.map((line) => `${line}\n`).join("");
  const temporary = `${file}.tmp-${process.pid}`;
  const fd = openSync(temporary, "w", 0o644);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, file);
  const dirFd = openSync(path.dirname(file), "r");
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
  const read = readFileSync(file, "utf8");
  if (read !== text) throw new ArchiveError(`The archive ${file} does not read back as written.`);
  verifyArchiveLines(read.split("\n").slice(0, -1), sessionId, leaves);
  return file;
}
