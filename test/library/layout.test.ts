/**
 * The layout shows the architecture (issue 13, decision 0021): each folder of src/ is one concept, and the
 * protocol core is pure — it imports nothing outside itself but its libraries, and reads no file but the
 * package's own schemas. That no module and no folder imports itself back is test/library/imports.test.ts.
 */
import { expect } from "chai";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const SRC = path.join(__dirname, "..", "..", "src");
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

/** Every module's imports: relative ones resolved to files of src/, bare ones by name. */
function importGraph(): Map<string, { local: string[]; bare: string[] }> {
  const graph = new Map<string, { local: string[]; bare: string[] }>();
  for (const file of sources(SRC)) {
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

const folderOf = (file: string) => path.relative(SRC, file).split(path.sep)[0];

describe("layout: one concept per folder of src/", function () {
  const graph = importGraph();

  it("finds the modules and their imports (the reader works)", function () {
    expect(graph.size).to.be.greaterThan(80);
    const payer = [...graph.keys()].find((f) => f.endsWith(path.join("node", "payer-session.ts")));
    expect(payer, "channel-client/node/payer-session.ts").to.not.equal(undefined);
    expect(graph.get(payer!)!.local.map(folderOf)).to.include("core");
  });

  it("has the folders the architecture names, and no others", function () {
    const folders = readdirSync(SRC).filter((name) => statSync(path.join(SRC, name)).isDirectory()).sort();
    expect(folders).to.deep.equal(["abi", "api", "arbitration", "chain", "cli", "core", "node", "roles", "store", "transport", "ui"]);
  });

  it("the protocol core imports only itself, its libraries and the generated ABIs, and reads only the package's schemas", function () {
    const io = ["node:fs", "node:path"];
    const readers = ["package-root.ts", "schemas.ts"];
    for (const [file, { local, bare }] of graph) {
      if (folderOf(file) !== "core") continue;
      const name = path.relative(SRC, file);
      for (const target of local) expect(["core", "abi"], `${name} imports ${path.relative(SRC, target)}`).to.include(folderOf(target));
      for (const specifier of bare.filter((s) => s.startsWith("node:"))) {
        expect(io, `${name} imports ${specifier}`).to.include(specifier);
        expect(readers, `${name} reads files`).to.include(path.basename(file));
      }
    }
  });
});
