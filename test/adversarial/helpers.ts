/**
 * Helpers of the adversarial suite: a balance ledger that accounts every wei (gas included), channel and
 * gig builders on the system fixture, signature mutators for malleability attacks, and a hostile ETH
 * receiver compiled from source at test time (no contract under `contracts/` re-enters on receive).
 */
import { expect } from "chai";
import hre from "hardhat";
import {
  compactSignatureToSignature,
  decodeErrorResult,
  getAddress,
  keccak256,
  parseAbi,
  parseEther,
  recoverAddress,
  stringToBytes,
  toHex,
  zeroAddress,
  type Abi,
  type Address,
  type Hash,
  type Hex,
  type LocalAccount,
  type TransactionReceipt,
} from "viem";

import { openChannel } from "../../channel-client/chain/escrow";
import { gasEscrowDomain, toCompactSignature, type GasEscrowDomain } from "../../channel-client/core/eip712";
import { signSettlementSummary } from "../../channel-client/core/summary";
import { sessionIdOf, type ChannelRef, type ChannelTerms } from "../../channel-client/core/terms";
import { paymentTicketDigest, signPaymentTicket, type PaymentTicket } from "../../channel-client/core/ticket";
import { hardhatAccount, makeTerms } from "../helpers/fixtures";
import { DISPUTE_PARAMS, ETH_TERMS, SYS, type System } from "../helpers/system";

/*//////////////////////////////////////////////////////////////
                              CONSTANTS
//////////////////////////////////////////////////////////////*/

export const BURN: Address = "0x000000000000000000000000000000000000dEaD";
export const BPS = 10_000n;
/** secp256k1 group order and the largest low s. */
export const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
export const HALF_N = N >> 1n;
export const TOP_BIT = 1n << 255n;
export const MAX_UINT64 = (1n << 64n) - 1n;
export const word = (x: bigint): Hex => `0x${x.toString(16).padStart(64, "0")}`;
export const ether = (x: string): bigint => parseEther(x);

export type Kind = "ETH" | "LGAS";
export type Wallet = System["watcher"];
export type Escrow = System["escrow"];
export type Sig = { r: Hex; vs: Hex };
/** Mirrors `IGasEscrow.Ticket`. */
export type Ticket = { seq: bigint; cumulativeAmount: bigint; receiptRoot: Hex; sig: Sig };
/** Mirrors `IGasEscrow.ClosingState`. */
export type ClosingState = { deposit: bigint; seq: bigint; amount: bigint; receiptRoot: Hex; feeBps: number };

export const PAYER_KEY = hardhatAccount(SYS.payer);
export const PROVIDER_KEY = hardhatAccount(SYS.provider);
export const NO_STATE: ClosingState = { deposit: 0n, seq: 0n, amount: 0n, receiptRoot: `0x${"00".repeat(32)}`, feeBps: 0 };

export const rootOf = (seq: bigint): Hex => keccak256(stringToBytes(`adversarial receipt root ${seq}`));
export const label = (s: string): Hex => keccak256(stringToBytes(s));

/** max(value × riskBps, the asset's floor) × multiplier^level (level = lane + round), as the DisputeManager
 * computes it under the test terms (ETH and LaborGas share the floor). */
export function bondFor(value: bigint, lane: number): bigint {
  const base = (value * BigInt(DISPUTE_PARAMS.riskBps)) / BPS;
  const floored = base < ETH_TERMS.bondFloor ? ETH_TERMS.bondFloor : base;
  return floored * BigInt(DISPUTE_PARAMS.laneMultiplier) ** BigInt(lane);
}
export const burnOf = (bond: bigint): bigint => (bond * BigInt(DISPUTE_PARAMS.burnBps)) / BPS;
/** The routing fee on what the provider earned. */
export const feeOf = (earned: bigint, feeBps: number): bigint => (earned * BigInt(feeBps)) / BPS;

/*//////////////////////////////////////////////////////////////
                              LEDGER
//////////////////////////////////////////////////////////////*/

/** Anything with an ERC-20 `balanceOf` read. */
export type TokenLike = { read: { balanceOf: (args: readonly [Address]) => Promise<bigint> } };
export type Book = Record<string, Address>;
export type Snapshot = {
  block: bigint;
  book: Book;
  tokens: Record<string, TokenLike>;
  balances: Record<string, Record<string, bigint>>;
};
export type Expected = Record<string, Record<string, bigint>>;

/** Every account a case or a channel can pay or take from, by role. */
export function systemBook(s: System, extra: Book = {}): Book {
  return {
    governance: s.governance.account.address,
    client: s.client.account.address, // also the funder of every channel `makeTerms` builds
    payer: s.payerWallet.account.address,
    provider: s.provider.account.address,
    stranger: s.stranger.account.address,
    treasury: s.wallets[SYS.treasury]!.account.address,
    watcher: s.watcher.account.address,
    escrow: s.escrow.address,
    gigs: s.gigs.address,
    disputes: s.disputes.address,
    registry: s.registry.address,
    burn: BURN,
    ...extra,
  };
}

/** The system book with every fixture arbitrator (`arb<i>`, `arbOtherRuntime`) and `extra`. */
export function fullBook(s: System, extra: Book = {}): Book {
  const arbs: Book = {};
  for (const i of SYS.arbitrators) arbs[`arb${i}`] = s.wallets[i]!.account.address;
  arbs.arbOtherRuntime = s.wallets[SYS.otherRuntimeArbitrator]!.account.address;
  return systemBook(s, { ...arbs, ...extra });
}

/** A fixture arbitrator's name in {@link fullBook}. */
export function arbName(s: System, address: Address): string {
  const i = SYS.arbitrators.find((k) => getAddress(s.wallets[k]!.account.address) === getAddress(address));
  if (i === undefined) throw new Error(`${address} is not a fixture arbitrator`);
  return `arb${i}`;
}

/** Keys in ascending address order (the order a panel's signatures must come in). */
export const sortAsc = (keys: readonly LocalAccount[]): LocalAccount[] =>
  [...keys].sort((a, b) => (BigInt(a.address) < BigInt(b.address) ? -1 : 1));

async function readBalances(s: System, book: Book, tokens: Record<string, TokenLike>) {
  const balances: Record<string, Record<string, bigint>> = { ETH: {} };
  for (const [name, address] of Object.entries(book)) balances.ETH![name] = await s.publicClient.getBalance({ address });
  for (const [asset, token] of Object.entries(tokens)) {
    balances[asset] = {};
    for (const [name, address] of Object.entries(book)) balances[asset]![name] = await token.read.balanceOf([address]);
  }
  return balances;
}

/** Balances of every account in `book`, in ETH and each of `tokens` (LaborGas by default). */
export async function snapshot(s: System, book: Book = systemBook(s), tokens: Record<string, TokenLike> = { LGAS: s.token }): Promise<Snapshot> {
  const names = new Set(Object.values(book).map((a) => a.toLowerCase()));
  expect(names.size, "every account of a ledger book must be distinct").to.equal(Object.keys(book).length);
  return { block: await s.publicClient.getBlockNumber(), book, tokens, balances: await readBalances(s, book, tokens) };
}

/** Gas (in wei) each account of the book paid for the transactions mined since the snapshot. */
async function gasPaidSince(s: System, snap: Snapshot): Promise<Record<string, bigint>> {
  const byAddress = new Map(Object.entries(snap.book).map(([name, a]) => [a.toLowerCase(), name]));
  const paid: Record<string, bigint> = {};
  const latest = await s.publicClient.getBlockNumber();
  for (let n = snap.block + 1n; n <= latest; n++) {
    const block = await s.publicClient.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) {
      const name = byAddress.get(tx.from.toLowerCase());
      if (name === undefined) continue;
      const receipt = await s.publicClient.getTransactionReceipt({ hash: tx.hash });
      paid[name] = (paid[name] ?? 0n) + receipt.gasUsed * receipt.effectiveGasPrice;
    }
  }
  return paid;
}

/** Balance changes since `snap`, with the ETH each account paid for gas added back. */
export async function deltasSince(s: System, snap: Snapshot): Promise<Expected> {
  const after = await readBalances(s, snap.book, snap.tokens);
  const gas = await gasPaidSince(s, snap);
  const deltas: Expected = {};
  for (const [asset, balances] of Object.entries(after)) {
    deltas[asset] = {};
    for (const [name, value] of Object.entries(balances)) {
      deltas[asset]![name] = value - snap.balances[asset]![name]! + (asset === "ETH" ? (gas[name] ?? 0n) : 0n);
    }
  }
  return deltas;
}

/**
 * Asserts the exact change of every balance in the snapshot's book, in every asset: what `expected` names,
 * and zero for everyone and everything else. ETH deltas exclude the gas each account paid.
 */
export async function expectDeltas(s: System, snap: Snapshot, expected: Expected): Promise<void> {
  const actual = await deltasSince(s, snap);
  const want: Expected = {};
  for (const asset of Object.keys(actual)) {
    want[asset] = {};
    for (const name of Object.keys(snap.book)) want[asset]![name] = expected[asset]?.[name] ?? 0n;
  }
  for (const asset of Object.keys(expected)) expect(actual, `asset ${asset} is not tracked`).to.have.property(asset);
  for (const asset of Object.keys(actual)) expect(actual[asset], `${asset} deltas`).to.deep.equal(want[asset]);
}

/*//////////////////////////////////////////////////////////////
                            TRANSACTIONS
//////////////////////////////////////////////////////////////*/

export async function mined(s: System, hash: Hash | Promise<Hash>): Promise<TransactionReceipt> {
  const receipt = await s.publicClient.waitForTransactionReceipt({ hash: await hash });
  expect(receipt.status).to.equal("success");
  return receipt;
}

export async function blockTime(s: System, receipt: TransactionReceipt): Promise<bigint> {
  return (await s.publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp;
}

/** Decodes the custom error a mined, reverted transaction raised (Hardhat's debug trace). */
export async function minedRevert(s: System, hash: Hash, abi: Abi) {
  const receipt = await s.publicClient.waitForTransactionReceipt({ hash });
  expect(receipt.status).to.equal("reverted");
  const trace = (await hre.network.provider.send("debug_traceTransaction", [
    hash,
    { disableMemory: true, disableStack: true, disableStorage: true },
  ])) as { failed: boolean; returnValue: string };
  expect(trace.failed).to.equal(true);
  const data = (trace.returnValue.startsWith("0x") ? trace.returnValue : `0x${trace.returnValue}`) as Hex;
  return { receipt, error: decodeErrorResult({ abi, data }) };
}

/*//////////////////////////////////////////////////////////////
                              CHANNELS
//////////////////////////////////////////////////////////////*/

export type Session = {
  escrow: Escrow;
  ref: ChannelRef;
  sessionId: Hex;
  domain: GasEscrowDomain;
  /** What the channel was credited with (net of any transfer fee). */
  deposit: bigint;
  feeBps: number;
};

export const assetOf = (s: System, kind: Kind): Address => (kind === "ETH" ? zeroAddress : s.token.address);

export function escrowDomain(s: System, escrow: Escrow = s.escrow): GasEscrowDomain {
  return gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: getAddress(escrow.address) });
}

/**
 * Opens a channel for `asset`. Only the funder named in the terms may open (issue 12): `client` by
 * default; a contract funder (an ETH rejecter) is impersonated, lent the ETH it sends, and left with the
 * balance it had, so ledgers taken afterwards see nothing of it. `from` overrides the sender.
 */
export async function openSession(
  s: System,
  asset: Address,
  options: { deposit?: bigint; terms?: Partial<ChannelTerms>; escrow?: Escrow; from?: Wallet } = {},
): Promise<Session> {
  const escrow = options.escrow ?? s.escrow;
  const amount = options.deposit ?? ether("2");
  const terms = makeTerms(asset, options.terms);
  const value = asset === zeroAddress ? amount : 0n;
  const funder = getAddress(terms.funder);
  let receipt: TransactionReceipt;
  if (options.from === undefined && funder !== getAddress(s.client.account.address)) {
    const before = await s.publicClient.getBalance({ address: funder });
    await hre.network.provider.request({ method: "hardhat_impersonateAccount", params: [funder] });
    await hre.network.provider.request({ method: "hardhat_setBalance", params: [funder, toHex(before + value + ether("1"))] });
    receipt = await mined(s, escrow.write.open([terms, amount], { account: funder, value }));
    await hre.network.provider.request({ method: "hardhat_setBalance", params: [funder, toHex(before)] });
    await hre.network.provider.request({ method: "hardhat_stopImpersonatingAccount", params: [funder] });
  } else {
    const from = options.from ?? s.client;
    receipt = await mined(s, escrow.write.open([terms, amount], { account: from.account, value }));
  }
  const ref: ChannelRef = { terms, openedAt: receipt.blockNumber };
  const domain = escrowDomain(s, escrow);
  const sessionId = sessionIdOf(domain, ref);
  const [feeBps] = await escrow.read.routingFee();
  return { escrow, ref, sessionId, domain, deposit: await escrow.read.depositOf([sessionId]), feeBps };
}

/** The PaymentTicket the escrow reconstructs for `session` from a ticket's moving parts. */
export function paymentTicketOf(session: Pick<Session, "ref" | "sessionId">, seq: bigint, amount: bigint, root: Hex): PaymentTicket {
  return {
    sessionId: session.sessionId,
    provider: session.ref.terms.provider,
    termsHash: session.ref.terms.termsHash,
    seq,
    cumulativeAmount: amount,
    receiptRoot: root,
  };
}

/** A ticket as submitted on-chain. By default the payer signs it for `session` in its own domain. */
export async function signTicket(
  session: Session,
  seq: bigint,
  amount: bigint,
  options: { root?: Hex; signer?: LocalAccount; domain?: GasEscrowDomain; sessionId?: Hex } = {},
): Promise<Ticket> {
  const root = options.root ?? rootOf(seq);
  const signed = { ...paymentTicketOf(session, seq, amount, root), sessionId: options.sessionId ?? session.sessionId };
  const { signature } = await signPaymentTicket({ account: options.signer ?? PAYER_KEY, domain: options.domain ?? session.domain, ticket: signed });
  return { seq, cumulativeAmount: amount, receiptRoot: root, sig: toCompactSignature(signature) };
}

/** The EIP-712 digest the escrow verifies for `ticket` on `session`. */
export function ticketDigest(session: Session, ticket: Pick<Ticket, "seq" | "cumulativeAmount" | "receiptRoot">): Hex {
  return paymentTicketDigest(session.domain, paymentTicketOf(session, ticket.seq, ticket.cumulativeAmount, ticket.receiptRoot));
}

export function stateOf(session: Session, ticket: Pick<Ticket, "seq" | "cumulativeAmount" | "receiptRoot">): ClosingState {
  return { deposit: session.deposit, seq: ticket.seq, amount: ticket.cumulativeAmount, receiptRoot: ticket.receiptRoot, feeBps: session.feeBps };
}

export function closeUnilateral(session: Session, ticket: Ticket, from: Wallet) {
  return session.escrow.write.closeUnilateral([session.ref.terms, session.ref.openedAt, ticket], { account: from.account });
}

export function challenge(session: Session, recorded: ClosingState, ticket: Ticket, from: Wallet) {
  return session.escrow.write.challenge([session.ref.terms, session.ref.openedAt, recorded, ticket], { account: from.account });
}

export function finalize(session: Session, recorded: ClosingState, from: Wallet) {
  return session.escrow.write.finalize([session.ref.terms, session.ref.openedAt, recorded], { account: from.account });
}

/** Both parties' compact signatures over a cooperative SettlementSummary (or the given substitutes'). */
export async function signSummary(
  session: Session,
  finalSeq: bigint,
  finalAmount: bigint,
  options: { root?: Hex; domain?: GasEscrowDomain; sessionId?: Hex; payer?: LocalAccount; provider?: LocalAccount } = {},
) {
  const summary = {
    sessionId: options.sessionId ?? session.sessionId,
    provider: session.ref.terms.provider,
    payer: session.ref.terms.payer,
    termsHash: session.ref.terms.termsHash,
    finalSeq,
    finalAmount,
    finalReceiptRoot: options.root ?? rootOf(finalSeq),
    mode: "Cooperative" as const,
  };
  const domain = options.domain ?? session.domain;
  const payerSig = toCompactSignature(await signSettlementSummary({ account: options.payer ?? PAYER_KEY, domain, summary }));
  const providerSig = toCompactSignature(await signSettlementSummary({ account: options.provider ?? PROVIDER_KEY, domain, summary }));
  return { finalSeq, finalAmount, root: summary.finalReceiptRoot, payerSig, providerSig };
}

export type SignedSummary = Awaited<ReturnType<typeof signSummary>>;

export function closeCooperative(session: Session, summary: SignedSummary, from: Wallet, sigs: { payer?: Sig; provider?: Sig } = {}) {
  return session.escrow.write.closeCooperative(
    [
      session.ref.terms,
      session.ref.openedAt,
      summary.finalSeq,
      summary.finalAmount,
      summary.root,
      sigs.payer ?? summary.payerSig,
      sigs.provider ?? summary.providerSig,
    ],
    { account: from.account },
  );
}

/*//////////////////////////////////////////////////////////////
                        SIGNATURE MUTATIONS
//////////////////////////////////////////////////////////////*/

/**
 * The high-s twin (r, n − s, ¬v) of a compact signature, in the two ways an attacker can squeeze it into
 * ERC-2098's 256-bit `vs`: n − s almost always needs bit 255 itself, so the parity bit is lost — either
 * left as n − s's own top bit, or cleared. (When n − s < 2^255 the twin is exact: its parity goes on top.)
 */
export function highSTwins(sig: Sig): Sig[] {
  const vs = BigInt(sig.vs);
  const s = vs & (TOP_BIT - 1n);
  const parity = vs >> 255n;
  const twin = N - s;
  if (twin < TOP_BIT) return [{ r: sig.r, vs: word(twin | ((1n - parity) << 255n)) }];
  return [
    { r: sig.r, vs: word(twin) },
    { r: sig.r, vs: word(twin ^ TOP_BIT) },
  ];
}

/** The same compact signature with the ERC-2098 parity bit flipped. */
export function parityFlipped(sig: Sig): Sig {
  return { r: sig.r, vs: word(BigInt(sig.vs) ^ TOP_BIT) };
}

/** A signature whose s is n/2 + 1 (the smallest high s, representable in ERC-2098) with the given parity. */
export function smallestHighS(sig: Sig, parity: 0n | 1n): Sig {
  return { r: sig.r, vs: word((HALF_N + 1n) | (parity << 255n)) };
}

/** What OpenZeppelin's `ECDSA.tryRecover(digest, r, vs)` makes of `sig`. */
export async function recoverCompact(
  digest: Hex,
  sig: Sig,
): Promise<{ kind: "signer"; signer: Address } | { kind: "highS"; s: Hex } | { kind: "invalid" }> {
  const s = BigInt(sig.vs) & (TOP_BIT - 1n);
  if (s > HALF_N) return { kind: "highS", s: word(s) };
  try {
    const signer = await recoverAddress({ hash: digest, signature: compactSignatureToSignature({ r: sig.r, yParityAndS: sig.vs }) });
    return signer === zeroAddress ? { kind: "invalid" } : { kind: "signer", signer: getAddress(signer) };
  } catch {
    return { kind: "invalid" };
  }
}

/*//////////////////////////////////////////////////////////////
                                GIGS
//////////////////////////////////////////////////////////////*/

export const ICS_HASH: Hex = label("adversarial intent contract schema");
export const DELIVERABLE: Hex = label("adversarial deliverable");
export const PACKAGE_HASH: Hex = label("adversarial challenge package");
export const RESOLUTION_HASH: Hex = label("adversarial resolution document");
export const GIG_WINDOW = 3600;

export const subjectOf = (gigId: bigint): Hex => word(gigId);

/** Funds a gig of `amount` in `asset` from `from` (the client) for the provider; returns its id. */
export async function fundGig(s: System, asset: Address, amount: bigint, options: { from?: Wallet; deadlineIn?: bigint; window?: number } = {}) {
  const from = options.from ?? s.client;
  const now = (await s.publicClient.getBlock()).timestamp;
  await mined(
    s,
    s.gigs.write.fund(
      [s.provider.account.address, asset, amount, ICS_HASH, Number(now + (options.deadlineIn ?? 86_400n)), options.window ?? GIG_WINDOW],
      { account: from.account, value: asset === zeroAddress ? amount : 0n },
    ),
  );
  return s.gigs.read.gigCount();
}

/** Funds, accepts and delivers a gig; returns its id. */
export async function deliveredGig(s: System, asset: Address, amount: bigint, options: { from?: Wallet; window?: number } = {}) {
  const gigId = await fundGig(s, asset, amount, options);
  await mined(s, s.gigs.write.accept([gigId], { account: s.provider.account }));
  await mined(s, s.gigs.write.deliver([gigId, DELIVERABLE, `0x${"00".repeat(32)}`], { account: s.provider.account }));
  return gigId;
}

/*//////////////////////////////////////////////////////////////
                         HOSTILE ETH RECEIVER
//////////////////////////////////////////////////////////////*/

/**
 * A contract wallet that, once armed, re-enters `target` with `data` from its `receive()` the next time it
 * is paid ETH, and records what happened. Its slots start non-zero so the bookkeeping fits the 100k gas
 * stipend solady's `forceSafeTransferETH` forwards. `exec` lets it act as a client or a challenger.
 */
export const HOSTILE_RECEIVER_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;
contract HostileReceiver {
    address public target;
    bool public armed;
    /// 1 = never re-entered, 2 = the re-entrant call succeeded, 3 = it reverted.
    uint8 public outcome = 1;
    uint256 public attempts = 1;
    bytes32 public lastError = bytes32(uint256(1));
    uint256 public received = 1;
    bytes private _data;

    function arm(address t, bytes calldata d) external {
        target = t;
        _data = d;
        armed = true;
    }

    function exec(address t, bytes calldata d, uint256 v) external payable returns (bytes memory r) {
        bool ok;
        (ok, r) = t.call{value: v}(d);
        if (!ok) assembly { revert(add(r, 32), mload(r)) }
    }

    receive() external payable {
        unchecked { received += msg.value; }
        if (!armed) return;
        armed = false;
        (bool ok, bytes memory r) = target.call(_data);
        unchecked { ++attempts; }
        outcome = ok ? 2 : 3;
        bytes32 head;
        if (r.length > 0) assembly { head := mload(add(r, 32)) }
        lastError = head;
    }
}
`;

export const HOSTILE_RECEIVER_ABI = parseAbi([
  "function arm(address t, bytes d)",
  "function exec(address t, bytes d, uint256 v) payable returns (bytes)",
  "function target() view returns (address)",
  "function armed() view returns (bool)",
  "function outcome() view returns (uint8)",
  "function attempts() view returns (uint256)",
  "function lastError() view returns (bytes32)",
  "function received() view returns (uint256)",
]);

let hostileBytecode: Hex | undefined;

/** Compiles the hostile receiver with the project's pinned solc-js (about 3 s, once per run). */
export function hostileReceiverBytecode(): Hex {
  if (hostileBytecode === undefined) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const solc = require("solc") as { compile(input: string): string };
    const input = {
      language: "Solidity",
      sources: { "HostileReceiver.sol": { content: HOSTILE_RECEIVER_SOURCE } },
      settings: { evmVersion: "cancun", optimizer: { enabled: true, runs: 200 }, outputSelection: { "*": { "*": ["evm.bytecode.object"] } } },
    };
    const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
      errors?: { severity: string; formattedMessage: string }[];
      contracts: Record<string, Record<string, { evm: { bytecode: { object: string } } }>>;
    };
    const errors = (output.errors ?? []).filter((e) => e.severity === "error");
    if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
    hostileBytecode = `0x${output.contracts["HostileReceiver.sol"]!.HostileReceiver!.evm.bytecode.object}`;
  }
  return hostileBytecode;
}

/** Deploys a hostile receiver from `from` (the attacker); returns its address. */
export async function deployHostileReceiver(s: System, from: Wallet): Promise<Address> {
  const hash = await from.deployContract({ abi: HOSTILE_RECEIVER_ABI, bytecode: hostileReceiverBytecode(), account: from.account });
  const receipt = await mined(s, hash);
  return getAddress(receipt.contractAddress!);
}

export async function hostileState(s: System, address: Address) {
  const read = <F extends "armed" | "outcome" | "attempts" | "lastError" | "received">(functionName: F) =>
    s.publicClient.readContract({ address, abi: HOSTILE_RECEIVER_ABI, functionName });
  return {
    armed: await read("armed"),
    outcome: await read("outcome"),
    attempts: await read("attempts"),
    lastError: await read("lastError"),
    received: await read("received"),
  };
}

/**
 * A channel between the system's payer and provider on `termsHash` (policy 0xabab…, a one-hour challenge),
 * funded with `amount` by the client on the payer's behalf — a sponsored session, as the Lane 0 suites use.
 */
export async function openSponsoredChannel(s: System, termsHash: Hex, nonce: bigint, amount: bigint) {
  const payer = hardhatAccount(SYS.payer);
  const provider = hardhatAccount(SYS.provider);
  const terms = {
    payer: payer.address,
    provider: provider.address,
    funder: getAddress(s.client.account.address),
    asset: zeroAddress,
    termsHash,
    policyHash: `0x${"ab".repeat(32)}` as Hex,
    challengeDuration: 3600n,
    nonce,
  };
  const escrow = getAddress(s.escrow.address);
  const opened = await openChannel({ wallet: s.client, publicClient: s.publicClient, escrow, terms, amount });
  const domain = gasEscrowDomain({ chainId: Number(s.chainId), verifyingContract: escrow });
  return { payer, provider, terms, escrow, opened, domain, sessionId: sessionIdOf(domain, opened.ref) };
}
