// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ReceiptLeaf} from "../libraries/ReceiptLeaf.sol";

/// @dev Exposes the ReceiptLeaf library to tests; never deployed outside them.
contract ReceiptLeafHarness {
    function leaf(bytes32 receiptHash, bytes32 ticketHash) external pure returns (bytes32) {
        return ReceiptLeaf.leaf(receiptHash, ticketHash);
    }

    function verify(bytes32[] calldata proof, bytes32 root, bytes32 receiptHash, bytes32 ticketHash)
        external
        pure
        returns (bool)
    {
        return ReceiptLeaf.verify(proof, root, receiptHash, ticketHash);
    }
}
