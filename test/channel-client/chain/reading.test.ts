/**
 * Public-chain-safe reading (channel-client/chain/logs.ts, chain-follower.ts): bounded `eth_getLogs` pages
 * that shrink when the node refuses a range, bounded back-off on rate limits, and a follower that never hands
 * its handler an event from a block a reorg shallower than its confirmation depth removed (devnet
 * `evm_snapshot` / `evm_revert`).
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { parseEther, type Log, type PublicClient } from "viem";

import { ChainFollower, type EscrowEvent } from "../../../channel-client/chain/follower";
import { readGigFunding } from "../../../arbitration/lanes/pinned";
import { chainReading, getLogsPaged, withBackoff } from "../../../channel-client/chain/logs";
import { openChannel, type Wallet } from "../../../channel-client/chain/escrow";
import { rejection } from "../../helpers/assert";
import { escrowFixture, makeTerms } from "../../helpers/fixtures";

const ROOT = path.join(__dirname, "..", "..", "..");
/**
 * Modules that may start at block 0, and why: an address given by option or variable that no deployment
 * record of the chain lists has no known first block (`--from-block` narrows the scan).
 */
const GENESIS_ALLOWED = new Set([path.join("channel-client", "cli", "chain.ts")]);

/** A fake node whose logs are one per block, that refuses ranges wider than `limit` and rate-limits twice. */
function fakeNode(limit: bigint) {
  const calls: { fromBlock: bigint; toBlock: bigint }[] = [];
  let rateLimited = 2;
  const client = {
    async getLogs({ fromBlock, toBlock }: { fromBlock: bigint; toBlock: bigint }) {
      calls.push({ fromBlock, toBlock });
      if (rateLimited-- > 0) throw Object.assign(new Error("429 Too Many Requests"), { code: 429 });
      if (toBlock - fromBlock + 1n > limit) throw Object.assign(new Error("query exceeds max block range 500"), { code: -32005 });
      const logs: Log[] = [];
      for (let b = fromBlock; b <= toBlock; b++) logs.push({ blockNumber: b } as unknown as Log);
      return logs;
    },
  };
  return { client: client as unknown as PublicClient, calls };
}

describe("public-chain-safe reading", function () {
  it("pages getLogs in bounded ranges, halving when the node refuses one, retrying rate limits", async () => {
    const { client, calls } = fakeNode(500n);
    const logs = await getLogsPaged({ publicClient: client, address: "0x00000000000000000000000000000000000000a1", fromBlock: 100n, toBlock: 2_099n, maxBlockRange: 2_000n, retry: { attempts: 4, baseMs: 1, maxMs: 4 } });
    expect(logs.map((l) => l.blockNumber)).to.deep.equal(Array.from({ length: 2_000 }, (_, i) => BigInt(100 + i)));
    expect(calls.every((c) => c.toBlock - c.fromBlock + 1n <= 2_000n)).to.equal(true);
    // 2 rate-limited tries, then 2000 → 1000 → 500 blocks; four pages of 500 in all.
    expect(calls.filter((c) => c.toBlock - c.fromBlock + 1n === 500n)).to.have.length(4);
  });

  it("finds a gig's funding from the deployment block in bounded pages, stopping at the page that holds it", async () => {
    const calls: { fromBlock: bigint; toBlock: bigint }[] = [];
    const client = {
      getBlockNumber: async () => 1_000_000n,
      async getContractEvents({ fromBlock, toBlock, args }: { fromBlock: bigint; toBlock: bigint; args: { gigId: bigint } }) {
        calls.push({ fromBlock, toBlock });
        if (toBlock - fromBlock + 1n > 500n) throw Object.assign(new Error("query exceeds max block range 500"), { code: -32005 });
        return fromBlock <= 5_321n && 5_321n <= toBlock ? [{ blockNumber: 5_321n, args: { gigId: args.gigId } }] : [];
      },
      getBlock: async ({ blockNumber }: { blockNumber: bigint }) => ({ timestamp: 1_700_000_000n + blockNumber }),
    } as unknown as PublicClient;
    const funding = await readGigFunding(client, "0x00000000000000000000000000000000000000b2", 7n, { fromBlock: 4_000n, maxBlockRange: 2_000n, retry: { attempts: 2, baseMs: 1, maxMs: 2 } });
    expect(funding).to.deep.equal({ fundedAt: 1_700_005_321n, fundedInBlock: 5_321n });
    expect(calls[0]!.fromBlock).to.equal(4_000n);
    expect(calls.filter((c) => c.toBlock - c.fromBlock + 1n <= 500n).every((c) => c.fromBlock >= 4_000n && c.toBlock <= 5_499n)).to.equal(true);
    // 2000 → 1000 → 500, then pages of 500 from block 4000 until the one holding block 5321 (no scan to the head).
    expect(calls.at(-1)).to.deep.equal({ fromBlock: 5_000n, toBlock: 5_499n });
  });

  it("no source module asks the node for an unbounded log range", () => {
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(file);
        else if (entry.name.endsWith(".ts")) {
          readFileSync(file, "utf8").split("\n").forEach((line, i) => {
            // Every range query names both ends (the paged readers pass one bounded page), and none starts at genesis.
            if (/\.(getLogs|getContractEvents)\(/.test(line) && !(/fromBlock/.test(line) && /toBlock/.test(line))) offenders.push(`${path.relative(ROOT, file)}:${i + 1}`);
            if (/fromBlock: 0n/.test(line) && !GENESIS_ALLOWED.has(path.relative(ROOT, file))) offenders.push(`${path.relative(ROOT, file)}:${i + 1} (fromBlock: 0n)`);
          });
        }
      }
    };
    walk(path.join(ROOT, "channel-client"));
    walk(path.join(ROOT, "arbitration"));
    expect(offenders).to.deep.equal([]);
  });

  it("gives up after the bounded number of tries with the node's error", async () => {
    let tries = 0;
    const waits: number[] = [];
    const error = await rejection(
      withBackoff(async () => {
        tries++;
        throw new Error("503 Service Unavailable");
      }, { attempts: 4, baseMs: 100, maxMs: 250, wait: async (ms) => void waits.push(ms) }),
    );
    expect(error.message).to.equal("503 Service Unavailable");
    expect(tries).to.equal(4);
    expect(waits).to.have.length(3);
    expect(waits.every((ms) => ms <= 250)).to.equal(true);
  });

  it("uses a public chain's settings off the devnet, and the environment's overrides", () => {
    expect(chainReading(31337)).to.include({ confirmations: 0n, pollMs: 250 });
    expect(chainReading(11155111, {}, {})).to.include({ confirmations: 12n, maxBlockRange: 2_000n, pollMs: 12_000 });
    expect(chainReading(1, {}, { IOI_CONFIRMATIONS: "3", IOI_LOG_RANGE: "500", IOI_POLL_MS: "1000" })).to.include({ confirmations: 3n, maxBlockRange: 500n, pollMs: 1_000 });
    expect(() => chainReading(1, {}, { IOI_CONFIRMATIONS: "-1" })).to.throw("IOI_CONFIRMATIONS must be a whole number from 0 to 10000");
  });

  it("survives a reorg shallower than its confirmation depth: the removed channel is never handled", async () => {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const wallet = fx.funder as unknown as Wallet;
    const escrow = fx.escrow.address;
    const cursors = new Map<string, bigint>();
    const store = { getCursor: (n: string) => cursors.get(n), setCursor: async (n: string, b: bigint) => void cursors.set(n, b) };
    const seen: EscrowEvent[] = [];
    const follower = new ChainFollower({
      publicClient,
      escrow,
      store,
      name: "test",
      fromBlock: await publicClient.getBlockNumber(),
      confirmations: 3n,
      onEvents: async (events) => void seen.push(...events),
    });

    const snapshot = (await hre.network.provider.request({ method: "evm_snapshot" })) as string;
    const doomed = await openChannel({ wallet, publicClient, escrow, terms: makeTerms(undefined, { nonce: 101n }), amount: parseEther("1") });
    await hre.network.provider.request({ method: "hardhat_mine", params: ["0x1"] }); // the open is 1 block deep: not yet confirmed
    await follower.catchUp();
    expect(seen).to.have.length(0);

    // A 2-block reorg (shallower than 3): the open disappears, another channel is opened instead.
    await hre.network.provider.request({ method: "evm_revert", params: [snapshot] });
    const kept = await openChannel({ wallet, publicClient, escrow, terms: makeTerms(undefined, { nonce: 102n }), amount: parseEther("2") });
    await hre.network.provider.request({ method: "hardhat_mine", params: ["0x3"] });
    await follower.catchUp();
    const opened = seen.filter((e) => e.eventName === "ChannelOpened").map((e) => (e.args as { sessionId: string }).sessionId);
    expect(opened).to.deep.equal([kept.sessionId]);
    expect(opened).to.not.include(doomed.sessionId);
    expect(follower.cursor).to.equal((await publicClient.getBlockNumber()) - 3n);
  });
});
