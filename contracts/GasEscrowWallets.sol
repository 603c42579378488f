// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {GasEscrowBase} from "./GasEscrowBase.sol";
import {IGasEscrowWallets} from "./interfaces/IGasEscrowWallets.sol";
import {IProviderRegistry} from "./interfaces/IProviderRegistry.sol";

/// @title GasEscrowWallets
/// @notice The GasEscrow's entry points for payers that are contract wallets (ERC-1271, decision 0035). The
/// GasEscrow deploys this module and runs it by `delegatecall` from its fallback, so it acts on the escrow's
/// storage, balance and roles; both inherit `GasEscrowBase`, so they share one storage layout and the same channel
/// steps. A wallet's signature is the wallet's own bytes, handed unchanged to its `isValidSignature`
/// (OpenZeppelin `SignatureChecker`); an address without code never passes.
/// @dev Called directly (not through the escrow), it acts on its own empty storage: no channel exists there and it
/// holds no funds, so nothing can move.
contract GasEscrowWallets is GasEscrowBase, IGasEscrowWallets {
    /// @param registry_ The escrow's ProviderRegistry (the same immutable the escrow's code reads).
    constructor(IProviderRegistry registry_) GasEscrowBase(registry_) {}

    /// @inheritdoc IGasEscrowWallets
    function closeCooperativeByWallet(
        ChannelTerms calldata terms,
        uint64 openedAt,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot,
        bytes calldata payerSig,
        Signature calldata providerSig
    ) external {
        bytes32 sessionId = _sessionId(terms, openedAt);
        uint256 word = _requireOpen(sessionId);
        bytes32 digest = _cooperativeDigest(sessionId, terms, finalSeq, finalAmount, finalReceiptRoot);
        _requireWalletSigner(digest, payerSig, terms.payer);
        _requireSigner(digest, providerSig, terms.provider);
        _settleCooperative(sessionId, terms, word, finalSeq, finalAmount, finalReceiptRoot);
    }

    /// @inheritdoc IGasEscrowWallets
    function closeUnilateralByWallet(ChannelTerms calldata terms, uint64 openedAt, WalletTicket calldata ticket)
        external
    {
        bytes32 sessionId = _sessionId(terms, openedAt);
        uint256 word = _requireOpen(sessionId);
        _requireParty(sessionId, terms);
        if (ticket.seq == 0) revert EmptyWalletTicket(sessionId);
        _requireWalletTicket(sessionId, terms, ticket);
        _startClosingWith(sessionId, word, terms, ticket.seq, ticket.cumulativeAmount, ticket.receiptRoot);
    }

    /// @inheritdoc IGasEscrowWallets
    function closeUnilateralWithWalletKey(
        ChannelTerms calldata terms,
        uint64 openedAt,
        Ticket calldata ticket,
        WalletSessionKeyGrant calldata grant
    ) external {
        bytes32 sessionId = _sessionId(terms, openedAt);
        uint256 word = _requireOpen(sessionId);
        _requireParty(sessionId, terms);
        if (ticket.seq == 0) revert EmptyKeyTicket(sessionId);
        _requireWalletKeyTicket(sessionId, terms, ticket, grant);
        _startClosing(sessionId, word, terms, ticket);
    }

    /// @inheritdoc IGasEscrowWallets
    function challengeByWallet(
        ChannelTerms calldata terms,
        uint64 openedAt,
        ClosingState calldata recorded,
        WalletTicket calldata ticket
    ) external {
        bytes32 sessionId = _sessionId(terms, openedAt);
        (uint256 cases, uint40 finalizesAt) =
            _requireChallengeableBy(sessionId, recorded, ticket.seq, ticket.cumulativeAmount);
        _requireWalletTicket(sessionId, terms, ticket);
        _recordChallengeWith(
            sessionId, cases, finalizesAt, recorded, ticket.seq, ticket.cumulativeAmount, ticket.receiptRoot
        );
    }

    /// @inheritdoc IGasEscrowWallets
    function challengeWithWalletKey(
        ChannelTerms calldata terms,
        uint64 openedAt,
        ClosingState calldata recorded,
        Ticket calldata ticket,
        WalletSessionKeyGrant calldata grant
    ) external {
        bytes32 sessionId = _sessionId(terms, openedAt);
        (uint256 cases, uint40 finalizesAt) = _requireChallengeable(sessionId, recorded, ticket);
        _requireWalletKeyTicket(sessionId, terms, ticket, grant);
        _recordChallenge(sessionId, cases, finalizesAt, recorded, ticket);
    }

    /// @inheritdoc IGasEscrowWallets
    function registerWalletSessionKey(
        ChannelTerms calldata terms,
        uint64 openedAt,
        WalletSessionKeyGrant calldata grant
    ) external {
        bytes32 sessionId = _sessionId(terms, openedAt);
        bytes32 digest = _walletGrantDigest(sessionId, grant);
        if (_walletGrants[sessionId][digest]) return;
        _requireWalletSigner(digest, grant.sig, terms.payer);
        _walletGrants[sessionId][digest] = true;
        emit WalletSessionKeyRegistered(sessionId, grant.key, digest);
    }

    /// @inheritdoc IGasEscrowWallets
    function walletSessionKeyRegistered(bytes32 sessionId, bytes32 grantDigest) external view returns (bool) {
        return _walletGrants[sessionId][grantDigest];
    }

    /*//////////////////////////////////////////////////////////////
                                INTERNAL
    //////////////////////////////////////////////////////////////*/

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
}
