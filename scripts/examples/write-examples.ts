/**
 * Writes the example documents the README's hand-run sections use and the JSON Schema test validates:
 *
 *   examples/gig/ics.json, suite/, delivered/ (fails 3 of 12 tests), delivered-passing/   — Appendix A.4
 *   examples/documents/terms.json, packet-invoke.json, packet-result.json, challenge-package.json,
 *   upip.json, resolution.json                                                              — one of each
 *   examples/documents/packet-result-failed.json (a failed call with the provider's fault statement) and
 *   session/challenge-package.json (a session case with the receipt as delivered and the fault statement)
 *
 * Deterministic (fixed keys, addresses, clock): re-running it changes nothing unless the formats change.
 *   npx ts-node --transpile-only scripts/examples/write-examples.ts
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { keccak256, stringToBytes, zeroHash, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";

import { buildGigPackage, buildSessionPackage } from "../../arbitration/runner/build";
import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { signFaultStatement } from "../../channel-client/core/fault-statement";
import { receiptLeaf } from "../../channel-client/core/leaf";
import type { Bundle } from "../../arbitration/documents/bundle";
import { bundleHash } from "../../arbitration/documents/bundle";
import { icsHash, icsToJson } from "../../arbitration/documents/ics";
import { packageHash, packageToJson } from "../../arbitration/documents/package";
import { resolutionToJson } from "../../arbitration/lanes/resolution";
import { arbitrate, judgeRuntimeHash } from "../../arbitration/runner/runner";
import { DEFAULT_INPUTS } from "../../arbitration/lanes/pinned";
import { vetGig } from "../../channel-client/cli/vet";
import { canon, canonBytes } from "../../channel-client/core/canonical";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { encodePacket } from "../../channel-client/core/packets";
import { signSessionReceipt } from "../../channel-client/core/receipt";
import { pricingTermsToJson, sessionIdOf, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import { codeGigIcs, FAILING_DELIVERABLE, PASSING_DELIVERABLE, SUITE } from "./code-gig";

const ROOT = path.join(__dirname, "..", "..");
const OUT = path.join(ROOT, "examples");
// Hardhat's well-known development accounts 2 (payer) and 3 (provider): never hold value with these.
const PAYER = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
const PROVIDER = privateKeyToAccount("0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6");
// The addresses `npm run devnet` deploys to (deterministic on a fresh devnet).
const GAS_ESCROW: Address = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const GIG_ESCROW: Address = "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0";
const DISPUTE_MANAGER: Address = "0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9";
const ISSUED_AT = "2026-11-24T00:00:00Z";

function writeJson(file: string, value: unknown): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(JSON.parse(canon(value)), null, 2)}\n`);
}

function writeBundle(dir: string, bundle: Bundle): void {
  for (const [name, text] of Object.entries(bundle.files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
}

async function main(): Promise<void> {
  // The A.4 gig: up to 1 ETH in native ETH, due by 2100-01-01 (a unix time: any gig deadline falls before it).
  const ics = codeGigIcs({ asset: "0x0000000000000000000000000000000000000000", maxPrice: 10n ** 18n, deadline: 4_102_444_800n });
  writeJson(path.join(OUT, "gig", "ics.json"), icsToJson(ics));
  writeBundle(path.join(OUT, "gig", "suite"), SUITE);
  writeBundle(path.join(OUT, "gig", "delivered"), FAILING_DELIVERABLE);
  writeBundle(path.join(OUT, "gig", "delivered-passing"), PASSING_DELIVERABLE);

  const docs = path.join(OUT, "documents");
  const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: 1000n };
  writeJson(path.join(docs, "terms.json"), pricingTermsToJson(pricing));

  const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: GAS_ESCROW });
  const sessionId: Hex = keccak256(stringToBytes("example session"));
  const request = { jsonrpc: "2.0", id: 1, method: "tools/echo", params: { text: "hello" } };
  const ticket = await signPaymentTicket({
    account: PAYER,
    domain,
    ticket: { sessionId, provider: PROVIDER.address, termsHash: termsHashOf(pricing), seq: 1n, cumulativeAmount: 1000n, receiptRoot: zeroHash },
  });
  writeJson(path.join(docs, "packet-invoke.json"), JSON.parse(encodePacket({ pkt_version: "1", packet_type: "PKT_ACTION_INVOKE", issued_at: ISSUED_AT, session_id: sessionId, payload: { mcp: request, ticket } })));
  const result = { jsonrpc: "2.0", id: 1, result: { digest: keccak256(stringToBytes(canon(request.params))) } };
  const receipt = await signSessionReceipt({
    account: PROVIDER,
    receipt: {
      sessionId,
      seq: 1n,
      offloadPacketHash: keccak256(stringToBytes(canon(request))),
      outputHash: keccak256(stringToBytes(canon(result.result))),
      policyHash: keccak256(stringToBytes("policy: default")),
      modelSnapshotId: "worker:echo-keccak@1",
      metering: { units: 1n, amount: 1000n },
      prevReceiptHash: zeroHash,
    },
  });
  await writeSessionExamples(docs, domain, pricing);
  writeJson(path.join(docs, "packet-result.json"), JSON.parse(encodePacket({ pkt_version: "1", packet_type: "PKT_ACTION_RESULT", issued_at: ISSUED_AT, session_id: sessionId, action_result_id: "result-1", payload: { mcp: result, receipt } })));

  const pkg = buildGigPackage({
    caseId: keccak256(stringToBytes("example case")),
    chainId: 31337n,
    disputeManager: DISPUTE_MANAGER,
    challenger: PAYER.address,
    lane: 1,
    gigEscrow: GIG_ESCROW,
    gigId: 1n,
    ics,
    suite: SUITE,
    deliverable: FAILING_DELIVERABLE,
  });
  writeJson(path.join(docs, "challenge-package.json"), packageToJson(pkg));

  const vetted = await vetGig({ ics, suite: SUITE, deliverable: FAILING_DELIVERABLE, inputs: DEFAULT_INPUTS });
  writeJson(path.join(docs, "upip.json"), vetted.records[0]);

  // The resolution a panel member would reach on that package (the chain's view of the case as the devnet
  // would hold it right after the dispute was opened).
  const icsId = icsHash(ics);
  const run = await arbitrate({
    pkg,
    actor: "example",
    ctx: {
      case: {
        chainId: 31337n,
        disputeManager: DISPUTE_MANAGER,
        caseId: pkg.caseId,
        kind: "gig",
        status: "open",
        subjectId: `0x${(1n).toString(16).padStart(64, "0")}`,
        challenger: PAYER.address,
        respondent: PROVIDER.address,
        asset: "0x0000000000000000000000000000000000000000",
        value: 10n ** 18n,
        lane: 1,
        packageHash: packageHash(pkg),
        leaf: zeroHash,
      },
      gig: {
        gigEscrow: GIG_ESCROW,
        gigId: 1n,
        client: PAYER.address,
        provider: PROVIDER.address,
        asset: "0x0000000000000000000000000000000000000000",
        amount: 10n ** 18n,
        icsHash: icsId,
        deliverableHash: bundleHash(FAILING_DELIVERABLE),
        receiptRoot: zeroHash,
        fundedAt: BigInt(DEFAULT_INPUTS.clockMs / 1000),
        fundedInBlock: 10n,
      },
      session: null,
      judgeRuntimeHash: judgeRuntimeHash(),
      respondentIdentity: null,
    },
  });
  writeJson(path.join(docs, "resolution.json"), resolutionToJson(run.resolution));
  console.log(`wrote examples/gig and examples/documents (the failing delivery fails ${vetted.failedTests.length} tests)`);
}

/**
 * Issue 12 item 5: a failed call answered with `{ error }`, receipted at 0 and carrying the provider's signed
 * fault statement; and the package a payer builds to dispute it (the receipt proven against the recorded root,
 * the receipt as delivered with the bytes it binds, the fault statement).
 */
async function writeSessionExamples(docs: string, domain: ReturnType<typeof gasEscrowDomain>, pricing: PricingTerms): Promise<void> {
  const ref = {
    terms: {
      payer: PAYER.address,
      provider: PROVIDER.address,
      funder: PAYER.address,
      asset: "0x0000000000000000000000000000000000000000" as Address,
      termsHash: termsHashOf(pricing),
      policyHash: keccak256(stringToBytes("policy: default")),
      challengeDuration: 3600n,
      nonce: 1n,
    },
    openedAt: 12n,
  };
  const sessionId = sessionIdOf(domain, ref);
  const request = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "vectorise", arguments: { image: "logo.png" } } };
  const error = { code: -32003, message: "upstream refused the prompt", data: { fault: "ERR_UPSTREAM_POLICY_VIOLATION" } };
  const receipt = await signSessionReceipt({
    account: PROVIDER,
    receipt: {
      sessionId,
      seq: 1n,
      offloadPacketHash: keccak256(canonBytes(request)),
      outputHash: keccak256(canonBytes({ error })),
      policyHash: ref.terms.policyHash,
      modelSnapshotId: "worker:vectoriser@1",
      metering: { units: 0n, amount: 0n },
      prevReceiptHash: zeroHash,
    },
  });
  const fault = await signFaultStatement({
    account: PROVIDER,
    statement: { sessionId, seq: 1n, offloadPacketHash: receipt.receipt.offloadPacketHash, code: "ERR_UPSTREAM_POLICY_VIOLATION", computeSpent: 0n },
  });
  writeJson(
    path.join(docs, "packet-result-failed.json"),
    JSON.parse(encodePacket({ pkt_version: "1", packet_type: "PKT_ACTION_RESULT", issued_at: ISSUED_AT, session_id: sessionId, action_result_id: "result-1", payload: { mcp: { jsonrpc: "2.0", id: 1, error }, receipt, fault } })),
  );
  const ticket = await signPaymentTicket({
    account: PAYER,
    domain,
    ticket: { sessionId, provider: PROVIDER.address, termsHash: ref.terms.termsHash, seq: 1n, cumulativeAmount: 1000n, receiptRoot: zeroHash },
  });
  const tree = ReceiptAccumulator.fromLeaves([receiptLeaf(receipt.receipt, ticket.ticket)]);
  const pkg = buildSessionPackage({
    caseId: keccak256(stringToBytes("example session case")),
    chainId: 31337n,
    disputeManager: DISPUTE_MANAGER,
    challenger: PAYER.address,
    lane: 0,
    gasEscrow: GAS_ESCROW,
    sessionId,
    ref,
    pricing,
    closing: { deposit: 10_000n, seq: 2n, amount: 2000n, receiptRoot: tree.root(), feeBps: 0 },
    seq: 1n,
    receipts: [{ receipt, ticket, leafIndex: 0n, merkleProof: tree.proof(0) }],
    delivered: [{ receipt, request: canonBytes(request), output: canonBytes({ error }) }],
    fault,
  });
  writeJson(path.join(docs, "session", "challenge-package.json"), packageToJson(pkg));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
