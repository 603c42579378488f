// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IGigEscrow
/// @notice Outcome-based work: a client escrows a bounty bound to the hash of an Intent Contract Schema
/// (canonical JSON: max price, deadline, rubric, penalty schedule, and the hash of the test suite and its
/// runner). A bonded provider accepts and delivers a deliverable hash and a receipt root; the bounty is
/// released on the client's acceptance or when the dispute window passes quietly, refunded when the deadline
/// passes undelivered, and frozen by the DisputeManager when the client disputes inside the window.
/// Every error, event and struct of the gig escrow lives here: they are public API.
interface IGigEscrow {
    /*//////////////////////////////////////////////////////////////
                                 STRUCTS
    //////////////////////////////////////////////////////////////*/

    /// @notice Where a gig is in its life. `Released` and `Refunded` are final.
    enum Status {
        None,
        Funded,
        Accepted,
        Delivered,
        Disputed,
        Released,
        Refunded
    }

    /// @notice A gig as stored. `provider` is zero until accepted when the gig was funded open to any
    /// bonded provider. `windowEndsAt` is set at delivery; `frozenAt` when a dispute freezes the gig.
    struct Gig {
        address client;
        uint40 deadline;
        uint40 disputeWindow;
        Status status;
        address provider;
        uint40 windowEndsAt;
        uint40 frozenAt;
        address asset;
        uint128 amount;
        bytes32 icsHash;
        bytes32 deliverableHash;
        bytes32 receiptRoot;
    }

    /*//////////////////////////////////////////////////////////////
                                 EVENTS
    //////////////////////////////////////////////////////////////*/

    /// @notice A client escrowed `amount` (what actually arrived) of `asset` (zero for ETH) for a gig.
    event GigFunded(
        uint64 indexed gigId,
        address indexed client,
        address indexed provider,
        address asset,
        uint128 amount,
        bytes32 icsHash,
        uint40 deadline,
        uint40 disputeWindow
    );

    /// @notice `funder` paid for the gig on the client's behalf (`fundFor`): refunds go to `funder`.
    event GigSponsored(uint64 indexed gigId, address indexed funder);

    /// @notice `provider` accepted the gig.
    event GigAccepted(uint64 indexed gigId, address indexed provider);

    /// @notice The provider delivered; the client may dispute until `windowEndsAt`.
    event GigDelivered(uint64 indexed gigId, bytes32 deliverableHash, bytes32 receiptRoot, uint40 windowEndsAt);

    /// @notice A dispute froze the gig's payout until it is resolved.
    event GigFrozen(uint64 indexed gigId);

    /// @notice The gig paid out for good: `toProvider` to the provider and `toClient` back to the client
    /// (to its funder, for a sponsored gig).
    event GigSettled(uint64 indexed gigId, Status status, uint128 toProvider, uint128 toClient);

    /// @notice The client confirmed the provider that accepted its open gig: it can no longer be dismissed.
    event GigProviderConfirmed(uint64 indexed gigId, address indexed provider);

    /// @notice The client dismissed the unconfirmed provider of its open gig before delivery; the gig is
    /// `Funded` and open again (the client may cancel it or let another provider accept).
    event GigProviderDismissed(uint64 indexed gigId, address indexed provider);

    /// @notice A payout of `amount` of the ERC-20 `asset` to `account` reverted (a blocklist, a paused
    /// token); it was credited to `account`'s claimable balance instead, so nobody else's payout waits.
    /// The same event is declared by GasEscrow and the DisputeManager.
    event PayoutDeferred(address indexed asset, address indexed account, uint256 amount);

    /// @notice `account` withdrew its claimable balance of `asset`.
    event Claimed(address indexed asset, address indexed account, uint256 amount);

    /*//////////////////////////////////////////////////////////////
                                 ERRORS
    //////////////////////////////////////////////////////////////*/

    /// @notice The constructor was given the zero address as governance or registry.
    error ZeroAddress();

    /// @notice A gig must escrow something.
    error ZeroAmount();

    /// @notice A gig must bind a non-zero Intent Contract Schema hash.
    error ZeroIcsHash();

    /// @notice The deadline must lie after now and no further than `MAX_DEADLINE` ahead.
    error DeadlineOutOfRange(uint40 deadline, uint256 timestamp, uint256 max);

    /// @notice The dispute window must lie within [MIN_DISPUTE_WINDOW, MAX_DISPUTE_WINDOW].
    error DisputeWindowOutOfRange(uint40 disputeWindow, uint40 min, uint40 max);

    /// @notice The ETH sent does not equal the amount (for an ETH gig).
    error EthValueMismatch(uint256 value, uint256 amount);

    /// @notice ETH was sent with an ERC-20 gig.
    error UnexpectedEth(uint256 value);

    /// @notice The token credited nothing (or more than a uint128) for the amount pulled.
    error AmountReceivedOutOfRange(uint256 received);

    /// @notice No gig with this id exists.
    error UnknownGig(uint64 gigId);

    /// @notice The gig is not in the status this call requires.
    error WrongStatus(uint64 gigId, Status status);

    /// @notice Only the gig's client may do this.
    error NotTheClient(uint64 gigId, address caller);

    /// @notice A sponsored gig's client may not be the zero address.
    error ZeroClient();

    /// @notice Only the gig's provider may do this.
    error NotTheProvider(uint64 gigId, address caller);

    /// @notice The caller is not a provider with an active SLA bond in the ProviderRegistry.
    error NotAnActiveProvider(address caller);

    /// @notice The gig's deadline has passed.
    error DeadlinePassed(uint64 gigId, uint40 deadline);

    /// @notice The gig's deadline has not passed yet.
    error DeadlineNotPassed(uint64 gigId, uint40 deadline);

    /// @notice A delivery must name a non-zero deliverable hash.
    error ZeroDeliverableHash();

    /// @notice The dispute window is still open: a release must wait until `windowEndsAt`.
    error DisputeWindowOpen(uint64 gigId, uint40 windowEndsAt);

    /// @notice The dispute window has closed (at `windowEndsAt`): too late to freeze the gig.
    error DisputeWindowClosed(uint64 gigId, uint40 windowEndsAt);

    /// @notice The refund exceeds the escrowed amount.
    error RefundExceedsAmount(uint64 gigId, uint128 refund, uint128 amount);

    /// @notice Only the unconfirmed provider of an open gig (one funded naming nobody) can be confirmed or
    /// dismissed: a named or confirmed provider cannot.
    error ProviderNotTentative(uint64 gigId);

    /*//////////////////////////////////////////////////////////////
                              CLIENT AND PROVIDER
    //////////////////////////////////////////////////////////////*/

    /// @notice Escrows `amount` of `asset` (zero for ETH, sent as `msg.value`) for a gig bound to `icsHash`.
    /// `provider` may be zero: then any active provider may accept. A fee-on-transfer token escrows what
    /// arrived. Requirements: amount and icsHash non-zero; now < deadline <= now + MAX_DEADLINE; dispute
    /// window in range.
    function fund(
        address provider,
        address asset,
        uint128 amount,
        bytes32 icsHash,
        uint40 deadline,
        uint40 disputeWindow
    ) external payable returns (uint64 gigId);

    /// @notice `fund` paid by the caller (the funder) for a gig whose client is `client` (issue 14): the
    /// client alone acts on the gig (cancel, confirm or dismiss, accept the delivery, dispute); every refund
    /// (cancel, deadline, dispute) goes to the funder. Emits `GigFunded` (naming the client) and
    /// `GigSponsored`. Requirements: those of `fund`, and a non-zero client.
    function fundFor(
        address client,
        address provider,
        address asset,
        uint128 amount,
        bytes32 icsHash,
        uint40 deadline,
        uint40 disputeWindow
    ) external payable returns (uint64 gigId);

    /// @notice Who receives the gig's refunds: its funder (the client unless it was funded with `fundFor`).
    function funderOf(uint64 gigId) external view returns (address);

    /// @notice The client takes a funded gig back before any provider accepted it.
    function cancel(uint64 gigId) external;

    /// @notice A provider with an active SLA bond takes the gig (the named provider, or anyone if none was
    /// named) before its deadline. The provider of an open gig is tentative until the client confirms it:
    /// until then (and until it delivers) the client may dismiss it.
    function accept(uint64 gigId) external;

    /// @notice The client confirms the tentative provider of its open gig (while `Accepted`), which can then
    /// no longer be dismissed (a provider asks for this before it invests in the work).
    function confirmProvider(uint64 gigId) external;

    /// @notice The client dismisses the tentative provider of its open gig that has not delivered: the gig
    /// returns to `Funded`, open to any provider, and the client may cancel it at once. This is what keeps
    /// a provider that accepts and never delivers from freezing the bounty until the deadline.
    function dismissProvider(uint64 gigId) external;

    /// @notice The provider delivers before the deadline; the dispute window starts now.
    function deliver(uint64 gigId, bytes32 deliverableHash, bytes32 receiptRoot) external;

    /// @notice The client accepts the delivery: the provider is paid at once.
    function acceptDelivery(uint64 gigId) external;

    /// @notice Anyone pays the provider once a delivery's dispute window passed without a dispute — or once a
    /// frozen gig has waited `MAX_FREEZE_DURATION`, so a broken dispute contract cannot lock it forever.
    function release(uint64 gigId) external;

    /// @notice Anyone refunds the client once the deadline passed without a delivery.
    function refund(uint64 gigId) external;

    /// @notice Pays the caller its claimable balance of `asset` (payouts the token refused earlier).
    /// A zero balance is a no-op; a transfer that still fails reverts and leaves the balance in place.
    /// @return amount What was paid.
    function claim(address asset) external returns (uint256 amount);

    /*//////////////////////////////////////////////////////////////
                              DISPUTE HOOKS
    //////////////////////////////////////////////////////////////*/

    /// @notice Freezes a delivered gig inside its dispute window. Only DISPUTE_ROLE.
    function freeze(uint64 gigId) external;

    /// @notice Ends a frozen gig: `refundAmount` (<= amount) goes to the client, the rest to the provider.
    /// Only DISPUTE_ROLE. @return applied False if the gig was no longer frozen (nothing changes).
    function resolve(uint64 gigId, uint128 refundAmount) external returns (bool applied);

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @notice The gig as stored (status `None` if it does not exist).
    function gigOf(uint64 gigId) external view returns (Gig memory);

    /// @notice How many gigs were ever funded; ids run from 1 to this.
    function gigCount() external view returns (uint64);

    /// @notice Whether the gig's provider accepted it open and the client has neither confirmed nor
    /// dismissed it yet (only then can `dismissProvider` apply, while the gig is `Accepted`).
    function isProviderTentative(uint64 gigId) external view returns (bool);

    /// @notice What `account` can `claim` in `asset`.
    function claimableOf(address asset, address account) external view returns (uint256);
}
