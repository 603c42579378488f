/**
 * The registry and money commands of `ioi` (issue 13, item 4):
 *
 *   ioi provider register | bond | unbond | withdraw | show     a provider's record and bond in the ProviderRegistry
 *   ioi deposit --session ID --amount WEI [--min-received WEI]  top up an open channel
 *   ioi balance                                                 wallet, channels, claimable payouts, bonds, stakes
 *   ioi channels                                                the store's channels with phase and time left
 *   ioi gigs [--mine]   ioi cases [--mine]                      gigs and dispute cases from the chain's logs
 *
 * Amounts print in their asset's units with its symbol (raw base units in --json), times as a date and how far
 * away (unix seconds in --json). Every write is simulated first, so a revert is reported before anything is sent.
 */
import { existsSync } from "node:fs";

import { DeploymentError } from "../chain/deployment";
import { checkedWrite } from "../chain/write";
import {
  erc20Abi,
  getAddress,
  isAddressEqual,
  keccak256,
  parseUnits,
  zeroAddress,
  zeroHash,
  type Abi,
  type Address,
  type Hash,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from "viem";

import { providerRegistryAbi, disputeManagerAbi } from "../../arbitration/runner/chain";
import { deployedAddress, deployedContract, givenAddress, readingOf, rpcClients } from "./chain";
import { readPaged } from "../chain/logs";
import { CHANNEL_PHASES, gasEscrowAbi, depositToChannel, type Wallet } from "../chain/escrow";
import { BaseError } from "../core/errors";
import { gigEscrowAbi, readGig } from "../chain/gig";
import { CASE_STATUSES } from "../../arbitration/documents/context";
import {
  addressOption,
  assetUnitOf,
  channelOf,
  hashOption,
  loadAccount,
  need,
  openAnyStore,
  openExistingStore,
  isPostgresStore,
  openStore,
  sessionOf,
  storedChannelOn,
  storePath,
  uint,
  UsageError,
  weiAmount,
  type Command,
  type CommandOptions,
  type Out,
} from "./common";
import { ETH_UNIT, formatAmount, formatAmountWithBase, formatDate, formatMoment, type AssetUnit } from "../core/format";
import { canonBytes, parseJson } from "../core/canonical";
import type { JsonObject } from "../core/validate";
import type { ChannelRecord } from "../store/store";

/** A registry or money transaction that reverted or was refused by the node. */
export class MoneyTransactionError extends BaseError {
  override name = "MoneyTransactionError" as const;
}

export const REGISTRY_OPTIONS = {
  registry: { type: "string" },
  "gig-escrow": { type: "string" },
  "dispute-manager": { type: "string" },
} as const satisfies CommandOptions;

export const REGISTRY_HELP = [
  "  --registry ADDR         ProviderRegistry (default $IOI_REGISTRY, else the deployment record)",
  "  --gig-escrow ADDR       GigEscrow (default $IOI_GIG_ESCROW, else the deployment record)",
  "  --dispute-manager ADDR  DisputeManager (default $IOI_DISPUTE_MANAGER, else the deployment record)",
];

const PROVIDER_ROLE = 0;
const ARBITRATOR_ROLE = 1;
const UNBOND_PHASES = ["none", "unbonding", "withdrawable"] as const;
const PHASES = CHANNEL_PHASES;

/*//////////////////////////////////////////////////////////////
                               PLUMBING
//////////////////////////////////////////////////////////////*/

type Values = Record<string, unknown>;

/** Refuses a malformed address override before any RPC call (the code behind it is checked once connected). */
function checkOverride(values: Values, option: string, envName: string): void {
  givenAddress(values, option, envName);
}

const registryAddress = (values: Values, publicClient: PublicClient): Promise<Address> =>
  deployedAddress(values, publicClient, "registry", "IOI_REGISTRY", "ProviderRegistry");

/** Checks the chain, the code and the funds, simulates (a revert is reported before anything is sent), sends, waits. */
async function send(
  what: string,
  publicClient: PublicClient,
  wallet: Wallet,
  request: { address: Address; abi: Abi; functionName: string; args: readonly unknown[]; value?: bigint },
): Promise<{ hash: Hash; gasUsed: bigint }> {
  const { hash, receipt } = await checkedWrite({ publicClient, wallet, what, ...request } as never);
  return { hash, gasUsed: receipt.gasUsed };
}

async function nowOnChain(publicClient: PublicClient): Promise<bigint> {
  return (await publicClient.getBlock()).timestamp;
}

async function bondUnitOf(publicClient: PublicClient, registry: Address): Promise<{ token: Address; unit: AssetUnit }> {
  const token = getAddress(await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondToken" }));
  return { token, unit: await assetUnitOf(publicClient, token) };
}

/** --amount's shape, checked before reaching for a node: a decimal number more than zero. */
function checkTokenAmountText(values: Values, what: string): void {
  const text = need(values, "amount", what);
  if (!/^(0|[1-9][0-9]*)(\.[0-9]+)?$/.test(text)) throw new UsageError(`--amount must be a decimal number of bond tokens (e.g. 5000 or 0.5); received "${text}".`);
  if (!/[1-9]/.test(text)) throw new UsageError("--amount must be more than zero.");
}

/** --amount in whole or decimal bond tokens ("5000", "0.5"), more than zero. */
function tokenAmount(values: Values, unit: AssetUnit, what: string): bigint {
  const text = need(values, "amount", what);
  const pattern = new RegExp(`^(0|[1-9][0-9]*)(\\.[0-9]{1,${Math.max(unit.decimals, 1)}})?$`);
  if (!pattern.test(text) || (unit.decimals === 0 && text.includes("."))) {
    throw new UsageError(`--amount must be a number of ${unit.symbol} with at most ${unit.decimals} decimals (e.g. 5000 or 0.5); received "${text}".`);
  }
  const amount = parseUnits(text, unit.decimals);
  if (amount === 0n) throw new UsageError(`--amount must be more than zero ${unit.symbol}.`);
  return amount;
}

/** The account a read-only command is about: --address, else the acting key. */
function subjectAddress(values: Values): Address {
  return values.address === undefined ? loadAccount(values).address : addressOption(values, "address", "the account to show");
}

async function registryClients(values: Values, account?: LocalAccount) {
  checkOverride(values, "registry", "IOI_REGISTRY");
  const { publicClient, wallet, chainId } = await rpcClients(values, account);
  const registry = await registryAddress(values, publicClient);
  const code = await publicClient.getCode({ address: registry });
  if (!code || code === "0x") throw new UsageError(`No contract at ${registry} on chain ${chainId}; pass --registry (or redeploy with \`npm run devnet\`).`);
  return { publicClient, wallet, registry, ...(await bondUnitOf(publicClient, registry)) };
}

/**
 * Scans from `fromBlock` to the head in bounded pages with back-off (`readPaged`, decision 0019), the page
 * size from --log-range / $IOI_LOG_RANGE / the chain's default.
 */
async function pagedEvents<T>(values: Values, publicClient: PublicClient, fromBlock: bigint, page: (from: bigint, to: bigint) => Promise<T[]>): Promise<T[]> {
  const reading = readingOf(values, await publicClient.getChainId());
  return readPaged({ fromBlock, toBlock: await publicClient.getBlockNumber(), maxBlockRange: reading.batchBlocks, retry: reading.retry }, page);
}

/*//////////////////////////////////////////////////////////////
                               PROVIDER
//////////////////////////////////////////////////////////////*/

/** `--capabilities`: a JSON object (its canonical form is what is hashed), or one sentence saying why not. */
function capabilitiesOf(text: string): JsonObject {
  let parsed: unknown;
  try {
    parsed = parseJson(text, { maxBytes: 64 * 1024, what: "--capabilities" });
  } catch (cause) {
    throw new UsageError(`--capabilities is not valid JSON: ${((cause as BaseError).shortMessage ?? (cause as Error).message).split("\n")[0]!.replace(/\.$/, "")}; nothing was sent.`, { cause });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new UsageError("--capabilities must be a JSON object such as '{\"gpu\":\"none\"}'; nothing was sent.");
  return parsed as JsonObject;
}

async function runProviderRegister(values: Values, out: Out): Promise<void> {
  const endpoint = need(values, "endpoint", "where clients reach the provider, e.g. tcp://203.0.113.7:7000");
  if (Buffer.byteLength(endpoint) > 256) throw new UsageError(`--endpoint must be 1 to 256 bytes; received ${Buffer.byteLength(endpoint)}.`);
  const didHash = hashOption(values, "did-hash", "keccak-256 of the provider's DID document");
  const mldsaHash = hashOption(values, "mldsa-hash", "keccak-256 of its ML-DSA public key");
  if (values.capabilities !== undefined && values["capabilities-hash"] !== undefined) throw new UsageError("Give either --capabilities JSON or --capabilities-hash HASH, not both.");
  // On-chain writes validate their inputs first (issue 28 item 9): the capabilities are a JSON object, hashed in
  // canonical form (RFC 8785), so '{not json' fails here and the live record is never rewritten with its hash.
  const capabilities = values.capabilities === undefined ? undefined : capabilitiesOf(need(values, "capabilities", "the capabilities document, a JSON object"));
  const capabilitiesHash = capabilities === undefined ? hashOption(values, "capabilities-hash", "keccak-256 of the canonical capabilities JSON") : keccak256(canonBytes(capabilities));
  const account = loadAccount(values);
  const { publicClient, wallet, registry, unit } = await registryClients(values, account);
  const registered = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "isRegistered", args: [PROVIDER_ROLE, account.address] });
  if (registered) {
    const record = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "providerOf", args: [account.address] });
    if (record.endpoint === endpoint && record.capabilitiesHash === capabilitiesHash && record.didHash === didHash && record.mldsaPublicKeyHash === mldsaHash) {
      throw new UsageError(`The provider record of ${account.address} holds these values already; nothing was sent.`);
    }
  }
  const functionName = registered ? "updateProvider" : "registerProvider";
  const sent = await send(`ProviderRegistry.${functionName}`, publicClient, wallet!, { address: registry, abi: providerRegistryAbi as Abi, functionName, args: [endpoint, capabilitiesHash, didHash, mldsaHash] });
  const min = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "minProviderBond" });
  out.lines.push(
    `${registered ? "Updated the provider record of" : "Registered"} ${account.address} at ${endpoint} (gas ${sent.gasUsed}); it is active once it bonds at least ${formatAmount(min, unit)} (\`ioi provider bond\`).`,
  );
  Object.assign(out.result, { provider: account.address, updated: registered, endpoint, capabilitiesHash, didHash, mldsaHash, minProviderBond: min.toString(), transactionHash: sent.hash, gasUsed: Number(sent.gasUsed) });
}

async function runProviderBond(values: Values, out: Out): Promise<void> {
  checkTokenAmountText(values, "bond tokens to bond");
  const account = loadAccount(values);
  const { publicClient, wallet, registry, token, unit } = await registryClients(values, account);
  const amount = tokenAmount(values, unit, `${unit.symbol} to bond`);
  const balance = await publicClient.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [account.address] });
  if (balance < amount) throw new UsageError(`${account.address} holds ${formatAmount(balance, unit)}, less than the ${formatAmount(amount, unit)} to bond.`);
  await send("ERC-20 approve", publicClient, wallet!, { address: token, abi: erc20Abi as Abi, functionName: "approve", args: [registry, amount] });
  const sent = await send("ProviderRegistry.bond", publicClient, wallet!, { address: registry, abi: providerRegistryAbi as Abi, functionName: "bond", args: [PROVIDER_ROLE, amount] });
  const bond = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondOf", args: [PROVIDER_ROLE, account.address] });
  const active = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "isActiveProvider", args: [account.address] });
  out.lines.push(`Bonded ${formatAmount(amount, unit)} as provider ${account.address}; active bond now ${formatAmount(bond.active, unit)}, ${active ? "an active provider" : "not yet an active provider (register, and bond at least the minimum)"} (gas ${sent.gasUsed}).`);
  Object.assign(out.result, { provider: account.address, bonded: amount.toString(), active: bond.active.toString(), activeProvider: active, token, transactionHash: sent.hash, gasUsed: Number(sent.gasUsed) });
}

async function runProviderUnbond(values: Values, out: Out): Promise<void> {
  checkTokenAmountText(values, "bond tokens to unbond");
  const account = loadAccount(values);
  const { publicClient, wallet, registry, unit } = await registryClients(values, account);
  const amount = tokenAmount(values, unit, `${unit.symbol} to unbond`);
  const locks = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "locksOf", args: [PROVIDER_ROLE, account.address] });
  if (locks > 0n) throw new UsageError(`${account.address}'s provider bond is held by ${locks} open liabilit${locks === 1n ? "y" : "ies"} (gigs or cases); it cannot unbond until they end.`);
  const bond = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondOf", args: [PROVIDER_ROLE, account.address] });
  if (bond.active < amount) throw new UsageError(`${account.address} has ${formatAmount(bond.active, unit)} of active provider bond, less than the ${formatAmount(amount, unit)} to unbond.`);
  const sent = await send("ProviderRegistry.requestUnbond", publicClient, wallet!, { address: registry, abi: providerRegistryAbi as Abi, functionName: "requestUnbond", args: [PROVIDER_ROLE, amount] });
  const after = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondOf", args: [PROVIDER_ROLE, account.address] });
  const now = await nowOnChain(publicClient);
  out.lines.push(`Unbonding ${formatAmount(amount, unit)}: ${formatAmount(after.pending, unit)} withdrawable from ${formatMoment(BigInt(after.unlockAt), now)} (gas ${sent.gasUsed}).`);
  Object.assign(out.result, { provider: account.address, unbonding: amount.toString(), pending: after.pending.toString(), unlockAt: after.unlockAt.toString(), transactionHash: sent.hash, gasUsed: Number(sent.gasUsed) });
}

async function runProviderWithdraw(values: Values, out: Out): Promise<void> {
  const account = loadAccount(values);
  const { publicClient, wallet, registry, unit } = await registryClients(values, account);
  const bond = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondOf", args: [PROVIDER_ROLE, account.address] });
  if (bond.pending === 0n) throw new UsageError(`${account.address} has no provider bond unbonding; run \`ioi provider unbond\` first.`);
  const now = await nowOnChain(publicClient);
  if (now < BigInt(bond.unlockAt)) throw new UsageError(`${formatAmount(bond.pending, unit)} unbonds at ${formatMoment(BigInt(bond.unlockAt), now)}; withdraw after that.`);
  const sent = await send("ProviderRegistry.withdraw", publicClient, wallet!, { address: registry, abi: providerRegistryAbi as Abi, functionName: "withdraw", args: [PROVIDER_ROLE] });
  out.lines.push(`Withdrew ${formatAmount(bond.pending, unit)} of unbonded provider bond to ${account.address} (gas ${sent.gasUsed}).`);
  Object.assign(out.result, { provider: account.address, withdrawn: bond.pending.toString(), transactionHash: sent.hash, gasUsed: Number(sent.gasUsed) });
}

async function runProviderShow(values: Values, out: Out): Promise<void> {
  const who = subjectAddress(values);
  const { publicClient, registry, token, unit } = await registryClients(values);
  const read = <T>(functionName: string, args: readonly unknown[] = []) =>
    publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: functionName as never, args: args as never }) as Promise<T>;
  const [record, active, bond, phase, locks, min, delay] = await Promise.all([
    read<{ endpoint: string; capabilitiesHash: Hex; didHash: Hex; mldsaPublicKeyHash: Hex }>("providerOf", [who]),
    read<boolean>("isActiveProvider", [who]),
    read<{ active: bigint; pending: bigint; unlockAt: number }>("bondOf", [PROVIDER_ROLE, who]),
    read<number>("unbondPhaseOf", [PROVIDER_ROLE, who]),
    read<bigint>("locksOf", [PROVIDER_ROLE, who]),
    read<bigint>("minProviderBond"),
    read<bigint>("unbondingDelay"),
  ]);
  const now = await nowOnChain(publicClient);
  const registered = record.didHash !== zeroHash;
  const phaseName = UNBOND_PHASES[phase] ?? `phase ${phase}`;
  out.lines.push(
    `provider ${who}: ${registered ? `registered at ${record.endpoint}` : "not registered"}, ${active ? "active (may accept gigs)" : "not active"}`,
    `  bond ${formatAmount(bond.active, unit)} active (minimum ${formatAmount(min, unit)}), ${formatAmount(bond.pending, unit)} unbonding (${phaseName}${bond.pending > 0n ? `, withdrawable from ${formatMoment(BigInt(bond.unlockAt), now)}` : ""}), held by ${locks} liabilit${locks === 1n ? "y" : "ies"}`,
  );
  if (!registered) out.lines.push("  next: `ioi provider register`, then `ioi provider bond`.");
  else if (!active) out.lines.push(`  next: \`ioi provider bond --amount ${formatAmount(min > bond.active ? min - bond.active : 0n, unit).split(" ")[0]}\` to reach the minimum.`);
  Object.assign(out.result, {
    provider: who,
    registered,
    active,
    endpoint: record.endpoint,
    capabilitiesHash: record.capabilitiesHash,
    didHash: record.didHash,
    mldsaPublicKeyHash: record.mldsaPublicKeyHash,
    bond: bond.active.toString(),
    pending: bond.pending.toString(),
    unlockAt: bond.unlockAt.toString(),
    unbondPhase: phaseName,
    locks: locks.toString(),
    minProviderBond: min.toString(),
    unbondingDelay: delay.toString(),
    token,
  });
}

const ENDPOINT_OPTIONS = {
  endpoint: { type: "string" },
  "capabilities-hash": { type: "string" },
  capabilities: { type: "string" },
  "did-hash": { type: "string" },
  "mldsa-hash": { type: "string" },
} as const satisfies CommandOptions;

/** `ioi provider <subcommand>`: the provider's record and bond in the ProviderRegistry. */
export const PROVIDER_COMMANDS: Record<string, Command> = {
  register: {
    summary: "register (or update) the acting key as a provider: endpoint, capabilities, DID and ML-DSA key hashes",
    usage: "ioi provider register --endpoint URL (--capabilities-hash HASH | --capabilities TEXT) --did-hash HASH --mldsa-hash HASH",
    examples: ['ioi provider register --endpoint tcp://203.0.113.7:7000 --capabilities \'{"gpu":"none"}\' --did-hash 0x… --mldsa-hash 0x…'],
    options: ENDPOINT_OPTIONS,
    run: runProviderRegister,
  },
  bond: {
    summary: "bond tokens as a provider (approves the registry first); active once registered and at the minimum",
    usage: "ioi provider bond --amount TOKENS",
    notes: ["  --amount TOKENS  whole or decimal bond tokens (LaborGas has 18 decimals), e.g. 1000 or 0.5"],
    examples: ["ioi provider bond --amount 1000"],
    options: { amount: { type: "string" } },
    run: runProviderBond,
  },
  unbond: {
    summary: "start unbonding provider bond (refused while a gig or case holds it); withdraw after the delay",
    usage: "ioi provider unbond --amount TOKENS",
    examples: ["ioi provider unbond --amount 250.5"],
    options: { amount: { type: "string" } },
    run: runProviderUnbond,
  },
  withdraw: {
    summary: "withdraw provider bond whose unbonding delay has passed",
    usage: "ioi provider withdraw",
    options: {},
    run: runProviderWithdraw,
  },
  show: {
    summary: "show a provider: registered, active, endpoint, bond, unbonding, locks (no key needed with --address)",
    usage: "ioi provider show [--address ADDR]",
    options: { address: { type: "string" } },
    run: runProviderShow,
  },
};

/*//////////////////////////////////////////////////////////////
                                MONEY
//////////////////////////////////////////////////////////////*/

const escrowAddress = (values: Values, publicClient: PublicClient): Promise<Address> =>
  deployedAddress(values, publicClient, "escrow", "IOI_ESCROW", "GasEscrow");
const gigEscrowAddress = (values: Values, publicClient: PublicClient): Promise<Address> =>
  deployedAddress(values, publicClient, "gig-escrow", "IOI_GIG_ESCROW", "GigEscrow");

async function runDeposit(values: Values, out: Out): Promise<void> {
  const account = loadAccount(values);
  const sessionId = sessionOf(values);
  const amount = weiAmount(values, "amount", "what to add to the channel's deposit");
  if (amount === 0n) throw new UsageError("--amount must be more than zero.");
  const minReceived = weiAmount(values, "min-received", "the least the top-up must credit", amount);
  if (minReceived > amount) throw new UsageError(`--min-received (${minReceived}) cannot exceed --amount (${amount}).`);
  const store = openExistingStore(values, "payer");
  try {
    channelOf(store, sessionId);
    checkOverride(values, "escrow", "IOI_ESCROW");
    const { publicClient, wallet, chainId } = await rpcClients(values, account);
    const escrow = await escrowAddress(values, publicClient);
    const channel = storedChannelOn(store, sessionId, chainId, escrow);
    const unit = await assetUnitOf(publicClient, channel.ref.terms.asset);
    const phase = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [sessionId] });
    if (phase !== 1) throw new UsageError(`Channel ${sessionId} is ${PHASES[phase] ?? `in phase ${phase}`} on-chain; only an open channel takes a top-up.`);
    if (channel.ref.terms.asset === zeroAddress) {
      const balance = await publicClient.getBalance({ address: account.address });
      if (balance < amount) throw new UsageError(`${account.address} holds ${formatAmountWithBase(balance, unit)}, less than the ${formatAmountWithBase(amount, unit)} to deposit.`);
    }
    const added = await depositToChannel({ wallet: wallet!, publicClient, escrow, ref: channel.ref, amount, minReceived });
    await store.updateChannel(sessionId, { deposit: added.deposit });
    out.lines.push(`Deposited ${formatAmountWithBase(amount, unit)} into ${sessionId}; it now holds ${formatAmountWithBase(added.deposit, unit)} (gas ${added.gasUsed}).`);
    Object.assign(out.result, { sessionId, amount: amount.toString(), minReceived: minReceived.toString(), deposit: added.deposit.toString(), asset: channel.ref.terms.asset, transactionHash: added.hash, gasUsed: Number(added.gasUsed) });
  } finally {
    await store.close();
  }
}

/** The contract's address, or undefined when the chain's deployment record names none (or there is none). */
async function optionalAddress(resolve: () => Promise<Address>): Promise<Address | undefined> {
  try {
    return await resolve();
  } catch (error) {
    if (error instanceof DeploymentError && /names no|no deployment record/.test(error.shortMessage)) return undefined;
    throw error;
  }
}

async function runBalance(values: Values, out: Out): Promise<void> {
  const who = subjectAddress(values);
  for (const [option, envName] of [["escrow", "IOI_ESCROW"], ["registry", "IOI_REGISTRY"], ["gig-escrow", "IOI_GIG_ESCROW"]] as const) checkOverride(values, option, envName);
  const { publicClient } = await rpcClients(values);
  const escrow = await optionalAddress(() => escrowAddress(values, publicClient));
  const registry = await optionalAddress(() => registryAddress(values, publicClient));
  const gigEscrow = await optionalAddress(() => gigEscrowAddress(values, publicClient));
  const eth = await publicClient.getBalance({ address: who });
  const result: Record<string, unknown> = { address: who, wallet: { [zeroAddress]: eth.toString() } };
  out.lines.push(`account ${who}`, `  wallet ${formatAmount(eth, ETH_UNIT)}`);
  let bondUnit: { token: Address; unit: AssetUnit } | undefined;
  if (registry) {
    bondUnit = await bondUnitOf(publicClient, registry);
    const held = await publicClient.readContract({ address: bondUnit.token, abi: erc20Abi, functionName: "balanceOf", args: [who] });
    out.lines[out.lines.length - 1] += `, ${formatAmount(held, bondUnit.unit)}`;
    (result.wallet as Record<string, string>)[bondUnit.token] = held.toString();
    const bonds: Record<string, unknown> = {};
    for (const [role, name] of [[PROVIDER_ROLE, "provider bond"], [ARBITRATOR_ROLE, "arbitrator stake"]] as const) {
      const bond = await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondOf", args: [role, who] });
      bonds[role === PROVIDER_ROLE ? "provider" : "arbitrator"] = { active: bond.active.toString(), pending: bond.pending.toString(), unlockAt: bond.unlockAt.toString() };
      if (bond.active > 0n || bond.pending > 0n) {
        out.lines.push(`  ${name} ${formatAmount(bond.active, bondUnit.unit)} active, ${formatAmount(bond.pending, bondUnit.unit)} unbonding${bond.pending > 0n ? ` (withdrawable from ${formatDate(BigInt(bond.unlockAt))})` : ""}`);
      }
    }
    result.bonds = bonds;
  }
  const claimable: Record<string, string> = {};
  const assets: Address[] = [zeroAddress, ...(bondUnit ? [bondUnit.token] : [])];
  for (const asset of assets) {
    const unit = asset === zeroAddress ? ETH_UNIT : bondUnit!.unit;
    let total = 0n;
    if (escrow) total += await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "claimableOf", args: [asset, who] });
    if (gigEscrow) total += await publicClient.readContract({ address: gigEscrow, abi: gigEscrowAbi, functionName: "claimableOf", args: [asset, who] }).catch(() => 0n);
    claimable[asset] = total.toString();
    if (total > 0n) out.lines.push(`  claimable payouts ${formatAmountWithBase(total, unit)}`);
  }
  result.claimable = claimable;
  // Each channel in the store: what it holds on-chain, what the newest ticket pays, what remains.
  // A read-only command creates no store (issue 28 item 9), and lists only the channels of `who` on this chain: its
  // own as payer, funder or provider, never every channel some store holds.
  const storeFile = storePath(values, "payer");
  if ((values.db !== undefined || escrow) && existsSync(storeFile)) {
    const chainId = await publicClient.getChainId();
    const store = openStore(values, "payer");
    try {
      const channels = [];
      const mine = (c: ChannelRecord) =>
        c.chainId === chainId && [c.ref.terms.payer, c.ref.terms.funder, c.ref.terms.provider].some((party) => isAddressEqual(party, who));
      for (const c of store.listChannels().filter(mine)) {
        const unit = await assetUnitOf(publicClient, c.ref.terms.asset);
        const onChain = escrow && isAddressEqual(c.escrow, escrow) ? await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "depositOf", args: [c.sessionId] }) : c.deposit;
        const paid = store.latestTicket(c.sessionId)?.ticket.cumulativeAmount ?? 0n;
        const remaining = onChain > paid ? onChain - paid : 0n;
        channels.push({ sessionId: c.sessionId, role: c.role, status: c.status, asset: c.ref.terms.asset, deposit: onChain.toString(), paid: paid.toString(), remaining: remaining.toString() });
        out.lines.push(`  channel ${c.sessionId} (${c.role}, ${c.status}): deposit ${formatAmountWithBase(onChain, unit)}, paid ${formatAmountWithBase(paid, unit)}, remaining ${formatAmountWithBase(remaining, unit)}`);
      }
      result.channels = channels;
    } finally {
      await store.close();
    }
  }
  Object.assign(out.result, result);
}

async function runChannels(values: Values, out: Out): Promise<void> {
  // A provider fleet's PostgreSQL (--db postgres://…) is read like a file, read-only (decision 0036).
  const file = isPostgresStore(values) ? undefined : storePath(values, "payer");
  if (file !== undefined && !existsSync(file)) {
    out.lines.push(`No store at ${file}: it holds no channels.`);
    out.result.channels = [];
    return;
  }
  const store = await openAnyStore(values, "payer");
  try {
    const stored = store.listChannels();
    if (stored.length === 0) {
      out.lines.push("The store holds no channels.");
      out.result.channels = [];
      return;
    }
    const { publicClient } = await rpcClients(values);
    const now = await nowOnChain(publicClient);
    const channels = [];
    for (const c of stored) {
      const unit = await assetUnitOf(publicClient, c.ref.terms.asset);
      const code = await publicClient.getCode({ address: c.escrow });
      const phase = code && code !== "0x" ? PHASES[await publicClient.readContract({ address: c.escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [c.sessionId] })] ?? "Unknown" : "NoContract";
      const closing = store.getClosing(c.sessionId);
      const latest = store.latestTicket(c.sessionId);
      let window = "";
      if (closing && (phase === "Closing" || phase === "Finalizable")) {
        window = closing.finalizesAt > now ? `, challenge window ends ${formatMoment(closing.finalizesAt, now)}` : `, window ended ${formatMoment(closing.finalizesAt, now)}: \`ioi finalize\``;
      }
      channels.push({
        sessionId: c.sessionId,
        role: c.role,
        phase,
        status: c.status,
        escrow: c.escrow,
        chainId: c.chainId,
        deposit: c.deposit.toString(),
        paid: (latest?.ticket.cumulativeAmount ?? 0n).toString(),
        seq: (latest?.ticket.seq ?? 0n).toString(),
        challengeDuration: c.ref.terms.challengeDuration.toString(),
        finalizesAt: closing ? closing.finalizesAt.toString() : null,
      });
      out.lines.push(`${c.sessionId}  ${c.role.padEnd(8)} ${phase.padEnd(11)} deposit ${formatAmount(c.deposit, unit)}, paid ${formatAmount(latest?.ticket.cumulativeAmount ?? 0n, unit)} (seq ${latest?.ticket.seq ?? 0n})${window}`);
    }
    Object.assign(out.result, { now: now.toString(), channels });
  } finally {
    await store.close();
  }
}

async function runGigs(values: Values, out: Out): Promise<void> {
  const mine = Boolean(values.mine);
  const who = mine ? subjectAddress(values) : undefined;
  checkOverride(values, "gig-escrow", "IOI_GIG_ESCROW");
  const { publicClient } = await rpcClients(values);
  const { address: gigEscrow, fromBlock: deployedAt } = await deployedContract(values, publicClient, "gig-escrow", "IOI_GIG_ESCROW", "GigEscrow");
  const fromBlock = uint(values, "from-block", "the first block to scan", deployedAt);
  const ids = new Set<bigint>();
  await pagedEvents(values, publicClient, fromBlock, async (from, to) => {
    const funded = await publicClient.getContractEvents({ address: gigEscrow, abi: gigEscrowAbi, eventName: "GigFunded", fromBlock: from, toBlock: to, strict: true });
    const accepted = who ? await publicClient.getContractEvents({ address: gigEscrow, abi: gigEscrowAbi, eventName: "GigAccepted", args: { provider: who }, fromBlock: from, toBlock: to, strict: true }) : [];
    for (const log of funded) if (!who || isAddressEqual(log.args.client, who) || isAddressEqual(log.args.provider, who)) ids.add(BigInt(log.args.gigId));
    for (const log of accepted) ids.add(BigInt(log.args.gigId));
    return [];
  });
  const now = await nowOnChain(publicClient);
  const gigs = [];
  for (const gigId of [...ids].sort((a, b) => (a < b ? -1 : 1))) {
    const gig = await readGig({ publicClient, gigEscrow, gigId });
    const unit = await assetUnitOf(publicClient, gig.asset);
    const role = who ? (isAddressEqual(gig.client, who) ? "client" : "provider") : undefined;
    gigs.push({ gigId: gigId.toString(), status: gig.status, amount: gig.amount.toString(), asset: gig.asset, client: gig.client, provider: gig.provider, deadline: gig.deadline.toString(), windowEndsAt: gig.windowEndsAt.toString(), ...(role ? { role } : {}) });
    const when = gig.status === "Delivered" ? `dispute window ends ${formatMoment(gig.windowEndsAt, now)}` : gig.status === "Funded" || gig.status === "Accepted" ? `due ${formatMoment(gig.deadline, now)}` : "";
    out.lines.push(`gig ${gigId}  ${gig.status.padEnd(9)} ${formatAmount(gig.amount, unit)}${role ? ` (you: ${role})` : ""}${when ? `, ${when}` : ""}`);
  }
  if (gigs.length === 0) out.lines.push(who ? `${who} takes part in no gig on the GigEscrow at ${gigEscrow}.` : `The GigEscrow at ${gigEscrow} holds no gigs.`);
  Object.assign(out.result, { gigEscrow, ...(who ? { address: who } : {}), gigs });
}

async function runCases(values: Values, out: Out): Promise<void> {
  const mine = Boolean(values.mine);
  const who = mine ? subjectAddress(values) : undefined;
  checkOverride(values, "dispute-manager", "IOI_DISPUTE_MANAGER");
  const { publicClient } = await rpcClients(values);
  const { address: disputeManager, fromBlock: deployedAt } = await deployedContract(values, publicClient, "dispute-manager", "IOI_DISPUTE_MANAGER", "DisputeManager");
  const fromBlock = uint(values, "from-block", "the first block to scan", deployedAt);
  const opened = await pagedEvents(values, publicClient, fromBlock, (from, to) =>
    publicClient.getContractEvents({ address: disputeManager, abi: disputeManagerAbi, eventName: "CaseOpened", fromBlock: from, toBlock: to, strict: true }),
  );
  const now = await nowOnChain(publicClient);
  const cases = [];
  for (const log of opened) {
    const { caseId, challenger, respondent } = log.args;
    const role = who ? (isAddressEqual(challenger, who) ? "challenger" : isAddressEqual(respondent, who) ? "respondent" : undefined) : undefined;
    if (who && !role) continue;
    const c = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "caseOf", args: [caseId] });
    const status = CASE_STATUSES[c.status] ?? `status ${c.status}`;
    cases.push({ caseId, status, kind: log.args.kind, subjectId: log.args.subjectId, challenger, respondent, value: log.args.value.toString(), deadline: c.deadline.toString(), ...(role ? { role } : {}) });
    out.lines.push(`case ${caseId}  ${status}${role ? ` (you: ${role})` : ""}, deadline ${formatMoment(BigInt(c.deadline), now)}`);
  }
  if (cases.length === 0) out.lines.push(who ? `${who} is party to no case on the DisputeManager at ${disputeManager}.` : `The DisputeManager at ${disputeManager} has no cases.`);
  Object.assign(out.result, { disputeManager, ...(who ? { address: who } : {}), cases });
}

/** Top-level money and listing commands. */
export const MONEY_COMMANDS: Record<string, Command> = {
  deposit: {
    summary: "top up an open channel from the acting key (anyone may; refunds still go to the funder)",
    usage: "ioi deposit --session ID --amount WEI [--min-received WEI]",
    notes: ["  --amount WEI  a whole number of wei, or with its unit: 0.5eth, 20gwei"],
    examples: ["ioi deposit --session 0x… --amount 0.5eth", "ioi deposit --session 0x… --amount 1000000 --min-received 1000000 --json"],
    options: { session: { type: "string" }, amount: { type: "string" }, "min-received": { type: "string" } },
    run: runDeposit,
  },
  balance: {
    summary: "wallet, each stored channel's deposit, paid and remaining, claimable payouts, provider bond, arbitrator stake",
    usage: "ioi balance [--address ADDR]",
    examples: ["ioi balance", "ioi balance --address 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 --json"],
    options: { address: { type: "string" } },
    run: runBalance,
  },
  channels: {
    summary: "list the store's channels with their on-chain phase and the time left in any window",
    usage: "ioi channels [--db PATH | --db postgres://…]",
    examples: ["ioi channels --db .data/provider.db"],
    options: {},
    run: runChannels,
  },
  gigs: {
    summary: "list gigs from the GigEscrow's logs; --mine: those the acting key funded, may take or accepted",
    usage: "ioi gigs [--mine] [--address ADDR] [--from-block N]",
    examples: ["ioi gigs --mine"],
    options: { mine: { type: "boolean" }, address: { type: "string" }, "from-block": { type: "string" } },
    run: runGigs,
  },
  cases: {
    summary: "list dispute cases from the DisputeManager's logs; --mine: those the acting key is party to",
    usage: "ioi cases [--mine] [--address ADDR] [--from-block N]",
    examples: ["ioi cases --mine --json"],
    options: { mine: { type: "boolean" }, address: { type: "string" }, "from-block": { type: "string" } },
    run: runCases,
  },
};
