/**
 * The judge engine: QuickJS compiled to WebAssembly (`quickjs-emscripten` 0.32.0, variant
 * `@jitl/quickjs-wasmfile-release-sync`, pinned exactly), loaded so that nothing of the host reaches it.
 *
 * WebAssembly computes the same bytes on every machine; what it knows of the world comes only through its
 * imports, and Emscripten's glue wires those to the host: `Date.now()` (QuickJS's clock, and the seed of its
 * own `Math.random`), the host's time zone (`localtime`, `tzset`), the process environment, `setTimeout`
 * and stdout/stderr. Each instance is built here with those imports replaced before the module is
 * instantiated (see {@link SEALED_IMPORTS}): a clock pinned to the instance's `clockMs`, UTC as the only
 * time zone, an empty environment, no timers, and output that goes nowhere. The glue's other imports are
 * memory growth, aborts and the QuickJS callbacks (interrupt, host functions). The imports are checked
 * against their known shape when an instance is built, so a different glue fails loudly instead of leaking.
 *
 * Every replay uses fresh instances (a separate linear memory per role), so no allocator state, GC timing
 * or module cache carries over between runs: the interrupt count and the memory accounting of a run are a
 * function of its inputs alone.
 *
 * Before compiling, the pinned bytes are metered (`fuel.ts`): every function entry and loop iteration of the
 * engine takes a unit of fuel from a per-instance global, and the instance traps when it runs out, so native
 * operations are budgeted as deterministically as bytecode. {@link engineWasmSha256} is sha256 of the exact
 * metered bytes this process compiles (the pinned `.wasm` read once, metered, hashed, then compiled from those
 * same bytes), and is what the judge runtime hash commits to; {@link enginePinnedWasmSha256} is that of the
 * package's own `.wasm`.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";

import baseVariant from "@jitl/quickjs-wasmfile-release-sync";
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSWASMModule } from "quickjs-emscripten-core";

import { BaseError } from "../../channel-client/core/errors";
import { FUEL_EXPORT, meterWasm } from "./fuel";

/** The engine the judge runs: npm package and variant, both pinned exactly in package.json / package-lock.json. */
export const ENGINE = {
  name: "quickjs",
  package: "quickjs-emscripten",
  version: "0.32.0",
  variant: "@jitl/quickjs-wasmfile-release-sync",
} as const;

/** The engine could not be loaded or its imports are not the ones it was sealed against (a host fault: nothing is judged). */
export class EngineUnavailableError extends BaseError {
  override name = "EngineUnavailableError" as const;
}

/** The slice of the WebAssembly JS API used here (the project's TypeScript lib does not declare it). */
type WasmModule = object;
type WasmInstance = { exports: unknown };
type WasmImports = Record<string, Record<string, unknown>>;
type WasmApi = {
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: WasmImports) => WasmInstance;
  Memory: new (descriptor: { initial: number }) => { buffer: ArrayBuffer };
};
const Wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

type Loaded = { module: WasmModule; sha256: string; pinnedSha256: string; glueSha256: string };
let loaded: Loaded | undefined;

function load(): Loaded {
  if (loaded) return loaded;
  try {
    const bytes = readFileSync(require.resolve(`${ENGINE.variant}/wasm`));
    // The variant loads its glue with import(), so the ES module build is the one that runs.
    const glue = readFileSync(join(dirname(require.resolve(`${ENGINE.variant}/package.json`)), "dist", "emscripten-module.mjs"));
    const metered = meterWasm(bytes);
    loaded = {
      module: new Wasm.Module(metered),
      sha256: createHash("sha256").update(metered).digest("hex"),
      pinnedSha256: createHash("sha256").update(bytes).digest("hex"),
      glueSha256: createHash("sha256").update(glue).digest("hex"),
    };
    return loaded;
  } catch (cause) {
    throw new EngineUnavailableError(`The judge engine ${ENGINE.variant}@${ENGINE.version} could not be loaded.`, { cause });
  }
}

/** sha256 (hex) of the engine's WebAssembly bytes as compiled by this process (metered, `fuel.ts`). */
export function engineWasmSha256(): string {
  return load().sha256;
}

/** sha256 (hex) of the engine package's own `.wasm` (before metering). */
export function enginePinnedWasmSha256(): string {
  return load().pinnedSha256;
}

/** sha256 (hex) of the Emscripten glue that wires the engine's imports (whose time and environment imports are replaced). */
export function engineGlueSha256(): string {
  return load().glueSha256;
}

/** What one sealed instance is told about the world. */
export type SealedInstanceParameters = {
  /** What `Date.now()` returns inside, in milliseconds since the epoch: fixed for the instance's whole life. */
  clockMs: number;
};

/**
 * The glue's imports that reach the host, by their (minified, version-pinned) names: a substring each one's
 * source must contain, and its sealed replacement. Anything else in the import object is left as it is.
 */
const SEALED_IMPORTS = ["m", "n", "p", "j", "e", "f", "c"] as const;
const IMPORT_SHAPES: Record<(typeof SEALED_IMPORTS)[number], string> = {
  m: "getTimezoneOffset", // localtime_js(time, tm*)
  n: "getTimezoneOffset", // tzset_js(timezone*, daylight*, std_name, dst_name)
  p: "Date.now()", // emscripten_date_now
  j: "setTimeout", // emscripten_set_timeout (unused by the sync build)
  e: "Infinity", // environ_get
  f: ".length", // environ_sizes_get
  c: "for(", // fd_write (QuickJS's own printf output)
};
const EXPECTED_IMPORTS = "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t";

function sealImports(env: Record<string, unknown>, clockMs: number): Record<string, unknown> {
  const keys = Object.keys(env).sort().join(",");
  if (keys !== EXPECTED_IMPORTS) throw new EngineUnavailableError(`The engine's imports are ${keys}, not the ${EXPECTED_IMPORTS} it was sealed against.`);
  for (const name of SEALED_IMPORTS) {
    const source = String(env[name]);
    if (!source.includes(IMPORT_SHAPES[name])) {
      throw new EngineUnavailableError(`The engine's import ${name} is not the one it was sealed against (expected it to use ${IMPORT_SHAPES[name]}).`);
    }
  }
  const memory = env.a;
  if (!(memory instanceof Wasm.Memory)) throw new EngineUnavailableError("The engine's import a is not its memory.");
  const i32 = () => new Int32Array(memory.buffer);
  const u8 = () => new Uint8Array(memory.buffer);
  const writeCString = (pointer: number, text: string) => {
    const bytes = u8();
    for (let i = 0; i < text.length; i++) bytes[pointer + i] = text.charCodeAt(i);
    bytes[pointer + text.length] = 0;
  };
  return {
    ...env,
    p: () => clockMs,
    // struct tm in UTC: sec, min, hour, mday, mon, year-1900, wday, yday, isdst, gmtoff.
    m: (time: bigint | number, tm: number) => {
      const date = new Date(Number(time) * 1000);
      const heap = i32();
      const base = tm >> 2;
      const year = date.getUTCFullYear();
      const startOfYear = Date.UTC(year, 0, 1);
      heap[base] = date.getUTCSeconds();
      heap[base + 1] = date.getUTCMinutes();
      heap[base + 2] = date.getUTCHours();
      heap[base + 3] = date.getUTCDate();
      heap[base + 4] = date.getUTCMonth();
      heap[base + 5] = year - 1900;
      heap[base + 6] = date.getUTCDay();
      heap[base + 7] = Math.floor((date.getTime() - startOfYear) / 86_400_000);
      heap[base + 8] = 0;
      heap[base + 9] = 0;
    },
    n: (timezone: number, daylight: number, stdName: number, dstName: number) => {
      const heap = i32();
      heap[timezone >> 2] = 0;
      heap[daylight >> 2] = 0;
      writeCString(stdName, "UTC");
      writeCString(dstName, "UTC");
    },
    j: () => {
      throw new EngineUnavailableError("The engine asked for a host timer; the sealed engine has none.");
    },
    // An empty environment.
    e: () => 0,
    f: (count: number, size: number) => {
      const heap = i32();
      heap[count >> 2] = 0;
      heap[size >> 2] = 0;
      return 0;
    },
    // fd_write(fd, iov, iovcnt, nwritten*): everything is "written" and dropped.
    c: (_fd: number, iov: number, iovcnt: number, written: number) => {
      const heap = i32();
      let total = 0;
      for (let i = 0; i < iovcnt; i++) total += heap[((iov + i * 8 + 4) >> 2)]!;
      heap[written >> 2] = total;
      return 0;
    },
  };
}

/** The fuel meter of one instance: units left (the instance traps below zero). */
export type FuelGauge = { value: bigint };

/** A sealed instance and its fuel gauge. */
export type SealedInstance = { module: QuickJSWASMModule; fuel: FuelGauge };

/**
 * A fresh, sealed engine instance (its own WebAssembly memory) whose clock reads `clockMs` and whose time
 * zone is UTC, with its fuel gauge (empty: the host fills it before running anything). Rejects with
 * {@link EngineUnavailableError} if the engine cannot be loaded or sealed.
 */
export async function newSealedInstance(parameters: SealedInstanceParameters): Promise<SealedInstance> {
  const { module } = load();
  let fuel: FuelGauge | undefined;
  const variant = newVariant(baseVariant, {
    emscriptenModule: {
      instantiateWasm(imports: WasmImports, done: (instance: WasmInstance, module: WasmModule) => void) {
        const instance = new Wasm.Instance(module, { ...imports, a: sealImports(imports.a!, parameters.clockMs) });
        fuel = (instance.exports as Record<string, FuelGauge>)[FUEL_EXPORT];
        done(instance, module);
        return instance.exports;
      },
    } as never,
  });
  try {
    const quickjs = await newQuickJSWASMModuleFromVariant(variant);
    if (fuel === undefined) throw new EngineUnavailableError("The engine instance has no fuel meter.");
    return { module: quickjs, fuel };
  } catch (cause) {
    if (cause instanceof EngineUnavailableError) throw cause;
    throw new EngineUnavailableError("A sealed engine instance could not be created.", { cause });
  }
}
