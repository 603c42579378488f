/**
 * Follows the GasEscrow's events from a durable cursor. Every batch of blocks is handed to the handler
 * and only then is the cursor advanced, so after a crash or a restart the follower resumes with the first
 * block it had not fully processed: nothing is missed, and a handler may see a batch twice (handlers are
 * idempotent: they record state, they do not count).
 */
import { parseEventLogs, type Address, type Hash, type PublicClient } from "viem";

import { gasEscrowAbi } from "./escrow";
import type { ChannelStore } from "./store/store";

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
  /** Blocks to stay behind the head, against reorgs; 0 on a devnet. */
  confirmations?: bigint;
  /** Most blocks per `eth_getLogs` query. */
  batchBlocks?: bigint;
  /** Poll interval of `start()`. */
  pollMs?: number;
  onEvents: (events: EscrowEvent[]) => Promise<void>;
  onError?: (error: unknown) => void;
};

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

  async #catchUp(generation: number): Promise<bigint> {
    const { publicClient, escrow, store, name, confirmations = 0n, batchBlocks = 2_000n, onEvents } = this.parameters;
    const head = (await publicClient.getBlockNumber()) - confirmations;
    let cursor = this.cursor;
    while (cursor < head && generation === this.#generation) {
      const fromBlock = cursor + 1n;
      const toBlock = fromBlock + batchBlocks - 1n < head ? fromBlock + batchBlocks - 1n : head;
      const logs = await publicClient.getLogs({ address: escrow, fromBlock, toBlock });
      const events = parseEventLogs({ abi: gasEscrowAbi, logs, strict: true }) as EscrowEvent[];
      if (events.length > 0) await onEvents(events);
      await store.setCursor(name, toBlock);
      cursor = toBlock;
    }
    return cursor;
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
      if (generation === this.#generation) this.#timer = setTimeout(tick, this.parameters.pollMs ?? 250);
    };
    void tick();
  }

  async stop(): Promise<void> {
    this.#generation++;
    if (this.#timer) clearTimeout(this.#timer);
    while (this.#running) await this.#running.catch(() => undefined);
  }
}
