/**
 * Attack: hand the library a deployment object that points the payer's money somewhere else — an address
 * with no code (a typo, a contract not deployed on this chain) or a record made for another chain. The
 * payer entry point (`channel-client/roles/payer.ts`) checks the RPC's chain id and the escrow's code before it sends
 * anything: it refuses with one sentence, and not one wei (not even gas) leaves the payer.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createWalletClient, custom, defineChain, parseEther, type PublicClient } from "viem";

import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { createPayer } from "../../channel-client/roles/payer";
import type { Deployment } from "../../channel-client/roles/deployment";
import { rejection } from "../helpers/assert";
import { escrowFixture } from "../helpers/fixtures";

const hardhat = defineChain({ id: 31337, name: "Hardhat", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: ["http://127.0.0.1:8545"] } } });

describe("adversarial: a library deployment object that points the payer's money elsewhere", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-libdep-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function attempt(deployment: (fx: Awaited<ReturnType<typeof escrowFixture>>) => Deployment) {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const wallet = createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) });
    const store = SqliteStore.open(path.join(dir, "payer.db"));
    const watched = [fx.payer.address, fx.escrow.address, fx.stranger.account.address, fx.treasury.account.address];
    const before = await Promise.all(watched.map((address) => publicClient.getBalance({ address })));
    const blockBefore = await publicClient.getBlockNumber();
    try {
      const payer = createPayer({ deployment: deployment(fx), publicClient, wallet, store });
      const error = await rejection(payer.openChannel({ provider: fx.provider.address, peer: { host: "127.0.0.1", port: 9 }, deposit: parseEther("1") }));
      const after = await Promise.all(watched.map((address) => publicClient.getBalance({ address })));
      expect(after).to.deep.equal(before); // payer, escrow, the would-be recipient, treasury: exactly unchanged
      expect(await publicClient.getBlockNumber()).to.equal(blockBefore); // no transaction was mined
      expect(store.listChannels()).to.deep.equal([]);
      return error;
    } finally {
      await store.close();
    }
  }

  it("an escrow address with no code: refused before anything is sent", async () => {
    const error = await attempt((fx) => ({ chainId: 31337, contracts: { GasEscrow: fx.stranger.account.address } }));
    expect(error.name).to.equal("DeploymentError");
    expect(error.message).to.match(/^No contract code at the deployment's GasEscrow address 0x[0-9a-fA-F]{40} on chain 31337; nothing was sent\.$/);
  });

  it("a deployment record for another chain: refused before anything is sent", async () => {
    const error = await attempt((fx) => ({ chainId: 11155111, contracts: { GasEscrow: fx.escrow.address } }));
    expect(error.name).to.equal("DeploymentError");
    expect(error.message).to.equal("The RPC serves chain 31337, but the deployment is for chain 11155111; nothing was sent.");
  });

  it("a deployment naming no GasEscrow: refused when the payer is created", async () => {
    const fx = await loadFixture(escrowFixture);
    const wallet = createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) });
    const store = SqliteStore.open(path.join(dir, "payer.db"));
    try {
      expect(() => createPayer({ deployment: { chainId: 31337, contracts: {} }, publicClient: fx.publicClient as unknown as PublicClient, wallet, store })).to.throw(
        "The deployment for chain 31337 names no GasEscrow address.",
      );
    } finally {
      await store.close();
    }
  });
});
