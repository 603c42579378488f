import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { breakdown, COST_CENTRES, monotonicUs, type CpuProfile } from "../../scripts/cpu-breakdown";

/** A profile whose stacks are given leaf-first; sample i is taken at start + 10·(i+1) µs and weighs 10 µs. */
function profileOf(stacks: { functionName: string; url: string }[][]): CpuProfile {
  const nodes: CpuProfile["nodes"] = [{ id: 1, callFrame: { functionName: "(root)", url: "" }, children: [] }];
  const samples: number[] = [];
  for (const stack of stacks) {
    let parent = nodes[0]!;
    for (const frame of [...stack].reverse()) {
      const node = { id: nodes.length + 1, callFrame: frame, children: [] as number[] };
      nodes.push(node);
      parent.children!.push(node.id);
      parent = node;
    }
    samples.push(parent.id);
  }
  return { nodes, startTime: 1_000, samples, timeDeltas: samples.map(() => 10) };
}

const SRC = "file:///srv/app/channel-client";

describe("bench: CPU breakdown by cost centre", () => {
  it("gives a sample to the first frame a rule claims, walking from the running function up", () => {
    const profile = profileOf([
      // keccak called from a canonical-text helper counts as keccak
      [{ functionName: "wasm-function[3]", url: "" }, { functionName: "keccak256Bytes", url: `${SRC}/core/keccak.ts` }, { functionName: "canonicalReceiptText", url: `${SRC}/core/receipt.ts` }],
      // a native JSON.parse counts through its caller
      [{ functionName: "parse", url: "" }, { functionName: "parseJson", url: `${SRC}/core/canonical.ts` }, { functionName: "#onMessage", url: `${SRC}/node/payer-client.ts` }],
      [{ functionName: "ecdsaRecover", url: "file:///srv/app/node_modules/secp256k1/lib/index.js" }, { functionName: "recover", url: `${SRC}/core/secp256k1.ts` }],
      [{ functionName: "fdatasync", url: "" }, { functionName: "#sync", url: `${SRC}/store/sqlite-store.ts` }],
      [{ functionName: "update", url: "node:internal/crypto/cipher" }, { functionName: "seal", url: `${SRC}/transport/sealing.ts` }, { functionName: "writeBurst", url: `${SRC}/transport/secure-connection.ts` }],
      [{ functionName: "writeBuffer", url: "" }, { functionName: "writeBurst", url: `${SRC}/transport/secure-connection.ts` }],
      [{ functionName: "prefixRoot", url: `${SRC}/core/accumulator.ts` }, { functionName: "checkTicket", url: `${SRC}/node/provider-session.ts` }],
      [{ functionName: "invoke", url: `${SRC}/node/provider-session.ts` }],
      [{ functionName: "(garbage collector)", url: "" }],
      [{ functionName: "runMicrotasks", url: "" }],
      [{ functionName: "(idle)", url: "" }],
      [{ functionName: "(idle)", url: "" }],
    ]);
    // 12 samples at 1,010 … 1,120 µs; the window takes all of them but the last sample has no successor, so no weight.
    const result = breakdown(profile, 0, 10_000, 2);
    expect(result.shares).to.deep.equal({
      "sign + verify (secp256k1)": 0.1,
      keccak: 0.1,
      "AEAD (sealing)": 0.1,
      "store (SQLite, fsync)": 0.1,
      "socket and framing": 0.1,
      "JSON, canonical text, validation": 0.1,
      "artifacts (digests, receipt tree)": 0.1,
      "node logic": 0.1,
      "runtime (promises, event loop, GC)": 0.2,
    });
    expect(result.sampledUs).to.equal(50); // 10 busy samples × 10 µs over 2 tickets
    expect(result.idleShare).to.equal(Number((10 / 110).toFixed(3)));
  });

  it("attributes the built modules (dist/…/*.js, what `npm run bench` runs the provider from) as their sources", () => {
    const DIST = "file:///srv/app/dist/channel-client";
    const stacks = [
      [{ functionName: "recover", url: `${DIST}/core/secp256k1.js` }],
      [{ functionName: "wasm-function[3]", url: "" }, { functionName: "keccak256Hex", url: `${DIST}/core/keccak.js` }],
      [{ functionName: "seal", url: `${DIST}/transport/sealing.js` }],
      [{ functionName: "parseJson", url: `${DIST}/core/canonical.js` }],
      [{ functionName: "decodeMessage", url: `${DIST}/node/protocol.js` }],
      [{ functionName: "putStep", url: `${DIST}/store/sqlite-store.js` }],
      [{ functionName: "prefixRoot", url: `${DIST}/core/accumulator.js` }],
      [{ functionName: "invoke", url: `${DIST}/node/provider-invoke.js` }],
      [{ functionName: "send", url: `${DIST}/transport/secure-connection.js` }],
      [{ functionName: "(garbage collector)", url: "" }],
      [{ functionName: "(idle)", url: "" }],
    ];
    const result = breakdown(profileOf(stacks), 0, 10_000, 1);
    // canonical.js and protocol.js are both "JSON, canonical text, validation": two of the ten busy samples.
    for (const centre of COST_CENTRES) expect(result.shares[centre], centre).to.equal(centre === "JSON, canonical text, validation" ? 0.2 : 0.1);
  });

  it("counts only the samples inside the window", () => {
    const stacks = [[{ functionName: "invoke", url: `${SRC}/node/provider-session.ts` }], [{ functionName: "ecdsaSign", url: "file:///x/node_modules/secp256k1/lib/index.js" }], [{ functionName: "ecdsaSign", url: "file:///x/node_modules/secp256k1/lib/index.js" }], [{ functionName: "invoke", url: `${SRC}/node/provider-session.ts` }]];
    // samples at 1,010, 1,020, 1,030, 1,040: the window [1,015, 1,035] holds the two signing ones.
    const result = breakdown(profileOf(stacks), 1_015, 1_035, 1);
    expect(result.shares["sign + verify (secp256k1)"]).to.equal(1);
    expect(result.sampledUs).to.equal(20);
    expect(Object.keys(result.shares)).to.deep.equal([...COST_CENTRES]);
  });

  it("reads a child process's --cpu-prof profile on this process's monotonic clock (how the bench cuts both nodes' profiles)", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-cpu-prof-"));
    try {
      const before = monotonicUs();
      execFileSync(process.execPath, ["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-interval", "1000", "-e", "let x = 0; for (let i = 0; i < 2e7; i++) x += i % 7;"]);
      const after = monotonicUs();
      const file = readdirSync(dir).find((name) => name.endsWith(".cpuprofile"));
      expect(file, "the child wrote a profile").to.not.equal(undefined);
      const profile = JSON.parse(readFileSync(path.join(dir, file!), "utf8")) as CpuProfile;
      expect(profile.startTime).to.be.within(before, after);
      expect(profile.samples.length).to.be.greaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
