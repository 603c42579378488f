/**
 * `ioi-settlement` — the protocol core (pure, no I/O): canonical JSON, EIP-712 domain and types, pricing
 * and channel terms, tickets, receipts, fault statements, leaves, the receipt accumulator, settlement summaries, PKT
 * packets, typed errors, the contracts' ABIs and the deployment object. Each role has its own entry point:
 * `ioi-settlement/payer`, `/provider`, `/watchtower`, `/gigs`, `/disputes`, `/arbitration`;
 * `ioi-settlement/abi` holds the ABIs alone and `ioi-settlement/schemas/*.schema.json` the JSON Schemas.
 */
export * from "../core/canonical";
export * from "../core/eip712";
export * from "../core/errors";
export * from "../core/terms";
export * from "../core/ticket";
export * from "../core/receipt";
export * from "../core/receipt-commit";
export * from "../core/fault-statement";
export * from "../core/leaf";
export * from "../core/accumulator";
export * from "../core/summary";
export * from "../core/packets";
export * from "../abi";
export * from "./deployment";
