/**
 * SessionReceipt: the provider's signed statement of what it executed for one paid step. Receipts chain
 * through `prevReceiptHash` and are folded, with the ticket that paid for them, into the receipt leaf.
 */
import { hexToBytes, keccak256, stringToBytes, zeroHash, type Address, type Hex, type LocalAccount } from "viem";

import { artifactId } from "./canonical";
import { keccak256Bytes, keccak256Hex, keccak256TextBytes, keccak256TextHex, writeHexField } from "./keccak";
import { assertDigestSigner, signDigest } from "./eip712";
import { InvalidHexError } from "./errors";
import { assertMatchesSchema } from "./schemas";
import { uintToJson } from "./validate";

/** What the step consumed and what it cost, both as integers (decimal strings in JSON). */
export type Metering = { units: bigint; amount: bigint };

export type SessionReceipt = {
  sessionId: Hex;
  seq: bigint;
  offloadPacketHash: Hex;
  outputHash: Hex;
  policyHash: Hex;
  modelSnapshotId: string;
  metering: Metering;
  /** `receiptHash` of the previous receipt in this session; the zero hash for the first. */
  prevReceiptHash: Hex;
};

export type SessionReceiptJson = {
  sessionId: Hex;
  seq: string;
  offloadPacketHash: Hex;
  outputHash: Hex;
  policyHash: Hex;
  modelSnapshotId: string;
  metering: { units: string; amount: string };
  prevReceiptHash: Hex;
};

export type SignedSessionReceipt = { receipt: SessionReceipt; signature: Hex };
export type SignedSessionReceiptJson = { receipt: SessionReceiptJson; signature: Hex };

/** Hash of the first receipt's predecessor. */
export const GENESIS_RECEIPT_HASH: Hex = zeroHash;

/** Domain tag of receipt signatures (whitepaper 6.4, SIG_DOMAIN_RECEIPT): a receipt signature can be nothing else. */
export const RECEIPT_SIGNATURE_DOMAIN = "IOI_SIG_DOMAIN_RECEIPT_V1";
const RECEIPT_SIGNATURE_DOMAIN_HASH = keccak256(stringToBytes(RECEIPT_SIGNATURE_DOMAIN));
/** The signed digest's preimage: the domain written once, the receipt hash by each call (synchronous). */
const receiptDigestPreimage = Buffer.alloc(64);
receiptDigestPreimage.write(RECEIPT_SIGNATURE_DOMAIN_HASH.slice(2), 0, "hex");

export function sessionReceiptToJson(receipt: SessionReceipt): SessionReceiptJson {
  return {
    sessionId: receipt.sessionId,
    seq: uintToJson(receipt.seq),
    offloadPacketHash: receipt.offloadPacketHash,
    outputHash: receipt.outputHash,
    policyHash: receipt.policyHash,
    modelSnapshotId: receipt.modelSnapshotId,
    metering: { units: uintToJson(receipt.metering.units), amount: uintToJson(receipt.metering.amount) },
    prevReceiptHash: receipt.prevReceiptHash,
  };
}

/**
 * Validates a receipt against the packet schema's `sessionReceipt` (uint64 seq, uint128 metering, a model id of 1 to
 * 256 UTF-16 code units); throws a typed error naming the first bad field.
 */
export function sessionReceiptFromJson(value: unknown, path = "SessionReceipt"): SessionReceipt {
  assertMatchesSchema("packet", value, path, "sessionReceipt");
  return sessionReceiptOf(value as SessionReceiptJson);
}

/** A receipt from JSON its schema accepted. */
function sessionReceiptOf(o: SessionReceiptJson): SessionReceipt {
  return {
    sessionId: o.sessionId,
    seq: BigInt(o.seq),
    offloadPacketHash: o.offloadPacketHash,
    outputHash: o.outputHash,
    policyHash: o.policyHash,
    modelSnapshotId: o.modelSnapshotId,
    metering: { units: BigInt(o.metering.units), amount: BigInt(o.metering.amount) },
    prevReceiptHash: o.prevReceiptHash,
  };
}

export function signedSessionReceiptToJson(signed: SignedSessionReceipt): SignedSessionReceiptJson {
  return { receipt: sessionReceiptToJson(signed.receipt), signature: signed.signature };
}

export function signedSessionReceiptFromJson(value: unknown, path = "SignedSessionReceipt"): SignedSessionReceipt {
  assertMatchesSchema("packet", value, path, "signedSessionReceipt");
  return signedSessionReceiptOf(value as SignedSessionReceiptJson);
}

/**
 * A signed receipt from JSON that a schema embedding `signedSessionReceipt` already accepted (a packet's, in
 * `packetFromJson`): converted, not validated a second time (issue 31 item 5, the hot path).
 */
export function signedSessionReceiptOf(o: SignedSessionReceiptJson): SignedSessionReceipt {
  return { receipt: sessionReceiptOf(o.receipt), signature: o.signature };
}

/** `keccak256(canon(receipt))`: the receipt's id, its half of the leaf, and the next receipt's `prevReceiptHash`. */
export function sessionReceiptHash(receipt: SessionReceipt): Hex {
  const text = canonicalReceiptText(receipt);
  return text === undefined ? artifactId(sessionReceiptToJson(receipt)) : keccak256TextHex(text);
}

/** `sessionReceiptHash` as 32 bytes, for hot loops that feed a {@link LeafBuilder}. */
export function sessionReceiptHashBytes(receipt: SessionReceipt): Uint8Array {
  const text = canonicalReceiptText(receipt);
  return text === undefined ? hexToBytes(artifactId(sessionReceiptToJson(receipt))) : keccak256TextBytes(text);
}

const LOWER_HASH = /^0x[0-9a-f]{64}$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * RFC 8785 canonical JSON of a receipt written out directly: keys in code-unit order, amounts as decimal
 * strings, `modelSnapshotId` escaped as JSON.stringify escapes (which JCS adopts for strings). It is the
 * receipt hot path of a provider (and of batched receipts); anything unusual (non-lowercase hashes,
 * negative amounts, lone surrogates) returns undefined so the generic `canon` path decides — and refuses
 * what it must. `receipt.test` proves both paths give the same bytes.
 */
export function canonicalReceiptText(r: SessionReceipt): string | undefined {
  // A node writes each receipt's text two or three times (to hash it, to store it, to send it), with other
  // receipts in between when calls are pipelined (a provider sends a receipt only once its step is durable):
  // recent texts are kept by seq with the field values they were written from, and returned for equal values.
  const last = typeof r.seq === "bigint" ? recentReceipts.get(r.seq) : undefined;
  if (
    last !== undefined &&
    last.outputHash === r.outputHash &&
    last.prevReceiptHash === r.prevReceiptHash &&
    last.offloadPacketHash === r.offloadPacketHash &&
    last.sessionId === r.sessionId &&
    last.policyHash === r.policyHash &&
    last.modelSnapshotId === r.modelSnapshotId &&
    last.units === r.metering.units &&
    last.amount === r.metering.amount
  ) {
    return last.text;
  }
  if (
    !LOWER_HASH.test(r.sessionId) ||
    !LOWER_HASH.test(r.offloadPacketHash) ||
    !LOWER_HASH.test(r.outputHash) ||
    !LOWER_HASH.test(r.policyHash) ||
    !LOWER_HASH.test(r.prevReceiptHash) ||
    r.seq < 0n ||
    r.metering.units < 0n ||
    r.metering.amount < 0n ||
    LONE_SURROGATE.test(r.modelSnapshotId)
  ) {
    return undefined;
  }
  const text =
    `{"metering":{"amount":"${r.metering.amount}","units":"${r.metering.units}"},` +
    `"modelSnapshotId":${JSON.stringify(r.modelSnapshotId)},"offloadPacketHash":"${r.offloadPacketHash}",` +
    `"outputHash":"${r.outputHash}","policyHash":"${r.policyHash}","prevReceiptHash":"${r.prevReceiptHash}",` +
    `"seq":"${r.seq}","sessionId":"${r.sessionId}"}`;
  recentReceipts.delete(r.seq); // re-inserted last: the map stays oldest-first
  recentReceipts.set(r.seq, {
    sessionId: r.sessionId,
    offloadPacketHash: r.offloadPacketHash,
    outputHash: r.outputHash,
    policyHash: r.policyHash,
    modelSnapshotId: r.modelSnapshotId,
    units: r.metering.units,
    amount: r.metering.amount,
    prevReceiptHash: r.prevReceiptHash,
    text,
  });
  if (recentReceipts.size > RECENT_RECEIPTS) recentReceipts.delete(recentReceipts.keys().next().value!);
  return text;
}

/** Receipt texts written recently, by seq, with the field values each was written from (values, not the object). */
const recentReceipts = new Map<
  bigint,
  { sessionId: string; offloadPacketHash: string; outputHash: string; policyHash: string; modelSnapshotId: string; units: bigint; amount: bigint; prevReceiptHash: string; text: string }
>();
/** More than the receipts a node has in flight (64 in the bench), so a receipt's later writes find its text. */
const RECENT_RECEIPTS = 256;

/**
 * The two lowercase hex digits of every byte value as one 16-bit word, in memory order (the first digit in
 * the lower-addressed byte) on the host's endianness.
 */
const HEX_PAIRS = (() => {
  const table = new Uint16Array(256);
  const pair = new Uint8Array(table.buffer);
  const digits = "0123456789abcdef";
  for (let i = 0; i < 256; i++) {
    pair[2 * i] = digits.charCodeAt(i >> 4);
    pair[2 * i + 1] = digits.charCodeAt(i & 15);
  }
  return table;
})();

const UINT64_END = 1n << 64n;
/** Seqs below this are written digit by digit from a Number; larger ones through a string. */
const SAFE_INTEGER_END = BigInt(Number.MAX_SAFE_INTEGER) + 1n;

/**
 * `sessionReceiptHashBytes` for many receipts of one session, model and policy (batched receipts, issue 15):
 * the canonical text is written byte by byte into one reused buffer — the fixed fields once, then per
 * receipt its counters as decimal ASCII and its three 32-byte hashes as lowercase hex — and hashed where it
 * lies. No receipt object, no string, no regular expression per receipt. The bytes are exactly
 * `canon(sessionReceiptToJson(receipt))` (tests compare them for random receipts).
 */
export class ReceiptHasher {
  readonly #buffer: Buffer;
  readonly #model: Buffer;
  readonly #outputKey = Buffer.from(`","outputHash":"0x`, "latin1");
  readonly #policy: Buffer;
  readonly #seqKey = Buffer.from(`","seq":"`, "latin1");
  readonly #session: Buffer;
  /**
   * The layout as last written: the metering it starts with, where the three hashes and the seq go, and how
   * many digits the seq had. Receipts of one batch usually share their metering, so only the hashes and the
   * seq are written again; the fixed parts move only when the metering's length does.
   */
  #amount: bigint | undefined;
  #units: bigint | undefined;
  #offloadAt = 0;
  #outputAt = 0;
  #prevAt = 0;
  #seqAt = 0;
  #seqDigits = -1;
  #view: Buffer | undefined;
  /** One hash's 64 hex digits as 32 two-digit words, before they are copied into the text. */
  readonly #hexPairs = new Uint16Array(32);
  readonly #hexDigits = new Uint8Array(this.#hexPairs.buffer);

  constructor(fixed: { sessionId: Hex; policyHash: Hex; modelSnapshotId: string }) {
    // Validate once what every receipt of the batch shares, exactly as the generic path would.
    const probe = canonicalReceiptText({
      sessionId: fixed.sessionId,
      seq: 0n,
      offloadPacketHash: zeroHash,
      outputHash: zeroHash,
      policyHash: fixed.policyHash,
      modelSnapshotId: fixed.modelSnapshotId,
      metering: { units: 0n, amount: 0n },
      prevReceiptHash: zeroHash,
    });
    if (probe === undefined) throw new InvalidHexError("A receipt hasher needs a lowercase session id and policy hash and a model id without lone surrogates.");
    const model = Buffer.from(`"modelSnapshotId":${JSON.stringify(fixed.modelSnapshotId)},"offloadPacketHash":"0x`, "utf8");
    // Everything but the model id takes at most 549 bytes (5 hashes in hex, two 39-digit and one 20-digit
    // counter, the keys); 640 leaves room to spare.
    this.#buffer = Buffer.alloc(640 + model.length);
    this.#model = model;
    this.#policy = Buffer.from(`","policyHash":"${fixed.policyHash}","prevReceiptHash":"0x`, "latin1");
    this.#session = Buffer.from(`","sessionId":"${fixed.sessionId}"}`, "latin1");
  }

  /** keccak256 of the receipt's canonical text, as 32 fresh bytes. Hashes are 32 bytes each; counters are unsigned. */
  hash(seq: bigint, offloadPacketHash: Uint8Array, outputHash: Uint8Array, prevReceiptHash: Uint8Array, units: bigint, amount: bigint): Uint8Array {
    if (offloadPacketHash.length !== 32 || outputHash.length !== 32 || prevReceiptHash.length !== 32) {
      throw new InvalidHexError("A receipt's hashes are 32 bytes each.");
    }
    if (seq < 0n || seq >= UINT64_END) throw new InvalidHexError(`A receipt's seq must be a uint64 (0 to 2^64 - 1); received ${seq}.`);
    const b = this.#buffer;
    // The metering is range-checked when it changes: the values the layout was written for were checked then.
    if (amount !== this.#amount || units !== this.#units) {
      if (units < 0n || units >= UINT128_END || amount < 0n || amount >= UINT128_END) {
        throw new InvalidHexError(`A receipt's metering units and amount must be uint128s (0 to 2^128 - 1); received ${units} units for ${amount}.`);
      }
      let at = b.write(`{"metering":{"amount":"${amount}","units":"${units}"},`, 0, "latin1");
      at += this.#model.copy(b, at);
      this.#offloadAt = at;
      at += this.#outputKey.copy(b, at + 64) + 64;
      this.#outputAt = at;
      at += this.#policy.copy(b, at + 64) + 64;
      this.#prevAt = at;
      at += this.#seqKey.copy(b, at + 64) + 64;
      this.#seqAt = at;
      this.#amount = amount;
      this.#units = units;
      this.#seqDigits = -1; // the tail after the seq must be written again
    }
    this.#writeHex(this.#offloadAt, offloadPacketHash);
    this.#writeHex(this.#outputAt, outputHash);
    this.#writeHex(this.#prevAt, prevReceiptHash);
    const digits = this.#writeSeq(seq);
    if (digits !== this.#seqDigits) {
      this.#seqDigits = digits;
      const tailAt = this.#seqAt + digits;
      this.#view = b.subarray(0, tailAt + this.#session.copy(b, tailAt));
    }
    return keccak256Bytes(this.#view!);
  }

  /** Writes 32 bytes as 64 lowercase hex digits at `at`: two digits per table word, then one copy. */
  #writeHex(at: number, bytes: Uint8Array): void {
    const pairs = this.#hexPairs;
    for (let i = 0; i < 32; i++) pairs[i] = HEX_PAIRS[bytes[i]!]!;
    this.#buffer.set(this.#hexDigits, at);
  }

  /** Writes the seq's decimal digits where the seq goes and returns how many there are. */
  #writeSeq(seq: bigint): number {
    if (seq >= SAFE_INTEGER_END) return this.#buffer.write(String(seq), this.#seqAt, "latin1");
    const b = this.#buffer;
    let n = Number(seq);
    let digits = 1;
    for (let m = n; m >= 10; m = Math.floor(m / 10)) digits++;
    for (let at = this.#seqAt + digits - 1; at >= this.#seqAt; at--) {
      b[at] = 48 + (n % 10);
      n = Math.floor(n / 10);
    }
    return digits;
  }
}

const LOWER_SIGNATURE = /^0x[0-9a-f]{130}$/;
const UINT128_END = 1n << 128n;

/**
 * `canon(signedSessionReceiptToJson(signed))` written out directly, for a signed receipt that
 * `signedSessionReceiptFromJson` would accept back unchanged (seq below 2^64, metering below 2^128, a model
 * id of 1..256 characters, a lowercase signature): what the store and the wire keep (issue 15, hot path).
 * Undefined otherwise, and the caller takes the generic, validating path.
 */
export function canonicalSignedReceiptText(signed: SignedSessionReceipt): string | undefined {
  const r = signed.receipt;
  if (
    typeof signed.signature !== "string" ||
    !LOWER_SIGNATURE.test(signed.signature) ||
    typeof r.seq !== "bigint" ||
    typeof r.metering?.units !== "bigint" ||
    typeof r.metering.amount !== "bigint" ||
    typeof r.modelSnapshotId !== "string" ||
    r.modelSnapshotId.length === 0 ||
    r.modelSnapshotId.length > 256 ||
    r.seq >= 1n << 64n ||
    r.metering.units >= UINT128_END ||
    r.metering.amount >= UINT128_END
  ) {
    return undefined;
  }
  const receipt = canonicalReceiptText(r);
  return receipt === undefined ? undefined : `{"receipt":${receipt},"signature":"${signed.signature}"}`;
}

/** What the provider signs: `keccak256(keccak256(RECEIPT_SIGNATURE_DOMAIN) ‖ receiptHash)`. */
export function sessionReceiptDigest(receiptHash: Hex): Hex {
  writeHexField(receiptDigestPreimage, receiptHash, 32, 32);
  return keccak256Hex(receiptDigestPreimage);
}

export async function signSessionReceipt(parameters: {
  account: LocalAccount;
  receipt: SessionReceipt;
}): Promise<SignedSessionReceipt> {
  const { account, receipt } = parameters;
  const signature = await signDigest(account, sessionReceiptDigest(sessionReceiptHash(receipt)));
  return { receipt, signature };
}

/** Throws {@link InvalidSignatureError} unless `signer` (the provider) signed exactly this receipt. */
export async function verifySessionReceipt(parameters: { signed: SignedSessionReceipt; signer: Address }): Promise<void> {
  const { signed, signer } = parameters;
  await assertDigestSigner(
    sessionReceiptDigest(sessionReceiptHash(signed.receipt)),
    signed.signature,
    signer,
    "session receipt",
  );
}
