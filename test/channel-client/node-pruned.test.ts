/**
 * Issue 31 item 2: a channel pruned from the provider's store is never re-created by a late message. The payer
 * resuming it is refused in one sentence (the node's log line for the refused session) and the store still holds
 * no channel for it, although the channel is Open on-chain and would otherwise be bound afresh.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseEther, type PublicClient } from "viem";

import { echoHandler } from "../../channel-client/cli/channel";
import { openChannel } from "../../channel-client/chain/escrow";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { decodeMessage, encodeMessage } from "../../channel-client/node/protocol";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { connectSecure } from "../../channel-client/transport";
import { escrowFixture, makeTerms } from "../helpers/fixtures";

const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: 1_000n };

async function openedChannel() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms: makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce: 7n }), amount: parseEther("1") });
  return { ...fx, publicClient, opened };
}

describe("issue 31: a pruned channel is not re-created by a late message", function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), "ioi-pruned-node-"))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("refuses session.open for a pruned channel in one sentence and stores nothing for it", async () => {
    const fx = await loadFixture(openedChannel);
    const { sessionId, ref } = fx.opened;
    const store = SqliteStore.open(path.join(dir, "provider.db"));
    await store.putChannel({ sessionId, role: "provider", ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: parseEther("1"), status: "settled" });
    await store.deleteChannel(sessionId, { prunedAt: 1_900_000_000n, archive: path.join(dir, "archive", `${sessionId}.jsonl`) });
    const lines: string[] = [];
    const node = await ProviderNode.start({ account: fx.provider, publicClient: fx.publicClient, domain: fx.domain, store, pricing, handler: echoHandler, modelSnapshotId: "worker:echo@1", log: (line) => lines.push(line) });
    try {
      const conn = await connectSecure({ host: "127.0.0.1", port: node.port, account: fx.payer, sessionId, expectedPeer: fx.provider.address });
      const answers: unknown[] = [];
      conn.on("message", (bytes: Uint8Array) => answers.push(decodeMessage(bytes)));
      const closed = new Promise<void>((resolve) => conn.once("close", () => resolve()));
      await conn.send(encodeMessage({ type: "session.open", ref, pricing }));
      await closed;
      expect(answers, "no session.ready for a pruned channel").to.deep.equal([]);
      const refusal = lines.filter((line) => line.startsWith("refused session"));
      expect(refusal).to.deep.equal([`refused session ${sessionId}: Session ${sessionId} was settled and pruned from this store at 1900000000 (unix time, chain clock); it cannot be resumed or stored again.`]);
      expect(refusal[0]).to.not.contain(dir); // the archive's path stays with the provider
      expect(store.getChannel(sessionId)).to.equal(undefined);
      expect(store.prunedChannel(sessionId)?.prunedAt).to.equal(1_900_000_000n);
    } finally {
      await node.stop();
      await store.close();
    }
  });
});
