/**
 * The dispute commands of `ioi` (routed from `src/cli/channel.ts`):
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
 * the deployment record of the RPC's chain (src/chain/deployment.ts); the escrows and the registry are the ones that DisputeManager is wired to
 * (read from it), and an address given by option or environment for them must agree.
 */
import { appendFileSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { ParseArgsConfig } from "node:util";
import {
  erc20Abi,
  getAddress,
  isAddress,
  isAddressEqual,
  isHex,
  pad,
  parseEther,
  parseEventLogs,
  toHex,
  zeroAddress,
  zeroHash,
  type Abi,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { ReceiptAccumulator } from "../core/accumulator";
import { canon } from "../core/canonical";
// Only the deployment-address resolution comes from the channel commands' module; it does not import this one.
import { deployedContract, givenAddress, readingOf, rpcClients } from "./chain";
import { readPaged } from "../chain/logs";
import {
  channelOf,
  gigIdOf,
  GLOBAL_HELP,
  hashOption,
  loadAccount,
  need,
  openStore,
  sessionOf,
  uint,
  UsageError,
  type Command,
  type Out,
} from "./common";
import { ETH_UNIT, formatAmount, formatAmountWithBase, formatDate, formatRelative } from "../core/format";
import { ContractRevertError, decodeRevert } from "../chain/revert";
import { checkedWrite } from "../chain/write";
import { BaseError, SizeLimitError } from "../core/errors";
import { gasEscrowAbi, type ClosingState, type Wallet } from "../chain/escrow";
import { grantForTicket, KeyTicketWithoutGrantError } from "../node/key-tickets";
import { leafCountOfRoot } from "../node/receipt-anchor";
import { sessionReceiptHash } from "../core/receipt";
import { paymentTicketHash } from "../core/ticket";
import { assertBundleHash, bundleHash, type Bundle } from "../arbitration/bundle";
import { buildGigPackage, buildSessionPackage } from "../arbitration/build";
import {
  appealCase,
  blocksUntilReady,
  currentClosingState,
  claimFees,
  currentPanel,
  disputeManagerAbi,
  DisputeTransactionError,
  drawPanel,
  finalizeCase,
  gigEscrowAbi,
  loadCaseContext,
  openGigCase,
  openSessionCase,
  providerRegistryAbi,
  recordedStateOf,
  submitVerdict,
  type Deployment,
  type OpenedCase,
  type SubmittedVerdict,
} from "../arbitration/chain";
import { CASE_STATUSES } from "../arbitration/context";
import { MAX_DOCUMENT_BYTES, parseDocument } from "../arbitration/document";
import { icsFromJson, icsHash, type Ics } from "../arbitration/ics";
import { packageHash, packageToJson, parsePackage, soleEvidence, evidenceOfKind, type ChallengePackage, type ReceiptEvidence } from "../arbitration/package";
import {
  disputeManagerDomain,
  FINAL_VERDICTS,
  resolutionFromJson,
  resolutionMessage,
  resolutionToJson,
  signResolution,
  VERDICT_CODES,
  verifyResolutionSignature,
  type ResolutionMessage,
} from "../arbitration/resolution";
import { arbitrate, judgeRuntimeHash, type ArbitrationRun } from "../arbitration/runner";
import { readBundleDirectory } from "./input-file";
import { runVerifyUpip } from "./verify-upip";
import { arbitratorServeCommands } from "./arbitrator-serve";

/*//////////////////////////////////////////////////////////////
                                ERRORS
//////////////////////////////////////////////////////////////*/

/** The package names a case the DisputeManager will not assign next: rebuild it (`ioi dispute build-*`). */
export class StaleCaseIdError extends BaseError {
  override name = "StaleCaseIdError" as const;
}

/** A package or its inputs do not fit the chain: another chain, contract, challenger, subject or state. */
export class PackageMismatchError extends BaseError {
  override name = "PackageMismatchError" as const;
}

/** The devnet quorum's arbitrators reached different resolutions, so none of them was signed. */
export class QuorumDisagreementError extends BaseError {
  override name = "QuorumDisagreementError" as const;
}

/** A key that is not on the case's current panel tried to sign or was offered as a signer. */
export class NotOnPanelError extends BaseError {
  override name = "NotOnPanelError" as const;
}

/** A case is not in the state the command needs (e.g. arbitrating a case whose panel is not drawn). */
export class CaseStateError extends BaseError {
  override name = "CaseStateError" as const;
}

/** The arbitrator could not judge the case for a reason of its own (host fault): it signs nothing. */
export class ArbitratorAbstainedError extends BaseError {
  override name = "ArbitratorAbstainedError" as const;
}

/** A signature file is malformed, signs another resolution or case, or does not recover to its signer. */
export class SignatureFileError extends BaseError {
  override name = "SignatureFileError" as const;
}

/*//////////////////////////////////////////////////////////////
                               OPTIONS
//////////////////////////////////////////////////////////////*/

/** Options every dispute command takes besides the global ones. */
export const DISPUTE_OPTIONS = {
  "dispute-manager": { type: "string" },
  "gig-escrow": { type: "string" },
  registry: { type: "string" },
} as const satisfies ParseArgsConfig["options"];

export const DISPUTE_HELP = [
  "  --dispute-manager ADDR  DisputeManager (default $IOI_DISPUTE_MANAGER, else the deployment record of the RPC's chain)",
  "  --gig-escrow ADDR       GigEscrow; default: the one the DisputeManager uses ($IOI_GIG_ESCROW must agree)",
  "  --registry ADDR         ProviderRegistry; default: the one the DisputeManager uses ($IOI_REGISTRY must agree)",
  "                          (--escrow, the GasEscrow, likewise defaults to the DisputeManager's)",
];

const CASE_OPTION = { case: { type: "string" } } as const satisfies ParseArgsConfig["options"];

/** The mnemonic of Hardhat's default accounts; --devnet-quorum signs with the keys of the drawn panel among them. */
const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";
const DEVNET_CHAIN_ID = 31337;
/** The devnet funds 40 accounts; a drawn panel member's key is looked up among them. */
const DEVNET_ACCOUNTS = 40;
/** The largest panel (an appeal round of panelSize 8). */
const MAX_PANEL = 15;
/** Largest signature or resolution file read by `ioi case submit`. */
const MAX_SIGNATURE_FILE_BYTES = 64 * 1024;

/** Largest ICS file read (as `ioi gig fund --ics-file`). */
const MAX_ICS_FILE_BYTES = 1 << 20;

const KINDS = ["none", "gig", "session"] as const;
const STATUSES = CASE_STATUSES;
const ARBITRATOR_ROLE = 1;
const UNBOND_PHASES = ["none", "unbonding", "withdrawable"] as const;
const BURN_ADDRESS: Address = "0x000000000000000000000000000000000000dEaD";

/*//////////////////////////////////////////////////////////////
                               COMMANDS
//////////////////////////////////////////////////////////////*/

export type CommandGroup = { summary: string; commands: Record<string, Command> };

/** `ioi arbitrator serve` and `ioi evidence …` (src/cli/arbitrator-serve.ts), on this module's chain plumbing. */
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
    "                         (exit status 3 on mismatch; see src/cli/verify-upip.ts)",
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

/*//////////////////////////////////////////////////////////////
                               PLUMBING
//////////////////////////////////////////////////////////////*/

type Values = Record<string, unknown>;

function caseIdOf(values: Values): Hex {
  return hashOption(values, "case", "the case id");
}

export function laneOf(values: Values, fallback: 0 | 1): 0 | 1 {
  const lane = values.lane;
  if (lane === undefined) return fallback;
  if (lane !== "0" && lane !== "1") throw new UsageError(`--lane must be 0 or 1 (a case opens at lane 0 or 1); received "${String(lane)}".`);
  return Number(lane) as 0 | 1;
}

/** An output file's directory must exist before any work is done (nothing is created along the way). */
export function outputPath(values: Values, name: string, what: string, required: boolean): string | undefined {
  if (!required && values[name] === undefined) return undefined;
  const file = need(values, name, what);
  const directory = path.dirname(path.resolve(file));
  if (!existsSync(directory) || !statSync(directory).isDirectory()) {
    throw new UsageError(`--${name} ${file}: the directory ${directory} does not exist.`);
  }
  if (existsSync(file) && statSync(file).isDirectory()) throw new UsageError(`--${name} ${file} is a directory, not a file.`);
  return file;
}

function writeOutput(name: string, file: string, text: string, append = false): void {
  try {
    if (append) appendFileSync(file, text);
    else writeFileSync(file, text);
  } catch (cause) {
    throw new UsageError(`Cannot write --${name} ${file}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
  }
}

/** A regular file's bytes, refusing before reading anything beyond `maxBytes`. */
function readInput(name: string, file: string, maxBytes: number): Buffer {
  let size: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) throw new UsageError(`--${name} ${file} is not a regular file.`);
    size = stat.size;
  } catch (cause) {
    if (cause instanceof UsageError) throw cause;
    throw new UsageError(`Cannot read --${name} ${file}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
  }
  if (size > maxBytes) throw new SizeLimitError(`--${name} ${file}`, size, maxBytes);
  try {
    return readFileSync(file);
  } catch (cause) {
    throw new UsageError(`Cannot read --${name} ${file}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
  }
}

function readPackage(values: Values): { pkg: ChallengePackage; file: string } {
  const file = need(values, "package", "the ChallengePackage file (JSON or YAML)");
  return { pkg: parsePackage(readInput("package", file, MAX_DOCUMENT_BYTES)), file };
}

/**
 * Runs a transaction; a revert (decoded by the shared decoder, src/chain/revert.ts) becomes a
 * {@link DisputeTransactionError} naming the contract's error and what it means.
 */
async function transact<T>(what: string, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    if (error instanceof ContractRevertError) throw new DisputeTransactionError(error.shortMessage, { cause: error });
    const revert = decodeRevert(error);
    if (!revert) throw error;
    throw new DisputeTransactionError(new ContractRevertError(what, revert).shortMessage, { cause: error });
  }
}

/** One write through `checkedWrite` (chain, code, funds and simulation checked before sending), decoded. */
function write(what: string, wallet: Wallet, publicClient: PublicClient, call: { address: Address; abi: Abi; functionName: string; args: readonly unknown[]; value?: bigint }) {
  return transact(what, () => checkedWrite({ publicClient, wallet, what, ...call } as never));
}

/** The DisputeManager, checked to be a contract, and the escrows and registry it is wired to. */
async function deploymentOf(values: Values, publicClient: PublicClient): Promise<Deployment> {
  const { address: disputeManager, fromBlock } = await deployedContract(values, publicClient, "dispute-manager", "IOI_DISPUTE_MANAGER", "DisputeManager");
  const read = (functionName: "gasEscrow" | "gigEscrow" | "registry") =>
    publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName });
  const [gasEscrow, gigEscrow, registry] = (await Promise.all([read("gasEscrow"), read("gigEscrow"), read("registry")])).map((a) => getAddress(a));
  const wired: [string, string, Address][] = [
    ["escrow", "IOI_ESCROW", gasEscrow!],
    ["gig-escrow", "IOI_GIG_ESCROW", gigEscrow!],
    ["registry", "IOI_REGISTRY", registry!],
  ];
  for (const [option, envName, actual] of wired) {
    const fromOption = values[option] as string | undefined;
    const given = fromOption ?? process.env[envName];
    if (given === undefined || given === "") continue;
    const source = fromOption !== undefined ? `--${option}` : `$${envName}`;
    if (!isAddress(given)) throw new UsageError(`${source} must be an address; received "${given}".`);
    if (!isAddressEqual(given, actual)) {
      throw new UsageError(`${source} is ${getAddress(given)}, but the DisputeManager at ${disputeManager} uses ${actual}; drop it or fix it.`);
    }
  }
  return { disputeManager, gasEscrow: gasEscrow!, gigEscrow: gigEscrow!, registry: registry!, deploymentBlock: fromBlock };
}

export async function disputeClients(values: Values, account?: LocalAccount) {
  givenAddress(values, "dispute-manager", "IOI_DISPUTE_MANAGER"); // a malformed address is refused before any RPC call
  const { publicClient, wallet, chainId } = await rpcClients(values, account);
  const deployment = await deploymentOf(values, publicClient);
  return { publicClient, wallet, chainId, deployment };
}

const gigSubject = (gigId: bigint): Hex => pad(toHex(gigId), { size: 32 });

export function nextCaseId(publicClient: PublicClient, disputeManager: Address, kind: 1 | 2, subjectId: Hex): Promise<Hex> {
  return publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "nextCaseId", args: [kind, subjectId] });
}

type StoredCase = Awaited<ReturnType<typeof readStoredCase>>;

/** The case as `caseOf` returns it; a usage error if it does not exist. */
async function readStoredCase(publicClient: PublicClient, disputeManager: Address, caseId: Hex) {
  const c = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] });
  if (c.status === 0) throw new UsageError(`Case ${caseId} does not exist on the DisputeManager at ${disputeManager}.`);
  return { ...c, kindName: KINDS[c.kind] ?? `kind ${c.kind}`, statusName: STATUSES[c.status] ?? `status ${c.status}` };
}

const assetName = (asset: Address): string => (BigInt(asset) === 0n ? "ETH" : asset);

/** Pays `amount` of the case's asset with the next call: as ETH value, or by approving the token first. */
async function bondValue(wallet: Wallet, publicClient: PublicClient, asset: Address, spender: Address, amount: bigint): Promise<bigint> {
  if (BigInt(asset) === 0n) return amount;
  if (amount > 0n) {
    await write("ERC-20.approve", wallet, publicClient, { address: asset, abi: erc20Abi, functionName: "approve", args: [spender, amount] });
  }
  return 0n;
}

function packageSummary(pkg: ChallengePackage): string {
  return pkg.subject.kind === "gig" ? `gig ${pkg.subject.gigId}` : `session ${pkg.subject.sessionId} receipt ${pkg.subject.seq}`;
}

export function writePackage(out: Out, file: string, pkg: ChallengePackage): void {
  writeOutput("out", file, canon(packageToJson(pkg)));
  const hash = packageHash(pkg);
  out.lines.push(`Wrote the package disputing ${packageSummary(pkg)} to ${file}: case ${pkg.caseId}, lane ${pkg.lane}, package hash ${hash}.`);
  Object.assign(out.result, {
    caseId: pkg.caseId,
    packageHash: hash,
    kind: pkg.subject.kind,
    lane: pkg.lane,
    challenger: pkg.challenger,
    evidence: pkg.evidence.map((e) => ({ kind: e.kind, artifactId: e.artifactId })),
    out: file,
  });
}

/*//////////////////////////////////////////////////////////////
                          BUILDING PACKAGES
//////////////////////////////////////////////////////////////*/

async function runBuildGig(values: Values, out: Out): Promise<void> {
  const account = loadAccount(values);
  const gigId = gigIdOf(values);
  const icsFile = need(values, "ics-file", "the Intent Contract Schema the gig is bound to (JSON or YAML)");
  const deliverableDir = need(values, "deliverable-dir", "the directory holding the delivered files");
  const suiteDir = values["suite-dir"] as string | undefined;
  const lane = laneOf(values, 1);
  const file = outputPath(values, "out", "the file to write the package to", true)!;

  const ics: Ics = icsFromJson(parseDocument(readInput("ics-file", icsFile, MAX_ICS_FILE_BYTES), { maxBytes: MAX_ICS_FILE_BYTES, what: `The ICS in ${icsFile}` }));
  let suite: Bundle | null = null;
  if (ics.testSuite !== null) {
    if (suiteDir === undefined) throw new UsageError("--suite-dir is required: the ICS binds a test suite, and the package must carry it.");
    suite = readBundleDirectory(suiteDir, "suite-dir");
    assertBundleHash(suite, ics.testSuite.hash, `--suite-dir ${suiteDir}`);
  } else if (suiteDir !== undefined) {
    throw new UsageError("--suite-dir was given, but the ICS binds no test suite (test_suite is null); drop it.");
  }
  const deliverable = readBundleDirectory(deliverableDir, "deliverable-dir");

  const { publicClient, chainId, deployment } = await disputeClients(values);
  const gig = await publicClient.readContract({ address: deployment.gigEscrow, abi: gigEscrowAbi, functionName: "gigOf", args: [gigId] });
  if (gig.status === 0) throw new UsageError(`Gig ${gigId} does not exist in the GigEscrow at ${deployment.gigEscrow}.`);
  if (!isAddressEqual(gig.client, account.address)) {
    throw new PackageMismatchError(`Only gig ${gigId}'s client ${gig.client} can dispute it; the acting key is ${account.address}.`);
  }
  if (icsHash(ics) !== gig.icsHash) {
    throw new PackageMismatchError(`The ICS in ${icsFile} hashes to ${icsHash(ics)}; gig ${gigId} is bound to ${gig.icsHash}.`);
  }
  if (bundleHash(deliverable) !== gig.deliverableHash) {
    throw new PackageMismatchError(
      BigInt(gig.deliverableHash) === 0n
        ? `Gig ${gigId} has no delivery yet; there is nothing to dispute.`
        : `--deliverable-dir ${deliverableDir} hashes to ${bundleHash(deliverable)}; gig ${gigId} was delivered as ${gig.deliverableHash}.`,
    );
  }
  const caseId = await nextCaseId(publicClient, deployment.disputeManager, 1, gigSubject(gigId));
  const pkg = buildGigPackage({
    caseId,
    chainId: BigInt(chainId),
    disputeManager: deployment.disputeManager,
    challenger: account.address,
    lane,
    gigEscrow: deployment.gigEscrow,
    gigId,
    ics,
    suite,
    deliverable,
  });
  writePackage(out, file, pkg);
  out.result.gigId = gigId.toString();
}

async function runBuildSession(values: Values, out: Out): Promise<void> {
  const account = loadAccount(values);
  const sessionId = sessionOf(values);
  const seq = uint(values, "seq", "the seq of the receipt being disputed");
  if (seq === 0n || seq >= 1n << 64n) throw new UsageError(`--seq must be a receipt seq from 1 to 2^64 - 1; received "${values.seq as string}".`);
  const lane = laneOf(values, 0);
  const file = outputPath(values, "out", "the file to write the package to", true)!;
  const { publicClient, chainId, deployment } = await disputeClients(values);
  const store = openStore(values, "payer");
  try {
    const channel = channelOf(store, sessionId);
    if (channel.chainId !== chainId || !isAddressEqual(channel.escrow, deployment.gasEscrow)) {
      throw new PackageMismatchError(
        `The store's channel lives in the GasEscrow ${channel.escrow} on chain ${channel.chainId}; the DisputeManager uses ${deployment.gasEscrow} on chain ${chainId}.`,
      );
    }
    const { payer, funder } = channel.ref.terms;
    if (!isAddressEqual(payer, account.address) && !isAddressEqual(funder, account.address)) {
      throw new PackageMismatchError(`Only the session's payer ${payer} or funder ${funder} can dispute it; the acting key is ${account.address}.`);
    }
    const closing = await currentClosingState(publicClient, deployment.gasEscrow, sessionId, deployment.deploymentBlock);
    // Receipts are accepted in seq order, so the store's receipts in seq order are the accumulator's leaves.
    const steps = store.steps(sessionId).filter((step) => step.receipt !== undefined && step.leaf !== undefined);
    const tree = ReceiptAccumulator.fromLeaves(steps.map((step) => step.leaf!));
    const index = steps.findIndex((step) => step.seq === seq);
    if (index < 0) {
      throw new UsageError(`--seq must name a receipt the payer accepted; the store holds ${steps.length === 0 ? "none" : `receipts with seqs ${steps[0]!.seq} to ${steps[steps.length - 1]!.seq}`} for this session, not ${seq}.`);
    }
    // Which root the receipt is provable against (docs/decisions/0003): the recorded root covers however many
    // receipts the closing ticket's signer had accepted (a pipelined ticket lags the receipts behind it; a
    // payer's closing ticket and a cooperative summary cover them all), found by its root, never assumed from
    // the seq. A receipt past it is proven against the provider's signed receipt commit the payer anchored.
    const recordedCount = leafCountOfRoot(tree, closing.receiptRoot);
    const commit = store.latestCommit(sessionId, "provider");
    const commitCount = commit ? Number(commit.commit.leafCount) : 0;
    const commitCovers = commit !== undefined && index < commitCount && commitCount <= tree.size && tree.prefixRoot(commitCount) === commit.commit.root;
    const recordedUsable = recordedCount !== undefined && index < recordedCount;
    const commitAnchored =
      !recordedUsable &&
      commitCovers &&
      (await publicClient.readContract({ address: deployment.gasEscrow, abi: gasEscrowAbi, functionName: "anchoredCommitOf", args: [sessionId, commit.commit.root] })) !== 0n;
    if (!recordedUsable && !commitAnchored) {
      const recorded =
        recordedCount === undefined
          ? `The recorded root ${closing.receiptRoot} (ticket seq ${closing.seq}) is the root of none of the store's first receipts`
          : recordedCount === 0
            ? `The recorded close (ticket seq ${closing.seq}) commits no receipts`
            : `--seq must name a receipt the recorded close commits (${steps[0]!.seq} to ${steps[recordedCount - 1]!.seq}, the ${recordedCount} receipts ticket seq ${closing.seq} commits) or an anchored receipt commit covers; received ${seq}`;
      const remedy = commitCovers
        ? `the provider's receipt commit over ${commitCount} receipts covers it but is not anchored: run \`ioi anchor --session ${sessionId}\` (payer or funder) while the channel is closing or settled, then build again.`
        : commit === undefined
          ? "the store holds no receipt commit the provider signed, so no anchored root can prove it."
          : `the provider's newest receipt commit in the store (over ${commitCount} receipts) does not prove seq ${seq}.`;
      throw new UsageError(`${recorded}; ${remedy}`);
    }
    const size = recordedUsable ? recordedCount : commitCount;
    const evidenceOf = async (i: number): Promise<ReceiptEvidence> => {
      const step = steps[i]!;
      // A ticket a session key signed is the payer's only with the grant (decision 0025): the store keeps every
      // grant the payer signed, and the package carries the one the ticket needs.
      let grant: Awaited<ReturnType<typeof grantForTicket>>;
      try {
        grant = await grantForTicket({ channel, store, ticket: step.ticket });
      } catch (error) {
        if (!(error instanceof KeyTicketWithoutGrantError)) throw error;
        throw new PackageMismatchError(`${error.shortMessage} Without the payer's grant no arbitrator can check the ticket; keep the grant in the store (\`ioi session-key authorize --session\`, or stream with --session-key).`);
      }
      return { receipt: step.receipt!, ticket: step.ticket, leafIndex: BigInt(i), merkleProof: tree.proof(i, size), ...(grant ? { sessionKey: grant } : {}) };
    };
    const receipts = index > 0 && steps[index - 1]!.seq === seq - 1n ? [await evidenceOf(index - 1), await evidenceOf(index)] : [await evidenceOf(index)];
    // The receipts as the provider delivered them (what the payer checked against its request and output),
    // and the provider's fault statement for the challenged seq, if the call failed (issue 12 item 5).
    const delivered = receipts.map((e) => ({ receipt: e.receipt }));
    const fault = store.getFaultStatement(sessionId, seq);
    const caseId = await nextCaseId(publicClient, deployment.disputeManager, 2, sessionId);
    const pkg = buildSessionPackage({
      caseId,
      chainId: BigInt(chainId),
      disputeManager: deployment.disputeManager,
      challenger: account.address,
      lane,
      gasEscrow: deployment.gasEscrow,
      sessionId,
      ref: channel.ref,
      pricing: channel.pricing,
      closing,
      ...(recordedUsable ? {} : { commit: commit! }),
      seq,
      receipts,
      delivered,
      ...(fault ? { fault } : {}),
    });
    writePackage(out, file, pkg);
    Object.assign(out.result, {
      sessionId,
      seq: seq.toString(),
      closingSeq: closing.seq.toString(),
      committedReceipts: size,
      provenAgainst: recordedUsable ? "recorded root" : "anchored receipt commit",
      sessionKey: receipts.find((e) => e.receipt.receipt.seq === seq)!.sessionKey?.grant.key ?? null,
      faultStatement: fault !== undefined,
    });
  } finally {
    await store.close();
  }
}

/*//////////////////////////////////////////////////////////////
                           CASE LIFECYCLE
//////////////////////////////////////////////////////////////*/

const sameClosing = (a: ClosingState, b: ClosingState): boolean =>
  a.deposit === b.deposit && a.seq === b.seq && a.amount === b.amount && a.receiptRoot === b.receiptRoot && a.feeBps === b.feeBps;

async function runOpen(values: Values, out: Out): Promise<void> {
  const { pkg, file } = readPackage(values);
  const account = loadAccount(values);
  const { publicClient, wallet, chainId, deployment } = await disputeClients(values, account);
  if (pkg.chainId !== BigInt(chainId) || !isAddressEqual(pkg.disputeManager, deployment.disputeManager)) {
    throw new PackageMismatchError(
      `${file} is for the DisputeManager ${pkg.disputeManager} on chain ${pkg.chainId}, not ${deployment.disputeManager} on chain ${chainId}.`,
    );
  }
  if (!isAddressEqual(pkg.challenger, account.address)) {
    throw new PackageMismatchError(`${file} names the challenger ${pkg.challenger}; the acting key is ${account.address}.`);
  }
  const hash = packageHash(pkg);
  const common = { wallet: wallet!, publicClient, disputeManager: deployment.disputeManager, lane: pkg.lane, packageHash: hash };
  const subject = pkg.subject;
  let opened: OpenedCase;
  if (subject.kind === "gig") {
    if (!isAddressEqual(subject.gigEscrow, deployment.gigEscrow)) {
      throw new PackageMismatchError(`${file} disputes a gig of the GigEscrow ${subject.gigEscrow}; the DisputeManager uses ${deployment.gigEscrow}.`);
    }
    await assertNextCaseId(publicClient, deployment.disputeManager, pkg, 1, gigSubject(subject.gigId));
    const gig = await publicClient.readContract({ address: deployment.gigEscrow, abi: gigEscrowAbi, functionName: "gigOf", args: [subject.gigId] });
    await confirmBond(values, publicClient, deployment.disputeManager, gig.asset, gig.amount, pkg.lane, `gig ${subject.gigId}`);
    opened = await transact("DisputeManager.openGigCase", () => openGigCase({ ...common, gigEscrow: deployment.gigEscrow, gigId: subject.gigId }));
  } else {
    if (!isAddressEqual(subject.gasEscrow, deployment.gasEscrow)) {
      throw new PackageMismatchError(`${file} disputes a session of the GasEscrow ${subject.gasEscrow}; the DisputeManager uses ${deployment.gasEscrow}.`);
    }
    const channel = soleEvidence(pkg, "channel");
    if (!channel) throw new PackageMismatchError(`${file} carries no channel evidence; a session case needs the channel and its recorded close.`);
    const challenged = evidenceOfKind(pkg, "receipt").find((item) => item.content.receipt.receipt.seq === subject.seq);
    if (!challenged) throw new PackageMismatchError(`${file} carries no receipt with seq ${subject.seq}, the step it disputes.`);
    await assertNextCaseId(publicClient, deployment.disputeManager, pkg, 2, subject.sessionId);
    const recorded = await currentClosingState(publicClient, deployment.gasEscrow, subject.sessionId, deployment.deploymentBlock);
    if (!sameClosing(recorded, channel.content.closing)) {
      throw new PackageMismatchError(
        `${file} carries the close with ticket seq ${channel.content.closing.seq}, but the recorded close is now seq ${recorded.seq}; rebuild the package.`,
      );
    }
    const { receipt, ticket, merkleProof } = challenged.content;
    // What the case can move is what the chain prices the bond on: the recorded amount, at most the deposit.
    const atStake = recorded.amount < recorded.deposit ? recorded.amount : recorded.deposit;
    await confirmBond(values, publicClient, deployment.disputeManager, channel.content.ref.terms.asset, atStake, pkg.lane, `session ${subject.sessionId} (the receipt disputed charged ${assetAmount(receipt.receipt.metering.amount, channel.content.ref.terms.asset)})`);
    opened = await transact("DisputeManager.openSessionCase", () =>
      openSessionCase({
        ...common,
        ref: channel.content.ref,
        recorded,
        receiptHash: sessionReceiptHash(receipt.receipt),
        ticketHash: paymentTicketHash(ticket.ticket),
        proof: merkleProof,
      }),
    );
  }
  const stored = await readStoredCase(publicClient, deployment.disputeManager, opened.caseId);
  out.lines.push(
    `Opened case ${opened.caseId} disputing ${packageSummary(pkg)} at lane ${pkg.lane}, posting a bond of ${assetAmount(opened.bond, stored.asset)} (gas ${opened.gasUsed}); the respondent may contest until ${formatDate(BigInt(stored.respondBy))}.`,
  );
  Object.assign(out.result, {
    caseId: opened.caseId,
    kind: subject.kind,
    lane: pkg.lane,
    packageHash: hash,
    bond: opened.bond.toString(),
    asset: stored.asset,
    respondBy: stored.respondBy.toString(),
    deadline: stored.deadline.toString(),
    transactionHash: opened.hash,
    gasUsed: Number(opened.gasUsed),
  });
}

async function assertNextCaseId(publicClient: PublicClient, disputeManager: Address, pkg: ChallengePackage, kind: 1 | 2, subjectId: Hex): Promise<void> {
  const next = await nextCaseId(publicClient, disputeManager, kind, subjectId);
  if (next !== pkg.caseId) {
    throw new StaleCaseIdError(
      `The package names case ${pkg.caseId}, but the next case of ${packageSummary(pkg)} is ${next} (a case was opened since it was built); rebuild it.`,
    );
  }
}

/*//////////////////////////////////////////////////////////////
                          FORMATTING HELPERS
//////////////////////////////////////////////////////////////*/

/** An amount of the bond token with its unit: "5000 LGAS". */
function tokens(amount: bigint, symbol: string): string {
  return formatAmount(amount, { symbol, decimals: 18 });
}

/** An amount of a case's asset: ETH in ether, a token in base units with its address. */
/**
 * A bond above the value at stake needs --yes (issue 28 item 9): the challenger can lose more than the case can
 * ever win it. One sentence naming both, before anything is approved or sent.
 */
async function confirmBond(values: Values, publicClient: PublicClient, disputeManager: Address, asset: Address, value: bigint, lane: number, what: string): Promise<void> {
  const bond = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "bondFor", args: [asset, value, lane] });
  if (bond > value && values.yes !== true) {
    throw new UsageError(
      `The bond for this case is ${assetAmount(bond, asset)}, more than the ${assetAmount(value, asset)} at stake in ${what}: losing costs more than winning can return. Run again with --yes to post it anyway; nothing was sent.`,
    );
  }
}

function assetAmount(amount: bigint, asset: Address): string {
  return BigInt(asset) === 0n ? formatAmountWithBase(amount, ETH_UNIT) : `${amount} base units of ${asset}`;
}

async function nowOnChain(publicClient: PublicClient): Promise<bigint> {
  return (await publicClient.getBlock()).timestamp;
}

/*//////////////////////////////////////////////////////////////
                          RESPOND AND EXPIRE
//////////////////////////////////////////////////////////////*/

async function runRespond(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  // Checked here as the contract checks them, so that no token approval is spent on a call bound to revert.
  if (c.statusName !== "open") throw new DisputeTransactionError(`Case ${caseId} is ${c.statusName}; only an open case can be contested.`);
  if (!isAddressEqual(account.address, c.respondent)) {
    throw new DisputeTransactionError(`Only case ${caseId}'s respondent ${c.respondent} can contest it; the acting key is ${account.address}.`);
  }
  if (c.respondentBond !== 0n) throw new DisputeTransactionError(`Case ${caseId} is already contested (respondent bond ${c.respondentBond}).`);
  const now = await nowOnChain(publicClient);
  if (now >= BigInt(c.respondBy)) throw new DisputeTransactionError(`Case ${caseId}'s respond window closed at ${formatDate(BigInt(c.respondBy))}; it can no longer be contested.`);
  const bond = c.challengerBond;
  const value = await bondValue(wallet!, publicClient, c.asset, deployment.disputeManager, bond);
  const { hash, receipt } = await write("DisputeManager.respond", wallet!, publicClient, { address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "respond", args: [caseId], value });
  const [contested] = parseEventLogs({ abi: disputeManagerAbi, eventName: "CaseContested", logs: receipt.logs });
  if (!contested) throw new DisputeTransactionError(`Transaction ${hash} contested no case.`);
  out.lines.push(
    `Contested case ${caseId} as ${contested.args.respondent}, posting a bond of ${assetAmount(contested.args.bond, c.asset)} (gas ${receipt.gasUsed}); the panel's randomness is requested: \`ioi case draw --case ${caseId}\` draws it.`,
  );
  Object.assign(out.result, { caseId, respondent: contested.args.respondent, bond: contested.args.bond.toString(), asset: c.asset, transactionHash: hash, gasUsed: Number(receipt.gasUsed) });
}

async function runExpire(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  const expirable = c.statusName === "open" || c.statusName === "deliberating" || c.statusName === "slow_path";
  if (!expirable) throw new CaseStateError(`Case ${caseId} is ${c.statusName}; only an open, deliberating or slow-path case can expire.`);
  const now = await nowOnChain(publicClient);
  if (now <= BigInt(c.deadline)) {
    throw new CaseStateError(`Case ${caseId} (${c.statusName}) has until ${formatDate(BigInt(c.deadline))} (${formatRelative(BigInt(c.deadline), now)}); it cannot expire before.`);
  }
  const recorded = await recordedStateOf(publicClient, deployment, caseId);
  const { hash, receipt } = await write("DisputeManager.expire", wallet!, publicClient, { address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "expire", args: [caseId, recorded] });
  const logs = parseEventLogs({ abi: disputeManagerAbi, logs: receipt.logs });
  const base = { caseId, transactionHash: hash, gasUsed: Number(receipt.gasUsed) };
  const slow = logs.find((log) => log.eventName === "CaseToSlowPath");
  if (slow && slow.eventName === "CaseToSlowPath") {
    out.lines.push(`Case ${caseId} missed its deadline: moved to governance's slow path until ${formatDate(BigInt(slow.args.deadline))} (gas ${receipt.gasUsed}).`);
    Object.assign(out.result, { ...base, outcome: "slow_path", deadline: slow.args.deadline.toString() });
    return;
  }
  const expired = logs.find((log) => log.eventName === "CaseExpired");
  const resolved = logs.find((log) => log.eventName === "CaseResolved");
  if (!expired || expired.eventName !== "CaseExpired" || !resolved || resolved.eventName !== "CaseResolved") {
    throw new DisputeTransactionError(`Transaction ${hash} expired no case.`);
  }
  const r = resolved.args;
  out.lines.push(
    expired.args.verdictStood
      ? `Case ${caseId} expired on the slow path: the latest panel verdict stands — refunded ${assetAmount(r.refunded, c.asset)}, slashed ${r.slashed} bond-token units, ${assetAmount(r.toChallenger, c.asset)} to the challenger, ${assetAmount(r.toRespondent, c.asset)} to the respondent (gas ${receipt.gasUsed}).`
      : `Case ${caseId} expired on the slow path with no verdict ever reached: the subject ends as it would without a dispute (refunded ${assetAmount(r.refunded, c.asset)}), no slash, both bonds returned (gas ${receipt.gasUsed}).`,
  );
  Object.assign(out.result, {
    ...base,
    outcome: "expired",
    verdictStood: expired.args.verdictStood,
    refunded: r.refunded.toString(),
    slashed: r.slashed.toString(),
    toChallenger: r.toChallenger.toString(),
    toRespondent: r.toRespondent.toString(),
  });
}

/*//////////////////////////////////////////////////////////////
                                 CASE
//////////////////////////////////////////////////////////////*/

type RoundView = { round: number; panel: Address[]; signers: Address[]; verdict: number; drawTicket: bigint; appellant: Address };

/** Every round so far: its panel (as drawn) and which members signed its verdict. */
async function roundsOf(publicClient: PublicClient, disputeManager: Address, caseId: Hex, upTo: number): Promise<RoundView[]> {
  const rounds: RoundView[] = [];
  for (let round = 0; round <= upTo; round++) {
    const r = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "roundOf", args: [caseId, round] });
    const panel = [...(await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "panelOf", args: [caseId, round] }))].map((a) => getAddress(a));
    // The mask follows the stored (drawn) order; both lists are shown ascending, as `case draw` shows a panel.
    const ascending = (list: Address[]) => [...list].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
    const signers = ascending(panel.filter((_, i) => (r.signedMask >> i) & 1));
    rounds.push({ round, panel: ascending(panel), signers, verdict: r.verdict, drawTicket: r.drawTicket, appellant: getAddress(r.appellant) });
  }
  return rounds;
}

async function runCaseShow(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const { publicClient, deployment } = await disputeClients(values);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  const now = await nowOnChain(publicClient);
  const rounds = await roundsOf(publicClient, deployment.disputeManager, caseId, c.round);
  const current = rounds[c.round]!;
  const members = [...new Set(rounds.flatMap((r) => r.panel))];
  const claimable: Record<string, string> = {};
  for (const member of members) {
    const amount = await publicClient.readContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "claimable", args: [c.asset, member] });
    if (amount > 0n) claimable[member] = amount.toString();
  }
  const deadline = BigInt(c.deadline);
  const appealWindowEnds = c.statusName === "decided" ? deadline : null;
  out.lines.push(...caseLines(caseId, c));
  out.lines.push(`  round ${c.round}; ${c.statusName === "open" ? `respond by ${formatDate(BigInt(c.respondBy))}, ` : ""}deadline ${formatDate(deadline)} (${formatRelative(deadline, now)})`);
  for (const r of rounds) {
    const panel = r.panel.length ? r.panel.join(", ") : r.drawTicket ? `not drawn yet (randomness from block ${r.drawTicket})` : "not drawn yet";
    out.lines.push(`  round ${r.round} panel: ${panel}`);
    if (r.verdict !== 0) out.lines.push(`  round ${r.round} verdict ${VERDICT_NAMES[r.verdict] ?? r.verdict}, signed by ${r.signers.join(", ")}`);
  }
  if (appealWindowEnds !== null) out.lines.push(`  appeal window ends ${formatDate(appealWindowEnds)} (${formatRelative(appealWindowEnds, now)}); then \`ioi case finalize\``);
  for (const [who, amount] of Object.entries(claimable)) out.lines.push(`  claimable by ${who}: ${assetAmount(BigInt(amount), c.asset)}`);
  Object.assign(out.result, {
    ...caseToJson(caseId, c),
    round: c.round,
    respondBy: c.respondBy.toString(),
    panel: current.panel,
    signers: current.signers,
    rounds: rounds.map((r) => ({ round: r.round, panel: r.panel, signers: r.signers, verdict: r.verdict, drawTicket: r.drawTicket.toString() })),
    appealWindowEnds: appealWindowEnds === null ? null : formatDate(appealWindowEnds),
    appealSecondsLeft: appealWindowEnds === null ? null : (appealWindowEnds > now ? appealWindowEnds - now : 0n).toString(),
    claimableFees: claimable,
  });
}

function subjectOf(c: StoredCase): string {
  return c.kindName === "gig" ? `gig ${BigInt(c.subjectId)}` : `session ${c.subjectId}`;
}

function caseLines(caseId: Hex, c: StoredCase): string[] {
  return [
    `case ${caseId}: ${c.kindName} dispute of ${subjectOf(c)}, ${c.statusName} at lane ${c.lane}, round ${c.round}`,
    `  challenger ${c.challenger} (bond ${assetAmount(c.challengerBond, c.asset)}), respondent ${c.respondent} (bond ${assetAmount(c.respondentBond, c.asset)})`,
    `  value ${assetAmount(c.value, c.asset)}, package ${c.packageHash}`,
  ];
}

function caseToJson(caseId: Hex, c: StoredCase): Record<string, unknown> {
  return {
    caseId,
    kind: c.kindName,
    subjectId: c.subjectId,
    ...(c.kindName === "gig" ? { gigId: BigInt(c.subjectId).toString() } : { sessionId: c.subjectId }),
    status: c.statusName,
    lane: c.lane,
    deadline: c.deadline.toString(),
    challenger: c.challenger,
    respondent: c.respondent,
    asset: c.asset,
    value: c.value.toString(),
    challengerBond: c.challengerBond.toString(),
    respondentBond: c.respondentBond.toString(),
    packageHash: c.packageHash,
  };
}

async function runCaseDraw(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const account = loadAccount(values);
  const { publicClient, wallet, chainId, deployment } = await disputeClients(values, account);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  if (c.statusName !== "open") throw new CaseStateError(`Case ${caseId} is ${c.statusName}; only an open case has a panel to draw.`);
  const dm = deployment.disputeManager;
  const draw = () => transact("DisputeManager.drawPanel", () => drawPanel({ wallet: wallet!, publicClient, disputeManager: dm, caseId }));
  let ticket = (await publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "roundOf", args: [caseId, c.round] })).drawTicket;
  const gas: number[] = [];
  if (ticket === 0n) {
    const now = await nowOnChain(publicClient);
    if (now < BigInt(c.respondBy)) {
      throw new CaseStateError(`Case ${caseId} is uncontested and its respond window runs until ${formatDate(BigInt(c.respondBy))} (${formatRelative(BigInt(c.respondBy), now)}); its panel can be requested after that.`);
    }
    const requested = await draw();
    gas.push(Number(requested.gasUsed));
    if (requested.outcome !== "requested") throw new DisputeTransactionError(`Requesting case ${caseId}'s panel did not request randomness.`);
    ticket = requested.ticket;
    out.lines.push(`Requested the randomness of case ${caseId}'s round ${requested.round} panel from block ${ticket} (gas ${requested.gasUsed}).`);
  }
  const wait = await blocksUntilReady(publicClient, ticket);
  if (wait > 0n) {
    if (chainId !== DEVNET_CHAIN_ID) {
      out.lines.push(`The panel's randomness comes from block ${ticket}: wait ${wait} more block${wait === 1n ? "" : "s"}, then run \`ioi case draw --case ${caseId}\` again (within 256 blocks of it).`);
      Object.assign(out.result, { caseId, outcome: "requested", ticket: ticket.toString(), blocksToWait: wait.toString() });
      return;
    }
    await publicClient.request({ method: "hardhat_mine" as never, params: [toHex(wait)] as never });
    out.lines.push(`Mined ${wait} block${wait === 1n ? "" : "s"} on the devnet to reach block ${ticket}.`);
  }
  const drawn = await draw();
  gas.push(Number(drawn.gasUsed));
  if (drawn.outcome === "drawn") {
    out.lines.push(`Drew case ${caseId}'s round ${drawn.round} panel of ${drawn.panel.length}: ${drawn.panel.join(", ")}; verdict due by ${formatDate(drawn.deadline)} (gas ${drawn.gasUsed}).`);
    Object.assign(out.result, { caseId, outcome: "drawn", round: drawn.round, panel: drawn.panel, deadline: drawn.deadline.toString(), gasUsed: gas });
  } else if (drawn.outcome === "slow_path") {
    out.lines.push(`Too few eligible arbitrators for case ${caseId}'s round ${drawn.round}: it moved to governance's slow path until ${formatDate(drawn.deadline)} (gas ${drawn.gasUsed}).`);
    Object.assign(out.result, { caseId, outcome: "slow_path", round: drawn.round, deadline: drawn.deadline.toString(), gasUsed: gas });
  } else {
    out.lines.push(`Block ${ticket} is older than 256 blocks, so its hash is gone: requested new randomness from block ${drawn.ticket}; run \`ioi case draw --case ${caseId}\` again.`);
    Object.assign(out.result, { caseId, outcome: "requested", ticket: drawn.ticket.toString(), gasUsed: gas });
  }
}

type SignatureFile = { caseId: Hex; signer: Address; resolution: ResolutionMessage; signature: Hex };

/** A signature file as `ioi arbitrate --sign-only` writes it, validated field by field. */
function parseSignatureFile(file: string, option: string): SignatureFile {
  const bytes = readInput(option, file, MAX_SIGNATURE_FILE_BYTES);
  const bad = (what: string) => new SignatureFileError(`--${option} ${file}: ${what}`);
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw bad("is not JSON; pass a file written by `ioi arbitrate --sign-only --out FILE`.");
  }
  const v = value as Record<string, unknown>;
  const r = v?.resolution as Record<string, unknown> | undefined;
  const isHash = (x: unknown): x is Hex => typeof x === "string" && isHex(x) && x.length === 66;
  const isDec = (x: unknown): x is string => typeof x === "string" && /^(0|[1-9][0-9]{0,38})$/.test(x);
  if (typeof v !== "object" || v === null) throw bad("must hold a JSON object {caseId, signer, resolution, signature}.");
  if (!isHash(v.caseId)) throw bad("caseId must be 0x and 64 hex digits.");
  if (typeof v.signer !== "string" || !isAddress(v.signer)) throw bad("signer must be an address.");
  if (typeof v.signature !== "string" || !isHex(v.signature) || v.signature.length !== 132) throw bad("signature must be a 65-byte hex signature.");
  if (typeof r !== "object" || r === null) throw bad("resolution must be the signed message {caseId, verdict, refund, slash, resolutionHash}.");
  if (!isHash(r.caseId) || !isHash(r.resolutionHash)) throw bad("resolution.caseId and resolution.resolutionHash must be 0x and 64 hex digits.");
  if (![1, 2, 3, 4].includes(r.verdict as number)) throw bad("resolution.verdict must be 1, 2, 3 or 4.");
  if (!isDec(r.refund) || !isDec(r.slash)) throw bad("resolution.refund and resolution.slash must be decimal strings of base units.");
  if (r.caseId.toLowerCase() !== v.caseId.toLowerCase()) throw bad(`signs case ${r.caseId}, but names case ${v.caseId}.`);
  return {
    caseId: v.caseId.toLowerCase() as Hex,
    signer: getAddress(v.signer),
    signature: v.signature,
    resolution: {
      caseId: r.caseId.toLowerCase() as Hex,
      verdict: r.verdict as ResolutionMessage["verdict"],
      refund: BigInt(r.refund),
      slash: BigInt(r.slash),
      resolutionHash: r.resolutionHash.toLowerCase() as Hex,
    },
  };
}

const sameMessage = (a: ResolutionMessage, b: ResolutionMessage): boolean =>
  a.caseId === b.caseId && a.verdict === b.verdict && a.refund === b.refund && a.slash === b.slash && a.resolutionHash.toLowerCase() === b.resolutionHash.toLowerCase();

async function runCaseSubmit(values: Values, out: Out): Promise<void> {
  const files = (values.signature as unknown as string[] | undefined) ?? [];
  if (files.length === 0) throw new UsageError("--signature is required: a signature file from `ioi arbitrate --sign-only` (repeat it per signer).");
  const signed = files.map((file) => parseSignatureFile(file, "signature"));
  const message = signed[0]!.resolution;
  if (values.resolution !== undefined) {
    const file = need(values, "resolution", "the resolution document");
    let fromDocument: ResolutionMessage;
    try {
      fromDocument = resolutionMessage(resolutionFromJson(JSON.parse(readInput("resolution", file, MAX_DOCUMENT_BYTES).toString("utf8"))));
    } catch (cause) {
      if (cause instanceof BaseError) throw cause;
      throw new UsageError(`--resolution ${file} is not JSON; pass the file \`ioi arbitrate --out\` wrote.`, { cause });
    }
    if (!sameMessage(fromDocument, message)) throw new SignatureFileError(`--resolution ${file} is not the resolution the signatures sign (resolution hash ${message.resolutionHash}).`);
  }
  for (const [i, s] of signed.entries()) {
    if (!sameMessage(s.resolution, message)) {
      throw new SignatureFileError(`--signature ${files[i]} signs another resolution than ${files[0]} (resolution hash ${s.resolution.resolutionHash} vs ${message.resolutionHash}).`);
    }
  }
  const seen = new Set<string>();
  for (const [i, s] of signed.entries()) {
    if (seen.has(s.signer)) throw new SignatureFileError(`--signature ${files[i]} repeats signer ${s.signer}; each panel member signs once.`);
    seen.add(s.signer);
  }
  const account = loadAccount(values);
  const { publicClient, wallet, chainId, deployment } = await disputeClients(values, account);
  const caseId = message.caseId;
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  if (c.statusName !== "deliberating") throw new CaseStateError(`Case ${caseId} is ${c.statusName}; a verdict can be submitted only while its panel deliberates.`);
  const domain = disputeManagerDomain(BigInt(chainId), deployment.disputeManager);
  for (const [i, s] of signed.entries()) {
    try {
      await verifyResolutionSignature(domain, message, s.signature, s.signer);
    } catch (cause) {
      throw new SignatureFileError(`--signature ${files[i]}: the signature does not recover to ${s.signer} for this resolution on this DisputeManager.`, { cause });
    }
  }
  const { round, panel } = await currentPanel(publicClient, deployment.disputeManager, caseId);
  for (const s of signed) {
    if (!panel.some((m) => isAddressEqual(m, s.signer))) throw new NotOnPanelError(`${s.signer} is not on case ${caseId}'s round ${round} panel (${panel.join(", ")}).`);
  }
  const needed = Math.floor((2 * panel.length + 2) / 3);
  if (signed.length < needed) {
    throw new SignatureFileError(`${signed.length} signature${signed.length === 1 ? "" : "s"} given; case ${caseId}'s panel of ${panel.length} needs a supermajority of ${needed}.`);
  }
  const submitted = await submitSigned(wallet!, publicClient, deployment, message, signed);
  reportSubmitted(out, caseId, submitted);
}

function submitSigned(wallet: Wallet, publicClient: PublicClient, deployment: Deployment, message: ResolutionMessage, signatures: { signer: Address; signature: Hex }[]) {
  return transact("DisputeManager.submitVerdict", () => submitVerdict({ wallet, publicClient, deployment, message, signatures }));
}

function reportSubmitted(out: Out, caseId: Hex, v: SubmittedVerdict): void {
  out.lines.push(
    v.outcome === "decided"
      ? `Submitted case ${caseId}'s round ${v.round} verdict ${VERDICT_NAMES[v.verdict] ?? v.verdict} (refund ${v.refund}, slash ${v.slash}); the appeal window ends ${formatDate(v.deadline)}, then \`ioi case finalize\` (gas ${v.gasUsed}).`
      : `Submitted: the verdict is undecidable, so case ${caseId} moved to governance's slow path until ${formatDate(v.deadline)} (gas ${v.gasUsed}).`,
  );
  out.result.submitted = {
    outcome: v.outcome,
    round: v.round,
    verdict: v.verdict,
    refund: v.refund.toString(),
    slash: v.slash.toString(),
    signedMask: v.signedMask,
    ...(v.outcome === "decided" ? { appealWindowEnds: formatDate(v.deadline) } : { slowPathDeadline: formatDate(v.deadline) }),
    transactionHash: v.hash,
    gasUsed: Number(v.gasUsed),
  };
}

async function runCaseAppeal(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  if (c.statusName !== "decided") throw new CaseStateError(`Case ${caseId} is ${c.statusName}; only a decided case inside its appeal window can be appealed.`);
  if (!isAddressEqual(account.address, c.challenger) && !isAddressEqual(account.address, c.respondent)) {
    throw new DisputeTransactionError(`${account.address} is neither the challenger nor the respondent of case ${caseId}; only a party can appeal.`);
  }
  const now = await nowOnChain(publicClient);
  if (now >= BigInt(c.deadline)) throw new CaseStateError(`Case ${caseId}'s appeal window closed at ${formatDate(BigInt(c.deadline))}; finalise it instead.`);
  const params = await publicClient.readContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "caseParams", args: [caseId] });
  if (c.round >= params.maxAppeals) throw new CaseStateError(`Case ${caseId} was already appealed ${c.round} time${c.round === 1 ? "" : "s"}, the most the DisputeManager allows.`);
  const appealed = await transact("DisputeManager.appeal", () => appealCase({ wallet: wallet!, publicClient, disputeManager: deployment.disputeManager, caseId }));
  out.lines.push(
    appealed.status === "open"
      ? `Appealed case ${caseId} to round ${appealed.round}, posting a bond of ${assetAmount(appealed.bond, c.asset)}; a fresh panel's randomness is requested: \`ioi case draw --case ${caseId}\` (gas ${appealed.gasUsed}).`
      : `Appealed case ${caseId} a second time, posting a bond of ${assetAmount(appealed.bond, c.asset)}: it is on governance's slow path until ${formatDate(appealed.deadline)} (gas ${appealed.gasUsed}).`,
  );
  Object.assign(out.result, {
    caseId,
    by: isAddressEqual(account.address, c.challenger) ? "challenger" : "respondent",
    round: appealed.round,
    bond: appealed.bond.toString(),
    status: appealed.status,
    deadline: appealed.deadline.toString(),
    transactionHash: appealed.hash,
    gasUsed: Number(appealed.gasUsed),
  });
}

async function runCaseFinalize(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  if (c.statusName !== "decided") throw new CaseStateError(`Case ${caseId} is ${c.statusName}; only a decided case can be finalised.`);
  const now = await nowOnChain(publicClient);
  if (now <= BigInt(c.deadline)) {
    throw new CaseStateError(`Case ${caseId}'s appeal window runs until ${formatDate(BigInt(c.deadline))} (${formatRelative(BigInt(c.deadline), now)}); it can be finalised after that.`);
  }
  const f = await transact("DisputeManager.finalize", () => finalizeCase({ wallet: wallet!, publicClient, deployment, caseId }));
  // A slash of the respondent's SLA bond moves bond tokens in the registry: its Slashed events say what was burnt.
  const { symbol } = await bondTokenOf(publicClient, deployment.registry);
  const slashLogs = parseEventLogs({ abi: providerRegistryAbi, eventName: "Slashed", logs: (await publicClient.getTransactionReceipt({ hash: f.hash })).logs });
  const slashBurned = slashLogs.reduce((sum, log) => sum + log.args.burned, 0n);
  out.lines.push(
    `Finalised case ${caseId}: ${VERDICT_NAMES[f.verdict] ?? f.verdict}, refunded ${assetAmount(f.refunded, c.asset)}, slashed ${tokens(f.slashed, symbol)} of bond (${tokens(slashBurned, symbol)} of it burnt), ${assetAmount(f.toChallenger, c.asset)} to the challenger, ${assetAmount(f.toRespondent, c.asset)} to the respondent, ${assetAmount(f.burned, c.asset)} burnt to ${BURN_ADDRESS} (gas ${f.gasUsed}).`,
  );
  for (const fee of f.fees) out.lines.push(`  fee ${assetAmount(fee.amount, c.asset)} credited to ${fee.arbitrator} (\`ioi arbitrator claim --asset ${BigInt(c.asset) === 0n ? "eth" : c.asset}\`)`);
  Object.assign(out.result, {
    caseId,
    verdict: f.verdict,
    refunded: f.refunded.toString(),
    slashed: f.slashed.toString(),
    toChallenger: f.toChallenger.toString(),
    toRespondent: f.toRespondent.toString(),
    burned: f.burned.toString(),
    slashBurned: slashBurned.toString(),
    arbitrationFees: f.arbitrationFees.toString(),
    fees: Object.fromEntries(f.fees.map((fee) => [fee.arbitrator, fee.amount.toString()])),
    transactionHash: f.hash,
    gasUsed: Number(f.gasUsed),
  });
}

/*//////////////////////////////////////////////////////////////
                              ARBITRATOR
//////////////////////////////////////////////////////////////*/

/** The bond token (LaborGas on our deployments) and its symbol. */
async function bondTokenOf(publicClient: PublicClient, registry: Address): Promise<{ token: Address; symbol: string }> {
  const token = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondToken" });
  const symbol = await publicClient.readContract({ address: token, abi: erc20Abi, functionName: "symbol" }).catch(() => "bond tokens");
  return { token: getAddress(token), symbol };
}

function tokenAmountOf(values: Values, what: string): bigint {
  const text = need(values, "amount", what);
  if (!/^(0|[1-9][0-9]*)(\.[0-9]{1,18})?$/.test(text)) {
    throw new UsageError(`--amount must be a decimal number of bond tokens with at most 18 decimals (e.g. 5000 or 0.5); received "${text}".`);
  }
  const amount = parseEther(text);
  if (amount === 0n) throw new UsageError("--amount must be more than zero.");
  return amount;
}

async function runArbitratorRegister(values: Values, out: Out): Promise<void> {
  const didHash = hashOption(values, "did-hash", "keccak-256 of the arbitrator's DID document");
  const mldsaHash = hashOption(values, "mldsa-hash", "keccak-256 of its ML-DSA public key");
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const runtime = judgeRuntimeHash();
  const { hash, receipt } = await write("ProviderRegistry.registerArbitrator", wallet!, publicClient, { address: deployment.registry, abi: providerRegistryAbi, functionName: "registerArbitrator", args: [runtime, didHash, mldsaHash] });
  out.lines.push(`Registered ${account.address} as an arbitrator pinned to judge runtime ${runtime} (gas ${receipt.gasUsed}); stake with \`ioi arbitrator stake\`, then governance admits it through the timelock.`);
  Object.assign(out.result, { arbitrator: account.address, judgeRuntimeHash: runtime, didHash, mldsaHash, transactionHash: hash, gasUsed: Number(receipt.gasUsed) });
}

async function runArbitratorRepin(values: Values, out: Out): Promise<void> {
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const record = await publicClient.readContract({ address: deployment.registry, abi: providerRegistryAbi, functionName: "arbitratorOf", args: [account.address] });
  if (record.didHash === zeroHash) throw new UsageError(`${account.address} is not a registered arbitrator; run \`ioi arbitrator register\` first.`);
  const didHash = values["did-hash"] === undefined ? record.didHash : hashOption(values, "did-hash", "keccak-256 of the DID document");
  const mldsaHash = values["mldsa-hash"] === undefined ? record.mldsaPublicKeyHash : hashOption(values, "mldsa-hash", "keccak-256 of the ML-DSA public key");
  const runtime = judgeRuntimeHash();
  // A no-op transaction is refused (issue 28 item 9): the same runtime and the same hashes change nothing.
  if (record.judgeRuntimeHash === runtime && didHash === record.didHash && mldsaHash === record.mldsaPublicKeyHash) {
    throw new UsageError(`${account.address} is pinned to this build's judge runtime ${runtime} already, with the same DID and ML-DSA hashes; nothing was sent.`);
  }
  const { hash, receipt } = await write("ProviderRegistry.updateArbitrator", wallet!, publicClient, { address: deployment.registry, abi: providerRegistryAbi, functionName: "updateArbitrator", args: [runtime, didHash, mldsaHash] });
  out.lines.push(`Re-pinned ${account.address} from judge runtime ${record.judgeRuntimeHash} to ${runtime} (gas ${receipt.gasUsed}).`);
  Object.assign(out.result, { arbitrator: account.address, previousJudgeRuntimeHash: record.judgeRuntimeHash, judgeRuntimeHash: runtime, transactionHash: hash, gasUsed: Number(receipt.gasUsed) });
}

async function runArbitratorStake(values: Values, out: Out): Promise<void> {
  const amount = tokenAmountOf(values, "bond tokens to stake");
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const { token, symbol } = await bondTokenOf(publicClient, deployment.registry);
  const balance = await publicClient.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [account.address] });
  if (balance < amount) throw new UsageError(`${account.address} holds ${tokens(balance, symbol)}, less than the ${tokens(amount, symbol)} to stake.`);
  await write("ERC-20 approve", wallet!, publicClient, { address: token, abi: erc20Abi, functionName: "approve", args: [deployment.registry, amount] });
  const { hash, receipt } = await write("ProviderRegistry.bond", wallet!, publicClient, { address: deployment.registry, abi: providerRegistryAbi, functionName: "bond", args: [ARBITRATOR_ROLE, amount] });
  const bond = await publicClient.readContract({ address: deployment.registry, abi: providerRegistryAbi, functionName: "bondOf", args: [ARBITRATOR_ROLE, account.address] });
  out.lines.push(`Staked ${tokens(amount, symbol)} as arbitrator ${account.address}; active stake now ${tokens(bond.active, symbol)} (gas ${receipt.gasUsed}).`);
  Object.assign(out.result, { arbitrator: account.address, staked: amount.toString(), active: bond.active.toString(), token, transactionHash: hash, gasUsed: Number(receipt.gasUsed) });
}

async function runArbitratorUnstake(values: Values, out: Out): Promise<void> {
  const amount = tokenAmountOf(values, "bond tokens to unbond");
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const { symbol } = await bondTokenOf(publicClient, deployment.registry);
  const locks = await publicClient.readContract({ address: deployment.registry, abi: providerRegistryAbi, functionName: "locksOf", args: [ARBITRATOR_ROLE, account.address] });
  if (locks > 0n) throw new UsageError(`${account.address} sits on ${locks} panel${locks === 1n ? "" : "s"} of live cases; its stake cannot unbond until they end.`);
  const bond = await publicClient.readContract({ address: deployment.registry, abi: providerRegistryAbi, functionName: "bondOf", args: [ARBITRATOR_ROLE, account.address] });
  if (bond.active < amount) throw new UsageError(`${account.address} has ${tokens(bond.active, symbol)} active stake, less than the ${tokens(amount, symbol)} to unbond.`);
  const { hash, receipt } = await write("ProviderRegistry.requestUnbond", wallet!, publicClient, { address: deployment.registry, abi: providerRegistryAbi, functionName: "requestUnbond", args: [ARBITRATOR_ROLE, amount] });
  const after = await publicClient.readContract({ address: deployment.registry, abi: providerRegistryAbi, functionName: "bondOf", args: [ARBITRATOR_ROLE, account.address] });
  out.lines.push(`Unbonding ${tokens(amount, symbol)}: ${tokens(after.pending, symbol)} withdrawable from ${formatDate(BigInt(after.unlockAt))} (gas ${receipt.gasUsed}).`);
  Object.assign(out.result, { arbitrator: account.address, unbonding: amount.toString(), pending: after.pending.toString(), unlockAt: after.unlockAt.toString(), transactionHash: hash, gasUsed: Number(receipt.gasUsed) });
}

async function runArbitratorWithdraw(values: Values, out: Out): Promise<void> {
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const { symbol } = await bondTokenOf(publicClient, deployment.registry);
  const bond = await publicClient.readContract({ address: deployment.registry, abi: providerRegistryAbi, functionName: "bondOf", args: [ARBITRATOR_ROLE, account.address] });
  if (bond.pending === 0n) throw new UsageError(`${account.address} has nothing unbonding; run \`ioi arbitrator unstake\` first.`);
  const now = await nowOnChain(publicClient);
  if (now < BigInt(bond.unlockAt)) throw new UsageError(`${tokens(bond.pending, symbol)} unbonds at ${formatDate(BigInt(bond.unlockAt))} (${formatRelative(BigInt(bond.unlockAt), now)}); withdraw after that.`);
  const { hash, receipt } = await write("ProviderRegistry.withdraw", wallet!, publicClient, { address: deployment.registry, abi: providerRegistryAbi, functionName: "withdraw", args: [ARBITRATOR_ROLE] });
  out.lines.push(`Withdrew ${tokens(bond.pending, symbol)} of unbonded stake to ${account.address} (gas ${receipt.gasUsed}).`);
  Object.assign(out.result, { arbitrator: account.address, withdrawn: bond.pending.toString(), transactionHash: hash, gasUsed: Number(receipt.gasUsed) });
}

function arbitratorAddress(values: Values): Address {
  if (values.address === undefined) return loadAccount(values).address;
  const value = need(values, "address", "the arbitrator's address");
  if (!isAddress(value)) throw new UsageError(`--address must be an address (the arbitrator); received "${value}".`);
  return getAddress(value);
}

async function runArbitratorShow(values: Values, out: Out): Promise<void> {
  const who = arbitratorAddress(values);
  const { publicClient, deployment } = await disputeClients(values);
  const reg = deployment.registry;
  const read = <T>(functionName: string, args: readonly unknown[]) =>
    publicClient.readContract({ address: reg, abi: providerRegistryAbi, functionName: functionName as never, args: args as never }) as Promise<T>;
  const record = await read<{ judgeRuntimeHash: Hex; didHash: Hex; mldsaPublicKeyHash: Hex }>("arbitratorOf", [who]);
  const registered = record.didHash !== zeroHash;
  const [admitted, active, locks, phase, bond] = await Promise.all([
    read<boolean>("isAdmitted", [who]),
    read<boolean>("isActiveArbitrator", [who]),
    read<bigint>("locksOf", [ARBITRATOR_ROLE, who]),
    read<number>("unbondPhaseOf", [ARBITRATOR_ROLE, who]),
    read<{ active: bigint; pending: bigint; unlockAt: number }>("bondOf", [ARBITRATOR_ROLE, who]),
  ]);
  const params = await publicClient.readContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "params" });
  const { token, symbol } = await bondTokenOf(publicClient, reg);
  const claimEth = await publicClient.readContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "claimable", args: [zeroAddress, who] });
  const claimToken = await publicClient.readContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "claimable", args: [token, who] });
  const runtimeMatches = record.judgeRuntimeHash === params.judgeRuntimeHash;
  const phaseName = UNBOND_PHASES[phase] ?? `phase ${phase}`;
  out.lines.push(
    `arbitrator ${who}: ${registered ? "registered" : "not registered"}, ${admitted ? "admitted" : "not admitted"}, ${active ? "active (drawable)" : "not drawable"}`,
    `  judge runtime ${record.judgeRuntimeHash}${registered ? (runtimeMatches ? " (the DisputeManager's)" : ` — the DisputeManager requires ${params.judgeRuntimeHash}: \`ioi arbitrator repin\``) : ""}`,
    `  stake ${tokens(bond.active, symbol)} active, ${tokens(bond.pending, symbol)} unbonding (${phaseName}${bond.pending > 0n ? `, unlocks ${formatDate(BigInt(bond.unlockAt))}` : ""}), locked by ${locks} live case${locks === 1n ? "" : "s"}`,
    `  claimable fees: ${formatAmount(claimEth, ETH_UNIT)}, ${tokens(claimToken, symbol)}`,
  );
  Object.assign(out.result, {
    arbitrator: who,
    registered,
    admitted,
    active,
    judgeRuntimeHash: record.judgeRuntimeHash,
    runtimeMatches,
    stake: bond.active.toString(),
    pending: bond.pending.toString(),
    unlockAt: bond.unlockAt.toString(),
    unbondPhase: phaseName,
    locks: locks.toString(),
    claimable: { [zeroAddress]: claimEth.toString(), [token]: claimToken.toString() },
  });
}

async function runArbitratorCases(values: Values, out: Out): Promise<void> {
  const who = arbitratorAddress(values);
  const fromOption = values["from-block"] === undefined ? undefined : uint(values, "from-block", "the first block to scan");
  const { publicClient, deployment } = await disputeClients(values);
  const reading = readingOf(values, await publicClient.getChainId());
  const found: { caseId: Hex; round: number; blockNumber: bigint }[] = [];
  await readPaged(
    { fromBlock: fromOption ?? deployment.deploymentBlock ?? 0n, toBlock: await publicClient.getBlockNumber(), maxBlockRange: reading.batchBlocks, retry: reading.retry },
    async (from, to) => {
      const logs = await publicClient.getContractEvents({ address: deployment.disputeManager, abi: disputeManagerAbi, eventName: "PanelDrawn", fromBlock: from, toBlock: to, strict: true });
      for (const log of logs) {
        if (log.args.panel.some((m) => isAddressEqual(m, who))) found.push({ caseId: log.args.caseId, round: log.args.round, blockNumber: log.blockNumber });
      }
      return [];
    },
  );
  const cases = [];
  for (const f of found) {
    const c = await readStoredCase(publicClient, deployment.disputeManager, f.caseId);
    cases.push({ caseId: f.caseId, round: f.round, drawnInBlock: f.blockNumber.toString(), status: c.statusName, currentRound: c.round, deadline: c.deadline.toString() });
  }
  out.lines.push(`${who} sits on ${cases.length} panel${cases.length === 1 ? "" : "s"}:`);
  for (const c of cases) out.lines.push(`  case ${c.caseId} round ${c.round} (drawn in block ${c.drawnInBlock}): ${c.status}, deadline ${formatDate(BigInt(c.deadline))}`);
  Object.assign(out.result, { arbitrator: who, cases });
}

async function runArbitratorClaim(values: Values, out: Out): Promise<void> {
  const raw = need(values, "asset", "the asset to claim: an ERC-20 address or eth");
  if (raw.toLowerCase() !== "eth" && !isAddress(raw)) throw new UsageError(`--asset must be an ERC-20 address or eth; received "${raw}".`);
  const asset = raw.toLowerCase() === "eth" ? zeroAddress : getAddress(raw);
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const due = await publicClient.readContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "claimable", args: [asset, account.address] });
  if (due === 0n) throw new UsageError(`${account.address} has nothing to claim in ${assetName(asset)} on the DisputeManager at ${deployment.disputeManager}.`);
  const claimed = await transact("DisputeManager.claim", () => claimFees({ wallet: wallet!, publicClient, disputeManager: deployment.disputeManager, asset }));
  out.lines.push(`Claimed ${assetAmount(claimed.amount, asset)} to ${account.address} (gas ${claimed.gasUsed}).`);
  Object.assign(out.result, { arbitrator: account.address, asset, amount: claimed.amount.toString(), transactionHash: claimed.hash, gasUsed: Number(claimed.gasUsed) });
}

/*//////////////////////////////////////////////////////////////
                              ARBITRATION
//////////////////////////////////////////////////////////////*/

const VERDICT_NAMES = Object.fromEntries(FINAL_VERDICTS.map((v) => [VERDICT_CODES[v], v])) as Record<number, string>;

/** The Hardhat key of each panel member (accounts 0..39), for --devnet-quorum. */
function devnetKeysOf(panel: readonly Address[]): LocalAccount[] {
  const byAddress = new Map<string, LocalAccount>();
  for (let i = 0; i < DEVNET_ACCOUNTS; i++) {
    const a = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: i });
    byAddress.set(getAddress(a.address), a);
  }
  return panel.map((member) => {
    const key = byAddress.get(getAddress(member));
    if (!key) throw new NotOnPanelError(`Panel member ${member} is not one of the devnet's ${DEVNET_ACCOUNTS} Hardhat accounts, so --devnet-quorum cannot sign for it.`);
    return key;
  });
}

async function runArbitrate(values: Values, out: Out): Promise<void> {
  if (values["verify-upip"] !== undefined) return runVerifyUpip(values, out);
  const caseId = caseIdOf(values);
  const packageFile = need(values, "package", "the case's ChallengePackage (JSON or YAML)");
  const signOnly = Boolean(values["sign-only"]);
  const quorumSize =
    values["devnet-quorum"] === undefined ? undefined : Number(uint(values, "devnet-quorum", "how many members of the drawn panel to run"));
  if (quorumSize !== undefined && (quorumSize < 1 || quorumSize > MAX_PANEL)) {
    throw new UsageError(`--devnet-quorum must be from 1 to ${MAX_PANEL} (the largest panel); received ${quorumSize}.`);
  }
  if (signOnly && values.submit) throw new UsageError("--sign-only and --submit exclude each other: sign-only writes a signature for `ioi case submit`.");
  if (signOnly && quorumSize !== undefined) throw new UsageError("--sign-only signs as the acting key alone; drop --devnet-quorum.");
  // The acting key signs (alone) or sends the quorum's transaction; a devnet quorum without --submit needs none.
  const account = quorumSize === undefined || values.submit ? loadAccount(values) : undefined;
  const outFile = outputPath(values, "out", signOnly ? "the file to write the signature to" : "the file to write the resolution to", signOnly);
  const auditFile = outputPath(values, "audit", "the file to append the audit log to", false);
  const bytes = readInput("package", packageFile, MAX_DOCUMENT_BYTES);
  const parsed = parsePackage(bytes); // refuse a malformed package before reaching for the chain
  if (parsed.caseId.toLowerCase() !== caseId.toLowerCase()) {
    throw new PackageMismatchError(`The package ${packageFile} is for case ${parsed.caseId}, not case ${caseId}; arbitrate each case with its own package.`);
  }

  const { publicClient, wallet, chainId, deployment } = await disputeClients(values, account);
  if (quorumSize !== undefined && chainId !== DEVNET_CHAIN_ID) {
    throw new UsageError(`--devnet-quorum signs with Hardhat's well-known keys and runs only on chain ${DEVNET_CHAIN_ID}; this node is chain ${chainId}.`);
  }
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  if (c.statusName !== "deliberating") {
    const hint = c.statusName === "open" ? "; draw its panel first (`ioi case draw`)" : "";
    throw new CaseStateError(`Case ${caseId} is ${c.statusName}, not deliberating${hint}; only a drawn panel arbitrates it.`);
  }
  const { round, panel } = await currentPanel(publicClient, deployment.disputeManager, caseId);
  const needed = Math.floor((2 * panel.length + 2) / 3);
  let arbitrators: LocalAccount[];
  if (quorumSize === undefined) {
    if (!panel.some((m) => isAddressEqual(m, account!.address))) {
      throw new NotOnPanelError(`${account!.address} is not on case ${caseId}'s round ${round} panel (${panel.join(", ")}); only its members sign.`);
    }
    arbitrators = [account!];
  } else {
    if (quorumSize > panel.length) throw new UsageError(`--devnet-quorum ${quorumSize} exceeds case ${caseId}'s panel of ${panel.length}.`);
    if (values.submit && quorumSize < needed) {
      throw new UsageError(`--devnet-quorum ${quorumSize} is below the supermajority of ${needed} that case ${caseId}'s panel of ${panel.length} needs to submit.`);
    }
    arbitrators = devnetKeysOf(panel).slice(0, quorumSize);
  }

  // Each arbitrator parses the package bytes and reads the chain itself, as independent arbitrators would.
  const runs: ArbitrationRun[] = [];
  let kind: "gig" | "session" = "gig";
  for (const arbitrator of arbitrators) {
    const pkg = parsePackage(bytes);
    const ctx = await loadCaseContext(publicClient, deployment, caseId, pkg);
    kind = ctx.case.kind;
    const run = await arbitrate({ pkg, ctx, actor: `arbitrator:${arbitrator.address}` });
    runs.push(run);
    if (auditFile) writeOutput("audit", auditFile, run.audit.map((entry) => `${JSON.stringify(entry)}\n`).join(""), true);
  }
  const abstained = runs.find((r) => r.state === "abstain");
  if (abstained) {
    throw new ArbitratorAbstainedError(
      `The arbitrator abstains from case ${caseId} (${abstained.resolution.aggregate.reasonCodes.join(", ")}): a fault of its own inputs, not of either party; nothing was signed.`,
    );
  }
  const hashes = [...new Set(runs.map((r) => r.resolutionHash))];
  if (hashes.length !== 1) {
    throw new QuorumDisagreementError(`The ${runs.length} arbitrators reached ${hashes.length} different resolutions (${hashes.join(", ")}); nothing was signed.`);
  }
  const run = runs[0]!;
  const { resolution, message } = run;
  const domain = disputeManagerDomain(BigInt(chainId), deployment.disputeManager);
  const signatures: { signer: Address; signature: Hex }[] = [];
  for (const arbitrator of arbitrators) signatures.push({ signer: getAddress(arbitrator.address), signature: await signResolution(arbitrator, domain, message) });

  const verdict = resolution.aggregate.finalVerdict;
  const reasons = resolution.aggregate.reasonCodes;
  const messageJson = { caseId: message.caseId, verdict: message.verdict, refund: message.refund.toString(), slash: message.slash.toString(), resolutionHash: message.resolutionHash };
  out.lines.push(`Arbitrated case ${caseId} (round ${round}): ${run.state}, verdict ${verdict}${reasons.length ? ` (reason codes ${reasons.join(", ")})` : ""}.`);
  out.lines.push(`  resolution ${run.resolutionHash}: remedy ${message.verdict} (${VERDICT_NAMES[message.verdict]}), refund ${message.refund}, slash ${message.slash}`);
  if (quorumSize !== undefined) out.lines.push(`  ${runs.length} members of the drawn panel ran the case independently and reached this same resolution.`);
  for (const s of signatures) out.lines.push(`  signed by ${s.signer}: ${s.signature}`);
  if (outFile && signOnly) {
    const s = signatures[0]!;
    writeOutput("out", outFile, `${JSON.stringify({ caseId, signer: s.signer, resolution: messageJson, signature: s.signature }, null, 2)}\n`);
    out.lines.push(`  wrote the signature to ${outFile}; combine it with other members' by \`ioi case submit --signature ${outFile} …\``);
  } else if (outFile) {
    writeOutput("out", outFile, canon(resolutionToJson(resolution)));
    out.lines.push(`  wrote the resolution to ${outFile}`);
  }
  if (auditFile) out.lines.push(`  appended ${runs.length} audit log${runs.length === 1 ? "" : "s"} to ${auditFile}`);
  Object.assign(out.result, {
    caseId,
    kind,
    round,
    panel,
    state: run.state,
    verdict,
    reasonCodes: reasons,
    resolutionHash: run.resolutionHash,
    resolution: messageJson,
    remedy: { verdict: message.verdict, refund: message.refund.toString(), slash: message.slash.toString() },
    judgeRuntimeHash: resolution.judgeRuntimeHash,
    arbitrators: runs.length,
    signatures,
    ...(outFile ? { out: outFile } : {}),
    ...(auditFile ? { audit: auditFile } : {}),
  });

  if (!values.submit) return;
  if (signatures.length < needed) {
    throw new SignatureFileError(`${signatures.length} signature${signatures.length === 1 ? "" : "s"} cannot decide case ${caseId}: its panel of ${panel.length} needs ${needed}; gather them with --sign-only and \`ioi case submit\`.`);
  }
  reportSubmitted(out, caseId, await submitSigned(wallet!, publicClient, deployment, message, signatures));
}
