/**
 * Hostile input, generated from one seed, thrown at the provider node and at every parser of untrusted
 * input. The rule under test: bad input is refused with one of the project's typed errors (a BaseError
 * subclass with a literal `name`) or — for garbage a peer sends on a connection — the connection is
 * closed; never a crash, a hang, an untyped error or a value accepted that cannot be used.
 *
 * - The pure parsers, in-process, at high volume (most of the inputs): parseCanonical, decodePacket,
 *   decodeMessage, the artifact parsers, the handshake decoders, parseDocument (JSON and YAML), icsFromJson,
 *   resolutionFromJson, packageFromJson and parsePackage (JSON and YAML text). Whatever a parser accepts
 *   must re-serialise and parse back to the same thing; every call must return within CALL_BOUND_MS.
 * - The provider node inside an established sealed session (a real handshake with the channel's keys), one
 *   message at a time with every wait bounded; the expected outcome of each message is derived from
 *   decoding it locally (refused → the node closes; an invocation, a receipt commit or a close proposal →
 *   exactly one answer: a result or a typed rejection).
 * - The provider node at the transport layer: garbage, truncated and oversized frames, bad handshakes and
 *   sealed garbage on fresh TCP connections; each must be dropped and the node must keep serving.
 * - Afterwards a well-behaved PayerClient streams paid invocations to the same node and both stores agree.
 *
 * Reproduce a run with IOI_FUZZ_SEED=<seed> (printed in the titles; each category has its own PRNG, so a
 * single category can be re-run with --grep). IOI_FUZZ_SCALE multiplies every count. Failing inputs are
 * written to $TMPDIR/ioi-fuzz-<seed>/ and summarised in the assertion message.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import * as net from "node:net";
import os from "node:os";
import path from "node:path";
import hre from "hardhat";
import { keccak256, parseEther, stringToBytes, zeroHash, type Hex, type LocalAccount, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";

import { parseDocument } from "../../arbitration/documents/document";
import { icsFromJson, icsHash, icsToJson } from "../../arbitration/documents/ics";
import { packageFromJson, packageHash, packageToJson, parsePackage } from "../../arbitration/documents/package";
import { resolutionFromJson, resolutionHash, resolutionToJson, type Resolution } from "../../arbitration/lanes/resolution";
import { judgeDeps, upipHashHex, upipRecord, upipResultOf, upipState } from "../../arbitration/documents/upip";
import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { canon, parseCanonical } from "../../channel-client/core/canonical";
import { echoHandler } from "../../channel-client/cli/channel";
import { signDigest, toHighS } from "../../channel-client/core/eip712";
import { openChannel } from "../../channel-client/chain/escrow";
import { receiptLeafFromHashes } from "../../channel-client/core/leaf";
import { PayerClient } from "../../channel-client/node/payer-client";
import { ProviderNode, REPLAYED_RESULT_CODE } from "../../channel-client/node/provider-node";
import { decodeMessage, encodeMessage, type NodeMessage } from "../../channel-client/node/protocol";
import { decodePacket, encodePacket, type Packet } from "../../channel-client/core/packets";
import { receiptCommitToJson, signedReceiptCommitFromJson, signReceiptCommit, type SignedReceiptCommit } from "../../channel-client/core/receipt-commit";
import {
  sessionReceiptHash,
  signedSessionReceiptFromJson,
  signedSessionReceiptToJson,
  signSessionReceipt,
  verifySessionReceipt,
  type SignedSessionReceipt,
} from "../../channel-client/core/receipt";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { ChannelRecord } from "../../channel-client/store/store";
import { settlementSummaryFromJson, settlementSummaryToJson, signSettlementSummary, type SettlementSummary } from "../../channel-client/core/summary";
import { channelRefFromJson, channelRefToJson, NATIVE_ASSET, pricingTermsFromJson, pricingTermsToJson, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { paymentTicketHash, signedPaymentTicketFromJson, signedPaymentTicketToJson, signPaymentTicket, type SignedPaymentTicket } from "../../channel-client/core/ticket";
import {
  acceptTry,
  connectSecure,
  createInit,
  decodeInit,
  decodeTry,
  verifyInit,
  encodeFrame,
  encodeHandshakeMessage,
  encodeKeyConfirmation,
  FrameDecoder,
  initDigest,
  initToJson,
  RecordOpener,
  RecordSealer,
  encodeDataBatch,
  RecordType,
  sealRecord,
  type ChannelOpenInit,
  type SecureConnection,
} from "../../channel-client/transport";
import { createTry } from "../../channel-client/transport/handshake";
import { serveEmbeddedNetwork } from "../../scripts/embedded-rpc";
import { BAD_DELIVERABLE, h, sampleIcsJson, samplePackageJson, SUITE } from "../arbitration/fixtures/samples";
import { escrowFixture, hardhatAccount, makeTerms, ROLE } from "../helpers/fixtures";
import { thrown } from "../helpers/assert";
import { mulberry32, seedFrom, type Prng } from "../helpers/prng";
import { within } from "../helpers/within";
import { sampleReceipt, sampleTicket, SESSION_ID } from "../helpers/samples";
import {
  describeError,
  FuzzLedger,
  isCanonicalRefusal,
  isTyped,
  measure,
  mutateBytes,
  mutateText,
  mutateValue,
  mutateYaml,
  nest,
  randomBytes,
  randomStyle,
  randomValue,
  renderJson,
  subSeed,
  typedErrorNames,
  WEIRD_STRINGS,
  yamlDocument,
  type Violation,
} from "./fuzz-helpers";

const SEED = seedFrom("IOI_FUZZ_SEED");
const SCALE = Number(process.env.IOI_FUZZ_SCALE ?? 1);
const scaled = (n: number) => Math.max(1, Math.round(n * SCALE));
/** No single parser call may take longer than this. */
const CALL_BOUND_MS = 2_000;
/** The node must answer (or close) within this after a message; generous for a loaded 2-core machine. */
const REPLY_BOUND_MS = 5_000;
/** The wait in the BUG cases, each of which normally gets its answer in milliseconds. */
const BUG_BOUND_MS = 3_000;
const HOST = "127.0.0.1";
const ROOT = path.resolve(__dirname, "../..");
/** Hardhat's well-known key for account #3 (ROLE.provider), for the provider process. */
const PROVIDER_KEY: Hex = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";
/** `mcp.params` texts that JSON.parse reads but canonical JSON cannot hold (a lone surrogate; 1e400 → Infinity). */
const REFUSED_MCP = ['{"text":"a\\ud800b"}', '{"n":1e400}'] as const;

const PRICE = parseEther("0.0001");
const DEPOSIT = parseEther("1");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const ISSUED_AT = "2026-11-21T00:00:00Z";
const request = (i: number) => ({ jsonrpc: "2.0", id: `invoke-${i}`, method: "tools/echo", params: { text: `call ${i}` } });
const utf8 = (text: string) => new TextEncoder().encode(text);

const { names: TYPED, mismatched: MISMATCHED_NAMES } = typedErrorNames();

async function fuzzFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce: 0xf022n });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
  return { ...fx, publicClient, opened };
}
type Fx = Awaited<ReturnType<typeof fuzzFixture>>;


/** canon(value), or — for values canonical JSON refuses (NaN, lone surrogates, ...) — a compact rendering. */
function wire(value: unknown): string {
  try {
    return canon(value);
  } catch {
    return renderJson(mulberry32(1), value, { order: "sorted", space: "none", escapes: false, exoticNumbers: false, duplicateKeys: 0 });
  }
}

/** A printable rendering of a JS value, marking what JSON cannot show. */
function showValue(value: unknown): string {
  try {
    const text = JSON.stringify(value, (_k, v: unknown) =>
      typeof v === "number" && (!Number.isFinite(v) || Object.is(v, -0)) ? `«${Object.is(v, -0) ? "-0" : v}»` : typeof v === "bigint" ? `«${v}n»` : v === undefined ? "«undefined»" : v,
    );
    return text ?? String(value);
  } catch (error) {
    return `<unprintable: ${(error as Error).message}>`;
  }
}

function assertNoPollution(): void {
  const probe = {} as Record<string, unknown>;
  if (probe.polluted !== undefined || Object.prototype.hasOwnProperty.call(Object.prototype, "polluted")) {
    throw new Error("Object.prototype was polluted by a parser");
  }
}

describe(`adversarial fuzz: hostile input to the nodes and the parsers (seed ${SEED}, IOI_FUZZ_SEED reproduces)`, function () {
  this.timeout(600_000);
  const ledger = new FuzzLedger(SEED);
  const unhandled: Array<{ reason: unknown; at: string }> = [];
  let current = "setup";
  const onUnhandled = (reason: unknown) => unhandled.push({ reason, at: current });
  const wall = new Map<string, number>();
  const started = performance.now();

  let fx: Fx;
  let dir: string;
  let providerStore: SqliteStore;
  let payerStore: SqliteStore;
  let node: ProviderNode;
  let nodeRestarts = 0;
  const logs: string[] = [];
  const stranger = hardhatAccount(ROLE.stranger);

  async function startNode(): Promise<ProviderNode> {
    return ProviderNode.start({
      account: fx.provider,
      publicClient: fx.publicClient,
      domain: fx.domain,
      store: providerStore,
      pricing,
      handler: echoHandler,
      modelSnapshotId: "worker:echo@fuzz",
      log: (line) => logs.push(line),
      // The fuzzer hammers the parsers from one source address as fast as it can; the per-source and strangers'
      // rate limits (issue 28 item 5, tested in node-flood.test.ts) would turn most cases into refusals before
      // any byte is parsed, so they are lifted here.
      limits: { handshakesPerSecondPerSource: 1_000_000, strangerHandshakesPerSecond: 1_000_000, maxPendingPerSource: 4_096, maxConnectionsPerSource: 4_096, handshakeTimeoutMs: 2_000 },
    });
  }

  /** Stops (bounded) and restarts the node on the same store: the recovery after a hang. */
  async function restartNode(reason: string): Promise<void> {
    nodeRestarts++;
    logs.push(`[fuzz] restarting the node: ${reason}`);
    await Promise.race([node.stop().catch(() => undefined), new Promise((r) => setTimeout(r, 15_000))]);
    node = await startNode();
  }

  before(async function () {
    this.timeout(120_000);
    process.on("unhandledRejection", onUnhandled);
    fx = await loadFixture(fuzzFixture);
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-fuzz-"));
    providerStore = SqliteStore.open(path.join(dir, "provider.db"));
    payerStore = SqliteStore.open(path.join(dir, "payer.db"));
    const record: ChannelRecord = { sessionId: fx.opened.sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" };
    await payerStore.putChannel(record);
    node = await startNode();
  });

  after(async () => {
    process.off("unhandledRejection", onUnhandled);
    await node?.stop().catch(() => undefined);
    await providerStore?.close().catch(() => undefined);
    await payerStore?.close().catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
    const rows = [...ledger.counts].map(([category, n]) => {
      const worst = ledger.maxMs.get(category);
      const outcomes = [...(ledger.outcomes.get(category) ?? new Map<string, number>())].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([k, v]) => `${k} ${v}`).join(", ");
      return `      ${category.padEnd(44)} ${String(n).padStart(6)}  max ${worst ? `${worst.ms.toFixed(1)} ms (#${worst.index})` : "-"}  ${outcomes}`;
    });
    console.log(
      [
        `    fuzz report (seed ${SEED}): ${ledger.total()} inputs, ${ledger.violations.length} violations, ${nodeRestarts} node restarts, ${unhandled.length} unhandled rejections, wall ${((performance.now() - started) / 1000).toFixed(1)} s`,
        ...rows,
        ...[...wall].map(([k, ms]) => `      wall ${k}: ${(ms / 1000).toFixed(1)} s`),
      ].join("\n"),
    );
    if (ledger.latent.length > 0) {
      const groups = new Map<string, { n: number; example: Violation }>();
      for (const v of ledger.latent) {
        const key = `${v.category}: ${v.detail.split(";")[0]!.replace(/\$\S*/g, "$…").slice(0, 120)}`;
        const g = groups.get(key);
        if (g) g.n++;
        else groups.set(key, { n: 1, example: v });
      }
      console.log(
        [`    latent findings (value parsers accepting what canonical JSON refuses; unreachable through parseDocument): ${ledger.latent.length}`]
          .concat([...groups].slice(0, 12).map(([k, g]) => `      ${g.n}× ${k} — e.g. #${g.example.index}: ${g.example.detail.slice(0, 160)}`))
          .join("\n"),
      );
    }
  });

  const violationsOf = (prefix: string) => (v: Violation) => v.category.startsWith(prefix);

  /*//////////////////////////////////////////////////////////////
                          THE PURE PARSERS
  //////////////////////////////////////////////////////////////*/

  /**
   * `direct`: the parser was handed a JS value rather than text. Every product caller parses text with
   * parseDocument / parseJson first, which refuse lone surrogates, nesting beyond 64 levels and non-finite
   * numbers for the whole document; a value parser that lets such a value through (so that hashing it later
   * throws a typed InvalidJsonError) is reported as a latent finding, not failed.
   */
  type ParserCase = { input: string | Uint8Array; note: string; call: () => unknown; valid?: (value: unknown) => void; direct?: boolean };
  /** JSON text cannot make a sparse array; only a JS caller can (Array.prototype.map skips the holes). */
  const sparse = (note: string) => note.includes("array sparse");

  /** Runs `count` generated cases of one category; records counts, timings, outcomes and violations. */
  function runParser(category: string, count: number, make: (prng: Prng, i: number) => ParserCase): void {
    const prng = mulberry32(subSeed(SEED, category));
    const t0 = performance.now();
    for (let i = 0; i < count; i++) {
      current = `${category} #${i}`;
      let c: ParserCase;
      try {
        c = make(prng, i);
      } catch (error) {
        throw new Error(`the generator of ${category} failed at #${i}: ${(error as Error).stack}`);
      }
      ledger.count(category);
      const r = measure(c.call);
      ledger.time(category, r.ms, i);
      if (r.ms > CALL_BOUND_MS) ledger.violate({ category, index: i, kind: "slow call", detail: `${r.ms.toFixed(0)} ms (bound ${CALL_BOUND_MS} ms); ${c.note}`, input: c.input });
      if (r.ok) {
        ledger.outcome(category, "accepted");
        if (c.valid) {
          const v = measure(() => c.valid!(r.value));
          if (!v.ok && c.direct && (isCanonicalRefusal(v.error) || sparse(c.note))) {
            const { detail } = describeError(v.error);
            ledger.outcome(category, "accepted, unhashable (latent)");
            ledger.latent.push({ category, index: i, kind: "a value parser accepted what canonical JSON refuses", detail: `${detail}; ${c.note}`, input: typeof c.input === "string" ? c.input.slice(0, 300) : "" });
          } else if (!v.ok) {
            const { detail, stack } = describeError(v.error);
            ledger.violate({ category, index: i, kind: "accepted a value that does not round-trip", detail: `${detail}; ${c.note}`, input: c.input, stack });
          }
        }
      } else if (isTyped(r.error, TYPED)) {
        ledger.outcome(category, (r.error as Error).name);
      } else {
        const { detail, stack } = describeError(r.error);
        ledger.outcome(category, `UNTYPED ${(r.error as Error)?.name ?? typeof r.error}`);
        ledger.violate({ category, index: i, kind: "untyped error", detail: `${detail}; ${c.note}`, input: c.input, stack });
      }
    }
    wall.set(category, performance.now() - t0);
    assertNoPollution();
  }


  /** Text of a base value, damaged in one of several ways (value mutation + rendering, text, bytes, size). */
  function damaged(prng: Prng, base: unknown, options: { canonicalShare?: number; huge?: boolean } = {}): { input: string | Uint8Array; note: string } {
    const r = prng.next();
    if (r < (options.canonicalShare ?? 0.05)) return { input: wire(base), note: "unmodified" };
    if (r < 0.55) {
      const m = mutateValue(prng, base, { huge: options.huge });
      const style = prng.chance(0.6) ? undefined : randomStyle(prng);
      return { input: style ? renderJson(prng, m.value, style) : wire(m.value), note: `${m.op}${style ? `; rendered ${JSON.stringify(style)}` : ""}` };
    }
    if (r < 0.7) {
      const style = randomStyle(prng);
      return { input: renderJson(prng, base, style), note: `re-rendered ${JSON.stringify(style)}` };
    }
    if (r < 0.92) {
      const m = mutateText(prng, wire(base));
      return { input: m.text, note: m.op };
    }
    const m = mutateBytes(prng, utf8(wire(base)));
    return { input: m.bytes, note: m.op };
  }

  /** A few 5 MB inputs per category (kept rare: each costs tens of milliseconds to build). */
  const hugeAt = (count: number) => new Set(Array.from({ length: 4 }, (_, k) => Math.floor(((k + 1) * count) / 5)));

  let samples: {
    packets: unknown[];
    messages: unknown[];
    ticket: SignedPaymentTicket;
    receipt: SignedSessionReceipt;
    commit: SignedReceiptCommit;
    summary: SettlementSummary;
    initJson: unknown;
    tryJson: unknown;
    packageJson: unknown;
    packageYaml: string;
    icsJson: unknown;
    icsSchemaJson: unknown;
    resolutionJson: unknown;
  };

  before(async function () {
    this.timeout(120_000);
    const domain = fx.domain;
    const ticket = await signPaymentTicket({ account: fx.payer, domain, ticket: sampleTicket() });
    const receipt = await signSessionReceipt({ account: fx.provider, receipt: sampleReceipt() });
    const commit = await signReceiptCommit(fx.provider, fx.domain, { sessionId: SESSION_ID, leafCount: 1n, root: h("root") });
    const summary: SettlementSummary = { sessionId: SESSION_ID, provider: fx.provider.address, payer: fx.payer.address, termsHash: h("terms"), finalSeq: 3n, finalAmount: 3000n, finalReceiptRoot: h("root"), mode: "Cooperative" };
    const mcp = { jsonrpc: "2.0", id: "invoke-002", method: "tools/echo", params: { text: "hi", count: 3 } };
    const packets: Packet[] = [
      { pkt_version: "1", packet_type: "PKT_LEASE_ISSUE", issued_at: ISSUED_AT, session_id: SESSION_ID, tenant_id: "tenant_acme", payload: { mcp } },
      { pkt_version: "1", packet_type: "PKT_ACTION_INVOKE", issued_at: ISSUED_AT, session_id: SESSION_ID, lease_id: "lease_1", payload: { mcp, ticket, leaf_count: "0" } },
      {
        pkt_version: "1",
        packet_type: "PKT_ACTION_RESULT",
        issued_at: ISSUED_AT,
        session_id: SESSION_ID,
        action_result_id: "res_1",
        payload: { mcp: { jsonrpc: "2.0", id: "invoke-002", result: { text: "hi" } }, receipt, policy: { policy_hash: h("policy"), decision: "approved", enforced_bounds: ["capability_match"] } },
      },
      { pkt_version: "1", packet_type: "PKT_RECEIPT_COMMIT", issued_at: ISSUED_AT, session_id: SESSION_ID, payload: { commit } },
    ];
    const controls: NodeMessage[] = [
      { type: "session.open", ref: fx.opened.ref, pricing },
      { type: "session.ready", lastSeq: 7n, leafCount: 7n, deposit: DEPOSIT },
      { type: "reject", seq: 3n, error: "TicketUnderpaidError", message: "Ticket seq 3 adds 1; one invocation costs 1000." },
      { type: "close.propose", summary, signature: ticket.signature },
      { type: "close.countersign", signature: receipt.signature },
      { type: "steps.request", fromSeq: 5n, limit: 64 },
      { type: "steps", steps: [{ ticket, receipt }] },
    ];
    const { init } = await createInit({ account: fx.payer, sessionId: SESSION_ID });
    const { tryMessage } = await createTry({ account: fx.provider, init });
    const packageJson = samplePackageJson();
    const icsJson = sampleIcsJson();
    const icsSchemaJson = sampleIcsJson({
      rubric: {
        version: 2,
        items: [
          { id: "passes_tests", kind: "test_suite" },
          { id: "schema", kind: "json_schema", file: "out/result.json", schema: { type: "object", required: ["a"], properties: { a: { type: "integer", minimum: 0 }, b: { type: "string", pattern: "^[a-z]+$" } } } },
          { id: "pinned", kind: "hash_match", file: "LICENSE", hash: keccak256(stringToBytes("MIT")) },
          { id: "readable", kind: "semantic", description: "The code is readable." },
        ],
      },
    });
    samples = {
      packets: packets.map((p) => JSON.parse(encodePacket(p)) as unknown),
      messages: controls.map((m) => JSON.parse(new TextDecoder().decode(encodeMessage(m))) as unknown),
      ticket,
      receipt,
      commit,
      summary,
      initJson: JSON.parse(new TextDecoder().decode(encodeHandshakeMessage(init))) as unknown,
      tryJson: JSON.parse(new TextDecoder().decode(encodeHandshakeMessage(tryMessage))) as unknown,
      packageJson,
      packageYaml: yamlDocument(packageJson),
      icsJson,
      icsSchemaJson,
      resolutionJson: sampleResolutionJson(packageJson),
    };
    // The bases themselves must be valid, or the fuzz would measure nothing.
    expect(packageHash(parsePackage(samples.packageYaml, "yaml"))).to.equal(packageHash(packageFromJson(packageJson)));
    icsFromJson(icsSchemaJson);
    resolutionFromJson(samples.resolutionJson);
    for (const p of samples.packets) decodePacket(canon(p));
    for (const m of samples.messages) decodeMessage(utf8(canon(m)));
  });

  it("collects the typed error names from the modules' exports (each a literal name equal to its class name)", () => {
    expect(MISMATCHED_NAMES).to.deep.equal([]);
    for (const name of ["InvalidJsonError", "InvalidFieldError", "HandshakeError", "FrameTooLargeError", "InvalidYamlError", "InvalidPackageError", "ProviderRejectedError", "StoreWriteError"]) {
      expect(TYPED.has(name), name).to.equal(true);
    }
    expect(TYPED.has("BaseError")).to.equal(false);
    expect(TYPED.has("TypeError")).to.equal(false);
  });

  it(`parseCanonical: ${scaled(15_000)} mutated documents (seed ${SEED})`, () => {
    const category = "parser parseCanonical";
    const count = scaled(15_000);
    const huge = hugeAt(count);
    const bases = [...samples.packets, ...samples.messages, samples.icsJson, samples.initJson];
    runParser(category, count, (prng, i) => {
      const base = prng.chance(0.5) ? prng.pick(bases) : randomValue(prng, 0, false);
      const maxBytes = prng.pick([undefined, undefined, 256, 4096]);
      let { input, note }: { input: string | Uint8Array; note: string } = damaged(prng, base, { canonicalShare: 0.12 });
      if (huge.has(i)) ({ input, note } = { input: canon({ a: "x".repeat(5 * 1024 * 1024) }), note: "5 MB string" });
      else if (prng.chance(0.03)) ({ input, note } = { input: `{"a":${"[".repeat(10_000)}${"]".repeat(10_000)}}`, note: "10 000 levels" });
      if (typeof input === "string" && prng.chance(0.5)) [input, note] = [utf8(input), `${note} (as UTF-8 bytes)`];
      return {
        input,
        note,
        call: () => parseCanonical(input, { maxBytes }),
        valid: (value) => {
          const exact = typeof input === "string" ? canon(value) === input : Buffer.compare(Buffer.from(utf8(canon(value))), Buffer.from(input)) === 0;
          if (!exact) throw new Error("accepted input that is not byte for byte the canonical form of what it parsed to");
        },
      };
    });
    expect(ledger.violations.filter(violationsOf(category)), ledger.summary(violationsOf(category))).to.deep.equal([]);
  });

  it(`decodePacket: ${scaled(15_000)} mutated PKT envelopes (seed ${SEED})`, () => {
    const category = "parser decodePacket";
    const count = scaled(15_000);
    const huge = hugeAt(count);
    runParser(category, count, (prng, i) => {
      const base = prng.pick(samples.packets);
      const { input, note } = huge.has(i) ? { input: wire(mutateValue(prng, base, { only: ["string"], huge: true }).value), note: "huge string" } : damaged(prng, base);
      return {
        input,
        note,
        call: () => decodePacket(input),
        valid: (value) => {
          const again = encodePacket(value as Packet);
          if (encodePacket(decodePacket(again)) !== again) throw new Error("the decoded packet does not re-encode stably");
        },
      };
    });
    expect(ledger.violations.filter(violationsOf(category)), ledger.summary(violationsOf(category))).to.deep.equal([]);
  });

  it(`decodeMessage (node protocol): ${scaled(12_000)} mutated control messages and packets (seed ${SEED})`, () => {
    const category = "parser decodeMessage";
    const bases = [...samples.messages, ...samples.messages, ...samples.packets];
    runParser(category, scaled(12_000), (prng) => {
      const { input, note } = damaged(prng, prng.pick(bases));
      const bytes = typeof input === "string" ? utf8(input) : input;
      return {
        input,
        note,
        call: () => decodeMessage(bytes),
        valid: (value) => {
          const again = encodeMessage(value as NodeMessage);
          const back = encodeMessage(decodeMessage(again));
          if (Buffer.compare(Buffer.from(again), Buffer.from(back)) !== 0) throw new Error("the decoded message does not re-encode stably");
        },
      };
    });
    expect(ledger.violations.filter(violationsOf(category)), ledger.summary(violationsOf(category))).to.deep.equal([]);
  });

  it(`artifact parsers (ticket, receipt, commit, summary, channel ref, pricing): ${scaled(23_000)} mutated values (seed ${SEED})`, () => {
    const category = "parser artifacts (values)";
    const parsers: Array<[string, unknown, (v: unknown) => unknown, (x: never) => unknown]> = [
      ["SignedPaymentTicket", signedPaymentTicketToJson(samples.ticket), signedPaymentTicketFromJson, signedPaymentTicketToJson],
      ["SignedSessionReceipt", signedSessionReceiptToJson(samples.receipt), signedSessionReceiptFromJson, signedSessionReceiptToJson],
      ["SignedReceiptCommit", { commit: receiptCommitToJson(samples.commit.commit), signature: samples.commit.signature }, signedReceiptCommitFromJson, (x: SignedReceiptCommit) => ({ commit: receiptCommitToJson(x.commit), signature: x.signature })],
      ["SettlementSummary", settlementSummaryToJson(samples.summary), settlementSummaryFromJson, settlementSummaryToJson],
      ["ChannelRef", channelRefToJson(fx.opened.ref), channelRefFromJson, channelRefToJson],
      ["PricingTerms", pricingTermsToJson(pricing), pricingTermsFromJson, pricingTermsToJson],
    ];
    const huge = hugeAt(scaled(23_000));
    runParser(category, scaled(23_000), (prng, i) => {
      const [name, base, fromJson, toJson] = prng.pick(parsers);
      const m = mutateValue(prng, base, { max: 3, huge: huge.has(i) });
      return {
        input: showValue(m.value),
        note: `${name}: ${m.op}`,
        direct: true,
        call: () => fromJson(m.value),
        valid: (value) => {
          const json = canon(toJson(value as never));
          if (canon(toJson(fromJson(JSON.parse(json)) as never)) !== json) throw new Error(`${name} does not round-trip`);
        },
      };
    });
    expect(ledger.violations.filter(violationsOf(category)), ledger.summary(violationsOf(category))).to.deep.equal([]);
  });

  it(`handshake decoders (ChannelOpenInit, ChannelOpenTry): ${scaled(8_000)} mutated messages (seed ${SEED})`, () => {
    const category = "parser handshake decodeInit/decodeTry";
    runParser(category, scaled(8_000), (prng) => {
      const isInit = prng.chance(0.5);
      const { input, note } = damaged(prng, isInit ? samples.initJson : samples.tryJson, { canonicalShare: 0.1 });
      const bytes = typeof input === "string" ? utf8(input) : input;
      return {
        input,
        note: `${isInit ? "Init" : "Try"}: ${note}`,
        call: () => (isInit ? decodeInit(bytes) : decodeTry(bytes)),
        valid: (value) => {
          const again = encodeHandshakeMessage(value as ChannelOpenInit);
          if (Buffer.compare(Buffer.from(again), Buffer.from(bytes)) !== 0) throw new Error("accepted bytes that re-encode differently (a signed message must have one spelling)");
        },
      };
    });
    expect(ledger.violations.filter(violationsOf(category)), ledger.summary(violationsOf(category))).to.deep.equal([]);
  });

  // FIXED (found by this fuzz, minor): parseCanonical decodes byte input with TextDecoder, which silently drops a
  // leading UTF-8 BOM (EF BB BF), and then compares the re-serialisation with the decoded text. So the bytes
  // BOM ‖ canonical-JSON pass as canonical though they are not (the string form is refused). decodeInit and
  // decodeTry (handshake) use it, so a ChannelOpenInit/Try has two accepted wire spellings. Correct
  // behaviour: NonCanonicalJsonError (or InvalidJsonError) for the BOM-prefixed bytes.
  it("found by fuzzing, fixed: parseCanonical refuses canonical JSON bytes preceded by a UTF-8 BOM", () => {
    const text = canon({ a: 1, b: "x" });
    expect(thrown(() => parseCanonical(`\ufeff${text}`)).name, "string input").to.be.oneOf(["InvalidJsonError", "NonCanonicalJsonError"]);
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...utf8(text)]);
    const r = measure(() => parseCanonical(bytes));
    expect(r.ok, `parseCanonical accepted the bytes EF BB BF ${JSON.stringify(text)}`).to.equal(false);
  });

  it(`parseDocument (JSON and YAML): ${scaled(6_000)} mutated documents (seed ${SEED})`, () => {
    const category = "parser parseDocument";
    const count = scaled(6_000);
    const huge = hugeAt(count);
    const bases: unknown[] = [samples.icsJson, { a: 1, b: ["x", { c: null }], t: true }, samples.messages[0], samples.packets[1]];
    const heavy = new Set(Array.from({ length: 6 }, (_, k) => Math.floor(((k + 0.5) * count) / 6)));
    runParser(category, count, (prng, i) => {
      const base = prng.chance(0.4) ? prng.pick(bases) : { doc: randomValue(prng, 0, false), n: prng.int(0, 1000) };
      const format = prng.pick(["auto", "auto", "auto", "json", "yaml"] as const);
      let input: string | Uint8Array;
      let note: string;
      const r = prng.next();
      if (huge.has(i)) [input, note] = [prng.chance(0.5) ? `a: "${"x".repeat(5 * 1024 * 1024)}"\n` : `{"a":"${"x".repeat(5 * 1024 * 1024)}"}`, "5 MB string"];
      else if (heavy.has(i)) ({ text: input, op: note } = mutateYaml(prng, yamlDocument(base), true));
      else if (r < 0.4) ({ input, note } = damaged(prng, base));
      else if (r < 0.5) [input, note] = [yamlDocument(base), "YAML"];
      else if (r < 0.92) {
        const yaml = prng.chance(0.3) ? yamlDocument(mutateValue(prng, base).value) : yamlDocument(base);
        const m = mutateYaml(prng, yaml);
        [input, note] = [m.text, `YAML ${m.op}`];
      } else {
        const m = mutateBytes(prng, utf8(yamlDocument(base)));
        [input, note] = [m.bytes, `YAML bytes ${m.op}`];
      }
      return {
        input,
        note: `${note} (format ${format})`,
        call: () => parseDocument(input, { format }),
        valid: (value) => {
          canon(value);
          assertPlain(value);
        },
      };
    });
    expect(ledger.violations.filter(violationsOf(category)), ledger.summary(violationsOf(category))).to.deep.equal([]);
  });

  it(`icsFromJson: ${scaled(6_000)} mutated ICS documents, hostile JSON Schemas included, values and YAML (seed ${SEED})`, () => {
    const category = "parser icsFromJson";
    const count = scaled(6_000);
    const huge = hugeAt(count);
    runParser(category, count, (prng, i) => {
      const base = prng.chance(0.75) ? samples.icsJson : samples.icsSchemaJson;
      const r = prng.next();
      if (r < 0.72 || huge.has(i)) {
        const m = mutateValue(prng, base, { max: 3, huge: huge.has(i) });
        return { input: showValue(m.value), note: m.op, call: () => icsFromJson(m.value), valid: icsRoundTrip, direct: true };
      }
      if (r < 0.8) {
        const ics = structuredClone(samples.icsSchemaJson) as { rubric: { items: Array<Record<string, unknown>> } };
        const schema = hostileSchema(prng);
        ics.rubric.items[1]!.schema = schema;
        return { input: showValue(schema), note: "hostile JSON Schema", call: () => icsFromJson(ics), valid: icsRoundTrip, direct: true };
      }
      const yaml = prng.chance(0.5) ? yamlDocument(mutateValue(prng, base).value) : mutateYaml(prng, yamlDocument(base)).text;
      return { input: yaml, note: "YAML text", call: () => icsFromJson(parseDocument(yaml, { what: "ICS" })), valid: icsRoundTrip };
    });
    expect(ledger.violations.filter(violationsOf(category)), ledger.summary(violationsOf(category))).to.deep.equal([]);
  });

  // FIXED (found by this fuzz): icsFromJson compiles every json_schema rubric item with Ajv while parsing, and
  // Ajv needs ~1-2 ms per property (measured on this machine: 500 properties 1.2 s, 1 000 2.3 s, 2 000 3.5-5.9 s;
  // around 4 000 it overflows the stack, which is caught as a typed InvalidIcsError). An ICS may carry 32
  // such items and a ChallengePackage of 4 MiB several ICS evidence items, so one hostile package costs an
  // arbitrator minutes of CPU before any check runs. Correct behaviour: parse or refuse (typed) within
  // CALL_BOUND_MS, e.g. by bounding the size of a schema before compiling it.
  it(`found by fuzzing, fixed: an ICS whose JSON Schema has 2 000 properties (100 kB) is parsed or refused within ${CALL_BOUND_MS} ms`, () => {
    current = "bug slow schema";
    const schema = { type: "object", properties: Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`f${SEED}_${i}`, { type: "string", pattern: `^a{${i % 50}}$` }])) };
    const ics = structuredClone(samples.icsSchemaJson) as { rubric: { items: Array<Record<string, unknown>> } };
    ics.rubric.items[1]!.schema = schema;
    const text = JSON.stringify(ics);
    const r = measure(() => icsFromJson(parseDocument(text, { what: "ICS" })));
    if (!r.ok) expect(isTyped(r.error, TYPED), describeError(r.error).detail).to.equal(true);
    expect(r.ms, `icsFromJson(parseDocument(<${text.length}-byte ICS>)) took ${r.ms.toFixed(0)} ms`).to.be.below(CALL_BOUND_MS);
  });

  it(`resolutionFromJson: ${scaled(8_000)} mutated resolutions, values and JSON text (seed ${SEED})`, () => {
    const category = "parser resolutionFromJson";
    const count = scaled(8_000);
    const huge = hugeAt(count);
    runParser(category, count, (prng, i) => {
      if (prng.chance(0.8) || huge.has(i)) {
        const m = mutateValue(prng, samples.resolutionJson, { max: 3, huge: huge.has(i) });
        return { input: showValue(m.value), note: m.op, call: () => resolutionFromJson(m.value), valid: resolutionRoundTrip, direct: true };
      }
      const { input, note } = damaged(prng, samples.resolutionJson);
      return { input, note, call: () => resolutionFromJson(parseDocument(input, { format: "json", what: "Resolution" })), valid: resolutionRoundTrip };
    });
    expect(ledger.violations.filter(violationsOf(category)), ledger.summary(violationsOf(category))).to.deep.equal([]);
  });

  it(`packageFromJson: ${scaled(5_000)} mutated ChallengePackage values (seed ${SEED})`, () => {
    const category = "parser packageFromJson (values)";
    const count = scaled(5_000);
    const huge = hugeAt(count);
    runParser(category, count, (prng, i) => {
      const m = mutateValue(prng, samples.packageJson, { max: 3, huge: huge.has(i) });
      return { input: showValue(m.value), note: m.op, call: () => packageFromJson(m.value), valid: packageRoundTrip, direct: true };
    });
    expect(ledger.violations.filter(violationsOf(category)), ledger.summary(violationsOf(category))).to.deep.equal([]);
  });

  it(`parsePackage (JSON text): ${scaled(3_000)} mutated ChallengePackage documents (seed ${SEED})`, () => {
    const category = "parser parsePackage (JSON text)";
    const count = scaled(3_000);
    const huge = hugeAt(count);
    runParser(category, count, (prng, i) => {
      const { input, note } = huge.has(i)
        ? { input: wire(mutateValue(prng, samples.packageJson, { only: ["string"], huge: true }).value), note: "huge string" }
        : damaged(prng, samples.packageJson);
      return { input, note, call: () => parsePackage(input, prng.pick(["auto", "json"] as const)), valid: packageRoundTrip };
    });
    expect(ledger.violations.filter(violationsOf(category)), ledger.summary(violationsOf(category))).to.deep.equal([]);
  });

  it(`parsePackage (YAML text): ${scaled(500)} mutated ChallengePackage documents: anchors, aliases, tags, merge keys, directives (seed ${SEED})`, () => {
    const category = "parser parsePackage (YAML text)";
    runParser(category, scaled(500), (prng) => {
      const r = prng.next();
      let text: string;
      let note: string;
      if (r < 0.45) {
        const m = mutateValue(prng, samples.packageJson);
        [text, note] = [yamlDocument(m.value), `YAML of ${m.op}`];
      } else {
        const m = mutateYaml(prng, samples.packageYaml);
        [text, note] = [m.text, m.op];
      }
      return { input: text, note, call: () => parsePackage(text, prng.pick(["auto", "yaml"] as const)), valid: packageRoundTrip };
    });
    expect(ledger.violations.filter(violationsOf(category)), ledger.summary(violationsOf(category))).to.deep.equal([]);
  });

  /*//////////////////////////////////////////////////////////////
                  THE PROVIDER NODE, INSIDE A SESSION
  //////////////////////////////////////////////////////////////*/

  /** A sealed connection bound to the channel, as a payer would hold it. */
  class Peer {
    readonly replies: Uint8Array[] = [];
    closed = false;
    closeError: string | undefined;
    #wake: (() => void) | undefined;

    constructor(readonly connection: SecureConnection) {
      connection.on("message", (bytes) => {
        this.replies.push(bytes);
        this.#wake?.();
      });
      connection.on("close", (error) => {
        this.closed = true;
        this.closeError = error?.name;
        this.#wake?.();
      });
    }

    /** Waits (bounded) for the next reply or the close. */
    async next(boundMs: number): Promise<"reply" | "closed" | "timeout"> {
      const deadline = performance.now() + boundMs;
      for (;;) {
        if (this.replies.length > 0) return "reply";
        if (this.closed) return "closed";
        const left = deadline - performance.now();
        if (left <= 0) return "timeout";
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          this.#wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.#wake = undefined;
      }
    }
  }

  async function openPeer(port: number, options: { maxMessageBytes?: number; sessionAccount?: LocalAccount } = {}): Promise<Peer> {
    const connection = await connectSecure({ host: HOST, port, account: fx.payer, sessionId: fx.opened.sessionId, expectedPeer: fx.provider.address, timeoutMs: 15_000, maxMessageBytes: options.maxMessageBytes });
    const peer = new Peer(connection);
    await connection.send(encodeMessage({ type: "session.open", ref: fx.opened.ref, pricing }));
    const outcome = await peer.next(15_000);
    if (outcome !== "reply") throw new Error(`the node did not confirm the session (${outcome})`);
    const ready = decodeMessage(peer.replies.shift()!);
    if (!("type" in ready) || ready.type !== "session.ready") throw new Error(`expected session.ready, received ${showValue(ready)}`);
    return peer;
  }

  /** Where the provider stands, and the messages a correct payer would send next (signed, cached per state). */
  type SessionState = {
    size: number;
    latestSeq: bigint;
    latestAmount: bigint;
    root: Hex;
    prefixRoot: (n: number) => Hex;
    template: SignedPaymentTicket;
    /** Signed on first use (most messages need only the ticket). */
    commit: () => Promise<SignedReceiptCommit>;
    close: () => Promise<{ summary: SettlementSummary; signature: Hex }>;
  };
  const once = <T>(make: () => Promise<T>) => {
    let value: Promise<T> | undefined;
    return () => (value ??= make());
  };
  let stateCache: SessionState | undefined;
  async function sessionState(): Promise<SessionState> {
    const size = providerStore.receiptCount(fx.opened.sessionId);
    if (stateCache && stateCache.size === size) return stateCache;
    const latest = providerStore.latestTicket(fx.opened.sessionId);
    const tree = ReceiptAccumulator.fromLeaves(providerStore.leaves(fx.opened.sessionId));
    const latestSeq = latest?.ticket.seq ?? 0n;
    const latestAmount = latest?.ticket.cumulativeAmount ?? 0n;
    const root = tree.prefixRoot(tree.size);
    const sessionId = fx.opened.sessionId;
    const template = await signPaymentTicket({
      account: fx.payer,
      domain: fx.domain,
      ticket: { sessionId, provider: fx.provider.address, termsHash: fx.opened.ref.terms.termsHash, seq: latestSeq + 1n, cumulativeAmount: latestAmount + PRICE, receiptRoot: root },
    });
    const commit = once(() => signReceiptCommit(fx.payer, fx.domain, { sessionId, leafCount: BigInt(tree.size), root }));
    const summary: SettlementSummary = { sessionId, provider: fx.provider.address, payer: fx.payer.address, termsHash: fx.opened.ref.terms.termsHash, finalSeq: latestSeq, finalAmount: latestAmount, finalReceiptRoot: tree.root(), mode: "Cooperative" };
    const close = once(async () => ({ summary, signature: await signSettlementSummary({ account: fx.payer, domain: fx.domain, summary }) }));
    stateCache = { size, latestSeq, latestAmount, root, prefixRoot: (n) => tree.prefixRoot(n), template, commit, close };
    return stateCache;
  }

  const invokeJson = (signed: SignedPaymentTicket, mcp: unknown, extra: Record<string, unknown> = {}, envelope: Record<string, unknown> = {}) => ({
    pkt_version: "1",
    packet_type: "PKT_ACTION_INVOKE",
    issued_at: ISSUED_AT,
    session_id: signed.ticket.sessionId,
    ...envelope,
    payload: { mcp, ticket: signedPaymentTicketToJson(signed), ...extra },
  });
  const commitJson = (signed: SignedReceiptCommit) => ({
    pkt_version: "1",
    packet_type: "PKT_RECEIPT_COMMIT",
    issued_at: ISSUED_AT,
    session_id: signed.commit.sessionId,
    payload: { commit: { commit: receiptCommitToJson(signed.commit), signature: signed.signature } },
  });
  const closeJson = (summary: SettlementSummary, signature: Hex) => ({ type: "close.propose", summary: settlementSummaryToJson(summary), signature });

  const randomHash = (prng: Prng): Hex => keccak256(randomBytes(prng, 16));
  /**
   * A damaged signature. `equivalent` marks the one variant that is the same signature spelled differently:
   * v as 0/1 instead of 27/28, which recoverDigestSigner accepts (so every signature has two accepted
   * 65-byte spellings, despite eip712.ts's "exactly one accepted signature per digest" — reported, not failed).
   */
  function signatureVariant(prng: Prng, valid: Hex): { signature: Hex; note: string; equivalent: boolean } {
    const v = parseInt(valid.slice(-2), 16);
    const [note, signature] = prng.pick<[string, () => Hex]>([
      ["random signature", () => `0x${Buffer.from(randomBytes(prng, 65)).toString("hex")}` as Hex],
      ["zero signature", () => `0x${"00".repeat(65)}` as Hex],
      ["all-ones signature", () => `0x${"ff".repeat(65)}` as Hex],
      ["high-s twin", () => {
        try {
          return toHighS(valid);
        } catch {
          return `0x${"ab".repeat(32)}${"ff".repeat(32)}1b` as Hex; // not a signature noble can parse: high s anyway
        }
      }],
      ["v of the other parity", () => `${valid.slice(0, -2)}${(v === 27 ? 28 : 27).toString(16)}` as Hex],
      ["v spelled 0/1", () => `${valid.slice(0, -2)}0${v - 27}` as Hex],
      ["v byte 0x1d", () => `${valid.slice(0, -2)}1d` as Hex],
      ["r of the curve order", () => `0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141${valid.slice(66)}` as Hex],
      ["one bit flipped", () => `${valid.slice(0, 10)}${((parseInt(valid[10]!, 16) ^ 1) >>> 0).toString(16)}${valid.slice(11)}` as Hex],
    ]);
    return { signature: signature(), note, equivalent: note === "v spelled 0/1" };
  }

  function weirdMcp(prng: Prng, i: number): { mcp: unknown; note: string } {
    const [note, make] = prng.pick<[string, () => unknown]>([
      ["plain request", () => request(i)],
      ["random object", () => ({ jsonrpc: "2.0", id: i, params: randomValue(prng, 0, false) })],
      ["id as an object", () => ({ jsonrpc: "2.0", id: { nested: [1, 2] }, method: "x" })],
      ["60 levels", () => ({ jsonrpc: "2.0", id: "deep", params: nest("x", 55, prng) })],
      ["weird strings", () => ({ jsonrpc: "2.0", id: prng.pick(WEIRD_STRINGS.filter((s) => s.isWellFormed())), method: prng.pick(WEIRD_STRINGS.filter((s) => s.isWellFormed())) })],
      ["__proto__ keys", () => JSON.parse('{"jsonrpc":"2.0","id":"p","__proto__":{"polluted":1},"params":{"constructor":{"prototype":{"polluted":1}}}}') as unknown],
      ["200 kB string", () => ({ jsonrpc: "2.0", id: "big", params: { text: "y".repeat(200_000) } })],
      ["empty object", () => ({})],
      ["numbers", () => ({ id: 1e21, n: -0, f: 0.1, big: 2 ** 60 })],
    ]);
    return { mcp: make(), note };
  }

  /** A well-formed invocation whose ticket differs from the one a correct payer would send in one or two fields. */
  async function wrongTicketMessage(prng: Prng, st: SessionState, i: number): Promise<{ value: unknown; note: string }> {
    const t = { ...st.template.ticket };
    let signature = st.template.signature;
    let mcp: unknown = request(i);
    const extra: Record<string, unknown> = {};
    const envelope: Record<string, unknown> = {};
    const notes: string[] = [];
    for (let k = prng.int(1, 2); k > 0; k--) {
      switch (prng.pick(["seq", "amount", "session", "provider", "terms", "root", "signature", "signature", "stranger", "leaf_count", "mcp", "envelope"])) {
        case "seq":
          t.seq = prng.pick([0n, st.latestSeq, st.latestSeq > 0n ? st.latestSeq - 1n : 0n, t.seq + 1n, t.seq + 1000n, (1n << 64n) - 1n]);
          notes.push(`seq ${t.seq}`);
          break;
        case "amount":
          t.cumulativeAmount = prng.pick([0n, st.latestAmount, st.latestAmount + PRICE - 1n, DEPOSIT + 1n, (1n << 128n) - 1n, t.cumulativeAmount + 1n]);
          notes.push(`amount ${t.cumulativeAmount}`);
          break;
        case "session":
          t.sessionId = prng.chance(0.5) ? randomHash(prng) : SESSION_ID;
          notes.push("another session");
          break;
        case "provider":
          t.provider = prng.pick([stranger.address, fx.payer.address]);
          notes.push("another provider");
          break;
        case "terms":
          t.termsHash = randomHash(prng);
          notes.push("other terms");
          break;
        case "root":
          t.receiptRoot = prng.pick([randomHash(prng), zeroHash, st.size > 0 ? st.prefixRoot(st.size - 1) : randomHash(prng)]);
          notes.push("another root");
          break;
        case "signature": {
          const v = signatureVariant(prng, st.template.signature);
          signature = v.signature;
          notes.push(v.note);
          break;
        }
        case "stranger":
          signature = (await signPaymentTicket({ account: stranger, domain: fx.domain, ticket: t })).signature;
          notes.push("signed by a stranger");
          break;
        case "leaf_count":
          extra.leaf_count = prng.pick(["0", String(Math.max(0, st.size - 1)), String(st.size), String(st.size + 1), String(2 ** 53 - 1)]);
          notes.push(`leaf_count ${extra.leaf_count}`);
          break;
        case "mcp": {
          const w = weirdMcp(prng, i);
          mcp = w.mcp;
          notes.push(`mcp ${w.note}`);
          break;
        }
        default:
          Object.assign(envelope, prng.pick([{ lease_id: "lease_9" }, { issued_at: "1970-01-01T00:00:00.123456789Z" }, { issued_at: "9999-12-31T23:59:59Z" }, { lease_id: "x".repeat(128) }]));
          notes.push("envelope variant");
      }
    }
    // Mostly keep it a wrong ticket: when only the envelope, mcp or hint changed, usually damage the signature too.
    const unchanged = signature === st.template.signature && canon(signedPaymentTicketToJson({ ticket: t, signature })) === canon(signedPaymentTicketToJson(st.template));
    if (unchanged && prng.chance(0.75)) {
      const v = signatureVariant(prng, st.template.signature);
      signature = v.signature;
      notes.push(v.note);
    }
    return { value: invokeJson({ ticket: t, signature }, mcp, extra, envelope), note: notes.join(", ") };
  }

  async function wrongCommitMessage(prng: Prng, st: SessionState): Promise<{ value: unknown; note: string }> {
    const valid = await st.commit();
    const commit = { ...valid.commit };
    let signature = valid.signature;
    const [note, act] = prng.pick<[string, () => Promise<void> | void]>([
      ["leaf count 0", () => void (commit.leafCount = 0n)],
      ["one receipt more", () => void (commit.leafCount = BigInt(st.size + 1))],
      ["2^64-1 receipts", () => void (commit.leafCount = (1n << 64n) - 1n)],
      ["another root", () => void (commit.root = randomHash(prng))],
      ["another session", () => void (commit.sessionId = randomHash(prng))],
      ["bad signature", () => void (signature = signatureVariant(prng, valid.signature).signature)],
      ["signed by the provider's key", async () => void (signature = (await signReceiptCommit(fx.provider, fx.domain, commit)).signature)],
      ["validly signed, one receipt more", async () => {
        commit.leafCount = BigInt(st.size + 1);
        signature = (await signReceiptCommit(fx.payer, fx.domain, commit)).signature;
      }],
      ["validly signed, another root", async () => {
        commit.root = randomHash(prng);
        signature = (await signReceiptCommit(fx.payer, fx.domain, commit)).signature;
      }],
      ["valid commit", () => undefined],
    ]);
    await act();
    return { value: commitJson({ commit, signature }), note };
  }

  async function wrongCloseMessage(prng: Prng, st: SessionState): Promise<{ value: unknown; note: string }> {
    const valid = await st.close();
    const summary = { ...valid.summary };
    let signature = valid.signature;
    const [note, act] = prng.pick<[string, () => void]>([
      ["final seq + 1", () => void (summary.finalSeq = summary.finalSeq + 1n)],
      ["final amount + 1", () => void (summary.finalAmount = summary.finalAmount + 1n)],
      ["another root", () => void (summary.finalReceiptRoot = randomHash(prng))],
      ["unilateral mode", () => void (summary.mode = "Unilateral")],
      ["payer and provider swapped", () => void ([summary.payer, summary.provider] = [summary.provider, summary.payer])],
      ["other terms", () => void (summary.termsHash = randomHash(prng))],
      ["another session", () => void (summary.sessionId = randomHash(prng))],
      ["bad signature", () => void (signature = signatureVariant(prng, valid.signature).signature)],
      // No "valid proposal": since issue 12 a co-signed close ends the session (no later work is served),
      // which test/adversarial/lifecycle.test.ts covers; the fuzz keeps the session open for what follows.
    ]);
    act();
    return { value: closeJson(summary, signature), note };
  }

  /** A message that is refused at decoding (the node must close the connection), by category. */
  async function closingMessage(prng: Prng, category: string, st: SessionState, i: number): Promise<{ bytes: Uint8Array; note: string }> {
    const valid = await prng.pick<() => Promise<unknown> | unknown>([
      () => invokeJson(st.template, request(i)),
      async () => commitJson(await st.commit()),
      async () => {
        // Refused by the provider even if a mutation happens to decode: a valid one would end the session.
        const close = await st.close();
        return closeJson({ ...close.summary, finalAmount: close.summary.finalAmount + 1n }, close.signature);
      },
      () => ({ type: "session.open", ref: channelRefToJson(fx.opened.ref), pricing: pricingTermsToJson(pricing) }),
    ])();
    switch (category) {
      case "session: truncated": {
        const text = wire(valid);
        const cut = prng.int(1, text.length - 1);
        return { bytes: utf8(text.slice(0, cut)), note: `cut at ${cut} of ${text.length}` };
      }
      case "session: wrong types": {
        const m = mutateValue(prng, valid, { only: ["swapType", "sibling", "array", "delete", "rename", "addField"] });
        return { bytes: utf8(wire(m.value)), note: m.op };
      }
      case "session: amounts as numbers": {
        if (prng.chance(0.5)) {
          const m = mutateText(prng, wire(valid));
          return { bytes: utf8(m.text), note: m.op };
        }
        const m = mutateValue(prng, valid, { only: ["numberForString", "specialNumber"], where: (v) => typeof v === "string" && /^\d+$/.test(v) });
        return { bytes: utf8(wire(m.value)), note: m.op };
      }
      case "session: huge nesting": {
        const n = prng.pick([65, 1_000, 10_000, 100_000]);
        const text = wire(valid).replace(/"params":\{/, `"params":{"deep":${"[".repeat(n)}${"]".repeat(n)},`);
        return { bytes: utf8(text.includes('"deep"') ? text : `{"type":"session.open","x":${"[".repeat(n)}${"]".repeat(n)}}`), note: `${n} levels` };
      }
      case "session: unknown message types": {
        const value = prng.pick<unknown>([
          { type: prng.pick(["session.close", "SESSION.OPEN", "session.open ", "", "ping", "__proto__", "reject2", "close.propose\u0000"]) },
          { type: 1 },
          { ...invokeJson(st.template, request(i)), packet_type: prng.pick(["PKT_UNKNOWN", "PKT_ACTION_INVOKE ", "pkt_action_invoke", "PKT_ACTION_CANCEL"]) },
          { ...invokeJson(st.template, request(i)), pkt_version: prng.pick(["2", "0", "1.0", 1]) },
          { type: "session.open", packet_type: "PKT_ACTION_INVOKE" },
          {},
        ]);
        return { bytes: utf8(wire(value)), note: showValue(value).slice(0, 80) };
      }
      case "session: out-of-place control messages": {
        const receipt: SignedSessionReceipt = { receipt: sampleReceipt({ sessionId: fx.opened.sessionId }), signature: samples.receipt.signature };
        const value = prng.pick<unknown>([
          { type: "session.open", ref: channelRefToJson(fx.opened.ref), pricing: pricingTermsToJson(pricing) },
          { type: "session.ready", lastSeq: "0", leafCount: "0", deposit: "1" },
          { type: "reject", seq: "1", error: "InvalidSignatureError", message: "no" },
          { type: "close.countersign", signature: st.template.signature },
          { pkt_version: "1", packet_type: "PKT_ACTION_RESULT", issued_at: ISSUED_AT, session_id: fx.opened.sessionId, action_result_id: "res_1", payload: { mcp: { jsonrpc: "2.0", id: 1, result: {} }, receipt: signedSessionReceiptToJson(receipt) } },
          { pkt_version: "1", packet_type: "PKT_LEASE_ISSUE", issued_at: ISSUED_AT, session_id: fx.opened.sessionId, payload: { mcp: request(i) } },
        ]);
        return { bytes: utf8(wire(value)), note: (value as { type?: string; packet_type?: string }).type ?? (value as { packet_type: string }).packet_type };
      }
      default: {
        const [note, bytes] = prng.pick<[string, () => Uint8Array]>([
          ["random bytes", () => randomBytes(prng, prng.int(1, 300))],
          ["invalid UTF-8", () => mutateBytes(prng, utf8(wire(valid))).bytes],
          ["empty message", () => new Uint8Array(0)],
          ["JSON null", () => utf8("null")],
          ["JSON array", () => utf8("[]")],
          ["JSON number", () => utf8("1")],
          ["whitespace", () => utf8(" \n\t ")],
          ["BOM and a valid message", () => utf8(`\ufeff${wire(valid)}`)],
          ["NUL and a valid message", () => utf8(`${wire(valid)}\u0000`)],
        ]);
        return { bytes: bytes(), note };
      }
    }
  }

  it(`provider node inside an established sealed session: ${scaled(3_000)} hostile messages, one at a time, every wait bounded (seed ${SEED})`, async function () {
    this.timeout(600_000);
    const t0 = performance.now();
    const plan: Array<[string, number]> = [
      ["session: ticket with wrong fields", 1_800],
      ["session: receipt commit with wrong fields", 280],
      ["session: close proposal with wrong fields", 180],
      ["session: non-canonical JSON", 300],
      ["session: valid invocation", 80],
      ["session: replayed ticket", 60],
      ["session: truncated", 50],
      ["session: wrong types", 60],
      ["session: amounts as numbers", 40],
      ["session: huge nesting", 30],
      ["session: unknown message types", 40],
      ["session: out-of-place control messages", 30],
      ["session: steps requests", 60],
      ["session: garbage bytes", 40],
      ["session: oversized", 10],
      // Each of these hangs the session today (see the BUG case below) and costs a bounded wait and a node
      // restart, so they are few and fixed rather than drawn at random.
      ["session: mcp that canonical JSON refuses", 2],
    ];
    const prng = mulberry32(subSeed(SEED, "session"));
    const order: string[] = [];
    for (const [category, n] of plan) for (let k = scaled(n); k > 0; k--) order.push(category);
    for (let k = order.length - 1; k > 0; k--) {
      const j = prng.int(0, k);
      [order[k], order[j]] = [order[j]!, order[k]!];
    }
    let refusedMcp = 0;
    let peer = await openPeer(node.port);
    let reconnects = 0;
    const accepted = new Set<bigint>();

    /** Records a result to the payer's store as a payer would, after checking it against the provider's store. */
    const acceptResult = async (sent: SignedPaymentTicket, reply: Packet, category: string, index: number, note: string, input: Uint8Array) => {
      if (reply.packet_type !== "PKT_ACTION_RESULT") return;
      const receipt = reply.payload.receipt;
      const mcp = reply.payload.mcp as { error?: { code?: number } };
      const stored = providerStore.steps(fx.opened.sessionId, { fromSeq: receipt.receipt.seq, limit: 1 })[0];
      if (!stored || stored.receipt?.signature !== receipt.signature) {
        ledger.violate({ category, index, kind: "answered with a receipt the provider did not store", detail: note, input });
        return;
      }
      if (stored.ticket.signature !== sent.signature || canon(signedPaymentTicketToJson(stored.ticket)) !== canon(signedPaymentTicketToJson(sent))) {
        ledger.violate({ category, index, kind: "accepted a ticket other than the one stored for its seq", detail: note, input });
        return;
      }
      if (mcp.error?.code === REPLAYED_RESULT_CODE || accepted.has(sent.ticket.seq)) return;
      await verifySessionReceipt({ signed: receipt, signer: fx.provider.address });
      const leaf = receiptLeafFromHashes(sessionReceiptHash(receipt.receipt), paymentTicketHash(sent.ticket));
      if (leaf !== stored.leaf) ledger.violate({ category, index, kind: "leaf differs from the provider's", detail: note, input });
      await payerStore.putTicket(fx.opened.sessionId, sent);
      await payerStore.putStep(fx.opened.sessionId, { seq: sent.ticket.seq, ticket: sent, receipt, leaf });
      accepted.add(sent.ticket.seq);
    };

    for (let i = 0; i < order.length; i++) {
      const category = order[i]!;
      current = `${category} #${i}`;
      const st = await sessionState();
      let bytes: Uint8Array;
      let note: string;
      let usePeer = peer;
      let bigPeer: Peer | undefined;
      if (category === "session: ticket with wrong fields") {
        const m = await wrongTicketMessage(prng, st, i);
        [bytes, note] = [utf8(wire(m.value)), m.note];
      } else if (category === "session: receipt commit with wrong fields") {
        const m = await wrongCommitMessage(prng, st);
        [bytes, note] = [utf8(wire(m.value)), m.note];
      } else if (category === "session: close proposal with wrong fields") {
        const m = await wrongCloseMessage(prng, st);
        [bytes, note] = [utf8(wire(m.value)), m.note];
      } else if (category === "session: non-canonical JSON") {
        const value = await prng.pick<() => Promise<unknown> | unknown>([
          () => invokeJson(st.template, request(i)),
          async () => commitJson(await st.commit()),
          async () => {
            // A proposal the provider refuses even when the spelling decodes: a valid one would end the session.
            const close = await st.close();
            return closeJson({ ...close.summary, finalAmount: close.summary.finalAmount + 1n }, close.signature);
          },
        ])();
        const style = randomStyle(prng);
        [bytes, note] = [utf8(renderJson(prng, value, style)), JSON.stringify(style)];
      } else if (category === "session: mcp that canonical JSON refuses") {
        const text = REFUSED_MCP[refusedMcp++ % REFUSED_MCP.length]!;
        [bytes, note] = [utf8(wire(invokeJson(st.template, { jsonrpc: "2.0", id: 1, method: "tools/echo", params: { v: "__MCP__" } })).replace('{"v":"__MCP__"}', text)), `valid ticket, mcp params ${text}`];
      } else if (category === "session: valid invocation") {
        [bytes, note] = [utf8(wire(invokeJson(st.template, request(i)))), `seq ${st.template.ticket.seq}`];
      } else if (category === "session: replayed ticket") {
        const steps = providerStore.steps(fx.opened.sessionId);
        if (steps.length === 0) [bytes, note] = [utf8(wire(invokeJson(st.template, request(i)))), "nothing to replay yet: a valid invocation"];
        else {
          const step = prng.pick(steps);
          [bytes, note] = [utf8(wire(invokeJson(step.ticket, request(i)))), `replay of seq ${step.seq}`];
        }
      } else if (category === "session: steps requests") {
        // The payer's take-back (issue 15): well-formed requests from any seq, and hostile spellings of one.
        const fromSeq = prng.pick(["0", "1", String(prng.int(1, 40)), "18446744073709551615"]);
        const value = prng.chance(0.6)
          ? { type: "steps.request", fromSeq, limit: prng.int(1, 64) }
          : prng.pick<unknown>([
              { type: "steps.request", fromSeq, limit: prng.pick([0, 65, -1, 1.5, 2 ** 53, "64", null]) },
              { type: "steps.request", fromSeq: prng.pick(["-1", "18446744073709551616", "01", 3, "x"]), limit: 8 },
              { type: "steps.request", fromSeq },
              { type: "steps.request", fromSeq, limit: 8, extra: true },
              { type: "steps", steps: [] },
            ]);
        [bytes, note] = [utf8(wire(value)), showValue(value).slice(0, 80)];
      } else if (category === "session: oversized") {
        if (prng.chance(0.5)) {
          // A frame larger than the node accepts, from a peer configured for bigger messages.
          bigPeer = await openPeer(node.port, { maxMessageBytes: 2 << 20 });
          usePeer = bigPeer;
          const size = prng.pick([(1 << 20) + 1, (1 << 20) + 4096, (2 << 20) - 100]);
          [bytes, note] = [utf8(`{"type":"session.open","pad":"${"z".repeat(size - 40)}"}`), `${size}-byte frame`];
        } else {
          // Exactly at the limit: a valid invocation padded with whitespace, or an mcp holding a huge string.
          const base = wire(invokeJson(st.template, request(i)));
          const text = prng.chance(0.5) ? base + " ".repeat((1 << 20) - base.length) : wire(invokeJson(st.template, { jsonrpc: "2.0", id: "big", params: { text: "w".repeat((1 << 20) - base.length - 64) } }));
          [bytes, note] = [utf8(text), `${utf8(text).length}-byte message at the limit`];
        }
      } else {
        const m = await closingMessage(prng, category, st, i);
        [bytes, note] = [m.bytes, m.note];
      }

      // What the node must do, from decoding the message here.
      let expected: "close" | "answer";
      let decoded: NodeMessage | undefined;
      try {
        decoded = decodeMessage(bytes);
        const kind = "packet_type" in decoded ? decoded.packet_type : decoded.type;
        expected = kind === "PKT_ACTION_INVOKE" || kind === "PKT_RECEIPT_COMMIT" || kind === "close.propose" || kind === "steps.request" ? "answer" : "close";
      } catch (error) {
        expected = "close";
        if (!isTyped(error, TYPED)) {
          const { detail, stack } = describeError(error);
          ledger.violate({ category, index: i, kind: "decodeMessage threw an untyped error", detail: `${detail}; ${note}`, input: bytes, stack });
        }
      }
      if (bytes.length > (1 << 20)) expected = "close";

      ledger.count(category);
      const sentAt = performance.now();
      try {
        await usePeer.connection.send(bytes);
      } catch (error) {
        ledger.violate({ category, index: i, kind: "could not send", detail: `${describeError(error).detail}; ${note}`, input: bytes });
      }
      const outcome = await usePeer.next(REPLY_BOUND_MS);
      const ms = performance.now() - sentAt;
      ledger.time(category, ms, i);

      if (outcome === "timeout") {
        ledger.outcome(category, "NO ANSWER");
        ledger.violate({ category, index: i, kind: `no answer and no close within ${REPLY_BOUND_MS} ms (a hang)`, detail: `expected ${expected}; ${note}`, input: bytes });
        bigPeer?.connection.destroy();
        peer.connection.destroy();
        await restartNode(`hang on ${category} #${i}`);
        stateCache = undefined;
        peer = await openPeer(node.port);
        continue;
      }
      if (outcome === "closed") {
        ledger.outcome(category, "closed");
        if (expected === "answer") ledger.violate({ category, index: i, kind: "closed the connection on a well-formed message", detail: `${note}; our close error ${usePeer.closeError ?? "none"}`, input: bytes });
        if (!bigPeer) {
          reconnects++;
          peer = await openPeer(node.port);
        }
        continue;
      }
      // A reply.
      const replyBytes = usePeer.replies.shift()!;
      let reply: NodeMessage;
      try {
        reply = decodeMessage(replyBytes);
      } catch (error) {
        ledger.violate({ category, index: i, kind: "the node sent a reply that does not decode", detail: `${describeError(error).detail}; ${note}`, input: replyBytes });
        continue;
      }
      if (expected === "close") ledger.violate({ category, index: i, kind: "answered a message it must refuse", detail: `${showValue(reply).slice(0, 200)}; ${note}`, input: bytes });
      if ("type" in reply && reply.type === "reject") {
        ledger.outcome(category, `reject ${reply.error}`);
        if (!TYPED.has(reply.error)) ledger.violate({ category, index: i, kind: "rejected with an untyped error", detail: `${reply.error}: ${reply.message}; ${note}`, input: bytes });
      } else if ("packet_type" in reply) {
        ledger.outcome(category, reply.packet_type === "PKT_ACTION_RESULT" && (reply.payload.mcp as { error?: { code?: number } }).error?.code === REPLAYED_RESULT_CODE ? "replayed result" : reply.packet_type);
        if (reply.packet_type === "PKT_ACTION_RESULT") {
          const sent = decoded && "packet_type" in decoded && decoded.packet_type === "PKT_ACTION_INVOKE" ? decoded.payload.ticket : undefined;
          if (!sent) ledger.violate({ category, index: i, kind: "a result for something that was not an invocation", detail: note, input: bytes });
          else await acceptResult(sent, reply, category, i, note, bytes);
        }
      } else if (reply.type === "steps") {
        ledger.outcome(category, reply.steps.length === 0 ? "steps (none)" : "steps");
        // Exactly the stored steps from the seq asked for, in order, at most as many as asked for.
        const asked = decoded && !("packet_type" in decoded) && decoded.type === "steps.request" ? decoded : undefined;
        const stored = asked ? providerStore.steps(fx.opened.sessionId, { fromSeq: asked.fromSeq, limit: asked.limit }) : [];
        const text = (steps: { ticket: SignedPaymentTicket; receipt?: SignedSessionReceipt }[]) => steps.map((x) => canon({ t: signedPaymentTicketToJson(x.ticket), r: x.receipt ? signedSessionReceiptToJson(x.receipt) : null }));
        if (!asked || JSON.stringify(text(reply.steps)) !== JSON.stringify(text(stored))) {
          ledger.violate({ category, index: i, kind: "handed back steps other than the stored ones asked for", detail: note, input: bytes });
        }
      } else {
        ledger.outcome(category, reply.type);
      }
      if (usePeer.replies.length > 0) ledger.violate({ category, index: i, kind: "more than one answer to one message", detail: note, input: bytes });
      if (bigPeer) bigPeer.connection.destroy();
    }
    await peer.connection.close();
    wall.set("provider node in-session", performance.now() - t0);

    // Every connection the node closed with an error named a typed error.
    for (const line of logs) {
      const m = /^connection 0x[0-9a-f]+ closed: ([A-Za-z]+):/.exec(line);
      if (m && !TYPED.has(m[1]!)) ledger.violate({ category: "session: node log", index: -1, kind: "a connection failed with an untyped error", detail: line, input: line });
      if (line.startsWith("listener error")) ledger.violate({ category: "session: node log", index: -1, kind: "listener error", detail: line, input: line });
    }
    const rejections = unhandled.filter((u) => u.at.startsWith("session:"));
    for (const u of rejections) {
      const { detail, stack } = describeError(u.reason);
      ledger.violate({ category: "session: unhandled rejection", index: -1, kind: "unhandled promise rejection in the node", detail: `${detail} (after ${u.at})`, input: u.at, stack });
    }
    console.log(`      in-session: ${order.length} messages, ${reconnects} reconnects, ${accepted.size} paid invocations accepted, ${nodeRestarts} node restarts`);
    expect(ledger.violations.filter(violationsOf("session")), ledger.summary(violationsOf("session"))).to.deep.equal([]);
  });

  /*//////////////////////////////////////////////////////////////
                 THE PROVIDER NODE, AT THE TRANSPORT
  //////////////////////////////////////////////////////////////*/

  it(`provider node at the transport layer: ${scaled(2_000)} fresh TCP connections with garbage, truncated and oversized frames, bad handshakes and sealed garbage (seed ${SEED})`, async function () {
    this.timeout(600_000);
    const t0 = performance.now();
    const prng = mulberry32(subSeed(SEED, "transport"));
    const refusedBefore = logs.filter((l) => l.startsWith("handshake refused")).length;
    // Inits to replay: the payer's own (valid for the channel) and a stranger's for the channel.
    const payerInit = encodeHandshakeMessage((await createInit({ account: fx.payer, sessionId: fx.opened.sessionId })).init);
    const strangerInit = encodeHandshakeMessage((await createInit({ account: stranger, sessionId: fx.opened.sessionId })).init);
    const throwaway = privateKeyToAccount(keccak256(stringToBytes(`fuzz ${SEED}`)));
    const freshInit = (await createInit({ account: throwaway, sessionId: h("unknown session") })).init;

    /** Opens a raw TCP connection, runs `act`, and waits (bounded) for the node to close it. */
    const raw = async (act: (socket: net.Socket, frames: () => Promise<Uint8Array | undefined>) => Promise<void>, boundMs = REPLY_BOUND_MS): Promise<"closed" | "timeout"> => {
      const socket = net.connect({ host: HOST, port: node.port });
      socket.on("error", () => undefined);
      const closed = new Promise<"closed">((resolve) => socket.once("close", () => resolve("closed")));
      const decoder = new FrameDecoder({ maxFrameBytes: 1 << 21 });
      const queue: Uint8Array[] = [];
      let wake: (() => void) | undefined;
      socket.on("data", (chunk: Buffer) => {
        try {
          queue.push(...decoder.push(chunk));
        } catch {
          socket.destroy();
        }
        wake?.();
      });
      socket.once("close", () => wake?.());
      const frames = async (): Promise<Uint8Array | undefined> => {
        const deadline = performance.now() + boundMs;
        while (queue.length === 0 && !socket.destroyed && performance.now() < deadline) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Math.max(1, deadline - performance.now()));
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = undefined;
        }
        return queue.shift();
      };
      const connected = await Promise.race([new Promise<boolean>((resolve) => socket.once("connect", () => resolve(true))), closed.then(() => false)]);
      if (!connected) return "closed";
      await act(socket, frames);
      const timer = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), boundMs));
      const result = await Promise.race([closed, timer]);
      socket.destroy();
      return result;
    };

    /** Runs the handshake as a correct payer over `socket`; returns the sealing state for what follows. */
    const handshake = async (socket: net.Socket, frames: () => Promise<Uint8Array | undefined>) => {
      const { init, secrets } = await createInit({ account: fx.payer, sessionId: fx.opened.sessionId });
      socket.write(encodeFrame(encodeHandshakeMessage(init)));
      const tryFrame = await frames();
      if (!tryFrame) throw new Error("no ChannelOpenTry");
      const { keys, transcriptHash } = await acceptTry({ init, secrets, tryMessage: decodeTry(tryFrame), expectedResponder: fx.provider.address });
      const sealer = new RecordSealer(keys.initiatorToResponder);
      const opener = new RecordOpener(keys.responderToInitiator);
      return { sealer, opener, keys, transcriptHash };
    };

    type Kind = [string, number, (socket: net.Socket, frames: () => Promise<Uint8Array | undefined>, i: number) => Promise<void>];
    const kinds: Kind[] = [
      ["transport: random bytes", 400, async (socket) => {
        socket.write(randomBytes(prng, prng.int(0, 300)));
        socket.end();
      }],
      ["transport: oversized length prefix", 200, async (socket) => {
        const prefix = new Uint8Array(4);
        new DataView(prefix.buffer).setUint32(0, prng.pick([8193, 65_536, 1 << 20, (1 << 20) + 26, 0xffffffff, prng.int(8193, 0x7fffffff)]));
        socket.write(prefix);
        if (prng.chance(0.5)) socket.write(randomBytes(prng, prng.int(1, 64)));
      }],
      ["transport: truncated frame", 200, async (socket) => {
        const frame = encodeFrame(prng.chance(0.5) ? payerInit : randomBytes(prng, prng.int(10, 3000)));
        socket.write(frame.subarray(0, prng.int(1, frame.length - 1)));
        socket.end();
      }],
      ["transport: malformed ChannelOpenInit", 400, async (socket, frames, i) => {
        const base = JSON.parse(new TextDecoder().decode(payerInit)) as unknown;
        const r = prng.next();
        const body = r < 0.1 ? new Uint8Array(0) : r < 0.6 ? utf8(wire(mutateValue(prng, base).value)) : r < 0.9 ? utf8(mutateText(prng, wire(base)).text) : mutateBytes(prng, payerInit).bytes;
        socket.write(encodeFrame(body));
        if (prng.chance(0.3)) socket.end();
        // A mutation can leave the Init valid (e.g. the signature's v spelled 0/1): the node then answers
        // with its Try. That is right only if the Init is valid here too.
        if (await frames()) {
          const valid = await (async () => {
            try {
              const init = decodeInit(body);
              await verifyInit(init);
              return true;
            } catch {
              return false;
            }
          })();
          if (!valid) ledger.violate({ category: "transport: malformed ChannelOpenInit", index: i, kind: "the node answered an Init that does not verify", detail: "", input: body });
          socket.end();
        }
      }],
      ["transport: ChannelOpenInit with a bad signature", 200, async (socket, frames, i) => {
        const init = JSON.parse(new TextDecoder().decode(payerInit)) as Record<string, string>;
        const variant = signatureVariant(prng, init.signature as Hex);
        init.signature = variant.signature;
        socket.write(encodeFrame(utf8(canon(init))));
        // An equivalent spelling is accepted and the node answers with its Try: then end the stream.
        const reply = await frames();
        if (reply && !variant.equivalent) {
          ledger.violate({ category: "transport: ChannelOpenInit with a bad signature", index: i, kind: "the node accepted a bad ChannelOpenInit signature", detail: variant.note, input: init.signature! });
        }
        socket.end();
      }],
      ["transport: ChannelOpenInit by a stranger for the channel", 150, async (socket) => {
        socket.write(encodeFrame(strangerInit));
      }],
      ["transport: replayed ChannelOpenInit, then garbage for the Ack", 150, async (socket, frames) => {
        socket.write(encodeFrame(payerInit));
        await frames();
        const junk = prng.pick([() => randomBytes(prng, prng.int(25, 200)), () => sealRecord(randomBytes(prng, 32), 0n, RecordType.keyConfirmation, utf8("{}")), () => new Uint8Array(0), () => payerInit]);
        socket.write(encodeFrame(junk()));
      }],
      ["transport: replayed ChannelOpenInit, then end of stream", 100, async (socket, frames) => {
        socket.write(encodeFrame(payerInit));
        if (prng.chance(0.5)) await frames();
        socket.end();
      }],
      ["transport: validly signed ChannelOpenInit with invalid keys", 50, async (socket) => {
        const unsigned = initToJson({ ...freshInit, sessionId: randomHash(prng) }) as Omit<ChannelOpenInit, "signature"> & { signature?: Hex };
        delete unsigned.signature;
        const [, patch] = prng.pick<[string, Partial<ChannelOpenInit>]>([
          ["x25519 zero point", { x25519PublicKey: `0x${"00".repeat(32)}` }],
          ["x25519 low-order point", { x25519PublicKey: "0xe0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800" }],
          ["ML-KEM key out of range", { mlkemEncapsulationKey: `0x${"ff".repeat(1184)}` }],
        ]);
        const patched = { ...unsigned, ...patch };
        const signature = await signDigest(throwaway, initDigest(patched as ChannelOpenInit));
        socket.write(encodeFrame(encodeHandshakeMessage({ ...patched, signature } as ChannelOpenInit)));
      }],
      ["transport: tampered ChannelOpenAck", 50, async (socket, frames) => {
        const { sealer, transcriptHash } = await handshake(socket, frames);
        const [, ack] = prng.pick<[string, () => Uint8Array]>([
          ["other transcript", () => sealer.seal(RecordType.keyConfirmation, encodeKeyConfirmation("ChannelOpenAck", keccak256(utf8("other"))))],
          ["Confirm instead of Ack", () => sealer.seal(RecordType.keyConfirmation, encodeKeyConfirmation("ChannelOpenConfirm", transcriptHash))],
          ["data record first", () => sealer.seal(RecordType.data, encodeKeyConfirmation("ChannelOpenAck", transcriptHash))],
          ["bit flip", () => {
            const frame = sealer.seal(RecordType.keyConfirmation, encodeKeyConfirmation("ChannelOpenAck", transcriptHash));
            frame[prng.int(8, frame.length - 1)]! ^= 1;
            return frame;
          }],
        ]);
        socket.write(encodeFrame(ack()));
      }],
      ["transport: sealed garbage after the handshake", 92, async (socket, frames) => {
        const { sealer, opener, transcriptHash } = await handshake(socket, frames);
        socket.write(encodeFrame(sealer.seal(RecordType.keyConfirmation, encodeKeyConfirmation("ChannelOpenAck", transcriptHash))));
        const confirm = await frames();
        if (!confirm) return;
        opener.open(confirm);
        const open = sealer.seal(RecordType.data, encodeMessage({ type: "session.open", ref: fx.opened.ref, pricing }));
        const [, act] = prng.pick<[string, () => void]>([
          ["forged frame", () => socket.write(encodeFrame(randomBytes(prng, prng.int(25, 300))))],
          ["replayed frame", () => socket.write(Buffer.concat([encodeFrame(open), encodeFrame(open)]))],
          ["skipped counter", () => {
            sealer.seal(RecordType.data, utf8("lost"));
            socket.write(encodeFrame(sealer.seal(RecordType.data, encodeMessage({ type: "session.open", ref: fx.opened.ref, pricing }))));
          }],
          ["key-confirmation record again", () => socket.write(encodeFrame(sealer.seal(RecordType.keyConfirmation, utf8("{}"))))],
          ["unknown record type", () => socket.write(encodeFrame(sealer.seal(7 as RecordType, utf8("x"))))],
          ["close record with a payload", () => socket.write(encodeFrame(sealer.seal(RecordType.close, utf8("bye"))))],
          ["frame shorter than its overhead", () => socket.write(encodeFrame(randomBytes(prng, prng.int(0, 24))))],
          ["oversized frame", () => {
            const prefix = new Uint8Array(4);
            new DataView(prefix.buffer).setUint32(0, (1 << 20) + 26);
            socket.write(prefix);
          }],
          ["truncated frame, then end", () => {
            const frame = encodeFrame(open);
            socket.end(frame.subarray(0, prng.int(1, frame.length - 1)));
          }],
          ["end without a sealed close", () => socket.end(encodeFrame(open))],
          ["sealed garbage message", () => socket.write(encodeFrame(sealer.seal(RecordType.data, randomBytes(prng, prng.int(0, 100)))))],
          ["data batch of garbage messages", () => {
            const garbage = Array.from({ length: prng.int(2, 6) }, () => randomBytes(prng, prng.int(0, 100)));
            socket.write(encodeFrame(sealer.seal(RecordType.dataBatch, encodeDataBatch(garbage))));
          }],
          ["malformed data batch", () => {
            const batch = encodeDataBatch([encodeMessage({ type: "session.open", ref: fx.opened.ref, pricing }), utf8("x")]);
            socket.write(encodeFrame(sealer.seal(RecordType.dataBatch, mutateBytes(prng, batch).bytes)));
          }],
        ]);
        act();
      }],
    ];

    // Slow peers first: half an Init, then silence. The node must time them out (10 s) and keep serving.
    const slow = Array.from({ length: scaled(8) }, () =>
      raw(async (socket) => {
        const frame = encodeFrame(payerInit);
        socket.write(frame.subarray(0, 100));
      }, 25_000),
    );

    const jobs: Array<[string, Kind[2]]> = [];
    for (const [category, n, act] of kinds) for (let k = scaled(n); k > 0; k--) jobs.push([category, act]);
    for (let k = jobs.length - 1; k > 0; k--) {
      const j = prng.int(0, k);
      [jobs[k], jobs[j]] = [jobs[j]!, jobs[k]!];
    }
    let next = 0;
    let liveness = 0;
    const worker = async () => {
      while (next < jobs.length) {
        const i = next++;
        const [category, act] = jobs[i]!;
        current = `${category} #${i}`;
        ledger.count(category);
        const r0 = performance.now();
        let outcome: "closed" | "timeout";
        try {
          outcome = await raw((socket, frames) => act(socket, frames, i));
        } catch (error) {
          ledger.violate({ category, index: i, kind: "the client side of the case failed", detail: describeError(error).detail, input: category });
          continue;
        }
        ledger.time(category, performance.now() - r0, i);
        ledger.outcome(category, outcome);
        if (outcome === "timeout") ledger.violate({ category, index: i, kind: `the node did not drop the connection within ${REPLY_BOUND_MS} ms`, detail: category, input: category });
        if (i > 0 && i % 250 === 0) {
          // Still serving: a correct payer binds its session.
          const peer = await openPeer(node.port).catch((error: unknown) => error as Error);
          if (peer instanceof Error) ledger.violate({ category: "transport: liveness", index: i, kind: "a correct payer could not connect", detail: peer.message, input: "" });
          else {
            liveness++;
            await peer.connection.close();
          }
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, worker));
    ledger.count("transport: stalled handshake", slow.length);
    const stalled = await Promise.all(slow);
    for (const [i, outcome] of stalled.entries()) {
      ledger.outcome("transport: stalled handshake", outcome);
      if (outcome !== "closed") ledger.violate({ category: "transport: stalled handshake", index: i, kind: "a stalled handshake was not timed out", detail: "half a ChannelOpenInit, then silence", input: "" });
    }
    const peer = await openPeer(node.port);
    await peer.connection.close();
    wall.set("provider node transport", performance.now() - t0);

    const refusals = logs.filter((l) => l.startsWith("handshake refused")).slice(refusedBefore);
    for (const line of refusals) {
      if (line.includes("an unexpected error")) ledger.violate({ category: "transport: node log", index: -1, kind: "a handshake failed with an untyped error (wrapped)", detail: line, input: line });
    }
    for (const line of logs) if (line.startsWith("listener error")) ledger.violate({ category: "transport: node log", index: -1, kind: "listener error", detail: line, input: line });
    for (const u of unhandled.filter((x) => x.at.startsWith("transport:"))) {
      const { detail, stack } = describeError(u.reason);
      ledger.violate({ category: "transport: unhandled rejection", index: -1, kind: "unhandled promise rejection", detail: `${detail} (after ${u.at})`, input: u.at, stack });
    }
    console.log(`      transport: ${jobs.length + slow.length} connections, ${refusals.length} handshakes refused, ${liveness} liveness checks passed, timeouts logged ${refusals.filter((l) => l.includes("did not complete within")).length}`);
    expect(ledger.violations.filter(violationsOf("transport")), ledger.summary(violationsOf("transport"))).to.deep.equal([]);
  });

  /*//////////////////////////////////////////////////////////////
                  BUGS FOUND, EACH AS ITS OWN CASE
  //////////////////////////////////////////////////////////////*/

  /** A separate node and store on the same channel, so a poisoned session cannot affect the others. */
  async function isolatedNode(file: string) {
    const store = SqliteStore.open(path.join(dir, file));
    const isolated = await ProviderNode.start({ account: fx.provider, publicClient: fx.publicClient, domain: fx.domain, store, pricing, handler: echoHandler, modelSnapshotId: "worker:echo@fuzz", log: (line) => logs.push(`[${file}] ${line}`) });
    return {
      node: isolated,
      store,
      stop: async () => {
        await Promise.race([isolated.stop().catch(() => undefined), new Promise((r) => setTimeout(r, 15_000))]);
        await store.close();
      },
    };
  }

  // FIXED (found by this fuzz): decodePacket accepted an `mcp` object holding a value canonical JSON refuses — a
  // lone UTF-16 surrogate ("\ud800") or a number that overflows to Infinity (1e400) — because parseJson does
  // not check them and expectMcp only checks for an object. ProviderNode#invoke then calls
  // canonBytes(packet.payload.mcp) outside its try/catch: canon() throws InvalidJsonError / NonFiniteNumberError,
  // the node's per-session `work` promise chain rejects, and from then on every message of that session is
  // silently dropped (each `.then` is skipped) — the payer waits forever, on this and every later connection —
  // and the rejection is unhandled, which terminates a provider process run by bin/ioi.js (Node's default
  // --unhandled-rejections=throw). Correct behaviour: a typed rejection or a closed connection, and the
  // session keeps serving.
  for (const params of REFUSED_MCP) {
    it(`found by fuzzing, fixed: an invocation whose mcp params are ${params} is answered with a typed rejection (or a close) and the session keeps serving`, async function () {
      this.timeout(60_000);
      current = `bug mcp ${params}`;
      const isolated = await isolatedNode(`bug-mcp-${REFUSED_MCP.indexOf(params)}.db`);
      const before = unhandled.length;
      try {
        const peer = await openPeer(isolated.node.port);
        const signed = await signPaymentTicket({
          account: fx.payer,
          domain: fx.domain,
          ticket: { sessionId: fx.opened.sessionId, provider: fx.provider.address, termsHash: fx.opened.ref.terms.termsHash, seq: 1n, cumulativeAmount: PRICE, receiptRoot: zeroHash },
        });
        const text = wire(invokeJson(signed, { jsonrpc: "2.0", id: 1, method: "tools/echo", params: { v: "__MCP__" } })).replace('{"v":"__MCP__"}', params);
        // Fixed at the boundary: parseJson now refuses what canonical JSON cannot hold, so decodeMessage throws
        // a typed error and the node drops the peer; the session must still serve the payer's next connection.
        const decoded = (() => {
          try {
            decodeMessage(utf8(text));
            return "accepted";
          } catch (error) {
            return (error as Error).name;
          }
        })();
        expect(decoded === "accepted" || TYPED.has(decoded), `decodeMessage threw an untyped ${decoded}`).to.equal(true);
        await peer.connection.send(utf8(text));
        const first = await peer.next(BUG_BOUND_MS);
        const leaked = unhandled.slice(before).map((u) => describeError(u.reason));
        expect(leaked.map((l) => l.detail), `unhandled rejections in the node for the input ${text}:\n${leaked.map((l) => l.stack).join("\n")}`).to.deep.equal([]);
        expect(first, `the node neither answered nor closed within ${BUG_BOUND_MS} ms; input: ${text}`).not.to.equal("timeout");
        if (first === "reply") {
          const answer = decodeMessage(peer.replies.shift()!) as { type?: string; error?: string };
          expect(answer.type).to.equal("reject");
          expect(TYPED.has(answer.error!), answer.error).to.equal(true);
        }
        // The session still serves a correct invocation (on a new connection if the node closed this one).
        const again = first === "closed" ? await openPeer(isolated.node.port) : peer;
        await again.connection.send(utf8(wire(invokeJson(signed, request(1)))));
        expect(await again.next(BUG_BOUND_MS), "a correct invocation after the bad one got no answer").to.equal("reply");
        expect((decodeMessage(again.replies.shift()!) as Packet).packet_type).to.equal("PKT_ACTION_RESULT");
        await again.connection.close();
      } finally {
        await isolated.stop();
      }
    });
  }

  // FIXED (found by this fuzz): when an answer cannot be sent because the connection is already closing (the
  // payer closed it, or sent garbage that made the node close it, while an invocation was being processed),
  // `b.answers = b.answers.then(() => send(...))` in ProviderNode#invoke rejects with ConnectionClosedError and
  // nothing ever catches it. `answers` is per session and shared by every later connection of that session,
  // so every later answer is skipped: a payer that reconnects and re-sends its ticket (what PayerClient.connect
  // does) waits forever, and the rejection is unhandled (fatal for bin/ioi.js). Correct behaviour: the lost
  // answer is dropped, and the re-sent ticket is answered from the store on the new connection.
  it("found by fuzzing, fixed: a payer that disconnects while its invocation is being processed can reconnect and get the answer", async function () {
    this.timeout(60_000);
    current = "bug answers chain";
    const isolated = await isolatedNode("bug-answers.db");
    const before = unhandled.length;
    try {
      const peer = await openPeer(isolated.node.port);
      const signed = await signPaymentTicket({
        account: fx.payer,
        domain: fx.domain,
        ticket: { sessionId: fx.opened.sessionId, provider: fx.provider.address, termsHash: fx.opened.ref.terms.termsHash, seq: 1n, cumulativeAmount: PRICE, receiptRoot: zeroHash },
      });
      // The invocation, then at once a message the node refuses: the node closes while the answer is pending.
      await peer.connection.send(utf8(wire(invokeJson(signed, request(1)))));
      await peer.connection.send(utf8("not json"));
      await peer.next(BUG_BOUND_MS);
      await new Promise((r) => setTimeout(r, 500));
      const again = await openPeer(isolated.node.port);
      await again.connection.send(utf8(wire(invokeJson(signed, request(1)))));
      const outcome = await again.next(BUG_BOUND_MS);
      const leaked = unhandled.slice(before).map((u) => describeError(u.reason));
      expect(outcome, `the re-sent ticket got no answer within ${BUG_BOUND_MS} ms (stored receipts: ${isolated.store.receiptCount(fx.opened.sessionId)}; unhandled: ${leaked.map((l) => l.detail).join(" | ")})`).to.equal("reply");
      const answer = decodeMessage(again.replies.shift()!) as Packet;
      expect(answer.packet_type).to.equal("PKT_ACTION_RESULT");
      expect(leaked.map((l) => l.detail), `unhandled rejections in the node:\n${leaked.map((l) => l.stack).join("\n")}`).to.deep.equal([]);
      await again.connection.close();
    } finally {
      await isolated.stop();
    }
  });

  // FIXED (found by this fuzz, transport category "sealed garbage after the handshake"): ProviderNode#serve binds
  // a session with `void this.#bind(...).then((b) => { ...; return send({ type: "session.ready", ... }) }, ...)`.
  // If the connection is closed or closing by the time the session is bound (the payer went away right after
  // session.open, or its next frame was refused), send() rejects with ConnectionClosedError and nothing
  // handles the promise `.then` returned: an unhandled rejection, which terminates a provider process run by
  // bin/ioi.js (Node's default --unhandled-rejections=throw) and with it every other channel it serves.
  // Correct behaviour: the failed send is ignored (the connection is gone) and the node keeps serving.
  it("found by fuzzing, fixed: a payer that goes away right after session.open leaves no unhandled rejection in the node", async function () {
    this.timeout(60_000);
    current = "bug session.ready";
    const isolated = await isolatedNode("bug-ready.db");
    const before = unhandled.length;
    try {
      for (let k = 0; k < 3; k++) {
        const connection = await connectSecure({ host: HOST, port: isolated.node.port, account: fx.payer, sessionId: fx.opened.sessionId, expectedPeer: fx.provider.address, timeoutMs: 15_000 });
        // session.open, then at once a message the node refuses (it closes while the session is being bound).
        await connection.send(encodeMessage({ type: "session.open", ref: fx.opened.ref, pricing }));
        await connection.send(utf8("not json"));
        await connection.closed;
      }
      await new Promise((r) => setTimeout(r, 500));
      const leaked = unhandled.slice(before).map((u) => describeError(u.reason));
      expect(leaked.map((l) => l.detail), `unhandled rejections in the node:\n${leaked.map((l) => l.stack).join("\n")}`).to.deep.equal([]);
      const peer = await openPeer(isolated.node.port);
      await peer.connection.close();
    } finally {
      await isolated.stop();
    }
  });

  // The same two bugs against the real provider process: each unhandled rejection above terminates
  // `bin/ioi.js provider` (exit code 1), and with it every channel the provider serves. Found by this fuzz;
  // checked here so that the severity is on record. Correct behaviour: the process keeps running and serving.
  it("found by fuzzing, fixed: the provider process (bin/ioi.js) survives one hostile message and keeps serving", async function () {
    this.timeout(180_000);
    current = "bug process";
    const rpc = await serveEmbeddedNetwork(hre);
    const outcomes: string[] = [];
    try {
      const signed = await signPaymentTicket({
        account: fx.payer,
        domain: fx.domain,
        ticket: { sessionId: fx.opened.sessionId, provider: fx.provider.address, termsHash: fx.opened.ref.terms.termsHash, seq: 1n, cumulativeAmount: PRICE, receiptRoot: zeroHash },
      });
      const cases: Array<[string, (c: SecureConnection) => Promise<void>]> = [
        [`an invocation whose mcp params are ${REFUSED_MCP[1]}`, async (c) => {
          await c.send(encodeMessage({ type: "session.open", ref: fx.opened.ref, pricing }));
          await new Promise((r) => setTimeout(r, 300));
          await c.send(utf8(wire(invokeJson(signed, { jsonrpc: "2.0", id: 1, method: "tools/echo", params: { v: "__MCP__" } })).replace('{"v":"__MCP__"}', REFUSED_MCP[1])));
        }],
        ["session.open followed at once by a message the node refuses", async (c) => {
          await c.send(encodeMessage({ type: "session.open", ref: fx.opened.ref, pricing }));
          await c.send(utf8("not json"));
        }],
      ];
      for (const [label, act] of cases) {
        const db = path.join(dir, `process-${outcomes.length}.db`);
        const child = spawn(process.execPath, [path.join(ROOT, "bin/ioi.js"), "provider", "--rpc", rpc.url, "--escrow", fx.escrow.address, "--db", db, "--price", PRICE.toString(), "--port", "0"], {
          cwd: ROOT,
          env: { ...process.env, IOI_PRIVATE_KEY: PROVIDER_KEY, IOI_CLI_SOURCE: "1" }, // the sources, never a stale dist/
          stdio: ["ignore", "pipe", "pipe"],
        });
        let stderr = "";
        child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
        const exited = new Promise<string>((resolve) => child.once("exit", (code, signal) => resolve(`exited (code ${code}, signal ${signal})`)));
        try {
          const port = await within(
            new Promise<number>((resolve) => {
              let partial = "";
              child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
                const lines = (partial + chunk).split("\n");
                partial = lines.pop()!;
                for (const line of lines) {
                  try {
                    const event = JSON.parse(line) as { event?: string; port?: number };
                    if (event.event === "provider.ready" && typeof event.port === "number") resolve(event.port);
                  } catch {
                    // a human-readable line
                  }
                }
              });
            }),
            30_000,
            "the provider process's ready line",
          );
          const connection = await connectSecure({ host: HOST, port, account: fx.payer, sessionId: fx.opened.sessionId, expectedPeer: fx.provider.address, timeoutMs: 15_000 });
          connection.on("message", () => undefined);
          connection.on("error", () => undefined);
          await act(connection);
          const after = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r("running"), 3_000))]);
          connection.destroy();
          if (after !== "running") {
            const crash = stderr.split("\n").filter((l) => !l.startsWith("provider:")).slice(0, 8).join("\n      ");
            outcomes.push(`${label}: the provider process ${after}:\n      ${crash}`);
            continue;
          }
          const peer = await openPeer(port).catch((error: unknown) => error as Error);
          if (peer instanceof Error) outcomes.push(`${label}: the provider process runs but does not serve: ${peer.message}`);
          else await peer.connection.close();
        } finally {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL"); // only the process spawned here
          await exited;
        }
      }
    } finally {
      await rpc.close();
    }
    expect(outcomes, outcomes.join("\n")).to.deep.equal([]);
  });

  /*//////////////////////////////////////////////////////////////
                            AFTERWARDS
  //////////////////////////////////////////////////////////////*/

  it("afterwards: a well-behaved payer streams 64 paid invocations to the same provider node, gets every receipt, and both stores agree", async function () {
    this.timeout(180_000);
    current = "afterwards";
    const sessionId = fx.opened.sessionId;
    const before = providerStore.receiptCount(sessionId);
    expect(payerStore.steps(sessionId).filter((s) => s.receipt).length, "the payer's store holds every receipt accepted during the fuzz").to.equal(before);
    const client = await PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(sessionId)!, port: node.port, timeoutMs: 15_000 });
    try {
      expect(client.ready.lastSeq).to.equal(BigInt(before));
      const streamed = client.stream({ count: 64, inflight: 8, request: (i) => request(100_000 + i) });
      const latencies = await Promise.race([streamed, new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the stream did not finish within 120 s")), 120_000))]);
      expect(latencies).to.have.length(64);
      const { leafCount, root } = await client.commit();
      const n = before + 64;
      expect(leafCount).to.equal(BigInt(n));

      const providerSteps = providerStore.steps(sessionId);
      const payerSteps = payerStore.steps(sessionId);
      expect(providerSteps.map((s) => s.seq), "the provider's steps are seqs 1..n without gaps").to.deep.equal(providerSteps.map((_, i) => BigInt(i + 1)));
      expect(providerSteps.every((s) => s.receipt && s.leaf)).to.equal(true);
      expect(providerStore.receiptCount(sessionId)).to.equal(n);
      expect(payerSteps.map((s) => s.seq)).to.deep.equal(providerSteps.map((s) => s.seq));
      for (const [i, step] of payerSteps.entries()) {
        expect(step.ticket.signature, `ticket ${step.seq}`).to.equal(providerSteps[i]!.ticket.signature);
        expect(step.receipt?.signature, `receipt ${step.seq}`).to.equal(providerSteps[i]!.receipt!.signature);
        expect(step.leaf, `leaf ${step.seq}`).to.equal(providerSteps[i]!.leaf);
      }
      expect(ReceiptAccumulator.fromLeaves(providerStore.leaves(sessionId)).root()).to.equal(root);
      expect(providerStore.latestTicket(sessionId)!.ticket.cumulativeAmount).to.equal(BigInt(n) * PRICE);
      expect(providerStore.latestCommit(sessionId, "provider")!.commit.root).to.equal(root);
      const { summary } = await client.cooperativeClose();
      expect(summary.finalSeq).to.equal(BigInt(n));
      expect(summary.finalAmount).to.equal(BigInt(n) * PRICE);
      expect(summary.finalReceiptRoot).to.equal(root);
    } finally {
      await client.close();
    }
    const late = unhandled.filter((u) => u.at === "afterwards").map((u) => describeError(u.reason).detail);
    expect(late, "unhandled rejections while the well-behaved payer streamed").to.deep.equal([]);
  });

  it(`counted at least 100 000 generated inputs in all (seed ${SEED})`, function () {
    const parsers = [...ledger.counts.keys()].filter((k) => k.startsWith("parser")).length;
    const session = [...ledger.counts.keys()].some((k) => k.startsWith("session"));
    const transport = [...ledger.counts.keys()].some((k) => k.startsWith("transport"));
    if (parsers < 11 || !session || !transport || SCALE < 1) this.skip(); // a --grep or a scaled-down run
    expect(ledger.total()).to.be.at.least(100_000);
  });
});

/*//////////////////////////////////////////////////////////////
                          SAMPLE BUILDERS
//////////////////////////////////////////////////////////////*/

/** A provider-fault resolution of the sample package with a hand-made Lane 1 result and one UPIP replay. */
function sampleResolutionJson(packageJson: unknown): unknown {
  const p = packageFromJson(packageJson);
  const replay = upipRecord({
    state: upipState(SUITE, BAD_DELIVERABLE),
    deps: judgeDeps(),
    process: { command: ["node", "run.js"], intent: "replay the bound test suite", actor: "ioi-arbitration/lane1", env_vars: {}, working_dir: ".", inputs: { suite: { clock_ms: 0, seed: zeroHash }, deliverable: { clock_ms: 0, seed: zeroHash } }, budgets: { steps_per_test: 1000, memory_bytes: 1 << 25, max_output_bytes: 65_536 } },
    result: upipResultOf({ tests: 12, failedTests: ["add_big", "add_one", "mul_neg"], deliverableFaults: [], suiteFault: null, steps: { suite: 1, deliverable: 1 }, stdout: "not ok add_one\n", stderr: "" }),
  });
  const r: Resolution = {
    schema: "ioi.resolution/1",
    caseId: p.caseId,
    chainId: p.chainId,
    disputeManager: p.disputeManager,
    packageHash: packageHash(p),
    graphId: p.graphId,
    stepId: p.stepId,
    policyHash: p.policyHash,
    policyVersion: p.policyVersion,
    rubricVersion: p.rubricVersion,
    modelSnapshotId: p.modelSnapshotId,
    judgeRuntimeHash: h("judge runtime"),
    evidence: p.evidence.map((e) => ({ artifactId: e.artifactId, kind: e.kind, merkleProof: e.kind === "receipt" ? e.content.merkleProof : [] })),
    lane0: { passed: true, checks: [{ name: "ics_hash", status: "pass", detail: null }] },
    objectiveChecks: [
      { name: "passes_tests", status: false, hash: upipHashHex(replay), detail: "3 of 12 tests failed" },
      { name: "language", status: true, hash: null, detail: null },
    ],
    replays: [replay],
    claims: p.claims.map((c) => ({ ...c, prosecutor: null, defender: null, resolver: null })),
    aggregate: { finalVerdict: "provider_fault", aggregateConfidence: 1, unresolved: false, reasonCodes: ["A_CODE", "B_CODE"] },
    remedy: { verdict: 1, refund: 10n ** 17n, slash: 100n },
  };
  return JSON.parse(canon(resolutionToJson(r))) as unknown;
}

/** JSON Schemas meant to trip Ajv: bad regexes, unknown keywords and formats, remote refs, $async, size. */
function hostileSchema(prng: Prng): unknown {
  // Kept small here (Ajv compiles ~2 ms per property); the large case has its own test below.
  const big = () => ({ type: "object", properties: Object.fromEntries(Array.from({ length: prng.int(20, 120) }, (_, i) => [`p${i}`, { type: "string", pattern: `^a{${i % 50}}$` }])) });
  return prng.pick<() => unknown>([
    () => ({ type: "string", pattern: "(a+)+$" }),
    () => ({ type: "string", pattern: "[" }),
    () => ({ type: "string", pattern: "\\p{Foo}" }),
    () => ({ $ref: "http://example.com/schema.json" }),
    () => ({ $ref: "#/definitions/missing" }),
    () => ({ $async: true, type: "object" }),
    () => ({ type: "nope" }),
    () => ({ type: "string", format: "email" }),
    () => ({ unknownKeyword: 1 }),
    () => ({ $id: "x", $ref: "#" }),
    () => ({ $defs: { a: { $ref: "#/$defs/a" } }, $ref: "#/$defs/a" }),
    () => ({ items: [{ type: "string" }, { type: "number" }] }),
    () => ({ minimum: "1" }),
    () => ({ enum: Array.from({ length: 5_000 }, (_, i) => i) }),
    () => ({ const: nest({ a: 1 }, 60, prng) }),
    () => nest({ type: "object" }, prng.pick([30, 63, 64, 65]), prng),
    () => ({ properties: { __proto__: { type: "string" } }, required: ["__proto__"] }),
    () => JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"}}}') as unknown,
    () => ({ type: "object", patternProperties: { "(": {} } }),
    () => ({ if: { type: "string" }, then: { minLength: -1 } }),
    () => ({ multipleOf: 0 }),
    () => ({ type: "integer", maximum: 1e400 }),
    big,
    () => mutateValue(prng, { type: "object", required: ["a"], properties: { a: { type: "integer" } } }, { max: 3 }).value,
    () => randomValue(prng, 0, true),
    () => prng.chance(0.5),
  ])();
}

function icsRoundTrip(value: unknown): void {
  const ics = value as ReturnType<typeof icsFromJson>;
  const again = icsFromJson(JSON.parse(canon(icsToJson(ics))));
  if (icsHash(again) !== icsHash(ics)) throw new Error("the ICS does not round-trip to the same hash");
}

function resolutionRoundTrip(value: unknown): void {
  const r = value as Resolution;
  const again = resolutionFromJson(JSON.parse(canon(resolutionToJson(r))));
  if (resolutionHash(again) !== resolutionHash(r)) throw new Error("the resolution does not round-trip to the same hash");
}

function packageRoundTrip(value: unknown): void {
  const p = value as ReturnType<typeof packageFromJson>;
  const again = packageFromJson(JSON.parse(canon(packageToJson(p))));
  if (packageHash(again) !== packageHash(p)) throw new Error("the package does not round-trip to the same hash");
}

/** Plain data only: objects with Object.prototype (or null), arrays, and JSON scalars. */
function assertPlain(value: unknown): void {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) stack.push(...v);
    else if (typeof v === "object" && v !== null) {
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) throw new Error("a parsed object does not have a plain prototype");
      stack.push(...Object.values(v));
    }
  }
}
