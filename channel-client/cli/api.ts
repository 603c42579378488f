/**
 * `ioi api serve`: the JSON-RPC control API for integrators (channel-client/api/server.ts, decision 0029) until Ctrl-C.
 * It acts as the key in --key-env, on the chain's deployment record, with the store in --db (default
 * .data/payer.db). The bearer token comes from $IOI_API_TOKEN (or --token-env NAME), else from --token-file,
 * which is created with a fresh random token and mode 0600 when absent.
 */
import { cliDeployment, rpcClients, readingOf } from "./chain";
import { boundedUint, loadAccount, openStore, storePath, UsageError, type Command, type CommandGroup } from "./common";
import { StreamJournal } from "../node/stream-journal";
import { ApiError } from "../api/errors";
import { SubscriptionHub } from "../api/subscriptions";
import type { Deployment } from "../roles/deployment";

export const API_SERVE_COMMAND: Command = {
  summary: "serve the JSON-RPC control API (HTTP and WebSocket) on loopback, with a bearer token",
  usage: "ioi api serve [--host 127.0.0.1] [--port 8645] [--token-file PATH] [--token-env NAME] [--allow-public] [--max-request-bytes N] [--db PATH]",
  notes: [
    "  --host H               address to bind (default 127.0.0.1; anything but loopback also needs --allow-public)",
    "  --port N               TCP port (default 8645; 0 = any free port)",
    "  --token-env NAME       environment variable holding the bearer token (default IOI_API_TOKEN, if set)",
    "  --token-file PATH      else the token file (default .data/api.token; created, mode 0600, when absent)",
    "  --allow-public         allow a non-loopback --host (put TLS in front of it: the token crosses in the clear)",
    "  --max-request-bytes N  largest HTTP body or WebSocket frame (default 1048576)",
    "Methods and their params: schemas/openrpc.json (OpenRPC 1.3). Every request sends `Authorization: Bearer <token>`.",
    "streams.list / streams.get and the streams topic read the stream journals beside the store (<db>.streams/), as ioi milestones stream writes them.",
  ],
  examples: ["ioi api serve --db .data/payer.db", "curl -s -H \"Authorization: Bearer $(cat .data/api.token)\" -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"node.info\"}' http://127.0.0.1:8645/"],
  options: {
    host: { type: "string" },
    port: { type: "string" },
    "token-file": { type: "string" },
    "token-env": { type: "string" },
    "allow-public": { type: "boolean" },
    "max-request-bytes": { type: "string" },
  },
  run: async (values, out) => {
    const { startApiServer, loadOrCreateToken, isLoopback } = await import("../api/server");
    const host = (values.host as string | undefined) ?? "127.0.0.1";
    const listenPublic = values["allow-public"] === true;
    if (!isLoopback(host) && !listenPublic) throw new UsageError(`--host ${host} is not loopback: pass --allow-public to expose the API beyond this machine.`);
    const port = Number(boundedUint(values, "port", "TCP port (0 = any free port)", 0n, 65535n, 8645n));
    const maxRequestBytes = Number(boundedUint(values, "max-request-bytes", "largest request in bytes", 1024n, 64n << 20n, 1n << 20n));
    const tokenEnv = (values["token-env"] as string | undefined) ?? "IOI_API_TOKEN";
    let token = process.env[tokenEnv];
    let tokenFile: string | undefined;
    if (values["token-env"] !== undefined && !token) throw new UsageError(`--token-env names ${tokenEnv}, which is not set.`);
    if (token !== undefined && token.length < 32) throw new UsageError(`$${tokenEnv} must hold a token of at least 32 characters.`);
    if (!token) {
      tokenFile = (values["token-file"] as string | undefined) ?? ".data/api.token";
      try {
        token = loadOrCreateToken(tokenFile).token;
      } catch (error) {
        throw new UsageError(error instanceof ApiError ? error.shortMessage : `Cannot write the token file ${tokenFile}: ${(error as Error).message.split("\n")[0]}.`);
      }
    }
    const account = loadAccount(values);
    const { publicClient, wallet, chainId } = await rpcClients(values, account);
    const reading = readingOf(values, chainId);
    const resolved = await cliDeployment(values, publicClient);
    const deployment: Deployment = { chainId: resolved.chainId, contracts: resolved.contracts, deploymentBlock: resolved.deploymentBlock };
    const store = openStore(values, "payer");
    try {
      const server = await startApiServer({
        context: { deployment, publicClient, wallet: wallet!, store, hub: new SubscriptionHub(), gigs: new Set(), streamsDir: StreamJournal.dirOfStore(storePath(values, "payer")) },
        token,
        host,
        port,
        listenPublic,
        maxRequestBytes,
        pollMs: Math.max(reading.pollMs, 250),
        onError: (error) => process.stderr.write(`api: ${(error as Error).message?.split("\n")[0] ?? String(error)}\n`),
      });
      // The ready line is always JSON, so a supervising process can read the port (never the token itself).
      console.log(JSON.stringify({ event: "api.ready", url: server.url, ws: server.wsUrl, account: account.address, chainId, ...(tokenFile ? { tokenFile } : { tokenEnv }) }));
      await new Promise<void>((resolve) => {
        process.once("SIGINT", resolve);
        process.once("SIGTERM", resolve);
      });
      await server.close();
      out.lines.push("The control API is stopped.");
    } finally {
      await store.close();
    }
  },
};

export const API_GROUP: CommandGroup = { summary: "the JSON-RPC control API for integrators (ioi api --help)", commands: { serve: API_SERVE_COMMAND } };
