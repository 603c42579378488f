/**
 * The hostile side of the flood bench (issue 28 item 5) in a process of its own, so that its sockets and
 * timers do not share the measured nodes' event loop. Loopback only; bounded by `total`; exits when done.
 *
 *   ts-node --transpile-only scripts/flood-process.ts <port> <provider address> <total> <concurrency> <holdMs>
 *
 * Prints one JSON line `{ "event": "flood.started" }` once it runs and `{ "event": "flood.done", ...stats }`.
 */
import { startFlood } from "./flood";

async function main(): Promise<void> {
  const [port, provider, total, concurrency, holdMs] = process.argv.slice(2);
  const flood = startFlood({ port: Number(port), provider: provider as `0x${string}`, total: Number(total), concurrency: Number(concurrency), holdMs: Number(holdMs) });
  console.log(JSON.stringify({ event: "flood.started" }));
  const started = performance.now();
  const stats = await flood.done;
  console.log(JSON.stringify({ event: "flood.done", ms: Math.round(performance.now() - started), ...stats }));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
