// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {DisputableAssets} from "./governance/DisputableAssets.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {SafeTransferLib} from "solady/src/utils/SafeTransferLib.sol";
import {ReentrancyGuardTransient} from "solady/src/utils/ReentrancyGuardTransient.sol";
import {IGasEscrow} from "./interfaces/IGasEscrow.sol";
import {IGasEscrowWallets} from "./interfaces/IGasEscrowWallets.sol";
import {IProviderRegistry} from "./interfaces/IProviderRegistry.sol";
import {TryTransfer} from "./libraries/TryTransfer.sol";

/// @title GasEscrow
/// @notice Escrow for session payment channels: a funder locks native ETH or an ERC-20 for a payer and a
/// provider, who exchange signed PaymentTickets off-chain and settle here only at the boundary —
/// cooperatively at once, or unilaterally through a challenge window in which a newer ticket wins.
/// @dev Storage holds one word per live channel. The channel's fixed terms are committed by its id (an
/// EIP-712 hash over the terms, the opening block, the chain id and this contract), so every call
/// re-supplies them in calldata and a wrong term simply names a channel that does not exist. A closing
/// channel's recorded ticket is committed the same way, by a fingerprint in that word.
///
/// A channel settled through its challenge window has its word deleted (which refunds gas). That cannot
/// re-open the session: the id includes the opening block number, and `open` in that same block would need
/// the channel to have closed unilaterally and finalised within one block, which the minimum window forbids.
/// A cooperatively settled channel keeps a Settled word instead (decision 0005, amendment for issue 12):
/// when it settled and a fingerprint of the co-signed summary, so the payer can still dispute its receipts
/// for `settledDisputeWindow` (refunded from the provider's SLA bond) and the id can never be opened again.
contract GasEscrow is IGasEscrow, DisputableAssets, EIP712, ReentrancyGuardTransient {
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

    /// @notice EIP-712 type of a provider's (or payer's) signed receipt root over a session's first `leafCount`
    /// leaves. Mirrors `channel-client/eip712.ts`.
    bytes32 public constant RECEIPT_COMMIT_TYPEHASH =
        keccak256("ReceiptCommit(bytes32 sessionId,uint64 leafCount,bytes32 root)");
    /// @notice EIP-712 type of a payer's session-key delegation (decision 0025). Mirrors `channel-client/eip712.ts`.
    bytes32 public constant SESSION_KEY_TYPEHASH = keccak256(
        "SessionKey(bytes32 sessionId,address key,uint64 expiry,uint128 spendCap,bytes32 capabilities,uint64 epoch)"
    );

    /// @notice May set the routing fee and the treasury.
    bytes32 public constant GOVERNANCE_ROLE = keccak256("GOVERNANCE_ROLE");

    /// @notice May freeze and release closing sessions: held by the DisputeManager.
    bytes32 public constant DISPUTE_ROLE = keccak256("DISPUTE_ROLE");

    /// @notice Shortest challenge window a channel may bind: long enough for a watchtower to see a close.
    uint64 public constant MIN_CHALLENGE_DURATION = 1 minutes;

    /// @notice Longest challenge window: bounds how long a unilateral close can keep funds locked.
    uint64 public constant MAX_CHALLENGE_DURATION = 30 days;

    /// @notice Hard cap on the routing fee: 10% of the provider's payout.
    uint16 public constant MAX_ROUTING_FEE_BPS = 1_000;

    /// @notice How long after a cooperative close the provider's bond stays in the registry whatever unbonding it
    /// requested (`IProviderRegistry.holdBond`): the longest settled-session dispute window the DisputeManager
    /// accepts (`DisputeRules.MAX_SETTLED_DISPUTE_WINDOW`, 30 days). A case opened inside the window locks the
    /// bond from then on, so the hold need only cover the window itself (decision 0006, amendment for issue 28).
    uint64 public constant SETTLED_BOND_HOLD = 30 days;

    /// @notice After the window plus this long, a frozen session can be finalised even if its dispute cases
    /// were never resolved, so a broken or captured dispute contract cannot lock funds forever.
    uint256 public constant MAX_FREEZE_DURATION = 180 days;

    /*//////////////////////////////////////////////////////////////
                            CHANNEL WORD LAYOUT
    //////////////////////////////////////////////////////////////*/
    // One word per channel, `_channels[sessionId]`; zero means "no such channel" (never opened or settled).
    //
    // Open:     bits 254..255 = 0 (tag)   bits 144..253 = 0
    //           bits 128..143 = routing fee in bps, fixed when the channel opened
    //           bits   0..127 = deposit (uint128, > 0)
    // Closing:  bits 254..255 = 1 (tag)   bits 250..253 = open dispute cases (0..15)
    //           bits 210..249 = finalizesAt (uint40 unix time)     bits 0..209 = fingerprint of ClosingState
    // Settled:  bits 254..255 = 2 (tag)   bits 250..253 = 0          (cooperative closes only; permanent)
    //           bits 210..249 = settledAt (uint40 unix time)       bits 0..209 = fingerprint of the summary
    //           as a ClosingState: {deposit: finalAmount, seq: finalSeq, amount: finalAmount,
    //           receiptRoot: finalReceiptRoot, feeBps: 0} (`settledState`), which the payer rebuilds from the
    //           summary it co-signed alone.
    //
    // The 210-bit fingerprint (the low bits of keccak256(abi.encode(ClosingState))) makes finding a second
    // state with the same fingerprint a 2^105 birthday search even for a party that chooses both states.
    // uint128 deposits exceed any asset's supply worth escrowing; uint40 times last until year 36812.

    uint256 private constant _DEPOSIT_MASK = type(uint128).max;
    uint256 private constant _FEE_SHIFT = 128;
    uint256 private constant _TAG_SHIFT = 254;
    uint256 private constant _TAG_CLOSING = 1;
    uint256 private constant _TAG_SETTLED = 2;
    uint256 private constant _CASES_SHIFT = 250;
    uint256 private constant _CASES_MASK = 0xf;
    uint256 private constant _FINALIZES_AT_SHIFT = 210;
    uint256 private constant _FINALIZES_AT_MASK = type(uint40).max;
    uint256 private constant _FINGERPRINT_MASK = (1 << 210) - 1;


    /*//////////////////////////////////////////////////////////////
                                STORAGE
    //////////////////////////////////////////////////////////////*/

    /// @notice The registry holding providers' bonds, which answer for cooperatively settled sessions; this
    /// escrow must hold its `HOLDER_ROLE`.
    IProviderRegistry public immutable registry;

    mapping(bytes32 sessionId => uint256 word) private _channels;

    /// @dev When a session key was revoked on a session (0: never). Session keys are granted off-chain
    /// (decision 0025); only revocations, which must be public, are written.
    mapping(bytes32 sessionId => mapping(address key => uint40 revokedAt)) private _keyRevokedAt;

    /// @dev Revocation epoch per payer; a grant naming an older epoch was revoked when that epoch ended.
    mapping(address payer => uint64 epoch) private _keyEpochs;

    /// @dev When each of a payer's epochs ended (`revokeAllSessionKeys`).
    mapping(address payer => mapping(uint64 epoch => uint40 endedAt)) private _epochEndedAt;

    /// @dev Everything owed per asset (open and closing deposits, accrued fees, claimable payouts): the balance
    /// above it is surplus (`sweep`). Only exact transfers are accepted at funding, so it is exact.
    mapping(address asset => uint256 amount) private _liabilities;

    /// @dev Fees collected for the treasury per asset, not yet withdrawn.
    mapping(address asset => uint256 amount) private _accruedFees;

    /// @dev ERC-20 payouts the token refused (a blocklisted recipient), owed to the recipient until `claim`.
    mapping(address asset => mapping(address account => uint256 amount)) private _claimable;

    /// @dev Provider-signed receipt commits anchored by the payer side: root => its leaf count (0: none).
    mapping(bytes32 sessionId => mapping(bytes32 root => uint64 leafCount)) private _anchoredCommits;

    /// @dev Session-key grants of contract-wallet payers that the wallet approved (ERC-1271) when they were
    /// registered: session => grant digest => registered (decision 0035).
    mapping(bytes32 sessionId => mapping(bytes32 grantDigest => bool)) private _walletGrants;

    /// @dev Routing fee and treasury in one slot: bits 0..159 treasury, bits 160..175 fee in bps.
    uint256 private _feeConfig;

    /// @param governance Receives the admin and governance roles.
    /// @param treasury Receives the routing fees.
    /// @param routingFeeBps Initial routing fee, at most MAX_ROUTING_FEE_BPS.
    /// @param registry_ The ProviderRegistry whose provider bonds answer for settled sessions (a contract).
    constructor(address governance, address treasury, uint16 routingFeeBps, IProviderRegistry registry_)
        EIP712("IOI GasEscrow", "1")
    {
        if (address(registry_).code.length == 0) revert RegistryNotContract(address(registry_));
        registry = registry_;
        _grantRole(DEFAULT_ADMIN_ROLE, governance);
        _grantRole(GOVERNANCE_ROLE, governance);
        _setRoutingFee(routingFeeBps, treasury);
    }

    /*//////////////////////////////////////////////////////////////
                          CONTRACT-WALLET PAYERS
    //////////////////////////////////////////////////////////////*/

    /// @notice Serves `IGasEscrowWallets`, the entry points for payers that are contract wallets (decision 0035).
    /// @dev Reached only after every plain-key selector missed, so adding these entry points left the plain-key
    /// functions' dispatch — and their gas — exactly as it was. Arguments are read in place from calldata
    /// (`ChannelTerms`, `ClosingState`, `Ticket` and `Signature` are static tuples encoded inline; a
    /// `WalletTicket`, a `WalletSessionKeyGrant` and `bytes` are reached through their offset word), every
    /// narrow integer and every offset is range-checked, and the entry points then run the same private checks as
    /// the plain-key functions. Not payable: ETH sent to the escrow without a function still reverts.
    // solhint-disable-next-line no-complex-fallback
    fallback(bytes calldata) external returns (bytes memory) {
        bytes4 selector = msg.sig;
        if (selector == IGasEscrowWallets.walletSessionKeyRegistered.selector) {
            return abi.encode(_walletGrants[_wordArg(0x04)][_wordArg(0x24)]);
        }
        ChannelTerms calldata terms;
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            terms := 0x04 // eight static words; `_sessionId` reverts on any dirty high bits
        }
        uint64 openedAt = uint64(_uintArg(0x104, 64));
        if (selector == IGasEscrowWallets.closeUnilateralByWallet.selector) {
            _closeUnilateralByWallet(terms, openedAt, _walletTicketArg(0x124));
        } else if (selector == IGasEscrowWallets.challengeByWallet.selector) {
            _challengeByWallet(terms, openedAt, _closingStateArg(0x124), _walletTicketArg(0x1c4));
        } else if (selector == IGasEscrowWallets.closeCooperativeByWallet.selector) {
            _closeCooperativeByWallet(
                terms,
                openedAt,
                uint64(_uintArg(0x124, 64)),
                uint128(_uintArg(0x144, 128)),
                _wordArg(0x164),
                _bytesArg(0x184),
                _signatureArg(0x1a4)
            );
        } else if (selector == IGasEscrowWallets.registerWalletSessionKey.selector) {
            _registerWalletSessionKey(terms, openedAt, _walletGrantArg(0x124));
        } else if (selector == IGasEscrowWallets.closeUnilateralWithWalletKey.selector) {
            _closeUnilateralWithWalletKey(terms, openedAt, _ticketArg(0x124), _walletGrantArg(0x1c4));
        } else if (selector == IGasEscrowWallets.challengeWithWalletKey.selector) {
            _challengeWithWalletKey(
                terms, openedAt, _closingStateArg(0x124), _ticketArg(0x1c4), _walletGrantArg(0x264)
            );
        } else {
            revert UnknownFunction(selector);
        }
        return "";
    }

    function _wordArg(uint256 at) private pure returns (bytes32 word) {
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            word := calldataload(at)
        }
    }

    /// @dev The word at `at` as an unsigned integer of `bits` bits; reverts if it has higher bits set.
    function _uintArg(uint256 at, uint256 bits) private pure returns (uint256 value) {
        value = uint256(_wordArg(at));
        if (value >> bits != 0) revert InvalidCalldata(at);
    }

    /// @dev The start of the dynamic value whose offset word is at `at`; reverts unless `headWords` of it fit.
    function _tailArg(uint256 at, uint256 headWords) private pure returns (uint256 pointer) {
        uint256 offset = uint256(_wordArg(at));
        // Offsets are relative to the arguments (after the selector); 2^32 bounds them far above any calldata.
        if (offset >> 32 != 0) revert InvalidCalldata(at);
        pointer = 0x04 + offset;
        if (pointer + headWords * 0x20 > msg.data.length) revert InvalidCalldata(at);
    }

    /// @dev Static tuples read past the calldata read zeros, which no signature check passes.
    function _closingStateArg(uint256 at) private pure returns (ClosingState calldata recorded) {
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            recorded := at
        }
    }

    function _ticketArg(uint256 at) private pure returns (Ticket calldata ticket) {
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            ticket := at
        }
    }

    function _signatureArg(uint256 at) private pure returns (Signature calldata sig) {
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            sig := at
        }
    }

    /// @dev Solidity checks a calldata struct's dynamic member (`sig`) against the calldata when it is read.
    function _walletTicketArg(uint256 at) private pure returns (WalletTicket calldata ticket) {
        uint256 pointer = _tailArg(at, 4);
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            ticket := pointer
        }
    }

    function _walletGrantArg(uint256 at) private pure returns (WalletSessionKeyGrant calldata grant) {
        uint256 pointer = _tailArg(at, 6);
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            grant := pointer
        }
    }

    function _bytesArg(uint256 at) private pure returns (bytes calldata data) {
        uint256 pointer = _tailArg(at, 1);
        uint256 length = uint256(_wordArg(pointer));
        if (length >> 32 != 0) revert InvalidCalldata(at);
        data = msg.data[pointer + 0x20:pointer + 0x20 + length]; // the slice reverts past the calldata
    }

    /*//////////////////////////////////////////////////////////////
                              OPEN AND FUND
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IGasEscrow
    function open(ChannelTerms calldata terms, uint256 amount) external payable returns (bytes32 sessionId) {
        _validateTerms(terms);
        uint64 openedAt = uint64(block.number);
        sessionId = _sessionId(terms, openedAt);
        // The funder is part of the id, so binding the opener to it means a copy of these terms sent by
        // anyone else (say, front-running in the same block) reverts instead of taking the id first.
        if (msg.sender != terms.funder) revert NotTheFunder(sessionId, msg.sender, terms.funder);
        if (_channels[sessionId] != 0) revert SessionExists(sessionId);
        _requireDisputable(terms.asset);

        uint256 received = terms.asset == address(0) ? _receiveEth(amount) : _receiveToken(terms.asset, amount);
        if (received == 0) revert ZeroDeposit();
        if (received > _DEPOSIT_MASK) revert DepositOverflow(sessionId, received);

        // The fee in force now is the channel's for life: governance cannot change a running channel's price.
        _channels[sessionId] = received | (uint256(_feeBps()) << _FEE_SHIFT);
        _liabilities[terms.asset] += received;
        emit ChannelOpened(sessionId, terms.payer, terms.provider, terms.asset, openedAt, received);
    }

    /// @inheritdoc IGasEscrow
    /// @dev The guard looks only at what this call's own transfer credited, never at the channel's current
    /// deposit: other parties' deposits (a 1-wei front-run) cannot make a top-up revert.
    function deposit(ChannelTerms calldata terms, uint64 openedAt, uint256 amount, uint256 minReceived)
        external
        payable
    {
        bytes32 sessionId = _sessionId(terms, openedAt);
        uint256 word = _requireOpen(sessionId);
        uint256 held = word & _DEPOSIT_MASK;
        // Terms may have been withdrawn since the channel opened: no new money goes where no case can follow.
        _requireDisputable(terms.asset);

        uint256 received = terms.asset == address(0) ? _receiveEth(amount) : _receiveToken(terms.asset, amount);
        if (received == 0) revert ZeroDeposit();
        if (received < minReceived) revert DepositBelowMinimum(sessionId, received, minReceived);
        uint256 total = held + received;
        if (total > _DEPOSIT_MASK) revert DepositOverflow(sessionId, total);

        _channels[sessionId] = (word ^ held) | total;
        _liabilities[terms.asset] += received;
        emit Deposited(sessionId, msg.sender, received, total);
    }

    /*//////////////////////////////////////////////////////////////
                                 CLOSE
    //////////////////////////////////////////////////////////////*/

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
        uint256 word = _requireOpen(sessionId);
        _requireSummarySigners(sessionId, terms, finalSeq, finalAmount, finalReceiptRoot, payerSig, providerSig);
        _settleCooperative(sessionId, terms, word, finalSeq, finalAmount, finalReceiptRoot);
    }

    /// @dev `IGasEscrowWallets.closeCooperativeByWallet`, served by the fallback.
    function _closeCooperativeByWallet(
        ChannelTerms calldata terms,
        uint64 openedAt,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot,
        bytes calldata payerSig,
        Signature calldata providerSig
    ) private {
        bytes32 sessionId = _sessionId(terms, openedAt);
        uint256 word = _requireOpen(sessionId);
        bytes32 digest = _cooperativeDigest(sessionId, terms, finalSeq, finalAmount, finalReceiptRoot);
        _requireWalletSigner(digest, payerSig, terms.payer);
        _requireSigner(digest, providerSig, terms.provider);
        _settleCooperative(sessionId, terms, word, finalSeq, finalAmount, finalReceiptRoot);
    }

    /// @dev The effects and payouts of a cooperative close whose summary both parties signed.
    function _settleCooperative(
        bytes32 sessionId,
        ChannelTerms calldata terms,
        uint256 word,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot
    ) private {
        uint256 held = word & _DEPOSIT_MASK;
        if (finalAmount > held) revert AmountExceedsDeposit(sessionId, finalAmount, held);

        (uint256 toProvider, uint256 fee, uint256 toFunder) = computeSettlement(held, finalAmount, word >> _FEE_SHIFT);
        // Kept, not deleted (issue 12): the settled summary stays disputable and the id can never reopen.
        // block.timestamp fits the 40 bits below bit 250 until year 36812.
        _channels[sessionId] = (_TAG_SETTLED << _TAG_SHIFT) | (block.timestamp << _FINALIZES_AT_SHIFT)
            | _settledFingerprint(finalSeq, finalAmount, finalReceiptRoot);
        emit ChannelSettled(
            sessionId, CloseMode.Cooperative, finalSeq, finalReceiptRoot, toProvider, toFunder, fee
        );
        _holdSettledBond(terms);
        _settle(terms, toProvider, fee, toFunder);
    }

    /// @inheritdoc IGasEscrow
    function closeUnilateral(ChannelTerms calldata terms, uint64 openedAt, Ticket calldata ticket) external {
        bytes32 sessionId = _sessionId(terms, openedAt);
        uint256 word = _requireOpen(sessionId);
        _requireParty(sessionId, terms);
        if (ticket.seq == 0) {
            if (ticket.cumulativeAmount != 0 || ticket.receiptRoot != 0) {
                revert EmptyTicketNotZero(ticket.cumulativeAmount, ticket.receiptRoot);
            }
        } else {
            _requireTicketSigner(sessionId, terms, ticket);
        }
        _startClosing(sessionId, word, terms, ticket);
    }

    /// @inheritdoc IGasEscrow
    function closeUnilateralWithKey(
        ChannelTerms calldata terms,
        uint64 openedAt,
        Ticket calldata ticket,
        SessionKeyGrant calldata grant
    ) external {
        bytes32 sessionId = _sessionId(terms, openedAt);
        uint256 word = _requireOpen(sessionId);
        _requireParty(sessionId, terms);
        if (ticket.seq == 0) revert EmptyKeyTicket(sessionId);
        _requireKeyTicket(sessionId, terms, ticket, grant);
        _startClosing(sessionId, word, terms, ticket);
    }

    /// @dev `IGasEscrowWallets.closeUnilateralByWallet`, served by the fallback.
    function _closeUnilateralByWallet(ChannelTerms calldata terms, uint64 openedAt, WalletTicket calldata ticket)
        private
    {
        bytes32 sessionId = _sessionId(terms, openedAt);
        uint256 word = _requireOpen(sessionId);
        _requireParty(sessionId, terms);
        if (ticket.seq == 0) revert EmptyWalletTicket(sessionId);
        _requireWalletTicket(sessionId, terms, ticket);
        _startClosingWith(sessionId, word, terms, ticket.seq, ticket.cumulativeAmount, ticket.receiptRoot);
    }

    /// @dev `IGasEscrowWallets.closeUnilateralWithWalletKey`, served by the fallback.
    function _closeUnilateralWithWalletKey(
        ChannelTerms calldata terms,
        uint64 openedAt,
        Ticket calldata ticket,
        WalletSessionKeyGrant calldata grant
    ) private {
        bytes32 sessionId = _sessionId(terms, openedAt);
        uint256 word = _requireOpen(sessionId);
        _requireParty(sessionId, terms);
        if (ticket.seq == 0) revert EmptyKeyTicket(sessionId);
        _requireWalletKeyTicket(sessionId, terms, ticket, grant);
        _startClosing(sessionId, word, terms, ticket);
    }

    /// @dev Records the close: the ticket's state, a window of the channel's challenge duration from now.
    function _startClosing(bytes32 sessionId, uint256 word, ChannelTerms calldata terms, Ticket calldata ticket)
        private
    {
        _startClosingWith(sessionId, word, terms, ticket.seq, ticket.cumulativeAmount, ticket.receiptRoot);
    }

    function _startClosingWith(
        bytes32 sessionId,
        uint256 word,
        ChannelTerms calldata terms,
        uint64 seq,
        uint128 amount,
        bytes32 receiptRoot
    ) private {
        ClosingState memory state = ClosingState({
            deposit: uint128(word), // the low 128 bits
            seq: seq,
            amount: amount,
            receiptRoot: receiptRoot,
            feeBps: uint16(word >> _FEE_SHIFT)
        });
        // Cannot overflow: timestamps and durations are far below 2^40 (MAX_CHALLENGE_DURATION is 30 days).
        uint40 finalizesAt;
        unchecked {
            finalizesAt = uint40(block.timestamp + terms.challengeDuration);
        }
        _channels[sessionId] = _closingWord(0, finalizesAt, state);
        emit ChannelClosing(
            sessionId,
            msg.sender,
            state.seq,
            state.amount,
            state.receiptRoot,
            state.deposit,
            state.feeBps,
            finalizesAt
        );
    }

    /// @inheritdoc IGasEscrow
    function challenge(
        ChannelTerms calldata terms,
        uint64 openedAt,
        ClosingState calldata recorded,
        Ticket calldata ticket
    ) external {
        bytes32 sessionId = _sessionId(terms, openedAt);
        (uint256 cases, uint40 finalizesAt) = _requireChallengeable(sessionId, recorded, ticket);
        _requireTicketSigner(sessionId, terms, ticket);
        _recordChallenge(sessionId, cases, finalizesAt, recorded, ticket);
    }

    /// @inheritdoc IGasEscrow
    function challengeWithKey(
        ChannelTerms calldata terms,
        uint64 openedAt,
        ClosingState calldata recorded,
        Ticket calldata ticket,
        SessionKeyGrant calldata grant
    ) external {
        bytes32 sessionId = _sessionId(terms, openedAt);
        (uint256 cases, uint40 finalizesAt) = _requireChallengeable(sessionId, recorded, ticket);
        _requireKeyTicket(sessionId, terms, ticket, grant);
        _recordChallenge(sessionId, cases, finalizesAt, recorded, ticket);
    }

    /// @dev `IGasEscrowWallets.challengeByWallet`, served by the fallback.
    function _challengeByWallet(
        ChannelTerms calldata terms,
        uint64 openedAt,
        ClosingState calldata recorded,
        WalletTicket calldata ticket
    ) private {
        bytes32 sessionId = _sessionId(terms, openedAt);
        (uint256 cases, uint40 finalizesAt) =
            _requireChallengeableBy(sessionId, recorded, ticket.seq, ticket.cumulativeAmount);
        _requireWalletTicket(sessionId, terms, ticket);
        _recordChallengeWith(
            sessionId, cases, finalizesAt, recorded, ticket.seq, ticket.cumulativeAmount, ticket.receiptRoot
        );
    }

    /// @dev `IGasEscrowWallets.challengeWithWalletKey`, served by the fallback.
    function _challengeWithWalletKey(
        ChannelTerms calldata terms,
        uint64 openedAt,
        ClosingState calldata recorded,
        Ticket calldata ticket,
        WalletSessionKeyGrant calldata grant
    ) private {
        bytes32 sessionId = _sessionId(terms, openedAt);
        (uint256 cases, uint40 finalizesAt) = _requireChallengeable(sessionId, recorded, ticket);
        _requireWalletKeyTicket(sessionId, terms, ticket, grant);
        _recordChallenge(sessionId, cases, finalizesAt, recorded, ticket);
    }

    /// @dev Reverts unless the channel is closing with `recorded`, its window is open, and `ticket` owes the
    /// provider strictly more; returns the channel's open cases and window end.
    function _requireChallengeable(bytes32 sessionId, ClosingState calldata recorded, Ticket calldata ticket)
        private
        view
        returns (uint256 cases, uint40 finalizesAt)
    {
        return _requireChallengeableBy(sessionId, recorded, ticket.seq, ticket.cumulativeAmount);
    }

    function _requireChallengeableBy(bytes32 sessionId, ClosingState calldata recorded, uint64 seq, uint128 amount)
        private
        view
        returns (uint256 cases, uint40 finalizesAt)
    {
        (cases, finalizesAt) = _requireClosingState(sessionId, recorded);
        if (block.timestamp >= finalizesAt) revert ChallengeWindowClosed(sessionId, finalizesAt);
        // The provider is owed the most the payer ever promised: a higher cumulative amount wins whatever its
        // seq (the payer signs seq, so ranking by seq alone would let a payer close with a fresh ticket of
        // seq 2^64 - 1 and amount 0 that no genuine ticket could beat).
        if (amount < recorded.amount) revert TicketAmountDecreased(sessionId, amount, recorded.amount);
        // The recorded root moves only when the amount rises (issue 12): a same-amount ticket, whatever its
        // seq, would let the payer swap the root the provider's receipts are proven against for one of its
        // own choosing, for free. The provider never accepts a ticket that adds nothing, so no genuine
        // same-amount ticket is lost.
        if (seq == 0 || amount == recorded.amount) revert TicketNotNewer(sessionId, seq, recorded.seq);
    }

    /// @dev Replaces the recorded ticket with `ticket` (already checked), keeping the window's end.
    function _recordChallenge(
        bytes32 sessionId,
        uint256 cases,
        uint40 finalizesAt,
        ClosingState calldata recorded,
        Ticket calldata ticket
    ) private {
        _recordChallengeWith(
            sessionId, cases, finalizesAt, recorded, ticket.seq, ticket.cumulativeAmount, ticket.receiptRoot
        );
    }

    function _recordChallengeWith(
        bytes32 sessionId,
        uint256 cases,
        uint40 finalizesAt,
        ClosingState calldata recorded,
        uint64 seq,
        uint128 amount,
        bytes32 receiptRoot
    ) private {
        ClosingState memory state = ClosingState({
            deposit: recorded.deposit,
            seq: seq,
            amount: amount,
            receiptRoot: receiptRoot,
            feeBps: recorded.feeBps
        });
        _channels[sessionId] = _closingWord(cases, finalizesAt, state);
        emit ChannelChallenged(sessionId, msg.sender, state.seq, state.amount, state.receiptRoot, finalizesAt);
    }

    /// @inheritdoc IGasEscrow
    function finalize(ChannelTerms calldata terms, uint64 openedAt, ClosingState calldata recorded) external {
        bytes32 sessionId = _sessionId(terms, openedAt);
        (uint256 cases, uint40 finalizesAt) = _requireClosingState(sessionId, recorded);
        if (block.timestamp < finalizesAt) revert ChallengeWindowOpen(sessionId, finalizesAt);
        if (cases != 0 && block.timestamp < uint256(finalizesAt) + MAX_FREEZE_DURATION) {
            revert FrozenByDispute(sessionId, uint8(cases));
        }

        (uint256 toProvider, uint256 fee, uint256 toFunder) =
            computeSettlement(recorded.deposit, recorded.amount, recorded.feeBps);
        delete _channels[sessionId];
        emit ChannelSettled(
            sessionId, CloseMode.Unilateral, recorded.seq, recorded.receiptRoot, toProvider, toFunder, fee
        );
        _settle(terms, toProvider, fee, toFunder);
    }

    /// @inheritdoc IGasEscrow
    function anchorReceiptCommit(
        ChannelTerms calldata terms,
        uint64 openedAt,
        uint64 leafCount,
        bytes32 root,
        Signature calldata providerSig
    ) external {
        bytes32 sessionId = _sessionId(terms, openedAt);
        if (msg.sender != terms.payer && msg.sender != terms.funder) revert NotPayerOrFunder(sessionId, msg.sender);
        uint256 word = _channels[sessionId];
        uint256 tag = word >> _TAG_SHIFT;
        bool anchorable = tag == _TAG_SETTLED
            || (tag == _TAG_CLOSING && block.timestamp < ((word >> _FINALIZES_AT_SHIFT) & _FINALIZES_AT_MASK));
        if (!anchorable) revert CommitNotAnchorable(sessionId, this.phaseOf(sessionId));
        if (leafCount == 0) revert EmptyReceiptCommit(sessionId);
        _requireSigner(
            _hashTypedDataV4(keccak256(abi.encode(RECEIPT_COMMIT_TYPEHASH, sessionId, leafCount, root))),
            providerSig,
            terms.provider
        );
        if (_anchoredCommits[sessionId][root] != 0) return;
        _anchoredCommits[sessionId][root] = leafCount;
        emit ReceiptCommitAnchored(sessionId, msg.sender, leafCount, root);
    }

    /*//////////////////////////////////////////////////////////////
                              DISPUTE HOOKS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IGasEscrow
    function freeze(bytes32 sessionId, ClosingState calldata recorded) external onlyRole(DISPUTE_ROLE) {
        (uint256 cases, uint40 finalizesAt) = _requireClosingState(sessionId, recorded);
        // A case must be raised while the close can still be contested; afterwards the channel settles.
        if (block.timestamp >= finalizesAt) revert ChallengeWindowClosed(sessionId, finalizesAt);
        if (cases == _CASES_MASK) revert TooManyOpenCases(sessionId);
        unchecked {
            ++cases; // < 15 checked above
        }
        _channels[sessionId] = _closingWord(cases, finalizesAt, recorded);
        emit ChannelFrozen(sessionId, uint8(cases));
    }

    /// @inheritdoc IGasEscrow
    function release(bytes32 sessionId, ClosingState calldata recorded, uint128 refund)
        external
        onlyRole(DISPUTE_ROLE)
        returns (bool applied)
    {
        // Settled meanwhile (only possible after MAX_FREEZE_DURATION): nothing left to adjust.
        if (_channels[sessionId] == 0) return false;
        (uint256 cases, uint40 finalizesAt) = _requireClosingState(sessionId, recorded);
        if (cases == 0) revert ChannelNotFrozen(sessionId);
        unchecked {
            --cases; // > 0 checked above
        }
        ClosingState memory state = recorded;
        uint128 taken;
        if (refund != 0) {
            // Refund from what the provider would actually be paid, so that every unit refunded reaches
            // the funder: first cap the recorded amount at the deposit, then take the refund off it.
            uint128 earned = state.amount < state.deposit ? state.amount : state.deposit;
            taken = refund < earned ? refund : earned;
            unchecked {
                state.amount = earned - taken; // taken <= earned
            }
            // A resolution is final: end the window now so no later ticket can raise the amount again.
            if (finalizesAt > block.timestamp) finalizesAt = uint40(block.timestamp);
        }
        _channels[sessionId] = _closingWord(cases, finalizesAt, state);
        emit ChannelReleased(sessionId, uint8(cases), taken, state.amount);
        return true;
    }

    /*//////////////////////////////////////////////////////////////
                              SESSION KEYS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IGasEscrow
    /// @dev Allowed in any phase: a revocation during a close still ends the key's grace.
    function revokeSessionKey(ChannelTerms calldata terms, uint64 openedAt, address key) external {
        bytes32 sessionId = _sessionId(terms, openedAt);
        if (msg.sender != terms.payer) revert NotThePayer(sessionId, msg.sender);
        // Idempotent: a second revocation must not move the first one's time, which would extend the grace.
        if (_keyRevokedAt[sessionId][key] != 0) return;
        uint40 revokedAt = uint40(block.timestamp); // fits until year 36812
        _keyRevokedAt[sessionId][key] = revokedAt;
        emit SessionKeyRevoked(sessionId, key, revokedAt);
    }

    /// @inheritdoc IGasEscrow
    function revokeAllSessionKeys() external {
        uint64 epoch = _keyEpochs[msg.sender];
        uint40 revokedAt = uint40(block.timestamp); // fits until year 36812
        _epochEndedAt[msg.sender][epoch] = revokedAt;
        // Cannot overflow: every epoch costs a transaction, and 2^64 of them will never be mined.
        unchecked {
            ++epoch;
        }
        _keyEpochs[msg.sender] = epoch;
        emit SessionKeysRevoked(msg.sender, epoch, revokedAt);
    }

    /// @dev `IGasEscrowWallets.registerWalletSessionKey`, served by the fallback.
    function _registerWalletSessionKey(
        ChannelTerms calldata terms,
        uint64 openedAt,
        WalletSessionKeyGrant calldata grant
    ) private {
        bytes32 sessionId = _sessionId(terms, openedAt);
        bytes32 digest = _walletGrantDigest(sessionId, grant);
        if (_walletGrants[sessionId][digest]) return;
        _requireWalletSigner(digest, grant.sig, terms.payer);
        _walletGrants[sessionId][digest] = true;
        emit WalletSessionKeyRegistered(sessionId, grant.key, digest);
    }

    /*//////////////////////////////////////////////////////////////
                              FEES
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IGasEscrow
    function withdrawFees(address asset) external {
        uint256 amount = _accruedFees[asset];
        if (amount == 0) return;
        address treasury = address(uint160(_feeConfig));
        _accruedFees[asset] = 0;
        emit FeesWithdrawn(asset, treasury, amount);
        _pay(asset, treasury, amount);
    }

    /// @inheritdoc IGasEscrow
    function sweep(address asset) external nonReentrant returns (uint256 amount) {
        uint256 balance = asset == address(0) ? address(this).balance : SafeTransferLib.balanceOf(asset, address(this));
        uint256 owed = _liabilities[asset];
        if (balance <= owed) return 0;
        // Cannot underflow: balance > owed.
        unchecked {
            amount = balance - owed;
        }
        address treasury = address(uint160(_feeConfig));
        emit SurplusSwept(asset, treasury, amount);
        if (asset == address(0)) SafeTransferLib.forceSafeTransferETH(treasury, amount);
        else SafeTransferLib.safeTransfer(asset, treasury, amount);
    }

    /// @inheritdoc IGasEscrow
    /// @dev Guarded like every token-moving path. ETH is never deferred (it is force-sent), but a claim of
    /// `address(0)` still works, so the function treats every asset alike.
    function claim(address asset) external nonReentrant returns (uint256 amount) {
        amount = _claimable[asset][msg.sender];
        if (amount == 0) return 0;
        _claimable[asset][msg.sender] = 0;
        _liabilities[asset] -= amount;
        emit Claimed(asset, msg.sender, amount);
        if (asset == address(0)) {
            SafeTransferLib.forceSafeTransferETH(msg.sender, amount);
        } else {
            SafeTransferLib.safeTransfer(asset, msg.sender, amount);
        }
    }

    /// @inheritdoc IGasEscrow
    function setRoutingFee(uint16 feeBps, address treasury) external onlyRole(GOVERNANCE_ROLE) {
        _setRoutingFee(feeBps, treasury);
    }

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @notice Splits a settled channel's deposit: the provider is owed `owed` (capped at what the channel
    /// holds), the treasury takes `feeBps` of that, and the funder gets the rest back.
    /// @dev Pure so that tests and clients can check the arithmetic directly.
    function computeSettlement(uint256 held, uint256 owed, uint256 feeBps)
        public
        pure
        returns (uint256 toProvider, uint256 fee, uint256 toFunder)
    {
        uint256 earned = owed < held ? owed : held;
        // Cannot overflow: earned <= held < 2^128 and feeBps <= 2^16, so the product is below 2^144;
        // fee <= earned because feeBps <= 10_000 is enforced where it is set.
        unchecked {
            fee = (earned * feeBps) / 10_000;
            toProvider = earned - fee;
            toFunder = held - earned;
        }
    }

    /// @inheritdoc IGasEscrow
    function settledState(uint64 finalSeq, uint128 finalAmount, bytes32 finalReceiptRoot)
        public
        pure
        returns (ClosingState memory)
    {
        return ClosingState({
            deposit: finalAmount, seq: finalSeq, amount: finalAmount, receiptRoot: finalReceiptRoot, feeBps: 0
        });
    }

    /// @inheritdoc IGasEscrow
    function settledInfo(bytes32 sessionId, ClosingState calldata settled)
        external
        view
        returns (bool matches, uint40 settledAt)
    {
        uint256 word = _channels[sessionId];
        if (word >> _TAG_SHIFT != _TAG_SETTLED) return (false, 0);
        matches = word & _FINGERPRINT_MASK == _fingerprint(settled);
        settledAt = uint40(word >> _FINALIZES_AT_SHIFT);
    }

    /// @notice Routing fee (bps) and treasury in force now.
    function routingFee() external view returns (uint16 feeBps, address treasury) {
        uint256 config = _feeConfig;
        return (uint16(config >> 160), address(uint160(config)));
    }

    /// @inheritdoc IGasEscrow
    function claimableOf(address asset, address account) external view returns (uint256) {
        return _claimable[asset][account];
    }

    /// @inheritdoc IGasEscrow
    function liabilitiesOf(address asset) external view returns (uint256) {
        return _liabilities[asset];
    }

    /// @notice Fees accrued in `asset` and not yet withdrawn.
    function accruedFees(address asset) external view returns (uint256) {
        return _accruedFees[asset];
    }

    /// @notice The payer's current session-key revocation epoch.
    function keyEpochOf(address payer) external view returns (uint64) {
        return _keyEpochs[payer];
    }

    /// @inheritdoc IGasEscrow
    function sessionKeyRevokedAt(bytes32 sessionId, address key) external view returns (uint40) {
        return _keyRevokedAt[sessionId][key];
    }

    /// @inheritdoc IGasEscrow
    function epochRevokedAt(address payer, uint64 epoch) external view returns (uint40) {
        return _epochEndedAt[payer][epoch];
    }

    /// @inheritdoc IGasEscrow
    function hashSessionKey(
        bytes32 sessionId,
        address key,
        uint64 expiry,
        uint128 spendCap,
        bytes32 capabilities,
        uint64 epoch
    ) external view returns (bytes32) {
        return _hashTypedDataV4(
            keccak256(abi.encode(SESSION_KEY_TYPEHASH, sessionId, key, expiry, spendCap, capabilities, epoch))
        );
    }

    /// @inheritdoc IGasEscrow
    function sessionIdOf(ChannelTerms calldata terms, uint64 openedAt) external view returns (bytes32) {
        return _sessionId(terms, openedAt);
    }

    /// @inheritdoc IGasEscrow
    function depositOf(bytes32 sessionId) external view returns (uint256) {
        uint256 word = _channels[sessionId];
        return word >> _TAG_SHIFT == 0 ? word & _DEPOSIT_MASK : 0;
    }

    /// @inheritdoc IGasEscrow
    function phaseOf(bytes32 sessionId) external view returns (Phase) {
        uint256 word = _channels[sessionId];
        if (word == 0) return Phase.None;
        uint256 tag = word >> _TAG_SHIFT;
        if (tag == 0) return Phase.Open;
        if (tag == _TAG_SETTLED) return Phase.Settled;
        uint256 finalizesAt = (word >> _FINALIZES_AT_SHIFT) & _FINALIZES_AT_MASK;
        if (block.timestamp < finalizesAt) return Phase.Closing;
        uint256 cases = (word >> _CASES_SHIFT) & _CASES_MASK;
        if (cases != 0 && block.timestamp < finalizesAt + MAX_FREEZE_DURATION) return Phase.Frozen;
        return Phase.Finalizable;
    }

    /// @inheritdoc IGasEscrow
    function closingInfo(bytes32 sessionId, ClosingState calldata recorded)
        external
        view
        returns (bool matches, uint40 finalizesAt, uint8 openCases)
    {
        uint256 word = _channels[sessionId];
        if (word >> _TAG_SHIFT != _TAG_CLOSING) return (false, 0, 0);
        matches = word & _FINGERPRINT_MASK == _fingerprint(recorded);
        finalizesAt = uint40(word >> _FINALIZES_AT_SHIFT);
        openCases = uint8((word >> _CASES_SHIFT) & _CASES_MASK);
    }

    /// @inheritdoc IGasEscrow
    function anchoredCommitOf(bytes32 sessionId, bytes32 root) external view returns (uint64) {
        return _anchoredCommits[sessionId][root];
    }

    /// @inheritdoc IGasEscrow
    function hashReceiptCommit(bytes32 sessionId, uint64 leafCount, bytes32 root) external view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(RECEIPT_COMMIT_TYPEHASH, sessionId, leafCount, root)));
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
        return _hashTypedDataV4(_ticketStructHash(sessionId, provider, termsHash, seq, cumulativeAmount, receiptRoot));
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

    /// @dev `_hashTypedDataV4(keccak256(abi.encode(SESSION_TYPEHASH, terms, openedAt)))`, with the eight static
    /// words of the terms copied straight from calldata. Like the ABI decoder, it reverts on a word with dirty
    /// high bits, so every encoding of the same terms names the same session.
    function _sessionId(ChannelTerms calldata terms, uint64 openedAt) private view returns (bytes32) {
        bytes32 typehash = SESSION_TYPEHASH;
        bytes32 structHash;
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            let m := mload(0x40)
            mstore(m, typehash)
            calldatacopy(add(m, 0x20), terms, 0x100)
            mstore(add(m, 0x120), openedAt)
            // payer, provider, funder, asset are addresses; challengeDuration and nonce are uint64.
            let dirty := or(shr(160, mload(add(m, 0x20))), shr(160, mload(add(m, 0x40))))
            dirty := or(dirty, or(shr(160, mload(add(m, 0x60))), shr(160, mload(add(m, 0x80)))))
            dirty := or(dirty, or(shr(64, mload(add(m, 0xe0))), shr(64, mload(add(m, 0x100)))))
            if dirty { revert(0, 0) }
            structHash := keccak256(m, 0x140)
        }
        return _hashTypedDataV4(structHash);
    }

    /// @dev The terms' four addresses, read once. Only after `_sessionId(terms, …)`, which reverted on any dirty
    /// high bits, so the words are clean addresses.
    function _parties(ChannelTerms calldata terms)
        private
        pure
        returns (address payer, address provider, address funder, address asset)
    {
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            payer := calldataload(terms)
            provider := calldataload(add(terms, 0x20))
            funder := calldataload(add(terms, 0x40))
            asset := calldataload(add(terms, 0x60))
        }
    }

    /// @dev Returns the word of an open channel; reverts if the channel is not in its open phase.
    function _requireOpen(bytes32 sessionId) private view returns (uint256 word) {
        word = _channels[sessionId];
        if (word == 0 || word >> _TAG_SHIFT != 0) revert ChannelNotOpen(sessionId);
    }

    /// @dev Reverts unless the channel is closing with exactly `recorded`; returns its cases and window end.
    function _requireClosingState(bytes32 sessionId, ClosingState memory recorded)
        private
        view
        returns (uint256 cases, uint40 finalizesAt)
    {
        uint256 word = _channels[sessionId];
        if (word >> _TAG_SHIFT != _TAG_CLOSING) revert ChannelNotClosing(sessionId);
        if (word & _FINGERPRINT_MASK != _fingerprint(recorded)) revert ClosingStateMismatch(sessionId);
        cases = (word >> _CASES_SHIFT) & _CASES_MASK;
        finalizesAt = uint40(word >> _FINALIZES_AT_SHIFT);
    }

    function _closingWord(uint256 cases, uint40 finalizesAt, ClosingState memory state)
        private
        pure
        returns (uint256)
    {
        return (_TAG_CLOSING << _TAG_SHIFT) | (cases << _CASES_SHIFT)
            | (uint256(finalizesAt) << _FINALIZES_AT_SHIFT) | _fingerprint(state);
    }

    function _fingerprint(ClosingState memory state) private pure returns (uint256) {
        return uint256(keccak256(abi.encode(state))) & _FINGERPRINT_MASK;
    }

    /// @dev `_fingerprint(settledState(finalSeq, finalAmount, finalReceiptRoot))`, hashed in scratch memory
    /// without building the struct (closeCooperative's gas target, decision 0005).
    function _settledFingerprint(uint64 finalSeq, uint128 finalAmount, bytes32 finalReceiptRoot)
        private
        pure
        returns (uint256 fp)
    {
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            let m := mload(0x40)
            mstore(m, finalAmount) // deposit
            mstore(add(m, 0x20), finalSeq) // seq
            mstore(add(m, 0x40), finalAmount) // amount
            mstore(add(m, 0x60), finalReceiptRoot) // receiptRoot
            mstore(add(m, 0x80), 0) // feeBps
            fp := and(keccak256(m, 0xa0), _FINGERPRINT_MASK)
        }
    }

    function _ticketStructHash(
        bytes32 sessionId,
        address provider,
        bytes32 termsHash,
        uint64 seq,
        uint128 cumulativeAmount,
        bytes32 receiptRoot
    ) private pure returns (bytes32) {
        return keccak256(
            abi.encode(PAYMENT_TICKET_TYPEHASH, sessionId, provider, termsHash, seq, cumulativeAmount, receiptRoot)
        );
    }

    /// @dev Reverts unless both the payer and the provider signed the cooperative summary.
    function _requireSummarySigners(
        bytes32 sessionId,
        ChannelTerms calldata terms,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot,
        Signature calldata payerSig,
        Signature calldata providerSig
    ) private view {
        (address payer, address provider,,) = _parties(terms);
        bytes32 digest = _hashTypedDataV4(
            _summaryStructHash(
                sessionId,
                provider,
                payer,
                terms.termsHash,
                finalSeq,
                finalAmount,
                finalReceiptRoot,
                CloseMode.Cooperative
            )
        );
        _requireSigner(digest, payerSig, payer);
        _requireSigner(digest, providerSig, provider);
    }

    /// @dev The EIP-712 digest of the channel's cooperative SettlementSummary.
    function _cooperativeDigest(
        bytes32 sessionId,
        ChannelTerms calldata terms,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot
    ) private view returns (bytes32) {
        (address payer, address provider,,) = _parties(terms);
        return _hashTypedDataV4(
            _summaryStructHash(
                sessionId,
                provider,
                payer,
                terms.termsHash,
                finalSeq,
                finalAmount,
                finalReceiptRoot,
                CloseMode.Cooperative
            )
        );
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
    ) private pure returns (bytes32 structHash) {
        // keccak256(abi.encode(SETTLEMENT_SUMMARY_TYPEHASH, ...)), built in free memory without an ABI encoder.
        bytes32 typehash = SETTLEMENT_SUMMARY_TYPEHASH;
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            let m := mload(0x40)
            mstore(m, typehash)
            mstore(add(m, 0x20), sessionId)
            mstore(add(m, 0x40), provider)
            mstore(add(m, 0x60), payer)
            mstore(add(m, 0x80), termsHash)
            mstore(add(m, 0xa0), finalSeq)
            mstore(add(m, 0xc0), finalAmount)
            mstore(add(m, 0xe0), finalReceiptRoot)
            mstore(add(m, 0x100), mode)
            structHash := keccak256(m, 0x120)
        }
    }

    function _requireParty(bytes32 sessionId, ChannelTerms calldata terms) private view {
        if (msg.sender != terms.payer && msg.sender != terms.provider && msg.sender != terms.funder) {
            revert NotAParty(sessionId, msg.sender);
        }
    }

    function _ticketDigest(bytes32 sessionId, ChannelTerms calldata terms, Ticket calldata ticket)
        private
        view
        returns (bytes32)
    {
        return _hashTypedDataV4(
            _ticketStructHash(
                sessionId, terms.provider, terms.termsHash, ticket.seq, ticket.cumulativeAmount, ticket.receiptRoot
            )
        );
    }

    /// @dev Reverts unless the ticket is signed by the payer itself.
    function _requireTicketSigner(bytes32 sessionId, ChannelTerms calldata terms, Ticket calldata ticket)
        private
        view
    {
        address signer = _recover(_ticketDigest(sessionId, terms, ticket), ticket.sig);
        if (signer != terms.payer) revert UnauthorizedTicketSigner(sessionId, signer);
    }

    /// @dev Reverts unless `grant` is the payer's delegation to the ticket's signer for this session, the
    /// ticket is within its cap, and no revocation's grace has run out (decision 0025). The grace after a
    /// revocation is the channel's challenge duration: a provider that stops accepting a key's tickets when it
    /// sees the revocation's block has that long to put its newest one on-chain, so no ticket it accepted
    /// before it could know is lost. The grant's expiry is not judged here (decision 0025, amendment for issue
    /// 28): it bounds when the key may sign, which the provider checks by its clock before any work, and the
    /// chain cannot tell when a ticket was signed — refusing an expired key's tickets at submission would let
    /// a payer who simply waits close at seq 0 and take back work the key paid for. A revocation, which is a
    /// public event a watcher reacts to, ends the key on-chain. The capabilities are not checkable here.
    function _requireKeyTicket(
        bytes32 sessionId,
        ChannelTerms calldata terms,
        Ticket calldata ticket,
        SessionKeyGrant calldata grant
    ) private view {
        address key = grant.key;
        _requireSigner(_ticketDigest(sessionId, terms, ticket), ticket.sig, key);
        bytes32 grantDigest = _hashTypedDataV4(
            keccak256(
                abi.encode(
                    SESSION_KEY_TYPEHASH,
                    sessionId,
                    key,
                    grant.expiry,
                    grant.spendCap,
                    grant.capabilities,
                    grant.epoch
                )
            )
        );
        address granter = _recover(grantDigest, grant.sig);
        if (granter != terms.payer) revert UnauthorizedSessionKey(sessionId, key, granter);
        _requireKeyLimits(sessionId, terms, key, ticket.cumulativeAmount, grant.spendCap, grant.epoch);
    }

    /// @dev `_requireKeyTicket` for a grant of a contract-wallet payer: the grant counts if it was registered or
    /// the wallet's ERC-1271 accepts it now (decision 0035); the key's signature and limits are checked alike.
    function _requireWalletKeyTicket(
        bytes32 sessionId,
        ChannelTerms calldata terms,
        Ticket calldata ticket,
        WalletSessionKeyGrant calldata grant
    ) private view {
        address key = grant.key;
        _requireSigner(_ticketDigest(sessionId, terms, ticket), ticket.sig, key);
        bytes32 grantDigest = _walletGrantDigest(sessionId, grant);
        if (!_walletGrants[sessionId][grantDigest]) _requireWalletSigner(grantDigest, grant.sig, terms.payer);
        _requireKeyLimits(sessionId, terms, key, ticket.cumulativeAmount, grant.spendCap, grant.epoch);
    }

    function _walletGrantDigest(bytes32 sessionId, WalletSessionKeyGrant calldata grant)
        private
        view
        returns (bytes32)
    {
        return _hashTypedDataV4(
            keccak256(
                abi.encode(
                    SESSION_KEY_TYPEHASH,
                    sessionId,
                    grant.key,
                    grant.expiry,
                    grant.spendCap,
                    grant.capabilities,
                    grant.epoch
                )
            )
        );
    }

    /// @dev The cap, revocation and epoch rules of a session key's ticket (decision 0025).
    function _requireKeyLimits(
        bytes32 sessionId,
        ChannelTerms calldata terms,
        address key,
        uint128 amount,
        uint128 spendCap,
        uint64 epoch
    ) private view {
        if (amount > spendCap) revert SessionKeySpendCapExceeded(key, amount, spendCap);
        uint256 grace = terms.challengeDuration;
        // uint256 sums below: a time near 2^40 plus the grace cannot wrap.
        uint40 revokedAt = _keyRevokedAt[sessionId][key];
        if (revokedAt != 0 && block.timestamp >= uint256(revokedAt) + grace) revert RevokedSessionKey(key, revokedAt);
        uint64 currentEpoch = _keyEpochs[terms.payer];
        if (epoch != currentEpoch) {
            if (epoch > currentEpoch) revert SessionKeyEpochAhead(key, epoch, currentEpoch);
            uint40 endedAt = _epochEndedAt[terms.payer][epoch];
            if (block.timestamp >= uint256(endedAt) + grace) revert RevokedSessionKey(key, endedAt);
        }
    }

    /// @dev Reverts unless the payer is a contract wallet and the ticket's wallet signature is its approval now.
    function _requireWalletTicket(bytes32 sessionId, ChannelTerms calldata terms, WalletTicket calldata ticket)
        private
        view
    {
        bytes32 digest = _hashTypedDataV4(
            _ticketStructHash(
                sessionId, terms.provider, terms.termsHash, ticket.seq, ticket.cumulativeAmount, ticket.receiptRoot
            )
        );
        _requireWalletSigner(digest, ticket.sig, terms.payer);
    }

    /// @dev Reverts unless `wallet`'s ERC-1271 `isValidSignature(digest, sig)` returns the magic value now. An
    /// address without code never passes (its plain-key path takes an ERC-2098 signature instead).
    function _requireWalletSigner(bytes32 digest, bytes calldata sig, address wallet) private view {
        if (!SignatureChecker.isValidERC1271SignatureNowCalldata(wallet, digest, sig)) {
            revert WalletSignatureRefused(wallet, digest);
        }
    }

    /// @dev Reverts unless `sig` is a valid low-s signature of `digest` by `expected`.
    function _requireSigner(bytes32 digest, Signature calldata sig, address expected) private view {
        address recovered = _recover(digest, sig);
        if (recovered != expected) revert SignerMismatch(expected, recovered);
    }

    /// @dev ECDSA recovery of an ERC-2098 signature with OpenZeppelin's rules (`ECDSA.tryRecover(digest, r, vs)`):
    /// a high s reverts `SignatureNotLowS`, an unrecoverable signature `InvalidSignature`. Written against the
    /// precompile directly to keep closeCooperative's two recoveries within its gas target (decision 0005).
    function _recover(bytes32 digest, Signature calldata sig) private view returns (address recovered) {
        bytes32 r = sig.r;
        bytes32 vs = sig.vs;
        bytes32 s = vs & bytes32(0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff);
        if (uint256(s) > 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0) revert SignatureNotLowS(s);
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            let m := mload(0x40)
            mstore(m, digest)
            mstore(add(m, 0x20), add(shr(255, vs), 27))
            mstore(add(m, 0x40), r)
            mstore(add(m, 0x60), s)
            // The precompile returns nothing for an invalid signature; the output word is cleared first.
            mstore(0x00, 0)
            pop(staticcall(gas(), 0x01, m, 0x80, 0x00, 0x20))
            recovered := mload(0x00)
        }
        if (recovered == address(0)) revert InvalidSignature();
    }

    function _feeBps() private view returns (uint16) {
        return uint16(_feeConfig >> 160);
    }

    function _setRoutingFee(uint16 feeBps, address treasury) private {
        if (feeBps > MAX_ROUTING_FEE_BPS) revert RoutingFeeTooHigh(feeBps, MAX_ROUTING_FEE_BPS);
        if (treasury == address(0)) revert ZeroTreasury();
        _feeConfig = uint256(uint160(treasury)) | (uint256(feeBps) << 160);
        emit RoutingFeeSet(feeBps, treasury);
    }

    function _receiveEth(uint256 amount) private returns (uint256) {
        if (msg.value != amount) revert EthValueMismatch(msg.value, amount);
        return amount;
    }

    /// @dev Pulls `amount` of `token` from the caller; reverts (`TransferAmountMismatch`) unless exactly
    /// `amount` arrived: a fee-on-transfer token is refused, not credited net (issue 28).
    /// The transfer happens before the channel's word is written; the guard keeps a hostile token from
    /// re-entering in between.
    function _receiveToken(address token, uint256 amount) private nonReentrant returns (uint256) {
        if (msg.value != 0) revert UnexpectedEth(msg.value);
        if (amount == 0) return 0;
        uint256 before = SafeTransferLib.balanceOf(token, address(this));
        SafeTransferLib.safeTransferFrom(token, msg.sender, address(this), amount);
        uint256 received = SafeTransferLib.balanceOf(token, address(this)) - before;
        _requireExact(token, amount, received);
        return received;
    }

    /// @dev The payer may dispute a cooperative summary's receipts for the settled-session window, refunded from
    /// the provider's bond: the registry keeps that bond until then, whatever unbonding was requested before.
    function _holdSettledBond(ChannelTerms calldata terms) private {
        (, address provider,,) = _parties(terms);
        // Cannot overflow: block.timestamp + 30 days is far below 2^64.
        unchecked {
            registry.holdBond(IProviderRegistry.Role.Provider, provider, uint64(block.timestamp + SETTLED_BOND_HOLD));
        }
    }

    /// @dev Books the fee and sends both payouts; called after the channel's word is settled (deleted, or
    /// the Settled word of a cooperative close) and the event emitted.
    function _settle(ChannelTerms calldata terms, uint256 toProvider, uint256 fee, uint256 toFunder) private {
        (, address provider, address funder, address asset) = _parties(terms);
        if (fee != 0) _accruedFees[asset] += fee;
        _pay(asset, provider, toProvider);
        _pay(asset, funder, toFunder);
    }

    /// @dev Sends a payout after all state changes. ETH is force-sent (a recipient that reverts receives it
    /// anyway through a self-destructing forwarder), so a hostile party cannot block the other's payout.
    /// An ERC-20 transfer that fails is credited to the recipient's claimable balance instead (decision
    /// 0016), so one blocklisted recipient never blocks the other's payout or its own refund of the rest.
    /// Every caller pays something owed, so a payout that leaves lowers the asset's liabilities; a deferred one
    /// stays owed (claimable).
    function _pay(address asset, address to, uint256 amount) private {
        if (amount == 0) return;
        if (asset == address(0)) {
            SafeTransferLib.forceSafeTransferETH(to, amount);
        } else if (!_payToken(asset, to, amount)) {
            return;
        }
        _liabilities[asset] -= amount;
    }

    /// @dev The one place a payout is deferred: the credit is written after the failed call, inside the
    /// guard, so a token re-entering during the attempt cannot claim or pay anything in between.
    function _payToken(address token, address to, uint256 amount) private nonReentrant returns (bool paid) {
        paid = TryTransfer.tryTransfer(token, to, amount);
        if (!paid) {
            _claimable[token][to] += amount;
            emit PayoutDeferred(token, to, amount);
        }
    }

    /// @dev Transient storage exists on every chain this contract targets (Cancun and later).
    function _useTransientReentrancyGuardOnlyOnMainnet() internal pure override returns (bool) {
        return false;
    }

    /// @dev `DISPUTE_ROLE` seals (`SealedRoles`); sealing also needs the dispute terms source (`DisputableAssets`).
    function _isWiringRole(bytes32 role) internal pure override returns (bool) {
        return role == DISPUTE_ROLE;
    }
}
