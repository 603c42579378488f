/**
 * Adversarial suite, issue 30 item 6 (decision 0035): a contract-wallet payer whose signature is NOT 65 bytes.
 *
 * `TwoOwnerWallet` approves, through ERC-1271, only both owners' signatures of a digest concatenated (130 bytes).
 * The payer (`createPayer({ payerWallet, walletSigner })`) signs the wallet's grant, the cooperative summary and the
 * closing ticket in that format; its owner key pays the tickets as the grant's session key. Proven with exact
 * balances of the key, the wallet, the provider and the escrow:
 *
 * - the 130-byte grant and summary cross the wire, the provider node checks them by the wallet's ERC-1271 answer,
 *   and the escrow's `closeCooperativeByWallet` takes the 130-byte summary signature;
 * - the 130-byte closing ticket is taken by `closeUnilateralByWallet`, and `finalize` pays the provider exactly;
 * - one owner's 65-byte signature alone is not the wallet's: the node refuses to bind that grant, nothing is paid.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import path from "node:path";
import { concat, createWalletClient, custom, getAddress, parseEther, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { hardhat } from "viem/chains";

import { echoHandler } from "../../channel-client/cli/channel";
import { signDigest } from "../../channel-client/core/eip712";
import type { PricingTerms } from "../../channel-client/core/terms";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { createPayer } from "../../channel-client/roles/payer";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { rejection } from "../helpers/assert";
import { cliSandbox } from "../helpers/cli";
import { escrowFixture, ROLE } from "../helpers/fixtures";
import { keyOf } from "../helpers/mcp-parts";

const PRICE = parseEther("0.001");
const PRICING: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const SECOND = privateKeyToAccount(keyOf(ROLE.sessionKey));

async function twoOwnerFixture() {
  const fx = await escrowFixture();
  const wallet = await hre.viem.deployContract("TwoOwnerWallet", [fx.payer.address, SECOND.address]);
  return { ...fx, wallet };
}

/** What `from` paid in gas in the blocks after `fromBlock`. */
async function gasOf(publicClient: PublicClient, from: Hex, fromBlock: bigint): Promise<bigint> {
  let total = 0n;
  const latest = await publicClient.getBlockNumber();
  for (let n = fromBlock + 1n; n <= latest; n++) {
    const block = await publicClient.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) {
      if (getAddress(tx.from) !== getAddress(from)) continue;
      const receipt = await publicClient.getTransactionReceipt({ hash: tx.hash });
      total += receipt.gasUsed * receipt.effectiveGasPrice;
    }
  }
  return total;
}

describe("adversarial: a contract wallet whose signature is 130 bytes (two owners) pays, closes and is judged alike (decision 0035)", function () {
  this.timeout(240_000);
  const box = cliSandbox("ioi-wallet-long-");

  async function setUp() {
    const fx = await loadFixture(twoOwnerFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const providerStore = SqliteStore.open(path.join(box.dir, `provider-${box.cleanup.length}.db`));
    const logs: string[] = [];
    const node = await ProviderNode.start({ account: fx.provider, publicClient, domain: fx.domain, store: providerStore, pricing: PRICING, handler: echoHandler, modelSnapshotId: "echo@1", log: (line) => logs.push(line) });
    const payerStore = SqliteStore.open(path.join(box.dir, `payer-${box.cleanup.length}.db`));
    box.cleanup.push(async () => {
      await node.stop();
      await providerStore.close();
      await payerStore.close();
    });
    const deployment = { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } };
    const wallet = createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) });
    // The wallet's own format: both owners' signatures of the digest, first owner first.
    const walletSigner = async (digest: Hex) => concat([await signDigest(fx.payer, digest), await signDigest(SECOND, digest)]);
    const payer = createPayer({ deployment, publicClient, wallet, store: payerStore, payerWallet: fx.wallet.address, walletSigner });
    const watched = { key: fx.payer.address, wallet: fx.wallet.address, provider: fx.provider.address, escrow: fx.escrow.address };
    const balances = async () => Object.fromEntries(await Promise.all(Object.entries(watched).map(async ([k, a]) => [k, await publicClient.getBalance({ address: a })] as const)));
    return { fx, publicClient, node, logs, providerStore, payerStore, payer, deployment, wallet, balances };
  }

  it("cooperative close: the 130-byte grant and summary are checked by the wallet on the node and by the escrow; exact balances", async () => {
    const { fx, publicClient, node, providerStore, payerStore, payer, balances } = await setUp();
    const before = await balances();
    const fromBlock = await publicClient.getBlockNumber();
    const peer = { host: "127.0.0.1", port: node.port };
    const opened = await payer.openChannel({ provider: fx.provider.address, peer, deposit: parseEther("0.1"), expectedPrice: PRICE });
    const client = await payer.connect(opened.sessionId);
    for (let i = 1; i <= 3; i++) await client.invoke({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "echo", arguments: { i } } });
    await client.close();
    // The wallet's grant went over the wire as 130 bytes, and the node bound it (its ERC-1271 said yes).
    const [grant] = providerStore.sessionKeyGrants(opened.sessionId);
    expect((grant!.signature.length - 2) / 2).to.equal(130);
    const settled = await payer.closeCooperative(opened.sessionId);
    expect((providerStore.getCooperativeClose(opened.sessionId)!.payerSignature.length - 2) / 2).to.equal(130);
    expect((payerStore.sessionKeyGrants(opened.sessionId)[0]!.signature.length - 2) / 2).to.equal(130);
    const paid = 3n * PRICE;
    expect(settled.paidToProvider).to.equal(paid);
    const gas = await gasOf(publicClient, fx.payer.address, fromBlock);
    const after = await balances();
    expect({ key: after.key! - before.key!, wallet: after.wallet! - before.wallet!, provider: after.provider! - before.provider!, escrow: after.escrow! - before.escrow! }).to.deep.equal({
      key: -paid - gas,
      wallet: 0n,
      provider: paid,
      escrow: 0n,
    });
  });

  it("unilateral close with the wallet's 130-byte closing ticket, then finalize: the provider gets exactly the calls served", async () => {
    const { fx, publicClient, node, payer, balances } = await setUp();
    const before = await balances();
    const fromBlock = await publicClient.getBlockNumber();
    const opened = await payer.openChannel({ provider: fx.provider.address, peer: { host: "127.0.0.1", port: node.port }, deposit: parseEther("0.1"), expectedPrice: PRICE });
    const client = await payer.connect(opened.sessionId);
    for (let i = 1; i <= 2; i++) await client.invoke({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "echo", arguments: { i } } });
    await client.close();
    await payer.closeUnilateral(opened.sessionId);
    await hre.network.provider.send("evm_increaseTime", [3601]);
    await hre.network.provider.send("evm_mine", []);
    const settled = await payer.finalize(opened.sessionId);
    const paid = 2n * PRICE;
    expect(settled.paidToProvider).to.equal(paid);
    const gas = await gasOf(publicClient, fx.payer.address, fromBlock);
    const after = await balances();
    expect({ key: after.key! - before.key!, wallet: after.wallet! - before.wallet!, provider: after.provider! - before.provider!, escrow: after.escrow! - before.escrow! }).to.deep.equal({
      key: -paid - gas,
      wallet: 0n,
      provider: paid,
      escrow: 0n,
    });
  });

  it("one owner's 65-byte signature alone is not the wallet's: the node refuses the grant, no call is served or paid", async () => {
    const { fx, publicClient, node, logs, payer, deployment, wallet } = await setUp();
    const opened = await payer.openChannel({ provider: fx.provider.address, peer: { host: "127.0.0.1", port: node.port }, deposit: parseEther("0.1"), expectedPrice: PRICE });
    const lone = SqliteStore.open(path.join(box.dir, "lone.db"));
    box.cleanup.push(() => lone.close());
    await lone.putChannel(payer.parameters.store.getChannel(opened.sessionId)!);
    // Without walletSigner the first owner's key signs the grant alone (65 bytes).
    const oneOwner = createPayer({ deployment, publicClient, wallet, store: lone, payerWallet: fx.wallet.address });
    await rejection(oneOwner.connect(opened.sessionId, { host: "127.0.0.1", port: node.port }));
    expect((lone.sessionKeyGrants(opened.sessionId)[0]!.signature.length - 2) / 2).to.equal(65);
    const logged = logs.join("\n");
    expect(logged, logged).to.contain(`refused session ${opened.sessionId}: The grant of session key ${fx.payer.address} was not signed by the payer ${getAddress(fx.wallet.address)}.`);
    expect(await publicClient.getBalance({ address: fx.escrow.address })).to.equal(parseEther("0.1"));
  });
});
