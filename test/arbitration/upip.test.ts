import { expect } from "chai";
import { createHash } from "node:crypto";

import { canon } from "../../channel-client/canonical";
import {
  upipDeps,
  upipFromJson,
  upipHashHex,
  upipRecord,
  upipResult,
  upipStackHash,
  upipState,
  verifyUpip,
  type UpipProcess,
  type UpipRecord,
} from "../../arbitration/upip";
import { thrown } from "../helpers/assert";
import { GOOD_DELIVERABLE, mutable, SUITE } from "./fixtures/samples";

const sha256 = (text: string | Buffer): string => createHash("sha256").update(text).digest("hex");
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

const PROCESS: UpipProcess = {
  command: ["node", "run.js"],
  intent: "replay",
  actor: "arbitrator",
  env_vars: { PATH: "/usr/bin:/bin", HOME: "." },
  working_dir: ".",
  sandbox: { network: "isolated", timeout_ms: 1000, max_output_bytes: 4096, node_flags: ["--max-old-space-size=256"] },
};

function sample(): UpipRecord {
  return upipRecord({
    state: upipState(SUITE, GOOD_DELIVERABLE),
    deps: upipDeps("20.19.0"),
    process: PROCESS,
    result: upipResult({ exitCode: 0, signal: null, timedOut: false, outputTruncated: false, stdout: bytes("ok\n"), stderr: bytes("") }),
  });
}

describe("arbitration/upip", () => {
  describe("layer hashes (known answers)", () => {
    it("state_hash is sha256 of canon({suite, deliverable})", () => {
      const expected = sha256(canon({ suite: SUITE, deliverable: GOOD_DELIVERABLE }));
      expect(upipState(SUITE, GOOD_DELIVERABLE)).to.deep.equal({ state_type: "files", state_hash: `files:sha256:${expected}` });
      expect(upipState(GOOD_DELIVERABLE, SUITE).state_hash).not.to.equal(`files:sha256:${expected}`);
    });

    it("deps_hash is sha256 of the sorted name:version lines, node included", () => {
      expect(upipDeps("20.19.0").deps_hash).to.equal(`deps:sha256:${sha256("node:20.19.0\n")}`);
      const deps = upipDeps("20.19.0", { zod: "3.0.0", ajv: "8.20.0" });
      expect(deps.deps_hash).to.equal(`deps:sha256:${sha256("ajv:8.20.0\nnode:20.19.0\nzod:3.0.0\n")}`);
      expect(Object.keys(deps.packages)).to.deep.equal(["ajv", "zod"]);
      expect(upipDeps().runtime_version).to.equal(process.versions.node);
    });

    it("result_hash is sha256(String(exit_code) + stdout + stderr) over raw bytes", () => {
      const result = upipResult({ exitCode: 1, signal: null, timedOut: false, outputTruncated: false, stdout: bytes("out"), stderr: bytes("err") });
      expect(result).to.deep.equal({
        success: false,
        exit_code: 1,
        signal: null,
        timed_out: false,
        output_truncated: false,
        stdout_sha256: `sha256:${sha256("out")}`,
        stderr_sha256: `sha256:${sha256("err")}`,
        result_hash: `sha256:${sha256("1outerr")}`,
      });
      const killed = upipResult({ exitCode: null, signal: "SIGKILL", timedOut: true, outputTruncated: false, stdout: bytes(""), stderr: bytes("") });
      expect(killed.result_hash).to.equal(`sha256:${sha256("null")}`);
      expect(killed.success).to.equal(false);
      // Invalid UTF-8 is hashed as the bytes it is.
      const raw = upipResult({ exitCode: 0, signal: null, timedOut: false, outputTruncated: false, stdout: new Uint8Array([0xff]), stderr: bytes("") });
      expect(raw.stdout_sha256).to.equal(`sha256:${sha256(Buffer.from([0xff]))}`);
    });

    it("stack_hash is sha256 of canon([state, deps, process, result])", () => {
      const record = sample();
      expect(record.stack_hash).to.equal(`upip:sha256:${sha256(canon([record.state, record.deps, record.process, record.result]))}`);
      expect(upipStackHash(record)).to.equal(record.stack_hash);
      expect(upipHashHex(record)).to.equal(`0x${record.stack_hash.slice(12)}`);
      expect(record.protocol).to.equal("UPIP");
      expect(record.version).to.equal("1.1");
    });

    it("holds no timestamps, hostnames or absolute paths", () => {
      const text = canon(sample());
      expect(text).not.to.match(/created_at|captured_at|verified_at|machine|hostname/);
      expect(text).not.to.contain("/tmp");
    });
  });

  describe("verifyUpip (L5)", () => {
    it("matches a byte-identical reproduction", () => {
      const result = verifyUpip(sample(), sample());
      expect(result).to.deep.equal({ match: true, original_hash: sample().stack_hash, reproduced_hash: sample().stack_hash });
    });

    it("does not match a different result", () => {
      const other = upipRecord({ ...sample(), result: upipResult({ exitCode: 1, signal: null, timedOut: false, outputTruncated: false, stdout: bytes(""), stderr: bytes("") }) });
      const result = verifyUpip(sample(), other);
      expect(result.match).to.equal(false);
      expect(result.reproduced_hash).to.equal(other.stack_hash);
    });

    it("does not match when a record's stored stack hash lies about its layers", () => {
      const forged = { ...sample(), result: { ...sample().result, exit_code: 3 } };
      const result = verifyUpip(sample(), forged);
      expect(result.match).to.equal(false);
      expect(result.reproduced_hash).not.to.equal(forged.stack_hash);
      const both = verifyUpip(forged, forged);
      expect(both.match).to.equal(false);
    });
  });

  describe("upipFromJson", () => {
    it("accepts a record and returns it unchanged", () => {
      expect(upipFromJson(JSON.parse(canon(sample())))).to.deep.equal(sample());
    });

    type Edit = (j: Record<string, any>) => void;
    const cases: Array<[string, Edit, string, string]> = [
      ["another protocol", (j) => (j.protocol = "TIBET"), "InvalidFieldError", "UpipRecord.protocol"],
      ["a timestamp field", (j) => (j.created_at = "2026-01-01T00:00:00Z"), "UnknownFieldError", "UpipRecord.created_at"],
      ["a git state", (j) => (j.state.state_type = "git"), "InvalidFieldError", "UpipRecord.state.state_type"],
      ["a malformed state hash", (j) => (j.state.state_hash = "sha256:00"), "InvalidFieldError", "UpipRecord.state.state_hash"],
      ["a python runtime", (j) => (j.deps.runtime = "python"), "InvalidFieldError", "UpipRecord.deps.runtime"],
      ["a wrong deps hash", (j) => (j.deps.runtime_version = "22.0.0"), "InvalidUpipError", "UpipRecord.deps.deps_hash"],
      ["a working dir that is a path", (j) => (j.process.working_dir = "/tmp/x"), "InvalidFieldError", "UpipRecord.process.working_dir"],
      ["a networked sandbox", (j) => (j.process.sandbox.network = "host"), "InvalidFieldError", "UpipRecord.process.sandbox.network"],
      ["a command string", (j) => (j.process.command = "node run.js"), "InvalidFieldError", "UpipRecord.process.command"],
      ["a numeric env var", (j) => (j.process.env_vars.X = 1), "InvalidFieldError", "UpipRecord.process.env_vars.X"],
      ["both exit code and signal", (j) => (j.result.signal = "SIGKILL"), "InvalidUpipError", "UpipRecord.result"],
      ["success with a non-zero exit", (j) => (j.result.exit_code = 1), "InvalidUpipError", "UpipRecord.result.success"],
      ["an exit code over 255", (j) => (j.result.exit_code = 256), "InvalidFieldError", "UpipRecord.result.exit_code"],
      ["a lowercase signal", (j) => ((j.result.exit_code = null), (j.result.signal = "kill"), (j.result.success = false)), "InvalidFieldError", "UpipRecord.result.signal"],
      ["timed out and truncated", (j) => Object.assign(j.result, { exit_code: null, signal: "SIGKILL", success: false, timed_out: true, output_truncated: true }), "InvalidUpipError", "UpipRecord.result"],
      ["a bare hex result hash", (j) => (j.result.result_hash = "ab".repeat(32)), "InvalidFieldError", "UpipRecord.result.result_hash"],
      ["a changed output hash", (j) => (j.result.stdout_sha256 = `sha256:${"00".repeat(32)}`), "InvalidUpipError", "UpipRecord.stack_hash"],
      ["a changed intent", (j) => (j.process.intent = "something else"), "InvalidUpipError", "UpipRecord.stack_hash"],
      ["a malformed stack hash", (j) => (j.stack_hash = "sha256:00"), "InvalidFieldError", "UpipRecord.stack_hash"],
    ];
    for (const [label, edit, name, where] of cases) {
      it(`rejects ${label}`, () => {
        const j = mutable(sample());
        edit(j);
        const err = thrown(() => upipFromJson(j));
        expect(err.name, err.message).to.equal(name);
        expect(err.message).to.contain(where);
      });
    }
  });
});
