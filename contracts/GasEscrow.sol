// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {SafeTransferLib} from "solady/src/utils/SafeTransferLib.sol";
import {GasEscrowBase} from "./GasEscrowBase.sol";
import {GasEscrowWallets} from "./GasEscrowWallets.sol";
import {IGasEscrow} from "./interfaces/IGasEscrow.sol";
import {IProviderRegistry} from "./interfaces/IProviderRegistry.sol";

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
///
/// Storage, constants and the shared private steps are in `GasEscrowBase`. Payers that are contract wallets
/// (ERC-1271) use the entry points of `IGasEscrowWallets`, which this contract's fallback serves by `delegatecall`
/// to `GasEscrowWallets`, a module it deploys and that shares the same base (decision 0035): the plain-key
/// functions' code and selector dispatch are exactly what they were, and so is their gas.
contract GasEscrow is GasEscrowBase, IGasEscrow {
    /// @dev The contract-wallet module (`GasEscrowWallets`) this escrow deployed; private, so no selector is added.
    address private immutable _walletModule;

    /// @param governance Receives the admin and governance roles.
    /// @param treasury Receives the routing fees.
    /// @param routingFeeBps Initial routing fee, at most MAX_ROUTING_FEE_BPS.
    /// @param registry_ The ProviderRegistry whose provider bonds answer for settled sessions (a contract).
    constructor(address governance, address treasury, uint16 routingFeeBps, IProviderRegistry registry_)
        GasEscrowBase(registry_)
    {
        _grantRole(DEFAULT_ADMIN_ROLE, governance);
        _grantRole(GOVERNANCE_ROLE, governance);
        _setRoutingFee(routingFeeBps, treasury);
        _walletModule = address(new GasEscrowWallets(registry_));
    }

    /// @notice Serves `IGasEscrowWallets`, the entry points for payers that are contract wallets (decision 0035):
    /// the call runs the wallet module's code on this escrow's storage (`delegatecall`); its result or revert is
    /// returned as is. Reached only after every plain-key selector missed. Not payable: ETH sent to the escrow
    /// without a function still reverts.
    // solhint-disable-next-line no-complex-fallback
    fallback() external {
        address module = _walletModule;
        // solhint-disable-next-line no-inline-assembly
        assembly {
            calldatacopy(0, 0, calldatasize())
            let ok := delegatecall(gas(), module, 0, calldatasize(), 0, 0)
            returndatacopy(0, 0, returndatasize())
            if iszero(ok) { revert(0, returndatasize()) }
            return(0, returndatasize())
        }
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
        uint256 held = word & _DEPOSIT_MASK;
        _requireSummarySigners(sessionId, terms, finalSeq, finalAmount, finalReceiptRoot, payerSig, providerSig);
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

}
