/**
 * `ioi account new|import|list|export-address` (issue 29 item 5): encrypted keystores in the Web3 Secret Storage
 * v3 format (channel-client/core/keystore.ts) kept in $IOI_KEYSTORE_DIR or ~/.ioi/keystore (channel-client/node/keystore.ts). Every
 * command that signs then takes `--account ADDR_OR_NAME --password-file FILE` (channel-client/cli/common.ts loadAccount).
 */
import { isHex, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";

import { encryptKeystore, STANDARD_SCRYPT, type ScryptParams } from "../core/keystore";
import { findKeys, keystoreDir, KeystoreFileError, readPasswordFile, resolveKey, writeKeystoreFile } from "../node/keystore";
import { need, promptHidden, uint, UsageError, type Command, type CommandGroup, type Out } from "./common";

/** A password from --password-file, else typed twice at a terminal (not echoed); a pipe or file on stdin is refused. */
async function newPassword(values: Record<string, unknown>): Promise<string> {
  const file = values["password-file"] as string | undefined;
  if (file !== undefined) return asUsage(() => readPasswordFile(file));
  if (!process.stdin.isTTY) throw new UsageError("No terminal to ask for a password: pass --password-file FILE.");
  const first = await promptHidden("Password: ");
  if (first.length === 0) throw new UsageError("An empty password is refused: a keystore needs a password.");
  const second = await promptHidden("Repeat password: ");
  if (first !== second) throw new UsageError("The two passwords differ; nothing was written.");
  return first;
}

function asUsage<T>(f: () => T): T {
  try {
    return f();
  } catch (error) {
    if (error instanceof KeystoreFileError) throw new UsageError(error.shortMessage, { cause: error });
    throw error;
  }
}

/** The scrypt cost: the standard n = 262144 unless --scrypt-n lowers it (tests, slow machines). */
function scryptOf(values: Record<string, unknown>): ScryptParams {
  if (values["scrypt-n"] === undefined) return STANDARD_SCRYPT;
  const n = uint(values, "scrypt-n", "the scrypt cost, a power of two");
  if (n < 2n || n > 1n << 24n || (n & (n - 1n)) !== 0n) throw new UsageError(`--scrypt-n must be a power of two from 2 to 2^24; received ${n}.`);
  return { ...STANDARD_SCRYPT, n: Number(n) };
}

function nameOf(values: Record<string, unknown>): string | undefined {
  const name = values.name as string | undefined;
  if (name === undefined) return undefined;
  if (!/^[A-Za-z][A-Za-z0-9_.-]{0,63}$/.test(name)) throw new UsageError(`--name must start with a letter and hold only letters, digits, _ . - (at most 64); received "${name}".`);
  return name;
}

async function store(values: Record<string, unknown>, out: Out, privateKey: Hex, how: string): Promise<void> {
  const name = nameOf(values);
  const dir = keystoreDir();
  const address = privateKeyToAddress(privateKey);
  if (findKeys(dir).some((k) => k.address === address)) throw new UsageError(`The keystore directory ${dir} already holds ${address}; nothing was written.`);
  const password = await newPassword(values);
  const keystore = encryptKeystore(privateKey, password, { scrypt: scryptOf(values) });
  const file = asUsage(() => writeKeystoreFile(dir, keystore, name));
  out.lines.push(`${how} ${address}${name ? ` (${name})` : ""}`, `keystore ${file}`);
  Object.assign(out.result, { address, file, ...(name ? { name } : {}) });
}

const KEY_OPTIONS = {
  name: { type: "string" },
  "scrypt-n": { type: "string" },
} as const;

const NEW: Command = {
  summary: "generate a key and write it encrypted to the keystore directory",
  usage: "ioi account new [--name N] [--password-file FILE] [--scrypt-n N]",
  notes: [
    "  Writes $IOI_KEYSTORE_DIR (default ~/.ioi/keystore)/UTC--<time>--<address>, mode 0600, in the v3 format geth",
    "  and Foundry read (scrypt n=262144 r=8 p=1, aes-128-ctr). Never overwrites a file. Without --password-file",
    "  the password is asked twice at the terminal. --scrypt-n lowers the scrypt cost (tests only).",
  ],
  examples: ["ioi account new --name payer --password-file ~/.ioi/payer.pw"],
  options: KEY_OPTIONS,
  run: async (values, out) => store(values, out, generatePrivateKey(), "created"),
};

const IMPORT: Command = {
  summary: "encrypt a raw key from an environment variable into the keystore directory",
  usage: "ioi account import [--key-env VAR] [--name N] [--password-file FILE] [--scrypt-n N]",
  notes: ["  Reads the key from the variable --key-env names (default IOI_PRIVATE_KEY); it is never read from an argument."],
  examples: ["IOI_PRIVATE_KEY=0x… ioi account import --name provider --password-file provider.pw"],
  options: KEY_OPTIONS,
  run: async (values, out) => {
    const variable = (values["key-env"] as string | undefined) ?? "IOI_PRIVATE_KEY";
    const key = process.env[variable];
    if (!key) throw new UsageError(`Set ${variable} to the private key to import (0x and 64 hex digits).`);
    if (!isHex(key) || key.length !== 66) throw new UsageError(`${variable} is not a private key: it must be 0x and 64 hex digits.`);
    try {
      privateKeyToAddress(key);
    } catch (cause) {
      throw new UsageError(`${variable} is not a valid secp256k1 private key (zero or not below the curve order).`, { cause });
    }
    await store(values, out, key.toLowerCase() as Hex, "imported");
  },
};

const LIST: Command = {
  summary: "list the keystore directory's accounts (addresses, names and files; no secrets)",
  usage: "ioi account list",
  options: {},
  run: async (_values, out) => {
    const dir = keystoreDir();
    const keys = findKeys(dir);
    if (keys.length === 0) out.lines.push(`no keystores in ${dir}`);
    for (const k of keys) out.lines.push(`${k.address}  ${k.name ?? "-"}  ${k.file}`);
    out.result.directory = dir;
    out.result.accounts = keys.map((k) => ({ address: k.address, ...(k.name ? { name: k.name } : {}), file: k.file }));
  },
};

const EXPORT_ADDRESS: Command = {
  summary: "print the address of --account (no password needed)",
  usage: "ioi account export-address --account ADDR_OR_NAME_OR_FILE",
  options: {},
  run: async (values, out) => {
    const stored = asUsage(() => resolveKey(keystoreDir(), need(values, "account", "an address, name or key file")));
    out.lines.push(stored.address);
    Object.assign(out.result, { address: stored.address, file: stored.file });
  },
};

export const ACCOUNT_GROUP: CommandGroup = {
  summary: "encrypted keystores: new, import, list, export-address (ioi account --help)",
  commands: { new: NEW, import: IMPORT, list: LIST, "export-address": EXPORT_ADDRESS },
};
