/**
 * `ioi gig vet` driven through `main()` (offline): the Appendix A.4 suite against its failing and passing
 * deliverables, a time-bomb suite whose verdict depends on the clock (attributed to the client), a
 * deliverable whose results depend on the clock (a warning only), gig-pinned inputs given offline, and
 * one-sentence refusals of bad input.
 */
import { expect } from "chai";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAddress, zeroAddress, type Address } from "viem";

import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import { icsToJson, type IcsJson } from "../../arbitration/documents/ics";
import { alternateInputs, DEFAULT_INPUTS, gigInputs } from "../../arbitration/lanes/pinned";
import { VET_FAILED_EXIT_CODE } from "../../channel-client/cli/vet";
import { codeGigIcs, FAILING_DELIVERABLE, PASSING_DELIVERABLE, SUITE } from "../../scripts/examples/code-gig";
import { runCli } from "../helpers/cli";

/** A suite that fails every test once its clock passes 2026: the "time bomb" a client could bind. */
const TIME_BOMB: Bundle = {
  files: {
    ...SUITE.files,
    "run.js": SUITE.files["run.js"]!.replace(
      "test(name, () => equal(",
      'test(name, () => new Date().getUTCFullYear() > 2026 ? fail("expired") : equal(',
    ).replace("const { test, call, equal }", "const { test, call, equal, fail }"),
  },
};

/** Passes all 12 under the default clock, but capitalizes nothing after 2026. */
const CLOCK_DEPENDENT: Bundle = {
  files: {
    "strings.js": PASSING_DELIVERABLE.files["strings.js"]!.replace(
      "exports.capitalize = (s) =>",
      "exports.capitalize = (s) => new Date().getUTCFullYear() > 2026 ? s :",
    ),
  },
};

const GIG_ESCROW: Address = getAddress("0x5FbDB2315678afecb367f032d93F642f64180aa3");

function icsJson(suite: Bundle = SUITE): IcsJson {
  const json = icsToJson(codeGigIcs({ asset: zeroAddress, maxPrice: 10n ** 18n, deadline: 1_900_000_000n }));
  return { ...json, test_suite: { ...json.test_suite!, hash: bundleHash(suite) } };
}

describe("ioi gig vet", function () {
  this.timeout(120_000);

  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-vet-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  function write(name: string, bundle: Bundle): string {
    const base = path.join(dir, name);
    for (const [file, content] of Object.entries(bundle.files)) {
      mkdirSync(path.dirname(path.join(base, file)), { recursive: true });
      writeFileSync(path.join(base, file), content);
    }
    return base;
  }

  function files(name: string, options: { suite?: Bundle; deliverable?: Bundle; ics?: IcsJson } = {}) {
    const icsFile = path.join(dir, `${name}.ics.json`);
    writeFileSync(icsFile, JSON.stringify(options.ics ?? icsJson(options.suite), null, 2));
    return ["--ics-file", icsFile, "--suite-dir", write(`${name}-suite`, options.suite ?? SUITE), "--deliverable-dir", write(`${name}-deliverable`, options.deliverable ?? FAILING_DELIVERABLE)];
  }

  const vet = (argv: string[]) => runCli(["gig", "vet", ...argv, "--json"]);
  const jsonOf = (result: { out: string }) => JSON.parse(result.out.split("\n").pop()!) as Record<string, any>;

  it("is listed in `ioi gig --help` and documents its options and exit status", async () => {
    expect((await runCli(["gig", "--help"])).out).to.match(/ {2}vet +replay the ICS's rubric/);
    const help = await runCli(["gig", "vet", "--help"]);
    expect(help.code).to.equal(0);
    for (const option of ["--ics-file PATH", "--suite-dir DIR", "--deliverable-dir DIR", "--gig ID", "--funded-at SECONDS", "--chain-id N", "Exit status 0"]) {
      expect(help.out).to.contain(option);
    }
  });

  it("Appendix A.4: the failing deliverable fails the same 3 tests arbitrators find, exit status 3", async () => {
    const result = await vet(files("a4"));
    expect(result.code, result.err).to.equal(VET_FAILED_EXIT_CODE);
    const json = jsonOf(result);
    expect(json).to.deep.include({
      ok: true,
      verdict: "deliverable_fails",
      failedTests: ["slug_repeat", "slug_symbols", "slug_trim"],
      alternateFailedTests: ["slug_repeat", "slug_symbols", "slug_trim"],
      suiteInputDependent: false,
      deliverableInputDependent: false,
      attribution: [],
      reasonCodes: [],
    });
    expect(json.inputs).to.deep.include({ clockMs: DEFAULT_INPUTS.clockMs, seed: DEFAULT_INPUTS.seed });
    expect(json.alternate).to.deep.equal(alternateInputs(DEFAULT_INPUTS));
    expect(json.checks.find((c: { name: string }) => c.name === "passes_tests")).to.deep.include({ status: false, detail: "3 of 12 tests failed: slug_repeat, slug_symbols, slug_trim" });
    expect(result.out).to.contain("failed tests: slug_repeat, slug_symbols, slug_trim");
    expect(result.out).to.contain("Lane 1 would decide against the provider (3 failed tests)");
  });

  it("the passing deliverable: every check passes, exit status 0", async () => {
    const result = await vet(files("pass", { deliverable: PASSING_DELIVERABLE }));
    expect(result.code, result.err).to.equal(0);
    expect(jsonOf(result)).to.deep.include({ verdict: "pass", failedTests: [], alternateFailedTests: [], suiteInputDependent: false });
  });

  it("a time-bomb suite: its verdict depends on the clock, so Lane 1 would attribute it to the client (exit status 3)", async () => {
    const result = await vet(files("bomb", { suite: TIME_BOMB, deliverable: PASSING_DELIVERABLE }));
    expect(result.code, result.err).to.equal(VET_FAILED_EXIT_CODE);
    const json = jsonOf(result);
    expect(json).to.deep.include({ verdict: "suite_at_fault", failedTests: [], suiteInputDependent: true, attribution: ["SUITE_INPUT_DEPENDENT"] });
    expect(json.alternateFailedTests).to.have.length(12);
    expect(result.out).to.contain("The suite's verdict depends on its clock or seed: Lane 1 would attribute this suite to the client");
  });

  it("a deliverable whose results depend on the clock: passes under the pinned inputs, with a warning", async () => {
    const result = await vet(files("clock", { deliverable: CLOCK_DEPENDENT }));
    expect(result.code, result.err).to.equal(0);
    expect(jsonOf(result)).to.deep.include({ verdict: "pass", suiteInputDependent: false, deliverableInputDependent: true });
    expect(result.out).to.contain("Warning: the deliverable's results depend on the clock or seed");
  });

  it("pins the gig's inputs offline from --gig, --funded-at, --chain-id and --gig-escrow, as arbitrators derive them", async () => {
    const fundedAt = 1_767_000_000n;
    const result = await vet([...files("gig", { deliverable: PASSING_DELIVERABLE }), "--gig", "7", "--funded-at", String(fundedAt), "--chain-id", "31337", "--gig-escrow", GIG_ESCROW]);
    expect(result.code, result.err).to.equal(0);
    const expected = gigInputs({ chainId: 31337n, gigEscrow: GIG_ESCROW, gigId: 7n, fundedAt });
    expect(jsonOf(result).inputs).to.deep.include({ clockMs: expected.clockMs, seed: expected.seed });
    expect(result.out).to.contain("gig 7's inputs on chain 31337 (funded at 1767000000, as given)");
  });

  const refusals: [name: string, argv: () => string[], code: number, error: string, message: string][] = [
    ["no --ics-file", () => ["--deliverable-dir", dir], 2, "UsageError", "--ics-file is required"],
    ["an ICS file that does not exist", () => ["--ics-file", path.join(dir, "none.json"), "--deliverable-dir", dir], 2, "UsageError", "Cannot read --ics-file"],
    ["--funded-at without --gig", () => [...files("nogig"), "--funded-at", "1"], 2, "UsageError", "--funded-at and --chain-id pin a gig's inputs and need --gig ID"],
    ["--funded-at without --chain-id", () => [...files("nochain"), "--gig", "1", "--funded-at", "1", "--gig-escrow", GIG_ESCROW], 2, "UsageError", "--chain-id is required"],
    ["a suite the ICS does not bind", () => files("unbound", { suite: SUITE, ics: icsJson(TIME_BOMB) }), 1, "BundleHashMismatchError", "the test suite hashes to"],
    ["no --suite-dir for an ICS that binds a suite", () => files("nosuite").slice(0, 2).concat(["--deliverable-dir", dir]), 2, "UsageError", "--suite-dir is required"],
  ];
  for (const [name, argv, code, error, message] of refusals) {
    it(`refuses ${name} with one sentence (exit status ${code})`, async () => {
      const result = await vet(argv());
      expect(result.code, result.err).to.equal(code);
      expect(result.err).to.contain(`— ${error}: `).and.to.contain(message);
      expect(result.err).not.to.match(/\n\s+at /);
      expect(jsonOf(result)).to.deep.include({ ok: false, error });
    });
  }
});
