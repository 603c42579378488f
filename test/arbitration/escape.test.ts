/**
 * The escape battery: a deliverable and, separately, a suite that each try to reach the host from inside
 * the sealed engine. Every attempt is blocked or fails inside the engine, and each case ends decided and
 * attributed to the side that tried it: a deliverable's attempt fails its test (provider), a suite's attempt
 * is a suite fault (client). The host is untouched: a Unix socket the test listens on sees no connection,
 * no file appears, the host's prototypes stay clean.
 */
import { expect } from "chai";
import { createServer, type Server } from "node:net";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keccak256, stringToBytes, type Hex } from "viem";

import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import { runObjectiveChecks, type ObjectiveChecksResult } from "../../arbitration/lanes/checks";
import { icsFromJson } from "../../arbitration/documents/ics";
import { GOOD_DELIVERABLE, RUNNER, sampleIcsJson, SUITE } from "./fixtures/samples";

const INPUTS = { clockMs: 1_700_000_000_000, seed: keccak256(stringToBytes("escape")) as Hex };
const STEPS = 30;

let server: Server;
let socketDir: string;
let socketPath: string;
let connections = 0;

function judge(suite: Bundle, deliverable: Bundle): Promise<ObjectiveChecksResult> {
  const ics = icsFromJson(
    sampleIcsJson({
      rubric: { version: 1, items: [{ id: "passes_tests", kind: "test_suite", step_budget: STEPS }] },
      test_suite: { hash: bundleHash(suite), runner: { ...RUNNER, max_output_bytes: 4096 } },
    }),
  );
  return runObjectiveChecks({ ics, suite, deliverable, inputs: INPUTS });
}

/** The sample deliverable with `add` replaced by an attempt that must fail (then the honest sum). */
function attemptingDeliverable(attempt: string): Bundle {
  return { files: { "math.js": `exports.add = (a, b) => { ${attempt}; return a + b; };\nexports.mul = (a, b) => a * b;\n` } };
}

/** A suite that makes the attempt while loading (before any call), then would run one honest test. */
function attemptingSuite(attempt: string): Bundle {
  return {
    files: {
      "run.js": `const { test, call, equal } = require("ioi:harness");\n${attempt};\ntest("add", () => equal(call("add", [1, 2], { module: "math.js" }), 3));\n`,
    },
  };
}

const ATTEMPTS: Array<[string, string]> = [
  ["read a file", 'require("fs").readFileSync("/etc/passwd", "utf8")'],
  ["list a directory", 'require("fs").readdirSync("/")'],
  ["open a TCP connection", 'require("net").connect(8545, "127.0.0.1")'],
  ["connect to the test's Unix socket", `require("net").connect(${JSON.stringify("SOCKET")})`],
  ["fetch over the network", 'fetch("http://127.0.0.1:8545")'],
  ["read the environment", "if (process.env.HOME === undefined) throw new Error('no env')"],
  ["read the host clock (performance.now, process.hrtime)", "performance.now() + process.hrtime()[0]"],
  ["use host randomness", 'require("crypto").randomBytes(8)'],
  ["read the hostname and CPU count", 'require("os").hostname() + require("os").cpus().length'],
  ["spawn a process", 'require("child_process").execSync("id")'],
  ["reach the host through eval/Function", 'new Function("return process")().exit(0)'],
  ["reach the host through an indirect eval of globalThis", '(0, eval)("globalThis.require || globalThis.process").mainModule'],
];

describe("arbitration: escape battery (sealed engine)", function () {
  this.timeout(120_000);

  before(async () => {
    socketDir = mkdtempSync(join(tmpdir(), "ioi-escape-"));
    socketPath = join(socketDir, "host.sock");
    server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  });

  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(socketDir, { recursive: true, force: true });
  });

  afterEach(() => {
    // The host is untouched by whatever ran.
    expect(connections, "connections to the host's Unix socket").to.equal(0);
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
    expect(existsSync(join(socketDir, "escaped"))).to.equal(false);
  });

  describe("the deliverable tries it: its test fails, attributed to the provider", () => {
    for (const [label, attempt] of ATTEMPTS) {
      it(label, async () => {
        const result = await judge(SUITE, attemptingDeliverable(attempt.replace("SOCKET", socketPath)));
        // add is used by 6 of the 12 tests: each of them fails, every mul test still passes.
        expect(result.checks[0]!.status).to.equal(false);
        expect(result.checks[0]!.detail).to.equal("6 of 12 tests failed: add_big, add_mixed, add_neg, add_one, add_pos, add_zero");
        expect(result).to.deep.include({ failedTests: 6, reasonCodes: [], suiteAtFault: false });
      });
    }

    it("imports a module dynamically: the import fails inside the engine and so do the tests that wait for it", async () => {
      const deliverable: Bundle = { files: { "math.js": 'exports.add = async (a, b) => { await import("fs"); return a + b; };\nexports.mul = (a, b) => a * b;\n' } };
      const result = await judge(SUITE, deliverable);
      expect(result.checks[0]!.detail).to.equal("6 of 12 tests failed: add_big, add_mixed, add_neg, add_one, add_pos, add_zero");
    });

    it("reads only the pinned clock and the seeded PRNG (never the host's): the answers are the same on every run", async () => {
      const probe: Bundle = {
        files: { "math.js": "exports.add = () => [Date.now(), Math.random(), new Date(0).getHours(), String(new Date(86400000))];\nexports.mul = (a, b) => a * b;\n" },
      };
      const suite: Bundle = {
        files: {
          "run.js": `const { test, call, equal } = require("ioi:harness");\ntest("pinned", () => { const [now, r, hours, text] = call("add", [], { module: "math.js" }); equal(now, ${INPUTS.clockMs}); equal(hours, 0); equal(text, "Fri Jan 02 1970 00:00:00 GMT+0000"); equal(typeof r, "number"); });\n`,
        },
      };
      const first = await judge(suite, probe);
      expect(first.checks[0]).to.include({ status: true, detail: "all 1 tests passed" });
      expect((await judge(suite, probe)).replays).to.deep.equal(first.replays);
    });

    it("pollutes prototypes and patches JSON in its own instance: the suite, its verdict and the host are unaffected", async () => {
      const polluter = attemptingDeliverable(
        "Object.prototype.polluted = true; Array.prototype.push = () => 0; JSON.stringify = () => '{\"ok\":3}'; globalThis.equal = () => {}",
      );
      const result = await judge(SUITE, polluter);
      expect(result.checks[0]).to.include({ status: true, detail: "all 12 tests passed" });
    });

    it("forges the suite's summary: printing a passing summary or reaching for the harness changes nothing", async () => {
      const forger: Bundle = {
        files: {
          "math.js":
            'console.log(JSON.stringify({ total: 12, failed: [] }));\n' +
            'exports.add = (a, b) => { if (typeof __ioi_harness !== "undefined" || typeof require("ioi:harness") === "object") return a + b; };\n' +
            "exports.mul = (a, b) => a * b;\n",
        },
      };
      const result = await judge(SUITE, forger);
      expect(result.checks[0]!.detail).to.equal("6 of 12 tests failed: add_big, add_mixed, add_neg, add_one, add_pos, add_zero");
    });

    for (const [label, attempt, fault] of [
      ["loops forever", "for (;;) {}", "DELIVERABLE_STEP_BUDGET"],
      // Issue 27: zero-filling memory costs fuel (fuel.ts), so unbounded allocation runs out of steps before memory.
      ["allocates without bound", "const hoard = []; for (;;) hoard.push(new ArrayBuffer(1 << 20))", "DELIVERABLE_STEP_BUDGET"],
      ["recurses without bound", "const f = () => f(); f()", "DELIVERABLE_MEMORY_LIMIT"],
      ["floods its output", 'for (;;) console.log("x".repeat(1000))', "DELIVERABLE_OUTPUT_LIMIT"],
    ] as const) {
      it(`${label}: the tests it does so in fail by ${fault}, decided`, async () => {
        const deliverable: Bundle = { files: { "math.js": `exports.add = (a, b) => { if (a === 2) { ${attempt}; } return a + b; };\nexports.mul = (a, b) => a * b;\n` } };
        const result = await judge(SUITE, deliverable);
        expect(result.checks[0]!.detail).to.equal(`1 of 12 tests failed: add_pos; over budget: add_pos (${fault})`);
        expect(result).to.deep.include({ failedTests: 1, reasonCodes: [], attribution: [fault], suiteAtFault: false });
      });
    }
  });

  describe("the suite tries it: a suite fault, attributed to the client", () => {
    for (const [label, attempt] of ATTEMPTS) {
      it(label, async () => {
        const result = await judge(attemptingSuite(attempt.replace("SOCKET", socketPath)), GOOD_DELIVERABLE);
        expect(result.checks[0]!.status).to.equal(true);
        expect(result.checks[0]!.detail).to.match(/^suite fault \(SUITE_CRASHED\): the suite threw while loading: /);
        expect(result).to.deep.include({ failedTests: 0, reasonCodes: [], attribution: ["SUITE_CRASHED"], suiteAtFault: true });
      });
    }

    it("imports a module dynamically: SUITE_CRASHED", async () => {
      const result = await judge(attemptingSuite('test("import", async () => { await import("fs"); })'), GOOD_DELIVERABLE);
      expect(result).to.deep.include({ failedTests: 0, attribution: ["SUITE_CRASHED"], suiteAtFault: true });
    });

    it("reads the clock or the PRNG for its verdict: SUITE_INPUT_DEPENDENT", async () => {
      for (const condition of [`Date.now() === ${INPUTS.clockMs}`, "Math.random() < 2 && String(Math.random()).startsWith(String(Math.random()).slice(0, 3)) === false"]) {
        const suite = attemptingSuite(`test("depends", () => equal(${condition}, true))`);
        const result = await judge(suite, GOOD_DELIVERABLE);
        expect(result.attribution, condition).to.deep.equal(["SUITE_INPUT_DEPENDENT"]);
        expect(result.suiteAtFault).to.equal(true);
      }
    });

    it("pollutes its own prototypes: the host and the deliverable are unaffected", async () => {
      const suite = attemptingSuite('Object.prototype.polluted = true; test("deliverable clean", () => equal(call("add", [2, 2], { module: "math.js" }), 4))');
      const result = await judge(suite, { files: { "math.js": "exports.add = (a, b) => ({}).polluted === undefined ? a + b : -1;\n" } });
      expect(result.checks[0]).to.include({ status: true, detail: "all 2 tests passed" });
    });

    for (const [label, attempt, fault] of [
      ["loops forever", "for (;;) {}", "SUITE_STEP_BUDGET"],
      // Issue 27: zero-filling memory costs fuel (fuel.ts), so unbounded allocation runs out of steps before memory.
      ["allocates without bound", "const hoard = []; for (;;) hoard.push(new ArrayBuffer(1 << 20))", "SUITE_STEP_BUDGET"],
      ["recurses without bound", "const f = () => f(); f()", "SUITE_MEMORY_LIMIT"],
      ["floods its output", 'for (;;) console.log("x".repeat(1000))', "SUITE_OUTPUT_LIMIT"],
    ] as const) {
      it(`${label}: ${fault}`, async () => {
        const result = await judge(attemptingSuite(attempt), GOOD_DELIVERABLE);
        expect(result).to.deep.include({ failedTests: 0, attribution: [fault], suiteAtFault: true });
      });
    }
  });
});
