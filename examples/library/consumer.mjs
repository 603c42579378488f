// An ES module importing the package's CommonJS build by name (Node's CommonJS named-export detection).
import { createPayer, SqliteStore } from "ioi-settlement/payer";
import { startProvider } from "ioi-settlement/provider";
import { createWatchtower } from "ioi-settlement/watchtower";
import { createGigs } from "ioi-settlement/gigs";
import { createDisputes } from "ioi-settlement/disputes";
import { createArbitration } from "ioi-settlement/arbitration";
import { canon, gasEscrowAbi } from "ioi-settlement";

const exported = { createPayer, SqliteStore, startProvider, createWatchtower, createGigs, createDisputes, createArbitration, canon };
const missing = Object.entries(exported).filter(([, value]) => typeof value !== "function").map(([name]) => name);
console.log(JSON.stringify({ language: "esm", missing, abiEntries: gasEscrowAbi.length }));
