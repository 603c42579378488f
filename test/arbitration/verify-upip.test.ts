/**
 * `ioi arbitrate --verify-upip FILE` driven through `main()` (offline): a real Lane 1 replay's record of the
 * Appendix A.4 case reproduces bit for bit from two directories or from the case's package; records whose
 * result or engine differ (with consistent hashes) are reported as mismatches naming the fields, exit 3;
 * bad input is refused in one sentence.
 */
import { expect } from "chai";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAddress, keccak256, stringToBytes, zeroAddress, zeroHash } from "viem";

import type { Bundle } from "../../arbitration/documents/bundle";
import { buildGigPackage } from "../../arbitration/runner/build";
import { runObjectiveChecks } from "../../arbitration/lanes/checks";
import { packageToJson } from "../../arbitration/documents/package";
import { DEFAULT_INPUTS } from "../../arbitration/lanes/pinned";
import { upipDeps, upipRecord, type UpipRecord } from "../../arbitration/documents/upip";
import { MISMATCH_EXIT_CODE, upipRecordsOf, verifyUpipRecord } from "../../channel-client/cli/verify-upip";
import { canon } from "../../channel-client/core/canonical";
import { bundleHash } from "../../arbitration/documents/bundle";
import { claimsOf, sampledTestOf, sampleIntent, spotCheck, streamInputs } from "../../arbitration/lanes/stream-sample";
import type { ProgressProof } from "../../channel-client/core/progress-proof";
import { BROKEN_REPOSITORY, codeStreamTerms } from "../../scripts/examples/code-stream";
import { codeGigIcs, FAILING_DELIVERABLE, PASSING_DELIVERABLE, SUITE } from "../../scripts/examples/code-gig";
import { rejection, thrown } from "../helpers/assert";
import { runCli } from "../helpers/cli";

const ICS = codeGigIcs({ asset: zeroAddress, maxPrice: 10n ** 18n, deadline: 1_900_000_000n });

/** The record Lane 1 puts in the resolution of the A.4 case (its first replay under the pinned inputs). */
async function a4Record(): Promise<UpipRecord> {
  const lane1 = await runObjectiveChecks({ ics: ICS, suite: SUITE, deliverable: FAILING_DELIVERABLE, inputs: DEFAULT_INPUTS });
  expect(lane1.replays).to.have.length(1);
  return lane1.replays[0]!;
}

/** `record` with some layers replaced and every hash recomputed, so that it parses and only differs. */
function edited(record: UpipRecord, edit: (layers: Pick<UpipRecord, "state" | "deps" | "process" | "result">) => void): UpipRecord {
  const layers = JSON.parse(canon({ state: record.state, deps: record.deps, process: record.process, result: record.result })) as Pick<UpipRecord, "state" | "deps" | "process" | "result">;
  edit(layers);
  return upipRecord(layers);
}

describe("ioi arbitrate --verify-upip", function () {
  this.timeout(120_000);

  let dir: string;
  let record: UpipRecord;
  let suiteDir: string;
  let deliverableDir: string;
  let packageFile: string;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-upip-"));
    record = await a4Record();
    suiteDir = write("suite", SUITE);
    deliverableDir = write("deliverable", FAILING_DELIVERABLE);
    packageFile = path.join(dir, "package.json");
    const pkg = buildGigPackage({
      caseId: keccak256(stringToBytes("case")),
      chainId: 31337n,
      disputeManager: getAddress("0x0000000000000000000000000000000000000d15"),
      challenger: getAddress("0x00000000000000000000000000000000000c11e7"),
      lane: 1,
      gigEscrow: getAddress("0x0000000000000000000000000000000000000616"),
      gigId: 1n,
      ics: ICS,
      suite: SUITE,
      deliverable: FAILING_DELIVERABLE,
    });
    writeFileSync(packageFile, canon(packageToJson(pkg)));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  function write(name: string, bundle: Bundle): string {
    const base = path.join(dir, name);
    for (const [file, content] of Object.entries(bundle.files)) {
      mkdirSync(path.dirname(path.join(base, file)), { recursive: true });
      writeFileSync(path.join(base, file), content);
    }
    return base;
  }

  function recordFile(name: string, value: unknown): string {
    const file = path.join(dir, name);
    writeFileSync(file, typeof value === "string" ? value : canon(value));
    return file;
  }

  const verify = (argv: string[]) => runCli(["arbitrate", "--verify-upip", ...argv, "--json"]);
  const jsonOf = (result: { out: string }) => JSON.parse(result.out.split("\n").pop()!) as Record<string, any>;

  it("documents --verify-upip and where the bundles come from in `ioi arbitrate --help`", async () => {
    const { code, out } = await runCli(["arbitrate", "--help"]);
    expect(code).to.equal(0);
    for (const text of ["--verify-upip FILE", "--suite-dir DIR", "--deliverable-dir DIR", "test_suite and deliverable evidence", "exit status 3 on mismatch"]) {
      expect(out).to.contain(text);
    }
  });

  it("reproduces the A.4 record bit for bit from the two directories: match, exit status 0", async () => {
    const result = await verify([recordFile("a4.json", record), "--suite-dir", suiteDir, "--deliverable-dir", deliverableDir]);
    expect(result.code, result.err).to.equal(0);
    expect(jsonOf(result)).to.deep.equal({
      ok: true,
      match: true,
      records: [{ match: true, originalHash: record.stack_hash, reproducedHash: record.stack_hash, differences: [], failedTests: ["slug_repeat", "slug_symbols", "slug_trim"] }],
    });
    expect(result.out).to.contain(`UPIP record ${record.stack_hash}: match — reproduced bit for bit (3 of 12 tests failed (slug_repeat, slug_symbols, slug_trim))`);
  });

  it("finds the bundles in the case's package (--package)", async () => {
    const result = await verify([recordFile("a4-pkg.json", record), "--package", packageFile]);
    expect(result.code, result.err).to.equal(0);
    expect(jsonOf(result).match).to.equal(true);
  });

  it("reports a record whose result was changed (hashes consistent) as a mismatch naming the field, exit status 3", async () => {
    const forged = edited(record, (l) => {
      l.result.steps.deliverable += 1;
    });
    const result = await verify([recordFile("forged.json", forged), "--suite-dir", suiteDir, "--deliverable-dir", deliverableDir]);
    expect(result.code, result.err).to.equal(MISMATCH_EXIT_CODE);
    const json = jsonOf(result);
    expect(json.match).to.equal(false);
    expect(json.records[0]).to.deep.include({ match: false, originalHash: forged.stack_hash, reproducedHash: record.stack_hash, differences: ["result.steps.deliverable"] });
    expect(result.out).to.contain("MISMATCH").and.to.contain("differing fields: result.steps.deliverable");
  });

  it("re-runs a stream sample's record as it was made — the one sampled test its intent names (decision 0037): match; the same record naming another test does not reproduce", async () => {
    const terms = codeStreamTerms({ windowAfterSettlement: 86_400n });
    const inputs = streamInputs({ chainId: 31337n, gasEscrow: getAddress("0x0000000000000000000000000000000000000e5c"), sessionId: keccak256(stringToBytes("upip stream")), tranche: 2n });
    const honest = await claimsOf({ terms, suite: SUITE, repository: BROKEN_REPOSITORY, inputs });
    const proof: ProgressProof = {
      sessionId: keccak256(stringToBytes("upip stream")),
      tranche: 2n,
      repoStateHash: bundleHash(BROKEN_REPOSITORY),
      suiteHash: terms.stream.suite.hash,
      tests: honest.map((t) => ({ ...t, outcome: "pass" as const })), // the lie: every test claimed passing
      coverageDeltaBps: 0,
      lint: "clean",
      artifactHash: zeroHash,
      prevProofHash: zeroHash,
    };
    const checked = await spotCheck({ terms, suite: SUITE, repository: BROKEN_REPOSITORY, proof, indices: [4], inputs });
    const sample = checked.samples[0]!;
    expect(sample.status).to.equal("false");
    expect(sample.record.result.failed_tests).to.deep.equal([sample.name]); // only the sampled test ran
    expect(sampledTestOf(sample.record.process.intent)).to.equal(4);
    const brokenDir = write("broken", BROKEN_REPOSITORY);
    const result = await verify([recordFile("sample.json", sample.record), "--suite-dir", suiteDir, "--deliverable-dir", brokenDir]);
    expect(result.code, result.err).to.equal(0);
    expect(jsonOf(result).records).to.deep.equal([{ match: true, originalHash: sample.record.stack_hash, reproducedHash: sample.record.stack_hash, differences: [], failedTests: [sample.name] }]);
    // The record's intent changed to another test (hashes recomputed): that test is re-run, and the result differs.
    const other = edited(sample.record, (l) => {
      l.process.intent = sampleIntent(5, honest[5]!.name, 2n);
    });
    const mismatch = await verify([recordFile("sample-other.json", other), "--suite-dir", suiteDir, "--deliverable-dir", brokenDir]);
    expect(mismatch.code, mismatch.err).to.equal(MISMATCH_EXIT_CODE);
    expect(jsonOf(mismatch).records[0].differences).to.include("result.failed_tests");
    expect(jsonOf(mismatch).records[0].failedTests).to.deep.equal([honest[5]!.name]);
    expect(sampledTestOf("Lane 1 replay of the bound suite")).to.equal(undefined);
  });

  it("reports a record made by another engine as a mismatch in its deps", async () => {
    const other = edited(record, (l) => {
      l.deps = upipDeps({ engineSha256: "ab".repeat(32), harnessSha256: l.deps.harness_sha256, runner: l.deps.runner });
    });
    const outcome = await verifyUpipRecord({ record: other, suite: SUITE, deliverable: FAILING_DELIVERABLE });
    expect(outcome.match).to.equal(false);
    expect(outcome.differences).to.deep.equal(["deps.deps_hash", "deps.engine_sha256"]);
    expect(outcome.reproduced.stack_hash).to.equal(record.stack_hash);
  });

  it("verifies every record of a Resolution's replays (upipRecordsOf) and refuses a document that is neither", () => {
    expect(upipRecordsOf(JSON.parse(canon(record)))).to.deep.equal([record]);
    expect(thrown(() => upipRecordsOf({ something: 1 })).name).to.equal("InvalidUpipError");
    expect(thrown(() => upipRecordsOf([record])).name).to.equal("InvalidUpipError");
  });

  it("refuses bundles that are not the record's (BundleHashMismatchError), before replaying", async () => {
    const error = await rejection(verifyUpipRecord({ record, suite: SUITE, deliverable: PASSING_DELIVERABLE }));
    expect(error.name).to.equal("BundleHashMismatchError");
  });

  const refusals: [name: string, argv: () => string[], code: number, error: string, message: string][] = [
    ["a file that does not exist", () => [path.join(dir, "none.json"), "--package", packageFile], 2, "UsageError", "Cannot read --verify-upip"],
    ["a file that is not JSON or YAML", () => [recordFile("bad.json", "{ not json"), "--package", packageFile], 1, "InvalidJsonError", ""],
    ["a record whose layers were edited without its stack hash", () => [recordFile("edited.json", { ...record, result: { ...record.result, tests: 13 } }), "--package", packageFile], 1, "InvalidUpipError", "UpipRecord.stack_hash is"],
    ["no bundles", () => [recordFile("nobundles.json", record)], 2, "UsageError", "--verify-upip needs the record's bundles"],
    ["both --package and directories", () => [recordFile("both.json", record), "--package", packageFile, "--suite-dir", suiteDir], 2, "UsageError", "Give either --package FILE or --suite-dir DIR"],
    ["directories whose files are not the record's", () => [recordFile("wrong.json", record), "--suite-dir", suiteDir, "--deliverable-dir", suiteDir], 1, "BundleHashMismatchError", "the deliverable hashes to"],
  ];
  for (const [name, argv, code, error, message] of refusals) {
    it(`refuses ${name} with one sentence (exit status ${code})`, async () => {
      const result = await verify(argv());
      expect(result.code, result.err).to.equal(code);
      expect(result.err).to.contain(`— ${error}: `).and.to.contain(message);
      expect(result.err).not.to.match(/\n\s+at /);
      expect(jsonOf(result)).to.deep.include({ ok: false, error });
    });
  }
});
