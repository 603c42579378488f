/**
 * The Flow Controller's link to a provider node over the sealed socket (issue 32, decision 0037): binds the channel
 * like any payer connection (`session.open`, with the session-key grant when a delegated sampling node signs), then
 * carries one tranche (`stream.tranche` → `stream.result`) or one sample (`stream.sample` → `stream.repository`) at
 * a time. A refusal, a closed connection or no answer within `timeoutMs` is no answer: the Flow Controller pauses.
 */
import type { Hex, LocalAccount } from "viem";

import type { GasEscrowDomain } from "../core/eip712";
import { BaseError } from "../core/errors";
import type { TrancheRequest } from "../core/progress-proof";
import type { SignedSessionKeyGrant } from "../core/session-key";
import type { SignedPaymentTicket } from "../core/ticket";
import type { Bundle } from "../../arbitration/documents/bundle";
import type { ChannelRecord } from "../store/store";
import { connectSecure, type SecureConnection } from "../transport";
import type { StreamProviderLink, TrancheResult } from "./flow-controller";
import { decodeMessage, encodeMessage, isPacket, type NodeMessage, type SessionReadyMessage } from "./protocol";

/** The provider did not answer a tranche or a sample (refusal, closed connection, timeout). */
export class StreamLinkError extends BaseError {
  override name = "StreamLinkError" as const;
}

export type ConnectStreamLinkParameters = {
  /** The payer's key: it authenticates the connection (the channel's payer), whoever signs the tickets. */
  account: LocalAccount;
  domain: GasEscrowDomain;
  channel: ChannelRecord;
  host?: string;
  port: number;
  /** A delegated sampling node's grant, sent at binding so that the provider accepts its key's tickets. */
  grant?: SignedSessionKeyGrant;
  /** Longest wait for one answer (default 10 minutes: a tranche's work may take its whole duration). */
  timeoutMs?: number;
};

export class NetworkStreamLink implements StreamProviderLink {
  #waiter: { resolve: (m: NodeMessage) => void; reject: (e: Error) => void } | undefined;
  #closed: Error | undefined;

  private constructor(
    readonly connection: SecureConnection,
    readonly ready: SessionReadyMessage,
    readonly timeoutMs: number,
  ) {
    connection.on("message", (bytes) => {
      const waiter = this.#waiter;
      this.#waiter = undefined;
      try {
        waiter?.resolve(decodeMessage(bytes));
      } catch (error) {
        waiter?.reject(error as Error);
      }
    });
    connection.on("close", (error) => {
      this.#closed = error ?? new StreamLinkError("The provider closed the connection.");
      this.#waiter?.reject(this.#closed);
      this.#waiter = undefined;
    });
  }

  /** Connects to the provider node and binds the channel; `ready.lastSeq` is the newest tranche it answered. */
  static async connect(parameters: ConnectStreamLinkParameters): Promise<NetworkStreamLink> {
    const { account, channel, host = "127.0.0.1", port, grant } = parameters;
    const connection = await connectSecure({ host, port, account, sessionId: channel.sessionId, expectedPeer: channel.ref.terms.provider });
    const first = new Promise<NodeMessage>((resolve, reject) => {
      connection.once("message", (bytes) => {
        try {
          resolve(decodeMessage(bytes));
        } catch (error) {
          reject(error as Error);
        }
      });
      connection.once("close", (error) => reject(error ?? new StreamLinkError("The provider closed the connection while binding the session.")));
    });
    await connection.send(encodeMessage({ type: "session.open", ref: channel.ref, pricing: channel.pricing, ...(grant ? { sessionKey: grant } : {}) }));
    const ready = await first.catch(async (error: unknown) => {
      await connection.close();
      throw error;
    });
    if (isPacket(ready) || ready.type !== "session.ready") {
      await connection.close();
      throw new StreamLinkError("The provider did not confirm the session.");
    }
    return new NetworkStreamLink(connection, ready, parameters.timeoutMs ?? 600_000);
  }

  async #ask(message: NodeMessage, expected: "stream.result" | "stream.repository"): Promise<NodeMessage> {
    if (this.#closed) throw this.#closed;
    if (this.#waiter) throw new StreamLinkError("One tranche or sample at a time.");
    let timer: NodeJS.Timeout | undefined;
    const answer = new Promise<NodeMessage>((resolve, reject) => {
      this.#waiter = { resolve, reject };
      timer = setTimeout(() => {
        this.#waiter = undefined;
        reject(new StreamLinkError(`The provider did not answer within ${this.timeoutMs} ms.`));
      }, this.timeoutMs);
    });
    try {
      await this.connection.send(encodeMessage(message));
      const reply = await answer;
      if (!isPacket(reply) && reply.type === "reject") throw new StreamLinkError(`The provider refused: ${reply.error}: ${reply.message}`);
      if (isPacket(reply) || reply.type !== expected) throw new StreamLinkError(`The provider answered ${isPacket(reply) ? reply.packet_type : reply.type}, not ${expected}.`);
      return reply;
    } finally {
      clearTimeout(timer);
    }
  }

  async tranche(parameters: { ticket: SignedPaymentTicket; request: TrancheRequest; leafCount?: bigint }): Promise<TrancheResult> {
    const reply = await this.#ask({ type: "stream.tranche", ticket: parameters.ticket, request: parameters.request, ...(parameters.leafCount === undefined ? {} : { leafCount: parameters.leafCount }) }, "stream.result");
    if (isPacket(reply) || reply.type !== "stream.result") throw new StreamLinkError("unreachable");
    return { receipt: reply.receipt, proof: reply.proof, commit: reply.commit };
  }

  async sample(parameters: { tranche: bigint; secret: Hex; indices: number[] }): Promise<Bundle | null> {
    const reply = await this.#ask({ type: "stream.sample", ...parameters }, "stream.repository");
    if (isPacket(reply) || reply.type !== "stream.repository") throw new StreamLinkError("unreachable");
    if (reply.tranche !== parameters.tranche) throw new StreamLinkError(`The provider answered the sample of tranche ${reply.tranche}, not ${parameters.tranche}.`);
    return reply.repository;
  }

  async close(): Promise<void> {
    await this.connection.close();
  }
}
