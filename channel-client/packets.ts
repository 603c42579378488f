/**
 * PKT envelopes (whitepaper Appendix A.3): the packets payer and provider exchange in a session.
 * `decodePacket` is the boundary: size limit, nesting limit, exact schema, typed artifacts out.
 * MCP payloads are the application's own JSON and pass through as opaque objects.
 */
import type { Hex } from "viem";

import { canon, parseJson } from "./canonical";
import { BindingMismatchError, InvalidFieldError } from "./errors";
import { receiptCommitToJson, signedReceiptCommitFromJson, type SignedReceiptCommit } from "./receipt-commit";
import { signedSessionReceiptFromJson, signedSessionReceiptToJson, type SignedSessionReceipt } from "./receipt";
import { signedPaymentTicketFromJson, signedPaymentTicketToJson, type SignedPaymentTicket } from "./ticket";
import {
  expectHash,
  expectLiteral,
  expectObject,
  expectString,
  expectUint,
  uintToJson,
  type JsonObject,
} from "./validate";

/** Largest packet accepted from a peer. */
export const MAX_PACKET_BYTES = 1 << 20;

export const PACKET_TYPES = ["PKT_LEASE_ISSUE", "PKT_ACTION_INVOKE", "PKT_ACTION_RESULT", "PKT_RECEIPT_COMMIT"] as const;
export type PacketType = (typeof PACKET_TYPES)[number];

type Envelope<T extends PacketType> = {
  pkt_version: "1";
  packet_type: T;
  /** RFC 3339 UTC timestamp, e.g. 2026-02-22T10:15:00Z. */
  issued_at: string;
  session_id: Hex;
};

export type PolicyDecision = { policy_hash: Hex; decision: "approved" | "denied"; enforced_bounds: string[] };

export type LeaseIssuePacket = Envelope<"PKT_LEASE_ISSUE"> & { tenant_id?: string; payload: { mcp: JsonObject } };
export type ActionInvokePacket = Envelope<"PKT_ACTION_INVOKE"> & {
  lease_id?: string;
  /**
   * `leaf_count`: how many receipts the ticket's root covers — a hint that lets the provider check the
   * root of a pipelined ticket in O(log n) (the signature still binds the root itself).
   */
  payload: { mcp: JsonObject; ticket: SignedPaymentTicket; leaf_count?: string };
};
export type ActionResultPacket = Envelope<"PKT_ACTION_RESULT"> & {
  lease_id?: string;
  action_result_id: string;
  payload: { mcp: JsonObject; receipt: SignedSessionReceipt; policy?: PolicyDecision };
};
export type ReceiptCommitPacket = Envelope<"PKT_RECEIPT_COMMIT"> & { payload: { commit: SignedReceiptCommit } };

export type Packet = LeaseIssuePacket | ActionInvokePacket | ActionResultPacket | ReceiptCommitPacket;

const ISSUED_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;
const ID_MAX = 128;

/** Serialises a packet as canonical JSON, so equal packets are equal bytes. */
export function encodePacket(packet: Packet): string {
  return canon(packetToJson(packet));
}

function packetToJson(packet: Packet): JsonObject {
  switch (packet.packet_type) {
    case "PKT_ACTION_INVOKE":
      return { ...packet, payload: { ...packet.payload, ticket: signedPaymentTicketToJson(packet.payload.ticket) } };
    case "PKT_ACTION_RESULT":
      return {
        ...packet,
        payload: { ...packet.payload, receipt: signedSessionReceiptToJson(packet.payload.receipt) },
      };
    case "PKT_RECEIPT_COMMIT":
      return {
        ...packet,
        payload: {
          commit: {
            commit: receiptCommitToJson(packet.payload.commit.commit),
            signature: packet.payload.commit.signature,
          },
        },
      };
    case "PKT_LEASE_ISSUE":
      return packet;
  }
}

/**
 * Parses and validates a packet from a peer. Throws a typed error (InvalidJsonError, SizeLimitError,
 * InvalidFieldError, UnknownFieldError, AmountAsNumberError, BindingMismatchError) naming what was wrong.
 * Signatures are not checked here: that needs the channel's keys (see the node's ticket checks).
 */
export function decodePacket(input: string | Uint8Array, maxBytes = MAX_PACKET_BYTES): Packet {
  return packetFromJson(parseJson(input, { maxBytes, what: "The packet" }));
}

/** Validates a packet already parsed by `parseJson` (which refused what canonical JSON cannot hold). */
export function packetFromJson(raw: unknown): Packet {
  const head = expectObject(raw, "packet", ["pkt_version", "packet_type", "issued_at", "session_id", "payload"], [
    "lease_id",
    "action_result_id",
    "tenant_id",
  ]);
  const packetType = expectLiteral(head.packet_type, "packet.packet_type", PACKET_TYPES);
  const envelope = {
    pkt_version: expectLiteral(head.pkt_version, "packet.pkt_version", ["1"]),
    issued_at: expectIssuedAt(head.issued_at),
    session_id: expectHash(head.session_id, "packet.session_id"),
  };
  const optionalId = (key: string) =>
    head[key] === undefined ? {} : { [key]: expectString(head[key], `packet.${key}`, ID_MAX) };
  const forbid = (key: string) => {
    if (head[key] !== undefined) {
      throw new InvalidFieldError(`packet.${key}`, `absent in a ${packetType}`, head[key]);
    }
  };

  switch (packetType) {
    case "PKT_LEASE_ISSUE": {
      forbid("lease_id");
      forbid("action_result_id");
      const payload = expectObject(head.payload, "packet.payload", ["mcp"]);
      return {
        ...envelope,
        packet_type: packetType,
        ...optionalId("tenant_id"),
        payload: { mcp: expectMcp(payload.mcp) },
      };
    }
    case "PKT_ACTION_INVOKE": {
      forbid("action_result_id");
      forbid("tenant_id");
      const payload = expectObject(head.payload, "packet.payload", ["mcp", "ticket"], ["leaf_count"]);
      const ticket = signedPaymentTicketFromJson(payload.ticket, "packet.payload.ticket");
      assertSameSession(envelope.session_id, ticket.ticket.sessionId, "ticket");
      const leafCount =
        payload.leaf_count === undefined
          ? {}
          : { leaf_count: uintToJson(expectUint(payload.leaf_count, "packet.payload.leaf_count", 53)) };
      return {
        ...envelope,
        packet_type: packetType,
        ...optionalId("lease_id"),
        payload: { mcp: expectMcp(payload.mcp), ticket, ...leafCount },
      };
    }
    case "PKT_ACTION_RESULT": {
      forbid("tenant_id");
      const payload = expectObject(head.payload, "packet.payload", ["mcp", "receipt"], ["policy"]);
      const receipt = signedSessionReceiptFromJson(payload.receipt, "packet.payload.receipt");
      assertSameSession(envelope.session_id, receipt.receipt.sessionId, "receipt");
      return {
        ...envelope,
        packet_type: packetType,
        ...optionalId("lease_id"),
        action_result_id: expectString(head.action_result_id, "packet.action_result_id", ID_MAX),
        payload: {
          mcp: expectMcp(payload.mcp),
          receipt,
          ...(payload.policy === undefined ? {} : { policy: expectPolicy(payload.policy) }),
        },
      };
    }
    case "PKT_RECEIPT_COMMIT": {
      forbid("lease_id");
      forbid("action_result_id");
      forbid("tenant_id");
      const payload = expectObject(head.payload, "packet.payload", ["commit"]);
      const commit = signedReceiptCommitFromJson(payload.commit, "packet.payload.commit");
      assertSameSession(envelope.session_id, commit.commit.sessionId, "receipt commit");
      return { ...envelope, packet_type: packetType, payload: { commit } };
    }
  }
}

function expectIssuedAt(value: unknown): string {
  if (typeof value !== "string" || !ISSUED_AT.test(value) || Number.isNaN(Date.parse(value))) {
    throw new InvalidFieldError("packet.issued_at", "an RFC 3339 UTC time such as 2026-02-22T10:15:00Z", value);
  }
  return value;
}

function expectMcp(value: unknown): JsonObject {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidFieldError("packet.payload.mcp", "a JSON-RPC object", value);
  }
  // Canonical JSON can hold it (no 1e400, no lone surrogate): parseJson refused anything else at the boundary.
  return value as JsonObject;
}

function expectPolicy(value: unknown): PolicyDecision {
  const o = expectObject(value, "packet.payload.policy", ["policy_hash", "decision", "enforced_bounds"]);
  const bounds = o.enforced_bounds;
  if (!Array.isArray(bounds) || bounds.length > 64) {
    throw new InvalidFieldError("packet.payload.policy.enforced_bounds", "an array of at most 64 strings", bounds);
  }
  return {
    policy_hash: expectHash(o.policy_hash, "packet.payload.policy.policy_hash"),
    decision: expectLiteral(o.decision, "packet.payload.policy.decision", ["approved", "denied"]),
    enforced_bounds: bounds.map((b, i) => expectString(b, `packet.payload.policy.enforced_bounds[${i}]`, ID_MAX)),
  };
}

function assertSameSession(envelopeSession: Hex, artifactSession: Hex, what: string): void {
  if (envelopeSession !== artifactSession) {
    throw new BindingMismatchError(`The packet is for session ${envelopeSession} but its ${what} is for ${artifactSession}.`);
  }
}
