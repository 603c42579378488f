/**
 * Adversarial: failed worker calls (decision 0022). A failed call is receipted with amount 0 and left out
 * of the cooperative close: a provider cannot be paid for nothing it delivered, and a payer that makes the
 * worker fail on purpose gets nothing for free. Exact balances of provider, funder, escrow, treasury and
 * the burn address on every settlement.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { keccak256, parseEther, type Address, type PublicClient } from "viem";

import { canonBytes } from "../../channel-client/core/canonical";
import { verifyFaultStatementFor } from "../../channel-client/core/fault-statement";
import { closeCooperative, openChannel } from "../../channel-client/chain/escrow";
import { McpWorker } from "../../channel-client/node/mcp-worker";
import { PayerClient, type InvocationOutcome } from "../../channel-client/node/payer-client";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { PayerSession } from "../../channel-client/node/payer-session";
import { ProviderSession } from "../../channel-client/node/provider-session";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { rejection } from "../helpers/assert";
import { escrowFixture, makeTerms } from "../helpers/fixtures";
import { BURN } from "./helpers";

const PRICE = parseEther("0.01");
const DEPOSIT = parseEther("1");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const SERVER = path.join(__dirname, "..", "..", "examples", "mcp-test-worker.js");
const FAILED = canonBytes({ error: { code: -32010, message: "The worker exited (code 7)." } });

async function channelFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing) });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
  return { ...fx, publicClient, opened };
}

type Fx = Awaited<ReturnType<typeof channelFixture>>;

/** A payer session and a provider session whose handler is the attacker's. */
function sessions(fx: Fx, handler: ProviderSession["parameters"]["handler"]) {
  const common = { domain: fx.domain, ref: fx.opened.ref, sessionId: fx.opened.sessionId, pricing, deposit: DEPOSIT };
  return {
    payer: new PayerSession({ ...common, account: fx.payer }),
    provider: new ProviderSession({ ...common, account: fx.provider, modelSnapshotId: "worker:hostile@1", handler }),
  };
}

async function balances(fx: Fx) {
  const of = (address: Address) => fx.publicClient.getBalance({ address });
  return {
    provider: await of(fx.provider.address),
    funder: await of(fx.funder.account.address),
    escrow: await of(fx.escrow.address),
    treasury: await of(fx.treasury.account.address),
    burn: await of(BURN),
  };
}

describe("adversarial: failed worker calls are receipted, never paid", function () {
  it("attack: the provider charges the full price for a call its worker failed (the payer refuses the receipt)", async () => {
    const fx = await loadFixture(channelFixture);
    // The hostile provider answers with an error yet signs a receipt charging the ticket's increment.
    const { payer, provider } = sessions(fx, async () => ({ output: FAILED, units: 1n, charged: true }));
    const next = await payer.nextTicket(canonBytes({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "crash" } }));
    const { step } = await provider.invoke(next.signed, canonBytes({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "crash" } }), next.leafCount);
    expect(step.receipt.receipt.metering.amount).to.equal(PRICE);
    const refused = await rejection(payer.acceptReceipt(step.receipt, FAILED, true));
    expect(refused.name).to.equal("ReceiptMismatchError");
    expect(refused.message).to.contain(`it charges ${PRICE} for a call that failed`);
    expect(payer.charged).to.equal(0n);
    // No co-signed close over that receipt exists: nothing has moved.
    expect(await fx.escrow.read.depositOf([fx.opened.sessionId])).to.equal(DEPOSIT);
  });

  it("attack: the provider's receipt charges more than its ticket added (the payer refuses it)", async () => {
    const fx = await loadFixture(channelFixture);
    const { payer, provider } = sessions(fx, async (input) => ({ output: input, units: 1n }));
    const first = await payer.nextTicket(canonBytes({ n: 1 }));
    const answered = await provider.invoke(first.signed, canonBytes({ n: 1 }), first.leafCount);
    // Re-sign the honest receipt with an inflated amount, as a hostile provider could.
    const { signSessionReceipt } = await import("../../channel-client/core/receipt");
    const inflated = await signSessionReceipt({ account: fx.provider, receipt: { ...answered.step.receipt.receipt, metering: { units: 1n, amount: 2n * PRICE } } });
    const refused = await rejection(payer.acceptReceipt(inflated, canonBytes({ n: 1 })));
    expect(refused.message).to.contain(`it charges ${2n * PRICE}, more than the ${PRICE} its ticket added`);
    expect(payer.charged).to.equal(0n);
  });

  describe("through the nodes and a real MCP worker", function () {
    let dir: string;
    const cleanup: Array<() => Promise<unknown>> = [];
    beforeEach(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), "ioi-worker-attack-"));
    });
    afterEach(async () => {
      while (cleanup.length > 0) await cleanup.pop()!().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    });

    it("attack: a payer crashes and hangs the worker on purpose (it gets no work and pays nothing for it; the provider is paid exactly for the work delivered)", async () => {
      const fx = await loadFixture(channelFixture);
      const worker = await McpWorker.start({ command: process.execPath, args: [SERVER], timeoutMs: 400, maxRestarts: 3 });
      const providerStore = SqliteStore.open(path.join(dir, "provider.db"));
      const node = await ProviderNode.start({ account: fx.provider, publicClient: fx.publicClient, domain: fx.domain, store: providerStore, pricing, handler: worker.handler, modelSnapshotId: "worker:mcp-test@1" });
      const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
      await payerStore.putChannel({ sessionId: fx.opened.sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: DEPOSIT, status: "open" });
      const client = await PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(fx.opened.sessionId)!, port: node.port });
      cleanup.push(async () => {
        await client.close();
        await node.stop();
        await worker.stop();
        await providerStore.close();
        await payerStore.close();
      });

      const tool = (name: string, args = {}) => ({ jsonrpc: "2.0", id: name, method: "tools/call", params: { name, arguments: args } });
      const answers: InvocationOutcome[] = [];
      for (const request of [tool("add", { a: 1, b: 2 }), tool("crash"), tool("hang"), tool("garbage"), tool("upper", { text: "ok" })]) answers.push(await client.invoke(request));
      expect(answers.map((a) => (a.error ? a.error.data?.error : "result"))).to.deep.equal(["result", "WorkerCrashedError", "WorkerTimeoutError", "WorkerOutputError", "result"]);
      // Three failures in a row did not disable the worker for anyone: it restarted each time.
      expect(answers.filter((a) => a.error).every((a) => a.result === undefined && a.charged === 0n)).to.equal(true);

      const { summary, payerSignature, providerSignature } = await client.cooperativeClose();
      expect(summary.finalSeq).to.equal(5n);
      expect(summary.finalAmount).to.equal(2n * PRICE);
      const before = await balances(fx);
      await closeCooperative({ wallet: fx.stranger, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.opened.ref, summary, payerSignature, providerSignature });
      const after = await balances(fx);
      expect(after.provider - before.provider).to.equal(2n * PRICE);
      expect(after.funder - before.funder).to.equal(DEPOSIT - 2n * PRICE);
      expect(before.escrow - after.escrow).to.equal(DEPOSIT);
      expect(after.treasury).to.equal(before.treasury);
      expect(after.burn).to.equal(before.burn);
    });

    it("a failed call comes with the provider's signed fault statement (its code, 0 compute spent), which the payer verifies and keeps; a successful call carries none (decision 0015)", async () => {
      const fx = await loadFixture(channelFixture);
      const worker = await McpWorker.start({ command: process.execPath, args: [SERVER], timeoutMs: 400, maxRestarts: 3 });
      const providerStore = SqliteStore.open(path.join(dir, "provider.db"));
      const node = await ProviderNode.start({ account: fx.provider, publicClient: fx.publicClient, domain: fx.domain, store: providerStore, pricing, handler: worker.handler, modelSnapshotId: "worker:mcp-test@1" });
      const payerDb = path.join(dir, "payer.db");
      let payerStore = SqliteStore.open(payerDb);
      await payerStore.putChannel({ sessionId: fx.opened.sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: DEPOSIT, status: "open" });
      const client = await PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(fx.opened.sessionId)!, port: node.port });
      cleanup.push(async () => {
        await client.close();
        await node.stop();
        await worker.stop();
        await providerStore.close();
        await payerStore.close();
      });

      const tool = (name: string, args = {}) => ({ jsonrpc: "2.0", id: name, method: "tools/call", params: { name, arguments: args } });
      const requests = [tool("add", { a: 1, b: 2 }), tool("crash"), tool("refuse"), tool("upper", { text: "ok" })];
      const answers: InvocationOutcome[] = [];
      for (const request of requests) answers.push(await client.invoke(request));
      expect(answers.map((a) => a.fault?.statement.code ?? null)).to.deep.equal([null, "ERR_UPSTREAM_FAILURE", "ERR_UPSTREAM_POLICY_VIOLATION", null]);
      for (const [i, answer] of answers.entries()) {
        if (!answer.fault) continue;
        // Signed by the channel's provider, for this step and the request the payer sent; nothing charged, nothing spent.
        await verifyFaultStatementFor({ signed: answer.fault, provider: fx.provider.address, receipt: answer.receipt.receipt });
        expect(answer.fault.statement).to.deep.include({ seq: BigInt(i + 1), offloadPacketHash: keccak256(canonBytes(requests[i])), computeSpent: 0n });
        expect(answer.charged).to.equal(0n);
      }
      // Durable in the payer's store, across a reopen.
      await payerStore.close();
      payerStore = SqliteStore.open(payerDb);
      expect([1n, 2n, 3n, 4n].map((seq) => payerStore.getFaultStatement(fx.opened.sessionId, seq))).to.deep.equal([undefined, answers[1]!.fault, answers[2]!.fault, undefined]);
    });
  });
});
