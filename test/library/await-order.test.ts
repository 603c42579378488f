/**
 * No call starts a promise in one argument and then awaits in a later one, as in
 * `expectRevert(write(...), "Error", [await read()])`. Arguments are evaluated in order: the call in the first
 * argument is already running while the later `await` waits, and if it rejects in that time nothing handles the
 * rejection yet. Node reports it as unhandled, and mocha fails whichever test is running ("done() called
 * multiple times"). It happened in CI once, depending on timing; this test finds the pattern by reading the
 * sources with the TypeScript compiler, so it fails every time instead.
 */
import { expect } from "chai";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

const REPO = path.join(__dirname, "..", "..");

function typeScriptFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) typeScriptFiles(file, out);
    else if (/\.(ts|mts|cts)$/.test(entry.name) && !entry.name.endsWith(".d.ts")) out.push(file);
  }
  return out;
}

/** Whether `node` awaits, not counting awaits inside functions it defines (those run later, if at all). */
function awaits(node: ts.Node): boolean {
  if (ts.isAwaitExpression(node)) return true;
  if (ts.isFunctionLike(node)) return false;
  return ts.forEachChild(node, awaits) ?? false;
}

/** `file:line: text` of each call whose first argument is a call and whose later arguments await. */
function awaitsAfterStartedCall(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && node.arguments.length > 1) {
      const [first, ...rest] = node.arguments;
      if (ts.isCallExpression(first!) && rest.some(awaits)) {
        const { line } = source.getLineAndCharacterOfPosition(node.getStart());
        found.push(`${path.relative(REPO, fileName)}:${line + 1}: ${node.getText().split("\n")[0]!.slice(0, 100)}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("await order in calls that take a promise", () => {
  it("finds the pattern, and not a call whose later argument awaits inside a function", () => {
    const text = [
      `await expectRevert(c.write.f([1]), "E", [await c.read.g()]);`,
      `await expectRevert(c.write.f([1]), ...(await errorOf(c)));`,
      `const role = await c.read.g(); await expectRevert(c.write.f([1]), "E", [role]);`,
      `await within(c.write.f([1]), 1000, "the write");`,
      `await retry(c.write.f([1]), async () => await c.read.g());`,
    ].join("\n");
    expect(awaitsAfterStartedCall(path.join(REPO, "x.ts"), text).map((f) => f.split(":")[1])).to.deep.equal(["1", "2"]);
  });

  it("is absent from test/, src/ and scripts/", () => {
    const files = ["test", "src", "scripts"].flatMap((dir) => typeScriptFiles(path.join(REPO, dir)));
    expect(files.length).to.be.greaterThan(100);
    const found = files.flatMap((file) => awaitsAfterStartedCall(file, readFileSync(file, "utf8")));
    expect(found, `compute awaited arguments before starting the call:\n${found.join("\n")}`).to.deep.equal([]);
  });
});
