/**
 * Issue 16's structured logs and Prometheus metrics, on the embedded devnet: the provider node, the payer
 * client and the watchtower log JSON lines (level, ISO time, component, event) for accepted sessions,
 * refusals, closes seen, challenges sent and settlements, and never a key; `GET /metrics` scraped during a
 * stream shows the ticket counter and the latency histograms moving, the exposure of the channel, the open
 * sessions, the watchtower's lag in blocks and chain RPC errors.
 */
import { loadFixture, mine, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { bytesToHex, createPublicClient, http, parseEther, type Hex, type PublicClient } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { echoHandler } from "../../channel-client/cli/channel";
import { closeUnilateral, openChannel } from "../../channel-client/chain/escrow";
import { assertNoSecrets, createLogger, LogOptionError } from "../../channel-client/node/log";
import { MetricsOptionError, NodeMetrics, parseListenAddress, serveMetrics } from "../../channel-client/node/metrics";
import { PayerClient, ProviderRejectedError } from "../../channel-client/node/payer-client";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { Watchtower } from "../../channel-client/node/watchtower";
import { escrowFixture, hardhatAccount, makeTerms, ROLE } from "../helpers/fixtures";

const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";
const PRICE = parseEther("0.001");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const request = (i: number) => ({ jsonrpc: "2.0", id: `invoke-${i}`, method: "tools/echo", params: { text: `call ${i}` } });

async function observabilityFixture() {
  const fx = await escrowFixture();
  const publicClient = fx.publicClient as unknown as PublicClient;
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing) });
  const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: parseEther("1") });
  return { ...fx, publicClient, opened };
}
type Fx = Awaited<ReturnType<typeof observabilityFixture>>;

/** A pino destination that keeps every line. */
function memoryLog() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString("utf8").split("\n")) if (line.length > 0) lines.push(line);
      callback();
    },
  });
  return { stream, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** `name{labels} value` of one sample of a Prometheus exposition, or undefined. */
function sample(text: string, name: string, labels = ""): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `) || (labels === "" && l.startsWith(`${name} `)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

/** Every private key the test's parties hold, as hex. */
function partyKeys(): Hex[] {
  const keys = [ROLE.payer, ROLE.provider, ROLE.funder, ROLE.deployer].map((i) => bytesToHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: i }).getHdKey().privateKey!));
  // The same accounts the fixtures sign with.
  expect(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: ROLE.provider }).address).to.equal(hardhatAccount(ROLE.provider).address);
  return keys;
}

describe("structured logs and metrics (issue 16)", function () {
  let dir: string;
  const cleanup: Array<() => Promise<unknown>> = [];

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-observe-"));
  });
  afterEach(async () => {
    while (cleanup.length > 0) await cleanup.pop()!().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  async function startNodes(fx: Fx, options: { metrics?: NodeMetrics; providerLog?: ReturnType<typeof memoryLog>; payerLog?: ReturnType<typeof memoryLog> }) {
    const providerStore = SqliteStore.open(path.join(dir, "provider.db"));
    const node = await ProviderNode.start({
      account: fx.provider,
      publicClient: fx.publicClient,
      domain: fx.domain,
      store: providerStore,
      pricing,
      handler: echoHandler,
      modelSnapshotId: "worker:echo@1",
      ...(options.providerLog ? { logger: createLogger({ component: "provider", destination: options.providerLog.stream }) } : {}),
      ...(options.metrics ? { metrics: options.metrics } : {}),
    });
    const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
    await payerStore.putChannel({ sessionId: fx.opened.sessionId, role: "payer", ref: fx.opened.ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" });
    const client = await PayerClient.connect({
      account: fx.payer,
      domain: fx.domain,
      store: payerStore,
      channel: payerStore.getChannel(fx.opened.sessionId)!,
      port: node.port,
      ...(options.payerLog ? { logger: createLogger({ component: "payer", destination: options.payerLog.stream }) } : {}),
    });
    cleanup.push(async () => {
      await client.close();
      await node.stop();
      await providerStore.close();
      await payerStore.close();
    });
    return { node, client, providerStore, payerStore };
  }

  it("logs accepted sessions, refusals, a close seen, the challenge sent and the settlement as JSON lines, and no key", async () => {
    const fx = await loadFixture(observabilityFixture);
    const providerLog = memoryLog();
    const payerLog = memoryLog();
    const towerLog = memoryLog();
    const { node, client, providerStore, payerStore } = await startNodes(fx, { providerLog, payerLog });
    const sessionId = fx.opened.sessionId;
    await client.stream({ count: 12, inflight: 4, request });
    await client.commit();

    // The payer closes with a stale ticket (seq 4); the provider's watchtower answers with seq 12.
    const stale = payerStore.steps(sessionId)[3]!.ticket;
    await closeUnilateral({ wallet: fx.wallets[ROLE.payer]!, publicClient: fx.publicClient, escrow: fx.escrow.address, ref: fx.opened.ref, ticket: stale });
    const tower = new Watchtower({
      publicClient: fx.publicClient,
      wallet: fx.wallets[ROLE.provider]!,
      escrow: fx.escrow.address,
      store: providerStore,
      fromBlock: fx.opened.blockNumber,
      finalize: true,
      logger: createLogger({ component: "watchtower", destination: towerLog.stream }),
      onEvents: (events) => node.applyEscrowEvents(events),
    });
    await tower.runOnce();
    // A ticket after the close is refused, and both sides log the refusal.
    await expect(client.invoke(request(99))).to.be.rejectedWith(ProviderRejectedError);
    await time.increase(3 * 3600);
    await tower.runOnce();

    const provider = providerLog.records();
    const payer = payerLog.records();
    const towerRecords = towerLog.records();
    for (const record of [...provider, ...payer, ...towerRecords]) {
      expect(record.level, JSON.stringify(record)).to.be.oneOf(["debug", "info", "warn", "error"]);
      expect(new Date(record.time as string).toISOString()).to.equal(record.time);
      expect(record.event, JSON.stringify(record)).to.be.a("string");
    }
    const events = (records: Array<Record<string, unknown>>) => records.map((r) => r.event);
    expect(provider.find((r) => r.event === "session.accepted")).to.include({ component: "provider", level: "info", sessionId, phase: "open", deposit: parseEther("1").toString() });
    expect(payer.find((r) => r.event === "session.accepted")).to.include({ component: "payer", sessionId });
    expect(payer.find((r) => r.event === "commit.agreed")).to.include({ leafCount: "12" });
    expect(towerRecords.find((r) => r.event === "watchtower.close_seen")).to.include({ component: "watchtower", sessionId, seq: "4" });
    expect(towerRecords.find((r) => r.event === "watchtower.challenged")).to.include({ sessionId, staleSeq: "4", answeredSeq: "12", inWindow: true, amount: (12n * PRICE).toString() });
    expect(towerRecords.find((r) => r.event === "watchtower.finalized")).to.include({ sessionId, paidToProvider: (12n * PRICE).toString() });
    expect(provider.find((r) => r.event === "session.phase" && r.phase === "closing")).to.include({ sessionId });
    expect(provider.find((r) => r.event === "ticket.refused")).to.include({ level: "warn", sessionId, seq: "13", error: "ChannelNotOpenError" });
    expect(payer.find((r) => r.event === "ticket.refused")).to.include({ seq: "13", error: "ChannelNotOpenError" });
    expect(events(towerRecords).indexOf("watchtower.close_seen")).to.be.below(events(towerRecords).indexOf("watchtower.challenged"));

    // No private key of any party, in any log, in any form.
    const everything = [...providerLog.lines, ...payerLog.lines, ...towerLog.lines].join("\n");
    assertNoSecrets(everything, partyKeys());
    expect(() => assertNoSecrets(`{"oops":"${partyKeys()[0]}"}`, partyKeys())).to.throw(/contains a secret/);
  });

  it("censors fields named for secrets and refuses an unknown level in one sentence", () => {
    const log = memoryLog();
    const logger = createLogger({ component: "test", destination: log.stream });
    const key = partyKeys()[0]!;
    logger.info({ event: "oops", privateKey: key, nested: { secret: key, seed: key, sessionKey: key }, mnemonic: "test test junk" }, "careless caller");
    expect(log.lines).to.have.length(1);
    assertNoSecrets(log.lines[0]!, [key]);
    expect(log.lines[0]).to.not.include("test test junk");
    expect(JSON.parse(log.lines[0]!)).to.deep.include({ privateKey: "[redacted]", nested: { secret: "[redacted]", seed: "[redacted]", sessionKey: "[redacted]" } });
    expect(() => createLogger({ component: "x", level: "loud" })).to.throw(LogOptionError, '--log-level must be one of fatal, error, warn, info, debug, trace, silent; received "loud".');
  });

  it("writes to --log-file, not stdout", async () => {
    const file = path.join(dir, "logs", "node.log");
    const logger = createLogger({ component: "provider", file });
    logger.info({ event: "provider.ready", port: 7000 }, "listening");
    logger.debug({ event: "hidden" }, "below the level");
    const lines = readFileSync(file, "utf8").trim().split("\n");
    expect(lines).to.have.length(1);
    expect(JSON.parse(lines[0]!)).to.include({ component: "provider", event: "provider.ready", port: 7000, level: "info", msg: "listening" });
  });

  it("serves /metrics during a stream with the ticket counter and latency histograms moving", async () => {
    const fx = await loadFixture(observabilityFixture);
    const metrics = new NodeMetrics();
    const server = await serveMetrics(metrics, "127.0.0.1", 0);
    cleanup.push(server.close);
    const { client } = await startNodes(fx, { metrics });
    const url = `http://127.0.0.1:${server.port}/metrics`;
    const scrape = async () => {
      const response = await fetch(url);
      expect(response.status).to.equal(200);
      expect(response.headers.get("content-type")).to.match(/^text\/plain/);
      return response.text();
    };
    const before = await scrape();
    expect(sample(before, "ioi_open_sessions")).to.equal(1);
    expect(sample(before, "ioi_tickets_total")).to.equal(0);

    // Scrape while the stream runs: at 20 and at 40 of 60 receipts.
    const during: Promise<string>[] = [];
    await client.stream({ count: 60, inflight: 4, request, onProgress: (done) => void (done === 20 || done === 40 ? during.push(scrape()) : undefined) });
    const [first, second] = await Promise.all(during);
    const after = await scrape();
    const t1 = sample(first!, "ioi_tickets_total")!;
    const t2 = sample(second!, "ioi_tickets_total")!;
    expect(t1).to.be.at.least(20);
    expect(t2).to.be.above(t1);
    expect(sample(after, "ioi_tickets_total")).to.equal(60);
    expect(sample(first!, "ioi_ticket_verify_seconds_count")).to.be.at.least(20);
    expect(sample(after, "ioi_ticket_verify_seconds_count")).to.equal(60);
    expect(sample(after, "ioi_store_seconds_count")).to.equal(60);
    expect(sample(after, "ioi_ticket_verify_seconds_sum")).to.be.above(0);
    expect(sample(after, "ioi_unpaid_exposure_wei", `{session="${fx.opened.sessionId}"}`)).to.equal(Number(60n * PRICE));
    expect(after).to.include("ioi_process_cpu_user_seconds_total");
    // Only /metrics is served.
    expect((await fetch(`http://127.0.0.1:${server.port}/`)).status).to.equal(404);
  });

  it("reports the watchtower's lag in blocks and counts chain RPC errors", async () => {
    const fx = await loadFixture(observabilityFixture);
    const store = SqliteStore.open(path.join(dir, "tower.db"));
    cleanup.push(() => store.close());
    const metrics = new NodeMetrics({ defaultMetrics: false });
    const tower = new Watchtower({ publicClient: fx.publicClient, wallet: fx.wallets[ROLE.provider]!, escrow: fx.escrow.address, store, fromBlock: fx.opened.blockNumber, metrics });
    await tower.runOnce();
    expect(sample(await metrics.text(), "ioi_watchtower_lag_blocks")).to.equal(0);
    await mine(7);
    expect(sample(await metrics.text(), "ioi_watchtower_lag_blocks")).to.equal(7);
    await tower.runOnce();
    expect(sample(await metrics.text(), "ioi_watchtower_lag_blocks")).to.equal(0);

    // A tower whose RPC is gone: every failed poll is counted.
    const dead = createPublicClient({ transport: http("http://127.0.0.1:1", { retryCount: 0 }) }) as PublicClient;
    const broken = new NodeMetrics({ defaultMetrics: false });
    const errors: unknown[] = [];
    const lost = new Watchtower({ publicClient: dead, wallet: fx.wallets[ROLE.provider]!, escrow: fx.escrow.address, store, fromBlock: 0n, name: "lost", metrics: broken, onError: (e) => errors.push(e), pollMs: 10 });
    lost.start();
    while (errors.length < 2) await new Promise((r) => setTimeout(r, 10));
    await lost.stop();
    await broken.text(); // a scrape's own head read fails too (counted as it happens, seen by the next scrape)
    const text = await broken.text();
    expect(sample(text, "ioi_chain_rpc_errors_total", '{source="watchtower"}')).to.be.at.least(2);
    expect(sample(text, "ioi_chain_rpc_errors_total", '{source="metrics"}')).to.be.at.least(1);
  });

  it("parses --metrics HOST:PORT and refuses anything else in one sentence", () => {
    expect(parseListenAddress("127.0.0.1:9464")).to.deep.equal({ host: "127.0.0.1", port: 9464 });
    expect(parseListenAddress("[::1]:0")).to.deep.equal({ host: "::1", port: 0 });
    for (const bad of ["9464", "127.0.0.1", "127.0.0.1:99999", "http://127.0.0.1:9464", ""]) {
      expect(() => parseListenAddress(bad)).to.throw(MetricsOptionError, `--metrics must be HOST:PORT such as 127.0.0.1:9464; received "${bad}".`);
    }
  });
});
