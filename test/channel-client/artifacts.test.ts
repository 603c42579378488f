import { expect } from "chai";
import { bytesToHex, concat, keccak256, stringToBytes, zeroHash, type Hex } from "viem";

import { canon, parseCanonical } from "../../channel-client/core/canonical";
import { gasEscrowDomain, toHighS } from "../../channel-client/core/eip712";
import { LeafBuilder, receiptLeaf, receiptLeafFromHashes, LEAF_DOMAIN_HASH } from "../../channel-client/core/leaf";
import {
  sessionReceiptFromJson,
  sessionReceiptHash,
  canonicalReceiptText,
  sessionReceiptHashBytes,
  sessionReceiptToJson,
  signSessionReceipt,
  verifySessionReceipt,
} from "../../channel-client/core/receipt";
import {
  settlementSummaryFromJson,
  settlementSummaryToJson,
  signSettlementSummary,
  verifySettlementSummary,
  type SettlementSummary,
} from "../../channel-client/core/summary";
import { pricingTermsFromJson, pricingTermsToJson, termsHashOf } from "../../channel-client/core/terms";
import {
  assertTicketAdvances,
  paymentTicketFromJson,
  paymentTicketHash,
  paymentTicketToJson,
  signPaymentTicket,
  verifyPaymentTicket,
} from "../../channel-client/core/ticket";
import { hardhatAccount, ROLE } from "../helpers/fixtures";
import { h, sampleReceipt, sampleTicket, SESSION_ID } from "../helpers/samples";
import { mulberry32 } from "../helpers/prng";
import { rejection, thrown } from "../helpers/assert";


const payer = hardhatAccount(ROLE.payer);
const provider = hardhatAccount(ROLE.provider);
const stranger = hardhatAccount(ROLE.stranger);
const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });

describe("session artifacts", () => {
  describe("PaymentTicket", () => {
    it("has a known canonical form: sorted keys, lowercase hex, amounts as decimal strings", () => {
      const ticket = sampleTicket({ seq: 42n, cumulativeAmount: 2n ** 100n });
      expect(canon(paymentTicketToJson(ticket))).to.equal(
        `{"cumulativeAmount":"1267650600228229401496703205376","provider":"${provider.address.toLowerCase()}",` +
          `"receiptRoot":"${zeroHash}","seq":"42","sessionId":"${SESSION_ID}","termsHash":"${h("terms")}"}`,
      );
      expect(paymentTicketHash(ticket)).to.equal(keccak256(stringToBytes(canon(paymentTicketToJson(ticket)))));
    });

    it("round-trips through canonical JSON", () => {
      const ticket = sampleTicket({ seq: 2n ** 64n - 1n, cumulativeAmount: 2n ** 128n - 1n });
      const text = canon(paymentTicketToJson(ticket));
      expect(paymentTicketFromJson(parseCanonical(text))).to.deep.equal(ticket);
    });

    const json = () => paymentTicketToJson(sampleTicket()) as Record<string, unknown>;
    const invalid: Array<[string, () => unknown, string, string]> = [
      ["an amount as a JSON number", () => ({ ...json(), cumulativeAmount: 1000 }), "AmountAsNumberError", "cumulativeAmount"],
      ["seq as a JSON number", () => ({ ...json(), seq: 1 }), "AmountAsNumberError", "seq"],
      ["a negative amount", () => ({ ...json(), cumulativeAmount: "-1" }), "InvalidFieldError", "cumulativeAmount"],
      ["an amount with leading zeros", () => ({ ...json(), cumulativeAmount: "01" }), "InvalidFieldError", "cumulativeAmount"],
      ["an amount over uint128", () => ({ ...json(), cumulativeAmount: (2n ** 128n).toString() }), "InvalidFieldError", "cumulativeAmount"],
      ["seq over uint64", () => ({ ...json(), seq: (2n ** 64n).toString() }), "InvalidFieldError", "seq"],
      ["an uppercase hash", () => ({ ...json(), sessionId: SESSION_ID.toUpperCase().replace("0X", "0x") }), "InvalidFieldError", "sessionId"],
      ["a short hash", () => ({ ...json(), receiptRoot: "0x1234" }), "InvalidFieldError", "receiptRoot"],
      ["a checksummed address", () => ({ ...json(), provider: provider.address }), "InvalidFieldError", "provider"],
      ["a missing field", () => { const o = json(); delete o.termsHash; return o; }, "InvalidFieldError", "termsHash"],
      ["an unknown field", () => ({ ...json(), tip: "1" }), "UnknownFieldError", "tip"],
      ["an array", () => [json()], "InvalidFieldError", "PaymentTicket"],
    ];
    for (const [name, make, errorName, field] of invalid) {
      it(`rejects ${name} with ${errorName} naming the field`, () => {
        const error = thrown(() => paymentTicketFromJson(make()));
        expect(error.name).to.equal(errorName);
        expect(error.message).to.contain(field);
      });
    }

    it("rejects a ticket that is not in canonical form", () => {
      const text = JSON.stringify(paymentTicketToJson(sampleTicket()), null, 1);
      expect(thrown(() => parseCanonical(text)).name).to.equal("NonCanonicalJsonError");
    });

    it("verifies the payer's signature and rejects every other", async () => {
      const signed = await signPaymentTicket({ account: payer, domain, ticket: sampleTicket() });
      await verifyPaymentTicket({ domain, signed, signer: payer.address });

      const byStranger = await signPaymentTicket({ account: stranger, domain, ticket: sampleTicket() });
      const cases: Array<[string, Promise<void>]> = [
        ["signed by another key", verifyPaymentTicket({ domain, signed: byStranger, signer: payer.address })],
        ["altered after signing", verifyPaymentTicket({ domain, signed: { ...signed, ticket: sampleTicket({ cumulativeAmount: 1001n }) }, signer: payer.address })],
        ["for another chain", verifyPaymentTicket({ domain: { ...domain, chainId: 1 }, signed, signer: payer.address })],
        ["for another contract", verifyPaymentTicket({ domain: { ...domain, verifyingContract: stranger.address }, signed, signer: payer.address })],
        ["in high-s form", verifyPaymentTicket({ domain, signed: { ...signed, signature: toHighS(signed.signature) }, signer: payer.address })],
        ["truncated", verifyPaymentTicket({ domain, signed: { ...signed, signature: signed.signature.slice(0, 100) as Hex }, signer: payer.address })],
        // The same signature spelt with v = 0/1 instead of 27/28: one signer, one accepted spelling.
        ["with v = 0 or 1", verifyPaymentTicket({ domain, signed: { ...signed, signature: `${signed.signature.slice(0, 130)}${signed.signature.endsWith("1b") ? "00" : "01"}` as Hex }, signer: payer.address })],
      ];
      for (const [name, promise] of cases) {
        const error = await rejection(promise);
        expect(error.name, name).to.equal("InvalidSignatureError");
      }
    });

    it("once the payer's key is known, accepts exactly what ecrecover would (flipped v, high s, altered ticket refused)", async () => {
      const first = await signPaymentTicket({ account: payer, domain, ticket: sampleTicket({ seq: 100n }) });
      await verifyPaymentTicket({ domain, signed: first, signer: payer.address }); // learns the public key
      const next = await signPaymentTicket({ account: payer, domain, ticket: sampleTicket({ seq: 101n }) });
      await verifyPaymentTicket({ domain, signed: next, signer: payer.address }); // verified against it
      const v = parseInt(next.signature.slice(130), 16);
      const flippedV = `${next.signature.slice(0, 130)}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
      const cases: Array<[string, Promise<void>]> = [
        ["with the recovery bit flipped", verifyPaymentTicket({ domain, signed: { ...next, signature: flippedV }, signer: payer.address })],
        ["in high-s form", verifyPaymentTicket({ domain, signed: { ...next, signature: toHighS(next.signature) }, signer: payer.address })],
        ["altered after signing", verifyPaymentTicket({ domain, signed: { ...next, ticket: sampleTicket({ seq: 102n }) }, signer: payer.address })],
        ["for another chain", verifyPaymentTicket({ domain: { ...domain, chainId: 5 }, signed: next, signer: payer.address })],
      ];
      for (const [name, promise] of cases) expect((await rejection(promise)).name, name).to.equal("InvalidSignatureError");
    });

    it("enforces strictly increasing seq and non-decreasing amount", () => {
      const first = sampleTicket({ seq: 5n, cumulativeAmount: 500n });
      expect(() => assertTicketAdvances(undefined, sampleTicket({ seq: 1n }))).to.not.throw();
      expect(() => assertTicketAdvances(first, sampleTicket({ seq: 6n, cumulativeAmount: 500n }))).to.not.throw();
      for (const next of [
        sampleTicket({ seq: 5n, cumulativeAmount: 600n }),
        sampleTicket({ seq: 4n, cumulativeAmount: 600n }),
        sampleTicket({ seq: 6n, cumulativeAmount: 499n }),
      ]) {
        expect(thrown(() => assertTicketAdvances(first, next)).name).to.equal("TicketNotNewerError");
      }
      expect(thrown(() => assertTicketAdvances(undefined, sampleTicket({ seq: 0n }))).name).to.equal("TicketNotNewerError");
    });
  });

  describe("SessionReceipt", () => {
    it("has a known canonical form and hash", () => {
      const receipt = sampleReceipt();
      const expected =
        `{"metering":{"amount":"1000","units":"1"},"modelSnapshotId":"model:demo@1","offloadPacketHash":"${h("offload")}",` +
        `"outputHash":"${h("output")}","policyHash":"${h("policy")}","prevReceiptHash":"${zeroHash}","seq":"1","sessionId":"${SESSION_ID}"}`;
      expect(canon(sessionReceiptToJson(receipt))).to.equal(expected);
      expect(sessionReceiptHash(receipt)).to.equal(keccak256(stringToBytes(expected)));
    });

    it("hashes through the hand-written canonical text exactly as through canon(), for any receipt", () => {
      const prng = mulberry32(0x5eed);
      const random = () => prng.next();
      const hash = () => `0x${Array.from({ length: 64 }, () => "0123456789abcdef"[Math.floor(random() * 16)]).join("")}` as Hex;
      const strings = ["model:demo@1", "", "quote\"back\\slash", "tab\tnew\nline\u0001", "émoji 😀", "\u2028\u2029", "</script>"];
      for (let i = 0; i < 500; i++) {
        const receipt = sampleReceipt({
          sessionId: hash(),
          seq: BigInt(Math.floor(random() * 2 ** 53)),
          offloadPacketHash: hash(),
          outputHash: hash(),
          policyHash: hash(),
          prevReceiptHash: hash(),
          modelSnapshotId: strings[i % strings.length]!,
          metering: { units: BigInt(Math.floor(random() * 1e9)), amount: (2n ** 128n - 1n) >> BigInt(i % 128) },
        });
        expect(canonicalReceiptText(receipt)).to.equal(canon(sessionReceiptToJson(receipt)));
        expect(sessionReceiptHash(receipt)).to.equal(keccak256(stringToBytes(canon(sessionReceiptToJson(receipt)))));
      }
      // What the fast path does not handle goes to canon(), which refuses it as before.
      expect(canonicalReceiptText(sampleReceipt({ modelSnapshotId: "lone \ud800" }))).to.equal(undefined);
      expect(thrown(() => sessionReceiptHash(sampleReceipt({ modelSnapshotId: "lone \ud800" }))).name).to.equal("InvalidJsonError");
      expect(canonicalReceiptText(sampleReceipt({ outputHash: h("x").toUpperCase().replace("0X", "0x") as Hex }))).to.equal(undefined);
    });

    it("round-trips and validates", () => {
      const receipt = sampleReceipt({ seq: 9n, metering: { units: 3n, amount: 2n ** 127n } });
      expect(sessionReceiptFromJson(parseCanonical(canon(sessionReceiptToJson(receipt))))).to.deep.equal(receipt);
      const json = sessionReceiptToJson(receipt) as unknown as Record<string, unknown>;
      expect(thrown(() => sessionReceiptFromJson({ ...json, metering: { units: "1", amount: 5 } })).name).to.equal("AmountAsNumberError");
      expect(thrown(() => sessionReceiptFromJson({ ...json, modelSnapshotId: "" })).name).to.equal("InvalidFieldError");
      expect(thrown(() => sessionReceiptFromJson({ ...json, metering: { units: "1" } })).name).to.equal("InvalidFieldError");
    });

    it("is signed by the provider under its own domain tag", async () => {
      const signed = await signSessionReceipt({ account: provider, receipt: sampleReceipt() });
      await verifySessionReceipt({ signed, signer: provider.address });
      const altered = { ...signed, receipt: sampleReceipt({ outputHash: h("other output") }) };
      expect((await rejection(verifySessionReceipt({ signed: altered, signer: provider.address }))).name).to.equal("InvalidSignatureError");
      expect((await rejection(verifySessionReceipt({ signed, signer: payer.address }))).name).to.equal("InvalidSignatureError");
    });
  });

  describe("SettlementSummary", () => {
    const summary: SettlementSummary = {
      sessionId: SESSION_ID,
      provider: provider.address,
      payer: payer.address,
      termsHash: h("terms"),
      finalSeq: 1000n,
      finalAmount: 10n ** 18n,
      finalReceiptRoot: h("root"),
      mode: "Cooperative",
    };

    it("round-trips and rejects an unknown mode or a numeric amount", () => {
      const json = settlementSummaryToJson(summary);
      expect(settlementSummaryFromJson(parseCanonical(canon(json)))).to.deep.equal(summary);
      expect(thrown(() => settlementSummaryFromJson({ ...json, mode: "Friendly" })).name).to.equal("InvalidFieldError");
      expect(thrown(() => settlementSummaryFromJson({ ...json, finalAmount: 1e18 })).name).to.equal("AmountAsNumberError");
    });

    it("rejects a summary signed for another chain, contract, or mode", async () => {
      const good = await signSettlementSummary({ account: payer, domain, summary });
      await verifySettlementSummary({ domain, summary, signature: good, signer: payer.address, role: "payer" });
      const otherChain = await signSettlementSummary({ account: payer, domain: { ...domain, chainId: 10 }, summary });
      const otherContract = await signSettlementSummary({ account: payer, domain: { ...domain, verifyingContract: stranger.address }, summary });
      const otherMode = await signSettlementSummary({ account: payer, domain, summary: { ...summary, mode: "Unilateral" } });
      for (const signature of [otherChain, otherContract, otherMode]) {
        const error = await rejection(verifySettlementSummary({ domain, summary, signature, signer: payer.address, role: "payer" }));
        expect(error.name).to.equal("InvalidSignatureError");
        expect(error.message).to.contain("payer");
      }
    });
  });

  describe("receipt leaf", () => {
    it("is keccak256(keccak256(tag) ‖ keccak256(canon(receipt)) ‖ keccak256(canon(ticket)))", () => {
      expect(LEAF_DOMAIN_HASH).to.equal(keccak256(stringToBytes("IOI_SESSION_LEAF_V1")));
      const receipt = sampleReceipt();
      const ticket = sampleTicket();
      const expected = keccak256(
        concat([
          keccak256(stringToBytes("IOI_SESSION_LEAF_V1")),
          keccak256(stringToBytes(canon(sessionReceiptToJson(receipt)))),
          keccak256(stringToBytes(canon(paymentTicketToJson(ticket)))),
        ]),
      );
      expect(receiptLeaf(receipt, ticket)).to.equal(expected);
      expect(receiptLeafFromHashes(sessionReceiptHash(receipt), paymentTicketHash(ticket))).to.equal(expected);
      // The batched path on bytes gives the same leaf, for every receipt of the batch.
      const builder = new LeafBuilder(paymentTicketHash(ticket));
      for (const seq of [1n, 2n, 3n]) {
        const r = sampleReceipt({ seq });
        expect(bytesToHex(builder.leaf(sessionReceiptHashBytes(r)))).to.equal(receiptLeaf(r, ticket));
      }
      expect(thrown(() => builder.leaf(new Uint8Array(31))).name).to.equal("InvalidHexError");
    });

    it("changes when either half changes", () => {
      const base = receiptLeaf(sampleReceipt(), sampleTicket());
      expect(receiptLeaf(sampleReceipt({ seq: 2n }), sampleTicket())).to.not.equal(base);
      expect(receiptLeaf(sampleReceipt(), sampleTicket({ cumulativeAmount: 1001n }))).to.not.equal(base);
    });
  });

  describe("PricingTerms", () => {
    it("hashes its canonical JSON and refuses a numeric price", () => {
      const terms = { version: "1", unit: "invocation", pricePerInvocation: 1000n } as const;
      expect(termsHashOf(terms)).to.equal(keccak256(stringToBytes('{"pricePerInvocation":"1000","unit":"invocation","version":"1"}')));
      expect(pricingTermsFromJson(pricingTermsToJson(terms))).to.deep.equal(terms);
      expect(thrown(() => pricingTermsFromJson({ ...pricingTermsToJson(terms), pricePerInvocation: 1000 })).name).to.equal("AmountAsNumberError");
    });
  });
});
