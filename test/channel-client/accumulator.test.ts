import { expect } from "chai";
import { keccak_256 } from "@noble/hashes/sha3.js";
import { MerkleTree } from "merkletreejs";
import { bytesToHex, hexToBytes, keccak256, toBytes } from "viem";
import type { Hex } from "viem";
import {
  ReceiptAccumulator,
  RootAccumulator,
  hashPair,
  verifyProof,
} from "../../channel-client/core/accumulator";

const EMPTY_ROOT = `0x${"0".repeat(64)}`;

/** The fixed leaf sequence of every test: keccak256 of the minimal big-endian bytes of i. */
const LEAVES: Hex[] = Array.from({ length: 1000 }, (_, i) => keccak256(toBytes(i)));

/** The same leaves as Buffers, decoded once: building ~1000 reference trees must stay fast. */
const LEAF_BUFFERS: Buffer[] = LEAVES.map((leaf) => Buffer.from(hexToBytes(leaf)));

/** merkletreejs hashes through this; noble directly is much faster than viem's keccak256 with hex round trips. */
const keccakBuffer = (data: Buffer): Buffer => Buffer.from(keccak_256(data));

/** The reference: merkletreejs over LEAVES[start, end), leaves not re-hashed, sorted pairs. */
function referenceTree(start: number, end: number): MerkleTree {
  return new MerkleTree(LEAF_BUFFERS.slice(start, end), keccakBuffer, { sortPairs: true });
}

/** Runs `fn`, which must throw, and returns the error; fails the test if it returns normally. */
function thrown(fn: () => unknown): Error & Record<string, unknown> {
  try {
    fn();
  } catch (err) {
    return err as Error & Record<string, unknown>;
  }
  expect.fail("expected a throw");
}

function flipFirstByte(hex: Hex): Hex {
  const bytes = hexToBytes(hex);
  bytes[0] ^= 0x01;
  return bytesToHex(bytes);
}

describe("channel-client/accumulator", () => {
  describe("hashPair", () => {
    it("is keccak256 of the ascending concatenation, in either argument order", () => {
      const a = hexToBytes(LEAVES[0]);
      const b = hexToBytes(LEAVES[1]);
      const [low, high] = Buffer.compare(Buffer.from(a), Buffer.from(b)) < 0 ? [a, b] : [b, a];
      const expected = keccak256(new Uint8Array([...low, ...high]));
      expect(bytesToHex(hashPair(a, b))).to.equal(expected);
      expect(bytesToHex(hashPair(b, a))).to.equal(expected);
    });

    it("rejects a node that is not 32 bytes", () => {
      const err = thrown(() => hashPair(new Uint8Array(31), new Uint8Array(32)));
      expect(err.name).to.equal("InvalidHexError");
    });
  });

  describe("known-answer roots", () => {
    // Computed once with merkletreejs 0.6.0 `new MerkleTree(leaves, keccak256, { sortPairs: true })`.
    const vectors: [number, Hex][] = [
      [1, "0xbc36789e7a1e281436464229828f817d6612f7b477d66591ff96a9e064bcc98a"],
      [2, "0xb2521d64679bc4720dabfbae7ce17947a5d373d987d3b0cc1e3042ba2054da4a"],
      [3, "0xd359d2743bb3a93ded4c902716931497ae3080f478c14e7af96344a92e9ddd51"],
      [5, "0x11aeafa56c9b34805cc86b1c320c9331672c07e600f0a44317051cfa05a0c296"],
      [7, "0x49b36fbd8a6e3a5ea292f621a38d0afa8ac580c56090a9b0d93e0d06b37d1a89"],
    ];
    for (const [n, root] of vectors) {
      it(`n = ${n}`, () => {
        const leaves = LEAVES.slice(0, n);
        expect(ReceiptAccumulator.fromLeaves(leaves).root()).to.equal(root);
        const payer = new RootAccumulator();
        leaves.forEach((leaf) => payer.append(leaf));
        expect(payer.root()).to.equal(root);
      });
    }

    it("a single leaf is its own root", () => {
      expect(ReceiptAccumulator.fromLeaves([LEAVES[42]]).root()).to.equal(LEAVES[42]);
    });

    it("the empty accumulator's root is bytes32 zero", () => {
      expect(new ReceiptAccumulator().root()).to.equal(EMPTY_ROOT);
      expect(new RootAccumulator().root()).to.equal(EMPTY_ROOT);
      expect(new ReceiptAccumulator().peaks()).to.deep.equal([]);
      expect(new RootAccumulator().peaks()).to.deep.equal([]);
    });
  });

  describe("equality with merkletreejs", () => {
    it("gives the merkletreejs root after every append, n = 1 .. 1000, for both accumulators", () => {
      const receipts = new ReceiptAccumulator();
      const payer = new RootAccumulator();
      for (let n = 1; n <= LEAVES.length; n++) {
        expect(receipts.append(LEAVES[n - 1])).to.equal(n - 1);
        expect(payer.append(LEAVES[n - 1])).to.equal(n - 1);
        const expected = referenceTree(0, n).getHexRoot();
        expect(receipts.root(), `ReceiptAccumulator, n = ${n}`).to.equal(expected);
        expect(payer.root(), `RootAccumulator, n = ${n}`).to.equal(expected);
        expect(receipts.size).to.equal(n);
        expect(payer.size).to.equal(n);
      }
    });

    it("root is the fold of the peaks, each peak being the root of its perfect subtree", () => {
      const receipts = new ReceiptAccumulator();
      const payer = new RootAccumulator();
      for (let n = 1; n <= 300; n++) {
        receipts.append(LEAVES[n - 1]);
        payer.append(LEAVES[n - 1]);
        const peaks = receipts.peaks();
        expect(payer.peaks()).to.deep.equal(peaks);

        // One peak per set bit of n, lowest level first, covering the leaves from the right.
        const bits = [...n.toString(2)].reverse().flatMap((bit, level) => (bit === "1" ? [level] : []));
        expect(peaks).to.have.length(bits.length);
        let end = n;
        bits.forEach((level, i) => {
          const start = end - 2 ** level;
          expect(peaks[i], `n = ${n}, level ${level}`).to.equal(referenceTree(start, end).getHexRoot());
          end = start;
        });

        let acc = hexToBytes(peaks[0]);
        for (const peak of peaks.slice(1)) acc = hashPair(hexToBytes(peak), acc);
        expect(bytesToHex(acc)).to.equal(receipts.root());
      }
    });

    it("accepts leaves as bytes and hex, in either hex case, and copies byte leaves", () => {
      const buffer = hexToBytes(LEAVES[0]);
      const receipts = new ReceiptAccumulator();
      const payer = new RootAccumulator();
      receipts.append(buffer);
      payer.append(buffer);
      buffer.fill(0); // the caller reusing its buffer must not change the accumulators
      receipts.append(LEAVES[1].toUpperCase().replace("0X", "0x") as Hex);
      payer.append(LEAVES[1].toUpperCase().replace("0X", "0x") as Hex);
      const expected = referenceTree(0, 2).getHexRoot();
      expect(receipts.root()).to.equal(expected);
      expect(payer.root()).to.equal(expected);
      expect(receipts.leaf(0)).to.equal(LEAVES[0]);
      expect(receipts.leaf(1)).to.equal(LEAVES[1]);
    });
  });

  describe("proofs", () => {
    const sizes = [...Array.from({ length: 70 }, (_, i) => i + 1), 255, 256, 257, 1000];

    it("every leaf's proof equals merkletreejs getHexProof and verifies, for n = 1..70, 255, 256, 257, 1000", () => {
      for (const n of sizes) {
        const leaves = LEAVES.slice(0, n);
        const tree = referenceTree(0, n);
        const receipts = ReceiptAccumulator.fromLeaves(leaves);
        const root = receipts.root();
        expect(root).to.equal(tree.getHexRoot());
        leaves.forEach((leaf, index) => {
          const proof = receipts.proof(index);
          expect(proof, `n = ${n}, leaf ${index}`).to.deep.equal(tree.getHexProof(tree.getLeaves()[index], index));
          expect(verifyProof(proof, root, leaf), `n = ${n}, leaf ${index}`).to.equal(true);
          expect(receipts.leaf(index)).to.equal(leaf);
        });
      }
    });

    it("proofs against the current root stay valid as leaves are appended one at a time", () => {
      const receipts = new ReceiptAccumulator();
      for (let n = 1; n <= 64; n++) {
        receipts.append(LEAVES[n - 1]);
        const root = receipts.root();
        for (let index = 0; index < n; index++) {
          expect(verifyProof(receipts.proof(index), root, LEAVES[index]), `n = ${n}, leaf ${index}`).to.equal(true);
        }
      }
    });

    it("rejects a flipped element, a truncated or extended proof, the wrong leaf and another root", () => {
      for (const n of [2, 3, 7, 64, 257, 1000]) {
        const receipts = ReceiptAccumulator.fromLeaves(LEAVES.slice(0, n));
        const root = receipts.root();
        const otherRoot = ReceiptAccumulator.fromLeaves(LEAVES.slice(1, n + 1)).root();
        for (const index of [0, Math.floor(n / 2), n - 1]) {
          const proof = receipts.proof(index);
          const leaf = LEAVES[index];
          expect(proof.length, `n = ${n}`).to.be.greaterThan(0);
          expect(verifyProof(proof, root, leaf)).to.equal(true);
          proof.forEach((_, i) => {
            const flipped = proof.map((element, j) => (i === j ? flipFirstByte(element) : element));
            expect(verifyProof(flipped, root, leaf), `n = ${n}, leaf ${index}, element ${i}`).to.equal(false);
          });
          expect(verifyProof(proof.slice(0, -1), root, leaf)).to.equal(false);
          expect(verifyProof([...proof, LEAVES[0]], root, leaf)).to.equal(false);
          expect(verifyProof(proof, root, LEAVES[(index + 1) % n])).to.equal(false);
          expect(verifyProof(proof, otherRoot, leaf)).to.equal(false);
        }
      }
    });

    it("a one-leaf tree has an empty proof that verifies only that leaf", () => {
      const receipts = ReceiptAccumulator.fromLeaves([LEAVES[5]]);
      expect(receipts.proof(0)).to.deep.equal([]);
      expect(verifyProof([], receipts.root(), LEAVES[5])).to.equal(true);
      expect(verifyProof([], receipts.root(), LEAVES[6])).to.equal(false);
    });

    it("verifyProof throws InvalidHexError on malformed input instead of answering", () => {
      const receipts = ReceiptAccumulator.fromLeaves(LEAVES.slice(0, 4));
      const proof = receipts.proof(1);
      expect(thrown(() => verifyProof([...proof.slice(0, 1), "0x1234"], receipts.root(), LEAVES[1])).name).to.equal(
        "InvalidHexError",
      );
      expect(thrown(() => verifyProof(proof, "0x" as Hex, LEAVES[1])).name).to.equal("InvalidHexError");
      expect(thrown(() => verifyProof(proof, receipts.root(), LEAVES[1].slice(2) as Hex)).name).to.equal(
        "InvalidHexError",
      );
    });
  });

  describe("round trips", () => {
    it("fromLeaves equals appending one by one and restores leaves, peaks, root and proofs", () => {
      const leaves = LEAVES.slice(0, 77);
      const appended = new ReceiptAccumulator();
      leaves.forEach((leaf) => appended.append(leaf));
      const restored = ReceiptAccumulator.fromLeaves(leaves.map((leaf, i) => (i % 2 ? hexToBytes(leaf) : leaf)));
      expect(restored.size).to.equal(77);
      expect(restored.root()).to.equal(appended.root());
      expect(restored.peaks()).to.deep.equal(appended.peaks());
      for (let i = 0; i < 77; i++) {
        expect(restored.leaf(i)).to.equal(leaves[i]);
        expect(restored.proof(i)).to.deep.equal(appended.proof(i));
      }
    });

    it("RootAccumulator survives toJSON / JSON text / fromJSON at every size and keeps accumulating", () => {
      const payer = new RootAccumulator();
      for (let n = 0; n < 130; n++) {
        const state = payer.toJSON();
        expect(state.size).to.equal(String(n));
        const restored = RootAccumulator.fromJSON(JSON.parse(JSON.stringify(state)));
        expect(restored.size).to.equal(n);
        expect(restored.toJSON()).to.deep.equal(state);
        expect(restored.root()).to.equal(payer.root());
        // Continuing from the restored state must match the uninterrupted one.
        expect(restored.append(LEAVES[n])).to.equal(payer.append(LEAVES[n]));
        expect(restored.root()).to.equal(payer.root());
      }
    });

    it("a ReceiptAccumulator's peaks seed a RootAccumulator with the same root", () => {
      const receipts = ReceiptAccumulator.fromLeaves(LEAVES.slice(0, 101));
      const payer = RootAccumulator.fromJSON({ size: "101", peaks: receipts.peaks() });
      expect(payer.root()).to.equal(receipts.root());
      receipts.append(LEAVES[101]);
      payer.append(LEAVES[101]);
      expect(payer.root()).to.equal(receipts.root());
    });
  });

  describe("typed errors", () => {
    const badLeaves: [string, unknown, RegExp][] = [
      ["no 0x prefix", LEAVES[0].slice(2), /must start with "0x"/],
      ["63 hex digits", LEAVES[0].slice(0, -1), /has 63 hex digits/],
      ["65 hex digits", `${LEAVES[0]}0`, /has 65 hex digits/],
      ["non-hex characters", `0x${"g".repeat(64)}`, /not hex digits/],
      ["31 bytes", new Uint8Array(31), /is 31 bytes/],
      ["33 bytes", new Uint8Array(33), /is 33 bytes/],
      ["a number", 42, /of type number/],
    ];
    for (const [what, leaf, message] of badLeaves) {
      it(`append rejects a leaf with ${what} and leaves the accumulator unchanged`, () => {
        for (const accumulator of [ReceiptAccumulator.fromLeaves(LEAVES.slice(0, 3)), new RootAccumulator()]) {
          const root = accumulator.root();
          const size = accumulator.size;
          const err = thrown(() => accumulator.append(leaf as Hex));
          expect(err.name).to.equal("InvalidHexError");
          expect(err.message).to.match(message);
          expect(accumulator.size).to.equal(size);
          expect(accumulator.root()).to.equal(root);
        }
      });
    }

    it("proof and leaf reject indices outside [0, size) and non-integers", () => {
      const receipts = ReceiptAccumulator.fromLeaves(LEAVES.slice(0, 5));
      for (const index of [-1, 5, 6, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
        for (const call of [() => receipts.proof(index), () => receipts.leaf(index)]) {
          const err = thrown(call);
          expect(err.name, `index ${index}`).to.equal("LeafIndexOutOfRangeError");
          expect(err.index).to.satisfy((value: number) => Object.is(value, index));
          expect(err.size).to.equal(5);
        }
      }
      expect(thrown(() => new ReceiptAccumulator().proof(0)).name).to.equal("LeafIndexOutOfRangeError");
    });

    const peak = LEAVES[0];
    const badStates: [string, unknown, string][] = [
      ["null", null, "state"],
      ["a string", "{}", "state"],
      ["an array", [], "state"],
      ["size missing", { peaks: [] }, "state.size"],
      ["size as a number", { size: 1, peaks: [peak] }, "state.size"],
      ["size with a leading zero", { size: "01", peaks: [peak] }, "state.size"],
      ["negative size", { size: "-1", peaks: [] }, "state.size"],
      ["fractional size", { size: "1.5", peaks: [peak] }, "state.size"],
      ["size past 2^53", { size: "9007199254740993", peaks: [] }, "state.size"],
      ["peaks missing", { size: "0" }, "state.peaks"],
      ["too few peaks", { size: "3", peaks: [peak] }, "state.peaks"],
      ["too many peaks", { size: "4", peaks: [peak, peak] }, "state.peaks"],
      ["a short peak", { size: "3", peaks: [peak, peak.slice(0, -2)] }, "state.peaks[1]"],
      ["a peak without 0x", { size: "1", peaks: [peak.slice(2)] }, "state.peaks[0]"],
      ["a peak as bytes", { size: "1", peaks: [hexToBytes(peak)] }, "state.peaks[0]"],
    ];
    for (const [what, state, path] of badStates) {
      it(`RootAccumulator.fromJSON rejects ${what} at ${path}`, () => {
        const err = thrown(() => RootAccumulator.fromJSON(state));
        expect(err.name).to.equal("InvalidFieldError");
        expect(err.path).to.equal(path);
      });
    }
  });
});

describe("ReceiptAccumulator prefixes", () => {
  it("gives every prefix's root and proofs against it, equal to a tree of just that prefix", () => {
    const leaves = Array.from({ length: 70 }, (_, i) => keccak256(toBytes(`prefix ${i}`)));
    const full = ReceiptAccumulator.fromLeaves(leaves);
    for (let size = 0; size <= leaves.length; size++) {
      const prefix = ReceiptAccumulator.fromLeaves(leaves.slice(0, size));
      expect(full.prefixRoot(size), `size ${size}`).to.equal(prefix.root());
      for (let i = 0; i < size; i++) {
        expect(full.proof(i, size)).to.deep.equal(prefix.proof(i));
        expect(verifyProof(full.proof(i, size), full.prefixRoot(size), leaves[i]!)).to.equal(true);
      }
    }
  });

  it("rejects a prefix longer than the tree or a leaf outside the prefix", () => {
    const full = ReceiptAccumulator.fromLeaves([keccak256(toBytes(1)), keccak256(toBytes(2))]);
    expect(() => full.prefixRoot(3)).to.throw().with.property("name", "LeafIndexOutOfRangeError");
    expect(() => full.proof(1, 1)).to.throw().with.property("name", "LeafIndexOutOfRangeError");
    expect(() => full.prefixRoot(-1)).to.throw().with.property("name", "LeafIndexOutOfRangeError");
  });
});
