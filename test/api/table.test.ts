/**
 * The control API without a chain or a socket: the published OpenRPC document against the server's method
 * table (both ways, params schema by params schema), the pure decisions behind the phases and alerts topics,
 * and how errors are classified for the wire (reason, code, retryable, one sentence).
 */
import { expect } from "chai";
import { readFileSync } from "node:fs";

import { API_ERRORS, ApiError, oneSentence, toWireError } from "../../channel-client/api/errors";
import { METHODS } from "../../channel-client/api/methods";
import { OPENRPC_PATH, openRpcText } from "../../channel-client/api/openrpc";
import { closingAlerts, phaseChanges, stallAlert, SubscriptionHub } from "../../channel-client/api/subscriptions";
import { BaseError } from "../../channel-client/core/errors";

type DocMethod = { name: string; paramStructure: string; params: { name: string; required: boolean; schema: unknown }[]; errors: { code: number; data: { reason: string; retryable: boolean } }[] };

describe("control API: method table, OpenRPC document, decisions", () => {
  const published = readFileSync(OPENRPC_PATH, "utf8");
  const doc = JSON.parse(published) as { methods: DocMethod[] };

  it("schemas/openrpc.json is exactly what the method table generates (regenerate: npx ts-node channel-client/api/openrpc.ts --write)", () => {
    expect(published).to.equal(openRpcText());
  });

  it("every method of the server is in the document with its params schema, and every documented method is in the server", () => {
    const documented = new Map(doc.methods.map((m) => [m.name, m]));
    expect([...documented.keys()].sort()).to.deep.equal(Object.keys(METHODS).sort());
    for (const [name, spec] of Object.entries(METHODS)) {
      const m = documented.get(name)!;
      expect(m.paramStructure, name).to.equal("by-name");
      expect(m.params.map((p) => [p.name, p.required, p.schema]), name).to.deep.equal(spec.params.map((p) => [p.name, p.required === true, p.schema]));
      // Every error a method can answer with is listed with its stable reason and retry hint.
      expect(m.errors.map((e) => [e.code, e.data.reason, e.data.retryable])).to.deep.equal(Object.entries(API_ERRORS).map(([r, s]) => [s.code, r, s.retryable]));
    }
    // The SDK's role surfaces are all mirrored.
    for (const name of ["payer.open", "payer.invoke", "payer.stream", "payer.status", "payer.close", "gigs.fund", "gigs.read", "cases.read", "cases.openGig", "balances.get", "subscribe", "unsubscribe"]) {
      expect(documented.has(name), name).to.equal(true);
    }
  });

  it("phase changes: first sightings and changes are events, an unchanged phase is none", () => {
    const seen = new Map([["0xa", "Open"], ["0xb", "Open"]]);
    const now = new Map([["0xa", "Open"], ["0xb", "Closing"], ["0xc", "Open"]]);
    expect(phaseChanges("channel", seen, now, 7n)).to.deep.equal([
      { kind: "channel", sessionId: "0xb", phase: "Closing", previous: "Open", blockNumber: "7" },
      { kind: "channel", sessionId: "0xc", phase: "Open", previous: null, blockNumber: "7" },
    ]);
    expect(phaseChanges("gig", new Map([["1", "Funded"]]), new Map([["1", "Delivered"]]), 9n)).to.deep.equal([{ kind: "gig", gigId: "1", phase: "Delivered", previous: "Funded", blockNumber: "9" }]);
  });

  it("closing alerts: warned once inside the warning span, told once when the window passed, silent when settled or frozen", () => {
    const c = (sessionId: string, finalizesAt: bigint, phase = "Closing") => ({ sessionId: sessionId as `0x${string}`, finalizesAt, phase });
    const closings = [c("0x1", 1_000n), c("0x2", 1_700n), c("0x3", 500n), c("0x4", 500n, "Settled"), c("0x5", 500n, "Frozen")];
    const alerts = closingAlerts(closings, 1_000n, 600n, new Set(["window.passed:0x3"]));
    expect(alerts.map((a) => [a.alert, a.sessionId])).to.deep.equal([["window.passed", "0x1"]]);
    const later = closingAlerts(closings, 1_200n, 600n, new Set(["window.passed:0x1", "window.passed:0x3"]));
    expect(later.map((a) => [a.alert, a.sessionId, a.message])).to.deep.equal([["window.closing", "0x2", "The challenge window of 0x2 ends in 500 seconds."]]);
  });

  it("a stalled chain is reported once per head, only after the stall span", () => {
    expect(stallAlert(10n, undefined, 0, 100_000, 60_000, false)).to.equal(undefined);
    expect(stallAlert(11n, 10n, 0, 100_000, 60_000, false)).to.equal(undefined);
    expect(stallAlert(10n, 10n, 50_000, 100_000, 60_000, false)).to.equal(undefined);
    expect(stallAlert(10n, 10n, 0, 100_000, 60_000, false)).to.deep.include({ alert: "chain.stalled", blockNumber: "10", message: "The chain has not advanced past block 10 for 100 seconds." });
    expect(stallAlert(10n, 10n, 0, 100_000, 60_000, true)).to.equal(undefined);
  });

  it("the hub delivers by topic and filter, and a throwing subscriber does not stop the others", () => {
    const hub = new SubscriptionHub();
    const got: string[] = [];
    hub.subscribe("receipts", {}, () => {
      throw new Error("socket gone");
    });
    const a = hub.subscribe("receipts", { sessionId: "0xAB" }, (e) => got.push(`a:${e.seq as string}`));
    hub.subscribe("alerts", {}, (e) => got.push(`alert:${e.alert as string}`));
    hub.publish("receipts", { sessionId: "0xab", seq: "1" });
    hub.publish("receipts", { sessionId: "0xcd", seq: "2" });
    hub.publish("alerts", { alert: "chain.stalled" });
    expect(hub.unsubscribe(a)).to.equal(true);
    hub.publish("receipts", { sessionId: "0xab", seq: "3" });
    expect(got).to.deep.equal(["a:1", "alert:chain.stalled"]);
    expect(hub.count("receipts")).to.equal(1);
  });

  it("errors on the wire: typed refusals are not retryable, an unreachable dependency is, nothing leaks a stack", () => {
    const refused = toWireError(new BaseError("The provider charges 2 wei per invocation, not 1 wei per invocation; nothing was funded.\nmore lines"));
    expect(refused).to.deep.equal({ code: -32000, message: "The provider charges 2 wei per invocation, not 1 wei per invocation; nothing was funded.", data: { reason: "REFUSED", retryable: false, name: "BaseError" } });
    const refusedConnection = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" });
    const wrapped = toWireError(new BaseError("Could not reach the provider node", { cause: refusedConnection }));
    expect(wrapped).to.deep.equal({ code: -32001, message: "Not reachable now: Could not reach the provider node.", data: { reason: "UNAVAILABLE", retryable: true, name: "BaseError" } });
    const rpcDown = Object.assign(new Error("HTTP request failed."), { name: "HttpRequestError", shortMessage: "HTTP request failed." });
    expect(toWireError(rpcDown).data).to.deep.equal({ reason: "UNAVAILABLE", retryable: true, name: "HttpRequestError" });
    const bug = toWireError(new TypeError("x is undefined"));
    expect(bug).to.deep.equal({ code: -32603, message: "The server failed: x is undefined.", data: { reason: "INTERNAL", retryable: false, name: "TypeError" } });
    expect(toWireError(new ApiError("NOT_FOUND", "No such session"))).to.deep.equal({ code: -32002, message: "No such session.", data: { reason: "NOT_FOUND", retryable: false } });
    expect(oneSentence(`${"a".repeat(500)}\nsecond line`)).to.have.length(400);
  });
});
