/**
 * The payer's anchoring decisions (issue 27 finding 9, decision 0003): how many receipts a recorded root covers,
 * found by the root and never assumed from a seq, and when the provider's newest signed commit must be anchored.
 */
import { expect } from "chai";
import { keccak256, stringToBytes, zeroHash, type Hex } from "viem";

import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import type { SignedReceiptCommit } from "../../channel-client/core/receipt-commit";
import { commitToAnchor, leafCountOfRoot } from "../../channel-client/node/receipt-anchor";

const leaves: Hex[] = Array.from({ length: 9 }, (_, i) => keccak256(stringToBytes(`leaf ${i}`)));
const tree = ReceiptAccumulator.fromLeaves(leaves);
const commitOver = (count: number): SignedReceiptCommit => ({
  commit: { sessionId: keccak256(stringToBytes("session")), leafCount: BigInt(count), root: tree.prefixRoot(count) },
  signature: `0x${"11".repeat(65)}`,
});

describe("receipt anchoring decisions (issue 27 finding 9)", () => {
  it("finds how many receipts a root covers for every prefix, the empty one included, from leaves or an accumulator", () => {
    for (let size = 0; size <= leaves.length; size++) {
      expect(leafCountOfRoot(leaves, tree.prefixRoot(size))).to.equal(size);
      expect(leafCountOfRoot(tree, tree.prefixRoot(size))).to.equal(size);
    }
    expect(leafCountOfRoot(leaves, zeroHash)).to.equal(0);
    expect(leafCountOfRoot(leaves, keccak256(stringToBytes("a root of other receipts")))).to.equal(undefined);
  });

  it("anchors the newest commit exactly when the recorded root covers fewer receipts, or is no prefix of the payer's", () => {
    const commit = commitOver(9);
    for (let recorded = 0; recorded <= 9; recorded++) {
      expect(commitToAnchor({ leaves, recordedRoot: tree.prefixRoot(recorded), commit }), `recorded root over ${recorded}`).to.equal(recorded < 9 ? commit : undefined);
    }
    // A commit older than the recorded root adds nothing.
    expect(commitToAnchor({ leaves, recordedRoot: tree.prefixRoot(7), commit: commitOver(5) })).to.equal(undefined);
    expect(commitToAnchor({ leaves, recordedRoot: keccak256(stringToBytes("unexplained root")), commit })).to.equal(commit);
    expect(commitToAnchor({ leaves, recordedRoot: zeroHash, commit: undefined })).to.equal(undefined);
  });
});
