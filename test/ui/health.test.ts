/**
 * Issue 29 item 8, the pure core of the health panel: which alerts chain state raises, which explorer a chain
 * has (IOI_EXPLORER_URL first, none on a devnet, a bad URL refused), and the figures read off `/metrics`.
 */
import { expect } from "chai";
import { parseEther, type Hex } from "viem";

import { deriveAlerts, explorerFor, ExplorerUrlError, metricFigures, addressLink, type AlertInputs, type BondReading } from "../../channel-client/ui/health";

const SESSION: Hex = `0x${"ab".repeat(32)}`;
const bond = (active: bigint, registered = true): BondReading => ({ registered, active, pending: 0n, unlockAt: 0n, locks: 0n, minimum: parseEther("100") });
const quiet: AlertInputs = { windows: [], windowAlertSeconds: 3600, provider: bond(parseEther("100")), arbitrator: bond(0n, false), claimable: [], secondsSinceAdvance: 5, stallSeconds: 120, head: 42n };

describe("issue 29 item 8: health alerts and explorer links (pure)", () => {
  it("raises nothing when the bond meets the minimum, nothing is owed, no window closes soon and the chain moves", () => {
    expect(deriveAlerts(quiet)).to.deep.equal([]);
  });

  it("raises each alert at its threshold and not one second before", () => {
    const kinds = (i: Partial<AlertInputs>) => deriveAlerts({ ...quiet, ...i }).map((a) => a.kind);
    expect(kinds({ windows: [{ sessionId: SESSION, secondsLeft: 3601 }] })).to.deep.equal([]);
    expect(kinds({ windows: [{ sessionId: SESSION, secondsLeft: 3600 }] })).to.deep.equal(["window-closing"]);
    expect(deriveAlerts({ ...quiet, windows: [{ sessionId: SESSION, secondsLeft: 0 }] })[0]!.message).to.include("finalize");
    expect(kinds({ provider: bond(parseEther("100") - 1n) })).to.deep.equal(["bond-below-minimum"]);
    expect(kinds({ provider: bond(0n, false) }), "an unregistered provider has no bond to miss").to.deep.equal([]);
    expect(kinds({ arbitrator: bond(parseEther("99"), true) })).to.deep.equal(["stake-below-minimum"]);
    expect(kinds({ claimable: [{ where: "DisputeManager", amount: 0n, text: "0 ETH" }] })).to.deep.equal([]);
    const owed = deriveAlerts({ ...quiet, claimable: [{ where: "GigEscrow", amount: 1n, text: "1 wei" }] });
    expect(owed.map((a) => [a.kind, a.message])).to.deep.equal([["unclaimed", "1 wei waits to be claimed in the GigEscrow."]]);
    expect(kinds({ secondsSinceAdvance: 119 })).to.deep.equal([]);
    expect(kinds({ secondsSinceAdvance: 120 })).to.deep.equal(["chain-stalled"]);
    expect(kinds({ secondsSinceAdvance: 10_000, stallSeconds: null }), "stall alerts off (a devnet)").to.deep.equal([]);
  });

  it("links to the configured explorer, to the table's for a known chain, to none on a devnet, and refuses a bad URL", () => {
    expect(explorerFor(31337)).to.equal(null);
    expect(explorerFor(1337)).to.equal(null);
    expect(explorerFor(11155111)).to.equal("https://sepolia.etherscan.io");
    expect(explorerFor(31337, "https://scan.example/x/")).to.equal("https://scan.example/x");
    expect(explorerFor(1, "https://scan.example")).to.equal("https://scan.example");
    expect(explorerFor(1, "")).to.equal("https://etherscan.io");
    expect(() => explorerFor(1, "javascript:alert(1)")).to.throw(ExplorerUrlError, /IOI_EXPLORER_URL must be an http\(s\) URL/);
    expect(addressLink(null, "0x000000000000000000000000000000000000dEaD")).to.equal(null);
    expect(addressLink("https://e.x", "0x000000000000000000000000000000000000dEaD")).to.equal("https://e.x/address/0x000000000000000000000000000000000000dEaD");
  });

  it("reads the node's figures off /metrics, summing labelled series", () => {
    const text = ["# HELP ioi_tickets_total x", "ioi_tickets_total 12", 'ioi_chain_rpc_errors_total{source="node"} 2', 'ioi_chain_rpc_errors_total{source="watchtower"} 3', "ioi_other 9"].join("\n");
    expect(metricFigures(text)).to.deep.equal({ ioi_tickets_total: 12, ioi_chain_rpc_errors_total: 5 });
  });
});
