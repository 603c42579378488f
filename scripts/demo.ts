/**
 * The main job, end to end on the embedded Hardhat network, with payer and provider as two processes:
 *
 * 1. deploy the contracts in this process's in-process devnet and serve it on 127.0.0.1 for the provider;
 * 2. start the provider node as a child process (`ioi provider`: sealed socket, SQLite store, watchtower);
 * 3. as the payer (this process, with its own store), open a channel, stream paid invocations over the
 *    sealed hybrid-KEM socket with many in flight, top the channel up on the way, agree on the receipt
 *    root, prove one receipt into it, and settle cooperatively with signatures exchanged over the socket;
 * 4. open a second channel, stream a few invocations, then close it unilaterally with a STALE ticket: the
 *    provider's watchtower answers with the newest ticket inside the window; the clock is advanced past
 *    the window and the channel is finalised;
 * 5. disputes (scripts/demo-disputes.ts): 16 arbitrators admitted by governance through the timelock; the
 *    whitepaper's Appendix A.4 gig — code failing 3 of 12 tests, decided by Lane 1 — and a session receipt
 *    signed under the wrong policy, proven against the committed root and decided by Lane 0; each by a drawn
 *    panel whose members reach byte-identical resolutions, a supermajority's verdict, the appeal window,
 *    finalisation and fee claims; and a streamed coding job (issue 32) whose provider lies about one test at
 *    tranche 2: the payer's sampled re-run catches it, the stream pauses, Lane 1 refunds the tranche and the
 *    false-claim penalty is slashed.
 *
 *   npm run demo                     readable summary
 *   npm run demo -- --json           the same, plus one JSON object on the last line
 *   npm run demo -- --tickets 5000   stream another number of invocations
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import hre from "hardhat";
import { bytesToHex, formatEther, getAddress, keccak256, parseEther, parseEventLogs, stringToBytes, type Hex, type PublicClient } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { ReceiptAccumulator, verifyProof } from "../channel-client/core/accumulator";
import {
  closeCooperative,
  closeUnilateral,
  depositToChannel,
  escrowDomain,
  finalizeClose,
  gasEscrowAbi,
  openChannel,
  type Wallet,
} from "../channel-client/chain/escrow";
import { PayerClient } from "../channel-client/node/payer-client";
import { SqliteStore } from "../channel-client/store/sqlite-store";
import type { ChannelRecord } from "../channel-client/store/store";
import { NATIVE_ASSET, termsHashOf, type ChannelTerms, type PricingTerms } from "../channel-client/core/terms";
import { runDisputeDemo, startArbitratorDaemons } from "./demo-disputes";
import { deployAll } from "./deploy";
import { serveEmbeddedNetwork } from "./embedded-rpc";
import { startProviderProcess, stopProcess } from "./provider-process";
import { quantiles } from "./quantiles";

const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";
const INFLIGHT = 32;

type Options = { json: boolean; tickets: number };

function parseArgs(argv: string[]): Options {
  const options: Options = { json: false, tickets: 1000 };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--json") options.json = true;
    else if (arg === "--tickets") {
      const value = Number(argv[++i]);
      if (!Number.isSafeInteger(value) || value < 10 || value > 1_000_000) {
        throw new Error(`--tickets takes a whole number from 10 to 1000000; received ${argv[i] ?? "nothing"}.`);
      }
      options.tickets = value;
    } else if (arg === "--help" || arg === "-h") {
      console.log("Usage: npm run demo -- [--json] [--tickets N]");
      process.exit(0);
    } else throw new Error(`Unknown option ${arg}. Usage: npm run demo -- [--json] [--tickets N]`);
  }
  return options;
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const log = (line: string) => console.log(line);
  const started = Date.now();
  const workdir = mkdtempSync(path.join(os.tmpdir(), "ioi-demo-"));
  const cleanup: Array<() => Promise<unknown>> = [async () => rmSync(workdir, { recursive: true, force: true })];

  try {
    const publicClient = (await hre.viem.getPublicClient()) as unknown as PublicClient;
    const wallets = await hre.viem.getWalletClients();
    const [, funderWallet, payerWallet, providerWallet] = wallets as unknown as Wallet[];
    if (!funderWallet || !payerWallet || !providerWallet) throw new Error("The Hardhat network has too few accounts.");
    // Payer and provider sign with local keys (Hardhat's accounts 2 and 3); the provider's key goes to its process.
    const payer = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: 2 });
    const providerAccount = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: 3 });
    const providerKey = bytesToHex(providerAccount.getHdKey().privateKey!);

    const deployment = await deployAll(hre);
    const escrow = deployment.contracts.GasEscrow.address;
    const rpc = await serveEmbeddedNetwork(hre);
    cleanup.unshift(() => rpc.close());
    // The arbitrators' daemons start now, beside the channel part; the disputes at the end are theirs.
    const daemons = await startArbitratorDaemons({ rpcUrl: rpc.url, workdir, disputeManager: deployment.contracts.DisputeManager.address, log });
    cleanup.unshift(() => daemons.stop());
    log(`Deployed GasEscrow at ${escrow}, GigEscrow, ProviderRegistry, DisputeManager and the governing Timelock ${deployment.timelock} (delay ${deployment.timelockDelay} s) on the embedded devnet (chain ${deployment.chainId}), served at ${rpc.url}.`);

    const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: parseEther("0.000001") };
    const answered: Record<string, unknown>[] = [];
    const provider = await startProviderProcess({
      rpc: rpc.url,
      escrow,
      db: path.join(workdir, "provider.db"),
      price: pricing.pricePerInvocation,
      key: providerKey,
      fromBlock: BigInt(deployment.contracts.GasEscrow.blockNumber),
      onLine: (event) => {
        if (event.event === "watchtower.answered") answered.push(event);
      },
    });
    cleanup.unshift(() => stopProcess(provider.child));
    log(`Provider node running as process ${provider.child.pid}, listening on 127.0.0.1:${provider.port}.`);

    const domain = await escrowDomain(publicClient, escrow);
    const payerStore = SqliteStore.open(path.join(workdir, "payer.db"));
    cleanup.unshift(() => payerStore.close());
    const terms = (nonce: bigint): ChannelTerms => ({
      payer: payer.address,
      provider: providerAccount.address,
      funder: getAddress(funderWallet.account.address),
      asset: NATIVE_ASSET,
      termsHash: termsHashOf(pricing),
      policyHash: keccak256(stringToBytes("policy: demo echo worker, no network")),
      challengeDuration: 3600n,
      nonce,
    });
    const connectPayer = async (opened: Awaited<ReturnType<typeof openChannel>>) => {
      const record: ChannelRecord = { sessionId: opened.sessionId, role: "payer", ref: opened.ref, pricing, escrow, chainId: domain.chainId, deposit: opened.deposit, status: "open" };
      await payerStore.putChannel(record);
      return PayerClient.connect({ account: payer, domain, store: payerStore, channel: record, port: provider.port });
    };
    const request = (i: number) => ({ jsonrpc: "2.0", id: `invoke-${i}`, method: "tools/echo", params: { text: `invocation ${i}` } });

    // --- Channel 1: stream over the socket, top up, settle cooperatively. ---
    const needed = pricing.pricePerInvocation * BigInt(options.tickets);
    const firstDeposit = (needed * 6n) / 10n; // fund 60%, top up once it is used
    const opened = await openChannel({ wallet: funderWallet, publicClient, escrow, terms: terms(1n), amount: firstDeposit });
    log(`Opened session ${opened.sessionId} with ${formatEther(opened.deposit)} ETH (gas ${opened.gasUsed}).`);
    const client = await connectPayer(opened);
    const firstPart = Math.floor(options.tickets * 0.6);
    const streamStarted = performance.now();
    const latencies = await client.stream({ count: firstPart, inflight: INFLIGHT, request });
    let streamMs = performance.now() - streamStarted;
    const topUp = await depositToChannel({ wallet: funderWallet, publicClient, escrow, ref: opened.ref, amount: needed - firstDeposit + parseEther("0.0002") });
    client.session.parameters.deposit = topUp.deposit;
    await payerStore.updateChannel(opened.sessionId, { deposit: topUp.deposit });
    log(`Topped up to ${formatEther(topUp.deposit)} ETH after ${firstPart} invocations (gas ${topUp.gasUsed}).`);
    const resumed = performance.now();
    latencies.push(...(await client.stream({ count: options.tickets - firstPart, inflight: INFLIGHT, request: (i) => request(firstPart + i) })));
    streamMs += performance.now() - resumed;
    const ticketsPerSecond = Math.round(options.tickets / (streamMs / 1000));
    const [p50, p99] = quantiles(latencies, 0.5, 0.99) as [number, number];
    const { root, leafCount } = await client.commit();
    log(`Streamed ${options.tickets} paid invocations over the sealed socket, ${INFLIGHT} in flight: ${ticketsPerSecond} tickets/s (p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms), every ticket checked and stored durably by the provider.`);
    log(`Payer and provider signed the same root ${root} over ${leafCount} receipts.`);

    // Any receipt can be proven against the settled root, e.g. in a dispute (the payer's store has every leaf).
    const tree = ReceiptAccumulator.fromLeaves(payerStore.leaves(opened.sessionId));
    const probe = Math.floor(options.tickets / 2);
    if (tree.root() !== root || !verifyProof(tree.proof(probe), root, tree.leaf(probe))) throw new Error("An inclusion proof failed.");
    log(`Receipt #${probe + 1} proves into the root with ${tree.proof(probe).length} hashes.`);

    const { summary, payerSignature, providerSignature } = await client.cooperativeClose();
    await client.close();
    const settled = await closeCooperative({ wallet: payerWallet, publicClient, escrow, ref: opened.ref, summary, payerSignature, providerSignature });
    log(`Settled cooperatively (signatures exchanged over the socket): ${formatEther(settled.paidToProvider)} ETH to the provider, ${formatEther(settled.refundedToFunder)} ETH back to the funder (gas ${settled.gasUsed}).`);

    // --- Channel 2: a stale unilateral close answered by the provider's watchtower. ---
    const second = await openChannel({ wallet: funderWallet, publicClient, escrow, terms: terms(2n), amount: pricing.pricePerInvocation * 100n });
    const client2 = await connectPayer(second);
    await client2.stream({ count: 50, inflight: 8, request });
    await client2.close();
    const stale = payerStore.steps(second.sessionId, { fromSeq: 10n, limit: 1 })[0]!.ticket;
    const closed = await closeUnilateral({ wallet: payerWallet, publicClient, escrow, ref: second.ref, ticket: stale });
    log(`Opened session ${second.sessionId}; after 50 invocations the payer closed it with the stale ticket seq ${closed.state.seq} (gas ${closed.gasUsed}).`);

    // The provider's watchtower (in its own process) sees the close and answers; wait for it on-chain.
    const challenge = await waitForChallenge(publicClient, escrow, second.sessionId, closed.blockNumber);
    const closingBlock = await publicClient.getBlock({ blockNumber: challenge.blockNumber });
    const inWindow = closingBlock.timestamp < closed.finalizesAt;
    log(`The provider's watchtower answered with seq ${challenge.seq} in block ${challenge.blockNumber}, ${closed.finalizesAt - closingBlock.timestamp} s before the window closes (gas ${challenge.gasUsed}).`);

    const now = (await publicClient.getBlock()).timestamp;
    await hre.network.provider.send("evm_increaseTime", [Number(closed.finalizesAt - now)]);
    await hre.network.provider.send("evm_mine", []);
    const recorded = { ...closed.state, seq: challenge.seq, amount: challenge.amount, receiptRoot: challenge.receiptRoot };
    const finalized = await finalizeClose({ wallet: payerWallet, publicClient, escrow, ref: second.ref, recorded });
    log(`After the window the channel finalised: ${formatEther(finalized.paidToProvider)} ETH to the provider (the newest ticket's amount), ${formatEther(finalized.refundedToFunder)} ETH refunded (gas ${finalized.gasUsed}).`);

    // --- Disputes: a gig decided by Lane 1 and a session receipt decided by Lane 0. ---
    log("");
    // The three cases (gig, session, streamed job) are resolved by three `ioi arbitrator serve` processes on the served devnet (no arbitrate call here).
    const cases = await runDisputeDemo({ hre, deployment, publicClient, wallets: wallets as unknown as Wallet[], log, daemons });

    const gas: Record<string, number> = {
      open: Number(opened.gasUsed),
      deposit: Number(topUp.gasUsed),
      closeCooperative: Number(settled.gasUsed),
      closeUnilateral: Number(closed.gasUsed),
      challenge: challenge.gasUsed,
      finalize: Number(finalized.gasUsed),
    };
    log("");
    log("Summary:");
    log(`  session            ${opened.sessionId}`);
    log(`  tickets            ${options.tickets} (final seq ${summary.finalSeq}), ${ticketsPerSecond}/s over the socket`);
    log(`  paid to provider   ${formatEther(settled.paidToProvider)} ETH`);
    log(`  refunded to funder ${formatEther(settled.refundedToFunder)} ETH`);
    log(`  receipt root       ${settled.receiptRoot}`);
    log(`  watchtower         stale seq ${closed.state.seq} answered with seq ${challenge.seq} ${inWindow ? "inside" : "OUTSIDE"} the window`);
    log("Gas used per transaction:");
    for (const [op, g] of Object.entries(gas)) log(`  ${op.padEnd(18)} ${g.toLocaleString("en-US")}`);
    log("Dispute cases:");
    for (const c of cases) {
      const changes = Object.entries(c.balanceChanges).map(([who, delta]) => `${who} ${delta}`).join(", ");
      log(`  ${c.subject.padEnd(8)} lane ${c.lane}  ${c.verdict.padEnd(16)} resolution ${c.resolutionHash.slice(0, 18)}…  ${changes}`);
      log(`  ${"".padEnd(8)} panel of ${c.panel.length}, ${c.signers.length} signed, appeal window ended ${c.appealWindowEnds}, fees claimed by ${Object.keys(c.arbitratorFees).length} arbitrators (${Object.values(c.arbitratorFees)[0] ?? "0"} wei each)`);
    }
    log(`  wall time          ${((Date.now() - started) / 1000).toFixed(1)} s`);

    if (options.json) {
      console.log(
        JSON.stringify({
          network: hre.network.name,
          chainId: deployment.chainId,
          escrow,
          sessionId: opened.sessionId,
          tickets: options.tickets,
          ticketsPerSecond,
          latencyMs: { p50: Number(p50.toFixed(2)), p99: Number(p99.toFixed(2)) },
          inflight: INFLIGHT,
          finalSeq: summary.finalSeq.toString(),
          deposited: topUp.deposit.toString(),
          paidToProvider: settled.paidToProvider.toString(),
          refundedToFunder: settled.refundedToFunder.toString(),
          receiptRoot: settled.receiptRoot,
          gas,
          watchtower: {
            sessionId: second.sessionId,
            staleSeq: closed.state.seq.toString(),
            answeredSeq: challenge.seq.toString(),
            inWindow,
            reportedByProvider: answered.length > 0,
            paidToProvider: finalized.paidToProvider.toString(),
            refundedToFunder: finalized.refundedToFunder.toString(),
          },
          cases,
        }),
      );
    }
  } finally {
    for (const step of cleanup) await step().catch(() => undefined);
  }
}

/** Waits (by polling the chain, at most 60 s) for the ChannelChallenged event of `sessionId`. */
async function waitForChallenge(publicClient: PublicClient, escrow: Hex, sessionId: Hex, fromBlock: bigint) {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const logs = parseEventLogs({ abi: gasEscrowAbi, eventName: "ChannelChallenged", logs: await publicClient.getLogs({ address: escrow, fromBlock }) });
    const hit = logs.find((l) => l.args.sessionId === sessionId);
    if (hit) {
      const receipt = await publicClient.getTransactionReceipt({ hash: hit.transactionHash });
      return { seq: hit.args.seq, amount: hit.args.amount, receiptRoot: hit.args.receiptRoot, blockNumber: hit.blockNumber, gasUsed: Number(receipt.gasUsed) };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("The provider's watchtower did not answer the stale close within 60 s.");
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error instanceof Error ? `demo failed: ${error.message}` : error);
    process.exit(1);
  },
);
