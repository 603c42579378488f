/**
 * A file bundle: a small tree of UTF-8 text files, `{ files: { path: content } }`. Test suites and
 * deliverables travel as bundles inside a ChallengePackage; a bundle's id is the artifact id of its JSON
 * form, so the ICS can bind a test suite by hash.
 */
import type { Hex } from "viem";

import { artifactId } from "../../channel-client/core/canonical";
import { InvalidFieldError } from "../../channel-client/core/errors";
import { expectObject } from "../../channel-client/core/validate";
import { BundleHashMismatchError, InvalidBundleError } from "./errors";

/** A validated bundle: relative path → UTF-8 content. Its JSON form is identical. */
export type Bundle = { files: Record<string, string> };

/** Size limits of one bundle. */
export const BUNDLE_LIMITS = {
  maxFiles: 64,
  maxFileBytes: 256 * 1024,
  maxTotalBytes: 1024 * 1024,
  maxPathLength: 256,
} as const;

/**
 * A relative path of `/`-separated segments, each starting with a letter, digit or `_` (so no `.`, `..`,
 * hidden files, absolute paths, backslashes or empty segments).
 */
export const BUNDLE_PATH = /^[A-Za-z0-9_][A-Za-z0-9._-]*(\/[A-Za-z0-9_][A-Za-z0-9._-]*)*$/;

/** Throws {@link InvalidFieldError} unless `value` is a path a bundle may hold. */
export function expectBundlePath(value: unknown, path: string): string {
  if (
    typeof value !== "string" ||
    value.length > BUNDLE_LIMITS.maxPathLength ||
    !BUNDLE_PATH.test(value) ||
    value.split("/").includes("..")
  ) {
    throw new InvalidFieldError(
      path,
      `a relative file path of at most ${BUNDLE_LIMITS.maxPathLength} characters: segments of A-Z a-z 0-9 . _ - ` +
        "separated by /, each starting with a letter, digit or _",
      value,
    );
  }
  return value;
}

/**
 * Validates a bundle received from outside: 1..64 files, well-formed paths, no path that is both a file
 * and a directory, each file at most 256 KiB and all together at most 1 MiB of UTF-8. Returns a new bundle
 * with the files in path order.
 */
export function bundleFromJson(value: unknown, path = "Bundle"): Bundle {
  const o = expectObject(value, path, ["files"]);
  const files = o.files;
  if (typeof files !== "object" || files === null || Array.isArray(files)) {
    throw new InvalidFieldError(`${path}.files`, "an object mapping file paths to UTF-8 contents", files);
  }
  const names = Object.keys(files).sort();
  if (names.length === 0 || names.length > BUNDLE_LIMITS.maxFiles) {
    throw new InvalidBundleError(`${path}.files`, `holds ${names.length} files; a bundle holds 1 to ${BUNDLE_LIMITS.maxFiles}.`);
  }
  let total = 0;
  const entries: Array<[string, string]> = [];
  for (const name of names) {
    const where = `${path}.files[${JSON.stringify(name)}]`;
    expectBundlePath(name, `${path}.files key ${JSON.stringify(name)}`);
    const content = (files as Record<string, unknown>)[name];
    if (typeof content !== "string") throw new InvalidFieldError(where, "the file's content as a string", content);
    if (!content.isWellFormed()) throw new InvalidBundleError(where, "holds a lone UTF-16 surrogate; file contents must be UTF-8 text.");
    const size = Buffer.byteLength(content, "utf8");
    if (size > BUNDLE_LIMITS.maxFileBytes) {
      throw new InvalidBundleError(where, `is ${size} bytes; a file may hold at most ${BUNDLE_LIMITS.maxFileBytes}.`);
    }
    total += size;
    entries.push([name, content]);
  }
  if (total > BUNDLE_LIMITS.maxTotalBytes) {
    throw new InvalidBundleError(`${path}.files`, `hold ${total} bytes in all; a bundle may hold at most ${BUNDLE_LIMITS.maxTotalBytes}.`);
  }
  // A path that is also a directory of another path could not be written out as a tree.
  const nameSet = new Set(names);
  for (const name of names) {
    const segments = name.split("/");
    for (let i = 1; i < segments.length; i++) {
      const directory = segments.slice(0, i).join("/");
      if (nameSet.has(directory)) {
        throw new InvalidBundleError(`${path}.files`, `hold both a file ${JSON.stringify(directory)} and a file ${JSON.stringify(name)} inside it.`);
      }
    }
  }
  return { files: Object.fromEntries(entries) };
}

/** The JSON form (identical to the TypeScript form). */
export function bundleToJson(bundle: Bundle): Bundle {
  return { files: Object.fromEntries(Object.keys(bundle.files).sort().map((name) => [name, bundle.files[name]!])) };
}

/** `keccak256(canon(bundle))`: the bundle's artifact id, which an ICS names as `test_suite.hash`. */
export function bundleHash(bundle: Bundle): Hex {
  return artifactId(bundleToJson(bundle));
}

/** Throws {@link BundleHashMismatchError} unless `bundle` hashes to `expected`. */
export function assertBundleHash(bundle: Bundle, expected: Hex, path = "Bundle"): void {
  const actual = bundleHash(bundle);
  if (actual !== expected) throw new BundleHashMismatchError(path, expected, actual);
}

/** The bundle's file paths in ascending (code unit) order. */
export function bundlePaths(bundle: Bundle): string[] {
  return Object.keys(bundle.files).sort();
}
