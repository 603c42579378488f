/**
 * Issue 30 item 4 (decision 0034): `ioi provider --x402-mcp-port` answers x402 clients over MCP, end to end, with
 * parts nobody here wrote: a real `ioi provider` process selling `@modelcontextprotocol/server-everything`, a host
 * built from the MCP SDK's `Client` over Streamable HTTP, and `@x402/core`'s own `parsePaymentRequired` and
 * `x402Client` (with our `ioi-channel` scheme registered) making the payment.
 *
 * The installed x402 packages (`@x402/core`, `@x402/evm`, `@x402/fetch` 2.27.0) carry no MCP transport (x402's
 * `@x402/mcp` is a separate package, not installed), so the host does what x402's MCP client does, step by step, as
 * its transport specifies: call unpaid; read `PaymentRequired` from `structuredContent` (and the same JSON in
 * `content[0].text`); `createPaymentPayload`; call again with it in `params._meta["x402/payment"]`; read the
 * `SettleResponse` from `result._meta["x402/payment-response"]`.
 *
 * Proven: `tools/list` is free; an unpaid call runs nothing and names the tool's v3 price, the provider, the chain,
 * the escrow and the terms hash; a paid call returns the worker's result with the signed receipt, which the payer
 * accepts (output hash included); the same payment sent again is answered from the store, not paid twice; and the
 * cooperative close (over the sealed socket, on the same store) pays the provider exactly the two calls.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createWalletClient, custom, parseEther, zeroAddress, type PublicClient } from "viem";
import { hardhat } from "viem/chains";

import { PayerSession } from "../../channel-client/node/payer-session";
import { createPayer } from "../../channel-client/roles/payer";
import { IoiChannelSchemeClient, x402NetworkOf } from "../../channel-client/roles/x402";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { cliSandbox } from "../helpers/cli";
import { escrowFixture, ROLE } from "../helpers/fixtures";
import { EVERYTHING, gasPaidBy, keyOf, startProvider, stopChild, v3Terms, writeTerms } from "../helpers/mcp-parts";

import type { PaymentRequired } from "@x402/core/dist/cjs/types"; // types only (erased)

// x402's packages, loaded as an application would (their exports map's require condition).
const { x402Client } = require("@x402/core/client") as typeof import("@x402/core/dist/cjs/client");
const { parsePaymentRequired } = require("@x402/core/schemas") as typeof import("@x402/core/dist/cjs/schemas");

const ECHO = parseEther("0.001");
const SUM = parseEther("0.002");
const CAP = parseEther("0.005");
const DEPOSIT = parseEther("0.02");
type ToolResult = { content: Array<{ type: string; text: string }>; isError?: boolean; structuredContent?: unknown; _meta?: Record<string, unknown> };

describe("x402 over MCP: ioi provider's endpoint for x402 clients (issue 30, decision 0034)", function () {
  this.timeout(300_000);
  const box = cliSandbox("ioi-x402-mcp-");

  it("lists free, asks x402's PaymentRequired, takes the channel ticket in _meta, answers with the receipt; exact balances after the close", async () => {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const model = "server-everything";
    const terms = v3Terms({ echo: ECHO, "get-sum": SUM }, CAP, model);
    const provider = await startProvider({
      rpcUrl: box.rpc.url,
      escrow: fx.escrow.address,
      db: path.join(box.dir, "provider.db"),
      termsFile: writeTerms(box.dir, terms),
      model,
      key: keyOf(ROLE.provider),
      worker: [process.execPath, EVERYTHING, "stdio"],
      extra: ["--x402-mcp-port", "0"],
    });
    box.cleanup.push(() => stopChild(provider.child));
    const url = provider.ready.x402Mcp as string;
    expect(url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const before = {
      block: await publicClient.getBlockNumber(),
      payer: await publicClient.getBalance({ address: fx.payer.address }),
      provider: await publicClient.getBalance({ address: fx.provider.address }),
    };

    // The payer opens a channel on the provider's signed terms (over the sealed socket), and pays through x402.
    const store = SqliteStore.open(path.join(box.dir, "payer.db"));
    box.cleanup.push(() => store.close());
    const payer = createPayer({
      deployment: { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } },
      publicClient,
      wallet: createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) }),
      store,
    });
    const peer = { host: "127.0.0.1", port: provider.port };
    const { sessionId } = await payer.openChannel({ provider: fx.provider.address, peer, deposit: DEPOSIT, expectedTerms: terms });
    const channel = store.getChannel(sessionId)!;
    const session = new PayerSession({ account: payer.account, domain: payer.domain, ref: channel.ref, sessionId, pricing: channel.pricing, deposit: channel.deposit });
    const scheme = new IoiChannelSchemeClient({ session });
    const x402 = new x402Client().register(x402NetworkOf(fx.domain.chainId), scheme);
    x402.setSpendControls(false); // native ETH is not in x402's USD table; the channel's deposit bounds the spending

    const host = new Client({ name: "x402-host", version: "1" });
    await host.connect(new StreamableHTTPClientTransport(new URL(url)));
    box.cleanup.push(() => host.close());
    const tools = await host.listTools();
    expect(tools.tools.map((t) => t.name)).to.include.members(["echo", "get-sum"]);

    /** x402's MCP client flow: unpaid call, PaymentRequired, payment, paid call. */
    const payFor = async (name: string, args: Record<string, unknown>, price: bigint) => {
      const unpaid = (await host.callTool({ name, arguments: args })) as ToolResult;
      expect(unpaid.isError).to.equal(true);
      expect(JSON.parse(unpaid.content[0]!.text)).to.deep.equal(unpaid.structuredContent);
      const parsed = parsePaymentRequired(unpaid.structuredContent);
      expect(parsed.success, JSON.stringify(parsed.error)).to.equal(true);
      const required = parsed.data! as PaymentRequired; // x402 version 2 (checked next)
      expect(required).to.deep.include({ x402Version: 2, error: "Payment required to call this tool" });
      expect(required.resource).to.deep.include({ url: `mcp://tool/${name}` });
      expect(required.accepts).to.have.length(1);
      const [accept] = required.accepts as Array<Record<string, unknown>>;
      expect(accept).to.deep.include({ scheme: "ioi-channel", network: `eip155:${fx.domain.chainId}`, asset: zeroAddress, amount: price.toString() });
      expect(String(accept!.payTo).toLowerCase()).to.equal(fx.provider.address.toLowerCase());
      expect(accept!.extra).to.deep.include({ termsHash: channel.ref.terms.termsHash });
      expect(String((accept!.extra as Record<string, unknown>).escrow).toLowerCase()).to.equal(fx.escrow.address.toLowerCase());
      const payment = await x402.createPaymentPayload(required as Parameters<typeof x402.createPaymentPayload>[0]);
      const paid = (await host.callTool({ name, arguments: args, _meta: { "x402/payment": payment } })) as ToolResult;
      return { paid, payment };
    };

    const echo = await payFor("echo", { message: "paid by ticket" }, ECHO);
    expect(echo.paid.isError ?? false).to.equal(false);
    expect(echo.paid.content).to.deep.equal([{ type: "text", text: "Echo: paid by ticket" }]);
    const settled = echo.paid._meta!["x402/payment-response"] as Record<string, unknown>;
    expect(settled).to.deep.include({ success: true, network: `eip155:${fx.domain.chainId}`, amount: ECHO.toString() });
    expect(String(settled.payer).toLowerCase()).to.equal(fx.payer.address.toLowerCase());
    // The payer takes the receipt in: signed by the provider, for its ticket, binding exactly the result received.
    const first = await scheme.acceptPaidResult(echo.paid);
    expect([first.seq, first.receipt.receipt.metering.amount]).to.deep.equal([1n, ECHO]);
    await store.putStep(sessionId, first);
    expect(settled.transaction).to.match(/^0x[0-9a-f]{64}$/);

    // The same payment again (a host that lost the answer): the same receipt from the store, nothing paid twice.
    const again = (await host.callTool({ name: "echo", arguments: { message: "paid by ticket" }, _meta: { "x402/payment": echo.payment } })) as ToolResult;
    expect(again.content).to.deep.equal(echo.paid.content);
    expect((again._meta!["x402/payment-response"] as Record<string, unknown>).transaction).to.equal(settled.transaction);

    const sum = await payFor("get-sum", { a: 2, b: 3 }, SUM);
    expect(sum.paid.content).to.deep.equal([{ type: "text", text: "The sum of 2 and 3 is 5." }]);
    const second = await scheme.acceptPaidResult(sum.paid);
    expect([second.seq, second.receipt.receipt.metering.amount]).to.deep.equal([2n, SUM]);
    await store.putStep(sessionId, second);
    await host.close();

    // The cooperative close over the sealed socket, from the same store: the provider is paid the two calls exactly.
    await payer.closeCooperative(sessionId, peer);
    const gas = await gasPaidBy(publicClient, fx.payer.address, before.block + 1n, await publicClient.getBlockNumber());
    expect(await publicClient.getBalance({ address: fx.provider.address })).to.equal(before.provider + ECHO + SUM);
    expect(await publicClient.getBalance({ address: fx.payer.address })).to.equal(before.payer - ECHO - SUM - gas);
    expect(await publicClient.getBalance({ address: fx.escrow.address })).to.equal(0n);
  });
});
