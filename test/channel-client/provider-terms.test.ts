/**
 * The terms document at both ends (issue 14, decision 0026): `ioi provider --terms-file` (a real provider process)
 * offers the v2 document, binds only channels whose terms hash is that document's and prices each receipt by its
 * metering; the library's `createPayer(…).openChannel({ expectedTerms })` funds only a channel on the document
 * the payer agreed to.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { createWalletClient, custom, parseEther, toHex, type Hex, type PublicClient } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { hardhat } from "viem/chains";

import { echoHandler } from "../../channel-client/cli/channel";
import { fetchTermsOffer } from "../../channel-client/node/payer-client";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { createPayer } from "../../channel-client/roles/payer";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { priceOf, pricingTermsToJson, termsHashOf, type TermsDocumentV2 } from "../../channel-client/core/terms";
import { rejection } from "../helpers/assert";
import { cliSandbox, runCli } from "../helpers/cli";
import { escrowFixture, HARDHAT_MNEMONIC, ROLE } from "../helpers/fixtures";
import { startProviderChild } from "../helpers/provider-child";

const keyOf = (index: number) => toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) as Hex;
const jsonOf = (result: { out: string }) => JSON.parse(result.out.split("\n").pop()!) as Record<string, unknown>;

const MODEL = "worker:echo-keccak@1";
const DOC: TermsDocumentV2 = {
  version: "2",
  pricing: { perInvocation: parseEther("0.001"), perUnit: { unit: "token", price: parseEther("0.0001") }, capPerCall: parseEther("0.01") },
  models: [MODEL],
  disputes: { windowAfterSettlement: 3600n, penalties: { RECEIPT_MODEL_SWAP: parseEther("1") }, refundsFromBond: true },
  requiredReceipts: ["rrsa_request_binding", "rrsa_output_commitment"],
};

describe("the terms document at both ends: ioi provider --terms-file, and the library's expectedTerms", function () {
  this.timeout(180_000);
  const box = cliSandbox("ioi-terms-");
  const cleanup = box.cleanup;
  const children = new Set<ChildProcess>();
  afterEach(() => {
    for (const child of children) child.kill("SIGKILL");
  });

  it("ioi provider --terms-file offers the v2 document, binds a channel on its hash and prices receipts by their metering; a channel on other terms is refused", async () => {
    const fx = await loadFixture(escrowFixture);
    const termsFile = path.join(box.dir, "offered.terms.json");
    writeFileSync(termsFile, JSON.stringify(pricingTermsToJson(DOC), null, 2));
    const child = await startProviderChild({ rpcUrl: box.rpc.url, escrow: fx.escrow.address, db: path.join(box.dir, "provider.db"), price: 0n, termsFile, key: keyOf(ROLE.provider), children, startDeadlineMs: 60_000 });
    cleanup.push(async () => {
      child.child.kill("SIGTERM");
      await child.exited;
    });
    const offer = await fetchTermsOffer({ account: fx.payer, domain: fx.domain, provider: fx.provider.address, port: child.port });
    expect(offer.pricing).to.deep.equal(DOC);
    expect(offer.termsHash).to.equal(termsHashOf(DOC));

    const payerDb = path.join(box.dir, "payer.db");
    const payer = (argv: string[]) => runCli([...argv, "--json", "--rpc", box.rpc.url, "--escrow", fx.escrow.address, "--db", payerDb], { IOI_PRIVATE_KEY: keyOf(ROLE.payer) });
    const peer = `127.0.0.1:${child.port}`;
    const opened = await payer(["open", "--provider", fx.provider.address, "--deposit", parseEther("0.1").toString(), "--peer", peer, "--terms-file", termsFile]);
    expect(opened.code, opened.err).to.equal(0);
    const sessionId = jsonOf(opened).sessionId as Hex;
    const streamed = await payer(["stream", "--session", sessionId, "-n", "2"]);
    expect(streamed.code, streamed.err).to.equal(0);
    const store = SqliteStore.open(payerDb);
    const receipts = store.steps(sessionId).map((step) => step.receipt!.receipt);
    await store.close();
    expect(receipts).to.have.length(2);
    for (const r of receipts) {
      expect(r.modelSnapshotId).to.equal(MODEL);
      expect(r.metering.amount).to.equal(priceOf(DOC, r.metering.units));
    }

    // A channel funded (unchecked, without --peer) on a flat price: the provider refuses to bind it.
    const other = await payer(["open", "--provider", fx.provider.address, "--deposit", parseEther("0.1").toString(), "--price", parseEther("0.001").toString()]);
    expect(other.code, other.err).to.equal(0);
    const refused = await payer(["stream", "--session", jsonOf(other).sessionId as string, "-n", "1", "--peer", peer]);
    expect(refused.code).to.not.equal(0);
    expect(child.stderr()).to.contain("The channel's terms hash is not this provider's price list");
  });

  it("createPayer(…).openChannel({ expectedTerms }) funds a channel only on the document the payer agreed to", async () => {
    const fx = await loadFixture(escrowFixture);
    const publicClient = fx.publicClient as unknown as PublicClient;
    const providerStore = SqliteStore.open(path.join(box.dir, "provider.db"));
    const node = await ProviderNode.start({ account: fx.provider, publicClient, domain: fx.domain, store: providerStore, pricing: DOC, handler: echoHandler, modelSnapshotId: MODEL });
    const payerStore = SqliteStore.open(path.join(box.dir, "payer.db"));
    cleanup.push(async () => {
      await node.stop();
      await providerStore.close();
      await payerStore.close();
    });
    const payer = createPayer({
      deployment: { chainId: fx.domain.chainId, contracts: { GasEscrow: fx.escrow.address } },
      publicClient,
      wallet: createWalletClient({ account: fx.payer, chain: hardhat, transport: custom(hre.network.provider) }),
      store: payerStore,
    });
    const peer = { host: "127.0.0.1", port: node.port };
    const before = await publicClient.getBalance({ address: fx.escrow.address });
    const cheaper: TermsDocumentV2 = { ...DOC, pricing: { ...DOC.pricing, capPerCall: parseEther("0.005") } };
    const error = await rejection(payer.openChannel({ provider: fx.provider.address, peer, deposit: parseEther("0.1"), expectedTerms: cheaper }));
    expect(error.name).to.equal("PayerError");
    expect(error.message).to.contain(`not the terms document the payer agreed to (${termsHashOf(cheaper)}); nothing was funded`);
    expect(await publicClient.getBalance({ address: fx.escrow.address })).to.equal(before);
    expect(payerStore.listChannels()).to.deep.equal([]);

    const opened = await payer.openChannel({ provider: fx.provider.address, peer, deposit: parseEther("0.1"), expectedTerms: DOC });
    expect(opened.pricing).to.deep.equal(DOC);
    expect(payerStore.getChannel(opened.sessionId)!.ref.terms.termsHash).to.equal(termsHashOf(DOC));
    expect(await publicClient.getBalance({ address: fx.escrow.address })).to.equal(before + parseEther("0.1"));
    // And the node binds it: one metered call through the library's client.
    const client = await payer.connect(opened.sessionId);
    await client.invoke({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } });
    await client.close();
    const receipt = payerStore.steps(opened.sessionId)[0]!.receipt!.receipt;
    expect(receipt.metering.amount).to.equal(priceOf(DOC, receipt.metering.units));
  });
});
