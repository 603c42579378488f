/** RefusalLog: what a flood of refused connections writes to a provider's log (pure). */
import { expect } from "chai";

import { OTHER_SOURCES, RefusalLog } from "../../channel-client/node/refusal-log";

describe("RefusalLog: a line per source and period, never per refused connection", () => {
  it("logs a source's first refusal, counts the rest, summarises them once and then forgets a quiet source", () => {
    const log = new RefusalLog();
    expect(log.note("10.0.0.1", "first", "rate")).to.equal("first");
    for (let i = 0; i < 5; i++) expect(log.note("10.0.0.1", "again", i === 4 ? "slots" : "rate")).to.equal(undefined);
    expect(log.note("10.0.0.2", "other", "rate")).to.equal("other");
    expect(log.flush(60)).to.deep.equal([{ address: "10.0.0.1", refused: 5, line: "refused 5 more connection(s) from 10.0.0.1 in the last 60 s (last: slots)" }]);
    // 10.0.0.2 had nothing more: forgotten at that flush, so its next refusal is logged at once; 10.0.0.1 is
    // still remembered (it was refused during the period), so its next one is counted.
    expect(log.note("10.0.0.2", "back", "rate")).to.equal("back");
    expect(log.note("10.0.0.1", "counted", "rate")).to.equal(undefined);
    expect(log.flush(60).map((entry) => [entry.address, entry.refused])).to.deep.equal([["10.0.0.1", 1]]);
    // A period with nothing from either: both forgotten, and each one's next refusal is logged at once.
    expect(log.flush(60)).to.deep.equal([]);
    expect(log.flush(60)).to.deep.equal([]);
    expect(log.note("10.0.0.1", "again", "rate")).to.equal("again");
    expect(log.note("10.0.0.2", "again 2", "rate")).to.equal("again 2");
  });

  it("bounds the sources it remembers: past the bound they share one count", () => {
    const log = new RefusalLog(2);
    expect(log.note("a", "a1", "r")).to.equal("a1");
    expect(log.note("b", "b1", "r")).to.equal("b1");
    expect(log.note("c", "c1", "r")).to.equal("c1"); // the shared count's first
    expect(log.note("d", "d1", "r")).to.equal(undefined);
    expect(log.note("e", "e1", "r")).to.equal(undefined);
    expect(log.flush(1)).to.deep.equal([{ address: OTHER_SOURCES, refused: 2, line: `refused 2 more connection(s) from ${OTHER_SOURCES} in the last 1 s (last: r)` }]);
  });
});
