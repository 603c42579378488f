/**
 * One paid invocation on a bound channel (issue 33 item 2: moved out of `ProviderNode`, decision 0021): the ticket is
 * checked, the work run, the step (and kept output) written, and the answer released only once they are durable.
 */
import { CHANNEL_PHASES, gasEscrowAbi } from "../chain/escrow";
import { canon } from "../core/canonical";
import { utf8Bytes } from "../core/keccak";
import { ChannelNotOpenError, DepositExceededError, type BaseError } from "../core/errors";
import { faultCodeOf, signFaultStatement, type SignedFaultStatement } from "../core/fault-statement";
import { resultMcpText, type ActionInvokePacket, type ActionResultPacket } from "../core/packets";
import type { SessionReceipt } from "../core/receipt";
import type { JsonObject } from "../core/validate";
import type { NodeMessage } from "./protocol";
import { REPLAYED_RESULT_CODE, type Bound, type McpError, type ProviderContext } from "./provider-node-types";
import { StreamRefusedError } from "./stream-service";

const fromUtf8 = new TextDecoder();

export async function invoke(ctx: Pick<ProviderContext, "parameters" | "after" | "fail" | "advance">, b: Bound, packet: ActionInvokePacket, send: (m: NodeMessage, mcpText?: string) => Promise<void>, drop: () => void): Promise<void> {
  const { store } = ctx.parameters;
  const signed = packet.payload.ticket;
  const seq = signed.ticket.seq;
  const reply = (result: JsonObject, receipt: ActionResultPacket["payload"]["receipt"]): ActionResultPacket => ({
    pkt_version: "1",
    packet_type: "PKT_ACTION_RESULT",
    issued_at: new Date().toISOString(),
    session_id: packet.session_id,
    ...(packet.lease_id ? { lease_id: packet.lease_id } : {}),
    action_result_id: `res_${seq}`,
    payload: { mcp: { jsonrpc: "2.0", id: packet.payload.mcp.id ?? null, ...result }, receipt },
  });
  const reject = (error: unknown) => {
    const e = error as BaseError;
    ctx.parameters.metrics?.ticketRefused(e.name ?? "Error");
    ctx.parameters.logger?.warn({ event: "ticket.refused", sessionId: b.record.sessionId, seq: seq.toString(), error: e.name ?? "Error" }, e.shortMessage ?? e.message);
    b.answers = ctx.after(b.answers, () => send({ type: "reject", seq, error: e.name ?? "Error", message: e.shortMessage ?? e.message }));
  };

  // Already answered (the payer re-sends after a reconnect): answer again from the store.
  const latest = b.session.latestTicket;
  if (latest && seq <= latest.ticket.seq) {
    const [step] = store.steps(b.record.sessionId, { fromSeq: seq, limit: 1 });
    if (step && step.seq === seq && step.receipt && step.ticket.signature === signed.signature) {
      // The output itself when it was kept (decision 0033), else the receipt alone.
      const [kept] = ctx.parameters.keepResults ? store.results(b.record.sessionId, { fromSeq: seq, limit: 1 }) : [];
      const output = kept && kept.seq === seq ? (JSON.parse(kept.output) as JsonObject) : undefined;
      const charged = step.receipt.receipt.metering.amount > 0n || (output !== undefined && !("error" in output && Object.keys(output).length === 1));
      const replay = output
        ? reply(charged ? { result: output } : output, step.receipt)
        : reply({ error: { code: REPLAYED_RESULT_CODE, message: "output not retained; receipt replayed from the store" } }, step.receipt);
      b.answers = ctx.after(b.answers, () => send(replay));
      return;
    }
  }

  if (b.phase !== "open") {
    return reject(new ChannelNotOpenError(`Session ${b.record.sessionId} is ${b.phase}; ticket seq ${seq} is refused and no work is done.`));
  }
  if (b.failed) return drop(); // the payer resumes on a fresh bind, from what the store holds
  if (ctx.parameters.pricing.version === "4") {
    return reject(new StreamRefusedError(`Session ${b.record.sessionId} is a milestone stream (terms version 4): ticket seq ${seq} must come with a tranche request (stream.tranche), not an invocation.`));
  }

  let request: string;
  let input: Uint8Array;
  try {
    request = canon(packet.payload.mcp);
    input = utf8Bytes(request);
  } catch (error) {
    return reject(error); // an mcp canonical JSON cannot hold (NaN, ±Infinity, a lone surrogate): typed refusal
  }
  const leafCount = packet.payload.leaf_count === undefined ? undefined : Number(packet.payload.leaf_count);
  // What a session key's capabilities are checked against (decision 0025).
  const method = typeof packet.payload.mcp.method === "string" ? packet.payload.mcp.method : undefined;
  let result;
  const started = performance.now();
  try {
    result = await b.session.invoke(signed, input, leafCount, method, packet.payload.mcp);
  } catch (error) {
    if (!(error instanceof DepositExceededError) || !(await refreshDeposit(ctx, b))) return reject(error);
    if (b.phase !== "open") {
      return reject(new ChannelNotOpenError(`Session ${b.record.sessionId} is ${b.phase}; ticket seq ${seq} is refused and no work is done.`));
    }
    try {
      result = await b.session.invoke(signed, input, leafCount, method, packet.payload.mcp);
    } catch (retryError) {
      return reject(retryError);
    }
  }
  const metrics = ctx.parameters.metrics;
  metrics?.verifySeconds.observe((performance.now() - started) / 1000);
  const stored = performance.now();
  // The output's canonical text: the bytes the receipt binds (`runHandler` writes them with canon).
  const outputText = fromUtf8.decode(result.output);
  // The output first (decision 0033): writes are durable in order, so the step's durability implies it.
  const kept = ctx.parameters.keepResults ? store.putResult(b.record.sessionId, { seq, request, output: outputText }) : undefined;
  const stepWrite = store.putStep(b.record.sessionId, result.step, result.state);
  const durable = kept ? Promise.all([kept, stepWrite]).then(() => undefined) : stepWrite;
  if (metrics) {
    void durable.then(
      () => {
        metrics.storeSeconds.observe((performance.now() - stored) / 1000);
        metrics.ticketAccepted(b.record.sessionId, signed.ticket.cumulativeAmount);
      },
      () => undefined, // the answer chain reports the failure
    );
  }
  // A failed call's output is `{ error }` (charged nothing, decision 0022); a result is the result itself.
  const output = (result.value ?? JSON.parse(outputText)) as JsonObject;
  const answer = reply(result.charged ? { result: output } : output, result.step.receipt);
  // A result's MCP message in canonical form, written around the output text instead of serialising the result again.
  const mcpText = result.charged ? resultMcpText(packet.payload.mcp.id ?? null, outputText) : undefined;
  // Only a failed call carries a signed fault statement; a successful one signs nothing more.
  const fault = result.charged ? undefined : faultStatement(ctx, result.step.receipt.receipt, output.error as McpError | undefined);
  fault?.catch(() => undefined); // a signing failure surfaces in the answer chain below, not as an unhandled rejection
  b.answers = ctx.after(b.answers, async () => {
    if (b.failed) return; // an earlier step of the session was not stored: nothing after it is answered
    try {
      await durable; // never acknowledge what a crash could lose
    } catch (error) {
      ctx.fail(b, error, drop);
      throw error;
    }
    if (fault) answer.payload.fault = await fault;
    await send(answer, mcpText);
  });
}

/**
 * The provider's signed statement that the call receipted by `receipt` failed (decision 0015, the session
 * no-fault path): the step, its request hash, the fault code the error declares (`faultCodeOf`) and the
 * compute spent — what the receipt charged, which for a failed call is 0 (decision 0022).
 */
export function faultStatement(ctx: Pick<ProviderContext, "parameters">, receipt: SessionReceipt, error: McpError | undefined): Promise<SignedFaultStatement> {
  return signFaultStatement({
    account: ctx.parameters.account,
    statement: {
      sessionId: receipt.sessionId,
      seq: receipt.seq,
      offloadPacketHash: receipt.offloadPacketHash,
      code: faultCodeOf(error),
      computeSpent: receipt.metering.amount,
    },
  });
}

/**
 * Re-reads the on-chain deposit (a top-up may have landed) and phase; true if the deposit grew. A
 * channel that left `Open` meanwhile reads as deposit 0 and has its phase advanced.
 */
export async function refreshDeposit(ctx: Pick<ProviderContext, "parameters" | "advance">, b: Bound): Promise<boolean> {
  const { publicClient, domain, store } = ctx.parameters;
  const [deposit, onChain] = await Promise.all([
    publicClient.readContract({ address: domain.verifyingContract, abi: gasEscrowAbi, functionName: "depositOf", args: [b.record.sessionId] }),
    publicClient.readContract({ address: domain.verifyingContract, abi: gasEscrowAbi, functionName: "phaseOf", args: [b.record.sessionId] }),
  ]);
  const onChainPhase = CHANNEL_PHASES[onChain] ?? "None";
  if (onChainPhase === "None" || onChainPhase === "Settled") ctx.advance(b.record.sessionId, b, "settled", "it is settled on-chain");
  else if (onChainPhase !== "Open") ctx.advance(b.record.sessionId, b, "closing", `it is ${onChainPhase} on-chain`);
  if (deposit <= b.record.deposit) return false;
  b.record = { ...b.record, deposit };
  b.session.deposit = deposit;
  await store.updateChannel(b.record.sessionId, { deposit });
  return true;
}
