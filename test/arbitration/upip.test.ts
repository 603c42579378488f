import { expect } from "chai";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { zeroHash } from "viem";

import { canon } from "../../channel-client/canonical";
import { bundleHash } from "../../arbitration/bundle";
import { engineWasmSha256 } from "../../arbitration/engine";
import { replay } from "../../arbitration/replay";
import { upipCanonical, upipFromJson, upipStackHash, verifyUpip, type UpipRecord } from "../../arbitration/upip";
import { thrown } from "../helpers/assert";
import { BAD_DELIVERABLE, GOOD_DELIVERABLE, mutable, SUITE } from "./fixtures/samples";

const sha256 = (bytes: string | Buffer): string => createHash("sha256").update(bytes).digest("hex");
const INPUTS = { clockMs: 1_700_000_000_000, seed: zeroHash };

const record = async (deliverable = BAD_DELIVERABLE): Promise<UpipRecord> =>
  (
    await replay({
      suite: SUITE,
      deliverable,
      runner: { command: ["node", "run.js"], timeoutMs: 10_000, maxOutputBytes: 65_536 },
      budgets: { stepsPerTest: 100, memoryBytes: 1 << 25, outputBytes: 65_536 },
      inputs: { suite: INPUTS, deliverable: INPUTS },
      actor: "ioi-arbitration/lane1",
      intent: "upip test",
    })
  ).record;

describe("arbitration/upip", function () {
  this.timeout(60_000);

  it("captures the engine's wasm hash, both bundles' hashes, the pinned inputs, the budgets and the result", async () => {
    const r = await record();
    const wasm = readFileSync(require.resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));
    expect(r.deps.engine_sha256).to.equal(sha256(wasm)).and.to.equal(engineWasmSha256());
    expect(r.state).to.include({ suite_hash: bundleHash(SUITE), deliverable_hash: bundleHash(BAD_DELIVERABLE) });
    expect(r.process.inputs).to.deep.equal({ suite: { clock_ms: INPUTS.clockMs, seed: zeroHash }, deliverable: { clock_ms: INPUTS.clockMs, seed: zeroHash } });
    expect(r.process.budgets).to.deep.equal({ steps_per_test: 100, memory_bytes: 1 << 25, max_output_bytes: 65_536 });
    expect(r.result).to.deep.include({ success: false, exit_code: 1, tests: 12, failed_tests: ["add_big", "add_one", "mul_neg"], suite_fault: null });
    expect(r.stack_hash).to.equal(upipStackHash(r));
    // Nothing of the host: no Node version, no paths, no environment.
    expect(canon(r)).not.to.contain(process.versions.node);
    expect(canon(r)).not.to.contain(process.cwd());
  });

  it("is reproduced bit for bit (L5) and differs for another deliverable", async () => {
    const [a, b, other] = [await record(), await record(), await record(GOOD_DELIVERABLE)];
    expect(upipCanonical(a)).to.equal(upipCanonical(b));
    expect(verifyUpip(a, b).match).to.equal(true);
    expect(verifyUpip(a, other).match).to.equal(false);
  });

  it("upipFromJson accepts a record unchanged and refuses one whose layers were edited", async () => {
    const r = await record();
    expect(upipFromJson(JSON.parse(canon(r)))).to.deep.equal(r);
    const edited = mutable(r);
    edited.result.failed_tests = ["add_one"];
    expect(thrown(() => upipFromJson(edited)).name).to.equal("InvalidUpipError");
    const badExit = mutable(r);
    badExit.result.exit_code = 0;
    expect(thrown(() => upipFromJson(badExit)).name).to.equal("InvalidUpipError");
  });
});
