/**
 * Deterministic dispute arbitration: input documents (ChallengePackage, ICS, bundles), Lane 1 objective
 * checks with sandboxed, UPIP-recorded test replays, and the Resolution with its EIP-712 remedy.
 */
export * from "./errors";
export * from "./document";
export * from "./bundle";
export * from "./ics";
export * from "./package";
export * from "./upip";
export * from "./sandbox";
export * from "./checks";
export * from "./resolution";
