import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox-viem/network-helpers";
import { ml_dsa44 } from "@noble/post-quantum/ml-dsa.js";
import { expect } from "chai";
import hre from "hardhat";
import {
  decodeErrorResult,
  encodeFunctionData,
  getAddress,
  keccak256,
  maxUint256,
  parseEther,
  parseEventLogs,
  stringToBytes,
  zeroAddress,
  zeroHash,
  type Abi,
  type Address,
  type Hash,
  type Hex,
} from "viem";

import { expectRevert as expectRevertWith } from "../helpers/revert";

/*//////////////////////////////////////////////////////////////
                         REVERT ASSERTIONS
//////////////////////////////////////////////////////////////*/

/** Everything a registry call can revert with: its own ABI, with OpenZeppelin's AccessControl errors. */
const DECODE_ABI: Abi = hre.artifacts.readArtifactSync("ProviderRegistry").abi as Abi;

/** Awaits a registry call or deployment that must revert with `errorName` and exactly `args`. */
const expectRevert = (promise: Promise<unknown>, errorName: string, args: readonly unknown[]) =>
  expectRevertWith(promise, errorName, args, DECODE_ABI);

/*//////////////////////////////////////////////////////////////
                              FIXTURES
//////////////////////////////////////////////////////////////*/

const MIN_PROVIDER_BOND = parseEther("100");
// Different from the provider minimum, so that a mix-up of the two shows.
const MIN_ARBITRATOR_STAKE = parseEther("250");
const DELAY = 45n * 24n * 3600n;
const MIN_DELAY = 30n * 24n * 3600n;
const MAX_DELAY = 90n * 24n * 3600n;
const MAX_BOND = 2n ** 104n - 1n;
const BPS = 10_000;
const BURN_ADDRESS: Address = "0x000000000000000000000000000000000000dEaD";
const SUPPLY = parseEther("1000000");
/** A bond above both minimums. */
const BOND = parseEther("400");

/** Hardhat account indices. */
const ACCOUNT = { deployer: 0, governance: 1, slasher: 2, member: 3, other: 4, stranger: 5, beneficiary: 6 } as const;

/** Role ids as the ABI carries them (`IProviderRegistry.Role`). */
const PROVIDER = 0;
const ARBITRATOR = 1;
/** `IProviderRegistry.UnbondPhase`. */
const PHASE = { None: 0, Unbonding: 1, Withdrawable: 2 } as const;

/** A real ML-DSA-44 public key from a fixed seed, hashed the way the registry expects (keccak256 of its bytes). */
function mldsaPublicKeyHash(label: string): Hex {
  const { publicKey } = ml_dsa44.keygen(keccak256(stringToBytes(label), "bytes"));
  expect(publicKey.length).to.equal(1312);
  return keccak256(publicKey);
}

/** Every field either record can carry; each role reads the ones it has. */
type Identity = {
  endpoint: string;
  capabilitiesHash: Hex;
  judgeRuntimeHash: Hex;
  didHash: Hex;
  mldsaPublicKeyHash: Hex;
};

function identity(label: string, overrides: Partial<Identity> = {}): Identity {
  return {
    endpoint: `https://${label}.example:8443/v1`,
    capabilitiesHash: keccak256(stringToBytes(`{"gpu":"h100","label":"${label}"}`)),
    judgeRuntimeHash: keccak256(stringToBytes(`judge-runtime@sha256:${label}`)),
    didHash: keccak256(stringToBytes(`did:ioi:${label}`)),
    mldsaPublicKeyHash: mldsaPublicKeyHash(label),
    ...overrides,
  };
}

async function deployRegistry(governance: Address, token: Address) {
  return hre.viem.deployContract("ProviderRegistry", [
    governance,
    token,
    MIN_PROVIDER_BOND,
    MIN_ARBITRATOR_STAKE,
    DELAY,
  ]);
}

/** A registry on LaborGas; `member`, `other` and `stranger` hold tokens and approved it; `slasher` holds SLASHER_ROLE. */
async function registryFixture() {
  const publicClient = await hre.viem.getPublicClient();
  const wallets = await hre.viem.getWalletClients();
  const deployer = wallets[ACCOUNT.deployer]!;
  const governance = wallets[ACCOUNT.governance]!;
  const token = await hre.viem.deployContract("LaborGas", [deployer.account.address]);
  const registry = await deployRegistry(governance.account.address, token.address);
  for (const index of [ACCOUNT.member, ACCOUNT.other, ACCOUNT.stranger]) {
    const wallet = wallets[index]!;
    await token.write.mint([wallet.account.address, SUPPLY]);
    await token.write.approve([registry.address, SUPPLY], { account: wallet.account });
  }
  const slasher = wallets[ACCOUNT.slasher]!;
  const slasherRole = await registry.read.SLASHER_ROLE();
  await registry.write.grantRole([slasherRole, slasher.account.address], { account: governance.account });
  return {
    publicClient,
    wallets,
    token,
    registry,
    governance,
    slasher,
    member: wallets[ACCOUNT.member]!,
    other: wallets[ACCOUNT.other]!,
    stranger: wallets[ACCOUNT.stranger]!,
    beneficiary: wallets[ACCOUNT.beneficiary]!,
  };
}

type Ctx = Awaited<ReturnType<typeof registryFixture>>;
type Wallet = Ctx["member"];

/** Everything that differs between the two roles; the suites below run once per entry. */
type RoleSpec = {
  name: "Provider" | "Arbitrator";
  id: number;
  min: bigint;
  register: (c: Ctx, from: Wallet, id: Identity) => Promise<Hash>;
  update: (c: Ctx, from: Wallet, id: Identity) => Promise<Hash>;
  /** The record view, normalised to an object. */
  record: (c: Ctx, who: Address) => Promise<unknown>;
  expectedRecord: (id: Identity) => unknown;
  emptyRecord: unknown;
  isActive: (c: Ctx, who: Address) => Promise<boolean>;
  registeredEvent: "ProviderRegistered" | "ArbitratorRegistered";
  updatedEvent: "ProviderUpdated" | "ArbitratorUpdated";
  eventArgs: (who: Address, id: Identity) => Record<string, unknown>;
  /** Field overrides that break registration, the error each must raise, and its arguments. */
  invalid: { name: string; fields: Partial<Identity>; error: string; args: readonly unknown[] }[];
};

const IDENTITY_CASES = [
  { name: "a zero DID hash", fields: { didHash: zeroHash }, error: "ZeroDidHash", args: [] },
  { name: "a zero ML-DSA key hash", fields: { mldsaPublicKeyHash: zeroHash }, error: "ZeroMldsaPublicKeyHash", args: [] },
] as const;

const ROLES: readonly RoleSpec[] = [
  {
    name: "Provider",
    id: PROVIDER,
    min: MIN_PROVIDER_BOND,
    register: (c, from, id) =>
      c.registry.write.registerProvider([id.endpoint, id.capabilitiesHash, id.didHash, id.mldsaPublicKeyHash], {
        account: from.account,
      }),
    update: (c, from, id) =>
      c.registry.write.updateProvider([id.endpoint, id.capabilitiesHash, id.didHash, id.mldsaPublicKeyHash], {
        account: from.account,
      }),
    record: (c, who) => c.registry.read.providerOf([who]),
    expectedRecord: (id) => ({
      endpoint: id.endpoint,
      capabilitiesHash: id.capabilitiesHash,
      didHash: id.didHash,
      mldsaPublicKeyHash: id.mldsaPublicKeyHash,
    }),
    emptyRecord: { endpoint: "", capabilitiesHash: zeroHash, didHash: zeroHash, mldsaPublicKeyHash: zeroHash },
    isActive: (c, who) => c.registry.read.isActiveProvider([who]),
    registeredEvent: "ProviderRegistered",
    updatedEvent: "ProviderUpdated",
    eventArgs: (who, id) => ({
      provider: getAddress(who),
      didHash: id.didHash,
      endpoint: id.endpoint,
      capabilitiesHash: id.capabilitiesHash,
      mldsaPublicKeyHash: id.mldsaPublicKeyHash,
    }),
    invalid: [
      ...IDENTITY_CASES,
      { name: "a zero capabilities hash", fields: { capabilitiesHash: zeroHash }, error: "ZeroCapabilitiesHash", args: [] },
      { name: "an empty endpoint", fields: { endpoint: "" }, error: "EndpointLengthOutOfRange", args: [0n, 1n, 256n] },
      {
        name: "a 257-byte endpoint",
        fields: { endpoint: "e".repeat(257) },
        error: "EndpointLengthOutOfRange",
        args: [257n, 1n, 256n],
      },
      {
        // 129 two-byte characters: the limit counts bytes, not characters.
        name: "a 258-byte endpoint of 129 characters",
        fields: { endpoint: "é".repeat(129) },
        error: "EndpointLengthOutOfRange",
        args: [258n, 1n, 256n],
      },
    ],
  },
  {
    name: "Arbitrator",
    id: ARBITRATOR,
    min: MIN_ARBITRATOR_STAKE,
    register: (c, from, id) =>
      c.registry.write.registerArbitrator([id.judgeRuntimeHash, id.didHash, id.mldsaPublicKeyHash], {
        account: from.account,
      }),
    update: (c, from, id) =>
      c.registry.write.updateArbitrator([id.judgeRuntimeHash, id.didHash, id.mldsaPublicKeyHash], {
        account: from.account,
      }),
    record: (c, who) => c.registry.read.arbitratorOf([who]),
    expectedRecord: (id) => ({
      judgeRuntimeHash: id.judgeRuntimeHash,
      didHash: id.didHash,
      mldsaPublicKeyHash: id.mldsaPublicKeyHash,
    }),
    emptyRecord: { judgeRuntimeHash: zeroHash, didHash: zeroHash, mldsaPublicKeyHash: zeroHash },
    isActive: (c, who) => c.registry.read.isActiveArbitrator([who]),
    registeredEvent: "ArbitratorRegistered",
    updatedEvent: "ArbitratorUpdated",
    eventArgs: (who, id) => ({
      arbitrator: getAddress(who),
      didHash: id.didHash,
      judgeRuntimeHash: id.judgeRuntimeHash,
      mldsaPublicKeyHash: id.mldsaPublicKeyHash,
    }),
    invalid: [
      ...IDENTITY_CASES,
      { name: "a zero judge runtime hash", fields: { judgeRuntimeHash: zeroHash }, error: "ZeroJudgeRuntimeHash", args: [] },
    ],
  },
];

const MEMBER_ID = identity("member");

/** `member` registered as `spec`'s role, with no bond (an arbitrator also admitted to the pool by governance). */
async function registered(spec: RoleSpec) {
  const c = await registryFixture();
  await spec.register(c, c.member, MEMBER_ID);
  if (spec.id === ARBITRATOR) {
    await c.registry.write.admitArbitrator([c.member.account.address], { account: c.governance.account });
  }
  return c;
}

/** `member` registered as `spec`'s role with BOND active. */
async function bonded(spec: RoleSpec) {
  const c = await registered(spec);
  await c.registry.write.bond([spec.id, BOND], { account: c.member.account });
  return c;
}

/** Named fixtures per role, so that `loadFixture` snapshots each once. */
const FIXTURES = {
  Provider: {
    registered: async function registeredProvider() {
      return registered(ROLES[0]!);
    },
    bonded: async function bondedProvider() {
      return bonded(ROLES[0]!);
    },
  },
  Arbitrator: {
    registered: async function registeredArbitrator() {
      return registered(ROLES[1]!);
    },
    bonded: async function bondedArbitrator() {
      return bonded(ROLES[1]!);
    },
  },
} as const;

/** A registry bonded in a 1 %-fee token; `member` is a registered provider holding and having approved it. */
async function feeTokenFixture() {
  const c = await registryFixture();
  const feeToken = await hre.viem.deployContract("FeeOnTransferToken", [100n]);
  const registry = await deployRegistry(c.governance.account.address, feeToken.address);
  await feeToken.write.mint([c.member.account.address, SUPPLY]);
  await feeToken.write.approve([registry.address, SUPPLY], { account: c.member.account });
  await registry.write.registerProvider(
    [MEMBER_ID.endpoint, MEMBER_ID.capabilitiesHash, MEMBER_ID.didHash, MEMBER_ID.mldsaPublicKeyHash],
    { account: c.member.account },
  );
  return { ...c, feeToken, feeRegistry: registry };
}

/*//////////////////////////////////////////////////////////////
                              HELPERS
//////////////////////////////////////////////////////////////*/

async function mined(c: Ctx, hash: Hash) {
  const receipt = await c.publicClient.waitForTransactionReceipt({ hash });
  expect(receipt.status).to.equal("success");
  return receipt;
}

/** The registry's events in a receipt, decoded, in order. */
async function eventsOf(c: Ctx, hash: Hash, registry: Address = c.registry.address) {
  const receipt = await mined(c, hash);
  const logs = receipt.logs.filter((l) => getAddress(l.address) === getAddress(registry));
  return { receipt, events: parseEventLogs({ abi: c.registry.abi, logs }) };
}

/** The timestamp of the block a receipt was mined in. */
async function minedAt(c: Ctx, blockNumber: bigint): Promise<bigint> {
  return (await c.publicClient.getBlock({ blockNumber })).timestamp;
}

async function bondOf(c: Ctx, role: number, who: Address) {
  const b = await c.registry.read.bondOf([role, who]);
  return { active: b.active, pending: b.pending, unlockAt: BigInt(b.unlockAt) };
}

async function balances(c: Ctx, who: readonly Address[]): Promise<bigint[]> {
  return Promise.all(who.map((a) => c.token.read.balanceOf([a])));
}

/*//////////////////////////////////////////////////////////////
                              THE SUITE
//////////////////////////////////////////////////////////////*/

describe("ProviderRegistry", () => {
  describe("deployment", () => {
    it("grants governance the admin and governance roles, records the parameters and emits them", async () => {
      const c = await loadFixture(registryFixture);
      const { contract, deploymentTransaction } = await hre.viem.sendDeploymentTransaction("ProviderRegistry", [
        c.governance.account.address,
        c.token.address,
        MIN_PROVIDER_BOND,
        MIN_ARBITRATOR_STAKE,
        DELAY,
      ]);
      const { events } = await eventsOf(c, deploymentTransaction.hash, contract.address);
      const ofInterest = events.filter((e) => e.eventName !== "RoleGranted");
      expect(ofInterest.map((e) => [e.eventName, e.args])).to.deep.equal([
        ["MinimumsSet", { minProviderBond: MIN_PROVIDER_BOND, minArbitratorStake: MIN_ARBITRATOR_STAKE }],
        ["UnbondingDelaySet", { unbondingDelay: DELAY }],
      ]);

      const governanceRole = await contract.read.GOVERNANCE_ROLE();
      const slasherRole = await contract.read.SLASHER_ROLE();
      const adminRole = await contract.read.DEFAULT_ADMIN_ROLE();
      expect(governanceRole).to.equal(keccak256(stringToBytes("GOVERNANCE_ROLE")));
      expect(slasherRole).to.equal(keccak256(stringToBytes("SLASHER_ROLE")));
      expect(adminRole).to.equal(zeroHash);
      const gov = c.governance.account.address;
      const deployer = c.wallets[ACCOUNT.deployer]!.account.address;
      expect(await contract.read.hasRole([adminRole, gov])).to.equal(true);
      expect(await contract.read.hasRole([governanceRole, gov])).to.equal(true);
      expect(await contract.read.hasRole([slasherRole, gov])).to.equal(false);
      expect(await contract.read.hasRole([adminRole, deployer])).to.equal(false);
      expect(await contract.read.hasRole([governanceRole, deployer])).to.equal(false);

      expect(await contract.read.bondToken()).to.equal(getAddress(c.token.address));
      expect(await contract.read.minProviderBond()).to.equal(MIN_PROVIDER_BOND);
      expect(await contract.read.minArbitratorStake()).to.equal(MIN_ARBITRATOR_STAKE);
      expect(await contract.read.unbondingDelay()).to.equal(DELAY);
      expect(await contract.read.BURN_ADDRESS()).to.equal(BURN_ADDRESS);
      expect(await contract.read.MAX_BOND()).to.equal(MAX_BOND);
    });

    for (const [delay, label] of [
      [MIN_DELAY, "the shortest"],
      [MAX_DELAY, "the longest"],
    ] as const) {
      it(`accepts ${label} unbonding delay (${delay} s) and minimums of 1 and MAX_BOND`, async () => {
        const c = await loadFixture(registryFixture);
        const r = await hre.viem.deployContract("ProviderRegistry", [
          c.governance.account.address,
          c.token.address,
          1n,
          MAX_BOND,
          delay,
        ]);
        expect(await r.read.unbondingDelay()).to.equal(delay);
        expect(await r.read.minProviderBond()).to.equal(1n);
        expect(await r.read.minArbitratorStake()).to.equal(MAX_BOND);
      });
    }

    type DeployCase = {
      name: string;
      params: (c: Ctx) => [Address, Address, bigint, bigint, bigint];
      error: string;
      args: (c: Ctx) => readonly unknown[];
    };
    const good = (c: Ctx): [Address, Address, bigint, bigint, bigint] => [
      c.governance.account.address,
      c.token.address,
      MIN_PROVIDER_BOND,
      MIN_ARBITRATOR_STAKE,
      DELAY,
    ];
    const with_ = (i: number, v: Address | bigint) => (c: Ctx) => {
      const p = good(c);
      p[i] = v;
      return p;
    };
    const deployCases: DeployCase[] = [
      { name: "a zero governance", params: with_(0, zeroAddress), error: "ZeroGovernance", args: () => [] },
      { name: "a zero bond token", params: with_(1, zeroAddress), error: "BondTokenNotContract", args: () => [zeroAddress] },
      {
        name: "a bond token without code",
        params: (c) => with_(1, c.stranger.account.address)(c),
        error: "BondTokenNotContract",
        args: (c) => [getAddress(c.stranger.account.address)],
      },
      {
        name: "a zero minimum provider bond",
        params: with_(2, 0n),
        error: "MinimumOutOfRange",
        args: () => [PROVIDER, 0n, 1n, MAX_BOND],
      },
      {
        name: "a minimum provider bond above MAX_BOND",
        params: with_(2, MAX_BOND + 1n),
        error: "MinimumOutOfRange",
        args: () => [PROVIDER, MAX_BOND + 1n, 1n, MAX_BOND],
      },
      {
        name: "a zero minimum arbitrator stake",
        params: with_(3, 0n),
        error: "MinimumOutOfRange",
        args: () => [ARBITRATOR, 0n, 1n, MAX_BOND],
      },
      {
        name: "a minimum arbitrator stake above MAX_BOND",
        params: with_(3, MAX_BOND + 1n),
        error: "MinimumOutOfRange",
        args: () => [ARBITRATOR, MAX_BOND + 1n, 1n, MAX_BOND],
      },
      {
        name: "a zero unbonding delay",
        params: with_(4, 0n),
        error: "UnbondingDelayOutOfRange",
        args: () => [0n, MIN_DELAY, MAX_DELAY],
      },
      {
        name: "an unbonding delay one second too short",
        params: with_(4, MIN_DELAY - 1n),
        error: "UnbondingDelayOutOfRange",
        args: () => [MIN_DELAY - 1n, MIN_DELAY, MAX_DELAY],
      },
      {
        name: "an unbonding delay one second too long",
        params: with_(4, MAX_DELAY + 1n),
        error: "UnbondingDelayOutOfRange",
        args: () => [MAX_DELAY + 1n, MIN_DELAY, MAX_DELAY],
      },
    ];
    for (const t of deployCases) {
      it(`refuses ${t.name} with ${t.error}`, async () => {
        const c = await loadFixture(registryFixture);
        await expectRevert(hre.viem.deployContract("ProviderRegistry", t.params(c)), t.error, t.args(c));
      });
    }
  });

  describe("computeSlash", () => {
    const HALF = 2n ** 255n;
    const BIG_BURN = (maxUint256 * 3_333n) / 10_000n;
    // (active, pending, amount, burnBps) → (fromActive, fromPending, burned, toBeneficiary)
    const table: [bigint, bigint, bigint, number, bigint, bigint, bigint, bigint][] = [
      [100n, 0n, 40n, 0, 40n, 0n, 0n, 40n],
      [100n, 0n, 40n, 10_000, 40n, 0n, 40n, 0n],
      [100n, 0n, 40n, 2_500, 40n, 0n, 10n, 30n],
      [100n, 50n, 100n, 5_000, 100n, 0n, 50n, 50n],
      [100n, 50n, 120n, 5_000, 100n, 20n, 60n, 60n],
      [0n, 50n, 50n, 1_000, 0n, 50n, 5n, 45n],
      // Rounding: the burn rounds down, the beneficiary receives the remainder.
      [3n, 0n, 3n, 5_000, 3n, 0n, 1n, 2n],
      [1n, 0n, 1n, 9_999, 1n, 0n, 0n, 1n],
      // Truncation: never more than active + pending (callers compare with amount).
      [10n, 5n, 100n, 0, 10n, 5n, 0n, 15n],
      [MAX_BOND, 0n, MAX_BOND, 10_000, MAX_BOND, 0n, MAX_BOND, 0n],
      // Full-width arithmetic: taken × burnBps overflows 256 bits, mulDiv does not.
      [HALF, HALF - 1n, maxUint256, 3_333, HALF, HALF - 1n, BIG_BURN, maxUint256 - BIG_BURN],
    ];
    for (const [active, pending, amount, burnBps, ...expected] of table) {
      it(`splits a slash of ${amount} at ${burnBps} bps from (active ${active}, pending ${pending})`, async () => {
        const { registry } = await loadFixture(registryFixture);
        expect(await registry.read.computeSlash([active, pending, amount, burnBps])).to.deep.equal(expected);
      });
    }

    it("refuses more than 10,000 bps with BurnBpsOutOfRange", async () => {
      const { registry } = await loadFixture(registryFixture);
      await expectRevert(registry.read.computeSlash([100n, 0n, 1n, BPS + 1]), "BurnBpsOutOfRange", [BPS + 1, BPS]);
    });
  });

  for (const spec of ROLES) {
    const fixtures = FIXTURES[spec.name];
    const other = spec.id === PROVIDER ? ARBITRATOR : PROVIDER;

    describe(spec.name, () => {
      /*////////////////////////////// registration //////////////////////////////*/
      describe("registration", () => {
        it("registers: stores the record, emits it in full, and is not active without a bond", async () => {
          const c = await loadFixture(registryFixture);
          const who = c.member.account.address;
          expect(await spec.record(c, who)).to.deep.equal(spec.emptyRecord);
          expect(await c.registry.read.isRegistered([spec.id, who])).to.equal(false);

          const { events } = await eventsOf(c, await spec.register(c, c.member, MEMBER_ID));
          expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([
            [spec.registeredEvent, spec.eventArgs(who, MEMBER_ID)],
          ]);
          expect(await spec.record(c, who)).to.deep.equal(spec.expectedRecord(MEMBER_ID));
          expect(await c.registry.read.isRegistered([spec.id, who])).to.equal(true);
          expect(await c.registry.read.isRegistered([other, who])).to.equal(false);
          expect(await spec.isActive(c, who)).to.equal(false);
          expect(await c.registry.read.judgeRuntimeHashOf([who])).to.equal(
            spec.id === ARBITRATOR ? MEMBER_ID.judgeRuntimeHash : zeroHash,
          );
        });

        if (spec.id === PROVIDER) {
          for (const endpoint of ["x", "e".repeat(256), "é".repeat(128)]) {
            it(`accepts an endpoint of ${stringToBytes(endpoint).length} bytes (${endpoint.length} characters)`, async () => {
              const c = await loadFixture(registryFixture);
              const id = identity("edge", { endpoint });
              await mined(c, await spec.register(c, c.member, id));
              expect(await c.registry.read.providerOf([c.member.account.address])).to.deep.equal(spec.expectedRecord(id));
            });
          }
        }

        it("refuses a second registration with AlreadyRegistered", async () => {
          const c = await loadFixture(fixtures.registered);
          await expectRevert(spec.register(c, c.member, identity("again")), "AlreadyRegistered", [
            spec.id,
            getAddress(c.member.account.address),
          ]);
        });

        it("updates: replaces the record, emits it in full, and keeps the bond and active status", async () => {
          const c = await loadFixture(fixtures.bonded);
          const who = c.member.account.address;
          const next = identity("rotated", { endpoint: "quic://10.0.0.7:4433" });
          const { events } = await eventsOf(c, await spec.update(c, c.member, next));
          expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([[spec.updatedEvent, spec.eventArgs(who, next)]]);
          expect(await spec.record(c, who)).to.deep.equal(spec.expectedRecord(next));
          expect(await bondOf(c, spec.id, who)).to.deep.equal({ active: BOND, pending: 0n, unlockAt: 0n });
          expect(await spec.isActive(c, who)).to.equal(true);
        });

        it("refuses an update from an unregistered account with NotRegistered", async () => {
          const c = await loadFixture(registryFixture);
          await expectRevert(spec.update(c, c.member, MEMBER_ID), "NotRegistered", [
            spec.id,
            getAddress(c.member.account.address),
          ]);
        });

        for (const t of spec.invalid) {
          it(`refuses to register with ${t.name} (${t.error})`, async () => {
            const c = await loadFixture(registryFixture);
            await expectRevert(spec.register(c, c.member, identity("bad", t.fields)), t.error, t.args);
            expect(await c.registry.read.isRegistered([spec.id, c.member.account.address])).to.equal(false);
          });

          it(`refuses to update to ${t.name} (${t.error})`, async () => {
            const c = await loadFixture(fixtures.registered);
            await expectRevert(spec.update(c, c.member, identity("bad", t.fields)), t.error, t.args);
            expect(await spec.record(c, c.member.account.address)).to.deep.equal(spec.expectedRecord(MEMBER_ID));
          });
        }
      });

      /*////////////////////////////// bond //////////////////////////////*/
      describe("bond", () => {
        it("posts a bond below the minimum, then tops it up to active: events, state and balances exact", async () => {
          const c = await loadFixture(fixtures.registered);
          const who = c.member.account.address;
          const first = spec.min - 1n;
          const [memberBefore, registryBefore] = await balances(c, [who, c.registry.address]);

          const { result } = await c.registry.simulate.bond([spec.id, first], { account: c.member.account.address });
          expect(result).to.equal(first);
          let { events } = await eventsOf(c, await c.registry.write.bond([spec.id, first], { account: c.member.account }));
          expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([
            ["Bonded", { role: spec.id, account: getAddress(who), received: first, active: first }],
          ]);
          expect(await bondOf(c, spec.id, who)).to.deep.equal({ active: first, pending: 0n, unlockAt: 0n });
          expect(await spec.isActive(c, who)).to.equal(false);

          ({ events } = await eventsOf(c, await c.registry.write.bond([spec.id, 1n], { account: c.member.account })));
          expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([
            ["Bonded", { role: spec.id, account: getAddress(who), received: 1n, active: spec.min }],
          ]);
          expect(await bondOf(c, spec.id, who)).to.deep.equal({ active: spec.min, pending: 0n, unlockAt: 0n });
          expect(await spec.isActive(c, who)).to.equal(true);
          expect(await c.registry.read.unbondPhaseOf([spec.id, who])).to.equal(PHASE.None);

          expect(await balances(c, [who, c.registry.address])).to.deep.equal([
            memberBefore - spec.min,
            registryBefore + spec.min,
          ]);
          // The other role's bond is a separate balance.
          expect(await bondOf(c, other, who)).to.deep.equal({ active: 0n, pending: 0n, unlockAt: 0n });
        });

        it("refuses an unregistered account with NotRegistered", async () => {
          const c = await loadFixture(registryFixture);
          await expectRevert(c.registry.write.bond([spec.id, BOND], { account: c.stranger.account }), "NotRegistered", [
            spec.id,
            getAddress(c.stranger.account.address),
          ]);
        });

        it("refuses a bond of zero with ZeroAmount", async () => {
          const c = await loadFixture(fixtures.registered);
          await expectRevert(c.registry.write.bond([spec.id, 0n], { account: c.member.account }), "ZeroAmount", []);
        });

        it("refuses a bond the caller has not approved with solady's TransferFromFailed", async () => {
          const c = await loadFixture(fixtures.registered);
          await c.token.write.approve([c.registry.address, BOND - 1n], { account: c.member.account });
          await expectRevert(
            c.registry.write.bond([spec.id, BOND], { account: c.member.account }),
            "TransferFromFailed",
            [],
          );
        });

        it("refuses to hold more than MAX_BOND in active plus pending with BondExceedsMaximum", async () => {
          const c = await loadFixture(fixtures.registered);
          const who = c.member.account.address;
          await c.token.write.mint([who, MAX_BOND]);
          await c.token.write.approve([c.registry.address, MAX_BOND + 1n], { account: c.member.account });
          await c.registry.write.bond([spec.id, MAX_BOND], { account: c.member.account });
          await c.registry.write.requestUnbond([spec.id, 5n], { account: c.member.account });
          // Pending still counts: active MAX_BOND - 5 plus pending 5 plus 1 more is one too many.
          await expectRevert(c.registry.write.bond([spec.id, 1n], { account: c.member.account }), "BondExceedsMaximum", [
            spec.id,
            getAddress(who),
            MAX_BOND + 1n,
            MAX_BOND,
          ]);
          expect(await bondOf(c, spec.id, who)).to.include({ active: MAX_BOND - 5n, pending: 5n });
        });
      });

      /*////////////////////////////// requestUnbond //////////////////////////////*/
      describe("requestUnbond", () => {
        it("moves the amount to pending with unlockAt = now + delay; dropping below the minimum deactivates", async () => {
          const c = await loadFixture(fixtures.bonded);
          const who = c.member.account.address;
          const amount = BOND - spec.min + 1n; // leaves one below the minimum active
          const registryBefore = await c.token.read.balanceOf([c.registry.address]);

          const at = (await time.latest()) + 100;
          await time.setNextBlockTimestamp(at);
          const { result } = await c.registry.simulate.requestUnbond([spec.id, amount], {
            account: c.member.account.address,
            blockTag: "pending",
          });
          const { receipt, events } = await eventsOf(
            c,
            await c.registry.write.requestUnbond([spec.id, amount], { account: c.member.account }),
          );
          const unlockAt = BigInt(at) + DELAY;
          expect(await minedAt(c, receipt.blockNumber)).to.equal(BigInt(at));
          expect(result).to.equal(unlockAt);
          expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([
            [
              "UnbondRequested",
              { role: spec.id, account: getAddress(who), amount, active: spec.min - 1n, pending: amount, unlockAt },
            ],
          ]);
          expect(await bondOf(c, spec.id, who)).to.deep.equal({ active: spec.min - 1n, pending: amount, unlockAt });
          expect(await c.registry.read.unbondPhaseOf([spec.id, who])).to.equal(PHASE.Unbonding);
          expect(await spec.isActive(c, who)).to.equal(false);
          // Nothing leaves the registry until withdraw.
          expect(await c.token.read.balanceOf([c.registry.address])).to.equal(registryBefore);
        });

        it("adds a second request to pending and restarts the delay for all of it", async () => {
          const c = await loadFixture(fixtures.bonded);
          const who = c.member.account.address;
          await c.registry.write.requestUnbond([spec.id, 10n], { account: c.member.account });
          const firstUnlock = (await bondOf(c, spec.id, who)).unlockAt;
          await time.increase(DELAY - 10n);

          const { receipt, events } = await eventsOf(
            c,
            await c.registry.write.requestUnbond([spec.id, 5n], { account: c.member.account }),
          );
          const unlockAt = (await minedAt(c, receipt.blockNumber)) + DELAY;
          expect(unlockAt > firstUnlock).to.equal(true);
          expect(events.map((e) => e.args)).to.deep.equal([
            { role: spec.id, account: getAddress(who), amount: 5n, active: BOND - 15n, pending: 15n, unlockAt },
          ]);
          expect(await bondOf(c, spec.id, who)).to.deep.equal({ active: BOND - 15n, pending: 15n, unlockAt });
          // The first request's unlock time has passed, but the restarted delay holds all of it back.
          await time.setNextBlockTimestamp(firstUnlock + 1n);
          await expectRevert(c.registry.write.withdraw([spec.id], { account: c.member.account }), "UnbondingNotElapsed", [
            spec.id,
            getAddress(who),
            unlockAt,
            firstUnlock + 1n,
          ]);
        });

        it("keeps the unlock time of a request when governance later changes the delay", async () => {
          const c = await loadFixture(fixtures.bonded);
          const who = c.member.account.address;
          await c.registry.write.requestUnbond([spec.id, 10n], { account: c.member.account });
          const { unlockAt } = await bondOf(c, spec.id, who);
          await c.registry.write.setUnbondingDelay([MAX_DELAY], { account: c.governance.account });
          expect((await bondOf(c, spec.id, who)).unlockAt).to.equal(unlockAt);
          await time.increaseTo(unlockAt);
          await mined(c, await c.registry.write.withdraw([spec.id], { account: c.member.account }));
        });

        it("refuses an amount of zero with ZeroAmount", async () => {
          const c = await loadFixture(fixtures.bonded);
          await expectRevert(c.registry.write.requestUnbond([spec.id, 0n], { account: c.member.account }), "ZeroAmount", []);
        });

        it("refuses more than the active bond (pending does not count) with InsufficientActiveBond", async () => {
          const c = await loadFixture(fixtures.bonded);
          const who = getAddress(c.member.account.address);
          await expectRevert(
            c.registry.write.requestUnbond([spec.id, BOND + 1n], { account: c.member.account }),
            "InsufficientActiveBond",
            [spec.id, who, BOND + 1n, BOND],
          );
          await c.registry.write.requestUnbond([spec.id, BOND - 1n], { account: c.member.account });
          await expectRevert(
            c.registry.write.requestUnbond([spec.id, 2n], { account: c.member.account }),
            "InsufficientActiveBond",
            [spec.id, who, 2n, 1n],
          );
        });

        it("refuses an account with no bond with InsufficientActiveBond", async () => {
          const c = await loadFixture(registryFixture);
          await expectRevert(
            c.registry.write.requestUnbond([spec.id, 1n], { account: c.stranger.account }),
            "InsufficientActiveBond",
            [spec.id, getAddress(c.stranger.account.address), 1n, 0n],
          );
        });
      });

      /*////////////////////////////// withdraw //////////////////////////////*/
      describe("withdraw", () => {
        it("refuses one second before unlockAt with UnbondingNotElapsed, then pays out exactly at unlockAt", async () => {
          const c = await loadFixture(fixtures.bonded);
          const who = c.member.account.address;
          const amount = parseEther("30");
          await c.registry.write.requestUnbond([spec.id, amount], { account: c.member.account });
          const { unlockAt } = await bondOf(c, spec.id, who);

          await time.setNextBlockTimestamp(unlockAt - 1n);
          await expectRevert(c.registry.write.withdraw([spec.id], { account: c.member.account }), "UnbondingNotElapsed", [
            spec.id,
            getAddress(who),
            unlockAt,
            unlockAt - 1n,
          ]);

          await time.setNextBlockTimestamp(unlockAt);
          const [memberBefore, registryBefore] = await balances(c, [who, c.registry.address]);
          const { result } = await c.registry.simulate.withdraw([spec.id], {
            account: c.member.account.address,
            blockTag: "pending",
          });
          expect(result).to.equal(amount);
          const { receipt, events } = await eventsOf(
            c,
            await c.registry.write.withdraw([spec.id], { account: c.member.account }),
          );
          expect(await minedAt(c, receipt.blockNumber)).to.equal(unlockAt);
          expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([
            ["Withdrawn", { role: spec.id, account: getAddress(who), amount }],
          ]);
          expect(await bondOf(c, spec.id, who)).to.deep.equal({ active: BOND - amount, pending: 0n, unlockAt: 0n });
          expect(await c.registry.read.unbondPhaseOf([spec.id, who])).to.equal(PHASE.None);
          expect(await balances(c, [who, c.registry.address])).to.deep.equal([
            memberBefore + amount,
            registryBefore - amount,
          ]);
        });

        it("reports the phase Withdrawable once the delay has elapsed", async () => {
          const c = await loadFixture(fixtures.bonded);
          const who = c.member.account.address;
          await c.registry.write.requestUnbond([spec.id, 1n], { account: c.member.account });
          await time.increase(DELAY - 1n);
          expect(await c.registry.read.unbondPhaseOf([spec.id, who])).to.equal(PHASE.Unbonding);
          await time.increase(1n);
          expect(await c.registry.read.unbondPhaseOf([spec.id, who])).to.equal(PHASE.Withdrawable);
        });

        it("refuses with NothingToWithdraw when nothing is pending, and after a withdrawal", async () => {
          const c = await loadFixture(fixtures.bonded);
          const who = getAddress(c.member.account.address);
          await expectRevert(c.registry.write.withdraw([spec.id], { account: c.member.account }), "NothingToWithdraw", [
            spec.id,
            who,
          ]);
          await c.registry.write.requestUnbond([spec.id, 1n], { account: c.member.account });
          await time.increase(DELAY);
          await c.registry.write.withdraw([spec.id], { account: c.member.account });
          await expectRevert(c.registry.write.withdraw([spec.id], { account: c.member.account }), "NothingToWithdraw", [
            spec.id,
            who,
          ]);
        });
      });

      /*////////////////////////////// cancelUnbond //////////////////////////////*/
      describe("cancelUnbond", () => {
        it("moves all of pending back to active, clears unlockAt, and reactivates", async () => {
          const c = await loadFixture(fixtures.bonded);
          const who = c.member.account.address;
          await c.registry.write.requestUnbond([spec.id, BOND], { account: c.member.account });
          expect(await spec.isActive(c, who)).to.equal(false);
          const registryBefore = await c.token.read.balanceOf([c.registry.address]);

          const { events } = await eventsOf(c, await c.registry.write.cancelUnbond([spec.id], { account: c.member.account }));
          expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([
            ["UnbondCancelled", { role: spec.id, account: getAddress(who), amount: BOND, active: BOND }],
          ]);
          expect(await bondOf(c, spec.id, who)).to.deep.equal({ active: BOND, pending: 0n, unlockAt: 0n });
          expect(await spec.isActive(c, who)).to.equal(true);
          expect(await c.token.read.balanceOf([c.registry.address])).to.equal(registryBefore);
          await time.increase(DELAY);
          await expectRevert(c.registry.write.withdraw([spec.id], { account: c.member.account }), "NothingToWithdraw", [
            spec.id,
            getAddress(who),
          ]);
        });

        it("is a no-op without an event when nothing is pending", async () => {
          const c = await loadFixture(fixtures.bonded);
          const who = c.member.account.address;
          const { receipt, events } = await eventsOf(
            c,
            await c.registry.write.cancelUnbond([spec.id], { account: c.member.account }),
          );
          expect(receipt.logs).to.have.length(0);
          expect(events).to.have.length(0);
          expect(await bondOf(c, spec.id, who)).to.deep.equal({ active: BOND, pending: 0n, unlockAt: 0n });
        });
      });

      /*////////////////////////////// slash //////////////////////////////*/
      describe("slash", () => {
        it("refuses a caller without SLASHER_ROLE, governance included, with AccessControlUnauthorizedAccount", async () => {
          const c = await loadFixture(fixtures.bonded);
          const slasherRole = await c.registry.read.SLASHER_ROLE();
          for (const caller of [c.stranger, c.governance, c.member]) {
            await expectRevert(
              c.registry.write.slash([spec.id, c.member.account.address, 1n, c.beneficiary.account.address, 0], {
                account: caller.account,
              }),
              "AccessControlUnauthorizedAccount",
              [getAddress(caller.account.address), slasherRole],
            );
          }
        });

        it("stops a slasher whose role governance revoked", async () => {
          const c = await loadFixture(fixtures.bonded);
          const slasherRole = await c.registry.read.SLASHER_ROLE();
          await c.registry.write.revokeRole([slasherRole, c.slasher.account.address], { account: c.governance.account });
          await expectRevert(
            c.registry.write.slash([spec.id, c.member.account.address, 1n, c.beneficiary.account.address, 0], {
              account: c.slasher.account,
            }),
            "AccessControlUnauthorizedAccount",
            [getAddress(c.slasher.account.address), slasherRole],
          );
        });

        type SlashCase = {
          name: string;
          amount: bigint;
          beneficiary?: Address;
          burnBps?: number;
          setup?: (c: Ctx) => Promise<unknown>;
          error: string;
          args: (c: Ctx) => readonly unknown[];
        };
        const member = (c: Ctx) => getAddress(c.member.account.address);
        const slashCases: SlashCase[] = [
          { name: "an amount of zero", amount: 0n, error: "ZeroAmount", args: () => [] },
          { name: "a zero beneficiary", amount: 1n, beneficiary: zeroAddress, error: "ZeroBeneficiary", args: () => [] },
          {
            name: "more than 10,000 bps burnt",
            amount: 1n,
            burnBps: BPS + 1,
            error: "BurnBpsOutOfRange",
            args: () => [BPS + 1, BPS],
          },
          {
            name: "more than the bond holds",
            amount: BOND + 1n,
            error: "SlashExceedsBond",
            args: (c) => [spec.id, member(c), BOND + 1n, BOND],
          },
          {
            name: "more than active plus pending",
            amount: BOND + 1n,
            setup: (c) => c.registry.write.requestUnbond([spec.id, BOND - 7n], { account: c.member.account }),
            error: "SlashExceedsBond",
            args: (c) => [spec.id, member(c), BOND + 1n, BOND],
          },
          {
            name: "more than what is left after a withdrawal",
            amount: BOND - 9n,
            setup: async (c) => {
              await c.registry.write.requestUnbond([spec.id, 10n], { account: c.member.account });
              await time.increase(DELAY);
              await c.registry.write.withdraw([spec.id], { account: c.member.account });
            },
            error: "SlashExceedsBond",
            args: (c) => [spec.id, member(c), BOND - 9n, BOND - 10n],
          },
        ];
        for (const t of slashCases) {
          it(`refuses ${t.name} with ${t.error}`, async () => {
            const c = await loadFixture(fixtures.bonded);
            await t.setup?.(c);
            const before = await bondOf(c, spec.id, c.member.account.address);
            await expectRevert(
              c.registry.write.slash(
                [spec.id, c.member.account.address, t.amount, t.beneficiary ?? c.beneficiary.account.address, t.burnBps ?? 0],
                { account: c.slasher.account },
              ),
              t.error,
              t.args(c),
            );
            expect(await bondOf(c, spec.id, c.member.account.address)).to.deep.equal(before);
          });
        }

        it("refuses to slash the other role's bond (roles are separate balances) with SlashExceedsBond", async () => {
          const c = await loadFixture(fixtures.bonded);
          await expectRevert(
            c.registry.write.slash([other, c.member.account.address, 1n, c.beneficiary.account.address, 0], {
              account: c.slasher.account,
            }),
            "SlashExceedsBond",
            [other, getAddress(c.member.account.address), 1n, 0n],
          );
        });

        // (pending before, amount, burnBps) → split; the bond starts at BOND active minus `pending`.
        const splits: { name: string; pending: bigint; amount: bigint; burnBps: number; fromPending: bigint }[] = [
          { name: "from the active part, a quarter burnt", pending: 0n, amount: parseEther("40"), burnBps: 2_500, fromPending: 0n },
          { name: "all to the beneficiary", pending: 0n, amount: parseEther("40"), burnBps: 0, fromPending: 0n },
          { name: "all burnt", pending: 0n, amount: parseEther("40"), burnBps: BPS, fromPending: 0n },
          { name: "with a rounded-down burn", pending: 0n, amount: 3n, burnBps: 5_000, fromPending: 0n },
          {
            name: "reaching into pending",
            pending: parseEther("100"),
            amount: parseEther("350"),
            burnBps: 1_000,
            fromPending: parseEther("50"),
          },
          { name: "everything, pending included", pending: parseEther("100"), amount: BOND, burnBps: 5_000, fromPending: parseEther("100") },
        ];
        for (const s of splits) {
          it(`slashes ${s.name}: bond, event and every balance exact`, async () => {
            const c = await loadFixture(fixtures.bonded);
            const who = c.member.account.address;
            const beneficiary = c.beneficiary.account.address;
            if (s.pending > 0n) await c.registry.write.requestUnbond([spec.id, s.pending], { account: c.member.account });
            const before = await bondOf(c, spec.id, who);
            const burned = (s.amount * BigInt(s.burnBps)) / BigInt(BPS);
            const toBeneficiary = s.amount - burned;
            const active = before.active - (s.amount - s.fromPending);
            const pending = before.pending - s.fromPending;
            const watched = [c.registry.address, BURN_ADDRESS, beneficiary, who] as const;
            const [registryBefore, burnBefore, beneficiaryBefore, memberBefore] = await balances(c, watched);

            const { events } = await eventsOf(
              c,
              await c.registry.write.slash([spec.id, who, s.amount, beneficiary, s.burnBps], { account: c.slasher.account }),
            );
            expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([
              [
                "Slashed",
                {
                  role: spec.id,
                  account: getAddress(who),
                  beneficiary: getAddress(beneficiary),
                  amount: s.amount,
                  fromPending: s.fromPending,
                  burnBps: s.burnBps,
                  burned,
                  toBeneficiary,
                  active,
                  pending,
                },
              ],
            ]);
            // The unlock time survives a partial slash of pending and is cleared when pending is emptied.
            expect(await bondOf(c, spec.id, who)).to.deep.equal({
              active,
              pending,
              unlockAt: pending === 0n ? 0n : before.unlockAt,
            });
            expect(await balances(c, watched)).to.deep.equal([
              registryBefore - s.amount,
              burnBefore + burned,
              beneficiaryBefore + toBeneficiary,
              memberBefore,
            ]);
            expect(toBeneficiary + burned).to.equal(s.amount);
          });
        }

        it("reaches funds that are unbonding: a slashed-out pending part cannot be withdrawn", async () => {
          const c = await loadFixture(fixtures.bonded);
          const who = c.member.account.address;
          await c.registry.write.requestUnbond([spec.id, BOND], { account: c.member.account });
          await time.increase(DELAY); // withdrawable, but not yet withdrawn
          await c.registry.write.slash([spec.id, who, BOND, c.beneficiary.account.address, 0], {
            account: c.slasher.account,
          });
          expect(await bondOf(c, spec.id, who)).to.deep.equal({ active: 0n, pending: 0n, unlockAt: 0n });
          await expectRevert(c.registry.write.withdraw([spec.id], { account: c.member.account }), "NothingToWithdraw", [
            spec.id,
            getAddress(who),
          ]);
        });

        it(`deactivates when a slash takes the active ${spec.name.toLowerCase()} bond below the minimum`, async () => {
          const c = await loadFixture(fixtures.bonded);
          const who = c.member.account.address;
          const slashTo = async (amount: bigint) =>
            c.registry.write.slash([spec.id, who, amount, c.beneficiary.account.address, 0], { account: c.slasher.account });
          await slashTo(BOND - spec.min); // exactly the minimum is left
          expect((await bondOf(c, spec.id, who)).active).to.equal(spec.min);
          expect(await spec.isActive(c, who)).to.equal(true);
          await slashTo(1n);
          expect(await spec.isActive(c, who)).to.equal(false);
          expect(await c.registry.read.isRegistered([spec.id, who])).to.equal(true);
          // Topping up restores it.
          await c.registry.write.bond([spec.id, 1n], { account: c.member.account });
          expect(await spec.isActive(c, who)).to.equal(true);
        });
      });
    });
  }

  describe("both roles", () => {
    it("keeps an account's provider bond and arbitrator stake apart", async () => {
      const c = await loadFixture(registryFixture);
      const who = c.member.account.address;
      for (const spec of ROLES) await spec.register(c, c.member, MEMBER_ID);
      await c.registry.write.bond([PROVIDER, MIN_PROVIDER_BOND], { account: c.member.account });
      await c.registry.write.bond([ARBITRATOR, MIN_ARBITRATOR_STAKE - 1n], { account: c.member.account });
      // The provider bond would cover the arbitrator minimum only if the two were mixed up.
      expect(await c.registry.read.isActiveProvider([who])).to.equal(true);
      expect(await c.registry.read.isActiveArbitrator([who])).to.equal(false);
      await c.registry.write.slash([PROVIDER, who, 1n, c.beneficiary.account.address, 0], { account: c.slasher.account });
      expect(await bondOf(c, PROVIDER, who)).to.include({ active: MIN_PROVIDER_BOND - 1n });
      expect(await bondOf(c, ARBITRATOR, who)).to.include({ active: MIN_ARBITRATOR_STAKE - 1n });
      expect(await c.registry.read.isActiveProvider([who])).to.equal(false);
    });

    it("reports an unregistered account as inactive, with empty records", async () => {
      const c = await loadFixture(registryFixture);
      expect(await c.registry.read.isActiveProvider([c.stranger.account.address])).to.equal(false);
      expect(await c.registry.read.isActiveArbitrator([c.stranger.account.address])).to.equal(false);
      expect(await c.registry.read.providerOf([c.stranger.account.address])).to.deep.equal(ROLES[0]!.emptyRecord);
      expect(await c.registry.read.arbitratorOf([c.stranger.account.address])).to.deep.equal(ROLES[1]!.emptyRecord);
      expect(await c.registry.read.judgeRuntimeHashOf([c.stranger.account.address])).to.equal(zeroHash);
    });

    it("holds exactly the sum of every bond through a seeded random sequence of operations", async () => {
      const c = await loadFixture(registryFixture);
      const accounts = [c.member, c.other, c.stranger];
      for (const wallet of accounts) {
        for (const spec of ROLES) await spec.register(c, wallet, identity(`${wallet.account.address}-${spec.name}`));
      }
      let seed = 0x5eedn;
      const next = (n: bigint): bigint => {
        seed = (seed * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n;
        return (seed >> 16n) % n;
      };
      let slashedOut = 0n;
      const [burnStart, beneficiaryStart] = await balances(c, [BURN_ADDRESS, c.beneficiary.account.address]);
      for (let step = 0; step < 60; step++) {
        const wallet = accounts[Number(next(3n))]!;
        const who = wallet.account.address;
        const role = Number(next(2n));
        const b = await bondOf(c, role, who);
        const op = next(5n);
        if (op === 0n || b.active + b.pending === 0n) {
          await c.registry.write.bond([role, 1n + next(parseEther("50"))], { account: wallet.account });
        } else if (op === 1n && b.active > 0n) {
          await c.registry.write.requestUnbond([role, 1n + next(b.active)], { account: wallet.account });
        } else if (op === 2n && b.pending > 0n) {
          await time.increase(next(2n * DELAY));
          const phase = await c.registry.read.unbondPhaseOf([role, who]);
          if (phase === PHASE.Withdrawable) await c.registry.write.withdraw([role], { account: wallet.account });
          else await c.registry.write.cancelUnbond([role], { account: wallet.account });
        } else {
          const amount = 1n + next(b.active + b.pending);
          await c.registry.write.slash([role, who, amount, c.beneficiary.account.address, Number(next(10_001n))], {
            account: c.slasher.account,
          });
          slashedOut += amount;
        }
        let held = 0n;
        for (const w of accounts) for (const r of [PROVIDER, ARBITRATOR]) {
          const x = await bondOf(c, r, w.account.address);
          expect(x.unlockAt === 0n).to.equal(x.pending === 0n);
          held += x.active + x.pending;
        }
        expect(await c.token.read.balanceOf([c.registry.address])).to.equal(held);
      }
      const [burnEnd, beneficiaryEnd] = await balances(c, [BURN_ADDRESS, c.beneficiary.account.address]);
      expect(slashedOut > 0n).to.equal(true);
      expect(burnEnd - burnStart + (beneficiaryEnd - beneficiaryStart)).to.equal(slashedOut);
    });

    it("shares one reentrancy guard: a token calling back into requestUnbond during bond is refused", async () => {
      const c = await loadFixture(registryFixture);
      const token = await hre.viem.deployContract("ReentrantToken");
      const registry = await deployRegistry(c.governance.account.address, token.address);
      await token.write.mint([c.member.account.address, BOND]);
      await token.write.approve([registry.address, BOND], { account: c.member.account });
      await registry.write.registerProvider(
        [MEMBER_ID.endpoint, MEMBER_ID.capabilitiesHash, MEMBER_ID.didHash, MEMBER_ID.mldsaPublicKeyHash],
        { account: c.member.account },
      );
      const callback = encodeFunctionData({ abi: registry.abi, functionName: "requestUnbond", args: [PROVIDER, 1n] });
      await token.write.arm([registry.address, callback]);
      await mined(c, await registry.write.bond([PROVIDER, BOND], { account: c.member.account }));
      expect(await token.read.lastCallSucceeded()).to.equal(false);
      const reason = decodeErrorResult({ abi: DECODE_ABI, data: await token.read.lastReturnData() });
      // Without the guard the callback would have failed differently (InsufficientActiveBond: the token has no bond).
      expect(reason.errorName).to.equal("Reentrancy");
      expect((await registry.read.bondOf([PROVIDER, c.member.account.address])).active).to.equal(BOND);
    });
  });

  describe("fee-on-transfer bond token", () => {
    it("credits the net amount that arrived, and pays out only what it holds", async () => {
      const c = await loadFixture(feeTokenFixture);
      const who = c.member.account.address;
      const amount = parseEther("1000");
      const net = amount - amount / 100n; // 1 % fee
      const { result } = await c.feeRegistry.simulate.bond([PROVIDER, amount], { account: c.member.account.address });
      expect(result).to.equal(net);
      const { events } = await eventsOf(
        c,
        await c.feeRegistry.write.bond([PROVIDER, amount], { account: c.member.account }),
        c.feeRegistry.address,
      );
      expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([
        ["Bonded", { role: PROVIDER, account: getAddress(who), received: net, active: net }],
      ]);
      expect((await c.feeRegistry.read.bondOf([PROVIDER, who])).active).to.equal(net);
      expect(await c.feeToken.read.balanceOf([c.feeRegistry.address])).to.equal(net);

      await c.feeRegistry.write.requestUnbond([PROVIDER, net], { account: c.member.account });
      await time.increase(DELAY);
      const memberBefore = await c.feeToken.read.balanceOf([who]);
      await c.feeRegistry.write.withdraw([PROVIDER], { account: c.member.account });
      expect(await c.feeToken.read.balanceOf([c.feeRegistry.address])).to.equal(0n);
      expect(await c.feeToken.read.balanceOf([who])).to.equal(memberBefore + net - net / 100n);
    });
  });

  describe("governance", () => {
    it("sets the minimums: event, getters, and active status follows at once", async () => {
      const c = await loadFixture(FIXTURES.Provider.bonded);
      const who = c.member.account.address;
      expect(await c.registry.read.isActiveProvider([who])).to.equal(true);
      const { events } = await eventsOf(
        c,
        await c.registry.write.setMinimums([BOND + 1n, 7n], { account: c.governance.account }),
      );
      expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([
        ["MinimumsSet", { minProviderBond: BOND + 1n, minArbitratorStake: 7n }],
      ]);
      expect(await c.registry.read.minProviderBond()).to.equal(BOND + 1n);
      expect(await c.registry.read.minArbitratorStake()).to.equal(7n);
      expect(await c.registry.read.isActiveProvider([who])).to.equal(false);
      await c.registry.write.setMinimums([1n, MAX_BOND], { account: c.governance.account });
      expect(await c.registry.read.minProviderBond()).to.equal(1n);
      expect(await c.registry.read.minArbitratorStake()).to.equal(MAX_BOND);
      expect(await c.registry.read.isActiveProvider([who])).to.equal(true);
    });

    it("sets the unbonding delay, which the next request uses", async () => {
      const c = await loadFixture(FIXTURES.Provider.bonded);
      const { events } = await eventsOf(
        c,
        await c.registry.write.setUnbondingDelay([MIN_DELAY], { account: c.governance.account }),
      );
      expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([["UnbondingDelaySet", { unbondingDelay: MIN_DELAY }]]);
      expect(await c.registry.read.unbondingDelay()).to.equal(MIN_DELAY);
      const { receipt } = await eventsOf(
        c,
        await c.registry.write.requestUnbond([PROVIDER, 1n], { account: c.member.account }),
      );
      const unlockAt = (await minedAt(c, receipt.blockNumber)) + MIN_DELAY;
      expect((await bondOf(c, PROVIDER, c.member.account.address)).unlockAt).to.equal(unlockAt);
      await c.registry.write.setUnbondingDelay([MAX_DELAY], { account: c.governance.account });
      expect(await c.registry.read.unbondingDelay()).to.equal(MAX_DELAY);
    });

    it("lets governance grant SLASHER_ROLE to a new dispute contract, which can then slash", async () => {
      const c = await loadFixture(FIXTURES.Arbitrator.bonded);
      const slasherRole = await c.registry.read.SLASHER_ROLE();
      await c.registry.write.grantRole([slasherRole, c.other.account.address], { account: c.governance.account });
      await mined(
        c,
        await c.registry.write.slash([ARBITRATOR, c.member.account.address, 1n, c.beneficiary.account.address, 0], {
          account: c.other.account,
        }),
      );
      expect((await bondOf(c, ARBITRATOR, c.member.account.address)).active).to.equal(BOND - 1n);
    });

    type GovCase = {
      name: string;
      call: (c: Ctx, from: Wallet) => Promise<Hash>;
      error: string;
      args: readonly unknown[];
    };
    const govCases: GovCase[] = [
      {
        name: "a zero minimum provider bond",
        call: (c, from) => c.registry.write.setMinimums([0n, 1n], { account: from.account }),
        error: "MinimumOutOfRange",
        args: [PROVIDER, 0n, 1n, MAX_BOND],
      },
      {
        name: "a minimum provider bond above MAX_BOND",
        call: (c, from) => c.registry.write.setMinimums([MAX_BOND + 1n, 1n], { account: from.account }),
        error: "MinimumOutOfRange",
        args: [PROVIDER, MAX_BOND + 1n, 1n, MAX_BOND],
      },
      {
        name: "a zero minimum arbitrator stake",
        call: (c, from) => c.registry.write.setMinimums([1n, 0n], { account: from.account }),
        error: "MinimumOutOfRange",
        args: [ARBITRATOR, 0n, 1n, MAX_BOND],
      },
      {
        name: "a minimum arbitrator stake above MAX_BOND",
        call: (c, from) => c.registry.write.setMinimums([1n, MAX_BOND + 1n], { account: from.account }),
        error: "MinimumOutOfRange",
        args: [ARBITRATOR, MAX_BOND + 1n, 1n, MAX_BOND],
      },
      {
        name: "an unbonding delay one second too short",
        call: (c, from) => c.registry.write.setUnbondingDelay([MIN_DELAY - 1n], { account: from.account }),
        error: "UnbondingDelayOutOfRange",
        args: [MIN_DELAY - 1n, MIN_DELAY, MAX_DELAY],
      },
      {
        name: "an unbonding delay one second too long",
        call: (c, from) => c.registry.write.setUnbondingDelay([MAX_DELAY + 1n], { account: from.account }),
        error: "UnbondingDelayOutOfRange",
        args: [MAX_DELAY + 1n, MIN_DELAY, MAX_DELAY],
      },
    ];
    for (const t of govCases) {
      it(`refuses ${t.name} with ${t.error}`, async () => {
        const c = await loadFixture(registryFixture);
        await expectRevert(t.call(c, c.governance), t.error, t.args);
        expect(await c.registry.read.minProviderBond()).to.equal(MIN_PROVIDER_BOND);
        expect(await c.registry.read.minArbitratorStake()).to.equal(MIN_ARBITRATOR_STAKE);
        expect(await c.registry.read.unbondingDelay()).to.equal(DELAY);
      });
    }

    for (const [name, call] of [
      ["setMinimums", (c: Ctx, from: Wallet) => c.registry.write.setMinimums([1n, 1n], { account: from.account })],
      ["setUnbondingDelay", (c: Ctx, from: Wallet) => c.registry.write.setUnbondingDelay([MIN_DELAY], { account: from.account })],
    ] as const) {
      it(`refuses ${name} from an account without GOVERNANCE_ROLE (the slasher included)`, async () => {
        const c = await loadFixture(registryFixture);
        const governanceRole = await c.registry.read.GOVERNANCE_ROLE();
        for (const caller of [c.stranger, c.slasher]) {
          await expectRevert(call(c, caller), "AccessControlUnauthorizedAccount", [
            getAddress(caller.account.address),
            governanceRole,
          ]);
        }
      });
    }
  });

  /*//////////////////////////////////////////////////////////////
                       ARBITRATOR ADMISSION
  //////////////////////////////////////////////////////////////*/

  describe("arbitrator admission", () => {
    /** `member` registered as an arbitrator and bonded above the minimum, but not admitted. */
    async function unadmittedArbitrator() {
      const c = await registryFixture();
      await ROLES[1]!.register(c, c.member, MEMBER_ID);
      await c.registry.write.bond([ARBITRATOR, BOND], { account: c.member.account });
      return c;
    }

    it("an arbitrator is not active until governance admits it, and no longer once removed: events and pool exact", async () => {
      const c = await loadFixture(unadmittedArbitrator);
      const who = getAddress(c.member.account.address);
      expect(await c.registry.read.isActiveArbitrator([who])).to.equal(false);
      expect(await c.registry.read.isAdmitted([who])).to.equal(false);
      expect(await c.registry.read.admittedArbitrators()).to.deep.equal([]);
      const admitted = await eventsOf(c, await c.registry.write.admitArbitrator([who], { account: c.governance.account }));
      expect(admitted.events.map((e) => [e.eventName, e.args])).to.deep.equal([
        ["ArbitratorAdmitted", { arbitrator: who, poolSize: 1n }],
      ]);
      expect(await c.registry.read.isActiveArbitrator([who])).to.equal(true);
      expect(await c.registry.read.isAdmitted([who])).to.equal(true);
      expect(await c.registry.read.admittedArbitrators()).to.deep.equal([who]);
      const removed = await eventsOf(c, await c.registry.write.removeArbitrator([who], { account: c.governance.account }));
      expect(removed.events.map((e) => [e.eventName, e.args])).to.deep.equal([
        ["ArbitratorRemoved", { arbitrator: who, poolSize: 0n }],
      ]);
      expect(await c.registry.read.isActiveArbitrator([who])).to.equal(false);
      expect(await c.registry.read.admittedArbitrators()).to.deep.equal([]);
      // Removal keeps the registration and the stake.
      expect(await c.registry.read.isRegistered([ARBITRATOR, who])).to.equal(true);
      expect((await bondOf(c, ARBITRATOR, who)).active).to.equal(BOND);
    });

    it("admission does not make an arbitrator bonded below the minimum active", async () => {
      const c = await loadFixture(registryFixture);
      await ROLES[1]!.register(c, c.member, MEMBER_ID);
      await c.registry.write.bond([ARBITRATOR, MIN_ARBITRATOR_STAKE - 1n], { account: c.member.account });
      await c.registry.write.admitArbitrator([c.member.account.address], { account: c.governance.account });
      expect(await c.registry.read.isActiveArbitrator([c.member.account.address])).to.equal(false);
      await c.registry.write.bond([ARBITRATOR, 1n], { account: c.member.account });
      expect(await c.registry.read.isActiveArbitrator([c.member.account.address])).to.equal(true);
    });

    it("removal keeps the member's entry until pruned: admittedArbitrators lists the admitted only, in admission order", async () => {
      const c = await loadFixture(registryFixture);
      const ws = [c.member, c.other, c.stranger];
      for (const [i, w] of ws.entries()) {
        await ROLES[1]!.register(c, w, identity(`pool-${i}`));
        await c.registry.write.admitArbitrator([w.account.address], { account: c.governance.account });
      }
      const [m, o, st] = ws.map((w) => getAddress(w.account.address)) as [Address, Address, Address];
      const removed = await eventsOf(c, await c.registry.write.removeArbitrator([m], { account: c.governance.account }));
      expect(removed.events.map((e) => [e.eventName, e.args])).to.deep.equal([["ArbitratorRemoved", { arbitrator: m, poolSize: 2n }]]);
      // Nothing moved: the others keep their places.
      expect(await c.registry.read.admittedArbitrators()).to.deep.equal([o, st]);
      expect(await c.registry.read.isAdmitted([m])).to.equal(false);
      await c.registry.write.removeArbitrator([o], { account: c.governance.account });
      expect(await c.registry.read.admittedArbitrators()).to.deep.equal([st]);
      // A removed, unpruned member is admitted again in its old place (first), and removable again.
      const again = await eventsOf(c, await c.registry.write.admitArbitrator([m], { account: c.governance.account }));
      expect(again.events.map((e) => [e.eventName, e.args])).to.deep.equal([["ArbitratorAdmitted", { arbitrator: m, poolSize: 2n }]]);
      expect(await c.registry.read.admittedArbitrators()).to.deep.equal([m, st]);
      await c.registry.write.removeArbitrator([st], { account: c.governance.account });
      expect(await c.registry.read.admittedArbitrators()).to.deep.equal([m]);
      // A re-admitted member is not prunable (it is no longer removed).
      await hre.network.provider.send("hardhat_mine", ["0x500"]);
      await expectRevert(c.registry.write.prune([m], { account: c.stranger.account }), "NotPrunable", [m]);
    });

    it("prune: refused until SNAPSHOT_HORIZON (1,024) blocks have passed since the removal, then anyone drops the entry and frees its slot", async () => {
      const c = await loadFixture(registryFixture);
      expect(await c.registry.read.SNAPSHOT_HORIZON()).to.equal(1024);
      const runtime = MEMBER_ID.judgeRuntimeHash;
      const ws = [c.member, c.other, c.stranger];
      for (const [i, w] of ws.entries()) {
        await ROLES[1]!.register(c, w, identity(`prune-${i}`, { judgeRuntimeHash: runtime }));
        await c.registry.write.bond([ARBITRATOR, BOND + BigInt(i)], { account: w.account });
        await c.registry.write.admitArbitrator([w.account.address], { account: c.governance.account });
      }
      const [m, o, st] = ws.map((w) => getAddress(w.account.address)) as [Address, Address, Address];
      const before = await c.publicClient.getBlockNumber();
      const { receipt } = await eventsOf(c, await c.registry.write.removeArbitrator([m], { account: c.governance.account }));
      const removedAt = receipt.blockNumber;
      // Only a removed entry is prunable: not an admitted member, not an account never in the pool.
      await expectRevert(c.registry.write.prune([o], { account: c.stranger.account }), "NotPrunable", [o]);
      await expectRevert(c.registry.write.prune([c.beneficiary.account.address], { account: c.stranger.account }), "NotPrunable", [
        getAddress(c.beneficiary.account.address),
      ]);
      // The last refused block is removedAt + 1,024 (a call runs at the latest block's number).
      const now = await c.publicClient.getBlockNumber();
      await hre.network.provider.send("hardhat_mine", [`0x${(removedAt + 1024n - now).toString(16)}`]);
      expect(await c.publicClient.getBlockNumber()).to.equal(removedAt + 1024n);
      await expectRevert(c.registry.simulate.prune([m], { account: c.stranger.account.address }), "NotPrunable", [m]);
      // Until pruned, the snapshot before the removal still sees the member, and the one after does not.
      expect(await c.registry.read.drawPoolAt([runtime, Number(before)])).to.deep.equal([[m, o, st], [BOND, BOND + 1n, BOND + 2n]]);
      expect(await c.registry.read.drawPoolAt([runtime, Number(removedAt)])).to.deep.equal([[o, st], [BOND + 1n, BOND + 2n]]);
      const pruned = await eventsOf(c, await c.registry.write.prune([m], { account: c.stranger.account }));
      expect(pruned.receipt.blockNumber).to.equal(removedAt + 1025n);
      expect(pruned.events.map((e) => [e.eventName, e.args])).to.deep.equal([["ArbitratorPruned", { arbitrator: m }]]);
      // The last entry moved into the gap; the pruned member is gone from every snapshot (they are past the horizon).
      expect(await c.registry.read.admittedArbitrators()).to.deep.equal([st, o]);
      expect(await c.registry.read.drawPoolAt([runtime, Number(before)])).to.deep.equal([[st, o], [BOND + 2n, BOND + 1n]]);
      await expectRevert(c.registry.write.prune([m], { account: c.stranger.account }), "NotPrunable", [m]);
      // Admitted again after pruning, it takes a new slot at the end.
      await c.registry.write.admitArbitrator([m], { account: c.governance.account });
      expect(await c.registry.read.admittedArbitrators()).to.deep.equal([st, o, m]);
      expect((await bondOf(c, ARBITRATOR, m)).active).to.equal(BOND);
    });

    it("drawPoolAt(snapshot) stays what it was whatever happens after the snapshot: bond, unbond, cancel, slash, re-pin, admission, removal, minimum", async () => {
      const c = await loadFixture(registryFixture);
      const runtime = MEMBER_ID.judgeRuntimeHash;
      const otherRuntime = keccak256(stringToBytes("another runtime"));
      const extra = [7, 8, 9].map((i) => c.wallets[i]!);
      for (const w of extra) {
        await c.token.write.mint([w.account.address, SUPPLY]);
        await c.token.write.approve([c.registry.address, SUPPLY], { account: w.account });
      }
      const [A, B, C, D, E] = [c.member, c.other, c.stranger, ...extra] as [Wallet, Wallet, Wallet, Wallet, Wallet];
      const setups: [Wallet, Hex, bigint, boolean][] = [
        [A, runtime, BOND, true],
        [B, runtime, BOND * 2n, true],
        [C, runtime, BOND * 3n, false], // registered and bonded, admitted only later
        [D, runtime, BOND * 4n, true],
        [E, otherRuntime, BOND * 5n, true], // pinned to another runtime, re-pins later
      ];
      for (const [w, pin, amount, admit] of setups) {
        await ROLES[1]!.register(c, w, identity(`snap-${w.account.address}`, { judgeRuntimeHash: pin }));
        await c.registry.write.bond([ARBITRATOR, amount], { account: w.account });
        if (admit) await c.registry.write.admitArbitrator([w.account.address], { account: c.governance.account });
      }
      await c.registry.write.requestUnbond([ARBITRATOR, BOND / 2n], { account: B.account });
      const a = (w: Wallet) => getAddress(w.account.address);
      type Pool = readonly [readonly Address[], readonly bigint[]];
      const snapshots: { block: bigint; what: string; pool: Pool }[] = [];
      const record = async (what: string, pool: Pool) => {
        const block = await c.publicClient.getBlockNumber();
        expect(await c.registry.read.drawPool([runtime]), `drawPool after ${what}`).to.deep.equal(pool);
        snapshots.push({ block, what, pool });
      };
      await record("setup", [[a(A), a(B), a(D)], [BOND, BOND + BOND / 2n, BOND * 4n]]);
      await c.registry.write.bond([ARBITRATOR, 1n], { account: A.account });
      await record("a one-wei bond", [[a(A), a(B), a(D)], [BOND + 1n, BOND + BOND / 2n, BOND * 4n]]);
      await c.registry.write.requestUnbond([ARBITRATOR, 2n], { account: A.account });
      await record("a two-wei unbond request", [[a(A), a(B), a(D)], [BOND - 1n, BOND + BOND / 2n, BOND * 4n]]);
      await c.registry.write.cancelUnbond([ARBITRATOR], { account: B.account });
      await record("a cancelled unbond", [[a(A), a(B), a(D)], [BOND - 1n, BOND * 2n, BOND * 4n]]);
      await c.registry.write.slash([ARBITRATOR, a(D), BOND, c.beneficiary.account.address, 0], { account: c.slasher.account });
      await record("a slash", [[a(A), a(B), a(D)], [BOND - 1n, BOND * 2n, BOND * 3n]]);
      await ROLES[1]!.update(c, E, identity(`snap-${E.account.address}`, { judgeRuntimeHash: runtime }));
      await record("a re-pin onto the runtime", [[a(A), a(B), a(D), a(E)], [BOND - 1n, BOND * 2n, BOND * 3n, BOND * 5n]]);
      await c.registry.write.admitArbitrator([a(C)], { account: c.governance.account });
      await record("an admission", [[a(A), a(B), a(D), a(E), a(C)], [BOND - 1n, BOND * 2n, BOND * 3n, BOND * 5n, BOND * 3n]]);
      await c.registry.write.removeArbitrator([a(D)], { account: c.governance.account });
      await record("a removal", [[a(A), a(B), a(E), a(C)], [BOND - 1n, BOND * 2n, BOND * 5n, BOND * 3n]]);
      await c.registry.write.setMinimums([MIN_PROVIDER_BOND, BOND], { account: c.governance.account });
      await record("a minimum raised above A's stake", [[a(B), a(E), a(C)], [BOND * 2n, BOND * 5n, BOND * 3n]]);
      await ROLES[1]!.update(c, B, identity(`snap-${B.account.address}`, { judgeRuntimeHash: otherRuntime }));
      await record("a re-pin away from the runtime", [[a(E), a(C)], [BOND * 5n, BOND * 3n]]);
      // Every snapshot still reads exactly as it did at its block, and the block before the first is older still.
      for (const snap of snapshots) {
        expect(await c.registry.read.drawPoolAt([runtime, Number(snap.block)]), `drawPoolAt after ${snap.what}`).to.deep.equal(snap.pool);
      }
      expect(snapshots.map((x) => x.block)).to.deep.equal(snapshots.map((_, i) => snapshots[0]!.block + BigInt(i)));
      // Any runtime (zero hash): the pin filter goes, the stake and admission filters stay.
      expect(await c.registry.read.drawPoolAt([zeroHash, Number(snapshots[0]!.block)])).to.deep.equal([
        [a(A), a(B), a(D), a(E)],
        [BOND, BOND + BOND / 2n, BOND * 4n, BOND * 5n],
      ]);
    });

    it("drawPoolAt refuses a block that has not happened yet with SnapshotInFuture", async () => {
      const c = await loadFixture(FIXTURES.Arbitrator.bonded);
      const runtime = MEMBER_ID.judgeRuntimeHash;
      // A call runs at the latest block's number.
      const current = await c.publicClient.getBlockNumber();
      expect(await c.registry.read.drawPoolAt([runtime, Number(current)])).to.deep.equal([[getAddress(c.member.account.address)], [BOND]]);
      await expectRevert(c.registry.read.drawPoolAt([runtime, Number(current + 1n)]), "SnapshotInFuture", [current + 1n, current]);
      // Before the member bonded (admitted with no stake), the pool was empty; before the registry existed, too.
      expect(await c.registry.read.drawPoolAt([runtime, Number(current - 1n)])).to.deep.equal([[], []]);
      expect(await c.registry.read.drawPoolAt([runtime, 0])).to.deep.equal([[], []]);
    });

    type AdmissionCase = { name: string; call: (c: Ctx) => Promise<Hash>; error: string; args: (c: Ctx) => readonly unknown[] };
    const admissionCases: AdmissionCase[] = [
      {
        name: "admitting an account not registered as an arbitrator",
        call: (c) => c.registry.write.admitArbitrator([c.stranger.account.address], { account: c.governance.account }),
        error: "NotRegistered",
        args: (c) => [ARBITRATOR, getAddress(c.stranger.account.address)],
      },
      {
        name: "admitting an admitted arbitrator again",
        call: (c) => c.registry.write.admitArbitrator([c.member.account.address], { account: c.governance.account }),
        error: "AlreadyAdmitted",
        args: (c) => [getAddress(c.member.account.address)],
      },
      {
        name: "removing an account that was never admitted",
        call: (c) => c.registry.write.removeArbitrator([c.stranger.account.address], { account: c.governance.account }),
        error: "NotAdmitted",
        args: (c) => [getAddress(c.stranger.account.address)],
      },
    ];
    for (const t of admissionCases) {
      it(`refuses ${t.name} with ${t.error}`, async () => {
        const c = await loadFixture(FIXTURES.Arbitrator.bonded);
        await expectRevert(t.call(c), t.error, t.args(c));
        expect(await c.registry.read.admittedArbitrators()).to.deep.equal([getAddress(c.member.account.address)]);
      });
    }

    for (const name of ["admitArbitrator", "removeArbitrator"] as const) {
      it(`refuses ${name} from an account without GOVERNANCE_ROLE (the slasher included)`, async () => {
        const c = await loadFixture(FIXTURES.Arbitrator.bonded);
        const governanceRole = await c.registry.read.GOVERNANCE_ROLE();
        for (const caller of [c.stranger, c.slasher, c.member]) {
          await expectRevert(
            c.registry.write[name]([c.member.account.address], { account: caller.account }),
            "AccessControlUnauthorizedAccount",
            [getAddress(caller.account.address), governanceRole],
          );
        }
        expect(await c.registry.read.isAdmitted([c.member.account.address])).to.equal(true);
      });
    }

    it(`holds at most MAX_POOL (64) arbitrators: the 65th is refused with PoolFull until a removed one is pruned`, async function () {
      const c = await loadFixture(registryFixture);
      expect(await c.registry.read.MAX_POOL()).to.equal(64n);
      const addresses: Address[] = Array.from({ length: 65 }, (_, i) => getAddress(`0x${(0x10000 + i).toString(16).padStart(40, "0")}`));
      for (const [i, a] of addresses.entries()) {
        await hre.network.provider.send("hardhat_impersonateAccount", [a]);
        await hre.network.provider.send("hardhat_setBalance", [a, "0x56bc75e2d63100000"]);
        await c.registry.write.registerArbitrator(
          [keccak256(stringToBytes("pool runtime")), keccak256(stringToBytes(`did:${i}`)), keccak256(stringToBytes(`pk:${i}`))],
          { account: a },
        );
      }
      for (const a of addresses.slice(0, 64)) {
        await c.registry.write.admitArbitrator([a], { account: c.governance.account });
      }
      expect((await c.registry.read.admittedArbitrators()).length).to.equal(64);
      await expectRevert(
        c.registry.write.admitArbitrator([addresses[64]!], { account: c.governance.account }),
        "PoolFull",
        [64n],
      );
      // A removed entry still counts until it is pruned, SNAPSHOT_HORIZON blocks later.
      await c.registry.write.removeArbitrator([addresses[0]!], { account: c.governance.account });
      expect((await c.registry.read.admittedArbitrators()).length).to.equal(63);
      await expectRevert(
        c.registry.write.admitArbitrator([addresses[64]!], { account: c.governance.account }),
        "PoolFull",
        [64n],
      );
      await hre.network.provider.send("hardhat_mine", ["0x401"]);
      await c.registry.write.prune([addresses[0]!], { account: c.stranger.account });
      await c.registry.write.admitArbitrator([addresses[64]!], { account: c.governance.account });
      const pool = await c.registry.read.admittedArbitrators();
      expect(pool.length).to.equal(64);
      expect(pool[0]).to.equal(addresses[63]);
      expect(pool[63]).to.equal(addresses[64]);
    });

    it("drawPool returns the admitted members pinned to the runtime with at least the minimum stake, weighted by active stake", async () => {
      const c = await loadFixture(registryFixture);
      const runtime = MEMBER_ID.judgeRuntimeHash;
      await c.token.write.mint([c.beneficiary.account.address, SUPPLY]);
      await c.token.write.approve([c.registry.address, SUPPLY], { account: c.beneficiary.account });
      const setups: [Wallet, Partial<Identity>, bigint, boolean][] = [
        [c.member, { judgeRuntimeHash: runtime }, BOND, true], // eligible
        [c.other, { judgeRuntimeHash: runtime }, MIN_ARBITRATOR_STAKE - 1n, true], // below the minimum
        [c.stranger, { judgeRuntimeHash: keccak256(stringToBytes("another runtime")) }, BOND * 2n, true], // other runtime
        [c.beneficiary, { judgeRuntimeHash: runtime }, BOND * 3n, false], // not admitted
      ];
      for (const [w, fields, amount, admit] of setups) {
        await ROLES[1]!.register(c, w, identity(`draw-${w.account.address}`, fields));
        await c.registry.write.bond([ARBITRATOR, amount], { account: w.account });
        if (admit) await c.registry.write.admitArbitrator([w.account.address], { account: c.governance.account });
      }
      // Pending stake does not weigh: member moves part of its stake to unbonding.
      await c.registry.write.requestUnbond([ARBITRATOR, BOND - MIN_ARBITRATOR_STAKE], { account: c.member.account });
      expect(await c.registry.read.drawPool([runtime])).to.deep.equal([
        [getAddress(c.member.account.address)],
        [MIN_ARBITRATOR_STAKE],
      ]);
      // A zero runtime hash accepts any runtime (still admitted and above the minimum only).
      expect(await c.registry.read.drawPool([zeroHash])).to.deep.equal([
        [getAddress(c.member.account.address), getAddress(c.stranger.account.address)],
        [MIN_ARBITRATOR_STAKE, BOND * 2n],
      ]);
      expect(await c.registry.read.drawPool([keccak256(stringToBytes("nobody's runtime"))])).to.deep.equal([[], []]);
    });
  });

  /*//////////////////////////////////////////////////////////////
                              BOND LOCKS
  //////////////////////////////////////////////////////////////*/

  describe("bond holds (issue 28 item 2)", () => {
    /** `member` bonded as a provider; `other` holds HOLDER_ROLE (the GasEscrow's role). */
    async function holderFixture() {
      const c = await registryFixture();
      await ROLES[PROVIDER]!.register(c, c.member, MEMBER_ID);
      await c.registry.write.bond([PROVIDER, BOND], { account: c.member.account });
      await c.registry.write.grantRole([await c.registry.read.HOLDER_ROLE(), c.other.account.address], { account: c.governance.account });
      return { ...c, holder: c.other };
    }

    it("issue 28 item 2: holdBond only from HOLDER_ROLE; it only ever moves later (an earlier time is a no-op, no event)", async () => {
      const c = await loadFixture(holderFixture);
      const who = getAddress(c.member.account.address);
      const holderRole = await c.registry.read.HOLDER_ROLE();
      for (const caller of [c.governance, c.slasher, c.member, c.stranger]) {
        await expectRevert(c.registry.write.holdBond([PROVIDER, who, 1n], { account: caller.account }), "AccessControlUnauthorizedAccount", [getAddress(caller.account.address), holderRole]);
      }
      // Registering created the provider's hold word (so the first hold rewrites it): 1, long past, holds nothing.
      expect(await c.registry.read.heldUntilOf([PROVIDER, who])).to.equal(1n);
      const until = BigInt(await time.latest()) + 1000n;
      const { events } = await eventsOf(c, await c.registry.write.holdBond([PROVIDER, who, until], { account: c.holder.account }));
      expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([["BondHeld", { role: PROVIDER, account: who, heldUntil: until }]]);
      const earlier = await eventsOf(c, await c.registry.write.holdBond([PROVIDER, who, until - 1n], { account: c.holder.account }));
      expect(earlier.events).to.deep.equal([]);
      expect(await c.registry.read.heldUntilOf([PROVIDER, who])).to.equal(until);
      expect(await c.registry.read.heldUntilOf([ARBITRATOR, who])).to.equal(0n);
    });

    it("issue 28 item 2: an unbonding requested before the hold matures, yet the bond cannot be withdrawn until the hold ends (BondHeldUntil); it stays slashable meanwhile", async () => {
      const c = await loadFixture(holderFixture);
      const who = getAddress(c.member.account.address);
      await c.registry.write.requestUnbond([PROVIDER, BOND], { account: c.member.account });
      const { unlockAt } = await c.registry.read.bondOf([PROVIDER, who]);
      const until = BigInt(unlockAt) + 7n * 24n * 3600n;
      await c.registry.write.holdBond([PROVIDER, who, until], { account: c.holder.account });
      await time.setNextBlockTimestamp(unlockAt);
      await expectRevert(c.registry.write.withdraw([PROVIDER], { account: c.member.account }), "BondHeldUntil", [PROVIDER, who, until, BigInt(unlockAt)]);
      expect(await c.registry.read.unbondPhaseOf([PROVIDER, who])).to.equal(PHASE.Unbonding); // while held
      await c.registry.write.slash([PROVIDER, who, parseEther("10"), c.beneficiary.account.address, 0], { account: c.slasher.account });
      await time.setNextBlockTimestamp(until);
      const before = await c.token.read.balanceOf([who]);
      await c.registry.write.withdraw([PROVIDER], { account: c.member.account });
      expect((await c.token.read.balanceOf([who])) - before).to.equal(BOND - parseEther("10"));
    });

    it("issue 28 item 2: HOLDER_ROLE is a wiring role: sealed, it can be neither granted nor revoked", async () => {
      const c = await loadFixture(holderFixture);
      const holderRole = await c.registry.read.HOLDER_ROLE();
      await c.registry.write.sealRoles({ account: c.governance.account });
      await expectRevert(c.registry.write.grantRole([holderRole, c.stranger.account.address], { account: c.governance.account }), "RoleSealed", [holderRole]);
      await expectRevert(c.registry.write.revokeRole([holderRole, c.holder.account.address], { account: c.governance.account }), "RoleSealed", [holderRole]);
    });
  });

  describe("bond locks", () => {
    /** Both roles bonded by `member`; `other` holds LOCKER_ROLE. */
    async function lockerFixture() {
      const c = await registryFixture();
      for (const spec of ROLES) {
        await spec.register(c, c.member, MEMBER_ID);
        await c.registry.write.bond([spec.id, BOND], { account: c.member.account });
      }
      await c.registry.write.grantRole([await c.registry.read.LOCKER_ROLE(), c.other.account.address], {
        account: c.governance.account,
      });
      return { ...c, locker: c.other };
    }

    it("refuses lockBond and unlockBond from an account without LOCKER_ROLE (governance and the slasher included)", async () => {
      const c = await loadFixture(lockerFixture);
      const lockerRole = await c.registry.read.LOCKER_ROLE();
      for (const caller of [c.governance, c.slasher, c.member, c.stranger]) {
        for (const call of [c.registry.write.lockBond, c.registry.write.unlockBond]) {
          await expectRevert(call([PROVIDER, c.member.account.address], { account: caller.account }), "AccessControlUnauthorizedAccount", [
            getAddress(caller.account.address),
            lockerRole,
          ]);
        }
      }
      expect(await c.registry.read.locksOf([PROVIDER, c.member.account.address])).to.equal(0n);
    });

    for (const spec of ROLES) {
      describe(spec.name, () => {
        it("counts locks up and down with events; one more unlock than locks is refused with BondNotLocked", async () => {
          const c = await loadFixture(lockerFixture);
          const who = getAddress(c.member.account.address);
          const other = spec.id === PROVIDER ? ARBITRATOR : PROVIDER;
          const steps: ["lockBond" | "unlockBond", string, bigint][] = [
            ["lockBond", "BondLocked", 1n],
            ["lockBond", "BondLocked", 2n],
            ["unlockBond", "BondUnlocked", 1n],
            ["unlockBond", "BondUnlocked", 0n],
          ];
          for (const [fn, eventName, locks] of steps) {
            const { events } = await eventsOf(c, await c.registry.write[fn]([spec.id, who], { account: c.locker.account }));
            expect(events.map((e) => [e.eventName, e.args])).to.deep.equal([[eventName, { role: spec.id, account: who, locks }]]);
            expect(await c.registry.read.locksOf([spec.id, who])).to.equal(locks);
            // The other role's bond is a separate liability.
            expect(await c.registry.read.locksOf([other, who])).to.equal(0n);
          }
          await expectRevert(c.registry.write.unlockBond([spec.id, who], { account: c.locker.account }), "BondNotLocked", [spec.id, who]);
        });

        it("a locked bond cannot start unbonding nor be withdrawn (BondIsLocked), stays slashable, and is free once unlocked", async () => {
          const c = await loadFixture(lockerFixture);
          const who = getAddress(c.member.account.address);
          await c.registry.write.requestUnbond([spec.id, 1n], { account: c.member.account });
          await c.registry.write.lockBond([spec.id, who], { account: c.locker.account });
          await c.registry.write.lockBond([spec.id, who], { account: c.locker.account });
          await time.increase(DELAY);
          expect(await c.registry.read.unbondPhaseOf([spec.id, who])).to.equal(PHASE.Withdrawable);
          await expectRevert(c.registry.write.withdraw([spec.id], { account: c.member.account }), "BondIsLocked", [spec.id, who, 2n]);
          await expectRevert(c.registry.write.requestUnbond([spec.id, 1n], { account: c.member.account }), "BondIsLocked", [
            spec.id,
            who,
            2n,
          ]);
          // The other role is not locked.
          const other = spec.id === PROVIDER ? ARBITRATOR : PROVIDER;
          await c.registry.write.requestUnbond([other, 1n], { account: c.member.account });
          // A locked bond stays slashable.
          await c.registry.write.slash([spec.id, who, 2n, c.beneficiary.account.address, 0], { account: c.slasher.account });
          expect(await bondOf(c, spec.id, who)).to.deep.include({ active: BOND - 3n, pending: 1n });
          await c.registry.write.unlockBond([spec.id, who], { account: c.locker.account });
          await expectRevert(c.registry.write.withdraw([spec.id], { account: c.member.account }), "BondIsLocked", [spec.id, who, 1n]);
          await c.registry.write.unlockBond([spec.id, who], { account: c.locker.account });
          const before = await c.token.read.balanceOf([who]);
          await mined(c, await c.registry.write.withdraw([spec.id], { account: c.member.account }));
          expect((await c.token.read.balanceOf([who])) - before).to.equal(1n);
          await mined(c, await c.registry.write.requestUnbond([spec.id, 1n], { account: c.member.account }));
        });
      });
    }
  });
});
