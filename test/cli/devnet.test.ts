/**
 * Issue 29 item 6: `ioi faucet` adds exactly the ETH and LaborGas asked for (and nothing to anyone else) on a
 * devnet, and is refused with one sentence — nothing sent — on a chain id that is not a devnet's or where the
 * deployment record's LaborGas has no code; `ioi devnet time` moves the chain clock by exactly the amount and
 * mines a block, and is refused off-devnet.
 */
import { expect } from "chai";
import hre from "hardhat";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createPublicClient, erc20Abi, getAddress, http, parseEther, type Address, type PublicClient } from "viem";

import { deployAll, writeDeployment, type Deployment } from "../../scripts/deploy";
import { runCli, cliSandbox } from "../helpers/cli";

const jsonOf = (result: { out: string }) => JSON.parse(result.out.split("\n").pop()!) as Record<string, unknown>;

async function waitForRpc(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      await createPublicClient({ transport: http(url, { retryCount: 0 }) }).getChainId();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  throw new Error(`no node at ${url}`);
}

describe("ioi faucet and ioi devnet time", function () {
  this.timeout(180_000);
  const box = cliSandbox("ioi-devnet-cli-");
  let deployment: Deployment;
  let publicClient: PublicClient;
  const to = getAddress("0x1234567890abcdef1234567890abcdef12345678");

  before(async () => {
    deployment = await deployAll(hre);
    publicClient = (await hre.viem.getPublicClient()) as unknown as PublicClient;
  });

  const lgasOf = (who: Address) => publicClient.readContract({ address: deployment.contracts.LaborGas.address, abi: erc20Abi, functionName: "balanceOf", args: [who] });
  const supply = () => publicClient.readContract({ address: deployment.contracts.LaborGas.address, abi: erc20Abi, functionName: "totalSupply" });

  it("funds exactly the ETH and LGAS asked for, and nothing else moves", async () => {
    writeDeployment(deployment, box.dir);
    const env = { IOI_DEPLOYMENTS_DIR: box.dir, IOI_NETWORK: undefined, IOI_DEPLOYMENT: undefined };
    const [ethBefore, lgasBefore, supplyBefore, ownerLgas] = [await publicClient.getBalance({ address: to }), await lgasOf(to), await supply(), await lgasOf(deployment.deployer)];
    const ownerEth = await publicClient.getBalance({ address: deployment.deployer });
    const result = await runCli(["faucet", "--to", to, "--eth", "1.5", "--lgas", "250.25", "--rpc", box.rpc.url, "--json"], env);
    expect(result.code, result.err).to.equal(0);
    expect(await publicClient.getBalance({ address: to })).to.equal(ethBefore + parseEther("1.5"));
    expect(await lgasOf(to)).to.equal(lgasBefore + parseEther("250.25"));
    // Minted, not transferred: the supply grew by exactly the amount and the owner's LGAS did not move.
    expect(await supply()).to.equal(supplyBefore + parseEther("250.25"));
    expect(await lgasOf(deployment.deployer)).to.equal(ownerLgas);
    // The owner (impersonated) paid only the mint's gas.
    expect((await publicClient.getBalance({ address: deployment.deployer })) < ownerEth).to.equal(true);
    expect(jsonOf(result)).to.deep.include({ ok: true, chainId: 31337, to, eth: parseEther("1.5").toString(), lgas: parseEther("250.25").toString() });

    // Defaults: 10 ETH and 1000 LGAS.
    const again = await runCli(["faucet", "--to", to, "--rpc", box.rpc.url], env);
    expect(again.code, again.err).to.equal(0);
    expect(await publicClient.getBalance({ address: to })).to.equal(ethBefore + parseEther("11.5"));
    expect(await lgasOf(to)).to.equal(lgasBefore + parseEther("1250.25"));
  });

  it("refuses a deployment record whose LaborGas holds no code, and bad amounts, sending nothing", async () => {
    writeFileSync(
      path.join(box.dir, "chain-31337.json"),
      JSON.stringify({ ...deployment, contracts: { ...deployment.contracts, LaborGas: { ...deployment.contracts.LaborGas, address: "0x000000000000000000000000000000000000dEaD" } } }),
    );
    const env = { IOI_DEPLOYMENTS_DIR: box.dir, IOI_NETWORK: undefined, IOI_DEPLOYMENT: undefined };
    const eth = await publicClient.getBalance({ address: to });
    const noCode = await runCli(["faucet", "--to", to, "--rpc", box.rpc.url], env);
    expect(noCode.code).to.equal(2);
    expect(noCode.err).to.contain("names LaborGas 0x000000000000000000000000000000000000dEaD, which holds no code on chain 31337; nothing was sent");
    expect(noCode.err).to.not.match(/\n\s+at /);
    const bad = await runCli(["faucet", "--to", to, "--eth", "-1", "--rpc", box.rpc.url], env);
    expect(bad.code).to.equal(2);
    expect(bad.err).to.contain("--eth must be a decimal amount");
    expect(await publicClient.getBalance({ address: to })).to.equal(eth);
  });

  it("moves the clock by exactly +1d, +3600 and +2h, one mined block each", async () => {
    for (const [arg, seconds] of [["+1d", 86_400n], ["+3600", 3_600n], ["+2h", 7_200n]] as const) {
      const before = await publicClient.getBlock();
      const result = await runCli(["devnet", "time", arg, "--rpc", box.rpc.url, "--json"]);
      expect(result.code, result.err).to.equal(0);
      const after = await publicClient.getBlock();
      expect(after.number).to.equal(before.number + 1n);
      expect(after.timestamp - before.timestamp).to.equal(seconds);
      expect(jsonOf(result)).to.deep.include({ ok: true, chainId: 31337, seconds: Number(seconds), timestamp: after.timestamp.toString() });
    }
    const bad = await runCli(["devnet", "time", "+1y", "--rpc", box.rpc.url]);
    expect(bad.code).to.equal(2);
    expect(bad.err).to.contain('must be like +3600, +90m, +2h, +1d or +1w; received "+1y"');
    const before = await publicClient.getBlock();
    const two = await runCli(["devnet", "time", "+1d", "+2d", "--rpc", box.rpc.url]);
    expect(two.code).to.equal(2);
    expect(two.err).to.contain('ioi devnet time takes one positional argument; received "+2d" too.');
    expect((await publicClient.getBlock()).number).to.equal(before.number);
  });

  describe("on a chain that is not a devnet (chain 11155111)", () => {
    let node: ChildProcess | undefined;
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const url = `http://127.0.0.1:${port}`;
    let directory: string;
    before(async () => {
      directory = mkdtempSync(path.join(os.tmpdir(), "ioi-not-devnet-"));
      node = spawn(process.execPath, [require.resolve("hardhat/internal/cli/bootstrap"), "node", "--hostname", "127.0.0.1", "--port", String(port)], {
        cwd: path.join(__dirname, "..", ".."),
        env: { ...process.env, IOI_DEVNET_CHAIN_ID: "11155111" },
        stdio: "ignore",
      });
      await waitForRpc(url, 90_000);
    });
    after(() => {
      node?.kill("SIGTERM");
      rmSync(directory, { recursive: true, force: true });
    });

    it("refuses the faucet and the clock with one sentence and sends nothing", async () => {
      const client = createPublicClient({ transport: http(url) });
      expect(await client.getChainId()).to.equal(11155111);
      // Even with a record for that chain naming a LaborGas (the Sepolia id is not a devnet's).
      writeFileSync(path.join(directory, "chain-11155111.json"), JSON.stringify({ ...deployment, chainId: 11155111, network: "chain-11155111" }));
      const env = { IOI_DEPLOYMENTS_DIR: directory, IOI_NETWORK: undefined, IOI_DEPLOYMENT: undefined };
      const [block, eth] = [await client.getBlockNumber(), await client.getBalance({ address: to })];
      const faucet = await runCli(["faucet", "--to", to, "--rpc", url], env);
      expect(faucet.code).to.equal(2);
      expect(faucet.err.split("\n")[0]).to.equal(
        "ioi faucet failed — UsageError: ioi faucet runs only on a devnet (chain 31337, 31338, 1337), and this RPC serves chain 11155111; nothing was sent.",
      );
      const clock = await runCli(["devnet", "time", "+1d", "--rpc", url]);
      expect(clock.code).to.equal(2);
      expect(clock.err).to.contain("ioi devnet time runs only on a devnet (chain 31337, 31338, 1337), and this RPC serves chain 11155111; nothing was sent.");
      expect(await client.getBlockNumber()).to.equal(block);
      expect(await client.getBalance({ address: to })).to.equal(eth);
    });
  });
});
