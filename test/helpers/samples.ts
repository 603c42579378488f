/** Sample artifacts with fixed values, for known-answer and validation tests. */
import { keccak256, stringToBytes, zeroHash, type Hex } from "viem";

import type { SessionReceipt } from "../../channel-client/core/receipt";
import type { PaymentTicket } from "../../channel-client/core/ticket";
import { hardhatAccount, ROLE } from "./fixtures";

export const h = (label: string): Hex => keccak256(stringToBytes(label));

export const SESSION_ID = h("session");

export function sampleTicket(overrides: Partial<PaymentTicket> = {}): PaymentTicket {
  return {
    sessionId: SESSION_ID,
    provider: hardhatAccount(ROLE.provider).address,
    termsHash: h("terms"),
    seq: 1n,
    cumulativeAmount: 1000n,
    receiptRoot: zeroHash,
    ...overrides,
  };
}

export function sampleReceipt(overrides: Partial<SessionReceipt> = {}): SessionReceipt {
  return {
    sessionId: SESSION_ID,
    seq: 1n,
    offloadPacketHash: h("offload"),
    outputHash: h("output"),
    policyHash: h("policy"),
    modelSnapshotId: "model:demo@1",
    metering: { units: 1n, amount: 1000n },
    prevReceiptHash: zeroHash,
    ...overrides,
  };
}
