/**
 * Hostile connections against a provider's listener (issue 28 item 5), for the flood test and `npm run bench`.
 * Loopback only: every connection goes to 127.0.0.1 from a source address in 127.0.0.0/8 (Linux answers for the
 * whole range), so per-source limits can be exercised without any other host. Bounded in count and time; every
 * socket it opens is destroyed by `stop()`.
 *
 * Kinds, in rotation:
 *   - silent:    connects and sends nothing;
 *   - slow:      sends a frame header, then one byte every 200 ms;
 *   - garbage:   sends 4 KiB of random bytes;
 *   - replay:    sends a valid ChannelOpenInit signed once by a throw-away key (the provider verifies it and
 *                answers with a Try, which costs it a verification, a KEM encapsulation and a signature), then
 *                goes silent;
 *   - throwaway: completes the handshake with a fresh throw-away key and a random session id, then stays idle.
 */
import { randomBytes } from "node:crypto";
import * as net from "node:net";
import { bytesToHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

import { connectSecure, type SecureConnection } from "../channel-client/transport";
import { encodeFrame } from "../channel-client/transport/frames";
import { createInit, encodeHandshakeMessage } from "../channel-client/transport/handshake";

export type FloodKind = "silent" | "slow" | "garbage" | "replay" | "throwaway";
export const FLOOD_KINDS: readonly FloodKind[] = ["silent", "slow", "garbage", "replay", "throwaway"];

export type FloodParameters = {
  port: number;
  /** Connections in all. */
  total: number;
  /** Connections attempted at once (each attempt ends when refused, cut off or, for held kinds, at `stop`). */
  concurrency: number;
  /** Source addresses 127.0.0.<first>..127.0.0.<first + sources - 1> (default 2..9). */
  sources?: number;
  firstSource?: number;
  /** Kinds in rotation (default all). */
  kinds?: readonly FloodKind[];
  /** Provider address (for throw-away handshakes). */
  provider: `0x${string}`;
  /** How long a held connection is kept before it is let go (default 2 s). */
  holdMs?: number;
};

export type FloodStats = { attempted: number; refusedOrCut: number; handshaken: number; byKind: Record<FloodKind, number> };

/** Runs a flood; resolves when `total` connections were made and let go (or `stop()` was called). */
export function startFlood(parameters: FloodParameters): { done: Promise<FloodStats>; stop: () => void } {
  const { port, total, concurrency, provider, holdMs = 2_000 } = parameters;
  const sources = parameters.sources ?? 8;
  const first = parameters.firstSource ?? 2;
  const kinds = parameters.kinds ?? FLOOD_KINDS;
  const stats: FloodStats = { attempted: 0, refusedOrCut: 0, handshaken: 0, byKind: { silent: 0, slow: 0, garbage: 0, replay: 0, throwaway: 0 } };
  const live = new Set<net.Socket>();
  const conns = new Set<SecureConnection>();
  let stopped = false;
  let replayFrame: Uint8Array | undefined;
  const replay = async () => {
    if (!replayFrame) {
      const { init } = await createInit({ account: privateKeyToAccount(generatePrivateKey()), sessionId: bytesToHex(randomBytes(32)) });
      replayFrame = encodeFrame(encodeHandshakeMessage(init));
    }
    return replayFrame;
  };

  const one = async (i: number): Promise<void> => {
    const kind = kinds[i % kinds.length]!;
    const localAddress = `127.0.0.${first + (i % sources)}`;
    stats.attempted++;
    stats.byKind[kind]++;
    if (kind === "throwaway") {
      try {
        const conn = await connectSecure({ host: "127.0.0.1", port, localAddress, account: privateKeyToAccount(generatePrivateKey()), sessionId: bytesToHex(randomBytes(32)), expectedPeer: provider, timeoutMs: 5_000 });
        stats.handshaken++;
        conns.add(conn);
        await Promise.race([conn.closed, new Promise((resolve) => setTimeout(resolve, holdMs))]);
        conn.destroy();
        conns.delete(conn);
      } catch {
        stats.refusedOrCut++;
      }
      return;
    }
    const frame = kind === "replay" ? await replay() : undefined;
    await new Promise<void>((resolve) => {
      const socket = net.connect({ host: "127.0.0.1", port, localAddress });
      live.add(socket);
      let timer: NodeJS.Timeout | undefined;
      let cut = false;
      const end = () => {
        clearInterval(timer);
        clearTimeout(timer);
        live.delete(socket);
        socket.destroy();
        resolve();
      };
      socket.on("error", () => undefined);
      socket.on("close", () => {
        if (!cut) stats.refusedOrCut++;
        cut = true;
        end();
      });
      socket.on("data", () => undefined);
      socket.on("connect", () => {
        if (kind === "garbage") socket.write(randomBytes(4096));
        if (kind === "replay") socket.write(frame!);
        if (kind === "slow") {
          socket.write(Buffer.from([0, 0, 4, 0]));
          timer = setInterval(() => socket.write(Buffer.from([0x7b])), 200);
        }
        setTimeout(() => {
          cut = true; // let go by us, not cut off by the provider
          end();
        }, holdMs).unref();
      });
    });
  };

  const done = (async () => {
    let next = 0;
    const worker = async () => {
      while (!stopped && next < total) await one(next++);
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
    return stats;
  })();
  const stop = () => {
    stopped = true;
    for (const socket of live) socket.destroy();
    for (const conn of conns) conn.destroy();
  };
  return { done, stop };
}
