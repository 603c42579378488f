// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IGasEscrow
/// @notice Session payment channels between a payer and a provider, funded on-chain and settled only at
/// their boundaries. Every error, event and struct of the channel lives here: they are public API.
interface IGasEscrow {
    /*//////////////////////////////////////////////////////////////
                                 STRUCTS
    //////////////////////////////////////////////////////////////*/

    /// @notice The fixed terms of a channel. They are never stored: the session id is the EIP-712 hash of
    /// these terms together with the block the channel was opened in, so every later call re-supplies them
    /// and the contract recomputes the id.
    /// @dev `asset` is `address(0)` for native ETH. `termsHash` commits the pricing and dispute rules,
    /// `policyHash` the policy envelope the provider must enforce (both are hashes of canonical JSON).
    struct ChannelTerms {
        address payer;
        address provider;
        address funder;
        address asset;
        bytes32 termsHash;
        bytes32 policyHash;
        uint64 challengeDuration;
        uint64 nonce;
    }

    /// @notice An ERC-2098 compact secp256k1 signature: `vs` holds the y-parity in its top bit and `s`
    /// below it. Only low-s signatures are accepted, so each signer has one encoding per digest.
    struct Signature {
        bytes32 r;
        bytes32 vs;
    }

    /// @notice A payer-signed PaymentTicket as submitted on-chain. The session, provider and terms hash it
    /// binds come from the channel's terms, so only the moving parts travel in calldata.
    /// @dev `seq == 0` means "no ticket" (amount and root must then be zero and `sig` is ignored).
    struct Ticket {
        uint64 seq;
        uint128 cumulativeAmount;
        bytes32 receiptRoot;
        Signature sig;
    }

    /// @notice A payer's EIP-712 `SessionKey` delegation (decision 0025): `key` may sign this session's
    /// tickets for cumulative amounts up to `spendCap` until `expiry` (what it signed by then stays payable),
    /// paying only for the MCP methods whose set hashes to `capabilities`; it lives in the payer's revocation
    /// epoch `epoch`. It is never stored:
    /// the provider checks it off-chain with no transaction, and a key-signed ticket carries it on-chain.
    /// @dev The session id is not a field: it comes from the channel's terms. `capabilities` cannot be
    /// checked here (a ticket does not name the method it pays for); providers and Lane 0 check it.
    /// Never stored (calldata only), so its field order follows the signed type, not slot packing.
    // solhint-disable-next-line gas-struct-packing
    struct SessionKeyGrant {
        address key;
        uint64 expiry;
        uint128 spendCap;
        bytes32 capabilities;
        uint64 epoch;
        Signature sig;
    }

    /// @notice A PaymentTicket signed by a payer that is a contract wallet (decision 0035): as `Ticket`, but the
    /// signature is the wallet's own bytes, which the escrow hands to the wallet's ERC-1271 `isValidSignature`.
    struct WalletTicket {
        uint64 seq;
        uint128 cumulativeAmount;
        bytes32 receiptRoot;
        bytes sig;
    }

    /// @notice A `SessionKeyGrant` signed by a payer that is a contract wallet: the wallet's own signature bytes
    /// (ERC-1271). Once `registerWalletSessionKey` has accepted it, it counts without asking the wallet again.
    // solhint-disable-next-line gas-struct-packing
    struct WalletSessionKeyGrant {
        address key;
        uint64 expiry;
        uint128 spendCap;
        bytes32 capabilities;
        uint64 epoch;
        bytes sig;
    }

    /// @notice What a unilateral close recorded. Only its fingerprint is stored; callers re-supply it
    /// (every field is in the `ChannelClosing` / `ChannelChallenged` events).
    /// @dev Never stored (only hashed), so its field order follows meaning, not slot packing.
    // solhint-disable-next-line gas-struct-packing
    struct ClosingState {
        uint128 deposit;
        uint64 seq;
        uint128 amount;
        bytes32 receiptRoot;
        uint16 feeBps;
    }

    /// @notice A channel's phase, derived from its storage word and the time. `None`: never opened, or
    /// settled through the challenge window (its word is deleted). `Settled`: settled cooperatively; the word
    /// stays for good, so the id never reopens and its summary stays disputable for a while (`settledInfo`).
    enum Phase {
        None,
        Open,
        Closing,
        Finalizable,
        Frozen,
        Settled
    }

    /// @notice How a channel was settled; signed as `uint8` inside a SettlementSummary.
    enum CloseMode {
        Cooperative,
        Unilateral
    }

    /*//////////////////////////////////////////////////////////////
                                 EVENTS
    //////////////////////////////////////////////////////////////*/

    /// @notice A channel was opened and funded. The parties already hold the terms (they agreed them
    /// off-chain and the id commits to them); `openedAt` completes what they need to rebuild the id.
    event ChannelOpened(
        bytes32 indexed sessionId,
        address indexed payer,
        address indexed provider,
        address asset,
        uint64 openedAt,
        uint256 deposit
    );

    /// @notice `amount` was added to a channel by `from`, which now holds `deposit`.
    event Deposited(bytes32 indexed sessionId, address indexed from, uint256 amount, uint256 deposit);

    /// @notice A channel paid out and is closed for good. `fee` went to the treasury's accrued fees.
    event ChannelSettled(
        bytes32 indexed sessionId,
        CloseMode mode,
        uint64 finalSeq,
        bytes32 receiptRoot,
        uint256 paidToProvider,
        uint256 refundedToFunder,
        uint256 fee
    );

    /// @notice `closer` closed the channel unilaterally with the ticket (`seq`, `amount`, `receiptRoot`);
    /// anyone holding a newer ticket may challenge until `finalizesAt`. The fields are the ClosingState.
    event ChannelClosing(
        bytes32 indexed sessionId,
        address indexed closer,
        uint64 seq,
        uint128 amount,
        bytes32 receiptRoot,
        uint128 deposit,
        uint16 feeBps,
        uint40 finalizesAt
    );

    /// @notice A newer ticket replaced the recorded one; the window still ends at `finalizesAt`.
    event ChannelChallenged(
        bytes32 indexed sessionId,
        address indexed challenger,
        uint64 seq,
        uint128 amount,
        bytes32 receiptRoot,
        uint40 finalizesAt
    );

    /// @notice The dispute contract froze finalisation; `openCases` cases are now open on the session.
    event ChannelFrozen(bytes32 indexed sessionId, uint8 openCases);

    /// @notice A dispute case on the session ended; `refund` was taken off what the provider would be paid
    /// (it goes to the funder at finalisation) and `amount` is the provider's recorded amount now.
    event ChannelReleased(bytes32 indexed sessionId, uint8 openCases, uint128 refund, uint128 amount);

    /// @notice The payer revoked one session key of the session at `revokedAt` (this block's time). Its
    /// tickets still settle in a close or challenge submitted before `revokedAt + challengeDuration`.
    event SessionKeyRevoked(bytes32 indexed sessionId, address indexed key, uint40 revokedAt);

    /// @notice The payer revoked every session key it granted in epoch `epoch - 1`, on every channel, at
    /// `revokedAt`; grants must now name `epoch`. Same grace as `SessionKeyRevoked`.
    event SessionKeysRevoked(address indexed payer, uint64 epoch, uint40 revokedAt);

    /// @notice A contract-wallet payer's session-key grant was accepted by the wallet (ERC-1271) and recorded: the
    /// key's tickets settle under it even if the wallet later refuses the same signature (decision 0035).
    event WalletSessionKeyRegistered(bytes32 indexed sessionId, address indexed key, bytes32 grantDigest);

    /// @notice Governance set the routing fee (basis points of the provider's payout) and the treasury.
    event RoutingFeeSet(uint16 feeBps, address treasury);

    /// @notice Accrued fees in `asset` were paid to the treasury (or, if the token refused the transfer,
    /// credited to its claimable balance, announced by a `PayoutDeferred` in the same transaction).
    event FeesWithdrawn(address indexed asset, address indexed treasury, uint256 amount);

    /// @notice `amount` of `asset` that the escrow held beyond everything it owes (a direct transfer, a token
    /// that credited it, ETH forced in) was sent to the treasury.
    event SurplusSwept(address indexed asset, address indexed treasury, uint256 amount);

    /// @notice A payout of `amount` of the ERC-20 `asset` to `account` reverted (a blocklist, a paused
    /// token); it was credited to `account`'s claimable balance instead, so nobody else's payout waits.
    /// The same event is declared by GigEscrow and the DisputeManager.
    event PayoutDeferred(address indexed asset, address indexed account, uint256 amount);

    /// @notice `account` withdrew its claimable balance of `asset`.
    event Claimed(address indexed asset, address indexed account, uint256 amount);

    /// @notice `by` (the payer or the funder) anchored the provider's signed ReceiptCommit over the first
    /// `leafCount` receipts of a closing or cooperatively settled session: a dispute case may now prove a
    /// receipt against `root` as well as against the recorded root (decision 0003).
    event ReceiptCommitAnchored(bytes32 indexed sessionId, address indexed by, uint64 leafCount, bytes32 root);

    /*//////////////////////////////////////////////////////////////
                                 ERRORS
    //////////////////////////////////////////////////////////////*/

    /// @notice A party of the terms is the zero address (`role`: 0 payer, 1 provider, 2 funder).
    error ZeroAddressParty(uint8 role);

    /// @notice The challenge window must lie in [`min`, `max`] seconds.
    error ChallengeDurationOutOfRange(uint64 challengeDuration, uint64 min, uint64 max);

    /// @notice A channel cannot be opened or topped up with nothing.
    error ZeroDeposit();

    /// @notice A native-ETH call must send exactly `amount` as `msg.value`.
    error EthValueMismatch(uint256 value, uint256 amount);

    /// @notice ETH was sent to a call for an ERC-20 channel.
    error UnexpectedEth(uint256 value);

    /// @notice A channel with these terms was already opened in this block (by their funder: nobody else
    /// may open them).
    error SessionExists(bytes32 sessionId);

    /// @notice Only the funder named in the terms may open a channel on them, so nobody can occupy a
    /// session id with a copy of someone else's terms.
    error NotTheFunder(bytes32 sessionId, address caller, address funder);

    /// @notice No open channel has this id (never opened, different terms, closing, or already settled).
    error ChannelNotOpen(bytes32 sessionId);

    /// @notice The caller's own top-up credited `received`, less than the `minReceived` it asked for
    /// (a fee-on-transfer token took more than the caller accepts).
    error DepositBelowMinimum(bytes32 sessionId, uint256 received, uint256 minReceived);

    /// @notice A channel's deposit cannot exceed `type(uint128).max`.
    error DepositOverflow(bytes32 sessionId, uint256 deposit);

    /// @notice A settlement cannot pay the provider more than the channel holds.
    error AmountExceedsDeposit(bytes32 sessionId, uint256 amount, uint256 deposit);

    /// @notice Only the channel's payer, provider or funder may do this.
    error NotAParty(bytes32 sessionId, address caller);

    /// @notice Only the channel's payer may do this.
    error NotThePayer(bytes32 sessionId, address caller);

    /// @notice The channel is not in its closing phase (never closed, still open, or settled).
    error ChannelNotClosing(bytes32 sessionId);

    /// @notice The re-supplied ClosingState is not the one the channel recorded.
    error ClosingStateMismatch(bytes32 sessionId);

    /// @notice A "no ticket" close (seq 0) must carry a zero amount and a zero root.
    error EmptyTicketNotZero(uint128 amount, bytes32 receiptRoot);

    /// @notice A challenge must raise the recorded cumulative amount (and never carry seq 0): a ticket with
    /// the recorded amount, whatever its seq, cannot replace the recorded ticket and its receipt root.
    error TicketNotNewer(bytes32 sessionId, uint64 seq, uint64 recordedSeq);

    /// @notice A challenge may not lower the cumulative amount: the highest amount the payer signed wins.
    error TicketAmountDecreased(bytes32 sessionId, uint128 amount, uint128 recordedAmount);

    /// @notice The challenge window ended at `finalizesAt`; challenges are over.
    error ChallengeWindowClosed(bytes32 sessionId, uint40 finalizesAt);

    /// @notice The challenge window runs until `finalizesAt`; finalisation must wait.
    error ChallengeWindowOpen(bytes32 sessionId, uint40 finalizesAt);

    /// @notice Dispute cases are open on the session; finalisation waits for their resolution.
    error FrozenByDispute(bytes32 sessionId, uint8 openCases);

    /// @notice No dispute case is open on the session.
    error ChannelNotFrozen(bytes32 sessionId);

    /// @notice At most 15 dispute cases can be open on one session at a time.
    error TooManyOpenCases(bytes32 sessionId);

    /// @notice The ticket's signer is not the payer (a session key's ticket goes through `closeUnilateralWithKey`
    /// or `challengeWithKey`, with its grant).
    error UnauthorizedTicketSigner(bytes32 sessionId, address signer);

    /// @notice The registry given to the constructor holds no code.
    error RegistryNotContract(address registry);

    /// @notice The grant was not signed by the session's payer (`signer` recovered instead).
    error UnauthorizedSessionKey(bytes32 sessionId, address key, address signer);

    /// @notice The session key was revoked at `revokedAt` and the grace after it (the channel's challenge
    /// duration) has passed, so its tickets no longer settle.
    error RevokedSessionKey(address key, uint40 revokedAt);

    /// @notice The grant names revocation epoch `keyEpoch`, which the payer has not reached (`currentEpoch`).
    error SessionKeyEpochAhead(address key, uint64 keyEpoch, uint64 currentEpoch);

    /// @notice The ticket authorises more than the session key's spend cap.
    error SessionKeySpendCapExceeded(address key, uint128 amount, uint128 spendCap);

    /// @notice A key-signed ticket must be a real ticket (seq > 0): "no ticket" closes need no key.
    error EmptyKeyTicket(bytes32 sessionId);

    /// @notice The routing fee may not exceed `maxBps`.
    error RoutingFeeTooHigh(uint16 feeBps, uint16 maxBps);

    /// @notice The treasury may not be the zero address.
    error ZeroTreasury();

    /// @notice The signature does not recover to any address.
    error InvalidSignature();

    /// @notice Only the payer or the funder (the side that can dispute) may anchor a receipt commit.
    error NotPayerOrFunder(bytes32 sessionId, address caller);

    /// @notice A receipt commit is anchored only on a session a case can still be opened on: one closing
    /// within its challenge window, or one settled cooperatively.
    error CommitNotAnchorable(bytes32 sessionId, Phase phase);

    /// @notice A receipt commit over no receipts commits nothing a case could prove.
    error EmptyReceiptCommit(bytes32 sessionId);

    /// @notice A wallet entry point's calldata is not a valid ABI encoding (a field out of range at `offset`).
    error InvalidCalldata(uint256 offset);

    /// @notice The call named no function of the escrow (neither `IGasEscrow` nor `IGasEscrowWallets`).
    error UnknownFunction(bytes4 selector);

    /// @notice The contract wallet `wallet` did not approve `digest` with the signature given: its ERC-1271
    /// `isValidSignature` answered anything but the magic value (or `wallet` has no code: use the plain path).
    error WalletSignatureRefused(address wallet, bytes32 digest);

    /// @notice A wallet-signed ticket must name a step (`seq > 0`); a close with no ticket is `closeUnilateral`'s.
    error EmptyWalletTicket(bytes32 sessionId);

    /// @notice The signature's `s` is in the upper half of the curve order (malleable form).
    error SignatureNotLowS(bytes32 s);

    /// @notice The signature is valid but made by `recovered`, not by `expected`.
    error SignerMismatch(address expected, address recovered);

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
