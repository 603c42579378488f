/**
 * The page's money (issue 28 item 10): every amount goes out with its asset and the text the page shows, in
 * the asset's own unit with adaptive precision (`formatAmountAdaptive`, shared with the CLI in
 * channel-client/core/format.ts) — wei, gwei or ETH for ETH, LGAS for bonds — and a resolved case's balance changes are
 * read from the transaction that enforced it, burns included, so each row names the ledger a reader can check
 * it against (decision 0024).
 */
import { erc20Abi, getAddress, isAddressEqual, parseEventLogs, zeroAddress, type Address, type Hex, type PublicClient } from "viem";

import { providerRegistryAbi } from "../abi/ProviderRegistry";
import { disputeManagerAbi } from "../../arbitration/runner/chain";
import { FINAL_VERDICTS, VERDICT_CODES } from "../../arbitration/lanes/resolution";
import { gasEscrowAbi } from "../chain/escrow";
import { gigEscrowAbi } from "../chain/gig";
import { ETH_UNIT, formatAmountAdaptive, isNative, type AssetUnit } from "../core/format";

/** Where burnt shares go (`BURN_ADDRESS` of the DisputeManager and the ProviderRegistry). */
export const BURN_ADDRESS: Address = "0x000000000000000000000000000000000000dEaD";

/** An amount as the page receives it: base units (decimal string), the asset, its unit and the text shown. */
export type Money = { amount: string; asset: Address; symbol: string; decimals: number; text: string };

export function money(amount: bigint, asset: Address, unit: AssetUnit): Money {
  return { amount: amount.toString(), asset, symbol: unit.symbol, decimals: unit.decimals, text: formatAmountAdaptive(amount, unit) };
}

/** `IDisputeManager.Verdict` by code, named as the CLI names it (`FINAL_VERDICTS`): 0 is "none". */
export const VERDICT_NAMES: Record<number, string> = { 0: "none", ...Object.fromEntries(FINAL_VERDICTS.map((v) => [VERDICT_CODES[v], v])) };

export const verdictName = (code: number): string => VERDICT_NAMES[code] ?? `verdict ${code}`;

const units = new WeakMap<PublicClient, Map<string, AssetUnit>>();

/** ETH for the zero address, else the token's symbol and decimals (read once per client). */
export async function unitOf(publicClient: PublicClient, asset: Address): Promise<AssetUnit> {
  if (isNative(asset)) return ETH_UNIT;
  let known = units.get(publicClient);
  if (!known) units.set(publicClient, (known = new Map()));
  const cached = known.get(asset.toLowerCase());
  if (cached) return cached;
  const [symbol, decimals] = await Promise.all([
    publicClient.readContract({ address: asset, abi: erc20Abi, functionName: "symbol" }).catch(() => undefined),
    publicClient.readContract({ address: asset, abi: erc20Abi, functionName: "decimals" }).catch(() => undefined),
  ]);
  const unit = symbol !== undefined && decimals !== undefined ? { symbol, decimals } : { symbol: `base units of ${asset}`, decimals: 0 };
  known.set(asset.toLowerCase(), unit);
  return unit;
}

/**
 * Which balance a change moves, so it can be checked against the chain: `wallet` — the account's own balance
 * of the asset (ETH or ERC-20 `balanceOf`); `bond` — its bond in the ProviderRegistry (`bondOf(role, account)`,
 * active + pending); `claimable` — what the DisputeManager credits it (`claimable`); `channel` — taken off a
 * session's recorded payout, paid to the funder when the channel finalises.
 */
export type Ledger = "wallet" | "bond" | "claimable" | "channel";

export type BalanceChange = { party: string; account: Address; ledger: Ledger; role?: "provider" | "arbitrator"; change: Money; what: string };

export type ResolutionChangesParameters = {
  publicClient: PublicClient;
  disputeManager: Address;
  caseId: Hex;
  kind: "gig" | "session";
  subjectId: Hex;
  challenger: Address;
  respondent: Address;
  /** The session's funder (`Case.related`). */
  related: Address;
  asset: Address;
  /** The transaction that emitted `CaseResolved`. */
  transactionHash: Hex;
};

/** Every balance change the resolving transaction made, in the order it made them; zero changes are left out. */
export async function resolutionChanges(p: ResolutionChangesParameters): Promise<BalanceChange[]> {
  const { publicClient, disputeManager } = p;
  const [registry, gigEscrow, gasEscrow, receipt] = await Promise.all([
    publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "registry" }),
    publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "gigEscrow" }),
    publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "gasEscrow" }),
    publicClient.getTransactionReceipt({ hash: p.transactionHash }),
  ]);
  const from = (address: Address) => receipt.logs.filter((log) => isAddressEqual(log.address, address));
  const bondToken = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondToken" });
  const [assetUnit, bondUnit] = await Promise.all([unitOf(publicClient, p.asset), unitOf(publicClient, bondToken)]);
  const inAsset = (amount: bigint) => money(amount, p.asset, assetUnit);
  const inBond = (amount: bigint) => money(amount, bondToken, bondUnit);
  const changes: BalanceChange[] = [];
  const add = (change: BalanceChange) => {
    if (change.change.amount !== "0") changes.push(change);
  };

  const dm = parseEventLogs({ abi: disputeManagerAbi, logs: from(disputeManager) });
  const resolved = dm.find((log) => log.eventName === "CaseResolved" && log.args.caseId === p.caseId);
  if (!resolved || resolved.eventName !== "CaseResolved") return changes;
  const deferred = (account: Address, amount: bigint) =>
    dm.some((log) => log.eventName === "PayoutDeferred" && isAddressEqual(log.args.account, account) && log.args.amount === amount);

  // Bond tokens first: slashes of the respondent's SLA bond (to the challenger, a share burnt), a settled
  // session's refund taken from the provider's bond (to the funder), penalties of overturned or absent arbitrators.
  for (const log of parseEventLogs({ abi: providerRegistryAbi, eventName: "Slashed", logs: from(registry) })) {
    const a = log.args;
    const role = a.role === 0 ? ("provider" as const) : ("arbitrator" as const);
    add({ party: role === "provider" ? "respondent's SLA bond" : "arbitrator's stake", account: getAddress(a.account), ledger: "bond", role, change: inBond(-a.amount), what: "slashed" });
    if (!isAddressEqual(a.beneficiary, BURN_ADDRESS)) {
      const party = isAddressEqual(a.beneficiary, p.challenger) ? "challenger" : isAddressEqual(a.beneficiary, p.related) ? "funder" : "beneficiary";
      add({ party, account: getAddress(a.beneficiary), ledger: "wallet", change: inBond(a.toBeneficiary), what: "the slash, less its burnt share" });
    }
    const burnt = isAddressEqual(a.beneficiary, BURN_ADDRESS) ? a.burned + a.toBeneficiary : a.burned;
    add({ party: "burn", account: BURN_ADDRESS, ledger: "wallet", change: inBond(burnt), what: "burnt share of the slash" });
  }

  // The subject: a gig pays out at once; a live session's refund comes off the provider's recorded payout.
  if (p.kind === "gig") {
    const gigId = BigInt(p.subjectId);
    const settled = parseEventLogs({ abi: gigEscrowAbi, logs: from(gigEscrow) });
    const gigDeferred = (account: Address, amount: bigint) =>
      settled.some((log) => log.eventName === "PayoutDeferred" && isAddressEqual(log.args.account, account) && log.args.amount === amount);
    for (const log of settled) {
      if (log.eventName !== "GigSettled" || BigInt(log.args.gigId) !== gigId) continue;
      const gig = await publicClient.readContract({ address: gigEscrow, abi: gigEscrowAbi, functionName: "gigOf", args: [gigId] });
      const funder = await publicClient.readContract({ address: gigEscrow, abi: gigEscrowAbi, functionName: "funderOf", args: [gigId] });
      // A payout the token refused is credited in the GigEscrow instead (claimable there).
      const ledger = (account: Address, amount: bigint): Ledger => (gigDeferred(account, amount) ? "claimable" : "wallet");
      add({ party: "client (refund from the gig escrow)", account: getAddress(funder), ledger: ledger(funder, log.args.toClient), change: inAsset(BigInt(log.args.toClient)), what: "refunded from the gig" });
      add({ party: "provider (rest of the bounty)", account: getAddress(gig.provider), ledger: ledger(gig.provider, log.args.toProvider), change: inAsset(BigInt(log.args.toProvider)), what: "paid from the gig" });
    }
  } else {
    for (const log of parseEventLogs({ abi: gasEscrowAbi, eventName: "ChannelReleased", logs: from(gasEscrow) })) {
      if (log.args.sessionId !== p.subjectId) continue;
      add({ party: "funder (refund from the channel)", account: getAddress(p.related), ledger: "channel", change: inAsset(BigInt(log.args.refund)), what: "taken off the provider's payout; paid to the funder when the channel finalises" });
    }
  }

  // The case's bonds, in the case's asset: the winner's share, the burnt share, fees credited to coherent signers.
  const a = resolved.args;
  const paid = (account: Address, amount: bigint): Ledger => (deferred(account, amount) ? "claimable" : "wallet");
  add({ party: "challenger", account: getAddress(p.challenger), ledger: paid(p.challenger, a.toChallenger), change: inAsset(a.toChallenger), what: "bonds back from the case" });
  add({ party: "respondent", account: getAddress(p.respondent), ledger: paid(p.respondent, a.toRespondent), change: inAsset(a.toRespondent), what: "bonds back from the case" });
  add({ party: "burn", account: BURN_ADDRESS, ledger: paid(BURN_ADDRESS, a.burned), change: inAsset(a.burned), what: "burnt share of the losing bond" });
  for (const log of dm) {
    if (log.eventName !== "ArbitrationFeeEarned" || log.args.caseId !== p.caseId) continue;
    add({ party: "arbitrator", account: getAddress(log.args.arbitrator), ledger: "claimable", change: inAsset(log.args.amount), what: "fee for a coherent signature (claimable)" });
  }
  return changes;
}

/** Who a gig's provider is, as far as the chain says: nobody yet, a tentative taker, or a bound provider. */
export type GigProvider = { address: Address | null; standing: "open to any bonded provider" | "tentative" | "confirmed" | "named" };

export async function gigProviderOf(publicClient: PublicClient, gigEscrow: Address, gigId: bigint, fundedProvider: Address, provider: Address): Promise<GigProvider> {
  if (!isAddressEqual(fundedProvider, zeroAddress)) return { address: getAddress(provider), standing: "named" };
  if (isAddressEqual(provider, zeroAddress)) return { address: null, standing: "open to any bonded provider" };
  const tentative = await publicClient.readContract({ address: gigEscrow, abi: gigEscrowAbi, functionName: "isProviderTentative", args: [gigId] });
  return { address: getAddress(provider), standing: tentative ? "tentative" : "confirmed" };
}
