/**
 * The ChallengePackage (whitepaper Appendix A.4): what a challenger submits to open a case — which gig or
 * session step is disputed, the claims, and the evidence as self-authenticating artifacts (every item's
 * `artifact_id` is the artifact id of its content and is checked on parsing).
 *
 * The JSON form is snake_case, hashes and addresses lowercase hex, amounts and counters decimal strings;
 * in TypeScript the same data is camelCase with bigint amounts.
 */
import type { Address, Hex } from "viem";

import { artifactId } from "../channel-client/canonical";
import { InvalidFieldError } from "../channel-client/errors";
import {
  signedIdentityAnchorFromJson,
  signedIdentityAnchorToJson,
  type SignedIdentityAnchor,
  type SignedIdentityAnchorJson,
} from "../channel-client/identity";
import {
  signedSessionReceiptFromJson,
  signedSessionReceiptToJson,
  type SignedSessionReceipt,
  type SignedSessionReceiptJson,
} from "../channel-client/receipt";
import {
  channelRefFromJson,
  channelRefToJson,
  pricingTermsFromJson,
  pricingTermsToJson,
  type ChannelRef,
  type ChannelRefJson,
  type PricingTerms,
  type PricingTermsJson,
} from "../channel-client/terms";
import {
  signedPaymentTicketFromJson,
  signedPaymentTicketToJson,
  type SignedPaymentTicket,
  type SignedPaymentTicketJson,
} from "../channel-client/ticket";
import {
  expectAddress,
  expectHash,
  expectLiteral,
  expectObject,
  expectString,
  expectUint,
  uintToJson,
  type JsonObject,
} from "../channel-client/validate";
import {
  signedSessionKeyGrantFromJson,
  signedSessionKeyGrantToJson,
  type SignedSessionKeyGrant,
  type SignedSessionKeyGrantJson,
} from "../channel-client/session-key";
import { bundleFromJson, bundleToJson, type Bundle } from "./bundle";
import { expectArray, expectBoolean, expectInt, parseDocument, type DocumentFormat } from "./document";
import { ArtifactIdMismatchError, InvalidPackageError } from "./errors";
import { icsFromJson, icsToJson, type Ics, type IcsJson } from "./ics";

/** The `schema` tag of every package. */
export const PACKAGE_SCHEMA = "ioi.challenge_package/1";

/** Limits of the package fields. */
export const PACKAGE_LIMITS = {
  maxClaims: 16,
  maxEvidence: 64,
  maxEvidenceRefs: 64,
  maxMerkleProof: 64,
  maxClaimIdLength: 128,
  maxDescriptionLength: 4096,
} as const;

export type Subject =
  | { kind: "gig"; gigEscrow: Address; gigId: bigint }
  | { kind: "session"; gasEscrow: Address; sessionId: Hex; seq: bigint };

export type SubjectJson =
  | { kind: "gig"; gig_escrow: Hex; gig_id: string }
  | { kind: "session"; gas_escrow: Hex; session_id: Hex; seq: string };

export type Claim = { claimId: string; description: string; evidenceRefs: Hex[]; objectiveFallback: boolean };
export type ClaimJson = { claim_id: string; description: string; evidence_refs: Hex[]; objective_fallback: boolean };

/** A paid step: the provider's signed receipt, the payer's signed ticket, and the leaf's inclusion proof. */
export type ReceiptEvidence = {
  receipt: SignedSessionReceipt;
  ticket: SignedPaymentTicket;
  leafIndex: bigint;
  merkleProof: Hex[];
  /** The payer's grant when a session key signed the ticket (decision 0025); absent: the payer signed it. */
  sessionKey?: SignedSessionKeyGrant;
};
export type ReceiptEvidenceJson = {
  receipt: SignedSessionReceiptJson;
  ticket: SignedPaymentTicketJson;
  leaf_index: string;
  merkle_proof: Hex[];
  session_key?: SignedSessionKeyGrantJson;
};

/** A channel: its terms, its pricing document and the state it closed with. */
export type ChannelEvidence = {
  ref: ChannelRef;
  pricing: PricingTerms;
  closing: { deposit: bigint; seq: bigint; amount: bigint; receiptRoot: Hex; feeBps: number };
};
export type ChannelEvidenceJson = {
  ref: ChannelRefJson;
  pricing: PricingTermsJson;
  closing: { deposit: string; seq: string; amount: string; receipt_root: Hex; fee_bps: number };
};

/** Evidence content by kind, in TypeScript and JSON form. */
export type EvidenceContent = {
  ics: Ics;
  test_suite: Bundle;
  deliverable: Bundle;
  receipt: ReceiptEvidence;
  channel: ChannelEvidence;
  /** The respondent's identity anchor: its DID bound to its secp256k1 and ML-DSA-44 keys, signed by both. */
  identity: SignedIdentityAnchor;
};
export type EvidenceContentJson = {
  ics: IcsJson;
  test_suite: Bundle;
  deliverable: Bundle;
  receipt: ReceiptEvidenceJson;
  channel: ChannelEvidenceJson;
  identity: SignedIdentityAnchorJson;
};

export type EvidenceKind = keyof EvidenceContent;
export const EVIDENCE_KINDS: readonly EvidenceKind[] = ["ics", "test_suite", "deliverable", "receipt", "channel", "identity"];

export type Evidence<K extends EvidenceKind = EvidenceKind> = {
  [k in K]: { kind: k; artifactId: Hex; content: EvidenceContent[k] };
}[K];
export type EvidenceJson<K extends EvidenceKind = EvidenceKind> = {
  [k in K]: { kind: k; artifact_id: Hex; content: EvidenceContentJson[k] };
}[K];

/** A validated ChallengePackage (TypeScript form). */
export type ChallengePackage = {
  schema: typeof PACKAGE_SCHEMA;
  caseId: Hex;
  chainId: bigint;
  disputeManager: Address;
  subject: Subject;
  graphId: Hex;
  stepId: Hex;
  policyHash: Hex;
  policyVersion: number;
  rubricVersion: number;
  modelSnapshotId: Hex;
  lane: 0 | 1;
  challenger: Address;
  claims: Claim[];
  evidence: Evidence[];
};

/** The JSON form of a ChallengePackage, exactly as submitted and hashed. */
export type ChallengePackageJson = {
  schema: typeof PACKAGE_SCHEMA;
  case_id: Hex;
  chain_id: string;
  dispute_manager: Hex;
  subject: SubjectJson;
  graph_id: Hex;
  step_id: Hex;
  policy_hash: Hex;
  policy_version: number;
  rubric_version: number;
  model_snapshot_id: Hex;
  lane: 0 | 1;
  challenger: Hex;
  claims: ClaimJson[];
  evidence: EvidenceJson[];
};

const FIELDS = [
  "schema",
  "case_id",
  "chain_id",
  "dispute_manager",
  "subject",
  "graph_id",
  "step_id",
  "policy_hash",
  "policy_version",
  "rubric_version",
  "model_snapshot_id",
  "lane",
  "challenger",
  "claims",
  "evidence",
] as const;

const U32_MAX = 0xffff_ffff;
const lower = (address: Address): Hex => address.toLowerCase() as Hex;

/**
 * Validates a ChallengePackage received from outside: every field, every evidence item (including that its
 * `artifact_id` is the artifact id of its content), unique artifact ids and claim ids, and claims that cite
 * only evidence the package carries.
 */
export function packageFromJson(value: unknown, path = "ChallengePackage"): ChallengePackage {
  const o = expectObject(value, path, FIELDS);
  const rawEvidence = expectArray(o.evidence, `${path}.evidence`, 1, PACKAGE_LIMITS.maxEvidence);
  // One ICS at most, counted before any is parsed: parsing an ICS compiles its JSON Schemas, which costs time.
  const icsCount = rawEvidence.filter((item) => isObject(item) && item.kind === "ics").length;
  if (icsCount > 1) {
    throw new InvalidPackageError(`${path}.evidence`, `holds ${icsCount} ICS documents; a case is judged against one.`);
  }
  const evidence = rawEvidence.map((item, i) => evidenceFromJson(item, `${path}.evidence[${i}]`));
  const ids = new Set<Hex>();
  evidence.forEach((item, i) => {
    if (ids.has(item.artifactId)) {
      throw new InvalidPackageError(`${path}.evidence[${i}].artifact_id`, `repeats ${item.artifactId}; each artifact is given once.`);
    }
    ids.add(item.artifactId);
  });
  const claims = expectArray(o.claims, `${path}.claims`, 1, PACKAGE_LIMITS.maxClaims).map((claim, i) =>
    claimFromJson(claim, `${path}.claims[${i}]`),
  );
  const claimIds = new Set<string>();
  claims.forEach((claim, i) => {
    if (claimIds.has(claim.claimId)) {
      throw new InvalidPackageError(`${path}.claims[${i}].claim_id`, `repeats ${JSON.stringify(claim.claimId)}; claim ids are unique.`);
    }
    claimIds.add(claim.claimId);
    claim.evidenceRefs.forEach((ref, j) => {
      if (!ids.has(ref)) {
        throw new InvalidPackageError(`${path}.claims[${i}].evidence_refs[${j}]`, `names ${ref}, which is not the artifact_id of any evidence in the package.`);
      }
    });
  });
  const lane = expectInt(o.lane, `${path}.lane`, 0, 1) as 0 | 1;
  return {
    schema: expectLiteral(o.schema, `${path}.schema`, [PACKAGE_SCHEMA]),
    caseId: expectHash(o.case_id, `${path}.case_id`),
    chainId: expectUint(o.chain_id, `${path}.chain_id`, 64),
    disputeManager: expectAddress(o.dispute_manager, `${path}.dispute_manager`),
    subject: subjectFromJson(o.subject, `${path}.subject`),
    graphId: expectHash(o.graph_id, `${path}.graph_id`),
    stepId: expectHash(o.step_id, `${path}.step_id`),
    policyHash: expectHash(o.policy_hash, `${path}.policy_hash`),
    policyVersion: expectInt(o.policy_version, `${path}.policy_version`, 0, U32_MAX),
    rubricVersion: expectInt(o.rubric_version, `${path}.rubric_version`, 0, U32_MAX),
    modelSnapshotId: expectHash(o.model_snapshot_id, `${path}.model_snapshot_id`),
    lane,
    challenger: expectAddress(o.challenger, `${path}.challenger`),
    claims,
    evidence,
  };
}

function subjectFromJson(value: unknown, path: string): Subject {
  if (!isObject(value)) throw new InvalidFieldError(path, "a subject object", value);
  const kind = expectLiteral(value.kind, `${path}.kind`, ["gig", "session"]);
  if (kind === "gig") {
    const o = expectObject(value, path, ["kind", "gig_escrow", "gig_id"]);
    return { kind, gigEscrow: expectAddress(o.gig_escrow, `${path}.gig_escrow`), gigId: expectUint(o.gig_id, `${path}.gig_id`, 64) };
  }
  const o = expectObject(value, path, ["kind", "gas_escrow", "session_id", "seq"]);
  return {
    kind,
    gasEscrow: expectAddress(o.gas_escrow, `${path}.gas_escrow`),
    sessionId: expectHash(o.session_id, `${path}.session_id`),
    seq: expectUint(o.seq, `${path}.seq`, 64),
  };
}

function claimFromJson(value: unknown, path: string): Claim {
  const o = expectObject(value, path, ["claim_id", "description", "evidence_refs", "objective_fallback"]);
  const refs = expectArray(o.evidence_refs, `${path}.evidence_refs`, 0, PACKAGE_LIMITS.maxEvidenceRefs).map((ref, i) =>
    expectHash(ref, `${path}.evidence_refs[${i}]`),
  );
  const duplicate = refs.findIndex((ref, i) => refs.indexOf(ref) !== i);
  if (duplicate >= 0) throw new InvalidPackageError(`${path}.evidence_refs[${duplicate}]`, `repeats ${refs[duplicate]}.`);
  return {
    claimId: expectString(o.claim_id, `${path}.claim_id`, PACKAGE_LIMITS.maxClaimIdLength),
    description: expectString(o.description, `${path}.description`, PACKAGE_LIMITS.maxDescriptionLength),
    evidenceRefs: refs,
    objectiveFallback: expectBoolean(o.objective_fallback, `${path}.objective_fallback`),
  };
}

/** Validates one evidence item and checks that its `artifact_id` is the artifact id of its content. */
export function evidenceFromJson(value: unknown, path = "Evidence"): Evidence {
  if (!isObject(value)) throw new InvalidFieldError(path, "an evidence object { kind, artifact_id, content }", value);
  const kind = expectLiteral(value.kind, `${path}.kind`, EVIDENCE_KINDS);
  const o = expectObject(value, path, ["kind", "artifact_id", "content"]);
  const claimed = expectHash(o.artifact_id, `${path}.artifact_id`);
  const content = `${path}.content`;
  let item: Evidence;
  switch (kind) {
    case "ics":
      item = { kind, artifactId: claimed, content: icsFromJson(o.content, content) };
      break;
    case "test_suite":
    case "deliverable":
      item = { kind, artifactId: claimed, content: bundleFromJson(o.content, content) };
      break;
    case "receipt":
      item = { kind, artifactId: claimed, content: receiptEvidenceFromJson(o.content, content) };
      break;
    case "channel":
      item = { kind, artifactId: claimed, content: channelEvidenceFromJson(o.content, content) };
      break;
    case "identity":
      item = { kind, artifactId: claimed, content: signedIdentityAnchorFromJson(o.content, content) };
      break;
  }
  const actual = artifactId(evidenceContentToJson(item));
  if (actual !== claimed) throw new ArtifactIdMismatchError(path, claimed, actual);
  return item;
}

function receiptEvidenceFromJson(value: unknown, path: string): ReceiptEvidence {
  const o = expectObject(value, path, ["receipt", "ticket", "leaf_index", "merkle_proof"], ["session_key"]);
  return {
    receipt: signedSessionReceiptFromJson(o.receipt, `${path}.receipt`),
    ticket: signedPaymentTicketFromJson(o.ticket, `${path}.ticket`),
    leafIndex: expectUint(o.leaf_index, `${path}.leaf_index`, 64),
    merkleProof: expectArray(o.merkle_proof, `${path}.merkle_proof`, 0, PACKAGE_LIMITS.maxMerkleProof).map((node, i) =>
      expectHash(node, `${path}.merkle_proof[${i}]`),
    ),
    ...(o.session_key === undefined ? {} : { sessionKey: signedSessionKeyGrantFromJson(o.session_key, `${path}.session_key`) }),
  };
}

function channelEvidenceFromJson(value: unknown, path: string): ChannelEvidence {
  const o = expectObject(value, path, ["ref", "pricing", "closing"]);
  const closing = expectObject(o.closing, `${path}.closing`, ["deposit", "seq", "amount", "receipt_root", "fee_bps"]);
  return {
    ref: channelRefFromJson(o.ref, `${path}.ref`),
    pricing: pricingTermsFromJson(o.pricing, `${path}.pricing`),
    closing: {
      deposit: expectUint(closing.deposit, `${path}.closing.deposit`, 128),
      seq: expectUint(closing.seq, `${path}.closing.seq`, 64),
      amount: expectUint(closing.amount, `${path}.closing.amount`, 128),
      receiptRoot: expectHash(closing.receipt_root, `${path}.closing.receipt_root`),
      feeBps: expectInt(closing.fee_bps, `${path}.closing.fee_bps`, 0, 10_000),
    },
  };
}

/** The JSON form of an evidence item's content (what its `artifact_id` hashes). */
export function evidenceContentToJson(item: Evidence): EvidenceContentJson[EvidenceKind] {
  switch (item.kind) {
    case "ics":
      return icsToJson(item.content);
    case "test_suite":
    case "deliverable":
      return bundleToJson(item.content);
    case "receipt": {
      const c = item.content;
      return {
        receipt: signedSessionReceiptToJson(c.receipt),
        ticket: signedPaymentTicketToJson(c.ticket),
        leaf_index: uintToJson(c.leafIndex),
        merkle_proof: [...c.merkleProof],
        ...(c.sessionKey ? { session_key: signedSessionKeyGrantToJson(c.sessionKey) } : {}),
      };
    }
    case "channel": {
      const c = item.content;
      return {
        ref: channelRefToJson(c.ref),
        pricing: pricingTermsToJson(c.pricing),
        closing: {
          deposit: uintToJson(c.closing.deposit),
          seq: uintToJson(c.closing.seq),
          amount: uintToJson(c.closing.amount),
          receipt_root: c.closing.receiptRoot,
          fee_bps: c.closing.feeBps,
        },
      };
    }
    case "identity":
      return signedIdentityAnchorToJson(item.content);
  }
}

/** Builds an evidence item with the right `artifactId` for its content (for whoever assembles a package). */
export function makeEvidence<K extends EvidenceKind>(kind: K, content: EvidenceContent[K]): Evidence<K> {
  const item = { kind, artifactId: "0x" as Hex, content } as Evidence<K>;
  return { ...item, artifactId: artifactId(evidenceContentToJson(item as unknown as Evidence)) };
}

/** The JSON form of an evidence item. */
export function evidenceToJson(item: Evidence): EvidenceJson {
  return { kind: item.kind, artifact_id: item.artifactId, content: evidenceContentToJson(item) } as EvidenceJson;
}

/** The JSON form of a package (what {@link packageHash} hashes). */
export function packageToJson(p: ChallengePackage): ChallengePackageJson {
  const subject: SubjectJson =
    p.subject.kind === "gig"
      ? { kind: "gig", gig_escrow: lower(p.subject.gigEscrow), gig_id: uintToJson(p.subject.gigId) }
      : { kind: "session", gas_escrow: lower(p.subject.gasEscrow), session_id: p.subject.sessionId, seq: uintToJson(p.subject.seq) };
  return {
    schema: p.schema,
    case_id: p.caseId,
    chain_id: uintToJson(p.chainId),
    dispute_manager: lower(p.disputeManager),
    subject,
    graph_id: p.graphId,
    step_id: p.stepId,
    policy_hash: p.policyHash,
    policy_version: p.policyVersion,
    rubric_version: p.rubricVersion,
    model_snapshot_id: p.modelSnapshotId,
    lane: p.lane,
    challenger: lower(p.challenger),
    claims: p.claims.map((c) => ({
      claim_id: c.claimId,
      description: c.description,
      evidence_refs: [...c.evidenceRefs],
      objective_fallback: c.objectiveFallback,
    })),
    evidence: p.evidence.map(evidenceToJson),
  };
}

/** Parses a package document (JSON or YAML, see `parseDocument`) and validates it. */
export function parsePackage(text: string | Uint8Array, format: DocumentFormat = "auto"): ChallengePackage {
  return packageFromJson(parseDocument(text, { format, what: "ChallengePackage" }));
}

/** `keccak256(canon(packageToJson(p)))`: the id of the package, which the resolution names. */
export function packageHash(p: ChallengePackage): Hex {
  return artifactId(packageToJson(p));
}

/** The package's evidence items of `kind`, in package order. */
export function evidenceOfKind<K extends EvidenceKind>(p: ChallengePackage, kind: K): Evidence<K>[] {
  return p.evidence.filter((item) => item.kind === kind) as unknown as Evidence<K>[];
}

/** The one evidence item of `kind`, or null if there is none; {@link InvalidPackageError} if there are several. */
export function soleEvidence<K extends EvidenceKind>(p: ChallengePackage, kind: K): Evidence<K> | null {
  const items = evidenceOfKind(p, kind);
  if (items.length > 1) {
    throw new InvalidPackageError("ChallengePackage.evidence", `holds ${items.length} items of kind ${kind}; at most one is allowed here.`);
  }
  return items[0] ?? null;
}

/** The evidence item with `artifactId`, or undefined. */
export function evidenceById(p: ChallengePackage, id: Hex): Evidence | undefined {
  return p.evidence.find((item) => item.artifactId === id);
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
