import { expect } from "chai";
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import { readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import type { AddressInfo } from "node:net";

import { canon } from "../../channel-client/canonical";
import type { Bundle } from "../../arbitration/bundle";
import { MAX_MESSAGE_BYTES, type CallRequest } from "../../arbitration/harness/protocol";
import { DeliverableHost, LineReader, type DeliverableHostOptions } from "../../arbitration/harness/relay";
import { HARNESS_SHA256 } from "../../arbitration/harness/sources";
import { icsFromJson, icsToJson, runnerFromJson, runnerToJson, type Runner } from "../../arbitration/ics";
import { parseTestSummary, replay, PINNED_ENV, type ReplayOutcome } from "../../arbitration/sandbox";
import { upipFromJson, verifyUpip } from "../../arbitration/upip";
import { rejection, thrown } from "../helpers/assert";
import { FAILING_DELIVERABLE, PASSING_DELIVERABLE, SUITE as CODE_GIG_SUITE } from "../../scripts/examples/code-gig";
import { BAD_DELIVERABLE, GOOD_DELIVERABLE, RUNNER as RUNNER_JSON, sampleIcsJson, SUITE } from "./fixtures/samples";

const RUNNER: Runner = { command: ["node", "run.js"], timeoutMs: 10_000, maxOutputBytes: 65_536 };
const ACTOR = "test-arbitrator";
const INTENT = "sandbox test";

const run = (suite: Bundle, deliverable: Bundle = GOOD_DELIVERABLE, runner: Runner = RUNNER) =>
  replay({ suite, deliverable, runner, actor: ACTOR, intent: INTENT });

/** A one-file suite whose script is `source`. */
const script = (source: string): Bundle => ({ files: { "run.js": source } });

/** A one-file deliverable. */
const oneFile = (name: string, source: string): Bundle => ({ files: { [name]: source } });

/**
 * One call of {@link callSuite}: `expect` is the result it must return, `error` the message it must reject
 * with; with neither, the outcome is only printed.
 */
type Step = { name: string; fn: string; args?: unknown[]; module?: string; expect?: unknown; error?: string };

/**
 * A suite that makes the calls in order through the harness, prints each outcome as a JSON line
 * `{"name", "ok"|"error"}`, and fails the steps whose outcome is not the expected one.
 */
function callSuite(steps: Step[]): Bundle {
  return script(
    [
      '"use strict";',
      'const { call } = require("./.ioi/harness.js");',
      `const steps = JSON.parse(${JSON.stringify(JSON.stringify(steps))});`,
      "(async () => {",
      "  const failed = [];",
      "  for (const step of steps) {",
      "    let outcome;",
      "    try { outcome = { ok: await call(step.fn, step.args || [], step.module ? { module: step.module } : undefined) }; }",
      "    catch (e) { outcome = { error: e.message }; }",
      "    console.log(JSON.stringify({ name: step.name, ...outcome }));",
      '    const expected = "error" in step ? { error: step.error } : "expect" in step ? { ok: step.expect } : outcome;',
      "    if (JSON.stringify(outcome) !== JSON.stringify(expected)) failed.push(step.name);",
      "  }",
      "  console.log(JSON.stringify({ total: steps.length, failed }));",
      "  process.exitCode = failed.length === 0 ? 0 : 1;",
      "})();",
    ].join("\n"),
  );
}

/** The outcomes a {@link callSuite} printed, by step name. */
function outcomes(outcome: ReplayOutcome): Record<string, { ok?: unknown; error?: string }> {
  const lines = outcome.stdout.trim().split("\n").slice(0, -1);
  return Object.fromEntries(
    lines.map((line) => {
      const { name, ...rest } = JSON.parse(line) as { name: string; ok?: unknown; error?: string };
      return [name, rest];
    }),
  );
}

/** The 13 lines SUITE prints for the given failures, in case order. */
function suiteLines(failed: string[]): string {
  const names = ["add_zero", "add_one", "add_pos", "add_neg", "add_mixed", "add_big", "mul_zero", "mul_one", "mul_pos", "mul_neg", "mul_two_neg", "mul_big"];
  return [...names.map((name) => `${failed.includes(name) ? "not ok" : "ok"} ${name}`), JSON.stringify({ total: 12, failed }), ""].join("\n");
}

async function replayDirs(): Promise<string[]> {
  return (await readdir(tmpdir())).filter((name) => name.startsWith("ioi-replay-"));
}

describe("arbitration/sandbox", function () {
  this.timeout(60_000);

  it("replays a passing suite: exit 0, summary with no failures, a valid UPIP record", async () => {
    const outcome = await run(SUITE, GOOD_DELIVERABLE);
    expect(outcome.summary).to.deep.equal({ total: 12, failed: [] });
    expect(outcome.record.result).to.include({ success: true, exit_code: 0, signal: null, timed_out: false, output_truncated: false });
    expect(outcome.record.process.command).to.deep.equal(["node", "run.js"]);
    expect(outcome.record.process.env_vars).to.deep.equal({
      ...PINNED_ENV,
      HOME: ".",
      IOI_DELIVERABLE_HOST: "separate-process",
      IOI_CALL_TIMEOUT_MS: "2000",
      IOI_HARNESS_SHA256: HARNESS_SHA256,
    });
    expect(outcome.record.process.sandbox).to.include({ network: "isolated", timeout_ms: 10_000, max_output_bytes: 65_536 });
    expect(outcome.record.deps.runtime_version).to.equal(process.versions.node);
    expect(outcome.stdout).to.equal(suiteLines([]));
    // Every test was one call into a single deliverable host.
    expect(outcome).to.include({ calls: 12, hostStarts: 1, hostStdout: "", hostStderr: "" });
    // The record survives its own strict parser (hashes recomputed).
    expect(upipFromJson(JSON.parse(canon(outcome.record)))).to.deep.equal(outcome.record);
  });

  it("replays a failing suite: 3 of 12 tests fail, exit 1", async () => {
    const outcome = await run(SUITE, BAD_DELIVERABLE);
    expect(outcome.summary).to.deep.equal({ total: 12, failed: ["add_one", "add_big", "mul_neg"] });
    expect(outcome.record.result).to.include({ success: false, exit_code: 1, timed_out: false });
  });

  it("runs the code-gig example's suite: the failing delivery fails exactly slug_trim, slug_symbols and slug_repeat", async () => {
    const failing = await run(CODE_GIG_SUITE, FAILING_DELIVERABLE);
    expect(failing.summary).to.deep.equal({ total: 12, failed: ["slug_trim", "slug_symbols", "slug_repeat"] });
    expect(failing.record.result.exit_code).to.equal(1);
    const passing = await run(CODE_GIG_SUITE, PASSING_DELIVERABLE);
    expect(passing.summary).to.deep.equal({ total: 12, failed: [] });
    expect(passing.record.result.exit_code).to.equal(0);
  });

  it("gives byte-identical records for two runs of the same inputs (determinism)", async () => {
    const first = await run(SUITE, BAD_DELIVERABLE);
    const second = await run(SUITE, BAD_DELIVERABLE);
    expect(canon(first.record)).to.equal(canon(second.record));
    expect(verifyUpip(first.record, second.record).match).to.equal(true);
    const other = await run(SUITE, GOOD_DELIVERABLE);
    expect(verifyUpip(first.record, other.record).match).to.equal(false);
  });

  it("hides the temp dir's path from the record: stack traces print ./run.js", async () => {
    const suite = script('console.log(process.cwd()); console.error(new Error("boom").stack); console.log(JSON.stringify({total: 1, failed: []}));');
    const first = await run(suite);
    const second = await run(suite);
    expect(first.stdout.split("\n")[0]).to.equal(".");
    expect(first.stderr).to.contain("./run.js:1:");
    expect(first.stderr).not.to.contain(tmpdir());
    expect(canon(first.record)).to.equal(canon(second.record));
  });

  it("hides the host's temp dir too: paths in the deliverable's results and errors come back as ./deliverable/...", async () => {
    const deliverable = oneFile(
      "where.js",
      'exports.where = () => [process.cwd(), __filename, process.env.HOME];\nexports.missing = () => require("./nope.js");\n',
    );
    const suite = callSuite([
      { name: "where", fn: "where", expect: [".", "./deliverable/where.js", "."] },
      { name: "missing", fn: "missing" },
    ]);
    const first = await run(suite, deliverable);
    const second = await run(suite, deliverable);
    expect(first.summary, first.stdout).to.deep.equal({ total: 2, failed: [] });
    expect(outcomes(first).missing!.error).to.match(/^Cannot find module '\.\/nope\.js'\nRequire stack:\n- \.\/deliverable\/where\.js\n/);
    expect(first.stdout).not.to.contain(tmpdir());
    expect(canon(first.record)).to.equal(canon(second.record));
  });

  it("kills an infinite loop at the timeout (SIGKILL to the process group) and records no output", async () => {
    const started = Date.now();
    const outcome = await run(script('console.log("spinning"); for (;;) {}'), GOOD_DELIVERABLE, { ...RUNNER, timeoutMs: 300 });
    expect(Date.now() - started).to.be.below(5_000);
    expect(outcome.record.result).to.include({ success: false, exit_code: null, signal: "SIGKILL", timed_out: true, output_truncated: false });
    expect(outcome.summary).to.equal(null);
    // Output before a kill depends on timing, so the record hashes none of it.
    const again = await run(script('console.log("spinning"); for (;;) {}'), GOOD_DELIVERABLE, { ...RUNNER, timeoutMs: 300 });
    expect(canon(again.record)).to.equal(canon(outcome.record));
  });

  it("kills a suite that floods its output past max_output_bytes", async () => {
    const flood = script('const line = "x".repeat(1000) + "\\n"; for (;;) { process.stdout.write(line); process.stderr.write(line); }');
    const outcome = await run(flood, GOOD_DELIVERABLE, { ...RUNNER, maxOutputBytes: 4096 });
    expect(outcome.record.result).to.include({ success: false, exit_code: null, signal: "SIGKILL", output_truncated: true, timed_out: false });
    expect(Buffer.byteLength(outcome.stdout) + Buffer.byteLength(outcome.stderr)).to.be.at.most(4096);
    expect(outcome.summary).to.equal(null);
  });

  describe("isolation", () => {
    let server: Server;
    let port: number;
    let hits = 0;

    before(async () => {
      server = createServer((_req, res) => {
        hits++;
        res.end("reachable");
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      port = (server.address() as AddressInfo).port;
    });
    after(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it("has no network: net.connect to 127.0.0.1 and fetch both fail", async () => {
      const suite = script(`
        const net = require("net");
        const results = {};
        const socket = net.connect(${port}, "127.0.0.1");
        socket.on("connect", () => { results.net = "connected"; socket.destroy(); next(); });
        socket.on("error", (e) => { results.net = "error " + e.code; next(); });
        function next() {
          fetch("http://127.0.0.1:${port}/").then(
            (r) => r.text().then((t) => { results.fetch = "ok " + t; done(); }),
            (e) => { results.fetch = "error " + ((e.cause && e.cause.code) || e.name); done(); },
          );
        }
        function done() {
          console.log(JSON.stringify(results));
          const failed = [];
          if (!results.net.startsWith("error")) failed.push("net");
          if (!results.fetch.startsWith("error")) failed.push("fetch");
          console.log(JSON.stringify({ total: 2, failed }));
        }`);
      // Sanity: the server is reachable from here.
      expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).to.equal("reachable");
      const before = hits;
      const outcome = await run(suite);
      expect(outcome.summary, outcome.stdout + outcome.stderr).to.deep.equal({ total: 2, failed: [] });
      expect(outcome.stdout).to.match(/"net":"error E[A-Z]+"/);
      expect(hits).to.equal(before);
    });

    it("passes only the pinned environment: a secret in the parent's env is visible to neither process", async () => {
      process.env.IOI_SANDBOX_TEST_SECRET = "hunter2";
      try {
        const outcome = await run(
          script(
            'const { call } = require("./.ioi/harness.js");' +
              'call("env", [], { module: "env.js" }).then((hostEnv) => {' +
              "  console.log(JSON.stringify(process.env)); console.log(JSON.stringify(hostEnv)); console.log(String(process.env.IOI_SANDBOX_TEST_SECRET));" +
              '  console.log(JSON.stringify({total: 1, failed: process.env.IOI_SANDBOX_TEST_SECRET || hostEnv.IOI_SANDBOX_TEST_SECRET ? ["env"] : []}));' +
              "});",
          ),
          oneFile("env.js", "exports.env = () => ({ ...process.env });\n"),
        );
        expect(outcome.summary, outcome.stdout + outcome.stderr).to.deep.equal({ total: 1, failed: [] });
        const [suiteEnv, hostEnv] = outcome.stdout.split("\n").slice(0, 2).map((line) => JSON.parse(line) as Record<string, string>);
        expect(Object.keys(suiteEnv!).sort()).to.deep.equal([
          "HOME",
          "IOI_CALL_TIMEOUT_MS",
          "IOI_DELIVERABLE_HOST",
          "IOI_HARNESS_SHA256",
          "LANG",
          "LC_ALL",
          "NODE_OPTIONS",
          "PATH",
          "TZ",
        ]);
        expect(Object.keys(hostEnv!).sort()).to.deep.equal(["HOME", "LANG", "LC_ALL", "NODE_OPTIONS", "PATH", "TZ"]);
        expect(suiteEnv!.HOME).to.equal(".");
        expect(hostEnv!.HOME).to.equal(".");
        expect(outcome.stdout).not.to.contain("hunter2");
      } finally {
        delete process.env.IOI_SANDBOX_TEST_SECRET;
      }
    });

    it("lets the suite read only its own directory (which holds no deliverable), write nothing, spawn nothing and eval nothing", async () => {
      const outcome = await run(
        script(`
          const fs = require("fs");
          const attempt = (name, fn) => { try { fn(); return name; } catch (e) { return null; } };
          const escaped = [
            attempt("read_etc", () => fs.readFileSync("/etc/passwd")),
            attempt("read_parent", () => fs.readdirSync("..")),
            attempt("read_deliverable", () => fs.readdirSync("deliverable")),
            attempt("write", () => fs.writeFileSync("x.txt", "x")),
            attempt("spawn", () => require("child_process").execFileSync("/bin/true")),
            attempt("eval", () => eval("1 + 1")),
            attempt("function", () => new Function("return 1")()),
          ].filter(Boolean);
          const own = fs.readFileSync("run.js", "utf8").includes("read_own") && JSON.stringify(fs.readdirSync(".").sort()) === '[".ioi","run.js"]';
          console.log(JSON.stringify({ total: 8, failed: own ? escaped : [...escaped, "read_own"] }));`),
      );
      expect(outcome.summary, outcome.stdout + outcome.stderr).to.deep.equal({ total: 8, failed: [] });
    });

    it("confines the deliverable to its own directory: no suite files, no parent, no /etc, no network, no writes, no processes", async () => {
      const deliverable = oneFile(
        "probe.js",
        `const fs = require("fs");
        const path = require("path");
        const attempt = (name, fn) => { try { fn(); return name; } catch (e) { return null; } };
        exports.probe = async (suiteDir) => {
          const escaped = [
            attempt("read_parent", () => fs.readdirSync("..")),
            attempt("read_grandparent", () => fs.readdirSync("../..")),
            attempt("read_tmp", () => fs.readdirSync("/tmp")),
            attempt("read_etc", () => fs.readFileSync("/etc/passwd")),
            attempt("read_suite_dir", () => fs.readdirSync(suiteDir)),
            attempt("read_suite_file", () => fs.readFileSync(path.join(suiteDir, "run.js"))),
            attempt("read_harness", () => fs.readFileSync(path.join(suiteDir, ".ioi", "harness.js"))),
            attempt("read_proc", () => fs.readFileSync("/proc/self/environ")),
            attempt("write", () => fs.writeFileSync("x.txt", "x")),
            attempt("spawn", () => require("child_process").execFileSync("/bin/true")),
            attempt("worker", () => new (require("worker_threads").Worker)("exports.x = 1")),
            attempt("eval", () => eval("1 + 1")),
          ].filter(Boolean);
          const net = await new Promise((resolve) => {
            const socket = require("net").connect(80, "127.0.0.1");
            socket.on("connect", () => { socket.destroy(); resolve("net"); });
            socket.on("error", () => resolve(null));
          });
          if (net) escaped.push(net);
          return { escaped, own: fs.readdirSync(".").sort(), host: fs.readdirSync(".ioi"), files: fs.readdirSync("deliverable") };
        };
        // No process outside the host's own PID namespace can be signalled: not the suite, not the arbitrator.
        // kill(-1, 0) probes every process the caller may signal except itself (signal 0 sends nothing);
        // ESRCH means there is none.
        exports.signals = (arbitrator) => {
          let all = "none";
          try { process.kill(-1, 0); all = "reachable"; } catch (e) { all = e.code; }
          let parent = "none";
          try { process.kill(arbitrator, 0); parent = "visible"; } catch (e) { parent = e.code; }
          return { pid: process.pid, ppid: process.ppid, all, parent };
        };`,
      );
      const outcome = await run(
        script(`
          const { call } = require("./.ioi/harness.js");
          (async () => {
            const probe = await call("probe", [process.cwd()]);
            console.log(JSON.stringify(probe));
            const signals = await call("signals", [${process.pid}]);
            console.log(JSON.stringify(signals));
            const failed = [...probe.escaped];
            if (JSON.stringify(probe.own) !== '[".ioi","deliverable"]' || JSON.stringify(probe.host) !== '["host.js"]' || JSON.stringify(probe.files) !== '["probe.js"]') failed.push("layout");
            if (signals.all !== "ESRCH" || signals.parent !== "ESRCH") failed.push("signals");
            console.log(JSON.stringify({ total: 15, failed }));
          })();`),
        deliverable,
      );
      expect(outcome.summary, outcome.stdout + outcome.stderr).to.deep.equal({ total: 15, failed: [] });
      expect(JSON.parse(outcome.stdout.split("\n")[1]!)).to.deep.equal({ pid: 1, ppid: 0, all: "ESRCH", parent: "ESRCH" });
    });
  });

  it("removes both temp dirs after a run, a failure, a timeout, a call timeout and a refusal", async () => {
    const before = await replayDirs();
    await run(SUITE, GOOD_DELIVERABLE);
    await run(script("process.exit(3)"));
    await run(script("for (;;) {}"), GOOD_DELIVERABLE, { ...RUNNER, timeoutMs: 300 });
    await run(callSuite([{ name: "spin", fn: "spin", error: "timeout" }]), oneFile("index.js", "exports.spin = () => { for (;;) {} };"), { ...RUNNER, callTimeoutMs: 50 });
    await rejection(run(SUITE, GOOD_DELIVERABLE, { ...RUNNER, command: ["node", "missing.js"] }));
    expect(await replayDirs()).to.deep.equal(before);
  });

  it("records a crash as a result, not an error", async () => {
    const outcome = await run(script('throw new Error("crash")'));
    expect(outcome.record.result).to.include({ success: false, exit_code: 1, timed_out: false });
    expect(outcome.summary).to.equal(null);
    expect(outcome.stderr).to.contain("Error: crash");
  });

  it("refuses a runner that is not node, a script outside the suite, and suite files under deliverable/", async () => {
    let err = await rejection(run(SUITE, GOOD_DELIVERABLE, { ...RUNNER, command: ["python", "run.js"] }));
    expect(err.name).to.equal("UnsupportedRunnerError");
    err = await rejection(run(SUITE, GOOD_DELIVERABLE, { ...RUNNER, command: ["node", "missing.js"] }));
    expect(err.name).to.equal("UnsupportedRunnerError");
    expect(err.message).to.contain("missing.js");
    err = await rejection(run({ files: { "run.js": "", "deliverable/x.js": "" } }));
    expect(err.name).to.equal("InvalidBundleError");
    err = await rejection(run({ files: { "run.js": "", "../escape.js": "" } }));
    expect(err.name).to.equal("InvalidFieldError");
    for (const callTimeoutMs of [9, 60_001, 1.5]) {
      err = await rejection(run(SUITE, GOOD_DELIVERABLE, { ...RUNNER, callTimeoutMs }));
      expect(err.name).to.equal("UnsupportedRunnerError");
      expect(err.message).to.contain("callTimeoutMs");
    }
  });

  it("refuses to run at all without isolation tools (SandboxUnavailableError)", async () => {
    const err = await rejection(
      replay(
        { suite: SUITE, deliverable: GOOD_DELIVERABLE, runner: RUNNER, actor: ACTOR, intent: INTENT },
        { unshare: "/nonexistent/unshare", prlimit: "/nonexistent/prlimit" },
      ),
    );
    expect(err.name).to.equal("SandboxUnavailableError");
  });

  describe("the deliverable runs in a separate process", () => {
    const FAKE = JSON.stringify({ total: 12, failed: [] });

    it("a deliverable that prints a fake passing summary and exits 0 at load fails every test; the summary is the suite's", async () => {
      const cheat = oneFile(
        "math.js",
        `console.log(${JSON.stringify(FAKE)}); process.stdout.write(${JSON.stringify(`${FAKE}\n`)}); process.exit(0);\n` +
          "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n",
      );
      const outcome = await run(SUITE, cheat);
      const all = ["add_zero", "add_one", "add_pos", "add_neg", "add_mixed", "add_big", "mul_zero", "mul_one", "mul_pos", "mul_neg", "mul_two_neg", "mul_big"];
      expect(outcome.summary).to.deep.equal({ total: 12, failed: all });
      expect(outcome.stdout).to.equal(suiteLines(all));
      expect(outcome.record.result).to.include({ success: false, exit_code: 1 });
      // Each call met a host that died loading math.js, and the next call started a fresh one.
      expect(outcome).to.include({ hostStarts: 12, calls: 12 });
      expect(outcome.hostStdout).to.contain(FAKE);
    });

    it("a deliverable that fakes the summary and exits 0 in one function still fails exactly the tests it should", async () => {
      const cheat = oneFile(
        "math.js",
        "exports.add = (a, b) => {\n" +
          `  if (a >= 1000000) { console.log(${JSON.stringify(FAKE)}); process.exitCode = 0; process.exit(0); }\n` +
          "  return b === 0 && a !== 0 ? a + b + 1 : a + b;\n};\n" +
          "exports.mul = (a, b) => Math.abs(a * b);\n",
      );
      const outcome = await run(SUITE, cheat);
      expect(outcome.summary).to.deep.equal({ total: 12, failed: ["add_one", "add_big", "mul_neg"] });
      expect(outcome.stdout).to.equal(suiteLines(["add_one", "add_big", "mul_neg"]));
      expect(outcome.record.result).to.include({ exit_code: 1 });
      expect(outcome.hostStarts).to.equal(2);
      // Same verdict, same record as the plainly bad deliverable's replay would give apart from the state layer.
      const plain = await run(SUITE, BAD_DELIVERABLE);
      expect(outcome.record.result).to.deep.equal(plain.record.result);
    });

    it("a deliverable that patches console.log, process.stdout.write, JSON, Object.prototype and exit, and forges answers, changes nothing in the suite", async () => {
      const cheat = oneFile(
        "math.js",
        [
          `const fake = ${JSON.stringify(FAKE)};`,
          "const write = process.stdout.write.bind(process.stdout);",
          "console.log = () => write(fake + '\\n');",
          "console.error = () => undefined;",
          "process.stdout.write = () => true;",
          "JSON.stringify = () => fake;",
          "Object.prototype.polluted = true;",
          "process.exitCode = 0;",
          "process.on('exit', () => write(fake + '\\n'));",
          // Forged answers on the host's answer channel for the next calls (add_one expects 1, add_big 3000000).
          "try { require('fs').writeSync(3, '{\"id\":2,\"ok\":1}\\n{\"id\":6,\"ok\":3000000}\\n'); } catch (e) {}",
          "exports.add = (a, b) => (a >= 1000000 || (b === 0 && a !== 0) ? a + b + 1 : a + b);",
          "exports.mul = (a, b) => Math.abs(a * b);",
          "",
        ].join("\n"),
      );
      const outcome = await run(SUITE, cheat);
      expect(outcome.summary).to.deep.equal({ total: 12, failed: ["add_one", "add_big", "mul_neg"] });
      expect(outcome.stdout).to.equal(suiteLines(["add_one", "add_big", "mul_neg"]));
      expect(outcome.stderr).to.equal("");
      expect(outcome.record.result).to.deep.equal((await run(SUITE, BAD_DELIVERABLE)).record.result);
    });

    it("an infinite loop in one function fails that call with \"timeout\"; the other calls still run, on a fresh host", async () => {
      const deliverable = oneFile(
        "index.js",
        [
          "let calls = 0;",
          "exports.count = () => ++calls;",
          "exports.spin = () => { for (;;) {} };",
          "exports.hang = () => new Promise(() => {});",
          "exports.add = (a, b) => a + b;",
          "",
        ].join("\n"),
      );
      const started = Date.now();
      const outcome = await run(
        callSuite([
          { name: "count_1", fn: "count", expect: 1 },
          { name: "count_2", fn: "count", expect: 2 },
          { name: "spin", fn: "spin", error: "timeout" },
          { name: "count_fresh", fn: "count", expect: 1 },
          { name: "hang", fn: "hang", error: "timeout" },
          { name: "add", fn: "add", args: [2, 3], expect: 5 },
        ]),
        deliverable,
        { ...RUNNER, callTimeoutMs: 300 },
      );
      expect(outcome.summary, outcome.stdout + outcome.stderr).to.deep.equal({ total: 6, failed: [] });
      expect(outcome.record.result).to.include({ success: true, timed_out: false });
      expect(outcome.record.process.env_vars.IOI_CALL_TIMEOUT_MS).to.equal("300");
      expect(outcome.hostStarts).to.equal(3);
      expect(Date.now() - started).to.be.below(8_000);
    });

    it("a deliverable that crashes the host fails that call with \"host crashed\"; later calls work on a fresh host", async () => {
      const deliverable: Bundle = {
        files: {
          "index.js": [
            "let calls = 0;",
            "exports.count = () => ++calls;",
            "exports.exit = () => process.exit(3);",
            "exports.abort = () => process.abort();",
            "exports.stray = () => { setTimeout(() => { throw new Error('stray'); }, 0); Promise.reject(new Error('unawaited')); return 'fine'; };",
            "",
          ].join("\n"),
          "broken.js": "throw new Error('broken at load');\n",
        },
      };
      const outcome = await run(
        callSuite([
          { name: "count_1", fn: "count", expect: 1 },
          { name: "count_2", fn: "count", expect: 2 },
          { name: "exit", fn: "exit", error: "host crashed" },
          { name: "count_after_exit", fn: "count", expect: 1 },
          { name: "abort", fn: "abort", error: "host crashed" },
          { name: "count_after_abort", fn: "count", expect: 1 },
          { name: "broken", fn: "anything", module: "broken.js", error: "broken at load" },
          { name: "count_after_broken", fn: "count", expect: 2 },
          { name: "stray", fn: "stray", expect: "fine" },
        ]),
        deliverable,
      );
      expect(outcome.summary, outcome.stdout + outcome.stderr).to.deep.equal({ total: 9, failed: [] });
      expect(outcome.hostStarts).to.equal(3);
      expect(outcome.hostStderr).to.contain("unhandled rejection: unawaited");
    });

    it("pins Math.random, Date, performance.now, process.hrtime and crypto's random sources: two replays give byte-identical records", async () => {
      const deliverable = oneFile(
        "index.js",
        [
          "const crypto = require('crypto');",
          "exports.sample = () => ({",
          "  random: [Math.random(), Math.random()],",
          "  now: Date.now(),",
          "  date: new Date().toISOString(),",
          "  called: Date(),",
          "  sameCtor: new Date().constructor === Date && Object.getPrototypeOf(new Date()).constructor === Date,",
          "  parsed: new Date(0).toISOString(),",
          "  perf: performance.now(),",
          "  hr: String(process.hrtime.bigint()),",
          "  uuid: crypto.randomUUID(),",
          "  webUuid: globalThis.crypto.randomUUID(),",
          "  bytes: crypto.randomBytes(8).toString('hex'),",
          "  values: Array.from(globalThis.crypto.getRandomValues(new Uint8Array(4))),",
          "  int: crypto.randomInt(1000),",
          "});",
          "",
        ].join("\n"),
      );
      const suite = callSuite([
        { name: "first", fn: "sample" },
        { name: "second", fn: "sample" },
      ]);
      const first = await run(suite, deliverable);
      const second = await run(suite, deliverable);
      expect(first.summary).to.deep.equal({ total: 2, failed: [] });
      expect(canon(first.record)).to.equal(canon(second.record));
      expect(first.stdout).to.equal(second.stdout);
      const sample = outcomes(first).first!.ok as Record<string, unknown>;
      expect(sample).to.deep.include({
        now: 946_684_800_000,
        date: "2000-01-01T00:00:00.000Z",
        sameCtor: true,
        parsed: "1970-01-01T00:00:00.000Z",
        perf: 0,
        hr: "1000000000",
      });
      expect(sample.called).to.match(/^Sat Jan 01 2000 00:00:00 GMT\+0000/);
      const [a, b] = sample.random as number[];
      expect(a).to.be.within(0, 1);
      expect(a).not.to.equal(b);
      // The PRNG runs on: the second call draws new numbers.
      expect((outcomes(first).second!.ok as Record<string, unknown>).random).not.to.deep.equal(sample.random);
    });

    it("the host's own output is diagnostics: noise that differs between runs does not change the record", async () => {
      const deliverable = oneFile(
        "math.js",
        [
          "const crypto = require('crypto');",
          "const noise = () => crypto.generateKeySync('hmac', { length: 128 }).export().toString('hex') + ' ' + process.memoryUsage().heapUsed;",
          "console.log('loading', noise());",
          "console.error('warning', noise());",
          "exports.add = (a, b) => { console.log('add', noise()); return a + b; };",
          "exports.mul = (a, b) => { console.error('mul', noise()); return a * b; };",
          "",
        ].join("\n"),
      );
      const first = await run(SUITE, deliverable);
      const second = await run(SUITE, deliverable);
      expect(first.summary).to.deep.equal({ total: 12, failed: [] });
      expect(first.hostStdout).to.match(/^loading [0-9a-f]{32} \d+\n/);
      expect(first.hostStdout).not.to.equal(second.hostStdout);
      expect(first.hostStderr).not.to.equal(second.hostStderr);
      expect(first.stdout).to.equal(suiteLines([]));
      expect(canon(first.record)).to.equal(canon(second.record));
    });

    it("a host that floods its output is cut to max_output_bytes without cutting the suite short", async () => {
      const deliverable = oneFile("math.js", "exports.add = (a, b) => { process.stdout.write('x'.repeat(1 << 20)); return a + b; };\nexports.mul = (a, b) => a * b;\n");
      const outcome = await run(SUITE, deliverable, { ...RUNNER, maxOutputBytes: 4096 });
      expect(outcome.summary).to.deep.equal({ total: 12, failed: [] });
      expect(outcome.record.result).to.include({ success: true, output_truncated: false });
      expect(Buffer.byteLength(outcome.hostStdout!) + Buffer.byteLength(outcome.hostStderr!)).to.equal(4096);
    });

    it("answers only JSON: results that are not JSON, unknown modules and functions are errors; promises are awaited", async () => {
      const deliverable: Bundle = {
        files: {
          "lib.js": [
            "exports.undef = () => undefined;",
            "exports.nan = () => NaN;",
            "exports.fn = () => () => 1;",
            "exports.big = () => 1n;",
            "exports.map = () => new Map();",
            "exports.nested = () => ({ a: [1, { b: undefined }] });",
            "exports.circular = () => { const o = {}; o.self = o; return o; };",
            "exports.deep = () => { let v = 0; for (let i = 0; i < 100; i++) v = [v]; return v; };",
            "exports.huge = () => 'x'.repeat(2 * 1024 * 1024);",
            "exports.asyncValue = async (x) => ({ twice: x * 2, proto: { ['__proto__']: 1 } });",
            "exports.rejects = async () => { throw new TypeError('async nope'); };",
            "exports.throwsString = () => { throw 'plain string'; };",
            "exports.echo = (...args) => args;",
            "exports.count = (() => { let n = 0; return () => ++n; })();",
          ].join("\n"),
          "other.js": "exports.hello = () => 'from other';\n",
          "esm.mjs": "export const hello = async () => 'from esm';\n",
        },
      };
      const outcome = await run(
        callSuite([
          { name: "undef", fn: "undef", module: "lib.js", error: "undef returned a value that is not JSON: the result is undefined, which is not JSON" },
          { name: "nan", fn: "nan", module: "lib.js", error: "nan returned a value that is not JSON: the result is NaN, which is not JSON" },
          { name: "fn", fn: "fn", module: "lib.js", error: "fn returned a value that is not JSON: the result is a function, which is not JSON" },
          { name: "big", fn: "big", module: "lib.js", error: "big returned a value that is not JSON: the result is a bigint, which is not JSON" },
          { name: "map", fn: "map", module: "lib.js", error: "map returned a value that is not JSON: the result is a Map, not a plain object" },
          { name: "nested", fn: "nested", module: "lib.js", error: "nested returned a value that is not JSON: the result.a[1].b is undefined, which is not JSON" },
          { name: "circular", fn: "circular", module: "lib.js", error: "circular returned a value that is not JSON: the result.self is circular" },
          { name: "deep", fn: "deep", module: "lib.js" },
          { name: "huge", fn: "huge", module: "lib.js", error: "response too large" },
          { name: "count_after_huge", fn: "count", module: "lib.js", expect: 1 },
          { name: "async", fn: "asyncValue", module: "lib.js", args: [21], expect: { twice: 42, proto: { ["__proto__"]: 1 } } },
          { name: "rejects", fn: "rejects", module: "lib.js", error: "async nope" },
          { name: "string", fn: "throwsString", module: "lib.js", error: "plain string" },
          { name: "echo", fn: "echo", module: "lib.js", args: ["a", 1, null, [true], { k: "v" }], expect: ["a", 1, null, [true], { k: "v" }] },
          { name: "other", fn: "hello", module: "other.js", expect: "from other" },
          { name: "esm", fn: "hello", module: "esm.mjs", expect: "from esm" },
          { name: "no_export", fn: "nope", module: "lib.js", error: 'lib.js does not export a function "nope"' },
          { name: "inherited", fn: "constructor", module: "lib.js", error: 'lib.js does not export a function "constructor"' },
          { name: "missing_module", fn: "hello", module: "missing.js", error: 'bad call: module "missing.js" is not a file of the deliverable' },
          { name: "escape", fn: "hello", module: "../run.js", error: 'bad call: module "../run.js" is not a file of the deliverable' },
          { name: "harness", fn: "call", module: ".ioi/host.js", error: 'bad call: module ".ioi/host.js" is not a file of the deliverable' },
          { name: "no_default", fn: "hello", error: "bad call: no module named, and the deliverable has no index.js and not exactly one .js file" },
        ]),
        deliverable,
      );
      expect(outcome.summary, outcome.stdout + outcome.stderr).to.deep.equal({ total: 22, failed: [] });
      expect(outcomes(outcome).deep!.error).to.match(/nests deeper than 64 levels$/);
    });

    it("measures the round trip of a call", async function () {
      const calls = 200;
      const suite = script(
        [
          'const { call } = require("./.ioi/harness.js");',
          "(async () => {",
          `  for (let i = 0; i < ${calls}; i++) await call("add", [i, 1]);`,
          `  console.log(JSON.stringify({ total: ${calls}, failed: [] }));`,
          "})();",
        ].join("\n"),
      );
      const idle = script(`require("./.ioi/harness.js"); console.log(JSON.stringify({ total: 0, failed: [] }));`);
      let started = Date.now();
      const busy = await run(suite, GOOD_DELIVERABLE);
      const busyMs = Date.now() - started;
      started = Date.now();
      await run(idle, GOOD_DELIVERABLE);
      const idleMs = Date.now() - started;
      expect(busy.summary).to.deep.equal({ total: calls, failed: [] });
      expect(busy.calls).to.equal(calls);
      const perCall = Math.max(0, busyMs - idleMs) / calls;
      console.log(`      ${calls} calls: ${busyMs} ms, no calls: ${idleMs} ms, ≈ ${perCall.toFixed(2)} ms per call round trip`);
      expect(perCall).to.be.below(50);
    });
  });

  describe("the relay (harness/relay.ts) against scripted hosts", () => {
    /** A DeliverableHost whose "host" is `node -e script` (a real process, not isolated: the script is ours). */
    function scriptedHost(script: string, overrides: Partial<DeliverableHostOptions> = {}) {
      const unavailable: string[] = [];
      const output: string[] = [];
      const host = new DeliverableHost({
        spawn: () => spawn(process.execPath, ["-e", script], { stdio: ["pipe", "pipe", "pipe", "pipe"], detached: true }),
        callTimeoutMs: 1_000,
        startTimeoutMs: 5_000,
        rewrite: (text) => text.split("/secret/dir").join("."),
        onOutput: (_stream, chunk) => output.push(chunk.toString()),
        killGraceMs: 2_000,
        onUnavailable: (reason) => unavailable.push(reason),
        ...overrides,
      });
      return { host, unavailable, output };
    }
    const request = (id: number): CallRequest => ({ id, module: "index.js", fn: "f", args: [id] });
    const ANSWERS = "const net = require('net'); const out = new net.Socket({ fd: 3, readable: false, writable: true });";

    it("forwards only a well-formed answer to the call in flight; junk, other ids and stdout lines are ignored", async () => {
      const { host, output } = scriptedHost(
        `${ANSWERS}
        out.write('{"ready":true}\\n');
        process.stdin.on("data", (d) => {
          const { id } = JSON.parse(d);
          console.log(JSON.stringify({ id, ok: "forged on stdout" }));
          out.write('not json\\n{"id":' + (id + 1) + ',"ok":"early"}\\n{"id":' + id + ',"ok":1,"extra":2}\\n{"id":' + id + ',"error":7}\\n');
          out.write('{"ready":true}\\n{"id":' + id + ',"ok":{"path":"/secret/dir/x.js","/secret/dir":[1]}}\\n');
        });`,
      );
      try {
        expect(await host.request(request(1))).to.deep.equal({ id: 1, ok: { path: "./x.js", ".": [1] } });
        expect(await host.request(request(2))).to.deep.equal({ id: 2, ok: { path: "./x.js", ".": [1] } });
        expect(host).to.include({ starts: 1, calls: 2 });
        expect(output.join("")).to.contain("forged on stdout");
      } finally {
        await host.close();
      }
    });

    it("answers \"response too large\" for an answer line over 1 MiB and restarts the host", async () => {
      const { host } = scriptedHost(
        `${ANSWERS}
        out.write('{"ready":true}\\n');
        process.stdin.on("data", (d) => {
          const { id } = JSON.parse(d);
          out.write(JSON.stringify({ id, ok: id === 1 ? "x".repeat(${MAX_MESSAGE_BYTES}) : "small" }) + "\\n");
        });`,
      );
      try {
        expect(await host.request(request(1))).to.deep.equal({ id: 1, error: "response too large" });
        expect(await host.request(request(2))).to.deep.equal({ id: 2, ok: "small" });
        expect(host.starts).to.equal(2);
      } finally {
        await host.close();
      }
    });

    it("treats a host that dies before it is ready, or cannot be spawned, as the sandbox failing, not the deliverable", async () => {
      const dying = scriptedHost("process.exit(1)");
      expect(await dying.host.request(request(1))).to.deep.equal({ id: 1, error: "host unavailable" });
      expect(dying.unavailable).to.deep.equal(["the deliverable host exited before it was ready"]);
      await dying.host.close();

      const slow = scriptedHost("setTimeout(() => {}, 60000)", { startTimeoutMs: 200 });
      expect(await slow.host.request(request(1))).to.deep.equal({ id: 1, error: "host unavailable" });
      expect(slow.unavailable).to.deep.equal(["the deliverable host did not start within 200 ms"]);
      await slow.host.close();

      const missing = scriptedHost("", {
        spawn: () => {
          throw new Error("EAGAIN");
        },
      });
      expect(await missing.host.request(request(1))).to.deep.equal({ id: 1, error: "host unavailable" });
      expect(missing.unavailable).to.deep.equal(["the deliverable host could not be spawned: EAGAIN"]);
      await missing.host.close();
    });

    it("answers the call in flight and queued calls with \"host closed\" once closed", async () => {
      const { host } = scriptedHost(`${ANSWERS} out.write('{"ready":true}\\n'); process.stdin.on("data", () => {});`, { callTimeoutMs: 60_000 });
      const first = host.request(request(1));
      const second = host.request(request(2));
      await new Promise((resolve) => setTimeout(resolve, 300));
      await host.close();
      expect(await first).to.deep.equal({ id: 1, error: "host closed" });
      expect(await second).to.deep.equal({ id: 2, error: "host closed" });
      expect(await host.request(request(3))).to.deep.equal({ id: 3, error: "host closed" });
    });

    it("LineReader splits lines across chunks and drops an oversize line whole", () => {
      const lines: string[] = [];
      let oversize = 0;
      const reader = new LineReader(5, (line) => lines.push(line), () => oversize++);
      reader.push(Buffer.from("ab"));
      reader.push(Buffer.from("c\nabcdef"));
      reader.push(Buffer.from("gh\nok\n\n€"));
      reader.push(Buffer.from("\n"));
      expect(lines).to.deep.equal(["abc", "ok", "", "€"]);
      expect(oversize).to.equal(1);
    });
  });

  describe("runner.call_timeout_ms (ICS)", () => {
    it("is optional, kept absent when absent (same bytes, same ICS hash), and round-trips when present", () => {
      expect(runnerFromJson(RUNNER_JSON)).to.deep.equal({ command: ["node", "run.js"], timeoutMs: 10_000, maxOutputBytes: 65_536 });
      expect(runnerToJson(runnerFromJson(RUNNER_JSON))).to.deep.equal(RUNNER_JSON);
      for (const ms of [10, 2_000, 60_000]) {
        const json = { ...RUNNER_JSON, call_timeout_ms: ms };
        expect(runnerFromJson(json).callTimeoutMs).to.equal(ms);
        expect(runnerToJson(runnerFromJson(json))).to.deep.equal(json);
      }
      const ics = sampleIcsJson({ test_suite: { hash: sampleIcsJson().test_suite!.hash, runner: { ...RUNNER_JSON, call_timeout_ms: 500 } } });
      expect(canon(icsToJson(icsFromJson(ics)))).to.equal(canon(ics));
    });

    it("rejects a call timeout out of 10..60000 ms or not an integer", () => {
      for (const value of [9, 60_001, 1.5, "2000", null, -1]) {
        const err = thrown(() => runnerFromJson({ ...RUNNER_JSON, call_timeout_ms: value }));
        expect(err.name, String(value)).to.equal("InvalidFieldError");
        expect(err.message).to.contain("Runner.call_timeout_ms");
      }
    });
  });

  describe("parseTestSummary", () => {
    it("reads the last non-empty line", () => {
      expect(parseTestSummary('noise\n{"total": 3, "failed": ["a"]}\n\n')).to.deep.equal({ total: 3, failed: ["a"] });
      expect(parseTestSummary('{"total":0,"failed":[]}')).to.deep.equal({ total: 0, failed: [] });
    });

    it("returns null for anything else", () => {
      for (const text of [
        "",
        "\n\n",
        "not json",
        '{"total": 3, "failed": ["a"]}\ntrailing',
        '{"total": 3}',
        '{"total": 3, "failed": [], "extra": 1}',
        '{"total": "3", "failed": []}',
        '{"total": 1.5, "failed": []}',
        '{"total": -1, "failed": []}',
        '{"total": 1, "failed": ["a", "b"]}',
        '{"total": 2, "failed": ["a", "a"]}',
        '{"total": 2, "failed": [""]}',
        '{"total": 2, "failed": [1]}',
        '[{"total": 2, "failed": []}]',
        "null",
      ]) {
        expect(parseTestSummary(text), text).to.equal(null);
      }
    });
  });
});
