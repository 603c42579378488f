/**
 * The receipt leaf (whitepaper 4.2.3):
 *   leaf = keccak256(keccak256("IOI_SESSION_LEAF_V1") ‖ keccak256(canon(SessionReceipt)) ‖ keccak256(canon(PaymentTicket)))
 * A leaf is the hash of a 96-byte preimage while an inner node hashes 64 bytes, so a leaf can never be
 * presented as an inner node or the reverse. `contracts/libraries/ReceiptLeaf.sol` computes the same.
 */
import { hexToBytes, keccak256, stringToBytes, type Hex } from "viem";

import { InvalidHexError } from "./errors";
import { keccak256Bytes, keccak256Hex } from "./keccak";

import { sessionReceiptHash, type SessionReceipt } from "./receipt";
import { paymentTicketHash, type PaymentTicket } from "./ticket";

export const LEAF_DOMAIN = "IOI_SESSION_LEAF_V1";
export const LEAF_DOMAIN_HASH: Hex = keccak256(stringToBytes(LEAF_DOMAIN));
const LEAF_DOMAIN_BYTES = hexToBytes(LEAF_DOMAIN_HASH);
const HASH = /^0x[0-9a-fA-F]{64}$/;

/** The leaf from the two artifact hashes, for callers that already hold them. */
export function receiptLeafFromHashes(receiptHash: Hex, ticketHash: Hex): Hex {
  if (!HASH.test(receiptHash) || !HASH.test(ticketHash)) {
    throw new InvalidHexError("A receipt leaf is made of two 32-byte hashes (0x and 64 hex digits).");
  }
  const preimage = Buffer.allocUnsafe(96);
  preimage.set(LEAF_DOMAIN_BYTES, 0);
  preimage.write(receiptHash.slice(2), 32, "hex");
  preimage.write(ticketHash.slice(2), 64, "hex");
  return keccak256Hex(preimage);
}

/**
 * Leaves of many receipts paid by one ticket (batched receipts), on bytes: the domain tag and the ticket's
 * hash are written into the 96-byte preimage once, and each leaf costs one keccak of it.
 */
export class LeafBuilder {
  readonly #preimage = new Uint8Array(96);

  constructor(ticketHash: Hex) {
    if (!HASH.test(ticketHash)) throw new InvalidHexError("A ticket hash is 32 bytes (0x and 64 hex digits).");
    this.#preimage.set(LEAF_DOMAIN_BYTES, 0);
    this.#preimage.set(Buffer.from(ticketHash.slice(2), "hex"), 64);
  }

  /** The leaf of the receipt whose hash is `receiptHash` (32 bytes) under this builder's ticket. */
  leaf(receiptHash: Uint8Array): Uint8Array {
    if (receiptHash.length !== 32) throw new InvalidHexError(`A receipt hash is 32 bytes, not ${receiptHash.length}.`);
    this.#preimage.set(receiptHash, 32);
    return keccak256Bytes(this.#preimage);
  }
}

/** The leaf of one step: the provider's receipt and the ticket that paid for it. */
export function receiptLeaf(receipt: SessionReceipt, ticket: PaymentTicket): Hex {
  return receiptLeafFromHashes(sessionReceiptHash(receipt), paymentTicketHash(ticket));
}
