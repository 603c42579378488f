/**
 * `ioi api serve` as an operator runs it: a child process on the embedded devnet served over HTTP, the token
 * generated into a 0600 file, answered with that token and refused without it, stopped with SIGTERM; and the
 * usage refusals (a public host without --allow-public, a short token) as one sentence and exit 2.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { getAddress, type HDAccount } from "viem";

import { hardhatAccount } from "../helpers/fixtures";
import { cliSandbox, runCli } from "../helpers/cli";
import { SYS, systemFixture } from "../helpers/system";
import { httpCall, httpRaw } from "./schema-client";

const ROOT = path.resolve(__dirname, "../..");
const PAYER_KEY = "0x" + Buffer.from((hardhatAccount(SYS.payer) as HDAccount).getHdKey().privateKey!).toString("hex");

describe("ioi api serve", function () {
  this.timeout(120_000);
  const sandbox = cliSandbox("ioi-api-cli-");

  it("generates a 0600 token file, answers with the token, refuses without it, and stops on SIGTERM", async () => {
    const s = await loadFixture(systemFixture);
    const deployment = path.join(sandbox.dir, "chain-31337.json");
    writeFileSync(deployment, JSON.stringify({ chainId: 31337, contracts: { GasEscrow: { address: s.escrow.address }, GigEscrow: { address: s.gigs.address } } }));
    const tokenFile = path.join(sandbox.dir, "api.token");
    const child: ChildProcess = spawn(
      process.execPath,
      [path.join(ROOT, "bin/ioi.js"), "api", "serve", "--rpc", sandbox.rpc.url, "--deployment", deployment, "--db", path.join(sandbox.dir, "payer.db"), "--port", "0", "--token-file", tokenFile],
      { cwd: ROOT, env: { ...process.env, IOI_PRIVATE_KEY: PAYER_KEY, IOI_CLI_SOURCE: "1", IOI_API_TOKEN: undefined }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stderr = "";
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    sandbox.cleanup.push(async () => {
      if (child.exitCode === null) child.kill("SIGKILL");
      await exited;
    });
    const ready = await new Promise<{ url: string; ws: string; account: string; chainId: number; tokenFile: string }>((resolve, reject) => {
      let partial = "";
      child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
        const lines = (partial + chunk).split("\n");
        partial = lines.pop()!;
        for (const line of lines) if (line.includes('"api.ready"')) resolve(JSON.parse(line));
      });
      void exited.then((code) => reject(new Error(`ioi api serve exited (${code}) before it was ready: ${stderr}`)));
    });
    expect(ready).to.deep.include({ account: getAddress(hardhatAccount(SYS.payer).address), chainId: 31337, tokenFile });
    expect(ready.url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(statSync(tokenFile).mode & 0o777).to.equal(0o600);
    const token = readFileSync(tokenFile, "utf8").trim();
    expect(token).to.match(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(ready)).to.not.contain(token); // the token is never printed

    const info = await httpCall(ready.url, token, "node.info");
    expect(info.contracts).to.deep.equal({ GasEscrow: getAddress(s.escrow.address), GigEscrow: getAddress(s.gigs.address) });
    expect((await httpRaw(ready.url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "node.info" }))).status).to.equal(401);

    child.kill("SIGTERM");
    expect(await exited).to.equal(0);
  });

  it("refuses a public host without --allow-public, and a short token, with one sentence and exit 2", async () => {
    const publicHost = await runCli(["api", "serve", "--host", "0.0.0.0", "--rpc", sandbox.rpc.url]);
    expect(publicHost.code).to.equal(2);
    expect(publicHost.err.split("\n")[0]).to.equal("ioi api serve failed — UsageError: --host 0.0.0.0 is not loopback: pass --allow-public to expose the API beyond this machine.");
    const short = await runCli(["api", "serve", "--rpc", sandbox.rpc.url], { IOI_API_TOKEN: "short" });
    expect(short.code).to.equal(2);
    expect(short.err.split("\n")[0]).to.equal("ioi api serve failed — UsageError: $IOI_API_TOKEN must hold a token of at least 32 characters.");
    const unknown = await runCli(["api", "serv"]);
    expect(unknown.code).to.equal(2);
    expect(unknown.err).to.contain('Unknown api subcommand "serv". Did you mean "serve"?');
  });
});
