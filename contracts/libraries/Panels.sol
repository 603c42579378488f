// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {IDisputeManager} from "../interfaces/IDisputeManager.sol";
import {IProviderRegistry} from "../interfaces/IProviderRegistry.sol";

/// @title Panels
/// @notice How the DisputeManager draws a panel and settles with its members. An external library (linked at
/// deployment and run by DELEGATECALL, so every registry call still comes from the DisputeManager) that keeps
/// the DisputeManager under the 24 KiB code limit.
library Panels {
    /// @notice Basis points in a whole.
    uint16 internal constant BPS = 10_000;

    /// @notice Draws `size` members without replacement from the registry's eligible pool as it stood at
    /// `snapshotBlock` (before the randomness behind `seed` existed), each pick weighted by the active stake then,
    /// never drawing an address in `excluded`. Returns an empty panel when fewer than `size`
    /// arbitrators are eligible.
    function draw(
        IProviderRegistry registry,
        bytes32 judgeRuntimeHash,
        address[] calldata excluded,
        uint256 size,
        uint48 snapshotBlock,
        bytes32 seed
    ) external view returns (address[] memory panel) {
        (address[] memory pool, uint256[] memory weights) = registry.drawPoolAt(judgeRuntimeHash, snapshotBlock);
        uint256 total;
        uint256 eligible;
        for (uint256 i; i < pool.length; ++i) {
            if (indexOf(excluded, pool[i]) != type(uint256).max) {
                weights[i] = 0;
                continue;
            }
            total += weights[i];
            ++eligible;
        }
        if (eligible < size) return new address[](0);

        panel = new address[](size);
        for (uint256 k; k < size; ++k) {
            uint256 pick = uint256(keccak256(abi.encode(seed, k))) % total;
            uint256 i;
            // Walk the cumulative weights; a zero weight is never picked. Terminates: pick < total, the sum of
            // the weights still in the pool.
            while (pick >= weights[i]) {
                pick -= weights[i];
                ++i;
            }
            panel[k] = pool[i];
            total -= weights[i];
            weights[i] = 0;
        }
    }

    /// @notice Recovers each signature over `digest` (signers in strictly ascending order, so none twice),
    /// requires every signer to sit on `panel`, and returns their mask. For a verdict (`verdict` true) the
    /// signers must also be a supermajority of the panel (two thirds, rounded up) and what they lose if it is
    /// overturned (`overturnSlashBps` of their stake) must exceed `moved`, what the case moves in the bond token.
    function signers(
        IProviderRegistry registry,
        bytes32 caseId,
        bytes32 digest,
        IDisputeManager.Signature[] calldata signatures,
        address[] calldata panel,
        bool verdict,
        uint16 overturnSlashBps,
        uint256 moved
    ) external view returns (uint16 mask) {
        address previous;
        uint256 stake;
        uint256 count = signatures.length;
        for (uint256 i; i < count; ++i) {
            (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecover(digest, signatures[i].r, signatures[i].vs);
            if (err != ECDSA.RecoverError.NoError) revert IDisputeManager.InvalidSignature(i);
            if (signer <= previous) revert IDisputeManager.SignersNotAscending(i, signer);
            previous = signer;
            uint256 seat = indexOf(panel, signer);
            if (seat == type(uint256).max) revert IDisputeManager.NotOnPanel(caseId, signer);
            // Fits: seat < panel length <= 15 (round 1 of the largest panel size).
            mask |= uint16(1 << seat);
            IProviderRegistry.Bond memory b = registry.bondOf(IProviderRegistry.Role.Arbitrator, signer);
            stake += uint256(b.active) + b.pending;
        }
        if (!verdict) return mask;
        uint256 needed = (2 * panel.length + 2) / 3;
        if (count < needed) revert IDisputeManager.SupermajorityNotMet(count, needed);
        uint256 atRisk = Math.mulDiv(stake, overturnSlashBps, BPS);
        if (atRisk <= moved) revert IDisputeManager.StakeAtRiskTooLow(atRisk, moved);
    }

    /// @notice The position of `a` in `list`, or `type(uint256).max` when absent.
    function indexOf(address[] memory list, address a) internal pure returns (uint256) {
        for (uint256 i; i < list.length; ++i) {
            if (list[i] == a) return i;
        }
        return type(uint256).max;
    }
}
