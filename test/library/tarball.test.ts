/**
 * What the published tarball holds (issue 33 item 5), from `npm pack --dry-run --json` — npm's own listing —
 * run in a copy of this checkout (its tracked and new files, as a clone would have them) into which the files a
 * developer's checkout accumulates are planted: devnet deployment records (git-ignored), SQLite stores, `.env`
 * files, test output. The listing must hold nothing but files git tracks and the build's output under dist/,
 * none of the planted files, and every target the package's `exports`, `main`, `types` and `bin` name. A
 * deployment record of a shared chain (what `deployments/chain-<id>.json` is committed for) ships and resolves
 * through the exports map by the package's name.
 *
 * The copy is built with `tsc -p tsconfig.build.json` (what `prepare` runs; about two minutes on a loaded
 * two-core machine), then packed with `--ignore-scripts` so npm's listing is the only output.
 */
import { expect } from "chai";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";

const ROOT = path.join(__dirname, "..", "..");

/** Files a working checkout accumulates that must never ship, planted in and beside every shipped folder. */
const PLANTED = [
  "deployments/localhost.json",
  "deployments/hardhat.json",
  "deployments/chain-31337.json",
  ".env",
  "bin/.env",
  "schemas/.env",
  "channel-client/ui/public/.env",
  "channel-client/ui/public/.env.local",
  "channels.db",
  "bin/channels.db",
  "schemas/channels.db",
  "contracts/channels.db",
  "channel-client/ui/public/channels.db",
  "channel-client/ui/public/channels.db-wal",
  ".data/channels.db",
  "test-output/results.json",
  "coverage/index.html",
  "dist/tsconfig.build.tsbuildinfo",
];
/** A committed record of a shared chain (Sepolia), which the package is meant to carry. */
const RECORD = "deployments/chain-11155111.json";

describe("the packed tarball ships only what it should", function () {
  this.timeout(8 * 60_000);
  let copy: string;
  let listed: Set<string>;
  let tracked: Set<string>;
  let pkg: { exports: Record<string, string | Record<string, string>>; bin: Record<string, string>; main: string; types: string };

  before(() => {
    copy = mkdtempSync(path.join(os.tmpdir(), "ioi-tarball-"));
    const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, encoding: "utf8" })
      .split("\0")
      .filter((f) => f && existsSync(path.join(ROOT, f)));
    tracked = new Set(files);
    for (const file of files) {
      mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
      cpSync(path.join(ROOT, file), path.join(copy, file));
    }
    symlinkSync(path.join(ROOT, "node_modules"), path.join(copy, "node_modules"));
    const built = spawnSync(process.execPath, [path.join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"], { cwd: copy, encoding: "utf8" });
    expect(built.status, `${built.stdout}${built.stderr}`).to.equal(0);
    for (const file of PLANTED) {
      mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
      writeFileSync(path.join(copy, file), "planted: must not ship\n");
    }
    const record = { network: "sepolia", chainId: 11155111, contracts: { GasEscrow: { address: "0x5FbDB2315678afecb367f032d93F642f64180aa3", blockNumber: 1 } } };
    writeFileSync(path.join(copy, RECORD), `${JSON.stringify(record, null, 2)}\n`);
    tracked.add(RECORD);
    const packed = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts", "--loglevel=error"], { cwd: copy, encoding: "utf8" });
    expect(packed.status, packed.stderr).to.equal(0);
    const [entry] = JSON.parse(packed.stdout) as [{ files: { path: string }[] }];
    listed = new Set(entry.files.map((f) => f.path));
    pkg = JSON.parse(readFileSync(path.join(copy, "package.json"), "utf8"));
  });
  after(() => {
    if (copy) rmSync(copy, { recursive: true, force: true });
  });

  it("holds only files git tracks and the build's output (dist/X.js and .d.ts of an X.ts under channel-client/ or arbitration/), none of the planted ones", () => {
    const built = (f: string) => {
      const m = /^dist\/(.+?)(\.d\.ts|\.js)$/.exec(f);
      return m !== null && /^(channel-client|arbitration)\//.test(m[1]) && tracked.has(`${m[1]}.ts`);
    };
    expect([...listed].filter((f) => !tracked.has(f) && !built(f)), "files that are neither tracked nor built").to.deep.equal([]);
    expect(PLANTED.filter((f) => listed.has(f)), "planted files").to.deep.equal([]);
    // And none of the kinds a checkout must keep to itself, whatever their folder.
    expect([...listed].filter((f) => /(^|\/)\.env|\.db(-wal|-shm)?$|\.tsbuildinfo$|^test\/|^test-output\/|^\.data\//.test(f))).to.deep.equal([]);
  });

  it("holds every target of exports, main, types and bin", () => {
    const targets = [pkg.main, pkg.types, ...Object.values(pkg.bin)];
    for (const value of Object.values(pkg.exports)) targets.push(...(typeof value === "string" ? [value] : Object.values(value)));
    expect(targets.length).to.be.greaterThan(20);
    for (const target of targets.map((t) => t.replace(/^\.\//, ""))) {
      if (target.includes("*")) {
        const [head, tail] = target.split("*") as [string, string];
        expect([...listed].some((f) => f.startsWith(head) && f.endsWith(tail) && f.length > head.length + tail.length), `a file for ${target}`).to.equal(true);
      } else {
        expect(listed.has(target), target).to.equal(true);
      }
    }
  });

  it("a shared chain's deployment record ships and resolves by the package's name through the exports map", () => {
    expect(listed.has(RECORD)).to.equal(true);
    // Self-reference: a module inside the package resolves "ioi-settlement/…" through its own exports map,
    // exactly as a dependent project's require does.
    const requireHere = createRequire(path.join(copy, "bin", "ioi.js"));
    const resolved = requireHere.resolve(`ioi-settlement/${RECORD}`);
    expect(resolved).to.equal(path.join(copy, RECORD));
    expect(requireHere(`ioi-settlement/${RECORD}`).chainId).to.equal(11155111);
    expect(requireHere.resolve("ioi-settlement/schemas/terms.schema.json")).to.equal(path.join(copy, "schemas", "terms.schema.json"));
    // What the exports map does not name stays private.
    expect(() => requireHere.resolve("ioi-settlement/channel-client/core/terms.ts")).to.throw(/not defined by "exports"/);
  });
});
