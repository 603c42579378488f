/**
 * A contract-wallet payer end to end through the SDK and the CLI (issue 30 item 6, decision 0035): the payer is
 * wallet W (an owner-key ERC-1271 wallet) and its owner key K signs for it. `createPayer({ payerWallet: W })` and
 * `ioi open|stream --payer-wallet W` open a channel naming W as payer (K funds it), connect to a real provider node
 * as the session key of W's grant (checked by W's ERC-1271 answer), stream, and close with W's signature.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import type { ChildProcess } from "node:child_process";
import path from "node:path";
import { createWalletClient, custom, getAddress, parseEther, toHex, type Hex, type PublicClient } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { hardhat } from "viem/chains";

import { echoHandler } from "../../channel-client/cli/channel";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { createPayer } from "../../channel-client/roles/payer";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { PricingTerms } from "../../channel-client/core/terms";
import { rejection } from "../helpers/assert";
import { cliSandbox, runCli } from "../helpers/cli";
import { escrowFixture, HARDHAT_MNEMONIC, ROLE } from "../helpers/fixtures";
import { startProviderChild } from "../helpers/provider-child";

const PRICE = parseEther("0.001");
const PRICING: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const keyOf = (index: number) => toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) as Hex;
const jsonOf = (result: { out: string }) => JSON.parse(result.out.split("\n").pop()!) as Record<string, unknown>;

async function walletFixture() {
  const fx = await escrowFixture();
  const wallet = await hre.viem.deployContract("OwnerWallet", [fx.payer.address]);
  return { ...fx, wallet };
}

async function gasPaid(publicClient: PublicClient, hashes: Hex[]): Promise<bigint> {
  let total = 0n;
  for (const hash of hashes) {
    const receipt = await publicClient.getTransactionReceipt({ hash });
    total += receipt.gasUsed * receipt.effectiveGasPrice;
  }
  return total;
}

/** What `from` paid for gas in the blocks after `fromBlock`. */
async function gasOf(publicClient: PublicClient, from: Hex, fromBlock: bigint): Promise<bigint> {
  let total = 0n;
  const latest = await publicClient.getBlockNumber();
  for (let n = fromBlock + 1n; n <= latest; n++) {
    const block = await publicClient.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) {
      if (getAddress(tx.from) === getAddress(from)) total += await gasPaid(publicClient, [tx.hash]);
    }
  }
  return total;
}

describe("a contract-wallet payer through the SDK and the CLI (decision 0035)", function () {
  this.timeout(240_000);
  const box = cliSandbox("ioi-wallet-");
  const cleanup = box.cleanup;
  const children = new Set<ChildProcess>();
  afterEach(() => {
    for (const child of children) child.kill("SIGKILL");
  });

  it("createPayer({ payerWallet }) opens, streams through a provider node and closes cooperatively with the wallet's signature: exact balances", async () => {
    const fx = await loadFixture(walletFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const providerStore = SqliteStore.open(path.join(box.dir, "provider.db"));
    const logs: string[] = [];
    const node = await ProviderNode.start({ account: fx.provider, publicClient, domain: fx.domain, store: providerStore, pricing: PRICING, handler: echoHandler, modelSnapshotId: "echo@1", log: (line) => logs.push(line) });
    const payerStore = SqliteStore.open(path.join(box.dir, "payer.db"));
    const plainStore = SqliteStore.open(path.join(box.dir, "plain.db"));
    cleanup.push(async () => {
      await node.stop();
      await providerStore.close();
      await payerStore.close();
      await plainStore.close();
    });
    const deployment = { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } };
    const wallet = createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) });
    const payer = createPayer({ deployment, publicClient, wallet, store: payerStore, payerWallet: fx.wallet.address });
    const watched = { key: fx.payer.address, wallet: fx.wallet.address, provider: fx.provider.address, escrow: fx.escrow.address };
    const before = Object.fromEntries(await Promise.all(Object.entries(watched).map(async ([k, a]) => [k, await publicClient.getBalance({ address: a })] as const)));

    const peer = { host: "127.0.0.1", port: node.port };
    const opened = await payer.openChannel({ provider: fx.provider.address, peer, deposit: parseEther("0.1"), expectedPrice: PRICE });
    expect(getAddress(payerStore.getChannel(opened.sessionId)!.ref.terms.payer)).to.equal(getAddress(fx.wallet.address));

    // The wallet's key without the wallet's grant is not the channel's payer: the node refuses the binding.
    const channel = payerStore.getChannel(opened.sessionId)!;
    await plainStore.putChannel(channel);
    const plain = createPayer({ deployment, publicClient, wallet, store: plainStore });
    await rejection(plain.connect(opened.sessionId, peer));
    expect(logs.join("\n")).to.contain(`${fx.payer.address} is not a key the channel's wallet payer ${getAddress(fx.wallet.address)} granted in this session.open.`);

    const client = await payer.connect(opened.sessionId);
    for (let i = 1; i <= 3; i++) await client.invoke({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "echo", arguments: { i } } });
    await client.close();
    const settled = await payer.closeCooperative(opened.sessionId);
    const paid = 3n * PRICE;
    expect(settled.paidToProvider).to.equal(paid);
    const gas = await gasPaid(publicClient, [opened.hash, settled.hash]);
    const after = Object.fromEntries(await Promise.all(Object.entries(watched).map(async ([k, a]) => [k, await publicClient.getBalance({ address: a })] as const)));
    expect({
      key: after.key! - before.key!,
      wallet: after.wallet! - before.wallet!,
      provider: after.provider! - before.provider!,
      escrow: after.escrow! - before.escrow!,
    }).to.deep.equal({ key: -paid - gas, wallet: 0n, provider: paid, escrow: 0n });
  });

  it("ioi open --payer-wallet refuses an address without code; ioi open|stream --payer-wallet and ioi close settle through a provider process", async () => {
    const fx = await loadFixture(walletFixture);
    const child = await startProviderChild({ rpcUrl: box.rpc.url, escrow: fx.escrow.address, db: path.join(box.dir, "provider.db"), price: PRICE, key: keyOf(ROLE.provider), children, startDeadlineMs: 60_000 });
    cleanup.push(async () => {
      child.child.kill("SIGTERM");
      await child.exited;
    });
    const payerDb = path.join(box.dir, "payer.db");
    const run = (argv: string[]) => runCli([...argv, "--json", "--rpc", box.rpc.url, "--escrow", fx.escrow.address, "--db", payerDb], { IOI_PRIVATE_KEY: keyOf(ROLE.payer) });
    const peer = `127.0.0.1:${child.port}`;
    const notWallet = await run(["open", "--provider", fx.provider.address, "--deposit", parseEther("0.1").toString(), "--peer", peer, "--payer-wallet", fx.stranger.account.address]);
    expect(notWallet.code).to.not.equal(0);
    expect(notWallet.err).to.contain(`--payer-wallet ${getAddress(fx.stranger.account.address)} holds no code on chain 31337: it is not a contract wallet`);

    const opened = await run(["open", "--provider", fx.provider.address, "--deposit", parseEther("0.1").toString(), "--peer", peer, "--payer-wallet", fx.wallet.address]);
    expect(opened.code, opened.err).to.equal(0);
    const sessionId = jsonOf(opened).sessionId as Hex;
    const unnamed = await run(["stream", "--session", sessionId, "-n", "1"]);
    expect(unnamed.code).to.not.equal(0);
    expect(unnamed.err).to.contain(`pass --payer-wallet ${getAddress(fx.wallet.address)}`);
    const streamed = await run(["stream", "--session", sessionId, "-n", "2", "--payer-wallet", fx.wallet.address]);
    expect(streamed.code, streamed.err).to.equal(0);
    const providerBefore = await fx.publicClient.getBalance({ address: fx.provider.address });
    const fromBlock = await fx.publicClient.getBlockNumber();
    const closed = await run(["close", "--session", sessionId]);
    // The provider's own tower submits a co-signed close only after its grace (decision 0040's amendment); should it
    // still be first, `ioi close` reports the settlement of this very summary and exits 0. Either way the channel
    // settles once, with the wallet's summary.
    expect(closed.code, closed.err).to.equal(0);
    expect(await fx.escrow.read.phaseOf([sessionId])).to.equal(5); // Settled
    const providerGas = await gasOf(fx.publicClient as unknown as PublicClient, fx.provider.address, fromBlock);
    expect(await fx.publicClient.getBalance({ address: fx.provider.address })).to.equal(providerBefore + 2n * PRICE - providerGas);
    expect(await fx.publicClient.getBalance({ address: fx.escrow.address })).to.equal(0n);
  });
});
