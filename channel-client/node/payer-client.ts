/**
 * The payer's side of a live channel: connects to the provider over the sealed transport, binds the
 * session, and streams pipelined invocations. Every ticket is persisted before it is sent and every
 * accepted receipt before it counts, so a restarted payer resumes the same session from its store: it
 * re-sends the tickets that have no receipt yet and the provider answers them (again, if it already did).
 * Receipts are verified in order as they arrive, without waiting for the previous one's fsync; each
 * invocation resolves once its receipt is durable.
 */
import type { Address, Hex, LocalAccount } from "viem";

import { ReceiptAccumulator } from "../core/accumulator";
import { canon } from "../core/canonical";
import { keccak256TextHex, utf8Bytes } from "../core/keccak";
import type { GasEscrowDomain } from "../core/eip712";
import { BaseError, ReceiptMismatchError } from "../core/errors";
import type { ActionInvokePacket, ActionResultPacket, ReceiptCommitPacket } from "../core/packets";
import { PayerSession } from "./payer-session";
import { verifyFaultStatementFor, type SignedFaultStatement } from "../core/fault-statement";
import type { SignedSessionKeyGrant } from "../core/session-key";
import { signReceiptCommit, verifyReceiptCommit } from "../core/receipt-commit";
import type { ChannelRecord, ChannelStore } from "../store/store";
import type { SettlementSummary } from "../core/summary";
import type { SignedSessionReceipt } from "../core/receipt";
import type { SignedPaymentTicket } from "../core/ticket";
import { TERMS_QUERY_SESSION_ID, verifyTermsOffer, type TermsOffer } from "../core/terms-offer";
import { connectSecure, type SecureConnection } from "../transport";
import type { Logger } from "./log";
import type { JsonObject } from "../core/validate";
import { decodeMessage, encodeMessage, isPacket, STEPS_PAGE, type NodeMessage, type SessionReadyMessage } from "./protocol";
import { REPLAYED_RESULT_CODE } from "./provider-node";

/** The provider refused a ticket or a close; carries the provider's typed error name. */
export class ProviderRejectedError extends BaseError {
  override name = "ProviderRejectedError" as const;
  constructor(readonly seq: bigint, readonly error: string, message: string) {
    super(`The provider refused seq ${seq}: ${error}: ${message}`);
  }
}

/**
 * Asks the provider node at `host:port` for the terms it serves channels on, before any money moves
 * (issue 12). The sealed handshake authenticates `provider`; the offer must be signed by it, for this
 * escrow and chain. Resolves with the verified offer; a payer funds only a channel on `offer.termsHash`.
 */
export async function fetchTermsOffer(parameters: {
  account: LocalAccount;
  domain: GasEscrowDomain;
  provider: Address;
  host?: string;
  port: number;
  timeoutMs?: number;
}): Promise<TermsOffer> {
  const { account, domain, provider, host = "127.0.0.1", port, timeoutMs } = parameters;
  const connection = await connectSecure({ host, port, account, sessionId: TERMS_QUERY_SESSION_ID, expectedPeer: provider, timeoutMs });
  try {
    const answer = new Promise<NodeMessage>((resolve, reject) => {
      connection.once("message", (bytes) => {
        try {
          resolve(decodeMessage(bytes));
        } catch (error) {
          reject(error as Error);
        }
      });
      connection.once("close", (error) => reject(error ?? new BaseError("The provider closed the connection without offering its terms.")));
    });
    await connection.send(encodeMessage({ type: "terms.request" }));
    const message = await answer;
    if (isPacket(message) || message.type !== "terms.offer") throw new BaseError("The provider did not answer with its terms offer.");
    await verifyTermsOffer(message.offer, provider, domain);
    return message.offer.offer;
  } finally {
    await connection.close();
  }
}

/**
 * The provider's fault statement that came with a result (decision 0015), checked: only on a failed call, signed
 * by the channel's `provider` for the same session, seq and request hash as the receipt it came with (which
 * `acceptReceipt` then checks against the request sent). Anything else is refused like a bad receipt
 * (`ReceiptMismatchError`). Undefined when the result carries none.
 */
export async function faultStatementOf(packet: ActionResultPacket, failed: boolean, provider: Address): Promise<SignedFaultStatement | undefined> {
  const fault = packet.payload.fault;
  if (!fault) return undefined;
  const { receipt } = packet.payload.receipt;
  if (!failed) throw new ReceiptMismatchError(`Result ${packet.action_result_id} carries a fault statement for seq ${receipt.seq}, but the call did not fail.`);
  try {
    await verifyFaultStatementFor({ signed: fault, provider, receipt });
  } catch (error) {
    throw new ReceiptMismatchError(`Receipt seq ${receipt.seq}: its fault statement does not hold: ${(error as BaseError).shortMessage ?? (error as Error).message}`);
  }
  return fault;
}

/** A failed call's JSON-RPC error as the provider sent it (receipted, charged 0). */
export type InvocationError = { code: number; message: string; data?: JsonObject };

/**
 * One answered invocation: its result (undefined when replayed from the provider's store after a restart,
 * or when the call failed — then `error` says why), the receipt that binds it, and what that receipt charged.
 */
export type InvocationOutcome = {
  seq: bigint;
  result: JsonObject | undefined;
  error?: InvocationError;
  leaf: Hex;
  receipt: SignedSessionReceipt;
  charged: bigint;
  /** The provider's signed fault statement, when the call failed and the provider sent one (kept in the store). */
  fault?: SignedFaultStatement;
};

/** `accepted` is told as soon as the receipt is verified, before it is durable (what lets a stream go on). */
type Waiter = { resolve: (outcome: InvocationOutcome) => void; reject: (error: Error) => void; accepted?: () => void };

export type PayerClientParameters = {
  account: LocalAccount;
  domain: GasEscrowDomain;
  store: ChannelStore;
  channel: ChannelRecord;
  host?: string;
  port: number;
  timeoutMs?: number;
  /** Structured JSON-line logs (issue 16): the bound session, refusals, agreed roots, co-signed closes. */
  logger?: Logger;
  /** Sign tickets with a session key under the payer's grant (decision 0025); the grant is sent at binding. */
  sessionKey?: { account: LocalAccount; grant: SignedSessionKeyGrant };
  /** A contract wallet's signer for the summary and receipt commits (see `PayerSessionParameters.payerSigner`). */
  payerSigner?: LocalAccount;
  /**
   * Keep each paid call's request and output in the store, durable before its receipt counts (issue 28 item 8;
   * `ioi results` prints them again). Default true; false keeps only the receipts (their output hashes).
   */
  keepResults?: boolean;
};

export class PayerClient {
  readonly session: PayerSession;
  readonly ready: SessionReadyMessage;
  readonly #connection: SecureConnection;
  readonly #waiters = new Map<bigint, Waiter>();
  /** Receipt commits sent mid-stream, by leaf count, awaiting the provider's. */
  readonly #commits = new Map<bigint, { resolve: (m: ReceiptCommitPacket) => void; reject: (e: Error) => void }>();
  #control: { resolve: (m: NodeMessage) => void; reject: (e: Error) => void } | undefined;
  #failure: Error | undefined;
  #received: Promise<void> = Promise.resolve();
  /** The newest receipt write; the store makes writes durable in order, so it settles after all earlier ones. */
  #lastWrite: Promise<void> = Promise.resolve();
  /** Canonical request text of each sent invocation until its result is stored (keepResults). */
  readonly #requests = new Map<bigint, string>();
  /** Tickets leave in seq order: each send waits for the previous one. */
  #outbox: Promise<unknown> = Promise.resolve();

  private constructor(readonly parameters: PayerClientParameters, connection: SecureConnection, session: PayerSession, ready: SessionReadyMessage) {
    this.#connection = connection;
    this.session = session;
    this.ready = ready;
  }

  /** Connects, binds the session, and re-sends every ticket that still awaits its receipt. */
  static async connect(parameters: PayerClientParameters): Promise<PayerClient> {
    const { account, domain, store, channel, host = "127.0.0.1", port, timeoutMs } = parameters;
    // The payer keeps every grant it signs tickets under, before the first such ticket: a key-signed ticket is the
    // payer's only with its grant, on-chain and in a session case (`ioi dispute build-session`, issue 27 finding 9).
    if (parameters.sessionKey) await store.putSessionKeyGrant(channel.sessionId, parameters.sessionKey.grant);
    const connection = await connectSecure({ host, port, account, sessionId: channel.sessionId, expectedPeer: channel.ref.terms.provider, timeoutMs });
    const session = PayerSession.restore(
      { account, domain, ref: channel.ref, sessionId: channel.sessionId, pricing: channel.pricing, deposit: channel.deposit, ...(parameters.sessionKey ? { sessionKey: parameters.sessionKey } : {}), ...(parameters.payerSigner ? { payerSigner: parameters.payerSigner } : {}) },
      store.steps(channel.sessionId),
    );
    const first = new Promise<NodeMessage>((resolve, reject) => {
      connection.once("message", (bytes) => {
        try {
          resolve(decodeMessage(bytes));
        } catch (error) {
          reject(error as Error);
        }
      });
      connection.once("close", (error) => reject(error ?? new BaseError("The provider closed the connection while binding the session.")));
    });
    await connection.send(
      encodeMessage({ type: "session.open", ref: channel.ref, pricing: channel.pricing, ...(parameters.sessionKey ? { sessionKey: parameters.sessionKey.grant } : {}) }),
    );
    const ready = await first;
    if (isPacket(ready) || ready.type !== "session.ready") throw new BaseError("The provider did not confirm the session.");
    const client = new PayerClient(parameters, connection, session, ready);
    parameters.logger?.info(
      { event: "session.accepted", sessionId: channel.sessionId, provider: channel.ref.terms.provider, deposit: ready.deposit.toString(), providerLastSeq: ready.lastSeq.toString(), resending: session.pending.length },
      "session bound by the provider",
    );
    client.#listen();
    // A re-sent ticket carries the leaf-count hint it was first sent with: its root covers the receipts
    // accepted when it was signed (a prefix of those stored), and without the hint the provider would
    // check it against all its receipts and refuse it.
    const history = session.pending.length > 0 ? ReceiptAccumulator.fromLeaves(store.leaves(channel.sessionId)) : undefined;
    for (const signed of session.pending) await client.#sendTicket(signed, undefined, history && leafCountOf(history, signed.ticket.receiptRoot));
    if (ready.lastSeq > session.seq) {
      try {
        await client.#takeBack(ready.lastSeq);
      } catch (error) {
        client.#fail(error as Error);
        await client.close().catch(() => undefined);
        throw error;
      }
    }
    return client;
  }

  /**
   * The provider answered tickets past the last one this payer stored: it sent them, then crashed before they
   * were durable. Asks for those steps (after the answers to the tickets re-sent above, which the provider
   * sends first) and takes each back only if this payer signed its ticket and its receipt passes every check
   * a receipt passes (`PayerSession.adoptTicket`, `acceptReceipt`), one by one in seq order; each passing step
   * is stored whole, and all are durable before any new ticket is signed. A provider that hands back less than
   * it reported, or anything that does not pass, fails the connection (the steps before it are kept).
   */
  async #takeBack(lastSeq: bigint): Promise<void> {
    const { store, channel } = this.parameters;
    let fromSeq = this.session.seq + 1n;
    const writes: Promise<void>[] = [];
    try {
      while (fromSeq <= lastSeq) {
        const answer = await this.#request({ type: "steps.request", fromSeq, limit: STEPS_PAGE });
        if (isPacket(answer) || answer.type !== "steps") throw new BaseError(`The provider did not hand back its steps from seq ${fromSeq}.`);
        if (answer.steps.length === 0) {
          throw new ReceiptMismatchError(`The provider reported seq ${lastSeq} answered but handed back nothing from seq ${fromSeq}.`);
        }
        for (const { ticket, receipt } of answer.steps) {
          if (ticket.ticket.seq < fromSeq || ticket.ticket.seq > lastSeq) {
            throw new ReceiptMismatchError(`The provider handed back seq ${ticket.ticket.seq}, outside the seqs ${fromSeq} to ${lastSeq} asked for.`);
          }
          await this.session.adoptTicket(ticket);
          // Stored only whole, once the receipt passed too: the store keeps the genuine steps before a bad one.
          writes.push(store.putStep(channel.sessionId, await this.session.acceptReceipt(receipt, undefined)));
          fromSeq = ticket.ticket.seq + 1n;
        }
      }
    } finally {
      await Promise.allSettled(writes); // what passed is durable (or failed) before the caller hears anything
    }
    await Promise.all(writes);
    this.parameters.logger?.info({ event: "session.taken_back", sessionId: channel.sessionId, lastSeq: lastSeq.toString() }, "tickets lost before they were durable taken back from the provider");
  }

  #listen(): void {
    this.#connection.on("message", (bytes) => {
      // Handle messages strictly in order (receipts chain), even though acceptReceipt is async.
      this.#received = this.#received.then(() => this.#onMessage(bytes)).catch((error: unknown) => this.#fail(error as Error));
    });
    this.#connection.on("close", (error) => this.#fail(error ?? new BaseError("The provider closed the connection.")));
  }

  #fail(error: Error): void {
    if (this.#failure) return;
    this.#failure = error;
    for (const waiter of this.#waiters.values()) waiter.reject(error);
    this.#waiters.clear();
    for (const waiter of this.#commits.values()) waiter.reject(error);
    this.#commits.clear();
    this.#control?.reject(error);
    void this.#connection.close();
  }

  async #onMessage(bytes: Uint8Array): Promise<void> {
    const message = decodeMessage(bytes);
    if (isPacket(message) && message.packet_type === "PKT_ACTION_RESULT") return this.#onResult(message);
    if (isPacket(message) && message.packet_type === "PKT_RECEIPT_COMMIT") {
      const waiter = this.#commits.get(message.payload.commit.commit.leafCount);
      if (waiter) {
        this.#commits.delete(message.payload.commit.commit.leafCount);
        waiter.resolve(message);
        return;
      }
    }
    if (!isPacket(message) && message.type === "reject") {
      const waiter = this.#waiters.get(message.seq);
      const error = new ProviderRejectedError(message.seq, message.error, message.message);
      this.parameters.logger?.warn({ event: "ticket.refused", sessionId: this.parameters.channel.sessionId, seq: message.seq.toString(), error: message.error }, message.message);
      // A mid-stream commit's refusal carries its leaf count as seq; no ticket of that seq awaits an
      // answer any more (its receipt is one of the leaves committed).
      const commit = waiter ? undefined : this.#commits.get(message.seq);
      if (waiter) {
        this.#waiters.delete(message.seq);
        this.session.dropPending(message.seq);
        this.#requests.delete(message.seq);
        waiter.reject(error);
      } else if (commit) {
        this.#commits.delete(message.seq);
        commit.reject(error);
      } else this.#control?.reject(error);
      return;
    }
    const control = this.#control;
    this.#control = undefined;
    control?.resolve(message);
  }

  async #onResult(packet: ActionResultPacket): Promise<void> {
    const mcp = packet.payload.mcp as { result?: JsonObject; error?: JsonObject & { code?: number } };
    const replayed = mcp.error?.code === REPLAYED_RESULT_CODE;
    // A failed call (worker crash, timeout, a JSON-RPC error) is receipted over `{ error }` and charged 0.
    const failed = !replayed && mcp.error !== undefined && mcp.result === undefined;
    // The output's canonical text: its UTF-8 bytes are what the receipt's outputHash binds, the text is what is kept.
    const outputText = replayed ? undefined : failed ? canon({ error: mcp.error! }) : mcp.result === undefined ? undefined : canon(mcp.result);
    const output = outputText === undefined ? undefined : utf8Bytes(outputText);
    if (!replayed && output === undefined) throw new ReceiptMismatchError(`Result ${packet.action_result_id} carries neither a result, an error nor a replay marker.`);
    const fault = await faultStatementOf(packet, failed, this.parameters.channel.ref.terms.provider);
    const step = await this.session.acceptReceipt(packet.payload.receipt, output, failed);
    this.#waiters.get(step.seq)?.accepted?.();
    // Pipelined (decision 0023): the next receipt is verified while this one is made durable. The store
    // makes writes durable in the order they are made, so starting this write before any later write (the
    // next ticket, whose root covers this receipt, or the next receipt) keeps every durable state a prefix
    // of the session; the caller is told the receipt counts only once it is durable.
    // The fault statement is written first: durable writes keep their order, so the step's durability implies it.
    const faultWrite = fault && this.parameters.store.putFaultStatement(this.parameters.channel.sessionId, fault);
    // The output is written before the step too (issue 28 item 8): a receipt that counts has its result stored.
    const request = this.#requests.get(step.seq);
    this.#requests.delete(step.seq);
    const resultWrite =
      outputText !== undefined && request !== undefined
        ? this.parameters.store.putResult(this.parameters.channel.sessionId, { seq: step.seq, request, output: outputText })
        : undefined;
    const stepWrite = this.parameters.store.putStep(this.parameters.channel.sessionId, step);
    const durable = faultWrite || resultWrite ? Promise.all([faultWrite, resultWrite, stepWrite]).then(() => undefined) : stepWrite;
    this.#lastWrite = durable.catch(() => undefined);
    durable.then(
      () => {
        const waiter = this.#waiters.get(step.seq);
        this.#waiters.delete(step.seq);
        waiter?.resolve({
          seq: step.seq,
          result: replayed || failed ? undefined : mcp.result,
          ...(failed ? { error: mcp.error as InvocationError } : {}),
          leaf: step.leaf,
          receipt: packet.payload.receipt,
          charged: packet.payload.receipt.receipt.metering.amount,
          ...(fault ? { fault } : {}),
        });
      },
      (error: unknown) => this.#fail(error as Error),
    );
  }

  /** `requestText`: canon(request), when the caller wrote it already (it hashed it for the ticket). */
  async #sendTicket(signed: SignedPaymentTicket, request: JsonObject | undefined, leafCount: number | undefined, requestText?: string): Promise<void> {
    const packet: ActionInvokePacket = {
      pkt_version: "1",
      packet_type: "PKT_ACTION_INVOKE",
      issued_at: new Date().toISOString(),
      session_id: this.parameters.channel.sessionId,
      payload: {
        mcp: request ?? { jsonrpc: "2.0", id: `resend-${signed.ticket.seq}`, method: "resume" },
        ticket: signed,
        ...(leafCount === undefined ? {} : { leaf_count: String(leafCount) }),
      },
    };
    await this.#connection.send(encodeMessage(packet, request === undefined ? undefined : requestText));
  }

  /**
   * Pays for and sends one invocation; resolves with its result once the receipt is verified and stored
   * (with its ticket, which leaves before it is durable). Call it many times without awaiting to pipeline.
   */
  invoke(request: JsonObject): Promise<InvocationOutcome> {
    return this.#invoke(request);
  }

  /** {@link invoke}; `accepted` is called once the receipt is verified (it still counts only once durable). */
  async #invoke(request: JsonObject, accepted?: () => void): Promise<InvocationOutcome> {
    if (this.#failure) throw this.#failure;
    const seq = this.session.seq + 1n; // nextTicket reserves exactly this seq before it awaits
    const outcome = new Promise<InvocationOutcome>((resolve, reject) => this.#waiters.set(seq, { resolve, reject, ...(accepted ? { accepted } : {}) }));
    // If the connection fails before this ticket is sent, #fail rejects `outcome` while the caller gets the
    // send's error below and never awaits it: mark it handled so the process does not die of it.
    outcome.catch(() => undefined);
    const text = canon(request);
    const input = utf8Bytes(text);
    if (this.parameters.keepResults !== false) this.#requests.set(seq, text);
    const next = this.session.nextTicket(input, request);
    // The ticket leaves as soon as it is signed, in seq order, and is stored with its receipt, in one row
    // write: the payer does not wait on its own disk (decision 0009, issue 15). The receipt counts only once
    // that write is durable. A crash before it loses only tickets the provider may hold, and `connect` takes
    // every step the provider answered back from it; a ticket the provider never answered is owed nothing.
    const sent = this.#outbox.then(() => next).then((n) => this.#sendTicket(n.signed, request, n.leafCount, text));
    this.#outbox = sent.catch(() => undefined);
    try {
      await sent;
    } catch (error) {
      this.#waiters.delete(seq);
      this.#requests.delete(seq);
      this.#fail(error as Error);
      throw error;
    }
    return outcome;
  }

  /**
   * Streams `count` invocations built by `request(i)` with at most `inflight` awaiting receipts at once.
   * `onProgress` is called after each receipt. Returns per-invocation latencies in milliseconds.
   */
  async stream(parameters: {
    count: number;
    inflight?: number;
    request: (i: number) => JsonObject;
    onProgress?: (done: number) => void;
    /** Called with each answer (result, error or replay) and the index of the request it answers. */
    onOutcome?: (index: number, outcome: InvocationOutcome) => void;
    /** Exchange signed receipt commits every this many accepted receipts (0 or omitted: never mid-stream). */
    commitEvery?: number;
    /** …or once this many milliseconds passed since the last one (checked as receipts arrive). */
    commitIntervalMs?: number;
    /**
     * Once aborted (Ctrl-C), no further invocation is sent; those already paid for are awaited, so each one's
     * result is stored and told to `onOutcome` (issue 28 item 8). Resolves with the latencies of those answered.
     */
    signal?: AbortSignal;
  }): Promise<number[]> {
    const { count, inflight = 1, request, onProgress, onOutcome, commitEvery = 0, commitIntervalMs = 0, signal } = parameters;
    const latencies: number[] = [];
    const commits: Promise<unknown>[] = [];
    let committedAt = 0;
    let committedTime = performance.now();
    let committing = false;
    const maybeCommit = () => {
      const size = this.session.accumulator.size;
      const due = (commitEvery > 0 && size - committedAt >= commitEvery) || (commitIntervalMs > 0 && size > committedAt && performance.now() - committedTime >= commitIntervalMs);
      if (!due || committing) return;
      committing = true;
      committedAt = size;
      committedTime = performance.now();
      const commit = this.commitPrefix().finally(() => (committing = false));
      // If the stream fails first, its failure is thrown and this commit's is not awaited: mark it handled (a
      // payer that resumes on another process must not die of it).
      commit.catch(() => undefined);
      commits.push(commit);
    };
    let next = 0;
    let done = 0;
    let failure: unknown;
    const outcomes: Promise<void>[] = [];
    // A lane sends its next invocation as soon as its receipt is verified (decision 0023): the receipt is
    // made durable meanwhile, and it counts — onOutcome, onProgress, its latency — only once it is.
    const lane = async () => {
      while (next < count && failure === undefined && !signal?.aborted) {
        const i = next++;
        const started = performance.now();
        // `proceed` is called when the receipt is verified, or when the invocation ends first (a failure).
        let proceed!: () => void;
        const verified = new Promise<void>((resolve) => (proceed = resolve));
        outcomes.push(
          this.#invoke(request(i), proceed).then(
            (answer) => {
              onOutcome?.(i, answer);
              latencies.push(performance.now() - started);
              onProgress?.(++done);
              maybeCommit();
              proceed();
            },
            (error: unknown) => {
              failure ??= error;
              proceed();
            },
          ),
        );
        await verified;
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(inflight, count)) }, lane));
    await Promise.all(outcomes);
    if (failure !== undefined) throw failure;
    await Promise.all(commits);
    return latencies;
  }

  /**
   * Exchanges signed receipt commits over the receipts accepted so far without draining the pipeline
   * (PKT_RECEIPT_COMMIT mid-stream): the provider checks the root against the same prefix of its own
   * history and answers with its signature; both are stored. Resolves with what was agreed.
   */
  async commitPrefix(): Promise<{ leafCount: bigint; root: Hex }> {
    if (this.#failure) throw this.#failure;
    const { domain, channel, store } = this.parameters;
    const account = this.parameters.payerSigner ?? this.parameters.account;
    const leafCount = BigInt(this.session.accumulator.size);
    const root = this.session.accumulator.root();
    const mine = await signReceiptCommit(account, domain, { sessionId: channel.sessionId, leafCount, root });
    await store.putCommit(channel.sessionId, "payer", mine);
    const answered = new Promise<ReceiptCommitPacket>((resolve, reject) => this.#commits.set(leafCount, { resolve, reject }));
    answered.catch(() => undefined);
    const packet: ReceiptCommitPacket = { pkt_version: "1", packet_type: "PKT_RECEIPT_COMMIT", issued_at: new Date().toISOString(), session_id: channel.sessionId, payload: { commit: mine } };
    await this.#connection.send(encodeMessage(packet));
    const theirs = (await answered).payload.commit;
    await verifyReceiptCommit(domain, theirs, channel.ref.terms.provider);
    if (theirs.commit.root !== root || theirs.commit.leafCount !== leafCount) {
      throw new ReceiptMismatchError(`The provider committed ${theirs.commit.root} over ${theirs.commit.leafCount} receipts; the payer holds ${root} over ${leafCount}.`);
    }
    await store.putCommit(channel.sessionId, "provider", theirs);
    return { leafCount, root };
  }

  /** Exchanges signed receipt roots with the provider over everything accepted so far. */
  async commit(): Promise<{ leafCount: bigint; root: Hex }> {
    const { domain, channel, store } = this.parameters;
    const account = this.parameters.payerSigner ?? this.parameters.account;
    const mine = await signReceiptCommit(account, domain, { sessionId: channel.sessionId, leafCount: BigInt(this.session.accumulator.size), root: this.session.accumulator.root() });
    await store.putCommit(channel.sessionId, "payer", mine);
    const packet: ReceiptCommitPacket = { pkt_version: "1", packet_type: "PKT_RECEIPT_COMMIT", issued_at: new Date().toISOString(), session_id: channel.sessionId, payload: { commit: mine } };
    const answer = await this.#request(packet);
    if (!isPacket(answer) || answer.packet_type !== "PKT_RECEIPT_COMMIT") throw new BaseError("The provider did not answer the receipt commit.");
    const theirs = answer.payload.commit;
    await verifyReceiptCommit(domain, theirs, channel.ref.terms.provider);
    if (theirs.commit.root !== mine.commit.root || theirs.commit.leafCount !== mine.commit.leafCount) {
      throw new ReceiptMismatchError(`The provider committed ${theirs.commit.root} over ${theirs.commit.leafCount} receipts; the payer holds ${mine.commit.root}.`);
    }
    await store.putCommit(channel.sessionId, "provider", theirs);
    this.parameters.logger?.info({ event: "commit.agreed", sessionId: channel.sessionId, leafCount: mine.commit.leafCount.toString(), root: mine.commit.root }, "receipt root agreed with the provider");
    return { leafCount: mine.commit.leafCount, root: mine.commit.root };
  }

  /**
   * The output of answered step `seq` whose receipt this payer holds but whose output it lost (decision 0033,
   * exactly once): from its own store, else asked of the provider (`result.request`) and taken only if it hashes
   * to the receipt's outputHash, then stored. `request` is the request's canonical text, when the caller kept it.
   * Resolves with the parsed output (`{ error }` for a failed call), or undefined when neither side kept it.
   */
  async fetchResult(seq: bigint, request = ""): Promise<JsonObject | undefined> {
    const { store, channel } = this.parameters;
    const [kept] = store.results(channel.sessionId, { fromSeq: seq, limit: 1 });
    if (kept && kept.seq === seq) return JSON.parse(kept.output) as JsonObject;
    const [step] = store.steps(channel.sessionId, { fromSeq: seq, limit: 1 });
    if (!step || step.seq !== seq || !step.receipt) throw new ReceiptMismatchError(`The payer holds no receipt for seq ${seq}; there is no paid output to fetch.`);
    const answer = await this.#request({ type: "result.request", seq });
    if (isPacket(answer) || answer.type !== "result" || answer.seq !== seq) throw new BaseError(`The provider did not answer the request for the output of seq ${seq}.`);
    if (answer.output === null) return undefined;
    const hash = keccak256TextHex(answer.output);
    if (hash !== step.receipt.receipt.outputHash) {
      throw new ReceiptMismatchError(`The output the provider sent for seq ${seq} hashes to ${hash}; its receipt binds ${step.receipt.receipt.outputHash}.`);
    }
    await store.putResult(channel.sessionId, { seq, request, output: answer.output });
    return JSON.parse(answer.output) as JsonObject;
  }

  /** Proposes a cooperative close of everything so far and returns both signatures over the summary. */
  async cooperativeClose(proposal?: { summary: SettlementSummary; signature: Hex }): Promise<{ summary: SettlementSummary; payerSignature: Hex; providerSignature: Hex }> {
    // A proposal made on another connection (one that may have reached the provider) is sent again as it was.
    const { summary, signature } = proposal ?? (await this.session.proposeCooperativeClose());
    const answer = await this.#request({ type: "close.propose", summary, signature });
    if (isPacket(answer) || answer.type !== "close.countersign") throw new BaseError("The provider did not countersign the close.");
    this.parameters.logger?.info(
      { event: "close.countersigned", sessionId: this.parameters.channel.sessionId, finalSeq: summary.finalSeq.toString(), finalAmount: summary.finalAmount.toString() },
      "cooperative close co-signed by the provider",
    );
    return { summary, payerSignature: signature, providerSignature: answer.signature };
  }

  /** Sends a control message once every invocation has been answered, and waits for the reply. */
  async #request(message: NodeMessage): Promise<NodeMessage> {
    // Control messages go after every invocation has been answered (or the connection has failed).
    while (this.#waiters.size > 0 && !this.#failure) await new Promise((r) => setImmediate(r));
    if (this.#failure) throw this.#failure;
    const reply = new Promise<NodeMessage>((resolve, reject) => (this.#control = { resolve, reject }));
    await this.#connection.send(encodeMessage(message));
    return reply;
  }

  /** Closes the connection and waits until every receipt already accepted has been written. */
  async close(): Promise<void> {
    await this.#connection.close();
    await this.#received.catch(() => undefined);
    await this.#lastWrite;
  }
}

/**
 * How many of the first receipts `root` is the root of, or undefined if none. A pending ticket was signed
 * at most one pipeline depth before the newest receipt, so only the newest prefixes are searched.
 */
function leafCountOf(history: ReceiptAccumulator, root: Hex): number | undefined {
  const oldest = Math.max(0, history.size - RESUME_SEARCH_DEPTH);
  for (let size = history.size; size >= oldest; size--) if (history.prefixRoot(size) === root) return size;
  return undefined;
}

/** Deepest pipeline a resumed ticket is looked up in (far beyond the in-flight limits in use). */
const RESUME_SEARCH_DEPTH = 4_096;
