/**
 * A payer process for the payer kill-and-resume test (`test/adversarial/crash-payer.test.ts`): connects to the provider on
 * the channel its store holds (taking back what the provider answered past the store, as any restarted
 * payer does), then streams invocations with 64 in flight and prints one line per receipt made durable:
 * `{"durable": n}`. Configured through IOI_PAYER_CHILD (JSON), and does nothing without it (the test runner
 * loads every file under test/); meant to be SIGKILLed at any moment.
 */
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";

import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { PayerClient } from "../../channel-client/node/payer-client";
import { SqliteStore } from "../../channel-client/store/sqlite-store";

type Config = { db: string; sessionId: Hex; chainId: number; escrow: Hex; port: number; key: Hex; count: number; inflight: number; firstId: number };

async function main(): Promise<void> {
  const config = JSON.parse(process.env.IOI_PAYER_CHILD ?? "") as Config;
  const store = SqliteStore.open(config.db);
  const channel = store.getChannel(config.sessionId);
  if (!channel) throw new Error(`the store holds no channel ${config.sessionId}`);
  const domain = gasEscrowDomain({ chainId: config.chainId, verifyingContract: config.escrow });
  const client = await PayerClient.connect({ account: privateKeyToAccount(config.key), domain, store, channel, port: config.port });
  process.stdout.write(`${JSON.stringify({ connected: client.session.seq.toString() })}\n`);
  await client.stream({
    count: config.count,
    inflight: config.inflight,
    request: (i) => ({ jsonrpc: "2.0", id: `child-${config.firstId + i}`, method: "tools/echo", params: { n: config.firstId + i } }),
    onProgress: (done) => process.stdout.write(`${JSON.stringify({ durable: done })}\n`),
  });
  await client.close();
  await store.close();
}

// The test runner loads every file under test/; only a process started as the payer child runs.
if (process.env.IOI_PAYER_CHILD !== undefined) {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
}
