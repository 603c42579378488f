/**
 * Deterministic dispute arbitration: input documents (ChallengePackage, ICS, bundles), Lane 1 objective
 * checks with UPIP-recorded test replays in the sealed judge engine, and the Resolution with its EIP-712 remedy.
 */
export * from "./documents/errors";
export * from "./documents/document";
export * from "./documents/bundle";
export * from "./documents/ics";
export * from "./documents/package";
export * from "./documents/upip";
export * from "./engine/engine";
export * from "./lanes/replay";
export * from "./lanes/pinned";
export * from "./lanes/checks";
export * from "./lanes/resolution";
