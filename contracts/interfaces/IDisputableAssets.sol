// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IAssetTerms} from "./IAssetTerms.sol";

/// @title IDisputableAssets
/// @notice Both escrows hold only money a case can be opened about (decision 0016, amendment for issue 28): an
/// asset the dispute terms source gives no terms, or a transfer that credits other than the amount sent
/// (fee-on-transfer), is refused at funding, because a gig or channel in it could never be disputed.
interface IDisputableAssets {
    /// @notice The escrow reads dispute terms from `source` (the DisputeManager) from now on.
    event DisputeTermsSourceSet(address indexed source);

    /// @notice `asset` has no dispute terms (`stakeRate == 0`): no case could ever be opened about money in it.
    error AssetWithoutDisputeTerms(address asset);

    /// @notice The transfer of `amount` of `asset` credited `received`: a fee-on-transfer (or otherwise
    /// non-standard) token, whose escrow could not back a dispute bond or a refund exactly.
    error TransferAmountMismatch(address asset, uint256 amount, uint256 received);

    /// @notice Sets where dispute terms are read (the DisputeManager, deployed after the escrows because it
    /// names them). Only `DEFAULT_ADMIN_ROLE`, only before `sealRoles`, which refuses to seal without it.
    function setDisputeTermsSource(IAssetTerms source) external;

    /// @notice Where dispute terms are read (zero: not wired yet, and then funding is not checked — only an
    /// unsealed test deployment can be in that state).
    function disputeTermsSource() external view returns (IAssetTerms);
}
