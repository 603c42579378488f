// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @dev Exposes the signature check GasEscrow's `_recover` makes (`ECDSA.tryRecover(digest, r, vs)`) to the
///      known-answer tests of the off-chain secp256k1 backends; never deployed outside them.
contract SignatureHarness {
    /// @return recovered The signer, or zero. @return err The OpenZeppelin RecoverError (0: none, 3: high s).
    function tryRecover(bytes32 digest, bytes32 r, bytes32 vs) external pure returns (address recovered, uint8 err) {
        ECDSA.RecoverError e;
        (recovered, e,) = ECDSA.tryRecover(digest, r, vs);
        err = uint8(e);
    }
}
