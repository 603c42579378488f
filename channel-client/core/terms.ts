/**
 * A channel's fixed terms (mirroring `IGasEscrow.ChannelTerms`), the session id the contract derives from
 * them, and the pricing document whose hash is `termsHash`.
 */
import { getAddress, zeroAddress, type Address, type Hex } from "viem";

import { artifactId, parseJson } from "./canonical";
import { InvalidFieldError } from "./errors";
import { hashTyped, type GasEscrowDomain } from "./eip712";
import { assertMatchesSchema } from "./schemas";
import { expectUint, uintToJson } from "./validate";

/** Mirrors `IGasEscrow.ChannelTerms` field for field. `asset` is the zero address for native ETH. */
export type ChannelTerms = {
  payer: Address;
  provider: Address;
  funder: Address;
  asset: Address;
  termsHash: Hex;
  policyHash: Hex;
  challengeDuration: bigint;
  nonce: bigint;
};

/** A channel as both parties refer to it after it is opened: its terms and the block that opened it. */
export type ChannelRef = { terms: ChannelTerms; openedAt: bigint };

export const NATIVE_ASSET: Address = zeroAddress;

/**
 * The session id `GasEscrow.open` assigns: the EIP-712 digest of `Session(terms…, openedAt)` in the
 * escrow's domain. Binding the chain id, the contract and the opening block means a ticket signed for one
 * session verifies for no other session, chain or deployment.
 */
export function sessionIdOf(domain: GasEscrowDomain, ref: ChannelRef): Hex {
  return hashTyped(domain, "Session", { ...ref.terms, openedAt: ref.openedAt });
}

/**
 * The terms document of a channel: `termsHash = keccak256(canon(document as JSON))` (whitepaper 4.2.1, A.3:
 * the terms hash covers pricing, dispute rules and the policy envelope). Two versions, told apart by
 * `version` (decision 0026):
 *
 * - `"1"`, the flat price list kept for channels opened before issue 14: every invocation costs
 *   `pricePerInvocation`; no model, dispute rules or receipt set are bound.
 * - `"2"`, the terms document: a base price per invocation plus a price per metered unit (tokens or seconds)
 *   with a cap per call, the model snapshot ids the provider may serve, the session's dispute rules and the
 *   receipt bindings every invocation's receipt must carry.
 *
 * The name `PricingTerms` is kept (it is in the library's public API); `TermsDocument` is the same type.
 */
export type PricingTerms = PricingTermsV1 | TermsDocumentV2 | TermsDocumentV3 | TermsDocumentV4;
export type TermsDocument = PricingTerms;

export type PricingTermsV1 = {
  version: "1";
  unit: "invocation";
  pricePerInvocation: bigint;
};

/** What one unit of `metering.units` measures in a receipt priced by a v2 document. */
export const METERED_UNITS = ["token", "second"] as const;
export type MeteredUnit = (typeof METERED_UNITS)[number];

/**
 * The receipt bindings a v2 document can require of every invocation (whitepaper 8.2.1, RRS-A), each a
 * commitment the session receipt carries: the request (`offloadPacketHash`), the output (`outputHash`) and
 * the model (`modelSnapshotId`). A binding is missing when its commitment is empty (the zero hash, the empty
 * string): the receipt then proves nothing about that part of the call (9.2.6, lying by omission).
 */
export const RECEIPT_BINDINGS = ["rrsa_request_binding", "rrsa_output_commitment", "rrsa_model_or_program_hash"] as const;
export type ReceiptBinding = (typeof RECEIPT_BINDINGS)[number];

/** The Lane 0 violation kinds a v2 document can attach a penalty (an SLA bond slash) to. */
export const VIOLATION_KINDS = [
  "RECEIPT_POLICY_MISMATCH",
  "RECEIPT_OVER_METERED",
  "RECEIPT_CHAIN_GAP",
  "RECEIPT_MODEL_SWAP",
  "RECEIPT_REQUIRED_MISSING",
  // Issue 12 item 5: a receipt proven into a committed root whose request or output hash is not the one of the
  // receipt the provider delivered for the same seq (it signed two different statements of one step).
  "RECEIPT_REQUEST_MISMATCH",
  "RECEIPT_OUTPUT_MISMATCH",
] as const;
export type ViolationKind = (typeof VIOLATION_KINDS)[number];

export type TermsDocumentV2 = {
  version: "2";
  pricing: {
    /** Charged for every invocation that succeeds, whatever it meters. */
    perInvocation: bigint;
    /** Charged per metered unit on top of `perInvocation`; absent: the call's units are not priced. */
    perUnit: { unit: MeteredUnit; price: bigint } | null;
    /** No call costs more; a ticket prepays this much per invocation. */
    capPerCall: bigint;
  };
  /** The model snapshot ids the provider may serve; a receipt naming another is a model swap (9.2.3). */
  models: string[];
  disputes: {
    /** How long after a cooperative settlement the payer may still dispute a receipt, in seconds. */
    windowAfterSettlement: bigint;
    /** The slash of the provider's SLA bond (in the registry's bond token) per proven violation of each kind. */
    penalties: Partial<Record<ViolationKind, bigint>>;
    /** Whether a refund owed after the escrow paid out comes from the provider's SLA bond (decision 0026). */
    refundsFromBond: boolean;
  };
  /** The bindings every invocation's receipt must carry (RRS-A). */
  requiredReceipts: ReceiptBinding[];
};

export type PricingTermsV1Json = { version: "1"; unit: "invocation"; pricePerInvocation: string };
export type TermsDocumentV2Json = {
  version: "2";
  pricing: { perInvocation: string; perUnit?: { unit: MeteredUnit; price: string }; capPerCall: string };
  models: string[];
  disputes: { windowAfterSettlement: string; penalties: Partial<Record<ViolationKind, string>>; refundsFromBond: boolean };
  requiredReceipts: ReceiptBinding[];
};
export type PricingTermsJson = PricingTermsV1Json | TermsDocumentV2Json | TermsDocumentV3Json | TermsDocumentV4Json;
export type TermsDocumentJson = PricingTermsJson;

export function pricingTermsToJson(terms: PricingTerms): PricingTermsJson {
  if (terms.version === "1") return { version: terms.version, unit: terms.unit, pricePerInvocation: uintToJson(terms.pricePerInvocation) };
  if (terms.version === "3") return termsV3ToJson(terms);
  if (terms.version === "4") return streamTermsToJson(terms);
  const { pricing, disputes } = terms;
  const penalties: Partial<Record<ViolationKind, string>> = {};
  for (const kind of VIOLATION_KINDS) {
    const amount = disputes.penalties[kind];
    if (amount !== undefined) penalties[kind] = uintToJson(amount);
  }
  return {
    version: "2",
    pricing: {
      perInvocation: uintToJson(pricing.perInvocation),
      ...(pricing.perUnit ? { perUnit: { unit: pricing.perUnit.unit, price: uintToJson(pricing.perUnit.price) } } : {}),
      capPerCall: uintToJson(pricing.capPerCall),
    },
    models: [...terms.models],
    disputes: { windowAfterSettlement: uintToJson(disputes.windowAfterSettlement), penalties, refundsFromBond: disputes.refundsFromBond },
    requiredReceipts: [...terms.requiredReceipts],
  };
}

/**
 * Validates a terms document received from a peer or a file against `schemas/terms.schema.json` (either
 * version, bounds included: amounts below 2^128, the settlement window below 2^40, model ids of at most 256
 * UTF-16 code units); the code adds only what a schema cannot say: that the cap is at least the base price
 * (else no call could be charged its own base price).
 */
export function pricingTermsFromJson(value: unknown, path = "PricingTerms"): PricingTerms {
  assertMatchesSchema("terms", value, path);
  const o = value as PricingTermsJson;
  if (o.version === "3") return termsV3FromJson(o, path);
  if (o.version === "4") return streamTermsFromJson(o, path);
  if (o.version === "1") {
    return { version: o.version, unit: o.unit, pricePerInvocation: expectUint(o.pricePerInvocation, `${path}.pricePerInvocation`, 128) };
  }
  const perInvocation = expectUint(o.pricing.perInvocation, `${path}.pricing.perInvocation`, 128);
  const capPerCall = expectUint(o.pricing.capPerCall, `${path}.pricing.capPerCall`, 128);
  if (capPerCall < perInvocation) {
    throw new InvalidFieldError(`${path}.pricing.capPerCall`, `at least pricing.perInvocation (${perInvocation})`, o.pricing.capPerCall);
  }
  const penalties: Partial<Record<ViolationKind, bigint>> = {};
  for (const kind of VIOLATION_KINDS) {
    const amount = o.disputes.penalties[kind];
    if (amount !== undefined) penalties[kind] = expectUint(amount, `${path}.disputes.penalties.${kind}`, 128);
  }
  return {
    version: "2",
    pricing: {
      perInvocation,
      perUnit: o.pricing.perUnit ? { unit: o.pricing.perUnit.unit, price: expectUint(o.pricing.perUnit.price, `${path}.pricing.perUnit.price`, 128) } : null,
      capPerCall,
    },
    models: [...o.models],
    disputes: {
      windowAfterSettlement: expectUint(o.disputes.windowAfterSettlement, `${path}.disputes.windowAfterSettlement`, 40),
      penalties,
      refundsFromBond: o.disputes.refundsFromBond,
    },
    requiredReceipts: [...o.requiredReceipts],
  };
}

export function termsHashOf(terms: PricingTerms): Hex {
  return artifactId(pricingTermsToJson(terms));
}

/** The terms document of a JSON file's text; one sentence naming what is wrong otherwise (InvalidJsonError…). */
export function termsDocumentFromText(text: string | Uint8Array, path = "terms"): PricingTerms {
  return pricingTermsFromJson(parseJson(text, { maxBytes: 1 << 16, what: `The terms document ${path}` }), path);
}

/**
 * What a ticket prepays per invocation: the most one call can cost. A v1 price list charges every call its
 * price; a v2 document charges at most `capPerCall`.
 */
export function prepaidPerCall(terms: PricingTerms): bigint {
  if (terms.version === "3") return mostPerCallV3(terms);
  return terms.version === "1" ? terms.pricePerInvocation : terms.pricing.capPerCall;
}

/**
 * What a successful call metering `units` costs under the terms: v1, the price per invocation; v2,
 * `min(perInvocation + units × perUnit.price, capPerCall)`. The provider charges this, the payer accepts no
 * more, and Lane 0 finds a receipt charging more over-metered.
 */
export function priceOf(terms: PricingTerms, units: bigint): bigint {
  if (terms.version === "1") return terms.pricePerInvocation;
  const { perInvocation, perUnit, capPerCall } = terms.pricing;
  const price = perInvocation + (perUnit ? perUnit.price * units : 0n);
  return price < capPerCall ? price : capPerCall;
}

/** Whether the terms let a receipt name `modelSnapshotId` (v1 binds no model). */
export function modelAllowed(terms: PricingTerms, modelSnapshotId: string): boolean {
  return terms.version === "1" || terms.models.includes(modelSnapshotId);
}

/** The bindings the terms require that `receipt` lacks (empty commitments), in the terms' order. */
export function missingReceiptBindings(
  terms: PricingTerms,
  receipt: { offloadPacketHash: Hex; outputHash: Hex; modelSnapshotId: string },
): ReceiptBinding[] {
  if (terms.version === "1") return [];
  return terms.requiredReceipts.filter((binding) => {
    switch (binding) {
      case "rrsa_request_binding":
        return BigInt(receipt.offloadPacketHash) === 0n;
      case "rrsa_output_commitment":
        return BigInt(receipt.outputHash) === 0n;
      case "rrsa_model_or_program_hash":
        return receipt.modelSnapshotId === "";
    }
  });
}

/** The SLA slash the terms attach to one proven violation of `kind` (0 under v1, or when none is set). */
export function penaltyOf(terms: PricingTerms, kind: string): bigint {
  if (terms.version === "1") return 0n;
  if (terms.version === "4" && (STREAM_VIOLATIONS as readonly string[]).includes(kind)) return terms.stream.falseClaimPenalty;
  return terms.disputes.penalties[kind as ViolationKind] ?? 0n;
}

/** A one-line description of the pricing, for the CLI's messages. */
export function describePricing(terms: PricingTerms): string {
  if (terms.version === "1") return `${terms.pricePerInvocation} wei per invocation`;
  if (terms.version === "4") {
    return `${terms.pricing.capPerCall} wei per ${terms.stream.trancheSeconds} s tranche, ${terms.stream.samplesPerTranche} claim(s) of each Progress Proof sampled`;
  }
  const { perInvocation, perUnit, capPerCall } = terms.pricing;
  const base = `${perInvocation} wei per invocation${perUnit ? ` + ${perUnit.price} wei per ${perUnit.unit}` : ""}, at most ${capPerCall} wei per call`;
  if (terms.version !== "3") return base;
  const tools = Object.entries(terms.pricing.tools);
  const listed = tools.slice(0, 8).map(([name, price]) => `${name} ${price} wei`).join(", ");
  return `${listed}${tools.length > 8 ? ` and ${tools.length - 8} more tools` : ""}${tools.length ? "; other calls " : ""}${base}; listing free`;
}

/** JSON form of a ChannelRef: lowercase hex, integers as decimal strings. */
export type ChannelRefJson = {
  terms: {
    payer: Hex;
    provider: Hex;
    funder: Hex;
    asset: Hex;
    termsHash: Hex;
    policyHash: Hex;
    challengeDuration: string;
    nonce: string;
  };
  openedAt: string;
};

export function channelRefToJson(ref: ChannelRef): ChannelRefJson {
  const t = ref.terms;
  return {
    terms: {
      payer: t.payer.toLowerCase() as Hex,
      provider: t.provider.toLowerCase() as Hex,
      funder: t.funder.toLowerCase() as Hex,
      asset: t.asset.toLowerCase() as Hex,
      termsHash: t.termsHash,
      policyHash: t.policyHash,
      challengeDuration: uintToJson(t.challengeDuration),
      nonce: uintToJson(t.nonce),
    },
    openedAt: uintToJson(ref.openedAt),
  };
}

/** Validates a ChannelRef received from a peer or a file. */
/** Validates a channel reference against the challenge-package schema's `channelRef`; throws a typed error naming the first bad field. */
export function channelRefFromJson(value: unknown, path = "ChannelRef"): ChannelRef {
  assertMatchesSchema("challenge-package", value, path, "channelRef");
  const { terms: t, openedAt } = value as ChannelRefJson;
  return {
    terms: {
      payer: getAddress(t.payer),
      provider: getAddress(t.provider),
      funder: getAddress(t.funder),
      asset: getAddress(t.asset),
      termsHash: t.termsHash,
      policyHash: t.policyHash,
      challengeDuration: BigInt(t.challengeDuration),
      nonce: BigInt(t.nonce),
    },
    openedAt: BigInt(openedAt),
  };
}

/**
 * The window after a cooperative settlement within which the payer may dispute a receipt (decision 0026,
 * amendment): the shorter of the terms' `disputes.windowAfterSettlement` and the chain's `settledDisputeWindow`
 * (the DisputeManager refuses a case after its own; Lane 0 decides one after the terms' against the challenger).
 * v1 terms name no window: the chain's.
 */
export function effectiveDisputeWindow(terms: PricingTerms, chainWindow: bigint): bigint {
  if (terms.version === "1") return chainWindow;
  const own = terms.disputes.windowAfterSettlement;
  return own < chainWindow ? own : chainWindow;
}

/**
 * Why a payer must not agree to `terms` on a chain whose DisputeManager allows `chainWindow` seconds after a
 * settlement, or null: terms that promise a longer dispute window than the chain enforces mislead the payer
 * (a case after the chain's window is refused on-chain whatever the terms say).
 */
export function disputeWindowProblem(terms: PricingTerms, chainWindow: bigint): string | null {
  if (terms.version === "1" || terms.disputes.windowAfterSettlement <= chainWindow) return null;
  return `the terms promise disputes until ${terms.disputes.windowAfterSettlement} s after a settlement, but this chain's DisputeManager accepts them only for ${chainWindow} s (its settledDisputeWindow); a provider must offer a window no longer than the chain's`;
}

/*//////////////////////////////////////////////////////////////
          VERSION 4: MILESTONE STREAMING (issue 32, decision 0037)
//////////////////////////////////////////////////////////////*/

/** Bounds of a v4 `stream` block (the schema states the same; a test compares them). */
export const STREAM_LIMITS = {
  maxTrancheSeconds: 86_400n * 30n,
  maxTranchesInFlight: 16,
  maxSamplesPerTranche: 16,
  minStepBudget: 1,
  maxStepBudget: 100_000,
  minOutputBytes: 1024,
  maxOutputBytes: 1 << 20,
} as const;

/**
 * The stream block of a v4 document (whitepaper 4.2.7): the work is paid per **tranche** — one invocation of the
 * channel, priced `pricing.capPerCall` (= `perInvocation`, no metered units), so the flow rate is
 * `capPerCall / trancheSeconds` — against a provider-signed Progress Proof per tranche (`progress-proof.ts`) whose
 * claims the payer's Flow Controller spot-checks in the sealed Lane 1 engine before it releases the next ticket.
 */
export type StreamTerms = {
  /** The nominal duration of one tranche in seconds (the flow rate is the tranche price over it). */
  trancheSeconds: bigint;
  /** Tickets the payer may have released ahead of the newest checked proof (1: tranche k+1 only after proof k). */
  tranchesInFlight: number;
  /** Claims of each proof the payer samples (its "sampling rate"); a case may cite only a sampled claim. */
  samplesPerTranche: number;
  /** The hash-anchored test suite every proof reports on, as Lane 1 gigs bind theirs. */
  suite: { hash: Hex; command: string[]; stepBudget: number; maxOutputBytes: number };
  /** The SLA bond slash (bond token) for a proven false claim or two different proofs of one tranche. */
  falseClaimPenalty: bigint;
};

export type TermsDocumentV4 = Omit<TermsDocumentV2, "version"> & { version: "4"; stream: StreamTerms };

export type StreamTermsJson = {
  trancheSeconds: string;
  tranchesInFlight: number;
  samplesPerTranche: number;
  suite: { hash: Hex; command: string[]; stepBudget: number; maxOutputBytes: number };
  falseClaimPenalty: string;
};
export type TermsDocumentV4Json = Omit<TermsDocumentV2Json, "version"> & { version: "4"; stream: StreamTermsJson };

/** The violation codes a v4 stream case proves (Lane 0/1, decision 0037); each slashes `falseClaimPenalty`. */
export const STREAM_VIOLATIONS = ["STREAM_FALSE_CLAIM", "STREAM_PROOF_EQUIVOCATION"] as const;

function streamTermsToJson(terms: TermsDocumentV4): TermsDocumentV4Json {
  const { stream } = terms;
  const body = pricingTermsToJson({ ...terms, version: "2" }) as TermsDocumentV2Json;
  return {
    ...body,
    version: "4",
    stream: {
      trancheSeconds: uintToJson(stream.trancheSeconds),
      tranchesInFlight: stream.tranchesInFlight,
      samplesPerTranche: stream.samplesPerTranche,
      suite: { hash: stream.suite.hash, command: [...stream.suite.command], stepBudget: stream.suite.stepBudget, maxOutputBytes: stream.suite.maxOutputBytes },
      falseClaimPenalty: uintToJson(stream.falseClaimPenalty),
    },
  };
}

/**
 * A v4 document (already checked against the schema): its v2 body parsed as v2 is, then what the schema cannot
 * say — a tranche has one fixed price (`perInvocation = capPerCall`, no `perUnit`), the uint bounds.
 */
function streamTermsFromJson(o: TermsDocumentV4Json, path: string): TermsDocumentV4 {
  const { stream, ...rest } = o;
  const body = pricingTermsFromJson({ ...rest, version: "2" }, path) as TermsDocumentV2;
  if (body.pricing.perUnit !== null || body.pricing.perInvocation !== body.pricing.capPerCall) {
    throw new InvalidFieldError(`${path}.pricing`, "one price per tranche: perInvocation equal to capPerCall and no perUnit", o.pricing);
  }
  const trancheSeconds = expectUint(stream.trancheSeconds, `${path}.stream.trancheSeconds`, 64);
  if (trancheSeconds === 0n || trancheSeconds > STREAM_LIMITS.maxTrancheSeconds) {
    throw new InvalidFieldError(`${path}.stream.trancheSeconds`, `1 to ${STREAM_LIMITS.maxTrancheSeconds} seconds`, stream.trancheSeconds);
  }
  return {
    ...body,
    version: "4",
    stream: {
      trancheSeconds,
      tranchesInFlight: stream.tranchesInFlight,
      samplesPerTranche: stream.samplesPerTranche,
      suite: { hash: stream.suite.hash, command: [...stream.suite.command], stepBudget: stream.suite.stepBudget, maxOutputBytes: stream.suite.maxOutputBytes },
      falseClaimPenalty: expectUint(stream.falseClaimPenalty, `${path}.stream.falseClaimPenalty`, 128),
    },
  };
}

/** The price of one tranche under v4 terms (what each ticket adds). */
export function tranchePriceOf(terms: TermsDocumentV4): bigint {
  return terms.pricing.capPerCall;
}

/** The flow rate of v4 terms, in wei per second (rounded down). */
export function flowRateOf(terms: TermsDocumentV4): bigint {
  return terms.pricing.capPerCall / terms.stream.trancheSeconds;
}

/** Whether `terms` are streaming terms (v4). */
export function isStreamTerms(terms: PricingTerms): terms is TermsDocumentV4 {
  return terms.version === "4";
}

/**
 * Whether `terms` are a terms document — the v2 body (pricing with a cap, models, dispute rules, receipt
 * bindings): v2, and v3 (a price per tool) and v4 (milestone streaming), which extend it.
 */
export function hasDocumentBody(terms: PricingTerms): terms is TermsDocumentV2 | TermsDocumentV3 | TermsDocumentV4 {
  return terms.version === "2" || terms.version === "3" || terms.version === "4";
}

/*//////////////////////////////////////////////////////////////
          TERMS VERSION 3: A PRICE PER MCP TOOL (decision 0033)
//////////////////////////////////////////////////////////////*/

/**
 * Version 3: the v2 document plus `pricing.tools`, a price per invocation of each MCP tool by name. What a call
 * costs depends on the request it pays for, which the receipt binds (`offloadPacketHash = keccak256(canon(request))`):
 *
 * - a listing call ({@link FREE_METHODS}) costs 0 and prepays 0;
 * - `tools/call` of a tool the table names costs exactly its price (its metering is not priced) and prepays it;
 * - every other call is priced as under v2 (`perInvocation + units × perUnit`, at most `capPerCall`), prepaying the cap.
 */
export type TermsDocumentV3 = Omit<TermsDocumentV2, "version" | "pricing"> & {
  version: "3";
  pricing: TermsDocumentV2["pricing"] & { tools: Record<string, bigint> };
};
export type TermsDocumentV3Json = Omit<TermsDocumentV2Json, "version" | "pricing"> & {
  version: "3";
  pricing: TermsDocumentV2Json["pricing"] & { tools: Record<string, string> };
};

/** The MCP listing calls a v3 document never charges for: a host learns what is for sale for free. */
export const FREE_METHODS = ["tools/list", "resources/list", "resources/templates/list", "prompts/list"] as const;

function termsV3ToJson(terms: TermsDocumentV3): TermsDocumentV3Json {
  const { tools, ...v2pricing } = terms.pricing;
  const v2 = pricingTermsToJson({ ...terms, version: "2", pricing: v2pricing }) as TermsDocumentV2Json;
  const table: Record<string, string> = {};
  for (const name of Object.keys(tools).sort()) table[name] = uintToJson(tools[name]!);
  return { ...v2, version: "3", pricing: { ...v2.pricing, tools: table } };
}

function termsV3FromJson(o: TermsDocumentV3Json, path: string): TermsDocumentV3 {
  const { tools, ...v2pricing } = o.pricing;
  const v2 = pricingTermsFromJson({ ...o, version: "2", pricing: v2pricing }, path) as TermsDocumentV2;
  const table: Record<string, bigint> = Object.create(null) as Record<string, bigint>;
  for (const [name, price] of Object.entries(tools)) table[name] = expectUint(price, `${path}.pricing.tools.${name}`, 128);
  return { ...v2, version: "3", pricing: { ...v2.pricing, tools: table } };
}

/** The most one call can cost under a v3 document: the cap, or a dearer tool. */
function mostPerCallV3(terms: TermsDocumentV3): bigint {
  let most = terms.pricing.capPerCall;
  for (const price of Object.values(terms.pricing.tools)) if (price > most) most = price;
  return most;
}

/** What a request is priced as under a v3 document: free, a listed tool's price, or the v2 rule. */
export type CallPricing = { kind: "free" } | { kind: "tool"; tool: string; price: bigint } | { kind: "metered" };

/** How the terms price `request` (an MCP JSON-RPC request; anything else is priced by the v2 rule). */
export function callPricingOf(terms: PricingTerms, request: unknown): CallPricing {
  if (terms.version !== "3" || typeof request !== "object" || request === null) return { kind: "metered" };
  const { method, params } = request as { method?: unknown; params?: unknown };
  if ((FREE_METHODS as readonly unknown[]).includes(method)) return { kind: "free" };
  if (method === "tools/call" && typeof params === "object" && params !== null) {
    const name = (params as { name?: unknown }).name;
    if (typeof name === "string" && Object.prototype.hasOwnProperty.call(terms.pricing.tools, name)) return { kind: "tool", tool: name, price: terms.pricing.tools[name]! };
  }
  return { kind: "metered" };
}

/**
 * What a ticket must add to pay for `request`: v1 and v2, {@link prepaidPerCall}; v3, the call's own price
 * (0 for a listing call, the tool's price, or the cap). `request` undefined (unknown): the least any call prepays.
 */
export function prepaidFor(terms: PricingTerms, request: unknown): bigint {
  if (terms.version !== "3") return prepaidPerCall(terms);
  if (request === undefined) return 0n;
  const pricing = callPricingOf(terms, request);
  return pricing.kind === "free" ? 0n : pricing.kind === "tool" ? pricing.price : terms.pricing.capPerCall;
}

/**
 * What a successful call of `request` metering `units` costs: v1 and v2, {@link priceOf}; v3, 0 for a listing
 * call, a listed tool's price, else the v2 rule. `request` undefined (its bytes are not at hand): the most
 * any call can cost under the terms, the only bound that holds without them.
 */
export function priceFor(terms: PricingTerms, request: unknown, units: bigint): bigint {
  if (terms.version !== "3") return priceOf(terms, units);
  if (request === undefined) return mostPerCallV3(terms);
  const pricing = callPricingOf(terms, request);
  return pricing.kind === "free" ? 0n : pricing.kind === "tool" ? pricing.price : priceOf({ ...terms, version: "2" }, units);
}
