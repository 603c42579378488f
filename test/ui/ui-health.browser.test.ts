/// <reference lib="dom" />
/**
 * Issue 29 item 8 in a real headless Chromium on the devnet: the health panel's figures (the acting key's ETH
 * and LGAS, its provider bond and arbitrator stake against the minimums, what the escrows hold claimable, the
 * chain head) are the chain's as read through viem, to the base unit; an alert appears when the provider's active
 * bond drops below the minimum (an unbond request); explorer links are absent on the devnet and present, to the
 * right URL, with IOI_EXPLORER_URL; the node's metrics endpoint shows "not configured", then "up" once given.
 */
import chromium from "@sparticuz/chromium";
import { expect } from "chai";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import hre from "hardhat";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { erc20Abi, getAddress, keccak256, parseGwei, stringToBytes, zeroAddress, type Address, type PublicClient } from "viem";

import { providerRegistryAbi } from "../../channel-client/abi/ProviderRegistry";
import { disputeManagerAbi } from "../../arbitration/runner/chain";
import { closeUnilateral, finalizeClose, gasEscrowAbi, openChannel, type Wallet } from "../../channel-client/chain/escrow";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { gigEscrowAbi } from "../../channel-client/chain/gig";
import { ETH_UNIT, formatAmountAdaptive } from "../../channel-client/core/format";
import { NodeMetrics, serveMetrics } from "../../channel-client/node/metrics";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { deployAll } from "../../scripts/deploy";
import { startUi, type UiServer } from "../../channel-client/ui/server";
import { ROLE } from "../helpers/fixtures";

const OUTPUT = path.resolve(__dirname, "../../test-output/ui");
const EXPLORER = "https://explorer.example.org/sepolia";

describe("issue 29 item 8: the page's health panel against the chain (headless browser)", function () {
  this.timeout(240_000);
  const cleanup: Array<() => Promise<unknown>> = [];
  let dir: string;
  let browser: Browser | undefined;
  const savedExplorer = process.env.IOI_EXPLORER_URL;

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-ui-health-"));
    mkdirSync(OUTPUT, { recursive: true });
    delete process.env.IOI_EXPLORER_URL;
  });
  after(async () => {
    await browser?.close();
    while (cleanup.length > 0) await cleanup.pop()!().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    if (savedExplorer === undefined) delete process.env.IOI_EXPLORER_URL;
    else process.env.IOI_EXPLORER_URL = savedExplorer;
  });

  async function world() {
    const publicClient = (await hre.viem.getPublicClient()) as unknown as PublicClient;
    const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
    const deployment = await deployAll(hre);
    const c = deployment.contracts;
    const registry = c.ProviderRegistry.address;
    const lgas = c.LaborGas.address;
    const provider = wallets[ROLE.provider]!;
    const account = getAddress(provider.account.address);
    const write = async (wallet: Wallet, request: Parameters<Wallet["writeContract"]>[0]) => {
      const receipt = await publicClient.waitForTransactionReceipt({ hash: await wallet.writeContract(request) });
      if (receipt.status !== "success") throw new Error(`Transaction ${receipt.transactionHash} reverted.`);
    };
    // The provider registers and bonds exactly the minimum, and keeps some LGAS in its wallet.
    const minimum = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "minProviderBond" });
    const token = await hre.viem.getContractAt("LaborGas", lgas);
    await token.write.mint([account, minimum + 12_345n], { account: wallets[ROLE.deployer]!.account });
    await write(provider, { address: lgas, abi: erc20Abi, functionName: "approve", args: [registry, minimum] } as never);
    const label = (s: string) => keccak256(stringToBytes(s));
    await write(provider, { address: registry, abi: providerRegistryAbi, functionName: "registerProvider", args: ["tcp://127.0.0.1", label("caps"), label("did:ioi:health"), label("mldsa:health")] } as never);
    await write(provider, { address: registry, abi: providerRegistryAbi, functionName: "bond", args: [0, minimum] } as never);

    const store = SqliteStore.open(path.join(dir, "provider.db"));
    cleanup.push(() => store.close());
    const start = async (extra: { metricsUrl?: string; stallSeconds?: number }) => {
      const ui: UiServer = await startUi({ store, publicClient, escrow: c.GasEscrow.address, disputeManager: c.DisputeManager.address, gigEscrow: c.GigEscrow.address, account, sampleMs: 250, ...extra });
      cleanup.push(() => ui.close());
      return ui;
    };
    browser = await puppeteer.launch({ args: [...chromium.args, "--lang=en-US"], env: { ...process.env, LANG: "en_US.UTF-8", LC_ALL: "en_US.UTF-8" }, executablePath: await chromium.executablePath(), headless: true, defaultViewport: { width: 1400, height: 900 } });
    return { publicClient, wallets, c, registry, lgas, provider, account, minimum, write, start, store };
  }
  let w: Awaited<ReturnType<typeof world>>;
  before(async () => {
    w = await world();
  });

  /** Opens the page on its health tab; script errors fail the test. */
  async function open(url: string): Promise<{ page: Page; errors: string[] }> {
    const page = await browser!.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    await page.goto(url, { waitUntil: "load" });
    await page.click('nav button[data-tab="health"]');
    await page.waitForSelector('#health-bonds tr[data-role="provider"]', { timeout: 20_000 });
    return { page, errors };
  }
  /** The health panel as the page shows it: exact base units from data-amount, the text as shown. */
  const panel = (page: Page) =>
    page.evaluate(() => {
      const m = (s: string) => {
        const e = document.querySelector(s) as HTMLElement | null;
        return e ? { amount: e.dataset.amount!, text: e.textContent!, symbol: e.dataset.symbol! } : null;
      };
      const bond = (role: string) => ({
        active: m(`#health-bonds tr[data-role="${role}"] .active .money`),
        pending: m(`#health-bonds tr[data-role="${role}"] .pending .money`),
        minimum: m(`#health-bonds tr[data-role="${role}"] .minimum .money`),
        unlockAt: (document.querySelector(`#health-bonds tr[data-role="${role}"] .unlock-at`) as HTMLElement | null)?.dataset.unlockAt ?? null,
        locks: document.querySelector(`#health-bonds tr[data-role="${role}"] .locks`)?.textContent ?? null,
        standing: document.querySelector(`#health-bonds tr[data-role="${role}"] .standing`)?.textContent ?? null,
      });
      return {
        eth: m('#health-wallet tr[data-asset="eth"] .money'),
        lgas: m('#health-wallet tr[data-asset="lgas"] .money'),
        provider: bond("provider"),
        arbitrator: bond("arbitrator"),
        claimable: Array.from(document.querySelectorAll("#health-claimable tbody tr")).map((tr) => ({
          where: (tr as HTMLElement).dataset.where!,
          asset: (tr as HTMLElement).dataset.asset!,
          amount: (tr.querySelector(".money") as HTMLElement).dataset.amount!,
        })),
        head: document.querySelector("#health-chain .head")?.textContent ?? null,
        alerts: Array.from(document.querySelectorAll("#alerts li[data-kind]")).map((li) => ({ kind: (li as HTMLElement).dataset.kind!, text: li.textContent! })),
        links: Array.from(document.querySelectorAll("a.explorer")).map((a) => (a as HTMLAnchorElement).href),
        daemon: document.querySelector('#health-daemons tr[data-daemon="node metrics"] .status')?.textContent ?? null,
      };
    });
  /** The panel after a read made now (the page's own loader), so it reflects every write made before. */
  async function settled(page: Page) {
    await page.evaluate(() => (window as unknown as { ioiUi: { loadHealth: () => Promise<void> } }).ioiUi.loadHealth());
    return panel(page);
  }

  it("issue 29 item 8: wallet, bond, stake, claimable and head are the chain's; an unbond below the minimum raises an alert; no explorer links on the devnet", async () => {
    const { publicClient, c, registry, lgas, provider, account, minimum, write, start } = w;
    const ui = await start({});
    const { page, errors } = await open(ui.url);
    const before = await settled(page);
    const bondOf = (role: 0 | 1) => publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondOf", args: [role, account] });
    const eth = await publicClient.getBalance({ address: account });
    const lgasBalance = await publicClient.readContract({ address: lgas, abi: erc20Abi, functionName: "balanceOf", args: [account] });
    expect(before.eth!.amount, "ETH to the wei").to.equal(eth.toString());
    expect(before.eth!.text).to.equal(formatAmountAdaptive(eth, ETH_UNIT));
    expect(before.lgas!.amount, "LGAS to the base unit").to.equal(lgasBalance.toString());
    expect(before.lgas!.amount).to.equal("12345");
    expect(before.lgas!.symbol).to.equal("LGAS");
    const bond = await bondOf(0);
    expect(bond.active).to.equal(minimum);
    expect(before.provider.active!.amount).to.equal(bond.active.toString());
    expect(before.provider.pending!.amount).to.equal("0");
    expect(before.provider.minimum!.amount).to.equal(minimum.toString());
    expect(before.provider.minimum!.text).to.match(/ LGAS$/);
    expect(before.provider.unlockAt).to.equal("0");
    expect(before.provider.locks).to.equal((await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "locksOf", args: [0, account] })).toString());
    expect(before.provider.standing).to.equal("ok");
    const stake = await bondOf(1);
    expect(before.arbitrator.active!.amount).to.equal(stake.active.toString());
    expect(before.arbitrator.minimum!.amount).to.equal((await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "minArbitratorStake" })).toString());
    expect(before.arbitrator.standing).to.equal("not registered");
    // Claimable in each holder for ETH and LGAS: the chain's (zero here), one row each.
    const reads: Record<string, (asset: Address) => Promise<bigint>> = {
      GasEscrow: (asset) => publicClient.readContract({ address: c.GasEscrow.address, abi: gasEscrowAbi, functionName: "claimableOf", args: [asset, account] }),
      GigEscrow: (asset) => publicClient.readContract({ address: c.GigEscrow.address, abi: gigEscrowAbi, functionName: "claimableOf", args: [asset, account] }),
      DisputeManager: (asset) => publicClient.readContract({ address: c.DisputeManager.address, abi: disputeManagerAbi, functionName: "claimable", args: [asset, account] }),
    };
    expect(before.claimable.map((r) => `${r.where}:${r.asset.toLowerCase()}`).sort()).to.deep.equal(
      Object.keys(reads).flatMap((where) => [`${where}:${zeroAddress}`, `${where}:${lgas.toLowerCase()}`]).sort(),
    );
    for (const row of before.claimable) expect(row.amount, `${row.where} ${row.asset}`).to.equal((await reads[row.where]!(row.asset as Address)).toString());
    expect(BigInt(before.head!)).to.equal(await publicClient.getBlockNumber());
    expect(before.alerts, "no alert while the bond meets the minimum").to.deep.equal([]);
    expect(before.links, "the devnet has no explorer").to.deep.equal([]);
    expect(await page.$eval("#health-chain", (e) => e.textContent)).to.include("none for this chain");
    expect(before.daemon).to.equal("not configured");

    // The provider asks to unbond a quarter: its active bond drops below the minimum.
    const quarter = minimum / 4n;
    await write(provider, { address: registry, abi: providerRegistryAbi, functionName: "requestUnbond", args: [0, quarter] } as never);
    // The page's own poll shows it; then a fresh read for the exact comparison.
    await page.waitForFunction((q) => (document.querySelector('#health-bonds tr[data-role="provider"] .pending .money') as HTMLElement | null)?.dataset.amount === q, { timeout: 20_000 }, quarter.toString());
    await page.waitForSelector('#alerts li[data-kind="bond-below-minimum"]', { timeout: 20_000 });
    const after = await settled(page);
    const unbonding = await bondOf(0);
    expect(unbonding.active).to.equal(minimum - quarter);
    expect(after.provider.active!.amount).to.equal(unbonding.active.toString());
    expect(after.provider.pending!.amount).to.equal(quarter.toString());
    expect(after.provider.unlockAt).to.equal(unbonding.unlockAt.toString());
    expect(after.provider.standing).to.equal("below minimum");
    expect(after.alerts.map((a) => a.kind)).to.deep.equal(["bond-below-minimum"]);
    expect(after.alerts[0]!.text).to.include(after.provider.active!.text).and.include(after.provider.minimum!.text);
    expect(await page.$eval("#alert-count", (e) => e.textContent)).to.equal("1 alert");
    // The gas the unbond cost is in the ETH figure too.
    expect(after.eth!.amount).to.equal((await publicClient.getBalance({ address: account })).toString());
    expect(after.eth!.amount).to.not.equal(before.eth!.amount);
    await page.screenshot({ path: path.join(OUTPUT, "health-1-below-minimum.png"), fullPage: true });
    expect(errors).to.deep.equal([]);
    await page.close();
  });

  it("issue 29 item 8: with IOI_EXPLORER_URL the account and contracts link to the explorer; the metrics endpoint shows up", async () => {
    const { c, account, start } = w;
    const metrics = new NodeMetrics({ defaultMetrics: false });
    metrics.tickets.inc(7);
    const served = await serveMetrics(metrics, "127.0.0.1", 0);
    process.env.IOI_EXPLORER_URL = `${EXPLORER}/`;
    let ui: UiServer;
    try {
      ui = await start({ metricsUrl: `http://127.0.0.1:${served.port}/metrics` });
    } finally {
      delete process.env.IOI_EXPLORER_URL;
    }
    const { page, errors } = await open(ui.url);
    await page.waitForFunction(() => document.querySelector('#health-daemons tr[data-daemon="node metrics"]')?.getAttribute("data-status") === "up", { timeout: 20_000 });
    const shown = await panel(page);
    expect(shown.links).to.include(`${EXPLORER}/address/${account}`);
    for (const name of ["GasEscrow", "GigEscrow", "DisputeManager", "ProviderRegistry", "LaborGas"] as const) {
      expect(shown.links, name).to.include(`${EXPLORER}/address/${c[name].address}`);
    }
    expect(await page.$eval('#health-daemons tr[data-daemon="node metrics"]', (tr) => tr.textContent)).to.include("ioi_tickets_total 7");
    expect(shown.alerts.map((a) => a.kind), "the bond is still below the minimum").to.deep.equal(["bond-below-minimum"]);
    await page.screenshot({ path: path.join(OUTPUT, "health-2-explorer.png"), fullPage: true });
    expect(errors).to.deep.equal([]);
    await page.close();
    await served.close();
  });

  it("issue 29 item 8: a chain that stops advancing raises an alert, and a new block clears it; a devnet has none by default", async () => {
    const { start } = w;
    // By default an automining devnet is never "stopped" (the first test saw no alert but the bond's).
    const ui = await start({ stallSeconds: 2 });
    const { page, errors } = await open(ui.url);
    await page.waitForSelector('#alerts li[data-kind="chain-stalled"]', { timeout: 20_000 });
    const text = await page.$eval('#alerts li[data-kind="chain-stalled"]', (li) => li.textContent);
    expect(text).to.match(/^The chain head \(block \d+\) has not advanced for \d+ s\.$/);
    await hre.network.provider.send("evm_mine", []);
    // The page saw the new head: the alert is gone and the time since the head advanced starts again from zero.
    await page.waitForFunction(
      () => document.querySelector('#alerts li[data-kind="chain-stalled"]') === null && Number((document.querySelector("#health-chain .since-advance") as HTMLElement | null)?.dataset.seconds) < 2,
      { timeout: 20_000 },
    );
    expect(errors).to.deep.equal([]);
    await page.close();
  });

  it("issue 29 item 8: a channel whose window closes within the hour raises an alert until it settles; the settlement links to the explorer", async () => {
    const { publicClient, wallets, c, account, start, store } = w;
    // A payer opens a channel to the acting key (the provider) and closes it unilaterally with no ticket: a
    // one-hour challenge window, which the provider's store records as the watchtower would.
    const payerWallet = wallets[ROLE.payer]!;
    const payer = getAddress(payerWallet.account.address);
    const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: 1000n };
    const escrow = c.GasEscrow.address;
    const opened = await openChannel({
      wallet: payerWallet,
      publicClient,
      escrow,
      amount: parseGwei("5"),
      terms: { payer, provider: account, funder: payer, asset: NATIVE_ASSET, termsHash: termsHashOf(pricing), policyHash: `0x${"22".repeat(32)}`, challengeDuration: 3600n, nonce: 2908n },
    });
    await store.putChannel({ sessionId: opened.sessionId, role: "provider", ref: opened.ref, pricing, escrow, chainId: await publicClient.getChainId(), deposit: opened.deposit, status: "open" });
    const closed = await closeUnilateral({ wallet: payerWallet, publicClient, escrow, ref: opened.ref, ticket: undefined });
    await store.putClosing(opened.sessionId, { state: closed.state, finalizesAt: closed.finalizesAt, closer: payer, txHash: closed.hash });
    await store.updateChannel(opened.sessionId, { status: "closing" });

    process.env.IOI_EXPLORER_URL = EXPLORER;
    let ui: UiServer;
    try {
      ui = await start({});
    } finally {
      delete process.env.IOI_EXPLORER_URL;
    }
    const { page, errors } = await open(ui.url);
    const closing = `#alerts li[data-kind="window-closing"][data-subject="${opened.sessionId}"]`;
    await page.waitForSelector(closing, { timeout: 20_000 });
    const left = Number(closed.finalizesAt - (await publicClient.getBlock()).timestamp);
    expect(left).to.be.within(1, 3600);
    expect(await page.$eval(closing, (li) => li.textContent)).to.equal(`The challenge window of channel ${opened.sessionId} closes in ${Math.ceil(left / 60)} min.`);

    // The window passes and the channel is finalized: the alert goes, the settlement links to its transaction.
    await hre.network.provider.send("evm_increaseTime", [3601]);
    await hre.network.provider.send("evm_mine", []);
    const settled = await finalizeClose({ wallet: payerWallet, publicClient, escrow, ref: opened.ref, recorded: closed.state });
    await page.waitForFunction((s) => document.querySelector(s) === null, { timeout: 20_000 }, closing);
    await page.click('nav button[data-tab="channels"]');
    const link = `#channels tr[data-session="${opened.sessionId}"] .settlement a.explorer`;
    await page.waitForSelector(link, { timeout: 20_000 });
    expect(await page.$eval(link, (a) => (a as HTMLAnchorElement).href)).to.equal(`${EXPLORER}/tx/${settled.hash}`);
    expect(errors).to.deep.equal([]);
    await page.close();
  });
});
