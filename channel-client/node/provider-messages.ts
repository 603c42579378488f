/**
 * The other messages of a bound channel (issue 33 item 2: moved out of `ProviderNode`, decision 0021): the cooperative
 * close, receipt commits, milestone tranches and samples, and the answered steps a payer asks back.
 */
import type { Hex } from "viem";

import { BindingMismatchError, ChannelNotOpenError, type BaseError } from "../core/errors";
import type { ReceiptCommitPacket } from "../core/packets";
import { progressProofHash } from "../core/progress-proof";
import { signReceiptCommit, verifyReceiptCommit } from "../core/receipt-commit";
import type { SettlementSummary } from "../core/summary";
import { STEPS_PAGE, type NodeMessage, type StepsMessage, type StreamSampleMessage, type StreamTrancheMessage } from "./protocol";
import type { Bound, ProviderContext } from "./provider-node-types";

/**
 * Co-signs the payer's cooperative close, and with it ends the session: the phase changes before this
 * returns (and before anything queued after it runs), and the close is durable in the store before the
 * co-signature can leave. The same close proposed again (a payer that lost the answer) gets the same
 * co-signature; anything else on a session that is no longer open is refused.
 */
export async function countersign(ctx: Pick<ProviderContext, "parameters" | "advance">, b: Bound, summary: SettlementSummary, payerSignature: Hex): Promise<Hex> {
  const { store } = ctx.parameters;
  const sessionId = b.record.sessionId;
  const stored = store.getCooperativeClose(sessionId);
  if (stored && stored.payerSignature === payerSignature) return stored.providerSignature;
  if (b.phase !== "open") throw new ChannelNotOpenError(`Session ${sessionId} is ${b.phase}; it cannot be closed again.`);
  const providerSignature = await b.session.countersign(summary, payerSignature);
  ctx.advance(sessionId, b, "closed", "the provider co-signed its cooperative close");
  await store.putCooperativeClose(sessionId, { summary, payerSignature, providerSignature });
  await store.updateChannel(sessionId, { status: "closing" });
  return providerSignature;
}

/**
 * Tranche k of a milestone stream (issue 32, decision 0037; `StreamService.tranche` decides): the answer leaves in
 * order, once the step, the request and proof, and the receipt commit are durable; a refusal is a `reject`.
 */
export async function tranche(ctx: Pick<ProviderContext, "parameters" | "after" | "streams">, b: Bound, message: StreamTrancheMessage, send: (m: NodeMessage) => Promise<void>): Promise<void> {
  const sessionId = b.record.sessionId;
  const seq = message.ticket.ticket.seq;
  let answered;
  try {
    answered = await ctx.streams.tranche(b.session, b.phase, message);
  } catch (error) {
    const e = error as BaseError;
    ctx.parameters.metrics?.ticketRefused(e.name ?? "Error");
    ctx.parameters.logger?.warn({ event: "tranche.refused", sessionId, seq: seq.toString(), error: e.name ?? "Error" }, e.shortMessage ?? e.message);
    b.answers = ctx.after(b.answers, () => send({ type: "reject", seq, error: e.name ?? "Error", message: e.shortMessage ?? e.message }));
    return;
  }
  const { answer, durable, fresh } = answered;
  if (fresh) {
    void durable.then(() => ctx.parameters.metrics?.ticketAccepted(sessionId, message.ticket.ticket.cumulativeAmount), () => undefined);
    ctx.parameters.logger?.info({ event: "tranche.answered", sessionId, tranche: seq.toString(), proofHash: progressProofHash(answer.proof.proof) }, "tranche answered with its progress proof");
  }
  b.answers = ctx.after(b.answers, async () => {
    await durable; // never acknowledge what a crash could lose
    await send(answer);
  });
}

/** A sample of tranche k (`StreamService.sample` decides): the repository, or a `reject` the payer pauses on. */
export async function sample(ctx: Pick<ProviderContext, "after" | "log" | "streams">, b: Bound, message: StreamSampleMessage, send: (m: NodeMessage) => Promise<void>): Promise<void> {
  const sessionId = b.record.sessionId;
  const { tranche } = message;
  try {
    const answer = await ctx.streams.sample(sessionId, message);
    b.answers = ctx.after(b.answers, () => send(answer));
  } catch (error) {
    const e = error as BaseError;
    ctx.log(`sample of tranche ${tranche} refused: ${e.shortMessage ?? e.message}`, "sample.refused", { sessionId, tranche: tranche.toString() });
    b.answers = ctx.after(b.answers, () => send({ type: "reject", seq: tranche, error: e.name ?? "Error", message: e.shortMessage ?? e.message }));
  }
}

/**
 * The answered steps of the session from `fromSeq` on, at most `limit` (at most `STEPS_PAGE`): what a payer
 * that lost tickets it had sent but not yet made durable needs back. It signed every ticket and already
 * holds a receipt for each earlier one, so nothing here is new to the only peer that may ask (the
 * session's authenticated payer).
 */
export function answeredSteps(ctx: Pick<ProviderContext, "parameters">, b: Bound, fromSeq: bigint, limit: number): StepsMessage["steps"] {
  const steps = ctx.parameters.store.steps(b.record.sessionId, { fromSeq, limit: Math.min(limit, STEPS_PAGE) });
  return steps.flatMap((step) => (step.receipt ? [{ ticket: step.ticket, receipt: step.receipt }] : []));
}

/** Checks the payer's signed root against ours at that leaf count, stores it, and answers with ours. */
export async function commit(ctx: Pick<ProviderContext, "parameters" | "after">, b: Bound, packet: ReceiptCommitPacket, send: (m: NodeMessage) => Promise<void>): Promise<void> {
  const { commit } = packet.payload;
  const seq = commit.commit.leafCount;
  try {
    await verifyReceiptCommit(ctx.parameters.domain, commit, b.record.ref.terms.payer, b.session.parameters.payerSignatures);
    if (commit.commit.leafCount > BigInt(b.session.accumulator.size)) {
      throw new BindingMismatchError(`The payer commits ${commit.commit.leafCount} receipts; the provider issued ${b.session.accumulator.size}.`);
    }
    const ours = b.session.accumulator.prefixRoot(Number(commit.commit.leafCount));
    if (ours !== commit.commit.root) throw new BindingMismatchError(`The payer's root over ${seq} receipts is ${commit.commit.root}; the provider's is ${ours}.`);
    const mine = await signReceiptCommit(ctx.parameters.account, ctx.parameters.domain, commit.commit);
    ctx.parameters.logger?.debug({ event: "commit.agreed", sessionId: b.record.sessionId, leafCount: commit.commit.leafCount.toString(), root: commit.commit.root }, "receipt root agreed");
    await Promise.all([
      ctx.parameters.store.putCommit(b.record.sessionId, "payer", commit),
      ctx.parameters.store.putCommit(b.record.sessionId, "provider", mine),
    ]);
    const answer: ReceiptCommitPacket = { pkt_version: "1", packet_type: "PKT_RECEIPT_COMMIT", issued_at: new Date().toISOString(), session_id: packet.session_id, payload: { commit: mine } };
    b.answers = ctx.after(b.answers, () => send(answer));
  } catch (error) {
    const e = error as BaseError;
    b.answers = ctx.after(b.answers, () => send({ type: "reject", seq, error: e.name, message: e.shortMessage ?? e.message }));
  }
}
