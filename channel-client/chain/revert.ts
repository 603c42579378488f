/**
 * The one revert decoder: turns whatever viem (or the node) threw for a call into the contract's custom error
 * by name, its arguments by name, and a sentence a user can act on — times as an ISO date and the duration
 * from now, amounts in the asset's units with its symbol when the asset is known. It decodes over the ABIs of
 * every contract of the deployment (and solady's assembly errors), so a revert raised by a contract the call
 * reaches (the registry under a gig, the token under an escrow) decodes too. An "insufficient funds" answer
 * from the node is recognised as well.
 */
import {
  BaseError as ViemBaseError,
  ContractFunctionExecutionError,
  ContractFunctionRevertedError,
  decodeErrorResult,
  isHex,
  parseAbi,
  toFunctionSelector,
  type Abi,
  type AbiParameter,
  type Address,
  type Hex,
} from "viem";

import {
  blockhashRandomnessAbi,
  disputeManagerAbi,
  gasEscrowAbi,
  gigEscrowAbi,
  laborGasAbi,
  providerRegistryAbi,
  timelockAbi,
} from "../abi";
import { BaseError, type BaseErrorParameters } from "../core/errors";
import { ETH_UNIT, formatAmount, formatDuration, formatMoment, type AssetUnit } from "../core/format";

/** An `error` item of an ABI. */
export type AbiError = Extract<Abi[number], { type: "error" }>;

/** Errors in no ABI: solady raises them from assembly. */
export const LIBRARY_ERRORS = parseAbi(["error TransferFromFailed()", "error TransferFailed()", "error Reentrancy()"]);

/** Every custom error any of our contracts (or what they call) can revert with, each signature once. */
export const revertAbi: readonly AbiError[] = (() => {
  const all = [
    ...(gasEscrowAbi as Abi),
    ...(gigEscrowAbi as Abi),
    ...(providerRegistryAbi as Abi),
    ...(disputeManagerAbi as Abi),
    ...(laborGasAbi as Abi),
    ...(timelockAbi as Abi),
    ...(blockhashRandomnessAbi as Abi),
    ...LIBRARY_ERRORS,
  ].filter((item): item is AbiError => item.type === "error");
  const bySelector = new Map<Hex, AbiError>();
  for (const item of all) {
    const selector = toFunctionSelector(`${item.name}(${item.inputs.map(canonicalType).join(",")})`);
    if (!bySelector.has(selector)) bySelector.set(selector, item);
  }
  return [...bySelector.values()];
})();

function canonicalType(p: AbiParameter): string {
  if (p.type.startsWith("tuple")) {
    const components = (p as { components?: readonly AbiParameter[] }).components ?? [];
    return `(${components.map(canonicalType).join(",")})${p.type.slice("tuple".length)}`;
  }
  return p.type;
}

/** An asset as the sentences name it: ETH, LGAS, or any ERC-20 whose symbol and decimals the caller read. */

export type DescribeContext = {
  /** The time "now" is measured from (unix seconds): the chain's latest block; default the wall clock. */
  now?: bigint;
  /** The units of the amounts in the error, when the call's asset is known. */
  asset?: AssetUnit;
};

export type DecodedRevert = {
  /** The custom error's name, or "InsufficientFunds" when the node refused the sender's balance. */
  errorName: string;
  /** Arguments in declaration order. */
  args: readonly unknown[];
  /** Arguments by their declared names (`arg0`… where the ABI names none). */
  named: Record<string, unknown>;
  /** `ErrorName: what happened, in words`. */
  sentence: string;
};

/** A call the contract refused (found by simulation before sending, or in a mined transaction). */
export class ContractRevertError extends BaseError {
  override name = "ContractRevertError" as const;
  constructor(
    readonly what: string,
    readonly revert: DecodedRevert,
    parameters: BaseErrorParameters = {},
  ) {
    super(`${what} reverted with ${revert.errorName}(${revert.args.map(argText).join(", ")}): ${revert.sentence.slice(revert.errorName.length + 2)}`, parameters);
  }
}

function argText(value: unknown): string {
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "object" && value !== null) return JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
  return String(value);
}

const ENUMS: Record<string, readonly string[]> = {
  "enum IGigEscrow.Status": ["None", "Funded", "Accepted", "Delivered", "Disputed", "Released", "Refunded"],
  "enum IDisputeManager.CaseStatus": ["None", "Open", "Deliberating", "Decided", "SlowPath", "Resolved", "Expired"],
  "enum IDisputeManager.Verdict": ["None", "ChallengerWins", "RespondentWins", "NoFault", "Undecidable"],
  "enum IDisputeManager.SubjectKind": ["None", "Gig", "Session"],
  "enum IProviderRegistry.Role": ["Provider", "Arbitrator"],
  "enum IGasEscrow.Phase": ["None", "Open", "Closing", "Finalizable", "Frozen", "Settled"],
};

/** Argument names that hold a point in time (unix seconds). */
const TIME_NAMES = /(At|By|Until|deadline|expiry|timestamp)$/;
/** Argument names that hold a duration in seconds. */
const DURATION_NAMES = /(Duration|Window|[dD]elay)$/;
/** Argument names that hold an amount of the call's asset. */
const AMOUNT_NAMES =
  /^(amount|deposit|received|minReceived|due|sent|value|bond|total|requested|active|held|refund|slash|recordedAmount|spendCap|atRisk|moved|balance|needed|allowance|cap|minimum|min|max)$/;
/** Errors whose numeric arguments named like amounts are counts, not money. */
const COUNT_ERRORS = new Set(["SupermajorityNotMet", "PoolFull", "EndpointLengthOutOfRange", "AppealCapReached"]);

/**
 * What the bounds of an "…OutOfRange" error measure (issue 28 item 9): its first argument's kind, so the `min` and
 * `max` of `ChallengeDurationOutOfRange(challengeDuration, min, max)` print as durations, never as ETH.
 */
function boundsKind(inputs: readonly AbiParameter[]): "duration" | "time" | undefined {
  const first = inputs[0]?.name ?? "";
  if (DURATION_NAMES.test(first)) return "duration";
  if (TIME_NAMES.test(first)) return "time";
  return undefined;
}

/** Integer widths no amount uses (amounts are uint96 and wider): such an argument is never printed as money. */
const NARROW_INT = /^u?int(8|16|24|32|40|48|56|64)$/;

function formatArg(errorName: string, input: AbiParameter, value: unknown, context: DescribeContext, bounds?: "duration" | "time"): string {
  const name = input.name ?? "";
  const internalType = (input as { internalType?: string }).internalType ?? "";
  if (ENUMS[internalType] && typeof value === "number") return ENUMS[internalType]![value] ?? `${value}`;
  if (typeof value === "bigint" || typeof value === "number") {
    const n = BigInt(value);
    const bound = /^(min|max|minimum|maximum)$/.test(name) ? bounds : undefined;
    if ((TIME_NAMES.test(name) || bound === "time") && n > 0n) return formatMoment(n, context.now);
    if (DURATION_NAMES.test(name) || bound === "duration") return `${n} s${n >= 60n ? ` (${formatDuration(n)})` : ""}`;
    if (/Bps$/.test(name)) return `${n} bps (${Number(n) / 100}%)`;
    if (AMOUNT_NAMES.test(name) && !COUNT_ERRORS.has(errorName) && !/^bytes/.test(input.type) && !NARROW_INT.test(input.type)) return formatAmount(n, context.asset);
    return n.toString();
  }
  return argText(value);
}

/** "NotAnActiveProvider" → "not an active provider". */
function words(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .toLowerCase();
}

type Formatted = Record<string, string>;

/** Sentences for the errors a user meets in the normal course; every other error gets the generic form. */
const TEMPLATES: Record<string, (a: Formatted) => string> = {
  ChallengeWindowOpen: (a) => `the challenge window is open until ${a.finalizesAt}`,
  ChallengeWindowClosed: (a) => `the challenge window closed at ${a.finalizesAt}; the close can only be finalised now`,
  ChannelNotOpen: (a) => `channel ${a.sessionId} is not open (never opened, closing, or settled)`,
  ChannelNotClosing: (a) => `channel ${a.sessionId} is not closing: close it first, or it is settled already`,
  ClosingStateMismatch: (a) => `the closing state given for ${a.sessionId} is not the one recorded on-chain; catch up with \`ioi watchtower --once\``,
  FrozenByDispute: (a) => `channel ${a.sessionId} is frozen by ${a.openCases} open dispute case(s) until they resolve`,
  TicketNotNewer: (a) => `ticket seq ${a.seq} is not newer than the recorded seq ${a.recordedSeq}`,
  AmountExceedsDeposit: (a) => `the ticket's amount ${a.amount} exceeds the channel's deposit ${a.deposit}`,
  NotTheFunder: (a) => `only the funder ${a.funder} may do this, not ${a.caller}`,
  NotThePayer: (a) => `only the payer of ${a.sessionId} may do this, not ${a.caller}`,
  RevokedSessionKey: (a) => `session key ${a.key} was revoked at ${a.revokedAt} and the grace of one challenge window after it has passed`,
  SessionKeySpendCapExceeded: (a) => `the ticket's amount ${a.amount} exceeds session key ${a.key}'s spend cap ${a.spendCap}`,
  UnauthorizedSessionKey: (a) => `the grant of session key ${a.key} was signed by ${a.signer}, not by the payer of ${a.sessionId}`,
  SessionExists: (a) => `a channel with session id ${a.sessionId} exists already (reuse of a nonce)`,
  DepositBelowMinimum: (a) => `the escrow received ${a.received}, less than the ${a.minReceived} asked for`,
  EthValueMismatch: (a) => `the call sent ${a.value} but the amount is ${a.amount}`,
  NotAnActiveProvider: (a) => `${a.caller} has no active provider bond; register and bond in the ProviderRegistry first`,
  NotTheClient: (a) => `only the client of gig ${a.gigId} may do this, not ${a.caller}`,
  NotTheProvider: (a) => `only the provider of gig ${a.gigId} may do this, not ${a.caller}`,
  UnknownGig: (a) => `gig ${a.gigId} does not exist`,
  WrongStatus: (a) => `gig ${a.gigId} is ${a.status}, which does not allow this`,
  DisputeWindowOpen: (a) => `the dispute window of gig ${a.gigId} is open until ${a.windowEndsAt}`,
  DisputeWindowClosed: (a) => `the dispute window of gig ${a.gigId} closed at ${a.windowEndsAt}`,
  UnknownCase: (a) => `case ${a.caseId} does not exist`,
  WrongCaseStatus: (a) => `case ${a.caseId} is ${a.status}, which does not allow this`,
  RespondWindowOpen: (a) => `the respond window of case ${a.caseId} is open until ${a.respondBy}`,
  ContestClosed: (a) => `the respond window of case ${a.caseId} closed at ${a.respondBy}`,
  RandomnessNotReady: (a) => `the randomness for case ${a.caseId} is not ready before block ${a.ticket}`,
  UnbondingNotElapsed: (a) => `the ${a.role} bond of ${a.account} unlocks at ${a.unlockAt}`,
  InsufficientActiveBond: (a) => `${a.account} has ${a.active} active as ${a.role}, less than the ${a.requested} requested`,
  BondIsLocked: (a) => `the ${a.role} bond of ${a.account} is locked by ${a.locks} live gig(s) or case(s)`,
  BondHeldUntil: (a) => `the ${a.role} bond of ${a.account} still answers for a settled session's dispute window until ${a.heldUntil}`,
  AssetWithoutDisputeTerms: (a) => `${a.asset} has no dispute terms, so no case could ever be opened about money in it; the escrow refuses it`,
  TransferAmountMismatch: (a) => `the token ${a.asset} credited ${a.received} for a transfer of ${a.amount} (a fee-on-transfer or otherwise non-standard token); the escrow refuses it`,
  NothingToClaim: (a) => `${a.account} has nothing to claim in ${a.asset}`,
  ERC20InsufficientBalance: (a) => `the token balance of ${a.sender} is ${a.balance}, less than the ${a.needed} needed`,
  ERC20InsufficientAllowance: (a) => `the allowance for ${a.spender} is ${a.allowance}, less than the ${a.needed} needed; approve first`,
  AccessControlUnauthorizedAccount: (a) => `${a.account} lacks the role ${a.neededRole}`,
  TransferFromFailed: () => "the token refused to transfer from the sender (balance or allowance too low, or a token that fails)",
  TransferFailed: () => "the token refused the transfer",
  InsufficientFunds: (a) => `the sender does not hold enough to pay for this transaction${a.detail ? ` (${a.detail})` : ""}`,
};

/** The sentence for `errorName` with `args` as the ABI item `item` declares them. */
export function describeRevert(item: AbiError | undefined, errorName: string, args: readonly unknown[], context: DescribeContext = {}): DecodedRevert {
  const inputs = item?.inputs ?? [];
  const named: Record<string, unknown> = {};
  const formatted: Formatted = {};
  const bounds = boundsKind(inputs);
  args.forEach((value, i) => {
    const input = inputs[i] ?? { type: typeof value === "bigint" ? "uint256" : "string", name: `arg${i}` };
    const key = input.name && input.name.length > 0 ? input.name : `arg${i}`;
    named[key] = value;
    formatted[key] = formatArg(errorName, input, value, context, bounds);
  });
  const template = TEMPLATES[errorName];
  let body = template ? template(formatted) : words(errorName);
  if (!template && args.length > 0) body += ` (${Object.entries(formatted).map(([k, v]) => `${k} ${v}`).join(", ")})`;
  return { errorName, args, named, sentence: `${errorName}: ${body}` };
}

/*//////////////////////////////////////////////////////////////
                              DECODING
//////////////////////////////////////////////////////////////*/

const INSUFFICIENT_FUNDS = /insufficient funds|doesn't have enough funds|exceeds (the )?(transaction )?sender('s)? (account )?balance/i;

/** The raw revert data somewhere in `error`'s cause chain (Hardhat puts it on its innermost error). */
function rawData(error: unknown): Hex[] {
  const found: Hex[] = [];
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e instanceof ContractFunctionRevertedError && e.raw) found.push(e.raw);
    const { data } = e as { data?: unknown };
    const candidates = [data, (data as { data?: unknown } | undefined)?.data];
    for (const c of candidates) if (typeof c === "string" && isHex(c) && c.length >= 10) found.push(c);
  }
  return found;
}

/**
 * The custom error in a failed call, or an insufficient-funds refusal, with its sentence; `undefined` when the
 * error is no revert (a network failure, a bad argument).
 */
export function decodeRevert(error: unknown, context: DescribeContext = {}): DecodedRevert | undefined {
  if (error instanceof ContractRevertError) return error.revert;
  if (error instanceof ViemBaseError) {
    const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError);
    if (reverted instanceof ContractFunctionRevertedError && reverted.data?.errorName) {
      const item = revertAbi.find((i) => i.name === reverted.data!.errorName && i.inputs.length === (reverted.data!.args?.length ?? 0));
      return describeRevert(item ?? (reverted.data.abiItem as AbiError), reverted.data.errorName, reverted.data.args ?? [], context);
    }
  }
  for (const raw of rawData(error)) {
    try {
      const decoded = decodeErrorResult({ abi: revertAbi as Abi, data: raw });
      if (decoded.errorName === "Error" || decoded.errorName === "Panic") {
        return { errorName: decoded.errorName, args: decoded.args ?? [], named: { reason: decoded.args?.[0] }, sentence: `${decoded.errorName}: ${argText(decoded.args?.[0])}` };
      }
      return describeRevert(decoded.abiItem as AbiError, decoded.errorName, decoded.args ?? [], context);
    } catch {
      continue;
    }
  }
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const text = `${(e as { details?: string }).details ?? ""} ${e.message}`;
    if (INSUFFICIENT_FUNDS.test(text) || e.name === "InsufficientFundsError") {
      const detail = /max upfront cost is: (\d+) and the sender's balance is: (\d+)/.exec(text);
      const units = context.asset ?? ETH_UNIT;
      const args = detail ? [BigInt(detail[1]!), BigInt(detail[2]!)] : [];
      const formatted = detail ? `it costs up to ${formatAmount(args[0]!, units)} and the balance is ${formatAmount(args[1]!, units)}` : "";
      return {
        errorName: "InsufficientFunds",
        args,
        named: detail ? { cost: args[0], balance: args[1] } : {},
        sentence: `InsufficientFunds: ${TEMPLATES.InsufficientFunds!({ detail: formatted })}`,
      };
    }
  }
  // A revert with no data at all (issue 28 item 9): what a contract without this function (or an account with no
  // code) does; said as such instead of an empty reason.
  if (error instanceof ViemBaseError) {
    const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError);
    const call = error.walk((e) => e instanceof ContractFunctionExecutionError) as ContractFunctionExecutionError | null;
    const raw = reverted instanceof ContractFunctionRevertedError ? reverted.raw : undefined;
    if (reverted instanceof ContractFunctionRevertedError && (raw === undefined || raw === "0x") && !reverted.reason) {
      const where = call ? `${call.contractAddress ?? "the contract"}` : "the contract";
      const fn = call?.functionName ? ` ${call.functionName}` : "";
      return {
        errorName: "EmptyRevert",
        args: [],
        named: {},
        sentence: `EmptyRevert: ${where} reverted${fn} without any reason; it is most likely not the contract this command expects (check --escrow, --gig-escrow, --registry or --dispute-manager and the deployment record)`,
      };
    }
  }
  return undefined;
}

/** A known asset's units: ETH for the zero address, the caller's table otherwise. */
export function unitsOf(asset: Address | undefined, known: Record<string, AssetUnit> = {}): AssetUnit | undefined {
  if (asset === undefined) return undefined;
  if (BigInt(asset) === 0n) return ETH_UNIT;
  return known[asset.toLowerCase()];
}
