/**
 * A sponsored payer from the CLI (issue 14, decision 0025 amendment): a sponsor funds a channel for a payer with
 * `ioi open --payer`; the payer, whose store knows nothing of it, runs `ioi import` (the opening is read from the
 * chain and checked), streams with `ioi stream` and settles with `ioi close`. The deposit's unspent part goes back
 * to the sponsor; the payer's balance moves by nothing but the gas of the close it sent.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import path from "node:path";
import { getAddress, isAddressEqual, parseEther, toHex, type Address, type Hex, type PublicClient } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { echoHandler } from "../../channel-client/cli/channel";
import { CHANNEL_PHASES } from "../../channel-client/chain/escrow";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { type PricingTerms } from "../../channel-client/core/terms";
import { escrowFixture, HARDHAT_MNEMONIC, ROLE } from "../helpers/fixtures";
import { cliSandbox, runCli } from "../helpers/cli";

const PRICE = parseEther("0.002");
const DEPOSIT = parseEther("0.1");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const accountOf = (index: number) => mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index });
const keyOf = (index: number) => ({ IOI_PRIVATE_KEY: toHex(accountOf(index).getHdKey().privateKey!) as Hex });
const jsonOf = (result: { out: string }) => JSON.parse(result.out.split("\n").pop()!) as Record<string, unknown>;
/** The sponsored payer: an account of its own, never the funder. */
const PAYER = ROLE.stranger;

/** ETH each account paid for gas in blocks (from, to]. */
async function gasPaid(publicClient: PublicClient, from: bigint, to: bigint, who: Address): Promise<bigint> {
  let paid = 0n;
  for (let n = from + 1n; n <= to; n++) {
    const block = await publicClient.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) {
      if (!isAddressEqual(tx.from, who)) continue;
      const receipt = await publicClient.getTransactionReceipt({ hash: tx.hash });
      paid += receipt.gasUsed * receipt.effectiveGasPrice;
    }
  }
  return paid;
}

describe("ioi import: a sponsored payer streams from the CLI", function () {
  this.timeout(120_000);
  const box = cliSandbox("ioi-sponsored-");
  const cleanup = box.cleanup;

  async function sponsored() {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const store = SqliteStore.open(path.join(box.dir, "provider.db"));
    const node = await ProviderNode.start({ account: fx.provider, publicClient, domain: fx.domain, store, pricing, handler: echoHandler, modelSnapshotId: "worker:echo@1" });
    cleanup.push(async () => {
      await node.stop();
      await store.close();
    });
    const common = ["--rpc", box.rpc.url, "--escrow", fx.escrow.address];
    const peer = `127.0.0.1:${node.port}`;
    const as = (index: number, db: string) => (argv: string[]) => runCli([...argv, "--json", ...common, "--db", path.join(box.dir, db)], keyOf(index));
    const sponsor = as(ROLE.funder, "sponsor.db");
    const payer = as(PAYER, "payer.db");
    const payerAddress = getAddress(accountOf(PAYER).address);
    const start = await publicClient.getBlockNumber();
    const opened = await sponsor(["open", "--provider", fx.provider.address, "--deposit", DEPOSIT.toString(), "--price", PRICE.toString(), "--peer", peer, "--payer", payerAddress]);
    expect(opened.code, opened.err).to.equal(0);
    const sessionId = jsonOf(opened).sessionId as Hex;
    return { fx, publicClient, peer, sponsor, payer, payerAddress, sessionId, start, providerStore: store };
  }

  it("the sponsor funds, the payer imports the channel from the chain, streams and settles; the refund goes to the sponsor and the payer paid only its close's gas", async () => {
    const c = await sponsored();
    const { publicClient, fx } = c;
    const funder = getAddress(fx.funder.account.address);
    const before = {
      payer: await publicClient.getBalance({ address: c.payerAddress }),
      funder: await publicClient.getBalance({ address: funder }),
      provider: await publicClient.getBalance({ address: fx.provider.address }),
    };
    const startBlock = c.start;
    // Not in the payer's store yet: it cannot stream.
    const early = await c.payer(["stream", "--session", c.sessionId, "-n", "1", "--peer", c.peer]);
    expect(early.code).to.not.equal(0);
    // Issue 28 item 9: the payer's store was never created, and streaming does not create it.
    expect(early.err).to.match(new RegExp(`The store holds no channel ${c.sessionId}|The store .* does not exist; check --db`));

    const imported = await c.payer(["import", "--session", c.sessionId, "--price", PRICE.toString(), "--peer", c.peer]);
    expect(imported.code, imported.err).to.equal(0);
    expect(jsonOf(imported)).to.deep.include({ ok: true, sessionId: c.sessionId, payer: c.payerAddress, funder, deposit: DEPOSIT.toString() });
    // Importing again is harmless.
    expect((await c.payer(["import", "--session", c.sessionId, "--price", PRICE.toString()])).code).to.equal(0);

    const streamed = await c.payer(["stream", "--session", c.sessionId, "-n", "3"]);
    expect(streamed.code, streamed.err).to.equal(0);
    expect(c.providerStore.receiptCount(c.sessionId)).to.equal(3);
    const closed = await c.payer(["close", "--session", c.sessionId]);
    expect(closed.code, closed.err).to.equal(0);
    const paid = 3n * PRICE;
    expect(jsonOf(closed)).to.deep.include({ paidToProvider: paid.toString(), refundedToFunder: (DEPOSIT - paid).toString() });
    expect(CHANNEL_PHASES[await fx.escrow.read.phaseOf([c.sessionId])]).to.equal("Settled");

    const end = await publicClient.getBlockNumber();
    const after = {
      payer: await publicClient.getBalance({ address: c.payerAddress }),
      funder: await publicClient.getBalance({ address: funder }),
      provider: await publicClient.getBalance({ address: fx.provider.address }),
    };
    const payerGas = await gasPaid(publicClient, startBlock, end, c.payerAddress);
    expect(payerGas > 0n).to.equal(true); // the cooperative close it submitted
    expect(after.payer - before.payer).to.equal(-payerGas);
    // `before` was read after the open: the sponsor's only change since is the refund.
    expect(after.funder - before.funder + (await gasPaid(publicClient, startBlock + 1n, end, funder))).to.equal(DEPOSIT - paid);
    expect(after.provider - before.provider + (await gasPaid(publicClient, startBlock, end, fx.provider.address))).to.equal(paid);
    expect(await publicClient.getBalance({ address: fx.escrow.address })).to.equal(0n);
  });

  it("refuses, with one sentence and nothing stored, an importer who is not the channel's payer, terms that are not the channel's, and a session never opened", async () => {
    const c = await sponsored();
    const stranger = (argv: string[]) => runCli([...argv, "--json", "--rpc", box.rpc.url, "--escrow", c.fx.escrow.address, "--db", path.join(box.dir, "stranger.db")], keyOf(ROLE.payer));
    const notPayer = await stranger(["import", "--session", c.sessionId, "--price", PRICE.toString()]);
    expect(notPayer.code).to.equal(2);
    expect(notPayer.err.split("\n")[0]).to.contain(`names ${c.payerAddress} as its payer, not you (${getAddress(accountOf(ROLE.payer).address)})`);

    const otherTerms = await c.payer(["import", "--session", c.sessionId, "--price", (PRICE * 2n).toString()]);
    expect(otherTerms.code).to.equal(2);
    expect(otherTerms.err.split("\n")[0]).to.match(/The channel binds terms 0x[0-9a-f]{64}; --price \d+ hashes to 0x[0-9a-f]{64} .*nothing was imported\.$/);

    const unknown = `0x${"ab".repeat(32)}`;
    const never = await c.payer(["import", "--session", unknown, "--price", PRICE.toString()]);
    expect(never.code).to.equal(2);
    expect(never.err.split("\n")[0]).to.contain(`No channel ${unknown} was opened on the escrow`);

    const missing = await c.payer(["import", "--session", c.sessionId]);
    expect(missing.code).to.equal(2);
    expect(missing.err.split("\n")[0]).to.contain("Give --price WEI or --terms-file FILE");

    // Nothing of the refused attempts is in the payer's store: streaming still finds no channel.
    const stream = await c.payer(["stream", "--session", c.sessionId, "-n", "1", "--peer", c.peer]);
    expect(stream.err).to.match(new RegExp(`The store holds no channel ${c.sessionId}|The store .* does not exist; check --db`));
  });
});
