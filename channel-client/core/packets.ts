/**
 * PKT envelopes (whitepaper Appendix A.3): the packets payer and provider exchange in a session.
 * `decodePacket` is the boundary: size limit, nesting limit, exact schema, typed artifacts out.
 * MCP payloads are the application's own JSON and pass through as opaque objects.
 */
import type { Hex } from "viem";

import { canon, parseJson } from "./canonical";
import { BindingMismatchError, InvalidFieldError } from "./errors";
import { signedFaultStatementFromJson, signedFaultStatementToJson, type SignedFaultStatement } from "./fault-statement";
import { receiptCommitToJson, signedReceiptCommitFromJson, type SignedReceiptCommit } from "./receipt-commit";
import { canonicalSignedReceiptText, signedSessionReceiptOf, signedSessionReceiptToJson, type SignedSessionReceipt, type SignedSessionReceiptJson } from "./receipt";
import { canonicalSignedTicketText, signedPaymentTicketOf, signedPaymentTicketToJson, type SignedPaymentTicket, type SignedPaymentTicketJson } from "./ticket";
import { assertMatchesSchema } from "./schemas";
import { expectUint, uintToJson, type JsonObject } from "./validate";

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
  /**
   * `fault`: the provider's signed fault statement, only for a failed call (a JSON-RPC error answer); absent
   * on every successful call, so the hot path carries nothing more (decision 0015, session no-fault path).
   */
  payload: { mcp: JsonObject; receipt: SignedSessionReceipt; policy?: PolicyDecision; fault?: SignedFaultStatement };
};
export type ReceiptCommitPacket = Envelope<"PKT_RECEIPT_COMMIT"> & { payload: { commit: SignedReceiptCommit } };

export type Packet = LeaseIssuePacket | ActionInvokePacket | ActionResultPacket | ReceiptCommitPacket;


/**
 * Serialises a packet as canonical JSON, so equal packets are equal bytes. `mcpText`, when the caller has it, is
 * `canon(packet.payload.mcp)` already written (the payer hashed it for the ticket, the provider wrote the result
 * it receipted): the MCP message is then not serialised a second time.
 */
export function encodePacket(packet: Packet, mcpText?: string): string {
  return hotPacketText(packet, mcpText) ?? canon(packetToJson(packet));
}

/**
 * `canon({ jsonrpc: "2.0", id, result })` for a result whose canonical text is `resultText` already: the MCP message
 * of a paid call's answer, written around the output the receipt binds (RFC 8785 orders the keys "id" < "jsonrpc"
 * < "result"). `hot-path-encoding.test` proves it equal to `canon` of the object.
 */
export function resultMcpText(id: unknown, resultText: string): string {
  return `{"id":${canon(id)},"jsonrpc":"2.0","result":${resultText}}`;
}

const LOWER_HASH = /^0x[0-9a-f]{64}$/;
const INVOKE_KEYS = new Set(["pkt_version", "packet_type", "issued_at", "session_id", "lease_id", "payload"]);
const INVOKE_PAYLOAD_KEYS = new Set(["mcp", "ticket", "leaf_count"]);
const RESULT_KEYS = new Set(["pkt_version", "packet_type", "issued_at", "session_id", "lease_id", "action_result_id", "payload"]);
const RESULT_PAYLOAD_KEYS = new Set(["mcp", "receipt"]);

/**
 * Fewer than 60 brackets in the MCP text: it cannot nest near MAX_JSON_DEPTH inside the packet, so canon of
 * the whole packet would not refuse it either (the generic path decides the rest).
 */
function shallow(text: string): boolean {
  let brackets = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c === 0x7b || c === 0x5b) && ++brackets >= 60) return false;
  }
  return true;
}

const onlyKeys = (value: object, allowed: ReadonlySet<string>) => Object.keys(value).every((key) => allowed.has(key));
const plainString = (value: unknown): value is string => typeof value === "string" && value.isWellFormed();

/**
 * The canonical text of the two packets of every paid invocation (PKT_ACTION_INVOKE, PKT_ACTION_RESULT),
 * written out in RFC 8785 key order around the canonical texts of the MCP message and of the signed ticket
 * or receipt — the bytes `canon(packetToJson(packet))` gives, without copying and sorting the whole packet
 * (issue 15, hot path). Anything else (another packet type, an unknown or optional field the fast path does
 * not know — `policy`, a future field — or a value the generic path would refuse) returns undefined and the
 * generic path serialises it. `packets.test` proves both paths give the same bytes.
 */
function hotPacketText(packet: Packet, mcpText?: string): string | undefined {
  if (packet.pkt_version !== "1" || !plainString(packet.issued_at) || typeof packet.session_id !== "string" || !LOWER_HASH.test(packet.session_id)) {
    return undefined;
  }
  const lease = "lease_id" in packet ? packet.lease_id : undefined;
  if ("lease_id" in packet && !plainString(lease)) return undefined;
  const leaseText = lease === undefined ? "" : `"lease_id":${JSON.stringify(lease)},`;
  const tail = `"pkt_version":"1","session_id":"${packet.session_id}"}`;
  if (packet.packet_type === "PKT_ACTION_INVOKE") {
    const { payload } = packet;
    if (!onlyKeys(packet, INVOKE_KEYS) || !onlyKeys(payload, INVOKE_PAYLOAD_KEYS)) return undefined;
    if ("leaf_count" in payload && !plainString(payload.leaf_count)) return undefined;
    const ticket = canonicalSignedTicketText(payload.ticket);
    if (ticket === undefined) return undefined;
    const leafCount = payload.leaf_count === undefined ? "" : `"leaf_count":${JSON.stringify(payload.leaf_count)},`;
    const mcp = mcpText ?? canon(payload.mcp);
    if (!shallow(mcp)) return undefined;
    return (
      `{"issued_at":${JSON.stringify(packet.issued_at)},${leaseText}"packet_type":"PKT_ACTION_INVOKE",` +
      `"payload":{${leafCount}"mcp":${mcp},"ticket":${ticket}},${tail}`
    );
  }
  if (packet.packet_type === "PKT_ACTION_RESULT") {
    const { payload } = packet;
    if (!onlyKeys(packet, RESULT_KEYS) || !onlyKeys(payload, RESULT_PAYLOAD_KEYS) || !plainString(packet.action_result_id)) return undefined;
    const receipt = canonicalSignedReceiptText(payload.receipt);
    if (receipt === undefined) return undefined;
    const mcp = mcpText ?? canon(payload.mcp);
    if (!shallow(mcp)) return undefined;
    return (
      `{"action_result_id":${JSON.stringify(packet.action_result_id)},"issued_at":${JSON.stringify(packet.issued_at)},${leaseText}` +
      `"packet_type":"PKT_ACTION_RESULT","payload":{"mcp":${mcp},"receipt":${receipt}},${tail}`
    );
  }
  return undefined;
}

function packetToJson(packet: Packet): JsonObject {
  switch (packet.packet_type) {
    case "PKT_ACTION_INVOKE":
      return { ...packet, payload: { ...packet.payload, ticket: signedPaymentTicketToJson(packet.payload.ticket) } };
    case "PKT_ACTION_RESULT":
      return {
        ...packet,
        payload: {
          ...packet.payload,
          receipt: signedSessionReceiptToJson(packet.payload.receipt),
          ...(packet.payload.fault ? { fault: signedFaultStatementToJson(packet.payload.fault) } : {}),
        },
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

/**
 * Validates a packet already parsed by `parseJson` (which refused what canonical JSON cannot hold): its
 * structure against `schemas/packet.schema.json`, then what a schema cannot say — a real calendar time,
 * the envelope's session matching its artifact's, integer bounds — while converting to typed artifacts.
 */
export function packetFromJson(raw: unknown): Packet {
  assertMatchesSchema("packet", raw, "packet");
  const head = raw as JsonObject & { issued_at: string; session_id: Hex; packet_type: PacketType; payload: JsonObject };
  if (Number.isNaN(Date.parse(head.issued_at))) {
    throw new InvalidFieldError("packet.issued_at", "an RFC 3339 UTC time such as 2026-02-22T10:15:00Z", head.issued_at);
  }
  const envelope = { pkt_version: "1" as const, issued_at: head.issued_at, session_id: head.session_id };
  const optionalId = (key: string) => (head[key] === undefined ? {} : { [key]: head[key] as string });
  const payload = head.payload;
  const mcp = payload.mcp as JsonObject;

  switch (head.packet_type) {
    case "PKT_LEASE_ISSUE":
      return { ...envelope, packet_type: head.packet_type, ...optionalId("tenant_id"), payload: { mcp } };
    case "PKT_ACTION_INVOKE": {
      // The packet schema checked the ticket whole (`signedPaymentTicket`): converted only.
      const ticket = signedPaymentTicketOf(payload.ticket as SignedPaymentTicketJson);
      assertSameSession(envelope.session_id, ticket.ticket.sessionId, "ticket");
      const leafCount =
        payload.leaf_count === undefined
          ? {}
          : { leaf_count: uintToJson(expectUint(payload.leaf_count, "packet.payload.leaf_count", 53)) };
      return { ...envelope, packet_type: head.packet_type, ...optionalId("lease_id"), payload: { mcp, ticket, ...leafCount } };
    }
    case "PKT_ACTION_RESULT": {
      // The packet schema checked the receipt whole (`signedSessionReceipt`): converted only.
      const receipt = signedSessionReceiptOf(payload.receipt as SignedSessionReceiptJson);
      assertSameSession(envelope.session_id, receipt.receipt.sessionId, "receipt");
      const fault = payload.fault === undefined ? undefined : signedFaultStatementFromJson(payload.fault, "packet.payload.fault");
      if (fault) assertSameSession(envelope.session_id, fault.statement.sessionId, "fault statement");
      return {
        ...envelope,
        packet_type: head.packet_type,
        ...optionalId("lease_id"),
        action_result_id: head.action_result_id as string,
        payload: {
          mcp,
          receipt,
          ...(payload.policy === undefined ? {} : { policy: payload.policy as PolicyDecision }),
          ...(fault ? { fault } : {}),
        },
      };
    }
    case "PKT_RECEIPT_COMMIT": {
      const commit = signedReceiptCommitFromJson(payload.commit, "packet.payload.commit");
      assertSameSession(envelope.session_id, commit.commit.sessionId, "receipt commit");
      return { ...envelope, packet_type: head.packet_type, payload: { commit } };
    }
  }
}

function assertSameSession(envelopeSession: Hex, artifactSession: Hex, what: string): void {
  if (envelopeSession !== artifactSession) {
    throw new BindingMismatchError(`The packet is for session ${envelopeSession} but its ${what} is for ${artifactSession}.`);
  }
}
