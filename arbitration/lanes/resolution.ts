/**
 * The Resolution (whitepaper Appendix A.4): the deterministic arbitration artifact a case ends in, and the
 * on-chain remedy the DisputeManager applies, signed as EIP-712 `Resolution(caseId, verdict, refund,
 * slash, resolutionHash)` in the DisputeManager's domain.
 *
 * `resolutionHash = keccak256(canon(resolution JSON))`: arbitrators replaying the same package with the same
 * judge runtime reach byte-identical resolutions, so equal hashes are the panel's agreement.
 */
import { getAddress, hashTypedData, type Address, type Hex, type LocalAccount } from "viem";

import { artifactId } from "../../channel-client/core/canonical";
import { assertDigestSigner, signDigest } from "../../channel-client/core/eip712";
import { InvalidFieldError } from "../../channel-client/core/errors";
import { assertMatchesSchema } from "../../channel-client/core/schemas";
import { expectHash, expectUint, uintToJson } from "../../channel-client/core/validate";
import type { ObjectiveCheck } from "./checks";
import { InvalidResolutionError } from "../documents/errors";
import type { EvidenceKind } from "../documents/package";
import { upipFromJson, type UpipRecord } from "../documents/upip";

/** The `schema` tag of every resolution. */
export const RESOLUTION_SCHEMA = "ioi.resolution/1";

/** The aggregate verdicts, in on-chain code order. */
export const FINAL_VERDICTS = ["provider_fault", "challenger_fault", "no_fault", "undecidable"] as const;
export type FinalVerdict = (typeof FINAL_VERDICTS)[number];

/** On-chain verdict codes: 1 ChallengerWins, 2 RespondentWins, 3 NoFault, 4 Undecidable. */
export const VERDICT_CODES = { provider_fault: 1, challenger_fault: 2, no_fault: 3, undecidable: 4 } as const satisfies Record<
  FinalVerdict,
  number
>;
export type VerdictCode = (typeof VERDICT_CODES)[FinalVerdict];

export type Lane0Check = { name: string; status: "pass" | "fail" | "missing"; detail: string | null };

export type ResolutionEvidence = { artifactId: Hex; kind: EvidenceKind; merkleProof: Hex[] };

/** A claim as resolved; the Lane 2 phases stay null until Lane 2 exists. */
export type ResolutionClaim = {
  claimId: string;
  description: string;
  evidenceRefs: Hex[];
  objectiveFallback: boolean;
  prosecutor: null;
  defender: null;
  resolver: null;
};

export type Aggregate = {
  finalVerdict: FinalVerdict;
  aggregateConfidence: 0 | 1;
  unresolved: boolean;
  reasonCodes: string[];
};

export type Remedy = { verdict: VerdictCode; refund: bigint; slash: bigint };

/** A Resolution document (TypeScript form). */
export type Resolution = {
  schema: typeof RESOLUTION_SCHEMA;
  caseId: Hex;
  chainId: bigint;
  disputeManager: Address;
  packageHash: Hex;
  graphId: Hex;
  stepId: Hex;
  policyHash: Hex;
  policyVersion: number;
  rubricVersion: number;
  modelSnapshotId: Hex;
  judgeRuntimeHash: Hex;
  evidence: ResolutionEvidence[];
  lane0: { passed: boolean; checks: Lane0Check[] };
  objectiveChecks: ObjectiveCheck[];
  replays: UpipRecord[];
  claims: ResolutionClaim[];
  aggregate: Aggregate;
  remedy: Remedy;
};

/** The JSON form of a Resolution: snake_case, amounts as decimal strings. */
export type ResolutionJson = {
  schema: typeof RESOLUTION_SCHEMA;
  case_id: Hex;
  chain_id: string;
  dispute_manager: Hex;
  package_hash: Hex;
  graph_id: Hex;
  step_id: Hex;
  policy_hash: Hex;
  policy_version: number;
  rubric_version: number;
  model_snapshot_id: Hex;
  judge_runtime_hash: Hex;
  evidence: Array<{ artifact_id: Hex; kind: EvidenceKind; merkle_proof: Hex[] }>;
  lane0: { passed: boolean; checks: Lane0Check[] };
  objective_checks: ObjectiveCheck[];
  replays: UpipRecord[];
  claims: Array<{
    claim_id: string;
    description: string;
    evidence_refs: Hex[];
    objective_fallback: boolean;
    prosecutor: null;
    defender: null;
    resolver: null;
  }>;
  aggregate: { final_verdict: FinalVerdict; aggregate_confidence: 0 | 1; unresolved: boolean; reason_codes: string[] };
  remedy: { verdict: VerdictCode; refund: string; slash: string };
};

/** Limits of the resolution fields. */
export const RESOLUTION_LIMITS = {
  maxChecks: 64,
  /**
   * Lane 0 records up to about ten checks per receipt, and a package carries up to 64 evidence items
   * (`PACKAGE_LIMITS.maxEvidence`): a case over 40 receipts (issue 27 finding 6) records over 300.
   */
  maxLane0Checks: 1024,
  maxReplays: 8,
  maxReasonCodes: 32,
  maxNameLength: 128,
  maxDetailLength: 4096,
} as const;

const lower = (address: Address): Hex => address.toLowerCase() as Hex;

/** The JSON form of a resolution (what {@link resolutionHash} hashes). */
export function resolutionToJson(r: Resolution): ResolutionJson {
  return {
    schema: r.schema,
    case_id: r.caseId,
    chain_id: uintToJson(r.chainId),
    dispute_manager: lower(r.disputeManager),
    package_hash: r.packageHash,
    graph_id: r.graphId,
    step_id: r.stepId,
    policy_hash: r.policyHash,
    policy_version: r.policyVersion,
    rubric_version: r.rubricVersion,
    model_snapshot_id: r.modelSnapshotId,
    judge_runtime_hash: r.judgeRuntimeHash,
    evidence: r.evidence.map((e) => ({ artifact_id: e.artifactId, kind: e.kind, merkle_proof: [...e.merkleProof] })),
    lane0: { passed: r.lane0.passed, checks: r.lane0.checks.map((c) => ({ ...c })) },
    objective_checks: r.objectiveChecks.map((c) => ({ ...c })),
    replays: r.replays.map((record) => JSON.parse(JSON.stringify(record)) as UpipRecord),
    claims: r.claims.map((c) => ({
      claim_id: c.claimId,
      description: c.description,
      evidence_refs: [...c.evidenceRefs],
      objective_fallback: c.objectiveFallback,
      prosecutor: null,
      defender: null,
      resolver: null,
    })),
    aggregate: {
      final_verdict: r.aggregate.finalVerdict,
      aggregate_confidence: r.aggregate.aggregateConfidence,
      unresolved: r.aggregate.unresolved,
      reason_codes: [...r.aggregate.reasonCodes],
    },
    remedy: { verdict: r.remedy.verdict, refund: uintToJson(r.remedy.refund), slash: uintToJson(r.remedy.slash) },
  };
}

/**
 * Validates a resolution received from outside, so that one built elsewhere can be re-checked: its structure
 * against the published `schemas/resolution.schema.json` first (every field, type, pattern, enum and count
 * limit), then every UPIP record (hashes recomputed) and the rules a schema cannot state —
 * merkle proofs only for receipts, unique evidence, claims citing only listed evidence, `lane0.passed`
 * equal to all Lane 0 checks passing, sorted unique reason codes, `unresolved` and a zero confidence
 * exactly when undecidable, the remedy's verdict code matching the final verdict, no slash unless the
 * provider is at fault and no refund when the challenger is at fault or the case is undecidable.
 */
export function resolutionFromJson(value: unknown, path = "Resolution"): Resolution {
  assertMatchesSchema("resolution", value, path);
  const o = value as ResolutionJson;
  const ids = new Set<Hex>();
  const evidence = o.evidence.map((item, i): ResolutionEvidence => {
    const where = `${path}.evidence[${i}]`;
    if (item.kind !== "receipt" && item.merkle_proof.length > 0) {
      throw new InvalidResolutionError(`${where}.merkle_proof`, `must be empty for evidence of kind ${item.kind}; only receipts carry proofs.`);
    }
    if (ids.has(item.artifact_id)) throw new InvalidResolutionError(`${where}.artifact_id`, `repeats ${item.artifact_id}.`);
    ids.add(item.artifact_id);
    return { artifactId: item.artifact_id, kind: item.kind, merkleProof: [...item.merkle_proof] };
  });

  const lane0 = { passed: o.lane0.passed, checks: o.lane0.checks.map((c) => ({ ...c })) };
  if (lane0.passed !== lane0.checks.every((c) => c.status === "pass")) {
    throw new InvalidResolutionError(`${path}.lane0.passed`, "must be true exactly when every Lane 0 check has status \"pass\".");
  }

  const claims = o.claims.map((c, i): ResolutionClaim => {
    c.evidence_refs.forEach((ref, j) => {
      if (!ids.has(ref)) throw new InvalidResolutionError(`${path}.claims[${i}].evidence_refs[${j}]`, `names ${ref}, which is not in the evidence list.`);
    });
    return { claimId: c.claim_id, description: c.description, evidenceRefs: [...c.evidence_refs], objectiveFallback: c.objective_fallback, prosecutor: null, defender: null, resolver: null };
  });

  const aggregate = aggregateFromJson(o.aggregate, `${path}.aggregate`);
  const remedy: Remedy = {
    verdict: o.remedy.verdict,
    refund: expectUint(o.remedy.refund, `${path}.remedy.refund`, 128),
    slash: expectUint(o.remedy.slash, `${path}.remedy.slash`, 128),
  };
  assertRemedyMatches(aggregate, remedy, path);

  return {
    schema: o.schema,
    caseId: o.case_id,
    chainId: expectUint(o.chain_id, `${path}.chain_id`, 64),
    disputeManager: getAddress(o.dispute_manager),
    packageHash: o.package_hash,
    graphId: o.graph_id,
    stepId: o.step_id,
    policyHash: o.policy_hash,
    policyVersion: o.policy_version,
    rubricVersion: o.rubric_version,
    modelSnapshotId: o.model_snapshot_id,
    judgeRuntimeHash: o.judge_runtime_hash,
    evidence,
    lane0,
    objectiveChecks: o.objective_checks.map((c) => ({ ...c })),
    // Each replay's own rules (its layer hashes recomputed) are the UPIP parser's.
    replays: o.replays.map((r, i) => upipFromJson(r, `${path}.replays[${i}]`)),
    claims,
    aggregate,
    remedy,
  };
}

/** Validates one objective check (the shape `checks.ts` produces) against the schema's `objectiveCheck`. */
export function objectiveCheckFromJson(value: unknown, path = "ObjectiveCheck"): ObjectiveCheck {
  assertMatchesSchema("resolution", value, path, "objectiveCheck");
  return { ...(value as ObjectiveCheck) };
}

/** The rules of a schema-valid aggregate the schema cannot state: sorted reason codes, `unresolved` and the confidence. */
function aggregateFromJson(o: ResolutionJson["aggregate"], path: string): Aggregate {
  const { final_verdict: finalVerdict, aggregate_confidence: aggregateConfidence, unresolved, reason_codes: reasonCodes } = o;
  reasonCodes.forEach((code, i) => {
    if (i > 0 && reasonCodes[i - 1]! >= code) {
      throw new InvalidResolutionError(`${path}.reason_codes`, "must be sorted in ascending order without repeats.");
    }
  });
  const undecidable = finalVerdict === "undecidable";
  if (unresolved !== undecidable) {
    throw new InvalidResolutionError(`${path}.unresolved`, "must be true exactly when the final verdict is undecidable.");
  }
  if (aggregateConfidence !== (undecidable ? 0 : 1)) {
    throw new InvalidResolutionError(`${path}.aggregate_confidence`, "must be 0 for an undecidable case and 1 for a decided one.");
  }
  return { finalVerdict, aggregateConfidence, unresolved, reasonCodes: [...reasonCodes] };
}

function assertRemedyMatches(aggregate: Aggregate, remedy: Remedy, path: string): void {
  const expected = VERDICT_CODES[aggregate.finalVerdict];
  if (remedy.verdict !== expected) {
    throw new InvalidResolutionError(`${path}.remedy.verdict`, `is ${remedy.verdict}, but the final verdict ${aggregate.finalVerdict} is code ${expected}.`);
  }
  if (remedy.slash !== 0n && aggregate.finalVerdict !== "provider_fault") {
    throw new InvalidResolutionError(`${path}.remedy.slash`, `must be 0 when the final verdict is ${aggregate.finalVerdict}.`);
  }
  if (remedy.refund !== 0n && (aggregate.finalVerdict === "challenger_fault" || aggregate.finalVerdict === "undecidable")) {
    throw new InvalidResolutionError(`${path}.remedy.refund`, `must be 0 when the final verdict is ${aggregate.finalVerdict}.`);
  }
}

/**
 * `keccak256(canon(resolution JSON))`: the hash a panel agrees on and the remedy signature binds.
 * Takes the TypeScript form or the JSON form (hashed as given).
 */
export function resolutionHash(r: Resolution | ResolutionJson): Hex {
  return artifactId("caseId" in r ? resolutionToJson(r) : r);
}

/*//////////////////////////////////////////////////////////////
                             EIP-712
//////////////////////////////////////////////////////////////*/

export const DISPUTE_MANAGER_DOMAIN_NAME = "IOI DisputeManager";
export const DISPUTE_MANAGER_DOMAIN_VERSION = "1";

/** The EIP-712 types `DisputeManager.RESOLUTION_TYPEHASH` is built from. */
export const RESOLUTION_TYPES = {
  Resolution: [
    { name: "caseId", type: "bytes32" },
    { name: "verdict", type: "uint8" },
    { name: "refund", type: "uint128" },
    { name: "slash", type: "uint128" },
    { name: "resolutionHash", type: "bytes32" },
  ],
} as const;

export type DisputeManagerDomain = {
  name: typeof DISPUTE_MANAGER_DOMAIN_NAME;
  version: typeof DISPUTE_MANAGER_DOMAIN_VERSION;
  chainId: bigint;
  verifyingContract: Address;
};

/** What the arbitrator signs and the DisputeManager verifies. */
export type ResolutionMessage = { caseId: Hex; verdict: VerdictCode; refund: bigint; slash: bigint; resolutionHash: Hex };

/** The DisputeManager's EIP-712 domain on `chainId` at `verifyingContract`. */
export function disputeManagerDomain(chainId: bigint, verifyingContract: Address): DisputeManagerDomain {
  return { name: DISPUTE_MANAGER_DOMAIN_NAME, version: DISPUTE_MANAGER_DOMAIN_VERSION, chainId, verifyingContract };
}

/** The on-chain message of a resolution: its case, verdict code, remedy and hash. */
export function resolutionMessage(r: Resolution): ResolutionMessage {
  return { caseId: r.caseId, verdict: r.remedy.verdict, refund: r.remedy.refund, slash: r.remedy.slash, resolutionHash: resolutionHash(r) };
}

/** The EIP-712 digest of `message` in `domain` (viem `hashTypedData`), after checking the field ranges. */
export function resolutionDigest(domain: DisputeManagerDomain, message: ResolutionMessage): Hex {
  assertMessageInRange(message);
  return hashTypedData({ domain, types: RESOLUTION_TYPES, primaryType: "Resolution", message });
}

/** Signs the resolution digest with a local key (low-s, 65 bytes r ‖ s ‖ v) like every channel signature. */
export async function signResolution(account: LocalAccount, domain: DisputeManagerDomain, message: ResolutionMessage): Promise<Hex> {
  return signDigest(account, resolutionDigest(domain, message));
}

/** Throws `InvalidSignatureError` unless `signer` signed exactly `message` in `domain`. */
export async function verifyResolutionSignature(
  domain: DisputeManagerDomain,
  message: ResolutionMessage,
  signature: Hex,
  signer: Address,
): Promise<void> {
  await assertDigestSigner(resolutionDigest(domain, message), signature, signer, "resolution");
}

function assertMessageInRange(message: ResolutionMessage): void {
  if (![1, 2, 3, 4].includes(message.verdict)) throw new InvalidFieldError("Resolution.verdict", "a verdict code 1, 2, 3 or 4", message.verdict);
  for (const key of ["refund", "slash"] as const) {
    const v = message[key];
    if (typeof v !== "bigint" || v < 0n || v >= 1n << 128n) throw new InvalidFieldError(`Resolution.${key}`, "a uint128 bigint", v);
  }
  expectHash(message.caseId, "Resolution.caseId");
  expectHash(message.resolutionHash, "Resolution.resolutionHash");
}
