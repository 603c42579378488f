// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @dev A test token that mints `bonus` extra to the recipient of every transfer (a rebasing or otherwise
/// over-crediting token): the recipient's balance grows by more than was sent. Never deployed outside tests.
contract BonusToken is ERC20 {
    uint256 public immutable bonus;

    constructor(uint256 bonus_) ERC20("Bonus Token", "BON") {
        bonus = bonus_;
    }

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function _update(address from, address to, uint256 value) internal override {
        super._update(from, to, value);
        if (from != address(0) && to != address(0)) super._update(address(0), to, bonus);
    }
}
