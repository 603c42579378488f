/**
 * The whole settlement system wired as `scripts/deploy.ts` wires it: LaborGas, GasEscrow, ProviderRegistry,
 * GigEscrow and a DisputeManager holding DISPUTE_ROLE on both escrows and SLASHER_ROLE on the registry.
 * A bonded provider and five bonded arbitrators (one pinned to another judge runtime) are registered.
 */
import hre from "hardhat";
import { getAddress, keccak256, parseEther, stringToBytes, zeroAddress, type Address, type Hex, type LocalAccount } from "viem";

import { judgeRuntimeHash } from "../../arbitration/runner";
import { toCompactSignature } from "../../channel-client/eip712";
import { hardhatAccount } from "./fixtures";

/** Hardhat account indices of the system fixture. */
export const SYS = {
  governance: 0,
  client: 1,
  payer: 2,
  provider: 3,
  stranger: 4,
  treasury: 5,
  watcher: 8,
  /** Registered, bonded arbitrators pinned to JUDGE_RUNTIME_HASH, in ascending address order after sorting. */
  arbitrators: [10, 11, 12, 13] as const,
  /** A bonded arbitrator pinned to another runtime. */
  otherRuntimeArbitrator: 14,
  /** A key that never registered. */
  unregistered: 15,
} as const;

/** This process's judge runtime, which the registered arbitrators pin and the DisputeManager requires. */
export const JUDGE_RUNTIME_HASH: Hex = judgeRuntimeHash();
export const MIN_PROVIDER_BOND = parseEther("100");
export const MIN_ARBITRATOR_STAKE = parseEther("50");
export const UNBONDING_DELAY = 14n * 24n * 3600n;
export const TOKEN_SUPPLY = parseEther("1000000");

/** `IDisputeManager.Params`. */
export type DisputeParams = {
  riskBps: number;
  burnBps: number;
  laneMultiplier: number;
  quorum: number;
  maxEscalations: number;
  decisionWindow: number;
  slowPathTimeout: number;
  bondFloor: bigint;
  judgeRuntimeHash: Hex;
};

/** Default dispute parameters of the tests. */
export const DISPUTE_PARAMS: Readonly<DisputeParams> = {
  riskBps: 1_000,
  burnBps: 2_000,
  laneMultiplier: 3,
  quorum: 3,
  maxEscalations: 2,
  decisionWindow: 24 * 3600,
  slowPathTimeout: 7 * 24 * 3600,
  bondFloor: parseEther("0.01"),
  judgeRuntimeHash: JUDGE_RUNTIME_HASH,
};

/** `IDisputeManager` enums as viem decodes them. */
export const KIND = { None: 0, Gig: 1, Session: 2 } as const;
export const STATUS = { None: 0, Open: 1, SlowPath: 2, Resolved: 3, Expired: 4 } as const;
export const VERDICT = { None: 0, ChallengerWins: 1, RespondentWins: 2, NoFault: 3, Undecidable: 4 } as const;
export const GIG_STATUS = { None: 0, Funded: 1, Accepted: 2, Delivered: 3, Disputed: 4, Released: 5, Refunded: 6 } as const;
export const PROVIDER_ROLE = 0;
export const ARBITRATOR_ROLE = 1;

const label = (s: string): Hex => keccak256(stringToBytes(s));

/** What arbitrators sign, as the contract's `Resolution` struct. */
export type ResolutionMessage = { caseId: Hex; verdict: number; refund: bigint; slash: bigint; resolutionHash: Hex };

/** Written out here rather than imported, so the tests check the arbitration package against the contract. */
const RESOLUTION_TYPES = {
  Resolution: [
    { name: "caseId", type: "bytes32" },
    { name: "verdict", type: "uint8" },
    { name: "refund", type: "uint128" },
    { name: "slash", type: "uint128" },
    { name: "resolutionHash", type: "bytes32" },
  ],
} as const;

type Domain = { name: string; version: string; chainId: bigint; verifyingContract: Address };

function signResolution(account: LocalAccount, domain: Domain, message: ResolutionMessage): Promise<Hex> {
  return account.signTypedData({ domain, types: RESOLUTION_TYPES, primaryType: "Resolution", message });
}

export async function systemFixture() {
  const publicClient = await hre.viem.getPublicClient();
  const wallets = await hre.viem.getWalletClients();
  const governance = wallets[SYS.governance]!;
  const gov = governance.account.address;
  const token = await hre.viem.deployContract("LaborGas", [gov]);
  const escrow = await hre.viem.deployContract("GasEscrow", [gov, wallets[SYS.treasury]!.account.address, 0]);
  const registry = await hre.viem.deployContract("ProviderRegistry", [
    gov,
    token.address,
    MIN_PROVIDER_BOND,
    MIN_ARBITRATOR_STAKE,
    UNBONDING_DELAY,
  ]);
  const gigs = await hre.viem.deployContract("GigEscrow", [gov, registry.address]);
  const disputes = await hre.viem.deployContract("DisputeManager", [
    gov,
    escrow.address,
    gigs.address,
    registry.address,
    DISPUTE_PARAMS,
  ]);
  await escrow.write.grantRole([await escrow.read.DISPUTE_ROLE(), disputes.address]);
  await gigs.write.grantRole([await gigs.read.DISPUTE_ROLE(), disputes.address]);
  await registry.write.grantRole([await registry.read.SLASHER_ROLE(), disputes.address]);

  // Everyone who bonds or pays in LaborGas holds some and approved every contract that pulls it.
  const holders = [SYS.client, SYS.payer, SYS.provider, SYS.stranger, ...SYS.arbitrators, SYS.otherRuntimeArbitrator];
  for (const index of holders) {
    const wallet = wallets[index]!;
    await token.write.mint([wallet.account.address, TOKEN_SUPPLY]);
    for (const spender of [escrow.address, registry.address, gigs.address, disputes.address]) {
      await token.write.approve([spender, TOKEN_SUPPLY], { account: wallet.account });
    }
  }
  const provider = wallets[SYS.provider]!;
  await registry.write.registerProvider(
    ["https://provider.example/ioi", label("caps"), label("did:provider"), label("mldsa:provider")],
    { account: provider.account },
  );
  await registry.write.bond([PROVIDER_ROLE, MIN_PROVIDER_BOND * 5n], { account: provider.account });
  for (const index of [...SYS.arbitrators, SYS.otherRuntimeArbitrator]) {
    const wallet = wallets[index]!;
    const runtime = index === SYS.otherRuntimeArbitrator ? label("another judge runtime") : JUDGE_RUNTIME_HASH;
    await registry.write.registerArbitrator([runtime, label(`did:arb:${index}`), label(`mldsa:arb:${index}`)], {
      account: wallet.account,
    });
    await registry.write.bond([ARBITRATOR_ROLE, MIN_ARBITRATOR_STAKE], { account: wallet.account });
  }
  const chainId = BigInt(await publicClient.getChainId());
  return {
    publicClient,
    wallets,
    governance,
    token,
    escrow,
    registry,
    gigs,
    disputes,
    chainId,
    domain: { name: "IOI DisputeManager", version: "1", chainId, verifyingContract: getAddress(disputes.address) } as Domain,
    client: wallets[SYS.client]!,
    payerWallet: wallets[SYS.payer]!,
    provider,
    stranger: wallets[SYS.stranger]!,
    watcher: wallets[SYS.watcher]!,
  };
}

export type System = Awaited<ReturnType<typeof systemFixture>>;

/** The pinned arbitrators' signing keys, sorted by address as `resolve` requires. */
export function arbitratorKeys(indices: readonly number[] = SYS.arbitrators): LocalAccount[] {
  return indices.map(hardhatAccount).sort((a, b) => (BigInt(a.address) < BigInt(b.address) ? -1 : 1));
}

/** Signatures of `signers` (in the order given) over `message`, in the contract's compact form. */
export async function quorumSignatures(
  s: Pick<System, "domain">,
  message: ResolutionMessage,
  signers: readonly LocalAccount[] = arbitratorKeys().slice(0, 3),
): Promise<{ r: Hex; vs: Hex }[]> {
  const signatures: { r: Hex; vs: Hex }[] = [];
  for (const signer of signers) signatures.push(toCompactSignature(await signResolution(signer, s.domain, message)));
  return signatures;
}

/** The balance of `who` in `asset` (zero address: ETH). */
export function balanceOf(s: System, asset: Address, who: Address): Promise<bigint> {
  return asset === zeroAddress ? s.publicClient.getBalance({ address: who }) : s.token.read.balanceOf([who]);
}
