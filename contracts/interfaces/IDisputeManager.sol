// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IGasEscrow} from "./IGasEscrow.sol";

/// @title IDisputeManager
/// @notice Dispute cases against a gig or a channel session, decided by deterministic arbitration and
/// enforced here with bonds, refunds and slashing. Every error, event and struct of the dispute manager lives
/// here: they are public API.
interface IDisputeManager {
    /*//////////////////////////////////////////////////////////////
                                 STRUCTS
    //////////////////////////////////////////////////////////////*/

    /// @notice What a case is about.
    enum SubjectKind {
        None,
        Gig,
        Session
    }

    /// @notice A case's life. `Open` is the fast path (lanes 0 and 1, decided by an arbitrator quorum);
    /// `SlowPath` (lane 2 and above) is decided by the governance role; `Resolved` and `Expired` are final.
    enum CaseStatus {
        None,
        Open,
        SlowPath,
        Resolved,
        Expired
    }

    /// @notice An arbitration outcome, signed as `uint8` inside a Resolution.
    /// `ChallengerWins`: the respondent is at fault (refund, optional SLA-bond slash, challenger wins the bonds).
    /// `RespondentWins`: the challenge fails (no refund; the respondent wins the bonds).
    /// `NoFault`: an unserviceable request (a refund less compute spent; no slash; both bonds returned).
    /// `Undecidable`: the fast path could not decide; the case moves to the slow path.
    enum Verdict {
        None,
        ChallengerWins,
        RespondentWins,
        NoFault,
        Undecidable
    }

    /// @notice Governance parameters (whitepaper 8.4.6). The challenger's bond is
    /// `max(value × riskBps / 10,000, bondFloor) × laneMultiplier^lane`, in the subject's asset.
    /// @param riskBps Share of the disputed value a bond must cover, in basis points.
    /// @param burnBps Share of the loser's bond that is burnt; the rest goes to the winner.
    /// @param laneMultiplier Geometric factor per lane (at least 1).
    /// @param quorum Distinct registered arbitrators that must sign a fast-path resolution.
    /// @param maxEscalations Party escalations allowed per subject, over all its cases.
    /// @param decisionWindow How long a fast-path case waits for a resolution before anyone may move it to
    /// the slow path.
    /// @param slowPathTimeout How long a slow-path case waits for governance before anyone may expire it.
    /// @param bondFloor Smallest base bond, in base units of the subject's asset.
    /// @param judgeRuntimeHash The judge runtime signers must have pinned in the registry (zero: any).
    struct Params {
        uint16 riskBps;
        uint16 burnBps;
        uint8 laneMultiplier;
        uint8 quorum;
        uint8 maxEscalations;
        uint40 decisionWindow;
        uint40 slowPathTimeout;
        uint128 bondFloor;
        bytes32 judgeRuntimeHash;
    }

    /// @notice A case as stored. `subjectId` is the gig id (as bytes32) or the session id. `value` is what is
    /// in dispute: the gig's amount, or the closing session's amount capped at its deposit.
    struct Case {
        address challenger;
        SubjectKind kind;
        CaseStatus status;
        uint8 lane;
        uint40 deadline;
        address respondent;
        address asset;
        uint128 value;
        uint128 challengerBond;
        uint128 respondentBond;
        bytes32 subjectId;
        bytes32 packageHash;
    }

    /// @notice An ERC-2098 compact signature (low-s only), as in GasEscrow.
    struct Signature {
        bytes32 r;
        bytes32 vs;
    }

    /// @notice What arbitrators sign (EIP-712): the case, the outcome and the hash of the canonical resolution
    /// document that justifies it.
    struct Resolution {
        bytes32 caseId;
        Verdict verdict;
        uint128 refund;
        uint128 slash;
        bytes32 resolutionHash;
    }

    /*//////////////////////////////////////////////////////////////
                                 EVENTS
    //////////////////////////////////////////////////////////////*/

    /// @notice A case opened and froze its subject. For a session, `leaf` is the challenged receipt leaf that
    /// was proven against the committed root; for a gig it is zero.
    event CaseOpened(
        bytes32 indexed caseId,
        SubjectKind indexed kind,
        bytes32 indexed subjectId,
        address challenger,
        address respondent,
        uint8 lane,
        uint128 value,
        uint128 bond,
        bytes32 packageHash,
        bytes32 leaf,
        uint40 deadline
    );

    /// @notice The respondent posted its bond to contest the case.
    event CaseContested(bytes32 indexed caseId, address indexed respondent, uint128 bond);

    /// @notice The case moved to `lane` (by a party's escalation, an undecidable verdict or a missed deadline).
    event CaseEscalated(bytes32 indexed caseId, address indexed by, uint8 lane, CaseStatus status, uint40 deadline);

    /// @notice The case was decided and enforced. `refunded` is what the subject actually refunded and `slashed`
    /// what was actually taken from the respondent's SLA bond.
    event CaseResolved(
        bytes32 indexed caseId,
        Verdict verdict,
        uint128 refunded,
        uint128 slashed,
        bytes32 resolutionHash,
        uint256 toChallenger,
        uint256 toRespondent,
        uint256 burned
    );

    /// @notice Governance never decided the slow-path case in time: the subject was released without a refund
    /// and both bonds returned.
    event CaseExpired(bytes32 indexed caseId);

    /// @notice Governance changed the parameters (they apply to cases opened afterwards, and to escalations).
    event ParamsSet(Params params);

    /*//////////////////////////////////////////////////////////////
                                 ERRORS
    //////////////////////////////////////////////////////////////*/

    /// @notice A constructor address was zero.
    error ZeroAddress();

    /// @notice A parameter is outside its allowed range.
    error InvalidParams(string reason);

    /// @notice Only the gig's client, or the session's payer or funder, may open a case on it.
    error NotTheChallengerSide(bytes32 subjectId, address caller);

    /// @notice Cases open at lane 0 or 1; higher lanes are reached by escalation.
    error InvalidLane(uint8 lane);

    /// @notice The challenge package hash must be non-zero.
    error ZeroPackageHash();

    /// @notice The subject already has an open case.
    error CaseAlreadyOpen(bytes32 subjectId, bytes32 caseId);

    /// @notice The subject had `MAX_CASES_PER_SUBJECT` cases already.
    error TooManyCases(bytes32 subjectId);

    /// @notice The session's recorded closing state is not the one given.
    error ClosingStateMismatch(bytes32 sessionId);

    /// @notice The receipt leaf is not in the committed receipt root.
    error InvalidMerkleProof(bytes32 sessionId, bytes32 root);

    /// @notice The ETH sent is not the bond due (or ETH was sent for a token bond).
    error BondValueMismatch(uint256 sent, uint256 due);

    /// @notice The bond token credited less than the bond due (fee-on-transfer tokens cannot bond).
    error BondShortfall(uint256 received, uint256 due);

    /// @notice No case with this id exists.
    error UnknownCase(bytes32 caseId);

    /// @notice The case is not in the status this call requires.
    error WrongCaseStatus(bytes32 caseId, CaseStatus status);

    /// @notice Only the case's respondent may do this.
    error NotTheRespondent(bytes32 caseId, address caller);

    /// @notice Only a party to the case may do this.
    error NotAParty(bytes32 caseId, address caller);

    /// @notice The respondent already posted its bond.
    error AlreadyContested(bytes32 caseId);

    /// @notice The subject reached its escalation cap.
    error EscalationCapReached(bytes32 subjectId, uint8 cap);

    /// @notice The case's deadline has not passed.
    error DeadlineNotPassed(bytes32 caseId, uint40 deadline);

    /// @notice Fast-path resolutions need a verdict; governance resolutions cannot be undecidable.
    error InvalidVerdict(Verdict verdict);

    /// @notice The refund exceeds the disputed value.
    error RefundExceedsValue(bytes32 caseId, uint128 refund, uint128 value);

    /// @notice This verdict cannot carry a refund or a slash.
    error RemedyNotAllowed(Verdict verdict, uint128 refund, uint128 slash);

    /// @notice A signature did not recover (malformed or high-s).
    error InvalidSignature(uint256 index);

    /// @notice Signers must be given in strictly increasing address order (which also rules out duplicates).
    error SignersNotAscending(uint256 index, address signer);

    /// @notice A signer is not an active registered arbitrator (unknown, under-staked or slashed).
    error NotAnActiveArbitrator(address signer);

    /// @notice A signer pinned a different judge runtime than the one required.
    error WrongJudgeRuntime(address signer, bytes32 pinned, bytes32 required);

    /// @notice A party to the case cannot arbitrate it.
    error ConflictedArbitrator(address signer);

    /// @notice Fewer valid signatures than the quorum.
    error QuorumNotMet(uint256 signatures, uint8 quorum);

    /*//////////////////////////////////////////////////////////////
                                 CASES
    //////////////////////////////////////////////////////////////*/

    /// @notice The gig's client disputes its delivery inside the dispute window, posting the lane's bond
    /// (ETH as `msg.value`, or the gig's token pulled from the caller). Freezes the gig.
    function openGigCase(uint64 gigId, uint8 lane, bytes32 packageHash) external payable returns (bytes32 caseId);

    /// @notice The payer or funder of a closing session disputes one receipt step inside the challenge window:
    /// the leaf of (`receiptHash`, `ticketHash`) must be proven against the recorded receipt root. Posts the
    /// lane's bond and freezes the session's finalisation.
    function openSessionCase(
        IGasEscrow.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrow.ClosingState calldata recorded,
        bytes32 receiptHash,
        bytes32 ticketHash,
        bytes32[] calldata proof,
        uint8 lane,
        bytes32 packageHash
    ) external payable returns (bytes32 caseId);

    /// @notice The respondent contests, posting a bond equal to the challenger's.
    function respond(bytes32 caseId) external payable;

    /// @notice A party moves a fast-path case one lane up, topping its own bond up to that lane's bond. Lane 2
    /// and above is the slow path. Capped per subject by `maxEscalations`.
    function escalate(bytes32 caseId) external payable;

    /// @notice Enforces a fast-path resolution signed by at least `quorum` distinct active arbitrators, given in
    /// ascending address order. For a session case, `recorded` is the session's current closing state; for a
    /// gig it is ignored. An `Undecidable` verdict moves the case to the slow path.
    function resolve(
        Resolution calldata resolution,
        IGasEscrow.ClosingState calldata recorded,
        Signature[] calldata signatures
    ) external;

    /// @notice Governance decides a slow-path case before its deadline.
    function resolveSlowPath(Resolution calldata resolution, IGasEscrow.ClosingState calldata recorded) external;

    /// @notice After the deadline, anyone moves an undecided fast-path case to the slow path, or expires a
    /// slow-path case: the subject is released without a refund and both bonds are returned.
    function expire(bytes32 caseId, IGasEscrow.ClosingState calldata recorded) external;

    /// @notice Sets the parameters. Only GOVERNANCE_ROLE.
    function setParams(Params calldata params) external;

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @notice The bond for a dispute over `value` at `lane` under the current parameters.
    function bondFor(uint256 value, uint8 lane) external view returns (uint256);

    /// @notice The case as stored (status `None` if unknown).
    function caseOf(bytes32 caseId) external view returns (Case memory);

    /// @notice The id the next case on this subject will get.
    function nextCaseId(SubjectKind kind, bytes32 subjectId) external view returns (bytes32);

    /// @notice The current parameters.
    function params() external view returns (Params memory);

    /// @notice The EIP-712 digest arbitrators sign for `resolution`.
    function hashResolution(Resolution calldata resolution) external view returns (bytes32);
}
