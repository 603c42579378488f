// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {SealedRoles} from "./SealedRoles.sol";
import {IAssetTerms} from "../interfaces/IAssetTerms.sol";
import {IDisputableAssets} from "../interfaces/IDisputableAssets.sol";

/// @title DisputableAssets
/// @notice The escrows' shared funding rule: only assets with dispute terms, only transfers that credit exactly
/// what was sent (see `IDisputableAssets`). The terms source is wiring: set before sealing, fixed once sealed,
/// and sealing requires it.
abstract contract DisputableAssets is IDisputableAssets, SealedRoles {
    IAssetTerms private _termsSource;

    /// @inheritdoc IDisputableAssets
    function setDisputeTermsSource(IAssetTerms source) external onlyRole(DEFAULT_ADMIN_ROLE) {
        _requireUnsealed();
        _termsSource = source;
        emit DisputeTermsSourceSet(address(source));
    }

    /// @inheritdoc IDisputableAssets
    function disputeTermsSource() external view returns (IAssetTerms) {
        return _termsSource;
    }

    /// @dev Reverts unless `asset` has dispute terms now (unchecked only while unwired, i.e. unsealed).
    function _requireDisputable(address asset) internal view {
        IAssetTerms source = _termsSource;
        if (address(source) == address(0)) return;
        (, uint128 stakeRate) = source.assetTerms(asset);
        if (stakeRate == 0) revert AssetWithoutDisputeTerms(asset);
    }

    /// @dev Reverts unless a transfer of `amount` credited exactly `received`.
    function _requireExact(address asset, uint256 amount, uint256 received) internal pure {
        if (received != amount) revert TransferAmountMismatch(asset, amount, received);
    }

    function _beforeSeal() internal view override {
        if (address(_termsSource) == address(0)) revert WiringIncomplete("disputeTermsSource");
    }
}
