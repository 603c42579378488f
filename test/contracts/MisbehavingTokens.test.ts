import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import {
  decodeErrorResult,
  getAddress,
  encodeFunctionData,
  keccak256,
  parseEther,
  parseEventLogs,
  stringToBytes,
  toFunctionSelector,
  toHex,
  zeroAddress,
  type Address,
  type Hash,
  type Hex,
} from "viem";

import { gasEscrowAbi } from "../../channel-client/chain/escrow";
import { toCompactSignature } from "../../channel-client/core/eip712";
import { sessionIdOf, type ChannelRef, type ChannelTerms } from "../../channel-client/core/terms";
import { escrowFixture, makeTerms, signedCooperativeSummary } from "../helpers/fixtures";
import { expectRevert } from "../helpers/revert";


/** solady's ReentrancyGuard error, raised from assembly (so it is in no ABI). */
const REENTRANCY_SELECTOR: Hex = "0xab143c06";

const AMOUNT = 1_000_000n;
const TOP_UP = 100_000n;
const ROOT: Hex = keccak256(stringToBytes("receipt root"));

/** The escrow fixture plus every misbehaving test double, each token minted to the funder and approved. */
async function misbehavingFixture() {
  const f = await escrowFixture();
  const relayer = f.wallets[5]!; // submits closes, so no party's ETH balance pays gas
  const feeToken = await hre.viem.deployContract("FeeOnTransferToken", [100n]); // 1 %
  const noReturnToken = await hre.viem.deployContract("NoReturnToken");
  const reentrantToken = await hre.viem.deployContract("ReentrantToken");
  const ethRejecter = await hre.viem.deployContract("EthRejecter");
  const supply = parseEther("1000");
  // Each token is its own typed contract, so the three are funded one by one rather than in a loop.
  const funder = f.funder.account;
  await feeToken.write.mint([funder.address, supply]);
  await feeToken.write.approve([f.escrow.address, supply], { account: funder });
  await noReturnToken.write.mint([funder.address, supply]);
  await noReturnToken.write.approve([f.escrow.address, supply], { account: funder });
  await reentrantToken.write.mint([funder.address, supply]);
  await reentrantToken.write.approve([f.escrow.address, supply], { account: funder });
  return { ...f, relayer, feeToken, noReturnToken, reentrantToken, ethRejecter };
}

type Fixture = Awaited<ReturnType<typeof misbehavingFixture>>;

async function mined(c: Fixture, hash: Hash) {
  const receipt = await c.publicClient.waitForTransactionReceipt({ hash });
  expect(receipt.status).to.equal("success");
  return receipt;
}

async function open(c: Fixture, terms: ChannelTerms, amount: bigint) {
  const value = terms.asset === zeroAddress ? amount : 0n;
  // Only the funder named in the terms may open (issue 12); a contract funder (the ETH rejecter) is
  // impersonated and given the ETH it sends.
  const funder = getAddress(terms.funder);
  const isWallet = funder === getAddress(c.funder.account.address);
  if (!isWallet) {
    await hre.network.provider.request({ method: "hardhat_impersonateAccount", params: [funder] });
    await hre.network.provider.request({ method: "hardhat_setBalance", params: [funder, toHex(value + parseEther("1"))] });
  }
  const hash = isWallet
    ? await c.escrow.write.open([terms, amount], { account: c.funder.account, value })
    : await c.escrow.write.open([terms, amount], { account: funder, value });
  const receipt = await mined(c, hash);
  if (!isWallet) {
    // Back to an empty balance, so the payouts asserted afterwards are the contract's whole balance.
    await hre.network.provider.request({ method: "hardhat_setBalance", params: [funder, "0x0"] });
    await hre.network.provider.request({ method: "hardhat_stopImpersonatingAccount", params: [funder] });
  }
  const ref: ChannelRef = { terms, openedAt: receipt.blockNumber };
  const events = parseEventLogs({ abi: c.escrow.abi, eventName: "ChannelOpened", logs: receipt.logs });
  return { ref, sessionId: sessionIdOf(c.domain, ref), events, receipt };
}

/** Tops up `ref` by `amount`, asking that at least `minReceived` arrives. */
async function deposit(c: Fixture, ref: ChannelRef, amount: bigint, minReceived: bigint) {
  const receipt = await mined(
    c,
    await c.escrow.write.deposit([ref.terms, ref.openedAt, amount, minReceived], { account: c.funder.account }),
  );
  return parseEventLogs({ abi: c.escrow.abi, eventName: "Deposited", logs: receipt.logs });
}

/** The closeCooperative arguments for `ref` with both parties' signatures over `finalAmount`. */
async function closeArgs(c: Fixture, ref: ChannelRef, finalAmount: bigint) {
  const sessionId = sessionIdOf(c.domain, ref);
  const { payerSignature, providerSignature } = await signedCooperativeSummary({
    domain: c.domain,
    sessionId,
    ref,
    finalSeq: 10n,
    finalAmount,
    finalReceiptRoot: ROOT,
  });
  return [
    ref.terms,
    ref.openedAt,
    10n,
    finalAmount,
    ROOT,
    toCompactSignature(payerSignature),
    toCompactSignature(providerSignature),
  ] as const;
}

async function close(c: Fixture, ref: ChannelRef, finalAmount: bigint) {
  const receipt = await mined(
    c,
    await c.escrow.write.closeCooperative(await closeArgs(c, ref, finalAmount), { account: c.relayer.account }),
  );
  return parseEventLogs({ abi: c.escrow.abi, eventName: "ChannelSettled", logs: receipt.logs });
}

describe("GasEscrow with misbehaving tokens and payees", () => {
  describe("FeeOnTransferToken (1 % fee): refused, never credited net (issue 28 item 4)", () => {
    const net = (x: bigint) => x - (x * 100n) / 10_000n;

    it("issue 28 item 4: open is TransferAmountMismatch(token, amount, received); no channel, and no balance moves", async () => {
      const c = await loadFixture(misbehavingFixture);
      const funderBefore = await c.feeToken.read.balanceOf([c.funder.account.address]);
      const terms = makeTerms(c.feeToken.address);
      await expectRevert(
        c.escrow.write.open([terms, AMOUNT], { account: c.funder.account }),
        "TransferAmountMismatch",
        [getAddress(c.feeToken.address), AMOUNT, net(AMOUNT)],
      );
      expect(await c.feeToken.read.balanceOf([c.funder.account.address])).to.equal(funderBefore);
      expect(await c.feeToken.read.balanceOf([c.escrow.address])).to.equal(0n);
      expect(await c.feeToken.read.balanceOf([terms.provider])).to.equal(0n);
    });
  });

  describe("NoReturnToken (transfer and transferFrom return nothing)", () => {
    it("opens, tops up and settles cooperatively with exact balances", async () => {
      const c = await loadFixture(misbehavingFixture);
      const token = c.noReturnToken;
      const terms = makeTerms(token.address);
      const funderBefore = await token.read.balanceOf([c.funder.account.address]);

      const { ref, sessionId, events } = await open(c, terms, AMOUNT);
      expect(events.map((e) => e.args.deposit)).to.deep.equal([AMOUNT]);
      const deposited = await deposit(c, ref, TOP_UP, TOP_UP);
      expect(deposited.map((e) => e.args.deposit)).to.deep.equal([AMOUNT + TOP_UP]);
      expect(await token.read.balanceOf([c.escrow.address])).to.equal(AMOUNT + TOP_UP);
      expect(await token.read.balanceOf([c.funder.account.address])).to.equal(funderBefore - AMOUNT - TOP_UP);

      const providerBefore = await token.read.balanceOf([terms.provider]);
      const settled = await close(c, ref, 400_000n);
      expect(settled.map((e) => [e.args.paidToProvider, e.args.refundedToFunder])).to.deep.equal([
        [400_000n, AMOUNT + TOP_UP - 400_000n],
      ]);
      expect(await token.read.balanceOf([terms.provider])).to.equal(providerBefore + 400_000n);
      expect(await token.read.balanceOf([c.funder.account.address])).to.equal(funderBefore - 400_000n);
      expect(await token.read.balanceOf([c.escrow.address])).to.equal(0n);
      expect(await c.escrow.read.depositOf([sessionId])).to.equal(0n);
    });

    it("still rejects a transferFrom that reverts (no allowance) with TransferFromFailed", async () => {
      const c = await loadFixture(misbehavingFixture);
      const holder = c.wallets[6]!;
      await c.noReturnToken.write.mint([holder.account.address, AMOUNT]);
      const terms = makeTerms(c.noReturnToken.address, { funder: holder.account.address });
      const pending = c.escrow.write.open([terms, AMOUNT], { account: holder.account });
      await expectRevert(pending, "TransferFromFailed", []);
      expect(await c.noReturnToken.read.balanceOf([c.escrow.address])).to.equal(0n);
    });
  });

  describe("ReentrantToken (calls back into the escrow from transfer and transferFrom)", () => {
    it("has the Reentrancy() selector the assertions below expect", () => {
      expect(toFunctionSelector("Reentrancy()")).to.equal(REENTRANCY_SELECTOR);
    });

    /** Asserts the armed call ran, failed with Reentrancy(), and disarmed the token. */
    async function expectReentrancyBlocked(c: Fixture) {
      expect(await c.reentrantToken.read.target()).to.equal(zeroAddress); // the callback ran (and disarmed)
      expect(await c.reentrantToken.read.lastCallSucceeded()).to.equal(false);
      expect(await c.reentrantToken.read.lastReturnData()).to.equal(REENTRANCY_SELECTOR);
    }

    it("blocks re-entering open (another channel) from the escrow's transferFrom", async () => {
      const c = await loadFixture(misbehavingFixture);
      // The token itself is the inner call's sender, so it names itself funder to get past NotTheFunder.
      const inner = makeTerms(c.reentrantToken.address, { nonce: 2n, funder: c.reentrantToken.address });
      await c.reentrantToken.write.arm([
        c.escrow.address,
        encodeFunctionData({ abi: gasEscrowAbi, functionName: "open", args: [inner, TOP_UP] }),
      ]);

      const { ref, sessionId } = await open(c, makeTerms(c.reentrantToken.address), AMOUNT);

      await expectReentrancyBlocked(c);
      expect(await c.escrow.read.depositOf([sessionId])).to.equal(AMOUNT);
      expect(await c.escrow.read.depositOf([sessionIdOf(c.domain, { terms: inner, openedAt: ref.openedAt })])).to.equal(0n);
      expect(await c.reentrantToken.read.balanceOf([c.escrow.address])).to.equal(AMOUNT);
    });

    it("blocks re-entering deposit (the same channel) from the escrow's transferFrom", async () => {
      const c = await loadFixture(misbehavingFixture);
      const { ref, sessionId } = await open(c, makeTerms(c.reentrantToken.address), AMOUNT);
      await c.reentrantToken.write.arm([
        c.escrow.address,
        encodeFunctionData({
          abi: gasEscrowAbi,
          functionName: "deposit",
          args: [ref.terms, ref.openedAt, TOP_UP, TOP_UP],
        }),
      ]);

      const deposited = await deposit(c, ref, TOP_UP, TOP_UP);

      await expectReentrancyBlocked(c);
      expect(deposited.map((e) => e.args.deposit)).to.deep.equal([AMOUNT + TOP_UP]);
      expect(await c.escrow.read.depositOf([sessionId])).to.equal(AMOUNT + TOP_UP);
      expect(await c.reentrantToken.read.balanceOf([c.escrow.address])).to.equal(AMOUNT + TOP_UP);
    });

    it("blocks re-entering closeCooperative (another channel) from a payout transfer", async () => {
      const c = await loadFixture(misbehavingFixture);
      const a = await open(c, makeTerms(c.reentrantToken.address, { nonce: 1n }), AMOUNT);
      const b = await open(c, makeTerms(c.reentrantToken.address, { nonce: 2n }), TOP_UP);
      await c.reentrantToken.write.arm([
        c.escrow.address,
        encodeFunctionData({ abi: gasEscrowAbi, functionName: "closeCooperative", args: await closeArgs(c, b.ref, TOP_UP) }),
      ]);
      const provider = a.ref.terms.provider;
      const funder = a.ref.terms.funder;
      const providerBefore = await c.reentrantToken.read.balanceOf([provider]);
      const funderBefore = await c.reentrantToken.read.balanceOf([funder]);

      const settled = await close(c, a.ref, 250_000n);

      await expectReentrancyBlocked(c);
      expect(settled.map((e) => e.args.sessionId)).to.deep.equal([a.sessionId]);
      expect(await c.escrow.read.depositOf([a.sessionId])).to.equal(0n);
      expect(await c.escrow.read.depositOf([b.sessionId])).to.equal(TOP_UP);
      expect(await c.reentrantToken.read.balanceOf([provider])).to.equal(providerBefore + 250_000n);
      expect(await c.reentrantToken.read.balanceOf([funder])).to.equal(funderBefore + AMOUNT - 250_000n);
      expect(await c.reentrantToken.read.balanceOf([c.escrow.address])).to.equal(TOP_UP);

      // The channel the token tried to close is untouched and still closes normally.
      await close(c, b.ref, TOP_UP);
      expect(await c.reentrantToken.read.balanceOf([provider])).to.equal(providerBefore + 250_000n + TOP_UP);
      expect(await c.reentrantToken.read.balanceOf([c.escrow.address])).to.equal(0n);
    });

    it("cannot settle the same channel twice by re-entering its own close (it is deleted before paying)", async () => {
      const c = await loadFixture(misbehavingFixture);
      const a = await open(c, makeTerms(c.reentrantToken.address), AMOUNT);
      const args = await closeArgs(c, a.ref, 250_000n);
      await c.reentrantToken.write.arm([
        c.escrow.address,
        encodeFunctionData({ abi: gasEscrowAbi, functionName: "closeCooperative", args }),
      ]);
      const providerBefore = await c.reentrantToken.read.balanceOf([a.ref.terms.provider]);

      await close(c, a.ref, 250_000n);

      expect(await c.reentrantToken.read.lastCallSucceeded()).to.equal(false);
      const inner = decodeErrorResult({ abi: gasEscrowAbi, data: await c.reentrantToken.read.lastReturnData() });
      expect([inner.errorName, inner.args]).to.deep.equal(["ChannelNotOpen", [a.sessionId]]);
      expect(await c.reentrantToken.read.balanceOf([a.ref.terms.provider])).to.equal(providerBefore + 250_000n);
      expect(await c.reentrantToken.read.balanceOf([c.escrow.address])).to.equal(0n);
    });
  });

  describe("EthRejecter (a payee whose receive() always reverts)", () => {
    it("really rejects a plain ETH transfer", async () => {
      const c = await loadFixture(misbehavingFixture);
      const pending = c.relayer.sendTransaction({ to: c.ethRejecter.address, value: 1n });
      // Whatever its revert reason, the transfer must fail and leave nothing behind.
      await expect(pending).to.be.rejectedWith("reverted");
      expect(await c.publicClient.getBalance({ address: c.ethRejecter.address })).to.equal(0n);
    });

    for (const finalAmount of [parseEther("0.25"), 0n]) {
      it(`cannot block a cooperative close as the funder: it is force-sent its refund (finalAmount ${finalAmount})`, async () => {
        const c = await loadFixture(misbehavingFixture);
        const amount = parseEther("1");
        const rejecter: Address = c.ethRejecter.address;
        const { ref, sessionId } = await open(c, makeTerms(zeroAddress, { funder: rejecter }), amount);
        const providerBefore = await c.publicClient.getBalance({ address: ref.terms.provider });

        const settled = await close(c, ref, finalAmount);

        expect(settled.map((e) => [e.args.paidToProvider, e.args.refundedToFunder])).to.deep.equal([
          [finalAmount, amount - finalAmount],
        ]);
        expect(await c.publicClient.getBalance({ address: rejecter })).to.equal(amount - finalAmount);
        expect(await c.publicClient.getBalance({ address: ref.terms.provider })).to.equal(providerBefore + finalAmount);
        expect(await c.publicClient.getBalance({ address: c.escrow.address })).to.equal(0n);
        expect(await c.escrow.read.depositOf([sessionId])).to.equal(0n);
      });
    }
  });
});
