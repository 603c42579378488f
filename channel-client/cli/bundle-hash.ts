/**
 * `ioi gig hash`: the bundle hash of a folder — what `ioi gig deliver --deliverable HASH` records, what a
 * dispute package's deliverable (or suite) must hash to, and what `gig vet` and Lane 1 read. Offline; the same
 * function the arbitrators use (arbitration/bundle), over the same folder reader as `dispute build-gig`.
 */
import { bundleHash, bundlePaths } from "../../arbitration/documents/bundle";
import { readBundleDirectory } from "./input-file";
import { UsageError, type Command } from "./common";

export const BUNDLE_HASH_COMMAND: Command = {
  summary: "print the bundle hash of a deliverable (or suite) folder: the HASH `gig deliver --deliverable` takes (offline)",
  usage: "ioi gig hash --deliverable-dir DIR | --suite-dir DIR",
  notes: [
    "  Reads every file under the folder as a bundle (paths relative to it, UTF-8 text) and prints",
    "  keccak256 of its canonical JSON: the deliverable hash a provider delivers, and the hash a dispute",
    "  package's bundle must have for arbitrators to accept it. Nothing is sent; no RPC is needed.",
  ],
  examples: ["ioi gig hash --deliverable-dir examples/gig/delivered/", "ioi gig deliver --gig 1 --deliverable $(ioi gig hash --deliverable-dir out/)"],
  options: { "deliverable-dir": { type: "string" }, "suite-dir": { type: "string" } },
  run: async (values, out) => {
    const deliverable = values["deliverable-dir"] as string | undefined;
    const suite = values["suite-dir"] as string | undefined;
    if ((deliverable === undefined) === (suite === undefined)) throw new UsageError("Give exactly one of --deliverable-dir DIR or --suite-dir DIR.");
    const bundle = deliverable !== undefined ? readBundleDirectory(deliverable, "deliverable-dir") : readBundleDirectory(suite!, "suite-dir");
    const hash = bundleHash(bundle);
    out.lines.push(hash);
    Object.assign(out.result, { bundleHash: hash, files: bundlePaths(bundle) });
  },
};
