/**
 * How amounts and times read, in one module for every sentence the package writes — the CLI's lines, the
 * revert decoder's sentences (`chain/revert.ts`), the pre-flight checks of a write (`chain/write.ts`): "0.15
 * LGAS" rather than "150000000000000000 ETH", "2026-11-24T10:00:00Z (in 1 h 59 min)" rather than raw unix
 * seconds. `--json` output keeps raw base units and unix seconds as decimal strings; only readable text
 * uses these.
 */
import { formatUnits, zeroAddress, type Address } from "viem";

/** An asset as readable text names it: its symbol and decimals (ETH: 18). */
export type AssetUnit = { symbol: string; decimals: number };

export const ETH_UNIT: AssetUnit = { symbol: "ETH", decimals: 18 };

/** The native asset is the zero address throughout the contracts. */
export const isNative = (asset: Address): boolean => BigInt(asset) === 0n;

/** The zero address reads as "ETH"; a token by its address (`assetUnitOf` in channel-client/cli/common.ts reads its symbol). */
export const NATIVE = zeroAddress;

/**
 * `amount` base units in the asset's unit with its symbol: 5000n wei is "0.000000000000005 ETH",
 * 5n * 10n ** 18n of an 18-decimal LGAS is "5 LGAS"; with no known unit, "5000 base units". Exact: no
 * rounding, no scientific notation.
 */
export function formatAmount(amount: bigint, unit?: AssetUnit): string {
  if (!unit) return `${amount} base units`;
  return `${formatUnits(amount, unit.decimals)} ${unit.symbol}`;
}

/** Like {@link formatAmount} (ETH by default), adding the base units when the amount is not a whole number of units. */
export function formatAmountWithBase(amount: bigint, unit: AssetUnit = ETH_UNIT): string {
  const readable = formatAmount(amount, unit);
  const base = unit.symbol === "ETH" ? "wei" : "base units";
  return amount !== 0n && amount % 10n ** BigInt(unit.decimals) !== 0n ? `${readable} (${amount} ${base})` : readable;
}

/** Unix seconds as an ISO date and time (UTC, whole seconds): "2026-11-24T10:00:00Z". */
export function formatDate(seconds: bigint): string {
  if (seconds < 0n || seconds > 8_640_000_000_000n) return `unix time ${seconds}`;
  return new Date(Number(seconds) * 1000).toISOString().replace(/\.000Z$/, "Z");
}

/** "1 d 2 h", "1 h 59 min", "1 min 30 s", "42 s": the two largest units of a duration in seconds. */
export function formatDuration(seconds: bigint): string {
  let s = seconds < 0n ? -seconds : seconds;
  const parts: string[] = [];
  for (const [unit, size] of [["d", 86_400n], ["h", 3_600n], ["min", 60n], ["s", 1n]] as const) {
    if (s >= size || (unit === "s" && parts.length === 0)) {
      parts.push(`${s / size} ${unit}`);
      s %= size;
    }
    if (parts.length === 2) break;
  }
  return parts.join(" ");
}

/** "in 1 h 59 min", "3 min ago" or "now": a moment against the chain's clock. */
export function formatRelative(at: bigint, now: bigint): string {
  if (at === now) return "now";
  return at > now ? `in ${formatDuration(at - now)}` : `${formatDuration(now - at)} ago`;
}

/**
 * A moment as readable text shows it: its date and how far it is from `now` (the chain's latest block;
 * default the wall clock): "2026-11-24T10:00:00Z (in 1 h 59 min)".
 */
export function formatMoment(at: bigint, now: bigint = BigInt(Math.floor(Date.now() / 1000))): string {
  return `${formatDate(at)} (${formatRelative(at, now)})`;
}

/** 1 gwei and 0.001 ETH in wei: where {@link formatAmountAdaptive} changes unit. */
const GWEI = 10n ** 9n;
const MILLI_ETH = 10n ** 15n;

/**
 * `amount` base units in the unit that reads best, exactly (no rounding, ever): ETH below 1 gwei in wei
 * ("8000 wei"), below 0.001 ETH in gwei ("15 gwei", "1.000000001 gwei"), else in ETH ("0.25 ETH"); a token
 * (LGAS for bonds) always in its own unit with its own decimals ("-25 LGAS"). Negative amounts keep their
 * sign. This is what the operator page shows (decision 0024): a micro-payment of 8000 wei must never read
 * as "0 ETH".
 */
export function formatAmountAdaptive(amount: bigint, unit: AssetUnit = ETH_UNIT): string {
  if (unit.symbol !== ETH_UNIT.symbol || unit.decimals !== ETH_UNIT.decimals) return formatAmount(amount, unit);
  const size = amount < 0n ? -amount : amount;
  if (size < GWEI) return `${amount} wei`;
  if (size < MILLI_ETH) return `${formatUnits(amount, 9)} gwei`;
  return formatAmount(amount, ETH_UNIT);
}
