/**
 * Payer and provider nodes over the sealed local socket, on the embedded devnet: the hot loop, every
 * ticket rejection rule, garbage from a peer, a provider restart, and settlement with the agreed root.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { keccak256, parseEther, stringToBytes, zeroHash, type Hex, type LocalAccount, type PublicClient } from "viem";

import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { canon, canonBytes } from "../../channel-client/core/canonical";
import { echoHandler } from "../../channel-client/cli/channel";
import { closeCooperative, openChannel } from "../../channel-client/chain/escrow";
import { PayerClient, ProviderRejectedError } from "../../channel-client/node/payer-client";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { decodeMessage, encodeMessage, type NodeMessage } from "../../channel-client/node/protocol";
import type { ActionInvokePacket } from "../../channel-client/core/packets";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { ChannelRecord } from "../../channel-client/store/store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { signPaymentTicket, type PaymentTicket } from "../../channel-client/core/ticket";
import { connectSecure, type SecureConnection } from "../../channel-client/transport";
import { escrowFixture, hardhatAccount, makeTerms, ROLE } from "../helpers/fixtures";

const PRICE = parseEther("0.001");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const request = (i: number) => ({ jsonrpc: "2.0", id: `invoke-${i}`, method: "tools/echo", params: { text: `call ${i}` } });

async function nodesFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing) });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: parseEther("1") });
  return { ...fx, publicClient, opened };
}

describe("payer and provider nodes over the sealed socket", function () {
  let dir: string;
  const cleanup: Array<() => Promise<unknown>> = [];

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-nodes-"));
  });
  afterEach(async () => {
    while (cleanup.length > 0) await cleanup.pop()!().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  async function startProvider(fx: Awaited<ReturnType<typeof nodesFixture>>, file = "provider.db") {
    const store = SqliteStore.open(path.join(dir, file));
    const node = await ProviderNode.start({ account: fx.provider, publicClient: fx.publicClient, domain: fx.domain, store, pricing, handler: echoHandler, modelSnapshotId: "worker:echo@1" });
    const stop = async () => {
      await node.stop();
      await store.close();
    };
    cleanup.push(stop);
    return { node, store, stop };
  }

  function payerRecord(fx: Awaited<ReturnType<typeof nodesFixture>>): ChannelRecord {
    return { sessionId: fx.opened.sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" };
  }

  async function startPayer(fx: Awaited<ReturnType<typeof nodesFixture>>, port: number, file = "payer.db") {
    const store = SqliteStore.open(path.join(dir, file));
    if (!store.getChannel(fx.opened.sessionId)) await store.putChannel(payerRecord(fx));
    const client = await PayerClient.connect({ account: fx.payer, domain: fx.domain, store, channel: store.getChannel(fx.opened.sessionId)!, port });
    cleanup.push(async () => {
      await client.close();
      await store.close();
    });
    return { client, store };
  }

  it("streams pipelined paid invocations, agrees on the root, and settles cooperatively", async () => {
    const fx = await loadFixture(nodesFixture);
    const provider = await startProvider(fx);
    const { client } = await startPayer(fx, provider.node.port);
    const latencies = await client.stream({ count: 120, inflight: 8, request });
    expect(latencies).to.have.length(120);
    const { leafCount, root } = await client.commit();
    expect(leafCount).to.equal(120n);
    expect(provider.store.receiptCount(fx.opened.sessionId)).to.equal(120);
    expect(provider.store.latestTicket(fx.opened.sessionId)!.ticket.cumulativeAmount).to.equal(120n * PRICE);

    const { summary, payerSignature, providerSignature } = await client.cooperativeClose();
    expect(summary.finalReceiptRoot).to.equal(root);
    const before = await fx.publicClient.getBalance({ address: fx.provider.address });
    const settled = await closeCooperative({ wallet: fx.stranger, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.opened.ref, summary, payerSignature, providerSignature });
    expect(settled.paidToProvider).to.equal(120n * PRICE);
    expect(settled.refundedToFunder).to.equal(parseEther("1") - 120n * PRICE);
    expect((await fx.publicClient.getBalance({ address: fx.provider.address })) - before).to.equal(120n * PRICE);
  });

  it("exchanges signed receipt commits mid-stream every N receipts without draining the pipeline (issue 12)", async () => {
    const fx = await loadFixture(nodesFixture);
    const provider = await startProvider(fx);
    const { client, store } = await startPayer(fx, provider.node.port);
    await client.stream({ count: 60, inflight: 8, request, commitEvery: 10 });
    // No final commit was asked for: what both stores hold came from the periodic ones.
    const theirs = provider.store.latestCommit(fx.opened.sessionId, "provider")!;
    const ours = store.latestCommit(fx.opened.sessionId, "provider")!;
    expect(ours).to.deep.equal(theirs);
    expect(theirs.commit.leafCount >= 40n && theirs.commit.leafCount <= 60n, `a recent commit (${theirs.commit.leafCount})`).to.equal(true);
    const history = ReceiptAccumulator.fromLeaves(provider.store.leaves(fx.opened.sessionId));
    expect(theirs.commit.root).to.equal(history.prefixRoot(Number(theirs.commit.leafCount)));
    expect(store.latestCommit(fx.opened.sessionId, "payer")!.commit).to.deep.equal(theirs.commit);
    // The session goes on afterwards, and the final commit covers everything.
    await client.invoke(request(99));
    expect((await client.commit()).leafCount).to.equal(61n);
  });

  it("returns the worker's result and a receipt bound to the request", async () => {
    const fx = await loadFixture(nodesFixture);
    const provider = await startProvider(fx);
    const { client, store } = await startPayer(fx, provider.node.port);
    const outcome = await client.invoke(request(7));
    expect(outcome.result).to.deep.equal((await echoHandler(request(7))).result);
    const [step] = store.steps(fx.opened.sessionId);
    expect(step!.receipt!.receipt.offloadPacketHash).to.equal(keccak256(canonBytes(request(7))));
    expect(step!.receipt!.receipt.outputHash).to.equal(keccak256(canonBytes(outcome.result)));
    expect(step!.receipt!.receipt.policyHash).to.equal(fx.opened.ref.terms.policyHash);
  });

  describe("ticket rejection rules (typed, and the connection stays usable)", () => {
    /** A raw sealed connection bound to the session, to send hand-made tickets. */
    async function rawSession(fx: Awaited<ReturnType<typeof nodesFixture>>, port: number) {
      const connection = await connectSecure({ host: "127.0.0.1", port, account: fx.payer, sessionId: fx.opened.sessionId, expectedPeer: fx.provider.address });
      cleanup.push(() => connection.close());
      const inbox: NodeMessage[] = [];
      const waiting: Array<(m: NodeMessage) => void> = [];
      connection.on("message", (bytes) => {
        const message = decodeMessage(bytes);
        const w = waiting.shift();
        if (w) w(message);
        else inbox.push(message);
      });
      const next = () => new Promise<NodeMessage>((resolve) => (inbox.length > 0 ? resolve(inbox.shift()!) : waiting.push(resolve)));
      await connection.send(encodeMessage({ type: "session.open", ref: fx.opened.ref, pricing }));
      expect((await next()) as { type: string }).to.include({ type: "session.ready" });
      return { connection, next };
    }

    async function invokeWith(connection: SecureConnection, fx: Awaited<ReturnType<typeof nodesFixture>>, ticket: Partial<PaymentTicket>, signer: LocalAccount = fx.payer, sessionId: Hex = fx.opened.sessionId) {
      const full: PaymentTicket = { sessionId, provider: fx.provider.address, termsHash: fx.opened.ref.terms.termsHash, seq: 1n, cumulativeAmount: PRICE, receiptRoot: zeroHash, ...ticket };
      const signed = await signPaymentTicket({ account: signer, domain: fx.domain, ticket: full });
      const packet: ActionInvokePacket = { pkt_version: "1", packet_type: "PKT_ACTION_INVOKE", issued_at: "2026-11-21T00:00:00Z", session_id: sessionId, payload: { mcp: request(1), ticket: signed } };
      await connection.send(encodeMessage(packet));
    }

    const cases: Array<[string, (fx: Awaited<ReturnType<typeof nodesFixture>>) => Partial<PaymentTicket> & { signer?: LocalAccount }, string]> = [
      ["signed by someone other than the payer", () => ({ signer: hardhatAccount(ROLE.stranger) }), "InvalidSignatureError"],
      ["paying another provider", () => ({ provider: hardhatAccount(ROLE.stranger).address }), "BindingMismatchError"],
      ["binding other terms", () => ({ termsHash: keccak256(stringToBytes("other terms")) }), "BindingMismatchError"],
      ["with seq 0", () => ({ seq: 0n }), "TicketNotNewerError"],
      ["paying less than the price", () => ({ cumulativeAmount: PRICE - 1n }), "TicketUnderpaidError"],
      ["authorising more than the deposit", () => ({ cumulativeAmount: parseEther("2") }), "DepositExceededError"],
      ["committing a root the provider never produced", () => ({ receiptRoot: keccak256(stringToBytes("fake root")) }), "BindingMismatchError"],
    ];
    for (const [name, make, errorName] of cases) {
      it(`rejects a ticket ${name} with ${errorName}`, async () => {
        const fx = await loadFixture(nodesFixture);
        const provider = await startProvider(fx);
        const { connection, next } = await rawSession(fx, provider.node.port);
        const { signer, ...ticket } = make(fx);
        await invokeWith(connection, fx, ticket, signer);
        const answer = (await next()) as { type: string; error: string };
        expect(answer.type).to.equal("reject");
        expect(answer.error).to.equal(errorName);
        // Still usable: a correct ticket is served on the same connection.
        await invokeWith(connection, fx, {});
        expect(((await next()) as { packet_type?: string }).packet_type).to.equal("PKT_ACTION_RESULT");
        expect(provider.store.receiptCount(fx.opened.sessionId)).to.equal(1);
      });
    }

    it("rejects a replayed seq with different content, and re-answers an identical replay from the store", async () => {
      const fx = await loadFixture(nodesFixture);
      const provider = await startProvider(fx);
      const { connection, next } = await rawSession(fx, provider.node.port);
      await invokeWith(connection, fx, {});
      const first = (await next()) as { packet_type: string; payload: { receipt: { signature: Hex } } };
      expect(first.packet_type).to.equal("PKT_ACTION_RESULT");
      await invokeWith(connection, fx, { cumulativeAmount: 2n * PRICE });
      expect(((await next()) as { error: string }).error).to.equal("TicketNotNewerError");
      await invokeWith(connection, fx, {});
      const replay = (await next()) as { packet_type: string; payload: { receipt: { signature: Hex } } };
      expect(replay.payload.receipt.signature).to.equal(first.payload.receipt.signature);
      expect(provider.store.receiptCount(fx.opened.sessionId)).to.equal(1);
    });

    it("disconnects a peer that sends garbage and keeps serving others", async () => {
      const fx = await loadFixture(nodesFixture);
      const provider = await startProvider(fx);
      const { connection } = await rawSession(fx, provider.node.port);
      const closed = new Promise((resolve) => connection.once("close", resolve));
      await connection.send(new TextEncoder().encode('{"packet_type":"PKT_ACTION_INVOKE","amount":1e999'));
      await closed;
      const { client } = await startPayer(fx, provider.node.port);
      await client.invoke(request(1));
      expect(provider.store.receiptCount(fx.opened.sessionId)).to.equal(1);
    });
  });

  it("resumes after the provider restarts: nothing acknowledged is lost and the roots agree", async () => {
    const fx = await loadFixture(nodesFixture);
    const first = await startProvider(fx);
    const payer = await startPayer(fx, first.node.port);
    await payer.client.stream({ count: 30, inflight: 4, request });
    await payer.client.close();
    await first.stop();
    cleanup.pop();

    const second = await startProvider(fx);
    const client = await PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payer.store, channel: payer.store.getChannel(fx.opened.sessionId)!, port: second.node.port });
    cleanup.push(() => client.close());
    expect(client.ready.lastSeq).to.equal(30n);
    await client.stream({ count: 20, inflight: 4, request: (i) => request(100 + i) });
    const { leafCount, root } = await client.commit();
    expect(leafCount).to.equal(50n);
    expect(second.store.leaves(fx.opened.sessionId)).to.have.length(50);
    expect(root).to.equal(client.session.accumulator.root());
  });

  it("takes back from the provider the tickets it sent but lost before they were durable, pays each exactly once (issue 15)", async () => {
    const fx = await loadFixture(nodesFixture);
    const provider = await startProvider(fx);
    const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
    cleanup.push(() => payerStore.close());
    await payerStore.putChannel(payerRecord(fx));
    const channel = payerStore.getChannel(fx.opened.sessionId)!;
    const first = await PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel, port: provider.node.port });
    await first.stream({ count: 10, inflight: 4, request });
    await first.close();

    // The payer's disk now loses every write (a crash before they were durable): tickets 11–16 still leave,
    // since the payer no longer waits on its disk, and the provider answers and stores them.
    const lost = new Proxy(payerStore, {
      get(target, property) {
        if (property === "putTicket" || property === "putStep") {
          return () => new Promise<void>((_, reject) => setTimeout(() => reject(new Error("disk lost")), 300));
        }
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const crashing = await PayerClient.connect({ account: fx.payer, domain: fx.domain, store: lost, channel, port: provider.node.port });
    const outcomes = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => crashing.invoke(request(10 + i))));
    expect(outcomes.map((o) => o.status)).to.deep.equal(Array(6).fill("rejected")); // nothing was acknowledged
    await crashing.close();
    expect(payerStore.steps(fx.opened.sessionId)).to.have.length(10);
    expect(provider.store.receiptCount(fx.opened.sessionId)).to.equal(16);

    // Restarted on what the disk kept: the provider reports seq 16, the payer takes 11–16 back and goes on.
    const client = await PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel, port: provider.node.port });
    cleanup.push(() => client.close());
    expect(client.ready.lastSeq).to.equal(16n);
    expect(client.session.seq).to.equal(16n);
    const texts = (store: SqliteStore) => store.steps(fx.opened.sessionId).map((step) => canon({ seq: step.seq.toString(), ticket: step.ticket.signature, receipt: step.receipt?.signature ?? null, leaf: step.leaf ?? null }));
    expect(texts(payerStore)).to.deep.equal(texts(provider.store));
    await client.stream({ count: 5, inflight: 4, request: (i) => request(100 + i) });
    const { leafCount, root } = await client.commit();
    expect(leafCount).to.equal(21n);
    expect(root).to.equal(ReceiptAccumulator.fromLeaves(provider.store.leaves(fx.opened.sessionId)).root());
    expect(texts(payerStore)).to.deep.equal(texts(provider.store));

    const { summary, payerSignature, providerSignature } = await client.cooperativeClose();
    const before = await fx.publicClient.getBalance({ address: fx.provider.address });
    const settled = await closeCooperative({ wallet: fx.stranger, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.opened.ref, summary, payerSignature, providerSignature });
    expect(settled.paidToProvider).to.equal(21n * PRICE);
    expect(settled.refundedToFunder).to.equal(parseEther("1") - 21n * PRICE);
    expect((await fx.publicClient.getBalance({ address: fx.provider.address })) - before).to.equal(21n * PRICE);
  });

  it("surfaces a refusal as a typed ProviderRejectedError and keeps the session usable", async () => {
    const fx = await loadFixture(nodesFixture);
    const provider = await startProvider(fx);
    const { client } = await startPayer(fx, provider.node.port);
    // A payer that believes in a lower price signs a ticket the provider must refuse.
    client.session.parameters.pricing = { ...pricing, pricePerInvocation: PRICE - 1n };
    const error = (await client.invoke(request(1)).then(() => undefined, (e: unknown) => e)) as ProviderRejectedError;
    expect(error.name).to.equal("ProviderRejectedError");
    expect(error.error).to.equal("TicketUnderpaidError");
    client.session.parameters.pricing = pricing;
    await client.invoke(request(2));
    expect(provider.store.receiptCount(fx.opened.sessionId)).to.equal(1);
  });
});
