/**
 * Web3 Secret Storage v3 keystores (issue 29 item 5): the two official vectors of the definition decrypt to
 * their key; ours round-trip; ethers (a test-only cross-check) reads ours and we read ethers'; a wrong password
 * and a damaged file are refused by type.
 */
import { expect } from "chai";
import { encryptKeystoreJsonSync, Wallet } from "ethers";
import { privateKeyToAddress } from "viem/accounts";

import { decryptKeystore, encryptKeystore, KeystoreFormatError, STANDARD_SCRYPT, WrongPasswordError } from "../../channel-client/core/keystore";

const KEY = "0x7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d" as const;
const PASSWORD = "testpassword";

/** The Web3 Secret Storage Definition's PBKDF2-SHA-256 test vector. */
const PBKDF2_VECTOR = {
  crypto: {
    cipher: "aes-128-ctr",
    cipherparams: { iv: "6087dab2f9fdbbfaddc31a909735c1e6" },
    ciphertext: "5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46",
    kdf: "pbkdf2",
    kdfparams: { c: 262144, dklen: 32, prf: "hmac-sha256", salt: "ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd" },
    mac: "517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2",
  },
  id: "3198bc9c-6672-5ab3-d995-4942343ae5b6",
  version: 3,
};

/** The definition's scrypt test vector (n = 262144, r = 1, p = 8). */
const SCRYPT_VECTOR = {
  crypto: {
    cipher: "aes-128-ctr",
    cipherparams: { iv: "83dbcc02d8ccb40e466191a123791e0e" },
    ciphertext: "d172bf743a674da9cdad04534d56926ef8358534d458fffccd4e6ad2fbde479c",
    kdf: "scrypt",
    kdfparams: { dklen: 32, n: 262144, r: 1, p: 8, salt: "ab0c7876052600dd703518d6fc3fe8984592145b591fc8fb5c6d43190334ba19" },
    mac: "2103ac29920d71da29f15d75b4a16dbe95cfd7ff8faea1056c33131d846e3097",
  },
  id: "3198bc9c-6672-5ab3-d995-4942343ae5b6",
  version: 3,
};

const LIGHT = { n: 1024, r: 8, p: 1 };

describe("keystore (Web3 Secret Storage v3)", function () {
  this.timeout(120_000);

  it("decrypts the definition's pbkdf2 and scrypt test vectors to their key", () => {
    for (const vector of [PBKDF2_VECTOR, SCRYPT_VECTOR]) {
      expect(decryptKeystore(vector, PASSWORD)).to.deep.equal({ privateKey: KEY, address: privateKeyToAddress(KEY) });
      expect(() => decryptKeystore(vector, "testpassworD")).to.throw(WrongPasswordError);
    }
  });

  it("writes the v3 shape: lowercase hex, address without 0x, UUID v4 id, the standard scrypt cost by default", () => {
    const salt = new Uint8Array(32).fill(1);
    const iv = new Uint8Array(16).fill(2);
    const light = encryptKeystore(KEY, PASSWORD, { scrypt: LIGHT, salt, iv, uuid: new Uint8Array(16).fill(0xff) });
    expect(light.address).to.equal(privateKeyToAddress(KEY).slice(2).toLowerCase());
    expect(light.version).to.equal(3);
    expect(light.id).to.equal("ffffffff-ffff-4fff-bfff-ffffffffffff");
    expect(light.crypto.kdfparams).to.deep.equal({ dklen: 32, n: 1024, p: 1, r: 8, salt: "01".repeat(32) });
    expect(light.crypto.cipherparams.iv).to.equal("02".repeat(16));
    for (const hex of [light.crypto.ciphertext, light.crypto.mac]) expect(hex).to.match(/^[0-9a-f]{64}$/);
    // Deterministic given the randomness: the same inputs give the same file.
    expect(encryptKeystore(KEY, PASSWORD, { scrypt: LIGHT, salt, iv, uuid: new Uint8Array(16).fill(0xff) })).to.deep.equal(light);
    const standard = encryptKeystore(KEY, PASSWORD);
    expect(standard.crypto.kdfparams).to.deep.include({ n: STANDARD_SCRYPT.n, r: 8, p: 1, dklen: 32 });
    expect(standard.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(decryptKeystore(standard, PASSWORD).privateKey).to.equal(KEY);
  });

  it("round-trips, and refuses a wrong password, a flipped ciphertext bit and a lying address", () => {
    const file = encryptKeystore(KEY, "correct horse", { scrypt: LIGHT });
    expect(decryptKeystore(file, "correct horse").privateKey).to.equal(KEY);
    expect(() => decryptKeystore(file, "correct horse ")).to.throw(WrongPasswordError, "Wrong password");
    const flipped = structuredClone(file);
    flipped.crypto.ciphertext = (flipped.crypto.ciphertext[0] === "0" ? "1" : "0") + flipped.crypto.ciphertext.slice(1);
    expect(() => decryptKeystore(flipped, "correct horse")).to.throw(WrongPasswordError);
    const lying = { ...file, address: "00".repeat(20) };
    expect(() => decryptKeystore(lying, "correct horse")).to.throw(KeystoreFormatError, "claims the address");
    expect(() => decryptKeystore({ ...file, version: 1 }, "x")).to.throw(KeystoreFormatError, "version 3");
    expect(() => decryptKeystore({ ...file, crypto: { ...file.crypto, cipher: "aes-128-cbc" } }, "x")).to.throw(KeystoreFormatError, "cipher");
    expect(() => decryptKeystore({ ...file, crypto: { ...file.crypto, kdf: "argon2" } }, "x")).to.throw(KeystoreFormatError, "kdf");
  });

  it("cross-checks with ethers: ethers decrypts ours, we decrypt ethers', both to the same key", async () => {
    const ours = encryptKeystore(KEY, PASSWORD, { scrypt: LIGHT });
    const byEthers = await Wallet.fromEncryptedJson(JSON.stringify(ours), PASSWORD);
    expect(byEthers.privateKey).to.equal(KEY);
    const theirs = encryptKeystoreJsonSync({ address: privateKeyToAddress(KEY), privateKey: KEY }, PASSWORD, { scrypt: { N: 1024 } });
    expect(decryptKeystore(JSON.parse(theirs), PASSWORD)).to.deep.equal({ privateKey: KEY, address: privateKeyToAddress(KEY) });
    // ethers reads the official pbkdf2 vector to the same key too.
    expect((await Wallet.fromEncryptedJson(JSON.stringify({ ...PBKDF2_VECTOR, address: privateKeyToAddress(KEY).slice(2) }), PASSWORD)).privateKey).to.equal(KEY);
  });
});
