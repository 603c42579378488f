/**
 * Adversarial suite, issue 15: a payer no longer waits on its own disk before a ticket leaves, so after a crash
 * it may hold fewer tickets than the provider answered, and takes the missing steps back from the provider
 * (`steps.request` / `steps`, decision 0009). Here the provider is the adversary: it reports more than it
 * answered, or hands back steps the payer never signed, receipts that do not hold, tickets of another channel.
 * Every attack must fail the connection with a typed error naming what was wrong. Steps are checked one by one,
 * in seq order, and each is stored only once it passed: the payer's store keeps exactly the genuine steps
 * before the first bad one, so nothing it later signs or closes with counts a step it did not pay for.
 * No funds move off-chain here; the honest take-back is settled on-chain with exact balances in
 * `test/channel-client/nodes.test.ts`.
 */
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { keccak256, parseEther, stringToBytes, zeroHash, type Hex, type LocalAccount } from "viem";

import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { GENESIS_RECEIPT_HASH, sessionReceiptHash, signSessionReceipt, type SessionReceipt, type SignedSessionReceipt } from "../../channel-client/core/receipt";
import { signSessionKeyGrant } from "../../channel-client/core/session-key";
import { NATIVE_ASSET, sessionIdOf, termsHashOf, type ChannelRef, type PricingTerms } from "../../channel-client/core/terms";
import { signPaymentTicket, type SignedPaymentTicket } from "../../channel-client/core/ticket";
import { PayerClient } from "../../channel-client/node/payer-client";
import { decodeMessage, encodeMessage, isPacket } from "../../channel-client/node/protocol";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { listenSecure, type SecureServer } from "../../channel-client/transport";
import { hardhatAccount, makeTerms, ROLE } from "../helpers/fixtures";

const PRICE = parseEther("0.001");
const DEPOSIT = parseEther("1");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const payer = hardhatAccount(ROLE.payer);
const provider = hardhatAccount(ROLE.provider);
const stranger = hardhatAccount(ROLE.stranger);
const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });

function channelRef(nonce: bigint): ChannelRef {
  return { terms: makeTerms(NATIVE_ASSET, { termsHash: termsHashOf(pricing), nonce }), openedAt: 7n };
}
const ref = channelRef(1n);
const sessionId = sessionIdOf(domain, ref);

type Step = { ticket: SignedPaymentTicket; receipt: SignedSessionReceipt };

/** Step `seq` as an honest exchange would have made it: the payer's ticket, the provider's receipt chained to `prev`. */
async function step(seq: bigint, prev: Hex, overrides: { ticketSigner?: LocalAccount; receiptSigner?: LocalAccount; amount?: bigint; charge?: bigint; session?: Hex } = {}): Promise<Step> {
  const session = overrides.session ?? sessionId;
  const ticket = await signPaymentTicket({
    account: overrides.ticketSigner ?? payer,
    domain,
    ticket: { sessionId: session, provider: provider.address, termsHash: ref.terms.termsHash, seq, cumulativeAmount: overrides.amount ?? seq * PRICE, receiptRoot: zeroHash },
  });
  const receipt: SessionReceipt = {
    sessionId: session,
    seq,
    offloadPacketHash: keccak256(stringToBytes(`request ${seq}`)),
    outputHash: keccak256(stringToBytes(`output ${seq}`)),
    policyHash: ref.terms.policyHash,
    modelSnapshotId: "worker:echo@1",
    metering: { units: 1n, amount: overrides.charge ?? PRICE },
    prevReceiptHash: prev,
  };
  return { ticket, receipt: await signSessionReceipt({ account: overrides.receiptSigner ?? provider, receipt }) };
}

/** Two honest steps, seq 1 and 2. */
async function honestSteps(): Promise<Step[]> {
  const first = await step(1n, GENESIS_RECEIPT_HASH);
  return [first, await step(2n, sessionReceiptHash(first.receipt.receipt))];
}

describe("adversarial: a provider hands back steps the payer lost before they were durable (issue 15)", function () {
  let dir: string;
  let server: SecureServer | undefined;
  let store: SqliteStore;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-take-back-"));
    store = SqliteStore.open(path.join(dir, "payer.db"));
    await store.putChannel({ sessionId, role: "payer", ref, pricing, escrow: domain.verifyingContract, chainId: domain.chainId, deposit: DEPOSIT, status: "open" });
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A provider that binds any session, reports `lastSeq` answered and hands back `steps` to every request. */
  async function provide(lastSeq: bigint, steps: Step[]): Promise<number> {
    server = await listenSecure({ host: "127.0.0.1", port: 0, account: provider, authorize: async () => ({ ok: true }) });
    server.on("connection", (connection) => {
      connection.on("message", (bytes) => {
        const message = decodeMessage(bytes);
        if (isPacket(message)) return;
        if (message.type === "session.open") void connection.send(encodeMessage({ type: "session.ready", lastSeq, leafCount: lastSeq, deposit: DEPOSIT }));
        if (message.type === "steps.request") void connection.send(encodeMessage({ type: "steps", steps }));
      });
    });
    return server.port;
  }

  const connect = (port: number) => PayerClient.connect({ account: payer, domain, store, channel: store.getChannel(sessionId)!, port });

  /** Connecting fails with `errorName`, and the payer's store holds exactly the steps of seq `kept` (none by default). */
  async function expectRefused(port: number, errorName: string, sentence: RegExp, kept: bigint[] = []): Promise<void> {
    const error = (await connect(port).then(
      (client) => client.close().then(() => undefined),
      (e: unknown) => e,
    )) as Error | undefined;
    expect(error, "the payer took the steps back").to.not.equal(undefined);
    expect(error!.name).to.equal(errorName);
    expect(error!.message).to.match(sentence);
    expect(store.steps(sessionId).map((s) => [s.seq, s.receipt !== undefined])).to.deep.equal(kept.map((seq) => [seq, true]));
  }

  it("the honest hand-back is taken: both steps stored with their receipts, the session at seq 2 (the harness works)", async () => {
    const client = await connect(await provide(2n, await honestSteps()));
    expect(client.session.seq).to.equal(2n);
    expect(client.session.cumulativeAmount).to.equal(2n * PRICE);
    await client.close();
    const steps = store.steps(sessionId);
    expect(steps.map((s) => [s.seq, s.receipt !== undefined])).to.deep.equal([[1n, true], [2n, true]]);
  });

  it("attack: the provider hands back a ticket for the whole deposit that it signed itself — InvalidSignatureError, nothing stored", async () => {
    const [, second] = await honestSteps();
    const forged = await step(1n, GENESIS_RECEIPT_HASH, { ticketSigner: provider, amount: DEPOSIT });
    await expectRefused(await provide(2n, [forged, second!]), "InvalidSignatureError", /signed by 0x[0-9a-fA-F]{40}, not by this payer/);
  });

  it("attack: a genuine step 1, then a ticket for the whole deposit the provider signed itself — InvalidSignatureError, only step 1 kept", async () => {
    const [first] = await honestSteps();
    const forged = await step(2n, sessionReceiptHash(first!.receipt.receipt), { ticketSigner: provider, amount: DEPOSIT });
    await expectRefused(await provide(2n, [first!, forged]), "InvalidSignatureError", /signed by 0x[0-9a-fA-F]{40}, not by this payer/, [1n]);
  });

  it("attack: the provider hands back a genuine ticket with a receipt someone else signed — InvalidSignatureError, nothing stored", async () => {
    const forged = await step(1n, GENESIS_RECEIPT_HASH, { receiptSigner: stranger });
    await expectRefused(await provide(1n, [forged]), "InvalidSignatureError", /session receipt/);
  });

  it("attack: the provider's receipt charges more than the ticket added — ReceiptMismatchError, nothing stored", async () => {
    await expectRefused(await provide(1n, [await step(1n, GENESIS_RECEIPT_HASH, { charge: PRICE + 1n })]), "ReceiptMismatchError", /more than the/);
  });

  it("attack: the provider's second receipt does not chain to the first — ReceiptMismatchError, only step 1 kept", async () => {
    const [first] = await honestSteps();
    await expectRefused(await provide(2n, [first!, await step(2n, GENESIS_RECEIPT_HASH)]), "ReceiptMismatchError", /does not chain/, [1n]);
  });

  it("attack: the provider hands back a ticket the payer signed for another of its channels — BindingMismatchError, nothing stored", async () => {
    const other = sessionIdOf(domain, channelRef(2n));
    await expectRefused(await provide(1n, [await step(1n, GENESIS_RECEIPT_HASH, { session: other })]), "BindingMismatchError", /not bound to this channel/);
  });

  it("attack: the provider hands the same step back twice — ReceiptMismatchError, the step kept once", async () => {
    const [first] = await honestSteps();
    await expectRefused(await provide(2n, [first!, first!]), "ReceiptMismatchError", /handed back seq 1, outside the seqs 2 to 2/, [1n]);
  });

  it("attack: the provider hands back a genuine ticket that does not advance the amount — TicketNotNewerError, only step 1 kept", async () => {
    const [first] = await honestSteps();
    const flat = await step(2n, sessionReceiptHash(first!.receipt.receipt), { amount: PRICE });
    await expectRefused(await provide(2n, [first!, flat]), "TicketNotNewerError", /does not advance past seq 1/, [1n]);
  });

  it("tickets the payer's session key signed are taken back by a payer holding that key (decision 0025)", async () => {
    const key = hardhatAccount(ROLE.sessionKey);
    const grant = await signSessionKeyGrant({ account: payer, domain, sessionId, key: key.address, expiry: 1n << 40n, spendCap: DEPOSIT, epoch: 0n, methods: ["tools/echo"] });
    const first = await step(1n, GENESIS_RECEIPT_HASH, { ticketSigner: key });
    const port = await provide(1n, [first]);
    const client = await PayerClient.connect({ account: payer, sessionKey: { account: key, grant }, domain, store, channel: store.getChannel(sessionId)!, port });
    expect(client.session.seq).to.equal(1n);
    await client.close();
    expect(store.steps(sessionId).map((s) => s.ticket.signature)).to.deep.equal([first.ticket.signature]);
  });

  it("attack: the provider hands back a ticket signed by a session key this payer does not hold — InvalidSignatureError, nothing stored", async () => {
    await expectRefused(await provide(1n, [await step(1n, GENESIS_RECEIPT_HASH, { ticketSigner: hardhatAccount(ROLE.sessionKey) })]), "InvalidSignatureError", /not by this payer/);
  });

  it("attack: the provider reports seq 5 answered and hands back nothing — ReceiptMismatchError, nothing stored", async () => {
    await expectRefused(await provide(5n, []), "ReceiptMismatchError", /handed back nothing from seq 1/);
  });
});
