/**
 * GasEscrow reads the channel terms straight out of calldata (decision 0005, issue 12 fourth pass: the session id
 * is hashed from the copied words, the parties are read once). These tests pin that the hand-written reads keep
 * the ABI decoder's rules: a term word with dirty high bits reverts (so one set of terms names one session), and
 * the id equals the EIP-712 hash the clients compute.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { encodeFunctionData, parseEther, type Hex } from "viem";

import { sessionIdOf } from "../../channel-client/core/terms";
import { escrowFixture, makeTerms } from "../helpers/fixtures";

/** ABI words of `sessionIdOf(terms, openedAt)`: the selector, then terms' eight words and openedAt. */
const TERM_WORDS = ["payer", "provider", "funder", "asset", "termsHash", "policyHash", "challengeDuration", "nonce"] as const;

/** `data` with byte `index` of ABI word `word` (0 = first argument word) set to 0x01. */
function dirty(data: Hex, word: number, index = 0): Hex {
  const at = 2 + 8 + word * 64 + index * 2;
  return `${data.slice(0, at)}01${data.slice(at + 2)}` as Hex;
}

describe("GasEscrow: terms read from calldata", function () {
  it("sessionIdOf equals the clients' EIP-712 session id", async function () {
    const f = await loadFixture(escrowFixture);
    const terms = makeTerms();
    expect(await f.escrow.read.sessionIdOf([terms, 77n])).to.equal(sessionIdOf(f.domain, { terms, openedAt: 77n }));
  });

  it("a term word with dirty high bits reverts instead of naming another session", async function () {
    const f = await loadFixture(escrowFixture);
    const data = encodeFunctionData({ abi: f.escrow.abi, functionName: "sessionIdOf", args: [makeTerms(), 77n] });
    // The clean call answers.
    const clean = await f.publicClient.call({ to: f.escrow.address, data });
    expect(clean.data).to.equal(sessionIdOf(f.domain, { terms: makeTerms(), openedAt: 77n }));
    // Byte 0 of an address word (high bits above 160) or of a uint64 word (above 64) makes the call revert.
    for (const [word, name] of TERM_WORDS.entries()) {
      const call = f.publicClient.call({ to: f.escrow.address, data: dirty(data, word) });
      if (name === "termsHash" || name === "policyHash") {
        // Every bit of a bytes32 is meaningful: a different hash, a different (unopened) session.
        const other = await call;
        expect(other.data, name).to.not.equal(clean.data);
      } else {
        await expect(call, name).to.be.rejected;
      }
    }
  });

  it("open with a dirty funder word reverts", async function () {
    const f = await loadFixture(escrowFixture);
    const terms = makeTerms();
    const data = encodeFunctionData({ abi: f.escrow.abi, functionName: "open", args: [terms, parseEther("1")] });
    const tx = f.funder.sendTransaction({ to: f.escrow.address, data: dirty(data, 2), value: parseEther("1") });
    await expect(tx).to.be.rejected;
  });
});
