// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {SafeTransferLib} from "solady/src/utils/SafeTransferLib.sol";
import {ReentrancyGuardTransient} from "solady/src/utils/ReentrancyGuardTransient.sol";
import {IDisputeManager} from "./interfaces/IDisputeManager.sol";
import {IGasEscrow} from "./interfaces/IGasEscrow.sol";
import {IGigEscrow} from "./interfaces/IGigEscrow.sol";
import {IProviderRegistry} from "./interfaces/IProviderRegistry.sol";
import {ReceiptLeaf} from "./libraries/ReceiptLeaf.sol";

/// @title DisputeManager
/// @notice Takes challenges against a gig's delivery or a closing session's receipts, holds both parties'
/// bonds, and enforces what deterministic arbitration decided: a refund through the escrow, a slash of the
/// respondent's SLA bond through the registry, and the bonds to the winner less a burnt share.
/// @dev Holds `DISPUTE_ROLE` on GasEscrow and GigEscrow and `SLASHER_ROLE` on the ProviderRegistry.
///
/// Liveness: every case ends. A fast-path case that gets no quorum resolution by its deadline can be moved to
/// the slow path by anyone; a slow-path case governance does not decide by its deadline can be expired by
/// anyone, which releases the subject without a refund and returns both bonds. Parameter bounds keep the
/// longest case (decision window × (escalations + 1) + slow-path timeout) inside the escrows' own 180-day
/// freeze backstop.
contract DisputeManager is IDisputeManager, AccessControl, EIP712, ReentrancyGuardTransient {
    using SafeCast for uint256;

    /*//////////////////////////////////////////////////////////////
                               CONSTANTS
    //////////////////////////////////////////////////////////////*/

    /// @notice EIP-712 type of what arbitrators sign. Mirrors `arbitration/resolution.ts`.
    bytes32 public constant RESOLUTION_TYPEHASH =
        keccak256("Resolution(bytes32 caseId,uint8 verdict,uint128 refund,uint128 slash,bytes32 resolutionHash)");

    /// @notice Sets the parameters and decides slow-path cases.
    bytes32 public constant GOVERNANCE_ROLE = keccak256("GOVERNANCE_ROLE");

    /// @notice Where burnt bond shares go (nobody holds its key), as in the ProviderRegistry.
    address public constant BURN_ADDRESS = 0x000000000000000000000000000000000000dEaD;

    /// @notice Basis points in a whole.
    uint16 public constant BPS = 10_000;

    /// @notice Cases any one subject can ever have, so repeated challenges cannot grief it for long.
    uint8 public constant MAX_CASES_PER_SUBJECT = 3;

    /// @notice Highest lane a case can reach (lane 3: human review on the slow path).
    uint8 public constant MAX_LANE = 3;

    /// @notice The first lane of the slow path.
    uint8 public constant SLOW_PATH_LANE = 2;

    /// @notice Parameter bounds (see `Params`).
    uint8 public constant MAX_LANE_MULTIPLIER = 10;
    uint8 public constant MAX_QUORUM = 16;
    uint8 public constant MAX_ESCALATIONS = 2;
    uint40 public constant MIN_WINDOW = 1 minutes;
    uint40 public constant MAX_DECISION_WINDOW = 30 days;
    uint40 public constant MAX_SLOW_PATH_TIMEOUT = 90 days;

    /*//////////////////////////////////////////////////////////////
                                 STATE
    //////////////////////////////////////////////////////////////*/

    IGasEscrow public immutable gasEscrow;
    IGigEscrow public immutable gigEscrow;
    IProviderRegistry public immutable registry;

    Params private _params;

    mapping(bytes32 caseId => Case) private _cases;

    /// @dev Per subject (keyed by `_subjectKey`): its open case, how many cases it had, how many escalations.
    struct SubjectState {
        bytes32 openCase;
        uint8 cases;
        uint8 escalations;
    }

    mapping(bytes32 subjectKey => SubjectState) private _subjects;

    constructor(
        address governance,
        IGasEscrow gasEscrow_,
        IGigEscrow gigEscrow_,
        IProviderRegistry registry_,
        Params memory p
    ) EIP712("IOI DisputeManager", "1") {
        if (
            governance == address(0) || address(gasEscrow_) == address(0) || address(gigEscrow_) == address(0)
                || address(registry_) == address(0)
        ) revert ZeroAddress();
        gasEscrow = gasEscrow_;
        gigEscrow = gigEscrow_;
        registry = registry_;
        _grantRole(DEFAULT_ADMIN_ROLE, governance);
        _grantRole(GOVERNANCE_ROLE, governance);
        _setParams(p);
    }

    /*//////////////////////////////////////////////////////////////
                              OPENING CASES
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IDisputeManager
    function openGigCase(uint64 gigId, uint8 lane, bytes32 packageHash)
        external
        payable
        nonReentrant
        returns (bytes32 caseId)
    {
        IGigEscrow.Gig memory gig = gigEscrow.gigOf(gigId);
        bytes32 subjectId = bytes32(uint256(gigId));
        if (msg.sender != gig.client) revert NotTheChallengerSide(subjectId, msg.sender);
        Case memory draft = _draft(SubjectKind.Gig, subjectId, gig.provider, gig.asset, gig.amount, lane, packageHash);
        caseId = _openCase(draft, 0);
        // Reverts unless the gig is delivered and its dispute window is still open.
        gigEscrow.freeze(gigId);
    }

    /// @inheritdoc IDisputeManager
    function openSessionCase(
        IGasEscrow.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrow.ClosingState calldata recorded,
        bytes32 receiptHash,
        bytes32 ticketHash,
        bytes32[] calldata proof,
        uint8 lane,
        bytes32 packageHash
    ) external payable nonReentrant returns (bytes32 caseId) {
        bytes32 sessionId = gasEscrow.sessionIdOf(terms, openedAt);
        if (msg.sender != terms.payer && msg.sender != terms.funder) revert NotTheChallengerSide(sessionId, msg.sender);
        Case memory draft =
            _draft(SubjectKind.Session, sessionId, terms.provider, terms.asset, _valueOf(recorded), lane, packageHash);
        caseId = _openCase(draft, _provenLeaf(sessionId, recorded, receiptHash, ticketHash, proof));
        // Reverts unless the session's challenge window is still open.
        gasEscrow.freeze(sessionId, recorded);
    }

    /// @dev The challenged leaf, after checking `recorded` is the session's state and the leaf is in its root.
    function _provenLeaf(
        bytes32 sessionId,
        IGasEscrow.ClosingState calldata recorded,
        bytes32 receiptHash,
        bytes32 ticketHash,
        bytes32[] calldata proof
    ) private view returns (bytes32) {
        (bool matches,,) = gasEscrow.closingInfo(sessionId, recorded);
        if (!matches) revert ClosingStateMismatch(sessionId);
        if (!ReceiptLeaf.verify(proof, recorded.receiptRoot, receiptHash, ticketHash)) {
            revert InvalidMerkleProof(sessionId, recorded.receiptRoot);
        }
        return ReceiptLeaf.leaf(receiptHash, ticketHash);
    }

    /// @dev What a closing session disputes: its recorded amount, capped at the deposit.
    function _valueOf(IGasEscrow.ClosingState calldata recorded) private pure returns (uint128) {
        return recorded.amount < recorded.deposit ? recorded.amount : recorded.deposit;
    }

    /// @dev The parts of a new case that come from its subject.
    function _draft(
        SubjectKind kind,
        bytes32 subjectId,
        address respondent,
        address asset,
        uint128 value,
        uint8 lane,
        bytes32 packageHash
    ) private pure returns (Case memory c) {
        c.kind = kind;
        c.subjectId = subjectId;
        c.respondent = respondent;
        c.asset = asset;
        c.value = value;
        c.lane = lane;
        c.packageHash = packageHash;
    }

    /// @dev Checks and stores a new case for the caller, then takes the challenger's bond.
    function _openCase(Case memory c, bytes32 leaf) private returns (bytes32 caseId) {
        if (c.lane >= SLOW_PATH_LANE) revert InvalidLane(c.lane);
        if (c.packageHash == 0) revert ZeroPackageHash();
        SubjectState storage subject = _subjects[_subjectKey(c.kind, c.subjectId)];
        if (subject.openCase != 0) revert CaseAlreadyOpen(c.subjectId, subject.openCase);
        if (subject.cases >= MAX_CASES_PER_SUBJECT) revert TooManyCases(c.subjectId);
        caseId = _caseId(c.kind, c.subjectId, subject.cases);
        unchecked {
            ++subject.cases; // < MAX_CASES_PER_SUBJECT checked above
        }
        subject.openCase = caseId;

        c.challenger = msg.sender;
        c.status = CaseStatus.Open;
        c.deadline = uint40(block.timestamp) + _params.decisionWindow;
        c.challengerBond = _bondFor(c.value, c.lane);
        _cases[caseId] = c;
        emit CaseOpened(
            caseId,
            c.kind,
            c.subjectId,
            msg.sender,
            c.respondent,
            c.lane,
            c.value,
            c.challengerBond,
            c.packageHash,
            leaf,
            c.deadline
        );
        _receiveBond(c.asset, c.challengerBond);
    }

    /*//////////////////////////////////////////////////////////////
                          CONTESTING AND ESCALATING
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IDisputeManager
    function respond(bytes32 caseId) external payable nonReentrant {
        Case storage c = _case(caseId);
        if (c.status != CaseStatus.Open && c.status != CaseStatus.SlowPath) revert WrongCaseStatus(caseId, c.status);
        if (msg.sender != c.respondent) revert NotTheRespondent(caseId, msg.sender);
        if (c.respondentBond != 0) revert AlreadyContested(caseId);
        uint128 bond = c.challengerBond;
        c.respondentBond = bond;
        emit CaseContested(caseId, msg.sender, bond);
        _receiveBond(c.asset, bond);
    }

    /// @inheritdoc IDisputeManager
    function escalate(bytes32 caseId) external payable nonReentrant {
        Case storage c = _case(caseId);
        if (c.status != CaseStatus.Open) revert WrongCaseStatus(caseId, c.status);
        bool byChallenger = msg.sender == c.challenger;
        if (!byChallenger && msg.sender != c.respondent) revert NotAParty(caseId, msg.sender);
        SubjectState storage subject = _subjects[_subjectKey(c.kind, c.subjectId)];
        uint8 cap = _params.maxEscalations;
        if (subject.escalations >= cap) revert EscalationCapReached(c.subjectId, cap);
        unchecked {
            ++subject.escalations; // < cap <= MAX_ESCALATIONS
        }

        uint8 lane = c.lane + 1; // c.lane < SLOW_PATH_LANE while Open
        uint128 due = _bondFor(c.value, lane);
        uint128 held = byChallenger ? c.challengerBond : c.respondentBond;
        uint128 topUp = due > held ? due - held : 0;
        if (topUp != 0) {
            if (byChallenger) c.challengerBond = due;
            else c.respondentBond = due;
        }
        _moveToLane(caseId, c, lane, msg.sender);
        _receiveBond(c.asset, topUp);
    }

    /// @dev Sets the lane; lanes from SLOW_PATH_LANE up belong to governance and get the longer timeout.
    function _moveToLane(bytes32 caseId, Case storage c, uint8 lane, address by) private {
        c.lane = lane;
        CaseStatus status;
        uint40 deadline;
        if (lane >= SLOW_PATH_LANE) {
            status = CaseStatus.SlowPath;
            deadline = uint40(block.timestamp) + _params.slowPathTimeout;
        } else {
            status = CaseStatus.Open;
            deadline = uint40(block.timestamp) + _params.decisionWindow;
        }
        c.status = status;
        c.deadline = deadline;
        emit CaseEscalated(caseId, by, lane, status, deadline);
    }

    /*//////////////////////////////////////////////////////////////
                                RESOLVING
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IDisputeManager
    function resolve(
        Resolution calldata resolution,
        IGasEscrow.ClosingState calldata recorded,
        Signature[] calldata signatures
    ) external nonReentrant {
        bytes32 caseId = resolution.caseId;
        Case storage c = _case(caseId);
        if (c.status != CaseStatus.Open) revert WrongCaseStatus(caseId, c.status);
        if (resolution.verdict == Verdict.None) revert InvalidVerdict(resolution.verdict);
        _checkQuorum(_hashResolution(resolution), signatures, c);
        if (resolution.verdict == Verdict.Undecidable) {
            // The fast path failed safe: a human decides, never a guess.
            uint8 lane = c.lane < SLOW_PATH_LANE ? SLOW_PATH_LANE : c.lane;
            _moveToLane(caseId, c, lane, address(0));
            return;
        }
        _enforce(caseId, c, resolution, recorded);
    }

    /// @inheritdoc IDisputeManager
    function resolveSlowPath(Resolution calldata resolution, IGasEscrow.ClosingState calldata recorded)
        external
        onlyRole(GOVERNANCE_ROLE)
        nonReentrant
    {
        bytes32 caseId = resolution.caseId;
        Case storage c = _case(caseId);
        if (c.status != CaseStatus.SlowPath) revert WrongCaseStatus(caseId, c.status);
        if (resolution.verdict == Verdict.None || resolution.verdict == Verdict.Undecidable) {
            revert InvalidVerdict(resolution.verdict);
        }
        _enforce(caseId, c, resolution, recorded);
    }

    /// @inheritdoc IDisputeManager
    function expire(bytes32 caseId, IGasEscrow.ClosingState calldata recorded) external nonReentrant {
        Case storage c = _case(caseId);
        CaseStatus status = c.status;
        if (status != CaseStatus.Open && status != CaseStatus.SlowPath) revert WrongCaseStatus(caseId, status);
        if (block.timestamp <= c.deadline) revert DeadlineNotPassed(caseId, c.deadline);
        if (status == CaseStatus.Open) {
            _moveToLane(caseId, c, SLOW_PATH_LANE, address(0));
            return;
        }
        c.status = CaseStatus.Expired;
        delete _subjects[_subjectKey(c.kind, c.subjectId)].openCase;
        emit CaseExpired(caseId);
        _releaseSubject(c, 0, recorded);
        _pay(c.asset, c.challenger, c.challengerBond);
        _pay(c.asset, c.respondent, c.respondentBond);
    }

    /// @dev Applies a decided verdict: the subject's refund, the SLA-bond slash, then the bonds. State is
    /// final before any external call.
    function _enforce(bytes32 caseId, Case storage c, Resolution calldata r, IGasEscrow.ClosingState calldata recorded)
        private
    {
        Verdict verdict = r.verdict;
        if (r.refund > c.value) revert RefundExceedsValue(caseId, r.refund, c.value);
        if (verdict == Verdict.RespondentWins && (r.refund != 0 || r.slash != 0)) {
            revert RemedyNotAllowed(verdict, r.refund, r.slash);
        }
        if (verdict == Verdict.NoFault && r.slash != 0) revert RemedyNotAllowed(verdict, r.refund, r.slash);

        c.status = CaseStatus.Resolved;
        delete _subjects[_subjectKey(c.kind, c.subjectId)].openCase;

        // Both bonds were paid in, so their sum fits the token's supply: add in 256 bits.
        uint256 challengerBond = c.challengerBond;
        uint256 respondentBond = c.respondentBond;
        uint256 toChallenger;
        uint256 toRespondent;
        uint256 burned;
        if (verdict == Verdict.ChallengerWins) {
            burned = _burnShare(respondentBond);
            toChallenger = challengerBond + respondentBond - burned;
        } else if (verdict == Verdict.RespondentWins) {
            burned = _burnShare(challengerBond);
            toRespondent = respondentBond + challengerBond - burned;
        } else {
            // No fault: nobody loses a bond.
            toChallenger = challengerBond;
            toRespondent = respondentBond;
        }

        uint128 refunded = _releaseSubject(c, r.refund, recorded);
        uint128 slashed = verdict == Verdict.ChallengerWins ? _slash(c, r.slash) : 0;
        emit CaseResolved(caseId, verdict, refunded, slashed, r.resolutionHash, toChallenger, toRespondent, burned);
        _pay(c.asset, c.challenger, toChallenger);
        _pay(c.asset, c.respondent, toRespondent);
        _pay(c.asset, BURN_ADDRESS, burned);
    }

    /// @dev Unfreezes the subject with `refund` and returns what was actually refunded (zero if the escrow's
    /// own backstop settled the subject meanwhile).
    function _releaseSubject(Case storage c, uint128 refund, IGasEscrow.ClosingState calldata recorded)
        private
        returns (uint128)
    {
        if (c.kind == SubjectKind.Gig) {
            return gigEscrow.resolve(uint64(uint256(c.subjectId)), refund) ? refund : 0;
        }
        bool applied = gasEscrow.release(c.subjectId, recorded, refund);
        if (!applied) return 0;
        uint128 earned = _valueOf(recorded);
        return refund < earned ? refund : earned;
    }

    /// @dev Slashes up to `amount` of the respondent's SLA bond (whatever it still holds), to the challenger.
    function _slash(Case storage c, uint128 amount) private returns (uint128) {
        if (amount == 0) return 0;
        IProviderRegistry.Bond memory b = registry.bondOf(IProviderRegistry.Role.Provider, c.respondent);
        uint256 held = uint256(b.active) + b.pending;
        uint256 take = amount < held ? amount : held;
        if (take == 0) return 0;
        registry.slash(IProviderRegistry.Role.Provider, c.respondent, take, c.challenger, _params.burnBps);
        return uint128(take); // <= amount
    }

    /// @dev Requires at least `quorum` signatures by distinct active arbitrators with the pinned runtime,
    /// none of them a party, in ascending address order.
    function _checkQuorum(bytes32 digest, Signature[] calldata signatures, Case storage c) private view {
        Params memory p = _params;
        uint256 n = signatures.length;
        if (n < p.quorum) revert QuorumNotMet(n, p.quorum);
        address previous;
        address challenger = c.challenger;
        address respondent = c.respondent;
        for (uint256 i; i < n; ++i) {
            (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecover(digest, signatures[i].r, signatures[i].vs);
            if (err != ECDSA.RecoverError.NoError) revert InvalidSignature(i);
            if (signer <= previous) revert SignersNotAscending(i, signer);
            previous = signer;
            if (signer == challenger || signer == respondent) revert ConflictedArbitrator(signer);
            if (!registry.isActiveArbitrator(signer)) revert NotAnActiveArbitrator(signer);
            if (p.judgeRuntimeHash != 0) {
                bytes32 pinned = registry.judgeRuntimeHashOf(signer);
                if (pinned != p.judgeRuntimeHash) revert WrongJudgeRuntime(signer, pinned, p.judgeRuntimeHash);
            }
        }
    }

    /*//////////////////////////////////////////////////////////////
                               GOVERNANCE
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IDisputeManager
    function setParams(Params calldata p) external onlyRole(GOVERNANCE_ROLE) {
        _setParams(p);
    }

    function _setParams(Params memory p) private {
        if (p.riskBps > BPS) revert InvalidParams("riskBps > 10000");
        if (p.burnBps > BPS) revert InvalidParams("burnBps > 10000");
        if (p.laneMultiplier == 0 || p.laneMultiplier > MAX_LANE_MULTIPLIER) revert InvalidParams("laneMultiplier");
        if (p.quorum == 0 || p.quorum > MAX_QUORUM) revert InvalidParams("quorum");
        if (p.maxEscalations > MAX_ESCALATIONS) revert InvalidParams("maxEscalations");
        if (p.decisionWindow < MIN_WINDOW || p.decisionWindow > MAX_DECISION_WINDOW) {
            revert InvalidParams("decisionWindow");
        }
        if (p.slowPathTimeout < p.decisionWindow || p.slowPathTimeout > MAX_SLOW_PATH_TIMEOUT) {
            revert InvalidParams("slowPathTimeout");
        }
        if (p.bondFloor == 0) revert InvalidParams("bondFloor");
        _params = p;
        emit ParamsSet(p);
    }

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IDisputeManager
    function bondFor(uint256 value, uint8 lane) external view returns (uint256) {
        return _bondFor(value, lane);
    }

    /// @inheritdoc IDisputeManager
    function caseOf(bytes32 caseId) external view returns (Case memory) {
        return _cases[caseId];
    }

    /// @inheritdoc IDisputeManager
    function nextCaseId(SubjectKind kind, bytes32 subjectId) external view returns (bytes32) {
        return _caseId(kind, subjectId, _subjects[_subjectKey(kind, subjectId)].cases);
    }

    /// @inheritdoc IDisputeManager
    function params() external view returns (Params memory) {
        return _params;
    }

    /// @inheritdoc IDisputeManager
    function hashResolution(Resolution calldata resolution) external view returns (bytes32) {
        return _hashResolution(resolution);
    }

    /*//////////////////////////////////////////////////////////////
                                INTERNALS
    //////////////////////////////////////////////////////////////*/

    function _case(bytes32 caseId) private view returns (Case storage c) {
        c = _cases[caseId];
        if (c.status == CaseStatus.None) revert UnknownCase(caseId);
    }

    function _subjectKey(SubjectKind kind, bytes32 subjectId) private pure returns (bytes32) {
        return keccak256(abi.encode(kind, subjectId));
    }

    function _caseId(SubjectKind kind, bytes32 subjectId, uint8 index) private pure returns (bytes32) {
        return keccak256(abi.encode(kind, subjectId, index));
    }

    function _hashResolution(Resolution calldata r) private view returns (bytes32) {
        return _hashTypedDataV4(
            keccak256(abi.encode(RESOLUTION_TYPEHASH, r.caseId, uint8(r.verdict), r.refund, r.slash, r.resolutionHash))
        );
    }

    /// @dev max(value × riskBps / BPS, floor) × multiplier^lane, reverting if it does not fit a uint128.
    function _bondFor(uint256 value, uint8 lane) private view returns (uint128) {
        if (lane > MAX_LANE) revert InvalidLane(lane);
        Params memory p = _params;
        uint256 base = value * p.riskBps / BPS;
        if (base < p.bondFloor) base = p.bondFloor;
        return (base * uint256(p.laneMultiplier) ** lane).toUint128();
    }

    function _burnShare(uint256 bond) private view returns (uint256) {
        return bond * _params.burnBps / BPS; // <= bond
    }

    /// @dev Takes a bond of exactly `due` from the caller: ETH as `msg.value`, or the case's token.
    function _receiveBond(address asset, uint256 due) private {
        if (asset == address(0)) {
            if (msg.value != due) revert BondValueMismatch(msg.value, due);
            return;
        }
        if (msg.value != 0) revert BondValueMismatch(msg.value, 0);
        if (due == 0) return;
        uint256 before = SafeTransferLib.balanceOf(asset, address(this));
        SafeTransferLib.safeTransferFrom(asset, msg.sender, address(this), due);
        uint256 received = SafeTransferLib.balanceOf(asset, address(this)) - before;
        if (received < due) revert BondShortfall(received, due);
    }

    /// @dev ETH is force-sent so a hostile party cannot block the other's payout.
    function _pay(address asset, address to, uint256 amount) private {
        if (amount == 0) return;
        if (asset == address(0)) SafeTransferLib.forceSafeTransferETH(to, amount);
        else SafeTransferLib.safeTransfer(asset, to, amount);
    }

    /// @dev Transient storage exists on every chain this contract targets (Cancun and later).
    function _useTransientReentrancyGuardOnlyOnMainnet() internal pure override returns (bool) {
        return false;
    }
}
