/**
 * Arbitration wall time for `npm run bench`: Lane 0 + Lane 1 on a gig case whose deliverable was produced
 * in a 1,000-receipt session (two of its receipts, with their proofs against the gig's receipt root, are
 * evidence), excluding the time the test suite itself runs; and Lane 0 alone on a session case challenging
 * receipt 500 of a 1,000-receipt session.
 */
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { erc20Abi, getAddress, keccak256, parseEther, stringToBytes, zeroAddress, zeroHash, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { bundleHash } from "../arbitration/bundle";
import { buildGigPackage, buildSessionPackage } from "../arbitration/build";
import { disputeManagerAbi, gigEscrowAbi, loadCaseContext, openGigCase, openSessionCase, providerRegistryAbi, type Deployment as Addresses } from "../arbitration/chain";
import { icsHash } from "../arbitration/ics";
import { makeEvidence, packageHash } from "../arbitration/package";
import { arbitrate } from "../arbitration/runner";
import { replay } from "../arbitration/replay";
import { ReceiptAccumulator } from "../channel-client/accumulator";
import { gasEscrowDomain } from "../channel-client/eip712";
import { closeUnilateral, openChannel, type Wallet } from "../channel-client/escrow";
import { receiptLeaf } from "../channel-client/leaf";
import { sessionReceiptHash, signSessionReceipt, type SignedSessionReceipt } from "../channel-client/receipt";
import { NATIVE_ASSET, sessionIdOf, termsHashOf, type PricingTerms } from "../channel-client/terms";
import { paymentTicketHash, signPaymentTicket, type SignedPaymentTicket } from "../channel-client/ticket";
import { deployAll } from "./deploy";
import { codeGigIcs, FAILING_DELIVERABLE, SUITE } from "./examples/code-gig";

const MNEMONIC = "test test test test test test test test test test test junk";
const RECEIPTS = 1_000;

export type ArbitrationBench = {
  /** Lane 0 + Lane 1 on the gig case, minus the test suite's own replay time. */
  gigCaseMs: number;
  /** The test suite's replays in that run (excluded above). */
  replayMs: number;
  /** Lane 0 on the session case. */
  sessionCaseMs: number;
  receipts: number;
};

export async function benchArbitration(hre: HardhatRuntimeEnvironment): Promise<ArbitrationBench> {
  const publicClient = await hre.viem.getPublicClient();
  const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
  const [governance, client, payerWallet, providerWallet] = wallets as [Wallet, Wallet, Wallet, Wallet];
  const deployment = await deployAll(hre);
  const c = deployment.contracts;
  const addresses: Addresses = { disputeManager: c.DisputeManager.address, gasEscrow: c.GasEscrow.address, gigEscrow: c.GigEscrow.address, registry: c.ProviderRegistry.address };
  const send = async (wallet: Wallet, request: Record<string, unknown>) => {
    const hash = await wallet.writeContract(request as never);
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`${String(request.functionName)} reverted`);
  };
  // The provider must be active to accept a gig.
  const stake = parseEther("1000");
  const mint = [{ type: "function", name: "mint", stateMutability: "nonpayable", inputs: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }], outputs: [] }] as const;
  await send(governance, { address: c.LaborGas.address, abi: mint, functionName: "mint", args: [providerWallet.account.address, stake] });
  await send(providerWallet, { address: c.LaborGas.address, abi: erc20Abi, functionName: "approve", args: [addresses.registry, stake] });
  const id = keccak256(stringToBytes("bench provider"));
  await send(providerWallet, { address: addresses.registry, abi: providerRegistryAbi, functionName: "registerProvider", args: ["tcp://127.0.0.1", id, id, id] });
  await send(providerWallet, { address: addresses.registry, abi: providerRegistryAbi, functionName: "bond", args: [0, stake] });

  // A 1,000-receipt session, signed for real.
  const payer = mnemonicToAccount(MNEMONIC, { addressIndex: 2 });
  const provider = mnemonicToAccount(MNEMONIC, { addressIndex: 3 });
  const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: 1_000n };
  const terms = { payer: payer.address, provider: provider.address, funder: getAddress(client.account.address), asset: NATIVE_ASSET, termsHash: termsHashOf(pricing), policyHash: keccak256(stringToBytes("bench policy")), challengeDuration: 3600n, nonce: 99n };
  const opened = await openChannel({ wallet: client, publicClient, escrow: addresses.gasEscrow, terms, amount: parseEther("1") });
  const domain = gasEscrowDomain({ chainId: deployment.chainId, verifyingContract: addresses.gasEscrow });
  const sessionId = sessionIdOf(domain, opened.ref);
  const tree = new ReceiptAccumulator();
  const steps: { ticket: SignedPaymentTicket; receipt: SignedSessionReceipt; index: number }[] = [];
  let prev: Hex = zeroHash;
  for (let seq = 1n; seq <= BigInt(RECEIPTS) + 1n; seq++) {
    const ticket = await signPaymentTicket({ account: payer, domain, ticket: { sessionId, provider: provider.address, termsHash: terms.termsHash, seq, cumulativeAmount: pricing.pricePerInvocation * seq, receiptRoot: tree.root() } });
    if (seq > BigInt(RECEIPTS)) {
      steps.push({ ticket, receipt: steps[0]!.receipt, index: -1 });
      break;
    }
    const receipt = { sessionId, seq, offloadPacketHash: keccak256(stringToBytes(`in ${seq}`)), outputHash: keccak256(stringToBytes(`out ${seq}`)), policyHash: terms.policyHash, modelSnapshotId: "model:bench@1", metering: { units: 1n, amount: pricing.pricePerInvocation }, prevReceiptHash: prev };
    const signed = await signSessionReceipt({ account: provider, receipt });
    prev = sessionReceiptHash(receipt);
    steps.push({ ticket, receipt: signed, index: tree.append(receiptLeaf(receipt, ticket.ticket)) });
  }
  const evidenceOf = (seq: number) => {
    const s = steps[seq - 1]!;
    return { receipt: s.receipt, ticket: s.ticket, leafIndex: BigInt(s.index), merkleProof: tree.proof(s.index, RECEIPTS) };
  };

  // Gig case: the deliverable of that session; receipts 500 and 501 as evidence against the gig's root.
  const now = (await publicClient.getBlock()).timestamp;
  const ics = codeGigIcs({ asset: zeroAddress, maxPrice: parseEther("1"), deadline: now + 86_400n });
  await send(client, { address: addresses.gigEscrow, abi: gigEscrowAbi, functionName: "fund", args: [provider.address, zeroAddress, parseEther("1"), icsHash(ics), Number(now + 86_400n), 3600], value: parseEther("1") });
  const gigId = await publicClient.readContract({ address: addresses.gigEscrow, abi: gigEscrowAbi, functionName: "gigCount" });
  await send(providerWallet, { address: addresses.gigEscrow, abi: gigEscrowAbi, functionName: "accept", args: [gigId] });
  await send(providerWallet, { address: addresses.gigEscrow, abi: gigEscrowAbi, functionName: "deliver", args: [gigId, bundleHash(FAILING_DELIVERABLE), tree.prefixRoot(RECEIPTS)] });
  const gigCaseId = await publicClient.readContract({ address: addresses.disputeManager, abi: disputeManagerAbi, functionName: "nextCaseId", args: [1, `0x${gigId.toString(16).padStart(64, "0")}`] });
  const gigPackage = buildGigPackage({ caseId: gigCaseId, chainId: BigInt(deployment.chainId), disputeManager: addresses.disputeManager, challenger: getAddress(client.account.address), lane: 1, gigEscrow: addresses.gigEscrow, gigId, ics, suite: SUITE, deliverable: FAILING_DELIVERABLE });
  gigPackage.evidence.push(makeEvidence("receipt", evidenceOf(500)), makeEvidence("receipt", evidenceOf(501)));
  await openGigCase({ wallet: client, publicClient, disputeManager: addresses.disputeManager, gigEscrow: addresses.gigEscrow, gigId, lane: 1, packageHash: packageHash(gigPackage) });
  const gigContext = await loadCaseContext(publicClient, addresses, gigCaseId, gigPackage);
  let replayMs = 0;
  const timedReplay: typeof replay = async (parameters) => {
    const started = performance.now();
    try {
      return await replay(parameters);
    } finally {
      replayMs += performance.now() - started;
    }
  };
  await arbitrate({ pkg: gigPackage, ctx: gigContext, actor: "bench warm-up", replay: timedReplay });
  replayMs = 0;
  const gigStarted = performance.now();
  const gigRun = await arbitrate({ pkg: gigPackage, ctx: gigContext, actor: "bench", replay: timedReplay });
  const gigTotal = performance.now() - gigStarted;
  if (gigRun.resolution.aggregate.finalVerdict !== "provider_fault") throw new Error(`unexpected gig verdict ${gigRun.resolution.aggregate.finalVerdict}`);

  // Session case: the provider closes with ticket 1,001 (root over 1,000 receipts); receipt 500 is challenged.
  const closed = await closeUnilateral({ wallet: providerWallet, publicClient, escrow: addresses.gasEscrow, ref: opened.ref, ticket: steps[RECEIPTS]!.ticket });
  const sessionCaseId = await publicClient.readContract({ address: addresses.disputeManager, abi: disputeManagerAbi, functionName: "nextCaseId", args: [2, sessionId] });
  const sessionPackage = buildSessionPackage({ caseId: sessionCaseId, chainId: BigInt(deployment.chainId), disputeManager: addresses.disputeManager, challenger: payer.address, lane: 0, gasEscrow: addresses.gasEscrow, sessionId, ref: opened.ref, pricing, closing: closed.state, seq: 500n, receipts: [evidenceOf(499), evidenceOf(500)] });
  const challenged = steps[499]!;
  await openSessionCase({ wallet: payerWallet, publicClient, disputeManager: addresses.disputeManager, lane: 0, packageHash: packageHash(sessionPackage), ref: opened.ref, recorded: closed.state, receiptHash: sessionReceiptHash(challenged.receipt.receipt), ticketHash: paymentTicketHash(challenged.ticket.ticket), proof: tree.proof(challenged.index, RECEIPTS) });
  const sessionContext = await loadCaseContext(publicClient, addresses, sessionCaseId, sessionPackage);
  const sessionStarted = performance.now();
  const sessionRun = await arbitrate({ pkg: sessionPackage, ctx: sessionContext, actor: "bench" });
  const sessionCaseMs = performance.now() - sessionStarted;
  if (sessionRun.state !== "deliver") throw new Error(`unexpected session state ${sessionRun.state}: ${sessionRun.resolution.aggregate.reasonCodes.join(",")}`);
  return { gigCaseMs: round(gigTotal - replayMs), replayMs: round(replayMs), sessionCaseMs: round(sessionCaseMs), receipts: RECEIPTS };
}

const round = (ms: number) => Number(ms.toFixed(1));
