/**
 * What payer and provider nodes say to each other inside the sealed connection: the PKT envelopes of the
 * whitepaper (`../packets.ts`) plus a few control messages of the node protocol (bind a session, report
 * where the provider stands, reject one ticket, co-sign a close). Every message is canonical JSON; the
 * decoder is the boundary and answers bad input with a typed error, never a crash.
 */
import type { Hex } from "viem";

import { canon, parseJson } from "../core/canonical";
import { encodePacket, MAX_PACKET_BYTES, packetFromJson, type Packet } from "../core/packets";
import { InvalidFieldError } from "../core/errors";
import { utf8Bytes } from "../core/keccak";
import { signedSessionReceiptFromJson, signedSessionReceiptToJson, type SignedSessionReceipt } from "../core/receipt";
import { signedSessionKeyGrantFromJson, signedSessionKeyGrantToJson, type SignedSessionKeyGrant } from "../core/session-key";
import { settlementSummaryFromJson, settlementSummaryToJson, type SettlementSummary } from "../core/summary";
import { signedTermsOfferFromJson, signedTermsOfferToJson, type SignedTermsOffer } from "../core/terms-offer";
import {
  channelRefFromJson,
  channelRefToJson,
  pricingTermsFromJson,
  pricingTermsToJson,
  type ChannelRef,
  type PricingTerms,
} from "../core/terms";
import { signedPaymentTicketFromJson, signedPaymentTicketToJson, type SignedPaymentTicket } from "../core/ticket";
import { expectHash, expectLiteral, expectObject, expectPayerSignatureHex, expectSignatureHex, expectString, expectUint, uintToJson } from "../core/validate";
import {
  signedProgressProofFromJson,
  signedProgressProofToJson,
  trancheRequestFromJson,
  trancheRequestToJson,
  type SignedProgressProof,
  type TrancheRequest,
} from "../core/progress-proof";
import { receiptCommitToJson, signedReceiptCommitFromJson, type SignedReceiptCommit } from "../core/receipt-commit";
import { bundleFromJson, bundleToJson, type Bundle } from "../../arbitration/documents/bundle";

/**
 * Payer → provider, first message: which channel this connection is for and its pricing document, and the
 * payer's grant when a session key signs the tickets (decision 0025).
 */
export type SessionOpenMessage = { type: "session.open"; ref: ChannelRef; pricing: PricingTerms; sessionKey?: SignedSessionKeyGrant };

/** Provider → payer: the session is bound; where the provider stands (so the payer can resume). */
export type SessionReadyMessage = { type: "session.ready"; lastSeq: bigint; leafCount: bigint; deposit: bigint };

/** Provider → payer: one ticket was refused (typed error name and sentence); the connection stays up. */
export type RejectMessage = { type: "reject"; seq: bigint; error: string; message: string };

/** Payer → provider: a cooperative close the payer signed. */
export type CloseProposeMessage = { type: "close.propose"; summary: SettlementSummary; signature: Hex };

/** Provider → payer: the provider's signature over the same summary. */
export type CloseCountersignMessage = { type: "close.countersign"; signature: Hex };

/** Payer → provider, before any channel exists (issue 12): which terms would you serve a channel on? */
export type TermsRequestMessage = { type: "terms.request" };

/** Provider → payer: its signed offer for this escrow; the payer funds only a channel on these terms. */
export type TermsOfferMessage = { type: "terms.offer"; offer: SignedTermsOffer };

/** Most steps one `steps` answer carries (a step is about 1.5 KB of JSON, so a page stays near 100 KB). */
export const STEPS_PAGE = 64;

/**
 * Payer → provider, when the provider's last seq is past the payer's (decision 0009, issue 15): the payer sent
 * tickets it had not yet made durable and lost them in a crash. Asks for the answered steps from `fromSeq` on.
 */
export type StepsRequestMessage = { type: "steps.request"; fromSeq: bigint; limit: number };

/**
 * Provider → payer: answered steps from the requested seq on, ascending, at most the requested number: each
 * the payer's signed ticket and the provider's signed receipt for it (the outputs are not retained).
 */
export type StepsMessage = { type: "steps"; steps: { ticket: SignedPaymentTicket; receipt: SignedSessionReceipt }[] };

/**
 * Payer → provider, milestone streaming (issue 32, decision 0037): tranche k's ticket with the tranche request
 * carrying the payer's commitment to its sampling secret. The provider answers `stream.result` or `reject`; a
 * ticket it already answered is answered again from its store (the same receipt and proof).
 */
export type StreamTrancheMessage = { type: "stream.tranche"; ticket: SignedPaymentTicket; request: TrancheRequest; leafCount?: bigint };

/** Provider → payer: tranche k's receipt (output = the proof's hash, input = the request's), its signed proof and the receipt commit. */
export type StreamResultMessage = { type: "stream.result"; receipt: SignedSessionReceipt; proof: SignedProgressProof; commit: SignedReceiptCommit };

/** Payer → provider: the revealed secret of tranche k and the drawn claim indices (the provider answers only the agreed draw). */
export type StreamSampleMessage = { type: "stream.sample"; tranche: bigint; secret: Hex; indices: number[] };

/** Provider → payer: the repository tranche k's proof is anchored to (it must fit in one message). */
export type StreamRepositoryMessage = { type: "stream.repository"; tranche: bigint; repository: Bundle };

/** Most claim indices a sample names (the terms' `samplesPerTranche` is at most 16). */
export const MAX_SAMPLE_INDICES = 16;

/**
 * Payer → provider (decision 0033, exactly once): the output of an answered step the payer holds the receipt of
 * but not the output (it took the step back after a crash, or its own write was lost). Asked once per seq.
 */
export type ResultRequestMessage = { type: "result.request"; seq: bigint };

/**
 * Provider → payer: the output it kept for `seq` (canonical JSON text, what the receipt's outputHash binds), or
 * none when it keeps no outputs. The payer takes it only if it hashes to its receipt's outputHash.
 */
export type ResultMessage = { type: "result"; seq: bigint; output: string | null };

export type ControlMessage =
  | StreamTrancheMessage
  | StreamResultMessage
  | StreamSampleMessage
  | StreamRepositoryMessage
  | ResultRequestMessage
  | ResultMessage
  | SessionOpenMessage
  | SessionReadyMessage
  | RejectMessage
  | CloseProposeMessage
  | CloseCountersignMessage
  | TermsRequestMessage
  | TermsOfferMessage
  | StepsRequestMessage
  | StepsMessage;

export type NodeMessage = Packet | ControlMessage;

const CONTROL_TYPES = [
  "result.request",
  "result",
  "session.open",
  "session.ready",
  "reject",
  "close.propose",
  "close.countersign",
  "terms.request",
  "terms.offer",
  "steps.request",
  "steps",
  "stream.tranche",
  "stream.result",
  "stream.sample",
  "stream.repository",
] as const;

export function isPacket(message: NodeMessage): message is Packet {
  return "packet_type" in message;
}


/** `mcpText`: a packet's MCP message already in canonical form (see `encodePacket`). */
export function encodeMessage(message: NodeMessage, mcpText?: string): Uint8Array {
  if (isPacket(message)) return utf8Bytes(encodePacket(message, mcpText));
  return utf8Bytes(canon(controlToJson(message)));
}

function controlToJson(message: ControlMessage): Record<string, unknown> {
  switch (message.type) {
    case "stream.tranche":
      return {
        type: message.type,
        ticket: signedPaymentTicketToJson(message.ticket),
        request: trancheRequestToJson(message.request),
        ...(message.leafCount === undefined ? {} : { leafCount: uintToJson(message.leafCount) }),
      };
    case "stream.result":
      return {
        type: message.type,
        receipt: signedSessionReceiptToJson(message.receipt),
        proof: signedProgressProofToJson(message.proof),
        commit: { commit: receiptCommitToJson(message.commit.commit), signature: message.commit.signature },
      };
    case "stream.sample":
      return { type: message.type, tranche: uintToJson(message.tranche), secret: message.secret, indices: [...message.indices] };
    case "stream.repository":
      return { type: message.type, tranche: uintToJson(message.tranche), repository: bundleToJson(message.repository) };
    case "session.open":
      return {
        type: message.type,
        ref: channelRefToJson(message.ref),
        pricing: pricingTermsToJson(message.pricing),
        ...(message.sessionKey ? { sessionKey: signedSessionKeyGrantToJson(message.sessionKey) } : {}),
      };
    case "session.ready":
      return {
        type: message.type,
        lastSeq: uintToJson(message.lastSeq),
        leafCount: uintToJson(message.leafCount),
        deposit: uintToJson(message.deposit),
      };
    case "reject":
      return { type: message.type, seq: uintToJson(message.seq), error: message.error, message: message.message };
    case "close.propose":
      return { type: message.type, summary: settlementSummaryToJson(message.summary), signature: message.signature };
    case "close.countersign":
      return { type: message.type, signature: message.signature };
    case "terms.request":
      return { type: message.type };
    case "terms.offer":
      return { type: message.type, offer: signedTermsOfferToJson(message.offer) };
    case "steps.request":
      return { type: message.type, fromSeq: uintToJson(message.fromSeq), limit: message.limit };
    case "result.request":
      return { type: message.type, seq: uintToJson(message.seq) };
    case "result":
      return { type: message.type, seq: uintToJson(message.seq), output: message.output };
    case "steps":
      return { type: message.type, steps: message.steps.map((step) => ({ ticket: signedPaymentTicketToJson(step.ticket), receipt: signedSessionReceiptToJson(step.receipt) })) };
  }
}

/** Decodes one message from a peer; throws a typed error naming what was wrong. */
export function decodeMessage(bytes: Uint8Array): NodeMessage {
  const raw = parseJson(bytes, { maxBytes: MAX_PACKET_BYTES, what: "The message" });
  if (typeof raw === "object" && raw !== null && !Array.isArray(raw) && "packet_type" in raw) return packetFromJson(raw);
  const head = expectObject(raw, "message", ["type"], ["ref", "pricing", "sessionKey", "lastSeq", "leafCount", "deposit", "seq", "error", "message", "summary", "signature", "offer", "fromSeq", "limit", "steps", "ticket", "request", "receipt", "proof", "commit", "tranche", "secret", "indices", "repository", "output"]);
  const type = expectLiteral(head.type, "message.type", CONTROL_TYPES);
  switch (type) {
    case "stream.tranche": {
      const o = expectObject(raw, "message", ["type", "ticket", "request"], ["leafCount"]);
      return {
        type,
        ticket: signedPaymentTicketFromJson(o.ticket, "message.ticket"),
        request: trancheRequestFromJson(o.request, "message.request"),
        ...(o.leafCount === undefined ? {} : { leafCount: expectUint(o.leafCount, "message.leafCount", 64) }),
      };
    }
    case "stream.result": {
      const o = expectObject(raw, "message", ["type", "receipt", "proof", "commit"]);
      return {
        type,
        receipt: signedSessionReceiptFromJson(o.receipt, "message.receipt"),
        proof: signedProgressProofFromJson(o.proof, "message.proof"),
        commit: signedReceiptCommitFromJson(o.commit, "message.commit"),
      };
    }
    case "stream.sample": {
      const o = expectObject(raw, "message", ["type", "tranche", "secret", "indices"]);
      if (!Array.isArray(o.indices) || o.indices.length === 0 || o.indices.length > MAX_SAMPLE_INDICES || o.indices.some((i) => typeof i !== "number" || !Number.isInteger(i) || i < 0 || i > 1023)) {
        throw new InvalidFieldError("message.indices", `1 to ${MAX_SAMPLE_INDICES} claim indices (integers from 0 to 1023)`, o.indices);
      }
      return { type, tranche: expectUint(o.tranche, "message.tranche", 64), secret: expectHash(o.secret, "message.secret"), indices: o.indices as number[] };
    }
    case "stream.repository": {
      const o = expectObject(raw, "message", ["type", "tranche", "repository"]);
      return { type, tranche: expectUint(o.tranche, "message.tranche", 64), repository: bundleFromJson(o.repository, "message.repository") };
    }
    case "session.open": {
      const o = expectObject(raw, "message", ["type", "ref", "pricing"], ["sessionKey"]);
      return {
        type,
        ref: channelRefFromJson(o.ref, "message.ref"),
        pricing: pricingTermsFromJson(o.pricing, "message.pricing"),
        ...(o.sessionKey === undefined ? {} : { sessionKey: signedSessionKeyGrantFromJson(o.sessionKey, "message.sessionKey") }),
      };
    }
    case "session.ready": {
      const o = expectObject(raw, "message", ["type", "lastSeq", "leafCount", "deposit"]);
      return {
        type,
        lastSeq: expectUint(o.lastSeq, "message.lastSeq", 64),
        leafCount: expectUint(o.leafCount, "message.leafCount", 64),
        deposit: expectUint(o.deposit, "message.deposit", 128),
      };
    }
    case "reject": {
      const o = expectObject(raw, "message", ["type", "seq", "error", "message"]);
      return {
        type,
        seq: expectUint(o.seq, "message.seq", 64),
        error: expectString(o.error, "message.error", 64),
        message: expectString(o.message, "message.message", 1024),
      };
    }
    case "close.propose": {
      const o = expectObject(raw, "message", ["type", "summary", "signature"]);
      return {
        type,
        summary: settlementSummaryFromJson(o.summary, "message.summary"),
        // The payer's: a contract wallet's own format (decision 0035), checked by its ERC-1271.
        signature: expectPayerSignatureHex(o.signature, "message.signature"),
      };
    }
    case "close.countersign": {
      const o = expectObject(raw, "message", ["type", "signature"]);
      return { type, signature: expectSignatureHex(o.signature, "message.signature") };
    }
    case "terms.request": {
      expectObject(raw, "message", ["type"]);
      return { type };
    }
    case "terms.offer": {
      const o = expectObject(raw, "message", ["type", "offer"]);
      return { type, offer: signedTermsOfferFromJson(o.offer, "message.offer") };
    }
    case "result.request": {
      const o = expectObject(raw, "message", ["type", "seq"]);
      return { type, seq: expectUint(o.seq, "message.seq", 64) };
    }
    case "result": {
      const o = expectObject(raw, "message", ["type", "seq", "output"]);
      if (o.output !== null && typeof o.output !== "string") throw new InvalidFieldError("message.output", "the output's canonical JSON text, or null", o.output);
      return { type, seq: expectUint(o.seq, "message.seq", 64), output: o.output as string | null };
    }
    case "steps.request": {
      const o = expectObject(raw, "message", ["type", "fromSeq", "limit"]);
      if (typeof o.limit !== "number" || !Number.isInteger(o.limit) || o.limit < 1 || o.limit > STEPS_PAGE) {
        throw new InvalidFieldError("message.limit", `an integer from 1 to ${STEPS_PAGE}`, o.limit);
      }
      return { type, fromSeq: expectUint(o.fromSeq, "message.fromSeq", 64), limit: o.limit };
    }
    case "steps": {
      const o = expectObject(raw, "message", ["type", "steps"]);
      if (!Array.isArray(o.steps) || o.steps.length > STEPS_PAGE) {
        throw new InvalidFieldError("message.steps", `an array of at most ${STEPS_PAGE} steps`, o.steps);
      }
      return {
        type,
        steps: o.steps.map((value, i) => {
          const step = expectObject(value, `message.steps[${i}]`, ["ticket", "receipt"]);
          return { ticket: signedPaymentTicketFromJson(step.ticket, `message.steps[${i}].ticket`), receipt: signedSessionReceiptFromJson(step.receipt, `message.steps[${i}].receipt`) };
        }),
      };
    }
  }
}
