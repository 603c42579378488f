/**
 * Signatures of payers that are contract wallets (ERC-1271, decision 0035): how the provider node and the payer
 * client check one the way the GasEscrow does — `isValidSignature(digest, signature)` on the wallet returns the
 * magic value — through an `eth_call` pinned to a block, and how a node tells a wallet payer from a plain key
 * (code at the address). A plain key's signatures never come here: they are checked by recovery in `core/`.
 *
 * ERC-6492 (a wallet not yet deployed) is not accepted: the escrow checks a wallet with a plain call and would
 * have to deploy it first, so a signature the chain cannot accept is not taken off-chain either (decision 0035).
 */
import { isAddressEqual, isHex, type Address, type Hex, type LocalAccount, type PublicClient } from "viem";

import { gasEscrowAbi } from "../abi/GasEscrow";
import { ANY_METHOD, signSessionKeyGrant, type SignedSessionKeyGrant } from "../core/session-key";

import { InvalidSignatureError } from "../core/errors";
import { assertDigestSigner, type GasEscrowDomain, type SignatureCheck } from "../core/eip712";
import { MAX_WALLET_SIGNATURE_BYTES } from "../core/validate";

/** `IERC1271.isValidSignature.selector`, which a wallet returns for a signature it approves. */
export const ERC1271_MAGIC_VALUE = "0x1626ba7e" as const;

/** The longest wallet signature a node takes from a peer (bounds what it forwards to an `eth_call`). */
export { MAX_WALLET_SIGNATURE_BYTES };

export const erc1271Abi = [
  {
    type: "function",
    name: "isValidSignature",
    stateMutability: "view",
    inputs: [
      { name: "hash", type: "bytes32" },
      { name: "signature", type: "bytes" },
    ],
    outputs: [{ name: "magicValue", type: "bytes4" }],
  },
] as const;

/** Whether `address` holds code at `blockNumber` (latest when omitted): a contract wallet, not a plain key. */
export async function isContractAccount(parameters: { publicClient: PublicClient; address: Address; blockNumber?: bigint }): Promise<boolean> {
  const { publicClient, address, blockNumber } = parameters;
  const code = await publicClient.getCode(blockNumber === undefined ? { address } : { address, blockNumber });
  return code !== undefined && code !== "0x";
}

export type VerifyWalletSignatureParameters = {
  publicClient: PublicClient;
  wallet: Address;
  digest: Hex;
  signature: Hex;
  /** The block the wallet is asked at (latest when omitted); a wallet may answer differently at another. */
  blockNumber?: bigint;
  /** What was signed, for the error ("payment ticket", "session-key grant" …). */
  role: string;
};

/**
 * Throws {@link InvalidSignatureError} unless the contract wallet approves `signature` over `digest` now (or at
 * `blockNumber`): exactly OpenZeppelin's `SignatureChecker.isValidERC1271SignatureNow`, which the GasEscrow runs.
 * A wallet that reverts, returns anything but the magic value, or has no code refuses.
 */
export async function verifyWalletSignature(parameters: VerifyWalletSignatureParameters): Promise<void> {
  const { publicClient, wallet, digest, signature, blockNumber, role } = parameters;
  if (!isHex(signature) || signature.length % 2 !== 0 || signature.length > 2 + 2 * MAX_WALLET_SIGNATURE_BYTES) {
    throw new InvalidSignatureError(`The ${role} signature of wallet ${wallet} is not hex of at most ${MAX_WALLET_SIGNATURE_BYTES} bytes.`);
  }
  let answer: Hex | undefined;
  try {
    answer = await publicClient.readContract({
      address: wallet,
      abi: erc1271Abi,
      functionName: "isValidSignature",
      args: [digest, signature],
      ...(blockNumber === undefined ? {} : { blockNumber }),
    });
  } catch {
    answer = undefined; // a revert, no code, or an answer that is not a bytes4: all refusals, as on-chain
  }
  if (answer?.toLowerCase() !== ERC1271_MAGIC_VALUE) {
    const at = blockNumber === undefined ? "now" : `at block ${blockNumber}`;
    throw new InvalidSignatureError(`Contract wallet ${wallet} refused the ${role} signature ${at} (ERC-1271 isValidSignature).`);
  }
}

/**
 * How a node checks the payer's signatures on one channel: by recovery for a plain key, by the wallet's ERC-1271
 * answer (an `eth_call`) for a contract wallet. Made once per channel ({@link payerSignatureCheck}).
 */
export type PayerSignatureCheck = {
  readonly payer: Address;
  readonly wallet: boolean;
  /**
   * Throws {@link InvalidSignatureError} unless `expected` signed `digest`: by the wallet's ERC-1271 answer when
   * `expected` is this wallet payer, by recovery otherwise (a session key, the provider).
   */
  check: SignatureCheck;
};

/** Looks the payer's code up once and returns the check its signatures need (see {@link PayerSignatureCheck}). */
export async function payerSignatureCheck(parameters: { publicClient: PublicClient; payer: Address }): Promise<PayerSignatureCheck> {
  const { publicClient, payer } = parameters;
  const wallet = await isContractAccount({ publicClient, address: payer });
  return {
    payer,
    wallet,
    check: (digest, signature, expected, role) =>
      wallet && isAddressEqual(expected, payer)
        ? verifyWalletSignature({ publicClient, wallet: payer, digest, signature, role })
        : assertDigestSigner(digest, signature, expected, role),
  };
}

/**
 * The grant a contract wallet's signing key connects and pays under (decision 0035): the wallet (through `account`,
 * whose signature of a digest is the wallet's for an owner-key wallet) grants this session to `account` itself —
 * any method, any amount the channel holds, for a year, in the wallet's current revocation epoch. Signed once per
 * session and kept in `store`, so every reconnection presents the same grant. The provider checks it by the
 * wallet's ERC-1271 answer; `registerWalletSessionKey` records it on-chain.
 */
export async function walletSessionKey(parameters: {
  account: LocalAccount;
  domain: GasEscrowDomain;
  publicClient: PublicClient;
  wallet: Address;
  sessionId: Hex;
  store: { sessionKeyGrants(sessionId: Hex, key?: Address): SignedSessionKeyGrant[]; putSessionKeyGrant(sessionId: Hex, signed: SignedSessionKeyGrant): Promise<void> };
  /** Signs the grant in the wallet's own format when the key's signature is not the wallet's (default `account`). */
  signer?: LocalAccount;
}): Promise<{ account: LocalAccount; grant: SignedSessionKeyGrant }> {
  const { account, domain, publicClient, wallet, sessionId, store } = parameters;
  const [kept] = store.sessionKeyGrants(sessionId, account.address);
  if (kept) return { account, grant: kept };
  const epoch = await publicClient.readContract({ address: domain.verifyingContract, abi: gasEscrowAbi, functionName: "keyEpochOf", args: [wallet] });
  const grant = await signSessionKeyGrant({
    account: parameters.signer ?? account,
    domain,
    sessionId,
    key: account.address,
    expiry: BigInt(Math.floor(Date.now() / 1000)) + 365n * 86_400n,
    spendCap: (1n << 128n) - 1n,
    methods: [ANY_METHOD],
    epoch,
  });
  await store.putSessionKeyGrant(sessionId, grant);
  return { account, grant };
}
