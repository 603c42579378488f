import { expect } from "chai";
import { keccak256, stringToBytes, type Hex } from "viem";

import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import { lineCount, pureCheck, runObjectiveChecks, type ObjectiveChecksParameters } from "../../arbitration/lanes/checks";
import { icsFromJson, type Ics, type IcsJson, type RubricItem } from "../../arbitration/documents/ics";
import { JudgeHostFaultError, replay as engineReplay, type ReplayOutcome } from "../../arbitration/lanes/replay";
import { FAILING_DELIVERABLE, SUITE as CODE_GIG_SUITE } from "../../scripts/examples/code-gig";
import { BAD_DELIVERABLE, GOOD_DELIVERABLE, RUNNER, sampleIcsJson, SUITE, SUITE_HASH } from "./fixtures/samples";

type Replay = NonNullable<ObjectiveChecksParameters["replay"]>;

const INPUTS = { clockMs: 1_700_000_000_000, seed: keccak256(stringToBytes("checks")) as Hex };

const icsWith = (items: RubricItem[], overrides: Partial<IcsJson> = {}): Ics =>
  icsFromJson(sampleIcsJson({ rubric: { version: 1, items: items as IcsJson["rubric"]["items"] }, ...overrides }));

const TEST_ONLY = (stepBudget?: number): Ics =>
  icsWith([stepBudget === undefined ? { id: "passes_tests", kind: "test_suite" } : { id: "passes_tests", kind: "test_suite", step_budget: stepBudget }]);

const run = (ics: Ics, deliverable: Bundle, suite: Bundle | null = SUITE, replay?: Replay) =>
  runObjectiveChecks({ ics, suite, deliverable, inputs: INPUTS, ...(replay ? { replay } : {}) });

/** An ICS binding `suite` with only a test_suite item. */
const bound = (suite: Bundle, stepBudget = 50): Ics =>
  icsFromJson(sampleIcsJson({ rubric: { version: 1, items: [{ id: "passes_tests", kind: "test_suite", step_budget: stepBudget }] }, test_suite: { hash: bundleHash(suite), runner: RUNNER } }));

describe("arbitration/checks", function () {
  this.timeout(60_000);

  describe("test_suite (sealed engine)", () => {
    it("passes a deliverable that passes all 12 tests, from one record of three replays", async () => {
      const result = await run(TEST_ONLY(), GOOD_DELIVERABLE);
      expect(result.checks).to.have.length(1);
      expect(result.checks[0]).to.include({ name: "passes_tests", status: true, detail: "all 12 tests passed" });
      expect(result.replays).to.have.length(1);
      expect(result).to.deep.include({ failedTests: 0, reasonCodes: [], attribution: [], suiteAtFault: false });
    });

    it("fails a deliverable that fails 3 of 12, naming the tests in sorted order", async () => {
      const result = await run(TEST_ONLY(), BAD_DELIVERABLE);
      expect(result.checks[0]).to.include({ status: false, detail: "3 of 12 tests failed: add_big, add_one, mul_neg" });
      expect(result.failedTests).to.equal(3);
    });

    it("the Appendix A.4 example still fails exactly slug_repeat, slug_symbols and slug_trim", async () => {
      const ics = bound(CODE_GIG_SUITE, 1000);
      const result = await run(ics, FAILING_DELIVERABLE, CODE_GIG_SUITE);
      expect(result.checks[0]!.detail).to.equal("3 of 12 tests failed: slug_repeat, slug_symbols, slug_trim");
      expect(result.replays[0]!.result.failed_tests).to.deep.equal(["slug_repeat", "slug_symbols", "slug_trim"]);
    });

    it("is deterministic: the same inputs give a deep-equal result", async () => {
      expect(await run(TEST_ONLY(), BAD_DELIVERABLE)).to.deep.equal(await run(TEST_ONLY(), BAD_DELIVERABLE));
    });

    it("a looping deliverable fails the test it loops in (DELIVERABLE_STEP_BUDGET), decided", async () => {
      const looping: Bundle = { files: { "math.js": "exports.add = (a, b) => { if (a === 2) for (;;) {} return a + b; };\nexports.mul = (a, b) => a * b;\n" } };
      const result = await run(TEST_ONLY(20), looping);
      expect(result.checks[0]).to.include({ status: false, detail: "1 of 12 tests failed: add_pos; over budget: add_pos (DELIVERABLE_STEP_BUDGET)" });
      expect(result).to.deep.include({ failedTests: 1, reasonCodes: [], attribution: ["DELIVERABLE_STEP_BUDGET"] });
    });

    it("a suite whose verdict depends on the clock is the suite's fault (SUITE_INPUT_DEPENDENT)", async () => {
      const suite: Bundle = {
        files: { "run.js": `const { test, equal } = require("ioi:harness");\ntest("bomb", () => equal(Date.now() < ${INPUTS.clockMs + 86_400_000}, true));\n` },
      };
      const result = await run(bound(suite), GOOD_DELIVERABLE, suite);
      expect(result.checks[0]!.status).to.equal(true);
      expect(result.checks[0]!.detail).to.match(/^suite fault \(SUITE_INPUT_DEPENDENT\)/);
      expect(result).to.deep.include({ failedTests: 0, attribution: ["SUITE_INPUT_DEPENDENT"], suiteAtFault: true });
      expect(result.replays).to.have.length(2);
    });

    it("attributes a difference between two identical replays to the side that diverged first", async () => {
      let count = 0;
      const flaky = (side: "suite" | "deliverable"): Replay => async (parameters) => {
        const outcome: ReplayOutcome = await engineReplay(parameters);
        if (count++ !== 1) return outcome;
        const calls = outcome.calls.map((call, i) => (i === 3 ? { ...call, [side === "suite" ? "request" : "answer"]: "ff".repeat(32) } : call));
        return { ...outcome, calls, record: { ...outcome.record, stack_hash: `upip:sha256:${"ee".repeat(32)}` } };
      };
      const deliverable = await run(TEST_ONLY(), GOOD_DELIVERABLE, SUITE, flaky("deliverable"));
      expect(deliverable.checks[0]).to.include({ status: false });
      expect(deliverable.checks[0]!.detail).to.equal("1 of 12 tests failed: add_neg (the deliverable answered differently in two identical replays)");
      expect(deliverable.attribution).to.deep.equal(["DELIVERABLE_NONDETERMINISTIC"]);
      count = 0;
      const suite = await run(TEST_ONLY(), GOOD_DELIVERABLE, SUITE, flaky("suite"));
      expect(suite).to.deep.include({ failedTests: 0, attribution: ["SUITE_NONDETERMINISTIC"], suiteAtFault: true });
    });
  });

  describe("test_suite (undecidable: evidence and host faults only)", () => {
    it("TEST_SUITE_HASH_MISMATCH: another suite than the ICS binds is never run", async () => {
      const other: Bundle = { files: { ...SUITE.files, "extra.js": "" } };
      let ran = false;
      const result = await run(TEST_ONLY(), GOOD_DELIVERABLE, other, async (p) => ((ran = true), engineReplay(p)));
      expect(ran).to.equal(false);
      // Issue 27: evidence the challenger owes decides against it, never undecidable.
      expect(result).to.deep.include({ reasonCodes: [], attribution: ["TEST_SUITE_HASH_MISMATCH"], suiteAtFault: true, failedTests: 0 });
      expect(result.checks[0]!.detail).to.equal(`evidence fault (TEST_SUITE_HASH_MISMATCH): the test suite hashes to ${bundleHash(other)}, but the ICS binds ${SUITE_HASH}.; nothing is held against the deliverable`);
    });

    it("TEST_SUITE_MISSING: no suite in the package", async () => {
      expect(await run(TEST_ONLY(), GOOD_DELIVERABLE, null)).to.deep.include({ reasonCodes: [], attribution: ["TEST_SUITE_MISSING"], suiteAtFault: true });
    });

    it("TEST_SUITE_INVALID: the runner names no file of the suite", async () => {
      const ics = icsFromJson(sampleIcsJson({ test_suite: { hash: SUITE_HASH, runner: { ...RUNNER, command: ["node", "missing.js"] } } }));
      expect(await run(ics, GOOD_DELIVERABLE)).to.deep.include({ reasonCodes: [], attribution: ["TEST_SUITE_INVALID"], suiteAtFault: true });
    });

    it("JUDGE_HOST_FAULT: the host watchdog fired (never a verdict)", async () => {
      // Issue 27: a host fault is thrown (the arbitrator abstains), never a result.
      const result = await run(TEST_ONLY(), GOOD_DELIVERABLE, SUITE, async () => {
        throw new JudgeHostFaultError("The host watchdog stopped the suite.");
      }).catch((e: unknown) => e);
      expect(result).to.be.instanceOf(JudgeHostFaultError);
      const real = await runObjectiveChecks({ ics: TEST_ONLY(), suite: SUITE, deliverable: GOOD_DELIVERABLE, inputs: INPUTS, watchdogMs: 0 }).catch((e: unknown) => e);
      expect(real).to.be.instanceOf(JudgeHostFaultError);
    });

    it("passes other errors through (a bug is not a verdict)", async () => {
      const error = await run(TEST_ONLY(), GOOD_DELIVERABLE, SUITE, async () => {
        throw new TypeError("bug");
      }).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(TypeError);
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
    const result = await run(ics, GOOD_DELIVERABLE);
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
