// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IGasEscrowTypes} from "./IGasEscrowTypes.sol";

/// @title IGasEscrow
/// @notice Session payment channels between a payer and a provider, funded on-chain and settled only at
/// their boundaries. Every error, event and struct of the channel is declared in `IGasEscrowTypes`, which this
/// extends: they are public API.
interface IGasEscrow is IGasEscrowTypes {
    /*//////////////////////////////////////////////////////////////
                                FUNCTIONS
    //////////////////////////////////////////////////////////////*/

    /// @notice Opens a channel on `terms` and funds it with `amount` of `terms.asset`.
    /// @dev For native ETH `msg.value` must equal `amount`; for an ERC-20 the contract pulls `amount` from the
    /// caller (after `approve` or `permit`) and credits what it actually received.
    /// Requirements: the caller is `terms.funder` (so a copy of the terms sent by anyone else cannot take
    /// the session id first); payer, provider and funder non-zero; challenge duration within bounds; a
    /// non-zero deposit; no channel with the same terms opened in the same block.
    /// @return sessionId The channel's id: the EIP-712 hash of `Session(terms…, openedAt = block.number)`.
    function open(ChannelTerms calldata terms, uint256 amount) external payable returns (bytes32 sessionId);

    /// @notice Adds `amount` to an open channel and credits what arrived. Anyone may top up; refunds still
    /// go to `terms.funder`.
    /// @param minReceived The least this top-up must credit (0: no guard). It protects only the caller (from
    /// a fee-on-transfer token) and depends on nothing anyone else can change, so no other deposit — a
    /// 1-wei front-run included — can make the call revert.
    function deposit(ChannelTerms calldata terms, uint64 openedAt, uint256 amount, uint256 minReceived)
        external
        payable;

    /// @notice Settles an open channel at once with a SettlementSummary (mode Cooperative) signed by both
    /// the payer and the provider: `finalAmount` to the provider, the rest of the deposit to the funder.
    /// @dev Anyone may submit it; the signatures are what authorise it. The channel's word becomes a
    /// permanent Settled word (phase `Settled`): the payer may dispute a receipt proven against
    /// `finalReceiptRoot` for the DisputeManager's `settledDisputeWindow`, refunded from the provider's bond.
    function closeCooperative(
        ChannelTerms calldata terms,
        uint64 openedAt,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot,
        Signature calldata payerSig,
        Signature calldata providerSig
    ) external;

    /// @notice Starts a unilateral close with the newest ticket the caller holds (or none: `seq == 0`),
    /// opening a challenge window of the channel's `challengeDuration`.
    /// Requirements: the channel is open; the caller is its payer, provider or funder; a ticket is signed
    /// by the payer (a session key's ticket goes through `closeUnilateralWithKey`).
    function closeUnilateral(ChannelTerms calldata terms, uint64 openedAt, Ticket calldata ticket) external;

    /// @notice `closeUnilateral` with a ticket signed by a session key, which `grant` (signed by the payer)
    /// authorises. Requirements as `closeUnilateral`, and: `ticket.seq > 0`; the grant names this session's
    /// payer as signer and the ticket's signer as key; the amount is within its cap; it is not in an epoch
    /// the payer has not reached; and now is before `revokedAt + challengeDuration` for any revocation of the
    /// key or its epoch (decision 0025: tickets the provider accepted before it could know of a revocation
    /// still settle). The grant's `expiry` is not checked: it bounds signing, which the provider checks before
    /// any work; what a key signed stays payable after it expires (decision 0025, amendment for issue 28).
    function closeUnilateralWithKey(
        ChannelTerms calldata terms,
        uint64 openedAt,
        Ticket calldata ticket,
        SessionKeyGrant calldata grant
    ) external;

    /// @notice Replaces the recorded ticket with one that owes the provider more (a strictly higher
    /// cumulative amount) while the window is open. Does not extend the window. Anyone may submit: the
    /// ticket is the payer's. A same-amount ticket never replaces the recorded receipt root.
    function challenge(
        ChannelTerms calldata terms,
        uint64 openedAt,
        ClosingState calldata recorded,
        Ticket calldata ticket
    ) external;

    /// @notice `challenge` with a ticket signed by a session key that `grant` authorises; the key's checks
    /// are those of `closeUnilateralWithKey`, made at the time of the challenge.
    function challengeWithKey(
        ChannelTerms calldata terms,
        uint64 openedAt,
        ClosingState calldata recorded,
        Ticket calldata ticket,
        SessionKeyGrant calldata grant
    ) external;

    /// @notice After the window, pays the provider the recorded amount (capped at the deposit) less the
    /// routing fee, accrues the fee for the treasury and refunds the rest to the funder. Anyone may call.
    function finalize(ChannelTerms calldata terms, uint64 openedAt, ClosingState calldata recorded) external;

    /// @notice Dispute hook: records that a case opened on a closing session; finalisation waits for it.
    /// Requirements: the caller holds DISPUTE_ROLE; the session is closing, its challenge window is still
    /// open, and `recorded` is its state.
    function freeze(bytes32 sessionId, ClosingState calldata recorded) external;

    /// @notice Dispute hook: a case on the session ended. A non-zero `refund` is taken off what the provider
    /// would be paid (the recorded amount capped at the deposit), goes back to the funder at finalisation,
    /// and ends the challenge window, so that no later ticket can undo the resolution.
    /// @return applied False if the session was already settled (then nothing changes).
    function release(bytes32 sessionId, ClosingState calldata recorded, uint128 refund) external returns (bool applied);

    /// @notice Revokes one session key of this session from this block on: any grant of it, for good.
    /// Not retroactive: its tickets settle in a close or challenge submitted before
    /// `revokedAt + challengeDuration`. Revoking again is a no-op (the first time stands). Only the payer.
    function revokeSessionKey(ChannelTerms calldata terms, uint64 openedAt, address key) external;

    /// @notice Revokes every session key the caller granted in its current epoch, on every channel, and
    /// moves to the next epoch; same grace as `revokeSessionKey`.
    function revokeAllSessionKeys() external;

    /// @notice When `key` was revoked on the session (0: never).
    function sessionKeyRevokedAt(bytes32 sessionId, address key) external view returns (uint40);

    /// @notice When `payer` left revocation epoch `epoch` (0: not yet).
    function epochRevokedAt(address payer, uint64 epoch) external view returns (uint40);

    /// @notice The EIP-712 digest a payer signs for a SessionKey grant.
    function hashSessionKey(
        bytes32 sessionId,
        address key,
        uint64 expiry,
        uint128 spendCap,
        bytes32 capabilities,
        uint64 epoch
    ) external view returns (bytes32);

    /// @notice Sends the accrued fees in `asset` to the treasury. Anyone may call. If the token refuses the
    /// transfer, the fees are credited to the treasury's claimable balance (`PayoutDeferred`).
    function withdrawFees(address asset) external;

    /// @notice Sends the treasury whatever the escrow holds in `asset` beyond what it owes (open and closing
    /// deposits, accrued fees, claimable payouts: `liabilitiesOf`). Anyone may call; nothing owed can move.
    /// Returns 0 (no-op) when there is no surplus, including when a token's balance fell below what is owed.
    function sweep(address asset) external returns (uint256 amount);

    /// @notice Everything the escrow owes in `asset`: deposits of open and closing channels, fees accrued for
    /// the treasury, and payouts deferred to `claim`.
    function liabilitiesOf(address asset) external view returns (uint256);

    /// @notice Pays the caller its claimable balance of `asset` (payouts the token refused earlier).
    /// A zero balance is a no-op; a transfer that still fails reverts and leaves the balance in place.
    /// @return amount What was paid.
    function claim(address asset) external returns (uint256 amount);

    /// @notice What `account` can `claim` in `asset`.
    function claimableOf(address asset, address account) external view returns (uint256);

    /// @notice Sets the routing fee (≤ MAX_ROUTING_FEE_BPS) and the treasury. Only GOVERNANCE_ROLE.
    function setRoutingFee(uint16 feeBps, address treasury) external;

    /// @notice The id `open` assigns to `terms` opened in block `openedAt` on this chain and contract.
    function sessionIdOf(ChannelTerms calldata terms, uint64 openedAt) external view returns (bytes32);

    /// @notice What an open channel holds, or 0 if no channel with this id is open.
    function depositOf(bytes32 sessionId) external view returns (uint256);

    /// @notice The channel's phase now.
    function phaseOf(bytes32 sessionId) external view returns (Phase);

    /// @notice For a closing channel: whether `recorded` is its state, when the window ends, and how many
    /// dispute cases are open. Dispute contracts prove receipts against `recorded.receiptRoot`.
    function closingInfo(bytes32 sessionId, ClosingState calldata recorded)
        external
        view
        returns (bool matches, uint40 finalizesAt, uint8 openCases);

    /// @notice A cooperatively settled summary as the ClosingState whose fingerprint the Settled word keeps:
    /// `{deposit: finalAmount, seq: finalSeq, amount: finalAmount, receiptRoot: finalReceiptRoot, feeBps: 0}`.
    /// Dispute contracts take it where they take a closing session's recorded state.
    function settledState(uint64 finalSeq, uint128 finalAmount, bytes32 finalReceiptRoot)
        external
        pure
        returns (ClosingState memory);

    /// @notice For a cooperatively settled channel: whether `settled` is its summary (`settledState`) and
    /// when it settled. Dispute contracts prove receipts against `settled.receiptRoot`.
    function settledInfo(bytes32 sessionId, ClosingState calldata settled)
        external
        view
        returns (bool matches, uint40 settledAt);

    /// @notice Anchors the provider's EIP-712 signed `ReceiptCommit(sessionId, leafCount, root)`, so that a
    /// receipt the provider committed to can be proven in a dispute case even when the root the session
    /// closed or settled with does not contain it (decision 0003, amendment). Idempotent: anchoring a root
    /// again changes nothing and emits nothing.
    /// @dev Stores one slot per anchored root (`anchoredCommitOf`): the DisputeManager has no code left for
    /// the commit in its calldata, so `DisputeRules.sessionSubject` accepts a proof against any anchored root.
    /// Requirements: the caller is the payer or the funder; the session is Closing (window still open) or
    /// Settled (the DisputeManager enforces its `settledDisputeWindow` when a case opens); `leafCount > 0`;
    /// `providerSig` is the provider's low-s signature over the commit in this contract's domain.
    function anchorReceiptCommit(
        ChannelTerms calldata terms,
        uint64 openedAt,
        uint64 leafCount,
        bytes32 root,
        Signature calldata providerSig
    ) external;

    /// @notice The leaf count of the anchored provider-signed commit with `root` (0: none anchored).
    function anchoredCommitOf(bytes32 sessionId, bytes32 root) external view returns (uint64 leafCount);

    /// @notice The EIP-712 digest a provider signs for a ReceiptCommit.
    function hashReceiptCommit(bytes32 sessionId, uint64 leafCount, bytes32 root) external view returns (bytes32);

    /// @notice The EIP-712 digest a payer (or its session key) signs for a PaymentTicket.
    function hashPaymentTicket(
        bytes32 sessionId,
        address provider,
        bytes32 termsHash,
        uint64 seq,
        uint128 cumulativeAmount,
        bytes32 receiptRoot
    ) external view returns (bytes32);

    /// @notice The EIP-712 digest both parties sign for a SettlementSummary.
    function hashSettlementSummary(
        bytes32 sessionId,
        address provider,
        address payer,
        bytes32 termsHash,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot,
        CloseMode mode
    ) external view returns (bytes32);
}
