/**
 * What every `ioi` command set shares: the usage error, the command table type, the global options, and the
 * small labelled assertions that turn a command-line value into a typed one. Nothing here imports a command
 * set, so channel-client/cli/channel.ts and channel-client/cli/arbitration.ts both import it and neither imports the other
 * (channel-client/cli/ioi.ts composes them).
 */
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import type { ParseArgsConfig } from "node:util";
import { erc20Abi, getAddress, isAddress, isHex, type Address, type Hex, type LocalAccount, type PublicClient } from "viem";
import { signingAccount } from "../core/eip712";

import { BaseError } from "../core/errors";
import { decryptKeystore, KeystoreFormatError, WrongPasswordError } from "../core/keystore";
import { keystoreDir, KeystoreFileError, readPasswordFile, resolveKey } from "../node/keystore";
import { SqliteStore } from "../store/sqlite-store";
import type { ChannelRecord, ChannelStore } from "../store/store";
import { ETH_UNIT, isNative, type AssetUnit } from "../core/format";

/** A command-line mistake: printed as one sentence with the usage, never as a stack trace. */
export class UsageError extends BaseError {
  override name = "UsageError" as const;
}

/** `exitCode`: set by a command that ran but reports a negative outcome (a mismatch, a failing vet). */
export type Out = { json: boolean; lines: string[]; result: Record<string, unknown>; exitCode?: number };

/** The options of one command, in node:util's parseArgs shape (channel-client/cli/ioi.ts turns them into commander options). */
export type CommandOptions = NonNullable<ParseArgsConfig["options"]>;

export type Command = {
  summary: string;
  usage: string;
  /** Extra lines of `--help` after the options (what the options mean, what to do next). */
  notes?: string[];
  /** Examples shown by `--help`, each one full command line. */
  examples?: string[];
  options: CommandOptions;
  run: (values: Record<string, string | boolean | undefined>, out: Out) => Promise<void>;
};

export type CommandGroup = { summary: string; commands: Record<string, Command> };

export const GLOBAL_OPTIONS = {
  rpc: { type: "string" },
  network: { type: "string" },
  deployment: { type: "string" },
  confirmations: { type: "string" },
  "log-range": { type: "string" },
  "poll-ms": { type: "string" },
  escrow: { type: "string" },
  db: { type: "string" },
  "key-env": { type: "string" },
  account: { type: "string" },
  "password-file": { type: "string" },
  json: { type: "boolean" },
} as const satisfies CommandOptions;

export const GLOBAL_HELP = [
  "  --rpc URL        EVM JSON-RPC (default $IOI_RPC_URL or http://127.0.0.1:8545)",
  "  --network NAME   read deployments/NAME.json (default $IOI_NETWORK, else the record of the RPC's chain id)",
  "  --deployment FILE  a deployment record (default $IOI_DEPLOYMENT, else deployments/chain-<chainId>.json)",
  "  --escrow ADDR    GasEscrow (default $IOI_ESCROW, else the deployment record)",
  "  --confirmations N  blocks a follower stays behind the head (default $IOI_CONFIRMATIONS; 0 on a devnet, else 12)",
  "  --log-range N    most blocks per eth_getLogs call (default $IOI_LOG_RANGE or 2000)",
  "  --poll-ms N      milliseconds between polls (default $IOI_POLL_MS; 250 on a devnet, else 12000)",
  "  --db PATH        the SQLite store (default .data/<role>.db)",
  "  --key-env NAME   environment variable holding the acting key (default IOI_PRIVATE_KEY)",
  "  --account A      sign with a keystore: an address, a name from `ioi account new --name`, or a key file's path",
  "                   (in $IOI_KEYSTORE_DIR, default ~/.ioi/keystore)",
  "  --password-file FILE  the keystore's password, the file's first line (a regular file, not empty)",
  "  --json           print one JSON object on the last line",
  "  -h, --help       this help",
];

export function need(values: Record<string, unknown>, name: string, what: string): string {
  const value = values[name];
  if (typeof value !== "string" || value.length === 0) throw new UsageError(`--${name} is required: ${what}.`);
  return value;
}

export function uint(values: Record<string, unknown>, name: string, what: string, fallback?: bigint): bigint {
  const value = values[name];
  if (value === undefined && fallback !== undefined) return fallback;
  const text = need(values, name, what);
  if (!/^(0|[1-9][0-9]*)$/.test(text)) throw new UsageError(`--${name} must be a whole number (${what}); received "${text}".`);
  return BigInt(text);
}

/** A whole number from `min` to `max` (both inclusive). */
export function boundedUint(values: Record<string, unknown>, name: string, what: string, min: bigint, max: bigint, fallback?: bigint): bigint {
  const value = uint(values, name, what, fallback);
  if (value < min || value > max) throw new UsageError(`--${name} must be from ${min} to ${max} (${what}); received ${value}.`);
  return value;
}

/**
 * An amount of wei: a whole number of wei ("5000"), or ether with its unit ("0.5eth", "1 ether"); "gwei" too.
 * A bare decimal ("0.5") is refused: it would be ambiguous between wei and ether.
 */
export function weiAmount(values: Record<string, unknown>, name: string, what: string, fallback?: bigint): bigint {
  const value = values[name];
  if (value === undefined && fallback !== undefined) return fallback;
  const text = need(values, name, what).trim().toLowerCase();
  const match = /^(0|[1-9][0-9]*)(\.[0-9]+)?\s*(wei|gwei|eth|ether)?$/.exec(text);
  if (!match || (match[2] !== undefined && (match[3] === undefined || match[3] === "wei"))) {
    throw new UsageError(`--${name} must be a whole number of wei or an amount with its unit such as 0.5eth or 20gwei (${what}); received "${values[name] as string}".`);
  }
  const decimals = match[3] === "eth" || match[3] === "ether" ? 18 : match[3] === "gwei" ? 9 : 0;
  const fraction = (match[2] ?? ".").slice(1);
  if (fraction.length > decimals) throw new UsageError(`--${name} has more decimals than the unit allows (${what}); received "${values[name] as string}".`);
  return BigInt(match[1]!) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, "0") || "0");
}

export function sessionOf(values: Record<string, unknown>): Hex {
  const session = need(values, "session", "the session id (0x and 64 hex digits)");
  if (!isHex(session) || session.length !== 66) throw new UsageError(`--session must be 0x and 64 hex digits; received "${session}".`);
  return session.toLowerCase() as Hex;
}

/**
 * The acting account, loaded in this one place for every command that signs (issue 29 item 5): `--account
 * ADDR_OR_NAME_OR_FILE` decrypts a v3 keystore (from $IOI_KEYSTORE_DIR or ~/.ioi/keystore) with the password in
 * `--password-file`; otherwise the raw key in the environment variable `--key-env` (default IOI_PRIVATE_KEY),
 * which {@link rpcClients} warns about on a chain that is not a devnet.
 */
export function loadAccount(values: Record<string, unknown>): LocalAccount {
  const accountName = values.account as string | undefined;
  if (accountName !== undefined) {
    if (values["key-env"] !== undefined) throw new UsageError("Pass either --account or --key-env, not both: they name two different keys.");
    const passwordFile = values["password-file"] as string | undefined;
    const prompted = PROMPTED_PASSWORDS.get(accountName);
    if (passwordFile === undefined && prompted === undefined) {
      throw new UsageError(`--account needs --password-file FILE: stdin is not a terminal, so the password of ${accountName} cannot be asked for.`);
    }
    let privateKey: Hex;
    try {
      const stored = resolveKey(keystoreDir(), accountName);
      privateKey = decryptKeystore(stored.keystore, passwordFile !== undefined ? readPasswordFile(passwordFile) : prompted!).privateKey;
    } catch (cause) {
      if (cause instanceof KeystoreFileError || cause instanceof KeystoreFormatError) throw new UsageError(cause.shortMessage, { cause });
      if (cause instanceof WrongPasswordError) throw new UsageError(`Wrong password for the account ${accountName}: the keystore's MAC does not match.`, { cause });
      throw cause;
    }
    return signingAccount(privateKey);
  }
  if (values["password-file"] !== undefined) throw new UsageError("--password-file goes with --account: it unlocks that keystore.");
  const name = (values["key-env"] as string | undefined) ?? "IOI_PRIVATE_KEY";
  const key = process.env[name];
  if (!key) throw new UsageError(`Set ${name} to the acting party's private key (0x and 64 hex digits), or pass --account with --password-file.`);
  if (!isHex(key) || key.length !== 66) throw new UsageError(`${name} is not a private key: it must be 0x and 64 hex digits.`);
  let account: LocalAccount;
  try {
    account = signingAccount(key);
  } catch (cause) {
    throw new UsageError(`${name} is not a valid secp256k1 private key (zero or not below the curve order).`, { cause });
  }
  RAW_ENV_KEYS.set(account, name);
  return account;
}

/** Passwords typed at the prompt for this run, by the --account name they unlock (cleared when the command ends). */
const PROMPTED_PASSWORDS = new Map<string, string>();

/**
 * Before a signing command runs: every `--account` name (a comma-separated list for `arbitrator serve`) given
 * without `--password-file` is unlocked by a password typed at the terminal, not echoed. Without a terminal on
 * stdin nothing is asked; `loadAccount` then says in one sentence that a password file is needed.
 */
export async function promptAccountPasswords(values: Record<string, unknown>): Promise<void> {
  const accounts = values.account as string | undefined;
  if (accounts === undefined || values["password-file"] !== undefined || !process.stdin.isTTY) return;
  for (const name of accounts.split(",").map((n) => n.trim()).filter((n) => n !== "")) {
    if (PROMPTED_PASSWORDS.has(name)) continue;
    const password = await promptHidden(`Password for ${name}: `);
    if (password.length === 0) throw new UsageError(`An empty password was typed for ${name}; nothing was signed.`);
    PROMPTED_PASSWORDS.set(name, password);
  }
}

/** Forgets the passwords typed for this run. */
export function forgetPromptedPasswords(): void {
  PROMPTED_PASSWORDS.clear();
}

/** Reads one line from the terminal with echo off (raw mode: nothing typed is shown). Ctrl-C cancels. */
export function promptHidden(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    // Echo off BEFORE the question shows: whatever is typed once it is visible is never echoed.
    stdin.setRawMode(true);
    stdin.resume();
    process.stderr.write(question);
    let typed = "";
    const done = (error?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off("data", onData);
      process.stderr.write("\n");
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString("utf8")) {
        if (ch === "\r" || ch === "\n") return done();
        if (ch === "\u0003") return done(new UsageError("Cancelled; nothing was written."));
        if (ch === "\u007f" || ch === "\b") typed = typed.slice(0, -1);
        else typed += ch;
      }
    };
    stdin.on("data", onData);
  });
}

/** Accounts loaded from a raw key in the environment, with the variable's name (for the non-devnet warning). */
const RAW_ENV_KEYS = new WeakMap<object, string>();

/** Chain ids on which a raw key in the environment is expected: Hardhat/Anvil, the second test devnet, Ganache/geth --dev. */
export const RAW_KEY_CHAIN_IDS: readonly number[] = [31337, 31338, 1337];

/** The one warning line for a raw environment key on a chain that is not a devnet, or undefined. */
export function rawKeyWarning(account: object | undefined, chainId: number): string | undefined {
  const name = account === undefined ? undefined : RAW_ENV_KEYS.get(account);
  if (name === undefined || RAW_KEY_CHAIN_IDS.includes(chainId)) return undefined;
  return `Warning: signing on chain ${chainId} with a raw private key from $${name}; keep keys in an encrypted keystore (\`ioi account import\`, then --account).`;
}

export function openStore(values: Record<string, unknown>, role: string): ChannelStore {
  const file = storePath(values, role);
  try {
    mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    return SqliteStore.open(file);
  } catch (cause) {
    if (cause instanceof BaseError) throw cause;
    throw new UsageError(`Cannot open the store ${file}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
  }
}

/**
 * The store of a command that reads every channel (issue 31 gaps, decision 0036): the SQLite file of `--db`, or a
 * provider fleet's PostgreSQL (`--db postgres://…`) through the factory `ioi provider` uses, every channel loaded
 * (mode "all") and read-only unless `write` — it takes no fencing epoch and no lead. An SQLite store must exist.
 */
export async function openAnyStore(values: Record<string, unknown>, role: string, options: { write?: boolean } = {}): Promise<ChannelStore> {
  const db = values.db;
  if (typeof db === "string" && /^postgres(ql)?:\/\//.test(db)) {
    const { PgStore } = await import("../store/pg-store");
    try {
      return await PgStore.open(db, { mode: "all", poolSize: 2, readOnly: options.write !== true });
    } catch (cause) {
      if (cause instanceof BaseError) throw new UsageError(`Cannot use the PostgreSQL store: ${cause.shortMessage}${cause.details ? ` (${cause.details.split("\n")[0]})` : ""}`, { cause });
      throw cause;
    }
  }
  return openExistingStore(values, role);
}

/** `--db postgres://…`: a provider fleet's store (decision 0036). */
export function isPostgresStore(values: Record<string, unknown>): boolean {
  return typeof values.db === "string" && /^postgres(ql)?:\/\//.test(values.db);
}

/** The store file of `--db`, default .data/<role>.db. */
export function storePath(values: Record<string, unknown>, role: string): string {
  const file = (values.db as string | undefined) ?? path.join(".data", `${role}.db`);
  if (/^postgres(ql)?:\/\//.test(file)) {
    throw new UsageError(`--db ${file.replace(/:[^:@/]*@/, ":***@")} is a PostgreSQL URL; only \`ioi provider\` serves from PostgreSQL and \`ioi channels\`, \`ioi export\`, \`ioi store prune\` and \`ioi watchtower\` read it (decision 0036); other commands take an SQLite file.`);
  }
  return file;
}

/**
 * A store that must already exist (issue 28 item 9): commands that read channels, or act on one, never create a
 * store file or its directory; a missing one is one sentence naming it.
 */
export function openExistingStore(values: Record<string, unknown>, role: string): ChannelStore {
  assertStoreExists(values, role);
  return openStore(values, role);
}

/** Refuses a missing store before anything else is reached for (the chain, a node). */
export function assertStoreExists(values: Record<string, unknown>, role: string): void {
  const file = storePath(values, role);
  if (!existsSync(file)) throw new UsageError(`The store ${file} does not exist; check --db (a store is created by \`ioi open\`, \`ioi import\` or \`ioi provider\`).`);
}

/**
 * A stored channel, checked against the chain the RPC serves (issue 28 item 9): a channel is always checked
 * against its own chain and escrow, so a store from one chain and an RPC of another is one sentence, never a
 * signature recomputed under the wrong domain.
 */
export function storedChannelOn(store: ChannelStore, sessionId: Hex, chainId: number, escrow: Address): ChannelRecord {
  const channel = channelOf(store, sessionId);
  if (channel.chainId !== chainId) {
    throw new UsageError(`Session ${sessionId} is stored as a channel on chain ${channel.chainId}, but the RPC serves chain ${chainId}; point --rpc at chain ${channel.chainId}.`);
  }
  if (channel.escrow.toLowerCase() !== escrow.toLowerCase()) {
    throw new UsageError(`Session ${sessionId} is stored as a channel of the escrow ${channel.escrow}, not of ${escrow}; drop --escrow or point it at ${channel.escrow}.`);
  }
  return channel;
}

export function channelOf(store: ChannelStore, sessionId: Hex): ChannelRecord {
  const channel = store.getChannel(sessionId);
  if (!channel) throw new UsageError(`The store holds no channel ${sessionId}; check --db and --session.`);
  return channel;
}

export function gigIdOf(values: Record<string, unknown>): bigint {
  const id = uint(values, "gig", "the gig id, a whole number from 1");
  if (id === 0n || id >= 1n << 64n) throw new UsageError(`--gig must be a gig id from 1 to 2^64 - 1; received "${values.gig as string}".`);
  return id;
}

export function hashOption(values: Record<string, unknown>, name: string, what: string): Hex {
  const value = need(values, name, what);
  if (!isHex(value) || value.length !== 66) throw new UsageError(`--${name} must be 0x and 64 hex digits (${what}); received "${value}".`);
  return value.toLowerCase() as Hex;
}

export function addressOption(values: Record<string, unknown>, name: string, what: string): Address {
  const value = need(values, name, what);
  if (!isAddress(value)) throw new UsageError(`--${name} must be an address (${what}); received "${value}".`);
  return getAddress(value);
}

/** The symbol and decimals of an asset: ETH for the zero address, else the ERC-20's own (or its address). */
export async function assetUnitOf(publicClient: PublicClient, asset: Address): Promise<AssetUnit> {
  if (isNative(asset)) return ETH_UNIT;
  const [symbol, decimals] = await Promise.all([
    publicClient.readContract({ address: asset, abi: erc20Abi, functionName: "symbol" }).catch(() => undefined),
    publicClient.readContract({ address: asset, abi: erc20Abi, functionName: "decimals" }).catch(() => undefined),
  ]);
  return symbol !== undefined && decimals !== undefined ? { symbol, decimals } : { symbol: `base units of ${asset}`, decimals: 0 };
}
