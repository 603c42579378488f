/**
 * Where a node's CPU goes per ticket (issue 15: "CPU per ticket per side, with its breakdown"): V8 CPU
 * profiles of the payer and the provider over one streamed window, every sample attributed to one cost
 * centre. A sample belongs to the first frame, walking from the running function up the stack, that a rule
 * claims, so keccak called from a canonical-text helper counts as keccak and a native `JSON.parse` counts
 * as JSON through its caller. The sampling profiler slows the window it measures (by about a fifth here at
 * one sample per millisecond), so what this gives is each centre's share, which the bench applies to the CPU
 * per ticket it measured without the profiler.
 */
/** The parts of a V8 `.cpuprofile` this reads (timestamps in µs of the monotonic clock, as `process.hrtime`). */
export type CpuProfile = {
  nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
};

export const COST_CENTRES = [
  "sign + verify (secp256k1)",
  "keccak",
  "AEAD (sealing)",
  "store (SQLite, fsync)",
  "socket and framing",
  "JSON, canonical text, validation",
  "artifacts (digests, receipt tree)",
  "node logic",
  "runtime (promises, event loop, GC)",
] as const;
export type CostCentre = (typeof COST_CENTRES)[number];

/** Whether `url` is the module `file` (a path under channel-client/, without extension): its source or its build. */
const isModule = (url: string, file: string) => url.endsWith(`/channel-client/${file}.ts`) || url.endsWith(`/channel-client/${file}.js`);

/** First rule matching a frame's URL or function name claims the sample; order matters (see the file comment). */
const RULES: [CostCentre, (url: string, name: string) => boolean][] = [
  ["sign + verify (secp256k1)", (u) => u.includes("/node_modules/secp256k1/") || u.includes("/@noble/curves/") || isModule(u, "core/secp256k1")],
  ["keccak", (u, n) => u.includes("/hash-wasm/") || u.includes("/@noble/hashes/") || isModule(u, "core/keccak") || n.startsWith("wasm-function")],
  ["AEAD (sealing)", (u) => u.startsWith("node:internal/crypto/") || u.includes("/@noble/ciphers/") || isModule(u, "transport/sealing")],
  ["store (SQLite, fsync)", (u, n) => u.includes("/better-sqlite3/") || u.includes("/channel-client/store/") || n === "fdatasync"],
  ["socket and framing", (u) => u.includes("/channel-client/transport/") || u === "node:net" || u.startsWith("node:internal/stream") || u.startsWith("node:internal/net")],
  [
    "JSON, canonical text, validation",
    (u) => u.includes("/canonicalize/") || u.includes("/ajv/") || /\/channel-client\/core\/(canonical|validate|schemas|packets)\.[jt]s$/.test(u) || isModule(u, "node/protocol") || u === "node:internal/encoding",
  ],
  ["artifacts (digests, receipt tree)", (u) => u.includes("/channel-client/core/")],
  ["node logic", (u) => u.includes("/channel-client/node/")],
];

export type Breakdown = {
  /** Sampled main-thread CPU per ticket in the profiled window, µs (idle excluded; the profiler's overhead included). */
  sampledUs: number;
  /** Each cost centre's share of that CPU (the shares sum to 1). */
  shares: Record<CostCentre, number>;
  /** Share of the window the process was idle (waiting on the socket or the disk). */
  idleShare: number;
};

/** Attributes the samples of `profile` that fall in [fromUs, toUs] (monotonic µs) to cost centres, per ticket. */
export function breakdown(profile: CpuProfile, fromUs: number, toUs: number, tickets: number): Breakdown {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const centreOf = new Map<number, CostCentre | "idle">();
  const classify = (id: number): CostCentre | "idle" => {
    const known = centreOf.get(id);
    if (known !== undefined) return known;
    const leaf = byId.get(id)!.callFrame.functionName;
    let centre: CostCentre | "idle" = "runtime (promises, event loop, GC)";
    if (leaf === "(idle)") centre = "idle";
    else if (leaf !== "(garbage collector)" && leaf !== "(program)") {
      search: for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const { url, functionName } = byId.get(at)!.callFrame;
        for (const [name, matches] of RULES) {
          if (matches(url, functionName)) {
            centre = name;
            break search;
          }
        }
      }
    }
    centreOf.set(id, centre);
    return centre;
  };
  const centres = Object.fromEntries(COST_CENTRES.map((name) => [name, 0])) as Record<CostCentre, number>;
  let idle = 0;
  let busy = 0;
  // Sample i ran from its timestamp until the next one's: weight it by that gap.
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i]!;
    const weight = profile.timeDeltas[i + 1] ?? 0;
    if (at < fromUs || at > toUs) continue;
    const centre = classify(profile.samples[i]!);
    if (centre === "idle") idle += weight;
    else {
      centres[centre] += weight;
      busy += weight;
    }
  }
  return {
    sampledUs: Number((busy / tickets).toFixed(1)),
    shares: Object.fromEntries(COST_CENTRES.map((name) => [name, busy === 0 ? 0 : Number((centres[name] / busy).toFixed(4))])) as Record<CostCentre, number>,
    idleShare: busy + idle === 0 ? 0 : Number((idle / (busy + idle)).toFixed(3)),
  };
}

/** The monotonic clock in µs, the clock of V8's profile timestamps. */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}
