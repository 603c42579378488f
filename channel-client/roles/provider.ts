/**
 * `ioi-settlement/provider` — the provider node: serves paid invocations over the sealed socket to payers
 * that opened a channel on its signed terms, answers each with a signed receipt, and (with `watch`) runs a
 * watchtower that defends its newest tickets and tells the node when a channel closes.
 *
 * ```ts
 * import { startProvider, SqliteStore } from "ioi-settlement/provider";
 * const provider = await startProvider({ deployment, publicClient, wallet, store: SqliteStore.open("provider.db"),
 *   pricing: { version: "1", unit: "invocation", pricePerInvocation: 1000n },
 *   handler: async (request) => ({ result: { … }, units: 1n }), modelSnapshotId: "my-worker@1", port: 7000 });
 * … await provider.stop();
 * ```
 */
import type { LocalAccount, PublicClient } from "viem";

import { gasEscrowDomain } from "../core/eip712";
import { BaseError } from "../core/errors";
import type { Wallet } from "../chain/escrow";
import { ProviderNode, type ProviderNodeParameters } from "../node/provider-node";
import type { ChannelStore } from "../store/store";
import { Watchtower } from "../node/watchtower";
import { contractAddress, deploymentBlockOf, type Deployment } from "./deployment";

export type StartProviderParameters = Omit<ProviderNodeParameters, "account" | "publicClient" | "domain" | "store" | "follow"> & {
  deployment: Deployment;
  publicClient: PublicClient;
  /** The provider's wallet (a local account): it signs receipts and pays the watchtower's gas. */
  wallet: Wallet;
  store: ChannelStore;
  /** Run the watchtower beside the node (default true). */
  watch?: boolean;
  /** First block to watch; default the deployment block. */
  fromBlock?: bigint;
  onError?: (error: unknown) => void;
};

export type RunningProvider = { node: ProviderNode; tower: Watchtower | undefined; port: number; stop(): Promise<void> };

/** Starts the provider node on the deployment's GasEscrow (and its watchtower). */
export async function startProvider(parameters: StartProviderParameters): Promise<RunningProvider> {
  const { deployment, publicClient, wallet, store, watch = true, fromBlock, onError, ...node } = parameters;
  const account = wallet.account;
  if (account.type !== "local") throw new BaseError("The provider's wallet must hold a local account (privateKeyToAccount): receipts are signed in-process.");
  const escrow = contractAddress(deployment, "GasEscrow");
  const domain = gasEscrowDomain({ chainId: deployment.chainId, verifyingContract: escrow });
  const started = await ProviderNode.start({ ...node, account: account as LocalAccount, publicClient, domain, store });
  let tower: Watchtower | undefined;
  if (watch) {
    tower = new Watchtower({
      publicClient,
      wallet,
      escrow,
      store,
      fromBlock: fromBlock ?? deploymentBlockOf(deployment),
      name: `watchtower:${account.address.toLowerCase()}`,
      onEvents: (events) => started.applyEscrowEvents(events),
      ...(onError ? { onError } : {}),
    });
    tower.start();
  }
  return {
    node: started,
    tower,
    port: started.port,
    async stop() {
      await tower?.stop();
      await started.stop();
    },
  };
}

export { ProviderNode, REPLAYED_RESULT_CODE, type McpHandler, type ProviderNodeParameters } from "../node/provider-node";
export { SqliteStore } from "../store/sqlite-store";
export type { PricingTerms } from "../core/terms";
export type { Deployment } from "./deployment";

// Session keys (issue 14, decision 0025): `ProviderSession.bindSessionKey` checks a payer's grant and then every
// key-signed ticket's key, cap, expiry, capability and revocation; these verify a grant on their own and read
// what the chain says of a key; `closeUnilateral`/`challengeClose` take the grant of a key-signed ticket.
export {
  verifySessionKeyGrant,
  verifySessionKeyGrantSignature,
  assertSessionKeyLive,
  assertWithinGrant,
  signedSessionKeyGrantFromJson,
  type SessionKeyChainState,
  type SignedSessionKeyGrant,
} from "../core/session-key";
export { ProviderSession } from "../node/provider-session";
export { readSessionKeyChainState, closeUnilateral, challengeClose } from "../chain/escrow";

// Milestone streaming (issue 32, decision 0037): the provider's side of a stream — each tranche's signed Progress
// Proof folded into its receipt, samples answered only for the agreed draw — and the honest claims of a repository.
export { InProcessStreamProvider, StreamTicketRefusedError, type TrancheWork } from "../node/stream-provider";
export { claimsOf } from "../../arbitration/lanes/stream-sample";
export { signProgressProof, progressProofHash, type ProgressProof, type SignedProgressProof } from "../core/progress-proof";
// Over the sealed socket (second pass): `ProviderNode`/`startProvider` with `stream: { work }` serve v4 tranches.
export { suiteStreamWork, StreamRefusedError, type StreamWork, type TrancheOutcome } from "../node/stream-service";
