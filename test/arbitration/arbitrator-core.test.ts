/**
 * The arbitrator daemon's pure decision core (`channel-client/node/arbitrator-core.ts`), without a chain: each row gives
 * the chain's view and the daemon's own record and the exact actions it must take.
 */
import { expect } from "chai";
import type { Address, Hex } from "viem";

import { decide, quorumOf, roundKey, type Action, type CaseView, type ChainView, type LocalView, type PostedSignature, type SignedRecord } from "../../channel-client/node/arbitrator-core";

const ME: Address = "0x00000000000000000000000000000000000000A1";
const B: Address = "0x00000000000000000000000000000000000000B2";
const C: Address = "0x00000000000000000000000000000000000000C3";
const OUTSIDER: Address = "0x00000000000000000000000000000000000000D4";
const CASE: Hex = `0x${"11".repeat(32)}`;
const RUNTIME: Hex = `0x${"aa".repeat(32)}`;
const ETH: Address = "0x0000000000000000000000000000000000000000";
const NOW = 1_000_000n;
const OPTIONS = { retryMs: 15_000, graceMs: 10_000 };

const message = (verdict: number) => ({ caseId: CASE, verdict, refund: 0n, slash: 0n, resolutionHash: `0x${String(verdict).repeat(64)}` as Hex });
const posted = (signer: Address, verdict = 1, round = 0): PostedSignature => ({ round, signer, digest: `0x${String(verdict).repeat(64)}`, message: message(verdict), signature: `0x${signer.slice(2)}` as Hex });
const mine: SignedRecord = { caseId: CASE, round: 0, digest: `0x${"1".repeat(64)}`, message: message(1), signature: "0x01", verdict: "provider_fault" };

function chain(c: Partial<CaseView> | null, extra: Partial<ChainView> = {}): ChainView {
  const base: CaseView = { caseId: CASE, status: "open", round: 0, deadline: NOW + 100n, respondBy: NOW - 1n, contested: false, asset: ETH, drawTicket: 0n, panel: [], sat: false, posted: [] };
  return { me: ME, head: 100n, now: NOW, followedTo: 100n, cases: c ? [{ ...base, ...c }] : [], claimable: [], stake: 10n, minStake: 5n, runtime: RUNTIME, pinnedRuntime: RUNTIME, requiredRuntime: RUNTIME, ...extra };
}
const local = (l: Partial<LocalView> = {}): LocalView => ({ signed: {}, attempts: {}, warned: [], quorumSeenAtMs: {}, ...l });
const kinds = (actions: Action[]) => actions.map((a) => a.kind);
const KEY = roundKey(CASE, 0);
const DELIB = { status: "deliberating" as const, panel: [ME, B, C], sat: true, drawTicket: 90n };

describe("arbitrator daemon: decision core", () => {
  const rows: { name: string; chain: ChainView; local?: LocalView; nowMs?: number; expect: Action["kind"][] }[] = [
    { name: "nothing known: nothing to do", chain: chain(null), expect: [] },
    { name: "respond window open, uncontested: no draw yet", chain: chain({ respondBy: NOW + 10n }), expect: [] },
    { name: "respond window over: request the draw", chain: chain({}), expect: ["draw"] },
    { name: "contested inside the window: request the draw", chain: chain({ respondBy: NOW + 10n, contested: true }), expect: ["draw"] },
    { name: "ticket not yet mined: wait", chain: chain({ drawTicket: 101n }), expect: [] },
    { name: "ticket mined: draw", chain: chain({ drawTicket: 100n }), expect: ["draw"] },
    { name: "open past its deadline, never seated: leave it", chain: chain({ deadline: NOW - 1n }), expect: [] },
    { name: "open past its deadline, seated earlier: expire", chain: chain({ deadline: NOW - 1n, sat: true }), expect: ["expire"] },
    { name: "deliberating, not seated: nothing", chain: chain({ ...DELIB, panel: [B, C, OUTSIDER], sat: false }), expect: [] },
    { name: "seated, not signed: judge", chain: chain(DELIB), expect: ["judge"] },
    { name: "seated, failed attempt 5 s ago: wait", chain: chain(DELIB), local: local({ attempts: { [KEY]: { atMs: 0, reason: "x" } } }), nowMs: 5_000, expect: [] },
    { name: "seated, failed attempt 15 s ago: judge again", chain: chain(DELIB), local: local({ attempts: { [KEY]: { atMs: 0, reason: "x" } } }), nowMs: 15_000, expect: ["judge"] },
    { name: "signed but not on-chain (crash between store and post): post, never judge", chain: chain(DELIB), local: local({ signed: { [KEY]: mine } }), expect: ["post"] },
    {
      name: "posted in a block the logs have not reached yet: wait, never post twice",
      chain: chain(DELIB, { followedTo: 100n }),
      local: local({ signed: { [KEY]: { ...mine, postedInBlock: 101n } } }),
      expect: [],
    },
    {
      name: "posted, logs read past its block and no event (a reorg dropped it): post again",
      chain: chain(DELIB, { followedTo: 102n }),
      local: local({ signed: { [KEY]: { ...mine, postedInBlock: 101n } } }),
      expect: ["post"],
    },
    { name: "signed and posted: nothing", chain: chain({ ...DELIB, posted: [posted(ME)] }), local: local({ signed: { [KEY]: mine } }), expect: [] },
    {
      name: "posted signature of another resolution does not count as mine: post mine",
      chain: chain({ ...DELIB, posted: [posted(ME, 2)] }),
      local: local({ signed: { [KEY]: mine } }),
      expect: ["post"],
    },
    { name: "quorum of others, mine not yet posted: judge, note the quorum, no submit", chain: chain({ ...DELIB, posted: [posted(B), posted(C)] }), expect: ["judge", "note_quorum"] },
    {
      name: "everyone posted: submit at once",
      chain: chain({ ...DELIB, posted: [posted(ME), posted(B), posted(C)] }),
      local: local({ signed: { [KEY]: mine } }),
      expect: ["note_quorum", "submit"],
    },
    {
      name: "two of three posted, grace running: wait",
      chain: chain({ ...DELIB, posted: [posted(ME), posted(B)] }),
      local: local({ signed: { [KEY]: mine }, quorumSeenAtMs: { [KEY]: 0 } }),
      nowMs: 9_999,
      expect: [],
    },
    {
      name: "two of three posted, grace over: submit",
      chain: chain({ ...DELIB, posted: [posted(ME), posted(B)] }),
      local: local({ signed: { [KEY]: mine }, quorumSeenAtMs: { [KEY]: 0 } }),
      nowMs: 10_000,
      expect: ["submit"],
    },
    {
      name: "abstained (evidence down) but the others reached a quorum: submit theirs after the grace",
      chain: chain({ ...DELIB, posted: [posted(B), posted(C)] }),
      local: local({ attempts: { [KEY]: { atMs: 0, reason: "EVIDENCE_UNAVAILABLE" } }, quorumSeenAtMs: { [KEY]: 0 } }),
      nowMs: 10_000,
      expect: ["submit"],
    },
    { name: "split posts (1 vs 1): no quorum", chain: chain({ ...DELIB, posted: [posted(ME, 1), posted(B, 2)] }), local: local({ signed: { [KEY]: mine } }), expect: [] },
    { name: "outsider's post never counts", chain: chain({ ...DELIB, posted: [posted(ME), posted(OUTSIDER)] }), local: local({ signed: { [KEY]: mine } }), expect: [] },
    { name: "previous round's posts never count", chain: chain({ ...DELIB, round: 1, posted: [posted(B, 1, 0), posted(C, 1, 0)] }), local: local({ signed: { [roundKey(CASE, 1)]: { ...mine, round: 1 } } }), expect: ["post"] },
    { name: "deliberating past the deadline: expire (slow path), never sign late", chain: chain({ ...DELIB, deadline: NOW - 1n }), expect: ["expire"] },
    { name: "decided, appeal window open: wait", chain: chain({ status: "decided", sat: true }), expect: [] },
    { name: "decided, appeal window over, sat: finalize", chain: chain({ status: "decided", sat: true, deadline: NOW - 1n }), expect: ["finalize"] },
    { name: "decided, window over, never sat: leave it to the parties", chain: chain({ status: "decided", deadline: NOW - 1n }), expect: [] },
    { name: "slow path past its timeout, sat: expire", chain: chain({ status: "slow_path", sat: true, deadline: NOW - 1n }), expect: ["expire"] },
    { name: "fees credited: claim", chain: chain(null, { claimable: [{ asset: ETH, amount: 7n }] }), expect: ["claim"] },
    { name: "nothing credited: no claim", chain: chain(null, { claimable: [{ asset: ETH, amount: 0n }] }), expect: [] },
    { name: "stake below the minimum: warn once", chain: chain(null, { stake: 4n }), expect: ["warn"] },
    { name: "stake below the minimum, already warned: quiet", chain: chain(null, { stake: 4n }), local: local({ warned: ["STAKE_BELOW_MINIMUM"] }), expect: [] },
    { name: "stake restored: clear the warning", chain: chain(null), local: local({ warned: ["STAKE_BELOW_MINIMUM"] }), expect: ["clear_warning"] },
    { name: "registry pins another runtime: warn", chain: chain(null, { pinnedRuntime: `0x${"bb".repeat(32)}` }), expect: ["warn"] },
    { name: "the DisputeManager requires another runtime: warn", chain: chain(null, { requiredRuntime: `0x${"cc".repeat(32)}` }), expect: ["warn"] },
  ];
  for (const row of rows) {
    it(row.name, () => {
      expect(kinds(decide(row.chain, row.local ?? local(), row.nowMs ?? 0, OPTIONS))).to.deep.equal(row.expect);
    });
  }

  it("a round it signed is never judged again, whatever the chain shows", () => {
    for (const posts of [[], [posted(B)], [posted(B, 2), posted(C, 2)], [posted(ME, 3)]]) {
      const actions = decide(chain({ ...DELIB, posted: posts }), local({ signed: { [KEY]: mine } }), 1e12, OPTIONS);
      expect(kinds(actions)).to.not.include("judge");
    }
  });

  it("the submitted quorum holds every posted member over that resolution, and only those", () => {
    // One member posting twice counts once; an outsider and another resolution never count.
    const q = quorumOf({ ...chain(DELIB).cases[0]!, posted: [posted(B), posted(B), posted(C, 2), posted(OUTSIDER)] });
    expect(q).to.equal(null);
    const q2 = quorumOf({ ...chain(DELIB).cases[0]!, posted: [posted(ME), posted(B), posted(C, 2), posted(OUTSIDER)] })!;
    expect(q2.signatures.map((s) => s.signer)).to.deep.equal([ME, B]);
    expect(q2.message.verdict).to.equal(1);
    const action = decide(chain({ ...DELIB, posted: [posted(ME), posted(B), posted(C)] }), local({ signed: { [KEY]: mine } }), 0, OPTIONS).find((a) => a.kind === "submit");
    expect(action && action.kind === "submit" && action.signatures.map((s) => s.signer)).to.deep.equal([ME, B, C]);
  });
});
