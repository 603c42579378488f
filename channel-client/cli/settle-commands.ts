/**
 * Settling a channel: `ioi close`, `anchor`, `challenge`, `finalize` and the `watchtower` that does them unattended.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { isAddressEqual, type Hex } from "viem";
import type { SettlementSummary } from "../core/summary";

import { challengeClose, closeCooperative, closeUnilateral, finalizeClose, gasEscrowAbi, CHANNEL_PHASES } from "../chain/escrow";
import { isContractAccount, walletSessionKey } from "../chain/wallet-signature";
import { anchorIfLagging, leafCountOfRoot, type AnchorOutcome } from "../node/receipt-anchor";
import { readPaged } from "../chain/logs";
import type { PayerClient } from "../node/payer-client";
import { PayerSession } from "../node/payer-session";
import { grantForTicket } from "../node/key-tickets";
import { parsePeer } from "../node/endpoints";
import { schedulePrune } from "../node/prune";
import { SqliteStore } from "../store/sqlite-store";
import {
  loadAccount,
  assertStoreExists,
  openAnyStore,
  openExistingStore,
  isPostgresStore,
  openStore,
  sessionOf,
  storedChannelOn,
  storePath,
  uint,
  UsageError,
  type Out,
} from "./common";
import { deployedContract, readingOf } from "./chain";
import { formatAmountWithBase, formatDate, formatDuration } from "../core/format";
import { loggerFrom, startMetrics } from "../node/observability";
import { alertSettingsFrom, alertStateFor, topUpPolicyFrom, watchtowerAlerts } from "./alert-options";
import { asUsage, chainClients, closingOf, peersOf } from "./channel-plumbing";
import { nodeModules } from "./channel-plumbing";

export async function runClose(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  // Inputs first (issue 28 item 9): the session id and the store, before the chain is reached for.
  const sessionId = sessionOf(values);
  assertStoreExists(values, "payer");
  const { publicClient, wallet, escrow, domain, chainId, fromBlock } = await chainClients(values, account);
  const store = openExistingStore(values, "payer");
  try {
    const channel = storedChannelOn(store, sessionId, chainId, escrow);
    if (values.unilateral) {
      // A payer closes with a ticket that drains the pipeline: the amount it already promised and the root
      // over every receipt it accepted, so each one is provable against what the close records (issue 12).
      let ticket = store.latestTicket(channel.sessionId);
      if (channel.role === "payer" && ticket) {
        const session = PayerSession.restore({ account, domain, ref: channel.ref, sessionId: channel.sessionId, pricing: channel.pricing, deposit: channel.deposit }, store.steps(channel.sessionId));
        ticket = await session.closingTicket();
      }
      // A provider's newest ticket may be signed by the payer's session key: it closes with the grant it kept.
      const grant = channel.role === "provider" && ticket ? await grantForTicket({ channel, store, ticket }) : undefined;
      const payerWallet = await isContractAccount({ publicClient, address: channel.ref.terms.payer });
      const closed = await closeUnilateral({ wallet: wallet!, publicClient, escrow, ref: channel.ref, ticket, ...(grant ? { grant } : {}), payerWallet });
      await store.putClosing(channel.sessionId, { state: closed.state, finalizesAt: closed.finalizesAt, closer: account.address, txHash: closed.hash });
      await store.updateChannel(channel.sessionId, { status: "closing" });
      out.lines.push(`Closed unilaterally with seq ${closed.state.seq}; the challenge window ends at ${formatDate(closed.finalizesAt)} (in ${formatDuration(channel.ref.terms.challengeDuration)}); then \`ioi finalize\` (gas ${closed.gasUsed}).`);
      Object.assign(out.result, { sessionId: channel.sessionId, seq: closed.state.seq.toString(), finalizesAt: closed.finalizesAt.toString(), gasUsed: Number(closed.gasUsed) });
      // The payer anchors the provider's newest signed receipt commit whenever the recorded root lags it, so
      // every receipt it covers stays provable (decision 0003, amendment "anchoring"; issue 27 finding 9).
      if (channel.role === "payer") {
        const anchoring = await anchorIfLagging({ wallet: wallet!, publicClient, escrow, store, channel, recordedRoot: closed.state.receiptRoot });
        reportAnchoring(out, anchoring);
      }
      return;
    }
    const peers = peersOf(values, channel);
    const allowRemote = values["allow-remote"] === true;
    const logger = loggerFrom(values, "payer");
    const payerWallet = await isContractAccount({ publicClient, address: channel.ref.terms.payer });
    // A wallet payer's key connects as the wallet's session key (decision 0035); its summary is the wallet's signature.
    const walletKey = payerWallet ? await walletSessionKey({ account, domain, publicClient, wallet: channel.ref.terms.payer, sessionId: channel.sessionId, store }) : undefined;
    const { PayerClient: Client } = await nodeModules.payerClient();
    const { isFinal } = await nodeModules.fleet();
    // Several endpoints of one provider fleet (decision 0036): tried in order. The proposal is signed once; a
    // process that failed may have co-signed it already, so the next one is sent the very same proposal (never a
    // new one) and answers with the co-signature the shared store holds, or co-signs it now.
    let proposal: { summary: SettlementSummary; signature: Hex } | undefined;
    let cosigned: Awaited<ReturnType<PayerClient["cooperativeClose"]>> | undefined;
    let last: unknown;
    for (const [k, peer] of peers.entries()) {
      const { host, port } = asUsage(() => parsePeer(peer, allowRemote));
      let client: PayerClient | undefined;
      try {
        client = await Client.connect({ account, domain, store, channel: store.getChannel(channel.sessionId) ?? channel, host, port, logger, ...(walletKey ? { sessionKey: walletKey } : {}) });
        proposal ??= await client.session.proposeCooperativeClose();
        cosigned = await client.cooperativeClose(proposal);
        await client.close();
        break;
      } catch (error) {
        await client?.close().catch(() => undefined);
        if (isFinal(error) || k === peers.length - 1) throw error;
        last = error;
        console.error(`${peer} failed (${(error as Error).message?.split("\n")[0] ?? String(error)}); ${proposal ? "sending the same close proposal to" : "trying"} ${peers[k + 1]}.`);
      }
    }
    if (!cosigned) throw last;
    const { summary, payerSignature, providerSignature } = cosigned;
    const settled = await closeCooperative({ wallet: wallet!, publicClient, escrow, ref: channel.ref, summary, payerSignature, providerSignature, payerWallet }).catch(async (error: unknown) => {
      // The provider holds the co-signed close too and may have sent it first (its watchtower submits the co-signed
      // closes it stores): the chain settled this very close once; that is the outcome, not a failure.
      // Read in bounded pages (a public chain refuses a range from the deployment to the head), stopping at the first.
      const read = (from: bigint, to: bigint) =>
        publicClient.getContractEvents({ address: escrow, abi: gasEscrowAbi, eventName: "ChannelSettled", args: { sessionId: channel.sessionId }, fromBlock: from, toBlock: to, strict: true });
      const reading = readingOf(values, chainId);
      const head = await publicClient.getBlockNumber();
      const [event] = await readPaged<Awaited<ReturnType<typeof read>>[number]>(
        { fromBlock, toBlock: head, maxBlockRange: reading.batchBlocks, retry: reading.retry, done: (items) => items.length > 0 },
        read,
      ).catch(() => []);
      if (!event || event.args.mode !== 0 || event.args.finalSeq !== summary.finalSeq || event.args.receiptRoot !== summary.finalReceiptRoot) throw error;
      out.lines.push(`The provider already submitted this co-signed close (block ${event.blockNumber}); it settled once.`);
      return { hash: event.transactionHash, blockNumber: event.blockNumber, paidToProvider: event.args.paidToProvider, refundedToFunder: event.args.refundedToFunder, fee: event.args.fee, receiptRoot: event.args.receiptRoot, gasUsed: 0n };
    });
    await store.updateChannel(channel.sessionId, { status: "settled" });
    logger.info({ event: "channel.settled", sessionId: channel.sessionId, finalSeq: summary.finalSeq.toString(), paidToProvider: settled.paidToProvider.toString(), refundedToFunder: settled.refundedToFunder.toString(), txHash: settled.hash }, "settled cooperatively on-chain");
    out.lines.push(`Settled cooperatively: ${formatAmountWithBase(settled.paidToProvider)} to the provider, ${formatAmountWithBase(settled.refundedToFunder)} refunded (gas ${settled.gasUsed}).`);
    Object.assign(out.result, { sessionId: channel.sessionId, finalSeq: summary.finalSeq.toString(), paidToProvider: settled.paidToProvider.toString(), refundedToFunder: settled.refundedToFunder.toString(), receiptRoot: settled.receiptRoot, gasUsed: Number(settled.gasUsed) });
  } finally {
    await store.close();
  }
}

export async function runAnchor(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  // Inputs first (issue 28 item 9): the session id and the store, before the chain is reached for.
  const sessionId = sessionOf(values);
  assertStoreExists(values, "payer");
  const { publicClient, wallet, escrow, fromBlock, chainId } = await chainClients(values, account);
  const store = openExistingStore(values, "payer");
  try {
    const channel = storedChannelOn(store, sessionId, chainId, escrow);
    if (channel.role !== "payer") {
      throw new UsageError(`The store holds ${sessionId} as the ${channel.role}'s channel; \`ioi anchor\` runs on the payer's store (--db), whose receipts a case would prove.`);
    }
    const { payer, funder } = channel.ref.terms;
    if (!isAddressEqual(account.address, payer) && !isAddressEqual(account.address, funder)) {
      throw new UsageError(`Only the channel's payer ${payer} or funder ${funder} may anchor a receipt commit; the acting key is ${account.address}.`);
    }
    const phase = CHANNEL_PHASES[await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [sessionId] })];
    if (phase !== "Closing" && phase !== "Settled") {
      throw new UsageError(
        `Session ${sessionId} is ${phase} on-chain; a receipt commit is anchored while the channel is closing (inside its challenge window) or after a cooperative settlement.`,
      );
    }
    const { currentClosingState } = await import("../../arbitration/runner/chain");
    const recorded = await currentClosingState(publicClient, escrow, sessionId, fromBlock);
    const anchoring = await anchorIfLagging({ wallet: wallet!, publicClient, escrow, store, channel, recordedRoot: recorded.receiptRoot });
    reportAnchoring(out, anchoring);
    Object.assign(out.result, { sessionId, recordedSeq: recorded.seq.toString(), recordedRoot: recorded.receiptRoot, recordedReceipts: leafCountOfRoot(store.leaves(sessionId), recorded.receiptRoot) ?? null });
  } finally {
    await store.close();
  }
}

/** What `anchorIfLagging` did, as lines and the JSON result's `anchoring` (and `anchoredCommit` when it sent one). */
export function reportAnchoring(out: Out, anchoring: AnchorOutcome): void {
  if (anchoring.status === "not_lagging") {
    out.lines.push("The recorded root covers every receipt the provider's newest signed commit covers; nothing to anchor.");
  } else if (anchoring.status === "already_anchored") {
    out.lines.push(`The provider's receipt commit over ${anchoring.commit.commit.leafCount} receipts (root ${anchoring.commit.commit.root}) is anchored already.`);
  } else {
    const { anchored } = anchoring;
    out.lines.push(`Anchored the provider's receipt commit over ${anchored.leafCount} receipts (root ${anchored.root}, gas ${anchored.gasUsed}).`);
    Object.assign(out.result, { anchoredCommit: { leafCount: anchored.leafCount.toString(), root: anchored.root, gasUsed: Number(anchored.gasUsed), transactionHash: anchored.hash } });
  }
  out.result.anchoring = anchoring.status;
}

export async function runChallenge(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  // Inputs first (issue 28 item 9): the session id and the store, before the chain is reached for.
  const sessionId = sessionOf(values);
  assertStoreExists(values, "provider");
  const { publicClient, wallet, escrow, chainId } = await chainClients(values, account);
  const store = openExistingStore(values, "provider");
  try {
    const channel = storedChannelOn(store, sessionId, chainId, escrow);
    const closing = closingOf(store, channel);
    const newest = store.latestTicket(channel.sessionId);
    if (!newest || newest.ticket.seq <= closing.state.seq) throw new UsageError(`The store holds no ticket newer than the recorded seq ${closing.state.seq}.`);
    const grant = await grantForTicket({ channel, store, ticket: newest });
    const payerWallet = await isContractAccount({ publicClient, address: channel.ref.terms.payer });
    const challenged = await challengeClose({ wallet: wallet!, publicClient, escrow, ref: channel.ref, recorded: closing.state, ticket: newest, ...(grant ? { grant } : {}), payerWallet });
    await store.putClosing(channel.sessionId, { state: challenged.state, finalizesAt: challenged.finalizesAt, closer: account.address, txHash: challenged.hash });
    out.lines.push(`Challenged seq ${closing.state.seq} with seq ${challenged.state.seq} (gas ${challenged.gasUsed}).`);
    Object.assign(out.result, { sessionId: channel.sessionId, staleSeq: closing.state.seq.toString(), seq: challenged.state.seq.toString(), gasUsed: Number(challenged.gasUsed) });
  } finally {
    await store.close();
  }
}

export async function runFinalize(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  // Inputs first (issue 28 item 9): the session id and the store, before the chain is reached for.
  const sessionId = sessionOf(values);
  assertStoreExists(values, "payer");
  const { publicClient, wallet, escrow, chainId } = await chainClients(values, account);
  const store = openExistingStore(values, "payer");
  try {
    const channel = storedChannelOn(store, sessionId, chainId, escrow);
    const closing = closingOf(store, channel);
    const settled = await finalizeClose({ wallet: wallet!, publicClient, escrow, ref: channel.ref, recorded: closing.state });
    await store.updateChannel(channel.sessionId, { status: "settled" });
    out.lines.push(`Finalised: ${formatAmountWithBase(settled.paidToProvider)} to the provider, ${formatAmountWithBase(settled.refundedToFunder)} refunded (gas ${settled.gasUsed}).`);
    Object.assign(out.result, { sessionId: channel.sessionId, paidToProvider: settled.paidToProvider.toString(), refundedToFunder: settled.refundedToFunder.toString(), gasUsed: Number(settled.gasUsed) });
  } finally {
    await store.close();
  }
}

export async function runWatchtower(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const alertSettings = alertSettingsFrom(values);
  const topUp = topUpPolicyFrom(values);
  const { publicClient, wallet, escrow, chainId, fromBlock } = await chainClients(values, account);
  const reading = readingOf(values, chainId);
  // A provider fleet's PostgreSQL (decision 0036): every channel loaded, what other processes wrote read again
  // before each round (only the channels the database notified), no fencing epoch. Alert state beside a file only.
  const postgres = isPostgresStore(values);
  const store = postgres ? await openAnyStore(values, "provider", { write: true }) : openStore(values, "provider");
  if (postgres) await (store as import("../store/pg-store").PgStore).watch().catch(() => undefined); // else: full reads each round
  const alertState = postgres ? undefined : alertStateFor(storePath(values, "provider"));
  const logger = loggerFrom(values, "watchtower");
  const metrics = await startMetrics(values);
  const tower = new (await nodeModules.watchtower()).Watchtower({
    logger,
    metrics: metrics?.metrics,
    publicClient,
    wallet: wallet!,
    escrow,
    store,
    fromBlock: uint(values, "from-block", "first block to watch", fromBlock),
    ...reading,
    name: `watchtower:${account.address.toLowerCase()}`,
    finalize: true,
    ...(postgres ? { beforeRound: () => (store as import("../store/pg-store").PgStore).refresh() } : {}),
    ...(alertSettings ? { alerts: await watchtowerAlerts(alertSettings, values, publicClient, logger.child({ component: "alerts" }), metrics?.metrics, alertState) } : {}),
    ...(alertState ? { alertState } : {}),
    ...(topUp ? { topUp } : {}),
    onTopUp: (sessionId, amount, hash) => out.lines.push(`Topped up ${sessionId} by ${amount} in ${hash}.`),
    onAnswer: (a) => out.lines.push(`Answered the stale close of ${a.sessionId} (seq ${a.staleSeq}) with seq ${a.answeredSeq}${a.inWindow ? " inside the window" : ""}.`),
    onFinalized: (sessionId, hash) => out.lines.push(`Finalised ${sessionId} in ${hash}.`),
  });
  const pruneDir = values["prune-archive-dir"] as string | undefined;
  const pruneEvery = uint(values, "prune-every", "seconds between prune passes", 3600n);
  if (pruneDir !== undefined && (pruneDir === "" || pruneEvery === 0n)) throw new UsageError("--prune-archive-dir needs a directory and --prune-every at least 1 second.");
  let pruner: { stop: () => Promise<void> } | undefined;
  try {
    if (pruneDir !== undefined) {
      const { address: disputeManager } = await deployedContract(values, publicClient, "dispute-manager", "IOI_DISPUTE_MANAGER", "DisputeManager");
      const archiveDir = path.resolve(pruneDir);
      mkdirSync(archiveDir, { recursive: true });
      const pruned: unknown[] = [];
      out.result.pruned = pruned;
      const settled = new Promise<void>((resolve) => {
        pruner = schedulePrune({
          store,
          publicClient,
          disputeManager,
          escrow,
          chainId,
          archiveDir,
          everyMs: Number(pruneEvery) * 1000,
          maxBlockRange: reading.batchBlocks,
          retry: reading.retry,
          afterPrune: () => (store instanceof SqliteStore ? store.reclaim() : Promise.resolve()),
          onOutcomes: (outcomes) => {
            for (const o of outcomes.filter((x) => x.action === "pruned")) {
              pruned.push(o);
              out.lines.push(`Pruned ${o.sessionId}: ${o.receipts} receipt(s) archived to ${o.archive}.`);
              logger.info({ event: "channel.pruned", sessionId: o.sessionId, archive: o.archive, receipts: o.receipts }, "settled channel archived and pruned");
            }
            resolve();
          },
          onError: (error) => {
            logger.warn({ event: "prune.failed", error: (error as Error).message.split("\n")[0] }, "prune pass failed; retried on schedule");
            resolve();
          },
        });
      });
      if (values.once) await settled;
    }
    if (values.once) {
      await tower.runOnce();
    } else {
      tower.start();
      console.log(JSON.stringify({ event: "watchtower.ready", escrow, confirmations: reading.confirmations.toString(), ...(metrics ? { metrics: `http://${metrics.address}/metrics` } : {}) }));
      await new Promise<void>((resolve) => {
        process.once("SIGINT", resolve);
        process.once("SIGTERM", resolve);
      });
      await tower.stop();
    }
    out.result.answers = tower.answers.map((a) => ({ sessionId: a.sessionId, staleSeq: a.staleSeq.toString(), answeredSeq: a.answeredSeq.toString(), inWindow: a.inWindow }));
  } finally {
    await pruner?.stop();
    await metrics?.close();
    await store.close();
  }
}
