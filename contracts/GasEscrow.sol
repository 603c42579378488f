// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {SafeTransferLib} from "solady/src/utils/SafeTransferLib.sol";
import {ReentrancyGuardTransient} from "solady/src/utils/ReentrancyGuardTransient.sol";
import {IGasEscrow} from "./interfaces/IGasEscrow.sol";

/// @title GasEscrow
/// @notice Escrow for session payment channels: a funder locks native ETH or an ERC-20 for a payer and a
/// provider, who then exchange signed PaymentTickets off-chain and settle here only at the boundary.
/// @dev Storage holds one word per open channel and nothing else. The channel's fixed terms are committed
/// by its id (an EIP-712 hash over the terms, the opening block, the chain id and this contract), so every
/// call re-supplies them in calldata and a wrong term simply names a channel that does not exist.
///
/// A settled channel's word is deleted (which refunds gas). That cannot re-open the session: the id
/// includes the opening block number, so a channel opened later on the same terms has a different id and
/// no ticket signed for the old one verifies against it.
contract GasEscrow is IGasEscrow, EIP712, ReentrancyGuardTransient {
    /*//////////////////////////////////////////////////////////////
                               CONSTANTS
    //////////////////////////////////////////////////////////////*/

    /// @notice EIP-712 type of the session id preimage.
    bytes32 public constant SESSION_TYPEHASH = keccak256(
        "Session(address payer,address provider,address funder,address asset,bytes32 termsHash,"
        "bytes32 policyHash,uint64 challengeDuration,uint64 nonce,uint64 openedAt)"
    );

    /// @notice EIP-712 type of a PaymentTicket. Mirrors `channel-client/eip712.ts`.
    bytes32 public constant PAYMENT_TICKET_TYPEHASH = keccak256(
        "PaymentTicket(bytes32 sessionId,address provider,bytes32 termsHash,uint64 seq,"
        "uint128 cumulativeAmount,bytes32 receiptRoot)"
    );

    /// @notice EIP-712 type of a SettlementSummary. Mirrors `channel-client/eip712.ts`.
    bytes32 public constant SETTLEMENT_SUMMARY_TYPEHASH = keccak256(
        "SettlementSummary(bytes32 sessionId,address provider,address payer,bytes32 termsHash,uint64 finalSeq,"
        "uint128 finalAmount,bytes32 finalReceiptRoot,uint8 mode)"
    );

    /// @notice Shortest challenge window a channel may bind: long enough for a watchtower to see a close.
    uint64 public constant MIN_CHALLENGE_DURATION = 1 minutes;

    /// @notice Longest challenge window: bounds how long a unilateral close can keep funds locked.
    uint64 public constant MAX_CHALLENGE_DURATION = 30 days;

    /// @dev Low 128 bits of a channel word: the deposit it holds.
    uint256 private constant _DEPOSIT_MASK = type(uint128).max;

    /*//////////////////////////////////////////////////////////////
                                STORAGE
    //////////////////////////////////////////////////////////////*/

    /// @dev One word per channel. Layout while Open:
    ///   bits   0..127  deposit held for the channel (uint128, never 0 while the channel exists)
    ///   bits 128..255  zero (reserved for the closing phase: window end and recorded-ticket fingerprint)
    /// A zero word means "no such channel": never opened, or settled and deleted.
    /// uint128 is enough: it exceeds the total supply of any asset worth escrowing (2^128 wei ≈ 3.4e20 ETH).
    mapping(bytes32 sessionId => uint256 word) private _channels;

    constructor() EIP712("IOI GasEscrow", "1") {}

    /*//////////////////////////////////////////////////////////////
                            CHANNEL LIFECYCLE
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IGasEscrow
    function open(ChannelTerms calldata terms, uint256 amount) external payable returns (bytes32 sessionId) {
        _validateTerms(terms);
        uint64 openedAt = uint64(block.number);
        sessionId = _sessionId(terms, openedAt);
        if (_channels[sessionId] != 0) revert SessionExists(sessionId);

        uint256 received = terms.asset == address(0) ? _receiveEth(amount) : _receiveToken(terms.asset, amount);
        if (received == 0) revert ZeroDeposit();
        if (received > _DEPOSIT_MASK) revert DepositOverflow(sessionId, received);

        _channels[sessionId] = received;
        emit ChannelOpened(sessionId, terms.payer, terms.provider, terms.asset, openedAt, received);
    }

    /// @inheritdoc IGasEscrow
    function deposit(ChannelTerms calldata terms, uint64 openedAt, uint256 amount, uint256 expectedDeposit)
        external
        payable
    {
        bytes32 sessionId = _sessionId(terms, openedAt);
        uint256 held = _requireOpen(sessionId);
        if (held != expectedDeposit) revert DepositMismatch(sessionId, expectedDeposit, held);

        uint256 received = terms.asset == address(0) ? _receiveEth(amount) : _receiveToken(terms.asset, amount);
        if (received == 0) revert ZeroDeposit();
        uint256 total = held + received;
        if (total > _DEPOSIT_MASK) revert DepositOverflow(sessionId, total);

        _channels[sessionId] = total;
        emit Deposited(sessionId, msg.sender, received, total);
    }

    /// @inheritdoc IGasEscrow
    function closeCooperative(
        ChannelTerms calldata terms,
        uint64 openedAt,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot,
        Signature calldata payerSig,
        Signature calldata providerSig
    ) external {
        bytes32 sessionId = _sessionId(terms, openedAt);
        uint256 held = _requireOpen(sessionId);

        bytes32 digest = _hashTypedDataV4(
            _summaryStructHash(
                sessionId,
                terms.provider,
                terms.payer,
                terms.termsHash,
                finalSeq,
                finalAmount,
                finalReceiptRoot,
                CloseMode.Cooperative
            )
        );
        _requireSigner(digest, payerSig, terms.payer);
        _requireSigner(digest, providerSig, terms.provider);

        (uint256 toProvider, uint256 toFunder) = computePayout(held, finalAmount);
        if (toProvider != finalAmount) revert AmountExceedsDeposit(sessionId, finalAmount, held);

        delete _channels[sessionId];
        emit ChannelSettled(sessionId, CloseMode.Cooperative, finalSeq, finalReceiptRoot, toProvider, toFunder);

        _pay(terms.asset, terms.provider, toProvider);
        _pay(terms.asset, terms.funder, toFunder);
    }

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @notice Splits a channel's deposit between provider and funder for a final amount owed.
    /// @dev Pure so that tests and clients can check the arithmetic directly. The provider never receives
    /// more than the channel holds; callers that must not truncate compare `toProvider` to `owed`.
    function computePayout(uint256 held, uint256 owed) public pure returns (uint256 toProvider, uint256 toFunder) {
        toProvider = owed < held ? owed : held;
        // Cannot underflow: toProvider <= held.
        unchecked {
            toFunder = held - toProvider;
        }
    }

    /// @inheritdoc IGasEscrow
    function sessionIdOf(ChannelTerms calldata terms, uint64 openedAt) external view returns (bytes32) {
        return _sessionId(terms, openedAt);
    }

    /// @inheritdoc IGasEscrow
    function depositOf(bytes32 sessionId) external view returns (uint256) {
        return _channels[sessionId] & _DEPOSIT_MASK;
    }

    /// @inheritdoc IGasEscrow
    function hashPaymentTicket(
        bytes32 sessionId,
        address provider,
        bytes32 termsHash,
        uint64 seq,
        uint128 cumulativeAmount,
        bytes32 receiptRoot
    ) external view returns (bytes32) {
        return _hashTypedDataV4(
            keccak256(
                abi.encode(PAYMENT_TICKET_TYPEHASH, sessionId, provider, termsHash, seq, cumulativeAmount, receiptRoot)
            )
        );
    }

    /// @inheritdoc IGasEscrow
    function hashSettlementSummary(
        bytes32 sessionId,
        address provider,
        address payer,
        bytes32 termsHash,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot,
        CloseMode mode
    ) external view returns (bytes32) {
        return _hashTypedDataV4(
            _summaryStructHash(sessionId, provider, payer, termsHash, finalSeq, finalAmount, finalReceiptRoot, mode)
        );
    }

    /*//////////////////////////////////////////////////////////////
                                INTERNAL
    //////////////////////////////////////////////////////////////*/

    function _validateTerms(ChannelTerms calldata terms) private pure {
        if (terms.payer == address(0)) revert ZeroAddressParty(0);
        if (terms.provider == address(0)) revert ZeroAddressParty(1);
        if (terms.funder == address(0)) revert ZeroAddressParty(2);
        uint64 duration = terms.challengeDuration;
        if (duration < MIN_CHALLENGE_DURATION || duration > MAX_CHALLENGE_DURATION) {
            revert ChallengeDurationOutOfRange(duration, MIN_CHALLENGE_DURATION, MAX_CHALLENGE_DURATION);
        }
    }

    function _sessionId(ChannelTerms calldata terms, uint64 openedAt) private view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(SESSION_TYPEHASH, terms, openedAt)));
    }

    /// @dev Returns the deposit of an open channel; reverts if there is none.
    function _requireOpen(bytes32 sessionId) private view returns (uint256 held) {
        held = _channels[sessionId];
        if (held == 0) revert ChannelNotOpen(sessionId);
    }

    function _summaryStructHash(
        bytes32 sessionId,
        address provider,
        address payer,
        bytes32 termsHash,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot,
        CloseMode mode
    ) private pure returns (bytes32) {
        return keccak256(
            abi.encode(
                SETTLEMENT_SUMMARY_TYPEHASH,
                sessionId,
                provider,
                payer,
                termsHash,
                finalSeq,
                finalAmount,
                finalReceiptRoot,
                mode
            )
        );
    }

    /// @dev Reverts unless `sig` is a valid low-s signature of `digest` by `expected`.
    function _requireSigner(bytes32 digest, Signature calldata sig, address expected) private pure {
        (address recovered, ECDSA.RecoverError err, bytes32 errArg) = ECDSA.tryRecover(digest, sig.r, sig.vs);
        if (err == ECDSA.RecoverError.InvalidSignatureS) revert SignatureNotLowS(errArg);
        if (err != ECDSA.RecoverError.NoError) revert InvalidSignature();
        if (recovered != expected) revert SignerMismatch(expected, recovered);
    }

    function _receiveEth(uint256 amount) private returns (uint256) {
        if (msg.value != amount) revert EthValueMismatch(msg.value, amount);
        return amount;
    }

    /// @dev Pulls `amount` of `token` from the caller and returns what actually arrived, so that a
    /// fee-on-transfer token credits the channel with the net amount rather than over-crediting it.
    /// The transfer happens before the channel's word is written; the guard keeps a hostile token from
    /// re-entering in between.
    function _receiveToken(address token, uint256 amount) private nonReentrant returns (uint256) {
        if (msg.value != 0) revert UnexpectedEth(msg.value);
        if (amount == 0) return 0;
        uint256 before = SafeTransferLib.balanceOf(token, address(this));
        SafeTransferLib.safeTransferFrom(token, msg.sender, address(this), amount);
        return SafeTransferLib.balanceOf(token, address(this)) - before;
    }

    /// @dev Sends a payout after all state changes. ETH is force-sent (a recipient that reverts receives it
    /// anyway through a self-destructing forwarder), so a hostile party cannot block the other's payout.
    function _pay(address asset, address to, uint256 amount) private {
        if (amount == 0) return;
        if (asset == address(0)) {
            SafeTransferLib.forceSafeTransferETH(to, amount);
        } else {
            _payToken(asset, to, amount);
        }
    }

    function _payToken(address token, address to, uint256 amount) private nonReentrant {
        SafeTransferLib.safeTransfer(token, to, amount);
    }

    /// @dev Transient storage exists on every chain this contract targets (Cancun and later).
    function _useTransientReentrancyGuardOnlyOnMainnet() internal pure override returns (bool) {
        return false;
    }
}
