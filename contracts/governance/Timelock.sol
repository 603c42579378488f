// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";

/// @title Timelock
/// @notice The governance of a deployment: OpenZeppelin's TimelockController, unchanged. It holds
/// `DEFAULT_ADMIN_ROLE` and `GOVERNANCE_ROLE` of the escrows and the registry and is the DisputeManager's
/// immutable governance, so every governance call waits out `getMinDelay()` in public before it can run.
/// @dev Declared here only so that Hardhat compiles an artifact `scripts/deploy.ts` can deploy.
contract Timelock is TimelockController {
    /// @param minDelay Seconds between scheduling a call and executing it.
    /// @param proposers Accounts that may schedule (and cancel) calls.
    /// @param executors Accounts that may execute ready calls (the zero address: anyone).
    /// @param admin An optional extra admin of the timelock's own roles (the zero address: none).
    constructor(uint256 minDelay, address[] memory proposers, address[] memory executors, address admin)
        TimelockController(minDelay, proposers, executors, admin)
    {}
}
