/** `ioi arbitrate`: judge a case on the acting key's panel against the chain and sign (or, on a devnet, submit) the resolution. */
import { getAddress, isAddressEqual, type Address, type Hex, type LocalAccount } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { canon } from "../core/canonical";
import { loadAccount, need, uint, UsageError, type Out } from "./common";
import { currentPanel, loadCaseContext } from "../../arbitration/runner/chain";
import { MAX_DOCUMENT_BYTES } from "../../arbitration/documents/document";
import { parsePackage } from "../../arbitration/documents/package";
import { disputeManagerDomain, resolutionToJson, signResolution } from "../../arbitration/lanes/resolution";
import { arbitrate, type ArbitrationRun } from "../../arbitration/runner/runner";
import { runVerifyUpip } from "./verify-upip";
import {
  ArbitratorAbstainedError,
  CaseStateError,
  DEVNET_ACCOUNTS,
  DEVNET_CHAIN_ID,
  HARDHAT_MNEMONIC,
  MAX_PANEL,
  NotOnPanelError,
  PackageMismatchError,
  QuorumDisagreementError,
  SignatureFileError,
  VERDICT_NAMES,
  type Values,
  caseIdOf,
  disputeClients,
  outputPath,
  readInput,
  readStoredCase,
  writeOutput,
} from "./dispute-plumbing";
import { reportSubmitted, submitSigned } from "./case";

/*//////////////////////////////////////////////////////////////
                              ARBITRATION
//////////////////////////////////////////////////////////////*/

/** The Hardhat key of each panel member (accounts 0..39), for --devnet-quorum. */
function devnetKeysOf(panel: readonly Address[]): LocalAccount[] {
  const byAddress = new Map<string, LocalAccount>();
  for (let i = 0; i < DEVNET_ACCOUNTS; i++) {
    const a = mnemonicToAccount(HARDHAT_MNEMONIC, { addressIndex: i });
    byAddress.set(getAddress(a.address), a);
  }
  return panel.map((member) => {
    const key = byAddress.get(getAddress(member));
    if (!key) throw new NotOnPanelError(`Panel member ${member} is not one of the devnet's ${DEVNET_ACCOUNTS} Hardhat accounts, so --devnet-quorum cannot sign for it.`);
    return key;
  });
}

export async function runArbitrate(values: Values, out: Out): Promise<void> {
  if (values["verify-upip"] !== undefined) return runVerifyUpip(values, out);
  const caseId = caseIdOf(values);
  const packageFile = need(values, "package", "the case's ChallengePackage (JSON or YAML)");
  const signOnly = Boolean(values["sign-only"]);
  const quorumSize =
    values["devnet-quorum"] === undefined ? undefined : Number(uint(values, "devnet-quorum", "how many members of the drawn panel to run"));
  if (quorumSize !== undefined && (quorumSize < 1 || quorumSize > MAX_PANEL)) {
    throw new UsageError(`--devnet-quorum must be from 1 to ${MAX_PANEL} (the largest panel); received ${quorumSize}.`);
  }
  if (signOnly && values.submit) throw new UsageError("--sign-only and --submit exclude each other: sign-only writes a signature for `ioi case submit`.");
  if (signOnly && quorumSize !== undefined) throw new UsageError("--sign-only signs as the acting key alone; drop --devnet-quorum.");
  // The acting key signs (alone) or sends the quorum's transaction; a devnet quorum without --submit needs none.
  const account = quorumSize === undefined || values.submit ? loadAccount(values) : undefined;
  const outFile = outputPath(values, "out", signOnly ? "the file to write the signature to" : "the file to write the resolution to", signOnly);
  const auditFile = outputPath(values, "audit", "the file to append the audit log to", false);
  const bytes = readInput("package", packageFile, MAX_DOCUMENT_BYTES);
  const parsed = parsePackage(bytes); // refuse a malformed package before reaching for the chain
  if (parsed.caseId.toLowerCase() !== caseId.toLowerCase()) {
    throw new PackageMismatchError(`The package ${packageFile} is for case ${parsed.caseId}, not case ${caseId}; arbitrate each case with its own package.`);
  }

  const { publicClient, wallet, chainId, deployment } = await disputeClients(values, account);
  if (quorumSize !== undefined && chainId !== DEVNET_CHAIN_ID) {
    throw new UsageError(`--devnet-quorum signs with Hardhat's well-known keys and runs only on chain ${DEVNET_CHAIN_ID}; this node is chain ${chainId}.`);
  }
  const c = await readStoredCase(publicClient, deployment.disputeManager, caseId);
  if (c.statusName !== "deliberating") {
    const hint = c.statusName === "open" ? "; draw its panel first (`ioi case draw`)" : "";
    throw new CaseStateError(`Case ${caseId} is ${c.statusName}, not deliberating${hint}; only a drawn panel arbitrates it.`);
  }
  const { round, panel } = await currentPanel(publicClient, deployment.disputeManager, caseId);
  const needed = Math.floor((2 * panel.length + 2) / 3);
  let arbitrators: LocalAccount[];
  if (quorumSize === undefined) {
    if (!panel.some((m) => isAddressEqual(m, account!.address))) {
      throw new NotOnPanelError(`${account!.address} is not on case ${caseId}'s round ${round} panel (${panel.join(", ")}); only its members sign.`);
    }
    arbitrators = [account!];
  } else {
    if (quorumSize > panel.length) throw new UsageError(`--devnet-quorum ${quorumSize} exceeds case ${caseId}'s panel of ${panel.length}.`);
    if (values.submit && quorumSize < needed) {
      throw new UsageError(`--devnet-quorum ${quorumSize} is below the supermajority of ${needed} that case ${caseId}'s panel of ${panel.length} needs to submit.`);
    }
    arbitrators = devnetKeysOf(panel).slice(0, quorumSize);
  }

  // Each arbitrator parses the package bytes and reads the chain itself, as independent arbitrators would.
  const runs: ArbitrationRun[] = [];
  let kind: "gig" | "session" = "gig";
  for (const arbitrator of arbitrators) {
    const pkg = parsePackage(bytes);
    const ctx = await loadCaseContext(publicClient, deployment, caseId, pkg);
    kind = ctx.case.kind;
    const run = await arbitrate({ pkg, ctx, actor: `arbitrator:${arbitrator.address}` });
    runs.push(run);
    if (auditFile) writeOutput("audit", auditFile, run.audit.map((entry) => `${JSON.stringify(entry)}\n`).join(""), true);
  }
  const abstained = runs.find((r) => r.state === "abstain");
  if (abstained) {
    throw new ArbitratorAbstainedError(
      `The arbitrator abstains from case ${caseId} (${abstained.resolution.aggregate.reasonCodes.join(", ")}): a fault of its own inputs, not of either party; nothing was signed.`,
    );
  }
  const hashes = [...new Set(runs.map((r) => r.resolutionHash))];
  if (hashes.length !== 1) {
    throw new QuorumDisagreementError(`The ${runs.length} arbitrators reached ${hashes.length} different resolutions (${hashes.join(", ")}); nothing was signed.`);
  }
  const run = runs[0]!;
  const { resolution, message } = run;
  const domain = disputeManagerDomain(BigInt(chainId), deployment.disputeManager);
  const signatures: { signer: Address; signature: Hex }[] = [];
  for (const arbitrator of arbitrators) signatures.push({ signer: getAddress(arbitrator.address), signature: await signResolution(arbitrator, domain, message) });

  const verdict = resolution.aggregate.finalVerdict;
  const reasons = resolution.aggregate.reasonCodes;
  const messageJson = { caseId: message.caseId, verdict: message.verdict, refund: message.refund.toString(), slash: message.slash.toString(), resolutionHash: message.resolutionHash };
  out.lines.push(`Arbitrated case ${caseId} (round ${round}): ${run.state}, verdict ${verdict}${reasons.length ? ` (reason codes ${reasons.join(", ")})` : ""}.`);
  out.lines.push(`  resolution ${run.resolutionHash}: remedy ${message.verdict} (${VERDICT_NAMES[message.verdict]}), refund ${message.refund}, slash ${message.slash}`);
  if (quorumSize !== undefined) out.lines.push(`  ${runs.length} members of the drawn panel ran the case independently and reached this same resolution.`);
  for (const s of signatures) out.lines.push(`  signed by ${s.signer}: ${s.signature}`);
  if (outFile && signOnly) {
    const s = signatures[0]!;
    writeOutput("out", outFile, `${JSON.stringify({ caseId, signer: s.signer, resolution: messageJson, signature: s.signature }, null, 2)}\n`);
    out.lines.push(`  wrote the signature to ${outFile}; combine it with other members' by \`ioi case submit --signature ${outFile} …\``);
  } else if (outFile) {
    writeOutput("out", outFile, canon(resolutionToJson(resolution)));
    out.lines.push(`  wrote the resolution to ${outFile}`);
  }
  if (auditFile) out.lines.push(`  appended ${runs.length} audit log${runs.length === 1 ? "" : "s"} to ${auditFile}`);
  Object.assign(out.result, {
    caseId,
    kind,
    round,
    panel,
    state: run.state,
    verdict,
    reasonCodes: reasons,
    resolutionHash: run.resolutionHash,
    resolution: messageJson,
    remedy: { verdict: message.verdict, refund: message.refund.toString(), slash: message.slash.toString() },
    judgeRuntimeHash: resolution.judgeRuntimeHash,
    arbitrators: runs.length,
    signatures,
    ...(outFile ? { out: outFile } : {}),
    ...(auditFile ? { audit: auditFile } : {}),
  });

  if (!values.submit) return;
  if (signatures.length < needed) {
    throw new SignatureFileError(`${signatures.length} signature${signatures.length === 1 ? "" : "s"} cannot decide case ${caseId}: its panel of ${panel.length} needs ${needed}; gather them with --sign-only and \`ioi case submit\`.`);
  }
  reportSubmitted(out, caseId, await submitSigned(wallet!, publicClient, deployment, message, signatures));
}
