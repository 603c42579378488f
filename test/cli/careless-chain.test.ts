/**
 * Issue 28 item 9, the careless inputs that need a chain: a store from one chain used with the RPC of another, a
 * balance that must list only the acting key's channels, a revocation of a key never granted, and the words a
 * revert is printed with (durations are not ETH; an empty revert names the likely wrong contract).
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import path from "node:path";
import {
  ContractFunctionExecutionError,
  ContractFunctionRevertedError,
  getAddress,
  keccak256,
  stringToBytes,
  toHex,
  zeroAddress,
  type Address,
  type Hex,
} from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { gasEscrowAbi } from "../../channel-client/chain/escrow";
import { decodeRevert, describeRevert, type AbiError } from "../../channel-client/chain/revert";
import { ETH_UNIT } from "../../channel-client/core/format";
import { sessionIdOf, termsHashOf, type PricingTerms } from "../../channel-client/core/terms";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { ChannelRecord } from "../../channel-client/store/store";
import { cliSandbox, runCli } from "../helpers/cli";
import { escrowFixture, HARDHAT_MNEMONIC, ROLE } from "../helpers/fixtures";

const keyOf = (index: number) => ({ IOI_PRIVATE_KEY: toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) as Hex });
const addressOf = (index: number) => mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).address;
const PRICING: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: 1000n };

/** A channel record as `ioi open` stores it, for a session id of our choosing. */
function channel(sessionId: Hex, escrow: Address, chainId: number, parties: { payer: Address; provider: Address; funder: Address }): ChannelRecord {
  return {
    sessionId,
    role: "payer",
    ref: {
      terms: { ...parties, asset: zeroAddress, termsHash: termsHashOf(PRICING), policyHash: keccak256(stringToBytes("policy: default")), challengeDuration: 3600n, nonce: 1n },
      openedAt: 1n,
    },
    pricing: PRICING,
    escrow,
    chainId,
    deposit: 5000n,
    status: "open",
  };
}

describe("issue 28 item 9: careless inputs against a chain", function () {
  const box = cliSandbox("ioi-careless-chain-");

  it("issue 28 item 9: a store from chain 1 with the RPC of chain 31337 is one sentence, never a wrong-signer message or phase None", async () => {
    const fx = await loadFixture(escrowFixture);
    const db = path.join(box.dir, "payer.db");
    const sessionId = `0x${"5a".repeat(32)}` as Hex;
    const store = SqliteStore.open(db);
    await store.putChannel(channel(sessionId, getAddress(fx.escrow.address), 1, { payer: addressOf(ROLE.payer), provider: addressOf(ROLE.provider), funder: addressOf(ROLE.payer) }));
    await store.close();
    const common = ["--session", sessionId, "--db", db, "--rpc", box.rpc.url, "--escrow", fx.escrow.address];
    const nonce = await fx.publicClient.getTransactionCount({ address: addressOf(ROLE.payer) });
    for (const argv of [["close"], ["close", "--unilateral"], ["status"], ["finalize"], ["anchor"], ["deposit", "--amount", "5"], ["stream", "-n", "1"], ["call", "--method", "ping"]]) {
      const result = await runCli([...argv, ...common], keyOf(ROLE.payer));
      expect(result.code, `${argv.join(" ")}: ${result.err}`).to.equal(2);
      expect(result.err, argv.join(" ")).to.contain(`is stored as a channel on chain 1, but the RPC serves chain 31337; point --rpc at chain 1.`);
      expect(result.err).to.not.match(/signed by|phase None|\n\s+at /);
    }
    // Nothing was sent.
    expect(await fx.publicClient.getTransactionCount({ address: addressOf(ROLE.payer) })).to.equal(nonce);
  });

  it("issue 28 item 9: ioi balance lists only the channels of the address asked about, on this chain", async () => {
    const fx = await loadFixture(escrowFixture);
    const db = path.join(box.dir, "mixed.db");
    const escrow = getAddress(fx.escrow.address);
    const mine = `0x${"01".repeat(32)}` as Hex;
    const funded = `0x${"02".repeat(32)}` as Hex;
    const theirs = `0x${"03".repeat(32)}` as Hex;
    const elsewhere = `0x${"04".repeat(32)}` as Hex;
    const me = addressOf(ROLE.payer);
    const store = SqliteStore.open(db);
    await store.putChannel(channel(mine, escrow, 31337, { payer: me, provider: addressOf(ROLE.provider), funder: me }));
    await store.putChannel(channel(funded, escrow, 31337, { payer: addressOf(ROLE.stranger), provider: addressOf(ROLE.provider), funder: me }));
    await store.putChannel(channel(theirs, escrow, 31337, { payer: addressOf(ROLE.stranger), provider: addressOf(ROLE.provider), funder: addressOf(ROLE.stranger) }));
    await store.putChannel(channel(elsewhere, escrow, 1, { payer: me, provider: addressOf(ROLE.provider), funder: me }));
    await store.close();
    const result = await runCli(["balance", "--json", "--address", me, "--db", db, "--rpc", box.rpc.url, "--escrow", escrow]);
    expect(result.code, result.err).to.equal(0);
    const listed = (JSON.parse(result.out.split("\n").pop()!) as { channels: { sessionId: Hex }[] }).channels.map((c) => c.sessionId);
    expect(listed).to.deep.equal([mine, funded]);
    expect(result.out).to.not.contain(theirs);
    expect(result.out).to.not.contain(elsewhere);
  });

  it("issue 28 item 9: revoking a key the store holds no grant of sends nothing; --all asks for --yes", async () => {
    const fx = await loadFixture(escrowFixture);
    const db = path.join(box.dir, "payer.db");
    const escrow = getAddress(fx.escrow.address);
    // The session id derived from the channel's terms, as `ioi open` stores it.
    const record = channel(`0x${"6b".repeat(32)}`, escrow, 31337, { payer: addressOf(ROLE.payer), provider: addressOf(ROLE.provider), funder: addressOf(ROLE.payer) });
    const sessionId = sessionIdOf(fx.domain, record.ref);
    const store = SqliteStore.open(db);
    await store.putChannel({ ...record, sessionId });
    await store.close();
    const nonce = await fx.publicClient.getTransactionCount({ address: addressOf(ROLE.payer) });
    const revoke = await runCli(["session-key", "revoke", "--session", sessionId, "--key", addressOf(ROLE.sessionKey), "--db", db, "--rpc", box.rpc.url, "--escrow", escrow], keyOf(ROLE.payer));
    expect(revoke.code, revoke.err).to.equal(2);
    expect(revoke.err).to.contain("revoking a key never granted here sends a transaction for nothing");
    const all = await runCli(["session-key", "revoke", "--all", "--db", db, "--rpc", box.rpc.url, "--escrow", escrow], keyOf(ROLE.payer));
    expect(all.code, all.err).to.equal(2);
    expect(all.err).to.contain("run again with --yes");
    expect(await fx.publicClient.getTransactionCount({ address: addressOf(ROLE.payer) })).to.equal(nonce);
    expect(await fx.publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "keyEpochOf", args: [addressOf(ROLE.payer)] })).to.equal(0n);
  });

  it("issue 28 item 9: revert bounds that are durations or times print as such, never as ETH; an empty revert names the likely wrong contract", () => {
    const item = (name: string, inputs: { name: string; type: string }[]): AbiError => ({ type: "error", name, inputs });
    const duration = describeRevert(item("ChallengeDurationOutOfRange", [{ name: "challengeDuration", type: "uint64" }, { name: "min", type: "uint64" }, { name: "max", type: "uint64" }]), "ChallengeDurationOutOfRange", [30n, 60n, 2_592_000n], { asset: ETH_UNIT });
    expect(duration.sentence).to.not.contain("ETH");
    expect(duration.sentence).to.contain("min 60 s");
    expect(duration.sentence).to.contain("max 2592000 s");
    const window = describeRevert(item("DisputeWindowOutOfRange", [{ name: "disputeWindow", type: "uint40" }, { name: "min", type: "uint40" }, { name: "max", type: "uint40" }]), "DisputeWindowOutOfRange", [1n, 3600n, 604_800n], { asset: ETH_UNIT });
    expect(window.sentence).to.not.contain("ETH");
    const delay = describeRevert(item("UnbondingDelayOutOfRange", [{ name: "unbondingDelay", type: "uint64" }, { name: "min", type: "uint64" }, { name: "max", type: "uint64" }]), "UnbondingDelayOutOfRange", [1n, 86_400n, 2_592_000n], { asset: ETH_UNIT });
    expect(delay.sentence).to.not.contain("ETH");
    const deadline = describeRevert(item("DeadlineOutOfRange", [{ name: "deadline", type: "uint40" }, { name: "timestamp", type: "uint256" }, { name: "max", type: "uint256" }]), "DeadlineOutOfRange", [1n, 1_700_000_000n, 1_800_000_000n], { now: 1_700_000_000n, asset: ETH_UNIT });
    expect(deadline.sentence).to.not.contain("ETH");
    // Amounts still print as money.
    const amount = describeRevert(item("EthValueMismatch", [{ name: "value", type: "uint256" }, { name: "amount", type: "uint256" }]), "EthValueMismatch", [5n, 6n], { asset: ETH_UNIT });
    expect(amount.sentence).to.contain("ETH");

    const reverted = new ContractFunctionRevertedError({ abi: gasEscrowAbi, data: "0x", functionName: "closeCooperative" });
    const error = new ContractFunctionExecutionError(reverted, { abi: gasEscrowAbi, functionName: "closeCooperative", args: [], contractAddress: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
    const decoded = decodeRevert(error);
    expect(decoded?.errorName).to.equal("EmptyRevert");
    expect(decoded?.sentence).to.contain("0x5FbDB2315678afecb367f032d93F642f64180aa3 reverted closeCooperative without any reason");
    expect(decoded?.sentence).to.contain("not the contract this command expects");
  });
});
