/**
 * The latency floor of one invocation at 1 in flight (issue 15, decision 0012): what the durability and the
 * signatures alone cost in series, measured on this machine in the bench's own run, with no codec, JSON,
 * AEAD or node logic at all.
 *
 * At 1 in flight nothing overlaps. The payer signs a ticket; the provider verifies it, signs the receipt and
 * makes the step durable before it answers (a receipt it might forget could later be signed differently for
 * the same seq: equivocation); the payer verifies the receipt and makes it durable before the caller is told.
 * So every invocation pays, in series:
 *   - two durable single-step commits (each a SQLite COMMIT and an fdatasync of the WAL, awaited alone),
 *   - one loopback round trip between two processes,
 *   - one sign and one verify on each side.
 * The sum of the parts' medians is, to within their spread, the least the p50 can be; the bench prints it beside
 * the target and the measured p50.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { keccak256, toHex, zeroAddress, type Hex } from "viem";

import { receiptLeaf } from "../channel-client/core/leaf";
import { signSessionReceipt } from "../channel-client/core/receipt";
import { sessionIdOf, type ChannelRef } from "../channel-client/core/terms";
import { signPaymentTicket } from "../channel-client/core/ticket";
import { SqliteStore } from "../channel-client/store/sqlite-store";
import type { StepRecord } from "../channel-client/store/store";
import { domain, payer, provider } from "./bench-micro";
import { quantiles } from "./quantiles";

const ESCROW = domain.verifyingContract;
const PRICE = 1_000n;

export type DurableStep = { steps: number; p50Ms: number; cpuUsPerStep: number; commits: number; syncs: number };
export type LatencyFloor = {
  durableStep: DurableStep;
  loopbackRoundTripP50Ms: number;
  /** One sign and one verify on each side, in series (twice the crypto per ticket per side). */
  signaturesMs: number;
  /** 2 × durable step + round trip + signatures. */
  floorMs: number;
};

/** A step as the nodes store it: a really signed ticket and receipt of one session, and their leaf. */
async function signedStep(sessionId: Hex, seq: bigint, prev: Hex): Promise<Required<StepRecord>> {
  const ticket = await signPaymentTicket({
    account: payer,
    domain,
    ticket: { sessionId, provider: provider.address, termsHash: keccak256(toHex("bench terms")), seq, cumulativeAmount: seq * PRICE, receiptRoot: prev },
  });
  const receipt = await signSessionReceipt({
    account: provider,
    receipt: {
      sessionId,
      seq,
      offloadPacketHash: keccak256(toHex(`offload ${seq}`)),
      outputHash: keccak256(toHex(`output ${seq}`)),
      policyHash: keccak256(toHex("bench")),
      modelSnapshotId: "model:bench@1",
      metering: { units: 1n, amount: PRICE },
      prevReceiptHash: prev,
    },
  });
  return { seq, ticket, receipt, leaf: receiptLeaf(receipt.receipt, ticket.ticket) };
}

/**
 * `putStep` awaited alone, `steps` times after as many warm-up steps (the write-ahead log grows to its first
 * checkpoint during them, as a running node's has): each is one COMMIT and one fdatasync, as at 1 in flight.
 * In `dir` when given (a test reads the store back), else in a fresh directory removed afterwards.
 */
export async function measureDurableStep(steps: number, dir?: string): Promise<DurableStep> {
  const workdir = dir ?? mkdtempSync(path.join(os.tmpdir(), "ioi-floor-"));
  const store = SqliteStore.open(path.join(workdir, "floor.db"));
  try {
    const ref: ChannelRef = {
      terms: { payer: payer.address, provider: provider.address, funder: payer.address, asset: zeroAddress, termsHash: keccak256(toHex("bench terms")), policyHash: keccak256(toHex("bench")), challengeDuration: 3600n, nonce: 1n },
      openedAt: 1n,
    };
    const sessionId = sessionIdOf(domain, ref);
    await store.putChannel({ sessionId, role: "provider", ref, pricing: { version: "1", unit: "invocation", pricePerInvocation: PRICE }, escrow: ESCROW, chainId: domain.chainId, deposit: 10n ** 24n, status: "open" });
    const prepared: Required<StepRecord>[] = [];
    let prev: Hex = keccak256(toHex("genesis"));
    for (let seq = 1n; seq <= BigInt(2 * steps); seq++) {
      const step = await signedStep(sessionId, seq, prev);
      prepared.push(step);
      prev = step.leaf;
    }
    for (const step of prepared.slice(0, steps)) await store.putStep(sessionId, step);
    const before = store.stats;
    const cpu = process.cpuUsage();
    const times: number[] = [];
    for (const step of prepared.slice(steps)) {
      const started = performance.now();
      await store.putStep(sessionId, step);
      times.push(performance.now() - started);
    }
    const used = process.cpuUsage(cpu);
    const after = store.stats;
    return {
      steps,
      p50Ms: Number(quantiles(times, 0.5)[0]!.toFixed(3)),
      cpuUsPerStep: Math.round((used.user + used.system) / steps),
      commits: after.commits - before.commits,
      syncs: after.syncs - before.syncs,
    };
  } finally {
    await store.close();
    if (dir === undefined) rmSync(workdir, { recursive: true, force: true });
  }
}

/** An echo server in a child process: every chunk it receives goes straight back. */
const ECHO_SERVER = `
const server = require("node:net").createServer((socket) => { socket.setNoDelay(true); socket.on("data", (chunk) => socket.write(chunk)); });
server.listen(0, "127.0.0.1", () => process.stdout.write(server.address().port + "\\n"));
process.stdin.on("end", () => process.exit(0)).resume();
`;

/**
 * The p50 of `rounds` round trips of a `bytes`-byte message to another process over TCP on 127.0.0.1 (Nagle
 * off, as the nodes' sockets): the transport's own floor, one message in flight.
 */
export async function measureLoopbackRoundTrip(rounds: number, bytes = 700): Promise<number> {
  const child = spawn(process.execPath, ["-e", ECHO_SERVER], { stdio: ["pipe", "pipe", "inherit"] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`The echo server exited with code ${code} before listening.`)));
      child.stdout.once("data", (chunk: Buffer) => resolve(Number(chunk.toString("utf8").trim())));
    });
    const socket = net.connect({ host: "127.0.0.1", port, noDelay: true });
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    const message = Buffer.alloc(bytes, 0x61);
    const times: number[] = [];
    for (let round = 0; round < rounds * 2; round++) {
      const started = performance.now();
      await new Promise<void>((resolve, reject) => {
        let received = 0;
        const onData = (chunk: Buffer) => {
          received += chunk.length;
          if (received < bytes) return;
          socket.off("data", onData).off("error", reject);
          resolve();
        };
        socket.on("data", onData).once("error", reject);
        socket.write(message);
      });
      if (round >= rounds) times.push(performance.now() - started); // the first half warms the path up
    }
    socket.destroy();
    return Number(quantiles(times, 0.5)[0]!.toFixed(3));
  } finally {
    child.stdin.end();
    child.kill();
  }
}

/** The floor from its measured parts; `cryptoUsPerSide` is one sign + one verify with the backend in use. */
export function latencyFloor(durableStep: DurableStep, loopbackRoundTripP50Ms: number, cryptoUsPerSide: number): LatencyFloor {
  const signaturesMs = Number(((2 * cryptoUsPerSide) / 1000).toFixed(3));
  return {
    durableStep,
    loopbackRoundTripP50Ms,
    signaturesMs,
    floorMs: Number((2 * durableStep.p50Ms + loopbackRoundTripP50Ms + signaturesMs).toFixed(3)),
  };
}
