// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title TryTransfer
/// @notice The one ERC-20 `transfer` that reports failure instead of reverting, shared by every contract that
/// defers a refused payout to a claimable balance (GasEscrow, GigEscrow, DisputeManager; decision 0016).
library TryTransfer {
    /// @notice solady's `safeTransfer` check (success, and either `true` returned or no return data from a
    /// contract) without the revert: false when the token refused, returned false, or has no code.
    /// @dev solady 0.1.26 has `trySafeTransferFrom` but no `trySafeTransfer`; this is its `safeTransfer` body
    /// with the revert replaced by the result, so it keeps solady's audited checks. At most 32 bytes of return
    /// data are copied, so a hostile token cannot make the copy expensive.
    function tryTransfer(address token, address to, uint256 amount) internal returns (bool success) {
        /// @solidity memory-safe-assembly
        // solhint-disable-next-line no-inline-assembly
        assembly {
            mstore(0x14, to) // Store the `to` argument.
            mstore(0x34, amount) // Store the `amount` argument.
            mstore(0x00, 0xa9059cbb000000000000000000000000) // `transfer(address,uint256)`.
            success := call(gas(), token, 0, 0x10, 0x44, 0x00, 0x20)
            if iszero(and(eq(mload(0x00), 1), success)) {
                success := lt(or(iszero(extcodesize(token)), returndatasize()), success)
            }
            mstore(0x34, 0) // Restore the part of the free memory pointer that was overwritten.
        }
    }
}
