/**
 * `npm run gas`: measures the gas of every contract operation in one canonical scenario on the embedded
 * Hardhat network and writes `gas-report.json` (function name → gasUsed, the 21,000 base included).
 *
 * Conditions, the same as the peers' figures quoted in the issues: Hardhat's default hardfork (Osaka rules
 * execute the transactions; the contracts are compiled for the Cancun EVM target), native ETH,
 * payouts to accounts that already exist, tickets signed by the payer itself, routing fee 0 (variants
 * with a fee or a session key are reported under their own keys).
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import hre from "hardhat";
import { keccak256, parseEther, parseEventLogs, stringToBytes, zeroHash, type Hash, type Hex, type LocalAccount } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { toCompactSignature } from "../channel-client/core/eip712";
import { signReceiptCommit } from "../channel-client/core/receipt-commit";
import { signSettlementSummary, type SettlementSummary } from "../channel-client/core/summary";
import { NATIVE_ASSET, sessionIdOf, type ChannelRef, type ChannelTerms } from "../channel-client/core/terms";
import { signPaymentTicket } from "../channel-client/core/ticket";
import { gasEscrowAbi } from "../channel-client/abi/GasEscrow";
import { sessionKeyGrantArg, signSessionKeyGrant } from "../channel-client/core/session-key";
import { gasEscrowDomain } from "../channel-client/core/eip712";
import { measureDisputeGas } from "./gas-disputes";

const MNEMONIC = "test test test test test test test test test test test junk";
const account = (i: number): LocalAccount => mnemonicToAccount(MNEMONIC, { addressIndex: i });

export type GasReport = Record<string, number>;

export async function measureGas(): Promise<GasReport> {
  const publicClient = await hre.viem.getPublicClient();
  const wallets = await hre.viem.getWalletClients();
  type Wallet = (typeof wallets)[number];
  const [governance, funder, payerWallet, providerWallet, stranger, treasury] = wallets as [Wallet, Wallet, Wallet, Wallet, Wallet, Wallet];
  const payer = account(2);
  const provider = account(3);
  const sessionKey = account(7);
  // The GasEscrow holds a settled provider's bond in this registry (HOLDER_ROLE), as deployed.
  const UNBONDING_DELAY = 30n * 24n * 3600n;
  const token = await hre.viem.deployContract("LaborGas", [governance.account.address]);
  const registry = await hre.viem.deployContract("ProviderRegistry", [governance.account.address, token.address, parseEther("100"), parseEther("1000"), UNBONDING_DELAY]);
  const escrow = await hre.viem.deployContract("GasEscrow", [governance.account.address, treasury.account.address, 0, registry.address]);
  await registry.write.grantRole([await registry.read.HOLDER_ROLE(), escrow.address], { account: governance.account });
  const domain = gasEscrowDomain({ chainId: await publicClient.getChainId(), verifyingContract: escrow.address });
  const report: GasReport = {};
  const gasOf = async (label: string, hash: Hash) => {
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`${label} reverted`);
    report[label] = Number(receipt.gasUsed);
    return receipt;
  };

  let nonce = 0n;
  const terms = (): ChannelTerms => ({
    payer: payer.address,
    provider: provider.address,
    funder: funder.account.address,
    asset: NATIVE_ASSET,
    termsHash: keccak256(stringToBytes("terms")),
    policyHash: keccak256(stringToBytes("policy")),
    challengeDuration: 3600n,
    nonce: ++nonce,
  });
  const open = async (label: string | undefined): Promise<{ ref: ChannelRef; sessionId: Hex }> => {
    const t = terms();
    const hash = await escrow.write.open([t, parseEther("1")], { account: funder.account, value: parseEther("1") });
    const receipt = label ? await gasOf(label, hash) : await publicClient.waitForTransactionReceipt({ hash });
    const ref = { terms: t, openedAt: receipt.blockNumber };
    return { ref, sessionId: sessionIdOf(domain, ref) };
  };
  const ticket = async (sessionId: Hex, ref: ChannelRef, seq: bigint, signer: LocalAccount = payer) => {
    const signed = await signPaymentTicket({
      account: signer,
      domain,
      ticket: { sessionId, provider: ref.terms.provider, termsHash: ref.terms.termsHash, seq, cumulativeAmount: parseEther("0.001") * seq, receiptRoot: keccak256(stringToBytes(`root ${seq}`)) },
    });
    return { seq, cumulativeAmount: signed.ticket.cumulativeAmount, receiptRoot: signed.ticket.receiptRoot, sig: toCompactSignature(signed.signature) };
  };

  // The provider registers first, as a provider serving channels does (its settled-bond hold word is created then).
  const h = (label: string) => keccak256(stringToBytes(label));
  await gasOf("registerProvider", await registry.write.registerProvider(["https://provider.example:8443/ioi", h("capabilities"), h("did:example:provider"), h("ml-dsa-44 public key")], { account: providerWallet.account }));

  // open, deposit, closeCooperative
  const a = await open("open");
  await gasOf("deposit", await escrow.write.deposit([a.ref.terms, a.ref.openedAt, parseEther("0.5"), parseEther("0.5")], { account: funder.account, value: parseEther("0.5") }));
  const summary: SettlementSummary = { sessionId: a.sessionId, provider: provider.address, payer: payer.address, termsHash: a.ref.terms.termsHash, finalSeq: 100n, finalAmount: parseEther("0.4"), finalReceiptRoot: keccak256(stringToBytes("root")), mode: "Cooperative" };
  const payerSig = toCompactSignature(await signSettlementSummary({ account: payer, domain, summary }));
  const providerSig = toCompactSignature(await signSettlementSummary({ account: provider, domain, summary }));
  await gasOf("closeCooperative", await escrow.write.closeCooperative([a.ref.terms, a.ref.openedAt, summary.finalSeq, summary.finalAmount, summary.finalReceiptRoot, payerSig, providerSig], { account: stranger.account }));
  // The same provider's next cooperative close within the hour asks the same hold: the registry writes nothing.
  const a2 = await open(undefined);
  const summary2: SettlementSummary = { ...summary, sessionId: a2.sessionId, termsHash: a2.ref.terms.termsHash };
  const sigs2 = [toCompactSignature(await signSettlementSummary({ account: payer, domain, summary: summary2 })), toCompactSignature(await signSettlementSummary({ account: provider, domain, summary: summary2 }))] as const;
  await gasOf("closeCooperative (the provider's next, within the hour)", await escrow.write.closeCooperative([a2.ref.terms, a2.ref.openedAt, summary2.finalSeq, summary2.finalAmount, summary2.finalReceiptRoot, ...sigs2], { account: stranger.account }));

  // closeUnilateral (stale ticket) → challenge (newer) → finalize
  const b = await open(undefined);
  const stale = await ticket(b.sessionId, b.ref, 10n);
  await gasOf("closeUnilateral", await escrow.write.closeUnilateral([b.ref.terms, b.ref.openedAt, stale], { account: payerWallet.account }));
  const recorded = { deposit: parseEther("1"), seq: stale.seq, amount: stale.cumulativeAmount, receiptRoot: stale.receiptRoot, feeBps: 0 };
  const newest = await ticket(b.sessionId, b.ref, 20n);
  await gasOf("challenge", await escrow.write.challenge([b.ref.terms, b.ref.openedAt, recorded, newest], { account: providerWallet.account }));
  const final = { ...recorded, seq: newest.seq, amount: newest.cumulativeAmount, receiptRoot: newest.receiptRoot };
  await hre.network.provider.send("evm_increaseTime", [3601]);
  await gasOf("finalize", await escrow.write.finalize([b.ref.terms, b.ref.openedAt, final], { account: stranger.account }));

  // variants: no-ticket close, session-key tickets, routing fee
  const c = await open(undefined);
  await gasOf("closeUnilateral (payer, no ticket)", await escrow.write.closeUnilateral([c.ref.terms, c.ref.openedAt, { seq: 0n, cumulativeAmount: 0n, receiptRoot: zeroHash, sig: { r: zeroHash, vs: zeroHash } }], { account: payerWallet.account }));
  // Session keys (decision 0025): the grant is signed off-chain and travels with the key's ticket.
  const d = await open(undefined);
  const grant = sessionKeyGrantArg(
    await signSessionKeyGrant({ account: payer, domain, sessionId: d.sessionId, key: sessionKey.address, expiry: 2_000_000_000n, spendCap: parseEther("1"), methods: ["tools/call"], epoch: 0n }),
    toCompactSignature,
  );
  const keyStale = await ticket(d.sessionId, d.ref, 5n, sessionKey);
  await gasOf("closeUnilateralWithKey (session-key ticket)", await escrow.write.closeUnilateralWithKey([d.ref.terms, d.ref.openedAt, keyStale, grant], { account: providerWallet.account }));
  const keyNewest = await ticket(d.sessionId, d.ref, 9n, sessionKey);
  const keyRecorded = { deposit: parseEther("1"), seq: keyStale.seq, amount: keyStale.cumulativeAmount, receiptRoot: keyStale.receiptRoot, feeBps: 0 };
  await gasOf("challengeWithKey (session-key ticket)", await escrow.write.challengeWithKey([d.ref.terms, d.ref.openedAt, keyRecorded, keyNewest, grant], { account: providerWallet.account }));
  await gasOf("revokeSessionKey", await escrow.write.revokeSessionKey([d.ref.terms, d.ref.openedAt, sessionKey.address], { account: payerWallet.account }));
  await gasOf("revokeAllSessionKeys", await escrow.write.revokeAllSessionKeys({ account: payerWallet.account }));
  // The payer anchors the provider's signed receipt commit on the closing channel (decision 0003).
  const commit = await signReceiptCommit(provider, domain, { sessionId: d.sessionId, leafCount: 4n, root: keccak256(stringToBytes("commit root")) });
  await gasOf("anchorReceiptCommit", await escrow.write.anchorReceiptCommit([d.ref.terms, d.ref.openedAt, 4n, commit.commit.root, toCompactSignature(commit.signature)], { account: payerWallet.account }));

  await gasOf("setRoutingFee", await escrow.write.setRoutingFee([100, treasury.account.address], { account: governance.account }));
  const e = await open(undefined);
  const eTicket = await ticket(e.sessionId, e.ref, 3n);
  await escrow.write.closeUnilateral([e.ref.terms, e.ref.openedAt, eTicket], { account: providerWallet.account });
  await hre.network.provider.send("evm_increaseTime", [3601]);
  await gasOf("finalize (routing fee 1%, first accrual)", await escrow.write.finalize([e.ref.terms, e.ref.openedAt, { deposit: parseEther("1"), seq: 3n, amount: eTicket.cumulativeAmount, receiptRoot: eTicket.receiptRoot, feeBps: 100 }], { account: stranger.account }));
  await gasOf("withdrawFees", await escrow.write.withdrawFees([NATIVE_ASSET], { account: stranger.account }));

  // Contract-wallet payers (decision 0035): an owner-key ERC-1271 wallet owned by the payer's key; the entry points
  // run in the escrow's wallet module (delegatecall from its fallback). Routing fee 1 % (set above).
  const ownerWallet = await hre.viem.deployContract("OwnerWallet", [payer.address]);
  const openForWallet = async () => {
    const t = { ...terms(), payer: ownerWallet.address };
    const receipt = await publicClient.waitForTransactionReceipt({ hash: await escrow.write.open([t, parseEther("1")], { account: funder.account, value: parseEther("1") }) });
    const ref = { terms: t, openedAt: receipt.blockNumber };
    return { ref, sessionId: sessionIdOf(domain, ref) };
  };
  const walletWrite = (functionName: "closeCooperativeByWallet" | "closeUnilateralByWallet" | "challengeByWallet" | "registerWalletSessionKey" | "closeUnilateralWithWalletKey", args: readonly unknown[]) =>
    providerWallet.writeContract({ address: escrow.address, abi: gasEscrowAbi, functionName, args: args as never, account: providerWallet.account });
  const walletTicket = async (sessionId: Hex, ref: ChannelRef, seq: bigint) => {
    const signed = await ticket(sessionId, ref, seq);
    const sig = await signPaymentTicket({ account: payer, domain, ticket: { sessionId, provider: ref.terms.provider, termsHash: ref.terms.termsHash, seq, cumulativeAmount: signed.cumulativeAmount, receiptRoot: signed.receiptRoot } });
    return { seq, cumulativeAmount: signed.cumulativeAmount, receiptRoot: signed.receiptRoot, sig: sig.signature };
  };
  const w1 = await openForWallet();
  const wSummary: SettlementSummary = { ...summary, sessionId: w1.sessionId, payer: ownerWallet.address, termsHash: w1.ref.terms.termsHash };
  await gasOf(
    "closeCooperativeByWallet (owner-key wallet)",
    await walletWrite("closeCooperativeByWallet", [w1.ref.terms, w1.ref.openedAt, wSummary.finalSeq, wSummary.finalAmount, wSummary.finalReceiptRoot, await signSettlementSummary({ account: payer, domain, summary: wSummary }), toCompactSignature(await signSettlementSummary({ account: provider, domain, summary: wSummary }))]),
  );
  const w2 = await openForWallet();
  const wStale = await walletTicket(w2.sessionId, w2.ref, 10n);
  await gasOf("closeUnilateralByWallet (owner-key wallet)", await walletWrite("closeUnilateralByWallet", [w2.ref.terms, w2.ref.openedAt, wStale]));
  const wRecorded = { deposit: parseEther("1"), seq: wStale.seq, amount: wStale.cumulativeAmount, receiptRoot: wStale.receiptRoot, feeBps: 100 };
  await gasOf("challengeByWallet (owner-key wallet)", await walletWrite("challengeByWallet", [w2.ref.terms, w2.ref.openedAt, wRecorded, await walletTicket(w2.sessionId, w2.ref, 20n)]));
  const w3 = await openForWallet();
  const wGrant = await signSessionKeyGrant({ account: payer, domain, sessionId: w3.sessionId, key: sessionKey.address, expiry: 2_000_000_000n, spendCap: parseEther("1"), methods: ["tools/call"], epoch: 0n });
  const wGrantArg = { ...sessionKeyGrantArg(wGrant, toCompactSignature), sig: wGrant.signature };
  await gasOf("registerWalletSessionKey (owner-key wallet)", await walletWrite("registerWalletSessionKey", [w3.ref.terms, w3.ref.openedAt, wGrantArg]));
  await gasOf("closeUnilateralWithWalletKey (registered grant)", await walletWrite("closeUnilateralWithWalletKey", [w3.ref.terms, w3.ref.openedAt, await ticket(w3.sessionId, w3.ref, 5n, sessionKey), wGrantArg]));

  // ProviderRegistry: bonds in LaborGas; the provider account registers, bonds, unbonds (30 days, the
  // minimum), is slashed; an arbitrator registers, stakes and is admitted (by governance, here an account).
  const PROVIDER = 0;
  const ARBITRATOR = 1;
  const UNBONDING_DAYS = 30;
  for (const member of [providerWallet, stranger]) {
    await token.write.mint([member.account.address, parseEther("10000")], { account: governance.account });
    await token.write.approve([registry.address, parseEther("10000")], { account: member.account });
  }
  await gasOf("bond", await registry.write.bond([PROVIDER, parseEther("500")], { account: providerWallet.account }));
  await gasOf("bond (top-up)", await registry.write.bond([PROVIDER, parseEther("100")], { account: providerWallet.account }));
  await gasOf("requestUnbond", await registry.write.requestUnbond([PROVIDER, parseEther("100")], { account: providerWallet.account }));
  // An hour more: the provider's cooperative closes hold its bond 30 days, rounded up to the hour.
  await hre.network.provider.send("evm_increaseTime", [UNBONDING_DAYS * 86_400 + 3_601]);
  await gasOf("withdraw", await registry.write.withdraw([PROVIDER], { account: providerWallet.account }));
  await gasOf("registerArbitrator", await registry.write.registerArbitrator([h("judge runtime"), h("did:example:arbitrator"), h("arbitrator ml-dsa key")], { account: stranger.account }));
  await gasOf("bond (arbitrator stake)", await registry.write.bond([ARBITRATOR, parseEther("1000")], { account: stranger.account }));
  await gasOf("admitArbitrator", await registry.write.admitArbitrator([stranger.account.address], { account: governance.account }));
  await registry.write.grantRole([await registry.read.SLASHER_ROLE(), governance.account.address], { account: governance.account });
  await gasOf("slash", await registry.write.slash([PROVIDER, providerWallet.account.address, parseEther("50"), funder.account.address, 2_000], { account: governance.account }));

  // GigEscrow on that registry: the funder is the client, the bonded provider accepts and delivers, a stranger
  // releases and refunds, governance stands in for the DisputeManager. Each kind of gig (ETH, LaborGas) is
  // funded once unmeasured first, so the figures are the steady state: the gig counter and the escrow's token
  // balance are already non-zero, as on a live deployment.
  const gigEscrow = await hre.viem.deployContract("GigEscrow", [governance.account.address, registry.address]);
  await gigEscrow.write.grantRole([await gigEscrow.read.DISPUTE_ROLE(), governance.account.address], { account: governance.account });
  // The GigEscrow locks the provider's bond while a gig is live.
  await registry.write.grantRole([await registry.read.LOCKER_ROLE(), gigEscrow.address], { account: governance.account });
  await token.write.mint([funder.account.address, parseEther("10000")], { account: governance.account });
  await token.write.approve([gigEscrow.address, parseEther("10000")], { account: funder.account });
  const DAY = 86_400;
  const WINDOW = 3_600;
  const fundGig = async (label: string | undefined, asset: Hex = NATIVE_ASSET): Promise<bigint> => {
    const deadline = Number((await publicClient.getBlock()).timestamp) + DAY;
    const amount = parseEther("1");
    const hash = await gigEscrow.write.fund([providerWallet.account.address, asset, amount, h("intent contract schema"), deadline, WINDOW], {
      account: funder.account,
      value: asset === NATIVE_ASSET ? amount : 0n,
    });
    const receipt = label ? await gasOf(label, hash) : await publicClient.waitForTransactionReceipt({ hash });
    const [funded] = parseEventLogs({ abi: gigEscrow.abi, eventName: "GigFunded", logs: receipt.logs });
    return funded!.args.gigId;
  };
  const acceptAndDeliver = async (gigId: bigint, labels: [string, string] | undefined) => {
    const accepted = await gigEscrow.write.accept([gigId], { account: providerWallet.account });
    if (labels) await gasOf(labels[0], accepted);
    const delivered = await gigEscrow.write.deliver([gigId, h("deliverable"), h("receipt root")], { account: providerWallet.account });
    if (labels) await gasOf(labels[1], delivered);
  };
  await fundGig(undefined);
  const g1 = await fundGig("gig fund (ETH)");
  await acceptAndDeliver(g1, ["gig accept", "gig deliver"]);
  await gasOf("gig acceptDelivery", await gigEscrow.write.acceptDelivery([g1], { account: funder.account }));
  const g2 = await fundGig(undefined);
  await acceptAndDeliver(g2, undefined);
  await hre.network.provider.send("evm_increaseTime", [WINDOW]);
  await gasOf("gig release", await gigEscrow.write.release([g2], { account: stranger.account }));
  const g3 = await fundGig(undefined);
  const g4 = await fundGig(undefined);
  await acceptAndDeliver(g4, undefined);
  await gasOf("gig freeze", await gigEscrow.write.freeze([g4], { account: governance.account }));
  await gasOf("gig resolve (split)", await gigEscrow.write.resolve([g4, parseEther("0.25")], { account: governance.account }));
  await hre.network.provider.send("evm_increaseTime", [DAY + 1]);
  await gasOf("gig refund", await gigEscrow.write.refund([g3], { account: stranger.account }));
  await fundGig(undefined, token.address);
  await fundGig("gig fund (ERC-20)", token.address);
  // Issue 14: a sponsored gig (the funder pays for a client; refunds go to the funder).
  await gasOf(
    "gig fundFor (ETH, sponsored)",
    await gigEscrow.write.fundFor([stranger.account.address, providerWallet.account.address, NATIVE_ASSET, parseEther("1"), h("intent contract schema"), Number((await publicClient.getBlock()).timestamp) + DAY, WINDOW], {
      account: funder.account,
      value: parseEther("1"),
    }),
  );

  // Issue 12: an open gig's tentative provider confirmed by the client, another dismissed.
  const fundOpenGig = async (): Promise<bigint> => {
    const deadline = Number((await publicClient.getBlock()).timestamp) + DAY;
    const receipt = await publicClient.waitForTransactionReceipt({
      hash: await gigEscrow.write.fund([NATIVE_ASSET, NATIVE_ASSET, parseEther("1"), h("intent contract schema"), deadline, WINDOW], { account: funder.account, value: parseEther("1") }),
    });
    return parseEventLogs({ abi: gigEscrow.abi, eventName: "GigFunded", logs: receipt.logs })[0]!.args.gigId;
  };
  const g5 = await fundOpenGig();
  await gasOf("gig accept (open gig, tentative)", await gigEscrow.write.accept([g5], { account: providerWallet.account }));
  await gasOf("gig confirmProvider", await gigEscrow.write.confirmProvider([g5], { account: funder.account }));
  const g6 = await fundOpenGig();
  await gigEscrow.write.accept([g6], { account: providerWallet.account });
  await gasOf("gig dismissProvider", await gigEscrow.write.dismissProvider([g6], { account: funder.account }));

  // Issue 12: an ERC-20 payout the token refuses is deferred to a claimable balance, then claimed.
  const blk = await hre.viem.deployContract("BlocklistToken");
  await blk.write.mint([funder.account.address, parseEther("10")]);
  await blk.write.approve([escrow.address, parseEther("10")], { account: funder.account });
  const blkTerms: ChannelTerms = { ...terms(), asset: blk.address };
  const blkOpened = await publicClient.waitForTransactionReceipt({ hash: await escrow.write.open([blkTerms, parseEther("1")], { account: funder.account }) });
  const blkRef = { terms: blkTerms, openedAt: blkOpened.blockNumber };
  const blkTicket = await ticket(sessionIdOf(domain, blkRef), blkRef, 3n);
  await escrow.write.closeUnilateral([blkRef.terms, blkRef.openedAt, blkTicket], { account: providerWallet.account });
  await blk.write.setBlocked([provider.address, true]);
  await hre.network.provider.send("evm_increaseTime", [3601]);
  const blkState = { deposit: parseEther("1"), seq: 3n, amount: blkTicket.cumulativeAmount, receiptRoot: blkTicket.receiptRoot, feeBps: 100 };
  await gasOf("finalize (ERC-20, provider's payout deferred)", await escrow.write.finalize([blkRef.terms, blkRef.openedAt, blkState], { account: stranger.account }));
  await blk.write.setBlocked([provider.address, false]);
  await gasOf("claim (ERC-20)", await escrow.write.claim([blk.address], { account: providerWallet.account }));
  Object.assign(report, await measureDisputeGas(hre));
  return report;
}

/** EIP-170's limit on a contract's deployed code. */
export const EIP170_LIMIT = 24_576;

/** The deployed code size in bytes of each contract and library the deployment uses, from the compiled artifacts. */
export async function codeSizes(): Promise<Record<string, number>> {
  const sizes: Record<string, number> = {};
  for (const name of ["DisputeManager", "DisputeRules", "Panels", "GasEscrow", "GigEscrow", "ProviderRegistry", "LaborGas", "BlockhashRandomness", "Timelock"]) {
    const artifact = await hre.artifacts.readArtifact(name);
    sizes[name] = (artifact.deployedBytecode.length - 2) / 2;
  }
  return sizes;
}

async function main(): Promise<void> {
  const report = await measureGas();
  const sizes = await codeSizes();
  const hardfork = hre.config.networks.hardhat.hardfork;
  const file = path.join(__dirname, "..", "gas-report.json");
  writeFileSync(file, `${JSON.stringify({ conditions: { hardfork, evmTarget: hre.config.solidity.compilers[0]!.settings.evmVersion, asset: "native ETH", payees: "existing accounts", provider: "registered", routingFeeBps: 0 }, gas: report, codeSize: sizes }, null, 2)}\n`);
  console.log(`Deployed code size (EIP-170 limit ${EIP170_LIMIT.toLocaleString("en-US")} bytes):`);
  for (const [name, size] of Object.entries(sizes)) console.log(`  ${name.padEnd(42)} ${size.toLocaleString("en-US").padStart(7)}  (${(EIP170_LIMIT - size).toLocaleString("en-US")} below the limit)`);
  console.log(`Gas used per transaction (hardfork ${hardfork} rules, contracts compiled for ${hre.config.solidity.compilers[0]!.settings.evmVersion}; 21,000 base included):`);
  for (const [op, gas] of Object.entries(report)) console.log(`  ${op.padEnd(42)} ${gas.toLocaleString("en-US")}`);
  console.log(`Wrote ${path.relative(process.cwd(), file)}`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}


