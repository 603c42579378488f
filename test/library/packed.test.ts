/**
 * The library as a stranger gets it (issue 13): `npm pack`, install the tarball into an empty project,
 * and from there — importing only the package's public entry points — open, stream over and close a
 * channel on the devnet, from JavaScript, TypeScript (type-checked against the shipped .d.ts) and an ES
 * module; `ioi --help` runs from the installed package with no TypeScript tooling.
 *
 * Offline: `npm install --offline` resolves every dependency from npm's cache; when the cache lacks a
 * package document (a machine whose cache only ever served `npm ci`), it retries with `--prefer-offline`,
 * which fetches documents from the registry but tarballs from the cache. better-sqlite3 is seeded from this
 * repository's node_modules because its native module builds from source (over a minute on two cores);
 * npm keeps a present package that satisfies the range and installs everything else from the tarball's
 * dependency list.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseEther, toHex, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { escrowFixture, HARDHAT_MNEMONIC, ROLE } from "../helpers/fixtures";

const ROOT = path.join(__dirname, "..", "..");
const PRICE = parseEther("0.002");
const DEPOSIT = parseEther("0.1");
const keyOf = (index: number) => toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) as Hex;
/** Native dependencies copied rather than rebuilt (see the header). */
const SEEDED = ["better-sqlite3", "bindings", "file-uri-to-path"];

function npm(args: string[], cwd: string) {
  const run = spawnSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, encoding: "utf8", env: { ...process.env, npm_config_update_notifier: "false" } });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** Runs `node …command` in the project without blocking the event loop; resolves with its exit and output. */
function runAsync(command: string[], env: Record<string, string | undefined>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, command, { cwd: project, env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("close", (status) => resolve({ status, stdout, stderr }));
  });
}

let project: string;

describe("the packed package, installed into an empty project", function () {
  this.timeout(15 * 60_000);
  let work: string;
  let rpc: EmbeddedRpc;
  let fx: Awaited<ReturnType<typeof escrowFixture>>;
  let tarball: string;
  let installMode: string;

  before(async () => {
    work = mkdtempSync(path.join(os.tmpdir(), "ioi-pack-"));
    // `npm pack` runs `prepare`, which builds dist/ from the sources of this checkout.
    const packed = npm(["pack", "--pack-destination", work], ROOT);
    expect(packed.status, packed.output).to.equal(0);
    tarball = path.join(work, readdirSync(work).find((f) => f.endsWith(".tgz"))!);

    project = path.join(work, "project");
    mkdirSync(path.join(project, "node_modules"), { recursive: true });
    writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "ioi-consumer", version: "1.0.0", private: true }));
    for (const name of SEEDED) cpSync(path.join(ROOT, "node_modules", name), path.join(project, "node_modules", name), { recursive: true });
    let installed = npm(["install", "--offline", tarball], project);
    installMode = "--offline";
    if (installed.status !== 0 && /ENOTCACHED/.test(installed.output)) {
      installed = npm(["install", "--prefer-offline", tarball], project);
      installMode = "--prefer-offline";
    }
    expect(installed.status, installed.output).to.equal(0);
    for (const file of ["consumer.js", "consumer.ts", "consumer.mjs", "tsconfig.json"]) cpSync(path.join(ROOT, "examples", "library", file), path.join(project, file));

    rpc = await serveEmbeddedNetwork(hre);
    fx = await loadFixture(escrowFixture);
  });
  after(async () => {
    await rpc?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** Runs a consumer program against the devnet and checks every balance the channel moved. */
  async function runConsumer(command: string[]) {
    const publicClient = fx.publicClient;
    const balances = async () => ({
      escrow: await publicClient.getBalance({ address: fx.escrow.address }),
      provider: await publicClient.getBalance({ address: fx.provider.address }),
      treasury: await publicClient.getBalance({ address: fx.treasury.account.address }),
    });
    const before = await balances();
    // Asynchronous: this process serves the devnet's RPC, so it must not block while the consumer runs.
    const run = await runAsync(command, {
      IOI_RPC_URL: rpc.url,
      IOI_CHAIN_ID: String(fx.domain.chainId),
      IOI_ESCROW: fx.escrow.address,
      IOI_PAYER_KEY: keyOf(ROLE.payer),
      IOI_PROVIDER_KEY: keyOf(ROLE.provider),
      IOI_PRICE: PRICE.toString(),
      IOI_DEPOSIT: DEPOSIT.toString(),
    });
    expect(run.status, `${run.stdout}${run.stderr}`).to.equal(0);
    const result = JSON.parse(run.stdout.trim().split("\n").pop()!) as Record<string, unknown>;
    const after = await balances();
    expect(result.phaseWhileOpen).to.equal(1); // Open
    expect(result.results).to.have.length(3);
    expect(result.paidToProvider).to.equal((3n * PRICE).toString());
    expect(result.refundedToFunder).to.equal((DEPOSIT - 3n * PRICE).toString());
    // Exact: the provider gains three invocations (the payer sent the close and paid its gas), the escrow
    // holds what it held before, the treasury's routing fee is 0 in this fixture.
    expect(after.provider - before.provider).to.equal(3n * PRICE);
    expect(after.escrow).to.equal(before.escrow);
    expect(after.treasury).to.equal(before.treasury);
    return result;
  }

  it("installs from the tarball offline, with dist/, the ABIs and the schemas, and no sources or tests", () => {
    expect(["--offline", "--prefer-offline"]).to.include(installMode);
    const listing = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" }).split("\n");
    for (const file of ["package/dist/channel-client/roles/payer.js", "package/dist/channel-client/roles/payer.d.ts", "package/dist/channel-client/abi/index.js", "package/bin/ioi.js", "package/LICENSE"]) {
      expect(listing, file).to.include(file);
    }
    expect(listing.some((f) => f.startsWith("package/schemas/") && f.endsWith(".schema.json"))).to.equal(true);
    expect(listing.filter((f) => f.startsWith("package/test/") || f.startsWith("package/src/") || f.startsWith("package/arbitration/") || (f.startsWith("package/channel-client/") && !f.startsWith("package/channel-client/ui/public/")) || f.endsWith(".ts") && !f.endsWith(".d.ts"))).to.deep.equal([]);
    expect(existsSync(path.join(project, "node_modules", "ts-node")), "ts-node must not be installed").to.equal(false);
  });

  it("opens, streams and closes a channel from JavaScript (require)", async () => {
    const result = await runConsumer(["consumer.js"]);
    expect(result.language).to.equal("javascript");
  });

  it("opens, streams and closes a channel from TypeScript, type-checked against the shipped declarations", async () => {
    const tsc = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");
    const compiled = spawnSync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: project, encoding: "utf8" });
    expect(compiled.status, `${compiled.stdout}${compiled.stderr}`).to.equal(0);
    const result = await runConsumer([path.join("out", "consumer.js")]);
    expect(result.language).to.equal("typescript");
  });

  it("is importable by name from an ES module", () => {
    const run = spawnSync(process.execPath, ["consumer.mjs"], { cwd: project, encoding: "utf8" });
    expect(run.status, run.stderr).to.equal(0);
    const result = JSON.parse(run.stdout.trim()) as { missing: string[]; abiEntries: number };
    expect(result.missing).to.deep.equal([]);
    expect(result.abiEntries).to.be.greaterThan(10);
  });

  it("runs `ioi --help` from the installed package's bin with no TypeScript tooling", () => {
    const run = spawnSync(path.join(project, "node_modules", ".bin", "ioi"), ["--help"], { cwd: project, encoding: "utf8" });
    expect(run.status, run.stderr).to.equal(0);
    expect(run.stdout).to.match(/Usage: ioi/);
    expect(run.stderr).to.not.match(/ts-node/);
  });
});
