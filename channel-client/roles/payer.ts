/**
 * `ioi-settlement/payer` — the payer's side of a payment channel: open a channel on the terms a provider
 * node signs, stream paid invocations over the sealed socket, and close (cooperatively, or alone).
 *
 * ```ts
 * import { createPayer, SqliteStore } from "ioi-settlement/payer";
 * const payer = createPayer({ deployment, publicClient, wallet, store: SqliteStore.open("payer.db") });
 * const { sessionId } = await payer.openChannel({ provider, peer: { host: "127.0.0.1", port: 7000 }, deposit: 10n ** 15n });
 * const client = await payer.connect(sessionId);
 * const { result } = await client.invoke({ jsonrpc: "2.0", id: 1, method: "tools/call", params: {…} });
 * await client.close();
 * await payer.closeCooperative(sessionId);
 * ```
 */
import { getAddress, hashTypedData, keccak256, stringToBytes, type Address, type Hex, type LocalAccount, type PublicClient } from "viem";
import { toAccount } from "viem/accounts";

import { gasEscrowDomain, type GasEscrowDomain } from "../core/eip712";
import { BaseError } from "../core/errors";
import {
  closeCooperative,
  closeUnilateral,
  depositToChannel,
  finalizeClose,
  openChannel,
  registerWalletSessionKey,
  type ClosingChannel,
  type SettledChannel,
  type Wallet,
} from "../chain/escrow";
import { fetchTermsOffer, PayerClient } from "../node/payer-client";
import { FleetPayer, type FleetPayerOptions } from "../node/fleet";
import { PayerSession } from "../node/payer-session";
import type { ChannelRecord, ChannelStore } from "../store/store";
import { describePricing, hasDocumentBody, disputeWindowProblem, NATIVE_ASSET, termsHashOf, type PricingTerms } from "../core/terms";
import { readSettledDisputeWindow } from "../chain/dispute-window";
import type { SignedSessionKeyGrant } from "../core/session-key";
import { walletSessionKey } from "../chain/wallet-signature";
import { assertDeployed, contractAddress, type Deployment } from "./deployment";

import { FlowController, type FlowControllerParameters } from "../node/flow-controller";
import { NetworkStreamLink } from "../node/stream-link";

export type Peer = { host: string; port: number };

export type PayerParameters = {
  deployment: Deployment;
  publicClient: PublicClient;
  /** The payer's wallet (a local account): it signs tickets and pays for the transactions. */
  wallet: Wallet;
  /** Where tickets and receipts are kept durably (`SqliteStore.open(path)`). */
  store: ChannelStore;
  /**
   * The payer is this contract wallet (ERC-1271, decision 0035), and `wallet`'s key signs for it: the channel
   * names the wallet as its payer (the key funds it), the key's signature of a digest is the wallet's signature
   * (an owner-key wallet: its `isValidSignature` accepts its owner's signature of the digest itself), and the key
   * connects to the provider as the session key of a grant the wallet signs for it. Omitted: the key is the payer.
   */
  payerWallet?: Address;
  /**
   * How the contract wallet signs a digest, in its own format, when that is not the key's 65-byte signature of the
   * digest (decision 0035): say, two owners' signatures concatenated, or a WebAuthn assertion — any length up to
   * `MAX_WALLET_SIGNATURE_BYTES`. It signs the wallet's grant, the closing ticket, the cooperative summary and receipt
   * commits; tickets are still the key's (it pays as the grant's session key). Only with `payerWallet`.
   */
  walletSigner?: (digest: Hex) => Promise<Hex>;
};

export type OpenPaidChannelParameters = {
  provider: Address;
  /** The provider node: its signed terms are fetched and checked before anything is funded. */
  peer: Peer;
  /** Wei to lock in the channel. */
  deposit: bigint;
  /** If given, the flat (v1) price per invocation the payer expects; any other offer funds nothing. */
  expectedPrice?: bigint;
  /** If given, the terms document the payer agrees to (decision 0026); an offer with another terms hash funds nothing. */
  expectedTerms?: PricingTerms;
  /** Challenge window in seconds (default 3600). */
  challengeDuration?: bigint;
  policy?: string;
};

export class PayerError extends BaseError {
  override name = "PayerError" as const;
}

/** One payer over viem clients and a deployment object. */
export class Payer {
  readonly escrow: Address;
  readonly domain: GasEscrowDomain;
  readonly #peers = new Map<Hex, Peer>();

  constructor(readonly parameters: PayerParameters) {
    const escrow = parameters.deployment.contracts.GasEscrow;
    if (escrow === undefined) throw new PayerError(`The deployment for chain ${parameters.deployment.chainId} names no GasEscrow address.`);
    this.escrow = getAddress(typeof escrow === "string" ? escrow : escrow.address);
    this.domain = gasEscrowDomain({ chainId: parameters.deployment.chainId, verifyingContract: this.escrow });
  }

  /** The wallet's local account: tickets are signed in-process, never by a remote signer. */
  get account(): LocalAccount {
    const account = this.parameters.wallet.account;
    if (account.type !== "local") throw new PayerError("The payer's wallet must hold a local account (privateKeyToAccount): tickets are signed in-process.");
    return account;
  }

  /** Fetches the provider's signed terms, checks them, and opens and funds a native-ETH channel on them. */
  async openChannel(parameters: OpenPaidChannelParameters): Promise<{ sessionId: Hex; deposit: bigint; pricing: PricingTerms; hash: Hex; gasUsed: bigint }> {
    const { wallet, publicClient, store, deployment } = this.parameters;
    await assertDeployed(publicClient, deployment, "GasEscrow");
    const provider = getAddress(parameters.provider);
    const offer = await fetchTermsOffer({ account: this.account, domain: this.domain, provider, host: parameters.peer.host, port: parameters.peer.port });
    if (parameters.expectedTerms !== undefined && termsHashOf(parameters.expectedTerms) !== offer.termsHash) {
      throw new PayerError(`The provider offers terms ${offer.termsHash} (${describePricing(offer.pricing)}), not the terms document the payer agreed to (${termsHashOf(parameters.expectedTerms)}); nothing was funded.`);
    }
    if (parameters.expectedPrice !== undefined && (offer.pricing.version !== "1" || parameters.expectedPrice !== offer.pricing.pricePerInvocation)) {
      throw new PayerError(`The provider charges ${describePricing(offer.pricing)}, not ${parameters.expectedPrice} wei per invocation; nothing was funded.`);
    }
    const pricing = offer.pricing;
    // Terms that promise a longer dispute window than the chain enforces would mislead the payer (decision 0026).
    if (hasDocumentBody(pricing) && deployment.contracts.DisputeManager !== undefined) {
      const problem = disputeWindowProblem(pricing, await readSettledDisputeWindow(publicClient, contractAddress(deployment, "DisputeManager")));
      if (problem) throw new PayerError(`The provider's terms cannot be honoured here: ${problem}; nothing was funded.`);
    }
    const opened = await openChannel({
      wallet,
      publicClient,
      escrow: this.escrow,
      amount: parameters.deposit,
      terms: {
        payer: this.payer,
        provider,
        funder: this.account.address,
        asset: NATIVE_ASSET,
        termsHash: termsHashOf(pricing),
        policyHash: keccak256(stringToBytes(parameters.policy ?? "policy: default")),
        challengeDuration: parameters.challengeDuration ?? 3600n,
        nonce: BigInt(Date.now()),
      },
    });
    const peer = `${parameters.peer.host}:${parameters.peer.port}`;
    await store.putChannel({ sessionId: opened.sessionId, role: "payer", ref: opened.ref, pricing, escrow: this.escrow, chainId: deployment.chainId, deposit: opened.deposit, status: "open", peer });
    this.#peers.set(opened.sessionId, parameters.peer);
    return { sessionId: opened.sessionId, deposit: opened.deposit, pricing, hash: opened.hash, gasUsed: opened.gasUsed };
  }

  /** The channel's payer: the contract wallet when `payerWallet` is set, else the wallet's own key. */
  get payer(): Address {
    return this.parameters.payerWallet === undefined ? this.account.address : getAddress(this.parameters.payerWallet);
  }

  /** Connects to the channel's provider node (the peer it was opened with, unless given) to invoke and stream. */
  async connect(sessionId: Hex, peer?: Peer): Promise<PayerClient> {
    const channel = this.#channel(sessionId);
    const { host, port } = peer ?? this.#peerOf(channel);
    const sessionKey = this.parameters.payerWallet === undefined ? undefined : { account: this.account, grant: await this.walletGrant(sessionId) };
    const payerSigner = this.#walletSigner();
    return PayerClient.connect({ account: this.account, domain: this.domain, store: this.parameters.store, channel, host, port, ...(sessionKey ? { sessionKey } : {}), ...(payerSigner ? { payerSigner } : {}) });
  }

  /**
   * The contract wallet's own signer as an account whose raw-digest `sign` gives the wallet's format (`walletSigner`);
   * undefined when the key's signature is the wallet's. It signs digests only: never a transaction or a handshake.
   */
  #walletSigner(): LocalAccount | undefined {
    const { walletSigner, payerWallet } = this.parameters;
    if (walletSigner === undefined) return undefined;
    if (payerWallet === undefined) throw new PayerError("walletSigner signs for a contract wallet: give payerWallet too.");
    const refuse = async (): Promise<never> => {
      throw new PayerError("The contract wallet's signer signs EIP-712 data and digests only.");
    };
    // EIP-712 data (the summary) is signed as its digest: the wallet's ERC-1271 is asked about exactly that digest.
    const signTypedData = (async (typed: Parameters<typeof hashTypedData>[0]) => walletSigner(hashTypedData(typed))) as LocalAccount["signTypedData"];
    return toAccount({ address: this.account.address, sign: async ({ hash }) => walletSigner(hash), signMessage: refuse, signTransaction: refuse, signTypedData });
  }

  /**
   * Connects to a provider fleet (decision 0036): binds on the first of `peers` (default the peer the channel was
   * opened with) that answers, learns the fleet's other endpoints from the provider's signed terms offer, and its
   * `stream` resumes on the next endpoint from the store when a connection drops.
   */
  async connectFleet(sessionId: Hex, peers?: readonly Peer[], options?: FleetPayerOptions): Promise<FleetPayer> {
    const channel = this.#channel(sessionId);
    const endpoints = (peers ?? [this.#peerOf(channel)]).map((p) => (p.host.includes(":") ? `[${p.host}]:${p.port}` : `${p.host}:${p.port}`));
    const sessionKey = this.parameters.payerWallet === undefined ? undefined : { account: this.account, grant: await this.walletGrant(sessionId) };
    return FleetPayer.connect({ account: this.account, domain: this.domain, store: this.parameters.store, channel, ...(sessionKey ? { sessionKey } : {}) }, endpoints, options);
  }

  /**
   * For a contract-wallet payer (decision 0035): the wallet's grant of this session to the key that signs for it
   * (any method, up to any amount the channel holds, for a year), signed once and kept in the store. The provider
   * checks it by the wallet's ERC-1271 answer; `registerWalletKey` records it on-chain so that the key's tickets
   * stay payable even if the wallet later refuses the same signature.
   */
  async walletGrant(sessionId: Hex): Promise<SignedSessionKeyGrant> {
    const { store, publicClient, payerWallet } = this.parameters;
    if (payerWallet === undefined) throw new PayerError("This payer is not a contract wallet (no payerWallet): it needs no wallet grant.");
    const signer = this.#walletSigner();
    const { grant } = await walletSessionKey({ account: this.account, domain: this.domain, publicClient, wallet: getAddress(payerWallet), sessionId, store, ...(signer ? { signer } : {}) });
    return grant;
  }

  /** Records the wallet's grant on-chain while the wallet approves it (`registerWalletSessionKey`, decision 0035). */
  async registerWalletKey(sessionId: Hex) {
    const { wallet, publicClient } = this.parameters;
    return registerWalletSessionKey({ wallet, publicClient, escrow: this.escrow, ref: this.#channel(sessionId).ref, grant: await this.walletGrant(sessionId) });
  }

  /** Tops the channel up with `amount` wei. */
  async deposit(sessionId: Hex, amount: bigint) {
    const { wallet, publicClient, store } = this.parameters;
    const channel = this.#channel(sessionId);
    const result = await depositToChannel({ wallet, publicClient, escrow: this.escrow, ref: channel.ref, amount });
    await store.updateChannel(sessionId, { deposit: result.deposit });
    return result;
  }

  /** Agrees the final state with the provider node and settles on-chain at once. */
  async closeCooperative(sessionId: Hex, peer?: Peer): Promise<SettledChannel> {
    const { wallet, publicClient, store } = this.parameters;
    const channel = this.#channel(sessionId);
    const client = await this.connect(sessionId, peer);
    let agreed;
    try {
      agreed = await client.cooperativeClose();
    } finally {
      await client.close();
    }
    const settled = await closeCooperative({ wallet, publicClient, escrow: this.escrow, ref: channel.ref, ...agreed, payerWallet: this.parameters.payerWallet !== undefined });
    await store.updateChannel(sessionId, { status: "settled" });
    return settled;
  }

  /** Closes alone with a ticket that covers every receipt accepted; the challenge window then runs. */
  async closeUnilateral(sessionId: Hex): Promise<ClosingChannel> {
    const { wallet, publicClient, store } = this.parameters;
    const channel = this.#channel(sessionId);
    let ticket = store.latestTicket(sessionId);
    if (ticket) {
      const signer = this.#walletSigner();
      const session = PayerSession.restore(
        { account: this.account, domain: this.domain, ref: channel.ref, sessionId, pricing: channel.pricing, deposit: channel.deposit, ...(signer ? { payerSigner: signer } : {}) },
        store.steps(sessionId),
      );
      ticket = await session.closingTicket();
    }
    // The closing ticket is signed by the payer's key itself (for a wallet payer: the wallet's signature).
    const closed = await closeUnilateral({ wallet, publicClient, escrow: this.escrow, ref: channel.ref, ticket, payerWallet: this.parameters.payerWallet !== undefined });
    await store.putClosing(sessionId, { state: closed.state, finalizesAt: closed.finalizesAt, closer: this.account.address, txHash: closed.hash });
    await store.updateChannel(sessionId, { status: "closing" });
    return closed;
  }

  /** Pays out a unilaterally closed channel once its window has passed. */
  async finalize(sessionId: Hex): Promise<SettledChannel> {
    const { wallet, publicClient, store } = this.parameters;
    const channel = this.#channel(sessionId);
    const closing = store.getClosing(sessionId);
    if (!closing) throw new PayerError(`Session ${sessionId} is not closing in this store: close it first.`);
    const settled = await finalizeClose({ wallet, publicClient, escrow: this.escrow, ref: channel.ref, recorded: closing.state });
    await store.updateChannel(sessionId, { status: "settled" });
    return settled;
  }

  /**
   * Streams a channel opened on v4 terms tranche by tranche (issue 32, decision 0037): a {@link FlowController}
   * signs tranche k+1's ticket only after the sampled claims of proof k re-ran true, pauses for good otherwise, and
   * keeps the evidence of a stream case. Without `link` it talks to the channel's provider node over the sealed
   * socket (`peer`, default the peer the channel was opened with). `signer`/`grant`: a delegated sampling node's
   * session key (its cap bounds the stream). `journal`: where the sampling secrets and proofs are made durable, so
   * that a restarted payer resumes. Resolves with the controller once the stream pauses (`flow.state.paused.reason`).
   */
  async streamMilestones(
    sessionId: Hex,
    parameters: Pick<FlowControllerParameters, "suite" | "onEvent" | "grant" | "secretOf" | "watchdogMs" | "journal"> & {
      tranches: bigint;
      signer?: LocalAccount;
      link?: FlowControllerParameters["link"];
      peer?: Peer;
    },
  ): Promise<FlowController> {
    const channel = this.#channel(sessionId);
    if (channel.pricing.version !== "4") throw new PayerError(`Session ${sessionId} was opened on version ${channel.pricing.version} terms; milestone streaming needs version 4 (a stream block).`);
    const { tranches, signer, link, peer, ...rest } = parameters;
    let network: NetworkStreamLink | undefined;
    if (!link) {
      const { host, port } = peer ?? this.#peerOf(channel);
      network = await NetworkStreamLink.connect({ account: this.account, domain: this.domain, channel, host, port, ...(rest.grant ? { grant: rest.grant } : {}) });
    }
    try {
      const flow = await FlowController.resume({ ...rest, link: link ?? network!, terms: channel.pricing, ref: channel.ref, sessionId, domain: this.domain, signer: signer ?? this.account, store: this.parameters.store });
      await flow.run(tranches);
      return flow;
    } finally {
      await network?.close();
    }
  }

  #channel(sessionId: Hex): ChannelRecord {
    const channel = this.parameters.store.getChannel(sessionId);
    if (!channel) throw new PayerError(`The store holds no session ${sessionId}.`);
    return channel;
  }

  #peerOf(channel: ChannelRecord): Peer {
    const known = this.#peers.get(channel.sessionId);
    if (known) return known;
    // A stored fleet list (ioi open --peer A,B, decision 0036): its first endpoint.
    const match = channel.peer ? /^(.*):(\d{1,5})$/.exec(channel.peer.split(",")[0]!) : null;
    if (!match) throw new PayerError(`Session ${channel.sessionId} has no recorded peer: pass one to connect.`);
    return { host: match[1]!.replace(/^\[(.*)\]$/, "$1"), port: Number(match[2]) };
  }
}

/** A payer bound to a deployment, viem clients and a store. */
export function createPayer(parameters: PayerParameters): Payer {
  return new Payer(parameters);
}

export { PayerClient, fetchTermsOffer, ProviderRejectedError, type InvocationOutcome } from "../node/payer-client";
export { PayerSession } from "../node/payer-session";
export { FleetPayer, connectToFleet, type FleetPayerOptions } from "../node/fleet";
export {
  FlowController,
  StreamResumeError,
  mayRelease,
  acceptTranche,
  judgeSample,
  PAUSE_REASONS,
  type FlowControllerParameters,
  type StreamProviderLink,
  type StreamEvent,
  type StreamPause,
} from "../node/flow-controller";
export { spotCheck, streamInputs } from "../../arbitration/lanes/stream-sample";
export { NetworkStreamLink, StreamLinkError } from "../node/stream-link";
export { StreamJournal } from "../node/stream-journal";
export { buildStreamPackage } from "../../arbitration/runner/build";
export { SqliteStore } from "../store/sqlite-store";
export type { ChannelStore, ChannelRecord } from "../store/store";
export { gasEscrowAbi } from "../abi/GasEscrow";
export type { Deployment, ContractName } from "./deployment";
export { contractAddress, assertDeployed, DeploymentError } from "./deployment";
export type { Wallet } from "../chain/escrow";

// Session keys and sponsored sessions (issue 14, decision 0025): the payer signs a grant (no transaction),
// `PayerSession` signs tickets with the key (`sessionKey` parameter), the payer revokes on-chain.
export {
  signSessionKeyGrant,
  capabilitiesHash,
  signedSessionKeyGrantToJson,
  signedSessionKeyGrantFromJson,
  ANY_METHOD,
  type SessionKeyGrant,
  type SignedSessionKeyGrant,
} from "../core/session-key";
export { revokeSessionKey, revokeAllSessionKeys, readSessionKeyChainState } from "../chain/escrow";

// Contract-wallet payers (decision 0035): the wallet's entry points and the ERC-1271 check the nodes make.
export { registerWalletSessionKey } from "../chain/escrow";
export { isContractAccount, payerSignatureCheck, verifyWalletSignature, walletSessionKey } from "../chain/wallet-signature";
export { fundGigFor, readGigFunder } from "../chain/gig";
