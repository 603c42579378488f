// The receipt tree, rebuilt in the browser with its own keccak-256 (@noble/hashes, served locally), so the
// page proves a receipt independently of the node. Same tree as channel-client/core/accumulator.ts and
// merkletreejs 0.6 { sortPairs: true }: each level paired left to right, a parent is keccak256 of its two
// children in ascending byte order, an odd last node is carried up unchanged.
import { keccak_256 } from "/vendor/noble-hashes/sha3.js";

export function hexToBytes(hex) {
  const s = hex.startsWith("0x") ? hex.slice(2) : hex;
  if (s.length % 2 !== 0 || /[^0-9a-fA-F]/.test(s)) throw new Error(`not hex: ${hex}`);
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function bytesToHex(bytes) {
  return "0x" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function compare(a, b) {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

/** keccak256(min(a, b) ‖ max(a, b)). */
export function hashPair(a, b) {
  const [lo, hi] = compare(a, b) <= 0 ? [a, b] : [b, a];
  const buf = new Uint8Array(64);
  buf.set(lo, 0);
  buf.set(hi, 32);
  return keccak_256(buf);
}

const LEAF_DOMAIN_HASH = keccak_256(new TextEncoder().encode("IOI_SESSION_LEAF_V1"));

/** leaf = keccak256(keccak256("IOI_SESSION_LEAF_V1") ‖ receiptHash ‖ ticketHash). */
export function leafOf(receiptHash, ticketHash) {
  const buf = new Uint8Array(96);
  buf.set(LEAF_DOMAIN_HASH, 0);
  buf.set(hexToBytes(receiptHash), 32);
  buf.set(hexToBytes(ticketHash), 64);
  return keccak_256(buf);
}

/** Every level of the tree, leaves first. */
export function buildLevels(leaves) {
  const levels = [leaves.map(hexToBytes)];
  while (levels[levels.length - 1].length > 1) {
    const level = levels[levels.length - 1];
    const next = [];
    for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? hashPair(level[i], level[i + 1]) : level[i]);
    levels.push(next);
  }
  return levels;
}

export function rootOf(levels) {
  const top = levels[levels.length - 1];
  return top.length === 0 ? "0x" + "00".repeat(32) : bytesToHex(top[0]);
}

/** The siblings from the leaf up (none where an odd last node is carried up). */
export function proofOf(levels, index) {
  const proof = [];
  for (let level = 0; level < levels.length - 1; level++) {
    const nodes = levels[level];
    const sibling = index % 2 === 0 ? index + 1 : index - 1;
    if (sibling < nodes.length) proof.push(nodes[sibling]);
    index = Math.floor(index / 2);
  }
  return proof;
}

/** Folds the proof onto the leaf, as solady's MerkleProofLib.verify does, and compares with the root. */
export function verifyProof(leaf, proof, root) {
  let node = leaf;
  for (const sibling of proof) node = hashPair(node, sibling);
  return bytesToHex(node).toLowerCase() === root.toLowerCase();
}
