/**
 * The four-way handshake that opens an authenticated, encrypted channel between a payer node (initiator)
 * and a provider node (responder): ChannelOpenInit → ChannelOpenTry → ChannelOpenAck → ChannelOpenConfirm
 * (whitepaper 4.2.1). This module is the pure protocol — messages, their validation, signatures and the key
 * schedule — with no I/O; `secure-connection.ts` runs it over TCP.
 *
 * 1. **ChannelOpenInit** (initiator → responder, canonical JSON in clear): session id, initiator address,
 *    an ephemeral X25519 public key, an ephemeral ML-KEM-768 encapsulation key, a 32-byte nonce, and the
 *    initiator's secp256k1 signature over
 *    `initDigest = keccak256(keccak256("IOI_SIG_DOMAIN_HANDSHAKE_V1") ‖ keccak256(canon(Init without signature)))`.
 * 2. **ChannelOpenTry** (responder → initiator, canonical JSON in clear): responder address, its ephemeral
 *    X25519 public key, the ML-KEM-768 ciphertext encapsulated to the initiator's key, its nonce, and its
 *    signature over the transcript hash
 *    `transcriptHash = keccak256(keccak256("IOI_SIG_DOMAIN_HANDSHAKE_V1") ‖ keccak256(canon(Init)) ‖ keccak256(canon(Try without signature)))`.
 *    (The two preimages differ in length, 64 vs 96 bytes, so an Init signature can never pass as a Try one.)
 * 3. Both derive `HKDF-SHA256(ikm = x25519Shared ‖ mlkemShared, salt = transcriptHash, info = "IOI-CHANNEL-V1")`
 *    → 64 bytes: initiator→responder key ‖ responder→initiator key. The keys depend on both shared secrets,
 *    so an attacker must break both X25519 and ML-KEM-768 (harvest-now-decrypt-later resistance).
 * 4. **ChannelOpenAck** (initiator → responder) and **ChannelOpenConfirm** (responder → initiator) are the first
 *    sealed record of each direction (counter 0) and carry the transcript hash. Ack proves the initiator is live
 *    and holds the ephemeral secrets its signed Init commits to (an Init alone could be a replay); Confirm does
 *    the same for the responder. A mismatch is a {@link KeyConfirmationError}.
 *
 * Authentication: the initiator knows the address it expects for the responder; the responder asks its
 * `authorize(sessionId, initiator)` callback (the provider node checks it is that channel's payer).
 */
import { x25519 } from "@noble/curves/ed25519.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { randomBytes } from "@noble/hashes/utils.js";
import { ml_kem768 } from "@noble/post-quantum/ml-kem.js";
import { bytesToHex, concat, hexToBytes, keccak256, stringToBytes, type Address, type Hex, type LocalAccount } from "viem";

import { canonBytes, parseCanonical } from "../core/canonical";
import { recoverDigestSigner, signDigest } from "../core/eip712";
import { BaseError, InvalidFieldError } from "../core/errors";
import { expectAddress, expectHash, expectLiteral, expectObject, expectSignatureHex, type JsonObject } from "../core/validate";
import { HandshakeError, KeyConfirmationError } from "./errors";

/**
 * Handshake versions this node speaks, oldest first. Version "2" is version "1" plus the data-batch record
 * (several messages in one sealed record, `sealing.ts`); everything else is the same. The initiator offers
 * one version in its signed Init; the responder answers with that version in its signed Try, so the
 * outcome is authenticated by both signatures and nobody in between can talk the peers down (decision 0023).
 */
export const HANDSHAKE_VERSIONS = ["1", "2"] as const;
export type HandshakeVersion = (typeof HANDSHAKE_VERSIONS)[number];
/** The version an initiator offers unless told otherwise: the newest. */
export const HANDSHAKE_VERSION: HandshakeVersion = "2";
/** Whether a connection opened at `version` may carry data-batch records. */
export function versionHasBatches(version: HandshakeVersion): boolean {
  return version !== "1";
}
/** Domain tag of every handshake signature. */
export const HANDSHAKE_SIGNATURE_DOMAIN = "IOI_SIG_DOMAIN_HANDSHAKE_V1";
/** HKDF `info`: binds the derived keys to this protocol and version. */
export const CHANNEL_KDF_INFO = "IOI-CHANNEL-V1";

export const X25519_PUBLIC_KEY_BYTES = 32;
export const MLKEM768_ENCAPSULATION_KEY_BYTES = 1184;
export const MLKEM768_CIPHERTEXT_BYTES = 1088;
export const HANDSHAKE_NONCE_BYTES = 32;
/** Each directional key (XChaCha20-Poly1305). */
export const SESSION_KEY_BYTES = 32;
/**
 * Largest handshake message accepted (an Init is about 2.8 kB): the peer is unauthenticated until its
 * message is checked, so it may not make us buffer more than this.
 */
export const MAX_HANDSHAKE_MESSAGE_BYTES = 8192;

const DOMAIN_HASH = keccak256(stringToBytes(HANDSHAKE_SIGNATURE_DOMAIN));

export type ChannelOpenInit = {
  type: "ChannelOpenInit";
  version: HandshakeVersion;
  sessionId: Hex;
  initiator: Address;
  x25519PublicKey: Hex;
  mlkemEncapsulationKey: Hex;
  nonce: Hex;
  signature: Hex;
};

export type ChannelOpenTry = {
  type: "ChannelOpenTry";
  version: HandshakeVersion;
  sessionId: Hex;
  responder: Address;
  x25519PublicKey: Hex;
  mlkemCiphertext: Hex;
  nonce: Hex;
  signature: Hex;
};

export type KeyConfirmationType = "ChannelOpenAck" | "ChannelOpenConfirm";
/** Payload of the counter-0 sealed record of each direction. */
export type KeyConfirmation = { type: KeyConfirmationType; transcriptHash: Hex };

/** One key per direction; never the same key for both. */
export type SessionKeys = { initiatorToResponder: Uint8Array; responderToInitiator: Uint8Array };

/** The initiator's ephemeral secrets, kept between Init and Try and wiped once used. */
export type InitiatorSecrets = { x25519SecretKey: Uint8Array; mlkemDecapsulationKey: Uint8Array };

/**
 * Fixed ephemeral randomness, for known-answer tests only: real handshakes draw it fresh, and reusing it
 * across connections would reuse keys and nonces.
 */
export type InitiatorEphemeral = { x25519SecretKey: Uint8Array; mlkemKeygenSeed: Uint8Array; nonce: Uint8Array };
export type ResponderEphemeral = { x25519SecretKey: Uint8Array; mlkemMessage: Uint8Array; nonce: Uint8Array };

const INIT_FIELDS = [
  "type",
  "version",
  "sessionId",
  "initiator",
  "x25519PublicKey",
  "mlkemEncapsulationKey",
  "nonce",
  "signature",
] as const;
const TRY_FIELDS = [
  "type",
  "version",
  "sessionId",
  "responder",
  "x25519PublicKey",
  "mlkemCiphertext",
  "nonce",
  "signature",
] as const;

// --- JSON forms ------------------------------------------------------------------------------------------

/** JSON form of an Init (or of an Init without its signature): addresses in lowercase, like every artifact. */
export function initToJson<T extends Omit<ChannelOpenInit, "signature">>(init: T): T {
  return { ...init, initiator: init.initiator.toLowerCase() as Address };
}

export function tryToJson<T extends Omit<ChannelOpenTry, "signature">>(message: T): T {
  return { ...message, responder: message.responder.toLowerCase() as Address };
}

/** The canonical bytes sent on the wire. */
export function encodeHandshakeMessage(message: ChannelOpenInit | ChannelOpenTry): Uint8Array {
  return canonBytes(message.type === "ChannelOpenInit" ? initToJson(message) : tryToJson(message));
}

/** A byte string of exactly `length` bytes as `0x` and lowercase hex. */
function expectBytesHex(value: unknown, path: string, length: number): Hex {
  if (typeof value !== "string" || value.length !== 2 + 2 * length || !/^0x[0-9a-f]*$/.test(value)) {
    throw new InvalidFieldError(path, `${length} bytes as 0x and ${2 * length} lowercase hex digits`, value);
  }
  return value as Hex;
}

/** Checks `type` first, so that a message out of turn is named as such rather than by its missing fields. */
function expectMessageType(value: unknown, type: "ChannelOpenInit" | "ChannelOpenTry"): void {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    expectLiteral((value as JsonObject).type, `${type}.type`, [type]);
  }
}

/** Parses with `parse`, turning any validation error into a {@link HandshakeError} whose cause it is. */
function decodeBoundary<T>(what: string, from: string, bytes: Uint8Array, parse: (value: unknown) => T): T {
  try {
    return parse(parseCanonical(bytes, { maxBytes: MAX_HANDSHAKE_MESSAGE_BYTES, what }));
  } catch (cause) {
    const reason = cause instanceof BaseError ? cause.shortMessage : String(cause);
    throw new HandshakeError(`The ${what} from the ${from} is malformed: ${reason}`, { cause });
  }
}

/** Validates a ChannelOpenInit received from a peer (schema only; see {@link verifyInit} for the signature). */
export function decodeInit(bytes: Uint8Array): ChannelOpenInit {
  return decodeBoundary("ChannelOpenInit", "initiator", bytes, (value) => {
    expectMessageType(value, "ChannelOpenInit");
    const o = expectObject(value, "ChannelOpenInit", INIT_FIELDS);
    return {
      type: expectLiteral(o.type, "ChannelOpenInit.type", ["ChannelOpenInit"]),
      version: expectLiteral(o.version, "ChannelOpenInit.version", HANDSHAKE_VERSIONS),
      sessionId: expectHash(o.sessionId, "ChannelOpenInit.sessionId"),
      initiator: expectAddress(o.initiator, "ChannelOpenInit.initiator"),
      x25519PublicKey: expectBytesHex(o.x25519PublicKey, "ChannelOpenInit.x25519PublicKey", X25519_PUBLIC_KEY_BYTES),
      mlkemEncapsulationKey: expectBytesHex(
        o.mlkemEncapsulationKey,
        "ChannelOpenInit.mlkemEncapsulationKey",
        MLKEM768_ENCAPSULATION_KEY_BYTES,
      ),
      nonce: expectBytesHex(o.nonce, "ChannelOpenInit.nonce", HANDSHAKE_NONCE_BYTES),
      signature: expectSignatureHex(o.signature, "ChannelOpenInit.signature"),
    };
  });
}

/** Validates a ChannelOpenTry received from a peer (schema only; {@link acceptTry} checks the rest). */
export function decodeTry(bytes: Uint8Array): ChannelOpenTry {
  return decodeBoundary("ChannelOpenTry", "responder", bytes, (value) => {
    expectMessageType(value, "ChannelOpenTry");
    const o = expectObject(value, "ChannelOpenTry", TRY_FIELDS);
    return {
      type: expectLiteral(o.type, "ChannelOpenTry.type", ["ChannelOpenTry"]),
      version: expectLiteral(o.version, "ChannelOpenTry.version", HANDSHAKE_VERSIONS),
      sessionId: expectHash(o.sessionId, "ChannelOpenTry.sessionId"),
      responder: expectAddress(o.responder, "ChannelOpenTry.responder"),
      x25519PublicKey: expectBytesHex(o.x25519PublicKey, "ChannelOpenTry.x25519PublicKey", X25519_PUBLIC_KEY_BYTES),
      mlkemCiphertext: expectBytesHex(o.mlkemCiphertext, "ChannelOpenTry.mlkemCiphertext", MLKEM768_CIPHERTEXT_BYTES),
      nonce: expectBytesHex(o.nonce, "ChannelOpenTry.nonce", HANDSHAKE_NONCE_BYTES),
      signature: expectSignatureHex(o.signature, "ChannelOpenTry.signature"),
    };
  });
}

// --- Hashes and keys -------------------------------------------------------------------------------------

/** What the initiator signs: the domain tag and the hash of its Init without the signature. */
export function initDigest(init: Omit<ChannelOpenInit, "signature">): Hex {
  return keccak256(concat([DOMAIN_HASH, keccak256(canonBytes(initToJson(withoutSignature(init))))]));
}

/**
 * The transcript hash: the domain tag, the whole Init (signature included) and the Try without its
 * signature. The responder signs it, it salts the key derivation, and Ack / Confirm carry it.
 */
export function transcriptHash(init: ChannelOpenInit, tryMessage: Omit<ChannelOpenTry, "signature">): Hex {
  return keccak256(
    concat([
      DOMAIN_HASH,
      keccak256(canonBytes(initToJson(init))),
      keccak256(canonBytes(tryToJson(withoutSignature(tryMessage)))),
    ]),
  );
}

/**
 * `HKDF-SHA256(x25519Shared ‖ mlkemShared, salt = transcriptHash, info = "IOI-CHANNEL-V1", 64)`, split into
 * the initiator→responder key (first 32 bytes) and the responder→initiator key (last 32).
 */
export function deriveSessionKeys(parameters: {
  x25519SharedSecret: Uint8Array;
  mlkemSharedSecret: Uint8Array;
  transcriptHash: Hex;
}): SessionKeys {
  const ikm = new Uint8Array([...parameters.x25519SharedSecret, ...parameters.mlkemSharedSecret]);
  const okm = hkdf(sha256, ikm, hexToBytes(parameters.transcriptHash), stringToBytes(CHANNEL_KDF_INFO), 2 * SESSION_KEY_BYTES);
  ikm.fill(0);
  return { initiatorToResponder: okm.slice(0, SESSION_KEY_BYTES), responderToInitiator: okm.slice(SESSION_KEY_BYTES) };
}

function x25519Shared(secretKey: Uint8Array, peerPublicKey: Hex, who: string): Uint8Array {
  try {
    return x25519.getSharedSecret(secretKey, hexToBytes(peerPublicKey));
  } catch (cause) {
    throw new HandshakeError(`The ${who}'s X25519 public key is invalid (a low-order point gives no shared secret).`, {
      cause,
    });
  }
}

// --- Initiator -------------------------------------------------------------------------------------------

export type CreateInitParameters = {
  account: LocalAccount;
  sessionId: Hex;
  /** The version offered (default: the newest, {@link HANDSHAKE_VERSION}). */
  version?: HandshakeVersion;
  /** Known-answer tests only. */
  ephemeral?: InitiatorEphemeral;
};
export type CreateInitReturnType = { init: ChannelOpenInit; secrets: InitiatorSecrets };

/** Draws the initiator's ephemeral keys and signs a ChannelOpenInit. */
export async function createInit(parameters: CreateInitParameters): Promise<CreateInitReturnType> {
  const { account, ephemeral } = parameters;
  const sessionId = expectHash(parameters.sessionId, "sessionId");
  const x25519SecretKey = ephemeral ? ephemeral.x25519SecretKey.slice() : x25519.utils.randomSecretKey();
  const mlkem = ml_kem768.keygen(ephemeral?.mlkemKeygenSeed.slice());
  const unsigned: Omit<ChannelOpenInit, "signature"> = {
    type: "ChannelOpenInit",
    version: expectLiteral(parameters.version ?? HANDSHAKE_VERSION, "version", HANDSHAKE_VERSIONS),
    sessionId,
    initiator: account.address,
    x25519PublicKey: bytesToHex(x25519.getPublicKey(x25519SecretKey)),
    mlkemEncapsulationKey: bytesToHex(mlkem.publicKey),
    nonce: bytesToHex(ephemeral ? ephemeral.nonce : randomBytes(HANDSHAKE_NONCE_BYTES)),
  };
  const signature = await signDigest(account, initDigest(unsigned));
  return {
    init: { ...unsigned, signature },
    secrets: { x25519SecretKey, mlkemDecapsulationKey: mlkem.secretKey },
  };
}

export type AcceptTryParameters = {
  init: ChannelOpenInit;
  secrets: InitiatorSecrets;
  tryMessage: ChannelOpenTry;
  /** The provider this payer means to talk to. */
  expectedResponder: Address;
};
export type HandshakeResult = { keys: SessionKeys; transcriptHash: Hex };

/**
 * Checks a decoded ChannelOpenTry against the Init it answers and the expected responder, then derives the
 * session keys. Wipes `secrets`. Throws {@link HandshakeError} naming the expected and the actual signer.
 */
export async function acceptTry(parameters: AcceptTryParameters): Promise<HandshakeResult> {
  const { init, secrets, tryMessage, expectedResponder } = parameters;
  try {
    if (tryMessage.sessionId !== init.sessionId) {
      throw new HandshakeError(
        `The ChannelOpenTry is for session ${tryMessage.sessionId}; this handshake opens session ${init.sessionId}.`,
      );
    }
    const transcript = transcriptHash(init, tryMessage);
    const signer = await recoverOrFail(transcript, tryMessage.signature, "ChannelOpenTry");
    if (!sameAddress(signer, expectedResponder)) {
      throw new HandshakeError(
        `The ChannelOpenTry is signed by ${signer}; expected the responder ${expectedResponder}.`,
        { details: "Either another node answered, or the message was altered in transit." },
      );
    }
    if (!sameAddress(tryMessage.responder, signer)) {
      throw new HandshakeError(`The ChannelOpenTry says it is from ${tryMessage.responder} but is signed by ${signer}.`);
    }
    if (tryMessage.version !== init.version) {
      throw new HandshakeError(`The ChannelOpenTry answers at version ${tryMessage.version}; the ChannelOpenInit offered ${init.version}.`);
    }
    const classical = x25519Shared(secrets.x25519SecretKey, tryMessage.x25519PublicKey, "responder");
    // ML-KEM decapsulation never fails on a well-formed ciphertext: a wrong one yields an unrelated secret
    // (implicit rejection), which key confirmation then catches.
    const postQuantum = ml_kem768.decapsulate(hexToBytes(tryMessage.mlkemCiphertext), secrets.mlkemDecapsulationKey);
    const keys = deriveSessionKeys({ x25519SharedSecret: classical, mlkemSharedSecret: postQuantum, transcriptHash: transcript });
    classical.fill(0);
    postQuantum.fill(0);
    return { keys, transcriptHash: transcript };
  } finally {
    secrets.x25519SecretKey.fill(0);
    secrets.mlkemDecapsulationKey.fill(0);
  }
}

// --- Responder -------------------------------------------------------------------------------------------

/**
 * Checks that the Init is signed by the initiator it names. Whether that initiator may open this session
 * is the responder's `authorize` decision, taken afterwards.
 */
export async function verifyInit(init: ChannelOpenInit): Promise<void> {
  const signer = await recoverOrFail(initDigest(init), init.signature, "ChannelOpenInit");
  if (!sameAddress(signer, init.initiator)) {
    throw new HandshakeError(`The ChannelOpenInit says it is from ${init.initiator} but is signed by ${signer}.`, {
      details: "The initiator must sign its Init with the key of the address it claims.",
    });
  }
}

export type CreateTryParameters = {
  account: LocalAccount;
  /** A decoded Init that passed {@link verifyInit} and the responder's authorization. */
  init: ChannelOpenInit;
  /** Known-answer tests only. */
  ephemeral?: ResponderEphemeral;
};
export type CreateTryReturnType = HandshakeResult & { tryMessage: ChannelOpenTry };

/** Encapsulates to the initiator's keys, signs the transcript and derives the session keys. */
export async function createTry(parameters: CreateTryParameters): Promise<CreateTryReturnType> {
  const { account, init, ephemeral } = parameters;
  const x25519SecretKey = ephemeral ? ephemeral.x25519SecretKey.slice() : x25519.utils.randomSecretKey();
  try {
    const classical = x25519Shared(x25519SecretKey, init.x25519PublicKey, "initiator");
    let encapsulated: { cipherText: Uint8Array; sharedSecret: Uint8Array };
    try {
      encapsulated = ml_kem768.encapsulate(hexToBytes(init.mlkemEncapsulationKey), ephemeral?.mlkemMessage.slice());
    } catch (cause) {
      throw new HandshakeError("The initiator's ML-KEM-768 encapsulation key is invalid (coefficients out of range).", {
        cause,
      });
    }
    const unsigned: Omit<ChannelOpenTry, "signature"> = {
      type: "ChannelOpenTry",
      // Every version this node decodes it also speaks, so it answers with the one offered.
      version: init.version,
      sessionId: init.sessionId,
      responder: account.address,
      x25519PublicKey: bytesToHex(x25519.getPublicKey(x25519SecretKey)),
      mlkemCiphertext: bytesToHex(encapsulated.cipherText),
      nonce: bytesToHex(ephemeral ? ephemeral.nonce : randomBytes(HANDSHAKE_NONCE_BYTES)),
    };
    const transcript = transcriptHash(init, unsigned);
    const signature = await signDigest(account, transcript);
    const keys = deriveSessionKeys({
      x25519SharedSecret: classical,
      mlkemSharedSecret: encapsulated.sharedSecret,
      transcriptHash: transcript,
    });
    classical.fill(0);
    encapsulated.sharedSecret.fill(0);
    return { tryMessage: { ...unsigned, signature }, keys, transcriptHash: transcript };
  } finally {
    x25519SecretKey.fill(0);
  }
}

// --- Key confirmation ------------------------------------------------------------------------------------

export function encodeKeyConfirmation(type: KeyConfirmationType, transcript: Hex): Uint8Array {
  return canonBytes({ type, transcriptHash: transcript } satisfies KeyConfirmation);
}

/** Checks a decrypted Ack / Confirm payload; throws {@link KeyConfirmationError} on any difference. */
export function checkKeyConfirmation(payload: Uint8Array, type: KeyConfirmationType, expected: Hex): void {
  let received: Hex;
  try {
    const o = expectObject(parseCanonical(payload, { maxBytes: 256, what: type }), type, ["type", "transcriptHash"]);
    expectLiteral(o.type, `${type}.type`, [type]);
    received = expectHash(o.transcriptHash, `${type}.transcriptHash`);
  } catch (cause) {
    const reason = cause instanceof BaseError ? cause.shortMessage : String(cause);
    throw new KeyConfirmationError(`The ${type} is malformed: ${reason}`, { cause });
  }
  if (received !== expected) {
    throw new KeyConfirmationError(`The ${type} carries transcript hash ${received}; ours is ${expected}.`, {
      details: "The two sides saw different handshake messages; the connection is closed.",
    });
  }
}

// --- Helpers ---------------------------------------------------------------------------------------------

async function recoverOrFail(digest: Hex, signature: Hex, what: string): Promise<Address> {
  try {
    return await recoverDigestSigner(digest, signature);
  } catch (cause) {
    const reason = cause instanceof BaseError ? cause.shortMessage : String(cause);
    throw new HandshakeError(`The ${what} signature is invalid: ${reason}`, { cause });
  }
}

function sameAddress(a: Address, b: Address): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** A copy of `message` without its `signature` field (signed messages are hashed without it). */
function withoutSignature<T extends object>(message: T): Omit<T, "signature"> {
  const copy = { ...message } as T & { signature?: Hex };
  delete copy.signature;
  return copy as Omit<T, "signature">;
}
