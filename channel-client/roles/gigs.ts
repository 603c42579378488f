/**
 * `ioi-settlement/gigs` — outcome-based work through the GigEscrow: the client funds, the provider accepts
 * and delivers, the client accepts the delivery (or lets the window pass), and the escrow releases or refunds.
 *
 * ```ts
 * import { createGigs } from "ioi-settlement/gigs";
 * const gigs = createGigs({ deployment, publicClient, wallet });
 * const { gigId } = await gigs.fund({ provider, amount, asset, icsHash, … });
 * ```
 */
import type { Address, PublicClient } from "viem";

import type { Wallet } from "../chain/escrow";
import {
  acceptGig,
  acceptGigDelivery,
  cancelGig,
  claimGigPayout,
  confirmGigProvider,
  deliverGig,
  dismissGigProvider,
  fundGig,
  readGig,
  refundGig,
  releaseGig,
} from "../chain/gig";
import { bindParameters, type Bound } from "./bind";
import { contractAddress, type Deployment } from "./deployment";

export type GigsParameters = { deployment: Deployment; publicClient: PublicClient; wallet: Wallet };

type W = "wallet" | "publicClient" | "gigEscrow";

/** Every GigEscrow action, bound to the deployment's GigEscrow and the caller's clients. */
export type Gigs = {
  gigEscrow: Address;
  fund: Bound<typeof fundGig, W>;
  cancel: Bound<typeof cancelGig, W>;
  accept: Bound<typeof acceptGig, W>;
  confirmProvider: Bound<typeof confirmGigProvider, W>;
  dismissProvider: Bound<typeof dismissGigProvider, W>;
  deliver: Bound<typeof deliverGig, W>;
  acceptDelivery: Bound<typeof acceptGigDelivery, W>;
  release: Bound<typeof releaseGig, W>;
  refund: Bound<typeof refundGig, W>;
  claimPayout: Bound<typeof claimGigPayout, W>;
  read: Bound<typeof readGig, "publicClient" | "gigEscrow">;
};

export function createGigs(parameters: GigsParameters): Gigs {
  const { deployment, publicClient, wallet } = parameters;
  const gigEscrow = contractAddress(deployment, "GigEscrow");
  const bind = bindParameters({ wallet, publicClient, gigEscrow });
  return {
    gigEscrow,
    fund: bind(fundGig),
    cancel: bind(cancelGig),
    accept: bind(acceptGig),
    confirmProvider: bind(confirmGigProvider),
    dismissProvider: bind(dismissGigProvider),
    deliver: bind(deliverGig),
    acceptDelivery: bind(acceptGigDelivery),
    release: bind(releaseGig),
    refund: bind(refundGig),
    claimPayout: bind(claimGigPayout),
    read: bindParameters({ publicClient, gigEscrow })(readGig),
  };
}

export * from "../chain/gig";
export { icsFromJson, icsToJson, icsHash, penaltyFor, type Ics } from "../../arbitration/documents/ics";
export type { Deployment } from "./deployment";
