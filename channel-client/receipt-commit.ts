/**
 * ReceiptCommit: a party's signed statement of the receipt root over the first `leafCount` leaves of a
 * session, exchanged in PKT_RECEIPT_COMMIT so both sides can prove they agreed on the history so far.
 */
import { concat, keccak256, stringToBytes, type Address, type Hex, type LocalAccount } from "viem";

import { artifactId } from "./canonical";
import { assertDigestSigner, signDigest } from "./eip712";
import { expectHash, expectObject, expectSignatureHex, expectUint, uintToJson } from "./validate";

export type ReceiptCommit = { sessionId: Hex; leafCount: bigint; root: Hex };
export type ReceiptCommitJson = { sessionId: Hex; leafCount: string; root: Hex };
export type SignedReceiptCommit = { commit: ReceiptCommit; signature: Hex };

export const RECEIPT_COMMIT_SIGNATURE_DOMAIN = "IOI_SIG_DOMAIN_RECEIPT_COMMIT_V1";
const DOMAIN_HASH = keccak256(stringToBytes(RECEIPT_COMMIT_SIGNATURE_DOMAIN));

export function receiptCommitToJson(commit: ReceiptCommit): ReceiptCommitJson {
  return { sessionId: commit.sessionId, leafCount: uintToJson(commit.leafCount), root: commit.root };
}

export function receiptCommitFromJson(value: unknown, path = "ReceiptCommit"): ReceiptCommit {
  const o = expectObject(value, path, ["sessionId", "leafCount", "root"]);
  return {
    sessionId: expectHash(o.sessionId, `${path}.sessionId`),
    leafCount: expectUint(o.leafCount, `${path}.leafCount`, 64),
    root: expectHash(o.root, `${path}.root`),
  };
}

export function signedReceiptCommitFromJson(value: unknown, path = "SignedReceiptCommit"): SignedReceiptCommit {
  const o = expectObject(value, path, ["commit", "signature"]);
  return {
    commit: receiptCommitFromJson(o.commit, `${path}.commit`),
    signature: expectSignatureHex(o.signature, `${path}.signature`),
  };
}

export function receiptCommitDigest(commit: ReceiptCommit): Hex {
  return keccak256(concat([DOMAIN_HASH, artifactId(receiptCommitToJson(commit))]));
}

export async function signReceiptCommit(account: LocalAccount, commit: ReceiptCommit): Promise<SignedReceiptCommit> {
  return { commit, signature: await signDigest(account, receiptCommitDigest(commit)) };
}

export async function verifyReceiptCommit(signed: SignedReceiptCommit, signer: Address): Promise<void> {
  await assertDigestSigner(receiptCommitDigest(signed.commit), signed.signature, signer, "receipt commit");
}
