/**
 * Watchtower: defends a provider against a stale unilateral close, and a payer's receipts against a close whose
 * root lags them. It follows the escrow's events; when a
 * channel it holds tickets for is closed (or challenged) with a ticket older than the newest one in its
 * store, it challenges with the newest one while the window is open — and it re-checks every closing
 * channel on every poll until it settles (not only when an event arrives), so a ticket the provider
 * accepted after the last challenge is submitted too. It also keeps the store's view of each channel
 * (deposit, closing state, settled) current and, optionally, finalises closes whose window has passed and
 * submits co-signed cooperative closes nobody submitted, so that nobody's funds wait on a party that went
 * offline.
 *
 * A ticket signed by a session key is submitted with the payer's grant the store kept for that key
 * (`closeUnilateralWithKey` / `challengeWithKey`, decision 0025), and only within the key's grace. When the
 * payer revokes a key (or its epoch) and the provider's newest ticket on a channel is that key's, the tower
 * puts it on-chain at once — closes the open channel with it, or challenges a close — so a revocation never
 * takes away work the provider accepted before it knew.
 *
 * On a payer's channel it never challenges (a newer ticket only pays the provider more); it defends the payer's
 * receipts instead: whenever the recorded root lags the provider's newest signed receipt commit in the store
 * (a provider's pipelined ticket commits fewer receipts than the payer accepted), it anchors that commit while
 * the window is open, so every receipt stays provable in a session case (decision 0003; issue 27 finding 9).
 *
 * It runs inside the provider node and on its own (`ioi watchtower`) against the same store. With `topUp` it
 * keeps the store's open payer channels funded by a stated policy (below / to / max per day, decision 0024), and
 * with `alerts` it raises and clears alerts (`./alerts`) on every poll: a window about to close, a bond or stake
 * below the registry's minimum, an unclaimed payout or fee, a head that stopped advancing.
 */
import { erc20Abi, isAddressEqual, zeroAddress, type Address, type Hex, type PublicClient } from "viem";

import { ChainFollower, type EscrowEvent } from "../chain/follower";
import { DEVNET_READING, type RetryOptions } from "../chain/logs";
import { isContractAccount } from "../chain/wallet-signature";
import { approveEscrow, challengeClose, closeCooperative, closeUnilateral, depositToChannel, finalizeClose, gasEscrowAbi, type ClosingState, type Wallet } from "../chain/escrow";
import type { AlertState } from "./alert-state";
import { advanceHead, DAY_SECONDS, evaluateAlerts, planTopUps, readAlertChainState, DEFAULT_ALERT_POLICY, type AlertEmitter, type AlertPolicy, type TopUpPolicy, type TopUpRecord } from "./alerts";
import { grantForTicket, keyGraceEnd, KeyTicketWithoutGrantError } from "./key-tickets";
import type { SignedSessionKeyGrant } from "../core/session-key";
import type { SignedPaymentTicket } from "../core/ticket";
import { errorText, type Logger } from "./log";
import type { NodeMetrics } from "./metrics";
import type { ChannelRecord, ChannelRole, ChannelStore } from "../store/store";
import { anchorIfLagging, commitToAnchor } from "./receipt-anchor";

export type WatchtowerAnswer = {
  sessionId: Hex;
  /** The seq the close (or the last challenge) recorded. */
  staleSeq: bigint;
  /** The seq the watchtower answered with. */
  answeredSeq: bigint;
  txHash: Hex;
  finalizesAt: bigint;
  /** Timestamp of the block that included the answer. */
  answeredAt: bigint;
  inWindow: boolean;
};

export type WatchtowerParameters = {
  /** Runs before each round (a PostgreSQL store of a fleet reads what other processes wrote since). */
  beforeRound?: () => Promise<void>;
  publicClient: PublicClient;
  /** Pays the gas of challenges and finalisations; any funded account will do. */
  wallet: Wallet;
  escrow: Address;
  store: ChannelStore;
  /** Block to start from when the store holds no cursor yet. */
  fromBlock: bigint;
  /** Cursor name; distinct per watchtower sharing a store. */
  name?: string;
  /**
   * Channels (by this store's role) the tower defends. Default: both. A provider's channel is defended by
   * challenging a stale close with the newest ticket; a payer's by anchoring the provider's newest signed
   * receipt commit when the recorded root lags it (the tower's wallet must then be the payer's or the funder's).
   */
  defend?: ChannelRole[];
  /**
   * Also finalise closing channels of this store once their window has passed, submit the co-signed
   * cooperative close of a channel still open on-chain, and claim what the escrow credits the wallet
   * (issue 28 item 7: `ioi provider` and `ioi watchtower` run with it, so nothing waits for a person).
   */
  finalize?: boolean;
  /**
   * How long (milliseconds) a co-signed cooperative close waits in the store before the tower (with `finalize`)
   * submits it itself. The payer submits the close it has just been answered with; a tower that raced it would
   * often send a second transaction that reverts (both see the channel open until one is mined) and pay its gas.
   * The tower is the backstop for a payer that went away. Default: ten polls (2.5 s on a devnet, two minutes on
   * a public chain). Counted from the first poll that sees the close: a restarted tower waits again.
   */
  cooperativeGraceMs?: number;
  /** Every batch of escrow events, after the tower handled it (e.g. `ProviderNode.applyEscrowEvents`). */
  onEvents?: (events: EscrowEvent[]) => void | Promise<void>;
  /** Poll interval (default 250 ms: a devnet; `chainReading(chainId)` gives a public chain's). */
  pollMs?: number;
  /** Blocks to stay behind the head (default 0: a devnet); a reorg shallower than this is never seen. */
  confirmations?: bigint;
  /** Most blocks per `eth_getLogs` call (default 2,000). */
  batchBlocks?: bigint;
  /** Back-off on RPC errors and rate limits. */
  retry?: RetryOptions;
  onReorg?: (reorg: { at: bigint; rewoundTo: bigint }) => void;
  onAnswer?: (answer: WatchtowerAnswer) => void;
  onFinalized?: (sessionId: Hex, txHash: Hex) => void;
  /** A claimable balance of `asset` was collected for the tower's wallet (with `finalize`). */
  onClaimed?: (asset: Address, amount: bigint, txHash: Hex) => void;
  onError?: (error: unknown) => void;
  /** Structured JSON-line logs (issue 16): closes seen, challenges sent, settlements, errors. */
  logger?: Logger;
  /** Prometheus metrics (issue 16): lag in blocks on every scrape, chain RPC errors. */
  metrics?: NodeMetrics;
  /**
   * Top-up policy of the store's open payer channels (issue 29 item 4): a channel whose deposit minus the newest
   * ticket's amount is below `below` gets a deposit from the tower's wallet (when it is the channel's funder, who
   * gets every refund) that brings it back to `to`, never
   * more than `maxPerDay` per asset in any rolling 24 hours of chain time; every deposit is simulated first.
   */
  topUp?: TopUpPolicy;
  onTopUp?: (sessionId: Hex, amount: bigint, txHash: Hex) => void;
  /** Alerts on every poll for the tower's wallet and the store's channels (issue 29 item 4). */
  alerts?: { emitter: AlertEmitter; policy?: AlertPolicy; disputeManager?: Address };
  /** Where the top-ups of the last day survive a restart (the daily cap counts them); see `./alert-state`. */
  alertState?: AlertState;
};

/** A provider-signed receipt commit anchored on-chain (`ReceiptCommitAnchored`), as the tower saw it. */
export type AnchoredCommitSeen = { sessionId: Hex; by: Address; leafCount: bigint; root: Hex; txHash: Hex };

/** The default of `WatchtowerParameters.defend`: whichever side the store's channel is. */
const DEFEND_BOTH: readonly ChannelRole[] = ["payer", "provider"];

export class Watchtower {
  /** Payers known to be contract wallets (decision 0035): their tickets and summaries use the wallet entry points. */
  readonly #walletPayers = new Map<string, boolean>();

  async #payerWallet(payer: Address): Promise<boolean> {
    const known = this.#walletPayers.get(payer.toLowerCase());
    if (known !== undefined) return known;
    const wallet = await isContractAccount({ publicClient: this.parameters.publicClient, address: payer });
    this.#walletPayers.set(payer.toLowerCase(), wallet);
    return wallet;
  }

  readonly follower: ChainFollower;
  readonly answers: WatchtowerAnswer[] = [];
  /** Receipt commits anchored on the store's channels (by anyone), in chain order. */
  readonly anchoredCommits: AnchoredCommitSeen[] = [];

  constructor(readonly parameters: WatchtowerParameters) {
    const { logger, metrics } = parameters;
    this.#topUps = parameters.alertState?.topUps ?? new Map();
    const onError = (error: unknown) => {
      metrics?.rpcError("watchtower");
      logger?.warn({ event: "chain.error", error: errorText(error) }, "watchtower poll failed");
      parameters.onError?.(error);
    };
    this.#onError = onError;
    this.follower = new ChainFollower({
      publicClient: parameters.publicClient,
      escrow: parameters.escrow,
      store: parameters.store,
      name: parameters.name ?? "watchtower",
      fromBlock: parameters.fromBlock,
      pollMs: parameters.pollMs,
      ...(parameters.confirmations !== undefined ? { confirmations: parameters.confirmations } : {}),
      ...(parameters.batchBlocks !== undefined ? { batchBlocks: parameters.batchBlocks } : {}),
      ...(parameters.retry ? { retry: parameters.retry } : {}),
      ...(parameters.onReorg ? { onReorg: parameters.onReorg } : {}),
      onEvents: async (events) => {
        await this.#handle(events);
        await parameters.onEvents?.(events);
      },
      onError,
    });
    metrics?.trackWatchtowerLag(parameters.publicClient, () => this.follower.cursor);
  }

  readonly #onError: (error: unknown) => void;

  /**
   * Processes everything up to the head once, re-checks every closing channel against the newest ticket
   * in the store, then settles what is due (if enabled).
   */
  async runOnce(): Promise<void> {
    await this.parameters.beforeRound?.();
    await this.follower.catchUp();
    await this.defendClosing();
    if (this.parameters.finalize) {
      await this.submitCooperativeCloses();
      await this.finalizeDue();
    }
    if (this.parameters.topUp) await this.topUpDue();
    if (this.parameters.alerts) await this.checkAlerts();
  }

  /**
   * Top-ups made: chain time and amount, per asset (lower case); the rolling day's cap reads it. With
   * `alertState` it is that state's map, so top-ups made before a restart still count.
   */
  get topUps(): Map<string, TopUpRecord[]> {
    return this.#topUps;
  }
  readonly #topUps: Map<string, TopUpRecord[]>;

  /**
   * Deposits into every open payer channel of the store that the policy says is low (see `planTopUps`). A
   * failed deposit is logged and reported, never thrown: the next poll plans again.
   */
  async topUpDue(): Promise<void> {
    const { store, publicClient, wallet, escrow, topUp: policy } = this.parameters;
    if (!policy) return;
    const now = (await publicClient.getBlock()).timestamp;
    const byAsset = new Map<Address, { sessionId: Hex; deposit: bigint; spent: bigint }[]>();
    for (const channel of store.listChannels({ status: "open", role: "payer" })) {
      // A channel's refund goes to its funder: a top-up from any other key would be a gift to the funder.
      if (!isAddressEqual(channel.ref.terms.funder, wallet.account.address)) continue;
      const deposit = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "depositOf", args: [channel.sessionId] });
      if (deposit === 0n) continue; // not open on-chain (any more): the events will say so
      const asset = channel.ref.terms.asset.toLowerCase() as Address;
      const spent = store.latestTicket(channel.sessionId)?.ticket.cumulativeAmount ?? 0n;
      byAsset.set(asset, [...(byAsset.get(asset) ?? []), { sessionId: channel.sessionId, deposit, spent }]);
    }
    for (const [asset, channels] of byAsset) {
      // Only the rolling day counts: older records are dropped (and leave the saved state with the next save).
      const history = (this.topUps.get(asset) ?? []).filter((r) => r.at > now - DAY_SECONDS);
      const plan = planTopUps({ channels, policy, history, now });
      for (const { sessionId, amount, remaining, capped } of plan) {
        const channel = store.getChannel(sessionId)!;
        try {
          if (asset !== zeroAddress) {
            const allowance = await publicClient.readContract({ address: asset, abi: erc20Abi, functionName: "allowance", args: [wallet.account.address, escrow] });
            if (allowance < amount) await approveEscrow({ wallet, publicClient, escrow, token: asset, amount });
          }
          // Recorded (and saved) before it is sent, taken back if it fails: a crash in between under-spends the cap.
          const record = { at: now, amount };
          history.push(record);
          this.#topUps.set(asset, history);
          this.parameters.alertState?.save();
          let deposited;
          try {
            deposited = await depositToChannel({ wallet, publicClient, escrow, chainId: channel.chainId, ref: channel.ref, amount });
          } catch (error) {
            history.splice(history.indexOf(record), 1);
            this.parameters.alertState?.save();
            throw error;
          }
          await store.updateChannel(sessionId, { deposit: deposited.deposit });
          this.parameters.metrics?.topUps.inc();
          this.parameters.metrics?.topUpAmount.inc(Number(amount));
          this.parameters.logger?.info(
            { event: "watchtower.topped_up", sessionId, asset, amount: amount.toString(), remainingBefore: remaining.toString(), deposit: deposited.deposit.toString(), capped, txHash: deposited.hash },
            capped ? "channel topped up as far as the daily cap allows" : "channel topped up",
          );
          this.parameters.onTopUp?.(sessionId, amount, deposited.hash);
        } catch (error) {
          this.parameters.logger?.warn({ event: "watchtower.top_up_failed", sessionId, amount: amount.toString(), error: errorText(error) }, "top-up failed");
          this.#onError(error);
        }
      }
    }
  }

  #head: { head: bigint; unchangedPolls: number } | undefined;

  /** Reads the chain and the store, evaluates the alerts and hands them to the emitter (raises and clears). */
  async checkAlerts(): Promise<void> {
    const { alerts, store, publicClient, wallet, escrow } = this.parameters;
    if (!alerts) return;
    const block = await publicClient.getBlock();
    this.#head = advanceHead(this.#head, block.number);
    const assets = [...new Set(store.listChannels().map((channel) => channel.ref.terms.asset.toLowerCase() as Address))];
    const chain = await readAlertChainState({ publicClient, escrow, disputeManager: alerts.disputeManager, account: wallet.account.address, assets, ...this.#head });
    const closing = store.listChannels({ status: "closing" }).flatMap((channel) => {
      const record = store.getClosing(channel.sessionId);
      return record ? [{ sessionId: channel.sessionId, role: channel.role, finalizesAt: record.finalizesAt }] : [];
    });
    await alerts.emitter.update(evaluateAlerts({ chain, store: { closing }, now: block.timestamp, policy: alerts.policy ?? DEFAULT_ALERT_POLICY }));
  }

  /**
   * Challenges every closing channel whose recorded ticket is older than the newest one the store holds.
   * Runs on every poll: the provider may have accepted tickets after the close (or the last challenge) was
   * seen, and no new event would bring them on-chain.
   */
  async defendClosing(): Promise<void> {
    const { store } = this.parameters;
    for (const channel of store.listChannels({ status: "closing" })) {
      const closing = store.getClosing(channel.sessionId);
      if (!closing) continue;
      await this.#defend(channel.sessionId);
      await this.#anchor(channel.sessionId, closing.finalizesAt);
    }
  }

  /** When each co-signed close (by session) was first seen by `submitCooperativeCloses`, in `Date.now()` ms. */
  readonly #cooperativeSeen = new Map<Hex, number>();

  /**
   * Submits the co-signed cooperative close of every channel of the store that is still open on-chain once it has
   * waited `cooperativeGraceMs` (the payer's own submission comes first).
   */
  async submitCooperativeCloses(): Promise<void> {
    const { store, publicClient, wallet, escrow, pollMs = DEVNET_READING.pollMs } = this.parameters;
    const grace = this.parameters.cooperativeGraceMs ?? 10 * pollMs;
    const now = Date.now();
    const closing = store.listChannels({ status: "closing" });
    const stillClosing = new Set(closing.map((channel) => channel.sessionId));
    for (const sessionId of this.#cooperativeSeen.keys()) if (!stillClosing.has(sessionId)) this.#cooperativeSeen.delete(sessionId);
    for (const channel of closing) {
      const close = store.getCooperativeClose(channel.sessionId);
      if (!close || store.getClosing(channel.sessionId)) continue;
      const seen = this.#cooperativeSeen.get(channel.sessionId) ?? now;
      this.#cooperativeSeen.set(channel.sessionId, seen);
      if (now - seen < grace) continue;
      const phase = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [channel.sessionId] });
      if (phase !== 1) continue; // not Open: someone submitted it (or closed unilaterally; the events tell)
      const payerWallet = await this.#payerWallet(channel.ref.terms.payer);
      const settled = await closeCooperative({ wallet, publicClient, escrow, ref: channel.ref, summary: close.summary, payerSignature: close.payerSignature, providerSignature: close.providerSignature, payerWallet });
      await store.updateChannel(channel.sessionId, { status: "settled" });
      this.parameters.logger?.info({ event: "watchtower.cooperative_submitted", sessionId: channel.sessionId, txHash: settled.hash, finalSeq: close.summary.finalSeq.toString() }, "co-signed cooperative close submitted");
      this.parameters.onFinalized?.(channel.sessionId, settled.hash);
    }
  }

  start(): void {
    const { pollMs = DEVNET_READING.pollMs } = this.parameters;
    let stopped = false;
    const tick = () => {
      this.#ticking = (async () => {
        try {
          await this.runOnce();
        } catch (error) {
          this.#onError(error);
        }
        if (!stopped) this.#timer = setTimeout(tick, pollMs);
      })();
    };
    this.#stop = () => {
      stopped = true;
    };
    tick();
  }

  async stop(): Promise<void> {
    this.#stop?.();
    if (this.#timer) clearTimeout(this.#timer);
    await this.follower.stop();
    // A poll may be past the follower, finalising: a finalisation in flight must end before `stop()` does.
    await this.#ticking;
  }

  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  #stop: (() => void) | undefined;

  async #handle(events: EscrowEvent[]): Promise<void> {
    const { store } = this.parameters;
    for (const event of events) {
      switch (event.eventName) {
        case "Deposited": {
          if (store.getChannel(event.args.sessionId)) {
            await store.updateChannel(event.args.sessionId, { deposit: event.args.deposit });
          }
          break;
        }
        case "ChannelClosing": {
          const { sessionId, closer, seq, amount, receiptRoot, deposit, feeBps, finalizesAt } = event.args;
          if (!store.getChannel(sessionId)) break;
          const state: ClosingState = { deposit, seq, amount, receiptRoot, feeBps };
          this.parameters.logger?.info(
            { event: "watchtower.close_seen", sessionId, closer, seq: seq.toString(), amount: amount.toString(), finalizesAt: finalizesAt.toString(), block: event.blockNumber.toString(), txHash: event.transactionHash },
            "unilateral close seen",
          );
          await store.putClosing(sessionId, { state, finalizesAt: BigInt(finalizesAt), closer, txHash: event.transactionHash });
          await store.updateChannel(sessionId, { status: "closing" });
          await this.#defend(sessionId);
          await this.#anchor(sessionId, BigInt(finalizesAt));
          break;
        }
        case "ReceiptCommitAnchored": {
          const { sessionId, by, leafCount, root } = event.args;
          if (!store.getChannel(sessionId)) break;
          this.anchoredCommits.push({ sessionId, by, leafCount, root, txHash: event.transactionHash });
          this.parameters.logger?.info(
            { event: "watchtower.commit_anchored", sessionId, by, leafCount: leafCount.toString(), root, block: event.blockNumber.toString(), txHash: event.transactionHash },
            "receipt commit anchored",
          );
          break;
        }
        case "ChannelChallenged": {
          const { sessionId, challenger, seq, amount, receiptRoot, finalizesAt } = event.args;
          const previous = store.getClosing(sessionId);
          if (!previous) break;
          const state: ClosingState = { ...previous.state, seq, amount, receiptRoot };
          await store.putClosing(sessionId, { state, finalizesAt: BigInt(finalizesAt), closer: challenger, txHash: event.transactionHash });
          await this.#defend(sessionId);
          await this.#anchor(sessionId, BigInt(finalizesAt));
          break;
        }
        case "ChannelReleased": {
          const previous = store.getClosing(event.args.sessionId);
          if (!previous) break;
          // A resolution with a refund lowers the amount; the window may have ended early.
          const state: ClosingState = { ...previous.state, amount: event.args.amount };
          const block = await this.parameters.publicClient.getBlock({ blockNumber: event.blockNumber });
          const finalizesAt = event.args.refund > 0n && block.timestamp < previous.finalizesAt ? block.timestamp : previous.finalizesAt;
          await store.putClosing(event.args.sessionId, { ...previous, state, finalizesAt, txHash: event.transactionHash });
          break;
        }
        case "SessionKeyRevoked": {
          await this.#secureRevoked(event.args.sessionId, (grant) => isAddressEqual(grant.grant.key, event.args.key), `key ${event.args.key} revoked in block ${event.blockNumber}`);
          break;
        }
        case "SessionKeysRevoked": {
          const { payer, epoch } = event.args;
          for (const channel of store.listChannels({ status: "open" })) {
            if (!isAddressEqual(channel.ref.terms.payer, payer)) continue;
            await this.#secureRevoked(channel.sessionId, (grant) => grant.grant.epoch < epoch, `the payer's keys before epoch ${epoch} revoked in block ${event.blockNumber}`);
          }
          break;
        }
        case "ChannelSettled": {
          if (store.getChannel(event.args.sessionId)) {
            await store.updateChannel(event.args.sessionId, { status: "settled" });
            this.parameters.logger?.info(
              { event: "watchtower.settled_seen", sessionId: event.args.sessionId, finalSeq: event.args.finalSeq.toString(), block: event.blockNumber.toString(), txHash: event.transactionHash },
              "settlement seen",
            );
          }
          break;
        }
        default:
          break;
      }
    }
  }

  /** Challenges the recorded close of `sessionId` if the store holds a newer ticket and the window is open. */
  async #defend(sessionId: Hex): Promise<void> {
    const { store, publicClient, wallet, escrow, defend = DEFEND_BOTH } = this.parameters;
    const channel = store.getChannel(sessionId);
    const closing = store.getClosing(sessionId);
    const newest = store.latestTicket(sessionId);
    // A payer's newer ticket would only pay the provider more: a payer's side is defended by #anchor.
    if (!channel || !closing || !newest || channel.role !== "provider" || !defend.includes(channel.role)) return;
    const { state, finalizesAt } = closing;
    // The escrow takes only a ticket that raises the cumulative amount (see GasEscrow.challenge).
    const owesMore = newest.ticket.cumulativeAmount > state.amount;
    if (!owesMore) return;
    const now = (await publicClient.getBlock()).timestamp;
    if (now >= finalizesAt) return; // too late; nothing can be done on-chain
    // The store may be behind the chain: this batch is a re-delivery, or another tower sharing the store
    // answered already. Only the state recorded on-chain can be challenged (anything else reverts, and a
    // handler that throws would re-deliver the same batch forever); later events bring the store up to date.
    const [matches] = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "closingInfo", args: [sessionId, state] });
    if (!matches) return;

    // A key-signed ticket goes on-chain with its grant, and only while the chain still takes the key.
    const grant = await this.#grantOf(channel, newest);
    if (grant === null) return;
    const graceEnd = grant ? await keyGraceEnd({ publicClient, channel, grant }) : undefined;
    if (grant && graceEnd !== undefined && now >= graceEnd) {
      this.parameters.logger?.warn(
        { event: "watchtower.key_grace_over", sessionId, seq: newest.ticket.seq.toString(), key: grant.grant.key },
        "the newest ticket's session key is past its grace; it can no longer be submitted",
      );
      return;
    }
    const payerWallet = await this.#payerWallet(channel.ref.terms.payer);
    const challenged = await challengeClose({ wallet, publicClient, escrow, ref: channel.ref, recorded: state, ticket: newest, ...(grant ? { grant } : {}), payerWallet });
    const block = await publicClient.getBlock({ blockNumber: challenged.blockNumber });
    await store.putClosing(sessionId, { state: challenged.state, finalizesAt: challenged.finalizesAt, closer: wallet.account.address, txHash: challenged.hash });
    const answer: WatchtowerAnswer = {
      sessionId,
      staleSeq: state.seq,
      answeredSeq: challenged.state.seq,
      txHash: challenged.hash,
      finalizesAt: challenged.finalizesAt,
      answeredAt: block.timestamp,
      inWindow: block.timestamp < challenged.finalizesAt,
    };
    this.answers.push(answer);
    this.parameters.logger?.info(
      { event: "watchtower.challenged", sessionId, staleSeq: answer.staleSeq.toString(), answeredSeq: answer.answeredSeq.toString(), amount: challenged.state.amount.toString(), inWindow: answer.inWindow, txHash: answer.txHash },
      "stale close challenged with the newest ticket",
    );
    this.parameters.onAnswer?.(answer);
  }

  /**
   * The payer revoked a key (`revoked` tells which grants that hits) on `sessionId`: if the newest ticket the
   * store holds for a defended channel was signed under such a grant, put it on-chain now, inside the grace —
   * close the open channel with it (the tower's wallet must be a party: the provider's own) or challenge the
   * recorded close with it. A payer who wants the session to go on after rotating keys sends a ticket signed by
   * the new key (or itself) before it revokes the old one; then the newest ticket is not the revoked key's and
   * nothing is closed.
   */
  async #secureRevoked(sessionId: Hex, revoked: (grant: NonNullable<Awaited<ReturnType<typeof grantForTicket>>>) => boolean, why: string): Promise<void> {
    const { store, publicClient, wallet, escrow, defend = DEFEND_BOTH } = this.parameters;
    const channel = store.getChannel(sessionId);
    const newest = store.latestTicket(sessionId);
    if (!channel || !newest || channel.role !== "provider" || !defend.includes(channel.role) || channel.status === "settled") return;
    const grant = await this.#grantOf(channel, newest);
    if (!grant || !revoked(grant)) return;
    const phase = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "phaseOf", args: [sessionId] });
    if (phase !== 1) {
      // Closing already (or settled): the defence path challenges with the newest ticket if it owes more.
      if (store.getClosing(sessionId)) await this.#defend(sessionId);
      return;
    }
    const { payer, funder, provider } = channel.ref.terms;
    if (![payer, funder, provider].some((party) => isAddressEqual(party, wallet.account.address))) {
      this.parameters.logger?.warn({ event: "watchtower.cannot_close", sessionId, why }, "a revoked key's newest ticket needs a close, and this tower's wallet is no party to the channel");
      return;
    }
    const graceEnd = await keyGraceEnd({ publicClient, channel, grant });
    if (graceEnd !== undefined && (await publicClient.getBlock()).timestamp >= graceEnd) return;
    const closed = await closeUnilateral({ wallet, publicClient, escrow, ref: channel.ref, ticket: newest, grant, payerWallet: await this.#payerWallet(channel.ref.terms.payer) });
    await store.putClosing(sessionId, { state: closed.state, finalizesAt: closed.finalizesAt, closer: wallet.account.address, txHash: closed.hash });
    await store.updateChannel(sessionId, { status: "closing" });
    this.parameters.logger?.info(
      { event: "watchtower.closed_on_revocation", sessionId, seq: closed.state.seq.toString(), amount: closed.state.amount.toString(), key: grant.grant.key, why, txHash: closed.hash },
      "closed with the revoked key's newest ticket inside its grace",
    );
  }

  /**
   * The grant `ticket` needs on-chain (undefined: the payer signed it), or null when the store lacks it: logged,
   * never thrown, because a handler that throws would have the follower re-deliver the same batch forever.
   */
  async #grantOf(channel: ChannelRecord, ticket: SignedPaymentTicket): Promise<SignedSessionKeyGrant | undefined | null> {
    try {
      return await grantForTicket({ channel, store: this.parameters.store, ticket });
    } catch (error) {
      if (!(error instanceof KeyTicketWithoutGrantError)) throw error;
      this.parameters.logger?.warn({ event: "watchtower.grant_missing", sessionId: channel.sessionId, seq: ticket.ticket.seq.toString() }, error.shortMessage);
      this.parameters.onError?.(error);
      return null;
    }
  }

  /**
   * A payer's channel (`defend` includes "payer", the default): when the recorded root lags the newest receipt
   * commit the provider signed, anchors that commit unless it is anchored already, so every receipt it covers
   * stays provable whatever ticket is recorded (decision 0003). Runs when a close or challenge is seen and on
   * every poll (a commit may reach the store after the close); a state already handled is not re-read. A
   * failure is logged, never thrown: a handler that throws would have the follower re-deliver the batch forever.
   */
  async #anchor(sessionId: Hex, finalizesAt: bigint): Promise<void> {
    const { store, publicClient, wallet, escrow, defend = DEFEND_BOTH } = this.parameters;
    const channel = store.getChannel(sessionId);
    const closing = store.getClosing(sessionId);
    if (!channel || !closing || channel.role !== "payer" || !defend.includes("payer")) return;
    // Only the payer or the funder may anchor; a tower paying gas from another account leaves it to `ioi anchor`.
    const { payer, funder } = channel.ref.terms;
    if (!isAddressEqual(wallet.account.address, payer) && !isAddressEqual(wallet.account.address, funder)) return;
    const commit = store.latestCommit(sessionId, "provider");
    const state = `${closing.state.receiptRoot}:${commit?.commit.leafCount ?? 0n}`;
    if (this.#anchorHandled.get(sessionId) === state) return;
    if (!commitToAnchor({ leaves: store.leaves(sessionId), recordedRoot: closing.state.receiptRoot, commit })) {
      this.#anchorHandled.set(sessionId, state);
      return;
    }
    if ((await publicClient.getBlock()).timestamp >= finalizesAt) return; // the escrow no longer takes it
    try {
      const outcome = await anchorIfLagging({ wallet, publicClient, escrow, store, channel, recordedRoot: closing.state.receiptRoot });
      this.#anchorHandled.set(sessionId, state);
      if (outcome.status !== "anchored") return;
      const { anchored } = outcome;
      this.parameters.logger?.info(
        { event: "watchtower.anchored", sessionId, leafCount: anchored.leafCount.toString(), root: anchored.root, recordedRoot: closing.state.receiptRoot, txHash: anchored.hash },
        "provider's receipt commit anchored: the recorded root lagged it",
      );
    } catch (error) {
      this.parameters.logger?.warn({ event: "watchtower.anchor_failed", sessionId, error: errorText(error) }, "could not anchor the provider's receipt commit");
      this.parameters.onError?.(error);
    }
  }

  /** Per payer channel, the (recorded root, newest commit) pair already anchored or found not lagging. */
  readonly #anchorHandled = new Map<Hex, string>();

  /** Finalises every closing channel of the store whose window (and any dispute) has passed. */
  async finalizeDue(): Promise<void> {
    const { store, publicClient, wallet, escrow } = this.parameters;
    const now = (await publicClient.getBlock()).timestamp;
    for (const channel of store.listChannels({ status: "closing" })) {
      const closing = store.getClosing(channel.sessionId);
      if (!closing || now < closing.finalizesAt) continue;
      const [matches, , openCases] = await publicClient.readContract({
        address: escrow,
        abi: gasEscrowAbi,
        functionName: "closingInfo",
        args: [channel.sessionId, closing.state],
      });
      if (!matches || openCases > 0) continue;
      const settled = await finalizeClose({ wallet, publicClient, escrow, ref: channel.ref, recorded: closing.state });
      await store.updateChannel(channel.sessionId, { status: "settled" });
      this.parameters.logger?.info(
        { event: "watchtower.finalized", sessionId: channel.sessionId, txHash: settled.hash, paidToProvider: settled.paidToProvider.toString(), refundedToFunder: settled.refundedToFunder.toString() },
        "closed channel finalised",
      );
      this.parameters.onFinalized?.(channel.sessionId, settled.hash);
    }
    await this.claimDue();
  }

  /**
   * Claims what the escrow holds for the tower's wallet (issue 28 item 7): ERC-20 payouts and refunds the token
   * refused at settlement (decision 0016) are credited as claimable; a node that finalises collects them too,
   * once per asset of the store's channels whose claimable balance is not zero (a zero balance sends nothing).
   */
  async claimDue(): Promise<void> {
    const { store, publicClient, wallet, escrow } = this.parameters;
    const account = wallet.account.address;
    const assets = new Set(store.listChannels().map((channel) => channel.ref.terms.asset.toLowerCase() as Address));
    for (const asset of assets) {
      const owed = await publicClient.readContract({ address: escrow, abi: gasEscrowAbi, functionName: "claimableOf", args: [asset, account] });
      if (owed === 0n) continue;
      try {
        await this.#claim(asset, owed);
      } catch (error) {
        // Still refused (a blocklisted wallet): the balance stays claimable and the next poll tries again.
        this.#onError(error);
      }
    }
  }

  async #claim(asset: Address, owed: bigint): Promise<void> {
    const { publicClient, wallet, escrow } = this.parameters;
    const { request } = await publicClient.simulateContract({ address: escrow, abi: gasEscrowAbi, functionName: "claim", args: [asset], account: wallet.account });
    const hash = await wallet.writeContract(request);
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`claim(${asset}) reverted in ${hash}.`);
    this.parameters.logger?.info({ event: "watchtower.claimed", asset, amount: owed.toString(), txHash: hash }, "claimable payout collected");
    this.parameters.onClaimed?.(asset, owed, hash);
  }
}
