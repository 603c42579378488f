/**
 * DisputeManager: cases against gigs and closing sessions, bonds, quorum resolutions, every remedy,
 * escalation and the slow path, and the liveness backstops. Balances are checked exactly for every party,
 * including the burn address, and the manager ends every case holding nothing for it.
 */
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { expect } from "chai";
import {
  getAddress,
  keccak256,
  parseEther,
  stringToBytes,
  zeroAddress,
  zeroHash,
  type Address,
  type Hash,
  type Hex,
  type LocalAccount,
  type TransactionReceipt,
} from "viem";

import { ReceiptAccumulator } from "../../channel-client/accumulator";
import { gasEscrowDomain, toCompactSignature } from "../../channel-client/eip712";
import { receiptLeafFromHashes } from "../../channel-client/leaf";
import { sessionIdOf, type ChannelRef } from "../../channel-client/terms";
import { signPaymentTicket } from "../../channel-client/ticket";
import { hardhatAccount, makeTerms } from "../helpers/fixtures";
import { expectRevert } from "../helpers/revert";
import {
  arbitratorKeys,
  balanceOf,
  DISPUTE_PARAMS,
  GIG_STATUS,
  KIND,
  quorumSignatures,
  STATUS,
  SYS,
  systemFixture,
  VERDICT,
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
const ICS_HASH: Hex = keccak256(stringToBytes("intent contract schema"));
const DELIVERABLE: Hex = keccak256(stringToBytes("deliverable bundle"));
const NO_STATE = { deposit: 0n, seq: 0n, amount: 0n, receiptRoot: zeroHash, feeBps: 0 };
const MAX_FREEZE_DURATION = 180 * 24 * 3600;

type Kind = "ETH" | "ERC20";
type ClosingState = { deposit: bigint; seq: bigint; amount: bigint; receiptRoot: Hex; feeBps: number };

const assetOf = (s: System, kind: Kind): Address => (kind === "ETH" ? zeroAddress : s.token.address);
const ethValue = (kind: Kind, amount: bigint): bigint => (kind === "ETH" ? amount : 0n);

/** max(value × riskBps, floor) × multiplier^lane, as the contract computes it. */
function expectedBond(value: bigint, lane: number): bigint {
  const base = (value * BigInt(DISPUTE_PARAMS.riskBps)) / BPS;
  const floored = base < DISPUTE_PARAMS.bondFloor ? DISPUTE_PARAMS.bondFloor : base;
  return floored * BigInt(DISPUTE_PARAMS.laneMultiplier) ** BigInt(lane);
}
const burnOf = (bond: bigint): bigint => (bond * BigInt(DISPUTE_PARAMS.burnBps)) / BPS;

async function mined(s: System, hash: Hash): Promise<TransactionReceipt> {
  const receipt = await s.publicClient.waitForTransactionReceipt({ hash });
  expect(receipt.status).to.equal("success");
  return receipt;
}

/*//////////////////////////////////////////////////////////////
                                GIGS
//////////////////////////////////////////////////////////////*/

/** A gig of GIG_AMOUNT funded by the client for the provider, accepted and delivered. */
async function deliveredGig(s: System, kind: Kind): Promise<bigint> {
  const deadline = BigInt(await time.latest()) + 86_400n;
  await mined(
    s,
    await s.gigs.write.fund([s.provider.account.address, assetOf(s, kind), GIG_AMOUNT, ICS_HASH, Number(deadline), DISPUTE_WINDOW], {
      account: s.client.account,
      value: ethValue(kind, GIG_AMOUNT),
    }),
  );
  const gigId = await s.gigs.read.gigCount();
  await s.gigs.write.accept([gigId], { account: s.provider.account });
  await s.gigs.write.deliver([gigId, DELIVERABLE, zeroHash], { account: s.provider.account });
  return gigId;
}

type GigCase = System & { kind: Kind; asset: Address; gigId: bigint; caseId: Hex; bond: bigint };

async function openGigCase(s: System, kind: Kind, lane = 1): Promise<GigCase> {
  const gigId = await deliveredGig(s, kind);
  const caseId = await s.disputes.read.nextCaseId([KIND.Gig, `0x${gigId.toString(16).padStart(64, "0")}`]);
  const bond = expectedBond(GIG_AMOUNT, lane);
  await mined(
    s,
    await s.disputes.write.openGigCase([gigId, lane, PACKAGE_HASH], { account: s.client.account, value: ethValue(kind, bond) }),
  );
  return { ...s, kind, asset: assetOf(s, kind), gigId, caseId, bond };
}

/** The gig case, contested: the provider posted the matching bond. */
async function contestedGigCase(s: System, kind: Kind): Promise<GigCase> {
  const c = await openGigCase(s, kind);
  await s.disputes.write.respond([c.caseId], { account: s.provider.account, value: ethValue(kind, c.bond) });
  return c;
}

const FIXTURES = {
  ETH: {
    system: async function systemEth() {
      return systemFixture();
    },
    open: async function openEthGigCase() {
      return openGigCase(await systemFixture(), "ETH");
    },
    contested: async function contestedEthGigCase() {
      return contestedGigCase(await systemFixture(), "ETH");
    },
  },
  ERC20: {
    system: async function systemErc20() {
      return systemFixture();
    },
    open: async function openErc20GigCase() {
      return openGigCase(await systemFixture(), "ERC20");
    },
    contested: async function contestedErc20GigCase() {
      return contestedGigCase(await systemFixture(), "ERC20");
    },
  },
} as const;

/** Resolves `c` with a quorum of the pinned arbitrators, submitted by the watcher (who is no party). */
async function resolveWith(
  c: System & { caseId: Hex },
  message: Omit<ResolutionMessage, "caseId" | "resolutionHash"> & Partial<ResolutionMessage>,
  recorded: ClosingState = NO_STATE,
  signers?: LocalAccount[],
): Promise<TransactionReceipt> {
  const full: ResolutionMessage = { caseId: c.caseId, resolutionHash: RESOLUTION_HASH, ...message };
  const signatures = await quorumSignatures(c, full, signers);
  return mined(c, await c.disputes.write.resolve([full, recorded, signatures], { account: c.watcher.account }));
}

/** Balances of everyone a case can pay, and the manager's own. */
async function snapshot(c: System & { asset: Address }) {
  const who = {
    client: c.client.account.address,
    provider: c.provider.account.address,
    burn: BURN,
    manager: c.disputes.address,
    gigs: c.gigs.address,
  };
  const entries = await Promise.all(Object.entries(who).map(async ([k, a]) => [k, await balanceOf(c, c.asset, a)] as const));
  const tokens = await Promise.all(
    [c.client.account.address, c.provider.account.address, BURN].map((a) => c.token.read.balanceOf([a])),
  );
  return { ...(Object.fromEntries(entries) as Record<keyof typeof who, bigint>), lgas: tokens };
}

async function deltas(c: System & { asset: Address }, before: Awaited<ReturnType<typeof snapshot>>) {
  const after = await snapshot(c);
  return {
    client: after.client - before.client,
    provider: after.provider - before.provider,
    burn: after.burn - before.burn,
    manager: after.manager - before.manager,
    gigs: after.gigs - before.gigs,
    lgas: after.lgas.map((v, i) => v - before.lgas[i]!),
  };
}

describe("DisputeManager", function () {
  describe("parameters and bonds", function () {
    it("computes max(value × riskBps, floor) × multiplier^lane", async function () {
      const s = await loadFixture(FIXTURES.ETH.system);
      for (const value of [0n, parseEther("0.05"), parseEther("1"), parseEther("123.456")]) {
        for (const lane of [0, 1, 2, 3]) {
          expect(await s.disputes.read.bondFor([value, lane])).to.equal(expectedBond(value, lane));
        }
      }
      await expectRevert(s.disputes.read.bondFor([1n, 4]), "InvalidLane", [4]);
    });

    it("refuses parameters out of range, and lets only governance set them", async function () {
      const s = await loadFixture(FIXTURES.ETH.system);
      const bad: [Partial<DisputeParams>, string][] = [
        [{ riskBps: 10_001 }, "riskBps > 10000"],
        [{ burnBps: 10_001 }, "burnBps > 10000"],
        [{ laneMultiplier: 0 }, "laneMultiplier"],
        [{ laneMultiplier: 11 }, "laneMultiplier"],
        [{ quorum: 0 }, "quorum"],
        [{ quorum: 17 }, "quorum"],
        [{ maxEscalations: 3 }, "maxEscalations"],
        [{ decisionWindow: 59 }, "decisionWindow"],
        [{ slowPathTimeout: 3600 }, "slowPathTimeout"],
        [{ slowPathTimeout: 91 * 24 * 3600 }, "slowPathTimeout"],
        [{ bondFloor: 0n }, "bondFloor"],
      ];
      for (const [override, reason] of bad) {
        await expectRevert(s.disputes.write.setParams([{ ...DISPUTE_PARAMS, ...override }]), "InvalidParams", [reason]);
      }
      await expectRevert(
        s.disputes.write.setParams([DISPUTE_PARAMS], { account: s.stranger.account }),
        "AccessControlUnauthorizedAccount",
      );
      await s.disputes.write.setParams([{ ...DISPUTE_PARAMS, quorum: 4 }]);
      expect((await s.disputes.read.params()).quorum).to.equal(4);
    });

    it("signs resolutions under its own EIP-712 domain", async function () {
      const s = await loadFixture(FIXTURES.ETH.system);
      const message = { caseId: PACKAGE_HASH, verdict: 1, refund: 5n, slash: 7n, resolutionHash: RESOLUTION_HASH };
      const { hashTypedData } = await import("viem");
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
    });
  });

  for (const kind of ["ETH", "ERC20"] as const) {
    describe(`gig cases (${kind})`, function () {
      it("opens a case: takes the bond, freezes the gig, records the case", async function () {
        const c = await loadFixture(FIXTURES[kind].open);
        const stored = await c.disputes.read.caseOf([c.caseId]);
        expect(stored.challenger).to.equal(getAddress(c.client.account.address));
        expect(stored.respondent).to.equal(getAddress(c.provider.account.address));
        expect(stored.status).to.equal(STATUS.Open);
        expect(stored.kind).to.equal(KIND.Gig);
        expect(stored.lane).to.equal(1);
        expect(stored.value).to.equal(GIG_AMOUNT);
        expect(stored.challengerBond).to.equal(c.bond);
        expect(stored.packageHash).to.equal(PACKAGE_HASH);
        expect(await balanceOf(c, c.asset, c.disputes.address)).to.equal(c.bond);
        expect((await c.gigs.read.gigOf([c.gigId])).status).to.equal(GIG_STATUS.Disputed);
      });

      it("refuses a case from anyone but the client, at lane 2, without a package, or with the wrong bond", async function () {
        const s = await loadFixture(FIXTURES[kind].system);
        const gigId = await deliveredGig(s, kind);
        const bond = expectedBond(GIG_AMOUNT, 1);
        const subject = `0x${gigId.toString(16).padStart(64, "0")}` as Hex;
        await expectRevert(
          s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.stranger.account, value: ethValue(kind, bond) }),
          "NotTheChallengerSide",
          [subject, getAddress(s.stranger.account.address)],
        );
        await expectRevert(
          s.disputes.write.openGigCase([gigId, 2, PACKAGE_HASH], { account: s.client.account, value: ethValue(kind, bond) }),
          "InvalidLane",
          [2],
        );
        await expectRevert(
          s.disputes.write.openGigCase([gigId, 1, zeroHash], { account: s.client.account, value: ethValue(kind, bond) }),
          "ZeroPackageHash",
        );
        if (kind === "ETH") {
          await expectRevert(
            s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account, value: bond - 1n }),
            "BondValueMismatch",
            [bond - 1n, bond],
          );
        } else {
          await expectRevert(
            s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account, value: 1n }),
            "BondValueMismatch",
            [1n, 0n],
          );
        }
      });

      it("refuses a case once the dispute window closed (the gig then releases)", async function () {
        const s = await loadFixture(FIXTURES[kind].system);
        const gigId = await deliveredGig(s, kind);
        await time.increase(DISPUTE_WINDOW);
        const bond = expectedBond(GIG_AMOUNT, 1);
        await expectRevert(
          s.disputes.write.openGigCase([gigId, 1, PACKAGE_HASH], { account: s.client.account, value: ethValue(kind, bond) }),
          "DisputeWindowClosed",
          undefined,
          s.gigs.abi,
        );
      });

      it("refuses a second case while one is open", async function () {
        const c = await loadFixture(FIXTURES[kind].open);
        await expectRevert(
          c.disputes.write.openGigCase([c.gigId, 1, PACKAGE_HASH], { account: c.client.account, value: ethValue(kind, c.bond) }),
          "CaseAlreadyOpen",
        );
      });

      it("provider fault: partial refund, SLA bond slashed (burn share burnt), challenger wins the bonds", async function () {
        const c = await loadFixture(FIXTURES[kind].contested);
        const refund = parseEther("0.75");
        const slash = parseEther("20");
        const before = await snapshot(c);
        const receipt = await resolveWith(c, { verdict: VERDICT.ChallengerWins, refund, slash });
        const d = await deltas(c, before);
        const burnt = burnOf(c.bond);
        // The slash is paid in the registry's bond token (LaborGas), to the challenger less the burn share.
        const slashBurn = burnOf(slash);
        const sameToken = kind === "ERC20";
        expect(d.client).to.equal(refund + 2n * c.bond - burnt + (sameToken ? slash - slashBurn : 0n));
        expect(d.provider).to.equal(GIG_AMOUNT - refund);
        expect(d.burn).to.equal(burnt + (sameToken ? slashBurn : 0n));
        expect(d.manager).to.equal(-2n * c.bond);
        expect(d.gigs).to.equal(-GIG_AMOUNT);
        if (!sameToken) expect(d.lgas).to.deep.equal([slash - slashBurn, 0n, slashBurn]);
        const bondAfter = await c.registry.read.bondOf([0, c.provider.account.address]);
        expect(bondAfter.active).to.equal(5n * parseEther("100") - slash);
        const stored = await c.disputes.read.caseOf([c.caseId]);
        expect(stored.status).to.equal(STATUS.Resolved);
        expect((await c.gigs.read.gigOf([c.gigId])).status).to.equal(GIG_STATUS.Released);
        expect(receipt.logs.length).to.be.greaterThan(0);
      });

      it("provider fault with a full refund: the gig ends Refunded", async function () {
        const c = await loadFixture(FIXTURES[kind].contested);
        const before = await snapshot(c);
        await resolveWith(c, { verdict: VERDICT.ChallengerWins, refund: GIG_AMOUNT, slash: 0n });
        const d = await deltas(c, before);
        expect(d.client).to.equal(GIG_AMOUNT + 2n * c.bond - burnOf(c.bond));
        expect(d.provider).to.equal(0n);
        expect((await c.gigs.read.gigOf([c.gigId])).status).to.equal(GIG_STATUS.Refunded);
      });

      it("slashes only what the provider's bond still holds", async function () {
        const c = await loadFixture(FIXTURES[kind].contested);
        const held = 5n * parseEther("100");
        await resolveWith(c, { verdict: VERDICT.ChallengerWins, refund: 0n, slash: held * 10n });
        const bond = await c.registry.read.bondOf([0, c.provider.account.address]);
        expect(bond.active + bond.pending).to.equal(0n);
      });

      it("challenger fault: no refund, the gig pays the provider, who wins the bonds less the burn", async function () {
        const c = await loadFixture(FIXTURES[kind].contested);
        const before = await snapshot(c);
        await resolveWith(c, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n });
        const d = await deltas(c, before);
        expect(d.client).to.equal(0n);
        expect(d.provider).to.equal(GIG_AMOUNT + 2n * c.bond - burnOf(c.bond));
        expect(d.burn).to.equal(burnOf(c.bond));
        expect(d.manager).to.equal(-2n * c.bond);
      });

      it("a silent respondent is still judged: the challenger's bond alone is at stake", async function () {
        const c = await loadFixture(FIXTURES[kind].open);
        const before = await snapshot(c);
        await resolveWith(c, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n });
        const d = await deltas(c, before);
        expect(d.provider).to.equal(GIG_AMOUNT + c.bond - burnOf(c.bond));
        expect(d.burn).to.equal(burnOf(c.bond));
        expect(d.manager).to.equal(-c.bond);
      });

      it("no fault (unserviceable): refund less compute spent, no slash, both bonds returned", async function () {
        const c = await loadFixture(FIXTURES[kind].contested);
        const refund = parseEther("0.9");
        const before = await snapshot(c);
        await resolveWith(c, { verdict: VERDICT.NoFault, refund, slash: 0n });
        const d = await deltas(c, before);
        expect(d.client).to.equal(refund + c.bond);
        expect(d.provider).to.equal(GIG_AMOUNT - refund + c.bond);
        expect(d.burn).to.equal(0n);
        expect(d.lgas).to.deep.equal(kind === "ERC20" ? [d.client, d.provider, 0n] : [0n, 0n, 0n]);
        await expectRevert(
          resolveWith(await loadFixture(FIXTURES[kind].contested), { verdict: VERDICT.NoFault, refund, slash: 1n }),
          "RemedyNotAllowed",
          [VERDICT.NoFault, refund, 1n],
        );
      });

      it("refuses a refund above the value and a remedy on a challenger-fault verdict", async function () {
        const c = await loadFixture(FIXTURES[kind].contested);
        await expectRevert(
          resolveWith(c, { verdict: VERDICT.ChallengerWins, refund: GIG_AMOUNT + 1n, slash: 0n }),
          "RefundExceedsValue",
          [c.caseId, GIG_AMOUNT + 1n, GIG_AMOUNT],
        );
        await expectRevert(
          resolveWith(c, { verdict: VERDICT.RespondentWins, refund: 1n, slash: 0n }),
          "RemedyNotAllowed",
          [VERDICT.RespondentWins, 1n, 0n],
        );
        await expectRevert(resolveWith(c, { verdict: VERDICT.None, refund: 0n, slash: 0n }), "InvalidVerdict", [0]);
      });

      it("refuses a second resolution of the same case", async function () {
        const c = await loadFixture(FIXTURES[kind].contested);
        await resolveWith(c, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n });
        await expectRevert(
          resolveWith(c, { verdict: VERDICT.ChallengerWins, refund: GIG_AMOUNT, slash: 0n }),
          "WrongCaseStatus",
          [c.caseId, STATUS.Resolved],
        );
      });

      it("lets only the respondent contest, once, with the matching bond", async function () {
        const c = await loadFixture(FIXTURES[kind].open);
        await expectRevert(
          c.disputes.write.respond([c.caseId], { account: c.stranger.account, value: ethValue(kind, c.bond) }),
          "NotTheRespondent",
        );
        if (kind === "ETH") {
          await expectRevert(
            c.disputes.write.respond([c.caseId], { account: c.provider.account, value: c.bond + 1n }),
            "BondValueMismatch",
            [c.bond + 1n, c.bond],
          );
        }
        await c.disputes.write.respond([c.caseId], { account: c.provider.account, value: ethValue(kind, c.bond) });
        await expectRevert(
          c.disputes.write.respond([c.caseId], { account: c.provider.account, value: ethValue(kind, c.bond) }),
          "AlreadyContested",
          [c.caseId],
        );
      });
    });
  }

  describe("the arbitrator quorum", function () {
    const message = { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n };

    it("refuses fewer signatures than the quorum", async function () {
      const c = await loadFixture(FIXTURES.ETH.contested);
      await expectRevert(resolveWith(c, message, NO_STATE, arbitratorKeys().slice(0, 2)), "QuorumNotMet", [2n, 3]);
    });

    it("refuses a duplicated signer (the same signature twice)", async function () {
      const c = await loadFixture(FIXTURES.ETH.contested);
      const [a, b] = arbitratorKeys();
      await expectRevert(resolveWith(c, message, NO_STATE, [a!, b!, b!]), "SignersNotAscending", [2n, getAddress(b!.address)]);
    });

    it("refuses signers out of ascending order", async function () {
      const c = await loadFixture(FIXTURES.ETH.contested);
      const [a, b, d] = arbitratorKeys();
      await expectRevert(resolveWith(c, message, NO_STATE, [b!, a!, d!]), "SignersNotAscending");
    });

    it("refuses an unregistered signer", async function () {
      const c = await loadFixture(FIXTURES.ETH.contested);
      const signers = [...arbitratorKeys().slice(0, 2), hardhatAccount(SYS.unregistered)].sort((x, y) =>
        BigInt(x.address) < BigInt(y.address) ? -1 : 1,
      );
      await expectRevert(resolveWith(c, message, NO_STATE, signers), "NotAnActiveArbitrator", [
        getAddress(hardhatAccount(SYS.unregistered).address),
      ]);
    });

    it("refuses an arbitrator pinned to another judge runtime", async function () {
      const c = await loadFixture(FIXTURES.ETH.contested);
      const other = hardhatAccount(SYS.otherRuntimeArbitrator);
      const signers = [...arbitratorKeys().slice(0, 2), other].sort((x, y) => (BigInt(x.address) < BigInt(y.address) ? -1 : 1));
      await expectRevert(resolveWith(c, message, NO_STATE, signers), "WrongJudgeRuntime");
    });

    it("refuses a party signing as arbitrator", async function () {
      const c = await loadFixture(FIXTURES.ETH.contested);
      // Register the provider as an arbitrator too: it still may not judge its own case.
      await c.registry.write.registerArbitrator([DISPUTE_PARAMS.judgeRuntimeHash, PACKAGE_HASH, PACKAGE_HASH], {
        account: c.provider.account,
      });
      await c.registry.write.bond([1, parseEther("50")], { account: c.provider.account });
      const signers = [...arbitratorKeys().slice(0, 2), hardhatAccount(SYS.provider)].sort((x, y) =>
        BigInt(x.address) < BigInt(y.address) ? -1 : 1,
      );
      await expectRevert(resolveWith(c, message, NO_STATE, signers), "ConflictedArbitrator", [
        getAddress(c.provider.account.address),
      ]);
    });

    it("refuses an arbitrator slashed below the minimum stake", async function () {
      const c = await loadFixture(FIXTURES.ETH.contested);
      const [victim] = arbitratorKeys();
      // Only the dispute manager may slash; grant a test slasher to knock this arbitrator out.
      await c.registry.write.grantRole([await c.registry.read.SLASHER_ROLE(), c.governance.account.address]);
      await c.registry.write.slash([1, victim!.address, 1n, c.governance.account.address, 0]);
      await expectRevert(resolveWith(c, message), "NotAnActiveArbitrator", [getAddress(victim!.address)]);
    });

    it("refuses a resolution signed for another case", async function () {
      const c = await loadFixture(FIXTURES.ETH.contested);
      const signed: ResolutionMessage = { caseId: PACKAGE_HASH, resolutionHash: RESOLUTION_HASH, ...message };
      const signatures = await quorumSignatures(c, signed);
      // Submitted for this case, the signatures recover to addresses no arbitrator holds.
      await expectRevert(
        c.disputes.write.resolve([{ ...signed, caseId: c.caseId }, NO_STATE, signatures], { account: c.watcher.account }),
        "NotAnActiveArbitrator",
      );
      await expectRevert(
        c.disputes.write.resolve([signed, NO_STATE, signatures], { account: c.watcher.account }),
        "UnknownCase",
        [PACKAGE_HASH],
      );
    });

    it("refuses a malformed signature, and a malleated twin recovers to no arbitrator", async function () {
      const c = await loadFixture(FIXTURES.ETH.contested);
      const full: ResolutionMessage = { caseId: c.caseId, resolutionHash: RESOLUTION_HASH, ...message };
      const signatures = await quorumSignatures(c, full);
      const bad = [...signatures];
      bad[0] = { r: zeroHash, vs: signatures[0]!.vs };
      await expectRevert(c.disputes.write.resolve([full, NO_STATE, bad], { account: c.watcher.account }), "InvalidSignature", [0n]);
      // The high-s twin (n - s) has its top bit set, which ERC-2098 reads as the parity bit: the compact
      // form cannot carry it, and whatever it decodes to recovers some other address.
      const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
      const vs = BigInt(signatures[0]!.vs);
      const sLow = vs & ((1n << 255n) - 1n);
      const twin = (N - sLow) | (vs >> 255n === 0n ? 1n << 255n : 0n);
      bad[0] = { r: signatures[0]!.r, vs: `0x${(twin & ((1n << 256n) - 1n)).toString(16).padStart(64, "0")}` };
      await expectRevert(c.disputes.write.resolve([full, NO_STATE, bad], { account: c.watcher.account }), "NotAnActiveArbitrator");
    });

    it("accepts more signatures than the quorum", async function () {
      const c = await loadFixture(FIXTURES.ETH.contested);
      await resolveWith(c, message, NO_STATE, arbitratorKeys());
      expect((await c.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.Resolved);
    });
  });

  describe("escalation and the slow path", function () {
    it("a party escalates by topping its bond up to the next lane; lane 2 is the slow path", async function () {
      const c = await loadFixture(FIXTURES.ERC20.contested);
      const lane2 = expectedBond(GIG_AMOUNT, 2);
      const before = await c.token.read.balanceOf([c.provider.account.address]);
      await c.disputes.write.escalate([c.caseId], { account: c.provider.account });
      expect(await c.token.read.balanceOf([c.provider.account.address])).to.equal(before - (lane2 - c.bond));
      const stored = await c.disputes.read.caseOf([c.caseId]);
      expect(stored.lane).to.equal(2);
      expect(stored.status).to.equal(STATUS.SlowPath);
      expect(stored.respondentBond).to.equal(lane2);
      // The fast path is closed: a quorum resolution is refused.
      await expectRevert(resolveWith(c, { verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n }), "WrongCaseStatus", [
        c.caseId,
        STATUS.SlowPath,
      ]);
      // Governance decides: the provider loses; its whole (escalated) bond is the loser's bond.
      const snap = await snapshot(c);
      await c.disputes.write.resolveSlowPath([
        { caseId: c.caseId, verdict: VERDICT.ChallengerWins, refund: GIG_AMOUNT, slash: 0n, resolutionHash: RESOLUTION_HASH },
        NO_STATE,
      ]);
      const d = await deltas(c, snap);
      expect(d.client).to.equal(GIG_AMOUNT + c.bond + lane2 - burnOf(lane2));
      expect(d.burn).to.equal(burnOf(lane2));
      expect(d.manager).to.equal(-(c.bond + lane2));
    });

    it("escalating from lane 0 stays on the fast path with a new deadline", async function () {
      const s = await loadFixture(FIXTURES.ETH.system);
      const c = await openGigCase(s, "ETH", 0);
      expect(c.bond).to.equal(expectedBond(GIG_AMOUNT, 0));
      await s.disputes.write.escalate([c.caseId], { account: s.client.account, value: expectedBond(GIG_AMOUNT, 1) - c.bond });
      const stored = await s.disputes.read.caseOf([c.caseId]);
      expect([stored.lane, stored.status, stored.challengerBond]).to.deep.equal([1, STATUS.Open, expectedBond(GIG_AMOUNT, 1)]);
    });

    it("caps escalations per subject and refuses strangers", async function () {
      const s = await loadFixture(FIXTURES.ETH.system);
      await s.disputes.write.setParams([{ ...DISPUTE_PARAMS, maxEscalations: 1 }]);
      const c = await openGigCase(s, "ETH", 0);
      await expectRevert(s.disputes.write.escalate([c.caseId], { account: s.stranger.account }), "NotAParty");
      await s.disputes.write.escalate([c.caseId], { account: s.client.account, value: expectedBond(GIG_AMOUNT, 1) - c.bond });
      await expectRevert(
        s.disputes.write.escalate([c.caseId], { account: s.client.account, value: expectedBond(GIG_AMOUNT, 2) - expectedBond(GIG_AMOUNT, 1) }),
        "EscalationCapReached",
        [`0x${c.gigId.toString(16).padStart(64, "0")}`, 1],
      );
    });

    it("an undecidable quorum verdict moves the case to the slow path, never to a default outcome", async function () {
      const c = await loadFixture(FIXTURES.ETH.contested);
      await resolveWith(c, { verdict: VERDICT.Undecidable, refund: 0n, slash: 0n });
      const stored = await c.disputes.read.caseOf([c.caseId]);
      expect([stored.status, stored.lane]).to.deep.equal([STATUS.SlowPath, 2]);
      expect((await c.gigs.read.gigOf([c.gigId])).status).to.equal(GIG_STATUS.Disputed);
      await expectRevert(
        c.disputes.write.resolveSlowPath(
          [{ caseId: c.caseId, verdict: VERDICT.Undecidable, refund: 0n, slash: 0n, resolutionHash: RESOLUTION_HASH }, NO_STATE],
        ),
        "InvalidVerdict",
        [VERDICT.Undecidable],
      );
      await expectRevert(
        c.disputes.write.resolveSlowPath(
          [{ caseId: c.caseId, verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n, resolutionHash: RESOLUTION_HASH }, NO_STATE],
          { account: c.stranger.account },
        ),
        "AccessControlUnauthorizedAccount",
      );
    });

    it("no path locks funds: an undecided case goes to the slow path, then expires with bonds returned", async function () {
      const c = await loadFixture(FIXTURES.ETH.contested);
      await expectRevert(c.disputes.write.expire([c.caseId, NO_STATE]), "DeadlineNotPassed");
      await time.increase(DISPUTE_PARAMS.decisionWindow + 1);
      await c.disputes.write.expire([c.caseId, NO_STATE], { account: c.watcher.account });
      expect((await c.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.SlowPath);
      await expectRevert(c.disputes.write.expire([c.caseId, NO_STATE]), "DeadlineNotPassed");
      await time.increase(DISPUTE_PARAMS.slowPathTimeout + 1);
      const before = await snapshot(c);
      await c.disputes.write.expire([c.caseId, NO_STATE], { account: c.watcher.account });
      const d = await deltas(c, before);
      expect(d.client).to.equal(c.bond);
      expect(d.provider).to.equal(GIG_AMOUNT + c.bond);
      expect(d.manager).to.equal(-2n * c.bond);
      expect(d.burn).to.equal(0n);
      expect((await c.disputes.read.caseOf([c.caseId])).status).to.equal(STATUS.Expired);
      await expectRevert(c.disputes.write.expire([c.caseId, NO_STATE]), "WrongCaseStatus", [c.caseId, STATUS.Expired]);
    });

    it("if the gig escrow's own backstop released the gig, a late resolution still settles the bonds", async function () {
      const c = await loadFixture(FIXTURES.ETH.contested);
      await time.increase(MAX_FREEZE_DURATION);
      await c.gigs.write.release([c.gigId], { account: c.watcher.account });
      const before = await snapshot(c);
      await resolveWith(c, { verdict: VERDICT.ChallengerWins, refund: GIG_AMOUNT, slash: 0n });
      const d = await deltas(c, before);
      expect(d.client).to.equal(2n * c.bond - burnOf(c.bond)); // no refund left to give
      expect(d.gigs).to.equal(0n);
    });

    it("caps cases per subject", async function () {
      const s = await loadFixture(FIXTURES.ETH.system);
      // A session stays disputable across cases (a refund-free release keeps its window open).
      const session = await closingSession(s, "ETH");
      for (let i = 0; i < 3; i++) {
        const caseId = await openSessionCase(s, session, 1);
        const signatures = await quorumSignatures(s, {
          caseId,
          verdict: VERDICT.RespondentWins,
          refund: 0n,
          slash: 0n,
          resolutionHash: RESOLUTION_HASH,
        });
        await s.disputes.write.resolve(
          [{ caseId, verdict: VERDICT.RespondentWins, refund: 0n, slash: 0n, resolutionHash: RESOLUTION_HASH }, session.recorded, signatures],
          { account: s.watcher.account },
        );
      }
      await expectRevert(openSessionCase(s, session, 1), "TooManyCases", [session.sessionId]);
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

  /** A session of DEPOSIT whose provider closed with a ticket for 1 ETH over a root of 8 receipt leaves. */
  async function closingSession(s: System, kind: Kind): Promise<Session> {
    const terms = makeTerms(assetOf(s, kind));
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
    const bond = expectedBond(session.recorded.amount, 1);
    await mined(
      s,
      await s.disputes.write.openSessionCase(
        [session.ref.terms, session.ref.openedAt, session.recorded, leaf.receiptHash, leaf.ticketHash, session.tree.proof(index), 1, PACKAGE_HASH],
        { account: from.account, value: ethValue(session.kind, bond) },
      ),
    );
    return caseId;
  }

  for (const kind of ["ETH", "ERC20"] as const) {
    describe(`session cases (${kind})`, function () {
      const fixture = {
        ETH: async function closingEthSession() {
          const s = await systemFixture();
          return { ...s, session: await closingSession(s, "ETH") };
        },
        ERC20: async function closingErc20Session() {
          const s = await systemFixture();
          return { ...s, session: await closingSession(s, "ERC20") };
        },
      }[kind];

      it("proves the challenged leaf against the committed root on-chain and freezes finalisation", async function () {
        const s = await loadFixture(fixture);
        const caseId = await openSessionCase(s, s.session, 5);
        const stored = await s.disputes.read.caseOf([caseId]);
        expect([stored.kind, stored.status, stored.subjectId, stored.value]).to.deep.equal([
          KIND.Session,
          STATUS.Open,
          s.session.sessionId,
          s.session.recorded.amount,
        ]);
        const [matches, , openCases] = await s.escrow.read.closingInfo([s.session.sessionId, s.session.recorded]);
        expect([matches, openCases]).to.deep.equal([true, 1]);
        // Finalisation waits for the case even after the window.
        await time.increase(3600);
        await expectRevert(
          s.escrow.write.finalize([s.session.ref.terms, s.session.ref.openedAt, s.session.recorded]),
          "FrozenByDispute",
          [s.session.sessionId, 1],
        );
      });

      it("lets the funder challenge too, but nobody else", async function () {
        const s = await loadFixture(fixture);
        await expectRevert(openSessionCase(s, s.session, 0, s.provider), "NotTheChallengerSide");
        await expectRevert(openSessionCase(s, s.session, 0, s.stranger), "NotTheChallengerSide");
        await openSessionCase(s, s.session, 0, s.client);
      });

      it("refuses a forged proof, a truncated proof, a leaf from another tree, and an inner node passed off as a leaf", async function () {
        const s = await loadFixture(fixture);
        const { session } = s;
        const bond = expectedBond(session.recorded.amount, 1);
        const attempt = (receiptHash: Hex, ticketHash: Hex, proof: Hex[]) =>
          s.disputes.write.openSessionCase(
            [session.ref.terms, session.ref.openedAt, session.recorded, receiptHash, ticketHash, proof, 1, PACKAGE_HASH],
            { account: s.payerWallet.account, value: ethValue(kind, bond) },
          );
        const leaf = session.leaves[3]!;
        const proof = session.tree.proof(3);
        const forged = [...proof];
        forged[1] = keccak256(stringToBytes("forged sibling"));
        const args = [session.sessionId, session.recorded.receiptRoot];
        await expectRevert(attempt(leaf.receiptHash, leaf.ticketHash, forged), "InvalidMerkleProof", args);
        await expectRevert(attempt(leaf.receiptHash, leaf.ticketHash, proof.slice(0, -1)), "InvalidMerkleProof", args);
        await expectRevert(attempt(leaf.receiptHash, keccak256(stringToBytes("other ticket")), proof), "InvalidMerkleProof", args);
        // The parent of leaves 2 and 3 is a node of the tree; presented as (receiptHash, ticketHash) it is
        // hashed into a leaf first and so never matches.
        const node2 = session.tree.leaf(2);
        const node3 = session.tree.leaf(3);
        const [lo, hi] = BigInt(node2) < BigInt(node3) ? [node2, node3] : [node3, node2];
        await expectRevert(attempt(lo, hi, proof.slice(1)), "InvalidMerkleProof", args);
      });

      it("refuses a stale closing state and a case after the challenge window", async function () {
        const s = await loadFixture(fixture);
        const { session } = s;
        const bond = expectedBond(session.recorded.amount, 1);
        const leaf = session.leaves[0]!;
        await expectRevert(
          s.disputes.write.openSessionCase(
            [session.ref.terms, session.ref.openedAt, { ...session.recorded, amount: 1n }, leaf.receiptHash, leaf.ticketHash, session.tree.proof(0), 1, PACKAGE_HASH],
            { account: s.payerWallet.account, value: ethValue(kind, bond) },
          ),
          "ClosingStateMismatch",
          [session.sessionId],
        );
        await time.increase(3600);
        await expectRevert(openSessionCase(s, session, 0), "ChallengeWindowClosed", undefined, s.escrow.abi);
      });

      it("provider fault: the refund comes off the provider's payout at finalisation; the window ends", async function () {
        const s = await loadFixture(fixture);
        const caseId = await openSessionCase(s, s.session, 2);
        const refund = parseEther("0.125");
        await resolveWith({ ...s, caseId }, { verdict: VERDICT.ChallengerWins, refund, slash: parseEther("1") }, s.session.recorded);
        const after = { ...s.session.recorded, amount: s.session.recorded.amount - refund };
        const [matches, , openCases] = await s.escrow.read.closingInfo([s.session.sessionId, after]);
        expect([matches, openCases]).to.deep.equal([true, 0]);
        const asset = assetOf(s, kind);
        const before = await Promise.all([s.client.account.address, s.provider.account.address].map((a) => balanceOf(s, asset, a)));
        await s.escrow.write.finalize([s.session.ref.terms, s.session.ref.openedAt, after], { account: s.watcher.account });
        const now = await Promise.all([s.client.account.address, s.provider.account.address].map((a) => balanceOf(s, asset, a)));
        expect(now[0]! - before[0]!).to.equal(DEPOSIT - after.amount); // the funder gets the refund and the rest
        expect(now[1]! - before[1]!).to.equal(after.amount);
        expect(await balanceOf(s, asset, s.disputes.address)).to.equal(0n);
      });

      it("a challenge during an open dispute still supersedes, and the resolution applies to the newer state", async function () {
        const s = await loadFixture(fixture);
        const caseId = await openSessionCase(s, s.session, 1);
        // The payer answers with a newer ticket while the case is open (the freeze does not stop challenges).
        const { session } = s;
        const domain = gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: getAddress(s.escrow.address) });
        const amount = parseEther("1.5");
        const ticket = { sessionId: session.sessionId, provider: session.ref.terms.provider, termsHash: session.ref.terms.termsHash, seq: 9n, cumulativeAmount: amount, receiptRoot: session.tree.root() };
        const { signature } = await signPaymentTicket({ account: hardhatAccount(SYS.payer), domain, ticket });
        const newer = { seq: 9n, cumulativeAmount: amount, receiptRoot: session.tree.root(), sig: toCompactSignature(signature) };
        await s.escrow.write.challenge([session.ref.terms, session.ref.openedAt, session.recorded, newer], { account: s.provider.account });
        const current = { ...session.recorded, seq: 9n, amount };
        // The stale state no longer matches, so a resolution must carry the current one.
        await expectRevert(
          resolveWith({ ...s, caseId }, { verdict: VERDICT.ChallengerWins, refund: 1n, slash: 0n }, session.recorded),
          "ClosingStateMismatch",
          undefined,
          s.escrow.abi,
        );
        await resolveWith({ ...s, caseId }, { verdict: VERDICT.ChallengerWins, refund: parseEther("0.5"), slash: 0n }, current);
        const [matches] = await s.escrow.read.closingInfo([session.sessionId, { ...current, amount: parseEther("1") }]);
        expect(matches).to.equal(true);
      });
    });
  }

  describe("who may slash", function () {
    it("refuses a slash from anyone but the dispute manager", async function () {
      const s = await loadFixture(FIXTURES.ETH.system);
      for (const wallet of [s.governance, s.client, s.provider, s.stranger]) {
        await expectRevert(
          s.registry.write.slash([0, s.provider.account.address, 1n, wallet.account.address, 0], { account: wallet.account }),
          "AccessControlUnauthorizedAccount",
        );
      }
      expect(await s.registry.read.hasRole([await s.registry.read.SLASHER_ROLE(), s.disputes.address])).to.equal(true);
    });
  });
});
