/**
 * The shell behind the control API's `streams` topic (issue 32, decision 0037): it follows the stream journal of
 * every milestone stream (v4 channel) in the API's store, reading only the bytes appended since the last poll, and
 * publishes one event per thing the Flow Controller did — `ticket`, `proof`, `sample`, `pause` (channel-client/node/stream-view.ts
 * makes them). The journal is the source whether the stream runs in this process or in `ioi milestones stream` on
 * the same store: every entry is fsynced before the controller goes on, so an event is never about something that is
 * not durable. Nothing is replayed to a new subscriber (`streams.get` has the history): a journal's bytes present
 * when the watch first sees it count as read, except for a stream opened after the server started, whose journal is
 * read from its first line.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";

import type { Hex } from "viem";

import { tranchePriceOf } from "../core/terms";
import { journalEntriesOf, StreamJournal } from "../node/stream-journal";
import { streamEventsOf } from "../node/stream-view";
import type { ChannelStore } from "../store/store";
import type { SubscriptionHub } from "./subscriptions";

/** Most bytes read from one journal in one poll (a pause entry carries a repository of at most 1 MiB, escaped). */
const MAX_READ = 16 << 20;

export type StreamWatchParameters = { store: ChannelStore; hub: SubscriptionHub; dir: string; pollMs: number; onError?: (error: unknown) => void };

export class StreamWatch {
  readonly #p: StreamWatchParameters;
  /** Journal file → bytes already read (complete lines only). */
  readonly #offsets = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #tick: Promise<void> = Promise.resolve();

  constructor(parameters: StreamWatchParameters) {
    this.#p = parameters;
  }

  /** Marks what the journals hold now as read, then polls every `pollMs`. */
  start(): void {
    for (const { file } of this.#journals()) this.#offsets.set(file, this.#size(file));
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#tick;
  }

  /** One poll, now. */
  poll(): Promise<void> {
    this.#tick = this.#tick.then(() => this.#poll()).catch((error: unknown) => this.#p.onError?.(error));
    return this.#tick;
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.poll().finally(() => this.#schedule()), this.#p.pollMs);
    this.#timer.unref();
  }

  #journals(): { sessionId: Hex; file: string; price: bigint }[] {
    return this.#p.store
      .listChannels({ role: "payer" })
      .flatMap((c) => (c.pricing.version === "4" ? [{ sessionId: c.sessionId, file: StreamJournal.fileOf(this.#p.dir, c.sessionId), price: tranchePriceOf(c.pricing) }] : []));
  }

  #size(file: string): number {
    try {
      const fd = openSync(file, "r");
      try {
        return fstatSync(fd).size;
      } finally {
        closeSync(fd);
      }
    } catch {
      return 0;
    }
  }

  async #poll(): Promise<void> {
    if (this.#stopped) return;
    const publish = this.#p.hub.count("streams") > 0;
    for (const { sessionId, file, price } of this.#journals()) {
      let fd: number;
      try {
        fd = openSync(file, "r");
      } catch {
        continue; // no journal (yet)
      }
      try {
        const size = fstatSync(fd).size;
        let offset = this.#offsets.get(file) ?? 0;
        if (size < offset) offset = size; // a torn tail was cut off by the writer
        if (size === offset) {
          this.#offsets.set(file, offset);
          continue;
        }
        const buffer = Buffer.alloc(Math.min(size - offset, MAX_READ));
        const read = readSync(fd, buffer, 0, buffer.length, offset);
        const end = buffer.subarray(0, read).lastIndexOf(0x0a) + 1;
        if (end === 0) continue; // a line still being written
        const { entries } = journalEntriesOf(buffer.subarray(0, end).toString("utf8"), file);
        this.#offsets.set(file, offset + end);
        if (publish) for (const event of streamEventsOf(sessionId, price, entries)) this.#p.hub.publish("streams", event);
      } finally {
        closeSync(fd);
      }
    }
  }
}
