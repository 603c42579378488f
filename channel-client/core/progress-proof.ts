/**
 * Progress Proofs (whitepaper 4.2.7, issue 32, decision 0037): the provider's signed, multi-signal claim about one
 * tranche of streamed work, anchored to the repository state it describes, and the two small artifacts the
 * payer's sampling rests on — the tranche request (carrying the payer's commitment to its sampling secret) and the
 * sample draw that secret and the proof's hash decide.
 *
 * Folded into the receipt leaf without changing its format: the receipt of tranche k carries
 * `offloadPacketHash = trancheRequestHash(request k)` and `outputHash = progressProofHash(proof k)`, both signed
 * by the provider in its receipt, so the existing Merkle path (ticket root, anchored receipt commit) proves the
 * proof and the commitment on-chain.
 */
import { keccak256, stringToBytes, concat, type Address, type Hex, type LocalAccount } from "viem";

import { artifactId } from "./canonical";
import { assertDigestSigner, signDigest } from "./eip712";
import { InvalidFieldError } from "./errors";
import { assertMatchesSchema } from "./schemas";
import { expectUint, uintToJson } from "./validate";

export const PROGRESS_PROOF_SCHEMA = "ioi.progress_proof/1";
export const TRANCHE_REQUEST_SCHEMA = "ioi.stream_tranche/1";

/** Bounds of a proof (the schema states the same). */
export const PROGRESS_LIMITS = { maxTests: 1024, maxTestName: 256 } as const;

export type ClaimedOutcome = "pass" | "fail";
export type LintStatus = "clean" | "warnings" | "errors";

/**
 * One tranche's Progress Proof. `tests` lists every test the bound suite registers, in its registration order,
 * with the outcome the provider claims (passed n of m = the `pass` entries of the m listed).
 */
export type ProgressProof = {
  sessionId: Hex;
  /** The tranche = the seq of the receipt that carries this proof. */
  tranche: bigint;
  /** The deliverable bundle hash (`bundleHash`, arbitration/documents/bundle.ts) of the repository the claims are about. */
  repoStateHash: Hex;
  /** The bound suite's hash (the terms' `stream.suite.hash`). */
  suiteHash: Hex;
  tests: { name: string; outcome: ClaimedOutcome }[];
  /** Coverage change since the previous proof, in basis points (−10000..10000). */
  coverageDeltaBps: number;
  lint: LintStatus;
  /** A hash of the build artifact the tranche produced (provider-defined; the zero hash when none). */
  artifactHash: Hex;
  /** The previous tranche's proof hash (the zero hash for tranche 1). */
  prevProofHash: Hex;
};

export type ProgressProofJson = {
  schema: typeof PROGRESS_PROOF_SCHEMA;
  sessionId: Hex;
  tranche: string;
  repoStateHash: Hex;
  suiteHash: Hex;
  tests: { name: string; outcome: ClaimedOutcome }[];
  coverageDeltaBps: number;
  lint: LintStatus;
  artifactHash: Hex;
  prevProofHash: Hex;
};

export type SignedProgressProof = { proof: ProgressProof; signature: Hex };
export type SignedProgressProofJson = { proof: ProgressProofJson; signature: Hex };

export function progressProofToJson(proof: ProgressProof): ProgressProofJson {
  return {
    schema: PROGRESS_PROOF_SCHEMA,
    sessionId: proof.sessionId,
    tranche: uintToJson(proof.tranche),
    repoStateHash: proof.repoStateHash,
    suiteHash: proof.suiteHash,
    tests: proof.tests.map((t) => ({ name: t.name, outcome: t.outcome })),
    coverageDeltaBps: proof.coverageDeltaBps,
    lint: proof.lint,
    artifactHash: proof.artifactHash,
    prevProofHash: proof.prevProofHash,
  };
}

/** Validates a proof from a peer or a file against `schemas/progress-proof.schema.json` (definition `proof`). */
export function progressProofFromJson(value: unknown, path = "ProgressProof"): ProgressProof {
  assertMatchesSchema("progress-proof", value, path, "proof");
  const o = value as ProgressProofJson;
  const names = new Set<string>();
  o.tests.forEach((t, i) => {
    if (names.has(t.name)) throw new InvalidFieldError(`${path}.tests[${i}].name`, "a name not listed before (each test once)", t.name);
    names.add(t.name);
  });
  return {
    sessionId: o.sessionId,
    tranche: expectUint(o.tranche, `${path}.tranche`, 64),
    repoStateHash: o.repoStateHash,
    suiteHash: o.suiteHash,
    tests: o.tests.map((t) => ({ name: t.name, outcome: t.outcome })),
    coverageDeltaBps: o.coverageDeltaBps,
    lint: o.lint,
    artifactHash: o.artifactHash,
    prevProofHash: o.prevProofHash,
  };
}

export function signedProgressProofToJson(signed: SignedProgressProof): SignedProgressProofJson {
  return { proof: progressProofToJson(signed.proof), signature: signed.signature };
}

export function signedProgressProofFromJson(value: unknown, path = "SignedProgressProof"): SignedProgressProof {
  assertMatchesSchema("progress-proof", value, path, "signedProof");
  const o = value as SignedProgressProofJson;
  return { proof: progressProofFromJson(o.proof, `${path}.proof`), signature: o.signature };
}

/** `keccak256(canon(proof JSON))`: what the tranche's receipt carries as `outputHash`. */
export function progressProofHash(proof: ProgressProof): Hex {
  return artifactId(progressProofToJson(proof));
}

/** Passed n of m. */
export function testsPassed(proof: ProgressProof): { passed: number; total: number } {
  return { passed: proof.tests.filter((t) => t.outcome === "pass").length, total: proof.tests.length };
}

export const PROGRESS_SIGNATURE_DOMAIN = "IOI_SIG_DOMAIN_PROGRESS_PROOF_V1";
const PROGRESS_DOMAIN_HASH = keccak256(stringToBytes(PROGRESS_SIGNATURE_DOMAIN));

/** What the provider signs: `keccak256(keccak256(PROGRESS_SIGNATURE_DOMAIN) ‖ proofHash)` (a receipt's digest shape). */
export function progressProofDigest(proofHash: Hex): Hex {
  return keccak256(concat([PROGRESS_DOMAIN_HASH, proofHash]));
}

export async function signProgressProof(parameters: { account: LocalAccount; proof: ProgressProof }): Promise<SignedProgressProof> {
  return { proof: parameters.proof, signature: await signDigest(parameters.account, progressProofDigest(progressProofHash(parameters.proof))) };
}

/** Throws InvalidSignatureError unless `signer` (the provider) signed exactly this proof. */
export async function verifyProgressProof(parameters: { signed: SignedProgressProof; signer: Address }): Promise<void> {
  await assertDigestSigner(progressProofDigest(progressProofHash(parameters.signed.proof)), parameters.signed.signature, parameters.signer, "progress proof");
}

/*//////////////////////////////////////////////////////////////
                 TRANCHE REQUEST AND SAMPLE DRAW
//////////////////////////////////////////////////////////////*/

/**
 * What the payer sends with tranche k's ticket: the tranche and its commitment `keccak256(secret)` to a fresh
 * 32-byte sampling secret. Its artifact id is the receipt's `offloadPacketHash`, so the provider signs the
 * commitment before it writes the proof.
 */
export type TrancheRequest = { sessionId: Hex; tranche: bigint; sampleCommit: Hex };
export type TrancheRequestJson = { schema: typeof TRANCHE_REQUEST_SCHEMA; sessionId: Hex; tranche: string; sampleCommit: Hex };

export function trancheRequestToJson(request: TrancheRequest): TrancheRequestJson {
  return { schema: TRANCHE_REQUEST_SCHEMA, sessionId: request.sessionId, tranche: uintToJson(request.tranche), sampleCommit: request.sampleCommit };
}

export function trancheRequestFromJson(value: unknown, path = "TrancheRequest"): TrancheRequest {
  assertMatchesSchema("progress-proof", value, path, "trancheRequest");
  const o = value as TrancheRequestJson;
  return { sessionId: o.sessionId, tranche: expectUint(o.tranche, `${path}.tranche`, 64), sampleCommit: o.sampleCommit };
}

export function trancheRequestHash(request: TrancheRequest): Hex {
  return artifactId(trancheRequestToJson(request));
}

/** The commitment to a sampling secret. */
export function sampleCommitOf(secret: Hex): Hex {
  return keccak256(secret);
}

/**
 * The claims a proof's sample checks (decision 0037): `count` distinct test indices of the proof's `total`, drawn
 * as `uint256(keccak256(canon({domain, secret, proof, draw}))) mod total` for draw = 0, 1, … until `count` distinct
 * indices are found (all of them when count ≥ total). The secret was committed in the tranche request the
 * provider signed before it wrote the proof (it cannot aim its lies away from the draw), and the proof hash is
 * fixed before the secret is revealed (the payer cannot choose the draw), so neither side controls it.
 */
export function sampledIndices(parameters: { secret: Hex; proofHash: Hex; total: number; count: number }): number[] {
  const { secret, proofHash, total, count } = parameters;
  if (total <= 0) return [];
  if (count >= total) return Array.from({ length: total }, (_, i) => i);
  const picked: number[] = [];
  for (let draw = 0; picked.length < count; draw++) {
    const index = Number(BigInt(artifactId({ domain: "ioi.stream.sample/1", secret, proof: proofHash, draw })) % BigInt(total));
    if (!picked.includes(index)) picked.push(index);
  }
  return picked;
}
