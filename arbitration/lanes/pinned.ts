/**
 * The pinned inputs of a gig's Lane 1 replays — the clock and PRNG seed the suite and the deliverable see
 * inside the sealed engine — derived from the case as recorded on-chain, so every arbitrator (and the
 * provider vetting the suite with `ioi gig vet`) gets the same values:
 *
 *   clock_ms = 1000 × timestamp of the block the gig was funded in (its `GigFunded` event)
 *   seed     = keccak256(canon({domain: "ioi.lane1.inputs/1", chain_id, gig_escrow, gig_id, funded_at}))
 *
 * The **alternate** inputs (one year and one day later, and a seed derived from the first) are what the
 * suite alone is replayed under a second time: a suite whose verdict changes with them depends on its clock
 * or randomness, which is its author's (the client's) fault.
 */
import { getAddress, keccak256, type Address, type Hex, type PublicClient } from "viem";

import { artifactId } from "../../channel-client/core/canonical";
import { gigEscrowAbi } from "../../channel-client/abi/GigEscrow";
import { readPaged, type RetryOptions } from "../../channel-client/chain/logs";
import { BaseError } from "../../channel-client/core/errors";
import type { PinnedInputs } from "./replay";

/** How much later the alternate clock is: 366 days. */
export const ALTERNATE_CLOCK_OFFSET_MS = 366 * 86_400_000;

/** The pinned inputs used when nothing is known about a case (vetting without a gig). */
export const DEFAULT_INPUTS: PinnedInputs = { clockMs: 1_767_225_600_000, seed: keccak256(new TextEncoder().encode("ioi.lane1.inputs/default")) };

/** A gig's funding as the chain recorded it. */
export type GigFunding = { fundedAt: bigint; fundedInBlock: bigint };

/** The gig's funding block could not be found (no `GigFunded` event for it). */
export class GigFundingNotFoundError extends BaseError {
  override name = "GigFundingNotFoundError" as const;
}

/** The inputs of a gig's replays, from its chain, escrow, id and funding timestamp (seconds). */
export function gigInputs(parameters: { chainId: bigint; gigEscrow: Address; gigId: bigint; fundedAt: bigint }): PinnedInputs {
  const seed = artifactId({
    domain: "ioi.lane1.inputs/1",
    chain_id: parameters.chainId.toString(),
    gig_escrow: getAddress(parameters.gigEscrow).toLowerCase(),
    gig_id: parameters.gigId.toString(),
    funded_at: parameters.fundedAt.toString(),
  });
  return { clockMs: Number(parameters.fundedAt) * 1000, seed };
}

/** The alternate inputs the suite is replayed under to detect a clock- or seed-dependent verdict. */
export function alternateInputs(inputs: PinnedInputs): PinnedInputs {
  return { clockMs: inputs.clockMs + ALTERNATE_CLOCK_OFFSET_MS, seed: keccak256(`${inputs.seed}${"a1".repeat(32)}` as Hex) };
}

/**
 * Reads when (block and timestamp) a gig was funded, from its `GigFunded` event: searched from `fromBlock`
 * (the GigEscrow's deployment block) to the head in bounded pages (`channel-client/chain/logs.ts`), so a
 * hosted RPC's range limit is respected; the search stops at the page that holds the event.
 */
export async function readGigFunding(
  publicClient: PublicClient,
  gigEscrow: Address,
  gigId: bigint,
  reading: { fromBlock: bigint; maxBlockRange?: bigint; retry?: RetryOptions },
): Promise<GigFunding> {
  const toBlock = await publicClient.getBlockNumber();
  const [funded] = await readPaged<{ blockNumber: bigint }>({ ...reading, toBlock, done: (found) => found.length > 0 }, (from, to) =>
    publicClient.getContractEvents({ address: gigEscrow, abi: gigEscrowAbi, eventName: "GigFunded", args: { gigId }, fromBlock: from, toBlock: to, strict: true }),
  );
  if (!funded) throw new GigFundingNotFoundError(`Gig ${gigId} has no GigFunded event on ${gigEscrow} from block ${reading.fromBlock} on.`);
  const block = await publicClient.getBlock({ blockNumber: funded.blockNumber });
  return { fundedAt: block.timestamp, fundedInBlock: funded.blockNumber };
}
