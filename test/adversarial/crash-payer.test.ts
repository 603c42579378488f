/**
 * Crash and restart of the payer: the payer runs as a separate process (`test/helpers/payer-child-main.ts`)
 * streaming with 64 invocations in flight to a provider node in this process, and is SIGKILLed at a seeded
 * random moment, round after round. The payer no longer waits on its own disk before a ticket leaves and
 * stores a ticket only with its receipt (issue 15), so a killed payer may have lost tickets the provider
 * answered; each restarted payer takes them back from the provider (decision 0009).
 *
 * After every kill: the payer's store holds seqs 1..a, each with its receipt and no unanswered ticket; the
 * provider's holds 1..m without gaps, m ≥ a, byte for byte the same over 1..a, and every step past a carries a
 * ticket the payer signed. At the end a payer in this process takes back what is left — the two stores are
 * then identical — streams 64 more, and a cooperative close pays exactly finalSeq × PRICE to the provider
 * and refunds DEPOSIT − finalSeq × PRICE to the funder (exact balance changes of provider, funder, escrow).
 *
 * Reproduce a run with IOI_CRASH_SEED=<seed> (printed in the title); IOI_CRASH_ROUNDS sets the kills (default 6).
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseEther, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";

import { echoHandler } from "../../channel-client/cli/channel";
import { closeCooperative, openChannel } from "../../channel-client/chain/escrow";
import { recoverDigestSigner } from "../../channel-client/core/eip712";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { paymentTicketDigest } from "../../channel-client/core/ticket";
import { PayerClient } from "../../channel-client/node/payer-client";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { StepRecord } from "../../channel-client/store/store";
import { escrowFixture, makeTerms } from "../helpers/fixtures";
import { mulberry32, seedFrom } from "../helpers/prng";
import { within as withinMs } from "../helpers/within";

/** Hardhat's well-known key for account #2 (ROLE.payer). */
const PAYER_KEY: Hex = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
const PRICE = parseEther("0.0001");
const DEPOSIT = parseEther("1");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const IN_FLIGHT = 64;
const ROUNDS = Number(process.env.IOI_CRASH_ROUNDS ?? 6);
const SEED = seedFrom("IOI_CRASH_SEED");
/** Any single wait (a child's start, a kill, the provider settling) is bounded by this. */
const DEADLINE_MS = 60_000;
const ROOT = path.resolve(__dirname, "../..");

async function crashPayerFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce: 0xdeadn });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
  return { ...fx, publicClient, opened };
}

const within = <T>(promise: Promise<T>, what: string) => withinMs(promise, DEADLINE_MS, what);

const stepText = (steps: StepRecord[]) => steps.map((s) => `${s.seq}:${s.ticket.signature}:${s.receipt?.signature}:${s.leaf}`);

describe("crash and restart of the payer: SIGKILLed with 64 invocations in flight (issue 15)", function () {
  this.timeout(300_000);
  let dir: string;
  const children = new Set<ChildProcess>();
  const cleanups: Array<() => Promise<unknown>> = [];

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-crash-payer-"));
  });
  afterEach(async () => {
    for (const child of children) child.kill("SIGKILL");
    while (cleanups.length > 0) await cleanups.pop()!().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it(`loses nothing acknowledged across ${ROUNDS} SIGKILLs of the payer process, takes back what it lost, and settles exactly (seed ${SEED})`, async () => {
    const prng = mulberry32(SEED);
    const fx = await loadFixture(crashPayerFixture);
    expect(privateKeyToAccount(PAYER_KEY).address).to.equal(fx.payer.address);
    const sessionId = fx.opened.sessionId;
    const providerStore = SqliteStore.open(path.join(dir, "provider.db"));
    const node = await ProviderNode.start({ account: fx.provider, publicClient: fx.publicClient, domain: fx.domain, store: providerStore, pricing, handler: echoHandler, modelSnapshotId: "worker:echo@1" });
    cleanups.push(async () => {
      await node.stop();
      await providerStore.close();
    });
    const payerDb = path.join(dir, "payer.db");
    const seed = SqliteStore.open(payerDb);
    await seed.putChannel({ sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" });
    await seed.close();

    /** Waits until the provider's store stops changing: the killed payer's last tickets are all handled. */
    const providerQuiescent = async () => {
      let last = -1;
      for (let stable = 0; stable < 4; ) {
        await providerStore.flush();
        const now = providerStore.steps(sessionId).length;
        stable = now === last ? stable + 1 : 0;
        last = now;
        await new Promise((r) => setTimeout(r, 50));
      }
    };

    const log: string[] = [];
    let firstId = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      const context = `(round ${round}, seed ${SEED})`;
      const killAfter = prng.int(0, 600);
      const delayMs = prng.int(0, 20);
      const config = { db: payerDb, sessionId, chainId: fx.domain.chainId, escrow: fx.escrow.address, port: node.port, key: PAYER_KEY, count: 5_000, inflight: IN_FLIGHT, firstId };
      firstId += 5_000;
      const child = spawn(process.execPath, ["-e", `require("ts-node").register({ transpileOnly: true, project: ${JSON.stringify(path.join(ROOT, "tsconfig.json"))} }); require(${JSON.stringify(path.join(ROOT, "test/helpers/payer-child-main.ts"))});`], {
        cwd: ROOT,
        env: { ...process.env, IOI_PAYER_CHILD: JSON.stringify(config) },
        stdio: ["ignore", "pipe", "pipe"],
      });
      children.add(child);
      let stderr = "";
      child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => (children.delete(child), resolve(signal))));
      let durable = 0;
      let tookBackTo = -1n;
      await within(
        new Promise<void>((resolve, reject) => {
          let partial = "";
          child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
            const lines = (partial + chunk).split("\n");
            partial = lines.pop()!;
            for (const line of lines) {
              const event = JSON.parse(line) as { connected?: string; durable?: number };
              if (event.connected !== undefined) tookBackTo = BigInt(event.connected);
              if (event.durable !== undefined) durable = event.durable;
              if (durable >= killAfter && tookBackTo >= 0n) resolve();
            }
          });
          void exited.then(() => reject(new Error(`the payer process exited before the kill ${context}:\n${stderr}`)));
        }),
        `the payer's stream ${context}`,
      );
      await new Promise((r) => setTimeout(r, delayMs));
      child.kill("SIGKILL");
      expect(await within(exited, `the payer's exit ${context}`), `the payer process died on its own ${context}:\n${stderr}`).to.equal("SIGKILL");
      await within(providerQuiescent(), `the provider settling ${context}`);

      const payerStore = SqliteStore.open(payerDb);
      try {
        const payerSteps = payerStore.steps(sessionId);
        const providerSteps = providerStore.steps(sessionId);
        expect(payerSteps.map((s) => s.seq), `the payer's steps are not seqs 1..a ${context}`).to.deep.equal(payerSteps.map((_, i) => BigInt(i + 1)));
        expect(payerSteps.every((s) => s.receipt && s.leaf), `the payer stored a ticket without its receipt ${context}`).to.equal(true);
        expect(providerSteps.map((s) => s.seq), `a gap in the provider's steps ${context}`).to.deep.equal(providerSteps.map((_, i) => BigInt(i + 1)));
        expect(providerSteps.length, `the provider lost a step the payer holds ${context}`).to.be.at.least(payerSteps.length);
        expect(stepText(providerSteps.slice(0, payerSteps.length)), `the stores differ over the payer's steps ${context}`).to.deep.equal(stepText(payerSteps));
        for (const theirs of providerSteps.slice(payerSteps.length)) {
          const signer = await recoverDigestSigner(paymentTicketDigest(fx.domain, theirs.ticket.ticket), theirs.ticket.signature);
          expect(signer, `the provider holds seq ${theirs.seq}, which the payer never signed ${context}`).to.equal(fx.payer.address);
        }
        log.push(`round ${round}: connected at seq ${tookBackTo}; killed ${delayMs} ms after ${durable} durable receipts (asked ${killAfter}); payer stored ${payerSteps.length}, provider ${providerSteps.length} (${providerSteps.length - payerSteps.length} to take back)`);
      } finally {
        await payerStore.close();
      }
    }

    // A payer in this process takes back what the last kill left, and the channel settles exactly.
    const payerStore = SqliteStore.open(payerDb);
    cleanups.push(() => payerStore.close());
    const client = await within(PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(sessionId)!, port: node.port }), "the final connect");
    expect(stepText(payerStore.steps(sessionId)), "the stores after the final take-back").to.deep.equal(stepText(providerStore.steps(sessionId)));
    await within(client.stream({ count: IN_FLIGHT, inflight: IN_FLIGHT, request: (i) => ({ jsonrpc: "2.0", id: `final-${i}`, method: "tools/echo", params: { i } }) }), "the final stream");
    const { leafCount, root } = await within(client.commit(), "the final commit");
    const finalSeq = client.session.seq;
    expect(leafCount).to.equal(finalSeq);
    expect(client.session.cumulativeAmount, "every seq paid exactly one price").to.equal(finalSeq * PRICE);
    const { summary, payerSignature, providerSignature } = await within(client.cooperativeClose(), "the cooperative close");
    expect(summary.finalReceiptRoot).to.equal(root);
    const balances = async () => ({
      provider: await fx.publicClient.getBalance({ address: fx.provider.address }),
      funder: await fx.publicClient.getBalance({ address: fx.funder.account.address }),
      escrow: await fx.publicClient.getBalance({ address: fx.escrow.address }),
    });
    const before = await balances();
    const settled = await closeCooperative({ wallet: fx.stranger, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.opened.ref, summary, payerSignature, providerSignature });
    const after = await balances();
    expect(settled.paidToProvider).to.equal(finalSeq * PRICE);
    expect(after.provider - before.provider, "the provider's balance").to.equal(finalSeq * PRICE);
    expect(after.funder - before.funder, "the funder's balance").to.equal(DEPOSIT - finalSeq * PRICE);
    expect(before.escrow - after.escrow, "the escrow paid out exactly the deposit").to.equal(DEPOSIT);
    await client.close();
    if (process.env.IOI_CRASH_VERBOSE) console.log(`${log.map((l) => `      ${l}`).join("\n")}\n      final: seq ${finalSeq}, settled ${settled.paidToProvider} wei`);
  });
});
