/**
 * `ioi-settlement/watchtower` — defends the newest ticket of every channel in a store: answers a stale
 * unilateral close inside its challenge window, and (optionally) finalises closings whose window passed.
 *
 * ```ts
 * import { createWatchtower, SqliteStore } from "ioi-settlement/watchtower";
 * const tower = createWatchtower({ deployment, publicClient, wallet, store: SqliteStore.open("provider.db") });
 * tower.start(); … await tower.stop();
 * ```
 */
import type { PublicClient } from "viem";

import type { Wallet } from "../chain/escrow";
import type { ChannelStore } from "../store/store";
import { Watchtower, type WatchtowerParameters } from "../node/watchtower";
import { contractAddress, deploymentBlockOf, type Deployment } from "./deployment";

export type CreateWatchtowerParameters = Omit<WatchtowerParameters, "escrow" | "fromBlock" | "publicClient" | "wallet" | "store"> & {
  deployment: Deployment;
  publicClient: PublicClient;
  /** Pays the gas of challenges and finalisations; any funded account will do. */
  wallet: Wallet;
  store: ChannelStore;
  /** Default: the deployment block (never block 0 on a public chain). */
  fromBlock?: bigint;
};

/** A watchtower on the deployment's GasEscrow, reading events from its deployment block. */
export function createWatchtower(parameters: CreateWatchtowerParameters): Watchtower {
  const { deployment, fromBlock, ...rest } = parameters;
  return new Watchtower({ ...rest, escrow: contractAddress(deployment, "GasEscrow"), fromBlock: fromBlock ?? deploymentBlockOf(deployment) });
}

export { Watchtower, type WatchtowerAnswer, type WatchtowerParameters } from "../node/watchtower";
export { ChainFollower, type EscrowEvent } from "../chain/follower";
export { SqliteStore } from "../store/sqlite-store";
export type { Deployment } from "./deployment";
