// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @dev Test tokens that break ERC-20 conventions the way real tokens do; never deployed outside tests.

/// @dev Takes `feeBps` of every transfer (like fee-on-transfer tokens): the recipient gets less than sent.
contract FeeOnTransferToken is ERC20 {
    uint256 public immutable feeBps;

    constructor(uint256 feeBps_) ERC20("Fee Token", "FEE") {
        feeBps = feeBps_;
    }

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function _update(address from, address to, uint256 value) internal override {
        if (from == address(0) || to == address(0)) return super._update(from, to, value);
        uint256 fee = (value * feeBps) / 10_000;
        super._update(from, address(0), fee);
        super._update(from, to, value - fee);
    }
}

/// @dev Reverts every transfer to or from a blocked account (like USDC's and USDT's blocklists): a payee
/// that is blocked must not block the other party's payout.
contract BlocklistToken is ERC20 {
    error Blocked(address account);

    mapping(address account => bool) public blocked;

    constructor() ERC20("Blocklist Token", "BLK") {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function setBlocked(address account, bool isBlocked) external {
        blocked[account] = isBlocked;
    }

    function _update(address from, address to, uint256 value) internal override {
        if (blocked[from]) revert Blocked(from);
        if (blocked[to]) revert Blocked(to);
        super._update(from, to, value);
    }
}

/// @dev Returns nothing from `transfer`/`transferFrom` (like USDT): callers must not expect a bool.
contract NoReturnToken {
    error InsufficientBalanceOrAllowance();

    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    function mint(address to, uint256 amount) external {
        balanceOf[to] += amount;
    }

    function approve(address spender, uint256 amount) external {
        allowance[msg.sender][spender] = amount;
    }

    function transfer(address to, uint256 amount) external {
        if (balanceOf[msg.sender] < amount) revert InsufficientBalanceOrAllowance();
        balanceOf[msg.sender] -= amount;
        balanceOf[to] += amount;
    }

    function transferFrom(address from, address to, uint256 amount) external {
        if (balanceOf[from] < amount || allowance[from][msg.sender] < amount) revert InsufficientBalanceOrAllowance();
        allowance[from][msg.sender] -= amount;
        balanceOf[from] -= amount;
        balanceOf[to] += amount;
    }
}

/// @dev Calls back into `target` with `data` during the next transfer or transferFrom (a hostile token).
contract ReentrantToken is ERC20 {
    address public target;
    bytes public data;
    bool public lastCallSucceeded;
    bytes public lastReturnData;

    constructor() ERC20("Reentrant Token", "REE") {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function arm(address target_, bytes calldata data_) external {
        target = target_;
        data = data_;
    }

    function _update(address from, address to, uint256 value) internal override {
        super._update(from, to, value);
        address t = target;
        if (t != address(0) && from != address(0)) {
            target = address(0);
            // solhint-disable-next-line avoid-low-level-calls
            (lastCallSucceeded, lastReturnData) = t.call(data);
        }
    }
}

/// @dev An account that refuses every ETH transfer (a payee that tries to block a settlement).
contract EthRejecter {
    error NoEth();

    receive() external payable {
        revert NoEth();
    }
}
