/**
 * DisputeManager: cases against gigs and closing sessions, bonds per asset, drawn panels, supermajority verdicts
 * with stake at risk, appeals, the slow path and the liveness backstops, fees and arbitrator slashes. Balances
 * are checked exactly for every party (the burn address and the registry included), and the manager ends every
 * case holding exactly the claimables it owes.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import hre from "hardhat";
import {
  decodeErrorResult,
  encodeFunctionData,
  getAddress,
  hashTypedData,
  keccak256,
  parseEther,
  parseEventLogs,
  stringToBytes,
  zeroAddress,
  zeroHash,
  type Address,
  type Hash,
  type Hex,
  type LocalAccount,
  type TransactionReceipt,
} from "viem";

import { ReceiptAccumulator } from "../../channel-client/core/accumulator";
import { gasEscrowDomain, toCompactSignature } from "../../channel-client/core/eip712";
import { receiptLeafFromHashes } from "../../channel-client/core/leaf";
import { sessionIdOf, type ChannelRef } from "../../channel-client/core/terms";
import { signPaymentTicket } from "../../channel-client/core/ticket";
import { hardhatAccount, makeTerms } from "../helpers/fixtures";
import { expectRevert } from "../helpers/revert";
import {
  ARBITRATOR_ROLE,
  ARBITRATOR_STAKE,
  balanceOf,
  DISPUTE_PARAMS,
  drawPanel,
  ETH_TERMS,
  GIG_STATUS,
  JUDGE_RUNTIME_HASH,
  KIND,
  PROVIDER_ROLE,
  quorumSignatures,
  STATUS,
  SYS,
  systemFixture,
  VERDICT,
  UNBONDING_DELAY,
  unsealedSystemFixture,
  type DisputeParams,
  type ResolutionMessage,
  type System,
} from "../helpers/system";

const BURN: Address = "0x000000000000000000000000000000000000dEaD";
const BPS = 10_000n;
const GIG_AMOUNT = parseEther("1");
const DEPOSIT = parseEther("2");
const DISPUTE_WINDOW = 3600;
const PACKAGE_HASH: Hex = keccak256(stringToBytes("challenge package"));
const RESOLUTION_HASH: Hex = keccak256(stringToBytes("resolution document"));
const OTHER_RESOLUTION_HASH: Hex = keccak256(stringToBytes("another panel's resolution document"));
const ICS_HASH: Hex = keccak256(stringToBytes("intent contract schema"));
const DELIVERABLE: Hex = keccak256(stringToBytes("deliverable bundle"));
const NO_STATE = { deposit: 0n, seq: 0n, amount: 0n, receiptRoot: zeroHash, feeBps: 0 };
const PROVIDER_BOND = parseEther("500");
const P = DISPUTE_PARAMS;

/* The numbers every gig case below works with: a 1-unit gig opened at lane 1 (ETH and LaborGas alike). */
/** Lane-1 bond: max(1 × 10 %, 0.01) × 3. */
const BOND = parseEther("0.3");
/** 20 % of a bond is burnt, 10 % is the arbitration fee. */
const BOND_BURN = parseEther("0.06");
const BOND_FEE = parseEther("0.03");
/** Appeal bonds: level 2 (lane 1 + round 1) and level 3. */
const APPEAL_BOND_1 = parseEther("0.9");
const APPEAL_BOND_2 = parseEther("2.7");
/** A refund and an SLA slash (in LaborGas) inside every cap. */
const REFUND = parseEther("0.75");
const SLASH = parseEther("2");
const SLASH_BURN = parseEther("0.4");
/** What an overturned signer loses (half its 5,000 LaborGas), to the appellant less the 20 % burn. */
const OVERTURN_SLASH = parseEther("2500");
const OVERTURN_BURN = parseEther("500");
/** What a member of a silent panel loses (1 % of 5,000 LaborGas), all burnt. */
const ABSENT_SLASH = parseEther("50");

type Kind = "ETH" | "ERC20";
const KINDS = ["ETH", "ERC20"] as const;
type ClosingState = { deposit: bigint; seq: bigint; amount: bigint; receiptRoot: Hex; feeBps: number };

const assetOf = (s: System, kind: Kind): Address => (kind === "ETH" ? zeroAddress : getAddress(s.token.address));
const ethValue = (kind: Kind, amount: bigint): bigint => (kind === "ETH" ? amount : 0n);
const gigSubject = (gigId: bigint): Hex => `0x${gigId.toString(16).padStart(64, "0")}`;
const sortKeys = (keys: LocalAccount[]): LocalAccount[] =>
  [...keys].sort((a, b) => (BigInt(a.address) < BigInt(b.address) ? -1 : 1));

async function mined(s: Pick<System, "publicClient">, hash: Hash): Promise<TransactionReceipt> {
  const receipt = await s.publicClient.waitForTransactionReceipt({ hash });
  expect(receipt.status).to.equal("success");
  return receipt;
}

function eventsOf(s: System, receipt: TransactionReceipt) {
  const logs = receipt.logs.filter((l) => getAddress(l.address) === getAddress(s.disputes.address));
  return parseEventLogs({ abi: s.disputes.abi, logs });
}

/*//////////////////////////////////////////////////////////////
                                GIGS
//////////////////////////////////////////////////////////////*/

/** A gig of `amount` funded by the client for the provider, accepted and delivered. */
async function deliveredGig(s: System, kind: Kind, amount = GIG_AMOUNT, asset = assetOf(s, kind)): Promise<bigint> {
  const deadline = BigInt(await time.latest()) + 86_400n;
  await mined(
    s,
    await s.gigs.write.fund([s.provider.account.address, asset, amount, ICS_HASH, Number(deadline), DISPUTE_WINDOW], {
      account: s.client.account,
      value: asset === zeroAddress ? amount : 0n,
    }),
  );
  const gigId = await s.gigs.read.gigCount();
  await s.gigs.write.accept([gigId], { account: s.provider.account });
  await s.gigs.write.deliver([gigId, DELIVERABLE, zeroHash], { account: s.provider.account });
  return gigId;
}

type GigCase = System & { kind: Kind; asset: Address; gigId: bigint; caseId: Hex; bond: bigint; openReceipt: TransactionReceipt };

async function openGigCase(s: System, kind: Kind, lane = 1): Promise<GigCase> {
  const gigId = await deliveredGig(s, kind);
  const caseId = await s.disputes.read.nextCaseId([KIND.Gig, gigSubject(gigId)]);
  const bond = (await s.disputes.read.bondFor([assetOf(s, kind), GIG_AMOUNT, lane])) as bigint;
  const openReceipt = await mined(
    s,
    await s.disputes.write.openGigCase([gigId, lane, PACKAGE_HASH], { account: s.client.account, value: ethValue(kind, bond) }),
  );
  return { ...s, kind, asset: assetOf(s, kind), gigId, caseId, bond, openReceipt };
}

async function contestedGigCase(s: System, kind: Kind): Promise<GigCase> {
  const c = await openGigCase(s, kind);
  await s.disputes.write.respond([c.caseId], { account: s.provider.account, value: ethValue(kind, c.bond) });
  return c;
}

type Drawn = GigCase & { panel: LocalAccount[] };

async function drawnGigCase(s: System, kind: Kind): Promise<Drawn> {
  const c = await contestedGigCase(s, kind);
  return { ...c, panel: await drawPanel(c, c.caseId) };
}

/** Uncontested: the respond window passed and the panel was drawn. */
async function uncontestedDrawnGigCase(s: System, kind: Kind): Promise<Drawn> {
  const c = await openGigCase(s, kind);
  await time.increase(P.respondWindow + 1);
  return { ...c, panel: await drawPanel(c, c.caseId) };
}

/** Round 0 decided ChallengerWins (REFUND, SLASH) by the first two of its panel. */
async function decidedGigCase(s: System, kind: Kind): Promise<Drawn> {
  const c = await drawnGigCase(s, kind);
  await submit(c, { verdict: VERDICT.ChallengerWins, refund: REFUND, slash: SLASH }, c.panel.slice(0, 2));
  return c;
}

/** Named fixtures per asset (loadFixture snapshots by function identity and name). */
function perKind<T>(name: string, make: (s: System, kind: Kind) => Promise<T>): Record<Kind, () => Promise<T>> {
  const out = {} as Record<Kind, () => Promise<T>>;
  for (const kind of KINDS) {
    const fixture = async () => make(await systemFixture(), kind);
    Object.defineProperty(fixture, "name", { value: `${name}${kind}` });
    out[kind] = fixture;
  }
  return out;
}

const SYSTEM = async function disputeSystem() {
  return systemFixture();
};
const OPEN = perKind("openGigCase", (s, k) => openGigCase(s, k));
const CONTESTED = perKind("contestedGigCase", contestedGigCase);
const DRAWN = perKind("drawnGigCase", drawnGigCase);
const UNCONTESTED_DRAWN = perKind("uncontestedDrawnGigCase", uncontestedDrawnGigCase);
const DECIDED = perKind("decidedGigCase", decidedGigCase);

/**
 * A system whose governance queued `params` and `terms` (per asset) and waited out the registry's unbonding delay,
 * so that they are in force for cases opened from here on (rules apply only to cases opened at or after their
 * `effectiveAt`). `unsealed`: governance can still grant itself the wiring roles (to slash a bond directly).
 */
async function systemUnder(
  overrides: { params?: Partial<DisputeParams>; terms?: [Address | "token", { bondFloor: bigint; stakeRate: bigint }][]; unsealed?: boolean },
): Promise<System> {
  const s = overrides.unsealed ? await unsealedSystemFixture() : await systemFixture();
  if (overrides.params) await s.disputes.write.setParams([{ ...P, ...overrides.params }]);
  for (const [asset, terms] of overrides.terms ?? []) {
    await s.disputes.write.setAssetTerms([asset === "token" ? s.token.address : asset, terms]);
  }
  await time.increase(UNBONDING_DELAY);
  if (overrides.params) expect(await s.disputes.read.params()).to.deep.equal({ ...P, ...overrides.params });
  return s;
}

/** Drawn ETH cases under changed rules (see `systemUnder`), for the refusals that need them. */
const DRAWN_HIGH_STAKE_RATE = async function drawnAtHighStakeRate() {
  return drawnGigCase(await systemUnder({ terms: [[zeroAddress, { bondFloor: ETH_TERMS.bondFloor, stakeRate: parseEther("5000") }]] }), "ETH");
};
const DRAWN_UNSEALED = async function drawnUnsealed() {
  return drawnGigCase(await unsealedSystemFixture(), "ETH");
};
/** A LaborGas case opened under a 500 % slash cap, in a system where governance can still slash directly. */
const DRAWN_WIDE_CAP_UNSEALED = async function drawnTokenCaseWideCapUnsealed() {
  return drawnGigCase(await systemUnder({ params: { slashCapBps: 50_000 }, unsealed: true }), "ERC20");
};
/** A case decided in round 0 that opened under rules allowing no appeal. */
const DECIDED_NO_APPEALS = async function decidedGigCaseWithoutAppeals() {
  return decidedGigCase(await systemUnder({ params: { maxAppeals: 0 } }), "ETH");
};

/** Signs `message` for the case by `signers` (ascending) and submits it from the watcher (no party). */
async function submit(
  c: System & { caseId: Hex },
  message: Omit<ResolutionMessage, "caseId" | "resolutionHash"> & Partial<ResolutionMessage>,
  signers: readonly LocalAccount[],
): Promise<TransactionReceipt> {
  const full: ResolutionMessage = { caseId: c.caseId, resolutionHash: RESOLUTION_HASH, ...message };
  const signatures = await quorumSignatures(c, full, signers);
  return mined(c, await c.disputes.write.submitVerdict([full, signatures], { account: c.watcher.account }));
}

async function finalize(c: System & { caseId: Hex }, recorded: ClosingState = NO_STATE): Promise<TransactionReceipt> {
  const { deadline } = await c.disputes.read.caseOf([c.caseId]);
  await time.increaseTo(deadline + 1);
  return mined(c, await c.disputes.write.finalize([c.caseId, recorded], { account: c.watcher.account }));
}

/** Who is paid in a case: the parties, the burn address, the manager, the gig escrow and the registry. */
const PARTIES = ["client", "payer", "provider", "burn", "manager", "gigs", "registry"] as const;
type Party = (typeof PARTIES)[number];
type Moves = Partial<Record<Party, bigint>>;

function addressesOf(c: System): Record<Party, Address> {
  return {
    client: c.client.account.address,
    payer: c.payerWallet.account.address,
    provider: c.provider.account.address,
    burn: BURN,
    manager: c.disputes.address,
    gigs: c.gigs.address,
    registry: c.registry.address,
  };
}

/** Balances of every party in the case's asset and in LaborGas (the registry's bond token). */
async function snapshot(c: System & { asset: Address }) {
  const who = addressesOf(c);
  const asset = await Promise.all(PARTIES.map((p) => balanceOf(c, c.asset, who[p])));
  const lgas = await Promise.all(PARTIES.map((p) => c.token.read.balanceOf([who[p]])));
  return { asset, lgas };
}

/**
 * Asserts each party's exact balance change since `before`: `asset` in the case's asset, `lgas` in LaborGas
 * (SLA and arbitrator slashes). For a LaborGas case both land in the same token, so they add up.
 */
async function expectMoves(c: System & { asset: Address }, before: Awaited<ReturnType<typeof snapshot>>, asset: Moves, lgas: Moves = {}) {
  const after = await snapshot(c);
  const same = getAddress(c.asset) === getAddress(c.token.address);
  const actual: Record<string, bigint> = {};
  const expected: Record<string, bigint> = {};
  PARTIES.forEach((p, i) => {
    if (same) {
      actual[p] = after.asset[i]! - before.asset[i]!;
      expected[p] = (asset[p] ?? 0n) + (lgas[p] ?? 0n);
    } else {
      actual[p] = after.asset[i]! - before.asset[i]!;
      expected[p] = asset[p] ?? 0n;
      actual[`${p} (LGAS)`] = after.lgas[i]! - before.lgas[i]!;
      expected[`${p} (LGAS)`] = lgas[p] ?? 0n;
    }
  });
  expect(actual).to.deep.equal(expected);
}

/** The manager holds exactly what it owes: the claimables of `owed` (and nothing for anyone else). */
async function expectHoldsClaimables(c: System & { asset: Address }, owed: Map<Address, bigint>): Promise<void> {
  let total = 0n;
  for (const i of [...SYS.arbitrators, SYS.otherRuntimeArbitrator, SYS.client, SYS.provider, SYS.payer]) {
    const a = getAddress(hardhatAccount(i).address);
    const amount = owed.get(a) ?? 0n;
    expect(await c.disputes.read.claimable([c.asset, a]), `claimable of ${a}`).to.equal(amount);
    total += amount;
  }
  expect(await balanceOf(c, c.asset, c.disputes.address), "manager balance").to.equal(total);
}

const owedTo = (signers: readonly LocalAccount[], share: bigint) =>
  new Map(signers.map((k) => [getAddress(k.address), share] as const));

async function expectNoLocks(c: System & { caseId: Hex }): Promise<void> {
  for (const i of [...SYS.arbitrators, SYS.otherRuntimeArbitrator]) {
    expect(await c.registry.read.locksOf([ARBITRATOR_ROLE, hardhatAccount(i).address]), `locks of arbitrator ${i}`).to.equal(0n);
  }
  expect(await c.registry.read.locksOf([PROVIDER_ROLE, c.provider.account.address])).to.equal(0n);
}

/** The Hardhat wallet client of `address`. */
function walletOf(c: System, address: Address) {
  const wallet = c.wallets.find((w) => getAddress(w.account.address) === getAddress(address));
  if (!wallet) throw new Error(`no wallet for ${address}`);
  return wallet;
}

/** `keys` in the order of their seats on the round's panel (the order the contract settles them in). */
async function seatOrder(c: System & { caseId: Hex }, round: number, keys: readonly LocalAccount[]): Promise<Address[]> {
  const wanted = new Set(keys.map((k) => getAddress(k.address)));
  return (await c.disputes.read.panelOf([c.caseId, round])).filter((a) => wanted.has(getAddress(a)));
}

const stakeOf = async (c: System, k: LocalAccount): Promise<bigint> => {
  const b = await c.registry.read.bondOf([ARBITRATOR_ROLE, k.address]);
  return b.active + b.pending;
};

/*//////////////////////////////////////////////////////////////
                              THE SUITE
//////////////////////////////////////////////////////////////*/

/**
 * A contested gig case in `token` (given dispute terms, both parties funded and approving), decided
 * RespondentWins by two of its drawn panel, with the appeal window over: ready to finalize.
 */
async function decidedTokenCase(s: System, token: Address): Promise<Hex> {
  // Every test token here has the same mint(address,uint256) and ERC-20 approve.
  const erc20 = await hre.viem.getContractAt("BlocklistToken", token);
  await s.disputes.write.setAssetTerms([token, { bondFloor: parseEther("0.01"), stakeRate: parseEther("1") }]);
  for (const w of [s.client, s.provider]) {
    await erc20.write.mint([w.account.address, parseEther("10")]);
    await erc20.write.approve([s.gigs.address, parseEther("10")], { account: w.account });
    await erc20.write.approve([s.disputes.address, parseEther("10")], { account: w.account });
  }
  const gigId = await deliveredGig(s, "ERC20", GIG_AMOUNT, token);
  const caseId = await s.disputes.read.nextCaseId([KIND.Gig, gigSubject(gigId)]);
  await s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account });
  await s.disputes.write.respond([caseId], { account: s.provider.account });
  const c = { ...s, caseId };
  const panel = await drawPanel(c, caseId);
  await submit(c, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n }, panel.slice(0, 2));
  const { deadline } = await s.disputes.read.caseOf([caseId]);
  await time.increaseTo(deadline + 1);
  return caseId;
}

describe("DisputeManager", function () {
  /*//////////////////////////////////////////////////////////////
                       PARAMETERS AND ASSET TERMS
  //////////////////////////////////////////////////////////////*/

  describe("parameters, asset terms and bonds", function () {
    it("computes max(value × riskBps, the asset's floor) × multiplier^level per asset", async function () {
      const s = await loadFixture(SYSTEM);
      const table: [asset: Address, value: bigint, level: number, bond: bigint][] = [
        [zeroAddress, 0n, 0, parseEther("0.01")],
        [zeroAddress, parseEther("0.05"), 1, parseEther("0.03")],
        [zeroAddress, parseEther("1"), 0, parseEther("0.1")],
        [zeroAddress, parseEther("1"), 3, parseEther("2.7")],
        [zeroAddress, parseEther("123.456"), 2, parseEther("111.1104")],
        [s.token.address, parseEther("0.1"), 1, parseEther("0.03")],
        [s.token.address, parseEther("2"), 2, parseEther("1.8")],
      ];
      for (const [asset, value, level, bond] of table) {
        expect(await s.disputes.read.bondFor([asset, value, level]), `${asset} ${value} @${level}`).to.equal(bond);
      }
    });

    it("a 6-decimal token has its own floor in its own units; an asset without terms is refused", async function () {
      const s = await loadFixture(SYSTEM);
      const six = await hre.viem.deployContract("SixDecimalToken");
      await expectRevert(s.disputes.read.bondFor([six.address, 1_000_000n, 0]), "AssetNotSupported", [getAddress(six.address)]);
      // Floor 0.5 SIX (500,000 base units); 1 SIX counts as 1 LaborGas (10^12 stake units per base unit).
      const terms = { bondFloor: 500_000n, stakeRate: 10n ** 30n };
      const receipt = await mined(s, await s.disputes.write.setAssetTerms([six.address, terms]));
      // An asset's first terms apply at once (nothing was exposed to it yet).
      const now = Number((await s.publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp);
      expect(eventsOf(s, receipt).map((e) => [e.eventName, e.args])).to.deep.equal([
        ["AssetTermsSet", { asset: getAddress(six.address), bondFloor: 500_000n, stakeRate: 10n ** 30n, effectiveAt: now }],
      ]);
      expect(await s.disputes.read.assetTerms([six.address])).to.deep.equal(terms);
      expect(await s.disputes.read.bondFor([six.address, 1_000_000n, 0])).to.equal(500_000n); // the floor
      expect(await s.disputes.read.bondFor([six.address, 1_000_000n, 1])).to.equal(1_500_000n);
      expect(await s.disputes.read.bondFor([six.address, 20_000_000n, 1])).to.equal(6_000_000n); // 10 % × 3
      // The 18-decimal floor of ETH would be absurd for it, and the reverse: each asset keeps its own.
      expect(await s.disputes.read.bondFor([zeroAddress, 1_000_000n, 0])).to.equal(ETH_TERMS.bondFloor);
    });

    it("opens a case in a 6-decimal token at its floor; a gig in an asset without terms is refused at funding (issue 28 item 4)", async function () {
      const s = await loadFixture(SYSTEM);
      const six = await hre.viem.deployContract("SixDecimalToken");
      await six.write.mint([s.client.account.address, 10_000_000n]);
      await six.write.approve([s.gigs.address, 10_000_000n], { account: s.client.account });
      await six.write.approve([s.disputes.address, 10_000_000n], { account: s.client.account });
      await expectRevert(deliveredGig(s, "ERC20", 2_000_000n, six.address), "AssetWithoutDisputeTerms", [getAddress(six.address)]);
      expect(await six.read.balanceOf([s.client.account.address])).to.equal(10_000_000n);
      await s.disputes.write.setAssetTerms([six.address, { bondFloor: 500_000n, stakeRate: 10n ** 30n }]);
      const gigId = await deliveredGig(s, "ERC20", 2_000_000n, six.address);
      await s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account });
      expect(await six.read.balanceOf([s.disputes.address])).to.equal(1_500_000n);
      expect(await six.read.balanceOf([s.client.account.address])).to.equal(10_000_000n - 2_000_000n - 1_500_000n);
    });

    it("setAssetTerms: a zero floor with a rate is refused; a zero rate stops new cases in the asset; only governance", async function () {
      const s = await loadFixture(SYSTEM);
      await expectRevert(s.disputes.write.setAssetTerms([zeroAddress, { bondFloor: 0n, stakeRate: 1n }]), "InvalidParams", ["bondFloor"]);
      // Hardhat does not name this revert (it reports "an unrecognized custom error"), so it is decoded here.
      const data = encodeFunctionData({ abi: s.disputes.abi, functionName: "setAssetTerms", args: [zeroAddress, ETH_TERMS] });
      const raw = await hre.network.provider
        .send("eth_call", [{ from: s.stranger.account.address, to: s.disputes.address, data }, "latest"])
        .then(
          () => expect.fail("setAssetTerms from a stranger succeeded"),
          (e: { data?: { data?: Hex } | Hex }) => (typeof e.data === "string" ? e.data : e.data?.data),
        );
      const decoded = decodeErrorResult({ abi: s.disputes.abi, data: raw! });
      expect([decoded.errorName, decoded.args]).to.deep.equal(["NotGovernance", [getAddress(s.stranger.account.address)]]);
      // A change to an asset that has terms waits the registry's unbonding delay; until then the old terms hold.
      const receipt = await mined(s, await s.disputes.write.setAssetTerms([zeroAddress, { bondFloor: 0n, stakeRate: 0n }]));
      const now = BigInt((await s.publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp);
      expect(eventsOf(s, receipt).map((e) => [e.eventName, e.args])).to.deep.equal([
        ["AssetTermsSet", { asset: zeroAddress, bondFloor: 0n, stakeRate: 0n, effectiveAt: Number(now + UNBONDING_DELAY) }],
      ]);
      expect(await s.disputes.read.assetTerms([zeroAddress])).to.deep.equal(ETH_TERMS);
      // A gig delivered just before the change applies, with a dispute window that outlasts it.
      await time.increaseTo(now + UNBONDING_DELAY - 10n);
      expect(await s.disputes.read.assetTerms([zeroAddress])).to.deep.equal(ETH_TERMS);
      const deadline = now + UNBONDING_DELAY + 86_400n;
      await mined(s, await s.gigs.write.fund([s.provider.account.address, zeroAddress, GIG_AMOUNT, ICS_HASH, Number(deadline), 86_400], { account: s.client.account, value: GIG_AMOUNT }));
      const gigId = await s.gigs.read.gigCount();
      await s.gigs.write.accept([gigId], { account: s.provider.account });
      await s.gigs.write.deliver([gigId, DELIVERABLE, zeroHash], { account: s.provider.account });
      await time.increaseTo(now + UNBONDING_DELAY);
      expect(await s.disputes.read.assetTerms([zeroAddress])).to.deep.equal({ bondFloor: 0n, stakeRate: 0n });
      // No new gig in the asset can be funded any more (issue 28: only disputable money is escrowed)…
      await expectRevert(
        s.gigs.write.fund([s.provider.account.address, zeroAddress, GIG_AMOUNT, ICS_HASH, Number(deadline), 86_400], { account: s.client.account, value: GIG_AMOUNT }),
        "AssetWithoutDisputeTerms",
      );
      // …and no new case in it can be opened.
      await expectRevert(
        s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account, value: BOND }),
        "AssetNotSupported",
        [zeroAddress],
      );
    });

    it("setParams refuses every parameter out of its bounds (InvalidParams names it) and accepts the bounds themselves", async function () {
      const s = await loadFixture(SYSTEM);
      const DAY = 24 * 3600;
      const bad: [Partial<DisputeParams>, string][] = [
        [{ burnBps: 9_001 }, "burnBps + feeBps > 10000"],
        [{ burnBps: 10_001, feeBps: 0 }, "burnBps + feeBps > 10000"],
        [{ riskBps: 10_001 }, "riskBps > 10000"],
        [{ feeBps: 3_001 }, "feeBps"],
        [{ laneMultiplier: 0 }, "laneMultiplier"],
        [{ laneMultiplier: 11 }, "laneMultiplier"],
        [{ panelSize: 0 }, "panelSize"],
        [{ panelSize: 9 }, "panelSize"],
        [{ maxAppeals: 3 }, "maxAppeals"],
        [{ overturnSlashBps: 0 }, "overturnSlashBps"],
        [{ overturnSlashBps: 10_001 }, "overturnSlashBps"],
        [{ absentSlashBps: 1_001 }, "absentSlashBps"],
        [{ slashCapBps: 50_001 }, "slashCapBps"],
        [{ respondWindow: 59 }, "respondWindow"],
        [{ respondWindow: 7 * DAY + 1 }, "respondWindow"],
        [{ decisionWindow: 59 }, "decisionWindow"],
        [{ decisionWindow: 14 * DAY + 1 }, "decisionWindow"],
        [{ appealWindow: 59 }, "appealWindow"],
        [{ appealWindow: 7 * DAY + 1 }, "appealWindow"],
        [{ slowPathTimeout: P.decisionWindow - 1 }, "slowPathTimeout"],
        [{ slowPathTimeout: 60 * DAY + 1 }, "slowPathTimeout"],
        [{ settledDisputeWindow: 59 }, "settledDisputeWindow"],
        [{ settledDisputeWindow: 30 * DAY + 1 }, "settledDisputeWindow"],
      ];
      for (const [override, reason] of bad) {
        await expectRevert(s.disputes.write.setParams([{ ...P, ...override }]), "InvalidParams", [reason]);
      }
      await expectRevert(s.disputes.write.setParams([P], { account: s.stranger.account }), "NotGovernance", [
        getAddress(s.stranger.account.address),
      ]);
      expect(await s.disputes.read.params()).to.deep.equal(P);
      const edges: Partial<DisputeParams>[] = [
        { burnBps: 7_000, feeBps: 3_000, riskBps: 10_000, laneMultiplier: 10, panelSize: 8, maxAppeals: 2 },
        { riskBps: 0, burnBps: 0, feeBps: 0, laneMultiplier: 1, panelSize: 1, maxAppeals: 0, overturnSlashBps: 10_000 },
        { overturnSlashBps: 1, absentSlashBps: 1_000, slashCapBps: 50_000 },
        { respondWindow: 60, decisionWindow: 60, appealWindow: 60, slowPathTimeout: 60, settledDisputeWindow: 60 },
        {
          respondWindow: 7 * DAY,
          decisionWindow: 14 * DAY,
          appealWindow: 7 * DAY,
          slowPathTimeout: 60 * DAY,
          settledDisputeWindow: 30 * DAY,
        },
      ];
      let last: { next: DisputeParams; effectiveAt: number } | undefined;
      for (const edge of edges) {
        const next = { ...P, ...edge };
        const receipt = await mined(s, await s.disputes.write.setParams([next]));
        const effectiveAt = Number((await s.publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp + UNBONDING_DELAY);
        expect(eventsOf(s, receipt).map((e) => [e.eventName, e.args])).to.deep.equal([["ParamsSet", { params: next, effectiveAt }]]);
        // Queued, not in force: each new set supersedes the queued one, and the set in force stays P.
        expect(await s.disputes.read.latestParams()).to.deep.equal([next, effectiveAt]);
        expect(await s.disputes.read.params()).to.deep.equal(P);
        last = { next, effectiveAt };
      }
      await time.increaseTo(last!.effectiveAt);
      expect(await s.disputes.read.params()).to.deep.equal(last!.next);
    });

    it("hashes resolutions under its own EIP-712 domain", async function () {
      const s = await loadFixture(SYSTEM);
      const message = { caseId: PACKAGE_HASH, verdict: 1, refund: 5n, slash: 7n, resolutionHash: RESOLUTION_HASH };
      const expected = hashTypedData({
        domain: s.domain,
        types: {
          Resolution: [
            { name: "caseId", type: "bytes32" },
            { name: "verdict", type: "uint8" },
            { name: "refund", type: "uint128" },
            { name: "slash", type: "uint128" },
            { name: "resolutionHash", type: "bytes32" },
          ],
        },
        primaryType: "Resolution",
        message,
      });
      expect(await s.disputes.read.hashResolution([message])).to.equal(expected);
      expect(await s.disputes.read.governance()).to.equal(getAddress(s.governance.account.address));
    });
  });

  /*//////////////////////////////////////////////////////////////
                       OPENING, CONTESTING, DRAWING
  //////////////////////////////////////////////////////////////*/

  for (const kind of KINDS) {
    describe(`opening and contesting a gig case (${kind})`, function () {
      it("opens: takes the bond, freezes the gig, records the case with its respond window and deadline", async function () {
        const c = await loadFixture(OPEN[kind]);
        const openedAt = BigInt((await c.publicClient.getBlock({ blockNumber: c.openReceipt.blockNumber })).timestamp);
        const respondBy = Number(openedAt) + P.respondWindow;
        expect(c.bond).to.equal(BOND);
        const stored = await c.disputes.read.caseOf([c.caseId]);
        expect(stored).to.deep.include({
          challenger: getAddress(c.client.account.address),
          respondent: getAddress(c.provider.account.address),
          related: zeroAddress,
          asset: c.asset,
          kind: KIND.Gig,
          status: STATUS.Open,
          lane: 1,
          round: 0,
          value: GIG_AMOUNT,
          challengerBond: BOND,
          respondentBond: 0n,
          packageHash: PACKAGE_HASH,
          respondBy,
          deadline: respondBy + P.decisionWindow,
        });
        expect(eventsOf(c, c.openReceipt).map((e) => [e.eventName, e.args])).to.deep.equal([
          [
            "CaseOpened",
            {
              caseId: c.caseId,
              kind: KIND.Gig,
              subjectId: gigSubject(c.gigId),
              challenger: getAddress(c.client.account.address),
              respondent: getAddress(c.provider.account.address),
              lane: 1,
              value: GIG_AMOUNT,
              bond: BOND,
              packageHash: PACKAGE_HASH,
              leaf: zeroHash,
              respondBy,
            },
          ],
        ]);
        expect(await balanceOf(c, c.asset, c.disputes.address)).to.equal(BOND);
        expect((await c.gigs.read.gigOf([c.gigId])).status).to.equal(GIG_STATUS.Disputed);
        // The gig's own lock on the provider's bond stays; the gig case adds none.
        expect(await c.registry.read.locksOf([PROVIDER_ROLE, c.provider.account.address])).to.equal(1n);
      });

      it("refuses a case from anyone but the client, at lane 2, without a package, with the wrong bond, or twice", async function () {
        const s = await loadFixture(SYSTEM);
        const gigId = await deliveredGig(s, kind);
        const open = (from: typeof s.client, lane: number, pkg: Hex, value: bigint) =>
          s.disputes.write.openGigCase([gigId, lane, pkg], { account: from.account, value });
        const v = ethValue(kind, BOND);
        await expectRevert(open(s.stranger, 1, PACKAGE_HASH, v), "NotTheChallengerSide", [
          gigSubject(gigId),
          getAddress(s.stranger.account.address),
        ]);
        await expectRevert(open(s.client, 2, PACKAGE_HASH, v), "InvalidLane", [2]);
        await expectRevert(open(s.client, 1, zeroHash, v), "ZeroPackageHash", []);
        if (kind === "ETH") await expectRevert(open(s.client, 1, PACKAGE_HASH, BOND - 1n), "BondValueMismatch", [BOND - 1n, BOND]);
        else await expectRevert(open(s.client, 1, PACKAGE_HASH, 1n), "BondValueMismatch", [1n, 0n]);
        const caseId = await s.disputes.read.nextCaseId([KIND.Gig, gigSubject(gigId)]);
        await open(s.client, 1, PACKAGE_HASH, v);
        await expectRevert(open(s.client, 1, PACKAGE_HASH, v), "CaseAlreadyOpen", [gigSubject(gigId), caseId]);
      });

      it("refuses a case once the dispute window closed", async function () {
        const s = await loadFixture(SYSTEM);
        const gigId = await deliveredGig(s, kind);
        await time.increase(DISPUTE_WINDOW);
        await expectRevert(
          s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account, value: ethValue(kind, BOND) }),
          "DisputeWindowClosed",
          undefined,
          s.gigs.abi,
        );
      });

      it("only the respondent contests, with the matching bond, which requests the panel's randomness", async function () {
        const c = await loadFixture(OPEN[kind]);
        await expectRevert(
          c.disputes.write.respond([c.caseId], { account: c.stranger.account, value: ethValue(kind, BOND) }),
          "NotTheRespondent",
          [c.caseId, getAddress(c.stranger.account.address)],
        );
        if (kind === "ETH") {
          await expectRevert(c.disputes.write.respond([c.caseId], { account: c.provider.account, value: BOND + 1n }), "BondValueMismatch", [
            BOND + 1n,
            BOND,
          ]);
        }
        const receipt = await mined(
          c,
          await c.disputes.write.respond([c.caseId], { account: c.provider.account, value: ethValue(kind, BOND) }),
        );
        expect(eventsOf(c, receipt).map((e) => [e.eventName, e.args])).to.deep.equal([
          ["CaseContested", { caseId: c.caseId, respondent: getAddress(c.provider.account.address), bond: BOND }],
          ["PanelRequested", { caseId: c.caseId, round: 0, ticket: receipt.blockNumber + 1n }],
        ]);
        expect((await c.disputes.read.caseOf([c.caseId])).respondentBond).to.equal(BOND);
        expect((await c.disputes.read.roundOf([c.caseId, 0])).drawTicket).to.equal(receipt.blockNumber + 1n);
        expect(await balanceOf(c, c.asset, c.disputes.address)).to.equal(2n * BOND);
        const { respondBy } = await c.disputes.read.caseOf([c.caseId]);
        await expectRevert(
          c.disputes.write.respond([c.caseId], { account: c.provider.account, value: ethValue(kind, BOND) }),
          "ContestClosed",
          [c.caseId, respondBy],
        );
      });
    });
  }

  describe("contest window and draw (ETH)", function () {
    it("refuses a contest after the respond window, and after anyone requested the draw", async function () {
      const c = await loadFixture(OPEN.ETH);
      const { respondBy } = await c.disputes.read.caseOf([c.caseId]);
      await time.increaseTo(respondBy + 1);
      await expectRevert(c.disputes.write.respond([c.caseId], { account: c.provider.account, value: BOND }), "ContestClosed", [
        c.caseId,
        respondBy,
      ]);
      const c2 = await loadFixture(OPEN.ETH);
      await time.increaseTo(respondBy + 1);
      await c2.disputes.write.drawPanel([c2.caseId], { account: c2.watcher.account });
      await expectRevert(c2.disputes.write.respond([c2.caseId], { account: c2.provider.account, value: BOND }), "ContestClosed", [
        c2.caseId,
        respondBy,
      ]);
    });

    it("refuses to draw an uncontested case while its respond window is open (RespondWindowOpen)", async function () {
      const c = await loadFixture(OPEN.ETH);
      const { respondBy } = await c.disputes.read.caseOf([c.caseId]);
      await expectRevert(c.disputes.write.drawPanel([c.caseId], { account: c.watcher.account }), "RespondWindowOpen", [c.caseId, respondBy]);
      await time.increaseTo(respondBy - 10);
      await expectRevert(c.disputes.write.drawPanel([c.caseId], { account: c.watcher.account }), "RespondWindowOpen", [c.caseId, respondBy]);
      await time.increaseTo(respondBy + 1);
      const receipt = await mined(c, await c.disputes.write.drawPanel([c.caseId], { account: c.watcher.account }));
      expect(eventsOf(c, receipt).map((e) => [e.eventName, e.args])).to.deep.equal([
        ["PanelRequested", { caseId: c.caseId, round: 0, ticket: receipt.blockNumber + 1n }],
      ]);
      expect((await c.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.Open);
    });

    it("draws only once the target block is mined (RandomnessNotReady), then seats three arbitrators and locks their stakes", async function () {
      const c = await loadFixture(CONTESTED.ETH);
      const { drawTicket } = await c.disputes.read.roundOf([c.caseId, 0]);
      await expectRevert(c.disputes.write.drawPanel([c.caseId], { account: c.watcher.account }), "RandomnessNotReady", [c.caseId, drawTicket]);
      await hre.network.provider.send("hardhat_mine", ["0x1"]);
      const receipt = await mined(c, await c.disputes.write.drawPanel([c.caseId], { account: c.watcher.account }));
      const now = Number((await c.publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp);
      const panel = await c.disputes.read.panelOf([c.caseId, 0]);
      expect(panel).to.have.length(3);
      expect(new Set(panel).size).to.equal(3);
      const eligible = SYS.arbitrators.map((i) => getAddress(hardhatAccount(i).address));
      for (const a of panel) expect(eligible).to.include(a);
      const events = eventsOf(c, receipt);
      expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([
        ["PanelDrawn", { caseId: c.caseId, round: 0, panel, deadline: now + P.decisionWindow }],
      ]);
      expect(await c.disputes.read.caseOf([c.caseId])).to.deep.include({ status: STATUS.Deliberating, deadline: now + P.decisionWindow });
      for (const a of eligible) {
        expect(await c.registry.read.locksOf([ARBITRATOR_ROLE, a])).to.equal(panel.includes(a) ? 1n : 0n);
      }
      // A seated arbitrator cannot walk away with its stake.
      await expectRevert(
        c.registry.write.requestUnbond([ARBITRATOR_ROLE, 1n], { account: walletOf(c, panel[0]!).account }),
        "BondIsLocked",
        [ARBITRATOR_ROLE, panel[0], 1n],
        c.registry.abi,
      );
      await expectRevert(c.disputes.write.drawPanel([c.caseId]), "WrongCaseStatus", [c.caseId, STATUS.Deliberating]);
    });

    it("requests new randomness when the old one expired (more than 256 blocks)", async function () {
      const c = await loadFixture(CONTESTED.ETH);
      const { drawTicket } = await c.disputes.read.roundOf([c.caseId, 0]);
      await hre.network.provider.send("hardhat_mine", ["0x120"]); // 288 blocks
      const receipt = await mined(c, await c.disputes.write.drawPanel([c.caseId], { account: c.watcher.account }));
      expect(eventsOf(c, receipt).map((e) => [e.eventName, e.args])).to.deep.equal([
        ["PanelRequested", { caseId: c.caseId, round: 0, ticket: receipt.blockNumber + 1n }],
      ]);
      expect((await c.disputes.read.roundOf([c.caseId, 0])).drawTicket).to.not.equal(drawTicket);
      expect(await c.disputes.read.panelOf([c.caseId, 0])).to.deep.equal([]);
      await drawPanel(c, c.caseId);
      expect(await c.disputes.read.panelOf([c.caseId, 0])).to.have.length(3);
    });

    it("a round not drawn by its deadline is refused a draw and goes to the slow path on expire", async function () {
      const c = await loadFixture(CONTESTED.ETH);
      const { deadline } = await c.disputes.read.caseOf([c.caseId]);
      await expectRevert(c.disputes.write.expire([c.caseId, NO_STATE]), "DeadlineNotPassed", [c.caseId, deadline]);
      await time.increaseTo(deadline + 1);
      await expectRevert(c.disputes.write.drawPanel([c.caseId]), "DeadlinePassed", [c.caseId, deadline]);
      const receipt = await mined(c, await c.disputes.write.expire([c.caseId, NO_STATE], { account: c.watcher.account }));
      const now = Number((await c.publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp);
      expect(eventsOf(c, receipt).map((e) => [e.eventName, e.args])).to.deep.equal([
        ["CaseToSlowPath", { caseId: c.caseId, round: 2, deadline: now + P.slowPathTimeout }],
      ]);
      expect(await c.disputes.read.caseOf([c.caseId])).to.deep.include({ status: STATUS.SlowPath, round: 2 });
    });

    it("a pool too small for the panel sends the case to the slow path", async function () {
      // Removed before the contest requests the randomness: the draw's snapshot holds two arbitrators.
      const c = await loadFixture(OPEN.ETH);
      for (const i of SYS.arbitrators.slice(2)) await c.registry.write.removeArbitrator([hardhatAccount(i).address]);
      await c.disputes.write.respond([c.caseId], { account: c.provider.account, value: BOND });
      await hre.network.provider.send("hardhat_mine", ["0x2"]);
      const receipt = await mined(c, await c.disputes.write.drawPanel([c.caseId], { account: c.watcher.account }));
      expect(eventsOf(c, receipt).map((e) => e.eventName)).to.deep.equal(["CaseToSlowPath"]);
      expect(await c.disputes.read.caseOf([c.caseId])).to.deep.include({ status: STATUS.SlowPath, round: 2 });
      expect(await c.disputes.read.panelOf([c.caseId, 0])).to.deep.equal([]);
    });
  });

  /*//////////////////////////////////////////////////////////////
                          SUBMITTING A VERDICT
  //////////////////////////////////////////////////////////////*/

  describe("submitVerdict refusals (ETH)", function () {
    const CAP = parseEther("2000"); // 1 ETH = 1,000 LaborGas; slashCapBps 200 %
    type Row = {
      name: string;
      message?: Partial<ResolutionMessage>;
      /** Signers by position in the sorted panel; "out" is an arbitrator not on it. */
      signers?: (string | number)[];
      tamper?: (sigs: { r: Hex; vs: Hex }[]) => void;
      prepare?: (c: Drawn) => Promise<void>;
      /** A drawn ETH case other than DRAWN.ETH's (rules changed before it opened, or an unsealed system). */
      fixture?: () => Promise<Drawn>;
      error: string;
      args: (c: Drawn, out: LocalAccount) => readonly unknown[];
    };
    const rows: Row[] = [
      { name: "a signer not on the panel", signers: [0, "out"], error: "NotOnPanel", args: (c, out) => [c.caseId, getAddress(out.address)] },
      { name: "signers in descending order", signers: [1, 0], error: "SignersNotAscending", args: (c) => [1n, getAddress(c.panel[0]!.address)] },
      { name: "one signer twice", signers: [0, 0], error: "SignersNotAscending", args: (c) => [1n, getAddress(c.panel[0]!.address)] },
      {
        name: "a malformed signature",
        signers: [0, 1],
        tamper: (sigs) => {
          sigs[1] = { r: zeroHash, vs: sigs[1]!.vs };
        },
        error: "InvalidSignature",
        args: () => [1n],
      },
      { name: "one signature of three", signers: [0], error: "SupermajorityNotMet", args: () => [1n, 2n] },
      { name: "no signature", signers: [], error: "SupermajorityNotMet", args: () => [0n, 2n] },
      {
        name: "a refund above the value",
        message: { verdict: VERDICT.ChallengerWins, refund: GIG_AMOUNT + 1n },
        error: "RefundExceedsValue",
        args: (c) => [c.caseId, GIG_AMOUNT + 1n, GIG_AMOUNT],
      },
      {
        name: "a refund with RespondentWins",
        message: { verdict: VERDICT.RespondentWins, refund: 1n },
        error: "RemedyNotAllowed",
        args: () => [VERDICT.RespondentWins, 1n, 0n],
      },
      {
        name: "a slash with NoFault",
        message: { verdict: VERDICT.NoFault, refund: 1n, slash: 1n },
        error: "RemedyNotAllowed",
        args: () => [VERDICT.NoFault, 1n, 1n],
      },
      {
        name: "a refund with Undecidable",
        message: { verdict: VERDICT.Undecidable, refund: 1n },
        error: "RemedyNotAllowed",
        args: () => [VERDICT.Undecidable, 1n, 0n],
      },
      { name: "verdict None", message: { verdict: VERDICT.None }, error: "InvalidVerdict", args: () => [VERDICT.None] },
      {
        name: "a slash above the cap",
        message: { verdict: VERDICT.ChallengerWins, slash: CAP + 1n },
        error: "SlashAboveCap",
        args: (c) => [c.caseId, CAP + 1n, CAP],
      },
      {
        name: "stake at risk not above the value (the asset's stake rate raised to 5,000 LaborGas per ETH)",
        message: { verdict: VERDICT.RespondentWins },
        // The case opened under that rate (a case keeps the rate in force when it opened).
        fixture: DRAWN_HIGH_STAKE_RATE,
        error: "StakeAtRiskTooLow",
        args: () => [parseEther("5000"), parseEther("5000")],
      },
      {
        name: "stake at risk not above value plus slash (a signer's stake slashed to 1,000)",
        message: { verdict: VERDICT.ChallengerWins, slash: CAP },
        fixture: DRAWN_UNSEALED,
        prepare: async (c) => {
          await c.registry.write.grantRole([await c.registry.read.SLASHER_ROLE(), c.governance.account.address]);
          await c.registry.write.slash([ARBITRATOR_ROLE, c.panel[0]!.address, parseEther("4000"), c.governance.account.address, 0]);
        },
        error: "StakeAtRiskTooLow",
        args: () => [parseEther("3000"), parseEther("3000")],
      },
      {
        name: "a verdict after the decision deadline",
        prepare: async (c) => {
          const { deadline } = await c.disputes.read.caseOf([c.caseId]);
          await time.increaseTo(deadline + 1);
        },
        error: "DeadlinePassed",
        args: () => [],
      },
    ];
    for (const row of rows) {
      it(`refuses ${row.name} with ${row.error}`, async function () {
        const c = await loadFixture(row.fixture ?? DRAWN.ETH);
        const out = hardhatAccount(SYS.arbitrators.find((i) => !c.panel.some((k) => k.address === hardhatAccount(i).address))!);
        await row.prepare?.(c);
        const positions = row.signers ?? [0, 1];
        const signers = positions.map((p) => (p === "out" ? out : c.panel[p as number]!));
        const ordered = row.signers?.includes("out") ? sortKeys(signers) : signers;
        const full: ResolutionMessage = {
          caseId: c.caseId,
          verdict: VERDICT.RespondentWins,
          refund: 0n,
          slash: 0n,
          resolutionHash: RESOLUTION_HASH,
          ...row.message,
        };
        const sigs = await quorumSignatures(c, full, ordered);
        row.tamper?.(sigs);
        const { deadline } = await c.disputes.read.caseOf([c.caseId]);
        const args = row.error === "DeadlinePassed" ? [c.caseId, deadline] : row.args(c, out);
        await expectRevert(c.disputes.write.submitVerdict([full, sigs], { account: c.watcher.account }), row.error, args);
        expect((await c.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.Deliberating);
      });
    }

    it("refuses a verdict before the panel is drawn, and on an unknown case", async function () {
      const c = await loadFixture(CONTESTED.ETH);
      const full: ResolutionMessage = { caseId: c.caseId, verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n, resolutionHash: RESOLUTION_HASH };
      await expectRevert(c.disputes.write.submitVerdict([full, []]), "WrongCaseStatus", [c.caseId, STATUS.Open]);
      await expectRevert(c.disputes.write.submitVerdict([{ ...full, caseId: PACKAGE_HASH }, []]), "UnknownCase", [PACKAGE_HASH]);
    });

    it("accepts the whole panel; records the signers' mask and opens the appeal window", async function () {
      const c = await loadFixture(DRAWN.ETH);
      const receipt = await submit(c, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n }, c.panel);
      const now = Number((await c.publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp);
      const seats = await c.disputes.read.panelOf([c.caseId, 0]);
      expect(seats.length).to.equal(3);
      expect(eventsOf(c, receipt).map((e) => [e.eventName, e.args])).to.deep.equal([
        [
          "VerdictSubmitted",
          {
            caseId: c.caseId,
            round: 0,
            verdict: VERDICT.RespondentWins,
            refund: 0n,
            slash: 0n,
            resolutionHash: RESOLUTION_HASH,
            signedMask: 0b111,
            appealEndsAt: now + P.appealWindow,
          },
        ],
      ]);
      expect(await c.disputes.read.caseOf([c.caseId])).to.deep.include({ status: STATUS.Decided, deadline: now + P.appealWindow });
      await expectRevert(c.disputes.write.finalize([c.caseId, NO_STATE]), "DeadlineNotPassed", [c.caseId, now + P.appealWindow]);
      await expectRevert(
        submit(c, { verdict: VERDICT.ChallengerWins, refund: 0n, slash: 0n }, c.panel),
        "WrongCaseStatus",
        [c.caseId, STATUS.Decided],
      );
    });
  });

  /*//////////////////////////////////////////////////////////////
                   SETTLEMENT OF EVERY VERDICT, BOTH ASSETS
  //////////////////////////////////////////////////////////////*/

  for (const kind of KINDS) {
    describe(`settlement after the appeal window (${kind})`, function () {
      it("ChallengerWins: refund, SLA slash (burn share burnt), the challenger wins the bonds less burn and fee; the fee is the signers'", async function () {
        const c = await loadFixture(DECIDED[kind]);
        const before = await snapshot(c);
        const receipt = await finalize(c);
        await expectMoves(
          c,
          before,
          {
            client: REFUND + 2n * BOND - BOND_BURN - BOND_FEE,
            provider: GIG_AMOUNT - REFUND,
            burn: BOND_BURN,
            manager: -2n * BOND + BOND_FEE,
            gigs: -GIG_AMOUNT,
          },
          { client: SLASH - SLASH_BURN, burn: SLASH_BURN, registry: -SLASH },
        );
        const share = BOND_FEE / 2n;
        await expectHoldsClaimables(c, owedTo(c.panel.slice(0, 2), share));
        const resolved = eventsOf(c, receipt).find((e) => e.eventName === "CaseResolved")!;
        expect(resolved.args).to.deep.equal({
          caseId: c.caseId,
          verdict: VERDICT.ChallengerWins,
          refunded: REFUND,
          slashed: SLASH,
          resolutionHash: RESOLUTION_HASH,
          toChallenger: 2n * BOND - BOND_BURN - BOND_FEE,
          toRespondent: 0n,
          burned: BOND_BURN,
          arbitrationFees: BOND_FEE,
        });
        expect(
          eventsOf(c, receipt)
            .filter((e) => e.eventName === "ArbitrationFeeEarned")
            .map((e) => e.args),
        ).to.deep.equal(
          (await seatOrder(c, 0, c.panel.slice(0, 2))).map((arbitrator) => ({ caseId: c.caseId, arbitrator, asset: c.asset, amount: share })),
        );
        expect((await c.registry.read.bondOf([PROVIDER_ROLE, c.provider.account.address])).active).to.equal(PROVIDER_BOND - SLASH);
        expect((await c.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.Resolved);
        expect((await c.gigs.read.gigOf([c.gigId])).status).to.equal(GIG_STATUS.Released);
        // Nobody's stake moved: the third member did not sign and loses nothing.
        for (const k of c.panel) expect(await stakeOf(c, k)).to.equal(ARBITRATOR_STAKE);
        await expectNoLocks(c);
      });

      it("the signers claim their fees exactly once (NothingToClaim after), and the manager ends empty", async function () {
        const c = await loadFixture(DECIDED[kind]);
        await finalize(c);
        const share = BOND_FEE / 2n;
        const [a, b] = c.panel;
        const third = c.panel[2]!;
        await expectRevert(c.disputes.write.claim([c.asset], { account: walletOf(c, third.address).account }), "NothingToClaim", [
          c.asset,
          getAddress(third.address),
        ]);
        for (const k of [a!, b!]) {
          const before = await balanceOf(c, c.asset, k.address);
          const receipt = await mined(c, await c.disputes.write.claim([c.asset], { account: walletOf(c, k.address).account }));
          const gas = kind === "ETH" ? receipt.gasUsed * receipt.effectiveGasPrice : 0n;
          expect((await balanceOf(c, c.asset, k.address)) - before + gas).to.equal(share);
          expect(eventsOf(c, receipt).map((e) => [e.eventName, e.args])).to.deep.equal([
            ["Claimed", { asset: c.asset, account: getAddress(k.address), amount: share }],
          ]);
          await expectRevert(c.disputes.write.claim([c.asset], { account: walletOf(c, k.address).account }), "NothingToClaim", [
            c.asset,
            getAddress(k.address),
          ]);
        }
        await expectHoldsClaimables(c, new Map());
      });

      it("ChallengerWins with the whole value refunded: the gig ends Refunded", async function () {
        const c = await loadFixture(DRAWN[kind]);
        await submit(c, { verdict: VERDICT.ChallengerWins, refund: GIG_AMOUNT, slash: 0n }, c.panel);
        const before = await snapshot(c);
        await finalize(c);
        await expectMoves(c, before, {
          client: GIG_AMOUNT + 2n * BOND - BOND_BURN - BOND_FEE,
          burn: BOND_BURN,
          manager: -2n * BOND + BOND_FEE,
          gigs: -GIG_AMOUNT,
        });
        await expectHoldsClaimables(c, owedTo(c.panel, BOND_FEE / 3n));
        expect((await c.gigs.read.gigOf([c.gigId])).status).to.equal(GIG_STATUS.Refunded);
      });

      it("ChallengerWins slashes only what the provider's bond still holds", async function () {
        // A cap high enough for the whole bond: ETH's is 2,000 LaborGas; LaborGas's is raised for the purpose
        // (before the case opened: a case keeps its opening rules), and governance may still slash directly.
        const c = await loadFixture(kind === "ERC20" ? DRAWN_WIDE_CAP_UNSEALED : DRAWN[kind]);
        const slash = kind === "ETH" ? parseEther("2000") : parseEther("5");
        if (kind === "ERC20") {
          // 5 LaborGas of a 1-LaborGas gig is the most the cap allows; take the bond down to 3 first.
          await c.registry.write.grantRole([await c.registry.read.SLASHER_ROLE(), c.governance.account.address]);
          await c.registry.write.slash([PROVIDER_ROLE, c.provider.account.address, PROVIDER_BOND - parseEther("3"), BURN, 10_000]);
        }
        const held = kind === "ETH" ? PROVIDER_BOND : parseEther("3");
        await submit(c, { verdict: VERDICT.ChallengerWins, refund: 0n, slash }, c.panel.slice(0, 2));
        const before = await snapshot(c);
        const receipt = await finalize(c);
        const heldBurn = (held * BigInt(P.burnBps)) / BPS;
        await expectMoves(
          c,
          before,
          { client: 2n * BOND - BOND_BURN - BOND_FEE, provider: GIG_AMOUNT, burn: BOND_BURN, manager: -2n * BOND + BOND_FEE, gigs: -GIG_AMOUNT },
          { client: held - heldBurn, burn: heldBurn, registry: -held },
        );
        const resolved = eventsOf(c, receipt).find((e) => e.eventName === "CaseResolved")!;
        expect((resolved.args as { slashed: bigint }).slashed).to.equal(held);
        const bond = await c.registry.read.bondOf([PROVIDER_ROLE, c.provider.account.address]);
        expect(bond.active + bond.pending).to.equal(0n);
      });

      it("RespondentWins: no refund; the provider wins the bonds less burn and fee", async function () {
        const c = await loadFixture(DRAWN[kind]);
        await submit(c, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n }, c.panel.slice(1));
        const before = await snapshot(c);
        await finalize(c);
        await expectMoves(c, before, {
          provider: GIG_AMOUNT + 2n * BOND - BOND_BURN - BOND_FEE,
          burn: BOND_BURN,
          manager: -2n * BOND + BOND_FEE,
          gigs: -GIG_AMOUNT,
        });
        await expectHoldsClaimables(c, owedTo(c.panel.slice(1), BOND_FEE / 2n));
        expect((await c.gigs.read.gigOf([c.gigId])).status).to.equal(GIG_STATUS.Released);
        await expectNoLocks(c);
      });

      it("NoFault: a refund less compute spent, no slash, both bonds back, the fee out of the challenger's", async function () {
        const c = await loadFixture(DRAWN[kind]);
        const refund = parseEther("0.9");
        await submit(c, { verdict: VERDICT.NoFault, refund, slash: 0n }, c.panel);
        const before = await snapshot(c);
        await finalize(c);
        await expectMoves(c, before, {
          client: refund + BOND - BOND_FEE,
          provider: GIG_AMOUNT - refund + BOND,
          manager: -2n * BOND + BOND_FEE,
          gigs: -GIG_AMOUNT,
        });
        await expectHoldsClaimables(c, owedTo(c.panel, BOND_FEE / 3n));
      });

      it("uncontested, ChallengerWins: the fee comes out of the challenger's own bond", async function () {
        const c = await loadFixture(UNCONTESTED_DRAWN[kind]);
        await submit(c, { verdict: VERDICT.ChallengerWins, refund: REFUND, slash: 0n }, c.panel.slice(0, 2));
        const before = await snapshot(c);
        await finalize(c);
        await expectMoves(c, before, {
          client: REFUND + BOND - BOND_FEE,
          provider: GIG_AMOUNT - REFUND,
          manager: -BOND + BOND_FEE,
          gigs: -GIG_AMOUNT,
        });
        await expectHoldsClaimables(c, owedTo(c.panel.slice(0, 2), BOND_FEE / 2n));
      });

      it("uncontested, RespondentWins: the challenger's bond alone is at stake", async function () {
        const c = await loadFixture(UNCONTESTED_DRAWN[kind]);
        await submit(c, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n }, c.panel.slice(0, 2));
        const before = await snapshot(c);
        await finalize(c);
        await expectMoves(c, before, {
          provider: GIG_AMOUNT + BOND - BOND_BURN - BOND_FEE,
          burn: BOND_BURN,
          manager: -BOND + BOND_FEE,
          gigs: -GIG_AMOUNT,
        });
        await expectHoldsClaimables(c, owedTo(c.panel.slice(0, 2), BOND_FEE / 2n));
      });

      /*////////////////////////////// appeals //////////////////////////////*/

      it("an appeal posts the next level's bond and draws a fresh panel of five that excludes round 0", async function () {
        const c = await loadFixture(DECIDED[kind]);
        await expectRevert(
          c.disputes.write.appeal([c.caseId], { account: c.stranger.account, value: ethValue(kind, APPEAL_BOND_1) }),
          "NotAParty",
          [c.caseId, getAddress(c.stranger.account.address)],
        );
        if (kind === "ETH") {
          await expectRevert(c.disputes.write.appeal([c.caseId], { account: c.provider.account, value: BOND }), "BondValueMismatch", [
            BOND,
            APPEAL_BOND_1,
          ]);
        }
        const receipt = await mined(
          c,
          await c.disputes.write.appeal([c.caseId], { account: c.provider.account, value: ethValue(kind, APPEAL_BOND_1) }),
        );
        const now = Number((await c.publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp);
        expect(eventsOf(c, receipt).map((e) => [e.eventName, e.args])).to.deep.equal([
          [
            "CaseAppealed",
            {
              caseId: c.caseId,
              appellant: getAddress(c.provider.account.address),
              round: 1,
              bond: APPEAL_BOND_1,
              status: STATUS.Open,
              deadline: now + P.decisionWindow,
            },
          ],
          ["PanelRequested", { caseId: c.caseId, round: 1, ticket: receipt.blockNumber + 1n }],
        ]);
        expect(await c.disputes.read.roundOf([c.caseId, 1])).to.deep.include({
          appellant: getAddress(c.provider.account.address),
          appealBond: APPEAL_BOND_1,
        });
        expect(await balanceOf(c, c.asset, c.disputes.address)).to.equal(2n * BOND + APPEAL_BOND_1);
        const panel1 = await drawPanel(c, c.caseId);
        expect(panel1).to.have.length(5);
        const round0 = await c.disputes.read.panelOf([c.caseId, 0]);
        for (const k of panel1) expect(round0).to.not.include(getAddress(k.address));
        expect(await c.disputes.read.caseOf([c.caseId])).to.deep.include({ status: STATUS.Deliberating, round: 1 });
        // Round 0's members stay locked until the case ends.
        for (const a of round0) expect(await c.registry.read.locksOf([ARBITRATOR_ROLE, a])).to.equal(1n);
        await expectRevert(
          submit(c, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n }, panel1.slice(0, 3)),
          "SupermajorityNotMet",
          [3n, 4n],
        );
        await expectRevert(
          submit(c, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n }, sortKeys([...panel1.slice(0, 3), c.panel[0]!])),
          "NotOnPanel",
          [c.caseId, getAddress(c.panel[0]!.address)],
        );
      });

      it("overturned on appeal: round-0 signers lose half their stake to the appellant (less burn), whose bond comes back", async function () {
        const c = await loadFixture(DECIDED[kind]);
        await c.disputes.write.appeal([c.caseId], { account: c.provider.account, value: ethValue(kind, APPEAL_BOND_1) });
        const panel1 = await drawPanel(c, c.caseId);
        await submit(c, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n, resolutionHash: OTHER_RESOLUTION_HASH }, panel1.slice(0, 4));
        const before = await snapshot(c);
        const receipt = await finalize(c);
        await expectMoves(
          c,
          before,
          {
            provider: GIG_AMOUNT + 2n * BOND - BOND_BURN - BOND_FEE + APPEAL_BOND_1,
            burn: BOND_BURN,
            manager: -(2n * BOND + APPEAL_BOND_1) + BOND_FEE,
            gigs: -GIG_AMOUNT,
          },
          {
            provider: 2n * (OVERTURN_SLASH - OVERTURN_BURN),
            burn: 2n * OVERTURN_BURN,
            registry: -2n * OVERTURN_SLASH,
          },
        );
        await expectHoldsClaimables(c, owedTo(panel1.slice(0, 4), BOND_FEE / 4n));
        expect(
          eventsOf(c, receipt)
            .filter((e) => e.eventName === "ArbitratorPenalized")
            .map((e) => e.args),
        ).to.deep.equal(
          (await seatOrder(c, 0, c.panel.slice(0, 2))).map((arbitrator) => ({
            caseId: c.caseId,
            arbitrator,
            amount: OVERTURN_SLASH,
            overturned: true,
          })),
        );
        expect(await stakeOf(c, c.panel[0]!)).to.equal(ARBITRATOR_STAKE - OVERTURN_SLASH);
        expect(await stakeOf(c, c.panel[1]!)).to.equal(ARBITRATOR_STAKE - OVERTURN_SLASH);
        expect(await stakeOf(c, c.panel[2]!)).to.equal(ARBITRATOR_STAKE); // did not sign the overturned verdict
        for (const k of panel1) expect(await stakeOf(c, k)).to.equal(ARBITRATOR_STAKE);
        await expectNoLocks(c);
      });

      it("upheld on appeal: the appeal bond is forfeited to the other party less burn; both panels' signers share the fee", async function () {
        const c = await loadFixture(DECIDED[kind]);
        await c.disputes.write.appeal([c.caseId], { account: c.provider.account, value: ethValue(kind, APPEAL_BOND_1) });
        const panel1 = await drawPanel(c, c.caseId);
        // Same verdict and remedy, in another panel's words: the same outcome.
        await submit(c, { verdict: VERDICT.ChallengerWins, refund: REFUND, slash: SLASH, resolutionHash: OTHER_RESOLUTION_HASH }, panel1.slice(1));
        const before = await snapshot(c);
        await finalize(c);
        const appealBurn = (APPEAL_BOND_1 * BigInt(P.burnBps)) / BPS;
        await expectMoves(
          c,
          before,
          {
            client: REFUND + 2n * BOND - BOND_BURN - BOND_FEE + APPEAL_BOND_1 - appealBurn,
            provider: GIG_AMOUNT - REFUND,
            burn: BOND_BURN + appealBurn,
            manager: -(2n * BOND + APPEAL_BOND_1) + BOND_FEE,
            gigs: -GIG_AMOUNT,
          },
          { client: SLASH - SLASH_BURN, burn: SLASH_BURN, registry: -SLASH },
        );
        await expectHoldsClaimables(c, owedTo([...c.panel.slice(0, 2), ...panel1.slice(1)], BOND_FEE / 6n));
        for (const k of [...c.panel, ...panel1]) expect(await stakeOf(c, k)).to.equal(ARBITRATOR_STAKE);
        await expectNoLocks(c);
      });
    });
  }

  describe("appeal limits and the slow path (ETH)", function () {
    it("refuses an appeal past the cap (AppealCapReached) and after the appeal window (DeadlinePassed)", async function () {
      const c = await loadFixture(DECIDED_NO_APPEALS);
      const { deadline } = await c.disputes.read.caseOf([c.caseId]);
      await expectRevert(
        c.disputes.write.appeal([c.caseId], { account: c.client.account, value: APPEAL_BOND_1 }),
        "AppealCapReached",
        [c.caseId, 0],
      );
      // Rules queued while the case is open do not reach it: it keeps the cap it opened under.
      await c.disputes.write.setParams([P]);
      expect((await c.disputes.read.latestParams())[0]).to.deep.equal(P);
      expect(await c.disputes.read.caseParams([c.caseId])).to.deep.equal({ ...P, maxAppeals: 0 });
      await expectRevert(
        c.disputes.write.appeal([c.caseId], { account: c.client.account, value: APPEAL_BOND_1 }),
        "AppealCapReached",
        [c.caseId, 0],
      );
      await time.increaseTo(deadline + 1);
      await expectRevert(c.disputes.write.appeal([c.caseId], { account: c.client.account, value: APPEAL_BOND_1 }), "DeadlinePassed", [
        c.caseId,
        deadline,
      ]);
    });

    it("the second appeal goes to the slow path with the level-3 bond; governance decides for good", async function () {
      const c = await loadFixture(DECIDED.ETH);
      await c.disputes.write.appeal([c.caseId], { account: c.provider.account, value: APPEAL_BOND_1 });
      const panel1 = await drawPanel(c, c.caseId);
      await submit(c, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n }, panel1.slice(0, 4));
      const receipt = await mined(c, await c.disputes.write.appeal([c.caseId], { account: c.client.account, value: APPEAL_BOND_2 }));
      const now = Number((await c.publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp);
      expect(eventsOf(c, receipt).map((e) => [e.eventName, e.args])).to.deep.equal([
        [
          "CaseAppealed",
          {
            caseId: c.caseId,
            appellant: getAddress(c.client.account.address),
            round: 2,
            bond: APPEAL_BOND_2,
            status: STATUS.SlowPath,
            deadline: now + P.slowPathTimeout,
          },
        ],
      ]);
      await expectRevert(c.disputes.write.appeal([c.caseId], { account: c.client.account, value: APPEAL_BOND_2 }), "WrongCaseStatus", [
        c.caseId,
        STATUS.SlowPath,
      ]);
      const resolution = { caseId: c.caseId, verdict: VERDICT.ChallengerWins, refund: REFUND, slash: SLASH, resolutionHash: RESOLUTION_HASH };
      await expectRevert(c.disputes.write.resolveSlowPath([resolution, NO_STATE], { account: c.stranger.account }), "NotGovernance", [
        getAddress(c.stranger.account.address),
      ]);
      const before = await snapshot(c);
      await mined(c, await c.disputes.write.resolveSlowPath([resolution, NO_STATE]));
      // Governance restored round 0's outcome: round 1's signers are overturned (to the client, round 2's
      // appellant), round 0's earn the fee, the provider's appeal bond is forfeited to the client and the
      // client's is returned.
      const appealBurn = (APPEAL_BOND_1 * BigInt(P.burnBps)) / BPS;
      await expectMoves(
        c,
        before,
        {
          client: REFUND + 2n * BOND - BOND_BURN - BOND_FEE + APPEAL_BOND_1 - appealBurn + APPEAL_BOND_2,
          provider: GIG_AMOUNT - REFUND,
          burn: BOND_BURN + appealBurn,
          manager: -(2n * BOND + APPEAL_BOND_1 + APPEAL_BOND_2) + BOND_FEE,
          gigs: -GIG_AMOUNT,
        },
        {
          client: SLASH - SLASH_BURN + 4n * (OVERTURN_SLASH - OVERTURN_BURN),
          burn: SLASH_BURN + 4n * OVERTURN_BURN,
          registry: -SLASH - 4n * OVERTURN_SLASH,
        },
      );
      await expectHoldsClaimables(c, owedTo(c.panel.slice(0, 2), BOND_FEE / 2n));
      expect((await c.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.Resolved);
      await expectNoLocks(c);
    });

    it("an undecidable verdict goes to the slow path; governance may not find it undecidable, and its fee goes to the winner", async function () {
      const c = await loadFixture(DRAWN.ETH);
      const receipt = await submit(c, { verdict: VERDICT.Undecidable, refund: 0n, slash: 0n }, c.panel.slice(0, 2));
      expect(eventsOf(c, receipt).map((e) => e.eventName)).to.deep.equal(["VerdictSubmitted", "CaseToSlowPath"]);
      expect(await c.disputes.read.caseOf([c.caseId])).to.deep.include({ status: STATUS.SlowPath, round: 2 });
      expect((await c.gigs.read.gigOf([c.gigId])).status).to.equal(GIG_STATUS.Disputed);
      const resolution = { caseId: c.caseId, verdict: VERDICT.Undecidable, refund: 0n, slash: 0n, resolutionHash: RESOLUTION_HASH };
      await expectRevert(c.disputes.write.resolveSlowPath([resolution, NO_STATE]), "InvalidVerdict", [VERDICT.Undecidable]);
      await expectRevert(c.disputes.write.resolveSlowPath([{ ...resolution, verdict: VERDICT.RespondentWins }, NO_STATE], { account: c.client.account }), "NotGovernance", [
        getAddress(c.client.account.address),
      ]);
      const before = await snapshot(c);
      await c.disputes.write.resolveSlowPath([{ ...resolution, verdict: VERDICT.RespondentWins }, NO_STATE]);
      await expectMoves(c, before, {
        provider: GIG_AMOUNT + 2n * BOND - BOND_BURN,
        burn: BOND_BURN,
        manager: -2n * BOND,
        gigs: -GIG_AMOUNT,
      });
      await expectHoldsClaimables(c, new Map());
      // An undecidable panel answered: nobody is slashed.
      for (const k of c.panel) expect(await stakeOf(c, k)).to.equal(ARBITRATOR_STAKE);
      await expectNoLocks(c);
    });

    it("expire without any verdict: the gig is released to the provider as without a dispute (refund 0), both bonds return in full, nothing burnt", async function () {
      const c = await loadFixture(CONTESTED.ETH);
      const { deadline } = await c.disputes.read.caseOf([c.caseId]);
      await time.increaseTo(deadline + 1);
      await c.disputes.write.expire([c.caseId, NO_STATE], { account: c.watcher.account });
      const slow = await c.disputes.read.caseOf([c.caseId]);
      await expectRevert(c.disputes.write.expire([c.caseId, NO_STATE]), "DeadlineNotPassed", [c.caseId, slow.deadline]);
      await time.increaseTo(slow.deadline + 1);
      const before = await snapshot(c);
      const receipt = await mined(c, await c.disputes.write.expire([c.caseId, NO_STATE], { account: c.watcher.account }));
      await expectMoves(c, before, {
        client: BOND,
        provider: GIG_AMOUNT + BOND,
        manager: -2n * BOND,
        gigs: -GIG_AMOUNT,
      });
      expect(eventsOf(c, receipt).map((e) => e.eventName)).to.deep.equal(["CaseExpired", "CaseResolved"]);
      expect(eventsOf(c, receipt)[0]!.args).to.deep.equal({ caseId: c.caseId, verdictStood: false });
      expect(eventsOf(c, receipt)[1]!.args).to.deep.include({ verdict: VERDICT.NoFault, refunded: 0n, slashed: 0n, toChallenger: BOND, toRespondent: BOND, burned: 0n, arbitrationFees: 0n });
      expect((await c.gigs.read.gigOf([c.gigId])).status).to.equal(GIG_STATUS.Released);
      expect((await c.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.Expired);
      await expectHoldsClaimables(c, new Map());
      await expectRevert(c.disputes.write.expire([c.caseId, NO_STATE]), "WrongCaseStatus", [c.caseId, STATUS.Expired]);
    });

    it("a silent panel: the case goes to the slow path, and at its end every member loses absentSlashBps (burnt); the gig is released, bonds returned", async function () {
      const c = await loadFixture(DRAWN.ETH);
      const { deadline } = await c.disputes.read.caseOf([c.caseId]);
      await time.increaseTo(deadline + 1);
      await c.disputes.write.expire([c.caseId, NO_STATE], { account: c.watcher.account });
      expect((await c.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.SlowPath);
      await time.increase(P.slowPathTimeout + 1);
      const before = await snapshot(c);
      const receipt = await mined(c, await c.disputes.write.expire([c.caseId, NO_STATE], { account: c.watcher.account }));
      await expectMoves(
        c,
        before,
        { client: BOND, provider: GIG_AMOUNT + BOND, manager: -2n * BOND, gigs: -GIG_AMOUNT },
        { burn: 3n * ABSENT_SLASH, registry: -3n * ABSENT_SLASH },
      );
      expect(
        eventsOf(c, receipt)
          .filter((e) => e.eventName === "ArbitratorPenalized")
          .map((e) => e.args),
      ).to.deep.equal(
        (await c.disputes.read.panelOf([c.caseId, 0])).map((a) => ({ caseId: c.caseId, arbitrator: a, amount: ABSENT_SLASH, overturned: false })),
      );
      for (const k of c.panel) expect(await stakeOf(c, k)).to.equal(ARBITRATOR_STAKE - ABSENT_SLASH);
      await expectHoldsClaimables(c, new Map());
      await expectNoLocks(c);
    });

    it("expire with a verdict standing before an unheard appeal enforces that verdict; the appeal bond is forfeited", async function () {
      const c = await loadFixture(DECIDED.ETH);
      await c.disputes.write.appeal([c.caseId], { account: c.provider.account, value: APPEAL_BOND_1 });
      const { deadline } = await c.disputes.read.caseOf([c.caseId]);
      await time.increaseTo(deadline + 1);
      await c.disputes.write.expire([c.caseId, NO_STATE], { account: c.watcher.account });
      await time.increase(P.slowPathTimeout + 1);
      const before = await snapshot(c);
      const receipt = await mined(c, await c.disputes.write.expire([c.caseId, NO_STATE], { account: c.watcher.account }));
      const appealBurn = (APPEAL_BOND_1 * BigInt(P.burnBps)) / BPS;
      await expectMoves(
        c,
        before,
        {
          client: REFUND + 2n * BOND - BOND_BURN - BOND_FEE + APPEAL_BOND_1 - appealBurn,
          provider: GIG_AMOUNT - REFUND,
          burn: BOND_BURN + appealBurn,
          manager: -(2n * BOND + APPEAL_BOND_1) + BOND_FEE,
          gigs: -GIG_AMOUNT,
        },
        { client: SLASH - SLASH_BURN, burn: SLASH_BURN, registry: -SLASH },
      );
      expect(eventsOf(c, receipt)[0]!.args).to.deep.equal({ caseId: c.caseId, verdictStood: true });
      expect((await c.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.Expired);
      await expectHoldsClaimables(c, owedTo(c.panel.slice(0, 2), BOND_FEE / 2n));
      await expectNoLocks(c);
    });

    it("an appeal panel the pool cannot fill sends the case to the slow path", async function () {
      const c = await loadFixture(DECIDED.ETH);
      const round0 = await c.disputes.read.panelOf([c.caseId, 0]);
      const others = SYS.arbitrators.map((i) => getAddress(hardhatAccount(i).address)).filter((a) => !round0.includes(a));
      for (const a of others.slice(0, 3)) await c.registry.write.removeArbitrator([a]);
      await c.disputes.write.appeal([c.caseId], { account: c.provider.account, value: APPEAL_BOND_1 });
      await hre.network.provider.send("hardhat_mine", ["0x2"]);
      const receipt = await mined(c, await c.disputes.write.drawPanel([c.caseId], { account: c.watcher.account }));
      expect(eventsOf(c, receipt).map((e) => e.eventName)).to.deep.equal(["CaseToSlowPath"]);
      expect(await c.disputes.read.caseOf([c.caseId])).to.deep.include({ status: STATUS.SlowPath, round: 2 });
    });
  });

  /*//////////////////////////////////////////////////////////////
                              SESSIONS
  //////////////////////////////////////////////////////////////*/

  type Session = {
    kind: Kind;
    ref: ChannelRef;
    sessionId: Hex;
    recorded: ClosingState;
    leaves: { receiptHash: Hex; ticketHash: Hex }[];
    tree: ReceiptAccumulator;
  };

  /** A session of DEPOSIT whose provider closed with a ticket for 1 unit over a root of 8 receipt leaves. */
  async function closingSession(s: System, kind: Kind, challengeDuration = 3600n): Promise<Session> {
    const terms = makeTerms(assetOf(s, kind), { challengeDuration });
    const hash = await s.escrow.write.open([terms, DEPOSIT], { account: s.client.account, value: ethValue(kind, DEPOSIT) });
    const ref: ChannelRef = { terms, openedAt: (await mined(s, hash)).blockNumber };
    const domain = gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: getAddress(s.escrow.address) });
    const sessionId = sessionIdOf(domain, ref);
    const leaves = Array.from({ length: 8 }, (_, i) => ({
      receiptHash: keccak256(stringToBytes(`receipt ${i}`)),
      ticketHash: keccak256(stringToBytes(`ticket ${i}`)),
    }));
    const tree = ReceiptAccumulator.fromLeaves(leaves.map((l) => receiptLeafFromHashes(l.receiptHash, l.ticketHash)));
    const amount = parseEther("1");
    const ticket = { sessionId, provider: terms.provider, termsHash: terms.termsHash, seq: 8n, cumulativeAmount: amount, receiptRoot: tree.root() };
    const { signature } = await signPaymentTicket({ account: hardhatAccount(SYS.payer), domain, ticket });
    await s.escrow.write.closeUnilateral(
      [terms, ref.openedAt, { seq: 8n, cumulativeAmount: amount, receiptRoot: tree.root(), sig: toCompactSignature(signature) }],
      { account: s.provider.account },
    );
    return { kind, ref, sessionId, recorded: { deposit: DEPOSIT, seq: 8n, amount, receiptRoot: tree.root(), feeBps: 0 }, leaves, tree };
  }

  async function openSessionCase(s: System, session: Session, index: number, from = s.payerWallet): Promise<Hex> {
    const caseId = await s.disputes.read.nextCaseId([KIND.Session, session.sessionId]);
    const leaf = session.leaves[index]!;
    await mined(
      s,
      await s.disputes.write.openSessionCase(
        [session.ref.terms, session.ref.openedAt, session.recorded, leaf.receiptHash, leaf.ticketHash, session.tree.proof(index), 1, PACKAGE_HASH],
        { account: from.account, value: ethValue(session.kind, BOND) },
      ),
    );
    return caseId;
  }

  const SESSION = perKind("closingSession", async (s, kind) => ({ ...s, session: await closingSession(s, kind) }));

  for (const kind of KINDS) {
    describe(`session cases (${kind})`, function () {
      it("proves the challenged leaf on-chain, freezes finalisation and locks the provider's bond until the case ends", async function () {
        const s = await loadFixture(SESSION[kind]);
        const caseId = await openSessionCase(s, s.session, 5);
        const stored = await s.disputes.read.caseOf([caseId]);
        expect(stored).to.deep.include({
          kind: KIND.Session,
          status: STATUS.Open,
          subjectId: s.session.sessionId,
          value: s.session.recorded.amount,
          challenger: getAddress(s.payerWallet.account.address),
          related: getAddress(s.client.account.address),
          challengerBond: BOND,
        });
        const [matches, , openCases] = await s.escrow.read.closingInfo([s.session.sessionId, s.session.recorded]);
        expect([matches, openCases]).to.deep.equal([true, 1]);
        expect(await s.registry.read.locksOf([PROVIDER_ROLE, s.provider.account.address])).to.equal(1n);
        await time.increase(3600);
        await expectRevert(
          s.escrow.write.finalize([s.session.ref.terms, s.session.ref.openedAt, s.session.recorded]),
          "FrozenByDispute",
          [s.session.sessionId, 1],
        );
        // The case ends (uncontested, drawn, decided): the lock goes.
        await time.increase(P.respondWindow);
        const panel = await drawPanel(s, caseId);
        await submit({ ...s, caseId }, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n }, panel.slice(0, 2));
        await finalize({ ...s, caseId }, s.session.recorded);
        expect(await s.registry.read.locksOf([PROVIDER_ROLE, s.provider.account.address])).to.equal(0n);
      });

      it("lets the funder challenge too, but nobody else", async function () {
        const s = await loadFixture(SESSION[kind]);
        await expectRevert(openSessionCase(s, s.session, 0, s.provider), "NotTheChallengerSide", [
          s.session.sessionId,
          getAddress(s.provider.account.address),
        ]);
        await expectRevert(openSessionCase(s, s.session, 0, s.stranger), "NotTheChallengerSide", [
          s.session.sessionId,
          getAddress(s.stranger.account.address),
        ]);
        const caseId = await openSessionCase(s, s.session, 0, s.client);
        expect((await s.disputes.read.caseOf([caseId])).related).to.equal(getAddress(s.payerWallet.account.address));
      });

      it("refuses a forged proof, a truncated proof, a leaf from another tree, and an inner node passed off as a leaf", async function () {
        const s = await loadFixture(SESSION[kind]);
        const { session } = s;
        const attempt = (receiptHash: Hex, ticketHash: Hex, proof: Hex[]) =>
          s.disputes.write.openSessionCase(
            [session.ref.terms, session.ref.openedAt, session.recorded, receiptHash, ticketHash, proof, 1, PACKAGE_HASH],
            { account: s.payerWallet.account, value: ethValue(kind, BOND) },
          );
        const leaf = session.leaves[3]!;
        const proof = session.tree.proof(3);
        const forged = [...proof];
        forged[1] = keccak256(stringToBytes("forged sibling"));
        const args = [session.sessionId, session.recorded.receiptRoot];
        await expectRevert(attempt(leaf.receiptHash, leaf.ticketHash, forged), "InvalidMerkleProof", args);
        await expectRevert(attempt(leaf.receiptHash, leaf.ticketHash, proof.slice(0, -1)), "InvalidMerkleProof", args);
        await expectRevert(attempt(leaf.receiptHash, keccak256(stringToBytes("other ticket")), proof), "InvalidMerkleProof", args);
        const node2 = session.tree.leaf(2);
        const node3 = session.tree.leaf(3);
        const [lo, hi] = BigInt(node2) < BigInt(node3) ? [node2, node3] : [node3, node2];
        await expectRevert(attempt(lo, hi, proof.slice(1)), "InvalidMerkleProof", args);
      });

      it("refuses a stale closing state and a case after the challenge window", async function () {
        const s = await loadFixture(SESSION[kind]);
        const { session } = s;
        const leaf = session.leaves[0]!;
        await expectRevert(
          s.disputes.write.openSessionCase(
            [session.ref.terms, session.ref.openedAt, { ...session.recorded, amount: 1n }, leaf.receiptHash, leaf.ticketHash, session.tree.proof(0), 1, PACKAGE_HASH],
            { account: s.payerWallet.account, value: ethValue(kind, BOND) },
          ),
          "ClosingStateMismatch",
          [session.sessionId],
        );
        await time.increase(3600);
        await expectRevert(openSessionCase(s, session, 0), "ChallengeWindowClosed", undefined, s.escrow.abi);
      });

      it("provider fault: the refund comes off the provider's payout at the escrow's finalisation", async function () {
        const s = await loadFixture(SESSION[kind]);
        const caseId = await openSessionCase(s, s.session, 2);
        await s.disputes.write.respond([caseId], { account: s.provider.account, value: ethValue(kind, BOND) });
        const panel = await drawPanel(s, caseId);
        const refund = parseEther("0.125");
        await submit({ ...s, caseId }, { verdict: VERDICT.ChallengerWins, refund, slash: parseEther("1") }, panel.slice(0, 2));
        const c = { ...s, caseId, asset: assetOf(s, kind) };
        const before = await snapshot(c);
        await finalize(c, s.session.recorded);
        // The payer (challenger) wins the bonds and the SLA slash (in LaborGas); the refund waits for finalisation.
        await expectMoves(
          c,
          before,
          { payer: 2n * BOND - BOND_BURN - BOND_FEE, burn: BOND_BURN, manager: -2n * BOND + BOND_FEE },
          { payer: parseEther("0.8"), burn: parseEther("0.2"), registry: -parseEther("1") },
        );
        await expectHoldsClaimables(c, owedTo(panel.slice(0, 2), BOND_FEE / 2n));
        expect(await s.registry.read.locksOf([PROVIDER_ROLE, s.provider.account.address])).to.equal(0n);
        const after = { ...s.session.recorded, amount: s.session.recorded.amount - refund };
        const [matches, , openCases] = await s.escrow.read.closingInfo([s.session.sessionId, after]);
        expect([matches, openCases]).to.deep.equal([true, 0]);
        const parties = [s.client.account.address, s.provider.account.address];
        const pre = await Promise.all(parties.map((a) => balanceOf(s, c.asset, a)));
        await s.escrow.write.finalize([s.session.ref.terms, s.session.ref.openedAt, after], { account: s.watcher.account });
        const post = await Promise.all(parties.map((a) => balanceOf(s, c.asset, a)));
        expect(post[0]! - pre[0]!).to.equal(DEPOSIT - after.amount); // the funder gets the refund and the rest
        expect(post[1]! - pre[1]!).to.equal(after.amount);
      });
    });
  }

  describe("who sits on a panel", function () {
    /**
     * A session case where the challenger (payer), the respondent (provider) and the related funder (client)
     * are admitted arbitrators with large stakes, and only three other pinned arbitrators remain admitted.
     */
    async function partiesInThePool() {
      const s = await systemFixture();
      const session = await closingSession(s, "ETH");
      for (const w of [s.client, s.payerWallet, s.provider]) {
        await s.registry.write.registerArbitrator(
          [JUDGE_RUNTIME_HASH, keccak256(stringToBytes(`did:${w.account.address}`)), keccak256(stringToBytes(`pk:${w.account.address}`))],
          { account: w.account },
        );
        await s.registry.write.bond([ARBITRATOR_ROLE, parseEther("50000")], { account: w.account });
        await s.registry.write.admitArbitrator([w.account.address]);
      }
      for (const i of SYS.arbitrators.slice(3)) await s.registry.write.removeArbitrator([hardhatAccount(i).address]);
      const caseId = await openSessionCase(s, session, 1);
      return { ...s, session, caseId };
    }

    it("never draws the challenger, the respondent, the related party or another runtime's arbitrator", async function () {
      const c = await loadFixture(partiesInThePool);
      const pool = (await c.registry.read.drawPool([JUDGE_RUNTIME_HASH]))[0];
      expect(pool).to.have.length(6);
      await c.disputes.write.respond([c.caseId], { account: c.provider.account, value: BOND });
      const panel = await drawPanel(c, c.caseId);
      expect(panel.map((k) => getAddress(k.address))).to.deep.equal(
        sortKeys(SYS.arbitrators.slice(0, 3).map(hardhatAccount)).map((k) => getAddress(k.address)),
      );
      for (const w of [c.client, c.payerWallet, c.provider]) {
        expect(await c.registry.read.locksOf([ARBITRATOR_ROLE, w.account.address])).to.equal(0n);
      }
    });

    it("goes to the slow path rather than seat a party when the others are too few", async function () {
      const c = await loadFixture(partiesInThePool);
      // Removed before the contest requests the randomness, so the draw's snapshot holds two non-parties.
      await c.registry.write.removeArbitrator([hardhatAccount(SYS.arbitrators[0]).address]);
      await c.disputes.write.respond([c.caseId], { account: c.provider.account, value: BOND });
      await hre.network.provider.send("hardhat_mine", ["0x2"]);
      const receipt = await mined(c, await c.disputes.write.drawPanel([c.caseId], { account: c.watcher.account }));
      expect(eventsOf(c, receipt).map((e) => e.eventName)).to.deep.equal(["CaseToSlowPath"]);
      expect(await c.disputes.read.panelOf([c.caseId, 0])).to.deep.equal([]);
    });
  });

  describe("hostile tokens", function () {
    it("issue 28 item 4: a fee-on-transfer token with terms cannot even fund a gig (TransferAmountMismatch), so no case is ever owed in it", async function () {
      const s = await loadFixture(SYSTEM);
      const fee = await hre.viem.deployContract("FeeOnTransferToken", [100n]);
      await s.disputes.write.setAssetTerms([fee.address, { bondFloor: parseEther("0.01"), stakeRate: parseEther("1") }]);
      await fee.write.mint([s.client.account.address, parseEther("10")]);
      await fee.write.approve([s.gigs.address, parseEther("10")], { account: s.client.account });
      await expectRevert(
        deliveredGig(s, "ERC20", GIG_AMOUNT, fee.address),
        "TransferAmountMismatch",
        [getAddress(fee.address), GIG_AMOUNT, GIG_AMOUNT - GIG_AMOUNT / 100n],
      );
      expect(await fee.read.balanceOf([s.client.account.address])).to.equal(parseEther("10"));
      expect(await s.gigs.read.gigCount()).to.equal(0n);
    });

    it("a token re-entering finalize from a payout is refused (Reentrancy) and the case settles once, exactly", async function () {
      const s = await loadFixture(SYSTEM);
      const ree = await hre.viem.deployContract("ReentrantToken");
      const caseId = await decidedTokenCase(s, ree.address);
      await ree.write.arm([s.disputes.address, encodeFunctionData({ abi: s.disputes.abi, functionName: "finalize", args: [caseId, NO_STATE] })]);
      const before = await ree.read.balanceOf([s.provider.account.address]);
      await mined(s, await s.disputes.write.finalize([caseId, NO_STATE], { account: s.watcher.account }));
      expect(await ree.read.lastCallSucceeded()).to.equal(false);
      expect(await ree.read.lastReturnData()).to.equal("0xab143c06"); // Reentrancy()
      expect((await ree.read.balanceOf([s.provider.account.address])) - before).to.equal(GIG_AMOUNT + 2n * BOND - BOND_BURN - BOND_FEE);
      expect(await ree.read.balanceOf([s.disputes.address])).to.equal(BOND_FEE);
      expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Resolved);
    });
    it("a blocklisted winner's payout is deferred (PayoutDeferred) and claimable once unblocked; the loser's side is unaffected", async function () {
      const s = await loadFixture(SYSTEM);
      const blk = await hre.viem.deployContract("BlocklistToken");
      const caseId = await decidedTokenCase(s, blk.address);
      // The provider (the winner) is blocklisted by the token when the case ends.
      await blk.write.setBlocked([s.provider.account.address, true]);
      const won = 2n * BOND - BOND_BURN - BOND_FEE;
      const providerBefore = await blk.read.balanceOf([s.provider.account.address]);
      const receipt = await mined(s, await s.disputes.write.finalize([caseId, NO_STATE], { account: s.watcher.account }));
      expect((await s.disputes.read.caseOf([caseId])).status).to.equal(STATUS.Resolved);
      // The DisputeManager deferred the winnings (the GigEscrow deferred the provider's bounty the same way).
      const deferred = parseEventLogs({ abi: s.disputes.abi, eventName: "PayoutDeferred", logs: receipt.logs });
      expect(deferred.filter((e) => getAddress(e.address) === getAddress(s.disputes.address)).map((e) => e.args)).to.deep.equal([
        { asset: getAddress(blk.address), account: getAddress(s.provider.account.address), amount: won },
      ]);
      expect(await s.gigs.read.claimableOf([blk.address, s.provider.account.address])).to.equal(GIG_AMOUNT);
      expect(await s.disputes.read.claimable([blk.address, s.provider.account.address])).to.equal(won);
      // Nothing reached the provider; the manager holds its winnings and the panel's fee.
      expect(await blk.read.balanceOf([s.provider.account.address])).to.equal(providerBefore);
      expect(await blk.read.balanceOf([s.disputes.address])).to.equal(won + BOND_FEE);
      // Still blocked: the claim reverts and the balance stays claimable.
      await expectRevert(s.disputes.write.claim([blk.address], { account: s.provider.account }), "TransferFailed", [], [
        { type: "error", name: "TransferFailed", inputs: [] },
      ]);
      expect(await s.disputes.read.claimable([blk.address, s.provider.account.address])).to.equal(won);
      // Unblocked: the claim pays exactly the winnings, once.
      await blk.write.setBlocked([s.provider.account.address, false]);
      await mined(s, await s.disputes.write.claim([blk.address], { account: s.provider.account }));
      expect((await blk.read.balanceOf([s.provider.account.address])) - providerBefore).to.equal(won);
      await expectRevert(s.disputes.write.claim([blk.address], { account: s.provider.account }), "NothingToClaim", [
        getAddress(blk.address),
        getAddress(s.provider.account.address),
      ]);
    });
  });

  describe("cases per subject and who may slash", function () {
    async function longWindowSession() {
      const s = await systemFixture();
      return { ...s, session: await closingSession(s, "ETH", 7n * 24n * 3600n) };
    }

    it("caps cases per subject (TooManyCases)", async function () {
      // A session with a week-long challenge window stays disputable across three refund-free cases.
      const s = await loadFixture(longWindowSession);
      for (let i = 0; i < 3; i++) {
        const caseId = await openSessionCase(s, s.session, 1);
        await expectRevert(openSessionCase(s, s.session, 2), "CaseAlreadyOpen", [s.session.sessionId, caseId]);
        await time.increase(P.respondWindow + 1);
        const panel = await drawPanel(s, caseId);
        await submit({ ...s, caseId }, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n }, panel.slice(0, 2));
        await finalize({ ...s, caseId }, s.session.recorded);
      }
      await expectRevert(openSessionCase(s, s.session, 1), "TooManyCases", [s.session.sessionId]);
    });

    it("refuses a registry slash or lock from anyone but the dispute manager and the gig escrow", async function () {
      const s = await loadFixture(SYSTEM);
      for (const wallet of [s.governance, s.client, s.provider, s.stranger]) {
        await expectRevert(
          s.registry.write.slash([0, s.provider.account.address, 1n, wallet.account.address, 0], { account: wallet.account }),
          "AccessControlUnauthorizedAccount",
        );
      }
      expect(await s.registry.read.hasRole([await s.registry.read.SLASHER_ROLE(), s.disputes.address])).to.equal(true);
      const locker = await s.registry.read.LOCKER_ROLE();
      expect(await s.registry.read.hasRole([locker, s.disputes.address])).to.equal(true);
      expect(await s.registry.read.hasRole([locker, s.gigs.address])).to.equal(true);
    });
  });
});
