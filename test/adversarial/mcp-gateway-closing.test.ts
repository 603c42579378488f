/**
 * Adversarial suite, issue 30 item 1 (decision 0033): `ioi mcp` once its channel is closing on-chain.
 *
 * The payer's own key closes the channel unilaterally while a host still uses the gateway (a second device, an
 * operator, a stolen key). Once the provider has seen `ChannelClosing`, every call the host makes is refused with
 * the gateway's one sentence, charges nothing (neither the day's budget nor the channel), and the gateway keeps
 * answering the host. After the challenge window the channel pays the provider exactly the one call it served,
 * and every party's balance is checked to the wei (each side's gas added back from the blocks it sent in).
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import Database from "better-sqlite3";
import path from "node:path";

import { createWalletClient, custom, parseEther, type Hex, type PublicClient } from "viem";
import { hardhat } from "viem/chains";

import { CHANNEL_PHASES, gasEscrowAbi } from "../../channel-client/chain/escrow";
import { createPayer } from "../../channel-client/roles/payer";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { cliSandbox } from "../helpers/cli";
import { escrowFixture, ROLE } from "../helpers/fixtures";
import { EVERYTHING, gasPaidBy, gatewayArgs, hostWithGateway, keyOf, startProvider, stopChild, v3Terms, writeTerms } from "../helpers/mcp-parts";

const ECHO = parseEther("0.001");
const SUM = parseEther("0.002");
const CAP = parseEther("0.005");
const DEPOSIT = parseEther("0.02");
const receiptOf = (result: { _meta?: unknown }) => (result._meta as Record<string, { amount: string; seq: string; sessionId: Hex }>)["ioi-settlement/receipt"]!;

/** Resolves once `read()` is true, polled every 50 ms; throws after `deadlineMs` (a bound, not a timed assertion). */
async function until(what: string, read: () => boolean | Promise<boolean>, deadlineMs = 90_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!(await read())) {
    if (Date.now() > end) throw new Error(`${what} did not happen within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("adversarial: ioi mcp refuses calls once the channel is closing on-chain (issue 30)", function () {
  this.timeout(300_000);
  const box = cliSandbox("ioi-mcp-closing-");

  it("closeUnilateral by the payer's key: each later call is one sentence, charged nothing; the gateway keeps serving; the close pays the one served call", async () => {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const model = "server-everything";
    const provider = await startProvider({
      rpcUrl: box.rpc.url,
      escrow: fx.escrow.address,
      db: path.join(box.dir, "provider.db"),
      termsFile: writeTerms(box.dir, v3Terms({ echo: ECHO, "get-sum": SUM }, CAP, model)),
      model,
      key: keyOf(ROLE.provider),
      worker: [process.execPath, EVERYTHING, "stdio"],
    });
    box.cleanup.push(() => stopChild(provider.child));
    const before = {
      block: await publicClient.getBlockNumber(),
      payer: await publicClient.getBalance({ address: fx.payer.address }),
      provider: await publicClient.getBalance({ address: fx.provider.address }),
    };
    const payerDb = path.join(box.dir, "payer.db");
    const host = await hostWithGateway(
      gatewayArgs({ rpcUrl: box.rpc.url, escrow: fx.escrow.address, db: payerDb, provider: fx.provider.address, port: provider.port, budgets: { call: CAP, channel: DEPOSIT, day: DEPOSIT } }),
      keyOf(ROLE.payer),
    );
    box.cleanup.push(() => host.client.close());

    const served = await host.client.callTool({ name: "echo", arguments: { message: "before the close" } });
    expect(served.content).to.deep.equal([{ type: "text", text: "Echo: before the close" }]);
    expect(receiptOf(served)).to.deep.include({ seq: "1", amount: ECHO.toString() });
    const sessionId = receiptOf(served).sessionId;

    // The payer's key closes alone (the gateway does not know): the provider learns it from the escrow's events.
    const store = SqliteStore.open(payerDb);
    try {
      const payer = createPayer({
        deployment: { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } },
        publicClient,
        wallet: createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) }),
        store,
      });
      await payer.closeUnilateral(sessionId);
    } finally {
      await store.close();
    }
    await until("the provider seeing the close", () => provider.stderr().includes(`session ${sessionId.slice(0, 10)} is closing`));

    // Every call now: the same one sentence, for any tool; the gateway answers each (it neither crashes nor hangs).
    const sentence = "MCP error -32050: The channel is closing or closed, so the provider refused tools/call; nothing was paid.";
    for (const call of [{ name: "echo", arguments: { message: "after the close" } }, { name: "get-sum", arguments: { a: 2, b: 3 } }, { name: "echo", arguments: { message: "again" } }]) {
      const error = await host.client.callTool(call).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(error, call.name).to.be.instanceOf(Error);
      expect(error!.message, call.name).to.equal(sentence);
    }
    await host.client.ping();
    await host.client.close();

    // Nothing charged: the payer holds one receipt; the gateway's day counts only the served call.
    const after = SqliteStore.open(payerDb);
    expect(after.steps(sessionId).flatMap((s) => (s.receipt ? [[s.seq, s.receipt.receipt.metering.amount]] : []))).to.deep.equal([[1n, ECHO]]);
    await after.close();
    const state = new Database(path.join(box.dir, "mcp-gateway.db"), { readonly: true });
    const day = state.prepare("SELECT status, charged FROM calls ORDER BY CAST(seq AS INTEGER), key").all() as Array<{ status: string; charged: string }>;
    state.close();
    expect(day.filter((c) => c.charged !== "0")).to.deep.equal([{ status: "done", charged: ECHO.toString() }]);
    expect(day.every((c) => c.status === "done")).to.equal(true);

    // After the window the channel is finalised: by the payer here, or first by the provider's own watchtower (it
    // collects by itself) — either way it settles once, and each side's gas is added back from its blocks.
    await hre.network.provider.send("evm_increaseTime", [3601]);
    await hre.network.provider.send("evm_mine", []);
    const closer = SqliteStore.open(payerDb);
    try {
      const payer = createPayer({
        deployment: { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } },
        publicClient,
        wallet: createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) }),
        store: closer,
      });
      await payer.finalize(sessionId).catch(() => undefined);
    } finally {
      await closer.close();
    }
    expect(CHANNEL_PHASES[await publicClient.readContract({ address: fx.escrow.address, abi: gasEscrowAbi, functionName: "phaseOf", args: [sessionId] })]).to.equal("None"); // finalize clears the slot
    const last = await publicClient.getBlockNumber();
    const payerGas = await gasPaidBy(publicClient, fx.payer.address, before.block + 1n, last);
    const providerGas = await gasPaidBy(publicClient, fx.provider.address, before.block + 1n, last);
    expect(await publicClient.getBalance({ address: fx.provider.address })).to.equal(before.provider + ECHO - providerGas);
    expect(await publicClient.getBalance({ address: fx.payer.address })).to.equal(before.payer - ECHO - payerGas);
    expect(await publicClient.getBalance({ address: fx.escrow.address })).to.equal(0n);
  });
});
