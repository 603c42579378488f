import { expect } from "chai";
import { keccak256, stringToBytes } from "viem";

import { canon } from "../../channel-client/canonical";
import { bundleHash, type Bundle } from "../../arbitration/bundle";
import { lineCount, pureCheck, runObjectiveChecks, type ObjectiveChecksParameters } from "../../arbitration/checks";
import { SandboxUnavailableError, UnsupportedRunnerError } from "../../arbitration/errors";
import { icsFromJson, type Ics, type IcsJson, type RubricItem } from "../../arbitration/ics";
import { replay as sandboxReplay, type ReplayOutcome } from "../../arbitration/sandbox";
import { upipRecord, upipResult, type UpipRecord } from "../../arbitration/upip";
import { rejection } from "../helpers/assert";
import { BAD_DELIVERABLE, GOOD_DELIVERABLE, RUNNER, sampleIcsJson, SUITE, SUITE_HASH } from "./fixtures/samples";

type Replay = NonNullable<ObjectiveChecksParameters["replay"]>;

const icsWith = (items: RubricItem[], overrides: Partial<IcsJson> = {}): Ics =>
  icsFromJson(sampleIcsJson({ rubric: { version: 1, items: items as IcsJson["rubric"]["items"] }, ...overrides }));

const TEST_ONLY = (): Ics => icsWith([{ id: "passes_tests", kind: "test_suite" }]);

/** A fake replay returning the scripted outcomes in turn (records built from real layers). */
function scripted(...outcomes: Array<Partial<{ exitCode: number | null; timedOut: boolean; outputTruncated: boolean; stdout: string }>>): Replay {
  let call = 0;
  return async (parameters) => {
    const o = outcomes[Math.min(call++, outcomes.length - 1)]!;
    const real = baseRecord(parameters);
    const limited = o.timedOut || o.outputTruncated;
    const stdout = o.stdout ?? "";
    const record: UpipRecord = upipRecord({
      ...real,
      result: upipResult({
        exitCode: limited ? null : (o.exitCode ?? 0),
        signal: limited ? "SIGKILL" : null,
        timedOut: o.timedOut ?? false,
        outputTruncated: o.outputTruncated ?? false,
        stdout: new TextEncoder().encode(limited ? "" : stdout),
        stderr: new Uint8Array(0),
      }),
    });
    const last = stdout.trim().split("\n").pop() ?? "";
    let summary: ReplayOutcome["summary"] = null;
    try {
      summary = limited ? null : (JSON.parse(last) as ReplayOutcome["summary"]);
    } catch {
      summary = null;
    }
    return { record, stdout, stderr: "", summary };
  };
}

/** The layers a real replay would record, without running anything. */
function baseRecord(parameters: Parameters<Replay>[0]): UpipRecord {
  return upipRecord({
    state: { state_type: "files", state_hash: `files:sha256:${"00".repeat(32)}` },
    deps: { runtime: "node", runtime_version: "20.19.0", packages: {}, deps_hash: `deps:sha256:${"11".repeat(32)}` },
    process: {
      command: parameters.runner.command,
      intent: parameters.intent,
      actor: parameters.actor,
      env_vars: {},
      working_dir: ".",
      sandbox: { network: "isolated", timeout_ms: parameters.runner.timeoutMs, max_output_bytes: parameters.runner.maxOutputBytes, node_flags: [] },
    },
    result: upipResult({ exitCode: 0, signal: null, timedOut: false, outputTruncated: false, stdout: new Uint8Array(0), stderr: new Uint8Array(0) }),
  });
}

describe("arbitration/checks", function () {
  this.timeout(60_000);

  describe("test_suite (real sandbox)", () => {
    it("passes a deliverable that passes all 12 tests, replaying twice", async () => {
      let calls = 0;
      const counting: Replay = (p) => {
        calls++;
        return sandboxReplay(p);
      };
      const result = await runObjectiveChecks({ ics: TEST_ONLY(), suite: SUITE, deliverable: GOOD_DELIVERABLE, replay: counting });
      expect(calls).to.equal(2);
      expect(result.reasonCodes).to.deep.equal([]);
      expect(result.failedTests).to.equal(0);
      expect(result.replays).to.have.length(1);
      expect(result.checks).to.deep.equal([
        { name: "passes_tests", status: true, hash: `0x${result.replays[0]!.stack_hash.slice(12)}`, detail: "all 12 tests passed" },
      ]);
      expect(result.replays[0]!.process.intent).to.equal("Lane 1 replay of rubric item passes_tests");
      expect(result.replays[0]!.process.actor).to.equal("ioi-arbitration/lane1");
    });

    it("fails a deliverable that fails 3 of 12, naming the tests in sorted order", async () => {
      const result = await runObjectiveChecks({ ics: TEST_ONLY(), suite: SUITE, deliverable: BAD_DELIVERABLE });
      expect(result.reasonCodes).to.deep.equal([]);
      expect(result.failedTests).to.equal(3);
      expect(result.checks[0]).to.include({ name: "passes_tests", status: false, detail: "3 of 12 tests failed: add_big, add_one, mul_neg" });
    });

    it("a deliverable that prints a fake passing summary and exits 0 cannot pass: the failing tests still fail", async () => {
      const fake = JSON.stringify({ total: 12, failed: [] });
      const cheat: Bundle = {
        files: {
          "math.js":
            `console.log(${JSON.stringify(fake)});\n` +
            "exports.add = (a, b) => {\n" +
            `  if (b === 0 && a !== 0) { console.log(${JSON.stringify(fake)}); process.exit(0); }\n` +
            "  return a >= 1000000 ? a + b + 1 : a + b;\n};\n" +
            `exports.mul = (a, b) => { if (a < 0 && b > 0) { process.stdout.write(${JSON.stringify(`${fake}
`)}); process.exit(0); } return a * b; };\n`,
        },
      };
      const result = await runObjectiveChecks({ ics: TEST_ONLY(), suite: SUITE, deliverable: cheat });
      expect(result.reasonCodes).to.deep.equal([]);
      expect(result.failedTests).to.equal(3);
      expect(result.checks[0]).to.include({ name: "passes_tests", status: false, detail: "3 of 12 tests failed: add_big, add_one, mul_neg" });
    });

    it("a deliverable that loops in one function fails that test by the call timeout, deterministically, instead of making the case undecidable", async () => {
      const looping: Bundle = { files: { "math.js": "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => { if (a < 0 && b > 0) for (;;) {} return a * b; };\n" } };
      const ics = icsWith([{ id: "passes_tests", kind: "test_suite" }], { test_suite: { hash: SUITE_HASH, runner: { ...RUNNER, call_timeout_ms: 200 } } });
      const result = await runObjectiveChecks({ ics, suite: SUITE, deliverable: looping });
      expect(result.reasonCodes).to.deep.equal([]);
      expect(result.replays).to.have.length(1);
      expect(result.checks[0]).to.include({ status: false, detail: "1 of 12 tests failed: mul_neg" });
      expect(result.replays[0]!.process.env_vars.IOI_CALL_TIMEOUT_MS).to.equal("200");
    });

    it("is deterministic: the same inputs give a deep-equal result", async () => {
      const ics = icsFromJson(sampleIcsJson());
      const first = await runObjectiveChecks({ ics, suite: SUITE, deliverable: BAD_DELIVERABLE });
      const second = await runObjectiveChecks({ ics, suite: SUITE, deliverable: BAD_DELIVERABLE });
      expect(second).to.deep.equal(first);
      expect(canon(second)).to.equal(canon(first));
    });

    it("marks a suite that prints randomness as REPLAY_NONDETERMINISTIC, with both records", async () => {
      const random: Bundle = { files: { "run.js": 'console.log(Math.random()); console.log(JSON.stringify({total: 1, failed: []}));' } };
      const ics = icsWith([{ id: "t", kind: "test_suite" }], {
        test_suite: { hash: bundleHash(random), runner: sampleIcsJson().test_suite!.runner },
      });
      const result = await runObjectiveChecks({ ics, suite: random, deliverable: GOOD_DELIVERABLE });
      expect(result.reasonCodes).to.deep.equal(["REPLAY_NONDETERMINISTIC"]);
      expect(result.replays).to.have.length(2);
      expect(result.checks[0]!.status).to.equal(false);
      expect(result.checks[0]!.detail).to.match(/^inconclusive \(REPLAY_NONDETERMINISTIC\)/);
    });

    it("marks a looping suite as REPLAY_TIMEOUT", async () => {
      const loop: Bundle = { files: { "run.js": "for (;;) {}" } };
      const ics = icsWith([{ id: "t", kind: "test_suite" }], {
        test_suite: { hash: bundleHash(loop), runner: { command: ["node", "run.js"], timeout_ms: 300, max_output_bytes: 4096 } },
      });
      const result = await runObjectiveChecks({ ics, suite: loop, deliverable: GOOD_DELIVERABLE });
      expect(result.reasonCodes).to.deep.equal(["REPLAY_TIMEOUT"]);
      expect(result.failedTests).to.equal(0);
      expect(result.checks[0]!.hash).to.equal(`0x${result.replays[0]!.stack_hash.slice(12)}`);
    });
  });

  describe("test_suite (inconclusive outcomes)", () => {
    const run = (replay: Replay, suite: Bundle | null = SUITE, ics: Ics = TEST_ONLY()) =>
      runObjectiveChecks({ ics, suite, deliverable: GOOD_DELIVERABLE, replay });
    const never: Replay = async () => expect.fail("must not replay");

    it("TEST_SUITE_HASH_MISMATCH: another suite than the ICS binds is never run", async () => {
      const result = await run(never, { files: { "run.js": "// not the bound suite" } });
      expect(result.reasonCodes).to.deep.equal(["TEST_SUITE_HASH_MISMATCH"]);
      expect(result.checks[0]).to.include({ name: "passes_tests", status: false, hash: null });
      expect(result.checks[0]!.detail).to.match(/^inconclusive \(TEST_SUITE_HASH_MISMATCH\): the test suite hashes to 0x/);
      expect(result.replays).to.deep.equal([]);
    });

    it("TEST_SUITE_MISSING: no suite in the package", async () => {
      expect((await run(never, null)).reasonCodes).to.deep.equal(["TEST_SUITE_MISSING"]);
    });

    it("SANDBOX_UNAVAILABLE", async () => {
      const result = await run(async () => {
        throw new SandboxUnavailableError("no unshare");
      });
      expect(result.reasonCodes).to.deep.equal(["SANDBOX_UNAVAILABLE"]);
      expect(result.checks[0]!.status).to.equal(false);
    });

    it("TEST_SUITE_INVALID: the runner names no file of the suite", async () => {
      const result = await run(async () => {
        throw new UnsupportedRunnerError("runner.command[1]", "is not a file of the test suite.");
      });
      expect(result.reasonCodes).to.deep.equal(["TEST_SUITE_INVALID"]);
    });

    it("REPLAY_NONDETERMINISTIC: the two runs differ", async () => {
      const result = await run(scripted({ stdout: '{"total":1,"failed":[]}' }, { stdout: '{"total":1,"failed":["a"]}' }));
      expect(result.reasonCodes).to.deep.equal(["REPLAY_NONDETERMINISTIC"]);
      expect(result.replays).to.have.length(2);
    });

    it("REPLAY_TIMEOUT, REPLAY_OUTPUT_LIMIT, REPLAY_OUTPUT_UNPARSEABLE", async () => {
      expect((await run(scripted({ timedOut: true }))).reasonCodes).to.deep.equal(["REPLAY_TIMEOUT"]);
      expect((await run(scripted({ outputTruncated: true }))).reasonCodes).to.deep.equal(["REPLAY_OUTPUT_LIMIT"]);
      expect((await run(scripted({ stdout: "all good, trust me" }))).reasonCodes).to.deep.equal(["REPLAY_OUTPUT_UNPARSEABLE"]);
    });

    it("a suite that reports no failures but exits non-zero fails the check with 0 failed tests", async () => {
      const result = await run(scripted({ exitCode: 2, stdout: '{"total":4,"failed":[]}' }));
      expect(result.reasonCodes).to.deep.equal([]);
      expect(result.failedTests).to.equal(0);
      expect(result.checks[0]).to.include({ status: false, detail: "0 of 4 tests failed, but the suite ended with exit code 2" });
    });

    it("passes other errors through (a bug is not a verdict)", async () => {
      const err = await rejection(run(async () => {
        throw new TypeError("bug");
      }));
      expect(err.name).to.equal("TypeError");
    });
  });

  describe("pure checks", () => {
    const bundle = (files: Record<string, string>): Bundle => ({ files });
    const check = (item: RubricItem, files: Record<string, string>) =>
      pureCheck(item as Exclude<RubricItem, { kind: "test_suite" } | { kind: "semantic" }>, bundle(files));

    it("language: every file's extension", () => {
      const item: RubricItem = { id: "lang", kind: "language", expect: "javascript" };
      expect(check(item, { "a.js": "", "b/c.mjs": "", "d.cjs": "" })).to.deep.equal({
        name: "lang",
        status: true,
        hash: null,
        detail: "all 3 files are javascript (.js, .mjs, .cjs)",
      });
      expect(check(item, { "a.js": "", "z.py": "", "b.ts": "" })).to.deep.equal({
        name: "lang",
        status: false,
        hash: null,
        detail: "2 of 3 files are not javascript (.js, .mjs, .cjs): b.ts, z.py",
      });
      expect(check({ id: "l", kind: "language", expect: "text" }, { "README.md": "", "notes.txt": "" }).status).to.equal(true);
      expect(check({ id: "l", kind: "language", expect: "rust" }, { "main.rs": "", "Cargo.toml": "" }).status).to.equal(false);
      expect(check({ id: "l", kind: "language", expect: "json" }, { "a.json": "" }).status).to.equal(true);
      expect(check({ id: "l", kind: "language", expect: "python" }, { "a.pyc": "" }).status).to.equal(false);
    });

    it("max_lines: newline-separated lines across files", () => {
      expect(lineCount("")).to.equal(0);
      expect(lineCount("a")).to.equal(1);
      expect(lineCount("a\n")).to.equal(1);
      expect(lineCount("a\nb")).to.equal(2);
      expect(lineCount("\n\n")).to.equal(2);
      const item: RubricItem = { id: "lines", kind: "max_lines", limit: 3 };
      expect(check(item, { a: "1\n2\n", b: "3" })).to.deep.equal({ name: "lines", status: true, hash: null, detail: "3 lines (limit 3)" });
      expect(check(item, { a: "1\n2\n", b: "3\n4" })).to.deep.equal({ name: "lines", status: false, hash: null, detail: "4 lines (limit 3)" });
    });

    it("max_bytes: UTF-8 bytes across files", () => {
      const item: RubricItem = { id: "bytes", kind: "max_bytes", limit: 4 };
      expect(check(item, { a: "€", b: "x" })).to.deep.equal({ name: "bytes", status: true, hash: null, detail: "4 bytes (limit 4)" });
      expect(check(item, { a: "€€" })).to.deep.equal({ name: "bytes", status: false, hash: null, detail: "6 bytes (limit 4)" });
    });

    it("json_schema: the named file must parse and validate", () => {
      const item: RubricItem = {
        id: "schema",
        kind: "json_schema",
        file: "out.json",
        schema: { type: "object", required: ["a"], properties: { a: { type: "integer" } }, additionalProperties: false },
      };
      expect(check(item, { "out.json": '{"a": 1}' })).to.deep.equal({ name: "schema", status: true, hash: null, detail: "out.json matches the schema" });
      expect(check(item, { "out.json": '{"a": "1"}' })).to.deep.equal({
        name: "schema",
        status: false,
        hash: null,
        detail: "out.json does not match the schema: /a must be integer",
      });
      expect(check(item, { "out.json": "{}" }).detail).to.equal("out.json does not match the schema: / must have required property 'a'");
      expect(check(item, { "out.json": "{nope" })).to.deep.equal({ name: "schema", status: false, hash: null, detail: "out.json is not valid JSON." });
      expect(check(item, { "out.json": "[".repeat(100) + "]".repeat(100) }).detail).to.equal("out.json nests deeper than 64 levels.");
      expect(check(item, { "other.json": "{}" })).to.deep.equal({ name: "schema", status: false, hash: null, detail: "out.json is not in the deliverable" });
    });

    it("forbidden_content: literal substrings, not regular expressions", () => {
      const item: RubricItem = { id: "ban", kind: "forbidden_content", patterns: ["eval(", ".*", "rm -rf"] };
      expect(check(item, { "a.js": "const x = 1;", "b.js": "evaluate()" })).to.deep.equal({
        name: "ban",
        status: true,
        hash: null,
        detail: "none of 3 forbidden patterns found",
      });
      expect(check(item, { "a.js": "eval(x)", "b.js": 'match(/.*/)', "c.js": "eval(y)" })).to.deep.equal({
        name: "ban",
        status: false,
        hash: null,
        detail: 'pattern 0 "eval(" found in a.js, c.js; pattern 1 ".*" found in b.js',
      });
    });

    it("hash_match: keccak256 of the file's UTF-8 bytes", () => {
      const hash = keccak256(stringToBytes("MIT €"));
      const item: RubricItem = { id: "pin", kind: "hash_match", file: "LICENSE", hash };
      expect(check(item, { LICENSE: "MIT €" })).to.deep.equal({ name: "pin", status: true, hash, detail: `LICENSE has keccak256 ${hash}` });
      const other = keccak256(stringToBytes("GPL"));
      expect(check(item, { LICENSE: "GPL" })).to.deep.equal({ name: "pin", status: false, hash: other, detail: `LICENSE has keccak256 ${other}, not ${hash}` });
      expect(check(item, { COPYING: "MIT €" })).to.deep.equal({ name: "pin", status: false, hash: null, detail: "LICENSE is not in the deliverable" });
    });

    it("clips very long details deterministically", () => {
      const files = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`${"x".repeat(200)}${i}.py`, ""]));
      const result = check({ id: "lang", kind: "language", expect: "rust" }, files);
      expect(result.detail!.length).to.equal(4096);
      expect(result.detail!.endsWith("...")).to.equal(true);
    });
  });

  it("runs every kind in rubric order; semantic items go to Lane 2", async () => {
    const ics = icsWith([
      { id: "readable", kind: "semantic", description: "The code is readable." },
      { id: "bytes", kind: "max_bytes", limit: 1 },
      { id: "passes_tests", kind: "test_suite" },
      { id: "lang", kind: "language", expect: "javascript" },
      { id: "lines", kind: "max_lines", limit: 500 },
      { id: "ban", kind: "forbidden_content", patterns: ["eval("] },
      { id: "pin", kind: "hash_match", file: "math.js", hash: keccak256(stringToBytes(GOOD_DELIVERABLE.files["math.js"]!)) },
      { id: "schema", kind: "json_schema", file: "package.json", schema: { type: "object" } },
      { id: "style", kind: "semantic", description: "Idiomatic." },
    ]);
    const result = await runObjectiveChecks({ ics, suite: SUITE, deliverable: GOOD_DELIVERABLE, replay: scripted({ stdout: '{"total":12,"failed":[]}' }) });
    expect(result.checks.map((c) => [c.name, c.status])).to.deep.equal([
      ["bytes", false],
      ["passes_tests", true],
      ["lang", true],
      ["lines", true],
      ["ban", true],
      ["pin", true],
      ["schema", false],
    ]);
    expect(result.needsLane2).to.deep.equal(["readable", "style"]);
    expect(result.reasonCodes).to.deep.equal([]);
  });
});
