/** `ioi dispute build-gig` and `ioi dispute build-session`: a ChallengePackage from what the challenger holds. */
import { isAddressEqual } from "viem";
import { ReceiptAccumulator } from "../core/accumulator";
import { channelOf, gigIdOf, loadAccount, need, openStore, sessionOf, uint, UsageError, type Out } from "./common";
import { gasEscrowAbi } from "../chain/escrow";
import { grantForTicket, KeyTicketWithoutGrantError } from "../node/key-tickets";
import { leafCountOfRoot } from "../node/receipt-anchor";
import { assertBundleHash, bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import { buildGigPackage, buildSessionPackage } from "../../arbitration/runner/build";
import { currentClosingState, gigEscrowAbi } from "../../arbitration/runner/chain";
import { parseDocument } from "../../arbitration/documents/document";
import { icsFromJson, icsHash, type Ics } from "../../arbitration/documents/ics";
import type { ReceiptEvidence } from "../../arbitration/documents/package";
import { readBundleDirectory } from "./input-file";
import {
  MAX_ICS_FILE_BYTES,
  PackageMismatchError,
  type Values,
  disputeClients,
  gigSubject,
  laneOf,
  nextCaseId,
  outputPath,
  readInput,
  writePackage,
} from "./dispute-plumbing";

/*//////////////////////////////////////////////////////////////
                          BUILDING PACKAGES
//////////////////////////////////////////////////////////////*/

export async function runBuildGig(values: Values, out: Out): Promise<void> {
  const account = loadAccount(values);
  const gigId = gigIdOf(values);
  const icsFile = need(values, "ics-file", "the Intent Contract Schema the gig is bound to (JSON or YAML)");
  const deliverableDir = need(values, "deliverable-dir", "the directory holding the delivered files");
  const suiteDir = values["suite-dir"] as string | undefined;
  const lane = laneOf(values, 1);
  const file = outputPath(values, "out", "the file to write the package to", true)!;

  const ics: Ics = icsFromJson(parseDocument(readInput("ics-file", icsFile, MAX_ICS_FILE_BYTES), { maxBytes: MAX_ICS_FILE_BYTES, what: `The ICS in ${icsFile}` }));
  let suite: Bundle | null = null;
  if (ics.testSuite !== null) {
    if (suiteDir === undefined) throw new UsageError("--suite-dir is required: the ICS binds a test suite, and the package must carry it.");
    suite = readBundleDirectory(suiteDir, "suite-dir");
    assertBundleHash(suite, ics.testSuite.hash, `--suite-dir ${suiteDir}`);
  } else if (suiteDir !== undefined) {
    throw new UsageError("--suite-dir was given, but the ICS binds no test suite (test_suite is null); drop it.");
  }
  const deliverable = readBundleDirectory(deliverableDir, "deliverable-dir");

  const { publicClient, chainId, deployment } = await disputeClients(values);
  const gig = await publicClient.readContract({ address: deployment.gigEscrow, abi: gigEscrowAbi, functionName: "gigOf", args: [gigId] });
  if (gig.status === 0) throw new UsageError(`Gig ${gigId} does not exist in the GigEscrow at ${deployment.gigEscrow}.`);
  if (!isAddressEqual(gig.client, account.address)) {
    throw new PackageMismatchError(`Only gig ${gigId}'s client ${gig.client} can dispute it; the acting key is ${account.address}.`);
  }
  if (icsHash(ics) !== gig.icsHash) {
    throw new PackageMismatchError(`The ICS in ${icsFile} hashes to ${icsHash(ics)}; gig ${gigId} is bound to ${gig.icsHash}.`);
  }
  if (bundleHash(deliverable) !== gig.deliverableHash) {
    throw new PackageMismatchError(
      BigInt(gig.deliverableHash) === 0n
        ? `Gig ${gigId} has no delivery yet; there is nothing to dispute.`
        : `--deliverable-dir ${deliverableDir} hashes to ${bundleHash(deliverable)}; gig ${gigId} was delivered as ${gig.deliverableHash}.`,
    );
  }
  const caseId = await nextCaseId(publicClient, deployment.disputeManager, 1, gigSubject(gigId));
  const pkg = buildGigPackage({
    caseId,
    chainId: BigInt(chainId),
    disputeManager: deployment.disputeManager,
    challenger: account.address,
    lane,
    gigEscrow: deployment.gigEscrow,
    gigId,
    ics,
    suite,
    deliverable,
  });
  writePackage(out, file, pkg);
  out.result.gigId = gigId.toString();
}

export async function runBuildSession(values: Values, out: Out): Promise<void> {
  const account = loadAccount(values);
  const sessionId = sessionOf(values);
  const seq = uint(values, "seq", "the seq of the receipt being disputed");
  if (seq === 0n || seq >= 1n << 64n) throw new UsageError(`--seq must be a receipt seq from 1 to 2^64 - 1; received "${values.seq as string}".`);
  const lane = laneOf(values, 0);
  const file = outputPath(values, "out", "the file to write the package to", true)!;
  const { publicClient, chainId, deployment } = await disputeClients(values);
  const store = openStore(values, "payer");
  try {
    const channel = channelOf(store, sessionId);
    if (channel.chainId !== chainId || !isAddressEqual(channel.escrow, deployment.gasEscrow)) {
      throw new PackageMismatchError(
        `The store's channel lives in the GasEscrow ${channel.escrow} on chain ${channel.chainId}; the DisputeManager uses ${deployment.gasEscrow} on chain ${chainId}.`,
      );
    }
    const { payer, funder } = channel.ref.terms;
    if (!isAddressEqual(payer, account.address) && !isAddressEqual(funder, account.address)) {
      throw new PackageMismatchError(`Only the session's payer ${payer} or funder ${funder} can dispute it; the acting key is ${account.address}.`);
    }
    const closing = await currentClosingState(publicClient, deployment.gasEscrow, sessionId, deployment.deploymentBlock);
    // Receipts are accepted in seq order, so the store's receipts in seq order are the accumulator's leaves.
    const steps = store.steps(sessionId).filter((step) => step.receipt !== undefined && step.leaf !== undefined);
    const tree = ReceiptAccumulator.fromLeaves(steps.map((step) => step.leaf!));
    const index = steps.findIndex((step) => step.seq === seq);
    if (index < 0) {
      throw new UsageError(`--seq must name a receipt the payer accepted; the store holds ${steps.length === 0 ? "none" : `receipts with seqs ${steps[0]!.seq} to ${steps[steps.length - 1]!.seq}`} for this session, not ${seq}.`);
    }
    // Which root the receipt is provable against (docs/decisions/0003): the recorded root covers however many
    // receipts the closing ticket's signer had accepted (a pipelined ticket lags the receipts behind it; a
    // payer's closing ticket and a cooperative summary cover them all), found by its root, never assumed from
    // the seq. A receipt past it is proven against the provider's signed receipt commit the payer anchored.
    const recordedCount = leafCountOfRoot(tree, closing.receiptRoot);
    const commit = store.latestCommit(sessionId, "provider");
    const commitCount = commit ? Number(commit.commit.leafCount) : 0;
    const commitCovers = commit !== undefined && index < commitCount && commitCount <= tree.size && tree.prefixRoot(commitCount) === commit.commit.root;
    const recordedUsable = recordedCount !== undefined && index < recordedCount;
    const commitAnchored =
      !recordedUsable &&
      commitCovers &&
      (await publicClient.readContract({ address: deployment.gasEscrow, abi: gasEscrowAbi, functionName: "anchoredCommitOf", args: [sessionId, commit.commit.root] })) !== 0n;
    if (!recordedUsable && !commitAnchored) {
      const recorded =
        recordedCount === undefined
          ? `The recorded root ${closing.receiptRoot} (ticket seq ${closing.seq}) is the root of none of the store's first receipts`
          : recordedCount === 0
            ? `The recorded close (ticket seq ${closing.seq}) commits no receipts`
            : `--seq must name a receipt the recorded close commits (${steps[0]!.seq} to ${steps[recordedCount - 1]!.seq}, the ${recordedCount} receipts ticket seq ${closing.seq} commits) or an anchored receipt commit covers; received ${seq}`;
      const remedy = commitCovers
        ? `the provider's receipt commit over ${commitCount} receipts covers it but is not anchored: run \`ioi anchor --session ${sessionId}\` (payer or funder) while the channel is closing or settled, then build again.`
        : commit === undefined
          ? "the store holds no receipt commit the provider signed, so no anchored root can prove it."
          : `the provider's newest receipt commit in the store (over ${commitCount} receipts) does not prove seq ${seq}.`;
      throw new UsageError(`${recorded}; ${remedy}`);
    }
    const size = recordedUsable ? recordedCount : commitCount;
    const evidenceOf = async (i: number): Promise<ReceiptEvidence> => {
      const step = steps[i]!;
      // A ticket a session key signed is the payer's only with the grant (decision 0025): the store keeps every
      // grant the payer signed, and the package carries the one the ticket needs.
      let grant: Awaited<ReturnType<typeof grantForTicket>>;
      try {
        grant = await grantForTicket({ channel, store, ticket: step.ticket });
      } catch (error) {
        if (!(error instanceof KeyTicketWithoutGrantError)) throw error;
        throw new PackageMismatchError(`${error.shortMessage} Without the payer's grant no arbitrator can check the ticket; keep the grant in the store (\`ioi session-key authorize --session\`, or stream with --session-key).`);
      }
      return { receipt: step.receipt!, ticket: step.ticket, leafIndex: BigInt(i), merkleProof: tree.proof(i, size), ...(grant ? { sessionKey: grant } : {}) };
    };
    const receipts = index > 0 && steps[index - 1]!.seq === seq - 1n ? [await evidenceOf(index - 1), await evidenceOf(index)] : [await evidenceOf(index)];
    // The receipts as the provider delivered them (what the payer checked against its request and output),
    // and the provider's fault statement for the challenged seq, if the call failed (issue 12 item 5).
    const delivered = receipts.map((e) => ({ receipt: e.receipt }));
    const fault = store.getFaultStatement(sessionId, seq);
    const caseId = await nextCaseId(publicClient, deployment.disputeManager, 2, sessionId);
    const pkg = buildSessionPackage({
      caseId,
      chainId: BigInt(chainId),
      disputeManager: deployment.disputeManager,
      challenger: account.address,
      lane,
      gasEscrow: deployment.gasEscrow,
      sessionId,
      ref: channel.ref,
      pricing: channel.pricing,
      closing,
      ...(recordedUsable ? {} : { commit: commit! }),
      seq,
      receipts,
      delivered,
      ...(fault ? { fault } : {}),
    });
    writePackage(out, file, pkg);
    Object.assign(out.result, {
      sessionId,
      seq: seq.toString(),
      closingSeq: closing.seq.toString(),
      committedReceipts: size,
      provenAgainst: recordedUsable ? "recorded root" : "anchored receipt commit",
      sessionKey: receipts.find((e) => e.receipt.receipt.seq === seq)!.sessionKey?.grant.key ?? null,
      faultStatement: fault !== undefined,
    });
  } finally {
    await store.close();
  }
}
