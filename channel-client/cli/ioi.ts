#!/usr/bin/env node
/**
 * `ioi` — one entry point for every user action: the channel commands (channel-client/cli/channel.ts), the gig
 * commands, the dispute, case and arbitrator commands (channel-client/cli/arbitration.ts) and the registry and money commands
 * (channel-client/cli/money.ts), composed here into one commander program. Neither command set imports the other.
 *
 *   npx ioi --help                 list the commands
 *   npx ioi <command> --help       what a command takes, with each option's default and examples
 *   npx ioi --version
 *
 * Every failure is one sentence on stderr and a non-zero exit (2: a usage mistake, 1: a failure, 3: a negative
 * outcome a command reports); with --json the last line on stdout is one JSON object, `ok` true or false.
 */
import { splitWorkerArgv } from "../node/mcp-worker";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { Command as Commander, CommanderError, Option } from "commander";

import { BaseError } from "../core/errors";
import { COMMANDS } from "./channel";
import { GIG_COMMANDS, GIG_HELP, GIG_OPTIONS } from "./gig-commands";
import { ARBITRATE_COMMAND, DISPUTE_GROUPS, DISPUTE_HELP, DISPUTE_OPTIONS } from "./arbitration";
import { VET_COMMAND } from "./vet";
import { BUNDLE_HASH_COMMAND } from "./bundle-hash";
import { MCP_COMMAND } from "./mcp";
import { UI_COMMAND } from "./ui";
import { forgetPromptedPasswords, GLOBAL_HELP, GLOBAL_OPTIONS, promptAccountPasswords, UsageError, type Command, type CommandOptions, type Out } from "./common";
import { MONEY_COMMANDS, PROVIDER_COMMANDS, REGISTRY_HELP, REGISTRY_OPTIONS } from "./money";
import { OPTION_HELP } from "./option-help";
import { SESSION_KEY_COMMANDS } from "./session-key";
import { API_GROUP } from "./api";
import { DEVNET_GROUP, FAUCET_COMMAND } from "./devnet";
import { STORE_GROUP } from "./store";
import { ACCOUNT_GROUP } from "./account";
import { MILESTONES_GROUP } from "./milestones";

/** The package's version, from the package.json above this file (in the source tree or a built dist/). */
export function packageVersion(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, "package.json");
    if (existsSync(file)) {
      const { name, version } = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string };
      if (name === "ioi-settlement" && version) return version;
    }
    if (path.dirname(dir) === dir) return "unknown";
  }
}

/** Edit distance, for "did you mean" on subcommand names commander does not see (groups with an action). */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const kept = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = kept;
    }
  }
  return row[b.length]!;
}

export function suggestion(word: string, candidates: string[]): string {
  const best = candidates
    .map((c) => ({ c, d: distance(word, c) }))
    .filter(({ c, d }) => d <= Math.max(1, Math.floor(c.length / 3)) || c.startsWith(word))
    .sort((x, y) => x.d - y.d)[0];
  return best ? ` Did you mean "${best.c}"?` : "";
}

/** What the readable help shows for an option: "--deposit WEI", "-n, --n N". */
const optionTerms = new WeakMap<Option, string>();

/** One program per run: commander keeps parsed values on its command objects. */
export function buildProgram(io: CliState = { code: 0 }): Commander {
  const program = new Commander("ioi");
  program
    .description("Payment channels, gig escrows and dispute arbitration on an EVM chain.")
    .usage("<command> [options]   (ioi <command> --help for a command's options)")
    .version(packageVersion(), "-V, --version", "print the version")
    .helpOption("-h, --help", "this help")
    .helpCommand(false)
    .exitOverride()
    // `ioi provider show --rpc URL`: options after a subcommand are the subcommand's, not its parent's.
    .enablePositionalOptions()
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (s) => console.log(s.replace(/\n$/, "")),
      writeErr: (s) => console.error(s.replace(/\n$/, "")),
      outputError: () => {}, // reported by main() as one sentence with the command's usage
    })
    .configureHelp({
      subcommandTerm: (cmd) => cmd.name(),
      optionTerm: (option) => optionTerms.get(option) ?? option.flags,
      sortSubcommands: false,
    });
  const globalHelp = ["Global options:", ...GLOBAL_HELP].join("\n");
  program.addHelpText("after", `\n${globalHelp}`);

  for (const [name, command] of Object.entries(COMMANDS)) {
    if (name === "provider") continue;
    leaf(program, name, command, {}, [], "", io);
  }
  // `ioi provider` starts the node; `ioi provider register|bond|unbond|withdraw|show` use the registry.
  const provider = leaf(program, "provider", COMMANDS.provider!, {}, [], "", io);
  provider.argument("[subcommand]").enablePositionalOptions();
  group(provider, "provider", PROVIDER_COMMANDS, REGISTRY_OPTIONS, REGISTRY_HELP, "Registry options:", io);
  leaf(program, "ui", UI_COMMAND, {}, [], "", io);
  leaf(program, "mcp", MCP_COMMAND, {}, [], "", io);
  for (const [name, command] of Object.entries(MONEY_COMMANDS)) leaf(program, name, command, REGISTRY_OPTIONS, REGISTRY_HELP, "Registry options:", io);

  const sessionKey = program.command("session-key").description("session keys of a channel: authorize (a signed grant), revoke, list (ioi session-key --help)");
  group(sessionKey, "session-key", SESSION_KEY_COMMANDS, {}, [], "", io);
  const gig = program.command("gig").description("outcome-based gigs: fund, accept, deliver, settle (ioi gig --help)");
  group(gig, "gig", { ...GIG_COMMANDS, vet: VET_COMMAND, hash: BUNDLE_HASH_COMMAND }, GIG_OPTIONS, GIG_HELP, "Gig options:", io);
  for (const [name, g] of Object.entries(DISPUTE_GROUPS)) {
    const cmd = program.command(name).description(g.summary);
    group(cmd, name, g.commands, DISPUTE_OPTIONS, DISPUTE_HELP, "Dispute options:", io);
  }
  leaf(program, "arbitrate", ARBITRATE_COMMAND, DISPUTE_OPTIONS, DISPUTE_HELP, "Dispute options:", io);
  group(program.command("api").description(API_GROUP.summary), "api", API_GROUP.commands, {}, [], "", io);
  group(program.command("milestones").description(MILESTONES_GROUP.summary), "milestones", MILESTONES_GROUP.commands, {}, [], "", io);
  leaf(program, "faucet", FAUCET_COMMAND, {}, [], "", io);
  group(program.command("account").description(ACCOUNT_GROUP.summary), "account", ACCOUNT_GROUP.commands, {}, [], "", io);
  group(program.command("devnet").description(DEVNET_GROUP.summary), "devnet", DEVNET_GROUP.commands, {}, [], "", io);
  group(program.command("store").description(STORE_GROUP.summary), "store", STORE_GROUP.commands, {}, [], "", io);
  return program;
}

/**
 * Adds the subcommands of a group. With no subcommand the group prints its help; an unknown one is refused
 * with a suggestion (commander's own "did you mean" does not run once a group has an action).
 */
function group(
  cmd: Commander,
  name: string,
  commands: Record<string, Command>,
  extra: CommandOptions,
  extraHelp: string[],
  extraTitle: string,
  io: CliState,
): void {
  const isProvider = name === "provider";
  if (!isProvider) {
    cmd.usage("<subcommand> [options]   (ioi " + name + " <subcommand> --help for its options)").argument("[subcommand]").allowUnknownOption().allowExcessArguments();
    cmd.addHelpText("after", `\n${[extraTitle, ...extraHelp].join("\n")}\n\n${["Global options:", ...GLOBAL_HELP].join("\n")}`);
  }
  if (name === "dispute") cmd.addHelpText("after", "\n(`ioi dispute escalate` is gone: a party appeals a decided case with `ioi case appeal`.)");
  for (const [sub, command] of Object.entries(commands)) leaf(cmd, sub, command, extra, extraHelp, extraTitle, io, name);
  if (isProvider) return;
  cmd.action((sub: string | undefined) => {
    if (sub === undefined || sub === "help") {
      cmd.outputHelp();
      io.code = 0;
      return;
    }
    const gone = name === "dispute" && sub === "escalate" ? " `ioi dispute escalate` is gone: a party appeals a decided case with `ioi case appeal`." : "";
    console.error(`Unknown ${name} subcommand "${sub}".${gone || suggestion(sub, Object.keys(commands))}\n\n${cmd.helpInformation().replace(/\n$/, "")}`);
    io.code = 2;
  });
}

/** Adds one command whose options come from its table entry, running it through {@link runParsed}. */
function leaf(
  parent: Commander,
  name: string,
  command: Command,
  extra: CommandOptions,
  extraHelp: string[],
  extraTitle: string,
  io: CliState,
  groupName?: string,
): Commander {
  const fullName = groupName ? `${groupName} ${name}` : name;
  const cmd = parent.command(name).description(command.summary);
  const prefix = `ioi ${fullName}`;
  cmd.usage(command.usage.startsWith(prefix) ? command.usage.slice(prefix.length).trim() : command.usage);
  const all: CommandOptions = { ...GLOBAL_OPTIONS, ...extra, ...command.options };
  const own = new Set(Object.keys(command.options));
  const attributes: [string, string][] = [];
  for (const [option, spec] of Object.entries(all)) {
    const help = OPTION_HELP[option];
    const value = spec.type === "string" ? ` <${(help?.value ?? "VALUE").replace(/[^A-Za-z0-9_-]/g, "_")}>` : "";
    const o = new Option(`${spec.short ? `-${spec.short}, ` : ""}--${option}${value}`, help?.text ?? "");
    optionTerms.set(o, `${spec.short ? `-${spec.short}, ` : ""}--${option}${spec.type === "string" ? ` ${help?.value ?? "VALUE"}` : ""}`);
    if (spec.multiple) o.argParser((v: string, previous: string[] | undefined) => [...(previous ?? []), v]);
    if (!own.has(option)) o.hideHelp();
    cmd.addOption(o);
    attributes.push([option, o.attributeName()]);
  }
  const sections: string[] = [];
  if (command.notes?.length) sections.push(["Details:", ...command.notes].join("\n"));
  if (command.examples?.length) sections.push(["Examples:", ...command.examples.map((e) => `  $ ${e}`)].join("\n"));
  if (extraHelp.length > 0) sections.push([extraTitle, ...extraHelp].join("\n"));
  sections.push(["Global options:", ...GLOBAL_HELP].join("\n"));
  cmd.addHelpText("after", `\n${sections.join("\n\n")}`);
  cmd.configureOutput({
    writeOut: (s) => console.log(s.replace(/\n$/, "")),
    writeErr: (s) => console.error(s.replace(/\n$/, "")),
    outputError: (message) => {
      const sentence = message.replace(/^error: /, "").replace(/\n\(Did you mean (.*)\?\)/, "; did you mean $1?").replace(/\n+$/, "");
      console.error(`ioi ${fullName}: ${sentence}${/[.?]$/.test(sentence) ? "" : "."}\nUsage: ${command.usage}`);
    },
  });
  cmd.action(async (...args: unknown[]) => {
    const self = args[args.length - 1] as Commander;
    // A command with an operand (`ioi devnet time +1d`) takes its first positional argument as that option.
    const operand = (command as Command & { operand?: string }).operand;
    const operands = operand && self.args.length > 0 && self.getOptionValue(operand) === undefined ? self.args.slice(1) : self.args;
    if (operand && operands !== self.args) self.setOptionValue(operand, self.args[0]);
    if (operands.length > 0) {
      const known = self.commands.map((c) => c.name());
      const what = known.length ? `Unknown ${fullName} subcommand "${operands[0]}".${suggestion(operands[0]!, known)}` : `ioi ${fullName} takes ${operand ? `one positional argument; received "${operands[0]}" too` : `no positional arguments; received "${operands[0]}"`}.`;
      console.error(`${what}\nUsage: ${command.usage}`);
      io.code = 2;
      return;
    }
    const opts = self.opts();
    const values: Record<string, string | boolean | undefined> = {};
    for (const [option, attribute] of attributes) if (opts[attribute] !== undefined) values[option] = opts[attribute] as string | boolean;
    if (fullName === "provider" && io.worker !== undefined) values.worker = io.worker as unknown as string;
    io.code = await runParsed(fullName, command, values);
  });
  return cmd;
}

/** Runs a parsed command and prints its outcome: its lines, or one sentence for a failure; `--json` last. */
async function runParsed(name: string, command: Command, values: Record<string, string | boolean | undefined>): Promise<number> {
  const out: Out = { json: Boolean(values.json), lines: [], result: {} };
  try {
    // A signing command's --account without --password-file: asked at the terminal (the account group's own
    // commands handle their passwords themselves).
    if (!name.startsWith("account")) await promptAccountPasswords(values);
    await command.run(values, out);
  } catch (error) {
    const e = error as BaseError;
    const message = describeError(error);
    console.error(`ioi ${name} failed — ${message}${e instanceof UsageError ? `\nUsage: ${command.usage}` : ""}`);
    if (out.json) console.log(JSON.stringify({ ok: false, error: errorName(error), message: message.slice(message.indexOf(": ") + 2) }));
    return e instanceof UsageError ? 2 : 1;
  } finally {
    forgetPromptedPasswords();
  }
  for (const line of out.lines) console.log(line);
  if (out.json) console.log(JSON.stringify({ ok: true, ...out.result }));
  return out.exitCode ?? 0;
}

const errorName = (error: unknown): string => (error instanceof Error ? error.name || "Error" : "Error");

/** "Name: first line of the message", never a stack: what a failure prints. */
export function describeError(error: unknown): string {
  const e = error as BaseError;
  const text = e instanceof BaseError ? e.shortMessage : error instanceof Error ? (error as Error & { shortMessage?: string }).shortMessage ?? error.message : String(error);
  return `${errorName(error)}: ${String(text).split("\n")[0]}`;
}

/** What one run shares between its commands: the exit code, and `ioi provider --worker`'s command line. */
type CliState = { code: number; worker?: string[] };

/** Runs `ioi` with `argv` (without the node and script paths) and resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  const io: CliState = { code: 0 };
  if (argv[0] === "provider") {
    // `--worker CMD [ARGS…]` ends the provider's own options: the rest is the worker's command line.
    const { own, worker } = splitWorkerArgv(argv.slice(1));
    argv = ["provider", ...own];
    io.worker = worker;
  }
  const program = buildProgram(io);
  if (argv.length === 0) {
    program.outputHelp();
    return 0;
  }
  try {
    await program.parseAsync(argv, { from: "user" });
    return io.code;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === "commander.helpDisplayed" || error.code === "commander.version" || error.code === "commander.help") return 0;
      if (error.code === "commander.unknownCommand") {
        const sentence = error.message.replace(/^error: /, "").replace(/\n\(Did you mean (.*)\?\)/, "; did you mean $1?");
        console.error(`ioi: ${sentence}${/[.?]$/.test(sentence) ? "" : "."} Run \`ioi --help\` for the commands.`);
      }
      return 2;
    }
    console.error(`ioi failed — ${describeError(error)}`);
    return 1;
  }
}

/**
 * The process entry: exits only once stdout and stderr have drained (a pipe reader gets every line), and a
 * reader that goes away early (`ioi export | head -c 1`) ends the run quietly instead of with EPIPE.
 */
export async function runProcess(argv: string[]): Promise<never> {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
      throw error;
    });
  }
  let code: number;
  try {
    code = await main(argv);
  } catch (error) {
    console.error(`ioi failed — ${describeError(error)}`);
    code = 1;
  }
  process.exitCode = code;
  await new Promise<void>((resolve) => process.stdout.write("", () => resolve()));
  await new Promise<void>((resolve) => process.stderr.write("", () => resolve()));
  process.exit(code);
}

if (require.main === module) void runProcess(process.argv.slice(2));
