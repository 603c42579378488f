// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// @title LaborGas
/// @notice The settlement token used on devnets and testnets: a plain ERC-20 with EIP-2612 `permit`, so a
/// funder can approve and open a channel without a separate approval transaction.
/// @dev Minting is restricted to the owner (the deployer), who funds test accounts.
contract LaborGas is ERC20, ERC20Permit, Ownable {
    constructor(address initialOwner) ERC20("Labor Gas", "LGAS") ERC20Permit("Labor Gas") Ownable(initialOwner) {}

    /// @notice Mints `amount` to `to`.
    /// Requirements: the caller is the owner.
    function mint(address to, uint256 amount) external onlyOwner {
        _mint(to, amount);
    }
}
