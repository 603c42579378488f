import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import {
  getAddress,
  parseEther,
  parseEventLogs,
  parseSignature,
  recoverTypedDataAddress,
  zeroAddress,
  type Address,
  type Hex,
  type LocalAccount,
} from "viem";

import { sessionIdOf } from "../../channel-client/core/terms";
import { escrowFixture, hardhatAccount, makeTerms, ROLE, TOKEN_SUPPLY } from "../helpers/fixtures";
import { expectRevert } from "../helpers/revert";


const PERMIT_TYPES = {
  Permit: [
    { name: "owner", type: "address" },
    { name: "spender", type: "address" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
} as const;

type Fixture = Awaited<ReturnType<typeof escrowFixture>>;
type Permit = { owner: Address; spender: Address; value: bigint; nonce: bigint; deadline: bigint };

/** The token's own EIP-712 domain, as it reports it (EIP-5267). */
async function tokenDomain(c: Fixture) {
  const [, name, version, chainId, verifyingContract] = await c.token.read.eip712Domain();
  return { name, version, chainId: Number(chainId), verifyingContract };
}

async function signPermit(c: Fixture, signer: LocalAccount, permit: Permit): Promise<Hex> {
  return signer.signTypedData({ domain: await tokenDomain(c), types: PERMIT_TYPES, primaryType: "Permit", message: permit });
}

/** Submits `permit` with `signature`; anyone may relay a permit, here the stranger does. */
function submitPermit(c: Fixture, permit: Permit, signature: Hex) {
  const { r, s, yParity } = parseSignature(signature);
  return c.token.write.permit([permit.owner, permit.spender, permit.value, permit.deadline, 27 + yParity, r, s], {
    account: c.stranger.account,
  });
}

/** The address `signature` recovers to for `permit` in the token's domain (what ERC2612InvalidSigner names). */
async function permitSigner(c: Fixture, permit: Permit, signature: Hex): Promise<Address> {
  return recoverTypedDataAddress({
    domain: await tokenDomain(c),
    types: PERMIT_TYPES,
    primaryType: "Permit",
    message: permit,
    signature,
  });
}

const AMOUNT = parseEther("3");

describe("LaborGas", () => {
  it("is the Labor Gas token (LGAS, 18 decimals) owned by its deployer", async () => {
    const c = await loadFixture(escrowFixture);
    expect(await c.token.read.name()).to.equal("Labor Gas");
    expect(await c.token.read.symbol()).to.equal("LGAS");
    expect(await c.token.read.decimals()).to.equal(18);
    expect(await c.token.read.owner()).to.equal(getAddress(c.wallets[ROLE.deployer]!.account.address));
    expect(await c.token.read.totalSupply()).to.equal(TOKEN_SUPPLY);
  });

  it("reports an EIP-712 domain named after the token, version 1, on this chain and contract", async () => {
    const c = await loadFixture(escrowFixture);
    expect(await tokenDomain(c)).to.deep.equal({
      name: "Labor Gas",
      version: "1",
      chainId: await c.publicClient.getChainId(),
      verifyingContract: getAddress(c.token.address),
    });
  });

  describe("mint", () => {
    it("lets the owner mint to anyone", async () => {
      const c = await loadFixture(escrowFixture);
      const to = c.stranger.account.address;
      const hash = await c.token.write.mint([to, 123n]);
      const receipt = await c.publicClient.waitForTransactionReceipt({ hash });
      const transfers = parseEventLogs({ abi: c.token.abi, eventName: "Transfer", logs: receipt.logs });
      expect(transfers.map((e) => e.args)).to.deep.equal([{ from: zeroAddress, to: getAddress(to), value: 123n }]);
      expect(await c.token.read.balanceOf([to])).to.equal(123n);
      expect(await c.token.read.totalSupply()).to.equal(TOKEN_SUPPLY + 123n);
    });

    for (const role of ["funder", "payer", "stranger"] as const) {
      it(`reverts with OwnableUnauthorizedAccount when the ${role} mints`, async () => {
        const c = await loadFixture(escrowFixture);
        const caller = c.wallets[ROLE[role]]!.account;
        await expectRevert(c.token.write.mint([caller.address, 1n], { account: caller }), "OwnableUnauthorizedAccount", [
          getAddress(caller.address),
        ]);
        expect(await c.token.read.totalSupply()).to.equal(TOKEN_SUPPLY);
      });
    }
  });

  describe("permit (EIP-2612)", () => {
    /** The payer holds tokens but has never approved the escrow; it signs a permit off-chain instead. */
    async function permitFixture() {
      const c = await escrowFixture();
      const holder = hardhatAccount(ROLE.payer);
      await c.token.write.mint([holder.address, AMOUNT]);
      const deadline = (await time.latest()) + 3600;
      const permit: Permit = {
        owner: holder.address,
        spender: c.escrow.address,
        value: AMOUNT,
        nonce: 0n,
        deadline: BigInt(deadline),
      };
      return { ...c, holder, permit, signature: await signPermit(c, holder, permit) };
    }

    it("opens a channel funded through a permit signed off-chain, with no approve transaction", async () => {
      const c = await loadFixture(permitFixture);
      const holderWallet = c.wallets[ROLE.payer]!;
      expect(await c.token.read.allowance([c.holder.address, c.escrow.address])).to.equal(0n);
      expect(await c.token.read.nonces([c.holder.address])).to.equal(0n);

      await c.publicClient.waitForTransactionReceipt({ hash: await submitPermit(c, c.permit, c.signature) });
      expect(await c.token.read.allowance([c.holder.address, c.escrow.address])).to.equal(AMOUNT);
      expect(await c.token.read.nonces([c.holder.address])).to.equal(1n);

      const terms = makeTerms(c.token.address, { funder: c.holder.address });
      const hash = await c.escrow.write.open([terms, AMOUNT], { account: holderWallet.account });
      const receipt = await c.publicClient.waitForTransactionReceipt({ hash });
      expect(receipt.status).to.equal("success");
      const sessionId = sessionIdOf(c.domain, { terms, openedAt: receipt.blockNumber });
      const opened = parseEventLogs({ abi: c.escrow.abi, eventName: "ChannelOpened", logs: receipt.logs });
      expect(opened.map((e) => [e.args.sessionId, e.args.deposit])).to.deep.equal([[sessionId, AMOUNT]]);
      expect(await c.escrow.read.depositOf([sessionId])).to.equal(AMOUNT);
      expect(await c.token.read.balanceOf([c.holder.address])).to.equal(0n);
      expect(await c.token.read.balanceOf([c.escrow.address])).to.equal(AMOUNT);
      expect(await c.token.read.allowance([c.holder.address, c.escrow.address])).to.equal(0n);
    });

    it("rejects a permit mined one second after its deadline with ERC2612ExpiredSignature", async () => {
      const c = await loadFixture(permitFixture);
      const deadline = Number(c.permit.deadline);

      await time.setNextBlockTimestamp(deadline + 1);
      await expectRevert(submitPermit(c, c.permit, c.signature), "ERC2612ExpiredSignature", [c.permit.deadline]);
      // Nothing was approved, so the escrow cannot pull the tokens.
      expect(await c.token.read.allowance([c.holder.address, c.escrow.address])).to.equal(0n);
      await expectRevert(
        c.escrow.write.open([makeTerms(c.token.address, { funder: c.holder.address }), AMOUNT], { account: c.wallets[ROLE.payer]!.account }),
        "TransferFromFailed",
        [],
      );
    });

    it("accepts a permit exactly at its deadline", async () => {
      const c = await loadFixture(permitFixture);
      await time.setNextBlockTimestamp(Number(c.permit.deadline));
      const hash = await submitPermit(c, c.permit, c.signature);
      const receipt = await c.publicClient.waitForTransactionReceipt({ hash });
      const block = await c.publicClient.getBlock({ blockNumber: receipt.blockNumber });
      expect(block.timestamp).to.equal(c.permit.deadline);
      expect(await c.token.read.allowance([c.holder.address, c.escrow.address])).to.equal(AMOUNT);
    });

    it("rejects a replayed permit with ERC2612InvalidSigner (the nonce moved on)", async () => {
      const c = await loadFixture(permitFixture);
      await c.publicClient.waitForTransactionReceipt({ hash: await submitPermit(c, c.permit, c.signature) });
      // Spend part of the allowance so that a replay would visibly restore it.
      await c.escrow.write.open([makeTerms(c.token.address, { funder: c.holder.address }), AMOUNT / 3n], { account: c.wallets[ROLE.payer]!.account });

      const recovered = await permitSigner(c, { ...c.permit, nonce: 1n }, c.signature);
      expect(recovered).to.not.equal(c.holder.address);
      await expectRevert(submitPermit(c, c.permit, c.signature), "ERC2612InvalidSigner", [recovered, c.holder.address]);
      expect(await c.token.read.allowance([c.holder.address, c.escrow.address])).to.equal(AMOUNT - AMOUNT / 3n);
      expect(await c.token.read.nonces([c.holder.address])).to.equal(1n);
    });

    type Forgery = { name: string; signer?: LocalAccount; submitted: (p: Permit) => Permit };
    const forgeries: Forgery[] = [
      { name: "signed by a stranger", signer: hardhatAccount(ROLE.stranger), submitted: (p) => p },
      { name: "submitted with a larger value than signed", submitted: (p) => ({ ...p, value: p.value + 1n }) },
      { name: "submitted for another spender", submitted: (p) => ({ ...p, spender: hardhatAccount(ROLE.stranger).address }) },
      { name: "submitted with a later deadline than signed", submitted: (p) => ({ ...p, deadline: p.deadline + 1n }) },
    ];
    for (const tc of forgeries) {
      it(`rejects a permit ${tc.name} with ERC2612InvalidSigner`, async () => {
        const c = await loadFixture(permitFixture);
        const signature = tc.signer ? await signPermit(c, tc.signer, c.permit) : c.signature;
        const submitted = tc.submitted(c.permit);
        const recovered = await permitSigner(c, submitted, signature);
        expect(recovered).to.not.equal(c.holder.address);
        if (tc.signer) expect(recovered).to.equal(tc.signer.address);
        await expectRevert(submitPermit(c, submitted, signature), "ERC2612InvalidSigner", [recovered, c.holder.address]);
        expect(await c.token.read.nonces([c.holder.address])).to.equal(0n);
      });
    }
  });
});
