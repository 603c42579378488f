// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {SealedRoles} from "./governance/SealedRoles.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {Checkpoints} from "@openzeppelin/contracts/utils/structs/Checkpoints.sol";
import {SafeTransferLib} from "solady/src/utils/SafeTransferLib.sol";
import {ReentrancyGuardTransient} from "solady/src/utils/ReentrancyGuardTransient.sol";
import {IProviderRegistry} from "./interfaces/IProviderRegistry.sol";

/// @title ProviderRegistry
/// @notice Providers and arbitrators register an identity anchor here and post bonds in the settlement token.
/// A bond leaves only through `requestUnbond` → delay → `withdraw`, and stays slashable by the dispute
/// contract (`SLASHER_ROLE`) until it is withdrawn.
/// @dev Both roles share one bonding implementation keyed by `Role`; only the registration records differ.
/// Roles: `DEFAULT_ADMIN_ROLE` and `GOVERNANCE_ROLE` go to the `governance` address given to the constructor,
/// which later grants `SLASHER_ROLE` to the DisputeManager (every role is administered by
/// `DEFAULT_ADMIN_ROLE`, OpenZeppelin's default).
///
/// Arbitrators are drawn only from a pool that governance admits them to (behind the timelock), weighted by
/// active stake; registration and stake alone never make an arbitrator.
///
/// Liabilities lock bonds: an accepted, delivered or disputed gig locks its provider's bond (GigEscrow), an open
/// case locks its respondent's bond and every panel seat locks its arbitrator's stake (DisputeManager) until the
/// case and its appeal window are over. A locked bond can neither start unbonding nor be withdrawn. The unbonding
/// delay covers only the windows in which a case can still be opened without a lock (decision 0014).
///
/// Draw weights are checkpointed (decision 0014, "draw weights fixed before the randomness exists"): every change
/// of what an arbitrator weighs in a draw — bond, unbond request or cancel, slash, re-pin, admission, removal, the
/// minimum stake — is recorded by block number, and a panel is drawn from the weights at the block its randomness
/// was requested (`drawPoolAt`), so nothing done once the randomness is known moves a pick.
contract ProviderRegistry is IProviderRegistry, SealedRoles, ReentrancyGuardTransient {
    using Checkpoints for Checkpoints.Trace208;

    /*//////////////////////////////////////////////////////////////
                               CONSTANTS
    //////////////////////////////////////////////////////////////*/

    /// @notice Sets minimums and the unbonding delay.
    bytes32 public constant GOVERNANCE_ROLE = keccak256("GOVERNANCE_ROLE");

    /// @notice May slash bonds; meant for the DisputeManager alone.
    bytes32 public constant SLASHER_ROLE = keccak256("SLASHER_ROLE");

    /// @notice May lock and unlock bonds against liabilities; meant for the DisputeManager and the GigEscrow.
    bytes32 public constant LOCKER_ROLE = keccak256("LOCKER_ROLE");

    /// @notice May hold bonds until a time (`holdBond`); meant for the GasEscrow, whose cooperatively settled
    /// sessions stay disputable — refunded from the provider's bond — for a window after they paid out.
    bytes32 public constant HOLDER_ROLE = keccak256("HOLDER_ROLE");

    /// @notice Most arbitrators the pool holds (removed members count until pruned): a draw reads the whole pool
    /// (two words per member), which bounds the draw's gas. A sortition sum tree (Kleros) is the way past this bound.
    uint256 public constant MAX_POOL = 64;

    /// @notice Blocks for which a draw snapshot stays usable: a removed arbitrator stays in the pool (with weight
    /// zero from its removal on) until this many blocks have passed, so that a draw from an older snapshot still
    /// sees it; the DisputeManager requests fresh randomness rather than draw from an older snapshot.
    uint48 public constant SNAPSHOT_HORIZON = 1024;

    /// @notice Where the burnt share of a slash goes. The bond token need not support burning (OpenZeppelin's
    /// ERC-20 refuses transfers to `address(0)`), and nobody holds a key for this address, so tokens sent
    /// here are out of circulation for good, although `totalSupply` still counts them.
    address public constant BURN_ADDRESS = 0x000000000000000000000000000000000000dEaD;

    /// @notice Largest total (active + pending) one bond can hold: what its uint104 fields can represent.
    uint256 public constant MAX_BOND = type(uint104).max;

    /// @notice Shortest unbonding delay governance may set: the longest window in which a case can still be
    /// opened against a provider that holds no lock (a session's challenge window, at most 30 days in GasEscrow;
    /// a gig's dispute window is at most 30 days too). From the moment a gig is accepted or a case is opened, a
    /// lock — not the delay — keeps the bond in place for as long as the gig or the case lasts (decision 0014).
    uint64 public constant MIN_UNBONDING_DELAY = 30 days;

    /// @notice Longest unbonding delay: bounds how long an honest registrant's funds can be held back.
    uint64 public constant MAX_UNBONDING_DELAY = 90 days;

    /// @notice Basis points in a whole (100 %): the largest burnt share of a slash.
    uint16 public constant BPS = 10_000;

    /// @notice Shortest and longest provider endpoint, in bytes (a URL or multiaddr; its format is not checked).
    uint256 public constant MIN_ENDPOINT_LENGTH = 1;
    /// @notice See `MIN_ENDPOINT_LENGTH`. The cap bounds the storage a registration writes (at most 9 words).
    uint256 public constant MAX_ENDPOINT_LENGTH = 256;

    /*//////////////////////////////////////////////////////////////
                                STORAGE
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IProviderRegistry
    address public immutable bondToken;

    /// @dev Governance parameters, one word read together by every `isActive*` check. Layout (low bits first):
    ///   bits   0..103  minimum active provider bond     (in [1, MAX_BOND]: a bond above MAX_BOND cannot exist)
    ///   bits 104..207  minimum active arbitrator stake  (same bounds)
    ///   bits 208..255  unbonding delay in seconds       (at most 90 days)
    /// The setters check those bounds before narrowing, so the casts cannot truncate.
    uint104 private _minProviderBond;
    uint104 private _minArbitratorStake;
    uint48 private _unbondingDelay;

    /// @dev One word per (role, account): see `IProviderRegistry.Bond` for the layout and why the widths suffice.
    mapping(Role role => mapping(address account => Bond)) private _bonds;

    mapping(address account => ProviderRecord) private _providers;

    mapping(address account => ArbitratorRecord) private _arbitrators;

    /// @dev Liabilities holding each bond (see `lockBond`).
    mapping(Role role => mapping(address account => uint256)) private _locks;

    /// @dev Before when each bond cannot be withdrawn (see `holdBond`); uint64 seconds never wrap.
    mapping(Role role => mapping(address account => uint64)) private _heldUntil;

    /// @dev The arbitrator pool and each member's position in it plus one (zero: not in the pool). A removed
    /// member stays until pruned (`prune`), marked by the block of its removal.
    address[] private _pool;
    mapping(address account => uint256) private _poolSlot;
    mapping(address account => uint48) private _removedAt;

    /// @dev Admitted, not removed members.
    uint256 private _admitted;

    /// @dev Each pool member's draw weight by block number. Value layout: bits 0..103 the active stake counted
    /// (zero while not admitted; fits: a bond is at most MAX_BOND = type(uint104).max), bits 104..207 the top 104
    /// bits of the pinned judge runtime hash (a pin is a declaration, so a prefix identifies it for the draw).
    mapping(address account => Checkpoints.Trace208) private _drawWeights;

    /// @dev The minimum arbitrator stake by block number.
    Checkpoints.Trace208 private _minStakeHistory;

    /// @param governance Receives `DEFAULT_ADMIN_ROLE` and `GOVERNANCE_ROLE`.
    /// @param bondToken_ The ERC-20 bonds are posted in (a contract; the settlement token, e.g. LaborGas).
    /// @param minProviderBond_ Minimum active bond of an active provider, in [1, MAX_BOND].
    /// @param minArbitratorStake_ Minimum active stake of an active arbitrator, in [1, MAX_BOND].
    /// @param unbondingDelay_ Seconds from an unbond request to its withdrawal, in [30 days, 90 days].
    constructor(
        address governance,
        address bondToken_,
        uint256 minProviderBond_,
        uint256 minArbitratorStake_,
        uint64 unbondingDelay_
    ) {
        if (governance == address(0)) revert ZeroGovernance();
        if (bondToken_.code.length == 0) revert BondTokenNotContract(bondToken_);
        bondToken = bondToken_;
        _setMinimums(minProviderBond_, minArbitratorStake_);
        _setUnbondingDelay(unbondingDelay_);
        _grantRole(DEFAULT_ADMIN_ROLE, governance);
        _grantRole(GOVERNANCE_ROLE, governance);
    }

    /*//////////////////////////////////////////////////////////////
                               REGISTRATION
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IProviderRegistry
    function registerProvider(
        string calldata endpoint,
        bytes32 capabilitiesHash,
        bytes32 didHash,
        bytes32 mldsaPublicKeyHash
    ) external {
        _requireNotRegistered(Role.Provider, msg.sender);
        _storeProvider(endpoint, capabilitiesHash, didHash, mldsaPublicKeyHash);
        // The hold word is created now, at the provider's expense: a cooperative close (sent, and paid for, by
        // whichever party submits it — most often the payer) then rewrites a word instead of creating one. 1 is
        // long past, so it holds nothing.
        if (_heldUntil[Role.Provider][msg.sender] == 0) _heldUntil[Role.Provider][msg.sender] = 1;
        emit ProviderRegistered(msg.sender, didHash, endpoint, capabilitiesHash, mldsaPublicKeyHash);
    }

    /// @inheritdoc IProviderRegistry
    function updateProvider(
        string calldata endpoint,
        bytes32 capabilitiesHash,
        bytes32 didHash,
        bytes32 mldsaPublicKeyHash
    ) external {
        _requireRegistered(Role.Provider, msg.sender);
        _storeProvider(endpoint, capabilitiesHash, didHash, mldsaPublicKeyHash);
        emit ProviderUpdated(msg.sender, didHash, endpoint, capabilitiesHash, mldsaPublicKeyHash);
    }

    /// @inheritdoc IProviderRegistry
    function registerArbitrator(bytes32 judgeRuntimeHash, bytes32 didHash, bytes32 mldsaPublicKeyHash) external {
        _requireNotRegistered(Role.Arbitrator, msg.sender);
        _storeArbitrator(judgeRuntimeHash, didHash, mldsaPublicKeyHash);
        emit ArbitratorRegistered(msg.sender, didHash, judgeRuntimeHash, mldsaPublicKeyHash);
    }

    /// @inheritdoc IProviderRegistry
    function updateArbitrator(bytes32 judgeRuntimeHash, bytes32 didHash, bytes32 mldsaPublicKeyHash) external {
        _requireRegistered(Role.Arbitrator, msg.sender);
        _storeArbitrator(judgeRuntimeHash, didHash, mldsaPublicKeyHash);
        emit ArbitratorUpdated(msg.sender, didHash, judgeRuntimeHash, mldsaPublicKeyHash);
        _checkpoint(Role.Arbitrator, msg.sender);
    }

    /*//////////////////////////////////////////////////////////////
                                 BONDING
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IProviderRegistry
    /// @dev The one value-moving function whose interaction comes first: only the balance change after the
    /// transfer says what to credit. The bond word is read after the transfer, and every function that writes
    /// a bond shares the reentrancy guard, so a hostile token cannot interleave another bond update.
    function bond(Role role, uint256 amount) external nonReentrant returns (uint256 received) {
        _requireRegistered(role, msg.sender);
        if (amount == 0) revert ZeroAmount();
        received = _pullBondToken(amount);
        if (received == 0) revert ZeroAmount();

        Bond storage b = _bonds[role][msg.sender];
        uint256 active = b.active + received;
        uint256 total = active + b.pending;
        if (total > MAX_BOND) revert BondExceedsMaximum(role, msg.sender, total, MAX_BOND);
        // Fits: active <= total <= MAX_BOND = type(uint104).max.
        b.active = uint104(active);
        emit Bonded(role, msg.sender, received, active);
        _checkpoint(role, msg.sender);
    }

    /// @inheritdoc IProviderRegistry
    function requestUnbond(Role role, uint256 amount) external nonReentrant returns (uint64 unlockAt) {
        _requireUnlocked(role, msg.sender);
        Bond memory b = _bonds[role][msg.sender];
        if (amount == 0) revert ZeroAmount();
        if (amount > b.active) revert InsufficientActiveBond(role, msg.sender, amount, b.active);

        // Cannot wrap: amount <= active (so it fits in uint104 and active does not underflow), and
        // active + pending <= MAX_BOND, which is unchanged by moving value from one part to the other.
        unchecked {
            b.active -= uint104(amount);
            b.pending += uint104(amount);
        }
        // Fits in uint48 (and so in uint64) until the year 8,900,000; SafeCast makes that visible.
        b.unlockAt = SafeCast.toUint48(block.timestamp + _unbondingDelay);
        unlockAt = b.unlockAt;
        _bonds[role][msg.sender] = b;
        emit UnbondRequested(role, msg.sender, amount, b.active, b.pending, unlockAt);
        _checkpoint(role, msg.sender);
    }

    /// @inheritdoc IProviderRegistry
    function cancelUnbond(Role role) external nonReentrant {
        Bond memory b = _bonds[role][msg.sender];
        uint256 amount = b.pending;
        if (amount == 0) return;

        // Cannot overflow: active + pending <= MAX_BOND = type(uint104).max.
        unchecked {
            b.active += b.pending;
        }
        b.pending = 0;
        b.unlockAt = 0;
        _bonds[role][msg.sender] = b;
        emit UnbondCancelled(role, msg.sender, amount, b.active);
        _checkpoint(role, msg.sender);
    }

    /// @inheritdoc IProviderRegistry
    function withdraw(Role role) external nonReentrant returns (uint256 amount) {
        _requireUnlocked(role, msg.sender);
        Bond memory b = _bonds[role][msg.sender];
        _requireWithdrawable(role, msg.sender, b);

        amount = b.pending;
        b.pending = 0;
        b.unlockAt = 0;
        _bonds[role][msg.sender] = b;
        emit Withdrawn(role, msg.sender, amount);

        SafeTransferLib.safeTransfer(bondToken, msg.sender, amount);
    }

    /// @inheritdoc IProviderRegistry
    function slash(Role role, address account, uint256 amount, address beneficiary, uint16 burnBps)
        external
        onlyRole(SLASHER_ROLE)
        nonReentrant
    {
        if (amount == 0) revert ZeroAmount();
        if (beneficiary == address(0)) revert ZeroBeneficiary();
        Bond memory b = _bonds[role][account];
        uint256 held = uint256(b.active) + b.pending;
        if (amount > held) revert SlashExceedsBond(role, account, amount, held);

        (uint256 fromActive, uint256 fromPending, uint256 burned, uint256 toBeneficiary) =
            computeSlash(b.active, b.pending, amount, burnBps);
        // Cannot wrap: computeSlash takes at most each part, and each part fits in uint104.
        unchecked {
            b.active -= uint104(fromActive);
            b.pending -= uint104(fromPending);
        }
        if (b.pending == 0) b.unlockAt = 0;
        _bonds[role][account] = b;
        emit Slashed(
            role, account, beneficiary, amount, fromPending, burnBps, burned, toBeneficiary, b.active, b.pending
        );
        _checkpoint(role, account);

        if (burned != 0) SafeTransferLib.safeTransfer(bondToken, BURN_ADDRESS, burned);
        if (toBeneficiary != 0) SafeTransferLib.safeTransfer(bondToken, beneficiary, toBeneficiary);
    }

    /*//////////////////////////////////////////////////////////////
                                GOVERNANCE
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IProviderRegistry
    function setMinimums(uint256 minProviderBond_, uint256 minArbitratorStake_)
        external
        onlyRole(GOVERNANCE_ROLE)
    {
        _setMinimums(minProviderBond_, minArbitratorStake_);
    }

    /// @inheritdoc IProviderRegistry
    function setUnbondingDelay(uint64 unbondingDelay_) external onlyRole(GOVERNANCE_ROLE) {
        _setUnbondingDelay(unbondingDelay_);
    }

    /// @inheritdoc IProviderRegistry
    function admitArbitrator(address account) external onlyRole(GOVERNANCE_ROLE) {
        _requireRegistered(Role.Arbitrator, account);
        if (_isAdmitted(account)) revert AlreadyAdmitted(account);
        if (_poolSlot[account] != 0) {
            // Removed but not pruned yet: back in its old slot.
            delete _removedAt[account];
        } else {
            uint256 size = _pool.length;
            if (size >= MAX_POOL) revert PoolFull(MAX_POOL);
            _pool.push(account);
            // Cannot overflow: size < MAX_POOL.
            unchecked {
                _poolSlot[account] = size + 1;
            }
        }
        // Cannot overflow: _admitted <= _pool.length <= MAX_POOL.
        unchecked {
            emit ArbitratorAdmitted(account, ++_admitted);
        }
        _checkpoint(Role.Arbitrator, account);
    }

    /// @inheritdoc IProviderRegistry
    function removeArbitrator(address account) external onlyRole(GOVERNANCE_ROLE) {
        if (!_isAdmitted(account)) revert NotAdmitted(account);
        _removedAt[account] = uint48(block.number);
        // Cannot underflow: the account was admitted, so _admitted >= 1.
        unchecked {
            emit ArbitratorRemoved(account, --_admitted);
        }
        _checkpoint(Role.Arbitrator, account);
    }

    /// @inheritdoc IProviderRegistry
    function prune(address account) external {
        uint256 slot = _poolSlot[account];
        uint48 removedAt = _removedAt[account];
        if (slot == 0 || removedAt == 0 || block.number <= uint256(removedAt) + SNAPSHOT_HORIZON) {
            revert NotPrunable(account);
        }
        uint256 last = _pool.length - 1; // >= slot - 1 >= 0: the account is in the pool
        if (slot - 1 != last) {
            address moved = _pool[last];
            _pool[slot - 1] = moved;
            _poolSlot[moved] = slot;
        }
        _pool.pop();
        delete _poolSlot[account];
        delete _removedAt[account];
        emit ArbitratorPruned(account);
    }

    /*//////////////////////////////////////////////////////////////
                                LIABILITIES
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IProviderRegistry
    function lockBond(Role role, address account) external onlyRole(LOCKER_ROLE) {
        uint256 locks = _locks[role][account] + 1;
        _locks[role][account] = locks;
        emit BondLocked(role, account, locks);
    }

    /// @inheritdoc IProviderRegistry
    /// @dev A time, not a count: a settlement's window ends by itself, with no transaction to release it, and the
    /// latest window covers every earlier one.
    function holdBond(Role role, address account, uint64 until) external onlyRole(HOLDER_ROLE) {
        if (until <= _heldUntil[role][account]) return;
        _heldUntil[role][account] = until;
        emit BondHeld(role, account, until);
    }

    /// @inheritdoc IProviderRegistry
    function unlockBond(Role role, address account) external onlyRole(LOCKER_ROLE) {
        uint256 locks = _locks[role][account];
        if (locks == 0) revert BondNotLocked(role, account);
        // Cannot underflow: locks != 0.
        unchecked {
            --locks;
        }
        _locks[role][account] = locks;
        emit BondUnlocked(role, account, locks);
    }

    /*//////////////////////////////////////////////////////////////
                                  VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IProviderRegistry
    function computeSlash(uint256 active, uint256 pending, uint256 amount, uint16 burnBps)
        public
        pure
        returns (uint256 fromActive, uint256 fromPending, uint256 burned, uint256 toBeneficiary)
    {
        if (burnBps > BPS) revert BurnBpsOutOfRange(burnBps, BPS);
        fromActive = Math.min(amount, active);
        // Cannot underflow: fromActive <= amount. Cannot overflow: the sum is at most amount.
        unchecked {
            fromPending = Math.min(amount - fromActive, pending);
            uint256 taken = fromActive + fromPending;
            burned = Math.mulDiv(taken, burnBps, BPS);
            // Cannot underflow: burnBps <= BPS, so burned <= taken.
            toBeneficiary = taken - burned;
        }
    }

    /// @inheritdoc IProviderRegistry
    function minProviderBond() external view returns (uint256) {
        return _minProviderBond;
    }

    /// @inheritdoc IProviderRegistry
    function minArbitratorStake() external view returns (uint256) {
        return _minArbitratorStake;
    }

    /// @inheritdoc IProviderRegistry
    function unbondingDelay() external view returns (uint64) {
        return _unbondingDelay;
    }

    /// @inheritdoc IProviderRegistry
    function providerOf(address account) external view returns (ProviderRecord memory) {
        return _providers[account];
    }

    /// @inheritdoc IProviderRegistry
    function arbitratorOf(address account) external view returns (ArbitratorRecord memory) {
        return _arbitrators[account];
    }

    /// @inheritdoc IProviderRegistry
    function judgeRuntimeHashOf(address account) external view returns (bytes32) {
        return _arbitrators[account].judgeRuntimeHash;
    }

    /// @inheritdoc IProviderRegistry
    function isRegistered(Role role, address account) external view returns (bool) {
        return _isRegistered(role, account);
    }

    /// @inheritdoc IProviderRegistry
    function bondOf(Role role, address account) external view returns (Bond memory) {
        return _bonds[role][account];
    }

    /// @inheritdoc IProviderRegistry
    /// @dev A pending bond under a hold (`holdBond`) is still Unbonding until the hold ends.
    function unbondPhaseOf(Role role, address account) external view returns (UnbondPhase) {
        UnbondPhase phase = _unbondPhase(_bonds[role][account]);
        if (phase == UnbondPhase.Withdrawable && block.timestamp < _heldUntil[role][account]) {
            return UnbondPhase.Unbonding;
        }
        return phase;
    }

    /// @inheritdoc IProviderRegistry
    function isActiveProvider(address account) external view returns (bool) {
        return _isActive(Role.Provider, account);
    }

    /// @inheritdoc IProviderRegistry
    function isActiveArbitrator(address account) external view returns (bool) {
        return _isAdmitted(account) && _isActive(Role.Arbitrator, account);
    }

    /// @inheritdoc IProviderRegistry
    function locksOf(Role role, address account) external view returns (uint256) {
        return _locks[role][account];
    }

    /// @inheritdoc IProviderRegistry
    function heldUntilOf(Role role, address account) external view returns (uint64) {
        return _heldUntil[role][account];
    }

    /// @inheritdoc IProviderRegistry
    function isAdmitted(address account) external view returns (bool) {
        return _isAdmitted(account);
    }

    /// @inheritdoc IProviderRegistry
    function admittedArbitrators() external view returns (address[] memory members) {
        uint256 size = _pool.length;
        members = new address[](_admitted);
        uint256 n;
        for (uint256 i; i < size; ++i) {
            address account = _pool[i];
            if (_removedAt[account] == 0) {
                members[n] = account;
                ++n;
            }
        }
    }

    /// @inheritdoc IProviderRegistry
    function drawPool(bytes32 judgeRuntimeHash)
        external
        view
        returns (address[] memory accounts, uint256[] memory weights)
    {
        return drawPoolAt(judgeRuntimeHash, uint48(block.number));
    }

    /// @inheritdoc IProviderRegistry
    function drawPoolAt(bytes32 judgeRuntimeHash, uint48 blockNumber)
        public
        view
        returns (address[] memory accounts, uint256[] memory weights)
    {
        if (blockNumber > block.number) revert SnapshotInFuture(blockNumber, block.number);
        uint256 size = _pool.length;
        accounts = new address[](size);
        weights = new uint256[](size);
        uint256 minimum = _minStakeHistory.upperLookupRecent(blockNumber);
        uint256 pin = _pinPrefix(judgeRuntimeHash);
        uint256 n;
        for (uint256 i; i < size; ++i) {
            address account = _pool[i];
            uint256 packed = _drawWeights[account].upperLookupRecent(blockNumber);
            uint256 weight = uint104(packed);
            if (weight == 0 || weight < minimum) continue;
            if (judgeRuntimeHash != 0 && packed >> 104 != pin) continue;
            accounts[n] = account;
            weights[n] = weight;
            // Cannot overflow: n < size <= MAX_POOL.
            unchecked {
                ++n;
            }
        }
        // Trim both arrays to the eligible members (n <= size, so the lengths only shrink).
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            mstore(accounts, n)
            mstore(weights, n)
        }
    }

    /*//////////////////////////////////////////////////////////////
                                INTERNAL
    //////////////////////////////////////////////////////////////*/

    function _storeProvider(
        string calldata endpoint,
        bytes32 capabilitiesHash,
        bytes32 didHash,
        bytes32 mldsaPublicKeyHash
    ) private {
        uint256 length = bytes(endpoint).length;
        if (length < MIN_ENDPOINT_LENGTH || length > MAX_ENDPOINT_LENGTH) {
            revert EndpointLengthOutOfRange(length, MIN_ENDPOINT_LENGTH, MAX_ENDPOINT_LENGTH);
        }
        if (capabilitiesHash == bytes32(0)) revert ZeroCapabilitiesHash();
        _validateIdentity(didHash, mldsaPublicKeyHash);
        _providers[msg.sender] = ProviderRecord(endpoint, capabilitiesHash, didHash, mldsaPublicKeyHash);
    }

    function _storeArbitrator(bytes32 judgeRuntimeHash, bytes32 didHash, bytes32 mldsaPublicKeyHash) private {
        if (judgeRuntimeHash == bytes32(0)) revert ZeroJudgeRuntimeHash();
        _validateIdentity(didHash, mldsaPublicKeyHash);
        _arbitrators[msg.sender] = ArbitratorRecord(judgeRuntimeHash, didHash, mldsaPublicKeyHash);
    }

    /// @dev A non-zero `didHash` is also what marks a record as registered (see `_isRegistered`).
    function _validateIdentity(bytes32 didHash, bytes32 mldsaPublicKeyHash) private pure {
        if (didHash == bytes32(0)) revert ZeroDidHash();
        if (mldsaPublicKeyHash == bytes32(0)) revert ZeroMldsaPublicKeyHash();
    }

    function _isRegistered(Role role, address account) private view returns (bool) {
        bytes32 didHash = role == Role.Provider ? _providers[account].didHash : _arbitrators[account].didHash;
        return didHash != bytes32(0);
    }

    function _requireRegistered(Role role, address account) private view {
        if (!_isRegistered(role, account)) revert NotRegistered(role, account);
    }

    function _requireUnlocked(Role role, address account) private view {
        uint256 locks = _locks[role][account];
        if (locks != 0) revert BondIsLocked(role, account, locks);
    }

    function _requireNotRegistered(Role role, address account) private view {
        if (_isRegistered(role, account)) revert AlreadyRegistered(role, account);
    }

    function _isAdmitted(address account) private view returns (bool) {
        return _poolSlot[account] != 0 && _removedAt[account] == 0;
    }

    /// @dev The top 104 bits of a judge runtime hash (see `_drawWeights`).
    function _pinPrefix(bytes32 judgeRuntimeHash) private pure returns (uint256) {
        return uint256(judgeRuntimeHash) >> 152;
    }

    /// @dev Records `account`'s draw weight as of this block (arbitrators in the pool only; see `_drawWeights`).
    function _checkpoint(Role role, address account) private {
        if (role != Role.Arbitrator || _poolSlot[account] == 0) return;
        uint256 weight = _removedAt[account] == 0 ? _bonds[Role.Arbitrator][account].active : 0;
        uint256 packed = (_pinPrefix(_arbitrators[account].judgeRuntimeHash) << 104) | weight;
        // Fits: the prefix has 104 bits and the weight at most 104 (a bond is at most MAX_BOND).
        _drawWeights[account].push(uint48(block.number), uint208(packed));
    }

    function _isActive(Role role, address account) private view returns (bool) {
        uint256 minimum = role == Role.Provider ? _minProviderBond : _minArbitratorStake;
        return _isRegistered(role, account) && _bonds[role][account].active >= minimum;
    }

    /// @dev The one place the unbonding state machine is derived (see `IProviderRegistry.UnbondPhase`).
    function _unbondPhase(Bond memory b) private view returns (UnbondPhase) {
        if (b.pending == 0) return UnbondPhase.None;
        return block.timestamp < b.unlockAt ? UnbondPhase.Unbonding : UnbondPhase.Withdrawable;
    }

    /// @dev The hold is checked after the delay, so each error names the constraint that binds: a bond whose
    /// delay has passed but that still answers for a settled session is `BondHeldUntil`.
    function _requireWithdrawable(Role role, address account, Bond memory b) private view {
        UnbondPhase phase = _unbondPhase(b);
        if (phase == UnbondPhase.None) revert NothingToWithdraw(role, account);
        if (phase == UnbondPhase.Unbonding) revert UnbondingNotElapsed(role, account, b.unlockAt, block.timestamp);
        uint64 heldUntil = _heldUntil[role][account];
        if (block.timestamp < heldUntil) revert BondHeldUntil(role, account, heldUntil, block.timestamp);
    }

    function _setMinimums(uint256 minProviderBond_, uint256 minArbitratorStake_) private {
        if (minProviderBond_ == 0 || minProviderBond_ > MAX_BOND) {
            revert MinimumOutOfRange(Role.Provider, minProviderBond_, 1, MAX_BOND);
        }
        if (minArbitratorStake_ == 0 || minArbitratorStake_ > MAX_BOND) {
            revert MinimumOutOfRange(Role.Arbitrator, minArbitratorStake_, 1, MAX_BOND);
        }
        // Fit: both were just checked to be at most MAX_BOND = type(uint104).max.
        _minProviderBond = uint104(minProviderBond_);
        _minArbitratorStake = uint104(minArbitratorStake_);
        _minStakeHistory.push(uint48(block.number), uint208(minArbitratorStake_));
        emit MinimumsSet(minProviderBond_, minArbitratorStake_);
    }

    function _setUnbondingDelay(uint64 unbondingDelay_) private {
        if (unbondingDelay_ < MIN_UNBONDING_DELAY || unbondingDelay_ > MAX_UNBONDING_DELAY) {
            revert UnbondingDelayOutOfRange(unbondingDelay_, MIN_UNBONDING_DELAY, MAX_UNBONDING_DELAY);
        }
        // Fits: at most 90 days < 2^48 seconds.
        _unbondingDelay = uint48(unbondingDelay_);
        emit UnbondingDelaySet(unbondingDelay_);
    }

    /// @dev Pulls `amount` of the bond token from the caller and returns what actually arrived, so that a
    /// fee-on-transfer token credits the net amount rather than over-crediting the bond.
    function _pullBondToken(uint256 amount) private returns (uint256) {
        address token = bondToken;
        uint256 before = SafeTransferLib.balanceOf(token, address(this));
        SafeTransferLib.safeTransferFrom(token, msg.sender, address(this), amount);
        return SafeTransferLib.balanceOf(token, address(this)) - before;
    }

    /// @dev Transient storage exists on every chain this contract targets (Cancun and later).
    function _useTransientReentrancyGuardOnlyOnMainnet() internal pure override returns (bool) {
        return false;
    }

    /// @dev `SLASHER_ROLE`, `LOCKER_ROLE`, `HOLDER_ROLE` seal (`SealedRoles`).
    function _isWiringRole(bytes32 role) internal pure override returns (bool) {
        return role == SLASHER_ROLE || role == LOCKER_ROLE || role == HOLDER_ROLE;
    }
}
