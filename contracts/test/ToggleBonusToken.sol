// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @dev A test token that behaves until `setBonus` makes it mint `bonus` extra to the recipient of every transfer
/// (a token that starts over-crediting after it was vetted). Never deployed outside tests.
contract ToggleBonusToken is ERC20 {
    uint256 public bonus;

    constructor() ERC20("Toggle Bonus Token", "TBON") {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function setBonus(uint256 bonus_) external {
        bonus = bonus_;
    }

    function _update(address from, address to, uint256 value) internal override {
        super._update(from, to, value);
        if (bonus != 0 && from != address(0) && to != address(0)) super._update(address(0), to, bonus);
    }
}
