/**
 * Issue 27 finding 2 (stalls) and 4 (one budget for two sides): every attempt of the battery
 * (`fixtures/exhaustion-battery.ts`, 44 attempts, each written from both sides) ends quickly, is charged to
 * the side that made it, and gives byte-identical UPIP records in this process and in 3 separate processes.
 */
import { expect } from "chai";
import { execFile } from "node:child_process";
import path from "node:path";

import { BATTERY, chargedTo, recordHash, runAttempt } from "./fixtures/exhaustion-battery";

const SCRIPT = path.join(__dirname, "fixtures", "exhaustion-battery.ts");
const ROOT = path.join(__dirname, "..", "..");

const runProcess = () =>
  new Promise<string>((resolve, reject) =>
    execFile(process.execPath, ["--require", "tsx/cjs", SCRIPT], { cwd: ROOT, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
    ),
  );

describe("issue 27 finding 2: a stall never wins a case (exhaustion battery, both sides)", function () {
  this.timeout(180_000);
  const lines: string[] = [];

  it(`has at least 30 attempts from each side (${BATTERY.length} in all)`, () => {
    expect(BATTERY.filter((a) => a.by === "deliverable").length).to.be.at.least(20);
    expect(BATTERY.filter((a) => a.by === "suite").length).to.be.at.least(20);
    expect(BATTERY.length).to.be.at.least(30);
  });

  for (const attempt of BATTERY) {
    it(`${attempt.name}: ends in under 10 s, charged to the ${attempt.by}`, async () => {
      const started = performance.now();
      const outcome = await runAttempt(attempt);
      expect(performance.now() - started, "wall time (ms)").to.be.below(10_000);
      const { side, code } = chargedTo(outcome);
      expect(side, code).to.equal(attempt.by);
      expect(code).to.match(attempt.by === "suite" ? /^SUITE_(STEP_BUDGET|MEMORY_LIMIT|OUTPUT_LIMIT)$/ : /^DELIVERABLE_(STEP_BUDGET|MEMORY_LIMIT|OUTPUT_LIMIT)$/);
      lines.push(JSON.stringify({ name: attempt.name, side, code, record: recordHash(outcome) }));
    });
  }

  it("gives byte-identical UPIP records in 3 separate processes", async () => {
    expect(lines).to.have.length(BATTERY.length);
    const outputs = await Promise.all([runProcess(), runProcess(), runProcess()]);
    for (const output of outputs) expect(output.trim().split("\n")).to.deep.equal(lines);
  });
});
