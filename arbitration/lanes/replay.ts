/**
 * One Lane 1 replay: the bound test suite against a deliverable, each in its own sealed engine instance
 * (`engine.ts`), with the trusted preludes of `prelude.ts`, pinned clocks and seeds, and budgets counted in
 * interpreter steps, bytes of memory and bytes of output — never in time.
 *
 * - A **step** is one call of the engine's interrupt handler (QuickJS calls it after a fixed number of
 *   bytecode branches and calls), so the count for the same code and inputs is the same on every machine.
 * - The **suite** has `stepsPerTest` steps to load (register its tests) and again for each test; going over,
 *   running out of memory, printing more than `outputBytes`, crashing (see `prelude.ts`), registering no
 *   tests, or a test whose promise never settles is a **suite fault**: attributed to the suite's author.
 * - The **deliverable** has `stepsPerTest` steps for all of its work within one test (module loading
 *   included); going over, running out of memory or stack, or printing more than `outputBytes` in all fails
 *   **that test** whatever the suite makes of it, attributed to the deliverable; the deliverable's instance
 *   is then discarded and the next test that calls it gets a fresh one.
 * - A wall-clock **watchdog** (`watchdogMs`, the arbitrator's setting, never the ICS's) protects the host
 *   only: if it fires the replay throws {@link JudgeHostFaultError} and nothing is decided.
 *
 * The outcome is a pure function of (suite, deliverable, runner, budgets, pinned inputs, engine, preludes):
 * the UPIP record (`upip.ts`) captures all of them and the result.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from "quickjs-emscripten-core";
import { hexToBytes, type Hex } from "viem";

import { BaseError } from "../../channel-client/core/errors";
import { bundleFromJson, type Bundle } from "../documents/bundle";
import { newSealedInstance, type FuelGauge, type SealedInstance } from "../engine/engine";
import { UnsupportedRunnerError } from "../documents/errors";
import type { Runner } from "../documents/ics";
import { DELIVERABLE_PRELUDE, MAX_MESSAGE_LENGTH, MAX_NAME_LENGTH, MAX_TESTS, SUITE_PRELUDE } from "../engine/prelude";
import { upipRecord, upipResultOf, upipState, judgeDeps, type UpipRecord } from "../documents/upip";

/** What one side of a replay is told about the world: its clock (ms since the epoch) and its PRNG seed (32 bytes). */
export type PinnedInputs = { clockMs: number; seed: Hex };

/** Deterministic budgets of a replay. */
export type Budgets = { stepsPerTest: number; memoryBytes: number; outputBytes: number };

/** Why the deliverable failed a test regardless of the suite's verdict. */
export type DeliverableFault = "DELIVERABLE_STEP_BUDGET" | "DELIVERABLE_MEMORY_LIMIT" | "DELIVERABLE_OUTPUT_LIMIT";

/** Why the suite itself is at fault (its author's responsibility). */
export type SuiteFaultCode =
  | "SUITE_CRASHED"
  | "SUITE_INVALID"
  | "SUITE_STEP_BUDGET"
  | "SUITE_MEMORY_LIMIT"
  | "SUITE_OUTPUT_LIMIT"
  | "SUITE_NEVER_SETTLED";

export type SuiteFault = { code: SuiteFaultCode; detail: string };

/** One registered test's result. `fault` set means the deliverable failed it by exhausting a budget. */
export type TestResult = { name: string; passed: boolean; fault: DeliverableFault | null; detail: string };

/** One call into the deliverable: which test, and sha256 of the request and of the answer (to locate divergence). */
export type CallTrace = { test: number; request: string; answer: string };

export type ReplayParameters = {
  suite: Bundle;
  deliverable: Bundle;
  runner: Runner;
  budgets: Budgets;
  inputs: { suite: PinnedInputs; deliverable: PinnedInputs };
  /** UPIP L3 `actor` and `intent`. */
  actor: string;
  intent: string;
  /** Host protection only; default {@link DEFAULT_WATCHDOG_MS}. */
  watchdogMs?: number;
  /**
   * Run only the test registered at this index (a stream sample, decision 0037): the suite still loads and
   * registers every test; the record's `intent` should name the index. Absent: every test.
   */
  only?: number;
};

export type ReplayOutcome = {
  record: UpipRecord;
  tests: TestResult[];
  suiteFault: SuiteFault | null;
  /** The suite's transcript: its console output and one harness line per test, then the summary line. */
  stdout: string;
  /** The deliverable's console output (within its budget). */
  stderr: string;
  calls: CallTrace[];
  steps: { suite: number; deliverable: number };
  /** How many tests the suite registered (with `only`, `tests` holds at most one of them). */
  registered: number;
};

/** The wall-clock watchdog fired or the engine failed: the host could not complete the replay. Never a verdict. */
export class JudgeHostFaultError extends BaseError {
  override name = "JudgeHostFaultError" as const;
}

/**
 * Fuel (`fuel.ts`: one unit per function entry or loop iteration of the engine) per step of a budget: an
 * ICS `step_budget` of n gives each side n × FUEL_PER_STEP units per test (and the suite as much to load).
 */
export const FUEL_PER_STEP = 20_000n;

/**
 * Fuel a message costs its sender per character, and gives its receiver: what reading it (parsing,
 * canonicalising, comparing) costs the receiver, so a large answer is paid for by the side that produced it.
 */
export const BRIDGE_FUEL_PER_CHAR = 300n;

/** Fuel an instance gets to install its prelude and read its bundle (fixed, the same for every replay). */
const INSTALL_FUEL = 1_000_000_000n;

/** Default memory budget of each instance. */
export const DEFAULT_MEMORY_BYTES = 32 * 1024 * 1024;

/** Default host watchdog of one replay. */
export const DEFAULT_WATCHDOG_MS = 600_000;

/** The only runner program: the suite's entry file run as a CommonJS module in the sealed engine. */
export const RUNNER_PROGRAM = "node";

/**
 * QuickJS's own stack limit (of the engine's stack in linear memory): small enough that QuickJS throws its
 * deterministic "stack overflow" long before the host's native stack (which wasm frames also use) runs out.
 */
const MAX_STACK_BYTES = 128 * 1024;

/** Derives the four 32-bit words of the in-engine PRNG from a 32-byte seed. */
function seedWords(seed: Hex): number[] {
  const bytes = hexToBytes(seed);
  if (bytes.length !== 32) throw new UnsupportedRunnerError("seed", "must be 32 bytes.");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return [0, 4, 8, 12].map((offset) => view.getUint32(offset) ^ view.getUint32(offset + 16));
}

const sha256Hex = (text: string): string => bytesToHex(sha256(utf8ToBytes(text)));

/** The side that exhausted its fuel inside a call (the instance trapped): never used again. */
class FuelTrap extends Error {}

/** A sealed instance with its runtime, context, fuel budget and output buffer. */
class Side {
  /** Fuel used in finished phases. */
  spent = 0n;
  /** The current phase's budget (grows with credits). */
  phaseBudget = 0n;
  output: string[] = [];
  outputBytes = 0;
  overBudget: "steps" | "output" | null = null;
  /** The instance trapped with its fuel gone: it stopped at the unit where it ran out and is dead. */
  exhausted = false;
  hostFault = false;
  readonly runtime: QuickJSRuntime;
  readonly context: QuickJSContext;
  readonly fuel: FuelGauge;
  handles: Record<string, QuickJSHandle> = {};

  constructor(
    instance: SealedInstance,
    readonly budgets: Budgets,
    readonly deadline: number,
  ) {
    this.fuel = instance.fuel;
    this.fuel.value = INSTALL_FUEL;
    this.phaseBudget = INSTALL_FUEL;
    this.runtime = instance.module.newRuntime();
    this.runtime.setMemoryLimit(budgets.memoryBytes);
    this.runtime.setMaxStackSize(MAX_STACK_BYTES);
    // Between bytecode instructions: the host watchdog, and a clean stop once a budget is gone.
    this.runtime.setInterruptHandler(() => {
      if (performance.now() > this.deadline) this.hostFault = true;
      if (this.fuel.value < 0n) this.overBudget ??= "steps";
      return this.hostFault || this.overBudget !== null;
    });
    this.context = this.runtime.newContext();
  }

  /** Starts a phase (loading, or one test) with `fuel` units. */
  startPhase(fuel: bigint): void {
    this.spent += this.used();
    this.phaseBudget = fuel;
    this.fuel.value = fuel;
  }

  /** Fuel used in the current phase. */
  used(): bigint {
    const left = this.fuel.value;
    return left < 0n ? this.phaseBudget : this.phaseBudget - left;
  }

  /** Total fuel used so far. */
  total(): bigint {
    return this.spent + this.used();
  }

  /** Gives the current phase `units` more fuel (work the other side caused it). */
  credit(units: bigint): void {
    if (this.exhausted) return;
    this.phaseBudget += units;
    this.fuel.value += units;
  }

  /** Takes `units` of the current phase's fuel (work it caused the other side); false if that exhausts it. */
  charge(units: bigint): boolean {
    this.fuel.value -= units;
    if (this.fuel.value >= 0n) return true;
    this.overBudget ??= "steps";
    return false;
  }

  /**
   * Runs `fn` against the instance. A trap with the fuel gone marks the side exhausted and throws
   * {@link FuelTrap}; any other failure of the engine itself is the host's ({@link JudgeHostFaultError}).
   */
  run<T>(fn: () => T): T {
    if (this.exhausted) throw new FuelTrap();
    try {
      return fn();
    } catch (error) {
      if (error instanceof JudgeHostFaultError) throw error;
      if (this.fuel.value < 0n) {
        this.exhausted = true;
        this.overBudget ??= "steps";
        throw new FuelTrap();
      }
      throw new JudgeHostFaultError("The judge engine failed.", { cause: error });
    }
  }

  /** Appends output within the budget; past it, marks the side over budget (the next interrupt stops it) and reports false. */
  print(text: string): boolean {
    const size = Buffer.byteLength(text, "utf8");
    if (this.outputBytes + size > this.budgets.outputBytes) {
      this.overBudget ??= "output";
      return false;
    }
    this.outputBytes += size;
    this.output.push(text);
    return true;
  }

  /** Installs the prelude with the host object and keeps its handles (on the fixed install allowance). */
  install(prelude: string, files: Record<string, string>, seed: Hex, extra: Record<string, (...args: QuickJSHandle[]) => QuickJSHandle | void>): void {
    const ctx = this.context;
    this.run(() => {
      const host = ctx.newObject();
      ctx.setProp(host, "files", ctx.newString(JSON.stringify(files)));
      const seedArray = ctx.newArray();
      seedWords(seed).forEach((word, i) => ctx.setProp(seedArray, i, ctx.newNumber(word)));
      ctx.setProp(host, "seed", seedArray);
      seedArray.dispose();
      const print = ctx.newFunction("print", (text) => {
        if (!this.print(ctx.getString(text))) throw new Error("output budget exceeded");
      });
      ctx.setProp(host, "print", print);
      print.dispose();
      const compile = ctx.newFunction("compile", (pathHandle) => {
        const path = ctx.getString(pathHandle);
        const source = Object.hasOwn(files, path) ? files[path]! : "";
        // One line of wrapper before the source keeps the source's own line numbers.
        const result = ctx.evalCode(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, path);
        if (result.error) throw result.error;
        return result.value;
      });
      ctx.setProp(host, "compile", compile);
      compile.dispose();
      for (const [name, fn] of Object.entries(extra)) {
        const handle = ctx.newFunction(name, fn);
        ctx.setProp(host, name, handle);
        handle.dispose();
      }
      const factory = ctx.unwrapResult(ctx.evalCode(prelude, "ioi:prelude"));
      const api = ctx.unwrapResult(ctx.callFunction(factory, ctx.undefined, host));
      factory.dispose();
      host.dispose();
      for (const key of ["runEntry", "runTest", "collect", "crashOutcome", "invoke"]) {
        const handle = ctx.getProp(api, key);
        if (ctx.typeof(handle) === "function") this.handles[key] = handle;
        else handle.dispose();
      }
      api.dispose();
    });
  }

  /**
   * Calls a prelude function with string/number arguments; returns its string result, the error's dump, or
   * `{ trapped: true }` when the side ran out of fuel inside the call (the instance is then dead).
   */
  callApi(name: string, ...args: Array<string | number>): { value: string } | { error: unknown } | { trapped: true } {
    try {
      return this.run(() => {
        const ctx = this.context;
        const handles = args.map((arg) => (typeof arg === "string" ? ctx.newString(arg) : ctx.newNumber(arg)));
        try {
          const result = ctx.callFunction(this.handles[name]!, ctx.undefined, ...handles);
          if (result.error) {
            const dumped: unknown = safeDump(ctx, result.error);
            result.error.dispose();
            return { error: dumped };
          }
          const value = ctx.typeof(result.value) === "string" ? ctx.getString(result.value) : String(ctx.dump(result.value));
          result.value.dispose();
          return { value };
        } finally {
          if (this.fuel.value >= 0n) handles.forEach((handle) => handle.dispose());
        }
      });
    } catch (error) {
      if (error instanceof FuelTrap) return { trapped: true };
      throw error;
    }
  }

  /** Runs pending promise jobs until none are left or a budget stops it. */
  drainJobs(): void {
    try {
      this.run(() => {
        for (;;) {
          if (!this.runtime.hasPendingJob()) return;
          const result = this.runtime.executePendingJobs();
          if (result.error) {
            result.error.dispose();
            return;
          }
          if (this.overBudget !== null || this.hostFault) return;
        }
      });
    } catch (error) {
      if (!(error instanceof FuelTrap)) throw error;
    }
  }
}

function safeDump(ctx: QuickJSContext, handle: QuickJSHandle): unknown {
  try {
    return ctx.dump(handle);
  } catch {
    return "an error that cannot be read";
  }
}

function errorText(error: unknown): string {
  if (typeof error === "object" && error !== null) {
    const { name, message } = error as { name?: unknown; message?: unknown };
    if (typeof message === "string") return `${typeof name === "string" ? name : "Error"}: ${message}`.slice(0, 4096);
  }
  return String(error).slice(0, 4096);
}

function isResourceError(error: unknown): boolean {
  const text = errorText(error);
  return text === "InternalError: out of memory" || text === "InternalError: stack overflow";
}

/** The module a call that names none goes to: `index.js`, else the deliverable's only `.js`/`.cjs` file. */
export function defaultModule(files: readonly string[]): string | null {
  if (files.includes("index.js")) return "index.js";
  const scripts = files.filter((name) => /\.c?js$/.test(name));
  return scripts.length === 1 ? scripts[0]! : null;
}

/** Checks the runner can be run: `node <a .js/.cjs file of the suite>`. */
function assertRunnable(runner: Runner, suite: Bundle): string {
  if (runner.command[0] !== RUNNER_PROGRAM) {
    throw new UnsupportedRunnerError("runner.command[0]", `is ${JSON.stringify(runner.command[0])}; the only runner is "${RUNNER_PROGRAM}".`);
  }
  const entry = runner.command[1];
  if (entry === undefined || !Object.hasOwn(suite.files, entry)) {
    throw new UnsupportedRunnerError("runner.command[1]", `is ${JSON.stringify(entry)}, which is not a file of the test suite.`);
  }
  return entry;
}

/**
 * Replays the suite against the deliverable (see the module comment). Rejects with
 * {@link UnsupportedRunnerError} for a runner that names no file of the suite, and with
 * {@link JudgeHostFaultError} when the watchdog fires or the engine cannot run; everything the suite or the
 * deliverable does is a result.
 */
export async function replay(parameters: ReplayParameters): Promise<ReplayOutcome> {
  const { runner, budgets, inputs, actor, intent } = parameters;
  const suite = bundleFromJson(parameters.suite, "suite");
  const deliverable = bundleFromJson(parameters.deliverable, "deliverable");
  const entry = assertRunnable(runner, suite);
  const deadline = performance.now() + (parameters.watchdogMs ?? DEFAULT_WATCHDOG_MS);
  const deliverablePaths = Object.keys(deliverable.files);
  const fallback = defaultModule(deliverablePaths);

  const newInstance = async (clockMs: number) => {
    try {
      return await newSealedInstance({ clockMs });
    } catch (cause) {
      throw new JudgeHostFaultError("The judge engine could not start.", { cause });
    }
  };

  const names: string[] = [];
  const results: TestResult[] = [];
  const calls: CallTrace[] = [];
  const transcript: string[] = [];
  let suiteFault: SuiteFault | null = null;
  let current = -1;
  let testFault: DeliverableFault | null = null;
  let deliverableSteps = 0n;
  let deliverableOutput: string[] = [];
  let deliverableOutputBytes = 0;
  let host: Side | null = null;

  const phaseFuel = BigInt(budgets.stepsPerTest) * FUEL_PER_STEP;
  // A host fault met inside a host callback: kept here, never thrown into the guest that made the callback.
  let hostError: JudgeHostFaultError | null = null;

  const newDeliverable = async (): Promise<Side> => {
    const side = new Side(await newInstance(inputs.deliverable.clockMs), budgets, deadline);
    side.outputBytes = deliverableOutputBytes;
    side.output = deliverableOutput;
    try {
      side.install(DELIVERABLE_PRELUDE, deliverable.files, inputs.deliverable.seed, {});
    } catch (cause) {
      throw new JudgeHostFaultError("The deliverable's prelude could not be installed.", { cause });
    }
    side.startPhase(phaseFuel);
    return side;
  };
  const retire = (side: Side) => {
    deliverableSteps += side.total();
    deliverableOutputBytes = side.outputBytes;
    deliverableOutput = side.output;
  };
  const answer = (value: object) => JSON.stringify(value);

  // The bridge: one request string in, one answer string out; nothing else crosses. Each message costs its
  // sender BRIDGE_FUEL_PER_CHAR per character and gives its receiver as much (what reading it costs).
  const bridge = (requestText: string): string => {
    if (testFault !== null) return answer({ error: faultMessage(testFault) });
    if (requestText.length > MAX_MESSAGE_LENGTH) return answer({ error: `the request is longer than ${MAX_MESSAGE_LENGTH} characters` });
    const request = JSON.parse(requestText) as { module: unknown; fn: unknown; args: unknown };
    const module = request.module === null ? fallback : request.module;
    if (typeof module !== "string" || !Object.hasOwn(deliverable.files, module) || !/\.c?js$/.test(module)) {
      return answer({ error: `module ${JSON.stringify(request.module)} is not a .js file of the deliverable` });
    }
    if (typeof request.fn !== "string" || request.fn.length === 0 || request.fn.length > MAX_NAME_LENGTH) {
      return answer({ error: `fn must be a string of 1 to ${MAX_NAME_LENGTH} characters` });
    }
    const side = host!;
    const forwarded = JSON.stringify({ module, fn: request.fn, args: request.args });
    const toll = BigInt(forwarded.length) * BRIDGE_FUEL_PER_CHAR;
    // The suite pays for what its request costs the deliverable to read; without the fuel, the call is not made.
    if (!suiteSide.charge(toll)) return answer({ error: "the suite has no fuel left to send this request" });
    side.credit(toll);
    let result = side.callApi("invoke", forwarded);
    if ("value" in result && result.value === "pending") {
      side.drainJobs();
      result = side.overBudget !== null || side.hostFault || side.exhausted ? { error: "stopped" } : side.callApi("collect");
      if ("value" in result && result.value === "") result = { value: answer({ error: "the deliverable's promise never settled" }) };
    }
    if (side.hostFault) throw new JudgeHostFaultError("The host watchdog stopped the deliverable.");
    let text: string;
    if (side.overBudget !== null || !("value" in result) || result.value === '{"fault":"memory"}') {
      testFault = side.overBudget === "steps" ? "DELIVERABLE_STEP_BUDGET" : side.overBudget === "output" ? "DELIVERABLE_OUTPUT_LIMIT" : "DELIVERABLE_MEMORY_LIMIT";
      text = answer({ error: faultMessage(testFault) });
    } else if (result.value.length > MAX_MESSAGE_LENGTH) {
      text = answer({ error: `the answer is longer than ${MAX_MESSAGE_LENGTH} characters` });
    } else if (!side.charge(BigInt(result.value.length) * BRIDGE_FUEL_PER_CHAR)) {
      // The deliverable pays for what its answer costs the suite to read.
      testFault = "DELIVERABLE_STEP_BUDGET";
      text = answer({ error: faultMessage(testFault) });
    } else {
      text = result.value;
      suiteSide.credit(BigInt(text.length) * BRIDGE_FUEL_PER_CHAR);
    }
    calls.push({ test: current, request: sha256Hex(forwarded), answer: sha256Hex(text) });
    return text;
  };
  const invoke = (requestText: string): string => {
    try {
      return bridge(requestText);
    } catch (error) {
      // Never an exception inside the suite: the suite is stopped at its next step and the replay abstains.
      hostError ??= error instanceof JudgeHostFaultError ? error : new JudgeHostFaultError("The bridge failed.", { cause: error });
      suiteSide.hostFault = true;
      return answer({ error: "the judge's host stopped this replay" });
    }
  };

  const suiteSide = new Side(await newInstance(inputs.suite.clockMs), budgets, deadline);
  try {
    suiteSide.install(SUITE_PRELUDE, suite.files, inputs.suite.seed, {
      register: (nameHandle) => {
        const name = suiteSide.context.getString(nameHandle);
        // A host function's throw becomes an Error thrown inside the suite's instance.
        if (names.includes(name)) throw new Error(`test name ${JSON.stringify(name)} is registered twice`);
        if (names.length >= MAX_TESTS) throw new Error(`a suite may register at most ${MAX_TESTS} tests`);
        if (!name.isWellFormed() || /[\u0000-\u001f\u007f]/.test(name)) throw new Error("a test name may not hold control characters or lone surrogates");
        names.push(name);
      },
      invoke: (requestHandle) => suiteSide.context.newString(invoke(suiteSide.context.getString(requestHandle))),
    });
  } catch (cause) {
    throw new JudgeHostFaultError("The suite's prelude could not be installed.", { cause });
  }

  const hostStop = () => {
    if (hostError) throw hostError;
    if (suiteSide.hostFault) throw new JudgeHostFaultError("The host watchdog stopped the suite.");
  };
  const suiteStop = (): SuiteFault | null => {
    hostStop();
    if (suiteSide.overBudget === "steps") return { code: "SUITE_STEP_BUDGET", detail: `the suite used more than ${budgets.stepsPerTest} steps${current < 0 ? " while loading" : ` in test ${JSON.stringify(names[current])}`}` };
    if (suiteSide.overBudget === "output") return { code: "SUITE_OUTPUT_LIMIT", detail: `the suite printed more than ${budgets.outputBytes} bytes` };
    return null;
  };

  try {
    // Load: the suite registers its tests.
    suiteSide.startPhase(phaseFuel);
    const loaded = suiteSide.callApi("runEntry", entry);
    suiteFault = suiteStop();
    if (suiteFault === null && "error" in loaded) {
      suiteFault = isResourceError(loaded.error)
        ? { code: "SUITE_MEMORY_LIMIT", detail: `the suite ran out of memory or stack while loading: ${errorText(loaded.error)}` }
        : { code: "SUITE_CRASHED", detail: `the suite threw while loading: ${errorText(loaded.error)}` };
    }
    if (suiteFault === null && names.length === 0) suiteFault = { code: "SUITE_INVALID", detail: "the suite registered no tests" };

    const first = parameters.only ?? 0;
    const end = parameters.only === undefined ? names.length : Math.min(parameters.only + 1, names.length);
    for (let index = first; suiteFault === null && index < end; index++) {
      current = index;
      testFault = null;
      if (host === null) host = await newDeliverable();
      else host.startPhase(phaseFuel);
      suiteSide.startPhase(phaseFuel);
      let raw = suiteSide.callApi("runTest", index);
      if ("value" in raw && raw.value === "pending") {
        suiteSide.drainJobs();
        raw = suiteSide.overBudget !== null || suiteSide.hostFault || suiteSide.exhausted || hostError ? raw : suiteSide.callApi("collect");
        hostStop();
        if ("value" in raw && raw.value === "") {
          suiteFault = { code: "SUITE_NEVER_SETTLED", detail: `test ${JSON.stringify(names[index])} returned a promise that never settled` };
          break;
        }
      }
      suiteFault = suiteStop();
      if (suiteFault !== null) break;
      if (!("value" in raw)) {
        // Only an uncatchable stop escapes runTest; anything else is the suite's own crash.
        suiteFault = { code: "SUITE_CRASHED", detail: `test ${JSON.stringify(names[index])} stopped the suite: ${"error" in raw ? errorText(raw.error) : "out of fuel"}` };
        break;
      }
      const verdict = JSON.parse(raw.value) as { passed: boolean; kind?: string; message?: string };
      if (testFault === null && host.overBudget === null && !verdict.passed && (verdict.kind === "crash" || verdict.kind === "resource")) {
        suiteFault = {
          code: verdict.kind === "crash" ? "SUITE_CRASHED" : "SUITE_MEMORY_LIMIT",
          detail: `test ${JSON.stringify(names[index])} crashed in the suite's own code: ${verdict.message ?? ""}`,
        };
        break;
      }
      const name = names[index]!;
      if (testFault !== null) {
        results.push({ name, passed: false, fault: testFault, detail: faultMessage(testFault) });
        transcript.push(`not ok ${index + 1} ${name} # ${testFault}\n`);
        retire(host);
        host = null;
      } else if (verdict.passed) {
        results.push({ name, passed: true, fault: null, detail: "passed" });
        transcript.push(`ok ${index + 1} ${name}\n`);
      } else {
        const detail = (verdict.message ?? "failed").slice(0, 4096);
        results.push({ name, passed: false, fault: null, detail });
        transcript.push(`not ok ${index + 1} ${name} # ${detail.split("\n")[0]}\n`);
      }
      transcript.push(...suiteSide.output.splice(0));
    }
  } finally {
    if (host !== null) retire(host);
  }
  hostStop();

  const failed = results.filter((r) => !r.passed).map((r) => r.name);
  const stdout = [...suiteSide.output, ...transcript].join("") + `${JSON.stringify({ total: names.length, failed, suite_fault: suiteFault?.code ?? null })}\n`;
  const stderr = deliverableOutput.join("");
  const record = upipRecord({
    state: upipState(suite, deliverable),
    deps: judgeDeps(),
    process: {
      command: [...runner.command],
      intent,
      actor,
      env_vars: {},
      working_dir: ".",
      inputs: {
        suite: { clock_ms: inputs.suite.clockMs, seed: inputs.suite.seed },
        deliverable: { clock_ms: inputs.deliverable.clockMs, seed: inputs.deliverable.seed },
      },
      budgets: { steps_per_test: budgets.stepsPerTest, memory_bytes: budgets.memoryBytes, max_output_bytes: budgets.outputBytes },
    },
    result: upipResultOf({
      tests: names.length,
      failedTests: failed,
      deliverableFaults: results.filter((r) => r.fault !== null).map((r) => ({ test: r.name, fault: r.fault! })),
      suiteFault: suiteFault?.code ?? null,
      steps: { suite: Number(suiteSide.total()), deliverable: Number(deliverableSteps) },
      stdout,
      stderr,
    }),
  });
  return { record, tests: results, suiteFault, stdout, stderr, calls, steps: { suite: Number(suiteSide.total()), deliverable: Number(deliverableSteps) }, registered: names.length };
}

function faultMessage(fault: DeliverableFault): string {
  switch (fault) {
    case "DELIVERABLE_STEP_BUDGET":
      return "the deliverable exceeded its step budget for this test";
    case "DELIVERABLE_MEMORY_LIMIT":
      return "the deliverable exhausted its memory or stack";
    case "DELIVERABLE_OUTPUT_LIMIT":
      return "the deliverable exceeded its output budget";
  }
}
