// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {MerkleProofLib} from "solady/src/utils/MerkleProofLib.sol";

/// @title ReceiptLeaf
/// @notice The receipt leaf of a session and its inclusion proof against a committed receipt root.
/// Mirrors `channel-client/leaf.ts` and the accumulator in `channel-client/accumulator.ts`.
/// @dev A leaf is `keccak256(LEAF_DOMAIN_HASH ‖ receiptHash ‖ ticketHash)` — a 96-byte preimage — while an
/// inner node is the keccak256 of a sorted 64-byte pair. Callers pass the two artifact hashes, never a
/// ready-made leaf, so an inner node cannot be presented as a leaf.
library ReceiptLeaf {
    /// @notice keccak256("IOI_SESSION_LEAF_V1").
    bytes32 internal constant LEAF_DOMAIN_HASH = keccak256("IOI_SESSION_LEAF_V1");

    /// @notice The leaf of one step from `keccak256(canon(receipt))` and `keccak256(canon(ticket))`.
    function leaf(bytes32 receiptHash, bytes32 ticketHash) internal pure returns (bytes32) {
        return keccak256(abi.encode(LEAF_DOMAIN_HASH, receiptHash, ticketHash));
    }

    /// @notice True when the step (`receiptHash`, `ticketHash`) is a leaf of the tree with root `root`.
    function verify(bytes32[] calldata proof, bytes32 root, bytes32 receiptHash, bytes32 ticketHash)
        internal
        pure
        returns (bool)
    {
        return MerkleProofLib.verifyCalldata(proof, root, leaf(receiptHash, ticketHash));
    }
}
