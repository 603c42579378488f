/**
 * The session-key grant module (decision 0025): known-answer capabilities hash, JSON round trip and its
 * boundary checks, the per-ticket checks in isolation, and the typed errors' names.
 */
import { expect } from "chai";
import { keccak256, stringToBytes, type Hex } from "viem";

import { gasEscrowDomain } from "../../channel-client/core/eip712";
import * as errors from "../../channel-client/core/errors";
import {
  ANY_METHOD,
  assertSessionKeyLive,
  assertWithinGrant,
  capabilitiesHash,
  methodAllowed,
  signedSessionKeyGrantFromJson,
  signedSessionKeyGrantToJson,
  signSessionKeyGrant,
  verifySessionKeyGrant,
} from "../../channel-client/core/session-key";
import { hardhatAccount, ROLE } from "../helpers/fixtures";

const domain = gasEscrowDomain({ chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
const PAYER = hardhatAccount(ROLE.payer);
const KEY = hardhatAccount(ROLE.sessionKey);
const SESSION: Hex = keccak256(stringToBytes("a session"));

const grantOf = (methods = ["tools/call"], epoch = 0n) =>
  signSessionKeyGrant({ account: PAYER, domain, sessionId: SESSION, key: KEY.address, expiry: 1_000n, spendCap: 500n, methods, epoch });

function nameOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return (error as Error).name;
  }
  return undefined;
}

describe("session keys: the grant", () => {
  it("capabilities are keccak256 of canonical {version, methods} over the sorted unique list (known answer)", () => {
    expect(capabilitiesHash(["tools/call"])).to.equal("0xd6e1ff0cb134ea396057f722f33ee16436b35243997dcf4b37dc2a619513cd1a");
    expect(capabilitiesHash(["tools/call"])).to.equal(keccak256(stringToBytes('{"methods":["tools/call"],"version":"1"}')));
    expect(capabilitiesHash(["b", "a", "b"])).to.equal(capabilitiesHash(["a", "b"]));
    expect(methodAllowed([ANY_METHOD], "anything")).to.equal(true);
    expect(methodAllowed(["tools/call"], "tools/list")).to.equal(false);
    expect(nameOf(() => capabilitiesHash([]))).to.equal("InvalidFieldError");
  });

  it("round-trips through JSON and refuses a method list that does not match its capabilities", async () => {
    const signed = await grantOf(["tools/list", "tools/call"]);
    const json = signedSessionKeyGrantToJson(signed);
    expect(json.methods).to.deep.equal(["tools/call", "tools/list"]);
    expect(signedSessionKeyGrantFromJson(JSON.parse(JSON.stringify(json)))).to.deep.equal(signed);
    expect(nameOf(() => signedSessionKeyGrantFromJson({ ...json, methods: ["*"] }))).to.equal("BindingMismatchError");
    expect(nameOf(() => signedSessionKeyGrantFromJson({ ...json, grant: { ...json.grant, spendCap: 5 } }))).to.equal("AmountAsNumberError");
    expect(nameOf(() => signedSessionKeyGrantFromJson({ ...json, extra: 1 }))).to.equal("UnknownFieldError");
  });

  it("verifies the payer's signature, the session, the epoch and the expiry", async () => {
    const signed = await grantOf();
    const live = { revokedAt: 0n, currentEpoch: 0n };
    await verifySessionKeyGrant({ domain, signed, payer: PAYER.address, sessionId: SESSION, now: 999n, chain: live });
    const cases: [Promise<void>, string][] = [
      [verifySessionKeyGrant({ domain, signed, payer: KEY.address, sessionId: SESSION, now: 999n, chain: live }), "SessionKeyError"],
      [verifySessionKeyGrant({ domain, signed, payer: PAYER.address, sessionId: keccak256(SESSION), now: 999n, chain: live }), "BindingMismatchError"],
      [verifySessionKeyGrant({ domain: { ...domain, chainId: 1 }, signed, payer: PAYER.address, sessionId: SESSION, now: 999n, chain: live }), "SessionKeyError"],
      [verifySessionKeyGrant({ domain, signed, payer: PAYER.address, sessionId: SESSION, now: 1_000n, chain: live }), "SessionKeyExpiredError"],
      [verifySessionKeyGrant({ domain, signed, payer: PAYER.address, sessionId: SESSION, now: 1n, chain: { revokedAt: 5n, currentEpoch: 0n } }), "SessionKeyRevokedError"],
      [verifySessionKeyGrant({ domain, signed, payer: PAYER.address, sessionId: SESSION, now: 1n, chain: { revokedAt: 0n, currentEpoch: 1n } }), "SessionKeyRevokedError"],
    ];
    for (const [promise, name] of cases) {
      const error = await promise.then(() => undefined, (e: Error) => e);
      expect(error?.name).to.equal(name);
    }
    const ahead = await grantOf(["tools/call"], 2n);
    expect(nameOf(() => assertSessionKeyLive(ahead, 1n, live))).to.equal("SessionKeyError");
  });

  it("checks each ticket's amount against the cap and its method against the capabilities", async () => {
    const signed = await grantOf();
    expect(nameOf(() => assertWithinGrant(signed, 500n, "tools/call"))).to.equal(undefined);
    expect(nameOf(() => assertWithinGrant(signed, 501n, "tools/call"))).to.equal("SessionKeyCapExceededError");
    expect(nameOf(() => assertWithinGrant(signed, 1n, "resources/read"))).to.equal("SessionKeyCapabilityError");
    expect(nameOf(() => assertWithinGrant(signed, 1n, undefined))).to.equal(undefined);
  });

  it("each session-key error's name is its class name", () => {
    for (const Class of [errors.SessionKeyError, errors.SessionKeyExpiredError, errors.SessionKeyRevokedError, errors.SessionKeyCapExceededError, errors.SessionKeyCapabilityError]) {
      expect(new Class("x").name).to.equal(Class.name);
    }
  });
});
