/**
 * The dispute half of the demo, on the same embedded devnet:
 *
 * 1. the whitepaper's Appendix A.4 example — a client funds a gig for code that must pass a hash-anchored
 *    test suite; the provider delivers code failing 3 of 12 tests; the client disputes; the respond window
 *    passes and a panel of five is drawn by stake from the 16 arbitrators governance admitted through the
 *    timelock; each panel member runs Lane 0 + Lane 1 (the suite replayed in a sandboxed child process)
 *    independently, their resolutions must be byte-identical before anyone signs, and a supermajority's
 *    signatures are submitted as one verdict; after the appeal window the verdict is finalised: partial
 *    refund per the ICS penalty schedule, the provider's SLA bond slashed (burn share burnt), and the coherent
 *    signers claim their fees;
 * 2. a session dispute — a provider signed a receipt under a policy other than the session's; the payer
 *    proves that receipt against the root the provider committed on-chain, Lane 0 finds the violation, and
 *    the receipt's price comes off the provider's payout.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

import type { HardhatRuntimeEnvironment } from "hardhat/types";
import {
  erc20Abi,
  formatEther,
  formatUnits,
  getAddress,
  keccak256,
  parseEther,
  parseEventLogs,
  stringToBytes,
  zeroAddress,
  zeroHash,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { bundleHash } from "../arbitration/documents/bundle";
import { buildGigPackage, buildSessionPackage, buildStreamPackage } from "../arbitration/runner/build";
import { claimsOf, streamInputs } from "../arbitration/lanes/stream-sample";
import { progressProofHash, sampledIndices } from "../channel-client/core/progress-proof";
import { FlowController, writeStreamRecord } from "../channel-client/node/flow-controller";
import { InProcessStreamProvider, type TrancheWork } from "../channel-client/node/stream-provider";
import { codeStreamTerms, REPOSITORY_BY_TRANCHE, STREAM_MODEL } from "./examples/code-stream";
import {
  blocksUntilReady,
  claimFees,
  disputeManagerAbi,
  drawPanel,
  finalizeCase,
  gigEscrowAbi,
  loadCaseContext,
  openGigCase,
  openSessionCase,
  providerRegistryAbi,
  submitVerdict,
  type Deployment as DisputeDeployment,
} from "../arbitration/runner/chain";
import { dataUri, INLINE_EVIDENCE_LIMIT, serveEvidence } from "../arbitration/documents/evidence";
import { icsHash } from "../arbitration/documents/ics";
import { packageHash, packageToJson, parsePackage, type ChallengePackage } from "../arbitration/documents/package";
import { disputeManagerDomain, FINAL_VERDICTS, resolutionToJson, signResolution, VERDICT_CODES } from "../arbitration/lanes/resolution";
import { checkedWrite } from "../channel-client/chain/write";
import { arbitrate, judgeRuntimeHash, type ArbitrationRun } from "../arbitration/runner/runner";
import { ReceiptAccumulator } from "../channel-client/core/accumulator";
import { canon } from "../channel-client/core/canonical";
import { gasEscrowDomain } from "../channel-client/core/eip712";
import { anchorReceiptCommit, closeUnilateral, finalizeClose, openChannel, type Wallet } from "../channel-client/chain/escrow";
import { receiptLeaf } from "../channel-client/core/leaf";
import { sessionReceiptHash, signSessionReceipt, type SessionReceipt, type SignedSessionReceipt } from "../channel-client/core/receipt";
import { sessionIdOf, termsHashOf, type PricingTerms } from "../channel-client/core/terms";
import { paymentTicketHash, signPaymentTicket, type SignedPaymentTicket } from "../channel-client/core/ticket";
import { admitDevnetArbitrators, DEVNET_ARBITRATOR_STAKE, DEVNET_ARBITRATORS } from "./arbitrators";
import type { Deployment } from "./deploy";
import { codeGigIcs, FAILING_DELIVERABLE, SUITE } from "./examples/code-gig";

const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";
const BURN: Address = "0x000000000000000000000000000000000000dEaD";
/** At least this many panel members run each case independently and must reach byte-identical resolutions. */
const INDEPENDENT_RUNS = 3;

/** One case as the demo's JSON line reports it. Balance changes are in base units, signed decimal strings. */
export type CaseReport = {
  subject: "gig" | "session";
  caseId: Hex;
  lane: number;
  verdict: string;
  resolutionHash: Hex;
  identicalRuns: number;
  /** The drawn panel, ascending by address. */
  panel: Address[];
  /** The panel members whose signatures decided the case. */
  signers: Address[];
  /** When the appeal window closed (ISO time); the demo advances the devnet's clock past it. */
  appealWindowEnds: string;
  bondPosted: string;
  refund: string;
  slash: string;
  balanceChanges: Record<string, string>;
  /** Fee each coherent signer claimed, in the case's asset's base units. */
  arbitratorFees: Record<string, string>;
  gas: { open: number; drawRequest: number; draw: number; submitVerdict: number; finalize: number; claim: number };
};

type DemoParameters = {
  hre: HardhatRuntimeEnvironment;
  deployment: Deployment;
  publicClient: PublicClient;
  wallets: Wallet[];
  log: (line: string) => void;
  /** Write each case's challenge package and resolution here (`case-<id>.package.json`, `…resolution.json`), as `ioi ui --records` reads them. */
  recordsDir?: string;
  /**
   * Fund the demo gig at the fixed time 2,000,000,000 (the default: the same resolution hash on every run). A
   * caller on a chain whose clock is already past it (a long test run) passes false and funds it now.
   */
  fixedGigTime?: boolean;
  /**
   * Resolve the cases with three `ioi arbitrator serve` processes on this RPC (the embedded devnet served over
   * HTTP), each serving a third of the admitted arbitrators' keys, and no `arbitrate` call here: the demo only
   * opens the cases, publishes where the packages are, and moves the devnet clock. Without it (tests that need
   * the in-process path's resolution documents), every panel member is run here, in this process.
   */
  daemons?: ArbitratorDaemons;
};

/** What the demo reports of a case's resolution, whoever reached it. */
type Outcome = {
  resolutionHash: Hex;
  verdict: string;
  refund: bigint;
  /** The resolution document, when the case was run in this process (not by daemons). */
  resolution?: ArbitrationRun["resolution"];
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
  const admitted = await admitDevnetArbitrators({ publicClient, wallets, deployment });
  log(
    `Registered the provider (SLA bond ${formatEther(providerBond)} LGAS); ${admitted.length} arbitrators pinned to judge runtime ${runtime.slice(0, 18)}… staked ${formatEther(DEVNET_ARBITRATOR_STAKE)} LGAS each (minimum ${formatEther(minStake)}) and were admitted by governance through the timelock (scheduled, ${deployment.timelockDelay} s waited on the devnet clock, executed).`,
  );
  const daemons = p.daemons;
  if (daemons) {
    const served = new Set(daemons.arbitrators.map((a) => getAddress(a)));
    const unserved = admitted.filter((a) => !served.has(getAddress(a)));
    if (unserved.length > 0) throw new Error(`The arbitrator daemons do not serve the admitted ${unserved.join(", ")}: a panel could miss its supermajority.`);
  }
  const keyByAddress = new Map<string, LocalAccount>(
    Array.from({ length: 40 }, (_, i) => mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: i })).map((a) => [getAddress(a.address), a]),
  );
  const rpc = (method: string, params: unknown[]) => p.hre.network.provider.send(method, params);
  const advancePast = async (deadline: bigint) => {
    const now = (await publicClient.getBlock()).timestamp;
    if (deadline >= now) await rpc("evm_increaseTime", [Number(deadline - now + 1n)]);
    await rpc("evm_mine", []);
  };

  const ethOf = (who: Address) => publicClient.getBalance({ address: who });
  const slaBondOf = async (who: Address) => {
    const b = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondOf", args: [0, who] });
    return b.active + b.pending;
  };
  const lgasOf = (who: Address) => publicClient.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [who] });

  /**
   * After the respond window: draws the panel (request, a mined block, draw); every panel member runs the case
   * independently from the package bytes and the chain — at least three, and all must agree byte for byte
   * before anyone signs; a supermajority's signatures go in as one verdict; the appeal window passes (the
   * devnet's clock advanced); anyone finalises; the coherent signers claim their fees.
   */
  async function arbitrateAndEnforce(caseId: Hex, pkg: ChallengePackage, challenger: Wallet) {
    const opened = await publicClient.readContract({ address: addresses.disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] });
    if (daemons) return resolvedByDaemons(caseId, pkg, challenger, opened);
    await advancePast(BigInt(opened.respondBy));
    const requested = await drawPanel({ wallet: watcher, publicClient, disputeManager: addresses.disputeManager, caseId });
    if (requested.outcome !== "requested") throw new Error(`Case ${caseId}: the first draw call did not request randomness.`);
    const wait = await blocksUntilReady(publicClient, requested.ticket);
    if (wait > 0n) await rpc("hardhat_mine", [`0x${wait.toString(16)}`]);
    const drawn = await drawPanel({ wallet: watcher, publicClient, disputeManager: addresses.disputeManager, caseId });
    if (drawn.outcome !== "drawn") throw new Error(`Case ${caseId}: no panel was drawn (${drawn.outcome}).`);
    const panel = drawn.panel;
    const members = panel.map((a) => {
      const key = keyByAddress.get(a);
      if (!key) throw new Error(`Panel member ${a} is not a devnet account.`);
      return key;
    });
    log(`Drew a panel of ${panel.length} from block ${requested.ticket}'s hash, weighted by stake: ${panel.map((a) => a.slice(0, 10)).join(", ")}.`);
    const runs: ArbitrationRun[] = [];
    for (const [i, member] of members.entries()) {
      const received = parsePackage(canon(packageToJson(pkg)));
      const ctx = await loadCaseContext(publicClient, addresses, caseId, received);
      runs.push(await arbitrate({ pkg: received, ctx, actor: `panel-${i + 1}:${member.address}` }));
    }
    const hashes = new Set(runs.map((r) => r.resolutionHash));
    if (runs.length < INDEPENDENT_RUNS || hashes.size !== 1) throw new Error(`The panel disagrees: ${[...hashes].join(", ")}.`);
    const run = runs[0]!;
    if (p.recordsDir) {
      mkdirSync(p.recordsDir, { recursive: true });
      writeFileSync(path.join(p.recordsDir, `case-${caseId.slice(2, 14)}.package.json`), canon(packageToJson(pkg)));
      writeFileSync(path.join(p.recordsDir, `case-${caseId.slice(2, 14)}.resolution.json`), canon(resolutionToJson(run.resolution)));
    }
    const domain = disputeManagerDomain(chainId, addresses.disputeManager);
    const needed = Math.floor((2 * panel.length + 2) / 3);
    const signing = members.slice(0, needed);
    const signatures = await Promise.all(signing.map(async (a) => ({ signer: getAddress(a.address), signature: await signResolution(a, domain, run.message) })));
    const decided = await submitVerdict({ wallet: watcher, publicClient, deployment: addresses, message: run.message, signatures });
    if (decided.outcome !== "decided") throw new Error(`Case ${caseId} went to the slow path instead of being decided.`);
    await advancePast(decided.deadline);
    const finalized = await finalizeCase({ wallet: watcher, publicClient, deployment: addresses, caseId });
    const fees: Record<string, string> = {};
    let claimGas = 0n;
    for (const fee of finalized.fees) {
      const wallet = wallets.find((w) => getAddress(w.account.address) === fee.arbitrator)!;
      const claimed = await claimFees({ wallet, publicClient, disputeManager: addresses.disputeManager, asset: opened.asset });
      fees[fee.arbitrator] = claimed.amount.toString();
      claimGas = claimed.gasUsed;
    }
    const outcome: Outcome = { resolutionHash: run.resolutionHash, verdict: run.resolution.aggregate.finalVerdict, refund: run.message.refund, resolution: run.resolution };
    return {
      run: outcome,
      panel,
      signers: signatures.map((s) => s.signer),
      decided,
      finalized,
      fees,
      identicalRuns: runs.length,
      gas: { drawRequest: Number(requested.gasUsed), draw: Number(drawn.gasUsed), submitVerdict: Number(decided.gasUsed), finalize: Number(finalized.gasUsed), claim: Number(claimGas) },
    };
  }

  /**
   * The daemons' path: the challenger publishes where its package is (inline in calldata when small, else on its
   * evidence host), the respond window passes on the devnet clock, and blocks keep coming (interval mining, like
   * a chain) while the daemons draw, replay, sign, post and submit; after the appeal window they finalise and
   * claim. Everything reported is read back from the chain's events.
   */
  async function resolvedByDaemons(caseId: Hex, pkg: ChallengePackage, challenger: Wallet, opened: { respondBy: number | bigint; asset: Address }) {
    const bytes = new TextEncoder().encode(canon(packageToJson(pkg)));
    let uri: string;
    if (bytes.length <= INLINE_EVIDENCE_LIMIT) uri = dataUri(bytes);
    else {
      writeFileSync(path.join(daemons!.evidenceDir, `case-${caseId.slice(2, 14)}.json`), bytes);
      uri = daemons!.evidenceUrl;
    }
    await checkedWrite({ publicClient, wallet: challenger, address: addresses.disputeManager, abi: disputeManagerAbi, functionName: "publishEvidence", args: [caseId, uri], what: "DisputeManager.publishEvidence" });
    log(`The challenger published where its package is (${uri.startsWith("data:") ? `inline, ${bytes.length} bytes in calldata` : uri}); the arbitrator daemons take it from here.`);
    await daemons!.ready;
    await advancePast(BigInt(opened.respondBy));
    const caseNow = () => publicClient.readContract({ address: addresses.disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] });
    const until = async (what: string, done: () => Promise<boolean>) => {
      const deadline = Date.now() + 120_000;
      while (!(await done())) {
        if (Date.now() > deadline) throw new Error(`The arbitrator daemons did not get ${what} within 120 s:\n${daemons!.tail()}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    await rpc("evm_setIntervalMining", [250]);
    try {
      await until("to a verdict", async () => (await caseNow()).status === 3);
      const decidedCase = await caseNow();
      const panel = (await publicClient.readContract({ address: addresses.disputeManager, abi: disputeManagerAbi, functionName: "panelOf", args: [caseId, 0] })).map((a) => getAddress(a));
      log(`The daemons drew a panel of ${panel.length} (weighted by stake): ${panel.map((a) => a.slice(0, 10)).join(", ")}; each member's daemon fetched the package by hash, replayed it and posted its signature.`);
      await advancePast(BigInt(decidedCase.deadline));
      await until("the case finalised and every fee claimed", async () => {
        if ((await caseNow()).status !== 5) return false;
        for (const a of panel) {
          if ((await publicClient.readContract({ address: addresses.disputeManager, abi: disputeManagerAbi, functionName: "claimable", args: [opened.asset, a] })) !== 0n) return false;
        }
        return true;
      });
    } finally {
      await rpc("evm_setIntervalMining", [0]);
    }
    const logs = await publicClient.getLogs({ address: addresses.disputeManager, fromBlock: 0n });
    const events = parseEventLogs({ abi: disputeManagerAbi, logs }).filter((e) => (e.args as { caseId?: Hex }).caseId === caseId);
    const find = <N extends string>(name: N) => events.filter((e) => e.eventName === name);
    const panel = (await publicClient.readContract({ address: addresses.disputeManager, abi: disputeManagerAbi, functionName: "panelOf", args: [caseId, 0] })).map((a) => getAddress(a));
    const verdictEvent = find("VerdictSubmitted")[0]! as unknown as { args: { verdict: number; refund: bigint; resolutionHash: Hex; signedMask: number; appealEndsAt: number }; transactionHash: Hex };
    const resolved = find("CaseResolved")[0]! as unknown as { args: { refunded: bigint; slashed: bigint }; transactionHash: Hex };
    const posted = find("SignaturesPosted") as unknown as { args: { resolution: { resolutionHash: Hex } } }[];
    const drawn = find("PanelDrawn") as unknown as { transactionHash: Hex }[];
    const feeEvents = find("ArbitrationFeeEarned") as unknown as { args: { arbitrator: Address; amount: bigint } }[];
    const claims = parseEventLogs({ abi: disputeManagerAbi, logs, eventName: "Claimed" });
    const gasOf = async (hash: Hex | undefined) => (hash ? Number((await publicClient.getTransactionReceipt({ hash })).gasUsed) : 0);
    const requests = find("PanelRequested") as unknown as { transactionHash: Hex }[];
    const signers = panel.filter((_, i) => (verdictEvent.args.signedMask >> i) & 1);
    const fees: Record<string, string> = {};
    for (const f of feeEvents) fees[getAddress(f.args.arbitrator)] = f.args.amount.toString();
    const identical = posted.filter((e) => e.args.resolution.resolutionHash === verdictEvent.args.resolutionHash).length;
    const verdictName = VERDICT_NAMES[verdictEvent.args.verdict] ?? String(verdictEvent.args.verdict);
    const run: Outcome = { resolutionHash: verdictEvent.args.resolutionHash, verdict: verdictName, refund: verdictEvent.args.refund };
    return {
      run,
      panel,
      signers,
      decided: { gasUsed: BigInt(await gasOf(verdictEvent.transactionHash)), deadline: BigInt(verdictEvent.args.appealEndsAt) },
      finalized: { refunded: resolved.args.refunded, slashed: resolved.args.slashed, gasUsed: BigInt(await gasOf(resolved.transactionHash)) },
      fees,
      identicalRuns: identical,
      gas: {
        drawRequest: await gasOf(requests[0]?.transactionHash ?? undefined),
        draw: await gasOf(drawn[0]?.transactionHash),
        submitVerdict: await gasOf(verdictEvent.transactionHash),
        finalize: await gasOf(resolved.transactionHash),
        claim: await gasOf(claims.at(-1)?.transactionHash),
      },
    };
  }

  /** The panel's run, the verdict, the appeal window and the fees, as log lines. */
  function logOutcome(r: Awaited<ReturnType<typeof arbitrateAndEnforce>>, unit: string) {
    const feeTotal = Object.values(r.fees).reduce((sum, fee) => sum + BigInt(fee), 0n);
    log(
      daemons
        ? `${r.identicalRuns} panel members' daemons posted signatures over the same resolution ${r.run.resolutionHash.slice(0, 18)}…; a daemon submitted ${r.signers.length} of ${r.panel.length} as one verdict: ${r.run.verdict} (gas ${r.decided.gasUsed}).`
        : `All ${r.identicalRuns} panel members reached the same resolution ${r.run.resolutionHash.slice(0, 18)}…; ${r.signers.length} of ${r.panel.length} (the supermajority) signed it and one submitVerdict recorded ${r.run.verdict} (gas ${r.decided.gasUsed}).`,
    );
    log(
      `The appeal window closed at ${new Date(Number(r.decided.deadline) * 1000).toISOString()} without an appeal (devnet clock advanced); finalised${daemons ? " by a daemon" : ""}: refund ${formatEther(r.finalized.refunded)} ${unit}, slash ${formatEther(r.finalized.slashed)} LGAS (gas ${r.finalized.gasUsed}); ${Object.keys(r.fees).length} coherent signers claimed ${formatUnits(feeTotal, 18)} ${unit} in fees.`,
    );
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
  const fundedAt = p.fixedGigTime === false ? latest.timestamp + 1n : DEMO_GIG_FUNDED_AT;
  if (p.fixedGigTime !== false) {
    if (latest.timestamp >= DEMO_GIG_FUNDED_AT) {
      throw new Error(`The chain's time ${latest.timestamp} is past the demo gig's fixed funding time ${DEMO_GIG_FUNDED_AT}; raise DEMO_GIG_FUNDED_AT.`);
    }
    await p.hre.network.provider.send("evm_setNextBlockTimestamp", [Number(DEMO_GIG_FUNDED_AT)]);
  }
  const funded = await write(client, {
    address: c.GigEscrow.address,
    abi: gigEscrowAbi,
    functionName: "fund",
    args: [providerWallet.account.address, zeroAddress, bounty, icsHash(ics), Number(fundedAt + 86_400n), 3600],
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
  const gigResult = await arbitrateAndEnforce(gigCaseId, gigPackage, client);
  const after1 = {
    client: await ethOf(client.account.address),
    provider: await ethOf(providerWallet.account.address),
    providerSlaBond: await slaBondOf(providerWallet.account.address),
    clientLgas: await lgasOf(client.account.address),
    burnEth: await ethOf(BURN),
    burnLgas: await lgasOf(BURN),
  };
  if (gigResult.run.resolution) {
    const tests = gigResult.run.resolution.objectiveChecks.find((check) => check.name === "passes_tests");
    log(`Lane 0 ${gigResult.run.resolution.lane0.passed ? "passed" : "failed"}; Lane 1 replayed the suite: ${tests?.detail ?? "no replay"}.`);
  }
  logOutcome(gigResult, "ETH");
  reports.push({
    subject: "gig",
    caseId: gigCaseId,
    lane: 1,
    verdict: gigResult.run.verdict,
    resolutionHash: gigResult.run.resolutionHash,
    identicalRuns: gigResult.identicalRuns,
    panel: gigResult.panel,
    signers: gigResult.signers,
    appealWindowEnds: new Date(Number(gigResult.decided.deadline) * 1000).toISOString(),
    bondPosted: gigOpened.bond.toString(),
    refund: gigResult.finalized.refunded.toString(),
    slash: gigResult.finalized.slashed.toString(),
    balanceChanges: {
      clientEth: (after1.client - before1.client).toString(),
      providerEth: (after1.provider - before1.provider).toString(),
      providerSlaBondLgas: (after1.providerSlaBond - before1.providerSlaBond).toString(),
      clientLgas: (after1.clientLgas - before1.clientLgas).toString(),
      burnEth: (after1.burnEth - before1.burnEth).toString(),
      burnLgas: (after1.burnLgas - before1.burnLgas).toString(),
    },
    arbitratorFees: gigResult.fees,
    gas: { open: Number(gigOpened.gasUsed), ...gigResult.gas },
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
  const sessionResult = await arbitrateAndEnforce(sessionCaseId, sessionPackage, payerWallet);
  const lane0 = sessionResult.run.resolution?.lane0.checks.filter((check) => check.status !== "pass").map((check) => check.name).join(", ");
  log(`Lane 0: ${lane0 === undefined ? "(run by the daemons)" : lane0 || "no violation"} → ${sessionResult.run.verdict}, refund ${formatEther(sessionResult.run.refund)} ETH.`);
  // The resolution ended the window; finalise now with the reduced amount.
  logOutcome(sessionResult, "ETH");
  const recorded = { ...closed.state, amount: closed.state.amount - sessionResult.finalized.refunded };
  const finalized = await finalizeClose({ wallet: watcher, publicClient, escrow: addresses.gasEscrow, ref: opened.ref, recorded });
  const after2 = { payer: await ethOf(payer.address), funder: await ethOf(client.account.address), provider: await ethOf(provider.address) };
  log(`Finalised at once: ${formatEther(finalized.paidToProvider)} ETH to the provider, ${formatEther(finalized.refundedToFunder)} ETH to the funder (receipt 2's price included).`);
  reports.push({
    subject: "session",
    caseId: sessionCaseId,
    lane: 0,
    verdict: sessionResult.run.verdict,
    resolutionHash: sessionResult.run.resolutionHash,
    identicalRuns: sessionResult.identicalRuns,
    panel: sessionResult.panel,
    signers: sessionResult.signers,
    appealWindowEnds: new Date(Number(sessionResult.decided.deadline) * 1000).toISOString(),
    bondPosted: sessionOpened.bond.toString(),
    refund: sessionResult.finalized.refunded.toString(),
    slash: sessionResult.finalized.slashed.toString(),
    balanceChanges: {
      payerEth: (after2.payer - before2.payer).toString(),
      funderEth: (after2.funder - before2.funder).toString(),
      providerEth: (after2.provider - before2.provider).toString(),
    },
    arbitratorFees: sessionResult.fees,
    gas: { open: Number(sessionOpened.gasUsed), ...sessionResult.gas },
  });
  reports.push(await streamedCase());
  return reports;

  /**
   * Case 3 (issue 32, decision 0037): a streamed coding job on v4 terms, 0.001 ETH per tranche. The payer's Flow
   * Controller releases tranche k+1's ticket only after the claims it samples from proof k re-run true in the
   * sealed Lane 1 engine. At tranche 2 the provider lies about one test (claims a failing test passes): the sample
   * re-runs it failing, the stream pauses at tranche 2, the payer anchors the provider's receipt commit and opens
   * the case; the panel refunds the tranche and slashes the terms' false-claim penalty.
   */
  async function streamedCase(): Promise<CaseReport> {
    const streamTerms = codeStreamTerms({ windowAfterSettlement: 86_400n, price: parseEther("0.001"), penalty: parseEther("1"), samplesPerTranche: 4 });
    const streamRef = {
      payer: payer.address,
      provider: provider.address,
      funder: getAddress(client.account.address),
      asset: zeroAddress,
      termsHash: termsHashOf(streamTerms),
      policyHash,
      challengeDuration: 3600n,
      nonce: 4n,
    };
    const streamOpened = await openChannel({ wallet: client, publicClient, escrow: addresses.gasEscrow, terms: streamRef, amount: parseEther("0.01") });
    const streamSession = sessionIdOf(domain, streamOpened.ref);
    const inputsOf = (tranche: bigint) => streamInputs({ chainId, gasEscrow: addresses.gasEscrow, sessionId: streamSession, tranche });
    const secretOf = (tranche: bigint) => keccak256(stringToBytes(`demo sampling secret ${tranche}`));
    let node: InProcessStreamProvider;
    const work: TrancheWork = async (tranche) => {
      const repository = tranche === 2n ? REPOSITORY_BY_TRANCHE[0]! : REPOSITORY_BY_TRANCHE[Number(tranche) - 1]!;
      const tests = await claimsOf({ terms: streamTerms, suite: SUITE, repository, inputs: inputsOf(tranche) });
      if (tranche !== 2n) return { repository, tests, coverageDeltaBps: 500 };
      // The lie: one failing test claimed passing. (The demo script picks a lie the payer's draw will sample, to
      // show the catch every time; a real provider cannot compute the draw before the payer reveals its secret.)
      const previous = progressProofHash(node.results.get(1n)!.proof.proof);
      for (let coverage = 0; ; coverage++) {
        for (const [index, test] of tests.entries()) {
          if (test.outcome !== "fail") continue;
          const lie = tests.map((t, i) => (i === index ? { ...t, outcome: "pass" as const } : t));
          const proofHash = progressProofHash({ sessionId: streamSession, tranche, repoStateHash: bundleHash(repository), suiteHash: streamTerms.stream.suite.hash, tests: lie, coverageDeltaBps: coverage, lint: "clean", artifactHash: zeroHash, prevProofHash: previous });
          const drawn = sampledIndices({ secret: secretOf(tranche), proofHash, total: tests.length, count: streamTerms.stream.samplesPerTranche });
          if (drawn.includes(index)) return { repository, tests: lie, coverageDeltaBps: coverage };
        }
      }
    };
    node = new InProcessStreamProvider({ account: provider, domain, terms: streamTerms, ref: streamOpened.ref, sessionId: streamSession, work, modelSnapshotId: STREAM_MODEL });
    const flow = new FlowController({ terms: streamTerms, ref: streamOpened.ref, sessionId: streamSession, domain, signer: payer, link: node, suite: SUITE, secretOf });
    const pause = await flow.run(4n);
    if (p.recordsDir) writeStreamRecord(p.recordsDir, flow);
    for (const event of flow.events) {
      if (event.kind === "proof") log(`Stream ${streamSession.slice(0, 18)}…: tranche ${event.tranche}'s Progress Proof claims ${event.passed}/${event.total} tests pass.`);
      if (event.kind === "sample") log(`  sampled claim #${event.index} (${event.name}): claimed ${event.claimed}, re-ran ${event.actual} → ${event.status === "true" ? "true" : "FALSE"} (${event.replayMs.toFixed(0)} ms, ${event.repositoryBytes} bytes of repository).`);
      if (event.kind === "pause") log(`The Flow Controller paused the stream at tranche ${event.tranche} (${event.reason}): no ticket for tranche ${event.tranche + 1n}.`);
    }
    if (pause.reason !== "false_claim" || pause.tranche !== 2n) throw new Error(`The stream should pause at tranche 2 on a false claim; it paused: ${pause.reason} at ${pause.tranche}.`);
    const evidence = flow.caseEvidence()!;
    const streamClosed = await closeUnilateral({ wallet: payerWallet, publicClient, escrow: addresses.gasEscrow, ref: streamOpened.ref, ticket: flow.tranches.get(2n)!.ticket });
    await anchorReceiptCommit({ wallet: payerWallet, publicClient, escrow: addresses.gasEscrow, ref: streamOpened.ref, commit: evidence.commit });
    const streamCaseId = await publicClient.readContract({ address: addresses.disputeManager, abi: disputeManagerAbi, functionName: "nextCaseId", args: [2, streamSession] });
    const streamPackage = buildStreamPackage({
      caseId: streamCaseId,
      chainId,
      disputeManager: addresses.disputeManager,
      challenger: payer.address,
      lane: 1,
      gasEscrow: addresses.gasEscrow,
      sessionId: streamSession,
      ref: streamOpened.ref,
      pricing: streamTerms,
      closing: streamClosed.state,
      commit: evidence.commit,
      seq: evidence.seq,
      receipts: [evidence.receipt],
      progress: evidence.progress,
      suite: evidence.suite!,
      repository: evidence.repository!,
    });
    const streamOpenedCase = await openSessionCase({
      wallet: payerWallet,
      publicClient,
      disputeManager: addresses.disputeManager,
      lane: 1,
      packageHash: packageHash(streamPackage),
      ref: streamOpened.ref,
      recorded: streamClosed.state,
      receiptHash: sessionReceiptHash(evidence.receipt.receipt.receipt),
      ticketHash: paymentTicketHash(evidence.receipt.ticket.ticket),
      proof: evidence.receipt.merkleProof,
    });
    log(`The payer closed on ticket 2, anchored the provider's receipt commit over both tranches and opened a lane 1 case on claim #${evidence.progress.sample} of tranche 2.`);
    const before3 = { payer: await ethOf(payer.address), funder: await ethOf(client.account.address), provider: await ethOf(provider.address), providerSlaBond: await slaBondOf(provider.address), payerLgas: await lgasOf(payer.address) };
    const streamResult = await arbitrateAndEnforce(streamCaseId, streamPackage, payerWallet);
    const rerun = streamResult.run.resolution?.objectiveChecks.map((check) => check.detail).join("; ");
    log(`Lane 1 re-ran the sampled claim: ${rerun ?? "(run by the daemons)"} → ${streamResult.run.verdict}.`);
    logOutcome(streamResult, "ETH");
    const streamRecorded = { ...streamClosed.state, amount: streamClosed.state.amount - streamResult.finalized.refunded };
    const streamFinalized = await finalizeClose({ wallet: watcher, publicClient, escrow: addresses.gasEscrow, ref: streamOpened.ref, recorded: streamRecorded });
    log(`Finalised: ${formatEther(streamFinalized.paidToProvider)} ETH to the provider (tranche 1 only), ${formatEther(streamFinalized.refundedToFunder)} ETH back to the funder.`);
    const after3 = { payer: await ethOf(payer.address), funder: await ethOf(client.account.address), provider: await ethOf(provider.address), providerSlaBond: await slaBondOf(provider.address), payerLgas: await lgasOf(payer.address) };
    return {
      subject: "session",
      caseId: streamCaseId,
      lane: 1,
      verdict: streamResult.run.verdict,
      resolutionHash: streamResult.run.resolutionHash,
      identicalRuns: streamResult.identicalRuns,
      panel: streamResult.panel,
      signers: streamResult.signers,
      appealWindowEnds: new Date(Number(streamResult.decided.deadline) * 1000).toISOString(),
      bondPosted: streamOpenedCase.bond.toString(),
      refund: streamResult.finalized.refunded.toString(),
      slash: streamResult.finalized.slashed.toString(),
      balanceChanges: {
        payerEth: (after3.payer - before3.payer).toString(),
        funderEth: (after3.funder - before3.funder).toString(),
        providerEth: (after3.provider - before3.provider).toString(),
        providerSlaBondLgas: (after3.providerSlaBond - before3.providerSlaBond).toString(),
        payerLgas: (after3.payerLgas - before3.payerLgas).toString(),
      },
      arbitratorFees: streamResult.fees,
      gas: { open: Number(streamOpenedCase.gasUsed), ...streamResult.gas },
    };
  }
}

const VERDICT_NAMES = Object.fromEntries(FINAL_VERDICTS.map((v) => [VERDICT_CODES[v], v])) as Record<number, string>;
const ROOT = path.join(__dirname, "..");
/** How many `ioi arbitrator serve` processes the demo runs; the admitted keys are shared out among them. */
const DAEMON_PROCESSES = 3;

export type ArbitratorDaemons = Awaited<ReturnType<typeof startArbitratorDaemons>>;

/**
 * Starts {@link DAEMON_PROCESSES} `ioi arbitrator serve` processes (bin/ioi.js from the TypeScript sources), each
 * serving its share of `arbitrators` (`--key-env A,B,…`, the devnet's well-known keys passed in its environment;
 * default: the 16 devnet arbitrators, accounts 20..35), and the challenger's evidence host for packages too large
 * to publish inline. Returns at once (the daemons start while the demo runs its channels); `ready` resolves once
 * every daemon printed its ready line. `stop()` ends them (SIGTERM) and the host; they also stop by themselves
 * after 5 minutes.
 */
export async function startArbitratorDaemons(p: { rpcUrl: string; workdir: string; disputeManager: Address; arbitrators?: readonly Address[]; log: (line: string) => void }) {
  const arbitrators = p.arbitrators ?? DEVNET_ARBITRATORS.map((i) => getAddress(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: i }).address));
  const keyOf = new Map<string, Hex>();
  for (let i = 0; i < 40; i++) {
    const account = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: i });
    keyOf.set(getAddress(account.address), `0x${Buffer.from(account.getHdKey().privateKey!).toString("hex")}`);
  }
  const evidenceDir = path.join(p.workdir, "evidence");
  mkdirSync(evidenceDir, { recursive: true });
  const evidence = await serveEvidence({ dir: evidenceDir });
  const children: ChildProcess[] = [];
  const outputs: string[] = [];
  const kill = () => children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill("SIGTERM"));
  process.once("exit", kill);
  const ready: Promise<void>[] = [];
  for (let d = 0; d < DAEMON_PROCESSES; d++) {
    const mine = arbitrators.filter((_, i) => i % DAEMON_PROCESSES === d);
    const env: Record<string, string> = { ...process.env, IOI_CLI_SOURCE: "1" } as Record<string, string>;
    const names = mine.map((a, i) => {
      const name = `IOI_DEMO_ARBITRATOR_${d}_${i}`;
      env[name] = keyOf.get(getAddress(a))!;
      return name;
    });
    // A pass a second: each key's daemon reads ~8 requests a pass from the demo's own in-process chain, which
    // also serves the channel part's tickets meanwhile.
    const child = spawn(
      process.execPath,
      [path.join(ROOT, "bin", "ioi.js"), "arbitrator", "serve", "--rpc", p.rpcUrl, "--dispute-manager", p.disputeManager, "--key-env", names.join(","),
        "--state-dir", path.join(p.workdir, `arbitrators-${d}`), "--poll-ms", "1000", "--grace-ms", "1000", "--retry-ms", "1000", "--max-runtime-ms", "300000"],
      { cwd: ROOT, env, stdio: ["ignore", "ignore", "pipe"] },
    );
    children.push(child);
    outputs.push("");
    ready.push(
      new Promise<void>((resolve, reject) => {
        child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
          outputs[d] += chunk;
          if (outputs[d]!.includes('"event":"arbitrator.ready"')) resolve();
        });
        child.once("exit", (code) => reject(new Error(`Arbitrator daemon ${d + 1} exited (${code}) before it was ready:\n${outputs[d]!.slice(-2000)}`)));
      }),
    );
  }
  const allReady = Promise.all(ready).then(() => undefined);
  allReady.catch(() => undefined); // awaited where it is needed; an early failure must not be unhandled
  p.log(`${DAEMON_PROCESSES} \`ioi arbitrator serve\` processes (pids ${children.map((c) => c.pid).join(", ")}) start following the DisputeManager, serving ${arbitrators.length} arbitrator keys between them.`);
  return {
    arbitrators,
    ready: allReady,
    evidenceDir,
    evidenceUrl: evidence.url.endsWith("/") ? evidence.url : `${evidence.url}/`,
    tail: () => outputs.map((o, d) => `--- daemon ${d + 1}\n${o.slice(-1500)}`).join("\n"),
    stop: async () => {
      process.off("exit", kill);
      kill();
      await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once("exit", r)))));
      await evidence.close();
    },
  };
}

const mintAbi = [
  { type: "function", name: "mint", stateMutability: "nonpayable", inputs: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }], outputs: [] },
] as const;
