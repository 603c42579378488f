#!/usr/bin/env node
/**
 * `ioi` — one entry point for every user action on a channel.
 *
 *   npx ioi --help                 list the commands
 *   npx ioi <command> --help       what a command takes
 *
 * Keys never appear on the command line: the acting party's secp256k1 key is read from the environment
 * variable named by --key-env (default IOI_PRIVATE_KEY). Every command prints readable lines, or with
 * --json one JSON object on the last line.
 *
 * This module is the channel commands' table; their code is one module per group (issue 33): `provider-command.ts`
 * (`ioi provider`), `payer-commands.ts` (open, import, stream, call, status, results, export), `settle-commands.ts`
 * (close, anchor, challenge, finalize, watchtower), `gig-commands.ts` (`ioi gig …`), with what they share in
 * `channel-plumbing.ts`.
 */

import { echoHandler } from "../node/echo-worker";
import type { Command } from "./common";
import { LOG_OPTIONS, METRICS_OPTION } from "../node/observability";
import { ALERT_NOTES, ALERT_OPTIONS, TOP_UP_NOTES, TOP_UP_OPTIONS } from "./alert-options";
import { runProvider } from "./provider-command";
import { runCall, runExport, runImport, runOpen, runResults, runStatus, runStream } from "./payer-commands";
import { runAnchor, runChallenge, runClose, runFinalize, runWatchtower } from "./settle-commands";

// The plumbing moved to channel-client/cli/common.ts (issue 13); re-exported for modules that import it from here.
export { addressOption, channelOf, gigIdOf, GLOBAL_HELP, hashOption, loadAccount, need, openStore, sessionOf, uint, UsageError, type Command, type Out } from "./common";

/** The channel commands of `ioi` (channel-client/cli/ioi.ts composes them with the gig and dispute commands). */
export const COMMANDS: Record<string, Command> = {
  provider: {
    summary: "start a provider node on 127.0.0.1 (with its watchtower) and serve until Ctrl-C",
    usage: "ioi provider [--port N] (--price WEI | --terms-file FILE) [--model ID] [--host IP --allow-public] [--worker-timeout MS] [--worker-env NAME]… [--x402-mcp-port PORT] [--metrics HOST:PORT] [--log-level L] [--log-file PATH] [--worker CMD [ARGS…]]   |   ioi provider register|bond|unbond|withdraw|show",
    notes: [
      "  --db postgres://…     serve from PostgreSQL as one of several processes of this provider (decision 0036):",
      "                        each channel is served by the process its payer binds, under a fencing epoch; one",
      "                        elected process runs the watchtower and the finalise/claim duties",
      "  --advertise HOST:PORT the address(es) payers dial this process at, published for the fleet and listed in",
      "                        the signed offer (repeatable or A,B); needed when --host is 0.0.0.0 or ::, which is",
      "                        never published (without --advertise such a process publishes no endpoint)",
      "  --worker CMD [ARGS…]  run this MCP server over stdio and sell its calls (must come last: everything",
      "                        after it is the worker's command line); without it, the demo's echo worker",
      "  --worker-timeout MS   longest a worker call may take (default 30000); a call that fails is not charged",
      "  --worker-env NAME     pass this variable to the worker (repeatable). A worker gets only PATH, HOME, LANG,",
      "                        LC_ALL, LC_CTYPE, TZ, TMPDIR and SYSTEMROOT by default, never the node's key",
      "                        (IOI_PRIVATE_KEY, --key-env) or any IOI_*KEY*/SECRET/TOKEN/PASSWORD variable",
      "  --worker-url URL      sell the MCP server at this Streamable HTTP endpoint instead (SDK client; same limits)",
      "  --x402-mcp-port PORT  also serve x402 clients: an MCP endpoint (Streamable HTTP, http://HOST:PORT/mcp, on --host)",
      "                        answering an unpaid tools/call with x402's PaymentRequired (scheme ioi-channel) and taking",
      "                        the channel ticket in _meta[\"x402/payment\"]; tools/list is free (0 = any free port). In a",
      "                        fleet every process serves it; a payment moves its channel to the process it reaches only",
      "                        when its ticket is the payer's (or its granted key's) and no older than the newest ticket",
      "                        the fleet stored",
      "  --host IP             address to listen on (default 127.0.0.1); a non-loopback one needs --allow-public",
      "  --terms-file FILE     the terms document offered (schemas/terms.schema.json: metered pricing with a cap per",
      "                        call, model snapshot ids, dispute rules, required receipts); --model must be one it lists",
      "  --suite-dir DIR --repository-dir DIR",
      "                        with version 4 terms (milestone streaming): serve tranches; each tranche's Progress Proof",
      "                        reports the bound suite's outcomes on the repository directory as it stands then",
      ...ALERT_NOTES,
    ],
    options: {
      port: { type: "string" },
      price: { type: "string" },
      "terms-file": { type: "string" },
      model: { type: "string" },
      "from-block": { type: "string" },
      host: { type: "string" },
      "allow-public": { type: "boolean" },
      advertise: { type: "string", multiple: true },
      "worker-timeout": { type: "string" },
      "worker-env": { type: "string", multiple: true },
      "suite-dir": { type: "string" },
      "repository-dir": { type: "string" },
      "worker-url": { type: "string" },
      "drop-results": { type: "boolean" },
      "x402-mcp-port": { type: "string" },
      ...METRICS_OPTION,
      ...LOG_OPTIONS,
      ...ALERT_OPTIONS,
    },
    run: runProvider,
  },
  open: {
    summary: "open and fund an ETH channel to a provider; the acting key is the funder and, unless --payer names another, the payer",
    usage: "ioi open --provider ADDR --deposit WEI [--peer HOST:PORT[,HOST:PORT…]] [--price WEI | --terms-file FILE] [--challenge SECONDS] [--payer ADDR [--ref-out FILE] | --payer-wallet W]",
    notes: [
      "  --payer ADDR     a sponsored channel: ADDR signs the tickets (it needs no funds); the acting key funds it and",
      "                   receives every refund; the channel is not stored as the acting key's to stream on",
      "  --payer-wallet W the payer is contract wallet W (ERC-1271) and the acting key signs for it (an owner-key wallet",
      "                   accepts its owner's signature of a digest); the key funds the channel and streams on it",
      "                   (ioi stream --payer-wallet W); decision 0035",
      "  --peer A,B       several endpoints of one provider fleet (or --peer repeated): the terms are asked of the first",
      "                   that answers; the list is stored for ioi stream, call and close (decision 0036)",
    ],
    options: {
      payer: { type: "string" },
      "payer-wallet": { type: "string" },
      "ref-out": { type: "string" },
      provider: { type: "string" },
      price: { type: "string" },
      "terms-file": { type: "string" },
      deposit: { type: "string" },
      challenge: { type: "string" },
      peer: { type: "string", multiple: true },
      "allow-remote": { type: "boolean" },
      policy: { type: "string" },
    },
    run: runOpen,
  },
  import: {
    summary: "store a channel a sponsor opened for you (ioi open --payer): its opening is read from the chain and checked, then you stream on it",
    usage: "ioi import --session ID (--price WEI | --terms-file FILE) [--peer HOST:PORT [--allow-remote]]",
    notes: [
      "  The channel's terms are read from the transaction that opened it; it must name you (the acting key) as payer,",
      "  and its terms hash must be the hash of --price / --terms-file. Nothing is sent: a sponsored payer needs no funds.",
    ],
    options: { session: { type: "string" }, price: { type: "string" }, "terms-file": { type: "string" }, peer: { type: "string" }, "allow-remote": { type: "boolean" } },
    run: runImport,
  },
  stream: {
    summary: "stream paid invocations to the channel's provider over the sealed socket (synthetic, or a request file)",
    usage: "ioi stream --session ID (-n N | --request-file F) [--inflight K] [--peer HOST:PORT[,HOST:PORT…] [--allow-remote]] [--commit-every N] [--commit-seconds T] [--payer-wallet W]",
    notes: [
      "  --request-file F  JSON-RPC requests, one per line; each result (or error) is printed as a JSON line",
      "  --payer-wallet W  the channel's payer is contract wallet W and the acting key signs for it (ioi open --payer-wallet)",
      "  --peer A,B        several endpoints of one provider (or --peer repeated): if the connection drops, the stream resumes on the next",
      "                    one, and on those the provider's signed terms offer lists (decision 0036)",
    ],
    options: { "payer-wallet": { type: "string" }, session: { type: "string" }, n: { type: "string", short: "n" }, inflight: { type: "string" }, peer: { type: "string", multiple: true }, "allow-remote": { type: "boolean" }, "request-file": { type: "string" }, "commit-every": { type: "string" }, "commit-seconds": { type: "string" }, "session-key": { type: "string" }, ...LOG_OPTIONS },
    run: runStream,
  },
  call: {
    summary: "send one paid MCP request to the channel's provider and print its result",
    usage: "ioi call --session ID (--request-file F | --method M [--params JSON]) [--peer HOST:PORT[,HOST:PORT…] [--allow-remote]]",
    notes: ["  e.g. ioi call --session 0x… --method tools/call --params '{\"name\":\"add\",\"arguments\":{\"a\":2,\"b\":3}}'"],
    options: { session: { type: "string" }, "request-file": { type: "string" }, method: { type: "string" }, params: { type: "string" }, peer: { type: "string", multiple: true }, "allow-remote": { type: "boolean" }, "session-key": { type: "string" } },
    run: runCall,
  },
  status: {
    summary: "show channels in the store, or one channel with its on-chain phase",
    usage: "ioi status [--session ID]",
    options: { session: { type: "string" } },
    run: runStatus,
  },
  close: {
    summary: "close a channel: cooperatively with the provider over the socket, or --unilateral",
    usage: "ioi close --session ID [--unilateral] [--peer HOST:PORT[,HOST:PORT…] [--allow-remote]]",
    notes: [
      "  --peer A,B  several endpoints of one provider fleet (or --peer repeated): tried in order; a connection that fails",
      "              moves to the next, which is sent the very same signed close proposal (never a new one), so a close",
      "              the failed process may have co-signed is answered with that co-signature (decision 0036)",
    ],
    options: { session: { type: "string" }, unilateral: { type: "boolean" }, peer: { type: "string", multiple: true }, "allow-remote": { type: "boolean" }, ...LOG_OPTIONS },
    run: runClose,
  },
  anchor: {
    summary: "anchor the provider's newest signed receipt commit when the recorded root lags it (payer or funder)",
    usage: "ioi anchor --session ID [--db PATH]",
    notes: [
      "Reads the channel's recorded close (or cooperative settlement) from the chain. When its root covers fewer of",
      "the payer's receipts than the provider's newest signed receipt commit in the store, anchors that commit, so",
      "`ioi dispute build-session` can prove every receipt it covers. A no-op when nothing lags or it is anchored.",
    ],
    options: { session: { type: "string" } },
    run: runAnchor,
  },
  challenge: {
    summary: "answer a stale unilateral close with the newest ticket in the store",
    usage: "ioi challenge --session ID",
    options: { session: { type: "string" } },
    run: runChallenge,
  },
  finalize: {
    summary: "pay out a unilaterally closed channel after its challenge window",
    usage: "ioi finalize --session ID",
    options: { session: { type: "string" } },
    run: runFinalize,
  },
  watchtower: {
    summary: "watch the escrow and answer stale closes of the store's channels; finalise when due",
    usage: "ioi watchtower [--from-block N] [--once] [--metrics HOST:PORT] [--log-level L] [--log-file PATH] [--alerts] [--alert-webhook URL] [--top-up-below A --top-up-to A --top-up-max-per-day A] [--prune-archive-dir DIR [--prune-every SECONDS] [--dispute-manager ADDRESS]]",
    notes: [
      ...ALERT_NOTES,
      ...TOP_UP_NOTES,
      "  --prune-archive-dir DIR: also archive and prune settled channels no dispute can reach any more, as",
      "  `ioi store prune` does, at start and every --prune-every seconds (default 3600).",
    ],
    options: { "from-block": { type: "string" }, once: { type: "boolean" }, ...METRICS_OPTION, ...LOG_OPTIONS, ...ALERT_OPTIONS, ...TOP_UP_OPTIONS, "prune-archive-dir": { type: "string" }, "prune-every": { type: "string" }, "dispute-manager": { type: "string" } },
    run: runWatchtower,
  },
  results: {
    summary: "print again every paid call's request, result (or error) and receipt from the payer's store, as JSON lines",
    usage: "ioi results --session ID [--from-seq N] [--db PATH]",
    notes: [
      "  Each result is stored before its receipt counts (ioi call, ioi stream), so after Ctrl-C or a crash every",
      "  answered paid call is here. `verified` says the stored request and output hash to the receipt's hashes.",
    ],
    options: { session: { type: "string" }, "from-seq": { type: "string" } },
    run: runResults,
  },
  export: {
    summary: "print a session's tickets and receipts as JSON lines, with the on-chain root",
    usage: "ioi export --session ID [--db PATH | --db postgres://…]",
    options: { session: { type: "string" } },
    run: runExport,
  },
};

/** The demo's default worker (no --worker): answers with the keccak of the params (deterministic, no I/O). */
export { echoHandler };
