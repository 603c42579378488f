/**
 * In-process measurements for `npm run bench`, each on one core: the raw secp256k1 verification ceiling,
 * batched receipts (one ticket and one signed root commit per batch), and the receipt accumulator.
 */
import { randomFillSync } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { hexToBytes, keccak256, parseSignature, toHex, zeroHash, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

import { ReceiptAccumulator } from "../channel-client/accumulator";
import { assertDigestSigner, gasEscrowDomain, signDigest } from "../channel-client/eip712";
import { fastKeccakReady } from "../channel-client/keccak";
import { LeafBuilder } from "../channel-client/leaf";
import { ProviderSession } from "../channel-client/provider-session";
import { sessionReceiptHashBytes, type SessionReceipt } from "../channel-client/receipt";
import { signReceiptCommit, verifyReceiptCommit } from "../channel-client/receipt-commit";
import { paymentTicketHash, signPaymentTicket, verifyPaymentTicket } from "../channel-client/ticket";
import type { StepRecord } from "../channel-client/store/store";

const MNEMONIC = "test test test test test test test test test test test junk";
const payer = mnemonicToAccount(MNEMONIC, { addressIndex: 2 });
const provider = mnemonicToAccount(MNEMONIC, { addressIndex: 3 });
const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
const SESSION: Hex = keccak256(toHex("bench session"));

export type CryptoCeiling = { verifyPerSecond: number; knownKeyVerifyPerSecond: number; signPerSecond: number };

/** Raw `secp256k1.verify` per second on this core (the ceiling), and the node's own fast paths. */
export async function benchCrypto(samples = 600): Promise<CryptoCeiling> {
  const digests = Array.from({ length: samples }, (_, i) => keccak256(toHex(`digest ${i}`)));
  const signatures: Hex[] = [];
  let started = performance.now();
  for (const digest of digests) signatures.push(await signDigest(payer, digest));
  const signPerSecond = samples / ((performance.now() - started) / 1000);
  const publicKey = hexToBytes(payer.publicKey);
  const compact = signatures.map((signature) => {
    const { r, s } = parseSignature(signature);
    return hexToBytes(`0x${r.slice(2).padStart(64, "0")}${s.slice(2).padStart(64, "0")}`);
  });
  const hashes = digests.map((d) => hexToBytes(d));
  for (let i = 0; i < 50; i++) secp256k1.verify(compact[i]!, hashes[i]!, publicKey, { prehash: false });
  started = performance.now();
  for (let i = 0; i < samples; i++) {
    if (!secp256k1.verify(compact[i]!, hashes[i]!, publicKey, { prehash: false })) throw new Error("a valid signature did not verify");
  }
  const verifyPerSecond = samples / ((performance.now() - started) / 1000);
  await assertDigestSigner(digests[0]!, signatures[0]!, payer.address, "bench"); // learns the key
  started = performance.now();
  for (let i = 0; i < samples; i++) await assertDigestSigner(digests[i]!, signatures[i]!, payer.address, "bench");
  const knownKeyVerifyPerSecond = samples / ((performance.now() - started) / 1000);
  return { verifyPerSecond: Math.round(verifyPerSecond), knownKeyVerifyPerSecond: Math.round(knownKeyVerifyPerSecond), signPerSecond: Math.round(signPerSecond) };
}

/**
 * Receipts accumulated per second when one ticket (payer-signed, provider-verified) and one root commit
 * (provider-signed, payer-verified) cover each batch: every receipt is built, hashed, paired with the
 * batch's ticket into a leaf and appended. All four signature operations run on this one core too.
 */
export async function benchBatchedReceipts(batch: number, totalReceipts: number): Promise<number> {
  await fastKeccakReady;
  const accumulator = new ReceiptAccumulator();
  let prev: Hex = zeroHash;
  let seq = 0n;
  const run = async (receipts: number) => {
    for (let done = 0; done < receipts; done += batch) {
      const ticketSeq = BigInt(done / batch + 1);
      const ticket = { sessionId: SESSION, provider: provider.address, termsHash: zeroHash, seq: ticketSeq, cumulativeAmount: BigInt(done + batch) * 1000n, receiptRoot: accumulator.root() };
      const signedTicket = await signPaymentTicket({ account: payer, domain, ticket });
      await verifyPaymentTicket({ domain, signed: signedTicket, signer: payer.address });
      const ticketHash = paymentTicketHash(ticket);
      const leaves = new LeafBuilder(ticketHash);
      for (let i = 0; i < batch; i++) {
        seq++;
        const receipt: SessionReceipt = { sessionId: SESSION, seq, offloadPacketHash: ticketHash, outputHash: prev, policyHash: zeroHash, modelSnapshotId: "model:bench@1", metering: { units: 1n, amount: 1000n }, prevReceiptHash: prev };
        const hash = sessionReceiptHashBytes(receipt);
        prev = `0x${Buffer.from(hash.buffer, hash.byteOffset, 32).toString("hex")}`;
        accumulator.append(leaves.leaf(hash));
      }
      const commit = await signReceiptCommit(provider, { sessionId: SESSION, leafCount: BigInt(accumulator.size), root: accumulator.root() });
      await verifyReceiptCommit(commit, provider.address);
    }
  };
  await run(Math.min(totalReceipts, batch * 5)); // warm-up
  const started = performance.now();
  await run(totalReceipts);
  return Math.round(totalReceipts / ((performance.now() - started) / 1000));
}

export type AccumulatorBench = { leaves: number; appendsPerSecond: number; proofMsAt1M: number; bytesPerLeaf: number; bytesPerChannel: number; receiptsPerChannel: number };

function collect(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

function memory(): number {
  collect();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

/** Appends up to 1,000,000 leaves, proofs at that size, and the provider's memory per open channel. */
export async function benchAccumulator(leaves = 1_000_000): Promise<AccumulatorBench> {
  await fastKeccakReady;
  const data = new Uint8Array(32 * leaves);
  randomFillSync(data);
  const before = memory();
  const accumulator = new ReceiptAccumulator();
  const started = performance.now();
  for (let i = 0; i < leaves; i++) accumulator.append(data.subarray(32 * i, 32 * i + 32));
  const appendsPerSecond = Math.round(leaves / ((performance.now() - started) / 1000));
  const bytesPerLeaf = Math.round((memory() - before) / leaves);
  const proofs = 2_000;
  const proofStarted = performance.now();
  for (let i = 0; i < proofs; i++) accumulator.proof((i * 7919) % leaves);
  const proofMsAt1M = Number(((performance.now() - proofStarted) / proofs).toFixed(4));

  // A provider's open channel: its session state restored from 1,000 answered steps.
  const receiptsPerChannel = 1_000;
  const steps: StepRecord[] = [];
  for (let i = 1; i <= receiptsPerChannel; i++) {
    const receipt: SessionReceipt = { sessionId: SESSION, seq: BigInt(i), offloadPacketHash: zeroHash, outputHash: zeroHash, policyHash: zeroHash, modelSnapshotId: "m", metering: { units: 1n, amount: 1n }, prevReceiptHash: zeroHash };
    const ticket = { sessionId: SESSION, provider: provider.address, termsHash: zeroHash, seq: BigInt(i), cumulativeAmount: BigInt(i), receiptRoot: zeroHash };
    steps.push({ seq: BigInt(i), ticket: { ticket, signature: `0x${"11".repeat(65)}` }, receipt: { receipt, signature: `0x${"22".repeat(65)}` }, leaf: keccak256(toHex(i)) });
  }
  const parameters = {
    account: provider,
    domain,
    ref: { terms: { payer: payer.address, provider: provider.address, funder: payer.address, asset: payer.address, termsHash: zeroHash, policyHash: zeroHash, challengeDuration: 3600n, nonce: 1n }, openedAt: 1n },
    sessionId: SESSION,
    pricing: { version: "1" as const, unit: "invocation" as const, pricePerInvocation: 1n },
    deposit: 10n ** 18n,
    modelSnapshotId: "m",
    handler: async (input: Uint8Array) => ({ output: input, units: 1n }),
  };
  const channels = 200;
  const held: ProviderSession[] = [];
  const base = memory();
  for (let i = 0; i < channels; i++) held.push(ProviderSession.restore(parameters, steps));
  const bytesPerChannel = Math.round((memory() - base) / channels);
  if (held.length !== channels || accumulator.size !== leaves) throw new Error("unreachable");
  return { leaves, appendsPerSecond, proofMsAt1M, bytesPerLeaf, bytesPerChannel, receiptsPerChannel };
}

