/**
 * Issue 29 item 4, finished: alert and top-up state survives a restart (`channel-client/node/alert-state.ts`), and the
 * arbitrator daemon's own warnings are alerts (log, Prometheus, webhook).
 *
 *   - A restarted emitter does not raise again what was active (no second webhook POST, no counter increment),
 *     shows it in the gauge at once, and clears it exactly once.
 *   - A restarted watchtower still counts the day's top-ups against its daily cap (exact deposits; without the
 *     state the second process would deposit the whole amount again).
 *   - `ioi arbitrator serve --once --alert-webhook URL` for a key that is neither staked nor pinned POSTs
 *     `bond_low` and `runtime_pin`; run again on the same state, it POSTs nothing.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { getAddress, toHex, type Address, type Hex, type PublicClient } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { serveEmbeddedNetwork } from "../../scripts/embedded-rpc";
import type { Wallet } from "../../channel-client/chain/escrow";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import { AlertState, AlertStateError } from "../../channel-client/node/alert-state";
import { AlertEmitter, type Alert } from "../../channel-client/node/alerts";
import { NodeMetrics } from "../../channel-client/node/metrics";
import { Watchtower } from "../../channel-client/node/watchtower";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { ether, openSession, PAYER_KEY, paymentTicketOf, rootOf, type Session } from "../adversarial/helpers";
import { runCli } from "../helpers/cli";
import { HARDHAT_MNEMONIC } from "../helpers/fixtures";
import { systemFixture, unsealedSystemFixture } from "../helpers/system";

/** A loopback HTTP server that keeps every JSON body POSTed to it. */
async function webhookReceiver(): Promise<{ url: string; bodies: { event: string; alert: Alert }[]; close: () => Promise<void> }> {
  const bodies: { event: string; alert: Alert }[] = [];
  const server: Server = createServer((request: IncomingMessage, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    request.on("end", () => {
      bodies.push(JSON.parse(text) as { event: string; alert: Alert });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/alerts`,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const ALERT: Alert = { key: "bond_low:provider:0xabc", kind: "bond_low", message: "bond 1 is below 100", details: { role: "provider", account: "0xabc", active: "1", minimum: "100" } };
const gauge = async (metrics: NodeMetrics, kind: string) => (await metrics.alertsActive.get()).values.find((v) => v.labels.kind === kind)!.value;
const raisedCount = async (metrics: NodeMetrics) => (await metrics.alertsRaised.get()).values.reduce((n, v) => n + v.value, 0);

describe("issue 29 item 4: alert and top-up state across a restart; the arbitrator daemon's warnings as alerts", function () {
  this.timeout(170_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-alert-restart-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("a restarted emitter keeps an active alert without raising it again, and clears it once", async () => {
    const hook = await webhookReceiver();
    const file = path.join(dir, "node.db.alerts.json");
    try {
      const first = new AlertEmitter({ webhook: new URL(hook.url), metrics: new NodeMetrics({ defaultMetrics: false }), state: AlertState.open(file) });
      await first.update([ALERT]);
      expect(hook.bodies.map((b) => b.event)).to.deep.equal(["alert.raised"]);
      expect(existsSync(file)).to.equal(true);

      // The restart: a new process reads the same file.
      const metrics = new NodeMetrics({ defaultMetrics: false });
      const second = new AlertEmitter({ webhook: new URL(hook.url), metrics, state: AlertState.open(file) });
      expect(second.active.map((a) => a.key)).to.deep.equal([ALERT.key]);
      expect(await gauge(metrics, "bond_low")).to.equal(1);
      expect(await second.update([ALERT])).to.deep.equal({ raised: [], cleared: [] });
      expect(hook.bodies).to.have.length(1); // not POSTed again
      expect(await raisedCount(metrics)).to.equal(0);
      await second.update([]);
      expect(hook.bodies.map((b) => b.event)).to.deep.equal(["alert.raised", "alert.cleared"]);
      expect(await gauge(metrics, "bond_low")).to.equal(0);
      expect(new AlertEmitter({ state: AlertState.open(file) }).active).to.deep.equal([]);
    } finally {
      await hook.close();
    }
  });

  it("an unreadable state file is one sentence, not a crash or a silent reset", () => {
    const file = path.join(dir, "bad.alerts.json");
    writeFileSync(file, "{ torn");
    expect(() => AlertState.open(file)).to.throw(AlertStateError, `The alert state file ${file} is not readable JSON; move it away to start afresh.`);
    writeFileSync(file, JSON.stringify({ version: 9 }));
    expect(() => AlertState.open(file)).to.throw(AlertStateError, "is not an ioi alert state (version 1)");
  });

  it("a restarted watchtower still counts the day's top-ups against its cap: exact deposits", async () => {
    const s = await loadFixture(unsealedSystemFixture);
    const store = SqliteStore.open(path.join(dir, "payer.db"));
    const stateFile = path.join(dir, "payer.db.alerts.json");
    try {
      const fromBlock = await s.publicClient.getBlockNumber();
      const session: Session = await openSession(s, s.token.address, { deposit: ether("2") });
      await store.putChannel({ sessionId: session.sessionId, role: "payer", ref: session.ref, pricing: { version: "1", unit: "invocation", pricePerInvocation: 1n }, escrow: s.escrow.address, chainId: session.domain.chainId, deposit: ether("2"), status: "open" });
      const tower = (state: AlertState) =>
        new Watchtower({
          publicClient: s.publicClient as unknown as PublicClient,
          wallet: s.client as unknown as Wallet, // the funder named in the terms
          escrow: s.escrow.address,
          store,
          fromBlock,
          topUp: { below: ether("1"), to: ether("2"), maxPerDay: ether("1.5") },
          alertState: state,
        });
      const ticket = async (seq: bigint, amount: bigint) =>
        store.putTicket(session.sessionId, await signPaymentTicket({ account: PAYER_KEY, domain: session.domain, ticket: paymentTicketOf(session, seq, amount, rootOf(seq)) }));

      await ticket(1n, ether("1.2"));
      await tower(AlertState.open(stateFile)).runOnce(); // 0.8 remaining: back to 2 (1.2 of the day's 1.5)
      expect(await s.escrow.read.depositOf([session.sessionId])).to.equal(ether("3.2"));

      // The restart: another process, the same state file. 0.6 remaining wants 1.4; the day allows 0.3 more.
      await ticket(2n, ether("2.6"));
      const restarted = tower(AlertState.open(stateFile));
      expect(restarted.topUps.get(s.token.address.toLowerCase())!.map((r) => r.amount)).to.deep.equal([ether("1.2")]);
      await restarted.runOnce();
      await restarted.runOnce(); // the cap is spent: nothing more
      expect(await s.escrow.read.depositOf([session.sessionId])).to.equal(ether("3.5"));
      const saved = JSON.parse(readFileSync(stateFile, "utf8")) as { topUps: Record<string, { amount: { $n: string } }[]> };
      expect(saved.topUps[s.token.address.toLowerCase()]!.map((r) => r.amount.$n)).to.deep.equal([ether("1.2").toString(), ether("0.3").toString()]);
    } finally {
      await store.close();
    }
  });

  it("ioi arbitrator serve --alert-webhook: a key neither staked nor pinned raises bond_low and runtime_pin once, not again after a restart", async () => {
    const s = await loadFixture(systemFixture);
    const rpc = await serveEmbeddedNetwork(hre);
    const hook = await webhookReceiver();
    try {
      const index = 9; // a funded Hardhat account that is no arbitrator
      const key = toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) as Hex;
      const me: Address = getAddress(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).address);
      const argv = ["arbitrator", "serve", "--once", "--json", "--rpc", rpc.url, "--dispute-manager", s.disputes.address, "--state-dir", path.join(dir, "arbitrator"), "--alert-webhook", hook.url];
      const first = await runCli(argv, { IOI_PRIVATE_KEY: key });
      expect(first.code, first.err).to.equal(0);
      expect(hook.bodies.map((b) => [b.event, b.alert.kind, b.alert.key]).sort()).to.deep.equal([
        ["alert.raised", "bond_low", `bond_low:arbitrator:${me.toLowerCase()}`],
        ["alert.raised", "runtime_pin", `runtime_pin:arbitrator:${me.toLowerCase()}`],
      ]);
      const stateFile = path.join(dir, "arbitrator", `arbitrator-${me.toLowerCase()}.json`);
      expect(Object.keys((JSON.parse(readFileSync(stateFile, "utf8")) as { warnings: Record<string, string> }).warnings).sort()).to.deep.equal(["RUNTIME_PIN_MISMATCH", "STAKE_BELOW_MINIMUM"]);
      // The restart: the same state directory. The warnings still stand: nothing is logged or POSTed again.
      const second = await runCli(argv, { IOI_PRIVATE_KEY: key });
      expect(second.code, second.err).to.equal(0);
      expect(hook.bodies).to.have.length(2);
      const kept = JSON.parse(readFileSync(path.join(dir, "arbitrator", "alerts.json"), "utf8")) as { alerts: Alert[] };
      expect(kept.alerts.map((a) => a.kind).sort()).to.deep.equal(["bond_low", "runtime_pin"]);
    } finally {
      await hook.close();
      await rpc.close();
    }
  });
});
