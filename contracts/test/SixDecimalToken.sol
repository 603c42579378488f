// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @notice A 6-decimal ERC-20 (like USDC) for tests of per-asset bond floors and stake rates. Anyone may mint.
contract SixDecimalToken is ERC20 {
    constructor() ERC20("Six Decimal Dollar", "SIX") {}

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
