/**
 * `ioi open` and `ioi close` over a provider fleet (issue 31 gaps, decision 0036): `--peer A,B` as with `ioi stream`.
 *
 * Two `ioi provider --db postgres://…` processes over one PostgreSQL, and a first endpoint where nothing listens.
 * `ioi open --peer DEAD,A,B` asks the first endpoint that answers for the signed terms, funds, and stores the list;
 * `ioi stream` (no --peer) resumes through the stored list. Then the attack on the close: the payer's close
 * proposal reaches A, A co-signs it and stores the co-signature, and the answer never reaches the payer (A is
 * SIGKILLed). `ioi close` (stored list DEAD,A,B) moves past the dead endpoints and sends B the very same proposal:
 * B answers with the co-signature A stored instead of refusing a second close, and the channel settles once, for
 * exactly what was receipted — the provider, the payer (each with the gas of its own transactions) and the escrow
 * to the wei. Either side may submit the co-signed close: the payer's `ioi close` or B's watchtower.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import hre from "hardhat";
import { parseEther, toHex, type Hex, type PublicClient } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { PayerClient } from "../../channel-client/node/payer-client";
import { PgStore } from "../../channel-client/store/pg-store";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { runCli } from "../helpers/cli";
import { escrowFixture, gasPaidBy, HARDHAT_MNEMONIC } from "../helpers/fixtures";
import { freePort, sharedPostgres } from "../helpers/postgres";
import { startProviderChild, type ProviderProcess } from "../helpers/provider-child";
import { within } from "../helpers/within";

const PROVIDER_KEY: Hex = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";
const PRICE = parseEther("0.0001");
const DEPOSIT = parseEther("1");
const CALLS = 6;
const DEADLINE_MS = 60_000;

describe("adversarial: ioi open / ioi close over a provider fleet with dead endpoints (issue 31)", function () {
  this.timeout(240_000);
  let rpc: EmbeddedRpc | undefined;
  let dir: string;
  const children = new Set<ChildProcess>();

  before(async () => {
    rpc = await serveEmbeddedNetwork(hre);
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-fleet-open-close-"));
  });
  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await Promise.all([...children].map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once("exit", r)) : undefined)));
    await rpc?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("attack: the close reached A, which co-signed and died before answering; ioi close resumes the same close on B and settles exactly once — exact balances", async () => {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const db = await (await sharedPostgres()).createDatabase();
    const start = (): Promise<ProviderProcess> => startProviderChild({ rpcUrl: rpc!.url, escrow: fx.escrow.address, db, price: PRICE, key: PROVIDER_KEY, children, startDeadlineMs: DEADLINE_MS });
    const [a, b] = await Promise.all([start(), start()]);
    const dead = `127.0.0.1:${await freePort()}`;
    const peers = `${dead},127.0.0.1:${a.port},127.0.0.1:${b.port}`;
    const payerDb = path.join(dir, "payer.db");
    const payerKey = toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: 2 }).getHdKey().privateKey!);
    const payer = fx.payer.address;
    const env = { IOI_PRIVATE_KEY: payerKey };
    const chain = ["--rpc", rpc!.url, "--escrow", fx.escrow.address, "--db", payerDb];
    const balances = async () => ({
      provider: await publicClient.getBalance({ address: fx.provider.address }),
      payer: await publicClient.getBalance({ address: payer }),
      escrow: await publicClient.getBalance({ address: fx.escrow.address }),
    });
    const startBlock = await publicClient.getBlockNumber();
    const before = await balances();

    // Open: the dead endpoint is passed over; the terms come signed from A; the list is stored.
    const opened = await runCli(["open", "--json", "--provider", fx.provider.address, "--deposit", DEPOSIT.toString(), "--price", PRICE.toString(), "--peer", peers, ...chain], env);
    expect(opened.code, opened.err).to.equal(0);
    expect(opened.err).to.include(`${dead} did not offer terms`);
    const { sessionId, termsChecked } = JSON.parse(opened.out.split("\n").pop()!) as { sessionId: Hex; termsChecked: boolean };
    expect(termsChecked).to.equal(true);
    const stored = SqliteStore.open(payerDb);
    expect(stored.getChannel(sessionId)?.peer).to.equal(peers);
    await stored.close();

    // Stream through the stored list (no --peer): the dead endpoint is skipped, A serves.
    const streamed = await runCli(["stream", "--json", "--session", sessionId, "-n", String(CALLS), ...chain], env);
    expect(streamed.code, streamed.err).to.equal(0);
    expect(JSON.parse(streamed.out.split("\n").pop()!)).to.deep.include({ finalSeq: String(CALLS), paid: (PRICE * BigInt(CALLS)).toString(), endpoint: `127.0.0.1:${a.port}` });

    // The close proposal reaches A, which co-signs it and stores the co-signature; its answer never reaches the
    // payer: A dies.
    const payerStore = SqliteStore.open(payerDb);
    const client = await within(PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(sessionId)!, port: a.port, timeoutMs: 20_000 }), DEADLINE_MS, "connect to A");
    const proposal = await client.session.proposeCooperativeClose();
    const heardByA = await within(client.cooperativeClose(proposal), DEADLINE_MS, "A's co-signature");
    await client.close();
    await payerStore.close();
    a.child.kill("SIGKILL");
    await a.exited;
    const view = await PgStore.open(db, { mode: "all", poolSize: 1, readOnly: true });
    expect(view.getCooperativeClose(sessionId)?.providerSignature).to.equal(heardByA.providerSignature);
    await view.close();

    // ioi close: DEAD and A fail; B is sent the very same proposal and answers with the stored co-signature.
    const closed = await runCli(["close", "--json", "--session", sessionId, ...chain], env);
    expect(closed.code, closed.err).to.equal(0);
    // The dead endpoints fail before anything is proposed; B is asked the proposal A co-signed (the same state
    // signs the same summary) and answers with A's co-signature — a refusal ("cannot be closed again") would fail.
    expect(closed.err).to.include(`127.0.0.1:${a.port} failed`).and.to.include(`trying 127.0.0.1:${b.port}`);
    const result = JSON.parse(closed.out.split("\n").pop()!) as { finalSeq: string; paidToProvider: string; refundedToFunder: string };
    expect(result).to.deep.include({ finalSeq: String(CALLS), paidToProvider: (PRICE * BigInt(CALLS)).toString(), refundedToFunder: (DEPOSIT - PRICE * BigInt(CALLS)).toString() });

    // Exact balances. The co-signed close is submitted once, by whichever side gets there first: the payer's
    // `ioi close`, or B's watchtower, which submits any co-signed close the shared store holds and the chain still
    // shows open (so the provider's pay never waits on the payer). Each side pays the gas of its own transactions
    // and nothing else; the provider sends nothing but that close.
    const settledEvents = await publicClient.getContractEvents({ address: fx.escrow.address, abi: fx.escrow.abi, eventName: "ChannelSettled", args: { sessionId }, fromBlock: startBlock });
    expect(settledEvents).to.have.length(1);
    const settleTx = await publicClient.getTransaction({ hash: settledEvents[0].transactionHash });
    expect([payer.toLowerCase(), fx.provider.address.toLowerCase()]).to.include(settleTx.from.toLowerCase());
    const head = await publicClient.getBlockNumber();
    const payerGas = await gasPaidBy(publicClient, payer, startBlock + 1n, head);
    const providerGas = await gasPaidBy(publicClient, fx.provider.address, startBlock + 1n, head);
    const settleReceipt = await publicClient.getTransactionReceipt({ hash: settleTx.hash });
    const byProvider = settleTx.from.toLowerCase() === fx.provider.address.toLowerCase();
    expect(providerGas, "the provider's gas: the close if it sent it, else nothing").to.equal(byProvider ? settleReceipt.gasUsed * settleReceipt.effectiveGasPrice : 0n);
    const after = await balances();
    expect(after.provider - before.provider, "the provider's balance (receipted calls less its gas)").to.equal(PRICE * BigInt(CALLS) - providerGas);
    expect(before.payer - after.payer, "the payer's balance (paid calls plus its gas)").to.equal(PRICE * BigInt(CALLS) + payerGas);
    expect(after.escrow, "the escrow's balance").to.equal(before.escrow);
    // Closing again is the same close again: B answers with the stored co-signature, the chain holds it settled
    // once, nothing moves.
    const again = await runCli(["close", "--json", "--session", sessionId, "--peer", `127.0.0.1:${b.port}`, ...chain], env);
    expect(again.code, again.err).to.equal(0);
    expect(again.out).to.include("it settled once");
    expect(await publicClient.getContractEvents({ address: fx.escrow.address, abi: fx.escrow.abi, eventName: "ChannelSettled", args: { sessionId }, fromBlock: startBlock })).to.have.length(1);
    const final = await balances();
    expect(final.provider).to.equal(after.provider);
    expect(final.escrow).to.equal(after.escrow);
    b.child.kill("SIGTERM");
    await b.exited;
  });
});
