import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { keccak256, stringToBytes, type Hex } from "viem";

import { privateKeyToAccount } from "viem/accounts";

import { gasEscrowDomain, hashTyped, typeHash } from "../../channel-client/core/eip712";
import { receiptCommitDigest, signReceiptCommit, verifyReceiptCommit } from "../../channel-client/core/receipt-commit";
import { sessionIdOf } from "../../channel-client/core/terms";
import { paymentTicketDigest, type PaymentTicket } from "../../channel-client/core/ticket";
import { CLOSE_MODES, settlementSummaryDigest, type SettlementSummary } from "../../channel-client/core/summary";
import { escrowFixture, hardhatAccount, makeTerms, ROLE } from "../helpers/fixtures";

/** Deterministic pseudo-random 32-byte values so each case differs in every field. */
const h = (label: string): Hex => keccak256(stringToBytes(label));

describe("EIP-712: TypeScript and the GasEscrow agree", () => {
  it("has the same type hashes", async () => {
    const { escrow } = await loadFixture(escrowFixture);
    expect(await escrow.read.SESSION_TYPEHASH()).to.equal(typeHash("Session"));
    expect(await escrow.read.PAYMENT_TICKET_TYPEHASH()).to.equal(typeHash("PaymentTicket"));
    expect(await escrow.read.SETTLEMENT_SUMMARY_TYPEHASH()).to.equal(typeHash("SettlementSummary"));
    expect(await escrow.read.RECEIPT_COMMIT_TYPEHASH()).to.equal(typeHash("ReceiptCommit"));
  });

  it("pins the ReceiptCommit type hash, digest and signature to known answers", async () => {
    expect(typeHash("ReceiptCommit")).to.equal(keccak256(stringToBytes("ReceiptCommit(bytes32 sessionId,uint64 leafCount,bytes32 root)")));
    expect(typeHash("ReceiptCommit")).to.equal("0x7f201d8eadcb8c491ae4db57fad041fb15220cced3003a38d374f17e4e31b68a");
    const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
    const commit = { sessionId: h("kat session"), leafCount: 5n, root: h("kat root") };
    expect(receiptCommitDigest(domain, commit)).to.equal("0x271fd81cc3df6fcb2683390f12c6e88ae4d45a3ac1dfe3aa6be5c2958a8b4c38");
    // Hardhat account 1 (RFC 6979, low s).
    const signer = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
    const signed = await signReceiptCommit(signer, domain, commit);
    expect(signed.signature).to.equal(
      "0xe13be0b8ae62f63be1a362758711c322a0837ddedb071730c7312618a8ddaf0c6f9ac543f23c54254c64a5d6e3aef757598cadd215c27b1c4df0a5417cff39d31b",
    );
    await verifyReceiptCommit(domain, signed, signer.address);
  });

  it("computes the same ReceiptCommit digest", async () => {
    const { escrow, domain } = await loadFixture(escrowFixture);
    const commit = { sessionId: h("rc"), leafCount: (1n << 64n) - 1n, root: h("rc root") };
    expect(await escrow.read.hashReceiptCommit([commit.sessionId, commit.leafCount, commit.root])).to.equal(receiptCommitDigest(domain, commit));
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
