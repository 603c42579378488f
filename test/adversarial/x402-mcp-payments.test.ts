/**
 * Adversarial suite, issue 30 item 4 (decision 0034): wrong x402 payments to `ioi provider --x402-mcp-port`.
 *
 * A host sends `tools/call`s whose `_meta["x402/payment"]` carries a bad channel ticket: one that adds less than the
 * tool's price, one signed by another key, one for another channel (carrying this channel's terms), one bound to
 * other terms (the price list changed), one in another network, and — after a good payment — one re-using the
 * answered seq with another amount. Each is answered in x402's shape (`isError`, a `PaymentRequired` valid for
 * `@x402/core`'s parser) whose `error` is one sentence naming the rule; the worker runs for none of them (the
 * provider keeps no output for them), and the cooperative close pays the provider exactly the two good calls.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import Database from "better-sqlite3";
import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createWalletClient, custom, keccak256, parseEther, stringToHex, type Hex, type LocalAccount, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { hardhat } from "viem/chains";

import { channelRefToJson } from "../../channel-client/core/terms";
import { signPaymentTicket, signedPaymentTicketToJson, type PaymentTicket } from "../../channel-client/core/ticket";
import { PayerSession } from "../../channel-client/node/payer-session";
import { createPayer } from "../../channel-client/roles/payer";
import { IoiChannelSchemeClient, x402NetworkOf } from "../../channel-client/roles/x402";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { cliSandbox } from "../helpers/cli";
import { escrowFixture, ROLE } from "../helpers/fixtures";
import { EVERYTHING, gasPaidBy, keyOf, startProvider, stopChild, v3Terms, writeTerms } from "../helpers/mcp-parts";

import type { PaymentRequired } from "@x402/core/dist/cjs/types"; // types only (erased)

const { x402Client } = require("@x402/core/client") as typeof import("@x402/core/dist/cjs/client");
const { parsePaymentRequired } = require("@x402/core/schemas") as typeof import("@x402/core/dist/cjs/schemas");

const ECHO = parseEther("0.001");
const CAP = parseEther("0.005");
const DEPOSIT = parseEther("0.02");
type ToolResult = { content: Array<{ type: string; text: string }>; isError?: boolean; structuredContent?: unknown; _meta?: Record<string, unknown> };

describe("adversarial: wrong x402 payments over MCP are refused in x402's shape, charged nothing (issue 30)", function () {
  this.timeout(300_000);
  const box = cliSandbox("ioi-x402-adv-");

  it("underpaid, another key, another channel, other terms, another network, a stale seq: one sentence each; the close pays the good calls only", async () => {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const model = "server-everything";
    const terms = v3Terms({ echo: ECHO }, CAP, model);
    const providerDb = path.join(box.dir, "provider.db");
    const provider = await startProvider({
      rpcUrl: box.rpc.url,
      escrow: fx.escrow.address,
      db: providerDb,
      termsFile: writeTerms(box.dir, terms),
      model,
      key: keyOf(ROLE.provider),
      worker: [process.execPath, EVERYTHING, "stdio"],
      extra: ["--x402-mcp-port", "0"],
    });
    box.cleanup.push(() => stopChild(provider.child));
    const before = {
      block: await publicClient.getBlockNumber(),
      payer: await publicClient.getBalance({ address: fx.payer.address }),
      provider: await publicClient.getBalance({ address: fx.provider.address }),
    };
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
    x402.setSpendControls(false);

    const host = new Client({ name: "x402-host", version: "1" });
    await host.connect(new StreamableHTTPClientTransport(new URL(provider.ready.x402Mcp as string)));
    box.cleanup.push(() => host.close());
    const args = { message: "hello" };
    const unpaid = (await host.callTool({ name: "echo", arguments: args })) as ToolResult;
    const required = parsePaymentRequired(unpaid.structuredContent).data! as PaymentRequired; // x402 version 2
    const accepted = required.accepts[0]!;

    /** A payment carrying `ticket` signed by `by` (the payer unless said), as x402's PaymentPayload. */
    const forged = async (ticket: Partial<PaymentTicket>, options: { by?: LocalAccount; network?: string } = {}) => {
      const full: PaymentTicket = { sessionId, provider: fx.provider.address, termsHash: channel.ref.terms.termsHash, seq: 1n, cumulativeAmount: ECHO, receiptRoot: session.accumulator.root(), ...ticket };
      const signed = await signPaymentTicket({ account: options.by ?? payer.account, domain: payer.domain, ticket: full });
      return {
        x402Version: 2,
        resource: required.resource,
        accepted: { ...accepted, ...(options.network ? { network: options.network } : {}) },
        payload: { ticket: signedPaymentTicketToJson(signed), leafCount: session.accumulator.size, ref: channelRefToJson(channel.ref) },
      };
    };
    /** Sends the payment; expects x402's refusal and returns its `error`. */
    const refused = async (payment: unknown) => {
      const answer = (await host.callTool({ name: "echo", arguments: args, _meta: { "x402/payment": payment } })) as ToolResult;
      expect(answer.isError).to.equal(true);
      const parsed = parsePaymentRequired(answer.structuredContent);
      expect(parsed.success).to.equal(true);
      expect(parsed.data!.accepts[0]).to.deep.include({ scheme: "ioi-channel", amount: ECHO.toString() });
      expect(JSON.parse(answer.content[0]!.text)).to.deep.equal(answer.structuredContent);
      const error = parsed.data!.error!;
      expect(error.split("\n")).to.have.length(1);
      return error;
    };

    const stranger = privateKeyToAccount(keyOf(ROLE.stranger));
    const other = `0x${"77".repeat(32)}` as Hex;
    const otherTerms = keccak256(stringToHex("the provider's old price list"));
    expect(await refused(await forged({ cumulativeAmount: ECHO - 1n }))).to.equal(`The payment was refused (TicketUnderpaidError): Ticket seq 1 adds ${ECHO - 1n}; this call prepays ${ECHO}.`);
    expect(await refused(await forged({}, { by: stranger }))).to.equal(`The payment was refused (InvalidSignatureError): The payment ticket signature was not made by ${fx.payer.address}.`);
    expect(await refused(await forged({ sessionId: other }))).to.equal(`The payment was refused: The terms name session ${sessionId}, not ${other}.`);
    expect(await refused(await forged({ termsHash: otherTerms }))).to.equal(`The payment was refused (BindingMismatchError): The ticket binds terms ${otherTerms}, not the channel's ${channel.ref.terms.termsHash}.`);
    expect(await refused(await forged({}, { network: "eip155:1" }))).to.equal(`The payment was refused: The payment is in scheme ioi-channel on eip155:1; this provider takes ioi-channel on eip155:${fx.domain.chainId}.`);
    expect(await refused({ x402Version: 2, accepted, payload: { ticket: "not a ticket" } })).to.match(/^The payment was refused: /);

    /** A good payment through x402's client and our scheme; the receipt goes to the payer's store. */
    const pay = async (message: string) => {
      const ask = (await host.callTool({ name: "echo", arguments: { message } })) as ToolResult;
      const payment = await x402.createPaymentPayload(parsePaymentRequired(ask.structuredContent).data! as Parameters<typeof x402.createPaymentPayload>[0]);
      const paid = (await host.callTool({ name: "echo", arguments: { message }, _meta: { "x402/payment": payment } })) as ToolResult;
      expect(paid.content).to.deep.equal([{ type: "text", text: `Echo: ${message}` }]);
      await store.putStep(sessionId, await scheme.acceptPaidResult(paid));
    };
    await pay("first");
    // The answered seq again under another amount (so another signature): not newer, refused; nothing replayed.
    expect(await refused(await forged({ seq: 1n, cumulativeAmount: 2n * ECHO }))).to.equal("The payment was refused (TicketNotNewerError): Ticket seq 1 does not advance past seq 1.");
    await pay("second");
    await host.close();

    // The worker ran for the two good calls only: the provider kept exactly two outputs.
    const kept = new Database(providerDb, { readonly: true });
    const outputs = kept.prepare("SELECT COUNT(*) AS n FROM results").get() as { n: number };
    kept.close();
    expect(outputs.n).to.equal(2);

    await payer.closeCooperative(sessionId, peer);
    const gas = await gasPaidBy(publicClient, fx.payer.address, before.block + 1n, await publicClient.getBlockNumber());
    expect(await publicClient.getBalance({ address: fx.provider.address })).to.equal(before.provider + 2n * ECHO);
    expect(await publicClient.getBalance({ address: fx.payer.address })).to.equal(before.payer - 2n * ECHO - gas);
    expect(await publicClient.getBalance({ address: fx.escrow.address })).to.equal(0n);
  });
});
