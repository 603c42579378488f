/**
 * The dispute commands of `ioi` (routed from `channel-client/cli.ts`):
 *
 *   ioi dispute build-gig | build-session | open | respond | escalate | expire
 *   ioi arbitrate --case ID --package FILE [--devnet-quorum N] [--submit]
 *   ioi case show --case ID
 *
 * A challenger builds a ChallengePackage from what it holds (the ICS and both bundles of a gig; its SQLite
 * store for a session), writes it as canonical JSON, and opens the case with the package's hash; the
 * respondent may contest; either party may escalate; anyone may expire a case past its deadline. An
 * arbitrator runs the deterministic arbitration of a case against the chain and signs the resolution; on a
 * local devnet, `--devnet-quorum N` stands in for N independent arbitrators (Hardhat accounts 10..) and
 * `--submit` enforces their resolution on-chain.
 *
 * The DisputeManager's address comes from --dispute-manager, IOI_DISPUTE_MANAGER or
 * deployments/localhost.json; the escrows and the registry are the ones that DisputeManager is wired to
 * (read from it), and an address given by option or environment for them must agree.
 */
import { appendFileSync, existsSync, lstatSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { ParseArgsConfig } from "node:util";
import {
  BaseError as ViemBaseError,
  ContractFunctionRevertedError,
  decodeErrorResult,
  erc20Abi,
  getAddress,
  isAddress,
  isAddressEqual,
  isHex,
  pad,
  parseAbi,
  parseEventLogs,
  toHex,
  zeroHash,
  type Abi,
  type Address,
  type Hash,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from "viem";
import { mnemonicToAccount } from "viem/accounts";

import LaborGasArtifact from "../artifacts/contracts/LaborGas.sol/LaborGas.json";
import { ReceiptAccumulator } from "../channel-client/accumulator";
import { canon } from "../channel-client/canonical";
import {
  channelOf,
  deployedAddress,
  gigIdOf,
  GLOBAL_HELP,
  hashOption,
  loadAccount,
  need,
  openStore,
  rpcClients,
  sessionOf,
  uint,
  UsageError,
  type Command,
  type Out,
} from "../channel-client/cli";
import { BaseError, SizeLimitError } from "../channel-client/errors";
import { gasEscrowAbi, type ClosingState, type Wallet } from "../channel-client/escrow";
import { sessionReceiptHash } from "../channel-client/receipt";
import { paymentTicketHash } from "../channel-client/ticket";
import { assertBundleHash, BUNDLE_LIMITS, bundleFromJson, bundleHash, expectBundlePath, type Bundle } from "./bundle";
import { buildGigPackage, buildSessionPackage } from "./build";
import {
  currentClosingState,
  disputeManagerAbi,
  DisputeTransactionError,
  gigEscrowAbi,
  loadCaseContext,
  openGigCase,
  openSessionCase,
  providerRegistryAbi,
  submitResolution,
  type Deployment,
  type OpenedCase,
  type ResolvedCase,
} from "./chain";
import { MAX_DOCUMENT_BYTES, parseDocument } from "./document";
import { InvalidBundleError } from "./errors";
import { icsFromJson, icsHash, type Ics } from "./ics";
import { packageHash, packageToJson, parsePackage, soleEvidence, evidenceOfKind, type ChallengePackage, type ReceiptEvidence } from "./package";
import { disputeManagerDomain, FINAL_VERDICTS, resolutionToJson, signResolution, VERDICT_CODES, type ResolutionMessage } from "./resolution";
import { arbitrate, type ArbitrationRun } from "./runner";
import { runVerifyUpip } from "./verify-upip";

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
  "  --dispute-manager ADDR  DisputeManager (default $IOI_DISPUTE_MANAGER or deployments/localhost.json)",
  "  --gig-escrow ADDR       GigEscrow; default: the one the DisputeManager uses ($IOI_GIG_ESCROW must agree)",
  "  --registry ADDR         ProviderRegistry; default: the one the DisputeManager uses ($IOI_REGISTRY must agree)",
  "                          (--escrow, the GasEscrow, likewise defaults to the DisputeManager's)",
];

const CASE_OPTION = { case: { type: "string" } } as const satisfies ParseArgsConfig["options"];

/** The mnemonic of Hardhat's default accounts; --devnet-quorum signs with its accounts 10 and up. */
const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";
const DEVNET_CHAIN_ID = 31337;
const DEVNET_FIRST_ARBITRATOR = 10;
/** Hardhat funds 20 accounts, so accounts 10..19 can stand in for arbitrators. */
const DEVNET_MAX_QUORUM = 10;

/** Largest ICS file read (as `ioi gig fund --ics-file`). */
const MAX_ICS_FILE_BYTES = 1 << 20;

const KINDS = ["none", "gig", "session"] as const;
const STATUSES = ["none", "open", "slow_path", "resolved", "expired"] as const;
const BURN_ADDRESS: Address = "0x000000000000000000000000000000000000dEaD";

/*//////////////////////////////////////////////////////////////
                               COMMANDS
//////////////////////////////////////////////////////////////*/

export type CommandGroup = { summary: string; commands: Record<string, Command> };

/** `ioi dispute <subcommand>` and `ioi case <subcommand>`. */
export const DISPUTE_GROUPS: Record<"dispute" | "case", CommandGroup> = {
  dispute: {
    summary: "dispute a gig or a session step: build a package, open, respond, escalate, expire (ioi dispute --help)",
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
          "  --seq N       the receipt being disputed; the recorded close must commit it (ticket seq - 1 receipts)",
          "  --lane 0|1    the lane to open at (default 0)",
          "  --out FILE    where the package is written, as canonical JSON",
          "  --db PATH     the payer's store (default .data/payer.db)",
          "The package carries the channel with its current recorded close, the receipt with its ticket and",
          "inclusion proof against the recorded root, and the receipt before it when the store has one.",
        ],
        options: { session: { type: "string" }, seq: { type: "string" }, lane: { type: "string" }, out: { type: "string" } },
        run: runBuildSession,
      },
      open: {
        summary: "open the case a package names, posting the challenger's bond (ETH, or the token approved first)",
        usage: "ioi dispute open --package FILE",
        notes: [
          "  --package FILE  a ChallengePackage (JSON or YAML); its case id must be the one the DisputeManager assigns next",
        ],
        options: { package: { type: "string" } },
        run: runOpen,
      },
      respond: {
        summary: "contest a case as its respondent, posting a bond equal to the challenger's",
        usage: "ioi dispute respond --case ID",
        options: CASE_OPTION,
        run: runRespond,
      },
      escalate: {
        summary: "move an open case up one lane (a party), paying the top-up to the next lane's bond",
        usage: "ioi dispute escalate --case ID",
        options: CASE_OPTION,
        run: runEscalate,
      },
      expire: {
        summary: "move a case past its deadline to the slow path, or expire a slow-path case (anyone)",
        usage: "ioi dispute expire --case ID",
        options: CASE_OPTION,
        run: runExpire,
      },
    },
  },
  case: {
    summary: "show a dispute case as stored on-chain (ioi case --help)",
    commands: {
      show: {
        summary: "show a case: kind, subject, status, lane, deadline, bonds, value, package hash and parties (no key needed)",
        usage: "ioi case show --case ID",
        options: CASE_OPTION,
        run: runCaseShow,
      },
    },
  },
};

/** `ioi arbitrate`. */
export const ARBITRATE_COMMAND: Command = {
  summary: "arbitrate a case against the chain and sign the resolution (a devnet quorum may also submit it)",
  usage:
    "ioi arbitrate --case ID --package FILE [--key-env NAME] [--devnet-quorum N] [--submit] [--out FILE] [--audit FILE]",
  notes: [
    "  --package FILE       the case's ChallengePackage (JSON or YAML)",
    "  --devnet-quorum N    chain 31337 only: Hardhat accounts 10..10+N-1 each arbitrate independently and sign;",
    "                       refused unless their resolution hashes are identical (the acting key then only submits)",
    "  --submit             submit the resolution with the signatures (the acting key sends the transaction)",
    "  --out FILE           write the resolution as canonical JSON",
    "  --audit FILE         append every run's audit log as JSON lines",
    "Without --devnet-quorum the acting key is the arbitrator: it signs the resolution and prints the signature.",
    "",
    "ioi arbitrate --verify-upip FILE (--package FILE | --suite-dir DIR --deliverable-dir DIR)   (offline, no key, no chain)",
    "  --verify-upip FILE     replay a UPIP record, or every record in a Resolution's replays (as --out writes it),",
    "                         in this judge's sealed engine: prints match, or mismatch with the differing fields",
    "                         (exit status 3 on mismatch; see arbitration/verify-upip.ts)",
    "  --package FILE         the bundles are this package's test_suite and deliverable evidence, or:",
    "  --suite-dir DIR        the suite's files and",
    "  --deliverable-dir DIR  the deliverable's files (read as `ioi dispute build-gig` reads them);",
    "                         either way they must hash to the record's suite_hash and deliverable_hash",
  ],
  options: {
    ...CASE_OPTION,
    package: { type: "string" },
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

function laneOf(values: Values, fallback: 0 | 1): 0 | 1 {
  const lane = values.lane;
  if (lane === undefined) return fallback;
  if (lane !== "0" && lane !== "1") throw new UsageError(`--lane must be 0 or 1 (a case opens at lane 0 or 1); received "${String(lane)}".`);
  return Number(lane) as 0 | 1;
}

/** An output file's directory must exist before any work is done (nothing is created along the way). */
function outputPath(values: Values, name: string, what: string, required: boolean): string | undefined {
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
    throw new UsageError(`Cannot write --${name} ${file}: ${(cause as Error).message.split("\n")[0]}`, { cause });
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
    throw new UsageError(`Cannot read --${name} ${file}: ${(cause as Error).message.split("\n")[0]}`, { cause });
  }
  if (size > maxBytes) throw new SizeLimitError(`--${name} ${file}`, size, maxBytes);
  try {
    return readFileSync(file);
  } catch (cause) {
    throw new UsageError(`Cannot read --${name} ${file}: ${(cause as Error).message.split("\n")[0]}`, { cause });
  }
}

function readPackage(values: Values): { pkg: ChallengePackage; file: string } {
  const file = need(values, "package", "the ChallengePackage file (JSON or YAML)");
  return { pkg: parsePackage(readInput("package", file, MAX_DOCUMENT_BYTES)), file };
}

/**
 * Reads every regular file under `directory` into a bundle: paths relative to it with `/`, contents as
 * UTF-8 (a byte order mark kept as it is). Refuses symbolic links, devices and other special files, names
 * a bundle may not hold (hidden files among them), invalid UTF-8, and anything past the bundle limits —
 * checked while walking, so an oversized tree is never read in full.
 */
export function readBundleDirectory(directory: string, option: string): Bundle {
  const where = `--${option} ${directory}`;
  let root;
  try {
    root = statSync(directory);
  } catch (cause) {
    throw new UsageError(`Cannot read ${where}: ${(cause as Error).message.split("\n")[0]}`, { cause });
  }
  if (!root.isDirectory()) throw new UsageError(`${where} is not a directory.`);
  const files: Record<string, string> = {};
  let count = 0;
  let total = 0;
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const walk = (absolute: string, relative: string): void => {
    const entries = readdirSync(absolute).sort();
    for (const name of entries) {
      const rel = relative ? `${relative}/${name}` : name;
      const file = path.join(absolute, name);
      const label = `${where}: ${JSON.stringify(rel)}`;
      expectBundlePath(rel, label);
      const stat = lstatSync(file);
      if (stat.isSymbolicLink()) throw new InvalidBundleError(label, "is a symbolic link; a bundle holds regular files only.");
      if (stat.isDirectory()) {
        walk(file, rel);
        continue;
      }
      if (!stat.isFile()) throw new InvalidBundleError(label, "is not a regular file; a bundle holds regular files only.");
      if (++count > BUNDLE_LIMITS.maxFiles) throw new InvalidBundleError(where, `holds more than ${BUNDLE_LIMITS.maxFiles} files; a bundle holds at most that many.`);
      if (stat.size > BUNDLE_LIMITS.maxFileBytes) {
        throw new InvalidBundleError(label, `is ${stat.size} bytes; a file may hold at most ${BUNDLE_LIMITS.maxFileBytes}.`);
      }
      total += stat.size;
      if (total > BUNDLE_LIMITS.maxTotalBytes) {
        throw new InvalidBundleError(where, `holds more than ${BUNDLE_LIMITS.maxTotalBytes} bytes in all; a bundle may hold at most that.`);
      }
      try {
        files[rel] = decoder.decode(readFileSync(file));
      } catch (cause) {
        if (cause instanceof TypeError) throw new InvalidBundleError(label, "is not valid UTF-8; bundle files are UTF-8 text.");
        throw new UsageError(`Cannot read ${label}: ${(cause as Error).message.split("\n")[0]}`, { cause });
      }
    }
  };
  walk(directory, "");
  return bundleFromJson({ files }, where);
}

/** Errors in no ABI: solady raises them from assembly. */
const LIBRARY_ERRORS = parseAbi(["error TransferFromFailed()", "error TransferFailed()", "error Reentrancy()"]);
/** Every custom error a dispute transaction can revert with, the DisputeManager's and those of what it calls. */
const REVERT_ABI = [
  ...disputeManagerAbi,
  ...gigEscrowAbi,
  ...gasEscrowAbi,
  ...providerRegistryAbi,
  ...(LaborGasArtifact.abi as Abi),
  ...LIBRARY_ERRORS,
].filter((item) => item.type === "error") as Abi;

function decodeRevert(error: unknown): { errorName: string; args: readonly unknown[] } | undefined {
  if (!(error instanceof ViemBaseError)) return undefined;
  const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError);
  const candidates: unknown[] = [];
  if (reverted instanceof ContractFunctionRevertedError) {
    if (reverted.data) return { errorName: reverted.data.errorName, args: reverted.data.args ?? [] };
    candidates.push(reverted.raw);
  }
  // Some nodes report the revert as an RPC error carrying the raw data instead.
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const { data } = e as { data?: unknown };
    candidates.push(typeof data === "string" ? data : (data as { data?: unknown } | undefined)?.data);
  }
  for (const raw of candidates) {
    if (typeof raw !== "string" || !isHex(raw) || raw.length < 10) continue;
    try {
      const decoded = decodeErrorResult({ abi: REVERT_ABI, data: raw });
      return { errorName: decoded.errorName, args: decoded.args ?? [] };
    } catch {
      continue;
    }
  }
  return undefined;
}

const describeArgs = (args: readonly unknown[]): string => args.map((a) => (typeof a === "bigint" ? a.toString() : String(a))).join(", ");

/** Runs a transaction; a revert becomes a {@link DisputeTransactionError} naming the contract's error. */
async function transact<T>(what: string, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    const revert = decodeRevert(error);
    if (!revert) throw error;
    throw new DisputeTransactionError(`${what} reverted with ${revert.errorName}(${describeArgs(revert.args)}).`, { cause: error });
  }
}

async function confirm(publicClient: PublicClient, hash: Hash, what: string) {
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success") throw new DisputeTransactionError(`${what} transaction ${hash} reverted.`);
  return receipt;
}

/** The DisputeManager, checked to be a contract, and the escrows and registry it is wired to. */
async function deploymentOf(values: Values, publicClient: PublicClient, chainId: number): Promise<Deployment> {
  const disputeManager = deployedAddress(values, "dispute-manager", "IOI_DISPUTE_MANAGER", "DisputeManager");
  const code = await publicClient.getCode({ address: disputeManager });
  if (!code || code === "0x") {
    throw new UsageError(`No contract at ${disputeManager} on chain ${chainId}; pass --dispute-manager (or redeploy with \`npm run devnet\`).`);
  }
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
  return { disputeManager, gasEscrow: gasEscrow!, gigEscrow: gigEscrow!, registry: registry! };
}

async function disputeClients(values: Values, account?: LocalAccount) {
  const { publicClient, wallet, chainId } = await rpcClients(values, account);
  const deployment = await deploymentOf(values, publicClient, chainId);
  return { publicClient, wallet, chainId, deployment };
}

const gigSubject = (gigId: bigint): Hex => pad(toHex(gigId), { size: 32 });

function nextCaseId(publicClient: PublicClient, disputeManager: Address, kind: 1 | 2, subjectId: Hex): Promise<Hex> {
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
    const hash = await transact("ERC-20 approve", () => wallet.writeContract({ address: asset, abi: erc20Abi, functionName: "approve", args: [spender, amount] }));
    await confirm(publicClient, hash, "ERC-20 approve");
  }
  return 0n;
}

function packageSummary(pkg: ChallengePackage): string {
  return pkg.subject.kind === "gig" ? `gig ${pkg.subject.gigId}` : `session ${pkg.subject.sessionId} receipt ${pkg.subject.seq}`;
}

function writePackage(out: Out, file: string, pkg: ChallengePackage): void {
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
    const closing = await currentClosingState(publicClient, deployment.gasEscrow, sessionId);
    // The recorded ticket n carries the root over receipts 1..n-1 (docs/decisions/0003).
    const committed = closing.seq === 0n ? 0 : Number(closing.seq - 1n);
    if (committed === 0) throw new UsageError(`The recorded close (ticket seq ${closing.seq}) commits no receipts; none can be disputed.`);
    if (seq > BigInt(committed)) {
      throw new UsageError(`--seq must name a receipt the recorded close commits (1 to ${committed}, ticket seq ${closing.seq} - 1); received ${seq}.`);
    }
    const steps = store.steps(sessionId).filter((step) => step.receipt !== undefined && step.leaf !== undefined);
    if (steps.length < committed) {
      throw new PackageMismatchError(`The recorded close commits ${committed} receipts, but the store holds only ${steps.length}; check --db.`);
    }
    const tree = ReceiptAccumulator.fromLeaves(steps.map((step) => step.leaf!));
    if (tree.prefixRoot(committed) !== closing.receiptRoot) {
      throw new PackageMismatchError(
        `The store's first ${committed} receipts hash to ${tree.prefixRoot(committed)}, not to the recorded root ${closing.receiptRoot}; they cannot be proven.`,
      );
    }
    const evidenceOf = (index: number): ReceiptEvidence => {
      const step = steps[index]!;
      return { receipt: step.receipt!, ticket: step.ticket, leafIndex: BigInt(index), merkleProof: tree.proof(index, committed) };
    };
    const index = steps.findIndex((step) => step.seq === seq);
    if (index < 0 || index >= committed) throw new PackageMismatchError(`The store holds no committed receipt with seq ${seq}.`);
    const receipts = index > 0 && steps[index - 1]!.seq === seq - 1n ? [evidenceOf(index - 1), evidenceOf(index)] : [evidenceOf(index)];
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
      seq,
      receipts,
    });
    writePackage(out, file, pkg);
    Object.assign(out.result, { sessionId, seq: seq.toString(), closingSeq: closing.seq.toString(), committedReceipts: committed });
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
    const recorded = await currentClosingState(publicClient, deployment.gasEscrow, subject.sessionId);
    if (!sameClosing(recorded, channel.content.closing)) {
      throw new PackageMismatchError(
        `${file} carries the close with ticket seq ${channel.content.closing.seq}, but the recorded close is now seq ${recorded.seq}; rebuild the package.`,
      );
    }
    const { receipt, ticket, merkleProof } = challenged.content;
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
    `Opened case ${opened.caseId} disputing ${packageSummary(pkg)} at lane ${pkg.lane}, posting a bond of ${opened.bond} ${assetName(stored.asset)} (gas ${opened.gasUsed}); decision due by ${stored.deadline}.`,
  );
  Object.assign(out.result, {
    caseId: opened.caseId,
    kind: subject.kind,
    lane: pkg.lane,
    packageHash: hash,
    bond: opened.bond.toString(),
    asset: stored.asset,
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

async function runRespond(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  // Checked here as the contract checks them, so that no token approval is spent on a call bound to revert.
  if (c.statusName !== "open" && c.statusName !== "slow_path") throw new DisputeTransactionError(`Case ${caseId} is ${c.statusName}; it can no longer be contested.`);
  if (!isAddressEqual(account.address, c.respondent)) {
    throw new DisputeTransactionError(`Only case ${caseId}'s respondent ${c.respondent} can contest it; the acting key is ${account.address}.`);
  }
  if (c.respondentBond !== 0n) throw new DisputeTransactionError(`Case ${caseId} is already contested (respondent bond ${c.respondentBond}).`);
  const bond = c.challengerBond;
  const value = await bondValue(wallet!, publicClient, c.asset, deployment.disputeManager, bond);
  const hash = await transact("DisputeManager.respond", () =>
    wallet!.writeContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "respond", args: [caseId], value }),
  );
  const receipt = await confirm(publicClient, hash, "DisputeManager.respond");
  const [contested] = parseEventLogs({ abi: disputeManagerAbi, eventName: "CaseContested", logs: receipt.logs });
  if (!contested) throw new DisputeTransactionError(`Transaction ${hash} contested no case.`);
  out.lines.push(`Contested case ${caseId} as ${contested.args.respondent}, posting a bond of ${contested.args.bond} ${assetName(c.asset)} (gas ${receipt.gasUsed}).`);
  Object.assign(out.result, { caseId, respondent: contested.args.respondent, bond: contested.args.bond.toString(), asset: c.asset, transactionHash: hash, gasUsed: Number(receipt.gasUsed) });
}

async function runEscalate(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  if (c.statusName !== "open") throw new DisputeTransactionError(`Case ${caseId} is ${c.statusName}; only an open case can be escalated.`);
  const byChallenger = isAddressEqual(account.address, c.challenger);
  if (!byChallenger && !isAddressEqual(account.address, c.respondent)) {
    throw new DisputeTransactionError(`${account.address} is neither the challenger nor the respondent of case ${caseId}; only a party can escalate.`);
  }
  const due = await publicClient.readContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "bondFor", args: [c.value, c.lane + 1] });
  const own = byChallenger ? c.challengerBond : c.respondentBond;
  const topUp = due > own ? due - own : 0n;
  const value = await bondValue(wallet!, publicClient, c.asset, deployment.disputeManager, topUp);
  const hash = await transact("DisputeManager.escalate", () =>
    wallet!.writeContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "escalate", args: [caseId], value }),
  );
  const receipt = await confirm(publicClient, hash, "DisputeManager.escalate");
  const [escalated] = parseEventLogs({ abi: disputeManagerAbi, eventName: "CaseEscalated", logs: receipt.logs });
  if (!escalated) throw new DisputeTransactionError(`Transaction ${hash} escalated no case.`);
  const status = STATUSES[escalated.args.status] ?? `status ${escalated.args.status}`;
  out.lines.push(
    `Escalated case ${caseId} to lane ${escalated.args.lane} (${status}, deadline ${escalated.args.deadline}), paying a top-up of ${topUp} ${assetName(c.asset)} (gas ${receipt.gasUsed}).`,
  );
  Object.assign(out.result, {
    caseId,
    by: byChallenger ? "challenger" : "respondent",
    lane: escalated.args.lane,
    status,
    deadline: escalated.args.deadline.toString(),
    topUp: topUp.toString(),
    bond: due > own ? due.toString() : own.toString(),
    transactionHash: hash,
    gasUsed: Number(receipt.gasUsed),
  });
}

async function runExpire(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  const recorded: ClosingState =
    c.kindName === "session"
      ? await currentClosingState(publicClient, deployment.gasEscrow, c.subjectId)
      : { deposit: 0n, seq: 0n, amount: 0n, receiptRoot: zeroHash, feeBps: 0 };
  const hash = await transact("DisputeManager.expire", () =>
    wallet!.writeContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "expire", args: [caseId, recorded] }),
  );
  const receipt = await confirm(publicClient, hash, "DisputeManager.expire");
  const logs = parseEventLogs({ abi: disputeManagerAbi, logs: receipt.logs });
  const escalated = logs.find((log) => log.eventName === "CaseEscalated");
  const base = { caseId, transactionHash: hash, gasUsed: Number(receipt.gasUsed) };
  if (escalated && escalated.eventName === "CaseEscalated") {
    out.lines.push(`Case ${caseId} missed its decision deadline: moved to the slow path (lane ${escalated.args.lane}) until ${escalated.args.deadline} (gas ${receipt.gasUsed}).`);
    Object.assign(out.result, { ...base, outcome: "slow_path", lane: escalated.args.lane, deadline: escalated.args.deadline.toString() });
    return;
  }
  if (!logs.some((log) => log.eventName === "CaseExpired")) throw new DisputeTransactionError(`Transaction ${hash} expired no case.`);
  out.lines.push(
    `Case ${caseId} expired: the subject is released without a refund; bonds returned (${c.challengerBond} to the challenger, ${c.respondentBond} to the respondent; gas ${receipt.gasUsed}).`,
  );
  Object.assign(out.result, { ...base, outcome: "expired", toChallenger: c.challengerBond.toString(), toRespondent: c.respondentBond.toString() });
}

async function runCaseShow(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const { publicClient, deployment } = await disputeClients(values);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  out.lines.push(...caseLines(caseId, c));
  Object.assign(out.result, caseToJson(caseId, c));
}

function subjectOf(c: StoredCase): string {
  return c.kindName === "gig" ? `gig ${BigInt(c.subjectId)}` : `session ${c.subjectId}`;
}

function caseLines(caseId: Hex, c: StoredCase): string[] {
  const asset = assetName(c.asset);
  return [
    `case ${caseId}: ${c.kindName} dispute of ${subjectOf(c)}, ${c.statusName} at lane ${c.lane}, deadline ${c.deadline}`,
    `  challenger ${c.challenger} (bond ${c.challengerBond} ${asset}), respondent ${c.respondent} (bond ${c.respondentBond} ${asset})`,
    `  value ${c.value} ${asset}, package ${c.packageHash}`,
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

/*//////////////////////////////////////////////////////////////
                              ARBITRATION
//////////////////////////////////////////////////////////////*/

const VERDICT_NAMES = Object.fromEntries(FINAL_VERDICTS.map((v) => [VERDICT_CODES[v], v])) as Record<number, string>;

async function runArbitrate(values: Values, out: Out): Promise<void> {
  if (values["verify-upip"] !== undefined) return runVerifyUpip(values, out);
  const caseId = caseIdOf(values);
  const packageFile = need(values, "package", "the case's ChallengePackage (JSON or YAML)");
  const quorumSize =
    values["devnet-quorum"] === undefined ? undefined : Number(uint(values, "devnet-quorum", "how many local arbitrators to run"));
  if (quorumSize !== undefined && (quorumSize < 1 || quorumSize > DEVNET_MAX_QUORUM)) {
    throw new UsageError(`--devnet-quorum must be from 1 to ${DEVNET_MAX_QUORUM} (Hardhat accounts 10 to 19); received ${quorumSize}.`);
  }
  // The acting key signs (alone) or sends the quorum's transaction; a devnet quorum without --submit needs none.
  const account = quorumSize === undefined || values.submit ? loadAccount(values) : undefined;
  const resolutionFile = outputPath(values, "out", "the file to write the resolution to", false);
  const auditFile = outputPath(values, "audit", "the file to append the audit log to", false);
  const bytes = readInput("package", packageFile, MAX_DOCUMENT_BYTES);
  parsePackage(bytes); // refuse a malformed package before reaching for the chain

  const { publicClient, wallet, chainId, deployment } = await disputeClients(values, account);
  if (quorumSize !== undefined && chainId !== DEVNET_CHAIN_ID) {
    throw new UsageError(`--devnet-quorum signs with Hardhat's well-known keys and runs only on chain ${DEVNET_CHAIN_ID}; this node is chain ${chainId}.`);
  }
  const arbitrators =
    quorumSize === undefined
      ? [account!]
      : Array.from({ length: quorumSize }, (_, i) => mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: DEVNET_FIRST_ARBITRATOR + i }));

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
  const hashes = [...new Set(runs.map((r) => r.resolutionHash))];
  if (hashes.length !== 1) {
    throw new QuorumDisagreementError(`The ${runs.length} arbitrators reached ${hashes.length} different resolutions (${hashes.join(", ")}); nothing was signed.`);
  }
  const run = runs[0]!;
  const { resolution, message } = run;
  const domain = disputeManagerDomain(BigInt(chainId), deployment.disputeManager);
  const signatures = [];
  for (const arbitrator of arbitrators) signatures.push({ signer: arbitrator.address, signature: await signResolution(arbitrator, domain, message) });

  const verdict = resolution.aggregate.finalVerdict;
  const reasons = resolution.aggregate.reasonCodes;
  out.lines.push(`Arbitrated case ${caseId}: ${run.state}, verdict ${verdict}${reasons.length ? ` (reason codes ${reasons.join(", ")})` : ""}.`);
  out.lines.push(`  resolution ${run.resolutionHash}: remedy ${message.verdict} (${VERDICT_NAMES[message.verdict]}), refund ${message.refund}, slash ${message.slash}`);
  if (quorumSize !== undefined) out.lines.push(`  ${runs.length} devnet arbitrators ran the case independently and reached this same resolution.`);
  for (const s of signatures) out.lines.push(`  signed by ${s.signer}: ${s.signature}`);
  if (resolutionFile) {
    writeOutput("out", resolutionFile, canon(resolutionToJson(resolution)));
    out.lines.push(`  wrote the resolution to ${resolutionFile}`);
  }
  if (auditFile) out.lines.push(`  appended ${runs.length} audit log${runs.length === 1 ? "" : "s"} to ${auditFile}`);
  Object.assign(out.result, {
    caseId,
    kind,
    state: run.state,
    verdict,
    reasonCodes: reasons,
    resolutionHash: run.resolutionHash,
    remedy: { verdict: message.verdict, refund: message.refund.toString(), slash: message.slash.toString() },
    judgeRuntimeHash: resolution.judgeRuntimeHash,
    arbitrators: runs.length,
    signatures,
    ...(resolutionFile ? { out: resolutionFile } : {}),
    ...(auditFile ? { audit: auditFile } : {}),
  });

  if (!values.submit) return;
  const resolved = await submit(wallet!, publicClient, deployment, message, signatures);
  out.lines.push(
    resolved.outcome === "resolved"
      ? `Submitted: case resolved — refunded ${resolved.refunded}, slashed ${resolved.slashed}, ${resolved.toChallenger} to the challenger, ${resolved.toRespondent} to the respondent, ${resolved.burned} burnt to ${BURN_ADDRESS} (gas ${resolved.gasUsed}).`
      : `Submitted: the resolution is undecidable, so the case moved to the slow path for governance (gas ${resolved.gasUsed}).`,
  );
  out.result.submitted = {
    outcome: resolved.outcome,
    refunded: resolved.refunded.toString(),
    slashed: resolved.slashed.toString(),
    toChallenger: resolved.toChallenger.toString(),
    toRespondent: resolved.toRespondent.toString(),
    burned: resolved.burned.toString(),
    transactionHash: resolved.hash,
    gasUsed: Number(resolved.gasUsed),
  };
}

function submit(
  wallet: Wallet,
  publicClient: PublicClient,
  deployment: Deployment,
  message: ResolutionMessage,
  signatures: { signer: Address; signature: Hex }[],
): Promise<ResolvedCase> {
  return transact("DisputeManager.resolve", () => submitResolution({ wallet, publicClient, deployment, message, signatures }));
}
