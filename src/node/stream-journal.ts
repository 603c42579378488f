/**
 * The payer's stream journal (issue 32, decision 0037): what a Flow Controller must not lose and the channel store
 * has no place for — each tranche's sampling secret (durable BEFORE the tranche request that commits to it leaves),
 * each proof's signature, which tranches passed their check, and the pause with its evidence (the repository and
 * the false claim, or the second proof). With the store's tickets, receipts and commits it is enough to resume a
 * stream after a restart (`FlowController.resume`) and to build its case later (`ioi milestones case`).
 *
 * One JSON line per entry, appended and fsynced before `append` resolves; a torn last line (a crash mid-write) is
 * ignored on reading. One writer per file (the stream's controller).
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, truncateSync, writeSync, existsSync } from "node:fs";
import path from "node:path";

import type { Hex } from "viem";

import { InvalidFieldError } from "../core/errors";
import {
  signedProgressProofFromJson,
  signedProgressProofToJson,
  trancheRequestFromJson,
  trancheRequestToJson,
  type SignedProgressProof,
  type TrancheRequest,
} from "../core/progress-proof";
import { expectHash, expectUint, uintToJson } from "../core/validate";
import { bundleFromJson, bundleToJson, type Bundle } from "../arbitration/bundle";

export type JournalEntry =
  | { kind: "request"; tranche: bigint; secret: Hex; request: TrancheRequest }
  | { kind: "proof"; tranche: bigint; signed: SignedProgressProof }
  | { kind: "checked"; tranche: bigint }
  | { kind: "pause"; tranche: bigint; reason: string; detail: string; sample?: number; indices?: number[]; repository?: Bundle; conflicting?: SignedProgressProof };

function entryToJson(entry: JournalEntry): Record<string, unknown> {
  const tranche = uintToJson(entry.tranche);
  switch (entry.kind) {
    case "request":
      return { kind: entry.kind, tranche, secret: entry.secret, request: trancheRequestToJson(entry.request) };
    case "proof":
      return { kind: entry.kind, tranche, signed: signedProgressProofToJson(entry.signed) };
    case "checked":
      return { kind: entry.kind, tranche };
    case "pause":
      return {
        kind: entry.kind,
        tranche,
        reason: entry.reason,
        detail: entry.detail,
        ...(entry.sample === undefined ? {} : { sample: entry.sample }),
        ...(entry.indices === undefined ? {} : { indices: entry.indices }),
        ...(entry.repository === undefined ? {} : { repository: bundleToJson(entry.repository) }),
        ...(entry.conflicting === undefined ? {} : { conflicting: signedProgressProofToJson(entry.conflicting) }),
      };
  }
}

function entryFromJson(value: Record<string, unknown>, where: string): JournalEntry {
  const tranche = expectUint(value.tranche, `${where}.tranche`, 64);
  switch (value.kind) {
    case "request":
      return { kind: "request", tranche, secret: expectHash(value.secret, `${where}.secret`), request: trancheRequestFromJson(value.request, `${where}.request`) };
    case "proof":
      return { kind: "proof", tranche, signed: signedProgressProofFromJson(value.signed, `${where}.signed`) };
    case "checked":
      return { kind: "checked", tranche };
    case "pause":
      return {
        kind: "pause",
        tranche,
        reason: String(value.reason),
        detail: String(value.detail),
        ...(typeof value.sample === "number" ? { sample: value.sample } : {}),
        ...(Array.isArray(value.indices) ? { indices: value.indices.map(Number) } : {}),
        ...(value.repository === undefined ? {} : { repository: bundleFromJson(value.repository, `${where}.repository`) }),
        ...(value.conflicting === undefined ? {} : { conflicting: signedProgressProofFromJson(value.conflicting, `${where}.conflicting`) }),
      };
    default:
      throw new InvalidFieldError(`${where}.kind`, "request, proof, checked or pause", value.kind);
  }
}

export class StreamJournal {
  /** Whether a torn tail left by a crash was cut off before this instance's first append. */
  #repaired = false;

  private constructor(readonly file: string) {}

  /** The journal of `sessionId` in `dir` (created when missing): `<dir>/stream-<session id>.jsonl`. */
  static open(dir: string, sessionId: Hex): StreamJournal {
    mkdirSync(dir, { recursive: true });
    return new StreamJournal(path.join(dir, `stream-${sessionId.toLowerCase()}.jsonl`));
  }

  /** Where the CLI keeps the journals of the store `db`: `<db>.streams/`. */
  static dirOfStore(db: string): string {
    return `${db}.streams`;
  }

  get exists(): boolean {
    return existsSync(this.file);
  }

  /** Appends `entry` and makes it durable (fsync) before resolving. */
  async append(entry: JournalEntry): Promise<void> {
    if (!this.#repaired) {
      // A crash mid-write leaves a line without its newline; it was never durable as an entry, so it is cut off
      // rather than glued to the next one.
      if (existsSync(this.file)) {
        const text = readFileSync(this.file, "utf8");
        if (text.length > 0 && !text.endsWith("\n")) truncateSync(this.file, Buffer.byteLength(text.slice(0, text.lastIndexOf("\n") + 1), "utf8"));
      }
      this.#repaired = true;
    }
    const fd = openSync(this.file, "a");
    try {
      writeSync(fd, JSON.stringify(entryToJson(entry)) + "\n");
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }

  /** Every entry in order (a torn last line is skipped; any other bad line is an error naming it). */
  entries(): JournalEntry[] {
    if (!existsSync(this.file)) return [];
    const lines = readFileSync(this.file, "utf8").split("\n");
    const entries: JournalEntry[] = [];
    lines.forEach((line, i) => {
      if (line.trim() === "") return;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        if (i === lines.length - 1) return; // torn by a crash mid-write: never fsynced, never relied on
        throw new InvalidFieldError(`${this.file}:${i + 1}`, "one JSON entry per line", line.slice(0, 80));
      }
      entries.push(entryFromJson(value as Record<string, unknown>, `${this.file}:${i + 1}`));
    });
    return entries;
  }
}
