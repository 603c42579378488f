import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { measureDurableStep, measureLoopbackRoundTrip } from "../../scripts/bench-floor";
import { verifySessionReceipt } from "../../channel-client/core/receipt";
import { verifyPaymentTicket } from "../../channel-client/core/ticket";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import { gasEscrowDomain } from "../../channel-client/core/eip712";

describe("bench: the latency floor at 1 in flight", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ioi-floor-test-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("times each durable step alone: one commit and one fsync per step, real signed rows that read back", async () => {
    const measured = await measureDurableStep(8, dir);
    expect(measured.steps).to.equal(8);
    expect(measured.commits, "one commit per timed step, none shared").to.equal(8);
    expect(measured.syncs, "one fdatasync per timed step").to.equal(8);
    expect(measured.p50Ms).to.be.greaterThan(0);

    const store = SqliteStore.open(path.join(dir, "floor.db"));
    try {
      const [channel] = store.listChannels();
      expect(channel, "the measurement's channel").to.not.equal(undefined);
      const steps = store.steps(channel!.sessionId);
      expect(steps.map((step) => step.seq)).to.deep.equal(Array.from({ length: 16 }, (_, i) => BigInt(i + 1)));
      // The rows are what nodes store: a payer-signed ticket and a provider-signed receipt.
      const last = steps[steps.length - 1]!;
      const domain = gasEscrowDomain({ chainId: channel!.chainId, verifyingContract: channel!.escrow });
      await verifyPaymentTicket({ domain, signed: last.ticket, signer: channel!.ref.terms.payer });
      await verifySessionReceipt({ signed: last.receipt!, signer: channel!.ref.terms.provider });
    } finally {
      await store.close();
    }
  });

  it("measures a loopback round trip to another process", async () => {
    const ms = await measureLoopbackRoundTrip(20);
    expect(ms).to.be.greaterThan(0);
    expect(Number.isFinite(ms)).to.equal(true);
  });
});
