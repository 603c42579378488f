/**
 * FaultStatement: the provider's signed declaration that one paid step of a session failed terminally
 * upstream (whitepaper 8.3.1.3, the session form of a gig's fault receipt; decision 0015, amendment
 * "the session no-fault path"). It names the step (session, seq, and the hash of the request it answers) and
 * the compute the provider says the failed call cost (`computeSpent`, in the session's asset units), so a
 * case on a receipt that charged more than that is decided `NoFault` with the difference refunded.
 *
 * The provider signs one only for a failed call, and sends it beside the receipt in PKT_ACTION_RESULT; a
 * successful call carries none (nothing is added to the hot path). The payer checks it and keeps it.
 *
 * Signed like receipts: `keccak256(keccak256(FAULT_SIGNATURE_DOMAIN) ‖ faultStatementHash)` with the
 * provider's secp256k1 key, where `faultStatementHash = keccak256(canon(json))`. The domain tag keeps a
 * fault signature from being anything else (a receipt, a ticket, a commit); the session id binds the chain
 * and escrow (it is derived from both), as for receipts (decision 0004).
 */
import { keccak256, stringToBytes, type Address, type Hex, type LocalAccount } from "viem";

import { artifactId } from "./canonical";
import { assertDigestSigner, signDigest } from "./eip712";
import { BindingMismatchError } from "./errors";
import { keccak256Hex } from "./keccak";
import { assertMatchesSchema } from "./schemas";
import { uintToJson } from "./validate";

/**
 * Fault codes a provider may declare a request unserviceable with: in a gig's `FAULT_RECEIPT.json` and in a
 * session's fault statement alike (whitepaper 8.3.1.3).
 * - `ERR_UPSTREAM_POLICY_VIOLATION`: the upstream (a model API, the MCP server's own upstream) refused the
 *   request on policy (a safety filter, a copyright refusal), after every fallback.
 * - `ERR_UPSTREAM_FAILURE`: the upstream failed terminally otherwise — the provider's worker crashed, timed
 *   out, wrote what is not a JSON-RPC answer, could not be started, or answered with a JSON-RPC error.
 */
export const NO_FAULT_CODES = ["ERR_UPSTREAM_POLICY_VIOLATION", "ERR_UPSTREAM_FAILURE"] as const;
export type NoFaultCode = (typeof NO_FAULT_CODES)[number];

export type FaultStatement = {
  sessionId: Hex;
  seq: bigint;
  /** keccak256 of the request bytes the failed call answered: the receipt's `offloadPacketHash`. */
  offloadPacketHash: Hex;
  code: NoFaultCode;
  /** What the failed call cost the provider, in the session's asset units (a failed call is charged 0: 0). */
  computeSpent: bigint;
};

export type FaultStatementJson = { sessionId: Hex; seq: string; offloadPacketHash: Hex; code: NoFaultCode; computeSpent: string };

export type SignedFaultStatement = { statement: FaultStatement; signature: Hex };
export type SignedFaultStatementJson = { statement: FaultStatementJson; signature: Hex };

/** Domain tag of fault-statement signatures: a fault signature can be nothing else. */
export const FAULT_SIGNATURE_DOMAIN = "IOI_SIG_DOMAIN_FAULT_V1";
const FAULT_SIGNATURE_DOMAIN_HASH = keccak256(stringToBytes(FAULT_SIGNATURE_DOMAIN));

export function faultStatementToJson(statement: FaultStatement): FaultStatementJson {
  return {
    sessionId: statement.sessionId,
    seq: uintToJson(statement.seq),
    offloadPacketHash: statement.offloadPacketHash,
    code: statement.code,
    computeSpent: uintToJson(statement.computeSpent),
  };
}

/** Validates a statement against the packet schema's `faultStatement`; throws a typed error naming the first bad field. */
export function faultStatementFromJson(value: unknown, path = "FaultStatement"): FaultStatement {
  assertMatchesSchema("packet", value, path, "faultStatement");
  return faultStatementOf(value as FaultStatementJson);
}

/** A statement from JSON its schema accepted. */
function faultStatementOf(o: FaultStatementJson): FaultStatement {
  return { sessionId: o.sessionId, seq: BigInt(o.seq), offloadPacketHash: o.offloadPacketHash, code: o.code, computeSpent: BigInt(o.computeSpent) };
}

export function signedFaultStatementToJson(signed: SignedFaultStatement): SignedFaultStatementJson {
  return { statement: faultStatementToJson(signed.statement), signature: signed.signature };
}

export function signedFaultStatementFromJson(value: unknown, path = "SignedFaultStatement"): SignedFaultStatement {
  assertMatchesSchema("packet", value, path, "signedFaultStatement");
  const o = value as SignedFaultStatementJson;
  return { statement: faultStatementOf(o.statement), signature: o.signature };
}

/** `keccak256(canon(statement))`: the statement's id. */
export function faultStatementHash(statement: FaultStatement): Hex {
  return artifactId(faultStatementToJson(statement));
}

/** What the provider signs: `keccak256(keccak256(FAULT_SIGNATURE_DOMAIN) ‖ faultStatementHash)`. */
export function faultStatementDigest(statementHash: Hex): Hex {
  const preimage = Buffer.alloc(64);
  preimage.write(FAULT_SIGNATURE_DOMAIN_HASH.slice(2), 0, "hex");
  preimage.write(statementHash.slice(2), 32, "hex");
  return keccak256Hex(preimage);
}

export async function signFaultStatement(parameters: { account: LocalAccount; statement: FaultStatement }): Promise<SignedFaultStatement> {
  const { account, statement } = parameters;
  return { statement, signature: await signDigest(account, faultStatementDigest(faultStatementHash(statement))) };
}

/** Throws `InvalidSignatureError` unless `signer` (the provider) signed exactly this statement. */
export async function verifyFaultStatement(parameters: { signed: SignedFaultStatement; signer: Address }): Promise<void> {
  const { signed, signer } = parameters;
  await assertDigestSigner(faultStatementDigest(faultStatementHash(signed.statement)), signed.signature, signer, "fault statement");
}

/**
 * The payer's check of a fault statement that arrived with a receipt: signed by the channel's provider, for
 * the same session, seq and request hash as the receipt it came with. `BindingMismatchError` or
 * `InvalidSignatureError` otherwise.
 */
export async function verifyFaultStatementFor(parameters: {
  signed: SignedFaultStatement;
  provider: Address;
  receipt: { sessionId: Hex; seq: bigint; offloadPacketHash: Hex };
}): Promise<void> {
  const { signed, provider, receipt } = parameters;
  const s = signed.statement;
  if (s.sessionId !== receipt.sessionId || s.seq !== receipt.seq || s.offloadPacketHash !== receipt.offloadPacketHash) {
    throw new BindingMismatchError(
      `The fault statement names session ${s.sessionId} seq ${s.seq} request ${s.offloadPacketHash}; its receipt is session ${receipt.sessionId} seq ${receipt.seq} request ${receipt.offloadPacketHash}.`,
    );
  }
  await verifyFaultStatement({ signed, signer: provider });
}

/**
 * The code a provider declares for a failed call's JSON-RPC error: a worker that names a no-fault code in
 * `error.data.fault` (e.g. its upstream refused on policy) gets that code; every other failure is
 * `ERR_UPSTREAM_FAILURE`.
 */
export function faultCodeOf(error: { data?: unknown } | undefined): NoFaultCode {
  const data = error?.data;
  const declared = typeof data === "object" && data !== null ? (data as { fault?: unknown }).fault : undefined;
  return typeof declared === "string" && (NO_FAULT_CODES as readonly string[]).includes(declared) ? (declared as NoFaultCode) : "ERR_UPSTREAM_FAILURE";
}
