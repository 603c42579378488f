/**
 * Evidence by hash (decision 0031): `fetchPackage` keeps only bytes whose canonical package hash is the
 * committed one, from http(s) or data: URIs; `ioi evidence serve` answers GET /<0xhash> for files of its
 * folder; `ioi evidence publish --inline` puts a small package on-chain as a data: URI and refuses a large one
 * with one sentence; a daemon judges a case from an inline package alone.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";

import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { createWalletClient, custom, getAddress, keccak256, parseEventLogs, toBytes, zeroAddress, zeroHash, type Hex } from "viem";
import { hardhat } from "viem/chains";

import { disputeManagerAbi } from "../../channel-client/abi/DisputeManager";
import { bundleHash } from "../../arbitration/documents/bundle";
import { buildGigPackage } from "../../arbitration/runner/build";
import { openGigCase } from "../../arbitration/runner/chain";
import { dataUri, EvidenceUnavailableError, fetchPackage, INLINE_EVIDENCE_LIMIT, serveEvidence } from "../../arbitration/documents/evidence";
import { icsFromJson, icsHash } from "../../arbitration/documents/ics";
import { packageHash, packageToJson, type ChallengePackage } from "../../arbitration/documents/package";
import type { Wallet } from "../../channel-client/chain/write";
import { canon } from "../../channel-client/core/canonical";
import { ArbitratorDaemon } from "../../channel-client/node/arbitrator-daemon";
import { cliSandbox, runCli } from "../helpers/cli";
import { hardhatAccount } from "../helpers/fixtures";
import { KIND, STATUS, SYS, systemFixture, type System } from "../helpers/system";
import { BAD_DELIVERABLE, sampleIcsJson, SUITE } from "./fixtures/samples";

const CLIENT_KEY: Hex = `0x${Buffer.from((hardhatAccount(SYS.client) as unknown as { getHdKey(): { privateKey: Uint8Array } }).getHdKey().privateKey).toString("hex")}`;

async function openCase(s: System): Promise<{ caseId: Hex; pkg: ChallengePackage }> {
  const ics = icsFromJson(sampleIcsJson({ asset: zeroAddress }));
  await s.gigs.write.fund([s.provider.account.address, zeroAddress, 10n ** 18n, icsHash(ics), (await time.latest()) + 30 * 86_400, 3600], { account: s.client.account, value: 10n ** 18n });
  const gigId = await s.gigs.read.gigCount();
  await s.gigs.write.accept([gigId], { account: s.provider.account });
  await s.gigs.write.deliver([gigId, bundleHash(BAD_DELIVERABLE), zeroHash], { account: s.provider.account });
  const caseId = await s.disputes.read.nextCaseId([KIND.Gig, `0x${gigId.toString(16).padStart(64, "0")}`]);
  const pkg = buildGigPackage({ caseId, chainId: s.chainId, disputeManager: getAddress(s.disputes.address), challenger: getAddress(s.client.account.address), lane: 1, gigEscrow: getAddress(s.gigs.address), gigId, ics, suite: SUITE, deliverable: BAD_DELIVERABLE });
  await openGigCase({ wallet: s.client as unknown as Wallet, publicClient: s.publicClient as never, disputeManager: getAddress(s.disputes.address), gigEscrow: getAddress(s.gigs.address), gigId, lane: 1, packageHash: packageHash(pkg) });
  return { caseId, pkg };
}

describe("evidence by hash", function () {
  this.timeout(120_000);
  const sandbox = cliSandbox("ioi-evidence-");

  it("fetchPackage: the committed bytes from a data: URI or the server; other bytes, other schemes and oversize refused as unavailable", async function () {
    const s = await loadFixture(systemFixture);
    const { pkg } = await openCase(s);
    const bytes = new TextEncoder().encode(canon(packageToJson(pkg)));
    const hash = packageHash(pkg);
    expect((await fetchPackage({ uri: dataUri(bytes), packageHash: hash })).pkg.caseId).to.equal(pkg.caseId);
    const other = canon({ ...packageToJson(pkg), claims: [] });
    const refused = async (uri: string, reason: EvidenceUnavailableError["reason"], extra: Partial<Parameters<typeof fetchPackage>[0]> = {}) => {
      const error = await fetchPackage({ uri, packageHash: hash, ...extra }).then(() => undefined, (e: unknown) => e);
      expect(error).to.be.instanceOf(EvidenceUnavailableError);
      expect((error as EvidenceUnavailableError).reason).to.equal(reason);
      expect((error as EvidenceUnavailableError).retryable).to.equal(true);
    };
    await refused(dataUri(new TextEncoder().encode(other)), "unparsable"); // a package needs at least one claim
    const altered = packageToJson(pkg) as unknown as { claims: { description: string }[] };
    altered.claims[0]!.description = "another claim";
    await refused(dataUri(new TextEncoder().encode(canon(altered))), "hash_mismatch");
    await refused("ftp://127.0.0.1/x", "scheme");
    await refused(dataUri(bytes), "too_large", { maxBytes: 100 });

    // The server: by the package's canonical hash and by the raw bytes' hash; 404 for anything else.
    writeFileSync(path.join(sandbox.dir, "case.json"), bytes);
    writeFileSync(path.join(sandbox.dir, "note.txt"), "plain bytes");
    const server = await serveEvidence({ dir: sandbox.dir });
    sandbox.cleanup.push(() => server.close());
    expect((await fetchPackage({ uri: server.url, packageHash: hash })).bytes).to.deep.equal(bytes);
    const raw = await fetch(`${server.url}${keccak256(toBytes("plain bytes"))}`);
    expect(await raw.text()).to.equal("plain bytes");
    expect((await fetch(`${server.url}${keccak256(toBytes("absent"))}`)).status).to.equal(404);
    expect((await fetch(`${server.url}not-a-hash`)).status).to.equal(404);
    expect((await fetch(server.url, { method: "POST" })).status).to.equal(405);
    // A file dropped in later is found.
    writeFileSync(path.join(sandbox.dir, "later.txt"), "later bytes");
    expect((await fetch(`${server.url}${keccak256(toBytes("later bytes"))}`)).status).to.equal(200);
    await refused(`${server.url}${keccak256(toBytes("absent"))}`, "status");
    // Over the limit: refused (here by its Content-Length; a body without one is cut off while streaming).
    await refused(server.url, "too_large", { maxBytes: 1_000 });
  });

  it("ioi evidence publish --inline: a small package goes on-chain as a data: URI and the drawn panel's daemons decide the case from it alone; a large one is refused in one sentence", async function () {
    const s = await loadFixture(systemFixture);
    const { caseId, pkg } = await openCase(s);
    const file = path.join(sandbox.dir, "case.json");
    writeFileSync(file, canon(packageToJson(pkg)));
    const common = ["--rpc", sandbox.rpc.url, "--dispute-manager", s.disputes.address];
    const big = path.join(sandbox.dir, "big.json");
    const padded = packageToJson(pkg) as unknown as { claims: { description: string }[] };
    padded.claims[0]!.description = "x".repeat(INLINE_EVIDENCE_LIMIT);
    writeFileSync(big, canon(padded));
    const refused = await runCli(["evidence", "publish", "--case", caseId, "--inline", big, ...common], { IOI_PRIVATE_KEY: CLIENT_KEY });
    expect(refused.code).to.not.equal(0);
    expect(refused.err).to.match(/inline evidence is for packages up to 4096 bytes/);
    const stranger = await runCli(["evidence", "publish", "--case", caseId, "--uri", "http://127.0.0.1:1/", ...common], { IOI_PRIVATE_KEY: `0x${"11".repeat(32)}` });
    expect(stranger.code).to.not.equal(0);
    expect(stranger.err).to.match(/NotAParty/);
    const ok = await runCli(["evidence", "publish", "--case", caseId, "--inline", file, "--json", ...common], { IOI_PRIVATE_KEY: CLIENT_KEY });
    expect(ok.code, ok.err).to.equal(0);
    const logs = await s.publicClient.getLogs({ address: s.disputes.address, fromBlock: 0n });
    const [published] = parseEventLogs({ abi: disputeManagerAbi, logs, eventName: "EvidencePublished" });
    expect(published!.args.uri.startsWith("data:application/json;base64,")).to.equal(true);

    await time.increaseTo(BigInt((await s.disputes.read.caseOf([caseId])).respondBy) + 1n);
    const daemons = SYS.arbitrators.map(
      (i) =>
        new ArbitratorDaemon({
          publicClient: s.publicClient as never,
          wallet: createWalletClient({ account: hardhatAccount(i), chain: hardhat, transport: custom(hre.network.provider) }) as unknown as Wallet,
          deployment: { disputeManager: getAddress(s.disputes.address), gasEscrow: getAddress(s.escrow.address), gigEscrow: getAddress(s.gigs.address), registry: getAddress(s.registry.address) },
          stateFile: path.join(sandbox.dir, `arb-${i}.json`),
          graceMs: 0,
          log: () => {},
        }),
    );
    for (const d of daemons) await d.open();
    for (let pass = 0; pass < 20 && (await s.disputes.read.caseOf([caseId])).status !== STATUS.Decided; pass++) {
      for (const d of daemons) await d.tick();
      await hre.network.provider.send("hardhat_mine", ["0x1"]);
    }
    const decided = await s.disputes.read.caseOf([caseId]);
    expect(decided.status).to.equal(STATUS.Decided);
    expect((await s.disputes.read.roundOf([caseId, 0])).verdict).to.equal(1);
  });
});

