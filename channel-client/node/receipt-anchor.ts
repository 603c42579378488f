/**
 * The payer's side of a closed session's receipt roots (decision 0003, amendments "anchoring" and issue 27
 * finding 9): how many of the payer's receipts a recorded root covers, and when the provider's newest signed
 * receipt commit must be anchored because the recorded root lags it.
 *
 * A ticket carries the root over the receipts the payer had accepted when it signed it — leaves `1..n-1` for
 * ticket `n` only with nothing in flight; a pipelined ticket commits fewer (ticket 300 at 64 in flight may
 * commit 284). Whatever ticket ends up recorded, every receipt the provider signed a commit over stays
 * provable once that commit is anchored; a case then proves each receipt against the recorded root or the
 * anchored commit root, whichever covers it (`ioi dispute build-session`).
 *
 * Decisions are pure (`leafCountOfRoot`, `commitToAnchor`); `anchorIfLagging` is the one place that acts.
 */
import { type Address, type Hex, type PublicClient } from "viem";

import { ReceiptAccumulator } from "../core/accumulator";
import type { SignedReceiptCommit } from "../core/receipt-commit";
import { anchorReceiptCommit, gasEscrowAbi, type AnchoredCommit, type Wallet } from "../chain/escrow";
import type { ChannelRecord, ChannelStore } from "../store/store";

/**
 * How many of the first `leaves` `root` is the root of (0 for the root of no receipts), or undefined when it is
 * the root of no prefix of them. The newest prefix is tried first: a recorded root usually covers almost all.
 */
export function leafCountOfRoot(leaves: ReceiptAccumulator | readonly Hex[], root: Hex): number | undefined {
  const tree = leaves instanceof ReceiptAccumulator ? leaves : ReceiptAccumulator.fromLeaves(leaves);
  for (let size = tree.size; size >= 0; size--) if (tree.prefixRoot(size) === root) return size;
  return undefined;
}

/**
 * The provider-signed commit the payer should anchor given the recorded root, or undefined when the recorded
 * root already covers every receipt the newest commit covers (or the payer holds no provider commit). A
 * recorded root that is no prefix of the payer's receipts (a close on a ticket the payer's store does not
 * explain) counts as lagging: the commit is then the only root the payer's receipts are provable against.
 */
export function commitToAnchor(parameters: { leaves: ReceiptAccumulator | readonly Hex[]; recordedRoot: Hex; commit: SignedReceiptCommit | undefined }): SignedReceiptCommit | undefined {
  const { commit } = parameters;
  if (!commit || commit.commit.leafCount === 0n) return undefined;
  const recorded = leafCountOfRoot(parameters.leaves, parameters.recordedRoot);
  if (recorded !== undefined && BigInt(recorded) >= commit.commit.leafCount) return undefined;
  return commit;
}

export type AnchorOutcome =
  /** The recorded root covers what the newest provider commit covers (or there is none): nothing to do. */
  | { status: "not_lagging" }
  /** The commit the recorded root lags was anchored before (by anyone). */
  | { status: "already_anchored"; commit: SignedReceiptCommit }
  /** Anchored now. */
  | { status: "anchored"; commit: SignedReceiptCommit; anchored: AnchoredCommit };

/**
 * Anchors the provider's newest signed receipt commit in `store` when `recordedRoot` (the channel's recorded
 * close or settlement root) lags it and it is not anchored yet. `wallet` must be the payer's or the funder's
 * (the escrow refuses anyone else), and the channel must still be anchorable (closing inside its window, or
 * settled); the escrow's refusal is thrown otherwise.
 */
export async function anchorIfLagging(parameters: {
  wallet: Wallet;
  publicClient: PublicClient;
  escrow: Address;
  store: ChannelStore;
  channel: ChannelRecord;
  recordedRoot: Hex;
}): Promise<AnchorOutcome> {
  const { wallet, publicClient, escrow, store, channel, recordedRoot } = parameters;
  const commit = commitToAnchor({ leaves: store.leaves(channel.sessionId), recordedRoot, commit: store.latestCommit(channel.sessionId, "provider") });
  if (!commit) return { status: "not_lagging" };
  const already = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "anchoredCommitOf", args: [channel.sessionId, commit.commit.root] });
  if (already !== 0n) return { status: "already_anchored", commit };
  const anchored = await anchorReceiptCommit({ wallet, publicClient, escrow, ref: channel.ref, commit });
  return { status: "anchored", commit, anchored };
}
