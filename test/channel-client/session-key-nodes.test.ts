/**
 * Session keys over the sealed socket (issue 14, decision 0025): the payer client signs with the key and sends
 * the grant when it binds; the provider node checks it against the chain, then every ticket's key, cap and
 * method; a revocation the node learns from the escrow's events stops the key at once, and the provider's
 * newest key-signed ticket still closes the channel on-chain with its grant.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseEther, parseEventLogs, type PublicClient } from "viem";

import { echoHandler } from "../../channel-client/cli/channel";
import { closeUnilateral, gasEscrowAbi, openChannel, revokeSessionKey } from "../../channel-client/chain/escrow";
import { PayerClient } from "../../channel-client/node/payer-client";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { signSessionKeyGrant } from "../../channel-client/core/session-key";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { escrowFixture, hardhatAccount, makeTerms, ROLE } from "../helpers/fixtures";

const PRICE = parseEther("0.001");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const KEY = hardhatAccount(ROLE.sessionKey);
const request = (i: number, method = "tools/echo") => ({ jsonrpc: "2.0", id: `invoke-${i}`, method, params: { text: `call ${i}` } });

async function keyedFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing) });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: parseEther("1") });
  const wallets = await hre.viem.getWalletClients();
  return { ...fx, publicClient, opened, payerWallet: wallets[ROLE.payer]!, providerWallet: wallets[ROLE.provider]! };
}

describe("session keys between the payer client and the provider node", function () {
  this.timeout(120_000);
  let dir: string;
  const cleanup: Array<() => Promise<unknown>> = [];
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-keyed-"));
  });
  afterEach(async () => {
    while (cleanup.length > 0) await cleanup.pop()!().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it("streams key-signed tickets, refuses a method outside the grant and a revoked key, and closes with the newest ticket and its grant", async () => {
    const fx = await loadFixture(keyedFixture);
    const providerStore = SqliteStore.open(path.join(dir, "provider.db"));
    const node = await ProviderNode.start({ account: fx.provider, publicClient: fx.publicClient, domain: fx.domain, store: providerStore, pricing, handler: echoHandler, modelSnapshotId: "worker:echo@1" });
    cleanup.push(async () => {
      await node.stop();
      await providerStore.close();
    });
    const grant = await signSessionKeyGrant({
      account: fx.payer,
      domain: fx.domain,
      sessionId: fx.opened.sessionId,
      key: KEY.address,
      expiry: (await fx.publicClient.getBlock()).timestamp + 3_600n,
      spendCap: 20n * PRICE,
      methods: ["tools/echo"],
      epoch: 0n,
    });
    const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
    await payerStore.putChannel({ sessionId: fx.opened.sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" });
    const client = await PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(fx.opened.sessionId)!, port: node.port, sessionKey: { account: KEY, grant } });
    cleanup.push(async () => {
      await client.close();
      await payerStore.close();
    });

    for (let i = 1; i <= 5; i++) await client.invoke(request(i));
    // The node kept the grant durably before accepting the key's first ticket: a watchtower needs it on-chain.
    expect(providerStore.sessionKeyGrants(fx.opened.sessionId)).to.deep.equal([grant]);
    const outside = await client.invoke(request(6, "tools/delete")).then(() => undefined, (e: Error) => e);
    expect(outside?.message).to.contain("SessionKeyCapabilityError");

    const revoked = await revokeSessionKey({ wallet: fx.payerWallet, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.opened.ref, key: KEY.address });
    const receipt = await fx.publicClient.getTransactionReceipt({ hash: revoked.hash });
    const events = parseEventLogs({ abi: gasEscrowAbi, logs: receipt.logs }).map((e) => ({ ...e, blockNumber: receipt.blockNumber, transactionHash: receipt.transactionHash }));
    node.applyEscrowEvents(events as Parameters<ProviderNode["applyEscrowEvents"]>[0]);
    const afterRevocation = await client.invoke(request(7)).then(() => undefined, (e: Error) => e);
    expect(afterRevocation?.message).to.contain("SessionKeyRevokedError");

    // The provider's newest ticket was signed by the key; with the grant it closes inside the grace.
    const newest = providerStore.latestTicket(fx.opened.sessionId)!;
    expect(newest.ticket.cumulativeAmount).to.equal(5n * PRICE);
    const closing = await closeUnilateral({ wallet: fx.providerWallet, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.opened.ref, ticket: newest, grant });
    expect(closing.state.amount).to.equal(5n * PRICE);
  });
});
