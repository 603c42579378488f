// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IProviderRegistry
/// @notice Where providers and arbitrators of the machine-labor market register their identity anchor and
/// post a bond (an arbitrator's is called its stake) in the settlement token. Bonds leave only through a
/// delayed unbonding, and stay slashable by the dispute contract until they are withdrawn. Every error,
/// event and struct of the registry lives here: they are public API.
/// @dev Identity anchor: `didHash` is `keccak256` of the DID string, `mldsaPublicKeyHash` is `keccak256` of the
/// 1,312-byte encoded ML-DSA-44 public key (FIPS 204). The registry records what an account claims; it cannot
/// check that the DID document names this account, so verifiers must check that binding off-chain.
interface IProviderRegistry {
    /*//////////////////////////////////////////////////////////////
                                 STRUCTS
    //////////////////////////////////////////////////////////////*/

    /// @notice The two kinds of registrant. Each has its own record and its own bond: an account may be
    /// both, with separate balances.
    enum Role {
        Provider,
        Arbitrator
    }

    /// @notice Where a bond's pending part stands (the active part has no phases: it is simply held).
    /// `None`: nothing pending. `Unbonding`: `pending > 0` and `block.timestamp < unlockAt`.
    /// `Withdrawable`: `pending > 0` and the delay has elapsed.
    enum UnbondPhase {
        None,
        Unbonding,
        Withdrawable
    }

    /// @notice One account's bond for one role, stored in one word. Layout (low bits first):
    ///   bits   0..103  active    bonded and counted towards the minimum
    ///   bits 104..207  pending   requested out, still slashable, withdrawable from `unlockAt`
    ///   bits 208..255  unlockAt  unix seconds; 0 exactly when `pending` is 0
    /// @dev `bond` keeps `active + pending <= type(uint104).max` (≈ 2.03e31 base units, 20 trillion tokens
    /// of 18 decimals, far above any bond), so moving value between the two parts can never overflow either.
    /// uint48 seconds last until the year 8,900,000.
    struct Bond {
        uint104 active;
        uint104 pending;
        uint48 unlockAt;
    }

    /// @notice A provider's advertisement. `didHash != 0` exactly when the provider is registered.
    /// @dev `endpoint` is stored (1..256 bytes) so that the matching engine can route from a view call alone;
    /// `capabilitiesHash` commits the canonical JSON of the hardware/software capabilities it advertises.
    struct ProviderRecord {
        string endpoint;
        bytes32 capabilitiesHash;
        bytes32 didHash;
        bytes32 mldsaPublicKeyHash;
    }

    /// @notice An arbitrator's identity and the judge runtime it has pinned. `didHash != 0` exactly when the
    /// arbitrator is registered.
    struct ArbitratorRecord {
        bytes32 judgeRuntimeHash;
        bytes32 didHash;
        bytes32 mldsaPublicKeyHash;
    }

    /*//////////////////////////////////////////////////////////////
                                 EVENTS
    //////////////////////////////////////////////////////////////*/

    /// @notice `provider` registered with this record (the full endpoint, so an indexer needs no storage read).
    event ProviderRegistered(
        address indexed provider,
        bytes32 indexed didHash,
        string endpoint,
        bytes32 capabilitiesHash,
        bytes32 mldsaPublicKeyHash
    );

    /// @notice `provider` replaced its record with this one.
    event ProviderUpdated(
        address indexed provider,
        bytes32 indexed didHash,
        string endpoint,
        bytes32 capabilitiesHash,
        bytes32 mldsaPublicKeyHash
    );

    /// @notice `arbitrator` registered with this record.
    event ArbitratorRegistered(
        address indexed arbitrator,
        bytes32 indexed didHash,
        bytes32 indexed judgeRuntimeHash,
        bytes32 mldsaPublicKeyHash
    );

    /// @notice `arbitrator` replaced its record with this one.
    event ArbitratorUpdated(
        address indexed arbitrator,
        bytes32 indexed didHash,
        bytes32 indexed judgeRuntimeHash,
        bytes32 mldsaPublicKeyHash
    );

    /// @notice `account` bonded `received` for `role` (what actually arrived, net of any transfer fee) and now
    /// holds `active` in that role's active bond.
    event Bonded(Role indexed role, address indexed account, uint256 received, uint256 active);

    /// @notice `account` moved `amount` of its `role` bond from active to pending. `pending` is the new total,
    /// all of it withdrawable from `unlockAt` (a new request restarts the delay for the whole pending part).
    event UnbondRequested(
        Role indexed role, address indexed account, uint256 amount, uint256 active, uint256 pending, uint64 unlockAt
    );

    /// @notice `account` moved its whole pending `amount` back to active, which is now `active`.
    event UnbondCancelled(Role indexed role, address indexed account, uint256 amount, uint256 active);

    /// @notice `account` withdrew its pending `amount` of its `role` bond.
    event Withdrawn(Role indexed role, address indexed account, uint256 amount);

    /// @notice `amount` of `account`'s `role` bond was slashed: `amount - fromPending` from the active part,
    /// `fromPending` from the pending part. `burned` (= floor(amount × burnBps / 10,000)) went to the burn
    /// address, `toBeneficiary` to `beneficiary`. `active` and `pending` are what the account holds after.
    event Slashed(
        Role indexed role,
        address indexed account,
        address indexed beneficiary,
        uint256 amount,
        uint256 fromPending,
        uint16 burnBps,
        uint256 burned,
        uint256 toBeneficiary,
        uint256 active,
        uint256 pending
    );

    /// @notice Governance set the minimum active bond of a provider and stake of an arbitrator.
    event MinimumsSet(uint256 minProviderBond, uint256 minArbitratorStake);

    /// @notice Governance set the delay between an unbond request and its withdrawal. Requests made before keep
    /// the `unlockAt` they were given.
    event UnbondingDelaySet(uint64 unbondingDelay);

    /// @notice Governance admitted `arbitrator` to the pool panels are drawn from.
    event ArbitratorAdmitted(address indexed arbitrator, uint256 poolSize);

    /// @notice Governance removed `arbitrator` from the pool (its stake stays bonded, locked and slashable).
    /// `poolSize` counts the members still admitted.
    event ArbitratorRemoved(address indexed arbitrator, uint256 poolSize);

    /// @notice A removed arbitrator's entry left the pool for good (`prune`), past every usable draw snapshot.
    event ArbitratorPruned(address indexed arbitrator);

    /// @notice A liability now holds `account`'s bond in `role` (a panel seat, an accepted gig, an open case).
    event BondLocked(Role indexed role, address indexed account, uint256 locks);

    /// @notice One liability on `account`'s bond in `role` ended; `locks` remain.
    event BondUnlocked(Role indexed role, address indexed account, uint256 locks);

    /// @notice `account`'s bond in `role` cannot be withdrawn before `heldUntil` (a settled session it answers
    /// for is still disputable until then).
    event BondHeld(Role indexed role, address indexed account, uint64 heldUntil);


    /*//////////////////////////////////////////////////////////////
                                 ERRORS
    //////////////////////////////////////////////////////////////*/

    /// @notice The constructor was given the zero address as governance.
    error ZeroGovernance();

    /// @notice The bond token must be a contract (this also rules out the zero address).
    error BondTokenNotContract(address token);

    /// @notice The unbonding delay must lie in [`min`, `max`] seconds.
    error UnbondingDelayOutOfRange(uint64 unbondingDelay, uint64 min, uint64 max);

    /// @notice The minimum bond of `role` must lie in [`min`, `max`].
    error MinimumOutOfRange(Role role, uint256 minimum, uint256 min, uint256 max);

    /// @notice A provider endpoint must be `min`..`max` bytes long.
    error EndpointLengthOutOfRange(uint256 length, uint256 min, uint256 max);

    /// @notice A provider must commit to its capabilities (the hash cannot be zero).
    error ZeroCapabilitiesHash();

    /// @notice An arbitrator must pin a judge runtime (the hash cannot be zero).
    error ZeroJudgeRuntimeHash();

    /// @notice The identity anchor needs a DID (the hash cannot be zero).
    error ZeroDidHash();

    /// @notice The identity anchor needs an ML-DSA-44 public key (the hash cannot be zero).
    error ZeroMldsaPublicKeyHash();

    /// @notice `account` is already registered as `role`; use the update function.
    error AlreadyRegistered(Role role, address account);

    /// @notice `account` is not registered as `role`.
    error NotRegistered(Role role, address account);

    /// @notice An amount of zero was given where something must move (bond, unbond, slash), or a bond
    /// transfer delivered nothing.
    error ZeroAmount();

    /// @notice A bond cannot hold more than `max` in total (active plus pending); this one would hold `total`.
    error BondExceedsMaximum(Role role, address account, uint256 total, uint256 max);

    /// @notice Only the active part can be unbonded: `requested` exceeds the `active` bond.
    error InsufficientActiveBond(Role role, address account, uint256 requested, uint256 active);

    /// @notice `account` has nothing pending in its `role` bond.
    error NothingToWithdraw(Role role, address account);

    /// @notice The pending bond unlocks at `unlockAt`; it is only `timestamp` now.
    error UnbondingNotElapsed(Role role, address account, uint256 unlockAt, uint256 timestamp);

    /// @notice The bond still answers for something settled (a cooperatively settled session in its dispute
    /// window) until `heldUntil`; it is only `timestamp` now. Whatever was requested before, it stays.
    error BondHeldUntil(Role role, address account, uint256 heldUntil, uint256 timestamp);

    /// @notice A slash of `amount` exceeds everything `account` holds for `role` (`held` = active + pending).
    error SlashExceedsBond(Role role, address account, uint256 amount, uint256 held);

    /// @notice The burnt share of a slash is at most `max` basis points.
    error BurnBpsOutOfRange(uint16 burnBps, uint16 max);

    /// @notice Slashed funds need somewhere to go: the beneficiary cannot be the zero address.
    error ZeroBeneficiary();

    /// @notice The bond cannot start unbonding or be withdrawn while a liability holds it (`locks` of them):
    /// an accepted or disputable gig, an open case against the provider, or a panel seat whose case is not final.
    error BondIsLocked(Role role, address account, uint256 locks);

    /// @notice Unlocking a bond that no liability holds.
    error BondNotLocked(Role role, address account);

    /// @notice `account` is already in the arbitrator pool.
    error AlreadyAdmitted(address account);

    /// @notice `account` is not in the arbitrator pool.
    error NotAdmitted(address account);

    /// @notice The arbitrator pool holds `max` arbitrators at most (draws read the whole pool).
    error PoolFull(uint256 max);

    /// @notice `account` is not a removed pool entry older than `SNAPSHOT_HORIZON` blocks.
    error NotPrunable(address account);

    /// @notice A draw snapshot was asked for a block that has not happened yet.
    error SnapshotInFuture(uint256 blockNumber, uint256 current);


    /*//////////////////////////////////////////////////////////////
                               REGISTRATION
    //////////////////////////////////////////////////////////////*/

    /// @notice Registers the caller as a provider.
    /// Requirements: not yet registered as a provider; `endpoint` 1..256 bytes; every hash non-zero.
    /// @dev Registration alone does not make a provider active: it must also `bond` at least the minimum.
    function registerProvider(
        string calldata endpoint,
        bytes32 capabilitiesHash,
        bytes32 didHash,
        bytes32 mldsaPublicKeyHash
    ) external;

    /// @notice Replaces the caller's provider record (endpoint moves, capability changes, key rotation).
    /// Requirements: registered as a provider; the same validation as `registerProvider`.
    function updateProvider(
        string calldata endpoint,
        bytes32 capabilitiesHash,
        bytes32 didHash,
        bytes32 mldsaPublicKeyHash
    ) external;

    /// @notice Registers the caller as an arbitrator running the judge runtime `judgeRuntimeHash`.
    /// Requirements: not yet registered as an arbitrator; every hash non-zero.
    function registerArbitrator(bytes32 judgeRuntimeHash, bytes32 didHash, bytes32 mldsaPublicKeyHash) external;

    /// @notice Replaces the caller's arbitrator record (a new judge runtime, key rotation).
    /// Requirements: registered as an arbitrator; every hash non-zero.
    function updateArbitrator(bytes32 judgeRuntimeHash, bytes32 didHash, bytes32 mldsaPublicKeyHash) external;

    /*//////////////////////////////////////////////////////////////
                                 BONDING
    //////////////////////////////////////////////////////////////*/

    /// @notice Posts or tops up the caller's `role` bond: pulls `amount` of the bond token from the caller
    /// (after `approve` or `permit`) and credits what actually arrived to the active part.
    /// Requirements: registered as `role`; `amount > 0` and something arrives; active + pending stays at most
    /// `type(uint104).max`.
    /// @return received The amount credited (less than `amount` for a fee-on-transfer token).
    function bond(Role role, uint256 amount) external returns (uint256 received);

    /// @notice Moves `amount` of the caller's active `role` bond to pending, withdrawable after the unbonding
    /// delay. A second request adds to pending and restarts the delay for all of it.
    /// Requirements: `0 < amount <= active`.
    /// WARNING: pending funds no longer count towards the minimum, yet stay slashable until withdrawn, so a
    /// provider cannot escape a dispute by unbonding.
    /// @return unlockAt When the pending part becomes withdrawable.
    function requestUnbond(Role role, uint256 amount) external returns (uint64 unlockAt);

    /// @notice Moves the caller's whole pending `role` bond back to active. With nothing pending this is a no-op
    /// (no event).
    function cancelUnbond(Role role) external;

    /// @notice Sends the caller its whole pending `role` bond.
    /// Requirements: something is pending and `block.timestamp >= unlockAt`.
    /// @return amount What was sent.
    function withdraw(Role role) external returns (uint256 amount);

    /// @notice Takes `amount` from `account`'s `role` bond — from the active part first, then from the pending
    /// part — and sends `amount × burnBps / 10,000` (rounded down) to the burn address, the rest to
    /// `beneficiary`.
    /// Requirements: the caller holds `SLASHER_ROLE`; `0 < amount <= active + pending`; `burnBps <= 10,000`;
    /// `beneficiary` non-zero.
    function slash(Role role, address account, uint256 amount, address beneficiary, uint16 burnBps) external;

    /*//////////////////////////////////////////////////////////////
                                GOVERNANCE
    //////////////////////////////////////////////////////////////*/

    /// @notice Sets the minimum active provider bond and arbitrator stake. Takes effect at once for everyone:
    /// raising it can deactivate registrants until they top up.
    /// Requirements: the caller holds `GOVERNANCE_ROLE`; each minimum in [1, `type(uint104).max`].
    function setMinimums(uint256 minProviderBond, uint256 minArbitratorStake) external;

    /// @notice Sets the unbonding delay for future requests.
    /// Requirements: the caller holds `GOVERNANCE_ROLE`; the delay lies in [1 hour, 90 days].
    function setUnbondingDelay(uint64 unbondingDelay) external;

    /// @notice Admits a registered arbitrator to the pool panels are drawn from. Only GOVERNANCE_ROLE (behind the
    /// timelock on every deployment).
    ///
    /// Requirements: `account` is a registered arbitrator, not yet admitted, and the pool has room.
    function admitArbitrator(address account) external;

    /// @notice Removes an arbitrator from the pool: it is never drawn from a snapshot taken after this block;
    /// panels it already sits on keep it, and its stake stays locked and slashable until they end. Its entry stays
    /// (weight zero) until `prune`. Only GOVERNANCE_ROLE.
    function removeArbitrator(address account) external;

    /// @notice Drops a removed arbitrator's entry from the pool once no usable snapshot can see it any more
    /// (more than `SNAPSHOT_HORIZON` blocks after its removal), freeing its place. Anyone may call it.
    function prune(address account) external;

    /*//////////////////////////////////////////////////////////////
                                LIABILITIES
    //////////////////////////////////////////////////////////////*/

    /// @notice Adds one liability on `account`'s bond in `role`; while any remain, the bond can neither start
    /// unbonding nor be withdrawn. Only LOCKER_ROLE (the DisputeManager and the GigEscrow).
    function lockBond(Role role, address account) external;

    /// @notice Ends one liability added by `lockBond`. Only LOCKER_ROLE.
    function unlockBond(Role role, address account) external;

    /// @notice Keeps `account`'s bond in `role` from being withdrawn before `until` (only ever later: an earlier
    /// time is a no-op). Only HOLDER_ROLE (the GasEscrow, for the dispute window of each session it settled
    /// cooperatively). Slashing is unaffected; a pending unbond stays pending and slashable until then.
    function holdBond(Role role, address account, uint64 until) external;


    /*//////////////////////////////////////////////////////////////
                                  VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @notice The ERC-20 bonds are posted in.
    function bondToken() external view returns (address);

    /// @notice The minimum active bond that makes a registered provider active.
    function minProviderBond() external view returns (uint256);

    /// @notice The minimum active stake that makes a registered arbitrator active.
    function minArbitratorStake() external view returns (uint256);

    /// @notice Seconds between an unbond request and its withdrawal.
    function unbondingDelay() external view returns (uint64);

    /// @notice `account`'s provider record; all zero (empty endpoint) if it is not registered.
    function providerOf(address account) external view returns (ProviderRecord memory);

    /// @notice `account`'s arbitrator record; all zero if it is not registered.
    function arbitratorOf(address account) external view returns (ArbitratorRecord memory);

    /// @notice The judge runtime `account` pinned as an arbitrator, or zero if it is not registered.
    function judgeRuntimeHashOf(address account) external view returns (bytes32);

    /// @notice Whether `account` is registered as `role`.
    function isRegistered(Role role, address account) external view returns (bool);

    /// @notice `account`'s bond for `role`.
    function bondOf(Role role, address account) external view returns (Bond memory);

    /// @notice Where `account`'s pending `role` bond stands.
    function unbondPhaseOf(Role role, address account) external view returns (UnbondPhase);

    /// @notice Whether `account` is a registered provider with an active bond of at least `minProviderBond`.
    function isActiveProvider(address account) external view returns (bool);

    /// @notice Whether `account` is an admitted, registered arbitrator with an active stake of at least
    /// `minArbitratorStake`: registration and stake alone never make an arbitrator.
    function isActiveArbitrator(address account) external view returns (bool);

    /// @notice How many liabilities hold `account`'s bond in `role`.
    function locksOf(Role role, address account) external view returns (uint256);

    /// @notice The time before which `account`'s bond in `role` cannot be withdrawn (0: no hold).
    function heldUntilOf(Role role, address account) external view returns (uint64);

    /// @notice Whether `account` is in the arbitrator pool.
    function isAdmitted(address account) external view returns (bool);

    /// @notice The arbitrator pool, in admission order (removals move the last entry into the gap).
    function admittedArbitrators() external view returns (address[] memory);

    /// @notice The arbitrators a panel can be drawn from now and their draw weights: `drawPoolAt` this block.
    function drawPool(bytes32 judgeRuntimeHash)
        external
        view
        returns (address[] memory accounts, uint256[] memory weights);

    /// @notice The draw pool as it stood at the end of `blockNumber` (its last checkpoint at or before it): every
    /// arbitrator admitted then whose active stake then met the minimum then and whose pin then was
    /// `judgeRuntimeHash` (any runtime when zero), weighted by that stake. Members pruned since are not listed;
    /// pruning waits `SNAPSHOT_HORIZON` blocks after a removal, so snapshots younger than that are exact.
    function drawPoolAt(bytes32 judgeRuntimeHash, uint48 blockNumber)
        external
        view
        returns (address[] memory accounts, uint256[] memory weights);

    /// @notice Blocks for which a draw snapshot stays exact (see `prune`).
    function SNAPSHOT_HORIZON() external view returns (uint48);


    /// @notice How a slash of `amount` splits: `fromActive` + `fromPending` taken (active first), of which
    /// `burned` = floor(taken × burnBps / 10,000) is burnt and `toBeneficiary` is the rest.
    /// @dev Pure so that tests and the dispute contract can check the arithmetic. It takes at most
    /// `active + pending`; callers that must not truncate compare `fromActive + fromPending` with `amount`.
    /// Requirements: `burnBps <= 10,000`.
    function computeSlash(uint256 active, uint256 pending, uint256 amount, uint16 burnBps)
        external
        pure
        returns (uint256 fromActive, uint256 fromPending, uint256 burned, uint256 toBeneficiary);
}
