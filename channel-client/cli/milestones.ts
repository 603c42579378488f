/**
 * `ioi milestones`: milestone streaming from the command line (issue 32, decision 0037), offline tools around the
 * library parts: write a v4 terms document binding a test suite (`terms`), sign a tranche's Progress Proof as the
 * provider (`prove`: the bound suite is run on the repository in the sealed engine), and spot-check a proof as the
 * payer's Flow Controller does (`check`: the draw from the revealed secret, each drawn claim re-run; exit 3 on a
 * false claim). Over the network (second pass): `stream` streams a v4 channel against a running `ioi provider`
 * (which serves tranches when started with v4 terms, `--suite-dir` and `--repository-dir`), resuming after a restart
 * from the payer's store and the stream journal beside it, and `case` builds the session case of a stream that
 * paused on a false claim, two proofs of one tranche or a proof about another suite from that store and journal.
 */
import { writeFileSync } from "node:fs";
import { getAddress, isAddress, isHex, zeroHash, type Address, type Hex } from "viem";

import { bundleHash } from "../../arbitration/documents/bundle";
import { claimsOf, spotCheck, SpotCheckInputError, streamInputs } from "../../arbitration/lanes/stream-sample";
import { parseJson } from "../core/canonical";
import {
  progressProofHash,
  sampleCommitOf,
  sampledIndices,
  signedProgressProofFromJson,
  signedProgressProofToJson,
  signProgressProof,
  testsPassed,
  verifyProgressProof,
} from "../core/progress-proof";
import { flowRateOf, pricingTermsToJson, termsDocumentFromText, termsHashOf, STREAM_LIMITS, type TermsDocumentV4 } from "../core/terms";
import { boundedUint, channelOf, loadAccount, need, openStore, sessionOf, storePath, uint, UsageError, weiAmount, type CommandGroup, type Out } from "./common";
import { gasEscrowDomain } from "../core/eip712";
import { parsePeer, EndpointError } from "../node/endpoints";
import type { StreamEvent } from "../node/flow-controller";
import { readBundleDirectory, readOptionFile } from "./input-file";

/** Exit status of `check` when a sampled claim is false (as `ioi gig vet` for a failing deliverable). */
export const FALSE_CLAIM_EXIT_CODE = 3;

type Values = Record<string, string | boolean | undefined>;

function hashOption(values: Values, name: string, what: string): Hex {
  const text = need(values, name, what);
  if (!isHex(text) || text.length !== 66) throw new UsageError(`--${name} must be 0x and 64 hex digits (${what}); received "${text}".`);
  return text.toLowerCase() as Hex;
}

function addressOption(values: Values, name: string, what: string): Address {
  const text = need(values, name, what);
  if (!isAddress(text)) throw new UsageError(`--${name} must be an address (${what}); received "${text}".`);
  return getAddress(text);
}

function streamTermsOf(values: Values): TermsDocumentV4 {
  const file = need(values, "terms-file", "the channel's v4 terms document");
  const terms = termsDocumentFromText(readOptionFile("terms-file", file, 1 << 16), file);
  if (terms.version !== "4") throw new UsageError(`--terms-file ${file} is a version ${terms.version} terms document; milestone streaming needs version 4 (a stream block).`);
  return terms;
}

function inputsOf(values: Values, tranche: bigint) {
  return streamInputs({
    chainId: uint(values, "chain-id", "the channel's chain id (it pins the samples' seed)"),
    gasEscrow: addressOption(values, "gas-escrow", "the channel's GasEscrow (it pins the samples' seed)"),
    sessionId: sessionOf(values),
    tranche,
  });
}

async function runTerms(values: Values, out: Out): Promise<void> {
  const suiteDir = need(values, "suite-dir", "the test suite every Progress Proof reports on");
  const suite = readBundleDirectory(suiteDir, "suite-dir");
  const entry = (values.entry as string | undefined) ?? "run.js";
  if (suite.files[entry] === undefined) throw new UsageError(`--entry ${entry} is not a file of --suite-dir ${suiteDir}.`);
  const price = weiAmount(values, "price", "the price of one tranche");
  const terms: TermsDocumentV4 = {
    version: "4",
    pricing: { perInvocation: price, perUnit: null, capPerCall: price },
    models: [(values.model as string | undefined) ?? "agent"],
    disputes: { windowAfterSettlement: uint(values, "window", "seconds after a settlement a receipt may be disputed", 86_400n), penalties: {}, refundsFromBond: true },
    requiredReceipts: ["rrsa_request_binding", "rrsa_output_commitment"],
    stream: {
      trancheSeconds: boundedUint(values, "tranche-seconds", "the nominal duration of one tranche", 1n, STREAM_LIMITS.maxTrancheSeconds),
      tranchesInFlight: Number(boundedUint(values, "in-flight", "tranches released ahead of the newest checked proof", 1n, BigInt(STREAM_LIMITS.maxTranchesInFlight), 1n)),
      samplesPerTranche: Number(boundedUint(values, "samples", "claims sampled per proof", 1n, BigInt(STREAM_LIMITS.maxSamplesPerTranche), 2n)),
      suite: {
        hash: bundleHash(suite),
        command: ["node", entry],
        stepBudget: Number(boundedUint(values, "step-budget", "engine steps per test", 1n, BigInt(STREAM_LIMITS.maxStepBudget), 1_000n)),
        maxOutputBytes: 65_536,
      },
      falseClaimPenalty: weiAmount(values, "penalty", "the SLA bond slash for a false claim (bond token)", 0n),
    },
  };
  const json = JSON.stringify(pricingTermsToJson(terms), null, 2) + "\n";
  if (values.out) writeFileSync(values.out as string, json);
  out.lines.push(`Terms v4 ${termsHashOf(terms)}: ${price} wei per ${terms.stream.trancheSeconds} s tranche (${flowRateOf(terms)} wei/s), ${terms.stream.samplesPerTranche} claims sampled per proof, suite ${terms.stream.suite.hash}.`);
  if (values.out) out.lines.push(`Written to ${values.out as string}; offer it with ioi provider --terms-file and agree to it with ioi open --terms-file.`);
  else out.lines.push(json.trimEnd());
  Object.assign(out.result, { termsHash: termsHashOf(terms), terms: pricingTermsToJson(terms) });
}

async function runProve(values: Values, out: Out): Promise<void> {
  const terms = streamTermsOf(values);
  const suite = readBundleDirectory(need(values, "suite-dir", "the bound test suite"), "suite-dir");
  const repository = readBundleDirectory(need(values, "repository-dir", "the repository the proof is anchored to"), "repository-dir");
  const tranche = boundedUint(values, "tranche", "the tranche (the receipt's seq)", 1n, (1n << 64n) - 1n);
  const account = loadAccount(values);
  let tests;
  try {
    tests = await claimsOf({ terms, suite, repository, inputs: inputsOf(values, tranche) });
  } catch (error) {
    if (error instanceof SpotCheckInputError) throw new UsageError(error.message);
    throw error;
  }
  const signed = await signProgressProof({
    account,
    proof: {
      sessionId: sessionOf(values),
      tranche,
      repoStateHash: bundleHash(repository),
      suiteHash: terms.stream.suite.hash,
      tests,
      coverageDeltaBps: Number(values["coverage-delta-bps"] ?? 0),
      lint: ((values.lint as string | undefined) ?? "clean") as "clean" | "warnings" | "errors",
      artifactHash: values["artifact-hash"] ? hashOption(values, "artifact-hash", "the build artifact's hash") : zeroHash,
      prevProofHash: values["prev-proof"] ? hashOption(values, "prev-proof", "the previous tranche's proof hash") : zeroHash,
    },
  });
  const json = signedProgressProofToJson(signed);
  signedProgressProofFromJson(json); // the bounds of the published schema (coverage, lint)
  if (values.out) writeFileSync(values.out as string, JSON.stringify(json, null, 2) + "\n");
  const { passed, total } = testsPassed(signed.proof);
  out.lines.push(`Progress Proof of tranche ${tranche}: ${passed}/${total} tests pass on repository ${signed.proof.repoStateHash}; proof ${progressProofHash(signed.proof)} signed by ${account.address}.`);
  Object.assign(out.result, { proofHash: progressProofHash(signed.proof), passed, total, signed: json });
}

async function runCheck(values: Values, out: Out): Promise<void> {
  const terms = streamTermsOf(values);
  const suite = readBundleDirectory(need(values, "suite-dir", "the bound test suite"), "suite-dir");
  const repository = readBundleDirectory(need(values, "repository-dir", "the repository the provider answered the sample with"), "repository-dir");
  const proofFile = need(values, "proof-file", "the provider's signed Progress Proof");
  const signed = signedProgressProofFromJson(parseJson(readOptionFile("proof-file", proofFile, 1 << 20), { maxBytes: 1 << 20, what: `The proof ${proofFile}` }), proofFile);
  const proof = signed.proof;
  if (values.provider) await verifyProgressProof({ signed, signer: addressOption(values, "provider", "the provider who must have signed the proof") });
  const secret = hashOption(values, "secret", "the sampling secret committed in the tranche request");
  const commit = values.commit ? hashOption(values, "commit", "the tranche request's sampleCommit") : null;
  if (commit !== null && sampleCommitOf(secret) !== commit) throw new UsageError(`--secret does not open --commit: keccak256(secret) is ${sampleCommitOf(secret)}.`);
  if (bundleHash(repository) !== proof.repoStateHash) {
    out.lines.push(`The repository hashes to ${bundleHash(repository)}; the proof is anchored to ${proof.repoStateHash}: the stream pauses (repository_changed).`);
    out.exitCode = FALSE_CLAIM_EXIT_CODE;
    Object.assign(out.result, { outcome: "repository_changed" });
    return;
  }
  const proofHash = progressProofHash(proof);
  const indices = sampledIndices({ secret, proofHash, total: proof.tests.length, count: terms.stream.samplesPerTranche });
  const result = await spotCheck({ terms, suite, repository, proof, indices, inputs: inputsOf(values, proof.tranche) });
  for (const s of result.samples) out.lines.push(`  ${s.status === "true" ? "true " : s.status === "false" ? "FALSE" : "suite"} claim #${s.index}: ${s.detail}`);
  const outcome = result.falseClaims.length ? "false_claim" : result.suiteFault ? "suite_fault" : "pass";
  out.lines.push(
    outcome === "pass"
      ? `Every sampled claim of tranche ${proof.tranche} re-ran true: release the next ticket.`
      : outcome === "false_claim"
        ? `A sampled claim of tranche ${proof.tranche} is false: pause the stream and build the case (claim #${result.falseClaims[0]}).`
        : `The bound suite itself could not be run (${result.suiteFault}): pause; nothing is proven against the provider.`,
  );
  if (outcome !== "pass") out.exitCode = FALSE_CLAIM_EXIT_CODE;
  Object.assign(out.result, { outcome, proofHash, indices, samples: result.samples.map((s) => ({ index: s.index, name: s.name, claimed: s.claimed, actual: s.actual, status: s.status })) });
}


/** Exit status of `stream` when the stream paused before the tranches asked for (any reason). */
export const PAUSED_EXIT_CODE = 3;

function describeEvent(event: StreamEvent): string {
  switch (event.kind) {
    case "ticket":
      return `ticket ${event.tranche}: ${event.cumulative} wei authorised`;
    case "proof":
      return `proof ${event.tranche}: ${event.passed}/${event.total} tests claimed passing on ${event.repoStateHash.slice(0, 10)}…`;
    case "sample":
      return `sample ${event.tranche} claim #${event.index} ${JSON.stringify(event.name)}: claimed ${event.claimed}, re-ran ${event.actual} (${event.status})`;
    case "pause":
      return `${event.reason === "done" ? "done" : "PAUSED"} at tranche ${event.tranche}: ${event.reason}: ${event.detail}`;
  }
}

async function runStream(values: Values, out: Out): Promise<void> {
  const sessionId = sessionOf(values);
  const tranches = boundedUint(values, "tranches", "tranches to pay and check", 1n, 1n << 32n);
  const suite = readBundleDirectory(need(values, "suite-dir", "the bound test suite"), "suite-dir");
  const account = loadAccount(values);
  const store = openStore(values, "payer");
  const { FlowController, streamRecordOf, writeStreamRecord } = await import("../node/flow-controller");
  const { NetworkStreamLink } = await import("../node/stream-link");
  const { StreamJournal } = await import("../node/stream-journal");
  try {
    const channel = channelOf(store, sessionId);
    if (channel.pricing.version !== "4") throw new UsageError(`Session ${sessionId} was opened on version ${channel.pricing.version} terms; milestone streaming needs version 4 (a stream block).`);
    if (bundleHash(suite) !== channel.pricing.stream.suite.hash) throw new UsageError(`--suite-dir hashes to ${bundleHash(suite)}; the channel's terms bind the suite ${channel.pricing.stream.suite.hash}.`);
    // A stored fleet list (ioi open --peer A,B) starts with the endpoint the channel was opened on.
    const peer = (values.peer as string | undefined) ?? channel.peer?.split(",")[0];
    if (!peer) throw new UsageError("--peer HOST:PORT is required: where the provider node listens.");
    let endpoint: { host: string; port: number };
    try {
      endpoint = parsePeer(peer, values["allow-remote"] === true);
    } catch (error) {
      if (error instanceof EndpointError) throw new UsageError(error.shortMessage);
      throw error;
    }
    const domain = gasEscrowDomain({ chainId: channel.chainId, verifyingContract: channel.escrow });
    const journal = StreamJournal.open(StreamJournal.dirOfStore(storePath(values, "payer")), sessionId);
    // The delegated sampling node (decision 0025): tickets signed by the granted key, within its cap; the grant is kept
    // in the store before the first ticket under it (a key-signed ticket is the payer's only with its grant).
    const sessionKey = (await import("./channel-plumbing")).sessionKeyOf(values, sessionId);
    if (sessionKey) await store.putSessionKeyGrant(sessionId, sessionKey.grant);
    const link = await NetworkStreamLink.connect({ account, domain, channel, ...endpoint, ...(sessionKey ? { grant: sessionKey.grant } : {}) });
    try {
      const flow = await FlowController.resume({
        terms: channel.pricing,
        ref: channel.ref,
        sessionId,
        domain,
        signer: sessionKey?.account ?? account,
        ...(sessionKey ? { grant: sessionKey.grant } : {}),
        link,
        suite,
        store,
        journal,
        onEvent: (event) => {
          if (!out.json) process.stderr.write(`stream: ${describeEvent(event)}\n`);
        },
      });
      const pause = await flow.run(tranches);
      if (values.records) out.lines.push(`Stream record written to ${writeStreamRecord(values.records as string, flow)}.`);
      const record = streamRecordOf(flow);
      if (pause.reason === "done") out.lines.push(`Streamed ${flow.state.checked} tranches of session ${sessionId}: every sampled claim re-ran true.`);
      else {
        out.exitCode = PAUSED_EXIT_CODE;
        out.lines.push(`The stream paused at tranche ${pause.tranche} (${pause.reason}): ${pause.detail}.`);
        out.lines.push(
          flow.caseEvidence()
            ? `Build its case: ioi close --session ${sessionId} --unilateral, ioi anchor --session ${sessionId}, then ioi milestones case --session ${sessionId} --suite-dir DIR --out FILE.`
            : "Nothing signed proves this pause to an arbitrator: no more tickets are signed, and the provider keeps the tranches released.",
        );
      }
      Object.assign(out.result, { sessionId, released: record.released, checked: record.checked, paused: record.paused, caseable: flow.caseEvidence() !== null, journal: journal.file });
    } finally {
      await link.close();
    }
  } finally {
    await store.close();
  }
}

/**
 * The session case of a stream that paused on a false claim or on two proofs of one tranche, from the payer's store
 * and the stream journal: the receipt of the paused tranche proven against the provider's anchored receipt commit,
 * and the progress evidence (signed proof, request, revealed secret and the false claim with the suite and the
 * repository; or the second proof).
 */
async function runCase(values: Values, out: Out): Promise<void> {
  const sessionId = sessionOf(values);
  const suite = readBundleDirectory(need(values, "suite-dir", "the bound test suite"), "suite-dir");
  const account = loadAccount(values);
  const { disputeClients, laneOf, nextCaseId, outputPath, writePackage } = await import("./arbitration");
  const lane = laneOf(values, 1);
  const file = outputPath(values, "out", "the file to write the package to", true)!;
  const { FlowController } = await import("../node/flow-controller");
  const { StreamJournal } = await import("../node/stream-journal");
  const { buildStreamPackage } = await import("../../arbitration/runner/build");
  const { currentClosingState } = await import("../../arbitration/runner/chain");
  const { gasEscrowAbi } = await import("../chain/escrow");
  const { grantForTicket } = await import("../node/key-tickets");
  const store = openStore(values, "payer");
  try {
    const channel = channelOf(store, sessionId);
    if (channel.pricing.version !== "4") throw new UsageError(`Session ${sessionId} is not a milestone stream (terms version ${channel.pricing.version}).`);
    if (bundleHash(suite) !== channel.pricing.stream.suite.hash) throw new UsageError(`--suite-dir hashes to ${bundleHash(suite)}; the channel's terms bind the suite ${channel.pricing.stream.suite.hash}.`);
    const journal = StreamJournal.open(StreamJournal.dirOfStore(storePath(values, "payer")), sessionId);
    if (!journal.exists) throw new UsageError(`No stream journal for session ${sessionId} beside the store (${journal.file}): stream with ioi milestones stream and the same --db.`);
    const domain = gasEscrowDomain({ chainId: channel.chainId, verifyingContract: channel.escrow });
    const offline = {
      tranche: async () => null,
      sample: async () => null,
    };
    const newest = store.latestTicket(sessionId);
    const grant = newest ? await grantForTicket({ channel, store, ticket: newest }) : undefined;
    const flow = await FlowController.resume({ terms: channel.pricing, ref: channel.ref, sessionId, domain, signer: account, link: offline, suite, store, journal, ...(grant ? { grant } : {}) });
    const evidence = flow.caseEvidence();
    if (!evidence) {
      const pause = flow.state.paused;
      throw new UsageError(
        pause
          ? `The stream paused at tranche ${pause.tranche} (${pause.reason}); only a false claim, two proofs of one tranche or a proof about another suite make a case.`
          : `The journal records no pause of session ${sessionId} that makes a case (a false claim, two proofs of one tranche or a proof about another suite).`,
      );
    }
    const { publicClient, chainId, deployment } = await disputeClients(values);
    if (channel.chainId !== chainId || channel.escrow.toLowerCase() !== deployment.gasEscrow.toLowerCase()) {
      throw new UsageError(`The store's channel lives in the GasEscrow ${channel.escrow} on chain ${channel.chainId}; the DisputeManager uses ${deployment.gasEscrow} on chain ${chainId}.`);
    }
    const closing = await currentClosingState(publicClient, deployment.gasEscrow, sessionId, deployment.deploymentBlock);
    // The receipt is proven against the recorded root when the close committed the same receipts (the payer's closing
    // ticket covers all it accepted), else against the provider's receipt commit, which must then be anchored.
    const recordedCovers = closing.receiptRoot === evidence.commit.commit.root;
    const anchored = recordedCovers ? 1n : await publicClient.readContract({ address: deployment.gasEscrow, abi: gasEscrowAbi, functionName: "anchoredCommitOf", args: [sessionId, evidence.commit.commit.root] });
    if (anchored === 0n) throw new UsageError(`The provider's receipt commit over ${evidence.commit.commit.leafCount} receipts is not anchored: run ioi anchor --session ${sessionId} (payer or funder) once the channel is closing, then build again.`);
    const caseId = await nextCaseId(publicClient, deployment.disputeManager, 2, sessionId);
    const pkg = buildStreamPackage({
      caseId,
      chainId: BigInt(chainId),
      disputeManager: deployment.disputeManager,
      challenger: account.address,
      lane,
      gasEscrow: deployment.gasEscrow,
      sessionId,
      ref: channel.ref,
      pricing: channel.pricing,
      closing,
      ...(recordedCovers ? {} : { commit: evidence.commit }),
      seq: evidence.seq,
      receipts: [evidence.receipt],
      progress: evidence.progress,
      ...(evidence.suite ? { suite: evidence.suite } : {}),
      ...(evidence.repository ? { repository: evidence.repository } : {}),
    });
    writePackage(out, file, pkg);
    Object.assign(out.result, { sessionId, tranche: evidence.seq.toString(), reason: flow.state.paused!.reason, claim: evidence.progress.sample ?? null, provenAgainst: recordedCovers ? "recorded root" : "anchored receipt commit" });
  } finally {
    await store.close();
  }
}

const SESSION_INPUTS = {
  session: { type: "string" },
  "chain-id": { type: "string" },
  "gas-escrow": { type: "string" },
} as const;

export const MILESTONES_GROUP: CommandGroup = {
  summary: "milestone streaming: v4 terms binding a test suite, Progress Proofs, the payer's spot-check (ioi milestones --help)",
  commands: {
    terms: {
      summary: "write a v4 terms document: a price per tranche, the sampling rate and the bound test suite",
      usage: "ioi milestones terms --price WEI --tranche-seconds N --suite-dir DIR [--entry FILE] [--samples K] [--in-flight K] [--step-budget N] [--penalty WEI] [--model ID] [--window S] [--out FILE]",
      notes: ["The suite directory is hashed as a bundle (as `ioi gig vet` does); every Progress Proof must report on exactly it."],
      options: {
        price: { type: "string" },
        "tranche-seconds": { type: "string" },
        "suite-dir": { type: "string" },
        entry: { type: "string" },
        samples: { type: "string" },
        "in-flight": { type: "string" },
        "step-budget": { type: "string" },
        penalty: { type: "string" },
        model: { type: "string" },
        window: { type: "string" },
        out: { type: "string" },
      },
      run: runTerms,
    },
    prove: {
      summary: "as the provider: run the bound suite on the repository in the sealed engine and sign the tranche's Progress Proof",
      usage: "ioi milestones prove --terms-file F --suite-dir DIR --repository-dir DIR --session ID --tranche K --chain-id N --gas-escrow ADDR [--prev-proof HASH] [--out FILE]",
      options: {
        "terms-file": { type: "string" },
        "suite-dir": { type: "string" },
        "repository-dir": { type: "string" },
        tranche: { type: "string" },
        "prev-proof": { type: "string" },
        "artifact-hash": { type: "string" },
        "coverage-delta-bps": { type: "string" },
        lint: { type: "string" },
        out: { type: "string" },
        ...SESSION_INPUTS,
      },
      run: runProve,
    },
    check: {
      summary: "as the payer: draw the sampled claims from the revealed secret and re-run each as Lane 1 would (exit 3 on a false claim)",
      usage: "ioi milestones check --terms-file F --suite-dir DIR --repository-dir DIR --proof-file F --secret HEX [--commit HEX] [--provider ADDR] --session ID --chain-id N --gas-escrow ADDR",
      notes: ["Exit status 0 when every sampled claim re-runs true (release the next ticket), 3 when one is false or the repository is not the proof's, 1 on error, 2 on usage."],
      options: {
        "terms-file": { type: "string" },
        "suite-dir": { type: "string" },
        "repository-dir": { type: "string" },
        "proof-file": { type: "string" },
        secret: { type: "string" },
        commit: { type: "string" },
        provider: { type: "string" },
        ...SESSION_INPUTS,
      },
      run: runCheck,
    },
    stream: {
      summary: "as the payer: stream a v4 channel against its provider node, at most the terms' tranches in flight past the newest checked proof (resumes after a restart)",
      usage: "ioi milestones stream --session ID --suite-dir DIR --tranches N [--peer HOST:PORT [--allow-remote]] [--session-key FILE] [--records DIR] [--db PATH]",
      notes: [
        "Each tranche's sampling secret is made durable in the stream journal (<db>.streams/) before its request leaves, so a",
        "restarted payer resumes the tranche in flight. Exit status 0 when N tranches were paid and checked, 3 when the stream",
        "paused (a false claim, two proofs, another repository, no answer, the session key's cap…), 1 on error, 2 on usage.",
        "--session-key FILE (ioi session-key authorize --out): run as the payer's delegated sampling node; its cap bounds the stream.",
        "With terms written by ioi milestones terms --in-flight K, the next tickets go out while a proof's claims re-run (K tranches at most unchecked).",
        "ioi api serve on the same --db lists the stream (streams.list, streams.get) and pushes its events (subscribe topic streams).",
      ],
      options: { session: { type: "string" }, "suite-dir": { type: "string" }, tranches: { type: "string" }, peer: { type: "string" }, "allow-remote": { type: "boolean" }, records: { type: "string" }, "session-key": { type: "string" } },
      run: runStream,
    },
    case: {
      summary: "as the payer: build the session case of a stream that paused on a false claim, two proofs of one tranche or a proof about another suite",
      usage: "ioi milestones case --session ID --suite-dir DIR --out FILE [--lane 0|1] [--db PATH]",
      notes: [
        "Reads the payer's store and the stream journal beside it. Close the channel (ioi close --unilateral) and anchor the",
        "provider's receipt commit (ioi anchor) first; then open the case with ioi dispute open --package FILE.",
      ],
      options: { session: { type: "string" }, "suite-dir": { type: "string" }, out: { type: "string" }, lane: { type: "string" }, "dispute-manager": { type: "string" } },
      run: runCase,
    },
  },
};
