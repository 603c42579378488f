/**
 * Log lines for connections the listener's limits refuse (issue 28 item 5 limits; a flood is mostly these).
 * One line per refused connection would let a flood write the provider's log as fast as it connects — a
 * thousand lines a second, gigabytes a day, and the CPU to format them. Instead the first refusal of a source is
 * logged at once, the rest of the period only counted, and each `flush` (the node calls it once a period) gives
 * one summary line per source that was refused again. A source with nothing left to report is forgotten, so its
 * next refusal is logged at once again; the number of sources remembered is bounded by `maxSources` (the
 * sources past it share one count).
 */
/** The count that sources past `maxSources` share. */
export const OTHER_SOURCES = "other sources";

export class RefusalLog {
  readonly #counts = new Map<string, { refused: number; reason: string }>();

  constructor(readonly maxSources = 10_000) {}

  /** The line to log now for a refusal of `address` (the source's first this period), or undefined to count it. */
  note(address: string, line: string, reason: string): string | undefined {
    const known = this.#counts.get(address);
    if (known) {
      known.refused += 1;
      known.reason = reason;
      return undefined;
    }
    if (this.#counts.size >= this.maxSources) {
      // Past the bound, every further source shares one count (logged once, then summarised like one source).
      const rest = this.#counts.get(OTHER_SOURCES);
      if (rest) {
        rest.refused += 1;
        rest.reason = reason;
        return undefined;
      }
      this.#counts.set(OTHER_SOURCES, { refused: 0, reason });
      return line;
    }
    this.#counts.set(address, { refused: 0, reason });
    return line;
  }

  /** One line per source refused since its first line (or its last summary); forgets the sources with none. */
  flush(periodSeconds: number): { address: string; refused: number; line: string }[] {
    const lines: { address: string; refused: number; line: string }[] = [];
    for (const [address, entry] of this.#counts) {
      if (entry.refused === 0) {
        this.#counts.delete(address);
        continue;
      }
      lines.push({ address, refused: entry.refused, line: `refused ${entry.refused} more connection(s) from ${address} in the last ${periodSeconds} s (last: ${entry.reason})` });
      entry.refused = 0;
    }
    return lines;
  }
}
