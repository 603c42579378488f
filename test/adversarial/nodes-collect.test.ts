/**
 * Issue 28 item 7: a node collects by itself. The provider's watchtower (as `ioi provider` runs it, with
 * `finalize`) finalises a close whose window ended and claims the payout the token refused at settlement,
 * retrying on later polls until the token lets it through; the CLI's client re-reads the head every poll.
 * A co-signed cooperative close waits a grace in the provider's store for the payer to submit it (a payer that
 * went away is covered by the tower after the grace: test/adversarial/lifecycle.test.ts); a payer that submits
 * within the grace costs the tower nothing.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { PublicClient } from "viem";

import { closeCooperative, gasEscrowAbi, type Wallet } from "../../channel-client/chain/escrow";
import { signSettlementSummary } from "../../channel-client/core/summary";
import { Watchtower } from "../../channel-client/node/watchtower";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { gasPaidBy } from "../helpers/fixtures";
import { SYS, TOKEN_TERMS, unsealedSystemFixture } from "../helpers/system";
import { closeUnilateral, ether, feeOf, mined, openSession, PAYER_KEY, PROVIDER_KEY, rootOf, signTicket, snapshot, systemBook, expectDeltas } from "./helpers";

const FEE_BPS = 100;

async function blocklistSystem() {
  const s = await unsealedSystemFixture();
  await mined(s, s.escrow.write.setRoutingFee([FEE_BPS, s.wallets[SYS.treasury]!.account.address]));
  const blk = await hre.viem.deployContract("BlocklistToken");
  // Escrows hold only assets with dispute terms (issue 28 item 4): a blocklist token is a vetted asset like USDC.
  await mined(s, s.disputes.write.setAssetTerms([blk.address, TOKEN_TERMS]));
  for (const wallet of [s.client, s.payerWallet, s.provider]) {
    await mined(s, blk.write.mint([wallet.account.address, ether("1000")]));
    await mined(s, blk.write.approve([s.escrow.address, ether("1000")], { account: wallet.account }));
  }
  return { ...s, blk };
}

describe("issue 28 item 7: nodes that collect", function () {
  it("issue 28 item 7: the provider's tower finalises a due close and claims the refused payout by itself, exact balances", async () => {
    const s = await loadFixture(blocklistSystem);
    const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-collect-"));
    const store = SqliteStore.open(path.join(dir, "provider.db"));
    try {
      const fromBlock = await s.publicClient.getBlockNumber();
      const session = await openSession(s, s.blk.address, { deposit: ether("2") });
      await store.putChannel({ sessionId: session.sessionId, role: "provider", ref: session.ref, pricing: { version: "1", unit: "invocation", pricePerInvocation: 1n }, escrow: s.escrow.address, chainId: session.domain.chainId, deposit: ether("2"), status: "open" });
      const ticket = await signTicket(session, 7n, ether("0.7"));
      const tokens = { LGAS: s.token, BLK: s.blk };
      const snap = await snapshot(s, systemBook(s), tokens);
      const errors: unknown[] = [];
      const claimed: bigint[] = [];
      const tower = new Watchtower({
        publicClient: s.publicClient as unknown as PublicClient,
        wallet: s.provider as unknown as Wallet,
        escrow: s.escrow.address,
        store,
        fromBlock,
        finalize: true,
        defend: ["provider"],
        onError: (error) => errors.push(error),
        onClaimed: (_asset, amount) => claimed.push(amount),
      });
      await mined(s, closeUnilateral(session, ticket, s.payerWallet));
      await tower.runOnce(); // sees the close; nothing is due
      expect(store.getChannel(session.sessionId)!.status).to.equal("closing");

      // The provider is blocklisted when the window ends: its payout is deferred, the tower's claim refused.
      await mined(s, s.blk.write.setBlocked([s.provider.account.address, true]));
      await time.increaseTo(store.getClosing(session.sessionId)!.finalizesAt + 1n);
      await tower.runOnce();
      const fee = feeOf(ether("0.7"), FEE_BPS);
      expect(store.getChannel(session.sessionId)!.status).to.equal("settled");
      expect(await s.escrow.read.claimableOf([s.blk.address, s.provider.account.address])).to.equal(ether("0.7") - fee);
      expect(errors, "the refused claim is reported, not thrown").to.have.length(1);
      expect(claimed).to.deep.equal([]);

      // Unblocked: the next poll collects it, once, with nobody running a command.
      await mined(s, s.blk.write.setBlocked([s.provider.account.address, false]));
      await tower.runOnce();
      await tower.runOnce();
      expect(claimed).to.deep.equal([ether("0.7") - fee]);
      expect(await s.escrow.read.claimableOf([s.blk.address, s.provider.account.address])).to.equal(0n);
      await expectDeltas(s, snap, { BLK: { client: ether("1.3"), provider: ether("0.7") - fee, escrow: -ether("2") + fee } });
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it("attack: the payer submits its co-signed close within the grace; the tower sends nothing and the provider pays no gas, exact balances", async () => {
    const s = await loadFixture(unsealedSystemFixture);
    const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-collect-"));
    const store = SqliteStore.open(path.join(dir, "provider.db"));
    try {
      const fromBlock = await s.publicClient.getBlockNumber();
      const session = await openSession(s, s.token.address, { deposit: ether("2") });
      // The provider's store as its node leaves it after co-signing: the channel closing, the close kept.
      const summary = { sessionId: session.sessionId, provider: session.ref.terms.provider, payer: session.ref.terms.payer, termsHash: session.ref.terms.termsHash, finalSeq: 3n, finalAmount: ether("0.3"), finalReceiptRoot: rootOf(3n), mode: "Cooperative" as const };
      const close = { summary, payerSignature: await signSettlementSummary({ account: PAYER_KEY, domain: session.domain, summary }), providerSignature: await signSettlementSummary({ account: PROVIDER_KEY, domain: session.domain, summary }) };
      await store.putChannel({ sessionId: session.sessionId, role: "provider", ref: session.ref, pricing: { version: "1", unit: "invocation", pricePerInvocation: 1n }, escrow: session.escrow.address, chainId: session.domain.chainId, deposit: session.deposit, status: "closing" });
      await store.putCooperativeClose(session.sessionId, close);
      const snap = await snapshot(s);
      const errors: unknown[] = [];
      const tower = new Watchtower({ publicClient: s.publicClient as unknown as PublicClient, wallet: s.provider as unknown as Wallet, escrow: s.escrow.address, store, fromBlock, finalize: true, defend: ["provider"], cooperativeGraceMs: 400, onError: (error) => errors.push(error) });
      await tower.runOnce();
      const settled = await closeCooperative({ wallet: s.payerWallet as unknown as Wallet, publicClient: s.publicClient as unknown as PublicClient, escrow: s.escrow.address, ref: session.ref, ...close });
      expect(settled.paidToProvider).to.equal(ether("0.3"));
      await new Promise((r) => setTimeout(r, 450));
      await tower.runOnce(); // past the grace: the chain says settled, the events say by whom
      await tower.runOnce();
      expect(store.getChannel(session.sessionId)!.status).to.equal("settled");
      expect(errors).to.deep.equal([]);
      expect(await s.publicClient.getContractEvents({ address: s.escrow.address, abi: gasEscrowAbi, eventName: "ChannelSettled", fromBlock: snap.block + 1n })).to.have.length(1);
      const latest = await s.publicClient.getBlockNumber();
      expect(await gasPaidBy(s.publicClient as unknown as PublicClient, s.provider.account.address, snap.block + 1n, latest), "the provider sent nothing").to.equal(0n);
      await expectDeltas(s, snap, { LGAS: { client: ether("1.7"), provider: ether("0.3"), escrow: -ether("2") } });
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
