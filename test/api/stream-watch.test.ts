/**
 * Issue 32, the control API's `streams` topic and `streams.get` without a chain: the journal tail
 * (channel-client/api/stream-watch.ts) publishes only complete lines and only what was appended after it started, and the pure
 * view (channel-client/node/stream-view.ts) derives the state from the journal's newest entry.
 */
import { expect } from "chai";
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { keccak256, stringToBytes, zeroAddress, type Hex } from "viem";

import { StreamWatch } from "../../channel-client/api/stream-watch";
import { SubscriptionHub, type ApiEvent } from "../../channel-client/api/subscriptions";
import { sampleCommitOf } from "../../channel-client/core/progress-proof";
import { termsHashOf, type TermsDocumentV4 } from "../../channel-client/core/terms";
import { StreamJournal, type JournalEntry } from "../../channel-client/node/stream-journal";
import { streamViewOf } from "../../channel-client/node/stream-view";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { codeStreamTerms } from "../../scripts/examples/code-stream";

const TERMS: TermsDocumentV4 = codeStreamTerms({ windowAfterSettlement: 86_400n });
const SESSION = keccak256(stringToBytes("stream watch session"));
const PROVIDER = "0x00000000000000000000000000000000000000a1" as Hex;
const secret = (t: bigint): Hex => keccak256(stringToBytes(`secret ${t}`));
const request = (t: bigint): JournalEntry => ({ kind: "request", tranche: t, secret: secret(t), request: { sessionId: SESSION, tranche: t, sampleCommit: sampleCommitOf(secret(t)) } });

describe("control API: the streams topic's journal tail and the stream view's state (issue 32)", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-stream-watch-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("publishes each appended entry once, in order; nothing from before it started; a line still being written waits for its newline", async () => {
    const store = SqliteStore.open(":memory:");
    const ref = { terms: { payer: zeroAddress, provider: PROVIDER, funder: zeroAddress, asset: zeroAddress, termsHash: termsHashOf(TERMS), policyHash: SESSION, challengeDuration: 3600n, nonce: 1n }, openedAt: 1n };
    await store.putChannel({ sessionId: SESSION, role: "payer", ref, pricing: TERMS, escrow: zeroAddress, chainId: 31337, deposit: 1n, status: "open" });
    const journal = StreamJournal.open(dir, SESSION);
    await journal.append(request(1n)); // before the watch starts: history, not an event
    const hub = new SubscriptionHub();
    const got: ApiEvent[] = [];
    hub.subscribe("streams", { sessionId: SESSION }, (e) => got.push(e));
    const watch = new StreamWatch({ store, hub, dir, pollMs: 60_000 });
    watch.start();
    try {
      await watch.poll();
      expect(got).to.deep.equal([]);
      await journal.append({ kind: "checked", tranche: 1n, samples: [{ index: 3, name: "slugify trims", claimed: "pass", actual: "pass", status: "true" }] });
      await journal.append(request(2n));
      // A torn write: half a line, no newline yet.
      const pause = JSON.stringify({ kind: "pause", tranche: "2", reason: "no_answer", detail: "no result for tranche 2" });
      appendFileSync(journal.file, pause.slice(0, 20));
      await watch.poll();
      const price = TERMS.pricing.capPerCall;
      expect(got).to.deep.equal([
        { sessionId: SESSION, event: "sample", tranche: "1", index: 3, name: "slugify trims", claimed: "pass", actual: "pass", status: "true" },
        { sessionId: SESSION, event: "ticket", tranche: "2", cumulativeAmount: (2n * price).toString(), sampleCommit: sampleCommitOf(secret(2n)) },
      ]);
      appendFileSync(journal.file, `${pause.slice(20)}\n`);
      await watch.poll();
      await watch.poll(); // nothing new: nothing published twice
      expect(got.slice(2)).to.deep.equal([{ sessionId: SESSION, event: "pause", tranche: "2", reason: "no_answer", detail: "no result for tranche 2" }]);
    } finally {
      await watch.stop();
      await store.close();
    }
  });

  it("the state is the journal's newest entry: running, paused, running again after a resumed pause, finished on done; no journal: running with journal false", () => {
    const base = { sessionId: SESSION, provider: PROVIDER, terms: TERMS, steps: [] };
    const pause = (t: bigint, reason: string): JournalEntry => ({ kind: "pause", tranche: t, reason, detail: reason });
    expect(streamViewOf(base)).to.deep.include({ state: "running", pause: null, journal: false, released: "0", paid: "0" });
    expect(streamViewOf({ ...base, entries: [request(1n)] })).to.deep.include({ state: "running", journal: true });
    const paused = streamViewOf({ ...base, entries: [request(1n), pause(1n, "no_answer")] });
    expect(paused).to.deep.include({ state: "paused", pause: { tranche: "1", reason: "no_answer", detail: "no_answer" }, case: null });
    const resumed = streamViewOf({ ...base, entries: [request(1n), pause(1n, "no_answer"), { kind: "checked", tranche: 1n }, request(2n)] });
    expect(resumed).to.deep.include({ state: "running", pause: null, checked: "1" });
    expect(resumed.pauses).to.deep.equal([{ tranche: "1", reason: "no_answer", detail: "no_answer" }]);
    expect(streamViewOf({ ...base, entries: [request(1n), { kind: "checked", tranche: 1n }, pause(1n, "done")] })).to.deep.include({ state: "finished", checked: "1" });
  });
});
