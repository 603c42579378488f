import { expect } from "chai";
import { keccak256, recoverAddress, stringToBytes, type Hex } from "viem";

import { canon } from "../../channel-client/core/canonical";
import {
  FAULT_SIGNATURE_DOMAIN,
  faultCodeOf,
  faultStatementDigest,
  faultStatementHash,
  NO_FAULT_CODES,
  signedFaultStatementFromJson,
  signedFaultStatementToJson,
  signFaultStatement,
  verifyFaultStatement,
  verifyFaultStatementFor,
  type FaultStatement,
} from "../../channel-client/core/fault-statement";
import { decodePacket, encodePacket, type ActionResultPacket } from "../../channel-client/core/packets";
import { faultStatementOf } from "../../channel-client/node/payer-client";
import { sessionReceiptDigest, signSessionReceipt } from "../../channel-client/core/receipt";
import { signDigest } from "../../channel-client/core/eip712";
import { NO_FAULT_CODES as RUNNER_NO_FAULT_CODES } from "../../arbitration/runner/runner";
import { rejection, thrown } from "../helpers/assert";
import { hardhatAccount, ROLE } from "../helpers/fixtures";
import { h, sampleReceipt, SESSION_ID } from "../helpers/samples";

const provider = hardhatAccount(ROLE.provider);
const payer = hardhatAccount(ROLE.payer);
const statement: FaultStatement = { sessionId: SESSION_ID, seq: 7n, offloadPacketHash: h("request 7"), code: "ERR_UPSTREAM_FAILURE", computeSpent: 2n ** 64n + 3n };

describe("FaultStatement (issue 12 item 5, decision 0015)", () => {
  it("known answer: canonical JSON, hash and the domain-tagged digest the provider signs", () => {
    const json = canon(signedFaultStatementToJson({ statement, signature: `0x${"11".repeat(65)}` }).statement);
    expect(json).to.equal(
      `{"code":"ERR_UPSTREAM_FAILURE","computeSpent":"18446744073709551619","offloadPacketHash":"${h("request 7")}","seq":"7","sessionId":"${SESSION_ID}"}`,
    );
    expect(faultStatementHash(statement)).to.equal(keccak256(stringToBytes(json)));
    const hash = faultStatementHash(statement);
    const tag = keccak256(stringToBytes(FAULT_SIGNATURE_DOMAIN));
    expect(faultStatementDigest(hash)).to.equal(keccak256(`0x${tag.slice(2)}${hash.slice(2)}`));
    expect(FAULT_SIGNATURE_DOMAIN).to.equal("IOI_SIG_DOMAIN_FAULT_V1");
  });

  it("signs and verifies; the signature is the provider's over the tagged digest and nothing else", async () => {
    const signed = await signFaultStatement({ account: provider, statement });
    await verifyFaultStatement({ signed, signer: provider.address });
    expect(await recoverAddress({ hash: faultStatementDigest(faultStatementHash(statement)), signature: signed.signature })).to.equal(provider.address);
    // Every field is signed.
    for (const changed of [{ seq: 8n }, { computeSpent: 0n }, { code: "ERR_UPSTREAM_POLICY_VIOLATION" as const }, { offloadPacketHash: h("x") }, { sessionId: h("y") }]) {
      const error = await rejection(verifyFaultStatement({ signed: { ...signed, statement: { ...statement, ...changed } }, signer: provider.address }));
      expect(error.name).to.equal("InvalidSignatureError");
    }
    // The provider's signature under the receipt domain tag over the same hash is not a fault signature.
    const crossDomain = await signDigest(provider, sessionReceiptDigest(faultStatementHash(statement)));
    expect((await rejection(verifyFaultStatement({ signed: { statement, signature: crossDomain }, signer: provider.address }))).name).to.equal("InvalidSignatureError");
    // Nor is anyone else's.
    const forged = await signFaultStatement({ account: payer, statement });
    expect((await rejection(verifyFaultStatement({ signed: forged, signer: provider.address }))).name).to.equal("InvalidSignatureError");
  });

  it("the payer's check binds it to the receipt it came with: same session, seq and request hash", async () => {
    const signed = await signFaultStatement({ account: provider, statement });
    const receipt = { sessionId: SESSION_ID, seq: 7n, offloadPacketHash: h("request 7") };
    await verifyFaultStatementFor({ signed, provider: provider.address, receipt });
    for (const other of [{ seq: 6n }, { sessionId: h("other session") }, { offloadPacketHash: h("request 6") }]) {
      const error = await rejection(verifyFaultStatementFor({ signed, provider: provider.address, receipt: { ...receipt, ...other } }));
      expect(error.name).to.equal("BindingMismatchError");
    }
    expect((await rejection(verifyFaultStatementFor({ signed, provider: payer.address, receipt }))).name).to.equal("InvalidSignatureError");
  });

  it("round-trips through JSON and refuses malformed input with a typed error naming the field", async () => {
    const signed = await signFaultStatement({ account: provider, statement });
    const json = signedFaultStatementToJson(signed);
    expect(signedFaultStatementFromJson(JSON.parse(canon(json)))).to.deep.equal(signed);
    const cases: Array<[string, (j: any) => void, string, string]> = [
      ["an unknown code", (j) => (j.statement.code = "ERR_PROVIDER_BUSY"), "InvalidFieldError", "statement.code"],
      ["an amount as a number", (j) => (j.statement.computeSpent = 5), "AmountAsNumberError", "computeSpent"],
      ["a negative seq", (j) => (j.statement.seq = "-1"), "InvalidFieldError", "statement.seq"],
      ["an extra field", (j) => (j.statement.detail = "x"), "UnknownFieldError", "detail"],
      ["a missing signature", (j) => delete j.signature, "InvalidFieldError", "signature"],
    ];
    for (const [what, mutate, name, field] of cases) {
      const copy = structuredClone(json) as any;
      mutate(copy);
      const error = thrown(() => signedFaultStatementFromJson(copy));
      expect(error.name, what).to.equal(name);
      expect(error.message, what).to.contain(field);
    }
  });

  it("one list of no-fault codes for gigs and sessions; a worker's error names one only through data.fault", () => {
    expect(RUNNER_NO_FAULT_CODES).to.equal(NO_FAULT_CODES);
    expect([...NO_FAULT_CODES]).to.deep.equal(["ERR_UPSTREAM_POLICY_VIOLATION", "ERR_UPSTREAM_FAILURE"]);
    expect(faultCodeOf({ data: { fault: "ERR_UPSTREAM_POLICY_VIOLATION" } })).to.equal("ERR_UPSTREAM_POLICY_VIOLATION");
    for (const error of [undefined, {}, { data: { error: "WorkerCrashedError" } }, { data: { fault: "ERR_ANYTHING" } }, { data: "x" }]) {
      expect(faultCodeOf(error as { data?: unknown } | undefined)).to.equal("ERR_UPSTREAM_FAILURE");
    }
  });

  describe("in PKT_ACTION_RESULT", () => {
    async function result(withFault: boolean, faultSession: Hex = SESSION_ID): Promise<ActionResultPacket> {
      const receipt = await signSessionReceipt({ account: provider, receipt: sampleReceipt({ seq: 7n, offloadPacketHash: h("request 7") }) });
      const fault = await signFaultStatement({ account: provider, statement: { ...statement, sessionId: faultSession } });
      return {
        pkt_version: "1",
        packet_type: "PKT_ACTION_RESULT",
        issued_at: "2026-02-22T10:16:00Z",
        session_id: SESSION_ID,
        action_result_id: "res_1",
        payload: { mcp: { jsonrpc: "2.0", id: 1, error: { code: -32010, message: "The worker exited (code 7)." } }, receipt, ...(withFault ? { fault } : {}) },
      };
    }

    it("is optional: absent on success (the bytes are unchanged), round-trips when present", async () => {
      const plain = await result(false);
      expect(encodePacket(plain)).to.not.contain("fault");
      expect(decodePacket(encodePacket(plain))).to.deep.equal(plain);
      const failed = await result(true);
      expect(decodePacket(encodePacket(failed))).to.deep.equal(failed);
    });

    it("the payer keeps a fault statement only with a failed call, signed by the channel's provider for that receipt; anything else is refused like a bad receipt", async () => {
      const failed = await result(true);
      expect(await faultStatementOf(failed, true, provider.address)).to.deep.equal(failed.payload.fault);
      expect(await faultStatementOf(await result(false), true, provider.address)).to.equal(undefined);
      const refusals: Array<[string, Promise<unknown>, string]> = [
        ["on a call that did not fail", faultStatementOf(failed, false, provider.address), "the call did not fail"],
        ["signed by someone other than the provider", faultStatementOf(failed, true, payer.address), "does not hold"],
        [
          "for another request",
          faultStatementOf({ ...failed, payload: { ...failed.payload, fault: await signFaultStatement({ account: provider, statement: { ...statement, offloadPacketHash: h("another request") } }) } }, true, provider.address),
          "does not hold",
        ],
      ];
      for (const [what, attempt, message] of refusals) {
        const error = await rejection(attempt);
        expect(error.name, what).to.equal("ReceiptMismatchError");
        expect(error.message, what).to.contain(message);
      }
    });

    it("refuses a fault statement for another session than the envelope, or one that breaks the schema", async () => {
      const foreign = await result(true, h("other session"));
      expect(thrown(() => decodePacket(encodePacket(foreign))).name).to.equal("BindingMismatchError");
      const json = JSON.parse(encodePacket(await result(true))) as any;
      json.payload.fault.statement.code = "ERR_NOPE";
      const error = thrown(() => decodePacket(JSON.stringify(json)));
      expect(error.name).to.equal("InvalidFieldError");
      expect(error.message).to.contain("fault");
    });
  });
});
