/** `ioi dispute open`, `ioi dispute respond` and `ioi dispute expire`: a case's first steps on chain. */
import { isAddressEqual, parseEventLogs, type Address, type Hex, type PublicClient } from "viem";
import { loadAccount, type Out } from "./common";
import { formatDate, formatRelative } from "../core/format";
import type { ClosingState } from "../chain/escrow";
import { sessionReceiptHash } from "../core/receipt";
import { paymentTicketHash } from "../core/ticket";
import {
  currentClosingState,
  disputeManagerAbi,
  DisputeTransactionError,
  gigEscrowAbi,
  openGigCase,
  openSessionCase,
  recordedStateOf,
  type OpenedCase,
} from "../../arbitration/runner/chain";
import { packageHash, soleEvidence, evidenceOfKind, type ChallengePackage } from "../../arbitration/documents/package";
import {
  CaseStateError,
  PackageMismatchError,
  StaleCaseIdError,
  type Values,
  assetAmount,
  bondValue,
  caseIdOf,
  confirmBond,
  disputeClients,
  gigSubject,
  nextCaseId,
  nowOnChain,
  packageSummary,
  readPackage,
  readStoredCase,
  transact,
  write,
} from "./dispute-plumbing";

/*//////////////////////////////////////////////////////////////
                           CASE LIFECYCLE
//////////////////////////////////////////////////////////////*/

const sameClosing = (a: ClosingState, b: ClosingState): boolean =>
  a.deposit === b.deposit && a.seq === b.seq && a.amount === b.amount && a.receiptRoot === b.receiptRoot && a.feeBps === b.feeBps;

export async function runOpen(values: Values, out: Out): Promise<void> {
  const { pkg, file } = readPackage(values);
  const account = loadAccount(values);
  const { publicClient, wallet, chainId, deployment } = await disputeClients(values, account);
  if (pkg.chainId !== BigInt(chainId) || !isAddressEqual(pkg.disputeManager, deployment.disputeManager)) {
    throw new PackageMismatchError(
      `${file} is for the DisputeManager ${pkg.disputeManager} on chain ${pkg.chainId}, not ${deployment.disputeManager} on chain ${chainId}.`,
    );
  }
  if (!isAddressEqual(pkg.challenger, account.address)) {
    throw new PackageMismatchError(`${file} names the challenger ${pkg.challenger}; the acting key is ${account.address}.`);
  }
  const hash = packageHash(pkg);
  const common = { wallet: wallet!, publicClient, disputeManager: deployment.disputeManager, lane: pkg.lane, packageHash: hash };
  const subject = pkg.subject;
  let opened: OpenedCase;
  if (subject.kind === "gig") {
    if (!isAddressEqual(subject.gigEscrow, deployment.gigEscrow)) {
      throw new PackageMismatchError(`${file} disputes a gig of the GigEscrow ${subject.gigEscrow}; the DisputeManager uses ${deployment.gigEscrow}.`);
    }
    await assertNextCaseId(publicClient, deployment.disputeManager, pkg, 1, gigSubject(subject.gigId));
    const gig = await publicClient.readContract({ address: deployment.gigEscrow, abi: gigEscrowAbi, functionName: "gigOf", args: [subject.gigId] });
    await confirmBond(values, publicClient, deployment.disputeManager, gig.asset, gig.amount, pkg.lane, `gig ${subject.gigId}`);
    opened = await transact("DisputeManager.openGigCase", () => openGigCase({ ...common, gigEscrow: deployment.gigEscrow, gigId: subject.gigId }));
  } else {
    if (!isAddressEqual(subject.gasEscrow, deployment.gasEscrow)) {
      throw new PackageMismatchError(`${file} disputes a session of the GasEscrow ${subject.gasEscrow}; the DisputeManager uses ${deployment.gasEscrow}.`);
    }
    const channel = soleEvidence(pkg, "channel");
    if (!channel) throw new PackageMismatchError(`${file} carries no channel evidence; a session case needs the channel and its recorded close.`);
    const challenged = evidenceOfKind(pkg, "receipt").find((item) => item.content.receipt.receipt.seq === subject.seq);
    if (!challenged) throw new PackageMismatchError(`${file} carries no receipt with seq ${subject.seq}, the step it disputes.`);
    await assertNextCaseId(publicClient, deployment.disputeManager, pkg, 2, subject.sessionId);
    const recorded = await currentClosingState(publicClient, deployment.gasEscrow, subject.sessionId, deployment.deploymentBlock);
    if (!sameClosing(recorded, channel.content.closing)) {
      throw new PackageMismatchError(
        `${file} carries the close with ticket seq ${channel.content.closing.seq}, but the recorded close is now seq ${recorded.seq}; rebuild the package.`,
      );
    }
    const { receipt, ticket, merkleProof } = challenged.content;
    // What the case can move is what the chain prices the bond on: the recorded amount, at most the deposit.
    const atStake = recorded.amount < recorded.deposit ? recorded.amount : recorded.deposit;
    await confirmBond(values, publicClient, deployment.disputeManager, channel.content.ref.terms.asset, atStake, pkg.lane, `session ${subject.sessionId} (the receipt disputed charged ${assetAmount(receipt.receipt.metering.amount, channel.content.ref.terms.asset)})`);
    opened = await transact("DisputeManager.openSessionCase", () =>
      openSessionCase({
        ...common,
        ref: channel.content.ref,
        recorded,
        receiptHash: sessionReceiptHash(receipt.receipt),
        ticketHash: paymentTicketHash(ticket.ticket),
        proof: merkleProof,
      }),
    );
  }
  const stored = await readStoredCase(publicClient, deployment.disputeManager, opened.caseId);
  out.lines.push(
    `Opened case ${opened.caseId} disputing ${packageSummary(pkg)} at lane ${pkg.lane}, posting a bond of ${assetAmount(opened.bond, stored.asset)} (gas ${opened.gasUsed}); the respondent may contest until ${formatDate(BigInt(stored.respondBy))}.`,
  );
  Object.assign(out.result, {
    caseId: opened.caseId,
    kind: subject.kind,
    lane: pkg.lane,
    packageHash: hash,
    bond: opened.bond.toString(),
    asset: stored.asset,
    respondBy: stored.respondBy.toString(),
    deadline: stored.deadline.toString(),
    transactionHash: opened.hash,
    gasUsed: Number(opened.gasUsed),
  });
}

async function assertNextCaseId(publicClient: PublicClient, disputeManager: Address, pkg: ChallengePackage, kind: 1 | 2, subjectId: Hex): Promise<void> {
  const next = await nextCaseId(publicClient, disputeManager, kind, subjectId);
  if (next !== pkg.caseId) {
    throw new StaleCaseIdError(
      `The package names case ${pkg.caseId}, but the next case of ${packageSummary(pkg)} is ${next} (a case was opened since it was built); rebuild it.`,
    );
  }
}

/*//////////////////////////////////////////////////////////////
                          RESPOND AND EXPIRE
//////////////////////////////////////////////////////////////*/

export async function runRespond(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  // Checked here as the contract checks them, so that no token approval is spent on a call bound to revert.
  if (c.statusName !== "open") throw new DisputeTransactionError(`Case ${caseId} is ${c.statusName}; only an open case can be contested.`);
  if (!isAddressEqual(account.address, c.respondent)) {
    throw new DisputeTransactionError(`Only case ${caseId}'s respondent ${c.respondent} can contest it; the acting key is ${account.address}.`);
  }
  if (c.respondentBond !== 0n) throw new DisputeTransactionError(`Case ${caseId} is already contested (respondent bond ${c.respondentBond}).`);
  const now = await nowOnChain(publicClient);
  if (now >= BigInt(c.respondBy)) throw new DisputeTransactionError(`Case ${caseId}'s respond window closed at ${formatDate(BigInt(c.respondBy))}; it can no longer be contested.`);
  const bond = c.challengerBond;
  const value = await bondValue(wallet!, publicClient, c.asset, deployment.disputeManager, bond);
  const { hash, receipt } = await write("DisputeManager.respond", wallet!, publicClient, { address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "respond", args: [caseId], value });
  const [contested] = parseEventLogs({ abi: disputeManagerAbi, eventName: "CaseContested", logs: receipt.logs });
  if (!contested) throw new DisputeTransactionError(`Transaction ${hash} contested no case.`);
  out.lines.push(
    `Contested case ${caseId} as ${contested.args.respondent}, posting a bond of ${assetAmount(contested.args.bond, c.asset)} (gas ${receipt.gasUsed}); the panel's randomness is requested: \`ioi case draw --case ${caseId}\` draws it.`,
  );
  Object.assign(out.result, { caseId, respondent: contested.args.respondent, bond: contested.args.bond.toString(), asset: c.asset, transactionHash: hash, gasUsed: Number(receipt.gasUsed) });
}

export async function runExpire(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  const expirable = c.statusName === "open" || c.statusName === "deliberating" || c.statusName === "slow_path";
  if (!expirable) throw new CaseStateError(`Case ${caseId} is ${c.statusName}; only an open, deliberating or slow-path case can expire.`);
  const now = await nowOnChain(publicClient);
  if (now <= BigInt(c.deadline)) {
    throw new CaseStateError(`Case ${caseId} (${c.statusName}) has until ${formatDate(BigInt(c.deadline))} (${formatRelative(BigInt(c.deadline), now)}); it cannot expire before.`);
  }
  const recorded = await recordedStateOf(publicClient, deployment, caseId);
  const { hash, receipt } = await write("DisputeManager.expire", wallet!, publicClient, { address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "expire", args: [caseId, recorded] });
  const logs = parseEventLogs({ abi: disputeManagerAbi, logs: receipt.logs });
  const base = { caseId, transactionHash: hash, gasUsed: Number(receipt.gasUsed) };
  const slow = logs.find((log) => log.eventName === "CaseToSlowPath");
  if (slow && slow.eventName === "CaseToSlowPath") {
    out.lines.push(`Case ${caseId} missed its deadline: moved to governance's slow path until ${formatDate(BigInt(slow.args.deadline))} (gas ${receipt.gasUsed}).`);
    Object.assign(out.result, { ...base, outcome: "slow_path", deadline: slow.args.deadline.toString() });
    return;
  }
  const expired = logs.find((log) => log.eventName === "CaseExpired");
  const resolved = logs.find((log) => log.eventName === "CaseResolved");
  if (!expired || expired.eventName !== "CaseExpired" || !resolved || resolved.eventName !== "CaseResolved") {
    throw new DisputeTransactionError(`Transaction ${hash} expired no case.`);
  }
  const r = resolved.args;
  out.lines.push(
    expired.args.verdictStood
      ? `Case ${caseId} expired on the slow path: the latest panel verdict stands — refunded ${assetAmount(r.refunded, c.asset)}, slashed ${r.slashed} bond-token units, ${assetAmount(r.toChallenger, c.asset)} to the challenger, ${assetAmount(r.toRespondent, c.asset)} to the respondent (gas ${receipt.gasUsed}).`
      : `Case ${caseId} expired on the slow path with no verdict ever reached: the subject ends as it would without a dispute (refunded ${assetAmount(r.refunded, c.asset)}), no slash, both bonds returned (gas ${receipt.gasUsed}).`,
  );
  Object.assign(out.result, {
    ...base,
    outcome: "expired",
    verdictStood: expired.args.verdictStood,
    refunded: r.refunded.toString(),
    slashed: r.slashed.toString(),
    toChallenger: r.toChallenger.toString(),
    toRespondent: r.toRespondent.toString(),
  });
}
