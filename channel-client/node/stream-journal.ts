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
import { bundleFromJson, bundleToJson, type Bundle } from "../../arbitration/documents/bundle";

/** One sampled claim as the spot-check judged it (what `streams.get` and the `streams` topic show). */
export type JournalSample = { index: number; name: string; claimed: string; actual: string; status: "true" | "false" | "suite_fault" };

export type JournalEntry =
  | { kind: "request"; tranche: bigint; secret: Hex; request: TrancheRequest }
  | { kind: "proof"; tranche: bigint; signed: SignedProgressProof }
  | { kind: "checked"; tranche: bigint; samples?: JournalSample[] }
  | { kind: "pause"; tranche: bigint; reason: string; detail: string; sample?: number; indices?: number[]; repository?: Bundle; conflicting?: SignedProgressProof; samples?: JournalSample[] };

const SAMPLE_STATUSES = new Set(["true", "false", "suite_fault"]);

function samplesFromJson(value: unknown, where: string): JournalSample[] {
  if (!Array.isArray(value) || value.length > 64) throw new InvalidFieldError(where, "an array of at most 64 samples", value);
  return value.map((v: unknown, i) => {
    const o = v as Record<string, unknown> | null;
    const ok = o !== null && typeof o === "object" && Number.isSafeInteger(o.index) && (o.index as number) >= 0 && typeof o.name === "string" && typeof o.claimed === "string" && typeof o.actual === "string" && SAMPLE_STATUSES.has(o.status as string);
    if (!ok) throw new InvalidFieldError(`${where}[${i}]`, "{ index, name, claimed, actual, status }", v);
    return { index: o.index as number, name: o.name as string, claimed: o.claimed as string, actual: o.actual as string, status: o.status as JournalSample["status"] };
  });
}

function entryToJson(entry: JournalEntry): Record<string, unknown> {
  const tranche = uintToJson(entry.tranche);
  switch (entry.kind) {
    case "request":
      return { kind: entry.kind, tranche, secret: entry.secret, request: trancheRequestToJson(entry.request) };
    case "proof":
      return { kind: entry.kind, tranche, signed: signedProgressProofToJson(entry.signed) };
    case "checked":
      return { kind: entry.kind, tranche, ...(entry.samples === undefined ? {} : { samples: entry.samples }) };
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
        ...(entry.samples === undefined ? {} : { samples: entry.samples }),
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
      return { kind: "checked", tranche, ...(value.samples === undefined ? {} : { samples: samplesFromJson(value.samples, `${where}.samples`) }) };
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
        ...(value.samples === undefined ? {} : { samples: samplesFromJson(value.samples, `${where}.samples`) }),
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
    return new StreamJournal(StreamJournal.fileOf(dir, sessionId));
  }

  /** The file of `sessionId`'s journal in `dir` (nothing is created). */
  static fileOf(dir: string, sessionId: Hex): string {
    return path.join(dir, `stream-${sessionId.toLowerCase()}.jsonl`);
  }

  /** The journal of `sessionId` in `dir` when its file exists (a reader: nothing is created), else undefined. */
  static existing(dir: string, sessionId: Hex): StreamJournal | undefined {
    const file = StreamJournal.fileOf(dir, sessionId);
    return existsSync(file) ? new StreamJournal(file) : undefined;
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

/**
 * The entries of complete lines (each ending in a newline) of journal text read from a byte offset, for a reader that
 * follows a journal as it grows (the control API's `streams` topic); `consumed` is how many bytes they took. A line
 * still being written (no newline yet) is left for the next read.
 */
export function journalEntriesOf(text: string, where: string): { entries: JournalEntry[]; consumed: number } {
  const end = text.lastIndexOf("\n") + 1;
  const entries: JournalEntry[] = [];
  for (const line of text.slice(0, end).split("\n")) {
    if (line.trim() === "") continue;
    entries.push(entryFromJson(JSON.parse(line) as Record<string, unknown>, where));
  }
  return { entries, consumed: Buffer.byteLength(text.slice(0, end), "utf8") };
}
