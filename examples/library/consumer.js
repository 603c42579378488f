/**
 * A third party's program (and the library's example), run by test/library/packed.test.ts from an empty project that installed the packed `ioi-settlement` tarball:
 * it imports only the package's public entry points, starts a provider node, and as the payer opens,
 * streams over and cooperatively closes a channel on the devnet at IOI_RPC_URL. Prints one JSON line.
 * The same program in TypeScript is consumer.ts.
 */
"use strict";
const { tmpdir } = require("node:os");
const { join } = require("node:path");
const { mkdtempSync } = require("node:fs");
const { createPublicClient, createWalletClient, defineChain, http } = require("viem");
const { privateKeyToAccount } = require("viem/accounts");

const { canon } = require("ioi-settlement");
const { createPayer, SqliteStore } = require("ioi-settlement/payer");
const { startProvider } = require("ioi-settlement/provider");
const { gasEscrowAbi } = require("ioi-settlement/abi");

async function main() {
  const rpc = process.env.IOI_RPC_URL;
  const deployment = { chainId: Number(process.env.IOI_CHAIN_ID), contracts: { GasEscrow: process.env.IOI_ESCROW } };
  const chain = defineChain({ id: deployment.chainId, name: "devnet", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [rpc] } } });
  const publicClient = createPublicClient({ chain, transport: http(rpc) });
  const walletOf = (key) => createWalletClient({ account: privateKeyToAccount(key), chain, transport: http(rpc) });
  const dir = mkdtempSync(join(tmpdir(), "ioi-consumer-"));

  const handler = async (request) => ({ result: { echoed: canon(request.params ?? null) }, units: 1n });
  const providerStore = SqliteStore.open(join(dir, "provider.db"));
  const provider = await startProvider({
    deployment,
    publicClient,
    wallet: walletOf(process.env.IOI_PROVIDER_KEY),
    store: providerStore,
    pricing: { version: "1", unit: "invocation", pricePerInvocation: BigInt(process.env.IOI_PRICE) },
    handler,
    modelSnapshotId: "consumer:echo@1",
    watch: false,
  });

  const payerStore = SqliteStore.open(join(dir, "payer.db"));
  const payer = createPayer({ deployment, publicClient, wallet: walletOf(process.env.IOI_PAYER_KEY), store: payerStore });
  const opened = await payer.openChannel({ provider: provider.node.parameters.account.address, peer: { host: "127.0.0.1", port: provider.port }, deposit: BigInt(process.env.IOI_DEPOSIT) });
  const client = await payer.connect(opened.sessionId);
  const results = [];
  for (let i = 0; i < 3; i++) results.push((await client.invoke({ jsonrpc: "2.0", id: i, method: "tools/echo", params: { text: `call ${i}` } })).result);
  await client.close();
  const phaseWhileOpen = await publicClient.readContract({ address: payer.escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [opened.sessionId] });
  const settled = await payer.closeCooperative(opened.sessionId);
  await provider.stop();
  await providerStore.close();
  await payerStore.close();
  console.log(JSON.stringify({ language: "javascript", sessionId: opened.sessionId, results, phaseWhileOpen, paidToProvider: settled.paidToProvider.toString(), refundedToFunder: settled.refundedToFunder.toString() }));
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  },
);
