/**
 * `ioi milestones` (issue 32): a v4 terms document binding a suite directory, the provider's signed Progress Proof
 * (the suite run in the sealed engine), and the payer's spot-check of it — true claims release the next ticket
 * (exit 0), a false claim or another repository pauses (exit 3), bad input is one sentence and exit 2.
 */
import { expect } from "chai";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { keccak256, stringToBytes, toHex, type LocalAccount } from "viem";

import type { Bundle } from "../../arbitration/documents/bundle";
import { bundleHash } from "../../arbitration/documents/bundle";
import { signProgressProof, signedProgressProofFromJson, signedProgressProofToJson } from "../../channel-client/core/progress-proof";
import { BROKEN_REPOSITORY, REPOSITORY_BY_TRANCHE, SUITE } from "../../scripts/examples/code-stream";
import { hardhatAccount, ROLE } from "../helpers/fixtures";
import { runCli } from "../helpers/cli";

const SESSION = keccak256(stringToBytes("cli stream session"));
const ESCROW = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const provider = hardhatAccount(ROLE.provider) as LocalAccount & { getHdKey(): { privateKey: Uint8Array | null } };

function writeBundle(dir: string, bundle: Bundle): string {
  for (const [file, content] of Object.entries(bundle.files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), content);
  }
  return dir;
}

describe("ioi milestones: v4 terms, Progress Proofs and the payer's spot-check from the command line (issue 32)", function () {
  this.timeout(120_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-milestones-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("terms → prove → check: the honest proof's sampled claims re-run true; a lying proof is caught (exit 3); another repository pauses (exit 3)", async () => {
    const suite = writeBundle(path.join(dir, "suite"), SUITE);
    const repo = writeBundle(path.join(dir, "repo"), REPOSITORY_BY_TRANCHE[0]!);
    const broken = writeBundle(path.join(dir, "broken"), BROKEN_REPOSITORY);
    const terms = path.join(dir, "terms.json");
    const t = await runCli(["milestones", "terms", "--price", "0.01eth", "--tranche-seconds", "60", "--suite-dir", suite, "--samples", "12", "--penalty", "30eth", "--out", terms, "--json"]);
    expect(t.code, t.err).to.equal(0);
    expect(JSON.parse(readFileSync(terms, "utf8")).stream.suite.hash).to.equal(bundleHash(SUITE));
    const inputs = ["--session", SESSION, "--chain-id", "31337", "--gas-escrow", ESCROW];
    const proofFile = path.join(dir, "proof.json");
    const p = await runCli(["milestones", "prove", "--terms-file", terms, "--suite-dir", suite, "--repository-dir", repo, "--tranche", "1", "--out", proofFile, ...inputs, "--json"], {
      IOI_PRIVATE_KEY: toHex(provider.getHdKey().privateKey!),
    });
    expect(p.code, p.err).to.equal(0);
    expect(JSON.parse(p.out.split("\n").pop()!)).to.deep.include({ passed: 9, total: 12 });
    const check = (repository: string, file: string) =>
      runCli(["milestones", "check", "--terms-file", terms, "--suite-dir", suite, "--repository-dir", repository, "--proof-file", file, "--secret", keccak256(stringToBytes("s")), "--provider", provider.address, ...inputs, "--json"]);
    const honest = await check(repo, proofFile);
    expect(honest.code, honest.err).to.equal(0);
    const honestResult = JSON.parse(honest.out.split("\n").pop()!);
    expect(honestResult.outcome).to.equal("pass");
    expect(honestResult.samples).to.have.length(12); // --samples 12: every claim
    // The provider flips one failing claim to "pass" and signs it.
    const signed = signedProgressProofFromJson(JSON.parse(readFileSync(proofFile, "utf8")));
    const flipped = signed.proof.tests.findIndex((x) => x.outcome === "fail");
    const lie = await signProgressProof({ account: provider, proof: { ...signed.proof, tests: signed.proof.tests.map((x, i) => (i === flipped ? { ...x, outcome: "pass" as const } : x)) } });
    const lieFile = path.join(dir, "lie.json");
    writeFileSync(lieFile, JSON.stringify(signedProgressProofToJson(lie)));
    const caught = await check(repo, lieFile);
    expect(caught.code).to.equal(3);
    expect(JSON.parse(caught.out.split("\n").pop()!)).to.deep.include({ outcome: "false_claim" });
    const moved = await check(broken, proofFile);
    expect(moved.code).to.equal(3);
    expect(JSON.parse(moved.out.split("\n").pop()!)).to.deep.include({ outcome: "repository_changed" });
  });

  it("bad input: a v2 terms file, a secret that is not 32 bytes, a proof signed by someone else — one sentence each, non-zero exit", async () => {
    const suite = writeBundle(path.join(dir, "suite"), SUITE);
    const v2 = path.join(dir, "v2.terms.json");
    writeFileSync(v2, readFileSync(path.join(__dirname, "..", "..", "examples", "documents", "metered.terms.json")));
    const r = await runCli(["milestones", "check", "--terms-file", v2, "--suite-dir", suite, "--repository-dir", suite, "--proof-file", v2, "--secret", "0x12", "--session", SESSION]);
    expect(r.code).to.equal(2);
    expect(r.err).to.match(/version 2 terms document; milestone streaming needs version 4/);
    const terms = path.join(dir, "terms.json");
    expect((await runCli(["milestones", "terms", "--price", "1000", "--tranche-seconds", "60", "--suite-dir", suite, "--out", terms])).code).to.equal(0);
    const proof = path.join(__dirname, "..", "..", "examples", "documents", "progress-proof.json");
    const short = await runCli(["milestones", "check", "--terms-file", terms, "--suite-dir", suite, "--repository-dir", suite, "--proof-file", proof, "--secret", "0x12", "--session", SESSION]);
    expect(short.code).to.equal(2);
    expect(short.err).to.match(/--secret must be 0x and 64 hex digits/);
    const stranger = await runCli(["milestones", "check", "--terms-file", terms, "--suite-dir", suite, "--repository-dir", suite, "--proof-file", proof, "--secret", SESSION, "--provider", hardhatAccount(ROLE.stranger).address, "--session", SESSION]);
    expect(stranger.code).to.equal(1);
    expect(stranger.err).to.match(/progress proof signature was not made by/);
    // Streaming over the network: a session the store does not hold, a stream with no journal, v4 options on v2 terms.
    const db = ["--db", path.join(dir, "payer.db"), "--key-env", "KEY"];
    const key = { KEY: "0x" + "11".repeat(32) };
    const unknown = await runCli(["milestones", "stream", "--session", SESSION, "--suite-dir", suite, "--tranches", "2", ...db], key);
    expect(unknown.code).to.equal(2);
    expect(unknown.err).to.match(/The store holds no channel/);
    const noTranches = await runCli(["milestones", "stream", "--session", SESSION, "--suite-dir", suite, "--tranches", "0", ...db], key);
    expect(noTranches.code).to.equal(2);
    const noCase = await runCli(["milestones", "case", "--session", SESSION, "--suite-dir", suite, "--out", path.join(dir, "case.json"), ...db], key);
    expect(noCase.code).to.equal(2);
    expect(noCase.err).to.match(/The store holds no channel/);
    const v2Stream = await runCli(["provider", "--terms-file", v2, "--suite-dir", suite, "--repository-dir", suite, "--key-env", "KEY", "--rpc", "http://127.0.0.1:9"], key);
    expect(v2Stream.code).to.equal(2);
    expect(v2Stream.err).to.match(/--suite-dir and --repository-dir go with version 4 terms/);
  });

  it("is listed in the CLI's help, with --help for each subcommand", async () => {
    const top = await runCli(["--help"]);
    expect(top.out).to.contain("  milestones ");
    const group = await runCli(["milestones", "--help"]);
    for (const sub of ["terms", "prove", "check", "stream", "case"]) expect(group.out).to.contain(sub);
    for (const sub of ["terms", "prove", "check", "stream", "case"]) {
      const help = await runCli(["milestones", sub, "--help"]);
      expect(help.code, sub).to.equal(0);
      expect(help.out).to.contain(`Usage: ioi milestones ${sub}`);
    }
  });
});
