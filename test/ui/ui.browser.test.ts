/// <reference lib="dom" />
/**
 * `ioi ui` in a real headless Chromium (@sparticuz/chromium, installed by npm ci, driven by puppeteer-core)
 * on the embedded devnet: the demo's two disputes are decided first (their packages and resolutions written
 * to a records directory), then a channel is opened, a stream runs while the page shows the receipts count
 * and the live tickets/s move, the channel settles cooperatively, a receipt is proved in the page against the
 * on-chain root with the page's own keccak, and the resolved gig case shows its failing tests. Screenshots go
 * to test-output/ui/ (git-ignored).
 */
import chromium from "@sparticuz/chromium";
import { expect } from "chai";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import hre from "hardhat";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { getAddress, parseEther, type PublicClient } from "viem";

import { echoHandler } from "../../channel-client/cli/channel";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { closeCooperative, openChannel, type Wallet } from "../../channel-client/chain/escrow";
import { NodeMetrics, serveMetrics } from "../../channel-client/node/metrics";
import { PayerClient } from "../../channel-client/node/payer-client";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { runDisputeDemo } from "../../scripts/demo-disputes";
import { deployAll } from "../../scripts/deploy";
import { startUi, type UiServer } from "../../channel-client/ui/server";
import { clickNow } from "../helpers/page";
import { hardhatAccount, ROLE } from "../helpers/fixtures";

const OUTPUT = path.resolve(__dirname, "../../test-output/ui");
const PRICE = parseEther("0.0001");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const TICKETS = 400;

describe("ioi ui in a headless browser (issue 16)", function () {
  this.timeout(240_000);
  const cleanup: Array<() => Promise<unknown>> = [];
  let dir: string;
  let browser: Browser | undefined;

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-ui-"));
    mkdirSync(OUTPUT, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    while (cleanup.length > 0) await cleanup.pop()!().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  const shot = (page: Page, name: string) => page.screenshot({ path: path.join(OUTPUT, `${name}.png`), fullPage: true });

  it("streams with live figures, proves a receipt in the page, and shows a resolved case with its failing tests", async () => {
    const publicClient = (await hre.viem.getPublicClient()) as unknown as PublicClient;
    const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
    const deployment = await deployAll(hre);
    const c = deployment.contracts;
    const records = path.join(dir, "records");
    const cases = await runDisputeDemo({ hre, deployment, publicClient, wallets, log: () => undefined, recordsDir: records, fixedGigTime: false });
    const gigCase = cases.find((k) => k.subject === "gig")!;

    // The provider node, its metrics, and the page over its store.
    const escrow = c.GasEscrow.address;
    const domain = gasEscrowDomain({ chainId: await publicClient.getChainId(), verifyingContract: escrow });
    const providerStore = SqliteStore.open(path.join(dir, "provider.db"));
    const metrics = new NodeMetrics();
    const metricsServer = await serveMetrics(metrics, "127.0.0.1", 0);
    const node = await ProviderNode.start({ account: hardhatAccount(ROLE.provider), publicClient, domain, store: providerStore, pricing, handler: echoHandler, modelSnapshotId: "worker:echo@1", metrics });
    const ui: UiServer = await startUi({
      store: providerStore,
      publicClient,
      escrow,
      disputeManager: c.DisputeManager.address,
      gigEscrow: c.GigEscrow.address,
      recordsDir: records,
      metricsUrl: `http://127.0.0.1:${metricsServer.port}/metrics`,
      sampleMs: 250,
    });
    cleanup.push(async () => {
      await ui.close();
      await node.stop();
      await metricsServer.close();
      await providerStore.close();
    });

    browser = await puppeteer.launch({ args: [...chromium.args, "--lang=en-US"], env: { ...process.env, LANG: "en_US.UTF-8", LC_ALL: "en_US.UTF-8" }, executablePath: await chromium.executablePath(), headless: true, defaultViewport: { width: 1400, height: 900 } });
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    page.on("requestfailed", (request) => errors.push(`request failed: ${request.url()}`));
    // Nothing leaves the machine: every request the page makes is to the ui server.
    const origins = new Set<string>();
    page.on("request", (request) => origins.add(new URL(request.url()).origin));
    await page.goto(ui.url, { waitUntil: "load" });
    await page.waitForFunction(() => document.querySelector("#overview")?.textContent?.startsWith("chain "));

    // Open a channel payer → provider; the page lists it once the node binds it.
    const payerWallet = wallets[ROLE.payer]!;
    const payer = hardhatAccount(ROLE.payer);
    const opened = await openChannel({
      wallet: payerWallet,
      publicClient,
      escrow,
      amount: parseEther("1"),
      terms: { payer: payer.address, provider: getAddress(hardhatAccount(ROLE.provider).address), funder: payer.address, asset: NATIVE_ASSET, termsHash: termsHashOf(pricing), policyHash: `0x${"11".repeat(32)}`, challengeDuration: 3600n, nonce: 77n },
    });
    const sessionId = opened.sessionId;
    const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
    cleanup.push(() => payerStore.close());
    await payerStore.putChannel({ sessionId, role: "payer", ref: opened.ref, pricing, escrow, chainId: domain.chainId, deposit: opened.deposit, status: "open" });
    const client = await PayerClient.connect({ account: payer, domain, store: payerStore, channel: payerStore.getChannel(sessionId)!, port: node.port });
    const row = `#channels tr[data-session="${sessionId}"]`;
    await page.waitForSelector(row, { timeout: 10_000 }).catch(async (error: unknown) => {
      throw new Error(`${(error as Error).message}; the page says: ${await page.$eval("header", (e) => e.textContent)}`);
    });
    expect(await page.$eval(`${row} .phase`, (e) => e.textContent)).to.equal("Open");

    // Stream; the page's receipts count and live tickets/s move while it runs. A fast stream can finish between
    // two polls of the page, so the count is checked to move from what the page showed before the stream to all.
    const count = (selector: string) => page.$eval(selector, (e) => Number(e.textContent));
    const before = await count(`${row} .receipts-count`);
    expect(before).to.equal(0);
    const streaming = client.stream({ count: TICKETS, inflight: 8, request: (i) => ({ jsonrpc: "2.0", id: i, method: "tools/echo", params: { i } }) });
    await page.waitForFunction((s) => Number(document.querySelector(`${s} .receipts-count`)?.textContent) > 0, {}, row);
    await streaming;
    await page.waitForFunction((s, n) => Number(document.querySelector(`${s} .receipts-count`)?.textContent) === n, {}, row, TICKETS);
    // A fast stream can end between two samples, so the page's peak over its window is what must have moved.
    await page.waitForFunction(() => Number(document.querySelector("#live-peak")?.textContent) > 0);
    const liveTps = await count("#live-peak");
    await page.waitForFunction(() => Number(document.querySelector("#live-verify")?.textContent) > 0);
    await shot(page, "1-streaming");
    expect(liveTps).to.be.above(0);
    await client.commit();
    const { summary, payerSignature, providerSignature } = await client.cooperativeClose();
    await client.close();
    const settled = await closeCooperative({ wallet: payerWallet, publicClient, escrow, ref: opened.ref, summary, payerSignature, providerSignature });
    expect(settled.paidToProvider).to.equal(BigInt(TICKETS) * PRICE);
    await page.waitForFunction((s) => document.querySelector(`${s} .phase`)?.textContent === "Settled", {}, row);
    expect(await count(`${row} .receipts-count`)).to.equal(TICKETS);

    // Prove receipt #137 in the page against the root the settlement recorded.
    await clickNow(page, `${row} button.receipts`);
    await page.waitForSelector("#receipts tbody tr");
    await page.evaluate(() => (window as unknown as { ioiUi: { showReceipts: (s: string, o: number) => Promise<void> } }).ioiUi.showReceipts(document.querySelector("#receipts-session")!.textContent!, 125));
    await page.waitForSelector('#receipts button.prove[data-index="137"]');
    await clickNow(page, '#receipts button.prove[data-index="137"]');
    await page.waitForSelector("#proof-result[data-result]");
    const proof = await page.$eval("#proof-result", (e) => ({ result: (e as HTMLElement).dataset.result, text: e.textContent ?? "", siblings: JSON.parse((e as HTMLElement).dataset.proof ?? "[]") as string[] }));
    expect(proof.result, proof.text).to.equal("valid");
    expect(proof.text).to.include(settled.receiptRoot);
    expect(proof.siblings).to.have.length(9); // ⌈log2 400⌉
    await shot(page, "2-proof");

    // The resolved gig case: verdict, failing tests from Lane 1, balance changes, record links.
    await page.click('nav button[data-tab="cases"]');
    const caseSelector = `.case[data-case="${gigCase.caseId}"]`;
    await page.waitForSelector(caseSelector);
    const shown = await page.$eval(caseSelector, (e) => ({
      failing: Array.from(e.querySelectorAll(".failing-tests li")).map((li) => li.textContent),
      verdict: e.querySelector(".verdict")?.textContent ?? "",
      balances: e.querySelectorAll(".balances tbody tr").length,
      links: Array.from(e.querySelectorAll(".records a")).map((a) => (a as HTMLAnchorElement).className),
      panel: e.querySelector(".panel")?.textContent ?? "",
    }));
    expect(shown.failing).to.have.length(3);
    expect(shown.verdict).to.match(/^provider_fault/); // the CLI's name (issue 28 item 10)
    expect(shown.balances).to.be.at.least(5);
    expect(shown.links).to.include.members(["package", "resolution", "upip"]);
    expect(shown.panel.split(", ")).to.have.length(gigCase.panel.length);
    await page.$eval(caseSelector, (e) => e.scrollIntoView());
    await shot(page, "3-case");
    const resolutionLink = await page.$eval(`${caseSelector} a.resolution`, (a) => (a as HTMLAnchorElement).href);
    const resolution = (await (await fetch(resolutionLink)).json()) as { case_id: string };
    expect(resolution.case_id).to.equal(gigCase.caseId);

    // Issue 32: the demo's streamed job — its record lists each tranche's ticket, proof and samples, and the pause.
    await page.waitForSelector("#streams table.stream");
    const stream = await page.$eval("#streams", (e) => ({
      kinds: Array.from(e.querySelectorAll("table.stream tbody tr")).map((tr) => tr.className),
      text: e.textContent ?? "",
    }));
    expect(stream.kinds).to.deep.equal(["stream-ticket", "stream-proof", ...Array(4).fill("stream-sample"), "stream-ticket", "stream-proof", ...Array(4).fill("stream-sample"), "stream-pause"]);
    expect(stream.text).to.include("paused at tranche 2 (false_claim)");

    await page.click('nav button[data-tab="bench"]');
    await page.waitForSelector("#chart-gas canvas", { timeout: 10_000 }).catch(async (error: unknown) => {
      throw new Error(`${(error as Error).message}; the page says: ${await page.$eval("#bench-when", (e) => e.textContent)} ${errors.join("; ")}`);
    });
    await shot(page, "4-bench");

    expect(errors, errors.join("\n")).to.deep.equal([]);
    expect([...origins]).to.deep.equal([new URL(ui.url).origin]);
  });
});
