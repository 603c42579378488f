/**
 * x402 payments over MCP to a provider fleet (decision 0036 amended, decision 0034): `ioi provider --db postgres://…
 * --x402-mcp-port 0` on two processes over one PostgreSQL.
 *
 * An agent pays through x402's client and our scheme on process A, then on process B, then on A again: each process
 * the payer's payment reaches takes the channel over (the fencing epoch rises each time), every call is paid once
 * under its own seq, and the stores agree byte for byte.
 *
 * Over MCP no key is authenticated, so a payment must prove it may move the channel: what a stranger or an old
 * payment sends to the process that does not serve the channel takes nothing — a ticket signed by another key, the
 * payer's own answered payment of an older seq, the newest seq under another signature. Each is refused in x402's
 * shape with one sentence, the channel's owner and epoch are unchanged, and no worker ran for it. The payer's newest
 * payment sent again to the other process is the payer retrying: it is answered from the store with the same
 * receipt, and not paid again.
 *
 * A payer that pays through a session key moves the channel with the grant beside its key's ticket; a stranger that
 * grants its own key "for the payer" moves nothing.
 *
 * Each case ends in a cooperative close through a sealed connection that pays the provider exactly the calls receipted
 * (provider, funder and escrow balances).
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import path from "node:path";
import hre from "hardhat";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { parseEther, type Hex, type LocalAccount, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";

import { openChannel } from "../../channel-client/chain/escrow";
import { channelRefToJson, NATIVE_ASSET, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { signSessionKeyGrant, signedSessionKeyGrantToJson, type SignedSessionKeyGrant } from "../../channel-client/core/session-key";
import { signPaymentTicket, signedPaymentTicketToJson, type SignedPaymentTicket } from "../../channel-client/core/ticket";
import { PayerClient } from "../../channel-client/node/payer-client";
import { PayerSession } from "../../channel-client/node/payer-session";
import { IoiChannelSchemeClient, x402NetworkOf } from "../../channel-client/roles/x402";
import { PgStore } from "../../channel-client/store/pg-store";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { closeCooperativelyExact, escrowFixture, makeTerms, ROLE } from "../helpers/fixtures";
import { keyOf } from "../helpers/mcp-parts";
import { sharedPostgres } from "../helpers/postgres";
import { providerChildSuite, startProviderChild, type ProviderProcess } from "../helpers/provider-child";
import { within } from "../helpers/within";

import type { PaymentRequired } from "@x402/core/dist/cjs/types"; // types only (erased)

const { x402Client } = require("@x402/core/client") as typeof import("@x402/core/dist/cjs/client");
const { parsePaymentRequired } = require("@x402/core/schemas") as typeof import("@x402/core/dist/cjs/schemas");

/** Hardhat's well-known key for account #3 (ROLE.provider). */
const PROVIDER_KEY: Hex = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";

const PRICE = parseEther("0.0001");
const DEPOSIT = parseEther("1");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const DEADLINE_MS = 60_000;
const WORKER = path.join(__dirname, "..", "..", "examples", "mcp-test-worker.js");
type ToolResult = { content: Array<{ type: string; text: string }>; isError?: boolean; structuredContent?: unknown; _meta?: Record<string, unknown> };

/** A fixture opening a funded channel with nonce `nonce` (one function per nonce, as `loadFixture` needs). */
function channelFixture(nonce: bigint) {
  return async function fleetX402Fixture() {
    const fx = await escrowFixture();
    const publicClient = fx.publicClient as unknown as PublicClient;
    const terms = makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce });
    const opened = await openChannel({ wallet: fx.funder, publicClient, escrow: fx.escrow.address, terms, amount: DEPOSIT });
    return { ...fx, publicClient, opened };
  };
}
const payerFixture = channelFixture(0x402f1ee7n);
const sessionKeyFixture = channelFixture(0x402f1ee8n);

const upper = (text: string) => ({ name: "upper", arguments: { text } });

describe("adversarial: x402 payments to a provider fleet move the channel only for its payer's fresh payment", function () {
  this.timeout(240_000);

  const suite = providerChildSuite(hre, "ioi-fleet-x402-");
  const { children, closers } = suite;

  /**
   * Two fleet processes with x402 on one fresh database, an x402 agent on each, and a payer paying `fx`'s channel
   * through x402's client and our scheme (with `sessionKey`, its tickets are the key's and carry the payer's grant).
   */
  async function fleetWithAgents(fx: Awaited<ReturnType<typeof payerFixture>>, name: string, sessionKey?: { account: LocalAccount; grant: SignedSessionKeyGrant }) {
    const { sessionId, ref } = fx.opened;
    const db = await (await sharedPostgres()).createDatabase();
    const start = (): Promise<ProviderProcess> =>
      startProviderChild({ rpcUrl: suite.rpc!.url, escrow: fx.escrow.address, db, price: PRICE, key: PROVIDER_KEY, children, startDeadlineMs: DEADLINE_MS, extraArgs: ["--x402-mcp-port", "0", "--worker", process.execPath, WORKER] });
    const [a, b] = await Promise.all([start(), start()]);
    expect(a.ready.x402Mcp, "the fleet process serves x402").to.be.a("string");
    const view = await PgStore.open(db, { mode: "all", poolSize: 1 });
    closers.push(() => view.close());
    const [pidA, pidB] = [String(a.child.pid), String(b.child.pid)];
    /** Who serves the channel, as "pid@epoch". */
    const owner = async () => {
      const rows = await view.query<{ owner: string; epoch: string }>("SELECT owner, epoch FROM channel_owners WHERE session_id = $1", [Buffer.from(sessionId.slice(2), "hex")]);
      return rows.map((r) => `${r.owner.split(":")[1]}@${r.epoch}`);
    };
    /** Outputs the provider kept: one per call its worker answered. */
    const outputs = async () => Number((await view.query<{ n: string }>("SELECT count(*) AS n FROM results"))[0]!.n);
    const payerStore = SqliteStore.open(path.join(suite.dir, `${name}.db`));
    closers.push(() => payerStore.close());
    await payerStore.putChannel({ sessionId, role: "payer", ref, pricing, escrow: fx.escrow.address, chainId: fx.domain.chainId, deposit: fx.opened.deposit, status: "open" });
    const session = new PayerSession({ account: fx.payer, domain: fx.domain, ref, sessionId, pricing, deposit: fx.opened.deposit, ...(sessionKey ? { sessionKey } : {}) });
    const scheme = new IoiChannelSchemeClient({ session });
    const x402 = new x402Client().register(x402NetworkOf(fx.domain.chainId), scheme);
    x402.setSpendControls(false);
    const host = async (p: ProviderProcess) => {
      const client = new Client({ name: "x402-agent", version: "1" });
      await client.connect(new StreamableHTTPClientTransport(new URL(p.ready.x402Mcp as string)));
      closers.push(() => client.close());
      return client;
    };
    const [onA, onB] = [await host(a), await host(b)];
    /** One paid call through x402's client on `client`; its receipt goes to the payer's store. Returns the payment. */
    const pay = async (client: Client, text: string) => {
      const ask = (await within(client.callTool(upper(text)), DEADLINE_MS, `the price of ${text}`)) as ToolResult;
      const payment = await x402.createPaymentPayload(parsePaymentRequired(ask.structuredContent).data! as Parameters<typeof x402.createPaymentPayload>[0]);
      const paid = (await within(client.callTool({ ...upper(text), _meta: { "x402/payment": payment } }), DEADLINE_MS, `the paid call ${text}`)) as ToolResult;
      expect(paid.isError ?? false, JSON.stringify(paid.content)).to.equal(false);
      expect(paid.content).to.deep.equal([{ type: "text", text: text.toUpperCase() }]);
      await payerStore.putStep(sessionId, await scheme.acceptPaidResult(paid));
      return { payment, paid };
    };
    /** Sends `payment` for `text` on `client`; expects x402's refusal and returns its one-sentence `error`. */
    const refused = async (client: Client, text: string, payment: unknown) => {
      const answer = (await within(client.callTool({ ...upper(text), _meta: { "x402/payment": payment } }), DEADLINE_MS, "a refused payment")) as ToolResult;
      expect(answer.isError).to.equal(true);
      const parsed = parsePaymentRequired(answer.structuredContent);
      expect(parsed.success).to.equal(true);
      const error = parsed.data!.error!;
      expect(error.split("\n")).to.have.length(1);
      return error;
    };
    /** A payment carrying `signed` (and `grant`), in the shape x402's client sends, for the call `text` on B. */
    const paymentOf = async (text: string, signed: SignedPaymentTicket, grant?: SignedSessionKeyGrant) => {
      const accepted = parsePaymentRequired(((await onB.callTool(upper(text))) as ToolResult).structuredContent).data! as PaymentRequired;
      return {
        x402Version: 2,
        resource: accepted.resource,
        accepted: accepted.accepts[0],
        payload: { ticket: signedPaymentTicketToJson(signed), leafCount: session.accumulator.size, ref: channelRefToJson(ref), ...(grant ? { sessionKey: signedSessionKeyGrantToJson(grant) } : {}) },
      };
    };
    /** The stores agree step for step; a cooperative close over a sealed connection to A pays exactly `calls` calls. */
    const closeAndCheck = async (calls: bigint) => {
      const payerSteps = payerStore.steps(sessionId);
      const fresh = await PgStore.open(db, { mode: "all", poolSize: 1 });
      const rows = fresh.steps(sessionId);
      await fresh.close();
      const line = (s: { seq: bigint; ticket: { signature: Hex }; receipt?: { signature: Hex } | undefined; leaf?: Hex | undefined }) => `${s.seq}:${s.ticket.signature}:${s.receipt?.signature}:${s.leaf}`;
      expect(payerSteps.map((s) => s.seq)).to.deep.equal(Array.from({ length: Number(calls) }, (_, i) => BigInt(i + 1)));
      expect(rows.map(line)).to.deep.equal(payerSteps.map(line));
      const client = await within(PayerClient.connect({ account: fx.payer, domain: fx.domain, store: payerStore, channel: payerStore.getChannel(sessionId)!, port: a.port, timeoutMs: 20_000 }), DEADLINE_MS, "connect to A");
      const { summary, payerSignature, providerSignature } = await within(client.cooperativeClose(), DEADLINE_MS, "the cooperative close");
      expect(summary.finalSeq).to.equal(calls);
      expect(summary.finalAmount).to.equal(calls * PRICE);
      await closeCooperativelyExact(fx, { ref, summary, payerSignature, providerSignature }, calls * PRICE, DEPOSIT);
      await client.close();
      for (const p of [a, b]) p.child.kill("SIGTERM");
      await Promise.all([a.exited, b.exited]);
    };
    return { a, b, onA, onB, pidA, pidB, owner, outputs, session, pay, refused, paymentOf, closeAndCheck };
  }

  it("the payer's payments move the channel between processes, paid once each; a stranger's, an old or a re-signed payment moves nothing and runs nothing; the close pays exactly the receipts", async () => {
    const fx = await loadFixture(payerFixture);
    const { sessionId, ref } = fx.opened;
    const { onA, onB, pidA, pidB, owner, outputs, session, pay, refused, paymentOf, closeAndCheck } = await fleetWithAgents(fx, "payer");

    // The payer pays on A twice, then on B, then on A: each move raises the epoch; each call has its own seq.
    await pay(onA, "one");
    const second = await pay(onA, "two");
    expect(await owner()).to.deep.equal([`${pidA}@1`]);
    await pay(onB, "three");
    expect(await owner(), "B took the channel for the payer's fresh payment").to.deep.equal([`${pidB}@2`]);
    const fourth = await pay(onA, "four");
    expect(await owner(), "and A took it back").to.deep.equal([`${pidA}@3`]);
    expect(await outputs()).to.equal(4);

    // What may not move the channel from A to B: each refused on B, A still serves it, no worker ran.
    const stranger = privateKeyToAccount(keyOf(ROLE.stranger));
    const nextTicket = { sessionId, provider: fx.provider.address, termsHash: ref.terms.termsHash, seq: 5n, cumulativeAmount: 5n * PRICE, receiptRoot: session.accumulator.root() };
    const byStranger = await paymentOf("five", await signPaymentTicket({ account: stranger, domain: fx.domain, ticket: nextTicket }));
    expect(await refused(onB, "five", byStranger)).to.equal(`The payment was refused: The payment ticket signature was not made by ${fx.payer.address}.`);
    expect(await refused(onB, "two", second.payment)).to.equal(
      `The payment was refused: Ticket seq 2 is not newer than seq 4, the newest this provider holds for session ${sessionId}; an old payment does not move the channel between the provider's processes.`,
    );
    // The newest seq, signed again over another amount: the payer's key, but not the ticket the provider answered.
    const resigned = await paymentOf("four", await signPaymentTicket({ account: fx.payer, domain: fx.domain, ticket: { ...nextTicket, seq: 4n, cumulativeAmount: 9n * PRICE } }));
    expect(await refused(onB, "four", resigned)).to.match(/^The payment was refused: Ticket seq 4 is not newer than seq 4, /);
    expect(await owner(), "nothing moved the channel").to.deep.equal([`${pidA}@3`]);
    expect(await outputs(), "no worker ran for a refused payment").to.equal(4);

    // The payer sends its newest payment again, to B: the same receipt, answered from the store, not paid again.
    const again = (await within(onB.callTool({ ...upper("four"), _meta: { "x402/payment": fourth.payment } }), DEADLINE_MS, "the newest payment again")) as ToolResult;
    expect(again.content).to.deep.equal([{ type: "text", text: "FOUR" }]);
    expect(again._meta!["x402/payment-response"]).to.deep.equal(fourth.paid._meta!["x402/payment-response"]);
    expect(await owner()).to.deep.equal([`${pidB}@4`]);
    expect(await outputs()).to.equal(4);

    await closeAndCheck(4n);
  });

  it("a session key's payments move the channel with the payer's grant; a stranger's grant for its own key moves nothing; the close pays exactly the receipts", async () => {
    const fx = await loadFixture(sessionKeyFixture);
    const { sessionId, ref } = fx.opened;
    const key = privateKeyToAccount(keyOf(ROLE.sessionKey));
    const expiry = (await fx.publicClient.getBlock()).timestamp + 86_400n;
    const grant = await signSessionKeyGrant({ account: fx.payer, domain: fx.domain, sessionId, key: key.address, expiry, spendCap: 10n * PRICE, methods: ["tools/call"], epoch: 0n });
    const { onA, onB, pidA, pidB, owner, outputs, session, pay, refused, paymentOf, closeAndCheck } = await fleetWithAgents(fx, "payer-key", { account: key, grant });

    await pay(onA, "one");
    expect(await owner()).to.deep.equal([`${pidA}@1`]);
    await pay(onB, "two");
    expect(await owner(), "B took the channel for the key's fresh payment under the payer's grant").to.deep.equal([`${pidB}@2`]);

    // A stranger grants its own key "for the payer" and pays the next seq with it, on A: refused, nothing moves.
    const stranger = privateKeyToAccount(keyOf(ROLE.stranger));
    const forged = await signSessionKeyGrant({ account: stranger, domain: fx.domain, sessionId, key: stranger.address, expiry, spendCap: 10n * PRICE, methods: ["tools/call"], epoch: 0n });
    const ticket = await signPaymentTicket({ account: stranger, domain: fx.domain, ticket: { sessionId, provider: fx.provider.address, termsHash: ref.terms.termsHash, seq: 3n, cumulativeAmount: 3n * PRICE, receiptRoot: session.accumulator.root() } });
    const payment = await paymentOf("three", ticket, forged);
    expect(await refused(onA, "three", payment)).to.equal(`The payment was refused: The grant of session key ${stranger.address} was not signed by the payer ${fx.payer.address}.`);
    expect(await owner(), "nothing moved the channel").to.deep.equal([`${pidB}@2`]);
    expect(await outputs()).to.equal(2);

    await closeAndCheck(2n);
  });
});
