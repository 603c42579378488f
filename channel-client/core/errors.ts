/**
 * Typed errors for everything the channel client rejects.
 *
 * Modelled on viem's BaseError: a one-line `shortMessage` a user can act on, optional `details`
 * and `cause`, and a literal `name` equal to the class name so that callers (and tests) can match
 * on it without `instanceof` across module copies.
 */
export type BaseErrorParameters = {
  details?: string;
  cause?: unknown;
  metaMessages?: string[];
};

export class BaseError extends Error {
  override name: string = "BaseError";
  readonly shortMessage: string;
  readonly details: string | undefined;
  readonly metaMessages: string[] | undefined;

  constructor(shortMessage: string, parameters: BaseErrorParameters = {}) {
    const lines = [shortMessage];
    if (parameters.metaMessages) lines.push("", ...parameters.metaMessages);
    if (parameters.details) lines.push("", `Details: ${parameters.details}`);
    super(lines.join("\n"), parameters.cause === undefined ? undefined : { cause: parameters.cause });
    this.shortMessage = shortMessage;
    this.details = parameters.details;
    this.metaMessages = parameters.metaMessages;
  }
}

/** A JSON document could not be parsed, or holds a value JSON canonicalization forbids. */
export class InvalidJsonError extends BaseError {
  override name = "InvalidJsonError" as const;
}

/** Bytes that must be in RFC 8785 canonical form were not (whitespace, key order, escapes, duplicates). */
export class NonCanonicalJsonError extends BaseError {
  override name = "NonCanonicalJsonError" as const;
}

/** A number where JSON canonicalization cannot represent it (NaN, ±Infinity) or where it is unsafe. */
export class NonFiniteNumberError extends BaseError {
  override name = "NonFiniteNumberError" as const;
  constructor(readonly path: string, value: number) {
    super(`${path} is ${value}; canonical JSON has no NaN or Infinity.`);
  }
}

/** An amount or other economically meaningful quantity was given as a JSON number. */
export class AmountAsNumberError extends BaseError {
  override name = "AmountAsNumberError" as const;
  constructor(readonly path: string, value: unknown) {
    super(
      `${path} is the JSON number ${String(value)}; amounts and counters must be decimal strings such as "${String(value)}".`,
    );
  }
}

/** A field of an artifact is missing, has the wrong type, or is out of range. */
export class InvalidFieldError extends BaseError {
  override name = "InvalidFieldError" as const;
  constructor(readonly path: string, readonly expected: string, received: unknown) {
    super(`${path} must be ${expected}; received ${describe(received)}.`);
  }
}

/** An artifact has a field its schema does not define. */
export class UnknownFieldError extends BaseError {
  override name = "UnknownFieldError" as const;
  constructor(readonly path: string) {
    super(`${path} is not a field of this artifact; remove it (signed artifacts carry no extra fields).`);
  }
}

/** Input larger than the limit the boundary accepts. */
export class SizeLimitError extends BaseError {
  override name = "SizeLimitError" as const;
  constructor(readonly what: string, readonly size: number, readonly limit: number) {
    super(`${what} is ${size} bytes; the limit is ${limit} bytes.`);
  }
}

/** A signature is malformed, malleable (high s) or not made by the expected signer. */
export class InvalidSignatureError extends BaseError {
  override name = "InvalidSignatureError" as const;
}

/** A signed artifact is bound to another session, chain, contract, provider or terms. */
export class BindingMismatchError extends BaseError {
  override name = "BindingMismatchError" as const;
}

/** A ticket does not strictly advance the channel state (seq) or lowers the cumulative amount. */
export class TicketNotNewerError extends BaseError {
  override name = "TicketNotNewerError" as const;
}

/** A Merkle inclusion proof was asked for a leaf that is not in the accumulator. */
export class LeafIndexOutOfRangeError extends BaseError {
  override name = "LeafIndexOutOfRangeError" as const;
  constructor(readonly index: number, readonly size: number) {
    super(`Leaf ${index} does not exist; the accumulator holds ${size} leaves (indices 0..${size - 1}).`);
  }
}

/** A hex value, hash or address is malformed. */
export class InvalidHexError extends BaseError {
  override name = "InvalidHexError" as const;
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing (the field is missing)";
  if (value === null) return "null";
  if (typeof value === "string") return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (typeof value === "bigint") return `the bigint ${value}`;
  if (typeof value === "number") return `the number ${value}`;
  if (Array.isArray(value)) return "an array";
  return `a value of type ${typeof value}`;
}

/** A ticket pays less than the price of the invocation it is meant to prepay. */
export class TicketUnderpaidError extends BaseError {
  override name = "TicketUnderpaidError" as const;
}

/** A ticket authorises more than the channel's on-chain deposit can pay. */
export class DepositExceededError extends BaseError {
  override name = "DepositExceededError" as const;
}

/**
 * The channel is not open: the provider co-signed its cooperative close, or it is closing or settled
 * on-chain. A provider serves only open channels; the payer gets this instead of work it could not pay for.
 */
export class ChannelNotOpenError extends BaseError {
  override name = "ChannelNotOpenError" as const;
}

/** The two parties' views of the receipt history differ (different root or receipt chain). */
export class ReceiptMismatchError extends BaseError {
  override name = "ReceiptMismatchError" as const;
}

/** A receipt names a model snapshot the channel's terms do not list (whitepaper 9.2.3, model swap). */
export class ModelMismatchError extends BaseError {
  override name = "ModelMismatchError" as const;
}

/** A receipt charges more than the channel's terms price its metering at (or more than the cap per call). */
export class ReceiptOverpricedError extends BaseError {
  override name = "ReceiptOverpricedError" as const;
}

/** A receipt lacks a binding the channel's terms require of every invocation (whitepaper 8.2.1, 9.2.6). */
export class RequiredReceiptMissingError extends BaseError {
  override name = "RequiredReceiptMissingError" as const;
}

/**
 * A ticket signed by a session key is outside what the payer's grant allows (decision 0025): the grant is
 * not the payer's or not for this session, the key expired or was revoked, the ticket exceeds its spend
 * cap, or the call is for a method outside its capabilities.
 */
export class SessionKeyError extends BaseError {
  override name = "SessionKeyError" as const;
}

/** The session key expired (its grant's `expiry` has passed). */
export class SessionKeyExpiredError extends BaseError {
  override name = "SessionKeyExpiredError" as const;
}

/** The payer revoked the session key on-chain (one key, or its whole epoch). */
export class SessionKeyRevokedError extends BaseError {
  override name = "SessionKeyRevokedError" as const;
}

/** The ticket authorises more than the session key's spend cap. */
export class SessionKeyCapExceededError extends BaseError {
  override name = "SessionKeyCapExceededError" as const;
}

/** The call is for a method the session key may not pay for. */
export class SessionKeyCapabilityError extends BaseError {
  override name = "SessionKeyCapabilityError" as const;
}
