/**
 * `ioi open --payer`, `ioi session-key authorize|revoke|list` (issue 14, decision 0025): a sponsor opens a
 * channel for a payer who holds nothing, the payer grants a session key with no transaction, revokes it
 * on-chain, and lists what the chain says; mistakes are one sentence and exit 2.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAddress, parseEther, toHex, type Hex } from "viem";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";

import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { signedSessionKeyGrantFromJson, verifySessionKeyGrant } from "../../channel-client/core/session-key";
import { escrowFixture, HARDHAT_MNEMONIC, ROLE } from "../helpers/fixtures";
import { runCli } from "../helpers/cli";

const keyOf = (index: number) => ({ IOI_PRIVATE_KEY: toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) as Hex });
const jsonOf = (result: { out: string }) => JSON.parse(result.out.split("\n").pop()!) as Record<string, unknown>;

describe("ioi open --payer and ioi session-key", function () {
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
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-session-key-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("a sponsor opens for a payer; the payer grants a fresh key offline, lists it, revokes it on-chain", async () => {
    const fx = await loadFixture(escrowFixture);
    const chain = ["--rpc", rpc!.url, "--escrow", fx.escrow.address];
    const refFile = path.join(dir, "channel.json");
    const payer = getAddress(fx.payer.address);
    const sponsor = getAddress(fx.funder.account.address);
    const opened = await runCli(
      ["open", "--json", "--provider", fx.provider.address, "--deposit", "0.1eth", "--price", "1000", "--payer", payer, "--ref-out", refFile, "--db", path.join(dir, "sponsor.db"), ...chain],
      keyOf(ROLE.funder),
    );
    expect(opened.code, opened.err).to.equal(0);
    const openJson = jsonOf(opened);
    expect([openJson.payer, openJson.funder]).to.deep.equal([payer, sponsor]);
    const sessionId = openJson.sessionId as Hex;
    expect(await fx.escrow.read.depositOf([sessionId])).to.equal(parseEther("0.1"));

    // Only the payer may grant: the sponsor is refused in one sentence.
    const bySponsor = await runCli(["session-key", "authorize", "--ref", refFile, "--cap", "5000", "--out", path.join(dir, "x.json"), ...chain], keyOf(ROLE.funder));
    expect(bySponsor.code).to.equal(2);
    expect(bySponsor.err).not.to.contain("    at ");
    expect(bySponsor.err).to.contain(`Only the channel's payer ${payer} may grant its session keys`);

    const keyFile = path.join(dir, "key.json");
    const before = await fx.publicClient.getTransactionCount({ address: payer });
    const granted = await runCli(["session-key", "authorize", "--json", "--ref", refFile, "--cap", "5000", "--expires-in", "600", "--methods", "tools/call,tools/list", "--out", keyFile, ...chain], keyOf(ROLE.payer));
    expect(granted.code, granted.err).to.equal(0);
    expect(await fx.publicClient.getTransactionCount({ address: payer })).to.equal(before); // no transaction
    const file = JSON.parse(readFileSync(keyFile, "utf8")) as { grant: unknown; privateKey: Hex };
    const signed = signedSessionKeyGrantFromJson(file.grant);
    expect(signed.methods).to.deep.equal(["tools/call", "tools/list"]);
    expect(signed.grant.spendCap).to.equal(5000n);
    expect(getAddress(jsonOf(granted).key as string)).to.equal(signed.grant.key);
    expect(privateKeyToAccount(file.privateKey).address).to.equal(signed.grant.key);
    await verifySessionKeyGrant({ domain: fx.domain, signed, payer, sessionId, now: (await fx.publicClient.getBlock()).timestamp, chain: { revokedAt: 0n, currentEpoch: 0n } });

    const listed = await runCli(["session-key", "list", "--json", "--ref", refFile, "--grant", keyFile, ...chain], {});
    expect(listed.code, listed.err).to.equal(0);
    expect(jsonOf(listed)).to.deep.include({ sessionId, epoch: "0", revoked: [], grant: { file: keyFile, key: signed.grant.key, status: "valid" } });

    const revoked = await runCli(["session-key", "revoke", "--json", "--ref", refFile, "--key", signed.grant.key, ...chain], keyOf(ROLE.payer));
    expect(revoked.code, revoked.err).to.equal(0);
    const revokedAt = BigInt(jsonOf(revoked).revokedAt as string);
    expect(BigInt(await fx.escrow.read.sessionKeyRevokedAt([sessionId, signed.grant.key]))).to.equal(revokedAt);

    const after = jsonOf(await runCli(["session-key", "list", "--json", "--ref", refFile, "--grant", keyFile, ...chain], {}));
    expect(after.revoked).to.deep.equal([{ key: signed.grant.key, revokedAt: revokedAt.toString() }]);
    expect((after.grant as { status: string }).status).to.contain("was revoked on-chain");
  });

  it("refuses careless input with one sentence and exit 2", async () => {
    const fx = await loadFixture(escrowFixture);
    const chain = ["--rpc", rpc!.url, "--escrow", fx.escrow.address];
    const cases: [string[], string][] = [
      [["open", "--provider", fx.provider.address, "--deposit", "1", "--price", "1", "--payer", "0x12"], "--payer must be an address"],
      [["open", "--provider", fx.provider.address, "--deposit", "1", "--price", "1", "--ref-out", "x.json"], "--ref-out is for a sponsored channel"],
      [["session-key", "authorize", "--ref", path.join(dir, "missing.json"), "--cap", "1"], "Cannot read --ref"],
      [["session-key", "revoke", "--all", "--key", fx.provider.address], "--all revokes every key on every channel"],
      [["gig", "fund", "--amount", "1", "--ics", `0x${"11".repeat(32)}`, "--client", "nobody"], "--client must be an address"],
      [["stream", "--session", `0x${"22".repeat(32)}`, "-n", "1", "--session-key", path.join(dir, "missing.json")], "Cannot read --session-key"],
    ];
    for (const [argv, sentence] of cases) {
      const result = await runCli([...argv, ...chain, "--db", path.join(dir, "x.db")], keyOf(ROLE.payer));
      expect(result.code, argv.join(" ")).to.equal(2);
      expect(result.err, argv.join(" ")).to.contain(sentence);
      expect(result.err).not.to.contain("    at ");
    }
  });
});
