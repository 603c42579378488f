/**
 * Issue 33 items 3 and 5: the guides are executable. This reads README.md and every docs/guides/*.md, and runs
 * every ```sh block of a document in order, in one bash session per document (so variables carry from block to
 * block), against a fresh devnet it starts itself (`scripts/devnet.ts` — what `npm run devnet` runs — on a free
 * loopback port, its deployment records in a temporary folder). It fails on the first block that fails, naming
 * the document, the block and its output.
 *
 * The session runs as a reader's shell would in a clone: the working folder sees the repository's examples/ and
 * node_modules/, `npx ioi` runs the CLI from the TypeScript sources (IOI_CLI_SOURCE=1; bin/ioi.js would prefer a
 * stale dist/), `IOI_RPC_URL` points at the test's devnet, and HOME is a temporary folder. A block preceded by
 * `<!-- no-run: reason -->` is not run (the test counts them and requires a reason); daemons a guide starts in
 * the background end with their document's session (its process group is killed), and the devnet and every
 * temporary folder end with the test.
 */
import { expect } from "chai";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const ROOT = path.join(__dirname, "..", "..");

export type ShellBlock = { index: number; line: number; code: string; noRun?: string };

/** The ```sh blocks of a Markdown document, each with the reason of a `<!-- no-run: … -->` marker just above it. */
export function shellBlocks(markdown: string): ShellBlock[] {
  const lines = markdown.split("\n");
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    if (open[1] === "sh") {
      let before = i - 1;
      while (before >= 0 && lines[before]!.trim() === "") before--;
      const marker = before >= 0 ? /^<!-- no-run: (.+?) -->$/.exec(lines[before]!.trim()) : null;
      blocks.push({ index: blocks.length + 1, line: i + 1, code: lines.slice(i + 1, end).join("\n"), ...(marker ? { noRun: marker[1] } : {}) });
    }
    i = end;
  }
  return blocks;
}

export function guideDocuments(): string[] {
  const guides = path.join(ROOT, "docs", "guides");
  const names = existsSync(guides) ? readdirSync(guides).filter((n) => n.endsWith(".md")).sort() : [];
  // The devnet guide first: the others build on what it explains.
  names.sort((a, b) => (a === "devnet.md" ? -1 : b === "devnet.md" ? 1 : a.localeCompare(b)));
  const all = ["README.md", ...names.map((n) => path.join("docs", "guides", n))];
  // IOI_GUIDES=devnet.md,payer.md runs only those documents (while writing one).
  const only = process.env.IOI_GUIDES?.split(",").map((n) => n.trim()).filter(Boolean);
  return only?.length ? all.filter((d) => only.includes(path.basename(d))) : all;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function killGroup(child: ChildProcess | undefined): Promise<void> {
  if (!child?.pid) return Promise.resolve();
  const pid = child.pid;
  return new Promise((resolve) => {
    const done = () => resolve();
    if (child.exitCode !== null || child.signalCode !== null) {
      // The session's shell is gone, but daemons it started may still hold its process group.
      try {
        process.kill(-pid, "SIGTERM");
      } catch {
        /* nothing left */
      }
      setTimeout(() => {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          /* nothing left */
        }
        done();
      }, 1_500);
      return;
    }
    child.once("exit", () => setTimeout(done, 300));
    try {
      process.kill(-pid, "SIGTERM");
    } catch {
      done();
    }
    setTimeout(() => {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        /* gone */
      }
      done();
    }, 5_000);
  });
}

describe("reading a guide's shell blocks", () => {
  it("finds ```sh blocks in order, honours a no-run marker with its reason, and skips other languages", () => {
    const text = ["# t", "```sh", "echo one", "```", "", "<!-- no-run: a daemon -->", "", "```sh", "sleep 9", "```", "```json", "{}", "```", "<!-- no-run: -->", "```sh", "echo three", "```"].join("\n");
    const blocks = shellBlocks(text);
    expect(blocks.map((b) => [b.index, b.code, b.noRun])).to.deep.equal([
      [1, "echo one", undefined],
      [2, "sleep 9", "a daemon"],
      // A marker without a reason is not a marker: the block runs.
      [3, "echo three", undefined],
    ]);
  });

  it("every no-run marker in README.md and the guides gives its reason, and they stay few", () => {
    let markers = 0;
    let blocks = 0;
    for (const document of guideDocuments()) {
      for (const block of shellBlocks(readFileSync(path.join(ROOT, document), "utf8"))) {
        blocks++;
        if (block.noRun !== undefined) {
          markers++;
          expect(block.noRun.length, `${document}:${block.line}`).to.be.greaterThan(10);
        }
      }
    }
    expect(markers).to.be.lessThan(blocks / 2);
  });
});

describe("the guides run as written (README.md, docs/guides/*.md)", function () {
  this.timeout(20 * 60_000);
  let temp: string;
  let devnet: ChildProcess | undefined;
  let env: Record<string, string>;
  const noRun: string[] = [];
  const groups = new Set<number>();
  // If mocha itself is stopped, nothing this test started outlives it.
  const onSignal = (signal: NodeJS.Signals) => {
    killAll();
    process.exit(signal === "SIGINT" ? 130 : 143);
  };
  const killAll = () => {
    for (const pid of groups) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        /* gone */
      }
    }
  };

  before(async function () {
    this.timeout(5 * 60_000);
    // The guides' blocks use these tools (the devnet guide says so); without one the failure should say which.
    for (const tool of ["bash", "curl", "jq", "sha256sum"]) {
      if (spawnSync("bash", ["-c", `command -v ${tool}`]).status !== 0) throw new Error(`The guides need ${tool} on the PATH, as docs/guides/devnet.md says; it is missing.`);
    }
    temp = mkdtempSync(path.join(os.tmpdir(), "ioi-guides-"));
    const port = await freePort();
    for (const dir of ["deployments", "home", "work", "bin", "state"]) mkdirSync(path.join(temp, dir));
    for (const link of ["examples", "node_modules", "schemas", "scripts"]) symlinkSync(path.join(ROOT, link), path.join(temp, "work", link));
    // `npx ioi …` as in a clone, from the TypeScript sources (never a stale dist/), through tsx (esbuild), which
    // starts about three times faster than bin/ioi.js's ts-node path; anything else goes to the real npx.
    const npx = path.join(temp, "bin", "npx");
    const cli = path.join(ROOT, "channel-client", "cli", "ioi.ts");
    writeFileSync(npx, `#!/usr/bin/env bash\nif [ "$1" = ioi ]; then shift; exec node --import tsx ${JSON.stringify(cli)} "$@"; fi\nexec ${JSON.stringify(path.join(path.dirname(process.execPath), "npx"))} "$@"\n`);
    chmodSync(npx, 0o755);
    env = {
      PATH: `${path.join(temp, "bin")}:${process.env.PATH}`,
      HOME: path.join(temp, "home"),
      LANG: "C.UTF-8",
      IOI_CLI_SOURCE: "1",
      IOI_RPC_URL: `http://127.0.0.1:${port}`,
      IOI_DEPLOYMENTS_DIR: path.join(temp, "deployments"),
      IOI_KEYSTORE_DIR: path.join(temp, "home", ".ioi", "keystore"),
      TMPDIR: os.tmpdir(),
    };
    devnet = spawn(process.execPath, [require.resolve("ts-node/dist/bin"), "--transpile-only", "scripts/devnet.ts"], {
      cwd: ROOT,
      env: { ...process.env, ...env, IOI_DEVNET_PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    groups.add(devnet.pid!);
    process.once("exit", killAll);
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, onSignal);
    let log = "";
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        log += chunk.toString();
        if (log.includes("Devnet running at")) resolve();
      };
      devnet!.stdout!.on("data", onData);
      devnet!.stderr!.on("data", onData);
      devnet!.once("exit", (code) => reject(new Error(`The devnet exited (${code}) before it was ready:\n${log.slice(-3000)}`)));
    });
  });

  after(async () => {
    await killGroup(devnet);
    process.removeListener("exit", killAll);
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.removeListener(signal, onSignal);
    if (temp) rmSync(temp, { recursive: true, force: true });
    if (noRun.length > 0) console.log(`      blocks not run (marked no-run): ${noRun.length}\n${noRun.map((n) => `        ${n}`).join("\n")}`);
  });

  for (const document of guideDocuments()) {
    it(`${document}: every sh block, in order`, async function () {
      this.timeout(8 * 60_000);
      const blocks = shellBlocks(readFileSync(path.join(ROOT, document), "utf8"));
      for (const b of blocks) if (b.noRun !== undefined) noRun.push(`${document}:${b.line} — ${b.noRun}`);
      const runnable = blocks.filter((b) => b.noRun === undefined);
      if (runnable.length === 0) return;
      const state = path.join(temp, "state", document.replace(/[^A-Za-z0-9]+/g, "_"));
      mkdirSync(state, { recursive: true });
      const script = [
        "set -eo pipefail",
        `cd ${JSON.stringify(path.join(temp, "work"))}`,
        ...runnable.flatMap((b) => [`echo ${b.index} > ${JSON.stringify(path.join(state, "current"))}`, `exec > ${JSON.stringify(path.join(state, `block-${b.index}.log`))} 2>&1`, b.code, ""]),
        `echo done > ${JSON.stringify(path.join(state, "current"))}`,
      ].join("\n");
      writeFileSync(path.join(state, "script.sh"), script);
      const shell = spawn("bash", [path.join(state, "script.sh")], { cwd: path.join(temp, "work"), env: env as NodeJS.ProcessEnv, stdio: "ignore", detached: true });
      groups.add(shell.pid!);
      const limitMs = 7 * 60_000;
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        void killGroup(shell);
      }, limitMs);
      const code = await new Promise<number | null>((resolve) => shell.once("exit", (c) => resolve(c)));
      clearTimeout(timer);
      await killGroup(shell);
      const current = readFileSync(path.join(state, "current"), "utf8").trim();
      if (current !== "done" || code !== 0 || timedOut) {
        const block = blocks.find((b) => String(b.index) === current);
        const output = existsSync(path.join(state, `block-${current}.log`)) ? readFileSync(path.join(state, `block-${current}.log`), "utf8") : "";
        expect.fail(
          `${document}: sh block ${current} (line ${block?.line}) ${timedOut ? `did not finish within ${limitMs / 60_000} min` : `failed (exit ${code})`}.\n` +
            `--- block ---\n${block?.code}\n--- output (last 4000 characters) ---\n${output.slice(-4000)}`,
        );
      }
    });
  }
});
