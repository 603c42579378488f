/**
 * A third party's program (and the library's example), run by test/library/packed.test.ts from an empty project that installed the packed `ioi-settlement` tarball:
 * it imports only the package's public entry points, starts a provider node, and as the payer opens,
 * streams over and cooperatively closes a channel on the devnet at IOI_RPC_URL. Prints one JSON line.
 * The same program, in plain JavaScript, is consumer.js.
 */
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mkdtempSync } from "node:fs";
import { createPublicClient, createWalletClient, defineChain, http, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";

import { canon, type Deployment } from "ioi-settlement";
import { createPayer, SqliteStore } from "ioi-settlement/payer";
import { startProvider, type McpHandler } from "ioi-settlement/provider";
import { gasEscrowAbi } from "ioi-settlement/abi";

async function main(): Promise<void> {
  const rpc = process.env.IOI_RPC_URL!;
  const deployment: Deployment = { chainId: Number(process.env.IOI_CHAIN_ID), contracts: { GasEscrow: process.env.IOI_ESCROW as Hex } };
  const chain = defineChain({ id: deployment.chainId, name: "devnet", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [rpc] } } });
  const publicClient = createPublicClient({ chain, transport: http(rpc) });
  const walletOf = (key: string) => createWalletClient({ account: privateKeyToAccount(key as Hex), chain, transport: http(rpc) });
  const dir = mkdtempSync(join(tmpdir(), "ioi-consumer-"));

  const handler: McpHandler = async (request) => ({ result: { echoed: canon(request.params ?? null) }, units: 1n });
  const providerStore = SqliteStore.open(join(dir, "provider.db"));
  const provider = await startProvider({
    deployment,
    publicClient,
    wallet: walletOf(process.env.IOI_PROVIDER_KEY!),
    store: providerStore,
    pricing: { version: "1", unit: "invocation", pricePerInvocation: BigInt(process.env.IOI_PRICE!) },
    handler,
    modelSnapshotId: "consumer:echo@1",
    watch: false,
  });

  const payerStore = SqliteStore.open(join(dir, "payer.db"));
  const payer = createPayer({ deployment, publicClient, wallet: walletOf(process.env.IOI_PAYER_KEY!), store: payerStore });
  const opened = await payer.openChannel({ provider: provider.node.parameters.account.address, peer: { host: "127.0.0.1", port: provider.port }, deposit: BigInt(process.env.IOI_DEPOSIT!) });
  const client = await payer.connect(opened.sessionId);
  const results: unknown[] = [];
  for (let i = 0; i < 3; i++) results.push((await client.invoke({ jsonrpc: "2.0", id: i, method: "tools/echo", params: { text: `call ${i}` } })).result);
  await client.close();
  const phaseWhileOpen = await publicClient.readContract({ address: payer.escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [opened.sessionId] });
  const settled = await payer.closeCooperative(opened.sessionId);
  await provider.stop();
  await providerStore.close();
  await payerStore.close();
  console.log(JSON.stringify({ language: "typescript", sessionId: opened.sessionId, results, phaseWhileOpen, paidToProvider: settled.paidToProvider.toString(), refundedToFunder: settled.refundedToFunder.toString() }));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  },
);
