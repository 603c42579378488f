/**
 * Session keys and sponsored sessions and gigs (issue 14, decision 0025), end to end: the payer's grant, a
 * stream signed by the key through the transport-free sessions, the provider's per-ticket checks, the chain
 * follower's revocations, and settlement — each with the exact balance change of the payer, the funder (the
 * system's client), the provider, the escrow, the treasury and everyone else in the ledger book.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { getAddress, keccak256, stringToBytes, zeroAddress, type Address, type Hex, type LocalAccount } from "viem";
import { generatePrivateKey } from "viem/accounts";

import { ChainFollower } from "../../channel-client/chain/follower";
import { signingAccount, toCompactSignature } from "../../channel-client/core/eip712";
import {
  closeUnilateral as closeOnChain,
  challengeClose,
  finalizeClose,
  readSessionKeyChainState,
  revokeAllSessionKeys,
  revokeSessionKey,
} from "../../channel-client/chain/escrow";
import { fundGigFor, readGigFunder } from "../../channel-client/chain/gig";
import { PayerSession } from "../../channel-client/node/payer-session";
import { Watchtower } from "../../channel-client/node/watchtower";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { ProviderSession } from "../../channel-client/node/provider-session";
import { sessionKeyGrantArg, signSessionKeyGrant, type SignedSessionKeyGrant } from "../../channel-client/core/session-key";
import { signPaymentTicket, type SignedPaymentTicket } from "../../channel-client/core/ticket";
import type { PricingTerms } from "../../channel-client/core/terms";
import { expectRevert } from "../helpers/revert";
import { SYS, systemFixture } from "../helpers/system";
import { hardhatAccount } from "../helpers/fixtures";
import { ether, expectDeltas, mined, openSession, PAYER_KEY, PROVIDER_KEY, snapshot, systemBook, type Session } from "./helpers";

type System = Awaited<ReturnType<typeof systemFixture>>;

const FEE_BPS = 100;
const WINDOW = 3600n; // makeTerms' challenge duration
const PRICE = ether("0.01");
const PRICING: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const METHOD = "tools/call";
/** Extra Hardhat accounts the system fixture leaves unused. */
const KEY = hardhatAccount(7);

/** The system with a 1 % routing fee, so the treasury's share is part of every settlement. */
async function feeSystem() {
  const s = await systemFixture();
  await mined(s, s.escrow.write.setRoutingFee([FEE_BPS, s.wallets[SYS.treasury]!.account.address]));
  return s;
}

const feeOf = (amount: bigint) => (amount * BigInt(FEE_BPS)) / 10_000n;
const escrowAddress = (s: System): Address => getAddress(s.escrow.address);

async function grantFor(s: System, session: Session, payer: LocalAccount, p: { expiry?: bigint; cap?: bigint; methods?: string[]; epoch?: bigint } = {}) {
  return signSessionKeyGrant({
    account: payer,
    domain: session.domain,
    sessionId: session.sessionId,
    key: KEY.address,
    expiry: p.expiry ?? (await s.publicClient.getBlock()).timestamp + 86_400n,
    spendCap: p.cap ?? ether("1"),
    methods: p.methods ?? [METHOD],
    epoch: p.epoch ?? 0n,
  });
}

/** A payer signing with the session key and a provider that bound the grant (reading the chain first). */
async function sessions(s: System, session: Session, grant: SignedSessionKeyGrant, payer: LocalAccount = PAYER_KEY, now?: () => bigint) {
  const common = { domain: session.domain, ref: session.ref, sessionId: session.sessionId, pricing: PRICING, deposit: session.deposit };
  const payerSession = new PayerSession({ ...common, account: payer, sessionKey: { account: KEY, grant } });
  const providerSession = new ProviderSession({
    ...common,
    account: PROVIDER_KEY,
    modelSnapshotId: "echo@1",
    handler: async (input) => ({ output: input, units: 1n }),
    now,
  });
  const chain = await readSessionKeyChainState({
    publicClient: s.publicClient,
    escrow: escrowAddress(s),
    sessionId: session.sessionId,
    payer: session.ref.terms.payer,
    key: KEY.address,
  });
  await providerSession.bindSessionKey(grant, chain);
  return { payerSession, providerSession };
}

/** One paid invocation: the key signs the ticket, the provider checks and answers, the payer checks the receipt. */
async function invoke(payer: PayerSession, provider: ProviderSession, i: number, method = METHOD) {
  const input = stringToBytes(`request ${i}`);
  const { signed, leafCount } = await payer.nextTicket(input);
  const result = await provider.invoke(signed, input, leafCount, method);
  await payer.acceptReceipt(result.step.receipt, result.output);
  return signed;
}

async function rejectsWith(promise: Promise<unknown>, name: string): Promise<void> {
  let thrown: unknown;
  try {
    await promise;
  } catch (error) {
    thrown = error;
  }
  expect((thrown as Error | undefined)?.name, `expected ${name}`).to.equal(name);
}

/** Closes with the provider's newest ticket (its grant if a key signed it), waits out the window, finalises. */
async function settleNewest(s: System, session: Session, provider: ProviderSession) {
  const base = { wallet: s.provider, publicClient: s.publicClient, escrow: escrowAddress(s), ref: session.ref };
  const closing = await closeOnChain({ ...base, ticket: provider.latestTicket, grant: provider.latestGrant });
  await time.increaseTo(closing.finalizesAt);
  await finalizeClose({ ...base, wallet: s.watcher, recorded: closing.state });
  await mined(s, s.escrow.write.withdrawFees([session.ref.terms.asset]));
}

describe("adversarial: session keys and sponsored sessions (decision 0025)", function () {
  this.timeout(120_000);

  it("a stream signed by a session key settles end to end: the payer's key never signs a ticket", async () => {
    const s = await loadFixture(feeSystem);
    const session = await openSession(s, zeroAddress);
    const grant = await grantFor(s, session, PAYER_KEY);
    const { payerSession, providerSession } = await sessions(s, session, grant);
    const snap = await snapshot(s);
    for (let i = 1; i <= 20; i++) await invoke(payerSession, providerSession, i);
    expect(providerSession.latestGrant).to.equal(grant);
    const paid = 20n * PRICE;
    expect(providerSession.latestTicket!.ticket.cumulativeAmount).to.equal(paid);
    await settleNewest(s, session, providerSession);
    await expectDeltas(s, snap, {
      ETH: { provider: paid - feeOf(paid), client: session.deposit - paid, treasury: feeOf(paid), escrow: -session.deposit },
    });
  });

  it("attack: the payer revokes the key; the provider refuses its next ticket within one block, and every ticket it accepted before still settles", async () => {
    const s = await loadFixture(feeSystem);
    const session = await openSession(s, zeroAddress);
    const grant = await grantFor(s, session, PAYER_KEY);
    const { payerSession, providerSession } = await sessions(s, session, grant);
    const follower = new ChainFollower({
      publicClient: s.publicClient,
      escrow: escrowAddress(s),
      store: (() => {
        const cursors = new Map<string, bigint>();
        return { getCursor: (n: string) => cursors.get(n), setCursor: async (n: string, b: bigint) => void cursors.set(n, b) };
      })(),
      name: "provider",
      fromBlock: await s.publicClient.getBlockNumber(),
      onEvents: async (events) => {
        for (const e of events) {
          if (e.eventName === "SessionKeyRevoked" && e.args.sessionId === session.sessionId) providerSession.noteKeyRevoked(e.args.key, BigInt(e.args.revokedAt));
        }
      },
    });
    const snap = await snapshot(s);
    for (let i = 1; i <= 5; i++) await invoke(payerSession, providerSession, i);
    const accepted = 5n * PRICE;

    const revoked = await revokeSessionKey({ wallet: s.payerWallet, publicClient: s.publicClient, escrow: escrowAddress(s), ref: session.ref, key: KEY.address });
    expect(await follower.catchUp()).to.equal(revoked.blockNumber); // the follower reads the revocation's own block
    await rejectsWith(invoke(payerSession, providerSession, 6), "SessionKeyRevokedError");

    // The payer walks away with a no-ticket close in the next block; the provider answers with its newest
    // ticket (signed by the now-revoked key) inside the grace, and it stands.
    const base = { publicClient: s.publicClient, escrow: escrowAddress(s), ref: session.ref };
    const walkAway = await closeOnChain({ ...base, wallet: s.payerWallet, ticket: undefined });
    const defended = await challengeClose({ ...base, wallet: s.provider, recorded: walkAway.state, ticket: providerSession.latestTicket!, grant: providerSession.latestGrant });
    expect(defended.state.amount).to.equal(accepted);
    await time.increaseTo(walkAway.finalizesAt);
    await finalizeClose({ ...base, wallet: s.watcher, recorded: defended.state });
    await mined(s, s.escrow.write.withdrawFees([zeroAddress]));
    await expectDeltas(s, snap, {
      ETH: { provider: accepted - feeOf(accepted), client: session.deposit - accepted, treasury: feeOf(accepted), escrow: -session.deposit },
    });
  });

  it("attack: the payer revokes the whole epoch and closes with a stale ticket after the grace: the revoked key's ticket can no longer raise it", async () => {
    const s = await loadFixture(feeSystem);
    const session = await openSession(s, s.token.address);
    const grant = await grantFor(s, session, PAYER_KEY);
    const { payerSession, providerSession } = await sessions(s, session, grant);
    const snap = await snapshot(s);
    const first = await invoke(payerSession, providerSession, 1); // still signed by the key
    for (let i = 2; i <= 4; i++) await invoke(payerSession, providerSession, i);
    const { epoch, revokedAt } = await revokeAllSessionKeys({ wallet: s.payerWallet, publicClient: s.publicClient, escrow: escrowAddress(s) });
    providerSession.noteKeyEpoch(epoch);
    await rejectsWith(invoke(payerSession, providerSession, 5), "SessionKeyRevokedError");
    // A provider that sat on its tickets past the grace loses them: that is the rule it must act within.
    await time.increaseTo(revokedAt + WINDOW);
    const base = { publicClient: s.publicClient, escrow: escrowAddress(s), ref: session.ref };
    await expectRevert(
      s.escrow.write.closeUnilateralWithKey(
        [session.ref.terms, session.ref.openedAt, ticketArg(first), grantArg(grant)],
        { account: s.provider.account },
      ),
      "RevokedSessionKey",
      [KEY.address, Number(revokedAt)],
    );
    const walkAway = await closeOnChain({ ...base, wallet: s.client, ticket: undefined });
    await time.increaseTo(walkAway.finalizesAt);
    await finalizeClose({ ...base, wallet: s.watcher, recorded: walkAway.state });
    await expectDeltas(s, snap, { LGAS: { client: session.deposit, escrow: -session.deposit } });
  });

  it("attack: an expired key: the provider refuses its tickets from the expiry, and what it accepted before settles", async () => {
    const s = await loadFixture(feeSystem);
    const session = await openSession(s, zeroAddress);
    const expiry = (await s.publicClient.getBlock()).timestamp + 600n;
    const grant = await grantFor(s, session, PAYER_KEY, { expiry });
    let now = expiry - 100n;
    const { payerSession, providerSession } = await sessions(s, session, grant, PAYER_KEY, () => now);
    const snap = await snapshot(s);
    for (let i = 1; i <= 3; i++) await invoke(payerSession, providerSession, i);
    now = expiry;
    await rejectsWith(invoke(payerSession, providerSession, 4), "SessionKeyExpiredError");
    expect(providerSession.latestTicket!.ticket.seq).to.equal(3n);
    // After the expiry, within the grace of one challenge window, the accepted tickets still close.
    await time.increaseTo(expiry + WINDOW - 10n);
    await settleNewest(s, session, providerSession);
    const paid = 3n * PRICE;
    await expectDeltas(s, snap, {
      ETH: { provider: paid - feeOf(paid), client: session.deposit - paid, treasury: feeOf(paid), escrow: -session.deposit },
    });
  });

  it("issue 28 item 1: the payer waits past expiry + the challenge window and closes at seq 0; the provider answers with the key's newest ticket (challengeWithKey) and is paid for all 5 calls", async () => {
    const s = await loadFixture(feeSystem);
    const session = await openSession(s, zeroAddress);
    const expiry = (await s.publicClient.getBlock()).timestamp + 600n;
    const grant = await grantFor(s, session, PAYER_KEY, { expiry });
    let now = expiry - 100n;
    const { payerSession, providerSession } = await sessions(s, session, grant, PAYER_KEY, () => now);
    const snap = await snapshot(s);
    for (let i = 1; i <= 5; i++) await invoke(payerSession, providerSession, i);
    now = expiry;
    await rejectsWith(invoke(payerSession, providerSession, 6), "SessionKeyExpiredError");
    const served = 5n * PRICE;
    // Nobody puts the key's ticket on-chain before expiry + window; the payer then walks away at seq 0.
    await time.increaseTo(expiry + WINDOW + 3600n);
    const base = { publicClient: s.publicClient, escrow: escrowAddress(s), ref: session.ref };
    const walkAway = await closeOnChain({ ...base, wallet: s.payerWallet, ticket: undefined });
    expect(walkAway.state.amount).to.equal(0n);
    const defended = await challengeClose({ ...base, wallet: s.provider, recorded: walkAway.state, ticket: providerSession.latestTicket!, grant: providerSession.latestGrant });
    expect(defended.state.amount).to.equal(served);
    await time.increaseTo(walkAway.finalizesAt);
    await finalizeClose({ ...base, wallet: s.watcher, recorded: defended.state });
    await mined(s, s.escrow.write.withdrawFees([zeroAddress]));
    await expectDeltas(s, snap, {
      ETH: { provider: served - feeOf(served), client: session.deposit - served, treasury: feeOf(served), escrow: -session.deposit },
    });
  });

  it("issue 28 item 1: long after the expiry the provider closes by itself with the key's newest ticket and is paid; a key-signed ticket above the cap is still refused", async () => {
    const s = await loadFixture(feeSystem);
    const session = await openSession(s, s.token.address);
    const expiry = (await s.publicClient.getBlock()).timestamp + 600n;
    const grant = await grantFor(s, session, PAYER_KEY, { expiry, cap: 3n * PRICE });
    let now = expiry - 100n;
    const { payerSession, providerSession } = await sessions(s, session, grant, PAYER_KEY, () => now);
    const snap = await snapshot(s);
    for (let i = 1; i <= 3; i++) await invoke(payerSession, providerSession, i);
    now = expiry;
    await time.increaseTo(expiry + 10n * WINDOW);
    const over = await signPaymentTicket({
      account: KEY,
      domain: session.domain,
      ticket: { ...providerSession.latestTicket!.ticket, seq: 4n, cumulativeAmount: 4n * PRICE },
    });
    await expectRevert(
      s.escrow.write.closeUnilateralWithKey([session.ref.terms, session.ref.openedAt, ticketArg(over), grantArg(grant)], { account: s.provider.account }),
      "SessionKeySpendCapExceeded",
      [KEY.address, 4n * PRICE, 3n * PRICE],
    );
    await settleNewest(s, session, providerSession);
    const paid = 3n * PRICE;
    await expectDeltas(s, snap, {
      LGAS: { provider: paid - feeOf(paid), client: session.deposit - paid, treasury: feeOf(paid), escrow: -session.deposit },
    });
  });

  it("attack: a ticket over the key's spend cap: the payer's client will not sign it, the provider refuses it, the chain rejects it", async () => {
    const s = await loadFixture(feeSystem);
    const session = await openSession(s, s.token.address);
    const cap = 3n * PRICE;
    const grant = await grantFor(s, session, PAYER_KEY, { cap });
    const { payerSession, providerSession } = await sessions(s, session, grant);
    const snap = await snapshot(s);
    for (let i = 1; i <= 3; i++) await invoke(payerSession, providerSession, i);
    await rejectsWith(payerSession.nextTicket(stringToBytes("over")), "SessionKeyCapExceededError");
    // A key holder bypassing the client: the provider refuses it before any work.
    const over = await signTicketWithKey(session, 4n, cap + PRICE, providerSession.accumulator.root());
    await rejectsWith(providerSession.invoke(over, stringToBytes("over"), providerSession.accumulator.size, METHOD), "SessionKeyCapExceededError");
    await expectRevert(
      s.escrow.write.closeUnilateralWithKey([session.ref.terms, session.ref.openedAt, ticketArg(over), grantArg(grant)], { account: s.provider.account }),
      "SessionKeySpendCapExceeded",
      [KEY.address, cap + PRICE, cap],
    );
    await settleNewest(s, session, providerSession);
    await expectDeltas(s, snap, {
      LGAS: { provider: cap - feeOf(cap), client: session.deposit - cap, treasury: feeOf(cap), escrow: -session.deposit },
    });
  });

  it("attack: a key used for a method outside its capabilities is refused by the provider before any work", async () => {
    const s = await loadFixture(feeSystem);
    const session = await openSession(s, zeroAddress);
    const grant = await grantFor(s, session, PAYER_KEY, { methods: ["tools/list", METHOD] });
    const { payerSession, providerSession } = await sessions(s, session, grant);
    let ran = 0;
    const counting = new ProviderSession({ ...providerSession.parameters, handler: async (input) => ((ran += 1), { output: input, units: 1n }) });
    await counting.bindSessionKey(grant, { revokedAt: 0n, currentEpoch: 0n });
    const snap = await snapshot(s);
    await invoke(payerSession, counting, 1, "tools/list");
    await rejectsWith(invoke(payerSession, counting, 2, "resources/read"), "SessionKeyCapabilityError");
    expect(ran).to.equal(1);
    // The chain cannot see methods: it is the provider's check (and Lane 0's, from the receipts).
    await settleNewest(s, session, counting);
    await expectDeltas(s, snap, {
      ETH: { provider: PRICE - feeOf(PRICE), client: session.deposit - PRICE, treasury: feeOf(PRICE), escrow: -session.deposit },
    });
    expect(ran).to.equal(1);
  });

  it("attack: a grant signed by someone other than the payer, or for another session, is refused at binding", async () => {
    const s = await loadFixture(feeSystem);
    const session = await openSession(s, zeroAddress);
    const other = await openSession(s, zeroAddress, { deposit: ether("1"), terms: { nonce: 2n } });
    const { providerSession } = await sessions(s, session, await grantFor(s, session, PAYER_KEY));
    const chain = { revokedAt: 0n, currentEpoch: 0n };
    await rejectsWith(providerSession.bindSessionKey(await grantFor(s, session, PROVIDER_KEY), chain), "SessionKeyError");
    await rejectsWith(providerSession.bindSessionKey(await grantFor(s, other, PAYER_KEY), chain), "BindingMismatchError");
    await rejectsWith(providerSession.bindSessionKey(await grantFor(s, session, PAYER_KEY, { epoch: 1n }), chain), "SessionKeyError");
  });

  it("a sponsored channel: the funder pays, the payer holds no tokens and sends no transaction, its key streams, refunds go to the funder", async () => {
    const s = await loadFixture(feeSystem);
    const payer = signingAccount(generatePrivateKey()); // a fresh account: no ETH, no tokens, ever
    const session = await openSession(s, s.token.address, { terms: { payer: payer.address } });
    const grant = await grantFor(s, session, payer);
    const { payerSession, providerSession } = await sessions(s, session, grant, payer);
    const book = systemBook(s, { sponsoredPayer: payer.address });
    const snap = await snapshot(s, book);
    for (let i = 1; i <= 7; i++) await invoke(payerSession, providerSession, i);
    const paid = 7n * PRICE;
    await settleNewest(s, session, providerSession);
    await expectDeltas(s, snap, {
      LGAS: { provider: paid - feeOf(paid), client: session.deposit - paid, treasury: feeOf(paid), escrow: -session.deposit },
    });
    expect(await s.publicClient.getBalance({ address: payer.address })).to.equal(0n);
    expect(await s.token.read.balanceOf([payer.address])).to.equal(0n);
    expect(await s.publicClient.getTransactionCount({ address: payer.address })).to.equal(0);
  });

  it("a sponsored gig: the funder pays, the client (holding nothing) decides, the refund goes to the funder; only the client may cancel", async () => {
    const s = await loadFixture(feeSystem);
    const client = signingAccount(generatePrivateKey());
    const book = systemBook(s, { sponsoredClient: client.address });
    const snap = await snapshot(s, book);
    const amount = ether("1");
    const deadline = (await s.publicClient.getBlock()).timestamp + 86_400n;
    const funded = await fundGigFor({
      wallet: s.client,
      publicClient: s.publicClient,
      gigEscrow: getAddress(s.gigs.address),
      client: client.address,
      provider: getAddress(s.provider.account.address),
      asset: s.token.address,
      amount,
      icsHash: keccak256(stringToBytes("ics")),
      deadline,
      disputeWindow: 3600n,
    });
    expect(await readGigFunder({ publicClient: s.publicClient, gigEscrow: getAddress(s.gigs.address), gigId: funded.gigId })).to.equal(getAddress(s.client.account.address));
    expect((await s.gigs.read.gigOf([funded.gigId])).client).to.equal(getAddress(client.address));
    // The funder is not the client: it cannot act on the gig.
    await expectRevert(s.gigs.write.acceptDelivery([funded.gigId], { account: s.client.account }), "WrongStatus", [funded.gigId, 1]);
    await expectRevert(s.gigs.write.cancel([funded.gigId], { account: s.client.account }), "NotTheClient", [funded.gigId, getAddress(s.client.account.address)]);
    // Nobody accepts; after the deadline anyone triggers the refund, which goes to the funder.
    await time.increaseTo(deadline + 1n);
    await mined(s, s.gigs.write.refund([funded.gigId], { account: s.stranger.account }));
    await expectDeltas(s, snap, { LGAS: {} });
    expect(await s.token.read.balanceOf([client.address])).to.equal(0n);
    expect(await s.publicClient.getBalance({ address: client.address })).to.equal(0n);
  });

  it("a sponsored gig delivered and accepted by the client pays the provider; the sponsor only paid", async () => {
    const s = await loadFixture(feeSystem);
    const clientWallet = s.payerWallet; // a wallet to act as client; the funder is the system's client
    const snap = await snapshot(s);
    const amount = ether("1");
    const funded = await fundGigFor({
      wallet: s.client,
      publicClient: s.publicClient,
      gigEscrow: getAddress(s.gigs.address),
      client: getAddress(clientWallet.account.address),
      provider: getAddress(s.provider.account.address),
      asset: zeroAddress,
      amount,
      icsHash: keccak256(stringToBytes("ics")),
      deadline: (await s.publicClient.getBlock()).timestamp + 86_400n,
      disputeWindow: 3600n,
    });
    await mined(s, s.gigs.write.accept([funded.gigId], { account: s.provider.account }));
    await mined(s, s.gigs.write.deliver([funded.gigId, keccak256(stringToBytes("deliverable")), `0x${"00".repeat(32)}`], { account: s.provider.account }));
    await expectRevert(s.gigs.write.acceptDelivery([funded.gigId], { account: s.client.account }), "NotTheClient", [funded.gigId, getAddress(s.client.account.address)]);
    await mined(s, s.gigs.write.acceptDelivery([funded.gigId], { account: clientWallet.account }));
    await expectDeltas(s, snap, { ETH: { client: -amount, provider: amount } });
  });
});

/**
 * A provider as its node keeps it: the grant stored when it bound the key, every answered step stored before the
 * answer, and a watchtower (in the provider's own wallet) over that store.
 */
async function keyedProvider(s: System, session: Session, grant: SignedSessionKeyGrant) {
  const fromBlock = await s.publicClient.getBlockNumber();
  const pair = await sessions(s, session, grant);
  const store = SqliteStore.open(":memory:");
  await store.putChannel({ sessionId: session.sessionId, role: "provider", ref: session.ref, pricing: PRICING, escrow: escrowAddress(s), chainId: Number(s.chainId), deposit: session.deposit, status: "open" });
  await store.putSessionKeyGrant(session.sessionId, grant);
  const tower = new Watchtower({
    publicClient: s.publicClient,
    wallet: s.provider,
    escrow: escrowAddress(s),
    store,
    fromBlock,
    // The provider node's handler: a revocation stops the key at once.
    onEvents: (events) => {
      for (const e of events) if (e.eventName === "SessionKeyRevoked" && e.args.sessionId === session.sessionId) pair.providerSession.noteKeyRevoked(e.args.key, BigInt(e.args.revokedAt));
    },
  });
  const serve = async (i: number) => {
    const input = stringToBytes(`request ${i}`);
    const { signed, leafCount } = await pair.payerSession.nextTicket(input);
    const result = await pair.providerSession.invoke(signed, input, leafCount, METHOD);
    await store.putStep(session.sessionId, result.step);
    await pair.payerSession.acceptReceipt(result.step.receipt, result.output);
    return signed;
  };
  return { ...pair, store, tower, serve };
}

describe("adversarial: the provider's watchtower with key-signed tickets (decision 0025, amendment)", function () {
  this.timeout(120_000);

  it("attack: the payer closes with a stale key-signed ticket; the provider's watchtower answers with its newest key-signed ticket and the grant it stored (challengeWithKey)", async () => {
    const s = await loadFixture(feeSystem);
    const session = await openSession(s, zeroAddress);
    const grant = await grantFor(s, session, PAYER_KEY);
    const p = await keyedProvider(s, session, grant);
    const snap = await snapshot(s);
    const stale = await p.serve(1);
    for (let i = 2; i <= 6; i++) await p.serve(i);
    const accepted = 6n * PRICE;
    const base = { publicClient: s.publicClient, escrow: escrowAddress(s), ref: session.ref };
    const closing = await closeOnChain({ ...base, wallet: s.payerWallet, ticket: stale, grant });
    expect(closing.state.amount).to.equal(PRICE);
    await p.tower.runOnce();
    expect(p.tower.answers).to.have.length(1);
    expect(p.tower.answers[0]).to.deep.include({ staleSeq: 1n, answeredSeq: 6n, inWindow: true });
    const recorded = p.store.getClosing(session.sessionId)!;
    expect(recorded.state.amount).to.equal(accepted);
    await time.increaseTo(recorded.finalizesAt);
    await finalizeClose({ ...base, wallet: s.watcher, recorded: recorded.state });
    await mined(s, s.escrow.write.withdrawFees([zeroAddress]));
    await expectDeltas(s, snap, {
      ETH: { provider: accepted - feeOf(accepted), client: session.deposit - accepted, treasury: feeOf(accepted), escrow: -session.deposit },
    });
    await p.store.close();
  });

  it("a store without the grant of its newest key-signed ticket: the watchtower says so (KeyTicketWithoutGrantError) and carries on, rather than send a close that reverts or stall its follower", async () => {
    const s = await loadFixture(feeSystem);
    const session = await openSession(s, zeroAddress);
    const grant = await grantFor(s, session, PAYER_KEY);
    const p = await keyedProvider(s, session, grant);
    for (let i = 1; i <= 2; i++) await p.serve(i);
    // The same steps in a store that never kept the grant (e.g. written before the migration).
    const bare = SqliteStore.open(":memory:");
    await bare.putChannel(p.store.getChannel(session.sessionId)!);
    for (const step of p.store.steps(session.sessionId)) await bare.putStep(session.sessionId, step as Required<typeof step>);
    const errors: unknown[] = [];
    const tower = new Watchtower({ publicClient: s.publicClient, wallet: s.provider, escrow: escrowAddress(s), store: bare, fromBlock: 0n, onError: (e) => errors.push(e) });
    await closeOnChain({ publicClient: s.publicClient, escrow: escrowAddress(s), ref: session.ref, wallet: s.payerWallet, ticket: undefined });
    await tower.runOnce();
    await tower.runOnce(); // the follower moved on: the batch is not re-delivered forever
    expect(tower.answers).to.deep.equal([]);
    expect(errors.length).to.be.greaterThan(0);
    expect(new Set(errors.map((e) => (e as Error).name))).to.deep.equal(new Set(["KeyTicketWithoutGrantError"]));
    expect(bare.getCursor("watchtower")).to.equal(await s.publicClient.getBlockNumber());
    await bare.close();
    await p.store.close();
  });

  it("attack: the payer revokes the key after the provider accepted its tickets; the provider refuses the next one and its watchtower closes with the newest inside the grace (closeUnilateralWithKey), so the revocation takes no accepted work away", async () => {
    const s = await loadFixture(feeSystem);
    const session = await openSession(s, s.token.address);
    const grant = await grantFor(s, session, PAYER_KEY);
    const p = await keyedProvider(s, session, grant);
    const snap = await snapshot(s);
    for (let i = 1; i <= 4; i++) await p.serve(i);
    const accepted = 4n * PRICE;
    const revoked = await revokeSessionKey({ wallet: s.payerWallet, publicClient: s.publicClient, escrow: escrowAddress(s), ref: session.ref, key: KEY.address });
    await p.tower.runOnce();
    await rejectsWith(p.serve(5), "SessionKeyRevokedError");
    const closing = p.store.getClosing(session.sessionId)!;
    expect(closing.closer).to.equal(getAddress(s.provider.account.address));
    expect(closing.state).to.deep.include({ seq: 4n, amount: accepted });
    expect(p.store.getChannel(session.sessionId)!.status).to.equal("closing");
    const closedAt = (await s.publicClient.getBlock({ blockNumber: (await s.publicClient.getTransactionReceipt({ hash: closing.txHash })).blockNumber })).timestamp;
    expect(closedAt < revoked.revokedAt + WINDOW).to.equal(true); // inside the grace
    // The payer cannot lower it afterwards: it holds no newer ticket, and the key's are its own.
    await time.increaseTo(closing.finalizesAt);
    await p.tower.runOnce(); // nothing to answer; the tower does not finalise unless asked
    await finalizeClose({ publicClient: s.publicClient, escrow: escrowAddress(s), ref: session.ref, wallet: s.watcher, recorded: closing.state });
    await mined(s, s.escrow.write.withdrawFees([s.token.address]));
    await expectDeltas(s, snap, {
      LGAS: { provider: accepted - feeOf(accepted), client: session.deposit - accepted, treasury: feeOf(accepted), escrow: -session.deposit },
    });
    await p.store.close();
  });

  it("attack: the payer revokes its whole epoch; the watchtower closes with the revoked key's newest ticket in the grace — and a payer that rotated first (its newest ticket signed by itself) sees no close", async () => {
    const s = await loadFixture(feeSystem);
    const session = await openSession(s, zeroAddress);
    const rotated = await openSession(s, zeroAddress, { deposit: ether("1"), terms: { nonce: 2n } });
    const grant = await grantFor(s, session, PAYER_KEY);
    const p = await keyedProvider(s, session, grant);
    const q = await keyedProvider(s, rotated, await grantFor(s, rotated, PAYER_KEY));
    const snap = await snapshot(s);
    for (let i = 1; i <= 3; i++) await p.serve(i);
    await q.serve(1);
    // On the second channel the payer pays the next call with its own key before revoking: the newest ticket is its own.
    const input = stringToBytes("own key");
    const ownTicket = await signPaymentTicket({
      account: PAYER_KEY,
      domain: rotated.domain,
      ticket: { sessionId: rotated.sessionId, provider: rotated.ref.terms.provider, termsHash: rotated.ref.terms.termsHash, seq: 2n, cumulativeAmount: 2n * PRICE, receiptRoot: q.providerSession.accumulator.root() },
    });
    const answered = await q.providerSession.invoke(ownTicket, input, q.providerSession.accumulator.size, METHOD);
    await q.store.putStep(rotated.sessionId, answered.step);
    await revokeAllSessionKeys({ wallet: s.payerWallet, publicClient: s.publicClient, escrow: escrowAddress(s) });
    await p.tower.runOnce();
    await q.tower.runOnce();
    expect(p.store.getClosing(session.sessionId)!.state).to.deep.include({ seq: 3n, amount: 3n * PRICE });
    expect(q.store.getClosing(rotated.sessionId)).to.equal(undefined);
    expect(await s.escrow.read.phaseOf([rotated.sessionId])).to.equal(1); // still open: the session goes on
    const closing = p.store.getClosing(session.sessionId)!;
    await time.increaseTo(closing.finalizesAt);
    await finalizeClose({ publicClient: s.publicClient, escrow: escrowAddress(s), ref: session.ref, wallet: s.watcher, recorded: closing.state });
    await mined(s, s.escrow.write.withdrawFees([zeroAddress]));
    const paid = 3n * PRICE;
    await expectDeltas(s, snap, {
      ETH: { provider: paid - feeOf(paid), client: session.deposit - paid, treasury: feeOf(paid), escrow: -session.deposit },
    });
    await p.store.close();
    await q.store.close();
  });
});

/*//////////////////////////////////////////////////////////////
                              HELPERS
//////////////////////////////////////////////////////////////*/

const grantArg = (grant: SignedSessionKeyGrant) => sessionKeyGrantArg(grant, toCompactSignature);
const ticketArg = ({ ticket, signature }: SignedPaymentTicket) => ({
  seq: ticket.seq,
  cumulativeAmount: ticket.cumulativeAmount,
  receiptRoot: ticket.receiptRoot,
  sig: toCompactSignature(signature),
});

function signTicketWithKey(session: Session, seq: bigint, cumulativeAmount: bigint, receiptRoot: Hex) {
  return signPaymentTicket({
    account: KEY,
    domain: session.domain,
    ticket: { sessionId: session.sessionId, provider: session.ref.terms.provider, termsHash: session.ref.terms.termsHash, seq, cumulativeAmount, receiptRoot },
  });
}

