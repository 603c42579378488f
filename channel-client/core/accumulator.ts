/**
 * Append-only Merkle accumulator for the receipts of a payment channel.
 *
 * The tree is exactly merkletreejs 0.6.0 `new MerkleTree(leaves, keccak256, { sortPairs: true })`
 * over leaves that are already hashes: each level is paired left to right, a parent is the keccak256
 * of its two children in ascending byte order, and an odd last node is carried up unchanged. Sorted
 * pairs are what solady's `MerkleProofLib.verify` folds, so proofs carry no left/right bits.
 *
 * Growing that tree one leaf at a time only ever completes perfect subtrees. For n leaves the
 * completed ones that are not yet part of a bigger one (the "peaks", one per set bit of n) determine
 * the root: fold them from the lowest level upward. That is why the root needs O(log n) hashes
 * without rebuilding anything, and why a party that only needs the root can keep just the peaks.
 */
import { hexToBytes } from "viem";
import type { Hex } from "viem";
import { InvalidFieldError, InvalidHexError, LeafIndexOutOfRangeError } from "./errors";
import { keccak256Bytes } from "./keccak";

const NODE_BYTES = 32;
const NODE_HEX = /^0x[0-9a-fA-F]{64}$/;
const DECIMAL = /^(0|[1-9][0-9]*)$/;
/** Nodes a level buffer starts with; it doubles from there. */
const INITIAL_NODES = 32;
/** merkletreejs answers `0x` for an empty tree, which is not a bytes32; see `ReceiptAccumulator.root`. */
const EMPTY_ROOT: Hex = `0x${"00".repeat(NODE_BYTES)}`;

// One buffer for every sorted concatenation. Hashing is synchronous, so calls cannot interleave, and
// the append path then allocates nothing beyond keccak's own state and digest.
const scratch = new Uint8Array(2 * NODE_BYTES);

/** Byte-order comparison of two 32-byte nodes stored at offsets inside larger buffers. */
function compareNodes(a: Uint8Array, aOffset: number, b: Uint8Array, bOffset: number): number {
  for (let i = 0; i < NODE_BYTES; i++) {
    const diff = a[aOffset + i] - b[bOffset + i];
    if (diff !== 0) return diff;
  }
  return 0;
}

/** keccak256(min(a, b) ‖ max(a, b)) reading the nodes in place, so level buffers need no slicing. */
function hashNodes(a: Uint8Array, aOffset: number, b: Uint8Array, bOffset: number): Uint8Array {
  const aAt = compareNodes(a, aOffset, b, bOffset) <= 0 ? 0 : NODE_BYTES;
  const bAt = NODE_BYTES - aAt;
  for (let i = 0; i < NODE_BYTES; i++) {
    scratch[aAt + i] = a[aOffset + i];
    scratch[bAt + i] = b[bOffset + i];
  }
  return keccak256Bytes(scratch);
}

/** Validates a 32-byte node given as hex or bytes; `what` names it in the error. */
function toNode(value: Hex | Uint8Array, what: string): Uint8Array {
  if (value instanceof Uint8Array) {
    if (value.length !== NODE_BYTES) {
      throw new InvalidHexError(`${what} is ${value.length} bytes; a Merkle node is exactly ${NODE_BYTES} bytes.`);
    }
    return value;
  }
  if (typeof value !== "string") {
    throw new InvalidHexError(`${what} must be a 0x-prefixed hex string or a Uint8Array; received a value of type ${typeof value}.`);
  }
  if (!value.startsWith("0x")) throw new InvalidHexError(`${what} must start with "0x".`);
  if (value.length !== 2 + 2 * NODE_BYTES) {
    throw new InvalidHexError(
      `${what} has ${value.length - 2} hex digits; a ${NODE_BYTES}-byte Merkle node has ${2 * NODE_BYTES}.`,
    );
  }
  if (!NODE_HEX.test(value)) throw new InvalidHexError(`${what} contains characters that are not hex digits.`);
  return Buffer.from(value.slice(2), "hex");
}

/** Nodes that exist at `level` of a perfect-subtree decomposition of `size` leaves; safe past 2^32. */
function completedAt(size: number, level: number): number {
  return Math.floor(size / 2 ** level);
}

/** Folds peaks (lowest level first) into the root; undefined when there are none. */
function foldPeaks(peaks: readonly Uint8Array[]): Uint8Array | undefined {
  let root: Uint8Array | undefined;
  for (const peak of peaks) root = root === undefined ? peak : hashNodes(peak, 0, root, 0);
  return root;
}

function rootHex(peaks: readonly Uint8Array[]): Hex {
  const root = foldPeaks(peaks);
  return root === undefined ? EMPTY_ROOT : nodeHex(root);
}

/** A 32-byte node as 0x-prefixed lowercase hex (Node's native encoder: the hot path's roots and peaks). */
function nodeHex(node: Uint8Array): Hex {
  return `0x${Buffer.from(node.buffer, node.byteOffset, NODE_BYTES).toString("hex")}`;
}

/** Peaks given as bytes (`RootAccumulator.peakNodes`) in the hex form `peaks()` gives. */
export function peaksHex(nodes: readonly Uint8Array[]): Hex[] {
  return nodes.map(nodeHex);
}

/**
 * keccak256 of the two nodes concatenated in ascending byte order: the parent rule of the receipt
 * tree, of merkletreejs with `sortPairs`, and of solady's `MerkleProofLib`. Sorting makes the pair
 * order irrelevant, which is what lets a proof be a bare list of siblings. Both inputs must be 32 bytes
 * (throws `InvalidHexError`), because a verifier on chain only ever hashes bytes32 pairs.
 */
export function hashPair(a: Uint8Array, b: Uint8Array): Uint8Array {
  return hashNodes(toNode(a, "a"), 0, toNode(b, "b"), 0);
}

/**
 * The receiving party's accumulator: it must answer disputes with an inclusion proof for any receipt,
 * so it keeps every completed node of the tree. Level k's floor(size / 2^k) nodes live back to back in
 * one doubling `Uint8Array`, about 64 bytes per leaf in total, because a channel may hold a million
 * receipts and per-node objects or hex strings would cost several times that.
 */
export class ReceiptAccumulator {
  /** `#levels[k]` holds the completed nodes of level k, 32 bytes each; its tail may be spare capacity. */
  readonly #levels: Uint8Array[] = [];
  #size = 0;

  /**
   * Builds an accumulator by appending `leaves` in order, e.g. to restore one from stored receipts
   * (the nodes above the leaves are cheap to recompute and so are not persisted).
   */
  static fromLeaves(leaves: Iterable<Hex | Uint8Array>): ReceiptAccumulator {
    const accumulator = new ReceiptAccumulator();
    for (const leaf of leaves) accumulator.append(leaf);
    return accumulator;
  }

  /** Leaves appended so far; also the index the next leaf will get. */
  get size(): number {
    return this.#size;
  }

  /**
   * Appends a 32-byte leaf (hex or bytes, validated before anything changes; `InvalidHexError`
   * otherwise) and returns its index, which is what `proof` and `leaf` take later. A leaf at an odd
   * index completes its parent, and so on upward, so an append hashes once on average and at most
   * log2(size) times.
   */
  append(leaf: Hex | Uint8Array): number {
    const bytes = toNode(leaf, "leaf");
    const index = this.#size;
    this.#store(0, index, bytes);
    let level = 0;
    let position = index;
    // While the new node is a right child, its parent is now complete.
    while (position % 2 === 1) {
      const nodes = this.#levels[level];
      const parent = hashNodes(nodes, (position - 1) * NODE_BYTES, nodes, position * NODE_BYTES);
      level += 1;
      position = (position - 1) / 2;
      this.#store(level, position, parent);
    }
    this.#size = index + 1;
    return index;
  }

  /** The leaf at `index`, so a caller can pair a proof with the exact bytes it proves. */
  leaf(index: number): Hex {
    this.#checkIndex(index);
    return nodeHex(this.#node(0, index));
  }

  /**
   * The Merkle root to sign or submit, from the peaks in O(log n) hashes. An empty accumulator has no
   * root in merkletreejs (it answers `0x`); this returns bytes32 zero instead so the value always fits
   * a `bytes32` and cannot be the root of a real tree: leaves are keccak outputs, and none is known
   * to be zero.
   */
  root(): Hex {
    return rootHex(this.#peakNodes(this.#size));
  }

  /**
   * The root the tree had when it held only its first `size` leaves: what a ticket signed back then
   * carries (the payer signs while earlier invocations are still in flight), and the root a dispute
   * proves against. The prefix's completed nodes are a prefix of ours, so this is O(log n) too.
   */
  prefixRoot(size: number): Hex {
    this.#checkSize(size);
    return rootHex(this.#peakNodes(size));
  }

  /**
   * Roots of the perfect subtrees that make up the tree, lowest level first: exactly the state a
   * `RootAccumulator` keeps, so the payee can hand it to a party that only tracks roots.
   */
  peaks(): Hex[] {
    return this.#peakNodes(this.#size).map(nodeHex);
  }

  /**
   * Inclusion proof of leaf `index` against `prefixRoot(size)` (by default the current `root()`),
   * element for element what merkletreejs `getHexProof(leaves[index], index)` returns and what solady's
   * `MerkleProofLib.verify` accepts. O(log n). Throws `LeafIndexOutOfRangeError` unless `index` is an
   * integer in [0, size) and `size` in [0, this.size].
   *
   * At each level the sibling is `position ^ 1`. It is either a completed node, or the one node past
   * them: the root of the leaves that do not yet fill a perfect subtree of that level, i.e. the fold of
   * the peaks below it (the "tail"). When the sibling would lie past that, the node is carried up
   * unchanged and the level contributes nothing.
   */
  proof(index: number, size: number = this.#size): Hex[] {
    this.#checkSize(size);
    if (!Number.isInteger(index) || index < 0 || index >= size) throw new LeafIndexOutOfRangeError(index, size);
    const proof: Hex[] = [];
    let tail: Uint8Array | undefined;
    let position = index;
    for (let level = 0; ; level++) {
      const completed = completedAt(size, level);
      if (completed + (tail === undefined ? 0 : 1) <= 1) break; // this level is the root
      const sibling = position % 2 === 0 ? position + 1 : position - 1;
      if (sibling < completed) proof.push(nodeHex(this.#node(level, sibling)));
      else if (sibling === completed && tail !== undefined) proof.push(nodeHex(tail));
      if (completed % 2 === 1) {
        const peak = this.#node(level, completed - 1);
        tail = tail === undefined ? peak : hashNodes(peak, 0, tail, 0);
      }
      position = Math.floor(position / 2);
    }
    return proof;
  }

  #checkSize(size: number): void {
    if (!Number.isInteger(size) || size < 0 || size > this.#size) {
      throw new LeafIndexOutOfRangeError(size, this.#size + 1);
    }
  }

  #checkIndex(index: number): void {
    if (!Number.isInteger(index) || index < 0 || index >= this.#size) {
      throw new LeafIndexOutOfRangeError(index, this.#size);
    }
  }

  /** A view (no copy) of node `index` of `level`. */
  #node(level: number, index: number): Uint8Array {
    return this.#levels[level].subarray(index * NODE_BYTES, (index + 1) * NODE_BYTES);
  }

  #peakNodes(size: number): Uint8Array[] {
    const peaks: Uint8Array[] = [];
    for (let level = 0, completed = size; completed > 0; completed = completedAt(size, ++level)) {
      if (completed % 2 === 1) peaks.push(this.#node(level, completed - 1));
    }
    return peaks;
  }

  /** Writes node `index` of `level`, doubling the level's buffer when it is full. */
  #store(level: number, index: number, node: Uint8Array): void {
    const offset = index * NODE_BYTES;
    let nodes = this.#levels[level];
    if (nodes === undefined || nodes.length < offset + NODE_BYTES) {
      const grown = new Uint8Array(Math.max(INITIAL_NODES * NODE_BYTES, 2 * (nodes?.length ?? 0)));
      if (nodes !== undefined) grown.set(nodes);
      this.#levels[level] = nodes = grown;
    }
    nodes.set(node, offset);
  }
}

/**
 * The accumulator for a party that signs or checks roots but never proves leaves (e.g. the payer):
 * it keeps only the size and one peak per set bit of it, O(log n) memory, and yields the same roots as
 * a `ReceiptAccumulator` fed the same leaves. Its state is small enough to persist after every append
 * (`toJSON` / `fromJSON`).
 */
export class RootAccumulator {
  /** `#peaks[k]` is the root of the perfect 2^k-leaf subtree when bit k of size is set, else undefined. */
  readonly #peaks: (Uint8Array | undefined)[] = [];
  #size = 0;
  /** The root at the current size, once asked for: a payer signs a burst of tickets between two receipts. */
  #root: Hex | undefined;

  /**
   * Restores a state written by `toJSON`. The input is treated as untrusted (it may come from disk or
   * a peer): `size` must be a canonical decimal string of a safe integer and `peaks` exactly
   * popcount(size) 32-byte hex strings, otherwise `InvalidFieldError` names the offending field. Peaks
   * cannot be checked further without the leaves; a wrong one shows up as a root the other side rejects.
   */
  static fromJSON(state: unknown): RootAccumulator {
    if (typeof state !== "object" || state === null || Array.isArray(state)) {
      throw new InvalidFieldError("state", "an object { size, peaks }", state);
    }
    const { size, peaks } = state as { size?: unknown; peaks?: unknown };
    if (typeof size !== "string" || !DECIMAL.test(size) || !Number.isSafeInteger(Number(size))) {
      throw new InvalidFieldError("state.size", 'a decimal string of a non-negative safe integer, such as "42"', size);
    }
    const count = Number(size);
    const levels: number[] = [];
    for (let level = 0, completed = count; completed > 0; completed = completedAt(count, ++level)) {
      if (completed % 2 === 1) levels.push(level);
    }
    if (!Array.isArray(peaks) || peaks.length !== levels.length) {
      throw new InvalidFieldError(
        "state.peaks",
        `an array of ${levels.length} peaks (one per set bit of size ${size})`,
        peaks,
      );
    }
    const accumulator = new RootAccumulator();
    peaks.forEach((peak: unknown, i) => {
      if (typeof peak !== "string" || !NODE_HEX.test(peak)) {
        throw new InvalidFieldError(`state.peaks[${i}]`, "a 32-byte hex string (0x followed by 64 hex digits)", peak);
      }
      accumulator.#peaks[levels[i]] = hexToBytes(peak as Hex);
    });
    accumulator.#size = count;
    return accumulator;
  }

  /** Leaves appended so far; also the index the next leaf will get. */
  get size(): number {
    return this.#size;
  }

  /**
   * Appends a 32-byte leaf (validated as in `ReceiptAccumulator.append`) and returns its index. Equal
   * peaks merge like a binary counter's carry, so at most log2(size) hashes and no history is kept.
   */
  append(leaf: Hex | Uint8Array): number {
    // Copied because the caller may reuse its buffer and a leaf can become a peak as is.
    let node: Uint8Array = toNode(leaf, "leaf").slice();
    let level = 0;
    for (let peak = this.#peaks[0]; peak !== undefined; peak = this.#peaks[++level]) {
      node = hashNodes(peak, 0, node, 0);
      this.#peaks[level] = undefined;
    }
    this.#peaks[level] = node;
    this.#root = undefined;
    return this.#size++;
  }

  /** Same root as `ReceiptAccumulator.root`, including bytes32 zero when empty (folded once per size). */
  root(): Hex {
    return (this.#root ??= rootHex(this.#peakNodes()));
  }

  /** The peaks, lowest level first, in the same form `ReceiptAccumulator.peaks` gives. */
  peaks(): Hex[] {
    return this.#peakNodes().map(nodeHex);
  }

  /**
   * The peaks as bytes, lowest level first: no copy of a node, because a peak is never written after it is
   * made (an append replaces peaks, it does not modify them). For `PrefixRootAccumulator`'s window.
   */
  peakNodes(): readonly Uint8Array[] {
    return this.#peakNodes();
  }

  /** The whole state; `size` is a decimal string because counters in channel artifacts never are JSON numbers. */
  toJSON(): { size: string; peaks: Hex[] } {
    return { size: String(this.#size), peaks: this.peaks() };
  }

  #peakNodes(): Uint8Array[] {
    return this.#peaks.filter((peak): peak is Uint8Array => peak !== undefined);
  }
}

/**
 * Off-chain twin of solady's `MerkleProofLib.verify`: folds `proof` into `leaf` with sorted-pair
 * hashing and compares with `root`, so a proof can be checked before it is sent to the contract.
 * A false answer means the proof does not fit; malformed hex (not 32 bytes) throws `InvalidHexError`
 * instead, because that is a caller bug or garbage input rather than a proof to judge.
 */
export function verifyProof(proof: readonly Hex[], root: Hex, leaf: Hex): boolean {
  const expected = toNode(root, "root");
  let node = toNode(leaf, "leaf");
  proof.forEach((element, i) => {
    node = hashNodes(node, 0, toNode(element, `proof[${i}]`), 0);
  });
  return compareNodes(node, 0, expected, 0) === 0;
}

/** Peaks of the first `size` leaves, lowest level first: what `prefixRoot` folds for an older prefix. */
export type PrefixPeaksLookup = (size: number) => readonly Hex[] | undefined;

/**
 * The provider's accumulator (issue 28 item 6): a `RootAccumulator` (peaks only) that also answers
 * `prefixRoot(size)` for the prefixes a pipelined ticket or a receipt commit may name. The peaks of the
 * newest `window` prefixes are kept in memory; an older prefix is asked of `olderPeaks` (the store keeps the
 * peaks of every step, decision 0009). So it can be restored from one stored state in time that does not
 * grow with the receipts, and it holds O(window · log n) memory however long the channel is.
 *
 * It cannot prove leaves: inclusion proofs are built from the store's leaves when a dispute needs them.
 */
export class PrefixRootAccumulator {
  readonly #current: RootAccumulator;
  /** size → peaks of that prefix (bytes, shared with the accumulator's), for the newest `#window` sizes. */
  readonly #recent = new Map<number, readonly Uint8Array[]>();
  /** The current peaks as hex, made once per size: the state every step persists asks for them. */
  #peaksHex: Hex[] | undefined;
  /** The prefix root asked for last (a prefix's root never changes once its leaves are appended). */
  #lastPrefix: { size: number; root: Hex } | undefined;
  readonly #window: number;
  readonly #olderPeaks: PrefixPeaksLookup | undefined;

  constructor(options: { state?: { size: string; peaks: Hex[] }; window?: number; olderPeaks?: PrefixPeaksLookup } = {}) {
    this.#current = options.state ? RootAccumulator.fromJSON(options.state) : new RootAccumulator();
    const window = options.window ?? 4096;
    if (!Number.isSafeInteger(window) || window < 1) throw new InvalidFieldError("window", "a positive integer", window);
    this.#window = window;
    this.#olderPeaks = options.olderPeaks;
    this.#recent.set(this.#current.size, this.#current.peakNodes());
  }

  get size(): number {
    return this.#current.size;
  }

  /** Appends a leaf (validated as in `ReceiptAccumulator.append`) and returns its index. */
  append(leaf: Hex | Uint8Array): number {
    const index = this.#current.append(leaf);
    const size = index + 1;
    this.#recent.set(size, this.#current.peakNodes());
    this.#recent.delete(size - this.#window - 1);
    this.#peaksHex = undefined;
    return index;
  }

  root(): Hex {
    return this.#current.root();
  }

  /** The current peaks as bytes, lowest level first (see `RootAccumulator.peakNodes`: never to be modified). */
  peakNodes(): readonly Uint8Array[] {
    return this.#recent.get(this.size) ?? this.#current.peakNodes();
  }

  /** The current peaks as hex (a fresh array; the strings are shared with the next call at the same size). */
  peaks(): Hex[] {
    this.#peaksHex ??= this.#current.peaks();
    return [...this.#peaksHex];
  }

  toJSON(): { size: string; peaks: Hex[] } {
    return { size: String(this.size), peaks: this.peaks() };
  }

  /**
   * The root over the first `size` leaves. Throws `LeafIndexOutOfRangeError` when `size` is not in
   * [0, this.size], and `InvalidFieldError` when the prefix is older than the window and nobody kept its
   * peaks (a store written before peaks were kept).
   */
  prefixRoot(size: number): Hex {
    if (!Number.isInteger(size) || size < 0 || size > this.size) throw new LeafIndexOutOfRangeError(size, this.size + 1);
    if (size === 0) return EMPTY_ROOT;
    if (size === this.#lastPrefix?.size) return this.#lastPrefix.root;
    const recent = this.#recent.get(size);
    if (recent !== undefined) {
      // Pipelined tickets signed between the same two receipts name the same prefix: folded once.
      const root = rootHex(recent);
      this.#lastPrefix = { size, root };
      return root;
    }
    const peaks = this.#olderPeaks?.(size);
    if (peaks === undefined) {
      throw new InvalidFieldError("size", `a prefix of the last ${this.#window} receipts (older peaks were not kept)`, size);
    }
    return rootHex(peaks.map((peak) => toNode(peak, "peak")));
  }
}
