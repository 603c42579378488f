/**
 * A payer finds every process of a provider fleet and resumes on another (issue 31 item 2, decision 0036).
 *
 * Two `ioi provider --db postgres://…` processes over one PostgreSQL. The payer is given only the first
 * process's endpoint; it learns the second from the provider's signed terms offer (whose signature covers the
 * list: a swapped list does not verify). Mid-stream the process serving it is SIGKILLed; the payer's stream
 * resumes on the learned process from its store. Every request is answered exactly once (one seq each, no
 * request paid twice), every payer receipt is in the shared store byte for byte, and a cooperative close pays
 * exactly the receipted amount (provider, funder and escrow balances). Then the harder case: a relay in front of
 * the process swallows its answers to the tickets in flight and cuts the connection; the process stored those
 * steps, the payer never heard them. At the resume they are taken back and recognised by their request hash:
 * not sent or paid again (without that, each would be paid twice). The same through the CLI: `ioi stream --peer A`
 * (with receipt commits mid-stream), A SIGKILLed, the command resumes on B and exits 0 with every call paid once.
 * A careless `--peer` list is refused with one sentence and exit 2.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import hre from "hardhat";
import { parseEther, toHex, type Hex, type PublicClient } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { closeCooperative, openChannel } from "../../channel-client/chain/escrow";
import { InvalidSignatureError } from "../../channel-client/core/errors";
import { signTermsOffer, termsOfferToJson, verifyTermsOffer } from "../../channel-client/core/terms-offer";
import { FleetPayer } from "../../channel-client/node/fleet";
import { fetchTermsOffer, type InvocationOutcome } from "../../channel-client/node/payer-client";
import { PgStore } from "../../channel-client/store/pg-store";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { escrowFixture, HARDHAT_MNEMONIC, makeTerms } from "../helpers/fixtures";
import { sharedPostgres } from "../helpers/postgres";
import { startProviderChild, type ProviderProcess } from "../helpers/provider-child";
import { within } from "../helpers/within";

/** Hardhat's well-known key for account #3 (ROLE.provider). */
const PROVIDER_KEY: Hex = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";
const PRICE = parseEther("0.0001");
const DEPOSIT = parseEther("1");
const COUNT = 40;
const KILL_AFTER = 10;
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const DEADLINE_MS = 60_000;
const ROOT = path.resolve(__dirname, "../..");
const WORKER = path.join(ROOT, "examples", "mcp-test-worker.js");
const call = (i: number) => ({ jsonrpc: "2.0", id: `c${i}`, method: "tools/call", params: { name: "upper", arguments: { text: `request ${i}` } } });

async function fleetFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce: 0xe9d9n });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
  return { ...fx, publicClient, opened };
}

async function lostAnswersFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce: 0x1057n });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
  return { ...fx, publicClient, opened };
}

async function cliFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce: 0xc11n });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
  return { ...fx, publicClient, opened };
}

describe("provider fleet endpoints: the payer learns the fleet from the signed offer and resumes on another process", function () {
  this.timeout(180_000);

  let rpc: EmbeddedRpc | undefined;
  let dir: string;
  const children = new Set<ChildProcess>();
  const closers: Array<() => Promise<unknown>> = [];

  before(async () => {
    rpc = await serveEmbeddedNetwork(hre);
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-fleet-endpoints-"));
  });

  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await Promise.all([...children].map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once("exit", r)) : undefined)));
    for (const close of closers.splice(0)) await close().catch(() => undefined);
    await rpc?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("given one endpoint, the payer learns the other from the signed offer; SIGKILLed mid-stream, the stream resumes there: each request answered once, every receipt stored, the close pays exactly what was receipted", async () => {
    const fx = await loadFixture(fleetFixture);
    const sessionId = fx.opened.sessionId;
    const db = await (await sharedPostgres()).createDatabase();
    const start = (): Promise<ProviderProcess> =>
      startProviderChild({ rpcUrl: rpc!.url, escrow: fx.escrow.address, db, price: PRICE, key: PROVIDER_KEY, children, startDeadlineMs: DEADLINE_MS, extraArgs: ["--worker", process.execPath, WORKER] });
    const [a, b] = await Promise.all([start(), start()]);
    const endpointA = `127.0.0.1:${a.port}`;
    const endpointB = `127.0.0.1:${b.port}`;

    // The offer lists both processes, under the provider's signature; a list swapped in transit does not verify.
    const offer = await within(fetchTermsOffer({ account: fx.payer, domain: fx.domain, provider: fx.provider.address, port: a.port }), DEADLINE_MS, "the terms offer");
    expect([...(offer.endpoints ?? [])].sort()).to.deep.equal([endpointA, endpointB].sort());
    const signed = await signTermsOffer(fx.provider, fx.domain, pricing, [endpointA, endpointB]);
    await verifyTermsOffer(signed, fx.provider.address, fx.domain);
    const redirected = { ...signed, offer: { ...signed.offer, endpoints: [endpointA, "127.0.0.1:1"] } };
    let refused: unknown;
    await verifyTermsOffer(redirected, fx.provider.address, fx.domain).catch((error: unknown) => (refused = error));
    expect(refused, "an offer whose endpoint list was changed").to.be.instanceOf(InvalidSignatureError);
    // An offer without endpoints (one process, or signed before the field existed) keeps its form and verifies.
    const plain = await signTermsOffer(fx.provider, fx.domain, pricing);
    expect(Object.keys(termsOfferToJson(plain.offer))).to.not.include("endpoints");
    await verifyTermsOffer(plain, fx.provider.address, fx.domain);

    const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
    closers.push(() => payerStore.close());
    await payerStore.putChannel({ sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" });
    const resumes: string[] = [];
    const fleet = await within(
      FleetPayer.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(sessionId)!, timeoutMs: 20_000 }, [endpointA], { onResume: (e) => resumes.push(e) }),
      DEADLINE_MS,
      "connect to the fleet",
    );
    expect(fleet.endpoint).to.equal(endpointA);
    expect(fleet.endpoints, "B learned from A's signed offer").to.deep.equal([endpointA, endpointB]);

    // Stream; once KILL_AFTER answers are stored, the process serving the stream is SIGKILLed.
    const outcomes = new Map<number, InvocationOutcome[]>();
    let told = 0;
    await within(
      fleet.stream({
        count: COUNT,
        inflight: 4,
        request: call,
        onOutcome: (i, o) => {
          outcomes.set(i, [...(outcomes.get(i) ?? []), o]);
          if (++told === KILL_AFTER) a.child.kill("SIGKILL");
        },
      }),
      120_000,
      "the stream across the kill",
    );
    expect((await a.exited).signal).to.equal("SIGKILL");
    expect(resumes, "the stream resumed on the learned process").to.deep.equal([endpointB]);
    expect(fleet.endpoint).to.equal(endpointB);

    // Each request was answered exactly once, by its own request, under one seq each: nothing was paid twice.
    expect([...outcomes.keys()].sort((x, y) => x - y)).to.deep.equal(Array.from({ length: COUNT }, (_, i) => i));
    for (const [i, list] of outcomes) {
      expect(list.length, `answers to request ${i}`).to.equal(1);
      if (list[0]!.result) expect(JSON.stringify(list[0]!.result)).to.include(`"REQUEST ${i}"`);
    }
    const seqs = [...outcomes.values()].map((l) => l[0]!.seq).sort((x, y) => (x < y ? -1 : 1));
    expect(seqs).to.deep.equal(Array.from({ length: COUNT }, (_, i) => BigInt(i + 1)));
    const client = fleet.client;
    expect(client.session.seq).to.equal(BigInt(COUNT));
    const { leafCount, root } = await within(client.commit(), DEADLINE_MS, "the receipt commit on B");
    expect(leafCount).to.equal(BigInt(COUNT));

    // Every receipt the payer holds is in the shared store, byte for byte.
    const payerSteps = payerStore.steps(sessionId);
    expect(payerSteps.length).to.equal(COUNT);
    expect(payerSteps.every((s) => s.receipt !== undefined)).to.equal(true);
    const view = await PgStore.open(db, { mode: "all", poolSize: 1 });
    closers.push(() => view.close());
    expect(view.steps(sessionId).map((s) => `${s.seq}:${s.ticket.signature}:${s.receipt?.signature}:${s.leaf}`)).to.deep.equal(
      payerSteps.map((s) => `${s.seq}:${s.ticket.signature}:${s.receipt?.signature}:${s.leaf}`),
    );

    // The cooperative close, through B, pays exactly the receipted amount.
    const { summary, payerSignature, providerSignature } = await within(client.cooperativeClose(), DEADLINE_MS, "the cooperative close");
    expect(summary.finalSeq).to.equal(BigInt(COUNT));
    expect(summary.finalAmount).to.equal(BigInt(COUNT) * PRICE);
    expect(summary.finalReceiptRoot).to.equal(root);
    const balances = async () => ({
      provider: await fx.publicClient.getBalance({ address: fx.provider.address }),
      funder: await fx.publicClient.getBalance({ address: fx.funder.account.address }),
      escrow: await fx.publicClient.getBalance({ address: fx.escrow.address }),
    });
    const before = await balances();
    const settled = await closeCooperative({ wallet: fx.stranger, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.opened.ref, summary, payerSignature, providerSignature });
    const after = await balances();
    expect(settled.fee).to.equal(0n);
    expect(after.provider - before.provider, "the provider's balance").to.equal(BigInt(COUNT) * PRICE);
    expect(after.funder - before.funder, "the funder's balance").to.equal(DEPOSIT - BigInt(COUNT) * PRICE);
    expect(before.escrow - after.escrow, "the escrow paid out exactly the deposit").to.equal(DEPOSIT);
    await client.close();
    b.child.kill("SIGTERM");
    await b.exited;
  });

  it("answers lost on the way (the provider stored them, the payer never heard them) are taken back at the resume and not sent or paid again", async () => {
    const fx = await loadFixture(lostAnswersFixture);
    const sessionId = fx.opened.sessionId;
    const db = await (await sharedPostgres()).createDatabase();
    const start = (): Promise<ProviderProcess> =>
      startProviderChild({ rpcUrl: rpc!.url, escrow: fx.escrow.address, db, price: PRICE, key: PROVIDER_KEY, children, startDeadlineMs: DEADLINE_MS, extraArgs: ["--worker", process.execPath, WORKER] });
    const [a, b] = await Promise.all([start(), start()]);
    // A loopback relay in front of A that, once told to, stops passing A's answers on and cuts the connection a
    // moment later: A keeps answering (and storing) the tickets in flight, the payer hears none of them.
    let blackhole = false;
    const sockets = new Set<net.Socket>();
    const relay = net.createServer((down) => {
      const up = net.connect(a.port, "127.0.0.1");
      sockets.add(down).add(up);
      down.on("data", (d) => up.write(d));
      up.on("data", (d) => {
        if (!blackhole) down.write(d);
      });
      for (const [x, y] of [[down, up], [up, down]] as const) {
        x.on("error", () => y.destroy());
        x.on("close", () => y.destroy());
      }
    });
    await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise((resolve) => relay.close(resolve)));
    const relayed = `127.0.0.1:${(relay.address() as net.AddressInfo).port}`;

    const payerStore = SqliteStore.open(path.join(dir, "payer-lost.db"));
    closers.push(() => payerStore.close());
    await payerStore.putChannel({ sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" });
    const resumes: string[] = [];
    const fleet = await within(
      FleetPayer.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(sessionId)!, timeoutMs: 20_000 }, [relayed], { onResume: (e) => resumes.push(e) }),
      DEADLINE_MS,
      "connect through the relay",
    );
    expect([...fleet.endpoints].sort()).to.deep.equal([relayed, `127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`].sort());
    const outcomes = new Map<number, InvocationOutcome[]>();
    let told = 0;
    await within(
      fleet.stream({
        count: COUNT,
        inflight: 4,
        request: call,
        onOutcome: (i, o) => {
          outcomes.set(i, [...(outcomes.get(i) ?? []), o]);
          if (++told === KILL_AFTER) {
            blackhole = true;
            setTimeout(() => {
              for (const s of sockets) s.destroy();
            }, 1500);
          }
        },
      }),
      120_000,
      "the stream across the cut",
    );
    expect(resumes.length, "one resume").to.equal(1);
    // Every request answered once, one seq each: the answers lost on the way were not asked for again.
    expect([...outcomes.keys()].sort((x, y) => x - y)).to.deep.equal(Array.from({ length: COUNT }, (_, i) => i));
    for (const [i, list] of outcomes) expect(list.length, `answers to request ${i}`).to.equal(1);
    const client = fleet.client;
    expect(client.session.seq, "no request paid twice").to.equal(BigInt(COUNT));
    const taken = payerStore.results(sessionId).length;
    expect(taken, "some answers came back only from the provider's store (no result kept for them)").to.be.lessThan(COUNT);
    const view = await PgStore.open(db, { mode: "all", poolSize: 1 });
    closers.push(() => view.close());
    const payerSteps = payerStore.steps(sessionId);
    expect(view.steps(sessionId).map((s) => `${s.seq}:${s.receipt?.signature}`)).to.deep.equal(payerSteps.map((s) => `${s.seq}:${s.receipt?.signature}`));
    const { summary, payerSignature, providerSignature } = await within(client.cooperativeClose(), DEADLINE_MS, "the cooperative close");
    expect(summary.finalAmount).to.equal(BigInt(COUNT) * PRICE);
    const balances = async () => ({
      provider: await fx.publicClient.getBalance({ address: fx.provider.address }),
      funder: await fx.publicClient.getBalance({ address: fx.funder.account.address }),
      escrow: await fx.publicClient.getBalance({ address: fx.escrow.address }),
    });
    const before = await balances();
    await closeCooperative({ wallet: fx.stranger, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.opened.ref, summary, payerSignature, providerSignature });
    const after = await balances();
    expect(after.provider - before.provider, "the provider's balance").to.equal(BigInt(COUNT) * PRICE);
    expect(after.funder - before.funder, "the funder's balance").to.equal(DEPOSIT - BigInt(COUNT) * PRICE);
    expect(before.escrow - after.escrow, "the escrow paid out exactly the deposit").to.equal(DEPOSIT);
    await client.close();
    for (const p of [a, b]) p.child.kill("SIGTERM");
    await Promise.all([a.exited, b.exited]);
  });

  it("`ioi stream --peer A` over the fleet: A SIGKILLed mid-stream, the CLI resumes on B (learned from the offer) and every call is paid once", async () => {
    const fx = await loadFixture(cliFixture);
    const sessionId = fx.opened.sessionId;
    const db = await (await sharedPostgres()).createDatabase();
    const start = (): Promise<ProviderProcess> => startProviderChild({ rpcUrl: rpc!.url, escrow: fx.escrow.address, db, price: PRICE, key: PROVIDER_KEY, children, startDeadlineMs: DEADLINE_MS });
    const [a, b] = await Promise.all([start(), start()]);
    const payerDb = path.join(dir, "payer-cli.db");
    const setup = SqliteStore.open(payerDb);
    await setup.putChannel({ sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" });
    await setup.close();
    const view = await PgStore.open(db, { mode: "fleet", poolSize: 1 });
    closers.push(() => view.close());
    const n = 200;
    const payerKey = toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: 2 }).getHdKey().privateKey!);
    const stream = spawn(
      process.execPath,
      [path.join(ROOT, "bin/ioi.js"), "stream", "--json", "--session", sessionId, "-n", String(n), "--inflight", "4", "--commit-every", "25", "--peer", `127.0.0.1:${a.port}`, "--rpc", rpc!.url, "--escrow", fx.escrow.address, "--db", payerDb],
      { cwd: ROOT, env: { ...process.env, IOI_PRIVATE_KEY: payerKey, IOI_CLI_SOURCE: "1" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    children.add(stream);
    let out = "";
    let err = "";
    stream.stdout!.setEncoding("utf8").on("data", (c: string) => (out += c));
    stream.stderr!.setEncoding("utf8").on("data", (c: string) => (err += c));
    const exited = new Promise<number | null>((resolve) => stream.once("exit", (code) => resolve(code)));
    // Once A stored 20 steps of the channel, it is SIGKILLed.
    const stored = async () => Number((await view.query<{ n: string }>("SELECT count(*) AS n FROM steps"))[0]!.n);
    const deadline = Date.now() + DEADLINE_MS;
    while ((await stored()) < 20) {
      if (Date.now() > deadline || stream.exitCode !== null) throw new Error(`the stream did not get going: ${err}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    a.child.kill("SIGKILL");
    const code = await within(exited, 120_000, "ioi stream");
    expect(code, err).to.equal(0);
    expect(err).to.include(`resumed on 127.0.0.1:${b.port}`);
    const result = JSON.parse(out.trim().split("\n").pop()!) as Record<string, string>;
    expect(result.endpoint).to.equal(`127.0.0.1:${b.port}`);
    expect(result.finalSeq, "each call paid once").to.equal(String(n));
    expect(result.paid).to.equal((BigInt(n) * PRICE).toString());
    const payerStore = SqliteStore.open(payerDb);
    closers.push(() => payerStore.close());
    const payerSteps = payerStore.steps(sessionId);
    expect(payerSteps.length).to.equal(n);
    expect(payerSteps.every((s) => s.receipt !== undefined)).to.equal(true);
    const all = await PgStore.open(db, { mode: "all", poolSize: 1 });
    closers.push(() => all.close());
    expect(all.steps(sessionId).map((s) => `${s.seq}:${s.receipt?.signature}`)).to.deep.equal(payerSteps.map((s) => `${s.seq}:${s.receipt?.signature}`));
    b.child.kill("SIGTERM");
    await b.exited;
  });

  it("a careless --peer list is refused with one sentence and exit 2, before anything is dialled", () => {
    const session = `0x${"ab".repeat(32)}`;
    for (const [command, peer, says] of [
      ["stream", "127.0.0.1:7000,,127.0.0.1:7001", "has an empty entry"],
      ["stream", "127.0.0.1:7000,127.0.0.1:7000", "twice"],
      ["call", "127.0.0.1:7000,nope", "must be HOST:PORT"],
    ] as const) {
      const args = command === "stream" ? ["stream", "--session", session, "-n", "1", "--peer", peer] : ["call", "--session", session, "--method", "tools/list", "--peer", peer];
      const run = spawnSync(process.execPath, [path.join(ROOT, "bin/ioi.js"), ...args], {
        cwd: ROOT,
        env: { ...process.env, IOI_PRIVATE_KEY: PROVIDER_KEY, IOI_CLI_SOURCE: "1" },
        encoding: "utf8",
        timeout: 60_000,
      });
      expect(run.status, `${command} --peer ${peer}: ${run.stderr}`).to.equal(2);
      const first = run.stderr.split("\n")[0]!;
      expect(first).to.include(says);
      expect(first.split(". ").length, "one sentence").to.be.at.most(2);
    }
  });
});
