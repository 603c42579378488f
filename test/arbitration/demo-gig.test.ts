/**
 * The dispute demo's gig case (`scripts/demo-disputes.ts`) gives the same resolution hash on every run: run
 * twice from the same chain snapshot, wall-clock seconds apart (Hardhat stamps blocks with the wall clock),
 * both runs reach the same resolution, funded at the demo's fixed time.
 */
import { expect } from "chai";
import hre from "hardhat";
import type { Hex } from "viem";

import { gigEscrowAbi } from "../../arbitration/runner/chain";
import type { Wallet } from "../../channel-client/chain/escrow";
import { runDisputeDemo } from "../../scripts/demo-disputes";
import { deployAll } from "../../scripts/deploy";

describe("demo: the gig case's resolution hash", function () {
  this.timeout(180_000);

  it("is the same on two runs from the same chain state, the gig funded at the fixed time", async () => {
    const deployment = await deployAll(hre);
    const publicClient = await hre.viem.getPublicClient();
    const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
    const snapshot = (await hre.network.provider.send("evm_snapshot", [])) as string;
    const hashes: Hex[] = [];
    const fundedAt: bigint[] = [];
    for (const run of [0, 1]) {
      if (run === 1) {
        expect(await hre.network.provider.send("evm_revert", [snapshot])).to.equal(true);
        // The wall clock has moved on since the first run: a block now would carry another timestamp.
        await hre.network.provider.send("evm_increaseTime", [7]);
      }
      const cases = await runDisputeDemo({ hre, deployment, publicClient: publicClient as never, wallets, log: () => {} });
      const gig = cases.find((c) => c.subject === "gig")!;
      expect(gig.verdict).to.equal("provider_fault");
      // Issue 32: the streamed job whose provider lied about one test at tranche 2 — paused there, the tranche
      // refunded (0.001 ETH) and the false-claim penalty slashed; the provider was paid tranche 1 only.
      const streamed = cases[2]!;
      expect(streamed).to.deep.include({ subject: "session", lane: 1, verdict: "provider_fault", refund: "1000000000000000" });
      expect(streamed.slash).to.equal("1000000000000000000"); // the terms' false-claim penalty, 1 LGAS
      expect(streamed.balanceChanges.providerSlaBondLgas).to.equal((-BigInt(streamed.slash)).toString());
      expect(streamed.balanceChanges.providerEth).to.equal("1000000000000000");
      hashes.push(gig.resolutionHash as Hex);
      const [event] = await publicClient.getContractEvents({ address: deployment.contracts.GigEscrow.address, abi: gigEscrowAbi, eventName: "GigFunded", fromBlock: 0n, strict: true });
      fundedAt.push((await publicClient.getBlock({ blockNumber: event!.blockNumber })).timestamp);
    }
    expect(fundedAt).to.deep.equal([2_000_000_000n, 2_000_000_000n]);
    expect(hashes[1]).to.equal(hashes[0]);
  });
});
