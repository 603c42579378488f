// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IGasEscrow
/// @notice Session payment channels between a payer and a provider, funded on-chain and settled only at
/// their boundaries. Every error, event and struct of the channel lives here: they are public API.
interface IGasEscrow {
    /*//////////////////////////////////////////////////////////////
                                 STRUCTS
    //////////////////////////////////////////////////////////////*/

    /// @notice The fixed terms of a channel. They are never stored: the session id is the EIP-712 hash of
    /// these terms together with the block the channel was opened in, so every later call re-supplies them
    /// and the contract recomputes the id.
    /// @dev `asset` is `address(0)` for native ETH. `termsHash` commits the pricing and dispute rules,
    /// `policyHash` the policy envelope the provider must enforce (both are hashes of canonical JSON).
    struct ChannelTerms {
        address payer;
        address provider;
        address funder;
        address asset;
        bytes32 termsHash;
        bytes32 policyHash;
        uint64 challengeDuration;
        uint64 nonce;
    }

    /// @notice An ERC-2098 compact secp256k1 signature: `vs` holds the y-parity in its top bit and `s`
    /// below it. Only low-s signatures are accepted, so each signer has one encoding per digest.
    struct Signature {
        bytes32 r;
        bytes32 vs;
    }

    /// @notice How a channel was settled; signed as `uint8` inside a SettlementSummary.
    enum CloseMode {
        Cooperative,
        Unilateral
    }

    /*//////////////////////////////////////////////////////////////
                                 EVENTS
    //////////////////////////////////////////////////////////////*/

    /// @notice A channel was opened and funded. The parties already hold the terms (they agreed them
    /// off-chain and the id commits to them); `openedAt` completes what they need to rebuild the id.
    event ChannelOpened(
        bytes32 indexed sessionId,
        address indexed payer,
        address indexed provider,
        address asset,
        uint64 openedAt,
        uint256 deposit
    );

    /// @notice `amount` was added to a channel by `from`, which now holds `deposit`.
    event Deposited(bytes32 indexed sessionId, address indexed from, uint256 amount, uint256 deposit);

    /// @notice A channel paid out and is closed for good.
    event ChannelSettled(
        bytes32 indexed sessionId,
        CloseMode mode,
        uint64 finalSeq,
        bytes32 receiptRoot,
        uint256 paidToProvider,
        uint256 refundedToFunder
    );

    /*//////////////////////////////////////////////////////////////
                                 ERRORS
    //////////////////////////////////////////////////////////////*/

    /// @notice A party of the terms is the zero address (`role`: 0 payer, 1 provider, 2 funder).
    error ZeroAddressParty(uint8 role);

    /// @notice The challenge window must lie in [`min`, `max`] seconds.
    error ChallengeDurationOutOfRange(uint64 challengeDuration, uint64 min, uint64 max);

    /// @notice A channel cannot be opened or topped up with nothing.
    error ZeroDeposit();

    /// @notice A native-ETH call must send exactly `amount` as `msg.value`.
    error EthValueMismatch(uint256 value, uint256 amount);

    /// @notice ETH was sent to a call for an ERC-20 channel.
    error UnexpectedEth(uint256 value);

    /// @notice A channel with these terms was already opened in this block.
    error SessionExists(bytes32 sessionId);

    /// @notice No open channel has this id (never opened, different terms, or already settled).
    error ChannelNotOpen(bytes32 sessionId);

    /// @notice The caller expected the channel to hold `expected` but it holds `actual`.
    error DepositMismatch(bytes32 sessionId, uint256 expected, uint256 actual);

    /// @notice A channel's deposit cannot exceed `type(uint128).max`.
    error DepositOverflow(bytes32 sessionId, uint256 deposit);

    /// @notice A settlement cannot pay the provider more than the channel holds.
    error AmountExceedsDeposit(bytes32 sessionId, uint256 amount, uint256 deposit);

    /// @notice The signature does not recover to any address.
    error InvalidSignature();

    /// @notice The signature's `s` is in the upper half of the curve order (malleable form).
    error SignatureNotLowS(bytes32 s);

    /// @notice The signature is valid but made by `recovered`, not by `expected`.
    error SignerMismatch(address expected, address recovered);

    /*//////////////////////////////////////////////////////////////
                                FUNCTIONS
    //////////////////////////////////////////////////////////////*/

    /// @notice Opens a channel on `terms` and funds it with `amount` of `terms.asset`.
    /// @dev For native ETH `msg.value` must equal `amount`; for an ERC-20 the contract pulls `amount` from the
    /// caller (after `approve` or `permit`) and credits what it actually received.
    /// Requirements: payer, provider and funder non-zero; challenge duration within bounds; a non-zero
    /// deposit; no channel with the same terms opened in the same block.
    /// @return sessionId The channel's id: the EIP-712 hash of `Session(terms…, openedAt = block.number)`.
    function open(ChannelTerms calldata terms, uint256 amount) external payable returns (bytes32 sessionId);

    /// @notice Adds `amount` to an open channel. Anyone may top up; refunds still go to `terms.funder`.
    /// @param expectedDeposit What the caller believes the channel holds now; the call reverts otherwise, so
    /// that a top-up is never applied twice or on top of a state the caller did not see.
    function deposit(ChannelTerms calldata terms, uint64 openedAt, uint256 amount, uint256 expectedDeposit)
        external
        payable;

    /// @notice Settles an open channel at once with a SettlementSummary (mode Cooperative) signed by both
    /// the payer and the provider: `finalAmount` to the provider, the rest of the deposit to the funder.
    /// @dev Anyone may submit it; the signatures are what authorise it.
    function closeCooperative(
        ChannelTerms calldata terms,
        uint64 openedAt,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot,
        Signature calldata payerSig,
        Signature calldata providerSig
    ) external;

    /// @notice The id `open` assigns to `terms` opened in block `openedAt` on this chain and contract.
    function sessionIdOf(ChannelTerms calldata terms, uint64 openedAt) external view returns (bytes32);

    /// @notice What an open channel holds, or 0 if no channel with this id is open.
    function depositOf(bytes32 sessionId) external view returns (uint256);

    /// @notice The EIP-712 digest a payer (or its session key) signs for a PaymentTicket.
    function hashPaymentTicket(
        bytes32 sessionId,
        address provider,
        bytes32 termsHash,
        uint64 seq,
        uint128 cumulativeAmount,
        bytes32 receiptRoot
    ) external view returns (bytes32);

    /// @notice The EIP-712 digest both parties sign for a SettlementSummary.
    function hashSettlementSummary(
        bytes32 sessionId,
        address provider,
        address payer,
        bytes32 termsHash,
        uint64 finalSeq,
        uint128 finalAmount,
        bytes32 finalReceiptRoot,
        CloseMode mode
    ) external view returns (bytes32);
}
