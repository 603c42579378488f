/**
 * The layout move of issue 33 (decision 0021, amended): the sources leave `src/` for the two folders the
 * design card names at the top of the repository —
 *
 *   channel-client/  abi, api, chain, cli, core, node, roles, store, transport, ui   (was src/<folder>)
 *   arbitration/     engine, documents, lanes, runner                                (was src/arbitration, flat)
 *
 * Run once, on a clean tree, when no other branch is open:
 *
 *   npx ts-node --transpile-only scripts/move-layout.ts
 *
 * It moves every file with `git mv`, then rewrites every relative import (found with the TypeScript
 * compiler's own pre-processor, so nothing but import specifiers is touched) in the sources, tests, scripts
 * and examples from each file's old place to its new one, and every `src/<folder>/…` path written in code,
 * comments, configuration and Markdown (decision records excepted: they keep the paths they were written
 * with). It refuses to run when `src/` is already gone. What it cannot know
 * (the layout tests' folder lists) is edited by hand in the same change.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

const ROOT = path.join(__dirname, "..");
const SRC = path.join(ROOT, "src");

/** The concept of each module of the old flat src/arbitration: engine < documents < lanes < runner. */
const ARBITRATION: Record<string, string> = {
  engine: "engine", fuel: "engine", prelude: "engine",
  errors: "documents", document: "documents", bundle: "documents", ics: "documents", package: "documents",
  upip: "documents", evidence: "documents", context: "documents",
  lane0: "lanes", "lane0-checks": "lanes", "lane0-session": "lanes", "lane0-stream": "lanes", checks: "lanes", replay: "lanes", "stream-sample": "lanes", pinned: "lanes",
  resolution: "lanes", "verify-upip": "lanes", vet: "lanes",
  runner: "runner", build: "runner", chain: "runner",
  index: ".",
};

/** Old path (relative to the repository, POSIX) → new path, for every file under src/. */
function mapping(): Map<string, string> {
  const moves = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const file = path.join(dir, name);
      if (statSync(file).isDirectory()) walk(file);
      else moves.set(rel(file), newPathOf(rel(file)));
    }
  };
  walk(SRC);
  return moves;
}

const rel = (file: string) => path.relative(ROOT, file).split(path.sep).join("/");

function newPathOf(old: string): string {
  const parts = old.split("/"); // src/<folder>/…
  if (parts[1] === "arbitration") {
    const base = parts[2].replace(/\.ts$/, "");
    const concept = ARBITRATION[base];
    if (concept === undefined || parts.length !== 3) throw new Error(`${old}: no concept assigned in ARBITRATION`);
    return concept === "." ? `arbitration/${parts[2]}` : `arbitration/${concept}/${parts[2]}`;
  }
  return ["channel-client", ...parts.slice(1)].join("/");
}

/** Resolves a relative specifier written in `fromOld` against the old tree: the old target file, or undefined. */
function resolveOld(fromOld: string, specifier: string, oldFiles: Set<string>): string | undefined {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(fromOld), specifier));
  for (const candidate of [base, `${base}.ts`, `${base}.js`, `${base}/index.ts`]) if (oldFiles.has(candidate)) return candidate;
  return undefined;
}

function specifierFor(fromNew: string, oldTarget: string, targetNew: string, original: string): string {
  let target = targetNew;
  // Keep the form the author wrote: no extension, or the directory of an index module.
  if (!/\.(ts|js|json|mjs)$/.test(original)) target = target.replace(/\.ts$/, "");
  if (oldTarget.endsWith("/index.ts") && !original.endsWith("index")) target = target.replace(/\/index$/, "");
  let spec = path.posix.relative(path.posix.dirname(fromNew), target);
  if (!spec.startsWith(".")) spec = `./${spec}`;
  return spec;
}

/** This script, and the decision records, which keep the paths they were written with (decision 0021 maps them). */
const KEEP_AS_WRITTEN = (file: string) => file === "scripts/move-layout.ts" || file.startsWith("docs/decisions/");

function filesToRewrite(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith(".") || ["node_modules", "dist", "artifacts", "cache", "coverage"].includes(entry.name)) continue;
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (/\.(ts|js|cjs|mjs|md|json|sh|yml)$/.test(entry.name) && !/package-lock\.json$/.test(entry.name) && !KEEP_AS_WRITTEN(rel(file))) out.push(rel(file));
    }
  };
  walk(ROOT);
  return out;
}

/** Rewrites `src/<folder>/<module>` written in text (comments, Markdown, configuration, path literals). */
function rewritePathsInText(text: string): string {
  const folders = "abi|api|chain|cli|core|node|roles|store|transport|ui";
  return text
    .replace(/\bsrc\/arbitration\/([a-z0-9-]+)(\.ts)?\b/g, (whole, base: string, ext: string | undefined) => {
      const concept = ARBITRATION[base];
      if (concept === undefined) return whole;
      return concept === "." ? `arbitration/${base}${ext ?? ""}` : `arbitration/${concept}/${base}${ext ?? ""}`;
    })
    .replace(/\bsrc\/arbitration\b/g, "arbitration")
    .replace(new RegExp(`\\bsrc/(${folders})\\b`, "g"), "channel-client/$1")
    // path.join(ROOT, "src", "cli", …) and the like
    .replace(/(["'])src\1(\s*,\s*)(["'])arbitration\3/g, "$1arbitration$1")
    .replace(new RegExp(`(["'])src\\1(\\s*,\\s*)(["'])(${folders})\\3`, "g"), "$1channel-client$1$2$3$4$3")
    // the build mirrors the sources: dist/<folder> → dist/channel-client/<folder>, dist/arbitration stays
    .replace(new RegExp(`\\bdist/(${folders})\\b`, "g"), "dist/channel-client/$1")
    .replace(new RegExp(`(["'])dist\\1(\\s*,\\s*)(["'])(${folders})\\3`, "g"), "$1dist$1$2$3channel-client$3$2$3$4$3");
}

/** The compiler's configuration: both folders are sources, and the build keeps their shape under dist/. */
function rewriteConfiguration(): void {
  const edit = (file: string, change: (text: string) => string) => {
    const absolute = path.join(ROOT, file);
    const text = readFileSync(absolute, "utf8");
    const next = change(text);
    if (next === text) throw new Error(`${file}: the expected configuration was not found`);
    writeFileSync(absolute, next);
  };
  edit("tsconfig.json", (t) => t.replace(`"src/**/*.ts",`, `"channel-client/**/*.ts",\n    "arbitration/**/*.ts",`));
  edit("tsconfig.build.json", (t) =>
    t.replace(`"rootDir": "src"`, `"rootDir": "."`).replace(`"include": ["src/**/*.ts"]`, `"include": ["channel-client/**/*.ts", "arbitration/**/*.ts"]`),
  );
}

function main(): void {
  if (!existsSync(SRC)) throw new Error("src/ is gone: the layout move has already run.");
  if (execFileSync("git", ["status", "--porcelain"], { cwd: ROOT, encoding: "utf8" }).trim() !== "") {
    throw new Error("the working tree is not clean: commit or stash first.");
  }
  const moves = mapping();
  const oldFiles = new Set(moves.keys());
  const newOf = (old: string) => moves.get(old) ?? old;

  // 1. Rewrite the imports of every TypeScript/JavaScript file, in place, while the tree is still old.
  let rewritten = 0;
  for (const file of filesToRewrite()) {
    const absolute = path.join(ROOT, file);
    let text = readFileSync(absolute, "utf8");
    const before = text;
    if (/\.(ts|js|cjs|mjs)$/.test(file)) {
      const fromNew = newOf(file);
      const { importedFiles } = ts.preProcessFile(text, true, true);
      const edits: { pos: number; end: number; spec: string }[] = [];
      for (const imported of importedFiles) {
        if (!imported.fileName.startsWith(".")) continue;
        const target = resolveOld(file, imported.fileName, oldFiles) ?? resolveOldOutside(file, imported.fileName);
        if (target === undefined) continue;
        const spec = specifierFor(fromNew, target, newOf(target), imported.fileName);
        // The pre-processor's position may include the opening quote: find the specifier's own characters.
        const at = text.indexOf(imported.fileName, imported.pos);
        if (at < 0 || !["'", '"', "`"].includes(text[at - 1])) throw new Error(`${file}: cannot locate the import ${imported.fileName}`);
        if (spec !== imported.fileName) edits.push({ pos: at, end: at + imported.fileName.length, spec });
      }
      for (const edit of edits.sort((a, b) => b.pos - a.pos)) text = text.slice(0, edit.pos) + edit.spec + text.slice(edit.end);
    }
    text = rewritePathsInText(text);
    if (text !== before) {
      writeFileSync(absolute, text);
      rewritten += 1;
    }
  }

  rewriteConfiguration();

  // 2. Move the files.
  for (const [from, to] of moves) {
    execFileSync("mkdir", ["-p", path.dirname(path.join(ROOT, to))]);
    execFileSync("git", ["mv", from, to], { cwd: ROOT });
  }
  const left: string[] = [];
  const sweep = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const file = path.join(dir, name);
      if (statSync(file).isDirectory()) sweep(file);
      else left.push(rel(file));
    }
  };
  sweep(SRC);
  if (left.length > 0) throw new Error(`files left under src/ that git does not track: ${left.join(", ")}`);
  rmSync(SRC, { recursive: true });
  console.log(`moved ${moves.size} files; rewrote ${rewritten} files`);
}

/** A relative import of a file outside src/ (a test helper, a script, package.json): it does not move. */
function resolveOldOutside(fromOld: string, specifier: string): string | undefined {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(fromOld), specifier));
  for (const candidate of [base, `${base}.ts`, `${base}.js`, `${base}/index.ts`, `${base}.json`]) {
    if (existsSync(path.join(ROOT, candidate)) && statSync(path.join(ROOT, candidate)).isFile()) return candidate;
  }
  return undefined;
}

main();
