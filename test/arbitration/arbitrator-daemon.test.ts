/**
 * `ioi arbitrator serve` end to end on the in-process network (issue 29 items 1–3): the ten admitted
 * arbitrators each run a daemon (in-process; one as a real `ioi arbitrator serve` process in the restart test);
 * the client only opens the case and publishes where its package is. Nobody calls `arbitrate`, nobody passes
 * a signature file: the daemons draw the panel, fetch the package by hash, replay, sign, post, submit,
 * finalise and claim. Balances of every party are exact (each daemon's own gas included).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import os from "node:os";
import path from "node:path";

import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { createWalletClient, custom, getAddress, parseEventLogs, zeroAddress, zeroHash, type Address, type Hex } from "viem";
import { hardhat } from "viem/chains";

import { disputeManagerAbi } from "../../channel-client/abi/DisputeManager";
import { bundleHash } from "../../arbitration/documents/bundle";
import { buildGigPackage } from "../../arbitration/runner/build";
import { appealCase, openGigCase, type Deployment } from "../../arbitration/runner/chain";
import { serveEvidence, type EvidenceServer } from "../../arbitration/documents/evidence";
import { icsFromJson, icsHash, penaltyFor } from "../../arbitration/documents/ics";
import { packageHash, packageToJson, type ChallengePackage } from "../../arbitration/documents/package";
import { checkedWrite, type Wallet } from "../../channel-client/chain/write";
import { canon } from "../../channel-client/core/canonical";
import { ArbitratorDaemon } from "../../channel-client/node/arbitrator-daemon";
import { serveEmbeddedNetwork } from "../../scripts/embedded-rpc";
import { hardhatAccount } from "../helpers/fixtures";
import { drawPanel as drawPanelDirectly, KIND, STATUS, SYS, systemFixture, type System } from "../helpers/system";
import { BAD_DELIVERABLE, sampleIcsJson, SUITE } from "./fixtures/samples";

const ROOT = path.join(__dirname, "..", "..");
const BURN: Address = "0x000000000000000000000000000000000000dEaD";
const GIG_AMOUNT = 10n ** 18n;
const ARBITRATORS: readonly number[] = SYS.arbitrators;

function deploymentOf(s: System): Deployment {
  return { disputeManager: getAddress(s.disputes.address), gasEscrow: getAddress(s.escrow.address), gigEscrow: getAddress(s.gigs.address), registry: getAddress(s.registry.address), deploymentBlock: 0n };
}

const localWallet = (index: number) => createWalletClient({ account: hardhatAccount(index), chain: hardhat, transport: custom(hre.network.provider) }) as unknown as Wallet;

/** A delivered gig disputed at lane 1 by its client with `deliverable`; the package is written into `dir`. */
async function openCase(s: System, dir: string, deliverable = BAD_DELIVERABLE) {
  const ics = icsFromJson(sampleIcsJson({ asset: zeroAddress }));
  const deadline = (await time.latest()) + 30 * 86_400;
  await s.gigs.write.fund([s.provider.account.address, zeroAddress, GIG_AMOUNT, icsHash(ics), deadline, 3600], { account: s.client.account, value: GIG_AMOUNT });
  const gigId = await s.gigs.read.gigCount();
  await s.gigs.write.accept([gigId], { account: s.provider.account });
  await s.gigs.write.deliver([gigId, bundleHash(deliverable), zeroHash], { account: s.provider.account });
  const caseId = await s.disputes.read.nextCaseId([KIND.Gig, `0x${gigId.toString(16).padStart(64, "0")}`]);
  const pkg: ChallengePackage = buildGigPackage({
    caseId,
    chainId: s.chainId,
    disputeManager: getAddress(s.disputes.address),
    challenger: getAddress(s.client.account.address),
    lane: 1,
    gigEscrow: getAddress(s.gigs.address),
    gigId,
    ics,
    suite: SUITE,
    deliverable,
  });
  writeFileSync(path.join(dir, "package.json"), canon(packageToJson(pkg)));
  await openGigCase({ wallet: s.client as unknown as Wallet, publicClient: s.publicClient as never, disputeManager: getAddress(s.disputes.address), gigEscrow: getAddress(s.gigs.address), gigId, lane: 1, packageHash: packageHash(pkg) });
  return { caseId, pkg, ics, gigId };
}

async function publish(s: System, caseId: Hex, uri: string) {
  await checkedWrite({ publicClient: s.publicClient as never, wallet: s.client as unknown as Wallet, address: getAddress(s.disputes.address), abi: disputeManagerAbi, functionName: "publishEvidence", args: [caseId, uri], what: "publishEvidence" });
}

/** Every daemon ticks in turn, then a block is mined, until `done` (at most `max` rounds). */
async function drive(daemons: ArbitratorDaemon[], done: () => Promise<boolean>, max = 30): Promise<void> {
  for (let i = 0; i < max; i++) {
    for (const d of daemons) await d.tick();
    if (await done()) return;
    await hre.network.provider.send("hardhat_mine", ["0x1"]);
  }
  throw new Error(`the daemons did not get there in ${max} rounds`);
}

/** Gas each address paid (gasUsed × effectiveGasPrice) for transactions it sent in blocks after `from`. */
async function gasPaid(s: System, from: bigint, who: readonly Address[]): Promise<Map<string, bigint>> {
  const paid = new Map<string, bigint>(who.map((a) => [a.toLowerCase(), 0n]));
  const head = await s.publicClient.getBlockNumber();
  for (let n = from + 1n; n <= head; n++) {
    const block = await s.publicClient.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) {
      const key = tx.from.toLowerCase();
      if (!paid.has(key)) continue;
      const receipt = await s.publicClient.getTransactionReceipt({ hash: tx.hash });
      paid.set(key, paid.get(key)! + receipt.gasUsed * receipt.effectiveGasPrice);
    }
  }
  return paid;
}

async function dmEvents(s: System, eventName: "SignaturesPosted" | "VerdictSubmitted" | "ArbitrationFeeEarned" | "Claimed" | "ArbitratorPenalized" | "CaseExpired") {
  const logs = await s.publicClient.getLogs({ address: s.disputes.address, fromBlock: 0n });
  return parseEventLogs({ abi: disputeManagerAbi, logs, eventName: eventName as never }) as unknown as { args: Record<string, never>; blockNumber: bigint }[];
}

describe("arbitrator daemon: ioi arbitrator serve, evidence by hash, signatures on-chain", function () {
  this.timeout(170_000);
  let dir: string;
  let server: EvidenceServer | undefined;
  const extraServers: Server[] = [];
  const children = new Set<ChildProcess>();
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-arbd-"));
  });
  afterEach(async () => {
    for (const child of children) child.kill("SIGKILL");
    await server?.close();
    server = undefined;
    for (const s of extraServers.splice(0)) await new Promise((r) => s.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  const daemonsFor = (s: System, indices: readonly number[], options: Partial<ConstructorParameters<typeof ArbitratorDaemon>[0]> = {}, logs: string[] = []) =>
    indices.map(
      (i) =>
        new ArbitratorDaemon({
          publicClient: s.publicClient as never,
          wallet: localWallet(i),
          deployment: deploymentOf(s),
          stateFile: path.join(dir, `arbitrator-${i}.json`),
          retryMs: 0,
          graceMs: 60_000,
          log: (line) => logs.push(`${i}: ${line}`),
          ...options,
        }),
    );

  it("(b) ten daemons resolve a gig case with no arbitrate call and no signature file: Lane 1 provider fault, exact balances of every party", async function () {
    const s = await loadFixture(systemFixture);
    const c = await openCase(s, dir);
    server = await serveEvidence({ dir });
    await publish(s, c.caseId, server.url); // a base URI: the daemon appends the package hash
    const opened = await s.disputes.read.caseOf([c.caseId]);
    await time.increaseTo(BigInt(opened.respondBy) + 1n); // the provider stays silent
    const arbitrators = ARBITRATORS.map((i) => getAddress(hardhatAccount(i).address));
    const watch = [s.client.account.address, s.provider.account.address, BURN, s.disputes.address, s.gigs.address, ...arbitrators].map((a) => getAddress(a));
    const before = await Promise.all(watch.map((a) => s.publicClient.getBalance({ address: a })));
    const stakesBefore = await Promise.all(arbitrators.map((a) => s.registry.read.bondOf([1, a])));
    const slaBefore = await s.registry.read.bondOf([0, s.provider.account.address]);
    const startBlock = await s.publicClient.getBlockNumber();

    const logs: string[] = [];
    const daemons = daemonsFor(s, ARBITRATORS, {}, logs);
    for (const d of daemons) await d.open();
    await drive(daemons, async () => (await s.disputes.read.caseOf([c.caseId])).status === STATUS.Decided);
    const decided = await s.disputes.read.caseOf([c.caseId]);
    await time.increaseTo(BigInt(decided.deadline) + 1n);
    await drive(daemons, async () => {
      if ((await s.disputes.read.caseOf([c.caseId])).status !== STATUS.Resolved) return false;
      for (const a of arbitrators) if ((await s.disputes.read.claimable([zeroAddress, a])) !== 0n) return false;
      return true;
    });

    // The panel: drawn by the daemons; every member posted exactly one signature, all over one resolution.
    const panel = (await s.disputes.read.panelOf([c.caseId, 0])).map((a) => getAddress(a));
    expect(panel).to.have.length(3);
    const posted = await dmEvents(s, "SignaturesPosted");
    const postedSigners = posted.flatMap((e) => (e.args.signatures as unknown as unknown[]).map(() => e.args.resolution as unknown as { resolutionHash: Hex }));
    expect(posted).to.have.length(3);
    expect(new Set(postedSigners.map((r) => r.resolutionHash)).size).to.equal(1);
    const [verdict] = await dmEvents(s, "VerdictSubmitted");
    const penalty = penaltyFor(c.ics, 3, GIG_AMOUNT);
    expect(verdict!.args.verdict).to.equal(1);
    expect(verdict!.args.refund).to.equal(penalty.refund);
    expect(verdict!.args.slash).to.equal(penalty.slash);
    expect(verdict!.args.signedMask).to.equal(0b111); // the grace let all three in
    expect(await dmEvents(s, "ArbitratorPenalized")).to.have.length(0);
    // Each daemon kept the signature it posted, one per (case, round).
    for (const [k, d] of daemons.entries()) {
      const kept = Object.values(d.signedRecords());
      expect(kept.length).to.equal(panel.includes(arbitrators[k]!) ? 1 : 0);
    }

    // Exact balances: the fee split among the three signers (dust burnt), each daemon's gas its own.
    const bond = opened.challengerBond;
    const fee = (bond * 1_000n) / 10_000n;
    const share = fee / 3n;
    const paid = await gasPaid(s, startBlock, arbitrators);
    const after = await Promise.all(watch.map((a) => s.publicClient.getBalance({ address: a })));
    const delta = (i: number) => after[i]! - before[i]!;
    expect(delta(0)).to.equal(penalty.refund + bond - fee); // client: refund and bond back less the panel's fee
    expect(delta(1)).to.equal(GIG_AMOUNT - penalty.refund); // provider
    expect(delta(2)).to.equal(fee - share * 3n); // burn: the fee's dust
    expect(delta(3)).to.equal(-bond); // DisputeManager holds nothing of the case
    expect(delta(4)).to.equal(-GIG_AMOUNT); // GigEscrow
    for (const [k, a] of arbitrators.entries()) {
      const earned = panel.includes(a) ? share : 0n;
      expect(delta(5 + k), `arbitrator ${a}`).to.equal(earned - paid.get(a.toLowerCase())!);
      const stake = await s.registry.read.bondOf([1, a]);
      expect(stake.active).to.equal(stakesBefore[k]!.active);
    }
    const sla = await s.registry.read.bondOf([0, s.provider.account.address]);
    expect(slaBefore.active - sla.active).to.equal(penalty.slash);
    // Resource note: RPC requests of one idle pass (a new block, nothing to do) of a daemon that sat on the case.
    const idle = daemons[ARBITRATORS.findIndex((i) => panel.includes(getAddress(hardhatAccount(i).address)))]!;
    await hre.network.provider.send("hardhat_mine", ["0x1"]);
    const callsBefore = idle.rpcCalls;
    expect(await idle.tick()).to.deep.equal([]);
    console.log(`      [measured] RPC requests per idle pass (one new block, one finished case known): ${idle.rpcCalls - callsBefore}`);
    // Nobody ran `arbitrate` by hand: every step is in the daemons' logs.
    expect(logs.filter((l) => l.includes("signed case"))).to.have.length(3);
    expect(logs.some((l) => l.includes("submitted the verdict"))).to.equal(true);
    expect(logs.some((l) => l.includes("finalised case"))).to.equal(true);
  });

  it("(e) an appeal: the daemons draw the fresh 5-member panel, its members judge round 1 (one signature per case and round), finalise and claim; every party's balance as the contract's events say", async function () {
    const s = await loadFixture(systemFixture);
    const c = await openCase(s, dir);
    server = await serveEvidence({ dir });
    await publish(s, c.caseId, server.url);
    const opened = await s.disputes.read.caseOf([c.caseId]);
    await time.increaseTo(BigInt(opened.respondBy) + 1n);
    const arbitrators = ARBITRATORS.map((i) => getAddress(hardhatAccount(i).address));
    const watch = [s.client.account.address, s.provider.account.address, BURN, ...arbitrators].map((a) => getAddress(a));
    const before = await Promise.all(watch.map((a) => s.publicClient.getBalance({ address: a })));
    const startBlock = await s.publicClient.getBlockNumber();
    const daemons = daemonsFor(s, ARBITRATORS);
    for (const d of daemons) await d.open();
    const caseNow = () => s.disputes.read.caseOf([c.caseId]);
    await drive(daemons, async () => (await caseNow()).status === STATUS.Decided);
    // The provider appeals the verdict against it.
    const appealed = await appealCase({ wallet: s.provider as unknown as Wallet, publicClient: s.publicClient as never, disputeManager: getAddress(s.disputes.address), caseId: c.caseId });
    expect(appealed.round).to.equal(1);
    await drive(daemons, async () => {
      const now = await caseNow();
      return now.status === STATUS.Decided && now.round === 1;
    });
    await time.increaseTo(BigInt((await caseNow()).deadline) + 1n);
    await drive(daemons, async () => {
      if ((await caseNow()).status !== STATUS.Resolved) return false;
      for (const a of arbitrators) if ((await s.disputes.read.claimable([zeroAddress, a])) !== 0n) return false;
      return true;
    });

    const panel0 = (await s.disputes.read.panelOf([c.caseId, 0])).map((a) => getAddress(a));
    const panel1 = (await s.disputes.read.panelOf([c.caseId, 1])).map((a) => getAddress(a));
    expect(panel0).to.have.length(3);
    expect(panel1).to.have.length(5);
    expect(panel1.filter((a) => panel0.includes(a))).to.deep.equal([]);
    const posted = await dmEvents(s, "SignaturesPosted");
    expect(posted.map((e) => Number(e.args.round)).sort()).to.deep.equal([0, 0, 0, 1, 1, 1, 1, 1]);
    const verdicts = await dmEvents(s, "VerdictSubmitted");
    expect(verdicts.map((e) => [Number(e.args.round), Number(e.args.verdict), Number(e.args.signedMask)])).to.deep.equal([
      [0, 1, 0b111],
      [1, 1, 0b11111],
    ]);
    // Each daemon signed once for each round whose panel seated it, and never for another.
    for (const [k, d] of daemons.entries()) {
      const rounds = Object.values(d.signedRecords()).map((r) => r.round).sort();
      const expected = [...(panel0.includes(arbitrators[k]!) ? [0] : []), ...(panel1.includes(arbitrators[k]!) ? [1] : [])];
      expect(rounds, arbitrators[k]).to.deep.equal(expected);
    }

    // Balances: the client and provider as CaseResolved says (the provider also paid its appeal bond and gas),
    // the burn address its burnt share, each arbitrator the fees credited to it less its own gas.
    const logs = await s.publicClient.getLogs({ address: s.disputes.address, fromBlock: 0n });
    const [resolved] = parseEventLogs({ abi: disputeManagerAbi, logs, eventName: "CaseResolved" });
    const fees = parseEventLogs({ abi: disputeManagerAbi, logs, eventName: "ArbitrationFeeEarned" });
    const r = resolved!.args;
    expect(fees.map((f) => getAddress(f.args.arbitrator)).sort()).to.deep.equal([...panel0, ...panel1].sort());
    expect(fees.reduce((sum, f) => sum + f.args.amount, 0n) <= r.arbitrationFees).to.equal(true);
    const paid = await gasPaid(s, startBlock, [...arbitrators, getAddress(s.provider.account.address)]);
    const after = await Promise.all(watch.map((a) => s.publicClient.getBalance({ address: a })));
    const delta = (i: number) => after[i]! - before[i]!;
    expect(delta(0)).to.equal(r.refunded + r.toChallenger);
    expect(delta(1)).to.equal(GIG_AMOUNT - r.refunded + r.toRespondent - appealed.bond - paid.get(s.provider.account.address.toLowerCase())!);
    expect(delta(2)).to.equal(r.burned);
    for (const [k, a] of arbitrators.entries()) {
      const earned = fees.filter((f) => getAddress(f.args.arbitrator) === a).reduce((sum, f) => sum + f.args.amount, 0n);
      expect(delta(3 + k), a).to.equal(earned - paid.get(a.toLowerCase())!);
    }
    // The appellant lost: its appeal bond is not returned to it.
    expect(r.toRespondent).to.equal(0n);
  });

  it("(d) evidence down, wrong bytes or too slow: no daemon signs; the silent case goes to the slow path and expires without a verdict, exact balances", async function () {
    const s = await loadFixture(systemFixture);
    const c = await openCase(s, dir);
    // Down: a port nobody listens on. Wrong bytes: another valid package. Slow: headers, then nothing.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", () => r()));
    const downPort = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    // Another valid package (one word of its claim changed): well-formed, but not the bytes the case committed.
    const altered = packageToJson(c.pkg) as unknown as { claims: { description: string }[] };
    altered.claims[0]!.description += " (altered)";
    const wrongBytes = canon(altered);
    const wrong = createServer((_, res) => res.writeHead(200, { "content-type": "application/json" }).end(wrongBytes));
    const slow = createServer((_, res) => res.writeHead(200, { "content-type": "application/json" }).write("{"));
    for (const srv of [wrong, slow]) {
      extraServers.push(srv);
      await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
    }
    const port = (srv: Server) => (srv.address() as { port: number }).port;
    await publish(s, c.caseId, `http://127.0.0.1:${downPort}/`);
    await publish(s, c.caseId, `http://127.0.0.1:${port(wrong)}/`);
    await publish(s, c.caseId, `http://127.0.0.1:${port(slow)}/`);

    const opened = await s.disputes.read.caseOf([c.caseId]);
    await time.increaseTo(BigInt(opened.respondBy) + 1n);
    const arbitrators = ARBITRATORS.map((i) => getAddress(hardhatAccount(i).address));
    const watch = [s.client.account.address, s.provider.account.address, BURN, ...arbitrators].map((a) => getAddress(a));
    const before = await Promise.all(watch.map((a) => s.publicClient.getBalance({ address: a })));
    const startBlock = await s.publicClient.getBlockNumber();
    const logs: string[] = [];
    const daemons = daemonsFor(s, ARBITRATORS, { fetchTimeoutMs: 300, retryMs: 0 }, logs);
    for (const d of daemons) await d.open();
    await drive(daemons, async () => (await s.disputes.read.caseOf([c.caseId])).status === STATUS.Deliberating);
    // Several attempts inside the decision window: every one fails, nothing is signed.
    await drive(daemons, async () => false, 3).catch(() => undefined);
    const abstentions = logs.filter((l) => l.includes("abstained on case"));
    expect(abstentions.length).to.be.greaterThanOrEqual(3 * 3);
    expect(abstentions.every((l) => l.includes("unreachable") && l.includes("hash_mismatch") && l.includes("timeout"))).to.equal(true);
    expect(await dmEvents(s, "SignaturesPosted")).to.have.length(0);
    for (const d of daemons) expect(Object.keys(d.signedRecords())).to.have.length(0);

    // The decision deadline passes: a panel member's daemon sends it to the slow path; governance stays silent;
    // after the slow-path timeout it expires with no verdict: no refund, the gig released, both bonds back.
    const deliberating = await s.disputes.read.caseOf([c.caseId]);
    await time.increaseTo(BigInt(deliberating.deadline) + 1n);
    await drive(daemons, async () => (await s.disputes.read.caseOf([c.caseId])).status === STATUS.SlowPath);
    await time.increaseTo(BigInt((await s.disputes.read.caseOf([c.caseId])).deadline) + 1n);
    await drive(daemons, async () => (await s.disputes.read.caseOf([c.caseId])).status === STATUS.Expired);
    const [expired] = await dmEvents(s, "CaseExpired");
    expect(expired!.args.verdictStood).to.equal(false);
    const paid = await gasPaid(s, startBlock, arbitrators);
    const after = await Promise.all(watch.map((a) => s.publicClient.getBalance({ address: a })));
    const bond = opened.challengerBond;
    expect(after[0]! - before[0]!).to.equal(bond); // client: no refund, its bond back in full
    expect(after[1]! - before[1]!).to.equal(GIG_AMOUNT); // provider: paid as without a dispute
    expect(after[2]! - before[2]!).to.equal(0n);
    for (const [k, a] of arbitrators.entries()) expect(after[3 + k]! - before[3 + k]!).to.equal(-paid.get(a.toLowerCase())!);
  });

  it("(c) SIGKILL between storing and posting a signature: the restarted `ioi arbitrator serve` posts that signature and never signs again", async function () {
    const s = await loadFixture(systemFixture);
    const c = await openCase(s, dir);
    server = await serveEvidence({ dir });
    await publish(s, c.caseId, server.url);
    const opened = await s.disputes.read.caseOf([c.caseId]);
    await time.increaseTo(BigInt(opened.respondBy) + 1n);
    // The panel is drawn (the daemons' drawing is test (b)); its first member runs as a process, the others in-process.
    const panelKeys = await drawPanelDirectly(s, c.caseId);
    const panel = panelKeys.map((k) => getAddress(k.address));
    const processIndex = ARBITRATORS.find((i) => getAddress(hardhatAccount(i).address) === panel[0])!;
    const others = daemonsFor(s, ARBITRATORS.filter((i) => i !== processIndex && panel.includes(getAddress(hardhatAccount(i).address))));
    for (const d of others) await d.open();

    const rpc = await serveEmbeddedNetwork(hre);
    try {
      const stateFile = path.join(dir, "process-arbitrator.json");
      const key = `0x${Buffer.from((hardhatAccount(processIndex) as unknown as { getHdKey(): { privateKey: Uint8Array } }).getHdKey().privateKey).toString("hex")}` as Hex;
      const start = (env: Record<string, string>) => {
        const child = spawn(
          process.execPath,
          [path.join(ROOT, "bin/ioi.js"), "arbitrator", "serve", "--rpc", rpc.url, "--dispute-manager", s.disputes.address, "--state", stateFile, "--poll-ms", "200", "--grace-ms", "60000", "--max-runtime-ms", "60000"],
          { cwd: ROOT, env: { ...process.env, IOI_PRIVATE_KEY: key, IOI_CLI_SOURCE: "1", ...env }, stdio: ["ignore", "pipe", "pipe"] },
        );
        children.add(child);
        let stderr = "";
        child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
        const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
          child.once("exit", (code, signal) => (children.delete(child), resolve({ code, signal, stderr }))),
        );
        return { child, exited };
      };
      // First life: it judges, stores its signature, and is killed before posting it.
      const first = await start({ IOI_FAULT_KILL_AFTER_SIGN: "1" });
      const died = await first.exited;
      expect(died.signal, died.stderr).to.equal("SIGKILL");
      const stored = JSON.parse(readFileSync(stateFile, "utf8")) as { signed: Record<string, { digest: Hex; signature: Hex }> };
      const keys = Object.keys(stored.signed);
      expect(keys).to.have.length(1);
      expect(await dmEvents(s, "SignaturesPosted")).to.have.length(0);

      // Second life: it resumes, posts the stored signature (the same bytes), and the case proceeds.
      const second = start({});
      for (let i = 0; i < 200; i++) {
        const posts = await dmEvents(s, "SignaturesPosted");
        if (posts.length > 0) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      const posts = await dmEvents(s, "SignaturesPosted");
      expect(posts).to.have.length(1);
      // The killed process left its lock behind; the restarted one took it over, and holds it: a second daemon
      // on the same state file is refused.
      expect(Number(readFileSync(`${stateFile}.lock`, "utf8"))).to.equal(second.child.pid);
      const intruder = new ArbitratorDaemon({ publicClient: s.publicClient as never, wallet: localWallet(processIndex), deployment: deploymentOf(s), stateFile, log: () => {} });
      const refusal = await intruder.open().then(() => undefined, (e: unknown) => e as Error);
      expect(refusal?.message).to.match(/^Another daemon \(pid \d+\) is using /);
      const sig = (posts[0]!.args.signatures as unknown as { r: Hex; vs: Hex }[])[0]!;
      const { toCompactSignature } = await import("../../channel-client/core/eip712");
      expect(sig).to.deep.equal(toCompactSignature(stored.signed[keys[0]!]!.signature));
      // The other members' daemons sign too; the panel's verdict goes in with all three.
      await drive(others, async () => (await s.disputes.read.caseOf([c.caseId])).status === STATUS.Decided, 40);
      const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${second.child.pid}/status`, "utf8"))?.[1];
      console.log(`      [measured] RSS of the \`ioi arbitrator serve\` process after judging one case: ${rss} kB`);
      second.child.kill("SIGTERM");
      const stopped = await second.exited;
      expect(stopped.code, stopped.stderr).to.equal(0);
      expect(existsSync(`${stateFile}.lock`)).to.equal(false);
      const afterRestart = JSON.parse(readFileSync(stateFile, "utf8")) as typeof stored;
      // The same one signature, now marked posted: nothing else signed for the round.
      expect(Object.keys(afterRestart.signed)).to.deep.equal(keys);
      const { postedInBlock, ...kept } = afterRestart.signed[keys[0]!]! as (typeof stored.signed)[string] & { postedInBlock?: unknown };
      expect(kept).to.deep.equal(stored.signed[keys[0]!]);
      expect(postedInBlock).to.not.equal(undefined);
      const all = await dmEvents(s, "SignaturesPosted");
      const bySigner = all.filter((e) => (e.args.signatures as unknown as { r: Hex }[]).some((x) => x.r === sig.r));
      expect(bySigner).to.have.length(1); // one post, one signature, by the restarted member
      const [verdict] = await dmEvents(s, "VerdictSubmitted");
      expect(verdict!.args.signedMask).to.equal(0b111);
    } finally {
      await rpc.close();
    }
  });
});
