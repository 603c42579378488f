/**
 * `ioi-settlement` — the protocol core (pure, no I/O): canonical JSON, EIP-712 domain and types, pricing
 * and channel terms, tickets, receipts, leaves, the receipt accumulator, settlement summaries, PKT
 * packets, typed errors, the contracts' ABIs and the deployment object. Each role has its own entry point:
 * `ioi-settlement/payer`, `/provider`, `/watchtower`, `/gigs`, `/disputes`, `/arbitration`;
 * `ioi-settlement/abi` holds the ABIs alone and `ioi-settlement/schemas/*.schema.json` the JSON Schemas.
 */
export * from "../channel-client/canonical";
export * from "../channel-client/eip712";
export * from "../channel-client/errors";
export * from "../channel-client/terms";
export * from "../channel-client/ticket";
export * from "../channel-client/receipt";
export * from "../channel-client/receipt-commit";
export * from "../channel-client/leaf";
export * from "../channel-client/accumulator";
export * from "../channel-client/summary";
export * from "../channel-client/packets";
export * from "../abi";
export * from "./deployment";
