/**
 * The test vectors of the protocol specification (docs/protocol.md), generated from the code itself: every
 * signed or hashed artifact built with the module that owns it, signed with Hardhat's well-known development
 * keys, and written to docs/protocol-vectors.json and into the `<!-- vector:NAME -->` blocks of the document.
 *
 *   npx ts-node --transpile-only scripts/protocol-vectors.ts          rewrite both files
 *   npx ts-node --transpile-only scripts/protocol-vectors.ts --check  exit 1 if either differs
 *
 * `test/library/protocol-vectors.test.ts` regenerates the vectors in memory and fails when either file
 * differs, so the specification cannot drift from the code.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  domainSeparator,
  encodeAbiParameters,
  encodeEventTopics,
  encodeFunctionData,
  encodeFunctionResult,
  getContractAddress,
  toFunctionSelector,
  toFunctionSignature,
  hashStruct,
  hexToBytes,
  keccak256,
  stringToBytes,
  toHex,
  type Address,
  type Hex,
} from "viem";

import { buildGigPackage, buildSessionPackage, buildStreamPackage } from "../arbitration/runner/build";
import { bundleHash, bundleToJson, type Bundle } from "../arbitration/documents/bundle";
import { icsFromJson, icsHash } from "../arbitration/documents/ics";
import { packageHash, packageToJson } from "../arbitration/documents/package";
import { alternateInputs, DEFAULT_INPUTS, gigInputs } from "../arbitration/lanes/pinned";
import {
  DISPUTE_MANAGER_DOMAIN_NAME,
  DISPUTE_MANAGER_DOMAIN_VERSION,
  disputeManagerDomain,
  RESOLUTION_TYPES,
  resolutionDigest,
  resolutionFromJson,
  resolutionHash,
  resolutionMessage,
  resolutionToJson,
  signResolution,
  type Resolution,
} from "../arbitration/lanes/resolution";
import { JUDGE_RUNTIME, judgeRuntimeHash } from "../arbitration/runner/runner";
import { judgeDeps, upipFromJson, upipRecord, upipResultOf, upipState, type UpipProcess } from "../arbitration/documents/upip";
import { ENGINE, engineWasmSha256 } from "../arbitration/engine/engine";
import { FUEL_METER_VERSION } from "../arbitration/engine/fuel";
import { HARNESS_SHA256 } from "../arbitration/engine/prelude";
import { ReceiptAccumulator } from "../channel-client/core/accumulator";
import { artifactId, canon, canonBytes } from "../channel-client/core/canonical";
import {
  eip712Types,
  GAS_ESCROW_DOMAIN_NAME,
  GAS_ESCROW_DOMAIN_VERSION,
  gasEscrowDomain,
  signingAccount,
  typeHash,
  type Eip712PrimaryType,
} from "../channel-client/core/eip712";
import {
  FAULT_SIGNATURE_DOMAIN,
  faultStatementDigest,
  faultStatementHash,
  faultStatementToJson,
  signFaultStatement,
  type FaultStatement,
} from "../channel-client/core/fault-statement";
import {
  didHashOf,
  IDENTITY_SIGNATURE_DOMAIN,
  identityAnchorDigest,
  identityAnchorToJson,
  mldsaKeyPair,
  signIdentityAnchor,
} from "../channel-client/core/identity";
import { fastKeccakReady } from "../channel-client/core/keccak";
import { LEAF_DOMAIN, LEAF_DOMAIN_HASH, receiptLeafFromHashes } from "../channel-client/core/leaf";
import {
  RECEIPT_SIGNATURE_DOMAIN,
  sessionReceiptDigest,
  sessionReceiptHash,
  sessionReceiptToJson,
  signSessionReceipt,
  type SessionReceipt,
  type SignedSessionReceipt,
} from "../channel-client/core/receipt";
import {
  PROGRESS_SIGNATURE_DOMAIN,
  progressProofDigest,
  progressProofHash,
  progressProofToJson,
  sampleCommitOf,
  sampledIndices,
  signProgressProof,
  signedProgressProofToJson,
  trancheRequestHash,
  trancheRequestToJson,
  type ProgressProof,
  type TrancheRequest,
} from "../channel-client/core/progress-proof";
import { sampleIntent, spotCheck, streamInputs } from "../arbitration/lanes/stream-sample";
import { replay as engineReplay } from "../arbitration/lanes/replay";
import { MAX_PACKET_BYTES } from "../channel-client/core/packets";
import { encodeMessage, MAX_SAMPLE_INDICES, type NodeMessage } from "../channel-client/node/protocol";
import { disputeManagerAbi } from "../channel-client/abi/DisputeManager";
import { gasEscrowAbi } from "../channel-client/abi/GasEscrow";
import { laborGasAbi } from "../channel-client/abi/LaborGas";
import {
  channelPaymentRequirements,
  IOI_CHANNEL_SCHEME,
  paymentRequiredResult,
  paymentResponseOf,
  X402_PAYMENT_META,
  X402_PAYMENT_RESPONSE_META,
  X402_VERSION,
} from "../channel-client/core/x402";
import { receiptCommitDigest, receiptCommitToJson, signReceiptCommit, type ReceiptCommit } from "../channel-client/core/receipt-commit";
import {
  capabilitiesHash,
  normalizeMethods,
  sessionKeyGrantDigest,
  sessionKeyGrantToJson,
  signSessionKeyGrant,
} from "../channel-client/core/session-key";
import {
  settlementSummaryDigest,
  settlementSummaryToJson,
  signSettlementSummary,
  type ClosingState,
  type SettlementSummary,
} from "../channel-client/core/summary";
import {
  channelRefToJson,
  pricingTermsToJson,
  sessionIdOf,
  termsHashOf,
  type ChannelRef,
  type PricingTerms,
  type TermsDocumentV4,
  callPricingOf,
  FREE_METHODS,
  prepaidFor,
  priceFor,
  type TermsDocumentV3,
} from "../channel-client/core/terms";
import { signTermsOffer, TERMS_OFFER_SIGNATURE_DOMAIN, termsOfferDigest, termsOfferToJson } from "../channel-client/core/terms-offer";
import {
  paymentTicketDigest,
  paymentTicketHash,
  paymentTicketToJson,
  signPaymentTicket,
  signedPaymentTicketToJson,
  type PaymentTicket,
  type SignedPaymentTicket,
} from "../channel-client/core/ticket";

const ROOT = path.join(__dirname, "..");
export const VECTORS_PATH = path.join(ROOT, "docs", "protocol-vectors.json");
export const DOC_PATH = path.join(ROOT, "docs", "protocol.md");

/**
 * Hardhat's first development accounts (mnemonic "test test … junk"): public knowledge, never for real funds.
 * #0 pays, #1 provides, #2 is the session key, #3 the arbitrator.
 */
export const TEST_KEYS = {
  payer: { account: 0, privateKey: "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80" },
  provider: { account: 1, privateKey: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d" },
  sessionKey: { account: 2, privateKey: "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a" },
  arbitrator: { account: 3, privateKey: "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6" },
} as const satisfies Record<string, { account: number; privateKey: Hex }>;

const payer = signingAccount(TEST_KEYS.payer.privateKey);
const provider = signingAccount(TEST_KEYS.provider.privateKey);
const sessionKey = signingAccount(TEST_KEYS.sessionKey.privateKey);
const arbitrator = signingAccount(TEST_KEYS.arbitrator.privateKey);

/** Addresses of the first contracts account #0 deploys on a fresh Hardhat network (nonces 0, 1, 2). */
const CHAIN_ID = 31337;
const GAS_ESCROW: Address = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const GIG_ESCROW: Address = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
const DISPUTE_MANAGER: Address = "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0";
/** LaborGas (EIP-2612 permits), for its ERC-5267 vector: account #0's deployment at nonce 4 (3 is the wallet's). */
const LABOR_GAS: Address = getContractAddress({ from: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", nonce: 4n });

const label = (text: string): Hex => keccak256(stringToBytes(text));
const lower = (address: Address): Hex => address.toLowerCase() as Hex;

/** ABI encoding and fingerprint of `IGasEscrow.ClosingState` (what GasEscrow stores in a closing channel's word). */
const CLOSING_STATE_ABI = [
  {
    type: "tuple",
    components: [
      { name: "deposit", type: "uint128" },
      { name: "seq", type: "uint64" },
      { name: "amount", type: "uint128" },
      { name: "receiptRoot", type: "bytes32" },
      { name: "feeBps", type: "uint16" },
    ],
  },
] as const;
const FINGERPRINT_MASK = (1n << 210n) - 1n;

export function closingStateFingerprint(state: ClosingState): { encoded: Hex; keccak: Hex; fingerprint: Hex } {
  const encoded = encodeAbiParameters(CLOSING_STATE_ABI, [state]);
  const hash = keccak256(encoded);
  return { encoded, keccak: hash, fingerprint: toHex(BigInt(hash) & FINGERPRINT_MASK, { size: 32 }) };
}

/** `DisputeManager._caseId`: keccak256(abi.encode(uint8 kind, bytes32 subjectId, uint8 index)). */
export function caseIdOf(kind: 1 | 2, subjectId: Hex, index: number): Hex {
  return keccak256(encodeAbiParameters([{ type: "uint8" }, { type: "bytes32" }, { type: "uint8" }], [kind, subjectId, index]));
}

/** The EIP-712 type string of a flat struct, as `typeHash` hashes it. */
function typeString(fields: readonly { name: string; type: string }[], name: string): string {
  return `${name}(${fields.map((f) => `${f.type} ${f.name}`).join(",")})`;
}

/** Every vector, keyed by the name its `<!-- vector:NAME -->` block in docs/protocol.md uses. */
export type ProtocolVectors = Record<string, unknown>;

export async function protocolVectors(): Promise<ProtocolVectors> {
  await fastKeccakReady;
  const v: ProtocolVectors = {};

  v.keys = Object.fromEntries(
    Object.entries(TEST_KEYS).map(([role, key]) => [role, { hardhatAccount: key.account, privateKey: key.privateKey, address: signingAccount(key.privateKey).address }]),
  );

  // Canonical JSON: keys sorted by UTF-16 code units, shortest number forms, minimal string escapes.
  const canonText = '{"b": [1.0, 1E21, 0.50, -0, 1e-7], "a": "\\u00e9\\u0001\\u2028\\/", "\\uff01": true, "\\ud83d\\ude00": null, "A": {"z": "1", "y": "2"}}';
  const canonical = canon(JSON.parse(canonText));
  v.canonicalJson = { input: canonText, canonical, utf8Hex: toHex(stringToBytes(canonical)), keccak256: keccak256(stringToBytes(canonical)) };

  // EIP-712 domains and types.
  const domain = gasEscrowDomain({ chainId: CHAIN_ID, verifyingContract: GAS_ESCROW });
  const dmDomain = disputeManagerDomain(BigInt(CHAIN_ID), DISPUTE_MANAGER);
  v.eip712GasEscrow = {
    domain: { name: GAS_ESCROW_DOMAIN_NAME, version: GAS_ESCROW_DOMAIN_VERSION, chainId: CHAIN_ID, verifyingContract: GAS_ESCROW },
    domainType: "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)",
    domainSeparator: domainSeparator({ domain }),
    types: Object.fromEntries(
      (Object.keys(eip712Types) as Eip712PrimaryType[]).map((name) => [name, { encodeType: typeString(eip712Types[name], name), typeHash: typeHash(name) }]),
    ),
  };
  v.eip712DisputeManager = {
    domain: { name: DISPUTE_MANAGER_DOMAIN_NAME, version: DISPUTE_MANAGER_DOMAIN_VERSION, chainId: CHAIN_ID, verifyingContract: DISPUTE_MANAGER },
    domainType: "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)",
    domainSeparator: domainSeparator({ domain: dmDomain }),
    types: { Resolution: { encodeType: typeString(RESOLUTION_TYPES.Resolution, "Resolution"), typeHash: keccak256(stringToBytes(typeString(RESOLUTION_TYPES.Resolution, "Resolution"))) } },
  };

  // Terms documents.
  const termsV1: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: 1_000_000n };
  const termsV2: PricingTerms = {
    version: "2",
    pricing: { perInvocation: 1000n, perUnit: { unit: "token", price: 20n }, capPerCall: 50_000n },
    models: ["model:echo@2", "gpt-x-2026-01"],
    disputes: { windowAfterSettlement: 86_400n, penalties: { RECEIPT_MODEL_SWAP: 5_000_000n, RECEIPT_OVER_METERED: 1_000_000n }, refundsFromBond: true },
    requiredReceipts: ["rrsa_request_binding", "rrsa_output_commitment"],
  };
  v.termsV1 = { document: pricingTermsToJson(termsV1), canonical: canon(pricingTermsToJson(termsV1)), termsHash: termsHashOf(termsV1) };
  v.termsV2 = { document: pricingTermsToJson(termsV2), canonical: canon(pricingTermsToJson(termsV2)), termsHash: termsHashOf(termsV2) };

  // The session: channel terms and the id GasEscrow.open derives.
  const policyHash = label("policy: vectors");
  const ref: ChannelRef = {
    terms: {
      payer: payer.address,
      provider: provider.address,
      funder: payer.address,
      asset: "0x0000000000000000000000000000000000000000",
      termsHash: termsHashOf(termsV2),
      policyHash,
      challengeDuration: 3600n,
      nonce: 1n,
    },
    openedAt: 1_767_225_600n,
  };
  const sessionId = sessionIdOf(domain, ref);
  v.sessionId = { channel: channelRefToJson(ref), structHash: hashStruct({ types: eip712Types, primaryType: "Session", data: { ...ref.terms, openedAt: ref.openedAt } }), sessionId };

  // Five paid steps: ticket n carries the root over leaves 1..n-1; receipt n chains to receipt n-1.
  const tree = new ReceiptAccumulator();
  const steps: { ticket: SignedPaymentTicket; receipt: SignedSessionReceipt; leaf: Hex }[] = [];
  const prefixRoots: Hex[] = [tree.root()];
  let prev: Hex = `0x${"00".repeat(32)}`;
  for (let seq = 1n; seq <= 5n; seq++) {
    const ticket: PaymentTicket = { sessionId, provider: provider.address, termsHash: ref.terms.termsHash, seq, cumulativeAmount: 50_000n * seq, receiptRoot: tree.root() };
    const receipt: SessionReceipt = {
      sessionId,
      seq,
      offloadPacketHash: keccak256(stringToBytes(canon({ jsonrpc: "2.0", id: Number(seq), method: "tools/call", params: { name: "echo", arguments: { n: Number(seq) } } }))),
      outputHash: keccak256(stringToBytes(canon({ content: [{ type: "text", text: `echo ${seq}` }] }))),
      policyHash,
      modelSnapshotId: "model:echo@1",
      metering: { units: 12n, amount: 1240n },
      prevReceiptHash: prev,
    };
    const signedTicket = await signPaymentTicket({ account: payer, domain, ticket });
    const signedReceipt = await signSessionReceipt({ account: provider, receipt });
    const leaf = receiptLeafFromHashes(sessionReceiptHash(receipt), paymentTicketHash(ticket));
    tree.append(leaf);
    prefixRoots.push(tree.root());
    prev = sessionReceiptHash(receipt);
    steps.push({ ticket: signedTicket, receipt: signedReceipt, leaf });
  }
  const first = steps[1]!; // seq 2: its ticket carries a non-empty root
  v.paymentTicket = {
    ticket: paymentTicketToJson(first.ticket.ticket),
    structHash: hashStruct({ types: eip712Types, primaryType: "PaymentTicket", data: first.ticket.ticket }),
    digest: paymentTicketDigest(domain, first.ticket.ticket),
    signer: payer.address,
    signature: first.ticket.signature,
    canonical: canon(paymentTicketToJson(first.ticket.ticket)),
    ticketHash: paymentTicketHash(first.ticket.ticket),
  };
  v.sessionReceipt = {
    receipt: sessionReceiptToJson(first.receipt.receipt),
    canonical: canon(sessionReceiptToJson(first.receipt.receipt)),
    receiptHash: sessionReceiptHash(first.receipt.receipt),
    signatureDomain: RECEIPT_SIGNATURE_DOMAIN,
    signatureDomainHash: label(RECEIPT_SIGNATURE_DOMAIN),
    digest: sessionReceiptDigest(sessionReceiptHash(first.receipt.receipt)),
    signer: provider.address,
    signature: first.receipt.signature,
  };
  v.receiptLeaf = {
    leafDomain: LEAF_DOMAIN,
    leafDomainHash: LEAF_DOMAIN_HASH,
    receiptHash: sessionReceiptHash(first.receipt.receipt),
    ticketHash: paymentTicketHash(first.ticket.ticket),
    preimage: `0x${LEAF_DOMAIN_HASH.slice(2)}${sessionReceiptHash(first.receipt.receipt).slice(2)}${paymentTicketHash(first.ticket.ticket).slice(2)}`,
    leaf: first.leaf,
  };
  v.receiptTree = {
    leaves: steps.map((s) => s.leaf),
    level1: [0, 2].map((i) => pairHash(steps[i]!.leaf, steps[i + 1]!.leaf)),
    peaks: tree.peaks(),
    root: tree.root(),
    prefixRoots: Object.fromEntries(prefixRoots.map((root, size) => [String(size), root])),
    proofOfLeaf2: { index: 2, size: 5, proof: tree.proof(2), root: tree.root() },
    ticketRoots: steps.map((s) => ({ seq: String(s.ticket.ticket.seq), receiptRoot: s.ticket.ticket.receiptRoot })),
  };

  // Receipt commit over the first four leaves, signed by the provider.
  const commit: ReceiptCommit = { sessionId, leafCount: 4n, root: tree.prefixRoot(4) };
  const signedCommit = await signReceiptCommit(provider, domain, commit);
  v.receiptCommit = {
    commit: receiptCommitToJson(commit),
    structHash: hashStruct({ types: eip712Types, primaryType: "ReceiptCommit", data: commit }),
    digest: receiptCommitDigest(domain, commit),
    signer: provider.address,
    signature: signedCommit.signature,
  };

  // Session-key grant: methods deduplicated and sorted by UTF-16 code units.
  const methods = ["tools/call", "😀/smile", "\uFF01/bang", "resources/read", "tools/call"];
  const grant = await signSessionKeyGrant({ account: payer, domain, sessionId, key: sessionKey.address, expiry: 1_767_312_000n, spendCap: 250_000n, methods, epoch: 0n });
  const codePointOrder = [...new Set(methods)].sort((a, b) => {
    const x = [...a].map((c) => c.codePointAt(0)!);
    const y = [...b].map((c) => c.codePointAt(0)!);
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
    return x.length - y.length;
  });
  v.sessionKeyGrant = {
    methodsGiven: methods,
    methods: normalizeMethods(methods),
    capabilitiesDocument: canon({ version: "1", methods: normalizeMethods(methods) }),
    capabilities: capabilitiesHash(methods),
    notCodePointOrder: { methods: codePointOrder, wouldHash: keccak256(stringToBytes(`{"methods":${JSON.stringify(codePointOrder)},"version":"1"}`)) },
    grant: sessionKeyGrantToJson(grant.grant),
    structHash: hashStruct({ types: eip712Types, primaryType: "SessionKey", data: grant.grant }),
    digest: sessionKeyGrantDigest(domain, grant.grant),
    signer: payer.address,
    signature: grant.signature,
  };

  // Settlement summary, cooperative close after five steps, signed by both.
  const summary: SettlementSummary = {
    sessionId,
    provider: provider.address,
    payer: payer.address,
    termsHash: ref.terms.termsHash,
    finalSeq: 5n,
    finalAmount: 6200n,
    finalReceiptRoot: tree.root(),
    mode: "Cooperative",
  };
  v.settlementSummary = {
    summary: settlementSummaryToJson(summary),
    modeCode: 0,
    structHash: hashStruct({ types: eip712Types, primaryType: "SettlementSummary", data: { ...summary, mode: 0 } }),
    digest: settlementSummaryDigest(domain, summary),
    payerSignature: await signSettlementSummary({ account: payer, domain, summary }),
    providerSignature: await signSettlementSummary({ account: provider, domain, summary }),
  };

  // Closing state of a unilateral close with ticket 5 (fee 50 bps), and of the cooperative settlement above.
  const closing: ClosingState = { deposit: 1_000_000n, seq: 5n, amount: 250_000n, receiptRoot: steps[4]!.ticket.ticket.receiptRoot, feeBps: 50 };
  const settled: ClosingState = { deposit: summary.finalAmount, seq: summary.finalSeq, amount: summary.finalAmount, receiptRoot: summary.finalReceiptRoot, feeBps: 0 };
  v.closingState = {
    unilateral: { state: closingJson(closing), ...closingStateFingerprint(closing) },
    settled: { state: closingJson(settled), ...closingStateFingerprint(settled) },
  };

  // Fault statement for a failed call.
  const fault: FaultStatement = { sessionId, seq: 3n, offloadPacketHash: steps[2]!.receipt.receipt.offloadPacketHash, code: "ERR_UPSTREAM_FAILURE", computeSpent: 400n };
  const signedFault = await signFaultStatement({ account: provider, statement: fault });
  v.faultStatement = {
    statement: faultStatementToJson(fault),
    canonical: canon(faultStatementToJson(fault)),
    statementHash: faultStatementHash(fault),
    signatureDomain: FAULT_SIGNATURE_DOMAIN,
    signatureDomainHash: label(FAULT_SIGNATURE_DOMAIN),
    digest: faultStatementDigest(faultStatementHash(fault)),
    signer: provider.address,
    signature: signedFault.signature,
  };

  // Terms offer for the v2 document on this escrow.
  const offer = await signTermsOffer(provider, domain, termsV2);
  v.termsOffer = {
    offer: termsOfferToJson(offer.offer),
    canonical: canon(termsOfferToJson(offer.offer)),
    offerId: keccak256(stringToBytes(canon(termsOfferToJson(offer.offer)))),
    signatureDomain: TERMS_OFFER_SIGNATURE_DOMAIN,
    signatureDomainHash: label(TERMS_OFFER_SIGNATURE_DOMAIN),
    digest: termsOfferDigest(offer.offer),
    signer: provider.address,
    signature: offer.signature,
  };

  // Bundles: a deliverable and a test suite.
  const deliverable: Bundle = { files: { "src/index.js": "exports.add = (a, b) => a + b;\n", "README.md": "add(a, b)\n" } };
  const suite: Bundle = {
    files: { "run.js": 'const { add } = require("deliverable");\ntest("adds", () => assert.equal(add(2, 3), 5));\n' },
  };
  v.bundleHash = { bundle: bundleToJson(deliverable), canonical: canon(bundleToJson(deliverable)), bundleHash: bundleHash(deliverable) };

  // Lane 1 pinned inputs of gig 7 funded at the session's opening time.
  const pinned = gigInputs({ chainId: BigInt(CHAIN_ID), gigEscrow: GIG_ESCROW, gigId: 7n, fundedAt: 1_767_225_600n });
  const alternate = alternateInputs(pinned);
  v.pinnedSeed = {
    inputs: { chainId: String(CHAIN_ID), gigEscrow: GIG_ESCROW, gigId: "7", fundedAt: "1767225600" },
    seedDocument: canon({ domain: "ioi.lane1.inputs/1", chain_id: String(CHAIN_ID), gig_escrow: lower(GIG_ESCROW), gig_id: "7", funded_at: "1767225600" }),
    clockMs: pinned.clockMs,
    seed: pinned.seed,
    alternate: { clockMs: alternate.clockMs, seedPreimage: `${pinned.seed}${"a1".repeat(32)}`, seed: alternate.seed },
    default: { seedPreimageUtf8: "ioi.lane1.inputs/default", clockMs: DEFAULT_INPUTS.clockMs, seed: DEFAULT_INPUTS.seed },
  };

  // UPIP record of a (constructed) replay of the suite against the deliverable.
  const deps = judgeDeps();
  const upipProcess: UpipProcess = {
    command: ["node", "run.js"],
    intent: "Lane 1 replay of rubric item passes_tests",
    actor: "ioi-arbitration/lane1",
    env_vars: {},
    working_dir: ".",
    inputs: { suite: { clock_ms: pinned.clockMs, seed: pinned.seed }, deliverable: { clock_ms: pinned.clockMs, seed: pinned.seed } },
    budgets: { steps_per_test: 1000, memory_bytes: 33_554_432, max_output_bytes: 65_536 },
  };
  const stdout = 'ok 1 adds\n{"failed":[],"suite_fault":null,"total":1}\n';
  const result = upipResultOf({ tests: 1, failedTests: [], deliverableFaults: [], suiteFault: null, steps: { suite: 120, deliverable: 40 }, stdout, stderr: "" });
  const record = upipFromJson(upipRecord({ state: upipState(suite, deliverable), deps, process: upipProcess, result }));
  const depsLines = [
    ...Object.entries(deps.packages).map(([name, version]) => `${name}:${version}`),
    `engine:${deps.engine_sha256}`,
    `harness:${deps.harness_sha256}`,
    `runner:${deps.runner}`,
  ].sort();
  v.upip = {
    statePreimage: canon({ suite: bundleToJson(suite), deliverable: bundleToJson(deliverable) }),
    depsPreimage: depsLines.map((line) => `${line}\n`).join(""),
    resultPreimage: `${result.exit_code}${stdout}`,
    record,
  };
  const runtimeDocument = {
    ...JUDGE_RUNTIME,
    lanes: [...JUDGE_RUNTIME.lanes],
    engine: { package: ENGINE.package, version: ENGINE.version, variant: ENGINE.variant, wasm_sha256: engineWasmSha256(), fuel_meter: FUEL_METER_VERSION },
    harness_sha256: HARNESS_SHA256,
  };
  if (artifactId(runtimeDocument) !== judgeRuntimeHash()) throw new Error("The judge runtime document here is not the one runner.ts hashes.");
  v.judgeRuntime = { document: runtimeDocument, canonical: canon(runtimeDocument), judgeRuntimeHash: judgeRuntimeHash() };

  // Challenge packages: a session step (receipt 2 proven against the closing root) and a gig delivery.
  const sessionCase = caseIdOf(2, sessionId, 0);
  const sessionPackage = buildSessionPackage({
    caseId: sessionCase,
    chainId: BigInt(CHAIN_ID),
    disputeManager: DISPUTE_MANAGER,
    challenger: payer.address,
    lane: 0,
    gasEscrow: GAS_ESCROW,
    sessionId,
    ref,
    pricing: termsV2,
    closing,
    seq: 2n,
    receipts: [{ receipt: steps[1]!.receipt, ticket: steps[1]!.ticket, leafIndex: 1n, merkleProof: tree.proof(1, 4) }],
    description: "Receipt 2 names a model the terms do not list.",
  });
  const packageJson = packageToJson(sessionPackage);
  v.caseId = {
    formula: "keccak256(abi.encode(uint8 kind, bytes32 subjectId, uint8 index))",
    session: { kind: 2, subjectId: sessionId, index: 0, caseId: sessionCase },
    gig: { kind: 1, subjectId: toHex(7n, { size: 32 }), index: 0, caseId: caseIdOf(1, toHex(7n, { size: 32 }), 0) },
  };
  v.challengePackage = {
    package: packageJson,
    evidenceIds: packageJson.evidence.map((e) => ({ kind: e.kind, artifact_id: e.artifact_id, contentHash: keccak256(stringToBytes(canon(e.content))) })),
    packageHash: packageHash(sessionPackage),
  };
  const ics = icsFromJson({
    asset: "0x0000000000000000000000000000000000000000",
    deadline: "4102444800",
    ics_version: 1,
    max_price: "1000000000000000000",
    penalty_schedule: {
      objective_failure: { refund_bps: 5000, slash: "10000000000000000000" },
      per_failed_test: { refund_bps: 1000, slash: "5000000000000000000" },
      unserviceable: { compute_spent_bps: 1000 },
    },
    rubric: { items: [{ id: "passes_tests", kind: "test_suite" }], version: 1 },
    task: "Write src/index.js exporting add(a, b) so that the bound test suite passes.",
    test_suite: { hash: bundleHash(suite), runner: { command: ["node", "run.js"], max_output_bytes: 65536, timeout_ms: 10000 } },
  });
  const gigPackage = buildGigPackage({
    caseId: caseIdOf(1, toHex(7n, { size: 32 }), 0),
    chainId: BigInt(CHAIN_ID),
    disputeManager: DISPUTE_MANAGER,
    challenger: payer.address,
    lane: 1,
    gigEscrow: GIG_ESCROW,
    gigId: 7n,
    ics,
    suite,
    deliverable,
  });
  v.gigPackage = { icsHash: icsHash(ics), packageHash: packageHash(gigPackage), evidence: gigPackage.evidence.map((e) => ({ kind: e.kind, artifact_id: e.artifactId })) };

  // A resolution of the session case, signed by the arbitrator.
  const receiptEvidence = sessionPackage.evidence.find((e) => e.kind === "receipt")!;
  const resolution: Resolution = resolutionFromJson(
    resolutionToJson({
      schema: "ioi.resolution/1",
      caseId: sessionCase,
      chainId: BigInt(CHAIN_ID),
      disputeManager: DISPUTE_MANAGER,
      packageHash: packageHash(sessionPackage),
      graphId: sessionPackage.graphId,
      stepId: sessionPackage.stepId,
      policyHash,
      policyVersion: 1,
      rubricVersion: 0,
      modelSnapshotId: sessionPackage.modelSnapshotId,
      judgeRuntimeHash: judgeRuntimeHash(),
      evidence: sessionPackage.evidence.map((e) => ({ artifactId: e.artifactId, kind: e.kind, merkleProof: e.kind === "receipt" ? tree.proof(1, 4) : [] })),
      lane0: {
        passed: false,
        checks: [
          { name: "receipt_signature", status: "pass", detail: null },
          { name: "receipt_model", status: "fail", detail: "RECEIPT_MODEL_SWAP: receipt 2 names model:echo@1, which the terms do not list" },
        ],
      },
      objectiveChecks: [],
      replays: [],
      claims: [{ claimId: "receipt_violates_session", description: "Receipt 2 names a model the terms do not list.", evidenceRefs: [receiptEvidence.artifactId], objectiveFallback: true, prosecutor: null, defender: null, resolver: null }],
      aggregate: { finalVerdict: "provider_fault", aggregateConfidence: 1, unresolved: false, reasonCodes: ["RECEIPT_MODEL_SWAP"] },
      remedy: { verdict: 1, refund: 1240n, slash: 5_000_000n },
    }),
  );
  const message = resolutionMessage(resolution);
  v.resolution = {
    document: resolutionToJson(resolution),
    resolutionHash: resolutionHash(resolution),
    message: { caseId: message.caseId, verdict: message.verdict, refund: String(message.refund), slash: String(message.slash), resolutionHash: message.resolutionHash },
    structHash: hashStruct({ types: RESOLUTION_TYPES, primaryType: "Resolution", data: message }),
    digest: resolutionDigest(dmDomain, message),
    signer: arbitrator.address,
    signature: await signResolution(arbitrator, dmDomain, message),
  };

  // Identity anchor: a DID bound to the provider's account and an ML-DSA-44 key (seeded, so the key is fixed).
  const mldsa = mldsaKeyPair(hexToBytes(label("ioi protocol vectors: ML-DSA-44 seed")));
  const did = "did:ioi:provider-vectors";
  const anchor = { did, account: provider.address, mldsaPublicKey: mldsa.publicKey };
  const signedAnchor = await signIdentityAnchor({ did, account: provider, mldsa });
  v.identityAnchor = {
    mldsaSeed: label("ioi protocol vectors: ML-DSA-44 seed"),
    anchorJson: { did, account: lower(provider.address), mldsa_public_key: `<${(mldsa.publicKey.length - 2) / 2} bytes, keccak256 below>` },
    didHash: didHashOf(did),
    mldsaPublicKeyHash: keccak256(mldsa.publicKey),
    anchorId: artifactId(identityAnchorToJson(anchor)),
    signatureDomain: IDENTITY_SIGNATURE_DOMAIN,
    digest: identityAnchorDigest(anchor),
    secp256k1Signature: signedAnchor.secp256k1Signature,
  };

  // ---- Milestone streaming (terms v4, decision 0037) ----
  const streamSuite: Bundle = {
    files: {
      "run.js": 'const { test, call, equal } = require("ioi:harness");\ntest("adds", () => equal(call("add", [2, 3]), 5));\ntest("subtracts", () => equal(call("sub", [5, 3]), 2));\ntest("adds negatives", () => equal(call("add", [-2, -3]), -5));\n',
    },
  };
  const termsV4: TermsDocumentV4 = {
    version: "4",
    pricing: { perInvocation: 30_000n, perUnit: null, capPerCall: 30_000n },
    models: ["model:coder@1"],
    disputes: { windowAfterSettlement: 86_400n, penalties: {}, refundsFromBond: false },
    requiredReceipts: ["rrsa_request_binding", "rrsa_output_commitment"],
    stream: {
      trancheSeconds: 60n,
      tranchesInFlight: 1,
      samplesPerTranche: 2,
      suite: { hash: bundleHash(streamSuite), command: ["node", "run.js"], stepBudget: 10_000, maxOutputBytes: 65_536 },
      falseClaimPenalty: 2_000_000n,
    },
  };
  v.termsV4 = { document: pricingTermsToJson(termsV4), canonical: canon(pricingTermsToJson(termsV4)), termsHash: termsHashOf(termsV4), suiteBundle: bundleToJson(streamSuite) };

  // A stream channel under the v4 terms: tranche 1's request, proof, receipt, ticket and leaf.
  const streamRef: ChannelRef = { terms: { ...ref.terms, termsHash: termsHashOf(termsV4), nonce: 2n }, openedAt: ref.openedAt };
  const streamSession = sessionIdOf(domain, streamRef);
  const secret = label("ioi protocol vectors: sampling secret of tranche 1");
  const request: TrancheRequest = { sessionId: streamSession, tranche: 1n, sampleCommit: sampleCommitOf(secret) };
  v.trancheRequest = {
    secret,
    sampleCommit: request.sampleCommit,
    request: trancheRequestToJson(request),
    canonical: canon(trancheRequestToJson(request)),
    requestHash: trancheRequestHash(request),
  };
  const repository: Bundle = { files: { "src/index.js": "exports.add = (a, b) => a + b;\nexports.sub = (a, b) => a - b;\n" } };
  const proof: ProgressProof = {
    sessionId: streamSession,
    tranche: 1n,
    repoStateHash: bundleHash(repository),
    suiteHash: termsV4.stream.suite.hash,
    tests: [
      { name: "adds", outcome: "pass" },
      { name: "subtracts", outcome: "pass" },
      { name: "adds negatives", outcome: "fail" },
    ],
    coverageDeltaBps: 4200,
    lint: "clean",
    artifactHash: `0x${"00".repeat(32)}`,
    prevProofHash: `0x${"00".repeat(32)}`,
  };
  const signedProof = await signProgressProof({ account: provider, proof });
  const proofHash = progressProofHash(proof);
  v.progressProof = {
    repository: bundleToJson(repository),
    proof: progressProofToJson(proof),
    canonical: canon(progressProofToJson(proof)),
    proofHash,
    signatureDomain: PROGRESS_SIGNATURE_DOMAIN,
    signatureDomainHash: label(PROGRESS_SIGNATURE_DOMAIN),
    digest: progressProofDigest(proofHash),
    signer: provider.address,
    signature: signedProof.signature,
    signed: signedProgressProofToJson(signedProof),
  };

  // The sample draw: several (secret, proof, total, count), each with its per-draw documents.
  const drawOf = (p: { secret: Hex; proofHash: Hex; total: number; count: number }) => {
    const indices = sampledIndices(p);
    const draws: { draw: number; document: string; keccak256: Hex; index: number }[] = [];
    if (p.count < p.total) {
      const seen = new Set<number>();
      for (let draw = 0; seen.size < indices.length; draw++) {
        const document = canon({ domain: "ioi.stream.sample/1", secret: p.secret, proof: p.proofHash, draw });
        const hash = keccak256(stringToBytes(document));
        const index = Number(BigInt(hash) % BigInt(p.total));
        seen.add(index);
        draws.push({ draw, document, keccak256: hash, index });
      }
    }
    return { secret: p.secret, proofHash: p.proofHash, total: p.total, count: p.count, draws, indices };
  };
  v.sampleDraw = {
    domain: "ioi.stream.sample/1",
    draws: [
      drawOf({ secret, proofHash, total: 3, count: 2 }),
      drawOf({ secret, proofHash, total: 12, count: 4 }),
      drawOf({ secret: label("ioi protocol vectors: another secret"), proofHash, total: 1024, count: 3 }),
      drawOf({ secret, proofHash, total: 3, count: 3 }),
      drawOf({ secret, proofHash, total: 0, count: 2 }),
    ],
    inputs: {
      parameters: { chainId: String(CHAIN_ID), gasEscrow: GAS_ESCROW, sessionId: streamSession, tranche: "1" },
      seedDocument: canon({ domain: "ioi.stream.inputs/1", chain_id: String(CHAIN_ID), gas_escrow: lower(GAS_ESCROW), session_id: streamSession, tranche: "1" }),
      ...streamInputs({ chainId: BigInt(CHAIN_ID), gasEscrow: GAS_ESCROW, sessionId: streamSession, tranche: 1n }),
    },
  };
  const drawsFound = (v.sampleDraw as { draws: { draws: unknown[] }[] }).draws;
  if (!drawsFound.some((d) => d.draws.length > d.draws.filter((x, i, all) => all.findIndex((y) => (y as { index: number }).index === (x as { index: number }).index) === i).length)) {
    throw new Error("No sample-draw vector repeats an index: the vectors must show a repeated draw being skipped.");
  }

  // Tranche 1's receipt carries the request and the proof; its leaf is the usual one.
  const streamTicket: PaymentTicket = { sessionId: streamSession, provider: provider.address, termsHash: streamRef.terms.termsHash, seq: 1n, cumulativeAmount: 30_000n, receiptRoot: `0x${"00".repeat(32)}` };
  const streamReceipt: SessionReceipt = {
    sessionId: streamSession,
    seq: 1n,
    offloadPacketHash: trancheRequestHash(request),
    outputHash: proofHash,
    policyHash,
    modelSnapshotId: "model:coder@1",
    metering: { units: 0n, amount: 30_000n },
    prevReceiptHash: `0x${"00".repeat(32)}`,
  };
  const signedStreamReceipt = await signSessionReceipt({ account: provider, receipt: streamReceipt });
  v.progressReceipt = {
    channel: channelRefToJson(streamRef),
    sessionId: streamSession,
    receipt: sessionReceiptToJson(streamReceipt),
    canonical: canon(sessionReceiptToJson(streamReceipt)),
    receiptHash: sessionReceiptHash(streamReceipt),
    receiptSignature: signedStreamReceipt.signature,
    ticket: paymentTicketToJson(streamTicket),
    ticketHash: paymentTicketHash(streamTicket),
    leaf: receiptLeafFromHashes(sessionReceiptHash(streamReceipt), paymentTicketHash(streamTicket)),
  };

  // ---- Tranche 1 on the sealed socket (issue 32, decision 0037): the four stream messages, as encodeMessage writes them ----
  const signedStreamTicket = await signPaymentTicket({ account: payer, domain, ticket: streamTicket });
  const streamTree = new ReceiptAccumulator();
  streamTree.append(receiptLeafFromHashes(sessionReceiptHash(streamReceipt), paymentTicketHash(streamTicket)));
  const streamCommit = await signReceiptCommit(provider, domain, { sessionId: streamSession, leafCount: 1n, root: streamTree.root() });
  const drawn = sampledIndices({ secret, proofHash, total: proof.tests.length, count: termsV4.stream.samplesPerTranche });
  const streamMessages: NodeMessage[] = [
    { type: "stream.tranche", ticket: signedStreamTicket, request, leafCount: 0n },
    { type: "stream.result", receipt: signedStreamReceipt, proof: signedProof, commit: streamCommit },
    { type: "stream.sample", tranche: 1n, secret, indices: drawn },
    { type: "stream.repository", tranche: 1n, repository },
  ];
  v.streamMessages = {
    maxMessageBytes: MAX_PACKET_BYTES,
    maxSampleIndices: MAX_SAMPLE_INDICES,
    messages: streamMessages.map((message) => {
      const bytes = encodeMessage(message);
      const text = new TextDecoder().decode(bytes);
      return { type: (message as { type: string }).type, json: JSON.parse(text) as unknown, canonical: text, bytes: bytes.length };
    }),
    commitDigest: receiptCommitDigest(domain, streamCommit.commit),
  };

  // ---- A stream case (decision 0037): the progress item of a session challenge package, two shapes ----
  const streamEvidence = { receipt: signedStreamReceipt, ticket: signedStreamTicket, leafIndex: 0n, merkleProof: streamTree.proof(0) };
  const streamClosing: ClosingState = { deposit: 1_000_000n, seq: 1n, amount: 30_000n, receiptRoot: streamTicket.receiptRoot, feeBps: 50 };
  const streamCase = caseIdOf(2, streamSession, 0);
  const streamCommon = {
    chainId: BigInt(CHAIN_ID),
    disputeManager: DISPUTE_MANAGER,
    challenger: payer.address,
    lane: 1 as const,
    gasEscrow: GAS_ESCROW,
    sessionId: streamSession,
    ref: streamRef,
    pricing: termsV4,
    closing: streamClosing,
    commit: streamCommit,
    seq: 1n,
    receipts: [streamEvidence],
  };
  // False claim: claim #2 ("adds negatives": fail) was drawn; re-run, it passes.
  const falseClaim = buildStreamPackage({ ...streamCommon, caseId: streamCase, progress: { proof: signedProof, request, secret, sample: drawn[drawn.length - 1]! }, suite: streamSuite, repository });
  // Equivocation: a second signed proof of tranche 1 (the same claims but #2 passing).
  const secondProof = await signProgressProof({ account: provider, proof: { ...proof, tests: proof.tests.map((t, i) => (i === 2 ? { ...t, outcome: "pass" as const } : t)) } });
  const equivocation = buildStreamPackage({ ...streamCommon, caseId: caseIdOf(2, streamSession, 1), lane: 0 as const, progress: { proof: signedProof, request, conflicting: secondProof } });
  const progressItem = (pkg: typeof falseClaim) => {
    const item = packageToJson(pkg).evidence.find((e) => e.kind === "progress")!;
    return { artifact_id: item.artifact_id, content: item.content, canonical: canon(item.content) };
  };
  v.streamPackage = {
    falseClaim: {
      sample: drawn[drawn.length - 1]!,
      drawn,
      progress: progressItem(falseClaim),
      evidence: packageToJson(falseClaim).evidence.map((e) => ({ kind: e.kind, artifact_id: e.artifact_id })),
      claims: packageToJson(falseClaim).claims,
      packageHash: packageHash(falseClaim),
    },
    equivocation: {
      secondProofHash: progressProofHash(secondProof.proof),
      progress: progressItem(equivocation),
      evidence: packageToJson(equivocation).evidence.map((e) => ({ kind: e.kind, artifact_id: e.artifact_id })),
      claims: packageToJson(equivocation).claims,
      packageHash: packageHash(equivocation),
    },
    package: packageToJson(falseClaim),
  };

  // ---- The UPIP record of the false claim's re-run (Lane 1 and the payer's spot-check run the same function) ----
  const transcripts: { stdout: string; stderr: string }[] = [];
  const sampled = await spotCheck({
    terms: termsV4,
    suite: streamSuite,
    repository,
    proof,
    indices: [drawn[drawn.length - 1]!],
    inputs: streamInputs({ chainId: BigInt(CHAIN_ID), gasEscrow: GAS_ESCROW, sessionId: streamSession, tranche: 1n }),
    actor: `ioi-arbitration/lane1@${judgeRuntimeHash()}`,
    // The engine's own replay, its transcript kept for the vector (the record holds only its hash).
    replay: async (parameters) => {
      const outcome = await engineReplay(parameters);
      transcripts.push({ stdout: outcome.stdout, stderr: outcome.stderr });
      return outcome;
    },
  });
  const sample = sampled.samples[0]!;
  v.streamSampleUpip = {
    index: sample.index,
    name: sample.name,
    claimed: sample.claimed,
    actual: sample.actual,
    status: sample.status,
    intent: sampleIntent(sample.index, sample.name, 1n),
    stdout: transcripts[0]!.stdout,
    stderr: transcripts[0]!.stderr,
    resultPreimage: `${sample.record.result.exit_code}${transcripts[0]!.stdout}${transcripts[0]!.stderr}`,
    record: sample.record,
  };

  // ---- Smart-account payers (ERC-1271, decision 0035) ----
  // An OwnerWallet (contracts/test) owned by account #0, as account #0's fourth deployment would place it.
  const wallet = getContractAddress({ from: payer.address, nonce: 3n });
  const walletRef: ChannelRef = { terms: { ...ref.terms, payer: wallet, nonce: 3n }, openedAt: ref.openedAt };
  const walletSession = sessionIdOf(domain, walletRef);
  const walletTicket: PaymentTicket = { sessionId: walletSession, provider: provider.address, termsHash: walletRef.terms.termsHash, seq: 1n, cumulativeAmount: 50_000n, receiptRoot: `0x${"00".repeat(32)}` };
  const walletSummary: SettlementSummary = {
    sessionId: walletSession,
    provider: provider.address,
    payer: wallet,
    termsHash: walletRef.terms.termsHash,
    finalSeq: 1n,
    finalAmount: 50_000n,
    finalReceiptRoot: label("ioi protocol vectors: wallet channel root"),
    mode: "Cooperative",
  };
  // The wallet's grant to its signing key (account #2): any method, one year, the wallet's epoch 0.
  const walletGrant = await signSessionKeyGrant({ account: payer, domain, sessionId: walletSession, key: sessionKey.address, expiry: ref.openedAt + 365n * 86_400n, spendCap: (1n << 128n) - 1n, methods: ["*"], epoch: 0n });
  const walletTicketSig = (await signPaymentTicket({ account: payer, domain, ticket: walletTicket })).signature;
  const walletSummarySig = await signSettlementSummary({ account: payer, domain, summary: walletSummary });
  const walletTicketArg = { seq: walletTicket.seq, cumulativeAmount: walletTicket.cumulativeAmount, receiptRoot: walletTicket.receiptRoot, sig: walletTicketSig };
  const g = walletGrant.grant;
  const walletGrantArg = { key: g.key, expiry: g.expiry, spendCap: g.spendCap, capabilities: g.capabilities, epoch: g.epoch, sig: walletGrant.signature };
  const entry = (name: "registerWalletSessionKey" | "closeUnilateralByWallet" | "closeCooperativeByWallet") => {
    const item = gasEscrowAbi.find((x) => x.type === "function" && x.name === name)!;
    return { signature: toFunctionSignature(item as never), selector: toFunctionSelector(item as never) };
  };
  const registeredTopics = encodeEventTopics({ abi: gasEscrowAbi, eventName: "WalletSessionKeyRegistered", args: { sessionId: walletSession, key: sessionKey.address } });
  v.walletPayer = {
    wallet: { address: wallet, contract: "contracts/test/OwnerWallet.sol", owner: payer.address, signingKey: sessionKey.address, magicValue: "0x1626ba7e" },
    channel: channelRefToJson(walletRef),
    sessionId: walletSession,
    isValidSignature: {
      ticket: { ticket: paymentTicketToJson(walletTicket), digest: paymentTicketDigest(domain, walletTicket), signature: walletTicketSig },
      summary: { summary: settlementSummaryToJson(walletSummary), digest: settlementSummaryDigest(domain, walletSummary), signature: walletSummarySig },
      grant: { grant: sessionKeyGrantToJson(g), digest: sessionKeyGrantDigest(domain, g), signature: walletGrant.signature },
    },
    entryPoints: {
      registerWalletSessionKey: {
        ...entry("registerWalletSessionKey"),
        calldata: encodeFunctionData({ abi: gasEscrowAbi, functionName: "registerWalletSessionKey", args: [walletRef.terms, walletRef.openedAt, walletGrantArg] }),
      },
      closeUnilateralByWallet: {
        ...entry("closeUnilateralByWallet"),
        calldata: encodeFunctionData({ abi: gasEscrowAbi, functionName: "closeUnilateralByWallet", args: [walletRef.terms, walletRef.openedAt, walletTicketArg] }),
      },
      closeCooperativeByWallet: entry("closeCooperativeByWallet"),
    },
    registration: {
      record: "_walletGrants[sessionId][grantDigest] = true",
      view: "walletSessionKeyRegistered(bytes32 sessionId, bytes32 grantDigest) returns (bool)",
      event: "WalletSessionKeyRegistered(bytes32 indexed sessionId, address indexed key, bytes32 grantDigest)",
      topics: registeredTopics,
      data: sessionKeyGrantDigest(domain, g),
    },
  };

  // ---- ERC-5267: what eip712Domain() returns on each contract that verifies signatures ----
  const domainOf = (name: string, verifyingContract: Address) => {
    const values = ["0x0f", name, "1", BigInt(CHAIN_ID), verifyingContract, `0x${"00".repeat(32)}`, []] as const;
    return { name, version: "1", chainId: CHAIN_ID, verifyingContract, values };
  };
  const erc5267 = (abi: typeof gasEscrowAbi | typeof disputeManagerAbi | typeof laborGasAbi, name: string, verifyingContract: Address) => {
    const { values, ...rest } = domainOf(name, verifyingContract);
    const returnData = encodeFunctionResult({ abi: abi as typeof gasEscrowAbi, functionName: "eip712Domain", result: values as never });
    return { ...rest, fields: "0x0f", salt: values[5], extensions: [], selector: toFunctionSelector("eip712Domain()"), returnData };
  };
  v.erc5267 = {
    GasEscrow: erc5267(gasEscrowAbi, GAS_ESCROW_DOMAIN_NAME, GAS_ESCROW),
    DisputeManager: erc5267(disputeManagerAbi, DISPUTE_MANAGER_DOMAIN_NAME, DISPUTE_MANAGER),
    LaborGas: erc5267(laborGasAbi, "Labor Gas", LABOR_GAS),
  };

  // ---- Terms v3: a price per MCP tool, listing free (decision 0033) ----
  const termsV3: TermsDocumentV3 = {
    version: "3",
    pricing: { perInvocation: 1000n, perUnit: { unit: "token", price: 20n }, capPerCall: 50_000n, tools: { "get-sum": 7_000n, echo: 2_500n } },
    models: ["model:echo@2"],
    disputes: { windowAfterSettlement: 86_400n, penalties: { RECEIPT_OVER_METERED: 1_000_000n }, refundsFromBond: false },
    requiredReceipts: ["rrsa_request_binding", "rrsa_output_commitment"],
  };
  const v3Calls = [
    { request: { jsonrpc: "2.0", id: 1, method: "tools/list" }, units: 0n },
    { request: { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get-sum", arguments: { a: 2, b: 3 } } }, units: 40n },
    { request: { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "get-env", arguments: {} } }, units: 40n },
    { request: { jsonrpc: "2.0", id: 4, method: "resources/read", params: { uri: "file:///notes.txt" } }, units: 3_000n },
  ];
  v.termsV3 = {
    document: pricingTermsToJson(termsV3),
    canonical: canon(pricingTermsToJson(termsV3)),
    termsHash: termsHashOf(termsV3),
    freeMethods: [...FREE_METHODS],
    calls: v3Calls.map(({ request, units }) => ({
      request,
      offloadPacketHash: keccak256(canonBytes(request)),
      pricedAs: callPricingOf(termsV3, request).kind,
      prepaid: String(prepaidFor(termsV3, request)),
      meteredUnits: String(units),
      price: String(priceFor(termsV3, request, units)),
    })),
  };

  // ---- x402 scheme "ioi-channel" (decision 0034): one paid tools/call of the v3 channel ----
  const x402Ref: ChannelRef = { terms: { ...ref.terms, termsHash: termsHashOf(termsV3), nonce: 4n }, openedAt: ref.openedAt };
  const x402Session = sessionIdOf(domain, x402Ref);
  const x402Call = v3Calls[1]!;
  const x402Params = { chainId: CHAIN_ID, escrow: GAS_ESCROW, provider: provider.address, sessionId: x402Session, termsHash: x402Ref.terms.termsHash, pricing: termsV3, request: x402Call.request };
  const requirements = channelPaymentRequirements(x402Params);
  const required = paymentRequiredResult({ ...x402Params, tool: "get-sum" });
  const x402Ticket: PaymentTicket = { sessionId: x402Session, provider: provider.address, termsHash: x402Ref.terms.termsHash, seq: 1n, cumulativeAmount: prepaidFor(termsV3, x402Call.request), receiptRoot: `0x${"00".repeat(32)}` };
  const x402SignedTicket = await signPaymentTicket({ account: payer, domain, ticket: x402Ticket });
  const x402Receipt: SessionReceipt = {
    sessionId: x402Session,
    seq: 1n,
    offloadPacketHash: keccak256(canonBytes(x402Call.request)),
    outputHash: label("ioi protocol vectors: get-sum result"),
    policyHash,
    modelSnapshotId: "model:echo@2",
    metering: { units: x402Call.units, amount: priceFor(termsV3, x402Call.request, x402Call.units) },
    prevReceiptHash: `0x${"00".repeat(32)}`,
  };
  const x402SignedReceipt = await signSessionReceipt({ account: provider, receipt: x402Receipt });
  const required402 = required.structuredContent as { resource: unknown };
  v.x402Channel = {
    scheme: IOI_CHANNEL_SCHEME,
    x402Version: X402_VERSION,
    channel: channelRefToJson(x402Ref),
    sessionId: x402Session,
    request: x402Call.request,
    paymentRequired: required,
    // What the payer sends in the retried call's _meta["x402/payment"]: x402Client's v2 PaymentPayload, whose
    // `payload` our scheme client fills with the next ticket (and the leaf count the ticket's root covers).
    paymentMeta: X402_PAYMENT_META,
    paymentPayload: { x402Version: X402_VERSION, payload: { ticket: signedPaymentTicketToJson(x402SignedTicket), leafCount: 0 }, resource: required402.resource, accepted: requirements },
    ticketDigest: paymentTicketDigest(domain, x402Ticket),
    responseMeta: X402_PAYMENT_RESPONSE_META,
    paymentResponse: paymentResponseOf({ chainId: CHAIN_ID, payer: payer.address, ticket: x402SignedTicket, receipt: x402SignedReceipt }),
  };

  // The documents a published schema must accept, by schema (checked by the test).
  v.schemaDocuments = {
    terms: ["termsV1.document", "termsV2.document", "termsV3.document", "termsV4.document", "termsOffer.offer.pricing"],
    "challenge-package": ["challengePackage.package"],
    resolution: ["resolution.document"],
    upip: ["upip.record"],
    "progress-proof": ["progressProof.signed", "trancheRequest.request"],
  };
  (v.schemaDocuments as Record<string, string[]>)["challenge-package"]!.push("streamPackage.package");
  (v.schemaDocuments as Record<string, string[]>).upip!.push("streamSampleUpip.record");
  return v;
}

function pairHash(a: Hex, b: Hex): Hex {
  const [x, y] = BigInt(a) <= BigInt(b) ? [a, b] : [b, a];
  return keccak256(`0x${x.slice(2)}${y.slice(2)}`);
}

function closingJson(state: ClosingState) {
  return { deposit: String(state.deposit), seq: String(state.seq), amount: String(state.amount), receiptRoot: state.receiptRoot, feeBps: state.feeBps };
}

/** The vectors file's text. */
export function vectorsText(vectors: ProtocolVectors): string {
  return `${JSON.stringify({ generatedBy: "scripts/protocol-vectors.ts (do not edit by hand)", vectors }, null, 2)}\n`;
}

const BLOCK = /<!-- vector:([A-Za-z0-9]+)(\.[A-Za-z0-9.]+)? -->\n[\s\S]*?<!-- \/vector -->/g;

/** Value at a dotted path in the vectors ("resolution.message"). */
function at(vectors: ProtocolVectors, name: string, dotted: string | undefined): unknown {
  let value: unknown = vectors[name];
  if (value === undefined) throw new RangeError(`docs/protocol.md quotes a vector "${name}" that scripts/protocol-vectors.ts does not generate.`);
  for (const key of (dotted ?? "").split(".").filter(Boolean)) {
    value = (value as Record<string, unknown>)[key];
    if (value === undefined) throw new RangeError(`The vector "${name}" has no field "${dotted}".`);
  }
  return value;
}

/** `doc` with every `<!-- vector:NAME[.path] -->` block rewritten to the vector's JSON. */
export function renderProtocolDoc(doc: string, vectors: ProtocolVectors): string {
  return doc.replace(BLOCK, (_block, name: string, dotted: string | undefined) => {
    const value = at(vectors, name, dotted?.slice(1));
    return `<!-- vector:${name}${dotted ?? ""} -->\n\`\`\`json\n${JSON.stringify(value, null, 2)}\n\`\`\`\n<!-- /vector -->`;
  });
}

/** Names quoted in `doc` (NAME of each block). */
export function quotedVectors(doc: string): string[] {
  return [...doc.matchAll(BLOCK)].map((m) => m[1]!);
}

async function main(): Promise<void> {
  const vectors = await protocolVectors();
  const text = vectorsText(vectors);
  const doc = readFileSync(DOC_PATH, "utf8");
  const rendered = renderProtocolDoc(doc, vectors);
  if (process.argv.includes("--check")) {
    let stale = false;
    if (readFileSync(VECTORS_PATH, "utf8") !== text) stale = true;
    if (rendered !== doc) stale = true;
    if (stale) {
      console.error("docs/protocol-vectors.json or docs/protocol.md is stale: run `npx ts-node --transpile-only scripts/protocol-vectors.ts`.");
      process.exitCode = 1;
    }
    return;
  }
  writeFileSync(VECTORS_PATH, text);
  writeFileSync(DOC_PATH, rendered);
  console.log(`Wrote ${path.relative(ROOT, VECTORS_PATH)} (${Object.keys(vectors).length} vectors) and the quoted blocks of ${path.relative(ROOT, DOC_PATH)}.`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  });
}
