/**
 * Milestone streaming without a chain (issue 32, decision 0037): the v4 terms document, Progress Proofs and
 * tranche requests (known answers, round trips, signatures), the sample draw, the Flow Controller's pure core
 * (state × input → decision), and the spot-check in the sealed engine.
 */
import { expect } from "chai";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { keccak256, stringToBytes, zeroAddress, zeroHash, type Hex } from "viem";

import { bundleHash } from "../../arbitration/documents/bundle";
import { claimsOf, spotCheck, SpotCheckInputError, streamInputs } from "../../arbitration/lanes/stream-sample";
import { DEFAULT_INPUTS } from "../../arbitration/lanes/pinned";
import { canon } from "../../channel-client/core/canonical";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import {
  progressProofFromJson,
  progressProofHash,
  progressProofToJson,
  sampleCommitOf,
  sampledIndices,
  signedProgressProofToJson,
  signProgressProof,
  trancheRequestFromJson,
  trancheRequestHash,
  trancheRequestToJson,
  verifyProgressProof,
  type ProgressProof,
} from "../../channel-client/core/progress-proof";
import { jsonSchemaOf } from "../../channel-client/core/schemas";
import { flowRateOf, penaltyOf, pricingTermsFromJson, pricingTermsToJson, STREAM_LIMITS, termsHashOf, tranchePriceOf, type TermsDocumentV4Json } from "../../channel-client/core/terms";
import { acceptTranche, FlowController, initialFlowState, judgeSample, mayRelease, writeStreamRecord } from "../../channel-client/node/flow-controller";
import { InProcessStreamProvider } from "../../channel-client/node/stream-provider";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import { listStreams, loadRecords } from "../../channel-client/ui/data";
import { METHODS } from "../../channel-client/api/methods";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { BROKEN_REPOSITORY, codeStreamTerms, REPOSITORY_BY_TRANCHE, SUITE } from "../../scripts/examples/code-stream";
import { hardhatAccount, ROLE } from "../helpers/fixtures";
import { thrown } from "../helpers/assert";

const h = (label: string): Hex => keccak256(stringToBytes(label));
async function rejected(fn: () => Promise<unknown>): Promise<Error> {
  try {
    await fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the call to reject");
}
const TERMS = codeStreamTerms({ windowAfterSettlement: 86_400n });
const SESSION = h("stream session");
const provider = hardhatAccount(ROLE.provider);

const PROOF: ProgressProof = {
  sessionId: SESSION,
  tranche: 1n,
  repoStateHash: bundleHash(REPOSITORY_BY_TRANCHE[0]!),
  suiteHash: TERMS.stream.suite.hash,
  tests: [
    { name: "a", outcome: "pass" },
    { name: "b", outcome: "fail" },
  ],
  coverageDeltaBps: -250,
  lint: "warnings",
  artifactHash: zeroHash,
  prevProofHash: zeroHash,
};

describe("milestone streaming (issue 32): terms v4, Progress Proofs, sampling, the Flow Controller's core", function () {
  this.timeout(120_000);

  it("terms v4: round trip, one price per tranche, the stream block hashed into termsHash, the penalty for stream violations only", () => {
    const json = pricingTermsToJson(TERMS) as TermsDocumentV4Json;
    expect(pricingTermsFromJson(JSON.parse(JSON.stringify(json)))).to.deep.equal(TERMS);
    expect(tranchePriceOf(TERMS)).to.equal(10n ** 16n);
    expect(flowRateOf(TERMS)).to.equal(10n ** 16n / 60n);
    const changed = { ...TERMS, stream: { ...TERMS.stream, samplesPerTranche: 3 } };
    expect(termsHashOf(changed)).to.not.equal(termsHashOf(TERMS));
    expect(penaltyOf(TERMS, "STREAM_FALSE_CLAIM")).to.equal(TERMS.stream.falseClaimPenalty);
    expect(penaltyOf(TERMS, "RECEIPT_MODEL_SWAP")).to.equal(0n);
    expect(thrown(() => pricingTermsFromJson({ ...json, pricing: { perInvocation: "1", capPerCall: "2" } })).message).to.match(/one price per tranche/);
    expect(thrown(() => pricingTermsFromJson({ ...json, stream: { ...json.stream, trancheSeconds: "0" } })).message).to.match(/trancheSeconds/);
    expect(thrown(() => pricingTermsFromJson({ ...json, stream: { ...json.stream, tranchesInFlight: 17 } })).message).to.match(/tranchesInFlight/);
  });

  it("the schema's stream bounds are the code's", () => {
    const stream = (jsonSchemaOf("terms").definitions as Record<string, any>).termsV4.properties.stream.properties;
    expect(stream.tranchesInFlight.maximum).to.equal(STREAM_LIMITS.maxTranchesInFlight);
    expect(stream.samplesPerTranche.maximum).to.equal(STREAM_LIMITS.maxSamplesPerTranche);
    expect(stream.suite.properties.stepBudget.maximum).to.equal(STREAM_LIMITS.maxStepBudget);
    expect(stream.suite.properties.maxOutputBytes.maximum).to.equal(STREAM_LIMITS.maxOutputBytes);
    const inPackage = (jsonSchemaOf("challenge-package").definitions as Record<string, any>).termsV4;
    expect(inPackage).to.deep.equal((jsonSchemaOf("terms").definitions as Record<string, any>).termsV4);
  });

  it("Progress Proof: canonical bytes and hash (known answer), JSON round trip, the provider's signature and nobody else's", async () => {
    expect(canon(progressProofToJson(PROOF))).to.equal(
      `{"artifactHash":"${zeroHash}","coverageDeltaBps":-250,"lint":"warnings","prevProofHash":"${zeroHash}","repoStateHash":"${PROOF.repoStateHash}","schema":"ioi.progress_proof/1","sessionId":"${SESSION}","suiteHash":"${PROOF.suiteHash}","tests":[{"name":"a","outcome":"pass"},{"name":"b","outcome":"fail"}],"tranche":"1"}`,
    );
    expect(progressProofHash(PROOF)).to.equal(keccak256(stringToBytes(canon(progressProofToJson(PROOF)))));
    expect(progressProofFromJson(JSON.parse(JSON.stringify(progressProofToJson(PROOF))))).to.deep.equal(PROOF);
    const signed = await signProgressProof({ account: provider, proof: PROOF });
    await verifyProgressProof({ signed, signer: provider.address });
    const tampered = { ...signed, proof: { ...PROOF, tests: [{ name: "a", outcome: "pass" as const }, { name: "b", outcome: "pass" as const }] } };
    expect((await rejected(() => verifyProgressProof({ signed: tampered, signer: provider.address }))).name).to.equal("InvalidSignatureError");
    expect(thrown(() => progressProofFromJson({ ...progressProofToJson(PROOF), tests: [{ name: "a", outcome: "pass" }, { name: "a", outcome: "fail" }] })).message).to.match(/each test once/);
    expect(thrown(() => progressProofFromJson({ ...progressProofToJson(PROOF), coverageDeltaBps: 10001 })).message).to.match(/coverageDeltaBps/);
  });

  it("tranche request: hash of its canonical JSON, round trip; the commitment opens only with its secret", () => {
    const secret = h("secret");
    const request = { sessionId: SESSION, tranche: 3n, sampleCommit: sampleCommitOf(secret) };
    expect(trancheRequestFromJson(trancheRequestToJson(request))).to.deep.equal(request);
    expect(trancheRequestHash(request)).to.equal(keccak256(stringToBytes(canon(trancheRequestToJson(request)))));
    expect(sampleCommitOf(secret)).to.equal(keccak256(secret));
    expect(sampleCommitOf(h("another"))).to.not.equal(request.sampleCommit);
  });

  it("the draw: `count` distinct indices in range, all of them when count ≥ total, fixed by (secret, proof) and changed by either", () => {
    const proofHash = progressProofHash(PROOF);
    for (let i = 0; i < 50; i++) {
      const drawn = sampledIndices({ secret: h(`s${i}`), proofHash, total: 12, count: 3 });
      expect(new Set(drawn).size).to.equal(3);
      expect(drawn.every((x) => Number.isInteger(x) && x >= 0 && x < 12)).to.equal(true);
    }
    expect(sampledIndices({ secret: h("s"), proofHash, total: 4, count: 9 })).to.deep.equal([0, 1, 2, 3]);
    const one = (secret: Hex, proof: Hex) => sampledIndices({ secret, proofHash: proof, total: 1000, count: 4 }).join();
    expect(one(h("s"), proofHash)).to.equal(one(h("s"), proofHash));
    expect(one(h("t"), proofHash)).to.not.equal(one(h("s"), proofHash));
    expect(one(h("s"), h("other proof"))).to.not.equal(one(h("s"), proofHash));
  });

  it("the Flow Controller's core: the in-flight window, the session key's cap, bindings of a result, equivocation, and every failed check pauses for good", async () => {
    const two = { ...TERMS, stream: { ...TERMS.stream, tranchesInFlight: 2 } };
    let state = initialFlowState(two);
    expect(mayRelease(state)).to.deep.equal({ ok: true, tranche: 1n, cumulative: tranchePriceOf(TERMS) });
    state = { ...state, released: 2n };
    expect(mayRelease(state)).to.deep.equal({ ok: false, pause: null }); // two unchecked: wait
    state = { ...state, checked: 1n };
    expect(mayRelease(state)).to.deep.include({ ok: true, tranche: 3n });
    expect(mayRelease(state, 2n * tranchePriceOf(TERMS))).to.deep.include({ ok: false });
    expect((mayRelease(state, 2n * tranchePriceOf(TERMS)) as { pause: { reason: string } }).pause.reason).to.equal("cap_reached");

    const secret = h("k");
    const request = { sessionId: SESSION, tranche: 1n, sampleCommit: sampleCommitOf(secret) };
    const proof = await signProgressProof({ account: provider, proof: PROOF });
    const receipt = {
      receipt: {
        sessionId: SESSION,
        seq: 1n,
        offloadPacketHash: trancheRequestHash(request),
        outputHash: progressProofHash(PROOF),
        policyHash: zeroHash,
        modelSnapshotId: "m",
        metering: { units: 0n, amount: tranchePriceOf(TERMS) },
        prevReceiptHash: zeroHash,
      },
      signature: "0x" as Hex,
    };
    const fresh = initialFlowState(TERMS);
    expect(acceptTranche(fresh, { sessionId: SESSION, request, receipt, proof }).ok).to.equal(true);
    const table: [string, Partial<typeof receipt.receipt>][] = [
      ["another output", { outputHash: h("x") }],
      ["another request", { offloadPacketHash: h("x") }],
      ["another price", { metering: { units: 0n, amount: 1n } }],
      ["another seq", { seq: 2n }],
    ];
    for (const [what, change] of table) {
      const r = acceptTranche(fresh, { sessionId: SESSION, request, receipt: { ...receipt, receipt: { ...receipt.receipt, ...change } }, proof });
      expect(r.ok, what).to.equal(false);
      expect(r.state.paused!.reason, what).to.equal("invalid_result");
    }
    // Bound to its receipt but about another suite: kept as the case's evidence, and the stream pauses (wrong_suite).
    const otherSuite = await signProgressProof({ account: provider, proof: { ...PROOF, suiteHash: h("another suite") } });
    const wrong = acceptTranche(fresh, { sessionId: SESSION, request, receipt: { ...receipt, receipt: { ...receipt.receipt, outputHash: progressProofHash(otherSuite.proof) } }, proof: otherSuite });
    expect(wrong.ok).to.equal(true);
    expect(wrong.state.paused!.reason).to.equal("wrong_suite");
    expect(wrong.state.proofs.get(1n)).to.equal(progressProofHash(otherSuite.proof));
    const accepted = acceptTranche(fresh, { sessionId: SESSION, request, receipt, proof }).state;
    const second = await signProgressProof({ account: provider, proof: { ...PROOF, lint: "clean" } });
    expect(acceptTranche(accepted, { sessionId: SESSION, request, receipt, proof: second }).state.paused!.reason).to.equal("equivocation");

    const passing = { samples: [], falseClaims: [], suiteFault: null };
    expect(judgeSample(accepted, 1n, passing).checked).to.equal(1n);
    const stopped = judgeSample(accepted, 1n, { failure: "no_answer", detail: "silence" });
    expect(stopped.paused!.reason).to.equal("no_answer");
    // Paused for good: a later passing check does not resume, and no ticket is released.
    expect(judgeSample(stopped, 1n, passing).paused!.reason).to.equal("no_answer");
    expect(mayRelease(judgeSample(stopped, 1n, passing)).ok).to.equal(false);
  });

  it("the spot-check in the sealed engine: true claims re-run true, a false one false, a proof listing another test set false, another repository refused", async () => {
    const inputs = DEFAULT_INPUTS;
    const repository = REPOSITORY_BY_TRANCHE[0]!;
    const tests = await claimsOf({ terms: TERMS, suite: SUITE, repository, inputs });
    expect(tests.filter((t) => t.outcome === "pass")).to.have.length(9);
    const proof: ProgressProof = { ...PROOF, repoStateHash: bundleHash(repository), tests };
    const failing = tests.findIndex((t) => t.outcome === "fail");
    const passing = tests.findIndex((t) => t.outcome === "pass");
    const honest = await spotCheck({ terms: TERMS, suite: SUITE, repository, proof, indices: [failing, passing], inputs });
    expect(honest.samples.map((s) => s.status)).to.deep.equal(["true", "true"]);
    expect(honest.samples[0]!.record.process.intent).to.match(/stream sample: test #\d+/);
    const lying = { ...proof, tests: tests.map((t) => ({ ...t, outcome: "pass" as const })) };
    const caught = await spotCheck({ terms: TERMS, suite: SUITE, repository, proof: lying, indices: [failing, passing], inputs });
    expect(caught.falseClaims).to.deep.equal([failing]);
    expect(caught.samples[0]).to.deep.include({ claimed: "pass", actual: "fail", status: "false" });
    const short = { ...proof, tests: tests.slice(0, 11) };
    expect((await spotCheck({ terms: TERMS, suite: SUITE, repository, proof: short, indices: [0], inputs })).samples[0]!.status).to.equal("false");
    expect((await rejected(() => spotCheck({ terms: TERMS, suite: SUITE, repository: BROKEN_REPOSITORY, proof, indices: [0], inputs }))).name).to.equal(SpotCheckInputError.name);
    // The same inputs give the same record, byte for byte.
    const again = await spotCheck({ terms: TERMS, suite: SUITE, repository, proof, indices: [failing, passing], inputs });
    expect(canon(again.samples.map((s) => s.record))).to.equal(canon(honest.samples.map((s) => s.record)));
  });

  it("a whole stream without a chain: the provider lies at tranche 2 on a repository failing every test, the Flow Controller pauses there, and its record is what the page lists", async () => {
    const payer = hardhatAccount(ROLE.payer);
    const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
    const ref = {
      terms: { payer: payer.address, provider: provider.address, funder: payer.address, asset: zeroAddress, termsHash: termsHashOf(TERMS), policyHash: zeroHash, challengeDuration: 3600n, nonce: 1n },
      openedAt: 1n,
    };
    const sessionId = h("offline stream");
    const work = async (tranche: bigint) => {
      const repository = tranche === 2n ? BROKEN_REPOSITORY : REPOSITORY_BY_TRANCHE[Number(tranche) - 1]!;
      const tests = await claimsOf({ terms: TERMS, suite: SUITE, repository, inputs: streamInputs({ chainId: 31337n, gasEscrow: domain.verifyingContract, sessionId, tranche }) });
      return { repository, tests: tranche === 2n ? tests.map((t) => ({ ...t, outcome: "pass" as const })) : tests };
    };
    const node = new InProcessStreamProvider({ account: provider, domain, terms: TERMS, ref, sessionId, work, modelSnapshotId: "m" });
    const dbDir = mkdtempSync(path.join(os.tmpdir(), "ioi-stream-store-"));
    const store = SqliteStore.open(path.join(dbDir, "payer.db"));
    await store.putChannel({ sessionId, role: "payer", ref, pricing: TERMS, escrow: domain.verifyingContract, chainId: domain.chainId, deposit: 10n ** 18n, status: "open" });
    const flow = new FlowController({ terms: TERMS, ref, sessionId, domain, signer: payer, link: node, suite: SUITE, secretOf: (k) => h(`secret ${k}`), store });
    const pause = await flow.run(5n);
    expect(pause).to.deep.include({ reason: "false_claim", tranche: 2n });
    expect(flow.state.released).to.equal(2n);
    // The payer's store holds the stream like any channel: both tickets and receipts, the provider's newest commit,
    // and each tranche's request and proof as the step's result (their hashes are the receipt's).
    try {
      expect(store.latestTicket(sessionId)!.ticket.seq).to.equal(2n);
      expect(store.receiptCount(sessionId)).to.equal(2);
      expect(store.latestCommit(sessionId, "provider")!.commit.leafCount).to.equal(2n);
      const results = store.results(sessionId);
      const receipts = store.steps(sessionId).map((x) => x.receipt!.receipt);
      expect(results.map((r) => keccak256(stringToBytes(r.output)))).to.deep.equal(receipts.map((r) => r.outputHash));
      expect(results.map((r) => keccak256(stringToBytes(r.request)))).to.deep.equal(receipts.map((r) => r.offloadPacketHash));
      expect(pricingTermsToJson(store.getChannel(sessionId)!.pricing)).to.deep.equal(pricingTermsToJson(TERMS));
    } finally {
      await store.close();
      rmSync(dbDir, { recursive: true, force: true });
    }
    // A ticket the provider did not get a check for is never signed: the provider refuses a skipped or inflated one.
    const ticket3 = { sessionId, provider: provider.address, termsHash: termsHashOf(TERMS), seq: 4n, cumulativeAmount: 4n * tranchePriceOf(TERMS), receiptRoot: zeroHash };
    const skipped = await signPaymentTicket({ account: payer, domain, ticket: ticket3 });
    expect((await rejected(() => node.tranche({ ticket: skipped, request: { sessionId, tranche: 4n, sampleCommit: zeroHash } }))).name).to.equal("StreamTicketRefusedError");
    const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-stream-record-"));
    try {
      writeStreamRecord(dir, flow);
      const streams = listStreams(loadRecords(dir));
      expect(streams).to.have.length(1);
      expect(streams[0]).to.deep.include({ sessionId, released: "2", checked: "1" });
      expect(streams[0]!.paused).to.deep.include({ tranche: "2", reason: "false_claim" });
      expect(streams[0]!.events.map((e) => e.kind)).to.deep.equal(["ticket", "proof", "sample", "sample", "ticket", "proof", "sample", "sample", "pause"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the control API's milestones.check: the payer's spot-check over JSON — pass for an honest proof, false_claim for a lie, repository_changed for another repository, a v2 session refused", async () => {
    const escrow = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
    const sessionId = h("api stream");
    const repository = REPOSITORY_BY_TRANCHE[0]!;
    const tests = await claimsOf({ terms: TERMS, suite: SUITE, repository, inputs: streamInputs({ chainId: 31337n, gasEscrow: escrow, sessionId, tranche: 1n }) });
    const honest = await signProgressProof({ account: provider, proof: { ...PROOF, sessionId, repoStateHash: bundleHash(repository), tests } });
    const lie = await signProgressProof({ account: provider, proof: { ...PROOF, sessionId, repoStateHash: bundleHash(repository), tests: tests.map((t) => ({ ...t, outcome: "pass" as const })) } });
    // The runtime a method runs against: the deployment (chain, escrow) and the stored channel's terms.
    const runtime = (pricing: unknown) =>
      ({ requireChannel: () => ({ pricing }), context: { deployment: { chainId: 31337, contracts: { GasEscrow: escrow } } } }) as never;
    const call = (proof: typeof honest, repo = repository, pricing: unknown = { ...TERMS, stream: { ...TERMS.stream, samplesPerTranche: 12 } }) =>
      METHODS["milestones.check"]!.run(runtime(pricing), { sessionId, proof: signedProgressProofToJson(proof), secret: h("s"), suite: SUITE, repository: repo }, {}) as Promise<{ outcome: string; samples: unknown[] }>;
    expect((await call(honest)).outcome).to.equal("pass");
    expect((await call(honest)).samples).to.have.length(12);
    expect((await call(lie)).outcome).to.equal("false_claim");
    expect((await call(honest, BROKEN_REPOSITORY)).outcome).to.equal("repository_changed");
    expect((await rejected(() => call(honest, repository, pricingTermsFromJson(JSON.parse(readFileSync(path.join(__dirname, "..", "..", "examples", "documents", "metered.terms.json"), "utf8")))))).message).to.match(/version 2 terms/);
  });

  it("a provider that throws or refuses never crashes the Flow Controller: it pauses (no_answer) after the one ticket in flight", async () => {
    const payer = hardhatAccount(ROLE.payer);
    const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
    const ref = {
      terms: { payer: payer.address, provider: provider.address, funder: payer.address, asset: zeroAddress, termsHash: termsHashOf(TERMS), policyHash: zeroHash, challengeDuration: 3600n, nonce: 1n },
      openedAt: 1n,
    };
    const link = {
      tranche: async () => {
        throw new Error("connection reset by peer");
      },
      sample: async () => null,
    };
    const flow = new FlowController({ terms: TERMS, ref, sessionId: h("throwing provider"), domain, signer: payer, link, suite: SUITE });
    const pause = await flow.run(3n);
    expect(pause.reason).to.equal("no_answer");
    expect(pause.detail).to.match(/connection reset by peer/);
    expect(flow.state.released).to.equal(1n);
    expect(flow.events.map((e) => e.kind)).to.deep.equal(["ticket", "pause"]);
  });
});
