/**
 * Reading a file or a bundle directory named by a command-line option, for the arbitration commands (`ioi
 * arbitrate`, `ioi arbitrate --verify-upip`, `ioi gig vet`): a regular file, refused before anything beyond
 * `maxBytes` is read; a directory walked within the bundle limits; every failure one sentence naming the
 * option and the file.
 */
import { lstatSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

import { UsageError } from "./common";
import { SizeLimitError } from "../core/errors";
import { BUNDLE_LIMITS, bundleFromJson, expectBundlePath, type Bundle } from "../../arbitration/documents/bundle";
import { InvalidBundleError } from "../../arbitration/documents/errors";

/** The bytes of the regular file `file` given as `--option`, at most `maxBytes` of them. */
export function readOptionFile(option: string, file: string, maxBytes: number): Buffer {
  let size: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) throw new UsageError(`--${option} ${file} is not a regular file.`);
    size = stat.size;
  } catch (cause) {
    if (cause instanceof UsageError) throw cause;
    throw new UsageError(`Cannot read --${option} ${file}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
  }
  if (size > maxBytes) throw new SizeLimitError(`--${option} ${file}`, size, maxBytes);
  try {
    return readFileSync(file);
  } catch (cause) {
    throw new UsageError(`Cannot read --${option} ${file}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
  }
}

/**
 * Reads every regular file under `directory` into a bundle: paths relative to it with `/`, contents as
 * UTF-8 (a byte order mark kept as it is). Refuses symbolic links, devices and other special files, names
 * a bundle may not hold (hidden files among them), invalid UTF-8, and anything past the bundle limits —
 * checked while walking, so an oversized tree is never read in full.
 */
export function readBundleDirectory(directory: string, option: string): Bundle {
  const where = `--${option} ${directory}`;
  let root;
  try {
    root = statSync(directory);
  } catch (cause) {
    throw new UsageError(`Cannot read ${where}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
  }
  if (!root.isDirectory()) throw new UsageError(`${where} is not a directory.`);
  const files: Record<string, string> = {};
  let count = 0;
  let total = 0;
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const walk = (absolute: string, relative: string): void => {
    const entries = readdirSync(absolute).sort();
    for (const name of entries) {
      const rel = relative ? `${relative}/${name}` : name;
      const file = path.join(absolute, name);
      const label = `${where}: ${JSON.stringify(rel)}`;
      expectBundlePath(rel, label);
      const stat = lstatSync(file);
      if (stat.isSymbolicLink()) throw new InvalidBundleError(label, "is a symbolic link; a bundle holds regular files only.");
      if (stat.isDirectory()) {
        walk(file, rel);
        continue;
      }
      if (!stat.isFile()) throw new InvalidBundleError(label, "is not a regular file; a bundle holds regular files only.");
      if (++count > BUNDLE_LIMITS.maxFiles) throw new InvalidBundleError(where, `holds more than ${BUNDLE_LIMITS.maxFiles} files; a bundle holds at most that many.`);
      if (stat.size > BUNDLE_LIMITS.maxFileBytes) {
        throw new InvalidBundleError(label, `is ${stat.size} bytes; a file may hold at most ${BUNDLE_LIMITS.maxFileBytes}.`);
      }
      total += stat.size;
      if (total > BUNDLE_LIMITS.maxTotalBytes) {
        throw new InvalidBundleError(where, `holds more than ${BUNDLE_LIMITS.maxTotalBytes} bytes in all; a bundle may hold at most that.`);
      }
      try {
        files[rel] = decoder.decode(readFileSync(file));
      } catch (cause) {
        if (cause instanceof TypeError) throw new InvalidBundleError(label, "is not valid UTF-8; bundle files are UTF-8 text.");
        throw new UsageError(`Cannot read ${label}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
      }
    }
  };
  walk(directory, "");
  return bundleFromJson({ files }, where);
}
