/**
 * The commands that read every channel work on a provider fleet's PostgreSQL (issue 31 gaps, decision 0036):
 * `ioi channels`, `ioi export` and `ioi store prune` take `--db postgres://…` through the factory `ioi provider`
 * uses. The readers open it read-only and take no fencing epoch; prune archives a settled channel past every
 * dispute window and deletes it from the database, keeps an open one, and its archive passes the independent
 * checker. Nothing any of them does moves anyone's money.
 *
 * And `ioi provider --advertise` (same issue): a fleet process listening on 0.0.0.0 publishes no endpoint and says
 * so once, naming the flag; with `--advertise` it publishes exactly that address (and its signed offer lists it);
 * a careless value is one sentence and exit 2.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAddress, zeroAddress, type Hex } from "viem";

import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { sessionReceiptHash, signSessionReceipt } from "../../channel-client/core/receipt";
import { termsHashOf, type TermsDocumentV2 } from "../../channel-client/core/terms";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import { PgStore } from "../../channel-client/store/pg-store";
import type { ChannelRecord } from "../../channel-client/store/store";
import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { closeCooperative, ether, expectDeltas, fullBook, mined, openSession, PAYER_KEY, PROVIDER_KEY, signSummary, snapshot } from "../adversarial/helpers";
import { type ChildProcess } from "node:child_process";
import { fetchTermsOffer } from "../../channel-client/node/payer-client";
import { runCli } from "../helpers/cli";
import { escrowFixture } from "../helpers/fixtures";
import { freePort, sharedPostgres } from "../helpers/postgres";
import { startProviderChild } from "../helpers/provider-child";
import { DISPUTE_PARAMS, systemFixture, type System } from "../helpers/system";

const CHECKER = path.join(__dirname, "..", "..", "scripts", "check-export.mjs");
const PRICE = ether("0.1");
const TERMS: TermsDocumentV2 = {
  version: "2",
  pricing: { perInvocation: PRICE, perUnit: null, capPerCall: PRICE },
  models: ["m@1"],
  disputes: { windowAfterSettlement: 3600n, penalties: {}, refundsFromBond: true },
  requiredReceipts: [],
};

/** A provider channel with `count` really signed steps in the fleet's database. */
async function storedChannel(s: System, store: PgStore, nonce: bigint, count: number) {
  const session = await openSession(s, zeroAddress, { terms: { termsHash: termsHashOf(TERMS), nonce } });
  const record: ChannelRecord = { sessionId: session.sessionId, role: "provider", ref: session.ref, pricing: TERMS, escrow: getAddress(s.escrow.address), chainId: Number(s.chainId), deposit: session.deposit, status: "open" };
  await store.putChannel(record);
  const tree = new ReceiptAccumulator();
  let prev: Hex = `0x${"00".repeat(32)}`;
  for (let seq = 1n; seq <= BigInt(count); seq++) {
    const ticket = await signPaymentTicket({ account: PAYER_KEY, domain: session.domain, ticket: { sessionId: session.sessionId, provider: session.ref.terms.provider, termsHash: session.ref.terms.termsHash, seq, cumulativeAmount: PRICE * seq, receiptRoot: tree.root() } });
    const receipt = await signSessionReceipt({ account: PROVIDER_KEY, receipt: { sessionId: session.sessionId, seq, offloadPacketHash: `0x${"01".repeat(32)}`, outputHash: `0x${"02".repeat(32)}`, policyHash: session.ref.terms.policyHash, modelSnapshotId: "m@1", metering: { units: 1n, amount: PRICE }, prevReceiptHash: prev } });
    prev = sessionReceiptHash(receipt.receipt);
    const leaf = receiptLeaf(receipt.receipt, ticket.ticket);
    tree.append(leaf);
    await store.putStep(session.sessionId, { seq, ticket, receipt, leaf }, { leafCount: tree.size, peaks: tree.peaks(), charged: PRICE * seq });
  }
  return { session, tree };
}

describe("ioi channels / export / store prune on a provider fleet's PostgreSQL (issue 31)", function () {
  this.timeout(180_000);
  let rpc: EmbeddedRpc | undefined;
  let dir: string;
  let url: string;
  before(async function () {
    this.timeout(180_000);
    await sharedPostgres();
    rpc = await serveEmbeddedNetwork(hre);
  });
  after(async () => {
    await rpc?.close();
  });
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "ioi-fleet-cli-"));
    url = await (await sharedPostgres()).createDatabase();
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("lists and exports read-only without taking an epoch; prunes the settled channel past its windows into a verified archive and keeps the open one — no balance moves", async () => {
    const s = await loadFixture(systemFixture);
    const seed = await PgStore.open(url, { mode: "all", poolSize: 2 });
    let a: Awaited<ReturnType<typeof storedChannel>>;
    let b: Awaited<ReturnType<typeof storedChannel>>;
    try {
      a = await storedChannel(s, seed, 41n, 3);
      b = await storedChannel(s, seed, 42n, 2);
      const summary = await signSummary(a.session, 3n, PRICE * 3n, { root: a.tree.root() });
      await mined(s, closeCooperative(a.session, summary, s.watcher));
      await seed.updateChannel(a.session.sessionId, { status: "settled" });
    } finally {
      await seed.close();
    }
    const snap = await snapshot(s, fullBook(s));
    const chain = ["--rpc", rpc!.url, "--escrow", s.escrow.address];

    const listed = await runCli(["channels", "--json", "--db", url, "--rpc", rpc!.url]);
    expect(listed.code, listed.err).to.equal(0);
    const list = JSON.parse(listed.out.split("\n").pop()!) as { channels: { sessionId: string; phase: string; seq: string; paid: string }[] };
    expect(list.channels.map((c) => [c.sessionId, c.phase, c.seq, c.paid])).to.deep.equal([
      [a.session.sessionId, "Settled", "3", (PRICE * 3n).toString()],
      [b.session.sessionId, "Open", "2", (PRICE * 2n).toString()],
    ]);

    const exported = await runCli(["export", "--session", a.session.sessionId, "--db", url, ...chain]);
    expect(exported.code, exported.err).to.equal(0);
    const lines = exported.out.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.at(-1)).to.deep.include({ type: "root", receipts: "3", root: a.tree.root(), matches: true });

    // The readers took no fencing epoch and wrote nothing.
    const view = await PgStore.open(url, { mode: "all", poolSize: 1, readOnly: true });
    try {
      expect(await view.query("SELECT * FROM channel_owners")).to.deep.equal([]);
    } finally {
      await view.close();
    }

    const archiveDir = path.join(dir, "archive");
    const prune = ["store", "prune", "--json", "--db", url, "--archive-dir", archiveDir, "--rpc", rpc!.url, "--dispute-manager", s.disputes.address];
    let result = await runCli(prune);
    expect(result.code, result.err).to.equal(0);
    expect(result.out).to.match(new RegExp(`Kept ${a.session.sessionId}: a case may still open on it until \\d+`));
    await time.increase(Number(DISPUTE_PARAMS.settledDisputeWindow) + 1);
    result = await runCli(prune);
    expect(result.code, result.err).to.equal(0);
    const archive = path.join(archiveDir, `${a.session.sessionId}.jsonl`);
    const json = JSON.parse(result.out.split("\n").pop()!) as { channels: unknown[] };
    expect(json.channels).to.deep.equal([
      { sessionId: a.session.sessionId, action: "pruned", archive, receipts: 3 },
      { sessionId: b.session.sessionId, action: "kept", reason: "it is Open on-chain, not Settled" },
    ]);
    expect(execFileSync(process.execPath, [CHECKER, archive], { encoding: "utf8" })).to.match(/^export checked/);

    const after = await PgStore.open(url, { mode: "all", poolSize: 1, readOnly: true });
    try {
      expect(after.listChannels().map((c) => c.sessionId)).to.deep.equal([b.session.sessionId]);
      expect(after.prunedChannel(a.session.sessionId)?.archive).to.equal(archive);
      expect(after.steps(b.session.sessionId)).to.have.length(2);
    } finally {
      await after.close();
    }
    await expectDeltas(s, snap, {});
  });

  it("ioi provider on 0.0.0.0 publishes no endpoint without --advertise and says so; with it, exactly the advertised address", async function () {
    const fx = await loadFixture(escrowFixture);
    const children = new Set<ChildProcess>();
    const KEY = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6" as const;
    const start = (extraArgs: string[]) => startProviderChild({ rpcUrl: rpc!.url, escrow: fx.escrow.address, db: url, price: 1000n, key: KEY, children, startDeadlineMs: 60_000, extraArgs });
    try {
      const silent = await start(["--host", "0.0.0.0", "--allow-public"]);
      const port = await freePort();
      const advertised = await start(["--host", "0.0.0.0", "--allow-public", "--port", String(port), "--advertise", `127.0.0.1:${port}`]);
      expect(advertised.port).to.equal(port);
      const warnings = silent.stderr().split("\n").filter((line) => line.includes("publishes no endpoint"));
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.include("listening on 0.0.0.0").and.to.include("--advertise HOST:PORT");
      expect(advertised.stderr()).to.not.include("publishes no endpoint");
      const view = await PgStore.open(url, { mode: "all", poolSize: 1, readOnly: true });
      try {
        const rows = await view.query<{ endpoint: string }>("SELECT endpoint FROM endpoints");
        expect(rows.map((r) => r.endpoint)).to.deep.equal([`127.0.0.1:${port}`]);
      } finally {
        await view.close();
      }
      const offer = await fetchTermsOffer({ account: fx.payer, domain: fx.domain, provider: fx.provider.address, port: silent.port });
      expect(offer.endpoints).to.deep.equal([`127.0.0.1:${port}`]);
    } finally {
      for (const child of children) child.kill("SIGKILL");
      await Promise.all([...children].map((child) => new Promise((r) => child.once("exit", r))));
    }
  });

  it("refuses a careless --advertise in one sentence with exit 2, before the chain is reached", async () => {
    const env = { IOI_PRIVATE_KEY: "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6" };
    const base = ["provider", "--price", "1", "--rpc", "http://127.0.0.1:1"];
    for (const [args, says] of [
      [["--db", url, "--host", "0.0.0.0", "--allow-public", "--advertise", "0.0.0.0:7000"], "--advertise 0.0.0.0:7000 is a wildcard address no payer can dial"],
      [["--db", url, "--advertise", "nope"], "--advertise must be HOST:PORT"],
      [["--db", url, "--advertise", "127.0.0.1:7000,,127.0.0.1:7001"], "--advertise has an empty entry"],
      [["--db", path.join(dir, "p.db"), "--advertise", "127.0.0.1:7000"], "--advertise goes with --db postgres://"],
    ] as const) {
      const result = await runCli([...base, ...args], env);
      expect(result.code, `${args.join(" ")}: ${result.err}`).to.equal(2);
      expect(result.err).to.include(says);
      expect(result.err).to.not.match(/\n\s+at /);
    }
  });

  it("says in one sentence when the PostgreSQL store cannot be reached", async () => {
    const result = await runCli(["channels", "--db", "postgres://nobody:x@127.0.0.1:1/none"]);
    expect(result.code).to.equal(2);
    expect(result.err).to.contain("ioi channels failed — UsageError: Cannot use the PostgreSQL store: Cannot open the channel store at postgres://nobody:***@127.0.0.1:1/none.");
    expect(result.err).to.not.contain(":x@"); // the password is never printed
    expect(result.err).to.not.match(/\n\s+at /);
  });
});
