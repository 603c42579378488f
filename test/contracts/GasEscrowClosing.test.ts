/**
 * GasEscrow after the open phase: unilateral close, challenge, finalize, the dispute hooks (freeze /
 * release), session keys and the routing fee. One shared suite runs against native ETH and LaborGas.
 *
 * Every value-moving test ends with the solvency invariant: the escrow holds exactly the deposits of its
 * live channels plus the fees accrued for the treasury.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import {
  compactSignatureToSignature,
  getAddress,
  keccak256,
  parseEther,
  parseEventLogs,
  recoverAddress,
  serializeSignature,
  stringToBytes,
  zeroAddress,
  zeroHash,
  type Address,
  type Log,
  type Hash,
  type Hex,
  type LocalAccount,
  type TransactionReceipt,
} from "viem";

import { gasEscrowDomain, recoverDigestSigner, toCompactSignature, typeHash, type GasEscrowDomain } from "../../channel-client/core/eip712";
import { capabilitiesHash, sessionKeyGrantArg, sessionKeyGrantDigest, signSessionKeyGrant } from "../../channel-client/core/session-key";
import { sessionIdOf, type ChannelRef, type ChannelTerms } from "../../channel-client/core/terms";
import { paymentTicketDigest, signPaymentTicket, type PaymentTicket } from "../../channel-client/core/ticket";
import { escrowFixture, hardhatAccount, makeTerms, ROLE, signedCooperativeSummary } from "../helpers/fixtures";
import { expectRevert } from "../helpers/revert";

/*//////////////////////////////////////////////////////////////
                              CONSTANTS
//////////////////////////////////////////////////////////////*/

type Kind = "ETH" | "ERC20";
const KINDS = ["ETH", "ERC20"] as const;

const AMOUNT = parseEther("2");
const TOP_UP = parseEther("0.5");
/** `makeTerms`' challenge duration, in seconds. */
const DURATION = 3600;
const MAX_FREEZE_DURATION = 180 * 24 * 3600;
const MAX_OPEN_CASES = 15;
const MAX_UINT128 = 2n ** 128n - 1n;

/** `IGasEscrow.Phase` and `IGasEscrow.CloseMode` as viem decodes them. */
const PHASE = { None: 0, Open: 1, Closing: 2, Finalizable: 3, Frozen: 4 } as const;
const MODE = { Cooperative: 0, Unilateral: 1 } as const;

/** Ticket `seq` authorises 0.1 per invocation and carries its own root, so every field differs per seq. */
const amountOf = (seq: bigint): bigint => parseEther("0.1") * seq;
const rootOf = (seq: bigint): Hex => keccak256(stringToBytes(`receipt root ${seq}`));

/** The seq of the ticket the CLOSING fixture closes with. */
const CLOSE_SEQ = 5n;

const PAYER = hardhatAccount(ROLE.payer);
const PROVIDER = hardhatAccount(ROLE.provider);
const STRANGER = hardhatAccount(ROLE.stranger);
const SESSION_KEY = hardhatAccount(ROLE.sessionKey);

/** secp256k1: n/2 is the largest low s. */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const HALF_N = N >> 1n;
const word = (x: bigint): Hex => `0x${x.toString(16).padStart(64, "0")}`;

type Sig = { r: Hex; vs: Hex };
/** Mirrors `IGasEscrow.Ticket`. */
type Ticket = { seq: bigint; cumulativeAmount: bigint; receiptRoot: Hex; sig: Sig };
/** Mirrors `IGasEscrow.ClosingState`. */
type ClosingState = { deposit: bigint; seq: bigint; amount: bigint; receiptRoot: Hex; feeBps: number };

/** "No ticket": seq 0, nothing owed; the signature is ignored. */
const NO_TICKET: Ticket = { seq: 0n, cumulativeAmount: 0n, receiptRoot: zeroHash, sig: { r: zeroHash, vs: zeroHash } };

/*//////////////////////////////////////////////////////////////
                              FIXTURES
//////////////////////////////////////////////////////////////*/

/** The escrow fixture with wallets for the parties and a watcher: anyone, no party and no payee. */
async function baseFixture() {
  const f = await escrowFixture();
  return {
    ...f,
    payerWallet: f.wallets[ROLE.payer]!,
    providerWallet: f.wallets[ROLE.provider]!,
    keyWallet: f.wallets[ROLE.sessionKey]!,
    // Submits finalisations and challenges, so that no payee pays the gas and deltas read plainly.
    watcher: f.wallets[8]!,
  };
}

type Base = Awaited<ReturnType<typeof baseFixture>>;
type Wallet = Base["watcher"];

/** Everything that differs between a native-ETH and an ERC-20 channel. */
function assetSpec(kind: Kind, f: Base) {
  const asset: Address = kind === "ETH" ? zeroAddress : f.token.address;
  return {
    kind,
    asset,
    terms: (overrides: Partial<ChannelTerms> = {}): ChannelTerms => makeTerms(asset, overrides),
    value: (amount: bigint): bigint => (kind === "ETH" ? amount : 0n),
    balanceOf: (who: Address): Promise<bigint> =>
      kind === "ETH" ? f.publicClient.getBalance({ address: who }) : f.token.read.balanceOf([who]),
  };
}

type Ctx = Base & { spec: ReturnType<typeof assetSpec> };
/** A channel as the parties refer to it. */
type Channel = { ref: ChannelRef; sessionId: Hex };

async function openChannel(c: Ctx, terms: ChannelTerms, amount = AMOUNT): Promise<Channel> {
  const hash = await c.escrow.write.open([terms, amount], { account: c.funder.account, value: c.spec.value(amount) });
  const receipt = await mined(c, hash);
  const ref: ChannelRef = { terms, openedAt: receipt.blockNumber };
  return { ref, sessionId: sessionIdOf(c.domain, ref) };
}

/** A channel holding AMOUNT, routing fee 0. */
async function openedChannel(kind: Kind) {
  const f = await baseFixture();
  const spec = assetSpec(kind, f);
  const channel = await openChannel({ ...f, spec }, spec.terms());
  return { ...f, spec, ...channel };
}

type Opened = Awaited<ReturnType<typeof openedChannel>>;

/** The opened channel, closed by the provider with the payer's ticket CLOSE_SEQ. */
async function closingChannel(kind: Kind) {
  const c = await openedChannel(kind);
  const closed = await closeWith(c, await signTicket(c, { seq: CLOSE_SEQ }), c.providerWallet);
  return { ...c, recorded: closed.recorded, finalizesAt: closed.finalizesAt };
}

type Closing = Awaited<ReturnType<typeof closingChannel>>;

const FEE_BPS = 100;
const NEW_FEE_BPS = 500;

/** Governance set a 1 % routing fee before the channel (AMOUNT) was opened. */
async function feeChannel(kind: Kind) {
  const f = await baseFixture();
  await f.escrow.write.setRoutingFee([FEE_BPS, f.treasury.account.address], { account: f.governance.account });
  const spec = assetSpec(kind, f);
  const channel = await openChannel({ ...f, spec }, spec.terms());
  return { ...f, spec, ...channel };
}

const OPENED = {
  ETH: async function openedEthChannel() {
    return openedChannel("ETH");
  },
  ERC20: async function openedErc20Channel() {
    return openedChannel("ERC20");
  },
} as const;

const CLOSING = {
  ETH: async function closingEthChannel() {
    return closingChannel("ETH");
  },
  ERC20: async function closingErc20Channel() {
    return closingChannel("ERC20");
  },
} as const;

const FEE = {
  ETH: async function feeEthChannel() {
    return feeChannel("ETH");
  },
  ERC20: async function feeErc20Channel() {
    return feeChannel("ERC20");
  },
} as const;

/*//////////////////////////////////////////////////////////////
                               TICKETS
//////////////////////////////////////////////////////////////*/

type TicketParameters = {
  seq: bigint;
  amount?: bigint;
  root?: Hex;
  signer?: LocalAccount;
  /** The channel the ticket is submitted to (default: the fixture's). */
  channel?: Channel;
  /** What the signer signed, where it differs from what is submitted. */
  signed?: Partial<PaymentTicket>;
  domain?: GasEscrowDomain;
};

/** The PaymentTicket the escrow reconstructs for `channel` from the ticket's moving parts. */
function paymentTicketOf(channel: Channel, seq: bigint, amount: bigint, root: Hex): PaymentTicket {
  return {
    sessionId: channel.sessionId,
    provider: channel.ref.terms.provider,
    termsHash: channel.ref.terms.termsHash,
    seq,
    cumulativeAmount: amount,
    receiptRoot: root,
  };
}

/** A ticket as submitted on-chain, signed by the payer unless told otherwise. */
async function signTicket(c: Opened, p: TicketParameters): Promise<Ticket> {
  const amount = p.amount ?? amountOf(p.seq);
  const root = p.root ?? rootOf(p.seq);
  const ticket = { ...paymentTicketOf(p.channel ?? c, p.seq, amount, root), ...p.signed };
  const { signature } = await signPaymentTicket({ account: p.signer ?? PAYER, domain: p.domain ?? c.domain, ticket });
  return { seq: p.seq, cumulativeAmount: amount, receiptRoot: root, sig: toCompactSignature(signature) };
}

/** Whom the escrow recovers from `ticket` on `channel`. */
async function signerOf(c: Opened, ticket: Ticket, channel: Channel = c): Promise<Address> {
  const digest = paymentTicketDigest(c.domain, paymentTicketOf(channel, ticket.seq, ticket.cumulativeAmount, ticket.receiptRoot));
  return recoverAddress({ hash: digest, signature: compactSignatureToSignature({ r: ticket.sig.r, yParityAndS: ticket.sig.vs }) });
}

function stateOf(ticket: Ticket, deposit: bigint, feeBps = 0): ClosingState {
  return { deposit, seq: ticket.seq, amount: ticket.cumulativeAmount, receiptRoot: ticket.receiptRoot, feeBps };
}

/*//////////////////////////////////////////////////////////////
                            TRANSACTIONS
//////////////////////////////////////////////////////////////*/

async function mined(c: Base, hash: Hash): Promise<TransactionReceipt> {
  const receipt = await c.publicClient.waitForTransactionReceipt({ hash });
  expect(receipt.status).to.equal("success");
  return receipt;
}

async function blockTime(c: Base, receipt: TransactionReceipt): Promise<number> {
  return Number((await c.publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp);
}

function escrowLogs(c: Base, receipt: TransactionReceipt) {
  return receipt.logs.filter((l) => getAddress(l.address) === getAddress(c.escrow.address));
}

/** The escrow's own events in `receipt`, as `{ eventName, args }`. */
function escrowEvents(c: Base, receipt: TransactionReceipt) {
  return parseEventLogs({ abi: c.escrow.abi, logs: escrowLogs(c, receipt) }).map(({ eventName, args }) => ({ eventName, args }));
}

type EscrowEvent = ReturnType<typeof escrowEvents>[number];

/** The arguments of the one `eventName` event the escrow emitted in `receipt` (which must be its only event). */
function eventArgs<N extends EscrowEvent["eventName"]>(c: Base, receipt: TransactionReceipt, eventName: N) {
  const events = escrowEvents(c, receipt);
  expect(events.map((e) => e.eventName)).to.deep.equal([eventName]);
  const [event] = parseEventLogs({ abi: c.escrow.abi, eventName: [eventName], logs: escrowLogs(c, receipt) });
  return event!.args as Extract<Log<bigint, number, false, undefined, true, Base["escrow"]["abi"], N>, { eventName: N }>["args"];
}

const addressOf = (w: Wallet): Address => getAddress(w.account.address);

function close(c: Opened, ticket: Ticket, from: Wallet, channel: Channel = c) {
  return c.escrow.write.closeUnilateral([channel.ref.terms, channel.ref.openedAt, ticket], { account: from.account });
}

function challenge(c: Opened, recorded: ClosingState, ticket: Ticket, from: Wallet, channel: Channel = c) {
  return c.escrow.write.challenge([channel.ref.terms, channel.ref.openedAt, recorded, ticket], { account: from.account });
}

function finalize(c: Opened, recorded: ClosingState, from: Wallet = c.watcher, channel: Channel = c) {
  return c.escrow.write.finalize([channel.ref.terms, channel.ref.openedAt, recorded], { account: from.account });
}

/** Closes `channel` with `ticket`; returns the recorded state and the end of the window. */
async function closeWith(c: Opened, ticket: Ticket, from: Wallet, channel: Channel = c, deposit = AMOUNT, feeBps = 0) {
  const receipt = await mined(c, await close(c, ticket, from, channel));
  return { receipt, recorded: stateOf(ticket, deposit, feeBps), finalizesAt: (await blockTime(c, receipt)) + DURATION };
}

type Deltas = { provider: bigint; funder: bigint; payer: bigint; treasury: bigint; escrow: bigint };

/**
 * Sends a transaction and returns each account's balance change in the channel's asset, with the gas its
 * sender paid added back (ETH), so the deltas are exactly what the escrow moved.
 */
async function withDeltas(c: Opened, send: () => Promise<Hash>) {
  const who: Record<keyof Deltas, Address> = {
    provider: c.ref.terms.provider,
    funder: c.ref.terms.funder,
    payer: c.ref.terms.payer,
    treasury: c.treasury.account.address,
    escrow: c.escrow.address,
  };
  const names = Object.keys(who) as (keyof Deltas)[];
  const before = await Promise.all(names.map((n) => c.spec.balanceOf(who[n])));
  const receipt = await mined(c, await send());
  const after = await Promise.all(names.map((n) => c.spec.balanceOf(who[n])));
  const gas = c.spec.kind === "ETH" ? receipt.gasUsed * receipt.effectiveGasPrice : 0n;
  const deltas = Object.fromEntries(
    names.map((n, i) => [n, after[i]! - before[i]! + (getAddress(who[n]) === getAddress(receipt.from) ? gas : 0n)]),
  ) as Deltas;
  return { receipt, deltas };
}

const NOTHING_MOVED: Deltas = { provider: 0n, funder: 0n, payer: 0n, treasury: 0n, escrow: 0n };

/** Invariant: the escrow holds exactly the deposits of its live channels plus the fees accrued. */
async function expectBacked(c: Opened, liveDeposits: readonly bigint[]): Promise<void> {
  const held = await c.spec.balanceOf(c.escrow.address);
  const fees = await c.escrow.read.accruedFees([c.spec.asset]);
  expect(held).to.equal(liveDeposits.reduce((a, b) => a + b, 0n) + fees);
}

/** The payout of a channel settled with `amount` owed: (toProvider, fee, toFunder). */
function split(deposit: bigint, amount: bigint, feeBps: number) {
  const earned = amount < deposit ? amount : deposit;
  const fee = (earned * BigInt(feeBps)) / 10_000n;
  return { toProvider: earned - fee, fee, toFunder: deposit - earned };
}

/*//////////////////////////////////////////////////////////////
                              THE SUITE
//////////////////////////////////////////////////////////////*/

describe("GasEscrow closing", () => {
  describe("routing fee governance", () => {
    for (const who of ["stranger", "disputes"] as const) {
      it(`rejects setRoutingFee from the ${who} wallet with AccessControlUnauthorizedAccount`, async () => {
        const c = await loadFixture(baseFixture);
        const wallet = c[who];
        const role = await c.escrow.read.GOVERNANCE_ROLE();
        await expectRevert(
          c.escrow.write.setRoutingFee([100, c.treasury.account.address], { account: wallet.account }),
          "AccessControlUnauthorizedAccount",
          [addressOf(wallet), role],
        );
        expect(await c.escrow.read.routingFee()).to.deep.equal([0, addressOf(c.treasury)]);
      });
    }

    for (const fee of [1001, 65535]) {
      it(`rejects a fee of ${fee} bps with RoutingFeeTooHigh(${fee}, 1000)`, async () => {
        const c = await loadFixture(baseFixture);
        await expectRevert(
          c.escrow.write.setRoutingFee([fee, c.treasury.account.address], { account: c.governance.account }),
          "RoutingFeeTooHigh",
          [fee, 1000],
        );
        expect(await c.escrow.read.routingFee()).to.deep.equal([0, addressOf(c.treasury)]);
      });
    }

    it("issue 28 items 2 and 4: the registry must be a contract (RegistryNotContract); sealing needs the dispute terms source (WiringIncomplete), which only the admin sets and which is fixed once sealed (WiringSealed)", async () => {
      const c = await loadFixture(baseFixture);
      const gov = addressOf(c.governance);
      await expectRevert(hre.viem.deployContract("GasEscrow", [gov, addressOf(c.treasury), 0, gov]), "RegistryNotContract", [getAddress(gov)], c.escrow.abi);
      expect(getAddress(await c.escrow.read.registry())).to.equal(getAddress(c.escrowArgs[3]));
      await expectRevert(c.escrow.write.sealRoles({ account: c.governance.account }), "WiringIncomplete", ["disputeTermsSource"]);
      const admin = await c.escrow.read.DEFAULT_ADMIN_ROLE();
      await expectRevert(c.escrow.write.setDisputeTermsSource([c.escrowArgs[3]], { account: c.stranger.account }), "AccessControlUnauthorizedAccount", [getAddress(c.stranger.account.address), admin]);
      // Any contract answering assetTerms serves; here the registry stands in only to be a contract address.
      await c.escrow.write.setDisputeTermsSource([c.escrowArgs[3]], { account: c.governance.account });
      await c.escrow.write.sealRoles({ account: c.governance.account });
      await expectRevert(c.escrow.write.setDisputeTermsSource([zeroAddress], { account: c.governance.account }), "WiringSealed", []);
      expect(getAddress(await c.escrow.read.disputeTermsSource())).to.equal(getAddress(c.escrowArgs[3]));
    });

    it("rejects a zero treasury with ZeroTreasury", async () => {
      const c = await loadFixture(baseFixture);
      await expectRevert(c.escrow.write.setRoutingFee([100, zeroAddress], { account: c.governance.account }), "ZeroTreasury", []);
      expect(await c.escrow.read.routingFee()).to.deep.equal([0, addressOf(c.treasury)]);
    });

    for (const fee of [0, 1, 1000]) {
      it(`sets ${fee} bps and a new treasury: RoutingFeeSet, routingFee()`, async () => {
        const c = await loadFixture(baseFixture);
        const newTreasury = addressOf(c.wallets[9]!);
        const receipt = await mined(c, await c.escrow.write.setRoutingFee([fee, newTreasury], { account: c.governance.account }));
        expect(escrowEvents(c, receipt)).to.deep.equal([{ eventName: "RoutingFeeSet", args: { feeBps: fee, treasury: newTreasury } }]);
        expect(await c.escrow.read.routingFee()).to.deep.equal([fee, newTreasury]);
      });
    }
  });

  for (const kind of KINDS) {
    describe(kind, () => {
      /*////////////////////////////// closeUnilateral //////////////////////////////*/
      describe("closeUnilateral", () => {
        const closers = ["payer", "provider", "funder"] as const;
        const walletOf = (c: Opened, role: (typeof closers)[number]): Wallet =>
          role === "payer" ? c.payerWallet : role === "provider" ? c.providerWallet : c.funder;

        for (const role of closers) {
          for (const withTicket of [true, false]) {
            it(`closes by the ${role} with ${withTicket ? "a payer-signed ticket" : "no ticket"}: ChannelClosing, phase Closing, nothing moves`, async () => {
              const c = await loadFixture(OPENED[kind]);
              const ticket = withTicket ? await signTicket(c, { seq: 7n }) : NO_TICKET;
              const closer = walletOf(c, role);

              const { receipt, deltas } = await withDeltas(c, () => close(c, ticket, closer));

              expect(deltas).to.deep.equal(NOTHING_MOVED);
              const finalizesAt = (await blockTime(c, receipt)) + DURATION;
              expect(escrowEvents(c, receipt)).to.deep.equal([
                {
                  eventName: "ChannelClosing",
                  args: {
                    sessionId: c.sessionId,
                    closer: addressOf(closer),
                    seq: ticket.seq,
                    amount: ticket.cumulativeAmount,
                    receiptRoot: ticket.receiptRoot,
                    deposit: AMOUNT,
                    feeBps: 0,
                    finalizesAt,
                  },
                },
              ]);
              expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Closing);
              const recorded = stateOf(ticket, AMOUNT);
              expect(await c.escrow.read.closingInfo([c.sessionId, recorded])).to.deep.equal([true, finalizesAt, 0]);
              expect(await c.escrow.read.closingInfo([c.sessionId, { ...recorded, amount: recorded.amount + 1n }])).to.deep.equal([
                false,
                finalizesAt,
                0,
              ]);
              expect(await c.escrow.read.depositOf([c.sessionId])).to.equal(0n);
              await expectBacked(c, [AMOUNT]);
            });
          }
        }

        it("ignores the signature of a no-ticket close (even one that would not recover)", async () => {
          const c = await loadFixture(OPENED[kind]);
          const ticket: Ticket = { ...NO_TICKET, sig: { r: `0x${"ff".repeat(32)}`, vs: `0x${"ff".repeat(32)}` } };
          const { recorded, finalizesAt } = await closeWith(c, ticket, c.payerWallet);
          expect(await c.escrow.read.closingInfo([c.sessionId, recorded])).to.deep.equal([true, finalizesAt, 0]);
        });

        it("records the topped-up deposit", async () => {
          const c = await loadFixture(OPENED[kind]);
          await c.escrow.write.deposit([c.ref.terms, c.ref.openedAt, TOP_UP, TOP_UP], { account: c.funder.account, value: c.spec.value(TOP_UP) });
          const { receipt, recorded, finalizesAt } = await closeWith(c, await signTicket(c, { seq: 3n }), c.payerWallet, c, AMOUNT + TOP_UP);
          expect(eventArgs(c, receipt, "ChannelClosing").deposit).to.equal(AMOUNT + TOP_UP);
          expect(await c.escrow.read.closingInfo([c.sessionId, recorded])).to.deep.equal([true, finalizesAt, 0]);
          await expectBacked(c, [AMOUNT + TOP_UP]);
        });

        it("reports phase Open before and None for a session never opened; closingInfo of an open channel is (false, 0, 0)", async () => {
          const c = await loadFixture(OPENED[kind]);
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Open);
          expect(await c.escrow.read.phaseOf([keccak256(c.sessionId)])).to.equal(PHASE.None);
          expect(await c.escrow.read.closingInfo([c.sessionId, stateOf(NO_TICKET, AMOUNT)])).to.deep.equal([false, 0, 0]);
        });

        /*------------------------------ rejections ------------------------------*/

        type CloseCase = {
          name: string;
          from?: (c: Opened) => Wallet;
          ticket: (c: Opened) => Promise<Ticket>;
          error: string;
          args: (c: Opened, ticket: Ticket) => Promise<readonly unknown[]> | readonly unknown[];
        };
        const payerTicket = (c: Opened) => signTicket(c, { seq: 7n });
        const unauthorized = (c: Opened, t: Ticket) => signerOf(c, t).then((signer) => [c.sessionId, signer] as const);
        const closeCases: CloseCase[] = [
          { name: "a stranger calls", from: (c) => c.stranger, ticket: payerTicket, error: "NotAParty", args: (c) => [c.sessionId, addressOf(c.stranger)] },
          {
            name: "the payer's session-key wallet calls",
            from: (c) => c.keyWallet,
            ticket: payerTicket,
            error: "NotAParty",
            args: (c) => [c.sessionId, addressOf(c.keyWallet)],
          },
          {
            name: "a no-ticket close carries an amount",
            ticket: async () => ({ ...NO_TICKET, cumulativeAmount: 1n }),
            error: "EmptyTicketNotZero",
            args: () => [1n, zeroHash],
          },
          {
            name: "a no-ticket close carries a root",
            ticket: async () => ({ ...NO_TICKET, receiptRoot: rootOf(1n) }),
            error: "EmptyTicketNotZero",
            args: () => [0n, rootOf(1n)],
          },
          {
            name: "a no-ticket close carries a valid payer signature over its amount",
            ticket: async (c) => ({ ...(await signTicket(c, { seq: 0n, amount: AMOUNT, root: zeroHash })) }),
            error: "EmptyTicketNotZero",
            args: () => [AMOUNT, zeroHash],
          },
          {
            name: "a stranger signed the ticket",
            ticket: (c) => signTicket(c, { seq: 7n, signer: STRANGER }),
            error: "UnauthorizedTicketSigner",
            args: (c) => [c.sessionId, STRANGER.address],
          },
          {
            name: "the provider signed the ticket",
            ticket: (c) => signTicket(c, { seq: 7n, signer: PROVIDER }),
            error: "UnauthorizedTicketSigner",
            args: (c) => [c.sessionId, PROVIDER.address],
          },
          {
            name: "the ticket was signed for another session",
            ticket: (c) => signTicket(c, { seq: 7n, signed: { sessionId: sessionIdOf(c.domain, { ...c.ref, openedAt: c.ref.openedAt + 1n }) } }),
            error: "UnauthorizedTicketSigner",
            args: unauthorized,
          },
          {
            name: "the ticket was signed naming another provider",
            ticket: (c) => signTicket(c, { seq: 7n, signed: { provider: STRANGER.address } }),
            error: "UnauthorizedTicketSigner",
            args: unauthorized,
          },
          {
            name: "the submitted amount is not the signed one",
            ticket: async (c) => ({ ...(await signTicket(c, { seq: 7n })), cumulativeAmount: amountOf(7n) + 1n }),
            error: "UnauthorizedTicketSigner",
            args: unauthorized,
          },
          {
            name: "the ticket was signed for another chain id (1)",
            ticket: (c) => signTicket(c, { seq: 7n, domain: { ...c.domain, chainId: 1 } }),
            error: "UnauthorizedTicketSigner",
            args: unauthorized,
          },
          {
            name: "the ticket was signed for another GasEscrow deployment",
            ticket: async (c) => {
              const other = await hre.viem.deployContract("GasEscrow", [...c.escrowArgs]);
              return signTicket(c, { seq: 7n, domain: gasEscrowDomain({ chainId: c.domain.chainId, verifyingContract: other.address }) });
            },
            error: "UnauthorizedTicketSigner",
            args: unauthorized,
          },
          ...([0n, 1n] as const).map(
            (parity): CloseCase => ({
              name: `the signature has s = n/2 + 1 (parity ${parity})`,
              ticket: async (c) => {
                const t = await payerTicket(c);
                return { ...t, sig: { r: t.sig.r, vs: word((HALF_N + 1n) | (parity << 255n)) } };
              },
              error: "SignatureNotLowS",
              args: () => [word(HALF_N + 1n)],
            }),
          ),
          {
            name: "the signature has r = 0",
            ticket: async (c) => {
              const t = await payerTicket(c);
              return { ...t, sig: { ...t.sig, r: zeroHash } };
            },
            error: "InvalidSignature",
            args: () => [],
          },
          {
            name: "the signature has s = 0",
            ticket: async (c) => {
              const t = await payerTicket(c);
              return { ...t, sig: { ...t.sig, vs: zeroHash } };
            },
            error: "InvalidSignature",
            args: () => [],
          },
          {
            name: "a ticket with seq > 0 carries an all-zero signature",
            ticket: async () => ({ ...NO_TICKET, seq: 1n }),
            error: "InvalidSignature",
            args: () => [],
          },
        ];

        for (const tc of closeCases) {
          it(`reverts with ${tc.error} when ${tc.name}, leaving the channel open`, async () => {
            const c = await loadFixture(OPENED[kind]);
            const ticket = await tc.ticket(c);
            const args = await tc.args(c, ticket);
            if (tc.error === "UnauthorizedTicketSigner") {
              expect(args[1]).to.not.equal(PAYER.address);
              expect(args[1]).to.not.equal(zeroAddress);
            }
            await expectRevert(close(c, ticket, tc.from?.(c) ?? c.providerWallet), tc.error, args);
            expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Open);
            expect(await c.escrow.read.depositOf([c.sessionId])).to.equal(AMOUNT);
          });
        }

        it("reverts with ChannelNotOpen for a session that was never opened", async () => {
          const c = await loadFixture(OPENED[kind]);
          const ref: ChannelRef = { ...c.ref, openedAt: c.ref.openedAt - 1n };
          const unknown: Channel = { ref, sessionId: sessionIdOf(c.domain, ref) };
          await expectRevert(close(c, NO_TICKET, c.payerWallet, unknown), "ChannelNotOpen", [unknown.sessionId]);
        });

        it("reverts with ChannelNotOpen for a channel already closing, keeping the first close", async () => {
          const c = await loadFixture(CLOSING[kind]);
          for (const from of [c.payerWallet, c.providerWallet, c.funder]) {
            await expectRevert(close(c, await signTicket(c, { seq: 9n }), from), "ChannelNotOpen", [c.sessionId]);
          }
          await expectRevert(close(c, NO_TICKET, c.funder), "ChannelNotOpen", [c.sessionId]);
          expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([true, c.finalizesAt, 0]);
        });

        it("reverts with ChannelNotOpen for a channel settled unilaterally", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await time.setNextBlockTimestamp(c.finalizesAt);
          await mined(c, await finalize(c, c.recorded));
          await expectRevert(close(c, await signTicket(c, { seq: 9n }), c.providerWallet), "ChannelNotOpen", [c.sessionId]);
          await expectBacked(c, []);
        });

        it("reverts with ChannelNotOpen for a channel settled cooperatively", async () => {
          const c = await loadFixture(OPENED[kind]);
          const { payerSignature, providerSignature } = await signedCooperativeSummary({
            domain: c.domain,
            sessionId: c.sessionId,
            ref: c.ref,
            finalSeq: 3n,
            finalAmount: amountOf(3n),
          });
          await mined(
            c,
            await c.escrow.write.closeCooperative(
              [c.ref.terms, c.ref.openedAt, 3n, amountOf(3n), zeroHash, toCompactSignature(payerSignature), toCompactSignature(providerSignature)],
              { account: c.watcher.account },
            ),
          );
          await expectRevert(close(c, await signTicket(c, { seq: 9n }), c.providerWallet), "ChannelNotOpen", [c.sessionId]);
          await expectBacked(c, []);
        });
      });

      /*////////////////////////////// challenge //////////////////////////////*/
      describe("challenge", () => {
        for (const who of ["provider", "stranger (a watchtower)"] as const) {
          it(`accepts a strictly newer ticket from the ${who}: ChannelChallenged, same finalizesAt, state replaced`, async () => {
            const c = await loadFixture(CLOSING[kind]);
            const from = who === "provider" ? c.providerWallet : c.stranger;
            const ticket = await signTicket(c, { seq: 9n });

            const { receipt, deltas } = await withDeltas(c, () => challenge(c, c.recorded, ticket, from));

            expect(deltas).to.deep.equal(NOTHING_MOVED);
            expect(escrowEvents(c, receipt)).to.deep.equal([
              {
                eventName: "ChannelChallenged",
                args: {
                  sessionId: c.sessionId,
                  challenger: addressOf(from),
                  seq: 9n,
                  amount: amountOf(9n),
                  receiptRoot: rootOf(9n),
                  finalizesAt: c.finalizesAt,
                },
              },
            ]);
            const next = stateOf(ticket, AMOUNT);
            expect(await c.escrow.read.closingInfo([c.sessionId, next])).to.deep.equal([true, c.finalizesAt, 0]);
            expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([false, c.finalizesAt, 0]);
            expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Closing);
            await expectBacked(c, [AMOUNT]);
          });
        }

        it("refuses a newer seq with the same amount: the recorded root moves only when the amount rises (issue 12)", async () => {
          const c = await loadFixture(CLOSING[kind]);
          const ticket = await signTicket(c, { seq: CLOSE_SEQ + 1n, amount: c.recorded.amount });
          await expectRevert(challenge(c, c.recorded, ticket, c.providerWallet), "TicketNotNewer", [c.sessionId, CLOSE_SEQ + 1n, CLOSE_SEQ]);
          expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([true, c.finalizesAt, 0]);
        });

        it("accepts a challenge at finalizesAt - 1 (the last second of the window)", async () => {
          const c = await loadFixture(CLOSING[kind]);
          const ticket = await signTicket(c, { seq: 9n });
          await time.setNextBlockTimestamp(c.finalizesAt - 1);
          const receipt = await mined(c, await challenge(c, c.recorded, ticket, c.watcher));
          expect(await blockTime(c, receipt)).to.equal(c.finalizesAt - 1);
          expect(await c.escrow.read.closingInfo([c.sessionId, stateOf(ticket, AMOUNT)])).to.deep.equal([true, c.finalizesAt, 0]);
        });

        it("accepts successive challenges without extending the window; finalize pays the last", async () => {
          const c = await loadFixture(CLOSING[kind]);
          let recorded = c.recorded;
          const steps: [seq: bigint, from: Wallet][] = [
            [6n, c.providerWallet],
            [8n, c.stranger],
            [12n, c.watcher],
          ];
          for (const [seq, from] of steps) {
            const ticket = await signTicket(c, { seq });
            const receipt = await mined(c, await challenge(c, recorded, ticket, from));
            const event = eventArgs(c, receipt, "ChannelChallenged");
            expect([event.seq, event.finalizesAt]).to.deep.equal([seq, c.finalizesAt]);
            recorded = stateOf(ticket, AMOUNT);
            expect(await c.escrow.read.closingInfo([c.sessionId, recorded])).to.deep.equal([true, c.finalizesAt, 0]);
          }
          // An older recorded state no longer names the channel.
          await expectRevert(challenge(c, c.recorded, await signTicket(c, { seq: 13n }), c.watcher), "ClosingStateMismatch", [c.sessionId]);
          await time.setNextBlockTimestamp(c.finalizesAt);
          const { deltas } = await withDeltas(c, () => finalize(c, recorded));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: amountOf(12n), funder: AMOUNT - amountOf(12n), escrow: -AMOUNT });
          await expectBacked(c, []);
        });

        it("accepts any signed ticket over a no-ticket close", async () => {
          const c = await loadFixture(OPENED[kind]);
          const { recorded, finalizesAt } = await closeWith(c, NO_TICKET, c.funder);
          const ticket = await signTicket(c, { seq: 1n });
          await mined(c, await challenge(c, recorded, ticket, c.providerWallet));
          expect(await c.escrow.read.closingInfo([c.sessionId, stateOf(ticket, AMOUNT)])).to.deep.equal([true, finalizesAt, 0]);
        });

        /*------------------------------ rejections ------------------------------*/

        type ChallengeCase = {
          name: string;
          /** The recorded state re-supplied (default: the true one). */
          recorded?: (c: Closing) => ClosingState;
          ticket: (c: Closing) => Promise<Ticket>;
          /** Seconds after finalizesAt at which the challenge is sent, if it matters. */
          at?: number;
          error: string;
          args: (c: Closing, ticket: Ticket) => Promise<readonly unknown[]> | readonly unknown[];
        };
        const newer = (c: Closing) => signTicket(c, { seq: 9n });
        const challengeCases: ChallengeCase[] = [
          {
            name: "the ticket repeats the recorded seq and amount",
            ticket: (c) => signTicket(c, { seq: CLOSE_SEQ }),
            error: "TicketNotNewer",
            args: (c) => [c.sessionId, CLOSE_SEQ, CLOSE_SEQ],
          },
          {
            name: "the ticket is older with the same amount",
            ticket: (c) => signTicket(c, { seq: CLOSE_SEQ - 1n, amount: amountOf(CLOSE_SEQ) }),
            error: "TicketNotNewer",
            args: (c) => [c.sessionId, CLOSE_SEQ - 1n, CLOSE_SEQ],
          },
          {
            name: "the ticket is older (and owes less)",
            ticket: (c) => signTicket(c, { seq: CLOSE_SEQ - 1n }),
            error: "TicketAmountDecreased",
            args: (c) => [c.sessionId, amountOf(CLOSE_SEQ - 1n), amountOf(CLOSE_SEQ)],
          },
          { name: "the ticket is empty (seq 0)", ticket: async () => NO_TICKET, error: "TicketAmountDecreased", args: (c) => [c.sessionId, 0n, amountOf(CLOSE_SEQ)] },
          {
            name: "the newer ticket lowers the amount by one",
            ticket: (c) => signTicket(c, { seq: 9n, amount: amountOf(CLOSE_SEQ) - 1n }),
            error: "TicketAmountDecreased",
            args: (c) => [c.sessionId, amountOf(CLOSE_SEQ) - 1n, amountOf(CLOSE_SEQ)],
          },
          { name: "it is sent at exactly finalizesAt", at: 0, ticket: newer, error: "ChallengeWindowClosed", args: (c) => [c.sessionId, c.finalizesAt] },
          { name: "it is sent a day after finalizesAt", at: 86_400, ticket: newer, error: "ChallengeWindowClosed", args: (c) => [c.sessionId, c.finalizesAt] },
          ...(
            [
              ["deposit", (s) => ({ ...s, deposit: s.deposit - 1n })],
              ["seq", (s) => ({ ...s, seq: s.seq - 1n })],
              ["amount", (s) => ({ ...s, amount: s.amount + 1n })],
              ["receiptRoot", (s) => ({ ...s, receiptRoot: zeroHash })],
              ["feeBps", (s) => ({ ...s, feeBps: 1 })],
            ] as [string, (s: ClosingState) => ClosingState][]
          ).map(
            ([field, alter]): ChallengeCase => ({
              name: `the re-supplied state has a wrong ${field}`,
              recorded: (c) => alter(c.recorded),
              ticket: newer,
              error: "ClosingStateMismatch",
              args: (c) => [c.sessionId],
            }),
          ),
          {
            name: "a stranger signed the ticket",
            ticket: (c) => signTicket(c, { seq: 9n, signer: STRANGER }),
            error: "UnauthorizedTicketSigner",
            args: (c) => [c.sessionId, STRANGER.address],
          },
          {
            name: "the ticket was signed for another chain id (1)",
            ticket: (c) => signTicket(c, { seq: 9n, domain: { ...c.domain, chainId: 1 } }),
            error: "UnauthorizedTicketSigner",
            args: (c, t) => signerOf(c, t).then((signer) => [c.sessionId, signer]),
          },
          {
            name: "the signature has s = n/2 + 1",
            ticket: async (c) => {
              const t = await newer(c);
              return { ...t, sig: { r: t.sig.r, vs: word(HALF_N + 1n) } };
            },
            error: "SignatureNotLowS",
            args: () => [word(HALF_N + 1n)],
          },
          {
            name: "the signature is all zeros",
            ticket: async (c) => ({ ...(await newer(c)), sig: NO_TICKET.sig }),
            error: "InvalidSignature",
            args: () => [],
          },
        ];

        for (const tc of challengeCases) {
          it(`reverts with ${tc.error} when ${tc.name}, keeping the recorded state`, async () => {
            const c = await loadFixture(CLOSING[kind]);
            const ticket = await tc.ticket(c);
            const args = await tc.args(c, ticket);
            if (tc.at !== undefined) await time.setNextBlockTimestamp(c.finalizesAt + tc.at);
            await expectRevert(challenge(c, tc.recorded?.(c) ?? c.recorded, ticket, c.providerWallet), tc.error, args);
            expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([true, c.finalizesAt, 0]);
          });
        }

        it("reverts with ChannelNotClosing on an open channel", async () => {
          const c = await loadFixture(OPENED[kind]);
          await expectRevert(challenge(c, stateOf(NO_TICKET, AMOUNT), await signTicket(c, { seq: 9n }), c.providerWallet), "ChannelNotClosing", [
            c.sessionId,
          ]);
          expect(await c.escrow.read.depositOf([c.sessionId])).to.equal(AMOUNT);
        });

        it("reverts with ChannelNotClosing on a session never opened", async () => {
          const c = await loadFixture(CLOSING[kind]);
          const ref: ChannelRef = { ...c.ref, openedAt: c.ref.openedAt + 1n };
          const unknown: Channel = { ref, sessionId: sessionIdOf(c.domain, ref) };
          const ticket = await signTicket(c, { seq: 9n, channel: unknown });
          await expectRevert(challenge(c, c.recorded, ticket, c.providerWallet, unknown), "ChannelNotClosing", [unknown.sessionId]);
        });

        it("reverts with ChannelNotClosing on a settled channel", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await time.setNextBlockTimestamp(c.finalizesAt);
          await mined(c, await finalize(c, c.recorded));
          await expectRevert(challenge(c, c.recorded, await signTicket(c, { seq: 9n }), c.providerWallet), "ChannelNotClosing", [c.sessionId]);
        });
      });

      /*////////////////////////////// finalize //////////////////////////////*/
      describe("finalize", () => {
        it("reverts with ChallengeWindowOpen right after the close and at finalizesAt - 1", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await expectRevert(finalize(c, c.recorded), "ChallengeWindowOpen", [c.sessionId, c.finalizesAt]);
          await time.setNextBlockTimestamp(c.finalizesAt - 1);
          await expectRevert(finalize(c, c.recorded), "ChallengeWindowOpen", [c.sessionId, c.finalizesAt]);
          expect(await time.latest()).to.equal(c.finalizesAt - 1); // the reverted call was mined at that second
          expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([true, c.finalizesAt, 0]);
          await expectBacked(c, [AMOUNT]);
        });

        it("reports phase Closing until finalizesAt - 1 and Finalizable from finalizesAt", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await time.increaseTo(c.finalizesAt - 1);
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Closing);
          await time.increaseTo(c.finalizesAt);
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Finalizable);
        });

        const finalizers = ["watcher", "funder", "provider", "payer"] as const;
        for (const who of finalizers) {
          it(`settles at exactly finalizesAt when the ${who} calls: exact payouts, ChannelSettled, channel deleted`, async () => {
            const c = await loadFixture(CLOSING[kind]);
            const from = { watcher: c.watcher, funder: c.funder, provider: c.providerWallet, payer: c.payerWallet }[who];
            const paid = amountOf(CLOSE_SEQ);
            await time.setNextBlockTimestamp(c.finalizesAt);

            const { receipt, deltas } = await withDeltas(c, () => finalize(c, c.recorded, from));

            expect(await blockTime(c, receipt)).to.equal(c.finalizesAt);
            expect(deltas).to.deep.equal({ provider: paid, funder: AMOUNT - paid, payer: 0n, treasury: 0n, escrow: -AMOUNT });
            expect(escrowEvents(c, receipt)).to.deep.equal([
              {
                eventName: "ChannelSettled",
                args: {
                  sessionId: c.sessionId,
                  mode: MODE.Unilateral,
                  finalSeq: CLOSE_SEQ,
                  receiptRoot: rootOf(CLOSE_SEQ),
                  paidToProvider: paid,
                  refundedToFunder: AMOUNT - paid,
                  fee: 0n,
                },
              },
            ]);
            expect(await c.escrow.read.accruedFees([c.spec.asset])).to.equal(0n);
            expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.None);
            expect(await c.escrow.read.depositOf([c.sessionId])).to.equal(0n);
            expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([false, 0, 0]);
            await expectRevert(finalize(c, c.recorded), "ChannelNotClosing", [c.sessionId]);
            await expectBacked(c, []);
          });
        }

        for (const [name, amount] of [
          ["one above the deposit", AMOUNT + 1n],
          ["the largest uint128", MAX_UINT128],
          ["exactly the deposit", AMOUNT],
        ] as const) {
          it(`pays exactly the deposit for a ticket of ${name}`, async () => {
            const c = await loadFixture(OPENED[kind]);
            const { recorded, finalizesAt } = await closeWith(c, await signTicket(c, { seq: 3n, amount }), c.providerWallet);
            await time.setNextBlockTimestamp(finalizesAt);
            const { receipt, deltas } = await withDeltas(c, () => finalize(c, recorded));
            expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: AMOUNT, escrow: -AMOUNT });
            const event = eventArgs(c, receipt, "ChannelSettled");
            expect([event.paidToProvider, event.refundedToFunder]).to.deep.equal([AMOUNT, 0n]);
            await expectBacked(c, []);
          });
        }

        it("refunds everything after a no-ticket close", async () => {
          const c = await loadFixture(OPENED[kind]);
          const { recorded, finalizesAt } = await closeWith(c, NO_TICKET, c.payerWallet);
          await time.setNextBlockTimestamp(finalizesAt);
          const { receipt, deltas } = await withDeltas(c, () => finalize(c, recorded));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, funder: AMOUNT, escrow: -AMOUNT });
          expect(escrowEvents(c, receipt)).to.deep.equal([
            {
              eventName: "ChannelSettled",
              args: {
                sessionId: c.sessionId,
                mode: MODE.Unilateral,
                finalSeq: 0n,
                receiptRoot: zeroHash,
                paidToProvider: 0n,
                refundedToFunder: AMOUNT,
                fee: 0n,
              },
            },
          ]);
          await expectBacked(c, []);
        });

        it("settles a topped-up channel against the recorded total", async () => {
          const c = await loadFixture(OPENED[kind]);
          await c.escrow.write.deposit([c.ref.terms, c.ref.openedAt, TOP_UP, TOP_UP], { account: c.funder.account, value: c.spec.value(TOP_UP) });
          const amount = AMOUNT + 1n; // more than the original deposit, less than the total
          const { recorded, finalizesAt } = await closeWith(c, await signTicket(c, { seq: 4n, amount }), c.providerWallet, c, AMOUNT + TOP_UP);
          await time.setNextBlockTimestamp(finalizesAt);
          const { deltas } = await withDeltas(c, () => finalize(c, recorded));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: amount, funder: TOP_UP - 1n, escrow: -(AMOUNT + TOP_UP) });
          await expectBacked(c, []);
        });

        it("settles one channel and leaves another untouched", async () => {
          const c = await loadFixture(CLOSING[kind]);
          const other = await openChannel(c, c.spec.terms({ nonce: 2n }), TOP_UP);
          await time.setNextBlockTimestamp(c.finalizesAt);
          await mined(c, await finalize(c, c.recorded));
          expect(await c.escrow.read.depositOf([other.sessionId])).to.equal(TOP_UP);
          await expectBacked(c, [TOP_UP]);
        });

        for (const [field, alter] of [
          ["deposit", (s) => ({ ...s, deposit: s.deposit + 1n })],
          ["seq", (s) => ({ ...s, seq: s.seq + 1n })],
          ["amount", (s) => ({ ...s, amount: s.amount + 1n })],
          ["receiptRoot", (s) => ({ ...s, receiptRoot: rootOf(9n) })],
          ["feeBps", (s) => ({ ...s, feeBps: 1000 })],
        ] as [string, (s: ClosingState) => ClosingState][]) {
          it(`reverts with ClosingStateMismatch for a wrong ${field} after the window`, async () => {
            const c = await loadFixture(CLOSING[kind]);
            await time.setNextBlockTimestamp(c.finalizesAt);
            await expectRevert(finalize(c, alter(c.recorded)), "ClosingStateMismatch", [c.sessionId]);
            expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([true, c.finalizesAt, 0]);
            await expectBacked(c, [AMOUNT]);
          });
        }

        it("reverts with ChannelNotClosing on an open channel and on a session never opened", async () => {
          const c = await loadFixture(OPENED[kind]);
          await expectRevert(finalize(c, stateOf(NO_TICKET, AMOUNT)), "ChannelNotClosing", [c.sessionId]);
          const ref: ChannelRef = { ...c.ref, openedAt: c.ref.openedAt + 1n };
          const unknown: Channel = { ref, sessionId: sessionIdOf(c.domain, ref) };
          await expectRevert(finalize(c, stateOf(NO_TICKET, AMOUNT), c.watcher, unknown), "ChannelNotClosing", [unknown.sessionId]);
          await expectBacked(c, [AMOUNT]);
        });
      });

      /*////////////////////////////// dispute hooks //////////////////////////////*/
      describe("dispute hooks", () => {
        const freeze = (c: Closing, recorded: ClosingState = c.recorded, from: Wallet = c.disputes, sessionId: Hex = c.sessionId) =>
          c.escrow.write.freeze([sessionId, recorded], { account: from.account });
        const release = (c: Closing, recorded: ClosingState, refund: bigint, sessionId: Hex = c.sessionId) =>
          c.escrow.write.release([sessionId, recorded, refund], { account: c.disputes.account });

        for (const who of ["stranger", "governance"] as const) {
          it(`rejects freeze and release from the ${who} wallet with AccessControlUnauthorizedAccount`, async () => {
            const c = await loadFixture(CLOSING[kind]);
            const wallet = c[who];
            const args = [addressOf(wallet), await c.escrow.read.DISPUTE_ROLE()];
            await expectRevert(freeze(c, c.recorded, wallet), "AccessControlUnauthorizedAccount", args);
            await mined(c, await freeze(c));
            await expectRevert(
              c.escrow.write.release([c.sessionId, c.recorded, 0n], { account: wallet.account }),
              "AccessControlUnauthorizedAccount",
              args,
            );
            expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([true, c.finalizesAt, 1]);
          });
        }

        it("rejects freeze on an open channel and on a session never opened with ChannelNotClosing", async () => {
          const c = await loadFixture(OPENED[kind]);
          for (const sessionId of [c.sessionId, keccak256(c.sessionId)]) {
            await expectRevert(
              c.escrow.write.freeze([sessionId, stateOf(NO_TICKET, AMOUNT)], { account: c.disputes.account }),
              "ChannelNotClosing",
              [sessionId],
            );
          }
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Open);
        });

        it("rejects freeze with a wrong recorded state with ClosingStateMismatch", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await expectRevert(freeze(c, { ...c.recorded, amount: 0n }), "ClosingStateMismatch", [c.sessionId]);
          expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([true, c.finalizesAt, 0]);
        });

        it("counts open cases (ChannelFrozen), keeps the window, and is Frozen after it", async () => {
          const c = await loadFixture(CLOSING[kind]);
          for (const n of [1, 2]) {
            const receipt = await mined(c, await freeze(c));
            expect(escrowEvents(c, receipt)).to.deep.equal([{ eventName: "ChannelFrozen", args: { sessionId: c.sessionId, openCases: n } }]);
            expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([true, c.finalizesAt, n]);
          }
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Closing);
          await expectRevert(finalize(c, c.recorded), "ChallengeWindowOpen", [c.sessionId, c.finalizesAt]);
          await time.increaseTo(c.finalizesAt);
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Frozen);
        });

        it("blocks finalize after the window with FrozenByDispute(sessionId, cases)", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await mined(c, await freeze(c));
          await mined(c, await freeze(c));
          await time.setNextBlockTimestamp(c.finalizesAt);
          await expectRevert(finalize(c, c.recorded), "FrozenByDispute", [c.sessionId, 2]);
          await time.setNextBlockTimestamp(c.finalizesAt + 30 * 86_400);
          await expectRevert(finalize(c, c.recorded), "FrozenByDispute", [c.sessionId, 2]);
          await expectBacked(c, [AMOUNT]);
        });

        it("still accepts a challenge during a freeze within the window, keeping the cases", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await mined(c, await freeze(c));
          const ticket = await signTicket(c, { seq: 9n });
          await mined(c, await challenge(c, c.recorded, ticket, c.providerWallet));
          const next = stateOf(ticket, AMOUNT);
          expect(await c.escrow.read.closingInfo([c.sessionId, next])).to.deep.equal([true, c.finalizesAt, 1]);
          // The dispute contract now has to name the challenged state.
          await expectRevert(release(c, c.recorded, 0n), "ClosingStateMismatch", [c.sessionId]);
          await mined(c, await release(c, next, 0n));
          expect(await c.escrow.read.closingInfo([c.sessionId, next])).to.deep.equal([true, c.finalizesAt, 0]);
        });

        it("rejects a challenge of a frozen session after the window with ChallengeWindowClosed", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await mined(c, await freeze(c));
          await time.setNextBlockTimestamp(c.finalizesAt);
          await expectRevert(challenge(c, c.recorded, await signTicket(c, { seq: 9n }), c.providerWallet), "ChallengeWindowClosed", [
            c.sessionId,
            c.finalizesAt,
          ]);
        });

        it("release with refund 0 closes a case and keeps the window; finalize then pays the recorded amount", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await mined(c, await freeze(c));
          const { result } = await c.escrow.simulate.release([c.sessionId, c.recorded, 0n], { account: c.disputes.account.address });
          expect(result).to.equal(true);
          const receipt = await mined(c, await release(c, c.recorded, 0n));
          expect(escrowEvents(c, receipt)).to.deep.equal([
            { eventName: "ChannelReleased", args: { sessionId: c.sessionId, openCases: 0, refund: 0n, amount: c.recorded.amount } },
          ]);
          expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([true, c.finalizesAt, 0]);
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Closing);
          await expectRevert(finalize(c, c.recorded), "ChallengeWindowOpen", [c.sessionId, c.finalizesAt]);
          await time.setNextBlockTimestamp(c.finalizesAt);
          const { deltas } = await withDeltas(c, () => finalize(c, c.recorded));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: c.recorded.amount, funder: AMOUNT - c.recorded.amount, escrow: -AMOUNT });
          await expectBacked(c, []);
        });

        it("release with a refund reduces the amount, ends the window at once, and finalize pays the reduced amount", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await mined(c, await freeze(c));
          const refund = parseEther("0.2");
          const reduced: ClosingState = { ...c.recorded, amount: c.recorded.amount - refund };

          const receipt = await mined(c, await release(c, c.recorded, refund));

          const releasedAt = await blockTime(c, receipt);
          expect(releasedAt).to.be.below(c.finalizesAt);
          expect(escrowEvents(c, receipt)).to.deep.equal([
            { eventName: "ChannelReleased", args: { sessionId: c.sessionId, openCases: 0, refund, amount: reduced.amount } },
          ]);
          expect(await c.escrow.read.closingInfo([c.sessionId, reduced])).to.deep.equal([true, releasedAt, 0]);
          expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([false, releasedAt, 0]);
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Finalizable);
          // No later ticket can undo the resolution.
          await expectRevert(challenge(c, reduced, await signTicket(c, { seq: 9n }), c.providerWallet), "ChallengeWindowClosed", [
            c.sessionId,
            releasedAt,
          ]);
          const { receipt: settledReceipt, deltas } = await withDeltas(c, () => finalize(c, reduced));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: reduced.amount, funder: AMOUNT - reduced.amount, escrow: -AMOUNT });
          expect(eventArgs(c, settledReceipt, "ChannelSettled").paidToProvider).to.equal(reduced.amount);
          await expectBacked(c, []);
        });

        it("release caps the refund at the recorded amount and reports what it took", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await mined(c, await freeze(c));
          const receipt = await mined(c, await release(c, c.recorded, MAX_UINT128));
          expect(escrowEvents(c, receipt)).to.deep.equal([
            {
              eventName: "ChannelReleased",
              args: { sessionId: c.sessionId, openCases: 0, refund: c.recorded.amount, amount: 0n },
            },
          ]);
          const zeroed: ClosingState = { ...c.recorded, amount: 0n };
          expect(await c.escrow.read.closingInfo([c.sessionId, zeroed])).to.deep.equal([true, await blockTime(c, receipt), 0]);
          const { deltas } = await withDeltas(c, () => finalize(c, zeroed));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, funder: AMOUNT, escrow: -AMOUNT });
          await expectBacked(c, []);
        });

        it("release takes the refund from the deposit-capped amount, so all of it reaches the funder", async () => {
          const c = await loadFixture(OPENED[kind]);
          const over = AMOUNT + parseEther("1");
          const closing = await closeWith(c, await signTicket(c, { seq: 3n, amount: over }), c.providerWallet);
          await mined(c, await c.escrow.write.freeze([c.sessionId, closing.recorded], { account: c.disputes.account }));
          const refund = parseEther("0.5");
          const receipt = await mined(
            c,
            await c.escrow.write.release([c.sessionId, closing.recorded, refund], { account: c.disputes.account }),
          );
          const reduced: ClosingState = { ...closing.recorded, amount: AMOUNT - refund };
          expect(escrowEvents(c, receipt)).to.deep.equal([
            { eventName: "ChannelReleased", args: { sessionId: c.sessionId, openCases: 0, refund, amount: AMOUNT - refund } },
          ]);
          const { deltas } = await withDeltas(c, () => finalize(c, reduced));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: AMOUNT - refund, funder: refund, escrow: -AMOUNT });
          await expectBacked(c, []);
        });

        it("freeze is refused once the challenge window has ended", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await time.setNextBlockTimestamp(c.finalizesAt);
          await expectRevert(freeze(c), "ChallengeWindowClosed", [c.sessionId, c.finalizesAt]);
        });

        it("release with a refund after the window keeps finalizesAt (it only ever shortens the window)", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await mined(c, await freeze(c));
          await time.setNextBlockTimestamp(c.finalizesAt + 100);
          await mined(c, await release(c, c.recorded, 1n));
          const reduced: ClosingState = { ...c.recorded, amount: c.recorded.amount - 1n };
          expect(await c.escrow.read.closingInfo([c.sessionId, reduced])).to.deep.equal([true, c.finalizesAt, 0]);
        });

        it("with two cases open, a refund releases one: still Frozen until the second is released", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await mined(c, await freeze(c));
          await mined(c, await freeze(c));
          const refund = parseEther("0.1");
          const r1 = await mined(c, await release(c, c.recorded, refund));
          const releasedAt = await blockTime(c, r1);
          const reduced: ClosingState = { ...c.recorded, amount: c.recorded.amount - refund };
          expect(await c.escrow.read.closingInfo([c.sessionId, reduced])).to.deep.equal([true, releasedAt, 1]);
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Frozen);
          await expectRevert(finalize(c, reduced), "FrozenByDispute", [c.sessionId, 1]);
          await mined(c, await release(c, reduced, 0n));
          const { deltas } = await withDeltas(c, () => finalize(c, reduced));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: reduced.amount, funder: AMOUNT - reduced.amount, escrow: -AMOUNT });
          await expectBacked(c, []);
        });

        it("rejects release on a closing channel with no open case with ChannelNotFrozen", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await expectRevert(release(c, c.recorded, 0n), "ChannelNotFrozen", [c.sessionId]);
          await expectRevert(release(c, c.recorded, 1n), "ChannelNotFrozen", [c.sessionId]);
          expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([true, c.finalizesAt, 0]);
        });

        it("rejects release on an open channel with ChannelNotClosing and a wrong state with ClosingStateMismatch", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await mined(c, await freeze(c));
          await expectRevert(release(c, { ...c.recorded, seq: 4n }, 0n), "ClosingStateMismatch", [c.sessionId]);
          const open = await openChannel(c, c.spec.terms({ nonce: 2n }), TOP_UP);
          await expectRevert(release(c, stateOf(NO_TICKET, TOP_UP), 0n, open.sessionId), "ChannelNotClosing", [open.sessionId]);
          expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([true, c.finalizesAt, 1]);
        });

        it(`accepts ${MAX_OPEN_CASES} open cases and rejects the next with TooManyOpenCases, window intact`, async () => {
          const c = await loadFixture(CLOSING[kind]);
          for (let n = 1; n <= MAX_OPEN_CASES; n++) {
            const receipt = await mined(c, await freeze(c));
            expect(eventArgs(c, receipt, "ChannelFrozen").openCases).to.equal(n);
          }
          await expectRevert(freeze(c), "TooManyOpenCases", [c.sessionId]);
          expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([true, c.finalizesAt, MAX_OPEN_CASES]);
          for (let n = MAX_OPEN_CASES - 1; n >= 0; n--) await mined(c, await release(c, c.recorded, 0n));
          expect(await c.escrow.read.closingInfo([c.sessionId, c.recorded])).to.deep.equal([true, c.finalizesAt, 0]);
        });

        it("reports Frozen until finalizesAt + MAX_FREEZE_DURATION - 1 and Finalizable from then", async () => {
          const c = await loadFixture(CLOSING[kind]);
          expect(await c.escrow.read.MAX_FREEZE_DURATION()).to.equal(BigInt(MAX_FREEZE_DURATION));
          await mined(c, await freeze(c));
          await time.increaseTo(c.finalizesAt + MAX_FREEZE_DURATION - 1);
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Frozen);
          await time.increaseTo(c.finalizesAt + MAX_FREEZE_DURATION);
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Finalizable);
        });

        it("backstop: a frozen session finalizes at finalizesAt + MAX_FREEZE_DURATION; a later release is a no-op returning false", async () => {
          const c = await loadFixture(CLOSING[kind]);
          await mined(c, await freeze(c));
          await time.setNextBlockTimestamp(c.finalizesAt + MAX_FREEZE_DURATION - 1);
          await expectRevert(finalize(c, c.recorded), "FrozenByDispute", [c.sessionId, 1]);
          await time.setNextBlockTimestamp(c.finalizesAt + MAX_FREEZE_DURATION);
          const { deltas } = await withDeltas(c, () => finalize(c, c.recorded));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: c.recorded.amount, funder: AMOUNT - c.recorded.amount, escrow: -AMOUNT });
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.None);

          for (const refund of [0n, parseEther("0.1")]) {
            const { result } = await c.escrow.simulate.release([c.sessionId, c.recorded, refund], { account: c.disputes.account.address });
            expect(result).to.equal(false);
            const { receipt, deltas: none } = await withDeltas(c, () => release(c, c.recorded, refund));
            expect(escrowEvents(c, receipt)).to.deep.equal([]);
            expect(none).to.deep.equal(NOTHING_MOVED);
          }
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.None);
          await expectBacked(c, []);
        });

        it("release on a session id never opened also returns false (indistinguishable from settled)", async () => {
          const c = await loadFixture(CLOSING[kind]);
          const { result } = await c.escrow.simulate.release([keccak256(c.sessionId), c.recorded, 1n], { account: c.disputes.account.address });
          expect(result).to.equal(false);
        });
      });

      /*////////////////////////////// session keys //////////////////////////////*/
      // Decision 0025: a key's authority is the payer's EIP-712 grant, carried with its ticket; revocations and
      // expiry are honoured only after a grace of one challenge duration (not retroactive).
      describe("session keys", () => {
        const CAP = amountOf(10n);
        type GrantParameters = { expiry?: bigint; cap?: bigint; epoch?: bigint; key?: Address; signer?: typeof PAYER; channel?: Channel };
        const grantOf = async (c: Opened, p: GrantParameters = {}) => {
          const signed = await signSessionKeyGrant({
            account: p.signer ?? PAYER,
            domain: c.domain,
            sessionId: (p.channel ?? c).sessionId,
            key: p.key ?? SESSION_KEY.address,
            expiry: p.expiry ?? BigInt(await time.latest()) + 86_400n,
            spendCap: p.cap ?? CAP,
            methods: ["tools/call"],
            epoch: p.epoch ?? 0n,
          });
          return sessionKeyGrantArg(signed, toCompactSignature);
        };
        type GrantArg = Awaited<ReturnType<typeof grantOf>>;
        /** Whom the escrow recovers from `grant` read as a grant for `c`'s session. */
        const recoverGrantSigner = (c: Opened, grant: GrantArg) =>
          recoverDigestSigner(
            sessionKeyGrantDigest(c.domain, { sessionId: c.sessionId, key: grant.key, expiry: grant.expiry, spendCap: grant.spendCap, capabilities: grant.capabilities, epoch: grant.epoch }),
            serializeSignature(compactSignatureToSignature({ r: grant.sig.r, yParityAndS: grant.sig.vs })),
          );
        const keyTicket = (c: Opened, seq: bigint, amount?: bigint, channel?: Channel) => signTicket(c, { seq, amount, signer: SESSION_KEY, channel });
        const closeKey = (c: Opened, ticket: Ticket, grant: GrantArg, from: Wallet = c.providerWallet, channel: Channel = c) =>
          c.escrow.write.closeUnilateralWithKey([channel.ref.terms, channel.ref.openedAt, ticket, grant], { account: from.account });
        const challengeKey = (c: Opened, recorded: ClosingState, ticket: Ticket, grant: GrantArg, from: Wallet = c.providerWallet) =>
          c.escrow.write.challengeWithKey([c.ref.terms, c.ref.openedAt, recorded, ticket, grant], { account: from.account });
        const revokeKey = (c: Opened, from: Wallet = c.payerWallet) =>
          c.escrow.write.revokeSessionKey([c.ref.terms, c.ref.openedAt, SESSION_KEY.address], { account: from.account });

        it("hashSessionKey equals the client's digest and SESSION_KEY_TYPEHASH its type hash", async () => {
          const c = await loadFixture(OPENED[kind]);
          const grant = { sessionId: c.sessionId, key: SESSION_KEY.address, expiry: 123n, spendCap: CAP, capabilities: capabilitiesHash(["tools/call"]), epoch: 4n };
          expect(await c.escrow.read.SESSION_KEY_TYPEHASH()).to.equal(typeHash("SessionKey"));
          expect(await c.escrow.read.hashSessionKey([grant.sessionId, grant.key, grant.expiry, grant.spendCap, grant.capabilities, grant.epoch])).to.equal(
            sessionKeyGrantDigest(c.domain, grant),
          );
        });

        it("a granted key's tickets close, challenge and settle with no authorising transaction", async () => {
          const c = await loadFixture(OPENED[kind]);
          const grant = await grantOf(c);
          const first = await keyTicket(c, 3n);
          const receipt = await mined(c, await closeKey(c, first, grant));
          const recorded = stateOf(first, AMOUNT);
          const finalizesAt = (await blockTime(c, receipt)) + DURATION;
          expect(await c.escrow.read.closingInfo([c.sessionId, recorded])).to.deep.equal([true, finalizesAt, 0]);
          const second = await keyTicket(c, 8n);
          await mined(c, await challengeKey(c, recorded, second, grant, c.watcher));
          const final = stateOf(second, AMOUNT);
          await time.setNextBlockTimestamp(finalizesAt);
          const { deltas } = await withDeltas(c, () => finalize(c, final));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: amountOf(8n), funder: AMOUNT - amountOf(8n), escrow: -AMOUNT });
          await expectBacked(c, []);
        });

        it("the plain closeUnilateral and challenge take only the payer's own signature: UnauthorizedTicketSigner for a key", async () => {
          const c = await loadFixture(OPENED[kind]);
          await expectRevert(close(c, await keyTicket(c, 3n), c.providerWallet), "UnauthorizedTicketSigner", [c.sessionId, SESSION_KEY.address]);
          const { recorded } = await closeWith(c, await signTicket(c, { seq: 3n }), c.providerWallet);
          await expectRevert(challenge(c, recorded, await keyTicket(c, 4n), c.providerWallet), "UnauthorizedTicketSigner", [c.sessionId, SESSION_KEY.address]);
        });

        it("a grant signed by anyone but the payer, or for another session, is UnauthorizedSessionKey", async () => {
          const c = await loadFixture(OPENED[kind]);
          const byStranger = await grantOf(c, { signer: STRANGER });
          await expectRevert(closeKey(c, await keyTicket(c, 3n), byStranger), "UnauthorizedSessionKey", [c.sessionId, SESSION_KEY.address, STRANGER.address]);
          const other = await openChannel(c, c.spec.terms({ nonce: 2n }), TOP_UP);
          const forOther = await grantOf(c, { channel: other });
          const grantSigner = await recoverGrantSigner(c, forOther);
          await expectRevert(closeKey(c, await keyTicket(c, 3n), forOther), "UnauthorizedSessionKey", [c.sessionId, SESSION_KEY.address, grantSigner]);
          // ... while it does sign for the session it was granted on.
          await mined(c, await closeKey(c, await keyTicket(c, 3n, undefined, other), forOther, c.providerWallet, other));
          await expectBacked(c, [AMOUNT, TOP_UP]);
        });

        it("a ticket signed by a key other than the granted one is SignerMismatch(key, signer)", async () => {
          const c = await loadFixture(OPENED[kind]);
          const grant = await grantOf(c, { key: STRANGER.address });
          await expectRevert(closeKey(c, await keyTicket(c, 3n), grant), "SignerMismatch", [STRANGER.address, SESSION_KEY.address]);
        });

        it("a key-signed 'no ticket' (seq 0) is EmptyKeyTicket", async () => {
          const c = await loadFixture(OPENED[kind]);
          await expectRevert(closeKey(c, await keyTicket(c, 0n, 0n), await grantOf(c)), "EmptyKeyTicket", [c.sessionId]);
        });

        it("accepts a ticket at the spend cap and rejects one above it with SessionKeySpendCapExceeded; the payer is not capped", async () => {
          const c = await loadFixture(OPENED[kind]);
          const grant = await grantOf(c);
          await expectRevert(closeKey(c, await keyTicket(c, 3n, CAP + 1n), grant), "SessionKeySpendCapExceeded", [SESSION_KEY.address, CAP + 1n, CAP]);
          const atCap = await keyTicket(c, 3n, CAP);
          await mined(c, await closeKey(c, atCap, grant));
          const recorded = stateOf(atCap, AMOUNT);
          await expectRevert(challengeKey(c, recorded, await keyTicket(c, 4n, CAP + 1n), grant), "SessionKeySpendCapExceeded", [SESSION_KEY.address, CAP + 1n, CAP]);
          await mined(c, await challenge(c, recorded, await signTicket(c, { seq: 4n, amount: CAP + 1n }), c.watcher));
        });

        it("issue 28 item 1: expiry takes nothing back: a key's ticket signed before its expiry closes long after expiry + challenge duration", async () => {
          const c = await loadFixture(OPENED[kind]);
          const expiry = BigInt(await time.latest()) + 1000n;
          const grant = await grantOf(c, { expiry });
          const earned = await keyTicket(c, 3n); // accepted by the provider before the expiry
          await time.setNextBlockTimestamp(Number(expiry) + 30 * DURATION);
          await mined(c, await closeKey(c, earned, grant));
          expect(await c.escrow.read.phaseOf([c.sessionId])).to.equal(PHASE.Closing);
        });

        it("issue 28 item 1: a payer's no-ticket close long after the expiry is answered by the key's ticket (challengeWithKey)", async () => {
          const c = await loadFixture(OPENED[kind]);
          const expiry = BigInt(await time.latest()) + 1000n;
          const grant = await grantOf(c, { expiry });
          const earned = await keyTicket(c, 3n);
          await time.setNextBlockTimestamp(Number(expiry) + 2 * DURATION);
          const { recorded, finalizesAt } = await closeWith(c, NO_TICKET, c.payerWallet);
          await mined(c, await challengeKey(c, recorded, earned, grant));
          await time.setNextBlockTimestamp(finalizesAt);
          const { deltas } = await withDeltas(c, () => finalize(c, stateOf(earned, AMOUNT)));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: amountOf(3n), funder: AMOUNT - amountOf(3n), escrow: -AMOUNT });
          await expectBacked(c, []);
        });

        it("revocation is not retroactive: after revokeSessionKey and a payer's no-ticket close, the provider's key ticket still wins inside the grace", async () => {
          const c = await loadFixture(OPENED[kind]);
          const grant = await grantOf(c);
          const earned = await keyTicket(c, 8n); // the provider holds this, for work it delivered
          const revoked = await mined(c, await revokeKey(c));
          const revokedAt = await blockTime(c, revoked);
          expect(escrowEvents(c, revoked)).to.deep.equal([{ eventName: "SessionKeyRevoked", args: { sessionId: c.sessionId, key: SESSION_KEY.address, revokedAt } }]);
          expect(await c.escrow.read.sessionKeyRevokedAt([c.sessionId, SESSION_KEY.address])).to.equal(revokedAt);
          const { recorded, finalizesAt } = await closeWith(c, NO_TICKET, c.payerWallet);
          await mined(c, await challengeKey(c, recorded, earned, grant));
          await time.setNextBlockTimestamp(finalizesAt);
          const { deltas } = await withDeltas(c, () => finalize(c, stateOf(earned, AMOUNT)));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: amountOf(8n), funder: AMOUNT - amountOf(8n), escrow: -AMOUNT });
          await expectBacked(c, []);
        });

        it("after revokedAt + challenge duration a revoked key's ticket is RevokedSessionKey; revoking again does not move revokedAt", async () => {
          const c = await loadFixture(OPENED[kind]);
          const grant = await grantOf(c);
          const revokedAt = await blockTime(c, await mined(c, await revokeKey(c)));
          const again = await mined(c, await revokeKey(c));
          expect(escrowEvents(c, again)).to.deep.equal([]);
          expect(await c.escrow.read.sessionKeyRevokedAt([c.sessionId, SESSION_KEY.address])).to.equal(revokedAt);
          await time.setNextBlockTimestamp(revokedAt + DURATION);
          await expectRevert(closeKey(c, await keyTicket(c, 3n), grant), "RevokedSessionKey", [SESSION_KEY.address, revokedAt]);
          // A fresh grant of the same key does not undo the revocation: revoked keys stay revoked on the session.
          await expectRevert(closeKey(c, await keyTicket(c, 3n), await grantOf(c)), "RevokedSessionKey", [SESSION_KEY.address, revokedAt]);
        });

        it("revokeAllSessionKeys (SessionKeysRevoked, keyEpochOf, epochRevokedAt) ends epoch 0 with the same grace; grants of epoch 1 work; epoch 2 is SessionKeyEpochAhead", async () => {
          const c = await loadFixture(OPENED[kind]);
          const old = await grantOf(c);
          const receipt = await mined(c, await c.escrow.write.revokeAllSessionKeys({ account: c.payerWallet.account }));
          const revokedAt = await blockTime(c, receipt);
          expect(escrowEvents(c, receipt)).to.deep.equal([{ eventName: "SessionKeysRevoked", args: { payer: PAYER.address, epoch: 1n, revokedAt } }]);
          expect(await c.escrow.read.keyEpochOf([PAYER.address])).to.equal(1n);
          expect(await c.escrow.read.epochRevokedAt([PAYER.address, 0n])).to.equal(revokedAt);
          await expectRevert(closeKey(c, await keyTicket(c, 3n), await grantOf(c, { epoch: 2n })), "SessionKeyEpochAhead", [SESSION_KEY.address, 2n, 1n]);
          await time.setNextBlockTimestamp(revokedAt + DURATION);
          await expectRevert(closeKey(c, await keyTicket(c, 3n), old), "RevokedSessionKey", [SESSION_KEY.address, revokedAt]);
          await mined(c, await closeKey(c, await keyTicket(c, 3n), await grantOf(c, { epoch: 1n })));
        });

        it("another account's revokeAllSessionKeys does not touch the payer's grants", async () => {
          const c = await loadFixture(OPENED[kind]);
          await mined(c, await c.escrow.write.revokeAllSessionKeys({ account: c.providerWallet.account }));
          expect(await c.escrow.read.keyEpochOf([PROVIDER.address])).to.equal(1n);
          expect(await c.escrow.read.keyEpochOf([PAYER.address])).to.equal(0n);
          await mined(c, await closeKey(c, await keyTicket(c, 3n), await grantOf(c)));
        });

        for (const who of ["provider", "funder", "stranger"] as const) {
          it(`lets only the payer revoke: NotThePayer for the ${who}`, async () => {
            const c = await loadFixture(OPENED[kind]);
            const wallet = { provider: c.providerWallet, funder: c.funder, stranger: c.stranger }[who];
            await expectRevert(revokeKey(c, wallet), "NotThePayer", [c.sessionId, addressOf(wallet)]);
            expect(await c.escrow.read.sessionKeyRevokedAt([c.sessionId, SESSION_KEY.address])).to.equal(0);
          });
        }

        it("closeUnilateralWithKey is for parties only (NotAParty) and open channels only (ChannelNotOpen)", async () => {
          const c = await loadFixture(OPENED[kind]);
          const grant = await grantOf(c);
          await expectRevert(closeKey(c, await keyTicket(c, 3n), grant, c.stranger), "NotAParty", [c.sessionId, STRANGER.address]);
          await mined(c, await closeKey(c, await keyTicket(c, 3n), grant));
          await expectRevert(closeKey(c, await keyTicket(c, 4n), grant), "ChannelNotOpen", [c.sessionId]);
        });
      });

      /*////////////////////////////// routing fee //////////////////////////////*/
      describe("routing fee", () => {
        /** Owed more than 1 % divides evenly, so the fee is rounded down. */
        const OWED = parseEther("0.5") + 99n;
        const setFee = (c: Opened, fee: number, treasury: Address = c.treasury.account.address) =>
          c.escrow.write.setRoutingFee([fee, treasury], { account: c.governance.account });

        it(`keeps the fee snapshotted at open (${FEE_BPS} bps) for a cooperative close after governance moved it to ${NEW_FEE_BPS}`, async () => {
          const c = await loadFixture(FEE[kind]);
          await mined(c, await setFee(c, NEW_FEE_BPS));
          const { payerSignature, providerSignature } = await signedCooperativeSummary({
            domain: c.domain,
            sessionId: c.sessionId,
            ref: c.ref,
            finalSeq: 5n,
            finalAmount: OWED,
            finalReceiptRoot: rootOf(5n),
          });
          const { receipt, deltas } = await withDeltas(c, async () =>
            c.escrow.write.closeCooperative(
              [c.ref.terms, c.ref.openedAt, 5n, OWED, rootOf(5n), toCompactSignature(payerSignature), toCompactSignature(providerSignature)],
              { account: c.watcher.account },
            ),
          );
          const fee = (OWED * 100n) / 10_000n;
          expect(fee).to.equal(parseEther("0.005")); // 99 wei of the owed amount round away
          expect(deltas).to.deep.equal({ provider: OWED - fee, funder: AMOUNT - OWED, payer: 0n, treasury: 0n, escrow: -(AMOUNT - fee) });
          expect(escrowEvents(c, receipt)).to.deep.equal([
            {
              eventName: "ChannelSettled",
              args: {
                sessionId: c.sessionId,
                mode: MODE.Cooperative,
                finalSeq: 5n,
                receiptRoot: rootOf(5n),
                paidToProvider: OWED - fee,
                refundedToFunder: AMOUNT - OWED,
                fee,
              },
            },
          ]);
          expect(await c.escrow.read.accruedFees([c.spec.asset])).to.equal(fee);
          await expectBacked(c, []);
        });

        it(`keeps the snapshotted ${FEE_BPS} bps through a unilateral close and finalize after the change`, async () => {
          const c = await loadFixture(FEE[kind]);
          await mined(c, await setFee(c, NEW_FEE_BPS));
          const { receipt: closeReceipt, recorded, finalizesAt } = await closeWith(
            c,
            await signTicket(c, { seq: 5n, amount: OWED }),
            c.providerWallet,
            c,
            AMOUNT,
            FEE_BPS,
          );
          expect(eventArgs(c, closeReceipt, "ChannelClosing").feeBps).to.equal(FEE_BPS);
          await time.setNextBlockTimestamp(finalizesAt);
          const { receipt, deltas } = await withDeltas(c, () => finalize(c, recorded));
          const { toProvider, fee, toFunder } = split(AMOUNT, OWED, FEE_BPS);
          expect([toProvider, fee]).to.deep.equal([OWED - OWED / 100n, OWED / 100n]);
          expect(deltas).to.deep.equal({ provider: toProvider, funder: toFunder, payer: 0n, treasury: 0n, escrow: -(AMOUNT - fee) });
          const settled = eventArgs(c, receipt, "ChannelSettled");
          expect([settled.paidToProvider, settled.fee]).to.deep.equal([toProvider, fee]);
          expect(await c.escrow.read.accruedFees([c.spec.asset])).to.equal(fee);
          await expectBacked(c, []);
        });

        it("rejects finalize with the new fee re-supplied (the recorded fee is part of the state)", async () => {
          const c = await loadFixture(FEE[kind]);
          await mined(c, await setFee(c, NEW_FEE_BPS));
          const { recorded, finalizesAt } = await closeWith(c, await signTicket(c, { seq: 5n, amount: OWED }), c.providerWallet, c, AMOUNT, FEE_BPS);
          await time.setNextBlockTimestamp(finalizesAt);
          await expectRevert(finalize(c, { ...recorded, feeBps: NEW_FEE_BPS }), "ClosingStateMismatch", [c.sessionId]);
          await expectRevert(finalize(c, { ...recorded, feeBps: 0 }), "ClosingStateMismatch", [c.sessionId]);
        });

        it(`charges a channel opened after the change the new ${NEW_FEE_BPS} bps; fees of both accrue together`, async () => {
          const c = await loadFixture(FEE[kind]);
          await mined(c, await setFee(c, NEW_FEE_BPS));
          const later = await openChannel(c, c.spec.terms({ nonce: 2n }));
          const a = await closeWith(c, await signTicket(c, { seq: 5n, amount: OWED }), c.providerWallet, c, AMOUNT, FEE_BPS);
          const b = await closeWith(c, await signTicket(c, { seq: 6n, amount: OWED, channel: later }), c.providerWallet, later, AMOUNT, NEW_FEE_BPS);
          expect(eventArgs(c, b.receipt, "ChannelClosing").feeBps).to.equal(NEW_FEE_BPS);
          await expectBacked(c, [AMOUNT, AMOUNT]);

          await time.setNextBlockTimestamp(b.finalizesAt);
          const { deltas } = await withDeltas(c, () => finalize(c, b.recorded, c.watcher, later));
          const newer = split(AMOUNT, OWED, NEW_FEE_BPS);
          expect(newer.fee).to.equal((OWED * 5n) / 100n);
          expect(deltas).to.deep.equal({ provider: newer.toProvider, funder: newer.toFunder, payer: 0n, treasury: 0n, escrow: -(AMOUNT - newer.fee) });
          await expectBacked(c, [AMOUNT]);

          await mined(c, await finalize(c, a.recorded));
          const older = split(AMOUNT, OWED, FEE_BPS);
          expect(await c.escrow.read.accruedFees([c.spec.asset])).to.equal(older.fee + newer.fee);
          await expectBacked(c, []);
        });

        it("charges the fee on the capped payout when the ticket exceeds the deposit", async () => {
          const c = await loadFixture(FEE[kind]);
          const { recorded, finalizesAt } = await closeWith(c, await signTicket(c, { seq: 5n, amount: MAX_UINT128 }), c.providerWallet, c, AMOUNT, FEE_BPS);
          await time.setNextBlockTimestamp(finalizesAt);
          const { deltas } = await withDeltas(c, () => finalize(c, recorded));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: AMOUNT - AMOUNT / 100n, escrow: -(AMOUNT - AMOUNT / 100n) });
          expect(await c.escrow.read.accruedFees([c.spec.asset])).to.equal(AMOUNT / 100n);
          await expectBacked(c, []);
        });

        it("withdrawFees by anyone pays exactly the accrued fees to the treasury (FeesWithdrawn); a second call is a no-op", async () => {
          const c = await loadFixture(FEE[kind]);
          const { recorded, finalizesAt } = await closeWith(c, await signTicket(c, { seq: 5n, amount: OWED }), c.providerWallet, c, AMOUNT, FEE_BPS);
          await time.setNextBlockTimestamp(finalizesAt);
          await mined(c, await finalize(c, recorded));
          const fee = OWED / 100n;
          expect(await c.escrow.read.accruedFees([c.spec.asset])).to.equal(fee);

          const { receipt, deltas } = await withDeltas(c, () => c.escrow.write.withdrawFees([c.spec.asset], { account: c.stranger.account }));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, treasury: fee, escrow: -fee });
          expect(escrowEvents(c, receipt)).to.deep.equal([
            { eventName: "FeesWithdrawn", args: { asset: getAddress(c.spec.asset), treasury: addressOf(c.treasury), amount: fee } },
          ]);
          expect(await c.escrow.read.accruedFees([c.spec.asset])).to.equal(0n);
          await expectBacked(c, []);

          const again = await withDeltas(c, () => c.escrow.write.withdrawFees([c.spec.asset], { account: c.watcher.account }));
          expect(again.deltas).to.deep.equal(NOTHING_MOVED);
          expect(escrowEvents(c, again.receipt)).to.deep.equal([]);
          await expectBacked(c, []);
        });

        it("withdrawFees with nothing ever accrued is a no-op and leaves live deposits alone", async () => {
          const c = await loadFixture(FEE[kind]);
          const { receipt, deltas } = await withDeltas(c, () => c.escrow.write.withdrawFees([c.spec.asset], { account: c.stranger.account }));
          expect(deltas).to.deep.equal(NOTHING_MOVED);
          expect(escrowEvents(c, receipt)).to.deep.equal([]);
          await expectBacked(c, [AMOUNT]);
        });

        it("withdrawFees pays the treasury in force at withdrawal, not the one at accrual", async () => {
          const c = await loadFixture(FEE[kind]);
          const { recorded, finalizesAt } = await closeWith(c, await signTicket(c, { seq: 5n, amount: OWED }), c.providerWallet, c, AMOUNT, FEE_BPS);
          await time.setNextBlockTimestamp(finalizesAt);
          await mined(c, await finalize(c, recorded));
          const newTreasury = addressOf(c.wallets[9]!);
          await mined(c, await setFee(c, FEE_BPS, newTreasury));
          const before = await c.spec.balanceOf(newTreasury);
          const { deltas } = await withDeltas(c, () => c.escrow.write.withdrawFees([c.spec.asset], { account: c.watcher.account }));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, escrow: -(OWED / 100n) });
          expect((await c.spec.balanceOf(newTreasury)) - before).to.equal(OWED / 100n);
          await expectBacked(c, []);
        });
      });
    });
  }
});
