/**
 * Crash and restart under load: the provider node runs as a separate process (`bin/ioi.js provider`)
 * against the embedded devnet served over JSON-RPC; the payer streams from this process with 64 lanes, so
 * exactly 64 invocations are awaiting their receipts when, at a seeded random point of the stream, the
 * provider process is SIGKILLed (new invocations stop at the kill, so the 64 are the last in flight).
 *
 * After every kill (the provider's store is then final): every receipt the payer acknowledged is in the
 * provider's store, byte for byte, the provider's steps are seqs 1..n without gaps, and both stores rebuild
 * the same root over what the payer holds, and every step the provider stored beyond them carries a ticket
 * the payer signed. The payer stores a ticket only with its receipt (issue 15): it holds no unanswered
 * ticket. After every restart: the payer takes back every step the provider stored beyond its own, the two
 * stores are then identical, and a signed receipt-commit exchange shows both sides on the same root.
 * At the end a cooperative close on-chain pays exactly finalSeq × PRICE to the provider and refunds
 * DEPOSIT − finalSeq × PRICE to the funder (exact balance changes of provider, funder and escrow).
 *
 * Helper code (fixture, provider process, store checks) is copied from test/channel-client/crash-resume.test.ts.
 * Reproduce a run with IOI_CRASH_SEED=<seed> (printed in the title); IOI_CRASH_ROUNDS sets the number of
 * kills (default 10); IOI_CRASH_VERBOSE=1 prints one line per round.
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
import { recoverDigestSigner } from "../../channel-client/core/eip712";
import { paymentTicketDigest } from "../../channel-client/core/ticket";
import { PayerClient, ProviderRejectedError } from "../../channel-client/node/payer-client";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { ChannelRecord, StepRecord } from "../../channel-client/store/store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { escrowFixture, makeTerms } from "../helpers/fixtures";
import { startProviderChild, type ProviderProcess } from "../helpers/provider-child";
import { mulberry32, seedFrom } from "../helpers/prng";
import { within } from "../helpers/within";

/** Hardhat's well-known key for account #3 (ROLE.provider). */
const PROVIDER_KEY: Hex = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";
const PRICE = parseEther("0.0001");
const DEPOSIT = parseEther("1");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
/** Invocations awaiting their receipts at every kill. */
const IN_FLIGHT = 64;
const ROUNDS = Number(process.env.IOI_CRASH_ROUNDS ?? 10);
const SEED = seedFrom("IOI_CRASH_SEED");
/** A provider process that does not print its ready line within this is a failure, not a hang. */
const START_DEADLINE_MS = 30_000;
/** Any single wait on the payer side (a resume, a stream, a commit) is bounded by this. */
const STEP_DEADLINE_MS = 60_000;

const request = (i: number) => ({ jsonrpc: "2.0", id: `invoke-${i}`, method: "tools/echo", params: { text: `call ${i}` } });

async function crashLoadFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce: 0x10ad64n });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
  return { ...fx, publicClient, opened };
}


describe("crash and restart under load: 64 invocations in flight at every SIGKILL of the provider process", function () {
  this.timeout(600_000);

  let rpc: EmbeddedRpc | undefined;
  let dir: string;
  const children = new Set<ChildProcess>();
  const stores: SqliteStore[] = [];
  const cleanups: Array<() => void> = [];

  before(async () => {
    rpc = await serveEmbeddedNetwork(hre);
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-crash-load-"));
  });

  after(async () => {
    for (const cleanup of cleanups) cleanup();
    // Only the provider processes this file spawned.
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await Promise.all([...children].map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once("exit", r)) : undefined)));
    for (const store of stores) await store.close().catch(() => undefined);
    await rpc?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function startProvider(escrow: Hex, db: string): Promise<ProviderProcess> {
    return startProviderChild({ rpcUrl: rpc!.url, escrow, db, price: PRICE, key: PROVIDER_KEY, children, startDeadlineMs: START_DEADLINE_MS });
  }

  it(`loses nothing acknowledged across ${ROUNDS} SIGKILLs with exactly ${IN_FLIGHT} invocations in flight and settles exactly (seed ${SEED}, IOI_CRASH_SEED reproduces)`, async () => {
    const started = performance.now();
    const prng = mulberry32(SEED);
    // Mocha swallows unhandled rejections; a payer that leaves one behind would crash a real process.
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    cleanups.push(() => process.off("unhandledRejection", onUnhandled));
    const fx = await loadFixture(crashLoadFixture);
    expect(privateKeyToAccount(PROVIDER_KEY).address).to.equal(fx.provider.address);
    const sessionId = fx.opened.sessionId;
    const providerDb = path.join(dir, "provider.db");
    const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
    stores.push(payerStore);
    const record: ChannelRecord = { sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" };
    await payerStore.putChannel(record);

    let nextId = 0;
    const log: string[] = [];
    let kills = 0;

    /**
     * After the connection failed the payer still accepts (and stores) the receipts it had already
     * received; wait until its store stops changing before comparing it with the provider's.
     */
    const payerQuiescent = async () => {
      let last = "";
      for (let stable = 0, tries = 0; stable < 3 && tries < 200; tries++) {
        await payerStore.flush();
        const steps = payerStore.steps(sessionId);
        const now = `${steps.length}/${steps.filter((s) => s.receipt).length}`;
        stable = now === last ? stable + 1 : 0;
        last = now;
        await new Promise((r) => setTimeout(r, 50));
      }
    };

    /** The provider process is dead: compare its store with the payer's. */
    const checkStores = async (context: string) => {
      await payerQuiescent();
      const payerSteps = payerStore.steps(sessionId);
      const accepted = payerSteps.filter((s): s is Required<StepRecord> => s.receipt !== undefined);
      // The payer accepts receipts in seq order: its acknowledged steps are seqs 1..a.
      expect(accepted.map((s) => s.seq), `payer receipts out of order ${context}`).to.deep.equal(accepted.map((_, i) => BigInt(i + 1)));
      expect(payerSteps.map((s) => s.seq), `the payer's tickets are not seqs 1..n ${context}`).to.deep.equal(payerSteps.map((_, i) => BigInt(i + 1)));
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
      // Whatever the provider stored beyond that carries a ticket the payer signed (taken back at the restart).
      for (const theirs of providerSteps.slice(accepted.length)) {
        const signer = await recoverDigestSigner(paymentTicketDigest(fx.domain, theirs.ticket.ticket), theirs.ticket.signature);
        expect(signer, `the provider stored seq ${theirs.seq}, which the payer never signed ${context}`).to.equal(fx.payer.address);
      }
      // The provider's leaves rebuild the payer's root over the common prefix.
      const payerRoot = new RootAccumulator();
      for (const step of accepted) payerRoot.append(step.leaf);
      const providerTree = ReceiptAccumulator.fromLeaves(providerSteps.map((s) => s.leaf!));
      expect(providerTree.prefixRoot(accepted.length), `roots differ over ${accepted.length} receipts ${context}`).to.equal(payerRoot.root());
      expect(payerSteps.length, `the payer stored a ticket without its receipt ${context}`).to.equal(accepted.length);
      return { payerAccepted: accepted.length, providerStored: providerSteps.length };
    };

    /**
     * Connects to the restarted provider and takes back every step it stored beyond the payer's: the two
     * stores are then identical. One more invocation, then a signed commit exchange: same root.
     */
    let providerStored = 0;
    const resume = async (provider: ProviderProcess, context: string) => {
      const held = payerStore.steps(sessionId).length;
      const client = await within(PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(sessionId)!, port: provider.port, timeoutMs: 20_000 }), STEP_DEADLINE_MS, `connect ${context}`);
      expect(client.ready.lastSeq, `the restarted provider resumes from its store ${context}`).to.equal(BigInt(providerStored));
      expect(client.session.seq, `the payer took back every step the provider stored ${context}`).to.equal(BigInt(providerStored));
      const providerStore = SqliteStore.open(providerDb);
      try {
        const text = (steps: StepRecord[]) => steps.map((x) => `${x.seq}:${x.ticket.signature}:${x.receipt?.signature}:${x.leaf}`);
        expect(text(payerStore.steps(sessionId)), `the payer's steps after the take-back ${context}`).to.deep.equal(text(providerStore.steps(sessionId)));
      } finally {
        await providerStore.close();
      }
      const resent = `${providerStored - held} taken back`;
      await within(client.invoke(request(nextId++)), STEP_DEADLINE_MS, `the first invocation after the restart ${context}`);
      const steps = payerStore.steps(sessionId);
      expect(steps.filter((s) => !s.receipt).map((s) => s.seq), `tickets without receipts after the restart ${context}`).to.deep.equal([]);
      expect(client.session.seq).to.equal(BigInt(steps.length));
      const { leafCount, root } = await within(client.commit(), STEP_DEADLINE_MS, `the receipt commit ${context}`);
      expect(leafCount, `the commit covers every receipt ${context}`).to.equal(BigInt(steps.length));
      expect(root, `the payer's root ${context}`).to.equal(client.session.accumulator.root());
      return { client, resent };
    };

    for (let round = 1; round <= ROUNDS; round++) {
      const context = `(round ${round}, seed ${SEED})`;
      const provider = await startProvider(fx.escrow.address, providerDb);
      const { client, resent } = await resume(provider, context);

      // 64 lanes, each invoking again as soon as its receipt arrives: 64 outstanding at any moment between
      // macrotasks. At a seeded moment (after `killAfter` receipts, then `delayMs`) the provider is SIGKILLed
      // in the same tick in which exactly 64 are counted outstanding; no lane starts another one afterwards.
      const killAfter = prng.int(0, 400);
      const delayMs = prng.int(0, 30);
      let answered = 0;
      let answeredAfterKill = 0;
      let outstanding = 0;
      let inFlightAtKill = -1;
      let stopping = false;
      let triggered = false;
      const failures: Error[] = [];
      let trigger: () => void = () => undefined;
      const killed = new Promise<void>((resolveKilled) => {
        const kill = () => {
          if (outstanding !== IN_FLIGHT) {
            setImmediate(kill); // still filling the pipeline: try again on the next turn
            return;
          }
          inFlightAtKill = outstanding;
          stopping = true;
          provider.child.kill("SIGKILL");
          kills++;
          resolveKilled();
        };
        trigger = () => {
          if (triggered) return;
          triggered = true;
          setTimeout(kill, delayMs);
        };
      });
      const lane = async () => {
        while (!stopping) {
          outstanding++;
          try {
            await client.invoke(request(nextId++));
          } catch (error) {
            failures.push(error as Error);
            return;
          } finally {
            outstanding--;
          }
          if (stopping) answeredAfterKill++;
          else if (++answered >= killAfter) trigger();
        }
      };
      if (killAfter === 0) trigger();
      const lanes = Promise.all(Array.from({ length: IN_FLIGHT }, lane));
      await within(killed, STEP_DEADLINE_MS, `the kill ${context}`);
      await within(lanes, STEP_DEADLINE_MS, `the lanes after the kill ${context}`);
      const { signal } = await within(provider.exited, STEP_DEADLINE_MS, `the provider's exit ${context}`);
      await client.close();

      expect(signal, `the provider process died on its own ${context}:\n${provider.stderr()}`).to.equal("SIGKILL");
      expect(inFlightAtKill, `invocations in flight at the kill ${context}`).to.equal(IN_FLIGHT);
      // Each of the 64 either got its receipt before the payer saw the connection fail, or failed with the
      // connection — never with a refusal by the provider. The payer keeps no ticket of a failed one; the
      // provider may hold it, and then hands it back at the next restart.
      const payerSigned = Number(client.session.seq);
      expect(failures.length + answeredAfterKill, `the invocations in flight at the kill ${context}`).to.equal(IN_FLIGHT);
      for (const failure of failures) {
        expect(failure, `${context}: ${failure.message}`).not.to.be.instanceOf(ProviderRejectedError);
        expect(failure.name, `${context}: ${failure.message}`).to.equal("ConnectionClosedError");
      }
      const state = await checkStores(context);
      expect(payerSigned - state.payerAccepted, `tickets signed without a receipt after the kill ${context}`).to.be.at.most(IN_FLIGHT);
      const lostInFlight = payerSigned - state.providerStored;
      providerStored = state.providerStored;
      const line = `round ${round}: ${resent} at reconnect; kill ${delayMs} ms after ${killAfter} receipts with ${inFlightAtKill} in flight (${answeredAfterKill} answered after the kill, ${failures.length} failed); ${answered} answered before; payer signed ${payerSigned}, accepted ${state.payerAccepted}; provider stored ${state.providerStored} (${lostInFlight} in-flight tickets never processed, ${state.providerStored - state.payerAccepted} processed but unacknowledged)`;
      log.push(line);
      if (process.env.IOI_CRASH_VERBOSE) console.log(`      ${line}`);
    }

    // Final restart: every outstanding ticket answered, roots agreed, cooperative close settles exactly.
    const provider = await startProvider(fx.escrow.address, providerDb);
    try {
      const { client, resent } = await resume(provider, "(final)");
      await within(client.stream({ count: IN_FLIGHT, inflight: IN_FLIGHT, request: (i) => request(nextId + i) }), STEP_DEADLINE_MS, "the final stream");
      nextId += IN_FLIGHT;
      const { leafCount, root } = await within(client.commit(), STEP_DEADLINE_MS, "the final commit");
      const finalSeq = client.session.seq;
      expect(leafCount).to.equal(finalSeq);
      expect(root).to.equal(client.session.accumulator.root());
      expect(client.session.cumulativeAmount, "every seq paid exactly one price").to.equal(finalSeq * PRICE);

      const { summary, payerSignature, providerSignature } = await within(client.cooperativeClose(), STEP_DEADLINE_MS, "the cooperative close");
      expect(summary.finalSeq).to.equal(finalSeq);
      expect(summary.finalAmount).to.equal(finalSeq * PRICE);
      expect(summary.finalReceiptRoot).to.equal(root);
      const balances = async () => ({
        provider: await fx.publicClient.getBalance({ address: fx.provider.address }),
        funder: await fx.publicClient.getBalance({ address: fx.funder.account.address }),
        escrow: await fx.publicClient.getBalance({ address: fx.escrow.address }),
      });
      const before = await balances();
      // Sent by a third party, so that the provider's and the funder's balances change only by the settlement.
      const settled = await closeCooperative({ wallet: fx.stranger, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.opened.ref, summary, payerSignature, providerSignature });
      const after = await balances();
      expect(settled.fee, "the routing fee of this escrow is 0").to.equal(0n);
      expect(settled.paidToProvider).to.equal(finalSeq * PRICE);
      expect(settled.refundedToFunder).to.equal(DEPOSIT - finalSeq * PRICE);
      expect(settled.receiptRoot).to.equal(root);
      expect(after.provider - before.provider, "the provider's balance").to.equal(finalSeq * PRICE);
      expect(after.funder - before.funder, "the funder's balance").to.equal(DEPOSIT - finalSeq * PRICE);
      expect(before.escrow - after.escrow, "the escrow paid out exactly the deposit").to.equal(DEPOSIT);
      await client.close();
      log.push(`final: ${resent}; finalSeq ${finalSeq}, root ${root}; settled ${settled.paidToProvider} wei to the provider, ${settled.refundedToFunder} refunded`);
    } finally {
      provider.child.kill("SIGKILL");
      await provider.exited;
    }
    const state = await checkStores("(after settlement)");
    expect(kills).to.equal(ROUNDS);
    expect(unhandled.map((r) => String((r as Error)?.message ?? r)), "unhandled promise rejections").to.deep.equal([]);
    expect(state.providerStored).to.equal(state.payerAccepted);
    log.push(`runtime ${((performance.now() - started) / 1000).toFixed(1)} s, ${kills} kills`);
    if (process.env.IOI_CRASH_VERBOSE) console.log(log.slice(-2).map((l) => `      ${l}`).join("\n"));
  });
});
