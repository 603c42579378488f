/**
 * A channel's fixed terms (mirroring `IGasEscrow.ChannelTerms`), the session id the contract derives from
 * them, and the pricing document whose hash is `termsHash`.
 */
import { zeroAddress, type Address, type Hex } from "viem";

import { artifactId } from "./canonical";
import { hashTyped, type GasEscrowDomain } from "./eip712";
import { assertMatchesSchema } from "./schemas";
import { expectAddress, expectHash, expectObject, expectUint, uintToJson } from "./validate";

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
 * The pricing rules of a channel; `termsHash = keccak256(canon(PricingTerms as JSON))`. Every invocation
 * costs `pricePerInvocation`, so ticket `seq = n` must authorise at least `n × pricePerInvocation`.
 */
export type PricingTerms = {
  version: "1";
  unit: "invocation";
  pricePerInvocation: bigint;
};

export type PricingTermsJson = { version: "1"; unit: "invocation"; pricePerInvocation: string };

export function pricingTermsToJson(terms: PricingTerms): PricingTermsJson {
  return { version: terms.version, unit: terms.unit, pricePerInvocation: uintToJson(terms.pricePerInvocation) };
}

/** Validates a PricingTerms document received from a peer or a file, against `schemas/terms.schema.json`. */
export function pricingTermsFromJson(value: unknown, path = "PricingTerms"): PricingTerms {
  assertMatchesSchema("terms", value, path);
  const o = value as PricingTermsJson;
  // The schema says "a decimal string"; the uint128 bound of the on-chain amount is checked here.
  return { version: o.version, unit: o.unit, pricePerInvocation: expectUint(o.pricePerInvocation, `${path}.pricePerInvocation`, 128) };
}

export function termsHashOf(terms: PricingTerms): Hex {
  return artifactId(pricingTermsToJson(terms));
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
export function channelRefFromJson(value: unknown, path = "ChannelRef"): ChannelRef {
  const o = expectObject(value, path, ["terms", "openedAt"]);
  const t = expectObject(o.terms, `${path}.terms`, [
    "payer",
    "provider",
    "funder",
    "asset",
    "termsHash",
    "policyHash",
    "challengeDuration",
    "nonce",
  ]);
  return {
    terms: {
      payer: expectAddress(t.payer, `${path}.terms.payer`),
      provider: expectAddress(t.provider, `${path}.terms.provider`),
      funder: expectAddress(t.funder, `${path}.terms.funder`),
      asset: expectAddress(t.asset, `${path}.terms.asset`),
      termsHash: expectHash(t.termsHash, `${path}.terms.termsHash`),
      policyHash: expectHash(t.policyHash, `${path}.terms.policyHash`),
      challengeDuration: expectUint(t.challengeDuration, `${path}.terms.challengeDuration`, 64),
      nonce: expectUint(t.nonce, `${path}.terms.nonce`, 64),
    },
    openedAt: expectUint(o.openedAt, `${path}.openedAt`, 64),
  };
}
