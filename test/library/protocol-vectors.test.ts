/**
 * The protocol specification cannot drift from the code (issue 33 item 4): its vectors are regenerated from
 * the code and compared with docs/protocol-vectors.json and with the blocks docs/protocol.md quotes; the
 * formulas as the document states them are recomputed here with bare primitives (no project code) and give the
 * same bytes; every signature recovers to its stated signer; the contracts hold the same type hashes, domains,
 * case ids and settled states; the published schemas accept each vector's document; and where a schema bounds
 * a value the code bounds too, both agree at the boundary.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import Ajv from "ajv";
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { concat, encodeAbiParameters, getAddress, hashTypedData, keccak256, recoverAddress, stringToBytes, toHex, zeroHash, type Hex } from "viem";

import { packageFromJson } from "../../src/arbitration/package";
import { RESOLUTION_TYPES, resolutionFromJson } from "../../src/arbitration/resolution";
import { upipFromJson } from "../../src/arbitration/upip";
import { jsonSchemaOf, schemaValidator, type SchemaName } from "../../src/core/schemas";
import { sessionReceiptFromJson } from "../../src/core/receipt";
import { paymentTicketFromJson } from "../../src/core/ticket";
import { pricingTermsFromJson } from "../../src/core/terms";
import { expectUint } from "../../src/core/validate";
import {
  DOC_PATH,
  protocolVectors,
  quotedVectors,
  renderProtocolDoc,
  vectorsText,
  VECTORS_PATH,
  type ProtocolVectors,
} from "../../scripts/protocol-vectors";
import { systemFixture } from "../helpers/system";

/** Value at a dotted path. */
function at(root: unknown, dotted: string): any {
  return dotted.split(".").reduce((value: any, key) => value?.[key], root);
}

const tag = (text: string): Hex => keccak256(stringToBytes(text));
const sha256Hex = (text: string): string => Buffer.from(sha256(stringToBytes(text))).toString("hex");
/** The sorted-pair parent, as section 8 states it. */
const parent = (a: Hex, b: Hex): Hex => (BigInt(a) <= BigInt(b) ? keccak256(concat([a, b])) : keccak256(concat([b, a])));

describe("protocol specification vectors (docs/protocol.md)", function () {
  this.timeout(120_000);
  let v: ProtocolVectors;
  let V: any;

  before(async () => {
    v = await protocolVectors();
    V = v;
  });

  it("docs/protocol-vectors.json is exactly what the code generates", () => {
    expect(readFileSync(VECTORS_PATH, "utf8")).to.equal(vectorsText(v), "stale: run `npx ts-node --transpile-only scripts/protocol-vectors.ts`");
  });

  it("docs/protocol.md quotes every vector, each block exactly as generated", () => {
    const doc = readFileSync(DOC_PATH, "utf8");
    expect(renderProtocolDoc(doc, v)).to.equal(doc, "stale: run `npx ts-node --transpile-only scripts/protocol-vectors.ts`");
    expect([...new Set(quotedVectors(doc))]).to.have.members(Object.keys(v));
    // The v3/v4 terms are other issues' work: named only as a TODO at the end, never as content.
    expect(doc.indexOf("added by issue 30/32")).to.be.greaterThan(doc.lastIndexOf("## TODO"));
    expect(doc.lastIndexOf("## TODO")).to.be.greaterThan(doc.lastIndexOf("<!-- /vector -->"));
  });

  it("a block that names no generated vector is refused, not left stale", () => {
    expect(() => renderProtocolDoc("<!-- vector:noSuchVector -->\n<!-- /vector -->", v)).to.throw(RangeError, "noSuchVector");
    expect(() => renderProtocolDoc("<!-- vector:resolution.noSuchField -->\n<!-- /vector -->", v)).to.throw(RangeError, "noSuchField");
  });

  describe("the formulas as the document states them give the vectors' bytes (bare keccak256/sha256/ABI encoding)", () => {
    it("canonical JSON: the hash is keccak256 of the canonical text's UTF-8", () => {
      expect(toHex(stringToBytes(V.canonicalJson.canonical))).to.equal(V.canonicalJson.utf8Hex);
      expect(keccak256(V.canonicalJson.utf8Hex)).to.equal(V.canonicalJson.keccak256);
      expect(V.canonicalJson.canonical).to.equal('{"A":{"y":"2","z":"1"},"a":"é\\u0001\u2028/","b":[1,1e+21,0.5,0,1e-7],"😀":null,"！":true}');
    });

    it("EIP-712: type hashes of the encodeType strings, domain separators of the four domain fields", () => {
      for (const { encodeType, typeHash } of Object.values<any>({ ...V.eip712GasEscrow.types, ...V.eip712DisputeManager.types })) {
        expect(tag(encodeType)).to.equal(typeHash);
      }
      for (const d of [V.eip712GasEscrow, V.eip712DisputeManager]) {
        const encoded = encodeAbiParameters(
          [{ type: "bytes32" }, { type: "bytes32" }, { type: "bytes32" }, { type: "uint256" }, { type: "address" }],
          [tag(d.domainType), tag(d.domain.name), tag(d.domain.version), BigInt(d.domain.chainId), d.domain.verifyingContract],
        );
        expect(keccak256(encoded)).to.equal(d.domainSeparator);
      }
    });

    it("ticket: struct hash of the six words, EIP-712 digest, and its id over the canonical JSON", () => {
      const t = V.paymentTicket.ticket;
      const words = encodeAbiParameters(
        [{ type: "bytes32" }, { type: "bytes32" }, { type: "address" }, { type: "bytes32" }, { type: "uint64" }, { type: "uint128" }, { type: "bytes32" }],
        [V.eip712GasEscrow.types.PaymentTicket.typeHash, t.sessionId, t.provider, t.termsHash, BigInt(t.seq), BigInt(t.cumulativeAmount), t.receiptRoot],
      );
      expect(keccak256(words)).to.equal(V.paymentTicket.structHash);
      expect(keccak256(concat(["0x1901", V.eip712GasEscrow.domainSeparator, V.paymentTicket.structHash]))).to.equal(V.paymentTicket.digest);
      expect(tag(V.paymentTicket.canonical)).to.equal(V.paymentTicket.ticketHash);
      expect(V.paymentTicket.canonical).to.equal(JSON.stringify(Object.fromEntries(Object.entries(t).sort(([a], [b]) => (a < b ? -1 : 1)))));
    });

    it("receipt, fault statement, terms offer, identity anchor: keccak256(tag(domain) ‖ id)", () => {
      expect(tag(V.sessionReceipt.canonical)).to.equal(V.sessionReceipt.receiptHash);
      expect(keccak256(concat([tag("IOI_SIG_DOMAIN_RECEIPT_V1"), V.sessionReceipt.receiptHash]))).to.equal(V.sessionReceipt.digest);
      expect(keccak256(concat([tag("IOI_SIG_DOMAIN_FAULT_V1"), tag(V.faultStatement.canonical)]))).to.equal(V.faultStatement.digest);
      expect(keccak256(concat([tag("IOI_SIG_DOMAIN_TERMS_OFFER_V1"), tag(V.termsOffer.canonical)]))).to.equal(V.termsOffer.digest);
      expect(keccak256(concat([tag("IOI_SIG_DOMAIN_IDENTITY_V1"), V.identityAnchor.anchorId]))).to.equal(V.identityAnchor.digest);
      expect(tag(V.termsV2.canonical)).to.equal(V.termsV2.termsHash);
      expect(tag(V.termsV1.canonical)).to.equal(V.termsV1.termsHash);
    });

    it("leaf: keccak256 of the 96-byte preimage tag ‖ receiptHash ‖ ticketHash", () => {
      const l = V.receiptLeaf;
      expect(tag("IOI_SESSION_LEAF_V1")).to.equal(l.leafDomainHash);
      expect(concat([l.leafDomainHash, l.receiptHash, l.ticketHash])).to.equal(l.preimage);
      expect(keccak256(l.preimage)).to.equal(l.leaf);
    });

    it("tree: sorted pairs, odd node carried up, peaks folded lowest first, prefix roots, the proof folds to the root", () => {
      const t = V.receiptTree;
      const rootOf = (leaves: Hex[]): Hex => {
        if (leaves.length === 0) return `0x${"00".repeat(32)}`;
        let level = leaves;
        while (level.length > 1) {
          const next: Hex[] = [];
          for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? parent(level[i]!, level[i + 1]!) : level[i]!);
          level = next;
        }
        return level[0]!;
      };
      for (let k = 0; k <= t.leaves.length; k++) expect(rootOf(t.leaves.slice(0, k)), `prefix ${k}`).to.equal(t.prefixRoots[String(k)]);
      expect(t.peaks).to.deep.equal([t.leaves[4], rootOf(t.leaves.slice(0, 4))]);
      expect(parent(t.peaks[1], t.peaks[0])).to.equal(t.root);
      expect(t.proofOfLeaf2.proof.reduce((node: Hex, sibling: Hex) => parent(node, sibling), t.leaves[2])).to.equal(t.root);
      // Ticket n carries the root over leaves 1..n-1.
      t.ticketRoots.forEach((ticket: { seq: string; receiptRoot: Hex }) => expect(ticket.receiptRoot).to.equal(t.prefixRoots[String(Number(ticket.seq) - 1)]));
      expect(V.receiptCommit.commit.root).to.equal(t.prefixRoots[V.receiptCommit.commit.leafCount]);
    });

    it("session-key capabilities: sorted by UTF-16 code units, and code-point order would hash differently", () => {
      const g = V.sessionKeyGrant;
      expect(g.methods).to.deep.equal([...new Set<string>(g.methodsGiven)].sort());
      expect(tag(g.capabilitiesDocument)).to.equal(g.capabilities);
      expect(g.notCodePointOrder.methods).to.not.deep.equal(g.methods);
      expect(g.notCodePointOrder.wouldHash).to.not.equal(g.capabilities);
      expect(g.grant.capabilities).to.equal(g.capabilities);
    });

    it("closing state: the fingerprint is the low 210 bits of keccak256 of the five ABI words", () => {
      for (const c of [V.closingState.unilateral, V.closingState.settled]) {
        const s = c.state;
        const encoded = encodeAbiParameters(
          [{ type: "uint128" }, { type: "uint64" }, { type: "uint128" }, { type: "bytes32" }, { type: "uint16" }],
          [BigInt(s.deposit), BigInt(s.seq), BigInt(s.amount), s.receiptRoot, s.feeBps],
        );
        expect(encoded).to.equal(c.encoded);
        expect(toHex(BigInt(keccak256(encoded)) % (1n << 210n), { size: 32 })).to.equal(c.fingerprint);
      }
    });

    it("bundle, pinned seed, judge runtime: ids of the stated documents", () => {
      expect(tag(V.bundleHash.canonical)).to.equal(V.bundleHash.bundleHash);
      expect(tag(V.pinnedSeed.seedDocument)).to.equal(V.pinnedSeed.seed);
      expect(V.pinnedSeed.clockMs).to.equal(Number(V.pinnedSeed.inputs.fundedAt) * 1000);
      expect(keccak256(V.pinnedSeed.alternate.seedPreimage)).to.equal(V.pinnedSeed.alternate.seed);
      expect(V.pinnedSeed.alternate.clockMs - V.pinnedSeed.clockMs).to.equal(366 * 86_400_000);
      expect(tag(V.pinnedSeed.default.seedPreimageUtf8)).to.equal(V.pinnedSeed.default.seed);
      expect(tag(V.judgeRuntime.canonical)).to.equal(V.judgeRuntime.judgeRuntimeHash);
    });

    it("UPIP: state, deps (with the engine, harness and runner lines), result and stack hashes", () => {
      const u = V.upip;
      const r = u.record;
      expect(`files:sha256:${sha256Hex(u.statePreimage)}`).to.equal(r.state.state_hash);
      for (const line of [`engine:${r.deps.engine_sha256}\n`, `harness:${r.deps.harness_sha256}\n`, `runner:${r.deps.runner}\n`]) expect(u.depsPreimage).to.contain(line);
      const lines = u.depsPreimage.split("\n").slice(0, -1);
      expect(lines).to.deep.equal([...lines].sort());
      expect(`deps:sha256:${sha256Hex(u.depsPreimage)}`).to.equal(r.deps.deps_hash);
      expect(`sha256:${sha256Hex(u.resultPreimage)}`).to.equal(r.result.result_hash);
      const canonical = (x: unknown): string => JSON.stringify(sortKeys(x));
      expect(`upip:sha256:${sha256Hex(canonical([r.state, r.deps, r.process, r.result]))}`).to.equal(r.stack_hash);
    });

    it("case id, package hash, resolution: ABI-encoded case id, ids of the documents, the Resolution digest", () => {
      const s = V.caseId.session;
      expect(keccak256(encodeAbiParameters([{ type: "uint8" }, { type: "bytes32" }, { type: "uint8" }], [s.kind, s.subjectId, s.index]))).to.equal(s.caseId);
      expect(tag(JSON.stringify(sortKeys(V.challengePackage.package)))).to.equal(V.challengePackage.packageHash);
      for (const e of V.challengePackage.package.evidence) expect(tag(JSON.stringify(sortKeys(e.content)))).to.equal(e.artifact_id);
      expect(tag(JSON.stringify(sortKeys(V.resolution.document)))).to.equal(V.resolution.resolutionHash);
      const m = V.resolution.message;
      const words = encodeAbiParameters(
        [{ type: "bytes32" }, { type: "bytes32" }, { type: "uint8" }, { type: "uint128" }, { type: "uint128" }, { type: "bytes32" }],
        [V.eip712DisputeManager.types.Resolution.typeHash, m.caseId, m.verdict, BigInt(m.refund), BigInt(m.slash), m.resolutionHash],
      );
      expect(keccak256(words)).to.equal(V.resolution.structHash);
      expect(keccak256(concat(["0x1901", V.eip712DisputeManager.domainSeparator, V.resolution.structHash]))).to.equal(V.resolution.digest);
    });
  });

  it("every signature recovers to its stated signer, from Hardhat's published keys", async () => {
    const signed: Array<[Hex, Hex, string]> = [
      [V.paymentTicket.digest, V.paymentTicket.signature, V.keys.payer.address],
      [V.sessionReceipt.digest, V.sessionReceipt.signature, V.keys.provider.address],
      [V.receiptCommit.digest, V.receiptCommit.signature, V.keys.provider.address],
      [V.sessionKeyGrant.digest, V.sessionKeyGrant.signature, V.keys.payer.address],
      [V.settlementSummary.digest, V.settlementSummary.payerSignature, V.keys.payer.address],
      [V.settlementSummary.digest, V.settlementSummary.providerSignature, V.keys.provider.address],
      [V.faultStatement.digest, V.faultStatement.signature, V.keys.provider.address],
      [V.termsOffer.digest, V.termsOffer.signature, V.keys.provider.address],
      [V.identityAnchor.digest, V.identityAnchor.secp256k1Signature, V.keys.provider.address],
      [V.resolution.digest, V.resolution.signature, V.keys.arbitrator.address],
    ];
    const HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;
    for (const [digest, signature, signer] of signed) {
      expect(await recoverAddress({ hash: digest, signature })).to.equal(signer);
      expect(BigInt(`0x${signature.slice(66, 130)}`) <= HALF_N, "low s").to.equal(true);
      expect(["1b", "1c"]).to.include(signature.slice(130));
    }
    expect(V.keys.payer.address).to.equal("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
  });

  it("the contracts agree: type hashes, the GasEscrow's ERC-5267 domain, the DisputeManager's hand-written domain, case ids, settled states", async () => {
    const s = await loadFixture(systemFixture);
    const types = V.eip712GasEscrow.types;
    expect(await s.escrow.read.SESSION_TYPEHASH()).to.equal(types.Session.typeHash);
    expect(await s.escrow.read.PAYMENT_TICKET_TYPEHASH()).to.equal(types.PaymentTicket.typeHash);
    expect(await s.escrow.read.SESSION_KEY_TYPEHASH()).to.equal(types.SessionKey.typeHash);
    expect(await s.escrow.read.SETTLEMENT_SUMMARY_TYPEHASH()).to.equal(types.SettlementSummary.typeHash);
    expect(await s.escrow.read.RECEIPT_COMMIT_TYPEHASH()).to.equal(types.ReceiptCommit.typeHash);
    expect(await s.disputes.read.RESOLUTION_TYPEHASH()).to.equal(V.eip712DisputeManager.types.Resolution.typeHash);
    // ERC-5267: fields 0x0f = name, version, chainId, verifyingContract (no salt, no extensions).
    const [fields, name, version, chainId, verifyingContract, salt, extensions] = await s.escrow.read.eip712Domain();
    expect([fields, name, version, chainId, verifyingContract, salt, extensions]).to.deep.equal([
      "0x0f", V.eip712GasEscrow.domain.name, V.eip712GasEscrow.domain.version, BigInt(V.eip712GasEscrow.domain.chainId), getAddress(s.escrow.address), zeroHash, [],
    ]);
    // The DisputeManager has no eip712Domain(): its digest of the vector's message is the one the documented domain gives.
    const m = V.resolution.message;
    const message = { caseId: m.caseId, verdict: m.verdict, refund: BigInt(m.refund), slash: BigInt(m.slash), resolutionHash: m.resolutionHash };
    const documented = { name: V.eip712DisputeManager.domain.name, version: V.eip712DisputeManager.domain.version, chainId: BigInt(V.eip712DisputeManager.domain.chainId), verifyingContract: getAddress(s.disputes.address) };
    expect(await s.disputes.read.hashResolution([message])).to.equal(hashTypedData({ domain: documented, types: RESOLUTION_TYPES, primaryType: "Resolution", message }));
    // Case ids: a fresh subject's next case id is index 0 of the documented formula.
    expect(await s.disputes.read.nextCaseId([2, V.caseId.session.subjectId])).to.equal(V.caseId.session.caseId);
    expect(await s.disputes.read.nextCaseId([1, V.caseId.gig.subjectId])).to.equal(V.caseId.gig.caseId);
    // A cooperative settlement is recorded as the documented ClosingState.
    const sum = V.settlementSummary.summary;
    const settled = await s.escrow.read.settledState([BigInt(sum.finalSeq), BigInt(sum.finalAmount), sum.finalReceiptRoot]);
    const st = V.closingState.settled.state;
    expect(settled).to.deep.equal({ deposit: BigInt(st.deposit), seq: BigInt(st.seq), amount: BigInt(st.amount), receiptRoot: st.receiptRoot, feeBps: st.feeBps });
  });

  it("the published schemas accept each vector's document, and so do the parsers", () => {
    const parsers: Partial<Record<SchemaName, (value: unknown) => unknown>> = {
      terms: (x) => pricingTermsFromJson(x),
      "challenge-package": (x) => packageFromJson(x),
      resolution: (x) => resolutionFromJson(x),
      upip: (x) => upipFromJson(x),
    };
    let checked = 0;
    for (const [schema, paths] of Object.entries<string[]>(V.schemaDocuments)) {
      for (const dotted of paths) {
        const document = at(v, dotted);
        const validate = schemaValidator(schema as SchemaName);
        expect(validate(document), `${schema}: ${dotted}: ${JSON.stringify(validate.errors)}`).to.equal(true);
        expect(() => parsers[schema as SchemaName]!(document), dotted).to.not.throw();
        checked++;
      }
    }
    expect(checked).to.equal(6);
    // The wire forms of the channel artifacts, against the packet and package schemas' definitions.
    const wire: Array<[SchemaName, string, unknown]> = [
      ["packet", "signedPaymentTicket", { ticket: V.paymentTicket.ticket, signature: V.paymentTicket.signature }],
      ["packet", "signedSessionReceipt", { receipt: V.sessionReceipt.receipt, signature: V.sessionReceipt.signature }],
      ["packet", "signedReceiptCommit", { commit: V.receiptCommit.commit, signature: V.receiptCommit.signature }],
      ["packet", "signedFaultStatement", { statement: V.faultStatement.statement, signature: V.faultStatement.signature }],
      ["challenge-package", "signedSessionKeyGrant", { grant: V.sessionKeyGrant.grant, methods: V.sessionKeyGrant.methods, signature: V.sessionKeyGrant.signature }],
      ["challenge-package", "channelRef", V.sessionId.channel],
      ["challenge-package", "bundle", V.bundleHash.bundle],
    ];
    for (const [schema, definition, document] of wire) {
      const validate = schemaValidator(schema, definition);
      expect(validate(document), `${schema}#${definition}: ${JSON.stringify(validate.errors)}`).to.equal(true);
    }
  });

  describe("schema bounds equal the code's at the boundary", () => {
    const TERMS = () => JSON.parse(JSON.stringify(V.termsV2.document));
    /** Whether a schema accepts a value, and whether the code does. */
    const termsWith = (edit: (t: any) => void) => {
      const t = TERMS();
      edit(t);
      return t;
    };
    const schemaAccepts = (document: unknown) => schemaValidator("terms")(document) === true;
    const codeAccepts = (f: () => unknown) => {
      try {
        f();
        return true;
      } catch {
        return false;
      }
    };

    it("windowAfterSettlement: both accept 2^40 - 1 and refuse 2^40 (schema pattern vs. the uint40 parse), at every length", () => {
      const cases = ["0", "1", "86400", "999999999999", "1000000000000", "1099511627775", "1099511627776", "1099511627780", "1100000000000", "9999999999999", "10000000000000", "01", "-1"];
      // Every value one below, at and above each power of ten and around 2^40, plus pseudo-random ones.
      for (let d = 1n; d <= 10n ** 14n; d *= 10n) cases.push(String(d - 1n), String(d), String(d + 1n));
      let x = 0x9e3779b97f4a7c15n;
      for (let i = 0; i < 400; i++) {
        x = (x * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
        cases.push(String(x % (1n << BigInt(36 + (i % 8)))));
      }
      const expected = (value: string) => /^(0|[1-9][0-9]*)$/.test(value) && BigInt(value) < 1n << 40n;
      for (const value of cases) {
        const document = termsWith((t) => (t.disputes.windowAfterSettlement = value));
        const code = codeAccepts(() => expectUint(value, "window", 40));
        expect(schemaAccepts(document), value).to.equal(code);
        expect(code, value).to.equal(expected(value));
        expect(codeAccepts(() => pricingTermsFromJson(document)), value).to.equal(code);
        for (const schema of ["challenge-package"] as const) {
          expect(schemaValidator(schema, "termsV2")(document), `${schema} ${value}`).to.equal(code);
        }
      }
    });

    it("every uintN of every schema accepts exactly the decimal strings below 2^N, and the parsers agree on the fields they bound", () => {
      const samples = (bits: number): string[] => {
        const end = 1n << BigInt(bits);
        const values = ["0", "1", "01", "-1", "1.0", "", String(end - 1n), String(end), String(end + 1n), String(end * 10n - 1n), String(end / 10n)];
        for (let d = 1n; d <= end * 100n; d *= 10n) values.push(String(d - 1n), String(d), String(d + 1n));
        let x = 0x243f6a8885a308d3n;
        for (let i = 0; i < 300; i++) {
          x = (x * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
          const span = BigInt(bits - 8 + (i % 16));
          values.push(String(((x << 64n) | (x * 0x9e3779b97f4a7c15n)) % (1n << span)));
        }
        return values;
      };
      const below = (value: string, bits: number) => /^(0|[1-9][0-9]*)$/.test(value) && BigInt(value) < 1n << BigInt(bits);
      let definitions = 0;
      for (const name of ["terms", "packet", "ics", "challenge-package", "resolution", "upip"] as const) {
        const defs = (jsonSchemaOf(name).definitions ?? {}) as Record<string, unknown>;
        for (const def of Object.keys(defs).filter((d) => /^uint\d+$/.test(d))) {
          const bits = Number(def.slice(4));
          const validate = schemaValidator(name, def);
          for (const value of samples(bits)) expect(validate(value), `${name}#${def} ${value}`).to.equal(below(value, bits));
          definitions++;
        }
        // No field is left on the unbounded "uint" (kept only for other documents' future fields).
        expect(JSON.stringify(jsonSchemaOf(name)), name).to.not.contain('"#/definitions/uint"');
      }
      expect(definitions).to.be.greaterThanOrEqual(10);
      // The parsers bound the same fields with the same widths (a representative field of each width and document).
      const ticket = V.paymentTicket.ticket;
      const receipt = V.sessionReceipt.receipt;
      const fields: Array<[string, number, (value: string) => unknown, (value: string) => boolean]> = [
        ["ticket seq", 64, (x) => paymentTicketFromJson({ ...ticket, seq: x }), (x) => schemaValidator("packet", "paymentTicket")({ ...ticket, seq: x })],
        ["ticket amount", 128, (x) => paymentTicketFromJson({ ...ticket, cumulativeAmount: x }), (x) => schemaValidator("packet", "paymentTicket")({ ...ticket, cumulativeAmount: x })],
        ["receipt units", 128, (x) => sessionReceiptFromJson({ ...receipt, metering: { ...receipt.metering, units: x } }), (x) => schemaValidator("challenge-package", "sessionReceipt")({ ...receipt, metering: { ...receipt.metering, units: x } })],
        ["v1 price", 128, (x) => pricingTermsFromJson({ ...V.termsV1.document, pricePerInvocation: x }), (x) => schemaValidator("terms")({ ...V.termsV1.document, pricePerInvocation: x })],
        ["resolution chain id", 64, (x) => expectUint(x, "chain_id", 64), (x) => schemaValidator("resolution")({ ...V.resolution.document, chain_id: x })],
      ];
      for (const [field, bits, code, schema] of fields) {
        for (const value of [String((1n << BigInt(bits)) - 1n), String(1n << BigInt(bits)), "0", "12"]) {
          expect(schema(value), `${field} schema ${value}`).to.equal(below(value, bits));
          expect(codeAccepts(() => code(value)), `${field} code ${value}`).to.equal(below(value, bits));
        }
      }
    });

    it("model ids: a terms document names exactly the models a receipt can name (256 UTF-16 code units, astral characters count twice)", () => {
      const astral = "😀"; // U+1F600: one code point, two code units
      const models: Array<[string, boolean]> = [
        ["m", true],
        ["x".repeat(256), true],
        ["x".repeat(257), false],
        [astral.repeat(128), true],
        [astral.repeat(129), false], // 129 code points, 258 code units: the old schema accepted it
        [astral.repeat(127) + "xx", true],
        [astral.repeat(127) + "xxx", false],
        ["x" + astral.repeat(127) + "x", true],
        ["é".repeat(256), true],
        ["\uFFFF".repeat(256), true],
        ["\uFFFF".repeat(255) + astral, false],
        ["", false],
      ];
      const receipt = (model: string) => ({ ...V.sessionReceipt.receipt, modelSnapshotId: model });
      // A validator whose regular expressions see UTF-16 code units (no "u" flag), as some JSON Schema tools do.
      const unitsAjv = new Ajv({ strict: true, allowUnionTypes: true, unicodeRegExp: false });
      const unitsTerms = unitsAjv.compile(jsonSchemaOf("terms"));
      for (const [model, ok] of models) {
        const label = `${[...model].length} code points, ${model.length} code units`;
        expect(codeAccepts(() => sessionReceiptFromJson(receipt(model))), `receipt code: ${label}`).to.equal(ok);
        const terms = termsWith((t) => (t.models = [model]));
        expect(schemaAccepts(terms), `terms schema: ${label}`).to.equal(ok);
        expect(unitsTerms(terms), `terms schema, code-unit regular expressions: ${label}`).to.equal(ok);
        expect(codeAccepts(() => pricingTermsFromJson(terms)), `terms code: ${label}`).to.equal(ok);
        expect(schemaValidator("packet", "sessionReceipt")(receipt(model)), `packet schema receipt: ${label}`).to.equal(ok);
        expect(schemaValidator("challenge-package", "sessionReceipt")(receipt(model)), `package schema receipt: ${label}`).to.equal(ok);
        expect(schemaValidator("challenge-package", "termsV2")(terms), `package schema terms: ${label}`).to.equal(ok);
      }
    });
  });
});

/** Plain-JSON key sort by UTF-16 code units (RFC 8785 for documents whose numbers are integers and strings need no escapes beyond JSON.stringify's). */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]));
  }
  return value;
}
