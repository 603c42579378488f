/**
 * A fleet process holds only the channels it serves (issue 31 gaps, decision 0036). A provider node over a
 * PostgreSQL store in fleet mode serves N payers; when each payer disconnects, its channel leaves the node's
 * memory (the bound session) and the store's (rows, record, fencing epoch, write queue) once its work is
 * answered. Nothing is lost: a payer that comes back is served from the database, from the seq it reached.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { parseEther, type PublicClient } from "viem";

import { openChannel } from "../../channel-client/chain/escrow";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { echoHandler } from "../../channel-client/node/echo-worker";
import { PayerClient } from "../../channel-client/node/payer-client";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { PgStore } from "../../channel-client/store/pg-store";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { escrowFixture, makeTerms } from "../helpers/fixtures";
import { sharedPostgres } from "../helpers/postgres";

const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: parseEther("0.001") };
const N = 4;
const request = (i: number) => ({ jsonrpc: "2.0", id: `call-${i}`, method: "tools/echo", params: { text: `call ${i}` } });

async function fixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const opened = [];
  for (let i = 0; i < N; i++) {
    opened.push(await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms: makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce: 0xf1ee70n + BigInt(i) }), amount: parseEther("1") }));
  }
  return { ...fx, publicClient, opened };
}

async function eventually(check: () => boolean, what: string, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("a fleet process forgets the channels it no longer serves (issue 31)", function () {
  this.timeout(120_000);

  it(`served ${N} channels, their payers left: the node and its store hold none; a payer that comes back resumes from the database`, async () => {
    const fx = await loadFixture(fixture);
    const url = await (await sharedPostgres()).createDatabase();
    const store = await PgStore.open(url, { mode: "fleet", poolSize: 4 });
    const node = await ProviderNode.start({ account: fx.provider, publicClient: fx.publicClient, domain: fx.domain, store, ownership: store, pricing, handler: echoHandler, modelSnapshotId: "worker:echo-keccak@1" });
    const payerStores = fx.opened.map(() => SqliteStore.open(":memory:"));
    try {
      const connect = (i: number) => {
        const payerStore = payerStores[i]!;
        return PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(fx.opened[i]!.sessionId)!, port: node.port, timeoutMs: 20_000 });
      };
      for (const [i, opened] of fx.opened.entries()) {
        await payerStores[i]!.putChannel({ sessionId: opened.sessionId, role: "payer", ref: opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: opened.deposit, status: "open" });
      }
      const clients = [];
      for (let i = 0; i < N; i++) {
        const client = await connect(i);
        for (let k = 0; k < 3; k++) await client.invoke(request(k));
        clients.push(client);
      }
      expect(node.held.sessions).to.equal(N);
      expect(store.memory).to.deep.include({ held: N, epochs: N });
      for (const client of clients) await client.close();
      await eventually(() => node.held.sessions === 0 && store.memory.held === 0, "the released channels to leave memory");
      expect(node.held).to.deep.equal({ sessions: 0, phases: 0 });
      expect(store.memory).to.deep.equal({ held: 0, records: 0, epochs: 0, queues: 0, pending: 0 });

      // Released is not forgotten: the first payer comes back and carries on from seq 3.
      const back = await connect(0);
      expect(back.session.seq).to.equal(3n);
      const outcome = await back.invoke(request(3));
      expect(outcome.seq).to.equal(4n);
      expect(store.steps(fx.opened[0]!.sessionId).map((s) => s.seq)).to.deep.equal([1n, 2n, 3n, 4n]);
      await back.close();
      await eventually(() => store.memory.held === 0, "the channel to leave memory again");
    } finally {
      await node.stop();
      await store.close();
      for (const s of payerStores) await s.close();
    }
  });
});
