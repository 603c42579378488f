/**
 * Deploys LaborGas, GasEscrow, ProviderRegistry, GigEscrow, a BlockhashRandomness, the Panels and DisputeRules
 * libraries, the linked DisputeManager and a Timelock (OpenZeppelin's TimelockController); wires the roles;
 * hands governance to the timelock; and records everything in `deployments/chain-<chainId>.json` (and
 * `deployments/<network>.json` for a named network such as localhost).
 *
 *   npx hardhat run scripts/deploy.ts --network localhost             # the devnet from `npm run devnet`
 *   IOI_RPC_URL=https://… IOI_DEPLOYER_KEY=0x… npx hardhat run scripts/deploy.ts --network remote
 *
 * The second form deploys to any EVM chain. Clients (`ioi`) pick the record by the chain id their RPC reports.
 *
 * A new chain is usable at once (decision 0019, amendment): the timelock is created with no delay, the
 * deployment runs the DisputeManager's asset terms through it (an asset's first terms apply at once) and, in the
 * same batch, sets the real delay; IOI_INITIAL_ARBITRATORS=addr,addr are admitted by the deployer while it still
 * holds the registry's GOVERNANCE_ROLE — each must be registered, staked and pinned to this judge runtime, else
 * none is admitted, the script names which are not and fails before the hand-over (IOI_INITIAL_ARBITRATORS_WAIT
 * seconds, default 0, polls for them first: on a public chain they register once the registry address is printed).
 * IOI_DEVNET_ARBITRATORS=1 (set by `npm run devnet`) registers and stakes Hardhat accounts 20..35 and admits them
 * (IOI_DEVNET_ARBITRATOR_COUNT=N: only the first N of them), on chain 31337 or on the second test devnet, 31338.
 *
 * Governance. The Timelock waits IOI_TIMELOCK_DELAY seconds (default 2 days, at least 1 day; 60 s on chain 31337) between
 * scheduling a call and executing it; IOI_GOVERNANCE (default: the deployer) is its only proposer and executor
 * and nobody administers it but itself. The deployer grants the wiring roles — DISPUTE_ROLE on both escrows to
 * the DisputeManager, SLASHER_ROLE and LOCKER_ROLE on the registry to the DisputeManager, LOCKER_ROLE to the
 * GigEscrow, HOLDER_ROLE on the registry to the GasEscrow — sets the DisputeManager's asset terms, hands DEFAULT_ADMIN_ROLE of both escrows and the registry
 * and GOVERNANCE_ROLE of the GasEscrow and the registry (the GigEscrow has none) to the timelock and renounces its own. The DisputeManager's immutable governance is
 * the timelock. Every later governance call (admitting an arbitrator, new parameters) goes through
 * `scripts/timelock.ts`: schedule, wait out the delay, execute.
 *
 * Other settings: IOI_TREASURY (default: governance) and IOI_ROUTING_FEE_BPS (default 0, at most 1000) of the
 * escrow; IOI_MIN_PROVIDER_BOND and IOI_MIN_ARBITRATOR_STAKE (whole LaborGas, default 100 and 1000);
 * IOI_RANDOMNESS_DELAY_BLOCKS (default 1 on chain 31337, 3 elsewhere); IOI_DISPUTE_RISK_BPS, _BURN_BPS,
 * _FEE_BPS, _LANE_MULTIPLIER, _PANEL_SIZE, _MAX_APPEALS, _OVERTURN_SLASH_BPS, _ABSENT_SLASH_BPS,
 * _SLASH_CAP_BPS, _RESPOND_WINDOW, _DECISION_WINDOW, _APPEAL_WINDOW, _SLOW_PATH_TIMEOUT (seconds) and
 * IOI_JUDGE_RUNTIME_HASH the DisputeManager's parameters; IOI_ETH_BOND_FLOOR (ETH, default 0.001),
 * IOI_ETH_STAKE_RATE (LaborGas per ETH, default 1000), IOI_LGAS_BOND_FLOOR (LaborGas, default 1) and
 * IOI_LGAS_STAKE_RATE (LaborGas per LaborGas, default 1) its asset terms.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { encodeFunctionData, getAddress, isAddress, isHex, parseEther, zeroAddress, type Abi, type Address, type Hash, type Hex } from "viem";

import { judgeRuntimeHash } from "../arbitration/runner/runner";

export type DeployedContract = {
  address: Address;
  transactionHash: Hash;
  blockNumber: string;
  gasUsed: string;
  /** The constructor's arguments (whole numbers as decimal strings), for `scripts/verify.ts`. */
  constructorArgs?: unknown[];
};

/** Names of the deployed contracts, as the deployment record keys them. */
export type ContractName =
  | "LaborGas"
  | "GasEscrow"
  | "ProviderRegistry"
  | "GigEscrow"
  | "BlockhashRandomness"
  | "Panels"
  | "DisputeRules"
  | "DisputeManager"
  | "Timelock";

export type Deployment = {
  network: string;
  chainId: number;
  deployer: Address;
  /** The timelock's proposer and executor: who acts as governance, through the timelock. */
  governance: Address;
  /** The address holding every governance role: the Timelock. */
  timelock: Address;
  /** Seconds between scheduling and executing a governance call. */
  timelockDelay: number;
  /** Blocks between requesting a panel draw and the block whose hash seeds it. */
  randomnessDelayBlocks: number;
  treasury: Address;
  routingFeeBps: number;
  deployedAt: string;
  contracts: Record<ContractName, DeployedContract>;
  /** The DisputeManager's parameters (windows in seconds). */
  disputeParams: Record<string, string | number>;
  /** Arbitrators admitted by the deployment itself, before governance passed to the timelock. */
  initialArbitrators: Address[];
  /** The DisputeManager's asset terms: bond floor in the asset's base units, stake rate in LaborGas base units per 10^18 asset units. */
  assetTerms: Record<string, { asset: Address; bondFloor: string; stakeRate: string }>;
};

const DAY = 24 * 3600;
const DEVNET_CHAIN_ID = 31337;

export type DeployOptions = {
  /** Arbitrators to admit before the hand-over (default: $IOI_INITIAL_ARBITRATORS, comma-separated). */
  initialArbitrators?: Address[];
  /** Runs after the wiring, before the initial arbitrators are checked (the devnet registers and stakes them here). */
  beforeAdmission?: (contracts: Pick<Record<ContractName, DeployedContract>, "LaborGas" | "ProviderRegistry">) => Promise<void>;
  /** How long to wait for the initial arbitrators to register and stake (default: $IOI_INITIAL_ARBITRATORS_WAIT, 0). */
  arbitratorWaitSeconds?: number;
};

/** Deploys every contract with the network's first account and returns the record (not yet written). */
export async function deployAll(hre: HardhatRuntimeEnvironment, options: DeployOptions = {}): Promise<Deployment> {
  const publicClient = await hre.viem.getPublicClient(receiptPolling());
  const [deployer] = await hre.viem.getWalletClients();
  if (!deployer) throw new Error(`No deployer account on network "${hre.network.name}"; set IOI_DEPLOYER_KEY.`);
  const chainId = await publicClient.getChainId();
  const devnet = chainId === DEVNET_CHAIN_ID;
  const me = getAddress(deployer.account.address);
  // A deployer without ETH would fail at the first creation with the node's raw error and the bytecode; say it once.
  if ((await publicClient.getBalance({ address: me })) === 0n) {
    throw new Error(`The deployer ${me} holds no ETH on chain ${chainId}; fund it before deploying (every contract creation pays gas).`);
  }

  async function deploy(name: ContractName, args: unknown[], libraries: Partial<Record<ContractName, DeployedContract>> = {}): Promise<DeployedContract> {
    const artifact = await hre.artifacts.readArtifact(name);
    const bytecode = linkBytecode(name, artifact.bytecode as Hex, artifact.linkReferences, libraries);
    const hash = await deployer!.deployContract({ abi: artifact.abi as Abi, bytecode, args });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success" || !receipt.contractAddress) {
      throw new Error(`Deploying ${name} failed in transaction ${hash}.`);
    }
    return {
      address: getAddress(receipt.contractAddress),
      transactionHash: receipt.transactionHash,
      blockNumber: receipt.blockNumber.toString(),
      gasUsed: receipt.gasUsed.toString(),
      constructorArgs: JSON.parse(JSON.stringify(args, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v))) as unknown[],
    };
  }
  async function call(name: ContractName, address: Address, functionName: string, args: unknown[]): Promise<void> {
    const artifact = await hre.artifacts.readArtifact(name);
    const hash = await deployer!.writeContract({ address, abi: artifact.abi as Abi, functionName, args, chain: deployer!.chain, account: deployer!.account });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`${name}.${functionName} failed in transaction ${hash}.`);
  }
  async function role(name: ContractName, address: Address, roleName: string): Promise<Hex> {
    const artifact = await hre.artifacts.readArtifact(name);
    return (await publicClient.readContract({ address, abi: artifact.abi as Abi, functionName: roleName })) as Hex;
  }

  const governance = envAddress("IOI_GOVERNANCE", me);
  const treasury = envAddress("IOI_TREASURY", governance);
  const routingFeeBps = envInt("IOI_ROUTING_FEE_BPS", 0, 0, 1_000);
  // Off the devnet a governance call must stay public for at least a day before it can act on escrowed money.
  const timelockDelay = envInt("IOI_TIMELOCK_DELAY", devnet ? 60 : 2 * DAY, devnet ? 0 : DAY, 30 * DAY);
  const randomnessDelayBlocks = envInt("IOI_RANDOMNESS_DELAY_BLOCKS", devnet ? 1 : 3, 1, 128);

  // The timelock starts with no delay and the deployer among its proposers and executors, so that the
  // deployment's own governance calls (the DisputeManager's first asset terms) run at once; the same batch then
  // sets the real delay, and a deployer that is not governance renounces its timelock roles (decision 0019).
  const bootstrap = governance === me ? [governance] : [governance, me];
  const timelock = await deploy("Timelock", [0n, bootstrap, bootstrap, zeroAddress]);
  const laborGas = await deploy("LaborGas", [me]);
  // The deployer governs the three role-based contracts only until it has wired them; then the timelock does.
  // Bonds in LaborGas. Live gigs, open cases and panel seats lock the bonds they concern; the unbonding delay
  // (30 days, the registry's minimum) covers the windows in which a case can still be opened without a lock
  // (decision 0014).
  const providerRegistry = await deploy("ProviderRegistry", [
    me,
    laborGas.address,
    parseEther(process.env.IOI_MIN_PROVIDER_BOND ?? "100"),
    parseEther(process.env.IOI_MIN_ARBITRATOR_STAKE ?? "1000"),
    BigInt(30 * DAY),
  ]);
  // The GasEscrow holds providers' bonds in the registry for the dispute window of each cooperative settlement.
  const gasEscrow = await deploy("GasEscrow", [me, treasury, routingFeeBps, providerRegistry.address]);
  const gigEscrow = await deploy("GigEscrow", [me, providerRegistry.address]);
  const randomness = await deploy("BlockhashRandomness", [BigInt(randomnessDelayBlocks)]);
  const panels = await deploy("Panels", []);
  const rules = await deploy("DisputeRules", []);
  const disputeParams = {
    riskBps: envInt("IOI_DISPUTE_RISK_BPS", 500, 0, 10_000),
    burnBps: envInt("IOI_DISPUTE_BURN_BPS", 2_000, 0, 10_000),
    feeBps: envInt("IOI_DISPUTE_FEE_BPS", 1_000, 0, 3_000),
    laneMultiplier: envInt("IOI_DISPUTE_LANE_MULTIPLIER", 3, 1, 10),
    panelSize: envInt("IOI_DISPUTE_PANEL_SIZE", 5, 1, 8),
    maxAppeals: envInt("IOI_DISPUTE_MAX_APPEALS", 2, 0, 2),
    overturnSlashBps: envInt("IOI_DISPUTE_OVERTURN_SLASH_BPS", 5_000, 0, 10_000),
    absentSlashBps: envInt("IOI_DISPUTE_ABSENT_SLASH_BPS", 100, 0, 1_000),
    slashCapBps: envInt("IOI_DISPUTE_SLASH_CAP_BPS", 20_000, 0, 50_000),
    respondWindow: envInt("IOI_DISPUTE_RESPOND_WINDOW", DAY, 0, 7 * DAY),
    decisionWindow: envInt("IOI_DISPUTE_DECISION_WINDOW", 2 * DAY, 1, 14 * DAY),
    appealWindow: envInt("IOI_DISPUTE_APPEAL_WINDOW", 2 * DAY, 1, 7 * DAY),
    slowPathTimeout: envInt("IOI_DISPUTE_SLOW_PATH_TIMEOUT", 14 * DAY, 1, 60 * DAY),
    // How long a cooperatively settled session stays disputable (refunds from the provider's bond).
    settledDisputeWindow: envInt("IOI_DISPUTE_SETTLED_WINDOW", 7 * DAY, 60, 30 * DAY),
    // Panel members must have pinned this judge runtime: this checkout's engine, harness and runner version.
    judgeRuntimeHash: envHash("IOI_JUDGE_RUNTIME_HASH", judgeRuntimeHash()),
  };
  const disputeManager = await deploy(
    "DisputeManager",
    [timelock.address, gasEscrow.address, gigEscrow.address, providerRegistry.address, randomness.address, disputeParams],
    { Panels: panels, DisputeRules: rules },
  );

  // Wiring: the DisputeManager freezes and releases both escrows, slashes and locks bonds; the GigEscrow locks
  // the provider's bond while a gig is live.
  await call("GasEscrow", gasEscrow.address, "grantRole", [await role("GasEscrow", gasEscrow.address, "DISPUTE_ROLE"), disputeManager.address]);
  await call("GigEscrow", gigEscrow.address, "grantRole", [await role("GigEscrow", gigEscrow.address, "DISPUTE_ROLE"), disputeManager.address]);
  const slasher = await role("ProviderRegistry", providerRegistry.address, "SLASHER_ROLE");
  const locker = await role("ProviderRegistry", providerRegistry.address, "LOCKER_ROLE");
  await call("ProviderRegistry", providerRegistry.address, "grantRole", [slasher, disputeManager.address]);
  await call("ProviderRegistry", providerRegistry.address, "grantRole", [locker, disputeManager.address]);
  await call("ProviderRegistry", providerRegistry.address, "grantRole", [locker, gigEscrow.address]);
  // The GasEscrow keeps a provider's bond from being withdrawn inside a settled session's dispute window.
  const holder = await role("ProviderRegistry", providerRegistry.address, "HOLDER_ROLE");
  await call("ProviderRegistry", providerRegistry.address, "grantRole", [holder, gasEscrow.address]);
  // Both escrows read asset terms from the DisputeManager and refuse to hold an asset without them (issue 28).
  await call("GasEscrow", gasEscrow.address, "setDisputeTermsSource", [disputeManager.address]);
  await call("GigEscrow", gigEscrow.address, "setDisputeTermsSource", [disputeManager.address]);
  // Sealed for good: from here on nobody, governance included, can grant or revoke these roles (decision 0014).
  await call("GasEscrow", gasEscrow.address, "sealRoles", []);
  await call("GigEscrow", gigEscrow.address, "sealRoles", []);
  await call("ProviderRegistry", providerRegistry.address, "sealRoles", []);

  // Asset terms are governance's, which is already the timelock: the deployer runs them through it while the
  // timelock's delay is still 0 (the DisputeManager applies an asset's first terms at once), before hand-over.
  const assetTerms = {
    ETH: { asset: zeroAddress as Address, bondFloor: parseEther(process.env.IOI_ETH_BOND_FLOOR ?? "0.001"), stakeRate: parseEther(process.env.IOI_ETH_STAKE_RATE ?? "1000") },
    LaborGas: { asset: laborGas.address, bondFloor: parseEther(process.env.IOI_LGAS_BOND_FLOOR ?? "1"), stakeRate: parseEther(process.env.IOI_LGAS_STAKE_RATE ?? "1") },
  };

  const dmAbi = (await hre.artifacts.readArtifact("DisputeManager")).abi as Abi;
  const timelockAbi = (await hre.artifacts.readArtifact("Timelock")).abi as Abi;
  const { governThroughTimelock } = await import("./timelock");
  await governThroughTimelock({
    publicClient: publicClient as never,
    wallet: deployer as never,
    timelock: timelock.address,
    calls: [
      ...Object.values(assetTerms).map((t) => ({
        target: disputeManager.address,
        data: encodeFunctionData({ abi: dmAbi, functionName: "setAssetTerms", args: [t.asset, { bondFloor: t.bondFloor, stakeRate: t.stakeRate }] }),
      })),
      // Last in the batch: from here on every governance call waits out the delay.
      { target: timelock.address, data: encodeFunctionData({ abi: timelockAbi, functionName: "updateDelay", args: [BigInt(timelockDelay)] }) },
    ],
    salt: "deploy: asset terms and delay",
    // The delay is 0: the batch is ready as soon as it is scheduled.
    wait: async () => undefined,
  });
  if (governance !== me) {
    for (const r of ["PROPOSER_ROLE", "CANCELLER_ROLE", "EXECUTOR_ROLE"]) await call("Timelock", timelock.address, "renounceRole", [await role("Timelock", timelock.address, r), me]);
  }

  // The initial arbitrators: admitted by the deployer, which still holds the registry's GOVERNANCE_ROLE, so a
  // new chain can draw panels at once instead of after the timelock's delay. All or none.
  const initial = options.initialArbitrators ?? envAddresses("IOI_INITIAL_ARBITRATORS");
  if (initial.length > 0) {
    await options.beforeAdmission?.({ LaborGas: laborGas, ProviderRegistry: providerRegistry });
    const registryAbi = (await hre.artifacts.readArtifact("ProviderRegistry")).abi as Abi;
    const read = (functionName: string, args: unknown[]) => publicClient.readContract({ address: providerRegistry.address, abi: registryAbi, functionName, args });
    const notReady = await unreadyArbitrators(initial, disputeParams.judgeRuntimeHash, read, options.arbitratorWaitSeconds ?? envInt("IOI_INITIAL_ARBITRATORS_WAIT", 0, 0, 7 * DAY), providerRegistry.address);
    if (notReady.length > 0) {
      throw new Error(
        `Admitted no initial arbitrator: ${notReady.join("; ")} (registry ${providerRegistry.address}). The deployer kept its roles on this half-finished deployment; fix the list and deploy again.`,
      );
    }
    for (const account of initial) await call("ProviderRegistry", providerRegistry.address, "admitArbitrator", [account]);
  }

  // Hand the role-based contracts to the timelock and renounce the deployer's roles.
  // (The GigEscrow has no GOVERNANCE_ROLE: its admin only grants DISPUTE_ROLE.)
  for (const [name, address, governed] of [
    ["GasEscrow", gasEscrow.address, true],
    ["GigEscrow", gigEscrow.address, false],
    ["ProviderRegistry", providerRegistry.address, true],
  ] as const) {
    const admin = await role(name, address, "DEFAULT_ADMIN_ROLE");
    await call(name, address, "grantRole", [admin, timelock.address]);
    if (governed) {
      const gov = await role(name, address, "GOVERNANCE_ROLE");
      await call(name, address, "grantRole", [gov, timelock.address]);
      await call(name, address, "renounceRole", [gov, me]);
    }
    await call(name, address, "renounceRole", [admin, me]);
  }

  const deployment: Deployment = {
    network: hre.network.name,
    chainId,
    deployer: me,
    governance,
    timelock: timelock.address,
    timelockDelay,
    randomnessDelayBlocks,
    treasury,
    routingFeeBps,
    deployedAt: new Date().toISOString(),
    contracts: {
      LaborGas: laborGas,
      GasEscrow: gasEscrow,
      ProviderRegistry: providerRegistry,
      GigEscrow: gigEscrow,
      BlockhashRandomness: randomness,
      Panels: panels,
      DisputeRules: rules,
      DisputeManager: disputeManager,
      Timelock: timelock,
    },
    disputeParams,
    initialArbitrators: initial,
    assetTerms: Object.fromEntries(
      Object.entries(assetTerms).map(([k, t]) => [k, { asset: t.asset, bondFloor: t.bondFloor.toString(), stakeRate: t.stakeRate.toString() }]),
    ),
  };
  return deployment;
}

/** The bytecode with each linked library's address written into the slots its link references name. */
function linkBytecode(
  name: string,
  bytecode: Hex,
  references: Record<string, Record<string, { start: number; length: number }[]>>,
  libraries: Partial<Record<string, DeployedContract>>,
): Hex {
  let code = bytecode.slice(2);
  for (const [, byName] of Object.entries(references)) {
    for (const [library, offsets] of Object.entries(byName)) {
      const deployed = libraries[library];
      if (!deployed) throw new Error(`${name} links library ${library}, which was not deployed first.`);
      const address = deployed.address.slice(2).toLowerCase();
      for (const { start, length } of offsets) code = code.slice(0, start * 2) + address + code.slice((start + length) * 2);
    }
  }
  return `0x${code}`;
}

/**
 * How often to ask for a receipt: IOI_DEPLOY_POLL_MS (default: hardhat-viem's, 4 s off its own devnet). The
 * testnet rehearsal's interval-mined devnet (a block every 250 ms) sets 100 ms, else each of its ~70 deployment
 * transactions would wait out a 4 s poll.
 */
function receiptPolling(): { pollingInterval?: number } {
  const ms = envInt("IOI_DEPLOY_POLL_MS", 0, 0, 60_000);
  return ms > 0 ? { pollingInterval: ms } : {};
}

function envInt(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === "" ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be a whole number from ${min} to ${max}; received ${raw}.`);
  }
  return value;
}

/**
 * Which of `accounts` cannot be admitted yet, each as "ADDRESS is not registered as an arbitrator" (or not
 * staked, or pinned to another judge runtime); polls every 5 s for up to `waitSeconds` until none is left.
 */
async function unreadyArbitrators(
  accounts: readonly Address[],
  runtime: Hex,
  read: (functionName: string, args: unknown[]) => Promise<unknown>,
  waitSeconds: number,
  registry: Address,
): Promise<string[]> {
  const deadline = Date.now() + waitSeconds * 1000;
  if (waitSeconds > 0) console.log(`Waiting up to ${waitSeconds} s for ${accounts.length} initial arbitrators to register and stake at ${registry}…`);
  for (;;) {
    const problems: string[] = [];
    const minimum = (await read("minArbitratorStake", [])) as bigint;
    for (const account of accounts) {
      if (!(await read("isRegistered", [1, account]))) problems.push(`${account} is not registered as an arbitrator`);
      else if (((await read("bondOf", [1, account])) as { active: bigint }).active < minimum) problems.push(`${account} has not staked the minimum arbitrator stake`);
      else if ((await read("judgeRuntimeHashOf", [account])) !== runtime) problems.push(`${account} pinned another judge runtime than ${runtime}`);
    }
    if (problems.length === 0 || Date.now() >= deadline) return problems;
    await new Promise((resolve) => setTimeout(resolve, 5_000));
  }
}

function envAddresses(name: string): Address[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return [];
  const list = raw.split(",").map((a) => a.trim());
  for (const a of list) if (!isAddress(a)) throw new Error(`${name} must be a comma-separated list of addresses; "${a}" is not one.`);
  const unique = [...new Set(list.map((a) => getAddress(a)))];
  if (unique.length !== list.length) throw new Error(`${name} names an address twice.`);
  return unique;
}

function envAddress(name: string, fallback: Address): Address {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!isAddress(raw)) throw new Error(`${name} must be an address; received "${raw}".`);
  return getAddress(raw);
}

function envHash(name: string, fallback: Hex): Hex {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!isHex(raw) || raw.length !== 66) throw new Error(`${name} must be a 32-byte hex hash; received "${raw}".`);
  return raw;
}

/**
 * Writes the record to `deployments/chain-<chainId>.json` — the one record per chain id that clients choose by
 * the RPC's chain id (decision 0019) — and, for a named network other than "remote", the same record to
 * `deployments/<network>.json` (what `--network NAME` reads, and what older scripts read). Returns the
 * per-chain file's path.
 */
export function writeDeployment(deployment: Deployment, directory = process.env.IOI_DEPLOYMENTS_DIR || path.join(__dirname, "..", "deployments")): string {
  mkdirSync(directory, { recursive: true });
  const text = `${JSON.stringify(deployment, null, 2)}\n`;
  const file = path.join(directory, `chain-${deployment.chainId}.json`);
  writeFileSync(file, text);
  if (deployment.network !== "remote" && deployment.network !== `chain-${deployment.chainId}`) {
    writeFileSync(path.join(directory, `${deployment.network}.json`), text);
  }
  return file;
}

async function main(): Promise<void> {
  const hre = (await import("hardhat")).default;
  const options: DeployOptions = {};
  if (process.env.IOI_DEVNET_ARBITRATORS === "1") {
    // `npm run devnet`: Hardhat accounts 20..35 register and stake during the deployment and are admitted in it.
    const publicClient = await hre.viem.getPublicClient(receiptPolling());
    // The second test devnet (31338, the testnet rehearsal) runs the same Hardhat accounts under another chain id.
    if (![DEVNET_CHAIN_ID, 31338].includes(await publicClient.getChainId())) throw new Error("IOI_DEVNET_ARBITRATORS=1 uses Hardhat's well-known keys and runs only on chains 31337 and 31338.");
    const wallets = await hre.viem.getWalletClients();
    const { DEVNET_ARBITRATORS, registerDevnetArbitrators } = await import("./arbitrators");
    const count = envInt("IOI_DEVNET_ARBITRATOR_COUNT", DEVNET_ARBITRATORS.length, 1, DEVNET_ARBITRATORS.length);
    const indices = DEVNET_ARBITRATORS.slice(0, count);
    options.initialArbitrators = indices.map((i) => getAddress(wallets[i]!.account.address));
    options.beforeAdmission = async (contracts) => {
      await registerDevnetArbitrators({ publicClient: publicClient as never, wallets: wallets as never, contracts, indices });
    };
  }
  const deployment = await deployAll(hre, options);
  const file = writeDeployment(deployment);
  console.log(`Deployed to ${deployment.network} (chain ${deployment.chainId}):`);
  for (const [name, c] of Object.entries(deployment.contracts)) console.log(`  ${name.padEnd(20)} ${c.address}  block ${c.blockNumber}`);
  console.log(`Governance is the Timelock ${deployment.timelock} (delay ${deployment.timelockDelay} s; proposer and executor ${deployment.governance}); the deployer holds no role.`);
  console.log(`Asset terms set (applied at once): ${Object.keys(deployment.assetTerms).join(", ")}.`);
  console.log(
    deployment.initialArbitrators.length > 0
      ? `Admitted ${deployment.initialArbitrators.length} initial arbitrators before the hand-over: panels can be drawn now.`
      : "No initial arbitrators (IOI_INITIAL_ARBITRATORS): admissions now go through the timelock (scripts/timelock.ts).",
  );
  console.log(`Wrote ${path.relative(process.cwd(), file)}`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    // One sentence: viem's short message (never the calldata and bytecode its full message carries).
    const short = (error as { shortMessage?: unknown }).shortMessage;
    console.error(typeof short === "string" ? short : error instanceof Error ? error.message.split("\n")[0] : error);
    process.exitCode = 1;
  });
}
