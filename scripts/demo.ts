/**
 * The main job, end to end on the embedded Hardhat network: deploy, fund a payer's channel, stream paid
 * invocations (payer and provider exchange signed tickets and receipts), top the channel up when it runs
 * low, fold every receipt into the Merkle root, and settle cooperatively with that root. Then a second
 * channel shows the unhappy path: the payer closes unilaterally with a stale ticket, the provider
 * challenges with the newest one inside the window, and the channel is finalised after it.
 *
 *   npm run demo                     readable summary
 *   npm run demo -- --json           the same, plus one JSON object on the last line
 *   npm run demo -- --tickets 5000   stream another number of invocations
 */
import hre from "hardhat";
import {
  formatEther,
  getAddress,
  keccak256,
  parseEther,
  stringToBytes,
  toBytes,
  type Address,
  type Hex,
  type LocalAccount,
} from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { verifyProof } from "../channel-client/accumulator";
import {
  challengeClose,
  closeCooperative,
  closeUnilateral,
  depositToChannel,
  escrowDomain,
  finalizeClose,
  openChannel,
  type Wallet,
} from "../channel-client/escrow";
import type { GasEscrowDomain } from "../channel-client/eip712";
import type { SignedPaymentTicket } from "../channel-client/ticket";
import { PayerSession } from "../channel-client/payer-session";
import { ProviderSession } from "../channel-client/provider-session";
import { NATIVE_ASSET, sessionIdOf, termsHashOf, type ChannelRef, type ChannelTerms, type PricingTerms } from "../channel-client/terms";
import { deployAll } from "./deploy";

const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";

type Options = { json: boolean; tickets: number };

function parseArgs(argv: string[]): Options {
  const options: Options = { json: false, tickets: 1000 };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--json") options.json = true;
    else if (arg === "--tickets") {
      const value = Number(argv[++i]);
      if (!Number.isSafeInteger(value) || value < 1 || value > 1_000_000) {
        throw new Error(`--tickets takes a whole number from 1 to 1000000; received ${argv[i] ?? "nothing"}.`);
      }
      options.tickets = value;
    } else if (arg === "--help" || arg === "-h") {
      console.log("Usage: npm run demo -- [--json] [--tickets N]");
      process.exit(0);
    } else throw new Error(`Unknown option ${arg}. Usage: npm run demo -- [--json] [--tickets N]`);
  }
  return options;
}

const echoWorker = async (input: Uint8Array) => ({ output: toBytes(keccak256(input)), units: 1n });

/** Payer and provider sessions of one opened channel, in this process. */
function sessions(parameters: {
  payer: LocalAccount;
  provider: LocalAccount;
  domain: GasEscrowDomain;
  ref: ChannelRef;
  sessionId: Hex;
  pricing: PricingTerms;
  deposit: bigint;
}) {
  const { payer, provider, ...channel } = parameters;
  return {
    payer: new PayerSession({ account: payer, ...channel }),
    provider: new ProviderSession({ account: provider, ...channel, modelSnapshotId: "worker:echo-keccak@1", handler: echoWorker }),
  };
}

/** One paid invocation: ticket, work, receipt, both sides fold the leaf. Returns the ticket. */
async function invokeOnce(payer: PayerSession, provider: ProviderSession, i: number): Promise<SignedPaymentTicket> {
  const input = stringToBytes(`invocation ${i}`);
  const { signed, leafCount } = await payer.nextTicket(input);
  const result = await provider.invoke(signed, input, leafCount);
  await payer.acceptReceipt(result.step.receipt, result.output);
  return signed;
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const log = (line: string) => console.log(line);
  const started = Date.now();

  const publicClient = await hre.viem.getPublicClient();
  const wallets = await hre.viem.getWalletClients();
  const [, funderWallet, payerWallet, providerWallet] = wallets;
  if (!funderWallet || !payerWallet || !providerWallet) throw new Error("The Hardhat network has too few accounts.");
  // Payer and provider sign off-chain with local keys (Hardhat's accounts 2 and 3).
  const payer = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: 2 });
  const provider = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: 3 });

  const deployment = await deployAll(hre);
  const escrow = deployment.contracts.GasEscrow.address;
  log(`Deployed GasEscrow at ${escrow} and LaborGas at ${deployment.contracts.LaborGas.address} (chain ${deployment.chainId}).`);

  const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: parseEther("0.000001") };
  const terms: ChannelTerms = {
    payer: payer.address,
    provider: provider.address,
    funder: getAddress(funderWallet.account.address),
    asset: NATIVE_ASSET,
    termsHash: termsHashOf(pricing),
    policyHash: keccak256(stringToBytes("policy: demo echo worker, no network")),
    challengeDuration: 3600n,
    nonce: 1n,
  };
  const needed = pricing.pricePerInvocation * BigInt(options.tickets);
  // Fund 60% up front and top up once the stream has used most of it, so the demo exercises `deposit`.
  const firstDeposit = (needed * 6n) / 10n;
  const domain = await escrowDomain(publicClient, escrow);
  const opened = await openChannel({ wallet: funderWallet, publicClient, escrow, terms, amount: firstDeposit });
  if (sessionIdOf(domain, opened.ref) !== opened.sessionId) throw new Error("The contract derived another session id.");
  log(`Opened session ${opened.sessionId} with ${formatEther(opened.deposit)} ETH (gas ${opened.gasUsed}).`);

  const { payer: payerSession, provider: providerSession } = sessions({
    payer,
    provider,
    domain,
    ref: opened.ref,
    sessionId: opened.sessionId,
    pricing,
    deposit: opened.deposit,
  });

  let deposit = opened.deposit;
  let topUp: Awaited<ReturnType<typeof depositToChannel>> | undefined;
  const streamStarted = Date.now();
  for (let i = 1; i <= options.tickets; i++) {
    if (payerSession.cumulativeAmount + pricing.pricePerInvocation > deposit) {
      topUp = await depositToChannel({ wallet: funderWallet, publicClient, escrow, ref: opened.ref, amount: needed - firstDeposit + parseEther("0.0002"), expectedDeposit: deposit });
      deposit = topUp.deposit;
      payerSession.parameters.deposit = deposit;
      providerSession.deposit = deposit;
      log(`Topped up to ${formatEther(deposit)} ETH after ${i - 1} invocations (gas ${topUp.gasUsed}).`);
    }
    await invokeOnce(payerSession, providerSession, i);
  }
  const streamSeconds = (Date.now() - streamStarted) / 1000;
  const root = payerSession.accumulator.root();
  if (root !== providerSession.accumulator.root()) throw new Error("Payer and provider disagree on the receipt root.");
  log(`Streamed ${options.tickets} paid invocations in ${streamSeconds.toFixed(1)} s (${Math.round(options.tickets / streamSeconds)}/s); both sides hold root ${root}.`);

  // Any receipt can later be proven against the settled root, e.g. in a dispute.
  const probe = Math.floor(options.tickets / 2);
  const proof = providerSession.accumulator.proof(probe);
  if (!verifyProof(proof, root, providerSession.accumulator.leaf(probe))) throw new Error("An inclusion proof failed.");
  log(`Receipt #${probe + 1} proves into the root with ${proof.length} hashes.`);

  const proposal = await payerSession.proposeCooperativeClose();
  const providerSignature = await providerSession.countersign(proposal.summary, proposal.signature);
  const settled = await closeCooperative({
    wallet: providerWallet,
    publicClient,
    escrow,
    ref: opened.ref,
    summary: proposal.summary,
    payerSignature: proposal.signature,
    providerSignature,
  });

  log("");
  log(`Settled session ${opened.sessionId} cooperatively (gas ${settled.gasUsed}).`);

  const unhappy = await unilateralChannel({ publicClient, escrow, domain, pricing, terms: { ...terms, nonce: 2n }, funderWallet, payerWallet, providerWallet, payer, provider, log });

  // Gas is a count, not an amount: plain JSON numbers (all far below 2^53). Keys are function names.
  const gas: Record<string, number> = { open: Number(opened.gasUsed) };
  if (topUp) gas.deposit = Number(topUp.gasUsed);
  gas.closeCooperative = Number(settled.gasUsed);
  gas.closeUnilateral = Number(unhappy.closed.gasUsed);
  gas.challenge = Number(unhappy.challenged.gasUsed);
  gas.finalize = Number(unhappy.finalized.gasUsed);

  log("");
  log("Cooperative channel:");
  log(`  session            ${opened.sessionId}`);
  log(`  tickets            ${options.tickets} (final seq ${proposal.summary.finalSeq})`);
  log(`  paid to provider   ${formatEther(settled.paidToProvider)} ETH`);
  log(`  refunded to funder ${formatEther(settled.refundedToFunder)} ETH`);
  log(`  receipt root       ${settled.receiptRoot}`);
  log("Unilateral channel:");
  log(`  session            ${unhappy.sessionId}`);
  log(`  stale close        seq ${unhappy.closed.state.seq} by the payer, challenged with seq ${unhappy.challenged.state.seq}`);
  log(`  paid to provider   ${formatEther(unhappy.finalized.paidToProvider)} ETH (the newest ticket's amount)`);
  log(`  refunded to funder ${formatEther(unhappy.finalized.refundedToFunder)} ETH`);
  log("Gas used per transaction:");
  for (const [op, g] of Object.entries(gas)) log(`  ${op.padEnd(18)} ${g.toLocaleString("en-US")}`);
  log(`  wall time          ${((Date.now() - started) / 1000).toFixed(1)} s`);

  if (options.json) {
    const summary = {
      network: hre.network.name,
      chainId: deployment.chainId,
      escrow,
      sessionId: opened.sessionId,
      tickets: options.tickets,
      finalSeq: proposal.summary.finalSeq.toString(),
      deposited: deposit.toString(),
      paidToProvider: settled.paidToProvider.toString(),
      refundedToFunder: settled.refundedToFunder.toString(),
      receiptRoot: settled.receiptRoot as Hex,
      gas,
      transactions: { open: opened.hash, ...(topUp ? { deposit: topUp.hash } : {}), closeCooperative: settled.hash },
      unilateral: {
        sessionId: unhappy.sessionId,
        staleSeq: unhappy.closed.state.seq.toString(),
        challengedSeq: unhappy.challenged.state.seq.toString(),
        paidToProvider: unhappy.finalized.paidToProvider.toString(),
        refundedToFunder: unhappy.finalized.refundedToFunder.toString(),
        receiptRoot: unhappy.finalized.receiptRoot,
      },
    };
    console.log(JSON.stringify(summary));
  }
}

/**
 * Second channel: stream a few invocations, let the payer close with an old ticket, have the provider
 * answer with its newest ticket inside the window, advance the devnet's clock past the window, finalise.
 */
async function unilateralChannel(parameters: {
  publicClient: Awaited<ReturnType<typeof hre.viem.getPublicClient>>;
  escrow: Address;
  domain: GasEscrowDomain;
  pricing: PricingTerms;
  terms: ChannelTerms;
  funderWallet: Wallet;
  payerWallet: Wallet;
  providerWallet: Wallet;
  payer: LocalAccount;
  provider: LocalAccount;
  log: (line: string) => void;
}) {
  const { publicClient, escrow, domain, pricing, terms, funderWallet, payerWallet, providerWallet, payer, provider, log } = parameters;
  const opened = await openChannel({ wallet: funderWallet, publicClient, escrow, terms, amount: pricing.pricePerInvocation * 100n });
  const { payer: payerSession, provider: providerSession } = sessions({ payer, provider, domain, ref: opened.ref, sessionId: opened.sessionId, pricing, deposit: opened.deposit });
  let stale: SignedPaymentTicket | undefined;
  for (let i = 1; i <= 50; i++) {
    const ticket = await invokeOnce(payerSession, providerSession, i);
    if (i === 10) stale = ticket;
  }
  const newest = providerSession.latestTicket;
  if (!stale || !newest) throw new Error("The second channel streamed no tickets.");

  const closed = await closeUnilateral({ wallet: payerWallet, publicClient, escrow, ref: opened.ref, ticket: stale });
  log(`Opened session ${opened.sessionId}; after 50 invocations the payer closed it with the stale ticket seq ${closed.state.seq} (gas ${closed.gasUsed}).`);
  const challenged = await challengeClose({ wallet: providerWallet, publicClient, escrow, ref: opened.ref, recorded: closed.state, ticket: newest });
  log(`The provider challenged with ticket seq ${challenged.state.seq} inside the window (gas ${challenged.gasUsed}).`);

  const now = (await publicClient.getBlock()).timestamp;
  await hre.network.provider.send("evm_increaseTime", [Number(challenged.finalizesAt - now)]);
  await hre.network.provider.send("evm_mine", []);
  const finalized = await finalizeClose({ wallet: providerWallet, publicClient, escrow, ref: opened.ref, recorded: challenged.state });
  log(`After the window the channel finalised: ${formatEther(finalized.paidToProvider)} ETH to the provider (gas ${finalized.gasUsed}).`);
  return { sessionId: opened.sessionId, closed, challenged, finalized };
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? `demo failed: ${error.message}` : error);
  process.exit(1);
});
