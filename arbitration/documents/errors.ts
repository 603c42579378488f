/**
 * Typed errors for everything the arbitration package rejects.
 *
 * Same style as `channel-client/core/errors.ts`: a one-line `shortMessage` naming the path of the offending
 * value and what was wrong with it, and a literal `name` equal to the class name. Field-level mistakes
 * (wrong type, out of range, unknown field, a number where a decimal string belongs) reuse the
 * channel-client errors `InvalidFieldError`, `UnknownFieldError` and `AmountAsNumberError`.
 */
import { BaseError, type BaseErrorParameters } from "../../channel-client/core/errors";

/** A YAML document uses a feature arbitration input may not use, or is not well-formed YAML. */
export class InvalidYamlError extends BaseError {
  override name = "InvalidYamlError" as const;
}

/** A parsed document holds a value both input formats cannot carry identically (e.g. an unsafe number). */
export class InvalidDocumentError extends BaseError {
  override name = "InvalidDocumentError" as const;
  constructor(readonly path: string, reason: string, parameters: BaseErrorParameters = {}) {
    super(`${path} ${reason}`, parameters);
  }
}

/** A file bundle breaks a bundle rule (file count, path shape, size). */
export class InvalidBundleError extends BaseError {
  override name = "InvalidBundleError" as const;
  constructor(readonly path: string, reason: string) {
    super(`${path} ${reason}`);
  }
}

/** A bundle does not hash to the hash it is bound to. */
export class BundleHashMismatchError extends BaseError {
  override name = "BundleHashMismatchError" as const;
  constructor(readonly path: string, readonly expected: string, readonly actual: string) {
    super(`${path} hashes to ${actual}, not to the bound hash ${expected}.`);
  }
}

/** An evidence item's `artifact_id` is not the artifact id of its content. */
export class ArtifactIdMismatchError extends BaseError {
  override name = "ArtifactIdMismatchError" as const;
  constructor(readonly path: string, readonly expected: string, readonly actual: string) {
    super(`${path}.artifact_id is ${expected}, but the content's artifact id (keccak256 of its canonical JSON) is ${actual}.`);
  }
}

/** An Intent Contract Schema is inconsistent as a whole (beyond single-field errors). */
export class InvalidIcsError extends BaseError {
  override name = "InvalidIcsError" as const;
  constructor(readonly path: string, reason: string, parameters: BaseErrorParameters = {}) {
    super(`${path} ${reason}`, parameters);
  }
}

/** A ChallengePackage is inconsistent as a whole (duplicate evidence, dangling references). */
export class InvalidPackageError extends BaseError {
  override name = "InvalidPackageError" as const;
  constructor(readonly path: string, reason: string) {
    super(`${path} ${reason}`);
  }
}

/** A Resolution document is inconsistent as a whole (verdict and remedy disagree, unsorted reason codes...). */
export class InvalidResolutionError extends BaseError {
  override name = "InvalidResolutionError" as const;
  constructor(readonly path: string, reason: string) {
    super(`${path} ${reason}`);
  }
}

/** A UPIP process record is malformed or one of its hashes does not match its content. */
export class InvalidUpipError extends BaseError {
  override name = "InvalidUpipError" as const;
  constructor(readonly path: string, reason: string) {
    super(`${path} ${reason}`);
  }
}

/** A test runner asks for something the sandbox does not run (another program, a script not in the suite). */
export class UnsupportedRunnerError extends BaseError {
  override name = "UnsupportedRunnerError" as const;
  constructor(readonly path: string, reason: string) {
    super(`${path} ${reason}`);
  }
}

/**
 * The isolated sandbox cannot be set up here (no `unshare`, no user namespaces, no temp dir, spawn failed).
 * Callers fail safe: nothing is ever run without isolation.
 */
export class SandboxUnavailableError extends BaseError {
  override name = "SandboxUnavailableError" as const;
}
