/**
 * `ioi open --peer` (issue 12: no funding before agreement): the payer asks the provider node for its
 * signed terms first and funds only a channel the provider will accept; a price the provider does not
 * charge funds nothing; without `--peer` the CLI says what it could not check.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { createWalletClient, custom, getAddress, parseEther, toHex, type Hex, type PublicClient } from "viem";
import { hardhat } from "viem/chains";
import { mnemonicToAccount } from "viem/accounts";

import { echoHandler } from "../../channel-client/cli/channel";
import { fetchTermsOffer } from "../../channel-client/node/payer-client";
import { ProviderNode } from "../../channel-client/node/provider-node";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { priceOf, pricingTermsToJson, termsHashOf, type PricingTerms, type TermsDocumentV2 } from "../../channel-client/core/terms";
import { signTermsOffer, verifyTermsOffer } from "../../channel-client/core/terms-offer";
import { rejection } from "../helpers/assert";
import { escrowFixture, hardhatAccount, HARDHAT_MNEMONIC, ROLE } from "../helpers/fixtures";
import { cliSandbox, runCli } from "../helpers/cli";
import { DISPUTE_PARAMS, SYS, systemFixture } from "../helpers/system";
import { gasEscrowDomain } from "../../channel-client/core/eip712";
import { createPayer } from "../../channel-client/roles/payer";

const PRICE = parseEther("0.002");
const pricing: PricingTerms = { version: "1", unit: "invocation", pricePerInvocation: PRICE };
const keyOf = (index: number) => ({ IOI_PRIVATE_KEY: toHex(mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!) as Hex });
const jsonOf = (result: { out: string }) => JSON.parse(result.out.split("\n").pop()!) as Record<string, unknown>;

describe("ioi open --peer: the provider's signed terms before any funding", function () {
  const box = cliSandbox("ioi-open-");
  const cleanup = box.cleanup;

  async function withProvider(offered: PricingTerms = pricing, model = "worker:echo@1") {
    const fx = await loadFixture(escrowFixture);
    const store = SqliteStore.open(path.join(box.dir, "provider.db"));
    const publicClient = fx.publicClient as unknown as PublicClient;
    const node = await ProviderNode.start({ account: fx.provider, publicClient, domain: fx.domain, store, pricing: offered, handler: echoHandler, modelSnapshotId: model });
    cleanup.push(async () => {
      await node.stop();
      await store.close();
    });
    const open = (extra: string[]) =>
      runCli(["open", "--json", "--provider", fx.provider.address, "--deposit", parseEther("0.1").toString(), "--rpc", box.rpc.url, "--escrow", fx.escrow.address, "--db", path.join(box.dir, "payer.db"), ...extra], keyOf(ROLE.payer));
    return { fx, node, store, publicClient, open };
  }

  it("fetches and verifies the provider's offer over the sealed socket; refuses one signed by another key or for another escrow", async () => {
    const { fx, node } = await withProvider();
    const offer = await fetchTermsOffer({ account: fx.payer, domain: fx.domain, provider: fx.provider.address, port: node.port });
    expect(offer).to.deep.equal({ provider: fx.provider.address, chainId: BigInt(fx.domain.chainId), escrow: fx.domain.verifyingContract, pricing, termsHash: termsHashOf(pricing) });

    const forged = await signTermsOffer(hardhatAccount(ROLE.stranger), fx.domain, pricing);
    expect((await rejection(verifyTermsOffer(forged, fx.provider.address, fx.domain))).name).to.equal("BindingMismatchError");
    const resigned = { offer: { ...forged.offer, provider: fx.provider.address }, signature: forged.signature };
    expect((await rejection(verifyTermsOffer(resigned, fx.provider.address, fx.domain))).name).to.equal("InvalidSignatureError");
    const elsewhere = await signTermsOffer(fx.provider, { ...fx.domain, verifyingContract: getAddress(fx.stranger.account.address) }, pricing);
    expect((await rejection(verifyTermsOffer(elsewhere, fx.provider.address, fx.domain))).name).to.equal("BindingMismatchError");
  });

  it("funds nothing when --price is not what the provider charges (one sentence, exit code 2)", async () => {
    const { fx, node, publicClient, open } = await withProvider();
    const before = await publicClient.getBalance({ address: fx.escrow.address });
    const result = await open(["--peer", `127.0.0.1:${node.port}`, "--price", (PRICE / 2n).toString()]);
    expect(result.code).to.equal(2);
    expect(result.err).to.contain(`charges ${PRICE} wei per invocation, not ${PRICE / 2n}; nothing was funded`);
    expect(await publicClient.getBalance({ address: fx.escrow.address })).to.equal(before);
  });

  it("opens on the provider's own terms (no --price needed) and the provider then binds the channel", async () => {
    const { fx, node, store, open } = await withProvider();
    const opened = await open(["--peer", `127.0.0.1:${node.port}`]);
    expect(opened.code, opened.err).to.equal(0);
    const json = jsonOf(opened);
    expect(json).to.deep.include({ ok: true, pricePerInvocation: PRICE.toString(), termsChecked: true });
    const streamed = await runCli(["stream", "--json", "--session", json.sessionId as string, "-n", "3", "--peer", `127.0.0.1:${node.port}`, "--rpc", box.rpc.url, "--escrow", fx.escrow.address, "--db", path.join(box.dir, "payer.db")], keyOf(ROLE.payer));
    expect(streamed.code, streamed.err).to.equal(0);
    expect(store.receiptCount(json.sessionId as Hex)).to.equal(3);
  });

  it("without --peer says the terms were not checked", async () => {
    const { open } = await withProvider();
    const opened = await open(["--price", PRICE.toString()]);
    expect(opened.code, opened.err).to.equal(0);
    expect(jsonOf(opened)).to.deep.include({ ok: true, termsChecked: false });
    expect(opened.out).to.contain("without --peer the provider's terms were not checked");
  });

  describe("--terms-file (decision 0026)", () => {
    const metered: TermsDocumentV2 = {
      version: "2",
      pricing: { perInvocation: parseEther("0.001"), perUnit: { unit: "token", price: parseEther("0.0001") }, capPerCall: parseEther("0.01") },
      models: ["worker:echo@1"],
      disputes: { windowAfterSettlement: 3600n, penalties: { RECEIPT_MODEL_SWAP: parseEther("1") }, refundsFromBond: true },
      requiredReceipts: ["rrsa_request_binding", "rrsa_output_commitment"],
    };
    const write = (doc: PricingTerms, name: string) => {
      const file = path.join(box.dir, name);
      writeFileSync(file, JSON.stringify(pricingTermsToJson(doc), null, 2));
      return file;
    };

    it("opens only on the document the payer agreed to; the stream's receipts charge the metered price, the tickets prepay the cap", async () => {
      const { fx, node, store, open } = await withProvider(metered);
      const opened = await open(["--peer", `127.0.0.1:${node.port}`, "--terms-file", write(metered, "agreed.terms.json")]);
      expect(opened.code, opened.err).to.equal(0);
      const json = jsonOf(opened);
      expect(json).to.deep.include({ ok: true, termsHash: termsHashOf(metered), termsChecked: true });
      const streamed = await runCli(["stream", "--json", "--session", json.sessionId as string, "-n", "3", "--peer", `127.0.0.1:${node.port}`, "--rpc", box.rpc.url, "--escrow", fx.escrow.address, "--db", path.join(box.dir, "payer.db")], keyOf(ROLE.payer));
      expect(streamed.code, streamed.err).to.equal(0);
      const result = jsonOf(streamed);
      const receipts = store.steps(json.sessionId as Hex).map((step) => step.receipt!.receipt);
      expect(receipts).to.have.length(3);
      for (const r of receipts) expect(r.metering.amount).to.equal(priceOf(metered, r.metering.units));
      expect(result.paid).to.equal((metered.pricing.capPerCall * 3n).toString());
      expect(result.charged).to.equal(receipts.reduce((sum, r) => sum + r.metering.amount, 0n).toString());
    });

    it("funds nothing when the provider's signed offer is another document (one sentence, exit code 2)", async () => {
      const { fx, node, publicClient, open } = await withProvider(metered);
      const before = await publicClient.getBalance({ address: fx.escrow.address });
      const cheaper = { ...metered, pricing: { ...metered.pricing, capPerCall: parseEther("0.005") } };
      const result = await open(["--peer", `127.0.0.1:${node.port}`, "--terms-file", write(cheaper, "mine.terms.json")]);
      expect(result.code).to.equal(2);
      expect(result.err).to.contain(`offers terms ${termsHashOf(metered)}`);
      expect(result.err.split("\n")[0]).to.match(/nothing was funded\.$/);
      expect(await publicClient.getBalance({ address: fx.escrow.address })).to.equal(before);
    });

    describe("the terms' dispute window against the chain's (decision 0026, amendment)", () => {
      const chainWindow = BigInt(DISPUTE_PARAMS.settledDisputeWindow);
      /** A provider node on the full system (a DisputeManager deployed) offering `offered`. */
      async function onSystem(offered: TermsDocumentV2) {
        const s = await loadFixture(systemFixture);
        const domain = gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: getAddress(s.escrow.address) });
        const store = SqliteStore.open(path.join(box.dir, "provider.db"));
        const node = await ProviderNode.start({ account: hardhatAccount(SYS.provider), publicClient: s.publicClient as unknown as PublicClient, domain, store, pricing: offered, handler: echoHandler, modelSnapshotId: "worker:echo@1" });
        cleanup.push(async () => {
          await node.stop();
          await store.close();
        });
        const open = (extra: string[], env: Record<string, string> = {}) =>
          runCli(
            ["open", "--json", "--provider", getAddress(hardhatAccount(SYS.provider).address), "--deposit", parseEther("0.1").toString(), "--rpc", box.rpc.url, "--escrow", s.escrow.address, "--db", path.join(box.dir, "payer.db"), "--peer", `127.0.0.1:${node.port}`, ...extra],
            { ...keyOf(SYS.payer), ...env },
          );
        return { s, node, open };
      }

      it("ioi open and the library's openChannel refuse terms whose window outlasts the DisputeManager's settledDisputeWindow (one sentence, exit 2, nothing funded)", async () => {
        const long = { ...metered, disputes: { ...metered.disputes, windowAfterSettlement: chainWindow + 1n } };
        const { s, node, open } = await onSystem(long);
        const before = await s.publicClient.getBalance({ address: s.escrow.address });
        const refused = await open(["--terms-file", write(long, "long.terms.json")], { IOI_DISPUTE_MANAGER: s.disputes.address });
        expect(refused.code).to.equal(2);
        expect(refused.err.split("\n")[0]).to.match(/^ioi open failed — UsageError: Refusing the terms: .*; nothing was funded\.$/);
        expect(refused.err).to.contain(`promise disputes until ${chainWindow + 1n} s after a settlement, but this chain's DisputeManager accepts them only for ${chainWindow} s`);
        expect(refused.err).to.match(/nothing was funded\.$/m);
        expect(await s.publicClient.getBalance({ address: s.escrow.address })).to.equal(before);
        const payerStore = SqliteStore.open(path.join(box.dir, "library-payer.db"));
        cleanup.push(() => payerStore.close());
        const payer = createPayer({
          deployment: { chainId: Number(s.chainId), contracts: { GasEscrow: getAddress(s.escrow.address), DisputeManager: getAddress(s.disputes.address) } },
          publicClient: s.publicClient as unknown as PublicClient,
          wallet: createWalletClient({ account: hardhatAccount(SYS.payer), chain: hardhat, transport: custom(hre.network.provider) }),
          store: payerStore,
        });
        const error = await rejection(payer.openChannel({ provider: getAddress(hardhatAccount(SYS.provider).address), peer: { host: "127.0.0.1", port: node.port }, deposit: parseEther("0.1") }));
        expect(error.name).to.equal("PayerError");
        expect(error.message).to.contain("cannot be honoured here").and.to.contain("nothing was funded");
        expect(await s.publicClient.getBalance({ address: s.escrow.address })).to.equal(before);
        // Without a known DisputeManager the comparison cannot be made: said, not hidden.
        const unchecked = await open(["--terms-file", write(long, "long.terms.json")]);
        expect(unchecked.code, unchecked.err).to.equal(0);
        expect(unchecked.out).to.contain("the terms' dispute window was not compared with the chain's");
      });

      it("a window equal to the chain's opens", async () => {
        const exact = { ...metered, disputes: { ...metered.disputes, windowAfterSettlement: chainWindow } };
        const { s, open } = await onSystem(exact);
        const opened = await open(["--terms-file", write(exact, "exact.terms.json")], { IOI_DISPUTE_MANAGER: s.disputes.address });
        expect(opened.code, opened.err).to.equal(0);
        expect(opened.out).to.not.contain("was not compared");
        expect(jsonOf(opened)).to.deep.include({ ok: true, termsHash: termsHashOf(exact), termsChecked: true });
      });
    });

    it("a terms file that breaks the schema is one sentence naming the field, before any RPC call", async () => {
      const file = path.join(box.dir, "bad.terms.json");
      writeFileSync(file, JSON.stringify({ ...pricingTermsToJson(metered), models: [] }));
      const result = await runCli(["open", "--provider", "0x90F79bf6EB2c4f870365E785982E1f101E93b906", "--deposit", "1", "--terms-file", file, "--rpc", "http://127.0.0.1:1", "--escrow", "0x5FbDB2315678afecb367f032d93F642f64180aa3"], keyOf(ROLE.payer));
      expect(result.code).to.not.equal(0);
      expect(result.err).to.contain(`terms in ${file}.models must be an array of at least 1 items`);
      expect(result.err.trim().split("\n")).to.have.length(1);
    });
  });
});
