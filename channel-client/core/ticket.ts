/**
 * PaymentTicket: the payer's monotonic promise to pay, signed as EIP-712 typed data bound to the escrow.
 *
 * Ticket `n` prepays invocation `n` and carries the receipt root over leaves `1..n-1` — the receipts the
 * payer had accepted when it signed (docs/decisions/0003-which-root-a-ticket-carries.md).
 */
import { getAddress, hexToBytes, type Address, type Hex, type LocalAccount } from "viem";

import { artifactId } from "./canonical";
import { assertDigestSigner, signDigest, structDigest, typeHash, type GasEscrowDomain, type SignatureCheck } from "./eip712";
import { keccak256TextHex, writeHexField } from "./keccak";
import { InvalidFieldError, TicketNotNewerError } from "./errors";
import { assertMatchesSchema } from "./schemas";
import { uintToJson } from "./validate";

/** Mirrors the EIP-712 `PaymentTicket` field for field. */
export type PaymentTicket = {
  sessionId: Hex;
  provider: Address;
  termsHash: Hex;
  seq: bigint;
  cumulativeAmount: bigint;
  receiptRoot: Hex;
};

/** The JSON form that is canonicalized for the receipt leaf: amounts and seq as decimal strings. */
export type PaymentTicketJson = {
  sessionId: Hex;
  provider: Hex;
  termsHash: Hex;
  seq: string;
  cumulativeAmount: string;
  receiptRoot: Hex;
};

export type SignedPaymentTicket = { ticket: PaymentTicket; signature: Hex };
export type SignedPaymentTicketJson = { ticket: PaymentTicketJson; signature: Hex };

export function paymentTicketToJson(ticket: PaymentTicket): PaymentTicketJson {
  return {
    sessionId: ticket.sessionId,
    provider: ticket.provider.toLowerCase() as Hex,
    termsHash: ticket.termsHash,
    seq: uintToJson(ticket.seq),
    cumulativeAmount: uintToJson(ticket.cumulativeAmount),
    receiptRoot: ticket.receiptRoot,
  };
}

/**
 * Validates a ticket received from outside against the packet schema's `paymentTicket` (its bounds are the
 * code's: uint64 seq, uint128 amount, lowercase hex); throws a typed error naming the first bad field.
 */
export function paymentTicketFromJson(value: unknown, path = "PaymentTicket"): PaymentTicket {
  assertMatchesSchema("packet", value, path, "paymentTicket");
  return paymentTicketOf(value as PaymentTicketJson);
}

/** A ticket from JSON its schema accepted. */
function paymentTicketOf(o: PaymentTicketJson): PaymentTicket {
  return {
    sessionId: o.sessionId,
    provider: getAddress(o.provider),
    termsHash: o.termsHash,
    seq: BigInt(o.seq),
    cumulativeAmount: BigInt(o.cumulativeAmount),
    receiptRoot: o.receiptRoot,
  };
}

export function signedPaymentTicketToJson(signed: SignedPaymentTicket): SignedPaymentTicketJson {
  return { ticket: paymentTicketToJson(signed.ticket), signature: signed.signature };
}

export function signedPaymentTicketFromJson(value: unknown, path = "SignedPaymentTicket"): SignedPaymentTicket {
  assertMatchesSchema("packet", value, path, "signedPaymentTicket");
  return signedPaymentTicketOf(value as SignedPaymentTicketJson);
}

/**
 * A signed ticket from JSON that a schema embedding `signedPaymentTicket` already accepted (a packet's, in
 * `packetFromJson`): converted, not validated a second time (issue 31 item 5, the hot path).
 */
export function signedPaymentTicketOf(o: SignedPaymentTicketJson): SignedPaymentTicket {
  return { ticket: paymentTicketOf(o.ticket), signature: o.signature };
}

/** `keccak256(canon(ticket))`, the ticket's half of the receipt leaf. Excludes the signature: a signature is never an id. */
export function paymentTicketHash(ticket: PaymentTicket): Hex {
  const text = canonicalTicketText(ticket);
  return text === undefined ? artifactId(paymentTicketToJson(ticket)) : keccak256TextHex(text);
}

const LOWER_HASH = /^0x[0-9a-f]{64}$/;
const ANY_CASE_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const LOWER_SIGNATURE = /^0x[0-9a-f]{130}$/;
const UINT64_END = 1n << 64n;
const UINT128_END = 1n << 128n;

/**
 * RFC 8785 canonical JSON of a ticket written out directly (keys in code-unit order, amounts as decimal
 * strings, the provider lowercased as `paymentTicketToJson` does): the bytes `canon(paymentTicketToJson(t))`
 * gives, without building and sorting an object (issue 15, hot path). Returns undefined for anything that is
 * not a well-formed ticket (non-lowercase hashes, a malformed address, integers out of range), so that the
 * generic path decides — and refuses what it must. `artifacts.test` proves both paths give the same bytes.
 */
export function canonicalTicketText(t: PaymentTicket): string | undefined {
  // A node writes each ticket's text three or four times (to hash it, to store it, to store its step, to send
  // it), with other tickets in between: recent texts are kept by seq with the field values they were written
  // from, and returned for equal values (values, not object identity).
  const recent = typeof t.seq === "bigint" ? recentTickets.get(t.seq) : undefined;
  if (
    recent !== undefined &&
    recent.receiptRoot === t.receiptRoot &&
    recent.cumulativeAmount === t.cumulativeAmount &&
    recent.sessionId === t.sessionId &&
    recent.termsHash === t.termsHash &&
    recent.provider === t.provider
  ) {
    return recent.text;
  }
  if (
    typeof t.seq !== "bigint" ||
    typeof t.cumulativeAmount !== "bigint" ||
    t.seq < 0n ||
    t.seq >= UINT64_END ||
    t.cumulativeAmount < 0n ||
    t.cumulativeAmount >= UINT128_END ||
    !LOWER_HASH.test(t.sessionId) ||
    !LOWER_HASH.test(t.termsHash) ||
    !LOWER_HASH.test(t.receiptRoot) ||
    !ANY_CASE_ADDRESS.test(t.provider)
  ) {
    return undefined;
  }
  const text =
    `{"cumulativeAmount":"${t.cumulativeAmount}","provider":"${t.provider.toLowerCase()}","receiptRoot":"${t.receiptRoot}",` +
    `"seq":"${t.seq}","sessionId":"${t.sessionId}","termsHash":"${t.termsHash}"}`;
  recentTickets.delete(t.seq); // re-inserted last: the map stays oldest-first
  recentTickets.set(t.seq, { sessionId: t.sessionId, provider: t.provider, termsHash: t.termsHash, cumulativeAmount: t.cumulativeAmount, receiptRoot: t.receiptRoot, text });
  if (recentTickets.size > RECENT_TICKETS) recentTickets.delete(recentTickets.keys().next().value!);
  return text;
}

/** Ticket texts written recently, by seq, with the field values each was written from (see canonicalTicketText). */
const recentTickets = new Map<bigint, { sessionId: string; provider: string; termsHash: string; cumulativeAmount: bigint; receiptRoot: string; text: string }>();
/** More than the tickets a node has in flight (64 in the bench), so a ticket's later writes find its text. */
const RECENT_TICKETS = 256;

/**
 * `canon(signedPaymentTicketToJson(signed))` written out directly, for a signed ticket that
 * `signedPaymentTicketFromJson` would accept back unchanged (what the store and the wire keep); undefined
 * otherwise, and the caller takes the generic, validating path.
 */
export function canonicalSignedTicketText(signed: SignedPaymentTicket): string | undefined {
  if (typeof signed.signature !== "string" || !LOWER_SIGNATURE.test(signed.signature)) return undefined;
  const ticket = canonicalTicketText(signed.ticket);
  return ticket === undefined ? undefined : `{"signature":"${signed.signature}","ticket":${ticket}}`;
}

const TICKET_TYPEHASH = hexToBytes(typeHash("PaymentTicket"));

/**
 * The ticket's struct words, rewritten by each `paymentTicketDigest` (hashing is synchronous, so calls cannot
 * interleave). The type hash is written once; the address's and the integers' leading padding is never written.
 */
const ticketWords = Buffer.alloc(7 * 32);
ticketWords.set(TICKET_TYPEHASH, 0);

/**
 * The EIP-712 digest the payer signs and `GasEscrow.hashPaymentTicket` computes:
 * `keccak256(0x1901 ‖ domainSeparator ‖ keccak256(typeHash ‖ fields as 32-byte words))`. Encoded by hand
 * (a test proves it equal to viem's `hashTypedData` and to the contract) because it runs twice per paid
 * invocation and the generic encoder costs more than the hashing.
 */
export function paymentTicketDigest(domain: GasEscrowDomain, ticket: PaymentTicket): Hex {
  // Fields were validated at the boundary (hex of the right length, integers in range): native hex decoding
  // and the WebAssembly keccak (decision 0023).
  const words = ticketWords;
  writeHexField(words, ticket.sessionId, 32, 32);
  writeHexField(words, ticket.provider, 64 + 12, 20);
  writeHexField(words, ticket.termsHash, 96, 32);
  words.writeBigUInt64BE(ticket.seq, 128 + 24);
  words.writeBigUInt64BE(ticket.cumulativeAmount >> 64n, 160 + 16);
  words.writeBigUInt64BE(ticket.cumulativeAmount & 0xffffffffffffffffn, 160 + 24);
  writeHexField(words, ticket.receiptRoot, 192, 32);
  return structDigest(domain, words);
}

export async function signPaymentTicket(parameters: {
  account: LocalAccount;
  domain: GasEscrowDomain;
  ticket: PaymentTicket;
}): Promise<SignedPaymentTicket> {
  const { account, domain, ticket } = parameters;
  // Signing the digest is signing the typed data (same bytes), without re-encoding it.
  if (ticket.seq >= 1n << 64n || ticket.cumulativeAmount >= 1n << 128n) {
    throw new InvalidFieldError("PaymentTicket", "seq below 2^64 and an amount below 2^128", ticket.seq);
  }
  const signature = await signDigest(account, paymentTicketDigest(domain, ticket));
  return { ticket, signature };
}

/** Throws {@link InvalidSignatureError} unless `signer` signed exactly this ticket in this domain. */
export async function verifyPaymentTicket(parameters: {
  domain: GasEscrowDomain;
  signed: SignedPaymentTicket;
  signer: Address;
  /** How the signer's signature is checked (default: recovery; a contract wallet's ERC-1271, decision 0035). */
  check?: SignatureCheck;
}): Promise<void> {
  const { domain, signed, signer, check = assertDigestSigner } = parameters;
  await check(paymentTicketDigest(domain, signed.ticket), signed.signature, signer, "payment ticket");
}

/**
 * Throws {@link TicketNotNewerError} unless `next` strictly advances `previous`: a higher seq and a
 * cumulative amount that does not decrease (whitepaper 4.2.2).
 */
export function assertTicketAdvances(previous: PaymentTicket | undefined, next: PaymentTicket): void {
  if (previous === undefined) {
    if (next.seq === 0n) throw new TicketNotNewerError("The first ticket must have seq 1 or higher, not 0.");
    return;
  }
  if (next.seq <= previous.seq) {
    throw new TicketNotNewerError(`Ticket seq ${next.seq} does not advance past seq ${previous.seq}.`);
  }
  if (next.cumulativeAmount < previous.cumulativeAmount) {
    throw new TicketNotNewerError(
      `Ticket seq ${next.seq} lowers the cumulative amount from ${previous.cumulativeAmount} to ${next.cumulativeAmount}.`,
    );
  }
}
