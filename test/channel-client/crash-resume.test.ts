/**
 * Kill-and-resume: the provider node runs as a separate process (`bin/ioi.js provider`) against the
 * embedded devnet served over JSON-RPC; the payer streams pipelined invocations from this process. Round
 * after round the provider is SIGKILLed at a seeded random moment while invocations are in flight, then
 * restarted on the same store. After every crash nothing the payer acknowledged may be missing or
 * different in the provider's store, the provider's steps have no gaps, both stores rebuild the same
 * root, and after every restart the payer takes back every step the provider stored beyond its own (the
 * payer stores a ticket only with its receipt, issue 15). In the end both sides agree on the root and a
 * cooperative close pays exactly finalSeq × PRICE.
 *
 * Reproduce a run with IOI_CRASH_SEED=<seed> (printed in the test title); IOI_CRASH_ROUNDS sets the rounds.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import hre from "hardhat";
import { parseEther, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";

import { ReceiptAccumulator, RootAccumulator } from "../../channel-client/core/accumulator";
import { closeCooperative, openChannel } from "../../channel-client/chain/escrow";
import { PayerClient, ProviderRejectedError } from "../../channel-client/node/payer-client";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { ChannelRecord, StepRecord } from "../../channel-client/store/store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { escrowFixture, makeTerms } from "../helpers/fixtures";
import { startProviderChild, type ProviderProcess } from "../helpers/provider-child";
import { mulberry32, seedFrom } from "../helpers/prng";

/** Hardhat's well-known key for account #3 (ROLE.provider). */
const PROVIDER_KEY: Hex = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";
const PRICE = parseEther("0.0001");
const DEPOSIT = parseEther("1");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const ROUNDS = Number(process.env.IOI_CRASH_ROUNDS ?? 8);
const SEED = seedFrom("IOI_CRASH_SEED");
/** A provider process that does not print its ready line within this is a failure, not a hang. */
const START_DEADLINE_MS = 30_000;

const request = (i: number) => ({ jsonrpc: "2.0", id: `invoke-${i}`, method: "tools/echo", params: { text: `call ${i}` } });

async function crashFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce: 0xc4a54n });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
  return { ...fx, publicClient, opened };
}

describe("crash and resume: the provider process is SIGKILLed mid-stream", function () {
  this.timeout(240_000);

  let rpc: EmbeddedRpc | undefined;
  let dir: string;
  const children = new Set<ChildProcess>();
  const stores: SqliteStore[] = [];
  const cleanups: Array<() => void> = [];

  before(async () => {
    rpc = await serveEmbeddedNetwork(hre);
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-crash-"));
  });

  after(async () => {
    for (const cleanup of cleanups) cleanup();
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await Promise.all([...children].map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once("exit", r)) : undefined)));
    for (const store of stores) await store.close().catch(() => undefined);
    await rpc?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function startProvider(escrow: Hex, db: string): Promise<ProviderProcess> {
    return startProviderChild({ rpcUrl: rpc!.url, escrow, db, price: PRICE, key: PROVIDER_KEY, children, startDeadlineMs: START_DEADLINE_MS });
  }

  it(`loses nothing acknowledged across ${ROUNDS} SIGKILLs of the provider process and settles exactly (seed ${SEED})`, async () => {
    const started = performance.now();
    const prng = mulberry32(SEED);
    // Mocha swallows unhandled rejections; a payer that leaves one behind would crash a real process.
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    cleanups.push(() => process.off("unhandledRejection", onUnhandled));
    const fx = await loadFixture(crashFixture);
    expect(privateKeyToAccount(PROVIDER_KEY).address).to.equal(fx.provider.address);
    const sessionId = fx.opened.sessionId;
    const providerDb = path.join(dir, "provider.db");
    const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
    stores.push(payerStore);
    const record: ChannelRecord = { sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" };
    await payerStore.putChannel(record);

    let nextId = 0;
    const log: string[] = [];

    /** The provider process is dead: compare its store with the payer's. */
    const checkStores = async (context: string) => {
      const payerSteps = payerStore.steps(sessionId);
      const accepted = payerSteps.filter((s): s is Required<StepRecord> => s.receipt !== undefined);
      // The payer accepts receipts in seq order: its acknowledged steps are seqs 1..a.
      expect(accepted.map((s) => s.seq), `payer receipts out of order ${context}`).to.deep.equal(accepted.map((_, i) => BigInt(i + 1)));
      const providerStore = SqliteStore.open(providerDb);
      let providerSteps: StepRecord[];
      try {
        providerSteps = providerStore.steps(sessionId);
        expect(providerStore.receiptCount(sessionId)).to.equal(providerSteps.length);
      } finally {
        await providerStore.close();
      }
      // No gaps: the provider's durable steps are exactly seqs 1..n, each with its receipt.
      expect(providerSteps.map((s) => s.seq), `a gap in the provider's steps ${context}`).to.deep.equal(providerSteps.map((_, i) => BigInt(i + 1)));
      expect(providerSteps.every((s) => s.receipt && s.leaf), `a provider step without receipt ${context}`).to.equal(true);
      // Nothing acknowledged is lost, and it is byte for byte what the payer holds.
      expect(providerSteps.length, `the provider lost acknowledged receipts ${context}`).to.be.at.least(accepted.length);
      for (const step of accepted) {
        const theirs = providerSteps[Number(step.seq) - 1]!;
        expect(theirs.ticket.signature, `ticket ${step.seq} ${context}`).to.equal(step.ticket.signature);
        expect(theirs.receipt!.signature, `receipt ${step.seq} ${context}`).to.equal(step.receipt.signature);
        expect(theirs.leaf, `leaf ${step.seq} ${context}`).to.equal(step.leaf);
      }
      // The provider's leaves rebuild the payer's root over the common prefix.
      const payerRoot = new RootAccumulator();
      for (const step of accepted) payerRoot.append(step.leaf);
      const providerTree = ReceiptAccumulator.fromLeaves(providerSteps.map((s) => s.leaf!));
      expect(providerTree.prefixRoot(accepted.length), `roots differ over ${accepted.length} receipts ${context}`).to.equal(payerRoot.root());
      expect(payerSteps.length, `the payer stored a ticket without its receipt ${context}`).to.equal(accepted.length);
      return { payerAccepted: accepted.length, providerStored: providerSteps.length };
    };

    /** Connects, taking back every step the provider stored beyond the payer's, and invokes once more. */
    let providerStored = 0;
    const resume = async (provider: ProviderProcess, context: string) => {
      const held = payerStore.steps(sessionId).length;
      const client = await PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(sessionId)!, port: provider.port });
      expect(client.session.seq, `the payer took back every step the provider stored ${context}`).to.equal(BigInt(providerStored));
      await client.invoke(request(nextId++));
      const steps = payerStore.steps(sessionId);
      expect(steps.filter((s) => !s.receipt).map((s) => s.seq), `tickets without receipts after the restart ${context}`).to.deep.equal([]);
      expect(client.session.seq).to.equal(BigInt(steps.length));
      return { client, resent: `${providerStored - held} taken back` };
    };

    for (let round = 1; round <= ROUNDS; round++) {
      const context = `(round ${round}, seed ${SEED})`;
      const provider = await startProvider(fx.escrow.address, providerDb);
      const { client, resent } = await resume(provider, context);

      // Stream with many invocations in flight; SIGKILL the provider at a seeded random moment.
      const inflight = prng.int(16, 64);
      const killAfter = prng.int(0, 160);
      const delayMs = prng.int(0, 25);
      let answered = 0;
      let outstanding = 0;
      let inFlightAtKill = -1;
      let triggered = false;
      const failures: Error[] = [];
      const trigger = () => {
        if (triggered) return;
        triggered = true;
        setTimeout(() => {
          inFlightAtKill = outstanding;
          provider.child.kill("SIGKILL");
        }, delayMs);
      };
      const lane = async () => {
        for (;;) {
          outstanding++;
          try {
            await client.invoke(request(nextId++));
          } catch (error) {
            failures.push(error as Error);
            return;
          } finally {
            outstanding--;
          }
          if (++answered >= killAfter) trigger();
        }
      };
      if (killAfter === 0) trigger();
      await Promise.all(Array.from({ length: inflight }, lane));
      trigger(); // should have happened; the assertion below says so if not
      const { signal } = await provider.exited;
      await client.close();

      expect(signal, `the provider process died on its own ${context}:\n${provider.stderr()}`).to.equal("SIGKILL");
      expect(inFlightAtKill, `nothing was in flight at the kill ${context}`).to.be.greaterThan(0);
      // Every lane ends on the invocation the kill caught in flight; it fails with the connection, never
      // with a refusal by the provider. The tickets stay in the payer's store and are re-sent at reconnect.
      expect(failures).to.have.length(inflight);
      for (const failure of failures) {
        expect(failure, `${context}: ${failure.message}`).not.to.be.instanceOf(ProviderRejectedError);
        expect(failure.name, `${context}: ${failure.message}`).to.equal("ConnectionClosedError");
      }
      const state = await checkStores(context);
      providerStored = state.providerStored;
      const line = `round ${round}: ${resent} at reconnect; inflight ${inflight}, kill ${delayMs} ms after ${killAfter} receipts with ${inFlightAtKill} invocations outstanding; ${answered} answered this round, ${failures.length} failed; payer accepted ${state.payerAccepted}; provider stored ${state.providerStored}`;
      log.push(line);
      if (process.env.IOI_CRASH_VERBOSE) console.log(`      ${line}`);
    }

    // Final restart: every outstanding ticket answered, roots agreed, cooperative close settles exactly.
    const provider = await startProvider(fx.escrow.address, providerDb);
    try {
      const { client, resent } = await resume(provider, "(final)");
      await client.stream({ count: 32, inflight: 16, request: (i) => request(nextId + i) });
      const { leafCount, root } = await client.commit();
      const finalSeq = client.session.seq;
      expect(leafCount).to.equal(finalSeq);
      expect(root).to.equal(client.session.accumulator.root());
      expect(client.session.cumulativeAmount).to.equal(finalSeq * PRICE);

      const { summary, payerSignature, providerSignature } = await client.cooperativeClose();
      expect(summary.finalSeq).to.equal(finalSeq);
      expect(summary.finalReceiptRoot).to.equal(root);
      const before = await fx.publicClient.getBalance({ address: fx.provider.address });
      const settled = await closeCooperative({ wallet: fx.stranger, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.opened.ref, summary, payerSignature, providerSignature });
      expect(settled.paidToProvider).to.equal(finalSeq * PRICE);
      expect(settled.refundedToFunder).to.equal(DEPOSIT - finalSeq * PRICE);
      expect((await fx.publicClient.getBalance({ address: fx.provider.address })) - before).to.equal(finalSeq * PRICE);
      await client.close();
      log.push(`final: ${resent}; finalSeq ${finalSeq}, root ${root}; settled ${settled.paidToProvider} wei to the provider, ${settled.refundedToFunder} refunded`);
    } finally {
      provider.child.kill("SIGKILL");
      await provider.exited;
    }
    const state = await checkStores("(after settlement)");
    expect(unhandled.map((r) => String((r as Error)?.message ?? r)), "unhandled promise rejections").to.deep.equal([]);
    expect(state.providerStored).to.equal(state.payerAccepted);
    log.push(`runtime ${((performance.now() - started) / 1000).toFixed(1)} s`);
    if (process.env.IOI_CRASH_VERBOSE) console.log(log.slice(-2).map((l) => `      ${l}`).join("\n"));
  });
});
