// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title ISealedRoles
/// @notice The roles through which one contract moves or freezes money held by another (the DisputeManager's
/// `DISPUTE_ROLE` on the escrows, its `SLASHER_ROLE` and `LOCKER_ROLE` on the registry) are wired once at
/// deployment and then sealed: after `sealRoles`, nobody — governance included — can grant or revoke them, so no
/// governance key can later give itself the power to zero a payout or slash a bond (decision 0014).
interface ISealedRoles {
    /// @notice The wiring roles were sealed for good, by `sealer` (an admin). Carries an argument so that every
    /// event of the sealed contracts has some (log readers filter on `args`).
    event RolesSealed(address indexed sealer);

    /// @notice `role` is sealed: it can no longer be granted or revoked.
    error RoleSealed(bytes32 role);

    /// @notice The wiring is sealed: the contract's other wiring (its dispute-terms source) can no longer change.
    error WiringSealed();

    /// @notice `sealRoles` before the wiring is complete: `what` is not set yet.
    error WiringIncomplete(string what);

    /// @notice Seals the wiring roles for good (idempotent). Only `DEFAULT_ADMIN_ROLE`.
    function sealRoles() external;

    /// @notice Whether the wiring roles are sealed.
    function rolesSealed() external view returns (bool);
}
