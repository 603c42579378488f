/**
 * The provider side of a milestone stream (issue 32, decision 0037), in process: it checks each tranche's ticket
 * (the payer's or its session key's signature, the next seq, exactly one tranche price more), does the tranche's
 * work, signs its Progress Proof, the receipt that carries it (`offloadPacketHash` = the request, `outputHash` = the
 * proof) and a receipt commit over every receipt so far, and answers a sample only when the revealed secret opens
 * the request's commitment and the indices asked are exactly the agreed draw (a payer sampling outside the agreed
 * rate gets nothing).
 */
import type { Hex, LocalAccount } from "viem";
import { zeroHash } from "viem";

import { ReceiptAccumulator } from "../core/accumulator";
import type { GasEscrowDomain } from "../core/eip712";
import { receiptLeaf } from "../core/leaf";
import {
  progressProofHash,
  sampleCommitOf,
  sampledIndices,
  signProgressProof,
  trancheRequestHash,
  type ProgressProof,
  type TrancheRequest,
} from "../core/progress-proof";
import { signReceiptCommit } from "../core/receipt-commit";
import { GENESIS_RECEIPT_HASH, sessionReceiptHash, signSessionReceipt } from "../core/receipt";
import type { SignedSessionKeyGrant } from "../core/session-key";
import { tranchePriceOf, type ChannelRef, type TermsDocumentV4 } from "../core/terms";
import { verifyPaymentTicket, type SignedPaymentTicket } from "../core/ticket";
import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import type { StreamProviderLink, TrancheResult } from "./flow-controller";

/** One tranche of work: the repository it leaves and the proof's claims (an honest worker runs the suite). */
export type TrancheWork = (tranche: bigint) => Promise<{
  repository: Bundle;
  tests: ProgressProof["tests"];
  coverageDeltaBps?: number;
  lint?: ProgressProof["lint"];
  artifactHash?: Hex;
}>;

export class StreamTicketRefusedError extends Error {
  override name = "StreamTicketRefusedError" as const;
}

export class InProcessStreamProvider implements StreamProviderLink {
  readonly accumulator = new ReceiptAccumulator();
  readonly results = new Map<bigint, TrancheResult & { request: TrancheRequest; repository: Bundle }>();
  /** Samples refused because they were not the agreed draw (the payer sampled outside the rate). */
  readonly refusedSamples: { tranche: bigint; indices: number[] }[] = [];
  #prevReceipt: Hex = GENESIS_RECEIPT_HASH;
  #prevProof: Hex = zeroHash;
  #lastSeq = 0n;

  constructor(
    readonly parameters: {
      account: LocalAccount;
      domain: GasEscrowDomain;
      terms: TermsDocumentV4;
      ref: ChannelRef;
      sessionId: Hex;
      work: TrancheWork;
      modelSnapshotId: string;
      /** The payer's grant when a delegated sampling node signs the tickets with a session key. */
      grant?: SignedSessionKeyGrant;
    },
  ) {}

  async tranche({ ticket, request }: { ticket: SignedPaymentTicket; request: TrancheRequest }): Promise<TrancheResult> {
    const { account, domain, terms, ref, sessionId, grant } = this.parameters;
    const t = ticket.ticket;
    const signer = grant ? grant.grant.key : ref.terms.payer;
    await verifyPaymentTicket({ domain, signed: ticket, signer });
    const price = tranchePriceOf(terms);
    if (grant && t.cumulativeAmount > grant.grant.spendCap) throw new StreamTicketRefusedError(`ticket ${t.seq} exceeds the session key's cap`);
    if (t.sessionId !== sessionId || t.termsHash !== ref.terms.termsHash || t.seq !== this.#lastSeq + 1n || t.cumulativeAmount !== price * t.seq) {
      throw new StreamTicketRefusedError(`ticket ${t.seq} is not the next tranche's (seq ${this.#lastSeq + 1n}, ${price * (this.#lastSeq + 1n)} wei)`);
    }
    if (request.sessionId !== sessionId || request.tranche !== t.seq) throw new StreamTicketRefusedError(`the request is for tranche ${request.tranche}`);
    const done = await this.parameters.work(t.seq);
    const proof: ProgressProof = {
      sessionId,
      tranche: t.seq,
      repoStateHash: bundleHash(done.repository),
      suiteHash: terms.stream.suite.hash,
      tests: done.tests,
      coverageDeltaBps: done.coverageDeltaBps ?? 0,
      lint: done.lint ?? "clean",
      artifactHash: done.artifactHash ?? zeroHash,
      prevProofHash: this.#prevProof,
    };
    const signedProof = await signProgressProof({ account, proof });
    const receipt = await signSessionReceipt({
      account,
      receipt: {
        sessionId,
        seq: t.seq,
        offloadPacketHash: trancheRequestHash(request),
        outputHash: progressProofHash(proof),
        policyHash: ref.terms.policyHash,
        modelSnapshotId: this.parameters.modelSnapshotId,
        metering: { units: 0n, amount: price },
        prevReceiptHash: this.#prevReceipt,
      },
    });
    this.accumulator.append(receiptLeaf(receipt.receipt, t));
    const commit = await signReceiptCommit(account, domain, { sessionId, leafCount: t.seq, root: this.accumulator.root() });
    this.#prevReceipt = sessionReceiptHash(receipt.receipt);
    this.#prevProof = progressProofHash(proof);
    this.#lastSeq = t.seq;
    const result = { receipt, proof: signedProof, commit };
    this.results.set(t.seq, { ...result, request, repository: done.repository });
    return result;
  }

  async sample({ tranche, secret, indices }: { tranche: bigint; secret: Hex; indices: number[] }): Promise<Bundle | null> {
    const held = this.results.get(tranche);
    if (!held || sampleCommitOf(secret) !== held.request.sampleCommit) return null;
    const proof = held.proof.proof;
    const agreed = sampledIndices({ secret, proofHash: progressProofHash(proof), total: proof.tests.length, count: this.parameters.terms.stream.samplesPerTranche });
    if (indices.length !== agreed.length || indices.some((i, k) => agreed[k] !== i)) {
      this.refusedSamples.push({ tranche, indices: [...indices] });
      return null;
    }
    return held.repository;
  }
}
