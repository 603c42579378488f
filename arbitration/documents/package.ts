/**
 * The ChallengePackage (whitepaper Appendix A.4): what a challenger submits to open a case — which gig or
 * session step is disputed, the claims, and the evidence as self-authenticating artifacts (every item's
 * `artifact_id` is the artifact id of its content and is checked on parsing).
 *
 * The JSON form is snake_case, hashes and addresses lowercase hex, amounts and counters decimal strings;
 * in TypeScript the same data is camelCase with bigint amounts.
 */
import { bytesToHex, getAddress, hexToBytes, type Address, type Hex } from "viem";

import { artifactId } from "../../channel-client/core/canonical";
import {
  signedFaultStatementFromJson,
  signedFaultStatementToJson,
  type SignedFaultStatement,
  type SignedFaultStatementJson,
} from "../../channel-client/core/fault-statement";
import {
  receiptCommitToJson,
  signedReceiptCommitFromJson,
  type ReceiptCommitJson,
  type SignedReceiptCommit,
} from "../../channel-client/core/receipt-commit";
import {
  signedIdentityAnchorFromJson,
  signedIdentityAnchorToJson,
  type SignedIdentityAnchor,
  type SignedIdentityAnchorJson,
} from "../../channel-client/core/identity";
import {
  signedSessionReceiptFromJson,
  signedSessionReceiptToJson,
  type SignedSessionReceipt,
  type SignedSessionReceiptJson,
} from "../../channel-client/core/receipt";
import {
  channelRefFromJson,
  channelRefToJson,
  pricingTermsFromJson,
  pricingTermsToJson,
  type ChannelRef,
  type ChannelRefJson,
  type PricingTerms,
  type PricingTermsJson,
} from "../../channel-client/core/terms";
import {
  signedPaymentTicketFromJson,
  signedPaymentTicketToJson,
  type SignedPaymentTicket,
  type SignedPaymentTicketJson,
} from "../../channel-client/core/ticket";
import { assertMatchesSchema } from "../../channel-client/core/schemas";
import {
  signedProgressProofFromJson,
  signedProgressProofToJson,
  trancheRequestFromJson,
  trancheRequestToJson,
  type SignedProgressProof,
  type SignedProgressProofJson,
  type TrancheRequest,
  type TrancheRequestJson,
} from "../../channel-client/core/progress-proof";
import { expectUint, uintToJson } from "../../channel-client/core/validate";
import {
  signedSessionKeyGrantFromJson,
  signedSessionKeyGrantToJson,
  type SignedSessionKeyGrant,
  type SignedSessionKeyGrantJson,
} from "../../channel-client/core/session-key";
import { bundleFromJson, bundleToJson, type Bundle } from "./bundle";
import { parseDocument, type DocumentFormat } from "./document";
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

/**
 * A receipt as the payer received it in PKT_ACTION_RESULT (the provider's signature over the real request
 * and output: the payer refuses one whose hashes are not those of what it sent and got). Optionally the
 * request bytes and output bytes themselves; when given, each must hash to the receipt's hash (Lane 0).
 */
export type DeliveredReceiptEvidence = { receipt: SignedSessionReceipt; request?: Uint8Array; output?: Uint8Array };
export type DeliveredReceiptEvidenceJson = { receipt: SignedSessionReceiptJson; request?: Hex; output?: Hex };

/**
 * A channel: its terms, its pricing document and the state it closed with; optionally the provider's signed
 * receipt commit the payer anchored on-chain, whose root a receipt may be proven against instead (decision 0003).
 */
export type ChannelEvidence = {
  ref: ChannelRef;
  pricing: PricingTerms;
  closing: { deposit: bigint; seq: bigint; amount: bigint; receiptRoot: Hex; feeBps: number };
  commit?: SignedReceiptCommit;
};
export type ChannelEvidenceJson = {
  ref: ChannelRefJson;
  pricing: PricingTermsJson;
  closing: { deposit: string; seq: string; amount: string; receipt_root: Hex; fee_bps: number };
  commit?: { commit: ReceiptCommitJson; signature: Hex };
};

/**
 * A streamed tranche's progress (decision 0037): the provider's signed Progress Proof (its hash is the challenged
 * receipt's `outputHash`), the payer's tranche request (its hash is the receipt's `offloadPacketHash`, carrying the
 * sampling commitment), the revealed sampling secret and the sampled claim the case disputes; or, for two proofs
 * of one tranche, the second signed proof.
 */
export type ProgressEvidence = {
  proof: SignedProgressProof;
  request: TrancheRequest;
  secret?: Hex;
  sample?: number;
  conflicting?: SignedProgressProof;
};
export type ProgressEvidenceJson = {
  proof: SignedProgressProofJson;
  request: TrancheRequestJson;
  secret?: Hex;
  sample?: number;
  conflicting?: SignedProgressProofJson;
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
  /** A receipt as delivered to the payer, to compare with a receipt of the same seq proven into a root. */
  delivered_receipt: DeliveredReceiptEvidence;
  /** The provider's signed fault statement for a failed call (the session no-fault path). */
  fault: SignedFaultStatement;
  /** A streamed tranche's Progress Proof, request and sample (decision 0037). */
  progress: ProgressEvidence;
};
export type EvidenceContentJson = {
  ics: IcsJson;
  test_suite: Bundle;
  deliverable: Bundle;
  receipt: ReceiptEvidenceJson;
  channel: ChannelEvidenceJson;
  identity: SignedIdentityAnchorJson;
  delivered_receipt: DeliveredReceiptEvidenceJson;
  fault: SignedFaultStatementJson;
  progress: ProgressEvidenceJson;
};

export type EvidenceKind = keyof EvidenceContent;
export const EVIDENCE_KINDS: readonly EvidenceKind[] = ["ics", "test_suite", "deliverable", "receipt", "channel", "identity", "delivered_receipt", "fault", "progress"];

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

const lower = (address: Address): Hex => address.toLowerCase() as Hex;

/**
 * Validates a ChallengePackage received from outside. First its structure against the published
 * `schemas/challenge-package.schema.json` (every field, type, pattern, enum, count limit and evidence shape:
 * one sentence naming the first bad field); then what a schema cannot state — one ICS at most, integer
 * bounds held as decimal strings, bundle paths, each evidence item's `artifact_id` being the artifact id of
 * its content, unique artifact ids and claim ids, and claims that cite only evidence the package carries.
 */
export function packageFromJson(value: unknown, path = "ChallengePackage"): ChallengePackage {
  assertMatchesSchema("challenge-package", value, path);
  const o = value as ChallengePackageJson;
  // One ICS at most, counted before any is parsed: parsing an ICS compiles its JSON Schemas, which costs time.
  const icsCount = o.evidence.filter((item) => item.kind === "ics").length;
  if (icsCount > 1) {
    throw new InvalidPackageError(`${path}.evidence`, `holds ${icsCount} ICS documents; a case is judged against one.`);
  }
  const evidence = o.evidence.map((item, i) => evidenceContentFromJson(item, `${path}.evidence[${i}]`));
  const ids = new Set<Hex>();
  evidence.forEach((item, i) => {
    if (ids.has(item.artifactId)) {
      throw new InvalidPackageError(`${path}.evidence[${i}].artifact_id`, `repeats ${item.artifactId}; each artifact is given once.`);
    }
    ids.add(item.artifactId);
  });
  const claimIds = new Set<string>();
  const claims = o.claims.map((claim, i): Claim => {
    const where = `${path}.claims[${i}]`;
    if (claimIds.has(claim.claim_id)) throw new InvalidPackageError(`${where}.claim_id`, `repeats ${JSON.stringify(claim.claim_id)}; claim ids are unique.`);
    claimIds.add(claim.claim_id);
    claim.evidence_refs.forEach((ref, j) => {
      if (!ids.has(ref)) throw new InvalidPackageError(`${where}.evidence_refs[${j}]`, `names ${ref}, which is not the artifact_id of any evidence in the package.`);
      if (claim.evidence_refs.indexOf(ref) !== j) throw new InvalidPackageError(`${where}.evidence_refs[${j}]`, `repeats ${ref}.`);
    });
    return { claimId: claim.claim_id, description: claim.description, evidenceRefs: [...claim.evidence_refs], objectiveFallback: claim.objective_fallback };
  });
  const subject: Subject =
    o.subject.kind === "gig"
      ? { kind: "gig", gigEscrow: getAddress(o.subject.gig_escrow), gigId: expectUint(o.subject.gig_id, `${path}.subject.gig_id`, 64) }
      : {
          kind: "session",
          gasEscrow: getAddress(o.subject.gas_escrow),
          sessionId: o.subject.session_id,
          seq: expectUint(o.subject.seq, `${path}.subject.seq`, 64),
        };
  return {
    schema: o.schema,
    caseId: o.case_id,
    chainId: expectUint(o.chain_id, `${path}.chain_id`, 64),
    disputeManager: getAddress(o.dispute_manager),
    subject,
    graphId: o.graph_id,
    stepId: o.step_id,
    policyHash: o.policy_hash,
    policyVersion: o.policy_version,
    rubricVersion: o.rubric_version,
    modelSnapshotId: o.model_snapshot_id,
    lane: o.lane,
    challenger: getAddress(o.challenger),
    claims,
    evidence,
  };
}

/**
 * Validates one evidence item received on its own (against the schema's `evidence` definition) and checks
 * that its `artifact_id` is the artifact id of its content.
 */
export function evidenceFromJson(value: unknown, path = "Evidence"): Evidence {
  assertMatchesSchema("challenge-package", value, path, "evidence");
  return evidenceContentFromJson(value as EvidenceJson, path);
}

/** Converts a schema-valid evidence item, applying the rules its schema cannot state, and checks its `artifact_id`. */
function evidenceContentFromJson(value: EvidenceJson, path: string): Evidence {
  const claimed = value.artifact_id;
  const content = `${path}.content`;
  let item: Evidence;
  switch (value.kind) {
    case "ics":
      item = { kind: value.kind, artifactId: claimed, content: icsFromJson(value.content, content) };
      break;
    case "test_suite":
    case "deliverable":
      item = { kind: value.kind, artifactId: claimed, content: bundleFromJson(value.content, content) };
      break;
    case "receipt": {
      const c = value.content;
      item = {
        kind: value.kind,
        artifactId: claimed,
        content: {
          receipt: signedSessionReceiptFromJson(c.receipt, `${content}.receipt`),
          ticket: signedPaymentTicketFromJson(c.ticket, `${content}.ticket`),
          leafIndex: expectUint(c.leaf_index, `${content}.leaf_index`, 64),
          merkleProof: [...c.merkle_proof],
          ...(c.session_key === undefined ? {} : { sessionKey: signedSessionKeyGrantFromJson(c.session_key, `${content}.session_key`) }),
        },
      };
      break;
    }
    case "channel": {
      const c = value.content;
      item = {
        kind: value.kind,
        artifactId: claimed,
        content: {
          ref: channelRefFromJson(c.ref, `${content}.ref`),
          pricing: pricingTermsFromJson(c.pricing, `${content}.pricing`),
          closing: {
            deposit: expectUint(c.closing.deposit, `${content}.closing.deposit`, 128),
            seq: expectUint(c.closing.seq, `${content}.closing.seq`, 64),
            amount: expectUint(c.closing.amount, `${content}.closing.amount`, 128),
            receiptRoot: c.closing.receipt_root,
            feeBps: c.closing.fee_bps,
          },
          ...(c.commit === undefined ? {} : { commit: signedReceiptCommitFromJson(c.commit, `${content}.commit`) }),
        },
      };
      break;
    }
    case "identity":
      item = { kind: value.kind, artifactId: claimed, content: signedIdentityAnchorFromJson(value.content, content) };
      break;
    case "delivered_receipt": {
      const c = value.content;
      item = {
        kind: value.kind,
        artifactId: claimed,
        content: {
          receipt: signedSessionReceiptFromJson(c.receipt, `${content}.receipt`),
          ...(c.request === undefined ? {} : { request: hexToBytes(c.request) }),
          ...(c.output === undefined ? {} : { output: hexToBytes(c.output) }),
        },
      };
      break;
    }
    case "fault":
      item = { kind: value.kind, artifactId: claimed, content: signedFaultStatementFromJson(value.content, content) };
      break;
    case "progress": {
      const c = value.content;
      item = {
        kind: value.kind,
        artifactId: claimed,
        content: {
          proof: signedProgressProofFromJson(c.proof, `${content}.proof`),
          request: trancheRequestFromJson(c.request, `${content}.request`),
          ...(c.secret === undefined ? {} : { secret: c.secret }),
          ...(c.sample === undefined ? {} : { sample: c.sample }),
          ...(c.conflicting === undefined ? {} : { conflicting: signedProgressProofFromJson(c.conflicting, `${content}.conflicting`) }),
        },
      };
      break;
    }
  }
  const actual = artifactId(evidenceContentToJson(item));
  if (actual !== claimed) throw new ArtifactIdMismatchError(path, claimed, actual);
  return item;
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
        ...(c.commit ? { commit: { commit: receiptCommitToJson(c.commit.commit), signature: c.commit.signature } } : {}),
      };
    }
    case "identity":
      return signedIdentityAnchorToJson(item.content);
    case "delivered_receipt": {
      const c = item.content;
      return {
        receipt: signedSessionReceiptToJson(c.receipt),
        ...(c.request ? { request: bytesToHex(c.request) } : {}),
        ...(c.output ? { output: bytesToHex(c.output) } : {}),
      };
    }
    case "fault":
      return signedFaultStatementToJson(item.content);
    case "progress": {
      const c = item.content;
      return {
        proof: signedProgressProofToJson(c.proof),
        request: trancheRequestToJson(c.request),
        ...(c.secret === undefined ? {} : { secret: c.secret }),
        ...(c.sample === undefined ? {} : { sample: c.sample }),
        ...(c.conflicting ? { conflicting: signedProgressProofToJson(c.conflicting) } : {}),
      };
    }
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
