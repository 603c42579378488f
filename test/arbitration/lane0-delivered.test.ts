/**
 * Lane 0 on delivered receipts and fault statements (issue 12 item 5), off-chain: a receipt proven into the
 * committed root against the receipt the provider delivered for the same seq (RECEIPT_REQUEST_MISMATCH,
 * RECEIPT_OUTPUT_MISMATCH), the evidence checks of delivered receipts and of fault statements, and the session
 * no-fault path in the runner (violations first; NoFault only when the receipt metered more than the compute
 * declared spent). The chain-backed scenarios are in test/adversarial/session-equivocation.test.ts.
 */
import { expect } from "chai";
import { keccak256 } from "viem";

import { makeEvidence, packageToJson, parsePackage, type ChallengePackage, type DeliveredReceiptEvidence } from "../../arbitration/documents/package";
import { resolutionHash } from "../../arbitration/lanes/resolution";
import { arbitrate, type ArbitrationRun } from "../../arbitration/runner/runner";
import { canon, canonBytes } from "../../channel-client/core/canonical";
import { signFaultStatement, type FaultStatement, type SignedFaultStatement } from "../../channel-client/core/fault-statement";
import { signSessionReceipt, type SessionReceipt } from "../../channel-client/core/receipt";
import { PAYER, PRICE, PROVIDER, SESSION_ID, outputOf, requestOf, sessionCase, sessionSteps, type Step } from "./session-fixtures";

const RUNTIME = `0x${"11".repeat(32)}` as const;
const FAILED = canonBytes({ error: { code: -32010, message: "The worker exited (code 7)." } });

/** The receipts the provider delivered (honest), and a variant the root commits for seq 2. */
async function honestAndCommitted(tamper: (r: SessionReceipt) => SessionReceipt) {
  const delivered = await sessionSteps();
  const committed = await sessionSteps((r) => (r.seq === 2n ? tamper(r) : r));
  return { delivered: delivered.steps, committed };
}

const deliveredOf = (steps: Step[], seqs: bigint[], bytes = false): DeliveredReceiptEvidence[] =>
  seqs.map((seq) => ({ receipt: steps[Number(seq) - 1]!.receipt, ...(bytes ? { request: requestOf(seq), output: outputOf(seq) } : {}) }));

const withEvidence = (items: ChallengePackage["evidence"]) => (pkg: ChallengePackage): ChallengePackage => ({ ...pkg, evidence: [...pkg.evidence, ...items] });

async function judge(pkg: ChallengePackage, ctx: Parameters<typeof arbitrate>[0]["ctx"]): Promise<ArbitrationRun> {
  // Every arbitrator receives the package as bytes.
  const received = parsePackage(canon(packageToJson(pkg)));
  return arbitrate({ pkg: received, ctx, actor: "arbitrator", judgeRuntime: RUNTIME });
}

const failedChecks = (run: ArbitrationRun) => run.resolution.lane0.checks.filter((c) => c.status !== "pass").map((c) => c.name);
const fault = (statement: Partial<FaultStatement> & { offloadPacketHash: FaultStatement["offloadPacketHash"] }, account = PROVIDER): Promise<SignedFaultStatement> =>
  signFaultStatement({ account, statement: { sessionId: SESSION_ID, seq: 2n, code: "ERR_UPSTREAM_FAILURE", computeSpent: 0n, ...statement } });

describe("arbitration: Lane 0 on delivered receipts and fault statements (issue 12 item 5)", function () {
  it("a package without delivered receipts or fault statements is judged exactly as before (no new checks; known resolution hash)", async function () {
    const { steps, tree } = await sessionSteps((r) => (r.seq === 2n ? { ...r, policyHash: `0x${"cd".repeat(32)}` } : r));
    const { pkg, ctx } = sessionCase(steps, tree, 2n);
    const run = await judge(pkg, ctx);
    expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    expect(run.resolution.lane0.checks.map((c) => c.name).filter((n) => /delivered|fault|\.request$|\.output$/.test(n))).to.deep.equal([]);
    // Computed with the runner before this change (main at 3d39d3c) for the same package and context.
    expect(resolutionHash(run.resolution)).to.equal(KAT_RESOLUTION_HASH);
  });

  it("delivered receipts equal to the proven ones: every comparison passes and the case is the challenger's fault", async function () {
    const { steps, tree } = await sessionSteps();
    const { pkg, ctx } = sessionCase(steps, tree, 2n, withEvidence(deliveredOf(steps, [1n, 2n], true).map((d) => makeEvidence("delivered_receipt", d))));
    const run = await judge(pkg, ctx);
    expect(run.state).to.equal("deliver");
    expect(run.resolution.aggregate.finalVerdict).to.equal("challenger_fault");
    expect(failedChecks(run)).to.deep.equal([]);
    const names = run.resolution.lane0.checks.map((c) => c.name);
    for (const n of ["delivered[seq 1].signature", "delivered[seq 1].binding", "delivered[seq 2].request_bytes", "delivered[seq 2].output_bytes", "receipt[seq 1].request", "receipt[seq 1].output", "receipt[seq 2].request", "receipt[seq 2].output"]) {
      expect(names).to.include(n);
    }
  });

  for (const [what, code, tamper] of [
    ["output", "RECEIPT_OUTPUT_MISMATCH", (r: SessionReceipt) => ({ ...r, outputHash: keccak256(canonBytes({ other: "output" })) })],
    ["request", "RECEIPT_REQUEST_MISMATCH", (r: SessionReceipt) => ({ ...r, offloadPacketHash: keccak256(canonBytes({ other: "request" })) })],
  ] as const) {
    it(`a committed receipt whose ${what} hash is not the delivered one's → ${code}, the receipt's amount refunded, no slash under v1 terms`, async function () {
      const { delivered, committed } = await honestAndCommitted(tamper);
      const { pkg, ctx } = sessionCase(committed.steps, committed.tree, 2n, withEvidence(deliveredOf(delivered, [1n, 2n], true).map((d) => makeEvidence("delivered_receipt", d))));
      const run = await judge(pkg, ctx);
      expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
      expect(failedChecks(run)).to.deep.equal([`receipt[seq 2].${what}`]);
      expect(run.message).to.deep.include({ verdict: 1, refund: PRICE, slash: 0n });
      expect(run.resolution.lane0.checks.find((c) => c.name === `receipt[seq 2].${what}`)!.detail).to.contain("the receipt the provider delivered for seq 2");
    });
  }

  it("both hashes differ: two violations of one receipt refund its amount once", async function () {
    const { delivered, committed } = await honestAndCommitted((r) => ({ ...r, offloadPacketHash: keccak256(canonBytes({ a: 1 })), outputHash: keccak256(canonBytes({ b: 2 })) }));
    const { pkg, ctx } = sessionCase(committed.steps, committed.tree, 2n, withEvidence(deliveredOf(delivered, [2n]).map((d) => makeEvidence("delivered_receipt", d))));
    const run = await judge(pkg, ctx);
    expect(failedChecks(run)).to.deep.equal(["receipt[seq 2].request", "receipt[seq 2].output"]);
    expect(run.message).to.deep.include({ verdict: 1, refund: PRICE, slash: 0n });
  });

  describe("delivered-receipt evidence that does not verify is the challenger's fault (it supplied it)", function () {
    const cases: Array<[string, string, string, (steps: Step[]) => Promise<DeliveredReceiptEvidence[]>]> = [
      ["signed by the payer, not the provider", "DELIVERED_RECEIPT_SIGNATURE_INVALID", "delivered[seq 2].signature", async (steps) => [{ receipt: await signSessionReceipt({ account: PAYER, receipt: steps[1]!.receipt.receipt }) }]],
      ["for another session", "DELIVERED_RECEIPT_BINDING_MISMATCH", "delivered[seq 2].binding", async (steps) => [{ receipt: await signSessionReceipt({ account: PROVIDER, receipt: { ...steps[1]!.receipt.receipt, sessionId: `0x${"99".repeat(32)}` } }) }]],
      ["with output bytes that are not the ones its hash binds", "DELIVERED_BYTES_MISMATCH", "delivered[seq 2].output_bytes", async (steps) => [{ receipt: steps[1]!.receipt, output: outputOf(3n) }]],
      ["with request bytes that are not the ones its hash binds", "DELIVERED_BYTES_MISMATCH", "delivered[seq 2].request_bytes", async (steps) => [{ receipt: steps[1]!.receipt, request: requestOf(3n) }]],
      [
        "given twice for one seq",
        "DELIVERED_RECEIPT_BINDING_MISMATCH",
        "delivered[seq 2].binding",
        async (steps) => [{ receipt: steps[1]!.receipt }, { receipt: await signSessionReceipt({ account: PROVIDER, receipt: { ...steps[1]!.receipt.receipt, outputHash: keccak256(canonBytes({ x: 1 })) } }) }],
      ],
    ];
    for (const [what, reason, check, make] of cases) {
      it(what, async function () {
        const { steps, tree } = await sessionSteps();
        const items = (await make(steps)).map((d) => makeEvidence("delivered_receipt", d));
        const { pkg, ctx } = sessionCase(steps, tree, 2n, withEvidence(items));
        const run = await judge(pkg, ctx);
        expect(run.state).to.equal("deliver");
        expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", reasonCodes: [reason] });
        expect(failedChecks(run)).to.include(check);
        expect(run.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });
      });
    }
  });

  describe("the session no-fault path", function () {
    /** Receipt 2 is a failed call (it binds `{ error }`) charging `amount`. */
    const failedSession = (amount: bigint) => sessionSteps((r) => (r.seq === 2n ? { ...r, outputHash: keccak256(FAILED), metering: { units: 1n, amount } } : r));

    it("a fault statement declaring less compute than the receipt metered → no_fault, the difference refunded, no slash", async function () {
      const { steps, tree } = await failedSession(PRICE);
      const statement = await fault({ offloadPacketHash: steps[1]!.receipt.receipt.offloadPacketHash, computeSpent: PRICE / 4n });
      const { pkg, ctx } = sessionCase(steps, tree, 2n, withEvidence([makeEvidence("fault", statement)]));
      const run = await judge(pkg, ctx);
      expect(run.resolution.aggregate.finalVerdict).to.equal("no_fault");
      expect(run.message).to.deep.include({ verdict: 3, refund: PRICE - PRICE / 4n, slash: 0n });
      expect(failedChecks(run)).to.deep.equal([]);
    });

    it("a failed call charged 0 (decision 0022) that its ticket prepaid and the close pays → FAILED_CALL_PAID, what the ticket paid refunded (issue 27 finding 6)", async function () {
      const { steps, tree } = await failedSession(0n);
      const statement = await fault({ offloadPacketHash: steps[1]!.receipt.receipt.offloadPacketHash, computeSpent: 0n });
      const { pkg, ctx } = sessionCase(steps, tree, 2n, withEvidence([makeEvidence("fault", statement)]));
      const run = await judge(pkg, ctx);
      expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
      expect(failedChecks(run)).to.deep.equal(["receipt[seq 2].failed_call_paid"]);
      expect(run.message).to.deep.include({ verdict: 1, refund: PRICE, slash: 0n }); // ticket 2 − ticket 1
    });

    it("an honest failed call charged 0 that no ticket paid for (ticket 2 added nothing) → the challenger's fault", async function () {
      const { steps, tree } = await sessionSteps(
        (r) => (r.seq === 2n ? { ...r, outputHash: keccak256(FAILED), metering: { units: 0n, amount: 0n } } : r),
        (seq) => PRICE * (seq >= 2n ? seq - 1n : seq),
      );
      const statement = await fault({ offloadPacketHash: steps[1]!.receipt.receipt.offloadPacketHash, computeSpent: 0n });
      const { pkg, ctx } = sessionCase(steps, tree, 2n, withEvidence([makeEvidence("fault", statement)]), PRICE * 3n);
      const run = await judge(pkg, ctx);
      expect(run.resolution.aggregate.finalVerdict).to.equal("challenger_fault");
      expect(run.resolution.lane0.checks.find((c) => c.name === "receipt[seq 2].failed_call_paid")!.status).to.equal("pass");
      expect(run.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });
    });

    it("a failed call charged no more than the compute declared → the challenger's fault", async function () {
      for (const [amount, spent] of [[PRICE, PRICE], [PRICE / 2n, PRICE]] as const) {
        const { steps, tree } = await failedSession(amount);
        const statement = await fault({ offloadPacketHash: steps[1]!.receipt.receipt.offloadPacketHash, computeSpent: spent });
        const { pkg, ctx } = sessionCase(steps, tree, 2n, withEvidence([makeEvidence("fault", statement)]));
        const run = await judge(pkg, ctx);
        expect(run.resolution.aggregate.finalVerdict, `${amount} metered, ${spent} spent`).to.equal("challenger_fault");
        expect(run.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });
      }
    });

    it("violations take precedence: an over-metered failed call with a fault statement is the provider's fault", async function () {
      const { steps, tree } = await failedSession(PRICE * 3n);
      const statement = await fault({ offloadPacketHash: steps[1]!.receipt.receipt.offloadPacketHash });
      const { pkg, ctx } = sessionCase(steps, tree, 2n, withEvidence([makeEvidence("fault", statement)]));
      const run = await judge(pkg, ctx);
      expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
      expect(failedChecks(run)).to.deep.equal(["receipt[seq 2].metering"]);
      expect(run.message).to.deep.include({ verdict: 1, refund: PRICE * 2n });
    });

    it("a request-equivocated step whose fault statement names the delivered request: the statement verifies, the mismatch decides", async function () {
      const { delivered, committed } = await honestAndCommitted((r) => ({ ...r, offloadPacketHash: keccak256(canonBytes({ other: "request" })) }));
      const statement = await fault({ offloadPacketHash: delivered[1]!.receipt.receipt.offloadPacketHash, computeSpent: 0n });
      const items = [makeEvidence("delivered_receipt", { receipt: delivered[1]!.receipt }), makeEvidence("fault", statement)];
      const { pkg, ctx } = sessionCase(committed.steps, committed.tree, 2n, withEvidence(items));
      const run = await judge(pkg, ctx);
      expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
      expect(failedChecks(run)).to.deep.equal(["receipt[seq 2].request"]);
    });

    const refusals: Array<[string, string, string, (steps: Step[]) => Promise<SignedFaultStatement[]>]> = [
      ["signed by the payer", "FAULT_STATEMENT_INVALID", "fault.signature", async (s) => [await fault({ offloadPacketHash: s[1]!.receipt.receipt.offloadPacketHash }, PAYER)]],
      ["for another seq", "FAULT_STATEMENT_MISMATCH", "fault.binding", async (s) => [await fault({ offloadPacketHash: s[1]!.receipt.receipt.offloadPacketHash, seq: 3n })]],
      ["for another session", "FAULT_STATEMENT_MISMATCH", "fault.binding", async (s) => [await fault({ offloadPacketHash: s[1]!.receipt.receipt.offloadPacketHash, sessionId: `0x${"99".repeat(32)}` })]],
      ["for another request", "FAULT_STATEMENT_MISMATCH", "fault.binding", async () => [await fault({ offloadPacketHash: keccak256(requestOf(3n)) })]],
      [
        "given twice",
        "FAULT_STATEMENT_INVALID",
        "fault.count",
        async (s) => [await fault({ offloadPacketHash: s[1]!.receipt.receipt.offloadPacketHash }), await fault({ offloadPacketHash: s[1]!.receipt.receipt.offloadPacketHash, computeSpent: 1n })],
      ],
    ];
    for (const [what, reason, check, make] of refusals) {
      it(`a fault statement ${what} → the challenger's fault (${reason}: it supplied the statement)`, async function () {
        const { steps, tree } = await failedSession(PRICE);
        const items = (await make(steps)).map((f) => makeEvidence("fault", f));
        const { pkg, ctx } = sessionCase(steps, tree, 2n, withEvidence(items));
        const run = await judge(pkg, ctx);
        expect(run.state).to.equal("deliver");
        expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", reasonCodes: [reason] });
        expect(failedChecks(run)).to.include(check);
        expect(run.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });
      });
    }
  });

  it("delivered-receipt and fault evidence round-trip through the package's JSON form and schema, and refuse malformed content", async function () {
    const { steps, tree } = await sessionSteps();
    const statement = await fault({ offloadPacketHash: steps[1]!.receipt.receipt.offloadPacketHash, code: "ERR_UPSTREAM_POLICY_VIOLATION", computeSpent: 7n });
    const items = [...deliveredOf(steps, [2n], true).map((d) => makeEvidence("delivered_receipt", d)), makeEvidence("fault", statement)];
    const { pkg } = sessionCase(steps, tree, 2n, withEvidence(items));
    const json = packageToJson(pkg);
    expect(packageToJson(parsePackage(canon(json)))).to.deep.equal(json);
    const delivered = json.evidence.find((e) => e.kind === "delivered_receipt")!;
    expect(delivered.content).to.have.keys(["receipt", "request", "output"]);
    const bad = (mutate: (j: Record<string, unknown>) => void) => {
      const copy = structuredClone(json) as unknown as { evidence: Array<{ kind: string; content: Record<string, unknown> }> };
      mutate(copy as unknown as Record<string, unknown>);
      return () => parsePackage(canon(copy));
    };
    expect(bad((j) => ((j as unknown as { evidence: Array<{ kind: string; content: Record<string, unknown> }> }).evidence.find((e) => e.kind === "delivered_receipt")!.content.output = "0xabc"))).to.throw(/output/);
    expect(bad((j) => ((j as unknown as { evidence: Array<{ kind: string; content: Record<string, unknown> }> }).evidence.find((e) => e.kind === "delivered_receipt")!.content.extra = 1))).to.throw();
    expect(bad((j) => (((j as unknown as { evidence: Array<{ kind: string; content: { statement: Record<string, unknown> } }> }).evidence.find((e) => e.kind === "fault")!.content.statement.code = "ERR_PROVIDER_BUSY")))).to.throw(/code/);
    // Content changed under the same artifact id is refused.
    expect(bad((j) => (((j as unknown as { evidence: Array<{ kind: string; content: { statement: Record<string, unknown> } }> }).evidence.find((e) => e.kind === "fault")!.content.statement.computeSpent = "8")))).to.throw(/artifact/i);
  });
});

/** See the first test: the resolution of the base package as the runner produced it before issue 12 item 5. */
const KAT_RESOLUTION_HASH = "0x41a819515a83d34519e8c176d7af222f218a3aabc37d4c8b2ee58bb1324f2cab";
