import { expect } from "chai";

import { decodePacket, encodePacket, MAX_PACKET_BYTES, type Packet } from "../../channel-client/core/packets";
import { signReceiptCommit } from "../../channel-client/core/receipt-commit";
import { signSessionReceipt } from "../../channel-client/core/receipt";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { thrown } from "../helpers/assert";
import { hardhatAccount, ROLE } from "../helpers/fixtures";
import { h, sampleReceipt, sampleTicket, SESSION_ID } from "../helpers/samples";

const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
const issued_at = "2026-02-22T10:16:00Z";

async function samplePackets(): Promise<Packet[]> {
  const ticket = await signPaymentTicket({ account: hardhatAccount(ROLE.payer), domain, ticket: sampleTicket() });
  const receipt = await signSessionReceipt({ account: hardhatAccount(ROLE.provider), receipt: sampleReceipt() });
  const commit = await signReceiptCommit(hardhatAccount(ROLE.provider), domain, { sessionId: SESSION_ID, leafCount: 1n, root: h("root") });
  const mcp = { jsonrpc: "2.0", id: "invoke-002", method: "tools/echo", params: { text: "hi", count: 3 } };
  return [
    { pkt_version: "1", packet_type: "PKT_LEASE_ISSUE", issued_at, session_id: SESSION_ID, tenant_id: "tenant_acme", payload: { mcp } },
    { pkt_version: "1", packet_type: "PKT_ACTION_INVOKE", issued_at, session_id: SESSION_ID, lease_id: "lease_1", payload: { mcp, ticket } },
    {
      pkt_version: "1",
      packet_type: "PKT_ACTION_RESULT",
      issued_at,
      session_id: SESSION_ID,
      action_result_id: "res_1",
      payload: {
        mcp: { jsonrpc: "2.0", id: "invoke-002", result: { text: "hi" } },
        receipt,
        policy: { policy_hash: h("policy"), decision: "approved", enforced_bounds: ["capability_match"] },
      },
    },
    { pkt_version: "1", packet_type: "PKT_RECEIPT_COMMIT", issued_at, session_id: SESSION_ID, payload: { commit } },
  ];
}

describe("PKT envelopes", () => {
  it("round-trip every packet type through canonical JSON", async () => {
    for (const packet of await samplePackets()) {
      const bytes = encodePacket(packet);
      expect(decodePacket(bytes), packet.packet_type).to.deep.equal(packet);
      expect(decodePacket(new TextEncoder().encode(bytes))).to.deep.equal(packet);
    }
  });

  it("rejects malformed packets with a typed error naming the problem", async () => {
    const [, invoke] = await samplePackets();
    const json = JSON.parse(encodePacket(invoke!)) as Record<string, any>;
    const edit = (f: (o: Record<string, any>) => void) => {
      const copy = structuredClone(json);
      f(copy);
      return JSON.stringify(copy);
    };
    const cases: Array<[string, string, string, string]> = [
      ["not JSON", "{", "InvalidJsonError", "not valid JSON"],
      ["a JSON array", "[]", "InvalidFieldError", "packet"],
      ["an unknown packet type", edit((o) => (o.packet_type = "PKT_NOPE")), "InvalidFieldError", "packet_type"],
      ["another version", edit((o) => (o.pkt_version = "2")), "InvalidFieldError", "pkt_version"],
      ["a bad timestamp", edit((o) => (o.issued_at = "yesterday")), "InvalidFieldError", "issued_at"],
      ["an extra field", edit((o) => (o.extra = 1)), "UnknownFieldError", "extra"],
      ["a field of another packet type", edit((o) => (o.action_result_id = "x")), "InvalidFieldError", "action_result_id"],
      ["an amount as a number", edit((o) => (o.payload.ticket.ticket.cumulativeAmount = 1000)), "AmountAsNumberError", "cumulativeAmount"],
      ["a ticket for another session", edit((o) => (o.payload.ticket.ticket.sessionId = h("other"))), "BindingMismatchError", "session"],
      ["a missing signature", edit((o) => delete o.payload.ticket.signature), "InvalidFieldError", "signature"],
      ["an mcp payload that is a string", edit((o) => (o.payload.mcp = "call")), "InvalidFieldError", "mcp"],
      ["deep nesting", `{"a":${"[".repeat(1000)}${"]".repeat(1000)}}`, "InvalidJsonError", "nests deeper"],
    ];
    for (const [name, text, errorName, mention] of cases) {
      const error = thrown(() => decodePacket(text));
      expect(error.name, name).to.equal(errorName);
      expect(error.message, name).to.contain(mention);
    }
  });

  it("enforces the size limit before parsing", () => {
    const error = thrown(() => decodePacket(" ".repeat(MAX_PACKET_BYTES + 1)));
    expect(error.name).to.equal("SizeLimitError");
  });
});
