/**
 * TermsOffer: the provider's signed statement of the price list it serves channels on, for one escrow on
 * one chain. A payer asks for it (`terms.request` over the sealed socket) before it funds anything, and
 * opens a channel only on a terms hash the provider signed (issue 12: no funding before agreement).
 */
import { concat, getAddress, keccak256, stringToBytes, type Address, type Hex, type LocalAccount } from "viem";

import { artifactId } from "./canonical";
import { assertDigestSigner, signDigest, type GasEscrowDomain } from "./eip712";
import { BindingMismatchError, InvalidFieldError } from "./errors";
import { pricingTermsFromJson, pricingTermsToJson, termsHashOf, type PricingTerms, type PricingTermsJson } from "./terms";
import { expectAddress, expectHash, expectObject, expectSignatureHex, expectUint, uintToJson } from "./validate";

/**
 * `endpoints` (decision 0036): where the provider's processes listen, `host:port`, as the provider lists them.
 * Covered by the offer's signature, so nobody between the payer and the provider can add or swap one; a payer
 * still dials each through the sealed handshake, which proves the provider's key. Absent in an offer of one
 * process (and in every offer signed before the field existed: its JSON and digest are unchanged).
 */
export type TermsOffer = { provider: Address; chainId: bigint; escrow: Address; pricing: PricingTerms; termsHash: Hex; endpoints?: string[] };
export type TermsOfferJson = { provider: Hex; chainId: string; escrow: Hex; pricing: PricingTermsJson; termsHash: Hex; endpoints?: string[] };

/** At most this many endpoints in one offer, each at most MAX_ENDPOINT_LENGTH characters. */
export const MAX_OFFER_ENDPOINTS = 64;
const MAX_ENDPOINT_LENGTH = 261;
const ENDPOINT = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]\s]+):(\d{1,5})$/;
export type SignedTermsOffer = { offer: TermsOffer; signature: Hex };

export const TERMS_OFFER_SIGNATURE_DOMAIN = "IOI_SIG_DOMAIN_TERMS_OFFER_V1";
const DOMAIN_HASH = keccak256(stringToBytes(TERMS_OFFER_SIGNATURE_DOMAIN));

/** The session id a terms query's sealed connection is bound to: no channel exists yet. */
export const TERMS_QUERY_SESSION_ID: Hex = keccak256(stringToBytes("IOI terms query v1"));

export function termsOfferToJson(offer: TermsOffer): TermsOfferJson {
  return {
    provider: offer.provider.toLowerCase() as Hex,
    chainId: uintToJson(offer.chainId),
    escrow: offer.escrow.toLowerCase() as Hex,
    pricing: pricingTermsToJson(offer.pricing),
    termsHash: offer.termsHash,
    ...(offer.endpoints ? { endpoints: [...offer.endpoints] } : {}),
  };
}

function endpointsFromJson(value: unknown, path: string): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_OFFER_ENDPOINTS) {
    throw new InvalidFieldError(path, `a list of 1 to ${MAX_OFFER_ENDPOINTS} host:port endpoints`, value);
  }
  return value.map((e, i) => {
    if (typeof e !== "string" || e.length > MAX_ENDPOINT_LENGTH || !ENDPOINT.test(e)) throw new InvalidFieldError(`${path}[${i}]`, "a host:port endpoint", e);
    return e;
  });
}

export function termsOfferFromJson(value: unknown, path = "TermsOffer"): TermsOffer {
  const o = expectObject(value, path, ["provider", "chainId", "escrow", "pricing", "termsHash"], ["endpoints"]);
  return {
    provider: expectAddress(o.provider, `${path}.provider`),
    chainId: expectUint(o.chainId, `${path}.chainId`, 53),
    escrow: expectAddress(o.escrow, `${path}.escrow`),
    pricing: pricingTermsFromJson(o.pricing, `${path}.pricing`),
    termsHash: expectHash(o.termsHash, `${path}.termsHash`),
    ...(o.endpoints !== undefined ? { endpoints: endpointsFromJson(o.endpoints, `${path}.endpoints`) } : {}),
  };
}

export function signedTermsOfferToJson(signed: SignedTermsOffer): { offer: TermsOfferJson; signature: Hex } {
  return { offer: termsOfferToJson(signed.offer), signature: signed.signature };
}

export function signedTermsOfferFromJson(value: unknown, path = "SignedTermsOffer"): SignedTermsOffer {
  const o = expectObject(value, path, ["offer", "signature"]);
  return { offer: termsOfferFromJson(o.offer, `${path}.offer`), signature: expectSignatureHex(o.signature, `${path}.signature`) };
}

export function termsOfferDigest(offer: TermsOffer): Hex {
  return keccak256(concat([DOMAIN_HASH, artifactId(termsOfferToJson(offer))]));
}

/** The provider's offer of `pricing` on the escrow of `domain`, listing its fleet's `endpoints` when given (decision 0036). */
export async function signTermsOffer(account: LocalAccount, domain: GasEscrowDomain, pricing: PricingTerms, endpoints?: readonly string[]): Promise<SignedTermsOffer> {
  const listed = endpoints && endpoints.length > 0 ? endpointsFromJson([...endpoints].slice(0, MAX_OFFER_ENDPOINTS), "endpoints") : undefined;
  const offer: TermsOffer = { provider: account.address, chainId: BigInt(domain.chainId), escrow: domain.verifyingContract, pricing, termsHash: termsHashOf(pricing), ...(listed ? { endpoints: listed } : {}) };
  return { offer, signature: await signDigest(account, termsOfferDigest(offer)) };
}

/**
 * Checks an offer received from a peer: signed by `provider`, for this escrow and chain, and its terms hash
 * is its pricing document's. Throws BindingMismatchError or InvalidSignatureError naming what is wrong.
 */
export async function verifyTermsOffer(signed: SignedTermsOffer, provider: Address, domain: GasEscrowDomain): Promise<void> {
  const { offer } = signed;
  if (getAddress(offer.provider) !== getAddress(provider)) throw new BindingMismatchError(`The offer is from ${offer.provider}, not the provider ${provider}.`);
  if (offer.chainId !== BigInt(domain.chainId) || getAddress(offer.escrow) !== getAddress(domain.verifyingContract)) {
    throw new BindingMismatchError(`The offer is for escrow ${offer.escrow} on chain ${offer.chainId}, not ${domain.verifyingContract} on chain ${domain.chainId}.`);
  }
  if (termsHashOf(offer.pricing) !== offer.termsHash) throw new BindingMismatchError(`The offer's terms hash ${offer.termsHash} is not the hash of its price list.`);
  await assertDigestSigner(termsOfferDigest(offer), signed.signature, provider, "provider's terms offer");
}
