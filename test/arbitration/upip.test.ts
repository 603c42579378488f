import { expect } from "chai";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { zeroHash } from "viem";

import { canon } from "../../channel-client/core/canonical";
import { bundleHash } from "../../arbitration/documents/bundle";
import { enginePinnedWasmSha256, engineWasmSha256 } from "../../arbitration/engine/engine";
import { meterWasm } from "../../arbitration/engine/fuel";
import { replay } from "../../arbitration/lanes/replay";
import { upipCanonical, upipFromJson, upipStackHash, verifyUpip, type UpipRecord } from "../../arbitration/documents/upip";
import { thrown } from "../helpers/assert";
import { BAD_DELIVERABLE, GOOD_DELIVERABLE, mutable, SUITE } from "./fixtures/samples";

const sha256 = (bytes: string | Uint8Array): string => createHash("sha256").update(bytes).digest("hex");
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
    // The record names the bytes actually compiled: the pinned .wasm with its fuel meter (decision 0013, issue 27).
    expect(r.deps.engine_sha256).to.equal(sha256(meterWasm(wasm))).and.to.equal(engineWasmSha256());
    expect(enginePinnedWasmSha256()).to.equal(sha256(wasm)).and.not.to.equal(r.deps.engine_sha256);
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

  describe("a malformed record is refused with one sentence naming the field", () => {
    type Edit = (r: Record<string, any>) => void;
    const cases: Array<[string, Edit, string, string]> = [
      ["another protocol", (r) => (r.protocol = "UPIQ"), "InvalidFieldError", 'UpipRecord.protocol must be "UPIP"'],
      ["an unknown layer", (r) => (r.extra = {}), "UnknownFieldError", "UpipRecord.extra is not a field"],
      ["a missing result", (r) => delete r.result, "InvalidFieldError", "UpipRecord.result must be present"],
      ["an uppercase engine hash", (r) => (r.deps.engine_sha256 = r.deps.engine_sha256.toUpperCase()), "InvalidFieldError", "UpipRecord.deps.engine_sha256 must be 64 lowercase hex digits"],
      ["a runner with a space", (r) => (r.deps.runner = "ioi arbitration"), "InvalidFieldError", "UpipRecord.deps.runner must be a runner version"],
      ["an environment variable", (r) => (r.process.env_vars = { HOME: "/root" }), "InvalidFieldError", "UpipRecord.process.env_vars must be an object with at most 0 entries"],
      ["a one-word command", (r) => (r.process.command = ["node"]), "InvalidFieldError", "UpipRecord.process.command must be an array of at least 2 items"],
      ["a negative clock", (r) => (r.process.inputs.suite.clock_ms = -1), "InvalidFieldError", "UpipRecord.process.inputs.suite.clock_ms must be at least 0"],
      ["a zero step budget", (r) => (r.process.budgets.steps_per_test = 0), "InvalidFieldError", "UpipRecord.process.budgets.steps_per_test must be at least 1"],
      ["a lowercase fault code", (r) => (r.result.suite_fault = "timeout"), "InvalidFieldError", "UpipRecord.result.suite_fault must be null, or a fault code"],
      ["exit code 3", (r) => (r.result.exit_code = 3), "InvalidFieldError", "UpipRecord.result.exit_code must be one of 0, 1, 2"],
      ["a bare stdout hash", (r) => (r.result.stdout_sha256 = r.result.stdout_sha256.replace("sha256:", "")), "InvalidFieldError", "UpipRecord.result.stdout_sha256 must be sha256: and 64 lowercase hex digits"],
      ["another judge's package list", (r) => (r.deps.packages = { other: "1" }), "InvalidUpipError", "UpipRecord.deps.packages"],
      ["a deps hash of other dependencies", (r) => (r.deps.deps_hash = `deps:sha256:${"0".repeat(64)}`), "InvalidUpipError", "UpipRecord.deps.deps_hash"],
      ["more failed tests than tests", (r) => (r.result.tests = 2), "InvalidUpipError", "UpipRecord.result.failed_tests"],
      ["an edited stack hash", (r) => (r.stack_hash = `upip:sha256:${"0".repeat(64)}`), "InvalidUpipError", "UpipRecord.stack_hash"],
    ];
    let sample: UpipRecord;
    before(async () => {
      sample = await record();
    });
    for (const [label, edit, name, message] of cases) {
      it(label, () => {
        const r = mutable(sample) as Record<string, any>;
        edit(r);
        const error = thrown(() => upipFromJson(r));
        expect(error.name, error.message).to.equal(name);
        expect(error.message).to.contain(message);
        expect(error.message.split("\n")).to.have.length(1);
      });
    }
  });
});
