// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IAssetTerms
/// @notice The one view the escrows need from the DisputeManager (`IDisputeManager.assetTerms`): the dispute
/// terms in force for an asset. An asset whose `stakeRate` is zero cannot get a case (`AssetNotSupported`), so the
/// escrows refuse to hold it (decision 0016, amendment for issue 28): governance's terms are the vetting of an
/// asset, and a rebasing or fee-on-transfer token must never get terms.
/// @dev ABI-identical to `IDisputeManager.assetTerms`, whose `AssetTerms` struct is two static words.
interface IAssetTerms {
    /// @notice The terms a case opened now would use for `asset` (both zero: none).
    function assetTerms(address asset) external view returns (uint128 bondFloor, uint128 stakeRate);
}
