// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {SafeTransferLib} from "solady/src/utils/SafeTransferLib.sol";
import {IERC5267} from "@openzeppelin/contracts/interfaces/IERC5267.sol";
import {IDisputeManager} from "./interfaces/IDisputeManager.sol";
import {IGasEscrow} from "./interfaces/IGasEscrow.sol";
import {IGasEscrowTypes} from "./interfaces/IGasEscrowTypes.sol";
import {IGigEscrow} from "./interfaces/IGigEscrow.sol";
import {IProviderRegistry} from "./interfaces/IProviderRegistry.sol";
import {IRandomness} from "./interfaces/IRandomness.sol";
import {DisputeRules} from "./libraries/DisputeRules.sol";
import {Panels} from "./libraries/Panels.sol";

/// @title DisputeManager
/// @notice Takes challenges against a gig's delivery or a closing session's receipts, holds the parties' bonds,
/// draws a panel of arbitrators per case, and enforces the verdict that stands after the appeal window: a refund
/// through the escrow, a slash of the respondent's SLA bond, the bonds to the winner less a burnt share and the
/// arbitration fee, and slashes of arbitrators whose verdict was overturned or who never signed.
/// @dev Holds `DISPUTE_ROLE` on GasEscrow and GigEscrow and `SLASHER_ROLE` and `LOCKER_ROLE` on the registry.
///
/// Who judges (decision 0014): a panel is drawn for each round after the case opens and after the respondent
/// could contest, from randomness requested at that moment (`IRandomness`), weighted by stake, from the admitted
/// arbitrators pinned to the judge runtime; no address bound to the subject and no earlier panel member can be
/// drawn. A verdict needs two thirds of the panel and more stake at risk than the case moves.
///
/// A panel is drawn from the draw weights as they stood when its randomness was requested (the registry's
/// checkpoints): nobody can move a pick once the randomness is known (decision 0014).
///
/// Rules fixed per case: a case keeps the parameters and asset terms in force when it opened; new ones apply only
/// to cases opened once the registry's unbonding delay has passed since they were set, so a bond holder who
/// objects can leave first.
///
/// Liveness: every case ends. A round not drawn or not decided by its deadline goes to the slow path; a slow-path
/// case governance does not decide by its deadline is expired by anyone, enforcing the verdict that stood before
/// the appeal, or, when none ever stood, leaving the subject where its own rules put it without a dispute (no
/// refund: a delivered gig is released, a closing session pays what was recorded) with both bonds returned —
/// never a split a party could force (decision 0015). The longest case (respond window + two
/// rounds of draw, decision and appeal + slow path, at most 137 days under the bounds below) stays inside the
/// escrows' 180-day freeze backstop.
contract DisputeManager is IDisputeManager {
    using SafeCast for uint256;

    /*//////////////////////////////////////////////////////////////
                               CONSTANTS
    //////////////////////////////////////////////////////////////*/

    /// @notice EIP-712 type of what arbitrators sign. Mirrors `arbitration/resolution.ts`.
    bytes32 public constant RESOLUTION_TYPEHASH =
        keccak256("Resolution(bytes32 caseId,uint8 verdict,uint128 refund,uint128 slash,bytes32 resolutionHash)");


    /// @notice EIP-712 domain: name "IOI DisputeManager", version "1", this chain and this contract (no salt).
    /// Written out rather than inherited from OpenZeppelin's EIP712 to keep the contract under the code-size
    /// limit; `eip712Domain()` (ERC-5267) reports the same four fields (a test checks the two agree).
    bytes32 private constant _DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant _NAME_HASH = keccak256("IOI DisputeManager");
    bytes32 private constant _VERSION_HASH = keccak256("1");

    /// @notice Where burnt bond shares go (nobody holds its key), as in the ProviderRegistry.
    address public constant BURN_ADDRESS = 0x000000000000000000000000000000000000dEaD;

    /// @notice Basis points in a whole.
    uint16 public constant BPS = 10_000;

    /// @notice Stake rates are bond-token units per this many units of an asset.
    uint256 public constant STAKE_RATE_UNIT = 1e18;

    /// @notice Cases any one subject can ever have, so repeated challenges cannot grief it for long.
    uint8 public constant MAX_CASES_PER_SUBJECT = 3;

    /// @notice Highest lane a case opens at (lane 0: signatures and bindings; lane 1: objective checks).
    uint8 public constant MAX_OPEN_LANE = 1;

    /// @notice Rounds 0 and 1 are judged by drawn panels; round 2 is the slow path.
    uint8 public constant SLOW_PATH_ROUND = 2;

    /*//////////////////////////////////////////////////////////////
                                 STATE
    //////////////////////////////////////////////////////////////*/

    IGasEscrow public immutable gasEscrow;
    IGigEscrow public immutable gigEscrow;
    IProviderRegistry public immutable registry;
    IRandomness public immutable randomness;

    /// @notice Sets the parameters and asset terms and decides slow-path cases: the TimelockController on every
    /// deployment (`scripts/deploy.ts`), so every such power acts only after a public delay. Fixed for good: a
    /// new governance means a new DisputeManager, which the escrows' roles (behind the same timelock) must admit.
    address public immutable governance;

    /// @dev The domain separator at deployment, rebuilt only if the chain id changes (a fork).
    uint256 private immutable _cachedChainId;
    bytes32 private immutable _cachedDomainSeparator;

    /// @dev Every parameter set ever in force or queued, by index (a case stores the index it opened under).
    Params[] private _rules;

    /// @dev The index last recorded in force, and when the last entry of `_rules` takes (or took) over.
    uint16 private _activeRules;
    uint40 private _latestRulesFrom;

    /// @dev Per asset: the terms in force, and terms queued to take over at `from` (zero: nothing queued).
    struct TermsState {
        AssetTerms active;
        AssetTerms queued;
        uint40 from;
    }

    mapping(address asset => TermsState) private _assetTerms;

    mapping(bytes32 caseId => Case) private _cases;

    mapping(bytes32 caseId => mapping(uint256 round => Round)) private _rounds;

    mapping(bytes32 caseId => mapping(uint256 round => address[])) private _panels;

    mapping(address asset => mapping(address account => uint256)) private _claimable;

    /// @dev Per subject (keyed by `_subjectKey`): its open case and how many cases it had.
    struct SubjectState {
        bytes32 openCase;
        uint8 cases;
    }

    mapping(bytes32 subjectKey => SubjectState) private _subjects;

    constructor(
        address governance_,
        IGasEscrow gasEscrow_,
        IGigEscrow gigEscrow_,
        IProviderRegistry registry_,
        IRandomness randomness_,
        Params memory p
    ) {
        _cachedChainId = block.chainid;
        _cachedDomainSeparator = _buildDomainSeparator();
        if (
            governance_ == address(0) || address(gasEscrow_) == address(0) || address(gigEscrow_) == address(0)
                || address(registry_) == address(0) || address(randomness_) == address(0)
        ) revert ZeroAddress();
        gasEscrow = gasEscrow_;
        gigEscrow = gigEscrow_;
        registry = registry_;
        randomness = randomness_;
        governance = governance_;
        DisputeRules.validate(p);
        _rules.push(p);
        _latestRulesFrom = uint40(block.timestamp);
        emit ParamsSet(p, uint40(block.timestamp));
    }

    modifier onlyGovernance() {
        if (msg.sender != governance) revert NotGovernance(msg.sender);
        _;
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
        Case memory draft =
            _draft(SubjectKind.Gig, subjectId, gig.provider, address(0), gig.asset, gig.amount, lane, packageHash);
        caseId = _openCase(draft, 0);
        // Reverts unless the gig is delivered and its dispute window is still open. The gig's own lock on the
        // provider's bond lasts until the case settles it.
        gigEscrow.freeze(gigId);
    }

    /// @inheritdoc IDisputeManager
    function openSessionCase(
        IGasEscrowTypes.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrowTypes.ClosingState calldata recorded,
        bytes32 receiptHash,
        bytes32 ticketHash,
        bytes32[] calldata proof,
        uint8 lane,
        bytes32 packageHash
    ) external payable nonReentrant returns (bytes32 caseId) {
        (bytes32 sessionId, address related, bytes32 leaf, bool settled) = DisputeRules.sessionSubject(
            gasEscrow,
            terms,
            openedAt,
            recorded,
            receiptHash,
            ticketHash,
            proof,
            _rules[_rulesNow()].settledDisputeWindow
        );
        Case memory draft = _draft(
            SubjectKind.Session, sessionId, terms.provider, related, terms.asset, _valueOf(recorded), lane, packageHash
        );
        caseId = _openCase(draft, leaf);
        // Reverts unless the session's challenge window is still open. A settled session has paid out already:
        // the provider's bond, locked below, answers for it instead.
        if (!settled) gasEscrow.freeze(sessionId, recorded);
        registry.lockBond(IProviderRegistry.Role.Provider, terms.provider);
    }

    /// @dev What a closing session disputes: its recorded amount, capped at the deposit.
    function _valueOf(IGasEscrowTypes.ClosingState calldata recorded) private pure returns (uint128) {
        return recorded.amount < recorded.deposit ? recorded.amount : recorded.deposit;
    }

    /// @dev The parts of a new case that come from its subject.
    function _draft(
        SubjectKind kind,
        bytes32 subjectId,
        address respondent,
        address related,
        address asset,
        uint128 value,
        uint8 lane,
        bytes32 packageHash
    ) private pure returns (Case memory c) {
        c.kind = kind;
        c.subjectId = subjectId;
        c.respondent = respondent;
        c.related = related;
        c.asset = asset;
        c.value = value;
        c.lane = lane;
        c.packageHash = packageHash;
    }

    /// @dev Checks and stores a new case for the caller, then takes the challenger's bond.
    function _openCase(Case memory c, bytes32 leaf) private returns (bytes32 caseId) {
        if (c.lane > MAX_OPEN_LANE) revert InvalidLane(c.lane);
        if (c.packageHash == 0) revert ZeroPackageHash();
        SubjectState storage subject = _subjects[_subjectKey(c.kind, c.subjectId)];
        if (subject.openCase != 0) revert CaseAlreadyOpen(c.subjectId, subject.openCase);
        if (subject.cases >= MAX_CASES_PER_SUBJECT) revert TooManyCases(c.subjectId);
        caseId = _caseId(c.kind, c.subjectId, subject.cases);
        unchecked {
            ++subject.cases; // < MAX_CASES_PER_SUBJECT checked above
        }
        subject.openCase = caseId;

        uint16 rules = _promoteRules();
        Params storage p = _rules[rules];
        AssetTerms memory terms = _promoteTerms(c.asset);
        c.challenger = msg.sender;
        c.status = CaseStatus.Open;
        c.rules = rules;
        c.stakeRate = terms.stakeRate;
        c.respondBy = uint40(block.timestamp) + p.respondWindow;
        c.deadline = c.respondBy + p.decisionWindow;
        c.challengerBond = _bondFor(p, terms, c.asset, c.value, c.lane);
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
            c.respondBy
        );
        _receiveBond(c.asset, c.challengerBond);
    }

    /*//////////////////////////////////////////////////////////////
                           CONTESTING AND DRAWING
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IDisputeManager
    function respond(bytes32 caseId) external payable nonReentrant {
        Case storage c = _case(caseId);
        _requireStatus(caseId, c, CaseStatus.Open);
        if (msg.sender != c.respondent) revert NotTheRespondent(caseId, msg.sender);
        Round storage r = _rounds[caseId][0];
        // Only before the first panel's randomness is requested: the respondent never acts knowing its panel.
        if (c.round != 0 || r.drawTicket != 0 || block.timestamp > c.respondBy) {
            revert ContestClosed(caseId, c.respondBy);
        }
        uint128 bond = c.challengerBond;
        c.respondentBond = bond;
        emit CaseContested(caseId, msg.sender, bond);
        _requestDraw(caseId, 0, r);
        _receiveBond(c.asset, bond);
    }

    /// @inheritdoc IDisputeManager
    function drawPanel(bytes32 caseId) external nonReentrant {
        Case storage c = _case(caseId);
        _requireStatus(caseId, c, CaseStatus.Open);
        if (block.timestamp > c.deadline) revert DeadlinePassed(caseId, c.deadline);
        uint8 round = c.round;
        Round storage r = _rounds[caseId][round];
        uint256 ticket = r.drawTicket;
        if (ticket == 0) {
            if (c.respondentBond == 0 && block.timestamp <= c.respondBy) revert RespondWindowOpen(caseId, c.respondBy);
            _requestDraw(caseId, round, r);
            return;
        }
        (bytes32 value, bool expired) = randomness.valueOf(ticket);
        // A snapshot older than the registry keeps exact is never drawn from: fresh randomness, fresh weights.
        if (expired || block.number > uint256(r.snapshotBlock) + registry.SNAPSHOT_HORIZON()) {
            _requestDraw(caseId, round, r);
            return;
        }
        if (value == 0) revert RandomnessNotReady(caseId, ticket);

        address[] memory panel = _draw(caseId, c, r.snapshotBlock, keccak256(abi.encode(value, caseId, round)));
        if (panel.length == 0) {
            _toSlowPath(caseId, c);
            return;
        }
        _panels[caseId][round] = panel;
        uint40 deadline = uint40(block.timestamp) + _paramsOf(c).decisionWindow;
        c.status = CaseStatus.Deliberating;
        c.deadline = deadline;
        emit PanelDrawn(caseId, round, panel, deadline);
        for (uint256 i; i < panel.length; ++i) {
            registry.lockBond(IProviderRegistry.Role.Arbitrator, panel[i]);
        }
    }

    function _requestDraw(bytes32 caseId, uint8 round, Round storage r) private {
        uint256 ticket = randomness.request();
        r.drawTicket = ticket;
        r.snapshotBlock = uint48(block.number);
        emit PanelRequested(caseId, round, ticket);
    }

    /// @dev Draws the panel of the case's current round from everyone eligible but the addresses bound to the
    /// subject and the first round's panel.
    function _draw(bytes32 caseId, Case storage c, uint48 snapshotBlock, bytes32 seed)
        private
        view
        returns (address[] memory)
    {
        address[] memory earlier = c.round == 0 ? new address[](0) : _panels[caseId][0];
        address[] memory excluded = new address[](earlier.length + 3);
        excluded[0] = c.challenger;
        excluded[1] = c.respondent;
        excluded[2] = c.related;
        for (uint256 i; i < earlier.length; ++i) {
            excluded[i + 3] = earlier[i];
        }
        Params storage p = _paramsOf(c);
        uint256 size = c.round == 0 ? p.panelSize : 2 * uint256(p.panelSize) - 1;
        return Panels.draw(registry, p.judgeRuntimeHash, excluded, size, snapshotBlock, seed);
    }

    /*//////////////////////////////////////////////////////////////
                           VERDICTS AND APPEALS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IDisputeManager
    function submitVerdict(Resolution calldata resolution, Signature[] calldata signatures) external nonReentrant {
        bytes32 caseId = resolution.caseId;
        Case storage c = _case(caseId);
        _requireStatus(caseId, c, CaseStatus.Deliberating);
        if (block.timestamp > c.deadline) revert DeadlinePassed(caseId, c.deadline);
        Resolution memory o = resolution;
        _checkRemedy(caseId, c, o, true);
        Round storage r = _rounds[caseId][c.round];
        Params storage p = _paramsOf(c);
        // A supermajority of the panel, losing more if overturned than the case moves (its value plus the slash).
        uint16 mask = Panels.signers(
            registry,
            caseId,
            _hashResolution(resolution),
            signatures,
            _panels[caseId][c.round],
            true,
            p.overturnSlashBps,
            _valueInStake(c, c.value) + o.slash
        );

        r.verdict = o.verdict;
        r.refund = o.refund;
        r.slash = o.slash;
        r.resolutionHash = o.resolutionHash;
        r.signedMask = mask;
        if (o.verdict == Verdict.Undecidable) {
            // The fast path failed safe: governance decides, never a guess.
            emit VerdictSubmitted(caseId, c.round, o.verdict, 0, 0, o.resolutionHash, mask, 0);
            _toSlowPath(caseId, c);
            return;
        }
        uint40 appealEndsAt = uint40(block.timestamp) + p.appealWindow;
        c.status = CaseStatus.Decided;
        c.deadline = appealEndsAt;
        emit VerdictSubmitted(caseId, c.round, o.verdict, o.refund, o.slash, o.resolutionHash, mask, appealEndsAt);
    }


    /// @inheritdoc IDisputeManager
    function postSignatures(Resolution calldata resolution, Signature[] calldata signatures) external {
        bytes32 caseId = resolution.caseId;
        Case storage c = _case(caseId);
        _requireStatus(caseId, c, CaseStatus.Deliberating);
        if (block.timestamp > c.deadline) revert DeadlinePassed(caseId, c.deadline);
        // Every signer must sit on this round's panel (no supermajority needed here).
        bytes32 digest = _hashResolution(resolution);
        Panels.signers(registry, caseId, digest, signatures, _panels[caseId][c.round], false, 0, 0);
        emit SignaturesPosted(caseId, c.round, resolution, signatures);
    }

    /// @inheritdoc IDisputeManager
    function publishEvidence(bytes32 caseId, string calldata uri) external {
        Case storage c = _case(caseId);
        if (msg.sender != c.challenger && msg.sender != c.respondent) revert NotAParty(caseId, msg.sender);
        if (c.status >= CaseStatus.Resolved) revert WrongCaseStatus(caseId, c.status);
        emit EvidencePublished(caseId, msg.sender, uri);
    }

    /// @inheritdoc IDisputeManager
    function appeal(bytes32 caseId) external payable nonReentrant {
        Case storage c = _case(caseId);
        _requireStatus(caseId, c, CaseStatus.Decided);
        if (block.timestamp > c.deadline) revert DeadlinePassed(caseId, c.deadline);
        if (msg.sender != c.challenger && msg.sender != c.respondent) revert NotAParty(caseId, msg.sender);
        Params storage p = _paramsOf(c);
        if (c.round >= p.maxAppeals) revert AppealCapReached(caseId, p.maxAppeals);

        uint8 round = c.round + 1; // <= MAX_APPEALS = SLOW_PATH_ROUND
        // The opening bond was base × multiplier^lane under the same rules, so this is base × multiplier^(lane+round).
        uint128 bond = (uint256(c.challengerBond) * uint256(p.laneMultiplier) ** round).toUint128();
        Round storage r = _rounds[caseId][round];
        r.appellant = msg.sender;
        r.appealBond = bond;
        c.round = round;
        uint40 deadline;
        if (round < SLOW_PATH_ROUND) {
            deadline = uint40(block.timestamp) + p.decisionWindow;
            c.status = CaseStatus.Open;
            c.deadline = deadline;
            emit CaseAppealed(caseId, msg.sender, round, bond, CaseStatus.Open, deadline);
            _requestDraw(caseId, round, r);
        } else {
            deadline = uint40(block.timestamp) + p.slowPathTimeout;
            c.status = CaseStatus.SlowPath;
            c.deadline = deadline;
            emit CaseAppealed(caseId, msg.sender, round, bond, CaseStatus.SlowPath, deadline);
        }
        _receiveBond(c.asset, bond);
    }

    /*//////////////////////////////////////////////////////////////
                                 ENDINGS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IDisputeManager
    function finalize(bytes32 caseId, IGasEscrowTypes.ClosingState calldata recorded) external nonReentrant {
        Case storage c = _case(caseId);
        _requireStatus(caseId, c, CaseStatus.Decided);
        if (block.timestamp <= c.deadline) revert DeadlineNotPassed(caseId, c.deadline);
        Round storage r = _rounds[caseId][c.round];
        Resolution memory o = Resolution(caseId, r.verdict, r.refund, r.slash, r.resolutionHash);
        _settle(caseId, c, o, recorded, CaseStatus.Resolved);
    }

    /// @inheritdoc IDisputeManager
    function resolveSlowPath(Resolution calldata resolution, IGasEscrowTypes.ClosingState calldata recorded)
        external
        onlyGovernance
        nonReentrant
    {
        bytes32 caseId = resolution.caseId;
        Case storage c = _case(caseId);
        _requireStatus(caseId, c, CaseStatus.SlowPath);
        Resolution memory o = resolution;
        _checkRemedy(caseId, c, o, false);
        Round storage r = _rounds[caseId][SLOW_PATH_ROUND];
        r.verdict = o.verdict;
        r.refund = o.refund;
        r.slash = o.slash;
        r.resolutionHash = o.resolutionHash;
        _settle(caseId, c, o, recorded, CaseStatus.Resolved);
    }

    /// @inheritdoc IDisputeManager
    function expire(bytes32 caseId, IGasEscrowTypes.ClosingState calldata recorded) external nonReentrant {
        Case storage c = _case(caseId);
        CaseStatus status = c.status;
        if (status != CaseStatus.Open && status != CaseStatus.Deliberating && status != CaseStatus.SlowPath) {
            revert WrongCaseStatus(caseId, status);
        }
        if (block.timestamp <= c.deadline) revert DeadlineNotPassed(caseId, c.deadline);
        if (status != CaseStatus.SlowPath) {
            _toSlowPath(caseId, c);
            return;
        }
        // Governance did not decide. The verdict that stood before an appeal stands: an appeal nobody heard
        // never pays the appellant. Without any verdict the subject ends as its own rules end it without a
        // dispute (no refund) and both bonds come back in full (no signer earns the fee): no half split either
        // side could force by starving the panels.
        (bool stood, Resolution memory o) = _latestVerdict(caseId, SLOW_PATH_ROUND);
        if (!stood) o = Resolution(caseId, Verdict.NoFault, 0, 0, bytes32(0));
        emit CaseExpired(caseId, stood);
        _settle(caseId, c, o, recorded, CaseStatus.Expired);
    }

    function _toSlowPath(bytes32 caseId, Case storage c) private {
        uint40 deadline = uint40(block.timestamp) + _paramsOf(c).slowPathTimeout;
        c.round = SLOW_PATH_ROUND;
        c.status = CaseStatus.SlowPath;
        c.deadline = deadline;
        emit CaseToSlowPath(caseId, SLOW_PATH_ROUND, deadline);
    }

    /// @dev Enforces `o` for good (`DisputeRules.settle`: refund, SLA slash, bonds, fees, arbitrator penalties
    /// and unlocks, then the transfers), after marking the case final.
    function _settle(
        bytes32 caseId,
        Case storage c,
        Resolution memory o,
        IGasEscrowTypes.ClosingState calldata recorded,
        CaseStatus finalStatus
    ) private {
        c.status = finalStatus;
        delete _subjects[_subjectKey(c.kind, c.subjectId)].openCase;
        DisputeRules.settle(
            c,
            _rounds[caseId],
            _panels[caseId],
            _claimable[c.asset],
            _paramsOf(c),
            DisputeRules.Escrows(gasEscrow, gigEscrow, registry),
            o,
            recorded
        );
    }

    /*//////////////////////////////////////////////////////////////
                                 CLAIMS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IDisputeManager
    function claim(address asset) external nonReentrant returns (uint256 amount) {
        amount = _claimable[asset][msg.sender];
        if (amount == 0) revert NothingToClaim(asset, msg.sender);
        delete _claimable[asset][msg.sender];
        emit Claimed(asset, msg.sender, amount);
        if (asset == address(0)) SafeTransferLib.safeTransferETH(msg.sender, amount);
        else SafeTransferLib.safeTransfer(asset, msg.sender, amount);
    }

    /*//////////////////////////////////////////////////////////////
                               GOVERNANCE
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IDisputeManager
    function setParams(Params calldata p) external onlyGovernance {
        DisputeRules.validate(p);
        _promoteRules();
        // Case.rules holds an index as a uint16.
        if (_rules.length > type(uint16).max) revert InvalidParams("too many parameter sets");
        uint40 from = _delayed();
        _rules.push(p);
        _latestRulesFrom = from;
        emit ParamsSet(p, from);
    }

    /// @inheritdoc IDisputeManager
    function setAssetTerms(address asset, AssetTerms calldata terms) external onlyGovernance {
        if (terms.stakeRate != 0 && terms.bondFloor == 0) revert InvalidParams("bondFloor");
        TermsState storage t = _assetTerms[asset];
        AssetTerms memory active = _promoteTerms(asset);
        // An asset without terms has no case and no bond exposed to it yet: its first terms apply at once.
        uint40 from = active.stakeRate == 0 ? uint40(block.timestamp) : _delayed();
        if (from == block.timestamp) (t.active, t.from) = (terms, 0);
        else (t.queued, t.from) = (terms, from);
        emit AssetTermsSet(asset, terms.bondFloor, terms.stakeRate, from);
    }

    /// @dev When a change set now takes effect: after the registry's unbonding delay. A bond holder reacts while
    /// the change waits in the timelock's public queue (its own delay comes on top), so an unbonding it requests
    /// when the change is scheduled matures before the change applies to any case.
    function _delayed() private view returns (uint40) {
        return uint40(block.timestamp + registry.unbondingDelay());
    }

    /// @dev The parameter index in force now, recording a queued set that has come into force.
    function _promoteRules() private returns (uint16 active) {
        active = _rulesNow();
        if (active != _activeRules) _activeRules = active;
    }

    function _rulesNow() private view returns (uint16) {
        // Fits: setParams refuses a 65,537th set, so the last index is at most 65,535.
        return block.timestamp >= _latestRulesFrom ? uint16(_rules.length - 1) : _activeRules;
    }

    /// @dev `asset`'s terms in force now, recording queued terms that have come into force.
    function _promoteTerms(address asset) private returns (AssetTerms memory) {
        TermsState storage t = _assetTerms[asset];
        if (t.from != 0 && block.timestamp >= t.from) (t.active, t.from) = (t.queued, 0);
        return t.active;
    }

    function _termsNow(address asset) private view returns (AssetTerms memory) {
        TermsState storage t = _assetTerms[asset];
        return t.from != 0 && block.timestamp >= t.from ? t.queued : t.active;
    }

    function _paramsOf(Case storage c) private view returns (Params storage) {
        return _rules[c.rules];
    }

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IDisputeManager
    function bondFor(address asset, uint256 value, uint8 level) external view returns (uint256) {
        return _bondFor(_rules[_rulesNow()], _termsNow(asset), asset, value, level);
    }

    /// @inheritdoc IDisputeManager
    function caseOf(bytes32 caseId) external view returns (Case memory) {
        return _cases[caseId];
    }

    /// @inheritdoc IDisputeManager
    function roundOf(bytes32 caseId, uint8 round) external view returns (Round memory) {
        return _rounds[caseId][round];
    }

    /// @inheritdoc IDisputeManager
    function panelOf(bytes32 caseId, uint8 round) external view returns (address[] memory) {
        return _panels[caseId][round];
    }

    /// @inheritdoc IDisputeManager
    function nextCaseId(SubjectKind kind, bytes32 subjectId) external view returns (bytes32) {
        return _caseId(kind, subjectId, _subjects[_subjectKey(kind, subjectId)].cases);
    }

    /// @inheritdoc IDisputeManager
    function params() external view returns (Params memory) {
        return _rules[_rulesNow()];
    }

    /// @inheritdoc IDisputeManager
    function latestParams() external view returns (Params memory, uint40 effectiveAt) {
        return (_rules[_rules.length - 1], _latestRulesFrom);
    }

    /// @inheritdoc IDisputeManager
    function caseParams(bytes32 caseId) external view returns (Params memory) {
        return _paramsOf(_case(caseId));
    }

    /// @inheritdoc IDisputeManager
    function assetTerms(address asset) external view returns (AssetTerms memory) {
        return _termsNow(asset);
    }

    /// @inheritdoc IDisputeManager
    function claimable(address asset, address account) external view returns (uint256) {
        return _claimable[asset][account];
    }

    /// @inheritdoc IERC5267
    /// @dev Fields `0x0f`: name "IOI DisputeManager", version "1", chainId and verifyingContract; no salt, no
    /// extensions. The ABI encoding is written out word by word: the compiler's encoder of two strings and an
    /// array cost 338 bytes of code, more than this contract's headroom under EIP-170 allows.
    function eip712Domain()
        external
        view
        returns (bytes1, string memory, string memory, uint256, address, bytes32, uint256[] memory)
    {
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            let m := mload(0x40)
            mstore(m, shl(248, 0x0f)) // fields
            mstore(add(m, 0x20), 0xe0) // offset of name
            mstore(add(m, 0x40), 0x120) // offset of version
            mstore(add(m, 0x60), chainid())
            mstore(add(m, 0x80), address())
            mstore(add(m, 0xa0), 0) // salt
            mstore(add(m, 0xc0), 0x160) // offset of extensions
            mstore(add(m, 0xe0), 18) // name: length, then its bytes left-aligned
            mstore(add(m, 0x100), "IOI DisputeManager")
            mstore(add(m, 0x120), 1) // version
            mstore(add(m, 0x140), "1")
            mstore(add(m, 0x160), 0) // extensions: empty
            return(m, 0x180)
        }
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

    function _requireStatus(bytes32 caseId, Case storage c, CaseStatus required) private view {
        CaseStatus status = c.status;
        if (status != required) revert WrongCaseStatus(caseId, status);
    }

    /// @dev Checks a remedy against its verdict, the disputed value and the slash cap (`DisputeRules.checkRemedy`).
    function _checkRemedy(bytes32 caseId, Case storage c, Resolution memory o, bool panel) private view {
        uint256 cap = Math.mulDiv(_valueInStake(c, c.value), _paramsOf(c).slashCapBps, BPS);
        DisputeRules.checkRemedy(caseId, c.value, cap, o.verdict, o.refund, o.slash, panel);
    }

    /// @dev The latest verdict decided in a round before `beforeRound`, if any.
    function _latestVerdict(bytes32 caseId, uint256 beforeRound) private view returns (bool, Resolution memory o) {
        for (uint256 round = beforeRound; round > 0; --round) {
            Round storage r = _rounds[caseId][round - 1];
            Verdict v = r.verdict;
            if (v != Verdict.None && v != Verdict.Undecidable) {
                return (true, Resolution(caseId, v, r.refund, r.slash, r.resolutionHash));
            }
        }
        return (false, o);
    }

    function _subjectKey(SubjectKind kind, bytes32 subjectId) private pure returns (bytes32) {
        return keccak256(abi.encode(kind, subjectId));
    }

    function _caseId(SubjectKind kind, bytes32 subjectId, uint8 index) private pure returns (bytes32) {
        return keccak256(abi.encode(kind, subjectId, index));
    }

    function _hashResolution(Resolution memory r) private view returns (bytes32) {
        bytes32 structHash =
            keccak256(abi.encode(RESOLUTION_TYPEHASH, r.caseId, uint8(r.verdict), r.refund, r.slash, r.resolutionHash));
        bytes32 domain = block.chainid == _cachedChainId ? _cachedDomainSeparator : _buildDomainSeparator();
        return keccak256(abi.encodePacked(hex"1901", domain, structHash));
    }

    function _buildDomainSeparator() private view returns (bytes32) {
        return keccak256(abi.encode(_DOMAIN_TYPEHASH, _NAME_HASH, _VERSION_HASH, block.chainid, address(this)));
    }

    function _valueInStake(Case storage c, uint256 amount) private view returns (uint256) {
        return Math.mulDiv(amount, c.stakeRate, STAKE_RATE_UNIT);
    }

    /// @dev max(value × riskBps / BPS, the asset's floor) × multiplier^level, reverting for an asset without
    /// terms or a bond that does not fit a uint128.
    function _bondFor(Params storage p, AssetTerms memory terms, address asset, uint256 value, uint8 level)
        private
        view
        returns (uint128)
    {
        if (terms.stakeRate == 0) revert AssetNotSupported(asset);
        uint256 base = value * p.riskBps / BPS;
        if (base < terms.bondFloor) base = terms.bondFloor;
        return (base * uint256(p.laneMultiplier) ** level).toUint128();
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
        // An over-crediting token would leave a surplus nobody owns here: refused like a short one (issue 28).
        if (received != due) revert BondOvercredited(received, due);
    }

    /// @dev A transient reentrancy guard whose modifier calls shared functions, so guarding a dozen entry
    /// points costs little code (solady's guard inlines its assembly into every one). Transient storage exists
    /// on every chain this contract targets (Cancun and later).
    uint256 private constant _REENTRANCY_SLOT = uint256(keccak256("ioi.DisputeManager.reentrancy"));

    modifier nonReentrant() {
        _enter();
        _;
        _exit();
    }

    function _enter() private {
        uint256 slot = _REENTRANCY_SLOT;
        bool entered;
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            entered := tload(slot)
            tstore(slot, 1)
        }
        if (entered) revert Reentrancy();
    }

    function _exit() private {
        uint256 slot = _REENTRANCY_SLOT;
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            tstore(slot, 0)
        }
    }

}
