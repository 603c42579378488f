/**
 * Frames sealed by Node's built-in ChaCha20-Poly1305 under the HChaCha20 subkey (decision 0023) are
 * byte-identical to @noble/ciphers' XChaCha20-Poly1305 frames, and each side opens the other's.
 */
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { expect } from "chai";
import { keccak256, stringToBytes, toHex } from "viem";

import { FrameAuthenticationError, FrameReplayError, nonceFor, RecordOpener, RecordSealer, RecordType, sealRecord } from "../../channel-client/transport";
import { thrown } from "../helpers/assert";

const bytes = (label: string, length: number): Uint8Array => {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i += 32) out.set(stringToBytes(keccak256(stringToBytes(`${label} ${i}`))).subarray(2, 2 + Math.min(32, length - i)), i);
  return out;
};
const key = (label: string): Uint8Array => Buffer.from(keccak256(stringToBytes(label)).slice(2), "hex");

/** The frame as @noble/ciphers' XChaCha20-Poly1305 makes it (the implementation before decision 0023). */
function nobleFrame(k: Uint8Array, counter: bigint, type: number, payload: Uint8Array): Uint8Array {
  const plaintext = new Uint8Array(1 + payload.length);
  plaintext[0] = type;
  plaintext.set(payload, 1);
  const sealed = xchacha20poly1305(k, nonceFor(counter)).encrypt(plaintext);
  const body = new Uint8Array(8 + sealed.length);
  new DataView(body.buffer).setBigUint64(0, counter, false);
  body.set(sealed, 8);
  return body;
}

describe("sealed frames: Node's ChaCha20-Poly1305 with the XChaCha20 subkey", () => {
  it("matches a pinned known answer", () => {
    const frame = sealRecord(key("kat key"), 5n, RecordType.data, stringToBytes("hello"));
    expect(toHex(frame)).to.equal(toHex(nobleFrame(key("kat key"), 5n, RecordType.data, stringToBytes("hello"))));
    expect(toHex(frame)).to.equal("0x00000000000000058db4cb42644c53f2aea6238a6e87bec89d02ada1dfc4");
  });

  it("is byte-identical to XChaCha20-Poly1305 for every record type, many sizes and counters", () => {
    const counters = [0n, 1n, 2n, 255n, 256n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 63n, 2n ** 64n - 1n];
    const sizes = [0, 1, 15, 16, 17, 63, 64, 65, 1000, 70_000];
    for (const [i, counter] of counters.entries()) {
      for (const size of sizes) {
        for (const type of [RecordType.data, RecordType.close, RecordType.keyConfirmation, RecordType.dataBatch, 0x7f]) {
          const k = key(`key ${i} ${size}`);
          const payload = bytes(`payload ${i} ${size}`, size);
          expect(toHex(sealRecord(k, counter, type as RecordType, payload)), `counter ${counter}, ${size} bytes, type ${type}`).to.equal(toHex(nobleFrame(k, counter, type, payload)));
        }
      }
    }
  });

  it("opens XChaCha20-Poly1305 frames in sequence, and refuses forgeries and replays", () => {
    const k = key("direction");
    const opener = new RecordOpener(k);
    const sealer = new RecordSealer(k);
    for (let counter = 0n; counter < 50n; counter++) {
      const payload = bytes(`m ${counter}`, Number(counter) * 13);
      const frame = counter % 2n === 0n ? nobleFrame(k, counter, RecordType.data, payload) : sealer.seal(RecordType.data, payload);
      if (counter % 2n === 0n) expect(toHex(sealer.seal(RecordType.data, payload))).to.equal(toHex(frame));
      const opened = opener.open(frame);
      expect(opened.counter).to.equal(counter);
      expect(opened.type).to.equal(RecordType.data);
      expect(toHex(opened.payload)).to.equal(toHex(payload));
    }
    const next = nobleFrame(k, 50n, RecordType.data, stringToBytes("x"));
    const forged = Uint8Array.from(next);
    forged[forged.length - 1]! ^= 1;
    expect(thrown(() => opener.open(forged))).to.be.instanceOf(FrameAuthenticationError);
    expect(thrown(() => new RecordOpener(k).open(nobleFrame(k, 3n, RecordType.data, stringToBytes("x"))))).to.be.instanceOf(FrameReplayError);
    expect(thrown(() => new RecordOpener(key("other")).open(nobleFrame(k, 0n, RecordType.data, stringToBytes("x"))))).to.be.instanceOf(FrameAuthenticationError);
  });
});
