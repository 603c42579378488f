/**
 * Smart-account payers (issue 30 item 6, decision 0035): a payer that is a contract wallet signs tickets,
 * cooperative summaries and session-key grants; the provider checks them by the wallet's ERC-1271 answer (an
 * `eth_call`), the GasEscrow by the same answer on-chain (OpenZeppelin `SignatureChecker`, reached through
 * `IGasEscrowWallets`). Every case ends with the exact balance change of every account in the ledger book: the
 * payer's wallet, the funder (the system's client), the provider, the escrow, the treasury and everyone else.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { encodeFunctionData, getAddress, getContractAddress, stringToBytes, zeroAddress, type Address, type Hex } from "viem";

import { gasEscrowAbi } from "../../channel-client/abi/GasEscrow";
import { readWalletPayer } from "../../arbitration/runner/chain";
import type { ChallengePackage } from "../../arbitration/documents/package";
import {
  challengeClose,
  closeCooperative,
  closeUnilateral as closeOnChain,
  finalizeClose,
  readSessionKeyChainState,
  registerWalletSessionKey,
} from "../../channel-client/chain/escrow";
import { payerSignatureCheck, verifyWalletSignature } from "../../channel-client/chain/wallet-signature";
import { signDigest } from "../../channel-client/core/eip712";
import { sessionKeyGrantDigest, signSessionKeyGrant, type SignedSessionKeyGrant } from "../../channel-client/core/session-key";
import { paymentTicketDigest, signPaymentTicket } from "../../channel-client/core/ticket";
import type { PricingTerms } from "../../channel-client/core/terms";
import { PayerSession } from "../../channel-client/node/payer-session";
import { ProviderSession } from "../../channel-client/node/provider-session";
import { hardhatAccount } from "../helpers/fixtures";
import { SYS, systemFixture } from "../helpers/system";
import { ether, expectDeltas, mined, openSession, PAYER_KEY, PROVIDER_KEY, snapshot, systemBook, type Session } from "./helpers";

type System = Awaited<ReturnType<typeof systemFixture>>;

const FEE_BPS = 100;
const PRICE = ether("0.01");
const PRICING: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const METHOD = "tools/call";
/** The session key a wallet grants (a Hardhat account the system fixture leaves unused). */
const KEY = hardhatAccount(7);
const feeOf = (amount: bigint) => (amount * BigInt(FEE_BPS)) / 10_000n;

/** The system with a 1 % fee, an owner-key wallet owned by the payer's key, and a wallet that refuses everything. */
async function walletSystem() {
  const s = await systemFixture();
  await mined(s, s.escrow.write.setRoutingFee([FEE_BPS, s.wallets[SYS.treasury]!.account.address]));
  const wallet = await hre.viem.deployContract("OwnerWallet", [PAYER_KEY.address]);
  const refusing = await hre.viem.deployContract("RefusingWallet", []);
  return { ...s, wallet, refusing };
}
type WalletSystem = Awaited<ReturnType<typeof walletSystem>>;

const escrowOf = (s: System): Address => getAddress(s.escrow.address);
const bookOf = (s: WalletSystem) => systemBook(s, { wallet: s.wallet.address, refusing: s.refusing.address });

/**
 * A payer session signing with the wallet's owner key (an owner-key wallet's signature is the owner's signature
 * of the digest) for a channel whose payer is the wallet, and a provider session that checks the payer's
 * signatures through the wallet's ERC-1271 answer.
 */
async function walletSessions(s: System, session: Session, grant?: SignedSessionKeyGrant) {
  const common = { domain: session.domain, ref: session.ref, sessionId: session.sessionId, pricing: PRICING, deposit: session.deposit };
  const payerSignatures = await payerSignatureCheck({ publicClient: s.publicClient, payer: session.ref.terms.payer });
  expect(payerSignatures.wallet).to.equal(true);
  const payerSession = new PayerSession({ ...common, account: PAYER_KEY, ...(grant ? { sessionKey: { account: KEY, grant } } : {}) });
  const providerSession = new ProviderSession({
    ...common,
    account: PROVIDER_KEY,
    modelSnapshotId: "echo@1",
    handler: async (input) => ({ output: input, units: 1n }),
    payerSignatures: payerSignatures.check,
  });
  if (grant) {
    const chain = await readSessionKeyChainState({ publicClient: s.publicClient, escrow: escrowOf(s), sessionId: session.sessionId, payer: session.ref.terms.payer, key: KEY.address });
    await providerSession.bindSessionKey(grant, chain);
  }
  return { payerSession, providerSession };
}

async function invoke(payer: PayerSession, provider: ProviderSession, i: number) {
  const input = stringToBytes(`request ${i}`);
  const { signed, leafCount } = await payer.nextTicket(input);
  const result = await provider.invoke(signed, input, leafCount, METHOD);
  await payer.acceptReceipt(result.step.receipt, result.output);
  return signed;
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a rejection");
}

/** A chain write (channel-client/chain/escrow.ts) that must revert with the contract error `errorName` (and `args`). */
async function contractRevert(promise: Promise<unknown>, errorName: string, args?: readonly unknown[]): Promise<void> {
  const error = (await rejection(promise)) as Error & { revert?: { errorName: string; args: readonly unknown[] } };
  expect(error.name, error.message).to.equal("ContractRevertError");
  expect(error.revert?.errorName, error.message).to.equal(errorName);
  if (args !== undefined) expect(error.revert?.args).to.deep.equal(args);
}

async function walletGrant(s: System, session: Session): Promise<SignedSessionKeyGrant> {
  return signSessionKeyGrant({
    account: PAYER_KEY, // the wallet's owner: its signature is the wallet's
    domain: session.domain,
    sessionId: session.sessionId,
    key: KEY.address,
    expiry: (await s.publicClient.getBlock()).timestamp + 86_400n,
    spendCap: ether("1"),
    methods: [METHOD],
    epoch: 0n,
  });
}

describe("adversarial: smart-account payers (ERC-1271, decision 0035)", function () {
  this.timeout(180_000);

  it("a wallet-paid stream: the provider checks every ticket by ERC-1271, and the wallet's summary closes cooperatively", async () => {
    const s = await loadFixture(walletSystem);
    const session = await openSession(s, zeroAddress, { terms: { payer: s.wallet.address } });
    const { payerSession, providerSession } = await walletSessions(s, session);
    const snap = await snapshot(s, bookOf(s));
    for (let i = 1; i <= 5; i++) await invoke(payerSession, providerSession, i);
    const paid = 5n * PRICE;
    const { summary, signature } = await payerSession.proposeCooperativeClose();
    const providerSignature = await providerSession.countersign(summary, signature);
    const base = { publicClient: s.publicClient, escrow: escrowOf(s), ref: session.ref };
    // The plain-key entry point refuses the wallet's summary: recovery finds the owner, not the wallet.
    await contractRevert(closeCooperative({ ...base, wallet: s.provider, summary, payerSignature: signature, providerSignature }), "SignerMismatch");
    await closeCooperative({ ...base, wallet: s.provider, summary, payerSignature: signature, providerSignature, payerWallet: true });
    await mined(s, s.escrow.write.withdrawFees([zeroAddress]));
    await expectDeltas(s, snap, {
      ETH: { provider: paid - feeOf(paid), client: session.deposit - paid, treasury: feeOf(paid), escrow: -session.deposit },
    });
  });

  it("a wallet-signed ticket closes unilaterally and survives a stale challenge; finalize pays exactly", async () => {
    const s = await loadFixture(walletSystem);
    const session = await openSession(s, zeroAddress, { terms: { payer: s.wallet.address } });
    const { payerSession, providerSession } = await walletSessions(s, session);
    const snap = await snapshot(s, bookOf(s));
    const first = await invoke(payerSession, providerSession, 1);
    for (let i = 2; i <= 4; i++) await invoke(payerSession, providerSession, i);
    const paid = 4n * PRICE;
    const base = { publicClient: s.publicClient, escrow: escrowOf(s), ref: session.ref };
    // The provider closes with its first ticket, then raises it with the newest: both by the wallet's ERC-1271.
    const closing = await closeOnChain({ ...base, wallet: s.provider, ticket: first, payerWallet: true });
    expect(closing.state.amount).to.equal(PRICE);
    const raised = await challengeClose({ ...base, wallet: s.provider, recorded: closing.state, ticket: providerSession.latestTicket!, payerWallet: true });
    expect(raised.state.amount).to.equal(paid);
    // The stale first ticket cannot come back.
    await contractRevert(challengeClose({ ...base, wallet: s.client, recorded: raised.state, ticket: first, payerWallet: true }), "TicketAmountDecreased");
    await time.increaseTo(closing.finalizesAt);
    await finalizeClose({ ...base, wallet: s.watcher, recorded: raised.state });
    await mined(s, s.escrow.write.withdrawFees([zeroAddress]));
    await expectDeltas(s, snap, {
      ETH: { provider: paid - feeOf(paid), client: session.deposit - paid, treasury: feeOf(paid), escrow: -session.deposit },
    });
  });

  it("attack: a refusing wallet's tickets and summaries are rejected by the provider and by the escrow, and its channel still refunds in full", async () => {
    const s = await loadFixture(walletSystem);
    const session = await openSession(s, zeroAddress, { terms: { payer: s.refusing.address } });
    const payerSignatures = await payerSignatureCheck({ publicClient: s.publicClient, payer: s.refusing.address });
    const providerSession = new ProviderSession({
      domain: session.domain, ref: session.ref, sessionId: session.sessionId, pricing: PRICING, deposit: session.deposit,
      account: PROVIDER_KEY, modelSnapshotId: "echo@1", handler: async (input) => ({ output: input, units: 1n }),
      payerSignatures: payerSignatures.check,
    });
    const payerSession = new PayerSession({ domain: session.domain, ref: session.ref, sessionId: session.sessionId, pricing: PRICING, deposit: session.deposit, account: PAYER_KEY });
    const snap = await snapshot(s, bookOf(s));
    const input = stringToBytes("request 1");
    const { signed, leafCount } = await payerSession.nextTicket(input);
    const refused = await rejection(providerSession.invoke(signed, input, leafCount, METHOD));
    expect(refused.name).to.equal("InvalidSignatureError");
    expect(refused.message).to.equal(`Contract wallet ${s.refusing.address} refused the payment ticket signature now (ERC-1271 isValidSignature).`);
    expect(providerSession.latestTicket).to.equal(undefined);

    const base = { publicClient: s.publicClient, escrow: escrowOf(s), ref: session.ref };
    const digest = paymentTicketDigest(session.domain, signed.ticket);
    await contractRevert(closeOnChain({ ...base, wallet: s.provider, ticket: signed, payerWallet: true }), "WalletSignatureRefused", [getAddress(s.refusing.address), digest]);
    // A plain-key wallet signature of the summary is refused too; nothing moved.
    const summary = { sessionId: session.sessionId, provider: session.ref.terms.provider, payer: s.refusing.address, termsHash: session.ref.terms.termsHash, finalSeq: 1n, finalAmount: PRICE, finalReceiptRoot: signed.ticket.receiptRoot, mode: "Cooperative" as const };
    const providerSignature = await signDigest(PROVIDER_KEY, (await import("../../channel-client/core/summary")).settlementSummaryDigest(session.domain, summary));
    await contractRevert(
      closeCooperative({ ...base, wallet: s.provider, summary, payerSignature: signed.signature, providerSignature, payerWallet: true }),
      "WalletSignatureRefused",
    );
    // No money is stranded: a close with no ticket refunds the funder in full after the window.
    const closing = await closeOnChain({ ...base, wallet: s.client, ticket: undefined });
    await time.increaseTo(closing.finalizesAt);
    await finalizeClose({ ...base, wallet: s.watcher, recorded: closing.state });
    await expectDeltas(s, snap, { ETH: { client: session.deposit, escrow: -session.deposit } });
  });

  it("attack: a wallet that approved at open refuses at close — direct tickets lose their value (funds refund to the funder), a registered session key's tickets still settle", async () => {
    const s = await loadFixture(walletSystem);
    // Channel A: tickets signed for the wallet directly.
    const direct = await openSession(s, zeroAddress, { terms: { payer: s.wallet.address } });
    const d = await walletSessions(s, direct);
    // Channel B: a session key granted by the wallet and registered on-chain while the wallet approved it.
    const keyed = await openSession(s, zeroAddress, { terms: { payer: s.wallet.address } });
    const grant = await walletGrant(s, keyed);
    const registered = await registerWalletSessionKey({ wallet: s.provider, publicClient: s.publicClient, escrow: escrowOf(s), ref: keyed.ref, grant });
    expect(registered.registered).to.equal(true);
    const again = await registerWalletSessionKey({ wallet: s.provider, publicClient: s.publicClient, escrow: escrowOf(s), ref: keyed.ref, grant });
    expect(again.registered).to.equal(false); // idempotent: no second event
    const k = await walletSessions(s, keyed, grant);
    const snap = await snapshot(s, bookOf(s));
    for (let i = 1; i <= 3; i++) await invoke(d.payerSession, d.providerSession, i);
    for (let i = 1; i <= 3; i++) await invoke(k.payerSession, k.providerSession, i);
    const paid = 3n * PRICE;

    // The wallet turns: from now on it refuses every signature, including the ones it approved.
    await mined(s, s.wallet.write.setRefusing([true], { account: s.payerWallet.account }));
    const baseD = { publicClient: s.publicClient, escrow: escrowOf(s), ref: direct.ref };
    const baseK = { publicClient: s.publicClient, escrow: escrowOf(s), ref: keyed.ref };
    await contractRevert(closeOnChain({ ...baseD, wallet: s.provider, ticket: d.providerSession.latestTicket!, payerWallet: true }), "WalletSignatureRefused");
    // Nothing is stranded: the direct channel closes with no ticket and refunds the funder in full.
    const closingD = await closeOnChain({ ...baseD, wallet: s.provider, ticket: undefined });
    // The keyed channel: the registered grant counts without asking the wallet again.
    const closingK = await closeOnChain({ ...baseK, wallet: s.provider, ticket: k.providerSession.latestTicket!, grant, payerWallet: true });
    expect(closingK.state.amount).to.equal(paid);
    await time.increaseTo(closingK.finalizesAt);
    await finalizeClose({ ...baseD, wallet: s.watcher, recorded: closingD.state });
    await finalizeClose({ ...baseK, wallet: s.watcher, recorded: closingK.state });
    await mined(s, s.escrow.write.withdrawFees([zeroAddress]));
    await expectDeltas(s, snap, {
      ETH: {
        provider: paid - feeOf(paid),
        client: direct.deposit + (keyed.deposit - paid),
        treasury: feeOf(paid),
        escrow: -(direct.deposit + keyed.deposit),
      },
    });
  });

  it("attack: the wallet payer walks away with a no-ticket close; the provider answers with its key ticket under the wallet's grant (challengeWithWalletKey)", async () => {
    const s = await loadFixture(walletSystem);
    const session = await openSession(s, zeroAddress, { terms: { payer: s.wallet.address } });
    const grant = await walletGrant(s, session);
    const { payerSession, providerSession } = await walletSessions(s, session, grant);
    const snap = await snapshot(s, bookOf(s));
    for (let i = 1; i <= 4; i++) await invoke(payerSession, providerSession, i);
    const paid = 4n * PRICE;
    const base = { publicClient: s.publicClient, escrow: escrowOf(s), ref: session.ref };
    // The funder (for the wallet) closes with no ticket, hoping to take everything back.
    const walkAway = await closeOnChain({ ...base, wallet: s.client, ticket: undefined });
    expect(walkAway.state.amount).to.equal(0n);
    // The plain-key entry point refuses the wallet's grant; the wallet entry point takes it (approved now).
    await contractRevert(challengeClose({ ...base, wallet: s.provider, recorded: walkAway.state, ticket: providerSession.latestTicket!, grant }), "UnauthorizedSessionKey");
    const defended = await challengeClose({ ...base, wallet: s.provider, recorded: walkAway.state, ticket: providerSession.latestTicket!, grant, payerWallet: true });
    expect(defended.state.amount).to.equal(paid);
    await time.increaseTo(walkAway.finalizesAt);
    await finalizeClose({ ...base, wallet: s.watcher, recorded: defended.state });
    await mined(s, s.escrow.write.withdrawFees([zeroAddress]));
    await expectDeltas(s, snap, {
      ETH: { provider: paid - feeOf(paid), client: session.deposit - paid, treasury: feeOf(paid), escrow: -session.deposit },
    });
  });

  it("attack: an unregistered wallet grant counts only while the wallet approves it; a plain-key grant signature of the owner is not the wallet's", async () => {
    const s = await loadFixture(walletSystem);
    const session = await openSession(s, zeroAddress, { terms: { payer: s.wallet.address } });
    const grant = await walletGrant(s, session);
    const { payerSession, providerSession } = await walletSessions(s, session, grant);
    const snap = await snapshot(s, bookOf(s));
    for (let i = 1; i <= 2; i++) await invoke(payerSession, providerSession, i);
    const paid = 2n * PRICE;
    const base = { publicClient: s.publicClient, escrow: escrowOf(s), ref: session.ref };
    // The plain-key path recovers the owner, not the wallet.
    await contractRevert(closeOnChain({ ...base, wallet: s.provider, ticket: providerSession.latestTicket!, grant }), "UnauthorizedSessionKey");
    await mined(s, s.wallet.write.setRefusing([true], { account: s.payerWallet.account }));
    const grantDigest = sessionKeyGrantDigest(session.domain, grant.grant);
    await contractRevert(
      closeOnChain({ ...base, wallet: s.provider, ticket: providerSession.latestTicket!, grant, payerWallet: true }),
      "WalletSignatureRefused",
      [getAddress(s.wallet.address), grantDigest],
    );
    // Registering now fails too: the wallet's answer at registration is what counts.
    await contractRevert(registerWalletSessionKey({ wallet: s.provider, publicClient: s.publicClient, escrow: escrowOf(s), ref: session.ref, grant }), "WalletSignatureRefused");
    await mined(s, s.wallet.write.setRefusing([false], { account: s.payerWallet.account }));
    const closing = await closeOnChain({ ...base, wallet: s.provider, ticket: providerSession.latestTicket!, grant, payerWallet: true });
    await time.increaseTo(closing.finalizesAt);
    await finalizeClose({ ...base, wallet: s.watcher, recorded: closing.state });
    await mined(s, s.escrow.write.withdrawFees([zeroAddress]));
    await expectDeltas(s, snap, {
      ETH: { provider: paid - feeOf(paid), client: session.deposit - paid, treasury: feeOf(paid), escrow: -session.deposit },
    });
  });

  it("attack: a plain-key payer cannot use the wallet entry points, and a wallet's answer is read at the pinned block", async () => {
    const s = await loadFixture(walletSystem);
    const session = await openSession(s, zeroAddress); // payer: the plain key
    const signed = await signPaymentTicket({
      account: PAYER_KEY,
      domain: session.domain,
      ticket: { sessionId: session.sessionId, provider: session.ref.terms.provider, termsHash: session.ref.terms.termsHash, seq: 1n, cumulativeAmount: PRICE, receiptRoot: `0x${"00".repeat(32)}` as Hex },
    });
    const base = { publicClient: s.publicClient, escrow: escrowOf(s), ref: session.ref };
    const digest = paymentTicketDigest(session.domain, signed.ticket);
    await contractRevert(closeOnChain({ ...base, wallet: s.provider, ticket: signed, payerWallet: true }), "WalletSignatureRefused", [getAddress(PAYER_KEY.address), digest]);

    // The off-chain check asks the wallet at a block: approved before it turned, refused after.
    const before = await s.publicClient.getBlockNumber();
    await mined(s, s.wallet.write.setRefusing([true], { account: s.payerWallet.account }));
    await verifyWalletSignature({ publicClient: s.publicClient, wallet: s.wallet.address, digest, signature: signed.signature, blockNumber: before, role: "payment ticket" });
    const now = await rejection(verifyWalletSignature({ publicClient: s.publicClient, wallet: s.wallet.address, digest, signature: signed.signature, role: "payment ticket" }));
    expect(now.message).to.equal(`Contract wallet ${s.wallet.address} refused the payment ticket signature now (ERC-1271 isValidSignature).`);

    // An unknown selector still reverts (the module has no such function); ETH sent with no function is refused.
    const data = encodeFunctionData({ abi: [{ type: "function", name: "noSuchFunction", inputs: [], outputs: [], stateMutability: "nonpayable" }], functionName: "noSuchFunction" });
    expect((await rejection(s.publicClient.call({ to: escrowOf(s), data, account: s.stranger.account }))).message).to.match(/revert/i);
    const eth = await rejection(s.stranger.sendTransaction({ to: escrowOf(s), value: 1n }));
    expect(eth.message).to.match(/revert/i);
  });

  it("the arbitrator's context reads a wallet payer and its registered grants at the case's block, never later", async () => {
    const s = await loadFixture(walletSystem);
    const session = await openSession(s, zeroAddress, { terms: { payer: s.wallet.address } });
    const grant = await walletGrant(s, session);
    // Only what readWalletPayer looks at: the channel's terms and the receipts' grants.
    const pkg = { evidence: [{ kind: "channel", content: { ref: session.ref } }, { kind: "receipt", content: { sessionKey: grant } }] } as unknown as ChallengePackage;
    const read = (blockNumber: bigint) => readWalletPayer({ publicClient: s.publicClient, gasEscrow: escrowOf(s), chainId: 31337n, sessionId: session.sessionId, pkg, blockNumber });
    const before = await s.publicClient.getBlockNumber();
    const registered = await registerWalletSessionKey({ wallet: s.provider, publicClient: s.publicClient, escrow: escrowOf(s), ref: session.ref, grant });
    expect(await read(before)).to.deep.equal({ payerIsContract: true, registeredWalletGrants: [] });
    expect(await read(registered.blockNumber)).to.deep.equal({ payerIsContract: true, registeredWalletGrants: [sessionKeyGrantDigest(session.domain, grant.grant)] });
    // A plain-key payer's package reads as before: no wallet fields.
    const plain = await openSession(s, zeroAddress);
    const plainPkg = { evidence: [{ kind: "channel", content: { ref: plain.ref } }] } as unknown as ChallengePackage;
    expect(await readWalletPayer({ publicClient: s.publicClient, gasEscrow: escrowOf(s), chainId: 31337n, sessionId: plain.sessionId, pkg: plainPkg, blockNumber: await s.publicClient.getBlockNumber() })).to.equal(undefined);
  });

  it("attack: the wallet module called directly, not through the escrow, acts on its own empty storage: nothing moves", async () => {
    const s = await loadFixture(walletSystem);
    const session = await openSession(s, zeroAddress, { terms: { payer: s.wallet.address } });
    const { payerSession, providerSession } = await walletSessions(s, session);
    await invoke(payerSession, providerSession, 1);
    const grant = await walletGrant(s, session);
    // The escrow deployed its module in its constructor: the first contract it created.
    const module = getContractAddress({ from: escrowOf(s), nonce: 1n });
    expect(await s.publicClient.getCode({ address: module })).to.not.equal(undefined);
    const snap = await snapshot(s, bookOf(s));
    const base = { publicClient: s.publicClient, escrow: module, ref: session.ref };
    await contractRevert(closeOnChain({ ...base, wallet: s.provider, ticket: providerSession.latestTicket!, payerWallet: true }), "ChannelNotOpen");
    // Signatures are bound to the escrow's EIP-712 domain; on the module the digest names the module, so the
    // wallet's grant does not even register there (and the module's storage is never read by the escrow).
    await contractRevert(registerWalletSessionKey({ ...base, wallet: s.stranger, grant }), "WalletSignatureRefused");
    const digest = sessionKeyGrantDigest(session.domain, grant.grant);
    expect(await s.publicClient.readContract({ address: escrowOf(s), abi: gasEscrowAbi, functionName: "walletSessionKeyRegistered", args: [session.sessionId, digest] })).to.equal(false);
    await expectDeltas(s, snap, {});
  });
});
