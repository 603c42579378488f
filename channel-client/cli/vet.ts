/**
 * `ioi gig vet`: the command around {@link vetGig} (`arbitration/vet.ts`, the library part).
 */
import { getAddress, isAddress, type Hex } from "viem";
import { deployedContract, readingOf, rpcClients } from "./chain";
import { gigIdOf, need, uint, UsageError, type Command, type Out } from "./common";
import { parseDocument } from "../../arbitration/documents/document";
import { icsFromJson, icsHash } from "../../arbitration/documents/ics";
import { readBundleDirectory, readOptionFile } from "./input-file";
import { DEFAULT_INPUTS, gigInputs, readGigFunding } from "../../arbitration/lanes/pinned";
import type { PinnedInputs } from "../../arbitration/lanes/replay";
import { vetGig, VET_FAILED_EXIT_CODE, type VetVerdict } from "../../arbitration/lanes/vet";

export { vetGig, VET_FAILED_EXIT_CODE, VET_WATCHDOG_MS, type VetParameters, type VetReturnType, type VetVerdict } from "../../arbitration/lanes/vet";

/*//////////////////////////////////////////////////////////////
                               COMMAND
//////////////////////////////////////////////////////////////*/

/** Largest --ics-file read (as `ioi gig fund --ics-file`). */
const MAX_ICS_FILE_BYTES = 1 << 20;

type Values = Record<string, unknown>;

/** The pinned inputs the options name, and a phrase saying where they came from. */
async function inputsOf(values: Values): Promise<{ inputs: PinnedInputs; source: string; gigId: bigint | null }> {
  if (values.gig === undefined) {
    if (values["funded-at"] !== undefined || values["chain-id"] !== undefined) {
      throw new UsageError("--funded-at and --chain-id pin a gig's inputs and need --gig ID (and the gig's escrow) as well.");
    }
    return { inputs: DEFAULT_INPUTS, source: "the default pinned inputs (no --gig: arbitrators will use the gig's funding block)", gigId: null };
  }
  const gigId = gigIdOf(values);
  if (values["funded-at"] !== undefined) {
    // Pinned offline: the gig's escrow as given, or the one the RPC's deployment record names.
    const given = (values["gig-escrow"] as string | undefined) ?? process.env.IOI_GIG_ESCROW;
    if (given !== undefined && given !== "" && !isAddress(given)) throw new UsageError(`--gig-escrow must be an address; received "${given}".`);
    const gigEscrow = given ? getAddress(given) : (await deployedContract(values, (await rpcClients(values)).publicClient, "gig-escrow", "IOI_GIG_ESCROW", "GigEscrow")).address;
    const fundedAt = uint(values, "funded-at", "the timestamp, in seconds, of the block the gig was funded in");
    if (fundedAt > 8_640_000_000_000n) throw new UsageError(`--funded-at must be a block timestamp in seconds; received ${fundedAt}.`);
    const chainId = uint(values, "chain-id", "the chain id, needed with --funded-at");
    return { inputs: gigInputs({ chainId, gigEscrow, gigId, fundedAt }), source: `gig ${gigId}'s inputs on chain ${chainId} (funded at ${fundedAt}, as given)`, gigId };
  }
  if (values["chain-id"] !== undefined) throw new UsageError("--chain-id is read from the node unless --funded-at is given too.");
  const { publicClient, chainId } = await rpcClients(values);
  const { address: gigEscrow, fromBlock } = await deployedContract(values, publicClient, "gig-escrow", "IOI_GIG_ESCROW", "GigEscrow");
  const reading = readingOf(values, chainId);
  const funding = await readGigFunding(publicClient, gigEscrow, gigId, { fromBlock, maxBlockRange: reading.batchBlocks, retry: reading.retry });
  return {
    inputs: gigInputs({ chainId: BigInt(chainId), gigEscrow, gigId, fundedAt: funding.fundedAt }),
    source: `gig ${gigId}'s inputs on chain ${chainId} (funded at ${funding.fundedAt}, block ${funding.fundedInBlock})`,
    gigId,
  };
}

const iso = (ms: number) => new Date(ms).toISOString();
const seedShort = (seed: Hex) => `${seed.slice(0, 10)}…`;

async function runVet(values: Values, out: Out): Promise<void> {
  const icsFile = need(values, "ics-file", "the Intent Contract Schema the gig is bound to (JSON or YAML)");
  const deliverableDir = need(values, "deliverable-dir", "the deliverable's files");
  const ics = icsFromJson(parseDocument(readOptionFile("ics-file", icsFile, MAX_ICS_FILE_BYTES), { maxBytes: MAX_ICS_FILE_BYTES, what: `The ICS in ${icsFile}` }));
  const suiteDir = values["suite-dir"] as string | undefined;
  if (ics.testSuite && suiteDir === undefined) throw new UsageError("--suite-dir is required: the ICS binds a test suite, and vetting replays it.");
  const suite = suiteDir === undefined ? null : readBundleDirectory(suiteDir, "suite-dir");
  const deliverable = readBundleDirectory(deliverableDir, "deliverable-dir");
  const { inputs, source } = await inputsOf(values);

  const vet = await vetGig({ ics, suite, deliverable, inputs });
  const lines = out.lines;
  lines.push(`Vetted against ICS ${icsHash(ics)} in the sealed judge engine, as Lane 1 arbitrators run it.`);
  lines.push(`  pinned inputs: ${source}: clock ${iso(inputs.clockMs)}, seed ${seedShort(inputs.seed)}`);
  for (const check of vet.checks) lines.push(`  ${check.status ? "pass" : "FAIL"} ${check.name}: ${check.detail ?? ""}`);
  if (vet.alternateFailedTests !== null) {
    lines.push(`  failed tests: ${vet.failedTests.length ? vet.failedTests.join(", ") : "none"}`);
    lines.push(
      `  suite under the alternate clock ${iso(vet.alternate.clockMs)} and seed ${seedShort(vet.alternate.seed)}: ` +
        `${vet.alternateFailedTests.length ? `failed ${vet.alternateFailedTests.join(", ")}` : "no test failed"}`,
    );
  }
  for (const id of vet.needsLane2) lines.push(`  not vetted: ${id} needs semantic judgement (Lane 2)`);
  if (vet.suiteInputDependent) {
    lines.push("The suite's verdict depends on its clock or seed: Lane 1 would attribute this suite to the client (SUITE_INPUT_DEPENDENT).");
  }
  if (vet.deliverableInputDependent) {
    lines.push("Warning: the deliverable's results depend on the clock or seed; arbitrators pin them to the gig's funding block (vet with --gig to use those).");
  }
  const verdictLine: Record<VetVerdict, string> = {
    pass: "Verdict: every objective check passes; Lane 1 would find no fault in the deliverable.",
    deliverable_fails: `Verdict: the deliverable fails; Lane 1 would decide against the provider${vet.failedTests.length ? ` (${vet.failedTests.length} failed test${vet.failedTests.length === 1 ? "" : "s"})` : ""}.`,
    suite_at_fault: `Verdict: the suite is at fault (${vet.attribution.join(", ")}); Lane 1 would attribute this suite to the client.`,
    undecidable: `Verdict: Lane 1 could not decide (${vet.reasonCodes.join(", ")}).`,
    host_fault: `Verdict: this machine could not finish the replay (${vet.reasonCodes.join(", ")}); nothing about the suite or the deliverable was decided.`,
  };
  lines.push(verdictLine[vet.verdict]);
  if (vet.verdict !== "pass") out.exitCode = vet.verdict === "host_fault" ? 1 : VET_FAILED_EXIT_CODE;
  Object.assign(out.result, {
    verdict: vet.verdict,
    icsHash: icsHash(ics),
    inputs: { clockMs: vet.inputs.clockMs, seed: vet.inputs.seed, source },
    alternate: { clockMs: vet.alternate.clockMs, seed: vet.alternate.seed },
    failedTests: vet.failedTests,
    alternateFailedTests: vet.alternateFailedTests,
    suiteInputDependent: vet.suiteInputDependent,
    deliverableInputDependent: vet.deliverableInputDependent,
    attribution: vet.attribution,
    reasonCodes: vet.reasonCodes,
    needsLane2: vet.needsLane2,
    checks: vet.checks,
    records: vet.records.map((record) => record.stack_hash),
  });
}

/** `ioi gig vet`. */
export const VET_COMMAND: Command = {
  summary: "replay the ICS's rubric and test suite against a deliverable exactly as Lane 1 arbitrators will (offline)",
  usage: "ioi gig vet --ics-file PATH [--suite-dir DIR] --deliverable-dir DIR [--gig ID [--funded-at SECONDS --chain-id N]]",
  notes: [
    "  --ics-file PATH        the Intent Contract Schema (JSON or YAML)",
    "  --suite-dir DIR        the test suite the ICS binds (required when it binds one; must hash to the binding)",
    "  --deliverable-dir DIR  the deliverable's files",
    "  --gig ID               pin the clock and seed to this gig's funding block, read from the node (--rpc),",
    "                         as arbitrators will; without --gig the default pinned inputs are used",
    "  --funded-at SECONDS    with --gig and --chain-id: the funding block's timestamp, to vet without a node",
    "  --chain-id N           with --funded-at: the gig's chain id",
    "The suite runs under the pinned clock and seed and again under a second clock and seed: if its verdict",
    "changes, Lane 1 attributes the suite to the client. Exit status 0 when every objective check passes,",
    "3 when the deliverable fails or the suite is at fault (input-dependent included), 1 on error, 2 on usage.",
  ],
  options: {
    "ics-file": { type: "string" },
    "suite-dir": { type: "string" },
    "deliverable-dir": { type: "string" },
    gig: { type: "string" },
    "funded-at": { type: "string" },
    "chain-id": { type: "string" },
  },
  run: runVet,
};
