/**
 * The import graph (issue 13 item 9): no module imports itself back through others, and the top-level
 * folders form no cycle — a folder that imports another is never imported back by it, so each folder can be
 * read, tested and shipped on its own. Imports are read with the TypeScript compiler's own pre-processor
 * (`ts.preProcessFile`: every `import`, `export … from`, `require()` and dynamic `import()`), relative ones
 * resolved to files.
 *
 * The folders are the concepts inside `channel-client/` and `arbitration/` (decision 0021); the command modules
 * all live in `channel-client/cli`, a consumer of
 * the library folders, never their dependency.
 */
import { expect } from "chai";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

const REPO = path.join(__dirname, "..", "..");
const ROOTS = ["channel-client", "arbitration"].map((name) => path.join(REPO, name));
const CLI = "channel-client/cli";

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".")) continue;
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      sourceFiles(file, out);
    } else if (/\.(ts|mts|cts)$/.test(entry.name) && !entry.name.endsWith(".d.ts")) {
      out.push(file);
    }
  }
  return out;
}

function resolveImport(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const base = path.resolve(path.dirname(from), specifier.replace(/\.js$/, ""));
  for (const candidate of [`${base}.ts`, `${base}.mts`, path.join(base, "index.ts"), base]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

/** Each source file's relative imports, resolved (type-only imports included: they tie the folders too). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const inSources = (f: string) => ROOTS.some((root) => f.startsWith(root + path.sep));
  for (const file of ROOTS.flatMap((root) => sourceFiles(root))) {
    const info = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    graph.set(file, info.importedFiles.map((i) => resolveImport(file, i.fileName)).filter((f): f is string => f !== undefined && inSources(f)));
  }
  return graph;
}

/** Strongly connected components of more than one node (or a node importing itself): the cycles. */
function cycles<T>(graph: Map<T, Iterable<T>>): T[][] {
  let next = 0;
  const index = new Map<T, number>();
  const low = new Map<T, number>();
  const stack: T[] = [];
  const onStack = new Set<T>();
  const found: T[][] = [];
  const visit = (v: T): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: T[] = [];
      let w: T;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || [...(graph.get(v) ?? [])].includes(v)) found.push(component);
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const relative = (file: string): string => path.relative(REPO, file).split(path.sep).join("/");
/** A module's concept folder: `channel-client/core`, `arbitration/lanes`, … (`arbitration` for its index). */
const folderOf = (file: string): string => path.posix.dirname(relative(file)).split("/").slice(0, 2).join("/");

describe("the import graph", () => {
  const graph = importGraph();

  it("reads the sources of every top-level folder", () => {
    const folders = new Set([...graph.keys()].map(folderOf));
    expect(graph.size).to.be.greaterThan(50);
    for (const folder of ["core", "chain", "node", "transport", "store", "cli", "roles", "ui"]) expect([...folders], folder).to.include(`channel-client/${folder}`);
    for (const folder of ["engine", "documents", "lanes", "runner"]) expect([...folders], folder).to.include(`arbitration/${folder}`);
  });

  it("has no module that imports itself back through others", () => {
    expect(cycles(graph).map((c) => c.map(relative).sort())).to.deep.equal([]);
  });

  it("has no cycle between the concept folders", () => {
    const folders = new Map<string, Set<string>>();
    const witness = new Map<string, string>();
    for (const [file, imports] of graph) {
      const from = folderOf(file);
      if (!folders.has(from)) folders.set(from, new Set());
      for (const target of imports) {
        const to = folderOf(target);
        if (to === from) continue;
        folders.get(from)!.add(to);
        if (!witness.has(`${from}->${to}`)) witness.set(`${from}->${to}`, `${relative(file)} imports ${relative(target)}`);
      }
    }
    const found = cycles(folders).map((component) =>
      component.flatMap((a) => component.filter((b) => folders.get(a)!.has(b)).map((b) => witness.get(`${a}->${b}`)!)),
    );
    expect(found).to.deep.equal([]);
  });

  it("keeps the library folders off the commands: nothing but the CLI and the role entry points imports channel-client/cli", () => {
    const offenders: string[] = [];
    for (const [file, imports] of graph) {
      if (["channel-client/cli", "channel-client/roles"].includes(folderOf(file))) continue;
      for (const target of imports) if (folderOf(target) === CLI) offenders.push(`${relative(file)} imports ${relative(target)}`);
    }
    expect(offenders).to.deep.equal([]);
  });
});
