#!/usr/bin/env node
/**
 * The independent check of `ioi export` (issue 14): reads its canonical JSON lines from a file (or stdin) and
 * recomputes, with nothing of this project's code — only RFC 8785 canonical JSON (`canonicalize`) and
 * keccak-256 (`@noble/hashes`) —
 *   - the terms hash: keccak256(canon(terms document)) must be the channel's termsHash, and every ticket's;
 *   - every receipt hash keccak256(canon(receipt)) and ticket hash keccak256(canon(ticket));
 *   - every leaf keccak256(keccak256("IOI_SESSION_LEAF_V1") ‖ receiptHash ‖ ticketHash);
 *   - the root over the leaves (pairs left to right, a parent is keccak256 of its two children in ascending
 *     byte order, an odd last node carried up; zero hash when empty) and, when the chain recorded one, that
 *     the recorded root is the root of a prefix of the leaves.
 * Usage: node scripts/check-export.mjs [FILE]   — exit 0 and "export checked: …", or exit 1 and one sentence.
 */
import { readFileSync } from "node:fs";
import canonicalize from "canonicalize";
import { keccak_256 } from "@noble/hashes/sha3.js";

const hex = (bytes) => `0x${Buffer.from(bytes).toString("hex")}`;
const bytes = (h) => Buffer.from(h.slice(2), "hex");
const keccakText = (text) => hex(keccak_256(new TextEncoder().encode(text)));
const canon = (value) => {
  const text = canonicalize(value);
  if (typeof text !== "string") throw new Error("a value has no canonical JSON form");
  return text;
};
const LEAF_DOMAIN_HASH = bytes(keccakText("IOI_SESSION_LEAF_V1"));

function rootOf(leaves) {
  if (leaves.length === 0) return `0x${"00".repeat(32)}`;
  let level = leaves.map(bytes);
  while (level.length > 1) {
    const next = [];
    for (let i = 0; i < level.length; i += 2) {
      if (i + 1 === level.length) next.push(level[i]);
      else {
        const [a, b] = Buffer.compare(level[i], level[i + 1]) <= 0 ? [level[i], level[i + 1]] : [level[i + 1], level[i]];
        next.push(Buffer.from(keccak_256(Buffer.concat([a, b]))));
      }
    }
    level = next;
  }
  return hex(level[0]);
}

class CheckError extends Error {}
const fail = (sentence) => {
  throw new CheckError(sentence);
};

export function checkExport(text) {
  const lines = text.split("\n").filter((line) => line.trim() !== "");
  const records = lines.map((line, i) => {
    let value;
    try {
      value = JSON.parse(line);
    } catch {
      fail(`Line ${i + 1} is not JSON.`);
    }
    if (canon(value) !== line) fail(`Line ${i + 1} is not in RFC 8785 canonical form.`);
    return value;
  });
  const session = records[0];
  if (!session || session.type !== "session") fail("The first line must be the session line.");
  const termsHash = keccakText(canon(session.pricing));
  if (termsHash !== session.ref.terms.termsHash) fail(`The terms document hashes to ${termsHash}; the channel binds ${session.ref.terms.termsHash}.`);
  if (session.termsHash !== undefined && session.termsHash !== termsHash) fail(`The session line's termsHash ${session.termsHash} is not the terms document's hash ${termsHash}.`);
  const leaves = [];
  for (const step of records.slice(1, -1)) {
    if (step.type !== "step") fail(`Expected a step line; found ${JSON.stringify(step.type)}.`);
    const ticket = step.ticket.ticket;
    const receipt = step.receipt.receipt;
    if (ticket.termsHash !== termsHash) fail(`Ticket ${ticket.seq} binds terms ${ticket.termsHash}, not ${termsHash}.`);
    if (ticket.sessionId !== session.sessionId || receipt.sessionId !== session.sessionId) fail(`Step ${step.seq} names another session.`);
    const ticketHash = keccakText(canon(ticket));
    const receiptHash = keccakText(canon(receipt));
    if (ticketHash !== step.ticketHash) fail(`Step ${step.seq}: the ticket hashes to ${ticketHash}, not ${step.ticketHash}.`);
    if (receiptHash !== step.receiptHash) fail(`Step ${step.seq}: the receipt hashes to ${receiptHash}, not ${step.receiptHash}.`);
    const leaf = hex(keccak_256(Buffer.concat([LEAF_DOMAIN_HASH, bytes(receiptHash), bytes(ticketHash)])));
    if (leaf !== step.leaf) fail(`Step ${step.seq}: the leaf is ${leaf}, not ${step.leaf}.`);
    leaves.push(leaf);
  }
  const last = records[records.length - 1];
  if (!last || last.type !== "root" || records.length < 2) fail("The last line must be the root line.");
  const root = rootOf(leaves);
  if (root !== last.root || String(leaves.length) !== last.receipts) fail(`The ${leaves.length} leaves give root ${root}; the export says ${last.root} over ${last.receipts}.`);
  let covered = null;
  if (last.onChain) {
    for (let size = leaves.length; size >= 0 && covered === null; size--) if (rootOf(leaves.slice(0, size)) === last.onChain.receiptRoot) covered = size;
    if (String(covered) !== String(last.coveredReceipts)) fail(`The chain's root covers ${covered ?? "no prefix of"} the receipts; the export says ${last.coveredReceipts}.`);
  }
  return { termsHash, receipts: leaves.length, root, coveredReceipts: covered };
}

const isMain = process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isMain) {
  try {
    const file = process.argv[2];
    const text = file ? readFileSync(file, "utf8") : readFileSync(0, "utf8");
    const result = checkExport(text);
    console.log(`export checked: terms ${result.termsHash}, ${result.receipts} receipts, root ${result.root}${result.coveredReceipts === null ? "" : `, the chain's root covers ${result.coveredReceipts}`}`);
  } catch (error) {
    console.error(error instanceof CheckError ? error.message : `The export could not be checked: ${error.message.split("\n")[0]}`);
    process.exit(1);
  }
}
