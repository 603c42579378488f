/**
 * `ioi session-key authorize|revoke|list` (issue 14, decision 0025): the payer grants an ephemeral key the
 * right to sign a channel's tickets (a signed EIP-712 grant, no transaction), revokes it on-chain, and lists
 * what the chain says of its keys. The channel comes from the payer's store (`--session ID`) or, for a
 * sponsored channel the payer did not open, from the reference file `ioi open --payer … --ref-out FILE` wrote
 * (`--ref FILE`).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { getAddress, parseEventLogs, type Address, type Hex, type LocalAccount } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

import { getLogsPaged } from "../chain/logs";
import { chainClients } from "./channel-plumbing";
import { gasEscrowAbi, readSessionKeyChainState, revokeAllSessionKeys, revokeSessionKey } from "../chain/escrow";
import { BaseError } from "../core/errors";
import { parseJson } from "../core/canonical";
import {
  ANY_METHOD,
  signedSessionKeyGrantFromJson,
  signedSessionKeyGrantToJson,
  signSessionKeyGrant,
  verifySessionKeyGrant,
} from "../core/session-key";
import { channelRefFromJson, sessionIdOf, type ChannelRef } from "../core/terms";
import { addressOption, boundedUint, channelOf, loadAccount, openExistingStore, openStore, sessionOf, storePath, UsageError, weiAmount, type Command, type Out } from "./common";
import { recoverDigestSigner } from "../core/eip712";
import { paymentTicketDigest } from "../core/ticket";
import type { GasEscrowDomain } from "../core/eip712";
import { formatAmountWithBase, formatMoment } from "../core/format";

const CHANNEL_OPTIONS = { session: { type: "string" }, ref: { type: "string" } } as const;

/** The channel: `--ref FILE` (a ChannelRef JSON) or `--session ID` from the payer's store. */
function channelRefOf(values: Record<string, unknown>): ChannelRef {
  if (values.ref !== undefined && values.session !== undefined) throw new UsageError("Give either --session (a channel in the store) or --ref FILE, not both.");
  if (values.ref !== undefined) {
    const file = values.ref as string;
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      throw new UsageError(`Cannot read --ref ${file}: it must be the channel reference \`ioi open --payer … --ref-out FILE\` wrote.`);
    }
    try {
      return channelRefFromJson(parseJson(text, { maxBytes: 64 * 1024, what: `--ref ${file}` }), "ref");
    } catch (cause) {
      throw new UsageError(`--ref ${file} is not a channel reference: ${(cause as BaseError).shortMessage ?? (cause as Error).message}`, { cause });
    }
  }
  const sessionId = sessionOf(values);
  const store = openExistingStore(values, "payer");
  try {
    return channelOf(store, sessionId).ref;
  } finally {
    void store.close();
  }
}

function requirePayer(account: LocalAccount, ref: ChannelRef, what: string): void {
  if (account.address.toLowerCase() !== ref.terms.payer.toLowerCase()) {
    throw new UsageError(`Only the channel's payer ${ref.terms.payer} may ${what}; the acting key is ${account.address}.`);
  }
}

function methodsOf(values: Record<string, unknown>): string[] {
  const text = (values.methods as string | undefined) ?? ANY_METHOD;
  const methods = text.split(",").map((m) => m.trim());
  if (methods.some((m) => m.length === 0 || m.length > 128)) {
    throw new UsageError(`--methods must be a comma-separated list of MCP method names (or * for any); received "${text}".`);
  }
  return methods;
}

async function runAuthorize(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  // Nothing secret is overwritten without --force (issue 28 item 9): the file may hold another grant's private key.
  const outPath = values.out as string | undefined;
  if (outPath !== undefined && existsSync(outPath) && values.force !== true) {
    throw new UsageError(`--out ${outPath} exists (it may hold another session key's grant and private key); choose a new file, or add --force to overwrite it.`);
  }
  // Every option is checked before the store or the chain is read.
  const cap = weiAmount(values, "cap", "the most the key's tickets may authorise in total (the channel's deposit caps it anyway)");
  const expiresIn = boundedUint(values, "expires-in", "seconds from now until the key expires", 1n, 365n * 86_400n, 3_600n);
  const methods = methodsOf(values);
  const ref = channelRefOf(values);
  requirePayer(account, ref, "grant its session keys");
  let key: Address;
  let privateKey: Hex | undefined;
  if (values.key !== undefined) key = addressOption(values, "key", "the session key's address (default: a fresh key, written to --out)");
  else {
    privateKey = generatePrivateKey();
    key = privateKeyToAccount(privateKey).address;
  }
  const outFile = values.out as string | undefined;
  if (privateKey && !outFile) throw new UsageError("A fresh session key needs --out FILE to keep its private key (or give --key ADDR for a key you hold).");
  const { publicClient, escrow, domain } = await chainClients(values, account);
  const sessionId = sessionIdOf(domain, ref);
  const now = (await publicClient.getBlock()).timestamp;
  const chain = await readSessionKeyChainState({ publicClient, escrow, sessionId, payer: ref.terms.payer, key });
  if (chain.revokedAt !== 0n) throw new UsageError(`Key ${key} was revoked on this channel at ${chain.revokedAt}; revoked keys stay revoked, so grant a fresh key.`);
  const signed = await signSessionKeyGrant({ account, domain, sessionId, key, expiry: now + expiresIn, spendCap: cap, methods, epoch: chain.currentEpoch });
  await verifySessionKeyGrant({ domain, signed, payer: ref.terms.payer, sessionId, now, chain });
  // The payer's store keeps the grants it signed: a session case on a ticket this key signs needs it (issue 27).
  if (values.session !== undefined) {
    const store = openStore(values, "payer");
    try {
      await store.putSessionKeyGrant(sessionId, signed);
    } finally {
      await store.close();
    }
  }
  const document = { grant: signedSessionKeyGrantToJson(signed), ...(privateKey ? { privateKey } : {}) };
  if (outFile) {
    try {
      // Without --force the file must still not exist when it is created (flag wx): no race overwrites a key.
      writeFileSync(outFile, `${JSON.stringify(document, null, 2)}\n`, { mode: 0o600, flag: values.force === true ? "w" : "wx" });
    } catch (cause) {
      throw new UsageError(`Cannot write --out ${outFile}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
    }
  }
  out.lines.push(
    `Granted session key ${key} on ${sessionId}: up to ${formatAmountWithBase(cap)} in total, for ${methods.join(", ")}, until ${formatMoment(now + expiresIn, now)} (epoch ${chain.currentEpoch}; no transaction).`,
  );
  if (outFile) out.lines.push(`Wrote the grant${privateKey ? " and the key's private key" : ""} to ${outFile} (mode 600).`);
  Object.assign(out.result, { sessionId, key, expiry: (now + expiresIn).toString(), spendCap: cap.toString(), methods: signed.methods, epoch: chain.currentEpoch.toString(), grant: document.grant, ...(outFile ? { out: outFile } : {}) });
}

async function runRevoke(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  if (values.all === true) {
    if (values.key !== undefined || values.session !== undefined || values.ref !== undefined) throw new UsageError("--all revokes every key on every channel: give it alone, without --key, --session or --ref.");
    if (values.yes !== true) {
      throw new UsageError(
        "Revoking every session key ends each channel whose provider holds a newest ticket signed by one of them: its watchtower closes the channel with that ticket inside the grace. Pay one call with your own key on channels you want to keep, then run again with --yes.",
      );
    }
    const { publicClient, wallet, escrow, chainId } = await chainClients(values, account);
    const revoked = await revokeAllSessionKeys({ wallet: wallet!, publicClient, escrow, chainId });
    out.lines.push(`Revoked every session key of ${account.address} (now in epoch ${revoked.epoch}); tickets they signed settle only until one challenge window after ${revoked.revokedAt} (gas ${revoked.gasUsed}).`);
    Object.assign(out.result, { all: true, epoch: revoked.epoch.toString(), revokedAt: revoked.revokedAt.toString(), gasUsed: Number(revoked.gasUsed) });
    return;
  }
  const key = addressOption(values, "key", "the session key to revoke (or --all)");
  const ref = channelRefOf(values);
  requirePayer(account, ref, "revoke its session keys");
  const { publicClient, wallet, escrow, chainId, domain } = await chainClients(values, account);
  // No transaction for nothing (issue 28 item 9): a key revoked already, or never granted on this channel.
  const sessionIdBefore = sessionIdOf(domain, ref);
  const chain = await readSessionKeyChainState({ publicClient, escrow, sessionId: sessionIdBefore, payer: ref.terms.payer, key });
  if (chain.revokedAt !== 0n) throw new UsageError(`Key ${key} is revoked on ${sessionIdBefore} already (at ${chain.revokedAt}); nothing was sent.`);
  await checkRevocation(values, domain, sessionIdBefore, key, out);
  const revoked = await revokeSessionKey({ wallet: wallet!, publicClient, escrow, chainId, ref, key });
  const sessionId = sessionIdOf(domain, ref);
  out.lines.push(
    `Revoked session key ${key} on ${sessionId} at ${revoked.revokedAt}; the provider refuses its tickets from that block, and those it accepted before settle until ${revoked.revokedAt + ref.terms.challengeDuration} (gas ${revoked.gasUsed}).`,
  );
  Object.assign(out.result, { sessionId, key, revokedAt: revoked.revokedAt.toString(), graceEnds: (revoked.revokedAt + ref.terms.challengeDuration).toString(), gasUsed: Number(revoked.gasUsed) });
}

/**
 * Refuses a revocation that does nothing or closes the channel unasked (issue 28 item 9): the payer's store must
 * hold a grant of `key` on the session (else it was never granted here; --force overrides), and when the newest
 * ticket the payer signed on it is the key's, the provider's watchtower will close the channel with it, so that
 * needs --yes.
 */
async function checkRevocation(values: Record<string, unknown>, domain: GasEscrowDomain, sessionId: Hex, key: Address, out: Out): Promise<void> {
  const file = storePath(values, "payer");
  const store = existsSync(file) ? openStore(values, "payer") : undefined;
  try {
    if (!store?.getChannel(sessionId)) {
      // A sponsored channel not imported yet: this store signed nothing on it and kept no grant, so nothing to check.
      out.lines.push(`Note: the store ${file} does not hold ${sessionId}; whether key ${key} was granted or signed its newest ticket was not checked.`);
      return;
    }
    if (store.sessionKeyGrants(sessionId, key).length === 0 && values.force !== true) {
      throw new UsageError(`The store ${file} holds no grant of key ${key} on ${sessionId}: revoking a key never granted here sends a transaction for nothing. Check --key, or add --force if you granted it from another store.`);
    }
    const newest = store.latestTicket(sessionId);
    const newestIsKeys = newest !== undefined && (await recoverDigestSigner(paymentTicketDigest(domain, newest.ticket), newest.signature)).toLowerCase() === key.toLowerCase();
    if (newestIsKeys && values.yes !== true) {
      throw new UsageError(
        `The newest ticket on ${sessionId} was signed by key ${key}: once the key is revoked, the provider's watchtower closes the channel with that ticket inside the grace. Pay one call with another key (or your own) to keep the channel, or run again with --yes.`,
      );
    }
  } finally {
    await store?.close();
  }
}

async function runList(values: Record<string, unknown>, out: Out): Promise<void> {
  const ref = channelRefOf(values);
  const { publicClient, escrow, domain, fromBlock } = await chainClients(values);
  const sessionId = sessionIdOf(domain, ref);
  const payer = ref.terms.payer;
  const head = await publicClient.getBlockNumber();
  const logs = await getLogsPaged({ publicClient, address: escrow, fromBlock: ref.openedAt > fromBlock ? ref.openedAt : fromBlock, toBlock: head });
  const events = parseEventLogs({ abi: gasEscrowAbi, logs, strict: true });
  const revocations = events.flatMap((e) => (e.eventName === "SessionKeyRevoked" && e.args.sessionId === sessionId ? [{ key: getAddress(e.args.key), revokedAt: BigInt(e.args.revokedAt) }] : []));
  const epochs = events.flatMap((e) => (e.eventName === "SessionKeysRevoked" && e.args.payer.toLowerCase() === payer.toLowerCase() ? [{ epoch: e.args.epoch, revokedAt: BigInt(e.args.revokedAt) }] : []));
  const currentEpoch = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "keyEpochOf", args: [payer] });
  out.lines.push(`Session ${sessionId} (payer ${payer}, epoch ${currentEpoch}):`);
  if (revocations.length === 0) out.lines.push("  no session key revoked on this channel");
  for (const r of revocations) out.lines.push(`  ${r.key} revoked at ${r.revokedAt}; its tickets settle until ${r.revokedAt + ref.terms.challengeDuration}`);
  for (const e of epochs) out.lines.push(`  every key of epoch ${e.epoch - 1n} revoked at ${e.revokedAt}`);
  const result: Record<string, unknown> = {
    sessionId,
    payer,
    epoch: currentEpoch.toString(),
    revoked: revocations.map((r) => ({ key: r.key, revokedAt: r.revokedAt.toString() })),
    epochsRevoked: epochs.map((e) => ({ epoch: (e.epoch - 1n).toString(), revokedAt: e.revokedAt.toString() })),
  };
  if (values.grant !== undefined) {
    const file = values.grant as string;
    let signed;
    try {
      const raw = JSON.parse(readFileSync(file, "utf8")) as { grant?: unknown };
      signed = signedSessionKeyGrantFromJson(raw.grant, "grant");
    } catch (cause) {
      throw new UsageError(`--grant ${file} is not a session-key grant file (as \`ioi session-key authorize --out\` writes): ${(cause as BaseError).shortMessage ?? (cause as Error).message}`, { cause });
    }
    const now = (await publicClient.getBlock()).timestamp;
    const chain = await readSessionKeyChainState({ publicClient, escrow, sessionId, payer, key: signed.grant.key });
    let status = "valid";
    try {
      await verifySessionKeyGrant({ domain, signed, payer, sessionId, now, chain });
    } catch (error) {
      status = (error as BaseError).shortMessage ?? (error as Error).message;
    }
    out.lines.push(`  grant ${file}: key ${signed.grant.key}, cap ${formatAmountWithBase(signed.grant.spendCap)}, methods ${signed.methods.join(", ")}, expires ${formatMoment(signed.grant.expiry, now)}: ${status}`);
    result.grant = { file, key: signed.grant.key, status };
  }
  Object.assign(out.result, result);
}

/** `ioi session-key <subcommand>`. */
export const SESSION_KEY_COMMANDS: Record<string, Command> = {
  authorize: {
    summary: "grant a session key the right to sign the channel's tickets (signed by the payer; no transaction)",
    usage: "ioi session-key authorize (--session ID | --ref FILE) --cap WEI [--expires-in SECONDS] [--methods M1,M2] [--key ADDR] [--out FILE]",
    notes: [
      "  --cap WEI            the most the key's tickets may authorise in total",
      "  --expires-in S       seconds until the key expires (default 3600)",
      "  --methods LIST       MCP methods the key may pay for, comma-separated (default *: any)",
      "  --key ADDR           a key you hold; without it a fresh key is made and written to --out",
      "  --out FILE           where to write the grant (and a fresh key's private key), mode 600; an existing file",
      "                       is never overwritten without --force",
    ],
    examples: ["ioi session-key authorize --session 0x… --cap 0.01eth --expires-in 600 --methods tools/call --out key.json"],
    options: { ...CHANNEL_OPTIONS, cap: { type: "string" }, "expires-in": { type: "string" }, methods: { type: "string" }, key: { type: "string" }, out: { type: "string" }, force: { type: "boolean" } },
    run: runAuthorize,
  },
  revoke: {
    summary: "revoke a session key on-chain (or --all: every key of the acting payer, on every channel)",
    usage: "ioi session-key revoke (--session ID | --ref FILE) --key ADDR   |   ioi session-key revoke --all",
    notes: [
      "  Not retroactive: tickets the provider accepted before the revocation's block settle for one challenge window after it.",
      "  When the provider's newest ticket is the key's, its watchtower closes the channel with it: that needs --yes (pay one",
      "  call with another key first to keep the channel). A key the store holds no grant of needs --force.",
    ],
    options: { ...CHANNEL_OPTIONS, key: { type: "string" }, all: { type: "boolean" }, yes: { type: "boolean" }, force: { type: "boolean" } },
    run: runRevoke,
  },
  list: {
    summary: "list the channel's session-key revocations and the payer's epoch; --grant FILE checks a grant",
    usage: "ioi session-key list (--session ID | --ref FILE) [--grant FILE]",
    options: { ...CHANNEL_OPTIONS, grant: { type: "string" } },
    run: runList,
  },
};
