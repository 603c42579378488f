/**
 * Issue 32, second pass: the boundary of milestone streaming over the socket and on disk. The four stream messages
 * round-trip through the node protocol's canonical encoding and a peer's malformed one is a typed error (never a
 * crash); the payer's stream journal keeps entries across reopening, skips a torn last line and names a bad one.
 */
import { expect } from "chai";
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { keccak256, stringToBytes, zeroHash, type Hex } from "viem";

import { canon } from "../../channel-client/core/canonical";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { sampleCommitOf, signProgressProof, type ProgressProof } from "../../channel-client/core/progress-proof";
import { signReceiptCommit } from "../../channel-client/core/receipt-commit";
import { signSessionReceipt } from "../../channel-client/core/receipt";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import { decodeMessage, encodeMessage, type ControlMessage } from "../../channel-client/node/protocol";
import { StreamJournal } from "../../channel-client/node/stream-journal";
import { SUITE } from "../../scripts/examples/code-stream";
import { hardhatAccount, ROLE } from "../helpers/fixtures";
import { thrown } from "../helpers/assert";

const h = (label: string): Hex => keccak256(stringToBytes(label));
const SESSION = h("stream protocol session");
const provider = hardhatAccount(ROLE.provider);
const payer = hardhatAccount(ROLE.payer);
const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
const PROOF: ProgressProof = {
  sessionId: SESSION,
  tranche: 1n,
  repoStateHash: h("repo"),
  suiteHash: h("suite"),
  tests: [
    { name: "a", outcome: "pass" },
    { name: "b", outcome: "fail" },
  ],
  coverageDeltaBps: 10,
  lint: "clean",
  artifactHash: zeroHash,
  prevProofHash: zeroHash,
};
const SECRET = h("secret");
const REQUEST = { sessionId: SESSION, tranche: 1n, sampleCommit: sampleCommitOf(SECRET) };

const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe("milestone streaming's boundary: stream messages and the stream journal (issue 32, second pass)", () => {
  it("stream.tranche, stream.result, stream.sample and stream.repository round-trip byte for byte", async () => {
    const ticket = await signPaymentTicket({ account: payer, domain, ticket: { sessionId: SESSION, provider: provider.address, termsHash: h("terms"), seq: 1n, cumulativeAmount: 10n, receiptRoot: zeroHash } });
    const proof = await signProgressProof({ account: provider, proof: PROOF });
    const receipt = await signSessionReceipt({
      account: provider,
      receipt: { sessionId: SESSION, seq: 1n, offloadPacketHash: h("req"), outputHash: h("out"), policyHash: zeroHash, modelSnapshotId: "m", metering: { units: 0n, amount: 10n }, prevReceiptHash: zeroHash },
    });
    const commit = await signReceiptCommit(provider, domain, { sessionId: SESSION, leafCount: 1n, root: h("root") });
    const messages: ControlMessage[] = [
      { type: "stream.tranche", ticket, request: REQUEST, leafCount: 0n },
      { type: "stream.result", receipt, proof, commit },
      { type: "stream.sample", tranche: 1n, secret: SECRET, indices: [1, 0] },
      { type: "stream.repository", tranche: 1n, repository: SUITE },
    ];
    for (const message of messages) {
      const encoded = encodeMessage(message);
      const decoded = decodeMessage(encoded);
      expect(decoded, message.type).to.deep.equal(message);
      expect(Buffer.from(encodeMessage(decoded)).toString()).to.equal(Buffer.from(encoded).toString());
    }
  });

  it("a peer's malformed stream message is a typed error naming the field", () => {
    const cases: [string, unknown, RegExp][] = [
      ["no indices", { type: "stream.sample", tranche: "1", secret: SECRET, indices: [] }, /message\.indices/],
      ["an index past the proof limit", { type: "stream.sample", tranche: "1", secret: SECRET, indices: [1024] }, /message\.indices/],
      ["a fractional index", { type: "stream.sample", tranche: "1", secret: SECRET, indices: [0.5] }, /message\.indices/],
      ["a short secret", { type: "stream.sample", tranche: "1", secret: "0x12", indices: [0] }, /message\.secret/],
      ["a tranche as a number", { type: "stream.sample", tranche: 1, secret: SECRET, indices: [0] }, /message\.tranche/],
      ["a request of another schema", { type: "stream.tranche", ticket: {}, request: { schema: "x" } }, /message\.(ticket|request)/],
      ["an unknown field", { type: "stream.repository", tranche: "1", repository: SUITE, extra: 1 }, /extra|message/],
      ["an empty repository", { type: "stream.repository", tranche: "1", repository: { files: {} } }, /message\.repository/],
    ];
    for (const [what, value, pattern] of cases) {
      const error = thrown(() => decodeMessage(bytes(value)));
      expect(error, what).to.be.instanceOf(Error);
      expect((error as Error).message, what).to.match(pattern);
    }
  });

  it("the stream journal: entries survive reopening in order; a torn last line is skipped; a bad line in the middle is named", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-stream-journal-"));
    try {
      const journal = StreamJournal.open(dir, SESSION);
      expect(journal.exists).to.equal(false);
      expect(journal.entries()).to.deep.equal([]);
      const signed = await signProgressProof({ account: provider, proof: PROOF });
      await journal.append({ kind: "request", tranche: 1n, secret: SECRET, request: REQUEST });
      await journal.append({ kind: "proof", tranche: 1n, signed });
      await journal.append({ kind: "checked", tranche: 1n });
      await journal.append({ kind: "pause", tranche: 1n, reason: "false_claim", detail: "claim #1", sample: 1, indices: [1, 0], repository: SUITE });
      const reopened = StreamJournal.open(dir, SESSION);
      const expected = [
        { kind: "request", tranche: 1n, secret: SECRET, request: REQUEST },
        { kind: "proof", tranche: 1n, signed },
        { kind: "checked", tranche: 1n },
        { kind: "pause", tranche: 1n, reason: "false_claim", detail: "claim #1", sample: 1, indices: [1, 0], repository: SUITE },
      ];
      expect(canon(JSON.parse(JSON.stringify(reopened.entries(), (_k, v) => (typeof v === "bigint" ? v.toString() : v))))).to.equal(
        canon(JSON.parse(JSON.stringify(expected, (_k, v) => (typeof v === "bigint" ? v.toString() : v)))),
      );
      appendFileSync(reopened.file, '{"kind":"checked","tran'); // a crash mid-write
      expect(reopened.entries()).to.have.length(4);
      // The next writer cuts the torn line off before appending (it is never glued to the next entry).
      const next = StreamJournal.open(dir, SESSION);
      await next.append({ kind: "checked", tranche: 2n });
      expect(next.entries().map((e) => `${e.kind}:${e.tranche}`)).to.deep.equal(["request:1", "proof:1", "checked:1", "pause:1", "checked:2"]);
      appendFileSync(next.file, 'not json\n{"kind":"checked","tranche":"3"}\n');
      expect(thrown(() => next.entries()).message).to.match(/one JSON entry per line/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
