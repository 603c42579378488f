/** `ioi case show | draw | submit | appeal | finalize`: a case from its panel's draw to its final payout. */
import { getAddress, isAddress, isAddressEqual, isHex, parseEventLogs, toHex, type Address, type Hex, type PublicClient } from "viem";
import { loadAccount, need, UsageError, type Out } from "./common";
import { formatDate, formatRelative } from "../core/format";
import { BaseError } from "../core/errors";
import type { Wallet } from "../chain/escrow";
import {
  appealCase,
  blocksUntilReady,
  currentPanel,
  disputeManagerAbi,
  DisputeTransactionError,
  drawPanel,
  finalizeCase,
  providerRegistryAbi,
  submitVerdict,
  type Deployment,
  type SubmittedVerdict,
} from "../../arbitration/runner/chain";
import { MAX_DOCUMENT_BYTES } from "../../arbitration/documents/document";
import {
  disputeManagerDomain,
  resolutionFromJson,
  resolutionMessage,
  verifyResolutionSignature,
  type ResolutionMessage,
} from "../../arbitration/lanes/resolution";
import {
  BURN_ADDRESS,
  CaseStateError,
  DEVNET_CHAIN_ID,
  MAX_SIGNATURE_FILE_BYTES,
  NotOnPanelError,
  SignatureFileError,
  type StoredCase,
  VERDICT_NAMES,
  type Values,
  assetAmount,
  bondTokenOf,
  caseIdOf,
  disputeClients,
  nowOnChain,
  readInput,
  readStoredCase,
  tokens,
  transact,
} from "./dispute-plumbing";

/*//////////////////////////////////////////////////////////////
                                 CASE
//////////////////////////////////////////////////////////////*/

type RoundView = { round: number; panel: Address[]; signers: Address[]; verdict: number; drawTicket: bigint; appellant: Address };

/** Every round so far: its panel (as drawn) and which members signed its verdict. */
async function roundsOf(publicClient: PublicClient, disputeManager: Address, caseId: Hex, upTo: number): Promise<RoundView[]> {
  const rounds: RoundView[] = [];
  for (let round = 0; round <= upTo; round++) {
    const r = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "roundOf", args: [caseId, round] });
    const panel = [...(await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "panelOf", args: [caseId, round] }))].map((a) => getAddress(a));
    // The mask follows the stored (drawn) order; both lists are shown ascending, as `case draw` shows a panel.
    const ascending = (list: Address[]) => [...list].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
    const signers = ascending(panel.filter((_, i) => (r.signedMask >> i) & 1));
    rounds.push({ round, panel: ascending(panel), signers, verdict: r.verdict, drawTicket: r.drawTicket, appellant: getAddress(r.appellant) });
  }
  return rounds;
}

export async function runCaseShow(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const { publicClient, deployment } = await disputeClients(values);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  const now = await nowOnChain(publicClient);
  const rounds = await roundsOf(publicClient, deployment.disputeManager, caseId, c.round);
  const current = rounds[c.round]!;
  const members = [...new Set(rounds.flatMap((r) => r.panel))];
  const claimable: Record<string, string> = {};
  for (const member of members) {
    const amount = await publicClient.readContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "claimable", args: [c.asset, member] });
    if (amount > 0n) claimable[member] = amount.toString();
  }
  const deadline = BigInt(c.deadline);
  const appealWindowEnds = c.statusName === "decided" ? deadline : null;
  out.lines.push(...caseLines(caseId, c));
  out.lines.push(`  round ${c.round}; ${c.statusName === "open" ? `respond by ${formatDate(BigInt(c.respondBy))}, ` : ""}deadline ${formatDate(deadline)} (${formatRelative(deadline, now)})`);
  for (const r of rounds) {
    const panel = r.panel.length ? r.panel.join(", ") : r.drawTicket ? `not drawn yet (randomness from block ${r.drawTicket})` : "not drawn yet";
    out.lines.push(`  round ${r.round} panel: ${panel}`);
    if (r.verdict !== 0) out.lines.push(`  round ${r.round} verdict ${VERDICT_NAMES[r.verdict] ?? r.verdict}, signed by ${r.signers.join(", ")}`);
  }
  if (appealWindowEnds !== null) out.lines.push(`  appeal window ends ${formatDate(appealWindowEnds)} (${formatRelative(appealWindowEnds, now)}); then \`ioi case finalize\``);
  for (const [who, amount] of Object.entries(claimable)) out.lines.push(`  claimable by ${who}: ${assetAmount(BigInt(amount), c.asset)}`);
  Object.assign(out.result, {
    ...caseToJson(caseId, c),
    round: c.round,
    respondBy: c.respondBy.toString(),
    panel: current.panel,
    signers: current.signers,
    rounds: rounds.map((r) => ({ round: r.round, panel: r.panel, signers: r.signers, verdict: r.verdict, drawTicket: r.drawTicket.toString() })),
    appealWindowEnds: appealWindowEnds === null ? null : formatDate(appealWindowEnds),
    appealSecondsLeft: appealWindowEnds === null ? null : (appealWindowEnds > now ? appealWindowEnds - now : 0n).toString(),
    claimableFees: claimable,
  });
}

function subjectOf(c: StoredCase): string {
  return c.kindName === "gig" ? `gig ${BigInt(c.subjectId)}` : `session ${c.subjectId}`;
}

function caseLines(caseId: Hex, c: StoredCase): string[] {
  return [
    `case ${caseId}: ${c.kindName} dispute of ${subjectOf(c)}, ${c.statusName} at lane ${c.lane}, round ${c.round}`,
    `  challenger ${c.challenger} (bond ${assetAmount(c.challengerBond, c.asset)}), respondent ${c.respondent} (bond ${assetAmount(c.respondentBond, c.asset)})`,
    `  value ${assetAmount(c.value, c.asset)}, package ${c.packageHash}`,
  ];
}

function caseToJson(caseId: Hex, c: StoredCase): Record<string, unknown> {
  return {
    caseId,
    kind: c.kindName,
    subjectId: c.subjectId,
    ...(c.kindName === "gig" ? { gigId: BigInt(c.subjectId).toString() } : { sessionId: c.subjectId }),
    status: c.statusName,
    lane: c.lane,
    deadline: c.deadline.toString(),
    challenger: c.challenger,
    respondent: c.respondent,
    asset: c.asset,
    value: c.value.toString(),
    challengerBond: c.challengerBond.toString(),
    respondentBond: c.respondentBond.toString(),
    packageHash: c.packageHash,
  };
}

export async function runCaseDraw(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const account = loadAccount(values);
  const { publicClient, wallet, chainId, deployment } = await disputeClients(values, account);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  if (c.statusName !== "open") throw new CaseStateError(`Case ${caseId} is ${c.statusName}; only an open case has a panel to draw.`);
  const dm = deployment.disputeManager;
  const draw = () => transact("DisputeManager.drawPanel", () => drawPanel({ wallet: wallet!, publicClient, disputeManager: dm, caseId }));
  let ticket = (await publicClient.readContract({ address: dm, abi: disputeManagerAbi, functionName: "roundOf", args: [caseId, c.round] })).drawTicket;
  const gas: number[] = [];
  if (ticket === 0n) {
    const now = await nowOnChain(publicClient);
    if (now < BigInt(c.respondBy)) {
      throw new CaseStateError(`Case ${caseId} is uncontested and its respond window runs until ${formatDate(BigInt(c.respondBy))} (${formatRelative(BigInt(c.respondBy), now)}); its panel can be requested after that.`);
    }
    const requested = await draw();
    gas.push(Number(requested.gasUsed));
    if (requested.outcome !== "requested") throw new DisputeTransactionError(`Requesting case ${caseId}'s panel did not request randomness.`);
    ticket = requested.ticket;
    out.lines.push(`Requested the randomness of case ${caseId}'s round ${requested.round} panel from block ${ticket} (gas ${requested.gasUsed}).`);
  }
  const wait = await blocksUntilReady(publicClient, ticket);
  if (wait > 0n) {
    if (chainId !== DEVNET_CHAIN_ID) {
      out.lines.push(`The panel's randomness comes from block ${ticket}: wait ${wait} more block${wait === 1n ? "" : "s"}, then run \`ioi case draw --case ${caseId}\` again (within 256 blocks of it).`);
      Object.assign(out.result, { caseId, outcome: "requested", ticket: ticket.toString(), blocksToWait: wait.toString() });
      return;
    }
    await publicClient.request({ method: "hardhat_mine" as never, params: [toHex(wait)] as never });
    out.lines.push(`Mined ${wait} block${wait === 1n ? "" : "s"} on the devnet to reach block ${ticket}.`);
  }
  const drawn = await draw();
  gas.push(Number(drawn.gasUsed));
  if (drawn.outcome === "drawn") {
    out.lines.push(`Drew case ${caseId}'s round ${drawn.round} panel of ${drawn.panel.length}: ${drawn.panel.join(", ")}; verdict due by ${formatDate(drawn.deadline)} (gas ${drawn.gasUsed}).`);
    Object.assign(out.result, { caseId, outcome: "drawn", round: drawn.round, panel: drawn.panel, deadline: drawn.deadline.toString(), gasUsed: gas });
  } else if (drawn.outcome === "slow_path") {
    out.lines.push(`Too few eligible arbitrators for case ${caseId}'s round ${drawn.round}: it moved to governance's slow path until ${formatDate(drawn.deadline)} (gas ${drawn.gasUsed}).`);
    Object.assign(out.result, { caseId, outcome: "slow_path", round: drawn.round, deadline: drawn.deadline.toString(), gasUsed: gas });
  } else {
    out.lines.push(`Block ${ticket} is older than 256 blocks, so its hash is gone: requested new randomness from block ${drawn.ticket}; run \`ioi case draw --case ${caseId}\` again.`);
    Object.assign(out.result, { caseId, outcome: "requested", ticket: drawn.ticket.toString(), gasUsed: gas });
  }
}

type SignatureFile = { caseId: Hex; signer: Address; resolution: ResolutionMessage; signature: Hex };

/** A signature file as `ioi arbitrate --sign-only` writes it, validated field by field. */
function parseSignatureFile(file: string, option: string): SignatureFile {
  const bytes = readInput(option, file, MAX_SIGNATURE_FILE_BYTES);
  const bad = (what: string) => new SignatureFileError(`--${option} ${file}: ${what}`);
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw bad("is not JSON; pass a file written by `ioi arbitrate --sign-only --out FILE`.");
  }
  const v = value as Record<string, unknown>;
  const r = v?.resolution as Record<string, unknown> | undefined;
  const isHash = (x: unknown): x is Hex => typeof x === "string" && isHex(x) && x.length === 66;
  const isDec = (x: unknown): x is string => typeof x === "string" && /^(0|[1-9][0-9]{0,38})$/.test(x);
  if (typeof v !== "object" || v === null) throw bad("must hold a JSON object {caseId, signer, resolution, signature}.");
  if (!isHash(v.caseId)) throw bad("caseId must be 0x and 64 hex digits.");
  if (typeof v.signer !== "string" || !isAddress(v.signer)) throw bad("signer must be an address.");
  if (typeof v.signature !== "string" || !isHex(v.signature) || v.signature.length !== 132) throw bad("signature must be a 65-byte hex signature.");
  if (typeof r !== "object" || r === null) throw bad("resolution must be the signed message {caseId, verdict, refund, slash, resolutionHash}.");
  if (!isHash(r.caseId) || !isHash(r.resolutionHash)) throw bad("resolution.caseId and resolution.resolutionHash must be 0x and 64 hex digits.");
  if (![1, 2, 3, 4].includes(r.verdict as number)) throw bad("resolution.verdict must be 1, 2, 3 or 4.");
  if (!isDec(r.refund) || !isDec(r.slash)) throw bad("resolution.refund and resolution.slash must be decimal strings of base units.");
  if (r.caseId.toLowerCase() !== v.caseId.toLowerCase()) throw bad(`signs case ${r.caseId}, but names case ${v.caseId}.`);
  return {
    caseId: v.caseId.toLowerCase() as Hex,
    signer: getAddress(v.signer),
    signature: v.signature,
    resolution: {
      caseId: r.caseId.toLowerCase() as Hex,
      verdict: r.verdict as ResolutionMessage["verdict"],
      refund: BigInt(r.refund),
      slash: BigInt(r.slash),
      resolutionHash: r.resolutionHash.toLowerCase() as Hex,
    },
  };
}

const sameMessage = (a: ResolutionMessage, b: ResolutionMessage): boolean =>
  a.caseId === b.caseId && a.verdict === b.verdict && a.refund === b.refund && a.slash === b.slash && a.resolutionHash.toLowerCase() === b.resolutionHash.toLowerCase();

export async function runCaseSubmit(values: Values, out: Out): Promise<void> {
  const files = (values.signature as unknown as string[] | undefined) ?? [];
  if (files.length === 0) throw new UsageError("--signature is required: a signature file from `ioi arbitrate --sign-only` (repeat it per signer).");
  const signed = files.map((file) => parseSignatureFile(file, "signature"));
  const message = signed[0]!.resolution;
  if (values.resolution !== undefined) {
    const file = need(values, "resolution", "the resolution document");
    let fromDocument: ResolutionMessage;
    try {
      fromDocument = resolutionMessage(resolutionFromJson(JSON.parse(readInput("resolution", file, MAX_DOCUMENT_BYTES).toString("utf8"))));
    } catch (cause) {
      if (cause instanceof BaseError) throw cause;
      throw new UsageError(`--resolution ${file} is not JSON; pass the file \`ioi arbitrate --out\` wrote.`, { cause });
    }
    if (!sameMessage(fromDocument, message)) throw new SignatureFileError(`--resolution ${file} is not the resolution the signatures sign (resolution hash ${message.resolutionHash}).`);
  }
  for (const [i, s] of signed.entries()) {
    if (!sameMessage(s.resolution, message)) {
      throw new SignatureFileError(`--signature ${files[i]} signs another resolution than ${files[0]} (resolution hash ${s.resolution.resolutionHash} vs ${message.resolutionHash}).`);
    }
  }
  const seen = new Set<string>();
  for (const [i, s] of signed.entries()) {
    if (seen.has(s.signer)) throw new SignatureFileError(`--signature ${files[i]} repeats signer ${s.signer}; each panel member signs once.`);
    seen.add(s.signer);
  }
  const account = loadAccount(values);
  const { publicClient, wallet, chainId, deployment } = await disputeClients(values, account);
  const caseId = message.caseId;
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  if (c.statusName !== "deliberating") throw new CaseStateError(`Case ${caseId} is ${c.statusName}; a verdict can be submitted only while its panel deliberates.`);
  const domain = disputeManagerDomain(BigInt(chainId), deployment.disputeManager);
  for (const [i, s] of signed.entries()) {
    try {
      await verifyResolutionSignature(domain, message, s.signature, s.signer);
    } catch (cause) {
      throw new SignatureFileError(`--signature ${files[i]}: the signature does not recover to ${s.signer} for this resolution on this DisputeManager.`, { cause });
    }
  }
  const { round, panel } = await currentPanel(publicClient, deployment.disputeManager, caseId);
  for (const s of signed) {
    if (!panel.some((m) => isAddressEqual(m, s.signer))) throw new NotOnPanelError(`${s.signer} is not on case ${caseId}'s round ${round} panel (${panel.join(", ")}).`);
  }
  const needed = Math.floor((2 * panel.length + 2) / 3);
  if (signed.length < needed) {
    throw new SignatureFileError(`${signed.length} signature${signed.length === 1 ? "" : "s"} given; case ${caseId}'s panel of ${panel.length} needs a supermajority of ${needed}.`);
  }
  const submitted = await submitSigned(wallet!, publicClient, deployment, message, signed);
  reportSubmitted(out, caseId, submitted);
}

export function submitSigned(wallet: Wallet, publicClient: PublicClient, deployment: Deployment, message: ResolutionMessage, signatures: { signer: Address; signature: Hex }[]) {
  return transact("DisputeManager.submitVerdict", () => submitVerdict({ wallet, publicClient, deployment, message, signatures }));
}

export function reportSubmitted(out: Out, caseId: Hex, v: SubmittedVerdict): void {
  out.lines.push(
    v.outcome === "decided"
      ? `Submitted case ${caseId}'s round ${v.round} verdict ${VERDICT_NAMES[v.verdict] ?? v.verdict} (refund ${v.refund}, slash ${v.slash}); the appeal window ends ${formatDate(v.deadline)}, then \`ioi case finalize\` (gas ${v.gasUsed}).`
      : `Submitted: the verdict is undecidable, so case ${caseId} moved to governance's slow path until ${formatDate(v.deadline)} (gas ${v.gasUsed}).`,
  );
  out.result.submitted = {
    outcome: v.outcome,
    round: v.round,
    verdict: v.verdict,
    refund: v.refund.toString(),
    slash: v.slash.toString(),
    signedMask: v.signedMask,
    ...(v.outcome === "decided" ? { appealWindowEnds: formatDate(v.deadline) } : { slowPathDeadline: formatDate(v.deadline) }),
    transactionHash: v.hash,
    gasUsed: Number(v.gasUsed),
  };
}

export async function runCaseAppeal(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  if (c.statusName !== "decided") throw new CaseStateError(`Case ${caseId} is ${c.statusName}; only a decided case inside its appeal window can be appealed.`);
  if (!isAddressEqual(account.address, c.challenger) && !isAddressEqual(account.address, c.respondent)) {
    throw new DisputeTransactionError(`${account.address} is neither the challenger nor the respondent of case ${caseId}; only a party can appeal.`);
  }
  const now = await nowOnChain(publicClient);
  if (now >= BigInt(c.deadline)) throw new CaseStateError(`Case ${caseId}'s appeal window closed at ${formatDate(BigInt(c.deadline))}; finalise it instead.`);
  const params = await publicClient.readContract({ address: deployment.disputeManager, abi: disputeManagerAbi, functionName: "caseParams", args: [caseId] });
  if (c.round >= params.maxAppeals) throw new CaseStateError(`Case ${caseId} was already appealed ${c.round} time${c.round === 1 ? "" : "s"}, the most the DisputeManager allows.`);
  const appealed = await transact("DisputeManager.appeal", () => appealCase({ wallet: wallet!, publicClient, disputeManager: deployment.disputeManager, caseId }));
  out.lines.push(
    appealed.status === "open"
      ? `Appealed case ${caseId} to round ${appealed.round}, posting a bond of ${assetAmount(appealed.bond, c.asset)}; a fresh panel's randomness is requested: \`ioi case draw --case ${caseId}\` (gas ${appealed.gasUsed}).`
      : `Appealed case ${caseId} a second time, posting a bond of ${assetAmount(appealed.bond, c.asset)}: it is on governance's slow path until ${formatDate(appealed.deadline)} (gas ${appealed.gasUsed}).`,
  );
  Object.assign(out.result, {
    caseId,
    by: isAddressEqual(account.address, c.challenger) ? "challenger" : "respondent",
    round: appealed.round,
    bond: appealed.bond.toString(),
    status: appealed.status,
    deadline: appealed.deadline.toString(),
    transactionHash: appealed.hash,
    gasUsed: Number(appealed.gasUsed),
  });
}

export async function runCaseFinalize(values: Values, out: Out): Promise<void> {
  const caseId = caseIdOf(values);
  const account = loadAccount(values);
  const { publicClient, wallet, deployment } = await disputeClients(values, account);
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  if (c.statusName !== "decided") throw new CaseStateError(`Case ${caseId} is ${c.statusName}; only a decided case can be finalised.`);
  const now = await nowOnChain(publicClient);
  if (now <= BigInt(c.deadline)) {
    throw new CaseStateError(`Case ${caseId}'s appeal window runs until ${formatDate(BigInt(c.deadline))} (${formatRelative(BigInt(c.deadline), now)}); it can be finalised after that.`);
  }
  const f = await transact("DisputeManager.finalize", () => finalizeCase({ wallet: wallet!, publicClient, deployment, caseId }));
  // A slash of the respondent's SLA bond moves bond tokens in the registry: its Slashed events say what was burnt.
  const { symbol } = await bondTokenOf(publicClient, deployment.registry);
  const slashLogs = parseEventLogs({ abi: providerRegistryAbi, eventName: "Slashed", logs: (await publicClient.getTransactionReceipt({ hash: f.hash })).logs });
  const slashBurned = slashLogs.reduce((sum, log) => sum + log.args.burned, 0n);
  out.lines.push(
    `Finalised case ${caseId}: ${VERDICT_NAMES[f.verdict] ?? f.verdict}, refunded ${assetAmount(f.refunded, c.asset)}, slashed ${tokens(f.slashed, symbol)} of bond (${tokens(slashBurned, symbol)} of it burnt), ${assetAmount(f.toChallenger, c.asset)} to the challenger, ${assetAmount(f.toRespondent, c.asset)} to the respondent, ${assetAmount(f.burned, c.asset)} burnt to ${BURN_ADDRESS} (gas ${f.gasUsed}).`,
  );
  for (const fee of f.fees) out.lines.push(`  fee ${assetAmount(fee.amount, c.asset)} credited to ${fee.arbitrator} (\`ioi arbitrator claim --asset ${BigInt(c.asset) === 0n ? "eth" : c.asset}\`)`);
  Object.assign(out.result, {
    caseId,
    verdict: f.verdict,
    refunded: f.refunded.toString(),
    slashed: f.slashed.toString(),
    toChallenger: f.toChallenger.toString(),
    toRespondent: f.toRespondent.toString(),
    burned: f.burned.toString(),
    slashBurned: slashBurned.toString(),
    arbitrationFees: f.arbitrationFees.toString(),
    fees: Object.fromEntries(f.fees.map((fee) => [fee.arbitrator, fee.amount.toString()])),
    transactionHash: f.hash,
    gasUsed: Number(f.gasUsed),
  });
}
