import hre from "hardhat";
import { expect } from "chai";
import {
  concat,
  encodeAbiParameters,
  getAddress,
  keccak256,
  recoverTypedDataAddress,
  stringToBytes,
  type Hex,
} from "viem";

import { canon } from "../../channel-client/core/canonical";
import { toHighS } from "../../channel-client/core/eip712";
import { runObjectiveChecks } from "../../arbitration/lanes/checks";
import { icsFromJson, penaltyFor } from "../../arbitration/documents/ics";
import { packageFromJson, packageHash } from "../../arbitration/documents/package";
import {
  disputeManagerDomain,
  RESOLUTION_TYPES,
  resolutionDigest,
  resolutionFromJson,
  resolutionHash,
  resolutionMessage,
  resolutionToJson,
  signResolution,
  verifyResolutionSignature,
  type Resolution,
} from "../../arbitration/lanes/resolution";
import { hardhatAccount, ROLE } from "../helpers/fixtures";
import { deployDisputeManager, DISPUTE_PARAMS } from "../helpers/system";
import { rejection, thrown } from "../helpers/assert";
import { BAD_DELIVERABLE, h, mutable, sampleIcsJson, samplePackageJson, SUITE } from "./fixtures/samples";

const arbitrator = hardhatAccount(ROLE.disputes);
const DM = getAddress("0x5fbdb2315678afecb367f032d93f642f64180aa3");
const domain = disputeManagerDomain(31337n, DM);

/** A provider-fault resolution of the sample package, with real Lane 1 results (3 of 12 failing). */
async function sampleResolution(): Promise<Resolution> {
  const p = packageFromJson(samplePackageJson(BAD_DELIVERABLE));
  const ics = icsFromJson(sampleIcsJson());
  const lane1 = await runObjectiveChecks({ ics, suite: SUITE, deliverable: BAD_DELIVERABLE, inputs: { clockMs: 1_700_000_000_000, seed: `0x${"00".repeat(32)}` } });
  const { refund, slash } = penaltyFor(ics, lane1.failedTests, 10n ** 18n);
  return {
    schema: "ioi.resolution/1",
    caseId: p.caseId,
    chainId: p.chainId,
    disputeManager: p.disputeManager,
    packageHash: packageHash(p),
    graphId: p.graphId,
    stepId: p.stepId,
    policyHash: p.policyHash,
    policyVersion: p.policyVersion,
    rubricVersion: p.rubricVersion,
    modelSnapshotId: p.modelSnapshotId,
    judgeRuntimeHash: h("judge runtime"),
    evidence: p.evidence.map((e) => ({ artifactId: e.artifactId, kind: e.kind, merkleProof: e.kind === "receipt" ? e.content.merkleProof : [] })),
    lane0: { passed: true, checks: [{ name: "ics_hash", status: "pass", detail: null }] },
    objectiveChecks: lane1.checks,
    replays: lane1.replays,
    claims: p.claims.map((c) => ({ ...c, prosecutor: null, defender: null, resolver: null })),
    aggregate: { finalVerdict: "provider_fault", aggregateConfidence: 1, unresolved: false, reasonCodes: [] },
    remedy: { verdict: 1, refund, slash },
  };
}

describe("arbitration/resolution", function () {
  this.timeout(60_000);
  let sample: Resolution;
  before(async () => {
    sample = await sampleResolution();
  });

  describe("document", () => {
    it("has the A.4 shape in snake_case, amounts as decimal strings", () => {
      const json = resolutionToJson(sample);
      expect(Object.keys(json)).to.deep.equal([
        "schema",
        "case_id",
        "chain_id",
        "dispute_manager",
        "package_hash",
        "graph_id",
        "step_id",
        "policy_hash",
        "policy_version",
        "rubric_version",
        "model_snapshot_id",
        "judge_runtime_hash",
        "evidence",
        "lane0",
        "objective_checks",
        "replays",
        "claims",
        "aggregate",
        "remedy",
      ]);
      expect(json.remedy).to.deep.equal({ verdict: 1, refund: "350000000000000000", slash: "1300" });
      expect(json.objective_checks[0]).to.include({ name: "passes_tests", status: false, detail: "3 of 12 tests failed: add_big, add_one, mul_neg" });
      expect(json.evidence.find((e) => e.kind === "receipt")!.merkle_proof).to.deep.equal([h("sibling")]);
      expect(json.claims[0]).to.include({ prosecutor: null, defender: null, resolver: null });
      expect(json.dispute_manager).to.equal(DM.toLowerCase());
    });

    it("round-trips and hashes the canonical JSON (TypeScript or JSON form)", () => {
      const json = resolutionToJson(sample);
      const parsed = resolutionFromJson(JSON.parse(canon(json)));
      expect(parsed).to.deep.equal(sample);
      expect(resolutionHash(sample)).to.equal(keccak256(stringToBytes(canon(json))));
      expect(resolutionHash(json)).to.equal(resolutionHash(sample));
    });

    it("accepts each verdict with a remedy the contract allows", () => {
      const json = mutable(resolutionToJson(sample));
      const variants: Array<[string, number, string, string, string[]]> = [
        ["challenger_fault", 2, "0", "0", []],
        ["no_fault", 3, "900", "0", ["UNSERVICEABLE"]],
        ["undecidable", 4, "0", "0", ["REPLAY_TIMEOUT", "SANDBOX_UNAVAILABLE"]],
      ];
      for (const [verdict, code, refund, slash, reasons] of variants) {
        const undecidable = verdict === "undecidable";
        json.aggregate = { final_verdict: verdict, aggregate_confidence: undecidable ? 0 : 1, unresolved: undecidable, reason_codes: reasons };
        json.remedy = { verdict: code, refund, slash };
        expect(resolutionFromJson(json).remedy.verdict).to.equal(code);
      }
    });

    describe("rejects", () => {
      type Edit = (j: Record<string, any>) => void;
      const cases: Array<[string, Edit, string, string]> = [
        ["a wrong schema", (j) => (j.schema = "ioi.resolution/2"), "InvalidFieldError", "Resolution.schema"],
        ["an unknown field", (j) => (j.resolution_hash = h("x")), "UnknownFieldError", "Resolution.resolution_hash"],
        ["a missing judge runtime hash", (j) => delete j.judge_runtime_hash, "InvalidFieldError", "Resolution.judge_runtime_hash"],
        ["a proof on non-receipt evidence", (j) => (j.evidence[0].merkle_proof = [h("x")]), "InvalidResolutionError", "Resolution.evidence[0].merkle_proof"],
        ["an unknown evidence kind", (j) => (j.evidence[0].kind = "video"), "InvalidFieldError", "Resolution.evidence[0].kind"],
        ["duplicate evidence", (j) => j.evidence.push(j.evidence[0]), "InvalidResolutionError", "Resolution.evidence[5].artifact_id"],
        ["a claim citing unlisted evidence", (j) => (j.claims[0].evidence_refs = [h("elsewhere")]), "InvalidResolutionError", "Resolution.claims[0].evidence_refs[0]"],
        ["a Lane 2 verdict", (j) => (j.claims[0].resolver = { verdict: true, confidence: 0.99 }), "InvalidFieldError", "Resolution.claims[0].resolver"],
        ["lane0 passed with a failing check", (j) => (j.lane0.checks[0].status = "fail"), "InvalidResolutionError", "Resolution.lane0.passed"],
        ["an unknown lane0 status", (j) => (j.lane0.checks[0].status = "skipped"), "InvalidFieldError", "Resolution.lane0.checks[0].status"],
        ["an empty detail", (j) => (j.objective_checks[0].detail = ""), "InvalidFieldError", "Resolution.objective_checks[0].detail"],
        ["a check status as a string", (j) => (j.objective_checks[0].status = "fail"), "InvalidFieldError", "Resolution.objective_checks[0].status"],
        ["a check hash that is not 32 bytes", (j) => (j.objective_checks[0].hash = "0x12"), "InvalidFieldError", "Resolution.objective_checks[0].hash"],
        ["a tampered replay record", (j) => (j.replays[0].result.exit_code = 0), "InvalidUpipError", "Resolution.replays[0]"],
        ["an unknown final verdict", (j) => (j.aggregate.final_verdict = "guilty"), "InvalidFieldError", "Resolution.aggregate.final_verdict"],
        ["a fractional confidence", (j) => (j.aggregate.aggregate_confidence = 0.97), "InvalidFieldError", "Resolution.aggregate.aggregate_confidence"],
        ["unresolved but decided", (j) => (j.aggregate.unresolved = true), "InvalidResolutionError", "Resolution.aggregate.unresolved"],
        ["zero confidence but decided", (j) => (j.aggregate.aggregate_confidence = 0), "InvalidResolutionError", "Resolution.aggregate.aggregate_confidence"],
        ["unsorted reason codes", (j) => (j.aggregate.reason_codes = ["B", "A"]), "InvalidResolutionError", "Resolution.aggregate.reason_codes"],
        ["repeated reason codes", (j) => (j.aggregate.reason_codes = ["A", "A"]), "InvalidResolutionError", "Resolution.aggregate.reason_codes"],
        ["a lowercase reason code", (j) => (j.aggregate.reason_codes = ["timeout"]), "InvalidFieldError", "Resolution.aggregate.reason_codes[0]"],
        ["a verdict code that disagrees", (j) => (j.remedy.verdict = 2), "InvalidResolutionError", "Resolution.remedy.verdict"],
        ["verdict code 0", (j) => (j.remedy.verdict = 0), "InvalidFieldError", "Resolution.remedy.verdict"],
        ["a refund as a number", (j) => (j.remedy.refund = 1), "AmountAsNumberError", "Resolution.remedy.refund"],
        ["a slash over uint128", (j) => (j.remedy.slash = (1n << 128n).toString()), "InvalidFieldError", "Resolution.remedy.slash"],
        [
          "a slash without provider fault",
          (j) => {
            j.aggregate.final_verdict = "no_fault";
            j.remedy = { verdict: 3, refund: "1", slash: "1" };
          },
          "InvalidResolutionError",
          "Resolution.remedy.slash",
        ],
        [
          "a refund when the challenger is at fault",
          (j) => {
            j.aggregate.final_verdict = "challenger_fault";
            j.remedy = { verdict: 2, refund: "1", slash: "0" };
          },
          "InvalidResolutionError",
          "Resolution.remedy.refund",
        ],
        // Limits the published schema states (and the parser no longer restates).
        ["65 evidence items", (j) => (j.evidence = Array.from({ length: 65 }, () => j.evidence[0])), "InvalidFieldError", "Resolution.evidence must be an array of at most 64 items"],
        ["17 claims", (j) => (j.claims = Array.from({ length: 17 }, () => j.claims[0])), "InvalidFieldError", "Resolution.claims must be an array of at most 16 items"],
        ["a claim description of 4097 characters", (j) => (j.claims[0].description = "x".repeat(4097)), "InvalidFieldError", "Resolution.claims[0].description must be a string of at most 4096 characters"],
        ["a receipt proof of 65 nodes", (j) => (j.evidence[0].merkle_proof = Array.from({ length: 65 }, () => j.evidence[0].artifact_id)), "InvalidFieldError", "Resolution.evidence[0].merkle_proof must be an array of at most 64 items"],
      ];
      for (const [label, edit, name, where] of cases) {
        it(label, () => {
          const j = mutable(resolutionToJson(sample));
          edit(j);
          const err = thrown(() => resolutionFromJson(j));
          expect(err.name, err.message).to.equal(name);
          expect(err.message).to.contain(where);
        });
      }
    });
  });

  describe("EIP-712 remedy", () => {
    it("defines exactly the contract's types and domain", () => {
      expect(RESOLUTION_TYPES).to.deep.equal({
        Resolution: [
          { name: "caseId", type: "bytes32" },
          { name: "verdict", type: "uint8" },
          { name: "refund", type: "uint128" },
          { name: "slash", type: "uint128" },
          { name: "resolutionHash", type: "bytes32" },
        ],
      });
      expect(domain).to.deep.equal({ name: "IOI DisputeManager", version: "1", chainId: 31337n, verifyingContract: DM });
    });

    it("digests as hand-encoded EIP-712 (known answer)", () => {
      const message = resolutionMessage(sample);
      const typeHash = keccak256(stringToBytes("Resolution(bytes32 caseId,uint8 verdict,uint128 refund,uint128 slash,bytes32 resolutionHash)"));
      const domainTypeHash = keccak256(stringToBytes("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"));
      const separator = keccak256(
        encodeAbiParameters(
          [{ type: "bytes32" }, { type: "bytes32" }, { type: "bytes32" }, { type: "uint256" }, { type: "address" }],
          [domainTypeHash, keccak256(stringToBytes("IOI DisputeManager")), keccak256(stringToBytes("1")), 31337n, DM],
        ),
      );
      const structHash = keccak256(
        encodeAbiParameters(
          [{ type: "bytes32" }, { type: "bytes32" }, { type: "uint8" }, { type: "uint128" }, { type: "uint128" }, { type: "bytes32" }],
          [typeHash, message.caseId, message.verdict, message.refund, message.slash, message.resolutionHash],
        ),
      );
      expect(resolutionDigest(domain, message)).to.equal(keccak256(concat(["0x1901", separator, structHash])));
      expect(message.resolutionHash).to.equal(resolutionHash(sample));
    });

    it("equals the deployed DisputeManager's hashResolution", async () => {
      const [governance] = await hre.viem.getWalletClients();
      const placeholder = (n: number) => getAddress(`0x${n.toString(16).padStart(40, "0")}`);
      // Linked to its libraries as scripts/deploy.ts links it; the escrows, registry and randomness are never called.
      const disputes = await deployDisputeManager([
        governance!.account.address,
        placeholder(1),
        placeholder(2),
        placeholder(3),
        placeholder(4),
        DISPUTE_PARAMS,
      ]);
      const chainId = BigInt(await (await hre.viem.getPublicClient()).getChainId());
      const onChainDomain = disputeManagerDomain(chainId, getAddress(disputes.address));
      const message = resolutionMessage(sample);
      expect(await disputes.read.hashResolution([message])).to.equal(resolutionDigest(onChainDomain, message));
    });

    it("signs a 65-byte low-s signature that recovers to the arbitrator, equal to signTypedData's", async () => {
      const message = resolutionMessage(sample);
      const signature = await signResolution(arbitrator, domain, message);
      expect(signature).to.match(/^0x[0-9a-f]{130}$/);
      expect(signature).to.equal(await arbitrator.signTypedData({ domain, types: RESOLUTION_TYPES, primaryType: "Resolution", message }));
      expect(await recoverTypedDataAddress({ domain, types: RESOLUTION_TYPES, primaryType: "Resolution", message, signature })).to.equal(
        arbitrator.address,
      );
      await verifyResolutionSignature(domain, message, signature, arbitrator.address);
    });

    it("refuses a signature over another message, domain or signer, and the high-s twin", async () => {
      const message = resolutionMessage(sample);
      const signature = await signResolution(arbitrator, domain, message);
      const stranger = hardhatAccount(ROLE.stranger).address;
      for (const attempt of [
        verifyResolutionSignature(domain, { ...message, refund: message.refund + 1n }, signature, arbitrator.address),
        verifyResolutionSignature(disputeManagerDomain(1n, DM), message, signature, arbitrator.address),
        verifyResolutionSignature(domain, message, signature, stranger),
        verifyResolutionSignature(domain, message, toHighS(signature), arbitrator.address),
      ]) {
        expect((await rejection(attempt)).name).to.equal("InvalidSignatureError");
      }
    });

    it("refuses to digest out-of-range fields", () => {
      const message = resolutionMessage(sample);
      expect(thrown(() => resolutionDigest(domain, { ...message, refund: 1n << 128n })).name).to.equal("InvalidFieldError");
      expect(thrown(() => resolutionDigest(domain, { ...message, slash: -1n })).name).to.equal("InvalidFieldError");
      expect(thrown(() => resolutionDigest(domain, { ...message, verdict: 5 as 1 })).name).to.equal("InvalidFieldError");
      expect(thrown(() => resolutionDigest(domain, { ...message, caseId: "0x12" as Hex })).name).to.equal("InvalidFieldError");
    });
  });
});
