/**
 * Issue 30 item 4 (decision 0034): the `ioi-channel` scheme registered with x402's own client library. An unpaid
 * call's x402 `PaymentRequired` (validated by `@x402/core`'s schema) is paid by `x402Client.createPaymentPayload`
 * through our scheme: a channel ticket for exactly the tool's v3 price, which the provider's session accepts as it
 * accepts a ticket over the sealed socket; the answer's `x402/payment-response` carries the signed receipt. An
 * inflated price is refused by the payer's scheme; a ticket for a cheaper call is refused by the provider.
 */
import { expect } from "chai";
import { keccak256, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { canonBytes } from "../../channel-client/core/canonical";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { sessionIdOf, termsHashOf, type ChannelRef, type TermsDocumentV3 } from "../../channel-client/core/terms";
import { PayerSession } from "../../channel-client/node/payer-session";
import { ProviderSession } from "../../channel-client/node/provider-session";
import { channelPaymentRequirements, IoiChannelSchemeClient, paymentRequiredResult, paymentResponseOf, verifyChannelPayment, x402NetworkOf, X402ChannelError } from "../../channel-client/roles/x402";

// x402's packages, loaded as an application would (their exports map's require condition).
const { x402Client } = require("@x402/core/client") as typeof import("@x402/core/dist/cjs/client");
const { PaymentRequiredV2Schema, PaymentPayloadV2Schema } = require("@x402/core/schemas") as typeof import("@x402/core/dist/cjs/schemas");

const MNEMONIC = "test test test test test test test test test test test junk";
const PAYER = mnemonicToAccount(MNEMONIC, { addressIndex: 1 });
const PROVIDER = mnemonicToAccount(MNEMONIC, { addressIndex: 2 });
const ESCROW = "0x5FbDB2315678afecb367f032d93F642f64180aa3" as const;
const DOMAIN = gasEscrowDomain({ chainId: 31337, verifyingContract: ESCROW });
const TERMS: TermsDocumentV3 = {
  version: "3",
  pricing: { perInvocation: 300n, perUnit: null, capPerCall: 300n, tools: { cheap: 100n, dear: 500n } },
  models: ["model:tools@1"],
  disputes: { windowAfterSettlement: 3600n, penalties: {}, refundsFromBond: false },
  requiredReceipts: [],
};
const REF: ChannelRef = {
  terms: { payer: PAYER.address, provider: PROVIDER.address, funder: PAYER.address, asset: "0x0000000000000000000000000000000000000000", termsHash: termsHashOf(TERMS), policyHash: `0x${"ab".repeat(32)}`, challengeDuration: 3600n, nonce: 1n },
  openedAt: 7n,
};
const SESSION_ID: Hex = sessionIdOf(DOMAIN, REF);
const call = (tool: string) => ({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool, arguments: { q: 1 } } });
const OUTPUT = canonBytes({ content: [{ type: "text", text: "done" }] });

function sessions() {
  const payer = new PayerSession({ account: PAYER, domain: DOMAIN, ref: REF, sessionId: SESSION_ID, pricing: TERMS, deposit: 10_000n });
  const provider = new ProviderSession({ account: PROVIDER, domain: DOMAIN, ref: REF, sessionId: SESSION_ID, pricing: TERMS, deposit: 10_000n, modelSnapshotId: "model:tools@1", handler: async () => ({ output: OUTPUT, units: 1n }) });
  return { payer, provider };
}

const params = (request: ReturnType<typeof call>) => ({ chainId: 31337, escrow: ESCROW, provider: PROVIDER.address, sessionId: SESSION_ID, termsHash: REF.terms.termsHash, pricing: TERMS, request });

describe("x402: the ioi-channel scheme registered with @x402/core's client (decision 0034)", function () {
  it("an unpaid call's PaymentRequired (x402 MCP shape) is paid by x402Client through our scheme; the provider accepts the ticket and receipts it", async function () {
    const { payer, provider } = sessions();
    const request = call("dear");
    const unpaid = paymentRequiredResult({ ...params(request), tool: "dear" });
    expect(unpaid.isError).to.equal(true);
    const required = PaymentRequiredV2Schema.parse(unpaid.structuredContent);
    expect(JSON.parse((unpaid.content as Array<{ text: string }>)[0]!.text)).to.deep.equal(unpaid.structuredContent);
    expect(required.accepts[0]).to.deep.include({ scheme: "ioi-channel", network: "eip155:31337", amount: "500" });

    const client = new x402Client().register(x402NetworkOf(31337), new IoiChannelSchemeClient({ session: payer }));
    client.setSpendControls(false);
    const payment = PaymentPayloadV2Schema.parse(await client.createPaymentPayload(required as Parameters<typeof client.createPaymentPayload>[0]));
    expect(payment.accepted.scheme).to.equal("ioi-channel");

    const ticket = await verifyChannelPayment(provider, payment.payload, request);
    expect(ticket.ticket).to.deep.include({ seq: 1n, cumulativeAmount: 500n });
    const done = await provider.invoke(ticket, canonBytes(request), Number(payment.payload.leafCount), "tools/call", request);
    expect(done.step.receipt.receipt.metering.amount).to.equal(500n);
    const step = await payer.acceptReceipt(done.step.receipt, OUTPUT);
    expect(step.seq).to.equal(1n);
    const response = paymentResponseOf({ chainId: 31337, payer: PAYER.address, ticket, receipt: done.step.receipt });
    expect(response).to.deep.include({ success: true, network: "eip155:31337", amount: "500" });
    expect(done.step.receipt.receipt.outputHash).to.equal(keccak256(OUTPUT));
  });

  it("an inflated price is refused by the payer's scheme; a ticket paying a cheap call is refused for a dear one", async function () {
    const { payer, provider } = sessions();
    const inflated = { ...channelPaymentRequirements(params(call("cheap"))), amount: "400" };
    const scheme = new IoiChannelSchemeClient({ session: payer });
    await scheme.createPaymentPayload(2, inflated).then(
      () => expect.fail("an inflated price must not be paid"),
      (e: Error) => expect(e).to.be.instanceOf(X402ChannelError).and.have.property("message").that.matches(/asks 400.*price it at 100/),
    );
    const cheap = await scheme.createPaymentPayload(2, channelPaymentRequirements(params(call("cheap"))));
    await verifyChannelPayment(provider, cheap.payload, call("dear")).then(
      () => expect.fail("a 100 ticket must not pay a 500 call"),
      (e: Error) => expect(e.name).to.equal("TicketUnderpaidError"),
    );
  });
});
