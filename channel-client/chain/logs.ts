/**
 * Reading events the way a hosted RPC on a public chain tolerates: from the deployment block, in bounded
 * block ranges (halved when the node says the range or the result is too large), with bounded exponential
 * back-off on RPC errors and rate limits, and only up to `head - confirmations`.
 */
import type { Address, Log, PublicClient } from "viem";

/** How to read a chain: confirmation depth, `eth_getLogs` range, poll interval and retries. */
export type ChainReading = {
  /** Blocks to stay behind the head: a reorg shallower than this never reaches what was read. */
  confirmations: bigint;
  /** Most blocks per `eth_getLogs` call. */
  maxBlockRange: bigint;
  /** Milliseconds between two polls of a follower. */
  pollMs: number;
  retry: RetryOptions;
};

export type RetryOptions = {
  /** Tries in all (the first call included) before the error is thrown. */
  attempts: number;
  /** First back-off in milliseconds; doubled per retry, with jitter, up to `maxMs`. */
  baseMs: number;
  maxMs: number;
};

/** Public chains: 12 confirmations, 2,000-block pages, a poll every 12 s (about one block), 6 tries. */
export const PUBLIC_CHAIN_READING: ChainReading = {
  confirmations: 12n,
  maxBlockRange: 2_000n,
  pollMs: 12_000,
  retry: { attempts: 6, baseMs: 500, maxMs: 30_000 },
};

/** A local devnet (Hardhat's 31337, Ganache's 1337): no reorgs, so no confirmations, and a fast poll. */
export const DEVNET_READING: ChainReading = {
  confirmations: 0n,
  maxBlockRange: 2_000n,
  pollMs: 250,
  retry: { attempts: 3, baseMs: 50, maxMs: 1_000 },
};

export const DEVNET_CHAIN_IDS: readonly number[] = [31337, 1337];

/**
 * The reading settings for `chainId`, with `IOI_CONFIRMATIONS`, `IOI_LOG_RANGE` and `IOI_POLL_MS` (and
 * then `overrides`) taking precedence over the defaults.
 */
export function chainReading(chainId: number, overrides: Partial<ChainReading> = {}, env: NodeJS.ProcessEnv = process.env): ChainReading {
  const base = DEVNET_CHAIN_IDS.includes(chainId) ? DEVNET_READING : PUBLIC_CHAIN_READING;
  const fromEnv: Partial<ChainReading> = {};
  const whole = (name: string, min: bigint, max: bigint): bigint | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === "") return undefined;
    if (!/^(0|[1-9][0-9]*)$/.test(raw) || BigInt(raw) < min || BigInt(raw) > max) {
      throw new RangeError(`${name} must be a whole number from ${min} to ${max}; received "${raw}".`);
    }
    return BigInt(raw);
  };
  const confirmations = whole("IOI_CONFIRMATIONS", 0n, 10_000n);
  if (confirmations !== undefined) fromEnv.confirmations = confirmations;
  const range = whole("IOI_LOG_RANGE", 1n, 1_000_000n);
  if (range !== undefined) fromEnv.maxBlockRange = range;
  const poll = whole("IOI_POLL_MS", 10n, 3_600_000n);
  if (poll !== undefined) fromEnv.pollMs = Number(poll);
  return { ...base, ...fromEnv, ...overrides, retry: { ...base.retry, ...overrides.retry } };
}

/** An RPC answer saying the block range or the result set is too large: retried with a smaller range. */
export function isRangeError(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const text = `${(e as { details?: string }).details ?? ""} ${e.message}`;
    if (/block range|range (is )?too (large|wide)|too many (results|logs|blocks)|query returned more than|limit exceeded|response size|exceeds? (the )?(max|limit)/i.test(text)) return true;
    if ((e as { code?: unknown }).code === -32005) return true;
  }
  return false;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Calls `fn` until it succeeds or `attempts` tries have failed, waiting `baseMs · 2^try` (capped at `maxMs`,
 * with up to 25 % jitter) between tries; the last error is thrown.
 */
export async function withBackoff<T>(
  fn: () => Promise<T>,
  options: RetryOptions & { onRetry?: (error: unknown, attempt: number, waitMs: number) => void; shouldRetry?: (error: unknown) => boolean; wait?: (ms: number) => Promise<void> },
): Promise<T> {
  const { attempts, baseMs, maxMs, onRetry, shouldRetry = () => true, wait = sleep } = options;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (attempt >= attempts || !shouldRetry(error)) throw error;
      const backoff = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
      const waitMs = Math.round(backoff * (1 + Math.random() * 0.25));
      onRetry?.(error, attempt, waitMs);
      await wait(Math.min(waitMs, maxMs));
    }
  }
}

export type GetLogsPagedParameters = ReadPagedParameters<Log> & {
  publicClient: PublicClient;
  address: Address | Address[];
};

/** Every log of `address` from `fromBlock` to `toBlock` (inclusive), read page by page (none kept with `onPage`). */
export async function getLogsPaged(parameters: GetLogsPagedParameters): Promise<Log[]> {
  const { publicClient, address } = parameters;
  return readPaged(parameters, (from, to) => publicClient.getLogs({ address, fromBlock: from, toBlock: to }));
}

export type ReadPagedParameters<T> = {
  fromBlock: bigint;
  toBlock: bigint;
  /** Most blocks per call (default 2,000); halved, down to one block, when the node refuses a range. */
  maxBlockRange?: bigint;
  retry?: RetryOptions;
  onRetry?: (error: unknown, attempt: number, waitMs: number) => void;
  /** Called after each page with its range and its items (a follower advances its cursor here). */
  onPage?: (page: { fromBlock: bigint; toBlock: bigint; logs: T[] }) => Promise<void> | void;
  /** Stops after the first page for which this is true (a search that found what it looked for). */
  done?: (itemsSoFar: readonly T[]) => boolean;
};

/**
 * Any range query (`getLogs`, `getContractEvents` with an event and its indexed arguments, …) run the same
 * public-chain-safe way as {@link getLogsPaged}: bounded pages from `fromBlock` to `toBlock` (inclusive), the
 * page halved when the node refuses a range, back-off on other errors; the items of every page in order
 * (none kept with `onPage`).
 */
export async function readPaged<T>(parameters: ReadPagedParameters<NoInfer<T>>, read: (fromBlock: bigint, toBlock: bigint) => Promise<T[]>): Promise<T[]> {
  const { toBlock, onPage, onRetry } = parameters;
  const retry = parameters.retry ?? PUBLIC_CHAIN_READING.retry;
  let range = parameters.maxBlockRange ?? 2_000n;
  if (range < 1n) throw new RangeError("maxBlockRange must be at least one block.");
  const all: T[] = [];
  let from = parameters.fromBlock;
  while (from <= toBlock) {
    const to = from + range - 1n < toBlock ? from + range - 1n : toBlock;
    let items: T[];
    try {
      items = await withBackoff(() => read(from, to), {
        ...retry,
        onRetry,
        shouldRetry: (error) => !(isRangeError(error) && range > 1n),
      });
    } catch (error) {
      if (isRangeError(error) && range > 1n) {
        range = range / 2n;
        continue;
      }
      throw error;
    }
    // With `onPage` the caller consumes each page: nothing is kept, so memory stays bounded by one page.
    if (onPage) await onPage({ fromBlock: from, toBlock: to, logs: items });
    else all.push(...items);
    if (parameters.done?.(all)) break;
    from = to + 1n;
  }
  return all;
}

/**
 * The argument `name` of a decoded event, or undefined when the event has none by that name. viem leaves `args`
 * undefined for an event without inputs (`RolesSealed` before it carried its sealer), so a filter over a
 * contract's mixed events reads arguments through here rather than `name in event.args`.
 */
export function eventArg<T = unknown>(event: { args?: unknown }, name: string): T | undefined {
  const args = event.args;
  return typeof args === "object" && args !== null && name in args ? (args as Record<string, T>)[name] : undefined;
}
