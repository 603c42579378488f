import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { keccak256, stringToBytes, type Hex } from "viem";

import { hashTyped, typeHash } from "../../channel-client/eip712";
import { sessionIdOf } from "../../channel-client/terms";
import { paymentTicketDigest, type PaymentTicket } from "../../channel-client/ticket";
import { CLOSE_MODES, settlementSummaryDigest, type SettlementSummary } from "../../channel-client/summary";
import { escrowFixture, hardhatAccount, makeTerms, ROLE } from "../helpers/fixtures";

/** Deterministic pseudo-random 32-byte values so each case differs in every field. */
const h = (label: string): Hex => keccak256(stringToBytes(label));

describe("EIP-712: TypeScript and the GasEscrow agree", () => {
  it("has the same type hashes", async () => {
    const { escrow } = await loadFixture(escrowFixture);
    expect(await escrow.read.SESSION_TYPEHASH()).to.equal(typeHash("Session"));
    expect(await escrow.read.PAYMENT_TICKET_TYPEHASH()).to.equal(typeHash("PaymentTicket"));
    expect(await escrow.read.SETTLEMENT_SUMMARY_TYPEHASH()).to.equal(typeHash("SettlementSummary"));
  });

  it("pins the type hashes to known answers", () => {
    // If one of these changes, every signature in the field stops verifying: change them on purpose only.
    expect(typeHash("PaymentTicket")).to.equal(
      keccak256(
        stringToBytes(
          "PaymentTicket(bytes32 sessionId,address provider,bytes32 termsHash,uint64 seq,uint128 cumulativeAmount,bytes32 receiptRoot)",
        ),
      ),
    );
    expect(typeHash("PaymentTicket")).to.equal("0xf754344c8e46fa2ee03225f355f40757444185e74c00a4e4cf231688f3ea5961");
  });

  it("has the same EIP-712 domain", async () => {
    const { escrow, domain } = await loadFixture(escrowFixture);
    const [, name, version, chainId, verifyingContract] = await escrow.read.eip712Domain();
    expect({ name, version, chainId: Number(chainId), verifyingContract }).to.deep.equal(domain);
  });

  const tickets: PaymentTicket[] = [
    { sessionId: h("s1"), provider: hardhatAccount(ROLE.provider).address, termsHash: h("t"), seq: 1n, cumulativeAmount: 1000n, receiptRoot: h("r") },
    { sessionId: h("s2"), provider: hardhatAccount(ROLE.stranger).address, termsHash: h("u"), seq: 2n ** 64n - 1n, cumulativeAmount: 2n ** 128n - 1n, receiptRoot: h("q") },
    { sessionId: h("s3"), provider: hardhatAccount(ROLE.payer).address, termsHash: h("v"), seq: 0n, cumulativeAmount: 0n, receiptRoot: `0x${"00".repeat(32)}` },
  ];

  for (const [i, ticket] of tickets.entries()) {
    it(`computes the same PaymentTicket digest (case ${i + 1})`, async () => {
      const { escrow, domain } = await loadFixture(escrowFixture);
      const onChain = await escrow.read.hashPaymentTicket([
        ticket.sessionId,
        ticket.provider,
        ticket.termsHash,
        ticket.seq,
        ticket.cumulativeAmount,
        ticket.receiptRoot,
      ]);
      expect(onChain).to.equal(paymentTicketDigest(domain, ticket));
      expect(paymentTicketDigest(domain, ticket)).to.equal(hashTyped(domain, "PaymentTicket", ticket));
    });
  }

  for (const mode of CLOSE_MODES) {
    it(`computes the same SettlementSummary digest (mode ${mode})`, async () => {
      const { escrow, domain } = await loadFixture(escrowFixture);
      const summary: SettlementSummary = {
        sessionId: h(`summary-${mode}`),
        provider: hardhatAccount(ROLE.provider).address,
        payer: hardhatAccount(ROLE.payer).address,
        termsHash: h("terms"),
        finalSeq: 1234n,
        finalAmount: 10n ** 21n + 7n,
        finalReceiptRoot: h("root"),
        mode,
      };
      const onChain = await escrow.read.hashSettlementSummary([
        summary.sessionId,
        summary.provider,
        summary.payer,
        summary.termsHash,
        summary.finalSeq,
        summary.finalAmount,
        summary.finalReceiptRoot,
        CLOSE_MODES.indexOf(mode),
      ]);
      expect(onChain).to.equal(settlementSummaryDigest(domain, summary));
    });
  }

  it("derives the same session id", async () => {
    const { escrow, domain, token } = await loadFixture(escrowFixture);
    for (const terms of [makeTerms(), makeTerms(token.address, { nonce: 2n ** 64n - 1n, challengeDuration: 60n })]) {
      for (const openedAt of [0n, 17n, 2n ** 64n - 1n]) {
        expect(await escrow.read.sessionIdOf([terms, openedAt])).to.equal(sessionIdOf(domain, { terms, openedAt }));
      }
    }
  });

  it("gives different digests on another chain or contract", async () => {
    const { domain } = await loadFixture(escrowFixture);
    const ticket = tickets[0]!;
    const here = paymentTicketDigest(domain, ticket);
    expect(paymentTicketDigest({ ...domain, chainId: 1 }, ticket)).to.not.equal(here);
    expect(paymentTicketDigest({ ...domain, verifyingContract: hardhatAccount(9).address }, ticket)).to.not.equal(here);
  });
});
