/**
 * ReceiptCommit: a party's signed statement of the receipt root over the first `leafCount` leaves of a
 * session, exchanged in PKT_RECEIPT_COMMIT so both sides can prove they agreed on the history so far.
 *
 * Signed as EIP-712 typed data `ReceiptCommit(bytes32 sessionId,uint64 leafCount,bytes32 root)` in the
 * GasEscrow's domain (`eip712.ts`), so the provider's signature is the one `GasEscrow.anchorReceiptCommit`
 * checks: the payer anchors it when it closes, and a dispute case proves receipts against its root
 * (decision 0003, amendment "anchoring").
 */
import type { Address, Hex, LocalAccount } from "viem";

import { assertDigestSigner, hashTyped, signDigest, type GasEscrowDomain } from "./eip712";
import { expectHash, expectObject, expectSignatureHex, expectUint, uintToJson } from "./validate";

export type ReceiptCommit = { sessionId: Hex; leafCount: bigint; root: Hex };
export type ReceiptCommitJson = { sessionId: Hex; leafCount: string; root: Hex };
export type SignedReceiptCommit = { commit: ReceiptCommit; signature: Hex };

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

/** The EIP-712 digest of `commit` in the GasEscrow's `domain` (equal to `GasEscrow.hashReceiptCommit`). */
export function receiptCommitDigest(domain: GasEscrowDomain, commit: ReceiptCommit): Hex {
  return hashTyped(domain, "ReceiptCommit", commit);
}

export async function signReceiptCommit(
  account: LocalAccount,
  domain: GasEscrowDomain,
  commit: ReceiptCommit,
): Promise<SignedReceiptCommit> {
  return { commit, signature: await signDigest(account, receiptCommitDigest(domain, commit)) };
}

export async function verifyReceiptCommit(domain: GasEscrowDomain, signed: SignedReceiptCommit, signer: Address): Promise<void> {
  await assertDigestSigner(receiptCommitDigest(domain, signed.commit), signed.signature, signer, "receipt commit");
}
