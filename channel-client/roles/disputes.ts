/**
 * `ioi-settlement/disputes` — a party's side of a dispute: build the ChallengePackage (a delivered gig, or
 * one receipt of a closing session), open the case with the lane's bond, draw its panel, appeal, finalise.
 *
 * ```ts
 * import { createDisputes, buildGigPackage, packageHash } from "ioi-settlement/disputes";
 * const disputes = createDisputes({ deployment, publicClient, wallet });
 * const pkg = buildGigPackage({ … });
 * const { caseId } = await disputes.openGigCase({ gigId, lane: 1, packageHash: packageHash(pkg) });
 * ```
 */
import type { Hex, PublicClient } from "viem";

import {
  appealCase,
  currentPanel,
  drawPanel,
  finalizeCase,
  openGigCase,
  openSessionCase,
  readCase,
  recordedStateOf,
  type Deployment as CaseDeployment,
} from "../../arbitration/runner/chain";
import type { Wallet } from "../chain/escrow";
import { bindParameters, type Bound } from "./bind";
import { contractAddress, type Deployment } from "./deployment";

export type DisputesParameters = { deployment: Deployment; publicClient: PublicClient; wallet: Wallet };

/** The four addresses the case functions take, from a deployment object. */
export function caseDeploymentOf(deployment: Deployment): CaseDeployment {
  return {
    disputeManager: contractAddress(deployment, "DisputeManager"),
    gasEscrow: contractAddress(deployment, "GasEscrow"),
    gigEscrow: contractAddress(deployment, "GigEscrow"),
    registry: contractAddress(deployment, "ProviderRegistry"),
  };
}

type W = "wallet" | "publicClient";

/** A party's case actions, bound to the deployment's contracts and the caller's clients. */
export type Disputes = {
  deployment: CaseDeployment;
  openGigCase: Bound<typeof openGigCase, W | "disputeManager" | "gigEscrow">;
  openSessionCase: Bound<typeof openSessionCase, W | "disputeManager">;
  drawPanel: Bound<typeof drawPanel, W | "disputeManager">;
  appeal: Bound<typeof appealCase, W | "disputeManager">;
  finalize: Bound<typeof finalizeCase, W | "deployment">;
  readCase(caseId: Hex): ReturnType<typeof readCase>;
  currentPanel(caseId: Hex): ReturnType<typeof currentPanel>;
  recordedState(caseId: Hex): ReturnType<typeof recordedStateOf>;
};

/** Every case action a party takes, bound to the deployment's contracts and the caller's clients. */
export function createDisputes(parameters: DisputesParameters): Disputes {
  const { publicClient, wallet } = parameters;
  const deployment = caseDeploymentOf(parameters.deployment);
  const { disputeManager, gigEscrow } = deployment;
  return {
    deployment,
    openGigCase: bindParameters({ wallet, publicClient, disputeManager, gigEscrow })(openGigCase),
    openSessionCase: bindParameters({ wallet, publicClient, disputeManager })(openSessionCase),
    drawPanel: bindParameters({ wallet, publicClient, disputeManager })(drawPanel),
    appeal: bindParameters({ wallet, publicClient, disputeManager })(appealCase),
    finalize: bindParameters({ wallet, publicClient, deployment })(finalizeCase),
    readCase: (caseId: Hex) => readCase(publicClient, disputeManager, caseId),
    currentPanel: (caseId: Hex) => currentPanel(publicClient, disputeManager, caseId),
    recordedState: (caseId: Hex) => recordedStateOf(publicClient, deployment, caseId),
  };
}

export { buildGigPackage, buildSessionPackage } from "../../arbitration/runner/build";
export * from "../../arbitration/documents/package";
export { DisputeTransactionError, type OpenedCase, type DrawResult, type AppealResult, type FinalizedCase } from "../../arbitration/runner/chain";
export { disputeManagerAbi } from "../abi/DisputeManager";
export type { Deployment } from "./deployment";
