/**
 * Session cases from every shape of session, from the CLI (issue 27 finding 9, deliverable 6): {payer-signed,
 * session-key-signed} × {payer closes, provider closes, cooperative settlement} × {1 in flight, 64 in flight}.
 *
 * Each row runs a real provider node, streams with `ioi stream` (the session key granted by `ioi session-key
 * authorize --session`, so the payer's store keeps the grant), closes the way the row says (`ioi close
 * --unilateral` by either party, or `ioi close` cooperatively), lets the payer's watchtower run with its default
 * parameters, then builds a package for EVERY receipt the payer accepted with `ioi dispute build-session` and
 * checks that the DisputeManager would accept each (a simulated `openSessionCase`: the proof against the recorded
 * root or an anchored provider-signed commit). The newest receipt — past the recorded root whenever the provider
 * closed on a pipelined ticket — is opened with `ioi dispute open`, and Lane 0 run from the chain verifies it with
 * no reason code: never undecidable for lack of something the payer held.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { readFileSync } from "node:fs";
import path from "node:path";
import { getAddress, parseEther, toHex, type Address, type Hex, type LocalAccount, type PublicClient } from "viem";

import { disputeManagerAbi, loadCaseContext } from "../../arbitration/runner/chain";
import { runLane0 } from "../../arbitration/lanes/lane0";
import { evidenceOfKind, packageHash, parsePackage, soleEvidence } from "../../arbitration/documents/package";
import { ReceiptAccumulator, verifyProof } from "../../channel-client/core/accumulator";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { receiptLeaf } from "../../channel-client/core/leaf";
import { sessionReceiptHash } from "../../channel-client/core/receipt";
import { NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { paymentTicketHash } from "../../channel-client/core/ticket";
import { echoHandler } from "../../channel-client/cli/channel";
import { openChannel } from "../../channel-client/chain/escrow";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { leafCountOfRoot } from "../../channel-client/node/receipt-anchor";
import { Watchtower } from "../../channel-client/node/watchtower";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { cliSandbox, runCli } from "../helpers/cli";
import { hardhatAccount, makeTerms } from "../helpers/fixtures";
import { SYS, systemFixture } from "../helpers/system";
import { deploymentOf } from "../adversarial/panel";
import type { Wallet } from "../adversarial/helpers";

const PRICE = parseEther("0.001");
const DEPOSIT = parseEther("1");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const PROVIDER = hardhatAccount(SYS.provider);

/** The system (arbitrators admitted and pinned) plus an ETH channel funded by the client for the payer. */
async function shapeSystem() {
  const s = await systemFixture();
  const publicClient = s.publicClient as unknown as PublicClient;
  const domain = gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: getAddress(s.escrow.address) });
  const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), challengeDuration: 3600n });
  const opened = await openChannel({ wallet: s.client as Wallet, publicClient, escrow: s.escrow.address, terms, amount: DEPOSIT });
  return { ...s, pc: publicClient, channelDomain: domain, opened };
}
type Shape = Awaited<ReturnType<typeof shapeSystem>>;

/** Hardhat account `index` as the private key the CLI reads from the environment. */
function keyEnv(index: number): { IOI_PRIVATE_KEY: Hex } {
  const account = hardhatAccount(index) as LocalAccount & { getHdKey(): { privateKey: Uint8Array | null } };
  return { IOI_PRIVATE_KEY: toHex(account.getHdKey().privateKey!) };
}

type Result = Awaited<ReturnType<typeof runCli>>;
const jsonOf = (result: Result): Record<string, any> => JSON.parse(result.out.split("\n").pop()!) as Record<string, any>;

type Signer = "payer" | "session key";
type Close = "payer closes" | "provider closes" | "cooperative settlement";
const SIGNERS: Signer[] = ["payer", "session key"];
const CLOSES: Close[] = ["payer closes", "provider closes", "cooperative settlement"];
/** In flight → calls streamed: past 64 in flight, the provider's newest ticket commits only the first few receipts. */
const SHAPES: [number, number][] = [
  [1, 5],
  [64, 72],
];

describe("issue 27 finding 9: session cases from every shape of session, from the CLI", function () {
  this.timeout(300_000);
  const sandbox = cliSandbox("ioi-shapes-");

  function cli(s: Shape, index: number, argv: string[]) {
    return runCli([...argv, "--json", "--rpc", sandbox.rpc.url, "--escrow", s.escrow.address, ...(argv[0] === "dispute" ? ["--dispute-manager", s.disputes.address] : [])], keyEnv(index));
  }
  async function ok(s: Shape, index: number, argv: string[]): Promise<Record<string, any>> {
    const result = await cli(s, index, argv);
    expect(result.code, `ioi ${argv.join(" ")}: ${result.err}`).to.equal(0);
    return jsonOf(result);
  }

  it("refuses `ioi anchor` and `build-session` with one sentence when they cannot act: an open channel, a stranger, a provider's store, a seq the payer never accepted", async () => {
    const s = await loadFixture(shapeSystem);
    const { sessionId } = s.opened;
    const payerDb = path.join(sandbox.dir, "payer.db");
    const providerDb = path.join(sandbox.dir, "provider.db");
    for (const [db, role] of [[payerDb, "payer"], [providerDb, "provider"]] as const) {
      const store = SqliteStore.open(db);
      await store.putChannel({ sessionId, role, ref: s.opened.ref, pricing, escrow: s.escrow.address, chainId: s.channelDomain.chainId, deposit: s.opened.deposit, status: "open" });
      await store.close();
    }
    const refused = async (index: number, argv: string[], message: string) => {
      const result = await cli(s, index, argv);
      expect(result.code, result.err).to.equal(2);
      expect(result.err).to.contain(message);
      expect(result.err).to.not.match(/\n\s+at /);
    };
    await refused(SYS.payer, ["anchor", "--session", sessionId, "--db", payerDb], "is Open on-chain; a receipt commit is anchored while the channel is closing");
    await refused(SYS.stranger, ["anchor", "--session", sessionId, "--db", payerDb], "Only the channel's payer");
    await refused(SYS.provider, ["anchor", "--session", sessionId, "--db", providerDb], "runs on the payer's store");
    await ok(s, SYS.client, ["close", "--session", sessionId, "--db", payerDb, "--unilateral"]); // the funder closes on no ticket
    await refused(SYS.payer, ["dispute", "build-session", "--session", sessionId, "--seq", "3", "--db", payerDb, "--out", path.join(sandbox.dir, "p.json")], "--seq must name a receipt the payer accepted; the store holds none");
  });

  for (const signer of SIGNERS) {
    for (const close of CLOSES) {
      for (const [inflight, count] of SHAPES) {
        it(`${signer}-signed, ${close}, ${inflight} in flight: every accepted receipt builds a case the chain accepts and Lane 0 verifies`, async () => {
          const s = await loadFixture(shapeSystem);
          const { sessionId } = s.opened;
          const payerDb = path.join(sandbox.dir, "payer.db");
          const providerDb = path.join(sandbox.dir, "provider.db");
          const providerStore = SqliteStore.open(providerDb);
          const node = await ProviderNode.start({ account: PROVIDER, publicClient: s.pc, domain: s.channelDomain, store: providerStore, pricing, handler: echoHandler, modelSnapshotId: "worker:echo@1" });
          let nodeRunning = true;
          const stopNode = async () => {
            if (!nodeRunning) return;
            nodeRunning = false;
            await node.stop();
            await providerStore.close();
          };
          sandbox.cleanup.push(stopNode);
          const payerStore = SqliteStore.open(payerDb);
          await payerStore.putChannel({ sessionId, role: "payer", ref: s.opened.ref, pricing, escrow: s.escrow.address, chainId: s.channelDomain.chainId, deposit: s.opened.deposit, status: "open" });
          await payerStore.close();

          // The session: key-signed tickets under a grant the payer signs with the CLI (its store keeps it).
          const keyFile = path.join(sandbox.dir, "session-key.json");
          let key: Address | undefined;
          if (signer === "session key") {
            const granted = await ok(s, SYS.payer, ["session-key", "authorize", "--session", sessionId, "--db", payerDb, "--cap", "0.5eth", "--expires-in", "86400", "--out", keyFile]);
            key = getAddress(granted.key as string);
          }
          const peer = `127.0.0.1:${node.port}`;
          const streamed = await ok(s, SYS.payer, ["stream", "--log-level", "warn", "--session", sessionId, "--db", payerDb, "--peer", peer, "-n", String(count), "--inflight", String(inflight), ...(key ? ["--session-key", keyFile] : [])]);
          expect(streamed.finalSeq).to.equal(String(count));

          // What the payer holds: every receipt, the provider's commit over all of them, the grant it signed.
          const held = SqliteStore.open(payerDb);
          const leaves = held.leaves(sessionId);
          const history = ReceiptAccumulator.fromLeaves(leaves);
          const commit = held.latestCommit(sessionId, "provider")!;
          const grants = held.sessionKeyGrants(sessionId);
          await held.close();
          expect(leaves.length).to.equal(count);
          expect([commit.commit.leafCount, commit.commit.root]).to.deep.equal([BigInt(count), history.root()]);
          expect(grants.map((g) => g.grant.key)).to.deep.equal(key ? [key] : []);
          const newest = providerStore.latestTicket(sessionId)!;
          // The provider's newest ticket carries the root over the receipts accepted when it was signed: all but its
          // own with 1 in flight; at 64 in flight only those that had come back (how many varies with timing).
          const newestCovers = leafCountOfRoot(history, newest.ticket.receiptRoot)!;
          if (inflight === 1) expect(newestCovers).to.equal(count - 1);
          else expect(newestCovers).to.be.within(1, count - 60);

          // The close.
          let recordedCovers: number;
          if (close === "payer closes") {
            await stopNode();
            const closed = await ok(s, SYS.payer, ["close", "--session", sessionId, "--db", payerDb, "--unilateral"]);
            expect(closed.anchoring).to.equal("not_lagging"); // the payer's closing ticket covers every receipt
            recordedCovers = count;
          } else if (close === "provider closes") {
            await stopNode();
            const closed = await ok(s, SYS.provider, ["close", "--session", sessionId, "--db", providerDb, "--unilateral"]);
            expect(closed.seq).to.equal(String(count));
            recordedCovers = newestCovers;
          } else {
            const settled = await ok(s, SYS.payer, ["close", "--log-level", "warn", "--session", sessionId, "--db", payerDb, "--peer", peer]);
            expect(settled.receiptRoot).to.equal(history.root());
            await stopNode();
            recordedCovers = count;
          }
          // The payer's watchtower with its default parameters: it anchors the provider's commit when the recorded root lags it.
          const towerStore = SqliteStore.open(payerDb);
          const tower = new Watchtower({ publicClient: s.pc, wallet: s.payerWallet as Wallet, escrow: s.escrow.address, store: towerStore, fromBlock: 0n, name: "payer-tower" });
          await tower.runOnce();
          await tower.stop();
          await towerStore.close();
          const anchored = await s.escrow.read.anchoredCommitOf([sessionId, history.root()]);
          expect(anchored).to.equal(recordedCovers < count ? BigInt(count) : 0n);
          // `ioi anchor` by hand agrees: nothing left to do.
          const byHand = await ok(s, SYS.payer, ["anchor", "--session", sessionId, "--db", payerDb]);
          expect(byHand).to.deep.include({ anchoring: recordedCovers < count ? "already_anchored" : "not_lagging", recordedReceipts: recordedCovers });

          // Every receipt the payer accepted: a package the DisputeManager would open.
          const payerAddress = getAddress(s.payerWallet.account.address);
          let last: { file: string; seq: bigint } | undefined;
          for (let seq = 1n; seq <= BigInt(count); seq++) {
            const file = path.join(sandbox.dir, `case-${seq}.json`);
            const built = await ok(s, SYS.payer, ["dispute", "build-session", "--session", sessionId, "--seq", String(seq), "--db", payerDb, "--out", file]);
            const against = seq <= BigInt(recordedCovers) ? "recorded root" : "anchored receipt commit";
            expect(built, `seq ${seq}`).to.deep.include({ provenAgainst: against, committedReceipts: against === "recorded root" ? recordedCovers : count, sessionKey: key ?? null });
            const pkg = parsePackage(readFileSync(file));
            const channel = soleEvidence(pkg, "channel")!.content;
            const challenged = evidenceOfKind(pkg, "receipt").find((e) => e.content.receipt.receipt.seq === seq)!.content;
            expect(challenged.sessionKey?.grant.key).to.equal(key);
            const root = against === "recorded root" ? channel.closing.receiptRoot : channel.commit!.commit.root;
            expect(verifyProof(challenged.merkleProof, root, receiptLeaf(challenged.receipt.receipt, challenged.ticket.ticket)), `seq ${seq}`).to.equal(true);
            const value = channel.closing.amount < channel.closing.deposit ? channel.closing.amount : channel.closing.deposit;
            const bond = await s.disputes.read.bondFor([NATIVE_ASSET, value, 0]);
            await s.pc.simulateContract({
              account: payerAddress,
              address: s.disputes.address,
              abi: disputeManagerAbi,
              functionName: "openSessionCase",
              args: [channel.ref.terms, channel.ref.openedAt, channel.closing, sessionReceiptHash(challenged.receipt.receipt), paymentTicketHash(challenged.ticket.ticket), challenged.merkleProof, 0, packageHash(pkg)],
              value: bond,
            });
            last = { file, seq };
          }

          // The newest receipt, opened for real and verified by Lane 0 from the chain.
          const opened = await ok(s, SYS.payer, ["dispute", "open", "--yes", "--package", last!.file]);
          const pkg = parsePackage(readFileSync(last!.file));
          expect(opened.caseId).to.equal(pkg.caseId);
          const ctx = await loadCaseContext(s.pc, deploymentOf(s), pkg.caseId, pkg);
          const lane0 = await runLane0(pkg, ctx);
          expect(lane0.reasonCodes).to.deep.equal([]);
          expect(lane0.violations).to.deep.equal([]);
        });
      }
    }
  }
});
