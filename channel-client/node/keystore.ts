/**
 * The keystore directory (issue 29 item 5): `$IOI_KEYSTORE_DIR`, else ~/.ioi/keystore. Files are named as geth
 * names them, `UTC--<ISO time with - for :>--<address without 0x>`, written mode 0600 and never overwritten; a name
 * given by `ioi account new --name N` is recorded in the file as the extra field `name` (geth and Foundry ignore
 * unknown fields). The imperative shell around the pure channel-client/core/keystore.ts.
 */
import { closeSync, constants, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, writeSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAddress, isAddress, type Address } from "viem";

import { BaseError } from "../core/errors";
import { keystoreAddress, type KeystoreV3 } from "../core/keystore";

/** A keystore directory, file or password file that cannot be used: one sentence for the user. */
export class KeystoreFileError extends BaseError {
  override name = "KeystoreFileError" as const;
}

export function keystoreDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.IOI_KEYSTORE_DIR && env.IOI_KEYSTORE_DIR !== "" ? env.IOI_KEYSTORE_DIR : path.join(os.homedir(), ".ioi", "keystore");
}

/** geth's file name: UTC--2026-11-26T21-47-32.123000000Z--<address, lowercase, no 0x>. */
export function keystoreFileName(address: Address, now: Date = new Date()): string {
  const iso = now.toISOString().replace(/:/g, "-").replace(/\.(\d{3})Z$/, ".$1000000Z");
  return `UTC--${iso}--${address.slice(2).toLowerCase()}`;
}

export type StoredKey = { file: string; address: Address; name?: string; keystore: KeystoreV3 };

/** Writes a keystore into `dir` (created 0700) as a new file, mode 0600; an existing file is never replaced. */
export function writeKeystoreFile(dir: string, keystore: KeystoreV3, name?: string, now: Date = new Date()): string {
  const address = keystoreAddress(keystore);
  if (!address) throw new KeystoreFileError("A keystore to write must carry its address.");
  if (name !== undefined && findKeys(dir).some((k) => k.name === name)) throw new KeystoreFileError(`The keystore directory ${dir} already holds an account named "${name}".`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, keystoreFileName(address, now));
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  } catch (cause) {
    throw new KeystoreFileError(`Cannot create ${file}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
  }
  try {
    writeSync(fd, `${JSON.stringify(name === undefined ? keystore : { ...keystore, name })}\n`);
  } finally {
    closeSync(fd);
  }
  return file;
}

/** Every v3 keystore in `dir` (files that are not keystores are skipped), sorted by file name. */
export function findKeys(dir: string): StoredKey[] {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return [];
  }
  const keys: StoredKey[] = [];
  for (const entry of names) {
    const file = path.join(dir, entry);
    try {
      const json = JSON.parse(readFileSync(file, "utf8")) as KeystoreV3 & { name?: unknown };
      const address = keystoreAddress(json);
      if (!address) continue;
      keys.push({ file, address, ...(typeof json.name === "string" ? { name: json.name } : {}), keystore: json });
    } catch {
      continue;
    }
  }
  return keys;
}

/**
 * The keystore `--account` names: an address, a name given at `account new --name`, or a path to a key file.
 * Anything else, or two files for one address, is one sentence.
 */
export function resolveKey(dir: string, account: string): StoredKey {
  if (account.includes("/") || account.includes(path.sep)) {
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(account, "utf8"));
    } catch (cause) {
      throw new KeystoreFileError(`Cannot read the key file ${account}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
    }
    const address = keystoreAddress(json);
    if (!address) throw new KeystoreFileError(`The key file ${account} does not say its address.`);
    return { file: account, address, keystore: json as KeystoreV3 };
  }
  const keys = findKeys(dir);
  const matches = isAddress(account) ? keys.filter((k) => k.address === getAddress(account)) : keys.filter((k) => k.name === account);
  if (matches.length === 0) throw new KeystoreFileError(`No account "${account}" in the keystore directory ${dir}; \`ioi account list\` shows what it holds.`);
  if (matches.length > 1) throw new KeystoreFileError(`The keystore directory ${dir} holds ${matches.length} files for "${account}"; pass the file's path to --account.`);
  return matches[0]!;
}

/**
 * A password from a file: its first line (a trailing newline dropped). Only a regular file is read: a FIFO or a
 * device could block or change between reads; an empty password is refused.
 */
export function readPasswordFile(file: string): string {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (cause) {
    throw new KeystoreFileError(`Cannot open the password file ${file}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
  }
  try {
    if (!fstatSync(fd).isFile()) throw new KeystoreFileError(`The password file ${file} is not a regular file (a FIFO, device or directory is refused).`);
    const text = readFileSync(fd, "utf8");
    const password = text.split(/\r?\n/)[0]!;
    if (password.length === 0) throw new KeystoreFileError(`The password file ${file} is empty; a keystore needs a password.`);
    return password;
  } finally {
    closeSync(fd);
  }
}
