/**
 * The secp256k1 backends (decision 0023): libsecp256k1 (native, the default) and @noble/curves (the explicit
 * fall-back) sign byte-for-byte as viem does, and the nodes' signature checks accept exactly what the
 * contract accepts — proven against viem, the EVM's ecrecover precompile and the GasEscrow's own
 * `ECDSA.tryRecover(digest, r, vs)` (through a harness).
 */
import hre from "hardhat";
import { expect } from "chai";
import { concat, keccak256, numberToHex, pad, parseSignature, stringToBytes, toHex, type Address, type Hex } from "viem";
import { mnemonicToAccount, privateKeyToAccount, sign } from "viem/accounts";

import { assertDigestSigner, recoverDigestSigner, signDigest, signingAccount, toCompactSignature, toHighS } from "../../channel-client/core/eip712";
import { CryptoBackendUnavailableError, loadSecp256k1Backend, secp256k1Backend, selectSecp256k1Backend, type Secp256k1BackendName } from "../../channel-client/core/secp256k1";
import { rejection } from "../helpers/assert";
import { HARDHAT_MNEMONIC } from "../helpers/fixtures";

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
/** r, s and v of a 65-byte signature, without validation (viem's parseSignature refuses the edge cases). */
const split = (signature: Hex) => ({ r: signature.slice(0, 66) as Hex, s: `0x${signature.slice(66, 130)}` as Hex, v: BigInt(`0x${signature.slice(130)}`) });
const word = (n: bigint): Hex => pad(numberToHex(n), { size: 32 });
const key = (i: number): Hex => keccak256(stringToBytes(`secp256k1 test key ${i}`));
const digest = (i: number): Hex => keccak256(stringToBytes(`secp256k1 test digest ${i}`));

/** Known answer: private key 1, digest keccak256(""), computed by viem's `sign` (noble) and pinned. */
const KAT = {
  privateKey: `0x${"00".repeat(31)}01` as Hex,
  digest: "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470" as Hex,
  signature: "0x03925438bf9bdfed9cb8d9d9467f8fc624f389846f0db71f4f5c84b483077da62ca68cb1027ace392bc6a84fe0ba29288aa07942f571f56201dd33c009ee38861c" as Hex,
  signer: "0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf" as Address,
};

/** What the contract's `_recover` makes of a 65-byte signature: the signer, or the name of its revert. */
async function onChain(harness: { read: { tryRecover: (args: [Hex, Hex, Hex]) => Promise<readonly [Address, number]> } }, d: Hex, signature: Hex): Promise<string> {
  const { r, s, v } = split(signature);
  const yParity = v === 28n ? 1n : 0n;
  if (v !== 27n && v !== 28n) return "no compact form";
  const sn = BigInt(s);
  // The contract takes { r, vs } (ERC-2098): vs = yParity << 255 | s. An s ≥ 2^255 has no such form.
  if (sn >= 1n << 255n) return "no compact form";
  const vs = word((yParity << 255n) | sn);
  const [recovered, err] = await harness.read.tryRecover([d, r, vs]);
  return err === 0 ? recovered.toLowerCase() : err === 3 ? "SignatureNotLowS" : "InvalidSignature";
}

/** The EVM's ecrecover precompile (address 1): the signer or "none" (it accepts high s, the contract does not). */
async function ecrecover(d: Hex, signature: Hex): Promise<string> {
  const client = await hre.viem.getPublicClient();
  const { r, s, v } = split(signature);
  const { data } = await client.call({ to: "0x0000000000000000000000000000000000000001", data: concat([d, word(v), r, s]) });
  return data && data !== "0x" && BigInt(data) !== 0n ? `0x${data.slice(26)}`.toLowerCase() : "none";
}

/** What the node makes of it: the signer or the error's name. */
async function offChain(d: Hex, signature: Hex): Promise<string> {
  try {
    return (await recoverDigestSigner(d, signature)).toLowerCase();
  } catch (error) {
    return (error as Error).name;
  }
}

describe("secp256k1 backends", () => {
  after(() => selectSecp256k1Backend("native"));

  it("uses libsecp256k1 by default and names it", () => {
    expect(process.env.IOI_SECP256K1_BACKEND ?? "").to.equal("");
    expect(secp256k1Backend().name).to.equal("native");
    expect(secp256k1Backend().implementation).to.equal("libsecp256k1 (secp256k1@5.0.2, N-API)");
  });

  it("refuses an unknown backend name with one sentence, never silently", () => {
    expect(() => selectSecp256k1Backend("elliptic" as Secp256k1BackendName)).to.throw(CryptoBackendUnavailableError, 'it must be "native" (libsecp256k1) or "noble"');
    expect(new CryptoBackendUnavailableError("x").name).to.equal("CryptoBackendUnavailableError");
    expect(secp256k1Backend().name).to.equal("native");
  });

  for (const name of ["native", "noble"] as const) {
    describe(`${name}`, () => {
      before(() => selectSecp256k1Backend(name));

      it("signs the pinned known answer", async () => {
        expect(await signDigest(signingAccount(KAT.privateKey), KAT.digest)).to.equal(KAT.signature);
        expect(await sign({ hash: KAT.digest, privateKey: KAT.privateKey, to: "hex" })).to.equal(KAT.signature);
        expect(await recoverDigestSigner(KAT.digest, KAT.signature)).to.equal(KAT.signer);
      });

      it("signs byte-for-byte as viem does (200 keys × digests; private-key and mnemonic accounts)", async () => {
        for (let i = 0; i < 200; i++) {
          const account = signingAccount(key(i));
          const viemSignature = await privateKeyToAccount(key(i)).sign({ hash: digest(i) });
          expect(await signDigest(account, digest(i))).to.equal(viemSignature);
        }
        for (let i = 0; i < 5; i++) {
          const account = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: i });
          expect(await signDigest(account, digest(i))).to.equal(await account.sign({ hash: digest(i) }));
        }
      });

      it("every signature is low-s with v 27 or 28", async () => {
        for (let i = 0; i < 200; i++) {
          const signature = await signDigest(signingAccount(key(i)), digest(i + 1000));
          const { s, v } = parseSignature(signature);
          expect(BigInt(s) <= N >> 1n).to.equal(true);
          expect([27n, 28n]).to.include(v);
        }
      });

      it("accepts exactly what the contract's ECDSA.tryRecover accepts, and agrees with ecrecover on the signer", async () => {
        const harness = await hre.viem.deployContract("SignatureHarness");
        const signer = signingAccount(key(1));
        const good = await signDigest(signer, digest(1));
        const { r, s, yParity } = parseSignature(good);
        const v = yParity === 0 ? "1b" : "1c";
        const otherV = yParity === 0 ? "1c" : "1b";
        const cases: [string, Hex, Hex][] = [
          ["valid", digest(1), good],
          ["another digest", digest(2), good],
          ["high-s twin", digest(1), toHighS(good)],
          ["flipped v", digest(1), `${good.slice(0, 130)}${otherV}` as Hex],
          ["s = n/2 + 1", digest(1), concat([r, word((N >> 1n) + 1n), `0x${v}`])],
          ["s = n/2", digest(1), concat([r, word(N >> 1n), `0x${v}`])],
          ["s = 0", digest(1), concat([r, word(0n), `0x${v}`])],
          ["r = 0", digest(1), concat([word(0n), s, `0x${v}`])],
          ["r = n", digest(1), concat([word(N), s, `0x${v}`])],
          ["r = n − 1", digest(1), concat([word(N - 1n), s, `0x${v}`])],
          ["r = 5 (x on the curve)", digest(1), concat([word(5n), s, `0x${v}`])],
          ["r = 1", digest(1), concat([word(1n), s, `0x${v}`])],
          ["zero digest", word(0n), good],
        ];
        for (let i = 0; i < 20; i++) cases.push([`random ${i}`, digest(100 + i), await signDigest(signingAccount(key(100 + i)), digest(100 + i))]);
        for (const [label, d, signature] of cases) {
          const contract = await onChain(harness, d, signature);
          const node = await offChain(d, signature);
          const precompile = await ecrecover(d, signature);
          if (contract.startsWith("0x") && contract !== "0x0000000000000000000000000000000000000000") {
            expect(node, label).to.equal(contract);
            expect(precompile, label).to.equal(contract);
          } else {
            expect(node, `${label}: the contract says ${contract}`).to.equal("InvalidSignatureError");
          }
        }
        // The two twins the contract refuses although ecrecover recovers a key from them.
        expect(await ecrecover(digest(1), toHighS(good))).to.equal(signer.address.toLowerCase());
        expect(await onChain(harness, digest(1), concat([r, word((N >> 1n) + 1n), `0x${v}`]))).to.equal("SignatureNotLowS");
        expect(await offChain(digest(1), concat([r, word((N >> 1n) + 1n), `0x${v}`]))).to.equal("InvalidSignatureError");
        expect(await offChain(digest(1), `${good.slice(0, 130)}01` as Hex)).to.equal("InvalidSignatureError");
        expect(() => toCompactSignature(toHighS(good))).to.throw();
      });

      it("checks a known signer's signatures by the same rule (the cached key never widens what is accepted)", async () => {
        const signer = signingAccount(key(7));
        const good = await signDigest(signer, digest(7));
        await assertDigestSigner(digest(7), good, signer.address, "test");
        await assertDigestSigner(digest(7), good, signer.address, "test"); // known key now
        expect((await rejection(assertDigestSigner(digest(8), good, signer.address, "test"))).message).to.contain("The test signature was not made by");
        expect((await rejection(assertDigestSigner(digest(7), toHighS(good), signer.address, "test"))).message).to.contain("high s");
        const other = await signDigest(signingAccount(key(9)), digest(7));
        expect((await rejection(assertDigestSigner(digest(7), other, signer.address, "test"))).message).to.contain("was not made by");
        expect((await rejection(assertDigestSigner(digest(7), "0x1234" as Hex, signer.address, "test"))).message).to.contain("not a 65-byte");
      });
    });
  }

  it("the two backends agree on random signatures and recoveries", () => {
    const native = loadSecp256k1Backend("native");
    const noble = loadSecp256k1Backend("noble");
    for (let i = 0; i < 100; i++) {
      const k = Buffer.from(key(i).slice(2), "hex");
      const d = Buffer.from(digest(i).slice(2), "hex");
      const a = native.sign(d, k);
      const b = noble.sign(d, k);
      expect(toHex(a.signature)).to.equal(toHex(b.signature));
      expect(a.recovery).to.equal(b.recovery);
      expect(toHex(native.recover(d, a.signature, a.recovery)!)).to.equal(toHex(noble.recover(d, b.signature, b.recovery)!));
      expect(toHex(native.recover(d, a.signature, 1 - a.recovery)!)).to.equal(toHex(noble.recover(d, b.signature, 1 - b.recovery)!));
    }
  });
});
