/**
 * A small seeded pseudo-random generator (mulberry32) for property-based tests: the same seed always
 * yields the same sequence, so a failing run is reproduced by re-running its seed.
 */

export type Prng = {
  readonly seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [lo, hi] (both inclusive; |hi - lo| < 2^32). */
  int(lo: number, hi: number): number;
  /** A bigint in [lo, hi] (both inclusive), uniform enough for tests at any width. */
  bigint(lo: bigint, hi: bigint): bigint;
  /** True with probability `p`. */
  chance(p: number): boolean;
  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T;
  /** One key chosen with probability proportional to its (non-negative) weight; at least one must be > 0. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K;
};

export function mulberry32(seed: number): Prng {
  let state = seed >>> 0;
  const u32 = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
  const prng: Prng = {
    seed: seed >>> 0,
    next: () => u32() / 2 ** 32,
    int(lo, hi) {
      if (hi < lo) throw new RangeError(`empty range [${lo}, ${hi}]`);
      return lo + Math.floor(prng.next() * (hi - lo + 1));
    },
    bigint(lo, hi) {
      if (hi < lo) throw new RangeError(`empty range [${lo}, ${hi}]`);
      const span = hi - lo + 1n;
      let r = 0n;
      // 64 extra bits beyond the span keep the modulo bias negligible.
      for (let bits = 0n; 1n << bits < span << 64n; bits += 32n) r = (r << 32n) | BigInt(u32());
      return lo + (r % span);
    },
    chance: (p) => prng.next() < p,
    pick(items) {
      if (items.length === 0) throw new RangeError("pick from an empty array");
      return items[prng.int(0, items.length - 1)]!;
    },
    weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
      const entries = (Object.entries(weights) as [K, number][]).filter(([, w]) => w > 0);
      const total = entries.reduce((sum, [, w]) => sum + w, 0);
      if (entries.length === 0) throw new RangeError("no positive weight");
      let r = prng.next() * total;
      for (const [key, w] of entries) {
        r -= w;
        if (r < 0) return key;
      }
      return entries[entries.length - 1]![0];
    },
  };
  return prng;
}

/** The seed in environment variable `name` (a run reproduces a failure), or a fresh one from the clock and pid. */
export function seedFrom(name: string): number {
  const given = process.env[name];
  return given !== undefined ? Number(given) >>> 0 : (Date.now() ^ (process.pid << 12)) >>> 0;
}
