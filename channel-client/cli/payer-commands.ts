/**
 * The payer's channel commands: `ioi open`, `import`, `stream`, `call`, `status`, `results` and `export`.
 */
import { existsSync, writeFileSync } from "node:fs";
import { decodeFunctionData, getAddress, isAddress, isAddressEqual, keccak256, stringToBytes } from "viem";

import { BaseError } from "../core/errors";
import { secp256k1Backend } from "../core/secp256k1";
import { gasEscrowAbi, openChannel, CHANNEL_PHASES } from "../chain/escrow";
import { readSettledDisputeWindow } from "../chain/dispute-window";
import { isContractAccount } from "../chain/wallet-signature";
import { readPaged } from "../chain/logs";
import type { InvocationOutcome } from "../node/payer-client";
import { parsePeer } from "../node/endpoints";
import { readRequestFile, RequestFileReader, requestFrom, RequestFileError } from "../node/requests";
import { signedSessionReceiptToJson } from "../core/receipt";
import { exportLines } from "../node/archive";
import { channelRefToJson, describePricing, hasDocumentBody, disputeWindowProblem, sessionIdOf, type ChannelRef, NATIVE_ASSET, termsHashOf, type PricingTerms } from "../core/terms";
import { signedPaymentTicketToJson } from "../core/ticket";
import type { JsonObject } from "../core/validate";
import {
  addressOption,
  boundedUint,
  channelOf,
  loadAccount,
  need,
  openAnyStore,
  openExistingStore,
  openStore,
  sessionOf,
  storedChannelOn,
  storePath,
  uint,
  UsageError,
  weiAmount,
  type Out,
} from "./common";
import { deployedContract, readingOf } from "./chain";
import { formatAmountWithBase, formatMoment } from "../core/format";
import { loggerFrom } from "../node/observability";
import { SYNTHETIC_METHOD, asUsage, assertAffordable, chainClients, firstOffer, fleetPayer, methodCheck, outcomeJson, peersOf, progressBar, sessionKeyOf, termsOption, walletKeyOf } from "./channel-plumbing";
import { nodeModules } from "./channel-plumbing";

export async function runOpen(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const provider = need(values, "provider", "the provider's address");
  if (!isAddress(provider)) throw new UsageError(`--provider must be an address; received "${provider}".`);
  // A sponsored channel (issue 14): the acting key funds it for another payer.
  if (values.payer !== undefined && values["payer-wallet"] !== undefined) throw new UsageError("Give either --payer ADDR (a sponsored payer's key) or --payer-wallet W (a contract wallet your key signs for), not both.");
  const payerWallet = values["payer-wallet"] === undefined ? undefined : addressOption(values, "payer-wallet", "the contract wallet your key signs for");
  const payer = payerWallet ?? (values.payer === undefined ? account.address : addressOption(values, "payer", "the payer who signs the tickets"));
  const sponsored = payerWallet === undefined && payer.toLowerCase() !== account.address.toLowerCase();
  if (values["ref-out"] !== undefined && !sponsored) throw new UsageError("--ref-out is for a sponsored channel (--payer ADDR): the payer's own store keeps its channels.");
  const deposit = weiAmount(values, "deposit", "wei to lock in the channel");
  if (deposit === 0n) throw new UsageError("--deposit must be more than zero: a channel with nothing in it can pay for nothing.");
  // Every option is checked before reaching for a node.
  if (values.price !== undefined && values["terms-file"] !== undefined) throw new UsageError("Give either --price WEI (a flat price per invocation) or --terms-file FILE (a terms document), not both.");
  if (values.price !== undefined) weiAmount(values, "price", "wei per invocation");
  const agreed = values["terms-file"] !== undefined ? termsOption(values, "wei per invocation") : undefined;
  uint(values, "challenge", "challenge window in seconds", 3600n);
  const { publicClient, wallet, escrow, domain, chainId } = await chainClients(values, account);
  if (payerWallet !== undefined && !(await isContractAccount({ publicClient, address: payerWallet }))) {
    throw new UsageError(`--payer-wallet ${payerWallet} holds no code on chain ${chainId}: it is not a contract wallet (a plain key pays as itself, or as --payer).`);
  }
  // No funding before agreement (issue 12): with --peer, ask the provider for its signed terms first and
  // fund only a channel on them; without it, say what could not be checked.
  let pricing: PricingTerms;
  let termsChecked = false;
  const peers = values.peer === undefined ? undefined : peersOf(values, undefined);
  if (peers !== undefined) {
    // A fleet (decision 0036): the offer of the first endpoint that answers; each is signed by the provider's key.
    const { peer, offer } = await firstOffer(peers, values["allow-remote"] === true, (host, port) => nodeModules.payerClient().then((m) => m.fetchTermsOffer({ account, domain, provider: getAddress(provider), host, port })));
    if (values.price !== undefined) {
      const wanted = weiAmount(values, "price", "wei per invocation");
      if (offer.pricing.version !== "1") {
        throw new UsageError(`The provider at ${peer} offers a terms document (${describePricing(offer.pricing)}), not a flat price of ${wanted} wei; nothing was funded (open with --terms-file holding the document you agree to).`);
      }
      if (wanted !== offer.pricing.pricePerInvocation) {
        throw new UsageError(`The provider at ${peer} charges ${offer.pricing.pricePerInvocation} wei per invocation, not ${wanted}; nothing was funded (open with --price ${offer.pricing.pricePerInvocation}, or not at all).`);
      }
    }
    if (agreed !== undefined && termsHashOf(agreed) !== offer.termsHash) {
      throw new UsageError(
        `The provider at ${peer} offers terms ${offer.termsHash} (${describePricing(offer.pricing)}); the document in --terms-file ${String(values["terms-file"])} hashes to ${termsHashOf(agreed)} (${describePricing(agreed)}); nothing was funded.`,
      );
    }
    pricing = offer.pricing;
    termsChecked = true;
  } else {
    pricing = agreed ?? { version: "1", unit: "invocation", pricePerInvocation: weiAmount(values, "price", "wei per invocation, as the provider charges") };
    out.lines.push("Warning: without --peer the provider's terms were not checked; if it refuses this price, only a unilateral close and its full window return the deposit.");
  }
  // Terms promising a longer dispute window than the chain enforces would mislead the payer (decision 0026): refused.
  if (hasDocumentBody(pricing)) {
    const disputeManager = await deployedContract(values, publicClient, "dispute-manager", "IOI_DISPUTE_MANAGER", "DisputeManager").catch(() => undefined);
    if (disputeManager === undefined) {
      out.lines.push("Warning: no DisputeManager is known for this chain (deployment record or $IOI_DISPUTE_MANAGER), so the terms' dispute window was not compared with the chain's.");
    } else {
      const problem = disputeWindowProblem(pricing, await readSettledDisputeWindow(publicClient, disputeManager.address));
      if (problem) throw new UsageError(`Refusing the terms: ${problem}; nothing was funded.`);
    }
  }
  const store = openStore(values, "payer");
  try {
    const opened = await openChannel({
      wallet: wallet!,
      publicClient,
      escrow,
      amount: deposit,
      terms: {
        payer,
        provider: getAddress(provider),
        funder: account.address,
        asset: NATIVE_ASSET,
        termsHash: termsHashOf(pricing),
        policyHash: keccak256(stringToBytes((values.policy as string | undefined) ?? "policy: default")),
        challengeDuration: uint(values, "challenge", "challenge window in seconds", 3600n),
        nonce: BigInt(Date.now()),
      },
    });
    if (!sponsored) {
      await store.putChannel({ sessionId: opened.sessionId, role: "payer", ref: opened.ref, pricing, escrow, chainId, deposit: opened.deposit, status: "open", ...(peers ? { peer: peers.join(",") } : {}) });
    }
    out.lines.push(`Opened session ${opened.sessionId} with ${formatAmountWithBase(opened.deposit)} ${pricing.version === "1" ? ` at ${formatAmountWithBase(pricing.pricePerInvocation)} per invocation` : ` on terms ${termsHashOf(pricing)} (${describePricing(pricing)})`} (gas ${opened.gasUsed}).`);
    const ref = channelRefToJson(opened.ref);
    if (sponsored) {
      out.lines.push(`Sponsored: ${payer} signs the tickets (it holds no funds); refunds come back to ${account.address}.`);
      const refOut = values["ref-out"] as string | undefined;
      if (refOut) {
        try {
          writeFileSync(refOut, `${JSON.stringify(ref, null, 2)}\n`);
        } catch (cause) {
          throw new UsageError(`Cannot write --ref-out ${refOut}: ${(cause as Error).message.split("\n")[0]}.`, { cause });
        }
        out.lines.push(`Wrote the channel reference for the payer to ${refOut} (ioi session-key authorize --ref ${refOut}).`);
      }
    }
    Object.assign(out.result, { sessionId: opened.sessionId, openedAt: opened.ref.openedAt.toString(), deposit: opened.deposit.toString(), gasUsed: Number(opened.gasUsed), domain: { chainId: domain.chainId, escrow }, ...(pricing.version === "1" ? { pricePerInvocation: pricing.pricePerInvocation.toString() } : {}), termsHash: termsHashOf(pricing), termsChecked, payer, funder: account.address, ref });
  } finally {
    await store.close();
  }
}

/**
 * `ioi import` (issue 14): a sponsored payer's way in. The sponsor opened the channel (`ioi open --payer`), so the
 * payer's store has no record of it. Everything is read from the chain, never taken on trust: the escrow must hold
 * code; the `ChannelOpened` event for the session (paged logs) gives the opening block and the transaction, whose
 * calldata (`GasEscrow.open(terms, amount)`) gives the terms; those terms must derive the session id, name the
 * acting key as payer, and bind the hash of the terms document the payer agrees to; the channel must be open.
 */
export async function runImport(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  const sessionId = sessionOf(values);
  if (values.price === undefined && values["terms-file"] === undefined) throw new UsageError("Give --price WEI or --terms-file FILE: the terms you agree to pay on (their hash must be the channel's).");
  const pricing = termsOption(values, "wei per invocation");
  if (values.peer !== undefined) asUsage(() => parsePeer(values.peer as string, values["allow-remote"] === true));
  const { publicClient, escrow, domain, chainId, fromBlock } = await chainClients(values, account);
  const code = await publicClient.getCode({ address: escrow });
  if (code === undefined || code === "0x") throw new UsageError(`No contract code at the escrow ${escrow}; nothing was imported.`);
  const head = await publicClient.getBlockNumber();
  const read = (from: bigint, to: bigint) =>
    publicClient.getContractEvents({ address: escrow, abi: gasEscrowAbi, eventName: "ChannelOpened", args: { sessionId }, fromBlock: from, toBlock: to });
  const reading = readingOf(values, chainId);
  const found = await readPaged<Awaited<ReturnType<typeof read>>[number]>(
    { fromBlock, toBlock: head, maxBlockRange: reading.batchBlocks, retry: reading.retry, done: (items) => items.length > 0 },
    read,
  );
  const opened = found[0];
  if (!opened) throw new UsageError(`No channel ${sessionId} was opened on the escrow ${escrow} (blocks ${fromBlock}–${head}); check --session and the chain.`);
  const tx = await publicClient.getTransaction({ hash: opened.transactionHash });
  let terms: ChannelRef["terms"];
  try {
    if (!tx.to || !isAddressEqual(tx.to, escrow)) throw new Error("not sent to the escrow");
    const call = decodeFunctionData({ abi: gasEscrowAbi, data: tx.input });
    if (call.functionName !== "open") throw new Error(`a ${call.functionName} call`);
    terms = call.args[0];
  } catch (cause) {
    throw new UsageError(`The channel was opened by transaction ${opened.transactionHash}, which is not a direct GasEscrow.open call (${(cause as Error).message.split("\n")[0]}); its terms cannot be read from the chain.`, { cause });
  }
  const ref: ChannelRef = { terms: { ...terms, payer: getAddress(terms.payer), provider: getAddress(terms.provider), funder: getAddress(terms.funder), asset: getAddress(terms.asset) }, openedAt: BigInt(opened.args.openedAt!) };
  if (sessionIdOf(domain, ref) !== sessionId) throw new UsageError(`The terms in transaction ${opened.transactionHash} do not derive session ${sessionId}; nothing was imported.`);
  if (!isAddressEqual(ref.terms.payer, account.address)) {
    throw new UsageError(`Session ${sessionId} names ${ref.terms.payer} as its payer, not you (${account.address}); only the payer streams on it.`);
  }
  if (termsHashOf(pricing) !== ref.terms.termsHash) {
    throw new UsageError(`The channel binds terms ${ref.terms.termsHash}; ${values["terms-file"] !== undefined ? `the document in --terms-file ${String(values["terms-file"])}` : `--price ${String(values.price)}`} hashes to ${termsHashOf(pricing)} (${describePricing(pricing)}); nothing was imported.`);
  }
  const [phase, deposit] = await Promise.all([
    publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [sessionId] }),
    publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "depositOf", args: [sessionId] }),
  ]);
  if (phase !== 1) throw new UsageError(`Session ${sessionId} is not open on-chain (phase ${phase}); nothing was imported.`);
  const store = openStore(values, "payer");
  try {
    const known = store.getChannel(sessionId);
    if (known && (known.role !== "payer" || termsHashOf(known.pricing) !== ref.terms.termsHash)) {
      throw new UsageError(`The store already holds session ${sessionId} as a ${known.role} channel on other terms; use another --db.`);
    }
    const peer = (values.peer as string | undefined) ?? known?.peer;
    await store.putChannel({ sessionId, role: "payer", ref, pricing, escrow, chainId, deposit, status: "open", ...(peer ? { peer } : {}) });
    out.lines.push(
      `Imported session ${sessionId}: you (${account.address}) pay ${ref.terms.provider} from a deposit of ${formatAmountWithBase(deposit)} funded by ${ref.terms.funder} (refunds go there); terms ${describePricing(pricing)}.`,
    );
    Object.assign(out.result, { sessionId, payer: ref.terms.payer, funder: ref.terms.funder, provider: ref.terms.provider, deposit: deposit.toString(), termsHash: ref.terms.termsHash, openedAt: ref.openedAt.toString(), ref: channelRefToJson(ref) });
  } finally {
    await store.close();
  }
}

export async function runStream(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  // Every option is checked before the chain or the store is touched.
  if (values.n !== undefined && values["request-file"] !== undefined) throw new UsageError("Give either -n (synthetic requests) or --request-file, not both.");
  // A request file is streamed line by line (issue 28 item 8): checked once in full here, then read again as sent.
  const sessionId = sessionOf(values);
  const sessionKey = sessionKeyOf(values, sessionId);
  // A session key pays only for the methods its grant names (decision 0025): a request it cannot pay for is named
  // before anything is paid (issue 28 item 9: the README's sequence used to fail mid-stream).
  const allowed = sessionKey ? methodCheck(sessionKey.grant) : undefined;
  const requests = values["request-file"] === undefined ? undefined : asUsage(() => RequestFileReader.open(values["request-file"] as string, allowed));
  if (!requests && allowed?.(SYNTHETIC_METHOD)) {
    throw new UsageError(`-n streams synthetic ${SYNTHETIC_METHOD} calls, but --session-key ${String(values["session-key"])} may pay only for ${sessionKey!.grant.methods.join(", ")}; stream a --request-file of those methods, or authorize the key with --methods ${SYNTHETIC_METHOD}.`);
  }
  const count = requests ? requests.count : Number(boundedUint(values, "n", "how many invocations to stream (or give --request-file)", 1n, 10_000_000n));
  const inflight = Number(boundedUint(values, "inflight", "invocations in flight at once", 1n, 4_096n, 16n));
  // Signed receipt commits mid-stream: every N receipts and/or T seconds (0 turns either off).
  const commitEvery = Number(boundedUint(values, "commit-every", "receipts between two receipt commits (0: none mid-stream)", 0n, 10_000_000n, 100n));
  const commitIntervalMs = Number(boundedUint(values, "commit-seconds", "seconds between two receipt commits (0: none)", 0n, 86_400n, 0n)) * 1000;
  if (values.peer !== undefined) peersOf(values, undefined);
  const { domain, chainId } = await chainClients(values);
  const store = openExistingStore(values, "payer");
  // Ctrl-C stops sending; every call already paid for is awaited, its result stored and printed (issue 28 item 8).
  const interrupt = new AbortController();
  const onSignal = () => {
    process.stderr.write("\nInterrupted: no new calls are paid for; waiting for the answers to those already paid (Ctrl-C again quits at once).\n");
    interrupt.abort();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const channel = storedChannelOn(store, sessionId, chainId, domain.verifyingContract);
    const peers = peersOf(values, channel);
    const walletKey = await walletKeyOf(values, account, channel, store);
    if (walletKey && sessionKey) throw new UsageError("Give either --session-key FILE or --payer-wallet W: a wallet payer's key is its own session key.");
    const key = walletKey ?? sessionKey;
    const fleet = await fleetPayer(values, peers, { account, domain, store, channel, logger: loggerFrom(values, "payer"), ...(key ? { sessionKey: key } : {}) });
    await assertAffordable(fleet.client, channel, count);
    const started = performance.now();
    // Ids of requests in flight, by index: what an answer is printed under (the file itself is never held).
    const ids = new Map<number, JsonObject["id"]>();
    let answered = 0;
    const latencies = await fleet.stream({
      count,
      inflight,
      request: (i) => {
        if (!requests) return { jsonrpc: "2.0", id: `invoke-${i}`, method: SYNTHETIC_METHOD, params: { text: `invocation ${i}` } };
        const request = requests.next();
        ids.set(i, request.id);
        return request;
      },
      onProgress: progressBar(count),
      commitEvery,
      commitIntervalMs,
      signal: interrupt.signal,
      // With a request file, each answer is printed the moment it is durable (stored with its receipt): one
      // JSON line per request, on stdout at once — never held until the stream ends.
      onOutcome: (i: number, o: InvocationOutcome) => {
        answered += 1;
        if (!requests) return;
        const id = ids.get(i);
        ids.delete(i);
        console.log(JSON.stringify(outcomeJson({ id: id ?? null }, o)));
      },
    });
    requests?.close();
    const seconds = (performance.now() - started) / 1000;
    const client = fleet.client;
    const { root, leafCount } = await client.commit();
    await client.close();
    latencies.sort((a, b) => a - b);
    const perSecond = Math.round(answered / seconds);
    const p50 = latencies.length ? `${latencies[Math.floor(latencies.length / 2)]!.toFixed(1)} ms` : "n/a";
    if (interrupt.signal.aborted) {
      out.lines.push(`Interrupted after ${answered} of ${count} invocations; every paid call's result is stored (\`ioi results --session ${channel.sessionId}\`); root ${root} over ${leafCount} receipts, agreed with the provider.`);
      out.exitCode = 130;
    } else {
      out.lines.push(`Streamed ${count} invocations in ${seconds.toFixed(2)} s (${perSecond}/s, p50 ${p50}); root ${root} over ${leafCount} receipts, agreed with the provider.`);
    }
    Object.assign(out.result, { sessionId: channel.sessionId, invocations: answered, requested: count, interrupted: interrupt.signal.aborted, seconds, ticketsPerSecond: perSecond, endpoint: fleet.endpoint, finalSeq: client.session.seq.toString(), paid: client.session.cumulativeAmount.toString(), charged: client.session.charged.toString(), receiptRoot: root });
  } finally {
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
    requests?.close();
    await store.close();
  }
}

export async function runCall(values: Record<string, unknown>, out: Out): Promise<void> {
  const account = loadAccount(values);
  if ((values["request-file"] === undefined) === (values.method === undefined)) throw new UsageError("Give the request as --request-file F or as --method M [--params JSON] (one of them).");
  if (values.params !== undefined && values.method === undefined) throw new UsageError("--params goes with --method.");
  const request = asUsage(() => {
    if (values.method !== undefined) return requestFrom(values.method as string, values.params as string | undefined, "call-1");
    const requests = readRequestFile(values["request-file"] as string);
    if (requests.length !== 1) throw new RequestFileError(`${values["request-file"] as string} holds ${requests.length} requests; \`ioi call\` sends one (use \`ioi stream --request-file\` for many).`);
    return requests[0]!;
  });
  const sessionId = sessionOf(values);
  const sessionKey = sessionKeyOf(values, sessionId);
  const refused = sessionKey ? methodCheck(sessionKey.grant)(request.method as string) : undefined;
  if (refused) throw new UsageError(`The request: ${refused}`);
  if (values.peer !== undefined) peersOf(values, undefined);
  const { domain, chainId } = await chainClients(values);
  const store = openExistingStore(values, "payer");
  try {
    const channel = storedChannelOn(store, sessionId, chainId, domain.verifyingContract);
    const fleet = await fleetPayer(values, peersOf(values, channel), { account, domain, store, channel, ...(sessionKey ? { sessionKey } : {}) });
    await assertAffordable(fleet.client, channel, 1);
    try {
      // One call, resumed on the next endpoint if its process goes away before the answer is stored.
      let answered: InvocationOutcome | undefined;
      await fleet.stream({ count: 1, request: () => request, onOutcome: (_i, o) => (answered = o) });
      if (!answered) throw new BaseError("The call was not answered.");
      const outcome: InvocationOutcome = answered;
      const printed = outcomeJson(request, outcome);
      if (outcome.error) {
        out.lines.push(`The provider's worker failed (not charged): ${outcome.error.message}`);
        out.exitCode = 1;
      } else {
        out.lines.push(JSON.stringify(outcome.result ?? null, null, 2));
      }
      Object.assign(out.result, { sessionId: channel.sessionId, endpoint: fleet.endpoint, ...printed });
    } finally {
      await fleet.client.close();
    }
  } finally {
    await store.close();
  }
}

export async function runStatus(values: Record<string, unknown>, out: Out): Promise<void> {
  // Which secp256k1 implementation signs and checks on this machine (decision 0023).
  out.lines.push(`secp256k1 backend: ${secp256k1Backend().implementation}`);
  out.result.crypto = secp256k1Backend().implementation;
  // A read-only command creates no store (issue 28 item 9): without one there is nothing to list.
  const file = storePath(values, "payer");
  if (!values.session && !existsSync(file)) {
    out.lines.push(`No store at ${file}: it holds no channels.`);
    out.result.channels = [];
    return;
  }
  const sessionId = values.session === undefined ? undefined : sessionOf(values);
  const store = openExistingStore(values, "payer");
  try {
    if (!values.session) {
      const channels = store.listChannels();
      for (const c of channels) out.lines.push(`${c.sessionId}  ${c.role.padEnd(8)} ${c.status.padEnd(8)} deposit ${formatAmountWithBase(c.deposit)}  seq ${store.latestTicket(c.sessionId)?.ticket.seq ?? 0n}`);
      if (channels.length === 0) out.lines.push("The store holds no channels.");
      out.result.channels = channels.map((c) => ({ sessionId: c.sessionId, role: c.role, status: c.status, deposit: c.deposit.toString() }));
      return;
    }
    channelOf(store, sessionId!);
    const { publicClient, escrow, chainId } = await chainClients(values);
    const channel = storedChannelOn(store, sessionId!, chainId, escrow);
    const phase = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [channel.sessionId] });
    const phases = CHANNEL_PHASES;
    const latest = store.latestTicket(channel.sessionId);
    const closing = store.getClosing(channel.sessionId);
    out.lines.push(`session ${channel.sessionId} (${channel.role}), on-chain phase ${phases[phase]}, stored status ${channel.status}`);
    out.lines.push(`  deposit ${formatAmountWithBase(channel.deposit)}, newest ticket seq ${latest?.ticket.seq ?? 0n} for ${formatAmountWithBase(latest?.ticket.cumulativeAmount ?? 0n)}, receipts ${store.receiptCount(channel.sessionId)}`);
    if (closing) out.lines.push(`  closing with seq ${closing.state.seq} until ${formatMoment(closing.finalizesAt, (await publicClient.getBlock()).timestamp)}`);
    Object.assign(out.result, {
      sessionId: channel.sessionId,
      role: channel.role,
      phase: phases[phase],
      status: channel.status,
      deposit: channel.deposit.toString(),
      newestSeq: (latest?.ticket.seq ?? 0n).toString(),
      receipts: store.receiptCount(channel.sessionId),
    });
  } finally {
    await store.close();
  }
}

/** Results printed per store read: `ioi results` holds one page, never a whole session. */
export const RESULTS_PAGE = 1000;

/**
 * `ioi results` (issue 28 item 8): every stored result of a payer's channel with the ticket that paid for it and
 * the provider's signed receipt, one JSON line each, read page by page. Offline: nothing is sent.
 */
export async function runResults(values: Record<string, unknown>, out: Out): Promise<void> {
  const sessionId = sessionOf(values);
  let fromSeq = uint(values, "from-seq", "the first seq to print", 1n);
  const store = openExistingStore(values, "payer");
  try {
    const channel = channelOf(store, sessionId);
    if (channel.role !== "payer") throw new UsageError(`Session ${sessionId} is stored as a ${channel.role} channel; results are kept by the payer's store.`);
    let printed = 0;
    let unverified = 0;
    for (;;) {
      const page = store.results(sessionId, { fromSeq, limit: RESULTS_PAGE });
      if (page.length === 0) break;
      const steps = new Map(store.steps(sessionId, { fromSeq: page[0]!.seq, limit: Number(page[page.length - 1]!.seq - page[0]!.seq) + 1 }).map((step) => [step.seq, step]));
      for (const stored of page) {
        const step = steps.get(stored.seq);
        const request = JSON.parse(stored.request) as JsonObject;
        const output = JSON.parse(stored.output) as JsonObject;
        const receipt = step?.receipt;
        const verified =
          receipt !== undefined &&
          receipt.receipt.outputHash === keccak256(stringToBytes(stored.output)) &&
          receipt.receipt.offloadPacketHash === keccak256(stringToBytes(stored.request));
        if (!verified) unverified += 1;
        const failed = receipt !== undefined && Object.keys(output).length === 1 && "error" in output && receipt.receipt.metering.amount === 0n;
        console.log(JSON.stringify({
          seq: stored.seq.toString(),
          id: request.id ?? null,
          method: request.method,
          ...(failed ? { error: output.error } : { result: output }),
          charged: receipt ? receipt.receipt.metering.amount.toString() : null,
          verified,
          ...(step ? { ticket: signedPaymentTicketToJson(step.ticket) } : {}),
          ...(receipt ? { receipt: signedSessionReceiptToJson(receipt) } : {}),
        }));
        printed += 1;
      }
      fromSeq = page[page.length - 1]!.seq + 1n;
    }
    const paid = store.latestTicket(sessionId)?.ticket.seq ?? 0n;
    const answered = store.receiptCount(sessionId);
    process.stderr.write(`${printed} stored result(s) of session ${sessionId}; ${answered} receipted call(s), newest ticket seq ${paid}${unverified ? `; ${unverified} do not match their receipt` : ""}.\n`);
    if (unverified > 0) out.exitCode = 3;
    out.json = false; // the JSON lines are the output
  } finally {
    await store.close();
  }
}

export async function runExport(values: Record<string, unknown>, out: Out): Promise<void> {
  const store = await openAnyStore(values, "provider");
  try {
    const sessionId = sessionOf(values);
    channelOf(store, sessionId);
    const { publicClient, escrow, chainId } = await chainClients(values);
    const channel = storedChannelOn(store, sessionId, chainId, escrow);
    const reading = readingOf(values, chainId);
    const lines = await exportLines({ store, channel, publicClient, escrow, maxBlockRange: reading.batchBlocks, retry: reading.retry });
    for (const line of lines) console.log(line);
    out.json = false; // the JSON lines are the output
  } finally {
    await store.close();
  }
}
