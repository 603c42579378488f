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
import hre from "hardhat";
import { privateKeyToAccount } from "viem/accounts";
import { concat, encodeAbiParameters, getAddress, hashTypedData, keccak256, pad, recoverAddress, stringToBytes, toHex, zeroHash, type Hex } from "viem";

import { gasEscrowAbi } from "../../channel-client/abi/GasEscrow";
import { evidenceOfKind, packageFromJson, packageHash, type ChallengePackage } from "../../arbitration/documents/package";
import { Checks } from "../../arbitration/lanes/lane0-checks";
import { streamConduct, streamEvidenceChecks } from "../../arbitration/lanes/lane0-stream";
import { sampledTestOf } from "../../arbitration/lanes/stream-sample";
import { verifyUpipRecord } from "../../arbitration/lanes/verify-upip";
import { MAX_PACKET_BYTES } from "../../channel-client/core/packets";
import { decodeMessage, encodeMessage } from "../../channel-client/node/protocol";
import { RESOLUTION_TYPES, resolutionFromJson } from "../../arbitration/lanes/resolution";
import { upipFromJson } from "../../arbitration/documents/upip";
import { jsonSchemaOf, schemaValidator, type SchemaName } from "../../channel-client/core/schemas";
import { sessionReceiptFromJson } from "../../channel-client/core/receipt";
import { signedProgressProofFromJson, trancheRequestFromJson } from "../../channel-client/core/progress-proof";
import { paymentTicketFromJson } from "../../channel-client/core/ticket";
import { callPricingOf, pricingTermsFromJson } from "../../channel-client/core/terms";
import { expectUint } from "../../channel-client/core/validate";
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
    // Nothing is left to come: the stream messages, the stream case and the sample's record have their sections.
    expect(doc).to.not.include("## TODO");
    for (const heading of ["## 29. Stream messages on the sealed socket", "## 30. Stream cases", "## 31. The UPIP record of a stream sample"]) expect(doc).to.include(heading);
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

  describe("streaming and wallet payers (sections 3, 24–31), recomputed from the document's formulas", () => {
    /** id(x) as section 1 states it, for documents of strings, integers and booleans. */
    const id = (x: unknown): Hex => tag(JSON.stringify(sortKeys(x)));
    /** EIP-712 struct hash from the encodeType string the vectors quote: typeHash ‖ each field as its ABI word. */
    const structHash = (encodeType: string, data: Record<string, unknown>): Hex => {
      const fields = encodeType.slice(encodeType.indexOf("(") + 1, -1).split(",").map((f) => f.split(" ") as [string, string]);
      const value = (type: string, x: unknown) => (/^u?int/.test(type) ? BigInt(x as string | number) : x);
      return keccak256(encodeAbiParameters([{ type: "bytes32" }, ...fields.map(([type]) => ({ type }))], [tag(encodeType), ...fields.map(([type, name]) => value(type, data[name]))]));
    };
    const digest712 = (struct: Hex): Hex => keccak256(concat(["0x1901", V.eip712GasEscrow.domainSeparator, struct]));
    const types = () => V.eip712GasEscrow.types;

    it("ERC-5267: the return data is the ABI encoding of the documented tuple, fields 0x0f, and its four fields give the domain separator", () => {
      const TUPLE = ["bytes1", "string", "string", "uint256", "address", "bytes32", "uint256[]"].map((type) => ({ type }));
      for (const [name, e] of Object.entries<any>(V.erc5267)) {
        expect(e.selector).to.equal(keccak256(stringToBytes("eip712Domain()")).slice(0, 10));
        expect(e.returnData, name).to.equal(encodeAbiParameters(TUPLE, ["0x0f", e.name, e.version, BigInt(e.chainId), e.verifyingContract, zeroHash, []]));
      }
      const separator = (e: any) => keccak256(encodeAbiParameters(
        [{ type: "bytes32" }, { type: "bytes32" }, { type: "bytes32" }, { type: "uint256" }, { type: "address" }],
        [tag(V.eip712GasEscrow.domainType), tag(e.name), tag(e.version), BigInt(e.chainId), e.verifyingContract],
      ));
      expect(separator(V.erc5267.GasEscrow)).to.equal(V.eip712GasEscrow.domainSeparator);
      expect(separator(V.erc5267.DisputeManager)).to.equal(V.eip712DisputeManager.domainSeparator);
    });

    it("terms v3: id of the document with its tools table; each call priced by the stated rule (listing free, a tool's own price, else v2)", () => {
      const t = V.termsV3;
      expect(t.canonical).to.equal(JSON.stringify(sortKeys(t.document)));
      expect(tag(t.canonical)).to.equal(t.termsHash);
      expect(t.document.version).to.equal("3");
      const FREE = ["tools/list", "resources/list", "resources/templates/list", "prompts/list"];
      expect(t.freeMethods).to.deep.equal(FREE);
      const p = t.document.pricing;
      const cap = BigInt(p.capPerCall);
      for (const call of t.calls) {
        const r = call.request;
        const units = BigInt(call.meteredUnits);
        expect(call.offloadPacketHash).to.equal(id(r));
        const tool = r.method === "tools/call" && Object.prototype.hasOwnProperty.call(p.tools, r.params.name) ? BigInt(p.tools[r.params.name]) : undefined;
        const v2 = BigInt(p.perInvocation) + units * BigInt(p.perUnit.price);
        const expected = FREE.includes(r.method) ? ["free", 0n, 0n] : tool !== undefined ? ["tool", tool, tool] : ["metered", cap, v2 < cap ? v2 : cap];
        expect([call.pricedAs, call.prepaid, call.price], JSON.stringify(r)).to.deep.equal([expected[0], String(expected[1]), String(expected[2])]);
      }
      // Every branch is shown, the cap both binding and not.
      expect(t.calls.map((c: any) => c.pricedAs)).to.include.members(["free", "tool", "metered"]);
      expect(t.calls.filter((c: any) => c.pricedAs === "metered").map((c: any) => c.price === c.prepaid)).to.have.members([true, false]);
      // The tools table is under the hash.
      expect(id({ ...t.document, pricing: { ...p, tools: {} } })).to.not.equal(t.termsHash);
    });

    it("x402 ioi-channel: the requirement prices the request as terms v3 do, the payment's ticket adds exactly that, signed by the payer; the response carries the receipt", async () => {
      const x = V.x402Channel;
      const R = x.paymentPayload.accepted;
      expect(x.paymentRequired.isError).to.equal(true);
      expect(x.paymentRequired.structuredContent.accepts).to.deep.equal([R]);
      expect(JSON.parse(x.paymentRequired.content[0].text)).to.deep.equal(x.paymentRequired.structuredContent);
      expect(x.paymentPayload.resource).to.deep.equal(x.paymentRequired.structuredContent.resource);
      expect([x.scheme, x.x402Version, x.paymentMeta, x.responseMeta]).to.deep.equal(["ioi-channel", 2, "x402/payment", "x402/payment-response"]);
      expect({ ...R, extra: undefined }).to.deep.equal({ scheme: "ioi-channel", network: "eip155:31337", asset: "0x0000000000000000000000000000000000000000", amount: V.termsV3.calls[1].prepaid, payTo: V.keys.provider.address, maxTimeoutSeconds: 60, extra: undefined });
      expect(R.extra).to.deep.equal({ escrow: V.eip712GasEscrow.domain.verifyingContract, sessionId: x.sessionId, termsHash: V.termsV3.termsHash, request: x.request });
      expect(x.request).to.deep.equal(V.termsV3.calls[1].request);
      expect(digest712(structHash(types().Session.encodeType, { ...x.channel.terms, openedAt: x.channel.openedAt }))).to.equal(x.sessionId);
      const signed = x.paymentPayload.payload.ticket;
      expect([signed.ticket.seq, signed.ticket.cumulativeAmount, x.paymentPayload.payload.leafCount]).to.deep.equal(["1", R.amount, 0]);
      const digest = digest712(structHash(types().PaymentTicket.encodeType, signed.ticket));
      expect(digest).to.equal(x.ticketDigest);
      expect(await recoverAddress({ hash: digest, signature: signed.signature })).to.equal(V.keys.payer.address);
      const response = x.paymentResponse;
      const carried = response.extensions["ioi-settlement"];
      expect(carried.ticket).to.deep.equal(signed);
      expect(response.transaction).to.equal(id(carried.receipt.receipt));
      expect([response.success, response.network, response.payer, response.amount]).to.deep.equal([true, "eip155:31337", V.keys.payer.address, V.termsV3.calls[1].price]);
      expect(carried.receipt.receipt.offloadPacketHash).to.equal(id(x.request));
      const receiptDigest = keccak256(concat([tag("IOI_SIG_DOMAIN_RECEIPT_V1"), response.transaction]));
      expect(await recoverAddress({ hash: receiptDigest, signature: carried.receipt.signature })).to.equal(V.keys.provider.address);
      // The code's parsers take what goes over the wire.
      expect(paymentTicketFromJson(signed.ticket).cumulativeAmount).to.equal(BigInt(R.amount));
      expect(sessionReceiptFromJson(carried.receipt.receipt).metering.amount).to.equal(BigInt(response.amount));
    });

    it("terms v4: id of the document, the stream block under it, one price per tranche, the suite bound by its bundle hash", () => {
      const t = V.termsV4;
      expect(t.canonical).to.equal(JSON.stringify(sortKeys(t.document)));
      expect(tag(t.canonical)).to.equal(t.termsHash);
      expect(t.document.version).to.equal("4");
      expect(t.document.pricing.perInvocation).to.equal(t.document.pricing.capPerCall);
      expect(t.document).to.not.have.nested.property("pricing.perUnit");
      expect(id(t.suiteBundle)).to.equal(t.document.stream.suite.hash);
      // The same body without its stream block hashes differently: the block is under the hash.
      const { stream: _stream, ...body } = t.document;
      expect(id({ ...body })).to.not.equal(t.termsHash);
      expect(() => pricingTermsFromJson({ ...t.document, pricing: { ...t.document.pricing, perInvocation: "1" } })).to.throw("one price per tranche");
    });

    it("tranche request and Progress Proof: ids, the commitment opens with the 32 raw secret bytes, the proof digest", () => {
      const r = V.trancheRequest;
      expect(keccak256(r.secret)).to.equal(r.sampleCommit);
      expect(tag(r.secret)).to.not.equal(r.sampleCommit); // the hex text is not the preimage
      expect(r.request).to.deep.equal({ schema: "ioi.stream_tranche/1", sessionId: V.progressReceipt.sessionId, tranche: "1", sampleCommit: r.sampleCommit });
      expect(r.canonical).to.equal(JSON.stringify(sortKeys(r.request)));
      expect(tag(r.canonical)).to.equal(r.requestHash);
      const p = V.progressProof;
      expect(p.canonical).to.equal(JSON.stringify(sortKeys(p.proof)));
      expect(tag(p.canonical)).to.equal(p.proofHash);
      expect(keccak256(concat([tag("IOI_SIG_DOMAIN_PROGRESS_PROOF_V1"), p.proofHash]))).to.equal(p.digest);
      expect(tag(p.signatureDomain)).to.equal(p.signatureDomainHash);
      expect(p.proof.suiteHash).to.equal(V.termsV4.document.stream.suite.hash);
      expect(id(p.repository)).to.equal(p.proof.repoStateHash);
      expect(p.proof.prevProofHash).to.equal(zeroHash);
      expect(p.signed).to.deep.equal({ proof: p.proof, signature: p.signature });
    });

    it("sample draw: a bare re-implementation gives every draw's document, hash and index, skipping repeats", () => {
      const s = V.sampleDraw;
      let repeats = 0;
      for (const d of s.draws) {
        const expected: number[] = [];
        const draws: unknown[] = [];
        if (d.total > 0 && d.count >= d.total) expected.push(...Array.from({ length: d.total }, (_, i) => i));
        else if (d.total > 0) {
          for (let draw = 0; expected.length < d.count; draw++) {
            // Keys in sorted order: domain, draw, proof, secret.
            const document = `{"domain":"ioi.stream.sample/1","draw":${draw},"proof":"${d.proofHash}","secret":"${d.secret}"}`;
            const hash = keccak256(stringToBytes(document));
            const index = Number(BigInt(hash) % BigInt(d.total));
            if (expected.includes(index)) repeats++;
            else expected.push(index);
            draws.push({ draw, document, keccak256: hash, index });
          }
        }
        expect(d.indices, `${d.total}/${d.count}`).to.deep.equal(expected);
        expect(d.draws, `${d.total}/${d.count}`).to.deep.equal(draws);
        expect(new Set(d.indices).size).to.equal(Math.min(d.count, d.total));
      }
      expect(repeats, "some vector shows a repeated index being skipped").to.be.greaterThan(0);
      expect(s.draws.map((d: any) => [d.total, d.count])).to.deep.include.members([[3, 3], [0, 2]]);
      // The spot-check's inputs: the default Lane 1 clock, the seed of the stated document.
      const i = s.inputs;
      expect(i.seedDocument).to.equal(JSON.stringify(sortKeys({ domain: "ioi.stream.inputs/1", chain_id: i.parameters.chainId, gas_escrow: i.parameters.gasEscrow.toLowerCase(), session_id: i.parameters.sessionId, tranche: i.parameters.tranche })));
      expect(tag(i.seedDocument)).to.equal(i.seed);
      expect(i.clockMs).to.equal(V.pinnedSeed.default.clockMs);
    });

    it("a Progress Proof folds into receipt k (input = request, output = proof) and hence into the usual leaf", () => {
      const r = V.progressReceipt;
      const channel = { ...r.channel.terms, openedAt: r.channel.openedAt };
      expect(digest712(structHash(types().Session.encodeType, channel))).to.equal(r.sessionId);
      expect(r.channel.terms.termsHash).to.equal(V.termsV4.termsHash);
      expect(r.receipt.offloadPacketHash).to.equal(V.trancheRequest.requestHash);
      expect(r.receipt.offloadPacketHash).to.equal(keccak256(stringToBytes(V.trancheRequest.canonical)));
      expect(r.receipt.outputHash).to.equal(V.progressProof.proofHash);
      expect(r.receipt.outputHash).to.equal(keccak256(stringToBytes(V.progressProof.canonical)));
      expect(r.receipt.metering).to.deep.equal({ units: "0", amount: V.termsV4.document.pricing.capPerCall });
      expect(r.ticket.cumulativeAmount).to.equal(V.termsV4.document.pricing.capPerCall);
      expect(r.ticket.termsHash).to.equal(V.termsV4.termsHash);
      expect(r.canonical).to.equal(JSON.stringify(sortKeys(r.receipt)));
      expect(tag(r.canonical)).to.equal(r.receiptHash);
      expect(id(r.ticket)).to.equal(r.ticketHash);
      expect(keccak256(concat([tag("IOI_SESSION_LEAF_V1"), r.receiptHash, r.ticketHash]))).to.equal(r.leaf);
      expect(() => sessionReceiptFromJson(r.receipt)).to.not.throw();
      expect(() => paymentTicketFromJson(r.ticket)).to.not.throw();
    });

    it("stream messages: each is the canonical JSON it quotes, decodes and re-encodes to the same bytes, and carries tranche 1's artifacts", async () => {
      const m = V.streamMessages;
      expect(m.maxMessageBytes).to.equal(MAX_PACKET_BYTES).and.to.equal(1_048_576);
      expect(m.messages.map((x: any) => x.type)).to.deep.equal(["stream.tranche", "stream.result", "stream.sample", "stream.repository"]);
      for (const x of m.messages) {
        expect(x.canonical, x.type).to.equal(JSON.stringify(sortKeys(x.json)));
        const bytes = stringToBytes(x.canonical);
        expect(bytes.length, x.type).to.equal(x.bytes);
        expect(toHex(encodeMessage(decodeMessage(bytes))), x.type).to.equal(toHex(bytes));
        // A member the message does not list is refused, not ignored.
        expect(() => decodeMessage(stringToBytes(JSON.stringify({ ...x.json, extra: "1" }))), x.type).to.throw("extra");
      }
      const [tranche, result, sample, repository] = m.messages.map((x: any) => x.json);
      expect(tranche.request).to.deep.equal(V.trancheRequest.request);
      expect(tranche.ticket.ticket).to.deep.equal(V.progressReceipt.ticket);
      expect(await recoverAddress({ hash: digest712(structHash(types().PaymentTicket.encodeType, tranche.ticket.ticket)), signature: tranche.ticket.signature })).to.equal(V.keys.payer.address);
      expect(result.receipt).to.deep.equal({ receipt: V.progressReceipt.receipt, signature: V.progressReceipt.receiptSignature });
      expect(result.proof).to.deep.equal(V.progressProof.signed);
      // The commit covers the one receipt: a one-leaf tree's root is the leaf (section 8).
      expect(result.commit.commit).to.deep.equal({ sessionId: V.progressReceipt.sessionId, leafCount: "1", root: V.progressReceipt.leaf });
      expect(digest712(structHash(types().ReceiptCommit.encodeType, result.commit.commit))).to.equal(m.commitDigest);
      expect(keccak256(sample.secret)).to.equal(tranche.request.sampleCommit);
      expect(sample.indices).to.deep.equal(V.sampleDraw.draws[0].indices);
      expect(id(repository.repository)).to.equal(V.progressProof.proof.repoStateHash);
      // The bounds of stream.sample: 1 to 16 indices, each 0 to 1023.
      const withIndices = (indices: unknown) => stringToBytes(JSON.stringify({ ...sample, indices }));
      expect(() => decodeMessage(withIndices(Array.from({ length: 16 }, (_, i) => i)))).to.not.throw();
      expect(m.maxSampleIndices).to.equal(16);
      for (const bad of [[], Array.from({ length: 17 }, (_, i) => i), [1024], [-1], [1.5], ["1"]]) expect(() => decodeMessage(withIndices(bad)), JSON.stringify(bad)).to.throw("message.indices");
      expect(() => decodeMessage(withIndices([1023]))).to.not.throw();
    });

    it("stream case: the progress item's id, the package hash, and Lane 0's stream checks as section 30 states them", async () => {
      const f = V.streamPackage.falseClaim;
      const e = V.streamPackage.equivocation;
      for (const x of [f, e]) {
        expect(x.progress.canonical).to.equal(JSON.stringify(sortKeys(x.progress.content)));
        expect(tag(x.progress.canonical)).to.equal(x.progress.artifact_id);
        expect(x.progress.content.proof).to.deep.equal(V.progressProof.signed);
        expect(x.progress.content.request).to.deep.equal(V.trancheRequest.request);
        expect(x.claims[0].evidence_refs).to.deep.equal(x.evidence.map((item: any) => item.artifact_id));
      }
      expect(f.progress.content.secret).to.equal(V.trancheRequest.secret);
      expect(f.drawn).to.deep.equal(V.sampleDraw.draws[0].indices).and.to.include(f.progress.content.sample);
      expect(f.evidence.map((item: any) => item.kind)).to.deep.equal(["channel", "receipt", "progress", "test_suite", "deliverable"]);
      expect(f.evidence[3].artifact_id).to.equal(V.termsV4.document.stream.suite.hash);
      expect(f.evidence[4].artifact_id).to.equal(V.progressProof.proof.repoStateHash);
      expect(f.claims[0].claim_id).to.equal("false_progress_claim");
      expect(e.evidence.map((item: any) => item.kind)).to.deep.equal(["channel", "receipt", "progress"]);
      expect(e.claims[0].claim_id).to.equal("progress_proof_equivocation");
      expect(id(e.progress.content.conflicting.proof)).to.equal(e.secondProofHash).and.to.not.equal(V.progressProof.proofHash);
      expect(await recoverAddress({ hash: keccak256(concat([tag("IOI_SIG_DOMAIN_PROGRESS_PROOF_V1"), e.secondProofHash])), signature: e.progress.content.conflicting.signature })).to.equal(V.keys.provider.address);
      const pkg = packageFromJson(V.streamPackage.package);
      expect(tag(JSON.stringify(sortKeys(V.streamPackage.package)))).to.equal(f.packageHash);
      expect(packageHash(pkg)).to.equal(f.packageHash);

      // Lane 0's stream checks, run from the code on the package and on edits of it.
      const lane0 = async (p: ChallengePackage) => {
        const c = new Checks();
        const channel = evidenceOfKind(p, "channel")[0]!.content;
        const challenged = evidenceOfKind(p, "receipt")[0]!.content;
        const stream = await streamEvidenceChecks(c, p, channel, challenged, p.subject.kind === "session" ? p.subject.sessionId : zeroHash);
        if (stream && c.challengerFaults.size === 0) streamConduct(c, stream, channel.pricing, challenged);
        return c;
      };
      const clean = await lane0(pkg);
      expect([...clean.challengerFaults], "the false-claim package's evidence verifies").to.deep.equal([]);
      expect(clean.violations).to.deep.equal([]); // the false outcome is Lane 1's to find
      expect(clean.checks.map((x) => x.name)).to.include.members(["stream.proof_signature", "stream.proof_binding", "stream.request_binding", "stream.sample_reveal", "stream.sample_rate", "stream.suite_binding", "stream.repository_binding"]);
      const withProgress = (edit: (progress: any) => any): ChallengePackage => ({ ...pkg, evidence: pkg.evidence.map((x) => (x.kind === "progress" ? ({ ...x, content: edit(x.content) } as typeof x) : x)) });
      // SAMPLE_OUTSIDE_RATE: claim #0 was not drawn ([1, 2]).
      expect(f.drawn).to.not.include(0);
      expect([...(await lane0(withProgress((p) => ({ ...p, sample: 0 })))).challengerFaults]).to.deep.equal(["SAMPLE_OUTSIDE_RATE"]);
      // SAMPLE_REVEAL_INVALID: the secret's hex text is not the preimage.
      expect([...(await lane0(withProgress((p) => ({ ...p, secret: tag(p.secret) })))).challengerFaults]).to.deep.equal(["SAMPLE_REVEAL_INVALID"]);
      // STREAM_PROOF_EQUIVOCATION: the equivocation package's second proof.
      const equivocation = packageFromJson({ ...V.streamPackage.package, evidence: [...V.streamPackage.package.evidence.slice(0, 2), { kind: "progress", artifact_id: e.progress.artifact_id, content: e.progress.content }], claims: e.claims });
      const twice = await lane0(equivocation);
      expect([...twice.challengerFaults]).to.deep.equal([]);
      const terms = V.termsV4.document;
      expect(twice.violations).to.deep.equal([{ code: "STREAM_PROOF_EQUIVOCATION", seq: 1n, slash: BigInt(terms.stream.falseClaimPenalty), refund: BigInt(terms.pricing.capPerCall), detail: twice.violations[0]!.detail }]);
      // STREAM_FALSE_CLAIM: a verified proof about another suite than the terms bind.
      const c = new Checks();
      const progress = evidenceOfKind(pkg, "progress")[0]!.content;
      const otherSuite = { ...progress, proof: { ...progress.proof, proof: { ...progress.proof.proof, suiteHash: zeroHash } } };
      streamConduct(c, { progress: otherSuite, proofHash: V.progressProof.proofHash }, evidenceOfKind(pkg, "channel")[0]!.content.pricing, evidenceOfKind(pkg, "receipt")[0]!.content);
      expect(c.violations.map((x) => [x.code, x.slash, x.refund])).to.deep.equal([["STREAM_FALSE_CLAIM", BigInt(terms.stream.falseClaimPenalty), BigInt(terms.pricing.capPerCall)]]);
    });

    it("stream sample's UPIP record: the intent names the one test, the transcript and hashes as stated, and --verify-upip reproduces it", async () => {
      const u = V.streamSampleUpip;
      const r = u.record;
      const claim = V.progressProof.proof.tests[u.index];
      expect(u.name).to.equal(claim.name);
      expect(u.claimed).to.equal(claim.outcome);
      expect(u.index).to.equal(V.streamPackage.falseClaim.sample);
      expect([u.actual, u.status]).to.deep.equal(["pass", "false"]);
      expect(r.process.intent).to.equal(`stream sample: test #${u.index} (${JSON.stringify(u.name)}) of tranche 1`).and.to.equal(u.intent);
      expect(/^stream sample: test #(0|[1-9][0-9]{0,3}) \(/.exec(r.process.intent)![1]).to.equal(String(u.index));
      expect(sampledTestOf(r.process.intent)).to.equal(u.index);
      expect(sampledTestOf(V.upip.record.process.intent)).to.equal(undefined);
      expect(r.process.actor).to.equal(`ioi-arbitration/lane1@${V.judgeRuntime.judgeRuntimeHash}`);
      expect(r.process.command).to.deep.equal(V.termsV4.document.stream.suite.command);
      expect(r.process.budgets).to.deep.equal({ steps_per_test: V.termsV4.document.stream.suite.stepBudget, memory_bytes: 33_554_432, max_output_bytes: V.termsV4.document.stream.suite.maxOutputBytes });
      for (const side of ["suite", "deliverable"]) expect(r.process.inputs[side]).to.deep.equal({ clock_ms: V.sampleDraw.inputs.clockMs, seed: V.sampleDraw.inputs.seed });
      expect(r.state.suite_hash).to.equal(V.termsV4.document.stream.suite.hash);
      expect(r.state.deliverable_hash).to.equal(V.progressProof.proof.repoStateHash);
      expect(`files:sha256:${sha256Hex(JSON.stringify(sortKeys({ suite: V.termsV4.suiteBundle, deliverable: V.progressProof.repository })))}`).to.equal(r.state.state_hash);
      expect(r.deps).to.deep.equal(V.upip.record.deps);
      // Only test #2 ran: its line carries its 1-based position; every registered test is counted.
      expect(u.stdout).to.equal(`ok ${u.index + 1} ${u.name}\n{"total":3,"failed":[],"suite_fault":null}\n`);
      expect([r.result.tests, r.result.failed_tests, r.result.exit_code]).to.deep.equal([3, [], 0]);
      expect(u.resultPreimage).to.equal(`${r.result.exit_code}${u.stdout}${u.stderr}`);
      expect(`sha256:${sha256Hex(u.stdout)}`).to.equal(r.result.stdout_sha256);
      expect(`sha256:${sha256Hex(u.stderr)}`).to.equal(r.result.stderr_sha256);
      expect(`sha256:${sha256Hex(u.resultPreimage)}`).to.equal(r.result.result_hash);
      expect(`upip:sha256:${sha256Hex(JSON.stringify(sortKeys([r.state, r.deps, r.process, r.result])))}`).to.equal(r.stack_hash);
      // The code's verifier re-runs the one test the intent names and reproduces the record bit for bit.
      const verified = await verifyUpipRecord({ record: upipFromJson(r), suite: V.termsV4.suiteBundle, deliverable: V.progressProof.repository });
      expect(verified.differences).to.deep.equal([]);
      expect(verified.reproduced).to.deep.equal(r);
    });

    it("wallet payer: the three digests isValidSignature is asked, the entry points' calldata with bytes signatures, the registration event", () => {
      const w = V.walletPayer;
      const q = w.isValidSignature;
      expect(digest712(structHash(types().Session.encodeType, { ...w.channel.terms, openedAt: w.channel.openedAt }))).to.equal(w.sessionId);
      expect(w.channel.terms.payer).to.equal(w.wallet.address.toLowerCase());
      expect(digest712(structHash(types().PaymentTicket.encodeType, q.ticket.ticket))).to.equal(q.ticket.digest);
      expect(q.summary.summary.mode).to.equal("Cooperative");
      expect(q.summary.summary.payer).to.equal(w.wallet.address.toLowerCase());
      expect(digest712(structHash(types().SettlementSummary.encodeType, { ...q.summary.summary, mode: 0 }))).to.equal(q.summary.digest);
      expect(digest712(structHash(types().SessionKey.encodeType, q.grant.grant))).to.equal(q.grant.digest);
      expect(q.grant.grant.key).to.equal(w.wallet.signingKey.toLowerCase());
      // Calldata: selector of the quoted signature ‖ ABI encoding, the signature as `bytes`.
      const TERMS = { type: "tuple", components: ["address payer", "address provider", "address funder", "address asset", "bytes32 termsHash", "bytes32 policyHash", "uint64 challengeDuration", "uint64 nonce"].map((f) => ({ type: f.split(" ")[0]!, name: f.split(" ")[1]! })) };
      const terms = w.channel.terms;
      const termsValue = { ...terms, challengeDuration: BigInt(terms.challengeDuration), nonce: BigInt(terms.nonce) };
      const selector = (signature: string) => keccak256(stringToBytes(signature)).slice(0, 10) as Hex;
      const reg = w.entryPoints.registerWalletSessionKey;
      expect(reg.signature).to.equal("registerWalletSessionKey((address,address,address,address,bytes32,bytes32,uint64,uint64),uint64,(address,uint64,uint128,bytes32,uint64,bytes))");
      expect(selector(reg.signature)).to.equal(reg.selector);
      const g = q.grant.grant;
      const GRANT = { type: "tuple", components: [{ type: "address", name: "key" }, { type: "uint64", name: "expiry" }, { type: "uint128", name: "spendCap" }, { type: "bytes32", name: "capabilities" }, { type: "uint64", name: "epoch" }, { type: "bytes", name: "sig" }] };
      const grantValue = { key: g.key, expiry: BigInt(g.expiry), spendCap: BigInt(g.spendCap), capabilities: g.capabilities, epoch: BigInt(g.epoch), sig: q.grant.signature };
      expect(concat([reg.selector, encodeAbiParameters([TERMS, { type: "uint64" }, GRANT], [termsValue, BigInt(w.channel.openedAt), grantValue])])).to.equal(reg.calldata);
      const close = w.entryPoints.closeUnilateralByWallet;
      expect(close.signature).to.equal("closeUnilateralByWallet((address,address,address,address,bytes32,bytes32,uint64,uint64),uint64,(uint64,uint128,bytes32,bytes))");
      expect(selector(close.signature)).to.equal(close.selector);
      const t = q.ticket.ticket;
      const TICKET = { type: "tuple", components: [{ type: "uint64", name: "seq" }, { type: "uint128", name: "cumulativeAmount" }, { type: "bytes32", name: "receiptRoot" }, { type: "bytes", name: "sig" }] };
      const ticketValue = { seq: BigInt(t.seq), cumulativeAmount: BigInt(t.cumulativeAmount), receiptRoot: t.receiptRoot, sig: q.ticket.signature };
      expect(concat([close.selector, encodeAbiParameters([TERMS, { type: "uint64" }, TICKET], [termsValue, BigInt(w.channel.openedAt), ticketValue])])).to.equal(close.calldata);
      const coop = w.entryPoints.closeCooperativeByWallet;
      expect(coop.signature).to.equal("closeCooperativeByWallet((address,address,address,address,bytes32,bytes32,uint64,uint64),uint64,uint64,uint128,bytes32,bytes,(bytes32,bytes32))");
      expect(selector(coop.signature)).to.equal(coop.selector);
      // WalletSessionKeyRegistered(bytes32 indexed sessionId, address indexed key, bytes32 grantDigest).
      expect(w.registration.topics).to.deep.equal([tag("WalletSessionKeyRegistered(bytes32,address,bytes32)"), w.sessionId, pad(g.key, { size: 32 })]);
      expect(w.registration.data).to.equal(q.grant.digest);
    });

    it("the escrow takes a registration in the documented calldata shape and records it as documented (event, view, once)", async () => {
      const s = await loadFixture(systemFixture);
      const w = V.walletPayer;
      const owner = privateKeyToAccount(V.keys.payer.privateKey);
      const wallet = await hre.viem.deployContract("OwnerWallet", [owner.address]);
      // The vector's channel and grant with this wallet as payer, in this escrow's domain (bare formulas).
      const separator = keccak256(encodeAbiParameters(
        [{ type: "bytes32" }, { type: "bytes32" }, { type: "bytes32" }, { type: "uint256" }, { type: "address" }],
        [tag(V.eip712GasEscrow.domainType), tag(V.eip712GasEscrow.domain.name), tag(V.eip712GasEscrow.domain.version), BigInt(await s.publicClient.getChainId()), s.escrow.address],
      ));
      const digestHere = (struct: Hex): Hex => keccak256(concat(["0x1901", separator, struct]));
      const terms = { ...w.channel.terms, payer: wallet.address.toLowerCase() };
      const sessionId = digestHere(structHash(types().Session.encodeType, { ...terms, openedAt: w.channel.openedAt }));
      const grant = { ...w.isValidSignature.grant.grant, sessionId };
      const grantDigest = digestHere(structHash(types().SessionKey.encodeType, grant));
      const sig = await owner.sign({ hash: grantDigest });
      const TERMS = { type: "tuple", components: ["payer", "provider", "funder", "asset"].map((name) => ({ type: "address", name })).concat([{ type: "bytes32", name: "termsHash" }, { type: "bytes32", name: "policyHash" }, { type: "uint64", name: "challengeDuration" }, { type: "uint64", name: "nonce" }]) };
      const GRANT = { type: "tuple", components: [{ type: "address", name: "key" }, { type: "uint64", name: "expiry" }, { type: "uint128", name: "spendCap" }, { type: "bytes32", name: "capabilities" }, { type: "uint64", name: "epoch" }, { type: "bytes", name: "sig" }] };
      const data = concat([
        w.entryPoints.registerWalletSessionKey.selector as Hex,
        encodeAbiParameters([TERMS, { type: "uint64" }, GRANT], [
          { ...terms, challengeDuration: BigInt(terms.challengeDuration), nonce: BigInt(terms.nonce) },
          BigInt(w.channel.openedAt),
          { key: grant.key, expiry: BigInt(grant.expiry), spendCap: BigInt(grant.spendCap), capabilities: grant.capabilities, epoch: BigInt(grant.epoch), sig },
        ]),
      ]);
      const view = { address: s.escrow.address, abi: gasEscrowAbi, functionName: "walletSessionKeyRegistered", args: [sessionId, grantDigest] } as const;
      expect(await s.publicClient.readContract(view)).to.equal(false);
      const sender = s.wallets[5]!; // anyone may register
      const first = await s.publicClient.waitForTransactionReceipt({ hash: await sender.sendTransaction({ to: s.escrow.address, data }) });
      expect(first.status).to.equal("success");
      expect(first.logs.map((l) => ({ address: getAddress(l.address), topics: l.topics, data: l.data }))).to.deep.equal([
        { address: getAddress(s.escrow.address), topics: [w.registration.topics[0], sessionId, pad(grant.key, { size: 32 })], data: grantDigest },
      ]);
      expect(await s.publicClient.readContract(view)).to.equal(true);
      // Recorded once: the same registration again emits nothing (and asks the wallet nothing).
      const again = await s.publicClient.waitForTransactionReceipt({ hash: await sender.sendTransaction({ to: s.escrow.address, data }) });
      expect([again.status, again.logs.length]).to.deep.equal(["success", 0]);
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
      [V.progressProof.digest, V.progressProof.signature, V.keys.provider.address],
      [keccak256(concat([tag("IOI_SIG_DOMAIN_RECEIPT_V1"), V.progressReceipt.receiptHash])), V.progressReceipt.receiptSignature, V.keys.provider.address],
      // The OwnerWallet's approvals: its owner's signature of each digest itself.
      [V.walletPayer.isValidSignature.ticket.digest, V.walletPayer.isValidSignature.ticket.signature, V.walletPayer.wallet.owner],
      [V.walletPayer.isValidSignature.summary.digest, V.walletPayer.isValidSignature.summary.signature, V.walletPayer.wallet.owner],
      [V.walletPayer.isValidSignature.grant.digest, V.walletPayer.isValidSignature.grant.signature, V.walletPayer.wallet.owner],
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
    // ERC-5267 (section 2): each verifying contract returns the vector's bytes, its own address in the address word.
    const word = (address: string) => address.toLowerCase().slice(2).padStart(64, "0");
    for (const [name, address] of [["GasEscrow", s.escrow.address], ["DisputeManager", s.disputes.address], ["LaborGas", s.token.address]] as const) {
      const e = V.erc5267[name];
      const { data } = await s.publicClient.call({ to: address, data: e.selector });
      expect(data, name).to.equal((e.returnData as string).replace(word(e.verifyingContract), word(address)));
    }
    // The DisputeManager's digest of the vector's message is the one the documented domain gives.
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
    // The test OwnerWallet approves exactly the vector's three digests with the vector's signatures (ERC-1271 magic value),
    // and refuses a signature moved to another digest; the escrow routes the wallet module's view (fallback).
    const w = V.walletPayer;
    const wallet = await hre.viem.deployContract("OwnerWallet", [w.wallet.owner]);
    for (const { digest, signature } of Object.values<any>(w.isValidSignature)) {
      expect(await wallet.read.isValidSignature([digest, signature])).to.equal(w.wallet.magicValue);
    }
    expect(await wallet.read.isValidSignature([w.isValidSignature.grant.digest, w.isValidSignature.ticket.signature])).to.equal("0xffffffff");
    const registered = { address: s.escrow.address, abi: gasEscrowAbi, functionName: "walletSessionKeyRegistered" } as const;
    expect(await s.publicClient.readContract({ ...registered, args: [w.sessionId, w.isValidSignature.grant.digest] })).to.equal(false);
  });

  it("the published schemas accept each vector's document, and so do the parsers", () => {
    const parsers: Partial<Record<SchemaName, (value: unknown) => unknown>> = {
      terms: (x) => pricingTermsFromJson(x),
      "challenge-package": (x) => packageFromJson(x),
      resolution: (x) => resolutionFromJson(x),
      upip: (x) => upipFromJson(x),
      "progress-proof": (x) => ((x as { schema?: string }).schema === "ioi.stream_tranche/1" ? trancheRequestFromJson(x) : signedProgressProofFromJson(x)),
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
    expect(checked).to.equal(12);
    // The wire forms of the channel artifacts, against the packet and package schemas' definitions.
    const wire: Array<[SchemaName, string, unknown]> = [
      ["packet", "signedPaymentTicket", { ticket: V.paymentTicket.ticket, signature: V.paymentTicket.signature }],
      ["packet", "signedSessionReceipt", { receipt: V.sessionReceipt.receipt, signature: V.sessionReceipt.signature }],
      ["packet", "signedReceiptCommit", { commit: V.receiptCommit.commit, signature: V.receiptCommit.signature }],
      ["packet", "signedFaultStatement", { statement: V.faultStatement.statement, signature: V.faultStatement.signature }],
      ["challenge-package", "signedSessionKeyGrant", { grant: V.sessionKeyGrant.grant, methods: V.sessionKeyGrant.methods, signature: V.sessionKeyGrant.signature }],
      ["challenge-package", "channelRef", V.sessionId.channel],
      ["challenge-package", "bundle", V.bundleHash.bundle],
      ["challenge-package", "termsV4", V.termsV4.document],
      ["progress-proof", "proof", V.progressProof.proof],
      ["progress-proof", "signedProof", V.progressProof.signed],
      ["progress-proof", "trancheRequest", V.trancheRequest.request],
      ["packet", "signedSessionReceipt", { receipt: V.progressReceipt.receipt, signature: V.progressReceipt.receiptSignature }],
      ["packet", "paymentTicket", V.walletPayer.isValidSignature.ticket.ticket],
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

    it("terms v3 tools: both accept 128-character names, 1,024 tools and prices below 2^128, and refuse one more of each; the priced tool is the named one", () => {
      const v3 = (tools: Record<string, string>) => ({ ...JSON.parse(JSON.stringify(V.termsV3.document)), pricing: { ...V.termsV3.document.pricing, tools } });
      const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`tool-${i}`, "1"]));
      const cases: Array<[string, Record<string, string>, boolean]> = [
        ["a 128-character name", { ["t".repeat(128)]: "5" }, true],
        ["a 129-character name", { ["t".repeat(129)]: "5" }, false],
        ["an empty name", { "": "5" }, false],
        ["1,024 tools", many(1024), true],
        ["1,025 tools", many(1025), false],
        ["a price of 2^128 - 1", { echo: String((1n << 128n) - 1n) }, true],
        ["a price of 2^128", { echo: String(1n << 128n) }, false],
        ["a price as a JSON number", { echo: 5 as unknown as string }, false],
        ["no tools", {}, true],
      ];
      for (const [label, tools, accepted] of cases) {
        const document = v3(tools);
        expect([schemaAccepts(document), codeAccepts(() => pricingTermsFromJson(document))], label).to.deep.equal([accepted, accepted]);
      }
      const long = "t".repeat(128);
      const parsed = pricingTermsFromJson(v3({ [long]: "5", echo: "9" })) as any;
      expect(callPricingOf(parsed, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: long } })).to.deep.equal({ kind: "tool", tool: long, price: 5n });
    });

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
      for (const name of ["terms", "packet", "ics", "challenge-package", "resolution", "upip", "progress-proof"] as const) {
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
