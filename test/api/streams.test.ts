/**
 * Issue 32 through the control API (decision 0037): `streams.list`, `streams.get` and the `streams` topic, driven by
 * a real milestone stream. A provider node (`ProviderNode` with stream work, its own SQLite store) listens on
 * 127.0.0.1 and lies at tranche 2 (it claims all 12 tests pass on a broken repository); the payer's Flow Controller
 * streams against it over the sealed socket with the payer's store and the stream journal beside it — the store and
 * journal directory the API server reads, as `ioi milestones stream` and `ioi api serve` share one --db. The client
 * side knows only schemas/openrpc.json, fetch and a WebSocket (test/api/schema-client.ts).
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createWalletClient, custom, defineChain, keccak256, parseEther, stringToBytes, type Hex, type PublicClient } from "viem";

import { startApiServer } from "../../channel-client/api/server";
import { SubscriptionHub } from "../../channel-client/api/subscriptions";
import { startUi } from "../../channel-client/ui/server";
import type { Wallet } from "../../channel-client/chain/escrow";
import { claimsOf } from "../../arbitration/lanes/stream-sample";
import { progressProofHash, sampledIndices } from "../../channel-client/core/progress-proof";
import { termsHashOf, type TermsDocumentV4 } from "../../channel-client/core/terms";
import { echoHandler } from "../../channel-client/node/echo-worker";
import { FlowController } from "../../channel-client/node/flow-controller";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { StreamJournal } from "../../channel-client/node/stream-journal";
import { NetworkStreamLink } from "../../channel-client/node/stream-link";
import type { StreamWork } from "../../channel-client/node/stream-service";
import type { Deployment } from "../../channel-client/roles/deployment";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { BROKEN_REPOSITORY, codeStreamTerms, REPOSITORY_BY_TRANCHE, STREAM_MODEL, SUITE } from "../../scripts/examples/code-stream";
import { hardhatAccount } from "../helpers/fixtures";
import { DISPUTE_PARAMS, SYS, systemFixture } from "../helpers/system";
import { openSponsoredChannel } from "../adversarial/helpers";
import { httpCall, WsSession, type Notification } from "./schema-client";

const TOKEN = "s".repeat(16) + "0123456789abcdef0123456789abcdef";
const DEPOSIT = parseEther("1");
const TERMS: TermsDocumentV4 = codeStreamTerms({ windowAfterSettlement: BigInt(DISPUTE_PARAMS.settledDisputeWindow) });
const PRICE = TERMS.pricing.capPerCall;
const secretOf = (tranche: bigint): Hex => keccak256(stringToBytes(`api stream secret ${tranche}`));
const hardhat = defineChain({ id: 31337, name: "Hardhat", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: ["http://127.0.0.1:8545"] } } });

/** Honest work, except at tranche 2: every test claimed passing on a repository whose functions all return null. */
const lyingAt2: StreamWork = async ({ tranche, terms, inputs }) => {
  const lying = tranche === 2n;
  const repository = lying ? BROKEN_REPOSITORY : REPOSITORY_BY_TRANCHE[Number(tranche) - 1]!;
  const tests = await claimsOf({ terms, suite: SUITE, repository, inputs });
  return { repository, tests: lying ? tests.map((t) => ({ ...t, outcome: "pass" as const })) : tests, coverageDeltaBps: 500, lint: "clean" };
};

let rawId = 90_000;
/** A request sent as it is (not checked against the document), answered with an error. */
async function refused(ws: WsSession, method: string, params: unknown): Promise<{ code: number; message: string; data: { reason: string } }> {
  const response = await ws.send({ jsonrpc: "2.0", id: rawId++, method, params });
  expect(response.error, `${method} should be refused`).to.not.equal(undefined);
  return response.error as never;
}

describe("control API: milestone streams (issue 32) — streams.list, streams.get and the streams topic over a real stream with a lying provider", function () {
  this.timeout(180_000);
  let dir: string;
  const cleanup: Array<() => Promise<unknown>> = [];

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-api-streams-"));
  });
  afterEach(async () => {
    while (cleanup.length > 0) await cleanup.pop()!().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it("a stream that pauses on a false claim at tranche 2: the subscription pushes each ticket, proof, sample and the pause as they happen; list and get answer the tranches, proofs, samples, pause and case", async () => {
    const s = await loadFixture(systemFixture);
    const opened = await openSponsoredChannel(s, termsHashOf(TERMS), 71n, DEPOSIT);
    const { payer, provider, domain, sessionId } = opened;
    const providerStore = SqliteStore.open(path.join(dir, "provider.db"));
    const node = await ProviderNode.start({
      account: provider,
      publicClient: s.publicClient as unknown as PublicClient,
      domain,
      store: providerStore,
      pricing: TERMS,
      handler: echoHandler,
      modelSnapshotId: STREAM_MODEL,
      stream: { work: lyingAt2 },
    });
    cleanup.push(async () => {
      await node.stop();
      await providerStore.close();
    });
    const db = path.join(dir, "payer.db");
    const payerStore = SqliteStore.open(db);
    await payerStore.putChannel({ sessionId, role: "payer", ref: opened.opened.ref, pricing: TERMS, escrow: opened.escrow, chainId: domain.chainId, deposit: DEPOSIT, status: "open" });
    const deployment: Deployment = { chainId: 31337, contracts: { GasEscrow: s.escrow.address } };
    const wallet = createWalletClient({ account: hardhatAccount(SYS.payer), chain: hardhat, transport: custom(hre.network.provider) }) as unknown as Wallet;
    const server = await startApiServer({
      context: { deployment, publicClient: s.publicClient as unknown as PublicClient, wallet, store: payerStore, hub: new SubscriptionHub(), gigs: new Set(), streamsDir: StreamJournal.dirOfStore(db) },
      token: TOKEN,
      port: 0,
      pollMs: 50,
      stallMs: 0,
    });
    cleanup.push(async () => {
      await server.close();
      await payerStore.close();
    });
    const ws = await WsSession.open(server.wsUrl, TOKEN);
    cleanup.push(() => ws.close());

    // Before any tranche: the stream is listed, running, nothing paid; its view has no tranches.
    expect(await httpCall(server.url, TOKEN, "streams.list")).to.deep.equal([
      { sessionId, provider: provider.address, state: "running", released: "0", checked: "0", paid: "0", tranchePrice: PRICE.toString(), pause: null, journal: false },
    ]);
    const sub = await ws.call("subscribe", { topic: "streams", filter: { sessionId } });

    // The payer's Flow Controller streams over the socket with the store and journal the API reads.
    const journal = StreamJournal.open(StreamJournal.dirOfStore(db), sessionId);
    const link = await NetworkStreamLink.connect({ account: payer, domain, channel: payerStore.getChannel(sessionId)!, port: node.port, timeoutMs: 60_000 });
    cleanup.push(() => link.close());
    const flow = await FlowController.resume({ terms: TERMS, ref: opened.opened.ref, sessionId, domain, signer: payer, link, suite: SUITE, secretOf, store: payerStore, journal });
    const pause = await flow.run(3n);
    expect(pause).to.deep.include({ reason: "false_claim", tranche: 2n });
    const lie = flow.caseEvidence()!.progress.sample!;

    // What the subscription pushed, in order, all about this session: the controller's own events, one for one.
    await ws.next((n) => n.event.event === "pause");
    const pushed = ws.notifications.filter((n: Notification) => n.subscription === sub);
    expect(pushed.every((n) => n.topic === "streams" && n.event.sessionId === sessionId)).to.equal(true);
    const proof1 = flow.tranches.get(1n)!.result!.proof.proof;
    const proof2 = flow.tranches.get(2n)!.result!.proof.proof;
    const indices1 = sampledIndices({ secret: secretOf(1n), proofHash: progressProofHash(proof1), total: 12, count: TERMS.stream.samplesPerTranche });
    const indices2 = sampledIndices({ secret: secretOf(2n), proofHash: progressProofHash(proof2), total: 12, count: TERMS.stream.samplesPerTranche });
    const expected = flow.events.map((e) => {
      switch (e.kind) {
        case "ticket":
          return `ticket ${e.tranche} ${e.cumulative}`;
        case "proof":
          return `proof ${e.tranche} ${e.proofHash} ${e.passed}/${e.total}`;
        case "sample":
          return `sample ${e.tranche} #${e.index} ${e.claimed}->${e.actual} ${e.status}`;
        case "pause":
          return `pause ${e.tranche} ${e.reason}`;
      }
    });
    const got = pushed.map(({ event: e }) =>
      e.event === "ticket"
        ? `ticket ${e.tranche} ${e.cumulativeAmount}`
        : e.event === "proof"
          ? `proof ${e.tranche} ${e.proofHash} ${e.passed}/${e.total}`
          : e.event === "sample"
            ? `sample ${e.tranche} #${e.index} ${e.claimed}->${e.actual} ${e.status}`
            : `pause ${e.tranche} ${e.reason}`,
    );
    expect(got).to.deep.equal(expected);
    expect(got.slice(0, 2)).to.deep.equal([`ticket 1 ${PRICE}`, `proof 1 ${progressProofHash(proof1)} 9/12`]);
    expect(got[got.length - 1]).to.equal("pause 2 false_claim");
    expect(pushed[pushed.length - 1]!.event).to.deep.include({ reason: "false_claim", claim: lie });
    expect(got.filter((g) => g.startsWith("ticket"))).to.deep.equal([`ticket 1 ${PRICE}`, `ticket 2 ${2n * PRICE}`]); // no ticket 3

    // streams.list: paused at 2 on a false claim, one tranche done, two paid; the state filter narrows it.
    const summary = { sessionId, provider: provider.address, state: "paused", released: "2", checked: "1", paid: (2n * PRICE).toString(), tranchePrice: PRICE.toString(), journal: true };
    const listed = await httpCall(server.url, TOKEN, "streams.list");
    expect(listed).to.have.length(1);
    expect(listed[0]).to.deep.include(summary);
    expect(listed[0].pause).to.deep.include({ tranche: "2", reason: "false_claim" });
    expect(await httpCall(server.url, TOKEN, "streams.list", { state: "paused" })).to.deep.equal(listed);
    expect(await httpCall(server.url, TOKEN, "streams.list", { state: "finished" })).to.deep.equal([]);

    // streams.get: each tranche's ticket, receipt, proof, the drawn claims and their re-run, the pause and the case.
    const view = await httpCall(server.url, TOKEN, "streams.get", { sessionId });
    expect(view).to.deep.include(summary);
    expect(view.terms).to.deep.equal({ trancheSeconds: TERMS.stream.trancheSeconds.toString(), tranchesInFlight: TERMS.stream.tranchesInFlight, samplesPerTranche: TERMS.stream.samplesPerTranche, suiteHash: TERMS.stream.suite.hash, falseClaimPenalty: TERMS.stream.falseClaimPenalty.toString() });
    expect(view.tranches.map((t: { tranche: string; state: string }) => `${t.tranche}:${t.state}`)).to.deep.equal(["1:checked", "2:paused"]);
    const [t1, t2] = view.tranches;
    const steps = payerStore.steps(sessionId);
    expect(t1.ticket).to.deep.equal({ seq: "1", cumulativeAmount: PRICE.toString() });
    expect(t2.ticket).to.deep.equal({ seq: "2", cumulativeAmount: (2n * PRICE).toString() });
    expect(t1.receipt.leaf).to.equal(steps[0]!.leaf);
    expect(t2.receipt.leaf).to.equal(steps[1]!.leaf);
    expect(t1.secret).to.equal(secretOf(1n));
    expect(t2.sampleCommit).to.equal(keccak256(secretOf(2n)));
    expect(t1.proof).to.deep.include({ hash: progressProofHash(proof1), repoStateHash: proof1.repoStateHash, suiteHash: TERMS.stream.suite.hash, passed: 9, total: 12, coverageDeltaBps: 500, lint: "clean" });
    expect(t1.proof.tests).to.have.length(12);
    expect(t1.proof.signature).to.equal(flow.tranches.get(1n)!.result!.proof.signature);
    expect(t2.proof).to.deep.include({ hash: progressProofHash(proof2), passed: 12, total: 12 });
    expect(t1.samples.map((x: { index: number; status: string }) => `${x.index}:${x.status}`)).to.deep.equal(indices1.map((i) => `${i}:true`));
    expect(t2.samples.map((x: { index: number }) => x.index)).to.deep.equal(indices2);
    expect(t2.samples.find((x: { index: number }) => x.index === lie)).to.deep.include({ claimed: "pass", actual: "fail", status: "false" });
    expect(view.pauses).to.deep.equal([{ tranche: "2", reason: "false_claim", detail: flow.state.paused!.detail }]);
    expect(view.case).to.deep.include({ tranche: "2", reason: "false_claim", kind: "false progress claim", proofHash: progressProofHash(proof2), claim: lie });

    // The page (ioi ui --db, the same store) lists the same stream from its journal, without a records directory.
    const ui = await startUi({ store: payerStore, publicClient: s.publicClient as unknown as PublicClient, escrow: opened.escrow, streamsDir: StreamJournal.dirOfStore(db) });
    cleanup.push(() => ui.close());
    const page = (await (await fetch(`${ui.url}/api/streams`)).json()) as { streams: { sessionId: Hex; state: string; released: string; checked: string; paused: { reason: string }; events: { kind: string; tranche: string }[] }[] };
    expect(page.streams).to.have.length(1);
    expect(page.streams[0]).to.deep.include({ sessionId, state: "paused", released: "2", checked: "1" });
    expect(page.streams[0]!.paused).to.deep.include({ tranche: "2", reason: "false_claim" });
    expect(page.streams[0]!.events.map((e) => `${e.kind} ${e.tranche}`)).to.deep.equal(flow.events.map((e) => `${e.kind} ${e.tranche}`));

    // Bad params: one sentence each, a stable reason, the socket still answering.
    const badId = await refused(ws, "streams.get", { sessionId: "0x12" });
    expect(badId.data.reason).to.equal("INVALID_PARAMS");
    expect(badId.message).to.equal('streams.get: params.sessionId must be 0x and 64 hex digits; received "0x12".');
    const unknown = await refused(ws, "streams.get", { sessionId: `0x${"ee".repeat(32)}` });
    expect(unknown.data.reason).to.equal("NOT_FOUND");
    expect(unknown.message).to.equal(`The store holds no session 0x${"ee".repeat(32)}.`);
    const badState = await refused(ws, "streams.list", { state: "stopped" });
    expect(badState.data.reason).to.equal("INVALID_PARAMS");
    expect(badState.message).to.equal('streams.list: params.state must be running, paused or finished; received "stopped".');
    const badTopic = await refused(ws, "subscribe", { topic: "stream" });
    expect(badTopic.data.reason).to.equal("INVALID_PARAMS");
    // A channel on per-call terms is not a stream: it is not listed, and asking for it says why.
    const plain = `0x${"cd".repeat(32)}` as Hex;
    await payerStore.putChannel({ sessionId: plain, role: "payer", ref: opened.opened.ref, pricing: { version: "1", unit: "invocation", pricePerInvocation: 1n }, escrow: opened.escrow, chainId: domain.chainId, deposit: 1n, status: "open" });
    const notStream = await refused(ws, "streams.get", { sessionId: plain });
    expect(notStream.data.reason).to.equal("INVALID_PARAMS");
    expect(notStream.message).to.equal(`Session ${plain} was opened on version 1 terms; it is not a milestone stream (version 4).`);
    expect((await httpCall(server.url, TOKEN, "streams.list")).map((x: { sessionId: Hex }) => x.sessionId)).to.deep.equal([sessionId]);
    expect(await ws.call("unsubscribe", { subscription: sub })).to.equal(true);
  });
});
