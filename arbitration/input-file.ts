/**
 * Reading a file named by a command-line option, for the offline arbitration commands (`ioi arbitrate
 * --verify-upip`, `ioi gig vet`): a regular file, refused before anything beyond `maxBytes` is read, every
 * failure one sentence naming the option and the file.
 */
import { readFileSync, statSync } from "node:fs";

import { UsageError } from "../cli/common";
import { SizeLimitError } from "../channel-client/errors";

/** The bytes of the regular file `file` given as `--option`, at most `maxBytes` of them. */
export function readOptionFile(option: string, file: string, maxBytes: number): Buffer {
  let size: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) throw new UsageError(`--${option} ${file} is not a regular file.`);
    size = stat.size;
  } catch (cause) {
    if (cause instanceof UsageError) throw cause;
    throw new UsageError(`Cannot read --${option} ${file}: ${(cause as Error).message.split("\n")[0]}`, { cause });
  }
  if (size > maxBytes) throw new SizeLimitError(`--${option} ${file}`, size, maxBytes);
  try {
    return readFileSync(file);
  } catch (cause) {
    throw new UsageError(`Cannot read --${option} ${file}: ${(cause as Error).message.split("\n")[0]}`, { cause });
  }
}
