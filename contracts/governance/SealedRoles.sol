// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {ISealedRoles} from "../interfaces/ISealedRoles.sol";

/// @title SealedRoles
/// @notice AccessControl whose wiring roles (`_isWiringRole`) freeze once `sealRoles` is called: grants and
/// revocations of them revert from then on (see `ISealedRoles`).
abstract contract SealedRoles is ISealedRoles, AccessControl {
    bool private _rolesSealed;

    /// @inheritdoc ISealedRoles
    function sealRoles() external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (_rolesSealed) return;
        _beforeSeal();
        _rolesSealed = true;
        emit RolesSealed(msg.sender);
    }

    /// @inheritdoc ISealedRoles
    function rolesSealed() external view returns (bool) {
        return _rolesSealed;
    }

    /// @dev The roles that seal.
    function _isWiringRole(bytes32 role) internal pure virtual returns (bool);

    /// @dev Reverts (`WiringIncomplete`) if the contract's other wiring is not set: a sealed contract is complete.
    function _beforeSeal() internal view virtual {}

    /// @dev Reverts with `WiringSealed` once sealed: guards wiring that is not a role.
    function _requireUnsealed() internal view {
        if (_rolesSealed) revert WiringSealed();
    }

    function _grantRole(bytes32 role, address account) internal virtual override returns (bool) {
        if (_rolesSealed && _isWiringRole(role)) revert RoleSealed(role);
        return super._grantRole(role, account);
    }

    function _revokeRole(bytes32 role, address account) internal virtual override returns (bool) {
        if (_rolesSealed && _isWiringRole(role)) revert RoleSealed(role);
        return super._revokeRole(role, account);
    }
}
