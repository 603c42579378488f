/**
 * Issue 33 item 5: `ioi gig hash` prints the bundle hash `gig deliver --deliverable` records — the same hash
 * `dispute build-gig` and Lane 1 compute from the folder — and refuses a missing or doubled folder in one sentence.
 */
import { expect } from "chai";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { bundleHash } from "../../arbitration/documents/bundle";
import { readBundleDirectory } from "../../channel-client/cli/input-file";
import { runCli } from "../helpers/cli";

const delivered = path.join(__dirname, "..", "..", "examples", "gig", "delivered");

describe("ioi gig hash", function () {
  this.timeout(60_000);

  it("prints the bundle hash of a folder, and a changed file changes it", async () => {
    const result = await runCli(["gig", "hash", "--deliverable-dir", delivered]);
    expect(result.code, result.err).to.equal(0);
    expect(result.out.trim()).to.equal(bundleHash(readBundleDirectory(delivered, "deliverable-dir")));
    const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-gig-hash-"));
    try {
      cpSync(delivered, dir, { recursive: true });
      const same = await runCli(["gig", "hash", "--suite-dir", dir, "--json"]);
      expect(JSON.parse(same.out.split("\n").pop()!).bundleHash).to.equal(result.out.trim());
      writeFileSync(path.join(dir, "extra.js"), "export {};\n");
      const changed = await runCli(["gig", "hash", "--deliverable-dir", dir]);
      expect(changed.code, changed.err).to.equal(0);
      expect(changed.out.trim()).to.match(/^0x[0-9a-f]{64}$/).and.not.equal(result.out.trim());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses no folder, two folders and a missing folder with one sentence, exit 2", async () => {
    for (const argv of [["gig", "hash"], ["gig", "hash", "--deliverable-dir", delivered, "--suite-dir", delivered], ["gig", "hash", "--deliverable-dir", "/nonexistent/dir"]]) {
      const result = await runCli(argv);
      expect(result.code, argv.join(" ")).to.equal(2);
      expect(result.err).to.not.match(/\n\s+at /);
    }
  });
});
