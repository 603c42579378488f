// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IGasEscrowTypes} from "./IGasEscrowTypes.sol";

/// @title IGasEscrowWallets
/// @notice The GasEscrow's entry points for payers that are contract wallets (ERC-1271, decision 0035). The
/// GasEscrow serves them from its fallback by `delegatecall` to its module `GasEscrowWallets`, after every
/// plain-key selector has missed, so adding them left the plain-key functions' code, dispatch and gas as they
/// were; call them on the GasEscrow's address with this ABI (`src/abi/GasEscrow.ts` includes it). Their structs,
/// events and errors are `IGasEscrowTypes`'.
/// @dev A wallet's signature is the wallet's own bytes, handed unchanged to its `isValidSignature(digest, sig)`
/// (OpenZeppelin `SignatureChecker.isValidERC1271SignatureNowCalldata`); an address without code never passes.
interface IGasEscrowWallets {
    /// @notice `closeCooperative` for a payer that is a contract wallet: `payerSig` is the wallet's signature of
    /// the summary, checked by its ERC-1271 `isValidSignature` now (OpenZeppelin `SignatureChecker`); the
    /// provider's signature is checked as in `closeCooperative`. Same effects.
    function closeCooperativeByWallet(
        IGasEscrowTypes.ChannelTerms calldata terms,
        uint64 openedAt,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot,
        bytes calldata payerSig,
        IGasEscrowTypes.Signature calldata providerSig
    ) external;

    /// @notice `closeUnilateral` with a ticket of a contract-wallet payer, checked by the wallet's ERC-1271
    /// `isValidSignature` now. Requirements as `closeUnilateral`, and `ticket.seq > 0`.
    /// WARNING: a wallet may refuse tomorrow what it approved today; a provider that wants its tickets to stay
    /// payable whatever the wallet does takes them from a session key registered with `registerWalletSessionKey`.
    function closeUnilateralByWallet(
        IGasEscrowTypes.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrowTypes.WalletTicket calldata ticket
    ) external;

    /// @notice `challenge` with a ticket of a contract-wallet payer, checked by the wallet's ERC-1271 now.
    function challengeByWallet(
        IGasEscrowTypes.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrowTypes.ClosingState calldata recorded,
        IGasEscrowTypes.WalletTicket calldata ticket
    ) external;

    /// @notice Records that the contract-wallet payer approved `grant` (its ERC-1271 `isValidSignature` accepts
    /// the grant's digest with `grant.sig` now), so that the key's tickets settle later without asking the wallet
    /// again (decision 0035). Anyone may submit (the wallet's signature is the authority); idempotent. The
    /// grant's revocation rules are those of any grant (`revokeSessionKey`, `revokeAllSessionKeys`).
    function registerWalletSessionKey(
        IGasEscrowTypes.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrowTypes.WalletSessionKeyGrant calldata grant
    ) external;

    /// @notice `closeUnilateralWithKey` with a grant signed by a contract-wallet payer: the grant counts if it was
    /// registered (`registerWalletSessionKey`) or the wallet's ERC-1271 accepts it now.
    function closeUnilateralWithWalletKey(
        IGasEscrowTypes.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrowTypes.Ticket calldata ticket,
        IGasEscrowTypes.WalletSessionKeyGrant calldata grant
    ) external;

    /// @notice `challengeWithKey` with a grant signed by a contract-wallet payer (see `closeUnilateralWithWalletKey`).
    function challengeWithWalletKey(
        IGasEscrowTypes.ChannelTerms calldata terms,
        uint64 openedAt,
        IGasEscrowTypes.ClosingState calldata recorded,
        IGasEscrowTypes.Ticket calldata ticket,
        IGasEscrowTypes.WalletSessionKeyGrant calldata grant
    ) external;

    /// @notice Whether a contract-wallet payer's grant with EIP-712 digest `grantDigest` was registered on the session.
    function walletSessionKeyRegistered(bytes32 sessionId, bytes32 grantDigest) external view returns (bool);
}
