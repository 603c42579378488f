/// <reference lib="dom" />
/**
 * Issue 28 item 10 in a real headless Chromium: the figures the page shows are read back from the page, parsed
 * from their own unit ("8000 wei", "250 gwei", "0.01 ETH", "-25 LGAS") and compared with the chain read through
 * viem — a micro-payment session before and after its cooperative settlement, an open one, the demo gig case
 * whose verdict slashed the provider's LGAS bond with a burnt share, open gigs — and a proof result never
 * outlives the channel it was made for, even one still running when the page moves to another channel.
 */
import chromium from "@sparticuz/chromium";
import { expect } from "chai";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import hre from "hardhat";
import puppeteer, { type Browser, type HTTPRequest } from "puppeteer-core";
import { erc20Abi, getAddress, isAddressEqual, parseEther, parseGwei, parseUnits, zeroAddress, type Address, type Hex, type PublicClient } from "viem";

import { providerRegistryAbi } from "../../channel-client/abi/ProviderRegistry";
import { disputeManagerAbi } from "../../arbitration/runner/chain";
import { FINAL_VERDICTS } from "../../arbitration/lanes/resolution";
import { echoHandler } from "../../channel-client/cli/channel";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { closeCooperative, gasEscrowAbi, openChannel, type Wallet } from "../../channel-client/chain/escrow";
import { acceptGig, fundGig } from "../../channel-client/chain/gig";
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
/** A micro-payment: 8000 wei a call, which the page used to show as "0 ETH". */
const PRICE = 8000n;
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const CALLS_A = 50;
const CALLS_B = 7;
const DEPOSIT_A = parseEther("0.01");
const DEPOSIT_B = parseGwei("250");
const BURN: Address = "0x000000000000000000000000000000000000dEaD";

const DECIMALS: Record<string, number> = { wei: 0, gwei: 9, ETH: 18, LGAS: 18 };

/** A figure as the page shows it, back in base units: "8000 wei" → 8000n, "-25 LGAS" → -25n × 10^18. */
function shown(text: string | null | undefined): { amount: bigint; unit: string } {
  const match = /^(-?[0-9]+(?:\.[0-9]+)?) (wei|gwei|ETH|LGAS)$/.exec((text ?? "").trim());
  if (!match) throw new Error(`The page shows "${text}", not an amount in wei, gwei, ETH or LGAS.`);
  return { amount: parseUnits(match[1]!, DECIMALS[match[2]!]!), unit: match[2]! };
}

describe("issue 28 item 10: the page's money against the chain (headless browser)", function () {
  this.timeout(300_000);
  const cleanup: Array<() => Promise<unknown>> = [];
  let dir: string;
  let browser: Browser | undefined;

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-ui-money-"));
    mkdirSync(OUTPUT, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    while (cleanup.length > 0) await cleanup.pop()!().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  /** The devnet after the demo's two cases, two open gigs, and two micro-payment channels (A settled, B open). */
  async function world() {
    const publicClient = (await hre.viem.getPublicClient()) as unknown as PublicClient;
    const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
    const deployment = await deployAll(hre);
    const c = deployment.contracts;
    const records = path.join(dir, "records");
    const cases = await runDisputeDemo({ hre, deployment, publicClient, wallets, log: () => undefined, recordsDir: records, fixedGigTime: false });
    const gigCase = cases.find((k) => k.subject === "gig")!;

    // Two open gigs, both open to any provider: one nobody took, one the (bonded) provider took tentatively.
    const gigEscrow = c.GigEscrow.address;
    const client = wallets[ROLE.funder]!;
    const deadline = (await publicClient.getBlock()).timestamp + 86_400n;
    const untaken = await fundGig({ wallet: client, publicClient, gigEscrow, amount: parseGwei("42"), icsHash: `0x${"42".repeat(32)}`, deadline, disputeWindow: 3600n });
    const taken = await fundGig({ wallet: client, publicClient, gigEscrow, amount: parseEther("0.5"), icsHash: `0x${"43".repeat(32)}`, deadline, disputeWindow: 3600n });
    const providerAddress = getAddress(hardhatAccount(ROLE.provider).address);
    await acceptGig({ wallet: wallets[ROLE.provider]!, publicClient, gigEscrow, gigId: taken.gigId });

    const escrow = c.GasEscrow.address;
    const domain = gasEscrowDomain({ chainId: await publicClient.getChainId(), verifyingContract: escrow });
    const providerStore = SqliteStore.open(path.join(dir, "provider.db"));
    const node = await ProviderNode.start({ account: hardhatAccount(ROLE.provider), publicClient, domain, store: providerStore, pricing, handler: echoHandler, modelSnapshotId: "worker:echo@1" });
    const ui: UiServer = await startUi({ store: providerStore, publicClient, escrow, disputeManager: c.DisputeManager.address, gigEscrow, recordsDir: records, sampleMs: 250 });
    cleanup.push(async () => {
      await ui.close();
      await node.stop();
      await providerStore.close();
    });

    // Two channels payer → provider at 8000 wei a call: A (0.01 ETH) settles, B (250 gwei) stays open.
    const payerWallet = wallets[ROLE.payer]!;
    const payer = hardhatAccount(ROLE.payer);
    const payerStore = SqliteStore.open(path.join(dir, "payer.db"));
    cleanup.push(() => payerStore.close());
    const open = async (amount: bigint, nonce: bigint, calls: number) => {
      const opened = await openChannel({
        wallet: payerWallet,
        publicClient,
        escrow,
        amount,
        terms: { payer: payer.address, provider: providerAddress, funder: payer.address, asset: NATIVE_ASSET, termsHash: termsHashOf(pricing), policyHash: `0x${"11".repeat(32)}`, challengeDuration: 3600n, nonce },
      });
      await payerStore.putChannel({ sessionId: opened.sessionId, role: "payer", ref: opened.ref, pricing, escrow, chainId: domain.chainId, deposit: opened.deposit, status: "open" });
      const session = await PayerClient.connect({ account: payer, domain, store: payerStore, channel: payerStore.getChannel(opened.sessionId)!, port: node.port });
      await session.stream({ count: calls, inflight: 4, request: (i) => ({ jsonrpc: "2.0", id: i, method: "tools/echo", params: { i } }) });
      return { opened, session };
    };
    const a = await open(DEPOSIT_A, 281n, CALLS_A);
    const b = await open(DEPOSIT_B, 282n, CALLS_B);
    await b.session.close();

    browser = await puppeteer.launch({ args: [...chromium.args, "--lang=en-US"], env: { ...process.env, LANG: "en_US.UTF-8", LC_ALL: "en_US.UTF-8" }, executablePath: await chromium.executablePath(), headless: true, defaultViewport: { width: 1500, height: 900 } });
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    // A wait that fails says what the page reported.
    const waitFor = async <A extends unknown[]>(fn: (...args: A) => boolean, ...args: A) =>
      page.waitForFunction(fn as never, { timeout: 20_000 }, ...(args as unknown as never[])).catch(async (error: unknown) => {
        throw new Error(`${(error as Error).message}; the page says: ${await page.$eval("header", (e) => e.textContent)} ${errors.join("; ")}`);
      });
    await page.goto(ui.url, { waitUntil: "load" });
    const rowA = `#channels tr[data-session="${a.opened.sessionId}"]`;
    const rowB = `#channels tr[data-session="${b.opened.sessionId}"]`;
    await waitFor((s, n) => Number(document.querySelector(`${s} .receipts-count`)?.textContent) === n, rowA, CALLS_A);
    await waitFor((s, n) => Number(document.querySelector(`${s} .receipts-count`)?.textContent) === n, rowB, CALLS_B);
    const figures = (row: string) =>
      page.$eval(row, (tr) => ({
        deposit: tr.querySelector(".deposit")?.textContent,
        paid: tr.querySelector(".paid")?.textContent,
        remaining: tr.querySelector(".remaining")?.textContent,
        claimable: tr.querySelector(".claimable")?.textContent,
        toProvider: tr.querySelector(".settlement .to-provider .money")?.textContent,
        fee: tr.querySelector(".settlement .fee .money")?.textContent,
        toFunder: tr.querySelector(".settlement .to-funder .money")?.textContent,
      }));
    const depositOf = (sessionId: Hex) => publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "depositOf", args: [sessionId] });

    // A settles cooperatively.
    await a.session.commit();
    const { summary, payerSignature, providerSignature } = await a.session.cooperativeClose();
    await a.session.close();
    const settled = await closeCooperative({ wallet: payerWallet, publicClient, escrow, ref: a.opened.ref, summary, payerSignature, providerSignature });
    const block = (await publicClient.getTransactionReceipt({ hash: settled.hash })).blockNumber;
    const ethDelta = (address: Address, at: bigint) =>
      Promise.all([publicClient.getBalance({ address, blockNumber: at }), publicClient.getBalance({ address, blockNumber: at - 1n })]).then(([x, y]) => x - y);
    const gasOf = async (hash: Hex) => {
      const receipt = await publicClient.getTransactionReceipt({ hash });
      return { from: receipt.from, cost: receipt.gasUsed * receipt.effectiveGasPrice };
    };
    return { publicClient, c, gigCase, untaken, taken, providerAddress, a, b, page, errors, waitFor, rowA, rowB, figures, depositOf, payer, settled, block, ethDelta, gasOf };
  }
  let w: Awaited<ReturnType<typeof world>>;
  before(async () => {
    w = await world();
  });
  afterEach(function () {
    // Each test reads what the page shows; a script error on the page fails the test that caused it.
    const errors = w?.errors ?? [];
    expect(errors, errors.join("\n")).to.deep.equal([]);
  });

  it("issue 28 item 10: a micro-payment channel's figures are the chain's, to the wei: open (gwei, wei) and settled (each party's balance change)", async () => {
    const { providerAddress, b, page, waitFor, rowA, rowB, figures, depositOf, payer, settled, block, ethDelta, gasOf } = w;
    // Open channels: what the page shows is what the escrow holds and what the newest ticket pays, to the wei.
    const openB = await figures(rowB);
    expect(openB.paid, "7 calls at 8000 wei").to.equal("56000 wei");
    expect(openB.deposit).to.equal("250 gwei");
    expect(shown(openB.deposit).amount).to.equal(await depositOf(b.opened.sessionId));
    expect(shown(openB.paid).amount).to.equal(BigInt(CALLS_B) * PRICE);
    expect(shown(openB.remaining).amount).to.equal((await depositOf(b.opened.sessionId)) - BigInt(CALLS_B) * PRICE);
    expect(shown(openB.claimable).amount).to.equal(BigInt(CALLS_B) * PRICE);

    // A settled: the page's split is each party's balance change in the settling block.
    await waitFor((s) => document.querySelector(`${s} .phase`)?.textContent === "Settled", rowA);
    await waitFor((s) => document.querySelector(`${s} .settlement .to-provider`) !== null, rowA);
    const after = await figures(rowA);
    const settleGas = await gasOf(settled.hash);
    expect(isAddressEqual(settleGas.from, payer.address)).to.equal(true);
    expect(shown(after.toProvider).amount, "to the provider").to.equal(await ethDelta(providerAddress, block));
    expect(shown(after.toFunder).amount, "back to the funder").to.equal((await ethDelta(payer.address, block)) + settleGas.cost);
    expect(shown(after.toProvider).amount + shown(after.fee).amount, "paid = provider + fee").to.equal(BigInt(CALLS_A) * PRICE);
    expect(shown(after.toProvider).amount + shown(after.fee).amount + shown(after.toFunder).amount).to.equal(DEPOSIT_A);
    expect(after.paid).to.equal("400000 wei");
    expect(shown(after.paid).amount).to.equal(BigInt(CALLS_A) * PRICE);
    expect(shown(after.claimable).amount).to.equal(0n);
    await page.screenshot({ path: path.join(OUTPUT, "money-1-channels.png"), fullPage: true });
  });

  it("issue 28 item 10: a proof result belongs to its channel: cleared on navigation, a late one dropped", async () => {
    const { page, waitFor, rowA, rowB, a, b } = w;
    // Navigation: a valid proof in A is gone once B's receipts are open; B's receipts read in wei.
    const proofState = () => page.$eval("#proof-result", (e) => ({ result: (e as HTMLElement).dataset.result ?? null, session: (e as HTMLElement).dataset.session ?? null, text: e.textContent ?? "" }));
    await clickNow(page, `${rowA} button.receipts`);
    await page.waitForSelector('#receipts button.prove[data-index="10"]');
    await clickNow(page, '#receipts button.prove[data-index="10"]');
    await page.waitForSelector("#proof-result[data-result]");
    expect((await proofState()).result).to.equal("valid");
    await clickNow(page, `${rowB} button.receipts`);
    await waitFor((s) => document.querySelector("#receipts-session")?.textContent === s && document.querySelectorAll("#receipts tbody tr").length > 0, b.opened.sessionId);
    expect(await proofState()).to.deep.equal({ result: null, session: null, text: "" });
    const amounts = await page.$$eval("#receipts tbody td.amount", (tds) => tds.map((td) => td.textContent));
    expect(amounts.map((t) => shown(t).amount)).to.deep.equal(Array.from({ length: CALLS_B }, (_, i) => BigInt(i + 1) * PRICE));
    // B has no root on-chain yet: its proof says so, for B.
    await clickNow(page, '#receipts button.prove[data-index="3"]');
    await page.waitForSelector("#proof-result[data-result]");
    const proofB = await proofState();
    expect(proofB).to.deep.include({ result: "error", session: b.opened.sessionId });
    expect(proofB.text).to.include("no receipt root");
    // A proof of A still running when the page moves to B must not land on B's panel.
    await clickNow(page, `${rowA} button.receipts`);
    await waitFor((s) => document.querySelector("#receipts-session")?.textContent === s && document.querySelector('#receipts button.prove[data-index="10"]') !== null, a.opened.sessionId);
    expect((await proofState()).result).to.equal(null);
    await page.setRequestInterception(true);
    let release: (() => void) | undefined;
    // Removed before interception is turned off: a listener left behind would call continue() on the next
    // tests' requests, which puppeteer refuses once interception is off.
    let onRequest: ((request: HTTPRequest) => void) | undefined;
    const held = new Promise<void>((resolve) => {
      onRequest = (request: HTTPRequest) => {
        if (request.url().includes("/proof-data") && !release) {
          release = () => void request.continue().catch(() => undefined);
          resolve();
        } else void request.continue().catch(() => undefined);
      };
      page.on("request", onRequest);
    });
    await clickNow(page, '#receipts button.prove[data-index="10"]');
    await held;
    await clickNow(page, `${rowB} button.receipts`);
    await waitFor((s) => document.querySelector("#receipts-session")?.textContent === s && document.querySelectorAll("#receipts tbody tr").length > 0, b.opened.sessionId);
    const late = page.waitForResponse((response) => response.url().includes("/proof-data"));
    release!();
    await late;
    // Two of the page's polls later the late proof has certainly been handled.
    for (let i = 0; i < 2; i++) {
      const stamp = await page.$eval("body", (e) => (e as HTMLElement).dataset.updated);
      await waitFor((s) => (document.body as HTMLElement).dataset.updated !== s, stamp);
    }
    expect(await proofState()).to.deep.equal({ result: null, session: null, text: "" });
    page.off("request", onRequest!);
    await page.setRequestInterception(false);

  });

  it("issue 28 item 10: an open gig's provider is nobody or its tentative taker, never the zero address", async () => {
    const { page, untaken, taken, providerAddress, gigCase } = w;
    // Gigs and the demo's gig case.
    await page.click('nav button[data-tab="cases"]');
    const caseSelector = `.case[data-case="${gigCase.caseId}"]`;
    await page.waitForSelector(caseSelector);
    const gigCell = (id: bigint) => page.$eval(`#gigs tr[data-gig="${id}"]`, (tr) => ({ provider: tr.children[3]!.textContent, title: (tr.children[3] as HTMLElement).title, amount: tr.children[4]!.textContent }));
    // The demo's gig named its provider at funding: the address, nothing tentative about it.
    const namedCell = await gigCell(untaken.gigId - 1n);
    expect(getAddress(namedCell.title)).to.equal(providerAddress);
    expect(namedCell.provider).to.not.match(/tentative|open/);
    const untakenCell = await gigCell(untaken.gigId);
    expect(untakenCell.provider).to.equal("open to any bonded provider");
    expect(untakenCell.amount).to.equal("42 gwei");
    const takenCell = await gigCell(taken.gigId);
    expect(takenCell.provider).to.match(/\(tentative\)$/);
    expect(getAddress(takenCell.title)).to.equal(providerAddress);
    expect(shown(takenCell.amount).amount).to.equal(parseEther("0.5"));

  });

  it("issue 28 item 10: a slash reads in LGAS with its burn, every balance change of the case matches the chain, verdicts carry the CLI's names", async () => {
    const { page, publicClient, c, gigCase, providerAddress, ethDelta, gasOf } = w;
    const caseSelector = `.case[data-case="${gigCase.caseId}"]`;
    await page.click('nav button[data-tab="cases"]');
    await page.waitForSelector(caseSelector);
    const shownCase = await page.$eval(caseSelector, (e) => ({
      verdict: e.querySelector(".verdict")?.textContent ?? "",
      remedy: e.querySelector(".remedy")?.textContent ?? "",
      tx: e.querySelector(".resolved-tx")?.textContent ?? "",
      rows: Array.from(e.querySelectorAll(".balances tbody tr")).map((tr) => ({
        account: (tr as HTMLElement).dataset.account!,
        ledger: (tr as HTMLElement).dataset.ledger!,
        role: (tr as HTMLElement).dataset.role ?? null,
        change: tr.querySelector(".change .money")?.textContent ?? "",
      })),
    }));
    expect(shownCase.verdict).to.match(/^provider_fault — /);
    expect(FINAL_VERDICTS).to.include(shownCase.verdict.split(" ")[0]);
    await page.$eval(caseSelector, (e) => e.scrollIntoView());
    await page.screenshot({ path: path.join(OUTPUT, "money-2-case.png"), fullPage: true });

    // Every row against the chain: each (account, ledger, unit) summed, compared with its change across the
    // block that enforced the case.
    const resolvedAt = (await publicClient.getTransactionReceipt({ hash: shownCase.tx as Hex })).blockNumber;
    const finalizeGas = await gasOf(shownCase.tx as Hex);
    const registry = await publicClient.readContract({ address: c.DisputeManager.address, abi: disputeManagerAbi, functionName: "registry" });
    const lgas = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondToken" });
    const groups = new Map<string, { account: Address; ledger: string; role: string | null; unit: string; sum: bigint }>();
    for (const row of shownCase.rows) {
      const { amount, unit } = shown(row.change);
      const family = unit === "LGAS" ? "LGAS" : "ETH";
      const key = `${row.account.toLowerCase()}:${row.ledger}:${row.role}:${family}`;
      const g = groups.get(key) ?? { account: getAddress(row.account), ledger: row.ledger, role: row.role, unit: family, sum: 0n };
      g.sum += amount;
      groups.set(key, g);
    }
    const at = async (read: (blockNumber: bigint) => Promise<bigint>) => (await read(resolvedAt)) - (await read(resolvedAt - 1n));
    for (const g of groups.values()) {
      let onChain: bigint;
      if (g.ledger === "wallet" && g.unit === "ETH") {
        onChain = (await ethDelta(g.account, resolvedAt)) + (isAddressEqual(g.account, finalizeGas.from) ? finalizeGas.cost : 0n);
      } else if (g.ledger === "wallet") {
        onChain = await at((blockNumber) => publicClient.readContract({ address: lgas, abi: erc20Abi, functionName: "balanceOf", args: [g.account], blockNumber }));
      } else if (g.ledger === "bond") {
        onChain = await at(async (blockNumber) => {
          const bond = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondOf", args: [g.role === "provider" ? 0 : 1, g.account], blockNumber });
          return bond.active + bond.pending;
        });
      } else if (g.ledger === "claimable") {
        onChain = await at((blockNumber) => publicClient.readContract({ address: c.DisputeManager.address, abi: disputeManagerAbi, functionName: "claimable", args: [zeroAddress, g.account], blockNumber }));
      } else throw new Error(`A gig case has no ${g.ledger} row.`);
      expect(g.sum, `${g.account} ${g.ledger} ${g.unit}`).to.equal(onChain);
    }
    // The slash is in LGAS, negative, off the provider's bond, and its burnt share is there, also in LGAS.
    const slash = shownCase.rows.find((r) => r.ledger === "bond" && isAddressEqual(r.account as Address, providerAddress));
    expect(slash, "the slash row").to.not.equal(undefined);
    expect(shown(slash!.change).unit).to.equal("LGAS");
    expect(shown(slash!.change).amount).to.equal(-BigInt(gigCase.slash));
    const lgasBurn = shownCase.rows.find((r) => isAddressEqual(r.account as Address, BURN) && shown(r.change).unit === "LGAS");
    expect(lgasBurn, "the LGAS burn row").to.not.equal(undefined);
    expect(shown(lgasBurn!.change).amount > 0n, "a burnt share").to.equal(true);
    expect(shownCase.remedy).to.include(`slashed ${slash!.change.slice(1)} of bond`);
    expect(shownCase.remedy).to.not.match(/slashed [0-9.]+ ETH/);
    // Every LGAS that left the registry is on the page: beneficiary + burn = slash.
    const lgasRows = shownCase.rows.filter((r) => shown(r.change).unit === "LGAS");
    expect(lgasRows.reduce((sum, r) => sum + shown(r.change).amount, 0n)).to.equal(0n);

  });
});
