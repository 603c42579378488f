/**
 * The dispute commands of `ioi` (routed from `channel-client/cli/channel.ts`):
 *
 *   ioi dispute build-gig | build-session | open | respond | expire
 *   ioi case show | draw | submit | appeal | finalize
 *   ioi arbitrator register | stake | unstake | withdraw | repin | show | cases | claim
 *   ioi arbitrate --case ID --package FILE [--sign-only --out SIG] [--devnet-quorum N] [--submit]
 *
 * A challenger builds a ChallengePackage from what it holds (the ICS and both bundles of a gig; its SQLite
 * store for a session), writes it as canonical JSON, and opens the case with the package's hash; the
 * respondent may contest. Anyone then draws the case's panel from the admitted arbitrators (`case draw`:
 * randomness from a future block, then the draw). Each panel member runs the deterministic arbitration against
 * the chain and signs the resolution (`arbitrate --sign-only`); anyone combines a supermajority of those
 * signatures into one `submitVerdict` (`case submit`). A party may appeal within the appeal window (a larger,
 * fresh panel; the second appeal goes to governance's slow path); after it anyone finalises and the coherent
 * signers claim their fees. On a local devnet, `--devnet-quorum N` stands in for N members of the drawn panel
 * (their Hardhat keys) and `--submit` submits their verdict.
 *
 * The DisputeManager's address comes from --dispute-manager, IOI_DISPUTE_MANAGER or
 * the deployment record of the RPC's chain (channel-client/chain/deployment.ts); the escrows and the registry are the ones that DisputeManager is wired to
 * (read from it), and an address given by option or environment for them must agree.
 */

import { GLOBAL_HELP, type Command } from "./common";
import { arbitratorServeCommands } from "./arbitrator-serve";
import { CASE_OPTION, DISPUTE_HELP, disputeClients } from "./dispute-plumbing";
import { runBuildGig, runBuildSession } from "./dispute-build";
import { runExpire, runOpen, runRespond } from "./dispute-open";
import { runCaseAppeal, runCaseDraw, runCaseFinalize, runCaseShow, runCaseSubmit } from "./case";
import {
  runArbitratorCases,
  runArbitratorClaim,
  runArbitratorRegister,
  runArbitratorRepin,
  runArbitratorShow,
  runArbitratorStake,
  runArbitratorUnstake,
  runArbitratorWithdraw,
} from "./arbitrator";
import { runArbitrate } from "./arbitrate";

// The command modules: dispute-plumbing.ts (errors, options, shared chain and file plumbing), dispute-build.ts
// (build-gig, build-session), dispute-open.ts (open, respond, expire), case.ts, arbitrator.ts, arbitrate.ts.
export { DISPUTE_HELP, DISPUTE_OPTIONS, disputeClients, laneOf, nextCaseId, outputPath, writePackage } from "./dispute-plumbing";
export {
  ArbitratorAbstainedError,
  CaseStateError,
  NotOnPanelError,
  PackageMismatchError,
  QuorumDisagreementError,
  SignatureFileError,
  StaleCaseIdError,
} from "./dispute-plumbing";

/*//////////////////////////////////////////////////////////////
                               COMMANDS
//////////////////////////////////////////////////////////////*/

export type CommandGroup = { summary: string; commands: Record<string, Command> };

/** `ioi arbitrator serve` and `ioi evidence …` (channel-client/cli/arbitrator-serve.ts), on this module's chain plumbing. */
const SERVE_COMMANDS = arbitratorServeCommands((values, account) => disputeClients(values, account));

/** `ioi dispute <subcommand>`, `ioi case <subcommand>`, `ioi arbitrator <subcommand>` and `ioi evidence <subcommand>`. */
export const DISPUTE_GROUPS: Record<"dispute" | "case" | "arbitrator" | "evidence", CommandGroup> = {
  dispute: {
    summary: "dispute a gig or a session step: build a package, open, respond, expire (ioi dispute --help)",
    commands: {
      "build-gig": {
        summary: "build a ChallengePackage disputing a delivered gig (the acting key is the challenger: the gig's client)",
        usage:
          "ioi dispute build-gig --gig ID --ics-file PATH --suite-dir DIR --deliverable-dir DIR [--lane 0|1] --out FILE",
        notes: [
          "  --ics-file PATH        the Intent Contract Schema the gig is bound to (JSON or YAML)",
          "  --suite-dir DIR        the hash-anchored test suite, every regular file under DIR (omit if the ICS binds none)",
          "  --deliverable-dir DIR  the delivered files; must hash to the gig's deliverable hash",
          "  --lane 0|1             the lane to open at (default 1: the rubric's objective checks replay the suite)",
          "  --out FILE             where the package is written, as canonical JSON",
          "Symbolic links, hidden files and anything else a bundle may not hold are refused.",
        ],
        options: {
          gig: { type: "string" },
          "ics-file": { type: "string" },
          "suite-dir": { type: "string" },
          "deliverable-dir": { type: "string" },
          lane: { type: "string" },
          out: { type: "string" },
        },
        run: runBuildGig,
      },
      "build-session": {
        summary: "build a ChallengePackage disputing one receipt of a closing session, from the payer's store",
        usage: "ioi dispute build-session --session ID --seq N [--lane 0|1] --out FILE [--db PATH]",
        notes: [
          "  --seq N       the receipt being disputed: the recorded root or an anchored provider commit must cover it",
          "  --lane 0|1    the lane to open at (default 0)",
          "  --out FILE    where the package is written, as canonical JSON",
          "  --db PATH     the payer's store (default .data/payer.db)",
          "The package carries the channel with its current recorded close, the receipt with its ticket and",
          "inclusion proof against the recorded root (or the anchored provider-signed receipt commit that covers",
          "it: see `ioi anchor`), the payer's grant when a session key signed a ticket, and the receipt before it.",
        ],
        options: { session: { type: "string" }, seq: { type: "string" }, lane: { type: "string" }, out: { type: "string" } },
        run: runBuildSession,
      },
      open: {
        summary: "open the case a package names, posting the challenger's bond (ETH, or the token approved first)",
        usage: "ioi dispute open --package FILE",
        notes: [
          "  --package FILE  a ChallengePackage (JSON or YAML); its case id must be the one the DisputeManager assigns next",
          "  --yes           post a bond larger than the value at stake (refused without it)",
        ],
        options: { package: { type: "string" }, yes: { type: "boolean" } },
        run: runOpen,
      },
      respond: {
        summary: "contest a case as its respondent, posting a bond equal to the challenger's",
        usage: "ioi dispute respond --case ID",
        options: CASE_OPTION,
        run: runRespond,
      },
      expire: {
        summary: "move an undecided case past its deadline to the slow path, or end a slow-path case past its own (anyone)",
        usage: "ioi dispute expire --case ID",
        notes: [
          "An open or deliberating case past its deadline goes to governance's slow path. A slow-path case past its",
          "deadline ends: the latest verdict a panel reached is enforced, or with none the subject ends as it would",
          "without a dispute (a delivered gig is released, a closing session pays what was recorded): no refund, no",
          "slash, both bonds returned. (`ioi dispute escalate` is gone: `ioi case appeal` replaces it.)",
        ],
        options: CASE_OPTION,
        run: runExpire,
      },
    },
  },
  case: {
    summary: "a case's panel, verdict, appeal and end: show, draw, submit, appeal, finalize (ioi case --help)",
    commands: {
      show: {
        summary: "show a case: status, round, panel, signers, deadlines (appeal window end), bonds, claimable fees (no key needed)",
        usage: "ioi case show --case ID",
        options: CASE_OPTION,
        run: runCaseShow,
      },
      draw: {
        summary: "request the case's panel randomness, then draw the panel once its block is mined (anyone)",
        usage: "ioi case draw --case ID",
        notes: [
          "The panel is drawn by stake from the admitted arbitrators with the DisputeManager's judge runtime, seeded",
          "by a block after the request. On chain 31337 the blocks are mined at once (hardhat_mine); elsewhere the",
          "command says how many blocks to wait before running it again.",
        ],
        options: CASE_OPTION,
        run: runCaseDraw,
      },
      submit: {
        summary: "combine panel members' signatures (from `ioi arbitrate --sign-only`) into one verdict and submit it (anyone)",
        usage: "ioi case submit --signature FILE --signature FILE … [--resolution FILE]",
        notes: [
          "  --signature FILE   a signature file written by `ioi arbitrate --sign-only --out FILE`; repeat per signer",
          "  --resolution FILE  optional: the resolution document (`ioi arbitrate --out`); every signature must sign it",
          "Each signature is checked to recover to its signer, the signer to sit on the case's current panel, and the",
          "signers to make a supermajority; the call is simulated before it is sent.",
        ],
        options: { signature: { type: "string", multiple: true }, resolution: { type: "string" } },
        run: runCaseSubmit,
      },
      appeal: {
        summary: "appeal the standing verdict (a party, inside the appeal window), posting the next level's bond",
        usage: "ioi case appeal --case ID",
        notes: [
          "The bond is bondFor(asset, value, lane + round + 1), sent as ETH or approved first for a token. The first",
          "appeal draws a fresh panel of 2 × panelSize − 1; the second sends the case to governance's slow path.",
        ],
        options: CASE_OPTION,
        run: runCaseAppeal,
      },
      finalize: {
        summary: "enforce the standing verdict once the appeal window has passed (anyone); fees go to coherent signers",
        usage: "ioi case finalize --case ID",
        options: CASE_OPTION,
        run: runCaseFinalize,
      },
    },
  },
  arbitrator: {
    summary: "be an arbitrator: register, stake, unstake, withdraw, repin, show, cases, claim, serve (ioi arbitrator --help)",
    commands: {
      register: {
        summary: "register the acting key as an arbitrator pinned to this build's judge runtime (governance then admits it)",
        usage: "ioi arbitrator register --did-hash HASH --mldsa-hash HASH",
        notes: [
          "  --did-hash HASH    keccak-256 of the arbitrator's DID document",
          "  --mldsa-hash HASH  keccak-256 of its ML-DSA public key",
          "Admission to the pool is governance's, through the timelock (scripts/timelock.ts).",
        ],
        options: { "did-hash": { type: "string" }, "mldsa-hash": { type: "string" } },
        run: runArbitratorRegister,
      },
      stake: {
        summary: "stake bond tokens as an arbitrator (approves the registry first)",
        usage: "ioi arbitrator stake --amount TOKENS",
        notes: ["  --amount TOKENS  whole or decimal bond tokens (LaborGas has 18 decimals), e.g. 5000 or 0.5"],
        options: { amount: { type: "string" } },
        run: runArbitratorStake,
      },
      unstake: {
        summary: "start unbonding stake (refused while a panel or case locks it); withdraw after the unbonding delay",
        usage: "ioi arbitrator unstake --amount TOKENS",
        options: { amount: { type: "string" } },
        run: runArbitratorUnstake,
      },
      withdraw: {
        summary: "withdraw stake whose unbonding delay has passed",
        usage: "ioi arbitrator withdraw",
        options: {},
        run: runArbitratorWithdraw,
      },
      repin: {
        summary: "re-pin the acting arbitrator to this build's judge runtime (keeps its DID and ML-DSA hashes unless given)",
        usage: "ioi arbitrator repin [--did-hash HASH] [--mldsa-hash HASH]",
        options: { "did-hash": { type: "string" }, "mldsa-hash": { type: "string" } },
        run: runArbitratorRepin,
      },
      show: {
        summary: "show an arbitrator: admitted, active, runtime, stake, locks, unbonding phase, claimable fees",
        usage: "ioi arbitrator show [--address ADDR]",
        notes: ["  --address ADDR  the arbitrator (default: the acting key)"],
        options: { address: { type: "string" } },
        run: runArbitratorShow,
      },
      cases: {
        summary: "list the cases whose drawn panel includes the arbitrator (scans PanelDrawn logs)",
        usage: "ioi arbitrator cases [--address ADDR] [--from-block N]",
        notes: [
          "  --address ADDR   the arbitrator (default: the acting key)",
          "  --from-block N   first block scanned (default: the DisputeManager's deployment block from",
          "                   the deployment record's block of the DisputeManager, else 0)",
        ],
        options: { address: { type: "string" }, "from-block": { type: "string" } },
        run: runArbitratorCases,
      },
      claim: {
        summary: "claim the fees (and deferred payouts) the DisputeManager credited to the acting key in one asset",
        usage: "ioi arbitrator claim --asset ADDR|eth",
        options: { asset: { type: "string" } },
        run: runArbitratorClaim,
      },
      serve: SERVE_COMMANDS.serve,
    },
  },
  evidence: {
    summary: "evidence by hash: serve files on loopback, publish where a case's package is (ioi evidence --help)",
    commands: SERVE_COMMANDS.evidence,
  },
};

/** `ioi arbitrate`. */
export const ARBITRATE_COMMAND: Command = {
  summary: "arbitrate a case on your panel against the chain and sign the resolution (a devnet quorum may also submit it)",
  usage:
    "ioi arbitrate --case ID --package FILE [--key-env NAME] [--sign-only --out SIG] [--devnet-quorum N] [--submit] [--out FILE] [--audit FILE]",
  notes: [
    "  --package FILE       the case's ChallengePackage (JSON or YAML); it must name this case",
    "  --sign-only          sign without submitting: --out gets {caseId, signer, resolution, signature} for `ioi case submit`",
    "  --devnet-quorum N    chain 31337 only: N members of the drawn panel (their Hardhat keys, accounts 0..39) each",
    "                       arbitrate independently and sign; refused unless their resolution hashes are identical",
    "  --submit             submit the verdict with the signatures (the acting key sends the transaction)",
    "  --out FILE           write the resolution as canonical JSON (with --sign-only: the signature file)",
    "  --audit FILE         append every run's audit log as JSON lines",
    "The case must be deliberating and the acting key (or each devnet member) on its current panel.",
    "",
    "ioi arbitrate --verify-upip FILE (--package FILE | --suite-dir DIR --deliverable-dir DIR)   (offline, no key, no chain)",
    "  --verify-upip FILE     replay a UPIP record, or every record in a Resolution's replays (as --out writes it),",
    "                         in this judge's sealed engine: prints match, or mismatch with the differing fields",
    "                         (exit status 3 on mismatch; see channel-client/cli/verify-upip.ts)",
    "  --package FILE         the bundles are this package's test_suite and deliverable evidence, or:",
    "  --suite-dir DIR        the suite's files and",
    "  --deliverable-dir DIR  the deliverable's files (read as `ioi dispute build-gig` reads them);",
    "                         either way they must hash to the record's suite_hash and deliverable_hash",
  ],
  options: {
    ...CASE_OPTION,
    package: { type: "string" },
    "sign-only": { type: "boolean" },
    "devnet-quorum": { type: "string" },
    submit: { type: "boolean" },
    out: { type: "string" },
    audit: { type: "string" },
    "verify-upip": { type: "string" },
    "suite-dir": { type: "string" },
    "deliverable-dir": { type: "string" },
  },
  run: runArbitrate,
};

export function disputeGroupHelp(name: keyof typeof DISPUTE_GROUPS): string {
  const lines = [`Usage: ioi ${name} <subcommand> [options]   (ioi ${name} <subcommand> --help for its options)`, "", "Subcommands:"];
  for (const [sub, c] of Object.entries(DISPUTE_GROUPS[name].commands)) lines.push(`  ${sub.padEnd(14)} ${c.summary}`);
  if (name === "dispute") lines.push("  (`ioi dispute escalate` is gone: a party appeals a decided case with `ioi case appeal`.)");
  lines.push("", "Dispute options:", ...DISPUTE_HELP, "", "Global options:", ...GLOBAL_HELP);
  return lines.join("\n");
}
