// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IGasEscrowTypes
/// @notice The structs, events and errors of the GasEscrow's channels, declared once here and inherited by
/// `IGasEscrow` (whose functions use them) and by the escrow's storage base, which the contract-wallet module
/// shares (decision 0035). They are public API
/// (`IGasEscrowTypes.X` from outside).
interface IGasEscrowTypes {
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

    /// @notice The contract wallet `wallet` did not approve `digest` with the signature given: its ERC-1271
    /// `isValidSignature` answered anything but the magic value (or `wallet` has no code: use the plain path).
    error WalletSignatureRefused(address wallet, bytes32 digest);

    /// @notice A wallet-signed ticket must name a step (`seq > 0`); a close with no ticket is `closeUnilateral`'s.
    error EmptyWalletTicket(bytes32 sessionId);

    /// @notice The signature's `s` is in the upper half of the curve order (malleable form).
    error SignatureNotLowS(bytes32 s);

    /// @notice The signature is valid but made by `recovered`, not by `expected`.
    error SignerMismatch(address expected, address recovered);
}
