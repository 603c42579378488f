/**
 * Key-signed tickets on the provider's side (decision 0025): which of the payer's grants a stored ticket
 * needs on-chain, and until when the chain still takes it. A ticket signed by a session key is worthless
 * without its grant (`closeUnilateralWithKey` / `challengeWithKey` carry it), so the provider node stores
 * every grant it binds (`ChannelStore.putSessionKeyGrant`) before it accepts a ticket under it, and the
 * watchtower and `ioi close --unilateral` find it here by the key that signed the ticket.
 */
import { isAddressEqual, type PublicClient } from "viem";

import { gasEscrowAbi } from "../abi/GasEscrow";
import { gasEscrowDomain, recoverDigestSigner } from "../core/eip712";
import { BaseError } from "../core/errors";
import type { SignedSessionKeyGrant } from "../core/session-key";
import { paymentTicketDigest, type SignedPaymentTicket } from "../core/ticket";
import type { ChannelRecord, ChannelStore } from "../store/store";

/** A stored ticket was signed by a key whose grant the store does not hold: it cannot be submitted on-chain. */
export class KeyTicketWithoutGrantError extends BaseError {
  override name = "KeyTicketWithoutGrantError" as const;
}

/**
 * The payer's grant `ticket` needs on-chain, or undefined when the payer signed it itself. Among several
 * grants of the signing key (a payer may re-grant a key) the one that covers the ticket's amount with the
 * newest epoch, then the latest expiry, is taken: the one the chain is likeliest to still honour.
 */
export async function grantForTicket(parameters: { channel: ChannelRecord; store: ChannelStore; ticket: SignedPaymentTicket }): Promise<SignedSessionKeyGrant | undefined> {
  const { channel, store, ticket } = parameters;
  const domain = gasEscrowDomain({ chainId: channel.chainId, verifyingContract: channel.escrow });
  const signer = await recoverDigestSigner(paymentTicketDigest(domain, ticket.ticket), ticket.signature);
  if (isAddressEqual(signer, channel.ref.terms.payer)) return undefined;
  const covering = store
    .sessionKeyGrants(channel.sessionId, signer)
    .filter((g) => g.grant.spendCap >= ticket.ticket.cumulativeAmount)
    .sort((a, b) => (a.grant.epoch !== b.grant.epoch ? (a.grant.epoch > b.grant.epoch ? -1 : 1) : a.grant.expiry > b.grant.expiry ? -1 : a.grant.expiry < b.grant.expiry ? 1 : 0));
  const grant = covering[0];
  if (!grant) {
    throw new KeyTicketWithoutGrantError(
      `Ticket seq ${ticket.ticket.seq} of session ${channel.sessionId} was signed by ${signer}, which is neither the payer nor a key the store holds a grant for (covering ${ticket.ticket.cumulativeAmount}); it cannot be submitted on-chain.`,
    );
  }
  return grant;
}

/**
 * The first block time at which the chain refuses `grant`'s tickets on this channel: the earlier of the key's
 * revocation on the session and the end of its epoch, plus the channel's challenge duration (the grace,
 * decision 0025); `undefined` while neither happened. The grant's expiry is not an end: what a key signed
 * before it expired stays payable (decision 0025, amendment for issue 28). Mirrors `GasEscrow._requireKeyTicket`.
 */
export async function keyGraceEnd(parameters: { publicClient: PublicClient; channel: ChannelRecord; grant: SignedSessionKeyGrant }): Promise<bigint | undefined> {
  const { publicClient, channel, grant } = parameters;
  const address = channel.escrow;
  const { payer, challengeDuration } = channel.ref.terms;
  const [revokedAt, currentEpoch] = await Promise.all([
    publicClient.readContract({ address, abi: gasEscrowAbi, functionName: "sessionKeyRevokedAt", args: [channel.sessionId, grant.grant.key] }),
    publicClient.readContract({ address, abi: gasEscrowAbi, functionName: "keyEpochOf", args: [payer] }),
  ]);
  let end: bigint | undefined = revokedAt !== 0 ? BigInt(revokedAt) : undefined;
  if (grant.grant.epoch < currentEpoch) {
    const endedAt = BigInt(await publicClient.readContract({ address, abi: gasEscrowAbi, functionName: "epochRevokedAt", args: [payer, grant.grant.epoch] }));
    if (end === undefined || endedAt < end) end = endedAt;
  }
  return end === undefined ? undefined : end + challengeDuration;
}
