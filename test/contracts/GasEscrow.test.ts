import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import {
  compactSignatureToSignature,
  decodeErrorResult,
  getAddress,
  keccak256,
  maxUint256,
  parseEther,
  parseEventLogs,
  recoverAddress,
  stringToBytes,
  zeroAddress,
  zeroHash,
  type Address,
  type Hash,
  type Hex,
  type LocalAccount,
} from "viem";

import { gasEscrowDomain, toCompactSignature, toHighS, type GasEscrowDomain } from "../../channel-client/core/eip712";
import { settlementSummaryDigest, signSettlementSummary, type SettlementSummary } from "../../channel-client/core/summary";
import { sessionIdOf, type ChannelRef, type ChannelTerms } from "../../channel-client/core/terms";
import { escrowFixture, hardhatAccount, makeTerms, ROLE, TOKEN_SUPPLY } from "../helpers/fixtures";
import { expectRevert } from "../helpers/revert";

/*//////////////////////////////////////////////////////////////
                         REVERT ASSERTIONS
//////////////////////////////////////////////////////////////*/


/*//////////////////////////////////////////////////////////////
                              FIXTURES
//////////////////////////////////////////////////////////////*/

type Kind = "ETH" | "ERC20";
const KINDS = ["ETH", "ERC20"] as const;

const AMOUNT = parseEther("2");
const TOP_UP = parseEther("0.5");
const MIN_DURATION = 60n;
const MAX_DURATION = 30n * 24n * 3600n;
const MAX_UINT128 = 2n ** 128n - 1n;

/** The escrow fixture plus two outside accounts: a relayer and a token holder that never approved. */
async function baseFixture() {
  const f = await escrowFixture();
  // Submits closes, so that no party's ETH balance pays the gas and deltas are exact.
  const relayer = f.wallets[5]!;
  // Holds tokens but never approved the escrow.
  const outsider = f.wallets[6]!;
  await f.token.write.mint([f.stranger.account.address, TOKEN_SUPPLY]);
  await f.token.write.approve([f.escrow.address, TOKEN_SUPPLY], { account: f.stranger.account });
  await f.token.write.mint([outsider.account.address, TOKEN_SUPPLY]);
  return { ...f, relayer, outsider };
}

type Base = Awaited<ReturnType<typeof baseFixture>>;

/** Everything that differs between a native-ETH and an ERC-20 channel. */
function assetSpec(kind: Kind, f: Base) {
  const asset: Address = kind === "ETH" ? zeroAddress : f.token.address;
  return {
    asset,
    terms: (overrides: Partial<ChannelTerms> = {}): ChannelTerms => makeTerms(asset, overrides),
    /** The `msg.value` that funds `amount` correctly. */
    value: (amount: bigint): bigint => (kind === "ETH" ? amount : 0n),
    balanceOf: (who: Address): Promise<bigint> =>
      kind === "ETH" ? f.publicClient.getBalance({ address: who }) : f.token.read.balanceOf([who]),
  };
}

async function openedChannel(kind: Kind) {
  const f = await baseFixture();
  const spec = assetSpec(kind, f);
  const terms = spec.terms();
  const hash = await f.escrow.write.open([terms, AMOUNT], { account: f.funder.account, value: spec.value(AMOUNT) });
  const receipt = await f.publicClient.waitForTransactionReceipt({ hash });
  const ref: ChannelRef = { terms, openedAt: receipt.blockNumber };
  return { ...f, spec, ref, sessionId: sessionIdOf(f.domain, ref) };
}

/** A channel holding AMOUNT, opened by the funder; one named fixture per asset kind. */
const OPENED = {
  ETH: async function openedEthChannel() {
    return openedChannel("ETH");
  },
  ERC20: async function openedErc20Channel() {
    return openedChannel("ERC20");
  },
} as const;

type Opened = Awaited<ReturnType<typeof openedChannel>>;

/*//////////////////////////////////////////////////////////////
                              HELPERS
//////////////////////////////////////////////////////////////*/

const ROOT: Hex = keccak256(stringToBytes("receipt root"));

type Sig = { r: Hex; vs: Hex };
type Final = { finalSeq: bigint; finalAmount: bigint; finalReceiptRoot: Hex };

function summaryOf(c: Opened, final: Final, overrides: Partial<SettlementSummary> = {}): SettlementSummary {
  return {
    sessionId: c.sessionId,
    provider: c.ref.terms.provider,
    payer: c.ref.terms.payer,
    termsHash: c.ref.terms.termsHash,
    ...final,
    mode: "Cooperative",
    ...overrides,
  };
}

async function sign(account: LocalAccount, domain: GasEscrowDomain, summary: SettlementSummary): Promise<Hex> {
  return signSettlementSummary({ account, domain, summary });
}

/** Both parties' signatures over the honest summary of `final`. */
async function bothSign(c: Opened, final: Final): Promise<{ payerSig: Hex; providerSig: Hex }> {
  const summary = summaryOf(c, final);
  return {
    payerSig: await sign(hardhatAccount(ROLE.payer), c.domain, summary),
    providerSig: await sign(hardhatAccount(ROLE.provider), c.domain, summary),
  };
}

function submitClose(c: Opened, final: Final, payerSig: Hex | Sig, providerSig: Hex | Sig, ref: ChannelRef = c.ref) {
  const compact = (s: Hex | Sig): Sig => (typeof s === "string" ? toCompactSignature(s) : s);
  return c.escrow.write.closeCooperative(
    [ref.terms, ref.openedAt, final.finalSeq, final.finalAmount, final.finalReceiptRoot, compact(payerSig), compact(providerSig)],
    { account: c.relayer.account },
  );
}

async function receiptOf(c: Base, hash: Hash) {
  const receipt = await c.publicClient.waitForTransactionReceipt({ hash });
  expect(receipt.status).to.equal("success");
  return receipt;
}

/** Sends a transaction that must be mined but revert; returns the custom error it reverted with. */
async function minedRevert(c: Base, hash: Hash) {
  const receipt = await c.publicClient.waitForTransactionReceipt({ hash });
  expect(receipt.status).to.equal("reverted");
  const trace = (await hre.network.provider.send("debug_traceTransaction", [
    hash,
    { disableMemory: true, disableStack: true, disableStorage: true },
  ])) as { failed: boolean; returnValue: string };
  expect(trace.failed).to.equal(true);
  const data = (trace.returnValue.startsWith("0x") ? trace.returnValue : `0x${trace.returnValue}`) as Hex;
  return decodeErrorResult({ abi: c.escrow.abi, data });
}

async function nextBlock(c: Base): Promise<bigint> {
  return (await c.publicClient.getBlockNumber()) + 1n;
}

/*//////////////////////////////////////////////////////////////
                              THE SUITE
//////////////////////////////////////////////////////////////*/

describe("GasEscrow", () => {
  describe("computeSettlement", () => {
    // (held, owed, feeBps) → (toProvider, fee, toFunder): the provider earns min(held, owed), the treasury
    // takes feeBps of that (rounded down), and the funder gets back what was not earned.
    const table: [held: bigint, owed: bigint, feeBps: bigint, toProvider: bigint, fee: bigint, toFunder: bigint][] = [
      [0n, 0n, 0n, 0n, 0n, 0n],
      [100n, 0n, 0n, 0n, 0n, 100n],
      [100n, 1n, 0n, 1n, 0n, 99n],
      [100n, 40n, 0n, 40n, 0n, 60n],
      [100n, 100n, 0n, 100n, 0n, 0n],
      [100n, 101n, 0n, 100n, 0n, 0n],
      [100n, maxUint256, 0n, 100n, 0n, 0n],
      [0n, 5n, 0n, 0n, 0n, 0n],
      [MAX_UINT128, MAX_UINT128 + 1n, 0n, MAX_UINT128, 0n, 0n],
      [10_000n, 10_000n, 100n, 9_900n, 100n, 0n],
      [10_000n, 5_000n, 1_000n, 4_500n, 500n, 5_000n],
      [100n, 99n, 1_000n, 90n, 9n, 1n],
      [100n, 9n, 1n, 9n, 0n, 91n],
      [MAX_UINT128, MAX_UINT128, 1_000n, MAX_UINT128 - MAX_UINT128 / 10n, MAX_UINT128 / 10n, 0n],
    ];
    for (const [held, owed, feeBps, toProvider, fee, toFunder] of table) {
      it(`splits held=${held} owed=${owed} fee=${feeBps}bps into (${toProvider}, ${fee}, ${toFunder})`, async () => {
        const { escrow } = await loadFixture(baseFixture);
        expect(await escrow.read.computeSettlement([held, owed, feeBps])).to.deep.equal([toProvider, fee, toFunder]);
        expect(toProvider + fee + toFunder).to.equal(held);
      });
    }
  });

  describe("signature encoding", () => {
    it("cannot submit the high-s twin of a signature: ERC-2098 has no room for s >= 2^255", async () => {
      const { domain } = await loadFixture(baseFixture);
      const summary: SettlementSummary = {
        sessionId: keccak256(stringToBytes("session")),
        provider: hardhatAccount(ROLE.provider).address,
        payer: hardhatAccount(ROLE.payer).address,
        termsHash: keccak256(stringToBytes("terms")),
        finalSeq: 1n,
        finalAmount: 1n,
        finalReceiptRoot: ROOT,
        mode: "Cooperative",
      };
      const low = await sign(hardhatAccount(ROLE.payer), domain, summary);
      const high = toHighS(low);
      // The twin is a valid 65-byte signature by the same signer ...
      const digest = settlementSummaryDigest(domain, summary);
      expect(await recoverAddress({ hash: digest, signature: high })).to.equal(summary.payer);
      // ... whose s is n - s_low >= 2^255, so the compact form the escrow takes cannot carry it.
      expect(BigInt(`0x${high.slice(66, 130)}`) >= 2n ** 255n).to.equal(true);
      expect(() => toCompactSignature(high)).to.throw();
    });
  });

  for (const kind of KINDS) {
    describe(kind, () => {
      /*////////////////////////////// open //////////////////////////////*/
      describe("open", () => {
        it("opens a channel: returns and emits the session id, records the deposit, holds exactly the amount", async () => {
          const c = await loadFixture(baseFixture);
          const spec = assetSpec(kind, c);
          const terms = spec.terms();
          const escrowBefore = await spec.balanceOf(c.escrow.address);
          const funderBefore = await spec.balanceOf(c.funder.account.address);

          // Hardhat runs an eth_call on "latest" with the latest block's number; "pending" is the block
          // the transaction below is mined in, so the simulated return value is the real session id.
          const { result: returned } = await c.escrow.simulate.open([terms, AMOUNT], {
            account: c.funder.account.address,
            value: spec.value(AMOUNT),
            blockTag: "pending",
          });
          const hash = await c.escrow.write.open([terms, AMOUNT], { account: c.funder.account, value: spec.value(AMOUNT) });
          const receipt = await receiptOf(c, hash);

          const openedAt = receipt.blockNumber;
          const sessionId = sessionIdOf(c.domain, { terms, openedAt });
          expect(await c.escrow.read.sessionIdOf([terms, openedAt])).to.equal(sessionId);
          expect(returned).to.equal(sessionId);

          const escrowLogs = receipt.logs.filter((l) => getAddress(l.address) === getAddress(c.escrow.address));
          expect(parseEventLogs({ abi: c.escrow.abi, logs: escrowLogs }).map((e) => e.eventName)).to.deep.equal(["ChannelOpened"]);
          const opened = parseEventLogs({ abi: c.escrow.abi, eventName: "ChannelOpened", logs: receipt.logs });
          expect(opened).to.have.length(1);
          expect(opened[0]!.args).to.deep.equal({
            sessionId,
            payer: terms.payer,
            provider: terms.provider,
            asset: getAddress(spec.asset),
            openedAt,
            deposit: AMOUNT,
          });

          expect(await c.escrow.read.depositOf([sessionId])).to.equal(AMOUNT);
          expect(await spec.balanceOf(c.escrow.address)).to.equal(escrowBefore + AMOUNT);
          const gasPaid = kind === "ETH" ? receipt.gasUsed * receipt.effectiveGasPrice : 0n;
          expect(await spec.balanceOf(c.funder.account.address)).to.equal(funderBefore - AMOUNT - gasPaid);
        });

        it("gives the same terms a different session id in a later block, and keeps both deposits apart", async () => {
          const c = await loadFixture(baseFixture);
          const spec = assetSpec(kind, c);
          const terms = spec.terms();
          const ids: Hex[] = [];
          for (const amount of [AMOUNT, TOP_UP]) {
            const hash = await c.escrow.write.open([terms, amount], { account: c.funder.account, value: spec.value(amount) });
            const receipt = await receiptOf(c, hash);
            ids.push(sessionIdOf(c.domain, { terms, openedAt: receipt.blockNumber }));
          }
          expect(ids[0]).to.not.equal(ids[1]);
          expect(await c.escrow.read.depositOf([ids[0]!])).to.equal(AMOUNT);
          expect(await c.escrow.read.depositOf([ids[1]!])).to.equal(TOP_UP);
          expect(await spec.balanceOf(c.escrow.address)).to.equal(AMOUNT + TOP_UP);
        });

        it("rejects the same terms twice in one block with SessionExists", async () => {
          const c = await loadFixture(baseFixture);
          const spec = assetSpec(kind, c);
          const terms = spec.terms();
          const options = { account: c.funder.account, value: spec.value(AMOUNT), gas: 500_000n };
          let first: Hash;
          let second: Hash;
          await hre.network.provider.send("evm_setAutomine", [false]);
          try {
            first = await c.escrow.write.open([terms, AMOUNT], options);
            second = await c.escrow.write.open([terms, AMOUNT], options);
            await hre.network.provider.send("evm_mine", []);
          } finally {
            await hre.network.provider.send("evm_setAutomine", [true]);
          }
          const firstReceipt = await receiptOf(c, first);
          const secondReceipt = await c.publicClient.waitForTransactionReceipt({ hash: second });
          expect(secondReceipt.blockNumber).to.equal(firstReceipt.blockNumber);
          const sessionId = sessionIdOf(c.domain, { terms, openedAt: firstReceipt.blockNumber });
          const error = await minedRevert(c, second);
          expect(error.errorName).to.equal("SessionExists");
          expect(error.args).to.deep.equal([sessionId]);
          expect(await c.escrow.read.depositOf([sessionId])).to.equal(AMOUNT);
          expect(await spec.balanceOf(c.escrow.address)).to.equal(AMOUNT);
        });

        for (const duration of [MIN_DURATION, MAX_DURATION]) {
          it(`accepts a challenge duration of exactly ${duration} s`, async () => {
            const c = await loadFixture(baseFixture);
            const spec = assetSpec(kind, c);
            const terms = spec.terms({ challengeDuration: duration });
            const hash = await c.escrow.write.open([terms, AMOUNT], { account: c.funder.account, value: spec.value(AMOUNT) });
            const receipt = await receiptOf(c, hash);
            const sessionId = sessionIdOf(c.domain, { terms, openedAt: receipt.blockNumber });
            expect(await c.escrow.read.depositOf([sessionId])).to.equal(AMOUNT);
          });
        }

        type OpenCase = {
          name: string;
          only?: Kind;
          terms?: Partial<ChannelTerms>;
          amount?: bigint;
          /** msg.value; defaults to the correct value for the amount. */
          value?: bigint;
          from?: (c: Base) => Base["funder"];
          setup?: (c: Base) => Promise<unknown>;
          error: string;
          args: (c: Base, terms: ChannelTerms) => Promise<readonly unknown[]> | readonly unknown[];
        };
        const cases: OpenCase[] = [
          { name: "a zero payer", terms: { payer: zeroAddress }, error: "ZeroAddressParty", args: () => [0] },
          { name: "a zero provider", terms: { provider: zeroAddress }, error: "ZeroAddressParty", args: () => [1] },
          { name: "a zero funder", terms: { funder: zeroAddress }, error: "ZeroAddressParty", args: () => [2] },
          {
            name: "a challenge duration of 0",
            terms: { challengeDuration: 0n },
            error: "ChallengeDurationOutOfRange",
            args: () => [0n, MIN_DURATION, MAX_DURATION],
          },
          {
            name: "a challenge duration one second below the minimum",
            terms: { challengeDuration: MIN_DURATION - 1n },
            error: "ChallengeDurationOutOfRange",
            args: () => [MIN_DURATION - 1n, MIN_DURATION, MAX_DURATION],
          },
          {
            name: "a challenge duration one second above the maximum",
            terms: { challengeDuration: MAX_DURATION + 1n },
            error: "ChallengeDurationOutOfRange",
            args: () => [MAX_DURATION + 1n, MIN_DURATION, MAX_DURATION],
          },
          {
            name: "the largest challenge duration",
            terms: { challengeDuration: 2n ** 64n - 1n },
            error: "ChallengeDurationOutOfRange",
            args: () => [2n ** 64n - 1n, MIN_DURATION, MAX_DURATION],
          },
          {
            // Issue 12: a copy of someone else's terms cannot take their session id first.
            name: "a caller other than the funder named in the terms",
            from: (c) => c.stranger,
            error: "NotTheFunder",
            args: async (c, terms) => [
              sessionIdOf(c.domain, { terms, openedAt: await nextBlock(c) }),
              getAddress(c.stranger.account.address),
              getAddress(terms.funder),
            ],
          },
          { name: "a zero amount", amount: 0n, error: "ZeroDeposit", args: () => [] },
          { name: "less ETH than the amount", only: "ETH", value: AMOUNT - 1n, error: "EthValueMismatch", args: () => [AMOUNT - 1n, AMOUNT] },
          { name: "more ETH than the amount", only: "ETH", value: AMOUNT + 1n, error: "EthValueMismatch", args: () => [AMOUNT + 1n, AMOUNT] },
          { name: "no ETH for a non-zero amount", only: "ETH", value: 0n, error: "EthValueMismatch", args: () => [0n, AMOUNT] },
          { name: "ETH for a zero amount", only: "ETH", amount: 0n, value: 1n, error: "EthValueMismatch", args: () => [1n, 0n] },
          { name: "ETH sent along", only: "ERC20", value: 1n, error: "UnexpectedEth", args: () => [1n] },
          { name: "ETH equal to the amount sent along", only: "ERC20", value: AMOUNT, error: "UnexpectedEth", args: () => [AMOUNT] },
          {
            name: "a caller that never approved the escrow",
            only: "ERC20",
            terms: { funder: hardhatAccount(6).address },
            from: (c) => c.outsider,
            error: "TransferFromFailed",
            args: () => [],
          },
          {
            name: "an asset address without code",
            only: "ERC20",
            terms: { asset: hardhatAccount(ROLE.stranger).address },
            error: "TransferFromFailed",
            args: () => [],
          },
          {
            name: "an amount one above the caller's allowance and balance",
            only: "ERC20",
            amount: TOKEN_SUPPLY + 1n,
            error: "TransferFromFailed",
            args: () => [],
          },
          {
            name: "more than a uint128 can hold",
            only: "ERC20",
            amount: MAX_UINT128 + 1n,
            terms: { funder: hardhatAccount(7).address },
            from: (c) => c.wallets[7]!,
            setup: async (c) => {
              await c.token.write.mint([c.wallets[7]!.account.address, MAX_UINT128 + 1n]);
              await c.token.write.approve([c.escrow.address, maxUint256], { account: c.wallets[7]!.account });
            },
            error: "DepositOverflow",
            args: async (c, terms) => [sessionIdOf(c.domain, { terms, openedAt: await nextBlock(c) }), MAX_UINT128 + 1n],
          },
        ];

        for (const tc of cases.filter((tc) => tc.only === undefined || tc.only === kind)) {
          it(`reverts with ${tc.error} on ${tc.name}`, async () => {
            const c = await loadFixture(baseFixture);
            const spec = assetSpec(kind, c);
            const from = tc.from?.(c) ?? c.funder;
            await tc.setup?.(c);
            const terms = spec.terms(tc.terms);
            const amount = tc.amount ?? AMOUNT;
            const escrowBefore = await spec.balanceOf(c.escrow.address);
            const args = await tc.args(c, terms);
            await expectRevert(
              c.escrow.write.open([terms, amount], { account: from.account, value: tc.value ?? spec.value(amount) }),
              tc.error,
              args,
            );
            expect(await spec.balanceOf(c.escrow.address)).to.equal(escrowBefore);
          });
        }
      });

      /*////////////////////////////// deposit //////////////////////////////*/
      describe("deposit", () => {
        it("tops up: emits Deposited with the new total and holds exactly the sum", async () => {
          const c = await loadFixture(OPENED[kind]);
          const hash = await c.escrow.write.deposit([c.ref.terms, c.ref.openedAt, TOP_UP, TOP_UP], {
            account: c.funder.account,
            value: c.spec.value(TOP_UP),
          });
          const receipt = await receiptOf(c, hash);
          const deposited = parseEventLogs({ abi: c.escrow.abi, eventName: "Deposited", logs: receipt.logs });
          expect(deposited.map((e) => e.args)).to.deep.equal([
            { sessionId: c.sessionId, from: getAddress(c.funder.account.address), amount: TOP_UP, deposit: AMOUNT + TOP_UP },
          ]);
          expect(await c.escrow.read.depositOf([c.sessionId])).to.equal(AMOUNT + TOP_UP);
          expect(await c.spec.balanceOf(c.escrow.address)).to.equal(AMOUNT + TOP_UP);
        });

        it("accepts a top-up from a stranger, and the refund still goes to terms.funder", async () => {
          const c = await loadFixture(OPENED[kind]);
          const hash = await c.escrow.write.deposit([c.ref.terms, c.ref.openedAt, TOP_UP, TOP_UP], {
            account: c.stranger.account,
            value: c.spec.value(TOP_UP),
          });
          const receipt = await receiptOf(c, hash);
          const [deposited] = parseEventLogs({ abi: c.escrow.abi, eventName: "Deposited", logs: receipt.logs });
          expect(deposited!.args.from).to.equal(getAddress(c.stranger.account.address));

          const final: Final = { finalSeq: 3n, finalAmount: AMOUNT / 2n, finalReceiptRoot: ROOT };
          const { payerSig, providerSig } = await bothSign(c, final);
          const funderBefore = await c.spec.balanceOf(c.ref.terms.funder);
          const strangerBefore = await c.spec.balanceOf(c.stranger.account.address);
          await receiptOf(c, await submitClose(c, final, payerSig, providerSig));
          expect(await c.spec.balanceOf(c.ref.terms.funder)).to.equal(funderBefore + AMOUNT + TOP_UP - final.finalAmount);
          expect(await c.spec.balanceOf(c.stranger.account.address)).to.equal(strangerBefore);
        });

        it("keeps the contract's balance equal to the sum of the deposits it holds across several channels", async () => {
          const c = await loadFixture(OPENED[kind]);
          const ids: Hex[] = [c.sessionId];
          const refs: ChannelRef[] = [c.ref];
          const holdings = async () => {
            let sum = 0n;
            for (const id of ids) sum += await c.escrow.read.depositOf([id]);
            return sum;
          };
          for (const [i, amount] of [1n, 7n, 10n ** 18n].entries()) {
            const terms = c.spec.terms({ nonce: BigInt(i + 2) });
            const hash = await c.escrow.write.open([terms, amount], { account: c.funder.account, value: c.spec.value(amount) });
            const ref = { terms, openedAt: (await receiptOf(c, hash)).blockNumber };
            refs.push(ref);
            ids.push(sessionIdOf(c.domain, ref));
            expect(await c.spec.balanceOf(c.escrow.address)).to.equal(await holdings());
          }
          for (const [i, ref] of refs.entries()) {
            await receiptOf(
              c,
              await c.escrow.write.deposit([ref.terms, ref.openedAt, BigInt(i + 1), 0n], {
                account: c.stranger.account,
                value: c.spec.value(BigInt(i + 1)),
              }),
            );
            expect(await c.spec.balanceOf(c.escrow.address)).to.equal(await holdings());
          }
          const final: Final = { finalSeq: 1n, finalAmount: 1n, finalReceiptRoot: zeroHash };
          const { payerSig, providerSig } = await bothSign(c, final);
          await receiptOf(c, await submitClose(c, final, payerSig, providerSig));
          expect(await c.escrow.read.depositOf([c.sessionId])).to.equal(0n);
          expect(await c.spec.balanceOf(c.escrow.address)).to.equal(await holdings());
          expect(await holdings()).to.equal(1n + 7n + 10n ** 18n + 2n + 3n + 4n);
        });

        type DepositCase = {
          name: string;
          only?: Kind;
          ref?: (c: Opened) => ChannelRef;
          amount?: bigint;
          expected?: bigint;
          value?: bigint;
          error: string;
          args: (c: Opened) => readonly unknown[];
        };
        const cases: DepositCase[] = [
          {
            name: "an unknown openedAt",
            ref: (c) => ({ ...c.ref, openedAt: c.ref.openedAt + 1n }),
            error: "ChannelNotOpen",
            args: (c) => [sessionIdOf(c.domain, { ...c.ref, openedAt: c.ref.openedAt + 1n })],
          },
          {
            name: "different terms (another nonce)",
            ref: (c) => ({ ...c.ref, terms: { ...c.ref.terms, nonce: 2n } }),
            error: "ChannelNotOpen",
            args: (c) => [sessionIdOf(c.domain, { ...c.ref, terms: { ...c.ref.terms, nonce: 2n } })],
          },
          {
            name: "different terms (another funder)",
            ref: (c) => ({ ...c.ref, terms: { ...c.ref.terms, funder: c.stranger.account.address } }),
            error: "ChannelNotOpen",
            args: (c) => [sessionIdOf(c.domain, { ...c.ref, terms: { ...c.ref.terms, funder: c.stranger.account.address } })],
          },
          { name: "a minimum one above what arrives", expected: TOP_UP + 1n, error: "DepositBelowMinimum", args: (c) => [c.sessionId, TOP_UP, TOP_UP + 1n] },
          { name: "a minimum of the channel's whole deposit", expected: AMOUNT, error: "DepositBelowMinimum", args: (c) => [c.sessionId, TOP_UP, AMOUNT] },
          { name: "a zero amount", amount: 0n, error: "ZeroDeposit", args: () => [] },
          { name: "less ETH than the amount", only: "ETH", value: TOP_UP - 1n, error: "EthValueMismatch", args: () => [TOP_UP - 1n, TOP_UP] },
          { name: "more ETH than the amount", only: "ETH", value: TOP_UP + 1n, error: "EthValueMismatch", args: () => [TOP_UP + 1n, TOP_UP] },
          { name: "ETH sent along", only: "ERC20", value: TOP_UP, error: "UnexpectedEth", args: () => [TOP_UP] },
        ];

        for (const tc of cases.filter((tc) => tc.only === undefined || tc.only === kind)) {
          it(`reverts with ${tc.error} on ${tc.name}`, async () => {
            const c = await loadFixture(OPENED[kind]);
            const ref = tc.ref?.(c) ?? c.ref;
            const amount = tc.amount ?? TOP_UP;
            await expectRevert(
              c.escrow.write.deposit([ref.terms, ref.openedAt, amount, tc.expected ?? 0n], {
                account: c.funder.account,
                value: tc.value ?? c.spec.value(amount),
              }),
              tc.error,
              tc.args(c),
            );
            expect(await c.escrow.read.depositOf([c.sessionId])).to.equal(AMOUNT);
            expect(await c.spec.balanceOf(c.escrow.address)).to.equal(AMOUNT);
          });
        }

        if (kind === "ERC20") {
          it("reverts with DepositOverflow when the total would exceed a uint128, and accepts exactly the maximum", async () => {
            const c = await loadFixture(OPENED[kind]);
            await c.token.write.mint([c.funder.account.address, MAX_UINT128]);
            await c.token.write.approve([c.escrow.address, maxUint256], { account: c.funder.account });
            await expectRevert(
              c.escrow.write.deposit([c.ref.terms, c.ref.openedAt, MAX_UINT128 - AMOUNT + 1n, 0n], { account: c.funder.account }),
              "DepositOverflow",
              [c.sessionId, MAX_UINT128 + 1n],
            );
            await receiptOf(
              c,
              await c.escrow.write.deposit([c.ref.terms, c.ref.openedAt, MAX_UINT128 - AMOUNT, MAX_UINT128 - AMOUNT], { account: c.funder.account }),
            );
            expect(await c.escrow.read.depositOf([c.sessionId])).to.equal(MAX_UINT128);
          });
        }

        it("credits a top-up that a stranger's 1-wei deposit front-ran in the same block (issue 12)", async () => {
          const c = await loadFixture(OPENED[kind]);
          await hre.network.provider.send("evm_setAutomine", [false]);
          let frontRun: Hash;
          let topUp: Hash;
          try {
            frontRun = await c.escrow.write.deposit([c.ref.terms, c.ref.openedAt, 1n, 0n], {
              account: c.stranger.account,
              value: c.spec.value(1n),
              gas: 200_000n,
            });
            topUp = await c.escrow.write.deposit([c.ref.terms, c.ref.openedAt, TOP_UP, TOP_UP], {
              account: c.funder.account,
              value: c.spec.value(TOP_UP),
              gas: 200_000n,
            });
            await hre.network.provider.send("evm_mine", []);
          } finally {
            await hre.network.provider.send("evm_setAutomine", [true]);
          }
          const first = await receiptOf(c, frontRun);
          const second = await receiptOf(c, topUp);
          expect(second.blockNumber).to.equal(first.blockNumber);
          expect(await c.escrow.read.depositOf([c.sessionId])).to.equal(AMOUNT + 1n + TOP_UP);
          expect(await c.spec.balanceOf(c.escrow.address)).to.equal(AMOUNT + 1n + TOP_UP);
        });

        it("reverts with ChannelNotOpen after the channel was closed", async () => {
          const c = await loadFixture(OPENED[kind]);
          const final: Final = { finalSeq: 1n, finalAmount: 1n, finalReceiptRoot: zeroHash };
          const { payerSig, providerSig } = await bothSign(c, final);
          await receiptOf(c, await submitClose(c, final, payerSig, providerSig));
          for (const expected of [AMOUNT, 0n]) {
            await expectRevert(
              c.escrow.write.deposit([c.ref.terms, c.ref.openedAt, TOP_UP, expected], {
                account: c.funder.account,
                value: c.spec.value(TOP_UP),
              }),
              "ChannelNotOpen",
              [c.sessionId],
            );
          }
        });
      });

      /*////////////////////////////// closeCooperative //////////////////////////////*/
      describe("closeCooperative", () => {
        const payouts: [name: string, finalAmount: bigint][] = [
          ["part of the deposit", (AMOUNT * 3n) / 10n],
          ["nothing (everything refunded)", 0n],
          ["the whole deposit (nothing refunded)", AMOUNT],
        ];
        for (const [name, finalAmount] of payouts) {
          it(`settles paying the provider ${name}: exact balances, ChannelSettled, channel deleted`, async () => {
            const c = await loadFixture(OPENED[kind]);
            const final: Final = { finalSeq: 42n, finalAmount, finalReceiptRoot: ROOT };
            const { payerSig, providerSig } = await bothSign(c, final);
            const parties = [c.ref.terms.provider, c.ref.terms.funder, c.ref.terms.payer, c.escrow.address] as const;
            const before = await Promise.all(parties.map((p) => c.spec.balanceOf(p)));

            const receipt = await receiptOf(c, await submitClose(c, final, payerSig, providerSig));

            const after = await Promise.all(parties.map((p) => c.spec.balanceOf(p)));
            expect(after.map((b, i) => b - before[i]!)).to.deep.equal([finalAmount, AMOUNT - finalAmount, 0n, -AMOUNT]);
            const settled = parseEventLogs({ abi: c.escrow.abi, eventName: "ChannelSettled", logs: receipt.logs });
            expect(settled.map((e) => e.args)).to.deep.equal([
              {
                sessionId: c.sessionId,
                mode: 0,
                finalSeq: 42n,
                receiptRoot: ROOT,
                paidToProvider: finalAmount,
                refundedToFunder: AMOUNT - finalAmount,
                fee: 0n,
              },
            ]);
            expect(await c.escrow.read.depositOf([c.sessionId])).to.equal(0n);
          });
        }

        it("settles a topped-up channel with the whole total", async () => {
          const c = await loadFixture(OPENED[kind]);
          await c.escrow.write.deposit([c.ref.terms, c.ref.openedAt, TOP_UP, TOP_UP], {
            account: c.funder.account,
            value: c.spec.value(TOP_UP),
          });
          const final: Final = { finalSeq: 7n, finalAmount: AMOUNT + TOP_UP, finalReceiptRoot: ROOT };
          const { payerSig, providerSig } = await bothSign(c, final);
          const providerBefore = await c.spec.balanceOf(c.ref.terms.provider);
          await receiptOf(c, await submitClose(c, final, payerSig, providerSig));
          expect(await c.spec.balanceOf(c.ref.terms.provider)).to.equal(providerBefore + AMOUNT + TOP_UP);
          expect(await c.spec.balanceOf(c.escrow.address)).to.equal(0n);
        });

        it("reverts a replay of the same signed summary with ChannelNotOpen", async () => {
          const c = await loadFixture(OPENED[kind]);
          const final: Final = { finalSeq: 5n, finalAmount: AMOUNT / 4n, finalReceiptRoot: ROOT };
          const { payerSig, providerSig } = await bothSign(c, final);
          await receiptOf(c, await submitClose(c, final, payerSig, providerSig));
          const providerBefore = await c.spec.balanceOf(c.ref.terms.provider);
          await expectRevert(submitClose(c, final, payerSig, providerSig), "ChannelNotOpen", [c.sessionId]);
          expect(await c.spec.balanceOf(c.ref.terms.provider)).to.equal(providerBefore);
        });

        it("reverts with ChannelNotOpen for a session that was never opened", async () => {
          const c = await loadFixture(OPENED[kind]);
          const final: Final = { finalSeq: 5n, finalAmount: 1n, finalReceiptRoot: ROOT };
          const ref: ChannelRef = { ...c.ref, openedAt: c.ref.openedAt - 1n };
          const { payerSig, providerSig } = await bothSign({ ...c, ref, sessionId: sessionIdOf(c.domain, ref) }, final);
          await expectRevert(submitClose(c, final, payerSig, providerSig, ref), "ChannelNotOpen", [sessionIdOf(c.domain, ref)]);
        });

        it("reverts with AmountExceedsDeposit when both parties signed more than the channel holds", async () => {
          const c = await loadFixture(OPENED[kind]);
          const final: Final = { finalSeq: 5n, finalAmount: AMOUNT + 1n, finalReceiptRoot: ROOT };
          const { payerSig, providerSig } = await bothSign(c, final);
          await expectRevert(submitClose(c, final, payerSig, providerSig), "AmountExceedsDeposit", [c.sessionId, AMOUNT + 1n, AMOUNT]);
          expect(await c.escrow.read.depositOf([c.sessionId])).to.equal(AMOUNT);
        });

        /*------------------------------ SignerMismatch ------------------------------*/

        const honest: Final = { finalSeq: 9n, finalAmount: AMOUNT / 2n, finalReceiptRoot: ROOT };
        const payer = hardhatAccount(ROLE.payer);
        const provider = hardhatAccount(ROLE.provider);
        const stranger = hardhatAccount(ROLE.stranger);

        type SignerCase = {
          name: string;
          /** Produces the two signatures submitted with the honest summary. */
          signatures: (c: Opened, summary: SettlementSummary) => Promise<{ payerSig: Hex; providerSig: Hex }>;
          /** Which signature the escrow rejects. */
          rejected: "payer" | "provider";
          /** Who that signature recovers to, when it is a known key. */
          recovered?: Address;
        };

        /** Signs `summary` (possibly altered) in `domain` (possibly another one) by both parties. */
        const signedBy =
          (
            payerKey: LocalAccount,
            providerKey: LocalAccount,
            alter: (s: SettlementSummary) => SettlementSummary = (s) => s,
            domainOf: (c: Opened) => Promise<GasEscrowDomain> | GasEscrowDomain = (c) => c.domain,
          ) =>
          async (c: Opened, summary: SettlementSummary) => {
            const domain = await domainOf(c);
            return {
              payerSig: await sign(payerKey, domain, alter(summary)),
              providerSig: await sign(providerKey, domain, alter(summary)),
            };
          };

        const signerCases: SignerCase[] = [
          { name: "a stranger signed as the payer", signatures: signedBy(stranger, provider), rejected: "payer", recovered: stranger.address },
          { name: "a stranger signed as the provider", signatures: signedBy(payer, stranger), rejected: "provider", recovered: stranger.address },
          {
            name: "the payer signed as the provider",
            signatures: signedBy(payer, payer),
            rejected: "provider",
            recovered: payer.address,
          },
          {
            name: "the payer and provider signatures are swapped",
            signatures: async (c, s) => {
              const { payerSig, providerSig } = await signedBy(payer, provider)(c, s);
              return { payerSig: providerSig, providerSig: payerSig };
            },
            rejected: "payer",
            recovered: provider.address,
          },
          {
            name: "they signed a different finalAmount",
            signatures: signedBy(payer, provider, (s) => ({ ...s, finalAmount: s.finalAmount + 1n })),
            rejected: "payer",
          },
          {
            name: "they signed a different finalSeq",
            signatures: signedBy(payer, provider, (s) => ({ ...s, finalSeq: s.finalSeq - 1n })),
            rejected: "payer",
          },
          {
            name: "they signed a different receipt root",
            signatures: signedBy(payer, provider, (s) => ({ ...s, finalReceiptRoot: zeroHash })),
            rejected: "payer",
          },
          {
            name: "they signed for another session id",
            signatures: signedBy(payer, provider, (s) => ({ ...s, sessionId: keccak256(s.sessionId) })),
            rejected: "payer",
          },
          {
            name: "they signed with mode Unilateral",
            signatures: signedBy(payer, provider, (s) => ({ ...s, mode: "Unilateral" })),
            rejected: "payer",
          },
          {
            name: "the provider alone signed with mode Unilateral",
            signatures: async (c, s) => ({
              payerSig: await sign(payer, c.domain, s),
              providerSig: await sign(provider, c.domain, { ...s, mode: "Unilateral" }),
            }),
            rejected: "provider",
          },
          {
            name: "they signed for another chain id (1)",
            signatures: signedBy(payer, provider, undefined, (c) => ({ ...c.domain, chainId: 1 })),
            rejected: "payer",
          },
          {
            name: "they signed for another GasEscrow deployment",
            signatures: signedBy(payer, provider, undefined, async (c) => {
              const other = await hre.viem.deployContract("GasEscrow", [c.escrowArgs[0], c.escrowArgs[1], 0, c.escrowArgs[3]]);
              return gasEscrowDomain({ chainId: c.domain.chainId, verifyingContract: other.address });
            }),
            rejected: "payer",
          },
        ];

        for (const tc of signerCases) {
          it(`reverts with SignerMismatch when ${tc.name}`, async () => {
            const c = await loadFixture(OPENED[kind]);
            const summary = summaryOf(c, honest);
            const { payerSig, providerSig } = await tc.signatures(c, summary);
            const digest = settlementSummaryDigest(c.domain, summary);
            const signature = tc.rejected === "payer" ? payerSig : providerSig;
            const expectedSigner = tc.rejected === "payer" ? c.ref.terms.payer : c.ref.terms.provider;
            const recovered = await recoverAddress({ hash: digest, signature });
            if (tc.recovered !== undefined) expect(recovered).to.equal(tc.recovered);
            expect(recovered).to.not.equal(expectedSigner);

            await expectRevert(submitClose(c, honest, payerSig, providerSig), "SignerMismatch", [expectedSigner, recovered]);
            expect(await c.escrow.read.depositOf([c.sessionId])).to.equal(AMOUNT);
          });
        }

        /*------------------------------ malformed signatures ------------------------------*/

        /*
         * ERC-2098 keeps the y-parity in the top bit of `vs`, so only s < 2^255 can be submitted. The high-s
         * twin of a real signature has s = n - s_low > n/2, which is >= 2^255 except with probability ~2^-126:
         * it cannot be expressed (`toCompactSignature(toHighS(sig))` throws, see "signature encoding" above).
         * SignatureNotLowS is therefore tested with s values crafted in (n/2, 2^255).
         */
        const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
        const HALF_N = N >> 1n;
        const HALF_BIT = 2n ** 255n;
        const word = (x: bigint): Hex => `0x${x.toString(16).padStart(64, "0")}`;
        const highS: [name: string, s: bigint, parity: 0n | 1n][] = [
          ["s = n/2 + 1, parity 0", HALF_N + 1n, 0n],
          ["s = n/2 + 1, parity 1", HALF_N + 1n, 1n],
          ["s = 2^255 - 1, parity 1", HALF_BIT - 1n, 1n],
        ];
        for (const [name, highValue, parity] of highS) {
          for (const role of ["payer", "provider"] as const) {
            it(`reverts with SignatureNotLowS for a ${role} signature with ${name}`, async () => {
              const c = await loadFixture(OPENED[kind]);
              const { payerSig, providerSig } = await bothSign(c, honest);
              const p = toCompactSignature(payerSig);
              const q = toCompactSignature(providerSig);
              const bad = (sig: Sig): Sig => ({ r: sig.r, vs: word(highValue | (parity << 255n)) });
              await expectRevert(
                submitClose(c, honest, role === "payer" ? bad(p) : p, role === "provider" ? bad(q) : q),
                "SignatureNotLowS",
                [word(highValue)],
              );
              expect(await c.escrow.read.depositOf([c.sessionId])).to.equal(AMOUNT);
            });
          }
        }

        it("accepts s = n/2 as low (the bound is inclusive): it is only the wrong signer", async () => {
          const c = await loadFixture(OPENED[kind]);
          const { payerSig, providerSig } = await bothSign(c, honest);
          const p = toCompactSignature(payerSig);
          const bad: Sig = { r: p.r, vs: word(HALF_N) };
          const digest = settlementSummaryDigest(c.domain, summaryOf(c, honest));
          const recovered = await recoverAddress({ hash: digest, signature: compactSignatureToSignature({ r: bad.r, yParityAndS: bad.vs }) });
          await expectRevert(submitClose(c, honest, bad, providerSig), "SignerMismatch", [c.ref.terms.payer, recovered]);
        });

        const invalidCases: [name: string, mutate: (sig: Sig) => Sig][] = [
          ["r = 0", (sig) => ({ ...sig, r: zeroHash })],
          ["r = 2^256 - 1 (not below the curve order)", (sig) => ({ ...sig, r: `0x${"ff".repeat(32)}` })],
          ["s = 0", (sig) => ({ ...sig, vs: zeroHash })],
          ["s = 0 with the parity bit set", (sig) => ({ ...sig, vs: `0x${HALF_BIT.toString(16)}` as Hex })],
          ["r and s = 0", () => ({ r: zeroHash, vs: zeroHash })],
        ];
        for (const [name, mutate] of invalidCases) {
          for (const role of ["payer", "provider"] as const) {
            it(`reverts with InvalidSignature for a ${role} signature with ${name}`, async () => {
              const c = await loadFixture(OPENED[kind]);
              const { payerSig, providerSig } = await bothSign(c, honest);
              const p = toCompactSignature(payerSig);
              const q = toCompactSignature(providerSig);
              await expectRevert(
                submitClose(c, honest, role === "payer" ? mutate(p) : p, role === "provider" ? mutate(q) : q),
                "InvalidSignature",
                [],
              );
            });
          }
        }
      });
    });
  }
});
