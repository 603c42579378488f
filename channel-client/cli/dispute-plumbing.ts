/**
 * What every dispute, case and arbitrator command shares (split from channel-client/cli/arbitration.ts, which composes the
 * command groups): the typed errors, the dispute options, reading and writing files, the DisputeManager and the
 * deployment it is wired to, stored cases, bonds, and the amount and verdict formatting.
 */
import { appendFileSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { ParseArgsConfig } from "node:util";
import {
  erc20Abi,
  getAddress,
  isAddress,
  isAddressEqual,
  pad,
  toHex,
  type Abi,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from "viem";
import { canon } from "../core/canonical";
import { deployedContract, givenAddress, rpcClients } from "./chain";
import { hashOption, need, UsageError, type Out } from "./common";
import { ETH_UNIT, formatAmount, formatAmountWithBase } from "../core/format";
import { ContractRevertError, decodeRevert } from "../chain/revert";
import { checkedWrite } from "../chain/write";
import { BaseError, SizeLimitError } from "../core/errors";
import type { Wallet } from "../chain/escrow";
import { disputeManagerAbi, DisputeTransactionError, providerRegistryAbi, type Deployment } from "../../arbitration/runner/chain";
import { CASE_STATUSES } from "../../arbitration/documents/context";
import { MAX_DOCUMENT_BYTES } from "../../arbitration/documents/document";
import { packageHash, packageToJson, parsePackage, type ChallengePackage } from "../../arbitration/documents/package";
import { FINAL_VERDICTS, VERDICT_CODES } from "../../arbitration/lanes/resolution";

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

export const CASE_OPTION = { case: { type: "string" } } as const satisfies ParseArgsConfig["options"];

/** The mnemonic of Hardhat's default accounts; --devnet-quorum signs with the keys of the drawn panel among them. */
export const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";
export const DEVNET_CHAIN_ID = 31337;
/** The devnet funds 40 accounts; a drawn panel member's key is looked up among them. */
export const DEVNET_ACCOUNTS = 40;
/** The largest panel (an appeal round of panelSize 8). */
export const MAX_PANEL = 15;
/** Largest signature or resolution file read by `ioi case submit`. */
export const MAX_SIGNATURE_FILE_BYTES = 64 * 1024;

/** Largest ICS file read (as `ioi gig fund --ics-file`). */
export const MAX_ICS_FILE_BYTES = 1 << 20;

const KINDS = ["none", "gig", "session"] as const;
const STATUSES = CASE_STATUSES;
export const ARBITRATOR_ROLE = 1;
export const UNBOND_PHASES = ["none", "unbonding", "withdrawable"] as const;
export const BURN_ADDRESS: Address = "0x000000000000000000000000000000000000dEaD";

/*//////////////////////////////////////////////////////////////
                               PLUMBING
//////////////////////////////////////////////////////////////*/

export type Values = Record<string, unknown>;

export function caseIdOf(values: Values): Hex {
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

export function writeOutput(name: string, file: string, text: string, append = false): void {
  try {
    if (append) appendFileSync(file, text);
    else writeFileSync(file, text);
  } catch (cause) {
    throw new UsageError(`Cannot write --${name} ${file}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
  }
}

/** A regular file's bytes, refusing before reading anything beyond `maxBytes`. */
export function readInput(name: string, file: string, maxBytes: number): Buffer {
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

export function readPackage(values: Values): { pkg: ChallengePackage; file: string } {
  const file = need(values, "package", "the ChallengePackage file (JSON or YAML)");
  return { pkg: parsePackage(readInput("package", file, MAX_DOCUMENT_BYTES)), file };
}

/**
 * Runs a transaction; a revert (decoded by the shared decoder, channel-client/chain/revert.ts) becomes a
 * {@link DisputeTransactionError} naming the contract's error and what it means.
 */
export async function transact<T>(what: string, send: () => Promise<T>): Promise<T> {
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
export function write(what: string, wallet: Wallet, publicClient: PublicClient, call: { address: Address; abi: Abi; functionName: string; args: readonly unknown[]; value?: bigint }) {
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

export const gigSubject = (gigId: bigint): Hex => pad(toHex(gigId), { size: 32 });

export function nextCaseId(publicClient: PublicClient, disputeManager: Address, kind: 1 | 2, subjectId: Hex): Promise<Hex> {
  return publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "nextCaseId", args: [kind, subjectId] });
}

export type StoredCase = Awaited<ReturnType<typeof readStoredCase>>;

/** The case as `caseOf` returns it; a usage error if it does not exist. */
export async function readStoredCase(publicClient: PublicClient, disputeManager: Address, caseId: Hex) {
  const c = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] });
  if (c.status === 0) throw new UsageError(`Case ${caseId} does not exist on the DisputeManager at ${disputeManager}.`);
  return { ...c, kindName: KINDS[c.kind] ?? `kind ${c.kind}`, statusName: STATUSES[c.status] ?? `status ${c.status}` };
}

export const assetName = (asset: Address): string => (BigInt(asset) === 0n ? "ETH" : asset);

/** Pays `amount` of the case's asset with the next call: as ETH value, or by approving the token first. */
export async function bondValue(wallet: Wallet, publicClient: PublicClient, asset: Address, spender: Address, amount: bigint): Promise<bigint> {
  if (BigInt(asset) === 0n) return amount;
  if (amount > 0n) {
    await write("ERC-20.approve", wallet, publicClient, { address: asset, abi: erc20Abi, functionName: "approve", args: [spender, amount] });
  }
  return 0n;
}

export function packageSummary(pkg: ChallengePackage): string {
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
                          FORMATTING HELPERS
//////////////////////////////////////////////////////////////*/

/** An amount of the bond token with its unit: "5000 LGAS". */
export function tokens(amount: bigint, symbol: string): string {
  return formatAmount(amount, { symbol, decimals: 18 });
}

/** An amount of a case's asset: ETH in ether, a token in base units with its address. */
/**
 * A bond above the value at stake needs --yes (issue 28 item 9): the challenger can lose more than the case can
 * ever win it. One sentence naming both, before anything is approved or sent.
 */
export async function confirmBond(values: Values, publicClient: PublicClient, disputeManager: Address, asset: Address, value: bigint, lane: number, what: string): Promise<void> {
  const bond = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "bondFor", args: [asset, value, lane] });
  if (bond > value && values.yes !== true) {
    throw new UsageError(
      `The bond for this case is ${assetAmount(bond, asset)}, more than the ${assetAmount(value, asset)} at stake in ${what}: losing costs more than winning can return. Run again with --yes to post it anyway; nothing was sent.`,
    );
  }
}

export function assetAmount(amount: bigint, asset: Address): string {
  return BigInt(asset) === 0n ? formatAmountWithBase(amount, ETH_UNIT) : `${amount} base units of ${asset}`;
}

export async function nowOnChain(publicClient: PublicClient): Promise<bigint> {
  return (await publicClient.getBlock()).timestamp;
}

/** The bond token (LaborGas on our deployments) and its symbol. */
export async function bondTokenOf(publicClient: PublicClient, registry: Address): Promise<{ token: Address; symbol: string }> {
  const token = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondToken" });
  const symbol = await publicClient.readContract({ address: token, abi: erc20Abi, functionName: "symbol" }).catch(() => "bond tokens");
  return { token: getAddress(token), symbol };
}

export const VERDICT_NAMES = Object.fromEntries(FINAL_VERDICTS.map((v) => [VERDICT_CODES[v], v])) as Record<number, string>;
