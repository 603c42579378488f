import { expect } from "chai";
import { keccak256, stringToBytes } from "viem";

import { canon } from "../../channel-client/core/canonical";
import { parseDocument } from "../../arbitration/documents/document";
import {
  compileJsonSchema,
  icsFromJson,
  icsHash,
  icsToJson,
  penaltyFor,
  unserviceableRefund,
  type IcsJson,
} from "../../arbitration/documents/ics";
import { thrown } from "../helpers/assert";
import { mutable, sampleIcsJson, SUITE_HASH } from "./fixtures/samples";

/** An ICS JSON with one field path replaced (a path of keys and indices). */
function withField(path: Array<string | number>, value: unknown): Record<string, any> {
  const json = mutable(sampleIcsJson());
  let target: any = json;
  for (const key of path.slice(0, -1)) target = target[key];
  const last = path[path.length - 1]!;
  if (value === undefined) delete target[last];
  else target[last] = value;
  return json;
}

const allKinds = (): IcsJson =>
  sampleIcsJson({
    rubric: {
      version: 3,
      items: [
        { id: "passes_tests", kind: "test_suite" },
        { id: "lang", kind: "language", expect: "typescript" },
        { id: "lines", kind: "max_lines", limit: 0 },
        { id: "bytes", kind: "max_bytes", limit: 10 },
        { id: "schema", kind: "json_schema", file: "out/result.json", schema: { type: "object", required: ["a"], properties: { a: { type: "integer" } } } },
        { id: "no_eval", kind: "forbidden_content", patterns: ["eval(", ".*"] },
        { id: "pinned", kind: "hash_match", file: "LICENSE", hash: keccak256(stringToBytes("MIT")) },
        { id: "readable", kind: "semantic", description: "The code is readable." },
      ],
    },
  });

describe("arbitration/ics", () => {
  it("round-trips every rubric kind through JSON exactly", () => {
    const json = allKinds();
    const ics = icsFromJson(json);
    expect(canon(icsToJson(ics))).to.equal(canon(json));
    expect(icsHash(ics)).to.equal(keccak256(stringToBytes(canon(json))));
    expect(ics.maxPrice).to.equal(10n ** 18n);
    expect(ics.deadline).to.equal(1893456000n);
    expect(ics.testSuite).to.deep.equal({ hash: SUITE_HASH, runner: { command: ["node", "run.js"], timeoutMs: 10_000, maxOutputBytes: 65_536 } });
    expect(ics.penaltySchedule.perFailedTest).to.deep.equal({ refundBps: 500, slash: 100n });
  });

  it("reads the same ICS from YAML", () => {
    const yaml = [
      "ics_version: 1",
      'task: "Implement add(a, b) and mul(a, b) in math.js"',
      'asset: "0x0000000000000000000000000000000000000000"',
      'max_price: "1000000000000000000"',
      'deadline: "1893456000"',
      "rubric:",
      "  version: 1",
      "  items:",
      "    - {id: passes_tests, kind: test_suite}",
      "    - {id: language, kind: language, expect: javascript}",
      "    - {id: max_lines, kind: max_lines, limit: 500}",
      "    - {id: max_bytes, kind: max_bytes, limit: 4096}",
      '    - {id: no_eval, kind: forbidden_content, patterns: ["eval(", "child_process"]}',
      "test_suite:",
      `  hash: "${SUITE_HASH}"`,
      "  runner: {command: [node, run.js], timeout_ms: 10000, max_output_bytes: 65536}",
      "penalty_schedule:",
      '  objective_failure: {refund_bps: 2000, slash: "1000"}',
      '  per_failed_test: {refund_bps: 500, slash: "100"}',
      "  unserviceable: {compute_spent_bps: 1000}",
    ].join("\n");
    expect(icsHash(icsFromJson(parseDocument(yaml)))).to.equal(icsHash(icsFromJson(sampleIcsJson())));
  });

  it("allows no test suite when no rubric item needs one", () => {
    const json = sampleIcsJson({ test_suite: null, rubric: { version: 1, items: [{ id: "lang", kind: "language", expect: "rust" }] } });
    expect(icsFromJson(json).testSuite).to.equal(null);
    expect(icsToJson(icsFromJson(json)).test_suite).to.equal(null);
  });

  describe("rejects, naming the field", () => {
    const cases: Array<[string, Array<string | number>, unknown, string, string]> = [
      ["a wrong version", ["ics_version"], 2, "InvalidFieldError", "ICS.ics_version"],
      ["a missing task", ["task"], undefined, "InvalidFieldError", "ICS.task"],
      ["an empty task", ["task"], "", "InvalidFieldError", "ICS.task"],
      ["a task over 4096 characters", ["task"], "x".repeat(4097), "InvalidFieldError", "ICS.task"],
      ["a checksummed asset", ["asset"], "0x5FbDB2315678afecb367f032d93F642f64180aa3", "InvalidFieldError", "ICS.asset"],
      ["max_price as a number", ["max_price"], 1000, "AmountAsNumberError", "ICS.max_price"],
      ["max_price over uint128", ["max_price"], (1n << 128n).toString(), "InvalidFieldError", "ICS.max_price"],
      ["a deadline over uint40", ["deadline"], (1n << 40n).toString(), "InvalidFieldError", "ICS.deadline"],
      ["a deadline with a leading zero", ["deadline"], "01", "InvalidFieldError", "ICS.deadline"],
      ["an unknown field", ["extra"], true, "UnknownFieldError", "ICS.extra"],
      ["rubric version 0", ["rubric", "version"], 0, "InvalidFieldError", "ICS.rubric.version"],
      ["no rubric items", ["rubric", "items"], [], "InvalidFieldError", "ICS.rubric.items"],
      ["33 rubric items", ["rubric", "items"], Array.from({ length: 33 }, (_, i) => ({ id: `i${i}`, kind: "max_lines", limit: 1 })), "InvalidFieldError", "ICS.rubric.items"],
      ["an unknown rubric kind", ["rubric", "items", 1, "kind"], "lint", "InvalidFieldError", "ICS.rubric.items[1].kind"],
      ["a rubric item that is not an object", ["rubric", "items", 1], "language", "InvalidFieldError", "ICS.rubric.items[1]"],
      ["an uppercase rubric id", ["rubric", "items", 1, "id"], "Lang", "InvalidFieldError", "ICS.rubric.items[1].id"],
      ["a 65-character rubric id", ["rubric", "items", 1, "id"], "a".repeat(65), "InvalidFieldError", "ICS.rubric.items[1].id"],
      ["a duplicate rubric id", ["rubric", "items", 1, "id"], "passes_tests", "InvalidIcsError", "ICS.rubric.items[1].id"],
      ["an unknown language", ["rubric", "items", 1, "expect"], "cobol", "InvalidFieldError", "ICS.rubric.items[1].expect"],
      ["an extra rubric field", ["rubric", "items", 1, "limit"], 3, "UnknownFieldError", "ICS.rubric.items[1].limit"],
      ["a negative limit", ["rubric", "items", 2, "limit"], -1, "InvalidFieldError", "ICS.rubric.items[2].limit"],
      ["a string limit", ["rubric", "items", 2, "limit"], "500", "InvalidFieldError", "ICS.rubric.items[2].limit"],
      ["a fractional limit", ["rubric", "items", 3, "limit"], 1.5, "InvalidFieldError", "ICS.rubric.items[3].limit"],
      ["no forbidden patterns", ["rubric", "items", 4, "patterns"], [], "InvalidFieldError", "ICS.rubric.items[4].patterns"],
      ["an empty forbidden pattern", ["rubric", "items", 4, "patterns"], [""], "InvalidFieldError", "ICS.rubric.items[4].patterns[0]"],
      ["a 257-character pattern", ["rubric", "items", 4, "patterns"], ["x".repeat(257)], "InvalidFieldError", "ICS.rubric.items[4].patterns[0]"],
      ["a test_suite item without a suite", ["test_suite"], null, "InvalidIcsError", "ICS.rubric.items[0]"],
      ["an uppercase suite hash", ["test_suite", "hash"], SUITE_HASH.toUpperCase().replace("0X", "0x"), "InvalidFieldError", "ICS.test_suite.hash"],
      ["a runner that is not node", ["test_suite", "runner", "command"], ["bash", "run.sh"], "UnsupportedRunnerError", "ICS.test_suite.runner.command[0]"],
      ["a runner with only node", ["test_suite", "runner", "command"], ["node"], "InvalidFieldError", "ICS.test_suite.runner.command"],
      ["a runner flag instead of a script", ["test_suite", "runner", "command"], ["node", "-e", "1"], "InvalidFieldError", "ICS.test_suite.runner.command[1]"],
      ["a runner script outside the suite", ["test_suite", "runner", "command"], ["node", "../run.js"], "InvalidFieldError", "ICS.test_suite.runner.command[1]"],
      ["a runner script in the deliverable", ["test_suite", "runner", "command"], ["node", "deliverable/run.js"], "UnsupportedRunnerError", "ICS.test_suite.runner.command[1]"],
      ["a runner argument with a NUL", ["test_suite", "runner", "command"], ["node", "run.js", "a\u0000b"], "InvalidFieldError", "ICS.test_suite.runner.command[2]"],
      ["17 runner strings", ["test_suite", "runner", "command"], ["node", "run.js", ...Array.from({ length: 15 }, () => "x")], "InvalidFieldError", "ICS.test_suite.runner.command"],
      ["a timeout below 100 ms", ["test_suite", "runner", "timeout_ms"], 99, "InvalidFieldError", "ICS.test_suite.runner.timeout_ms"],
      ["a timeout above 120 s", ["test_suite", "runner", "timeout_ms"], 120_001, "InvalidFieldError", "ICS.test_suite.runner.timeout_ms"],
      ["an output limit below 1 KiB", ["test_suite", "runner", "max_output_bytes"], 1023, "InvalidFieldError", "ICS.test_suite.runner.max_output_bytes"],
      ["an output limit above 1 MiB", ["test_suite", "runner", "max_output_bytes"], 1024 * 1024 + 1, "InvalidFieldError", "ICS.test_suite.runner.max_output_bytes"],
      ["refund_bps above 10000", ["penalty_schedule", "objective_failure", "refund_bps"], 10_001, "InvalidFieldError", "ICS.penalty_schedule.objective_failure.refund_bps"],
      ["slash as a number", ["penalty_schedule", "per_failed_test", "slash"], 100, "AmountAsNumberError", "ICS.penalty_schedule.per_failed_test.slash"],
      ["compute_spent_bps missing", ["penalty_schedule", "unserviceable", "compute_spent_bps"], undefined, "InvalidFieldError", "ICS.penalty_schedule.unserviceable.compute_spent_bps"],
    ];
    for (const [label, path, value, name, where] of cases) {
      it(label, () => {
        const err = thrown(() => icsFromJson(withField(path, value)));
        expect(err.name, err.message).to.equal(name);
        expect(err.message).to.contain(where);
      });
    }

    it("two test_suite items", () => {
      const json = withField(["rubric", "items", 1], { id: "again", kind: "test_suite" });
      const err = thrown(() => icsFromJson(json));
      expect(err.name).to.equal("InvalidIcsError");
      expect(err.message).to.contain("second test_suite");
    });

    it("a hash_match with a bad hash or path", () => {
      const item = { id: "pinned", kind: "hash_match", file: "a.js", hash: "0x1234" };
      expect(thrown(() => icsFromJson(withField(["rubric", "items", 1], item))).message).to.contain("ICS.rubric.items[1].hash");
      expect(thrown(() => icsFromJson(withField(["rubric", "items", 1], { ...item, hash: keccak256("0x"), file: "/a" }))).message).to.contain(
        "ICS.rubric.items[1].file",
      );
    });
  });

  describe("json_schema items", () => {
    const withSchema = (schema: unknown) =>
      withField(["rubric", "items", 1], { id: "schema", kind: "json_schema", file: "out.json", schema });

    it("accept object and boolean schemas", () => {
      expect(() => icsFromJson(withSchema({ type: "array", items: { type: "string" } }))).not.to.throw();
      expect(() => icsFromJson(withSchema(true))).not.to.throw();
    });

    for (const [label, schema] of [
      ["an unknown keyword (strict mode)", { type: "object", frobnicate: true }],
      ["an unknown format (no formats are loaded)", { type: "string", format: "email" }],
      ["a dangling $ref", { $ref: "#/definitions/missing" }],
      ["a remote $ref", { $ref: "https://example.com/schema.json" }],
      ["an invalid type", { type: "banana" }],
      ["an asynchronous schema", { $async: true, type: "object" }],
      ["a non-object schema", "string"],
      ["an array schema", [{ type: "string" }]],
    ] as const) {
      it(`make the ICS invalid at parse time: ${label}`, () => {
        const err = thrown(() => icsFromJson(withSchema(schema)));
        expect(err.name).to.be.oneOf(["InvalidIcsError", "InvalidFieldError"]);
        expect(err.message).to.contain("ICS.rubric.items[1].schema");
      });
    }

    it("compiles schemas with the same $id from different ICS documents independently", () => {
      const a = compileJsonSchema({ $id: "https://example.com/s", type: "string" });
      const b = compileJsonSchema({ $id: "https://example.com/s", type: "integer" });
      expect(a("x")).to.equal(true);
      expect(b("x")).to.equal(false);
      expect(b(3)).to.equal(true);
    });
  });

  describe("penaltyFor", () => {
    const ics = icsFromJson(sampleIcsJson()); // 20% + 5% per failed test; slash 1000 + 100 per failed test

    it("refunds objective_failure plus per_failed_test × failures, rounding down", () => {
      expect(penaltyFor(ics, 0, 10_000n)).to.deep.equal({ refund: 2_000n, slash: 1_000n });
      expect(penaltyFor(ics, 3, 10_000n)).to.deep.equal({ refund: 3_500n, slash: 1_300n });
      expect(penaltyFor(ics, 3, 999n)).to.deep.equal({ refund: 349n, slash: 1_300n }); // 999 × 0.35 = 349.65
    });

    it("caps the refund at the whole value but not the slash", () => {
      expect(penaltyFor(ics, 16, 10_000n)).to.deep.equal({ refund: 10_000n, slash: 2_600n });
      expect(penaltyFor(ics, 1_000, 10_000n)).to.deep.equal({ refund: 10_000n, slash: 101_000n });
    });

    it("works at uint128 scale", () => {
      const max = (1n << 128n) - 1n;
      expect(penaltyFor(ics, 3, max).refund).to.equal((max * 3_500n) / 10_000n);
    });

    it("rejects a negative or fractional failure count and a negative value", () => {
      expect(thrown(() => penaltyFor(ics, -1, 1n)).name).to.equal("InvalidFieldError");
      expect(thrown(() => penaltyFor(ics, 1.5, 1n)).name).to.equal("InvalidFieldError");
      expect(thrown(() => penaltyFor(ics, 1, -1n)).name).to.equal("InvalidFieldError");
    });
  });

  describe("unserviceableRefund", () => {
    it("refunds the value minus the compute spent, the spent part rounded down", () => {
      const ics = icsFromJson(sampleIcsJson()); // 10% spent
      expect(unserviceableRefund(ics, 10_000n)).to.equal(9_000n);
      expect(unserviceableRefund(ics, 999n)).to.equal(900n); // spent ⌊99.9⌋ = 99
      expect(unserviceableRefund(ics, 0n)).to.equal(0n);
    });

    it("is the whole value at 0 bps and nothing at 10000 bps", () => {
      const json = (bps: number) =>
        sampleIcsJson({ penalty_schedule: { ...sampleIcsJson().penalty_schedule, unserviceable: { compute_spent_bps: bps } } });
      expect(unserviceableRefund(icsFromJson(json(0)), 777n)).to.equal(777n);
      expect(unserviceableRefund(icsFromJson(json(10_000)), 777n)).to.equal(0n);
    });
  });
});
