/**
 * Attacks on `ioi ui`'s actions, the page's only value-moving path: a read-only page refuses them; a page
 * with actions refuses a request without its token (a cross-origin page cannot read it) and a request that
 * names another host (DNS rebinding); with the token, close and finalize move exactly the channel's money.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import os from "node:os";
import path from "node:path";
import { parseEther, type PublicClient } from "viem";

import { gasEscrowAbi, openChannel } from "../../channel-client/chain/escrow";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { startUi } from "../../channel-client/ui/server";
import { escrowFixture, makeTerms, ROLE } from "../helpers/fixtures";

const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: parseEther("0.001") };
const DEPOSIT = parseEther("1");

async function uiFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing) });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
  return { ...fx, publicClient, opened, terms };
}

/** POST with an explicit Host header (fetch cannot forge one). */
function post(port: number, pathname: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path: pathname, method: "POST", headers }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c)).on("end", () => resolve({ status: res.statusCode!, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("attacks on the operator page's actions (issue 16)", function () {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), "ioi-ui-actions-"))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("read-only page, missing token, rebinding host: nothing moves; with the token close + finalize pay out exactly", async () => {
    const fx = await loadFixture(uiFixture);
    const { publicClient, opened } = fx;
    const escrow = fx.escrow.address;
    const store = SqliteStore.open(path.join(dir, "payer.db"));
    await store.putChannel({ sessionId: opened.sessionId, role: "payer", ref: opened.ref, pricing, escrow, chainId: fx.domain.chainId, deposit: opened.deposit, status: "open" });
    const balances = async () => ({
      escrow: await publicClient.getBalance({ address: escrow }),
      funder: await publicClient.getBalance({ address: fx.terms.funder }),
      provider: await publicClient.getBalance({ address: fx.terms.provider }),
    });
    const phase = () => publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [opened.sessionId] });
    const before = await balances();
    const url = `/api/actions/close/${opened.sessionId}`;

    const readOnly = await startUi({ store, publicClient, escrow });
    try {
      const refused = await post(readOnly.port, url, { host: `127.0.0.1:${readOnly.port}` });
      expect(refused.status).to.equal(403);
      expect(refused.body).to.include("read-only");
    } finally {
      await readOnly.close();
    }

    const ui = await startUi({ store, publicClient, escrow, actions: { wallet: fx.wallets[ROLE.payer]! } });
    try {
      const host = `127.0.0.1:${ui.port}`;
      const token = ((await (await fetch(`http://${host}/api/overview`)).json()) as { token: string }).token;
      expect(token).to.match(/^[0-9a-f]{32}$/);
      expect((await post(ui.port, url, { host })).status, "no token").to.equal(403);
      expect((await post(ui.port, url, { host, "x-ioi-token": "0".repeat(32) })).status, "wrong token").to.equal(403);
      expect((await post(ui.port, url, { host: `attacker.example:${ui.port}`, "x-ioi-token": token })).status, "rebinding host").to.equal(421);
      expect(await phase()).to.equal(1);
      expect(await balances()).to.deep.equal(before);

      const closed = await post(ui.port, url, { host, "x-ioi-token": token });
      expect(closed.status, closed.body).to.equal(200);
      expect(await phase()).to.equal(2);
      expect((await post(ui.port, `/api/actions/finalize/${opened.sessionId}`, { host, "x-ioi-token": token })).status, "too early").to.equal(409);
      await time.increase(Number(fx.terms.challengeDuration) + 1);
      const finalized = await post(ui.port, `/api/actions/finalize/${opened.sessionId}`, { host, "x-ioi-token": token });
      expect(finalized.status, finalized.body).to.equal(200);
      // No ticket was ever signed: the whole deposit goes back to the funder; the payer's wallet paid the gas.
      const after = await balances();
      expect(after.escrow - before.escrow).to.equal(-DEPOSIT);
      expect(after.funder - before.funder).to.equal(DEPOSIT);
      expect(after.provider - before.provider).to.equal(0n);
      expect(JSON.parse(finalized.body)).to.include({ paidToProvider: "0", refundedToFunder: DEPOSIT.toString() });
      // Claim: the ETH payouts went through, so the escrow owes this wallet nothing; nothing is sent, nothing moves.
      const claim = await post(ui.port, `/api/actions/claim/${opened.sessionId}`, { host, "x-ioi-token": token });
      expect(claim.status, claim.body).to.equal(409);
      expect(claim.body).to.include("Nothing to claim");
      expect(await balances()).to.deep.equal(after);
    } finally {
      await ui.close();
      await store.close();
    }
  });
});
