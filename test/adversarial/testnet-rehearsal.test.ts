/**
 * The testnet rehearsal (issue 29 item 9; decision 0019, amended). A SECOND devnet process under its own chain id
 * (31338: the reading defaults of a public chain, so 12 confirmations and no devnet shortcuts in the followers)
 * mining a block every 250 ms (interval mining, automine off: every transaction waits for its block, as on a
 * testnet), deployed with the project's deploy script (record `chain-31338.json`, nine arbitrators registered,
 * staked and admitted by the deployment itself, a 1 % routing fee to a treasury), and then daemons only, each a
 * real process of `bin/ioi.js`:
 *
 *   - the provider node (`ioi provider`: sealed socket, its watchtower finalises and claims),
 *   - the payer's watchtower (`ioi watchtower --db payer.db`),
 *   - three `ioi arbitrator serve` processes, each serving three admitted arbitrator keys (`--key-env A,B,C`),
 *   - the challenger's evidence host (`ioi evidence serve`),
 *
 * every follower `--confirmations 12`. After they start, the only commands typed are the parties' intentions
 * (open, pay, close, fund, accept, deliver, dispute, publish, appeal), run as `ioi` command lines in this process
 * (the same argv as the README's testnet section), and the operator's devnet clock (`ioi devnet time`, a devnet
 * tool standing for the days a testnet would take). Nobody calls `arbitrate`, `case draw`, `case submit`,
 * `case finalize`, `finalize` or `claim`: the daemons do. At the end the exact balance change of every party,
 * the escrows, the DisputeManager, the registry (LaborGas) and the treasury's accrued fee, each party's own gas
 * read from the blocks.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";

import { expect } from "chai";
import { createPublicClient, erc20Abi, getAddress, http, parseEventLogs, toHex, zeroAddress, type Address, type Hex, type PublicClient } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { disputeManagerAbi } from "../../channel-client/abi/DisputeManager";
import { gasEscrowAbi } from "../../channel-client/abi/GasEscrow";
import { providerRegistryAbi } from "../../channel-client/abi/ProviderRegistry";
import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import { icsToJson, penaltyFor } from "../../arbitration/documents/ics";
import { codeGigIcs, FAILING_DELIVERABLE, SUITE } from "../../scripts/examples/code-gig";
import { runCli } from "../helpers/cli";
import { HARDHAT_MNEMONIC } from "../helpers/fixtures";

const ROOT = path.join(__dirname, "..", "..");
const HARDHAT = require.resolve("hardhat/internal/cli/bootstrap");
const CHAIN_ID = 31338;
const BLOCK_MS = 250;
const CONFIRMATIONS = "12";
const BURN: Address = "0x000000000000000000000000000000000000dEaD";
const PRICE = 1_000n; // wei per call
const CALLS = 20n;
const DEPOSIT = 1_000_000n;
const GIG_AMOUNT = 10n ** 17n; // 0.1 ETH
const FEE_BPS = 100n; // the routing fee: 1 %

const account = (index: number) => mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index });
const keyOf = (index: number) => toHex(account(index).getHdKey().privateKey!) as Hex;
const addressOf = (index: number) => getAddress(account(index).address);
const PAYER = 2;
const PROVIDER = 3;
const CLIENT = 4;
const TREASURY = 5;
/** Hardhat accounts 20..28: the nine arbitrators the deployment admits (IOI_DEVNET_ARBITRATOR_COUNT=9). */
const ARBITRATORS = Array.from({ length: 9 }, (_, i) => 20 + i);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function writeBundle(dir: string, bundle: Bundle): string {
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(bundle.files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

type Daemon = { name: string; child: ChildProcess; output: () => string; line: (pattern: RegExp) => Promise<string> };

describe("testnet rehearsal: a second devnet (chain 31338, a block every 250 ms, 12 confirmations), daemons only", function () {
  this.timeout(300_000);
  const children: ChildProcess[] = [];
  let dir: string;

  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once("exit", r)))));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Spawns a process; `line(re)` resolves with the first output line matching `re`. */
  function start(name: string, argv: string[], env: Record<string, string>): Daemon {
    const child = spawn(process.execPath, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    let text = "";
    const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8");
      for (const w of waiters.splice(0)) {
        const hit = text.split("\n").find((l) => w.pattern.test(l));
        if (hit) w.resolve(hit);
        else waiters.push(w);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    return {
      name,
      child,
      output: () => text,
      line: (pattern) =>
        new Promise<string>((resolve, reject) => {
          const hit = text.split("\n").find((l) => pattern.test(l));
          if (hit) return resolve(hit);
          waiters.push({ pattern, resolve });
          child.once("exit", (code, signal) => reject(new Error(`${name} exited (${code ?? signal}) before printing ${pattern}:\n${text.slice(-3000)}`)));
        }),
    };
  }

  it("takes a channel, a gig and a dispute with an appeal through every payout with daemons only; exact balances of every party", async function () {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-rehearsal-"));
    const deployments = path.join(dir, "deployments");
    mkdirSync(deployments);

    // 1. The second devnet: its own process and chain id; interval mining with automine off, like a testnet.
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const node = start("devnet", [HARDHAT, "node", "--hostname", "127.0.0.1", "--port", String(port)], { IOI_DEVNET_CHAIN_ID: String(CHAIN_ID) });
    await node.line(/Started HTTP and WebSocket JSON-RPC server/);
    const publicClient = createPublicClient({ transport: http(url), pollingInterval: 100, cacheTime: 0 }) as PublicClient;
    expect(await publicClient.getChainId()).to.equal(CHAIN_ID);
    await publicClient.request({ method: "evm_setAutomine" as never, params: [false] as never });
    await publicClient.request({ method: "evm_setIntervalMining" as never, params: [BLOCK_MS] as never });

    // 2. The project's deploy path, as the README's testnet section runs it (the deployer is account 0).
    const deploy = start("deploy", [HARDHAT, "run", "scripts/deploy.ts", "--network", "localhost"], {
      IOI_DEVNET_PORT: String(port),
      IOI_DEPLOYMENTS_DIR: deployments,
      IOI_DEVNET_ARBITRATORS: "1",
      IOI_DEVNET_ARBITRATOR_COUNT: String(ARBITRATORS.length),
      IOI_DEPLOY_POLL_MS: "100",
      IOI_DISPUTE_PANEL_SIZE: "3", // round 0 seats 3, the appeal a fresh 5 (2 × 3 − 1): 8 of the 9 admitted
      IOI_ROUTING_FEE_BPS: String(FEE_BPS),
      IOI_TREASURY: addressOf(TREASURY),
    });
    const deployed = await new Promise<number | null>((resolve) => deploy.child.once("exit", resolve));
    expect(deployed, deploy.output()).to.equal(0);
    const record = JSON.parse(require("node:fs").readFileSync(path.join(deployments, `chain-${CHAIN_ID}.json`), "utf8")) as {
      contracts: Record<string, { address: Address; blockNumber: string }>;
      initialArbitrators: Address[];
    };
    const c = Object.fromEntries(Object.entries(record.contracts).map(([k, v]) => [k, getAddress(v.address)])) as Record<string, Address>;
    expect(record.initialArbitrators.map((a) => getAddress(a))).to.deep.equal(ARBITRATORS.map(addressOf));

    // Off the known devnets a client polls every 12 s; this chain makes a block every 250 ms.
    const env = { IOI_RPC_URL: url, IOI_DEPLOYMENTS_DIR: deployments, IOI_CLI_SOURCE: "1", IOI_POLL_MS: "250" };
    /** A party's intention, typed as an `ioi` command line (in this process; the daemons are processes). */
    const ioi = async (who: number, argv: string[]) => {
      const result = await runCli([...argv, "--json"], { ...env, IOI_PRIVATE_KEY: keyOf(who) });
      expect(result.code, `ioi ${argv.join(" ")}\n${result.err}\n${result.out}`).to.equal(0);
      return JSON.parse(result.out.split("\n").pop()!) as Record<string, any>;
    };

    // Before the daemons: the provider registers and bonds (it needs LaborGas: the devnet faucet).
    await ioi(0, ["faucet", "--to", addressOf(PROVIDER), "--eth", "0", "--lgas", "1000"]);
    await ioi(PROVIDER, ["provider", "register", "--endpoint", "tcp://127.0.0.1:7000", "--capabilities", '{"worker":"echo"}', "--did-hash", `0x${"11".repeat(32)}`, "--mldsa-hash", `0x${"22".repeat(32)}`]);
    await ioi(PROVIDER, ["provider", "bond", "--amount", "1000"]);

    // Balances from here on: every party, the contracts, the burn address, the treasury.
    const arbitrators = ARBITRATORS.map(addressOf);
    const parties = { payer: addressOf(PAYER), provider: addressOf(PROVIDER), client: addressOf(CLIENT), treasury: addressOf(TREASURY), burn: BURN, escrow: c.GasEscrow!, gigEscrow: c.GigEscrow!, disputeManager: c.DisputeManager!, registry: c.ProviderRegistry! };
    const watched = [...Object.values(parties), ...arbitrators];
    const ethOf = () => Promise.all(watched.map((a) => publicClient.getBalance({ address: a })));
    const lgasOf = () => Promise.all(watched.map((a) => publicClient.readContract({ address: c.LaborGas!, abi: erc20Abi, functionName: "balanceOf", args: [a] })));
    const startBlock = await publicClient.getBlockNumber();
    const [eth0, lgas0] = [await ethOf(), await lgasOf()];

    // 3. The daemons, as processes. Each follower stays 12 blocks behind the head.
    const reading = ["--confirmations", CONFIRMATIONS, "--poll-ms", "250"];
    const evidenceDir = path.join(dir, "evidence");
    mkdirSync(evidenceDir);
    const ioiBin = path.join(ROOT, "bin", "ioi.js");
    const provider = start("provider", [ioiBin, "provider", "--price", String(PRICE), "--port", "0", "--db", path.join(dir, "provider.db"), ...reading], { ...env, IOI_PRIVATE_KEY: keyOf(PROVIDER) });
    const payerTower = start("payer watchtower", [ioiBin, "watchtower", "--db", path.join(dir, "payer.db"), ...reading], { ...env, IOI_PRIVATE_KEY: keyOf(PAYER) });
    const evidence = start("evidence", [ioiBin, "evidence", "serve", "--dir", evidenceDir, "--max-runtime-ms", "280000"], env);
    const arbitratorDaemons = [0, 1, 2].map((d) => {
      const keys = ARBITRATORS.slice(d * 3, d * 3 + 3);
      const keyEnv = Object.fromEntries(keys.map((i) => [`ARBITRATOR_KEY_${i}`, keyOf(i)]));
      return start(
        `arbitrators ${keys.join(",")}`,
        [ioiBin, "arbitrator", "serve", "--key-env", keys.map((i) => `ARBITRATOR_KEY_${i}`).join(","), "--state-dir", path.join(dir, `arbitrator-${d}`), "--grace-ms", "1500", "--retry-ms", "2000", "--max-runtime-ms", "280000", ...reading],
        { ...env, ...keyEnv },
      );
    });
    const providerReady = JSON.parse(await provider.line(/"event":"provider.ready"/)) as { port: number; confirmations: string };
    expect(providerReady.confirmations).to.equal(CONFIRMATIONS);
    expect((JSON.parse(await payerTower.line(/"event":"watchtower.ready"/)) as { confirmations: string }).confirmations).to.equal(CONFIRMATIONS);
    const evidenceUrl = (JSON.parse(await evidence.line(/"event":"evidence.ready"/)) as { url: string }).url;
    for (const d of arbitratorDaemons) {
      const ready = JSON.parse(await d.line(/"event":"arbitrator.ready"/)) as { arbitrators: Address[]; confirmations: string };
      expect(ready.arbitrators).to.have.length(3);
      expect(ready.confirmations).to.equal(CONFIRMATIONS);
    }
    const logs = () => [provider, payerTower, evidence, ...arbitratorDaemons].map((d) => `--- ${d.name}\n${d.output().slice(-2500)}`).join("\n");
    const until = async (what: string, done: () => Promise<boolean>, timeoutMs = 90_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!(await done())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${logs()}`);
        await new Promise((r) => setTimeout(r, 300));
      }
    };

    // 4. The channel: the payer opens, pays 20 calls, and closes alone; the provider's node finalises and claims.
    const peer = `127.0.0.1:${providerReady.port}`;
    const payerDb = ["--db", path.join(dir, "payer.db")];
    const opened = await ioi(PAYER, ["open", "--provider", parties.provider, "--deposit", String(DEPOSIT), "--peer", peer, "--challenge", "3600", ...payerDb]);
    const sessionId = opened.sessionId as Hex;
    await ioi(PAYER, ["stream", "--session", sessionId, "-n", String(CALLS), "--peer", peer, ...payerDb]);
    await ioi(PAYER, ["close", "--session", sessionId, "--unilateral", ...payerDb]);

    // 5. The gig: the client funds it, the provider accepts and delivers code that fails 3 of 12 bound tests.
    const latest = await publicClient.getBlock();
    const ics = codeGigIcs({ asset: zeroAddress, maxPrice: GIG_AMOUNT, deadline: latest.timestamp + 30n * 86_400n });
    const icsFile = path.join(dir, "ics.json");
    writeFileSync(icsFile, JSON.stringify(icsToJson(ics), null, 2));
    const suiteDir = writeBundle(path.join(dir, "suite"), SUITE);
    const deliverableDir = writeBundle(path.join(dir, "delivered"), FAILING_DELIVERABLE);
    const funded = await ioi(CLIENT, ["gig", "fund", "--amount", String(GIG_AMOUNT), "--ics-file", icsFile, "--provider", parties.provider, "--deadline", String(20 * 86_400), "--dispute-window", "3600"]);
    const gigId = String(funded.gigId);
    await ioi(PROVIDER, ["gig", "accept", "--gig", gigId]);
    await ioi(PROVIDER, ["gig", "deliver", "--gig", gigId, "--deliverable", bundleHash(FAILING_DELIVERABLE)]);

    // 6. The dispute: the client builds its package, opens the case and publishes where the package is.
    const packageFile = path.join(evidenceDir, "case.json");
    await ioi(CLIENT, ["dispute", "build-gig", "--gig", gigId, "--ics-file", icsFile, "--suite-dir", suiteDir, "--deliverable-dir", deliverableDir, "--out", packageFile]);
    const disputed = await ioi(CLIENT, ["dispute", "open", "--package", packageFile]);
    const caseId = disputed.caseId as Hex;
    await ioi(CLIENT, ["evidence", "publish", "--case", caseId, "--uri", evidenceUrl.endsWith("/") ? evidenceUrl : `${evidenceUrl}/`]);
    const caseOf = () => publicClient.readContract({ address: c.DisputeManager!, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] });

    // The operator moves the devnet clock past the channel's window and the case's respond window (the
    // provider stays silent): a day, in one block.
    await ioi(0, ["devnet", "time", "+1d"]);
    await until("the channel finalised by the provider's node", async () => {
      const claimable = await publicClient.readContract({ address: c.GasEscrow!, abi: gasEscrowAbi, functionName: "claimableOf", args: [zeroAddress, parties.provider] });
      const fees = await publicClient.readContract({ address: c.GasEscrow!, abi: gasEscrowAbi, functionName: "accruedFees", args: [zeroAddress] });
      return fees > 0n && claimable === 0n;
    });
    await until("round 0's verdict, by the daemons", async () => {
      const now = await caseOf();
      return now.status === 3 && now.round === 0; // decided
    });

    // 7. The provider appeals (its intention); the daemons draw a fresh 5-member panel and decide again.
    await ioi(PROVIDER, ["case", "appeal", "--case", caseId]);
    await until("round 1's verdict, by the daemons", async () => {
      const now = await caseOf();
      return now.status === 3 && now.round === 1;
    });
    // The appeal window passes on the devnet clock; the daemons finalise and claim their fees.
    await ioi(0, ["devnet", "time", "+3d"]);
    await until("the case resolved and every fee claimed", async () => {
      if ((await caseOf()).status !== 5) return false; // resolved
      for (const a of arbitrators) {
        if ((await publicClient.readContract({ address: c.DisputeManager!, abi: disputeManagerAbi, functionName: "claimable", args: [zeroAddress, a] })) !== 0n) return false;
      }
      return true;
    });

    // 8. Exact balances. Gas each party paid, from every block since the start.
    const head = await publicClient.getBlockNumber();
    const gas = new Map<string, bigint>(watched.map((a) => [a.toLowerCase(), 0n]));
    for (let n = startBlock + 1n; n <= head; n++) {
      const block = await publicClient.getBlock({ blockNumber: n, includeTransactions: true });
      for (const tx of block.transactions) {
        if (!gas.has(tx.from.toLowerCase())) continue;
        const receipt = await publicClient.getTransactionReceipt({ hash: tx.hash });
        gas.set(tx.from.toLowerCase(), gas.get(tx.from.toLowerCase())! + receipt.gasUsed * receipt.effectiveGasPrice);
      }
    }
    const gasOf = (a: Address) => gas.get(a.toLowerCase())!;
    const [eth1, lgas1] = [await ethOf(), await lgasOf()];
    const dEth = (a: Address) => eth1[watched.indexOf(a)]! - eth0[watched.indexOf(a)]!;
    const dLgas = (a: Address) => lgas1[watched.indexOf(a)]! - lgas0[watched.indexOf(a)]!;

    const dmLogs = parseEventLogs({ abi: disputeManagerAbi, logs: await publicClient.getLogs({ address: c.DisputeManager!, fromBlock: startBlock }) });
    const resolved = dmLogs.find((l) => l.eventName === "CaseResolved")!.args as { verdict: number; refunded: bigint; slashed: bigint; toChallenger: bigint; toRespondent: bigint; burned: bigint; arbitrationFees: bigint };
    const verdicts = dmLogs.filter((l) => l.eventName === "VerdictSubmitted").map((l) => l.args as { round: number; verdict: number; refund: bigint; slash: bigint; signedMask: number });
    const fees = dmLogs.filter((l) => l.eventName === "ArbitrationFeeEarned").map((l) => l.args as { arbitrator: Address; amount: bigint });
    const appealed = dmLogs.find((l) => l.eventName === "CaseAppealed")!.args as { bond: bigint };
    const opening = dmLogs.find((l) => l.eventName === "CaseOpened")!.args as { bond: bigint };
    const panel0 = (await publicClient.readContract({ address: c.DisputeManager!, abi: disputeManagerAbi, functionName: "panelOf", args: [caseId, 0] })).map((a) => getAddress(a));
    const panel1 = (await publicClient.readContract({ address: c.DisputeManager!, abi: disputeManagerAbi, functionName: "panelOf", args: [caseId, 1] })).map((a) => getAddress(a));

    // The case: both rounds found the provider at fault (3 of 12 tests), the ICS penalty is the refund, the
    // appellant lost its appeal bond; the panels were 3 then a fresh 5, every member signed.
    const penalty = penaltyFor(ics, 3, GIG_AMOUNT);
    expect(verdicts.map((v) => [v.round, v.verdict, v.refund, v.slash])).to.deep.equal([
      [0, 1, penalty.refund, penalty.slash],
      [1, 1, penalty.refund, penalty.slash],
    ]);
    expect(panel0).to.have.length(3);
    expect(panel1).to.have.length(5);
    expect(panel1.filter((a) => panel0.includes(a))).to.deep.equal([]);
    expect(resolved.refunded).to.equal(penalty.refund);
    expect(resolved.slashed).to.equal(penalty.slash);
    expect(resolved.toRespondent).to.equal(0n);
    expect(fees.map((f) => getAddress(f.arbitrator)).sort()).to.deep.equal([...panel0, ...panel1].sort());
    const feeTotal = fees.reduce((s, f) => s + f.amount, 0n);
    // The bonds are spent exactly: back to the winner, the panel's fees, the burn.
    expect(resolved.toChallenger + resolved.burned + feeTotal).to.equal(opening.bond + appealed.bond);

    // The channel: 20 calls at 1,000 wei, 1 % to the treasury (accrued in the escrow), the rest refunded.
    const paid = PRICE * CALLS;
    const routingFee = (paid * FEE_BPS) / 10_000n;

    // ETH, every party and contract.
    expect(dEth(parties.payer), "payer").to.equal(-paid - gasOf(parties.payer));
    expect(dEth(parties.provider), "provider").to.equal(paid - routingFee + (GIG_AMOUNT - penalty.refund) - appealed.bond - gasOf(parties.provider));
    expect(dEth(parties.client), "client").to.equal(-GIG_AMOUNT + penalty.refund - opening.bond + resolved.toChallenger - gasOf(parties.client));
    expect(dEth(parties.escrow), "GasEscrow: holds the treasury's fee only").to.equal(routingFee);
    expect(await publicClient.readContract({ address: c.GasEscrow!, abi: gasEscrowAbi, functionName: "accruedFees", args: [zeroAddress] })).to.equal(routingFee);
    expect(dEth(parties.treasury), "treasury (its fee stays accrued until it withdraws)").to.equal(0n);
    expect(dEth(parties.gigEscrow), "GigEscrow").to.equal(0n);
    expect(dEth(parties.disputeManager), "DisputeManager: nothing of the case left").to.equal(0n);
    expect(dEth(BURN), "burn").to.equal(resolved.burned);
    for (const a of arbitrators) {
      const earned = fees.filter((f) => getAddress(f.arbitrator) === a).reduce((s, f) => s + f.amount, 0n);
      expect(dEth(a), `arbitrator ${a}`).to.equal(earned - gasOf(a));
    }
    // LaborGas: the provider's SLA bond slashed in the registry, split between the client and the burn address.
    expect(dLgas(parties.registry), "registry").to.equal(-penalty.slash);
    expect(dLgas(parties.client) + dLgas(BURN), "slash split").to.equal(penalty.slash);
    expect(dLgas(BURN)).to.equal((penalty.slash * 2_000n) / 10_000n);
    for (const a of [parties.payer, parties.provider, parties.treasury, ...arbitrators]) expect(dLgas(a), a).to.equal(0n);
    const bond = await publicClient.readContract({ address: c.ProviderRegistry!, abi: providerRegistryAbi, functionName: "bondOf", args: [0, parties.provider] });
    expect(BigInt(bond.active)).to.equal(10n ** 21n - penalty.slash);

    // 12 confirmations, seen from the chain: a member learns it sits on a panel from the PanelDrawn log, and posts
    // its signature only once that log is 12 blocks deep; the first draw request waits for CaseOpened likewise.
    const blockOf = (name: string, round?: number) =>
      dmLogs.filter((l) => l.eventName === name && (round === undefined || (l.args as { round?: number }).round === round)).map((l) => l.blockNumber);
    expect(Number(blockOf("PanelRequested", 0)[0]! - blockOf("CaseOpened")[0]!)).to.be.greaterThanOrEqual(12);
    for (const round of [0, 1]) {
      const drawnAt = blockOf("PanelDrawn", round)[0]!;
      for (const postedAt of blockOf("SignaturesPosted", round)) expect(Number(postedAt - drawnAt), `round ${round}`).to.be.greaterThanOrEqual(12);
    }
    // Each arbitrator daemon signed at most once per case and round, and never was an `arbitrate` run by hand.
    const signedLines = arbitratorDaemons.flatMap((d) => d.output().split("\n").filter((l) => l.includes("signed case")));
    expect(signedLines).to.have.length(8);
    console.log(`      [measured] rehearsal blocks: ${head - startBlock} (block ${startBlock} → ${head})`);
  });
});
