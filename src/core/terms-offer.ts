/**
 * TermsOffer: the provider's signed statement of the price list it serves channels on, for one escrow on
 * one chain. A payer asks for it (`terms.request` over the sealed socket) before it funds anything, and
 * opens a channel only on a terms hash the provider signed (issue 12: no funding before agreement).
 */
import { concat, getAddress, keccak256, stringToBytes, type Address, type Hex, type LocalAccount } from "viem";

import { artifactId } from "./canonical";
import { assertDigestSigner, signDigest, type GasEscrowDomain } from "./eip712";
import { BindingMismatchError } from "./errors";
import { pricingTermsFromJson, pricingTermsToJson, termsHashOf, type PricingTerms, type PricingTermsJson } from "./terms";
import { expectAddress, expectHash, expectObject, expectSignatureHex, expectUint, uintToJson } from "./validate";

export type TermsOffer = { provider: Address; chainId: bigint; escrow: Address; pricing: PricingTerms; termsHash: Hex };
export type TermsOfferJson = { provider: Hex; chainId: string; escrow: Hex; pricing: PricingTermsJson; termsHash: Hex };
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
  };
}

export function termsOfferFromJson(value: unknown, path = "TermsOffer"): TermsOffer {
  const o = expectObject(value, path, ["provider", "chainId", "escrow", "pricing", "termsHash"]);
  return {
    provider: expectAddress(o.provider, `${path}.provider`),
    chainId: expectUint(o.chainId, `${path}.chainId`, 53),
    escrow: expectAddress(o.escrow, `${path}.escrow`),
    pricing: pricingTermsFromJson(o.pricing, `${path}.pricing`),
    termsHash: expectHash(o.termsHash, `${path}.termsHash`),
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

/** The provider's offer of `pricing` on the escrow of `domain`. */
export async function signTermsOffer(account: LocalAccount, domain: GasEscrowDomain, pricing: PricingTerms): Promise<SignedTermsOffer> {
  const offer: TermsOffer = { provider: account.address, chainId: BigInt(domain.chainId), escrow: domain.verifyingContract, pricing, termsHash: termsHashOf(pricing) };
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
