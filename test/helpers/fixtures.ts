/**
 * Named fixtures shared by the contract and client tests (loaded with `loadFixture`, so each test starts
 * from the same snapshot), and helpers to build terms and signatures.
 */
import { expect } from "chai";
import hre from "hardhat";
import type { ContractTypesMap } from "hardhat/types/artifacts";
import { getAddress, parseEther, zeroAddress, zeroHash, keccak256, stringToBytes, type Account, type Address, type Hex, type LocalAccount, type PublicClient } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { closeCooperative } from "../../channel-client/chain/escrow";
import { gasEscrowDomain, type GasEscrowDomain } from "../../channel-client/core/eip712";
import { signSettlementSummary, type SettlementSummary } from "../../channel-client/core/summary";
import type { ChannelRef, ChannelTerms } from "../../channel-client/core/terms";

/** The mnemonic Hardhat funds its default accounts from; gives local (signing) accounts for them. */
export const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";

const accounts = new Map<number, LocalAccount>();

/** Hardhat's account `index` as a local signer (memoised: deriving from the mnemonic is slow). */
export function hardhatAccount(index: number): LocalAccount {
  let account = accounts.get(index);
  if (!account) {
    account = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index });
    accounts.set(index, account);
  }
  return account;
}

/** Roles by Hardhat account index. */
export const ROLE = { deployer: 0, funder: 1, payer: 2, provider: 3, stranger: 4, treasury: 5, disputes: 6, sessionKey: 7 } as const;

export const TOKEN_SUPPLY = parseEther("1000000");

export async function escrowFixture() {
  const publicClient = await hre.viem.getPublicClient();
  const wallets = await hre.viem.getWalletClients();
  const deployer = wallets[ROLE.deployer]!;
  const governance = deployer.account.address;
  const treasury = wallets[ROLE.treasury]!.account.address;
  const token = await hre.viem.deployContract("LaborGas", [deployer.account.address]);
  // The registry whose provider bonds answer for cooperatively settled sessions (the escrow holds HOLDER_ROLE).
  const registry = await hre.viem.deployContract("ProviderRegistry", [governance, token.address, parseEther("100"), parseEther("250"), 30n * 24n * 3600n]);
  // Routing fee 0 by default so balance tests read plainly; fee behaviour has its own fixture.
  const escrowArgs = [governance, treasury, 0, registry.address] as const;
  const escrow = await hre.viem.deployContract("GasEscrow", [...escrowArgs]);
  await registry.write.grantRole([await registry.read.HOLDER_ROLE(), escrow.address], { account: deployer.account });
  // Stands in for the DisputeManager: may freeze and release closing sessions.
  const disputes = wallets[ROLE.disputes]!;
  await escrow.write.grantRole([await escrow.read.DISPUTE_ROLE(), disputes.account.address], { account: deployer.account });
  const funder = wallets[ROLE.funder]!;
  await token.write.mint([funder.account.address, TOKEN_SUPPLY]);
  await token.write.approve([escrow.address, TOKEN_SUPPLY], { account: funder.account });
  const chainId = await publicClient.getChainId();
  const domain: GasEscrowDomain = gasEscrowDomain({ chainId, verifyingContract: getAddress(escrow.address) });
  return {
    publicClient,
    wallets,
    escrow,
    escrowArgs,
    registry,
    governance: deployer,
    disputes,
    treasury: wallets[ROLE.treasury]!,
    token,
    domain,
    funder,
    payer: hardhatAccount(ROLE.payer),
    provider: hardhatAccount(ROLE.provider),
    stranger: wallets[ROLE.stranger]!,
  };
}

/**
 * A stranger submits the parties' cooperative close of a native-asset channel of `escrowFixture`'s escrow; checks
 * that the provider received exactly `paid`, the funder the rest of `deposit`, and that the escrow paid out exactly
 * `deposit`. Returns what `closeCooperative` returned.
 */
export async function closeCooperativelyExact(
  fx: Pick<Awaited<ReturnType<typeof escrowFixture>>, "escrow" | "funder" | "provider" | "stranger"> & { publicClient: Parameters<typeof closeCooperative>[0]["publicClient"] },
  close: Pick<Parameters<typeof closeCooperative>[0], "ref" | "summary" | "payerSignature" | "providerSignature">,
  paid: bigint,
  deposit: bigint,
) {
  const balances = async () => ({
    provider: await fx.publicClient.getBalance({ address: fx.provider.address }),
    funder: await fx.publicClient.getBalance({ address: fx.funder.account.address }),
    escrow: await fx.publicClient.getBalance({ address: fx.escrow.address }),
  });
  const before = await balances();
  const settled = await closeCooperative({ wallet: fx.stranger, publicClient: fx.publicClient, escrow: fx.escrow.address, ...close });
  const after = await balances();
  expect(after.provider - before.provider, "the provider's balance").to.equal(paid);
  expect(after.funder - before.funder, "the funder's balance").to.equal(deposit - paid);
  expect(before.escrow - after.escrow, "the escrow paid out exactly the deposit").to.equal(deposit);
  return settled;
}

export const TERMS_HASH: Hex = keccak256(stringToBytes("terms: 1000 wei per invocation"));
export const POLICY_HASH: Hex = keccak256(stringToBytes("policy: allow all"));

export function makeTerms(asset: Address = zeroAddress, overrides: Partial<ChannelTerms> = {}): ChannelTerms {
  return {
    payer: hardhatAccount(ROLE.payer).address,
    provider: hardhatAccount(ROLE.provider).address,
    funder: hardhatAccount(ROLE.funder).address,
    asset,
    termsHash: TERMS_HASH,
    policyHash: POLICY_HASH,
    challengeDuration: 3600n,
    nonce: 1n,
    ...overrides,
  };
}

/** A cooperative summary for `ref` signed by both parties (or by the given substitutes). */
export async function signedCooperativeSummary(parameters: {
  domain: GasEscrowDomain;
  sessionId: Hex;
  ref: ChannelRef;
  finalSeq: bigint;
  finalAmount: bigint;
  finalReceiptRoot?: Hex;
  payer?: LocalAccount;
  provider?: LocalAccount;
}) {
  const { domain, sessionId, ref, finalSeq, finalAmount, finalReceiptRoot = zeroHash } = parameters;
  const summary: SettlementSummary = {
    sessionId,
    provider: ref.terms.provider,
    payer: ref.terms.payer,
    termsHash: ref.terms.termsHash,
    finalSeq,
    finalAmount,
    finalReceiptRoot,
    mode: "Cooperative",
  };
  const payerSignature = await signSettlementSummary({
    account: parameters.payer ?? hardhatAccount(ROLE.payer),
    domain,
    summary,
  });
  const providerSignature = await signSettlementSummary({
    account: parameters.provider ?? hardhatAccount(ROLE.provider),
    domain,
    summary,
  });
  return { summary, payerSignature, providerSignature };
}

/*//////////////////////////////////////////////////////////////
                             GIG ESCROW
//////////////////////////////////////////////////////////////*/

/** Hardhat account indices of the gig fixture. `disputes` stands in for the DisputeManager. */
export const GIG_ROLE = { governance: 0, client: 1, provider: 3, stranger: 4, relayer: 5, disputes: 6, otherProvider: 7, idleProvider: 8 } as const;

/** The registry's minimum provider bond in the gig fixture; both active providers bond exactly this. */
export const GIG_MIN_PROVIDER_BOND = parseEther("100");

/** `IProviderRegistry.Role.Provider`. */
export const PROVIDER_ROLE_ID = 0;

/** The registry's unbonding delay in the gig fixture: its shortest allowed value (`MIN_UNBONDING_DELAY`, 30 days). */
export const GIG_UNBONDING_DELAY = 30n * 24n * 3600n;

/** Registers `wallet` as a provider in `registry` with a label-derived identity (no bond yet). */
export async function registerProvider(
  registry: ContractTypesMap["ProviderRegistry"],
  wallet: { account: Account },
  label: string,
): Promise<void> {
  const h = (s: string) => keccak256(stringToBytes(s));
  await registry.write.registerProvider(
    [`https://${label}.example:8443/ioi`, h(`capabilities:${label}`), h(`did:ioi:${label}`), h(`ml-dsa-44:${label}`)],
    { account: wallet.account },
  );
}

/**
 * A GigEscrow on a ProviderRegistry that bonds LaborGas. `provider` and `otherProvider` are registered and
 * bonded (active); `idleProvider` is registered but unbonded (not active); `stranger` is not registered.
 * The client holds LaborGas and approved the gig escrow; `disputes` holds DISPUTE_ROLE.
 */
export async function gigFixture() {
  const publicClient = await hre.viem.getPublicClient();
  const wallets = await hre.viem.getWalletClients();
  const governance = wallets[GIG_ROLE.governance]!;
  const token = await hre.viem.deployContract("LaborGas", [governance.account.address]);
  const registry = await hre.viem.deployContract("ProviderRegistry", [
    governance.account.address,
    token.address,
    GIG_MIN_PROVIDER_BOND,
    parseEther("250"),
    GIG_UNBONDING_DELAY,
  ]);
  const gig = await hre.viem.deployContract("GigEscrow", [governance.account.address, registry.address]);
  const disputes = wallets[GIG_ROLE.disputes]!;
  await gig.write.grantRole([await gig.read.DISPUTE_ROLE(), disputes.account.address], { account: governance.account });
  // The escrow locks its provider's bond from accept until the gig settles (as deployed: scripts/deploy.ts).
  await registry.write.grantRole([await registry.read.LOCKER_ROLE(), gig.address], { account: governance.account });

  const provider = wallets[GIG_ROLE.provider]!;
  const otherProvider = wallets[GIG_ROLE.otherProvider]!;
  const idleProvider = wallets[GIG_ROLE.idleProvider]!;
  for (const [wallet, label, bonded] of [
    [provider, "provider", true],
    [otherProvider, "other-provider", true],
    [idleProvider, "idle-provider", false],
  ] as const) {
    await token.write.mint([wallet.account.address, GIG_MIN_PROVIDER_BOND]);
    await token.write.approve([registry.address, GIG_MIN_PROVIDER_BOND], { account: wallet.account });
    await registerProvider(registry, wallet, label);
    if (bonded) await registry.write.bond([PROVIDER_ROLE_ID, GIG_MIN_PROVIDER_BOND], { account: wallet.account });
  }

  const client = wallets[GIG_ROLE.client]!;
  await token.write.mint([client.account.address, TOKEN_SUPPLY]);
  await token.write.approve([gig.address, TOKEN_SUPPLY], { account: client.account });
  return {
    publicClient,
    wallets,
    governance,
    disputes,
    token,
    registry,
    gig,
    client,
    provider,
    otherProvider,
    idleProvider,
    stranger: wallets[GIG_ROLE.stranger]!,
    relayer: wallets[GIG_ROLE.relayer]!,
  };
}

/** Wei `from` paid in gas for the transactions it sent in blocks `fromBlock..toBlock`. */
export async function gasPaidBy(publicClient: PublicClient, from: Address, fromBlock: bigint, toBlock: bigint): Promise<bigint> {
  let total = 0n;
  for (let n = fromBlock; n <= toBlock; n++) {
    const block = await publicClient.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) {
      if (tx.from.toLowerCase() !== from.toLowerCase()) continue;
      const receipt = await publicClient.getTransactionReceipt({ hash: tx.hash });
      total += receipt.gasUsed * receipt.effectiveGasPrice;
    }
  }
  return total;
}
