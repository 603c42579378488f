/**
 * The terms document (issue 14, decision 0026): known-answer hashes of both versions, the schema's refusals as
 * one sentence each, the pricing rules, and the payer's typed rejection of a receipt that breaks the terms.
 */
import { expect } from "chai";
import { readFileSync } from "node:fs";
import path from "node:path";
import { keccak256, stringToBytes, zeroHash, type Hex } from "viem";

import { canon } from "../../channel-client/core/canonical";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { jsonSchemaOf } from "../../channel-client/core/schemas";
import { PayerSession } from "../../channel-client/node/payer-session";
import { chargeFor } from "../../channel-client/node/provider-session";
import { signSessionReceipt, type SessionReceipt } from "../../channel-client/core/receipt";
import {
  missingReceiptBindings,
  modelAllowed,
  penaltyOf,
  prepaidPerCall,
  priceOf,
  pricingTermsFromJson,
  pricingTermsToJson,
  termsDocumentFromText,
  termsHashOf,
  type TermsDocumentV2,
} from "../../channel-client/core/terms";
import { keccak256Hex } from "../../channel-client/core/keccak";
import { hardhatAccount } from "../helpers/fixtures";

const ROOT = path.join(__dirname, "..", "..");
const EXAMPLE = path.join(ROOT, "examples", "documents", "metered.terms.json");

function thrown(f: () => unknown): Error & { shortMessage?: string } {
  try {
    f();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a throw");
}

async function rejected(p: Promise<unknown>): Promise<Error & { shortMessage?: string }> {
  try {
    await p;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a rejection");
}

const V2: TermsDocumentV2 = {
  version: "2",
  pricing: { perInvocation: 1000n, perUnit: { unit: "token", price: 10n }, capPerCall: 5000n },
  models: ["m@1", "m@2"],
  disputes: { windowAfterSettlement: 86400n, penalties: { RECEIPT_MODEL_SWAP: 7n }, refundsFromBond: true },
  requiredReceipts: ["rrsa_request_binding", "rrsa_output_commitment", "rrsa_model_or_program_hash"],
};

const V2_CANONICAL =
  '{"disputes":{"penalties":{"RECEIPT_MODEL_SWAP":"7"},"refundsFromBond":true,"windowAfterSettlement":"86400"},' +
  '"models":["m@1","m@2"],"pricing":{"capPerCall":"5000","perInvocation":"1000","perUnit":{"price":"10","unit":"token"}},' +
  '"requiredReceipts":["rrsa_request_binding","rrsa_output_commitment","rrsa_model_or_program_hash"],"version":"2"}';

describe("terms document (decision 0026)", () => {
  describe("canonical form and hash", () => {
    it("v2: termsHash is keccak256 of the RFC 8785 text (known answer), and it round-trips", () => {
      expect(canon(pricingTermsToJson(V2))).to.equal(V2_CANONICAL);
      expect(termsHashOf(V2)).to.equal(keccak256(stringToBytes(V2_CANONICAL)));
      expect(pricingTermsFromJson(JSON.parse(V2_CANONICAL))).to.deep.equal(V2);
    });

    it("v1 keeps its hash (channels opened before issue 14 still verify)", () => {
      const v1 = { version: "1", unit: "invocation", pricePerInvocation: 1000n } as const;
      expect(termsHashOf(v1)).to.equal(keccak256(stringToBytes('{"pricePerInvocation":"1000","unit":"invocation","version":"1"}')));
    });

    it("a document without perUnit omits it (no null in the canonical form)", () => {
      const flat: TermsDocumentV2 = { ...V2, pricing: { perInvocation: 1000n, perUnit: null, capPerCall: 1000n } };
      expect(canon(pricingTermsToJson(flat))).to.not.contain("perUnit");
      expect(pricingTermsFromJson(JSON.parse(canon(pricingTermsToJson(flat))))).to.deep.equal(flat);
    });

    it("the example in examples/ parses from JSON text", () => {
      const doc = termsDocumentFromText(readFileSync(EXAMPLE, "utf8"), "metered.terms.json");
      expect(doc.version).to.equal("2");
    });

    it("the ChallengePackage schema carries the same terms definitions as schemas/terms.schema.json", () => {
      const terms = jsonSchemaOf("terms") as { definitions: Record<string, unknown> };
      const pkg = jsonSchemaOf("challenge-package") as { definitions: Record<string, unknown> };
      expect(pkg.definitions.termsV1).to.deep.equal(terms.definitions.termsV1);
      expect(pkg.definitions.termsV2).to.deep.equal(terms.definitions.termsV2);
      expect(pkg.definitions.termsV3).to.deep.equal(terms.definitions.termsV3);
    });
  });

  describe("refusals: one sentence naming the field", () => {
    const json = () => JSON.parse(V2_CANONICAL) as Record<string, any>;
    const cases: Array<[string, () => unknown, string, string]> = [
      ["an unknown version", () => ({ ...json(), version: "9" }), "InvalidFieldError", 'terms.version must be one of "1", "2", "3"'],
      ["a v1 field in a v2 document", () => ({ ...json(), pricePerInvocation: "1" }), "UnknownFieldError", "terms.pricePerInvocation is not a field"],
      ["a price as a JSON number", () => { const j = json(); j.pricing.capPerCall = 5000; return j; }, "AmountAsNumberError", "terms.pricing.capPerCall is the JSON number 5000"],
      ["an unknown metered unit", () => { const j = json(); j.pricing.perUnit.unit = "byte"; return j; }, "InvalidFieldError", "terms.pricing.perUnit.unit must be one of"],
      ["no model", () => ({ ...json(), models: [] }), "InvalidFieldError", "terms.models must be an array of at least 1 items"],
      ["a penalty for an unknown violation", () => { const j = json(); j.disputes.penalties.LATE = "1"; return j; }, "UnknownFieldError", "terms.disputes.penalties.LATE is not a field"],
      ["an unknown receipt binding", () => ({ ...json(), requiredReceipts: ["rrsa_tx_hash_binding"] }), "InvalidFieldError", "terms.requiredReceipts[0] must be one of"],
      ["a cap below the base price", () => { const j = json(); j.pricing.capPerCall = "999"; return j; }, "InvalidFieldError", "terms.pricing.capPerCall must be at least pricing.perInvocation (1000)"],
      ["an amount past uint128", () => { const j = json(); j.pricing.perInvocation = (1n << 128n).toString(); j.pricing.capPerCall = (1n << 129n).toString(); return j; }, "InvalidFieldError", "terms.pricing.perInvocation"],
    ];
    for (const [label, make, name, message] of cases) {
      it(label, () => {
        const error = thrown(() => pricingTermsFromJson(make(), "terms"));
        expect(error.name).to.equal(name);
        expect(error.message).to.contain(message);
        expect(error.message.split("\n")).to.have.length(1);
      });
    }

    it("a file that is not JSON", () => {
      const error = thrown(() => termsDocumentFromText("{pricing:", "x.json"));
      expect(error.name).to.equal("InvalidJsonError");
    });
  });

  describe("pricing", () => {
    const table: Array<[bigint, bigint]> = [
      [0n, 1000n], // the base price
      [100n, 2000n], // base + 100 tokens × 10
      [400n, 5000n], // exactly the cap
      [10_000n, 5000n], // capped
    ];
    for (const [units, price] of table) it(`${units} tokens cost ${price}`, () => expect(priceOf(V2, units)).to.equal(price));

    it("a ticket prepays the cap per call (v2) or the price (v1)", () => {
      expect(prepaidPerCall(V2)).to.equal(5000n);
      expect(prepaidPerCall({ version: "1", unit: "invocation", pricePerInvocation: 7n })).to.equal(7n);
      expect(priceOf({ version: "1", unit: "invocation", pricePerInvocation: 7n }, 1000n)).to.equal(7n);
    });

    it("the provider charges the metered price (v2), never more than the ticket added; v1 charges what the ticket added", () => {
      expect(chargeFor(V2, 100n, 5000n)).to.equal(2000n);
      expect(chargeFor(V2, 100n, 1500n)).to.equal(1500n);
      expect(chargeFor({ version: "1", unit: "invocation", pricePerInvocation: 7n }, 100n, 9n)).to.equal(9n);
    });

    it("models, bindings and penalties", () => {
      expect(modelAllowed(V2, "m@2")).to.equal(true);
      expect(modelAllowed(V2, "m@3")).to.equal(false);
      expect(modelAllowed({ version: "1", unit: "invocation", pricePerInvocation: 1n }, "anything")).to.equal(true);
      const r = { offloadPacketHash: zeroHash, outputHash: `0x${"11".repeat(32)}` as Hex, modelSnapshotId: "" };
      expect(missingReceiptBindings(V2, r)).to.deep.equal(["rrsa_request_binding", "rrsa_model_or_program_hash"]);
      expect(penaltyOf(V2, "RECEIPT_MODEL_SWAP")).to.equal(7n);
      expect(penaltyOf(V2, "RECEIPT_CHAIN_GAP")).to.equal(0n);
    });
  });

  describe("the payer checks a receipt against the terms before accepting it", () => {
    const payer = hardhatAccount(2);
    const provider = hardhatAccount(3);
    const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
    const sessionId = `0x${"51".repeat(32)}` as Hex;
    const policyHash = `0x${"ab".repeat(32)}` as Hex;
    const ref = {
      terms: { payer: payer.address, provider: provider.address, funder: payer.address, asset: "0x0000000000000000000000000000000000000000" as const, termsHash: termsHashOf(V2), policyHash, challengeDuration: 3600n, nonce: 1n },
      openedAt: 1n,
    };
    const input = new TextEncoder().encode("request");
    const output = new TextEncoder().encode("answer");

    async function attempt(change: Partial<SessionReceipt>, received: Uint8Array | "not at hand" = output) {
      const session = new PayerSession({ account: payer, domain, ref, sessionId, pricing: V2, deposit: 100_000n });
      const { signed } = await session.nextTicket(input);
      expect(signed.ticket.cumulativeAmount, "the ticket prepays the cap").to.equal(5000n);
      const receipt: SessionReceipt = {
        sessionId,
        seq: 1n,
        offloadPacketHash: keccak256Hex(input),
        outputHash: keccak256Hex(output),
        policyHash,
        modelSnapshotId: "m@1",
        metering: { units: 100n, amount: 2000n },
        prevReceiptHash: zeroHash,
        ...change,
      };
      return session.acceptReceipt(await signSessionReceipt({ account: provider, receipt }), received === "not at hand" ? undefined : received);
    }

    it("accepts the metered price from a listed model with every binding", async () => {
      const step = await attempt({});
      expect(step.receipt.receipt.metering.amount).to.equal(2000n);
    });

    it("refuses a model swap (ModelMismatchError)", async () => {
      const error = await rejected(attempt({ modelSnapshotId: "m@cheap" }));
      expect(error.name).to.equal("ModelMismatchError");
      expect(error.shortMessage).to.contain('"m@cheap"');
    });

    it("refuses a price above the metering's (ReceiptOverpricedError)", async () => {
      const error = await rejected(attempt({ metering: { units: 100n, amount: 2001n } }));
      expect(error.name).to.equal("ReceiptOverpricedError");
      expect(error.shortMessage).to.contain("price that at 2000");
    });

    it("refuses a receipt without a required binding (RequiredReceiptMissingError), even replayed after a restart when the output is not at hand", async () => {
      const error = await rejected(attempt({ outputHash: zeroHash }, "not at hand"));
      expect(error.name).to.equal("RequiredReceiptMissingError");
      expect(error.shortMessage).to.contain("rrsa_output_commitment");
    });
  });
});
