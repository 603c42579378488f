import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import {
  encodeFunctionData,
  getAddress,
  keccak256,
  maxUint256,
  parseEther,
  parseEventLogs,
  stringToBytes,
  toFunctionSelector,
  zeroAddress,
  zeroHash,
  type Abi,
  type Address,
  type Hash,
  type Hex,
  type TransactionReceipt,
  toHex,
} from "viem";

import { GIG_MIN_PROVIDER_BOND, PROVIDER_ROLE_ID, TOKEN_SUPPLY, gigFixture, registerProvider } from "../helpers/fixtures";
import { mulberry32, type Prng } from "../helpers/prng";
import { expectRevert } from "../helpers/revert";
import {
  ARBITRATOR_ROLE,
  DISPUTE_PARAMS,
  ETH_STAKE_RATE,
  ETH_TERMS,
  KIND as CASE_KIND,
  MIN_PROVIDER_BOND,
  STATUS as CASE,
  SYS,
  TOKEN_STAKE_RATE,
  TOKEN_TERMS,
  VERDICT,
  keyOf,
  quorumSignatures,
  supermajority,
  systemFixture,
} from "../helpers/system";

/*//////////////////////////////////////////////////////////////
                              CONSTANTS
//////////////////////////////////////////////////////////////*/

const KINDS = ["ETH", "ERC20"] as const;
type Kind = (typeof KINDS)[number];

/** `IGigEscrow.Status` as the ABI carries it. */
const STATUS = { None: 0, Funded: 1, Accepted: 2, Delivered: 3, Disputed: 4, Released: 5, Refunded: 6 } as const;
type StatusName = keyof typeof STATUS;

const AMOUNT = parseEther("2");
const ICS: Hex = keccak256(stringToBytes('{"intent":"translate 10k words","maxPrice":"2","rubric":"v1"}'));
const DELIVERABLE: Hex = keccak256(stringToBytes("deliverable: translation.md"));
const ROOT: Hex = keccak256(stringToBytes("receipt root"));
const WINDOW = 3600;
const DEADLINE_IN = 7 * 86_400;
const MIN_WINDOW = 60;
const MAX_WINDOW = 30 * 86_400;
const MAX_DEADLINE = 365 * 86_400;
const MAX_FREEZE = 180 * 86_400;
const MAX_UINT128 = 2n ** 128n - 1n;
const DISPUTE_ROLE: Hex = keccak256(stringToBytes("DISPUTE_ROLE"));
/** solady's `Reentrancy()`, raised from assembly. */
const REENTRANCY_SELECTOR: Hex = "0xab143c06";
/** The GigEscrow's ABI, to decode its errors when a deployment or another contract's call reverts. */
const GIG_ABI = hre.artifacts.readArtifactSync("GigEscrow").abi as Abi;

/*//////////////////////////////////////////////////////////////
                              FIXTURES
//////////////////////////////////////////////////////////////*/

type Ctx = Awaited<ReturnType<typeof gigFixture>>;
type Wallet = Ctx["client"];

/** Everything that differs between a native-ETH and an ERC-20 gig. */
function assetSpec(kind: Kind, c: Ctx) {
  const asset: Address = kind === "ETH" ? zeroAddress : getAddress(c.token.address);
  return {
    kind,
    asset,
    /** The `msg.value` that funds `amount` correctly. */
    value: (amount: bigint): bigint => (kind === "ETH" ? amount : 0n),
    balanceOf: (who: Address): Promise<bigint> =>
      kind === "ETH" ? c.publicClient.getBalance({ address: who }) : c.token.read.balanceOf([who]),
  };
}
type Spec = ReturnType<typeof assetSpec>;

type FundArgs = { provider: Address; asset: Address; amount: bigint; icsHash: Hex; deadline: number; disputeWindow: number };

/** Fund arguments naming the fixture's provider, due DEADLINE_IN from the latest block. */
async function argsFor(c: Ctx, spec: Spec, overrides: Partial<FundArgs> = {}): Promise<FundArgs> {
  return {
    provider: getAddress(c.provider.account.address),
    asset: spec.asset,
    amount: AMOUNT,
    icsHash: ICS,
    deadline: (await time.latest()) + DEADLINE_IN,
    disputeWindow: WINDOW,
    ...overrides,
  };
}

function sendFund(c: Ctx, args: FundArgs, options: { from?: Wallet; value?: bigint } = {}): Promise<Hash> {
  return c.gig.write.fund([args.provider, args.asset, args.amount, args.icsHash, args.deadline, args.disputeWindow], {
    account: (options.from ?? c.client).account,
    value: options.value ?? (args.asset === zeroAddress ? args.amount : 0n),
  });
}

async function mined(c: Ctx, hash: Hash): Promise<TransactionReceipt> {
  const receipt = await c.publicClient.waitForTransactionReceipt({ hash });
  expect(receipt.status).to.equal("success");
  return receipt;
}

async function blockTime(c: Ctx, receipt: TransactionReceipt): Promise<number> {
  return Number((await c.publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp);
}

/** The names of the events the gig escrow emitted in `receipt`, in order. */
function gigEventNames(c: Ctx, receipt: TransactionReceipt): string[] {
  const logs = receipt.logs.filter((l) => getAddress(l.address) === getAddress(c.gig.address));
  return parseEventLogs({ abi: c.gig.abi, logs }).map((e) => e.eventName);
}

function gigIdFrom(c: Ctx, receipt: TransactionReceipt): bigint {
  const funded = parseEventLogs({ abi: c.gig.abi, eventName: "GigFunded", logs: receipt.logs });
  expect(funded).to.have.length(1);
  return funded[0]!.args.gigId;
}

function settledOf(c: Ctx, receipt: TransactionReceipt) {
  return parseEventLogs({ abi: c.gig.abi, eventName: "GigSettled", logs: receipt.logs }).map((e) => e.args);
}

const addressOf = (w: Wallet): Address => getAddress(w.account.address);

async function fundedGig(kind: Kind, open = false) {
  const c = await gigFixture();
  const spec = assetSpec(kind, c);
  const args = await argsFor(c, spec, open ? { provider: zeroAddress } : {});
  const receipt = await mined(c, await sendFund(c, args));
  return { ...c, spec, args, gigId: gigIdFrom(c, receipt), deadline: args.deadline, fundedAt: await blockTime(c, receipt) };
}
type Gig = Awaited<ReturnType<typeof fundedGig>>;

async function acceptedGig(kind: Kind) {
  const g = await fundedGig(kind);
  await mined(g, await g.gig.write.accept([g.gigId], { account: g.provider.account }));
  return g;
}

async function deliveredGig(kind: Kind) {
  const g = await acceptedGig(kind);
  const receipt = await mined(g, await g.gig.write.deliver([g.gigId, DELIVERABLE, ROOT], { account: g.provider.account }));
  const [delivered] = parseEventLogs({ abi: g.gig.abi, eventName: "GigDelivered", logs: receipt.logs });
  return { ...g, windowEndsAt: delivered!.args.windowEndsAt, deliveredAt: await blockTime(g, receipt) };
}

async function disputedGig(kind: Kind) {
  const g = await deliveredGig(kind);
  const receipt = await mined(g, await g.gig.write.freeze([g.gigId], { account: g.disputes.account }));
  return { ...g, frozenAt: await blockTime(g, receipt) };
}

async function releasedGig(kind: Kind) {
  const g = await deliveredGig(kind);
  await mined(g, await g.gig.write.acceptDelivery([g.gigId], { account: g.client.account }));
  return g;
}

async function refundedGig(kind: Kind) {
  const g = await fundedGig(kind);
  await mined(g, await g.gig.write.cancel([g.gigId], { account: g.client.account }));
  return g;
}

/** One named fixture per asset kind (loadFixture snapshots by function identity and refuses anonymous ones). */
function perKind<T>(name: string, make: (kind: Kind) => Promise<T>): Record<Kind, () => Promise<T>> {
  const out = {} as Record<Kind, () => Promise<T>>;
  for (const kind of KINDS) {
    const fixture = () => make(kind);
    Object.defineProperty(fixture, "name", { value: `${name}${kind}Gig` });
    out[kind] = fixture;
  }
  return out;
}

const FUNDED = perKind("funded", (kind) => fundedGig(kind));
const OPEN = perKind("open", (kind) => fundedGig(kind, true));
const ACCEPTED = perKind("accepted", acceptedGig);
const DELIVERED = perKind("delivered", deliveredGig);
const DISPUTED = perKind("disputed", disputedGig);
const RELEASED = perKind("released", releasedGig);
const REFUNDED = perKind("refunded", refundedGig);

/** A fixture per status a gig can be in. */
const AT_STATUS: Record<Exclude<StatusName, "None">, Record<Kind, () => Promise<Gig>>> = {
  Funded: FUNDED,
  Accepted: ACCEPTED,
  Delivered: DELIVERED,
  Disputed: DISPUTED,
  Released: RELEASED,
  Refunded: REFUNDED,
};

type Deltas = { client: bigint; provider: bigint; otherProvider: bigint; escrow: bigint };
const NOTHING_MOVED: Deltas = { client: 0n, provider: 0n, otherProvider: 0n, escrow: 0n };

/**
 * Sends a transaction and returns each account's balance change in the gig's asset, with the gas its sender
 * paid added back (ETH), so the deltas are exactly what the escrow moved.
 */
async function withDeltas(g: Gig, send: () => Promise<Hash>) {
  const who: Record<keyof Deltas, Address> = {
    client: addressOf(g.client),
    provider: addressOf(g.provider),
    otherProvider: addressOf(g.otherProvider),
    escrow: getAddress(g.gig.address),
  };
  const names = Object.keys(who) as (keyof Deltas)[];
  const before = await Promise.all(names.map((n) => g.spec.balanceOf(who[n])));
  const receipt = await mined(g, await send());
  const after = await Promise.all(names.map((n) => g.spec.balanceOf(who[n])));
  const gas = g.spec.kind === "ETH" ? receipt.gasUsed * receipt.effectiveGasPrice : 0n;
  const deltas = Object.fromEntries(
    names.map((n, i) => [n, after[i]! - before[i]! + (who[n] === getAddress(receipt.from) ? gas : 0n)]),
  ) as Deltas;
  return { receipt, deltas };
}

/** Invariant: the escrow holds exactly the amounts of its gigs that are not final. */
async function expectHolds(g: Gig, live: bigint): Promise<void> {
  expect(await g.spec.balanceOf(g.gig.address), "escrow balance").to.equal(live);
}

async function statusOf(g: Gig, gigId = g.gigId): Promise<number> {
  return (await g.gig.read.gigOf([gigId])).status;
}

/*//////////////////////////////////////////////////////////////
                              THE SUITE
//////////////////////////////////////////////////////////////*/

describe("GigEscrow", () => {
  describe("deployment and roles", () => {
    it("records the registry, the constants and the admin; no gig exists yet", async () => {
      const c = await loadFixture(gigFixture);
      expect(await c.gig.read.registry()).to.equal(getAddress(c.registry.address));
      expect(await c.gig.read.DISPUTE_ROLE()).to.equal(DISPUTE_ROLE);
      expect(await c.gig.read.MIN_DISPUTE_WINDOW()).to.equal(MIN_WINDOW);
      expect(await c.gig.read.MAX_DISPUTE_WINDOW()).to.equal(MAX_WINDOW);
      expect(await c.gig.read.MAX_DEADLINE()).to.equal(BigInt(MAX_DEADLINE));
      expect(await c.gig.read.MAX_FREEZE_DURATION()).to.equal(BigInt(MAX_FREEZE));
      expect(await c.gig.read.hasRole([zeroHash, addressOf(c.governance)])).to.equal(true);
      expect(await c.gig.read.hasRole([DISPUTE_ROLE, addressOf(c.governance)])).to.equal(false);
      expect(await c.gig.read.hasRole([DISPUTE_ROLE, addressOf(c.disputes)])).to.equal(true);
      expect(await c.gig.read.gigCount()).to.equal(0n);
      expect(await c.gig.read.gigOf([1n])).to.deep.equal({
        client: zeroAddress,
        deadline: 0,
        disputeWindow: 0,
        status: STATUS.None,
        provider: zeroAddress,
        windowEndsAt: 0,
        frozenAt: 0,
        asset: zeroAddress,
        amount: 0n,
        icsHash: zeroHash,
        deliverableHash: zeroHash,
        receiptRoot: zeroHash,
      });
    });

    it("refuses a zero governance or registry with ZeroAddress", async () => {
      const c = await loadFixture(gigFixture);
      await expectRevert(hre.viem.deployContract("GigEscrow", [zeroAddress, c.registry.address]), "ZeroAddress", [], GIG_ABI);
      await expectRevert(hre.viem.deployContract("GigEscrow", [addressOf(c.governance), zeroAddress]), "ZeroAddress", [], GIG_ABI);
    });

    it("lets only the admin grant DISPUTE_ROLE; a revoked holder can no longer freeze", async () => {
      const g = await loadFixture(DELIVERED.ETH);
      await expectRevert(
        g.gig.write.grantRole([DISPUTE_ROLE, addressOf(g.stranger)], { account: g.stranger.account }),
        "AccessControlUnauthorizedAccount",
        [addressOf(g.stranger), zeroHash],
      );
      await mined(g, await g.gig.write.revokeRole([DISPUTE_ROLE, addressOf(g.disputes)], { account: g.governance.account }));
      await expectRevert(
        g.gig.write.freeze([g.gigId], { account: g.disputes.account }),
        "AccessControlUnauthorizedAccount",
        [addressOf(g.disputes), DISPUTE_ROLE],
      );
      await mined(g, await g.gig.write.grantRole([DISPUTE_ROLE, addressOf(g.stranger)], { account: g.governance.account }));
      await mined(g, await g.gig.write.freeze([g.gigId], { account: g.stranger.account }));
      expect(await statusOf(g)).to.equal(STATUS.Disputed);
    });

    for (const who of ["client", "provider", "stranger", "governance"] as const) {
      it(`refuses freeze and resolve from the ${who} (no DISPUTE_ROLE)`, async () => {
        const g = await loadFixture(DELIVERED.ETH);
        const wallet = g[who];
        await expectRevert(g.gig.write.freeze([g.gigId], { account: wallet.account }), "AccessControlUnauthorizedAccount", [
          addressOf(wallet),
          DISPUTE_ROLE,
        ]);
        await mined(g, await g.gig.write.freeze([g.gigId], { account: g.disputes.account }));
        await expectRevert(g.gig.write.resolve([g.gigId, 0n], { account: wallet.account }), "AccessControlUnauthorizedAccount", [
          addressOf(wallet),
          DISPUTE_ROLE,
        ]);
        expect(await statusOf(g)).to.equal(STATUS.Disputed);
      });
    }
  });

  for (const kind of KINDS) {
    describe(kind, () => {
      /*////////////////////////////// fund //////////////////////////////*/
      describe("fund", () => {
        it("escrows the amount for a named provider: returns and emits the id, stores the gig, exact balances", async () => {
          const c = await loadFixture(gigFixture);
          const spec = assetSpec(kind, c);
          const args = await argsFor(c, spec);
          const { result } = await c.gig.simulate.fund(
            [args.provider, args.asset, args.amount, args.icsHash, args.deadline, args.disputeWindow],
            { account: c.client.account.address, value: spec.value(AMOUNT) },
          );
          expect(result).to.equal(1n);
          const g: Gig = { ...c, spec, args, gigId: 1n, deadline: args.deadline, fundedAt: 0 };
          const { receipt, deltas } = await withDeltas(g, () => sendFund(c, args));

          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, client: -AMOUNT, escrow: AMOUNT });
          expect(gigEventNames(c, receipt)).to.deep.equal(["GigFunded"]);
          const [funded] = parseEventLogs({ abi: c.gig.abi, eventName: "GigFunded", logs: receipt.logs });
          expect(funded!.args).to.deep.equal({
            gigId: 1n,
            client: addressOf(c.client),
            provider: args.provider,
            asset: spec.asset,
            amount: AMOUNT,
            icsHash: ICS,
            deadline: args.deadline,
            disputeWindow: WINDOW,
          });
          expect(await c.gig.read.gigOf([1n])).to.deep.equal({
            client: addressOf(c.client),
            deadline: args.deadline,
            disputeWindow: WINDOW,
            status: STATUS.Funded,
            provider: args.provider,
            windowEndsAt: 0,
            frozenAt: 0,
            asset: spec.asset,
            amount: AMOUNT,
            icsHash: ICS,
            deliverableHash: zeroHash,
            receiptRoot: zeroHash,
          });
          expect(await c.gig.read.gigCount()).to.equal(1n);
        });

        it("funds an open gig (no provider named)", async () => {
          const g = await loadFixture(OPEN[kind]);
          const stored = await g.gig.read.gigOf([g.gigId]);
          expect([stored.provider, stored.status, stored.amount]).to.deep.equal([zeroAddress, STATUS.Funded, AMOUNT]);
          await expectHolds(g, AMOUNT);
        });

        it("numbers gigs 1, 2, 3 and keeps their amounts apart", async () => {
          const c = await loadFixture(gigFixture);
          const spec = assetSpec(kind, c);
          const amounts = [AMOUNT, 1n, parseEther("0.5")];
          for (const [i, amount] of amounts.entries()) {
            const receipt = await mined(c, await sendFund(c, await argsFor(c, spec, { amount })));
            expect(gigIdFrom(c, receipt)).to.equal(BigInt(i + 1));
          }
          expect(await c.gig.read.gigCount()).to.equal(3n);
          for (const [i, amount] of amounts.entries()) expect((await c.gig.read.gigOf([BigInt(i + 1)])).amount).to.equal(amount);
          expect(await spec.balanceOf(c.gig.address)).to.equal(AMOUNT + 1n + parseEther("0.5"));
        });

        for (const [name, offset] of [
          ["one second after now", 1],
          ["exactly MAX_DEADLINE after now", MAX_DEADLINE],
        ] as const) {
          it(`accepts a deadline ${name}`, async () => {
            const c = await loadFixture(gigFixture);
            const spec = assetSpec(kind, c);
            const at = (await time.latest()) + 10;
            await time.setNextBlockTimestamp(at);
            const receipt = await mined(c, await sendFund(c, await argsFor(c, spec, { deadline: at + offset })));
            expect((await c.gig.read.gigOf([gigIdFrom(c, receipt)])).deadline).to.equal(at + offset);
          });
        }

        for (const window of [MIN_WINDOW, MAX_WINDOW]) {
          it(`accepts a dispute window of exactly ${window} s`, async () => {
            const c = await loadFixture(gigFixture);
            const spec = assetSpec(kind, c);
            const receipt = await mined(c, await sendFund(c, await argsFor(c, spec, { disputeWindow: window })));
            expect((await c.gig.read.gigOf([gigIdFrom(c, receipt)])).disputeWindow).to.equal(window);
          });
        }

        // No account holds 2^128 wei, so only the token can show the upper bound.
        if (kind === "ERC20") it("escrows up to type(uint128).max", async () => {
          const c = await loadFixture(gigFixture);
          const spec = assetSpec(kind, c);
          await c.token.write.mint([addressOf(c.client), MAX_UINT128]);
          await c.token.write.approve([c.gig.address, maxUint256], { account: c.client.account });
          const receipt = await mined(c, await sendFund(c, await argsFor(c, spec, { amount: MAX_UINT128 })));
          expect((await c.gig.read.gigOf([gigIdFrom(c, receipt)])).amount).to.equal(MAX_UINT128);
        });

        type FundCase = {
          name: string;
          args: (at: number) => Partial<FundArgs>;
          value?: bigint;
          error: string;
          errorArgs: (at: number) => readonly unknown[];
        };
        const cases: FundCase[] = [
          { name: "a zero amount", args: () => ({ amount: 0n }), value: 0n, error: "ZeroAmount", errorArgs: () => [] },
          { name: "a zero ICS hash", args: () => ({ icsHash: zeroHash }), error: "ZeroIcsHash", errorArgs: () => [] },
          {
            name: "a deadline of now",
            args: (at) => ({ deadline: at }),
            error: "DeadlineOutOfRange",
            errorArgs: (at) => [at, BigInt(at), BigInt(at + MAX_DEADLINE)],
          },
          {
            name: "a deadline in the past",
            args: (at) => ({ deadline: at - 100 }),
            error: "DeadlineOutOfRange",
            errorArgs: (at) => [at - 100, BigInt(at), BigInt(at + MAX_DEADLINE)],
          },
          {
            name: "a deadline one second beyond MAX_DEADLINE",
            args: (at) => ({ deadline: at + MAX_DEADLINE + 1 }),
            error: "DeadlineOutOfRange",
            errorArgs: (at) => [at + MAX_DEADLINE + 1, BigInt(at), BigInt(at + MAX_DEADLINE)],
          },
          {
            name: "a zero dispute window",
            args: () => ({ disputeWindow: 0 }),
            error: "DisputeWindowOutOfRange",
            errorArgs: () => [0, MIN_WINDOW, MAX_WINDOW],
          },
          {
            name: "a dispute window one second short of the minimum",
            args: () => ({ disputeWindow: MIN_WINDOW - 1 }),
            error: "DisputeWindowOutOfRange",
            errorArgs: () => [MIN_WINDOW - 1, MIN_WINDOW, MAX_WINDOW],
          },
          {
            name: "a dispute window one second over the maximum",
            args: () => ({ disputeWindow: MAX_WINDOW + 1 }),
            error: "DisputeWindowOutOfRange",
            errorArgs: () => [MAX_WINDOW + 1, MIN_WINDOW, MAX_WINDOW],
          },
        ];
        for (const tc of cases) {
          it(`reverts with ${tc.error} for ${tc.name}; nothing moves`, async () => {
            const c = await loadFixture(gigFixture);
            const spec = assetSpec(kind, c);
            const at = (await time.latest()) + 10;
            const args = await argsFor(c, spec, tc.args(at));
            await time.setNextBlockTimestamp(at);
            await expectRevert(sendFund(c, args, tc.value === undefined ? {} : { value: tc.value }), tc.error, tc.errorArgs(at));
            expect(await c.gig.read.gigCount()).to.equal(0n);
            expect(await spec.balanceOf(c.gig.address)).to.equal(0n);
          });
        }

        if (kind === "ETH") {
          for (const value of [AMOUNT - 1n, AMOUNT + 1n, 0n]) {
            it(`reverts with EthValueMismatch when ${value} wei is sent for ${AMOUNT}`, async () => {
              const c = await loadFixture(gigFixture);
              const args = await argsFor(c, assetSpec(kind, c));
              await expectRevert(sendFund(c, args, { value }), "EthValueMismatch", [value, AMOUNT]);
              expect(await c.publicClient.getBalance({ address: c.gig.address })).to.equal(0n);
            });
          }
        } else {
          it("reverts with UnexpectedEth when ETH comes with an ERC-20 gig", async () => {
            const c = await loadFixture(gigFixture);
            const args = await argsFor(c, assetSpec(kind, c));
            await expectRevert(sendFund(c, args, { value: 1n }), "UnexpectedEth", [1n]);
            expect(await c.gig.read.gigCount()).to.equal(0n);
          });

          it("reverts with TransferFromFailed when the client holds tokens but never approved", async () => {
            const c = await loadFixture(gigFixture);
            await c.token.write.mint([addressOf(c.stranger), AMOUNT]);
            const args = await argsFor(c, assetSpec(kind, c));
            await expectRevert(sendFund(c, args, { from: c.stranger }), "TransferFromFailed", []);
            expect(await c.token.read.balanceOf([c.gig.address])).to.equal(0n);
          });

          it("reverts with TransferFromFailed for an asset address without code", async () => {
            const c = await loadFixture(gigFixture);
            const args = await argsFor(c, assetSpec(kind, c), { asset: addressOf(c.stranger) });
            await expectRevert(sendFund(c, args), "TransferFromFailed", []);
            expect(await c.gig.read.gigCount()).to.equal(0n);
          });
        }
      });

      /*////////////////////////////// wrong status, unknown gig //////////////////////////////*/
      type Call = { name: string; allowed: StatusName[]; send: (g: Gig, gigId?: bigint) => Promise<Hash> };
      const calls: Call[] = [
        { name: "cancel", allowed: ["Funded"], send: (g, id = g.gigId) => g.gig.write.cancel([id], { account: g.client.account }) },
        { name: "accept", allowed: ["Funded"], send: (g, id = g.gigId) => g.gig.write.accept([id], { account: g.provider.account }) },
        {
          name: "deliver",
          allowed: ["Accepted"],
          send: (g, id = g.gigId) => g.gig.write.deliver([id, DELIVERABLE, ROOT], { account: g.provider.account }),
        },
        {
          name: "acceptDelivery",
          allowed: ["Delivered"],
          send: (g, id = g.gigId) => g.gig.write.acceptDelivery([id], { account: g.client.account }),
        },
        // A frozen gig is released only after MAX_FREEZE_DURATION; before that it answers WrongStatus(Disputed).
        { name: "release", allowed: ["Delivered"], send: (g, id = g.gigId) => g.gig.write.release([id], { account: g.relayer.account }) },
        { name: "refund", allowed: ["Funded", "Accepted"], send: (g, id = g.gigId) => g.gig.write.refund([id], { account: g.relayer.account }) },
        { name: "freeze", allowed: ["Delivered"], send: (g, id = g.gigId) => g.gig.write.freeze([id], { account: g.disputes.account }) },
      ];
      describe("status checks", () => {
        for (const call of calls) {
          for (const status of Object.keys(AT_STATUS) as Exclude<StatusName, "None">[]) {
            if (call.allowed.includes(status)) continue;
            it(`${call.name} reverts with WrongStatus on a ${status} gig; nothing moves`, async () => {
              const g = await loadFixture(AT_STATUS[status][kind]);
              const before = await g.gig.read.gigOf([g.gigId]);
              const held = await g.spec.balanceOf(g.gig.address);
              await expectRevert(call.send(g), "WrongStatus", [g.gigId, STATUS[status]]);
              expect(await g.gig.read.gigOf([g.gigId])).to.deep.equal(before);
              expect(await g.spec.balanceOf(g.gig.address)).to.equal(held);
            });
          }
          it(`${call.name} reverts with UnknownGig for id 0 and for gigCount + 1`, async () => {
            const g = await loadFixture(FUNDED[kind]);
            await expectRevert(call.send(g, 0n), "UnknownGig", [0n]);
            await expectRevert(call.send(g, g.gigId + 1n), "UnknownGig", [g.gigId + 1n]);
          });
        }
      });

      /*////////////////////////////// cancel //////////////////////////////*/
      describe("cancel", () => {
        for (const [name, fixture] of [
          ["a gig naming a provider", FUNDED],
          ["an open gig", OPEN],
        ] as const) {
          it(`refunds the client at once for ${name}: GigSettled(Refunded), status Refunded`, async () => {
            const g = await loadFixture(fixture[kind]);
            const before = await g.gig.read.gigOf([g.gigId]);
            const { receipt, deltas } = await withDeltas(g, () => g.gig.write.cancel([g.gigId], { account: g.client.account }));
            expect(deltas).to.deep.equal({ ...NOTHING_MOVED, client: AMOUNT, escrow: -AMOUNT });
            expect(gigEventNames(g, receipt)).to.deep.equal(["GigSettled"]);
            expect(settledOf(g, receipt)).to.deep.equal([{ gigId: g.gigId, status: STATUS.Refunded, toProvider: 0n, toClient: AMOUNT }]);
            expect(await g.gig.read.gigOf([g.gigId])).to.deep.equal({ ...before, status: STATUS.Refunded });
          });
        }

        for (const who of ["provider", "stranger", "otherProvider"] as const) {
          it(`reverts with NotTheClient when the ${who} cancels`, async () => {
            const g = await loadFixture(FUNDED[kind]);
            await expectRevert(g.gig.write.cancel([g.gigId], { account: g[who].account }), "NotTheClient", [g.gigId, addressOf(g[who])]);
            expect(await statusOf(g)).to.equal(STATUS.Funded);
            await expectHolds(g, AMOUNT);
          });
        }

        it("cannot pay twice: a second cancel reverts with WrongStatus(Refunded)", async () => {
          const g = await loadFixture(REFUNDED[kind]);
          await expectRevert(g.gig.write.cancel([g.gigId], { account: g.client.account }), "WrongStatus", [g.gigId, STATUS.Refunded]);
          await expectHolds(g, 0n);
        });
      });

      /*////////////////////////////// accept //////////////////////////////*/
      describe("accept", () => {
        it("lets the named provider accept: GigAccepted, status Accepted, nothing moves", async () => {
          const g = await loadFixture(FUNDED[kind]);
          const before = await g.gig.read.gigOf([g.gigId]);
          const { receipt, deltas } = await withDeltas(g, () => g.gig.write.accept([g.gigId], { account: g.provider.account }));
          expect(deltas).to.deep.equal(NOTHING_MOVED);
          expect(gigEventNames(g, receipt)).to.deep.equal(["GigAccepted"]);
          const [accepted] = parseEventLogs({ abi: g.gig.abi, eventName: "GigAccepted", logs: receipt.logs });
          expect(accepted!.args).to.deep.equal({ gigId: g.gigId, provider: addressOf(g.provider) });
          expect(await g.gig.read.gigOf([g.gigId])).to.deep.equal({ ...before, status: STATUS.Accepted });
        });

        it("lets any active provider take an open gig, which becomes its provider", async () => {
          const g = await loadFixture(OPEN[kind]);
          const receipt = await mined(g, await g.gig.write.accept([g.gigId], { account: g.otherProvider.account }));
          const [accepted] = parseEventLogs({ abi: g.gig.abi, eventName: "GigAccepted", logs: receipt.logs });
          expect(accepted!.args).to.deep.equal({ gigId: g.gigId, provider: addressOf(g.otherProvider) });
          const stored = await g.gig.read.gigOf([g.gigId]);
          expect([stored.provider, stored.status]).to.deep.equal([addressOf(g.otherProvider), STATUS.Accepted]);
          // The first taker keeps it.
          await expectRevert(g.gig.write.accept([g.gigId], { account: g.provider.account }), "WrongStatus", [g.gigId, STATUS.Accepted]);
          await expectRevert(
            g.gig.write.deliver([g.gigId, DELIVERABLE, ROOT], { account: g.provider.account }),
            "NotTheProvider",
            [g.gigId, addressOf(g.provider)],
          );
          await mined(g, await g.gig.write.deliver([g.gigId, DELIVERABLE, ROOT], { account: g.otherProvider.account }));
        });

        it("accepts at exactly the deadline and reverts with DeadlinePassed one second later", async () => {
          const g = await loadFixture(FUNDED[kind]);
          await time.setNextBlockTimestamp(g.deadline + 1);
          await expectRevert(g.gig.write.accept([g.gigId], { account: g.provider.account }), "DeadlinePassed", [g.gigId, g.deadline]);
          const h = await loadFixture(FUNDED[kind]);
          await time.setNextBlockTimestamp(h.deadline);
          await mined(h, await h.gig.write.accept([h.gigId], { account: h.provider.account }));
          expect(await statusOf(h)).to.equal(STATUS.Accepted);
        });

        it("reverts with NotTheProvider when another active provider takes a named gig", async () => {
          const g = await loadFixture(FUNDED[kind]);
          expect(await g.registry.read.isActiveProvider([addressOf(g.otherProvider)])).to.equal(true);
          await expectRevert(g.gig.write.accept([g.gigId], { account: g.otherProvider.account }), "NotTheProvider", [
            g.gigId,
            addressOf(g.otherProvider),
          ]);
          expect(await statusOf(g)).to.equal(STATUS.Funded);
        });

        for (const who of ["stranger", "idleProvider", "client"] as const) {
          it(`reverts with NotAnActiveProvider when the ${who} (no active bond) takes an open gig`, async () => {
            const g = await loadFixture(OPEN[kind]);
            await expectRevert(g.gig.write.accept([g.gigId], { account: g[who].account }), "NotAnActiveProvider", [addressOf(g[who])]);
            expect(await statusOf(g)).to.equal(STATUS.Funded);
          });
        }

        it("reverts with NotAnActiveProvider when the named provider unbonded below the minimum; accepts after re-bonding", async () => {
          const g = await loadFixture(FUNDED[kind]);
          await mined(g, await g.registry.write.requestUnbond([PROVIDER_ROLE_ID, 1n], { account: g.provider.account }));
          await expectRevert(g.gig.write.accept([g.gigId], { account: g.provider.account }), "NotAnActiveProvider", [addressOf(g.provider)]);
          await mined(g, await g.registry.write.cancelUnbond([PROVIDER_ROLE_ID], { account: g.provider.account }));
          await mined(g, await g.gig.write.accept([g.gigId], { account: g.provider.account }));
        });

        it("names a registered but unbonded provider: nobody can accept, and the client gets it back after the deadline", async () => {
          const g = await loadFixture(gigFixture);
          const spec = assetSpec(kind, g);
          const args = await argsFor(g, spec, { provider: addressOf(g.idleProvider) });
          const gigId = gigIdFrom(g, await mined(g, await sendFund(g, args)));
          await expectRevert(g.gig.write.accept([gigId], { account: g.idleProvider.account }), "NotAnActiveProvider", [addressOf(g.idleProvider)]);
          await expectRevert(g.gig.write.accept([gigId], { account: g.provider.account }), "NotTheProvider", [gigId, addressOf(g.provider)]);
          await time.setNextBlockTimestamp(args.deadline + 1);
          const { deltas } = await withDeltas({ ...g, spec, args, gigId, deadline: args.deadline, fundedAt: 0 }, () =>
            g.gig.write.refund([gigId], { account: g.relayer.account }),
          );
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, client: AMOUNT, escrow: -AMOUNT });
        });
      });

      /*////////////////////////////// deliver //////////////////////////////*/
      describe("deliver", () => {
        it("records the delivery and opens the dispute window: GigDelivered, windowEndsAt = now + window", async () => {
          const g = await loadFixture(ACCEPTED[kind]);
          const before = await g.gig.read.gigOf([g.gigId]);
          const at = (await time.latest()) + 5;
          await time.setNextBlockTimestamp(at);
          const { receipt, deltas } = await withDeltas(g, () =>
            g.gig.write.deliver([g.gigId, DELIVERABLE, ROOT], { account: g.provider.account }),
          );
          expect(deltas).to.deep.equal(NOTHING_MOVED);
          expect(gigEventNames(g, receipt)).to.deep.equal(["GigDelivered"]);
          const [delivered] = parseEventLogs({ abi: g.gig.abi, eventName: "GigDelivered", logs: receipt.logs });
          expect(delivered!.args).to.deep.equal({ gigId: g.gigId, deliverableHash: DELIVERABLE, receiptRoot: ROOT, windowEndsAt: at + WINDOW });
          expect(await g.gig.read.gigOf([g.gigId])).to.deep.equal({
            ...before,
            status: STATUS.Delivered,
            windowEndsAt: at + WINDOW,
            deliverableHash: DELIVERABLE,
            receiptRoot: ROOT,
          });
        });

        it("accepts a zero receipt root", async () => {
          const g = await loadFixture(ACCEPTED[kind]);
          await mined(g, await g.gig.write.deliver([g.gigId, DELIVERABLE, zeroHash], { account: g.provider.account }));
          const stored = await g.gig.read.gigOf([g.gigId]);
          expect([stored.status, stored.deliverableHash, stored.receiptRoot]).to.deep.equal([STATUS.Delivered, DELIVERABLE, zeroHash]);
        });

        it("delivers at exactly the deadline (the window then runs past it)", async () => {
          const g = await loadFixture(ACCEPTED[kind]);
          await time.setNextBlockTimestamp(g.deadline);
          await mined(g, await g.gig.write.deliver([g.gigId, DELIVERABLE, ROOT], { account: g.provider.account }));
          expect((await g.gig.read.gigOf([g.gigId])).windowEndsAt).to.equal(g.deadline + WINDOW);
          // Past the deadline a delivered gig is no longer refundable.
          await time.setNextBlockTimestamp(g.deadline + 1);
          await expectRevert(g.gig.write.refund([g.gigId], { account: g.relayer.account }), "WrongStatus", [g.gigId, STATUS.Delivered]);
        });

        it("reverts with DeadlinePassed one second after the deadline", async () => {
          const g = await loadFixture(ACCEPTED[kind]);
          await time.setNextBlockTimestamp(g.deadline + 1);
          await expectRevert(
            g.gig.write.deliver([g.gigId, DELIVERABLE, ROOT], { account: g.provider.account }),
            "DeadlinePassed",
            [g.gigId, g.deadline],
          );
          expect(await statusOf(g)).to.equal(STATUS.Accepted);
        });

        it("reverts with ZeroDeliverableHash", async () => {
          const g = await loadFixture(ACCEPTED[kind]);
          await expectRevert(g.gig.write.deliver([g.gigId, zeroHash, ROOT], { account: g.provider.account }), "ZeroDeliverableHash", []);
          expect(await statusOf(g)).to.equal(STATUS.Accepted);
        });

        for (const who of ["client", "otherProvider", "stranger"] as const) {
          it(`reverts with NotTheProvider when the ${who} delivers`, async () => {
            const g = await loadFixture(ACCEPTED[kind]);
            await expectRevert(g.gig.write.deliver([g.gigId, DELIVERABLE, ROOT], { account: g[who].account }), "NotTheProvider", [
              g.gigId,
              addressOf(g[who]),
            ]);
            expect(await statusOf(g)).to.equal(STATUS.Accepted);
          });
        }
      });

      /*////////////////////////////// acceptDelivery //////////////////////////////*/
      describe("acceptDelivery", () => {
        for (const [when, offset] of [
          ["inside the dispute window", 0],
          ["after the dispute window passed", WINDOW + 100],
        ] as const) {
          it(`pays the provider the whole amount ${when}: GigSettled(Released)`, async () => {
            const g = await loadFixture(DELIVERED[kind]);
            if (offset) await time.setNextBlockTimestamp(g.deliveredAt + offset);
            const before = await g.gig.read.gigOf([g.gigId]);
            const { receipt, deltas } = await withDeltas(g, () => g.gig.write.acceptDelivery([g.gigId], { account: g.client.account }));
            expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: AMOUNT, escrow: -AMOUNT });
            expect(gigEventNames(g, receipt)).to.deep.equal(["GigSettled"]);
            expect(settledOf(g, receipt)).to.deep.equal([{ gigId: g.gigId, status: STATUS.Released, toProvider: AMOUNT, toClient: 0n }]);
            expect(await g.gig.read.gigOf([g.gigId])).to.deep.equal({ ...before, status: STATUS.Released });
          });
        }

        for (const who of ["provider", "stranger"] as const) {
          it(`reverts with NotTheClient when the ${who} accepts the delivery`, async () => {
            const g = await loadFixture(DELIVERED[kind]);
            await expectRevert(g.gig.write.acceptDelivery([g.gigId], { account: g[who].account }), "NotTheClient", [
              g.gigId,
              addressOf(g[who]),
            ]);
            await expectHolds(g, AMOUNT);
          });
        }
      });

      /*////////////////////////////// release //////////////////////////////*/
      describe("release", () => {
        for (const who of ["relayer", "provider", "client"] as const) {
          it(`pays the provider at exactly windowEndsAt when the ${who} calls: GigSettled(Released)`, async () => {
            const g = await loadFixture(DELIVERED[kind]);
            const before = await g.gig.read.gigOf([g.gigId]);
            await time.setNextBlockTimestamp(g.windowEndsAt);
            const { receipt, deltas } = await withDeltas(g, () => g.gig.write.release([g.gigId], { account: g[who].account }));
            expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: AMOUNT, escrow: -AMOUNT });
            expect(settledOf(g, receipt)).to.deep.equal([{ gigId: g.gigId, status: STATUS.Released, toProvider: AMOUNT, toClient: 0n }]);
            expect(await g.gig.read.gigOf([g.gigId])).to.deep.equal({ ...before, status: STATUS.Released });
          });
        }

        it("reverts with DisputeWindowOpen right after delivery and at windowEndsAt - 1", async () => {
          const g = await loadFixture(DELIVERED[kind]);
          await expectRevert(g.gig.write.release([g.gigId], { account: g.relayer.account }), "DisputeWindowOpen", [g.gigId, g.windowEndsAt]);
          await time.setNextBlockTimestamp(g.windowEndsAt - 1);
          await expectRevert(g.gig.write.release([g.gigId], { account: g.relayer.account }), "DisputeWindowOpen", [g.gigId, g.windowEndsAt]);
          expect(await time.latest()).to.equal(g.windowEndsAt - 1); // the reverted call was mined at that second
          await expectHolds(g, AMOUNT);
        });

        it("cannot pay twice: a second release reverts with WrongStatus(Released)", async () => {
          const g = await loadFixture(DELIVERED[kind]);
          await time.setNextBlockTimestamp(g.windowEndsAt);
          await mined(g, await g.gig.write.release([g.gigId], { account: g.relayer.account }));
          await expectRevert(g.gig.write.release([g.gigId], { account: g.relayer.account }), "WrongStatus", [g.gigId, STATUS.Released]);
          await expectRevert(g.gig.write.acceptDelivery([g.gigId], { account: g.client.account }), "WrongStatus", [g.gigId, STATUS.Released]);
          await expectHolds(g, 0n);
        });

        it("releases a frozen gig only from frozenAt + MAX_FREEZE_DURATION (the backstop); a late ruling then changes nothing", async () => {
          const g = await loadFixture(DISPUTED[kind]);
          await time.setNextBlockTimestamp(g.frozenAt + MAX_FREEZE - 1);
          await expectRevert(g.gig.write.release([g.gigId], { account: g.relayer.account }), "WrongStatus", [g.gigId, STATUS.Disputed]);
          await expectHolds(g, AMOUNT);

          await time.setNextBlockTimestamp(g.frozenAt + MAX_FREEZE);
          const { receipt, deltas } = await withDeltas(g, () => g.gig.write.release([g.gigId], { account: g.relayer.account }));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: AMOUNT, escrow: -AMOUNT });
          expect(settledOf(g, receipt)).to.deep.equal([{ gigId: g.gigId, status: STATUS.Released, toProvider: AMOUNT, toClient: 0n }]);

          const { result } = await g.gig.simulate.resolve([g.gigId, AMOUNT], { account: g.disputes.account.address });
          expect(result).to.equal(false);
          const late = await withDeltas(g, () => g.gig.write.resolve([g.gigId, AMOUNT], { account: g.disputes.account }));
          expect(late.deltas).to.deep.equal(NOTHING_MOVED);
          expect(gigEventNames(g, late.receipt)).to.deep.equal([]);
          expect(await statusOf(g)).to.equal(STATUS.Released);
        });
      });

      /*////////////////////////////// refund //////////////////////////////*/
      describe("refund", () => {
        for (const [status, fixture] of [
          ["Funded", FUNDED],
          ["Accepted", ACCEPTED],
        ] as const) {
          it(`refunds a ${status} gig to the client one second after the deadline, whoever calls: GigSettled(Refunded)`, async () => {
            const g = await loadFixture(fixture[kind]);
            const before = await g.gig.read.gigOf([g.gigId]);
            await time.setNextBlockTimestamp(g.deadline + 1);
            const { receipt, deltas } = await withDeltas(g, () => g.gig.write.refund([g.gigId], { account: g.stranger.account }));
            expect(deltas).to.deep.equal({ ...NOTHING_MOVED, client: AMOUNT, escrow: -AMOUNT });
            expect(settledOf(g, receipt)).to.deep.equal([{ gigId: g.gigId, status: STATUS.Refunded, toProvider: 0n, toClient: AMOUNT }]);
            expect(await g.gig.read.gigOf([g.gigId])).to.deep.equal({ ...before, status: STATUS.Refunded });
            await expectRevert(g.gig.write.refund([g.gigId], { account: g.stranger.account }), "WrongStatus", [g.gigId, STATUS.Refunded]);
          });

          it(`reverts with DeadlineNotPassed for a ${status} gig at exactly the deadline`, async () => {
            const g = await loadFixture(fixture[kind]);
            await expectRevert(g.gig.write.refund([g.gigId], { account: g.relayer.account }), "DeadlineNotPassed", [g.gigId, g.deadline]);
            await time.setNextBlockTimestamp(g.deadline);
            await expectRevert(g.gig.write.refund([g.gigId], { account: g.relayer.account }), "DeadlineNotPassed", [g.gigId, g.deadline]);
            await expectHolds(g, AMOUNT);
          });
        }
      });

      /*////////////////////////////// freeze //////////////////////////////*/
      describe("freeze", () => {
        for (const [when, offset] of [
          ["right after delivery", 1],
          ["at windowEndsAt - 1 (the last second of the window)", WINDOW - 1],
        ] as const) {
          it(`freezes a delivered gig ${when}: GigFrozen, status Disputed, frozenAt = now, nothing moves`, async () => {
            const g = await loadFixture(DELIVERED[kind]);
            const before = await g.gig.read.gigOf([g.gigId]);
            const at = g.deliveredAt + offset;
            await time.setNextBlockTimestamp(at);
            const { receipt, deltas } = await withDeltas(g, () => g.gig.write.freeze([g.gigId], { account: g.disputes.account }));
            expect(deltas).to.deep.equal(NOTHING_MOVED);
            expect(gigEventNames(g, receipt)).to.deep.equal(["GigFrozen"]);
            expect(await g.gig.read.gigOf([g.gigId])).to.deep.equal({ ...before, status: STATUS.Disputed, frozenAt: at });
          });
        }

        it("reverts with DisputeWindowClosed at windowEndsAt (from then on the gig can be released)", async () => {
          const g = await loadFixture(DELIVERED[kind]);
          await time.setNextBlockTimestamp(g.windowEndsAt);
          await expectRevert(g.gig.write.freeze([g.gigId], { account: g.disputes.account }), "DisputeWindowClosed", [g.gigId, g.windowEndsAt]);
          expect(await statusOf(g)).to.equal(STATUS.Delivered);
          await mined(g, await g.gig.write.release([g.gigId], { account: g.relayer.account }));
        });

        it("keeps a frozen gig from every other way out until it is resolved", async () => {
          const g = await loadFixture(DISPUTED[kind]);
          await time.setNextBlockTimestamp(g.deadline + WINDOW + 1);
          await expectRevert(g.gig.write.acceptDelivery([g.gigId], { account: g.client.account }), "WrongStatus", [g.gigId, STATUS.Disputed]);
          await expectRevert(g.gig.write.release([g.gigId], { account: g.relayer.account }), "WrongStatus", [g.gigId, STATUS.Disputed]);
          await expectRevert(g.gig.write.refund([g.gigId], { account: g.relayer.account }), "WrongStatus", [g.gigId, STATUS.Disputed]);
          await expectRevert(g.gig.write.cancel([g.gigId], { account: g.client.account }), "WrongStatus", [g.gigId, STATUS.Disputed]);
          await expectHolds(g, AMOUNT);
        });
      });

      /*////////////////////////////// resolve //////////////////////////////*/
      describe("resolve", () => {
        const rulings: [name: string, refund: bigint, status: StatusName][] = [
          ["nothing refunded (the provider wins)", 0n, "Released"],
          ["a part refunded", (AMOUNT * 3n) / 10n, "Released"],
          ["all but one unit refunded", AMOUNT - 1n, "Released"],
          ["everything refunded (the client wins)", AMOUNT, "Refunded"],
        ];
        for (const [name, refund, status] of rulings) {
          it(`splits a frozen gig with ${name}: status ${status}, exact payouts, returns true`, async () => {
            const g = await loadFixture(DISPUTED[kind]);
            const before = await g.gig.read.gigOf([g.gigId]);
            const { result } = await g.gig.simulate.resolve([g.gigId, refund], { account: g.disputes.account.address });
            expect(result).to.equal(true);
            const { receipt, deltas } = await withDeltas(g, () => g.gig.write.resolve([g.gigId, refund], { account: g.disputes.account }));
            expect(deltas).to.deep.equal({ ...NOTHING_MOVED, client: refund, provider: AMOUNT - refund, escrow: -AMOUNT });
            expect(gigEventNames(g, receipt)).to.deep.equal(["GigSettled"]);
            expect(settledOf(g, receipt)).to.deep.equal([
              { gigId: g.gigId, status: STATUS[status], toProvider: AMOUNT - refund, toClient: refund },
            ]);
            expect(await g.gig.read.gigOf([g.gigId])).to.deep.equal({ ...before, status: STATUS[status] });
          });
        }

        it("reverts with RefundExceedsAmount for a refund above the amount", async () => {
          const g = await loadFixture(DISPUTED[kind]);
          await expectRevert(g.gig.write.resolve([g.gigId, AMOUNT + 1n], { account: g.disputes.account }), "RefundExceedsAmount", [
            g.gigId,
            AMOUNT + 1n,
            AMOUNT,
          ]);
          await expectRevert(g.gig.write.resolve([g.gigId, MAX_UINT128], { account: g.disputes.account }), "RefundExceedsAmount", [
            g.gigId,
            MAX_UINT128,
            AMOUNT,
          ]);
          expect(await statusOf(g)).to.equal(STATUS.Disputed);
        });

        for (const status of ["Funded", "Accepted", "Delivered", "Released", "Refunded"] as const) {
          it(`returns false and changes nothing for a ${status} gig, whatever the refund`, async () => {
            const g = await loadFixture(AT_STATUS[status][kind]);
            const before = await g.gig.read.gigOf([g.gigId]);
            for (const refund of [0n, AMOUNT + 1n]) {
              const { result } = await g.gig.simulate.resolve([g.gigId, refund], { account: g.disputes.account.address });
              expect(result).to.equal(false);
              const { receipt, deltas } = await withDeltas(g, () => g.gig.write.resolve([g.gigId, refund], { account: g.disputes.account }));
              expect(deltas).to.deep.equal(NOTHING_MOVED);
              expect(gigEventNames(g, receipt)).to.deep.equal([]);
            }
            expect(await g.gig.read.gigOf([g.gigId])).to.deep.equal(before);
          });
        }

        it("returns false for a gig that does not exist, and for a second ruling on a resolved gig", async () => {
          const g = await loadFixture(DISPUTED[kind]);
          expect((await g.gig.simulate.resolve([g.gigId + 1n, 0n], { account: g.disputes.account.address })).result).to.equal(false);
          await mined(g, await g.gig.write.resolve([g.gigId, 1n], { account: g.disputes.account }));
          expect((await g.gig.simulate.resolve([g.gigId, 0n], { account: g.disputes.account.address })).result).to.equal(false);
          const { deltas } = await withDeltas(g, () => g.gig.write.resolve([g.gigId, 0n], { account: g.disputes.account }));
          expect(deltas).to.deep.equal(NOTHING_MOVED);
          await expectHolds(g, 0n);
        });
      });

      /*////////////////////////////// several gigs //////////////////////////////*/
      describe("several gigs", () => {
        it("settles each gig from its own amount: the escrow always holds the sum of the live ones", async () => {
          const c = await loadFixture(gigFixture);
          const spec = assetSpec(kind, c);
          const amounts = [AMOUNT, parseEther("0.3"), 7n];
          const ids: bigint[] = [];
          for (const amount of amounts) ids.push(gigIdFrom(c, await mined(c, await sendFund(c, await argsFor(c, spec, { amount })))));
          const g: Gig = { ...c, spec, args: await argsFor(c, spec), gigId: ids[0]!, deadline: 0, fundedAt: 0 };
          await expectHolds(g, AMOUNT + parseEther("0.3") + 7n);
          await mined(c, await c.gig.write.cancel([ids[1]!], { account: c.client.account }));
          await expectHolds(g, AMOUNT + 7n);
          for (const id of [ids[0]!, ids[2]!]) await mined(c, await c.gig.write.accept([id], { account: c.provider.account }));
          await mined(c, await c.gig.write.deliver([ids[2]!, DELIVERABLE, ROOT], { account: c.provider.account }));
          const { deltas } = await withDeltas(g, () => c.gig.write.acceptDelivery([ids[2]!], { account: c.client.account }));
          expect(deltas).to.deep.equal({ ...NOTHING_MOVED, provider: 7n, escrow: -7n });
          await expectHolds(g, AMOUNT);
        });
      });
    });
  }

  /*//////////////////////////////////////////////////////////////
                       MISBEHAVING TOKENS AND PAYEES
  //////////////////////////////////////////////////////////////*/

  describe("misbehaving tokens and payees", () => {
    async function tokensFixture() {
      const c = await gigFixture();
      const feeToken = await hre.viem.deployContract("FeeOnTransferToken", [100n]); // 1 %
      const fullFeeToken = await hre.viem.deployContract("FeeOnTransferToken", [10_000n]); // everything
      const noReturnToken = await hre.viem.deployContract("NoReturnToken");
      const reentrantToken = await hre.viem.deployContract("ReentrantToken");
      const bonusToken = await hre.viem.deployContract("BonusToken", [2n ** 128n]);
      const supply = parseEther("1000");
      const client = c.client.account;
      // Each token is its own typed contract, so they are funded one by one rather than in a loop.
      await feeToken.write.mint([client.address, supply]);
      await feeToken.write.approve([c.gig.address, supply], { account: client });
      await fullFeeToken.write.mint([client.address, supply]);
      await fullFeeToken.write.approve([c.gig.address, supply], { account: client });
      await noReturnToken.write.mint([client.address, supply]);
      await noReturnToken.write.approve([c.gig.address, supply], { account: client });
      await reentrantToken.write.mint([client.address, supply]);
      await reentrantToken.write.approve([c.gig.address, supply], { account: client });
      await bonusToken.write.mint([client.address, supply]);
      await bonusToken.write.approve([c.gig.address, supply], { account: client });
      return { ...c, feeToken, fullFeeToken, noReturnToken, reentrantToken, bonusToken };
    }
    type Tokens = Awaited<ReturnType<typeof tokensFixture>>;

    /** Funds a gig in `asset` naming the fixture's provider; returns its id and deadline. */
    async function fundIn(c: Tokens, asset: Address, amount = AMOUNT) {
      const args: FundArgs = {
        provider: addressOf(c.provider),
        asset,
        amount,
        icsHash: ICS,
        deadline: (await time.latest()) + DEADLINE_IN,
        disputeWindow: WINDOW,
      };
      const receipt = await mined(c, await sendFund(c, args));
      const [funded] = parseEventLogs({ abi: c.gig.abi, eventName: "GigFunded", logs: receipt.logs });
      return { gigId: funded!.args.gigId, escrowed: funded!.args.amount, deadline: args.deadline };
    }

    /** Funds, accepts and delivers a gig in `asset`; returns its id and when its window ends. */
    async function deliveredIn(c: Tokens, asset: Address, amount = AMOUNT) {
      const { gigId, escrowed } = await fundIn(c, asset, amount);
      await mined(c, await c.gig.write.accept([gigId], { account: c.provider.account }));
      const receipt = await mined(c, await c.gig.write.deliver([gigId, DELIVERABLE, ROOT], { account: c.provider.account }));
      const [delivered] = parseEventLogs({ abi: c.gig.abi, eventName: "GigDelivered", logs: receipt.logs });
      return { gigId, escrowed, windowEndsAt: delivered!.args.windowEndsAt };
    }

    describe("FeeOnTransferToken: refused at funding (issue 28 item 4)", () => {
      const net = (x: bigint) => x - (x * 100n) / 10_000n;

      for (const [name, token, received] of [
        ["a 1 % fee", "feeToken", net(AMOUNT)],
        ["a fee that takes everything", "fullFeeToken", 0n],
      ] as const) {
        it(`issue 28 item 4: ${name} is TransferAmountMismatch; no gig, and the client's balance is unchanged`, async () => {
          const c = await loadFixture(tokensFixture);
          const t = c[token];
          const before = await t.read.balanceOf([addressOf(c.client)]);
          const args: FundArgs = { ...(await argsFor(c, assetSpec("ERC20", c))), asset: t.address };
          await expectRevert(sendFund(c, args), "TransferAmountMismatch", [getAddress(t.address), AMOUNT, received]);
          expect(await c.gig.read.gigCount()).to.equal(0n);
          expect(await t.read.balanceOf([addressOf(c.client)])).to.equal(before);
          expect(await t.read.balanceOf([c.gig.address])).to.equal(0n);
        });
      }
    });

    it("issue 28 item 4: a token that credits more than was sent is refused too (TransferAmountMismatch)", async () => {
      const c = await loadFixture(tokensFixture);
      const args: FundArgs = { ...(await argsFor(c, assetSpec("ERC20", c))), asset: c.bonusToken.address };
      await expectRevert(sendFund(c, args), "TransferAmountMismatch", [getAddress(c.bonusToken.address), AMOUNT, AMOUNT + 2n ** 128n]);
      expect(await c.gig.read.gigCount()).to.equal(0n);
    });

    describe("NoReturnToken (transfer and transferFrom return nothing)", () => {
      it("funds, releases and refunds", async () => {
        const c = await loadFixture(tokensFixture);
        const token = c.noReturnToken;
        const a = await deliveredIn(c, token.address);
        const b = await fundIn(c, token.address, 5n);
        expect(await token.read.balanceOf([c.gig.address])).to.equal(AMOUNT + 5n);
        await mined(c, await c.gig.write.acceptDelivery([a.gigId], { account: c.client.account }));
        expect(await token.read.balanceOf([addressOf(c.provider)])).to.equal(AMOUNT);
        const clientBefore = await token.read.balanceOf([addressOf(c.client)]);
        await time.setNextBlockTimestamp(b.deadline + 1);
        await mined(c, await c.gig.write.refund([b.gigId], { account: c.relayer.account }));
        expect(await token.read.balanceOf([addressOf(c.client)])).to.equal(clientBefore + 5n);
        expect(await token.read.balanceOf([c.gig.address])).to.equal(0n);
      });

      it("reverts with TransferFromFailed when the client's allowance is short", async () => {
        const c = await loadFixture(tokensFixture);
        await c.noReturnToken.write.approve([c.gig.address, AMOUNT - 1n], { account: c.client.account });
        const args: FundArgs = { ...(await argsFor(c, assetSpec("ERC20", c))), asset: c.noReturnToken.address };
        await expectRevert(sendFund(c, args), "TransferFromFailed", []);
      });
    });

    describe("ReentrantToken (calls back into the escrow from transfer and transferFrom)", () => {
      it("has the Reentrancy() selector the assertions below expect", () => {
        expect(toFunctionSelector("Reentrancy()")).to.equal(REENTRANCY_SELECTOR);
      });

      async function expectReentrancyBlocked(c: Tokens) {
        expect(await c.reentrantToken.read.target()).to.equal(zeroAddress); // the callback ran (and disarmed)
        expect(await c.reentrantToken.read.lastCallSucceeded()).to.equal(false);
        expect(await c.reentrantToken.read.lastReturnData()).to.equal(REENTRANCY_SELECTOR);
      }

      it("blocks re-entering fund from the escrow's transferFrom: one gig, funded once", async () => {
        const c = await loadFixture(tokensFixture);
        const deadline = (await time.latest()) + DEADLINE_IN;
        await c.reentrantToken.write.arm([
          c.gig.address,
          encodeFunctionData({
            abi: c.gig.abi,
            functionName: "fund",
            args: [addressOf(c.provider), c.reentrantToken.address, 1n, ICS, deadline, WINDOW],
          }),
        ]);
        const { gigId, escrowed } = await fundIn(c, c.reentrantToken.address);
        await expectReentrancyBlocked(c);
        expect([gigId, escrowed]).to.deep.equal([1n, AMOUNT]);
        expect(await c.gig.read.gigCount()).to.equal(1n);
        expect(await c.reentrantToken.read.balanceOf([c.gig.address])).to.equal(AMOUNT);
      });

      it("blocks re-entering release of another gig from a payout; that gig still settles normally later", async () => {
        const c = await loadFixture(tokensFixture);
        const a = await deliveredIn(c, c.reentrantToken.address);
        const b = await deliveredIn(c, c.reentrantToken.address, 5n);
        await c.reentrantToken.write.arm([c.gig.address, encodeFunctionData({ abi: c.gig.abi, functionName: "release", args: [b.gigId] })]);
        await time.setNextBlockTimestamp(b.windowEndsAt);
        const receipt = await mined(c, await c.gig.write.release([a.gigId], { account: c.relayer.account }));
        await expectReentrancyBlocked(c);
        expect(settledOf(c, receipt).map((e) => e.gigId)).to.deep.equal([a.gigId]);
        expect(await c.gig.read.gigOf([b.gigId]).then((g) => g.status)).to.equal(STATUS.Delivered);
        expect(await c.reentrantToken.read.balanceOf([c.gig.address])).to.equal(5n);
        await mined(c, await c.gig.write.release([b.gigId], { account: c.relayer.account }));
        expect(await c.reentrantToken.read.balanceOf([addressOf(c.provider)])).to.equal(AMOUNT + 5n);
        expect(await c.reentrantToken.read.balanceOf([c.gig.address])).to.equal(0n);
      });

      it("cannot settle the same gig twice by re-entering its own release, nor a ruling through the payout", async () => {
        const c = await loadFixture(tokensFixture);
        const a = await deliveredIn(c, c.reentrantToken.address);
        await c.reentrantToken.write.arm([c.gig.address, encodeFunctionData({ abi: c.gig.abi, functionName: "release", args: [a.gigId] })]);
        await time.setNextBlockTimestamp(a.windowEndsAt);
        await mined(c, await c.gig.write.release([a.gigId], { account: c.relayer.account }));
        await expectReentrancyBlocked(c);
        expect(await c.reentrantToken.read.balanceOf([addressOf(c.provider)])).to.equal(AMOUNT);
        expect(await c.reentrantToken.read.balanceOf([c.gig.address])).to.equal(0n);

        // A resolve's payout calling refund on another gig is refused too.
        const b = await deliveredIn(c, c.reentrantToken.address, 10n);
        const d = await fundIn(c, c.reentrantToken.address, 3n);
        await mined(c, await c.gig.write.freeze([b.gigId], { account: c.disputes.account }));
        await c.reentrantToken.write.arm([c.gig.address, encodeFunctionData({ abi: c.gig.abi, functionName: "refund", args: [d.gigId] })]);
        await time.setNextBlockTimestamp(d.deadline + 1);
        await mined(c, await c.gig.write.resolve([b.gigId, 4n], { account: c.disputes.account }));
        await expectReentrancyBlocked(c);
        expect(await c.gig.read.gigOf([d.gigId]).then((g) => g.status)).to.equal(STATUS.Funded);
        expect(await c.reentrantToken.read.balanceOf([c.gig.address])).to.equal(3n);
      });
    });

    describe("EthRejecter (an account whose receive() always reverts)", () => {
      /** An EthRejecter that can send transactions (impersonated) and holds ETH and a provider bond. */
      async function rejecterFixture() {
        const c = await gigFixture();
        const rejecter = await hre.viem.deployContract("EthRejecter");
        const address = getAddress(rejecter.address);
        await hre.network.provider.send("hardhat_impersonateAccount", [address]);
        await hre.network.provider.send("hardhat_setBalance", [address, `0x${parseEther("100").toString(16)}`]);
        const wallet = await hre.viem.getWalletClient(address);
        await c.token.write.mint([address, GIG_MIN_PROVIDER_BOND]);
        await c.token.write.approve([c.registry.address, GIG_MIN_PROVIDER_BOND], { account: wallet.account });
        await registerProvider(c.registry, wallet, "rejecter");
        await c.registry.write.bond([PROVIDER_ROLE_ID, GIG_MIN_PROVIDER_BOND], { account: wallet.account });
        return { ...c, rejecter: wallet, rejecterAddress: address };
      }

      it("really rejects a plain ETH transfer", async () => {
        const c = await loadFixture(rejecterFixture);
        await expect(c.relayer.sendTransaction({ to: c.rejecterAddress, value: 1n })).to.be.rejectedWith("reverted");
      });

      it("as the client, cannot block its own refund: it is force-sent", async () => {
        const c = await loadFixture(rejecterFixture);
        const args = await argsFor(c, assetSpec("ETH", c));
        const gigId = gigIdFrom(c, await mined(c, await sendFund(c, args, { from: c.rejecter })));
        const before = await c.publicClient.getBalance({ address: c.rejecterAddress });
        await time.setNextBlockTimestamp(args.deadline + 1);
        await mined(c, await c.gig.write.refund([gigId], { account: c.relayer.account }));
        expect(await c.publicClient.getBalance({ address: c.rejecterAddress })).to.equal(before + AMOUNT);
        expect(await c.publicClient.getBalance({ address: c.gig.address })).to.equal(0n);
      });

      it("as the provider, is paid on release; a split ruling pays both rejecting parties", async () => {
        const c = await loadFixture(rejecterFixture);
        const spec = assetSpec("ETH", c);
        const ids: bigint[] = [];
        for (let i = 0; i < 2; i++) {
          const args = await argsFor(c, spec, { provider: c.rejecterAddress });
          const gigId = gigIdFrom(c, await mined(c, await sendFund(c, args, { from: c.rejecter })));
          await mined(c, await c.gig.write.accept([gigId], { account: c.rejecter.account }));
          await mined(c, await c.gig.write.deliver([gigId, DELIVERABLE, ROOT], { account: c.rejecter.account }));
          ids.push(gigId);
        }
        await mined(c, await c.gig.write.freeze([ids[1]!], { account: c.disputes.account }));
        const before = await c.publicClient.getBalance({ address: c.rejecterAddress });
        const { windowEndsAt } = await c.gig.read.gigOf([ids[0]!]);
        await time.setNextBlockTimestamp(windowEndsAt);
        await mined(c, await c.gig.write.release([ids[0]!], { account: c.relayer.account }));
        expect(await c.publicClient.getBalance({ address: c.rejecterAddress })).to.equal(before + AMOUNT);
        const receipt = await mined(c, await c.gig.write.resolve([ids[1]!, AMOUNT / 4n], { account: c.disputes.account }));
        expect(settledOf(c, receipt).map((e) => [e.toProvider, e.toClient])).to.deep.equal([[AMOUNT - AMOUNT / 4n, AMOUNT / 4n]]);
        expect(await c.publicClient.getBalance({ address: c.rejecterAddress })).to.equal(before + 2n * AMOUNT);
        expect(await c.publicClient.getBalance({ address: c.gig.address })).to.equal(0n);
      });

      it("as the client of a gig for an ordinary provider, cannot block the provider's payout by rejecting its refund", async () => {
        const c = await loadFixture(rejecterFixture);
        const args = await argsFor(c, assetSpec("ETH", c));
        const gigId = gigIdFrom(c, await mined(c, await sendFund(c, args, { from: c.rejecter })));
        await mined(c, await c.gig.write.accept([gigId], { account: c.provider.account }));
        await mined(c, await c.gig.write.deliver([gigId, DELIVERABLE, ROOT], { account: c.provider.account }));
        await mined(c, await c.gig.write.freeze([gigId], { account: c.disputes.account }));
        const providerBefore = await c.publicClient.getBalance({ address: addressOf(c.provider) });
        const rejecterBefore = await c.publicClient.getBalance({ address: c.rejecterAddress });
        await mined(c, await c.gig.write.resolve([gigId, 1n], { account: c.disputes.account }));
        expect(await c.publicClient.getBalance({ address: addressOf(c.provider) })).to.equal(providerBefore + AMOUNT - 1n);
        expect(await c.publicClient.getBalance({ address: c.rejecterAddress })).to.equal(rejecterBefore + 1n);
      });
    });
  });

  /*//////////////////////////////////////////////////////////////
                        MODEL-BASED PROPERTIES
  //////////////////////////////////////////////////////////////*/

  describe(`model-based properties`, () => {
    const SEEDS: number[] = process.env.GIG_PROPERTY_SEEDS
      ? process.env.GIG_PROPERTY_SEEDS.split(",").map((s) => Number(s.trim()))
      : [1, 42, 1337, 31337, 65537, 424242];
    const STEPS = Number(process.env.GIG_PROPERTY_STEPS ?? 80);

    for (const seed of SEEDS) {
      it(`seed ${seed}: ${STEPS} random actions over several gigs; balances exact and nothing pays twice`, async () => {
        const f = await loadFixture(propertyFixture);
        const run = new GigRun(f, mulberry32(seed));
        try {
          await run.start();
          for (let i = 0; i < STEPS; i++) {
            await run.randomStep();
            await run.checkInvariants();
          }
          await run.drain();
          if (process.env.GIG_PROPERTY_VERBOSE === "1") {
            const lines = Object.entries(run.stats).sort(([a], [b]) => a.localeCompare(b));
            console.log(lines.map(([k, v]) => `      ${String(v).padStart(4)}  ${k}`).join("\n"));
          }
        } catch (error) {
          console.log(`\n    seed ${seed} (reproduce: GIG_PROPERTY_SEEDS=${seed} GIG_PROPERTY_STEPS=${STEPS}); last steps:\n      ${run.trace.slice(-25).join("\n      ")}`);
          throw error;
        }
      });
    }
  });
});

/*//////////////////////////////////////////////////////////////
                         THE MODEL AND ITS RUNNER
//////////////////////////////////////////////////////////////*/

/**
 * The whole system as deployed (systemFixture: LaborGas, registry, GigEscrow, randomness and the DisputeManager
 * holding the GigEscrow's DISPUTE_ROLE, ten admitted, drawable arbitrators), with the model's parties on accounts
 * that are none of the arbitrators: client 1, client2 2, provider 3 (bonded by the fixture), stranger 4,
 * otherProvider 6 (bonded here), idle 7 (registered, never bonded), relayer 9. No plain account holds DISPUTE_ROLE.
 */
async function propertyFixture() {
  const s = await systemFixture();
  const w = s.wallets;
  const otherProvider = w[6]!;
  const idleProvider = w[7]!;
  for (const [wallet, name, bonded] of [
    [otherProvider, "other-provider", true],
    [idleProvider, "idle-provider", false],
  ] as const) {
    await s.token.write.mint([wallet.account.address, TOKEN_SUPPLY]);
    for (const spender of [s.registry.address, s.gigs.address, s.disputes.address]) {
      await s.token.write.approve([spender, TOKEN_SUPPLY], { account: wallet.account });
    }
    await registerProvider(s.registry, wallet, name);
    if (bonded) await s.registry.write.bond([PROVIDER_ROLE_ID, MIN_PROVIDER_BOND], { account: wallet.account });
  }
  const arbitrators = SYS.arbitrators.map((i) => getAddress(w[i]!.account.address));
  const partyIndices = [SYS.client, SYS.payer, SYS.provider, SYS.stranger, 6, 7, 9];
  for (const i of partyIndices) {
    expect([...SYS.arbitrators, SYS.otherRuntimeArbitrator, SYS.governance], `account ${i} is a model party only`).to.not.include(i);
  }
  const role = await s.gigs.read.DISPUTE_ROLE();
  expect(role).to.equal(DISPUTE_ROLE);
  expect(await s.gigs.read.hasRole([role, s.disputes.address]), "the DisputeManager holds DISPUTE_ROLE").to.equal(true);
  for (const x of w) expect(await s.gigs.read.hasRole([role, x.account.address]), "no plain account holds DISPUTE_ROLE").to.equal(false);
  return {
    ...s,
    gig: s.gigs,
    client2: w[SYS.payer]!,
    otherProvider,
    idleProvider,
    relayer: w[9]!,
    stranger: w[SYS.stranger]!,
    arbitrators,
  };
}
type World = Awaited<ReturnType<typeof propertyFixture>>;

/** Accounts whose balances are tracked exactly; `idle` is registered but never active, so never paid. */
const PARTIES = ["client", "client2", "provider", "otherProvider", "idle"] as const;
type Party = (typeof PARTIES)[number];
/** Everyone who sends transactions: the parties, plus a relayer, a stranger and governance (untracked). */
type Sender = Party | "relayer" | "stranger" | "governance";
const SENDERS: readonly Sender[] = [...PARTIES, "relayer", "stranger"];
const ACTIVE: readonly Sender[] = ["provider", "otherProvider"];
const DP = DISPUTE_PARAMS;
const BPS = 10_000n;
const NO_STATE = { deposit: 0n, seq: 0n, amount: 0n, receiptRoot: zeroHash, feeBps: 0 } as const;
const PACKAGE_HASH: Hex = keccak256(stringToBytes("gig case package"));

/** The model of one DisputeManager gig case (no appeals: one panel round, or the slow path). */
type CaseM = {
  id: Hex;
  gig: ModelGig;
  lane: number;
  value: bigint;
  cb: bigint;
  rb: bigint;
  /** Bonds the DisputeManager holds for the case. */
  held: bigint;
  status: number;
  round: number;
  respondBy: bigint;
  deadline: bigint;
  /** The randomness ticket of the panel draw (0: not requested). */
  ticket: bigint;
  panel: Address[];
  verdict: number;
  refund: bigint;
  signers: Address[];
};
const ended = (c: CaseM): boolean => c.status === CASE.Resolved || c.status === CASE.Expired;

/** The gig an action is aimed at: `gig` is undefined for an id that was never funded. */
type Target = { id: bigint; gig: ModelGig | undefined };

type ModelGig = {
  id: bigint;
  kind: Kind;
  client: Party;
  /** The named (or accepting) provider; undefined while an open gig is unaccepted. */
  provider: Party | undefined;
  amount: bigint;
  deadline: bigint;
  disputeWindow: bigint;
  windowEndsAt: bigint;
  frozenAt: bigint;
  status: StatusName;
  /** Accepted open (no provider named) and neither confirmed nor dismissed by the client yet. */
  tentative: boolean;
  /** What its one settlement paid. */
  paid?: { status: StatusName; toProvider: bigint; toClient: bigint };
  /** Its DisputeManager case (the latest), if the client opened one. */
  case?: CaseM;
};

const ACTIONS = [
  "cancel",
  "accept",
  "confirmProvider",
  "dismissProvider",
  "deliver",
  "acceptDelivery",
  "release",
  "refund",
  "openCase",
  "caseStep",
  "hook",
] as const;
type Action = (typeof ACTIONS)[number];

class GigRun {
  readonly trace: string[] = [];
  /** How often each operation succeeded or failed with each error (printed with GIG_PROPERTY_VERBOSE=1). */
  readonly stats: Record<string, number> = {};
  private now = 0n;
  /** When set and later than now + 1, the next transaction is mined at this time (a jump to an edge). */
  private jumpTo: bigint | undefined;
  private step = 0;
  private readonly gigs: ModelGig[] = [];
  private readonly wallets: Record<Sender, Wallet>;
  private readonly received: Record<Kind, Record<Party, bigint>>;
  private readonly spent: Record<Kind, Record<Party, bigint>>;
  private readonly gas: Record<Party, bigint>;
  private readonly totalIn: Record<Kind, bigint> = { ETH: 0n, ERC20: 0n };
  private initial!: Record<Kind, Record<Party, bigint>>;
  private startBlock = 0n;
  private draining = false;
  private readonly cases: CaseM[] = [];
  /** Bonds of unfinished cases, and arbitration fees credited and not yet claimed, per asset. */
  private readonly dmHeld: Record<Kind, bigint> = { ETH: 0n, ERC20: 0n };
  private readonly dmClaimable: Record<Kind, bigint> = { ETH: 0n, ERC20: 0n };
  /** What each party got back from (+) or posted into (−) the DisputeManager's cases, per asset. */
  private readonly dmNet: Record<Kind, Record<Party, bigint>>;
  /** What reached 0x…dEaD: burnt bond shares (per asset) and absent arbitrators' stake (LaborGas). */
  private readonly burnt: Record<Kind, bigint> = { ETH: 0n, ERC20: 0n };
  private initialDead!: Record<Kind, bigint>;
  private readonly claimable: Record<Kind, Map<Address, bigint>> = { ETH: new Map(), ERC20: new Map() };
  /** Each arbitrator's active stake (the fixture's 5,000 LGAS, less absent-panel slashes). */
  private readonly stake = new Map<Address, bigint>();

  constructor(
    private readonly f: World,
    private readonly rng: Prng,
  ) {
    this.wallets = {
      client: f.client,
      client2: f.client2,
      provider: f.provider,
      otherProvider: f.otherProvider,
      idle: f.idleProvider,
      relayer: f.relayer,
      stranger: f.stranger,
      governance: f.governance,
    };
    const zeros = () => Object.fromEntries(PARTIES.map((p) => [p, 0n])) as Record<Party, bigint>;
    this.received = { ETH: zeros(), ERC20: zeros() };
    this.dmNet = { ETH: zeros(), ERC20: zeros() };
    this.spent = { ETH: zeros(), ERC20: zeros() };
    this.gas = zeros();
  }

  private address(who: Sender): Address {
    return addressOf(this.wallets[who]);
  }

  private assetOf(kind: Kind): Address {
    return kind === "ETH" ? zeroAddress : getAddress(this.f.token.address);
  }

  private log(line: string): void {
    this.trace.push(`#${this.step} t=${this.now}: ${line}`);
  }

  private async balances(): Promise<Record<Kind, Record<Party, bigint>>> {
    const out = { ETH: {}, ERC20: {} } as Record<Kind, Record<Party, bigint>>;
    await Promise.all(
      PARTIES.flatMap((p) => [
        this.f.publicClient.getBalance({ address: this.address(p) }).then((b) => (out.ETH[p] = b)),
        this.f.token.read.balanceOf([this.address(p)]).then((b) => (out.ERC20[p] = b)),
      ]),
    );
    return out;
  }

  async start(): Promise<void> {
    this.now = BigInt(await time.latest());
    this.startBlock = await this.f.publicClient.getBlockNumber();
    this.initial = await this.balances();
    this.initialDead = { ETH: await this.deadBalance("ETH"), ERC20: await this.deadBalance("ERC20") };
    for (const a of this.f.arbitrators) this.stake.set(a, (await this.f.registry.read.bondOf([ARBITRATOR_ROLE, a])).active);
  }

  private deadBalance(kind: Kind): Promise<bigint> {
    const dead: Address = "0x000000000000000000000000000000000000dEaD";
    return kind === "ETH" ? this.f.publicClient.getBalance({ address: dead }) : this.f.token.read.balanceOf([dead]);
  }

  /** The timestamp the next transaction will be mined at. */
  private nextAt(): bigint {
    return this.jumpTo !== undefined && this.jumpTo > this.now + 1n ? this.jumpTo : this.now + 1n;
  }

  /**
   * Sends one transaction mined at exactly `nextAt()`. With `predicted` set it must revert with that error
   * (Hardhat may still mine it: then its gas is booked); otherwise it must succeed.
   */
  private async tx(op: string, sender: Sender | Wallet, send: (account: Wallet["account"]) => Promise<Hash>, predicted: string | undefined) {
    const at = this.nextAt();
    this.jumpTo = undefined;
    const wallet = typeof sender === "string" ? this.wallets[sender] : sender;
    this.log(`${op} [${typeof sender === "string" ? sender : sender.account.address.slice(0, 10)}] → ${predicted ?? "ok"}`);
    const pc = this.f.publicClient;
    const before = await pc.getBlockNumber();
    await time.setNextBlockTimestamp(at);
    const party = typeof sender === "string" && (PARTIES as readonly string[]).includes(sender) ? (sender as Party) : undefined;
    const key = `${this.draining ? "(drain) " : ""}${op.split(" ")[0]} ${predicted === undefined ? "✓" : `✗ ${predicted}`}`;
    this.stats[key] = (this.stats[key] ?? 0) + 1;
    if (predicted !== undefined) {
      // The GigEscrow's and the registry's errors may surface through the DisputeManager.
      await expectRevert(send(wallet.account), predicted, undefined, [...this.f.gig.abi, ...this.f.registry.abi] as Abi);
      const block = await pc.getBlock();
      if (block.number !== before) {
        expect(block.timestamp, `${op}: mined at the pinned time`).to.equal(at);
        const receipt = await pc.getTransactionReceipt({ hash: block.transactions[0]! });
        expect(receipt.status).to.equal("reverted");
        this.now = at;
        if (party) this.gas[party] += receipt.gasUsed * receipt.effectiveGasPrice;
      } else {
        // Not mined: the pinned timestamp is still pending; keep it for the next transaction.
        this.jumpTo = at;
      }
      return undefined;
    }
    const receipt = await pc.waitForTransactionReceipt({ hash: await send(wallet.account) });
    expect(receipt.status, op).to.equal("success");
    expect(BigInt((await pc.getBlock({ blockNumber: receipt.blockNumber })).timestamp)).to.equal(at);
    this.now = at;
    if (party) this.gas[party] += receipt.gasUsed * receipt.effectiveGasPrice;
    return receipt;
  }

  /** The right sender most of the time, anyone otherwise. */
  private senderOr(right: Sender): Sender {
    return this.rng.chance(0.75) ? right : this.rng.pick(SENDERS);
  }

  /** A gig to act on: usually a live one, sometimes a final one, now and then one that does not exist. */
  private pickGig(): Target {
    const live = this.gigs.filter((g) => g.status !== "Released" && g.status !== "Refunded");
    const r = this.rng.next();
    if (r < 0.05 || this.gigs.length === 0) return { id: this.rng.chance(0.5) ? 0n : BigInt(this.gigs.length + 1), gig: undefined };
    const gig = live.length > 0 && r < 0.85 ? this.rng.pick(live) : this.rng.pick(this.gigs);
    return { id: gig.id, gig };
  }

  private targetOf(gig: ModelGig): Target {
    return { id: gig.id, gig };
  }

  private statusError(gig: ModelGig | undefined, allowed: readonly StatusName[]): string | undefined {
    if (gig === undefined) return "UnknownGig";
    return allowed.includes(gig.status) ? undefined : "WrongStatus";
  }

  private settledIn(receipt: TransactionReceipt) {
    return parseEventLogs({ abi: this.f.gig.abi, eventName: "GigSettled", logs: receipt.logs }).map((e) => e.args);
  }

  /** Books a settlement the model predicted and checks the event against it. */
  private settle(gig: ModelGig, receipt: TransactionReceipt, status: StatusName, toProvider: bigint, toClient: bigint): void {
    expect(gig.paid, `gig ${gig.id} pays only once`).to.equal(undefined);
    const events = this.settledIn(receipt);
    expect(events, `gig ${gig.id} GigSettled`).to.deep.equal([{ gigId: gig.id, status: STATUS[status], toProvider, toClient }]);
    gig.status = status;
    gig.paid = { status, toProvider, toClient };
    if (toProvider > 0n) this.received[gig.kind][gig.provider!] += toProvider;
    this.received[gig.kind][gig.client] += toClient;
    this.log(`  settled gig ${gig.id} ${status}: provider ${toProvider}, client ${toClient}`);
  }

  /*------------------------------ actions ------------------------------*/

  private async fund(): Promise<void> {
    const rng = this.rng;
    const kind = rng.pick(KINDS);
    const client: Party = rng.chance(0.6) ? "client" : "client2";
    const providerChoice = rng.weighted({ provider: 4, otherProvider: 2, open: 3, idle: 1 });
    const provider = providerChoice === "open" ? undefined : (providerChoice as Party);
    const at = this.nextAt();
    let amount = kind === "ETH" ? rng.bigint(1n, parseEther("3")) : rng.bigint(1n, parseEther("500"));
    let deadlineIn = BigInt(rng.chance(0.2) ? rng.int(1, 600) : rng.int(3_600, 10 * 86_400));
    let window = BigInt(rng.int(MIN_WINDOW, 86_400));
    if (rng.chance(0.05)) deadlineIn = BigInt(MAX_DEADLINE);
    if (rng.chance(0.05)) window = BigInt(rng.pick([MIN_WINDOW, MAX_WINDOW]));
    // Now and then one argument is wrong.
    const fault = rng.chance(0.15) ? rng.pick(["amount", "deadline", "window", "value"] as const) : undefined;
    if (fault === "amount") amount = 0n;
    if (fault === "deadline") deadlineIn = rng.pick([0n, -5n, BigInt(MAX_DEADLINE) + 1n]);
    if (fault === "window") window = BigInt(rng.pick([0, MIN_WINDOW - 1, MAX_WINDOW + 1]));
    let value = kind === "ETH" ? amount : 0n;
    if (fault === "value") value = kind === "ETH" ? rng.pick([0n, amount - 1n, amount + 1n]) : 1n;
    let predicted: string | undefined;
    const deadline = at + deadlineIn;
    if (amount === 0n) predicted = "ZeroAmount";
    else if (deadlineIn <= 0n || deadlineIn > BigInt(MAX_DEADLINE)) predicted = "DeadlineOutOfRange";
    else if (window < BigInt(MIN_WINDOW) || window > BigInt(MAX_WINDOW)) predicted = "DisputeWindowOutOfRange";
    else if (kind === "ETH" && value !== amount) predicted = "EthValueMismatch";
    else if (kind === "ERC20" && value !== 0n) predicted = "UnexpectedEth";
    const providerAddress = provider ? this.address(provider) : zeroAddress;
    const receipt = await this.tx(
      `fund ${kind} ${amount} to ${provider ?? "anyone"} deadline+${deadlineIn} window ${window}`,
      client,
      (account) =>
        this.f.gig.write.fund([providerAddress, this.assetOf(kind), amount, ICS, Number(deadline), Number(window)], { account, value }),
      predicted,
    );
    if (!receipt) return;
    const id = BigInt(this.gigs.length + 1);
    const funded = parseEventLogs({ abi: this.f.gig.abi, eventName: "GigFunded", logs: receipt.logs });
    expect(funded.map((e) => e.args.gigId)).to.deep.equal([id]);
    this.gigs.push({ id, kind, client, provider, amount, deadline, disputeWindow: window, windowEndsAt: 0n, frozenAt: 0n, status: "Funded", tentative: false });
    this.spent[kind][client] += amount;
    this.totalIn[kind] += amount;
  }

  private async cancel({ id, gig }: Target): Promise<void> {
    const sender = this.senderOr(gig?.client ?? "client");
    let predicted = this.statusError(gig, ["Funded"]);
    if (!predicted && sender !== gig!.client) predicted = "NotTheClient";
    const receipt = await this.tx(`cancel ${id}`, sender, (account) => this.f.gig.write.cancel([id], { account }), predicted);
    if (receipt) this.settle(gig!, receipt, "Refunded", 0n, gig!.amount);
  }

  private async accept({ id, gig }: Target): Promise<void> {
    const sender = this.senderOr(gig?.provider ?? this.rng.pick(ACTIVE));
    const at = this.nextAt();
    let predicted = this.statusError(gig, ["Funded"]);
    if (!predicted && at > gig!.deadline) predicted = "DeadlinePassed";
    if (!predicted && gig!.provider !== undefined && gig!.provider !== sender) predicted = "NotTheProvider";
    if (!predicted && !ACTIVE.includes(sender)) predicted = "NotAnActiveProvider";
    const receipt = await this.tx(`accept ${id}`, sender, (account) => this.f.gig.write.accept([id], { account }), predicted);
    if (!receipt) return;
    gig!.status = "Accepted";
    gig!.tentative = gig!.provider === undefined;
    gig!.provider = sender as Party;
  }

  private async confirmProvider({ id, gig }: Target): Promise<void> {
    const sender = this.senderOr(gig?.client ?? "client");
    let predicted = this.statusError(gig, ["Accepted"]);
    if (!predicted && sender !== gig!.client) predicted = "NotTheClient";
    if (!predicted && !gig!.tentative) predicted = "ProviderNotTentative";
    const receipt = await this.tx(`confirmProvider ${id}`, sender, (account) => this.f.gig.write.confirmProvider([id], { account }), predicted);
    if (receipt) gig!.tentative = false;
  }

  private async dismissProvider({ id, gig }: Target): Promise<void> {
    const sender = this.senderOr(gig?.client ?? "client");
    let predicted = this.statusError(gig, ["Accepted"]);
    if (!predicted && sender !== gig!.client) predicted = "NotTheClient";
    if (!predicted && !gig!.tentative) predicted = "ProviderNotTentative";
    const receipt = await this.tx(`dismissProvider ${id}`, sender, (account) => this.f.gig.write.dismissProvider([id], { account }), predicted);
    if (!receipt) return;
    gig!.status = "Funded";
    gig!.provider = undefined;
    gig!.tentative = false;
  }

  private async deliver({ id, gig }: Target): Promise<void> {
    const sender = this.senderOr(gig?.provider ?? "provider");
    const hash = this.rng.chance(0.08) ? zeroHash : DELIVERABLE;
    const at = this.nextAt();
    let predicted = this.statusError(gig, ["Accepted"]);
    if (!predicted && sender !== gig!.provider) predicted = "NotTheProvider";
    if (!predicted && at > gig!.deadline) predicted = "DeadlinePassed";
    if (!predicted && hash === zeroHash) predicted = "ZeroDeliverableHash";
    const receipt = await this.tx(`deliver ${id}`, sender, (account) => this.f.gig.write.deliver([id, hash, ROOT], { account }), predicted);
    if (!receipt) return;
    gig!.status = "Delivered";
    gig!.windowEndsAt = at + gig!.disputeWindow;
  }

  private async acceptDelivery({ id, gig }: Target): Promise<void> {
    const sender = this.senderOr(gig?.client ?? "client");
    let predicted = this.statusError(gig, ["Delivered"]);
    if (!predicted && sender !== gig!.client) predicted = "NotTheClient";
    const receipt = await this.tx(`acceptDelivery ${id}`, sender, (account) => this.f.gig.write.acceptDelivery([id], { account }), predicted);
    if (receipt) this.settle(gig!, receipt, "Released", gig!.amount, 0n);
  }

  private async release({ id, gig }: Target): Promise<void> {
    const sender = this.rng.pick(SENDERS);
    const at = this.nextAt();
    let predicted = this.statusError(gig, ["Delivered", "Disputed"]);
    if (!predicted && gig!.status === "Delivered" && at < gig!.windowEndsAt) predicted = "DisputeWindowOpen";
    if (!predicted && gig!.status === "Disputed" && at < gig!.frozenAt + BigInt(MAX_FREEZE)) predicted = "WrongStatus";
    const receipt = await this.tx(`release ${id}`, sender, (account) => this.f.gig.write.release([id], { account }), predicted);
    if (receipt) this.settle(gig!, receipt, "Released", gig!.amount, 0n);
  }

  private async refund({ id, gig }: Target): Promise<void> {
    const sender = this.rng.pick(SENDERS);
    const at = this.nextAt();
    let predicted = this.statusError(gig, ["Funded", "Accepted"]);
    if (!predicted && at <= gig!.deadline) predicted = "DeadlineNotPassed";
    const receipt = await this.tx(`refund ${id}`, sender, (account) => this.f.gig.write.refund([id], { account }), predicted);
    if (receipt) this.settle(gig!, receipt, "Refunded", 0n, gig!.amount);
  }

  /*------------------------------ disputes, through the DisputeManager ------------------------------*/

  private bondFor(kind: Kind, value: bigint, level: number): bigint {
    const floor = (kind === "ETH" ? ETH_TERMS : TOKEN_TERMS).bondFloor;
    const risk = (value * BigInt(DP.riskBps)) / BPS;
    return (risk > floor ? risk : floor) * BigInt(DP.laneMultiplier) ** BigInt(level);
  }

  private valueInStake(kind: Kind, value: bigint): bigint {
    return (value * (kind === "ETH" ? ETH_STAKE_RATE : TOKEN_STAKE_RATE)) / 10n ** 18n;
  }

  private postBond(c: CaseM, who: Party, bond: bigint): void {
    this.dmNet[c.gig.kind][who] -= bond;
    this.dmHeld[c.gig.kind] += bond;
    c.held += bond;
  }

  /** Live cases whose drawn panel holds `a` (each holds one lock on its stake). */
  private arbitratorLocks(a: Address): bigint {
    return BigInt(this.cases.filter((c) => !ended(c) && c.panel.includes(a)).length);
  }

  /**
   * The client opens a gig case (posting the lane bond in the gig's asset), which freezes the gig; sometimes
   * someone else does, or the gig is not delivered, its window closed, or a case is already open.
   */
  private async openCase({ id, gig }: Target): Promise<void> {
    const rng = this.rng;
    const sender = this.senderOr(gig?.client ?? "client");
    const kind = gig?.kind ?? "ETH";
    const lane = rng.int(0, 1);
    const value = gig?.amount ?? 0n;
    const bond = this.bondFor(kind, value, lane);
    const at = this.nextAt();
    const subject = gig ? this.cases.filter((c) => c.gig === gig) : [];
    let predicted: string | undefined;
    if (!gig || sender !== gig.client) predicted = "NotTheChallengerSide";
    else if (subject.some((c) => !ended(c))) predicted = "CaseAlreadyOpen";
    else if (subject.length >= 3) predicted = "TooManyCases";
    else if (gig.status !== "Delivered") predicted = "WrongStatus";
    else if (at >= gig.windowEndsAt) predicted = "DisputeWindowClosed";
    const subjectId = toHex(id, { size: 32 });
    const caseId = await this.f.disputes.read.nextCaseId([CASE_KIND.Gig, subjectId]);
    const receipt = await this.tx(
      `openGigCase ${id} lane ${lane} bond ${bond}`,
      sender,
      (account) => this.f.disputes.write.openGigCase([id, lane, PACKAGE_HASH], { account, value: kind === "ETH" ? bond : 0n }),
      predicted,
    );
    if (!receipt) return;
    const g = gig!;
    const c: CaseM = {
      id: caseId,
      gig: g,
      lane,
      value,
      cb: bond,
      rb: 0n,
      held: 0n,
      status: CASE.Open,
      round: 0,
      respondBy: at + BigInt(DP.respondWindow),
      deadline: at + BigInt(DP.respondWindow + DP.decisionWindow),
      ticket: 0n,
      panel: [],
      verdict: VERDICT.None,
      refund: 0n,
      signers: [],
    };
    this.postBond(c, g.client, bond);
    g.status = "Disputed";
    g.frozenAt = at;
    g.case = c;
    this.cases.push(c);
    const k = await this.f.disputes.read.caseOf([caseId]);
    expect(
      [k.status, k.challengerBond, k.value, BigInt(k.respondBy), getAddress(k.challenger), getAddress(k.respondent), k.asset],
      "case as opened",
    ).to.deep.equal([CASE.Open, bond, value, c.respondBy, this.address(g.client), this.address(g.provider!), this.assetOf(kind)]);
  }

  /** One step of the gig's case (or opening one), then the case on-chain checked against the model. */
  private async caseStep(target: Target): Promise<void> {
    const c = target.gig?.case;
    if (!c || ended(c)) return this.openCase(target);
    await this.stepCase(c);
    const k = await this.f.disputes.read.caseOf([c.id]);
    expect([k.status, k.round, BigInt(k.deadline), k.respondentBond], `case of gig ${c.gig.id} (status, round, deadline, respondent bond)`).to.deep.equal([
      c.status,
      c.round,
      c.deadline,
      c.rb,
    ]);
  }

  /** Advances a case as its state allows: respond, draw, verdict, past the appeal window, finalize; or expire. */
  private async stepCase(c: CaseM): Promise<void> {
    const rng = this.rng;
    const at = this.nextAt();
    if (at > c.deadline && (c.status === CASE.Open || c.status === CASE.Deliberating) && rng.chance(0.8)) return this.caseExpire(c);
    switch (c.status) {
      case CASE.Open:
        if (c.ticket === 0n && c.rb === 0n && at <= c.respondBy) {
          if (rng.chance(0.5)) return this.caseRespond(c);
          if (rng.chance(0.8)) this.jumpTo = c.respondBy + 1n;
        }
        return this.caseDraw(c);
      case CASE.Deliberating:
        return this.caseVerdict(c);
      case CASE.Decided:
        if (at <= c.deadline && rng.chance(0.75)) this.jumpTo = c.deadline + 1n;
        return this.caseFinalize(c);
      default:
        if (rng.chance(0.5)) return this.caseSlowPath(c);
        if (at <= c.deadline && rng.chance(0.75)) this.jumpTo = c.deadline + 1n;
        return this.caseExpire(c);
    }
  }

  private async caseRespond(c: CaseM): Promise<void> {
    const who: Sender = this.rng.chance(0.85) ? c.gig.provider! : this.rng.pick(SENDERS);
    const at = this.nextAt();
    let predicted: string | undefined;
    if (c.status !== CASE.Open) predicted = "WrongCaseStatus";
    else if (who !== c.gig.provider) predicted = "NotTheRespondent";
    else if (c.round !== 0 || c.ticket !== 0n || at > c.respondBy) predicted = "ContestClosed";
    const ok = await this.tx(`respond gig ${c.gig.id}`, who, (account) =>
      this.f.disputes.write.respond([c.id], { account, value: c.gig.kind === "ETH" ? c.cb : 0n }), predicted);
    if (!ok) return;
    c.rb = c.cb;
    this.postBond(c, c.gig.provider!, c.cb);
    c.ticket = ok.blockNumber + 1n;
  }

  private async caseDraw(c: CaseM): Promise<void> {
    const ticket = c.ticket;
    // The randomness of a requested draw needs its target block mined.
    if (ticket !== 0n) {
      const next = (await this.f.publicClient.getBlockNumber()) + 1n;
      if (next <= ticket) {
        await hre.network.provider.send("hardhat_mine", [toHex(ticket - next + 1n), "0x1"]);
        this.now = BigInt(await time.latest());
      }
    }
    const at = this.nextAt();
    const block = (await this.f.publicClient.getBlockNumber()) + 1n;
    let predicted: string | undefined;
    if (c.status !== CASE.Open) predicted = "WrongCaseStatus";
    else if (at > c.deadline) predicted = "DeadlinePassed";
    else if (ticket === 0n && c.rb === 0n && at <= c.respondBy) predicted = "RespondWindowOpen";
    const request = ticket === 0n || block - ticket > 256n;
    const ok = await this.tx(`drawPanel gig ${c.gig.id}${request ? " (request)" : ""}`, "relayer", (account) =>
      this.f.disputes.write.drawPanel([c.id], { account }), predicted);
    if (!ok) return;
    if (request) {
      c.ticket = ok.blockNumber + 1n;
      return;
    }
    const panel = (await this.f.disputes.read.panelOf([c.id, 0])).map((a) => getAddress(a));
    expect(panel.length, "panel size").to.equal(DP.panelSize);
    expect(new Set(panel).size, "distinct panel members").to.equal(panel.length);
    for (const a of panel) expect(this.f.arbitrators, "only admitted, pinned arbitrators are drawn").to.include(a);
    c.panel = panel;
    c.status = CASE.Deliberating;
    c.deadline = at + BigInt(DP.decisionWindow);
    for (const a of panel) {
      expect(await this.f.registry.read.locksOf([ARBITRATOR_ROLE, a]), `${a} locked once per live panel`).to.equal(this.arbitratorLocks(a));
    }
  }

  /** A random remedy of the given verdict: a refund up to the value for ChallengerWins and NoFault. */
  private remedy(value: bigint): { verdict: number; refund: bigint } {
    const v = this.rng.weighted({ cw: 4, rw: 3, nf: 2 });
    const verdict = v === "cw" ? VERDICT.ChallengerWins : v === "rw" ? VERDICT.RespondentWins : VERDICT.NoFault;
    if (verdict === VERDICT.RespondentWins) return { verdict, refund: 0n };
    const r = this.rng.next();
    return { verdict, refund: r < 0.15 ? 0n : r < 0.35 ? value : this.rng.bigint(0n, value) };
  }

  /**
   * A supermajority of the drawn panel signs a random verdict (sometimes Undecidable); now and then too few
   * sign, an outsider signs, or the remedy is invalid (a refund above the value, a refund with RespondentWins,
   * a slash without ChallengerWins), and the submission must revert as predicted.
   */
  private async caseVerdict(c: CaseM): Promise<void> {
    const rng = this.rng;
    const at = this.nextAt();
    const panel = c.panel;
    let { verdict, refund } = rng.chance(0.1) ? { verdict: VERDICT.Undecidable, refund: 0n } : this.remedy(c.value);
    let slash = 0n;
    const mode = this.draining ? "good" : rng.weighted({ good: 12, few: 1, outsider: 1, overRefund: 1, badRemedy: 1 });
    const shuffled = [...panel];
    for (let i = shuffled.length - 1; i > 0; i--) {
      const j = rng.int(0, i);
      [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
    }
    const needed = supermajority(panel.length);
    let signers = shuffled.slice(0, needed + rng.int(0, panel.length - needed));
    let fault: string | undefined;
    if (mode === "few") {
      signers = shuffled.slice(0, needed - 1);
      fault = "SupermajorityNotMet";
    } else if (mode === "outsider") {
      signers = [...signers.slice(1), rng.pick(this.f.arbitrators.filter((a) => !panel.includes(a)))];
      fault = "NotOnPanel";
    } else if (mode === "overRefund") {
      verdict = rng.chance(0.5) ? VERDICT.ChallengerWins : VERDICT.NoFault;
      refund = c.value + rng.bigint(1n, 10n);
      fault = "RefundExceedsValue";
    } else if (mode === "badRemedy") {
      if (rng.chance(0.5)) {
        verdict = VERDICT.RespondentWins;
        refund = rng.bigint(1n, c.value);
      } else {
        verdict = VERDICT.NoFault;
        slash = rng.bigint(1n, 10n);
      }
      fault = "RemedyNotAllowed";
    }
    signers.sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
    let predicted: string | undefined;
    if (c.status !== CASE.Deliberating) predicted = "WrongCaseStatus";
    else if (at > c.deadline) predicted = "DeadlinePassed";
    else if (fault) predicted = fault;
    else {
      const atRisk = (signers.reduce((sum, a) => sum + this.stake.get(a)!, 0n) * BigInt(DP.overturnSlashBps)) / BPS;
      if (atRisk <= this.valueInStake(c.gig.kind, c.value)) predicted = "StakeAtRiskTooLow";
    }
    const message = { caseId: c.id, verdict, refund, slash, resolutionHash: keccak256(toHex(`verdict ${c.id}`)) };
    const signatures = await quorumSignatures({ domain: this.f.domain }, message, signers.map((a) => keyOf(a)));
    const ok = await this.tx(
      `submitVerdict gig ${c.gig.id} v${verdict} refund ${refund} slash ${slash} ${signers.length}/${panel.length} (${mode})`,
      "relayer",
      (account) => this.f.disputes.write.submitVerdict([message, signatures], { account }),
      predicted,
    );
    if (!ok) return;
    c.verdict = verdict;
    c.refund = refund;
    c.signers = signers;
    if (verdict === VERDICT.Undecidable) this.toSlowPath(c, at);
    else {
      c.status = CASE.Decided;
      c.deadline = at + BigInt(DP.appealWindow);
    }
  }

  private toSlowPath(c: CaseM, at: bigint): void {
    c.status = CASE.SlowPath;
    c.round = 2;
    c.deadline = at + BigInt(DP.slowPathTimeout);
  }

  private async caseFinalize(c: CaseM): Promise<void> {
    const at = this.nextAt();
    let predicted: string | undefined;
    if (c.status !== CASE.Decided) predicted = "WrongCaseStatus";
    else if (at <= c.deadline) predicted = "DeadlineNotPassed";
    const ok = await this.tx(`finalize case of gig ${c.gig.id}`, "relayer", (account) =>
      this.f.disputes.write.finalize([c.id, NO_STATE], { account }), predicted);
    if (ok) await this.settleCase(c, c.verdict, c.refund, ok, CASE.Resolved);
  }

  private async caseExpire(c: CaseM): Promise<void> {
    const at = this.nextAt();
    let predicted: string | undefined;
    if (c.status !== CASE.Open && c.status !== CASE.Deliberating && c.status !== CASE.SlowPath) predicted = "WrongCaseStatus";
    else if (at <= c.deadline) predicted = "DeadlineNotPassed";
    const ok = await this.tx(`expire case of gig ${c.gig.id} (status ${c.status})`, "relayer", (account) =>
      this.f.disputes.write.expire([c.id, NO_STATE], { account }), predicted);
    if (!ok) return;
    if (c.status !== CASE.SlowPath) return this.toSlowPath(c, at);
    // No verdict ever stood (no appeals here): the gig ends as without a dispute (released, no refund), both
    // bonds back in full.
    await this.settleCase(c, VERDICT.NoFault, 0n, ok, CASE.Expired);
  }

  /** Governance decides a slow-path case (a stranger cannot; a refund above the value is refused). */
  private async caseSlowPath(c: CaseM): Promise<void> {
    const rng = this.rng;
    let { verdict, refund } = this.remedy(c.value);
    const sender: Sender = this.draining || rng.chance(0.9) ? "governance" : "stranger";
    let predicted: string | undefined;
    if (sender !== "governance") predicted = "NotGovernance";
    else if (c.status !== CASE.SlowPath) predicted = "WrongCaseStatus";
    else if (!this.draining && rng.chance(0.08)) {
      verdict = VERDICT.ChallengerWins;
      refund = c.value + 1n;
      predicted = "RefundExceedsValue";
    }
    const message = { caseId: c.id, verdict, refund, slash: 0n, resolutionHash: keccak256(toHex(`governance ${c.id}`)) };
    const ok = await this.tx(`resolveSlowPath gig ${c.gig.id} v${verdict} refund ${refund}`, sender, (account) =>
      this.f.disputes.write.resolveSlowPath([message, NO_STATE], { account }), predicted);
    if (ok) await this.settleCase(c, verdict, refund, ok, CASE.Resolved);
  }

  /**
   * A case ends: the gig pays the provider amount − refund and the client the refund (nothing more once the
   * freeze backstop released it); the opening bonds go to the winner less the burn and the fee; the fee is
   * credited to the signers of the outcome (dust burnt; with none, back to the winner's side); a panel that
   * reached no verdict loses absentSlashBps of its stake; every panel lock is released.
   */
  private async settleCase(c: CaseM, verdict: number, refund: bigint, receipt: TransactionReceipt, status: number): Promise<void> {
    const g = c.gig;
    const kind = g.kind;
    const burnBps = BigInt(DP.burnBps);
    const feeBps = BigInt(DP.feeBps);
    let toC = 0n;
    let toR = 0n;
    let burned = 0n;
    let fee: bigint;
    if (verdict === VERDICT.ChallengerWins) {
      burned = (c.rb * burnBps) / BPS;
      fee = ((c.rb !== 0n ? c.rb : c.cb) * feeBps) / BPS;
      toC = c.cb + c.rb - burned - fee;
    } else if (verdict === VERDICT.RespondentWins) {
      burned = (c.cb * burnBps) / BPS;
      fee = (c.cb * feeBps) / BPS;
      toR = c.rb + c.cb - burned - fee;
    } else {
      fee = (c.cb * feeBps) / BPS;
      toC = c.cb - fee;
      toR = c.rb;
    }
    const coherent = c.signers.length && c.verdict === verdict && c.refund === refund ? c.signers : [];
    let fees = 0n;
    if (coherent.length === 0) {
      if (verdict === VERDICT.RespondentWins) toR += fee;
      else toC += fee;
    } else {
      const share = fee / BigInt(coherent.length);
      for (const a of coherent) this.claimable[kind].set(a, (this.claimable[kind].get(a) ?? 0n) + share);
      fees = share * BigInt(coherent.length);
      burned += fee - fees;
    }
    expect(toC + toR + burned + fees, "the case pays out exactly the bonds it held").to.equal(c.held);
    this.dmNet[kind][g.client] += toC;
    this.dmNet[kind][g.provider!] += toR;
    this.burnt[kind] += burned;
    this.dmHeld[kind] -= c.held;
    this.dmClaimable[kind] += fees;
    c.held = 0n;
    if (c.panel.length !== 0 && c.verdict === VERDICT.None) {
      for (const a of c.panel) {
        const s = this.stake.get(a)!;
        const cut = (s * BigInt(DP.absentSlashBps)) / BPS;
        this.stake.set(a, s - cut);
        this.burnt.ERC20 += cut;
      }
      this.stats["case: an absent panel slashed"] = (this.stats["case: an absent panel slashed"] ?? 0) + 1;
    }
    const applies = g.status === "Disputed";
    const [ev] = parseEventLogs({ abi: this.f.disputes.abi, logs: receipt.logs, eventName: "CaseResolved" });
    expect(
      [ev?.args.verdict, ev?.args.refunded, ev?.args.slashed, ev?.args.toChallenger, ev?.args.toRespondent, ev?.args.burned, ev?.args.arbitrationFees],
      "CaseResolved",
    ).to.deep.equal([verdict, applies ? refund : 0n, 0n, toC, toR, burned, fees]);
    c.status = status;
    this.log(`  case of gig ${g.id} ended v${verdict} refund ${refund}: challenger ${toC}, respondent ${toR}, burnt ${burned}, fees ${fees}`);
    const key = `case ended v${verdict} (${status === CASE.Expired ? "expired" : "resolved"})`;
    this.stats[key] = (this.stats[key] ?? 0) + 1;
    if (applies) this.settle(g, receipt, refund === g.amount ? "Refunded" : "Released", g.amount - refund, refund);
    else expect(this.settledIn(receipt), "a case on a gig the backstop released settles nothing").to.deep.equal([]);
    const asset = this.assetOf(kind);
    for (const a of c.panel) {
      const [locks, bond, owed] = await Promise.all([
        this.f.registry.read.locksOf([ARBITRATOR_ROLE, a]),
        this.f.registry.read.bondOf([ARBITRATOR_ROLE, a]),
        this.f.disputes.read.claimable([asset, a]),
      ]);
      expect([locks, bond.active, owed], `arbitrator ${a}: locks, stake, claimable`).to.deep.equal([
        this.arbitratorLocks(a),
        this.stake.get(a)!,
        this.claimable[kind].get(a) ?? 0n,
      ]);
    }
  }

  /** The escrow's dispute hooks refuse every caller but the DisputeManager. */
  private async hook({ id, gig }: Target): Promise<void> {
    const sender = this.rng.pick(SENDERS);
    if (this.rng.chance(0.5)) {
      await this.tx(`gig.freeze ${id}`, sender, (account) => this.f.gig.write.freeze([id], { account }), "AccessControlUnauthorizedAccount");
    } else {
      const refund = this.rng.bigint(0n, gig?.amount ?? 1n);
      await this.tx(`gig.resolve ${id} refund ${refund}`, sender, (account) => this.f.gig.write.resolve([id, refund], { account }), "AccessControlUnauthorizedAccount");
    }
  }

  /** Moves the clock: a little, a lot, or exactly onto an edge some gig's next action depends on. */
  private jump(): void {
    const edges: bigint[] = [];
    for (const g of this.gigs) {
      if (g.status === "Funded" || g.status === "Accepted") edges.push(g.deadline, g.deadline + 1n);
      if (g.status === "Delivered") edges.push(g.windowEndsAt - 1n, g.windowEndsAt, g.deadline + 1n);
      if (g.status === "Disputed") edges.push(g.frozenAt + BigInt(MAX_FREEZE) - 1n, g.frozenAt + BigInt(MAX_FREEZE));
    }
    for (const c of this.cases) if (!ended(c)) edges.push(c.respondBy, c.respondBy + 1n, c.deadline, c.deadline + 1n);
    const ahead = edges.filter((t) => t > this.now + 1n);
    const r = this.rng.next();
    const target =
      ahead.length > 0 && r < 0.35 ? this.rng.pick(ahead) : this.now + BigInt(r < 0.9 ? this.rng.int(2, 1_800) : this.rng.int(86_400, 40 * 86_400));
    this.jumpTo = target;
    this.log(`jump to t=${target}`);
  }

  /**
   * One random step: fund a gig, move the clock, or act on a gig — mostly with an action its status allows
   * (so that gigs travel every path), otherwise with any action (which must then fail as predicted).
   */
  async randomStep(): Promise<void> {
    this.step++;
    const live = this.gigs.filter((g) => g.status !== "Released" && g.status !== "Refunded").length;
    const r = this.rng.next();
    if (r < (live < 3 ? 0.4 : live > 6 ? 0.05 : 0.15)) return this.fund();
    if (r < 0.3) return this.jump();
    // Disputes get their share: open a case on a gig whose window is open, or move a live case along.
    const d = this.rng.next();
    const openable = this.gigs.filter((g) => g.status === "Delivered" && this.nextAt() < g.windowEndsAt);
    if (openable.length > 0 && d < 0.12) return this.openCase(this.targetOf(this.rng.pick(openable)));
    const liveCases = this.cases.filter((c) => !ended(c));
    if (liveCases.length > 0 && d < 0.55) return this.caseStep(this.targetOf(this.rng.pick(liveCases).gig));
    const target = this.pickGig();
    const fits: Record<StatusName, Partial<Record<Action, number>>> = {
      None: {},
      Funded: { accept: 8, cancel: 1, refund: 1 },
      Accepted: { deliver: 8, refund: 1, confirmProvider: 3, dismissProvider: 3 },
      Delivered: { acceptDelivery: 2, release: 2, openCase: 6, refund: 0.5 },
      Disputed: { caseStep: 12, release: 1 },
      Released: {},
      Refunded: {},
    };
    const weights = Object.fromEntries(ACTIONS.map((a) => [a, 0.4 + (fits[target.gig?.status ?? "None"][a] ?? 0)])) as Record<Action, number>;
    await this[this.rng.weighted(weights)](target);
  }

  /*------------------------------ invariants ------------------------------*/

  async checkInvariants(): Promise<void> {
    const { f } = this;
    // 1. Per asset, the escrow holds exactly the amounts of the gigs that are not final plus the claimables.
    for (const kind of KINDS) {
      const live = this.gigs
        .filter((g) => g.kind === kind && g.status !== "Released" && g.status !== "Refunded")
        .reduce((sum, g) => sum + g.amount, 0n);
      const held = kind === "ETH" ? await f.publicClient.getBalance({ address: f.gig.address }) : await f.token.read.balanceOf([f.gig.address]);
      // LaborGas never refuses a transfer, so nothing is deferred here (test/adversarial/payouts.test.ts
      // blocks recipients); the claimables still belong in the equation.
      const claimables = await Promise.all(PARTIES.map((p) => f.gig.read.claimableOf([this.assetOf(kind), this.address(p)])));
      const claimable = claimables.reduce((a, b) => a + b, 0n);
      expect(claimable, `claimable ${kind}`).to.equal(0n);
      expect(held, `escrow ${kind} = Σ amounts of live gigs + claimables`).to.equal(live + claimable);
    }
    // 2. Every party holds its starting balance + what the model paid it − what it escrowed − its gas.
    const now = await this.balances();
    for (const kind of KINDS) {
      for (const p of PARTIES) {
        const gas = kind === "ETH" ? this.gas[p] : 0n;
        expect(now[kind][p], `${p} ${kind} balance`).to.equal(
          this.initial[kind][p] + this.received[kind][p] - this.spent[kind][p] + this.dmNet[kind][p] - gas,
        );
      }
      expect(this.received[kind].idle, "an inactive provider is never paid").to.equal(0n);
    }
    // 3. The DisputeManager holds exactly, per asset, the bonds of its live cases plus the fees credited to
    // arbitrators and not claimed; 0x…dEaD got exactly the burnt shares (and absent arbitrators' stake).
    const providers = ["provider", "otherProvider", "idle"] as const;
    const [dmEth, dmToken, deadEth, deadToken, ...locks] = await Promise.all([
      f.publicClient.getBalance({ address: f.disputes.address }),
      f.token.read.balanceOf([f.disputes.address]),
      this.deadBalance("ETH"),
      this.deadBalance("ERC20"),
      ...providers.map((p) => f.registry.read.locksOf([PROVIDER_ROLE_ID, this.address(p)])),
    ]);
    expect(dmEth, "DisputeManager ETH = live bonds + claimable fees").to.equal(this.dmHeld.ETH + this.dmClaimable.ETH);
    expect(dmToken, "DisputeManager LGAS = live bonds + claimable fees").to.equal(this.dmHeld.ERC20 + this.dmClaimable.ERC20);
    expect(deadEth, "burnt ETH").to.equal(this.initialDead.ETH + this.burnt.ETH);
    expect(deadToken, "burnt LGAS").to.equal(this.initialDead.ERC20 + this.burnt.ERC20);
    // 4. Each provider's bond carries one lock per live accepted, delivered or disputed gig of its own.
    for (const [i, p] of providers.entries()) {
      const live = this.gigs.filter((g) => g.provider === p && (g.status === "Accepted" || g.status === "Delivered" || g.status === "Disputed"));
      expect(locks[i], `${p}'s bond locks`).to.equal(BigInt(live.length));
    }
    // 5. The stored gigs match the model.
    expect(await f.gig.read.gigCount()).to.equal(BigInt(this.gigs.length));
    const stored = await Promise.all(this.gigs.map((g) => f.gig.read.gigOf([g.id])));
    for (const [i, g] of this.gigs.entries()) {
      const s = stored[i]!;
      expect(
        [s.status, s.amount, s.provider, s.client, BigInt(s.deadline), BigInt(s.windowEndsAt), BigInt(s.frozenAt)],
        `gigOf(${g.id})`,
      ).to.deep.equal([
        STATUS[g.status],
        g.amount,
        g.provider ? this.address(g.provider) : zeroAddress,
        this.address(g.client),
        g.deadline,
        g.windowEndsAt,
        g.frozenAt,
      ]);
    }
  }

  /**
   * Ends every case (finalize a decided verdict past its appeal window; expire the rest to the slow path, where
   * governance decides or the case expires), settles every gig still live, has every arbitrator claim its fees,
   * then checks that everything escrowed was paid out exactly once and nothing is left anywhere.
   */
  async drain(): Promise<void> {
    this.draining = true;
    for (const c of this.cases) {
      for (let guard = 0; !ended(c); guard++) {
        expect(guard, `case of gig ${c.gig.id} ends`).to.be.below(4);
        if (c.status === CASE.Decided) {
          this.jumpTo = c.deadline + 1n;
          await this.caseFinalize(c);
        } else if (c.status === CASE.SlowPath && this.rng.chance(0.5)) {
          await this.caseSlowPath(c);
        } else {
          this.jumpTo = c.deadline + 1n;
          await this.caseExpire(c);
        }
        await this.checkInvariants();
      }
    }
    for (const g of this.gigs) {
      expect(g.status, `gig ${g.id}: no gig is disputed once every case ended`).to.not.equal("Disputed");
      if (g.status === "Funded" || g.status === "Accepted") {
        this.jumpTo = g.deadline + 1n;
        await this.refund_(g);
      } else if (g.status === "Delivered") {
        this.jumpTo = g.windowEndsAt;
        await this.release_(g);
      }
      await this.checkInvariants();
    }
    for (const kind of KINDS) {
      for (const [a, owed] of this.claimable[kind]) {
        if (owed === 0n) continue;
        const wallet = this.f.wallets.find((w) => getAddress(w.account.address) === a)!;
        await this.tx(`claim ${kind} by ${a}`, wallet, (account) => this.f.disputes.write.claim([this.assetOf(kind)], { account }), undefined);
        this.claimable[kind].set(a, 0n);
        this.dmClaimable[kind] -= owed;
      }
    }
    await this.checkInvariants();
    const { f } = this;
    expect(await f.publicClient.getBalance({ address: f.disputes.address }), "DisputeManager ETH after drain").to.equal(0n);
    expect(await f.token.read.balanceOf([f.disputes.address]), "DisputeManager LGAS after drain").to.equal(0n);
    for (const a of f.arbitrators) {
      expect(await f.registry.read.locksOf([ARBITRATOR_ROLE, a]), `${a} unlocked after drain`).to.equal(0n);
      expect((await f.registry.read.bondOf([ARBITRATOR_ROLE, a])).active, `${a} stake`).to.equal(this.stake.get(a)!);
      for (const kind of KINDS) expect(await f.disputes.read.claimable([this.assetOf(kind), a]), `${a} claimable ${kind}`).to.equal(0n);
    }
    expect(await f.publicClient.getBalance({ address: f.gig.address }), "escrow ETH after drain").to.equal(0n);
    expect(await f.token.read.balanceOf([f.gig.address]), "escrow LGAS after drain").to.equal(0n);
    for (const kind of KINDS) {
      const out = PARTIES.reduce((sum, p) => sum + this.received[kind][p], 0n);
      expect(out, `${kind}: everything escrowed was paid out exactly once`).to.equal(this.totalIn[kind]);
    }
    const events = await f.publicClient.getContractEvents({
      address: f.gig.address,
      abi: f.gig.abi,
      eventName: "GigSettled",
      fromBlock: this.startBlock + 1n,
    });
    expect(events.length, "one GigSettled per gig").to.equal(this.gigs.length);
    for (const g of this.gigs) {
      const mine = events.filter((e) => e.args.gigId === g.id);
      expect(mine.map((e) => [e.args.status, e.args.toProvider, e.args.toClient]), `gig ${g.id} settled once`).to.deep.equal([
        [STATUS[g.paid!.status], g.paid!.toProvider, g.paid!.toClient],
      ]);
      expect(g.paid!.toProvider + g.paid!.toClient, `gig ${g.id} paid its amount`).to.equal(g.amount);
    }
  }

  private async refund_(g: ModelGig): Promise<void> {
    const receipt = await this.tx(`drain: refund ${g.id}`, "relayer", (account) => this.f.gig.write.refund([g.id], { account }), undefined);
    this.settle(g, receipt!, "Refunded", 0n, g.amount);
  }

  private async release_(g: ModelGig): Promise<void> {
    const receipt = await this.tx(`drain: release ${g.id}`, "relayer", (account) => this.f.gig.write.release([g.id], { account }), undefined);
    this.settle(g, receipt!, "Released", g.amount, 0n);
  }
}

/*//////////////////////////////////////////////////////////////
                        PROVIDER BOND LOCKS
//////////////////////////////////////////////////////////////*/

describe("GigEscrow: the provider's bond is locked while an accepted gig is live", () => {
  const locksOf = (g: Gig, who: Wallet = g.provider) => g.registry.read.locksOf([PROVIDER_ROLE_ID, who.account.address]);

  /** The registry's lock events in `receipt`, as [name, account, locks]. */
  function lockEvents(g: Gig, receipt: TransactionReceipt) {
    const logs = receipt.logs.filter((l) => getAddress(l.address) === getAddress(g.registry.address));
    return parseEventLogs({ abi: g.registry.abi, logs })
      .filter((e) => e.eventName === "BondLocked" || e.eventName === "BondUnlocked")
      .map((e) => [e.eventName, (e.args as { account: Address }).account, (e.args as { locks: bigint }).locks]);
  }

  for (const kind of KINDS) {
    describe(kind, () => {
      it("accept locks the provider's bond (BondLocked), one lock per live gig", async () => {
        const g = await loadFixture(FUNDED[kind]);
        expect(await locksOf(g)).to.equal(0n);
        const receipt = await mined(g, await g.gig.write.accept([g.gigId], { account: g.provider.account }));
        expect(lockEvents(g, receipt)).to.deep.equal([["BondLocked", addressOf(g.provider), 1n]]);
        expect(await locksOf(g)).to.equal(1n);
        const second = gigIdFrom(g, await mined(g, await sendFund(g, await argsFor(g, g.spec))));
        await mined(g, await g.gig.write.accept([second], { account: g.provider.account }));
        expect(await locksOf(g)).to.equal(2n);
        expect(await locksOf(g, g.otherProvider)).to.equal(0n);
      });

      it("an open gig locks the bond of the provider that takes it", async () => {
        const g = await loadFixture(OPEN[kind]);
        await mined(g, await g.gig.write.accept([g.gigId], { account: g.otherProvider.account }));
        expect(await locksOf(g, g.otherProvider)).to.equal(1n);
        expect(await locksOf(g)).to.equal(0n);
      });

      type Ending = { name: string; from: Record<Kind, () => Promise<Gig>>; settle: (g: Gig) => Promise<Hash> };
      const endings: Ending[] = [
        {
          name: "acceptDelivery",
          from: DELIVERED,
          settle: (g) => g.gig.write.acceptDelivery([g.gigId], { account: g.client.account }),
        },
        {
          name: "release after the dispute window",
          from: DELIVERED,
          settle: async (g) => {
            await time.increase(WINDOW);
            return g.gig.write.release([g.gigId], { account: g.stranger.account });
          },
        },
        {
          name: "refund of an accepted gig after its deadline",
          from: ACCEPTED,
          settle: async (g) => {
            await time.increaseTo(g.deadline + 1);
            return g.gig.write.refund([g.gigId], { account: g.stranger.account });
          },
        },
        {
          name: "resolve of a disputed gig",
          from: DISPUTED,
          settle: (g) => g.gig.write.resolve([g.gigId, 1n], { account: g.disputes.account }),
        },
        {
          name: "the freeze backstop's release",
          from: DISPUTED,
          settle: async (g) => {
            await time.increase(MAX_FREEZE);
            return g.gig.write.release([g.gigId], { account: g.stranger.account });
          },
        },
      ];
      for (const e of endings) {
        it(`${e.name} releases the lock (BondUnlocked)`, async () => {
          const g = await loadFixture(e.from[kind]);
          expect(await locksOf(g)).to.equal(1n);
          const receipt = await mined(g, await e.settle(g));
          expect(lockEvents(g, receipt)).to.deep.equal([["BondUnlocked", addressOf(g.provider), 0n]]);
          expect(await locksOf(g)).to.equal(0n);
        });
      }

      for (const [name, settle] of [
        ["cancel", (g: Gig) => g.gig.write.cancel([g.gigId], { account: g.client.account })],
        [
          "refund after the deadline",
          async (g: Gig) => {
            await time.increaseTo(g.deadline + 1);
            return g.gig.write.refund([g.gigId], { account: g.stranger.account });
          },
        ],
      ] as const) {
        it(`${name} of an unaccepted gig touches no lock`, async () => {
          const g = await loadFixture(FUNDED[kind]);
          // Another gig holds a lock, which must survive.
          const other = gigIdFrom(g, await mined(g, await sendFund(g, await argsFor(g, g.spec))));
          await mined(g, await g.gig.write.accept([other], { account: g.provider.account }));
          const receipt = await mined(g, await settle(g));
          expect(await statusOf(g)).to.equal(STATUS.Refunded);
          expect(lockEvents(g, receipt)).to.deep.equal([]);
          expect(await locksOf(g)).to.equal(1n);
        });
      }

      it("a provider cannot start unbonding nor withdraw while a gig it accepted is live; it can once the gig settles", async () => {
        const g = await loadFixture(FUNDED[kind]);
        const extra = parseEther("10");
        const who = addressOf(g.provider);
        await g.token.write.mint([who, extra]);
        await g.token.write.approve([g.registry.address, extra], { account: g.provider.account });
        await g.registry.write.bond([PROVIDER_ROLE_ID, extra], { account: g.provider.account });
        await g.registry.write.requestUnbond([PROVIDER_ROLE_ID, extra], { account: g.provider.account });
        await mined(g, await g.gig.write.accept([g.gigId], { account: g.provider.account }));
        await mined(g, await g.gig.write.deliver([g.gigId, DELIVERABLE, ROOT], { account: g.provider.account }));
        await time.increase(30 * 86_400);
        await expectRevert(g.registry.write.withdraw([PROVIDER_ROLE_ID], { account: g.provider.account }), "BondIsLocked", [
          PROVIDER_ROLE_ID,
          who,
          1n,
        ]);
        await expectRevert(
          g.registry.write.requestUnbond([PROVIDER_ROLE_ID, 1n], { account: g.provider.account }),
          "BondIsLocked",
          [PROVIDER_ROLE_ID, who, 1n],
        );
        await mined(g, await g.gig.write.acceptDelivery([g.gigId], { account: g.client.account }));
        const before = await g.token.read.balanceOf([who]);
        await mined(g, await g.registry.write.withdraw([PROVIDER_ROLE_ID], { account: g.provider.account }));
        expect((await g.token.read.balanceOf([who])) - before).to.equal(extra);
      });
    });
  }
});
