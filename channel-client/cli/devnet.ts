/**
 * Devnet conveniences (issue 29 item 6, decision 0019 amendment): `ioi faucet` funds an address with ETH and
 * LaborGas, `ioi devnet time` moves the chain clock and mines a block. Both act only on a known devnet — the
 * RPC's chain id must be one of {@link DEVNET_CHAIN_IDS} — and the faucet also only where the chain's deployment
 * record names a LaborGas that holds code and answers as LaborGas. Anything else is refused with one sentence
 * before anything is sent.
 */
import { encodeFunctionData, erc20Abi, formatEther, getAddress, parseEther, type Address, type PublicClient } from "viem";

import { laborGasAbi } from "../abi/LaborGas";
import { contractOf } from "../chain/deployment";
import { cliDeployment, rpcClients } from "./chain";
import { addressOption, UsageError, type Command, type CommandGroup } from "./common";

/** Chain ids of the devnets this project runs: Hardhat and Anvil (31337), the second test devnet (31338), Ganache and geth --dev (1337). */
export const DEVNET_CHAIN_IDS: readonly number[] = [31337, 31338, 1337];

type Rpc = { request(args: { method: string; params: unknown[] }): Promise<unknown> };

/** Refuses a chain id that is not a known devnet. */
export function assertDevnet(chainId: number, what: string): void {
  if (!DEVNET_CHAIN_IDS.includes(chainId)) {
    throw new UsageError(`${what} runs only on a devnet (chain ${DEVNET_CHAIN_IDS.join(", ")}), and this RPC serves chain ${chainId}; nothing was sent.`);
  }
}

/** A positive decimal amount in whole tokens with at most 18 decimals ("10", "0.5"), as base units. */
export function tokenAmount(values: Record<string, unknown>, name: string, fallback: string): bigint {
  const text = ((values[name] as string | undefined) ?? fallback).trim();
  if (!/^(0|[1-9][0-9]*)(\.[0-9]{1,18})?$/.test(text)) throw new UsageError(`--${name} must be a decimal amount such as 10 or 0.5; received "${text}".`);
  return parseEther(text);
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3_600, d: 86_400, w: 604_800 };

/** "+3600", "+2h", "+1d", "90m" → seconds (a positive whole number, at most 10 years). */
export function parseDuration(text: string | undefined): number {
  const match = /^\+?([1-9][0-9]*)([smhdw]?)$/.exec((text ?? "").trim());
  if (!match) throw new UsageError(`The time to add must be like +3600, +90m, +2h, +1d or +1w; received "${text ?? ""}".`);
  const seconds = Number(match[1]) * UNITS[match[2] || "s"]!;
  if (!Number.isSafeInteger(seconds) || seconds > 10 * 365 * 86_400) throw new UsageError(`The time to add must be at most 10 years; received "${text}".`);
  return seconds;
}

/** The chain's LaborGas from its deployment record, checked to hold code and to be LaborGas (symbol LGAS). */
async function devnetLaborGas(values: Record<string, unknown>, publicClient: PublicClient, chainId: number): Promise<Address> {
  const deployment = await cliDeployment(values, publicClient);
  const token = contractOf(deployment, "LaborGas");
  const code = await publicClient.getCode({ address: token });
  if (!code || code === "0x") throw new UsageError(`The deployment record names LaborGas ${token}, which holds no code on chain ${chainId}; nothing was sent.`);
  const symbol = await publicClient.readContract({ address: token, abi: erc20Abi, functionName: "symbol" }).catch(() => undefined);
  if (symbol !== "LGAS") throw new UsageError(`The contract at ${token} on chain ${chainId} is not LaborGas (symbol ${JSON.stringify(symbol ?? null)}); nothing was sent.`);
  return token;
}

export const FAUCET_COMMAND: Command = {
  summary: "devnet only: fund an address with ETH and LaborGas",
  usage: "ioi faucet --to ADDR [--eth N] [--lgas N] [--rpc URL]",
  notes: [
    "  Adds exactly --eth ETH (default 10; hardhat_setBalance) and mints exactly --lgas LGAS (default 1000) to --to,",
    "  as LaborGas's owner (impersonated). Refused unless the RPC's chain id is a devnet's (31337, 31338, 1337) and",
    "  the chain's deployment record names a LaborGas with code there. --eth 0 or --lgas 0 skips that asset.",
  ],
  examples: ["ioi faucet --to 0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "ioi faucet --to 0x7099…79C8 --eth 1 --lgas 5000 --json"],
  options: { to: { type: "string" }, eth: { type: "string" }, lgas: { type: "string" } },
  async run(values, out) {
    const to = addressOption(values, "to", "the address to fund");
    const eth = tokenAmount(values, "eth", "10");
    const lgas = tokenAmount(values, "lgas", "1000");
    const { publicClient, chainId } = await rpcClients(values);
    assertDevnet(chainId, "ioi faucet");
    const token = await devnetLaborGas(values, publicClient, chainId);
    const rpc = publicClient as unknown as Rpc;
    if (eth > 0n) {
      const balance = await publicClient.getBalance({ address: to });
      await rpc.request({ method: "hardhat_setBalance", params: [to, `0x${(balance + eth).toString(16)}`] });
      // Mined, so that the new balance is in a block (and a follower reading "latest" sees it).
      await rpc.request({ method: "evm_mine", params: [] });
    }
    if (lgas > 0n) {
      const owner = getAddress(await publicClient.readContract({ address: token, abi: laborGasAbi, functionName: "owner" }));
      await rpc.request({ method: "hardhat_impersonateAccount", params: [owner] });
      try {
        const data = encodeFunctionData({ abi: laborGasAbi, functionName: "mint", args: [to, lgas] });
        const hash = (await rpc.request({ method: "eth_sendTransaction", params: [{ from: owner, to: token, data }] })) as `0x${string}`;
        const receipt = await publicClient.waitForTransactionReceipt({ hash });
        if (receipt.status !== "success") throw new Error(`LaborGas.mint reverted in transaction ${hash}.`);
      } finally {
        await rpc.request({ method: "hardhat_stopImpersonatingAccount", params: [owner] });
      }
    }
    const [ethBalance, lgasBalance] = await Promise.all([
      publicClient.getBalance({ address: to }),
      publicClient.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [to] }),
    ]);
    out.lines.push(`Funded ${to} on chain ${chainId} with ${formatEther(eth)} ETH and ${formatEther(lgas)} LGAS; it now holds ${formatEther(ethBalance)} ETH and ${formatEther(lgasBalance)} LGAS.`);
    out.result = { chainId, to, eth: eth.toString(), lgas: lgas.toString(), ethBalance: ethBalance.toString(), lgasBalance: lgasBalance.toString(), laborGas: token };
  },
};

export const DEVNET_TIME_COMMAND: Command & { operand: string } = {
  summary: "devnet only: move the chain clock forward and mine a block",
  usage: "ioi devnet time +DURATION [--rpc URL]",
  operand: "duration",
  notes: ["  DURATION: seconds (+3600) or with a unit: s, m, h, d, w (+90m, +2h, +1d). Refused unless the RPC's chain id is a devnet's."],
  examples: ["ioi devnet time +1d", "ioi devnet time +3600 --json"],
  options: { duration: { type: "string" } },
  async run(values, out) {
    const seconds = parseDuration(values.duration as string | undefined);
    const { publicClient, chainId } = await rpcClients(values);
    assertDevnet(chainId, "ioi devnet time");
    const before = await publicClient.getBlock();
    const rpc = publicClient as unknown as Rpc;
    // The next block is stamped exactly `seconds` after the latest one (evm_increaseTime would add the
    // wall-clock time since then too); later blocks keep counting from it.
    await rpc.request({ method: "evm_setNextBlockTimestamp", params: [Number(before.timestamp) + seconds] });
    await rpc.request({ method: "evm_mine", params: [] });
    const after = await publicClient.getBlock({ blockTag: "latest" });
    out.lines.push(`Chain ${chainId}: block ${after.number} at ${new Date(Number(after.timestamp) * 1000).toISOString()} (+${after.timestamp - before.timestamp} s since block ${before.number}).`);
    out.result = { chainId, seconds, block: after.number!.toString(), timestamp: after.timestamp.toString(), previousTimestamp: before.timestamp.toString() };
  },
};

export const DEVNET_GROUP: CommandGroup = {
  summary: "devnet only: move the clock (ioi devnet --help)",
  commands: { time: DEVNET_TIME_COMMAND },
};
