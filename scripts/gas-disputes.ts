/**
 * Gas of the dispute operations, for `npm run gas` and `npm run bench`: cases against a gig and against a
 * session receipt proven at Merkle depth 10 and 20, contesting, escalating, quorum resolutions with 3 and
 * 5 arbitrator signatures, and the slow path. Runs on the in-process Hardhat network with the contracts
 * wired as `deployAll` wires them.
 */
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { erc20Abi, getAddress, keccak256, parseEther, stringToBytes, zeroAddress, zeroHash, type Hash, type Hex, type LocalAccount } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { disputeManagerAbi, gigEscrowAbi, providerRegistryAbi } from "../arbitration/chain";
import { disputeManagerDomain, signResolution, type ResolutionMessage } from "../arbitration/resolution";
import { judgeRuntimeHash } from "../arbitration/runner";
import { ReceiptAccumulator } from "../channel-client/accumulator";
import { gasEscrowDomain, toCompactSignature } from "../channel-client/eip712";
import { gasEscrowAbi, type Wallet } from "../channel-client/escrow";
import { receiptLeafFromHashes } from "../channel-client/leaf";
import { NATIVE_ASSET, sessionIdOf, type ChannelTerms } from "../channel-client/terms";
import { signPaymentTicket } from "../channel-client/ticket";
import { deployAll } from "./deploy";

const MNEMONIC = "test test test test test test test test test test test junk";
const account = (i: number): LocalAccount => mnemonicToAccount(MNEMONIC, { addressIndex: i });
const ARBITRATORS = [10, 11, 12, 13, 14];
const NO_STATE = { deposit: 0n, seq: 0n, amount: 0n, receiptRoot: zeroHash, feeBps: 0 };
const mintAbi = [
  { type: "function", name: "mint", stateMutability: "nonpayable", inputs: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }], outputs: [] },
] as const;

export async function measureDisputeGas(hre: HardhatRuntimeEnvironment): Promise<Record<string, number>> {
  const publicClient = await hre.viem.getPublicClient();
  const wallets = (await hre.viem.getWalletClients()) as unknown as Wallet[];
  const [governance, client, , providerWallet, stranger] = wallets as [Wallet, Wallet, Wallet, Wallet, Wallet];
  const deployment = await deployAll(hre);
  const c = deployment.contracts;
  const dm = c.DisputeManager.address;
  const report: Record<string, number> = {};
  const send = async (wallet: Wallet, request: Record<string, unknown>, label?: string) => {
    const hash: Hash = await wallet.writeContract(request as never);
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`${label ?? String(request.functionName)} reverted`);
    if (label) report[label] = Number(receipt.gasUsed);
    return receipt;
  };

  // Registry: a bonded provider and five arbitrators pinned to this runtime.
  const registry = c.ProviderRegistry.address;
  const token = c.LaborGas.address;
  const stake = parseEther("1000");
  for (const [index, role] of [[3, 0], ...ARBITRATORS.map((i) => [i, 1])] as [number, number][]) {
    const wallet = wallets[index]!;
    await send(governance, { address: token, abi: mintAbi, functionName: "mint", args: [wallet.account.address, stake] });
    await send(wallet, { address: token, abi: erc20Abi, functionName: "approve", args: [registry, stake] });
    const id = keccak256(stringToBytes(`identity ${index}`));
    if (role === 0) await send(wallet, { address: registry, abi: providerRegistryAbi, functionName: "registerProvider", args: ["tcp://127.0.0.1", id, id, id] });
    else await send(wallet, { address: registry, abi: providerRegistryAbi, functionName: "registerArbitrator", args: [judgeRuntimeHash(), id, id] });
    await send(wallet, { address: registry, abi: providerRegistryAbi, functionName: "bond", args: [role, stake] });
  }
  const arbitrators = ARBITRATORS.map(account).sort((a, b) => (BigInt(a.address) < BigInt(b.address) ? -1 : 1));
  const chainId = BigInt(deployment.chainId);
  const domain = disputeManagerDomain(chainId, getAddress(dm));
  const signatures = async (message: ResolutionMessage, n: number) =>
    Promise.all(arbitrators.slice(0, n).map(async (a) => toCompactSignature(await signResolution(a, domain, message))));
  const bondFor = (value: bigint, lane: number) =>
    publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "bondFor", args: [value, lane] });

  // Gig cases.
  const gig = async () => {
    const now = (await publicClient.getBlock()).timestamp;
    await send(client, {
      address: c.GigEscrow.address,
      abi: gigEscrowAbi,
      functionName: "fund",
      args: [providerWallet.account.address, zeroAddress, parseEther("1"), keccak256(stringToBytes("ics")), Number(now + 86_400n), 3600],
      value: parseEther("1"),
    });
    const gigId = await publicClient.readContract({ address: c.GigEscrow.address, abi: gigEscrowAbi, functionName: "gigCount" });
    await send(providerWallet, { address: c.GigEscrow.address, abi: gigEscrowAbi, functionName: "accept", args: [gigId] });
    await send(providerWallet, { address: c.GigEscrow.address, abi: gigEscrowAbi, functionName: "deliver", args: [gigId, keccak256(stringToBytes("deliverable")), zeroHash] });
    const caseId = await publicClient.readContract({
      address: dm,
      abi: disputeManagerAbi,
      functionName: "nextCaseId",
      args: [1, `0x${gigId.toString(16).padStart(64, "0")}`],
    });
    return { gigId, caseId };
  };
  const packageHash = keccak256(stringToBytes("package"));
  const resolutionHash = keccak256(stringToBytes("resolution"));
  // The first resolution pays for accounts and slots that are new (the burn address's balances, the
  // treasury of slashes): measure each signer count in the steady state after one unmeasured round.
  for (const [n, labelled] of [[3, false], [3, true], [5, true]] as const) {
    const g = await gig();
    const bond = await bondFor(parseEther("1"), 1);
    const measured = labelled && n === 3;
    await send(client, { address: dm, abi: disputeManagerAbi, functionName: "openGigCase", args: [g.gigId, 1, packageHash], value: bond }, measured ? "dispute openGigCase" : undefined);
    await send(providerWallet, { address: dm, abi: disputeManagerAbi, functionName: "respond", args: [g.caseId], value: bond }, measured ? "dispute respond" : undefined);
    const message: ResolutionMessage = { caseId: g.caseId, verdict: 1, refund: parseEther("0.5"), slash: parseEther("10"), resolutionHash };
    const label = labelled ? `dispute resolve (gig, ${n} signatures, refund + slash)` : undefined;
    await send(stranger, { address: dm, abi: disputeManagerAbi, functionName: "resolve", args: [message, NO_STATE, await signatures(message, n)] }, label);
  }
  // Escalation to the slow path and a governance decision; expiry of a second slow-path case.
  {
    const g = await gig();
    const bond = await bondFor(parseEther("1"), 1);
    await send(client, { address: dm, abi: disputeManagerAbi, functionName: "openGigCase", args: [g.gigId, 1, packageHash], value: bond });
    const topUp = (await bondFor(parseEther("1"), 2)) - bond;
    await send(client, { address: dm, abi: disputeManagerAbi, functionName: "escalate", args: [g.caseId], value: topUp }, "dispute escalate (to the slow path)");
    await send(governance, {
      address: dm,
      abi: disputeManagerAbi,
      functionName: "resolveSlowPath",
      args: [{ caseId: g.caseId, verdict: 3, refund: parseEther("0.9"), slash: 0n, resolutionHash }, NO_STATE],
    }, "dispute resolveSlowPath (no fault)");
  }
  {
    const g = await gig();
    const bond = await bondFor(parseEther("1"), 1);
    await send(client, { address: dm, abi: disputeManagerAbi, functionName: "openGigCase", args: [g.gigId, 1, packageHash], value: bond });
    await hre.network.provider.send("evm_increaseTime", [24 * 3600 + 1]);
    await send(stranger, { address: dm, abi: disputeManagerAbi, functionName: "expire", args: [g.caseId, NO_STATE] }, "dispute expire (fast path → slow path)");
    await hre.network.provider.send("evm_increaseTime", [7 * 24 * 3600 + 1]);
    await send(stranger, { address: dm, abi: disputeManagerAbi, functionName: "expire", args: [g.caseId, NO_STATE] }, "dispute expire (slow path → expired)");
  }

  // Session cases: a receipt proven at depth 10 and 20 against the recorded root.
  const payer = account(2);
  const provider = account(3);
  const escrowDomain = gasEscrowDomain({ chainId: deployment.chainId, verifyingContract: c.GasEscrow.address });
  for (const depth of [10, 20]) {
    const terms: ChannelTerms = {
      payer: payer.address,
      provider: provider.address,
      funder: getAddress(client.account.address),
      asset: NATIVE_ASSET,
      termsHash: keccak256(stringToBytes("terms")),
      policyHash: keccak256(stringToBytes("policy")),
      challengeDuration: 3600n,
      nonce: BigInt(depth),
    };
    const opened = await send(client, { address: c.GasEscrow.address, abi: gasEscrowAbi, functionName: "open", args: [terms, parseEther("1")], value: parseEther("1") });
    const ref = { terms, openedAt: opened.blockNumber };
    const sessionId = sessionIdOf(escrowDomain, ref);
    // A full tree of 2^depth leaves: every proof has exactly `depth` siblings.
    const tree = new ReceiptAccumulator();
    const leaves = 2 ** depth;
    const hashes = (i: number) => ({ receiptHash: keccak256(stringToBytes(`r${i}`)), ticketHash: keccak256(stringToBytes(`t${i}`)) });
    const target = hashes(7);
    for (let i = 0; i < leaves; i++) {
      const { receiptHash, ticketHash } = i === 7 ? target : { receiptHash: `0x${i.toString(16).padStart(64, "0")}` as Hex, ticketHash: zeroHash };
      tree.append(receiptLeafFromHashes(receiptHash, ticketHash));
    }
    const amount = parseEther("0.5");
    const ticket = await signPaymentTicket({ account: payer, domain: escrowDomain, ticket: { sessionId, provider: provider.address, termsHash: terms.termsHash, seq: BigInt(leaves + 1), cumulativeAmount: amount, receiptRoot: tree.root() } });
    await send(providerWallet, {
      address: c.GasEscrow.address,
      abi: gasEscrowAbi,
      functionName: "closeUnilateral",
      args: [terms, ref.openedAt, { seq: BigInt(leaves + 1), cumulativeAmount: amount, receiptRoot: tree.root(), sig: toCompactSignature(ticket.signature) }],
    });
    const recorded = { deposit: parseEther("1"), seq: BigInt(leaves + 1), amount, receiptRoot: tree.root(), feeBps: 0 };
    const proof = tree.proof(7);
    if (proof.length !== depth) throw new Error(`expected a proof of depth ${depth}, got ${proof.length}`);
    const caseId = await publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "nextCaseId", args: [2, sessionId] });
    const bond = await bondFor(amount, 0);
    await send(wallets[2]!, {
      address: dm,
      abi: disputeManagerAbi,
      functionName: "openSessionCase",
      args: [terms, ref.openedAt, recorded, target.receiptHash, target.ticketHash, proof, 0, packageHash],
      value: bond,
    }, `dispute openSessionCase (proof depth ${depth})`);
    if (depth === 10) {
      const message: ResolutionMessage = { caseId, verdict: 1, refund: parseEther("0.01"), slash: 0n, resolutionHash };
      await send(stranger, { address: dm, abi: disputeManagerAbi, functionName: "resolve", args: [message, recorded, await signatures(message, 3)] }, "dispute resolve (session, 3 signatures, refund)");
    }
  }
  return report;
}
