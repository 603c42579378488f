import { expect } from "chai";
import { keccak256, stringToBytes, type Hex } from "viem";

import { artifactId, canon } from "../../channel-client/core/canonical";
import { bundleHash } from "../../arbitration/documents/bundle";
import { icsHash } from "../../arbitration/documents/ics";
import {
  evidenceById,
  evidenceOfKind,
  makeEvidence,
  packageFromJson,
  packageHash,
  packageToJson,
  parsePackage,
  soleEvidence,
} from "../../arbitration/documents/package";
import { thrown } from "../helpers/assert";
import { BAD_DELIVERABLE, h, mutable, samplePackageJson, SUITE } from "./fixtures/samples";

const json = () => mutable(samplePackageJson());

describe("arbitration/package", () => {
  it("round-trips through JSON exactly, and hashes the canonical JSON", () => {
    const original = samplePackageJson();
    const p = packageFromJson(original);
    expect(canon(packageToJson(p))).to.equal(canon(original));
    expect(packageHash(p)).to.equal(keccak256(stringToBytes(canon(original))));
    expect(p.subject).to.deep.equal({ kind: "gig", gigEscrow: "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512", gigId: 1n });
    expect(p.chainId).to.equal(31337n);
    expect(p.lane).to.equal(1);
  });

  it("parses text in either format", () => {
    const text = JSON.stringify(samplePackageJson());
    expect(packageHash(parsePackage(text))).to.equal(packageHash(packageFromJson(samplePackageJson())));
    expect(packageHash(parsePackage(new TextEncoder().encode(text), "json"))).to.equal(packageHash(parsePackage(text)));
    expect(thrown(() => parsePackage("schema: nope\n", "yaml")).name).to.equal("InvalidFieldError");
  });

  it("binds evidence by artifact id: a bundle's id is its bundleHash, the ICS's is its icsHash", () => {
    const p = packageFromJson(samplePackageJson());
    const [ics] = evidenceOfKind(p, "ics");
    const [suite] = evidenceOfKind(p, "test_suite");
    const [deliverable] = evidenceOfKind(p, "deliverable");
    expect(ics!.artifactId).to.equal(icsHash(ics!.content));
    expect(suite!.artifactId).to.equal(bundleHash(SUITE));
    expect(deliverable!.artifactId).to.equal(bundleHash(BAD_DELIVERABLE));
    expect(evidenceById(p, suite!.artifactId)).to.equal(suite);
    expect(evidenceById(p, h("nothing"))).to.equal(undefined);
    expect(soleEvidence(p, "receipt")!.content.leafIndex).to.equal(0n);
    expect(evidenceOfKind(p, "channel")[0]!.content.closing.deposit).to.equal(5000n);
  });

  it("soleEvidence returns null for none and refuses several", () => {
    const p = packageFromJson(samplePackageJson());
    expect(soleEvidence({ ...p, evidence: p.evidence.filter((e) => e.kind !== "receipt") }, "receipt")).to.equal(null);
    const second = makeEvidence("deliverable", { files: { "other.js": "" } });
    const err = thrown(() => soleEvidence({ ...p, evidence: [...p.evidence, second] }, "deliverable"));
    expect(err.name).to.equal("InvalidPackageError");
  });

  it("accepts a session subject", () => {
    const j = json();
    j.subject = { kind: "session", gas_escrow: "0x5fbdb2315678afecb367f032d93f642f64180aa3", session_id: h("session"), seq: "7" };
    const p = packageFromJson(j);
    expect(p.subject).to.deep.equal({ kind: "session", gasEscrow: "0x5FbDB2315678afecb367f032d93F642f64180aa3", sessionId: h("session"), seq: 7n });
    expect(canon(packageToJson(p))).to.equal(canon(j));
  });

  describe("rejects", () => {
    type Edit = (j: Record<string, any>) => void;
    const cases: Array<[string, Edit, string, string]> = [
      ["a wrong schema", (j) => (j.schema = "ioi.challenge_package/2"), "InvalidFieldError", "ChallengePackage.schema"],
      ["an unknown field", (j) => (j.note = "x"), "UnknownFieldError", "ChallengePackage.note"],
      ["a missing case_id", (j) => delete j.case_id, "InvalidFieldError", "ChallengePackage.case_id"],
      ["chain_id as a number", (j) => (j.chain_id = 31337), "AmountAsNumberError", "ChallengePackage.chain_id"],
      ["a checksummed dispute_manager", (j) => (j.dispute_manager = "0x5FbDB2315678afecb367f032d93F642f64180aa3"), "InvalidFieldError", "ChallengePackage.dispute_manager"],
      ["an unknown subject kind", (j) => (j.subject.kind = "job"), "InvalidFieldError", "ChallengePackage.subject.kind"],
      ["a subject that is not an object", (j) => (j.subject = null), "InvalidFieldError", "ChallengePackage.subject must be a subject object"],
      ["a gig subject with a session field", (j) => (j.subject.seq = "1"), "UnknownFieldError", "ChallengePackage.subject.seq"],
      ["a gig_id over uint64", (j) => (j.subject.gig_id = (1n << 64n).toString()), "InvalidFieldError", "ChallengePackage.subject.gig_id"],
      ["lane 2", (j) => (j.lane = 2), "InvalidFieldError", "ChallengePackage.lane"],
      ["lane as a string", (j) => (j.lane = "1"), "InvalidFieldError", "ChallengePackage.lane"],
      ["a negative policy_version", (j) => (j.policy_version = -1), "InvalidFieldError", "ChallengePackage.policy_version"],
      ["a short model_snapshot_id", (j) => (j.model_snapshot_id = "0x1234"), "InvalidFieldError", "ChallengePackage.model_snapshot_id"],
      ["no claims", (j) => (j.claims = []), "InvalidFieldError", "ChallengePackage.claims"],
      ["17 claims", (j) => (j.claims = Array.from({ length: 17 }, (_, i) => ({ ...j.claims[0], claim_id: `c${i}` }))), "InvalidFieldError", "ChallengePackage.claims"],
      ["a duplicate claim id", (j) => j.claims.push({ ...j.claims[0] }), "InvalidPackageError", "ChallengePackage.claims[1].claim_id"],
      ["a claim citing missing evidence", (j) => j.claims[0].evidence_refs.push(h("missing")), "InvalidPackageError", "ChallengePackage.claims[0].evidence_refs[3]"],
      ["a claim citing evidence twice", (j) => j.claims[0].evidence_refs.push(j.claims[0].evidence_refs[0]), "InvalidPackageError", "ChallengePackage.claims[0].evidence_refs[3]"],
      ["objective_fallback as a string", (j) => (j.claims[0].objective_fallback = "true"), "InvalidFieldError", "ChallengePackage.claims[0].objective_fallback"],
      ["no evidence", (j) => (j.evidence = []), "InvalidFieldError", "ChallengePackage.evidence"],
      ["an unknown evidence kind", (j) => (j.evidence[0].kind = "video"), "InvalidFieldError", "ChallengePackage.evidence[0].kind"],
      ["an evidence item that is not an object", (j) => (j.evidence[0] = "ics"), "InvalidFieldError", "ChallengePackage.evidence[0] must be an evidence object"],
      ["duplicate evidence", (j) => j.evidence.push(j.evidence[1]), "InvalidPackageError", "ChallengePackage.evidence[5].artifact_id"],
      ["a tampered ICS", (j) => (j.evidence[0].content.max_price = "1"), "ArtifactIdMismatchError", "ChallengePackage.evidence[0]"],
      ["a tampered test suite", (j) => (j.evidence[1].content.files["run.js"] += "\n"), "ArtifactIdMismatchError", "ChallengePackage.evidence[1]"],
      ["a tampered deliverable", (j) => (j.evidence[2].content.files["math.js"] = "x"), "ArtifactIdMismatchError", "ChallengePackage.evidence[2]"],
      ["a tampered receipt", (j) => (j.evidence[3].content.leaf_index = "1"), "ArtifactIdMismatchError", "ChallengePackage.evidence[3]"],
      ["a tampered channel", (j) => (j.evidence[4].content.closing.amount = "2000"), "ArtifactIdMismatchError", "ChallengePackage.evidence[4]"],
      ["an invalid ICS", (j) => (j.evidence[0].content.ics_version = 2), "InvalidFieldError", "ChallengePackage.evidence[0].content.ics_version"],
      ["an invalid bundle", (j) => (j.evidence[2].content.files = { "../x": "" }), "InvalidFieldError", "ChallengePackage.evidence[2].content.files"],
      ["a receipt with a malformed signature", (j) => (j.evidence[3].content.receipt.signature = "0x12"), "InvalidFieldError", "ChallengePackage.evidence[3].content.receipt.signature"],
      ["a ticket with an amount as a number", (j) => (j.evidence[3].content.ticket.ticket.cumulativeAmount = 1000), "AmountAsNumberError", "ChallengePackage.evidence[3].content.ticket.ticket.cumulativeAmount"],
      ["a proof of 65 nodes", (j) => (j.evidence[3].content.merkle_proof = Array.from({ length: 65 }, () => h("x"))), "InvalidFieldError", "ChallengePackage.evidence[3].content.merkle_proof"],
      ["a channel with fee_bps over 10000", (j) => (j.evidence[4].content.closing.fee_bps = 10_001), "InvalidFieldError", "ChallengePackage.evidence[4].content.closing.fee_bps"],
      ["a channel with bad pricing", (j) => (j.evidence[4].content.pricing.unit = "token"), "InvalidFieldError", "ChallengePackage.evidence[4].content.pricing.unit"],
      ["a channel ref with an unknown field", (j) => (j.evidence[4].content.ref.extra = 1), "UnknownFieldError", "ChallengePackage.evidence[4].content.ref.extra"],
    ];
    for (const [label, edit, name, where] of cases) {
      it(label, () => {
        const j = json();
        edit(j);
        const err = thrown(() => packageFromJson(j));
        expect(err.name, err.message).to.equal(name);
        expect(err.message).to.contain(where);
      });
    }

    it("an artifact_id that names other evidence", () => {
      const j = json();
      const other = j.evidence[1].artifact_id as Hex;
      j.evidence[2].artifact_id = other;
      const err = thrown(() => packageFromJson(j));
      expect(err.name).to.equal("ArtifactIdMismatchError");
      expect(err.message).to.contain(artifactId(j.evidence[2].content));
    });
  });
});
