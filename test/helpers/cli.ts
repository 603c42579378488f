/** Runs the `ioi` CLI in-process for tests, capturing what it prints and restoring the environment. */
import { main } from "../../src/cli/ioi";

export async function runCli(argv: string[], env: Record<string, string | undefined> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const saved = { log: console.log, error: console.error };
  const savedEnv = { ...process.env };
  Object.assign(process.env, env);
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k];
  console.log = (...args: unknown[]) => out.push(args.join(" "));
  console.error = (...args: unknown[]) => err.push(args.join(" "));
  try {
    const code = await main(argv);
    return { code, out: out.join("\n"), err: err.join("\n") };
  } finally {
    console.log = saved.log;
    console.error = saved.error;
    process.env = savedEnv;
  }
}
