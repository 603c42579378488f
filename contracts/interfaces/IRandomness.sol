// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IRandomness
/// @notice The one thing the DisputeManager needs from a randomness source: a value that nobody knows when it is
/// requested and that nobody can change once it is known. `BlockhashRandomness` implements it with the hash of a
/// future block (for devnets and chains without an oracle); a VRF adapter implements the same two functions.
interface IRandomness {
    /// @notice Requests a value that is unknown to everyone at the time of the call.
    /// @return ticket What `valueOf` takes; opaque to the caller.
    function request() external returns (uint256 ticket);

    /// @notice The value behind `ticket`.
    /// @return value Zero while the value is not available yet (or no longer is).
    /// @return expired True when the value can never be read any more; the caller must request anew.
    function valueOf(uint256 ticket) external view returns (bytes32 value, bool expired);
}
