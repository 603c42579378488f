/**
 * The layout shows the architecture (issues 13 and 33, decision 0021): the top level holds the two parts the design
 * card names, `channel-client/` and `arbitration/`; each folder inside them is one concept, and the
 * protocol core is pure — it imports nothing outside itself but its libraries, and reads no file but the
 * package's own schemas. That no module and no folder imports itself back is test/library/imports.test.ts.
 */
import { expect } from "chai";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const REPO = path.join(__dirname, "..", "..");
const ROOTS = ["channel-client", "arbitration"].map((name) => path.join(REPO, name));
const SPECIFIER = /(?:\bfrom\s+|\bimport\s*\(\s*|\brequire\s*\(\s*|^import\s+)["']([^"']+)["']/gm;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return sources(file);
    return name.endsWith(".ts") ? [file] : [];
  });
}

function resolveRelative(from: string, specifier: string): string | undefined {
  const base = path.resolve(path.dirname(from), specifier);
  for (const candidate of [base, `${base}.ts`, path.join(base, "index.ts")]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not this form
    }
  }
  return undefined;
}

/** Every module's imports: relative ones resolved to files of the sources, bare ones by name. */
function importGraph(): Map<string, { local: string[]; bare: string[] }> {
  const graph = new Map<string, { local: string[]; bare: string[] }>();
  for (const file of ROOTS.flatMap(sources)) {
    const local: string[] = [];
    const bare: string[] = [];
    for (const match of readFileSync(file, "utf8").matchAll(SPECIFIER)) {
      const specifier = match[1];
      if (!specifier.startsWith(".")) {
        bare.push(specifier);
        continue;
      }
      const target = resolveRelative(file, specifier);
      if (target !== undefined) local.push(target);
    }
    graph.set(file, { local, bare });
  }
  return graph;
}

/** A module's concept: `channel-client/core`, `arbitration/lanes`, … (`arbitration` for its index). */
const folderOf = (file: string) => path.dirname(path.relative(REPO, file)).split(path.sep).slice(0, 2).join("/");
const foldersOf = (root: string) => readdirSync(path.join(REPO, root)).filter((name) => statSync(path.join(REPO, root, name)).isDirectory()).sort();

describe("layout: channel-client/ and arbitration/ at the top, one concept per folder inside", function () {
  const graph = importGraph();

  it("finds the modules and their imports (the reader works)", function () {
    expect(graph.size).to.be.greaterThan(80);
    const payer = [...graph.keys()].find((f) => f.endsWith(path.join("node", "payer-session.ts")));
    expect(payer, "channel-client/node/payer-session.ts").to.not.equal(undefined);
    expect(graph.get(payer!)!.local.map(folderOf)).to.include("channel-client/core");
  });

  it("has the folders the architecture names, and no others", function () {
    expect(existsSync(path.join(REPO, "src")), "src/ is gone").to.equal(false);
    expect(foldersOf("channel-client")).to.deep.equal(["abi", "api", "chain", "cli", "core", "node", "roles", "store", "transport", "ui"]);
    expect(foldersOf("arbitration")).to.deep.equal(["documents", "engine", "lanes", "runner"]);
  });

  it("the protocol core imports only itself, its libraries and the generated ABIs, and reads only the package's schemas", function () {
    const io = ["node:fs", "node:path"];
    const readers = ["package-root.ts", "schemas.ts"];
    for (const [file, { local, bare }] of graph) {
      if (folderOf(file) !== "channel-client/core") continue;
      const name = path.relative(REPO, file);
      for (const target of local) expect(["channel-client/core", "channel-client/abi"], `${name} imports ${path.relative(REPO, target)}`).to.include(folderOf(target));
      for (const specifier of bare.filter((s) => s.startsWith("node:"))) {
        expect(io, `${name} imports ${specifier}`).to.include(specifier);
        expect(readers, `${name} reads files`).to.include(path.basename(file));
      }
    }
  });

  it("arbitration is layered engine < documents < lanes < runner, and reads of the channel client only its core, chain and ABIs", function () {
    const rank = ["arbitration/engine", "arbitration/documents", "arbitration/lanes", "arbitration/runner", "arbitration"];
    for (const [file, { local }] of graph) {
      const from = folderOf(file);
      if (!from.startsWith("arbitration")) continue;
      for (const target of local) {
        const to = folderOf(target);
        const name = `${path.relative(REPO, file)} imports ${path.relative(REPO, target)}`;
        if (to.startsWith("arbitration")) expect(rank.indexOf(to), name).to.be.at.most(rank.indexOf(from));
        else expect(["channel-client/core", "channel-client/chain", "channel-client/abi"], name).to.include(to);
      }
    }
  });
});
