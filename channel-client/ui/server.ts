/**
 * `ioi ui`: a local web page for the operator of a node, a payer, a client or an arbitrator (issue 16),
 * served by fastify on 127.0.0.1 by default. Everything it shows comes from the node's store and the chain;
 * its scripts (the page, uPlot, @noble/hashes' keccak) are served from this package and node_modules —
 * no CDN, no network. Read-only unless started with `actions` (then POST /api/actions/* may close, challenge
 * or finalise a channel of the store with the node's own key).
 *
 * Who may call it: anyone who can reach the port, and any web page the operator's browser opens. That is
 * why it binds loopback by default, answers only requests whose Host is the address it serves (a DNS
 * rebinding page names another host), serves only a fixed list of files, checks every id against a strict
 * pattern, changes nothing unless allowed, and even then takes an action only with a per-start token in the
 * `x-ioi-token` header: a page of another origin can neither read the token (no CORS headers are sent) nor
 * send a custom header without a preflight this server never approves.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";

import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import type { Address, Hex, PublicClient } from "viem";

import { ReceiptAccumulator } from "../core/accumulator";
import { challengeClose, claimableOf, claimPayout, closeUnilateral, finalizeClose, type Wallet } from "../chain/escrow";
import type { ChannelStore } from "../store/store";
import { listCases, listChannels, listGigs, listReceipts, listStreams, loadRecords, onChainRoot, storeStreams, upipRecord, type PageReading } from "./data";
import { PACKAGE_ROOT } from "../core/package-root";
import { unitOf } from "./money";
import { explorerFor, readHealth, txLink, type HeadWatch } from "./health";

export type UiParameters = {
  store: ChannelStore;
  publicClient: PublicClient;
  escrow: Address;
  disputeManager?: Address;
  gigEscrow?: Address;
  /**
   * Where and how cases and gigs are read: from `fromBlock` (the deployment block; default 0) in pages of
   * `maxBlockRange` blocks with back-off (`channel-client/chain/logs.ts`).
   */
  reading?: PageReading;
  /** Directory of challenge packages and resolutions (JSON) shown with their cases. */
  recordsDir?: string;
  /** The stream journals of the store (`<db>.streams/`): its milestone streams are listed live, as the control API's streams.get shows them. */
  streamsDir?: string;
  /** `bench/results.json`. */
  benchFile?: string;
  /** The provider node's `/metrics` URL, for live latency. */
  metricsUrl?: string;
  host?: string;
  port?: number;
  /** Allow close, challenge and finalize with this wallet; without it the page is read-only. */
  actions?: { wallet: Wallet };
  /** How often the live figures are sampled (ms). */
  sampleMs?: number;
  /** The acting key whose wallet, bonds and claimable payouts the health panel shows (default: the actions wallet's). */
  account?: Address;
  /** Block explorer base URL; default IOI_EXPLORER_URL, else the table by chain id in `./health.ts` (none for devnets). */
  explorerUrl?: string;
  /** Health alerts: a channel window closing within this many minutes (default 60). */
  windowAlertMinutes?: number;
  /** Health alerts: the chain counts as stopped after this many seconds without a new head (default 120). */
  stallSeconds?: number;
};

export type UiServer = { url: string; port: number; app: FastifyInstance; close: () => Promise<void> };

const ROOT = PACKAGE_ROOT;
/** The page's static files ship as sources (`channel-client/ui/public`), next to the built server or not. */
const PUBLIC = path.join(PACKAGE_ROOT, "channel-client", "ui", "public");
const SESSION_ID = /^0x[0-9a-fA-F]{64}$/;

/** The only files served, by URL path: [file, content type]. */
const STATIC: Record<string, [string, string]> = {
  "/": [path.join(PUBLIC, "index.html"), "text/html; charset=utf-8"],
  "/app.js": [path.join(PUBLIC, "app.js"), "text/javascript; charset=utf-8"],
  "/merkle.js": [path.join(PUBLIC, "merkle.js"), "text/javascript; charset=utf-8"],
  "/app.css": [path.join(PUBLIC, "app.css"), "text/css; charset=utf-8"],
  "/vendor/uplot.js": [require.resolve("uplot/dist/uPlot.iife.min.js"), "text/javascript; charset=utf-8"],
  "/vendor/uplot.css": [require.resolve("uplot/dist/uPlot.min.css"), "text/css; charset=utf-8"],
  // @noble/hashes is ESM with relative imports: the browser loads these three as modules.
  "/vendor/noble-hashes/sha3.js": [path.join(ROOT, "node_modules/@noble/hashes/sha3.js"), "text/javascript; charset=utf-8"],
  "/vendor/noble-hashes/utils.js": [path.join(ROOT, "node_modules/@noble/hashes/utils.js"), "text/javascript; charset=utf-8"],
  "/vendor/noble-hashes/_u64.js": [path.join(ROOT, "node_modules/@noble/hashes/_u64.js"), "text/javascript; charset=utf-8"],
};

/** Live figures: tickets/s from the store's receipt counts, latency from the node's histograms. */
type LivePoint = { t: number; ticketsPerSecond: number; verifyMs: number | null; storeMs: number | null; perChannel: Record<string, number> };

function histogramTotals(text: string, name: string): { sum: number; count: number } | undefined {
  const value = (suffix: string) => {
    const line = text.split("\n").find((l) => l.startsWith(`${name}_${suffix} `));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
  };
  const sum = value("sum");
  const count = value("count");
  return sum === undefined || count === undefined ? undefined : { sum, count };
}

export async function startUi(p: UiParameters): Promise<UiServer> {
  // A bad IOI_EXPLORER_URL stops the start with one sentence rather than a broken link later.
  const explorer = explorerFor(await p.publicClient.getChainId(), p.explorerUrl ?? process.env.IOI_EXPLORER_URL);
  const headWatch: { current: HeadWatch } = { current: undefined };
  const files = new Map(Object.entries(STATIC).map(([url, [file, type]]) => [url, { body: readFileSync(file), type }]));
  const app = Fastify({ logger: false, bodyLimit: 1024 });
  const token = randomBytes(16).toString("hex");
  let allowedHosts = new Set<string>();
  app.addHook("onRequest", async (request, reply) => {
    if (!allowedHosts.has((request.headers.host ?? "").toLowerCase())) {
      return reply.code(421).send({ error: `This page answers only to ${[...allowedHosts].join(" or ")}; the request named host "${String(request.headers.host).slice(0, 80)}".` });
    }
  });
  const live: LivePoint[] = [];
  let previous: { t: number; counts: Map<string, number>; verify?: { sum: number; count: number }; store?: { sum: number; count: number } } | undefined;

  const sample = async () => {
    const t = Date.now();
    const counts = new Map(p.store.listChannels().map((c) => [c.sessionId, p.store.receiptCount(c.sessionId)] as const));
    let verify: { sum: number; count: number } | undefined;
    let store: { sum: number; count: number } | undefined;
    if (p.metricsUrl) {
      try {
        const text = await (await fetch(p.metricsUrl, { signal: AbortSignal.timeout(2000) })).text();
        verify = histogramTotals(text, "ioi_ticket_verify_seconds");
        store = histogramTotals(text, "ioi_store_seconds");
      } catch {
        // the node is down or not started with --metrics: no latency this time
      }
    }
    if (previous) {
      const seconds = (t - previous.t) / 1000;
      const perChannel: Record<string, number> = {};
      let total = 0;
      for (const [id, n] of counts) {
        const rate = Math.max(0, n - (previous.counts.get(id) ?? n)) / seconds;
        perChannel[id] = Math.round(rate * 10) / 10;
        total += rate;
      }
      const avgMs = (now?: { sum: number; count: number }, before?: { sum: number; count: number }) =>
        now && before && now.count > before.count ? Math.round(((now.sum - before.sum) / (now.count - before.count)) * 1e6) / 1e3 : null;
      live.push({ t: t / 1000, ticketsPerSecond: Math.round(total * 10) / 10, verifyMs: avgMs(verify, previous.verify), storeMs: avgMs(store, previous.store), perChannel });
      if (live.length > 300) live.shift();
    }
    previous = { t, counts, verify, store };
  };
  let sampling = Promise.resolve();
  const timer = setInterval(() => {
    sampling = sampling.then(sample).catch(() => undefined);
  }, p.sampleMs ?? 1000);

  const bad = (reply: FastifyReply, code: number, message: string) => reply.code(code).send({ error: message });
  const sessionParam = (value: string, reply: FastifyReply): Hex | undefined => {
    if (!SESSION_ID.test(value)) {
      void bad(reply, 400, `A session id is 0x and 64 hex digits; received "${value.slice(0, 80)}".`);
      return undefined;
    }
    if (!p.store.getChannel(value as Hex)) {
      void bad(reply, 404, `The store holds no channel ${value}.`);
      return undefined;
    }
    return value as Hex;
  };

  for (const [url, file] of files) {
    app.get(url, async (_request, reply) => reply.header("content-type", file.type).header("cache-control", "no-store").send(file.body));
  }

  app.get("/api/overview", async () => ({
    escrow: p.escrow,
    disputeManager: p.disputeManager ?? null,
    gigEscrow: p.gigEscrow ?? null,
    chainId: await p.publicClient.getChainId(),
    block: (await p.publicClient.getBlockNumber()).toString(),
    actions: p.actions !== undefined,
    ...(p.actions ? { token } : {}),
  }));

  app.get("/api/health", async () =>
    readHealth(
      {
        store: p.store,
        publicClient: p.publicClient,
        escrow: p.escrow,
        disputeManager: p.disputeManager,
        gigEscrow: p.gigEscrow,
        account: p.account ?? p.actions?.wallet.account.address,
        metricsUrl: p.metricsUrl,
        explorer,
        windowAlertMinutes: p.windowAlertMinutes,
        stallSeconds: p.stallSeconds,
      },
      headWatch,
    ),
  );

  // Transactions link to the explorer when the chain has one (none on a devnet): the server makes the URLs.
  app.get("/api/channels", async () => ({
    channels: (await listChannels(p.store, p.publicClient, p.escrow)).map((c) => (c.settlement ? { ...c, settlement: { ...c.settlement, link: txLink(explorer, c.settlement.transactionHash) } } : c)),
  }));

  app.get<{ Params: { id: string }; Querystring: { offset?: string; limit?: string } }>("/api/channels/:id/receipts", async (request, reply) => {
    const sessionId = sessionParam(request.params.id, reply);
    if (!sessionId) return reply;
    const offset = Math.max(0, Number.parseInt(request.query.offset ?? "0", 10) || 0);
    const limit = Math.min(500, Math.max(1, Number.parseInt(request.query.limit ?? "50", 10) || 50));
    return listReceipts(p.store, sessionId, offset, limit, await unitOf(p.publicClient, p.store.getChannel(sessionId)!.ref.terms.asset));
  });

  // What the browser needs to prove a receipt on its own: every leaf up to the count the chain's root
  // covers, and that root. The page builds the tree and the proof and checks it with its own keccak.
  app.get<{ Params: { id: string } }>("/api/channels/:id/proof-data", async (request, reply) => {
    const sessionId = sessionParam(request.params.id, reply);
    if (!sessionId) return reply;
    const channel = p.store.getChannel(sessionId)!;
    const leaves = p.store.leaves(sessionId);
    const recorded = await onChainRoot(p.publicClient, p.escrow, sessionId, channel.ref.openedAt, p.reading);
    let covered: number | null = null;
    if (recorded) {
      const tree = ReceiptAccumulator.fromLeaves(leaves);
      for (let size = tree.size; size >= 0 && covered === null; size--) if (tree.prefixRoot(size) === recorded.root) covered = size;
    }
    return { sessionId, onChain: recorded, leaves: covered === null ? leaves : leaves.slice(0, covered), coveredReceipts: covered, totalReceipts: leaves.length };
  });

  app.get("/api/live", async () => ({ points: live, metrics: p.metricsUrl !== undefined }));

  const records = () => loadRecords(p.recordsDir);
  app.get("/api/cases", async () => {
    if (!p.disputeManager) return { cases: [], gigs: [], note: "No DisputeManager address: start ioi ui with --dispute-manager or a deployment record." };
    const cases = (await listCases(p.publicClient, p.disputeManager, records(), p.reading)).map((c) => (c.resolved ? { ...c, resolved: { ...c.resolved, link: txLink(explorer, c.resolved.transactionHash) } } : c));
    const gigs = p.gigEscrow ? await listGigs(p.publicClient, p.gigEscrow, cases, p.reading) : [];
    return { cases, gigs };
  });

  // Stream records of the records directory, then the store's own streams (journal and store) that have none.
  app.get("/api/streams", async () => {
    const recorded = listStreams(records());
    const seen = new Set(recorded.map((r) => r.sessionId.toLowerCase()));
    return { streams: [...recorded, ...(p.streamsDir ? storeStreams(p.store, p.streamsDir).filter((r) => !seen.has((r.sessionId as string).toLowerCase())) : [])] };
  });

  app.get<{ Params: { name: string } }>("/api/records/:name", async (request, reply) => {
    const known = records();
    if (!known.files.has(request.params.name) || !p.recordsDir) return bad(reply, 404, `No record named "${request.params.name.slice(0, 80)}".`);
    return reply
      .header("content-type", "application/json")
      .header("content-disposition", `attachment; filename="${request.params.name}"`)
      .send(readFileSync(path.join(p.recordsDir, request.params.name)));
  });

  app.get<{ Params: { id: string; i: string } }>("/api/cases/:id/upip/:i", async (request, reply) => {
    if (!SESSION_ID.test(request.params.id) || !/^\d{1,3}$/.test(request.params.i)) return bad(reply, 400, "A case id is 0x and 64 hex digits and a record index a small number.");
    const record = upipRecord(records(), request.params.id as Hex, Number(request.params.i));
    if (record === undefined) return bad(reply, 404, `No UPIP record ${request.params.i} for case ${request.params.id}.`);
    return reply.header("content-disposition", `attachment; filename="upip-${request.params.id.slice(2, 14)}-${request.params.i}.json"`).send(record);
  });

  app.get("/api/bench", async (_request, reply) => {
    try {
      return JSON.parse(readFileSync(p.benchFile ?? path.join(ROOT, "bench/results.json"), "utf8")) as unknown;
    } catch {
      return bad(reply, 404, "No bench results: run npm run bench first.");
    }
  });

  // Actions: only when allowed, only on channels of this store, with the node's own wallet.
  app.post<{ Params: { action: string; id: string } }>("/api/actions/:action/:id", async (request, reply) => {
    if (!p.actions) return bad(reply, 403, "This page is read-only; start ioi ui with --allow-actions to close, challenge, finalize or claim.");
    if (request.headers["x-ioi-token"] !== token) return bad(reply, 403, "An action needs the page's token in the x-ioi-token header; reload the page.");
    const sessionId = sessionParam(request.params.id, reply);
    if (!sessionId) return reply;
    const { wallet } = p.actions;
    const channel = p.store.getChannel(sessionId)!;
    const closing = p.store.getClosing(sessionId);
    const base = { wallet, publicClient: p.publicClient, escrow: p.escrow, ref: channel.ref };
    try {
      switch (request.params.action) {
        case "close": {
          const closed = await closeUnilateral({ ...base, ticket: p.store.latestTicket(sessionId) });
          await p.store.putClosing(sessionId, { state: closed.state, finalizesAt: closed.finalizesAt, closer: wallet.account.address, txHash: closed.hash });
          await p.store.updateChannel(sessionId, { status: "closing" });
          return { done: "close", txHash: closed.hash, seq: closed.state.seq.toString(), finalizesAt: closed.finalizesAt.toString() };
        }
        case "challenge": {
          const newest = p.store.latestTicket(sessionId);
          // The recorded close moves only to a ticket that pays more (decision 0005).
          if (!closing || !newest || newest.ticket.cumulativeAmount <= closing.state.amount) {
            return bad(reply, 409, "Nothing to challenge: the store holds no ticket paying more than the recorded close.");
          }
          const challenged = await challengeClose({ ...base, recorded: closing.state, ticket: newest });
          await p.store.putClosing(sessionId, { state: challenged.state, finalizesAt: challenged.finalizesAt, closer: wallet.account.address, txHash: challenged.hash });
          return { done: "challenge", txHash: challenged.hash, seq: challenged.state.seq.toString() };
        }
        case "finalize": {
          if (!closing) return bad(reply, 409, "The channel is not closing; there is nothing to finalize.");
          const settled = await finalizeClose({ ...base, recorded: closing.state });
          await p.store.updateChannel(sessionId, { status: "settled" });
          return { done: "finalize", txHash: settled.hash, paidToProvider: settled.paidToProvider.toString(), refundedToFunder: settled.refundedToFunder.toString() };
        }
        case "claim": {
          // A payout the channel's token refused earlier (decision 0016), owed to this wallet in the channel's asset.
          const asset = channel.ref.terms.asset;
          const owed = await claimableOf({ publicClient: p.publicClient, escrow: p.escrow, asset, account: wallet.account.address });
          if (owed === 0n) return bad(reply, 409, `Nothing to claim: the GasEscrow owes ${wallet.account.address} nothing in this channel's asset.`);
          const claimed = await claimPayout({ wallet, publicClient: p.publicClient, escrow: p.escrow, asset });
          return { done: "claim", txHash: claimed.hash, asset, amount: claimed.amount.toString() };
        }
        default:
          return bad(reply, 404, `Unknown action "${request.params.action.slice(0, 40)}"; the actions are close, challenge, finalize and claim.`);
      }
    } catch (error) {
      const e = error as { shortMessage?: string; message?: string };
      return bad(reply, 409, (e.shortMessage ?? e.message ?? String(error)).split("\n")[0]!);
    }
  });

  const address = await app.listen({ host: p.host ?? "127.0.0.1", port: p.port ?? 0 });
  const port = Number(new URL(address).port);
  const host = p.host ?? "127.0.0.1";
  allowedHosts = new Set([`${host.includes(":") ? `[${host}]` : host}:${port}`.toLowerCase(), ...(host === "127.0.0.1" || host === "::1" ? [`localhost:${port}`] : [])]);
  return {
    url: `http://${(p.host ?? "127.0.0.1").includes(":") ? `[${p.host}]` : (p.host ?? "127.0.0.1")}:${port}`,
    port,
    app,
    close: async () => {
      clearInterval(timer);
      await sampling;
      await app.close();
    },
  };
}
