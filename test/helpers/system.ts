/**
 * The whole settlement system wired as `scripts/deploy.ts` wires it (but governed by an account rather than the
 * timelock, so tests can act as governance directly): LaborGas, GasEscrow, ProviderRegistry, GigEscrow, a
 * BlockhashRandomness and a DisputeManager (linked to its Panels and DisputeRules libraries) holding
 * DISPUTE_ROLE on both escrows and SLASHER_ROLE and LOCKER_ROLE on the registry; the GigEscrow holds
 * LOCKER_ROLE too, and the GasEscrow HOLDER_ROLE (settled sessions hold the provider's bond). A bonded provider
 * and eleven bonded arbitrators are registered: ten admitted and pinned to
 * this runtime, one admitted but pinned to another runtime; ETH and LaborGas have dispute terms.
 */
import hre from "hardhat";
import { getAddress, keccak256, parseEther, stringToBytes, zeroAddress, type Address, type Hex, type LocalAccount } from "viem";

import { judgeRuntimeHash } from "../../arbitration/runner/runner";
import { toCompactSignature } from "../../channel-client/core/eip712";
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
  /** Admitted, bonded arbitrators pinned to JUDGE_RUNTIME_HASH (enough for a 3-member panel and a 5-member
   * appeal panel that excludes the first). */
  arbitrators: [10, 11, 12, 13, 20, 21, 22, 23, 24, 25] as const,
  /** A bonded arbitrator pinned to another runtime. */
  otherRuntimeArbitrator: 14,
  /** A key that never registered. */
  unregistered: 15,
} as const;

/** This process's judge runtime, which the registered arbitrators pin and the DisputeManager requires. */
export const JUDGE_RUNTIME_HASH: Hex = judgeRuntimeHash();
export const MIN_PROVIDER_BOND = parseEther("100");
export const MIN_ARBITRATOR_STAKE = parseEther("50");
/** What each test arbitrator stakes: enough that two signers of a 3-member panel put more at risk (half their
 * stake) than a 2 ETH case moves at ETH_STAKE_RATE plus the largest slash. */
export const ARBITRATOR_STAKE = parseEther("5000");
export const UNBONDING_DELAY = 30n * 24n * 3600n;
/** Bond-token units per 10^18 units of ETH (1 ETH counts as 1,000 LaborGas) and of LaborGas (1:1). */
export const ETH_STAKE_RATE = parseEther("1000");
export const TOKEN_STAKE_RATE = parseEther("1");
export const TOKEN_SUPPLY = parseEther("1000000");

/** `IDisputeManager.Params`. */
export type DisputeParams = {
  riskBps: number;
  burnBps: number;
  feeBps: number;
  laneMultiplier: number;
  panelSize: number;
  maxAppeals: number;
  overturnSlashBps: number;
  absentSlashBps: number;
  slashCapBps: number;
  respondWindow: number;
  decisionWindow: number;
  appealWindow: number;
  slowPathTimeout: number;
  settledDisputeWindow: number;
  judgeRuntimeHash: Hex;
};

/** Default dispute parameters of the tests. */
export const DISPUTE_PARAMS: Readonly<DisputeParams> = {
  riskBps: 1_000,
  burnBps: 2_000,
  feeBps: 1_000,
  laneMultiplier: 3,
  panelSize: 3,
  maxAppeals: 2,
  overturnSlashBps: 5_000,
  absentSlashBps: 100,
  slashCapBps: 20_000,
  respondWindow: 3600,
  decisionWindow: 24 * 3600,
  appealWindow: 24 * 3600,
  slowPathTimeout: 7 * 24 * 3600,
  settledDisputeWindow: 3 * 24 * 3600,
  judgeRuntimeHash: JUDGE_RUNTIME_HASH,
};

/** Dispute terms of each asset in the tests: a floor in the asset's own units and its stake rate. */
export const ETH_TERMS = { bondFloor: parseEther("0.01"), stakeRate: ETH_STAKE_RATE } as const;
export const TOKEN_TERMS = { bondFloor: parseEther("0.01"), stakeRate: TOKEN_STAKE_RATE } as const;

/** `IDisputeManager` enums as viem decodes them. */
export const KIND = { None: 0, Gig: 1, Session: 2 } as const;
export const STATUS = { None: 0, Open: 1, Deliberating: 2, Decided: 3, SlowPath: 4, Resolved: 5, Expired: 6 } as const;
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
  return deploySystem({ seal: true });
}

/**
 * The same system with its wiring roles left unsealed, for the few tests whose setup needs governance to hold a
 * wiring role itself (a test slasher, a test resolver); every deployment seals them (decision 0014).
 */
export async function unsealedSystemFixture() {
  return deploySystem({ seal: false });
}

async function deploySystem(options: { seal: boolean }) {
  const publicClient = await hre.viem.getPublicClient();
  const wallets = await hre.viem.getWalletClients();
  const governance = wallets[SYS.governance]!;
  const gov = governance.account.address;
  const token = await hre.viem.deployContract("LaborGas", [gov]);
  const registry = await hre.viem.deployContract("ProviderRegistry", [
    gov,
    token.address,
    MIN_PROVIDER_BOND,
    MIN_ARBITRATOR_STAKE,
    UNBONDING_DELAY,
  ]);
  const escrow = await hre.viem.deployContract("GasEscrow", [gov, wallets[SYS.treasury]!.account.address, 0, registry.address]);
  const gigs = await hre.viem.deployContract("GigEscrow", [gov, registry.address]);
  const randomness = await hre.viem.deployContract("BlockhashRandomness", [1n]);
  const disputes = await deployDisputeManager([gov, escrow.address, gigs.address, registry.address, randomness.address, DISPUTE_PARAMS]);
  await escrow.write.grantRole([await escrow.read.DISPUTE_ROLE(), disputes.address]);
  await gigs.write.grantRole([await gigs.read.DISPUTE_ROLE(), disputes.address]);
  await registry.write.grantRole([await registry.read.SLASHER_ROLE(), disputes.address]);
  await registry.write.grantRole([await registry.read.LOCKER_ROLE(), disputes.address]);
  await registry.write.grantRole([await registry.read.LOCKER_ROLE(), gigs.address]);
  await registry.write.grantRole([await registry.read.HOLDER_ROLE(), escrow.address]);
  await escrow.write.setDisputeTermsSource([disputes.address]);
  await gigs.write.setDisputeTermsSource([disputes.address]);
  // The wiring is sealed, as on every deployment: no governance key can grant itself these powers later.
  if (options.seal) {
    await escrow.write.sealRoles();
    await gigs.write.sealRoles();
    await registry.write.sealRoles();
  }
  await disputes.write.setAssetTerms([zeroAddress, ETH_TERMS]);
  await disputes.write.setAssetTerms([token.address, TOKEN_TERMS]);

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
    await registry.write.bond([ARBITRATOR_ROLE, ARBITRATOR_STAKE], { account: wallet.account });
    await registry.write.admitArbitrator([wallet.account.address]);
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
    randomness,
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

export type System = Awaited<ReturnType<typeof deploySystem>>;

/** Deploys the DisputeManager with its two external libraries linked, as `scripts/deploy.ts` does. */
export async function deployDisputeManager(args: readonly [Address, Address, Address, Address, Address, DisputeParams]) {
  const panels = await hre.viem.deployContract("Panels");
  const rules = await hre.viem.deployContract("DisputeRules");
  return hre.viem.deployContract("DisputeManager", [...args], {
    libraries: { Panels: panels.address, DisputeRules: rules.address },
  });
}

/** Hardhat account indices by address, for finding a drawn panel's signing keys. */
const KEY_BY_ADDRESS = new Map<string, LocalAccount>(
  Array.from({ length: 40 }, (_, i) => hardhatAccount(i)).map((a) => [getAddress(a.address), a]),
);

/** The signing key of a Hardhat account by its address. */
export function keyOf(address: Address): LocalAccount {
  const key = KEY_BY_ADDRESS.get(getAddress(address));
  if (!key) throw new Error(`${address} is not one of the 40 Hardhat accounts.`);
  return key;
}

/**
 * Draws the panel of the case's current round: requests randomness if the case has none pending (which needs the
 * respond window over or the case contested), mines past the target block and draws. Returns the panel's keys in
 * ascending address order (as `submitVerdict` wants its signatures).
 */
export async function drawPanel(s: Pick<System, "disputes" | "publicClient">, caseId: Hex): Promise<LocalAccount[]> {
  const c = await s.disputes.read.caseOf([caseId]);
  const round = await s.disputes.read.roundOf([caseId, c.round]);
  if (round.drawTicket === 0n) await s.disputes.write.drawPanel([caseId]);
  await hre.network.provider.send("hardhat_mine", ["0x2"]);
  await s.disputes.write.drawPanel([caseId]);
  const panel = await s.disputes.read.panelOf([caseId, c.round]);
  if (panel.length === 0) throw new Error(`No panel was drawn for case ${caseId}.`);
  return panel.map((a) => keyOf(a)).sort((a, b) => (BigInt(a.address) < BigInt(b.address) ? -1 : 1));
}

/** A supermajority (two thirds, rounded up) of a panel of `size`, as the contract counts it. */
export const supermajority = (size: number): number => Math.floor((2 * size + 2) / 3);

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
