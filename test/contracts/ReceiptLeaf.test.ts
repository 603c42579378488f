import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { keccak256, toBytes, type Hex } from "viem";

import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { LEAF_DOMAIN_HASH, receiptLeaf, receiptLeafFromHashes } from "../../channel-client/core/leaf";
import { sessionReceiptHash } from "../../channel-client/core/receipt";
import { paymentTicketHash } from "../../channel-client/core/ticket";
import { sampleReceipt, sampleTicket } from "../helpers/samples";

/** The artifact hashes of step `i` of a session. */
function step(i: number): { receiptHash: Hex; ticketHash: Hex } {
  const seq = BigInt(i + 1);
  return {
    receiptHash: sessionReceiptHash(sampleReceipt({ seq, outputHash: keccak256(toBytes(i)) })),
    ticketHash: paymentTicketHash(sampleTicket({ seq, cumulativeAmount: 1000n * seq })),
  };
}

async function harnessFixture() {
  const harness = await hre.viem.deployContract("ReceiptLeafHarness");
  const steps = Array.from({ length: 1000 }, (_, i) => step(i));
  return { harness, steps };
}

describe("ReceiptLeaf: receipt proofs verified on-chain (solady MerkleProofLib)", () => {
  it("computes the same leaf as TypeScript", async () => {
    const { harness, steps } = await loadFixture(harnessFixture);
    for (const { receiptHash, ticketHash } of steps.slice(0, 5)) {
      expect(await harness.read.leaf([receiptHash, ticketHash])).to.equal(receiptLeafFromHashes(receiptHash, ticketHash));
    }
    expect(receiptLeaf(sampleReceipt(), sampleTicket())).to.equal(
      await harness.read.leaf([sessionReceiptHash(sampleReceipt()), paymentTicketHash(sampleTicket())]),
    );
    expect(LEAF_DOMAIN_HASH).to.equal(keccak256(toBytes("IOI_SESSION_LEAF_V1")));
  });

  for (const size of [1, 2, 3, 5, 8, 13, 100, 1000]) {
    it(`accepts the accumulator's proof of every probed leaf in a ${size}-leaf session`, async () => {
      const { harness, steps } = await loadFixture(harnessFixture);
      const accumulator = ReceiptAccumulator.fromLeaves(
        steps.slice(0, size).map((s) => receiptLeafFromHashes(s.receiptHash, s.ticketHash)),
      );
      const root = accumulator.root();
      const probes = size <= 13 ? [...Array(size).keys()] : [0, 1, size / 2, size - 2, size - 1];
      for (const index of probes) {
        const { receiptHash, ticketHash } = steps[index]!;
        expect(await harness.read.verify([accumulator.proof(index), root, receiptHash, ticketHash]), `leaf ${index}`).to.equal(true);
      }
    });
  }

  it("rejects forged, truncated, extended and misplaced proofs", async () => {
    const { harness, steps } = await loadFixture(harnessFixture);
    const size = 100;
    const accumulator = ReceiptAccumulator.fromLeaves(steps.slice(0, size).map((s) => receiptLeafFromHashes(s.receiptHash, s.ticketHash)));
    const root = accumulator.root();
    const index = 37;
    const proof = accumulator.proof(index);
    const { receiptHash, ticketHash } = steps[index]!;
    const flipped = proof.map((p, i) => (i === 2 ? (`0x${(BigInt(p) ^ 1n).toString(16).padStart(64, "0")}` as Hex) : p));
    const cases: Array<[string, readonly Hex[], Hex, Hex, Hex]> = [
      ["a flipped proof element", flipped, root, receiptHash, ticketHash],
      ["a truncated proof", proof.slice(0, -1), root, receiptHash, ticketHash],
      ["an extended proof", [...proof, root], root, receiptHash, ticketHash],
      ["another step's receipt", proof, root, steps[index + 1]!.receiptHash, ticketHash],
      ["another step's ticket", proof, root, receiptHash, steps[index + 1]!.ticketHash],
      ["another root", proof, keccak256(root), receiptHash, ticketHash],
    ];
    for (const [name, p, r, rh, th] of cases) {
      expect(await harness.read.verify([p, r, rh, th]), name).to.equal(false);
    }
  });

  it("cannot pass an inner node off as a leaf", async () => {
    const { harness, steps } = await loadFixture(harnessFixture);
    const leaves = steps.slice(0, 4).map((s) => receiptLeafFromHashes(s.receiptHash, s.ticketHash));
    const accumulator = ReceiptAccumulator.fromLeaves(leaves);
    const root = accumulator.root();
    // The inner node over leaves 0 and 1 and the proof [node(2,3)] would satisfy a verifier that takes
    // ready-made leaves. Ours only takes the two artifact hashes and rebuilds a 96-byte-preimage leaf,
    // so presenting the inner node's children as "receipt" and "ticket" hashes fails.
    const node23 = accumulator.proof(0)[1]!;
    expect(await harness.read.verify([[node23], root, leaves[0]!, leaves[1]!])).to.equal(false);
    expect(await harness.read.verify([[node23], root, leaves[1]!, leaves[0]!])).to.equal(false);
  });
});
