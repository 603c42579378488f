/**
 * The sealed transport alone (issue 15, item 4): CPU per message per side when messages go out in bursts of
 * 1, 8 and 16, over a connection opened at handshake version 1 (one sealed record per message) and at version
 * 2 (one data-batch record per burst). Both ends run in this process; one side echoes what it receives, so
 * each message is sent and received once by each side. 700-byte messages, about a ticket packet's size.
 */
import { once } from "node:events";
import { mnemonicToAccount } from "viem/accounts";

import { connectSecure, listenSecure, type HandshakeVersion, type SecureConnection } from "../channel-client/transport";

const MNEMONIC = "test test test test test test test test test test test junk";
const payer = mnemonicToAccount(MNEMONIC, { addressIndex: 2 });
const provider = mnemonicToAccount(MNEMONIC, { addressIndex: 3 });
const SESSION = `0x${"ab".repeat(32)}` as const;

export type TransportBench = Record<`v${HandshakeVersion}`, Record<`burst${1 | 8 | 16}`, number>>;

/** µs of CPU per message per side for `bursts` bursts of `perBurst` messages (after 300 bursts of warm-up). */
async function perMessageUs(version: HandshakeVersion, perBurst: number, messages: number): Promise<number> {
  const server = await listenSecure({ host: "127.0.0.1", port: 0, account: provider, authorize: async () => ({ ok: true }) });
  try {
    const accepted = once(server, "connection") as Promise<[SecureConnection]>;
    const client = await connectSecure({ host: "127.0.0.1", port: server.port, account: payer, sessionId: SESSION, expectedPeer: provider.address, handshakeVersion: version });
    const [remote] = await accepted;
    remote.on("message", (message) => void remote.send(message));
    const message = new Uint8Array(700).fill(7);
    let received = 0;
    let burstDone: () => void = () => {};
    client.on("message", () => {
      if (++received % perBurst === 0) burstDone();
    });
    const run = async (bursts: number) => {
      for (let b = 0; b < bursts; b++) {
        const answered = new Promise<void>((resolve) => (burstDone = resolve));
        for (let i = 0; i < perBurst; i++) void client.send(message);
        await answered;
      }
    };
    await run(300);
    // The best of three windows, like every rate of the ceiling: other work only slows a window.
    let best = Infinity;
    for (let w = 0; w < 3; w++) {
      const bursts = Math.max(1, Math.round(messages / 3 / perBurst));
      const cpu = process.cpuUsage();
      await run(bursts);
      const used = process.cpuUsage(cpu);
      best = Math.min(best, (used.user + used.system) / (bursts * perBurst) / 2);
    }
    await client.close();
    return Number(best.toFixed(1));
  } finally {
    await server.close();
  }
}

export async function benchTransport(messages = 12_000): Promise<TransportBench> {
  const result = { v1: {}, v2: {} } as TransportBench;
  for (const version of ["1", "2"] as const) {
    for (const burst of [1, 8, 16] as const) result[`v${version}`][`burst${burst}`] = await perMessageUs(version, burst, messages);
  }
  return result;
}
