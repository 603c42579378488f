/**
 * The gig commands of `ioi` (`ioi gig fund|accept|deliver|release|refund|cancel|show`) on the GigEscrow.
 */
import { isAddressEqual, zeroAddress, type Address, type Hex, type LocalAccount, type PublicClient } from "viem";

import type { Wallet } from "../chain/escrow";
import {
  acceptGig,
  acceptGigDelivery,
  cancelGig,
  deliverGig,
  fundGig,
  gigViewToJson,
  MAX_DEADLINE,
  MAX_DISPUTE_WINDOW,
  MIN_DISPUTE_WINDOW,
  readGig,
  refundGig,
  releaseGig,
  type SettledGig,
} from "../chain/gig";
import { NATIVE_ASSET } from "../core/terms";
import {
  addressOption,
  assetUnitOf,
  gigIdOf,
  hashOption,
  loadAccount,
  uint,
  UsageError,
  type Command,
  type CommandOptions,
  type Out,
} from "./common";
import { deployedAddress, givenAddress, rpcClients } from "./chain";
import { readOptionFile } from "./input-file";
import { formatAmountWithBase, formatDate, formatDuration, formatMoment } from "../core/format";
import { parseDocument } from "../../arbitration/documents/document";
import { icsFromJson, icsHash, type Ics } from "../../arbitration/documents/ics";

export const GIG_OPTIONS = { "gig-escrow": { type: "string" } } as const satisfies CommandOptions;
export const GIG_ID_OPTION = { gig: { type: "string" } } as const satisfies CommandOptions;

/** `ioi gig <subcommand>`: outcome-based work escrowed in the GigEscrow. */
export const GIG_COMMANDS: Record<string, Command> = {
  fund: {
    summary: "escrow a bounty for a gig bound to an Intent Contract Schema; prints the gig id (the acting key is the client)",
    usage:
      "ioi gig fund --amount WEI (--ics HASH | --ics-file PATH) [--provider ADDR] [--asset ADDR] [--deadline SECONDS] [--dispute-window SECONDS] [--client ADDR]",
    notes: ["  --client ADDR    a sponsored gig: ADDR is the client who alone acts on it; the acting key pays and receives every refund"],
    options: {
      client: { type: "string" },
      amount: { type: "string" },
      ics: { type: "string" },
      "ics-file": { type: "string" },
      provider: { type: "string" },
      asset: { type: "string" },
      deadline: { type: "string" },
      "dispute-window": { type: "string" },
    },
    run: runGigFund,
  },
  cancel: {
    summary: "take back a funded gig no provider accepted yet (the client)",
    usage: "ioi gig cancel --gig ID",
    options: GIG_ID_OPTION,
    run: (values, out) => runGigSettlement(values, out, cancelGig),
  },
  accept: {
    summary: "take a gig as a provider with an active bond in the ProviderRegistry",
    usage: "ioi gig accept --gig ID",
    options: GIG_ID_OPTION,
    run: runGigAccept,
  },
  deliver: {
    summary: "deliver a gig's result (the provider); the client's dispute window starts",
    usage: "ioi gig deliver --gig ID --deliverable HASH [--receipt-root HASH]",
    options: { ...GIG_ID_OPTION, deliverable: { type: "string" }, "receipt-root": { type: "string" } },
    run: runGigDeliver,
  },
  "accept-delivery": {
    summary: "accept the delivery and pay the provider at once (the client)",
    usage: "ioi gig accept-delivery --gig ID",
    options: GIG_ID_OPTION,
    run: (values, out) => runGigSettlement(values, out, acceptGigDelivery),
  },
  release: {
    summary: "pay the provider once the dispute window passed without a dispute (anyone)",
    usage: "ioi gig release --gig ID",
    options: GIG_ID_OPTION,
    run: (values, out) => runGigSettlement(values, out, releaseGig),
  },
  refund: {
    summary: "refund the client once the deadline passed without a delivery (anyone)",
    usage: "ioi gig refund --gig ID",
    options: GIG_ID_OPTION,
    run: (values, out) => runGigSettlement(values, out, refundGig),
  },
  show: {
    summary: "show a gig as stored on-chain (no key needed)",
    usage: "ioi gig show --gig ID",
    options: GIG_ID_OPTION,
    run: runGigShow,
  },
};

/** Largest --ics-file read: an Intent Contract Schema is a small JSON document. */
export const MAX_ICS_FILE_BYTES = 1 << 20;

/**
 * The ICS hash from --ics, or the hash of the Intent Contract Schema in --ics-file (JSON or YAML), which must be
 * a valid ICS (arbitration/documents/ics.ts): a gig bound to a document arbitrators cannot read could never be judged.
 */
export function icsHashOf(values: Record<string, unknown>): { icsHash: Hex; icsFile?: string; ics?: Ics } {
  const hasHash = values.ics !== undefined;
  const file = values["ics-file"] as string | undefined;
  if (hasHash === (file !== undefined)) {
    throw new UsageError("Give exactly one of --ics HASH and --ics-file PATH: the Intent Contract Schema the gig is bound to.");
  }
  if (hasHash) return { icsHash: hashOption(values, "ics", "the hash of the Intent Contract Schema") };
  const bytes = readOptionFile("ics-file", file!, MAX_ICS_FILE_BYTES);
  const ics = icsFromJson(parseDocument(bytes, { maxBytes: MAX_ICS_FILE_BYTES, what: `The Intent Contract Schema in ${file}` }), `ICS in ${file}`);
  return { icsHash: icsHash(ics), icsFile: file!, ics };
}

/** A gig must fit its ICS: the same asset, no more than its max_price, due no later than its deadline. */
export function checkGigAgainstIcs(ics: Ics, file: string, gig: { asset: Address; amount: bigint; deadline: bigint }): void {
  if (!isAddressEqual(ics.asset, gig.asset)) {
    throw new UsageError(`The ICS in ${file} is priced in ${assetName(ics.asset)}, but the gig escrows ${assetName(gig.asset)}; pass --asset ${BigInt(ics.asset) === 0n ? "eth" : ics.asset}.`);
  }
  if (gig.amount > ics.maxPrice) {
    throw new UsageError(`--amount ${gig.amount} exceeds the ICS's max_price of ${ics.maxPrice} (${file}).`);
  }
  if (gig.deadline > ics.deadline) {
    throw new UsageError(`The gig would be due at ${formatDate(gig.deadline)}, after the ICS's deadline ${formatDate(ics.deadline)} (${file}); shorten --deadline.`);
  }
}

export async function gigClients(values: Record<string, unknown>, account?: LocalAccount) {
  givenAddress(values, "gig-escrow", "IOI_GIG_ESCROW"); // a malformed address is refused before any RPC call
  const { publicClient, wallet, chainId } = await rpcClients(values, account);
  const gigEscrow = await deployedAddress(values, publicClient, "gig-escrow", "IOI_GIG_ESCROW", "GigEscrow");
  return { publicClient, wallet, gigEscrow, chainId };
}

export const assetName = (asset: Address): string => (BigInt(asset) === 0n ? "ETH" : asset);

export async function runGigFund(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const amount = uint(values, "amount", "the bounty in wei (or the token's smallest unit)");
  const { icsHash, icsFile, ics } = icsHashOf(values);
  const provider = values.provider === undefined ? zeroAddress : addressOption(values, "provider", "the one provider who may accept");
  const client = values.client === undefined ? undefined : addressOption(values, "client", "the gig's client, who alone acts on it");
  if (client !== undefined && BigInt(client) === 0n) throw new UsageError("--client must be a real address, not the zero address.");
  const assetText = values.asset as string | undefined;
  const asset = assetText === undefined || assetText.toLowerCase() === "eth" ? NATIVE_ASSET : addressOption(values, "asset", "the ERC-20 to escrow, or eth");
  const deadlineIn = uint(values, "deadline", "seconds from now until the gig must be delivered", 7n * 86_400n);
  if (deadlineIn === 0n || deadlineIn > MAX_DEADLINE) {
    throw new UsageError(`--deadline must be from 1 to ${MAX_DEADLINE} seconds from now; received ${deadlineIn}.`);
  }
  const disputeWindow = uint(values, "dispute-window", "seconds the client may dispute a delivery", 3_600n);
  if (disputeWindow < MIN_DISPUTE_WINDOW || disputeWindow > MAX_DISPUTE_WINDOW) {
    throw new UsageError(`--dispute-window must be from ${MIN_DISPUTE_WINDOW} to ${MAX_DISPUTE_WINDOW} seconds; received ${disputeWindow}.`);
  }
  const { publicClient, wallet, gigEscrow } = await gigClients(values, account);
  // "From now" on the chain's clock, which a devnet may have moved ahead of the wall clock.
  const now = (await publicClient.getBlock()).timestamp;
  if (ics) checkGigAgainstIcs(ics, icsFile!, { asset, amount, deadline: now + deadlineIn });
  const funded = await fundGig({ wallet: wallet!, publicClient, gigEscrow, provider, asset, amount, icsHash, deadline: now + deadlineIn, disputeWindow, ...(client ? { client } : {}) });
  const who = BigInt(provider) === 0n ? "any active provider" : provider;
  if (client) out.lines.push(`Sponsored: ${client} is the gig's client; refunds come back to ${account.address}.`);
  out.lines.push(
    `Funded gig ${funded.gigId}: ${formatAmountWithBase(funded.amount, await assetUnitOf(publicClient, asset))} for ${who}, due by ${formatMoment(now + deadlineIn, now)}, dispute window ${formatDuration(disputeWindow)} (gas ${funded.gasUsed}${funded.approval ? `, approval gas ${funded.approval.gasUsed}` : ""}).`,
  );
  Object.assign(out.result, {
    gigId: funded.gigId.toString(),
    amount: funded.amount.toString(),
    asset,
    provider,
    icsHash,
    ...(icsFile ? { icsFile } : {}),
    deadline: (now + deadlineIn).toString(),
    disputeWindow: disputeWindow.toString(),
    client: client ?? account.address,
    funder: account.address,
    gasUsed: Number(funded.gasUsed),
    ...(funded.approval ? { approvalGasUsed: Number(funded.approval.gasUsed) } : {}),
  });
}

export async function runGigSettlement(
  values: Record<string, unknown>,
  out: Out,
  settle: (parameters: { wallet: Wallet; publicClient: PublicClient; gigEscrow: Address; gigId: bigint }) => Promise<SettledGig>,
): Promise<void> {
  const account = loadAccount(values);
  const gigId = gigIdOf(values);
  const { publicClient, wallet, gigEscrow } = await gigClients(values, account);
  const settled = await settle({ wallet: wallet!, publicClient, gigEscrow, gigId });
  const unit = await assetUnitOf(publicClient, (await readGig({ publicClient, gigEscrow, gigId })).asset);
  out.lines.push(`Gig ${gigId} ${settled.status}: ${formatAmountWithBase(settled.toProvider, unit)} to the provider, ${formatAmountWithBase(settled.toClient, unit)} to the client (gas ${settled.gasUsed}).`);
  Object.assign(out.result, {
    gigId: gigId.toString(),
    status: settled.status,
    toProvider: settled.toProvider.toString(),
    toClient: settled.toClient.toString(),
    gasUsed: Number(settled.gasUsed),
  });
}

export async function runGigAccept(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const gigId = gigIdOf(values);
  const { publicClient, wallet, gigEscrow } = await gigClients(values, account);
  const accepted = await acceptGig({ wallet: wallet!, publicClient, gigEscrow, gigId });
  out.lines.push(`Accepted gig ${gigId} as ${accepted.provider} (gas ${accepted.gasUsed}).`);
  Object.assign(out.result, { gigId: gigId.toString(), provider: accepted.provider, gasUsed: Number(accepted.gasUsed) });
}

export async function runGigDeliver(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const gigId = gigIdOf(values);
  const deliverableHash = hashOption(values, "deliverable", "the hash of the deliverable");
  const receiptRoot = values["receipt-root"] === undefined ? undefined : hashOption(values, "receipt-root", "the root of the work's receipts");
  const { publicClient, wallet, gigEscrow } = await gigClients(values, account);
  const delivered = await deliverGig({ wallet: wallet!, publicClient, gigEscrow, gigId, deliverableHash, ...(receiptRoot ? { receiptRoot } : {}) });
  out.lines.push(`Delivered gig ${gigId}; the client may dispute until ${formatMoment(delivered.windowEndsAt, (await publicClient.getBlock()).timestamp)} (gas ${delivered.gasUsed}).`);
  Object.assign(out.result, { gigId: gigId.toString(), deliverableHash, receiptRoot: receiptRoot ?? `0x${"0".repeat(64)}`, windowEndsAt: delivered.windowEndsAt.toString(), gasUsed: Number(delivered.gasUsed) });
}

export async function runGigShow(values: Record<string, unknown>, out: Out): Promise<void> {
  const gigId = gigIdOf(values);
  const { publicClient, gigEscrow } = await gigClients(values);
  const gig = await readGig({ publicClient, gigEscrow, gigId });
  if (gig.status === "None") throw new UsageError(`Gig ${gigId} does not exist in the GigEscrow at ${gigEscrow}.`);
  const now = (await publicClient.getBlock()).timestamp;
  out.lines.push(`gig ${gigId}: ${gig.status}, ${formatAmountWithBase(gig.amount, await assetUnitOf(publicClient, gig.asset))}`);
  out.lines.push(`  client ${gig.client}, provider ${BigInt(gig.provider) === 0n ? "(any active provider)" : gig.provider}`);
  out.lines.push(`  ICS ${gig.icsHash}, deadline ${formatMoment(gig.deadline, now)}, dispute window ${formatDuration(gig.disputeWindow)}`);
  if (gig.windowEndsAt !== 0n) out.lines.push(`  delivered ${gig.deliverableHash} (receipts ${gig.receiptRoot}); window ends ${formatMoment(gig.windowEndsAt, now)}`);
  if (gig.frozenAt !== 0n) out.lines.push(`  frozen by a dispute at ${formatDate(gig.frozenAt)}`);
  Object.assign(out.result, gigViewToJson(gig));
}

export const GIG_HELP = ["  --gig-escrow ADDR  GigEscrow (default $IOI_GIG_ESCROW, else the deployment record)"];
