/**
 * Follows the GasEscrow's events from a durable cursor. Every batch of blocks is handed to the handler
 * and only then is the cursor advanced, so after a crash or a restart the follower resumes with the first
 * block it had not fully processed: nothing is missed, and a handler may see a batch twice (handlers are
 * idempotent: they record state, they do not count).
 *
 * Safe on a public chain (decision 0019): it starts from the deployment block, reads only up to
 * `head - confirmations` (a reorg shallower than that never reaches what it handled), pages `eth_getLogs`
 * in bounded ranges, backs off on RPC errors and rate limits, and notices when the block it stopped at was
 * replaced (a reorg deeper than the confirmations): it then rewinds and re-delivers (handlers are idempotent).
 */
import { parseEventLogs, type Address, type Hash, type PublicClient } from "viem";

import { getLogsPaged, withBackoff, DEVNET_READING, type RetryOptions } from "./logs";

import { gasEscrowAbi } from "./escrow";
import type { ChannelStore } from "../store/store";

type DecodedLogs = ReturnType<typeof parseEventLogs<typeof gasEscrowAbi>>;

/** A decoded GasEscrow event with where it happened. */
export type EscrowEvent = DecodedLogs[number] & { blockNumber: bigint; transactionHash: Hash };

export type ChainFollowerParameters = {
  publicClient: PublicClient;
  escrow: Address;
  /** Where the cursor lives. */
  store: Pick<ChannelStore, "getCursor" | "setCursor">;
  /** Cursor name: one per follower (e.g. "provider:0xabc…"), so followers do not share progress. */
  name: string;
  /** Block to start from when no cursor is stored yet (e.g. the escrow's deployment block). */
  fromBlock: bigint;
  /** Blocks to stay behind the head, against reorgs (default 0: a devnet; see `chainReading`). */
  confirmations?: bigint;
  /** Most blocks per `eth_getLogs` query (default 2,000; halved when the node refuses a range). */
  batchBlocks?: bigint;
  /** Poll interval of `start()` (default 250 ms: a devnet; see `chainReading`). */
  pollMs?: number;
  /** Back-off on RPC errors and rate limits (default: a devnet's). */
  retry?: RetryOptions;
  /** Blocks to go back when the block the follower stopped at was replaced (default 4 × confirmations, at least 16). */
  reorgRewind?: bigint;
  onEvents: (events: EscrowEvent[]) => Promise<void>;
  onError?: (error: unknown) => void;
  /** A reorg deeper than `confirmations` replaced block `at`; the follower goes back to `rewoundTo`. */
  onReorg?: (reorg: { at: bigint; rewoundTo: bigint }) => void;
};

/** Thrown inside a page to end a run that `stop()` cancelled. */
const STOPPED = Symbol("stopped");

export class ChainFollower {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  /**
   * Bumped by `stop()`: a run or poll loop begun before it ends at its next batch boundary. A generation
   * (not a sticky flag) so that `catchUp()` and `start()` work again after a `stop()`.
   */
  #generation = 0;

  constructor(readonly parameters: ChainFollowerParameters) {}

  /** The last block fully processed (the stored cursor, or the block before `fromBlock`). */
  get cursor(): bigint {
    return this.parameters.store.getCursor(this.parameters.name) ?? this.parameters.fromBlock - 1n;
  }

  /**
   * Processes every block from the cursor to the head (less `confirmations`) and returns the new cursor.
   * Calls never overlap: a second call waits for the first.
   */
  async catchUp(): Promise<bigint> {
    const generation = this.#generation;
    while (this.#running) await this.#running.catch(() => undefined);
    const run = this.#catchUp(generation);
    this.#running = run;
    try {
      return await run;
    } finally {
      this.#running = undefined;
    }
  }

  /** The hash of the block the cursor points at, as of the last run: a change means a deep reorg. */
  #cursorHash: { block: bigint; hash: Hash } | undefined;

  async #catchUp(generation: number): Promise<bigint> {
    const { publicClient, escrow, store, name, confirmations = 0n, batchBlocks = 2_000n, onEvents } = this.parameters;
    const retry = this.parameters.retry ?? DEVNET_READING.retry;
    const head = (await withBackoff(() => publicClient.getBlockNumber(), retry)) - confirmations;
    await this.#checkReorg(retry);
    let cursor = this.cursor;
    if (cursor >= head) return cursor;
    try {
      await getLogsPaged({
        publicClient,
        address: escrow,
        fromBlock: cursor + 1n,
        toBlock: head,
        maxBlockRange: batchBlocks,
        retry,
        onPage: async ({ toBlock, logs }) => {
          if (generation !== this.#generation) throw STOPPED;
          const events = parseEventLogs({ abi: gasEscrowAbi, logs, strict: true }) as EscrowEvent[];
          if (events.length > 0) await onEvents(events);
          await store.setCursor(name, toBlock);
          cursor = toBlock;
        },
      });
    } catch (error) {
      if (error !== STOPPED) throw error;
    }
    if (cursor >= 0n) {
      const block = await withBackoff(() => publicClient.getBlock({ blockNumber: cursor }), retry);
      this.#cursorHash = { block: cursor, hash: block.hash };
    }
    return cursor;
  }

  /** Rewinds the cursor when the block it points at is no longer the one this follower handled. */
  async #checkReorg(retry: RetryOptions): Promise<void> {
    const remembered = this.#cursorHash;
    if (!remembered || remembered.block !== this.cursor) return;
    const block = await withBackoff(() => this.parameters.publicClient.getBlock({ blockNumber: remembered.block }), retry).catch(() => undefined);
    if (block && block.hash === remembered.hash) return;
    const { confirmations = 0n, fromBlock, store, name } = this.parameters;
    const rewind = this.parameters.reorgRewind ?? (confirmations * 4n > 16n ? confirmations * 4n : 16n);
    const floor = fromBlock - 1n;
    const rewoundTo = remembered.block - rewind > floor ? remembered.block - rewind : floor;
    await store.setCursor(name, rewoundTo);
    this.#cursorHash = undefined;
    this.parameters.onReorg?.({ at: remembered.block, rewoundTo });
  }

  /** Polls until `stop()`. Errors go to `onError` and the next poll retries from the same cursor. */
  start(): void {
    const generation = this.#generation;
    const tick = async () => {
      try {
        await this.catchUp();
      } catch (error) {
        this.parameters.onError?.(error);
      }
      if (generation === this.#generation) this.#timer = setTimeout(tick, this.parameters.pollMs ?? DEVNET_READING.pollMs);
    };
    void tick();
  }

  async stop(): Promise<void> {
    this.#generation++;
    if (this.#timer) clearTimeout(this.#timer);
    while (this.#running) await this.#running.catch(() => undefined);
  }
}
