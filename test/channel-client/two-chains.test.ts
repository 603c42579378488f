/**
 * Networks by chain id (issue 13, decision 0019): the CLI, pointed at two devnets with different chain ids at
 * once and given no contract address, acts on each chain's own contracts from `deployments/chain-<id>.json`;
 * an address with no code, or a record for another chain, fails before anything is sent.
 */
import { expect } from "chai";
import hre from "hardhat";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createPublicClient, createWalletClient, getAddress, http, parseEther, toHex, type Abi, type Address, type Hex, type PublicClient } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { runCli } from "../helpers/cli";
import { HARDHAT_MNEMONIC, ROLE } from "../helpers/fixtures";

const keyOf = (index: number) => toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) as Hex;
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

/** Deploys a GasEscrow on the node at `url` and writes that chain's deployment record into `directory`. */
async function deployEscrow(url: string, directory: string): Promise<{ chainId: number; escrow: Address; client: PublicClient }> {
  const client = createPublicClient({ transport: http(url) }) as PublicClient;
  const chainId = await client.getChainId();
  const deployer = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: ROLE.deployer });
  const chain = { id: chainId, name: `chain-${chainId}`, nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [url] } } } as const;
  const wallet = createWalletClient({ account: deployer, chain, transport: http(url) });
  const deploy = async (name: string, args: unknown[]) => {
    const artifact = await hre.artifacts.readArtifact(name);
    const hash = await wallet.deployContract({ abi: artifact.abi as Abi, bytecode: artifact.bytecode as Hex, args });
    return { abi: artifact.abi as Abi, receipt: await client.waitForTransactionReceipt({ hash }) };
  };
  // The escrow holds settled providers' bonds in a registry (issue 28 item 2), which needs a bond token.
  const token = await deploy("LaborGas", [deployer.address]);
  const day = 24n * 3600n;
  const registry = await deploy("ProviderRegistry", [deployer.address, token.receipt.contractAddress!, 1n, 1n, 30n * day]);
  const registryAddress = getAddress(registry.receipt.contractAddress!);
  const { receipt } = await deploy("GasEscrow", [deployer.address, deployer.address, 0, registryAddress]);
  const holder = (await client.readContract({ address: registryAddress, abi: registry.abi, functionName: "HOLDER_ROLE" })) as Hex;
  await client.waitForTransactionReceipt({
    hash: await wallet.writeContract({ address: registryAddress, abi: registry.abi, functionName: "grantRole", args: [holder, receipt.contractAddress!] }),
  });
  const escrow = getAddress(receipt.contractAddress!);
  const record = { network: `chain-${chainId}`, chainId, contracts: { GasEscrow: { address: escrow, blockNumber: receipt.blockNumber.toString() } } };
  writeFileSync(path.join(directory, `chain-${chainId}.json`), JSON.stringify(record));
  return { chainId, escrow, client };
}

describe("two devnets with different chain ids at once", function () {
  let embedded: EmbeddedRpc | undefined;
  let node: ChildProcess | undefined;
  let directory: string;
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const urlB = `http://127.0.0.1:${port}`;

  before(async function () {
    directory = mkdtempSync(path.join(os.tmpdir(), "ioi-two-chains-"));
    embedded = await serveEmbeddedNetwork(hre);
    node = spawn(process.execPath, [require.resolve("hardhat/internal/cli/bootstrap"), "node", "--hostname", "127.0.0.1", "--port", String(port)], {
      cwd: path.join(__dirname, "..", ".."),
      env: { ...process.env, IOI_DEVNET_CHAIN_ID: "31338" },
      stdio: "ignore",
    });
    await waitForRpc(urlB, 90_000);
  });
  after(async () => {
    node?.kill("SIGTERM");
    await embedded?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it("opens a channel on each chain's own GasEscrow, chosen by the RPC's chain id", async () => {
    const a = await deployEscrow(embedded!.url, directory);
    const b = await deployEscrow(urlB, directory);
    expect([a.chainId, b.chainId]).to.deep.equal([31337, 31338]);
    const env = { IOI_PRIVATE_KEY: keyOf(ROLE.payer), IOI_DEPLOYMENTS_DIR: directory, IOI_ESCROW: undefined, IOI_NETWORK: undefined, IOI_DEPLOYMENT: undefined };
    const provider = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: ROLE.provider }).address;
    const open = (url: string, deposit: bigint, extra: string[] = []) =>
      runCli(["open", "--json", "--rpc", url, "--provider", provider, "--deposit", deposit.toString(), "--price", "1000", "--db", path.join(directory, `payer-${url.split(":").pop()}.db`), ...extra], env);

    const onA = jsonOf(await open(embedded!.url, parseEther("0.1")));
    const onB = jsonOf(await open(urlB, parseEther("0.2")));
    expect(onA).to.deep.include({ ok: true, domain: { chainId: 31337, escrow: a.escrow } });
    expect(onB).to.deep.include({ ok: true, domain: { chainId: 31338, escrow: b.escrow } });
    expect(await a.client.getBalance({ address: a.escrow })).to.equal(parseEther("0.1"));
    expect(await b.client.getBalance({ address: b.escrow })).to.equal(parseEther("0.2"));

    // An address with no code: refused before anything is sent (no transaction, balances unchanged).
    const payer = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: ROLE.payer }).address;
    const nonce = await b.client.getTransactionCount({ address: payer });
    const balance = await b.client.getBalance({ address: payer });
    const empty = "0x000000000000000000000000000000000000dEaD";
    const noCode = await open(urlB, 123_456_789n, ["--escrow", empty]);
    expect(noCode.code).to.equal(1);
    expect(noCode.err).to.contain(`NoContractError: No contract at ${getAddress(empty)}`);
    expect(noCode.err).to.contain("on chain 31338; nothing was sent");
    expect(noCode.err).to.not.match(/\n\s+at /);
    // A record for another chain: refused too.
    const wrong = await open(urlB, 1n, ["--deployment", path.join(directory, "chain-31337.json")]);
    expect(wrong.code).to.equal(1);
    expect(wrong.err).to.contain("is for chain 31337, but the RPC serves chain 31338");
    expect(await b.client.getTransactionCount({ address: payer })).to.equal(nonce);
    expect(await b.client.getBalance({ address: payer })).to.equal(balance);
    expect(await b.client.getBalance({ address: getAddress(empty) })).to.equal(0n);
    expect(await b.client.getBalance({ address: b.escrow })).to.equal(parseEther("0.2"));
  });
});
