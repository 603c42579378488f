/**
 * `ioi-settlement/arbitration` — an arbitrator's side: read a case and its context from the chain, run the
 * deterministic lanes on its ChallengePackage (Lane 0 bindings, Lane 1 replays in the sealed engine), sign
 * the Resolution, submit a panel's verdict, claim fees; vet a deliverable and re-run a UPIP record.
 *
 * ```ts
 * import { createArbitration, arbitrate, parsePackage } from "ioi-settlement/arbitration";
 * const arb = createArbitration({ deployment, publicClient, wallet });
 * const ctx = await arb.loadCaseContext(caseId, pkg);
 * const run = await arbitrate({ pkg, ctx, actor: wallet.account.address });
 * ```
 */
import type { Hex, PublicClient } from "viem";

import { claimFees, loadCaseContext, submitVerdict, type Deployment as CaseDeployment } from "../../arbitration/runner/chain";
import type { ChallengePackage } from "../../arbitration/documents/package";
import type { Wallet } from "../chain/escrow";
import { bindParameters, type Bound } from "./bind";
import { contractAddress, type Deployment } from "./deployment";
import { caseDeploymentOf } from "./disputes";

export type ArbitrationRoleParameters = { deployment: Deployment; publicClient: PublicClient; wallet: Wallet };

/** The arbitrator's chain actions, bound to the deployment's contracts and the caller's clients. */
export type Arbitration = {
  deployment: CaseDeployment;
  loadCaseContext(caseId: Hex, pkg: ChallengePackage): ReturnType<typeof loadCaseContext>;
  submitVerdict: Bound<typeof submitVerdict, "wallet" | "publicClient" | "deployment">;
  claimFees: Bound<typeof claimFees, "wallet" | "publicClient" | "disputeManager">;
};

export function createArbitration(parameters: ArbitrationRoleParameters): Arbitration {
  const { publicClient, wallet } = parameters;
  const deployment = caseDeploymentOf(parameters.deployment);
  const disputeManager = contractAddress(parameters.deployment, "DisputeManager");
  return {
    deployment,
    loadCaseContext: (caseId: Hex, pkg: ChallengePackage) => loadCaseContext(publicClient, deployment, caseId, pkg),
    submitVerdict: bindParameters({ wallet, publicClient, deployment })(submitVerdict),
    claimFees: bindParameters({ wallet, publicClient, disputeManager })(claimFees),
  };
}

export * from "../../arbitration/index";
export { arbitrate, judgeRuntimeHash, JUDGE_RUNTIME, AuditLog, type ArbitrationRun, type ArbitrationParameters } from "../../arbitration/runner/runner";
export { runLane0 } from "../../arbitration/lanes/lane0";
export { vetGig, type VetParameters, type VetReturnType } from "../../arbitration/lanes/vet";
export { verifyUpipRecord, upipRecordsOf } from "../../arbitration/lanes/verify-upip";
export { providerRegistryAbi } from "../abi/ProviderRegistry";
export type { Deployment } from "./deployment";
