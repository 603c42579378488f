// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";

/// @title RefusingWallet
/// @notice Test-only contract wallet whose ERC-1271 `isValidSignature` refuses every signature (decision 0035).
contract RefusingWallet is IERC1271 {
    receive() external payable {}

    /// @inheritdoc IERC1271
    function isValidSignature(bytes32, bytes calldata) external pure returns (bytes4) {
        return 0xffffffff;
    }
}
