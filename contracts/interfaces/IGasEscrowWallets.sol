// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IGasEscrow} from "./IGasEscrow.sol";

/// @title IGasEscrowWallets
/// @notice The GasEscrow's entry points for payers that are contract wallets (ERC-1271, decision 0035). The
/// GasEscrow serves them from its fallback, after every plain-key selector has missed, so that adding them left
/// the plain-key functions' dispatch and gas exactly as they were; call them on the GasEscrow's address with
/// this ABI (`src/abi/GasEscrow.ts` includes it). Their structs, events and errors are `IGasEscrow`'s.
/// @dev A wallet's signature is the wallet's own bytes, handed unchanged to its `isValidSignature(digest, sig)`
/// (OpenZeppelin `SignatureChecker.isValidERC1271SignatureNowCalldata`); an address without code never passes.
interface IGasEscrowWallets {
    /// @notice `closeCooperative` for a payer that is a contract wallet: `payerSig` is the wallet's signature of
    /// the summary, checked by its ERC-1271 `isValidSignature` now (OpenZeppelin `SignatureChecker`); the
    /// provider's signature is checked as in `closeCooperative`. Same effects.
    function closeCooperativeByWallet(
        IGasEscrow.ChannelTerms calldata terms,
        uint64 openedAt,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot,
        bytes calldata payerSig,
        IGasEscrow.Signature calldata providerSig
    ) external;

    /// @notice `closeUnilateral` with a ticket of a contract-wallet payer, checked by the wallet's ERC-1271
    /// `isValidSignature` now. Requirements as `closeUnilateral`, and `ticket.seq > 0`.
    /// WARNING: a wallet may refuse tomorrow what it approved today; a provider that wants its tickets to stay
    /// payable whatever the wallet does takes them from a session key registered with `registerWalletSessionKey`.
    function closeUnilateralByWallet(
        IGasEscrow.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrow.WalletTicket calldata ticket
    ) external;

    /// @notice `challenge` with a ticket of a contract-wallet payer, checked by the wallet's ERC-1271 now.
    function challengeByWallet(
        IGasEscrow.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrow.ClosingState calldata recorded,
        IGasEscrow.WalletTicket calldata ticket
    ) external;

    /// @notice Records that the contract-wallet payer approved `grant` (its ERC-1271 `isValidSignature` accepts
    /// the grant's digest with `grant.sig` now), so that the key's tickets settle later without asking the wallet
    /// again (decision 0035). Anyone may submit (the wallet's signature is the authority); idempotent. The
    /// grant's revocation rules are those of any grant (`revokeSessionKey`, `revokeAllSessionKeys`).
    function registerWalletSessionKey(
        IGasEscrow.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrow.WalletSessionKeyGrant calldata grant
    ) external;

    /// @notice `closeUnilateralWithKey` with a grant signed by a contract-wallet payer: the grant counts if it was
    /// registered (`registerWalletSessionKey`) or the wallet's ERC-1271 accepts it now.
    function closeUnilateralWithWalletKey(
        IGasEscrow.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrow.Ticket calldata ticket,
        IGasEscrow.WalletSessionKeyGrant calldata grant
    ) external;

    /// @notice `challengeWithKey` with a grant signed by a contract-wallet payer (see `closeUnilateralWithWalletKey`).
    function challengeWithWalletKey(
        IGasEscrow.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrow.ClosingState calldata recorded,
        IGasEscrow.Ticket calldata ticket,
        IGasEscrow.WalletSessionKeyGrant calldata grant
    ) external;

    /// @notice Whether a contract-wallet payer's grant with EIP-712 digest `grantDigest` was registered on the session.
    function walletSessionKeyRegistered(bytes32 sessionId, bytes32 grantDigest) external view returns (bool);
}
