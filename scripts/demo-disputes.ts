/**
 * The dispute half of the demo, on the same embedded devnet:
 *
 * 1. the whitepaper's Appendix A.4 example — a client funds a gig for code that must pass a hash-anchored
 *    test suite; the provider delivers code failing 3 of 12 tests; the client disputes; three arbitrators
 *    each run Lane 0 + Lane 1 (the suite replayed in a sandboxed child process), reach byte-identical
 *    resolutions and sign them; the resolution is enforced: partial refund per the ICS penalty schedule,
 *    the client's bond back, the provider's SLA bond slashed (burn share burnt);
 * 2. a session dispute — a provider signed a receipt under a policy other than the session's; the payer
 *    proves that receipt against the root the provider committed on-chain, Lane 0 finds the violation, and
 *    the receipt's price comes off the provider's payout.
 */
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import {
  erc20Abi,
  formatEther,
  getAddress,
  keccak256,
  parseEther,
  stringToBytes,
  zeroAddress,
  zeroHash,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { bundleHash } from "../arbitration/bundle";
import { buildGigPackage, buildSessionPackage } from "../arbitration/build";
import { loadCaseContext, openGigCase, openSessionCase, submitResolution, gigEscrowAbi, disputeManagerAbi, providerRegistryAbi, type Deployment as DisputeDeployment } from "../arbitration/chain";
import { icsHash } from "../arbitration/ics";
import { packageHash, packageToJson, parsePackage, type ChallengePackage } from "../arbitration/package";
import { disputeManagerDomain, signResolution } from "../arbitration/resolution";
import { arbitrate, judgeRuntimeHash, type ArbitrationRun } from "../arbitration/runner";
import { ReceiptAccumulator } from "../channel-client/accumulator";
import { canon } from "../channel-client/canonical";
import { gasEscrowDomain } from "../channel-client/eip712";
import { closeUnilateral, finalizeClose, openChannel, type Wallet } from "../channel-client/escrow";
import { receiptLeaf } from "../channel-client/leaf";
import { sessionReceiptHash, signSessionReceipt, type SessionReceipt, type SignedSessionReceipt } from "../channel-client/receipt";
import { sessionIdOf, termsHashOf, type PricingTerms } from "../channel-client/terms";
import { paymentTicketHash, signPaymentTicket, type SignedPaymentTicket } from "../channel-client/ticket";
import type { Deployment } from "./deploy";
import { codeGigIcs, FAILING_DELIVERABLE, SUITE } from "./examples/code-gig";

const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";
const BURN: Address = "0x000000000000000000000000000000000000dEaD";
/** Hardhat accounts 10..12 act as the arbitrator quorum. */
const ARBITRATOR_INDICES = [10, 11, 12];

/** One case as the demo's JSON line reports it. Balance changes are in base units, signed decimal strings. */
export type CaseReport = {
  subject: "gig" | "session";
  caseId: Hex;
  lane: number;
  verdict: string;
  resolutionHash: Hex;
  identicalRuns: number;
  bondPosted: string;
  refund: string;
  slash: string;
  balanceChanges: Record<string, string>;
  gas: { open: number; resolve: number };
};

type DemoParameters = {
  hre: HardhatRuntimeEnvironment;
  deployment: Deployment;
  publicClient: PublicClient;
  wallets: Wallet[];
  log: (line: string) => void;
};

export async function runDisputeDemo(p: DemoParameters): Promise<CaseReport[]> {
  const { publicClient, wallets, deployment, log } = p;
  const c = deployment.contracts;
  const addresses: DisputeDeployment = {
    disputeManager: c.DisputeManager.address,
    gasEscrow: c.GasEscrow.address,
    gigEscrow: c.GigEscrow.address,
    registry: c.ProviderRegistry.address,
  };
  const governance = wallets[0]!;
  const client = wallets[1]!;
  const payerWallet = wallets[2]!;
  const providerWallet = wallets[3]!;
  const watcher = wallets[8]!;
  const arbitrators = ARBITRATOR_INDICES.map((i) => mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: i })).sort((a, b) =>
    BigInt(a.address) < BigInt(b.address) ? -1 : 1,
  );
  const chainId = BigInt(deployment.chainId);
  const write = async (wallet: Wallet, request: Parameters<Wallet["writeContract"]>[0]) => {
    const hash = await wallet.writeContract(request);
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`Transaction ${hash} reverted.`);
    return receipt;
  };

  // --- Registry: the provider posts an SLA bond, three arbitrators stake and pin this judge runtime. ---
  const token = c.LaborGas.address;
  const registry = c.ProviderRegistry.address;
  const label = (s: string) => keccak256(stringToBytes(s));
  const minProvider = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "minProviderBond" });
  const minStake = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "minArbitratorStake" });
  const providerBond = minProvider * 3n;
  await write(governance, { address: token, abi: mintAbi, functionName: "mint", args: [providerWallet.account.address, providerBond] } as never);
  await write(providerWallet, { address: token, abi: erc20Abi, functionName: "approve", args: [registry, providerBond] } as never);
  await write(providerWallet, {
    address: registry,
    abi: providerRegistryAbi,
    functionName: "registerProvider",
    args: ["tcp://127.0.0.1", label("caps: js-runner"), label("did:ioi:provider-demo"), label("mldsa: provider-demo")],
  } as never);
  await write(providerWallet, { address: registry, abi: providerRegistryAbi, functionName: "bond", args: [0, providerBond] } as never);
  const runtime = judgeRuntimeHash();
  for (const index of ARBITRATOR_INDICES) {
    const wallet = wallets[index]!;
    await write(governance, { address: token, abi: mintAbi, functionName: "mint", args: [wallet.account.address, minStake] } as never);
    await write(wallet, { address: token, abi: erc20Abi, functionName: "approve", args: [registry, minStake] } as never);
    await write(wallet, {
      address: registry,
      abi: providerRegistryAbi,
      functionName: "registerArbitrator",
      args: [runtime, label(`did:ioi:arbitrator-${index}`), label(`mldsa: arbitrator-${index}`)],
    } as never);
    await write(wallet, { address: registry, abi: providerRegistryAbi, functionName: "bond", args: [1, minStake] } as never);
  }
  log(`Registered the provider (SLA bond ${formatEther(providerBond)} LGAS) and ${ARBITRATOR_INDICES.length} arbitrators pinned to judge runtime ${runtime.slice(0, 18)}….`);

  const ethOf = (who: Address) => publicClient.getBalance({ address: who });
  const slaBondOf = async (who: Address) => {
    const b = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondOf", args: [0, who] });
    return b.active + b.pending;
  };
  const lgasOf = (who: Address) => publicClient.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [who] });

  /** Three arbitrators run the case independently; all must agree byte for byte; the quorum signs. */
  async function arbitrateAndEnforce(caseId: Hex, pkg: ChallengePackage) {
    const runs: ArbitrationRun[] = [];
    for (const [i, arbitrator] of arbitrators.entries()) {
      const received = parsePackage(canon(packageToJson(pkg)));
      const ctx = await loadCaseContext(publicClient, addresses, caseId, received);
      runs.push(await arbitrate({ pkg: received, ctx, actor: `arbitrator-${i + 1}:${arbitrator.address}` }));
    }
    const hashes = new Set(runs.map((r) => r.resolutionHash));
    if (hashes.size !== 1) throw new Error(`The arbitrators disagree: ${[...hashes].join(", ")}.`);
    const run = runs[0]!;
    const domain = disputeManagerDomain(chainId, addresses.disputeManager);
    const signatures = await Promise.all(
      arbitrators.map(async (a: LocalAccount) => ({ signer: a.address, signature: await signResolution(a, domain, run.message) })),
    );
    const resolved = await submitResolution({ wallet: watcher, publicClient, deployment: addresses, message: run.message, signatures });
    return { run, resolved, identicalRuns: runs.length };
  }

  const reports: CaseReport[] = [];

  // --- Case 1: the Appendix A.4 gig. ---
  const bounty = parseEther("1");
  // The ICS (and so its hash and the resolution) must not depend on the wall clock: a fixed deadline, 2100-01-01.
  const ics = codeGigIcs({ asset: zeroAddress, maxPrice: bounty, deadline: 4_102_444_800n });
  // Nor the replays' pinned clock and seed (`pinned.ts`), which come from the funding block's timestamp, and
  // Hardhat stamps blocks with the wall clock: the gig is funded in a block at a fixed time instead.
  const DEMO_GIG_FUNDED_AT = 2_000_000_000n; // 2033-05-18T03:33:20Z
  const latest = await publicClient.getBlock();
  if (latest.timestamp >= DEMO_GIG_FUNDED_AT) {
    throw new Error(`The chain's time ${latest.timestamp} is past the demo gig's fixed funding time ${DEMO_GIG_FUNDED_AT}; raise DEMO_GIG_FUNDED_AT.`);
  }
  await p.hre.network.provider.send("evm_setNextBlockTimestamp", [Number(DEMO_GIG_FUNDED_AT)]);
  const funded = await write(client, {
    address: c.GigEscrow.address,
    abi: gigEscrowAbi,
    functionName: "fund",
    args: [providerWallet.account.address, zeroAddress, bounty, icsHash(ics), Number(DEMO_GIG_FUNDED_AT + 86_400n), 3600],
    value: bounty,
  } as never);
  void funded;
  const gigId = await publicClient.readContract({ address: c.GigEscrow.address, abi: gigEscrowAbi, functionName: "gigCount" });
  await write(providerWallet, { address: c.GigEscrow.address, abi: gigEscrowAbi, functionName: "accept", args: [gigId] } as never);
  await write(providerWallet, {
    address: c.GigEscrow.address,
    abi: gigEscrowAbi,
    functionName: "deliver",
    args: [gigId, bundleHash(FAILING_DELIVERABLE), zeroHash],
  } as never);
  log(`Gig ${gigId}: the client escrowed ${formatEther(bounty)} ETH for code bound to ICS ${icsHash(ics).slice(0, 18)}… (12-test suite ${bundleHash(SUITE).slice(0, 18)}…); the provider delivered.`);

  const gigCaseId = await publicClient.readContract({
    address: addresses.disputeManager,
    abi: disputeManagerAbi,
    functionName: "nextCaseId",
    args: [1, `0x${gigId.toString(16).padStart(64, "0")}`],
  });
  const gigPackage = buildGigPackage({
    caseId: gigCaseId,
    chainId,
    disputeManager: addresses.disputeManager,
    challenger: getAddress(client.account.address),
    lane: 1,
    gigEscrow: addresses.gigEscrow,
    gigId,
    ics,
    suite: SUITE,
    deliverable: FAILING_DELIVERABLE,
    description: "The delivered strings.js fails the bound test suite.",
  });
  const gigOpened = await openGigCase({
    wallet: client,
    publicClient,
    disputeManager: addresses.disputeManager,
    gigEscrow: addresses.gigEscrow,
    gigId,
    lane: 1,
    packageHash: packageHash(gigPackage),
  });
  log(`The client disputed at lane 1, posting a ${formatEther(gigOpened.bond)} ETH bond (case ${gigCaseId.slice(0, 18)}…).`);
  const before1 = {
    client: await ethOf(client.account.address),
    provider: await ethOf(providerWallet.account.address),
    providerSlaBond: await slaBondOf(providerWallet.account.address),
    clientLgas: await lgasOf(client.account.address),
    burnEth: await ethOf(BURN),
    burnLgas: await lgasOf(BURN),
  };
  const gigResult = await arbitrateAndEnforce(gigCaseId, gigPackage);
  const after1 = {
    client: await ethOf(client.account.address),
    provider: await ethOf(providerWallet.account.address),
    providerSlaBond: await slaBondOf(providerWallet.account.address),
    clientLgas: await lgasOf(client.account.address),
    burnEth: await ethOf(BURN),
    burnLgas: await lgasOf(BURN),
  };
  const tests = gigResult.run.resolution.objectiveChecks.find((check) => check.name === "passes_tests");
  log(`Lane 0 ${gigResult.run.resolution.lane0.passed ? "passed" : "failed"}; Lane 1 replayed the suite: ${tests?.detail ?? "no replay"}.`);
  log(`${gigResult.identicalRuns} arbitrators reached the same resolution ${gigResult.run.resolutionHash.slice(0, 18)}… and signed it: ${gigResult.run.resolution.aggregate.finalVerdict}, refund ${formatEther(gigResult.run.message.refund)} ETH, slash ${formatEther(gigResult.run.message.slash)} LGAS (gas ${gigResult.resolved.gasUsed}).`);
  reports.push({
    subject: "gig",
    caseId: gigCaseId,
    lane: 1,
    verdict: gigResult.run.resolution.aggregate.finalVerdict,
    resolutionHash: gigResult.run.resolutionHash,
    identicalRuns: gigResult.identicalRuns,
    bondPosted: gigOpened.bond.toString(),
    refund: gigResult.resolved.refunded.toString(),
    slash: gigResult.resolved.slashed.toString(),
    balanceChanges: {
      clientEth: (after1.client - before1.client).toString(),
      providerEth: (after1.provider - before1.provider).toString(),
      providerSlaBondLgas: (after1.providerSlaBond - before1.providerSlaBond).toString(),
      clientLgas: (after1.clientLgas - before1.clientLgas).toString(),
      burnEth: (after1.burnEth - before1.burnEth).toString(),
      burnLgas: (after1.burnLgas - before1.burnLgas).toString(),
    },
    gas: { open: Number(gigOpened.gasUsed), resolve: Number(gigResult.resolved.gasUsed) },
  });

  // --- Case 2: a session receipt signed under the wrong policy, proven against the committed root. ---
  const payer = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: 2 });
  const provider = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: 3 });
  const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: parseEther("0.001") };
  const policyHash = keccak256(stringToBytes("policy: demo echo worker, no network"));
  const terms = {
    payer: payer.address,
    provider: provider.address,
    funder: getAddress(client.account.address),
    asset: zeroAddress,
    termsHash: termsHashOf(pricing),
    policyHash,
    challengeDuration: 3600n,
    nonce: 3n,
  };
  const opened = await openChannel({ wallet: client, publicClient, escrow: addresses.gasEscrow, terms, amount: parseEther("0.01") });
  const domain = gasEscrowDomain({ chainId: deployment.chainId, verifyingContract: addresses.gasEscrow });
  const sessionId = sessionIdOf(domain, opened.ref);
  // A provider build with a stale policy signs receipt 2 under another policy hash.
  const tree = new ReceiptAccumulator();
  const steps: { ticket: SignedPaymentTicket; receipt: SignedSessionReceipt; index: number }[] = [];
  let prev: Hex = zeroHash;
  for (let seq = 1n; seq <= 4n; seq++) {
    const ticket = await signPaymentTicket({
      account: payer,
      domain,
      ticket: { sessionId, provider: provider.address, termsHash: terms.termsHash, seq, cumulativeAmount: pricing.pricePerInvocation * seq, receiptRoot: tree.root() },
    });
    const receipt: SessionReceipt = {
      sessionId,
      seq,
      offloadPacketHash: keccak256(stringToBytes(`request ${seq}`)),
      outputHash: keccak256(stringToBytes(`output ${seq}`)),
      policyHash: seq === 2n ? keccak256(stringToBytes("policy: stale build, network allowed")) : policyHash,
      modelSnapshotId: "model:echo@1",
      metering: { units: 1n, amount: pricing.pricePerInvocation },
      prevReceiptHash: prev,
    };
    const signed = await signSessionReceipt({ account: provider, receipt });
    prev = sessionReceiptHash(receipt);
    steps.push({ ticket, receipt: signed, index: tree.append(receiptLeaf(receipt, ticket.ticket)) });
  }
  const closed = await closeUnilateral({ wallet: providerWallet, publicClient, escrow: addresses.gasEscrow, ref: opened.ref, ticket: steps[3]!.ticket });
  log(`Session ${sessionId.slice(0, 18)}…: after 4 invocations the provider closed with ticket 4, committing the root over receipts 1..3 on-chain.`);
  const sessionCaseId = await publicClient.readContract({
    address: addresses.disputeManager,
    abi: disputeManagerAbi,
    functionName: "nextCaseId",
    args: [2, sessionId],
  });
  const committed = 3;
  const receipts = steps.slice(0, committed).map((s) => ({ receipt: s.receipt, ticket: s.ticket, leafIndex: BigInt(s.index), merkleProof: tree.proof(s.index, committed) }));
  const sessionPackage = buildSessionPackage({
    caseId: sessionCaseId,
    chainId,
    disputeManager: addresses.disputeManager,
    challenger: payer.address,
    lane: 0,
    gasEscrow: addresses.gasEscrow,
    sessionId,
    ref: opened.ref,
    pricing,
    closing: closed.state,
    seq: 2n,
    receipts,
    description: "Receipt 2 was produced under a policy other than the session's.",
  });
  const challenged = steps[1]!;
  const sessionOpened = await openSessionCase({
    wallet: payerWallet,
    publicClient,
    disputeManager: addresses.disputeManager,
    lane: 0,
    packageHash: packageHash(sessionPackage),
    ref: opened.ref,
    recorded: closed.state,
    receiptHash: sessionReceiptHash(challenged.receipt.receipt),
    ticketHash: paymentTicketHash(challenged.ticket.ticket),
    proof: tree.proof(challenged.index, committed),
  });
  log(`The payer disputed receipt 2 at lane 0; the contract checked its ${tree.proof(challenged.index, committed).length}-hash Merkle proof against the committed root and froze finalisation.`);
  const before2 = { payer: await ethOf(payer.address), funder: await ethOf(client.account.address), provider: await ethOf(provider.address) };
  const sessionResult = await arbitrateAndEnforce(sessionCaseId, sessionPackage);
  log(`Lane 0: ${sessionResult.run.resolution.lane0.checks.filter((check) => check.status !== "pass").map((check) => check.name).join(", ") || "no violation"} → ${sessionResult.run.resolution.aggregate.finalVerdict}, refund ${formatEther(sessionResult.run.message.refund)} ETH.`);
  // The resolution ended the window; finalise now with the reduced amount.
  const recorded = { ...closed.state, amount: closed.state.amount - sessionResult.resolved.refunded };
  const finalized = await finalizeClose({ wallet: watcher, publicClient, escrow: addresses.gasEscrow, ref: opened.ref, recorded });
  const after2 = { payer: await ethOf(payer.address), funder: await ethOf(client.account.address), provider: await ethOf(provider.address) };
  log(`Finalised at once: ${formatEther(finalized.paidToProvider)} ETH to the provider, ${formatEther(finalized.refundedToFunder)} ETH to the funder (receipt 2's price included).`);
  reports.push({
    subject: "session",
    caseId: sessionCaseId,
    lane: 0,
    verdict: sessionResult.run.resolution.aggregate.finalVerdict,
    resolutionHash: sessionResult.run.resolutionHash,
    identicalRuns: sessionResult.identicalRuns,
    bondPosted: sessionOpened.bond.toString(),
    refund: sessionResult.resolved.refunded.toString(),
    slash: sessionResult.resolved.slashed.toString(),
    balanceChanges: {
      payerEth: (after2.payer - before2.payer).toString(),
      funderEth: (after2.funder - before2.funder).toString(),
      providerEth: (after2.provider - before2.provider).toString(),
    },
    gas: { open: Number(sessionOpened.gasUsed), resolve: Number(sessionResult.resolved.gasUsed) },
  });
  return reports;
}

const mintAbi = [
  { type: "function", name: "mint", stateMutability: "nonpayable", inputs: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }], outputs: [] },
] as const;
