/**
 * Gas of the dispute operations, for `npm run gas` and `npm run bench`: cases against a gig and against a
 * session receipt proven at Merkle depth 10 and 20; contesting (which requests the panel) and an uncontested
 * case's panel request; drawing a 5-member panel and, after an appeal, a 9-member one; `submitVerdict` from
 * 3-, 5- and 9-member panels (with their supermajorities of 2, 4 and 6 signatures); appeals (to a fresh panel
 * and to the slow path); finalisation with and without an overturn; fee claims; governance's slow-path
 * decision; and expiry. Runs on the in-process Hardhat network with the contracts wired as `deployAll` wires
 * them and 16 arbitrators admitted through the timelock as the devnet admits them.
 */
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { encodeFunctionData, erc20Abi, getAddress, keccak256, parseEther, stringToBytes, zeroAddress, zeroHash, type Hash, type Hex, type LocalAccount, type PublicClient } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { disputeManagerAbi, gigEscrowAbi, providerRegistryAbi } from "../arbitration/runner/chain";
import { disputeManagerDomain, signResolution, type ResolutionMessage } from "../arbitration/lanes/resolution";
import { ReceiptAccumulator } from "../channel-client/core/accumulator";
import { gasEscrowDomain, toCompactSignature } from "../channel-client/core/eip712";
import { gasEscrowAbi, type Wallet } from "../channel-client/chain/escrow";
import { receiptLeafFromHashes } from "../channel-client/core/leaf";
import { NATIVE_ASSET, sessionIdOf, type ChannelTerms } from "../channel-client/core/terms";
import { signPaymentTicket } from "../channel-client/core/ticket";
import { admitDevnetArbitrators } from "./arbitrators";
import { deployAll } from "./deploy";
import { governThroughTimelock, hardhatTimeTravel } from "./timelock";

const MNEMONIC = "test test test test test test test test test test test junk";
const account = (i: number): LocalAccount => mnemonicToAccount(MNEMONIC, { addressIndex: i });
const NO_STATE = { deposit: 0n, seq: 0n, amount: 0n, receiptRoot: zeroHash, feeBps: 0 };
const mintAbi = [
  { type: "function", name: "mint", stateMutability: "nonpayable", inputs: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }], outputs: [] },
] as const;
const KEYS = new Map<string, LocalAccount>(Array.from({ length: 40 }, (_, i) => account(i)).map((a) => [getAddress(a.address), a]));

export async function measureDisputeGas(hre: HardhatRuntimeEnvironment): Promise<Record<string, number>> {
  const publicClient = (await hre.viem.getPublicClient()) as unknown as PublicClient;
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
  const rpc = (method: string, params: unknown[]) => hre.network.provider.send(method, params);
  const advance = async (seconds: number) => {
    await rpc("evm_increaseTime", [seconds]);
    await rpc("evm_mine", []);
  };

  // Registry: a bonded provider and the devnet's 16 arbitrators, admitted through the timelock.
  const registry = c.ProviderRegistry.address;
  const token = c.LaborGas.address;
  const providerBond = parseEther("5000");
  await send(governance, { address: token, abi: mintAbi, functionName: "mint", args: [providerWallet.account.address, providerBond] });
  await send(providerWallet, { address: token, abi: erc20Abi, functionName: "approve", args: [registry, providerBond] });
  const id = keccak256(stringToBytes("provider identity"));
  await send(providerWallet, { address: registry, abi: providerRegistryAbi, functionName: "registerProvider", args: ["tcp://127.0.0.1", id, id, id] });
  await send(providerWallet, { address: registry, abi: providerRegistryAbi, functionName: "bond", args: [0, providerBond] });
  await admitDevnetArbitrators({ publicClient, wallets, deployment });

  const chainId = BigInt(deployment.chainId);
  const domain = disputeManagerDomain(chainId, getAddress(dm));
  const params = await publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "params" });
  const bondFor = (value: bigint, level: number) => publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "bondFor", args: [zeroAddress, value, level] });
  const caseOf = (caseId: Hex) => publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] });
  /** Signatures of the first `n` members (ascending) of the case's current panel. */
  const panelSignatures = async (message: ResolutionMessage, n?: number) => {
    const { round } = await caseOf(message.caseId);
    const panel = [...(await publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "panelOf", args: [message.caseId, round] }))]
      .map((a) => getAddress(a))
      .sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
    const count = n ?? Math.floor((2 * panel.length + 2) / 3);
    return Promise.all(panel.slice(0, count).map(async (a) => toCompactSignature(await signResolution(KEYS.get(a)!, domain, message))));
  };
  const draw = async (caseId: Hex, label?: string) => {
    await rpc("hardhat_mine", ["0x2"]);
    await send(stranger, { address: dm, abi: disputeManagerAbi, functionName: "drawPanel", args: [caseId] }, label);
  };
  const verdict = (caseId: Hex, v: 1 | 2 | 3): ResolutionMessage =>
    v === 1
      ? { caseId, verdict: 1, refund: parseEther("0.5"), slash: parseEther("10"), resolutionHash: keccak256(stringToBytes("provider at fault")) }
      : { caseId, verdict: v, refund: 0n, slash: 0n, resolutionHash: keccak256(stringToBytes(`verdict ${v}`)) };
  const submit = async (message: ResolutionMessage, label?: string) =>
    send(stranger, { address: dm, abi: disputeManagerAbi, functionName: "submitVerdict", args: [message, await panelSignatures(message)] }, label);
  const appeal = async (wallet: Wallet, caseId: Hex, label?: string) => {
    const cs = await caseOf(caseId);
    const bond = await bondFor(cs.value, cs.lane + cs.round + 1);
    await send(wallet, { address: dm, abi: disputeManagerAbi, functionName: "appeal", args: [caseId], value: bond }, label);
  };

  // Gig cases.
  const gig = async () => {
    const now = (await publicClient.getBlock()).timestamp;
    await send(client, {
      address: c.GigEscrow.address,
      abi: gigEscrowAbi,
      functionName: "fund",
      args: [providerWallet.account.address, zeroAddress, parseEther("1"), keccak256(stringToBytes("ics")), Number(now + 30n * 86_400n), 3600],
      value: parseEther("1"),
    });
    const gigId = await publicClient.readContract({ address: c.GigEscrow.address, abi: gigEscrowAbi, functionName: "gigCount" });
    await send(providerWallet, { address: c.GigEscrow.address, abi: gigEscrowAbi, functionName: "accept", args: [gigId] });
    await send(providerWallet, { address: c.GigEscrow.address, abi: gigEscrowAbi, functionName: "deliver", args: [gigId, keccak256(stringToBytes("deliverable")), zeroHash] });
    const caseId = await publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "nextCaseId", args: [1, `0x${gigId.toString(16).padStart(64, "0")}`] });
    const bond = await bondFor(parseEther("1"), 1);
    return { gigId, caseId, bond };
  };
  const packageHash = keccak256(stringToBytes("package"));
  const open = async (label?: string) => {
    const g = await gig();
    await send(client, { address: dm, abi: disputeManagerAbi, functionName: "openGigCase", args: [g.gigId, 1, packageHash], value: g.bond }, label);
    return g;
  };

  // A contested case, decided and finalised without an appeal. The first of its kind pays for slots and
  // accounts that are new (fee credits, the burn address): one unmeasured run, then the measured one.
  for (const measured of [false, true]) {
    const g = await open(measured ? "dispute openGigCase" : undefined);
    await send(providerWallet, { address: dm, abi: disputeManagerAbi, functionName: "respond", args: [g.caseId], value: g.bond }, measured ? "dispute respond (contests, requests the panel)" : undefined);
    await draw(g.caseId, measured ? "dispute drawPanel (draw, 5 members)" : undefined);
    await submit(verdict(g.caseId, 1), measured ? "dispute submitVerdict (5-member panel, 4 signatures)" : undefined);
    await advance(Number(params.appealWindow) + 1);
    await send(stranger, { address: dm, abi: disputeManagerAbi, functionName: "finalize", args: [g.caseId, NO_STATE] }, measured ? "dispute finalize (no appeal, 4 coherent signers paid)" : undefined);
  }
  // The same case when the panel's signatures reach the chain without files (decision 0031): the challenger
  // publishes where its package is, each of the 4 signing members posts its own signature, and any member
  // submits the posted supermajority.
  {
    const g = await open();
    await send(client, { address: dm, abi: disputeManagerAbi, functionName: "publishEvidence", args: [g.caseId, "http://127.0.0.1:8088/"] }, "dispute publishEvidence (http URI)");
    // The inline alternative at its limit: a 4 KiB package as a base64 data: URI in calldata and in the event.
    const inline = `data:application/json;base64,${Buffer.from("x".repeat(4096)).toString("base64")}`;
    await send(client, { address: dm, abi: disputeManagerAbi, functionName: "publishEvidence", args: [g.caseId, inline] }, "dispute publishEvidence (4 KiB inline data: URI)");
    await send(providerWallet, { address: dm, abi: disputeManagerAbi, functionName: "respond", args: [g.caseId], value: g.bond });
    await draw(g.caseId);
    const message = verdict(g.caseId, 1);
    const { round } = await caseOf(g.caseId);
    const panel = [...(await publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "panelOf", args: [g.caseId, round] }))]
      .map((a) => getAddress(a))
      .sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
    const signers = panel.slice(0, Math.floor((2 * panel.length + 2) / 3));
    let posts = 0;
    for (const member of signers) {
      const signature = toCompactSignature(await signResolution(KEYS.get(member)!, domain, message));
      const wallet = wallets.find((w) => getAddress(w.account.address) === member)!;
      const receipt = await send(wallet, { address: dm, abi: disputeManagerAbi, functionName: "postSignatures", args: [message, [signature]] }, "dispute postSignatures (one member's own)");
      posts += Number(receipt.gasUsed);
    }
    report["dispute postSignatures (4 members, one transaction each)"] = posts;
    await submit(message, "dispute submitVerdict (after posted signatures, 4 signatures)");
    await advance(Number(params.appealWindow) + 1);
    await send(stranger, { address: dm, abi: disputeManagerAbi, functionName: "finalize", args: [g.caseId, NO_STATE] });
  }
  // A coherent signer claims its credited fee.
  for (const w of wallets.slice(20, 36)) {
    const due = await publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "claimable", args: [zeroAddress, w.account.address] });
    if (due > 0n) {
      await send(w, { address: dm, abi: disputeManagerAbi, functionName: "claim", args: [zeroAddress] }, "dispute claim (ETH fees)");
      break;
    }
  }

  // An uncontested case: the panel is requested after the respond window, drawn, decided, appealed to a
  // 9-member panel that overturns it, and finalised (the overturned signers slashed).
  {
    const g = await open();
    await advance(Number(params.respondWindow) + 1);
    await send(stranger, { address: dm, abi: disputeManagerAbi, functionName: "drawPanel", args: [g.caseId] }, "dispute drawPanel (request randomness, uncontested)");
    await draw(g.caseId);
    await submit(verdict(g.caseId, 1));
    await appeal(providerWallet, g.caseId, "dispute appeal (round 1: a fresh 9-member panel)");
    await draw(g.caseId, "dispute drawPanel (draw, 9 members, appeal round)");
    await submit(verdict(g.caseId, 2), "dispute submitVerdict (9-member panel, 6 signatures)");
    await advance(Number(params.appealWindow) + 1);
    await send(stranger, { address: dm, abi: disputeManagerAbi, functionName: "finalize", args: [g.caseId, NO_STATE] }, "dispute finalize (after an appeal: 4 overturned signers slashed, 6 paid)");
  }

  // A second appeal sends the case to the slow path; governance (the timelock) decides it.
  {
    const g = await open();
    await advance(Number(params.respondWindow) + 1);
    await send(stranger, { address: dm, abi: disputeManagerAbi, functionName: "drawPanel", args: [g.caseId] });
    await draw(g.caseId);
    await submit(verdict(g.caseId, 1));
    await appeal(providerWallet, g.caseId);
    await draw(g.caseId);
    await submit(verdict(g.caseId, 2));
    await appeal(client, g.caseId, "dispute appeal (round 2: to the slow path)");
    // Measured as the timelock's own call (impersonated): what the DisputeManager spends inside `executeBatch`.
    await rpc("hardhat_impersonateAccount", [deployment.timelock]);
    await rpc("hardhat_setBalance", [deployment.timelock, "0xde0b6b3a7640000"]);
    const timelockWallet = (await hre.viem.getWalletClient(deployment.timelock)) as unknown as Wallet;
    await send(timelockWallet, {
      address: dm,
      abi: disputeManagerAbi,
      functionName: "resolveSlowPath",
      args: [{ caseId: g.caseId, verdict: 3, refund: parseEther("0.9"), slash: 0n, resolutionHash: keccak256(stringToBytes("slow path")) }, NO_STATE],
    }, "dispute resolveSlowPath (no fault, by the timelock)");
    await rpc("hardhat_stopImpersonatingAccount", [deployment.timelock]);
  }

  // Expiry: an undrawn case past its deadline goes to the slow path; past the slow path's deadline it ends.
  {
    const g = await open();
    const cs = await caseOf(g.caseId);
    const now = (await publicClient.getBlock()).timestamp;
    await advance(Number(BigInt(cs.deadline) - now) + 1);
    await send(stranger, { address: dm, abi: disputeManagerAbi, functionName: "expire", args: [g.caseId, NO_STATE] }, "dispute expire (open → slow path)");
    await advance(Number(params.slowPathTimeout) + 1);
    await send(stranger, { address: dm, abi: disputeManagerAbi, functionName: "expire", args: [g.caseId, NO_STATE] }, "dispute expire (slow path → expired, no verdict)");
  }

  // A 3-member panel (governance sets panelSize 3 through the timelock): two signatures decide.
  {
    await governThroughTimelock({
      publicClient,
      wallet: governance,
      timelock: deployment.timelock,
      calls: [{ target: dm, data: encodeFunctionData({ abi: disputeManagerAbi, functionName: "setParams", args: [{ ...params, panelSize: 3 }] }) }],
      salt: "gas: panel of 3",
      wait: hardhatTimeTravel(publicClient),
    });
    // New parameters apply to cases opened an unbonding delay after they were set (decision 0014).
    const delay = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "unbondingDelay" });
    await advance(Number(delay) + 1);
    const g = await open();
    await send(providerWallet, { address: dm, abi: disputeManagerAbi, functionName: "respond", args: [g.caseId], value: g.bond });
    await draw(g.caseId, "dispute drawPanel (draw, 3 members)");
    await submit(verdict(g.caseId, 1), "dispute submitVerdict (3-member panel, 2 signatures)");
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
    const bond = await bondFor(amount, 0);
    await send(wallets[2]!, {
      address: dm,
      abi: disputeManagerAbi,
      functionName: "openSessionCase",
      args: [terms, ref.openedAt, recorded, target.receiptHash, target.ticketHash, proof, 0, packageHash],
      value: bond,
    }, `dispute openSessionCase (proof depth ${depth})`);
  }
  // A whole contested gig case, from opening to enforcement with no appeal: what the parties and a panel pay.
  report["dispute whole gig case (open, respond, draw 5, verdict, finalize)"] = [
    "dispute openGigCase",
    "dispute respond (contests, requests the panel)",
    "dispute drawPanel (draw, 5 members)",
    "dispute submitVerdict (5-member panel, 4 signatures)",
    "dispute finalize (no appeal, 4 coherent signers paid)",
  ].reduce((sum, key) => sum + report[key]!, 0);
  // The same case with signatures reaching the chain through postSignatures (decision 0031) and the evidence URI.
  report["dispute whole gig case with posted signatures (open, publish, respond, draw 5, 4 posts, verdict, finalize)"] =
    report["dispute whole gig case (open, respond, draw 5, verdict, finalize)"]! +
    report["dispute publishEvidence (http URI)"]! +
    report["dispute postSignatures (4 members, one transaction each)"]!;
  return report;
}
