// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IRandomness} from "../interfaces/IRandomness.sol";

/// @title BlockhashRandomness
/// @notice Randomness from the hash of a block that does not exist yet when it is requested: a ticket is the
/// number of the block `delay` blocks after the request, and its value is that block's hash (mixed with the
/// ticket), readable for the 256 blocks the EVM keeps hashes for.
/// @dev WARNING — bias: the proposer (or builder) of the target block chooses its contents and so can grind its
/// hash, or withhold the block and forfeit its reward to re-roll it. A party that wants a particular panel must
/// therefore bribe the one block producer of that height, and gains only if the re-rolled draw gives it a
/// supermajority of a panel weighted by stake it does not control. On a public chain with real value at stake
/// use a VRF behind `IRandomness` instead (decision 0014). After 256 blocks the hash is gone: `valueOf` reports
/// `expired` and the DisputeManager requests a new ticket, so anyone (either party, a watcher) should draw soon
/// after the target block.
contract BlockhashRandomness is IRandomness {
    /// @notice Blocks between a request and its target block (at least 1: the request's own block is known).
    uint64 public immutable delay;

    /// @notice Hashes older than this many blocks cannot be read by the EVM.
    uint256 public constant HISTORY = 256;

    /// @notice The delay must be from 1 to 128 blocks (so a value stays readable for at least 128 blocks).
    error DelayOutOfRange(uint64 delay);

    constructor(uint64 delay_) {
        if (delay_ == 0 || delay_ > 128) revert DelayOutOfRange(delay_);
        delay = delay_;
    }

    /// @inheritdoc IRandomness
    function request() external view returns (uint256 ticket) {
        return block.number + delay;
    }

    /// @inheritdoc IRandomness
    function valueOf(uint256 ticket) external view returns (bytes32 value, bool expired) {
        if (block.number <= ticket) return (bytes32(0), false);
        // Cannot underflow: block.number > ticket.
        unchecked {
            if (block.number - ticket > HISTORY) return (bytes32(0), true);
        }
        bytes32 hash = blockhash(ticket);
        if (hash == bytes32(0)) return (bytes32(0), true);
        return (keccak256(abi.encode(hash, ticket)), false);
    }
}
