// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @title TwoOwnerWallet
/// @notice Test-only 2-of-2 contract wallet (decision 0035): its ERC-1271 signature is NOT 65 bytes but both owners'
/// 65-byte secp256k1 signatures over the digest, concatenated (130 bytes, first owner first). Neither owner's
/// signature alone is the wallet's, which is what proves that a wallet's own signature format travels unchanged.
/// `first` acts for the wallet (`execute`) and receives nothing: refunds of a channel go to its funder.
contract TwoOwnerWallet is IERC1271 {
    /// @notice The owner whose signature comes first, and who may make the wallet call out.
    address public immutable first;

    /// @notice The owner whose signature comes second.
    address public immutable second;

    /// @notice Only the first owner may make the wallet call out.
    error NotOwner(address caller);

    /// @notice The wallet's call failed; carries the callee's revert data.
    error CallFailed(bytes returnData);

    constructor(address first_, address second_) {
        first = first_;
        second = second_;
    }

    receive() external payable {}

    /// @notice Calls `target` with `value` and `data` as the wallet.
    function execute(address target, uint256 value, bytes calldata data) external returns (bytes memory) {
        if (msg.sender != first) revert NotOwner(msg.sender);
        (bool ok, bytes memory returnData) = target.call{value: value}(data);
        if (!ok) revert CallFailed(returnData);
        return returnData;
    }

    /// @inheritdoc IERC1271
    /// @dev Approves exactly `sig(first) ‖ sig(second)` over `hash`: 130 bytes, each half a valid low-s signature.
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 130) return 0xffffffff;
        (address a, ECDSA.RecoverError errA,) = ECDSA.tryRecover(hash, signature[0:65]);
        (address b, ECDSA.RecoverError errB,) = ECDSA.tryRecover(hash, signature[65:130]);
        bool recovered = errA == ECDSA.RecoverError.NoError && errB == ECDSA.RecoverError.NoError;
        bool approved = recovered && a == first && b == second;
        return approved ? IERC1271.isValidSignature.selector : bytes4(0xffffffff);
    }
}
