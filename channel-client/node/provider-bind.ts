/**
 * Binding a channel to the provider node (issue 33 item 2: moved out of `ProviderNode`, decision 0021): the checks of
 * session.open against the terms and the chain, the session's resume from the store, the session-key grant, and
 * the handler runner every invocation goes through.
 */
import type { Address, Hex } from "viem";

import { CHANNEL_PHASES, gasEscrowAbi, readSessionKeyChainState } from "../chain/escrow";
import { payerSignatureCheck } from "../chain/wallet-signature";
import { canon, canonBytes } from "../core/canonical";
import type { SignatureCheck } from "../core/eip712";
import { BindingMismatchError, TicketNotNewerError, type BaseError } from "../core/errors";
import { utf8Bytes } from "../core/keccak";
import { verifySessionKeyGrantSignature, type SignedSessionKeyGrant } from "../core/session-key";
import { sessionIdOf, termsHashOf, type ChannelRef } from "../core/terms";
import { verifyPaymentTicket, type SignedPaymentTicket } from "../core/ticket";
import type { JsonObject } from "../core/validate";
import { ChannelPrunedError } from "../store/errors";
import type { SessionOpenMessage } from "./protocol";
import { HANDLER_FAILED_CODE, type Bound, type McpError, type ProviderContext } from "./provider-node-types";
import { ProviderSession } from "./provider-session";
import { TrancheCall } from "./stream-service";

/** Checks the payer's grant against the chain now (revocation, epoch) and binds it (decision 0025). */
export async function bindSessionKey(ctx: Pick<ProviderContext, "parameters">, b: Bound, grant: SignedSessionKeyGrant): Promise<void> {
  const chain = await readSessionKeyChainState({
    publicClient: ctx.parameters.publicClient,
    escrow: ctx.parameters.domain.verifyingContract,
    sessionId: b.record.sessionId,
    payer: b.record.ref.terms.payer,
    key: grant.grant.key,
  });
  await b.session.bindSessionKey(grant, chain);
  // Durable before any ticket under it is accepted: without the grant a key-signed ticket cannot go on-chain.
  await ctx.parameters.store.putSessionKeyGrant(b.record.sessionId, grant);
}

/** What an x402 payment over MCP carries that may move its channel to this process of a fleet. */
export type DetachedPayment = { ticket: SignedPaymentTicket; sessionKey?: SignedSessionKeyGrant | undefined };

/**
 * A fleet process takes a channel over for a payment over MCP (x402) only when the payment proves it comes from the
 * channel's payer (decision 0036, amended): over the sealed socket the handshake authenticates the payer's key before
 * anything is taken; over MCP nothing is authenticated but the ticket. So the ticket must be signed by the payer (or by
 * a key the payer granted for this channel, the grant carried beside it) and be no older than the newest ticket any
 * process stored for the channel (the newest itself only as stored: the payer sending the same payment again). An old
 * ticket, a stranger's or a forged one takes nothing: the channel stays where it is served, and the payment is refused
 * in one sentence.
 */
export async function assertPaymentMayTakeOver(ctx: Pick<ProviderContext, "parameters">, sessionId: Hex, ref: ChannelRef, payment: DetachedPayment | undefined, payerCheck?: SignatureCheck): Promise<void> {
  const { domain, ownership, publicClient } = ctx.parameters;
  if (payment === undefined) throw new BindingMismatchError(`Session ${sessionId} is not served by this process, and nothing proves the request comes from its payer.`);
  if (sessionIdOf(domain, ref) !== sessionId) throw new BindingMismatchError(`The terms name session ${sessionIdOf(domain, ref)}, not ${sessionId}.`);
  if (payerCheck === undefined) {
    const payerSignatures = await payerSignatureCheck({ publicClient, payer: ref.terms.payer });
    if (payerSignatures.wallet) payerCheck = payerSignatures.check;
  }
  const { ticket, sessionKey } = payment;
  const payer = ref.terms.payer;
  try {
    await verifyPaymentTicket({ domain, signed: ticket, signer: payer, ...(payerCheck ? { check: payerCheck } : {}) });
  } catch (error) {
    if (sessionKey === undefined || sessionKey.grant.sessionId !== sessionId) throw error;
    await verifySessionKeyGrantSignature({ domain, signed: sessionKey, payer, sessionId, ...(payerCheck ? { check: payerCheck } : {}) });
    await verifyPaymentTicket({ domain, signed: ticket, signer: sessionKey.grant.key });
  }
  const newest = await ownership!.newestTicket(sessionId);
  const seq = ticket.ticket.seq;
  if (newest && (seq < newest.seq || (seq === newest.seq && ticket.signature.toLowerCase() !== newest.signature.toLowerCase()))) {
    throw new TicketNotNewerError(`Ticket seq ${seq} is not newer than seq ${newest.seq}, the newest this provider holds for session ${sessionId}; an old payment does not move the channel between the provider's processes.`);
  }
}

/**
 * Verifies the channel the payer names (terms, pricing, on-chain deposit) and loads or creates its session.
 *
 * `connection`: the sealed connection's session and authenticated key. `peer` undefined: an x402 payment over MCP
 * (decision 0034), where no key is authenticated and every ticket is checked against the payer's signature (or its
 * bound grant's key) alone, as a ticket over the socket also is; in a fleet its `payment` must then prove it may
 * take the channel over (`assertPaymentMayTakeOver`).
 */
export async function bind(ctx: Pick<ProviderContext, "parameters" | "sessions" | "phases" | "advance" | "log">, connection: { sessionId: Hex; peer: Address | undefined; payment?: DetachedPayment }, message: Pick<SessionOpenMessage, "ref" | "pricing" | "sessionKey">): Promise<Bound> {
  const { domain, account, pricing, publicClient, store } = ctx.parameters;
  const { ref } = message;
  const sessionId = sessionIdOf(domain, ref);
  if (sessionId !== connection.sessionId) throw new BindingMismatchError(`The terms name session ${sessionId}, not ${connection.sessionId}.`);
  if (ref.terms.provider.toLowerCase() !== account.address.toLowerCase()) throw new BindingMismatchError(`The channel pays ${ref.terms.provider}, not this provider.`);
  // A payer that is a contract wallet cannot hold the connection's key: it connects through the session key its
  // grant names (decision 0035), and its own signatures (that grant, its summaries) are checked by its ERC-1271.
  const payerSignatures = await payerSignatureCheck({ publicClient, payer: ref.terms.payer });
  const peer = connection.peer?.toLowerCase();
  const peerIsPayer = peer === undefined || ref.terms.payer.toLowerCase() === peer;
  const peerIsWalletKey = payerSignatures.wallet && peer !== undefined && message.sessionKey?.grant.key.toLowerCase() === peer;
  if (!peerIsPayer && !peerIsWalletKey) {
    throw new BindingMismatchError(
      payerSignatures.wallet
        ? `${connection.peer} is not a key the channel's wallet payer ${ref.terms.payer} granted in this session.open.`
        : `${connection.peer} is not the channel's payer.`,
    );
  }
  if (termsHashOf(message.pricing) !== ref.terms.termsHash || ref.terms.termsHash !== termsHashOf(pricing)) {
    throw new BindingMismatchError("The channel's terms hash is not this provider's price list.");
  }
  const existing = ctx.sessions.get(sessionId);
  if (existing && !ctx.parameters.ownership) {
    if (message.sessionKey) await bindSessionKey(ctx, existing, message.sessionKey);
    return existing;
  }
  // A channel archived and pruned (issue 31) is answered in one sentence and never stored again.
  const pruned = store.prunedChannel(sessionId);
  if (pruned) throw new ChannelPrunedError(sessionId, pruned.prunedAt, pruned.archive);
  if (ctx.parameters.ownership) {
    // Decision 0036: the payer came here, so this process serves the channel now. Taking it over raises its
    // fencing epoch — every write still in flight under the old one, here or in another process, is refused —
    // and loads what the store holds; the session is rebuilt from that, never from older memory.
    if (peer === undefined) await assertPaymentMayTakeOver(ctx, sessionId, ref, connection.payment, payerSignatures.wallet ? payerSignatures.check : undefined);
    if (existing) {
      existing.failed = true;
      ctx.sessions.delete(sessionId);
    }
    await ctx.parameters.ownership.take(sessionId);
  }

  const escrow = domain.verifyingContract;
  const [deposit, onChain] = await Promise.all([
    publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "depositOf", args: [sessionId] }),
    publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [sessionId] }),
  ]);
  const onChainPhase = CHANNEL_PHASES[onChain] ?? "None";
  let record = store.getChannel(sessionId);
  if (!record) {
    if (onChainPhase !== "Open" || deposit === 0n) throw new BindingMismatchError(`Session ${sessionId} is not open on-chain (${onChainPhase}).`);
    record = { sessionId, role: "provider", ref, pricing, escrow: domain.verifyingContract, chainId: domain.chainId, deposit, status: "open" };
    await store.putChannel(record);
  } else if (deposit > record.deposit) {
    await store.updateChannel(sessionId, { deposit });
    record = { ...record, deposit };
  }
  const session = await ProviderSession.resume(
    {
      account,
      domain,
      ref,
      sessionId,
      pricing,
      deposit: record.deposit,
      modelSnapshotId: ctx.parameters.modelSnapshotId,
      ...(payerSignatures.wallet ? { payerSignatures: payerSignatures.check } : {}),
      // A ticket or commit naming an older prefix than the session keeps in memory (issue 28 item 6).
      olderPeaks: (leafCount) => store.accumulatorState(sessionId, { leafCount })?.peaks,
      handler: async (input, request) => {
        if (request instanceof TrancheCall) return request.run();
        // The node passes the request it parsed from the packet (`input` is its canonical bytes).
        const outcome = await runHandler(ctx, (request as JsonObject | undefined) ?? (JSON.parse(new TextDecoder().decode(input)) as JsonObject));
        // The receipt binds the bytes the payer receives: the result, or `{ error }` for a failed call.
        if ("error" in outcome) {
          const value = { error: outcome.error };
          return { output: canonBytes(value), value, units: 0n, charged: false };
        }
        return { output: outcome.bytes, value: outcome.result, units: outcome.units };
      },
    },
    store,
  );
  // A known channel still binds when it is no longer open, so that the payer can hear its answered
  // tickets again (they were paid) and a typed refusal for anything new.
  const bound: Bound = { record, session, answers: Promise.resolve(), work: Promise.resolve(), phase: "open" };
  if (record.status === "settled" || onChainPhase === "None" || onChainPhase === "Settled") ctx.advance(sessionId, bound, "settled", "it is settled");
  else if (onChainPhase !== "Open") ctx.advance(sessionId, bound, "closing", `it is ${onChainPhase} on-chain`);
  else if (store.getCooperativeClose(sessionId) || record.status === "closing") ctx.advance(sessionId, bound, "closed", "the store holds its close");
  const learnt = ctx.phases.get(sessionId);
  if (learnt) ctx.advance(sessionId, bound, learnt, "an escrow event said so");
  if (message.sessionKey) await bindSessionKey(ctx, bound, message.sessionKey);
  ctx.sessions.set(sessionId, bound);
  if (bound.phase === "open") {
    ctx.parameters.metrics?.sessionOpen(sessionId);
    const newest = session.latestTicket;
    if (newest) ctx.parameters.metrics?.ticketAccepted(sessionId, newest.ticket.cumulativeAmount);
  }
  return bound;
}

/**
 * Runs the handler; one that throws (or answers with no object) is a failed call, never a node crash. A
 * result comes back with its canonical bytes (what the receipt's output hash binds), computed once.
 */
export async function runHandler(ctx: Pick<ProviderContext, "parameters" | "log">, request: JsonObject): Promise<{ error: McpError } | { result: JsonObject; units: bigint; bytes: Uint8Array }> {
  try {
    const outcome = await ctx.parameters.handler(request);
    if ("error" in outcome) return outcome;
    if (typeof outcome.result !== "object" || outcome.result === null || Array.isArray(outcome.result)) {
      return { error: { code: HANDLER_FAILED_CODE, message: "The worker's result is not an object." } };
    }
    // Throws on what canonical JSON cannot hold (1e400, a lone surrogate): a failed call.
    return { result: outcome.result, units: outcome.units, bytes: utf8Bytes(canon(outcome.result)) };
  } catch (error) {
    const e = error as BaseError;
    ctx.log(`handler failed: ${e.name ?? "Error"}: ${(e.shortMessage ?? e.message ?? String(error)).split("\n")[0]}`);
    return { error: { code: HANDLER_FAILED_CODE, message: "The provider's handler failed; the call is not charged." } };
  }
}
