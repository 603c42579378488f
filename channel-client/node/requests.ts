/**
 * The MCP requests a payer sends with `ioi call` / `ioi stream --request-file`: a file of JSON-RPC
 * requests, one per line (JSON lines; blank lines and lines starting with `#` are skipped), or one built
 * from `--method` and `--params`. Each is checked here, at the boundary, so a bad line is named before
 * anything is paid for.
 */
import { closeSync, openSync, readFileSync, readSync, statSync } from "node:fs";

import { parseJson } from "../core/canonical";
import { BaseError } from "../core/errors";
import { MAX_PACKET_BYTES } from "../core/packets";
import type { JsonObject } from "../core/validate";

/** A request file or `--params` that is not a list of JSON-RPC requests. */
export class RequestFileError extends BaseError {
  override name = "RequestFileError" as const;
}

/**
 * Most requests one file may hold (each is a paid invocation): as many as `ioi stream -n` may send. A file is
 * streamed line by line ({@link RequestFileReader}), so its size costs no memory.
 */
export const MAX_REQUESTS = 10_000_000;

/** Longest request line: a request must fit in half a packet beside its ticket. */
export const MAX_REQUEST_LINE_BYTES = MAX_PACKET_BYTES / 2;

/** Bytes read from a request file at a time. */
const CHUNK_BYTES = 64 * 1024;

/** Checks one JSON-RPC request; `where` names it in the error ("request-file line 3"). */
export function checkRequest(raw: unknown, where: string): JsonObject {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new RequestFileError(`${where} is not a JSON object.`);
  const r = raw as JsonObject;
  if (r.jsonrpc !== "2.0") throw new RequestFileError(`${where} must have "jsonrpc": "2.0".`);
  if (typeof r.method !== "string" || r.method.length === 0) throw new RequestFileError(`${where} has no "method" string.`);
  if (r.id === undefined || (typeof r.id !== "string" && typeof r.id !== "number")) throw new RequestFileError(`${where} needs an "id" (a string or a number): a notification gets no answer to pay for.`);
  if (r.params !== undefined && (typeof r.params !== "object" || r.params === null || Array.isArray(r.params))) {
    throw new RequestFileError(`${where} has "params" that is not an object.`);
  }
  for (const key of Object.keys(r)) if (!["jsonrpc", "id", "method", "params"].includes(key)) throw new RequestFileError(`${where} has an unknown key "${key}".`);
  return r;
}

/** The regular file `file`'s size; a FIFO, a device or a directory is refused (it could hang or never end). */
function regularFileSize(file: string): number {
  let stat;
  try {
    stat = statSync(file);
  } catch (error) {
    throw new RequestFileError(`Cannot read the request file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  }
  if (!stat.isFile()) throw new RequestFileError(`The request file ${file} is not a regular file (a FIFO, device or directory cannot be streamed twice).`);
  return stat.size;
}

/** One request line checked (`where` names it). */
function requestOfLine(line: string, where: string): JsonObject {
  let raw: unknown;
  try {
    raw = parseJson(line, { maxBytes: MAX_REQUEST_LINE_BYTES, what: where });
  } catch (error) {
    throw new RequestFileError(`${where} is not valid JSON: ${(error as BaseError).shortMessage ?? (error as Error).message}`);
  }
  return checkRequest(raw, where);
}

/**
 * A request file streamed line by line (issue 28 item 8): memory holds one chunk and one line, never the file.
 * `open` reads the file once to check every line and count the requests, so a bad line is named before anything
 * is paid for; `next()` then reads it again, in order, one request at a time. A small file holding one
 * (pretty-printed) JSON object is one request, as with {@link readRequestFile}.
 */
export class RequestFileReader {
  /** The most bytes the reader held at once (a chunk and a partial line): what bounds its memory. */
  peakBufferedBytes = 0;
  #lines: Generator<{ text: string; lineNo: number }> | undefined;
  #single: JsonObject | undefined;
  #read = 0;

  private constructor(readonly file: string, readonly count: number, single: JsonObject | undefined) {
    this.#single = single;
  }

  /**
   * `allowed`: the methods the signer may pay for (a session key's grant); a request for another is named here,
   * before anything is paid, instead of refused by the provider mid-stream.
   */
  static open(file: string, allowed?: (method: string) => string | undefined): RequestFileReader {
    const size = regularFileSize(file);
    if (size <= MAX_REQUEST_LINE_BYTES) {
      // A small file may be one pretty-printed object (the rule readRequestFile keeps).
      const text = readText(file);
      const trimmed = text.trim();
      if (trimmed.startsWith("{") && !trimmed.includes("\n{")) {
        const request = requestOfLine(trimmed, `The request in ${file}`);
        const refused = allowed?.(request.method as string);
        if (refused) throw new RequestFileError(`The request in ${file}: ${refused}`);
        return new RequestFileReader(file, 1, request);
      }
    }
    const probe = new RequestFileReader(file, 0, undefined);
    let count = 0;
    for (const { text, lineNo } of probe.#scan()) {
      const request = requestOfLine(text, `${file} line ${lineNo}`);
      const refused = allowed?.(request.method as string);
      if (refused) throw new RequestFileError(`${file} line ${lineNo}: ${refused}`);
      if (++count > MAX_REQUESTS) throw new RequestFileError(`${file} holds more than ${MAX_REQUESTS} requests.`);
    }
    if (count === 0) throw new RequestFileError(`${file} holds no request.`);
    const reader = new RequestFileReader(file, count, undefined);
    reader.peakBufferedBytes = probe.peakBufferedBytes;
    return reader;
  }

  /** The next request, in file order; a RequestFileError if the file changed since `open` checked it. */
  next(): JsonObject {
    if (this.#read >= this.count) throw new RequestFileError(`${this.file} was read to its end: it holds ${this.count} requests.`);
    this.#read += 1;
    if (this.#single) return this.#single;
    this.#lines ??= this.#scan();
    const line = this.#lines.next();
    if (line.done) throw new RequestFileError(`${this.file} changed while it was streamed: it now holds fewer than ${this.count} requests.`);
    return requestOfLine(line.value.text, `${this.file} line ${line.value.lineNo}`);
  }

  close(): void {
    this.#lines?.return(undefined);
  }

  /** Non-blank, non-comment lines with their 1-based numbers, read in chunks; the file is closed at the end. */
  *#scan(): Generator<{ text: string; lineNo: number }> {
    let fd: number;
    try {
      fd = openSync(this.file, "r");
    } catch (error) {
      throw new RequestFileError(`Cannot read the request file ${this.file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
    }
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    let carry: Buffer[] = [];
    let carried = 0;
    let lineNo = 0;
    const line = function* (this: RequestFileReader, bytes: Buffer) {
      lineNo += 1;
      if (bytes.length > MAX_REQUEST_LINE_BYTES) throw new RequestFileError(`${this.file} line ${lineNo} is ${bytes.length} bytes; a request may hold at most ${MAX_REQUEST_LINE_BYTES}.`);
      const text = bytes.toString("utf8");
      const trimmed = text.trim();
      if (trimmed !== "" && !trimmed.startsWith("#")) yield { text, lineNo };
    }.bind(this);
    try {
      for (;;) {
        const n = readSync(fd, chunk, 0, CHUNK_BYTES, null);
        if (n === 0) break;
        const data = chunk.subarray(0, n);
        let start = 0;
        for (let i = data.indexOf(10); i !== -1; i = data.indexOf(10, start)) {
          const piece = data.subarray(start, i);
          const bytes = carried === 0 ? piece : Buffer.concat([...carry, piece]);
          this.peakBufferedBytes = Math.max(this.peakBufferedBytes, CHUNK_BYTES + bytes.length);
          carry = [];
          carried = 0;
          start = i + 1;
          yield* line(bytes);
        }
        if (start < n) {
          // The partial line outlives the chunk buffer, which the next read overwrites: keep a copy.
          carry.push(Buffer.from(data.subarray(start)));
          carried += n - start;
          this.peakBufferedBytes = Math.max(this.peakBufferedBytes, CHUNK_BYTES + carried);
          if (carried > MAX_REQUEST_LINE_BYTES) throw new RequestFileError(`${this.file} line ${lineNo + 1} is longer than ${MAX_REQUEST_LINE_BYTES} bytes; a request may hold at most that.`);
        }
      }
      if (carried > 0) yield* line(Buffer.concat(carry));
    } finally {
      closeSync(fd);
    }
  }
}

function readText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new RequestFileError(`Cannot read the request file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  }
}

/** Reads a JSON-lines file of requests (a file holding one JSON object is one request). */
export function readRequestFile(file: string): JsonObject[] {
  regularFileSize(file);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new RequestFileError(`Cannot read the request file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  }
  const requests: JsonObject[] = [];
  const trimmed = text.trim();
  // A single pretty-printed object is one request.
  const lines = trimmed.startsWith("{") && !trimmed.includes("\n{") ? [trimmed] : text.split("\n");
  lines.forEach((line, i) => {
    if (line.trim() === "" || line.trim().startsWith("#")) return;
    const where = lines.length === 1 ? `The request in ${file}` : `${file} line ${i + 1}`;
    let raw: unknown;
    try {
      raw = parseJson(line, { maxBytes: MAX_PACKET_BYTES / 2, what: where });
    } catch (error) {
      throw new RequestFileError(`${where} is not valid JSON: ${(error as BaseError).shortMessage ?? (error as Error).message}`);
    }
    requests.push(checkRequest(raw, where));
    if (requests.length > MAX_REQUESTS) throw new RequestFileError(`${file} holds more than ${MAX_REQUESTS} requests.`);
  });
  if (requests.length === 0) throw new RequestFileError(`${file} holds no request.`);
  return requests;
}

/** One request from `--method` and `--params` (a JSON object, default none). */
export function requestFrom(method: string, params: string | undefined, id: string): JsonObject {
  let parsed: unknown;
  if (params !== undefined) {
    try {
      parsed = parseJson(params, { maxBytes: MAX_PACKET_BYTES / 2, what: "--params" });
    } catch (error) {
      throw new RequestFileError(`--params is not valid JSON: ${(error as BaseError).shortMessage ?? (error as Error).message}`);
    }
  }
  return checkRequest({ jsonrpc: "2.0", id, method, ...(parsed === undefined ? {} : { params: parsed }) }, "The request");
}
