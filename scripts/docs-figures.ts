/**
 * Every measured figure in README.md and docs/ comes from bench/results.json (`npm run bench`) or
 * gas-report.json (`npm run gas`) through a marked region, never typed:
 *
 *   <!-- figure:gas:open -->78,869<!-- /figure -->                     gas-report.json .gas["open"]
 *   <!-- figure:size:DisputeManager -->22,341<!-- /figure -->          gas-report.json .codeSize[…]
 *   <!-- figure:cond:hardfork -->osaka<!-- /figure -->                  gas-report.json .conditions[…]
 *   <!-- figure:bench:tickets.inflight64.perSecond -->492<!-- /figure -->   bench/results.json, a dotted path
 *   <!-- figure:bench:measuredAt|date -->2026-11-26<!-- /figure -->    a formatter after `|`
 *
 * A path walks objects by key and arrays by index (`fleet.runs.1.ticketsPerSecond`). Formatters: none — a
 * number with thousands separators, as many decimals as the JSON holds; `|raw` — the value as JSON holds it;
 * `|date` — the ISO date of a timestamp; `|pct` — a ratio as a percentage with one decimal; `|x` — a ratio
 * with three decimals; `|machine` — "2 × AMD EPYC, 24 GiB, Node v20.20.2" from a machine object.
 *
 *   npx ts-node --transpile-only scripts/docs-figures.ts           fill every region from the JSON
 *   npx ts-node --transpile-only scripts/docs-figures.ts --check   exit 1 when a region disagrees
 *
 * test/docs/figures.test.ts runs the check (and that no measured figure is typed outside a region).
 */
import { readdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import path from "node:path";

const ROOT = path.join(__dirname, "..");
export const FIGURE_REGION = /<!-- figure:([^>]+?) -->([\s\S]*?)<!-- \/figure -->/g;

export type FigureSources = { bench: unknown; gasReport: { gas: Record<string, number>; codeSize: Record<string, number>; conditions: Record<string, unknown> } };

export function loadFigureSources(root = ROOT): FigureSources {
  return {
    bench: JSON.parse(readFileSync(path.join(root, "bench", "results.json"), "utf8")),
    gasReport: JSON.parse(readFileSync(path.join(root, "gas-report.json"), "utf8")),
  };
}

/** The documents whose figures are generated: README.md, docs/*.md and docs/guides/*.md (decision records are history). */
export function figureDocuments(root = ROOT): string[] {
  const list = ["README.md"];
  for (const dir of ["docs", path.join("docs", "guides")]) {
    const full = path.join(root, dir);
    if (!existsSync(full)) continue;
    for (const name of readdirSync(full).sort()) if (name.endsWith(".md")) list.push(path.join(dir, name));
  }
  return list;
}

function walk(value: unknown, keys: string[], spec: string): unknown {
  let at = value;
  for (const key of keys) {
    if (at === null || typeof at !== "object" || !(key in (at as object))) throw new Error(`figure "${spec}": no "${key}" in the JSON.`);
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

function decimals(n: number): number {
  const text = String(n);
  if (/e/i.test(text)) return 0;
  const dot = text.indexOf(".");
  return dot < 0 ? 0 : text.length - dot - 1;
}

/** The text a region must hold for its spec ("gas:open", "bench:a.b|date"). */
export function figureText(spec: string, sources: FigureSources): string {
  const [where, format = ""] = spec.split("|");
  const colon = where!.indexOf(":");
  const source = where!.slice(0, colon);
  const key = where!.slice(colon + 1);
  let value: unknown;
  if (source === "gas") value = walk(sources.gasReport.gas, [key], spec);
  else if (source === "size") value = walk(sources.gasReport.codeSize, [key], spec);
  else if (source === "cond") value = walk(sources.gasReport.conditions, [key], spec);
  else if (source === "bench") value = walk(sources.bench, key.split("."), spec);
  else throw new Error(`figure "${spec}": the source must be gas:, size:, cond: or bench:.`);
  switch (format) {
    case "":
      if (typeof value === "string") return value;
      if (typeof value !== "number") throw new Error(`figure "${spec}" is not a number (${JSON.stringify(value)}); add |raw.`);
      return value.toLocaleString("en-US", { minimumFractionDigits: decimals(value), maximumFractionDigits: decimals(value) });
    case "raw":
      return typeof value === "string" ? value : JSON.stringify(value);
    case "date":
      return new Date(String(value)).toISOString().slice(0, 10);
    case "pct":
      return `${((value as number) * 100).toFixed(1)} %`;
    case "x":
      return (value as number).toFixed(3);
    case "machine": {
      const m = value as { cpus: number; model: string; memoryGiB: number; node: string };
      return `${m.cpus} × ${m.model}, ${m.memoryGiB} GiB, Node ${m.node}`;
    }
    default:
      throw new Error(`figure "${spec}": unknown format "${format}".`);
  }
}

/** The document with every region filled from the JSON. */
export function fillFigures(text: string, sources: FigureSources): string {
  return text.replace(FIGURE_REGION, (_all, spec: string) => `<!-- figure:${spec} -->${figureText(spec, sources)}<!-- /figure -->`);
}

export const DECISIONS_REGION = /(<!-- decisions-index -->\n)([\s\S]*?)(<!-- \/decisions-index -->)/;

/** The table of docs/decisions/README.md: one row per record file, its number and its title line. */
export function decisionsIndex(root = ROOT): string {
  const dir = path.join(root, "docs", "decisions");
  const rows = readdirSync(dir)
    .filter((name) => /^\d{4}-.*\.md$/.test(name))
    .sort()
    .map((name) => {
      const title = readFileSync(path.join(dir, name), "utf8").split("\n")[0]!.replace(/^#+\s*/, "").replace(/^\d{4}\s*[—:-]\s*/, "").trim();
      return `| [${name.slice(0, 4)}](${name}) | ${title.replace(/\|/g, "\\|")} |`;
    });
  return ["| # | decision |", "|---|---|", ...rows, ""].join("\n");
}

/** Regions whose text differs from the JSON: document, spec, what it holds, what it should. */
export function staleFigures(root = ROOT): Array<{ file: string; spec: string; found: string; expected: string }> {
  const sources = loadFigureSources(root);
  const stale: Array<{ file: string; spec: string; found: string; expected: string }> = [];
  for (const file of figureDocuments(root)) {
    const text = readFileSync(path.join(root, file), "utf8");
    for (const match of text.matchAll(FIGURE_REGION)) {
      const expected = figureText(match[1]!, sources);
      if (match[2] !== expected) stale.push({ file, spec: match[1]!, found: match[2]!, expected });
    }
  }
  const index = path.join(root, "docs", "decisions", "README.md");
  if (existsSync(index)) {
    const match = DECISIONS_REGION.exec(readFileSync(index, "utf8"));
    const expected = decisionsIndex(root);
    if (!match) stale.push({ file: "docs/decisions/README.md", spec: "decisions-index", found: "(no region)", expected });
    else if (match[2] !== expected) stale.push({ file: "docs/decisions/README.md", spec: "decisions-index", found: match[2]!, expected });
  }
  return stale;
}

if (require.main === module) {
  if (process.argv.includes("--check")) {
    const stale = staleFigures();
    for (const s of stale) console.error(`${s.file}: figure ${s.spec} reads "${s.found}", the JSON says "${s.expected}".`);
    if (stale.length > 0) {
      console.error("Run `npx ts-node --transpile-only scripts/docs-figures.ts` to regenerate them.");
      process.exit(1);
    }
    console.log("Every figure region agrees with bench/results.json and gas-report.json.");
  } else {
    const sources = loadFigureSources();
    let count = 0;
    for (const file of figureDocuments()) {
      const full = path.join(ROOT, file);
      const text = readFileSync(full, "utf8");
      const filled = fillFigures(text, sources);
      count += [...text.matchAll(FIGURE_REGION)].length;
      if (filled !== text) writeFileSync(full, filled);
    }
    const index = path.join(ROOT, "docs", "decisions", "README.md");
    const text = readFileSync(index, "utf8");
    writeFileSync(index, text.replace(DECISIONS_REGION, (_all, open: string, _old: string, close: string) => `${open}${decisionsIndex()}${close}`));
    console.log(`Filled ${count} figure regions from bench/results.json and gas-report.json, and the decisions index.`);
  }
}
