/**
 * The package's `engines.node` agrees with its dependencies (issue 33 item 5): every package of the production
 * tree `npm ci` installs (package-lock.json, entries not marked `dev`) admits the lowest Node our `engines` field admits,
 * so installing on that Node prints no EBADENGINE warning — save for the exceptions listed below, each with
 * the reason it stands and a check that the package does run on this Node. An exception that is no longer
 * needed fails too, so the list only shrinks.
 */
import { expect } from "chai";
import { readFileSync } from "node:fs";
import path from "node:path";
/** semver is in the installed tree (npm's own range rules; no types installed): the three functions used here. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const semver = require("semver") as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
  major(version: string): number;
};

const ROOT = path.join(__dirname, "..", "..");

/**
 * Declared ranges that exclude our lowest Node although the package runs there.
 * - canonicalize 5.x (RFC 8785, decision 0004) declares node >= 22 but is one ES module file that Node loads
 *   with `require()` (unflagged since 20.19, which is why our field says >= 20.19); 4.0.0, the last release
 *   declaring >= 18, has no `require`/`default` export condition and cannot be required at all. No release
 *   both declares and supports Node 20, so the warning stays and decision 0021 explains it.
 */
const EXCEPTIONS: Record<string, { reason: string; runsHere: () => void }> = {
  canonicalize: {
    reason: "declares node >= 22; loads through require(esm) from Node 20.19",
    runsHere: () => {
      // An ES module required from CommonJS: its default export is the function (channel-client/core/canonical.ts).
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const canonicalize = (require("canonicalize") as { default: (value: unknown) => string }).default;
      expect(canonicalize({ b: [1, "x", { d: null, c: true }], a: 1e21 })).to.equal('{"a":1e+21,"b":[1,"x",{"c":true,"d":null}]}');
    },
  },
};

describe("engines.node agrees with the production dependencies", function () {
  this.timeout(2 * 60_000);
  const ours = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { engines: { node: string } };
  const lowest = semver.minVersion(ours.engines.node)!.version;
  let tree: { name: string; version: string; range: string }[];

  before(() => {
    // The lockfile, not node_modules: it is what `npm ci` installs, and it records each package's engines.
    // Entries marked `dev` are development-only; everything else reaches a user who installs the package.
    const lock = JSON.parse(readFileSync(path.join(ROOT, "package-lock.json"), "utf8")) as {
      packages: Record<string, { version?: string; dev?: boolean; engines?: { node?: string } | string[] }>;
    };
    const seen = new Map<string, { name: string; version: string; range: string }>();
    for (const [key, entry] of Object.entries(lock.packages)) {
      if (!key || entry.dev) continue;
      const name = key.slice(key.lastIndexOf("node_modules/") + "node_modules/".length);
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      if (range) seen.set(`${name}@${entry.version}`, { name, version: entry.version!, range });
    }
    tree = [...seen.values()];
  });

  it("this Node is one our field admits", () => {
    expect(semver.satisfies(process.versions.node, ours.engines.node), `${process.versions.node} vs ${ours.engines.node}`).to.equal(true);
  });

  it("every production dependency admits our lowest Node, but for the listed exceptions", () => {
    expect(tree.length, "packages declaring engines.node").to.be.greaterThan(50);
    const refusing = tree.filter((p) => !semver.satisfies(lowest, p.range)).map((p) => `${p.name}@${p.version} (${p.range})`);
    expect(refusing.filter((p) => !(p.split("@").slice(0, -1).join("@") in EXCEPTIONS)), `refuse Node ${lowest}`).to.deep.equal([]);
    // cookie@2 (node >= 22) came through fastify's light-my-request; the override pins the release on cookie 1.
    expect(tree.filter((p) => p.name === "cookie").map((p) => p.version).filter((v) => semver.major(v) >= 2)).to.deep.equal([]);
  });

  it("each exception is still needed, and the package runs on this Node", () => {
    for (const [name, exception] of Object.entries(EXCEPTIONS)) {
      const installed = tree.filter((p) => p.name === name);
      expect(installed, `${name} is in the production tree`).to.not.deep.equal([]);
      expect(installed.some((p) => !semver.satisfies(lowest, p.range)), `${name}: ${exception.reason} — no longer true, drop the exception`).to.equal(true);
      exception.runsHere();
    }
  });
});
