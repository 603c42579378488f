// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {DisputableAssets} from "./governance/DisputableAssets.sol";
import {SafeTransferLib} from "solady/src/utils/SafeTransferLib.sol";
import {ReentrancyGuardTransient} from "solady/src/utils/ReentrancyGuardTransient.sol";
import {IGigEscrow} from "./interfaces/IGigEscrow.sol";
import {IProviderRegistry} from "./interfaces/IProviderRegistry.sol";
import {TryTransfer} from "./libraries/TryTransfer.sol";

/// @title GigEscrow
/// @notice Escrow for outcome-based work: a client locks native ETH or an ERC-20 as the bounty of a gig bound
/// to the hash of its Intent Contract Schema; a provider with an active SLA bond in the ProviderRegistry
/// accepts and delivers; the bounty goes to the provider on the client's acceptance or when the dispute window
/// passes quietly, back to the client when the deadline passes undelivered, and is split by the
/// DisputeManager (`DISPUTE_ROLE`) when the client disputes inside the window. No fee is taken on gigs.
/// @dev Every gig's status moves forward only (Funded → Accepted → Delivered → Disputed, each optional after
/// Funded, and then to Released or Refunded for good), with one exception that moves no value: the client
/// may dismiss the tentative provider of an open gig (Accepted → Funded) before it delivers. Every
/// settlement writes the final status and emits `GigSettled` before it pays, and every function that moves
/// value shares one reentrancy guard, so nothing can pay twice: the escrow's balance of each asset is always
/// the sum of the amounts of its gigs that are not final plus the claimable balances. ETH is force-sent and
/// a refused ERC-20 payout becomes claimable, so no recipient can block the other party's payout.
///
/// Roles: `DEFAULT_ADMIN_ROLE` goes to the `governance` address given to the constructor, which later grants
/// `DISPUTE_ROLE` to the DisputeManager.
contract GigEscrow is IGigEscrow, DisputableAssets, ReentrancyGuardTransient {
    /*//////////////////////////////////////////////////////////////
                               CONSTANTS
    //////////////////////////////////////////////////////////////*/

    /// @notice May freeze delivered gigs inside their dispute window and resolve frozen ones: the
    /// DisputeManager.
    bytes32 public constant DISPUTE_ROLE = keccak256("DISPUTE_ROLE");

    /// @notice Shortest dispute window a gig may bind: long enough for a client's watcher to see a delivery.
    uint40 public constant MIN_DISPUTE_WINDOW = 1 minutes;

    /// @notice Longest dispute window: bounds how long a quiet delivery keeps the provider waiting.
    uint40 public constant MAX_DISPUTE_WINDOW = 30 days;

    /// @notice Furthest ahead a deadline may lie: bounds how long an unaccepted or undelivered gig can lock
    /// the client's funds.
    uint256 public constant MAX_DEADLINE = 365 days;

    /// @notice After this long frozen, a disputed gig can be released to the provider even if the dispute was
    /// never resolved, so a broken or captured dispute contract cannot lock funds forever.
    uint256 public constant MAX_FREEZE_DURATION = 180 days;

    /*//////////////////////////////////////////////////////////////
                                STORAGE
    //////////////////////////////////////////////////////////////*/

    /// @dev A gig as stored: the fields of `IGigEscrow.Gig` in another order, so that everything a
    /// transition reads or writes apart from the parties shares the first word (the interface's order spreads
    /// status and the window over two words, which costs `deliver` a second write). 7 words:
    ///   0: amount (128) | deadline (40) | disputeWindow (40) | windowEndsAt (40) | status (8)
    ///   1: client       2: provider | frozenAt (40) | tentative (8) | sponsored (8)      3: asset
    ///   4: icsHash      5: deliverableHash                6: receiptRoot
    /// uint128 amounts exceed any asset's supply worth escrowing; uint40 times last until year 36812.
    struct GigRecord {
        uint128 amount;
        uint40 deadline;
        uint40 disputeWindow;
        uint40 windowEndsAt;
        Status status;
        address client;
        address provider;
        uint40 frozenAt;
        bool tentative;
        /// @dev Funded with `fundFor` by someone else: the funder is in `_sponsors`. Kept beside the provider,
        /// which every settlement reads anyway, so an ordinary gig's refund costs no extra slot read.
        bool sponsored;
        address asset;
        bytes32 icsHash;
        bytes32 deliverableHash;
        bytes32 receiptRoot;
    }

    /// @notice The ProviderRegistry whose active providers may accept gigs.
    IProviderRegistry public immutable registry;

    mapping(uint64 gigId => GigRecord) private _gigs;

    /// @dev The funder of a sponsored gig (`fundFor`), who receives its refunds; unset when it is the client,
    /// so an ordinary gig pays for no eighth word.
    mapping(uint64 gigId => address funder) private _sponsors;

    uint64 private _gigCount;

    /// @dev ERC-20 payouts the token refused (a blocklisted recipient), owed to the recipient until `claim`.
    mapping(address asset => mapping(address account => uint256 amount)) private _claimable;

    /// @param governance Receives `DEFAULT_ADMIN_ROLE` (and with it the power to grant `DISPUTE_ROLE`).
    /// @param registry_ The ProviderRegistry consulted by `accept`.
    constructor(address governance, address registry_) {
        if (governance == address(0) || registry_ == address(0)) revert ZeroAddress();
        registry = IProviderRegistry(registry_);
        _grantRole(DEFAULT_ADMIN_ROLE, governance);
    }

    /*//////////////////////////////////////////////////////////////
                              CLIENT AND PROVIDER
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IGigEscrow
    /// @dev For an ERC-20 the transfer comes before the gig is written: only the balance change says what to
    /// escrow. The reentrancy guard keeps a hostile token from re-entering in between.
    function fund(
        address provider,
        address asset,
        uint128 amount,
        bytes32 icsHash,
        uint40 deadline,
        uint40 disputeWindow
    ) external payable nonReentrant returns (uint64 gigId) {
        return _fund(msg.sender, provider, asset, amount, icsHash, deadline, disputeWindow);
    }

    /// @inheritdoc IGigEscrow
    function fundFor(
        address client,
        address provider,
        address asset,
        uint128 amount,
        bytes32 icsHash,
        uint40 deadline,
        uint40 disputeWindow
    ) external payable nonReentrant returns (uint64 gigId) {
        if (client == address(0)) revert ZeroClient();
        gigId = _fund(client, provider, asset, amount, icsHash, deadline, disputeWindow);
        if (client != msg.sender) {
            _gigs[gigId].sponsored = true;
            _sponsors[gigId] = msg.sender;
            emit GigSponsored(gigId, msg.sender);
        }
    }

    /// @dev Pulls the bounty from the caller and writes the gig for `client`.
    function _fund(
        address client,
        address provider,
        address asset,
        uint128 amount,
        bytes32 icsHash,
        uint40 deadline,
        uint40 disputeWindow
    ) private returns (uint64 gigId) {
        if (amount == 0) revert ZeroAmount();
        if (icsHash == bytes32(0)) revert ZeroIcsHash();
        uint256 latest = block.timestamp + MAX_DEADLINE;
        if (deadline <= block.timestamp || deadline > latest) {
            revert DeadlineOutOfRange(deadline, block.timestamp, latest);
        }
        if (disputeWindow < MIN_DISPUTE_WINDOW || disputeWindow > MAX_DISPUTE_WINDOW) {
            revert DisputeWindowOutOfRange(disputeWindow, MIN_DISPUTE_WINDOW, MAX_DISPUTE_WINDOW);
        }

        _requireDisputable(asset);
        uint256 received = asset == address(0) ? _receiveEth(amount) : _receiveToken(asset, amount);
        if (received == 0 || received > type(uint128).max) revert AmountReceivedOutOfRange(received);

        // Cannot overflow: every gig costs a transaction, and 2^64 of them will never be mined.
        unchecked {
            gigId = ++_gigCount;
        }
        GigRecord storage g = _gigs[gigId];
        g.amount = uint128(received);
        g.deadline = deadline;
        g.disputeWindow = disputeWindow;
        g.status = Status.Funded;
        g.client = client;
        // Zero fields are left unwritten: an open gig has no provider yet, and an ETH gig no asset.
        if (provider != address(0)) g.provider = provider;
        if (asset != address(0)) g.asset = asset;
        g.icsHash = icsHash;
        emit GigFunded(gigId, client, provider, asset, uint128(received), icsHash, deadline, disputeWindow);
    }

    /// @inheritdoc IGigEscrow
    function cancel(uint64 gigId) external nonReentrant {
        GigRecord storage g = _requireStatus(gigId, Status.Funded);
        if (msg.sender != g.client) revert NotTheClient(gigId, msg.sender);
        _settle(gigId, g, Status.Refunded, 0, g.amount);
    }

    /// @inheritdoc IGigEscrow
    /// @dev Accepting is allowed up to and including the deadline second (a refund needs it to have passed).
    function accept(uint64 gigId) external {
        GigRecord storage g = _requireStatus(gigId, Status.Funded);
        uint40 deadline = g.deadline;
        if (block.timestamp > deadline) revert DeadlinePassed(gigId, deadline);
        address named = g.provider;
        if (named != address(0) && named != msg.sender) revert NotTheProvider(gigId, msg.sender);
        // Calls into the registry fixed at construction: it cannot re-enter.
        if (!registry.isActiveProvider(msg.sender)) revert NotAnActiveProvider(msg.sender);

        g.status = Status.Accepted;
        // An open gig's provider is tentative (same word as the provider: no extra write) until the client
        // confirms it; until then the client may dismiss it (decision 0017).
        if (named == address(0)) (g.provider, g.tentative) = (msg.sender, true);
        emit GigAccepted(gigId, msg.sender);
        // The provider's bond stays in place until the gig settles (so until no case can be opened on it).
        registry.lockBond(IProviderRegistry.Role.Provider, msg.sender);
    }

    /// @inheritdoc IGigEscrow
    /// @dev Only while `Accepted`: once the provider delivered there is nothing left to confirm.
    function confirmProvider(uint64 gigId) external {
        GigRecord storage g = _requireStatus(gigId, Status.Accepted);
        if (msg.sender != g.client) revert NotTheClient(gigId, msg.sender);
        if (!g.tentative) revert ProviderNotTentative(gigId);
        g.tentative = false;
        emit GigProviderConfirmed(gigId, g.provider);
    }

    /// @inheritdoc IGigEscrow
    /// @dev Only while `Accepted`: a delivery (or a passed deadline, then `refund`) ends the client's choice.
    function dismissProvider(uint64 gigId) external {
        GigRecord storage g = _requireStatus(gigId, Status.Accepted);
        if (msg.sender != g.client) revert NotTheClient(gigId, msg.sender);
        if (!g.tentative) revert ProviderNotTentative(gigId);
        address dismissed = g.provider;
        g.status = Status.Funded;
        (g.provider, g.tentative) = (address(0), false);
        emit GigProviderDismissed(gigId, dismissed);
        // The acceptance locked the dismissed provider's bond; no liability remains.
        registry.unlockBond(IProviderRegistry.Role.Provider, dismissed);
    }

    /// @inheritdoc IGigEscrow
    /// @dev Allowed up to and including the deadline second. `receiptRoot` may be zero (no receipts).
    function deliver(uint64 gigId, bytes32 deliverableHash, bytes32 receiptRoot) external {
        GigRecord storage g = _requireStatus(gigId, Status.Accepted);
        if (msg.sender != g.provider) revert NotTheProvider(gigId, msg.sender);
        uint40 deadline = g.deadline;
        if (block.timestamp > deadline) revert DeadlinePassed(gigId, deadline);
        if (deliverableHash == bytes32(0)) revert ZeroDeliverableHash();

        // Cannot overflow: now <= deadline <= funding time + 365 days, and the window is at most 30 days.
        uint40 windowEndsAt;
        unchecked {
            windowEndsAt = uint40(block.timestamp + g.disputeWindow);
        }
        g.status = Status.Delivered;
        g.windowEndsAt = windowEndsAt;
        g.deliverableHash = deliverableHash;
        if (receiptRoot != bytes32(0)) g.receiptRoot = receiptRoot;
        emit GigDelivered(gigId, deliverableHash, receiptRoot, windowEndsAt);
    }

    /// @inheritdoc IGigEscrow
    function acceptDelivery(uint64 gigId) external nonReentrant {
        GigRecord storage g = _requireStatus(gigId, Status.Delivered);
        if (msg.sender != g.client) revert NotTheClient(gigId, msg.sender);
        _settle(gigId, g, Status.Released, g.amount, 0);
    }

    /// @inheritdoc IGigEscrow
    /// @dev A delivered gig reverts with `DisputeWindowOpen` before `windowEndsAt`; a frozen gig reverts with
    /// `WrongStatus(gigId, Disputed)` until `frozenAt + MAX_FREEZE_DURATION`.
    function release(uint64 gigId) external nonReentrant {
        GigRecord storage g = _gigs[gigId];
        Status status = g.status;
        if (status == Status.Delivered) {
            uint40 windowEndsAt = g.windowEndsAt;
            if (block.timestamp < windowEndsAt) revert DisputeWindowOpen(gigId, windowEndsAt);
        } else if (status == Status.Disputed) {
            if (block.timestamp < uint256(g.frozenAt) + MAX_FREEZE_DURATION) revert WrongStatus(gigId, status);
        } else {
            _revertStatus(gigId, status);
        }
        _settle(gigId, g, Status.Released, g.amount, 0);
    }

    /// @inheritdoc IGigEscrow
    function refund(uint64 gigId) external nonReentrant {
        GigRecord storage g = _gigs[gigId];
        Status status = g.status;
        if (status != Status.Funded && status != Status.Accepted) _revertStatus(gigId, status);
        uint40 deadline = g.deadline;
        if (block.timestamp <= deadline) revert DeadlineNotPassed(gigId, deadline);
        _settle(gigId, g, Status.Refunded, 0, g.amount);
    }

    /// @inheritdoc IGigEscrow
    /// @dev ETH is never deferred (it is force-sent), but a claim of `address(0)` still works, so the
    /// function treats every asset alike.
    function claim(address asset) external nonReentrant returns (uint256 amount) {
        amount = _claimable[asset][msg.sender];
        if (amount == 0) return 0;
        _claimable[asset][msg.sender] = 0;
        emit Claimed(asset, msg.sender, amount);
        if (asset == address(0)) {
            SafeTransferLib.forceSafeTransferETH(msg.sender, amount);
        } else {
            SafeTransferLib.safeTransfer(asset, msg.sender, amount);
        }
    }

    /*//////////////////////////////////////////////////////////////
                              DISPUTE HOOKS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IGigEscrow
    /// @dev Reverts with `DisputeWindowClosed` from `windowEndsAt` on: from then on the gig can be released.
    function freeze(uint64 gigId) external onlyRole(DISPUTE_ROLE) {
        GigRecord storage g = _requireStatus(gigId, Status.Delivered);
        uint40 windowEndsAt = g.windowEndsAt;
        if (block.timestamp >= windowEndsAt) revert DisputeWindowClosed(gigId, windowEndsAt);
        g.status = Status.Disputed;
        g.frozenAt = uint40(block.timestamp);
        emit GigFrozen(gigId);
    }

    /// @inheritdoc IGigEscrow
    /// @dev Returns false for any gig that is not frozen — never funded, or already released after
    /// `MAX_FREEZE_DURATION` — so a late ruling cannot revert the DisputeManager's own bookkeeping.
    function resolve(uint64 gigId, uint128 refundAmount)
        external
        onlyRole(DISPUTE_ROLE)
        nonReentrant
        returns (bool applied)
    {
        GigRecord storage g = _gigs[gigId];
        if (g.status != Status.Disputed) return false;
        uint128 amount = g.amount;
        if (refundAmount > amount) revert RefundExceedsAmount(gigId, refundAmount, amount);
        uint128 toProvider;
        // Cannot underflow: refundAmount <= amount checked above.
        unchecked {
            toProvider = amount - refundAmount;
        }
        _settle(gigId, g, toProvider == 0 ? Status.Refunded : Status.Released, toProvider, refundAmount);
        return true;
    }

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IGigEscrow
    function gigOf(uint64 gigId) external view returns (Gig memory) {
        GigRecord storage g = _gigs[gigId];
        return Gig({
            client: g.client,
            deadline: g.deadline,
            disputeWindow: g.disputeWindow,
            status: g.status,
            provider: g.provider,
            windowEndsAt: g.windowEndsAt,
            frozenAt: g.frozenAt,
            asset: g.asset,
            amount: g.amount,
            icsHash: g.icsHash,
            deliverableHash: g.deliverableHash,
            receiptRoot: g.receiptRoot
        });
    }

    /// @inheritdoc IGigEscrow
    function funderOf(uint64 gigId) external view returns (address) {
        GigRecord storage g = _gigs[gigId];
        return g.sponsored ? _sponsors[gigId] : g.client;
    }

    /// @inheritdoc IGigEscrow
    function gigCount() external view returns (uint64) {
        return _gigCount;
    }

    /// @inheritdoc IGigEscrow
    function isProviderTentative(uint64 gigId) external view returns (bool) {
        GigRecord storage g = _gigs[gigId];
        return g.tentative && g.status == Status.Accepted;
    }

    /// @inheritdoc IGigEscrow
    function claimableOf(address asset, address account) external view returns (uint256) {
        return _claimable[asset][account];
    }

    /*//////////////////////////////////////////////////////////////
                                INTERNAL
    //////////////////////////////////////////////////////////////*/

    /// @dev The gig, which must be in `required` status.
    function _requireStatus(uint64 gigId, Status required) private view returns (GigRecord storage g) {
        g = _gigs[gigId];
        Status status = g.status;
        if (status != required) _revertStatus(gigId, status);
    }

    /// @dev Always reverts: `UnknownGig` for a gig never funded, `WrongStatus` otherwise.
    function _revertStatus(uint64 gigId, Status status) private pure {
        if (status == Status.None) revert UnknownGig(gigId);
        revert WrongStatus(gigId, status);
    }

    /// @dev Ends the gig for good: writes its final status and emits `GigSettled` before either payout.
    function _settle(uint64 gigId, GigRecord storage g, Status finalStatus, uint128 toProvider, uint128 toClient)
        private
    {
        // A gig that was accepted holds a lock on its provider's bond; a cancelled or unaccepted one does not.
        bool locked = g.status != Status.Funded;
        g.status = finalStatus;
        emit GigSettled(gigId, finalStatus, toProvider, toClient);
        if (locked) registry.unlockBond(IProviderRegistry.Role.Provider, g.provider);
        address asset = g.asset;
        _pay(asset, g.provider, toProvider);
        if (toClient != 0) _pay(asset, g.sponsored ? _sponsors[gigId] : g.client, toClient);
    }

    function _receiveEth(uint256 amount) private view returns (uint256) {
        if (msg.value != amount) revert EthValueMismatch(msg.value, amount);
        return amount;
    }

    /// @dev Pulls `amount` of `token` from the caller; reverts (`TransferAmountMismatch`) unless exactly
    /// `amount` arrived: a fee-on-transfer token could never back a case (`BondShortfall`), so it is refused.
    function _receiveToken(address token, uint256 amount) private returns (uint256 received) {
        if (msg.value != 0) revert UnexpectedEth(msg.value);
        uint256 before = SafeTransferLib.balanceOf(token, address(this));
        SafeTransferLib.safeTransferFrom(token, msg.sender, address(this), amount);
        received = SafeTransferLib.balanceOf(token, address(this)) - before;
        _requireExact(token, amount, received);
    }

    /// @dev Sends a payout after all state changes. ETH is force-sent (a recipient that reverts receives it
    /// anyway through a self-destructing forwarder), so a hostile party cannot block a settlement. An ERC-20
    /// transfer that fails is credited to the recipient's claimable balance instead (decision 0016); every
    /// caller holds the reentrancy guard, so a token re-entering during the attempt cannot claim meanwhile.
    function _pay(address asset, address to, uint256 amount) private {
        if (amount == 0) return;
        if (asset == address(0)) {
            SafeTransferLib.forceSafeTransferETH(to, amount);
        } else if (!TryTransfer.tryTransfer(asset, to, amount)) {
            _claimable[asset][to] += amount;
            emit PayoutDeferred(asset, to, amount);
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
