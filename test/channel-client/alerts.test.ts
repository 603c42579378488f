/**
 * Issue 29 item 4: nodes that act on their own. The pure alert function's table (window about to close, bond or
 * stake below the minimum, unclaimed payout and fee, a head that stopped), raised once and cleared once; the
 * top-up planner's table; on the embedded devnet, the watchtower tops up a payer channel by policy with exact
 * balances and stops at the daily cap, and raises alerts that reach a loopback webhook and the metrics endpoint.
 */
import { loadFixture, mine, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Address, Hex, PublicClient } from "viem";

import type { Wallet } from "../../channel-client/chain/escrow";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import {
  advanceHead,
  AlertEmitter,
  AlertOptionError,
  checkTopUpPolicy,
  diffAlerts,
  evaluateAlerts,
  parseWebhookUrl,
  planTopUps,
  type Alert,
  type AlertChainState,
} from "../../channel-client/node/alerts";
import { NodeMetrics, serveMetrics } from "../../channel-client/node/metrics";
import { Watchtower } from "../../channel-client/node/watchtower";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { cliSandbox, runCli } from "../helpers/cli";
import { readFileSync } from "node:fs";
import { toHex } from "viem";
import { HARDHAT_MNEMONIC } from "../helpers/fixtures";
import { mnemonicToAccount } from "viem/accounts";
import { MIN_PROVIDER_BOND, unsealedSystemFixture } from "../helpers/system";
import { closeUnilateral, ether, expectDeltas, mined, openSession, PAYER_KEY, paymentTicketOf, rootOf, signTicket, snapshot, type Session } from "../adversarial/helpers";

const A: Address = "0x00000000000000000000000000000000000000a1";
const T: Address = "0x00000000000000000000000000000000000000b2";
const S1: Hex = `0x${"11".repeat(32)}`;
const S2: Hex = `0x${"22".repeat(32)}`;
const POLICY = { windowMarginSeconds: 600n, stallPolls: 3 };
const quiet: AlertChainState = { head: 100n, unchangedPolls: 0, bonds: [], claimable: [] };
const kinds = (alerts: Alert[]) => alerts.map((a) => a.kind);

/** A loopback HTTP server that keeps every JSON body POSTed to it; `delayMs` holds each answer back. */
async function webhookReceiver(delayMs = 0): Promise<{ url: string; bodies: Record<string, unknown>[]; close: () => Promise<void> }> {
  const bodies: Record<string, unknown>[] = [];
  const server: Server = createServer((request: IncomingMessage, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    request.on("end", () => {
      bodies.push(JSON.parse(text) as Record<string, unknown>);
      setTimeout(() => response.writeHead(204).end(), delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/alerts`,
    bodies,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

describe("issue 29 item 4: alerts and top-ups", function () {
  describe("evaluateAlerts (pure)", () => {
    const rows: { name: string; chain?: Partial<AlertChainState>; closing?: { sessionId: Hex; role: "payer" | "provider"; finalizesAt: bigint }[]; now?: bigint; want: string[] }[] = [
      { name: "nothing holds", want: [] },
      { name: "a window ending within the margin", closing: [{ sessionId: S1, role: "provider", finalizesAt: 1_600n }], now: 1_000n, want: ["window_closing"] },
      { name: "a window ending just beyond the margin", closing: [{ sessionId: S1, role: "provider", finalizesAt: 1_601n }], now: 1_000n, want: [] },
      { name: "a window already ended (finalisation's business, not an alert)", closing: [{ sessionId: S1, role: "payer", finalizesAt: 1_000n }], now: 1_000n, want: [] },
      { name: "a bond below the minimum", chain: { bonds: [{ role: "provider", account: A, active: 99n, minimum: 100n }] }, want: ["bond_low"] },
      { name: "a bond at the minimum", chain: { bonds: [{ role: "provider", account: A, active: 100n, minimum: 100n }] }, want: [] },
      { name: "a stake below the minimum", chain: { bonds: [{ role: "arbitrator", account: A, active: 0n, minimum: 50n }] }, want: ["bond_low"] },
      { name: "an escrow payout to claim", chain: { claimable: [{ source: "escrow", asset: T, account: A, amount: 1n }] }, want: ["unclaimed_payout"] },
      { name: "a DisputeManager fee to claim", chain: { claimable: [{ source: "disputeManager", asset: T, account: A, amount: 7n }] }, want: ["unclaimed_fee"] },
      { name: "zero claimable", chain: { claimable: [{ source: "escrow", asset: T, account: A, amount: 0n }, { source: "disputeManager", asset: T, account: A, amount: 0n }] }, want: [] },
      { name: "head still for fewer polls than the limit", chain: { unchangedPolls: 2 }, want: [] },
      { name: "head still for the limit", chain: { unchangedPolls: 3 }, want: ["chain_stalled"] },
    ];
    for (const row of rows) {
      it(row.name, () => {
        const alerts = evaluateAlerts({ chain: { ...quiet, ...row.chain }, store: { closing: row.closing ?? [] }, now: row.now ?? 1_000n, policy: POLICY });
        expect(kinds(alerts)).to.deep.equal(row.want);
      });
    }

    it("keys name the subject: two sessions, two alerts; a bond and a stake of one account, two alerts", () => {
      const alerts = evaluateAlerts({
        chain: { ...quiet, bonds: [{ role: "provider", account: A, active: 1n, minimum: 2n }, { role: "arbitrator", account: A, active: 1n, minimum: 2n }] },
        store: { closing: [{ sessionId: S1, role: "provider", finalizesAt: 1_100n }, { sessionId: S2, role: "provider", finalizesAt: 1_200n }] },
        now: 1_000n,
        policy: POLICY,
      });
      expect(new Set(alerts.map((a) => a.key)).size).to.equal(4);
    });

    it("diffAlerts raises a condition once, keeps it while it holds (new text or not), and clears it once", () => {
      const at = (now: bigint) => evaluateAlerts({ chain: quiet, store: { closing: [{ sessionId: S1, role: "provider", finalizesAt: 1_500n }] }, now, policy: POLICY });
      const first = diffAlerts(new Map(), at(1_000n));
      expect(kinds(first.raised)).to.deep.equal(["window_closing"]);
      const second = diffAlerts(first.active, at(1_100n));
      expect(second.raised).to.deep.equal([]);
      expect(second.cleared).to.deep.equal([]);
      const third = diffAlerts(second.active, at(1_500n));
      expect(kinds(third.cleared)).to.deep.equal(["window_closing"]);
      expect(third.active.size).to.equal(0);
      expect(diffAlerts(third.active, at(1_600n)).cleared).to.deep.equal([]);
    });

    it("advanceHead counts polls the head stood still and restarts when it moves", () => {
      let h = advanceHead(undefined, 5n);
      expect(h.unchangedPolls).to.equal(0);
      h = advanceHead(h, 5n);
      h = advanceHead(h, 5n);
      expect(h.unchangedPolls).to.equal(2);
      expect(advanceHead(h, 6n)).to.deep.equal({ head: 6n, unchangedPolls: 0 });
    });
  });

  describe("planTopUps (pure)", () => {
    const policy = { below: 100n, to: 300n, maxPerDay: 500n };
    it("tops a low channel up to the target, leaves one at the threshold alone", () => {
      const plan = planTopUps({ channels: [{ sessionId: S1, deposit: 1_000n, spent: 901n }, { sessionId: S2, deposit: 1_000n, spent: 900n }], policy, history: [], now: 100_000n });
      expect(plan).to.deep.equal([{ sessionId: S1, amount: 201n, remaining: 99n, capped: false }]);
    });
    it("an overspent record counts as nothing remaining", () => {
      expect(planTopUps({ channels: [{ sessionId: S1, deposit: 10n, spent: 20n }], policy, history: [], now: 100_000n })[0]!.amount).to.equal(300n);
    });
    it("never beyond the daily cap: the rolling day's deposits count, older ones do not", () => {
      const channels = [{ sessionId: S1, deposit: 100n, spent: 100n }, { sessionId: S2, deposit: 100n, spent: 100n }];
      expect(planTopUps({ channels, policy, history: [], now: 100_000n })).to.deep.equal([
        { sessionId: S1, amount: 300n, remaining: 0n, capped: false },
        { sessionId: S2, amount: 200n, remaining: 0n, capped: true },
      ]);
      expect(planTopUps({ channels, policy, history: [{ at: 100_000n - 86_399n, amount: 500n }], now: 100_000n })).to.deep.equal([]);
      expect(planTopUps({ channels, policy, history: [{ at: 100_000n - 86_400n, amount: 500n }], now: 100_000n })).to.have.length(2);
    });
    it("checkTopUpPolicy refuses a zero threshold, a target below it and a zero cap", () => {
      expect(() => checkTopUpPolicy({ below: 0n, to: 1n, maxPerDay: 1n })).to.throw(AlertOptionError, /more than zero/);
      expect(() => checkTopUpPolicy({ below: 5n, to: 4n, maxPerDay: 1n })).to.throw(AlertOptionError, /at least --top-up-below/);
      expect(() => checkTopUpPolicy({ below: 1n, to: 1n, maxPerDay: 0n })).to.throw(AlertOptionError, /max-per-day/);
    });
    it("parseWebhookUrl takes http(s) only", () => {
      expect(parseWebhookUrl("http://127.0.0.1:9/x").port).to.equal("9");
      expect(() => parseWebhookUrl("ftp://x")).to.throw(AlertOptionError);
      expect(() => parseWebhookUrl("not a url")).to.throw(AlertOptionError);
    });
  });

  describe("ioi watchtower options", () => {
    const env = { IOI_PRIVATE_KEY: `0x${"01".repeat(32)}`, IOI_RPC_URL: "http://127.0.0.1:1", IOI_ESCROW: undefined };
    const cases: [string[], RegExp][] = [
      [["--top-up-below", "1eth", "--top-up-to", "2eth"], /needs all of --top-up-below, --top-up-to and --top-up-max-per-day; received only --top-up-below, --top-up-to\.$/],
      [["--top-up-below", "2eth", "--top-up-to", "1eth", "--top-up-max-per-day", "3eth"], /--top-up-to \(1000000000000000000\) must be at least --top-up-below/],
      [["--top-up-below", "lots", "--top-up-to", "1eth", "--top-up-max-per-day", "3eth"], /--top-up-below must be a whole number of wei/],
      [["--alert-webhook", "ftp://example.org/x"], /--alert-webhook must be an http\(s\) URL/],
      [["--alert-stall-polls", "3"], /--alert-stall-polls tunes alerts: add --alerts/],
      [["--alerts", "--alert-window-margin", "0"], /--alert-window-margin/],
      [["--alerts", "--dispute-manager", "0x12"], /--dispute-manager must be an address/],
    ];
    for (const [argv, pattern] of cases) {
      it(`refuses ${argv.join(" ")} with one sentence and a non-zero exit, before any RPC call`, async () => {
        const { code, out, err } = await runCli(["watchtower", "--once", ...argv], env);
        expect(code).to.not.equal(0);
        // One sentence, then the command's usage line (as every UsageError prints).
        const [sentence, usage] = (err + out).trim().split("\n");
        expect(sentence).to.match(/^ioi watchtower failed — UsageError: /);
        expect(sentence).to.match(pattern);
        expect(usage).to.match(/^Usage: ioi watchtower /);
      });
    }
  });

  describe("AlertEmitter", () => {
    it("a webhook that is down or slow is counted and logged, never thrown", async () => {
      const slow = await webhookReceiver(2_000);
      const metrics = new NodeMetrics({ defaultMetrics: false });
      try {
        const alert: Alert = { key: "chain_stalled", kind: "chain_stalled", message: "stalled", details: {} };
        const down = new AlertEmitter({ metrics, webhook: parseWebhookUrl("http://127.0.0.1:1/alerts"), webhookTimeoutMs: 500 });
        await down.update([alert]);
        const late = new AlertEmitter({ metrics, webhook: parseWebhookUrl(slow.url), webhookTimeoutMs: 200 });
        const started = Date.now();
        await late.update([alert]);
        expect(Date.now() - started).to.be.below(1_500);
        expect((await metrics.alertWebhookFailures.get()).values[0]!.value).to.equal(2);
      } finally {
        await slow.close();
      }
    });
  });

  describe("on the embedded devnet", () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), "ioi-alerts-"));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    async function payerTicket(session: Session, seq: bigint, amount: bigint) {
      return signPaymentTicket({ account: PAYER_KEY, domain: session.domain, ticket: paymentTicketOf(session, seq, amount, rootOf(seq)) });
    }

    it("tops up a low payer channel to the target, exact balances, and never past the daily cap", async () => {
      const s = await loadFixture(unsealedSystemFixture);
      const store = SqliteStore.open(path.join(dir, "payer.db"));
      try {
        const fromBlock = await s.publicClient.getBlockNumber();
        const session = await openSession(s, s.token.address, { deposit: ether("2") });
        await store.putChannel({ sessionId: session.sessionId, role: "payer", ref: session.ref, pricing: { version: "1", unit: "invocation", pricePerInvocation: 1n }, escrow: s.escrow.address, chainId: session.domain.chainId, deposit: ether("2"), status: "open" });
        // A second channel of the store that another key funds: its refund would go there, so it is never topped up.
        const foreign = await openSession(s, s.token.address, { deposit: ether("0.1"), terms: { nonce: 77n, funder: s.stranger.account.address }, from: s.stranger });
        await store.putChannel({ sessionId: foreign.sessionId, role: "payer", ref: foreign.ref, pricing: { version: "1", unit: "invocation", pricePerInvocation: 1n }, escrow: s.escrow.address, chainId: foreign.domain.chainId, deposit: ether("0.1"), status: "open" });
        const metrics = new NodeMetrics({ defaultMetrics: false });
        const toppedUp: bigint[] = [];
        const errors: unknown[] = [];
        const tower = new Watchtower({
          publicClient: s.publicClient as unknown as PublicClient,
          wallet: s.client as unknown as Wallet, // the funder named in the terms
          escrow: s.escrow.address,
          store,
          fromBlock,
          metrics,
          topUp: { below: ether("1"), to: ether("2"), maxPerDay: ether("1.5") },
          onTopUp: (_sessionId, amount) => toppedUp.push(amount),
          onError: (error) => errors.push(error),
        });
        const snap = await snapshot(s);

        await tower.runOnce(); // 2 remaining: nothing to do
        await store.putTicket(session.sessionId, await payerTicket(session, 1n, ether("1")));
        await tower.runOnce(); // exactly 1 remaining: at the threshold, not below
        expect(toppedUp).to.deep.equal([]);

        await store.putTicket(session.sessionId, await payerTicket(session, 2n, ether("1.2")));
        await tower.runOnce(); // 0.8 remaining: back to 2
        expect(toppedUp).to.deep.equal([ether("1.2")]);
        expect(await s.escrow.read.depositOf([session.sessionId])).to.equal(ether("3.2"));
        expect(store.getChannel(session.sessionId)!.deposit).to.equal(ether("3.2"));

        await store.putTicket(session.sessionId, await payerTicket(session, 3n, ether("2.6")));
        await tower.runOnce(); // 0.6 remaining wants 1.4; the day allows 0.3 more
        await tower.runOnce(); // the cap is spent: nothing
        expect(toppedUp).to.deep.equal([ether("1.2"), ether("0.3")]);
        expect(await s.escrow.read.depositOf([session.sessionId])).to.equal(ether("3.5"));

        await time.increase(86_400);
        await tower.runOnce(); // a day later: 0.9 remaining, back to 2
        expect(toppedUp).to.deep.equal([ether("1.2"), ether("0.3"), ether("1.1")]);
        expect(await s.escrow.read.depositOf([session.sessionId])).to.equal(ether("4.6"));
        expect(errors).to.deep.equal([]);
        expect((await metrics.topUps.get()).values[0]!.value).to.equal(3);
        expect(await s.escrow.read.depositOf([foreign.sessionId])).to.equal(ether("0.1"));
        // Only the opening deposit predates the snapshot: the funder paid exactly the three top-ups.
        await expectDeltas(s, snap, { LGAS: { client: -ether("2.6"), escrow: ether("2.6") } });
      } finally {
        await store.close();
      }
    });

    it("raises each alert once to the webhook and the metrics endpoint, and clears it when the condition ends", async () => {
      const s = await loadFixture(unsealedSystemFixture);
      const store = SqliteStore.open(path.join(dir, "provider.db"));
      const hook = await webhookReceiver();
      const metrics = new NodeMetrics({ defaultMetrics: false });
      const server = await serveMetrics(metrics, "127.0.0.1", 0);
      const scrape = async (kind: string) => {
        const text = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
        const line = text.split("\n").find((l) => l.startsWith(`ioi_alerts_active{kind="${kind}"} `));
        return Number(line!.split(" ")[1]);
      };
      try {
        const fromBlock = await s.publicClient.getBlockNumber();
        const session = await openSession(s, s.token.address, { deposit: ether("2") });
        await store.putChannel({ sessionId: session.sessionId, role: "provider", ref: session.ref, pricing: { version: "1", unit: "invocation", pricePerInvocation: 1n }, escrow: s.escrow.address, chainId: session.domain.chainId, deposit: ether("2"), status: "open" });
        const emitter = new AlertEmitter({ metrics, webhook: parseWebhookUrl(hook.url), webhookTimeoutMs: 2_000 });
        const tower = new Watchtower({
          publicClient: s.publicClient as unknown as PublicClient,
          wallet: s.provider as unknown as Wallet, // a registered provider bonded 5× the minimum
          escrow: s.escrow.address,
          store,
          fromBlock,
          defend: ["provider"],
          alerts: { emitter, policy: { windowMarginSeconds: 7_200n, stallPolls: 2 }, disputeManager: s.disputes.address },
        });
        await tower.runOnce();
        expect(emitter.active).to.deep.equal([]);

        // The registry's minimum rises above the provider's bond; the payer closes with a stale ticket (1 h window).
        await mined(s, s.registry.write.setMinimums([MIN_PROVIDER_BOND * 6n, ether("50")]));
        await mined(s, closeUnilateral(session, await signTicket(session, 1n, ether("0.1")), s.payerWallet));
        await tower.runOnce();
        expect(kinds(emitter.active).sort()).to.deep.equal(["bond_low", "window_closing"]);
        expect(await scrape("bond_low")).to.equal(1);
        expect(await scrape("window_closing")).to.equal(1);

        // Nothing is mined while the tower polls: the head stands still for two polls.
        await tower.runOnce();
        await tower.runOnce();
        expect(kinds(emitter.active).sort()).to.deep.equal(["bond_low", "chain_stalled", "window_closing"]);
        await mine(1);
        await tower.runOnce();
        expect(kinds(emitter.active).sort()).to.deep.equal(["bond_low", "window_closing"]);

        // The window passes; the minimum comes back down.
        await time.increaseTo(store.getClosing(session.sessionId)!.finalizesAt + 1n);
        await mined(s, s.registry.write.setMinimums([MIN_PROVIDER_BOND, ether("50")]));
        await tower.runOnce();
        await tower.runOnce();
        expect(emitter.active).to.deep.equal([]);
        expect(await scrape("bond_low")).to.equal(0);

        const events = hook.bodies.map((b) => `${String(b.event)} ${(b.alert as Alert).kind}`);
        expect(events).to.deep.equal([
          "alert.raised window_closing",
          "alert.raised bond_low",
          "alert.raised chain_stalled",
          "alert.cleared chain_stalled",
          "alert.cleared window_closing",
          "alert.cleared bond_low",
        ]);
        const raisedBond = hook.bodies[1]!.alert as Alert;
        expect(raisedBond.details).to.deep.include({ role: "provider", account: s.provider.account.address, active: (MIN_PROVIDER_BOND * 5n).toString(), minimum: (MIN_PROVIDER_BOND * 6n).toString() });
        const text = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
        for (const kind of ["bond_low", "window_closing", "chain_stalled"]) expect(text).to.include(`ioi_alerts_raised_total{kind="${kind}"} 1`);

        // What one alert check costs: every call the tower makes on its client, counted.
        const calls: string[] = [];
        const counted = new Proxy(s.publicClient as unknown as PublicClient, {
          get(target, name, receiver) {
            const value = Reflect.get(target, name, receiver) as unknown;
            if (typeof value !== "function") return value;
            return (...args: unknown[]) => {
              calls.push(String(name));
              return (value as (...a: unknown[]) => unknown).apply(target, args);
            };
          },
        });
        const measured = new Watchtower({ ...tower.parameters, publicClient: counted, alerts: { emitter: new AlertEmitter(), disputeManager: s.disputes.address } });
        await measured.checkAlerts();
        // getBlock, registry(), isRegistered × 2, bondOf + minProviderBond, claimableOf + claimable (one asset).
        expect(calls).to.have.length(8);
      } finally {
        await server.close();
        await hook.close();
        await store.close();
      }
    });
  });

  describe("ioi watchtower --once with a policy, from the CLI", function () {
    this.timeout(120_000);
    const box = cliSandbox("ioi-alerts-cli-");

    it("tops up the payer's low channel from the funder's key and logs it; alerts run without raising anything", async () => {
      const s = await loadFixture(unsealedSystemFixture);
      const db = path.join(box.dir, "payer.db");
      const store = SqliteStore.open(db);
      const session = await openSession(s, s.token.address, { deposit: ether("2") });
      await store.putChannel({ sessionId: session.sessionId, role: "payer", ref: session.ref, pricing: { version: "1", unit: "invocation", pricePerInvocation: 1n }, escrow: s.escrow.address, chainId: session.domain.chainId, deposit: ether("2"), status: "open" });
      await store.putTicket(session.sessionId, await signPaymentTicket({ account: PAYER_KEY, domain: session.domain, ticket: paymentTicketOf(session, 1n, ether("1.5"), rootOf(1n)) }));
      await store.close();
      const funderKey = toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: 1 }).getHdKey().privateKey!);
      const logFile = path.join(box.dir, "tower.log");
      const snap = await snapshot(s);
      const argv = ["watchtower", "--once", "--json", "--rpc", box.rpc.url, "--escrow", s.escrow.address, "--dispute-manager", s.disputes.address, "--db", db, "--from-block", "0", "--log-file", logFile,
        "--alerts", "--top-up-below", "1eth", "--top-up-to", "2eth", "--top-up-max-per-day", "5eth"];
      const result = await runCli(argv, { IOI_PRIVATE_KEY: funderKey });
      expect(result.code, result.err).to.equal(0);
      expect(result.out).to.include(`Topped up ${session.sessionId} by ${ether("1.5")}`);
      expect(await s.escrow.read.depositOf([session.sessionId])).to.equal(ether("3.5"));
      await expectDeltas(s, snap, { LGAS: { client: -ether("1.5"), escrow: ether("1.5") } });
      const events = readFileSync(logFile, "utf8").trim().split("\n").map((l) => (JSON.parse(l) as { event?: string }).event);
      expect(events).to.include("watchtower.topped_up");
      expect(events).to.not.include("alert.raised");
    });
  });
});
