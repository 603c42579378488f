/**
 * Governance through the Timelock: every governance call of a deployment (admitting or removing an
 * arbitrator, dispute parameters, asset terms, fees) is scheduled on the timelock by its proposer, waits out
 * the delay in public, and is then executed. Calls are scheduled as one batch operation (one id), identified
 * by a salt so the same calls can be scheduled again later.
 *
 *   IOI_TIMELOCK_CALLS='[{"target":"0x…","data":"0x…"}]' IOI_TIMELOCK_STEP=schedule|execute|all \
 *     npx hardhat run scripts/timelock.ts --network localhost
 *
 * The timelock is read from `deployments/<network>.json`. On chain 31337 `all` (the default there) schedules,
 * advances the clock past the delay with `evm_increaseTime` and executes; elsewhere schedule first and execute
 * once the delay has passed (the default step there is `schedule`; IOI_TIMELOCK_SALT must match between them).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { encodeFunctionData, type Abi, getAddress, isAddress, isHex, keccak256, parseEventLogs, stringToBytes, zeroHash, type Address, type Hash, type Hex, type PublicClient } from "viem";

import { timelockAbi } from "../channel-client/abi/Timelock";
import type { Wallet } from "../channel-client/chain/escrow";

export { timelockAbi };

/** One governance call: `data` sent to `target` with `value` wei. */
export type GovernanceCall = { target: Address; data: Hex; value?: bigint };

export type GovernThroughTimelockParameters = {
  publicClient: PublicClient;
  /** The timelock's proposer (and, to execute, its executor). */
  wallet: Wallet;
  timelock: Address;
  calls: readonly GovernanceCall[];
  /** Distinguishes this operation from an identical earlier one. */
  salt: string;
  /** Waits out `seconds` (the devnet: {@link hardhatTimeTravel}); without it the operation is only scheduled. */
  wait?: (seconds: bigint) => Promise<void>;
};

export type GovernThroughTimelockReturnType = {
  id: Hex;
  scheduled: Hash;
  /** When the operation becomes executable (unix seconds). */
  readyAt: bigint;
  /** The execution's transaction, if it was executed. */
  executed?: Hash;
};

function batchArgs(calls: readonly GovernanceCall[], salt: string) {
  return [
    calls.map((c) => c.target),
    calls.map((c) => c.value ?? 0n),
    calls.map((c) => c.data),
    zeroHash,
    keccak256(stringToBytes(salt)),
  ] as const;
}

async function confirmed(publicClient: PublicClient, hash: Hash, what: string) {
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success") throw new Error(`${what} reverted in transaction ${hash}.`);
  return receipt;
}

/** Schedules `calls` as one operation on the timelock. */
export async function scheduleCalls(p: Omit<GovernThroughTimelockParameters, "wait">): Promise<GovernThroughTimelockReturnType> {
  const delay = await p.publicClient.readContract({ address: p.timelock, abi: timelockAbi, functionName: "getMinDelay" });
  const [targets, values, payloads, predecessor, salt] = batchArgs(p.calls, p.salt);
  const hash = await p.wallet.writeContract({
    address: p.timelock,
    abi: timelockAbi,
    functionName: "scheduleBatch",
    args: [targets, values, payloads, predecessor, salt, delay],
  });
  const receipt = await confirmed(p.publicClient, hash, "Timelock.scheduleBatch");
  const [event] = parseEventLogs({ abi: timelockAbi, eventName: "CallScheduled", logs: receipt.logs });
  if (!event) throw new Error(`Transaction ${hash} scheduled nothing.`);
  const block = await p.publicClient.getBlock({ blockNumber: receipt.blockNumber });
  return { id: event.args.id, scheduled: hash, readyAt: block.timestamp + delay };
}

/** Executes the operation of `calls` and `salt`, once its delay has passed. */
export async function executeCalls(p: Omit<GovernThroughTimelockParameters, "wait">): Promise<Hash> {
  const [targets, values, payloads, predecessor, salt] = batchArgs(p.calls, p.salt);
  const value = p.calls.reduce((sum, c) => sum + (c.value ?? 0n), 0n);
  const hash = await p.wallet.writeContract({
    address: p.timelock,
    abi: timelockAbi,
    functionName: "executeBatch",
    args: [targets, values, payloads, predecessor, salt],
    value,
  });
  await confirmed(p.publicClient, hash, "Timelock.executeBatch");
  return hash;
}

/** Schedules `calls`; with `wait`, waits out the delay and executes them. */
export async function governThroughTimelock(p: GovernThroughTimelockParameters): Promise<GovernThroughTimelockReturnType> {
  const scheduled = await scheduleCalls(p);
  if (!p.wait) return scheduled;
  const now = (await p.publicClient.getBlock()).timestamp;
  if (scheduled.readyAt > now) await p.wait(scheduled.readyAt - now);
  return { ...scheduled, executed: await executeCalls(p) };
}

/** On a Hardhat devnet: advances the clock by `seconds` and mines a block. */
export function hardhatTimeTravel(publicClient: PublicClient): (seconds: bigint) => Promise<void> {
  const rpc = publicClient as unknown as { request(args: { method: string; params: unknown[] }): Promise<unknown> };
  return async (seconds) => {
    await rpc.request({ method: "evm_increaseTime", params: [Number(seconds)] });
    await rpc.request({ method: "evm_mine", params: [] });
  };
}

/** `ProviderRegistry.admitArbitrator(account)` for each account, as timelock calls. */
export function admitArbitratorCalls(registry: Address, accounts: readonly Address[], registryAbi: Abi): GovernanceCall[] {
  return accounts.map((account) => ({ target: registry, data: encodeFunctionData({ abi: registryAbi, functionName: "admitArbitrator", args: [account] }) }));
}

function callsFromEnv(): GovernanceCall[] {
  const raw = process.env.IOI_TIMELOCK_CALLS;
  if (!raw) throw new Error('IOI_TIMELOCK_CALLS must hold a JSON array of {"target": ADDRESS, "data": HEX} calls.');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error("IOI_TIMELOCK_CALLS is not JSON; it must hold an array of {target, data} calls.");
  }
  if (!Array.isArray(parsed) || parsed.length === 0) throw new Error("IOI_TIMELOCK_CALLS must be a non-empty array of {target, data} calls.");
  return parsed.map((c: { target?: unknown; data?: unknown; value?: unknown }, i) => {
    if (typeof c?.target !== "string" || !isAddress(c.target)) throw new Error(`IOI_TIMELOCK_CALLS[${i}].target must be an address.`);
    if (typeof c.data !== "string" || !isHex(c.data)) throw new Error(`IOI_TIMELOCK_CALLS[${i}].data must be 0x-prefixed hex calldata.`);
    if (c.value !== undefined && (typeof c.value !== "string" || !/^\d+$/.test(c.value))) throw new Error(`IOI_TIMELOCK_CALLS[${i}].value must be a decimal string of wei.`);
    return { target: getAddress(c.target), data: c.data, value: c.value === undefined ? 0n : BigInt(c.value) };
  });
}

async function main(): Promise<void> {
  const hre = (await import("hardhat")).default;
  const publicClient = (await hre.viem.getPublicClient()) as unknown as PublicClient;
  const [wallet] = (await hre.viem.getWalletClients()) as unknown as Wallet[];
  const chainId = await publicClient.getChainId();
  const name = hre.network.name === "remote" ? `chain-${chainId}` : hre.network.name;
  const file = path.join(__dirname, "..", "deployments", `${name}.json`);
  const { timelock } = JSON.parse(readFileSync(file, "utf8")) as { timelock: Address };
  const step = process.env.IOI_TIMELOCK_STEP ?? (chainId === 31337 ? "all" : "schedule");
  const p = { publicClient, wallet: wallet!, timelock, calls: callsFromEnv(), salt: process.env.IOI_TIMELOCK_SALT ?? "scripts/timelock.ts" };
  if (step === "schedule") {
    const s = await scheduleCalls(p);
    console.log(`Scheduled operation ${s.id} (transaction ${s.scheduled}); executable from ${new Date(Number(s.readyAt) * 1000).toISOString()}.`);
  } else if (step === "execute") {
    console.log(`Executed (transaction ${await executeCalls(p)}).`);
  } else if (step === "all") {
    if (chainId !== 31337) throw new Error(`IOI_TIMELOCK_STEP=all advances the clock and runs only on chain 31337; this is chain ${chainId}.`);
    const s = await governThroughTimelock({ ...p, wait: hardhatTimeTravel(publicClient) });
    console.log(`Scheduled operation ${s.id}, advanced the clock past the delay and executed it (transaction ${s.executed}).`);
  } else throw new Error(`IOI_TIMELOCK_STEP must be schedule, execute or all; received "${step}".`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
