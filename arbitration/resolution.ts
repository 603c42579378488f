/**
 * The Resolution (whitepaper Appendix A.4): the deterministic arbitration artifact a case ends in, and the
 * on-chain remedy the DisputeManager applies, signed as EIP-712 `Resolution(caseId, verdict, refund,
 * slash, resolutionHash)` in the DisputeManager's domain.
 *
 * `resolutionHash = keccak256(canon(resolution JSON))`: arbitrators replaying the same package with the same
 * judge runtime reach byte-identical resolutions, so equal hashes are the panel's agreement.
 */
import { hashTypedData, type Address, type Hex, type LocalAccount } from "viem";

import { artifactId } from "../channel-client/canonical";
import { assertDigestSigner, signDigest } from "../channel-client/eip712";
import { InvalidFieldError } from "../channel-client/errors";
import {
  expectAddress,
  expectHash,
  expectLiteral,
  expectObject,
  expectString,
  expectUint,
  uintToJson,
} from "../channel-client/validate";
import type { ObjectiveCheck } from "./checks";
import { expectArray, expectBoolean, expectInt, expectNullable, expectPattern } from "./document";
import { InvalidResolutionError } from "./errors";
import { EVIDENCE_KINDS, PACKAGE_LIMITS, type EvidenceKind } from "./package";
import { upipFromJson, type UpipRecord } from "./upip";

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
  maxReplays: 8,
  maxReasonCodes: 32,
  maxNameLength: 128,
  maxDetailLength: 4096,
} as const;

const REASON_CODE = /^[A-Z0-9_]{1,64}$/;
const U32_MAX = 0xffff_ffff;
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

const FIELDS = [
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
] as const;

/**
 * Validates a resolution received from outside, so that one built elsewhere can be re-checked: every field
 * and every UPIP record (hashes recomputed), plus the rules tying the parts together —
 * merkle proofs only for receipts, unique evidence, claims citing only listed evidence, `lane0.passed`
 * equal to all Lane 0 checks passing, sorted unique reason codes, `unresolved` and a zero confidence
 * exactly when undecidable, the remedy's verdict code matching the final verdict, no slash unless the
 * provider is at fault and no refund when the challenger is at fault or the case is undecidable.
 */
export function resolutionFromJson(value: unknown, path = "Resolution"): Resolution {
  const o = expectObject(value, path, FIELDS);
  const evidence = expectArray(o.evidence, `${path}.evidence`, 0, PACKAGE_LIMITS.maxEvidence).map((item, i) =>
    evidenceFromJson(item, `${path}.evidence[${i}]`),
  );
  const ids = new Set<Hex>();
  evidence.forEach((item, i) => {
    if (ids.has(item.artifactId)) throw new InvalidResolutionError(`${path}.evidence[${i}].artifact_id`, `repeats ${item.artifactId}.`);
    ids.add(item.artifactId);
  });

  const lane0Object = expectObject(o.lane0, `${path}.lane0`, ["passed", "checks"]);
  const lane0 = {
    passed: expectBoolean(lane0Object.passed, `${path}.lane0.passed`),
    checks: expectArray(lane0Object.checks, `${path}.lane0.checks`, 0, RESOLUTION_LIMITS.maxChecks).map((c, i) =>
      lane0CheckFromJson(c, `${path}.lane0.checks[${i}]`),
    ),
  };
  if (lane0.passed !== lane0.checks.every((c) => c.status === "pass")) {
    throw new InvalidResolutionError(`${path}.lane0.passed`, "must be true exactly when every Lane 0 check has status \"pass\".");
  }

  const claims = expectArray(o.claims, `${path}.claims`, 0, PACKAGE_LIMITS.maxClaims).map((c, i) => claimFromJson(c, `${path}.claims[${i}]`));
  claims.forEach((claim, i) =>
    claim.evidenceRefs.forEach((ref, j) => {
      if (!ids.has(ref)) throw new InvalidResolutionError(`${path}.claims[${i}].evidence_refs[${j}]`, `names ${ref}, which is not in the evidence list.`);
    }),
  );

  const aggregate = aggregateFromJson(o.aggregate, `${path}.aggregate`);
  const remedy = remedyFromJson(o.remedy, `${path}.remedy`);
  assertRemedyMatches(aggregate, remedy, path);

  return {
    schema: expectLiteral(o.schema, `${path}.schema`, [RESOLUTION_SCHEMA]),
    caseId: expectHash(o.case_id, `${path}.case_id`),
    chainId: expectUint(o.chain_id, `${path}.chain_id`, 64),
    disputeManager: expectAddress(o.dispute_manager, `${path}.dispute_manager`),
    packageHash: expectHash(o.package_hash, `${path}.package_hash`),
    graphId: expectHash(o.graph_id, `${path}.graph_id`),
    stepId: expectHash(o.step_id, `${path}.step_id`),
    policyHash: expectHash(o.policy_hash, `${path}.policy_hash`),
    policyVersion: expectInt(o.policy_version, `${path}.policy_version`, 0, U32_MAX),
    rubricVersion: expectInt(o.rubric_version, `${path}.rubric_version`, 0, U32_MAX),
    modelSnapshotId: expectHash(o.model_snapshot_id, `${path}.model_snapshot_id`),
    judgeRuntimeHash: expectHash(o.judge_runtime_hash, `${path}.judge_runtime_hash`),
    evidence,
    lane0,
    objectiveChecks: expectArray(o.objective_checks, `${path}.objective_checks`, 0, RESOLUTION_LIMITS.maxChecks).map((c, i) =>
      objectiveCheckFromJson(c, `${path}.objective_checks[${i}]`),
    ),
    replays: expectArray(o.replays, `${path}.replays`, 0, RESOLUTION_LIMITS.maxReplays).map((r, i) => upipFromJson(r, `${path}.replays[${i}]`)),
    claims,
    aggregate,
    remedy,
  };
}

function evidenceFromJson(value: unknown, path: string): ResolutionEvidence {
  const o = expectObject(value, path, ["artifact_id", "kind", "merkle_proof"]);
  const kind = expectLiteral(o.kind, `${path}.kind`, EVIDENCE_KINDS);
  const merkleProof = expectArray(o.merkle_proof, `${path}.merkle_proof`, 0, PACKAGE_LIMITS.maxMerkleProof).map((node, i) =>
    expectHash(node, `${path}.merkle_proof[${i}]`),
  );
  if (kind !== "receipt" && merkleProof.length > 0) {
    throw new InvalidResolutionError(`${path}.merkle_proof`, `must be empty for evidence of kind ${kind}; only receipts carry proofs.`);
  }
  return { artifactId: expectHash(o.artifact_id, `${path}.artifact_id`), kind, merkleProof };
}

const expectDetail = (value: unknown, path: string): string | null =>
  expectNullable(value, path, (v, p) => expectString(v, p, RESOLUTION_LIMITS.maxDetailLength));

function lane0CheckFromJson(value: unknown, path: string): Lane0Check {
  const o = expectObject(value, path, ["name", "status", "detail"]);
  return {
    name: expectString(o.name, `${path}.name`, RESOLUTION_LIMITS.maxNameLength),
    status: expectLiteral(o.status, `${path}.status`, ["pass", "fail", "missing"]),
    detail: expectDetail(o.detail, `${path}.detail`),
  };
}

/** Validates one objective check (the shape `checks.ts` produces). */
export function objectiveCheckFromJson(value: unknown, path = "ObjectiveCheck"): ObjectiveCheck {
  const o = expectObject(value, path, ["name", "status", "hash", "detail"]);
  return {
    name: expectString(o.name, `${path}.name`, RESOLUTION_LIMITS.maxNameLength),
    status: expectBoolean(o.status, `${path}.status`),
    hash: expectNullable(o.hash, `${path}.hash`, expectHash),
    detail: expectDetail(o.detail, `${path}.detail`),
  };
}

function claimFromJson(value: unknown, path: string): ResolutionClaim {
  const o = expectObject(value, path, [
    "claim_id",
    "description",
    "evidence_refs",
    "objective_fallback",
    "prosecutor",
    "defender",
    "resolver",
  ]);
  for (const phase of ["prosecutor", "defender", "resolver"] as const) {
    if (o[phase] !== null) throw new InvalidFieldError(`${path}.${phase}`, "null (Lane 2 is not part of this arbitrator)", o[phase]);
  }
  return {
    claimId: expectString(o.claim_id, `${path}.claim_id`, PACKAGE_LIMITS.maxClaimIdLength),
    description: expectString(o.description, `${path}.description`, PACKAGE_LIMITS.maxDescriptionLength),
    evidenceRefs: expectArray(o.evidence_refs, `${path}.evidence_refs`, 0, PACKAGE_LIMITS.maxEvidenceRefs).map((ref, i) =>
      expectHash(ref, `${path}.evidence_refs[${i}]`),
    ),
    objectiveFallback: expectBoolean(o.objective_fallback, `${path}.objective_fallback`),
    prosecutor: null,
    defender: null,
    resolver: null,
  };
}

function aggregateFromJson(value: unknown, path: string): Aggregate {
  const o = expectObject(value, path, ["final_verdict", "aggregate_confidence", "unresolved", "reason_codes"]);
  const finalVerdict = expectLiteral(o.final_verdict, `${path}.final_verdict`, FINAL_VERDICTS);
  const aggregateConfidence = expectInt(o.aggregate_confidence, `${path}.aggregate_confidence`, 0, 1) as 0 | 1;
  const unresolved = expectBoolean(o.unresolved, `${path}.unresolved`);
  const reasonCodes = expectArray(o.reason_codes, `${path}.reason_codes`, 0, RESOLUTION_LIMITS.maxReasonCodes).map((code, i) =>
    expectPattern(code, `${path}.reason_codes[${i}]`, REASON_CODE, 64, "a reason code of A-Z, 0-9 and _"),
  );
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
  return { finalVerdict, aggregateConfidence, unresolved, reasonCodes };
}

function remedyFromJson(value: unknown, path: string): Remedy {
  const o = expectObject(value, path, ["verdict", "refund", "slash"]);
  return {
    verdict: expectInt(o.verdict, `${path}.verdict`, 1, 4) as VerdictCode,
    refund: expectUint(o.refund, `${path}.refund`, 128),
    slash: expectUint(o.slash, `${path}.slash`, 128),
  };
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
