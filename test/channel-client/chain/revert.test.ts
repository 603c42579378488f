/**
 * The one revert decoder (channel-client/chain/revert.ts): every custom error of every contract decodes to a
 * sentence naming it and its arguments; times read as ISO dates and durations, amounts with units; a node's
 * insufficient-funds answer is recognised; and a real early `finalize` is refused before anything is sent.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { encodeErrorResult, parseEther, zeroHash, type Abi, type AbiParameter, type Hex, type PublicClient } from "viem";

import { ContractRevertError, decodeRevert, describeRevert, revertAbi } from "../../../channel-client/chain/revert";
import { ETH_UNIT, formatDuration, formatMoment } from "../../../channel-client/core/format";
import { closeUnilateral, finalizeClose, openChannel, type Wallet } from "../../../channel-client/chain/escrow";
import { rejection } from "../../helpers/assert";
import { escrowFixture, makeTerms } from "../../helpers/fixtures";

/** A value of `type` for encoding (structs and arrays built from their components). */
function sample(p: AbiParameter, i: number): unknown {
  if (p.type.endsWith("[]")) return [];
  if (p.type === "tuple") return Object.fromEntries(((p as { components: readonly AbiParameter[] }).components ?? []).map((c, j) => [c.name, sample(c, j)]));
  if (p.type === "address") return "0x00000000000000000000000000000000000000a1";
  if (p.type === "bool") return true;
  if (p.type === "string") return "reason";
  if (p.type === "bytes") return "0x01";
  if (p.type.startsWith("bytes")) return `0x${"ab".repeat(Number(p.type.slice(5)))}`;
  if (p.type.startsWith("uint") || p.type.startsWith("int")) {
    const bits = Number(p.type.replace(/^u?int/, "") || 256);
    if (bits <= 8) return 1;
    if (bits <= 16) return 100 + i;
    return bits <= 48 ? 1_700_000_000 + i : BigInt(1_700_000_000 + i);
  }
  throw new Error(`no sample for ${p.type}`);
}

/** An error as Hardhat reports a revert: an RPC error carrying the raw data. */
const rpcError = (data: Hex) => Object.assign(new Error("execution reverted"), { data });

describe("revert decoder (channel-client/chain/revert.ts)", function () {
  it("decodes every custom error of every contract to a sentence naming it and each argument", () => {
    expect(revertAbi.length).to.be.greaterThan(100);
    const now = 1_700_000_000n;
    for (const item of revertAbi) {
      const args = item.inputs.map((p, i) => sample(p, i));
      const data = encodeErrorResult({ abi: [item] as Abi, errorName: item.name, args });
      const decoded = decodeRevert(rpcError(data), { now });
      expect(decoded, item.name).to.not.equal(undefined);
      expect(decoded!.errorName).to.equal(item.name);
      expect(decoded!.sentence, item.name).to.match(new RegExp(`^${item.name}: \\S`));
      expect(decoded!.sentence, item.name).to.not.contain("undefined");
      expect(Object.keys(decoded!.named)).to.have.length(item.inputs.length);
    }
  });

  it("says when the challenge window ends as an ISO date and a duration from now", () => {
    const item = revertAbi.find((i) => i.name === "ChallengeWindowOpen")!;
    const finalizesAt = 1_795_514_400n; // 2026-11-24T10:00:00Z
    const decoded = describeRevert(item, "ChallengeWindowOpen", [zeroHash, Number(finalizesAt)], { now: finalizesAt - 7_140n });
    expect(decoded.sentence).to.equal("ChallengeWindowOpen: the challenge window is open until 2026-11-24T10:00:00Z (in 1 h 59 min)");
    expect(formatMoment(finalizesAt, finalizesAt + 90n)).to.equal("2026-11-24T10:00:00Z (1 min 30 s ago)");
    expect(formatDuration(90_061n)).to.equal("1 d 1 h");
  });

  it("gives amounts in the asset's units when the asset is known, base units otherwise", () => {
    const item = revertAbi.find((i) => i.name === "AmountExceedsDeposit")!;
    const args = [zeroHash, parseEther("1.5"), parseEther("1")];
    expect(describeRevert(item, item.name, args, { asset: ETH_UNIT }).sentence).to.equal("AmountExceedsDeposit: the ticket's amount 1.5 ETH exceeds the channel's deposit 1 ETH");
    expect(describeRevert(item, item.name, args).sentence).to.contain("1500000000000000000 base units");
  });

  it("recognises a node's insufficient-funds answer", () => {
    const hardhat = new Error("Sender doesn't have enough funds to send tx. The max upfront cost is: 2000000000000000000 and the sender's balance is: 1000000000000000000.");
    const decoded = decodeRevert(new Error("Missing or invalid parameters.", { cause: hardhat }));
    expect(decoded?.errorName).to.equal("InsufficientFunds");
    expect(decoded?.sentence).to.equal("InsufficientFunds: the sender does not hold enough to pay for this transaction (it costs up to 2 ETH and the balance is 1 ETH)");
    expect(decodeRevert(new Error("socket hang up"))).to.equal(undefined);
  });

  it("refuses an early finalize before sending, with the error's sentence (no transaction, nonce unchanged)", async () => {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const wallet = fx.funder as unknown as Wallet;
    const escrow = fx.escrow.address;
    const opened = await openChannel({ wallet, publicClient, escrow, terms: makeTerms(), amount: parseEther("1") });
    const closed = await closeUnilateral({ wallet, publicClient, escrow, ref: opened.ref, ticket: undefined });
    const nonce = await publicClient.getTransactionCount({ address: wallet.account.address });
    const error = await rejection(finalizeClose({ wallet, publicClient, escrow, ref: opened.ref, recorded: closed.state }));
    expect(error).to.be.instanceOf(ContractRevertError);
    expect((error as ContractRevertError).revert.errorName).to.equal("ChallengeWindowOpen");
    expect((error as ContractRevertError).shortMessage).to.match(/^GasEscrow\.finalize reverted with ChallengeWindowOpen\(0x[0-9a-f]{64}, \d+\): the challenge window is open until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in 1 h( \d+ min)?\)$/);
    expect(await publicClient.getTransactionCount({ address: wallet.account.address })).to.equal(nonce);
  });
});
