/**
 * SettlementSummary: the closing statement of a channel. Both parties sign it (EIP-712) for a
 * cooperative close; the contract pays `finalAmount` to the provider and refunds the rest.
 */
import type { Address, Hex, LocalAccount } from "viem";

import { assertDigestSigner, eip712Types, hashTyped, type GasEscrowDomain, type SignatureCheck } from "./eip712";
import {
  expectAddress,
  expectHash,
  expectLiteral,
  expectObject,
  expectUint,
  uintToJson,
} from "./validate";

/** Mirrors `IGasEscrow.CloseMode`; signed as its index (uint8). */
export const CLOSE_MODES = ["Cooperative", "Unilateral"] as const;
export type CloseMode = (typeof CLOSE_MODES)[number];

export type SettlementSummary = {
  sessionId: Hex;
  provider: Address;
  payer: Address;
  termsHash: Hex;
  finalSeq: bigint;
  finalAmount: bigint;
  finalReceiptRoot: Hex;
  mode: CloseMode;
};

export type SettlementSummaryJson = {
  sessionId: Hex;
  provider: Hex;
  payer: Hex;
  termsHash: Hex;
  finalSeq: string;
  finalAmount: string;
  finalReceiptRoot: Hex;
  mode: CloseMode;
};

const FIELDS = [
  "sessionId",
  "provider",
  "payer",
  "termsHash",
  "finalSeq",
  "finalAmount",
  "finalReceiptRoot",
  "mode",
] as const;

export function settlementSummaryToJson(summary: SettlementSummary): SettlementSummaryJson {
  return {
    sessionId: summary.sessionId,
    provider: summary.provider.toLowerCase() as Hex,
    payer: summary.payer.toLowerCase() as Hex,
    termsHash: summary.termsHash,
    finalSeq: uintToJson(summary.finalSeq),
    finalAmount: uintToJson(summary.finalAmount),
    finalReceiptRoot: summary.finalReceiptRoot,
    mode: summary.mode,
  };
}

export function settlementSummaryFromJson(value: unknown, path = "SettlementSummary"): SettlementSummary {
  const o = expectObject(value, path, FIELDS);
  return {
    sessionId: expectHash(o.sessionId, `${path}.sessionId`),
    provider: expectAddress(o.provider, `${path}.provider`),
    payer: expectAddress(o.payer, `${path}.payer`),
    termsHash: expectHash(o.termsHash, `${path}.termsHash`),
    finalSeq: expectUint(o.finalSeq, `${path}.finalSeq`, 64),
    finalAmount: expectUint(o.finalAmount, `${path}.finalAmount`, 128),
    finalReceiptRoot: expectHash(o.finalReceiptRoot, `${path}.finalReceiptRoot`),
    mode: expectLiteral(o.mode, `${path}.mode`, CLOSE_MODES),
  };
}

function toTypedMessage(summary: SettlementSummary) {
  return { ...summary, mode: CLOSE_MODES.indexOf(summary.mode) };
}

/** The EIP-712 digest both parties sign and `GasEscrow.hashSettlementSummary` computes. */
export function settlementSummaryDigest(domain: GasEscrowDomain, summary: SettlementSummary): Hex {
  return hashTyped(domain, "SettlementSummary", toTypedMessage(summary));
}

export async function signSettlementSummary(parameters: {
  account: LocalAccount;
  domain: GasEscrowDomain;
  summary: SettlementSummary;
}): Promise<Hex> {
  const { account, domain, summary } = parameters;
  return account.signTypedData({
    domain,
    types: { SettlementSummary: eip712Types.SettlementSummary },
    primaryType: "SettlementSummary",
    message: toTypedMessage(summary),
  });
}

/** Throws {@link InvalidSignatureError} unless `signer` signed exactly this summary in this domain. */
export async function verifySettlementSummary(parameters: {
  domain: GasEscrowDomain;
  summary: SettlementSummary;
  signature: Hex;
  signer: Address;
  role: "payer" | "provider";
  /** How the signer's signature is checked (default: recovery; a contract wallet's ERC-1271, decision 0035). */
  check?: SignatureCheck;
}): Promise<void> {
  const { domain, summary, signature, signer, role, check = assertDigestSigner } = parameters;
  await check(settlementSummaryDigest(domain, summary), signature, signer, `${role}'s settlement summary`);
}

/** Mirrors `IGasEscrow.ClosingState`: what a unilateral close recorded (committed on-chain by a fingerprint). */
export type ClosingState = { deposit: bigint; seq: bigint; amount: bigint; receiptRoot: Hex; feeBps: number };
