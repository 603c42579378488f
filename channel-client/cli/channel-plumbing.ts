/**
 * The plumbing the channel commands share: chain clients, a channel's peers and fleet, terms and session-key options, and the modules loaded only when a command runs one.
 */
import { isAddressEqual, type Hex, type LocalAccount } from "viem";

import { gasEscrowDomain, signingAccount, type GasEscrowDomain } from "../core/eip712";
import { signedSessionKeyGrantFromJson, type SignedSessionKeyGrant } from "../core/session-key";
import { walletSessionKey } from "../chain/wallet-signature";
import type { InvocationOutcome, PayerClient, PayerClientParameters } from "../node/payer-client";
import { EndpointError, parsePeer } from "../node/endpoints";
import { RequestFileError } from "../node/requests";
import type { ChannelRecord, ChannelStore } from "../store/store";
import { prepaidPerCall, pricingTermsFromJson, type PricingTerms } from "../core/terms";
import type { JsonObject } from "../core/validate";
import { addressOption, UsageError, weiAmount } from "./common";
import { deployedContract, givenAddress, rpcClients } from "./chain";
import { readOptionFile } from "./input-file";
import { formatAmountWithBase } from "../core/format";
import { parseDocument } from "../../arbitration/documents/document";

// The node, the payer client (with the sealed transport and ML-KEM/ML-DSA) and the watchtower load only when
// a command that runs one is called, so `ioi --help` and the quick commands start fast (`npm run bench -- --cli`).
export const nodeModules = {
  payerClient: () => import("../node/payer-client"),
  providerNode: () => import("../node/provider-node"),
  mcpWorker: () => import("../node/mcp-worker"),
  watchtower: () => import("../node/watchtower"),
  pgStore: () => import("../store/pg-store"),
  fleet: () => import("../node/fleet"),
};

/** `--db postgres://…`: the provider runs as one of several processes over PostgreSQL (decision 0036). */
export function isPostgresUrl(db: unknown): db is string {
  return typeof db === "string" && /^postgres(ql)?:\/\//.test(db);
}

export async function chainClients(values: Record<string, unknown>, account?: LocalAccount) {
  givenAddress(values, "escrow", "IOI_ESCROW"); // a malformed address is refused before any RPC call
  const { publicClient, wallet, chainId } = await rpcClients(values, account);
  const { address: escrow, fromBlock } = await deployedContract(values, publicClient, "escrow", "IOI_ESCROW", "GasEscrow");
  const domain: GasEscrowDomain = gasEscrowDomain({ chainId, verifyingContract: escrow });
  return { publicClient, wallet, escrow, domain, chainId, fromBlock };
}

/** The close the store recorded for `channel`; a usage error if it has seen none yet. */
export function closingOf(store: ChannelStore, channel: ChannelRecord) {
  const closing = store.getClosing(channel.sessionId);
  if (!closing) throw new UsageError("The store has seen no close of this channel; run `ioi watchtower --once` to catch up first.");
  return closing;
}

/**
 * The provider's endpoints for `ioi stream` / `ioi call` (decision 0036): `--peer a:1,b:2` or `--peer` repeated, else
 * the channel's stored peer. Each is checked like one --peer; an empty entry or one given twice is a careless list.
 */
export function peersOf(values: Record<string, unknown>, channel: ChannelRecord | undefined): string[] {
  const given = values.peer as string[] | string | undefined;
  const raw = given === undefined ? channel?.peer : Array.isArray(given) ? given.join(",") : given;
  if (!raw) throw new UsageError("--peer HOST:PORT is required: where the provider node listens.");
  const peers = raw.split(",").map((p) => p.trim());
  const allowRemote = values["allow-remote"] === true;
  const seen = new Set<string>();
  for (const peer of peers) {
    if (peer === "") throw new UsageError(`--peer "${raw}" has an empty entry: list endpoints as HOST:PORT,HOST:PORT.`);
    const { host, port } = asUsage(() => parsePeer(peer, allowRemote));
    const key = `${host}:${port}`;
    if (seen.has(key)) throw new UsageError(`--peer "${raw}" names ${peer} twice: list each endpoint once.`);
    seen.add(key);
  }
  return peers;
}

/** Connects a payer to the first of `peers` that answers; it learns the fleet's other endpoints from the signed offer. */
export async function fleetPayer(values: Record<string, unknown>, peers: string[], parameters: Omit<PayerClientParameters, "host" | "port">) {
  const allowRemote = values["allow-remote"] === true;
  return (await nodeModules.fleet()).FleetPayer.connect(parameters, peers, {
    dial: (e) => parsePeer(e, allowRemote),
    onResume: (endpoint, cause) => process.stderr.write(`The connection failed (${(cause as Error).message?.split("\n")[0] ?? String(cause)}); resumed on ${endpoint} from the store.\n`),
  });
}

/**
 * `ioi open --peer A,B` (decision 0036): the signed terms offer of the first endpoint that answers. An endpoint that
 * cannot be reached (or fails its handshake) is passed over with a line on stderr; the last failure is thrown.
 */
export async function firstOffer<T>(peers: string[], allowRemote: boolean, fetch: (host: string, port: number) => Promise<T>): Promise<{ peer: string; offer: T }> {
  let last: unknown;
  for (const [k, peer] of peers.entries()) {
    const { host, port } = asUsage(() => parsePeer(peer, allowRemote));
    try {
      return { peer, offer: await fetch(host, port) };
    } catch (error) {
      last = error;
      if (k < peers.length - 1) console.error(`${peer} did not offer terms (${(error as Error).message?.split("\n")[0] ?? String(error)}); trying ${peers[k + 1]}.`);
    }
  }
  throw last;
}

/** A one-line progress bar on stderr (only when it is a terminal or IOI_PROGRESS=1). */
export function progressBar(total: number): (done: number) => void {
  const enabled = process.stderr.isTTY || process.env.IOI_PROGRESS === "1";
  const started = performance.now();
  let last = 0;
  return (done) => {
    if (!enabled) return;
    const now = performance.now();
    if (done !== total && now - last < 100) return;
    last = now;
    const width = 30;
    const filled = Math.round((done / total) * width);
    const rate = Math.round(done / ((now - started) / 1000));
    process.stderr.write(`\r[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${done}/${total} ${rate}/s${done === total ? "\n" : ""}`);
  };
}

/** A bad --peer/--host or request file is a usage mistake: one sentence, exit 2. */
export function asUsage<T>(f: () => T): T {
  try {
    return f();
  } catch (error) {
    if (error instanceof EndpointError || error instanceof RequestFileError) throw new UsageError(error.shortMessage);
    throw error;
  }
}

/**
 * `--session-key FILE` (decision 0025): the grant and private key `ioi session-key authorize --out` wrote; the
 * tickets are then signed by that key, and the grant must be for this session.
 */
export function sessionKeyOf(values: Record<string, unknown>, sessionId: Hex): { account: LocalAccount; grant: SignedSessionKeyGrant } | undefined {
  const file = values["session-key"] as string | undefined;
  if (file === undefined) return undefined;
  let raw: { grant?: unknown; privateKey?: unknown };
  const bytes = readOptionFile("session-key", file, 64 * 1024);
  try {
    raw = JSON.parse(bytes.toString("utf8")) as typeof raw;
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new Error("not an object");
  } catch {
    throw new UsageError(`Cannot read --session-key ${file}: it must be the file \`ioi session-key authorize --out\` wrote.`);
  }
  const grant = asUsage(() => signedSessionKeyGrantFromJson(raw.grant, "session-key.grant"));
  if (typeof raw.privateKey !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(raw.privateKey)) {
    throw new UsageError(`--session-key ${file} holds no private key (a grant for a key you hold elsewhere cannot sign here).`);
  }
  const account = signingAccount(raw.privateKey as Hex);
  if (account.address !== grant.grant.key) throw new UsageError(`--session-key ${file}: its private key is not the granted key ${grant.grant.key}.`);
  if (grant.grant.sessionId !== sessionId) throw new UsageError(`--session-key ${file} is a grant for session ${grant.grant.sessionId}, not ${sessionId}.`);
  return { account, grant };
}

/**
 * `--payer-wallet W` (decision 0035): the channel's payer is contract wallet W and the acting key signs for it; the
 * key connects as the session key of the wallet's grant (signed once, kept in the store). Without the option, a
 * channel whose payer is not the acting key is refused with the option to use.
 */
export async function walletKeyOf(
  values: Record<string, unknown>,
  account: LocalAccount,
  channel: ChannelRecord,
  store: ChannelStore,
): Promise<{ account: LocalAccount; grant: SignedSessionKeyGrant } | undefined> {
  const payer = channel.ref.terms.payer;
  const named = values["payer-wallet"] === undefined ? undefined : addressOption(values, "payer-wallet", "the contract wallet your key signs for");
  if (named === undefined) {
    if (channel.role === "payer" && !isAddressEqual(payer, account.address)) {
      throw new UsageError(`Session ${channel.sessionId}'s payer is ${payer}, not your key ${account.address}: if it is the contract wallet your key signs for, pass --payer-wallet ${payer}.`);
    }
    return undefined;
  }
  if (!isAddressEqual(named, payer)) throw new UsageError(`--payer-wallet ${named} is not session ${channel.sessionId}'s payer (${payer}).`);
  const { publicClient, domain } = await chainClients(values);
  return walletSessionKey({ account, domain, publicClient, wallet: named, sessionId: channel.sessionId, store });
}

/** The method of `ioi stream -n`'s synthetic calls. */
export const SYNTHETIC_METHOD = "tools/echo";

/** Why a session key's grant cannot pay for `method`, or undefined when it can. */
export function methodCheck(grant: SignedSessionKeyGrant): (method: string) => string | undefined {
  const methods = grant.methods;
  return (method) =>
    methods.includes("*") || methods.includes(method) ? undefined : `its method ${method} is not one the session key may pay for (${methods.join(", ")}); nothing was paid.`;
}

/** Refuses, before anything is signed, a run that what is left of the channel's deposit cannot pay for. */
export async function assertAffordable(client: PayerClient, channel: ChannelRecord, count: number): Promise<void> {
  const promised = client.session.cumulativeAmount;
  // A ticket prepays the most a call can cost (v2: the cap per call); metered receipts may charge less.
  const price = prepaidPerCall(channel.pricing);
  const cost = price * BigInt(count);
  if (promised + cost > channel.deposit) {
    await client.close();
    const fits = price === 0n ? 0n : (channel.deposit - promised) / price;
    throw new UsageError(
      `${count} invocations at ${formatAmountWithBase(price)} would pay ${formatAmountWithBase(promised + cost)} in total, past the deposit of ${formatAmountWithBase(channel.deposit)}; at most ${fits} more fit (top up with \`ioi deposit\`).`,
    );
  }
}

/** One answer as printed by `ioi call` / `ioi stream --request-file`: the request's id, result or error, receipt. */
export function outcomeJson(request: JsonObject, o: InvocationOutcome): Record<string, unknown> {
  return {
    id: request.id,
    seq: o.seq.toString(),
    ...(o.error ? { error: o.error } : { result: o.result ?? null }),
    charged: o.charged.toString(),
    outputHash: o.receipt.receipt.outputHash,
  };
}

/** Largest --terms-file read: a terms document is a small JSON (or YAML) document. */
export const MAX_TERMS_FILE_BYTES = 64 * 1024;

/**
 * The terms document of --terms-file (validated against schemas/terms.schema.json), or the flat v1 price
 * list of --price; exactly one of the two.
 */
export function termsOption(values: Record<string, unknown>, priceWhat: string): PricingTerms {
  const file = values["terms-file"] as string | undefined;
  if (file === undefined) return { version: "1", unit: "invocation", pricePerInvocation: weiAmount(values, "price", priceWhat) };
  if (values.price !== undefined) throw new UsageError("Give either --price WEI (a flat price per invocation) or --terms-file FILE (a terms document), not both.");
  // A regular file of bounded size (issue 28 item 9): a FIFO or a device would hang the command.
  const bytes = readOptionFile("terms-file", file, MAX_TERMS_FILE_BYTES);
  return pricingTermsFromJson(parseDocument(bytes, { maxBytes: MAX_TERMS_FILE_BYTES, what: `The terms document in ${file}` }), `terms in ${file}`);
}
