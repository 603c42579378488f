/**
 * Issue 33 item 3: no typed figure. Every measured figure in README.md and docs/ is a marked region filled by
 * scripts/docs-figures.ts from bench/results.json or gas-report.json. This fails when a region disagrees with the
 * JSON (a new bench or gas run without regenerating), names a figure the JSON does not hold, when README.md or a
 * guide carries a measured-looking figure (a number with a unit of time, gas, rate or size) outside a region, or
 * when the decisions index misses a record.
 */
import { expect } from "chai";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";

import { FIGURE_REGION, figureDocuments, figureText, loadFigureSources, staleFigures } from "../../scripts/docs-figures";

const ROOT = path.join(__dirname, "..", "..");
const MEASURED = /\b\d[\d,.]*\s?(ms|µs|s\/op|gas|tickets\/s|calls\/s|receipts\/s|appends\/s|bytes|B|KiB|MiB|GiB|%)(?![\w/])/g;

/** The prose of a document: without figure regions, fenced blocks, inline code and HTML comments. */
function prose(text: string): string {
  return text
    .replace(FIGURE_REGION, " ")
    .replace(/^```[\s\S]*?^```/gm, " ")
    .replace(/`[^`\n]*`/g, " ")
    .replace(/<!--[\s\S]*?-->/g, " ");
}

describe("generated figures in README.md and docs/", function () {
  this.timeout(60_000);

  it("every region agrees with bench/results.json and gas-report.json, and the decisions index is complete", () => {
    const stale = staleFigures();
    expect(stale.map((s) => `${s.file}: ${s.spec} reads "${s.found.slice(0, 200)}", the JSON says "${s.expected.slice(0, 200)}"`), "run scripts/docs-figures.ts").to.deep.equal([]);
  });

  it("README.md and docs/performance.md carry their headline figures as regions, each resolving in the JSON", () => {
    const sources = loadFigureSources();
    const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
    const specs = [...readme.matchAll(FIGURE_REGION)].map((m) => m[1]!);
    expect(specs).to.include.members(["gas:open", "gas:closeCooperative", "bench:tickets.inflight64.perSecond"]);
    const performance = readFileSync(path.join(ROOT, "docs", "performance.md"), "utf8");
    const all = [...performance.matchAll(FIGURE_REGION)].map((m) => m[1]!);
    // Every operation of the gas report has its row.
    for (const name of Object.keys(sources.gasReport.gas)) expect(all, name).to.include(`gas:${name}`);
    for (const spec of [...specs, ...all]) expect(() => figureText(spec, sources), spec).to.not.throw();
  });

  it("a region that disagrees with the JSON is caught", () => {
    const sources = loadFigureSources();
    const expected = figureText("gas:open", sources);
    const wrong = `<!-- figure:gas:open -->1<!-- /figure -->`;
    const match = [...wrong.matchAll(FIGURE_REGION)][0]!;
    expect(match[2]).to.not.equal(expected);
    expect(() => figureText("gas:no such operation", sources)).to.throw(/no "no such operation"/);
    expect(() => figureText("bench:tickets.nowhere", sources)).to.throw(/no "nowhere"/);
  });

  it("README.md and the guides type no measured figure outside a region", () => {
    const documents = figureDocuments().filter((d) => d === "README.md" || d.startsWith(path.join("docs", "guides")));
    expect(documents.length).to.be.greaterThan(3);
    const typed: string[] = [];
    for (const document of documents) {
      for (const match of prose(readFileSync(path.join(ROOT, document), "utf8")).matchAll(MEASURED)) typed.push(`${document}: "${match[0]}"`);
    }
    expect(typed).to.deep.equal([]);
  });

  it("every relative link in README.md, docs/*.md and docs/guides/*.md points at a file that exists", () => {
    const documents = ["README.md", ...["docs", path.join("docs", "guides")].flatMap((dir) => readdirSync(path.join(ROOT, dir)).filter((n) => n.endsWith(".md")).map((n) => path.join(dir, n)))];
    const broken: string[] = [];
    for (const document of documents) {
      const text = readFileSync(path.join(ROOT, document), "utf8").replace(/^```[\s\S]*?^```/gm, "");
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^[a-z]+:/.test(target) || target.startsWith("#")) continue;
        if (!existsSync(path.join(ROOT, path.dirname(document), target.split("#")[0]!))) broken.push(`${document}: ${target}`);
      }
    }
    expect(broken).to.deep.equal([]);
  });
});
