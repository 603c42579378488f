/**
 * Deterministic dispute arbitration: input documents (ChallengePackage, ICS, bundles), Lane 1 objective
 * checks with UPIP-recorded test replays in the sealed judge engine, and the Resolution with its EIP-712 remedy.
 */
export * from "./errors";
export * from "./document";
export * from "./bundle";
export * from "./ics";
export * from "./package";
export * from "./upip";
export * from "./engine";
export * from "./replay";
export * from "./pinned";
export * from "./checks";
export * from "./resolution";
