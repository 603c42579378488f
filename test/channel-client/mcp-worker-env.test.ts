/**
 * Issue 28 item 3: a worker gets a clean environment. A real third-party MCP server that prints its environment
 * (`@modelcontextprotocol/server-everything`, tool `get-env`) runs behind `ioi provider --worker`; a stranger pays
 * for a call to it and nothing secret comes back: not the node's key, no other IOI_* secret, no token-like variable.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { spawn } from "node:child_process";
import path from "node:path";
import { getAddress, parseEther, toHex, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { DEFAULT_WORKER_ENV } from "../../channel-client/node/mcp-worker";
import { cliSandbox, runCli } from "../helpers/cli";
import { escrowFixture, HARDHAT_MNEMONIC, ROLE } from "../helpers/fixtures";

const ROOT = path.join(__dirname, "..", "..");
const EVERYTHING = require.resolve("@modelcontextprotocol/server-everything/package.json").replace(/package\.json$/, "dist/index.js");
const PRICE = 1000n;
const keyOf = (index: number) => toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) as Hex;
const lastJson = (result: { out: string }) => JSON.parse(result.out.trim().split("\n").pop()!) as Record<string, unknown>;

describe("issue 28 item 3: workers get a clean environment", function () {
  const box = cliSandbox("ioi-worker-env-");

  it("issue 28 item 3: a stranger pays for get-env behind ioi provider --worker and gets no key, no IOI_* secret, no token", async function () {
    this.timeout(120_000);
    const fx = await loadFixture(escrowFixture);
    const common = ["--rpc", box.rpc.url, "--escrow", fx.escrow.address];
    const providerKey = keyOf(ROLE.provider);
    // The node's environment holds its key and the secrets an operator typically has lying around.
    const secrets = { IOI_PRIVATE_KEY: providerKey, IOI_API_TOKEN: "ioi-token-28", IOI_KEYSTORE_PASSWORD: "hunter2", GITHUB_TOKEN: "ghp_secret28", AWS_SECRET_ACCESS_KEY: "aws-secret-28", WORKER_REGION: "eu-28" };
    const provider = spawn(
      process.execPath,
      [path.join(ROOT, "bin", "ioi.js"), "provider", "--price", PRICE.toString(), "--db", path.join(box.dir, "provider.db"), ...common, "--worker-env", "WORKER_REGION", "--worker", process.execPath, EVERYTHING, "stdio"],
      { env: { ...process.env, IOI_CLI_SOURCE: "1", ...secrets }, cwd: ROOT },
    );
    box.cleanup.push(() => new Promise((resolve) => (provider.exitCode !== null ? resolve(undefined) : (provider.once("exit", resolve), provider.kill("SIGINT")))));
    const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
      let buffered = "";
      provider.stdout.on("data", (chunk: Buffer) => {
        buffered += chunk.toString();
        const line = buffered.split("\n").find((l) => l.includes('"provider.ready"'));
        if (line) resolve(JSON.parse(line) as Record<string, unknown>);
      });
      provider.once("exit", (code) => reject(new Error(`ioi provider exited with ${code}`)));
    });
    expect((ready.worker as { tools: string[] }).tools).to.include("get-env");

    // A stranger (not the provider) opens a channel and pays for one get-env call.
    const stranger = { IOI_PRIVATE_KEY: keyOf(ROLE.stranger) };
    const payer = [...common, "--db", path.join(box.dir, "stranger.db")];
    const deposit = parseEther("0.001");
    const opened = await runCli(["open", "--json", "--provider", fx.provider.address, "--deposit", deposit.toString(), "--peer", `127.0.0.1:${ready.port as number}`, ...payer], stranger);
    expect(opened.code, opened.err).to.equal(0);
    const sessionId = lastJson(opened).sessionId as Hex;
    const called = await runCli(["call", "--json", "--session", sessionId, "--method", "tools/call", "--params", '{"name":"get-env","arguments":{}}', ...payer], stranger);
    expect(called.code, called.err).to.equal(0);
    const result = lastJson(called).result as { content: { type: string; text: string }[] };
    const text = result.content[0]!.text;
    const env = JSON.parse(text) as Record<string, string>;

    // Nothing secret came back: not the key's value anywhere, no IOI_* variable, no token-looking name.
    expect(text).to.not.contain(providerKey.slice(2));
    for (const value of Object.values(secrets).filter((v) => v !== "eu-28")) expect(text).to.not.contain(value);
    expect(Object.keys(env).filter((name) => /^IOI_/i.test(name))).to.deep.equal([]);
    expect(Object.keys(env).filter((name) => /KEY|TOKEN|SECRET|PASSWORD/i.test(name))).to.deep.equal([]);
    // Only the allow-list and what the operator passed by name.
    const allowed = new Set<string>([...DEFAULT_WORKER_ENV, "WORKER_REGION"]);
    expect(Object.keys(env).filter((name) => !allowed.has(name))).to.deep.equal([]);
    expect(env.WORKER_REGION).to.equal("eu-28");

    // The call was paid: the cooperative close moves exactly its price to the provider, the rest back to the stranger.
    const balances = async () => ({
      provider: await fx.publicClient.getBalance({ address: fx.provider.address }),
      stranger: await fx.publicClient.getBalance({ address: mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: ROLE.stranger }).address }),
      treasury: await fx.publicClient.getBalance({ address: fx.treasury.account.address }),
      escrow: await fx.publicClient.getBalance({ address: fx.escrow.address }),
    });
    const before = await balances();
    const closed = await runCli(["close", "--json", "--session", sessionId, ...payer], stranger);
    expect(closed.code, closed.err).to.equal(0);
    const after = await balances();
    const block = await fx.publicClient.getBlock({ includeTransactions: true });
    const tx = block.transactions.find((t) => getAddress(t.from) === mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: ROLE.stranger }).address)!;
    const receipt = await fx.publicClient.getTransactionReceipt({ hash: tx.hash });
    expect(after.provider - before.provider).to.equal(PRICE);
    expect(after.treasury - before.treasury).to.equal(0n);
    expect(after.escrow - before.escrow).to.equal(-deposit);
    expect(after.stranger - before.stranger).to.equal(deposit - PRICE - receipt.gasUsed * receipt.effectiveGasPrice);
  });
});
