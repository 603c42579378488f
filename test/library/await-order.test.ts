/**
 * No promise is started in one argument (or array element, or property) and left without a handler while a
 * later one awaits, as in `expectRevert(write(...), "Error", [await read()])`. Arguments are evaluated in
 * order: the write is already running while the later `await` waits, and if it rejects in that time nothing
 * handles the rejection yet. Node reports it as unhandled, and mocha fails whichever test is running ("done()
 * called multiple times"). It happened in CI once, depending on timing; this test finds the pattern with the
 * TypeScript compiler's type checker (an element counts when its type is a Promise), so it fails every time.
 */
import { expect } from "chai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import ts from "typescript";

const REPO = path.join(__dirname, "..", "..");

/** Whether `node` awaits, not counting awaits inside functions it defines (those run later, if at all). */
function awaits(node: ts.Node): boolean {
  if (ts.isAwaitExpression(node)) return true;
  if (ts.isFunctionLike(node)) return false;
  return ts.forEachChild(node, awaits) ?? false;
}

/** The elements evaluated in order: a call's arguments, an array's elements, an object's property values. */
function siblings(node: ts.Node): readonly ts.Node[] | undefined {
  if (ts.isCallExpression(node) || ts.isNewExpression(node)) return node.arguments ?? [];
  if (ts.isArrayLiteralExpression(node)) return node.elements;
  if (ts.isObjectLiteralExpression(node)) return node.properties.map((p) => (ts.isPropertyAssignment(p) ? p.initializer : p));
  return undefined;
}

/** `file:line: text` of each promise-typed call followed, among its siblings, by one that awaits. */
function startedBeforeAwait(program: ts.Program, files: (file: string) => boolean): string[] {
  const checker = program.getTypeChecker();
  const isPromise = (node: ts.Node) => checker.getTypeAtLocation(node).getSymbol()?.getName() === "Promise";
  const found: string[] = [];
  for (const source of program.getSourceFiles()) {
    if (source.isDeclarationFile || !files(source.fileName)) continue;
    const visit = (node: ts.Node): void => {
      const items = siblings(node) ?? [];
      const started = items.findIndex(
        (item, i) => (ts.isCallExpression(item) || ts.isNewExpression(item)) && items.slice(i + 1).some(awaits) && isPromise(item),
      );
      if (started >= 0) {
        const item = items[started]!;
        const { line } = source.getLineAndCharacterOfPosition(item.getStart());
        found.push(`${path.relative(REPO, source.fileName)}:${line + 1}: ${item.getText().split("\n")[0]!.slice(0, 100)}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

describe("await order: no promise waits unhandled while a later argument awaits", () => {
  it("finds a started promise followed by an await, and not a plain call, an awaited one, or an await inside a function", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "await-order-"));
    try {
      const file = path.join(dir, "sample.ts");
      writeFileSync(
        file,
        [
          `declare function write(): Promise<void>;`,
          `declare function read(): Promise<string>;`,
          `declare function pure(n: number): string;`,
          `declare function check(p: Promise<void>, ...args: unknown[]): Promise<void>;`,
          `export async function f() {`,
          `  await check(write(), "E", [await read()]);`, // 6: flagged
          `  const writes = [write(), await read()];`, // 7: flagged
          `  const o = { a: write(), b: await read() };`, // 8: flagged
          `  const role = await read(); await check(write(), "E", [role]);`,
          `  const p = [pure(1), await read()];`,
          `  await check(write(), async () => await read());`,
          `  return [writes, o, role, p, [await write(), await read()]];`,
          `}`,
        ].join("\n"),
      );
      const program = ts.createProgram([file], { strict: true, target: ts.ScriptTarget.ES2022, lib: ["lib.es2022.d.ts"], noEmit: true });
      const lines = startedBeforeAwait(program, (name) => path.resolve(name) === file).map((f) => f.split(":")[1]);
      expect(lines).to.deep.equal(["6", "7", "8"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is absent from every TypeScript file of the project (test/, channel-client/, arbitration/, scripts/)", function () {
    this.timeout(180_000); // builds and type-checks the whole program: about 10–25 s on this machine
    const configFile = ts.findConfigFile(REPO, ts.sys.fileExists, "tsconfig.json")!;
    const config = ts.parseJsonConfigFileContent(ts.readConfigFile(configFile, ts.sys.readFile).config, ts.sys, REPO);
    const program = ts.createProgram({ rootNames: config.fileNames, options: { ...config.options, noEmit: true } });
    const ours = (name: string) => !name.includes(`${path.sep}node_modules${path.sep}`) && path.resolve(name).startsWith(REPO);
    const files = program.getSourceFiles().filter((s) => !s.isDeclarationFile && ours(s.fileName)).map((s) => path.relative(REPO, s.fileName));
    for (const dir of ["test", "channel-client", "arbitration", "scripts"]) expect(files.some((f) => f.startsWith(`${dir}/`)), dir).to.equal(true);
    const found = startedBeforeAwait(program, ours);
    expect(found, `await each argument before starting the promise, or take its rejection as it starts:\n${found.join("\n")}`).to.deep.equal([]);
  });
});
