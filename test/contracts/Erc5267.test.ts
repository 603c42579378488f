/**
 * ERC-5267 on every contract that verifies a signature (issue 33 item 4): each reports, through
 * `eip712Domain()` read with viem's `getEip712Domain`, exactly the domain our TypeScript signs under, and a
 * digest built from nothing but the reported domain verifies a real signature of the kind the contract checks
 * (a ticket and a wallet's session-key grant on the GasEscrow, a resolution on the DisputeManager, a permit on
 * LaborGas). The GasEscrowWallets module runs by delegatecall: through the escrow's address it verifies under
 * the escrow's domain, which is the domain the escrow reports. A scan of contracts/ fails when a new contract
 * starts verifying signatures without being listed here.
 */
import { loadFixture } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { getAddress, hashTypedData, keccak256, parseEther, parseSignature, recoverAddress, stringToBytes, zeroHash, type Address, type Hex } from "viem";
import { getEip712Domain } from "viem/actions";

import { gasEscrowAbi } from "../../channel-client/abi/GasEscrow";
import { disputeManagerDomain, RESOLUTION_TYPES, resolutionDigest, signResolution, type ResolutionMessage } from "../../arbitration/lanes/resolution";
import { eip712Types, gasEscrowDomain } from "../../channel-client/core/eip712";
import { sessionIdOf } from "../../channel-client/core/terms";
import { paymentTicketDigest, signPaymentTicket, type PaymentTicket } from "../../channel-client/core/ticket";
import { hardhatAccount, makeTerms, POLICY_HASH, TERMS_HASH } from "../helpers/fixtures";
import { SYS, systemFixture } from "../helpers/system";

const h = (label: string): Hex => keccak256(stringToBytes(label));
const CONTRACTS = path.join(__dirname, "..", "..", "contracts");

/**
 * The domain a contract reports, as a typed-data domain holding exactly the fields its ERC-5267 `fields` bitmap
 * names (bit 0 name, 1 version, 2 chainId, 3 verifyingContract, 4 salt). viem's `getEip712Domain` returns every
 * member (a zero salt, a numeric chain id) whatever the bitmap says, and a `salt` member would add a fifth field to
 * the domain's type hash, so the bitmap decides here, as ERC-5267 says a reader must.
 */
async function reportedDomain(address: Address) {
  const client = await hre.viem.getPublicClient();
  const reported = await getEip712Domain(client, { address });
  expect(reported.fields, "fields: name, version, chainId, verifyingContract").to.equal("0x0f");
  expect(reported.extensions).to.deep.equal([]);
  expect(reported.domain.salt).to.equal(zeroHash);
  const bits = Number(reported.fields);
  const d = reported.domain;
  return {
    ...(bits & 1 ? { name: d.name! } : {}),
    ...(bits & 2 ? { version: d.version! } : {}),
    ...(bits & 4 ? { chainId: BigInt(d.chainId!) } : {}),
    ...(bits & 8 ? { verifyingContract: getAddress(d.verifyingContract!) } : {}),
    ...(bits & 16 ? { salt: d.salt! } : {}),
  };
}

describe("ERC-5267: every contract that verifies signatures reports the domain it verifies under", function () {
  it("the GasEscrow reports the domain channel-client/core/eip712.ts signs tickets under, and a ticket signed there recovers from it", async () => {
    const s = await loadFixture(systemFixture);
    const domain = await reportedDomain(s.escrow.address);
    const ours = gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: getAddress(s.escrow.address) });
    expect(domain).to.deep.equal({ name: ours.name, version: ours.version, chainId: BigInt(ours.chainId), verifyingContract: ours.verifyingContract });

    const payer = hardhatAccount(SYS.payer);
    const ticket: PaymentTicket = { sessionId: h("erc5267 session"), provider: hardhatAccount(SYS.provider).address, termsHash: TERMS_HASH, seq: 7n, cumulativeAmount: parseEther("0.7"), receiptRoot: h("root") };
    const signed = await signPaymentTicket({ account: payer, domain: ours, ticket });
    const fromReported = hashTypedData({ domain, types: eip712Types, primaryType: "PaymentTicket", message: ticket });
    expect(fromReported).to.equal(paymentTicketDigest(ours, ticket));
    expect(await s.escrow.read.hashPaymentTicket([ticket.sessionId, ticket.provider, ticket.termsHash, ticket.seq, ticket.cumulativeAmount, ticket.receiptRoot])).to.equal(fromReported);
    expect(await recoverAddress({ hash: fromReported, signature: signed.signature })).to.equal(payer.address);
    // Another contract's address in the domain gives another digest: the signature does not recover to the payer.
    const elsewhere = hashTypedData({ domain: { ...domain, verifyingContract: s.disputes.address }, types: eip712Types, primaryType: "PaymentTicket", message: ticket });
    expect(await recoverAddress({ hash: elsewhere, signature: signed.signature })).to.not.equal(payer.address);
  });

  it("the wallet module (delegatecall) accepts, through the escrow, a wallet's grant signed over the escrow's reported domain", async () => {
    const s = await loadFixture(systemFixture);
    const domain = await reportedDomain(s.escrow.address);
    const owner = hardhatAccount(SYS.payer);
    const wallet = await hre.viem.deployContract("OwnerWallet", [owner.address]);
    const terms = makeTerms(undefined, { payer: wallet.address, funder: wallet.address, provider: hardhatAccount(SYS.provider).address, policyHash: POLICY_HASH });
    const openedAt = 1n;
    const sessionId = sessionIdOf(gasEscrowDomain({ chainId: Number(domain.chainId), verifyingContract: domain.verifyingContract! }), { terms, openedAt });
    const grant = { sessionId, key: hardhatAccount(SYS.stranger).address, expiry: 2n ** 40n, spendCap: parseEther("1"), capabilities: h("caps"), epoch: 0n };
    const grantDigest = hashTypedData({ domain, types: eip712Types, primaryType: "SessionKey", message: grant });
    const sig = await owner.sign!({ hash: grantDigest }); // a mnemonic account signs raw digests
    const registered = { address: s.escrow.address, abi: gasEscrowAbi, functionName: "walletSessionKeyRegistered", args: [sessionId, grantDigest] } as const;
    expect(await s.publicClient.readContract(registered)).to.equal(false);
    const { sessionId: _omit, ...onChainGrant } = grant;
    const hash = await s.wallets[SYS.stranger]!.writeContract({
      address: s.escrow.address,
      abi: gasEscrowAbi,
      functionName: "registerWalletSessionKey",
      args: [terms, openedAt, { ...onChainGrant, sig }],
    });
    expect((await s.publicClient.waitForTransactionReceipt({ hash })).status).to.equal("success");
    // The module recorded the digest built from the reported domain: it verified under the escrow's domain.
    expect(await s.publicClient.readContract(registered)).to.equal(true);
  });

  it("the DisputeManager reports the domain arbitration/resolution.ts signs under, and a signed resolution recovers from it", async () => {
    const s = await loadFixture(systemFixture);
    const domain = await reportedDomain(s.disputes.address);
    const ours = disputeManagerDomain(s.chainId, getAddress(s.disputes.address));
    expect(domain).to.deep.equal({ name: ours.name, version: ours.version, chainId: ours.chainId, verifyingContract: ours.verifyingContract });

    const arbitrator = hardhatAccount(SYS.arbitrators[0]);
    const message: ResolutionMessage = { caseId: h("erc5267 case"), verdict: 1, refund: parseEther("0.3"), slash: parseEther("0.1"), resolutionHash: h("resolution") };
    const signature = await signResolution(arbitrator, ours, message);
    const fromReported = hashTypedData({ domain, types: RESOLUTION_TYPES, primaryType: "Resolution", message });
    expect(fromReported).to.equal(resolutionDigest(ours, message));
    expect(await s.disputes.read.hashResolution([message])).to.equal(fromReported);
    expect(await recoverAddress({ hash: fromReported, signature })).to.equal(arbitrator.address);
  });

  it("LaborGas (EIP-2612) reports its permit domain, and a permit signed over it is accepted on-chain", async () => {
    const s = await loadFixture(systemFixture);
    const domain = await reportedDomain(s.token.address);
    expect(domain).to.deep.equal({ name: "Labor Gas", version: "1", chainId: s.chainId, verifyingContract: getAddress(s.token.address) });
    const owner = hardhatAccount(SYS.unregistered);
    const spender = hardhatAccount(SYS.stranger).address;
    const deadline = 2n ** 40n;
    const value = parseEther("3");
    const nonce = await s.token.read.nonces([owner.address]);
    const PERMIT = { Permit: [{ name: "owner", type: "address" }, { name: "spender", type: "address" }, { name: "value", type: "uint256" }, { name: "nonce", type: "uint256" }, { name: "deadline", type: "uint256" }] } as const;
    const signature = await owner.signTypedData({ domain, types: PERMIT, primaryType: "Permit", message: { owner: owner.address, spender, value, nonce, deadline } });
    const { v, r, s: sv } = parseSignature(signature);
    await s.token.write.permit([owner.address, spender, value, deadline, Number(v), r, sv], { account: s.wallets[SYS.stranger]!.account });
    expect(await s.token.read.allowance([owner.address, spender])).to.equal(value);
  });

  it("no other contract verifies signatures: the scan of contracts/ finds exactly the verifiers above", () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const full = path.join(dir, name);
        if (statSync(full).isDirectory()) {
          if (name !== "test") walk(full);
        } else if (name.endsWith(".sol")) files.push(path.relative(CONTRACTS, full));
      }
    };
    walk(CONTRACTS);
    const verifies = /\becrecover\b|\bECDSA\.|SignatureChecker\.|_hashTypedDataV4|EIP712Domain|\bERC20Permit\b|hex"1901"|\\x19\\x01/;
    const code = (f: string) => readFileSync(path.join(CONTRACTS, f), "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
    const verifiers = files.filter((f) => verifies.test(code(f))).sort();
    // Each file and the deployed contract whose eip712Domain() a case above reads.
    expect(verifiers).to.deep.equal([
      "DisputeManager.sol", // DisputeManager
      "GasEscrow.sol", // GasEscrow
      "GasEscrowBase.sol", // GasEscrow
      "GasEscrowWallets.sol", // GasEscrow (delegatecall)
      "LaborGas.sol", // LaborGas
      "libraries/Panels.sol", // DisputeManager (its linked library recovers panel signatures over hashResolution's digest)
    ]);
  });
});
