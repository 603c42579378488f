import { expect } from "chai";
import { createServer, type Server } from "node:http";
import { readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import type { AddressInfo } from "node:net";

import { canon } from "../../channel-client/canonical";
import type { Bundle } from "../../arbitration/bundle";
import type { Runner } from "../../arbitration/ics";
import { parseTestSummary, replay, PINNED_ENV } from "../../arbitration/sandbox";
import { upipFromJson, verifyUpip } from "../../arbitration/upip";
import { rejection } from "../helpers/assert";
import { BAD_DELIVERABLE, GOOD_DELIVERABLE, SUITE } from "./fixtures/samples";

const RUNNER: Runner = { command: ["node", "run.js"], timeoutMs: 10_000, maxOutputBytes: 65_536 };
const ACTOR = "test-arbitrator";
const INTENT = "sandbox test";

const run = (suite: Bundle, deliverable: Bundle = GOOD_DELIVERABLE, runner: Runner = RUNNER) =>
  replay({ suite, deliverable, runner, actor: ACTOR, intent: INTENT });

/** A one-file suite whose script is `source`. */
const script = (source: string): Bundle => ({ files: { "run.js": source } });

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
    expect(outcome.record.process.env_vars).to.deep.equal({ ...PINNED_ENV, HOME: "." });
    expect(outcome.record.process.sandbox).to.include({ network: "isolated", timeout_ms: 10_000, max_output_bytes: 65_536 });
    expect(outcome.record.deps.runtime_version).to.equal(process.versions.node);
    expect(outcome.stdout).to.contain("ok add_zero");
    // The record survives its own strict parser (hashes recomputed).
    expect(upipFromJson(JSON.parse(canon(outcome.record)))).to.deep.equal(outcome.record);
  });

  it("replays a failing suite: 3 of 12 tests fail, exit 1", async () => {
    const outcome = await run(SUITE, BAD_DELIVERABLE);
    expect(outcome.summary).to.deep.equal({ total: 12, failed: ["add_one", "add_big", "mul_neg"] });
    expect(outcome.record.result).to.include({ success: false, exit_code: 1, timed_out: false });
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

    it("passes only the pinned environment: a secret in the parent's env is not visible", async () => {
      process.env.IOI_SANDBOX_TEST_SECRET = "hunter2";
      try {
        const outcome = await run(
          script('console.log(JSON.stringify(process.env)); console.log(String(process.env.IOI_SANDBOX_TEST_SECRET)); console.log(JSON.stringify({total: 1, failed: process.env.IOI_SANDBOX_TEST_SECRET ? ["env"] : []}));'),
        );
        expect(outcome.summary).to.deep.equal({ total: 1, failed: [] });
        const env = JSON.parse(outcome.stdout.split("\n")[0]!) as Record<string, string>;
        expect(Object.keys(env).sort()).to.deep.equal(["HOME", "LANG", "LC_ALL", "NODE_OPTIONS", "PATH", "TZ"]);
        expect(env.HOME).to.equal(".");
        expect(outcome.stdout).not.to.contain("hunter2");
      } finally {
        delete process.env.IOI_SANDBOX_TEST_SECRET;
      }
    });

    it("lets the suite read only its own directory, write nothing, spawn nothing and eval nothing", async () => {
      const outcome = await run(
        script(`
          const fs = require("fs");
          const attempt = (name, fn) => { try { fn(); return name; } catch (e) { return null; } };
          const escaped = [
            attempt("read_etc", () => fs.readFileSync("/etc/passwd")),
            attempt("read_parent", () => fs.readdirSync("..")),
            attempt("write", () => fs.writeFileSync("x.txt", "x")),
            attempt("spawn", () => require("child_process").execFileSync("/bin/true")),
            attempt("eval", () => eval("1 + 1")),
            attempt("function", () => new Function("return 1")()),
          ].filter(Boolean);
          const own = fs.readFileSync("deliverable/math.js", "utf8").includes("exports.add");
          console.log(JSON.stringify({ total: 7, failed: own ? escaped : [...escaped, "read_own"] }));`),
      );
      expect(outcome.summary, outcome.stdout + outcome.stderr).to.deep.equal({ total: 7, failed: [] });
    });
  });

  it("removes its temp dir after a run, a failure, a timeout and a refusal", async () => {
    const before = await replayDirs();
    await run(SUITE, GOOD_DELIVERABLE);
    await run(script("process.exit(3)"));
    await run(script("for (;;) {}"), GOOD_DELIVERABLE, { ...RUNNER, timeoutMs: 300 });
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
