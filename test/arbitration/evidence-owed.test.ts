/**
 * Evidence owed, evidence missing (issue 27 finding 5; decision 0014, amendment): every Lane 0 evidence check,
 * classified by who owes what it checks, off-chain (deterministic keys and bytes, no devnet).
 *
 * - The challenger built the package and committed its hash when it opened the case, so evidence it owed and
 *   left out, or supplied invalid, decides the case against it: `challenger_fault`, the reason code in the
 *   attribution, never `undecidable`.
 * - What the arbitrator itself was handed or read (a package that is not the committed one, another judge
 *   runtime, a case that is not undecided, an incomplete chain context) makes it abstain: no verdict.
 * - What the respondent signed and that verifies but breaks its terms stays a proven violation.
 *
 * Each challenger row re-commits the mutated package (the context's `packageHash` is its hash): the case is
 * judged exactly as if the challenger had opened it with that package.
 */
import { expect } from "chai";
import { getAddress, zeroHash, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import { buildGigPackage } from "../../arbitration/runner/build";
import type { CaseContext } from "../../arbitration/documents/context";
import { icsFromJson, icsHash } from "../../arbitration/documents/ics";
import { packageHash, type ChallengePackage, type Evidence } from "../../arbitration/documents/package";
import { arbitrate, type ArbitrationRun } from "../../arbitration/runner/runner";
import { signReceiptCommit } from "../../channel-client/core/receipt-commit";
import { signSessionReceipt } from "../../channel-client/core/receipt";
import { signSessionKeyGrant } from "../../channel-client/core/session-key";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import { GOOD_DELIVERABLE, sampleIcsJson, SUITE } from "./fixtures/samples";
import { DISPUTE_MANAGER, DOMAIN, PAYER, PRICE, PROVIDER, SESSION_ID, sessionCase, sessionSteps, type Step } from "./session-fixtures";

const RUNTIME = `0x${"11".repeat(32)}` as const;
const SESSION_KEY = mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex: 9 });
const OTHER: Hex = `0x${"99".repeat(32)}`;

type Case = { pkg: ChallengePackage; ctx: CaseContext };
type Owed =
  | { owedBy: "challenger"; codes: string[]; check: string }
  | { owedBy: "arbitrator"; codes: string[] }
  | { owedBy: "respondent"; check: string };

/** Replaces every evidence item of `kind` (or drops it when `map` returns null). */
function mapEvidence(pkg: ChallengePackage, kind: Evidence["kind"], map: (e: Evidence) => Evidence | null): ChallengePackage {
  return { ...pkg, evidence: pkg.evidence.flatMap((e) => (e.kind === kind ? (map(e) ?? []) : [e])) };
}

/** Receipt evidence of `seq` with `mutate` applied to its content (a deep copy). */
function mapReceipt(pkg: ChallengePackage, seq: bigint, mutate: (content: Extract<Evidence, { kind: "receipt" }>["content"]) => void): ChallengePackage {
  return mapEvidence(pkg, "receipt", (e) => {
    if (e.kind !== "receipt" || e.content.receipt.receipt.seq !== seq) return e;
    const copy = structuredClone(e);
    mutate(copy.content);
    return copy;
  });
}

/** The challenger committed this package: the case's hash is the package's. */
const committed = ({ pkg, ctx }: Case): Case => ({ pkg, ctx: { ...ctx, case: { ...ctx.case, packageHash: packageHash(pkg) } } });

async function judge(c: Case): Promise<ArbitrationRun> {
  return arbitrate({ ...c, actor: "arbitrator", judgeRuntime: RUNTIME });
}

async function expectOwed(run: ArbitrationRun, owed: Owed): Promise<void> {
  const failed = run.resolution.lane0.checks.filter((c) => c.status !== "pass").map((c) => c.name);
  if (owed.owedBy === "challenger") {
    expect(run.state).to.equal("deliver");
    expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", unresolved: false });
    expect(run.resolution.aggregate.reasonCodes).to.include.members(owed.codes);
    expect(failed).to.include(owed.check);
    expect(run.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });
  } else if (owed.owedBy === "arbitrator") {
    expect(run.state).to.equal("abstain");
    expect(run.resolution.aggregate.reasonCodes).to.deep.equal(owed.codes);
    expect(run.audit.map((e) => e.phase).at(-1)).to.equal("abstain");
  } else {
    expect(run.state).to.equal("deliver");
    expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
    expect(failed).to.deep.equal([owed.check]);
  }
}

describe("arbitration: evidence owed, evidence missing — who owes each Lane 0 check (issue 27 finding 5)", function () {
  let steps: Step[];
  let base: Case;

  before(async function () {
    const built = await sessionSteps();
    steps = built.steps;
    base = sessionCase(steps, built.tree, 2n);
  });

  it("the untouched session package is decided (challenger_fault on honest receipts) with every check passing", async function () {
    const run = await judge(base);
    expect(run.state).to.equal("deliver");
    expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", reasonCodes: [] });
    expect(run.resolution.lane0.checks.every((c) => c.status === "pass")).to.equal(true);
  });

  const session: Array<[string, (c: Case) => Promise<Case> | Case, Owed]> = [
    // The challenger's package.
    ["a package naming another case", ({ pkg, ctx }) => committed({ pkg: { ...pkg, caseId: OTHER }, ctx }), { owedBy: "challenger", codes: ["CASE_MISMATCH"], check: "case_binding" }],
    ["a package naming another challenger", ({ pkg, ctx }) => committed({ pkg: { ...pkg, challenger: getAddress(PROVIDER.address) }, ctx }), { owedBy: "challenger", codes: ["CHALLENGER_MISMATCH"], check: "challenger_binding" }],
    ["a package about another session", ({ pkg, ctx }) => committed({ pkg: { ...pkg, subject: { ...pkg.subject, sessionId: OTHER } as ChallengePackage["subject"] }, ctx }), { owedBy: "challenger", codes: ["SUBJECT_MISMATCH"], check: "subject_binding" }],
    ["the channel left out", ({ pkg, ctx }) => committed({ pkg: mapEvidence(pkg, "channel", () => null), ctx }), { owedBy: "challenger", codes: ["MISSING_CHANNEL"], check: "channel_present" }],
    [
      "a channel whose terms do not derive the session id",
      ({ pkg, ctx }) => committed({ pkg: mapEvidence(pkg, "channel", (e) => { const copy = structuredClone(e); if (copy.kind === "channel") copy.content.ref.openedAt += 1n; return copy; }), ctx }),
      { owedBy: "challenger", codes: ["CHANNEL_MISMATCH"], check: "channel_binding" },
    ],
    [
      "the wrong terms preimage (another price)",
      ({ pkg, ctx }) => committed({ pkg: mapEvidence(pkg, "channel", (e) => { const copy = structuredClone(e); if (copy.kind === "channel") copy.content.pricing = { version: "1", unit: "invocation", pricePerInvocation: PRICE * 2n }; return copy; }), ctx }),
      { owedBy: "challenger", codes: ["TERMS_HASH_MISMATCH"], check: "terms_binding" },
    ],
    ["another policy hash", ({ pkg, ctx }) => committed({ pkg: { ...pkg, policyHash: OTHER }, ctx }), { owedBy: "challenger", codes: ["POLICY_HASH_MISMATCH"], check: "policy_binding" }],
    ["a closing state that was not the recorded one when the case opened", ({ pkg, ctx }) => committed({ pkg, ctx: { ...ctx, session: { ...ctx.session!, closingMatchedAtOpen: false } } }), { owedBy: "challenger", codes: ["ROOT_NOT_COMMITTED"], check: "committed_root" }],
    ["the challenged receipt left out", ({ pkg, ctx }) => committed({ pkg: mapEvidence(pkg, "receipt", (e) => (e.kind === "receipt" && e.content.receipt.receipt.seq === 2n ? null : e)), ctx }), { owedBy: "challenger", codes: ["MISSING_RECEIPT"], check: "challenged_receipt" }],
    [
      "a receipt whose provider signature does not verify (signed by the payer)",
      async ({ pkg, ctx }) => {
        const forged = await signSessionReceipt({ account: PAYER, receipt: steps[0]!.receipt.receipt });
        return committed({ pkg: mapReceipt(pkg, 1n, (c) => { c.receipt = forged; }), ctx });
      },
      { owedBy: "challenger", codes: ["RECEIPT_SIGNATURE_INVALID"], check: "receipt[seq 1].receipt_signature" },
    ],
    [
      "a ticket not signed by the payer (signed by the provider)",
      async ({ pkg, ctx }) => {
        const forged = await signPaymentTicket({ account: PROVIDER, domain: DOMAIN, ticket: steps[1]!.ticket.ticket });
        return committed({ pkg: mapReceipt(pkg, 2n, (c) => { c.ticket = forged; }), ctx });
      },
      { owedBy: "challenger", codes: ["TICKET_SIGNATURE_INVALID"], check: "receipt[seq 2].ticket_signature" },
    ],
    [
      "a ticket signed by a session key whose grant is left out",
      async ({ pkg, ctx }) => {
        const byKey = await signPaymentTicket({ account: SESSION_KEY, domain: DOMAIN, ticket: steps[1]!.ticket.ticket });
        return committed({ pkg: mapReceipt(pkg, 2n, (c) => { c.ticket = byKey; }), ctx });
      },
      { owedBy: "challenger", codes: ["TICKET_SIGNATURE_INVALID"], check: "receipt[seq 2].ticket_signature" },
    ],
    [
      "a session-key grant the payer did not sign",
      async ({ pkg, ctx }) => {
        const byKey = await signPaymentTicket({ account: SESSION_KEY, domain: DOMAIN, ticket: steps[1]!.ticket.ticket });
        const grant = await signSessionKeyGrant({ account: PROVIDER, domain: DOMAIN, sessionId: SESSION_ID, key: SESSION_KEY.address, expiry: 1n << 40n, spendCap: PRICE * 100n, epoch: 0n, methods: ["*"] });
        return committed({ pkg: mapReceipt(pkg, 2n, (c) => { c.ticket = byKey; c.sessionKey = grant; }), ctx });
      },
      { owedBy: "challenger", codes: ["TICKET_SIGNATURE_INVALID"], check: "receipt[seq 2].ticket_signature" },
    ],
    ["a proof that does not verify against the committed root", ({ pkg, ctx }) => committed({ pkg: mapReceipt(pkg, 1n, (c) => { c.merkleProof = [OTHER]; }), ctx }), { owedBy: "challenger", codes: ["MERKLE_PROOF_INVALID"], check: "receipt[seq 1].merkle_proof" }],
    ["a challenged receipt that is not the leaf the case proved", ({ pkg, ctx }) => committed({ pkg, ctx: { ...ctx, case: { ...ctx.case, leaf: OTHER } } }), { owedBy: "challenger", codes: ["LEAF_MISMATCH"], check: "challenged_leaf" }],
    [
      "two receipts with one seq",
      ({ pkg, ctx }) => committed({ pkg: { ...pkg, evidence: [...pkg.evidence, pkg.evidence.find((e) => e.kind === "receipt" && e.content.receipt.receipt.seq === 2n)!] }, ctx }),
      { owedBy: "challenger", codes: ["DUPLICATE_RECEIPT"], check: "receipt_seqs" },
    ],
    [
      "a receipt commit the provider did not sign",
      async ({ pkg, ctx }) => {
        const commit = await signReceiptCommit(PAYER, DOMAIN, { sessionId: SESSION_ID, leafCount: 4n, root: OTHER });
        return committed({ pkg: mapEvidence(pkg, "channel", (e) => { const copy = structuredClone(e); if (copy.kind === "channel") copy.content.commit = commit; return copy; }), ctx });
      },
      { owedBy: "challenger", codes: ["COMMIT_SIGNATURE_INVALID"], check: "channel.commit_signature" },
    ],
    // The arbitrator's own inputs.
    ["a package that is not the one the case committed", ({ pkg, ctx }) => ({ pkg: { ...pkg, policyHash: OTHER }, ctx }), { owedBy: "arbitrator", codes: ["PACKAGE_HASH_MISMATCH"] }],
    ["a judge runtime the case does not require", ({ pkg, ctx }) => ({ pkg, ctx: { ...ctx, judgeRuntimeHash: OTHER } }), { owedBy: "arbitrator", codes: ["JUDGE_RUNTIME_MISMATCH"] }],
    ["a case that is no longer undecided", ({ pkg, ctx }) => ({ pkg, ctx: { ...ctx, case: { ...ctx.case, status: "decided" } } }), { owedBy: "arbitrator", codes: ["CASE_NOT_OPEN"] }],
    ["a context read without the session", ({ pkg, ctx }) => ({ pkg, ctx: { ...ctx, session: null } }), { owedBy: "arbitrator", codes: ["CONTEXT_INCOMPLETE"] }],
    // The respondent's signed conduct.
    [
      "a receipt the provider signed under another policy",
      async ({ pkg, ctx }) => {
        const built = await sessionSteps((r) => (r.seq === 2n ? { ...r, policyHash: OTHER } : r));
        return sessionCase(built.steps, built.tree, 2n);
      },
      { owedBy: "respondent", check: "receipt[seq 2].policy_hash" },
    ],
  ];

  for (const [what, make, owed] of session) {
    const outcome = owed.owedBy === "challenger" ? `challenger_fault (${owed.codes.join(", ")})` : owed.owedBy === "arbitrator" ? `abstain (${owed.codes.join(", ")})` : "provider_fault";
    it(`session: ${what} → owed by the ${owed.owedBy}: ${outcome}`, async function () {
      await expectOwed(await judge(await make(base)), owed);
    });
  }

  it("an arbitrator's own fault wins over the challenger's: a mismatched package with missing evidence abstains, never decides", async function () {
    const run = await judge({ pkg: mapEvidence(base.pkg, "channel", () => null), ctx: base.ctx });
    await expectOwed(run, { owedBy: "arbitrator", codes: ["PACKAGE_HASH_MISMATCH"] });
  });

  describe("gigs: the client owes the ICS, the bound suite and the deliverable it disputes", function () {
    const ics = icsFromJson(sampleIcsJson());
    const gigEscrow = getAddress("0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0");
    const client = getAddress(PAYER.address);

    function gigCase(pkgOf: (suite: Bundle | null) => ChallengePackage): Case {
      const pkg = pkgOf(SUITE);
      const ctx: CaseContext = {
        case: {
          chainId: 31337n,
          disputeManager: DISPUTE_MANAGER,
          caseId: pkg.caseId,
          kind: "gig",
          status: "open",
          subjectId: `0x${"07".padStart(64, "0")}`,
          challenger: client,
          respondent: getAddress(PROVIDER.address),
          asset: ics.asset,
          value: ics.maxPrice,
          lane: 1,
          packageHash: packageHash(pkg),
          leaf: zeroHash,
        },
        gig: {
          gigEscrow,
          gigId: 7n,
          client,
          provider: getAddress(PROVIDER.address),
          asset: ics.asset,
          amount: ics.maxPrice,
          icsHash: icsHash(ics),
          deliverableHash: bundleHash(GOOD_DELIVERABLE),
          receiptRoot: zeroHash,
          fundedAt: 1_700_000_000n,
          fundedInBlock: 10n,
        },
        session: null,
        judgeRuntimeHash: zeroHash,
        respondentIdentity: null,
        slashCap: null,
      };
      return { pkg, ctx };
    }
    const gigPackage = (suite: Bundle | null, deliverable: Bundle = GOOD_DELIVERABLE) =>
      buildGigPackage({ caseId: `0x${"c1".repeat(32)}`, chainId: 31337n, disputeManager: DISPUTE_MANAGER, challenger: client, lane: 1, gigEscrow, gigId: 7n, ics, suite, deliverable });

    const gig: Array<[string, () => Case, Owed]> = [
      // Finding 5's attack: the client leaves the bound suite out of its own package against a passing delivery.
      ["the bound test suite left out", () => committed({ ...gigCase(gigPackage), pkg: gigPackage(null) }), { owedBy: "challenger", codes: ["MISSING_TEST_SUITE"], check: "test_suite_binding" }],
      [
        "a test suite that is not the one the ICS anchors",
        () => committed({ ...gigCase(gigPackage), pkg: gigPackage({ files: { ...SUITE.files, "extra.js": "// not anchored\n" } }) }),
        { owedBy: "challenger", codes: ["TEST_SUITE_HASH_MISMATCH"], check: "test_suite_binding" },
      ],
      ["the ICS left out", () => { const c = gigCase(gigPackage); return committed({ ...c, pkg: mapEvidence(c.pkg, "ics", () => null) }); }, { owedBy: "challenger", codes: ["MISSING_ICS"], check: "ics_binding" }],
      ["the deliverable left out", () => { const c = gigCase(gigPackage); return committed({ ...c, pkg: mapEvidence(c.pkg, "deliverable", () => null) }); }, { owedBy: "challenger", codes: ["MISSING_DELIVERABLE"], check: "deliverable_binding" }],
      [
        "a deliverable that is not the one the provider delivered",
        () => committed({ ...gigCase(gigPackage), pkg: gigPackage(SUITE, { files: { "math.js": "exports.add = () => 0;\n" } }) }),
        { owedBy: "challenger", codes: ["DELIVERABLE_HASH_MISMATCH"], check: "deliverable_binding" },
      ],
      ["another rubric version", () => { const c = gigCase(gigPackage); return committed({ ...c, pkg: { ...c.pkg, rubricVersion: c.pkg.rubricVersion + 1 } }); }, { owedBy: "challenger", codes: ["RUBRIC_VERSION_MISMATCH"], check: "rubric_version" }],
      ["a context read without the gig", () => { const c = gigCase(gigPackage); return { ...c, ctx: { ...c.ctx, gig: null } }; }, { owedBy: "arbitrator", codes: ["CONTEXT_INCOMPLETE"] }],
    ];
    for (const [what, make, owed] of gig) {
      const outcome = owed.owedBy === "respondent" ? "provider_fault" : `${owed.owedBy === "challenger" ? "challenger_fault" : "abstain"} (${owed.codes.join(", ")})`;
      it(`gig: ${what} → owed by the ${owed.owedBy}: ${outcome}`, async function () {
        const run = await judge(make());
        await expectOwed(run, owed);
        expect(run.resolution.objectiveChecks, "Lane 1 never runs on evidence that is not the bound one").to.deep.equal([]);
      });
    }
  });
});
