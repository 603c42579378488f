// The operator's page: polls the local ioi ui server (same origin only) and draws with uPlot.
import { buildLevels, bytesToHex, leafOf, proofOf, rootOf, verifyProof, hexToBytes } from "/merkle.js";

const $ = (selector) => document.querySelector(selector);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else if (k === "onclick") node.addEventListener("click", v);
    else node[k] = v;
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
};
const short = (hex) => (hex ? `${hex.slice(0, 10)}…${hex.slice(-6)}` : "–");
/**
 * An amount as the server sends it ({ amount, symbol, decimals, text }): the text in the asset's own unit with
 * adaptive precision (channel-client/core/format.ts, shared with the CLI), the exact base units on hover. The page never
 * formats money itself, so it cannot round a micro-payment to "0 ETH" or name a bond's unit wrongly.
 */
const money = (m, classes = "num") => el("span", { class: `money ${classes}`, title: `${m.amount} base units of ${m.symbol}`, "data-amount": m.amount, "data-symbol": m.symbol }, m.text);
const duration = (s) => (s === null ? "–" : s === 0 ? "ended" : s >= 3600 ? `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min` : s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`);
/** A time span in seconds; 0 is "0 s", not "ended". */
const ago = (s) => (s === 0 ? "0 s" : duration(s));
async function api(path, options) {
  const response = await fetch(path, options);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error ?? `${path}: HTTP ${response.status}`);
  return body;
}

// --- tabs ---
for (const button of document.querySelectorAll("nav button")) {
  button.addEventListener("click", () => {
    for (const b of document.querySelectorAll("nav button")) b.classList.toggle("active", b === button);
    for (const tab of ["channels", "cases", "health", "bench"]) $(`#tab-${tab}`).hidden = tab !== button.dataset.tab;
    if (button.dataset.tab === "cases") loadCases().catch((error) => ($("#cases").textContent = `error: ${error.message}`));
    if (button.dataset.tab === "bench") loadBench().catch((error) => ($("#bench-when").textContent = `error: ${error.message}`));
  });
}

let overview = { actions: false };
let selected = null;
let receiptsOffset = 0;
const PAGE = 25;
let liveRate = {};

// --- channels ---
async function loadChannels() {
  const { channels } = await api("/api/channels");
  const body = $("#channels tbody");
  body.replaceChildren(
    ...channels.map((c) => {
      const actions = el("td");
      actions.append(el("button", { class: "receipts", "data-session": c.sessionId, onclick: () => showReceipts(c.sessionId, 0) }, "receipts"));
      if (overview.actions) {
        for (const action of ["close", "challenge", "finalize", "claim"]) {
          actions.append(" ", el("button", { class: "action", "data-action": action, onclick: () => act(action, c.sessionId) }, action));
        }
      }
      return el(
        "tr",
        { "data-session": c.sessionId },
        el("td", { class: "hash", title: c.sessionId }, short(c.sessionId)),
        el("td", {}, c.role),
        el("td", { class: "phase" }, c.phase),
        el("td", {}, c.status),
        el("td", { class: "num deposit" }, money(c.money.deposit)),
        el("td", { class: "num paid" }, money(c.money.paid)),
        el("td", { class: "num remaining" }, money(c.money.remaining)),
        el("td", { class: "num claimable" }, money(c.money.claimable)),
        el(
          "td",
          { class: "settlement" },
          ...(c.settlement
            ? [el("span", { class: "to-provider" }, "provider ", money(c.settlement.paidToProvider)), ", ", el("span", { class: "fee" }, "fee ", money(c.settlement.fee)), ", ", el("span", { class: "to-funder" }, "funder ", money(c.settlement.refundedToFunder)), ...(c.settlement.link ? [" ", el("a", { href: c.settlement.link, class: "explorer", target: "_blank", rel: "noopener noreferrer" }, "tx")] : [])]
            : ["–"]),
        ),
        el("td", {}, duration(c.windowSecondsLeft)),
        el("td", { class: "num receipts-count" }, c.receipts),
        el("td", { class: "num tps" }, liveRate[c.sessionId] ?? 0),
        el("td", { class: "hash", title: c.latestRoot ? `${c.latestRoot.root} (${c.latestRoot.source})` : "" }, c.latestRoot ? `${short(c.latestRoot.root)} ${c.latestRoot.leafCount !== null ? `@${c.latestRoot.leafCount}` : "(ticket)"}` : "–"),
        actions,
      );
    }),
  );
  $("#live-total").textContent = channels.reduce((n, c) => n + c.receipts, 0);
  if (channels.length === 0) body.append(el("tr", {}, el("td", { colSpan: 14 }, "The store holds no channels yet.")));
}

async function act(action, sessionId) {
  if (!confirm(`${action} ${sessionId}?`)) return;
  try {
    const result = await api(`/api/actions/${action}/${sessionId}`, { method: "POST", headers: { "x-ioi-token": overview.token } });
    alert(`${action}: ${result.txHash}`);
  } catch (error) {
    alert(error.message);
  }
  await loadChannels();
}

// --- live figures ---
let liveChart;
async function loadLive() {
  const { points } = await api("/api/live");
  const last = points[points.length - 1];
  liveRate = last ? last.perChannel : {};
  $("#live-tps").textContent = last ? last.ticketsPerSecond : "–";
  // The peak over the sampled window, and the latest latencies measured (a sample with no tickets has none).
  $("#live-peak").textContent = points.length ? Math.max(...points.map((p) => p.ticketsPerSecond)) : "–";
  const measured = points.filter((p) => p.verifyMs !== null);
  const latest = measured[measured.length - 1];
  $("#live-verify").textContent = latest ? latest.verifyMs : "–";
  $("#live-store").textContent = latest && latest.storeMs !== null ? latest.storeMs : "–";
  const data = [points.map((p) => p.t), points.map((p) => p.ticketsPerSecond), points.map((p) => p.verifyMs), points.map((p) => p.storeMs)];
  if (!liveChart) {
    liveChart = new uPlot(
      {
        width: Math.min(1100, window.innerWidth - 60),
        height: 220,
        series: [{}, { label: "tickets/s", stroke: "#3d6df2", width: 2, scale: "tps" }, { label: "verify ms", stroke: "#d9822b", scale: "ms" }, { label: "store ms", stroke: "#58b16e", scale: "ms" }],
        axes: [{}, { scale: "tps", label: "tickets/s" }, { scale: "ms", side: 1, label: "ms", grid: { show: false } }],
      },
      data,
      $("#live-chart"),
    );
  } else liveChart.setData(data);
}

// --- receipts and proofs ---
const proofData = new Map();
/** Bumped whenever the receipts panel changes channel: a proof started for another channel is dropped. */
let view = 0;
function clearProof() {
  const out = $("#proof-result");
  out.className = "proof";
  delete out.dataset.result;
  delete out.dataset.proof;
  delete out.dataset.session;
  out.replaceChildren();
}
async function showReceipts(sessionId, offset) {
  if (sessionId !== selected) {
    // Another channel: nothing said about the previous one may stay on screen.
    view++;
    clearProof();
    $("#receipts tbody").replaceChildren();
    $("#receipts-range").textContent = "loading…";
  }
  selected = sessionId;
  receiptsOffset = Math.max(0, offset);
  const shown = view;
  const { total, receipts } = await api(`/api/channels/${sessionId}/receipts?offset=${receiptsOffset}&limit=${PAGE}`);
  if (shown !== view) return;
  $("#receipts-panel").hidden = false;
  $("#receipts-session").textContent = sessionId;
  $("#receipts-range").textContent = total === 0 ? "no receipts" : `${receiptsOffset + 1}–${receiptsOffset + receipts.length} of ${total}`;
  $("#receipts tbody").replaceChildren(
    ...receipts.map((r) =>
      el(
        "tr",
        { "data-index": r.index },
        el("td", { class: "num" }, r.index),
        el("td", { class: "num" }, r.seq),
        el("td", { class: "num amount", title: `${r.amount} base units` }, r.amountText),
        el("td", { class: "hash", title: r.receiptHash }, short(r.receiptHash)),
        el("td", { class: "hash", title: r.ticketHash }, short(r.ticketHash)),
        el("td", { class: "hash", title: r.leaf }, short(r.leaf)),
        el("td", {}, el("button", { class: "prove", "data-index": r.index, onclick: () => prove(sessionId, r) }, "prove")),
      ),
    ),
  );
}
$("#receipts-prev").addEventListener("click", () => selected && showReceipts(selected, receiptsOffset - PAGE));
$("#receipts-next").addEventListener("click", () => selected && showReceipts(selected, receiptsOffset + PAGE));

async function prove(sessionId, receipt) {
  const out = $("#proof-result");
  const started = view;
  clearProof();
  out.textContent = `proving receipt #${receipt.index}…`;
  // Whatever comes back is shown only if the page still shows this channel.
  const current = () => started === view && selected === sessionId;
  try {
    const data = await api(`/api/channels/${sessionId}/proof-data`);
    if (!current()) return;
    proofData.set(sessionId, data);
    if (!data.onChain) throw new Error("The chain has recorded no receipt root for this channel yet (it is recorded when the channel closes).");
    if (data.coveredReceipts === null) throw new Error(`No prefix of this store's receipts has the on-chain root ${data.onChain.root}.`);
    if (receipt.index >= data.coveredReceipts) throw new Error(`Receipt #${receipt.index} is newer than the ${data.coveredReceipts} receipts the on-chain root covers.`);
    const began = performance.now();
    const leaf = leafOf(receipt.receiptHash, receipt.ticketHash);
    const leafMatches = bytesToHex(leaf) === receipt.leaf.toLowerCase() && data.leaves[receipt.index].toLowerCase() === receipt.leaf.toLowerCase();
    const levels = buildLevels(data.leaves);
    const root = rootOf(levels);
    const proof = proofOf(levels, receipt.index);
    const ok = leafMatches && root.toLowerCase() === data.onChain.root.toLowerCase() && verifyProof(leaf, proof, data.onChain.root);
    const ms = (performance.now() - began).toFixed(1);
    out.className = `proof ${ok ? "ok" : "fail"}`;
    out.dataset.session = sessionId;
    out.dataset.result = ok ? "valid" : "invalid";
    out.replaceChildren(
      el("strong", {}, ok ? `✓ Receipt #${receipt.index} (seq ${receipt.seq}) is in the on-chain root.` : `✗ Receipt #${receipt.index} does NOT prove against the on-chain root.`),
      el("br"),
      `Leaf recomputed in the browser from the receipt and ticket hashes: ${bytesToHex(leaf)} (${leafMatches ? "matches" : "differs from"} the stored leaf). `,
      `Proof of ${proof.length} siblings built over ${data.coveredReceipts} leaves, root ${root}; `,
      `on-chain root ${data.onChain.root} from ${data.onChain.event} in block ${data.onChain.blockNumber} (tx ${short(data.onChain.transactionHash)}); ${ms} ms with @noble/hashes keccak-256.`,
    );
    out.dataset.proof = JSON.stringify(proof.map(bytesToHex));
  } catch (error) {
    if (!current()) return;
    out.className = "proof fail";
    out.dataset.session = sessionId;
    out.dataset.result = "error";
    out.textContent = error.message;
  }
}

// --- gigs and cases ---
async function loadStreams() {
  const { streams } = await api("/api/streams");
  const container = $("#streams");
  container.replaceChildren(...(streams.length ? [] : [el("p", { class: "note" }, "No milestone streams in the store's journals or the records directory.")]));
  for (const st of streams) {
    const head = `${short(st.sessionId)}: ${st.released} tranche(s) released, ${st.checked} checked, ${st.samplesPerTranche} claim(s) sampled per proof`;
    const pause = st.paused ? ` — paused at tranche ${st.paused.tranche} (${st.paused.reason}): ${st.paused.detail}` : "";
    const rows = st.events.map((e) => {
      const what =
        e.kind === "ticket"
          ? `ticket released, cumulative ${e.cumulative} wei`
          : e.kind === "proof"
            ? `Progress Proof ${short(e.proofHash)}: ${e.passed}/${e.total} tests pass`
            : e.kind === "sample"
              ? `sample #${e.index} ${e.name}: claimed ${e.claimed}, re-ran ${e.actual} → ${e.status}` + (e.replayMs === undefined ? "" : ` (${Number(e.replayMs).toFixed(0)} ms, ${e.repositoryBytes} bytes)`)
              : `PAUSE (${e.reason}): ${e.detail}`;
      return el("tr", { class: `stream-${e.kind}` }, el("td", {}, e.tranche), el("td", {}, e.kind), el("td", {}, what));
    });
    container.append(
      el("p", {}, head + pause),
      el("table", { class: "stream" }, el("thead", {}, el("tr", {}, el("th", {}, "tranche"), el("th", {}, "event"), el("th", {}, "detail"))), el("tbody", {}, ...rows)),
    );
  }
}

async function loadCases() {
  loadStreams().catch((error) => ($("#streams").textContent = `error: ${error.message}`));
  const { cases, gigs, note } = await api("/api/cases");
  $("#gigs tbody").replaceChildren(
    ...gigs.map((g) =>
      el("tr", { "data-gig": g.gigId }, el("td", {}, g.gigId), el("td", {}, g.status), el("td", { class: "hash" }, short(g.client)), el("td", { class: "provider", title: g.provider ?? "" }, g.provider ? `${short(g.provider)}${g.providerStanding === "named" ? "" : ` (${g.providerStanding})`}` : g.providerStanding), el("td", { class: "num" }, money(g.money.amount)), el("td", {}, g.windowEndsAt === "0" ? "–" : new Date(Number(g.windowEndsAt) * 1000).toISOString()), el("td", { class: "hash" }, g.cases.map(short).join(", "))),
    ),
  );
  const container = $("#cases");
  container.replaceChildren(...(note ? [el("p", { class: "note" }, note)] : []));
  for (const c of cases) {
    const dl = el("dl");
    const row = (k, v) => dl.append(el("dt", {}, k), el("dd", {}, v));
    row("subject", `${c.kind} ${c.kind === "gig" ? BigInt(c.subjectId).toString() : short(c.subjectId)}`);
    row("lane", c.lane);
    row("status", c.status);
    row("challenger / respondent", `${short(c.challenger)} / ${short(c.respondent)}`);
    row("value / bond", el("span", {}, money(c.money.value), " / ", money(c.money.bond)));
    for (const p of c.panels) row(`panel (round ${p.round})`, el("span", { class: "hash panel" }, p.panel.map(short).join(", ")));
    if (c.verdict) {
      row("verdict", el("span", { class: "verdict" }, `${c.verdict.verdict} — refund ${c.verdict.money.refund.text}, slash ${c.verdict.money.slash.text}`));
      row("signed by", el("span", { class: "hash" }, c.verdict.signers.map(short).join(", ")));
      row("appeal window", `ends ${new Date(Number(c.verdict.appealEndsAt) * 1000).toISOString()}${c.appealSecondsLeft !== null ? ` (${duration(c.appealSecondsLeft)} left)` : " (closed)"}`);
      row("resolution hash", el("span", { class: "hash" }, c.verdict.resolutionHash));
    }
    if (c.resolved) {
      const m = c.resolved.money;
      row("remedy", el("span", { class: "remedy" }, `${c.resolved.verdict}: refunded ${m.refunded.text}, slashed ${m.slashed.text} of bond, ${m.burned.text} of the losing bond burnt, fees ${m.arbitrationFees.text}`));
      row("enforced in", c.resolved.link ? el("a", { href: c.resolved.link, class: "hash resolved-tx explorer", target: "_blank", rel: "noopener noreferrer" }, c.resolved.transactionHash) : el("span", { class: "hash resolved-tx" }, c.resolved.transactionHash));
    }
    const changes = el("table", { class: "balances" }, el("thead", {}, el("tr", {}, el("th", {}, "party"), el("th", {}, "account"), el("th", {}, "change"), el("th", {}, "where"), el("th", {}, "what"))));
    const where = { wallet: "balance", bond: "bond in the registry", claimable: "claimable", channel: "channel payout" };
    changes.append(
      el(
        "tbody",
        {},
        ...c.balanceChanges.map((b) =>
          el(
            "tr",
            { "data-account": b.account, "data-ledger": b.ledger, ...(b.role ? { "data-role": b.role } : {}) },
            el("td", {}, b.party),
            el("td", { class: "hash", title: b.account }, short(b.account)),
            el("td", { class: `num change ${b.change.amount.startsWith("-") ? "neg" : "pos"}` }, money(b.change)),
            el("td", {}, where[b.ledger] ?? b.ledger),
            el("td", {}, b.what),
          ),
        ),
      ),
    );
    const failing = el("ul", { class: "failing-tests" }, ...c.failingTests.map((t) => el("li", {}, t)));
    const checks = el("ul", { class: "checks" }, ...c.checks.map((k) => el("li", {}, `${k.status ? "✓" : "✗"} ${k.name}${k.detail ? ": " + k.detail : ""}`)));
    const links = el("p", { class: "records" });
    if (c.records.package) links.append(el("a", { href: `/api/records/${encodeURIComponent(c.records.package)}`, class: "package" }, "challenge package"), " · ");
    if (c.records.resolution) links.append(el("a", { href: `/api/records/${encodeURIComponent(c.records.resolution)}`, class: "resolution" }, "resolution"), " · ");
    for (let i = 0; i < c.records.upip; i++) links.append(el("a", { href: `/api/cases/${c.caseId}/upip/${i}`, class: "upip" }, `UPIP record ${i + 1}`), " ");
    if (!c.records.package && !c.records.resolution) links.append("No records for this case in the records directory.");
    container.append(
      el("div", { class: "case", "data-case": c.caseId }, el("h3", {}, `Case ${short(c.caseId)}`), dl, el("h4", {}, `Failing tests (Lane 1): ${c.failingTests.length}`), failing, el("h4", {}, "Checks"), checks, el("h4", {}, "Balance changes"), changes, links),
    );
  }
  if (cases.length === 0 && !note) container.append(el("p", { class: "note" }, "No cases on-chain."));
}

// --- health: every figure and sentence comes formatted from the server (channel-client/ui/health.ts) ---
/** An address, linked to the explorer when the server sent a link (none on a devnet). */
const linked = (address, link) => (link ? el("a", { href: link, class: "explorer hash", target: "_blank", rel: "noopener noreferrer", title: address }, address) : el("span", { class: "hash", title: address }, address));
async function loadHealth() {
  const h = await api("/api/health");
  $("#alert-count").hidden = h.alerts.length === 0;
  $("#alert-count").textContent = `${h.alerts.length} alert${h.alerts.length === 1 ? "" : "s"}`;
  $("#alerts").replaceChildren(...(h.alerts.length ? h.alerts.map((a) => el("li", { class: a.severity, "data-kind": a.kind, "data-subject": a.subject }, a.message)) : [el("li", { class: "none" }, "No alerts.")]));
  $("#health-account").replaceChildren(h.account ? linked(h.account, h.accountLink) : "none: start ioi ui with --account ADDR or --allow-actions");
  $("#health-wallet tbody").replaceChildren(...(h.wallet ? [el("tr", { "data-asset": "eth" }, el("td", {}, "ETH"), el("td", { class: "num" }, money(h.wallet.eth))), el("tr", { "data-asset": "lgas" }, el("td", {}, h.wallet.lgas.symbol), el("td", { class: "num" }, money(h.wallet.lgas)))] : []));
  $("#health-bonds tbody").replaceChildren(
    ...[["provider", h.provider], ["arbitrator", h.arbitrator]]
      .filter(([, b]) => b)
      .map(([role, b]) =>
        el(
          "tr",
          { "data-role": role, class: b.belowMinimum ? "below" : "" },
          el("td", {}, role === "provider" ? "provider bond" : "arbitrator stake"),
          el("td", {}, b.registered ? "yes" : "no"),
          el("td", { class: "num active" }, money(b.active)),
          el("td", { class: "num pending" }, money(b.pending)),
          el("td", { class: "unlock-at", "data-unlock-at": b.unlockAt }, b.unlockAt === "0" ? "–" : new Date(Number(b.unlockAt) * 1000).toISOString()),
          el("td", { class: "num locks" }, b.locks),
          el("td", { class: "num minimum" }, money(b.minimum)),
          el("td", { class: "standing" }, !b.registered ? "not registered" : b.belowMinimum ? "below minimum" : "ok"),
        ),
      ),
  );
  $("#health-claimable tbody").replaceChildren(...h.claimable.map((c) => el("tr", { "data-where": c.where, "data-asset": c.amount.asset }, el("td", {}, c.where), el("td", { class: "num" }, money(c.amount)))));
  const facts = [
    ["chain id", h.chain.chainId],
    ["head", el("span", { class: "head" }, h.chain.head)],
    ["since the head advanced (seen by this page)", el("span", { class: "since-advance", "data-seconds": h.chain.secondsSinceAdvance }, ago(h.chain.secondsSinceAdvance))],
    ["head block's age (its timestamp)", ago(h.chain.blockAgeSeconds)],
    ["stopped after", h.chain.stallSeconds === null ? "no stall alert on a devnet (it mines on demand)" : ago(h.chain.stallSeconds)],
    ["explorer", h.explorer ?? "none for this chain (set IOI_EXPLORER_URL)"],
  ];
  $("#health-chain").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  $("#health-daemons tbody").replaceChildren(
    ...h.daemons.map((d) =>
      el("tr", { "data-daemon": d.name, "data-status": d.status }, el("td", {}, d.name), el("td", { class: "hash" }, d.url ?? "–"), el("td", { class: "status" }, d.status === "not configured" ? "not configured" : `${d.status} (${d.detail})`), el("td", {}, Object.entries(d.figures).map(([k, v]) => `${k} ${v}`).join(", ") || "–")),
    ),
  );
  $("#health-contracts tbody").replaceChildren(...h.contracts.map((c) => el("tr", { "data-contract": c.name }, el("td", {}, c.name), el("td", {}, linked(c.address, c.link)))));
}

// --- bench ---
function barChart(target, labels, values, label, color) {
  target.replaceChildren();
  const xs = labels.map((_, i) => i);
  new uPlot(
    {
      width: 460,
      height: 220,
      scales: { x: { time: false, range: [-0.6, labels.length - 0.4] } },
      axes: [{ values: (_, ticks) => ticks.map((t) => labels[t] ?? ""), splits: () => xs }, { size: 70 }],
      series: [{}, { label, fill: color, stroke: color, paths: uPlot.paths.bars({ size: [0.6, 60] }), points: { show: false } }],
      legend: { show: false },
    },
    [xs, values],
    target,
  );
}
async function loadBench() {
  let bench;
  try {
    bench = await api("/api/bench");
  } catch (error) {
    $("#bench-when").textContent = error.message;
    return;
  }
  $("#bench-when").textContent = `measured ${bench.measuredAt} on ${bench.machine?.cpus} × ${bench.machine?.model}, ${bench.machine?.node}`;
  const t = bench.tickets ?? {};
  barChart($("#chart-tickets"), Object.keys(t).map((k) => k.replace("inflight", "in flight ")), Object.values(t).map((v) => v.perSecond), "tickets/s", "#3d6df2");
  const b = bench.batchedReceiptsPerSecond ?? {};
  barChart($("#chart-batched"), Object.keys(b).map((k) => `batch ${k}`), Object.values(b), "receipts/s", "#58b16e");
  const gasKeys = ["open", "deposit", "closeCooperative", "closeUnilateral", "challenge", "finalize"].filter((k) => bench.gas && k in bench.gas);
  barChart($("#chart-gas"), gasKeys, gasKeys.map((k) => bench.gas[k]), "gas", "#d9822b");
  const c = bench.crypto ?? {};
  barChart($("#chart-crypto"), Object.keys(c), Object.values(c), "per second", "#8e5bd9");
  $("#bench-raw").textContent = JSON.stringify(bench, null, 2);
}

// --- polling ---
async function tick() {
  const problems = [];
  try {
    overview = await api("/api/overview");
    $("#overview").textContent = `chain ${overview.chainId} · block ${overview.block} · escrow ${short(overview.escrow)} · ${overview.actions ? "actions allowed" : "read-only"}`;
  } catch (error) {
    problems.push(error.message);
  }
  for (const part of [loadLive, loadChannels, loadHealth]) {
    try {
      await part();
    } catch (error) {
      problems.push(`${part.name}: ${error.message}`);
    }
  }
  $("#problems").textContent = problems.join("; ");
  document.body.dataset.updated = String(Date.now());
}
window.ioiUi = { tick, loadCases, loadBench, loadHealth, showReceipts, hexToBytes };
await tick();
setInterval(tick, 1000);
