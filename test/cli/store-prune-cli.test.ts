/**
 * `ioi store prune` (issue 31 item 2) from the command line: a missing --archive-dir is one sentence and a
 * non-zero exit; against a devnet, a channel the chain does not hold as Settled is kept and said why, a channel
 * of another escrow is kept, and nothing is archived or deleted. (The policy's on-chain cases, the archive and the
 * balances are in test/adversarial/prune.test.ts.)
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAddress, zeroAddress } from "viem";

import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { sessionIdOf, type ChannelRef } from "../../channel-client/core/terms";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { ChannelRecord } from "../../channel-client/store/store";
import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { runCli } from "../helpers/cli";
import { makeTerms } from "../helpers/fixtures";
import { systemFixture } from "../helpers/system";

describe("ioi store prune", function () {
  this.timeout(120_000);
  let rpc: EmbeddedRpc | undefined;
  let dir: string;
  before(async () => {
    rpc = await serveEmbeddedNetwork(hre);
  });
  after(async () => {
    await rpc?.close();
  });
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-prune-cli-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function channel(escrow: `0x${string}`, nonce: bigint): ChannelRecord {
    const ref: ChannelRef = { terms: makeTerms(zeroAddress, { nonce }), openedAt: 1n };
    return { sessionId: sessionIdOf(gasEscrowDomain({ chainId: 31337, verifyingContract: escrow }), ref), role: "provider", ref, pricing: { version: "1", unit: "invocation", pricePerInvocation: 1n }, escrow, chainId: 31337, deposit: 1n, status: "settled" };
  }

  it("refuses a missing --archive-dir in one sentence", async () => {
    const result = await runCli(["store", "prune", "--db", path.join(dir, "x.db")]);
    expect(result.code).to.not.equal(0);
    expect(result.err).to.contain("--archive-dir is required");
    expect(result.err).to.not.match(/\n\s+at /);
  });

  it("keeps a channel the chain does not hold as Settled and one of another escrow, saying why; archives and deletes nothing", async () => {
    const s = await loadFixture(systemFixture);
    const db = path.join(dir, "provider.db");
    const mine = channel(getAddress(s.escrow.address), 1n);
    const elsewhere = channel(getAddress(s.registry.address), 2n);
    const store = SqliteStore.open(db);
    await store.putChannel(mine);
    await store.putChannel(elsewhere);
    await store.close();
    const archiveDir = path.join(dir, "archive");
    const base = ["store", "prune", "--json", "--db", db, "--archive-dir", archiveDir, "--rpc", rpc!.url, "--dispute-manager", s.disputes.address];
    for (const args of [[...base, "--dry-run"], base]) {
      const result = await runCli(args);
      expect(result.code, result.err).to.equal(0);
      // The lines first, the JSON last (channel-client/cli/ioi.ts).
      expect(result.out).to.contain(`Kept ${mine.sessionId}: it is None on-chain, not Settled.`);
      const json = JSON.parse(result.out.split("\n").pop()!) as { channels: { sessionId: string; action: string; reason: string }[] };
      expect(json.channels).to.deep.equal([
        { sessionId: mine.sessionId, action: "kept", reason: "it is None on-chain, not Settled" },
        { sessionId: elsewhere.sessionId, action: "kept", reason: `it is held by the GasEscrow ${elsewhere.escrow} on chain 31337, not by this DisputeManager's escrow on chain 31337` },
      ]);
    }
    expect(existsSync(archiveDir) ? readdirSync(archiveDir) : []).to.deep.equal([]);
    const reopened = SqliteStore.open(db);
    try {
      expect(reopened.listChannels().map((c) => c.sessionId)).to.deep.equal([mine.sessionId, elsewhere.sessionId]);
    } finally {
      await reopened.close();
    }
  });
});
