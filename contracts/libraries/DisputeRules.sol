// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {SafeTransferLib} from "solady/src/utils/SafeTransferLib.sol";
import {IDisputeManager} from "../interfaces/IDisputeManager.sol";
import {IGasEscrow} from "../interfaces/IGasEscrow.sol";
import {IGasEscrowTypes} from "../interfaces/IGasEscrowTypes.sol";
import {IGigEscrow} from "../interfaces/IGigEscrow.sol";
import {IProviderRegistry} from "../interfaces/IProviderRegistry.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {ReceiptLeaf} from "./ReceiptLeaf.sol";
import {TryTransfer} from "./TryTransfer.sol";

/// @title DisputeRules
/// @notice The bounds of every DisputeManager parameter and the check that a parameter set respects them, who may
/// dispute a session, and how a case that ends is enforced (`settle`). An external library run by DELEGATECALL,
/// so every escrow and registry call still comes from the DisputeManager and its code costs the DisputeManager no
/// code size (decision 0010: the DisputeManager keeps at least 2 KiB below EIP-170). Under these bounds the longest
/// case — respond window, then two rounds of (draw, decision, appeal), then the slow path — lasts at most
/// 7 + 2 × (14 + 14 + 7) + 60 = 137 days, inside the escrows' 180-day freeze backstop.
library DisputeRules {
    /// @notice Basis points in a whole.
    uint16 internal constant BPS = 10_000;

    /// @notice Rounds 0 and 1 are judged by drawn panels; round 2 is the slow path (as in the DisputeManager).
    uint8 internal constant SLOW_PATH_ROUND = 2;

    /// @notice Parameter bounds (see `Params`).
    uint8 internal constant MAX_LANE_MULTIPLIER = 10;
    /// @notice Round 1 draws `2 × panelSize − 1` members; the signer mask has 16 bits.
    uint8 internal constant MAX_PANEL_SIZE = 8;
    uint8 internal constant MAX_APPEALS = 2;
    uint16 internal constant MAX_FEE_BPS = 3_000;
    uint16 internal constant MAX_ABSENT_SLASH_BPS = 1_000;
    uint32 internal constant MAX_SLASH_CAP_BPS = 50_000;
    uint40 internal constant MIN_WINDOW = 1 minutes;
    uint40 internal constant MAX_RESPOND_WINDOW = 7 days;
    uint40 internal constant MAX_DECISION_WINDOW = 14 days;
    uint40 internal constant MAX_APPEAL_WINDOW = 7 days;
    uint40 internal constant MAX_SLOW_PATH_TIMEOUT = 60 days;
    /// @notice The registry's shortest unbonding delay: a bond unbonded when its session settled is still held.
    uint40 internal constant MAX_SETTLED_DISPUTE_WINDOW = 30 days;

    /// @notice Stake rates are bond-token units per this many units of an asset (as in the DisputeManager).
    uint256 internal constant STAKE_RATE_UNIT = 1e18;

    /// @notice Where burnt bond shares go (nobody holds its key), as in the DisputeManager.
    address internal constant BURN_ADDRESS = 0x000000000000000000000000000000000000dEaD;

    /// @notice The contracts a settlement acts on (the DisputeManager's immutables).
    struct Escrows {
        IGasEscrow gasEscrow;
        IGigEscrow gigEscrow;
        IProviderRegistry registry;
    }

    /// @notice Enforces outcome `o` of the case `c` for good, which the caller has already marked final: the
    /// subject's refund (through the escrow, or out of the SLA bond for a settled session), the respondent's SLA
    /// slash, the opening and appeal bonds' split, the arbitration fee to coherent signers, every panel member's
    /// penalty and unlock, then the asset transfers — every state change before any transfer of the asset.
    /// @param p The parameters the case opened under.
    // `o` is built in memory by the caller (a stored round or a resolution), so it cannot be calldata.
    // solhint-disable-next-line gas-calldata-parameters
    function settle(
        IDisputeManager.Case storage c,
        mapping(uint256 => IDisputeManager.Round) storage rounds,
        mapping(uint256 => address[]) storage panels,
        mapping(address => uint256) storage claimableOf,
        IDisputeManager.Params storage p,
        Escrows memory e,
        IDisputeManager.Resolution memory o,
        IGasEscrowTypes.ClosingState calldata recorded
    ) external {
        bytes32 caseId = o.caseId;
        bytes32 finalKey = outcomeKey(o.verdict, o.refund, o.slash);
        BondSplit memory split = splitBonds(c.challengerBond, c.respondentBond, o.verdict, p.burnBps, p.feeBps);
        split = settleAppealBonds(rounds, c.challenger, finalKey, p.burnBps, split);
        uint256 fees;
        (split, fees) = payFees(rounds, panels, claimableOf, caseId, c.asset, finalKey, split);

        uint128 refunded = _releaseSubject(c, e, o.refund, recorded);
        uint128 slashed = o.verdict == IDisputeManager.Verdict.ChallengerWins ? _slashRespondent(c, e, o.slash, p) : 0;
        emit IDisputeManager.CaseResolved(
            caseId,
            o.verdict,
            refunded,
            slashed,
            o.resolutionHash,
            split.toChallenger,
            split.toRespondent,
            split.burned,
            fees
        );
        for (uint256 round; round < SLOW_PATH_ROUND; ++round) {
            IDisputeManager.Round storage r = rounds[round];
            address[] storage panel = panels[round];
            if (panel.length == 0) continue;
            IDisputeManager.Verdict verdict = r.verdict;
            bool overturned = verdict != IDisputeManager.Verdict.None
                && verdict != IDisputeManager.Verdict.Undecidable && roundKey(r) != finalKey;
            _settleRound(e.registry, caseId, panel, r.signedMask, verdict, overturned, rounds[round + 1].appellant, p);
        }
        if (c.kind == IDisputeManager.SubjectKind.Session) {
            e.registry.unlockBond(IProviderRegistry.Role.Provider, c.respondent);
        }

        address asset = c.asset;
        _pay(claimableOf, asset, c.challenger, split.toChallenger);
        _pay(claimableOf, asset, c.respondent, split.toRespondent);
        _pay(claimableOf, asset, BURN_ADDRESS, split.burned);
    }

    /// @dev Unfreezes the subject with `refund` and returns what was actually refunded (zero if the escrow's
    /// own backstop settled the subject meanwhile). A cooperatively settled session's refund is slashed from
    /// the provider's SLA bond to the funder (`related`) instead, as far as the bond covers it.
    function _releaseSubject(
        IDisputeManager.Case storage c,
        Escrows memory e,
        uint128 refund,
        IGasEscrowTypes.ClosingState calldata recorded
    ) private returns (uint128) {
        if (c.kind == IDisputeManager.SubjectKind.Gig) {
            return e.gigEscrow.resolve(uint64(uint256(c.subjectId)), refund) ? refund : 0;
        }
        (bool settled, uint128 fromBond) =
            refundIfSettled(e.gasEscrow, e.registry, c.subjectId, c.respondent, c.related, refund, c.stakeRate);
        if (settled) return fromBond;
        bool applied = e.gasEscrow.release(c.subjectId, recorded, refund);
        if (!applied) return 0;
        uint128 earned = recorded.amount < recorded.deposit ? recorded.amount : recorded.deposit;
        return refund < earned ? refund : earned;
    }

    /// @dev Slashes up to `amount` of the respondent's SLA bond (whatever it still holds), to the challenger.
    function _slashRespondent(
        IDisputeManager.Case storage c,
        Escrows memory e,
        uint128 amount,
        IDisputeManager.Params storage p
    ) private returns (uint128) {
        if (amount == 0) return 0;
        IProviderRegistry.Bond memory b = e.registry.bondOf(IProviderRegistry.Role.Provider, c.respondent);
        uint256 held = uint256(b.active) + b.pending;
        uint256 take = amount < held ? amount : held;
        if (take == 0) return 0;
        e.registry.slash(IProviderRegistry.Role.Provider, c.respondent, take, c.challenger, p.burnBps);
        return uint128(take); // <= amount
    }

    /// @dev Settles one round's panel once its case is final: signers of an overturned verdict lose
    /// `overturnSlashBps` of their stake (to `appellant`, less `burnBps`; all burnt when nobody appealed), every
    /// member of a panel that reached no verdict by its deadline loses `absentSlashBps` (burnt), and every
    /// member's stake is unlocked. A member that did not sign a verdict its panel reached may have dissented:
    /// it earns no fee and loses nothing.
    function _settleRound(
        IProviderRegistry registry,
        bytes32 caseId,
        address[] storage panel,
        uint16 signedMask,
        IDisputeManager.Verdict verdict,
        bool overturned,
        address appellant,
        IDisputeManager.Params storage p
    ) private {
        bool silent = verdict == IDisputeManager.Verdict.None;
        for (uint256 i; i < panel.length; ++i) {
            bool signed = signedMask & (1 << i) != 0;
            if (overturned && signed) {
                _penalize(registry, caseId, panel[i], p.overturnSlashBps, appellant, p.burnBps, true);
            } else if (silent) {
                _penalize(registry, caseId, panel[i], p.absentSlashBps, BURN_ADDRESS, BPS, false);
            }
            registry.unlockBond(IProviderRegistry.Role.Arbitrator, panel[i]);
        }
    }

    function _penalize(
        IProviderRegistry registry,
        bytes32 caseId,
        address member,
        uint16 shareBps,
        address beneficiary,
        uint16 burnBps,
        bool overturned
    ) private {
        IProviderRegistry.Bond memory b = registry.bondOf(IProviderRegistry.Role.Arbitrator, member);
        uint256 amount = Math.mulDiv(uint256(b.active) + b.pending, shareBps, BPS);
        if (amount == 0) return;
        if (beneficiary == address(0)) (beneficiary, burnBps) = (BURN_ADDRESS, BPS);
        emit IDisputeManager.ArbitratorPenalized(caseId, member, amount, overturned);
        registry.slash(IProviderRegistry.Role.Arbitrator, member, amount, beneficiary, burnBps);
    }

    /// @dev ETH is force-sent so a hostile party cannot block the other's payout; a token transfer that fails
    /// (a blocklisted recipient) is credited to the recipient's claimable balance instead of reverting the case.
    function _pay(mapping(address => uint256) storage claimableOf, address asset, address to, uint256 amount)
        private
    {
        if (amount == 0) return;
        if (asset == address(0)) {
            SafeTransferLib.forceSafeTransferETH(to, amount);
        } else if (!TryTransfer.tryTransfer(asset, to, amount)) {
            claimableOf[to] += amount;
            emit IDisputeManager.PayoutDeferred(asset, to, amount);
        }
    }

    /// @notice Reverts with `InvalidParams` naming the first parameter out of its bounds.
    function validate(IDisputeManager.Params calldata p) external pure {
        if (uint256(p.burnBps) + p.feeBps > BPS) _invalid("burnBps + feeBps > 10000");
        if (p.riskBps > BPS) _invalid("riskBps > 10000");
        if (p.feeBps > MAX_FEE_BPS) _invalid("feeBps");
        if (p.laneMultiplier == 0 || p.laneMultiplier > MAX_LANE_MULTIPLIER) _invalid("laneMultiplier");
        if (p.panelSize == 0 || p.panelSize > MAX_PANEL_SIZE) _invalid("panelSize");
        if (p.maxAppeals > MAX_APPEALS) _invalid("maxAppeals");
        if (p.overturnSlashBps == 0 || p.overturnSlashBps > BPS) _invalid("overturnSlashBps");
        if (p.absentSlashBps > MAX_ABSENT_SLASH_BPS) _invalid("absentSlashBps");
        if (p.slashCapBps > MAX_SLASH_CAP_BPS) _invalid("slashCapBps");
        if (p.respondWindow < MIN_WINDOW || p.respondWindow > MAX_RESPOND_WINDOW) _invalid("respondWindow");
        if (p.decisionWindow < MIN_WINDOW || p.decisionWindow > MAX_DECISION_WINDOW) _invalid("decisionWindow");
        if (p.appealWindow < MIN_WINDOW || p.appealWindow > MAX_APPEAL_WINDOW) _invalid("appealWindow");
        if (p.slowPathTimeout < p.decisionWindow || p.slowPathTimeout > MAX_SLOW_PATH_TIMEOUT) {
            _invalid("slowPathTimeout");
        }
        if (p.settledDisputeWindow < MIN_WINDOW || p.settledDisputeWindow > MAX_SETTLED_DISPUTE_WINDOW) {
            _invalid("settledDisputeWindow");
        }
    }

    function _invalid(string memory reason) private pure {
        revert IDisputeManager.InvalidParams(reason);
    }

    /// @notice Where the opening bonds of a case go when it ends (in the case's asset).
    struct BondSplit {
        uint256 toChallenger;
        uint256 toRespondent;
        uint256 burned;
        uint256 fee;
        bool respondentWon;
    }

    /// @notice The opening bonds under `verdict`: the loser's goes to the winner less the burnt share and the
    /// arbitration fee; with no fault both come back, the fee coming out of the challenger's. An uncontested loss
    /// pays the fee out of the winner's bond, so a panel that decides is paid.
    function splitBonds(uint256 cb, uint256 rb, IDisputeManager.Verdict verdict, uint16 burnBps, uint16 feeBps)
        internal
        pure
        returns (BondSplit memory s)
    {
        // No overflow or underflow below: burnBps + feeBps <= BPS (validated), so burned + fee <= the bond they
        // are taken from, and the bonds were paid in, so their sum fits the token's supply.
        if (verdict == IDisputeManager.Verdict.ChallengerWins) {
            s.burned = rb * burnBps / BPS;
            s.fee = (rb != 0 ? rb : cb) * feeBps / BPS;
            s.toChallenger = cb + rb - s.burned - s.fee;
        } else if (verdict == IDisputeManager.Verdict.RespondentWins) {
            s.respondentWon = true;
            s.burned = cb * burnBps / BPS;
            s.fee = cb * feeBps / BPS;
            s.toRespondent = rb + cb - s.burned - s.fee;
        } else {
            s.fee = cb * feeBps / BPS;
            s.toChallenger = cb - s.fee;
            s.toRespondent = rb;
        }
    }

    /// @notice Reverts unless the remedy fits the verdict, the disputed `value` and the slash `cap`. Panels may
    /// find a case undecidable (with no remedy); governance (`panel` false) may not.
    function checkRemedy(
        bytes32 caseId,
        uint128 value,
        uint256 cap,
        IDisputeManager.Verdict verdict,
        uint128 refund,
        uint128 slash,
        bool panel
    ) external pure {
        if (verdict == IDisputeManager.Verdict.None || (verdict == IDisputeManager.Verdict.Undecidable && !panel)) {
            revert IDisputeManager.InvalidVerdict(verdict);
        }
        if (refund > value) revert IDisputeManager.RefundExceedsValue(caseId, refund, value);
        if (verdict != IDisputeManager.Verdict.ChallengerWins && slash != 0) {
            revert IDisputeManager.RemedyNotAllowed(verdict, refund, slash);
        }
        bool noRefund =
            verdict == IDisputeManager.Verdict.RespondentWins || verdict == IDisputeManager.Verdict.Undecidable;
        if (noRefund && refund != 0) revert IDisputeManager.RemedyNotAllowed(verdict, refund, slash);
        if (slash > cap) revert IDisputeManager.SlashAboveCap(caseId, slash, cap);
    }

    /// @notice Settles the appeal bonds into `s`: each comes back only if its appeal changed the outcome
    /// (`finalKey`); otherwise it is forfeited to the other party, less the burnt share.
    // `s` is updated and returned, so it cannot be calldata.
    // solhint-disable-next-line gas-calldata-parameters
    function settleAppealBonds(
        mapping(uint256 => IDisputeManager.Round) storage rounds,
        address challenger,
        bytes32 finalKey,
        uint16 burnBps,
        BondSplit memory s
    ) internal view returns (BondSplit memory) {
        for (uint256 round = 1; round <= SLOW_PATH_ROUND; ++round) {
            IDisputeManager.Round storage r = rounds[round];
            uint256 bond = r.appealBond;
            if (bond == 0) continue;
            bool byChallenger = r.appellant == challenger;
            if (latestKey(rounds, round) != finalKey) {
                if (byChallenger) s.toChallenger += bond;
                else s.toRespondent += bond;
                continue;
            }
            uint256 burned = bond * burnBps / BPS; // <= bond
            s.burned += burned;
            if (byChallenger) s.toRespondent += bond - burned;
            else s.toChallenger += bond - burned;
        }
        return s;
    }

    /// @notice Shares `s.fee` equally among the signers of every round whose verdict stands (credited to
    /// `claimableOf`, never pushed); the rounding dust is burnt. With no such signer (an expired or
    /// governance-decided case nobody signed) the fee goes back to the side it was taken from.
    function payFees(
        mapping(uint256 => IDisputeManager.Round) storage rounds,
        mapping(uint256 => address[]) storage panels,
        mapping(address => uint256) storage claimableOf,
        bytes32 caseId,
        address asset,
        bytes32 finalKey,
        BondSplit memory s
    ) internal returns (BondSplit memory, uint256 paid) {
        uint256 fee = s.fee;
        s.fee = 0;
        if (fee == 0) return (s, 0);
        uint256 coherent;
        for (uint256 round; round < SLOW_PATH_ROUND; ++round) {
            IDisputeManager.Round storage r = rounds[round];
            if (r.signedMask != 0 && roundKey(r) == finalKey) coherent += popCount(r.signedMask);
        }
        if (coherent == 0) {
            if (s.respondentWon) s.toRespondent += fee;
            else s.toChallenger += fee;
            return (s, 0);
        }
        uint256 share = fee / coherent;
        for (uint256 round; round < SLOW_PATH_ROUND; ++round) {
            IDisputeManager.Round storage r = rounds[round];
            if (r.signedMask == 0 || roundKey(r) != finalKey) continue;
            _credit(panels[round], r.signedMask, claimableOf, caseId, asset, share);
        }
        paid = share * coherent; // <= fee
        s.burned += fee - paid;
        return (s, paid);
    }

    function _credit(
        address[] storage panel,
        uint16 mask,
        mapping(address => uint256) storage claimableOf,
        bytes32 caseId,
        address asset,
        uint256 share
    ) private {
        for (uint256 i; i < panel.length; ++i) {
            if (mask & (1 << i) == 0) continue;
            address arbitrator = panel[i];
            claimableOf[arbitrator] += share;
            emit IDisputeManager.ArbitrationFeeEarned(caseId, arbitrator, asset, share);
        }
    }

    /// @notice What makes two outcomes the same for appeals, fees and slashes: verdict and remedy (the documents
    /// behind them may be worded differently by different panels).
    function outcomeKey(IDisputeManager.Verdict verdict, uint128 refund, uint128 slash)
        internal
        pure
        returns (bytes32)
    {
        return keccak256(abi.encode(verdict, refund, slash));
    }

    /// @notice The outcome key of a round's verdict.
    function roundKey(IDisputeManager.Round storage r) internal view returns (bytes32) {
        return outcomeKey(r.verdict, r.refund, r.slash);
    }

    /// @notice The key of the latest verdict decided in a round before `beforeRound` (zero if none).
    function latestKey(mapping(uint256 => IDisputeManager.Round) storage rounds, uint256 beforeRound)
        internal
        view
        returns (bytes32)
    {
        for (uint256 round = beforeRound; round > 0; --round) {
            IDisputeManager.Round storage r = rounds[round - 1];
            IDisputeManager.Verdict v = r.verdict;
            if (v != IDisputeManager.Verdict.None && v != IDisputeManager.Verdict.Undecidable) return roundKey(r);
        }
        return bytes32(0);
    }

    function popCount(uint16 mask) internal pure returns (uint256 n) {
        for (; mask != 0; mask &= mask - 1) ++n;
    }

    /// @notice Who may dispute a session and what. A closing session: the caller (`msg.sender`, preserved by
    /// DELEGATECALL) must be its payer or funder and `recorded` its recorded closing state. A cooperatively
    /// settled session: the caller must be its payer, `recorded` its summary (`IGasEscrow.settledState`), and the
    /// time within `settledWindow` of the settlement. Either way the leaf of (`receiptHash`, `ticketHash`) must
    /// be proven against `recorded.receiptRoot` or against the root of a provider-signed receipt commit anchored
    /// on the session (`IGasEscrow.anchorReceiptCommit`, whose signature the escrow checked): the provider
    /// committed to both, and a same-amount ticket cannot displace either.
    /// @return sessionId The session.
    /// @return related The other of payer and funder, bound to the subject too (never drawn to judge it); for a
    /// settled session always the funder, who receives the refund.
    /// @return leaf The challenged receipt leaf.
    /// @return settled Whether the session settled cooperatively (nothing to freeze; refunds come from the bond).
    function sessionSubject(
        IGasEscrow gasEscrow,
        IGasEscrowTypes.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrowTypes.ClosingState calldata recorded,
        bytes32 receiptHash,
        bytes32 ticketHash,
        bytes32[] calldata proof,
        uint40 settledWindow
    ) external view returns (bytes32 sessionId, address related, bytes32 leaf, bool settled) {
        sessionId = gasEscrow.sessionIdOf(terms, openedAt);
        if (msg.sender != terms.payer && msg.sender != terms.funder) {
            revert IDisputeManager.NotTheChallengerSide(sessionId, msg.sender);
        }
        related = msg.sender == terms.payer ? terms.funder : terms.payer;
        (bool matches,,) = gasEscrow.closingInfo(sessionId, recorded);
        if (!matches) {
            uint40 settledAt;
            (matches, settledAt) = gasEscrow.settledInfo(sessionId, recorded);
            if (!matches) revert IDisputeManager.ClosingStateMismatch(sessionId);
            // Only the payer: it holds the receipts, and the funder it names is who the refund goes to.
            if (msg.sender != terms.payer) revert IDisputeManager.NotTheChallengerSide(sessionId, msg.sender);
            uint256 until = uint256(settledAt) + settledWindow;
            if (block.timestamp > until) revert IDisputeManager.SettledDisputeWindowClosed(sessionId, until);
            settled = true;
        }
        leaf = ReceiptLeaf.leaf(receiptHash, ticketHash);
        // Sorted-pair keccak, as ReceiptLeaf.verify (solady) and channel-client/accumulator.ts.
        bytes32 root = MerkleProof.processProofCalldata(proof, leaf);
        if (root != recorded.receiptRoot && gasEscrow.anchoredCommitOf(sessionId, root) == 0) {
            revert IDisputeManager.InvalidMerkleProof(sessionId, recorded.receiptRoot);
        }
    }

    /// @notice If the session settled cooperatively (phase `Settled`: permanent, and a closing session can never
    /// become one), refunds its `refund` (in the session's asset) to `funder` out of the provider's SLA bond: its
    /// worth in the bond token at `stakeRate` (bond-token units per 10^18 of the asset), capped at what the bond
    /// still holds, slashed to the funder with nothing burnt.
    /// @return settled Whether the session settled cooperatively (otherwise nothing happened).
    /// @return refunded The part of `refund` the bond covered, in the session's asset (rounded down).
    function refundIfSettled(
        IGasEscrow gasEscrow,
        IProviderRegistry registry,
        bytes32 sessionId,
        address provider,
        address funder,
        uint128 refund,
        uint256 stakeRate
    ) internal returns (bool settled, uint128 refunded) {
        if (gasEscrow.phaseOf(sessionId) != IGasEscrowTypes.Phase.Settled) return (false, 0);
        uint256 due = Math.mulDiv(refund, stakeRate, STAKE_RATE_UNIT);
        uint256 take = _slashBond(registry, provider, funder, due);
        if (take == 0) return (true, 0);
        // take <= due, so the covered share is at most `refund` and fits a uint128.
        return (true, take == due ? refund : uint128(Math.mulDiv(take, STAKE_RATE_UNIT, stakeRate)));
    }

    /// @dev Slashes up to `amount` of the provider's SLA bond (whatever it still holds) to `to`, none burnt.
    function _slashBond(IProviderRegistry registry, address provider, address to, uint256 amount)
        private
        returns (uint256 take)
    {
        if (amount == 0) return 0;
        IProviderRegistry.Bond memory b = registry.bondOf(IProviderRegistry.Role.Provider, provider);
        uint256 held = uint256(b.active) + b.pending;
        take = amount < held ? amount : held;
        if (take != 0) registry.slash(IProviderRegistry.Role.Provider, provider, take, to, 0);
    }
}
