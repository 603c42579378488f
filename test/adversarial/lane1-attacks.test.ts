/**
 * Issue 11's three Lane 1 attacks, each played end to end on the in-process network through drawn panels
 * (issue 10) and settled with exact balances:
 *
 * - **coin-flip**: a faulty deliverable flips a coin from whatever randomness it can reach inside the sealed
 *   engine (`crypto.getRandomValues`, `require("crypto")`, `Math.random`) to decide whether to behave. The
 *   engine's randomness is seeded from the case, so both replays agree and the misbehaviour is judged:
 *   decided against the provider (refund per the ICS schedule, SLA slash).
 * - **hostname**: a deliverable that behaves only on its author's machine (probes `os.hostname()`,
 *   `process`, `location`, `navigator`, `Deno`). Inside the engine none exists, so every arbitrator sees the
 *   same thing: the tests it then fails decide the case against the provider.
 * - **time-bomb**: the client binds a suite that passes when vetted and fails every test later
 *   (`Date.now()`/`new Date()`). Lane 1 runs it under the pinned clock and the alternate clock and seed; its
 *   verdict depends on them: `SUITE_INPUT_DEPENDENT`, attributed to the client (RespondentWins): the honest
 *   provider keeps the bounty and wins the client's bond.
 *
 * Each gig is paid in LaborGas (the bond token), so every balance change — gig, bonds, SLA slash, fees, burns
 * — is exact (no gas in it). Expected changes are computed from the ICS penalty schedule and DISPUTE_PARAMS,
 * never read back from the contracts.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import { getAddress, keccak256, parseEther, stringToBytes, zeroAddress, zeroHash, type Address, type Hex, type LocalAccount } from "viem";

import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import { buildGigPackage } from "../../arbitration/runner/build";
import { loadCaseContext, type Deployment } from "../../arbitration/runner/chain";
import { runObjectiveChecks } from "../../arbitration/lanes/checks";
import { icsFromJson, icsHash, penaltyFor, stepBudgetOf, type Ics } from "../../arbitration/documents/ics";
import { packageHash, packageToJson, parsePackage, type ChallengePackage } from "../../arbitration/documents/package";
import { alternateInputs, gigInputs } from "../../arbitration/lanes/pinned";
import { DEFAULT_MEMORY_BYTES, replay } from "../../arbitration/lanes/replay";
import { resolutionToJson } from "../../arbitration/lanes/resolution";
import { arbitrate, type ArbitrationRun } from "../../arbitration/runner/runner";
import { canon } from "../../channel-client/core/canonical";
import {
  DISPUTE_PARAMS,
  ETH_TERMS,
  drawPanel,
  GIG_STATUS,
  KIND,
  PROVIDER_ROLE,
  ARBITRATOR_ROLE,
  quorumSignatures,
  STATUS,
  supermajority,
  SYS,
  systemFixture,
  TOKEN_TERMS,
  VERDICT,
  type System,
} from "../helpers/system";
import { GOOD_DELIVERABLE, RUNNER, sampleIcsJson, SUITE } from "../arbitration/fixtures/samples";

const BURN: Address = "0x000000000000000000000000000000000000dEaD";
const BPS = 10_000n;
const LANE = 1;
/** The ICS's penalty schedule, in LaborGas base units; the per-test slash is odd so the slash's burn rounds. */
const PENALTIES = {
  objective_failure: { refund_bps: 2_000, slash: parseEther("5").toString() },
  per_failed_test: { refund_bps: 500, slash: (parseEther("1") + 1n).toString() },
  unserviceable: { compute_spent_bps: 1_000 },
};
const DAY = 86_400;
const NO_RECORDED_STATE = { deposit: 0n, seq: 0n, amount: 0n, receiptRoot: zeroHash, feeBps: 0 } as const;

/**
 * What a gig is paid in. Amounts end in 100 base units so that the arbitration fee (a tenth of a bond of
 * 3 × a tenth of the amount) is odd: two signers leave one unit of dust to burn.
 */
type Payment = { asset: Address; amount: bigint; bondFloor: bigint };
const inLaborGas = (s: System): Payment => ({ asset: getAddress(s.token.address), amount: parseEther("10") + 100n, bondFloor: TOKEN_TERMS.bondFloor });
const IN_ETH: Payment = { asset: zeroAddress, amount: parseEther("1") + 100n, bondFloor: ETH_TERMS.bondFloor };

function deploymentOf(s: System): Deployment {
  return {
    disputeManager: getAddress(s.disputes.address),
    gasEscrow: getAddress(s.escrow.address),
    gigEscrow: getAddress(s.gigs.address),
    registry: getAddress(s.registry.address),
  };
}

/** The opening bond of a Lane 1 case, from the dispute parameters and the asset's terms. */
function openingBond(pay: Payment): bigint {
  let base = (pay.amount * BigInt(DISPUTE_PARAMS.riskBps)) / BPS;
  if (base < pay.bondFloor) base = pay.bondFloor;
  return base * BigInt(DISPUTE_PARAMS.laneMultiplier) ** BigInt(LANE);
}

function icsFor(pay: Payment, suite: Bundle, stepBudget?: number): Ics {
  const base = sampleIcsJson();
  return icsFromJson(
    sampleIcsJson({
      asset: pay.asset.toLowerCase() as Address,
      max_price: (pay.amount * 2n).toString(),
      test_suite: { hash: bundleHash(suite), runner: RUNNER },
      penalty_schedule: PENALTIES,
      ...(stepBudget === undefined
        ? {}
        : { rubric: { version: 1, items: [{ id: "passes_tests", kind: "test_suite", step_budget: stepBudget }, ...base.rubric.items.slice(1)] } }),
    }),
  );
}

/** ETH each watched account spent on gas, by address. */
type Gas = Map<Address, bigint>;

/** Waits for a transaction and books its gas to its sender. */
async function booked(s: System, gas: Gas, pending: Promise<Hex>): Promise<void> {
  const receipt = await s.publicClient.waitForTransactionReceipt({ hash: await pending });
  expect(receipt.status).to.equal("success");
  const from = getAddress(receipt.from);
  gas.set(from, (gas.get(from) ?? 0n) + receipt.gasUsed * receipt.effectiveGasPrice);
}

type Gig = { gigId: bigint; caseId: Hex; pkg: ChallengePackage; ics: Ics; fundedAt: bigint; pay: Payment; bond: bigint };

/**
 * Funds (at the pinned `fundedAt`, so the case's clock and seed are the same on every run), accepts and
 * delivers a gig, then the client opens a Lane 1 case on it and the provider contests it.
 */
async function disputedGig(
  s: System,
  gas: Gas,
  pay: Payment,
  suite: Bundle,
  deliverable: Bundle,
  fundedAt: bigint,
  options: { packagedSuite?: Bundle | null; stepBudget?: number } = {},
): Promise<Gig> {
  const ics = icsFor(pay, suite, options.stepBudget);
  const eth = pay.asset === zeroAddress;
  const bond = openingBond(pay);
  await time.setNextBlockTimestamp(fundedAt);
  await booked(
    s,
    gas,
    s.gigs.write.fund([s.provider.account.address, pay.asset, pay.amount, icsHash(ics), Number(fundedAt) + 30 * DAY, 3600], {
      account: s.client.account,
      value: eth ? pay.amount : 0n,
    }),
  );
  const gigId = await s.gigs.read.gigCount();
  expect((await s.gigs.read.gigOf([gigId])).amount).to.equal(pay.amount);
  await booked(s, gas, s.gigs.write.accept([gigId], { account: s.provider.account }));
  await booked(s, gas, s.gigs.write.deliver([gigId, bundleHash(deliverable), zeroHash], { account: s.provider.account }));
  const caseId = await s.disputes.read.nextCaseId([KIND.Gig, `0x${gigId.toString(16).padStart(64, "0")}`]);
  const pkg = buildGigPackage({
    caseId,
    chainId: s.chainId,
    disputeManager: getAddress(s.disputes.address),
    challenger: getAddress(s.client.account.address),
    lane: LANE,
    gigEscrow: getAddress(s.gigs.address),
    gigId,
    ics,
    // The client builds the package: by default with the suite the ICS binds; `packagedSuite` overrides it.
    suite: options.packagedSuite === undefined ? suite : options.packagedSuite,
    deliverable,
  });
  await booked(s, gas, s.disputes.write.openGigCase([gigId, LANE, packageHash(pkg)], { account: s.client.account, value: eth ? bond : 0n }));
  expect((await s.disputes.read.caseOf([caseId])).challengerBond).to.equal(bond);
  await booked(s, gas, s.disputes.write.respond([caseId], { account: s.provider.account, value: eth ? bond : 0n }));
  expect((await s.disputes.read.caseOf([caseId])).respondentBond).to.equal(bond);
  return { gigId, caseId, pkg, ics, fundedAt, pay, bond };
}

/** Two arbitrators judge the case independently, each parsing the package bytes and reading the chain itself. */
async function judgeTwice(s: System, gig: Gig): Promise<ArbitrationRun> {
  const runs: ArbitrationRun[] = [];
  for (const actor of ["arbitrator-a", "arbitrator-b"]) {
    const received = parsePackage(canon(packageToJson(gig.pkg)));
    const ctx = await loadCaseContext(s.publicClient, deploymentOf(s), gig.caseId, received);
    expect(ctx.gig!.fundedAt).to.equal(gig.fundedAt);
    runs.push(await arbitrate({ pkg: received, ctx, actor }));
  }
  const [a, b] = runs as [ArbitrationRun, ArbitrationRun];
  expect(a.resolutionHash).to.equal(b.resolutionHash);
  expect(canon(resolutionToJson(a.resolution))).to.equal(canon(resolutionToJson(b.resolution)));
  expect(a.message).to.deep.equal(b.message);
  expect(a.state).to.equal("deliver");
  expect(a.resolution.aggregate.unresolved).to.equal(false);
  return a;
}

type Enforced = { panel: LocalAccount[]; signers: LocalAccount[] };

/**
 * The drawn panel's supermajority (two of three) signs the run's message and the watcher submits it; the
 * verdict stands past the appeal window and is finalised; the signers claim their fees.
 */
async function enforce(s: System, gas: Gas, gig: Gig, run: ArbitrationRun): Promise<Enforced> {
  const panel = await drawPanel(s, gig.caseId);
  expect(panel).to.have.length(DISPUTE_PARAMS.panelSize);
  const signers = panel.slice(0, supermajority(panel.length));
  expect(signers).to.have.length(2);
  const signatures = await quorumSignatures(s, run.message, signers);
  await s.disputes.write.submitVerdict([run.message, signatures], { account: s.watcher.account });
  const decided = await s.disputes.read.caseOf([gig.caseId]);
  expect(decided.status).to.equal(STATUS.Decided);
  // Not before the appeal window has passed.
  let early = false;
  await s.disputes.write.finalize([gig.caseId, NO_RECORDED_STATE], { account: s.watcher.account }).catch(() => (early = true));
  expect(early, "finalize inside the appeal window").to.equal(true);
  await time.increaseTo(BigInt(decided.deadline) + 1n);
  await s.disputes.write.finalize([gig.caseId, NO_RECORDED_STATE], { account: s.watcher.account });
  expect((await s.disputes.read.caseOf([gig.caseId])).status).to.equal(STATUS.Resolved);
  for (const signer of signers) await booked(s, gas, s.disputes.write.claim([gig.pay.asset], { account: signer }));
  return { panel, signers };
}

/** Everyone the case could move money for. */
function watched(s: System): Address[] {
  return [
    s.client.account.address,
    s.provider.account.address,
    s.gigs.address,
    s.disputes.address,
    s.registry.address,
    BURN,
    ...SYS.arbitrators.map((i) => s.wallets[i]!.account.address),
  ].map((a) => getAddress(a));
}

type Balances = { token: Map<Address, bigint>; eth: Map<Address, bigint> };

async function balances(s: System): Promise<Balances> {
  const out: Balances = { token: new Map(), eth: new Map() };
  for (const a of watched(s)) {
    out.token.set(a, await s.token.read.balanceOf([a]));
    out.eth.set(a, await s.publicClient.getBalance({ address: a }));
  }
  return out;
}

/** Asserts every watched balance changed by exactly what is expected (zero where not named), gas included. */
function expectDeltas(before: Balances, after: Balances, expected: Balances, gas: Gas) {
  for (const unit of ["token", "eth"] as const) {
    let total = 0n;
    for (const [who, was] of before[unit]) {
      const delta = after[unit].get(who)! - was;
      const owed = (expected[unit].get(who) ?? 0n) - (unit === "eth" ? (gas.get(who) ?? 0n) : 0n);
      expect(delta, `${unit === "eth" ? "ETH" : "LaborGas"} balance change of ${who}`).to.equal(owed);
      total += delta;
    }
    // Nothing was created or lost: every unit moved between the watched accounts (ETH: but for the gas they paid).
    const spent = unit === "eth" ? [...gas.values()].reduce((a, b) => a + b, 0n) : 0n;
    expect(total + spent, `${unit} conservation`).to.equal(0n);
  }
}

function add(m: Map<Address, bigint>, who: Address, amount: bigint) {
  const key = getAddress(who);
  m.set(key, (m.get(key) ?? 0n) + amount);
}

/** The arbitration fee and its dust: a tenth of the loser's bond, split equally among the signers. */
function feeOf(loserBond: bigint, signers: number) {
  const fee = (loserBond * BigInt(DISPUTE_PARAMS.feeBps)) / BPS;
  const share = fee / BigInt(signers);
  return { fee, share, dust: fee - share * BigInt(signers) };
}

/** The map of the gig's asset in `b`. */
const inAsset = (b: Balances, pay: Payment) => (pay.asset === zeroAddress ? b.eth : b.token);

/** Expected changes when the provider is found at fault for `failed` tests (ChallengerWins). */
function providerFaultDeltas(s: System, gig: Gig, failed: number, signers: LocalAccount[]): Balances {
  const { refund, slash } = penaltyFor(gig.ics, failed, gig.pay.amount);
  expect((slash * BigInt(DISPUTE_PARAMS.burnBps)) / BPS > 0n && refund > 0n).to.equal(true);
  return challengerWinsDeltas(s, gig, refund, slash, signers);
}

/** Expected changes of a ChallengerWins verdict refunding `refund` of the gig and slashing `slash` LaborGas. */
function challengerWinsDeltas(s: System, gig: Gig, refund: bigint, slash: bigint, signers: LocalAccount[]): Balances {
  const { bond, pay } = gig;
  const { fee, share, dust } = feeOf(bond, signers.length);
  const bondBurn = (bond * BigInt(DISPUTE_PARAMS.burnBps)) / BPS;
  const slashBurn = (slash * BigInt(DISPUTE_PARAMS.burnBps)) / BPS;
  expect(fee > 0n && dust > 0n).to.equal(true);
  const out: Balances = { token: new Map(), eth: new Map() };
  const value = inAsset(out, pay);
  // The client paid the gig and its bond; gets the refund and both bonds less the burn and the fee.
  add(value, s.client.account.address, -pay.amount - bond + refund + (bond + bond - bondBurn - fee));
  // The provider paid its bond and gets the rest of the gig.
  add(value, s.provider.account.address, -bond + (pay.amount - refund));
  add(value, BURN, bondBurn + dust);
  for (const signer of signers) add(value, signer.address, share);
  // The SLA slash (LaborGas) leaves the registry: to the client less its burnt share.
  add(out.token, s.registry.address, -slash);
  add(out.token, s.client.account.address, slash - slashBurn);
  add(out.token, BURN, slashBurn);
  return out;
}

/** Expected changes when the suite is the client's fault (RespondentWins): no refund, no slash. */
function suiteFaultDeltas(s: System, gig: Gig, signers: LocalAccount[]): Balances {
  const { bond, pay } = gig;
  const { fee, share, dust } = feeOf(bond, signers.length);
  const bondBurn = (bond * BigInt(DISPUTE_PARAMS.burnBps)) / BPS;
  expect(fee > 0n && dust > 0n).to.equal(true);
  const out: Balances = { token: new Map(), eth: new Map() };
  const value = inAsset(out, pay);
  add(value, s.client.account.address, -pay.amount - bond);
  // The provider: the whole bounty, its bond back and the client's less the burn and the fee.
  add(value, s.provider.account.address, pay.amount + (bond - bondBurn - fee));
  add(value, BURN, bondBurn + dust);
  for (const signer of signers) add(value, signer.address, share);
  return out;
}

async function stakes(s: System) {
  return Promise.all(SYS.arbitrators.map((i) => s.registry.read.bondOf([ARBITRATOR_ROLE, s.wallets[i]!.account.address])));
}

async function expectLocksReleased(s: System, panel: LocalAccount[]) {
  expect(await s.registry.read.locksOf([PROVIDER_ROLE, s.provider.account.address])).to.equal(0n);
  for (const member of panel) expect(await s.registry.read.locksOf([ARBITRATOR_ROLE, member.address])).to.equal(0n);
}

/*//////////////////////////////////////////////////////////////
                         THE ATTACKS
//////////////////////////////////////////////////////////////*/

/** Flips a coin from any randomness it can reach; heads it behaves, tails `add` is off by one. */
const COIN_FLIP: Bundle = {
  files: {
    "math.js": [
      '"use strict";',
      "function coin() {",
      "  try { const b = new Uint8Array(1); globalThis.crypto.getRandomValues(b); return b[0] & 1; } catch (e) {}",
      '  try { return require("crypto").randomBytes(1)[0] & 1; } catch (e) {}',
      "  try { return Number(process.hrtime.bigint() & 1n); } catch (e) {}",
      "  return Math.random() < 0.5 ? 1 : 0;",
      "}",
      "exports.add = (a, b) => (coin() ? a + b : a + b + 1);",
      "exports.mul = (a, b) => a * b;",
      "",
    ].join("\n"),
  },
};

/** Behaves only on its author's machine; elsewhere `add` is off by one for b = 0 and `mul` drops the sign. */
const HOSTNAME: Bundle = {
  files: {
    "math.js": [
      '"use strict";',
      'const HOME = "provider-devbox";',
      "function hostname() {",
      "  const probes = [",
      '    () => require("os").hostname(),',
      "    () => process.env.HOSTNAME,",
      '    () => require("process").env.HOSTNAME,',
      "    () => globalThis.location.hostname,",
      "    () => globalThis.navigator.userAgent,",
      "    () => globalThis.Deno.hostname(),",
      "  ];",
      "  for (const probe of probes) {",
      '    try { const name = probe(); if (typeof name === "string" && name !== "") return name; } catch (e) {}',
      "  }",
      '  return "";',
      "}",
      "const faulty = hostname() !== HOME;",
      "exports.add = (a, b) => (faulty && b === 0 ? a + b + 1 : a + b);",
      "exports.mul = (a, b) => (faulty ? Math.abs(a * b) : a * b);",
      "",
    ].join("\n"),
  },
};

/** The sample suite, armed 30 days after `fundedAt`: every test then expects a wrong answer. */
function timeBombSuite(fundedAt: bigint): Bundle {
  const armedAt = (Number(fundedAt) + 30 * DAY) * 1000;
  return {
    files: {
      "run.js": [
        '"use strict";',
        'const { test, call, equal } = require("ioi:harness");',
        'const { cases } = require("./lib/cases.js");',
        `const ARMED_AT = ${armedAt};`,
        "const armed = () => Date.now() >= ARMED_AT || new Date().getTime() >= ARMED_AT;",
        "for (const [name, fn, args, expected] of cases) {",
        '  test(name, () => equal(call(fn, args, { module: "math.js" }), armed() ? expected + 1 : expected));',
        "}",
        "",
      ].join("\n"),
      "lib/cases.js": SUITE.files["lib/cases.js"]!,
    },
  };
}

/** Pinned funding times (seconds), far enough ahead of the wall clock and of each other. */
const FUNDED_AT = { coinFlip: 2_000_000_000n, hostname: 2_010_000_000n, timeBomb: 2_020_000_000n } as const;

/** Each attack is played once with a LaborGas gig and once with an ETH gig (the SLA slash is LaborGas either way). */
const PAYMENTS: Array<[string, (s: System) => Payment, bigint]> = [
  ["LaborGas", inLaborGas, 0n],
  ["ETH", () => IN_ETH, 1_000_000n],
];

describe("adversarial: Lane 1 attacks end decided and attributed (coin-flip, hostname, time-bomb)", function () {
  this.timeout(90_000);

  for (const [paidIn, paymentOf, later] of PAYMENTS) {
    describe(`a gig paid in ${paidIn}`, () => {
      it("coin-flip: a deliverable that flips a coin from host randomness → the replays agree, decided against the provider, exact balances", async function () {
        const s = await loadFixture(systemFixture);
        const gas: Gas = new Map();
        const before = await balances(s);
        const stakesBefore = await stakes(s);
        const providerBondBefore = await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address]);
        const gig = await disputedGig(s, gas, paymentOf(s), SUITE, COIN_FLIP, FUNDED_AT.coinFlip + later);
        const run = await judgeTwice(s, gig);

        // Decided against the provider: never undecidable, never REPLAY_NONDETERMINISTIC.
        expect(run.resolution.aggregate.finalVerdict).to.equal("provider_fault");
        const codes = run.resolution.aggregate.reasonCodes;
        expect(codes.filter((c) => c !== "DELIVERABLE_NONDETERMINISTIC"), "only a provider-attributed code may appear").to.deep.equal([]);
        const check = run.resolution.objectiveChecks.find((c) => c.name === "passes_tests")!;
        expect(check.status).to.equal(false);
        const match = /^(\d+) of 12 tests failed: ([a-z_, ]+?)(?: \(the deliverable answered differently in two identical replays\))?$/.exec(check.detail!);
        expect(match, check.detail!).to.not.equal(null);
        const failedNames = match![2]!.split(", ");
        const failed = Number(match![1]);
        expect(failedNames).to.have.length(failed);
        // Only add flips the coin: every failure is an add test, every mul test passes.
        expect(failed).to.be.within(1, 6);
        expect(failedNames.every((n) => n.startsWith("add_"))).to.equal(true);
        // The randomness is the case's seed (from the chain), not the host's.
        expect(run.resolution.replays.length).to.be.greaterThan(0);
        expect(run.resolution.replays[0]!.process.inputs.deliverable.seed).to.equal(
          gigInputs({ chainId: s.chainId, gigEscrow: getAddress(s.gigs.address), gigId: gig.gigId, fundedAt: gig.fundedAt }).seed,
        );

        // The attack is real: the coin does decide. Under other seeds the same deliverable fails other tests
        // (each run still deterministic and attributed to it), so host randomness would have split the replays.
        const outcomes = new Set([check.detail]);
        for (const label of ["seed-1", "seed-2", "seed-3"]) {
          const other = await runObjectiveChecks({ ics: gig.ics, suite: SUITE, deliverable: COIN_FLIP, inputs: { clockMs: 1_700_000_000_000, seed: keccak256(stringToBytes(label)) } });
          expect(other).to.deep.include({ reasonCodes: [], suiteAtFault: false });
          outcomes.add(other.checks[0]!.detail);
        }
        expect(outcomes.size).to.be.greaterThan(1);

        const penalty = penaltyFor(gig.ics, failed, gig.pay.amount);
        expect(run.message).to.deep.equal({
          caseId: gig.caseId,
          verdict: VERDICT.ChallengerWins,
          refund: penalty.refund,
          slash: penalty.slash,
          resolutionHash: run.resolutionHash,
        });

        const { panel, signers } = await enforce(s, gas, gig, run);
        expectDeltas(before, await balances(s), providerFaultDeltas(s, gig, failed, signers), gas);
        const providerBondAfter = await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address]);
        expect(providerBondBefore.active - providerBondAfter.active).to.equal(penalty.slash);
        expect(await stakes(s)).to.deep.equal(stakesBefore);
        expect((await s.gigs.read.gigOf([gig.gigId])).status).to.equal(GIG_STATUS.Released);
        await expectLocksReleased(s, panel);
      });

      it("hostname: a deliverable faulty off its author's machine → every arbitrator sees the same (no host identity), decided against the provider, exact balances", async function () {
        const s = await loadFixture(systemFixture);
        const gas: Gas = new Map();
        const before = await balances(s);
        const stakesBefore = await stakes(s);
        const providerBondBefore = await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address]);
        const gig = await disputedGig(s, gas, paymentOf(s), SUITE, HOSTNAME, FUNDED_AT.hostname + later);
        const run = await judgeTwice(s, gig);

        expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "provider_fault", reasonCodes: [], unresolved: false });
        // No hostname exists inside the engine: add is off by one for b = 0 (add_zero, add_one), mul drops the sign (mul_neg).
        expect(run.resolution.objectiveChecks.find((c) => c.name === "passes_tests")).to.deep.include({
          status: false,
          detail: "3 of 12 tests failed: add_one, add_zero, mul_neg",
        });
        // The other rubric items pass: nothing else is held against the provider.
        expect(run.resolution.objectiveChecks.filter((c) => c.name !== "passes_tests").every((c) => c.status)).to.equal(true);

        const penalty = penaltyFor(gig.ics, 3, gig.pay.amount);
        // 20% + 3 × 5% of the gig; 5 + 3 × (1 LaborGas + 1 unit) slashed.
        expect(penalty).to.deep.equal({ refund: (gig.pay.amount * 3_500n) / BPS, slash: parseEther("8") + 3n });
        expect(run.message).to.deep.equal({
          caseId: gig.caseId,
          verdict: VERDICT.ChallengerWins,
          refund: penalty.refund,
          slash: penalty.slash,
          resolutionHash: run.resolutionHash,
        });

        const { panel, signers } = await enforce(s, gas, gig, run);
        expectDeltas(before, await balances(s), providerFaultDeltas(s, gig, 3, signers), gas);
        const providerBondAfter = await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address]);
        expect(providerBondBefore.active - providerBondAfter.active).to.equal(penalty.slash);
        expect(await stakes(s)).to.deep.equal(stakesBefore);
        expect((await s.gigs.read.gigOf([gig.gigId])).status).to.equal(GIG_STATUS.Released);
        await expectLocksReleased(s, panel);
      });

      it("time-bomb: a client's suite that passes when vetted and fails every test later → SUITE_INPUT_DEPENDENT, attributed to the client: the provider keeps the bounty and wins the bond", async function () {
        const s = await loadFixture(systemFixture);
        const pay = paymentOf(s);
        const fundedAt = FUNDED_AT.timeBomb + later;
        const bomb = timeBombSuite(fundedAt);
        const ics = icsFor(pay, bomb);

        // The bomb is real: at the gig's pinned clock (when the provider vets it) every test passes; a month
        // later, when an unpinned arbitrator would replay it, all 12 fail.
        const pinned = gigInputs({ chainId: s.chainId, gigEscrow: getAddress(s.gigs.address), gigId: 1n, fundedAt });
        const budgets = {
          stepsPerTest: stepBudgetOf(ics.rubric.items[0] as Parameters<typeof stepBudgetOf>[0]),
          memoryBytes: DEFAULT_MEMORY_BYTES,
          outputBytes: ics.testSuite!.runner.maxOutputBytes,
        };
        const replayAt = (clockMs: number) =>
          replay({
            suite: bomb,
            deliverable: GOOD_DELIVERABLE,
            runner: ics.testSuite!.runner,
            budgets,
            inputs: { suite: { ...pinned, clockMs }, deliverable: pinned },
            actor: "vet",
            intent: "vet",
          });
        const vetted = await replayAt(pinned.clockMs);
        expect(vetted.suiteFault).to.equal(null);
        expect(vetted.tests.map((t) => t.passed)).to.deep.equal(Array(12).fill(true));
        const monthLater = pinned.clockMs + 31 * DAY * 1000;
        expect((await replayAt(monthLater)).tests.map((t) => t.passed)).to.deep.equal(Array(12).fill(false));
        // Judged under a later clock alone (as before issue 11), the honest deliverable would be convicted of 12 failures.
        const unpinned = await runObjectiveChecks({ ics, suite: bomb, deliverable: GOOD_DELIVERABLE, inputs: { ...pinned, clockMs: monthLater } });
        expect(unpinned).to.deep.include({ failedTests: 12, suiteAtFault: false });

        const gas: Gas = new Map();
        const before = await balances(s);
        const stakesBefore = await stakes(s);
        const providerBondBefore = await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address]);
        const gig = await disputedGig(s, gas, pay, bomb, GOOD_DELIVERABLE, fundedAt);
        expect(gig.gigId).to.equal(1n);
        const run = await judgeTwice(s, gig);

        expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", reasonCodes: ["SUITE_INPUT_DEPENDENT"], unresolved: false });
        const check = run.resolution.objectiveChecks.find((c) => c.name === "passes_tests")!;
        expect(check.status).to.equal(true);
        expect(check.detail).to.match(/^suite fault \(SUITE_INPUT_DEPENDENT\): the suite's verdict depends on its clock or seed/);
        expect(check.detail).to.include("12 of 12 tests failed instead of 0 of 12");
        expect(check.detail).to.match(/nothing is held against the deliverable$/);
        expect(run.resolution.objectiveChecks.every((c) => c.status)).to.equal(true);
        expect(run.message).to.deep.equal({ caseId: gig.caseId, verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n, resolutionHash: run.resolutionHash });

        const { panel, signers } = await enforce(s, gas, gig, run);
        expectDeltas(before, await balances(s), suiteFaultDeltas(s, gig, signers), gas);
        expect(await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address])).to.deep.equal(providerBondBefore);
        expect(await stakes(s)).to.deep.equal(stakesBefore);
        expect((await s.gigs.read.gigOf([gig.gigId])).status).to.equal(GIG_STATUS.Released);
        await expectLocksReleased(s, panel);
      });
    });
  }
});

/** Issue 27 finding 2: junk that never answers — `(3n ** 600000n).toString()` in a loop, one native op per step of old. */
const BIGINT_STALL: Bundle = {
  files: { "math.js": '"use strict";\nconst stall = () => { let s = 0; for (let i = 0; i < 5000; i++) s += (3n ** 600000n).toString().length; return s; };\nexports.add = () => stall();\nexports.mul = () => stall();\n' },
};

describe("issue 27 finding 2: a stall never wins a case", function () {
  this.timeout(120_000);

  it("a deliverable that stalls in native BigInt work exhausts its own fuel on every test → decided against the provider, exact balances", async function () {
    const s = await loadFixture(systemFixture);
    const gas: Gas = new Map();
    const before = await balances(s);
    const stakesBefore = await stakes(s);
    const providerBondBefore = await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address]);
    const started = performance.now();
    const gig = await disputedGig(s, gas, inLaborGas(s), SUITE, BIGINT_STALL, 2_030_000_000n);
    const run = await judgeTwice(s, gig);
    expect(performance.now() - started, "two arbitrations in well under a minute").to.be.below(60_000);

    expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "provider_fault", reasonCodes: ["DELIVERABLE_STEP_BUDGET"], unresolved: false });
    const check = run.resolution.objectiveChecks.find((c) => c.name === "passes_tests")!;
    expect(check.status).to.equal(false);
    expect(check.detail).to.match(/^12 of 12 tests failed: /);
    const penalty = penaltyFor(gig.ics, 12, gig.pay.amount);
    expect(run.message).to.deep.equal({ caseId: gig.caseId, verdict: VERDICT.ChallengerWins, refund: penalty.refund, slash: penalty.slash, resolutionHash: run.resolutionHash });

    const { panel, signers } = await enforce(s, gas, gig, run);
    expectDeltas(before, await balances(s), providerFaultDeltas(s, gig, 12, signers), gas);
    const providerBondAfter = await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address]);
    expect(providerBondBefore.active - providerBondAfter.active).to.equal(penalty.slash);
    expect(await stakes(s)).to.deep.equal(stakesBefore);
    await expectLocksReleased(s, panel);
  });
});

/*//////////////////////////////////////////////////////////////
           ISSUE 27: FINDINGS 3, 4, 7 AND THE MISSING SUITE
//////////////////////////////////////////////////////////////*/

/** A client's suite that draws every test's inputs from the harness's seeded `Math.random` (allowed: decision 0013). */
const RANDOM_INPUT_SUITE: Bundle = {
  files: {
    "run.js": [
      '"use strict";',
      'const { test, call, equal } = require("ioi:harness");',
      "for (let i = 0; i < 8; i++) {",
      "  test(`random_add_${i}`, () => {",
      "    const a = Math.floor(Math.random() * 1000), b = Math.floor(Math.random() * 1000);",
      '    equal(call("add", [a, b], { module: "math.js" }), a + b);',
      "  });",
      "}",
      "",
    ].join("\n"),
  },
};

/** Wrong whenever the sum is a multiple of 3: which tests of a random suite it fails depends on the questions. */
const WRONG_ON_MULTIPLES_OF_3: Bundle = {
  files: { "math.js": '"use strict";\nexports.add = (a, b) => ((a + b) % 3 === 0 ? a + b + 1 : a + b);\nexports.mul = (a, b) => a * b;\n' },
};

/** `add` answers with 20,000 numbers: cheap to build natively, costly to carry across the bridge and compare. */
const HUGE_ANSWER: Bundle = {
  files: { "math.js": '"use strict";\nexports.add = (a, b) => new Array(20000).fill(a + b);\nexports.mul = (a, b) => a * b;\n' },
};

/** A delivery that is nothing but the provider's own word that the request was unserviceable. */
const BARE_FAULT_RECEIPT: Bundle = {
  files: { "FAULT_RECEIPT.json": JSON.stringify({ code: "ERR_UPSTREAM_POLICY_VIOLATION", detail: "upstream refused the prompt" }) },
};

/** Runs the whole drawn-panel life of a case and asserts every balance, the provider's SLA bond and the stakes. */
async function playOut(
  s: System,
  gas: Gas,
  gig: Gig,
  run: ArbitrationRun,
  before: Balances,
  expected: (signers: LocalAccount[]) => Balances,
  slashed: bigint,
  gigStatus: number = GIG_STATUS.Released,
) {
  const stakesBefore = await stakes(s);
  const providerBondBefore = await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address]);
  const { panel, signers } = await enforce(s, gas, gig, run);
  expectDeltas(before, await balances(s), expected(signers), gas);
  const providerBondAfter = await s.registry.read.bondOf([PROVIDER_ROLE, s.provider.account.address]);
  expect(providerBondBefore.active - providerBondAfter.active).to.equal(slashed);
  expect(await stakes(s)).to.deep.equal(stakesBefore);
  expect((await s.gigs.read.gigOf([gig.gigId])).status).to.equal(gigStatus);
  await expectLocksReleased(s, panel);
}

describe("issue 27 finding 3: a suite drawing inputs from the seeded Math.random does not turn the deliverable's wrong answers into the suite's fault", function () {
  this.timeout(120_000);

  it("the deliverable fails some of the randomly drawn tests → decided against the provider (not SUITE_INPUT_DEPENDENT), exact balances", async function () {
    const s = await loadFixture(systemFixture);
    const pay = inLaborGas(s);
    const fundedAt = 2_040_000_000n;
    const ics = icsFor(pay, RANDOM_INPUT_SUITE);
    const pinned = gigInputs({ chainId: s.chainId, gigEscrow: getAddress(s.gigs.address), gigId: 1n, fundedAt });

    // The attack is real: under the alternate seed the suite asks other questions, the same deliverable fails
    // another number of tests, and a rule blaming any verdict change on the suite would acquit the deliverable.
    const budgets = {
      stepsPerTest: stepBudgetOf(ics.rubric.items[0] as Parameters<typeof stepBudgetOf>[0]),
      memoryBytes: DEFAULT_MEMORY_BYTES,
      outputBytes: ics.testSuite!.runner.maxOutputBytes,
    };
    const replayWith = (suiteInputs: typeof pinned) =>
      replay({ suite: RANDOM_INPUT_SUITE, deliverable: WRONG_ON_MULTIPLES_OF_3, runner: ics.testSuite!.runner, budgets, inputs: { suite: suiteInputs, deliverable: pinned }, actor: "attack", intent: "vet" });
    const failing = (r: Awaited<ReturnType<typeof replayWith>>) => r.tests.filter((t) => !t.passed).map((t) => t.name);
    const atPinned = failing(await replayWith(pinned));
    const atAlternate = failing(await replayWith(alternateInputs(pinned)));
    expect(atPinned.length).to.be.within(1, 7);
    expect(atAlternate).to.not.deep.equal(atPinned);

    const gas: Gas = new Map();
    const before = await balances(s);
    const gig = await disputedGig(s, gas, pay, RANDOM_INPUT_SUITE, WRONG_ON_MULTIPLES_OF_3, fundedAt);
    expect(gig.gigId).to.equal(1n);
    const run = await judgeTwice(s, gig);

    expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "provider_fault", reasonCodes: [], unresolved: false });
    expect(run.resolution.objectiveChecks.find((c) => c.name === "passes_tests")).to.deep.include({
      status: false,
      detail: `${atPinned.length} of 8 tests failed: ${[...atPinned].sort().join(", ")}`,
    });
    const penalty = penaltyFor(gig.ics, atPinned.length, pay.amount);
    expect(run.message).to.deep.equal({ caseId: gig.caseId, verdict: VERDICT.ChallengerWins, refund: penalty.refund, slash: penalty.slash, resolutionHash: run.resolutionHash });
    await playOut(s, gas, gig, run, before, (signers) => providerFaultDeltas(s, gig, atPinned.length, signers), penalty.slash);
  });
});

describe("issue 27 finding 4: a deliverable's large answer is charged to the deliverable, not to the suite's step budget", function () {
  this.timeout(120_000);

  it("ICS step_budget 350, `add` answers with 20,000 numbers → its 6 tests fail by DELIVERABLE_STEP_BUDGET (not SUITE_STEP_BUDGET), exact balances", async function () {
    const s = await loadFixture(systemFixture);
    const pay = inLaborGas(s);
    const gas: Gas = new Map();
    const before = await balances(s);
    const gig = await disputedGig(s, gas, pay, SUITE, HUGE_ANSWER, 2_050_000_000n, { stepBudget: 350 });
    expect(stepBudgetOf(gig.ics.rubric.items[0] as Parameters<typeof stepBudgetOf>[0])).to.equal(350);
    const run = await judgeTwice(s, gig);

    expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "provider_fault", reasonCodes: ["DELIVERABLE_STEP_BUDGET"], unresolved: false });
    const check = run.resolution.objectiveChecks.find((c) => c.name === "passes_tests")!;
    expect(check.status).to.equal(false);
    expect(check.detail).to.match(/^6 of 12 tests failed: add_big, add_mixed, add_neg, add_one, add_pos, add_zero; over budget: /);
    expect(check.detail).to.not.include("SUITE_");
    const penalty = penaltyFor(gig.ics, 6, pay.amount);
    expect(run.message).to.deep.equal({ caseId: gig.caseId, verdict: VERDICT.ChallengerWins, refund: penalty.refund, slash: penalty.slash, resolutionHash: run.resolutionHash });
    await playOut(s, gas, gig, run, before, (signers) => providerFaultDeltas(s, gig, 6, signers), penalty.slash);
  });
});

describe("issue 27 finding 7: a bare self-asserted 'unserviceable' keeps nothing", function () {
  this.timeout(120_000);

  it("a delivery that is only FAULT_RECEIPT.json → the client is refunded in full, no slash, the provider's bond pays the fee (FAULT_RECEIPT_UNSUPPORTED), exact balances", async function () {
    const s = await loadFixture(systemFixture);
    const pay = inLaborGas(s);
    const gas: Gas = new Map();
    const before = await balances(s);
    const gig = await disputedGig(s, gas, pay, SUITE, BARE_FAULT_RECEIPT, 2_060_000_000n);
    const run = await judgeTwice(s, gig);

    expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "provider_fault", reasonCodes: ["FAULT_RECEIPT_UNSUPPORTED"], unresolved: false });
    expect(run.message).to.deep.equal({ caseId: gig.caseId, verdict: VERDICT.ChallengerWins, refund: pay.amount, slash: 0n, resolutionHash: run.resolutionHash });
    // The client gets the whole bounty back and its bond plus the provider's, less burn and fee; the provider
    // keeps none of the bounty (not the terms' 10 % compute_spent_bps) and loses its bond.
    await playOut(s, gas, gig, run, before, (signers) => challengerWinsDeltas(s, gig, pay.amount, 0n, signers), 0n, GIG_STATUS.Refunded);
  });
});

describe("issue 27 finding 5 (gig): the client's missing suite is the client's fault", function () {
  this.timeout(120_000);

  it("the client leaves the bound suite out of its package → decided against the client (MISSING_TEST_SUITE, Lane 0: evidence the client owed): the provider keeps the bounty and wins the bond, exact balances", async function () {
    const s = await loadFixture(systemFixture);
    const pay = inLaborGas(s);
    const gas: Gas = new Map();
    const before = await balances(s);
    const gig = await disputedGig(s, gas, pay, SUITE, GOOD_DELIVERABLE, 2_070_000_000n, { packagedSuite: null });
    expect(gig.pkg.evidence.some((item) => item.kind === "test_suite")).to.equal(false);
    const run = await judgeTwice(s, gig);

    expect(run.resolution.aggregate).to.deep.include({ finalVerdict: "challenger_fault", reasonCodes: ["MISSING_TEST_SUITE"], unresolved: false });
    expect(run.message).to.deep.equal({ caseId: gig.caseId, verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n, resolutionHash: run.resolutionHash });
    await playOut(s, gas, gig, run, before, (signers) => suiteFaultDeltas(s, gig, signers), 0n);
  });
});
