import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAddress, keccak256, parseEther, stringToBytes, toHex, zeroAddress, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { artifactId } from "../../channel-client/core/canonical";
import { cancelGig, deliverGig, fundGig } from "../../channel-client/chain/gig";
import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { rejection } from "../helpers/assert";
import { GIG_ROLE, HARDHAT_MNEMONIC, gigFixture } from "../helpers/fixtures";
import { runCli } from "../helpers/cli";
import { icsToJson } from "../../arbitration/documents/ics";
import { codeGigIcs } from "../../scripts/examples/code-gig";

/** Runs the CLI in-process and captures what it prints. */
const run = runCli;

/** The JSON object a `--json` run printed on its last line. */
function jsonOf(result: { out: string }): Record<string, unknown> {
  return JSON.parse(result.out.split("\n").pop()!) as Record<string, unknown>;
}

/** Hardhat's account `index` as the private key the CLI reads from the environment. */
function keyOf(index: number): { IOI_PRIVATE_KEY: Hex } {
  return { IOI_PRIVATE_KEY: toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) };
}

const SUBCOMMANDS = ["fund", "cancel", "accept", "deliver", "accept-delivery", "release", "refund", "show"];
const GOOD_KEY = keyOf(GIG_ROLE.client);
const HASH: Hex = keccak256(stringToBytes("a hash"));

describe("ioi gig CLI", () => {
  describe("help and usage errors (no chain)", () => {
    it("lists the gig group in the top-level help and every subcommand in its own", async () => {
      const top = await run(["--help"]);
      expect(top.code).to.equal(0);
      expect(top.out).to.contain("  gig ");
      const group = await run(["gig", "--help"]);
      expect(group.code).to.equal(0);
      for (const sub of SUBCOMMANDS) expect(group.out).to.contain(`  ${sub} `);
      expect(group.out).to.contain("--gig-escrow");
      expect((await run(["gig"])).out).to.contain("Usage: ioi gig <subcommand>");
    });

    for (const sub of SUBCOMMANDS) {
      it(`has --help for gig ${sub}`, async () => {
        const { code, out } = await run(["gig", sub, "--help"]);
        expect(code).to.equal(0);
        expect(out).to.contain(`Usage: ioi gig ${sub}`);
        expect(out).to.contain("--json");
        expect(out).to.contain("--gig-escrow");
      });
    }

    it("documents the fund and deliver options", async () => {
      const fund = (await run(["gig", "fund", "--help"])).out;
      for (const option of ["--amount", "--ics HASH", "--ics-file PATH", "--provider", "--asset", "--deadline", "--dispute-window"]) {
        expect(fund).to.contain(option);
      }
      const deliver = (await run(["gig", "deliver", "--help"])).out;
      for (const option of ["--gig ID", "--deliverable HASH", "--receipt-root HASH"]) expect(deliver).to.contain(option);
    });

    it("answers an unknown subcommand and an unknown option with the usage, exit code 2", async () => {
      const unknown = await run(["gig", "teleport"]);
      expect(unknown.code).to.equal(2);
      expect(unknown.err).to.contain('Unknown gig subcommand "teleport"');
      const bad = await run(["gig", "release", "--frobnicate"]);
      expect(bad.code).to.equal(2);
      expect(bad.err).to.contain("Usage: ioi gig release");
    });

    it("says which key is missing instead of failing deep inside", async () => {
      const result = await run(["gig", "cancel", "--json", "--gig", "1"], { IOI_PRIVATE_KEY: undefined });
      expect(result.code).to.equal(2);
      expect(result.err).to.contain("UsageError: Set IOI_PRIVATE_KEY");
      expect(jsonOf(result)).to.deep.include({ ok: false, error: "UsageError" });
    });

    const usageCases: [name: string, argv: string[], message: string][] = [
      ["a missing gig id", ["gig", "accept"], "--gig is required"],
      ["a gig id that is not a number", ["gig", "release", "--gig", "one"], "--gig must be a whole number"],
      ["gig id 0", ["gig", "refund", "--gig", "0"], "--gig must be a gig id from 1"],
      ["a gig id above uint64", ["gig", "show", "--gig", (1n << 64n).toString()], "--gig must be a gig id from 1"],
      ["a malformed deliverable hash", ["gig", "deliver", "--gig", "1", "--deliverable", "0x1234"], "--deliverable must be 0x and 64 hex digits"],
      ["a missing deliverable hash", ["gig", "deliver", "--gig", "1"], "--deliverable is required"],
      [
        "a malformed receipt root",
        ["gig", "deliver", "--gig", "1", "--deliverable", HASH, "--receipt-root", "root"],
        "--receipt-root must be 0x and 64 hex digits",
      ],
      ["a fund without an amount", ["gig", "fund", "--ics", HASH], "--amount is required"],
      ["an amount that is not a whole number", ["gig", "fund", "--amount", "1.5", "--ics", HASH], "--amount must be a whole number"],
      ["a fund with neither --ics nor --ics-file", ["gig", "fund", "--amount", "1"], "Give exactly one of --ics HASH and --ics-file PATH"],
      [
        "a fund with both --ics and --ics-file",
        ["gig", "fund", "--amount", "1", "--ics", HASH, "--ics-file", "ics.json"],
        "Give exactly one of --ics HASH and --ics-file PATH",
      ],
      ["a malformed ICS hash", ["gig", "fund", "--amount", "1", "--ics", "0xabc"], "--ics must be 0x and 64 hex digits"],
      ["an ICS file that does not exist", ["gig", "fund", "--amount", "1", "--ics-file", "/nonexistent/ics.json"], "Cannot read --ics-file"],
      ["a malformed provider", ["gig", "fund", "--amount", "1", "--ics", HASH, "--provider", "bob"], "--provider must be an address"],
      ["a malformed asset", ["gig", "fund", "--amount", "1", "--ics", HASH, "--asset", "usdc"], "--asset must be an address"],
      ["a zero deadline", ["gig", "fund", "--amount", "1", "--ics", HASH, "--deadline", "0"], "--deadline must be from 1 to 31536000"],
      [
        "a deadline beyond a year",
        ["gig", "fund", "--amount", "1", "--ics", HASH, "--deadline", "31536001"],
        "--deadline must be from 1 to 31536000",
      ],
      [
        "a dispute window under a minute",
        ["gig", "fund", "--amount", "1", "--ics", HASH, "--dispute-window", "59"],
        "--dispute-window must be from 60 to 2592000",
      ],
      ["a malformed --gig-escrow", ["gig", "show", "--gig", "1", "--gig-escrow", "0x12"], '--gig-escrow must be an address; received "0x12"'],
    ];
    for (const [name, argv, message] of usageCases) {
      it(`refuses ${name} with a sentence naming the field (exit code 2)`, async () => {
        // Nothing listens on this port: every case must fail before the CLI reaches for a node.
        const result = await run([...argv, "--rpc", "http://127.0.0.1:9"], GOOD_KEY);
        expect(result.err).to.contain(message);
        expect(result.code).to.equal(2);
      });
    }

    it("the client library refuses bad inputs with typed errors before sending anything", async () => {
      // Neither client is ever used: every call below must fail validation first.
      const unused = new Proxy({}, { get: () => expect.fail("a client was used") }) as never;
      const base = { wallet: unused, publicClient: unused, gigEscrow: zeroAddress };
      const fund = { ...base, amount: 1n, icsHash: HASH, deadline: 2_000_000_000n, disputeWindow: 3600n };
      const cases: [Promise<unknown>, string, string][] = [
        [fundGig({ ...fund, amount: 0n }), "InvalidFieldError", "amount must be a bigint from 1"],
        [fundGig({ ...fund, amount: 1n << 128n }), "InvalidFieldError", "amount must be a bigint from 1"],
        [fundGig({ ...fund, icsHash: `0x${"0".repeat(64)}` }), "InvalidFieldError", "icsHash must be a non-zero 32-byte hash"],
        [fundGig({ ...fund, icsHash: "0x1234" }), "InvalidHexError", "icsHash must be a 32-byte hash"],
        [fundGig({ ...fund, disputeWindow: 59n }), "InvalidFieldError", "disputeWindow must be a bigint from 60 to 2592000"],
        [fundGig({ ...fund, deadline: 1n << 40n }), "InvalidFieldError", "deadline must be a bigint from 1"],
        [fundGig({ ...fund, provider: "bob" as Hex }), "InvalidHexError", "provider must be an address"],
        [cancelGig({ ...base, gigId: 0n }), "InvalidFieldError", "gigId must be a bigint from 1"],
        [deliverGig({ ...base, gigId: 1n, deliverableHash: HASH, receiptRoot: "0x" }), "InvalidHexError", "receiptRoot must be a 32-byte hash"],
      ];
      for (const [promise, name, message] of cases) {
        const error = await rejection(promise);
        expect(error.name, error.message).to.equal(name);
        expect(error.message).to.contain(message);
      }
    });

    it("refuses an ICS file that is not JSON with a typed error (exit code 1)", async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), "ioi-gig-"));
      try {
        const file = path.join(dir, "ics.json");
        writeFileSync(file, "{ not json");
        const result = await run(["gig", "fund", "--json", "--amount", "1", "--ics-file", file], GOOD_KEY);
        expect(result.code).to.equal(1);
        expect(jsonOf(result)).to.deep.include({ ok: false, error: "InvalidJsonError" });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe("against a node", () => {
    let rpc: EmbeddedRpc | undefined;
    let dir: string;

    before(async () => {
      rpc = await serveEmbeddedNetwork(hre);
      dir = mkdtempSync(path.join(os.tmpdir(), "ioi-gig-"));
    });

    after(async () => {
      await rpc?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    /** Runs `ioi gig <argv> --json` against the fixture's contracts as Hardhat account `index`. */
    async function gig(c: Awaited<ReturnType<typeof gigFixture>>, index: number, argv: string[]) {
      return run(["gig", ...argv, "--json", "--rpc", rpc!.url, "--gig-escrow", c.gig.address], keyOf(index));
    }

    it("funds an ETH gig, accepts, delivers and accepts the delivery; show follows every step", async () => {
      const c = await loadFixture(gigFixture);
      const provider = getAddress(c.provider.account.address);
      const amount = parseEther("1.5");
      const funded = await gig(c, GIG_ROLE.client, [
        "fund", "--amount", amount.toString(), "--ics", HASH, "--provider", provider, "--deadline", "86400", "--dispute-window", "600",
      ]);
      expect(funded.code, funded.err).to.equal(0);
      const fundedJson = jsonOf(funded);
      expect(fundedJson).to.deep.include({ ok: true, gigId: "1", amount: amount.toString(), asset: zeroAddress, provider, icsHash: HASH, disputeWindow: "600" });
      expect(fundedJson).to.not.have.property("approvalGasUsed");
      const stored = await c.gig.read.gigOf([1n]);
      expect(BigInt(stored.deadline)).to.equal(BigInt(fundedJson.deadline as string));
      expect(funded.out).to.contain("Funded gig 1:");

      const shown = jsonOf(await gig(c, GIG_ROLE.stranger, ["show", "--gig", "1"]));
      expect(shown).to.deep.include({ ok: true, gigId: "1", status: "Funded", amount: amount.toString(), provider, icsHash: HASH });

      expect(jsonOf(await gig(c, GIG_ROLE.provider, ["accept", "--gig", "1"]))).to.deep.include({ ok: true, gigId: "1", provider });
      const root = keccak256(stringToBytes("receipts"));
      const delivered = jsonOf(await gig(c, GIG_ROLE.provider, ["deliver", "--gig", "1", "--deliverable", HASH, "--receipt-root", root]));
      expect(delivered).to.deep.include({ ok: true, gigId: "1", deliverableHash: HASH, receiptRoot: root });
      expect(BigInt(delivered.windowEndsAt as string)).to.equal(BigInt((await c.gig.read.gigOf([1n])).windowEndsAt));
      expect(jsonOf(await gig(c, GIG_ROLE.stranger, ["show", "--gig", "1"]))).to.deep.include({
        status: "Delivered",
        deliverableHash: HASH,
        receiptRoot: root,
        windowEndsAt: delivered.windowEndsAt,
      });

      const providerBefore = await c.publicClient.getBalance({ address: provider });
      const settled = await gig(c, GIG_ROLE.client, ["accept-delivery", "--gig", "1"]);
      expect(jsonOf(settled)).to.deep.include({ ok: true, gigId: "1", status: "Released", toProvider: amount.toString(), toClient: "0" });
      expect(settled.out).to.contain("Gig 1 Released");
      expect(await c.publicClient.getBalance({ address: provider })).to.equal(providerBefore + amount);
      expect(jsonOf(await gig(c, GIG_ROLE.stranger, ["show", "--gig", "1"]))).to.deep.include({ status: "Released" });
    });

    it("funds an open LaborGas gig from an ICS file (approving first), and refunds it after the deadline", async () => {
      const c = await loadFixture(gigFixture);
      // The stranger holds tokens but never approved the gig escrow: the CLI approves exactly the amount.
      const client = getAddress(c.stranger.account.address);
      const amount = parseEther("40");
      await c.token.write.mint([client, amount]);
      // A real ICS (issue 13: `gig fund` validates it and checks the gig's asset, amount and deadline against it).
      const ics = icsToJson(codeGigIcs({ asset: c.token.address, maxPrice: amount, deadline: 2n ** 40n - 1n }));
      const file = path.join(dir, "ics.json");
      writeFileSync(file, JSON.stringify(ics, null, 2)); // not canonical on disk: hashed in canonical form
      const tooMuch = await gig(c, GIG_ROLE.stranger, ["fund", "--amount", (amount + 1n).toString(), "--ics-file", file, "--asset", c.token.address, "--deadline", "3600"]);
      expect(tooMuch.code, tooMuch.err).to.equal(2);
      expect(tooMuch.err).to.contain("exceeds the ICS's max_price");
      const wrongAsset = await gig(c, GIG_ROLE.stranger, ["fund", "--amount", amount.toString(), "--ics-file", file, "--deadline", "3600"]);
      expect(wrongAsset.code, wrongAsset.err).to.equal(2);
      expect(wrongAsset.err).to.contain("but the gig escrows ETH");
      const funded = await gig(c, GIG_ROLE.stranger, [
        "fund", "--amount", amount.toString(), "--ics-file", file, "--asset", c.token.address, "--deadline", "3600",
      ]);
      expect(funded.code, funded.err).to.equal(0);
      const json = jsonOf(funded);
      expect(json).to.deep.include({ ok: true, gigId: "1", amount: amount.toString(), provider: zeroAddress, icsHash: artifactId(ics), disputeWindow: "3600" });
      expect(json.approvalGasUsed).to.be.a("number");
      expect(await c.token.read.balanceOf([c.gig.address])).to.equal(amount);

      const early = await gig(c, GIG_ROLE.relayer, ["refund", "--gig", "1"]);
      expect(early.code).to.equal(1);
      expect(jsonOf(early)).to.deep.include({ ok: false, error: "GigTransactionError" });
      expect(early.err).to.contain("DeadlineNotPassed");

      await time.increaseTo(BigInt(json.deadline as string) + 1n);
      const refunded = await gig(c, GIG_ROLE.relayer, ["refund", "--gig", "1"]);
      expect(jsonOf(refunded)).to.deep.include({ ok: true, status: "Refunded", toProvider: "0", toClient: amount.toString() });
      expect(await c.token.read.balanceOf([client])).to.equal(amount);
    });

    it("cancels, releases after the window, and names the contract's error when a call reverts", async () => {
      const c = await loadFixture(gigFixture);
      const fund = () => gig(c, GIG_ROLE.client, ["fund", "--amount", "1000", "--ics", HASH, "--dispute-window", "60"]);
      expect(jsonOf(await fund())).to.deep.include({ gigId: "1" });
      expect(jsonOf(await fund())).to.deep.include({ gigId: "2" });

      const notClient = await gig(c, GIG_ROLE.provider, ["cancel", "--gig", "1"]);
      expect(notClient.code).to.equal(1);
      expect(notClient.err).to.contain(`GigTransactionError: GigEscrow.cancel reverted with NotTheClient(1, ${getAddress(c.provider.account.address)})`);
      expect(jsonOf(await gig(c, GIG_ROLE.client, ["cancel", "--gig", "1"]))).to.deep.include({ status: "Refunded", toClient: "1000" });
      expect((await gig(c, GIG_ROLE.client, ["cancel", "--gig", "1"])).err).to.contain("WrongStatus(1, 6)");

      const inactive = await gig(c, GIG_ROLE.idleProvider, ["accept", "--gig", "2"]);
      expect(inactive.err).to.contain("NotAnActiveProvider");
      expect(jsonOf(await gig(c, GIG_ROLE.otherProvider, ["accept", "--gig", "2"]))).to.deep.include({
        provider: getAddress(c.otherProvider.account.address),
      });
      const zero = `0x${"0".repeat(64)}`;
      // The client library refuses a zero deliverable before sending (the contract would: ZeroDeliverableHash).
      const zeroDelivery = await gig(c, GIG_ROLE.otherProvider, ["deliver", "--gig", "2", "--deliverable", zero]);
      expect(zeroDelivery.code).to.equal(1);
      expect(zeroDelivery.err).to.contain("InvalidFieldError: deliverableHash must be a non-zero 32-byte hash");
      const delivered = jsonOf(await gig(c, GIG_ROLE.otherProvider, ["deliver", "--gig", "2", "--deliverable", HASH]));
      expect(delivered).to.deep.include({ receiptRoot: zero });
      expect((await gig(c, GIG_ROLE.stranger, ["release", "--gig", "2"])).err).to.contain("DisputeWindowOpen");
      await time.increaseTo(BigInt(delivered.windowEndsAt as string));
      expect(jsonOf(await gig(c, GIG_ROLE.stranger, ["release", "--gig", "2"]))).to.deep.include({ status: "Released", toProvider: "1000" });

      const missing = await gig(c, GIG_ROLE.stranger, ["show", "--gig", "3"]);
      expect(missing.code).to.equal(2);
      expect(missing.err).to.contain("Gig 3 does not exist");
    });

    it("finds the gig escrow in the deployment record of the RPC's chain id when --gig-escrow is not given", async function () {
      const c = await loadFixture(gigFixture);
      const directory = mkdtempSync(path.join(os.tmpdir(), "ioi-deployments-"));
      const file = path.join(directory, "chain-31337.json");
      try {
        const env = { IOI_GIG_ESCROW: undefined, IOI_DEPLOYMENTS_DIR: directory };
        const absent = await run(["gig", "show", "--gig", "1", "--rpc", rpc!.url], env);
        expect(absent.code).to.equal(1);
        expect(absent.err).to.contain("DeploymentError: There is no deployment record for chain 31337");
        writeFileSync(file, JSON.stringify({ chainId: 31337, contracts: { GigEscrow: { address: c.gig.address, blockNumber: "1" } } }));
        const result = await run(["gig", "show", "--gig", "1", "--rpc", rpc!.url], env);
        expect(result.code).to.equal(2);
        expect(result.err).to.contain(`Gig 1 does not exist in the GigEscrow at ${getAddress(c.gig.address)}`);
        writeFileSync(file, JSON.stringify({ chainId: 31337, contracts: {} }));
        const none = await run(["gig", "show", "--gig", "1", "--rpc", rpc!.url], env);
        expect(none.err).to.contain("names no GigEscrow");
        writeFileSync(file, JSON.stringify({ chainId: 5, contracts: { GigEscrow: { address: c.gig.address } } }));
        const other = await run(["gig", "show", "--gig", "1", "--rpc", rpc!.url, "--deployment", file], env);
        expect(other.code).to.equal(1);
        expect(other.err).to.contain("is for chain 5, but the RPC serves chain 31337");
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    });
  });
});
