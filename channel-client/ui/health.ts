/**
 * The page's health panel (issue 29 item 8): the acting key's wallet (ETH, LGAS), its provider bond and arbitrator
 * stake against the registry's minimums, what the escrows and the DisputeManager hold claimable for it, the chain
 * head and how long since it advanced, the daemons the page can see (the node's `/metrics`), alerts, and explorer
 * links.
 *
 * Pure core, imperative shell (STYLE 20): `deriveAlerts` and `explorerFor` / `explorerLinks` decide from readings
 * alone; `readHealth` does the reads. The server formats every amount (`money`, decision 0024); the page only shows.
 */
import { erc20Abi, zeroAddress, type Address, type Hex, type PublicClient } from "viem";

import { disputeManagerAbi } from "../../arbitration/runner/chain";
import { providerRegistryAbi } from "../abi/ProviderRegistry";
import { gasEscrowAbi } from "../chain/escrow";
import { gigEscrowAbi } from "../chain/gig";
import { BaseError } from "../core/errors";
import { ETH_UNIT, type AssetUnit } from "../core/format";
import type { ChannelStore } from "../store/store";
import { money, unitOf, type Money } from "./money";

export class ExplorerUrlError extends BaseError {
  override name = "ExplorerUrlError" as const;
}

/*//////////////////////////////////////////////////////////////
                          EXPLORER LINKS
//////////////////////////////////////////////////////////////*/

/** Block explorers by chain id (Etherscan-style `/address/` and `/tx/` paths). Devnets (31337, 1337) have none. */
export const EXPLORERS: Readonly<Record<number, string>> = {
  1: "https://etherscan.io",
  11155111: "https://sepolia.etherscan.io",
  17000: "https://holesky.etherscan.io",
  10: "https://optimistic.etherscan.io",
  11155420: "https://sepolia-optimism.etherscan.io",
  8453: "https://basescan.org",
  84532: "https://sepolia.basescan.org",
  42161: "https://arbiscan.io",
  421614: "https://sepolia.arbiscan.io",
  137: "https://polygonscan.com",
};

/**
 * The explorer's base URL for a chain: `configured` (IOI_EXPLORER_URL) wins, else the table, else none.
 * A configured value that is not an http(s) URL is refused with one sentence.
 */
export function explorerFor(chainId: number, configured?: string): string | null {
  if (configured !== undefined && configured !== "") {
    if (!/^https?:\/\/[^\s"'<>]+$/.test(configured)) {
      throw new ExplorerUrlError(`IOI_EXPLORER_URL must be an http(s) URL such as https://sepolia.etherscan.io; received "${configured.slice(0, 80)}".`);
    }
    return configured.replace(/\/+$/, "");
  }
  return DEVNET_CHAIN_IDS.has(chainId) ? null : (EXPLORERS[chainId] ?? null);
}

export const addressLink = (base: string | null, address: Address): string | null => (base === null ? null : `${base}/address/${address}`);
export const txLink = (base: string | null, hash: Hex): string | null => (base === null ? null : `${base}/tx/${hash}`);

/*//////////////////////////////////////////////////////////////
                              ALERTS
//////////////////////////////////////////////////////////////*/

export type Alert = { kind: "window-closing" | "bond-below-minimum" | "stake-below-minimum" | "unclaimed" | "chain-stalled"; severity: "warning" | "critical"; subject: string; message: string };

export type BondReading = { registered: boolean; active: bigint; pending: bigint; unlockAt: bigint; locks: bigint; minimum: bigint };

export type AlertInputs = {
  /** Closing channels of the store: seconds left in their challenge window (already ≥ 0). */
  windows: { sessionId: Hex; secondsLeft: number }[];
  /** Alert when a window closes within this many seconds. */
  windowAlertSeconds: number;
  provider: BondReading | null;
  arbitrator: BondReading | null;
  /** Formatted for the message: the same text the panel shows. */
  providerText?: { active: string; minimum: string };
  arbitratorText?: { active: string; minimum: string };
  claimable: { where: string; amount: bigint; text: string }[];
  /** Seconds since the page saw the head change, and the threshold past which the chain counts as stopped (null: never). */
  secondsSinceAdvance: number;
  stallSeconds: number | null;
  head: bigint;
};

/** Alerts from chain state; a pure function of its readings. */
export function deriveAlerts(i: AlertInputs): Alert[] {
  const alerts: Alert[] = [];
  for (const w of i.windows) {
    if (w.secondsLeft <= i.windowAlertSeconds) {
      alerts.push({
        kind: "window-closing",
        severity: "critical",
        subject: w.sessionId,
        message:
          w.secondsLeft === 0
            ? `The challenge window of channel ${w.sessionId} has ended: finalize it.`
            : `The challenge window of channel ${w.sessionId} closes in ${Math.ceil(w.secondsLeft / 60)} min.`,
      });
    }
  }
  if (i.provider?.registered && i.provider.active < i.provider.minimum) {
    alerts.push({
      kind: "bond-below-minimum",
      severity: "critical",
      subject: "provider",
      message: `The provider bond (${i.providerText?.active ?? i.provider.active} active) is below the minimum of ${i.providerText?.minimum ?? i.provider.minimum}: the provider is not active.`,
    });
  }
  if (i.arbitrator?.registered && i.arbitrator.active < i.arbitrator.minimum) {
    alerts.push({
      kind: "stake-below-minimum",
      severity: "critical",
      subject: "arbitrator",
      message: `The arbitrator stake (${i.arbitratorText?.active ?? i.arbitrator.active} active) is below the minimum of ${i.arbitratorText?.minimum ?? i.arbitrator.minimum}: no draw picks it.`,
    });
  }
  for (const c of i.claimable) {
    if (c.amount > 0n) alerts.push({ kind: "unclaimed", severity: "warning", subject: c.where, message: `${c.text} waits to be claimed in the ${c.where}.` });
  }
  if (i.stallSeconds !== null && i.secondsSinceAdvance >= i.stallSeconds) {
    alerts.push({ kind: "chain-stalled", severity: "warning", subject: "chain", message: `The chain head (block ${i.head}) has not advanced for ${i.secondsSinceAdvance} s.` });
  }
  return alerts;
}

/*//////////////////////////////////////////////////////////////
                              READS
//////////////////////////////////////////////////////////////*/

export type BondView = {
  registered: boolean;
  active: Money;
  pending: Money;
  minimum: Money;
  /** Unix seconds when a pending unbond can be withdrawn; "0" when none is pending. */
  unlockAt: string;
  locks: string;
  belowMinimum: boolean;
};

export type DaemonView = { name: string; url: string | null; status: "up" | "down" | "not configured"; detail: string; figures: Record<string, number> };

export type HealthView = {
  account: Address | null;
  accountLink: string | null;
  chain: { chainId: number; head: string; headTimestamp: string; secondsSinceAdvance: number; blockAgeSeconds: number; stallSeconds: number | null };
  wallet: { eth: Money; lgas: Money } | null;
  bondToken: Address | null;
  registry: Address | null;
  provider: BondView | null;
  arbitrator: BondView | null;
  claimable: { where: string; contract: Address; link: string | null; amount: Money }[];
  daemons: DaemonView[];
  alerts: Alert[];
  explorer: string | null;
  contracts: { name: string; address: Address; link: string | null }[];
};

export type HealthParameters = {
  store: ChannelStore;
  publicClient: PublicClient;
  escrow: Address;
  disputeManager?: Address;
  gigEscrow?: Address;
  account?: Address;
  metricsUrl?: string;
  explorer: string | null;
  /** Alert when a channel's window closes within this many minutes (default 60). */
  windowAlertMinutes?: number;
  /**
   * The chain counts as stopped after this many seconds without a new head (default 120; on a devnet — chain id
   * 31337 or 1337, which mines only when sent a transaction — no default: an idle devnet is not a stopped chain).
   */
  stallSeconds?: number;
};

/** Chain ids of local devnets (Hardhat, Ganache/Geth dev): no explorer, and blocks only on demand. */
export const DEVNET_CHAIN_IDS: ReadonlySet<number> = new Set([31337, 1337]);

/** What the page remembers between reads: when it last saw the head change. */
export type HeadWatch = { head: bigint; seenAt: number } | undefined;

const METRIC_FIGURES = ["ioi_open_sessions", "ioi_tickets_total", "ioi_watchtower_lag_blocks", "ioi_chain_rpc_errors_total"];

/** Unlabelled samples (and labelled ones summed) of the metrics the panel shows. */
export function metricFigures(text: string): Record<string, number> {
  const figures: Record<string, number> = {};
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const match = /^([a-z_]+)(\{[^}]*\})? ([-+0-9.eE]+|NaN)$/.exec(line.trim());
    if (!match || !METRIC_FIGURES.includes(match[1]!)) continue;
    const value = Number(match[3]);
    if (Number.isFinite(value)) figures[match[1]!] = (figures[match[1]!] ?? 0) + value;
  }
  return figures;
}

async function daemonOf(metricsUrl: string | undefined): Promise<DaemonView> {
  const name = "node metrics";
  if (!metricsUrl) return { name, url: null, status: "not configured", detail: "not configured: start ioi ui with --metrics-url (ioi provider --metrics)", figures: {} };
  try {
    const response = await fetch(metricsUrl, { signal: AbortSignal.timeout(2000) });
    if (!response.ok) return { name, url: metricsUrl, status: "down", detail: `answered HTTP ${response.status}`, figures: {} };
    return { name, url: metricsUrl, status: "up", detail: "answering", figures: metricFigures(await response.text()) };
  } catch (error) {
    return { name, url: metricsUrl, status: "down", detail: `unreachable: ${(error as Error).message.split("\n")[0]}`, figures: {} };
  }
}

/** Reads everything the panel shows; `watch` is updated with the head it saw. */
export async function readHealth(p: HealthParameters, watch: { current: HeadWatch }, nowMs = Date.now()): Promise<HealthView> {
  const { publicClient } = p;
  const [chainId, block] = await Promise.all([publicClient.getChainId(), publicClient.getBlock()]);
  if (!watch.current || watch.current.head !== block.number) watch.current = { head: block.number, seenAt: nowMs };
  const secondsSinceAdvance = Math.floor((nowMs - watch.current.seenAt) / 1000);
  const blockAgeSeconds = Math.max(0, Math.floor(nowMs / 1000) - Number(block.timestamp));

  const registry = (await publicClient.readContract({ address: p.escrow, abi: gasEscrowAbi, functionName: "registry" }).catch(() => undefined)) as Address | undefined;
  const bondToken = registry ? await publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondToken" }) : undefined;
  const bondUnit: AssetUnit = bondToken ? await unitOf(publicClient, bondToken) : ETH_UNIT;
  const account = p.account ?? null;

  let wallet: HealthView["wallet"] = null;
  let provider: BondView | null = null;
  let arbitrator: BondView | null = null;
  let providerReading: BondReading | null = null;
  let arbitratorReading: BondReading | null = null;
  const claimable: HealthView["claimable"] = [];
  const claimableReadings: AlertInputs["claimable"] = [];
  if (account) {
    const [eth, lgas] = await Promise.all([
      publicClient.getBalance({ address: account }),
      bondToken ? publicClient.readContract({ address: bondToken, abi: erc20Abi, functionName: "balanceOf", args: [account] }) : Promise.resolve(0n),
    ]);
    wallet = { eth: money(eth, zeroAddress, ETH_UNIT), lgas: money(lgas, bondToken ?? zeroAddress, bondUnit) };
    if (registry && bondToken) {
      const [minProvider, minArbitrator] = await Promise.all([
        publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "minProviderBond" }),
        publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "minArbitratorStake" }),
      ]);
      const bondOf = async (role: 0 | 1, minimum: bigint): Promise<[BondReading, BondView]> => {
        const [registered, bond, locks] = await Promise.all([
          publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "isRegistered", args: [role, account] }),
          publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "bondOf", args: [role, account] }),
          publicClient.readContract({ address: registry, abi: providerRegistryAbi, functionName: "locksOf", args: [role, account] }),
        ]);
        const reading: BondReading = { registered, active: bond.active, pending: bond.pending, unlockAt: BigInt(bond.unlockAt), locks, minimum };
        return [
          reading,
          {
            registered,
            active: money(bond.active, bondToken, bondUnit),
            pending: money(bond.pending, bondToken, bondUnit),
            minimum: money(minimum, bondToken, bondUnit),
            unlockAt: bond.unlockAt.toString(),
            locks: locks.toString(),
            belowMinimum: registered && bond.active < minimum,
          },
        ];
      };
      [[providerReading, provider], [arbitratorReading, arbitrator]] = await Promise.all([bondOf(0, minProvider), bondOf(1, minArbitrator)]);
    }
    // Claimable in ETH, the bond token and every asset of the store's channels.
    const assets = new Map<string, Address>([[zeroAddress, zeroAddress]]);
    if (bondToken) assets.set(bondToken.toLowerCase(), bondToken);
    for (const c of p.store.listChannels()) assets.set(c.ref.terms.asset.toLowerCase(), c.ref.terms.asset);
    const holders: { where: string; contract: Address; read: (asset: Address) => Promise<bigint> }[] = [
      { where: "GasEscrow", contract: p.escrow, read: (asset) => publicClient.readContract({ address: p.escrow, abi: gasEscrowAbi, functionName: "claimableOf", args: [asset, account] }) },
    ];
    if (p.gigEscrow) {
      const gig = p.gigEscrow;
      holders.push({ where: "GigEscrow", contract: gig, read: (asset) => publicClient.readContract({ address: gig, abi: gigEscrowAbi, functionName: "claimableOf", args: [asset, account] }) });
    }
    if (p.disputeManager) {
      const dm = p.disputeManager;
      holders.push({ where: "DisputeManager", contract: dm, read: (asset) => publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "claimable", args: [asset, account] }) });
    }
    for (const holder of holders) {
      for (const asset of assets.values()) {
        const amount = await holder.read(asset);
        const shown = money(amount, asset, await unitOf(publicClient, asset));
        claimable.push({ where: holder.where, contract: holder.contract, link: addressLink(p.explorer, holder.contract), amount: shown });
        claimableReadings.push({ where: holder.where, amount, text: shown.text });
      }
    }
  }

  // Closing channels of the store whose window runs out soon (chain time).
  const windows: AlertInputs["windows"] = [];
  for (const c of p.store.listChannels()) {
    if (c.status === "settled") continue;
    const closing = p.store.getClosing(c.sessionId);
    if (!closing) continue;
    const phase = await publicClient.readContract({ address: p.escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [c.sessionId] });
    if (phase !== 2 && phase !== 3) continue; // only a channel the escrow still holds as Closing or Finalizable
    windows.push({ sessionId: c.sessionId, secondsLeft: Number(closing.finalizesAt > block.timestamp ? closing.finalizesAt - block.timestamp : 0n) });
  }

  const daemons = [await daemonOf(p.metricsUrl)];
  const alerts = deriveAlerts({
    windows,
    windowAlertSeconds: (p.windowAlertMinutes ?? 60) * 60,
    provider: providerReading,
    arbitrator: arbitratorReading,
    ...(provider ? { providerText: { active: provider.active.text, minimum: provider.minimum.text } } : {}),
    ...(arbitrator ? { arbitratorText: { active: arbitrator.active.text, minimum: arbitrator.minimum.text } } : {}),
    claimable: claimableReadings,
    secondsSinceAdvance,
    stallSeconds: p.stallSeconds ?? (DEVNET_CHAIN_IDS.has(chainId) ? null : 120),
    head: block.number,
  });
  const contracts = [
    { name: "GasEscrow", address: p.escrow },
    ...(p.gigEscrow ? [{ name: "GigEscrow", address: p.gigEscrow }] : []),
    ...(p.disputeManager ? [{ name: "DisputeManager", address: p.disputeManager }] : []),
    ...(registry ? [{ name: "ProviderRegistry", address: registry }] : []),
    ...(bondToken ? [{ name: bondUnit.symbol, address: bondToken }] : []),
  ].map((c) => ({ ...c, link: addressLink(p.explorer, c.address) }));
  return {
    account,
    accountLink: account ? addressLink(p.explorer, account) : null,
    chain: { chainId, head: block.number.toString(), headTimestamp: block.timestamp.toString(), secondsSinceAdvance, blockAgeSeconds, stallSeconds: p.stallSeconds ?? (DEVNET_CHAIN_IDS.has(chainId) ? null : 120) },
    wallet,
    bondToken: bondToken ?? null,
    registry: registry ?? null,
    provider,
    arbitrator,
    claimable,
    daemons,
    alerts,
    explorer: p.explorer,
    contracts,
  };
}
