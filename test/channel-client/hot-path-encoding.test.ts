/**
 * Issue 15, item 4: the hot path writes tickets, receipts and the two packets of every paid invocation as
 * canonical text directly, instead of building, validating and sorting objects. These tests pin the bytes:
 * known answers first, then the hand-written text against `canon()` for many random artifacts and packets,
 * then what the fast path hands back to the generic, validating path.
 */
import { expect } from "chai";
import { keccak256, stringToBytes, zeroHash, type Hex } from "viem";

import { canon } from "../../channel-client/core/canonical";
import { signedFaultStatementToJson, type SignedFaultStatement } from "../../channel-client/core/fault-statement";
import { decodePacket, encodePacket, resultMcpText, type Packet } from "../../channel-client/core/packets";
import {
  canonicalSignedReceiptText,
  RECEIPT_SIGNATURE_DOMAIN,
  ReceiptHasher,
  sessionReceiptDigest,
  sessionReceiptHashBytes,
  signedSessionReceiptToJson,
  type SignedSessionReceipt,
} from "../../channel-client/core/receipt";
import { fastKeccakReady, hashBytes, keccak256TextBytes, keccak256TextHex, utf8Bytes } from "../../channel-client/core/keccak";
import { gasEscrowDomain, hashTyped } from "../../channel-client/core/eip712";
import { receiptCommitDigest } from "../../channel-client/core/receipt-commit";
import {
  canonicalSignedTicketText,
  canonicalTicketText,
  paymentTicketDigest,
  paymentTicketHash,
  paymentTicketToJson,
  signedPaymentTicketToJson,
  type SignedPaymentTicket,
} from "../../channel-client/core/ticket";
import { thrown } from "../helpers/assert";
import { mulberry32, type Prng } from "../helpers/prng";
import { h, sampleReceipt, sampleTicket, SESSION_ID } from "../helpers/samples";

const SIGNATURE = `0x${"ab".repeat(32)}${"1c".repeat(32)}1b` as Hex;

function randomHash(prng: Prng): Hex {
  return `0x${Array.from({ length: 64 }, () => "0123456789abcdef"[prng.int(0, 15)]).join("")}` as Hex;
}

function randomTicket(prng: Prng): SignedPaymentTicket {
  const provider = `0x${Array.from({ length: 40 }, () => "0123456789abcdefABCDEF"[prng.int(0, 21)]).join("")}` as Hex;
  return {
    ticket: {
      sessionId: randomHash(prng),
      provider,
      termsHash: randomHash(prng),
      seq: prng.bigint(0n, 2n ** 64n - 1n),
      cumulativeAmount: prng.bigint(0n, 2n ** 128n - 1n),
      receiptRoot: randomHash(prng),
    },
    signature: `0x${randomHash(prng).slice(2)}${randomHash(prng).slice(2)}1c` as Hex,
  };
}

const MODELS = ["model:demo@1", "quote\"back\\slash", "tab\tnew\nline\u0001", "émoji 😀", "\u2028\u2029", "x".repeat(256)];

function randomReceipt(prng: Prng): SignedSessionReceipt {
  return {
    receipt: sampleReceipt({
      sessionId: randomHash(prng),
      seq: prng.bigint(0n, 2n ** 64n - 1n),
      offloadPacketHash: randomHash(prng),
      outputHash: randomHash(prng),
      policyHash: randomHash(prng),
      prevReceiptHash: randomHash(prng),
      modelSnapshotId: prng.pick(MODELS),
      metering: { units: prng.bigint(0n, 2n ** 128n - 1n), amount: prng.bigint(0n, 2n ** 128n - 1n) },
    }),
    signature: `0x${randomHash(prng).slice(2)}${randomHash(prng).slice(2)}1b` as Hex,
  };
}

describe("Hot-path encodings (issue 15)", () => {
  it("writes a signed ticket's known canonical text and hash", () => {
    const ticket = sampleTicket({ seq: 7n, cumulativeAmount: 7_000n, receiptRoot: h("root") });
    const expectedTicket =
      `{"cumulativeAmount":"7000","provider":"${ticket.provider.toLowerCase()}","receiptRoot":"${h("root")}",` +
      `"seq":"7","sessionId":"${SESSION_ID}","termsHash":"${ticket.termsHash}"}`;
    expect(canonicalTicketText(ticket)).to.equal(expectedTicket);
    expect(canonicalSignedTicketText({ ticket, signature: SIGNATURE })).to.equal(`{"signature":"${SIGNATURE}","ticket":${expectedTicket}}`);
    // The ticket hash (consensus: half of every receipt leaf) is unchanged.
    expect(paymentTicketHash(ticket)).to.equal(keccak256(stringToBytes(canon(paymentTicketToJson(ticket)))));
  });

  it("writes a signed receipt's known canonical text", () => {
    const receipt = sampleReceipt();
    const expected =
      `{"receipt":{"metering":{"amount":"1000","units":"1"},"modelSnapshotId":"model:demo@1","offloadPacketHash":"${h("offload")}",` +
      `"outputHash":"${h("output")}","policyHash":"${h("policy")}","prevReceiptHash":"${zeroHash}","seq":"1","sessionId":"${SESSION_ID}"},` +
      `"signature":"${SIGNATURE}"}`;
    expect(canonicalSignedReceiptText({ receipt, signature: SIGNATURE })).to.equal(expected);
  });

  it("gives exactly canon()'s bytes for 500 random tickets and receipts", () => {
    const prng = mulberry32(0x15_15);
    for (let i = 0; i < 500; i++) {
      const ticket = randomTicket(prng);
      expect(canonicalSignedTicketText(ticket)).to.equal(canon(signedPaymentTicketToJson(ticket)));
      expect(paymentTicketHash(ticket.ticket)).to.equal(keccak256(stringToBytes(canon(paymentTicketToJson(ticket.ticket)))));
      const receipt = randomReceipt(prng);
      expect(canonicalSignedReceiptText(receipt)).to.equal(canon(signedSessionReceiptToJson(receipt)));
    }
  });

  it("writes a receipt that differs from a recent one of the same seq in a single field afresh (the recent-texts memo compares every field)", () => {
    const base = sampleReceipt();
    const variants: Array<Partial<typeof base>> = [
      { sessionId: h("other session") },
      { seq: base.seq + 1n },
      { offloadPacketHash: h("other request") },
      { outputHash: h("other output") },
      { policyHash: h("other policy") },
      { modelSnapshotId: `${base.modelSnapshotId}-2` },
      { metering: { ...base.metering, units: base.metering.units + 1n } },
      { metering: { ...base.metering, amount: base.metering.amount + 1n } },
      { prevReceiptHash: h("other previous") },
    ];
    for (const change of variants) {
      const signed = { receipt: base, signature: SIGNATURE };
      expect(canonicalSignedReceiptText(signed)).to.equal(canon(signedSessionReceiptToJson(signed)));
      const changed = { receipt: { ...base, ...change }, signature: SIGNATURE };
      expect(canonicalSignedReceiptText(changed), JSON.stringify(Object.keys(change))).to.equal(canon(signedSessionReceiptToJson(changed)));
      // …and the same values again, in a new object, give the same text.
      expect(canonicalSignedReceiptText({ receipt: { ...changed.receipt }, signature: SIGNATURE })).to.equal(canon(signedSessionReceiptToJson(changed)));
    }
    // Pipelined: 300 receipts written in order, then each of them again out of order (the newest 256 are
    // remembered, the oldest written afresh), every one with one value changed, then unchanged: canon()'s bytes.
    const receipts = Array.from({ length: 300 }, (_, i) => ({ ...base, seq: BigInt(i + 1), outputHash: h(`output ${i}`) }));
    for (const r of receipts) canonicalSignedReceiptText({ receipt: r, signature: SIGNATURE });
    for (const r of [...receipts].reverse()) {
      const changed = { receipt: { ...r, prevReceiptHash: h(`previous ${r.seq}`) }, signature: SIGNATURE };
      expect(canonicalSignedReceiptText(changed)).to.equal(canon(signedSessionReceiptToJson(changed)));
      expect(canonicalSignedReceiptText({ receipt: r, signature: SIGNATURE })).to.equal(canon(signedSessionReceiptToJson({ receipt: r, signature: SIGNATURE })));
    }
  });

  it("writes a ticket that differs from a recent one of the same seq in a single field afresh (the recent-texts memo compares every field)", () => {
    const base = sampleTicket();
    const variants: Array<Partial<typeof base>> = [
      { sessionId: h("other session") },
      { provider: "0x00000000000000000000000000000000000000aA" },
      { termsHash: h("other terms") },
      { cumulativeAmount: base.cumulativeAmount + 1n },
      { receiptRoot: h("other root") },
      { seq: base.seq + 1n },
    ];
    for (const change of variants) {
      expect(canonicalTicketText(base)).to.equal(canon(paymentTicketToJson(base)));
      const changed = { ...base, ...change };
      expect(canonicalTicketText(changed), JSON.stringify(Object.keys(change))).to.equal(canon(paymentTicketToJson(changed)));
      expect(canonicalTicketText({ ...changed })).to.equal(canon(paymentTicketToJson(changed)));
      expect(canonicalTicketText(base)).to.equal(canon(paymentTicketToJson(base)));
    }
    // More tickets than it keeps: an evicted seq is written afresh, and still right.
    for (let seq = 1n; seq <= 600n; seq++) {
      const t = { ...base, seq, cumulativeAmount: seq * 7n };
      expect(canonicalTicketText(t)).to.equal(canon(paymentTicketToJson(t)));
    }
    const first = { ...base, seq: 1n, cumulativeAmount: 7n };
    expect(canonicalTicketText(first)).to.equal(canon(paymentTicketToJson(first)));
  });

  it("hands anything unusual back to the generic path (which refuses what it must)", () => {
    const ticket = sampleTicket();
    const table: [string, SignedPaymentTicket][] = [
      ["uppercase signature", { ticket, signature: SIGNATURE.toUpperCase().replace("0X", "0x") as Hex }],
      ["short signature", { ticket, signature: SIGNATURE.slice(0, 130) as Hex }],
      ["seq 2^64", { ticket: { ...ticket, seq: 2n ** 64n }, signature: SIGNATURE }],
      ["negative amount", { ticket: { ...ticket, cumulativeAmount: -1n }, signature: SIGNATURE }],
      ["amount 2^128", { ticket: { ...ticket, cumulativeAmount: 2n ** 128n }, signature: SIGNATURE }],
      ["uppercase root", { ticket: { ...ticket, receiptRoot: h("r").toUpperCase().replace("0X", "0x") as Hex }, signature: SIGNATURE }],
      ["bad provider", { ticket: { ...ticket, provider: "0x1234" as Hex }, signature: SIGNATURE }],
    ];
    for (const [what, signed] of table) expect(canonicalSignedTicketText(signed), what).to.equal(undefined);
    const receipt = sampleReceipt();
    expect(canonicalSignedReceiptText({ receipt: { ...receipt, modelSnapshotId: "" }, signature: SIGNATURE })).to.equal(undefined);
    expect(canonicalSignedReceiptText({ receipt: { ...receipt, modelSnapshotId: "x".repeat(257) }, signature: SIGNATURE })).to.equal(undefined);
    expect(canonicalSignedReceiptText({ receipt: { ...receipt, seq: 2n ** 64n }, signature: SIGNATURE })).to.equal(undefined);
    expect(canonicalSignedReceiptText({ receipt: { ...receipt, modelSnapshotId: "lone \ud800" }, signature: SIGNATURE })).to.equal(undefined);
  });

  it("hashes batched receipts through one reused buffer exactly as sessionReceiptHashBytes (200 random receipts)", async () => {
    await fastKeccakReady;
    const prng = mulberry32(0xba7c);
    for (const model of MODELS) {
      const sessionId = randomHash(prng);
      const policyHash = randomHash(prng);
      const hasher = new ReceiptHasher({ sessionId, policyHash, modelSnapshotId: model });
      for (let i = 0; i < 200 / MODELS.length; i++) {
        const r = randomReceipt(prng).receipt;
        const expected = sessionReceiptHashBytes({ ...r, sessionId, policyHash, modelSnapshotId: model });
        const got = hasher.hash(r.seq, hashBytes(r.offloadPacketHash), hashBytes(r.outputHash), hashBytes(r.prevReceiptHash), r.metering.units, r.metering.amount);
        expect(Buffer.from(got).toString("hex")).to.equal(Buffer.from(expected).toString("hex"));
      }
    }
    // A batch's receipts usually share their metering, so the hasher rewrites only the hashes and the seq:
    // runs of equal metering across seqs whose digit count grows (9 → 10, 99 → 100, 999 → 1000), broken by
    // metering of other lengths, must still hash exactly as the generic path. Seqs below 2^53 are written
    // digit by digit from a Number and larger ones through a string, so the list crosses that boundary too.
    const sessionId = randomHash(prng);
    const policyHash = randomHash(prng);
    const reused = new ReceiptHasher({ sessionId, policyHash, modelSnapshotId: "model:reuse" });
    const meterings = [{ units: 1n, amount: 1000n }, { units: 12n, amount: 7n }, { units: 0n, amount: 0n }, { units: 2n ** 128n - 1n, amount: 2n ** 100n }];
    for (const seq of [0n, 1n, 2n, 9n, 10n, 11n, 98n, 99n, 100n, 101n, 999n, 1000n, 1001n, 999_999_999_999_999n, 10n ** 15n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 53n - 2n, 2n ** 64n - 1n, 5n, 6n]) {
      for (const metering of prng.next() < 0.7 ? [meterings[0]!] : [meterings[prng.int(0, meterings.length - 1)]!, meterings[0]!]) {
        const r = randomReceipt(prng).receipt;
        const expected = sessionReceiptHashBytes({ ...r, seq, metering, sessionId, policyHash, modelSnapshotId: "model:reuse" });
        const got = reused.hash(seq, hashBytes(r.offloadPacketHash), hashBytes(r.outputHash), hashBytes(r.prevReceiptHash), metering.units, metering.amount);
        expect(Buffer.from(got).toString("hex"), `seq ${seq}, metering ${metering.units}/${metering.amount}`).to.equal(Buffer.from(expected).toString("hex"));
      }
    }
    expect(thrown(() => new ReceiptHasher({ sessionId: SESSION_ID.toUpperCase() as Hex, policyHash: zeroHash, modelSnapshotId: "m" })).name).to.equal("InvalidHexError");
    const hasher = new ReceiptHasher({ sessionId: SESSION_ID, policyHash: zeroHash, modelSnapshotId: "m" });
    const tooLongSeq = thrown(() => hasher.hash(2n ** 64n, new Uint8Array(32), new Uint8Array(32), new Uint8Array(32), 1n, 1n));
    expect(tooLongSeq.name).to.equal("InvalidHexError");
    expect(tooLongSeq.message).to.equal(`A receipt's seq must be a uint64 (0 to 2^64 - 1); received ${2n ** 64n}.`);
    expect(thrown(() => hasher.hash(1n, new Uint8Array(31), new Uint8Array(32), new Uint8Array(32), 1n, 1n)).name).to.equal("InvalidHexError");
    // Out-of-range metering is refused on a fresh hasher and after a valid one, and leaves the layout as it was.
    const zero = new Uint8Array(32);
    const fresh = new ReceiptHasher({ sessionId: SESSION_ID, policyHash: zeroHash, modelSnapshotId: "m" });
    for (const [units, amount] of [[-1n, -1n], [2n ** 128n, 1n], [1n, 2n ** 128n], [-1n, 1n]] as const) {
      const error = thrown(() => fresh.hash(1n, zero, zero, zero, units, amount));
      expect(error.name).to.equal("InvalidHexError");
      expect(error.message).to.equal(`A receipt's metering units and amount must be uint128s (0 to 2^128 - 1); received ${units} units for ${amount}.`);
    }
    const valid = fresh.hash(5n, zero, zero, zero, 1n, 1000n);
    expect(thrown(() => fresh.hash(6n, zero, zero, zero, 2n ** 128n, 1000n)).name).to.equal("InvalidHexError");
    expect(thrown(() => fresh.hash(6n, zero, zero, zero, 1n, -1n)).name).to.equal("InvalidHexError");
    expect(Buffer.from(fresh.hash(5n, zero, zero, zero, 1n, 1000n)).equals(Buffer.from(valid))).to.equal(true);
    const base = { sessionId: SESSION_ID, offloadPacketHash: zeroHash, outputHash: zeroHash, policyHash: zeroHash, modelSnapshotId: "m", prevReceiptHash: zeroHash };
    expect(Buffer.from(valid).equals(Buffer.from(sessionReceiptHashBytes({ ...base, seq: 5n, metering: { units: 1n, amount: 1000n } })))).to.equal(true);
  });

  it("hashes a text through the reused UTF-8 buffer exactly as keccak256 of TextEncoder's bytes (ASCII, two-, three- and four-byte characters, past the buffer's first size, then short again)", async () => {
    await fastKeccakReady;
    const texts = ["", "{\"a\":1}", "é", "€ and 𝄞", "x".repeat(5_000), "𝄞".repeat(3_000), "\u0000\u007f\u0080\u07ff\u0800\uffff", "{\"short\":\"again\"}"];
    for (const text of texts) {
      const expected = keccak256(new TextEncoder().encode(text));
      expect(keccak256TextHex(text), text.slice(0, 20)).to.equal(expected);
      expect(Buffer.from(keccak256TextBytes(text)).toString("hex")).to.equal(expected.slice(2));
      expect(Buffer.from(utf8Bytes(text)).equals(Buffer.from(new TextEncoder().encode(text)))).to.equal(true);
    }
  });

  it("digests receipt commits by hand exactly as viem's hashTypedData (200 random commits, two domains)", () => {
    const prng = mulberry32(0xc011);
    const domains = [
      gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" }),
      gasEscrowDomain({ chainId: 8453, verifyingContract: "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512" }),
    ];
    for (let i = 0; i < 200; i++) {
      const domain = domains[i % 2]!;
      const commit = { sessionId: randomHash(prng), leafCount: prng.bigint(0n, 2n ** 64n - 1n), root: randomHash(prng) };
      expect(receiptCommitDigest(domain, commit)).to.equal(hashTyped(domain, "ReceiptCommit", commit));
    }
  });

  it("digests tickets, commits and receipts through reused buffers: random domains and values match viem, and a malformed value leaves nothing behind for the next", () => {
    const prng = mulberry32(0xd16e);
    for (let i = 0; i < 200; i++) {
      // A fresh domain object each time, and one whose fields change after use: the separator follows the values.
      const domain = gasEscrowDomain({ chainId: prng.int(1, 100_000), verifyingContract: randomTicket(prng).ticket.provider.toLowerCase() as Hex });
      const random = randomTicket(prng).ticket;
      const ticket = { ...random, provider: random.provider.toLowerCase() as Hex };
      expect(paymentTicketDigest(domain, ticket)).to.equal(hashTyped(domain, "PaymentTicket", ticket));
      const moved = { ...domain };
      expect(paymentTicketDigest(moved, ticket)).to.equal(hashTyped(domain, "PaymentTicket", ticket));
      (moved as { chainId: number }).chainId += 1;
      expect(paymentTicketDigest(moved, ticket)).to.equal(hashTyped(moved, "PaymentTicket", ticket));
    }
    const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
    const { ticket } = randomTicket(prng);
    const digest = paymentTicketDigest(domain, ticket);
    // Too long, too short and not hex: each is written within its field only, and the next digest is unchanged.
    for (const sessionId of [`0x${"ff".repeat(40)}`, "0xabcd", `0x${"zz".repeat(32)}`] as Hex[]) {
      paymentTicketDigest(domain, { ...ticket, sessionId, receiptRoot: sessionId, termsHash: sessionId, provider: sessionId });
      expect(paymentTicketDigest(domain, ticket)).to.equal(digest);
    }
    const commit = { sessionId: ticket.sessionId, leafCount: 7n, root: ticket.receiptRoot };
    const commitDigest = receiptCommitDigest(domain, commit);
    // A malformed commit never reaches the reused buffer: the generic encoder refuses it.
    expect(thrown(() => receiptCommitDigest(domain, { ...commit, root: "0x12" as Hex })).name).to.equal("BytesSizeMismatchError");
    expect(receiptCommitDigest(domain, commit)).to.equal(commitDigest);
    const receiptHash = h("receipt");
    const expected = keccak256(`0x${keccak256(stringToBytes(RECEIPT_SIGNATURE_DOMAIN)).slice(2)}${receiptHash.slice(2)}`);
    expect(sessionReceiptDigest(receiptHash)).to.equal(expected);
    expect(sessionReceiptDigest("0x01" as Hex)).to.equal(keccak256(`0x${keccak256(stringToBytes(RECEIPT_SIGNATURE_DOMAIN)).slice(2)}01${"00".repeat(31)}`));
    expect(sessionReceiptDigest(receiptHash)).to.equal(expected);
  });

  it("encodes PKT_ACTION_INVOKE and PKT_ACTION_RESULT with exactly canon()'s bytes (known answer and 300 random packets)", () => {
    const ticket: SignedPaymentTicket = { ticket: sampleTicket(), signature: SIGNATURE };
    const mcp = { jsonrpc: "2.0", id: 1, method: "tools/echo", params: { n: 1 } };
    const invoke: Packet = { pkt_version: "1", packet_type: "PKT_ACTION_INVOKE", issued_at: "2026-02-22T10:16:00Z", session_id: SESSION_ID, payload: { mcp, ticket, leaf_count: "0" } };
    const known =
      `{"issued_at":"2026-02-22T10:16:00Z","packet_type":"PKT_ACTION_INVOKE","payload":{"leaf_count":"0",` +
      `"mcp":{"id":1,"jsonrpc":"2.0","method":"tools/echo","params":{"n":1}},"ticket":${canon(signedPaymentTicketToJson(ticket))}},` +
      `"pkt_version":"1","session_id":"${SESSION_ID}"}`;
    expect(encodePacket(invoke)).to.equal(known);
    expect(decodePacket(known)).to.deep.equal(invoke);

    const prng = mulberry32(0xc0de);
    const strings = ["2026-02-22T10:16:00Z", "lease \"1\"", "émoji 😀", "\u2028"];
    for (let i = 0; i < 300; i++) {
      const t = randomTicket(prng);
      t.ticket.sessionId = SESSION_ID;
      const r = randomReceipt(prng);
      r.receipt.sessionId = SESSION_ID;
      const body = { jsonrpc: "2.0", id: prng.chance(0.5) ? i : `id-${i}`, method: "tools/echo", params: { text: prng.pick(strings), deep: [[{ a: i }]], z: null, b: true } };
      const lease = prng.chance(0.5) ? { lease_id: prng.pick(strings) } : {};
      const packets: Packet[] = [
        { pkt_version: "1", packet_type: "PKT_ACTION_INVOKE", issued_at: prng.pick(strings), session_id: SESSION_ID, ...lease, payload: { mcp: body, ticket: t, ...(prng.chance(0.5) ? { leaf_count: String(i) } : {}) } },
        { pkt_version: "1", packet_type: "PKT_ACTION_RESULT", issued_at: prng.pick(strings), session_id: SESSION_ID, ...lease, action_result_id: `res_${i}`, payload: { mcp: { jsonrpc: "2.0", id: i, result: { digest: randomHash(prng), n: i / 7 } }, receipt: r } },
      ];
      for (const packet of packets) {
        const text = encodePacket(packet);
        expect(text).to.equal(genericText(packet));
      }
    }
  });

  it("writes a paid call's answer around the output text it receipted (resultMcpText) and takes an MCP text the caller already wrote: canon()'s bytes", () => {
    const prng = mulberry32(0x31);
    const ids: unknown[] = [null, 0, 7, -1.5, "", "id-1", "émoji 😀 \u2028", "\"quoted\""];
    const results: Record<string, unknown>[] = [{}, { digest: h("d") }, { z: [1, { b: null, a: "x" }], a: true }, { "é": 1, e: 2, E: 3 }];
    for (let i = 0; i < 200; i++) {
      const id = prng.pick(ids);
      const result = prng.pick(results);
      const mcp = { jsonrpc: "2.0", id, result };
      expect(resultMcpText(id, canon(result))).to.equal(canon(mcp));
      const r = randomReceipt(prng);
      r.receipt.sessionId = SESSION_ID;
      const packet: Packet = { pkt_version: "1", packet_type: "PKT_ACTION_RESULT", issued_at: "2026-02-22T10:16:00Z", session_id: SESSION_ID, action_result_id: `res_${i}`, payload: { mcp: mcp as Record<string, unknown>, receipt: r } };
      expect(encodePacket(packet, resultMcpText(id, canon(result)))).to.equal(genericText(packet));
      const t = randomTicket(prng);
      t.ticket.sessionId = SESSION_ID;
      const request = { jsonrpc: "2.0", id, method: "tools/echo", params: result };
      const invoke: Packet = { pkt_version: "1", packet_type: "PKT_ACTION_INVOKE", issued_at: "2026-02-22T10:16:00Z", session_id: SESSION_ID, payload: { mcp: request, ticket: t } };
      expect(encodePacket(invoke, canon(request))).to.equal(genericText(invoke));
    }
  });

  it("leaves optional fields it does not know (policy, a future field) to the generic path, and refuses what canon() refuses", () => {
    const receipt: SignedSessionReceipt = { receipt: sampleReceipt(), signature: SIGNATURE };
    const base = { pkt_version: "1", packet_type: "PKT_ACTION_RESULT", issued_at: "2026-02-22T10:16:00Z", session_id: SESSION_ID, action_result_id: "res_1" } as const;
    const withPolicy: Packet = { ...base, payload: { mcp: { jsonrpc: "2.0", id: 1, result: {} }, receipt, policy: { policy_hash: h("p"), decision: "approved", enforced_bounds: [] } } };
    expect(encodePacket(withPolicy)).to.equal(genericText(withPolicy));
    // An optional field the fast path does not write (issue 12's signed fault statement) goes the generic path.
    const fault: SignedFaultStatement = {
      statement: { sessionId: SESSION_ID, seq: receipt.receipt.seq, offloadPacketHash: receipt.receipt.offloadPacketHash, code: "ERR_UPSTREAM_FAILURE", computeSpent: 0n },
      signature: SIGNATURE,
    };
    const withFault: Packet = { ...base, payload: { mcp: { jsonrpc: "2.0", id: 1, error: { code: -32000, message: "x" } }, receipt, fault } };
    expect(encodePacket(withFault)).to.equal(genericText(withFault));
    expect(JSON.parse(encodePacket(withFault)).payload.fault).to.deep.equal(signedFaultStatementToJson(fault));
    // What canonical JSON cannot hold is refused exactly as before.
    const nan = { ...base, payload: { mcp: { jsonrpc: "2.0", id: 1, result: { x: Number.NaN } }, receipt } } as Packet;
    expect(thrown(() => encodePacket(nan)).name).to.equal("NonFiniteNumberError");
    const lone = { ...base, issued_at: "2026\ud800" } as unknown as Packet;
    expect(thrown(() => encodePacket({ ...lone, payload: { mcp: {}, receipt } } as Packet)).name).to.equal("InvalidJsonError");
    let deep: unknown = 1;
    for (let i = 0; i < 63; i++) deep = [deep];
    expect(canon(deep)).to.be.a("string"); // deep enough for the packet (64 levels), not for canon() alone
    const tooDeep = { ...base, payload: { mcp: deep as Record<string, unknown>, receipt } } as Packet;
    expect(thrown(() => encodePacket(tooDeep)).name).to.equal("InvalidJsonError");
  });
});

/** The generic serialisation: canon() of the packet's JSON form, as before issue 15. */
function genericText(packet: Packet): string {
  const json = JSON.parse(
    JSON.stringify(packet, (key, value: unknown) => {
      if (key === "ticket" && typeof value === "object" && value !== null && "signature" in value) return signedPaymentTicketToJson(value as SignedPaymentTicket);
      if (key === "receipt" && typeof value === "object" && value !== null && "signature" in value) return signedSessionReceiptToJson(value as SignedSessionReceipt);
      if (key === "fault" && typeof value === "object" && value !== null && "signature" in value) return signedFaultStatementToJson(value as SignedFaultStatement);
      return value;
    }),
  ) as unknown;
  return canon(json);
}
