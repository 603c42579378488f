/**
 * Arbitration wall time for `npm run bench`: Lane 0 + Lane 1 on a gig case whose deliverable was produced
 * in a 1,000-receipt session (two of its receipts, with their proofs against the gig's receipt root, are
 * evidence), excluding the time the test suite itself runs; and Lane 0 alone on a session case challenging
 * receipt 500 of a 1,000-receipt session.
 */
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { erc20Abi, getAddress, keccak256, parseEther, stringToBytes, zeroAddress, zeroHash, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { bundleHash } from "../arbitration/documents/bundle";
import { buildGigPackage, buildSessionPackage } from "../arbitration/runner/build";
import { disputeManagerAbi, gigEscrowAbi, loadCaseContext, openGigCase, openSessionCase, providerRegistryAbi, type Deployment as Addresses } from "../arbitration/runner/chain";
import { icsHash } from "../arbitration/documents/ics";
import { makeEvidence, packageHash } from "../arbitration/documents/package";
import { arbitrate } from "../arbitration/runner/runner";
import { stepBudgetOf } from "../arbitration/documents/ics";
import { DEFAULT_INPUTS } from "../arbitration/lanes/pinned";
import { DEFAULT_MEMORY_BYTES, replay, type ReplayOutcome } from "../arbitration/lanes/replay";
import type { Bundle } from "../arbitration/documents/bundle";
import { ReceiptAccumulator } from "../channel-client/core/accumulator";
import { gasEscrowDomain } from "../channel-client/core/eip712";
import { closeUnilateral, openChannel, type Wallet } from "../channel-client/chain/escrow";
import { receiptLeaf } from "../channel-client/core/leaf";
import { sessionReceiptHash, signSessionReceipt, type SignedSessionReceipt } from "../channel-client/core/receipt";
import { NATIVE_ASSET, sessionIdOf, termsHashOf, type PricingTerms } from "../channel-client/core/terms";
import { paymentTicketHash, signPaymentTicket, type SignedPaymentTicket } from "../channel-client/core/ticket";
import { deployAll } from "./deploy";
import { quantiles } from "./quantiles";
import { codeGigIcs, FAILING_DELIVERABLE, PASSING_DELIVERABLE, SUITE } from "./examples/code-gig";

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

/*//////////////////////////////////////////////////////////////
                     LANE 1 REPLAYS IN THE ENGINE
//////////////////////////////////////////////////////////////*/

export type ReplayBench = {
  /** One replay of the Appendix A.4 suite (12 tests) against the failing deliverable, median of `runs`, ms. */
  a4SuiteMs: number;
  a4Tests: number;
  /** Interpreter steps (suite + deliverable) of that replay: identical on every machine. */
  a4Steps: number;
  /** One replay of a generated 1,000-test suite against the passing A.4 deliverable, median of `runs`, ms. */
  suite1000Ms: number;
  suite1000Tests: number;
  suite1000Steps: number;
  /** Engine speed: steps per second of a deliverable that only computes (one long test), median of `runs`. */
  engineStepsPerSecond: number;
  /** Steps that computing test used (its budget is far above it). */
  engineSteps: number;
  /** The same measure in the engine's own terms: iterations of a simple loop per second. */
  engineLoopIterationsPerSecond: number;
  runs: number;
};

/** A suite of `tests` tests over the A.4 module: the 12 cases again and again, each test named uniquely. */
export function generatedSuite(tests: number): Bundle {
  return {
    files: {
      "run.js": [
        '"use strict";',
        'const { test, call, equal } = require("ioi:harness");',
        'const { cases } = require("./cases.js");',
        `for (let i = 0; i < ${tests}; i++) {`,
        "  const [name, fn, args, expected] = cases[i % cases.length];",
        '  test(`${name}_${i}`, () => equal(call(fn, args, { module: "strings.js" }), expected));',
        "}",
        "",
      ].join("\n"),
      "cases.js": SUITE.files["cases.js"]!,
    },
  };
}

/** Loop iterations of the computing test. */
const SPIN_ITERATIONS = 10_000_000;
const SPIN_SUITE: Bundle = {
  files: { "run.js": `const { test, call, equal } = require("ioi:harness");\ntest("spin", () => equal(call("spin", [${SPIN_ITERATIONS}], { module: "spin.js" }), ${SPIN_ITERATIONS}));\n` },
};
const SPIN_DELIVERABLE: Bundle = { files: { "spin.js": "exports.spin = (n) => { let x = 0; for (let i = 0; i < n; i++) x++; return x; };\n" } };

async function timedReplay(suite: Bundle, deliverable: Bundle, stepsPerTest: number, runs: number): Promise<{ ms: number; outcome: ReplayOutcome }> {
  const times: number[] = [];
  let outcome: ReplayOutcome | undefined;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    outcome = await replay({
      suite,
      deliverable,
      runner: { command: ["node", "run.js"], timeoutMs: 600_000, maxOutputBytes: 1 << 20 },
      budgets: { stepsPerTest, memoryBytes: DEFAULT_MEMORY_BYTES, outputBytes: 1 << 20 },
      inputs: { suite: DEFAULT_INPUTS, deliverable: DEFAULT_INPUTS },
      actor: "bench",
      intent: "bench",
    });
    times.push(performance.now() - started);
  }
  return { ms: quantiles(times, 0.5)[0]!, outcome: outcome! };
}

/** Replay time of the A.4 suite and of a 1,000-test suite, and the engine's steps per second (after one warm-up replay). */
export async function benchReplays(runs = 5): Promise<ReplayBench> {
  const budget = stepBudgetOf({ id: "passes_tests", kind: "test_suite" });
  await timedReplay(SUITE, FAILING_DELIVERABLE, budget, 1); // compiles the engine's wasm once for the process
  const a4 = await timedReplay(SUITE, FAILING_DELIVERABLE, budget, runs);
  if (a4.outcome.record.result.failed_tests.length !== 3) throw new Error("the A.4 replay did not fail 3 of 12 tests");
  const big = await timedReplay(generatedSuite(1_000), PASSING_DELIVERABLE, budget, Math.max(1, Math.ceil(runs / 2)));
  if (big.outcome.record.result.tests !== 1_000 || big.outcome.record.result.failed_tests.length !== 0) throw new Error("the 1,000-test replay did not pass 1,000 tests");
  const spin = await timedReplay(SPIN_SUITE, SPIN_DELIVERABLE, 1_000_000, runs);
  if (spin.outcome.record.result.failed_tests.length !== 0) throw new Error("the computing replay failed");
  const stepsOf = (o: ReplayOutcome) => o.steps.suite + o.steps.deliverable;
  return {
    a4SuiteMs: round(a4.ms),
    a4Tests: a4.outcome.record.result.tests,
    a4Steps: stepsOf(a4.outcome),
    suite1000Ms: round(big.ms),
    suite1000Tests: big.outcome.record.result.tests,
    suite1000Steps: stepsOf(big.outcome),
    engineStepsPerSecond: Math.round(stepsOf(spin.outcome) / (spin.ms / 1000)),
    engineSteps: stepsOf(spin.outcome),
    engineLoopIterationsPerSecond: Math.round(SPIN_ITERATIONS / (spin.ms / 1000)),
    runs,
  };
}
