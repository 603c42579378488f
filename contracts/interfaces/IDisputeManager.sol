// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC5267} from "@openzeppelin/contracts/interfaces/IERC5267.sol";
import {IGasEscrowTypes} from "./IGasEscrowTypes.sol";

/// @title IDisputeManager
/// @notice Dispute cases against a gig or a channel session. A panel is drawn per case, after it opens, from the
/// admitted arbitrators weighted by stake; a verdict needs a supermajority of the panel with more stake at risk
/// than the case moves; it becomes final only after an appeal window, in which either party may appeal to a
/// larger fresh panel and, after that, to the slow path. Every error, event and struct of the dispute manager
/// lives here: they are public API. Decisions 0014 (trust model) and 0015 (exits, with a table of every
/// outcome) explain it. ERC-5267 (`eip712Domain()`) publishes the domain arbitrators sign resolutions under.
interface IDisputeManager is IERC5267 {
    /*//////////////////////////////////////////////////////////////
                                 STRUCTS
    //////////////////////////////////////////////////////////////*/

    /// @notice What a case is about.
    enum SubjectKind {
        None,
        Gig,
        Session
    }

    /// @notice A case's life (one phase at a time; `phaseOf` is the one place it is derived from storage).
    /// `Open`: waiting for the respondent's contest and then for the panel of the current round to be drawn.
    /// `Deliberating`: a panel sits; a supermajority of it may submit a verdict until the deadline.
    /// `Decided`: a verdict stands; either party may appeal it until the deadline, after which anyone finalises it.
    /// `SlowPath`: the governance role (behind the timelock) decides by the deadline.
    /// `Resolved` and `Expired` are final: every bond, refund, fee, slash and lock has been settled.
    enum CaseStatus {
        None,
        Open,
        Deliberating,
        Decided,
        SlowPath,
        Resolved,
        Expired
    }

    /// @notice An arbitration outcome, signed as `uint8` inside a Resolution.
    /// `ChallengerWins`: the respondent is at fault (refund, optional SLA-bond slash, challenger wins the bonds).
    /// `RespondentWins`: the challenge fails (no refund; the respondent wins the bonds).
    /// `NoFault`: an unserviceable request (a refund less compute spent; no slash; both bonds returned).
    /// `Undecidable`: the panel could not decide (a fault of no party); the case moves to the slow path.
    enum Verdict {
        None,
        ChallengerWins,
        RespondentWins,
        NoFault,
        Undecidable
    }

    /// @notice Governance parameters (whitepaper 8.3.1.4, 8.4.2, 8.4.6), each bounded by a constant of the
    /// contract. Bonds: `max(value × riskBps / 10,000, floor of the asset) × laneMultiplier^level`, where the
    /// level is the case's lane plus its round, in the subject's asset.
    /// @param riskBps Share of the disputed value a bond must cover.
    /// @param burnBps Share of every forfeited bond and of every arbitrator slash that is burnt.
    /// @param feeBps Share of the losing side's bond paid to the arbitrators whose verdict stands (8.4.2).
    /// @param laneMultiplier Geometric factor per level (at least 1).
    /// @param panelSize Panel of the first round (odd-sized panels avoid ties); round 1 draws `2 × panelSize − 1`.
    /// @param maxAppeals Appeals per case: the first draws the larger panel, the second goes to the slow path.
    /// @param overturnSlashBps Share of its stake a signer of an overturned verdict loses (to the appellant,
    /// less the burnt share).
    /// @param absentSlashBps Share of its stake each member of a panel that reached no verdict by its deadline
    /// loses (burnt).
    /// @param slashCapBps Largest SLA slash, as a share of the disputed value expressed in the bond token.
    /// @param respondWindow How long after opening the respondent may contest; the draw follows it.
    /// @param decisionWindow How long a round may wait to be drawn, and a drawn panel to submit a verdict.
    /// @param appealWindow How long a verdict stands open to appeal before anyone may finalise it.
    /// @param slowPathTimeout How long the slow path waits for governance before anyone may expire the case.
    /// @param settledDisputeWindow How long after a cooperative settlement its payer may still dispute a receipt
    /// proven against the co-signed summary root (the refund then comes out of the provider's SLA bond). At most
    /// 30 days, the registry's shortest unbonding delay, so a bond unbonded at settlement is still slashable.
    /// @param judgeRuntimeHash The judge runtime panel members must have pinned (zero: any).
    struct Params {
        uint16 riskBps;
        uint16 burnBps;
        uint16 feeBps;
        uint8 laneMultiplier;
        uint8 panelSize;
        uint8 maxAppeals;
        uint16 overturnSlashBps;
        uint16 absentSlashBps;
        uint32 slashCapBps;
        uint40 respondWindow;
        uint40 decisionWindow;
        uint40 appealWindow;
        uint40 slowPathTimeout;
        uint40 settledDisputeWindow;
        bytes32 judgeRuntimeHash;
    }

    /// @notice What governance sets per asset before cases can be opened in it.
    /// @param bondFloor Smallest base bond, in the asset's base units (so a 6-decimal and an 18-decimal token
    /// each get a sensible floor).
    /// @param stakeRate Bond-token base units per 10^18 base units of the asset: how the stake at risk and the
    /// slash cap, both in the registry's bond token, compare with a value in this asset.
    struct AssetTerms {
        uint128 bondFloor;
        uint128 stakeRate;
    }

    /// @notice A case as stored. `subjectId` is the gig id (as bytes32) or the session id. `value` is what is in
    /// dispute: the gig's amount, or the closing session's amount capped at its deposit. `related` is the one
    /// address bound to the subject that is neither the challenger nor the respondent (a session's other payer
    /// or funder; zero for a gig). `round` counts the panels drawn (0 and 1) and 2 on the slow path.
    struct Case {
        address challenger;
        SubjectKind kind;
        CaseStatus status;
        uint8 lane;
        uint8 round;
        uint40 deadline;
        address respondent;
        uint40 respondBy;
        uint16 rules;
        address related;
        address asset;
        uint128 value;
        uint128 challengerBond;
        uint128 respondentBond;
        uint128 stakeRate;
        bytes32 subjectId;
        bytes32 packageHash;
    }

    /// @notice One round of a case: the verdict it reached and who of its panel (`panelOf`) signed it, and the
    /// appeal that opened it (none for round 0).
    /// @param drawTicket The randomness ticket the panel is drawn from (zero: not requested yet).
    /// @param snapshotBlock The block the ticket was requested in: the panel is drawn from the registry's draw
    /// weights as they stood then (`IProviderRegistry.drawPoolAt`), before the randomness existed.
    /// @param signedMask Bit i set when member i of the round's panel signed the round's verdict.
    /// @param appellant The party whose appeal opened this round (zero for round 0).
    /// @param appealBond What the appellant posted; returned only if the appeal changes the outcome.
    struct Round {
        uint256 drawTicket;
        Verdict verdict;
        uint16 signedMask;
        address appellant;
        uint48 snapshotBlock;
        uint128 refund;
        uint128 slash;
        uint128 appealBond;
        bytes32 resolutionHash;
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
        uint40 respondBy
    );

    /// @notice The respondent posted its bond to contest the case; the panel's randomness was requested.
    event CaseContested(bytes32 indexed caseId, address indexed respondent, uint128 bond);

    /// @notice Randomness for the panel of `round` was requested; the panel can be drawn once it is available.
    event PanelRequested(bytes32 indexed caseId, uint8 round, uint256 ticket);

    /// @notice A panel was drawn for `round`; its members must submit a verdict by `deadline`.
    event PanelDrawn(bytes32 indexed caseId, uint8 round, address[] panel, uint40 deadline);

    /// @notice A party said where the case's evidence can be fetched (decision 0028): an `http(s)` URI that serves
    /// the challenge package by its hash, or a `data:` URI carrying the canonical bytes themselves when small.
    /// Arbitrators verify every byte against the case's `packageHash`; the URI is only a hint.
    event EvidencePublished(bytes32 indexed caseId, address indexed party, string uri);

    /// @notice Members of the current panel signed `resolution` (decision 0028). Anyone may collect the posted
    /// signatures over one resolution and `submitVerdict` them once they form a supermajority.
    event SignaturesPosted(bytes32 indexed caseId, uint8 round, Resolution resolution, Signature[] signatures);

    /// @notice A supermajority of the panel submitted a verdict; it can be appealed until `appealEndsAt`.
    event VerdictSubmitted(
        bytes32 indexed caseId,
        uint8 round,
        Verdict verdict,
        uint128 refund,
        uint128 slash,
        bytes32 resolutionHash,
        uint16 signedMask,
        uint40 appealEndsAt
    );

    /// @notice A party appealed the standing verdict; `round` is the round the appeal opened.
    event CaseAppealed(
        bytes32 indexed caseId, address indexed appellant, uint8 round, uint128 bond, CaseStatus status, uint40 deadline
    );

    /// @notice The case moved to the slow path (an undecidable verdict, a round that drew or decided nothing by
    /// its deadline, or a pool too small for the panel).
    event CaseToSlowPath(bytes32 indexed caseId, uint8 round, uint40 deadline);

    /// @notice The case was decided for good and enforced. `refunded` is what the subject actually refunded and
    /// `slashed` what was actually taken from the respondent's SLA bond; the bond amounts are in the case's asset.
    event CaseResolved(
        bytes32 indexed caseId,
        Verdict verdict,
        uint128 refunded,
        uint128 slashed,
        bytes32 resolutionHash,
        uint256 toChallenger,
        uint256 toRespondent,
        uint256 burned,
        uint256 arbitrationFees
    );

    /// @notice The slow path timed out. With a verdict standing before the appeal, that verdict was enforced
    /// (`CaseResolved` follows); without one, the value was split (refund = half) and both bonds returned.
    event CaseExpired(bytes32 indexed caseId, bool verdictStood);

    /// @notice An arbitrator whose verdict stands earned `amount` of the case's asset (claimable).
    event ArbitrationFeeEarned(bytes32 indexed caseId, address indexed arbitrator, address asset, uint256 amount);

    /// @notice A panel member was slashed `amount` of stake: a signer of an overturned verdict (`overturned`) or a
    /// member of a panel that reached no verdict by its deadline.
    event ArbitratorPenalized(bytes32 indexed caseId, address indexed arbitrator, uint256 amount, bool overturned);

    /// @notice A payout to `account` could not be sent (an ERC-20 that refused the transfer): it is claimable.
    event PayoutDeferred(address indexed asset, address indexed account, uint256 amount);

    /// @notice `account` claimed what it was owed in `asset`.
    event Claimed(address indexed asset, address indexed account, uint256 amount);

    /// @notice Governance set new parameters. They apply to cases opened at or after `effectiveAt` (the
    /// registry's unbonding delay after they were set, so every bond holder can leave first); a case keeps the
    /// parameters it opened under until it ends.
    event ParamsSet(Params params, uint40 effectiveAt);

    /// @notice Governance set the bond floor and the stake rate of `asset`, for cases opened at or after
    /// `effectiveAt` (at once for an asset that had no terms; otherwise after the registry's unbonding delay).
    event AssetTermsSet(address indexed asset, uint128 bondFloor, uint128 stakeRate, uint40 effectiveAt);

    /*//////////////////////////////////////////////////////////////
                                 ERRORS
    //////////////////////////////////////////////////////////////*/

    /// @notice A call re-entered the DisputeManager.
    error Reentrancy();

    /// @notice A constructor address was zero.
    error ZeroAddress();

    /// @notice Only governance (the timelock) may do this.
    error NotGovernance(address caller);

    /// @notice A parameter is outside its allowed range.
    error InvalidParams(string reason);

    /// @notice Cases cannot be opened in an asset governance has not set terms for.
    error AssetNotSupported(address asset);

    /// @notice Only the gig's client, or the session's payer or funder, may open a case on it.
    error NotTheChallengerSide(bytes32 subjectId, address caller);

    /// @notice Cases open at lane 0 or 1.
    error InvalidLane(uint8 lane);

    /// @notice The challenge package hash must be non-zero.
    error ZeroPackageHash();

    /// @notice The subject already has an open case.
    error CaseAlreadyOpen(bytes32 subjectId, bytes32 caseId);

    /// @notice The subject had `MAX_CASES_PER_SUBJECT` cases already.
    error TooManyCases(bytes32 subjectId);

    /// @notice The session's recorded closing state is not the one given.
    error ClosingStateMismatch(bytes32 sessionId);

    /// @notice A cooperatively settled session could be disputed until `disputableUntil` only.
    error SettledDisputeWindowClosed(bytes32 sessionId, uint256 disputableUntil);

    /// @notice The receipt leaf is not in the committed receipt root.
    error InvalidMerkleProof(bytes32 sessionId, bytes32 root);

    /// @notice The ETH sent is not the bond due (or ETH was sent for a token bond).
    error BondValueMismatch(uint256 sent, uint256 due);

    /// @notice The bond token credited less than the bond due (fee-on-transfer tokens cannot bond).
    error BondShortfall(uint256 received, uint256 due);

    /// @notice The bond token credited more than was sent (a rebasing or bonus token): the surplus would belong to
    /// nobody, so the bond is refused.
    error BondOvercredited(uint256 received, uint256 due);

    /// @notice No case with this id exists.
    error UnknownCase(bytes32 caseId);

    /// @notice The case is not in the status this call requires.
    error WrongCaseStatus(bytes32 caseId, CaseStatus status);

    /// @notice Only the case's respondent may do this.
    error NotTheRespondent(bytes32 caseId, address caller);

    /// @notice Only a party to the case may do this.
    error NotAParty(bytes32 caseId, address caller);

    /// @notice The respondent can contest only before the panel's randomness is requested.
    error ContestClosed(bytes32 caseId, uint40 respondBy);

    /// @notice The panel cannot be drawn yet: the respond window is open and the case is not contested.
    error RespondWindowOpen(bytes32 caseId, uint40 respondBy);

    /// @notice The panel's randomness is not available yet (its target block has not been mined).
    error RandomnessNotReady(bytes32 caseId, uint256 ticket);

    /// @notice The case reached its appeal cap.
    error AppealCapReached(bytes32 caseId, uint8 cap);

    /// @notice The case's deadline has passed.
    error DeadlinePassed(bytes32 caseId, uint40 deadline);

    /// @notice The case's deadline has not passed.
    error DeadlineNotPassed(bytes32 caseId, uint40 deadline);

    /// @notice Verdicts must be one of the four outcomes; governance's cannot be undecidable.
    error InvalidVerdict(Verdict verdict);

    /// @notice The refund exceeds the disputed value.
    error RefundExceedsValue(bytes32 caseId, uint128 refund, uint128 value);

    /// @notice This verdict cannot carry a refund or a slash.
    error RemedyNotAllowed(Verdict verdict, uint128 refund, uint128 slash);

    /// @notice The slash exceeds `slashCapBps` of the disputed value expressed in the bond token.
    error SlashAboveCap(bytes32 caseId, uint128 slash, uint256 cap);

    /// @notice A signature did not recover (malformed or high-s).
    error InvalidSignature(uint256 index);

    /// @notice Signers must be given in strictly increasing address order (which also rules out duplicates).
    error SignersNotAscending(uint256 index, address signer);

    /// @notice A signer does not sit on the case's current panel.
    error NotOnPanel(bytes32 caseId, address signer);

    /// @notice Fewer panel signatures than the supermajority.
    error SupermajorityNotMet(uint256 signatures, uint256 needed);

    /// @notice The signers' stake at risk does not exceed what the verdict moves (both in the bond token).
    error StakeAtRiskTooLow(uint256 atRisk, uint256 moved);

    /// @notice Nothing is claimable for the caller in this asset.
    error NothingToClaim(address asset, address account);

    /*//////////////////////////////////////////////////////////////
                                 CASES
    //////////////////////////////////////////////////////////////*/

    /// @notice The gig's client disputes its delivery inside the dispute window, posting the lane's bond
    /// (ETH as `msg.value`, or the gig's token pulled from the caller). Freezes the gig.
    function openGigCase(uint64 gigId, uint8 lane, bytes32 packageHash) external payable returns (bytes32 caseId);

    /// @notice The payer or funder of a closing session disputes one receipt step inside the challenge window:
    /// the leaf of (`receiptHash`, `ticketHash`) must be proven against the recorded receipt root, or against a
    /// provider-signed receipt commit anchored on the session (`IGasEscrow.anchorReceiptCommit`). Posts the
    /// lane's bond, freezes the session's finalisation and locks the provider's SLA bond until the case ends.
    /// A cooperatively settled session is disputed the same way by its payer, until `settledDisputeWindow`
    /// after it settled, with `recorded` the summary as `IGasEscrow.settledState`: nothing is frozen (the escrow
    /// has paid out), the provider's SLA bond is locked, and a refund is slashed from that bond to the funder.
    function openSessionCase(
        IGasEscrowTypes.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrowTypes.ClosingState calldata recorded,
        bytes32 receiptHash,
        bytes32 ticketHash,
        bytes32[] calldata proof,
        uint8 lane,
        bytes32 packageHash
    ) external payable returns (bytes32 caseId);

    /// @notice The respondent contests, posting a bond equal to the challenger's, within the respond window and
    /// before the panel's randomness is requested; contesting requests it (so neither side knows the panel when
    /// it acts).
    function respond(bytes32 caseId) external payable;

    /// @notice Anyone advances the draw of the current round's panel: the first call (after the respond window,
    /// or once contested) requests randomness if none is pending; once the randomness is available, the call
    /// draws the panel by stake from the admitted arbitrators pinned to the judge runtime, excluding every
    /// address bound to the subject and every earlier panel member, and locks their stakes. A pool too small for
    /// the panel sends the case to the slow path. Expired randomness is requested anew.
    function drawPanel(bytes32 caseId) external;

    /// @notice Submits the verdict of the current panel: signatures of at least a supermajority of it over the
    /// same Resolution, in ascending signer order, whose stake at risk exceeds what the case moves. The verdict
    /// then stands open to appeal for `appealWindow`. An `Undecidable` verdict moves the case to the slow path.
    function submitVerdict(Resolution calldata resolution, Signature[] calldata signatures) external;

    /// @notice Posts signatures of current panel members over `resolution` (a member's own, or any it relays),
    /// each checked to be by a member of the deliberating round; emits `SignaturesPosted`. Stores nothing: a
    /// verdict still needs `submitVerdict` with a supermajority over one resolution.
    function postSignatures(Resolution calldata resolution, Signature[] calldata signatures) external;

    /// @notice The challenger or the respondent says where the case's evidence is (`EvidencePublished`), any
    /// time before the case ends. Stores nothing.
    function publishEvidence(bytes32 caseId, string calldata uri) external;

    /// @notice A party appeals the standing verdict before its appeal window ends, posting the next level's
    /// bond: the first appeal draws a fresh, larger panel that excludes every earlier member; the next goes to
    /// the slow path. The appeal bond is forfeited unless the appeal changes the outcome.
    function appeal(bytes32 caseId) external payable;

    /// @notice After the appeal window, anyone enforces the standing verdict: refund, SLA slash, bonds, fees to
    /// the arbitrators who signed the verdict that stands, slashes of those who signed an overturned verdict and
    /// of the members of a panel that reached no verdict, and the release of every lock. For a session case,
    /// `recorded` is its current closing state.
    function finalize(bytes32 caseId, IGasEscrowTypes.ClosingState calldata recorded) external;

    /// @notice Governance decides a slow-path case (until someone expires it); the decision is final.
    function resolveSlowPath(Resolution calldata resolution, IGasEscrowTypes.ClosingState calldata recorded) external;

    /// @notice After a deadline, anyone moves a case that drew or decided nothing to the slow path; after the
    /// slow path's deadline, anyone ends it: the verdict that stood before the appeal is enforced, and without
    /// one the disputed value is split and both bonds returned.
    function expire(bytes32 caseId, IGasEscrowTypes.ClosingState calldata recorded) external;

    /// @notice Pays the caller what it is owed in `asset` (fees, and payouts a token refused to transfer).
    function claim(address asset) external returns (uint256 amount);

    /// @notice Sets the parameters. Only governance.
    function setParams(Params calldata params) external;

    /// @notice Sets the bond floor and stake rate of `asset` (zero rate: no new cases in it). Only governance.
    function setAssetTerms(address asset, AssetTerms calldata terms) external;

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @notice The opening bond for a dispute over `value` of `asset` at `level` under the current parameters.
    function bondFor(address asset, uint256 value, uint8 level) external view returns (uint256);

    /// @notice The case as stored (status `None` if unknown).
    function caseOf(bytes32 caseId) external view returns (Case memory);

    /// @notice Round `round` of the case (empty if it never happened).
    function roundOf(bytes32 caseId, uint8 round) external view returns (Round memory);

    /// @notice The panel drawn for `round` of the case, in draw order (empty if none was drawn).
    function panelOf(bytes32 caseId, uint8 round) external view returns (address[] memory);

    /// @notice The id the next case on this subject will get.
    function nextCaseId(SubjectKind kind, bytes32 subjectId) external view returns (bytes32);

    /// @notice The parameters a case opened now would get.
    function params() external view returns (Params memory);

    /// @notice The parameters set last and when they apply (the same as `params()` once in force).
    function latestParams() external view returns (Params memory, uint40 effectiveAt);

    /// @notice The parameters `caseId` is judged under, fixed when it opened.
    function caseParams(bytes32 caseId) external view returns (Params memory);

    /// @notice The terms of `asset` a case opened now would get.
    function assetTerms(address asset) external view returns (AssetTerms memory);

    /// @notice What `account` can claim in `asset`.
    function claimable(address asset, address account) external view returns (uint256);

    /// @notice The EIP-712 digest arbitrators sign for `resolution`.
    function hashResolution(Resolution calldata resolution) external view returns (bytes32);
}
