/**
 * The DisputeManager's `settledDisputeWindow`: how long after a cooperative settlement a payer may still open
 * a case on it (decision 0015, amendment). The payer compares a terms document's own window with it before
 * funding a channel (decision 0026, amendment).
 */
import type { Address, PublicClient } from "viem";

import { disputeManagerAbi } from "../abi/DisputeManager";

/** Seconds after a cooperative settlement during which the DisputeManager at `disputeManager` accepts a case. */
export async function readSettledDisputeWindow(publicClient: PublicClient, disputeManager: Address): Promise<bigint> {
  const params = await publicClient.readContract({ address: disputeManager, abi: disputeManagerAbi, functionName: "params" });
  return BigInt(params.settledDisputeWindow);
}
