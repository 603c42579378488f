// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @title OwnerWallet
/// @notice Test-only minimal contract wallet (decision 0035): approves, through ERC-1271, exactly the digests its
/// owner key signed (a 65-byte secp256k1 signature over the digest itself), can act as a channel's funder through
/// `execute`, and receives refunds. The owner can make it refuse every signature from some moment on
/// (`setRefusing`), which is how a wallet that approved a ticket yesterday refuses it today.
contract OwnerWallet is IERC1271 {
    /// @notice The key whose signatures the wallet accepts.
    address public immutable owner;

    /// @notice While true, `isValidSignature` refuses everything.
    bool public refusing;

    /// @notice Only the owner may make the wallet call out or change its answer.
    error NotOwner(address caller);

    /// @notice The wallet's call failed; carries the callee's revert data.
    error CallFailed(bytes returnData);

    constructor(address owner_) {
        owner = owner_;
    }

    receive() external payable {}

    /// @notice Switches the wallet between approving its owner's signatures and refusing everything.
    function setRefusing(bool refusing_) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        refusing = refusing_;
    }

    /// @notice Calls `target` with `value` and `data` as the wallet (say, `GasEscrow.open` as the funder).
    function execute(address target, uint256 value, bytes calldata data) external returns (bytes memory) {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        (bool ok, bytes memory returnData) = target.call{value: value}(data);
        if (!ok) revert CallFailed(returnData);
        return returnData;
    }

    /// @inheritdoc IERC1271
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        if (refusing) return 0xffffffff;
        (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecover(hash, signature);
        bool approved = err == ECDSA.RecoverError.NoError && signer == owner;
        return approved ? IERC1271.isValidSignature.selector : bytes4(0xffffffff);
    }
}
