import { expect } from "chai";

import { remeasureCryptoCeiling, type Ceiling, type LibraryRates } from "../../scripts/bench-micro";
import { secp256k1Backend } from "../../channel-client/core/secp256k1";

/** A ceiling as a slow spell might have left it, with the in-use library's rates given. */
function ceilingWith(inUse: Pick<LibraryRates, "signPerSecond" | "recoverPerSecond">, allCoresCryptoUsPerTicket: number): Ceiling {
  const rates: LibraryRates = { implementation: secp256k1Backend().implementation, verifyPerSecond: 1, ...inUse };
  const other: LibraryRates = { implementation: "the other library", signPerSecond: 7, recoverPerSecond: 7, verifyPerSecond: 7 };
  const native = secp256k1Backend().name === "native";
  const perSide = 1e6 / inUse.signPerSecond + 1e6 / inUse.recoverPerSecond;
  return {
    cores: 2,
    backend: rates.implementation,
    secp256k1: native ? { noble: other, native: rates } : { noble: rates, native: other },
    keccak: { noble: { bytes32: 1, bytes64: 1, bytes96: 1 }, wasm: { bytes32: 1, bytes64: 1, bytes96: 1 } },
    perSideCryptoUsPerTicket: perSide,
    cryptoLimitTicketsPerSecond: Math.round(2e6 / (2 * perSide)),
    allCoresCryptoUsPerTicket,
    allCoresCryptoLimitTicketsPerSecond: Math.round(2e6 / (2 * allCoresCryptoUsPerTicket)),
    keccakLimitReceiptsPerSecond: 1,
    receiptFormatFloorReceiptsPerSecond: 1,
    receiptTextPerSecond: 1,
    receiptTextBytes: 511,
    nodeSignPerSecond: 1,
    nodeVerifyPerSecond: 1,
  };
}

describe("bench: the crypto-only limit keeps the better of two measurements", function () {
  this.timeout(60_000);

  it("raises a rate a slow spell lowered, keeps one it cannot beat, and never lets the limit fall", async () => {
    // Signing at a billion per second cannot be beaten; recovering once a second is beaten by any machine.
    const slow = ceilingWith({ signPerSecond: 1e9, recoverPerSecond: 1 }, 0.5);
    const again = await remeasureCryptoCeiling(slow);
    const native = secp256k1Backend().name === "native";
    const rates = (native ? again.secp256k1.native : again.secp256k1.noble) as LibraryRates;
    const untouched = native ? again.secp256k1.noble : again.secp256k1.native;

    expect(rates.signPerSecond, "a rate no measurement beats is kept").to.equal(1e9);
    expect(rates.recoverPerSecond, "a rate the slow spell lowered is measured again").to.be.greaterThan(100);
    expect(again.allCoresCryptoUsPerTicket, "the all-cores figure keeps the lower µs").to.equal(0.5);
    expect(again.perSideCryptoUsPerTicket).to.be.lessThan(slow.perSideCryptoUsPerTicket);
    expect(again.cryptoLimitTicketsPerSecond).to.be.greaterThan(slow.cryptoLimitTicketsPerSecond);
    expect(untouched, "the other library's figures are left as measured").to.deep.equal(native ? slow.secp256k1.noble : slow.secp256k1.native);
  });
});
