/**
 * Session keys (decision 0025, whitepaper 7.3.3): the payer signs one EIP-712 `SessionKey` grant that lets an
 * ephemeral key sign this session's tickets — up to a spend cap, until an expiry, for a set of MCP methods —
 * and keeps its funding key out of the hot loop. The provider verifies the grant with no transaction; a
 * key-signed ticket goes on-chain together with its grant (`closeUnilateralWithKey`, `challengeWithKey`).
 *
 * Revocation is on-chain (`revokeSessionKey`, `revokeAllSessionKeys`) and not retroactive: the chain honours
 * a revoked or expired key's tickets for the channel's challenge duration after the revocation's block time
 * (or the expiry), which is how long a provider that stopped accepting the key when it saw the block has to
 * put its newest ticket on-chain.
 */
import { getAddress, type Address, type Hex, type LocalAccount } from "viem";

import { artifactId } from "./canonical";
import { assertDigestSigner, hashTyped, signDigest, type GasEscrowDomain, type SignatureCheck } from "./eip712";
import {
  BindingMismatchError,
  InvalidFieldError,
  SessionKeyCapabilityError,
  SessionKeyCapExceededError,
  SessionKeyError,
  SessionKeyExpiredError,
  SessionKeyRevokedError,
} from "./errors";
import { assertMatchesSchema } from "./schemas";
import { expectString, uintToJson } from "./validate";

/** Mirrors the EIP-712 `SessionKey` (and `IGasEscrow.SessionKeyGrant` without its signature) field for field. */
export type SessionKeyGrant = {
  sessionId: Hex;
  key: Address;
  /** Unix seconds; the provider accepts the key's tickets only before it. */
  expiry: bigint;
  /** The largest cumulative amount a ticket signed by the key may authorise. */
  spendCap: bigint;
  /** `capabilitiesHash(methods)`: which MCP methods the key may pay for. */
  capabilities: Hex;
  /** The payer's revocation epoch the grant lives in (`GasEscrow.keyEpochOf(payer)` when signed). */
  epoch: bigint;
};

/** A grant with the payer's signature and the method list its `capabilities` commits to. */
export type SignedSessionKeyGrant = { grant: SessionKeyGrant; methods: string[]; signature: Hex };

export type SessionKeyGrantJson = {
  sessionId: Hex;
  key: Hex;
  expiry: string;
  spendCap: string;
  capabilities: Hex;
  epoch: string;
};
export type SignedSessionKeyGrantJson = { grant: SessionKeyGrantJson; methods: string[]; signature: Hex };

/** The method name that lets a key pay for any method. */
export const ANY_METHOD = "*";

/** Longest method name and most methods a grant may list (bounds what a peer can make us hash). */
const MAX_METHOD_LENGTH = 128;
const MAX_METHODS = 256;

/** The methods as a grant commits to them: unique, sorted by UTF-16 code units (canonical JSON's order). */
export function normalizeMethods(methods: readonly string[]): string[] {
  if (methods.length === 0) throw new InvalidFieldError("SessionKeyGrant.methods", "at least one method (or \"*\" for any)", methods);
  if (methods.length > MAX_METHODS) throw new InvalidFieldError("SessionKeyGrant.methods", `at most ${MAX_METHODS} methods`, methods.length);
  for (const [i, method] of methods.entries()) expectString(method, `SessionKeyGrant.methods[${i}]`, MAX_METHOD_LENGTH);
  return [...new Set(methods)].sort();
}

/** `keccak256(canon({version: "1", methods}))` over the normalised method list: the grant's `capabilities`. */
export function capabilitiesHash(methods: readonly string[]): Hex {
  return artifactId({ version: "1", methods: normalizeMethods(methods) });
}

/** Whether a key granted `methods` may pay for a call of `method`. */
export function methodAllowed(methods: readonly string[], method: string): boolean {
  return methods.includes(ANY_METHOD) || methods.includes(method);
}

export function sessionKeyGrantToJson(grant: SessionKeyGrant): SessionKeyGrantJson {
  return {
    sessionId: grant.sessionId,
    key: grant.key.toLowerCase() as Hex,
    expiry: uintToJson(grant.expiry),
    spendCap: uintToJson(grant.spendCap),
    capabilities: grant.capabilities,
    epoch: uintToJson(grant.epoch),
  };
}

export function signedSessionKeyGrantToJson(signed: SignedSessionKeyGrant): SignedSessionKeyGrantJson {
  return { grant: sessionKeyGrantToJson(signed.grant), methods: normalizeMethods(signed.methods), signature: signed.signature };
}

/** Validates a signed grant from a peer or a file; the method list must hash to the grant's capabilities. */
/**
 * Validates a signed grant against the challenge-package schema's `signedSessionKeyGrant`, then what the schema
 * cannot say: each method at most 128 UTF-16 code units (`normalizeMethods`; the schema's `maxLength` counts code
 * points) and the methods hashing to the grant's `capabilities`.
 */
export function signedSessionKeyGrantFromJson(value: unknown, path = "SignedSessionKeyGrant"): SignedSessionKeyGrant {
  assertMatchesSchema("challenge-package", value, path, "signedSessionKeyGrant");
  const o = value as SignedSessionKeyGrantJson;
  const g = o.grant;
  const grant: SessionKeyGrant = {
    sessionId: g.sessionId,
    key: getAddress(g.key),
    expiry: BigInt(g.expiry),
    spendCap: BigInt(g.spendCap),
    capabilities: g.capabilities,
    epoch: BigInt(g.epoch),
  };
  const methods = normalizeMethods(o.methods);
  if (capabilitiesHash(methods) !== grant.capabilities) {
    throw new BindingMismatchError(`${path}.methods do not hash to the grant's capabilities ${grant.capabilities}.`);
  }
  return { grant, methods, signature: o.signature };
}

/** The EIP-712 digest the payer signs and `GasEscrow.hashSessionKey` computes. */
export function sessionKeyGrantDigest(domain: GasEscrowDomain, grant: SessionKeyGrant): Hex {
  return hashTyped(domain, "SessionKey", grant);
}

export type SignSessionKeyGrantParameters = {
  /** The payer: the grant is worth nothing signed by anyone else. */
  account: LocalAccount;
  domain: GasEscrowDomain;
  sessionId: Hex;
  key: Address;
  expiry: bigint;
  spendCap: bigint;
  methods: readonly string[];
  epoch: bigint;
};

/** The payer signs a grant for `key` (no transaction). */
export async function signSessionKeyGrant(parameters: SignSessionKeyGrantParameters): Promise<SignedSessionKeyGrant> {
  const { account, domain, sessionId, key, expiry, spendCap, epoch } = parameters;
  if (expiry >= 1n << 64n || spendCap >= 1n << 128n || epoch >= 1n << 64n || expiry < 0n || spendCap < 0n || epoch < 0n) {
    throw new InvalidFieldError("SessionKeyGrant", "an expiry and epoch below 2^64 and a spend cap below 2^128", { expiry, spendCap, epoch });
  }
  const methods = normalizeMethods(parameters.methods);
  const grant: SessionKeyGrant = { sessionId, key: getAddress(key), expiry, spendCap, capabilities: capabilitiesHash(methods), epoch };
  return { grant, methods, signature: await signDigest(account, sessionKeyGrantDigest(domain, grant)) };
}

/**
 * What the provider knows from the chain about a grant: when its key was revoked on the session (0n: not)
 * and the payer's current epoch, so a grant of an older epoch is known revoked (`epochRevokedAt`).
 */
export type SessionKeyChainState = { revokedAt: bigint; currentEpoch: bigint };

/**
 * Checks a grant before any of its key's tickets is accepted: signed by `payer`, for `sessionId`, not revoked,
 * not expired at `now`, in the payer's current epoch. Throws a typed error naming what is wrong.
 */
export async function verifySessionKeyGrant(parameters: {
  domain: GasEscrowDomain;
  signed: SignedSessionKeyGrant;
  payer: Address;
  sessionId: Hex;
  now: bigint;
  chain: SessionKeyChainState;
  /** How the payer's signature is checked (default: recovery; a contract wallet's ERC-1271, decision 0035). */
  check?: SignatureCheck;
}): Promise<void> {
  const { signed, now, chain } = parameters;
  await verifySessionKeyGrantSignature(parameters);
  assertSessionKeyLive(signed, now, chain);
}

/**
 * The time-free part of a grant's validity: signed by `payer` for `sessionId`, its methods matching its
 * capabilities. What an arbitrator can check long after the session (Lane 0), when the key's expiry and any
 * revocation were already judged by the chain at the close.
 */
export async function verifySessionKeyGrantSignature(parameters: {
  domain: GasEscrowDomain;
  signed: SignedSessionKeyGrant;
  payer: Address;
  sessionId: Hex;
  check?: SignatureCheck;
}): Promise<void> {
  const { domain, signed, payer, sessionId, check = assertDigestSigner } = parameters;
  const { grant } = signed;
  if (grant.sessionId !== sessionId) {
    throw new BindingMismatchError(`The session key grant is for session ${grant.sessionId}, not ${sessionId}.`);
  }
  if (capabilitiesHash(signed.methods) !== grant.capabilities) {
    throw new BindingMismatchError(`The session key grant's methods do not hash to its capabilities ${grant.capabilities}.`);
  }
  try {
    await check(sessionKeyGrantDigest(domain, grant), signed.signature, payer, "session key grant");
  } catch (cause) {
    throw new SessionKeyError(`The grant of session key ${grant.key} was not signed by the payer ${payer}.`, { cause });
  }
}

/** The time-and-chain part of a grant's validity, re-checked for every ticket. */
export function assertSessionKeyLive(signed: SignedSessionKeyGrant, now: bigint, chain: SessionKeyChainState): void {
  const { grant } = signed;
  if (chain.revokedAt !== 0n) {
    throw new SessionKeyRevokedError(`Session key ${grant.key} was revoked on-chain at ${chain.revokedAt}; its tickets are refused.`);
  }
  if (grant.epoch < chain.currentEpoch) {
    throw new SessionKeyRevokedError(
      `Session key ${grant.key} was granted in the payer's epoch ${grant.epoch}, which the payer revoked (now ${chain.currentEpoch}).`,
    );
  }
  if (grant.epoch > chain.currentEpoch) {
    throw new SessionKeyError(`Session key ${grant.key} names epoch ${grant.epoch}; the payer is in epoch ${chain.currentEpoch}.`);
  }
  if (now >= grant.expiry) {
    throw new SessionKeyExpiredError(`Session key ${grant.key} expired at ${grant.expiry} (now ${now}); its tickets are refused.`);
  }
}

/** The amount and method checks of one key-signed ticket. */
export function assertWithinGrant(signed: SignedSessionKeyGrant, cumulativeAmount: bigint, method: string | undefined): void {
  const { grant, methods } = signed;
  if (cumulativeAmount > grant.spendCap) {
    throw new SessionKeyCapExceededError(
      `The ticket authorises ${cumulativeAmount}, above session key ${grant.key}'s spend cap of ${grant.spendCap}.`,
    );
  }
  if (method !== undefined && !methodAllowed(methods, method)) {
    throw new SessionKeyCapabilityError(
      `Session key ${grant.key} may pay for ${methods.join(", ")}, not for ${JSON.stringify(method)}.`,
    );
  }
}

/** The grant as the contract takes it (`IGasEscrow.SessionKeyGrant`). */
export function sessionKeyGrantArg(signed: SignedSessionKeyGrant, toCompact: (signature: Hex) => { r: Hex; vs: Hex }) {
  const { grant } = signed;
  return {
    key: grant.key,
    expiry: grant.expiry,
    spendCap: grant.spendCap,
    capabilities: grant.capabilities,
    epoch: grant.epoch,
    sig: toCompact(signed.signature),
  };
}
