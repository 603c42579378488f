/**
 * The receipt leaf (whitepaper 4.2.3):
 *   leaf = keccak256(keccak256("IOI_SESSION_LEAF_V1") ‖ keccak256(canon(SessionReceipt)) ‖ keccak256(canon(PaymentTicket)))
 * A leaf is the hash of a 96-byte preimage while an inner node hashes 64 bytes, so a leaf can never be
 * presented as an inner node or the reverse. `contracts/libraries/ReceiptLeaf.sol` computes the same.
 */
import { hexToBytes, keccak256, stringToBytes, type Hex } from "viem";

import { keccak256Hex } from "./keccak";

import { sessionReceiptHash, type SessionReceipt } from "./receipt";
import { paymentTicketHash, type PaymentTicket } from "./ticket";

export const LEAF_DOMAIN = "IOI_SESSION_LEAF_V1";
export const LEAF_DOMAIN_HASH: Hex = keccak256(stringToBytes(LEAF_DOMAIN));
const LEAF_DOMAIN_BYTES = hexToBytes(LEAF_DOMAIN_HASH);

/** The leaf from the two artifact hashes, for callers that already hold them. */
export function receiptLeafFromHashes(receiptHash: Hex, ticketHash: Hex): Hex {
  const preimage = new Uint8Array(96);
  preimage.set(LEAF_DOMAIN_BYTES, 0);
  preimage.set(hexToBytes(receiptHash, { size: 32 }), 32);
  preimage.set(hexToBytes(ticketHash, { size: 32 }), 64);
  return keccak256Hex(preimage);
}

/** The leaf of one step: the provider's receipt and the ticket that paid for it. */
export function receiptLeaf(receipt: SessionReceipt, ticket: PaymentTicket): Hex {
  return receiptLeafFromHashes(sessionReceiptHash(receipt), paymentTicketHash(ticket));
}
