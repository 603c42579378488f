/**
 * Issue 32, second pass: milestone streaming from the command line over the network. A real `ioi provider` process
 * started with v4 terms serves tranches and `ioi milestones stream` (its own process) streams against it; the
 * cooperative close pays exactly the tranches checked. Against a provider node that lies at tranche 2 — a false
 * claim, or a proof about another suite — `ioi milestones stream` pauses (exit 3) and the payer builds the case from
 * the CLI (`ioi close --unilateral`, `ioi anchor`, `ioi milestones case`, `ioi dispute open`); three arbitrators
 * decide it byte-identically and a drawn panel enforces it. Every balance exact (gas added back).
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { getAddress, keccak256, parseEther, stringToBytes, toHex, type Hex, type LocalAccount, type PublicClient } from "viem";

import type { Bundle } from "../../arbitration/documents/bundle";
import { currentClosingState } from "../../arbitration/runner/chain";
import { parsePackage } from "../../arbitration/documents/package";
import { resolutionToJson } from "../../arbitration/lanes/resolution";
import { claimsOf } from "../../arbitration/lanes/stream-sample";
import { canon } from "../../channel-client/core/canonical";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { pricingTermsToJson, termsHashOf, type TermsDocumentV4 } from "../../channel-client/core/terms";
import { finalizeClose } from "../../channel-client/chain/escrow";
import { echoHandler } from "../../channel-client/node/echo-worker";
import { ProviderNode } from "../../channel-client/node/provider-node";
import type { StreamWork } from "../../channel-client/node/stream-service";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { BROKEN_REPOSITORY, codeStreamTerms, REPOSITORY_BY_TRANCHE, STREAM_MODEL, SUITE } from "../../scripts/examples/code-stream";
import { PASSING_DELIVERABLE } from "../../scripts/examples/code-gig";
import { cliSandbox, runCli } from "../helpers/cli";
import { hardhatAccount } from "../helpers/fixtures";
import { DISPUTE_PARAMS, SYS, systemFixture, type System } from "../helpers/system";
import { burnOf, expectDeltas, feeOf, fullBook, openSponsoredChannel, snapshot } from "../adversarial/helpers";
import { enforceByPanel, threeRuns } from "../adversarial/panel";

const ROOT = path.join(__dirname, "..", "..");
const DEPOSIT = parseEther("1");
const TERMS: TermsDocumentV4 = codeStreamTerms({ windowAfterSettlement: BigInt(DISPUTE_PARAMS.settledDisputeWindow) });
const PRICE = TERMS.pricing.capPerCall;
const PENALTY = TERMS.stream.falseClaimPenalty;

function keyEnv(index: number): { IOI_PRIVATE_KEY: Hex } {
  const account = hardhatAccount(index) as LocalAccount & { getHdKey(): { privateKey: Uint8Array | null } };
  return { IOI_PRIVATE_KEY: toHex(account.getHdKey().privateKey!) };
}

function writeBundle(dir: string, bundle: Bundle): string {
  for (const [name, content] of Object.entries(bundle.files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), content);
  }
  return dir;
}

/** Runs `ioi …` as its own process (IOI_CLI_SOURCE=1: the TypeScript sources). */
function ioiProcess(args: string[], env: Record<string, string>) {
  return spawn(process.execPath, [path.join(ROOT, "bin", "ioi.js"), ...args], { env: { ...process.env, IOI_CLI_SOURCE: "1", ...env }, cwd: ROOT });
}

/** Opens a v4 channel the client funds for the payer and stores it in the payer's store with the provider's peer. */
async function openStream(s: System, nonce: bigint, payerDb: string, peer: string) {
  const opened = await openSponsoredChannel(s, termsHashOf(TERMS), nonce, DEPOSIT);
  const store = SqliteStore.open(payerDb);
  await store.putChannel({ sessionId: opened.sessionId, role: "payer", ref: opened.opened.ref, pricing: TERMS, escrow: opened.escrow, chainId: opened.domain.chainId, deposit: DEPOSIT, status: "open", peer });
  await store.close();
  return opened;
}

describe("ioi milestones over the network: a real provider node and the payer's CLI (issue 32, second pass)", function () {
  this.timeout(240_000);
  const box = cliSandbox("ioi-milestones-net-");

  const cli = async (s: System, index: number, argv: string[], expectCode = 0) => {
    const result = await runCli([...argv, "--json", "--rpc", box.rpc.url, "--escrow", s.escrow.address, ...(argv[0] === "dispute" || argv[1] === "case" ? ["--dispute-manager", s.disputes.address] : [])], keyEnv(index));
    expect(result.code, `ioi ${argv.join(" ")}: ${result.err}`).to.equal(expectCode);
    return JSON.parse(result.out.trim().split("\n").pop()!) as Record<string, any>;
  };

  it("`ioi provider` with v4 terms serves tranches; `ioi milestones stream` (its own process) pays and checks two, exit 0; the cooperative close pays exactly two tranches", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const suiteDir = writeBundle(path.join(box.dir, "suite"), SUITE);
    const repositoryDir = writeBundle(path.join(box.dir, "repository"), PASSING_DELIVERABLE);
    const termsFile = path.join(box.dir, "stream.terms.json");
    writeFileSync(termsFile, JSON.stringify(pricingTermsToJson(TERMS)));
    const provider = ioiProcess(
      ["provider", "--terms-file", termsFile, "--suite-dir", suiteDir, "--repository-dir", repositoryDir, "--db", path.join(box.dir, "provider.db"), "--rpc", box.rpc.url, "--escrow", s.escrow.address],
      keyEnv(SYS.provider),
    );
    box.cleanup.push(() => new Promise((resolve) => (provider.exitCode !== null ? resolve(undefined) : (provider.once("exit", resolve), provider.kill("SIGINT")))));
    const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
      let buffered = "";
      provider.stdout.on("data", (chunk: Buffer) => {
        buffered += chunk.toString();
        const line = buffered.split("\n").find((l) => l.includes('"provider.ready"'));
        if (line) resolve(JSON.parse(line) as Record<string, unknown>);
      });
      provider.once("exit", (code) => reject(new Error(`ioi provider exited with ${code}`)));
    });
    expect(ready.termsHash).to.equal(termsHashOf(TERMS));
    const peer = `127.0.0.1:${ready.port as number}`;
    const payerDb = path.join(box.dir, "payer.db");
    const { sessionId } = await openStream(s, 51n, payerDb, peer);

    const stream = ioiProcess(["milestones", "stream", "--json", "--session", sessionId, "--suite-dir", suiteDir, "--tranches", "2", "--db", payerDb], keyEnv(SYS.payer));
    let printed = "";
    stream.stdout.on("data", (chunk: Buffer) => (printed += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => stream.once("exit", resolve));
    expect(code).to.equal(0);
    const result = JSON.parse(printed.trim().split("\n").pop()!) as Record<string, any>;
    expect(result).to.deep.include({ released: "2", checked: "2", caseable: false });
    expect(result.paused).to.deep.include({ reason: "done" });

    const closed = await cli(s, SYS.payer, ["close", "--session", sessionId, "--db", payerDb]);
    const paid = 2n * PRICE;
    expect(closed).to.deep.include({ finalSeq: "2", paidToProvider: paid.toString() });
    const [feeBps] = await s.escrow.read.routingFee();
    const routing = feeOf(paid, Number(feeBps));
    await expectDeltas(s, snap, { ETH: { client: -paid, provider: paid - routing, escrow: routing } });
  });

  it("`ioi milestones stream --session-key`: the payer's delegated sampling node funds and checks over the socket and stops at the key's cap (exit 3); the cooperative close pays exactly the two capped tranches", async () => {
    const s = await loadFixture(systemFixture);
    const snap = await snapshot(s, fullBook(s));
    const suiteDir = writeBundle(path.join(box.dir, "suite"), SUITE);
    const work: StreamWork = async ({ tranche, terms, inputs }) => {
      const repository = REPOSITORY_BY_TRANCHE[Number(tranche) - 1]!;
      return { repository, tests: await claimsOf({ terms, suite: SUITE, repository, inputs }) };
    };
    const providerStore = SqliteStore.open(path.join(box.dir, "provider.db"));
    const node = await ProviderNode.start({
      account: hardhatAccount(SYS.provider),
      publicClient: s.publicClient as unknown as PublicClient,
      domain: gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: getAddress(s.escrow.address) }),
      store: providerStore,
      pricing: TERMS,
      handler: echoHandler,
      modelSnapshotId: STREAM_MODEL,
      stream: { work },
    });
    box.cleanup.push(() => providerStore.close(), () => node.stop());
    const payerDb = path.join(box.dir, "payer.db");
    const { sessionId } = await openStream(s, 54n, payerDb, `127.0.0.1:${node.port}`);
    const keyFile = path.join(box.dir, "session-key.json");
    await cli(s, SYS.payer, ["session-key", "authorize", "--session", sessionId, "--db", payerDb, "--cap", (2n * PRICE).toString(), "--expires-in", "86400", "--out", keyFile]);
    const streamed = await cli(s, SYS.payer, ["milestones", "stream", "--session", sessionId, "--suite-dir", suiteDir, "--tranches", "3", "--db", payerDb, "--session-key", keyFile], 3);
    expect(streamed).to.deep.include({ released: "2", checked: "2", caseable: false });
    expect(streamed.paused).to.deep.include({ reason: "cap_reached", tranche: "3" });
    const closed = await cli(s, SYS.payer, ["close", "--session", sessionId, "--db", payerDb]);
    const paid = 2n * PRICE;
    expect(closed).to.deep.include({ finalSeq: "2", paidToProvider: paid.toString() });
    const [feeBps] = await s.escrow.read.routingFee();
    const routing = feeOf(paid, Number(feeBps));
    await expectDeltas(s, snap, { ETH: { client: -paid, provider: paid - routing, escrow: routing } });
  });

  for (const lie of ["false_claim", "wrong_suite"] as const) {
    const what = lie === "false_claim" ? "claims all 12 tests pass on a repository failing all 12" : "signs a proof about another suite";
    it(`attack: the provider node ${what} at tranche 2 — \`ioi milestones stream\` pauses there (exit 3), and \`ioi milestones case\` builds the case from the CLI; refund of the tranche and the penalty slashed`, async () => {
      const s = await loadFixture(systemFixture);
      const snap = await snapshot(s, fullBook(s));
      const suiteDir = writeBundle(path.join(box.dir, "suite"), SUITE);
      const work: StreamWork = async ({ tranche, terms, inputs }) => {
        const lying = tranche === 2n;
        const repository = lying && lie === "false_claim" ? BROKEN_REPOSITORY : REPOSITORY_BY_TRANCHE[Number(tranche) - 1]!;
        const tests = await claimsOf({ terms, suite: SUITE, repository, inputs });
        if (!lying) return { repository, tests };
        return lie === "false_claim" ? { repository, tests: tests.map((t) => ({ ...t, outcome: "pass" as const })) } : { repository, tests, suiteHash: keccak256(stringToBytes("the provider's own suite")) };
      };
      const providerStore = SqliteStore.open(path.join(box.dir, "provider.db"));
      const node = await ProviderNode.start({
        account: hardhatAccount(SYS.provider),
        publicClient: s.publicClient as unknown as PublicClient,
        domain: gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: getAddress(s.escrow.address) }),
        store: providerStore,
        pricing: TERMS,
        handler: echoHandler,
        modelSnapshotId: STREAM_MODEL,
        stream: { work },
      });
      box.cleanup.push(() => providerStore.close(), () => node.stop());
      const payerDb = path.join(box.dir, "payer.db");
      const opened = await openStream(s, lie === "false_claim" ? 52n : 53n, payerDb, `127.0.0.1:${node.port}`);
      const { sessionId } = opened;

      const streamed = await cli(s, SYS.payer, ["milestones", "stream", "--session", sessionId, "--suite-dir", suiteDir, "--tranches", "3", "--db", payerDb], 3);
      expect(streamed).to.deep.include({ released: "2", checked: "1", caseable: true });
      expect(streamed.paused).to.deep.include({ reason: lie, tranche: "2" });

      await cli(s, SYS.payer, ["close", "--session", sessionId, "--db", payerDb, "--unilateral"]);
      await cli(s, SYS.payer, ["anchor", "--session", sessionId, "--db", payerDb]);
      const file = path.join(box.dir, "case.json");
      const built = await cli(s, SYS.payer, ["milestones", "case", "--session", sessionId, "--suite-dir", suiteDir, "--db", payerDb, "--out", file]);
      expect(built).to.deep.include({ tranche: "2", reason: lie, claim: lie === "false_claim" ? built.claim : null });
      const pkg = parsePackage(readFileSync(file));
      expect(pkg.evidence.map((e) => e.kind)).to.include("progress");
      const openedCase = await cli(s, SYS.payer, ["dispute", "open", "--package", file, "--yes"]);
      expect(openedCase.caseId).to.equal(pkg.caseId);

      const runs = await threeRuns(s, pkg.caseId, pkg);
      expect(new Set(runs.map((r) => canon(resolutionToJson(r.resolution)))).size, "three arbitrators, one resolution").to.equal(1);
      const run = runs[0]!;
      expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
      // Lane 0 judges the signed proof about another suite; Lane 1 re-runs the cited false claim.
      if (lie === "wrong_suite") expect(run.resolution.lane0.checks.find((c) => c.name === "stream[tranche 2].suite")!.status).to.equal("fail");
      else expect(run.resolution.objectiveChecks[0]!.status).to.equal(false);
      expect(run.message).to.deep.include({ verdict: 1, refund: PRICE, slash: PENALTY });
      const { fee, shares, dust } = await enforceByPanel(s, run);
      const recorded = await currentClosingState(s.publicClient, getAddress(s.escrow.address), sessionId);
      await time.increase(3601);
      await finalizeClose({ wallet: s.watcher, publicClient: s.publicClient, escrow: opened.escrow, ref: opened.opened.ref, recorded });
      const paid = recorded.amount;
      expect(paid).to.equal(PRICE); // two tranches released, the false one refunded
      const routing = feeOf(paid, recorded.feeBps);
      await expectDeltas(s, snap, {
        ETH: { client: -paid, provider: paid - routing, escrow: routing, payer: -fee, burn: dust, ...shares },
        LGAS: { payer: PENALTY - burnOf(PENALTY), burn: burnOf(PENALTY), registry: -PENALTY },
      });
    });
  }
});
