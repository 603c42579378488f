/**
 * Small state files that a crash can never tear: written beside, fsynced, renamed over the old one (a rename is
 * atomic on one file system), then the directory fsynced so the rename itself survives a power loss. The
 * arbitrator daemon's state and a node's alert and top-up state (`./alert-state.ts`) are kept this way.
 */
import { closeSync, fsyncSync, openSync, renameSync, writeSync } from "node:fs";
import path from "node:path";

/** Replaces `file` with `text` so that a crash leaves either the old or the new file, never a torn one. */
export function writeFileAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  try {
    const dir = openSync(path.dirname(file), "r");
    fsyncSync(dir);
    closeSync(dir);
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic.
  }
}

/** JSON with bigints as {"$n": "123"}: a replacer and a reviver. */
export const bigintReplacer = (_: string, v: unknown) => (typeof v === "bigint" ? { $n: v.toString() } : v);
export const bigintReviver = (_: string, v: unknown) =>
  v && typeof v === "object" && "$n" in v && Object.keys(v).length === 1 ? BigInt((v as { $n: string }).$n) : v;
