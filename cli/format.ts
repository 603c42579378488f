/**
 * How `ioi` prints amounts and times: one module, so every command says "0.15 LGAS" rather than
 * "150000000000000000 ETH", and "2026-11-24T03:00:00.000Z (in 1 h 0 min)" rather than raw unix seconds.
 * `--json` output keeps raw base units and unix seconds as decimal strings; only the readable lines use these.
 */
import { formatUnits, zeroAddress, type Address } from "viem";

/** An asset as the readable lines name it: its symbol and decimals (ETH: 18). */
export type AssetUnit = { symbol: string; decimals: number };

export const ETH_UNIT: AssetUnit = { symbol: "ETH", decimals: 18 };

/** The native asset is the zero address throughout the contracts. */
export const isNative = (asset: Address): boolean => BigInt(asset) === 0n;

/**
 * `amount` base units in the asset's unit with its symbol: 5000n wei is "0.000000000000005 ETH",
 * 5n * 10n ** 18n of an 18-decimal LGAS is "5 LGAS". Exact: no rounding, no scientific notation.
 */
export function formatAmount(amount: bigint, unit: AssetUnit = ETH_UNIT): string {
  return `${formatUnits(amount, unit.decimals)} ${unit.symbol}`;
}

/** Like {@link formatAmount}, adding the base units when the amount is not a whole number of units. */
export function formatAmountWithBase(amount: bigint, unit: AssetUnit = ETH_UNIT): string {
  const readable = formatAmount(amount, unit);
  const base = unit.symbol === "ETH" ? "wei" : "base units";
  return amount !== 0n && amount % 10n ** BigInt(unit.decimals) !== 0n ? `${readable} (${amount} ${base})` : readable;
}

/** Unix seconds as an ISO date and time (UTC). */
export function formatDate(seconds: bigint): string {
  if (seconds < 0n || seconds > 8_640_000_000_000n) return `unix time ${seconds}`;
  return new Date(Number(seconds) * 1000).toISOString();
}

/** A duration in seconds: "1 d 2 h 3 min", "45 s", "0 s". */
export function formatDuration(seconds: bigint): string {
  const s = seconds < 0n ? -seconds : seconds;
  const d = s / 86_400n;
  const h = (s % 86_400n) / 3_600n;
  const m = (s % 3_600n) / 60n;
  const parts = [d ? `${d} d` : "", h ? `${h} h` : "", m ? `${m} min` : ""].filter(Boolean);
  return parts.length ? parts.join(" ") : `${s % 60n} s`;
}

/** "in 1 h 0 min" or "3 min ago": a deadline against the chain's clock. */
export function formatRelative(at: bigint, now: bigint): string {
  return at >= now ? `in ${formatDuration(at - now)}` : `${formatDuration(now - at)} ago`;
}

/** A moment as the readable lines show it: its date and how far it is from `now` (the chain's clock). */
export function formatMoment(at: bigint, now: bigint): string {
  return `${formatDate(at)} (${formatRelative(at, now)})`;
}

/** The zero address reads as "ETH"; a token by its address (see {@link assetUnitOf} for its symbol). */
export const NATIVE = zeroAddress;
