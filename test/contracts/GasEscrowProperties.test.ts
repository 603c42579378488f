/**
 * Model-based property test of the GasEscrow.
 *
 * A seeded PRNG drives random sequences of operations — valid and deliberately invalid — over several
 * channels at once (native ETH and the LaborGas ERC-20, some opened under a non-zero routing fee), and a
 * TypeScript model predicts, for every operation, either success or the exact custom error. After every
 * step the test asserts the invariants:
 *
 *   1. per asset, the escrow holds exactly Σ(live channels' deposits) + accruedFees(asset) + Σ claimables;
 *   2. nothing pays twice: settled channels stay settled (further closes / finalizes revert) and every
 *      party's balance equals its starting balance + what the model says it received − its own gas;
 *   3. a settlement pays the provider exactly min(recorded amount, deposit) − fee (recorded = highest-seq
 *      ticket submitted, or the cooperative summary), the funder deposit − (provider + fee); and when the
 *      newest ticket the payer signed before the window ended was submitted, the payout is computed from
 *      that newest ticket: min(newest, deposit) − Σ dispute refunds (floored at 0), less the fee;
 *   4. phaseOf (and depositOf / closingInfo) match the model.
 *
 * Block timestamps are pinned (every transaction is mined at exactly `model.now + 1`), so window edges are
 * hit exactly. Reproduce a failure with `PROPERTY_SEEDS=<seed> [PROPERTY_STEPS=<n>] npx hardhat test
 * --no-compile test/contracts/GasEscrowProperties.test.ts`; a failure prints the last steps of its trace.
 * `PROPERTY_VERBOSE=1` prints how often each operation succeeded or failed with each error.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { keccak256, maxUint256, parseEventLogs, toHex, zeroAddress, zeroHash, type Address, type Hash, type Hex, type TransactionReceipt } from "viem";

import { toCompactSignature } from "../../channel-client/eip712";
import { signSettlementSummary, type SettlementSummary } from "../../channel-client/summary";
import { sessionIdOf, type ChannelRef } from "../../channel-client/terms";
import { signPaymentTicket } from "../../channel-client/ticket";
import { escrowFixture, hardhatAccount, makeTerms, ROLE, TOKEN_SUPPLY } from "../helpers/fixtures";
import { mulberry32, type Prng } from "../helpers/prng";
import { expectRevert } from "../helpers/revert";

/*//////////////////////////////////////////////////////////////
                             CONFIGURATION
//////////////////////////////////////////////////////////////*/

const DEFAULT_SEEDS = [1, 7, 42, 1337, 2024, 7777, 31337, 65537, 424242, 12648430];
const SEEDS: number[] = process.env.PROPERTY_SEEDS
  ? process.env.PROPERTY_SEEDS.split(",").map((s) => Number(s.trim()))
  : DEFAULT_SEEDS;
const STEPS = Number(process.env.PROPERTY_STEPS ?? 120);
const TRACE_TAIL = 30;

/*//////////////////////////////////////////////////////////////
                          CONTRACT CONSTANTS
//////////////////////////////////////////////////////////////*/

const PHASE = { None: 0, Open: 1, Closing: 2, Finalizable: 3, Frozen: 4 } as const;
const PHASE_NAME = ["None", "Open", "Closing", "Finalizable", "Frozen"] as const;
const MIN_CHALLENGE = 60n;
const MAX_CHALLENGE = 30n * 86_400n;
const MAX_FREEZE = 180n * 86_400n;
const MAX_FEE_BPS = 1_000;
const MAX_CASES = 15;
const ETHER = 10n ** 18n;

/*//////////////////////////////////////////////////////////////
                               FIXTURE
//////////////////////////////////////////////////////////////*/

/** The escrow fixture plus an operator (submits everything anyone may submit) and a watchtower. */
async function propertyFixture() {
  const f = await escrowFixture();
  const operator = f.wallets[8]!;
  const watchtower = f.wallets[9]!;
  await f.token.write.mint([operator.account.address, TOKEN_SUPPLY]);
  await f.token.write.approve([f.escrow.address, maxUint256], { account: operator.account });
  return { ...f, operator, watchtower };
}

type World = Awaited<ReturnType<typeof propertyFixture>>;
type Wallet = World["operator"];
type Account = Wallet["account"];

/*//////////////////////////////////////////////////////////////
                                 MODEL
//////////////////////////////////////////////////////////////*/

const KINDS = ["ETH", "ERC20"] as const;
type Kind = (typeof KINDS)[number];
/** Accounts whose balances are tracked. The payer is never paid; the others are payees. */
const PARTIES = ["payer", "provider", "funder", "treasury"] as const;
type Party = (typeof PARTIES)[number];

type Sig = { r: Hex; vs: Hex };
type TicketArg = { seq: bigint; cumulativeAmount: bigint; receiptRoot: Hex; sig: Sig };
type SignedTicket = TicketArg & { signedAt: bigint };
type ClosingState = { deposit: bigint; seq: bigint; amount: bigint; receiptRoot: Hex; feeBps: number };

const NO_TICKET: TicketArg = { seq: 0n, cumulativeAmount: 0n, receiptRoot: zeroHash, sig: { r: zeroHash, vs: zeroHash } };
const DUMMY_STATE: ClosingState = { deposit: 1n, seq: 0n, amount: 0n, receiptRoot: zeroHash, feeBps: 0 };

type Payout = { toProvider: bigint; fee: bigint; toFunder: bigint };

type Channel = {
  label: string;
  kind: Kind;
  asset: Address;
  ref: ChannelRef;
  sessionId: Hex;
  /** Routing fee snapshotted at open. */
  feeBps: number;
  status: "open" | "closing" | "settled";
  /** What the channel holds while open (frozen into `recorded.deposit` once closing). */
  deposit: bigint;
  /** Every ticket the payer signed for this channel, in signing order (seq strictly increasing). */
  tickets: SignedTicket[];
  /** Closing phase. */
  recorded: ClosingState | undefined;
  /** Earlier recorded states, used to submit stale ClosingStates. */
  history: ClosingState[];
  finalizesAt: bigint;
  cases: number;
  /** Σ refunds requested in successful releases. */
  refunds: bigint;
  /** Seqs that were successfully recorded (by the close or a challenge). */
  submitted: bigint[];
  payout: (Payout & { mode: "Cooperative" | "Unilateral"; finalSeq: bigint }) | undefined;
};

function split(held: bigint, owed: bigint, feeBps: number): Payout {
  const earned = owed < held ? owed : held;
  const fee = (earned * BigInt(feeBps)) / 10_000n;
  return { toProvider: earned - fee, fee, toFunder: held - earned };
}

const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);
const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);
const eth = (wei: bigint): string => {
  const whole = wei / ETHER;
  const frac = (wei % ETHER).toString().padStart(18, "0").slice(0, 4);
  return `${whole}.${frac}`;
};
const sameState = (a: ClosingState, b: ClosingState): boolean =>
  a.deposit === b.deposit && a.seq === b.seq && a.amount === b.amount && a.receiptRoot === b.receiptRoot && a.feeBps === b.feeBps;

/*//////////////////////////////////////////////////////////////
                                RUNNER
//////////////////////////////////////////////////////////////*/

type Stats = Record<string, number>;

class Run {
  readonly trace: string[] = [];
  readonly stats: Stats = {};
  private now = 0n;
  private step = 0;
  private feeBps = 0;
  private nonce = 0n;
  private readonly slots: (Channel | undefined)[];
  private readonly generations: number[];
  private readonly all: Channel[] = [];
  private readonly accrued: Record<Kind, bigint> = { ETH: 0n, ERC20: 0n };
  private readonly totalIn: Record<Kind, bigint> = { ETH: 0n, ERC20: 0n };
  /** What the funder paid into `open` (the operator pays every top-up). */
  private readonly openedByFunder: Record<Kind, bigint> = { ETH: 0n, ERC20: 0n };
  private readonly received: Record<Kind, Record<Party, bigint>> = {
    ETH: { payer: 0n, provider: 0n, funder: 0n, treasury: 0n },
    ERC20: { payer: 0n, provider: 0n, funder: 0n, treasury: 0n },
  };
  private readonly gas: Record<Party, bigint> = { payer: 0n, provider: 0n, funder: 0n, treasury: 0n };
  private initial: Record<Kind, Record<Party, bigint>> | undefined;
  private readonly wallet: Record<Party, Wallet>;
  private readonly address: Record<Party, Address>;
  private startBlock = 0n;
  /** The clock at the start, for readable traces (t+…). */
  private t0 = 0n;
  private draining = false;

  constructor(
    private readonly f: World,
    private readonly rng: Prng,
  ) {
    const slotCount = rng.int(4, 6);
    this.slots = Array.from({ length: slotCount }, () => undefined);
    this.generations = Array.from({ length: slotCount }, () => 0);
    this.wallet = {
      payer: f.wallets[ROLE.payer]!,
      provider: f.wallets[ROLE.provider]!,
      funder: f.wallets[ROLE.funder]!,
      treasury: f.wallets[ROLE.treasury]!,
    };
    this.address = {
      payer: this.wallet.payer.account.address,
      provider: this.wallet.provider.account.address,
      funder: this.wallet.funder.account.address,
      treasury: this.wallet.treasury.account.address,
    };
  }

  get stepNumber(): number {
    return this.step;
  }

  /*------------------------------ plumbing ------------------------------*/

  private log(line: string): void {
    this.trace.push(`#${this.step} t+${this.now - this.t0}: ${line}`);
  }

  private count(key: string): void {
    const k = this.draining ? `(drain) ${key}` : key;
    this.stats[k] = (this.stats[k] ?? 0) + 1;
  }

  private partyOf(address: Address): Party | undefined {
    return PARTIES.find((p) => this.address[p].toLowerCase() === address.toLowerCase());
  }

  /**
   * Sends one transaction, pinned to be mined at exactly `now + 1`. If `predicted` names an error, asserts
   * the call reverts with it (Hardhat may still mine the reverted transaction: then its gas is booked);
   * otherwise asserts it succeeds. Advances the model clock by the block it took and books the sender's
   * gas if the sender is a tracked party.
   */
  private async tx(
    op: string,
    sender: Wallet,
    send: (account: Account) => Promise<Hash>,
    predicted: string | undefined,
  ): Promise<TransactionReceipt | undefined> {
    const at = this.now + 1n;
    this.log(`${op} [from ${this.partyOf(sender.account.address) ?? this.nameOf(sender)}] → ${predicted ?? "ok"}`);
    const pc = this.f.publicClient;
    const before = await pc.getBlockNumber();
    await time.setNextBlockTimestamp(at);
    if (predicted !== undefined) {
      await expectRevert(send(sender.account), predicted);
      this.count(`${op.split(" ")[0]} ✗ ${predicted}`);
      // Hardhat still mines a transaction whose gas estimate reverted (to report its stack trace): it then
      // took a block at `at` and its sender paid for the gas, which the model must book.
      const block = await pc.getBlock();
      if (block.number !== before) {
        expect(block.number, `${op}: one block`).to.equal(before + 1n);
        expect(block.timestamp, `${op}: mined at now + 1`).to.equal(at);
        expect(block.transactions.length).to.equal(1);
        const receipt = await pc.getTransactionReceipt({ hash: block.transactions[0]! });
        expect(receipt.status, `${op}: mined as reverted`).to.equal("reverted");
        expect(receipt.from.toLowerCase()).to.equal(sender.account.address.toLowerCase());
        this.now = at;
        const party = this.partyOf(sender.account.address);
        if (party) this.gas[party] += receipt.gasUsed * receipt.effectiveGasPrice;
      }
      return undefined;
    }
    const receipt = await this.f.publicClient.waitForTransactionReceipt({ hash: await send(sender.account) });
    expect(receipt.status, op).to.equal("success");
    this.now = at;
    const party = this.partyOf(sender.account.address);
    if (party) this.gas[party] += receipt.gasUsed * receipt.effectiveGasPrice;
    this.count(`${op.split(" ")[0]} ✓`);
    return receipt;
  }

  private nameOf(wallet: Wallet): string {
    const a = wallet.account.address;
    if (a === this.f.operator.account.address) return "operator";
    if (a === this.f.watchtower.account.address) return "watchtower";
    if (a === this.f.disputes.account.address) return "disputes";
    if (a === this.f.governance.account.address) return "governance";
    return a;
  }

  private phaseAt(ch: Channel, t: bigint): number {
    if (ch.status === "settled") return PHASE.None;
    if (ch.status === "open") return PHASE.Open;
    if (t < ch.finalizesAt) return PHASE.Closing;
    if (ch.cases !== 0 && t < ch.finalizesAt + MAX_FREEZE) return PHASE.Frozen;
    return PHASE.Finalizable;
  }

  private assetOf(kind: Kind): Address {
    return kind === "ETH" ? zeroAddress : this.f.token.address;
  }

  private async balances(): Promise<Record<Kind, Record<Party, bigint>>> {
    const read = async (kind: Kind, who: Address): Promise<bigint> =>
      kind === "ETH" ? this.f.publicClient.getBalance({ address: who }) : this.f.token.read.balanceOf([who]);
    const out = { ETH: {}, ERC20: {} } as Record<Kind, Record<Party, bigint>>;
    await Promise.all(
      KINDS.flatMap((kind) =>
        PARTIES.map(async (p) => {
          out[kind][p] = await read(kind, this.address[p]);
        }),
      ),
    );
    return out;
  }

  private live(): Channel[] {
    return this.slots.filter((c): c is Channel => c !== undefined && c.status !== "settled");
  }

  private settled(): Channel[] {
    return this.all.filter((c) => c.status === "settled");
  }

  private async signTicket(ch: Channel, seq: bigint, amount: bigint, signer = hardhatAccount(ROLE.payer)): Promise<TicketArg> {
    const receiptRoot = keccak256(toHex(`${ch.label} root ${seq} ${this.rng.int(0, 2 ** 30)}`));
    const signed = await signPaymentTicket({
      account: signer,
      domain: this.f.domain,
      ticket: { sessionId: ch.sessionId, provider: ch.ref.terms.provider, termsHash: ch.ref.terms.termsHash, seq, cumulativeAmount: amount, receiptRoot },
    });
    return { seq, cumulativeAmount: amount, receiptRoot, sig: toCompactSignature(signed.signature) };
  }

  private newest(ch: Channel): SignedTicket | undefined {
    return ch.tickets[ch.tickets.length - 1];
  }

  /** A ClosingState to submit: usually the recorded one, sometimes a stale or altered one. */
  private pickRecorded(ch: Channel, pCurrent: number): ClosingState {
    const current = ch.recorded;
    if (current === undefined) return ch.history.length ? this.rng.pick(ch.history) : DUMMY_STATE;
    if (this.rng.chance(pCurrent)) return current;
    const stale = ch.history.filter((s) => !sameState(s, current));
    if (stale.length && this.rng.chance(0.6)) return this.rng.pick(stale);
    const variant = this.rng.int(0, 2);
    if (variant === 0) return { ...current, amount: current.amount + 1n };
    if (variant === 1) return { ...current, deposit: current.deposit + 1n };
    return { ...current, feeBps: current.feeBps === 0 ? 1 : 0 };
  }

  private settle(ch: Channel, held: bigint, owed: bigint, mode: "Cooperative" | "Unilateral", finalSeq: bigint): Payout {
    const payout = split(held, owed, ch.feeBps);
    // Invariant 3 (split): the funder gets the deposit back less the provider's share and the fee.
    expect(payout.toFunder).to.equal(held - (payout.toProvider + payout.fee));
    expect(payout.toProvider + payout.fee).to.equal(min(owed, held));
    this.received[ch.kind].provider += payout.toProvider;
    this.received[ch.kind].funder += payout.toFunder;
    this.accrued[ch.kind] += payout.fee;
    ch.status = "settled";
    ch.payout = { ...payout, mode, finalSeq };
    this.log(`  settled ${ch.label} (${mode}): provider ${eth(payout.toProvider)}, fee ${eth(payout.fee)}, funder ${eth(payout.toFunder)}`);
    return payout;
  }

  /*------------------------------ invariants ------------------------------*/

  async checkInvariants(): Promise<void> {
    const f = this.f;
    expect(BigInt(await time.latest()), "model clock").to.equal(this.now);

    // 1. Solvency, exactly: Σ live deposits + accrued fees + claimable payouts, per asset.
    for (const kind of KINDS) {
      const asset = this.assetOf(kind);
      const held = this.all
        .filter((c) => c.kind === kind && c.status !== "settled")
        .reduce((sum, c) => sum + (c.status === "open" ? c.deposit : c.recorded!.deposit), 0n);
      const [balance, accrued, ...claimables] = await Promise.all([
        kind === "ETH" ? f.publicClient.getBalance({ address: f.escrow.address }) : f.token.read.balanceOf([f.escrow.address]),
        f.escrow.read.accruedFees([asset]),
        ...PARTIES.map((p) => f.escrow.read.claimableOf([asset, this.address[p]])),
      ]);
      // LaborGas never refuses a transfer, so nothing is ever deferred here (the blocklist scenarios are in
      // test/adversarial/payouts.test.ts); the sum still belongs in the equation.
      const claimable = claimables.reduce((a, b) => a + b, 0n);
      expect(claimable, `claimable ${kind}`).to.equal(0n);
      expect(accrued, `accruedFees(${kind})`).to.equal(this.accrued[kind]);
      expect(balance, `escrow ${kind} balance = Σ live deposits + accrued fees + claimables`).to.equal(held + accrued + claimable);
    }

    // 2. Every tracked party holds exactly its starting balance + what the model says it received − its gas.
    const now = await this.balances();
    for (const kind of KINDS) {
      for (const p of PARTIES) {
        const gas = kind === "ETH" ? this.gas[p] : 0n;
        const paidIn = p === "funder" ? this.openedByFunder[kind] : 0n;
        expect(now[kind][p], `${p} ${kind} balance`).to.equal(this.initial![kind][p] + this.received[kind][p] - gas - paidIn);
      }
    }

    // 4. Phases, deposits and closing records.
    await Promise.all(
      this.all.map(async (ch) => {
        const [phase, deposit] = await Promise.all([
          f.escrow.read.phaseOf([ch.sessionId]),
          f.escrow.read.depositOf([ch.sessionId]),
        ]);
        const expected = this.phaseAt(ch, this.now);
        expect(PHASE_NAME[phase], `phaseOf(${ch.label})`).to.equal(PHASE_NAME[expected]);
        expect(deposit, `depositOf(${ch.label})`).to.equal(ch.status === "open" ? ch.deposit : 0n);
        if (ch.status === "closing") {
          const info = await f.escrow.read.closingInfo([ch.sessionId, ch.recorded!]);
          expect([...info], `closingInfo(${ch.label})`).to.deep.equal([true, Number(ch.finalizesAt), ch.cases]);
        }
      }),
    );
  }

  /*------------------------------ operations ------------------------------*/

  private async opSetFee(): Promise<void> {
    const r = this.rng.next();
    const bps = r < 0.2 ? 0 : r < 0.75 ? this.rng.int(1, MAX_FEE_BPS) : r < 0.85 ? MAX_FEE_BPS : this.rng.int(MAX_FEE_BPS + 1, 5_000);
    const unauthorized = this.rng.chance(0.08);
    const sender = unauthorized ? this.f.operator : this.f.governance;
    const predicted = unauthorized ? "AccessControlUnauthorizedAccount" : bps > MAX_FEE_BPS ? "RoutingFeeTooHigh" : undefined;
    const ok = await this.tx(`setRoutingFee ${bps}bps`, sender, (account) =>
      this.f.escrow.write.setRoutingFee([bps, this.address.treasury], { account }), predicted);
    if (ok) this.feeBps = bps;
  }

  private async opOpen(slot: number): Promise<void> {
    const rng = this.rng;
    const kind: Kind = rng.chance(0.5) ? "ETH" : "ERC20";
    const asset = this.assetOf(kind);
    let duration = rng.chance(0.3) ? MIN_CHALLENGE + BigInt(rng.int(0, 5)) : BigInt(rng.chance(0.7) ? rng.int(60, 3_600) : rng.int(3_600, 2 * 86_400));
    let amount = rng.bigint(ETHER / 1000n, 5n * ETHER);
    let value = kind === "ETH" ? amount : 0n;
    const variant = rng.int(0, 11);
    if (variant === 0) {
      if (kind === "ETH") value = amount + (rng.chance(0.5) ? 1n : -1n);
      else value = 1n;
    } else if (variant === 1) {
      amount = 0n;
      value = 0n;
    } else if (variant === 2) {
      duration = rng.chance(0.5) ? MIN_CHALLENGE - 1n : MAX_CHALLENGE + 1n;
    }
    let predicted: string | undefined;
    if (duration < MIN_CHALLENGE || duration > MAX_CHALLENGE) predicted = "ChallengeDurationOutOfRange";
    else if (kind === "ETH" && value !== amount) predicted = "EthValueMismatch";
    else if (kind === "ERC20" && value !== 0n) predicted = "UnexpectedEth";
    else if (amount === 0n) predicted = "ZeroDeposit";

    const terms = makeTerms(asset, { nonce: ++this.nonce, challengeDuration: duration });
    const label = `c${slot}.${this.generations[slot]! + 1}/${kind}`;
    // Only the funder named in the terms may open (issue 12): it pays the deposit, booked against what it received.
    const receipt = await this.tx(
      `open ${label} ${eth(amount)} window ${duration}s fee ${this.feeBps}bps`,
      this.wallet.funder,
      (account) => this.f.escrow.write.open([terms, amount], { account, value }),
      predicted,
    );
    if (!receipt) return;
    this.openedByFunder[kind] += amount;
    const ref: ChannelRef = { terms, openedAt: receipt.blockNumber };
    const sessionId = sessionIdOf(this.f.domain, ref);
    expect(await this.f.escrow.read.sessionIdOf([terms, ref.openedAt])).to.equal(sessionId);
    const ch: Channel = {
      label, kind, asset, ref, sessionId,
      feeBps: this.feeBps,
      status: "open",
      deposit: amount,
      tickets: [],
      recorded: undefined,
      history: [],
      finalizesAt: 0n,
      cases: 0,
      refunds: 0n,
      submitted: [],
      payout: undefined,
    };
    this.generations[slot]! += 1;
    this.slots[slot] = ch;
    this.all.push(ch);
    this.totalIn[kind] += amount;
  }

  private async opDeposit(ch: Channel): Promise<void> {
    const rng = this.rng;
    let amount = rng.bigint(1n, 2n * ETHER);
    const held = ch.status === "open" ? ch.deposit : 0n;
    // The guard is the least this top-up must credit (0: none); it never depends on the channel's deposit.
    let expected = rng.chance(0.5) ? 0n : amount;
    let value = ch.kind === "ETH" ? amount : 0n;
    const variant = rng.int(0, 7);
    if (variant === 0) expected = amount + rng.bigint(1n, ETHER);
    else if (variant === 1) expected = held; // the old "expected deposit": now a minimum the top-up may not meet
    else if (variant === 2) {
      amount = 0n;
      value = 0n;
    } else if (variant === 3) value = ch.kind === "ETH" ? amount + 1n : 1n;
    let predicted: string | undefined;
    if (ch.status !== "open") predicted = "ChannelNotOpen";
    else if (ch.kind === "ETH" && value !== amount) predicted = "EthValueMismatch";
    else if (ch.kind === "ERC20" && value !== 0n) predicted = "UnexpectedEth";
    else if (amount === 0n) predicted = "ZeroDeposit";
    else if (amount < expected) predicted = "DepositBelowMinimum";
    const ok = await this.tx(
      `deposit ${ch.label} +${eth(amount)} expecting ${eth(expected)}`,
      this.f.operator,
      (account) => this.f.escrow.write.deposit([ch.ref.terms, ch.ref.openedAt, amount, expected], { account, value }),
      predicted,
    );
    if (!ok) return;
    ch.deposit += amount;
    this.totalIn[ch.kind] += amount;
  }

  /** Off-chain: the payer signs a newer ticket (seq up, cumulative amount never down, sometimes > deposit). */
  private async opSign(ch: Channel): Promise<void> {
    const rng = this.rng;
    const last = this.newest(ch);
    const held = ch.status === "open" ? ch.deposit : ch.recorded!.deposit;
    const seq = (last?.seq ?? 0n) + BigInt(rng.int(1, 3));
    let amount = (last?.cumulativeAmount ?? 0n) + (rng.chance(0.2) ? 0n : rng.bigint(1n, held / 3n + 1n));
    if (rng.chance(0.1) && amount <= held) amount = held + rng.bigint(1n, held);
    const ticket = await this.signTicket(ch, seq, amount);
    ch.tickets.push({ ...ticket, signedAt: this.now });
    this.log(`sign ${ch.label} seq ${seq} amount ${eth(amount)}${amount > held ? " (> deposit)" : ""}`);
    this.count("sign");
  }

  private async opCooperative(ch: Channel): Promise<void> {
    const rng = this.rng;
    const newest = this.newest(ch);
    const finalSeq = newest?.seq ?? 0n;
    let finalAmount = newest?.cumulativeAmount ?? 0n;
    const finalReceiptRoot = newest?.receiptRoot ?? zeroHash;
    const held = ch.status === "open" ? ch.deposit : 0n;
    // Parties usually agree to cap the summary at the deposit; sometimes they (wrongly) do not.
    if (finalAmount > held && rng.chance(0.5)) finalAmount = held;
    if (rng.chance(0.1)) finalAmount = held + rng.bigint(1n, ETHER);
    const forged = rng.chance(0.08);
    const summary: SettlementSummary = {
      sessionId: ch.sessionId,
      provider: ch.ref.terms.provider,
      payer: ch.ref.terms.payer,
      termsHash: ch.ref.terms.termsHash,
      finalSeq,
      finalAmount,
      finalReceiptRoot,
      mode: "Cooperative",
    };
    const payerSig = toCompactSignature(await signSettlementSummary({ account: hardhatAccount(ROLE.payer), domain: this.f.domain, summary }));
    const providerSig = toCompactSignature(
      await signSettlementSummary({ account: hardhatAccount(forged ? ROLE.stranger : ROLE.provider), domain: this.f.domain, summary }),
    );
    let predicted: string | undefined;
    if (ch.status !== "open") predicted = "ChannelNotOpen";
    else if (forged) predicted = "SignerMismatch";
    else if (finalAmount > ch.deposit) predicted = "AmountExceedsDeposit";
    const ok = await this.tx(
      `closeCooperative ${ch.label} seq ${finalSeq} amount ${eth(finalAmount)}${forged ? " (provider sig forged)" : ""}`,
      this.f.operator,
      (account) =>
        this.f.escrow.write.closeCooperative(
          [ch.ref.terms, ch.ref.openedAt, finalSeq, finalAmount, finalReceiptRoot, payerSig, providerSig],
          { account },
        ),
      predicted,
    );
    if (!ok) return;
    // Invariant 3 (cooperative): provider gets exactly min(summary, deposit) − fee.
    this.settle(ch, ch.deposit, finalAmount, "Cooperative", finalSeq);
  }

  /** A ticket to submit: a random signed one (possibly stale), the newest, none, a forged or a malformed one. */
  private async pickTicket(ch: Channel, pNewest: number): Promise<{ ticket: TicketArg; kind: string; forged: boolean }> {
    const rng = this.rng;
    const r = rng.next();
    if (ch.tickets.length && r < pNewest) return { ticket: this.newest(ch)!, kind: "newest", forged: false };
    if (ch.tickets.length && r < 0.8) return { ticket: rng.pick(ch.tickets), kind: "random", forged: false };
    if (r < 0.9) {
      const floor = max(this.newest(ch)?.cumulativeAmount ?? 0n, ch.recorded?.amount ?? 0n);
      const seq = max(this.newest(ch)?.seq ?? 0n, ch.recorded?.seq ?? 0n) + 1n;
      return { ticket: await this.signTicket(ch, seq, floor + rng.bigint(0n, ETHER), hardhatAccount(ROLE.stranger)), kind: "forged", forged: true };
    }
    if (r < 0.95 || !ch.tickets.length) return { ticket: NO_TICKET, kind: "none", forged: false };
    return {
      ticket: rng.chance(0.5) ? { ...NO_TICKET, cumulativeAmount: 1n } : { ...NO_TICKET, receiptRoot: keccak256(toHex("junk")) },
      kind: "malformed-empty",
      forged: false,
    };
  }

  private async opUnilateral(ch: Channel): Promise<void> {
    const rng = this.rng;
    const who = rng.weighted({ payer: 4, provider: 4, funder: 3, operator: 1 });
    const sender = who === "operator" ? this.f.operator : this.wallet[who];
    const { ticket, kind, forged } = await this.pickTicket(ch, 0.35);
    let predicted: string | undefined;
    if (ch.status !== "open") predicted = "ChannelNotOpen";
    else if (who === "operator") predicted = "NotAParty";
    else if (ticket.seq === 0n && (ticket.cumulativeAmount !== 0n || ticket.receiptRoot !== zeroHash)) predicted = "EmptyTicketNotZero";
    else if (forged) predicted = "UnauthorizedTicketSigner";
    const at = this.now + 1n;
    const ok = await this.tx(
      `closeUnilateral ${ch.label} with ${kind} ticket seq ${ticket.seq} amount ${eth(ticket.cumulativeAmount)}`,
      sender,
      (account) => this.f.escrow.write.closeUnilateral([ch.ref.terms, ch.ref.openedAt, ticket], { account }),
      predicted,
    );
    if (!ok) return;
    ch.status = "closing";
    ch.recorded = { deposit: ch.deposit, seq: ticket.seq, amount: ticket.cumulativeAmount, receiptRoot: ticket.receiptRoot, feeBps: ch.feeBps };
    ch.history.push(ch.recorded);
    ch.finalizesAt = at + ch.ref.terms.challengeDuration;
    ch.cases = 0;
    ch.submitted.push(ticket.seq);
  }

  private async opChallenge(ch: Channel): Promise<void> {
    const rng = this.rng;
    // The session usually went on after a stale close: the payer has signed something newer.
    if (ch.status === "closing" && (this.newest(ch)?.seq ?? 0n) <= ch.recorded!.seq && rng.chance(0.5)) await this.opSign(ch);
    const recorded = this.pickRecorded(ch, 0.85);
    const { ticket, kind, forged } = await this.pickTicket(ch, 0.5);
    const sender = rng.chance(0.5) ? this.f.watchtower : this.f.operator;
    const at = this.now + 1n;
    let predicted: string | undefined;
    if (ch.status !== "closing") predicted = "ChannelNotClosing";
    else if (!sameState(recorded, ch.recorded!)) predicted = "ClosingStateMismatch";
    else if (at >= ch.finalizesAt) predicted = "ChallengeWindowClosed";
    else if (ticket.cumulativeAmount < recorded.amount) predicted = "TicketAmountDecreased";
    else if (ticket.seq === 0n || ticket.cumulativeAmount === recorded.amount) predicted = "TicketNotNewer";
    else if (forged) predicted = "UnauthorizedTicketSigner";
    if (ch.status === "closing" && at === ch.finalizesAt - 1n) this.count("edge: challenge mined 1s before the window ends");
    if (ch.status === "closing" && at === ch.finalizesAt) this.count("edge: challenge mined at finalizesAt");
    const ok = await this.tx(
      `challenge ${ch.label} with ${kind} ticket seq ${ticket.seq} amount ${eth(ticket.cumulativeAmount)} (recorded seq ${recorded.seq}, window ends t+${ch.finalizesAt - this.t0})`,
      sender,
      (account) => this.f.escrow.write.challenge([ch.ref.terms, ch.ref.openedAt, recorded, ticket], { account }),
      predicted,
    );
    if (!ok) return;
    ch.recorded = { ...ch.recorded!, seq: ticket.seq, amount: ticket.cumulativeAmount, receiptRoot: ticket.receiptRoot };
    ch.history.push(ch.recorded);
    ch.submitted.push(ticket.seq);
  }

  private async opFreeze(ch: Channel): Promise<void> {
    // Now and then a burst: the dispute contract opens cases until the 16th is refused.
    if (ch.status === "closing" && this.now + 1n < ch.finalizesAt && this.rng.chance(0.06)) {
      this.count("freeze burst");
      for (let i = ch.cases; i <= MAX_CASES; i++) await this.freezeOnce(ch, ch.recorded!, false);
      return;
    }
    await this.freezeOnce(ch, this.pickRecorded(ch, 0.85), this.rng.chance(0.05));
  }

  private async freezeOnce(ch: Channel, recorded: ClosingState, unauthorized: boolean): Promise<void> {
    let predicted: string | undefined;
    if (unauthorized) predicted = "AccessControlUnauthorizedAccount";
    else if (ch.status !== "closing") predicted = "ChannelNotClosing";
    else if (!sameState(recorded, ch.recorded!)) predicted = "ClosingStateMismatch";
    else if (this.now + 1n >= ch.finalizesAt) predicted = "ChallengeWindowClosed";
    else if (ch.cases === MAX_CASES) predicted = "TooManyOpenCases";
    if (ch.status === "closing" && this.now + 1n === ch.finalizesAt - 1n) this.count("edge: freeze mined 1s before the window ends");
    if (ch.status === "closing" && this.now + 1n === ch.finalizesAt) this.count("edge: freeze mined at finalizesAt");
    const ok = await this.tx(
      `freeze ${ch.label} (cases ${ch.cases})`,
      unauthorized ? this.f.operator : this.f.disputes,
      (account) => this.f.escrow.write.freeze([ch.sessionId, recorded], { account }),
      predicted,
    );
    if (!ok) return;
    ch.cases += 1;
  }

  private async opRelease(ch: Channel): Promise<void> {
    const rng = this.rng;
    const recorded = this.pickRecorded(ch, 0.85);
    const r = rng.next();
    const base = ch.recorded?.amount ?? ETHER;
    const refund = r < 0.4 ? 0n : r < 0.85 ? rng.bigint(1n, base / 2n + 1n) : rng.bigint(base, base * 2n + 1n);
    let predicted: string | undefined;
    if (ch.status === "open") predicted = "ChannelNotClosing";
    else if (ch.status === "closing" && !sameState(recorded, ch.recorded!)) predicted = "ClosingStateMismatch";
    else if (ch.status === "closing" && ch.cases === 0) predicted = "ChannelNotFrozen";
    if (ch.status === "settled") {
      this.count("release on a settled channel (no-op, returns false)");
      // Settled meanwhile: release is a no-op that reports `false`.
      const { result } = await this.f.escrow.simulate.release([ch.sessionId, recorded, refund], { account: this.f.disputes.account.address });
      expect(result, "release on a settled channel").to.equal(false);
    }
    const at = this.now + 1n;
    const ok = await this.tx(
      `release ${ch.label} refund ${eth(refund)} (cases ${ch.cases})`,
      this.f.disputes,
      (account) => this.f.escrow.write.release([ch.sessionId, recorded, refund], { account }),
      predicted,
    );
    if (!ok || ch.status === "settled") return;
    const state = ch.recorded!;
    ch.cases -= 1;
    let taken = 0n;
    if (refund !== 0n) {
      // The refund comes off what the provider would be paid (recorded amount capped at the deposit), so
      // every refunded unit goes back to the funder; it also ends the challenge window.
      const earned = min(state.amount, state.deposit);
      taken = min(refund, earned);
      ch.recorded = { ...state, amount: earned - taken };
      ch.history.push(ch.recorded);
      ch.refunds += refund;
      if (ch.finalizesAt > at) ch.finalizesAt = at;
      if (taken < refund) this.count("release: refund larger than the provider's earnings");
    }
    const [event] = parseEventLogs({ abi: this.f.escrow.abi, logs: ok.logs, eventName: "ChannelReleased" });
    expect([event?.args.openCases, event?.args.refund, event?.args.amount], "ChannelReleased").to.deep.equal([
      ch.cases,
      taken,
      ch.recorded!.amount,
    ]);
  }

  private async opFinalize(ch: Channel): Promise<void> {
    const recorded = this.pickRecorded(ch, 0.9);
    const at = this.now + 1n;
    let predicted: string | undefined;
    if (ch.status !== "closing") predicted = "ChannelNotClosing";
    else if (!sameState(recorded, ch.recorded!)) predicted = "ClosingStateMismatch";
    else if (at < ch.finalizesAt) predicted = "ChallengeWindowOpen";
    else if (ch.cases !== 0 && at < ch.finalizesAt + MAX_FREEZE) predicted = "FrozenByDispute";
    if (ch.status === "closing" && at === ch.finalizesAt - 1n) this.count("edge: finalize mined 1s before the window ends");
    if (ch.status === "closing" && at === ch.finalizesAt) this.count("edge: finalize mined at finalizesAt");
    if (ch.status === "closing" && ch.cases && at === ch.finalizesAt + MAX_FREEZE) this.count("edge: finalize mined as the freeze expires");
    const ok = await this.tx(
      `finalize ${ch.label} (recorded seq ${recorded.seq} amount ${eth(recorded.amount)}, window ends t+${ch.finalizesAt - this.t0}, cases ${ch.cases})`,
      this.f.operator,
      (account) => this.f.escrow.write.finalize([ch.ref.terms, ch.ref.openedAt, recorded], { account }),
      predicted,
    );
    if (!ok) return;
    this.checkNewestTicketWins(ch);
    this.settle(ch, ch.recorded!.deposit, ch.recorded!.amount, "Unilateral", ch.recorded!.seq);
  }

  /**
   * Invariant 3 (unilateral), computed from the tickets rather than from the recorded state: the recorded
   * ticket is the highest-seq one submitted, and if the newest ticket the payer signed before the window
   * ended was submitted, the provider is paid from that newest ticket.
   */
  private checkNewestTicketWins(ch: Channel): void {
    const state = ch.recorded!;
    const highestSubmitted = ch.submitted.reduce(max, 0n);
    expect(state.seq, `${ch.label}: recorded seq is the highest submitted`).to.equal(highestSubmitted);
    const eligible = ch.tickets.filter((t) => t.signedAt < ch.finalizesAt);
    const newest = eligible[eligible.length - 1];
    if (!newest || !ch.submitted.includes(newest.seq)) {
      this.count("finalize: newest ticket not submitted");
      return;
    }
    this.count("finalize: newest ticket submitted");
    const deposit = state.deposit;
    // Refunds all came after the newest ticket was recorded (a refund ends the window), each off the
    // capped amount: max(0, min(min(a, d) − r1, d) − r2 …) = max(0, min(a, d) − Σr).
    const gross = max(0n, min(newest.cumulativeAmount, deposit) - ch.refunds);
    const fee = (gross * BigInt(ch.feeBps)) / 10_000n;
    const predicted = split(state.deposit, state.amount, ch.feeBps);
    expect(predicted.toProvider, `${ch.label}: provider paid from the newest ticket (seq ${newest.seq})`).to.equal(gross - fee);
  }

  private async opTime(): Promise<void> {
    const rng = this.rng;
    const closing = this.all.filter((c) => c.status === "closing");
    const frozen = closing.filter((c) => c.cases > 0);
    const kind = rng.weighted({ small: 8, edge: closing.length ? 5 : 0, large: 2, freezeExpiry: frozen.length ? 1 : 0 });
    let by = 0n;
    let edge: Channel | undefined;
    if (kind === "edge") {
      // Land so that the next transaction is mined one second before, at, or one second after the window end.
      edge = rng.pick(closing);
      by = edge.finalizesAt + BigInt(rng.int(-2, 0)) - this.now;
    } else if (kind === "freezeExpiry") {
      edge = rng.pick(frozen);
      by = edge.finalizesAt + MAX_FREEZE + BigInt(rng.int(-2, 0)) - this.now;
    } else if (kind === "large") {
      by = BigInt(rng.int(3_600, 3 * 86_400));
    }
    if (by < 1n) {
      by = BigInt(rng.int(1, 90));
      edge = undefined;
    }
    this.log(`time +${by}s (${kind})`);
    await time.increase(by);
    this.now += by;
    this.count(`time ${kind}`);
    // …and act on that channel right at the edge.
    if (edge) {
      const act = kind === "edge" ? rng.weighted({ challenge: 4, finalize: 4, freeze: 2 }) : "finalize";
      await (act === "challenge" ? this.opChallenge(edge) : act === "freeze" ? this.opFreeze(edge) : this.opFinalize(edge));
    }
  }

  private async opWithdrawFees(): Promise<void> {
    const kind: Kind = this.rng.chance(0.5) ? "ETH" : "ERC20";
    const ok = await this.tx(`withdrawFees ${kind} (${eth(this.accrued[kind])})`, this.f.operator, (account) =>
      this.f.escrow.write.withdrawFees([this.assetOf(kind)], { account }), undefined);
    if (!ok) return;
    this.received[kind].treasury += this.accrued[kind];
    this.accrued[kind] = 0n;
  }

  /*------------------------------ driver ------------------------------*/

  private pickChannel(): Channel | undefined {
    const settled = this.settled();
    const live = this.live();
    if (settled.length && (live.length === 0 || this.rng.chance(0.08))) return this.rng.pick(settled);
    return live.length ? this.rng.pick(live) : undefined;
  }

  async start(): Promise<void> {
    this.now = BigInt(await time.latest());
    this.t0 = this.now;
    this.startBlock = await this.f.publicClient.getBlockNumber();
    this.initial = await this.balances();
    if (this.rng.chance(0.6)) await this.opSetFee();
  }

  async randomStep(): Promise<void> {
    this.step += 1;
    const rng = this.rng;
    const free = this.slots.map((c, i) => (c === undefined || c.status === "settled" ? i : -1)).filter((i) => i >= 0);
    const any = this.all.length > 0;
    const global = rng.weighted({
      channel: any ? 72 : 0,
      open: free.length ? 3 + 4 * free.length : 0,
      time: 14,
      fee: 3,
      withdraw: any ? 2 : 0,
    });
    if (global === "open") return this.opOpen(rng.pick(free));
    if (global === "time") return this.opTime();
    if (global === "fee") return this.opSetFee();
    if (global === "withdraw") return this.opWithdrawFees();
    const ch = this.pickChannel()!;
    // Mostly operations that make sense in the channel's phase, but every operation stays possible.
    const at = this.now + 1n;
    const op =
      ch.status === "open"
        ? rng.weighted({ sign: 30, deposit: 10, cooperative: 5, unilateral: 14, challenge: 2, freeze: 2, release: 1, finalize: 2 })
        : ch.status === "closing"
          ? at < ch.finalizesAt
            ? rng.weighted({ sign: 15, challenge: 30, freeze: 10, release: ch.cases ? 10 : 2, finalize: 3, deposit: 1, cooperative: 1, unilateral: 1 })
            : rng.weighted({ sign: 3, challenge: 4, freeze: 3, release: ch.cases ? 14 : 2, finalize: 20, deposit: 1, cooperative: 1, unilateral: 1 })
          : rng.weighted({ deposit: 1, cooperative: 1, unilateral: 1, challenge: 1, freeze: 1, release: 1, finalize: 2 });
    switch (op) {
      case "sign":
        return this.opSign(ch);
      case "deposit":
        return this.opDeposit(ch);
      case "cooperative":
        return this.opCooperative(ch);
      case "unilateral":
        return this.opUnilateral(ch);
      case "challenge":
        return this.opChallenge(ch);
      case "freeze":
        return this.opFreeze(ch);
      case "release":
        return this.opRelease(ch);
      case "finalize":
        return this.opFinalize(ch);
    }
  }

  /**
   * Settles everything that is left (unilateral close by the provider with its newest ticket, then past every
   * window and freeze, finalize), withdraws the fees, and checks that the escrow is empty, that every channel
   * paid exactly once and that the payouts add up to what went in.
   */
  async drain(): Promise<void> {
    this.step += 1;
    this.log("— drain —");
    this.draining = true;
    for (const ch of this.all.filter((c) => c.status === "open")) {
      const ticket = this.newest(ch) ?? NO_TICKET;
      await this.tx(`closeUnilateral ${ch.label} with newest ticket seq ${ticket.seq}`, this.wallet.provider, (account) =>
        this.f.escrow.write.closeUnilateral([ch.ref.terms, ch.ref.openedAt, ticket], { account }), undefined);
      ch.status = "closing";
      ch.recorded = { deposit: ch.deposit, seq: ticket.seq, amount: ticket.cumulativeAmount, receiptRoot: ticket.receiptRoot, feeBps: ch.feeBps };
      ch.history.push(ch.recorded);
      ch.finalizesAt = this.now + ch.ref.terms.challengeDuration;
      ch.submitted.push(ticket.seq);
      await this.checkInvariants();
    }
    const closing = this.all.filter((c) => c.status === "closing");
    const until = closing.reduce((t, c) => max(t, c.finalizesAt + (c.cases ? MAX_FREEZE : 0n)), 0n);
    if (until > this.now) {
      await time.increase(until - this.now);
      this.now = until;
    }
    for (const ch of closing) {
      await this.opFinalizeExactly(ch);
      await this.checkInvariants();
    }
    // Nothing pays twice: every channel refuses every further settlement.
    for (const ch of this.all) {
      const recorded = ch.recorded ?? DUMMY_STATE;
      await this.tx(`finalize ${ch.label} again`, this.f.operator, (account) =>
        this.f.escrow.write.finalize([ch.ref.terms, ch.ref.openedAt, recorded], { account }), "ChannelNotClosing");
      await this.tx(`closeUnilateral ${ch.label} again`, this.wallet.payer, (account) =>
        this.f.escrow.write.closeUnilateral([ch.ref.terms, ch.ref.openedAt, NO_TICKET], { account }), "ChannelNotOpen");
    }
    for (const kind of KINDS) {
      await this.tx(`withdrawFees ${kind}`, this.f.operator, (account) =>
        this.f.escrow.write.withdrawFees([this.assetOf(kind)], { account }), undefined);
      this.received[kind].treasury += this.accrued[kind];
      this.accrued[kind] = 0n;
    }
    await this.checkInvariants();
    expect(await this.f.publicClient.getBalance({ address: this.f.escrow.address }), "escrow ETH after drain").to.equal(0n);
    expect(await this.f.token.read.balanceOf([this.f.escrow.address]), "escrow LGAS after drain").to.equal(0n);
    for (const kind of KINDS) {
      const out = this.received[kind].provider + this.received[kind].funder + this.received[kind].treasury;
      expect(out, `${kind}: everything deposited was paid out exactly once`).to.equal(this.totalIn[kind]);
      expect(this.received[kind].payer, `${kind}: the payer is never paid`).to.equal(0n);
    }
    // One ChannelSettled per channel, with the model's figures.
    const events = await this.f.publicClient.getContractEvents({
      address: this.f.escrow.address,
      abi: this.f.escrow.abi,
      eventName: "ChannelSettled",
      fromBlock: this.startBlock + 1n,
    });
    expect(events.length, "ChannelSettled events").to.equal(this.all.length);
    for (const ch of this.all) {
      const mine = events.filter((e) => e.args.sessionId === ch.sessionId);
      expect(mine.length, `${ch.label} settled once`).to.equal(1);
      const { args } = mine[0]!;
      const p = ch.payout!;
      expect(
        [args.mode, args.finalSeq, args.paidToProvider, args.refundedToFunder, args.fee],
        `${ch.label} ChannelSettled`,
      ).to.deep.equal([p.mode === "Cooperative" ? 0 : 1, p.finalSeq, p.toProvider, p.toFunder, p.fee]);
    }
  }

  private async opFinalizeExactly(ch: Channel): Promise<void> {
    const state = ch.recorded!;
    await this.tx(`finalize ${ch.label}`, this.f.operator, (account) =>
      this.f.escrow.write.finalize([ch.ref.terms, ch.ref.openedAt, state], { account }), undefined);
    this.checkNewestTicketWins(ch);
    this.settle(ch, state.deposit, state.amount, "Unilateral", state.seq);
  }

  summary(): string {
    const byKind = KINDS.map((k) => `${k} in ${eth(this.totalIn[k])}`).join(", ");
    return `${this.all.length} channels over ${this.slots.length} slots, ${byKind}`;
  }
}

/*//////////////////////////////////////////////////////////////
                                 TESTS
//////////////////////////////////////////////////////////////*/

describe(`GasEscrow model-based properties (${SEEDS.length} seeds × ${STEPS} steps)`, function () {
  const totals: Stats = {};

  after(function () {
    if (process.env.PROPERTY_VERBOSE === "1") {
      const lines = Object.entries(totals).sort(([a], [b]) => a.localeCompare(b));
      console.log(`\n    operation outcomes over all seeds:\n${lines.map(([k, v]) => `      ${String(v).padStart(4)}  ${k}`).join("\n")}`);
    }
  });

  for (const seed of SEEDS) {
    it(`seed ${seed}: ${STEPS} random operations, invariants after every step, then drain`, async function () {
      const f = await loadFixture(propertyFixture);
      const run = new Run(f, mulberry32(seed));
      try {
        await run.start();
        await run.checkInvariants();
        for (let i = 0; i < STEPS; i++) {
          await run.randomStep();
          await run.checkInvariants();
        }
        await run.drain();
      } catch (error) {
        const tail = run.trace.slice(-TRACE_TAIL).join("\n      ");
        const hint = `\n    seed ${seed} (reproduce: PROPERTY_SEEDS=${seed} PROPERTY_STEPS=${STEPS}); last steps:\n      ${tail}`;
        console.log(hint);
        if (error instanceof Error) {
          error.message = `seed ${seed}, step ${run.stepNumber}: ${error.message}`;
          throw error;
        }
        throw new Error(`${String(error)}${hint}`);
      } finally {
        for (const [k, v] of Object.entries(run.stats)) totals[k] = (totals[k] ?? 0) + v;
      }
      if (process.env.PROPERTY_VERBOSE === "1") console.log(`      seed ${seed}: ${run.summary()}`);
    });
  }
});
