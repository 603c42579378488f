/**
 * Adversarial suite, issue 27 finding 9: a session case must be buildable from the CLI whatever shape the session
 * had. The provider closes first on a pipelined ticket (40 calls at 8 in flight, tickets signed by the payer's
 * session key): its newest ticket commits only the receipts that had come back when it was signed. Before the fix
 * `ioi dispute build-session` refused every receipt (it assumed ticket n commits receipts 1..n-1), nothing anchored
 * the provider's newest commit, and the package never carried the session-key grant, so the case could only be
 * undecidable. Here the payer anchors by hand (`ioi anchor`), builds the case for the newest receipt — past the
 * recorded root, key-signed — opens it, and a drawn panel enforces the verdict Lane 0 reaches; every balance is
 * asserted to the wei.
 */
import { time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { readFileSync } from "node:fs";
import path from "node:path";
import { getAddress, parseEther, toHex, type Hex, type LocalAccount, type PublicClient } from "viem";

import { currentClosingState } from "../../arbitration/runner/chain";
import { resolutionToJson } from "../../arbitration/lanes/resolution";
import { evidenceOfKind, parsePackage, type ChallengePackage } from "../../arbitration/documents/package";
import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { canon } from "../../channel-client/core/canonical";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { echoHandler } from "../../channel-client/cli/channel";
import { finalizeClose, openChannel } from "../../channel-client/chain/escrow";
import { leafCountOfRoot } from "../../channel-client/node/receipt-anchor";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { cliSandbox, runCli } from "../helpers/cli";
import { hardhatAccount, makeTerms } from "../helpers/fixtures";
import { SYS, systemFixture } from "../helpers/system";
import { burnOf, expectDeltas, fullBook, snapshot, type Wallet } from "./helpers";
import { enforceByPanel, threeRuns } from "./panel";

const PRICE = parseEther("0.001");
const DEPOSIT = parseEther("1");
const CALLS = 40;
const INFLIGHT = 8;
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };

async function pipelinedSystem() {
  const s = await systemFixture();
  const publicClient = s.publicClient as unknown as PublicClient;
  const domain = gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: getAddress(s.escrow.address) });
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), challengeDuration: 3600n });
  const opened = await openChannel({ wallet: s.client as Wallet, publicClient, escrow: s.escrow.address, terms, amount: DEPOSIT });
  return { ...s, pc: publicClient, channelDomain: domain, opened };
}

function keyEnv(index: number): { IOI_PRIVATE_KEY: Hex } {
  const account = hardhatAccount(index) as LocalAccount & { getHdKey(): { privateKey: Uint8Array | null } };
  return { IOI_PRIVATE_KEY: toHex(account.getHdKey().privateKey!) };
}

describe("adversarial: issue 27 finding 9 — a pipelined, key-signed session the provider closed first is still a decidable case", function () {
  this.timeout(180_000);
  const sandbox = cliSandbox("ioi-session-cases-");

  it("attack: the provider closes first on its newest pipelined ticket — the payer anchors the commit by hand, builds the case for the newest key-signed receipt from its store, and a drawn panel decides it; exact balances", async () => {
    const s = await loadFixture(pipelinedSystem);
    const { sessionId } = s.opened;
    const snap = await snapshot(s, fullBook(s));
    const cli = async (index: number, argv: string[]) => {
      const result = await runCli([...argv, "--json", "--rpc", sandbox.rpc.url, "--escrow", s.escrow.address, ...(argv[0] === "dispute" ? ["--dispute-manager", s.disputes.address] : [])], keyEnv(index));
      expect(result.code, `ioi ${argv.join(" ")}: ${result.err}`).to.equal(0);
      return JSON.parse(result.out.split("\n").pop()!) as Record<string, any>;
    };
    const payerDb = path.join(sandbox.dir, "payer.db");
    const providerDb = path.join(sandbox.dir, "provider.db");
    const providerStore = SqliteStore.open(providerDb);
    const node = await ProviderNode.start({ account: hardhatAccount(SYS.provider), publicClient: s.pc, domain: s.channelDomain, store: providerStore, pricing, handler: echoHandler, modelSnapshotId: "worker:echo@1" });
    const payerStore = SqliteStore.open(payerDb);
    await payerStore.putChannel({ sessionId, role: "payer", ref: s.opened.ref, pricing, escrow: s.escrow.address, chainId: s.channelDomain.chainId, deposit: s.opened.deposit, status: "open" });
    await payerStore.close();

    const keyFile = path.join(sandbox.dir, "session-key.json");
    const granted = await cli(SYS.payer, ["session-key", "authorize", "--session", sessionId, "--db", payerDb, "--cap", "0.5eth", "--expires-in", "86400", "--out", keyFile]);
    await cli(SYS.payer, ["stream", "--log-level", "warn", "--session", sessionId, "--db", payerDb, "--peer", `127.0.0.1:${node.port}`, "-n", String(CALLS), "--inflight", String(INFLIGHT), "--session-key", keyFile]);
    await node.stop();
    await providerStore.close();

    // The provider closes first with its newest ticket: its root commits only the receipts back when it was signed.
    const closed = await cli(SYS.provider, ["close", "--session", sessionId, "--db", providerDb, "--unilateral"]);
    expect(closed.seq).to.equal(String(CALLS));
    const held = SqliteStore.open(payerDb);
    const history = ReceiptAccumulator.fromLeaves(held.leaves(sessionId));
    await held.close();
    const recorded = await currentClosingState(s.pc, getAddress(s.escrow.address), sessionId);
    const covered = leafCountOfRoot(history, recorded.receiptRoot)!;
    expect(covered).to.be.within(1, CALLS - INFLIGHT + 1);

    // Finding 9(a): a receipt the recorded root covers builds against it (the old code refused it).
    const inRoot = path.join(sandbox.dir, "in-root.json");
    expect(await cli(SYS.payer, ["dispute", "build-session", "--session", sessionId, "--seq", String(covered), "--db", payerDb, "--out", inRoot])).to.deep.include({
      provenAgainst: "recorded root",
      committedReceipts: covered,
    });
    // Finding 9(b): the payer anchors the provider's newest signed commit by hand.
    const anchored = await cli(SYS.payer, ["anchor", "--session", sessionId, "--db", payerDb]);
    expect(anchored).to.deep.include({ anchoring: "anchored", recordedReceipts: covered });
    expect(await s.escrow.read.anchoredCommitOf([sessionId, history.root()])).to.equal(BigInt(CALLS));
    // Finding 9(c): the newest receipt, past the recorded root and signed by the key, carries the payer's grant.
    const out = path.join(sandbox.dir, "newest.json");
    const built = await cli(SYS.payer, ["dispute", "build-session", "--session", sessionId, "--seq", String(CALLS), "--db", payerDb, "--out", out]);
    expect(built).to.deep.include({ provenAgainst: "anchored receipt commit", committedReceipts: CALLS, sessionKey: granted.key });
    const pkg: ChallengePackage = parsePackage(readFileSync(out));
    expect(evidenceOfKind(pkg, "receipt").map((e) => e.content.sessionKey?.grant.key)).to.deep.equal([granted.key, granted.key]);
    const opened = await cli(SYS.payer, ["dispute", "open", "--package", out]);
    expect(opened.caseId).to.equal(pkg.caseId);

    // Three arbitrators reach one resolution: decided (the receipt was honest), never undecidable.
    const runs = await threeRuns(s, pkg.caseId, pkg);
    expect(new Set(runs.map((r) => canon(resolutionToJson(r.resolution)))).size).to.equal(1);
    const run = runs[0]!;
    expect(run.state).to.equal("deliver");
    expect(run.resolution.aggregate.reasonCodes).to.deep.equal([]);
    expect(run.resolution.lane0.checks.filter((c) => c.name.endsWith(".ticket_signature") || c.name.endsWith(".merkle_proof")).map((c) => c.status)).to.deep.equal(["pass", "pass", "pass", "pass"]);
    expect(run.resolution.aggregate.finalVerdict).to.equal("challenger_fault");
    expect(run.message).to.deep.include({ verdict: 2, refund: 0n, slash: 0n });

    const { bond, fee, shares, dust } = await enforceByPanel(s, run);
    await time.increase(3601);
    const settled = await finalizeClose({ wallet: s.watcher, publicClient: s.pc, escrow: getAddress(s.escrow.address), ref: s.opened.ref, recorded });
    const paid = BigInt(CALLS) * PRICE;
    expect([settled.paidToProvider, settled.refundedToFunder]).to.deep.equal([paid, DEPOSIT - paid]);
    await expectDeltas(s, snap, {
      ETH: {
        client: DEPOSIT - paid, // the funder's refund
        escrow: -DEPOSIT,
        provider: paid + bond - burnOf(bond) - fee, // the loser's bond, less the burnt share and the panel's fee
        payer: -bond,
        burn: burnOf(bond) + dust,
        ...shares,
      },
    });
  });
});
