/**
 * `ioi account` and `--account` (issue 29 item 5): a key imported into a keystore (light scrypt) opens a channel
 * on the embedded devnet with `--account NAME --password-file`; `account new` never overwrites and writes 0600;
 * a wrong password, an empty password file and a FIFO are each one sentence and exit 2; a raw environment key
 * warns on a chain that is not a devnet, and not on one.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAddress, parseEther, toHex, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { serveEmbeddedNetwork, type EmbeddedRpc } from "../../scripts/embedded-rpc";
import { rpcClients } from "../../channel-client/cli/chain";
import { loadAccount, rawKeyWarning } from "../../channel-client/cli/common";
import { decryptKeystore } from "../../channel-client/core/keystore";
import { escrowFixture, HARDHAT_MNEMONIC, ROLE } from "../helpers/fixtures";
import { runCli } from "../helpers/cli";

const keyOf = (index: number) => toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) as Hex;
const jsonOf = (result: { out: string }) => JSON.parse(result.out.split("\n").pop()!) as Record<string, unknown>;

describe("ioi account and --account", function () {
  this.timeout(150_000);
  let rpc: EmbeddedRpc | undefined;
  let dir: string;
  let env: Record<string, string | undefined>;

  before(async () => {
    rpc = await serveEmbeddedNetwork(hre);
  });
  after(async () => {
    await rpc?.close();
  });
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-account-"));
    env = { IOI_KEYSTORE_DIR: path.join(dir, "keystore"), IOI_PRIVATE_KEY: undefined };
    writeFileSync(path.join(dir, "pw"), "s3cret pass\n");
    writeFileSync(path.join(dir, "wrong"), "not it\n");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("imports the payer's key, then opens a channel with --account; exact balances of payer and escrow", async () => {
    const fx = await loadFixture(escrowFixture);
    const payer = getAddress(fx.payer.address);
    const pw = path.join(dir, "pw");
    const imported = await runCli(["account", "import", "--json", "--key-env", "PAYER_KEY", "--name", "payer", "--password-file", pw, "--scrypt-n", "1024"], { ...env, PAYER_KEY: keyOf(ROLE.payer) });
    expect(imported.code, imported.err).to.equal(0);
    const file = jsonOf(imported).file as string;
    expect(jsonOf(imported)).to.deep.include({ address: payer, name: "payer" });
    expect(path.dirname(file)).to.equal(env.IOI_KEYSTORE_DIR);
    expect(path.basename(file)).to.match(new RegExp(`^UTC--\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-\\d{2}\\.\\d{9}Z--${payer.slice(2).toLowerCase()}$`));
    expect(statSync(file).mode & 0o777).to.equal(0o600);
    expect(decryptKeystore(JSON.parse(readFileSync(file, "utf8")), "s3cret pass").privateKey).to.equal(keyOf(ROLE.payer));
    expect(readFileSync(file, "utf8")).not.to.contain(keyOf(ROLE.payer).slice(2));

    // The same key again is refused, and nothing is overwritten.
    const again = await runCli(["account", "import", "--key-env", "PAYER_KEY", "--password-file", pw, "--scrypt-n", "1024"], { ...env, PAYER_KEY: keyOf(ROLE.payer) });
    expect(again.code).to.equal(2);
    expect(again.err).to.contain("already holds");
    expect(readdirSync(env.IOI_KEYSTORE_DIR!)).to.have.length(1);

    const listed = await runCli(["account", "list", "--json"], env);
    expect(listed.code, listed.err).to.equal(0);
    expect(jsonOf(listed).accounts).to.deep.equal([{ address: payer, name: "payer", file }]);
    expect(listed.out).not.to.contain("ciphertext");
    const shown = await runCli(["account", "export-address", "--account", "payer"], env);
    expect([shown.code, shown.out.trim()]).to.deep.equal([0, payer]);

    const chain = ["--rpc", rpc!.url, "--escrow", fx.escrow.address];
    const open = (extra: string[]) =>
      runCli(["open", "--json", "--provider", fx.provider.address, "--deposit", "0.1eth", "--price", "1000", "--db", path.join(dir, "payer.db"), ...chain, ...extra], env);

    const wrong = await open(["--account", "payer", "--password-file", path.join(dir, "wrong")]);
    expect(wrong.code).to.equal(2);
    expect(wrong.err.split("\n")[0]).to.contain("Wrong password for the account payer: the keystore's MAC does not match.");
    expect(wrong.err).not.to.contain("    at ");
    const noPassword = await open(["--account", "payer"]);
    expect(noPassword.code).to.equal(2);
    expect(noPassword.err).to.contain("--account needs --password-file");

    const payerBefore = await fx.publicClient.getBalance({ address: payer });
    const escrowBefore = await fx.publicClient.getBalance({ address: fx.escrow.address });
    const opened = await open(["--account", "payer", "--password-file", pw]);
    expect(opened.code, opened.err).to.equal(0);
    expect(opened.err).not.to.contain("Warning"); // a keystore, and a devnet anyway
    const result = jsonOf(opened);
    expect([result.payer, result.funder]).to.deep.equal([payer, payer]);
    expect(await fx.escrow.read.depositOf([result.sessionId as Hex])).to.equal(parseEther("0.1"));
    const block = await fx.publicClient.getBlock({ includeTransactions: true });
    const tx = block.transactions[0]!;
    expect(getAddress(tx.from)).to.equal(payer);
    const receipt = await fx.publicClient.getTransactionReceipt({ hash: tx.hash });
    expect(await fx.publicClient.getBalance({ address: payer })).to.equal(payerBefore - parseEther("0.1") - receipt.gasUsed * receipt.effectiveGasPrice);
    expect(await fx.publicClient.getBalance({ address: fx.escrow.address })).to.equal(escrowBefore + parseEther("0.1"));

    // By address too (any case), and --account with --key-env is refused in one sentence.
    process.env.IOI_KEYSTORE_DIR = env.IOI_KEYSTORE_DIR;
    try {
      expect(loadAccount({ account: payer.toLowerCase(), "password-file": pw }).address).to.equal(payer);
    } finally {
      delete process.env.IOI_KEYSTORE_DIR;
    }
    const both = await open(["--account", "payer", "--password-file", pw, "--key-env", "X"]);
    expect(both.code).to.equal(2);
    expect(both.err).to.contain("either --account or --key-env");
  });

  it("account new writes a fresh 0600 keystore; weak password inputs and unknown accounts are one sentence", async () => {
    const made = await runCli(["account", "new", "--json", "--name", "alice", "--password-file", path.join(dir, "pw"), "--scrypt-n", "1024"], env);
    expect(made.code, made.err).to.equal(0);
    const { address, file } = jsonOf(made) as { address: string; file: string };
    expect(statSync(file).mode & 0o777).to.equal(0o600);
    expect(getAddress(address)).to.equal(address);
    expect(decryptKeystore(JSON.parse(readFileSync(file, "utf8")), "s3cret pass").address).to.equal(address);
    const sameName = await runCli(["account", "new", "--name", "alice", "--password-file", path.join(dir, "pw"), "--scrypt-n", "1024"], env);
    expect(sameName.code).to.equal(2);
    expect(sameName.err).to.contain('already holds an account named "alice"');

    writeFileSync(path.join(dir, "empty"), "");
    const empty = await runCli(["account", "new", "--password-file", path.join(dir, "empty"), "--scrypt-n", "1024"], env);
    expect(empty.code).to.equal(2);
    expect(empty.err.split("\n")[0]).to.contain("is empty");
    const fifo = path.join(dir, "fifo");
    execFileSync("mkfifo", [fifo]);
    const fromFifo = await runCli(["account", "new", "--password-file", fifo, "--scrypt-n", "1024"], env);
    expect(fromFifo.code).to.equal(2);
    expect(fromFifo.err.split("\n")[0]).to.contain("is not a regular file");
    const missing = await runCli(["account", "export-address", "--account", "bob"], env);
    expect(missing.code).to.equal(2);
    expect(missing.err.split("\n")[0]).to.contain('No account "bob"');
    // Only alice was ever written.
    expect(readdirSync(env.IOI_KEYSTORE_DIR!)).to.have.length(1);
    // The default cost written without --scrypt-n is the standard n = 262144 (checked in the keystore unit test).
  });

  it("a raw key in the environment warns on a chain that is not a devnet, once, and never on a devnet", async () => {
    // A loopback JSON-RPC that reports chain id 10 (not a devnet); rpcClients only asks for the chain id.
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        const { id } = JSON.parse(body) as { id: number };
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ jsonrpc: "2.0", id, result: "0xa" }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const saved = { key: process.env.RAW_KEY, error: console.error };
    const errors: string[] = [];
    process.env.RAW_KEY = keyOf(ROLE.stranger);
    console.error = (...args: unknown[]) => errors.push(args.join(" "));
    try {
      const raw = loadAccount({ "key-env": "RAW_KEY" });
      const { chainId } = await rpcClients({ rpc: url }, raw);
      expect(chainId).to.equal(10);
      expect(errors).to.deep.equal([
        "Warning: signing on chain 10 with a raw private key from $RAW_KEY; keep keys in an encrypted keystore (`ioi account import`, then --account).",
      ]);
      await rpcClients({ rpc: url }); // no account: nothing to warn about
      await rpcClients({ rpc: rpc!.url }, raw); // the embedded devnet, 31337
      expect(errors).to.have.length(1);
      for (const devnet of [31337, 31338, 1337]) expect(rawKeyWarning(raw, devnet)).to.equal(undefined);
      // A keystore account never warns.
      const made = await runCli(["account", "new", "--json", "--name", "k", "--password-file", path.join(dir, "pw"), "--scrypt-n", "1024"], env);
      expect(made.code, made.err).to.equal(0);
      Object.assign(process.env, { IOI_KEYSTORE_DIR: env.IOI_KEYSTORE_DIR });
      expect(rawKeyWarning(loadAccount({ account: "k", "password-file": path.join(dir, "pw") }), 10)).to.equal(undefined);
    } finally {
      console.error = saved.error;
      if (saved.key === undefined) delete process.env.RAW_KEY;
      else process.env.RAW_KEY = saved.key;
      delete process.env.IOI_KEYSTORE_DIR;
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
