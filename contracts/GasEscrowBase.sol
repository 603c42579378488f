// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {DisputableAssets} from "./governance/DisputableAssets.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SafeTransferLib} from "solady/src/utils/SafeTransferLib.sol";
import {ReentrancyGuardTransient} from "solady/src/utils/ReentrancyGuardTransient.sol";
import {IGasEscrowTypes} from "./interfaces/IGasEscrowTypes.sol";
import {IProviderRegistry} from "./interfaces/IProviderRegistry.sol";
import {TryTransfer} from "./libraries/TryTransfer.sol";

/// @title GasEscrowBase
/// @notice The GasEscrow's storage, constants and the private steps its entry points share, in one abstract base
/// that both the GasEscrow and its contract-wallet module (`GasEscrowWallets`, reached by `delegatecall` from the
/// GasEscrow's fallback, decision 0035) inherit: one storage layout, by construction, for the two codes that run
/// on it. See `GasEscrow` for the channel word's layout and the rules.
abstract contract GasEscrowBase is IGasEscrowTypes, DisputableAssets, EIP712, ReentrancyGuardTransient {
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

    /// @dev A hold's end is asked in whole hours, rounded up: every cooperative close of a provider within the same
    /// hour asks the same time, so the registry rewrites its word and logs `BondHeld` at most once an hour, not on
    /// every close. A bond is held at most this much longer than SETTLED_BOND_HOLD, never shorter.
    uint256 internal constant _BOND_HOLD_STEP = 1 hours;

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

    uint256 internal constant _DEPOSIT_MASK = type(uint128).max;
    uint256 internal constant _FEE_SHIFT = 128;
    uint256 internal constant _TAG_SHIFT = 254;
    uint256 internal constant _TAG_CLOSING = 1;
    uint256 internal constant _TAG_SETTLED = 2;
    uint256 internal constant _CASES_SHIFT = 250;
    uint256 internal constant _CASES_MASK = 0xf;
    uint256 internal constant _FINALIZES_AT_SHIFT = 210;
    uint256 internal constant _FINALIZES_AT_MASK = type(uint40).max;
    uint256 internal constant _FINGERPRINT_MASK = (1 << 210) - 1;


    /*//////////////////////////////////////////////////////////////
                                STORAGE
    //////////////////////////////////////////////////////////////*/

    /// @notice The registry holding providers' bonds, which answer for cooperatively settled sessions; this
    /// escrow must hold its `HOLDER_ROLE`.
    IProviderRegistry public immutable registry;

    mapping(bytes32 sessionId => uint256 word) internal _channels;

    /// @dev When a session key was revoked on a session (0: never). Session keys are granted off-chain
    /// (decision 0025); only revocations, which must be public, are written.
    mapping(bytes32 sessionId => mapping(address key => uint40 revokedAt)) internal _keyRevokedAt;

    /// @dev Revocation epoch per payer; a grant naming an older epoch was revoked when that epoch ended.
    mapping(address payer => uint64 epoch) internal _keyEpochs;

    /// @dev When each of a payer's epochs ended (`revokeAllSessionKeys`).
    mapping(address payer => mapping(uint64 epoch => uint40 endedAt)) internal _epochEndedAt;

    /// @dev Everything owed per asset (open and closing deposits, accrued fees, claimable payouts): the balance
    /// above it is surplus (`sweep`). Only exact transfers are accepted at funding, so it is exact.
    mapping(address asset => uint256 amount) internal _liabilities;

    /// @dev Fees collected for the treasury per asset, not yet withdrawn.
    mapping(address asset => uint256 amount) internal _accruedFees;

    /// @dev ERC-20 payouts the token refused (a blocklisted recipient), owed to the recipient until `claim`.
    mapping(address asset => mapping(address account => uint256 amount)) internal _claimable;

    /// @dev Provider-signed receipt commits anchored by the payer side: root => its leaf count (0: none).
    mapping(bytes32 sessionId => mapping(bytes32 root => uint64 leafCount)) internal _anchoredCommits;

    /// @dev Routing fee and treasury in one slot: bits 0..159 treasury, bits 160..175 fee in bps.
    uint256 internal _feeConfig;

    /// @dev Session-key grants of contract-wallet payers that the wallet approved (ERC-1271) when they were
    /// registered: session => grant digest => registered (decision 0035). Written only by the wallet module.
    mapping(bytes32 sessionId => mapping(bytes32 grantDigest => bool)) internal _walletGrants;

    /// @param registry_ The ProviderRegistry whose provider bonds answer for settled sessions (a contract).
    constructor(IProviderRegistry registry_) EIP712("IOI GasEscrow", "1") {
        if (address(registry_).code.length == 0) revert RegistryNotContract(address(registry_));
        registry = registry_;
    }

    /*//////////////////////////////////////////////////////////////
                          SHARED CHANNEL STEPS
    //////////////////////////////////////////////////////////////*/

    /// @dev Records the close: the ticket's state, a window of the channel's challenge duration from now.
    function _startClosing(bytes32 sessionId, uint256 word, ChannelTerms calldata terms, Ticket calldata ticket)
        internal
    {
        ClosingState memory state = ClosingState({
            deposit: uint128(word), // the low 128 bits
            seq: ticket.seq,
            amount: ticket.cumulativeAmount,
            receiptRoot: ticket.receiptRoot,
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

    /// @dev Reverts unless the channel is closing with `recorded`, its window is open, and `ticket` owes the
    /// provider strictly more; returns the channel's open cases and window end.
    function _requireChallengeable(bytes32 sessionId, ClosingState calldata recorded, Ticket calldata ticket)
        internal
        view
        returns (uint256 cases, uint40 finalizesAt)
    {
        (cases, finalizesAt) = _requireClosingState(sessionId, recorded);
        if (block.timestamp >= finalizesAt) revert ChallengeWindowClosed(sessionId, finalizesAt);
        // The provider is owed the most the payer ever promised: a higher cumulative amount wins whatever its
        // seq (the payer signs seq, so ranking by seq alone would let a payer close with a fresh ticket of
        // seq 2^64 - 1 and amount 0 that no genuine ticket could beat).
        if (ticket.cumulativeAmount < recorded.amount) {
            revert TicketAmountDecreased(sessionId, ticket.cumulativeAmount, recorded.amount);
        }
        // The recorded root moves only when the amount rises (issue 12): a same-amount ticket, whatever its
        // seq, would let the payer swap the root the provider's receipts are proven against for one of its
        // own choosing, for free. The provider never accepts a ticket that adds nothing, so no genuine
        // same-amount ticket is lost.
        if (ticket.seq == 0 || ticket.cumulativeAmount == recorded.amount) {
            revert TicketNotNewer(sessionId, ticket.seq, recorded.seq);
        }
    }

    /// @dev Replaces the recorded ticket with `ticket` (already checked), keeping the window's end.
    function _recordChallenge(
        bytes32 sessionId,
        uint256 cases,
        uint40 finalizesAt,
        ClosingState calldata recorded,
        Ticket calldata ticket
    ) internal {
        ClosingState memory state = ClosingState({
            deposit: recorded.deposit,
            seq: ticket.seq,
            amount: ticket.cumulativeAmount,
            receiptRoot: ticket.receiptRoot,
            feeBps: recorded.feeBps
        });
        _channels[sessionId] = _closingWord(cases, finalizesAt, state);
        emit ChannelChallenged(sessionId, msg.sender, state.seq, state.amount, state.receiptRoot, finalizesAt);
    }

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

    /*//////////////////////////////////////////////////////////////
                                INTERNAL
    //////////////////////////////////////////////////////////////*/

    function _validateTerms(ChannelTerms calldata terms) internal pure {
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
    function _sessionId(ChannelTerms calldata terms, uint64 openedAt) internal view returns (bytes32) {
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
        internal
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
    function _requireOpen(bytes32 sessionId) internal view returns (uint256 word) {
        word = _channels[sessionId];
        if (word == 0 || word >> _TAG_SHIFT != 0) revert ChannelNotOpen(sessionId);
    }

    /// @dev Reverts unless the channel is closing with exactly `recorded`; returns its cases and window end.
    function _requireClosingState(bytes32 sessionId, ClosingState memory recorded)
        internal
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
        internal
        pure
        returns (uint256)
    {
        return (_TAG_CLOSING << _TAG_SHIFT) | (cases << _CASES_SHIFT)
            | (uint256(finalizesAt) << _FINALIZES_AT_SHIFT) | _fingerprint(state);
    }

    function _fingerprint(ClosingState memory state) internal pure returns (uint256) {
        return uint256(keccak256(abi.encode(state))) & _FINGERPRINT_MASK;
    }

    /// @dev `_fingerprint(settledState(finalSeq, finalAmount, finalReceiptRoot))`, hashed in scratch memory
    /// without building the struct (closeCooperative's gas target, decision 0005).
    function _settledFingerprint(uint64 finalSeq, uint128 finalAmount, bytes32 finalReceiptRoot)
        internal
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
    ) internal pure returns (bytes32) {
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
    ) internal view {
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

    function _summaryStructHash(
        bytes32 sessionId,
        address provider,
        address payer,
        bytes32 termsHash,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot,
        CloseMode mode
    ) internal pure returns (bytes32 structHash) {
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

    function _requireParty(bytes32 sessionId, ChannelTerms calldata terms) internal view {
        if (msg.sender != terms.payer && msg.sender != terms.provider && msg.sender != terms.funder) {
            revert NotAParty(sessionId, msg.sender);
        }
    }

    function _ticketDigest(bytes32 sessionId, ChannelTerms calldata terms, Ticket calldata ticket)
        internal
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
        internal
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
    ) internal view {
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
        if (ticket.cumulativeAmount > grant.spendCap) {
            revert SessionKeySpendCapExceeded(key, ticket.cumulativeAmount, grant.spendCap);
        }
        uint256 grace = terms.challengeDuration;
        // uint256 sums below: a time near 2^40 plus the grace cannot wrap.
        uint40 revokedAt = _keyRevokedAt[sessionId][key];
        if (revokedAt != 0 && block.timestamp >= uint256(revokedAt) + grace) revert RevokedSessionKey(key, revokedAt);
        uint64 currentEpoch = _keyEpochs[terms.payer];
        if (grant.epoch != currentEpoch) {
            if (grant.epoch > currentEpoch) revert SessionKeyEpochAhead(key, grant.epoch, currentEpoch);
            uint40 endedAt = _epochEndedAt[terms.payer][grant.epoch];
            if (block.timestamp >= uint256(endedAt) + grace) revert RevokedSessionKey(key, endedAt);
        }
    }

    /// @dev Reverts unless `sig` is a valid low-s signature of `digest` by `expected`.
    function _requireSigner(bytes32 digest, Signature calldata sig, address expected) internal view {
        address recovered = _recover(digest, sig);
        if (recovered != expected) revert SignerMismatch(expected, recovered);
    }

    /// @dev ECDSA recovery of an ERC-2098 signature with OpenZeppelin's rules (`ECDSA.tryRecover(digest, r, vs)`):
    /// a high s reverts `SignatureNotLowS`, an unrecoverable signature `InvalidSignature`. Written against the
    /// precompile directly to keep closeCooperative's two recoveries within its gas target (decision 0005).
    function _recover(bytes32 digest, Signature calldata sig) internal view returns (address recovered) {
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

    function _feeBps() internal view returns (uint16) {
        return uint16(_feeConfig >> 160);
    }

    function _setRoutingFee(uint16 feeBps, address treasury) internal {
        if (feeBps > MAX_ROUTING_FEE_BPS) revert RoutingFeeTooHigh(feeBps, MAX_ROUTING_FEE_BPS);
        if (treasury == address(0)) revert ZeroTreasury();
        _feeConfig = uint256(uint160(treasury)) | (uint256(feeBps) << 160);
        emit RoutingFeeSet(feeBps, treasury);
    }

    function _receiveEth(uint256 amount) internal returns (uint256) {
        if (msg.value != amount) revert EthValueMismatch(msg.value, amount);
        return amount;
    }

    /// @dev Pulls `amount` of `token` from the caller; reverts (`TransferAmountMismatch`) unless exactly
    /// `amount` arrived: a fee-on-transfer token is refused, not credited net (issue 28).
    /// The transfer happens before the channel's word is written; the guard keeps a hostile token from
    /// re-entering in between.
    function _receiveToken(address token, uint256 amount) internal nonReentrant returns (uint256) {
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
    function _holdSettledBond(ChannelTerms calldata terms) internal {
        (, address provider,,) = _parties(terms);
        // Cannot overflow: block.timestamp + 30 days + 1 hour is far below 2^64.
        unchecked {
            uint256 until =
                (block.timestamp + SETTLED_BOND_HOLD + _BOND_HOLD_STEP - 1) / _BOND_HOLD_STEP * _BOND_HOLD_STEP;
            registry.holdBond(IProviderRegistry.Role.Provider, provider, uint64(until));
        }
    }

    /// @dev Books the fee and sends both payouts; called after the channel's word is settled (deleted, or
    /// the Settled word of a cooperative close) and the event emitted.
    function _settle(ChannelTerms calldata terms, uint256 toProvider, uint256 fee, uint256 toFunder) internal {
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
    function _pay(address asset, address to, uint256 amount) internal {
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
    function _payToken(address token, address to, uint256 amount) internal nonReentrant returns (bool paid) {
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
