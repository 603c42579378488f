/**
 * Issue 32's figures (decision 0037): what the payer's spot-check of a Progress Proof costs per tranche — the
 * sealed-engine replay of each sampled claim, the bytes it reads (the repository answered for the sample, the
 * signed proof) — against the tranche's nominal duration, and what the provider's full suite run costs. Runs a
 * whole stream in process (Flow Controller + stream provider, no chain: neither touches one).
 */
import { keccak256, stringToBytes, zeroAddress, zeroHash } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { claimsOf, streamInputs } from "../arbitration/lanes/stream-sample";
import { gasEscrowDomain } from "../channel-client/core/eip712";
import { signedProgressProofToJson } from "../channel-client/core/progress-proof";
import { termsHashOf } from "../channel-client/core/terms";
import { FlowController } from "../channel-client/node/flow-controller";
import { InProcessStreamProvider } from "../channel-client/node/stream-provider";
import { codeStreamTerms, REPOSITORY_BY_TRANCHE, SUITE } from "./examples/code-stream";

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : 0;
};
const round = (x: number, digits = 2) => Number(x.toFixed(digits));

export type StreamBench = {
  tranches: number;
  samplesPerTranche: number;
  testsPerProof: number;
  trancheSeconds: number;
  /** Median wall time of one sampled claim's replay (the suite loads, one test runs), ms. */
  sampleReplayMsP50: number;
  /** Median wall time of a tranche's whole check (all its samples, the repository hash), ms. */
  checkMsPerTrancheP50: number;
  /** The check's share of the tranche's nominal duration. */
  checkShareOfTranche: number;
  /** Bytes the payer reads per tranche: the repository answered for the sample and the signed proof (JSON). */
  repositoryBytes: number;
  proofBytes: number;
  /** The provider's run of the full suite for a proof (every test), ms, median. */
  providerSuiteMsP50: number;
  /** Engine steps (suite; deliverable) of one sampled replay, median. */
  sampleSteps: { suite: number; deliverable: number };
};

export async function benchStream(quick: boolean): Promise<StreamBench> {
  const tranches = quick ? 3 : 8;
  const terms = codeStreamTerms({ windowAfterSettlement: 86_400n, samplesPerTranche: 2 });
  const mnemonic = "test test test test test test test test test test test junk";
  const payer = mnemonicToAccount(mnemonic, { addressIndex: 2 });
  const provider = mnemonicToAccount(mnemonic, { addressIndex: 3 });
  const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
  const ref = {
    terms: { payer: payer.address, provider: provider.address, funder: payer.address, asset: zeroAddress, termsHash: termsHashOf(terms), policyHash: zeroHash, challengeDuration: 3600n, nonce: 1n },
    openedAt: 1n,
  };
  const sessionId = keccak256(stringToBytes("bench stream"));
  const suiteMs: number[] = [];
  const work = async (tranche: bigint) => {
    const repository = REPOSITORY_BY_TRANCHE[Math.min(Number(tranche), REPOSITORY_BY_TRANCHE.length) - 1]!;
    const started = performance.now();
    const tests = await claimsOf({ terms, suite: SUITE, repository, inputs: streamInputs({ chainId: 31337n, gasEscrow: domain.verifyingContract, sessionId, tranche }) });
    suiteMs.push(performance.now() - started);
    return { repository, tests };
  };
  const node = new InProcessStreamProvider({ account: provider, domain, terms, ref, sessionId, work, modelSnapshotId: "bench" });
  const checkMs: number[] = [];
  let checkStarted = 0;
  const link = {
    tranche: node.tranche.bind(node),
    sample: async (p: Parameters<typeof node.sample>[0]) => {
      const repository = await node.sample(p);
      checkStarted = performance.now();
      return repository;
    },
  };
  const flow = new FlowController({
    terms,
    ref,
    sessionId,
    domain,
    signer: payer,
    link,
    suite: SUITE,
    onEvent: (e) => {
      if (e.kind === "ticket" && checkStarted > 0) checkMs.push(performance.now() - checkStarted);
    },
  });
  const pause = await flow.run(BigInt(tranches));
  if (pause.reason !== "done") throw new Error(`The bench stream paused: ${pause.reason} (${pause.detail}).`);
  // The last tranche's check ends with the pause "done", not a ticket.
  checkMs.push(performance.now() - checkStarted);
  const samples = flow.events.filter((e) => e.kind === "sample");
  const sampleMs = samples.map((e) => (e.kind === "sample" ? e.replayMs : 0));
  const held = [...flow.tranches.values()].filter((t) => t.samples);
  const steps = held.flatMap((t) => t.samples!.map((s) => s.steps));
  const last = held[held.length - 1]!;
  const checkP50 = median(checkMs);
  return {
    tranches,
    samplesPerTranche: terms.stream.samplesPerTranche,
    testsPerProof: last.result!.proof.proof.tests.length,
    trancheSeconds: Number(terms.stream.trancheSeconds),
    sampleReplayMsP50: round(median(sampleMs)),
    checkMsPerTrancheP50: round(checkP50),
    checkShareOfTranche: round(checkP50 / (Number(terms.stream.trancheSeconds) * 1000), 5),
    repositoryBytes: Buffer.byteLength(JSON.stringify(last.repository)),
    proofBytes: Buffer.byteLength(JSON.stringify(signedProgressProofToJson(last.result!.proof))),
    providerSuiteMsP50: round(median(suiteMs)),
    sampleSteps: { suite: median(steps.map((s) => s.suite)), deliverable: median(steps.map((s) => s.deliverable)) },
  };
}
