/**
 * The demo's three cases (gig, session, streamed job) resolved by three `ioi arbitrator serve` processes (issue 29): `runDisputeDemo` with
 * `daemons` only opens the cases, publishes where the packages are and moves the devnet clock; the three
 * processes, serving the 16 admitted arbitrators' keys between them, draw each 5-member panel, replay, post their
 * signatures, submit a supermajority, finalise and claim. Checked from the chain: every verdict's signers posted
 * their own signature on-chain (`SignaturesPosted`), the submission and finalisation came from panel members'
 * keys (not the demo's), and each daemon's state file holds exactly the signatures its keys posted.
 */
import { readdirSync, readFileSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { expect } from "chai";
import hre from "hardhat";
import { getAddress, parseEventLogs, type Address, type Hex } from "viem";

import { disputeManagerAbi } from "../../channel-client/abi/DisputeManager";
import type { Wallet } from "../../channel-client/chain/escrow";
import { runDisputeDemo, startArbitratorDaemons } from "../../scripts/demo-disputes";
import { deployAll } from "../../scripts/deploy";
import { serveEmbeddedNetwork } from "../../scripts/embedded-rpc";

describe("demo: all three cases resolved by three `ioi arbitrator serve` processes, no arbitrate call", function () {
  this.timeout(300_000);

  it("draws, judges, posts, submits, finalises and claims with daemons only; 4+ of 5 signers per case, each signature posted by its own key", async () => {
    const deployment = await deployAll(hre);
    const publicClient = await hre.viem.getPublicClient();
    const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
    const rpc = await serveEmbeddedNetwork(hre);
    const workdir = mkdtempSync(path.join(os.tmpdir(), "ioi-demo-daemons-"));
    const daemons = await startArbitratorDaemons({ rpcUrl: rpc.url, workdir, disputeManager: deployment.contracts.DisputeManager.address, log: () => undefined });
    try {
      const from = await publicClient.getBlockNumber();
      const cases = await runDisputeDemo({ hre, deployment, publicClient: publicClient as never, wallets, log: () => undefined, daemons, fixedGigTime: false });
      expect(cases.map((c) => [c.subject, c.verdict])).to.deep.equal([
        ["gig", "provider_fault"],
        ["session", "provider_fault"],
        // The streamed job of issue 32: the provider lied about a test at tranche 2.
        ["session", "provider_fault"],
      ]);
      const logs = await publicClient.getLogs({ address: deployment.contracts.DisputeManager.address, fromBlock: from });
      const events = parseEventLogs({ abi: disputeManagerAbi, logs });
      const txFrom = async (hash: Hex) => getAddress((await publicClient.getTransaction({ hash })).from);
      const demoKeys = [0, 1, 2, 3, 8].map((i) => getAddress(wallets[i]!.account.address));
      for (const c of cases) {
        expect(c.panel).to.have.length(5);
        expect(c.signers.length).to.be.greaterThanOrEqual(4);
        const mine = events.filter((e) => (e.args as { caseId?: Hex }).caseId === c.caseId);
        // Each signer posted its own signature, in its own transaction.
        const posts = mine.filter((e) => e.eventName === "SignaturesPosted");
        const posters = await Promise.all(posts.map((e) => txFrom(e.transactionHash)));
        for (const signer of c.signers) expect(posters, `case ${c.caseId} signer ${signer}`).to.include(signer);
        // Submitted and finalised by panel members' daemons, never by the demo's own keys.
        for (const name of ["VerdictSubmitted", "CaseResolved", "PanelDrawn"] as const) {
          const [event] = mine.filter((e) => e.eventName === name);
          const sender = await txFrom(event!.transactionHash);
          expect(demoKeys, `${name} of ${c.caseId}`).not.to.include(sender);
        }
        // Every fee was claimed.
        expect(Object.keys(c.arbitratorFees).sort()).to.deep.equal([...c.signers].sort());
        for (const [arbitrator, fee] of Object.entries(c.arbitratorFees)) expect(BigInt(fee) > 0n, arbitrator).to.equal(true);
        for (const a of c.signers) {
          expect(await publicClient.readContract({ address: deployment.contracts.DisputeManager.address, abi: disputeManagerAbi, functionName: "claimable", args: ["0x0000000000000000000000000000000000000000", a] })).to.equal(0n);
        }
      }
      // The daemons' own records: one signature per (case, round) per key, exactly the posted ones.
      const kept: Address[] = [];
      for (const d of [0, 1, 2]) {
        const folder = path.join(workdir, `arbitrators-${d}`);
        for (const file of readdirSync(folder).filter((f) => /^arbitrator-0x[0-9a-f]{40}\.json$/.test(f))) {
          const state = JSON.parse(readFileSync(path.join(folder, file), "utf8")) as { arbitrator: Address; signed: Record<string, unknown> };
          for (const _ of Object.keys(state.signed)) kept.push(getAddress(state.arbitrator));
        }
      }
      const allPosters = await Promise.all(events.filter((e) => e.eventName === "SignaturesPosted").map((e) => txFrom(e.transactionHash)));
      expect([...kept].sort()).to.deep.equal([...allPosters].sort());
    } finally {
      await daemons.stop();
      await rpc.close();
      rmSync(workdir, { recursive: true, force: true });
    }
  });
});
