/**
 * ReceiptCommit: a party's signed statement of the receipt root over the first `leafCount` leaves of a
 * session, exchanged in PKT_RECEIPT_COMMIT so both sides can prove they agreed on the history so far.
 *
 * Signed as EIP-712 typed data `ReceiptCommit(bytes32 sessionId,uint64 leafCount,bytes32 root)` in the
 * GasEscrow's domain (`eip712.ts`), so the provider's signature is the one `GasEscrow.anchorReceiptCommit`
 * checks: the payer anchors it when it closes, and a dispute case proves receipts against its root
 * (decision 0003, amendment "anchoring").
 */
import { hexToBytes, type Address, type Hex, type LocalAccount } from "viem";

import { assertDigestSigner, hashTyped, structDigest, signDigest, typeHash, type GasEscrowDomain, type SignatureCheck } from "./eip712";
import { writeHexField } from "./keccak";
import { assertMatchesSchema } from "./schemas";
import { uintToJson } from "./validate";

export type ReceiptCommit = { sessionId: Hex; leafCount: bigint; root: Hex };
export type ReceiptCommitJson = { sessionId: Hex; leafCount: string; root: Hex };
export type SignedReceiptCommit = { commit: ReceiptCommit; signature: Hex };

export function receiptCommitToJson(commit: ReceiptCommit): ReceiptCommitJson {
  return { sessionId: commit.sessionId, leafCount: uintToJson(commit.leafCount), root: commit.root };
}

/** Validates a commit against the packet schema's `receiptCommit`; throws a typed error naming the first bad field. */
export function receiptCommitFromJson(value: unknown, path = "ReceiptCommit"): ReceiptCommit {
  assertMatchesSchema("packet", value, path, "receiptCommit");
  return receiptCommitOf(value as ReceiptCommitJson);
}

/** A commit from JSON its schema accepted. */
function receiptCommitOf(o: ReceiptCommitJson): ReceiptCommit {
  return { sessionId: o.sessionId, leafCount: BigInt(o.leafCount), root: o.root };
}

export function signedReceiptCommitFromJson(value: unknown, path = "SignedReceiptCommit"): SignedReceiptCommit {
  assertMatchesSchema("packet", value, path, "signedReceiptCommit");
  const o = value as { commit: ReceiptCommitJson; signature: Hex };
  return { commit: receiptCommitOf(o.commit), signature: o.signature };
}

const COMMIT_TYPEHASH = hexToBytes(typeHash("ReceiptCommit"));
/** The commit's struct words, rewritten by each digest (synchronous); the type hash and the seq's padding stay. */
const commitWords = Buffer.alloc(4 * 32);
commitWords.set(COMMIT_TYPEHASH, 0);
const LOWER_HASH = /^0x[0-9a-f]{64}$/;

/**
 * The EIP-712 digest of `commit` in the GasEscrow's `domain` (equal to `GasEscrow.hashReceiptCommit`):
 * `keccak256(0x1901 ‖ domainSeparator ‖ keccak256(typeHash ‖ sessionId ‖ uint64 leafCount ‖ root))`, encoded
 * by hand with the WebAssembly keccak (issue 15: viem's generic encoder cost more than the hashing); anything
 * unusual goes through viem's `hashTypedData`, which decides. Tests compare both and the contract.
 */
export function receiptCommitDigest(domain: GasEscrowDomain, commit: ReceiptCommit): Hex {
  if (
    typeof commit.leafCount !== "bigint" ||
    commit.leafCount < 0n ||
    commit.leafCount >= 1n << 64n ||
    typeof commit.sessionId !== "string" ||
    typeof commit.root !== "string" ||
    !LOWER_HASH.test(commit.sessionId) ||
    !LOWER_HASH.test(commit.root)
  ) {
    return hashTyped(domain, "ReceiptCommit", commit);
  }
  const words = commitWords;
  writeHexField(words, commit.sessionId, 32, 32);
  words.writeBigUInt64BE(commit.leafCount, 64 + 24);
  writeHexField(words, commit.root, 96, 32);
  return structDigest(domain, words);
}

export async function signReceiptCommit(
  account: LocalAccount,
  domain: GasEscrowDomain,
  commit: ReceiptCommit,
): Promise<SignedReceiptCommit> {
  return { commit, signature: await signDigest(account, receiptCommitDigest(domain, commit)) };
}

export async function verifyReceiptCommit(
  domain: GasEscrowDomain,
  signed: SignedReceiptCommit,
  signer: Address,
  /** How the signer's signature is checked (default: recovery; a contract-wallet payer's ERC-1271, decision 0035). */
  check: SignatureCheck = assertDigestSigner,
): Promise<void> {
  await check(receiptCommitDigest(domain, signed.commit), signed.signature, signer, "receipt commit");
}
